// The weights of a Transformer on the host, in one layout for every family and architecture, and
// the loader that maps each family's state_dict names onto it (docs/formats.md "Tensor names").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "arch/config.h"
#include "arch/infer.h"
#include "base/error.h"
#include "base/tensor.h"
#include "io/safetensors.h"

namespace attnviz {

class TensorSource;
class Tokenizer;

// y = x·Wᵀ + b.  weight: [out, in]; bias: [out] or empty.
struct LinearWeights {
  Tensor weight;
  Tensor bias;
  bool empty() const { return weight.empty(); }
};

// gamma, beta: [d_model]; both empty = identity affine (the nlp-tutorial's in-forward LayerNorm);
// beta alone empty = no shift (RMSNorm, nanoGPT's LayerNorm with bias=False).
struct LayerNormWeights {
  Tensor gamma;
  Tensor beta;
  bool identity() const { return gamma.empty(); }
};

struct AttentionWeights {
  LinearWeights q;    // [H·d_k, d_model]
  LinearWeights k;    // [H_kv·d_k, d_model] (H_kv = config.kvHeads())
  LinearWeights v;    // [H_kv·d_v, d_model]
  LinearWeights out;  // [d_model, H·d_v]
  // Each head's queries and keys normalised before the rotation ([d_k] each; self-attention of
  // the families that have them, Qwen3), or identity.
  LayerNormWeights q_norm, k_norm;
  bool empty() const { return q.empty(); }
};

struct FeedForwardWeights {
  LinearWeights fc1;   // [d_ff, d_model] (gated: the "up" projection)
  LinearWeights fc2;   // [d_model, d_ff]
  LinearWeights gate;  // [d_ff, d_model] config.gated_ffn only: the projection act() applies to
};

// One layer of a stack: self-attention, cross-attention (only in the decoder of an
// encoder-decoder), feed-forward, and the LayerNorm of each sublayer (post-norm: after the
// residual add; pre-norm: before the sublayer).
struct LayerWeights {
  AttentionWeights self_attn;
  LayerNormWeights norm_self;
  AttentionWeights cross_attn;  // empty when the layer has none
  LayerNormWeights norm_cross;
  FeedForwardWeights ffn;
  LayerNormWeights norm_ffn;
  // Gemma 2's norms of each sublayer's output before its residual add (identity: none).
  LayerNormWeights post_self, post_ffn;
  bool hasCross() const { return !cross_attn.empty(); }
};

// What turns ids into the first layer's input: x = tokens[id]·scale (+ segments[seg]) + positions,
// then the optional embedding LayerNorm.
struct EmbeddingWeights {
  Tensor tokens;     // [vocab, d_model]
  Tensor positions;  // learned: [max_len, d_model]; sinusoidal: empty (the model computes them)
  Tensor segments;   // [n_segments, d_model] or empty
  LayerNormWeights norm;
};

// An encoder or a decoder.
struct StackWeights {
  EmbeddingWeights embed;
  // T5's relative position bias [relative_buckets, n_heads] (Positional::Relative), shared by
  // the stack's self-attention layers; empty otherwise.
  Tensor relative_bias;
  std::vector<LayerWeights> layers;
  LayerNormWeights final_norm;  // identity unless config.final_norm
};

// The outputs on top of the last stack.
struct HeadWeights {
  LinearWeights projection;     // token logits [V, d_model] (+ bias); BERT: the tied decoder
  LinearWeights mlm_transform;  // BERT masked LM: [d_model, d_model] then activation …
  LayerNormWeights mlm_norm;    // … then LayerNorm, before the projection
  LinearWeights pooler;         // BERT: [d_model, d_model] on the first position, then tanh
  LinearWeights classifier;     // class logits [n_classes, d_model]
};

struct ModelWeights {
  StackWeights encoder;  // empty for a decoder-only model
  StackWeights decoder;  // empty for an encoder-only model
  HeadWeights head;
};

// Every tensor of the layout, empty ones included, in one fixed order (stacks, then heads), with
// its path in the layout ("decoder.layers.1.cross_attn.k.bias"): two ModelWeights of one config
// visit matching tensors in the same order.
void forEachTensor(ModelWeights& weights,
                   const std::function<void(const std::string&, Tensor&)>& f);
void forEachTensor(const ModelWeights& weights,
                   const std::function<void(const std::string&, const Tensor&)>& f);

// A model read from disk: where from, its config (with what the file decided filled in: biases,
// class count), its weights, and what the loader noticed.
struct LoadedModel {
  std::string path;
  ModelConfig config;
  ModelWeights weights;
  std::vector<std::string> warnings;  // e.g. NaN/Inf weights
  // How the model was read: where the config came from, a prefix stripped, what was inferred.
  std::vector<std::string> notes;
  // What the file does not state and was taken as its tutorial has it (or as given): inferred
  // configs only; the front ends say how to change it.
  std::vector<Assumed> assumed;
  // The model's own subword tokenizer (a Hugging Face folder's), or null: words are looked up in
  // the vocabularies as typed.
  std::shared_ptr<const Tokenizer> tokenizer;
  // A vocabulary the user names (LoadOptions::supplied) is used: the config was inferred from the
  // tensors, or maps a Hugging Face decoder-only or encoder-only folder's. A config of attnviz's
  // own, or a translation folder's, names its vocabularies itself.
  bool takes_vocabulary = false;
};

struct LoadOptions {
  // explicit config JSON; empty = the file's metadata, then MODEL.json or config.json beside it,
  // then what the tensors tell (with `supplied` and the answers remembered beside the file)
  std::string config_path;
  UserSupplied supplied;  // what the tensors cannot tell (overrides remembered answers)
  uint64_t max_model_bytes = uint64_t(8) << 30;  // refuse models whose weights exceed this
  bool allow_partial = false;  // tensors the model does not use are a warning, not an error
};

// The config had to be inferred and the tensors cannot tell everything: kind MissingInfo, with
// what they do tell (with the answers given), so that the GUI can ask for the rest without
// reading the file again.
class MissingInfoError : public Error {
 public:
  MissingInfoError(const std::string& message, Inference inferred)
      : Error(ErrorKind::MissingInfo, message), inference(std::move(inferred)) {}
  Inference inference;
};

// Reads a model file with its config — or a Hugging Face folder (config.json, model.safetensors or
// pytorch_model.bin or their shards' index, vocab.json, and the tokenizer's files). Throws Error
// naming the file, the tensor or field, what was found and what was expected; every missing or
// mismatched tensor is listed at once; when the config must be inferred and the tensors cannot tell
// everything, MissingInfoError says what was inferred and what to supply.
std::shared_ptr<const LoadedModel> loadModel(const std::string& path,
                                             const LoadOptions& options = {});
// The tensors of a model file, whatever its format (judged from its first bytes): safetensors, or a
// PyTorch checkpoint (torch.save's zip or legacy format); an index of shards (*.index.json) is read
// as the one file its shards make (io/sharded.h).
std::unique_ptr<TensorSource> openTensorFile(const std::string& path);
// Every float tensor of `file` as F32, named prefix + its name (integer buffers left out): what
// convertToSafetensors writes.
std::vector<NamedTensor> floatTensors(const TensorSource& file, const std::string& prefix = "");
// A JSON file, bounded in size (64 MiB), valid UTF-8, strictly parsed (duplicate keys refused).
nlohmann::json readJsonFile(const std::string& path);
// Where the answers a user supplied for a file are remembered: "PATH.attnviz.json".
std::string answersPath(const std::string& model_path);
// What the tensors of `file` tell with the answers remembered beside it and `supplied` over them
// (what loadModel infers for a file without a config; the GUI asks for what is still missing).
Inference inferWithAnswers(const TensorSource& file, const UserSupplied& supplied);
// Keeps `given` there (atomically), over the answers kept before (the ones given now win).
void rememberAnswers(const std::string& model_path, const UserSupplied& given);
// The same from an already-open tensor file and a config (tests, fuzzing).
std::shared_ptr<const LoadedModel> loadModel(const TensorSource& file, const ModelConfig& config,
                                             const LoadOptions& options = {});
// Writes the model at `in` (whatever loadModel opens, with the same options) as one safetensors
// file with its config in the metadata, so that it opens with no answers, config file or Python:
// every float tensor of the file as float32 under its name. The model is loaded (and so checked)
// first; the file is written whole or not at all. Refuses a model with its own tokenizer (a
// Hugging Face folder: its tokenizer's files stay beside the weights) and writing over `in`.
// Returns the loaded model (for its notes).
std::shared_ptr<const LoadedModel> convertToSafetensors(const std::string& in,
                                                        const std::string& out,
                                                        const LoadOptions& options = {});
// Finds and parses the config for `file` as loadModel does (without inference).
ModelConfig findConfig(const TensorSource& file, const std::string& explicit_config_path);
// The config loadModel uses, and where it came from.
struct FoundConfig {
  ModelConfig config;
  std::string source;  // "__metadata__", "model.json", "inferred from the tensors", …
  std::vector<std::string> notes;
  std::vector<Assumed> assumed;  // an inferred config's (Inference::assumed)
  // A Hugging Face folder's tokenizer when finding the config opened it (GPT-2, BERT, Llama).
  std::shared_ptr<const Tokenizer> tokenizer;
  bool takes_vocabulary = false;  // LoadedModel::takes_vocabulary
};
FoundConfig findOrInferConfig(const TensorSource& file, const LoadOptions& options);
// The vocabulary the tutorial's own scripts would use for a checkpoint without one given
// (ArchSpec::vocab_files: nanoGPT's data/<dataset>/meta.pkl, llama2.c's tokenizer), looked for from
// the checkpoint's folder's parent and from the folder itself: the first that reads and fits the
// token table goes into `answers` (true); what was found and why one was not used go to notes.
bool findTutorialVocabulary(const TensorSource& file, const ArchSpec& spec, UserSupplied& answers,
                            std::vector<std::string>* notes);
// The memory loading a model of this config and building a Model of it takes at its peak, from
// the sizes alone: the float32 weights on the host and their copy on the backend (host memory on
// the CPU backend), the largest layer's copy while uploading, the sinusoid table (built on the
// host, then uploaded) and the vocabularies' strings. loadModel checks it (and the file's data
// beside the weights while they are read) against max_model_bytes before reading any tensor.
uint64_t estimateModelBytes(const ModelConfig& config);

// A model of the given config with random weights (normal, std 1/sqrt(fan_in); LayerNorms
// identity; embeddings N(0, 1)), for benchmarks and tests. Vocabularies must be in the config;
// unset biases become absent.
std::shared_ptr<const LoadedModel> makeRandomModel(const ModelConfig& config, uint32_t seed);
// The reference tutorial's full size: 6+6 layers, d_model 512, 8 heads of 64, d_ff 2048,
// vocabularies of `vocab` made-up words.
ModelConfig tutorialSizeConfig(int vocab = 1000);

}  // namespace attnviz

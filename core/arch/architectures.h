// The table of architectures attnviz opens (docs/formats.md "Families"): one descriptor per model
// class of each tutorial, saying what its tensors are called per role and layer (as llama.cpp's
// tensor-name map does), how Q/K/V are laid out, its math, the buffers to ignore, what a
// checkpoint's args or a config.json state and what must be asked. Loading, inference of configs,
// writing, the answers dialog and the docs read it.
//
// Adding an architecture: (1) one descriptor in architectures.cpp (its names per role, the switches
// its math needs, what its checkpoint's args or config.json state, what must be asked); (2)
// `attnviz-cli architectures --markdown` into docs/formats.md's generated section (test_infer
// checks it); (3) a reference model after the tutorial's public code in tools/tutorial_models.py
// and one case in tools/make_tutorial_checkpoints.py, saved as its training script saves it
// (test_tutorials compares every attention tensor and the logits).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "compute/functions.h"

namespace attnviz {

enum class Architecture { EncoderDecoder, EncoderOnly, DecoderOnly };
enum class NormPlacement { Post, Pre };
// Sinusoidal: PE(pos, 2i) = sin, PE(pos, 2i+1) = cos (the paper, the tutorials);
// SinusoidalHalves: the same frequencies laid out [sin … | cos …] (Marian); Learned: a table.
// Rotary: no table added to the embeddings; each head's queries and keys are rotated by their
// position (rope_theta, rope_layout). Relative: no table added either; T5's relative position
// bias, a learned [buckets, H] table per stack, is added to each self-attention's scores by the
// bucket of key − query (relative_buckets, relative_max_distance). SinusoidalFairseq: fairseq's
// table as M2M100 / NLLB build it ([sin | cos], frequencies 10000^(−k/(d/2 − 1))), read from row
// pad + 1 on; a pad token reads the table's zero row (padding_idx) and a token after a pad the
// row of its count of non-pad tokens (create_position_ids_from_input_ids).
enum class Positional {
  Sinusoidal,
  SinusoidalHalves,
  Learned,
  Rotary,
  Relative,
  SinusoidalFairseq
};
// What the model outputs per position (token logits) and per sequence (class logits).
enum class TokenHead { None, Linear, BertMlm };
enum class ClassHead { None, MeanPool, Pooler };

// What a tensor is, whatever a tutorial calls it (llama.cpp's LLM_TENSOR roles; their GGUF names in
// roleName). Per stack: the embeddings and the final norm; per layer: the attention blocks, the
// feed-forward and their norms; on top: the output heads.
enum class Role : uint8_t {
  TokenEmbd,    // [vocab, d]
  PosEmbd,      // learned positions [max_len + position_offset, d]
  PosTable,     // a stored fixed table (a sinusoid buffer): only its length is read
  SegmentEmbd,  // token types [n_segments, d]
  EmbdNorm,     // the norm after the embeddings
  AttnNorm,     // self-attention's norm
  AttnQ,        // [H·d_k, d] (one module per head: [d_k, d] each)
  AttnK,        // [H_kv·d_k, d]
  AttnV,        // [H_kv·d_v, d]
  AttnQkv,      // fused [H·d_k + H_kv·d_k + H_kv·d_v, d]: Q rows, then K, then V
  AttnOut,      // [d, H·d_v]
  AttnQNorm,    // [d_k]: each head's queries normalised before the rotation (Qwen3's q_norm)
  AttnKNorm,    // [d_k]: each head's keys likewise (k_norm)
  CrossNorm,    // cross-attention (decoder of an encoder-decoder): as self-attention
  CrossQ,
  CrossK,
  CrossV,
  CrossQkv,
  CrossOut,
  FfnNorm,
  FfnUp,         // [d_ff, d]: the first linear (gated: the one not activated)
  FfnGate,       // [d_ff, d]: gated feed-forward only, the one act() applies to
  FfnDown,       // [d, d_ff]
  AttnPostNorm,  // the norm of self-attention's output before the residual add (Gemma 2)
  FfnPostNorm,   // the norm of the feed-forward's output before the residual add (Gemma 2)
  FinalNorm,
  Output,        // token logits [V, d] (+ bias)
  MlmTransform,  // BERT's masked-LM head: [d, d], the activation, then MlmNorm, then Output
  MlmNorm,
  Pooler,      // BERT's pooler [d, d] on the first position (tanh)
  Classifier,  // class logits [n_classes, d]
  RelPosBias,  // T5's relative position bias [buckets, H], per stack (its first layer holds it)
};
constexpr int kRoleCount = (int)Role::RelPosBias + 1;
const char* roleName(Role r);  // "token_embd", "attn_q", "ffn_gate", … (llama.cpp's GGUF names)
bool isNormRole(Role r);
bool isLayerRole(Role r);  // per layer ({N} in its names)

// Which stack a role belongs to (the output heads belong to neither).
enum class Part : uint8_t { Encoder, Decoder, Head };
const char* partName(Part p);  // "encoder", "decoder", "head"

// How a tensor is stored (TensorName::flags).
constexpr unsigned kOptional = 1u << 0;      // may be absent: a norm is then the identity
constexpr unsigned kTransposed = 1u << 1;    // stored [in, out] (Hugging Face GPT-2's Conv1D)
constexpr unsigned kTiedCopy = 1u << 2;      // another name of one shared table: unread copy
constexpr unsigned kBiasOptional = 1u << 3;  // a norm's shift, read when present (bias=False)
constexpr unsigned kBiasRow = 1u << 4;       // the bias stored [1, out] (BART's final_logits_bias)
constexpr unsigned kSeqFirst = 1u << 5;      // PosTable stored [max_len, 1, d]
constexpr unsigned kBatchFirst = 1u << 6;    // PosTable stored [1, max_len, d]
constexpr unsigned kFromMap = 1u << 7;       // named by the user's names map: must be there
constexpr unsigned kGainPlusOne = 1u << 8;   // a norm's gain stored as w, applied as 1 + w (Gemma)
constexpr unsigned kQkvPerHead = 1u << 9;    // a fused QKV's rows per head: [H, 3, d_k] (GPT-NeoX)
// ffn_up stored fused [2·d_ff, d]: the gate's rows, then up's (Phi-3's gate_up_proj).
constexpr unsigned kGateUpFused = 1u << 10;

// One spelling of a role: the weight's name pattern and the bias's ("" = none by this spelling).
// In a pattern, {N} is the layer and {M} the head (a module per head: stacked into one
// projection). Several spellings of one role are alternatives: the first present is read.
struct TensorName {
  Part part;
  Role role;
  std::string weight;
  std::string bias;
  unsigned flags = 0;
};

// A pattern with {N} and {M} replaced.
std::string expandName(const std::string& pattern, int layer, int head = 0);
// Whether `name` is `pattern` with digits in place of {N} and {M}.
bool matchesName(const std::string& pattern, const std::string& name);

// What the model computes, when a file or config does not say otherwise (ModelConfig's fields).
struct ArchDefaults {
  Activation activation = Activation::Relu;
  NormPlacement norm = NormPlacement::Post;
  NormKind norm_kind = NormKind::LayerNorm;
  float layer_norm_eps = 1e-5f;
  float embed_norm_eps = 0.0f;  // 0 = layer_norm_eps
  Positional positional = Positional::Sinusoidal;
  float rope_theta = 10000.0f;
  RopeLayout rope_layout = RopeLayout::Interleaved;
  float attn_scale = 0.0f;    // the scores' scale; 0 = 1/√d_k
  bool output_scale = false;  // the token head's input × 1/√d_model (T5's tied embeddings)
  bool gated_ffn = false;
  // GPT-NeoX: x + attn(N₁(x)) + ffn(N₂(x)), both sublayers reading the layer's input.
  bool parallel_residual = false;
  bool sandwich_norms = false;  // ModelConfig::sandwich_norms (Gemma 2)
  // Rotary positions on the first rotary_pct of each head's dimensions (GPT-NeoX's rotary_pct).
  float rotary_pct = 1.0f;
  bool final_norm = false;
  bool embed_scale = false;
  bool embed_norm = false;
  float mask_fill = -1e9f;  // may be -infinity
  int max_len = 5000;
  int position_offset = 0;
  bool positions_skip_pad = false;  // ModelConfig::positions_skip_pad (RoBERTa)
  bool src_bos_eos = false;
  int n_segments = 0;
  // Keys that are the pad token masked; off for language models that have no padding (nanoGPT's
  // character 0 is '\n', not padding).
  bool padding_mask = true;
};

// One key of what a file states beside its tensors: a checkpoint's args dict (nanoGPT's and
// llama2.c's model_args) or a Hugging Face config.json.
enum class ArgKind : uint8_t {
  Int,          // an integer (a null = not stated)
  Number,       // a number
  Bool,         // true or false
  Activation,   // an activation's name in Hugging Face's spelling ("gelu_new", "silu", …)
  Refused,      // must be absent, null or `value` (a list: each item `value`): attnviz does not
                // reproduce anything else
  Ignored,      // read, type-checked against `value`'s type when given, not used
  InverseSqrt,  // a positive number v, set as 1/√v (Gemma 2's query_pre_attn_scalar: the scale)
};
struct ArgKey {
  std::string key;     // "n_head"
  std::string config;  // attnviz's config key it sets ("n_heads"); "" = none
  ArgKind kind = ArgKind::Int;
  std::string value = {};  // Refused: the one value accepted (JSON text), e.g. "\"absolute\""
};

// Another value of a setting than the one assumed, and what it means in the training script.
struct Alternative {
  std::string value;    // "pre", "gelu" (the setting's value, as UserSupplied takes it)
  std::string meaning;  // "norm_first=True", "activation=\"gelu\""
};

// A switch the tensor names cannot tell, assumed as the tutorial has it: "norm" (post/pre) or
// "activation". Data, not wording: each front end says how to change it in its own words (the
// CLI as its option, the GUI as a field of its dialog).
struct Assumption {
  std::string key;                     // "norm" or "activation"
  std::string fact;                    // what is assumed and why, for the notes
  std::vector<Alternative> otherwise;  // the other values a user of the tutorial may have had
  std::string hint;                    // where to look in the training script
};

// The special ids a descriptor's tutorial uses when neither the user nor the vocabulary says.
struct SpecialIds {
  int pad = 0;          // -2 = the last row of the token table (Marian)
  int eos = -1;         // -1 = asked when the architecture needs one
  int bos = -1;         // -1 = asked when needed; -3 = the pad id, -4 = the eos id
  int src_bos = -1;     // BART: the source's start marker (<s> when spelled, else this)
  bool ask_ids = true;  // bos/eos asked for an encoder-decoder when not found
};

// Which tokenizer a Hugging Face folder of this architecture uses.
// T5: SentencePiece's spiece.model, </s> appended to the source.
enum class HfTokenizer : uint8_t { None, Marian, ByteLevelBpe, WordPiece, SentencePieceOrJson, T5 };

// How many tokens the tutorial's own greedy decoder makes (attnviz-cli decode's default).
struct DecodeRule {
  int extra_over_source = 5;  // new tokens = source length + this (encoder-decoders)
  std::string text;           // the tutorial's rule in words, for `attnviz-cli info`
};

// One architecture: a model class of one tutorial.
struct ArchSpec {
  std::string family;  // "nanogpt": the tensor naming style, config key "family"
  std::string model;   // "GPT": the class inside the family, config key "model"
  std::string alias;   // an older family name that still loads, or ""
  std::string title;   // what a user recognises: the tutorial, in words
  std::string source;  // where its public code is (docs/formats.md)
  Architecture arch = Architecture::EncoderDecoder;
  TokenHead token_head = TokenHead::Linear;
  ClassHead class_head = ClassHead::None;
  ArchDefaults defaults;
  // The heads split d_model (d_k = d_v = d_model / n_heads): nn.MultiheadAttention, Hugging Face.
  bool heads_split_d_model = false;
  // The output projection is the token table when the file has no Output tensor.
  bool tied_output = false;
  std::vector<TensorName> names;
  std::vector<std::string> ignored;  // buffers: causal masks, rotary caches, stored sinusoids
  // Where a checkpoint keeps its args ("model_args"), and what they state; a descriptor with an
  // args_key opens only a checkpoint that has them (nanoGPT vs minGPT: the same tensor names).
  std::string args_key;
  std::vector<ArgKey> args;
  std::vector<Assumption> assumptions;
  // Where the tutorial's own scripts find a checkpoint's vocabulary when the user names none:
  // paths relative to the folder they run in (the checkpoint's folder's parent: nanoGPT's
  // out/ckpt.pt), where {key} is that key's value in the checkpoint's "config" dict (its training
  // settings: nanoGPT's "dataset"). Tried in order; the first that reads and fits is used.
  std::vector<std::string> vocab_files;
  SpecialIds ids;
  DecodeRule decode;
  std::string notes;  // assumed when the file has no config, shown in the notes ("" = none)
  // Hugging Face: config.json's model_type and the classes (the first has the token head).
  std::string hf_model_type;
  std::vector<std::string> hf_classes;
  HfTokenizer hf_tokenizer = HfTokenizer::None;
  // Whether attnviz's writer saves models of it (the Train view's pytorch-nn-transformer).
  bool writable = false;
  // The user's map this descriptor was built from (customArchitecture), as JSON text; "" for the
  // table's.
  std::string custom_map;

  bool hasEncoder() const { return arch != Architecture::DecoderOnly; }
  bool hasDecoder() const { return arch != Architecture::EncoderOnly; }
  bool hasCross() const { return arch == Architecture::EncoderDecoder; }
  // The spellings of a role in a part, in the table's order.
  std::vector<const TensorName*> spellings(Part part, Role role) const;
  bool has(Part part, Role role) const { return !spellings(part, role).empty(); }
  // Whether a role's first spelling is one module per head ({M}).
  bool perHead(Part part, Role role) const;
  std::string summary() const;  // "nanogpt GPT"
};

// Every architecture of the table, in its order (the docs' order).
const std::vector<ArchSpec>& architectures();
// The descriptor of a family and class (the family's first class when `model` is empty), or null.
const ArchSpec* findArchitecture(const std::string& family, const std::string& model = "");
// The descriptor a Hugging Face config.json's model_type names, or null.
const ArchSpec* findHfArchitecture(const std::string& model_type);
// The family names (each once, table order): "nlp-tutorial, wq-tutorial, …".
std::string familyList();
// docs/formats.md's tables of architectures (families, defaults, tensor names per role), written
// from the table (architectures_doc.cpp): `attnviz-cli architectures --markdown`.
std::string architecturesMarkdown();

// A descriptor built from the map a user writes for a model that follows none of the table
// (docs/formats.md "Your own names"): {"base": "nanogpt" (optional), "architecture":
// "decoder-only", "names": {"attn_q": "blocks.{N}.attn.q", …}, switches…}. Throws
// Error(BadConfig) naming the key.
std::shared_ptr<const ArchSpec> customArchitecture(const nlohmann::json& map,
                                                   const std::string& source);
// The map's JSON for a custom descriptor (what a config keeps so that the model reopens).
nlohmann::json customArchitectureJson(const ArchSpec& spec);

}  // namespace attnviz

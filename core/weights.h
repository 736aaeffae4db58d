// The weights of an encoder-decoder Transformer on the host, in one layout for every family,
// and the loader that maps each family's state_dict names onto it (docs/formats.md "Tensor names").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config.h"
#include "tensor.h"

namespace attnviz {

class TensorSource;

// y = x·Wᵀ + b.  weight: [out, in]; bias: [out] or empty.
struct LinearWeights {
  Tensor weight;
  Tensor bias;
};

// gamma, beta: [d_model]; both empty = identity affine (the nlp-tutorial's in-forward LayerNorm).
struct LayerNormWeights {
  Tensor gamma;
  Tensor beta;
  bool identity() const { return gamma.empty(); }
};

struct AttentionWeights {
  LinearWeights q;    // [H·d_k, d_model]
  LinearWeights k;    // [H·d_k, d_model]
  LinearWeights v;    // [H·d_v, d_model]
  LinearWeights out;  // [d_model, H·d_v]
};

struct FeedForwardWeights {
  LinearWeights fc1;  // [d_ff, d_model]
  LinearWeights fc2;  // [d_model, d_ff]
};

struct EncoderLayerWeights {
  AttentionWeights self_attn;
  LayerNormWeights norm_attn;  // post: after attn + residual; pre: before attn
  FeedForwardWeights ffn;
  LayerNormWeights norm_ffn;
};

struct DecoderLayerWeights {
  AttentionWeights self_attn;
  LayerNormWeights norm_self;
  AttentionWeights cross_attn;
  LayerNormWeights norm_cross;
  FeedForwardWeights ffn;
  LayerNormWeights norm_ffn;
};

struct ModelWeights {
  Tensor src_embedding;  // [src_vocab, d_model]
  Tensor tgt_embedding;  // [tgt_vocab, d_model]
  Tensor src_positions;  // learned: [max_len, d_model]; sinusoidal: empty
  Tensor tgt_positions;
  std::vector<EncoderLayerWeights> encoder;
  std::vector<DecoderLayerWeights> decoder;
  LayerNormWeights encoder_final_norm;  // empty unless config.final_norm
  LayerNormWeights decoder_final_norm;
  LinearWeights projection;  // [tgt_vocab, d_model] (+ bias)
};

// A model read from disk: where from, its config, its weights, and what the loader noticed.
struct LoadedModel {
  std::string path;
  ModelConfig config;
  ModelWeights weights;
  std::vector<std::string> warnings;  // e.g. NaN/Inf weights, unused tensors
};

struct LoadOptions {
  std::string config_path;  // explicit config JSON; empty = metadata, then the sidecar .json
  uint64_t max_model_bytes = uint64_t(8) << 30;  // refuse models whose weights exceed this
};

// Reads a .safetensors model with its config. Throws Error naming the file, the tensor or field,
// what was found and what was expected.
std::shared_ptr<const LoadedModel> loadModel(const std::string& path,
                                             const LoadOptions& options = {});
// The same from an already-parsed file and config (tests, fuzzing).
std::shared_ptr<const LoadedModel> loadModel(const TensorSource& file, const ModelConfig& config);
// Finds and parses the config for `file` as loadModel does.
ModelConfig findConfig(const TensorSource& file, const std::string& explicit_config_path);
// Host memory a loaded model of this config takes, from the sizes alone (float32 weights, and the
// two sinusoid tables a Model computes): loadModel checks it against max_model_bytes before reading
// any tensor.
uint64_t estimateModelBytes(const ModelConfig& config);

}  // namespace attnviz

namespace attnviz {
// A model of the given config with random weights (normal, std 1/sqrt(fan_in); LayerNorms
// identity; embeddings N(0, 1)), for benchmarks and tests. Vocabularies must be in the config.
std::shared_ptr<const LoadedModel> makeRandomModel(const ModelConfig& config, uint32_t seed);
// The reference tutorial's full size: 6+6 layers, d_model 512, 8 heads of 64, d_ff 2048,
// vocabularies of `vocab` made-up words.
ModelConfig tutorialSizeConfig(int vocab = 1000);
}  // namespace attnviz

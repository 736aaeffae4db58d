// The hyperparameters and vocabularies of a model (docs/formats.md "Config keys"), parsed from JSON
// and validated before anything is allocated.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace attnviz {

enum class Family { NlpTutorial, Seed003, TorchSeq2Seq };
enum class NormPlacement { Post, Pre };
enum class Activation { Relu, Gelu, GeluTanh, Silu, Tanh };
enum class Positional { Sinusoidal, Learned };

const char* familyName(Family f);
const char* activationName(Activation a);

struct ExampleInput {
  std::string src;
  std::string tgt;
};

struct ModelConfig {
  Family family = Family::NlpTutorial;
  int d_model = 0;
  int d_ff = 0;
  int n_heads = 0;
  int d_k = 0;
  int d_v = 0;
  int n_encoder_layers = 0;
  int n_decoder_layers = 0;
  std::vector<std::string> src_vocab;
  std::vector<std::string> tgt_vocab;
  int src_pad_id = 0;
  int tgt_pad_id = 0;
  int bos_id = 0;
  int eos_id = 0;
  int src_unk_id = -1;  // -1: unknown source words are an error
  int tgt_unk_id = -1;
  NormPlacement norm = NormPlacement::Post;
  Activation activation = Activation::Relu;
  bool attn_bias = false;
  bool ffn_bias = false;
  bool final_norm = false;
  bool embed_scale = false;
  Positional positional = Positional::Sinusoidal;
  int max_len = 5000;
  float mask_fill = -1e9f;  // may be -infinity
  float layer_norm_eps = 1e-5f;
  std::string name;
  std::string description;
  std::vector<ExampleInput> examples;

  int attnWidth() const { return n_heads * d_k; }   // width of Q and K projections
  int valueWidth() const { return n_heads * d_v; }  // width of V projection and context
  int64_t parameterCount() const;                   // from the sizes, before any tensor is read

  // Parses and validates; `source` names where the JSON came from, for messages.
  // Throws Error(BadConfig / BadVocabulary / TooLarge).
  static ModelConfig fromJson(const nlohmann::json& j, const std::string& source);
  nlohmann::json toJson() const;
};

// Hard limits that keep a hostile config from asking for absurd allocations.
struct ConfigLimits {
  static constexpr int kMaxWidth = 1 << 16;  // d_model, d_ff, d_k, d_v
  static constexpr int kMaxHeads = 1024;
  static constexpr int kMaxLayers = 256;
  static constexpr int kMaxLen = 1 << 20;               // positions
  static constexpr int kMaxVocab = 1 << 22;             // tokens per vocabulary
  static constexpr int kMaxTokenBytes = 1024;           // bytes per token string
  static constexpr int kMaxSinusoidalPositions = 8192;  // rows of a computed sinusoid table
};

}  // namespace attnviz

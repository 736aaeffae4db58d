// The hyperparameters and vocabularies of a model (docs/formats.md "Config"): which tutorial class
// the weights come from, its sizes and switches, parsed from JSON and validated before anything is
// allocated.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "arch/architectures.h"
#include "compute/functions.h"
#include "text/vocab.h"

namespace attnviz {

// The family (the tensor naming style of a tutorial) and the class inside it name one descriptor of
// the table of architectures (arch/architectures.h); the descriptor decides the architecture, the
// output heads and the defaults.
const std::string& familyName(const std::string& family);  // the name itself (older callers)
const std::string& modelClassName(const std::string& model);
std::string familyTitle(const std::string& family);  // what a user recognises: the tutorial
const char* architectureName(Architecture a);  // "encoder-decoder", "encoder-only", "decoder-only"
const char* activationName(Activation a);
const char* positionalName(Positional p);  // "sinusoidal", "sinusoidal-halves", "learned",
                                           // "rotary", "relative", "sinusoidal-fairseq"
const char* normKindName(NormKind k);      // "layernorm", "layernorm-std", "rmsnorm"
const char* ropeLayoutName(RopeLayout l);  // "interleaved", "halves"

struct ExampleInput {
  std::string src;
  std::string tgt;
};

struct ModelConfig {
  std::string family = "nlp-tutorial";  // a descriptor's family (architectures.h)
  std::string model = "Transformer";    // the class inside it
  // A descriptor of the user's own names ("Your own names" in docs/formats.md) when family is
  // "custom"; null otherwise.
  std::shared_ptr<const ArchSpec> custom;
  int d_model = 0;
  int d_ff = 0;
  int n_heads = 0;
  // Key/value heads: fewer than n_heads is grouped-query attention (query head h reads key/value
  // head h / (n_heads / n_kv_heads)); 0 = n_heads.
  int n_kv_heads = 0;
  int d_k = 0;
  int d_v = 0;
  int n_encoder_layers = 0;  // 0 when the model has no encoder
  int n_decoder_layers = 0;  // 0 when the model has no decoder
  // Token strings, index = id. An encoder-only model has only src_vocab, a decoder-only model
  // only tgt_vocab.
  std::vector<std::string> src_vocab;
  std::vector<std::string> tgt_vocab;
  int src_pad_id = 0;
  int tgt_pad_id = 0;
  int bos_id = -1;  // target start token; -1 = none (encoder-only; a decoder-only prompt as typed)
  int eos_id = -1;  // target end token; -1 = none
  int src_unk_id = -1;  // -1: unknown source words are an error
  int tgt_unk_id = -1;
  NormPlacement norm = NormPlacement::Post;
  NormKind norm_kind = NormKind::LayerNorm;  // every norm of the model
  Activation activation = Activation::Relu;
  // Biases: unset = whatever the file holds (the loader decides from the first layer's tensors).
  std::optional<bool> q_bias, k_bias, v_bias, out_bias, ffn_bias, proj_bias;
  bool final_norm = false;   // a LayerNorm after each stack
  bool embed_scale = false;  // token embeddings × √d_model
  bool embed_norm = false;   // a LayerNorm after token (+ segment) + position embeddings
  float embed_norm_eps = 1e-5f;
  Positional positional = Positional::Sinusoidal;
  float rope_theta = 10000.0f;                       // Positional::Rotary
  RopeLayout rope_layout = RopeLayout::Interleaved;  // Positional::Rotary
  // Positional::Relative (T5): the buckets of the relative position bias table [buckets, H] and
  // the distance from which every key falls in a half's last bucket (compute/position_buckets.h).
  int relative_buckets = 32;
  int relative_max_distance = 128;
  // The scores' scale: QKᵀ·attn_scale; 0 = 1/√d_k (T5: 1, no scaling).
  float attn_scale = 0.0f;
  // The token head's input × 1/√d_model (T5 with tie_word_embeddings, before the tied lm_head).
  bool output_scale = false;
  // Whether the output projection is the token table when the file has none of its own; unset =
  // the descriptor's tied_output (config.json's tie_word_embeddings false: it must be there).
  std::optional<bool> tied_output;
  // A gated feed-forward: fc2(act(gate(x)) ⊙ fc1(x)) — SwiGLU with Silu, GeGLU with Gelu.
  bool gated_ffn = false;
  // Each layer x ← x + SelfAttention(N₁(x)) + FeedForward(N₂(x)), both reading the layer's input
  // (GPT-NeoX's use_parallel_residual); pre-norm decoder-only models only.
  bool parallel_residual = false;
  // Each sublayer's output normed before its residual add, x ← x + N₂(f(N₁(x))) (Gemma 2's
  // post_attention_layernorm and post_feedforward_layernorm); pre-norm only.
  bool sandwich_norms = false;
  // Soft-capping: the scores (after the scale, before the mask) become cap·tanh(s / cap)
  // (Gemma 2's attn_logit_softcapping), the token logits likewise (final_logit_softcapping).
  // 0 = none.
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;
  // Positional::Rotary: the share of each head's d_k dimensions that rotate, the first
  // rotaryDims() of them (GPT-NeoX's rotary_pct); the rest pass unturned.
  float rotary_pct = 1.0f;
  int max_len = 5000;
  // Some layers attend only to each query's last local_window keys (GPT-Neo's "local" layers);
  // attnviz runs inputs of at most local_window tokens, where that window is the causal mask
  // itself. 0 = no such layer.
  int local_window = 0;
  int position_offset = 0;  // a learned table's first rows unused (BART: 2): position p reads row
                            // p + offset
  // Learned positions counted over the tokens that are not padding (RoBERTa's
  // create_position_ids_from_input_ids): the k-th non-pad token reads row offset + k − 1, a pad
  // token row offset − 1 (padding_idx); needs position_offset = pad id + 1.
  bool positions_skip_pad = false;
  float mask_fill = -1e9f;  // may be -infinity
  float layer_norm_eps = 1e-5f;
  bool src_bos_eos = false;  // the typed source is wrapped in src_bos_id … src_eos_id
  int src_bos_id = -1;
  int src_eos_id = -1;
  bool src_padding_mask = true;  // padding keys of the source are masked
  bool tgt_padding_mask = true;  // padding keys of the target are masked
  int n_segments = 0;            // segment (token type) embeddings; ids default to 0
  int n_classes = 0;             // class-head outputs; 0 = read from the tensors
  std::vector<std::string> class_labels;
  std::string name;
  std::string description;
  std::vector<ExampleInput> examples;

  // The descriptor of family and model (or the custom one). A config made by fromJson always has
  // one; a hand-made config with an unknown family gets nlp-tutorial's.
  const ArchSpec& spec() const;
  Architecture architecture() const;
  bool hasEncoder() const { return architecture() != Architecture::DecoderOnly; }
  bool hasDecoder() const { return architecture() != Architecture::EncoderOnly; }
  bool hasCross() const { return architecture() == Architecture::EncoderDecoder; }
  TokenHead tokenHead() const;
  ClassHead classHead() const;
  // The vocabulary the token head predicts over (target, or the source for a masked LM).
  const std::vector<std::string>& outputVocab() const;
  std::string classLabel(int c) const;  // class_labels[c] or "class c"

  int kvHeads() const { return n_kv_heads > 0 ? n_kv_heads : n_heads; }
  // Query heads per key/value head (1 = multi-head attention), and the key/value head that query
  // head h reads: h / (n_heads / n_kv_heads), the g(h) of the attention ops (compute/backend.h).
  int queriesPerKvHead() const { return n_heads / kvHeads(); }
  int kvHeadOf(int h) const { return h / queriesPerKvHead(); }
  // The factor of QKᵀ in the scores: attn_scale, or 1/√d_k when it is 0.
  float scoreScale() const;
  // The rotated dimensions of each head: int(d_k · rotary_pct), as GPT-NeoX truncates it.
  int rotaryDims() const { return (int)((double)d_k * (double)rotary_pct); }
  // The rows of the position table the model uses: max_len for a learned table or relative
  // positions; for a computed one (sinusoids: d_model floats a row, rotary: rotaryDims()) as many
  // as ConfigLimits::kMaxPositionTableBytes hold, at most max_len.
  int positionRows() const;
  int attnWidth() const { return n_heads * d_k; }       // width of the Q projection
  int valueWidth() const { return n_heads * d_v; }      // width of the context
  int keyWidth() const { return kvHeads() * d_k; }      // width of the K projection
  int kvValueWidth() const { return kvHeads() * d_v; }  // width of the V projection
  // From the sizes, before any tensor is read: an upper bound for the memory checks (biases
  // counted when set or unset alike, an output head that may be tied counted too); the exact
  // count of a loaded model is countParameters (model/device_weights.h).
  int64_t parameterCount() const;

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
  static constexpr int kMaxLen = 1 << 20;                                  // positions
  static constexpr int kMaxVocab = VocabularyLimits::kMaxTokens;           // tokens per vocabulary
  static constexpr int kMaxTokenBytes = VocabularyLimits::kMaxTokenBytes;  // bytes per token string
  // A position table attnviz computes (sinusoids, rotary angles) holds at most this much: its
  // rows, and so the positions the model takes, are max_len or as many as fit (ModelConfig::
  // positionRows).
  static constexpr uint64_t kMaxPositionTableBytes = uint64_t(128) << 20;
  static constexpr int kMaxSegments = 64;
  static constexpr int kMaxClasses = 1 << 16;
  static constexpr int kMaxRelativeBuckets = 1024;  // rows of a relative position bias table
};

// The settings a names map shares with the config (docs/formats.md "Your own names"), each read
// with the config's own checks: one validation however a config arrives. `fallback` when the key
// is absent; `source` names where the JSON came from. Throws Error(BadConfig).
int configMaxLen(const nlohmann::json& j, const std::string& source, int fallback);
float configEps(const nlohmann::json& j, const char* key, const std::string& source,
                float fallback);  // a positive float32, at most 1
float configRopeTheta(const nlohmann::json& j, const std::string& source, float fallback);
float configMaskFill(const nlohmann::json& j, const std::string& source, float fallback);

}  // namespace attnviz

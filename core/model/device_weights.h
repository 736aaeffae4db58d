// A model's parameters on a backend: every parameter packed once into one device array (llm.c's
// params_memory), in the layout the forward pass reads — queries, keys|values fused per attention
// block, [gate; up] fused per gated feed-forward — and the tables that are no parameter
// (sinusoids, rotary angles).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "arch/weights.h"
#include "compute/backend.h"

namespace attnviz {

// y = x·Wᵀ + b on the device; pointers into DeviceWeights::params.
struct DeviceLinear {
  float* w = nullptr;  // [out, in]
  float* b = nullptr;  // [out] or null
  int in = 0, out = 0;
};

struct DeviceNorm {
  float* gamma = nullptr;  // [d]; null = identity affine
  float* beta = nullptr;   // [d]; null = no shift
};

// Queries, and keys with values as one projection [W_k; W_v]: queries come from the layer's
// input; keys and values from the same input (self-attention, into the key/value store) or from
// the encoder's output (cross-attention, computed once per sentence).
struct DeviceAttention {
  DeviceLinear q;             // [A, d]            A = H·d_k
  DeviceLinear kv;            // [Ak + Av, d]      Ak = H_kv·d_k, Av = H_kv·d_v
  DeviceLinear out;           // [d, H·d_v]
  DeviceNorm q_norm, k_norm;  // [d_k] each, per head before the rotation; null gamma: none
};

struct DeviceLayer {
  DeviceAttention self_attn, cross_attn;
  DeviceNorm norm_self, norm_cross, norm_ffn;
  // Gemma 2: self-attention's and the feed-forward's outputs normed before the residual add.
  DeviceNorm post_self, post_ffn;
  bool has_post_norms = false;
  DeviceLinear fc1;  // [d_ff, d], or gated: [gate; up] [2·d_ff, d]
  DeviceLinear fc2;  // [d, d_ff]
  bool has_cross = false;
};

struct DeviceStack {
  float* tokens = nullptr;             // [vocab, d]
  float* segments = nullptr;           // [n_segments, d] or null
  float* learned_positions = nullptr;  // [max_len, d] or null
  // What embedding_forward adds: learned positions (from row position_offset), the shared
  // sinusoid table, or null (rotary positions rotate queries and keys instead).
  const float* positions = nullptr;
  DeviceNorm embed_norm;
  float* relative_bias = nullptr;  // [relative_buckets, H] (T5) or null
  std::vector<DeviceLayer> layers;
  DeviceNorm final_norm;
};

struct DeviceHead {
  DeviceLinear projection;  // [V, d]; its w is the token table's when they are tied
  DeviceLinear mlm_transform, pooler, classifier;
  DeviceNorm mlm_norm;
};

struct DeviceWeights {
  DeviceStack enc, dec;
  DeviceHead head;
  BufferPtr sinusoid;  // [rows, d] shared by both stacks (no parameter)
  BufferPtr rotary;    // [rows, d_k / 2] cos, then [rows, d_k / 2] sin (no parameter)
  int rotary_rows = 0;
  BufferPtr params;  // [n_params] every parameter
  int64_t n_params = 0;
  // Where each host tensor's values sit in `params` (for reading the weights back), and the slots
  // that stand for no host tensor (the zero bias of a fused part that has none: kept at zero).
  std::vector<std::pair<const Tensor*, int64_t>> pieces;
  std::vector<std::pair<int64_t, int64_t>> padding;  // (offset, count)
  uint64_t bytes = 0;
  bool tied = false;  // the output projection reads the token table (one parameter, one gradient)

  // The rotary angles' tables [rotary_rows, rotated / 2] (rope_forward's cos and sin), or null;
  // `rotated`: the rotated dimensions of a head (ModelConfig::rotaryDims).
  const float* rotaryCos() const { return rotary ? rotary->f32() : nullptr; }
  const float* rotarySin(int rotated) const {
    return rotary ? rotary->f32() + (int64_t)rotary_rows * (rotated / 2) : nullptr;
  }
};

// Uploads the weights of `w` (in the layout of arch/weights.h) and the tables the config asks for,
// with `rows` positions. Throws Error(Backend) when the backend cannot hold them.
DeviceWeights uploadWeights(Backend& be, const ModelConfig& c, const ModelWeights& w, int rows);
// The number of distinct parameters of the model: what uploadWeights lays out less the zeros that
// stand for a missing bias; a tied output head is the token table, not a second copy.
int64_t countParameters(const ModelConfig& c, const ModelWeights& w);

// Every parameter as it is now, in the host layout of `like` (the weights they were uploaded
// from): `base` is DeviceWeights::params or a gradient array with the same offsets.
ModelWeights downloadWeights(Backend& be, const DeviceWeights& dw, const ModelWeights& like,
                             const float* base);

}  // namespace attnviz

// The tape: what a training pass keeps for its backward (llm.c's activations). The forward pass
// (model/pass.h) writes it when it is given one; the backward (train/backward.h) reads it, op for
// op in reverse. Every pointer is a region of one workspace; rows = B·n positions of a stack run.
#pragma once

#include <cstdint>
#include <vector>

#include "compute/backend.h"
#include "model/arena.h"

namespace attnviz {

// One residual block. Pre-norm: x ← x + drop(f(N(x))); post-norm: x ← N(x + drop(f(x))).
struct SublayerTape {
  float* f_in = nullptr;     // [rows, d] the sublayer's input: N(x) (pre), x (post)
  float* norm_in = nullptr;  // [rows, d] the norm's input: x (pre), x + drop(f(x)) (post)
  uint64_t seed = 0;         // dropout of f's output
};

struct AttentionTape {
  float* q = nullptr;      // [rows, A] queries (after the rotation, with rotary positions)
  float* kv = nullptr;     // [B, n, Ak + Av] keys | values (self-attention; cross: Encoded)
  float* probs = nullptr;  // [B, H, n, Tk]
  float* ctx = nullptr;    // [rows, H·d_v]
  // Before the per-head norms of q and k (models that have them; null otherwise).
  float* q_raw = nullptr;   // [rows, A]
  float* kv_raw = nullptr;  // [B, n, Ak + Av] (the keys' part read)
};

struct LayerTape {
  SublayerTape self, cross, ffn;
  AttentionTape self_attn, cross_attn;
  float* ffn_pre = nullptr;  // [rows, d_ff] fc1's output (gated: [rows, 2·d_ff] gate | up)
  float* ffn_act = nullptr;  // [rows, d_ff] after the activation and dropout: fc2's input
  uint64_t ffn_seed = 0;
};

struct StackTape {
  int B = 0, n = 0, S = 0;         // S: the cross-attention's keys (0 without)
  int32_t* ids = nullptr;          // [B, n]
  int32_t* segs = nullptr;         // [B, n] or null
  uint8_t* mask = nullptr;         // [B, n, n] self-attention
  uint8_t* cross_mask = nullptr;   // [B, n, S]
  float* embed_norm_in = nullptr;  // [rows, d] before the embedding norm
  uint64_t embed_seed = 0;         // dropout of the embeddings
  // Integrated gradients (train/attribution.h): sentence b's token rows tokens[ids]·scale scaled
  // by token_scale[b] before the positions and segments are added; empty: not scaled.
  std::vector<float> token_scale;
  std::vector<LayerTape> layers;
  float* final_in = nullptr;  // [rows, d] before the stack's final norm
  float* out = nullptr;       // [rows, d] the stack's output (decoder; the encoder's: memory)
};

struct HeadTape {
  float* logits = nullptr;        // [rows, V] token logits
  float* mlm_pre = nullptr;       // [rows, d] BERT MLM transform's output
  float* mlm_act = nullptr;       // [rows, d] after the activation: the norm's input
  float* mlm_out = nullptr;       // [rows, d] the projection's input
  float* scaled_in = nullptr;     // [rows, d] the stream × 1/√d (output_scale): lm_head's input
  float* pooled = nullptr;        // [B, d] mean or first position
  float* pooler_pre = nullptr;    // [B, d] BERT pooler's linear output
  float* pooler_act = nullptr;    // [B, d] after tanh: the classifier's input
  float* class_logits = nullptr;  // [B, C]
};

struct Tape {
  float dropout = 0.0f;
  StackTape enc, dec;
  HeadTape head;
  Arena* workspace = nullptr;    // what the tape is carved from (puts and gets go through it)
  BufferPtr* scratch = nullptr;  // the passes' own scratch, kept across steps
};

}  // namespace attnviz

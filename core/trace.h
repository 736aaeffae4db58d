// The attention trace of one forward pass: for encoder self-, decoder self- and cross-attention,
// per layer and head, the scaled scores (before the mask), the mask and the probabilities, plus
// the logits and the tokens. This is what every view and the CLI's --dump show.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor.h"

namespace attnviz {

enum class AttentionKind { EncoderSelf, DecoderSelf, Cross };
const char* attentionKindName(AttentionKind kind);   // "enc_self", "dec_self", "cross"
const char* attentionKindTitle(AttentionKind kind);  // "Encoder self-attention", ...

// One kind of attention for a whole batch.
struct AttentionTrace {
  int batch = 0, layers = 0, heads = 0, q_len = 0, k_len = 0;
  std::vector<float> scores;  // [B, L, H, Tq, Tk] scaled QKᵀ before the mask; empty if not kept
  std::vector<uint8_t> mask;  // [B, Tq, Tk] 1 = masked (the same for every layer and head)
  std::vector<float> probs;   // [B, L, H, Tq, Tk]

  bool empty() const { return probs.empty(); }
  bool hasScores() const { return !scores.empty(); }
  int64_t index(int b, int l, int h, int i, int j) const {
    return ((((int64_t)b * layers + l) * heads + h) * q_len + i) * k_len + j;
  }
  float prob(int b, int l, int h, int i, int j) const { return probs[index(b, l, h, i, j)]; }
  float score(int b, int l, int h, int i, int j) const {
    return scores.empty() ? 0.0f : scores[index(b, l, h, i, j)];
  }
  bool masked(int b, int i, int j) const { return mask[((int64_t)b * q_len + i) * k_len + j] != 0; }
};

struct Trace {
  int batch = 0;
  int src_len = 0;                        // padded length S
  int tgt_len = 0;                        // padded length T
  std::vector<std::vector<int>> src_ids;  // [B][S] padded
  std::vector<std::vector<int>> tgt_ids;  // [B][T] padded, starting with BOS
  std::vector<std::vector<std::string>> src_tokens;
  std::vector<std::vector<std::string>> tgt_tokens;
  AttentionTrace enc_self;  // [B, L_enc, H, S, S]
  AttentionTrace dec_self;  // [B, L_dec, H, T, T]
  AttentionTrace cross;     // [B, L_dec, H, T, S]
  Tensor logits;            // [B, T, tgt_vocab]
  double elapsed_ms = 0;    // wall time of the forward pass
  std::string backend;      // which backend computed it

  const AttentionTrace& get(AttentionKind kind) const;
  AttentionTrace& get(AttentionKind kind);
};

// Bytes a full trace would take (scores + probs + masks + logits), for the memory check.
uint64_t estimateTraceBytes(int B, int S, int T, int enc_layers, int dec_layers, int heads,
                            int tgt_vocab, bool keep_scores);

}  // namespace attnviz

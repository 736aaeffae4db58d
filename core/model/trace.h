// The attention trace of a model run: a list of attention blocks (encoder self-, decoder self- and
// cross-attention, one per layer that has it), each with the scaled scores before the mask, the
// mask and the probabilities per head; then the model's outputs (per-position token logits, class
// logits, the last stack's hidden states) and the tokens. What every view and the CLI's --dump
// show. A decoding session grows the decoder's blocks one row at a time (appendRows), in place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/host_memory.h"
#include "base/tensor.h"
#include "text/vocab.h"

namespace attnviz {

enum class AttentionKind { EncoderSelf, DecoderSelf, Cross };
constexpr AttentionKind kAttentionKinds[] = {AttentionKind::EncoderSelf, AttentionKind::DecoderSelf,
                                             AttentionKind::Cross};
const char* attentionKindName(AttentionKind kind);   // "enc_self", "dec_self", "cross"
const char* attentionKindTitle(AttentionKind kind);  // "Encoder self-attention", ...
// Which sequence a kind's queries and keys are positions of: the source (encoder side) or the
// target (decoder side).
Side querySide(AttentionKind kind);
Side keySide(AttentionKind kind);

// One attention block of one layer for a batch. Storage is [batch, heads, q_cap, k_cap] with
// q_len ≤ q_cap and k_len ≤ k_cap: a decoding session appends rows (and, for self-attention, a
// key column) in place, growing the capacity geometrically. Read through the accessors.
struct AttentionBlock {
  AttentionKind kind = AttentionKind::EncoderSelf;
  int layer = 0;
  int batch = 0, heads = 0, q_len = 0, k_len = 0;
  int q_cap = 0, k_cap = 0;
  HostVector<float> scores;  // [batch, heads, q_cap, k_cap] QKᵀ/√d_k before the mask; empty if
                             // not kept
  HostVector<float> probs;   // [batch, heads, q_cap, k_cap]
  HostVector<uint8_t> mask;  // [batch, q_cap, k_cap] 1 = masked (the same for every head)
  // The vectors behind the scores, kept on request (ForwardOptions::keep_qkv): each head's
  // queries, keys and values after the projections (and their biases).
  int d_k = 0, d_v = 0;
  HostVector<float> q;  // [batch, heads, q_cap, d_k]
  HostVector<float> k;  // [batch, heads, k_cap, d_k]
  HostVector<float> v;  // [batch, heads, k_cap, d_v]
  // In rows of a decoding step (TraceRows): k and v hold only key rows [kv0, k_len), the keys
  // this step added (all of them for a fresh block; none for cross-attention after the first).
  int kv0 = 0;
  // Long inputs: the scores are not stored but computed when asked, from the kept q and k
  // (q_i·k_j/√d_k, exactly the pass's arithmetic up to the order of the sum).
  bool scores_from_qk = false;

  // A dense block [batch, heads, q_len, k_len] (q_cap = q_len, k_cap = k_len): its scores,
  // probabilities and mask zero-filled, or left to a pass that writes every cell (zero_fill false).
  AttentionBlock(AttentionKind kind, int layer, int batch, int heads, int q_len, int k_len,
                 bool keep_scores, bool zero_fill = true);
  AttentionBlock() = default;

  // Whether scores can be read (stored, or computed from q and k).
  bool hasScores() const { return !scores.empty() || (scores_from_qk && !q.empty()); }
  int64_t index(int b, int h, int i, int j) const {
    return (((int64_t)b * heads + h) * q_cap + i) * k_cap + j;
  }
  float prob(int b, int h, int i, int j) const { return probs[index(b, h, i, j)]; }
  float score(int b, int h, int i, int j) const;
  bool masked(int b, int i, int j) const { return mask[((int64_t)b * q_cap + i) * k_cap + j] != 0; }
  // Row i of head h: k_len values, contiguous.
  const float* probRow(int b, int h, int i) const { return probs.data() + index(b, h, i, 0); }
  // The stored scores of row i (nullptr when the scores are computed from q and k).
  const float* scoreRow(int b, int h, int i) const {
    return scores.empty() ? nullptr : scores.data() + index(b, h, i, 0);
  }
  // Row i's k_len scores into out, stored or computed.
  void scoresOfRow(int b, int h, int i, float* out) const;
  const uint8_t* maskRow(int b, int i) const {
    return mask.data() + ((int64_t)b * q_cap + i) * k_cap;
  }
  // Copies into dense [batch, heads, q_len, k_len] (masks: the same shape, repeated per head).
  std::vector<float> denseProbs() const;
  std::vector<float> denseScores() const;
  std::vector<uint8_t> denseMask() const;
  bool hasQkv() const { return !q.empty() && !v.empty(); }
  const float* qRow(int b, int h, int i) const {
    return q.data() + (((int64_t)b * heads + h) * q_cap + i) * d_k;
  }
  const float* kRow(int b, int h, int j) const {
    return k.data() + (((int64_t)b * heads + h) * k_cap + j) * d_k;
  }
  const float* vRow(int b, int h, int j) const {
    return v.data() + (((int64_t)b * heads + h) * k_cap + j) * d_v;
  }
  // Bytes of a dense block of these sizes (scores + probs + mask).
  static uint64_t bytesFor(int batch, int heads, int q_len, int k_len, bool keep_scores);
  // The same with the scores computed from q and k: probs + mask + q and k.
  static uint64_t bytesFromQk(int batch, int heads, int q_len, int k_len, int d_k);
};

// One sublayer's input and output in one layer of a stack, [batch, len, d_model] each: what the
// architecture view shows as position × dimension heatmaps. Model::forward records them with
// ForwardOptions::keep_activations, in the order computed. A sublayer's output is f(input) before
// the residual add. Pre-norm: a Norm* entry is the LayerNorm before its sublayer (input: the
// residual stream); post-norm: the add & norm after it (input: x + sublayer(x)). FinalNorm:
// layer −1, the stack's final LayerNorm. Residual: the residual stream around a whole layer —
// what the logit lens (model/lens.h) reads.
enum class Sublayer {
  Embedding,  // layer −1; input: token (+ segment) embeddings, output: the first layer's input
  SelfAttention,
  CrossAttention,
  FeedForward,
  NormSelf,
  NormCross,
  NormFeedForward,
  FinalNorm,  // layer −1
  // The residual stream around layer l; input: the stream entering the layer (the previous
  // layer's output, or the embeddings'), output: the block's output, the stream leaving it —
  // pre-norm x + f(N(x)) + …, post-norm already normed by the layer's last add & norm. The stack's
  // final norm is not in it (FinalNorm).
  Residual,
};
struct SublayerActivation {
  Side side = Side::Source;  // Source: the encoder stack; Target: the decoder stack
  int layer = -1;
  Sublayer sublayer = Sublayer::Embedding;
  Tensor input;   // [batch, len, d_model]
  Tensor output;  // [batch, len, d_model]
  // Attention sublayers: every head's output before the output projection, the context
  // softmax(…)·V with the heads switched off as the pass ran [batch, len, H·d_v] (head h: columns
  // [h·d_v, (h + 1)·d_v)); the sublayer's output is context·W_Oᵀ + b_O. Empty otherwise.
  Tensor context;
};

// New decoder positions [q0, q0 + n) computed by a decoding step, to append to a trace: for each
// decoder block its new rows (q_len = n, k_len = q0 + n), and for self-attention the scores of the
// earlier rows [0, q0) against the new keys (future_scores [batch, heads, q0, n]; their probs are
// 0 and their mask is what the causal rule says). q0 = 0 replaces the decoder part of a trace.
struct TraceRows {
  int q0 = 0;
  int n = 0;
  std::vector<int> tokens;                        // [n] the ids fed at these positions (batch 1)
  std::vector<AttentionBlock> blocks;             // decoder blocks, in layer order
  std::vector<std::vector<float>> future_scores;  // per block (empty for cross-attention)
  std::vector<std::vector<uint8_t>> future_mask;  // per block: [batch, q0, n]
  Tensor logits;                                  // [batch, n, V] (empty without a token head)
  Tensor hidden;                                  // [batch, n, d_model]
  std::vector<SublayerActivation> activations;    // keep_activations, first run (q0 = 0) only
};

struct Trace {
  int batch = 0;
  int src_len = 0;                            // padded length S (0 without an encoder)
  int tgt_len = 0;                            // padded length T (0 without a decoder)
  std::vector<std::vector<int>> src_ids;      // [B][S] padded
  std::vector<std::vector<int>> tgt_ids;      // [B][T] padded, starting with the start token
  std::vector<std::vector<int>> segment_ids;  // [B][S] when the model has segment embeddings
  std::vector<std::vector<std::string>> src_tokens;
  std::vector<std::vector<std::string>> tgt_tokens;
  std::vector<AttentionBlock> blocks;  // encoder layers in order, then per decoder layer its
                                       // self-attention then its cross-attention
  Tensor logits;          // [B, T or S, V]: token logits of the decoder's positions (or, for a
                          // masked LM, of the source positions); empty without a token head
  Tensor class_logits;    // [B, n_classes]; empty without a class head
  Tensor hidden;          // [B, T or S, d_model]: the last stack's output (after any final norm)
  double elapsed_ms = 0;  // wall time of the forward pass
  std::string backend;    // which backend computed it

  // Sublayers' inputs and outputs; empty unless recorded (see Sublayer).
  std::vector<SublayerActivation> activations;

  // The block of `kind` at `layer`, or nullptr when the model has none.
  const AttentionBlock* block(AttentionKind kind, int layer) const;
  int layers(AttentionKind kind) const;  // how many blocks of that kind
  // The recorded activation of a sublayer, or nullptr.
  const SublayerActivation* activation(Side side, int layer, Sublayer sublayer) const;
  bool has(AttentionKind kind) const { return layers(kind) > 0; }
  // Heads of any block (all blocks have the same number).
  int heads() const { return blocks.empty() ? 0 : blocks.front().heads; }
  int queryLen(AttentionKind kind) const;
  int keyLen(AttentionKind kind) const;
  const std::vector<std::string>& queryTokens(AttentionKind kind, int b) const;
  const std::vector<std::string>& keyTokens(AttentionKind kind, int b) const;
  // Token logits row (V values) of position i of sentence b.
  const float* logitsRow(int b, int i) const;

  // Appends decoder rows (batch 1). rows.q0 must equal tgt_len; q0 = 0 replaces the decoder part.
  // `token_strings` are the strings of rows.tokens.
  void appendRows(TraceRows&& rows, const std::vector<std::string>& token_strings);
  // Keeps the first n target positions (n ≥ 1), dropping later decoder rows (batch 1).
  void truncateTarget(int n);
  // Bytes held by the blocks and outputs.
  uint64_t bytes() const;
};

}  // namespace attnviz

// The attention trace of a model run: a list of attention blocks (encoder self-, decoder self- and
// cross-attention, one per layer that has it), each keeping the queries and keys as attention used
// them, each row's softmax statistics and the rules of the scores and the mask, from which any
// tile of scores, mask or probabilities is computed on demand; then the model's outputs
// (per-position token logits, class logits, the last stack's hidden states) and the tokens. What
// every view and the CLI's --dump show. A decoding session grows the decoder's blocks one row at a
// time (appendRows), in place.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/host_memory.h"
#include "base/tensor.h"
#include "model/token_logits.h"
#include "text/vocab.h"

namespace attnviz {

enum class AttentionKind { EncoderSelf, DecoderSelf, Cross };
constexpr AttentionKind kAttentionKinds[] = {AttentionKind::EncoderSelf, AttentionKind::DecoderSelf,
                                             AttentionKind::Cross};
const char* attentionKindName(AttentionKind kind);  // "enc_self", "dec_self", "cross"
// The kind attentionKindName names `name`; false when it names none.
bool attentionKindNamed(std::string_view name, AttentionKind* kind);
struct ModelConfig;
// How many blocks of that kind a model of this config has (0 for a kind it lacks).
int layerCount(const ModelConfig& config, AttentionKind kind);
const char* attentionKindTitle(AttentionKind kind);  // "Encoder self-attention", ...
// Which sequence a kind's queries and keys are positions of: the source (encoder side) or the
// target (decoder side).
Side querySide(AttentionKind kind);
Side keySide(AttentionKind kind);

// Which cells of a block are masked (1 = masked), as a rule rather than a matrix: a key that is
// padding (per sentence, when the padding mask is on), and with `causal` a key after the query's
// position (decoder self-attention, when the look-ahead mask is on).
struct MaskRule {
  std::vector<std::vector<uint8_t>> key_masked;  // [batch][≥ k_len]: key j of sentence b masked
  bool causal = false;  // key j masked for the query at position i if j > i
  bool masked(int b, int i_pos, int j) const {
    return key_masked[(size_t)b][(size_t)j] != 0 || (causal && j > i_pos);
  }
};

// How a block's scores come from its queries and keys, as the pass computed them:
//   s_ij = scale · q_i·k_j, soft-capped (Gemma 2: cap·tanh(q_i·k_j · scale/cap)), plus T5's
//   relative position bias table[bucket(j − i), h] (self-attention); the softmax reads
//   v_ij = masked ? fill : s_ij / temperature_h (a head's temperature, an intervention).
struct ScoreRule {
  float scale = 1.0f;
  float softcap = 0.0f;               // > 0: Gemma 2's attention soft-cap
  std::vector<float> relative_bias;   // [buckets, heads] (T5), or empty
  int buckets = 0, max_distance = 0;  // relative_position_bucket's parameters
  bool bidirectional = false;         // the encoder's buckets
  std::vector<float> temperature;     // [heads]; empty: 1 for every head
  float fill = -1e9f;                 // the softmax's value of a masked cell (may be −∞)
};

// One attention block of one layer for a batch: what is small enough to keep at any length — each
// head's queries and keys exactly as attention used them (after rotary, after any norm on q and
// k), the mask's rule, the score's rule, and per head and query row the softmax's normaliser —
// from which any cell is computed exactly on demand:
//   score s_ij (ScoreRule),  p_ij = exp(v_ij − ref_i) · ref_prob_i,
// ref_i being the softmax's input at row i's most probable key and ref_prob_i its probability (the
// pass's own arithmetic up to the order of a sum). Read through the tiles below: whole matrices for
// short inputs, tiles for long ones. Rows are positions q_pos0 + i; capacity q_cap ≥ q_len and
// k_cap ≥ k_len lets a decoding session append rows (and, for self-attention, keys) in place.
struct AttentionBlock {
  AttentionKind kind = AttentionKind::EncoderSelf;
  int layer = 0;
  int batch = 0, heads = 0, kv_heads = 0, q_len = 0, k_len = 0;
  int q_cap = 0, k_cap = 0;
  int d_k = 0, d_v = 0;
  int q_pos0 = 0;                 // the position of row 0 (a decoding step's rows start later)
  HostVector<float> q;            // [batch, heads, q_cap, d_k]
  HostVector<float> k;            // [batch, kv_heads, k_cap, d_k]
  HostVector<float> v;            // [batch, kv_heads, k_cap, d_v]; kept on request (keep_qkv)
  HostVector<float> row_ref;      // [batch, heads, q_cap]
  HostVector<float> row_prob;     // [batch, heads, q_cap]
  std::vector<int32_t> row_keys;  // [batch, q_cap]: the keys row i's softmax ran over (a decoding
                                  // step's rows saw only the keys up to their own); later keys 0
  MaskRule mask;
  ScoreRule rule;
  // In rows of a decoding step (TraceRows): k and v hold only key rows [kv0, k_len), the keys
  // this step added (all of them for a fresh block; none for cross-attention after the first).
  int kv0 = 0;

  AttentionBlock(AttentionKind kind, int layer, int batch, int heads, int kv_heads, int q_len,
                 int k_len, int d_k);
  AttentionBlock() = default;

  // Query head h reads key/value head g(h).
  int kvHead(int h) const { return h / (heads / kv_heads); }
  const float* qRow(int b, int h, int i) const {
    return q.data() + (((int64_t)b * heads + h) * q_cap + i) * d_k;
  }
  const float* kRow(int b, int h, int j) const {  // h: a query head
    return k.data() + (((int64_t)b * kv_heads + kvHead(h)) * k_cap + j) * d_k;
  }
  const float* vRow(int b, int h, int j) const {
    return v.data() + (((int64_t)b * kv_heads + kvHead(h)) * k_cap + j) * d_v;
  }
  bool hasValues() const { return !v.empty(); }

  // Tiles [i1 − i0, j1 − j0], row-major, of head h of sentence b (0 ≤ i0 ≤ i1 ≤ q_len,
  // 0 ≤ j0 ≤ j1 ≤ k_len): the scores before the mask, the probabilities, the mask (every head's).
  void scoreTile(int b, int h, int i0, int i1, int j0, int j1, float* out) const;
  void probTile(int b, int h, int i0, int i1, int j0, int j1, float* out) const;
  void maskTile(int b, int i0, int i1, int j0, int j1, uint8_t* out) const;
  // One row (k_len values) and one cell.
  void scoresOfRow(int b, int h, int i, float* out) const {
    scoreTile(b, h, i, i + 1, 0, k_len, out);
  }
  void probsOfRow(int b, int h, int i, float* out) const {
    probTile(b, h, i, i + 1, 0, k_len, out);
  }
  void maskOfRow(int b, int i, uint8_t* out) const { maskTile(b, i, i + 1, 0, k_len, out); }
  std::vector<float> probRow(int b, int h, int i) const;
  std::vector<float> scoreRow(int b, int h, int i) const;
  std::vector<uint8_t> maskRow(int b, int i) const;
  float score(int b, int h, int i, int j) const;
  float prob(int b, int h, int i, int j) const;
  bool masked(int b, int i, int j) const { return mask.masked(b, q_pos0 + i, j); }
  // Whether any cell of sentence b is masked, read from the rule (not cell by cell).
  bool anyMasked(int b) const;
  // Whole matrices [batch, heads, q_len, k_len] (masks: the same shape, repeated per head), for
  // short inputs: dumps and tests.
  std::vector<float> denseProbs() const;
  std::vector<float> denseScores() const;
  std::vector<uint8_t> denseMask() const;

  // Bytes a block of these sizes keeps (q, k, the row statistics, the key mask; v with values).
  static uint64_t bytesFor(int batch, int heads, int kv_heads, int q_len, int k_len, int d_k,
                           int d_v, bool values);
  uint64_t bytes() const;
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
// decoder block its new rows (q_len = n, k_len = q0 + n, q_pos0 = q0) with the keys the step added.
// The earlier rows' cells against the new keys follow from the rules (a probability of 0: they
// were computed before those keys existed). q0 = 0 replaces the decoder part of a trace.
struct TraceRows {
  int q0 = 0;
  int n = 0;
  std::vector<int> tokens;                      // [n] the ids fed at these positions (batch 1)
  std::vector<AttentionBlock> blocks;           // decoder blocks, in layer order
  TokenLogits logits;                           // [batch, n, V] (empty without a token head)
  Tensor hidden;                                // [batch, n, d_model]
  std::vector<SublayerActivation> activations;  // keep_activations, first run (q0 = 0) only
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
  TokenLogits logits;     // [B, T or S, V]: token logits of the decoder's positions (or, for a
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
  // Appends decoder rows (batch 1). rows.q0 must equal tgt_len; q0 = 0 replaces the decoder part.
  // `token_strings` are the strings of rows.tokens.
  void appendRows(TraceRows&& rows, const std::vector<std::string>& token_strings);
  // Keeps the first n target positions (n ≥ 1), dropping later decoder rows (batch 1).
  void truncateTarget(int n);
  // Bytes held by the blocks and outputs.
  uint64_t bytes() const;
};

}  // namespace attnviz

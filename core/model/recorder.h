// What a run of the model keeps for the views (model/trace.h): every attention block's scores,
// mask and probabilities (and, on request, its heads' queries, keys and values), the scores of
// earlier rows against new keys while decoding, and every sublayer's input and output with the
// embeddings'. The forward pass (model/pass.h) tells it what it computed; a run without a
// recorder (training, greedy decoding) keeps nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "compute/backend.h"
#include "model/arena.h"
#include "model/model.h"
#include "model/trace.h"

namespace attnviz {

// Where one stack run's records go; a null member is not kept.
struct RecordTo {
  std::vector<AttentionBlock>* blocks = nullptr;
  std::vector<std::vector<float>>* future = nullptr;  // per block [B, H, past, n] (decoder)
  std::vector<SublayerActivation>* activations = nullptr;
};

class Recorder {
 public:
  // Takes its staging region for activations from `arena` (keep_activations).
  Recorder(Backend& be, Arena& arena, const ModelConfig& c, const ForwardOptions& o, int rows);
  // Arena floats a recorder takes for a run of `rows` query rows.
  static uint64_t floatsFor(const ModelConfig& c, const ForwardOptions& o, int rows);

  // Starts a stack run over n new positions [past, past + n) of B sentences of one side.
  // Activations are kept for a whole pass only (past = 0).
  void begin(Side side, int B, int n, int past, RecordTo to);

  // A new block (kind, layer) of n query rows over Tk keys with its mask [B, n, Tk] (host), or
  // null when blocks are not kept.
  AttentionBlock* block(AttentionKind kind, int layer, int n, int Tk,
                        const std::vector<uint8_t>& mask);
  // Where attention_scores_forward and masked_softmax_forward write: the block's own storage when
  // the backend's memory is the host's, else the pass's scratch.
  float* scoresTarget(AttentionBlock* block, float* scratch) const;
  float* probsTarget(AttentionBlock* block, float* scratch) const;
  // After the softmax: the block's scores and probabilities (copied from the scratch on a device),
  // and each head's q [n, d_k], k and v [Tk − kv0, ·] when they are kept. qv and kv are the heads
  // views the scores came from (keys at column 0, values at column `values`).
  void attention(AttentionBlock* block, const float* scores, const float* probs, HeadsView qv,
                 HeadsView kv, int values, int kv0);
  // Decoding: the scores of the earlier rows [0, past) — their queries in `q_store` [B, cap, A] —
  // against this run's new keys in `kv_store` [B, cap, KV], through `scratch`. An empty entry for
  // blocks that have none (cross-attention, or when scores are not stored). `relative_bias`: the
  // decoder's relative position bias table (T5), added as the pass adds it, or null.
  void futureScores(const float* q_store, const float* kv_store, int cap, float* scratch,
                    const float* relative_bias);
  void noFutureScores();

  bool keepsActivations() const { return acts_ != nullptr; }
  // A sublayer's input and output [rows, d] (device) → [B, rows / B, d] on the host; an attention
  // sublayer's entry takes the context its heads() call kept.
  void sublayer(int layer, Sublayer s, const float* in, const float* out, int rows);
  // An attention sublayer's heads' outputs before W_O, ctx [rows, H·d_v] (device).
  void heads(const float* ctx, int rows);
  // The residual stream x [rows, d] (device) leaving layer `layer`: a Residual entry whose input is
  // the stream that entered it (the embeddings' output, or the previous layer's).
  void residual(int layer, const float* x, int rows);
  // The embeddings' input — token rows × scale (+ segments), recomputed into the staging region
  // — and their output `x` (+ positions, then the embedding norm): the first layer's input.
  void embedding(const int32_t* ids, const int32_t* segments, const float* tokens,
                 const float* segment_table, float scale, const float* x, int rows);

 private:
  Tensor download(const float* p, int rows, int width);
  void captureHeads(HeadsView view, int row0, int rows, int col0, int d, int view_heads,
                    HostVector<float>& out);

  Backend& be_;
  Arena& a_;
  const ModelConfig& c_;
  const ForwardOptions& o_;
  const bool host_;
  float* stage_ = nullptr;  // [rows, max(d, H·d_v)]: activations on their way to the host
  Tensor context_;          // the heads' outputs of the attention sublayer being recorded
  Tensor stream_;           // the residual stream entering the layer being recorded
  Side side_ = Side::Source;
  int B_ = 1, past_ = 0, n_ = 0;
  RecordTo to_;
  std::vector<SublayerActivation>* acts_ = nullptr;
};

}  // namespace attnviz

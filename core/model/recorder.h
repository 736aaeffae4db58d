// What a run of the model keeps for the views (model/trace.h): every attention block's queries
// and keys as attention used them, its mask and score rules and each row's softmax normaliser
// (and, on request, its values), and every sublayer's input and output with the embeddings'. The
// forward pass (model/pass.h) tells it what it computed; a run without a recorder (training, greedy
// decoding) keeps nothing.
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

  // A new block (kind, layer) of n query rows (positions q0 …) over Tk keys, masked by `mask`;
  // `relative_bias`: the stack's relative position bias table on the device (T5's self-attention)
  // or null. Null when blocks are not kept.
  AttentionBlock* block(AttentionKind kind, int layer, int n, int Tk, int q0, const MaskRule& mask,
                        const float* relative_bias);
  // The block's queries [n, d_k] per head and its keys (values too, with keep_qkv) [Tk − kv0, ·]
  // per key/value head, from the heads views the scores come from (keys at column 0, values at
  // column `values`).
  void vectors(AttentionBlock* block, HeadsView qv, HeadsView kv, int values, int kv0);
  // After the softmax of rows [i0, i0 + m) of sentence b: each head's normaliser, from the
  // softmax's input `in` and output `probs` [H, m, Tk] (device) and the rows' mask [m, Tk] (host).
  void rows(AttentionBlock* block, int b, int i0, int m, const float* in, const uint8_t* mask,
            const float* probs);

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
  void captureHeads(HeadsView view, int row0, int rows, int col0, int d, int heads,
                    HostVector<float>& out);
  // The device floats [n] as host floats (a view of host memory on the CPU backend).
  const float* onHost(const float* p, int64_t n, std::vector<float>& staging);

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

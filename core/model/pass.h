// The forward pass: one stack of layers for the encoder, the decoder and decoder-only models,
// composed once on top of a Backend's ops, in data-flow order (llm.c's gpt2_forward). A run of a
// stack takes a few named collaborators: where self-attention's keys and values go (a KvStore),
// what the views keep (a Recorder) and what training keeps for the backward (a StackTape).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "compute/backend.h"
#include "model/arena.h"
#include "model/device_weights.h"
#include "model/model.h"
#include "model/recorder.h"
#include "model/tape.h"

namespace attnviz {

// The widths a pass works with: d_model; H query heads of d_k, H_kv key/value heads; the query
// width A = H·d_k, the key width Ak = H_kv·d_k, the value width Av = H_kv·d_v, the fused
// key|value width KV = Ak + Av, and the context width C = H·d_v.
// Rotary positions on `heads` heads of a heads view (rope_forward, or rope_backward when
// `backward`): the whole head, or each head's first c.rotaryDims() dimensions when fewer rotate
// (GPT-NeoX's rotary_pct), the rest left as they are. Positions from pos0.
void applyRotary(Backend& be, const ModelConfig& c, const DeviceWeights& dw, HeadsGrad x, int B,
                 int T, int heads, int pos0, bool backward);

struct Widths {
  explicit Widths(const ModelConfig& c)
      : d(c.d_model),
        H(c.n_heads),
        Hkv(c.kvHeads()),
        A(c.attnWidth()),
        Ak(c.keyWidth()),
        Av(c.kvValueWidth()),
        KV(c.keyWidth() + c.kvValueWidth()),
        C(c.valueWidth()) {}
  const int d, H, Hkv, A, Ak, Av, KV, C;
};

// Where a stack run's self-attention keys and values go: per layer [B, cap, KV] rows key|value, of
// which rows [past, past + n) are this run's. One buffer serves every layer when nothing outlives
// the run (a teacher-forced pass).
struct KvStore {
  int cap = 0, past = 0;
  std::vector<float*> kv;  // per layer, or one for all
  float* kvAt(size_t l) const { return kv.size() == 1 ? kv[0] : kv[l]; }
};

// One run of a stack over n new positions [past, past + n) of B sequences (past = store.past).
// A row of the embeddings whose position is not its index (Positional::SinusoidalFairseq,
// positions_skip_pad): x[row] ← x[row] − table[from] + table[to] (to = −1: fairseq's pad token,
// nothing added, its zero row; with positions_skip_pad the learned row before position 0, RoBERTa's
// padding_idx).
struct PositionFix {
  int row = 0, from = 0, to = -1;
};
// The fixes of a batch [B][past + n] whose last n positions are fed (fairseq's
// create_position_ids_from_input_ids: a pad token reads the zero row, another token the row of
// past + its count of non-pad tokens among the n − 1); none for other positions.
std::vector<PositionFix> positionFixes(const ModelConfig& c, int pad,
                                       const std::vector<std::vector<int>>& tokens, int past,
                                       int n);

// Rows [pos0, pos0 + m) of sentence b's mask over Tk keys [m, Tk] (1 = masked).
std::vector<uint8_t> maskRowsOnHost(const MaskRule& mask, int b, int pos0, int m, int Tk);

struct StackRun {
  const DeviceStack* stack = nullptr;
  AttentionKind self_kind = AttentionKind::EncoderSelf;
  int B = 1, n = 0;
  KvStore store;
  const MaskRule* self_mask = nullptr;  // self-attention's mask, rows at positions past …
  const Model::Encoded* enc = nullptr;  // cross-attention's source (an encoder-decoder's decoder)
  const MaskRule* cross_mask = nullptr;
  // Training: the same masks as device matrices [B, n, past + n] and [B, n, S] (the backward
  // reads them); a pass without a tape builds each chunk's rows from the rules instead.
  const uint8_t* self_mask_tape = nullptr;
  const uint8_t* cross_mask_tape = nullptr;
  int first_layer = 0;        // the first layer run (activation patching resumes part-way up)
  StackTape* tape = nullptr;  // training: what the backward needs (past = 0)
  float dropout = 0.0f;       // training: the tape's dropout probability
  std::vector<PositionFix> position_fixes;  // rows whose position is not their index
};

class Pass : public Widths {
 public:
  // Carves the pass's scratch for B sentences of n query rows over at most `max_keys` keys from
  // `arena`. `recorder` is null when nothing is kept for the views. Attention runs over chunks of
  // query rows (chunkRows), so its scratch never holds a whole [n, keys] matrix per head; with a
  // tape (`training`) a chunk is a whole sentence, whose probabilities the backward reads.
  Pass(Backend& be, const ModelConfig& c, const DeviceWeights& dw, const ForwardOptions& o,
       Arena& arena, Recorder* recorder, int B, int n, int max_keys, bool training);
  // Arena floats a Pass takes (its recorder's included).
  static uint64_t floatsFor(const ModelConfig& c, const ForwardOptions& o, int B, int n,
                            int max_keys, bool training);
  static constexpr int kRegions = 10;
  // Query rows per attention chunk: n with a tape, else as many as fit kTileFloats per buffer.
  static int chunkRows(const ModelConfig& c, int n, int max_keys, bool training);
  static constexpr int64_t kTileFloats = int64_t(1) << 23;  // 32 MiB of scores per chunk

  // x [B·n, d] ← tokens[ids]·scale (+ segments[segs]) + positions[pos0 …], then the embedding
  // norm; with a tape, dropout (and the tape's token_scale, when it has one, on the token rows).
  void embed(const DeviceStack& st, const int32_t* ids, const int32_t* segs, float* x, int B, int n,
             int pos0, StackTape* t = nullptr, float p = 0.0f,
             const std::vector<PositionFix>* fixes = nullptr);
  // The stream x [B·n, d] a stack run starts from: the embeddings (embed), or with a StreamResume
  // for `side` (activation patching, a whole pass) the stream given, copied for every sentence,
  // and r.first_layer ← its layer + 1.
  void start(const DeviceStack& st, Side side, const int32_t* ids, const int32_t* segs, float* x,
             StackRun& r, int pos0, StackTape* t = nullptr, float p = 0.0f);
  // Every layer of a stack over x [B·n, d] (the embeddings on entry, the stack's output on
  // return), then the stack's final norm. With r.first_layer > 0, x on entry is the stream leaving
  // the layer before it.
  void layers(float* x, const StackRun& r, int* done, int total);
  // y [rows, d] ← the stack's final norm of x (config.final_norm; x may be y).
  void finalNorm(const DeviceStack& st, const float* x, float* y, int rows);
  // The token head on x [rows, d] → logits [rows, V] (`out`, else an arena region, or the tape's).
  float* tokenHead(const float* x, int rows, HeadTape* t = nullptr, float* out = nullptr);
  // Rows per token-head call outside training: all `rows`, or as many as kTileFloats of logits
  // hold, so that a long input's logits pass through one buffer of that size into the trace.
  static int tokenHeadRows(int rows, int V) {
    return V <= 0 || (int64_t)rows * V <= kTileFloats ? rows
                                                      : (int)std::max<int64_t>(1, kTileFloats / V);
  }
  // The class head on x [B, n, d] → class logits [B, C] (an arena region, or the tape's).
  float* classHead(const float* x, int B, int n, HeadTape* t = nullptr);

  // y [rows, out] ← x·Wᵀ + b
  void linear(const float* x, const DeviceLinear& l, float* y, int rows);

  Arena& arena() { return a; }

 private:
  // One residual block around f(in, out) [rows, d]: pre-norm x ← x + f(N(x)), post-norm
  // x ← N(x + f(x)). With a tape, f's output goes through dropout and the tape keeps f's input and
  // the norm's; the recorder keeps f's and the norm's inputs and outputs as sublayers s and ns.
  // `from`: what the pre-norm's norm reads instead of x (the parallel residual's layer input;
  // null = x).
  template <class F>
  void residual(float* x, int rows, const DeviceNorm& n, SublayerTape* t, float p, int layer,
                Sublayer s, Sublayer ns, F&& f, const float* from = nullptr,
                const DeviceNorm* post = nullptr);
  // Gemma 2's soft-cap in place: x ← cap·tanh(x / cap) over n values (x already divided by cap
  // when `divided`).
  void softcap(float* x, int64_t n, float cap, bool divided);
  // Self-attention of layer l over in [rows, d] → out [rows, d]: queries, and the new keys and
  // values into the store; attention over every key so far; the output projection.
  void selfAttention(const float* in, float* out, const StackRun& r, int l,
                     const DeviceAttention& W, AttentionTape* t);
  // Cross-attention of layer l: queries from in, keys and values of the encoder's output.
  void crossAttention(const float* in, float* out, const StackRun& r, int l,
                      const DeviceAttention& W, AttentionTape* t);
  // fc2(act(fc1(x))), or gated fc2(act(gate(x)) ⊙ fc1(x)), over in → out [rows, d].
  void feedForward(const float* in, float* out, int rows, const DeviceLayer& L, LayerTape* t,
                   float p);
  // scores → mask → softmax → context of n queries (positions q0 …) over Tk keys of block (kind,
  // layer), chunk by chunk of query rows: heads views q and kv (keys at column 0, values at column
  // Ak); key rows [kv0, Tk) are new in this run. ctx [B·n, C] (the tape's, when training) ← the
  // context; the recorder keeps the block. `tape_mask`: the mask as a device matrix [B, n, Tk]
  // (training), else null and each chunk's rows come from `mask`.
  void attend(AttentionKind kind, int layer, HeadsView qv, HeadsView kv, int B, int n, int Tk,
              int q0, int kv0, const MaskRule& mask, const uint8_t* tape_mask, AttentionTape* t);
  // The device mask of rows [i0, i0 + m) of sentence b over Tk keys, built from the rule in the
  // pass's scratch; host_rows ← the same on the host.
  const uint8_t* maskRows(const MaskRule& mask, int b, int pos0, int m, int Tk,
                          std::vector<uint8_t>& host_rows);
  // Interventions on a block's heads, over a chunk [H, m, Tk] of one sentence: the softmax's
  // input with temperatures applied (a copy; the trace keeps the raw scores), and the
  // probabilities with heads switched off (a copy).
  const float* tempered(AttentionKind kind, int layer, const float* scores, int m, int Tk);
  const float* switchedOff(AttentionKind kind, int layer, const float* probs, int m, int Tk);
  // A copy of x [H, m, Tk] in the scratch `extra` with each head of the block's interventions
  // scaled by factor(iv) (1 = untouched); x itself when no head changes.
  template <class Factor>
  const float* scaledHeads(AttentionKind kind, int layer, const float* x, int m, int Tk,
                           Factor&& factor);
  // Activation patching (ForwardOptions::patches; not while training): the stream rows patched at
  // `layer` of this run's stack (−1: the embeddings), and head outputs in the block's context
  // (ctx, before W_O).
  void patchStream(const StackRun& r, int layer, float* x);
  void patchHeads(const StackRun& r, AttentionKind kind, int layer);
  // rows [past, past + n) of each batch's region of a [B, cap, width] store ← x·Wᵀ
  void project(const float* x, const DeviceLinear& l, float* store, int B, int n, int past,
               int cap);
  void norm(const float* x, const DeviceNorm& n, float* y, int rows, float eps);
  // The stack a self-attention block belongs to (its relative position bias).
  const DeviceStack& stackOf(AttentionKind kind) const;
  void checkCancel() const;

  Backend& be;
  const ModelConfig& c;
  const DeviceWeights& dw;
  const ForwardOptions& o;
  Arena& a;
  Recorder* rec;
  // scratch: [rows, d] ×2, [rows, A], [rows, C], [rows, d_ff (×2 gated)], [chunk, H, keys] ×2 (×3
  // with interventions), the chunk's mask [chunk, keys]
  float *h, *y, *q, *ctx, *ffn, *scores, *probs, *extra = nullptr;
  uint8_t* mask_rows = nullptr;
  int chunk = 1;
  float* ffn_act = nullptr;   // [rows, d_ff] the gated activation's output
  float* layer_in = nullptr;  // [rows, d] the parallel residual's layer input (no tape)
  float* post_out = nullptr;  // [rows, d] a sublayer's output normed (sandwich_norms)
};

}  // namespace attnviz

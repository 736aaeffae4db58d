// The compute backend interface: memory on a device and the ops a Transformer forward pass needs.
// The model (model.h) is composed once on top of it; the CPU backend (cpu_backend.h) is the
// reference, the CUDA backend (gpu/) mirrors every op under the same name.
//
// Conventions: every float tensor is row-major float32; pointers passed to ops are device
// pointers of this backend (host pointers for the CPU backend) obtained from DeviceBuffer::data()
// plus element offsets. Ops are asynchronous on a GPU; download() synchronises.
//
// Adding an op (five files and one test row; the forward and its backward together):
//   1. its contract below, in class Backend: what it computes, the shape of every tensor, which
//      outputs are WRITTEN and which ACCUMULATE (+=), what may alias;
//   2. the CPU body in compute/cpu_backend.cpp, the reference: threaded like its neighbours
//      (forRows, forElements, forHeadRows), the same result on any number of threads;
//   3. the CUDA body in gpu/cuda_backend.cpp, all its work inside guard("<op>", ...)
//      (tests/test_gpu_host.cpp reads the file and fails for an op that is not guarded);
//   4. and 5. on the GPU either a kernel — gpu/kernels.cu (<op>_kernel1 and its launcher <op>) and
//      the launcher's declaration in gpu/kernels.h, with per-element math the host tests should
//      run too in gpu/kernel_math.h (a sixth file, where the op brings new math) — or, when it
//      multiplies matrices, its cuBLAS plan in gpu/gemm_plan.h and .cpp (host-tested in
//      tests/test_gpu_host.cpp);
//   and one row in opCases() of tests/backend_checks.cpp (a case struct named from its
//   parameters, and a check against a double-precision reference written from the contract,
//   gradients included): tests/test_backend_ops.cpp and backend_checks take their cases from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "compute/functions.h"

namespace attnviz {

// A block of backend memory. Move-only (owned through unique_ptr); freed by the destructor,
// which never throws.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual size_t bytes() const = 0;
  virtual void* data() = 0;
  virtual const void* data() const = 0;

  float* f32() { return static_cast<float*>(data()); }
  const float* f32() const { return static_cast<const float*>(data()); }
  int32_t* i32() { return static_cast<int32_t*>(data()); }
  const int32_t* i32() const { return static_cast<const int32_t*>(data()); }
  uint8_t* u8() { return static_cast<uint8_t*>(data()); }
  const uint8_t* u8() const { return static_cast<const uint8_t*>(data()); }
};
using BufferPtr = std::unique_ptr<DeviceBuffer>;

// Where one head's rows live inside a [batch, rows, width] activation: head h of batch b, row r
// starts at  data + b·batch_stride + r·row_stride + h·head_dim  (all in floats). This lets the
// attention ops read Q/K/V straight out of fused projections ([B, T, 3·d]) and out of the
// key/value cache ([B, capacity, H·d]) without copies.
struct HeadsView {
  const float* data = nullptr;
  int64_t batch_stride = 0;
  int64_t row_stride = 0;
};

// The same layout, writable: the gradient of a heads view (dQ, dK, dV inside the gradients of the
// fused projections).
struct HeadsGrad {
  float* data = nullptr;
  int64_t batch_stride = 0;
  int64_t row_stride = 0;
};

// One Adam / AdamW update (adamw_update), with the numbers the host computes once per step.
struct AdamStep {
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled = false;  // AdamW (p ← p·(1 − lr·wd)) rather than Adam's g ← g + wd·p
  float bias_correction1 = 1.0f;  // 1 − beta1^t
  float bias_correction2 = 1.0f;  // 1 − beta2^t
  float grad_scale = 1.0f;        // gradient clipping's factor min(1, max_norm / (‖g‖ + 1e-6))
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;         // "cpu" or "cuda"
  virtual std::string description() const = 0;  // e.g. "CPU (OpenBLAS Zen, 2 threads)"

  // How many threads the ops may use: n >= 1, or 0 for one per core this process may use.
  // Not to be called while an op runs. Backends that do not use host threads ignore it.
  virtual void setThreads(int n) { (void)n; }
  // The thread count in force (1 for backends that ignore setThreads).
  virtual int threads() const { return 1; }

  // ---- memory ----
  // A zero-filled buffer of `bytes` bytes. A device backend throws Error(OutOfMemory) when its
  // memory runs out (any op that allocates may too); the backend stays usable.
  virtual BufferPtr allocate(size_t bytes) = 0;
  // Copies host → device at byte offset `offset` of dst.
  virtual void upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset = 0) = 0;
  // Copies device → host from byte offset `offset` of src; waits for pending work.
  virtual void download(const DeviceBuffer& src, void* dst, size_t bytes, size_t offset = 0) = 0;
  // Device → device copy of n floats (the ranges may overlap, as memmove).
  virtual void copy(const float* src, float* dst, int64_t n) = 0;
  // Device → host copy of n floats from any device pointer (waits for pending work).
  virtual void copy_to_host(const float* src, float* dst, int64_t n) = 0;
  // Waits until all queued work is done (no-op on the CPU).
  virtual void synchronize() {}
  // True when pointers of this backend are host pointers (the CPU backend): the model then lets
  // the ops write attention straight into the trace instead of downloading it.
  virtual bool hostVisible() const { return false; }

  // ---- health ----
  // Empty while the backend can run work. Otherwise why it cannot any more: after a fatal device
  // error (a kernel fault, a lost GPU) the CUDA context stays broken until the process restarts,
  // and every later call throws Error(Backend). The owner (the model, the GUI) then drops this
  // backend, creates the CPU backend, reruns and shows this text. Never throws; any thread.
  virtual std::string failure() const { return {}; }
  bool healthy() const { return failure().empty(); }

  // ---- ops ----
  // Each forward op is followed by its backward (training). Unless said otherwise a backward op
  // ACCUMULATES into the gradients it is given (+=), as PyTorch's autograd and llm.c do: a tensor
  // read by two ops receives both contributions, and gradients are zeroed once per step with
  // zero(). A null gradient pointer is not computed.
  // out[b, t, :] = table[ids[b, t], :] · scale + positions[pos0 + t, :]
  //   ids: [B, T] int32 (already checked to be in range), table: [vocab, d],
  //   positions: [>= pos0 + T, d] or nullptr (no positions added), out: [B, T, d]
  virtual void embedding_forward(const int32_t* ids, const float* table, const float* positions,
                                 float* out, int B, int T, int d, int pos0, float scale) = 0;
  // Backward of embedding_forward:
  //   dtable[ids[b, t], :] += scale · dout[b, t, :];  dpositions[pos0 + t, :] += dout[b, t, :]
  //   ids: [B, T], dout: [B, T, d], dtable: [vocab, d], dpositions: [>= pos0 + T, d] or nullptr
  //   (sinusoidal positions are no parameter)
  virtual void embedding_backward(const int32_t* ids, const float* dout, float* dtable,
                                  float* dpositions, int B, int T, int d, int pos0,
                                  float scale) = 0;

  // out[r, :] += table[ids[r], :] for r < rows (segment embeddings)
  //   ids: [rows] int32 (checked to be in range), table: [n, d], out: [rows, d]
  virtual void gather_add_forward(const int32_t* ids, const float* table, float* out, int rows,
                                  int d) = 0;
  // Backward of gather_add_forward: dtable[ids[r], :] += dout[r, :]
  //   ids: [rows], dout: [rows, d], dtable: [n, d]
  virtual void gather_add_backward(const int32_t* ids, const float* dout, float* dtable, int rows,
                                   int d) = 0;

  // y[b, :] = (1/T) · Σ_t x[b, t, :]   (mean pooling over positions)
  //   x: [B, T, d], y: [B, d]
  virtual void mean_pool_forward(const float* x, float* y, int B, int T, int d) = 0;
  // Backward of mean_pool_forward: dx[b, t, :] += dy[b, :] / T
  //   dy: [B, d], dx: [B, T, d]
  virtual void mean_pool_backward(const float* dy, float* dx, int B, int T, int d) = 0;

  // y[rows, out] = x[rows, in] · W[out, in]ᵀ (+ bias[out] when bias != nullptr)
  virtual void linear_forward(const float* x, const float* weight, const float* bias, float* y,
                              int rows, int in, int out) = 0;
  // Backward of linear_forward (y = x·Wᵀ + b):
  //   dx[rows, in] += dy[rows, out] · W[out, in];  dweight[out, in] += dyᵀ · x;
  //   dbias[out] += Σ_r dy[r, :]   (dx and dbias may be nullptr)
  virtual void linear_backward(const float* dy, const float* x, const float* weight, float* dx,
                               float* dweight, float* dbias, int rows, int in, int out) = 0;

  // Rotary position embeddings, in place on `heads` heads of a heads view: for batch item b, row t
  // (position p = pos0 + t), head h and pair i < d_head/2 of that head's d_head values
  //   (a, b) ← (a·cos[p, i] − b·sin[p, i], a·sin[p, i] + b·cos[p, i])
  // where (a, b) = (x[2i], x[2i + 1]) for RopeLayout::Interleaved, (x[i], x[i + d_head/2]) for
  // Halves (compute/functions.h).
  //   x: heads view of [B, T, ·] (head h of row t at data + b·batch_stride + t·row_stride +
  //   h·d_head); cos, sin: [>= pos0 + T, d_head/2] (row = position); d_head even
  virtual void rope_forward(HeadsGrad x, const float* cos, const float* sin, int B, int T,
                            int heads, int d_head, int pos0, RopeLayout layout) = 0;
  // Backward of rope_forward: dx ← Rᵀ·dx in place, WRITTEN — the rotation by −angle,
  //   (a, b) ← (a·cos + b·sin, −a·sin + b·cos)
  virtual void rope_backward(HeadsGrad dx, const float* cos, const float* sin, int B, int T,
                             int heads, int d_head, int pos0, RopeLayout layout) = 0;

  // The attention ops take H query heads and kv_heads key/value heads (grouped-query attention;
  // kv_heads divides H): query head h reads key/value head g(h) = h / (H / kv_heads) of the k and
  // v views. kv_heads == H is multi-head attention, kv_heads == 1 multi-query attention.
  //
  // scores[b, h, i, j] = scale · Σ_c q[b, i, h·d_k + c] · k[b, j, g(h)·d_k + c]
  //   q: heads view of [B, Tq, ·] (H heads), k: heads view of [B, Tk, ·] (kv_heads heads),
  //   scores: [B, H, Tq, Tk]
  virtual void attention_scores_forward(HeadsView q, HeadsView k, float* scores, int B, int H,
                                        int kv_heads, int Tq, int Tk, int d_k, float scale) = 0;
  // Backward of attention_scores_forward (S_h = scale · Q_h·K_g(h)ᵀ per batch item and head):
  //   dq_h[b] += scale · dS[b, h] · K_g(h)[b];  dk_g[b] += scale · Σ_{h: g(h) = g} dS[b, h]ᵀ ·
  //   Q_h[b] (a key head ACCUMULATES the contributions of every query head of its group) dscores:
  //   [B, H, Tq, Tk]; q, dq: heads views of [B, Tq, ·]; k, dk: of [B, Tk, ·]
  virtual void attention_scores_backward(const float* dscores, HeadsView q, HeadsView k,
                                         HeadsGrad dq, HeadsGrad dk, int B, int H, int kv_heads,
                                         int Tq, int Tk, int d_k, float scale) = 0;

  // T5's relative position bias, added to the scores before the mask (ACCUMULATES):
  //   scores[b, h, i, j] += table[bucket(j − (q0 + i)), h]
  // where bucket = relative_position_bucket(·, bidirectional, num_buckets, max_distance)
  // (compute/position_buckets.h): query row i sits at position q0 + i (a decoding step's new
  // rows start at the cached length), key j at position j.
  //   table: [num_buckets, H]; scores: [B, H, Tq, Tk]
  virtual void position_bias_forward(const float* table, float* scores, int B, int H, int Tq,
                                     int Tk, int q0, int num_buckets, int max_distance,
                                     bool bidirectional) = 0;
  // Backward of position_bias_forward (the scores' gradient flows on unchanged):
  //   dtable[k, h] += Σ_{b, i, j: bucket(j − (q0 + i)) = k} dscores[b, h, i, j]
  //   dscores: [B, H, Tq, Tk]; dtable: [num_buckets, H]
  virtual void position_bias_backward(const float* dscores, float* dtable, int B, int H, int Tq,
                                      int Tk, int q0, int num_buckets, int max_distance,
                                      bool bidirectional) = 0;

  // probs[b, h, i, :] = softmax(where(mask[b, i, :], fill, scores[b, h, i, :]))
  //   scores, probs: [B, H, Tq, Tk], not overlapping; mask: [B, Tq, Tk] uint8 (1 = masked),
  //   shared by the heads.
  //   A row with every key masked: with a finite fill, softmax of equal values (uniform, as
  //   PyTorch); with fill = -inf, all zeros (PyTorch gives NaN).
  virtual void masked_softmax_forward(const float* scores, const uint8_t* mask, float* probs, int B,
                                      int H, int Tq, int Tk, float fill) = 0;
  // Backward of masked_softmax_forward, WRITTEN (not accumulated), in place when dscores ==
  // dprobs:  dscores[r, j] = probs[r, j] · (dprobs[r, j] − Σ_k probs[r, k] · dprobs[r, k]),
  // and 0 where mask[b, i, j] (a masked cell was the constant fill: no gradient reaches its score)
  //   probs, dprobs, dscores: [B, H, Tq, Tk]; mask: [B, Tq, Tk]
  virtual void masked_softmax_backward(const float* probs, const float* dprobs, const uint8_t* mask,
                                       float* dscores, int B, int H, int Tq, int Tk) = 0;

  // ctx[b, i, h·d_v + c] = Σ_j probs[b, h, i, j] · v[b, j, g(h)·d_v + c]
  //   probs: [B, H, Tq, Tk], v: heads view of [B, Tk, ·] (kv_heads heads),
  //   ctx: [B, Tq, H·d_v] (contiguous)
  virtual void attention_context_forward(const float* probs, HeadsView v, float* ctx, int B, int H,
                                         int kv_heads, int Tq, int Tk, int d_v) = 0;
  // Backward of attention_context_forward (C_h = P_h · V_g(h)):
  //   dprobs[b, h] = dC_h[b] · V_g(h)[b]ᵀ (WRITTEN);
  //   dv_g[b] += Σ_{h: g(h) = g} P[b, h]ᵀ · dC_h[b]   (ACCUMULATES over the group, as dk)
  //   dctx: [B, Tq, H·d_v], probs, dprobs: [B, H, Tq, Tk]; v, dv: heads views of [B, Tk, ·]
  virtual void attention_context_backward(const float* dctx, const float* probs, HeadsView v,
                                          float* dprobs, HeadsGrad dv, int B, int H, int kv_heads,
                                          int Tq, int Tk, int d_v) = 0;

  // y[r, :] = x̂[r, :] · gamma + beta, each row of d values normalised as `kind` says
  // (compute/functions.h): x̂ = (x − center) · scale with
  //   LayerNorm     center = mean, scale = 1 / √(var + eps)   (biased variance, as nn.LayerNorm)
  //   LayerNormStd  center = mean, scale = 1 / (std + eps)    (unbiased std, eps outside the root:
  //                 the Annotated Transformer's LayerNorm; d ≥ 2, as torch.std)
  //   RmsNorm       center = 0,    scale = 1 / √(mean(x²) + eps)
  //   x, y: [rows, d] (may alias); gamma: [d] or nullptr; beta: [d] or nullptr, only with gamma.
  //   Both null: x̂ itself; gamma without beta: x̂ · gamma (nanoGPT's bias=False, RMSNorm).
  virtual void norm_forward(NormKind kind, const float* x, const float* gamma, const float* beta,
                            float* y, int rows, int d, float eps) = 0;
  // Backward of norm_forward, from its input x (each row's center and scale recomputed):
  //   dx̂ = dy ⊙ gamma (dy when gamma is null);  m = mean(dx̂) (0 for RmsNorm);
  //   LayerNorm, RmsNorm: dx[r, :] += scale · (dx̂ − m − x̂ · mean(dx̂ ⊙ x̂))
  //   LayerNormStd:       dx[r, :] += scale · (dx̂ − m) − x̂ · Σ(dx̂ ⊙ x̂) / ((d − 1) · std)
  //                       (the last term 0 for a row of equal values, where std = 0)
  //   dgamma += Σ_r dy ⊙ x̂;  dbeta += Σ_r dy   (only with gamma; a null pointer is skipped)
  //   dy, x, dx: [rows, d]; gamma, dgamma, dbeta: [d] or nullptr
  virtual void norm_backward(NormKind kind, const float* dy, const float* x, const float* gamma,
                             float* dx, float* dgamma, float* dbeta, int rows, int d,
                             float eps) = 0;

  // norm_forward on each head of a heads view, in place (q and k normalised per head: Qwen3's
  // q_norm and k_norm): for batch item b, row t and head h < heads, the d_head values at
  //   x.data + b·batch_stride + t·row_stride + h·d_head
  // are normalised as one row of norm_forward (kind, eps) and multiplied by gamma [d_head] (when
  // not null). x: heads view of [B, T, ·].
  virtual void head_norm_forward(NormKind kind, HeadsGrad x, const float* gamma, int B, int T,
                                 int heads, int d_head, float eps) = 0;
  // Backward of head_norm_forward, in place as rope_backward: dx holds the gradient of the norm's
  // output and is overwritten by that of its input, each head's values as a row of norm_backward
  // computes it from x (the values before the norm); dgamma += Σ over every row and head of
  // dy ⊙ x̂ (nullptr: skipped).
  //   dx, x: heads views of [B, T, ·] (heads heads of d_head); gamma, dgamma: [d_head]
  virtual void head_norm_backward(NormKind kind, HeadsGrad dx, HeadsView x, const float* gamma,
                                  float* dgamma, int B, int T, int heads, int d_head,
                                  float eps) = 0;

  // x[i] = act(x[i]) for i < n, in place
  virtual void activation_forward(float* x, int64_t n, Activation act) = 0;
  // Backward of activation_forward from its input x: dx[i] = dy[i] · act'(x[i]), WRITTEN (dx may
  // alias dy)
  virtual void activation_backward(const float* x, const float* dy, float* dx, int64_t n,
                                   Activation act) = 0;

  // Gated feed-forward (SwiGLU with Silu, GeGLU with Gelu): each row of x holds [gate | up],
  //   y[r, c] = act(x[r, c]) · x[r, f + c]   for c < f
  //   x: [rows, 2f], y: [rows, f] (not overlapping)
  virtual void gated_activation_forward(const float* x, float* y, int rows, int f,
                                        Activation act) = 0;
  // Backward of gated_activation_forward, WRITTEN (not accumulated):
  //   dx[r, c] = dy[r, c] · x[r, f + c] · act'(x[r, c])  (the gate's);
  //   dx[r, f + c] = dy[r, c] · act(x[r, c])              (up's)
  //   x, dx: [rows, 2f]; dy: [rows, f]; dx overlaps neither x nor dy
  virtual void gated_activation_backward(const float* x, const float* dy, float* dx, int rows,
                                         int f, Activation act) = 0;

  // y[i] += x[i] for i < n (the residual add)
  virtual void residual_forward(const float* x, float* y, int64_t n) = 0;
  // Backward of residual_forward (y += x): dx[i] += dy[i] (dy itself flows on unchanged)
  virtual void residual_backward(const float* dy, float* dx, int64_t n) = 0;

  // x[i] *= s for i < n (a head's temperature, a head switched off)
  virtual void scale_forward(float* x, int64_t n, float s) = 0;
  // Backward of scale_forward: dx[i] *= s, in place
  virtual void scale_backward(float* dx, int64_t n, float s) = 0;

  // ---- training only ----
  // x[i] = 0 for i < n
  virtual void zero(float* x, int64_t n) = 0;

  // Inverted dropout, training only: x[i] = keep(seed, i) ? x[i] / (1 − p) : 0, where keep is
  // counter_rng.h's dropoutKeep (a hash of seed and i, the same on every backend, so the mask
  // needs no storage: the backward recomputes it). p = 0 leaves x unchanged.
  virtual void dropout_forward(float* x, int64_t n, float p, uint64_t seed) = 0;
  // Backward: dx[i] = keep(seed, i) ? dx[i] / (1 − p) : 0, in place (the same mask)
  virtual void dropout_backward(float* dx, int64_t n, float p, uint64_t seed) = 0;

  // Cross-entropy with label smoothing ε and an ignored target id (PyTorch's F.cross_entropy):
  //   q = (1 − ε)·onehot(target) + ε/V;  losses[r] = −Σ_v q_v · log softmax(logits[r])_v
  //   predictions[r] = argmax_v logits[r, v] (the first on ties); rows whose target is ignore_index
  //   get loss 0.  logits: [rows, V]; targets, predictions: [rows] int32; losses: [rows]
  virtual void cross_entropy_forward(const float* logits, const int32_t* targets, float* losses,
                                     int32_t* predictions, int rows, int V, int ignore_index,
                                     float smoothing) = 0;
  // dlogits[r] = scale · (softmax(logits[r]) − q), WRITTEN; 0 for ignored rows. scale = 1/(rows
  // counted) gives the mean loss's gradient.
  virtual void cross_entropy_backward(const float* logits, const int32_t* targets, float* dlogits,
                                      int rows, int V, int ignore_index, float smoothing,
                                      float scale) = 0;

  // Σ x[i]² for i < n, in double (gradient clipping's norm); waits for pending work.
  virtual double sum_squares(const float* x, int64_t n) = 0;

  // One Adam / AdamW step over n parameters (torch.optim.Adam / AdamW, single-tensor form):
  //   g = grads[i]·grad_scale (+ wd·p for Adam);  p ← p·(1 − lr·wd) for AdamW;
  //   m ← m + (1 − β1)(g − m);  v ← β2·v + (1 − β2)·g²;
  //   p ← p − (lr / bc1) · m / (√v / √bc2 + eps)
  //   params, grads, m, v: [n]
  virtual void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n,
                            const AdamStep& step) = 0;
};

}  // namespace attnviz

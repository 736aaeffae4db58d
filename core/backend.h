// The compute backend interface: memory on a device and the ops a Transformer forward pass needs.
// The model (model.h) is composed once on top of it; the CPU backend (cpu_backend.h) is the
// reference, the CUDA backend (gpu/) mirrors every op under the same name.
//
// Conventions: every float tensor is row-major float32; pointers passed to ops are device
// pointers of this backend (host pointers for the CPU backend) obtained from DeviceBuffer::data()
// plus element offsets. Ops are asynchronous on a GPU; download() synchronises.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "config.h"

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
  // A zero-filled buffer of `bytes` bytes. Throws Error(Backend) when out of memory.
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
  // out[b, t, :] = table[ids[b, t], :] · scale + positions[pos0 + t, :]
  //   ids: [B, T] int32 (already checked to be in range), table: [vocab, d],
  //   positions: [>= pos0 + T, d] or nullptr (no positions added), out: [B, T, d]
  virtual void embedding_forward(const int32_t* ids, const float* table, const float* positions,
                                 float* out, int B, int T, int d, int pos0, float scale) = 0;

  // out[r, :] += table[ids[r], :] for r < rows (segment embeddings)
  //   ids: [rows] int32 (checked to be in range), table: [n, d], out: [rows, d]
  virtual void gather_add_forward(const int32_t* ids, const float* table, float* out, int rows,
                                  int d) = 0;

  // y[b, :] = (1/T) · Σ_t x[b, t, :]   (mean pooling over positions)
  //   x: [B, T, d], y: [B, d]
  virtual void mean_pool_forward(const float* x, float* y, int B, int T, int d) = 0;

  // y[rows, out] = x[rows, in] · W[out, in]ᵀ (+ bias[out] when bias != nullptr)
  virtual void linear_forward(const float* x, const float* weight, const float* bias, float* y,
                              int rows, int in, int out) = 0;

  // scores[b, h, i, j] = scale · Σ_c q[b, i, h·d_k + c] · k[b, j, h·d_k + c]
  //   q: heads view of [B, Tq, ·], k: heads view of [B, Tk, ·], scores: [B, H, Tq, Tk]
  virtual void attention_scores_forward(HeadsView q, HeadsView k, float* scores, int B, int H,
                                        int Tq, int Tk, int d_k, float scale) = 0;

  // probs[b, h, i, :] = softmax(where(mask[b, i, :], fill, scores[b, h, i, :]))
  //   scores, probs: [B, H, Tq, Tk]; mask: [B, Tq, Tk] uint8 (1 = masked), shared by the heads.
  //   A row with every key masked: with a finite fill, softmax of equal values (uniform, as
  //   PyTorch); with fill = -inf, all zeros (PyTorch gives NaN).
  virtual void masked_softmax_forward(const float* scores, const uint8_t* mask, float* probs, int B,
                                      int H, int Tq, int Tk, float fill) = 0;

  // ctx[b, i, h·d_v + c] = Σ_j probs[b, h, i, j] · v[b, j, h·d_v + c]
  //   probs: [B, H, Tq, Tk], v: heads view of [B, Tk, ·], ctx: [B, Tq, H·d_v] (contiguous)
  virtual void attention_context_forward(const float* probs, HeadsView v, float* ctx, int B, int H,
                                         int Tq, int Tk, int d_v) = 0;

  // y[r, :] = (x[r, :] - mean) / sqrt(var + eps) · gamma + beta   (biased variance, as PyTorch)
  //   x, y: [rows, d] (may alias); gamma, beta: both [d], or both nullptr = identity affine
  virtual void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y,
                                 int rows, int d, float eps) = 0;

  // x[i] = act(x[i]) for i < n, in place
  virtual void activation_forward(float* x, int64_t n, Activation act) = 0;

  // y[i] += x[i] for i < n (the residual add)
  virtual void residual_forward(const float* x, float* y, int64_t n) = 0;

  // x[i] *= s for i < n (a head's temperature, a head switched off)
  virtual void scale_forward(float* x, int64_t n, float s) = 0;
};

}  // namespace attnviz

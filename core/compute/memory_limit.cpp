#include "compute/memory_limit.h"

#include <atomic>
#include <mutex>
#include <string>
#include <utility>

#include "base/error.h"

namespace attnviz {

namespace {

// A buffer of the inner backend that gives its bytes back to the count when it is freed.
class CountedBuffer final : public DeviceBuffer {
 public:
  CountedBuffer(BufferPtr inner, std::shared_ptr<MemoryLimit> limit)
      : inner_(std::move(inner)), limit_(std::move(limit)) {}
  ~CountedBuffer() override { limit_->in_use -= inner_->bytes(); }
  size_t bytes() const override { return inner_->bytes(); }
  void* data() override { return inner_->data(); }
  const void* data() const override { return inner_->data(); }
  DeviceBuffer& inner() { return *inner_; }
  const DeviceBuffer& inner() const { return *inner_; }

 private:
  BufferPtr inner_;
  std::shared_ptr<MemoryLimit> limit_;
};

DeviceBuffer& innerOf(DeviceBuffer& b) {
  return static_cast<CountedBuffer&>(b).inner();
}
const DeviceBuffer& innerOf(const DeviceBuffer& b) {
  return static_cast<const CountedBuffer&>(b).inner();
}

class MemoryLimitedBackend final : public Backend {
 public:
  MemoryLimitedBackend(std::shared_ptr<Backend> inner, std::shared_ptr<MemoryLimit> limit)
      : inner_(std::move(inner)), limit_(std::move(limit)) {}

  std::string name() const override { return inner_->name(); }
  std::string description() const override {
    return inner_->description() + ", limited to " + formatBytes(limit_->bytes) + " for a test";
  }
  void setThreads(int n) override { inner_->setThreads(n); }
  int threads() const override { return inner_->threads(); }

  BufferPtr allocate(size_t bytes) override {
    if (std::string lost = failure(); !lost.empty())
      throw Error(ErrorKind::Backend, "allocate: the backend is unusable: " + lost);
    const uint64_t before = limit_->in_use.fetch_add(bytes);
    const uint64_t limit = limit_->bytes;
    if (before + bytes > limit) {
      limit_->in_use -= bytes;
      ++limit_->refused;
      if (limit_->lose_device) {
        const std::string lost = "a lost device (a test's) at " + formatBytes(before + bytes) +
                                 " of the limit of " + formatBytes(limit);
        {
          std::lock_guard<std::mutex> lock(failure_mutex_);
          if (failure_.empty()) failure_ = lost;
        }
        throw Error(ErrorKind::Backend, "allocate: " + lost);
      }
      throw Error(ErrorKind::OutOfMemory, "out of memory: cannot allocate " + formatBytes(bytes) +
                                              " (" + formatBytes(before) + " of the limit of " +
                                              formatBytes(limit) + " in use)" +
                                              kOutOfDeviceMemoryAdvice);
    }
    uint64_t peak = limit_->peak;
    while (before + bytes > peak && !limit_->peak.compare_exchange_weak(peak, before + bytes)) {
    }
    try {
      return std::make_unique<CountedBuffer>(inner_->allocate(bytes), limit_);
    } catch (...) {
      limit_->in_use -= bytes;
      throw;
    }
  }
  void upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset) override {
    inner_->upload(innerOf(dst), src, bytes, offset);
  }
  void download(const DeviceBuffer& src, void* dst, size_t bytes, size_t offset) override {
    inner_->download(innerOf(src), dst, bytes, offset);
  }
  void copy(const float* src, float* dst, int64_t n) override { inner_->copy(src, dst, n); }
  void copy_to_host(const float* src, float* dst, int64_t n) override {
    inner_->copy_to_host(src, dst, n);
  }
  void synchronize() override { inner_->synchronize(); }
  bool hostVisible() const override { return inner_->hostVisible(); }
  std::string failure() const override {
    {
      std::lock_guard<std::mutex> lock(failure_mutex_);
      if (!failure_.empty()) return failure_;
    }
    return inner_->failure();
  }

  // Every op as the inner backend's.
  void embedding_forward(const int32_t* ids, const float* table, const float* positions, float* out,
                         int B, int T, int d, int pos0, float scale) override {
    inner_->embedding_forward(ids, table, positions, out, B, T, d, pos0, scale);
  }
  void embedding_backward(const int32_t* ids, const float* dout, float* dtable, float* dpositions,
                          int B, int T, int d, int pos0, float scale) override {
    inner_->embedding_backward(ids, dout, dtable, dpositions, B, T, d, pos0, scale);
  }
  void gather_add_forward(const int32_t* ids, const float* table, float* out, int rows,
                          int d) override {
    inner_->gather_add_forward(ids, table, out, rows, d);
  }
  void gather_add_backward(const int32_t* ids, const float* dout, float* dtable, int rows,
                           int d) override {
    inner_->gather_add_backward(ids, dout, dtable, rows, d);
  }
  void mean_pool_forward(const float* x, float* y, int B, int T, int d) override {
    inner_->mean_pool_forward(x, y, B, T, d);
  }
  void mean_pool_backward(const float* dy, float* dx, int B, int T, int d) override {
    inner_->mean_pool_backward(dy, dx, B, T, d);
  }
  void linear_forward(const float* x, const float* weight, const float* bias, float* y, int rows,
                      int in, int out) override {
    inner_->linear_forward(x, weight, bias, y, rows, in, out);
  }
  void linear_backward(const float* dy, const float* x, const float* weight, float* dx,
                       float* dweight, float* dbias, int rows, int in, int out) override {
    inner_->linear_backward(dy, x, weight, dx, dweight, dbias, rows, in, out);
  }
  void rope_forward(HeadsGrad x, const float* cos, const float* sin, int B, int T, int heads,
                    int d_head, int pos0, RopeLayout layout) override {
    inner_->rope_forward(x, cos, sin, B, T, heads, d_head, pos0, layout);
  }
  void rope_backward(HeadsGrad dx, const float* cos, const float* sin, int B, int T, int heads,
                     int d_head, int pos0, RopeLayout layout) override {
    inner_->rope_backward(dx, cos, sin, B, T, heads, d_head, pos0, layout);
  }
  void attention_scores_forward(HeadsView q, HeadsView k, float* scores, int B, int H, int kv_heads,
                                int Tq, int Tk, int d_k, float scale) override {
    inner_->attention_scores_forward(q, k, scores, B, H, kv_heads, Tq, Tk, d_k, scale);
  }
  void attention_scores_backward(const float* dscores, HeadsView q, HeadsView k, HeadsGrad dq,
                                 HeadsGrad dk, int B, int H, int kv_heads, int Tq, int Tk, int d_k,
                                 float scale) override {
    inner_->attention_scores_backward(dscores, q, k, dq, dk, B, H, kv_heads, Tq, Tk, d_k, scale);
  }
  void position_bias_forward(const float* table, float* scores, int B, int H, int Tq, int Tk,
                             int q0, int num_buckets, int max_distance,
                             bool bidirectional) override {
    inner_->position_bias_forward(table, scores, B, H, Tq, Tk, q0, num_buckets, max_distance,
                                  bidirectional);
  }
  void position_bias_backward(const float* dscores, float* dtable, int B, int H, int Tq, int Tk,
                              int q0, int num_buckets, int max_distance,
                              bool bidirectional) override {
    inner_->position_bias_backward(dscores, dtable, B, H, Tq, Tk, q0, num_buckets, max_distance,
                                   bidirectional);
  }
  void masked_softmax_forward(const float* scores, const uint8_t* mask, float* probs, int B, int H,
                              int Tq, int Tk, float fill) override {
    inner_->masked_softmax_forward(scores, mask, probs, B, H, Tq, Tk, fill);
  }
  void masked_softmax_backward(const float* probs, const float* dprobs, const uint8_t* mask,
                               float* dscores, int B, int H, int Tq, int Tk) override {
    inner_->masked_softmax_backward(probs, dprobs, mask, dscores, B, H, Tq, Tk);
  }
  void attention_context_forward(const float* probs, HeadsView v, float* ctx, int B, int H,
                                 int kv_heads, int Tq, int Tk, int d_v) override {
    inner_->attention_context_forward(probs, v, ctx, B, H, kv_heads, Tq, Tk, d_v);
  }
  void attention_context_backward(const float* dctx, const float* probs, HeadsView v, float* dprobs,
                                  HeadsGrad dv, int B, int H, int kv_heads, int Tq, int Tk,
                                  int d_v) override {
    inner_->attention_context_backward(dctx, probs, v, dprobs, dv, B, H, kv_heads, Tq, Tk, d_v);
  }
  void norm_forward(NormKind kind, const float* x, const float* gamma, const float* beta, float* y,
                    int rows, int d, float eps) override {
    inner_->norm_forward(kind, x, gamma, beta, y, rows, d, eps);
  }
  void norm_backward(NormKind kind, const float* dy, const float* x, const float* gamma, float* dx,
                     float* dgamma, float* dbeta, int rows, int d, float eps) override {
    inner_->norm_backward(kind, dy, x, gamma, dx, dgamma, dbeta, rows, d, eps);
  }
  void head_norm_forward(NormKind kind, HeadsGrad x, const float* gamma, int B, int T, int heads,
                         int d_head, float eps) override {
    inner_->head_norm_forward(kind, x, gamma, B, T, heads, d_head, eps);
  }
  void head_norm_backward(NormKind kind, HeadsGrad dx, HeadsView x, const float* gamma,
                          float* dgamma, int B, int T, int heads, int d_head, float eps) override {
    inner_->head_norm_backward(kind, dx, x, gamma, dgamma, B, T, heads, d_head, eps);
  }
  void activation_forward(float* x, int64_t n, Activation act) override {
    inner_->activation_forward(x, n, act);
  }
  void activation_backward(const float* x, const float* dy, float* dx, int64_t n,
                           Activation act) override {
    inner_->activation_backward(x, dy, dx, n, act);
  }
  void gated_activation_forward(const float* x, float* y, int rows, int f,
                                Activation act) override {
    inner_->gated_activation_forward(x, y, rows, f, act);
  }
  void gated_activation_backward(const float* x, const float* dy, float* dx, int rows, int f,
                                 Activation act) override {
    inner_->gated_activation_backward(x, dy, dx, rows, f, act);
  }
  void residual_forward(const float* x, float* y, int64_t n) override {
    inner_->residual_forward(x, y, n);
  }
  void residual_backward(const float* dy, float* dx, int64_t n) override {
    inner_->residual_backward(dy, dx, n);
  }
  void scale_forward(float* x, int64_t n, float s) override { inner_->scale_forward(x, n, s); }
  void scale_backward(float* dx, int64_t n, float s) override { inner_->scale_backward(dx, n, s); }
  void zero(float* x, int64_t n) override { inner_->zero(x, n); }
  void dropout_forward(float* x, int64_t n, float p, uint64_t seed) override {
    inner_->dropout_forward(x, n, p, seed);
  }
  void dropout_backward(float* dx, int64_t n, float p, uint64_t seed) override {
    inner_->dropout_backward(dx, n, p, seed);
  }
  void cross_entropy_forward(const float* logits, const int32_t* targets, float* losses,
                             int32_t* predictions, int rows, int V, int ignore_index,
                             float smoothing) override {
    inner_->cross_entropy_forward(logits, targets, losses, predictions, rows, V, ignore_index,
                                  smoothing);
  }
  void cross_entropy_backward(const float* logits, const int32_t* targets, float* dlogits, int rows,
                              int V, int ignore_index, float smoothing, float scale) override {
    inner_->cross_entropy_backward(logits, targets, dlogits, rows, V, ignore_index, smoothing,
                                   scale);
  }
  double sum_squares(const float* x, int64_t n) override { return inner_->sum_squares(x, n); }
  void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n,
                    const AdamStep& step) override {
    inner_->adamw_update(params, grads, m, v, n, step);
  }

 private:
  std::shared_ptr<Backend> inner_;
  std::shared_ptr<MemoryLimit> limit_;
  mutable std::mutex failure_mutex_;
  std::string failure_;  // set once, when a limit with lose_device is passed
};

}  // namespace

std::shared_ptr<Backend> limitMemory(std::shared_ptr<Backend> inner,
                                     std::shared_ptr<MemoryLimit> limit) {
  return std::make_shared<MemoryLimitedBackend>(std::move(inner), std::move(limit));
}

std::shared_ptr<Backend> limitMemory(std::shared_ptr<Backend> inner, uint64_t limit_bytes) {
  return limitMemory(std::move(inner), std::make_shared<MemoryLimit>(limit_bytes));
}

}  // namespace attnviz

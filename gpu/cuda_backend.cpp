// The CUDA backend: memory through CudaBuffer (the backend's own memory pool), uploads through
// HostStaging, GEMMs through cuBLAS executing the plans of gemm_plan.h, everything else through
// the kernels of kernels.cu. All work is queued on one stream; download() and synchronize() wait
// for it. Every entry point runs inside guard(): it sets the device on the calling thread, refuses
// work once the context is lost, and turns CUDA errors into messages that name the op
// (tests/test_gpu_host.cpp reads this file and fails for an op of backend.h that is not guarded).
#include "cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "base/error.h"
#include "cuda_check.h"
#include "cuda_status.h"
#include "device_buffer.h"
#include "gemm_plan.h"
#include "host_staging.h"
#include "kernels.h"

#ifndef ATTNVIZ_CUDA_ARCHITECTURES
#define ATTNVIZ_CUDA_ARCHITECTURES "?"
#endif

namespace attnviz::cuda {

namespace {

constexpr int kDevice = 0;  // CUDA_VISIBLE_DEVICES chooses the GPU

bool envFlag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

// How much freed memory the pool keeps between passes: an eighth of the device, at most 1 GiB.
// More is given back to the driver at the next synchronisation.
size_t poolKeepBytes(size_t total) {
  return std::min(total / 8, size_t{1} << 30);
}

class CudaBackend final : public Backend {
 public:
  CudaBackend() : sync_each_op_(envFlag("ATTNVIZ_CUDA_SYNC")) {
    try {
      CUDA_CHECK(cudaSetDevice(kDevice));
      CUDA_CHECK(cudaGetDeviceProperties(&props_, kDevice));
      stream_ = makeStream();
      pool_ = makePool(kDevice, poolKeepBytes(props_.totalGlobalMem));
      CUBLAS_CHECK(cublasCreate(&cublas_));
      CUBLAS_CHECK(cublasSetStream(cublas_, stream_.get()));
      // Full FP32 products (no TF32), as PyTorch's default for float32 matmul.
      CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
    } catch (const CudaError& e) {
      destroy();
      throw Error(ErrorKind::Backend, std::string("cannot create the CUDA backend: ") + e.what());
    }
  }
  ~CudaBackend() override { destroy(); }
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override { return "cuda"; }

  std::string description() const override {
    int runtime = 0, driver = 0;
    (void)cudaRuntimeGetVersion(&runtime);
    (void)cudaDriverGetVersion(&driver);
    return "CUDA (" + std::string(props_.name) + ", compute " + std::to_string(props_.major) + "." +
           std::to_string(props_.minor) + ", " + std::to_string(props_.totalGlobalMem >> 20) +
           " MiB, runtime " + cudaVersionString(runtime) + ", driver " + cudaVersionString(driver) +
           ", cuBLAS" +
           (sync_each_op_ ? ", synchronising after every op (ATTNVIZ_CUDA_SYNC=1)" : "") + ")";
  }

  std::string failure() const override {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    return failure_;
  }

  // ---- memory ----
  BufferPtr allocate(size_t bytes) override {
    BufferPtr buffer;
    guard("allocate",
          [&] { buffer = std::make_unique<CudaBuffer>(bytes, stream_, pool_, kDevice); });
    return buffer;
  }

  void upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset) override {
    checkRange(dst, bytes, offset, "upload");
    guard("upload", [&] {
      staging_.upload(static_cast<char*>(dst.data()) + offset, src, bytes, stream_.get());
    });
  }

  void download(const DeviceBuffer& src, void* dst, size_t bytes, size_t offset) override {
    checkRange(src, bytes, offset, "download");
    guard("download", [&] {
      if (bytes > 0)
        CUDA_CHECK(cudaMemcpyAsync(dst, static_cast<const char*>(src.data()) + offset, bytes,
                                   cudaMemcpyDeviceToHost, stream_.get()));
      CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    });
  }

  // memmove semantics: overlapping ranges go through a temporary buffer (cudaMemcpyAsync leaves
  // the result of an overlapping copy undefined).
  void copy(const float* src, float* dst, int64_t n) override {
    if (n <= 0 || src == dst) return;
    guard("copy", [&] {
      const size_t bytes = static_cast<size_t>(n) * sizeof(float);
      const char* s = reinterpret_cast<const char*>(src);
      const char* d = reinterpret_cast<const char*>(dst);
      if (s + bytes <= d || d + bytes <= s) {
        CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_.get()));
        return;
      }
      CudaBuffer tmp(bytes, stream_, pool_, kDevice, /*zero_fill=*/false);
      CUDA_CHECK(cudaMemcpyAsync(tmp.data(), src, bytes, cudaMemcpyDeviceToDevice, stream_.get()));
      CUDA_CHECK(cudaMemcpyAsync(dst, tmp.data(), bytes, cudaMemcpyDeviceToDevice, stream_.get()));
    });  // tmp goes back to the pool in stream order, after the second copy
  }

  void copy_to_host(const float* src, float* dst, int64_t n) override {
    guard("copy_to_host", [&] {
      if (n > 0)
        CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream_.get()));
      CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    });
  }

  void synchronize() override {
    guard("synchronize", [&] { CUDA_CHECK(cudaStreamSynchronize(stream_.get())); });
  }

  // ---- ops ----
  void embedding_forward(const int32_t* ids, const float* table, const float* positions, float* out,
                         int B, int T, int d, int pos0, float scale) override {
    guard("embedding_forward", [&] {
      CUDA_CHECK(
          cuda::embedding_forward(ids, table, positions, out, B, T, d, pos0, scale, stream_.get()));
    });
  }

  void embedding_backward(const int32_t* ids, const float* dout, float* dtable, float* dpositions,
                          int B, int T, int d, int pos0, float scale) override {
    guard("embedding_backward", [&] {
      CUDA_CHECK(cuda::embedding_backward(ids, dout, dtable, dpositions, B, T, d, pos0, scale,
                                          stream_.get()));
    });
  }

  void gather_add_forward(const int32_t* ids, const float* table, float* out, int rows,
                          int d) override {
    guard("gather_add_forward",
          [&] { CUDA_CHECK(cuda::gather_add_forward(ids, table, out, rows, d, stream_.get())); });
  }

  void gather_add_backward(const int32_t* ids, const float* dout, float* dtable, int rows,
                           int d) override {
    guard("gather_add_backward", [&] {
      CUDA_CHECK(cuda::gather_add_backward(ids, dout, dtable, rows, d, stream_.get()));
    });
  }

  void mean_pool_forward(const float* x, float* y, int B, int T, int d) override {
    guard("mean_pool_forward",
          [&] { CUDA_CHECK(cuda::mean_pool_forward(x, y, B, T, d, stream_.get())); });
  }

  void mean_pool_backward(const float* dy, float* dx, int B, int T, int d) override {
    guard("mean_pool_backward",
          [&] { CUDA_CHECK(cuda::mean_pool_backward(dy, dx, B, T, d, stream_.get())); });
  }

  void linear_forward(const float* x, const float* weight, const float* bias, float* y, int rows,
                      int in, int out) override {
    guard("linear_forward", [&] {
      run(planLinear(rows, in, out), weight, x, y);
      if (bias) CUDA_CHECK(bias_add_forward(bias, y, rows, out, stream_.get()));
    });
  }

  void linear_backward(const float* dy, const float* x, const float* weight, float* dx,
                       float* dweight, float* dbias, int rows, int in, int out) override {
    guard("linear_backward", [&] {
      if (dx) run(planLinearBackwardInput(rows, in, out), weight, dy, dx);
      if (dweight) run(planLinearBackwardWeight(rows, in, out), x, dy, dweight);
      if (dbias) CUDA_CHECK(bias_add_backward(dy, dbias, rows, out, stream_.get()));
    });
  }

  void rope_forward(HeadsGrad x, const float* cos, const float* sin, int B, int T, int heads,
                    int d_head, int pos0, RopeLayout layout) override {
    guard("rope_forward", [&] {
      CUDA_CHECK(cuda::rope(x.data, x.batch_stride, x.row_stride, cos, sin, B, T, heads, d_head,
                            pos0, layout, 1.0f, stream_.get()));
    });
  }

  // dx ← Rᵀ·dx: the rotation by minus the angles
  void rope_backward(HeadsGrad dx, const float* cos, const float* sin, int B, int T, int heads,
                     int d_head, int pos0, RopeLayout layout) override {
    guard("rope_backward", [&] {
      CUDA_CHECK(cuda::rope(dx.data, dx.batch_stride, dx.row_stride, cos, sin, B, T, heads, d_head,
                            pos0, layout, -1.0f, stream_.get()));
    });
  }

  void attention_scores_forward(HeadsView q, HeadsView k, float* scores, int B, int H, int kv_heads,
                                int Tq, int Tk, int d_k, float scale) override {
    guard("attention_scores_forward", [&] {
      run(planScores(q.batch_stride, q.row_stride, k.batch_stride, k.row_stride, B, H, kv_heads, Tq,
                     Tk, d_k, scale),
          k.data, q.data, scores);
    });
  }

  void attention_scores_backward(const float* dscores, HeadsView q, HeadsView k, HeadsGrad dq,
                                 HeadsGrad dk, int B, int H, int kv_heads, int Tq, int Tk, int d_k,
                                 float scale) override {
    guard("attention_scores_backward", [&] {
      run(planScoresBackwardQuery(k.batch_stride, k.row_stride, dq.batch_stride, dq.row_stride, B,
                                  H, kv_heads, Tq, Tk, d_k, scale),
          k.data, dscores, dq.data);
      run(planScoresBackwardKey(q.batch_stride, q.row_stride, dk.batch_stride, dk.row_stride, B, H,
                                kv_heads, Tq, Tk, d_k, scale),
          q.data, dscores, dk.data);
    });
  }

  void position_bias_forward(const float* table, float* scores, int B, int H, int Tq, int Tk,
                             int q0, int num_buckets, int max_distance,
                             bool bidirectional) override {
    guard("position_bias_forward", [&] {
      CUDA_CHECK(cuda::position_bias_forward(table, scores, B, H, Tq, Tk, q0, num_buckets,
                                             max_distance, bidirectional, stream_.get()));
    });
  }

  void position_bias_backward(const float* dscores, float* dtable, int B, int H, int Tq, int Tk,
                              int q0, int num_buckets, int max_distance,
                              bool bidirectional) override {
    guard("position_bias_backward", [&] {
      CUDA_CHECK(cuda::position_bias_backward(dscores, dtable, B, H, Tq, Tk, q0, num_buckets,
                                              max_distance, bidirectional, stream_.get()));
    });
  }

  void masked_softmax_forward(const float* scores, const uint8_t* mask, float* probs, int B, int H,
                              int Tq, int Tk, float fill) override {
    guard("masked_softmax_forward", [&] {
      CUDA_CHECK(
          cuda::masked_softmax_forward(scores, mask, probs, B, H, Tq, Tk, fill, stream_.get()));
    });
  }

  void masked_softmax_backward(const float* probs, const float* dprobs, const uint8_t* mask,
                               float* dscores, int B, int H, int Tq, int Tk) override {
    guard("masked_softmax_backward", [&] {
      CUDA_CHECK(
          cuda::masked_softmax_backward(probs, dprobs, mask, dscores, B, H, Tq, Tk, stream_.get()));
    });
  }

  void attention_context_forward(const float* probs, HeadsView v, float* ctx, int B, int H,
                                 int kv_heads, int Tq, int Tk, int d_v) override {
    guard("attention_context_forward", [&] {
      run(planContext(v.batch_stride, v.row_stride, B, H, kv_heads, Tq, Tk, d_v), v.data, probs,
          ctx);
    });
  }

  void attention_context_backward(const float* dctx, const float* probs, HeadsView v, float* dprobs,
                                  HeadsGrad dv, int B, int H, int kv_heads, int Tq, int Tk,
                                  int d_v) override {
    guard("attention_context_backward", [&] {
      run(planContextBackwardProbs(v.batch_stride, v.row_stride, B, H, kv_heads, Tq, Tk, d_v),
          v.data, dctx, dprobs);
      run(planContextBackwardValues(dv.batch_stride, dv.row_stride, B, H, kv_heads, Tq, Tk, d_v),
          dctx, probs, dv.data);
    });
  }

  void norm_forward(NormKind kind, const float* x, const float* gamma, const float* beta, float* y,
                    int rows, int d, float eps) override {
    guard("norm_forward", [&] {
      CUDA_CHECK(cuda::norm_forward(kind, x, gamma, beta, y, rows, d, eps, stream_.get()));
    });
  }

  void norm_backward(NormKind kind, const float* dy, const float* x, const float* gamma, float* dx,
                     float* dgamma, float* dbeta, int rows, int d, float eps) override {
    guard("norm_backward", [&] {
      // Each row's center and scale pass from the row kernel to the parameters' kernel (the
      // scratch goes back to the pool in stream order).
      CudaBuffer stats((size_t)std::max(rows, 1) * 2 * sizeof(float), stream_, pool_, kDevice,
                       /*zero_fill=*/false);
      CUDA_CHECK(cuda::norm_backward(kind, dy, x, gamma, dx, dgamma, dbeta, stats.f32(), rows, d,
                                     eps, stream_.get()));
    });
  }

  void head_norm_forward(NormKind kind, HeadsGrad x, const float* gamma, int B, int T, int heads,
                         int d_head, float eps) override {
    guard("head_norm_forward", [&] {
      CUDA_CHECK(cuda::head_norm_forward(kind, x.data, x.batch_stride, x.row_stride, gamma, B, T,
                                         heads, d_head, eps, stream_.get()));
    });
  }

  void head_norm_backward(NormKind kind, HeadsGrad dx, HeadsView x, const float* gamma,
                          float* dgamma, int B, int T, int heads, int d_head, float eps) override {
    guard("head_norm_backward", [&] {
      const int64_t rows = std::max<int64_t>(int64_t{B} * T * heads, 1);
      CudaBuffer stats((size_t)rows * 2 * sizeof(float), stream_, pool_, kDevice,
                       /*zero_fill=*/false);
      CUDA_CHECK(cuda::head_norm_backward(kind, dx.data, dx.batch_stride, dx.row_stride, x.data,
                                          x.batch_stride, x.row_stride, gamma, dgamma, stats.f32(),
                                          B, T, heads, d_head, eps, stream_.get()));
    });
  }

  void activation_forward(float* x, int64_t n, Activation act) override {
    guard("activation_forward",
          [&] { CUDA_CHECK(cuda::activation_forward(x, n, act, stream_.get())); });
  }

  void activation_backward(const float* x, const float* dy, float* dx, int64_t n,
                           Activation act) override {
    guard("activation_backward",
          [&] { CUDA_CHECK(cuda::activation_backward(x, dy, dx, n, act, stream_.get())); });
  }

  void gated_activation_forward(const float* x, float* y, int rows, int f,
                                Activation act) override {
    guard("gated_activation_forward",
          [&] { CUDA_CHECK(cuda::gated_activation_forward(x, y, rows, f, act, stream_.get())); });
  }

  void gated_activation_backward(const float* x, const float* dy, float* dx, int rows, int f,
                                 Activation act) override {
    guard("gated_activation_backward", [&] {
      CUDA_CHECK(cuda::gated_activation_backward(x, dy, dx, rows, f, act, stream_.get()));
    });
  }

  void residual_forward(const float* x, float* y, int64_t n) override {
    guard("residual_forward", [&] { CUDA_CHECK(cuda::residual_forward(x, y, n, stream_.get())); });
  }

  // dx += dy: the residual add itself
  void residual_backward(const float* dy, float* dx, int64_t n) override {
    guard("residual_backward",
          [&] { CUDA_CHECK(cuda::residual_forward(dy, dx, n, stream_.get())); });
  }

  void scale_forward(float* x, int64_t n, float s) override {
    guard("scale_forward", [&] { CUDA_CHECK(cuda::scale_forward(x, n, s, stream_.get())); });
  }

  void scale_backward(float* dx, int64_t n, float s) override {
    guard("scale_backward", [&] { CUDA_CHECK(cuda::scale_forward(dx, n, s, stream_.get())); });
  }

  // ---- training only ----
  void zero(float* x, int64_t n) override {
    if (n <= 0) return;
    guard("zero", [&] {
      CUDA_CHECK(cudaMemsetAsync(x, 0, static_cast<size_t>(n) * sizeof(float), stream_.get()));
    });
  }

  void dropout_forward(float* x, int64_t n, float p, uint64_t seed) override {
    guard("dropout_forward",
          [&] { CUDA_CHECK(cuda::dropout_forward(x, n, p, seed, stream_.get())); });
  }
  void dropout_backward(float* dx, int64_t n, float p, uint64_t seed) override {
    guard("dropout_backward",  // the same mask
          [&] { CUDA_CHECK(cuda::dropout_forward(dx, n, p, seed, stream_.get())); });
  }

  void cross_entropy_forward(const float* logits, const int32_t* targets, float* losses,
                             int32_t* predictions, int rows, int V, int ignore_index,
                             float smoothing) override {
    guard("cross_entropy_forward", [&] {
      CUDA_CHECK(cuda::cross_entropy_forward(logits, targets, losses, predictions, rows, V,
                                             ignore_index, smoothing, stream_.get()));
    });
  }
  void cross_entropy_backward(const float* logits, const int32_t* targets, float* dlogits, int rows,
                              int V, int ignore_index, float smoothing, float scale) override {
    guard("cross_entropy_backward", [&] {
      CUDA_CHECK(cuda::cross_entropy_backward(logits, targets, dlogits, rows, V, ignore_index,
                                              smoothing, scale, stream_.get()));
    });
  }

  double sum_squares(const float* x, int64_t n) override {
    if (n <= 0) return 0.0;
    double sum = 0.0;
    guard("sum_squares", [&] {
      const int blocks = cuda::sum_squares_blocks(n);
      CudaBuffer partial((size_t)blocks * sizeof(double), stream_, pool_, kDevice,
                         /*zero_fill=*/false);
      CUDA_CHECK(cuda::sum_squares(x, n, static_cast<double*>(partial.data()), stream_.get()));
      std::vector<double> host((size_t)blocks);
      CUDA_CHECK(cudaMemcpyAsync(host.data(), partial.data(), host.size() * sizeof(double),
                                 cudaMemcpyDeviceToHost, stream_.get()));
      CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      for (double v : host) sum += v;
    });
    return sum;
  }

  void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n,
                    const AdamStep& a) override {
    guard("adamw_update", [&] {
      CUDA_CHECK(cuda::adamw_update(params, grads, m, v, n, a.lr, a.beta1, a.beta2, a.eps,
                                    a.weight_decay, a.decoupled, a.bias_correction1,
                                    a.bias_correction2, a.grad_scale, stream_.get()));
    });
  }

 private:
  // Runs one entry point's work: on this backend's device whatever thread calls (CUDA's current
  // device is per thread), never once the context is lost, waiting for the GPU afterwards under
  // ATTNVIZ_CUDA_SYNC=1, and with every CUDA error turned into an Error naming `op`.
  template <class Work>
  void guard(const char* op, Work&& work) {
    if (std::string lost = failure(); !lost.empty())
      throw Error(ErrorKind::Backend,
                  std::string("CUDA ") + op + ": the CUDA backend is unusable: " + lost);
    try {
      int current = -1;
      CUDA_CHECK(cudaGetDevice(&current));
      if (current != kDevice) CUDA_CHECK(cudaSetDevice(kDevice));
      work();
      if (sync_each_op_) CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    } catch (const CudaError& e) {
      fail(op, e);
    }
  }

  // Classifies an error raised in `op` and rethrows it as an Error naming the op. A sticky error
  // (or a cuBLAS failure behind which the stream reports one) marks the backend unusable.
  [[noreturn]] void fail(const char* op, const CudaError& e) {
    cudaError_t code = e.code();
    std::string text = e.what();
    if (!isStickyError(code)) {
      // cuBLAS reports a fault of its kernels as CUBLAS_STATUS_EXECUTION_FAILED; a fault of
      // earlier work may surface as any error: ask the stream.
      const cudaError_t probe = cudaStreamQuery(stream_.get());
      if (isStickyError(probe)) {
        code = probe;
        text += "; the stream reports " + errorText(probe);
      }
    }
    const bool sticky = isStickyError(code);
    const std::string message =
        opErrorMessage(op, text, sticky, isKernelFault(code), sync_each_op_);
    if (sticky) {
      std::lock_guard<std::mutex> lock(failure_mutex_);
      if (failure_.empty()) failure_ = message;
    }
    // Out of memory leaves the context usable: its own kind, so that the request can be redone
    // on the CPU (model/cpu_fallback.h) without matching the message.
    throw Error(
        !sticky && code == cudaErrorMemoryAllocation ? ErrorKind::OutOfMemory : ErrorKind::Backend,
        message);
  }

  // Executes a plan of gemm_plan.h: a, b, c are the base pointers its offsets count from.
  void run(const GemmPlan& plan, const float* a, const float* b, float* c) {
    for (const GemmCall& g : plan) {
      const cublasOperation_t ta = g.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
      const cublasOperation_t tb = g.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
      if (g.batch_count == 1) {
        CUBLAS_CHECK(cublasSgemm(cublas_, ta, tb, g.m, g.n, g.k, &g.alpha, a + g.a_offset, g.lda,
                                 b + g.b_offset, g.ldb, &g.beta, c + g.c_offset, g.ldc));
      } else {
        CUBLAS_CHECK(cublasSgemmStridedBatched(cublas_, ta, tb, g.m, g.n, g.k, &g.alpha,
                                               a + g.a_offset, g.lda, g.stride_a, b + g.b_offset,
                                               g.ldb, g.stride_b, &g.beta, c + g.c_offset, g.ldc,
                                               g.stride_c, g.batch_count));
      }
    }
  }

  static void checkRange(const DeviceBuffer& buffer, size_t bytes, size_t offset,
                         const char* what) {
    if (offset > buffer.bytes() || bytes > buffer.bytes() - offset)
      throw Error(ErrorKind::Backend, std::string("CUDA ") + what + " of " + std::to_string(bytes) +
                                          " bytes at offset " + std::to_string(offset) +
                                          " overruns a buffer of " +
                                          std::to_string(buffer.bytes()) + " bytes");
  }

  // Gives back what the backend holds: cuBLAS's handle, and the pool's cache (buffers still
  // alive keep their memory; the pool goes with the last of them).
  void destroy() noexcept {
    (void)cudaSetDevice(kDevice);
    if (stream_) (void)cudaStreamSynchronize(stream_.get());
    if (cublas_) (void)cublasDestroy(cublas_);
    cublas_ = nullptr;
    if (pool_) (void)cudaMemPoolTrimTo(pool_.get(), 0);
    (void)cudaGetLastError();
  }

  const bool sync_each_op_;  // ATTNVIZ_CUDA_SYNC=1
  cudaDeviceProp props_{};
  StreamPtr stream_;  // all work of this backend, in order; shared with its buffers
  PoolPtr pool_;      // the backend's memory pool (nullptr: cudaMalloc); shared with its buffers
  HostStaging staging_;
  cublasHandle_t cublas_ = nullptr;
  mutable std::mutex failure_mutex_;
  std::string failure_;  // set once, at the first sticky error
};

DeviceFacts deviceFacts() {
  DeviceFacts facts;
  (void)cudaDriverGetVersion(&facts.driver_version);
  (void)cudaRuntimeGetVersion(&facts.runtime_version);
  facts.architectures = ATTNVIZ_CUDA_ARCHITECTURES;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    facts.visible_devices_set = true;
    facts.visible_devices = v;
  }
  return facts;
}

}  // namespace

std::string deviceUnavailableReason() {
  DeviceFacts facts = deviceFacts();
  auto reason = [&](cudaError_t error, const std::string& call) {
    (void)cudaGetLastError();
    return unavailableReason(error, call, errorText(error), facts);
  };
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess)
    return reason(e, "cudaGetDeviceCount");
  if (count == 0) return "no CUDA device found (cudaGetDeviceCount reports 0 devices)";
  cudaDeviceProp props{};
  if (cudaError_t e = cudaGetDeviceProperties(&props, kDevice); e != cudaSuccess)
    return reason(e, "cudaGetDeviceProperties");
  facts.device = std::string(props.name) + " (compute " + std::to_string(props.major) + "." +
                 std::to_string(props.minor) + ")";
  facts.compute_capability = props.major * 10 + props.minor;
  int mode = cudaComputeModeDefault;
  if (cudaError_t e = cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, kDevice);
      e != cudaSuccess)
    return reason(e, "cudaDeviceGetAttribute(cudaDevAttrComputeMode)");
  if (mode == cudaComputeModeProhibited) return prohibitedReason(facts);
  // The context is created here, where exclusive-process mode and a full device show.
  if (cudaError_t e = cudaSetDevice(kDevice); e != cudaSuccess) return reason(e, "cudaSetDevice");
  if (cudaError_t e = cudaFree(nullptr); e != cudaSuccess)
    return reason(e, "creating the CUDA context on device 0 (cudaFree(0))");
  if (cudaError_t e = kernel_image_status(); e != cudaSuccess)
    return reason(e, "loading this build's kernels (cudaFuncGetAttributes)");
  return {};
}

std::shared_ptr<Backend> makeCudaBackend() {
  return std::make_shared<CudaBackend>();
}

}  // namespace attnviz::cuda

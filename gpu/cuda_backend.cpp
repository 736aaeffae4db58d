// The CUDA backend: memory through CudaBuffer, GEMMs through cuBLAS executing the plans of
// gemm_plan.h, everything else through the kernels of kernels.cu. All work is queued on one
// stream; download() and synchronize() wait for it.
#include "cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "cuda_check.h"
#include "device_buffer.h"
#include "error.h"
#include "gemm_plan.h"
#include "kernels.h"

#ifndef ATTNVIZ_CUDA_ARCHITECTURES
#define ATTNVIZ_CUDA_ARCHITECTURES "?"
#endif

namespace attnviz::cuda {

namespace {

std::string versionString(int v) {  // 13000 → "13.0"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string errorText(cudaError_t e) {
  return std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")";
}

ActivationKind kernelActivation(Activation act) {
  switch (act) {
    case Activation::Relu:
      return ActivationKind::Relu;
    case Activation::Gelu:
      return ActivationKind::Gelu;
    case Activation::GeluTanh:
      return ActivationKind::GeluTanh;
    case Activation::Silu:
      return ActivationKind::Silu;
    case Activation::Tanh:
      return ActivationKind::Tanh;
  }
  throw Error(ErrorKind::Backend, "CUDA backend: unknown activation");
}

class CudaBackend final : public Backend {
 public:
  CudaBackend() {
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaGetDeviceProperties(&props_, 0));
    stream_ = makeStream();
    int pools = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0));
    pooled_ = pools != 0;
    if (pooled_) {
      // Keep freed blocks in the pool rather than return them to the driver at every
      // synchronisation: a forward pass frees and re-allocates the same sizes again and again.
      cudaMemPool_t pool = nullptr;
      CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
      uint64_t keep = UINT64_MAX;
      CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    }
    try {
      CUBLAS_CHECK(cublasCreate(&cublas_));
      CUBLAS_CHECK(cublasSetStream(cublas_, stream_.get()));
      // Full FP32 products (no TF32), as PyTorch's default for float32 matmul.
      CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
    } catch (...) {
      destroy();
      throw;
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
           " MiB, runtime " + versionString(runtime) + ", driver " + versionString(driver) +
           ", cuBLAS)";
  }

  // ---- memory ----
  BufferPtr allocate(size_t bytes) override {
    return std::make_unique<CudaBuffer>(bytes, stream_, pooled_);
  }

  void upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset) override {
    checkRange(dst, bytes, offset, "upload");
    if (bytes == 0) return;
    // From pageable host memory the copy is staged before this returns, so `src` may be reused.
    CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst.data()) + offset, src, bytes,
                               cudaMemcpyHostToDevice, stream_.get()));
  }

  void download(const DeviceBuffer& src, void* dst, size_t bytes, size_t offset) override {
    checkRange(src, bytes, offset, "download");
    if (bytes > 0)
      CUDA_CHECK(cudaMemcpyAsync(dst, static_cast<const char*>(src.data()) + offset, bytes,
                                 cudaMemcpyDeviceToHost, stream_.get()));
    CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  void copy(const float* src, float* dst, int64_t n) override {
    if (n <= 0) return;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * sizeof(float),
                               cudaMemcpyDeviceToDevice, stream_.get()));
  }

  void copy_to_host(const float* src, float* dst, int64_t n) override {
    if (n > 0)
      CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * sizeof(float),
                                 cudaMemcpyDeviceToHost, stream_.get()));
    CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  void synchronize() override { CUDA_CHECK(cudaStreamSynchronize(stream_.get())); }

  // ---- ops ----
  void embedding_forward(const int32_t* ids, const float* table, const float* positions, float* out,
                         int B, int T, int d, int pos0, float scale) override {
    CUDA_CHECK(
        cuda::embedding_forward(ids, table, positions, out, B, T, d, pos0, scale, stream_.get()));
  }

  void gather_add_forward(const int32_t* ids, const float* table, float* out, int rows,
                          int d) override {
    CUDA_CHECK(cuda::gather_add_forward(ids, table, out, rows, d, stream_.get()));
  }

  void mean_pool_forward(const float* x, float* y, int B, int T, int d) override {
    CUDA_CHECK(cuda::mean_pool_forward(x, y, B, T, d, stream_.get()));
  }

  void linear_forward(const float* x, const float* weight, const float* bias, float* y, int rows,
                      int in, int out) override {
    run(planLinear(rows, in, out), weight, x, y);
    if (bias) CUDA_CHECK(bias_add_forward(bias, y, rows, out, stream_.get()));
  }

  void attention_scores_forward(HeadsView q, HeadsView k, float* scores, int B, int H, int Tq,
                                int Tk, int d_k, float scale) override {
    run(planScores(q.batch_stride, q.row_stride, k.batch_stride, k.row_stride, B, H, Tq, Tk, d_k,
                   scale),
        k.data, q.data, scores);
  }

  void masked_softmax_forward(const float* scores, const uint8_t* mask, float* probs, int B, int H,
                              int Tq, int Tk, float fill) override {
    CUDA_CHECK(
        cuda::masked_softmax_forward(scores, mask, probs, B, H, Tq, Tk, fill, stream_.get()));
  }

  void attention_context_forward(const float* probs, HeadsView v, float* ctx, int B, int H, int Tq,
                                 int Tk, int d_v) override {
    run(planContext(v.batch_stride, v.row_stride, B, H, Tq, Tk, d_v), v.data, probs, ctx);
  }

  void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, int rows,
                         int d, float eps) override {
    CUDA_CHECK(cuda::layernorm_forward(x, gamma, beta, y, rows, d, eps, stream_.get()));
  }

  void activation_forward(float* x, int64_t n, Activation act) override {
    CUDA_CHECK(cuda::activation_forward(x, n, kernelActivation(act), stream_.get()));
  }

  void residual_forward(const float* x, float* y, int64_t n) override {
    CUDA_CHECK(cuda::residual_forward(x, y, n, stream_.get()));
  }

  void scale_forward(float* x, int64_t n, float s) override {
    CUDA_CHECK(cuda::scale_forward(x, n, s, stream_.get()));
  }

 private:
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

  void destroy() noexcept {
    if (cublas_) (void)cublasDestroy(cublas_);
    cublas_ = nullptr;
  }

  cudaDeviceProp props_{};
  StreamPtr stream_;     // all work of this backend, in order; shared with its buffers
  bool pooled_ = false;  // buffers from the stream-ordered pool (cudaMallocAsync)
  cublasHandle_t cublas_ = nullptr;
};

}  // namespace

std::string deviceUnavailableReason() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    int driver = 0, runtime = 0;
    (void)cudaDriverGetVersion(&driver);
    (void)cudaRuntimeGetVersion(&runtime);
    if (driver == 0)
      return "no NVIDIA driver is installed (cudaGetDeviceCount: " + errorText(error) + ")";
    if (error == cudaErrorInsufficientDriver)
      return "the NVIDIA driver is too old: it supports CUDA " + versionString(driver) +
             ", this build needs CUDA " + versionString(runtime) +
             " (cudaGetDeviceCount: " + errorText(error) + ")";
    return "no CUDA device found (cudaGetDeviceCount: " + errorText(error) + ")";
  }
  if (count == 0) return "no CUDA device found (cudaGetDeviceCount reports 0 devices)";
  const cudaError_t image = kernel_image_status();
  if (image != cudaSuccess) {
    (void)cudaGetLastError();
    cudaDeviceProp props{};
    std::string device = "device 0";
    if (cudaGetDeviceProperties(&props, 0) == cudaSuccess)
      device = std::string(props.name) + " (compute " + std::to_string(props.major) + "." +
               std::to_string(props.minor) + ")";
    (void)cudaGetLastError();
    return device + " cannot run this build's kernels (built for CUDA architectures " +
           ATTNVIZ_CUDA_ARCHITECTURES + "): " + errorText(image);
  }
  return {};
}

std::shared_ptr<Backend> makeCudaBackend() {
  return std::make_shared<CudaBackend>();
}

}  // namespace attnviz::cuda

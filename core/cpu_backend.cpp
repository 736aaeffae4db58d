#include "cpu_backend.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <string>

#include "error.h"
#include "thread_pool.h"

#if ATTNVIZ_HAVE_OPENBLAS
#include <cblas.h>
#endif

// Row kernels (softmax, LayerNorm, element-wise ops) are compiled for several instruction sets
// and the best one for the CPU is picked when the program loads (GCC's function multiversioning),
// so a portable build still runs them with AVX2/AVX-512 where the CPU has them. A -march=native
// build (ATTNVIZ_NATIVE) needs no clones.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__) && \
    !defined(__AVX2__)
#define ATTNVIZ_CPU_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), noinline))
#else
#define ATTNVIZ_CPU_CLONES
#endif

namespace attnviz {

namespace {

// ---- how the work is cut up ----
// Tasks per thread: more than one, so that a thread the system preempts (another process busy
// on its core) takes fewer tasks instead of holding everyone up.
constexpr int kTasksPerThread = 4;
// Matrix products below this many flops run on the calling thread (a job handed to the pool
// costs a few microseconds, tens when the workers are asleep).
constexpr double kParallelFlops = 4e6;
// ... unless they read this many bytes of operands (matrix-vector products are bound by memory).
constexpr double kParallelBytes = 1 << 19;
// Row and element-wise ops: at least this many floats per task.
constexpr int64_t kMinElementsPerTask = 1 << 15;
// Element-wise tasks start at multiples of this many floats, so every element is computed by the
// same (vector) code whatever the thread count: results are identical across thread counts.
constexpr int64_t kElementAlign = 64;

// The one place Eigen maps raw row-major buffers.
using MatrixRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Stride = Eigen::OuterStride<>;
using ConstStridedMapRM = Eigen::Map<const MatrixRM, 0, Stride>;
using StridedMapRM = Eigen::Map<MatrixRM, 0, Stride>;

// Splits [0, n) into `parts` ranges whose inner boundaries are multiples of `align`.
int64_t splitPoint(int64_t n, int64_t parts, int64_t i, int64_t align) {
  if (i >= parts) return n;
  const int64_t at = n * i / parts;
  return std::min(n, at / align * align);
}

// ---- row kernels (vectorised by the compiler; 16 partial sums in a fixed order) ----
constexpr int kLanes = 16;

// e^x in float: Cephes' range reduction x = n·ln2 + r and degree-6 polynomial, 2^n from the bits;
// ≤ 2 ulp for x in [−87.3, 88.7], 0 below (where expf gives denormals or 0), +inf above.
__attribute__((always_inline)) inline float expPoly(float x) {
  x = std::min(x, 88.7f);
  const float t = x * 1.44269504088896341f + 12582912.0f;  // round(x / ln2) in the low bits
  const float n = t - 12582912.0f;
  int32_t ni;
  std::memcpy(&ni, &t, 4);
  ni -= 0x4B400000;
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n as two factors so that n = 128 (x near 88.7) does not overflow the exponent field.
  const uint32_t half = (uint32_t)((ni >> 1) + 127) << 23, rest = (uint32_t)((ni - (ni >> 1)) + 127)
                                                                  << 23;
  float s1, s2;
  std::memcpy(&s1, &half, 4);
  std::memcpy(&s2, &rest, 4);
  return x < -87.33654f ? 0.0f : p * s1 * s2;
}

// p = softmax(where(m, fill, s)) over one row of n keys; a row whose every entry is −∞ gives 0s.
ATTNVIZ_CPU_CLONES void softmaxRow(const float* s, const uint8_t* m, float* p, int n, float fill) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float lane_max[kLanes];
  std::fill(lane_max, lane_max + kLanes, kNegInf);
  int j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float v = m[j + l] ? fill : s[j + l];
      p[j + l] = v;
      lane_max[l] = lane_max[l] < v ? v : lane_max[l];
    }
  float mx = kNegInf;
  for (int l = 0; l < kLanes; ++l) mx = mx < lane_max[l] ? lane_max[l] : mx;
  for (; j < n; ++j) {
    const float v = m[j] ? fill : s[j];
    p[j] = v;
    mx = mx < v ? v : mx;
  }
  if (mx == kNegInf) {  // every key masked with −∞
    std::fill(p, p + n, 0.0f);
    return;
  }
  float lane_sum[kLanes] = {};
  j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float e = expPoly(p[j + l] - mx);
      p[j + l] = e;
      lane_sum[l] += e;
    }
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += lane_sum[l];
  for (; j < n; ++j) {
    const float e = expPoly(p[j] - mx);
    p[j] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
  for (j = 0; j < n; ++j) p[j] *= inv;
}

// Σ x[0..n) with 16 partial sums.
__attribute__((always_inline)) inline float rowSum(const float* x, int n, float shift) {
  float lane[kLanes] = {};
  int j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += x[j + l] - shift;
  float sum = 0.0f;
  for (int l = 0; l < kLanes; ++l) sum += lane[l];
  for (; j < n; ++j) sum += x[j] - shift;
  return sum;
}

// y = (x − mean) / sqrt(var + eps) · gamma + beta over rows [r0, r1) of width d (x may alias y).
ATTNVIZ_CPU_CLONES void layernormRows(const float* x, const float* gamma, const float* beta,
                                      float* y, int64_t r0, int64_t r1, int d, float eps) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    const float mean = rowSum(xr, d, 0.0f) / (float)d;
    float lane[kLanes] = {};
    int j = 0;
    for (; j + kLanes <= d; j += kLanes)
      for (int l = 0; l < kLanes; ++l) lane[l] += (xr[j + l] - mean) * (xr[j + l] - mean);
    float var = 0.0f;
    for (int l = 0; l < kLanes; ++l) var += lane[l];
    for (; j < d; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= (float)d;
    const float rstd = 1.0f / std::sqrt(var + eps);
    if (gamma)
      for (j = 0; j < d; ++j) yr[j] = (xr[j] - mean) * rstd * gamma[j] + beta[j];
    else
      for (j = 0; j < d; ++j) yr[j] = (xr[j] - mean) * rstd;
  }
}

ATTNVIZ_CPU_CLONES void addInPlace(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

ATTNVIZ_CPU_CLONES void addBiasRows(float* y, int64_t ld, const float* bias, int rows, int cols) {
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) y[r * ld + c] += bias[c];
}

ATTNVIZ_CPU_CLONES void activationSpan(float* x, int64_t n, Activation act) {
  switch (act) {
    case Activation::Relu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] < 0 ? 0.0f : x[i];  // NaN stays NaN
      break;
    case Activation::Gelu:
      for (int64_t i = 0; i < n; ++i)
        x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
      break;
    case Activation::GeluTanh: {
      const float k = 0.79788456080286536f;  // sqrt(2 / π)
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        x[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
      }
      break;
    }
    case Activation::Silu:
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
      break;
    case Activation::Tanh:
      for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
      break;
  }
}

// The sum of 16 lanes, halving (vectorises to a few adds and shuffles).
__attribute__((always_inline)) inline float laneSum(float* lane) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
  return lane[0];
}

// y[n] = alpha · B[n, :] · x  for n < N  (B: [N, K], leading dimension ldb). Bound by reading B;
// one row at a time streams best (measured against 2, 4 and 8 rows and Eigen's GEMV).
ATTNVIZ_CPU_CLONES void gemvRows(int N, int K, float alpha, const float* B, int64_t ldb,
                                 const float* x, float* y) {
  for (int n = 0; n < N; ++n) {
    const float* b = B + n * ldb;
    float lane[kLanes] = {};
    int k = 0;
    for (; k + kLanes <= K; k += kLanes)
      for (int l = 0; l < kLanes; ++l) lane[l] += b[k + l] * x[k + l];
    float sum = laneSum(lane);
    for (; k < K; ++k) sum += b[k] * x[k];
    y[n] = alpha * sum;
  }
}

// y[c] = alpha · Σ_k x[k] · B[k, c]  for c < N  (B: [K, N], leading dimension ldb).
ATTNVIZ_CPU_CLONES void gemvColumns(int N, int K, float alpha, const float* B, int64_t ldb,
                                    const float* x, float* y) {
  std::fill(y, y + N, 0.0f);
  for (int k = 0; k < K; ++k) {
    const float xv = x[k];
    const float* b = B + k * ldb;
    for (int c = 0; c < N; ++c) y[c] += xv * b[c];
  }
  if (alpha != 1.0f)
    for (int c = 0; c < N; ++c) y[c] *= alpha;
}

// ---- matrix products: C[M, N] = alpha · A[M, K] · op(B), row-major with leading dimensions ----
// op(B) = B[N, K]ᵀ when b_transposed, else B[K, N]. OpenBLAS when built with it, else Eigen.
void gemm(bool b_transposed, int M, int N, int K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    for (int i = 0; i < M; ++i) std::fill(C + i * ldc, C + i * ldc + N, 0.0f);
    return;
  }
  if (M == 1) {  // one row: a matrix-vector product, bound by reading B
    if (b_transposed)
      gemvRows(N, K, alpha, B, ldb, A, C);
    else
      gemvColumns(N, K, alpha, B, ldb, A, C);
    return;
  }
#if ATTNVIZ_HAVE_OPENBLAS
  // Leading dimensions of one-row operands are never read, but BLAS checks them.
  if (b_transposed && N == 1) ldb = std::max<int64_t>(ldb, K);
  if (!b_transposed && K == 1) ldb = std::max<int64_t>(ldb, N);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, b_transposed ? CblasTrans : CblasNoTrans, M, N, K, alpha,
              A, (int)lda, B, (int)ldb, 0.0f, C, (int)ldc);
#else
  ConstStridedMapRM a(A, M, K, Stride(lda));
  StridedMapRM c(C, M, N, Stride(ldc));
  if (b_transposed)
    c.noalias() = alpha * (a * ConstStridedMapRM(B, N, K, Stride(ldb)).transpose());
  else
    c.noalias() = alpha * (a * ConstStridedMapRM(B, K, N, Stride(ldb)));
#endif
}

class HostBuffer final : public DeviceBuffer {
 public:
  explicit HostBuffer(size_t bytes) : bytes_(bytes) {
    // 64-byte aligned, zero-filled; at least one byte so data() is never null.
    data_ = static_cast<uint8_t*>(
        ::operator new[](std::max<size_t>(bytes, 1), std::align_val_t(64), std::nothrow));
    if (!data_)
      throw Error(ErrorKind::Backend,
                  "out of host memory allocating " + std::to_string(bytes >> 20) + " MiB");
    std::memset(data_, 0, std::max<size_t>(bytes, 1));
  }
  ~HostBuffer() override { ::operator delete[](data_, std::align_val_t(64)); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  size_t bytes() const override { return bytes_; }
  void* data() override { return data_; }
  const void* data() const override { return data_; }

 private:
  size_t bytes_;
  uint8_t* data_;
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) {
#if ATTNVIZ_HAVE_OPENBLAS
    // OpenBLAS's own threads wait by spinning; ours sleep. It runs single-threaded inside our
    // tasks (its pthread build is safe to call from several threads at once).
    openblas_set_num_threads(1);
#endif
    setThreads(threads);
  }

  bool hostVisible() const override {
    return true;
  }

  std::string name() const override {
    return "cpu";
  }
  std::string description() const override {
#if ATTNVIZ_HAVE_OPENBLAS
    std::string lib = std::string("OpenBLAS ") + openblas_get_corename();
#else
    std::string lib =
        "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION);
#endif
    return "CPU (" + lib + ", " + std::to_string(threads_) +
           (threads_ == 1 ? " thread)" : " threads)");
  }

  void setThreads(int n) override {
    n = n <= 0 ? availableCores() : std::min(n, 1024);
    if (pool_ && n == threads_) return;
    pool_.reset();  // joins the old workers first
    pool_ = std::make_unique<ThreadPool>(n);
    threads_ = n;
  }
  int threads() const override {
    return threads_;
  }

  BufferPtr allocate(size_t bytes) override {
    return std::make_unique<HostBuffer>(bytes);
  }
  void upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset) override {
    if (offset + bytes > dst.bytes()) throw Error(ErrorKind::Backend, "upload out of bounds");
    if (bytes) std::memcpy(dst.u8() + offset, src, bytes);
  }
  void download(const DeviceBuffer& src, void* dst, size_t bytes, size_t offset) override {
    if (offset + bytes > src.bytes()) throw Error(ErrorKind::Backend, "download out of bounds");
    if (bytes) std::memcpy(dst, src.u8() + offset, bytes);
  }
  void copy(const float* src, float* dst, int64_t n) override {
    if (n > 0) std::memmove(dst, src, (size_t)n * sizeof(float));
  }
  void copy_to_host(const float* src, float* dst, int64_t n) override {
    if (n > 0) std::memcpy(dst, src, (size_t)n * sizeof(float));
  }

  // out[b, t, :] = table[ids[b, t], :] · scale + positions[pos0 + t, :]
  void embedding_forward(const int32_t* ids, const float* table, const float* positions, float* out,
                         int B, int T, int d, int pos0, float scale) override {
    forRows((int64_t)B * T, d, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int t = (int)(r % T);
        const float* e = table + (size_t)ids[r] * d;
        float* o = out + r * d;
        if (positions) {
          const float* p = positions + (size_t)(pos0 + t) * d;
          for (int c = 0; c < d; ++c) o[c] = e[c] * scale + p[c];
        } else {
          for (int c = 0; c < d; ++c) o[c] = e[c] * scale;
        }
      }
    });
  }

  // out[r, :] += table[ids[r], :]
  void gather_add_forward(const int32_t* ids, const float* table, float* out, int rows,
                          int d) override {
    for (int r = 0; r < rows; ++r) {
      const float* e = table + (size_t)ids[r] * d;
      float* o = out + (size_t)r * d;
      for (int c = 0; c < d; ++c) o[c] += e[c];
    }
  }

  // y[b, :] = mean over t of x[b, t, :]
  void mean_pool_forward(const float* x, float* y, int B, int T, int d) override {
    for (int b = 0; b < B; ++b) {
      float* yb = y + (size_t)b * d;
      std::fill(yb, yb + d, 0.0f);
      for (int t = 0; t < T; ++t) {
        const float* xr = x + ((size_t)b * T + t) * d;
        for (int c = 0; c < d; ++c) yb[c] += xr[c];
      }
      const float inv = 1.0f / (float)T;
      for (int c = 0; c < d; ++c) yb[c] *= inv;
    }
  }

  // y[rows, out] = x[rows, in] · W[out, in]ᵀ (+ bias): tiles of y, one product each.
  void linear_forward(const float* x, const float* weight, const float* bias, float* y, int rows,
                      int in, int out) override {
    if (rows <= 0 || out <= 0) return;
    int row_blocks = 1, col_blocks = 1;
    if (shared(2.0 * rows * in * out, 4.0 * ((double)rows + out) * in))
      tileGrid(rows, out, &row_blocks, &col_blocks);
    pool_->run((int64_t)row_blocks * col_blocks, [&](int64_t task) {
      const int rb = (int)(task / col_blocks), cb = (int)(task % col_blocks);
      const int r0 = (int)splitPoint(rows, row_blocks, rb, 8),
                r1 = (int)splitPoint(rows, row_blocks, rb + 1, 8);
      const int c0 = (int)splitPoint(out, col_blocks, cb, 16),
                c1 = (int)splitPoint(out, col_blocks, cb + 1, 16);
      float* yt = y + (int64_t)r0 * out + c0;
      gemm(true, r1 - r0, c1 - c0, in, 1.0f, x + (int64_t)r0 * in, in, weight + (int64_t)c0 * in,
           in, yt, out);
      if (bias) addBiasRows(yt, out, bias + c0, r1 - r0, c1 - c0);
    });
  }

  // scores[b, h, i, j] = scale · q_h[b, i, :] · k_h[b, j, :]: one product per (b, h, query rows).
  void attention_scores_forward(HeadsView q, HeadsView k, float* scores, int B, int H, int Tq,
                                int Tk, int d_k, float scale) override {
    const bool share = shared(2.0 * B * H * Tq * Tk * d_k, 4.0 * B * H * ((double)Tq + Tk) * d_k);
    const int blocks = share ? queryBlocks(B, H, Tq) : 1;
    runTasks((int64_t)B * H * blocks, share, [&](int64_t task) {
      const int64_t bh = task / blocks, b = bh / H, h = bh % H;
      const int i0 = (int)splitPoint(Tq, blocks, task % blocks, 8),
                i1 = (int)splitPoint(Tq, blocks, task % blocks + 1, 8);
      gemm(true, i1 - i0, Tk, d_k, scale, q.data + b * q.batch_stride + i0 * q.row_stride + h * d_k,
           q.row_stride, k.data + b * k.batch_stride + h * d_k, k.row_stride,
           scores + (bh * Tq + i0) * Tk, Tk);
    });
  }

  void masked_softmax_forward(const float* scores, const uint8_t* mask, float* probs, int B, int H,
                              int Tq, int Tk, float fill) override {
    forRows((int64_t)B * H * Tq, Tk, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / ((int64_t)H * Tq), i = r % Tq;
        softmaxRow(scores + r * Tk, mask + (b * Tq + i) * Tk, probs + r * Tk, Tk, fill);
      }
    });
  }

  // ctx[b, i, h·d_v + c] = Σ_j probs[b, h, i, j] · v_h[b, j, c]: one product per (b, h, rows).
  void attention_context_forward(const float* probs, HeadsView v, float* ctx, int B, int H, int Tq,
                                 int Tk, int d_v) override {
    const bool share = shared(2.0 * B * H * Tq * Tk * d_v, 4.0 * B * H * ((double)Tq + d_v) * Tk);
    const int blocks = share ? queryBlocks(B, H, Tq) : 1;
    const int64_t width = (int64_t)H * d_v;
    runTasks((int64_t)B * H * blocks, share, [&](int64_t task) {
      const int64_t bh = task / blocks, b = bh / H, h = bh % H;
      const int i0 = (int)splitPoint(Tq, blocks, task % blocks, 8),
                i1 = (int)splitPoint(Tq, blocks, task % blocks + 1, 8);
      gemm(false, i1 - i0, d_v, Tk, 1.0f, probs + (bh * Tq + i0) * Tk, Tk,
           v.data + b * v.batch_stride + h * d_v, v.row_stride,
           ctx + (b * Tq + i0) * width + h * d_v, width);
    });
  }

  void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, int rows,
                         int d, float eps) override {
    forRows(rows, d,
            [&](int64_t r0, int64_t r1) { layernormRows(x, gamma, beta, y, r0, r1, d, eps); });
  }

  void activation_forward(float* x, int64_t n, Activation act) override {
    forElements(n, [&](int64_t i0, int64_t i1) { activationSpan(x + i0, i1 - i0, act); });
  }

  void residual_forward(const float* x, float* y, int64_t n) override {
    forElements(n, [&](int64_t i0, int64_t i1) { addInPlace(x + i0, y + i0, i1 - i0); });
  }

  void scale_forward(float* x, int64_t n, float s) override {
    forElements(n, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) x[i] *= s;
    });
  }

 private:
  // Rows [0, rows) of `width` floats each, in tasks of whole rows.
  template <class F>
  void forRows(int64_t rows, int64_t width, F&& f) {
    if (rows <= 0) return;
    const int64_t per_task =
        std::max<int64_t>(1, kMinElementsPerTask / std::max<int64_t>(width, 1));
    const int64_t tasks =
        std::clamp<int64_t>(rows / per_task, 1, (int64_t)threads_ * kTasksPerThread);
    pool_->run(tasks, [&](int64_t t) {
      const int64_t r0 = splitPoint(rows, tasks, t, 1), r1 = splitPoint(rows, tasks, t + 1, 1);
      if (r1 > r0) f(r0, r1);
    });
  }

  // Elements [0, n) in tasks starting at multiples of kElementAlign.
  template <class F>
  void forElements(int64_t n, F&& f) {
    if (n <= 0) return;
    const int64_t tasks =
        std::clamp<int64_t>(n / kMinElementsPerTask, 1, (int64_t)threads_ * kTasksPerThread);
    pool_->run(tasks, [&](int64_t t) {
      const int64_t i0 = splitPoint(n, tasks, t, kElementAlign),
                    i1 = splitPoint(n, tasks, t + 1, kElementAlign);
      if (i1 > i0) f(i0, i1);
    });
  }

  // The grid of y tiles for a rows × cols product: kTasksPerThread tiles per thread where the
  // shape allows (at least 16 rows and 64 columns each), and among grids with that many tiles the
  // one that repacks the least input (each tile packs its rows of x and its rows of W: depth ·
  // (rows · column blocks + cols · row blocks) floats).
  void tileGrid(int rows, int cols, int* row_blocks, int* col_blocks) const {
    const int want = threads_ * kTasksPerThread;
    const int max_rb = std::max(1, rows / 16), max_cb = std::max(1, cols / 64);
    int best_tiles = 0;
    double best_cost = 0;
    for (int cb = 1; cb <= std::min(want, max_cb); ++cb) {
      const int rb = std::min(max_rb, (want + cb - 1) / cb);
      const int tiles = std::min(rb * cb, want);
      const double cost = (double)rows * cb + (double)cols * rb;
      if (tiles > best_tiles || (tiles == best_tiles && cost < best_cost))
        best_tiles = tiles, best_cost = cost, *row_blocks = rb, *col_blocks = cb;
    }
  }

  // Query-row blocks per (batch, head) for the attention products: enough tasks for the threads.
  int queryBlocks(int B, int H, int Tq) const {
    const int64_t heads = (int64_t)B * H, want = (int64_t)threads_ * kTasksPerThread;
    if (threads_ == 1 || heads >= want) return 1;
    return (int)std::clamp<int64_t>((want + heads - 1) / heads, 1, std::max(1, Tq / 32));
  }

  // Whether a product of this many flops reading this many bytes is worth sharing out.
  bool shared(double flops, double bytes) const {
    return threads_ > 1 && (flops >= kParallelFlops || bytes >= kParallelBytes);
  }

  // Tasks [0, n) on the pool, or on this thread when the op is too small to share.
  template <class F>
  void runTasks(int64_t n, bool share, F&& f) {
    if (share) {
      pool_->run(n, f);
    } else {
      for (int64_t i = 0; i < n; ++i) f(i);
    }
  }

  int threads_ = 1;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace

std::shared_ptr<Backend> makeCpuBackend(int threads) {
  return std::make_shared<CpuBackend>(threads);
}

}  // namespace attnviz

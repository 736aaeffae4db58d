#include "compute/cpu_backend.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "base/counter_rng.h"
#include "base/error.h"
#include "base/host_memory.h"
#include "compute/position_buckets.h"
#include "compute/thread_pool.h"

#if ATTNVIZ_HAVE_OPENBLAS
#include <cblas.h>
#endif

// Row kernels (softmax, the norms, element-wise ops) are compiled for several instruction sets
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
// A matrix product's output tiles per thread: fewer, as each tile repacks its rows of both
// operands (at 512 tokens on 2 threads, 2 tiles a thread instead of 4 cut OpenBLAS's packing from
// 15 % of the pass and took 3-5 % off its time), yet more than one, so that a thread slowed by
// another process takes fewer of them.
constexpr int kTilesPerThread = 2;
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
__attribute__((always_inline)) inline float expPoly(float x_in) {
  // Clamped on both sides before the bit tricks: far below −88 the rounding constant's float
  // turns small and negative, and its bits minus the constant's overflow an int32 (UBSan, fuzzed
  // weights); the result there is 0 anyway.
  const float x = std::max(std::min(x_in, 88.7f), -88.0f);
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
  return x_in < -87.33654f  ? 0.0f
         : x_in > 88.72283f ? std::numeric_limits<float>::infinity()
                            : p * s1 * s2;
}

// p = softmax(where(m, fill, s)) over one row of n keys; a row whose every entry is −∞ gives 0s,
// a row with a NaN (or +∞) score gives NaNs, as PyTorch's does. Three passes, each vectorised:
// the masked row and its maximum, the exponentials and their sum, the division.
ATTNVIZ_CPU_CLONES void softmaxRow(const float* __restrict s, const uint8_t* __restrict m,
                                   float* __restrict p, int n, float fill) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int k = 0; k < n; ++k) p[k] = m[k] ? fill : s[k];
  float lane_max[kLanes];
  std::fill(lane_max, lane_max + kLanes, kNegInf);
  int j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane_max[l] = lane_max[l] < p[j + l] ? p[j + l] : lane_max[l];
  float mx = kNegInf;
  for (int l = 0; l < kLanes; ++l) mx = mx < lane_max[l] ? lane_max[l] : mx;
  for (; j < n; ++j) mx = mx < p[j] ? p[j] : mx;
  // A NaN never wins the comparisons above: a row of NaNs and −∞s has the maximum −∞.
  if (mx == kNegInf) {  // every key masked with −∞ (or NaN)
    bool nan = false;
    for (int k = 0; k < n; ++k) nan |= p[k] != p[k];
    std::fill(p, p + n, nan ? std::numeric_limits<float>::quiet_NaN() : 0.0f);
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
  // A NaN score (or a +∞ one: ∞ − ∞) made its exponential, and so the sum, NaN.
  if (sum != sum) {
    std::fill(p, p + n, std::numeric_limits<float>::quiet_NaN());
    return;
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

// The sum of 16 lanes, halving (vectorises to a few adds and shuffles).
__attribute__((always_inline)) inline float laneSum(float* lane) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
  return lane[0];
}

// Σ a[k] · b[k] for k < n with 16 partial sums.
__attribute__((always_inline)) inline float rowDot(const float* a, const float* b, int n) {
  float lane[kLanes] = {};
  int k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += a[k + l] * b[k + l];
  float sum = laneSum(lane);
  for (; k < n; ++k) sum += a[k] * b[k];
  return sum;
}
// How norm_forward normalises one row: x̂ = (x − center) · scale; and what divides Σ dx̂ ⊙ x̂ in
// the input's gradient (backend.h): d for LayerNorm and RmsNorm, (d − 1)·std·scale for
// LayerNormStd (0 for a row of equal values: that term is 0 then).
struct RowNorm {
  float center, scale, grad_div;
};

// The row's RowNorm for `kind`, two passes (the center, then the squares about it) as PyTorch.
__attribute__((always_inline)) inline RowNorm rowNorm(NormKind kind, const float* x, int d,
                                                      float eps) {
  const float center = kind == NormKind::RmsNorm ? 0.0f : rowSum(x, d, 0.0f) / (float)d;
  float lane[kLanes] = {};
  int j = 0;
  for (; j + kLanes <= d; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += (x[j + l] - center) * (x[j + l] - center);
  float squares = 0.0f;
  for (int l = 0; l < kLanes; ++l) squares += lane[l];
  for (; j < d; ++j) squares += (x[j] - center) * (x[j] - center);
  if (kind == NormKind::LayerNormStd) {
    const float std_dev = std::sqrt(squares / (float)(d - 1));
    const float scale = 1.0f / (std_dev + eps);
    return {center, scale, (float)(d - 1) * std_dev * scale};
  }
  return {center, 1.0f / std::sqrt(squares / (float)d + eps), (float)d};
}

// y = x̂ · gamma + beta over rows [r0, r1) of width d (x may alias y; beta only with gamma).
ATTNVIZ_CPU_CLONES void normRows(NormKind kind, const float* x, const float* gamma,
                                 const float* beta, float* y, int64_t r0, int64_t r1, int d,
                                 float eps) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    const RowNorm n = rowNorm(kind, xr, d, eps);
    if (gamma && beta)
      for (int j = 0; j < d; ++j) yr[j] = (xr[j] - n.center) * n.scale * gamma[j] + beta[j];
    else if (gamma)
      for (int j = 0; j < d; ++j) yr[j] = (xr[j] - n.center) * n.scale * gamma[j];
    else
      for (int j = 0; j < d; ++j) yr[j] = (xr[j] - n.center) * n.scale;
  }
}

// One head's values: g holds dy and is overwritten by dx = scale · (dx̂ − m − x̂ · Σ(dx̂ ⊙ x̂) /
// grad_div), as normBackwardRows computes it; dgamma += dy ⊙ x̂ (when given).
void headNormBackwardInPlace(NormKind kind, const float* x, const float* gamma, float* g,
                             float* dgamma, int d, float eps) {
  const RowNorm n = rowNorm(kind, x, d, eps);
  float sum_a = 0.0f, sum_b = 0.0f;
  for (int j = 0; j < d; ++j) {
    const float xh = (x[j] - n.center) * n.scale;
    const float dxh = gamma ? g[j] * gamma[j] : g[j];
    sum_a += dxh;
    sum_b += dxh * xh;
    if (dgamma) dgamma[j] += g[j] * xh;
  }
  const float mean_dxhat = kind == NormKind::RmsNorm ? 0.0f : sum_a / (float)d;
  const float k = n.grad_div > 0.0f ? sum_b / n.grad_div : 0.0f;
  for (int j = 0; j < d; ++j) {
    const float xh = (x[j] - n.center) * n.scale;
    const float dxh = gamma ? g[j] * gamma[j] : g[j];
    g[j] = n.scale * (dxh - mean_dxhat - xh * k);
  }
}

// Backward of normRows over rows [r0, r1), from the input x: dx̂ = dy ⊙ gamma,
// dx += scale · (dx̂ − m − x̂ · Σ(dx̂ ⊙ x̂) / grad_div) with m = mean(dx̂) (0 for RmsNorm); with gamma,
// the rows' Σ dy ⊙ x̂ and Σ dy are added to dgamma and dbeta (this range's own sums; may be null).
ATTNVIZ_CPU_CLONES void normBackwardRows(NormKind kind, const float* dy, const float* x,
                                         const float* gamma, float* dx, float* dgamma, float* dbeta,
                                         int64_t r0, int64_t r1, int d, float eps) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * d;
    const float* g = dy + r * d;
    const RowNorm n = rowNorm(kind, xr, d, eps);
    float lane_a[kLanes] = {}, lane_b[kLanes] = {};  // Σ dx̂ and Σ dx̂ ⊙ x̂
    int j = 0;
    for (; j + kLanes <= d; j += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const float xh = (xr[j + l] - n.center) * n.scale;
        const float dxh = gamma ? g[j + l] * gamma[j + l] : g[j + l];
        lane_a[l] += dxh;
        lane_b[l] += dxh * xh;
      }
    float sum_a = laneSum(lane_a), sum_b = laneSum(lane_b);
    for (; j < d; ++j) {
      const float xh = (xr[j] - n.center) * n.scale;
      const float dxh = gamma ? g[j] * gamma[j] : g[j];
      sum_a += dxh;
      sum_b += dxh * xh;
    }
    const float mean_dxhat = kind == NormKind::RmsNorm ? 0.0f : sum_a / (float)d;
    const float k = n.grad_div > 0.0f ? sum_b / n.grad_div : 0.0f;
    if (dx) {
      float* o = dx + r * d;
      for (j = 0; j < d; ++j) {
        const float xh = (xr[j] - n.center) * n.scale;
        const float dxh = gamma ? g[j] * gamma[j] : g[j];
        o[j] += n.scale * (dxh - mean_dxhat - xh * k);
      }
    }
    if (gamma && dgamma)
      for (j = 0; j < d; ++j) dgamma[j] += g[j] * ((xr[j] - n.center) * n.scale);
    if (gamma && dbeta)
      for (j = 0; j < d; ++j) dbeta[j] += g[j];
  }
}

// Rotates the pairs of `heads` heads of d_head values (head h at x + h·d_head) by the angles whose
// cosines and sines are c, s [d_head/2] (sign −1: by minus those angles, rope_backward).
ATTNVIZ_CPU_CLONES void ropeRow(float* x, const float* c, const float* s, int heads, int d_head,
                                RopeLayout layout, float sign) {
  const int half = d_head / 2;
  for (int h = 0; h < heads; ++h) {
    float* head = x + (int64_t)h * d_head;
    if (layout == RopeLayout::Halves) {
      float* second = head + half;
      for (int i = 0; i < half; ++i) {
        const float a = head[i], b = second[i], si = sign * s[i];
        head[i] = a * c[i] - b * si;
        second[i] = a * si + b * c[i];
      }
    } else {
      for (int i = 0; i < half; ++i) {
        const float a = head[2 * i], b = head[2 * i + 1], si = sign * s[i];
        head[2 * i] = a * c[i] - b * si;
        head[2 * i + 1] = a * si + b * c[i];
      }
    }
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
      // ½·v·(1 + tanh u) = v / (1 + e^(−2u)): one expPoly, which vectorises (std::tanh does not:
      // it took 9 % of a 1024-token pass of GPT-2 small), and no cancellation in 1 + tanh u.
      const float k2 = -2.0f * 0.79788456080286536f;  // −2·sqrt(2 / π)
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        x[i] = v / (1.0f + expPoly(k2 * (v + 0.044715f * v * v * v)));
      }
      break;
    }
    case Activation::Silu:  // vectorised through expPoly, as above
      for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + expPoly(-x[i]));
      break;
    case Activation::Tanh:
      for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
      break;
  }
}

// dx[i] = dy[i] · act'(x[i]) for i < n (dx may alias dy).
ATTNVIZ_CPU_CLONES void activationBackwardSpan(const float* x, const float* dy, float* dx,
                                               int64_t n, Activation act) {
  switch (act) {
    case Activation::Relu:
      for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0 ? dy[i] : 0.0f;
      break;
    case Activation::Gelu:
      // d/dx x·Φ(x) = Φ(x) + x·φ(x)
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        const float cdf = 0.5f * (1.0f + std::erf(v * 0.70710678118654752f));
        const float pdf = 0.39894228040143268f * std::exp(-0.5f * v * v);
        dx[i] = dy[i] * (cdf + v * pdf);
      }
      break;
    case Activation::GeluTanh: {
      // u = k·(x + 0.044715·x³): d/dx ½x(1 + tanh u) = ½(1 + tanh u) + ½x·(1 − tanh²u)·u'
      const float k = 0.79788456080286536f;  // sqrt(2 / π)
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        const float t = std::tanh(k * (v + 0.044715f * v * v * v));
        const float du = k * (1.0f + 3.0f * 0.044715f * v * v);
        dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
      }
      break;
    }
    case Activation::Silu:
      // d/dx x·σ(x) = σ(x)·(1 + x·(1 − σ(x)))
      for (int64_t i = 0; i < n; ++i) {
        const float sg = 1.0f / (1.0f + std::exp(-x[i]));
        dx[i] = dy[i] * sg * (1.0f + x[i] * (1.0f - sg));
      }
      break;
    case Activation::Tanh:
      for (int64_t i = 0; i < n; ++i) {
        const float t = std::tanh(x[i]);
        dx[i] = dy[i] * (1.0f - t * t);
      }
      break;
  }
}

// y = act(gate) ⊙ up for one row x = [gate | up] of 2f values.
ATTNVIZ_CPU_CLONES void gatedRow(const float* x, float* y, int f, Activation act) {
  std::memcpy(y, x, (size_t)f * sizeof(float));
  activationSpan(y, f, act);
  for (int c = 0; c < f; ++c) y[c] *= x[f + c];
}

// Its backward for one row (written): d gate = dy ⊙ up ⊙ act'(gate), d up = dy ⊙ act(gate).
ATTNVIZ_CPU_CLONES void gatedBackwardRow(const float* x, const float* dy, float* dx, int f,
                                         Activation act) {
  float* dgate = dx;
  float* dup = dx + f;
  activationBackwardSpan(x, dy, dgate, f, act);
  for (int c = 0; c < f; ++c) dgate[c] *= x[f + c];
  std::memcpy(dup, x, (size_t)f * sizeof(float));
  activationSpan(dup, f, act);
  for (int c = 0; c < f; ++c) dup[c] *= dy[c];
}

// Backward of softmaxRow over one row of n keys: o = p ⊙ (g − Σ p·g), 0 where masked (o may
// alias g).
ATTNVIZ_CPU_CLONES void softmaxBackwardRow(const float* p, const float* g, const uint8_t* m,
                                           float* o, int n) {
  const float dot = rowDot(p, g, n);
  for (int j = 0; j < n; ++j) o[j] = m[j] ? 0.0f : p[j] * (g[j] - dot);
}

// One Adam / AdamW step over n parameters (Backend::adamw_update).
ATTNVIZ_CPU_CLONES void adamwSpan(float* __restrict p, const float* __restrict grads,
                                  float* __restrict m, float* __restrict v, int64_t n,
                                  const AdamStep& a) {
  const float step_size = a.lr / a.bias_correction1;
  const float inv_bc2_sqrt = 1.0f / std::sqrt(a.bias_correction2);
  const float decay = a.decoupled ? 1.0f - a.lr * a.weight_decay : 1.0f;
  const float l2 = a.decoupled ? 0.0f : a.weight_decay;
  for (int64_t i = 0; i < n; ++i) {
    const float g = grads[i] * a.grad_scale + l2 * p[i];
    m[i] += (1.0f - a.beta1) * (g - m[i]);
    v[i] = a.beta2 * v[i] + (1.0f - a.beta2) * g * g;
    p[i] = p[i] * decay - step_size * m[i] / (std::sqrt(v[i]) * inv_bc2_sqrt + a.eps);
  }
}

// Σ x[i]² for i < n in double, with 16 partial sums.
ATTNVIZ_CPU_CLONES double sumSquaresSpan(const float* x, int64_t n) {
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += (double)x[i + l] * x[i + l];
  double sum = 0;
  for (int l = 0; l < kLanes; ++l) sum += lane[l];
  for (; i < n; ++i) sum += (double)x[i] * x[i];
  return sum;
}

// y[n] = alpha · B[n, :] · x  for n < N  (B: [N, K], leading dimension ldb). Bound by reading B;
// one row at a time streams best (measured against 2, 4 and 8 rows and Eigen's GEMV).
ATTNVIZ_CPU_CLONES void gemvRows(int N, int K, float alpha, const float* B, int64_t ldb,
                                 const float* x, float* y) {
  for (int n = 0; n < N; ++n) y[n] = alpha * rowDot(B + n * ldb, x, K);
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

// C[M, N] += alpha · op(A) · op(B) (the backward's products): op(A) = A[K, M]ᵀ when a_transposed,
// else A[M, K]; op(B) = B[N, K]ᵀ when b_transposed, else B[K, N]. Row-major, leading dimensions.
void gemmAccumulate(bool a_transposed, bool b_transposed, int M, int N, int K, float alpha,
                    const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                    int64_t ldc) {
  if (M <= 0 || N <= 0 || K <= 0) return;
#if ATTNVIZ_HAVE_OPENBLAS
  // Leading dimensions of one-row operands are never read, but BLAS checks them.
  if ((a_transposed ? K : M) == 1) lda = std::max<int64_t>(lda, a_transposed ? M : K);
  if ((b_transposed ? N : K) == 1) ldb = std::max<int64_t>(ldb, b_transposed ? K : N);
  if (M == 1) ldc = std::max<int64_t>(ldc, N);
  cblas_sgemm(CblasRowMajor, a_transposed ? CblasTrans : CblasNoTrans,
              b_transposed ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, (int)lda, B, (int)ldb,
              1.0f, C, (int)ldc);
#else
  StridedMapRM c(C, M, N, Stride(ldc));
  auto product = [&](const auto& a) {
    if (b_transposed)
      c.noalias() += alpha * (a * ConstStridedMapRM(B, N, K, Stride(ldb)).transpose());
    else
      c.noalias() += alpha * (a * ConstStridedMapRM(B, K, N, Stride(ldb)));
  };
  if (a_transposed)
    product(ConstStridedMapRM(A, K, M, Stride(lda)).transpose());
  else
    product(ConstStridedMapRM(A, M, K, Stride(lda)));
#endif
}

class HostBuffer final : public DeviceBuffer {
 public:
  explicit HostBuffer(size_t bytes) : bytes_(bytes) {
    // 64-byte aligned (large ones on huge pages), zero-filled; never null.
    data_ = static_cast<uint8_t*>(allocateHost(bytes));
    if (!data_)
      throw Error(ErrorKind::Backend,
                  "out of host memory allocating " + std::to_string(bytes >> 20) + " MiB");
    std::memset(data_, 0, std::max<size_t>(bytes, 1));
  }
  ~HostBuffer() override { freeHost(data_, bytes_); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  size_t bytes() const override { return bytes_; }
  void* data() override { return data_; }
  const void* data() const override { return data_; }

 private:
  size_t bytes_;
  uint8_t* data_;
};

// The bucket of every offset o − (Tq − 1) = j − i of a [Tq, Tk] block whose query i sits at
// position q0 + i: entry o is the bucket of key j = o − (Tq − 1) + i for any query i.
std::vector<int> offsetBuckets(int Tq, int Tk, int q0, int num_buckets, int max_distance,
                               bool bidirectional) {
  std::vector<int> bucket((size_t)std::max(Tq + Tk - 1, 0));
  for (int o = 0; o < Tq + Tk - 1; ++o)
    bucket[(size_t)o] =
        relative_position_bucket(o - (Tq - 1) - q0, bidirectional, num_buckets, max_distance);
  return bucket;
}

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

  // dtable[ids[b, t], :] += scale · dout[b, t, :]; dpositions[pos0 + t, :] += dout[b, t, :]
  // (a scatter: positions sharing a token add into one row, so on this thread, in order).
  void embedding_backward(const int32_t* ids, const float* dout, float* dtable, float* dpositions,
                          int B, int T, int d, int pos0, float scale) override {
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t) {
        const float* g = dout + ((size_t)b * T + t) * d;
        float* e = dtable + (size_t)ids[b * T + t] * d;
        for (int c = 0; c < d; ++c) e[c] += scale * g[c];
        if (dpositions) {
          float* p = dpositions + (size_t)(pos0 + t) * d;
          for (int c = 0; c < d; ++c) p[c] += g[c];
        }
      }
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

  // dtable[ids[r], :] += dout[r, :] (a scatter, on this thread)
  void gather_add_backward(const int32_t* ids, const float* dout, float* dtable, int rows,
                           int d) override {
    for (int r = 0; r < rows; ++r) {
      const float* g = dout + (size_t)r * d;
      float* e = dtable + (size_t)ids[r] * d;
      for (int c = 0; c < d; ++c) e[c] += g[c];
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

  // dx[b, t, :] += dy[b, :] / T
  void mean_pool_backward(const float* dy, float* dx, int B, int T, int d) override {
    const float inv = 1.0f / (float)T;
    forRows((int64_t)B * T, d, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* g = dy + (r / T) * d;
        float* o = dx + r * d;
        for (int c = 0; c < d; ++c) o[c] += g[c] * inv;
      }
    });
  }

  // y[rows, out] = x[rows, in] · W[out, in]ᵀ (+ bias): tiles of y, one product each.
  void linear_forward(const float* x, const float* weight, const float* bias, float* y, int rows,
                      int in, int out) override {
    if (rows <= 0 || out <= 0) return;
    const bool share = shared(2.0 * rows * in * out, 4.0 * ((double)rows + out) * in);
    forTiles(rows, out, share, [&](int r0, int r1, int c0, int c1) {
      float* yt = y + (int64_t)r0 * out + c0;
      gemm(true, r1 - r0, c1 - c0, in, 1.0f, x + (int64_t)r0 * in, in, weight + (int64_t)c0 * in,
           in, yt, out);
      if (bias) addBiasRows(yt, out, bias + c0, r1 - r0, c1 - c0);
    });
  }

  // dx[rows, in] += dy · W;  dW[out, in] += dyᵀ · x;  dbias[out] += Σ_r dy[r, :]: tiles of dx and
  // of dW, one product each; dbias in column blocks. Every element is summed in the same order
  // whatever the tiles, so results do not depend on the thread count.
  void linear_backward(const float* dy, const float* x, const float* weight, float* dx,
                       float* dweight, float* dbias, int rows, int in, int out) override {
    if (rows <= 0 || out <= 0) return;
    const bool share = shared(2.0 * rows * in * out, 4.0 * ((double)rows + out) * in);
    if (dx && in > 0)
      forTiles(rows, in, share, [&](int r0, int r1, int c0, int c1) {
        gemmAccumulate(false, false, r1 - r0, c1 - c0, out, 1.0f, dy + (int64_t)r0 * out, out,
                       weight + c0, in, dx + (int64_t)r0 * in + c0, in);
      });
    if (dweight && in > 0)
      forTiles(out, in, share, [&](int o0, int o1, int c0, int c1) {
        gemmAccumulate(true, false, o1 - o0, c1 - c0, rows, 1.0f, dy + o0, out, x + c0, in,
                       dweight + (int64_t)o0 * in + c0, in);
      });
    if (dbias) {
      const int64_t tasks = std::clamp<int64_t>(
          (int64_t)rows * out / kMinElementsPerTask, 1,
          std::min<int64_t>((int64_t)threads_ * kTasksPerThread, std::max(1, out / 16)));
      pool_->run(tasks, [&](int64_t t) {
        const int64_t c0 = splitPoint(out, tasks, t, 16), c1 = splitPoint(out, tasks, t + 1, 16);
        for (int r = 0; r < rows; ++r) {
          const float* g = dy + (int64_t)r * out;
          for (int64_t c = c0; c < c1; ++c) dbias[c] += g[c];
        }
      });
    }
  }

  // scores[b, h, i, j] = scale · q_h[b, i, :] · k_h[b, j, :]: one product per (b, h, query rows).
  // scores_h = scale · Q_h · K_g(h)ᵀ: one product per (b, h, query rows).
  void attention_scores_forward(HeadsView q, HeadsView k, float* scores, int B, int H, int kv_heads,
                                int Tq, int Tk, int d_k, float scale) override {
    const int group = H / kv_heads;
    const bool share = shared(2.0 * B * H * Tq * Tk * d_k, 4.0 * B * H * ((double)Tq + Tk) * d_k);
    forHeadRows(B, H, Tq, share, [&](int64_t b, int64_t h, int64_t bh, int i0, int i1) {
      gemm(true, i1 - i0, Tk, d_k, scale, q.data + b * q.batch_stride + i0 * q.row_stride + h * d_k,
           q.row_stride, k.data + b * k.batch_stride + h / group * d_k, k.row_stride,
           scores + (bh * Tq + i0) * Tk, Tk);
    });
  }

  // dq_h += scale · dS_h · K_g(h) (per (b, h, query rows));  dk_g += scale · dS_hᵀ · Q_h for the
  // query heads h of group g in turn (per (b, g, key rows): no two tasks write one dk row).
  void attention_scores_backward(const float* dscores, HeadsView q, HeadsView k, HeadsGrad dq,
                                 HeadsGrad dk, int B, int H, int kv_heads, int Tq, int Tk, int d_k,
                                 float scale) override {
    const int group = H / kv_heads;
    const bool share = shared(4.0 * B * H * Tq * Tk * d_k, 4.0 * B * H * ((double)Tq + Tk) * d_k);
    forHeadRows(B, H, Tq, share, [&](int64_t b, int64_t h, int64_t bh, int i0, int i1) {
      gemmAccumulate(false, false, i1 - i0, d_k, Tk, scale, dscores + (bh * Tq + i0) * Tk, Tk,
                     k.data + b * k.batch_stride + h / group * d_k, k.row_stride,
                     dq.data + b * dq.batch_stride + i0 * dq.row_stride + h * d_k, dq.row_stride);
    });
    forHeadRows(B, kv_heads, Tk, share, [&](int64_t b, int64_t g, int64_t, int j0, int j1) {
      for (int64_t h = g * group; h < (g + 1) * group; ++h)
        gemmAccumulate(true, false, j1 - j0, d_k, Tq, scale, dscores + (b * H + h) * Tq * Tk + j0,
                       Tk, q.data + b * q.batch_stride + h * d_k, q.row_stride,
                       dk.data + b * dk.batch_stride + j0 * dk.row_stride + g * d_k, dk.row_stride);
    });
  }

  void rope_forward(HeadsGrad x, const float* cos, const float* sin, int B, int T, int heads,
                    int d_head, int pos0, RopeLayout layout) override {
    rope(x, cos, sin, B, T, heads, d_head, pos0, layout, 1.0f);
  }

  // dx ← Rᵀ·dx: the rotation by minus the angles (written, in place)
  void rope_backward(HeadsGrad dx, const float* cos, const float* sin, int B, int T, int heads,
                     int d_head, int pos0, RopeLayout layout) override {
    rope(dx, cos, sin, B, T, heads, d_head, pos0, layout, -1.0f);
  }

  // scores[b, h, i, j] += table[bucket(j − (q0 + i)), h], one score row at a time.
  void position_bias_forward(const float* table, float* scores, int B, int H, int Tq, int Tk,
                             int q0, int num_buckets, int max_distance,
                             bool bidirectional) override {
    const std::vector<int> bucket =
        offsetBuckets(Tq, Tk, q0, num_buckets, max_distance, bidirectional);
    forRows((int64_t)B * H * Tq, Tk, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t h = r / Tq % H, i = r % Tq;
        float* row = scores + r * Tk;
        const int* k = bucket.data() + (Tq - 1 - i);  // k[j]: the bucket of offset j − i
        for (int j = 0; j < Tk; ++j) row[j] += table[(int64_t)k[j] * H + h];
      }
    });
  }

  // dtable[k, h] += Σ dscores over the cells of bucket k: one head per task, each head's sums in
  // double in a fixed order (the same result on any number of threads).
  void position_bias_backward(const float* dscores, float* dtable, int B, int H, int Tq, int Tk,
                              int q0, int num_buckets, int max_distance,
                              bool bidirectional) override {
    const std::vector<int> bucket =
        offsetBuckets(Tq, Tk, q0, num_buckets, max_distance, bidirectional);
    forRows(H, (int64_t)B * Tq * Tk, [&](int64_t h0, int64_t h1) {
      std::vector<double> sum((size_t)num_buckets);
      for (int64_t h = h0; h < h1; ++h) {
        std::fill(sum.begin(), sum.end(), 0.0);
        for (int64_t b = 0; b < B; ++b)
          for (int i = 0; i < Tq; ++i) {
            const float* g = dscores + ((b * H + h) * Tq + i) * Tk;
            for (int j = 0; j < Tk; ++j) sum[(size_t)bucket[(size_t)(j - i + Tq - 1)]] += g[j];
          }
        for (int k = 0; k < num_buckets; ++k) dtable[(int64_t)k * H + h] += (float)sum[(size_t)k];
      }
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

  // dscores = probs ⊙ (dprobs − Σ probs·dprobs), 0 where masked (written; may alias dprobs)
  void masked_softmax_backward(const float* probs, const float* dprobs, const uint8_t* mask,
                               float* dscores, int B, int H, int Tq, int Tk) override {
    forRows((int64_t)B * H * Tq, Tk, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / ((int64_t)H * Tq), i = r % Tq;
        softmaxBackwardRow(probs + r * Tk, dprobs + r * Tk, mask + (b * Tq + i) * Tk,
                           dscores + r * Tk, Tk);
      }
    });
  }

  // ctx[b, i, h·d_v + c] = Σ_j probs[b, h, i, j] · v_g(h)[b, j, c]: one product per (b, h, rows).
  void attention_context_forward(const float* probs, HeadsView v, float* ctx, int B, int H,
                                 int kv_heads, int Tq, int Tk, int d_v) override {
    const int group = H / kv_heads;
    const bool share = shared(2.0 * B * H * Tq * Tk * d_v, 4.0 * B * H * ((double)Tq + d_v) * Tk);
    const int64_t width = (int64_t)H * d_v;
    forHeadRows(B, H, Tq, share, [&](int64_t b, int64_t h, int64_t bh, int i0, int i1) {
      gemm(false, i1 - i0, d_v, Tk, 1.0f, probs + (bh * Tq + i0) * Tk, Tk,
           v.data + b * v.batch_stride + h / group * d_v, v.row_stride,
           ctx + (b * Tq + i0) * width + h * d_v, width);
    });
  }

  // dprobs[b, h] = dC_h · V_g(h)ᵀ (written, per (b, h, query rows));  dv_g += P[b, h]ᵀ · dC_h for
  // the query heads h of group g in turn (per (b, g, key rows)).
  void attention_context_backward(const float* dctx, const float* probs, HeadsView v, float* dprobs,
                                  HeadsGrad dv, int B, int H, int kv_heads, int Tq, int Tk,
                                  int d_v) override {
    const int group = H / kv_heads;
    const bool share = shared(4.0 * B * H * Tq * Tk * d_v, 4.0 * B * H * ((double)Tq + d_v) * Tk);
    const int64_t width = (int64_t)H * d_v;
    forHeadRows(B, H, Tq, share, [&](int64_t b, int64_t h, int64_t bh, int i0, int i1) {
      gemm(true, i1 - i0, Tk, d_v, 1.0f, dctx + (b * Tq + i0) * width + h * d_v, width,
           v.data + b * v.batch_stride + h / group * d_v, v.row_stride,
           dprobs + (bh * Tq + i0) * Tk, Tk);
    });
    forHeadRows(B, kv_heads, Tk, share, [&](int64_t b, int64_t g, int64_t, int j0, int j1) {
      for (int64_t h = g * group; h < (g + 1) * group; ++h)
        gemmAccumulate(true, false, j1 - j0, d_v, Tq, 1.0f, probs + (b * H + h) * Tq * Tk + j0, Tk,
                       dctx + b * Tq * width + h * d_v, width,
                       dv.data + b * dv.batch_stride + j0 * dv.row_stride + g * d_v, dv.row_stride);
    });
  }

  void norm_forward(NormKind kind, const float* x, const float* gamma, const float* beta, float* y,
                    int rows, int d, float eps) override {
    forRows(rows, d,
            [&](int64_t r0, int64_t r1) { normRows(kind, x, gamma, beta, y, r0, r1, d, eps); });
  }

  // Row blocks of a fixed size (never the thread count): dx row by row, and the parameters'
  // gradients summed per block, then the blocks added in order, so the result is the same on
  // any number of threads.
  void norm_backward(NormKind kind, const float* dy, const float* x, const float* gamma, float* dx,
                     float* dgamma, float* dbeta, int rows, int d, float eps) override {
    if (rows <= 0 || d <= 0) return;
    const bool params = gamma && (dgamma || dbeta);
    const int64_t per_block = std::max<int64_t>(1, kMinElementsPerTask / d);
    const int64_t blocks = (rows + per_block - 1) / per_block;
    std::vector<float> partial(params ? (size_t)blocks * 2 * d : 0, 0.0f);
    runTasks(blocks, threads_ > 1, [&](int64_t blk) {
      const int64_t r0 = blk * per_block, r1 = std::min<int64_t>(rows, r0 + per_block);
      float* pg = params ? partial.data() + (size_t)blk * 2 * d : nullptr;
      normBackwardRows(kind, dy, x, gamma, dx, dgamma ? pg : nullptr,
                       dbeta && pg ? pg + d : nullptr, r0, r1, d, eps);
    });
    if (!params) return;
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const float* pg = partial.data() + (size_t)blk * 2 * d;
      if (dgamma) addInPlace(pg, dgamma, d);
      if (dbeta) addInPlace(pg + d, dbeta, d);
    }
  }

  // Each (b, t) row's heads are `heads` contiguous rows of d_head: normRows on them.
  void head_norm_forward(NormKind kind, HeadsGrad x, const float* gamma, int B, int T, int heads,
                         int d_head, float eps) override {
    forRows((int64_t)B * T, (int64_t)heads * d_head, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* p = x.data + (r / T) * x.batch_stride + (r % T) * x.row_stride;
        normRows(kind, p, gamma, nullptr, p, 0, heads, d_head, eps);
      }
    });
  }

  // As norm_backward: blocks of a fixed number of (b, t) rows, dgamma summed per block and the
  // blocks added in order (the same result on any number of threads).
  void head_norm_backward(NormKind kind, HeadsGrad dx, HeadsView x, const float* gamma,
                          float* dgamma, int B, int T, int heads, int d_head, float eps) override {
    const int64_t rows = (int64_t)B * T, width = (int64_t)heads * d_head;
    if (rows <= 0 || width <= 0) return;
    const bool params = gamma && dgamma;
    const int64_t per_block = std::max<int64_t>(1, kMinElementsPerTask / width);
    const int64_t blocks = (rows + per_block - 1) / per_block;
    std::vector<float> partial(params ? (size_t)blocks * d_head : 0, 0.0f);
    runTasks(blocks, threads_ > 1, [&](int64_t blk) {
      const int64_t r0 = blk * per_block, r1 = std::min<int64_t>(rows, r0 + per_block);
      float* pg = params ? partial.data() + (size_t)blk * d_head : nullptr;
      for (int64_t r = r0; r < r1; ++r)
        for (int h = 0; h < heads; ++h) {
          const int64_t b = r / T, t = r % T;
          headNormBackwardInPlace(
              kind, x.data + b * x.batch_stride + t * x.row_stride + h * d_head, gamma,
              dx.data + b * dx.batch_stride + t * dx.row_stride + h * d_head, pg, d_head, eps);
        }
    });
    for (int64_t blk = 0; params && blk < blocks; ++blk)
      addInPlace(partial.data() + (size_t)blk * d_head, dgamma, d_head);
  }

  void activation_forward(float* x, int64_t n, Activation act) override {
    forElements(n, [&](int64_t i0, int64_t i1) { activationSpan(x + i0, i1 - i0, act); });
  }

  // dx[i] = dy[i] · act'(x[i]) (written; dx may alias dy)
  void activation_backward(const float* x, const float* dy, float* dx, int64_t n,
                           Activation act) override {
    forElements(n, [&](int64_t i0, int64_t i1) {
      activationBackwardSpan(x + i0, dy + i0, dx + i0, i1 - i0, act);
    });
  }

  void gated_activation_forward(const float* x, float* y, int rows, int f,
                                Activation act) override {
    forRows(rows, 2 * (int64_t)f, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) gatedRow(x + r * 2 * f, y + r * f, f, act);
    });
  }

  // dx = [dy ⊙ up ⊙ act'(gate) | dy ⊙ act(gate)] per row (written)
  void gated_activation_backward(const float* x, const float* dy, float* dx, int rows, int f,
                                 Activation act) override {
    forRows(rows, 2 * (int64_t)f, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        gatedBackwardRow(x + r * 2 * f, dy + r * f, dx + r * 2 * f, f, act);
    });
  }

  void residual_forward(const float* x, float* y, int64_t n) override {
    forElements(n, [&](int64_t i0, int64_t i1) { addInPlace(x + i0, y + i0, i1 - i0); });
  }

  // dx[i] += dy[i]
  void residual_backward(const float* dy, float* dx, int64_t n) override {
    forElements(n, [&](int64_t i0, int64_t i1) { addInPlace(dy + i0, dx + i0, i1 - i0); });
  }

  void scale_forward(float* x, int64_t n, float s) override {
    forElements(n, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) x[i] *= s;
    });
  }

  // dx[i] *= s
  void scale_backward(float* dx, int64_t n, float s) override {
    scale_forward(dx, n, s);
  }

  // ---- training only ----
  void zero(float* x, int64_t n) override {
    forElements(n, [&](int64_t i0, int64_t i1) {
      std::memset(x + i0, 0, (size_t)(i1 - i0) * sizeof(float));
    });
  }

  // x[i] = keep(seed, i) ? x[i] / (1 − p) : 0 (the mask a function of the element's index, so
  // the same however the elements are shared out)
  void dropout_forward(float* x, int64_t n, float p, uint64_t seed) override {
    if (p <= 0.0f) return;
    const uint32_t threshold = dropoutThreshold(p);
    const float keep_scale = 1.0f / (1.0f - p);
    forElements(n, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        x[i] = dropoutKeep(seed, (uint64_t)i, threshold) ? x[i] * keep_scale : 0.0f;
    });
  }
  // the same mask: dx[i] = keep(seed, i) ? dx[i] / (1 − p) : 0
  void dropout_backward(float* dx, int64_t n, float p, uint64_t seed) override {
    dropout_forward(dx, n, p, seed);
  }

  // losses[r] = logsumexp(z) − (1 − ε)·z[target] − (ε/V)·Σ_v z[v]  (= −Σ q·log softmax(z))
  void cross_entropy_forward(const float* logits, const int32_t* targets, float* losses,
                             int32_t* predictions, int rows, int V, int ignore_index,
                             float smoothing) override {
    forRows(rows, V, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* z = logits + r * V;
        int arg = 0;
        float mx = z[0], sum_z = 0;
        for (int v = 0; v < V; ++v) {
          if (z[v] > mx) mx = z[v], arg = v;
          sum_z += z[v];
        }
        predictions[r] = arg;
        const int t = targets[r];
        if (t == ignore_index) {
          losses[r] = 0.0f;
          continue;
        }
        float sum = 0;
        for (int v = 0; v < V; ++v) sum += std::exp(z[v] - mx);
        const float lse = mx + std::log(sum);
        losses[r] = lse - (1.0f - smoothing) * z[t] - smoothing / (float)V * sum_z;
      }
    });
  }
  // dlogits[r] = scale · (softmax(z) − q), 0 for ignored rows
  void cross_entropy_backward(const float* logits, const int32_t* targets, float* dlogits, int rows,
                              int V, int ignore_index, float smoothing, float scale) override {
    forRows(rows, V, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* z = logits + r * V;
        float* g = dlogits + r * V;
        const int t = targets[r];
        if (t == ignore_index) {
          std::fill(g, g + V, 0.0f);
          continue;
        }
        float mx = z[0];
        for (int v = 1; v < V; ++v) mx = std::max(mx, z[v]);
        float sum = 0;
        for (int v = 0; v < V; ++v) sum += std::exp(z[v] - mx);
        const float inv = 1.0f / sum, off = smoothing / (float)V;
        for (int v = 0; v < V; ++v) g[v] = scale * (std::exp(z[v] - mx) * inv - off);
        g[t] -= scale * (1.0f - smoothing);
      }
    });
  }

  // Blocks of a fixed size, their sums added in order: the same on any number of threads.
  double sum_squares(const float* x, int64_t n) override {
    if (n <= 0) return 0;
    const int64_t blocks = (n + kMinElementsPerTask - 1) / kMinElementsPerTask;
    std::vector<double> partial((size_t)blocks);
    runTasks(blocks, threads_ > 1, [&](int64_t blk) {
      const int64_t i0 = blk * kMinElementsPerTask, i1 = std::min(n, i0 + kMinElementsPerTask);
      partial[(size_t)blk] = sumSquaresSpan(x + i0, i1 - i0);
    });
    double s = 0;
    for (double p : partial) s += p;
    return s;
  }

  void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n,
                    const AdamStep& a) override {
    forElements(n, [&](int64_t i0, int64_t i1) {
      adamwSpan(params + i0, grads + i0, m + i0, v + i0, i1 - i0, a);
    });
  }

 private:
  // rope_forward (sign 1) and rope_backward (sign −1): every (batch item, row) in tasks of rows.
  void rope(HeadsGrad x, const float* cos, const float* sin, int B, int T, int heads, int d_head,
            int pos0, RopeLayout layout, float sign) {
    const int half = d_head / 2;
    forRows((int64_t)B * T, (int64_t)heads * d_head, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / T, t = r % T, p = pos0 + t;
        ropeRow(x.data + b * x.batch_stride + t * x.row_stride, cos + p * half, sin + p * half,
                heads, d_head, layout, sign);
      }
    });
  }

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

  // The tiles of a rows × cols product, as tasks (one tile when share is false): f(r0, r1, c0, c1)
  // with row boundaries at multiples of 8 and column boundaries at multiples of 16.
  template <class F>
  void forTiles(int rows, int cols, bool share, F&& f) {
    int row_blocks = 1, col_blocks = 1;
    if (share) tileGrid(rows, cols, &row_blocks, &col_blocks);
    pool_->run((int64_t)row_blocks * col_blocks, [&](int64_t task) {
      const int rb = (int)(task / col_blocks), cb = (int)(task % col_blocks);
      f((int)splitPoint(rows, row_blocks, rb, 8), (int)splitPoint(rows, row_blocks, rb + 1, 8),
        (int)splitPoint(cols, col_blocks, cb, 16), (int)splitPoint(cols, col_blocks, cb + 1, 16));
    });
  }

  // Every (batch item, head) with its rows [0, T) in blocks (queryBlocks; one when share is
  // false), as tasks: f(b, h, b·H + h, r0, r1).
  template <class F>
  void forHeadRows(int B, int H, int T, bool share, F&& f) {
    const int blocks = share ? queryBlocks(B, H, T) : 1;
    runTasks((int64_t)B * H * blocks, share, [&](int64_t task) {
      const int64_t bh = task / blocks;
      f(bh / H, bh % H, bh, (int)splitPoint(T, blocks, task % blocks, 8),
        (int)splitPoint(T, blocks, task % blocks + 1, 8));
    });
  }

  // The grid of y tiles for a rows × cols product: kTilesPerThread tiles per thread where the
  // shape allows (at least 16 rows and 64 columns each), and among grids with that many tiles the
  // one that repacks the least input (each tile packs its rows of x and its rows of W: depth ·
  // (rows · column blocks + cols · row blocks) floats).
  void tileGrid(int rows, int cols, int* row_blocks, int* col_blocks) const {
    const int want = threads_ * kTilesPerThread;
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

void hostGemm(bool b_transposed, int M, int N, int K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float* C, int64_t ldc) {
  gemm(b_transposed, M, N, K, alpha, A, lda, B, ldb, C, ldc);
}

ATTNVIZ_CPU_CLONES void hostScaledExp(float* __restrict x, int n, float ref, float scale) {
  for (int j = 0; j < n; ++j) x[j] = expPoly(x[j] - ref) * scale;
}

std::shared_ptr<Backend> makeCpuBackend(int threads) {
  return std::make_shared<CpuBackend>(threads);
}

}  // namespace attnviz

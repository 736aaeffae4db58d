// The CUDA backend's kernels. The math of every element and row is in kernel_math.h (shared with
// the host tests); this file only maps threads to rows and elements and reduces across a warp.
// Kernels are <op>_kernel1 after llm.c; the launchers keep the op's name.
#include <cuda_runtime.h>

#include <algorithm>

#include "kernels.h"

namespace attnviz::cuda {

namespace {

constexpr int kWarp = 32;
constexpr int kRowBlock = 128;  // threads per block of the row kernels: 4 rows (warps) at a time
constexpr int kElemBlock = 256;
constexpr int64_t kMaxBlocks = 65535;  // grid-stride loops cover the rest

__device__ inline float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = softmax_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// The largest value of a warp and the lowest index holding it (argmax, the first on ties).
__device__ inline void warp_argmax(float* v, int* index) {
  for (int o = kWarp / 2; o > 0; o /= 2) {
    const float ov = __shfl_xor_sync(0xffffffffu, *v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, *index, o);
    if (ov > *v || (ov == *v && oi < *index)) {
      *v = ov;
      *index = oi;
    }
  }
}

// Grid-stride loop over rows with one warp per row (the row kernels' common shape).
#define FOR_EACH_ROW_BY_WARP(row, rows)                                                            \
  const int lane = threadIdx.x % kWarp;                                                            \
  const int64_t warps_ = int64_t{gridDim.x} * (blockDim.x / kWarp);                                \
  for (int64_t row = int64_t{blockIdx.x} * (blockDim.x / kWarp) + threadIdx.x / kWarp; row < rows; \
       row += warps_)

// Grid-stride loop over n elements.
#define FOR_EACH_ELEMENT(i, n)                                              \
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < (n); \
       i += int64_t{gridDim.x} * blockDim.x)

unsigned blocksFor(int64_t work, int per_block) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min(kMaxBlocks, (work + per_block - 1) / per_block)));
}

// One warp per row of scores [B·H·Tq, Tk]. Three passes over the row, as masked_softmax_row.
__global__ void masked_softmax_forward_kernel1(const float* scores, const uint8_t* mask,
                                               float* probs, int64_t rows, int H, int Tq, int Tk,
                                               float fill) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarp);
  for (int64_t row = int64_t{blockIdx.x} * (blockDim.x / kWarp) + threadIdx.x / kWarp; row < rows;
       row += warps) {
    const float* s = scores + row * Tk;
    const uint8_t* m = mask + softmax_mask_row(row, H, Tq) * Tk;
    float* p = probs + row * Tk;
    float row_max = -INFINITY;
    for (int j = lane; j < Tk; j += kWarp)
      row_max = softmax_max(row_max, masked_score(s[j], m[j], fill));
    row_max = warp_max(row_max);
    float row_sum = 0.0f;
    for (int j = lane; j < Tk; j += kWarp)
      row_sum += softmax_numerator(masked_score(s[j], m[j], fill), row_max);
    row_sum = warp_sum(row_sum);
    for (int j = lane; j < Tk; j += kWarp)
      p[j] = softmax_prob(softmax_numerator(masked_score(s[j], m[j], fill), row_max), row_sum);
  }
}

// One warp per row; as masked_softmax_backward_row. Every lane reads its p and dp before the
// reduction completes and writes only its own cells, so ds may alias dp.
__global__ void masked_softmax_backward_kernel1(const float* probs, const float* dprobs,
                                                const uint8_t* mask, float* dscores, int64_t rows,
                                                int H, int Tq, int Tk) {
  FOR_EACH_ROW_BY_WARP(row, rows) {
    const float* p = probs + row * Tk;
    const float* dp = dprobs + row * Tk;
    const uint8_t* m = mask + softmax_mask_row(row, H, Tq) * Tk;
    float dot = 0.0f;
    for (int j = lane; j < Tk; j += kWarp) dot += p[j] * dp[j];
    dot = warp_sum(dot);
    for (int j = lane; j < Tk; j += kWarp)
      dscores[row * Tk + j] = softmax_backward_element(p[j], dp[j], dot, m[j]);
  }
}

// The statistics of row `row` of x [rows, d] for `kind`, across a warp: two passes as
// norm_row_stats (the center, then the squares about it).
__device__ inline NormStats norm_warp_stats(NormKind kind, const float* xr, int d, float eps,
                                            int lane) {
  float center = 0.0f;
  if (norm_centred(kind)) {
    float sum = 0.0f;
    for (int c = lane; c < d; c += kWarp) sum += xr[c];
    center = warp_sum(sum) / static_cast<float>(d);
  }
  float squares = 0.0f;
  for (int c = lane; c < d; c += kWarp) squares += (xr[c] - center) * (xr[c] - center);
  return norm_stats(kind, center, warp_sum(squares), d, eps);
}

// A row's mean(dx̂) (0 unless the norm centres) and Σ dx̂ ⊙ x̂, dx̂ = dy ⊙ gamma, across a warp (every
// lane has read its cells of dy when they return).
struct NormGradSums {
  float mean_dxhat, sum_dxhat_xhat;
};
__device__ inline NormGradSums norm_warp_grad_sums(NormKind kind, const float* xr, const float* g,
                                                   const float* gamma, NormStats s, int d,
                                                   int lane) {
  float sum_dxhat = 0.0f, sum_dxhat_xhat = 0.0f;
  for (int c = lane; c < d; c += kWarp) {
    const float dxhat = gamma ? g[c] * gamma[c] : g[c];
    sum_dxhat += dxhat;
    sum_dxhat_xhat += dxhat * (xr[c] - s.center) * s.scale;
  }
  sum_dxhat_xhat = warp_sum(sum_dxhat_xhat);
  const float mean_dxhat = norm_centred(kind) ? warp_sum(sum_dxhat) / static_cast<float>(d) : 0.0f;
  return {mean_dxhat, sum_dxhat_xhat};
}

// One warp per row of x [rows, d], as norm_row. Every lane has read its elements before the
// reductions complete, and writes only what it read, so y may alias x.
__global__ void norm_forward_kernel1(NormKind kind, const float* x, const float* gamma,
                                     const float* beta, float* y, int rows, int d, float eps) {
  FOR_EACH_ROW_BY_WARP(row, rows) {
    const float* xr = x + row * d;
    const NormStats s = norm_warp_stats(kind, xr, d, eps, lane);
    for (int c = lane; c < d; c += kWarp) y[row * d + c] = norm_apply(xr[c], s, gamma, beta, c);
  }
}

// One warp per row: dx += the input's gradient (norm_backward_row), and the row's center and
// scale into row_stats [rows, 2] for the parameters' kernel.
__global__ void norm_backward_kernel1(NormKind kind, const float* dy, const float* x,
                                      const float* gamma, float* dx, float* row_stats, int rows,
                                      int d, float eps) {
  FOR_EACH_ROW_BY_WARP(row, rows) {
    const float* xr = x + row * d;
    const float* g = dy + row * d;
    const NormStats s = norm_warp_stats(kind, xr, d, eps, lane);
    const NormGradSums sums = norm_warp_grad_sums(kind, xr, g, gamma, s, d, lane);
    const float mean_dxhat = sums.mean_dxhat, sum_dxhat_xhat = sums.sum_dxhat_xhat;
    if (dx)
      for (int c = lane; c < d; c += kWarp) {
        const float dxhat = gamma ? g[c] * gamma[c] : g[c];
        dx[row * d + c] += norm_backward_element(dxhat, (xr[c] - s.center) * s.scale, s, mean_dxhat,
                                                 sum_dxhat_xhat);
      }
    if (lane == 0) {
      row_stats[2 * row] = s.center;
      row_stats[2 * row + 1] = s.scale;
    }
  }
}

// One thread per column: dgamma[c] += Σ_r dy[r, c]·x̂[r, c], dbeta[c] += Σ_r dy[r, c], in row
// order (deterministic, no atomics).
__global__ void norm_backward_params_kernel1(const float* dy, const float* x,
                                             const float* row_stats, float* dgamma, float* dbeta,
                                             int rows, int d) {
  FOR_EACH_ELEMENT(c, d) {
    float sg = 0.0f, sb = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      const float g = dy[r * d + c];
      sg += g * (x[r * d + c] - row_stats[2 * r]) * row_stats[2 * r + 1];
      sb += g;
    }
    if (dgamma) dgamma[c] += sg;
    if (dbeta) dbeta[c] += sb;
  }
}

// Where head `row` (= (b·T + t)·heads + h) of a heads view starts.
__device__ inline int64_t head_offset(int64_t row, int64_t batch_stride, int64_t row_stride, int T,
                                      int heads, int d_head) {
  const int64_t bt = row / heads, h = row % heads;
  return (bt / T) * batch_stride + (bt % T) * row_stride + h * d_head;
}

// One warp per head, as norm_forward_kernel1 on that head's d_head values (in place).
__global__ void head_norm_forward_kernel1(NormKind kind, float* x, int64_t batch_stride,
                                          int64_t row_stride, const float* gamma, int64_t rows,
                                          int T, int heads, int d_head, float eps) {
  FOR_EACH_ROW_BY_WARP(row, rows) {
    float* xr = x + head_offset(row, batch_stride, row_stride, T, heads, d_head);
    const NormStats s = norm_warp_stats(kind, xr, d_head, eps, lane);
    for (int c = lane; c < d_head; c += kWarp) xr[c] = norm_apply(xr[c], s, gamma, nullptr, c);
  }
}

// One warp per head: its center and scale into row_stats [rows, 2].
__global__ void head_norm_stats_kernel1(NormKind kind, const float* x, int64_t x_batch,
                                        int64_t x_row, float* row_stats, int64_t rows, int T,
                                        int heads, int d_head, float eps) {
  FOR_EACH_ROW_BY_WARP(row, rows) {
    const NormStats s = norm_warp_stats(
        kind, x + head_offset(row, x_batch, x_row, T, heads, d_head), d_head, eps, lane);
    if (lane == 0) {
      row_stats[2 * row] = s.center;
      row_stats[2 * row + 1] = s.scale;
    }
  }
}

// One thread per column c < d_head: dgamma[c] += Σ over heads in order of dy·x̂ (deterministic),
// before dy is overwritten.
__global__ void head_norm_backward_params_kernel1(const float* dy, int64_t dy_batch, int64_t dy_row,
                                                  const float* x, int64_t x_batch, int64_t x_row,
                                                  const float* row_stats, float* dgamma,
                                                  int64_t rows, int T, int heads, int d_head) {
  FOR_EACH_ELEMENT(c, d_head) {
    float sg = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      const float g = dy[head_offset(r, dy_batch, dy_row, T, heads, d_head) + c];
      const float xv = x[head_offset(r, x_batch, x_row, T, heads, d_head) + c];
      sg += g * (xv - row_stats[2 * r]) * row_stats[2 * r + 1];
    }
    dgamma[c] += sg;
  }
}

// One warp per head, as norm_backward_kernel1 on that head's values, writing dx over dy: every
// lane reads its own cells before the reductions complete and writes only those.
__global__ void head_norm_backward_kernel1(NormKind kind, float* dx, int64_t dx_batch,
                                           int64_t dx_row, const float* x, int64_t x_batch,
                                           int64_t x_row, const float* gamma, int64_t rows, int T,
                                           int heads, int d_head, float eps) {
  FOR_EACH_ROW_BY_WARP(row, rows) {
    const float* xr = x + head_offset(row, x_batch, x_row, T, heads, d_head);
    float* g = dx + head_offset(row, dx_batch, dx_row, T, heads, d_head);
    const NormStats s = norm_warp_stats(kind, xr, d_head, eps, lane);
    const NormGradSums sums = norm_warp_grad_sums(kind, xr, g, gamma, s, d_head, lane);
    const float mean_dxhat = sums.mean_dxhat, sum_dxhat_xhat = sums.sum_dxhat_xhat;
    for (int c = lane; c < d_head; c += kWarp) {
      const float dxhat = gamma ? g[c] * gamma[c] : g[c];
      g[c] =
          norm_backward_element(dxhat, (xr[c] - s.center) * s.scale, s, mean_dxhat, sum_dxhat_xhat);
    }
  }
}

// One thread per pair, as rope_element: every pair is read and written by its thread only.
__global__ void rope_kernel1(float* data, int64_t batch_stride, int64_t row_stride,
                             const float* cos, const float* sin, int64_t n, int T, int heads,
                             int d_head, int pos0, RopeLayout layout, float sign) {
  FOR_EACH_ELEMENT(e, n)
  rope_element(e, data, batch_stride, row_stride, cos, sin, T, heads, d_head, pos0, layout, sign);
}

__global__ void activation_forward_kernel1(float* x, int64_t n, Activation kind) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    x[i] = activation(x[i], kind);
}

__global__ void activation_backward_kernel1(const float* x, const float* dy, float* dx, int64_t n,
                                            Activation kind) {
  FOR_EACH_ELEMENT(i, n) dx[i] = dy[i] * activation_grad(x[i], kind);
}

// One thread per output element e = r·f + c, reading the gate x[r, c] and up x[r, f + c].
__global__ void gated_activation_forward_kernel1(const float* x, float* y, int64_t n, int f,
                                                 Activation kind) {
  FOR_EACH_ELEMENT(e, n) {
    const int64_t at = (e / f) * 2 * f + e % f;  // the gate's index in x
    y[e] = activation(x[at], kind) * x[at + f];
  }
}

// One thread per element of dy, writing the gate's and up's gradients.
__global__ void gated_activation_backward_kernel1(const float* x, const float* dy, float* dx,
                                                  int64_t n, int f, Activation kind) {
  FOR_EACH_ELEMENT(e, n) {
    const int64_t at = (e / f) * 2 * f + e % f;
    const float gate = x[at];
    dx[at] = dy[e] * x[at + f] * activation_grad(gate, kind);
    dx[at + f] = dy[e] * activation(gate, kind);
  }
}

__global__ void residual_forward_kernel1(const float* x, float* y, int64_t n) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] += x[i];
}

__global__ void scale_forward_kernel1(float* x, int64_t n, float s) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    x[i] *= s;
}

__global__ void bias_add_forward_kernel1(const float* bias, float* y, int64_t n, int width) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    y[i] += bias[i % width];
}

// One thread per column, summing its rows in order.
__global__ void bias_add_backward_kernel1(const float* dy, float* dbias, int rows, int width) {
  FOR_EACH_ELEMENT(c, width) {
    float sum = 0.0f;
    for (int64_t r = 0; r < rows; ++r) sum += dy[r * width + c];
    dbias[c] += sum;
  }
}

__global__ void embedding_forward_kernel1(const int32_t* ids, const float* table,
                                          const float* positions, float* out, int64_t n, int T,
                                          int d, int pos0, float scale) {
  for (int64_t e = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; e < n;
       e += int64_t{gridDim.x} * blockDim.x)
    out[e] = embedding_element(e, ids, table, positions, T, d, pos0, scale);
}

__global__ void embedding_backward_kernel1(const int32_t* ids, const float* dout, float* dtable,
                                           float* dpositions, int64_t n, int T, int d, int pos0,
                                           float scale) {
  FOR_EACH_ELEMENT(e, n) {
    const int64_t row = e / d;  // b·T + t
    const int c = static_cast<int>(e % d);
    atomicAdd(dtable + int64_t{ids[row]} * d + c, scale * dout[e]);
    if (dpositions) atomicAdd(dpositions + (int64_t{pos0} + row % T) * d + c, dout[e]);
  }
}

__global__ void gather_add_forward_kernel1(const int32_t* ids, const float* table, float* out,
                                           int64_t n, int d) {
  for (int64_t e = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; e < n;
       e += int64_t{gridDim.x} * blockDim.x)
    out[e] += table[int64_t{ids[e / d]} * d + e % d];
}

__global__ void gather_add_backward_kernel1(const int32_t* ids, const float* dout, float* dtable,
                                            int64_t n, int d) {
  FOR_EACH_ELEMENT(e, n) atomicAdd(dtable + int64_t{ids[e / d]} * d + e % d, dout[e]);
}

__global__ void mean_pool_forward_kernel1(const float* x, float* y, int64_t n, int T, int d) {
  for (int64_t e = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; e < n;
       e += int64_t{gridDim.x} * blockDim.x)
    y[e] = mean_pool_element(x, e / d, static_cast<int>(e % d), T, d);
}

// dx [B, T, d]: element e reads dy[b, c] with b = e / (T·d), c = e % d.
__global__ void mean_pool_backward_kernel1(const float* dy, float* dx, int64_t n, int T, int d) {
  FOR_EACH_ELEMENT(e, n) dx[e] += dy[(e / (int64_t{T} * d)) * d + e % d] / static_cast<float>(T);
}

// ---- training only ----

__global__ void dropout_forward_kernel1(float* x, int64_t n, uint64_t seed, uint32_t threshold,
                                        float keep_scale) {
  FOR_EACH_ELEMENT(i, n) x[i] = dropout_element(x[i], seed, i, threshold, keep_scale);
}

// One warp per row: max and argmax, Σ z, Σ exp(z − max); as cross_entropy_row.
__global__ void cross_entropy_forward_kernel1(const float* logits, const int32_t* targets,
                                              float* losses, int32_t* predictions, int rows, int V,
                                              int ignore_index, float smoothing) {
  FOR_EACH_ROW_BY_WARP(row, rows) {
    const float* z = logits + row * V;
    float best = -INFINITY, sum_z = 0.0f;
    int arg = V;
    for (int v = lane; v < V; v += kWarp) {
      if (z[v] > best) best = z[v], arg = v;
      sum_z += z[v];
    }
    warp_argmax(&best, &arg);
    if (arg >= V) arg = 0;  // a row of NaN or −∞
    sum_z = warp_sum(sum_z);
    float sum_exp = 0.0f;
    for (int v = lane; v < V; v += kWarp) sum_exp += expf(z[v] - best);
    sum_exp = warp_sum(sum_exp);
    if (lane == 0) {
      predictions[row] = arg;
      const int t = targets[row];
      losses[row] =
          t == ignore_index ? 0.0f : cross_entropy_loss(best, sum_exp, z[t], sum_z, V, smoothing);
    }
  }
}

__global__ void cross_entropy_backward_kernel1(const float* logits, const int32_t* targets,
                                               float* dlogits, int rows, int V, int ignore_index,
                                               float smoothing, float scale) {
  FOR_EACH_ROW_BY_WARP(row, rows) {
    const float* z = logits + row * V;
    float* g = dlogits + row * V;
    const int t = targets[row];
    if (t == ignore_index) {
      for (int v = lane; v < V; v += kWarp) g[v] = 0.0f;
      continue;
    }
    float mx = -INFINITY;
    for (int v = lane; v < V; v += kWarp) mx = fmaxf(mx, z[v]);
    mx = warp_max(mx);
    float sum_exp = 0.0f;
    for (int v = lane; v < V; v += kWarp) sum_exp += expf(z[v] - mx);
    sum_exp = warp_sum(sum_exp);
    for (int v = lane; v < V; v += kWarp)
      g[v] = cross_entropy_grad(z[v], mx, sum_exp, v == t, V, smoothing, scale);
  }
}

// Each block sums the squares of its grid-stride share in double, then thread 0 writes it.
__global__ void sum_squares_kernel1(const float* x, int64_t n, double* partial) {
  __shared__ double shared[kElemBlock];
  double s = 0.0;
  FOR_EACH_ELEMENT(i, n) s += static_cast<double>(x[i]) * x[i];
  shared[threadIdx.x] = s;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = shared[0];
}

__global__ void adamw_update_kernel1(float* params, const float* grads, float* m, float* v,
                                     int64_t n, float lr, float beta1, float beta2, float eps,
                                     float weight_decay, bool decoupled, float bias_correction1,
                                     float bias_correction2, float grad_scale) {
  FOR_EACH_ELEMENT(i, n)
  params[i] = adamw_element(params[i], grads[i], m + i, v + i, lr, beta1, beta2, eps, weight_decay,
                            decoupled, bias_correction1, bias_correction2, grad_scale);
}

// One thread per score cell e = ((b·H + h)·Tq + i)·Tk + j.
__global__ void position_bias_forward_kernel1(const float* table, float* scores, int64_t n, int H,
                                              int Tq, int Tk, int q0, int num_buckets,
                                              int max_distance, bool bidirectional) {
  FOR_EACH_ELEMENT(e, n) {
    const int j = (int)(e % Tk);
    const int64_t r = e / Tk;
    const int i = (int)(r % Tq), h = (int)(r / Tq % H);
    const int k = relative_position_bucket(j - (q0 + i), bidirectional, num_buckets, max_distance);
    scores[e] += table[int64_t{k} * H + h];
  }
}

// Block (h, part): the cells of head h in a grid-stride share of the B·Tq score rows, summed per
// bucket in shared memory (double), then added to dtable's column h.
__global__ void position_bias_backward_kernel1(const float* dscores, float* dtable, int B, int H,
                                               int Tq, int Tk, int q0, int num_buckets,
                                               int max_distance, bool bidirectional) {
  extern __shared__ double bucket_sum[];  // [num_buckets]
  const int h = blockIdx.x;
  for (int k = threadIdx.x; k < num_buckets; k += blockDim.x) bucket_sum[k] = 0.0;
  __syncthreads();
  const int64_t rows = int64_t{B} * Tq, cells = rows * Tk;
  for (int64_t c = int64_t{blockIdx.y} * blockDim.x + threadIdx.x; c < cells;
       c += int64_t{gridDim.y} * blockDim.x) {
    const int64_t r = c / Tk, b = r / Tq;
    const int i = (int)(r % Tq), j = (int)(c % Tk);
    const int k = relative_position_bucket(j - (q0 + i), bidirectional, num_buckets, max_distance);
    atomicAdd(bucket_sum + k, (double)dscores[((b * H + h) * Tq + i) * Tk + j]);
  }
  __syncthreads();
  for (int k = threadIdx.x; k < num_buckets; k += blockDim.x)
    if (bucket_sum[k] != 0.0) atomicAdd(dtable + int64_t{k} * H + h, (float)bucket_sum[k]);
}

}  // namespace

cudaError_t masked_softmax_forward(const float* scores, const uint8_t* mask, float* probs, int B,
                                   int H, int Tq, int Tk, float fill, cudaStream_t stream) {
  const int64_t rows = int64_t{B} * H * Tq;
  if (rows <= 0 || Tk <= 0) return cudaSuccess;
  masked_softmax_forward_kernel1<<<blocksFor(rows, kRowBlock / kWarp), kRowBlock, 0, stream>>>(
      scores, mask, probs, rows, H, Tq, Tk, fill);
  return cudaGetLastError();
}

cudaError_t masked_softmax_backward(const float* probs, const float* dprobs, const uint8_t* mask,
                                    float* dscores, int B, int H, int Tq, int Tk,
                                    cudaStream_t stream) {
  const int64_t rows = int64_t{B} * H * Tq;
  if (rows <= 0 || Tk <= 0) return cudaSuccess;
  masked_softmax_backward_kernel1<<<blocksFor(rows, kRowBlock / kWarp), kRowBlock, 0, stream>>>(
      probs, dprobs, mask, dscores, rows, H, Tq, Tk);
  return cudaGetLastError();
}

cudaError_t position_bias_forward(const float* table, float* scores, int B, int H, int Tq, int Tk,
                                  int q0, int num_buckets, int max_distance, bool bidirectional,
                                  cudaStream_t stream) {
  const int64_t n = int64_t{B} * H * Tq * Tk;
  if (n <= 0) return cudaSuccess;
  position_bias_forward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(
      table, scores, n, H, Tq, Tk, q0, num_buckets, max_distance, bidirectional);
  return cudaGetLastError();
}

cudaError_t position_bias_backward(const float* dscores, float* dtable, int B, int H, int Tq,
                                   int Tk, int q0, int num_buckets, int max_distance,
                                   bool bidirectional, cudaStream_t stream) {
  const int64_t cells = int64_t{B} * Tq * Tk;
  if (cells <= 0 || H <= 0 || num_buckets <= 0) return cudaSuccess;
  const dim3 grid((unsigned)H, std::min<unsigned>(blocksFor(cells, kElemBlock), 64u));
  position_bias_backward_kernel1<<<grid, kElemBlock, (size_t)num_buckets * sizeof(double),
                                   stream>>>(dscores, dtable, B, H, Tq, Tk, q0, num_buckets,
                                             max_distance, bidirectional);
  return cudaGetLastError();
}

cudaError_t norm_forward(NormKind kind, const float* x, const float* gamma, const float* beta,
                         float* y, int rows, int d, float eps, cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return cudaSuccess;
  norm_forward_kernel1<<<blocksFor(rows, kRowBlock / kWarp), kRowBlock, 0, stream>>>(
      kind, x, gamma, beta, y, rows, d, eps);
  return cudaGetLastError();
}

cudaError_t head_norm_forward(NormKind kind, float* x, int64_t batch_stride, int64_t row_stride,
                              const float* gamma, int B, int T, int heads, int d_head, float eps,
                              cudaStream_t stream) {
  const int64_t rows = int64_t{B} * T * heads;
  if (rows <= 0 || d_head <= 0) return cudaSuccess;
  head_norm_forward_kernel1<<<blocksFor(rows, kRowBlock / kWarp), kRowBlock, 0, stream>>>(
      kind, x, batch_stride, row_stride, gamma, rows, T, heads, d_head, eps);
  return cudaGetLastError();
}

cudaError_t head_norm_backward(NormKind kind, float* dx, int64_t dx_batch, int64_t dx_row,
                               const float* x, int64_t x_batch, int64_t x_row, const float* gamma,
                               float* dgamma, float* row_stats, int B, int T, int heads, int d_head,
                               float eps, cudaStream_t stream) {
  const int64_t rows = int64_t{B} * T * heads;
  if (rows <= 0 || d_head <= 0) return cudaSuccess;
  const unsigned grid = blocksFor(rows, kRowBlock / kWarp);
  if (gamma && dgamma) {
    head_norm_stats_kernel1<<<grid, kRowBlock, 0, stream>>>(kind, x, x_batch, x_row, row_stats,
                                                            rows, T, heads, d_head, eps);
    head_norm_backward_params_kernel1<<<blocksFor(d_head, kElemBlock), kElemBlock, 0, stream>>>(
        dx, dx_batch, dx_row, x, x_batch, x_row, row_stats, dgamma, rows, T, heads, d_head);
  }
  head_norm_backward_kernel1<<<grid, kRowBlock, 0, stream>>>(
      kind, dx, dx_batch, dx_row, x, x_batch, x_row, gamma, rows, T, heads, d_head, eps);
  return cudaGetLastError();
}

cudaError_t norm_backward(NormKind kind, const float* dy, const float* x, const float* gamma,
                          float* dx, float* dgamma, float* dbeta, float* row_stats, int rows, int d,
                          float eps, cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return cudaSuccess;
  norm_backward_kernel1<<<blocksFor(rows, kRowBlock / kWarp), kRowBlock, 0, stream>>>(
      kind, dy, x, gamma, dx, row_stats, rows, d, eps);
  if (!gamma || (!dgamma && !dbeta)) return cudaGetLastError();
  norm_backward_params_kernel1<<<blocksFor(d, kElemBlock), kElemBlock, 0, stream>>>(
      dy, x, row_stats, dgamma, dbeta, rows, d);
  return cudaGetLastError();
}

cudaError_t rope(float* data, int64_t batch_stride, int64_t row_stride, const float* cos,
                 const float* sin, int B, int T, int heads, int d_head, int pos0, RopeLayout layout,
                 float sign, cudaStream_t stream) {
  const int64_t n = int64_t{B} * T * heads * (d_head / 2);  // pairs
  if (n <= 0) return cudaSuccess;
  rope_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(
      data, batch_stride, row_stride, cos, sin, n, T, heads, d_head, pos0, layout, sign);
  return cudaGetLastError();
}

cudaError_t activation_forward(float* x, int64_t n, Activation kind, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  activation_forward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(x, n, kind);
  return cudaGetLastError();
}

cudaError_t activation_backward(const float* x, const float* dy, float* dx, int64_t n,
                                Activation kind, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  activation_backward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(x, dy, dx, n,
                                                                                   kind);
  return cudaGetLastError();
}

cudaError_t gated_activation_forward(const float* x, float* y, int rows, int f, Activation kind,
                                     cudaStream_t stream) {
  const int64_t n = int64_t{rows} * f;
  if (n <= 0) return cudaSuccess;
  gated_activation_forward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(x, y, n, f,
                                                                                        kind);
  return cudaGetLastError();
}

cudaError_t gated_activation_backward(const float* x, const float* dy, float* dx, int rows, int f,
                                      Activation kind, cudaStream_t stream) {
  const int64_t n = int64_t{rows} * f;
  if (n <= 0) return cudaSuccess;
  gated_activation_backward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(
      x, dy, dx, n, f, kind);
  return cudaGetLastError();
}

cudaError_t residual_forward(const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  residual_forward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t scale_forward(float* x, int64_t n, float s, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  scale_forward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(x, n, s);
  return cudaGetLastError();
}

cudaError_t bias_add_forward(const float* bias, float* y, int rows, int width,
                             cudaStream_t stream) {
  const int64_t n = int64_t{rows} * width;
  if (n <= 0) return cudaSuccess;
  bias_add_forward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(bias, y, n, width);
  return cudaGetLastError();
}

cudaError_t bias_add_backward(const float* dy, float* dbias, int rows, int width,
                              cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return cudaSuccess;
  bias_add_backward_kernel1<<<blocksFor(width, kElemBlock), kElemBlock, 0, stream>>>(dy, dbias,
                                                                                     rows, width);
  return cudaGetLastError();
}

cudaError_t embedding_forward(const int32_t* ids, const float* table, const float* positions,
                              float* out, int B, int T, int d, int pos0, float scale,
                              cudaStream_t stream) {
  const int64_t n = int64_t{B} * T * d;
  if (n <= 0) return cudaSuccess;
  embedding_forward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(
      ids, table, positions, out, n, T, d, pos0, scale);
  return cudaGetLastError();
}

cudaError_t embedding_backward(const int32_t* ids, const float* dout, float* dtable,
                               float* dpositions, int B, int T, int d, int pos0, float scale,
                               cudaStream_t stream) {
  const int64_t n = int64_t{B} * T * d;
  if (n <= 0) return cudaSuccess;
  embedding_backward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(
      ids, dout, dtable, dpositions, n, T, d, pos0, scale);
  return cudaGetLastError();
}

cudaError_t gather_add_forward(const int32_t* ids, const float* table, float* out, int rows, int d,
                               cudaStream_t stream) {
  const int64_t n = int64_t{rows} * d;
  if (n <= 0) return cudaSuccess;
  gather_add_forward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(ids, table, out,
                                                                                  n, d);
  return cudaGetLastError();
}

cudaError_t gather_add_backward(const int32_t* ids, const float* dout, float* dtable, int rows,
                                int d, cudaStream_t stream) {
  const int64_t n = int64_t{rows} * d;
  if (n <= 0) return cudaSuccess;
  gather_add_backward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(ids, dout,
                                                                                   dtable, n, d);
  return cudaGetLastError();
}

cudaError_t mean_pool_forward(const float* x, float* y, int B, int T, int d, cudaStream_t stream) {
  const int64_t n = int64_t{B} * d;
  if (n <= 0 || T <= 0) return cudaSuccess;
  mean_pool_forward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(x, y, n, T, d);
  return cudaGetLastError();
}

cudaError_t mean_pool_backward(const float* dy, float* dx, int B, int T, int d,
                               cudaStream_t stream) {
  const int64_t n = int64_t{B} * T * d;
  if (n <= 0) return cudaSuccess;
  mean_pool_backward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(dy, dx, n, T, d);
  return cudaGetLastError();
}

// ---- training only ----

cudaError_t dropout_forward(float* x, int64_t n, float p, uint64_t seed, cudaStream_t stream) {
  if (n <= 0 || p <= 0.0f) return cudaSuccess;
  dropout_forward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(
      x, n, seed, attnviz::dropoutThreshold(p), 1.0f / (1.0f - p));
  return cudaGetLastError();
}

cudaError_t cross_entropy_forward(const float* logits, const int32_t* targets, float* losses,
                                  int32_t* predictions, int rows, int V, int ignore_index,
                                  float smoothing, cudaStream_t stream) {
  if (rows <= 0 || V <= 0) return cudaSuccess;
  cross_entropy_forward_kernel1<<<blocksFor(rows, kRowBlock / kWarp), kRowBlock, 0, stream>>>(
      logits, targets, losses, predictions, rows, V, ignore_index, smoothing);
  return cudaGetLastError();
}

cudaError_t cross_entropy_backward(const float* logits, const int32_t* targets, float* dlogits,
                                   int rows, int V, int ignore_index, float smoothing, float scale,
                                   cudaStream_t stream) {
  if (rows <= 0 || V <= 0) return cudaSuccess;
  cross_entropy_backward_kernel1<<<blocksFor(rows, kRowBlock / kWarp), kRowBlock, 0, stream>>>(
      logits, targets, dlogits, rows, V, ignore_index, smoothing, scale);
  return cudaGetLastError();
}

int sum_squares_blocks(int64_t n) {
  return static_cast<int>(std::min<int64_t>(1024, blocksFor(n, kElemBlock)));
}

cudaError_t sum_squares(const float* x, int64_t n, double* partial, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  sum_squares_kernel1<<<sum_squares_blocks(n), kElemBlock, 0, stream>>>(x, n, partial);
  return cudaGetLastError();
}

cudaError_t adamw_update(float* params, const float* grads, float* m, float* v, int64_t n, float lr,
                         float beta1, float beta2, float eps, float weight_decay, bool decoupled,
                         float bias_correction1, float bias_correction2, float grad_scale,
                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  adamw_update_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(
      params, grads, m, v, n, lr, beta1, beta2, eps, weight_decay, decoupled, bias_correction1,
      bias_correction2, grad_scale);
  return cudaGetLastError();
}

cudaError_t kernel_image_status() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, masked_softmax_forward_kernel1);
}

}  // namespace attnviz::cuda

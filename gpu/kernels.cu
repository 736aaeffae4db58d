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

// One warp per row of x [rows, d]; two-pass statistics as layernorm_row. Every lane has read its
// elements before the reductions complete, and writes only what it read, so y may alias x.
__global__ void layernorm_forward_kernel1(const float* x, const float* gamma, const float* beta,
                                          float* y, int rows, int d, float eps) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = int64_t{gridDim.x} * (blockDim.x / kWarp);
  for (int64_t row = int64_t{blockIdx.x} * (blockDim.x / kWarp) + threadIdx.x / kWarp; row < rows;
       row += warps) {
    const float* xr = x + row * d;
    float* yr = y + row * d;
    float sum = 0.0f;
    for (int c = lane; c < d; c += kWarp) sum += xr[c];
    const float mean = warp_sum(sum) / static_cast<float>(d);
    float squares = 0.0f;
    for (int c = lane; c < d; c += kWarp) squares += (xr[c] - mean) * (xr[c] - mean);
    const float rstd = layernorm_rstd(warp_sum(squares) / static_cast<float>(d), eps);
    for (int c = lane; c < d; c += kWarp)
      yr[c] = layernorm_apply(xr[c], mean, rstd, gamma, beta, c);
  }
}

__global__ void activation_forward_kernel1(float* x, int64_t n, ActivationKind kind) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    x[i] = activation(x[i], kind);
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

__global__ void embedding_forward_kernel1(const int32_t* ids, const float* table,
                                          const float* positions, float* out, int64_t n, int T,
                                          int d, int pos0, float scale) {
  for (int64_t e = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; e < n;
       e += int64_t{gridDim.x} * blockDim.x)
    out[e] = embedding_element(e, ids, table, positions, T, d, pos0, scale);
}

__global__ void gather_add_forward_kernel1(const int32_t* ids, const float* table, float* out,
                                           int64_t n, int d) {
  for (int64_t e = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; e < n;
       e += int64_t{gridDim.x} * blockDim.x)
    out[e] += table[int64_t{ids[e / d]} * d + e % d];
}

__global__ void mean_pool_forward_kernel1(const float* x, float* y, int64_t n, int T, int d) {
  for (int64_t e = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; e < n;
       e += int64_t{gridDim.x} * blockDim.x)
    y[e] = mean_pool_element(x, e / d, static_cast<int>(e % d), T, d);
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

cudaError_t layernorm_forward(const float* x, const float* gamma, const float* beta, float* y,
                              int rows, int d, float eps, cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return cudaSuccess;
  layernorm_forward_kernel1<<<blocksFor(rows, kRowBlock / kWarp), kRowBlock, 0, stream>>>(
      x, gamma, beta, y, rows, d, eps);
  return cudaGetLastError();
}

cudaError_t activation_forward(float* x, int64_t n, ActivationKind kind, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  activation_forward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(x, n, kind);
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

cudaError_t embedding_forward(const int32_t* ids, const float* table, const float* positions,
                              float* out, int B, int T, int d, int pos0, float scale,
                              cudaStream_t stream) {
  const int64_t n = int64_t{B} * T * d;
  if (n <= 0) return cudaSuccess;
  embedding_forward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(
      ids, table, positions, out, n, T, d, pos0, scale);
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

cudaError_t mean_pool_forward(const float* x, float* y, int B, int T, int d, cudaStream_t stream) {
  const int64_t n = int64_t{B} * d;
  if (n <= 0 || T <= 0) return cudaSuccess;
  mean_pool_forward_kernel1<<<blocksFor(n, kElemBlock), kElemBlock, 0, stream>>>(x, y, n, T, d);
  return cudaGetLastError();
}

cudaError_t kernel_image_status() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, masked_softmax_forward_kernel1);
}

}  // namespace attnviz::cuda

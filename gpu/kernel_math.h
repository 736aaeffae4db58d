// The per-element and per-row math of the CUDA backend's kernels (masked softmax, LayerNorm,
// activations, embedding, index maps) as __host__ __device__ inline functions.
// Plain C++ when not compiled by nvcc: the kernels (kernels.cu) call these, and
// tests/test_gpu_host.cpp calls the same functions on the host against the CPU backend.
#pragma once

#include <math.h>  // expf, erff, tanhf, sqrtf, fmaxf, INFINITY: host and device alike
#include <stdint.h>

#if defined(__CUDACC__)
#define ATTNVIZ_HOST_DEVICE __host__ __device__
#else
#define ATTNVIZ_HOST_DEVICE
#endif

namespace attnviz::cuda {

// ---- masked softmax: probs[b, h, i, :] = softmax(where(mask[b, i, :], fill, scores[b, h, i, :]))

// The value softmax sees for one cell.
ATTNVIZ_HOST_DEVICE inline float masked_score(float score, uint8_t masked, float fill) {
  return masked ? fill : score;
}

// Running maximum of a row; NaN when either is NaN (fmaxf alone would drop it), so that a NaN
// score makes the whole row NaN as on the CPU. The order of a reduction does not change the result.
ATTNVIZ_HOST_DEVICE inline float softmax_max(float a, float b) {
  return (a != a || b != b) ? NAN : fmaxf(a, b);
}

// exp(v - row_max); 0 for every cell of a row whose maximum is -inf (every key masked with
// fill = -inf), where exp(-inf - -inf) would be NaN. backend.h: such a row is all zeros.
ATTNVIZ_HOST_DEVICE inline float softmax_numerator(float v, float row_max) {
  return row_max == -INFINITY ? 0.0f : expf(v - row_max);
}

// numerator / row sum; 0 when the sum is 0 (the all -inf row above); NaN when the sum is NaN.
ATTNVIZ_HOST_DEVICE inline float softmax_prob(float numerator, float row_sum) {
  return row_sum == 0.0f ? 0.0f : numerator / row_sum;
}

// One row of n keys, sequentially: the same three passes the kernel makes with a warp per row.
//   scores, probs: [n] (may alias); mask: [n] uint8 (1 = masked)
ATTNVIZ_HOST_DEVICE inline void masked_softmax_row(const float* scores, const uint8_t* mask,
                                                   float* probs, int n, float fill) {
  float row_max = -INFINITY;
  for (int j = 0; j < n; ++j)
    row_max = softmax_max(row_max, masked_score(scores[j], mask[j], fill));
  float row_sum = 0.0f;
  for (int j = 0; j < n; ++j)
    row_sum += softmax_numerator(masked_score(scores[j], mask[j], fill), row_max);
  for (int j = 0; j < n; ++j)
    probs[j] =
        softmax_prob(softmax_numerator(masked_score(scores[j], mask[j], fill), row_max), row_sum);
}

// Row `row` of scores [B, H, Tq, ·] (row = (b·H + h)·Tq + i) reads mask row b·Tq + i of [B, Tq, ·].
ATTNVIZ_HOST_DEVICE inline int64_t softmax_mask_row(int64_t row, int H, int Tq) {
  const int64_t per_batch = int64_t{H} * Tq;
  return (row / per_batch) * Tq + row % Tq;
}

// ---- LayerNorm: y = (x - mean) / sqrt(var + eps) · gamma + beta (biased variance, as PyTorch)

ATTNVIZ_HOST_DEVICE inline float layernorm_rstd(float variance, float eps) {
  return 1.0f / sqrtf(variance + eps);
}

// Element c of a normalised row; gamma / beta: [d] or nullptr (identity).
ATTNVIZ_HOST_DEVICE inline float layernorm_apply(float x, float mean, float rstd,
                                                 const float* gamma, const float* beta, int c) {
  float y = (x - mean) * rstd;
  if (gamma) y *= gamma[c];
  if (beta) y += beta[c];
  return y;
}

// One row of d values, sequentially, two-pass (mean, then variance about the mean) as the kernel.
//   x, y: [d] (may alias)
ATTNVIZ_HOST_DEVICE inline void layernorm_row(const float* x, const float* gamma, const float* beta,
                                              float* y, int d, float eps) {
  float sum = 0.0f;
  for (int c = 0; c < d; ++c) sum += x[c];
  const float mean = sum / static_cast<float>(d);
  float squares = 0.0f;
  for (int c = 0; c < d; ++c) squares += (x[c] - mean) * (x[c] - mean);
  const float rstd = layernorm_rstd(squares / static_cast<float>(d), eps);
  for (int c = 0; c < d; ++c) y[c] = layernorm_apply(x[c], mean, rstd, gamma, beta, c);
}

// ---- activations (PyTorch's definitions)

// The kernels' own copy of attnviz::Activation (config.h), so kernels.cu needs no core header;
// cuda_backend.cpp maps one to the other.
enum class ActivationKind : int { Relu = 0, Gelu = 1, GeluTanh = 2, Silu = 3, Tanh = 4 };

// max(x, 0); NaN stays NaN as in torch.relu.
ATTNVIZ_HOST_DEVICE inline float relu(float x) {
  return x < 0.0f ? 0.0f : x;
}

// x · Φ(x) = 0.5 · x · (1 + erf(x / √2))   (nn.GELU(), F.gelu)
ATTNVIZ_HOST_DEVICE inline float gelu_erf(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

// 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))   (nn.GELU(approximate="tanh"))
ATTNVIZ_HOST_DEVICE inline float gelu_tanh(float x) {
  const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}

// x · sigmoid(x) = x / (1 + e^(−x))   (nn.SiLU)
ATTNVIZ_HOST_DEVICE inline float silu(float x) {
  return x / (1.0f + expf(-x));
}

ATTNVIZ_HOST_DEVICE inline float activation(float x, ActivationKind kind) {
  switch (kind) {
    case ActivationKind::Silu:
      return silu(x);
    case ActivationKind::Tanh:
      return tanhf(x);
    case ActivationKind::Gelu:
      return gelu_erf(x);
    case ActivationKind::GeluTanh:
      return gelu_tanh(x);
    case ActivationKind::Relu:
    default:
      return relu(x);
  }
}

// ---- embedding: out[b, t, :] = table[ids[b, t], :] · scale + positions[pos0 + t, :]

ATTNVIZ_HOST_DEVICE inline float embedding_value(float token_value, float scale,
                                                 float position_value) {
  return token_value * scale + position_value;
}

// Element e of out [B, T, d] (e = (b·T + t)·d + c); ids: [B, T] int32, table: [vocab, d],
// positions: [>= pos0 + T, d] or nullptr.
ATTNVIZ_HOST_DEVICE inline float embedding_element(int64_t e, const int32_t* ids,
                                                   const float* table, const float* positions,
                                                   int T, int d, int pos0, float scale) {
  const int64_t row = e / d;  // b·T + t
  const int c = static_cast<int>(e % d);
  const int t = static_cast<int>(row % T);
  return embedding_value(table[int64_t{ids[row]} * d + c], scale,
                         positions ? positions[(int64_t{pos0} + t) * d + c] : 0.0f);
}

// ---- mean pooling: y[b, c] = (1/T) · Σ_t x[b, t, c]   x: [B, T, d]

ATTNVIZ_HOST_DEVICE inline float mean_pool_element(const float* x, int64_t b, int c, int T, int d) {
  float sum = 0.0f;
  for (int t = 0; t < T; ++t) sum += x[(b * T + t) * d + c];
  return sum / static_cast<float>(T);
}

}  // namespace attnviz::cuda

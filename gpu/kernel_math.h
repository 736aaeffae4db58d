// The per-element and per-row math of the CUDA backend's kernels (masked softmax, the norms,
// activations, embedding, index maps) as __host__ __device__ inline functions.
// Plain C++ when not compiled by nvcc: the kernels (kernels.cu) call these, and
// tests/test_gpu_host.cpp calls the same functions on the host against the CPU backend.
#pragma once

#include <math.h>  // expf, erff, tanhf, sqrtf, fmaxf, INFINITY: host and device alike
#include <stdint.h>

// Dropout's mask: the very hash the CPU backend uses; the activations, norm kinds and rotary
// layouts the ops take. Plain headers, by their paths, so that kernels.cu sees no other core/
// header.
#include "../core/base/counter_rng.h"
#include "../core/compute/functions.h"
#include "../core/compute/position_buckets.h"

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

// Backward of one row, sequentially, as the kernel does with a warp per row (WRITTEN; ds may
// alias dp): ds[j] = p[j] · (dp[j] − Σ_k p[k]·dp[k]), 0 where masked.
//   p, dp, ds: [n]; mask: [n]
ATTNVIZ_HOST_DEVICE inline float softmax_backward_element(float p, float dp, float dot,
                                                          uint8_t masked) {
  return masked ? 0.0f : p * (dp - dot);
}
ATTNVIZ_HOST_DEVICE inline void masked_softmax_backward_row(const float* p, const float* dp,
                                                            const uint8_t* mask, float* ds, int n) {
  float dot = 0.0f;
  for (int j = 0; j < n; ++j) dot += p[j] * dp[j];
  for (int j = 0; j < n; ++j) ds[j] = softmax_backward_element(p[j], dp[j], dot, mask[j]);
}

// ---- norms: y = x̂ · gamma + beta, x̂ = (x − center) · scale per row (backend.h's norm_forward)

// How one row is normalised: its center (the mean, or 0 for RmsNorm) and scale, and what divides
// Σ dx̂ ⊙ x̂ in the input's gradient: d for LayerNorm and RmsNorm, (d − 1)·std·scale for
// LayerNormStd (0 for a row of equal values, where that term is 0).
struct NormStats {
  float center, scale, grad_div;
};

// Whether `kind` subtracts the row's mean (LayerNorm, LayerNormStd) or not (RmsNorm).
ATTNVIZ_HOST_DEVICE inline bool norm_centred(NormKind kind) {
  return kind != NormKind::RmsNorm;
}

// A row's statistics from its center and Σ (x − center)² over its d values.
ATTNVIZ_HOST_DEVICE inline NormStats norm_stats(NormKind kind, float center, float squares, int d,
                                                float eps) {
  if (kind == NormKind::LayerNormStd) {
    const float std_dev = sqrtf(squares / static_cast<float>(d - 1));  // unbiased, as torch.std
    const float scale = 1.0f / (std_dev + eps);
    return {center, scale, static_cast<float>(d - 1) * std_dev * scale};
  }
  return {center, 1.0f / sqrtf(squares / static_cast<float>(d) + eps), static_cast<float>(d)};
}

// Element c of a normalised row; gamma / beta: [d] or nullptr.
ATTNVIZ_HOST_DEVICE inline float norm_apply(float x, NormStats s, const float* gamma,
                                            const float* beta, int c) {
  float y = (x - s.center) * s.scale;
  if (gamma) y *= gamma[c];
  if (beta) y += beta[c];
  return y;
}

// A row of d values, sequentially, two passes (the center, then the squares about it) as the
// kernel.
ATTNVIZ_HOST_DEVICE inline NormStats norm_row_stats(NormKind kind, const float* x, int d,
                                                    float eps) {
  float center = 0.0f;
  if (norm_centred(kind)) {
    for (int c = 0; c < d; ++c) center += x[c];
    center /= static_cast<float>(d);
  }
  float squares = 0.0f;
  for (int c = 0; c < d; ++c) squares += (x[c] - center) * (x[c] - center);
  return norm_stats(kind, center, squares, d, eps);
}

// One row of d values, sequentially, as the kernel.   x, y: [d] (may alias)
ATTNVIZ_HOST_DEVICE inline void norm_row(NormKind kind, const float* x, const float* gamma,
                                         const float* beta, float* y, int d, float eps) {
  const NormStats s = norm_row_stats(kind, x, d, eps);
  for (int c = 0; c < d; ++c) y[c] = norm_apply(x[c], s, gamma, beta, c);
}

// Backward, one element: dx = scale · (dx̂ − mean_dxhat − x̂ · Σ(dx̂ ⊙ x̂) / grad_div), with
// mean_dxhat = mean(dx̂) for the centred kinds and 0 for RmsNorm.
ATTNVIZ_HOST_DEVICE inline float norm_backward_element(float dxhat, float xhat, NormStats s,
                                                       float mean_dxhat, float sum_dxhat_xhat) {
  const float k = s.grad_div > 0.0f ? sum_dxhat_xhat / s.grad_div : 0.0f;
  return s.scale * (dxhat - mean_dxhat - xhat * k);
}

// One row, sequentially (the kernel's warp does the same sums): dx += the input's gradient;
// returns the row's statistics (for γ's and β's gradients, which sum over rows).
//   dy, x, dx: [d]; gamma: [d] or nullptr
ATTNVIZ_HOST_DEVICE inline NormStats norm_backward_row(NormKind kind, const float* dy,
                                                       const float* x, const float* gamma,
                                                       float* dx, int d, float eps) {
  const NormStats s = norm_row_stats(kind, x, d, eps);
  float sum_dxhat = 0.0f, sum_dxhat_xhat = 0.0f;
  for (int c = 0; c < d; ++c) {
    const float dxhat = gamma ? dy[c] * gamma[c] : dy[c];
    sum_dxhat += dxhat;
    sum_dxhat_xhat += dxhat * (x[c] - s.center) * s.scale;
  }
  const float mean_dxhat = norm_centred(kind) ? sum_dxhat / static_cast<float>(d) : 0.0f;
  for (int c = 0; c < d; ++c) {
    const float dxhat = gamma ? dy[c] * gamma[c] : dy[c];
    dx[c] +=
        norm_backward_element(dxhat, (x[c] - s.center) * s.scale, s, mean_dxhat, sum_dxhat_xhat);
  }
  return s;
}

// ---- rotary position embeddings (backend.h's rope_forward): each pair of a head rotated in place

// Pair e of a heads view's B·T·heads·(d_head/2) pairs, e = ((b·T + t)·heads + h)·(d_head/2) + i:
// rotated by the angle of position pos0 + t and pair i (cos, sin: [>= pos0 + T, d_head/2]);
// sign −1 rotates by minus that angle (rope_backward). data, batch_stride, row_stride: the view.
ATTNVIZ_HOST_DEVICE inline void rope_element(int64_t e, float* data, int64_t batch_stride,
                                             int64_t row_stride, const float* cos, const float* sin,
                                             int T, int heads, int d_head, int pos0,
                                             RopeLayout layout, float sign) {
  const int half = d_head / 2;
  const int i = static_cast<int>(e % half);
  const int64_t bth = e / half;  // (b·T + t)·heads + h
  const int h = static_cast<int>(bth % heads);
  const int64_t row = bth / heads;  // b·T + t
  const int t = static_cast<int>(row % T);
  float* head = data + (row / T) * batch_stride + t * row_stride + int64_t{h} * d_head;
  float* first = head + (layout == RopeLayout::Interleaved ? 2 * i : i);
  float* second = head + (layout == RopeLayout::Interleaved ? 2 * i + 1 : i + half);
  const int64_t at = (int64_t{pos0} + t) * half + i;
  const float c = cos[at], s = sign * sin[at], a = *first, b = *second;
  *first = a * c - b * s;
  *second = a * s + b * c;
}

// ---- activations (PyTorch's definitions)

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

ATTNVIZ_HOST_DEVICE inline float activation(float x, Activation kind) {
  switch (kind) {
    case Activation::Silu:
      return silu(x);
    case Activation::Tanh:
      return tanhf(x);
    case Activation::Gelu:
      return gelu_erf(x);
    case Activation::GeluTanh:
      return gelu_tanh(x);
    case Activation::Relu:
    default:
      return relu(x);
  }
}

// d act / dx at x (the backward multiplies the incoming gradient by it).
ATTNVIZ_HOST_DEVICE inline float activation_grad(float x, Activation kind) {
  switch (kind) {
    case Activation::Silu: {
      const float s = 1.0f / (1.0f + expf(-x));  // σ(x)·(1 + x·(1 − σ(x)))
      return s * (1.0f + x * (1.0f - s));
    }
    case Activation::Tanh: {
      const float t = tanhf(x);
      return 1.0f - t * t;
    }
    case Activation::Gelu:  // Φ(x) + x·φ(x)
      return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) +
             x * 0.39894228040143268f * expf(-0.5f * x * x);
    case Activation::GeluTanh: {  // ½(1 + tanh u) + ½x(1 − tanh²u)·u'
      const float t = tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x));
      const float du = 0.79788456080286536f * (1.0f + 3.0f * 0.044715f * x * x);
      return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
    }
    case Activation::Relu:
    default:
      return x > 0.0f ? 1.0f : 0.0f;
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

// ---- dropout: x[i] = keep(seed, i) ? x[i] / (1 − p) : 0 (counter_rng.h's mask)

ATTNVIZ_HOST_DEVICE inline float dropout_element(float x, uint64_t seed, int64_t i,
                                                 uint32_t threshold, float keep_scale) {
  return attnviz::dropoutKeep(seed, static_cast<uint64_t>(i), threshold) ? x * keep_scale : 0.0f;
}

// ---- cross-entropy with label smoothing ε: q = (1 − ε)·onehot(t) + ε/V

// loss = logsumexp(z) − (1 − ε)·z[t] − (ε/V)·Σ z, from the row's max, Σ exp(z − max) and Σ z.
ATTNVIZ_HOST_DEVICE inline float cross_entropy_loss(float row_max, float sum_exp, float z_target,
                                                    float sum_z, int V, float smoothing) {
  return row_max + logf(sum_exp) - (1.0f - smoothing) * z_target -
         smoothing / static_cast<float>(V) * sum_z;
}

// d loss / d z[v] · scale = scale · (softmax(z)[v] − q[v])
ATTNVIZ_HOST_DEVICE inline float cross_entropy_grad(float z, float row_max, float sum_exp,
                                                    bool is_target, int V, float smoothing,
                                                    float scale) {
  const float q = (is_target ? 1.0f - smoothing : 0.0f) + smoothing / static_cast<float>(V);
  return scale * (expf(z - row_max) / sum_exp - q);
}

// One row, sequentially: the loss (0 when target == ignore) and the argmax (the first on ties).
ATTNVIZ_HOST_DEVICE inline void cross_entropy_row(const float* z, int V, int target,
                                                  int ignore_index, float smoothing, float* loss,
                                                  int32_t* argmax) {
  float row_max = z[0], sum_z = 0.0f;
  int arg = 0;
  for (int v = 0; v < V; ++v) {
    if (z[v] > row_max) row_max = z[v], arg = v;
    sum_z += z[v];
  }
  *argmax = arg;
  if (target == ignore_index) {
    *loss = 0.0f;
    return;
  }
  float sum_exp = 0.0f;
  for (int v = 0; v < V; ++v) sum_exp += expf(z[v] - row_max);
  *loss = cross_entropy_loss(row_max, sum_exp, z[target], sum_z, V, smoothing);
}

// ---- Adam / AdamW (torch.optim's single-tensor step) on one parameter; m, v updated in place

ATTNVIZ_HOST_DEVICE inline float adamw_element(float p, float grad, float* m, float* v, float lr,
                                               float beta1, float beta2, float eps,
                                               float weight_decay, bool decoupled,
                                               float bias_correction1, float bias_correction2,
                                               float grad_scale) {
  const float g = grad * grad_scale + (decoupled ? 0.0f : weight_decay * p);
  if (decoupled) p *= 1.0f - lr * weight_decay;
  *m += (1.0f - beta1) * (g - *m);
  *v = beta2 * *v + (1.0f - beta2) * g * g;
  return p - (lr / bias_correction1) * *m / (sqrtf(*v) / sqrtf(bias_correction2) + eps);
}

}  // namespace attnviz::cuda

#include "arch/positional.h"

#include <algorithm>
#include <cmath>

#include "compute/cpu_backend.h"
#include "compute/position_buckets.h"

namespace attnviz {

Tensor sinusoidalTable(int len, int d_model) {
  Tensor pe({len, d_model});
  // As PyTorch: div_term = exp(arange(0, d, 2) · (−ln(10000)/d)) in float32, then
  // sin/cos(position · div_term) in float32.
  const float k = static_cast<float>(-std::log(10000.0) / d_model);
  for (int i = 0; 2 * i < d_model; ++i) {
    const float div = std::exp(static_cast<float>(2 * i) * k);
    for (int pos = 0; pos < len; ++pos) {
      const float arg = static_cast<float>(pos) * div;
      pe.data[(size_t)pos * d_model + 2 * i] = std::sin(arg);
      if (2 * i + 1 < d_model) pe.data[(size_t)pos * d_model + 2 * i + 1] = std::cos(arg);
    }
  }
  return pe;
}

Tensor sinusoidalHalvesTable(int len, int d_model) {
  Tensor pe({len, d_model});
  const int half = (d_model + 1) / 2;  // sines; cosines fill the rest
  for (int pos = 0; pos < len; ++pos)
    for (int j = 0; j < d_model; ++j) {
      // position_enc[pos, j] = pos / 10000^(2·(j//2)/d); sines take the even j, cosines the odd.
      const bool sine = j < half;
      const int source = sine ? 2 * j : 2 * (j - half) + 1;
      const double angle = pos / std::pow(10000.0, 2.0 * (source / 2) / d_model);
      pe.data[(size_t)pos * d_model + j] = (float)(sine ? std::sin(angle) : std::cos(angle));
    }
  return pe;
}

Tensor sinusoidalFairseqTable(int len, int d_model, int padding_idx) {
  Tensor pe({len, d_model});
  const int half = d_model / 2;
  if (half < 2) return pe;  // no frequencies (the config refuses such a width)
  // emb = log(10000) / (half − 1) in double, then exp(arange(half) · −emb) and
  // arange(rows) · f in float32, as get_embedding computes them.
  const float k = static_cast<float>(-(std::log(10000.0) / (half - 1)));
  for (int i = 0; i < half; ++i) {
    const float f = std::exp(static_cast<float>(i) * k);
    for (int p = 0; p < len; ++p) {
      const float arg = static_cast<float>(padding_idx + 1 + p) * f;
      pe.data[(size_t)p * d_model + i] = std::sin(arg);
      pe.data[(size_t)p * d_model + half + i] = std::cos(arg);
    }
  }
  return pe;
}

std::vector<float> rotaryFrequencies(int d_head, float theta) {
  std::vector<float> inv((size_t)(d_head / 2));
  // inv_freq = 1 / θ^(arange(0, d, 2).float() / d), all float32.
  for (int i = 0; i < d_head / 2; ++i)
    inv[(size_t)i] = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(d_head));
  return inv;
}

Tensor rotaryTable(int len, int d_head, float theta) {
  const int half = d_head / 2;
  Tensor t({2, len, half});
  const std::vector<float> inv = rotaryFrequencies(d_head, theta);
  for (int i = 0; i < half; ++i)
    for (int pos = 0; pos < len; ++pos) {
      const float angle = static_cast<float>(pos) * inv[(size_t)i];  // float32, as PyTorch
      t.data[(size_t)pos * half + i] = std::cos(angle);
      t.data[((size_t)len + pos) * half + i] = std::sin(angle);
    }
  return t;
}

Tensor rotaryScores(int len, int d_head, float theta, RopeLayout layout,
                    const std::vector<float>& x) {
  // rows [len, d_head]: x at every position, then each row turned by its position in place.
  Tensor rows({len, d_head});
  for (int p = 0; p < len; ++p)
    std::copy(x.begin(), x.end(), rows.data.begin() + (size_t)p * d_head);
  const Tensor table = rotaryTable(len, d_head, theta);
  const float* cos = table.ptr();
  const float* sin = cos + (size_t)len * (d_head / 2);
  makeCpuBackend(1)->rope_forward({rows.ptr(), (int64_t)len * d_head, d_head}, cos, sin, 1, len, 1,
                                  d_head, 0, layout);
  double norm2 = 0;
  for (float v : x) norm2 += (double)v * v;
  if (norm2 <= 0) norm2 = 1;
  Tensor s({len, len});
  for (int m = 0; m < len; ++m)
    for (int n = 0; n < len; ++n) {
      double acc = 0;
      for (int c = 0; c < d_head; ++c)
        acc += (double)rows.data[(size_t)m * d_head + c] * rows.data[(size_t)n * d_head + c];
      s.data[(size_t)m * len + n] = (float)(acc / norm2);
    }
  return s;
}

Tensor positionSimilarity(const Tensor& table, int len) {
  const int d = (int)table.dim(1);
  Tensor s({len, len});
  std::vector<float> norm(len);
  for (int i = 0; i < len; ++i) {
    double acc = 0;
    for (int c = 0; c < d; ++c)
      acc += (double)table.data[(size_t)i * d + c] * table.data[(size_t)i * d + c];
    norm[i] = acc > 0 ? (float)std::sqrt(acc) : 1.0f;
  }
  for (int i = 0; i < len; ++i)
    for (int j = 0; j < len; ++j) {
      double acc = 0;
      for (int c = 0; c < d; ++c)
        acc += (double)table.data[(size_t)i * d + c] * table.data[(size_t)j * d + c];
      s.data[(size_t)i * len + j] = (float)(acc / (norm[i] * norm[j]));
    }
  return s;
}

float relativePositionBias(const ModelConfig& cfg, const StackWeights& stack, bool decoder, int h,
                           int i, int j, int* bucket) {
  const int b =
      relative_position_bucket(j - i, !decoder, cfg.relative_buckets, cfg.relative_max_distance);
  if (bucket) *bucket = b;
  return stack.relative_bias.data[size_t(b) * size_t(cfg.n_heads) + size_t(h)];
}

Tensor relativePositionBiasMatrix(const ModelConfig& cfg, const StackWeights& stack, bool decoder,
                                  int h, int n) {
  Tensor bias({n, n});
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      bias.data[size_t(i) * size_t(n) + size_t(j)] =
          relativePositionBias(cfg, stack, decoder, h, i, j);
  return bias;
}

}  // namespace attnviz

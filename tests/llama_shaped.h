// A Llama-shaped model for the suites that need one (test_model_parts, test_teaching, test_tour):
// the parts modern models are made of on a small test model's weights; and rotary positions written
// from their definition, for the tests to compare with.
#pragma once

#include <QtTest/QtTest>
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "arch/weights.h"

namespace attnviz {

// gpt003 (a wq-tutorial GPTModel, random weights) turned into a Llama-shaped model: RMSNorm before
// each sublayer and after the stack, rotary positions, 2 key/value heads for 4 query heads, and
// fc2(silu(gate(x)) ⊙ fc1(x)).
inline std::shared_ptr<LoadedModel> llamaShaped(RopeLayout layout) {
  auto loaded = loadModel(std::string(ATTNVIZ_TEST_DATA) + "/gpt003.safetensors");
  auto m = std::make_shared<LoadedModel>(*loaded);
  ModelConfig& c = m->config;
  c.norm = NormPlacement::Pre;
  c.norm_kind = NormKind::RmsNorm;
  c.final_norm = true;
  c.positional = Positional::Rotary;
  c.rope_theta = 10000.0f;
  c.rope_layout = layout;
  c.n_kv_heads = 2;
  c.gated_ffn = true;
  c.activation = Activation::Silu;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  auto random = [&](Shape shape) {
    Tensor t(std::move(shape));
    for (float& v : t.data) v = u(rng);
    return t;
  };
  auto rms = [&](LayerNormWeights& n) {
    n.gamma = random({c.d_model});
    for (float& g : n.gamma.data) g += 1.0f;
    n.beta = Tensor();
  };
  auto keep = [&](LinearWeights& l, int rows) {  // the first `rows` output rows (2 of 4 heads)
    Tensor w({rows, l.weight.dim(1)});
    std::copy(l.weight.data.begin(), l.weight.data.begin() + w.data.size(), w.data.begin());
    l.weight = w;
    if (!l.bias.empty()) l.bias.data.resize((size_t)rows), l.bias.shape = {rows};
  };
  StackWeights& st = m->weights.decoder;
  st.embed.positions = Tensor();
  for (LayerWeights& l : st.layers) {
    rms(l.norm_self);
    rms(l.norm_ffn);
    keep(l.self_attn.k, c.keyWidth());
    keep(l.self_attn.v, c.kvValueWidth());
    l.ffn.gate.weight = random({c.d_ff, c.d_model});
  }
  rms(st.final_norm);
  return m;
}

// x [d_head] turned by rotary positions at `pos`, in double from the definition: pair i —
// (x[2i], x[2i+1]) interleaved, (x[i], x[i + d_head/2]) in halves — by pos · θ^(−2i/d_head).
inline std::vector<double> rotatedByDefinition(const std::vector<double>& x, int pos, double theta,
                                               RopeLayout layout) {
  const int d = (int)x.size();
  std::vector<double> r = x;
  for (int i = 0; i < d / 2; ++i) {
    const int a = layout == RopeLayout::Interleaved ? 2 * i : i;
    const int b = layout == RopeLayout::Interleaved ? 2 * i + 1 : i + d / 2;
    const double angle = pos * std::pow(theta, -2.0 * i / d);
    r[(size_t)a] = x[(size_t)a] * std::cos(angle) - x[(size_t)b] * std::sin(angle);
    r[(size_t)b] = x[(size_t)a] * std::sin(angle) + x[(size_t)b] * std::cos(angle);
  }
  return r;
}

// The two pair layouts as the rows of a data-driven test: column "layout", a RopeLayout as int.
inline void addRopeLayoutRows() {
  QTest::addColumn<int>("layout");
  QTest::newRow("pairs interleaved (llama2.c)") << (int)RopeLayout::Interleaved;
  QTest::newRow("pairs in halves (Hugging Face)") << (int)RopeLayout::Halves;
}

}  // namespace attnviz

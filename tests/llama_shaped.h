// A Llama-shaped model for the suites that need one (test_model_parts, test_teaching): the parts
// modern models are made of on a small test model's weights.
#pragma once

#include <algorithm>
#include <memory>
#include <random>
#include <string>

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

}  // namespace attnviz

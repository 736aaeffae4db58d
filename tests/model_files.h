// Model files of any shape for tests that need one on disk: random weights (makeRandomModel) saved
// as the nlp-tutorial's state_dict (no biases, identity LayerNorms: absent), with a config in the
// metadata that may be any JSON — also one the loader must refuse.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arch/weights.h"
#include "io/safetensors.h"

namespace attnviz::test {

// A small encoder-decoder: d_model 16, 2 heads, 1+1 layers, the given vocabularies (the target
// one holds "S" and "E" as start and end tokens when it has room).
inline nlohmann::json smallConfig(int src_vocab = 6, int tgt_vocab = 6, int max_len = 64) {
  nlohmann::json c = {
      {"family", "nlp-tutorial"}, {"d_model", 16},         {"d_ff", 32},        {"n_heads", 2},
      {"n_encoder_layers", 1},    {"n_decoder_layers", 1}, {"max_len", max_len}};
  std::vector<std::string> src, tgt;
  for (int i = 0; i < src_vocab; ++i) src.push_back(i == 0 ? "P" : "s" + std::to_string(i));
  for (int i = 0; i < tgt_vocab; ++i)
    tgt.push_back(i == 0 ? "P" : i == 1 ? "S" : i == 2 ? "E" : "t" + std::to_string(i));
  c["src_vocab"] = src;
  c["tgt_vocab"] = tgt;
  c["bos_id"] = std::min(1, tgt_vocab - 1);
  c["eos_id"] = std::min(2, tgt_vocab - 1);
  return c;
}

// Writes the model `config` describes (weights drawn from `seed`); `edit` may change the tensors
// (names, values) first, and `config_json` (default: config itself) is what the metadata holds.
inline void writeRandomModel(const std::string& path, const nlohmann::json& config,
                             uint32_t seed = 1,
                             const std::function<void(std::vector<NamedTensor>&)>& edit = {},
                             const nlohmann::json& config_json = nullptr) {
  const ModelConfig c = ModelConfig::fromJson(config, "test config");
  auto m = makeRandomModel(c, seed);
  std::vector<NamedTensor> tensors;
  auto add = [&](const std::string& name, const Tensor& w) {
    const auto* p = reinterpret_cast<const uint8_t*>(w.ptr());
    tensors.push_back(
        {name, DType::F32, w.shape, std::vector<uint8_t>(p, p + w.data.size() * sizeof(float))});
  };
  auto attention = [&](const std::string& p, const AttentionWeights& a) {
    add(p + ".W_Q.weight", a.q.weight);
    add(p + ".W_K.weight", a.k.weight);
    add(p + ".W_V.weight", a.v.weight);
    add(p + ".fc.weight", a.out.weight);
  };
  auto stack = [&](const std::string& side, const std::string& tokens, const char* self,
                   const StackWeights& s) {
    add(side + "." + tokens + ".weight", s.embed.tokens);
    if (!s.embed.positions.empty()) add(side + ".pos_emb.weight", s.embed.positions);
    for (size_t l = 0; l < s.layers.size(); ++l) {
      const std::string p = side + ".layers." + std::to_string(l);
      attention(p + "." + self, s.layers[l].self_attn);
      if (s.layers[l].hasCross()) attention(p + ".dec_enc_attn", s.layers[l].cross_attn);
      add(p + ".pos_ffn.fc.0.weight", s.layers[l].ffn.fc1.weight);
      add(p + ".pos_ffn.fc.2.weight", s.layers[l].ffn.fc2.weight);
    }
  };
  stack("encoder", "src_emb", "enc_self_attn", m->weights.encoder);
  stack("decoder", "tgt_emb", "dec_self_attn", m->weights.decoder);
  add("projection.weight", m->weights.head.projection.weight);
  if (edit) edit(tensors);
  writeSafetensors(path, tensors,
                   {{"attnviz_config", (config_json.is_null() ? config : config_json).dump()}});
}

// The values of tensor `name` in `tensors`, to change in place.
inline float* tensorValues(std::vector<NamedTensor>& tensors, const std::string& name) {
  for (auto& t : tensors)
    if (t.name == name) return reinterpret_cast<float*>(t.bytes.data());
  throw std::runtime_error("test bug: no tensor " + name);
}

}  // namespace attnviz::test

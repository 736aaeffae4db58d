#include "arch/writer.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "arch/positional.h"
#include "base/error.h"
#include "io/safetensors.h"

namespace attnviz {

namespace {

class TensorList {
 public:
  void add(const std::string& name, const Tensor& t) {
    if (t.empty()) return;
    NamedTensor n{name, DType::F32, t.shape, std::vector<uint8_t>(t.data.size() * sizeof(float))};
    std::memcpy(n.bytes.data(), t.data.data(), n.bytes.size());
    list.push_back(std::move(n));
  }
  void linear(const std::string& prefix, const LinearWeights& l) {
    add(prefix + ".weight", l.weight);
    add(prefix + ".bias", l.bias);
  }
  void norm(const std::string& prefix, const LayerNormWeights& n) {
    add(prefix + ".weight", n.gamma);
    add(prefix + ".bias", n.beta);
  }
  // nn.MultiheadAttention: in_proj_weight [3d, d] = [W_q; W_k; W_v], in_proj_bias, out_proj.
  void multihead(const std::string& prefix, const AttentionWeights& a) {
    add(prefix + ".in_proj_weight", stack({&a.q.weight, &a.k.weight, &a.v.weight}));
    if (!a.q.bias.empty()) add(prefix + ".in_proj_bias", stack({&a.q.bias, &a.k.bias, &a.v.bias}));
    linear(prefix + ".out_proj", a.out);
  }
  std::vector<NamedTensor> list;

 private:
  static Tensor stack(std::initializer_list<const Tensor*> parts) {
    Tensor t;
    int64_t rows = 0;
    for (const Tensor* p : parts) {
      rows += p->dim(0);
      t.data.insert(t.data.end(), p->data.begin(), p->data.end());
    }
    t.shape = (*parts.begin())->shape;
    t.shape[0] = rows;
    return t;
  }
};

// PyTorch's translation tutorial: Seq2SeqTransformer on nn.Transformer.
void seq2seqTransformer(const LoadedModel& m, TensorList& out) {
  const ModelConfig& c = m.config;
  const ModelWeights& w = m.weights;
  out.add("src_tok_emb.embedding.weight", w.encoder.embed.tokens);
  out.add("tgt_tok_emb.embedding.weight", w.decoder.embed.tokens);
  if (c.positional == Positional::Learned) {
    out.add("src_pos_emb.weight", w.encoder.embed.positions);
    out.add("tgt_pos_emb.weight", w.decoder.embed.positions);
  } else {
    // The tutorial's PositionalEncoding buffer [max_len, 1, d] (load_state_dict expects it).
    Tensor pe = sinusoidalTable(c.max_len, c.d_model);
    pe.shape = {c.max_len, 1, c.d_model};
    out.add("positional_encoding.pos_embedding", pe);
  }
  for (size_t l = 0; l < w.encoder.layers.size(); ++l) {
    const LayerWeights& e = w.encoder.layers[l];
    const std::string p = "transformer.encoder.layers." + std::to_string(l);
    out.multihead(p + ".self_attn", e.self_attn);
    out.linear(p + ".linear1", e.ffn.fc1);
    out.linear(p + ".linear2", e.ffn.fc2);
    out.norm(p + ".norm1", e.norm_self);
    out.norm(p + ".norm2", e.norm_ffn);
  }
  for (size_t l = 0; l < w.decoder.layers.size(); ++l) {
    const LayerWeights& e = w.decoder.layers[l];
    const std::string p = "transformer.decoder.layers." + std::to_string(l);
    out.multihead(p + ".self_attn", e.self_attn);
    out.multihead(p + ".multihead_attn", e.cross_attn);
    out.linear(p + ".linear1", e.ffn.fc1);
    out.linear(p + ".linear2", e.ffn.fc2);
    out.norm(p + ".norm1", e.norm_self);
    out.norm(p + ".norm2", e.norm_cross);
    out.norm(p + ".norm3", e.norm_ffn);
  }
  if (c.final_norm) {
    out.norm("transformer.encoder.norm", w.encoder.final_norm);
    out.norm("transformer.decoder.norm", w.decoder.final_norm);
  }
  out.linear("generator", w.head.projection);
}

}  // namespace

bool canSaveModel(const ModelConfig& c) {
  return c.family == Family::PytorchNnTransformer && c.model == ModelClass::Seq2SeqTransformer;
}

void saveModel(const LoadedModel& m, const std::string& path) {
  const ModelConfig& c = m.config;
  if (!canSaveModel(c))
    throw Error(ErrorKind::BadInput, std::string("saving a ") + familyName(c.family) + " " +
                                         modelClassName(c.model) +
                                         " is not supported; attnviz writes pytorch-nn-transformer "
                                         "Seq2SeqTransformer models");
  TensorList tensors;
  seq2seqTransformer(m, tensors);
  nlohmann::json config = c.toJson();
  if (!c.examples.empty()) {
    config["examples"] = nlohmann::json::array();
    for (const auto& e : c.examples) config["examples"].push_back({{"src", e.src}, {"tgt", e.tgt}});
  }
  writeSafetensors(path, tensors.list, {{"attnviz_config", config.dump()}});
}

}  // namespace attnviz

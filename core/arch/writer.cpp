#include "arch/writer.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "arch/positional.h"
#include "base/error.h"
#include "io/safetensors.h"

namespace attnviz {

namespace {

class TensorList {
 public:
  void add(const std::string& name, const Tensor& t) {
    if (t.empty() || !names_.insert(name).second) return;  // a shared table once
    NamedTensor n{name, DType::F32, t.shape, std::vector<uint8_t>(t.data.size() * sizeof(float))};
    std::memcpy(n.bytes.data(), t.data.data(), n.bytes.size());
    list.push_back(std::move(n));
  }
  std::vector<NamedTensor> list;

 private:
  std::set<std::string> names_;
};

Tensor stacked(std::initializer_list<const Tensor*> parts) {
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

Tensor transposed(const Tensor& t) {
  const int64_t r = t.shape[0], c = t.shape[1];
  Tensor out({c, r});
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out.data[j * r + i] = t.data[i * c + j];
  return out;
}

// The one layout of weights.h written back under a descriptor's names: each role under its first
// spelling (fused Q/K/V stacked, Conv1D weights transposed, one module per head split again).
class Writer {
 public:
  Writer(const LoadedModel& m, TensorList& out) : c_(m.config), spec_(m.config.spec()), out_(out) {}

  void write(const ModelWeights& w) {
    if (c_.hasEncoder()) stack(Part::Encoder, w.encoder);
    if (c_.hasDecoder()) stack(Part::Decoder, w.decoder);
    const HeadWeights& h = w.head;
    linear(Part::Head, Role::Output, 0, h.projection);
    linear(Part::Head, Role::MlmTransform, 0, h.mlm_transform);
    norm(Part::Head, Role::MlmNorm, 0, h.mlm_norm);
    linear(Part::Head, Role::Pooler, 0, h.pooler);
    linear(Part::Head, Role::Classifier, 0, h.classifier);
  }

 private:
  const ModelConfig& c_;
  const ArchSpec& spec_;
  TensorList& out_;

  const TensorName* first(Part p, Role r) const {
    const auto all = spec_.spellings(p, r);
    return all.empty() ? nullptr : all.front();
  }
  void linear(const TensorName* t, int layer, int head, const LinearWeights& l) {
    if (!t || l.empty()) return;
    out_.add(expandName(t->weight, layer, head),
             (t->flags & kTransposed) ? transposed(l.weight) : l.weight);
    if (!l.bias.empty() && !t->bias.empty()) {
      Tensor b = l.bias;
      if (t->flags & kBiasRow) b.shape = {1, b.shape[0]};
      out_.add(expandName(t->bias, layer, head), b);
    }
  }
  void linear(Part p, Role r, int layer, const LinearWeights& l) {
    linear(first(p, r), layer, 0, l);
  }
  void norm(Part p, Role r, int layer, const LayerNormWeights& n) {
    const TensorName* t = first(p, r);
    if (!t || n.identity()) return;
    out_.add(expandName(t->weight, layer, 0), n.gamma);
    if (!t->bias.empty()) out_.add(expandName(t->bias, layer, 0), n.beta);
  }
  void attention(Part p, bool cross, int l, const AttentionWeights& a) {
    const Role q = cross ? Role::CrossQ : Role::AttnQ;
    if (const TensorName* t = first(p, cross ? Role::CrossQkv : Role::AttnQkv)) {
      LinearWeights all;
      all.weight = stacked({&a.q.weight, &a.k.weight, &a.v.weight});
      if (!a.q.bias.empty()) all.bias = stacked({&a.q.bias, &a.k.bias, &a.v.bias});
      linear(t, l, 0, all);
    } else if (spec_.perHead(p, q)) {
      const LinearWeights* parts[3] = {&a.q, &a.k, &a.v};
      for (int i = 0; i < 3; ++i) {
        const int heads = i == 0 ? c_.n_heads : c_.kvHeads();
        const int64_t width = parts[i]->weight.dim(0) / heads;
        for (int h = 0; h < heads; ++h) {
          LinearWeights one;
          one.weight = rowsOf(parts[i]->weight, h * width, width);
          if (!parts[i]->bias.empty()) one.bias = rowsOf(parts[i]->bias, h * width, width);
          linear(first(p, Role((int)q + i)), l, h, one);
        }
      }
    } else {
      for (int i = 0; i < 3; ++i) linear(p, Role((int)q + i), l, i == 0 ? a.q : i == 1 ? a.k : a.v);
    }
    linear(p, cross ? Role::CrossOut : Role::AttnOut, l, a.out);
  }
  static Tensor rowsOf(const Tensor& t, int64_t from, int64_t n) {
    const int64_t C = t.shape.size() == 2 ? t.shape[1] : 1;
    Shape shape = t.shape;
    shape[0] = n;
    return Tensor(shape,
                  std::vector<float>(t.data.begin() + from * C, t.data.begin() + (from + n) * C));
  }
  void stack(Part p, const StackWeights& s) {
    if (const TensorName* t = first(p, Role::TokenEmbd)) out_.add(t->weight, s.embed.tokens);
    if (c_.positional == Positional::Learned) {
      if (const TensorName* t = first(p, Role::PosEmbd)) out_.add(t->weight, s.embed.positions);
    } else if (const TensorName* t = first(p, Role::PosTable);
               t && c_.positional == Positional::Sinusoidal) {
      // The tutorial's PositionalEncoding buffer (load_state_dict expects it).
      Tensor pe = sinusoidalTable(c_.max_len, c_.d_model);
      if (t->flags & kSeqFirst) pe.shape = {c_.max_len, 1, c_.d_model};
      if (t->flags & kBatchFirst) pe.shape = {1, c_.max_len, c_.d_model};
      out_.add(t->weight, pe);
    }
    if (const TensorName* t = first(p, Role::SegmentEmbd)) out_.add(t->weight, s.embed.segments);
    norm(p, Role::EmbdNorm, 0, s.embed.norm);
    for (size_t i = 0; i < s.layers.size(); ++i) {
      const int l = (int)i;
      const LayerWeights& e = s.layers[i];
      attention(p, false, l, e.self_attn);
      norm(p, Role::AttnNorm, l, e.norm_self);
      if (e.hasCross()) {
        attention(p, true, l, e.cross_attn);
        norm(p, Role::CrossNorm, l, e.norm_cross);
      }
      linear(p, Role::FfnUp, l, e.ffn.fc1);
      linear(p, Role::FfnGate, l, e.ffn.gate);
      linear(p, Role::FfnDown, l, e.ffn.fc2);
      norm(p, Role::FfnNorm, l, e.norm_ffn);
    }
    if (c_.final_norm) norm(p, Role::FinalNorm, 0, s.final_norm);
  }
};

std::string writableList() {
  std::string s;
  for (const auto& a : architectures())
    if (a.writable) s += (s.empty() ? "" : ", ") + a.summary();
  return s;
}

}  // namespace

bool canSaveModel(const ModelConfig& c) {
  return c.spec().writable;
}

void saveModel(const LoadedModel& m, const std::string& path) {
  const ModelConfig& c = m.config;
  if (!canSaveModel(c))
    throw Error(ErrorKind::BadInput, "saving a " + c.spec().summary() +
                                         " is not supported; attnviz writes " + writableList() +
                                         " models");
  TensorList tensors;
  Writer(m, tensors).write(m.weights);
  nlohmann::json config = c.toJson();
  if (!c.examples.empty()) {
    config["examples"] = nlohmann::json::array();
    for (const auto& e : c.examples) config["examples"].push_back({{"src", e.src}, {"tgt", e.tgt}});
  }
  writeSafetensors(path, tensors.list, {{"attnviz_config", config.dump()}});
}

}  // namespace attnviz

#include "model/device_weights.h"

#include <algorithm>
#include <map>

#include "arch/positional.h"

namespace attnviz {

namespace {

// Lays the parameters out in DeviceWeights::params. Run twice over the same weights: first to
// count (hands out null pointers; needs no backend), then to place and upload.
class ParamPacker {
 public:
  ParamPacker(Backend* be, DeviceWeights& dw) : be_(be), dw_(dw) {}
  void start(int64_t total) {
    dw_.params = be_->allocate((size_t)std::max<int64_t>(total, 1) * sizeof(float));
    dw_.n_params = total;
    dw_.bytes += (uint64_t)total * sizeof(float);
    base_ = dw_.params->f32();
    used_ = 0;
  }
  int64_t used() const { return used_; }
  int64_t padded() const { return padded_; }  // zeros standing for a missing bias: not parameters

  // A region of n floats made of these host tensors in order (null = n_i zeros).
  float* take(std::initializer_list<std::pair<const Tensor*, int64_t>> parts) {
    float* at = base_ ? base_ + used_ : nullptr;
    for (const auto& [t, n] : parts) {
      if (base_) {
        if (t) {
          be_->upload(*dw_.params, t->ptr(), (size_t)n * sizeof(float),
                      (size_t)used_ * sizeof(float));
          dw_.pieces.emplace_back(t, used_);
        } else {
          dw_.padding.emplace_back(used_, n);
        }
      }
      if (!t) padded_ += n;
      used_ += n;
    }
    return at;
  }
  float* take(const Tensor& t) { return take({{&t, t.size()}}); }
  // Another host tensor that is the parameter at `at` (tied weights: one parameter, two names).
  float* alias(const Tensor& t, float* at) {
    if (base_) dw_.pieces.emplace_back(&t, at - base_);
    return at;
  }

 private:
  Backend* be_;
  DeviceWeights& dw_;
  float* base_ = nullptr;
  int64_t used_ = 0, padded_ = 0;
};

// Stacks the parts' rows: [W_1; W_2; ...] and their biases (all or none have one; a part without
// one gets zeros).
DeviceLinear packLinear(ParamPacker& pk, std::initializer_list<const LinearWeights*> parts) {
  DeviceLinear l;
  l.in = (int)(*parts.begin())->weight.dim(1);
  bool bias = false;
  for (const LinearWeights* p : parts) {
    bias = bias || !p->bias.empty();
    l.out += (int)p->weight.dim(0);
  }
  if (parts.size() == 1) {
    const LinearWeights& p = **parts.begin();
    l.w = pk.take(p.weight);
    if (bias) l.b = pk.take(p.bias);
    return l;
  }
  const LinearWeights *a = *parts.begin(), *b = *(parts.begin() + 1);
  l.w = pk.take({{&a->weight, a->weight.size()}, {&b->weight, b->weight.size()}});
  if (bias)
    l.b = pk.take({{a->bias.empty() ? nullptr : &a->bias, a->weight.dim(0)},
                   {b->bias.empty() ? nullptr : &b->bias, b->weight.dim(0)}});
  return l;
}

DeviceNorm packNorm(ParamPacker& pk, const LayerNormWeights& n) {
  DeviceNorm d;
  if (!n.identity()) {
    d.gamma = pk.take(n.gamma);
    if (!n.beta.empty()) d.beta = pk.take(n.beta);
  }
  return d;
}

DeviceAttention packAttention(ParamPacker& pk, const AttentionWeights& a) {
  return {packLinear(pk, {&a.q}), packLinear(pk, {&a.k, &a.v}), packLinear(pk, {&a.out}),
          packNorm(pk, a.q_norm), packNorm(pk, a.k_norm)};
}

DeviceStack packStack(ParamPacker& pk, const StackWeights& s) {
  DeviceStack d;
  d.tokens = pk.take(s.embed.tokens);
  if (!s.embed.segments.empty()) d.segments = pk.take(s.embed.segments);
  if (!s.embed.positions.empty()) {
    d.learned_positions = pk.take(s.embed.positions);
    d.positions = d.learned_positions;
  }
  d.embed_norm = packNorm(pk, s.embed.norm);
  if (!s.relative_bias.empty()) d.relative_bias = pk.take(s.relative_bias);
  for (const auto& l : s.layers) {
    DeviceLayer e;
    e.self_attn = packAttention(pk, l.self_attn);
    e.norm_self = packNorm(pk, l.norm_self);
    if (!l.post_self.identity()) {
      e.has_post_norms = true;
      e.post_self = packNorm(pk, l.post_self);
      e.post_ffn = packNorm(pk, l.post_ffn);
    }
    if (l.hasCross()) {
      e.has_cross = true;
      e.cross_attn = packAttention(pk, l.cross_attn);
      e.norm_cross = packNorm(pk, l.norm_cross);
    }
    if (!l.ffn.fc1.weight.empty()) {  // an attention-only model has no feed-forward
      e.fc1 = l.ffn.gate.empty() ? packLinear(pk, {&l.ffn.fc1})
                                 : packLinear(pk, {&l.ffn.gate, &l.ffn.fc1});
      e.fc2 = packLinear(pk, {&l.ffn.fc2});
      e.norm_ffn = packNorm(pk, l.norm_ffn);
    }
    d.layers.push_back(std::move(e));
  }
  d.final_norm = packNorm(pk, s.final_norm);
  return d;
}

// Whether the output projection is the token table of the stack below it (tied weights: BERT's
// decoder, nanoGPT's and llama2.c's lm_head): same shape, same values, no bias of its own.
bool tiedOutput(const ModelConfig& c, const ModelWeights& w) {
  const Tensor& tokens = c.hasDecoder() ? w.decoder.embed.tokens : w.encoder.embed.tokens;
  const LinearWeights& p = w.head.projection;
  return !p.empty() && !tokens.empty() && p.weight.shape == tokens.shape &&
         p.weight.data == tokens.data;
}

// Every parameter of a model into dw (stacks and heads).
void packWeights(ParamPacker& pk, const ModelConfig& c, const ModelWeights& w, DeviceWeights& dw) {
  if (c.hasEncoder()) dw.enc = packStack(pk, w.encoder);
  if (c.hasDecoder()) dw.dec = packStack(pk, w.decoder);
  const HeadWeights& h = w.head;
  DeviceHead& dh = dw.head;
  if (!h.projection.empty()) {
    if (dw.tied) {
      dh.projection.in = (int)h.projection.weight.dim(1);
      dh.projection.out = (int)h.projection.weight.dim(0);
      dh.projection.w = pk.alias(h.projection.weight, (c.hasDecoder() ? dw.dec : dw.enc).tokens);
      if (!h.projection.bias.empty()) dh.projection.b = pk.take(h.projection.bias);
    } else {
      dh.projection = packLinear(pk, {&h.projection});
    }
  }
  if (!h.mlm_transform.empty()) {
    dh.mlm_transform = packLinear(pk, {&h.mlm_transform});
    dh.mlm_norm = packNorm(pk, h.mlm_norm);
  }
  if (!h.pooler.empty()) dh.pooler = packLinear(pk, {&h.pooler});
  if (!h.classifier.empty()) dh.classifier = packLinear(pk, {&h.classifier});
}

BufferPtr uploadTable(Backend& be, const Tensor& t, uint64_t* bytes) {
  BufferPtr buf = be.allocate(t.data.size() * sizeof(float));
  be.upload(*buf, t.ptr(), t.data.size() * sizeof(float));
  *bytes += t.data.size() * sizeof(float);
  return buf;
}

}  // namespace

DeviceWeights uploadWeights(Backend& be, const ModelConfig& c, const ModelWeights& w, int rows) {
  DeviceWeights dw;
  if (c.positional == Positional::Sinusoidal || c.positional == Positional::SinusoidalHalves ||
      c.positional == Positional::SinusoidalFairseq)
    dw.sinusoid = uploadTable(be,
                              c.positional == Positional::SinusoidalHalves
                                  ? sinusoidalHalvesTable(rows, c.d_model)
                              : c.positional == Positional::SinusoidalFairseq
                                  ? sinusoidalFairseqTable(rows, c.d_model, c.src_pad_id)
                                  : sinusoidalTable(rows, c.d_model),
                              &dw.bytes);
  if (c.positional == Positional::Rotary) {
    dw.rotary = uploadTable(be, rotaryTable(rows, c.rotaryDims(), c.rope_theta), &dw.bytes);
    dw.rotary_rows = rows;
  }
  dw.tied = tiedOutput(c, w);
  ParamPacker packer(&be, dw);
  packWeights(packer, c, w, dw);  // counts
  packer.start(packer.used());
  packWeights(packer, c, w, dw);  // places and uploads
  for (DeviceStack* st : {&dw.enc, &dw.dec}) {
    if (!st->positions) {
      if (dw.sinusoid) st->positions = dw.sinusoid->f32();
    } else {  // a learned table whose first position_offset rows are never used (BART)
      st->positions += (size_t)c.position_offset * c.d_model;
    }
  }
  return dw;
}

int64_t countParameters(const ModelConfig& c, const ModelWeights& w) {
  DeviceWeights dw;
  dw.tied = tiedOutput(c, w);
  ParamPacker packer(nullptr, dw);
  packWeights(packer, c, w, dw);
  return packer.used() - packer.padded();
}

ModelWeights downloadWeights(Backend& be, const DeviceWeights& dw, const ModelWeights& like,
                             const float* base) {
  std::vector<float> all((size_t)dw.n_params);
  be.copy_to_host(base, all.data(), dw.n_params);
  std::vector<const Tensor*> from;
  forEachTensor(like, [&](const std::string&, const Tensor& t) { from.push_back(&t); });
  ModelWeights out = like;
  std::vector<Tensor*> to;
  forEachTensor(out, [&](const std::string&, Tensor& t) { to.push_back(&t); });
  std::map<const Tensor*, Tensor*> match;
  for (size_t i = 0; i < from.size(); ++i) match[from[i]] = to[i];
  for (const auto& [t, offset] : dw.pieces) {
    Tensor* dst = match.at(t);
    std::copy(all.begin() + offset, all.begin() + offset + dst->size(), dst->data.begin());
  }
  return out;
}

}  // namespace attnviz

#include "model/recorder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace attnviz {

namespace {

// The widest row an activation has: d_model, or an attention block's context H·d_v.
int stageWidth(const ModelConfig& c) {
  return std::max(c.d_model, c.valueWidth());
}

}  // namespace

Recorder::Recorder(Backend& be, Arena& arena, const ModelConfig& c, const ForwardOptions& o,
                   int rows)
    : be_(be), a_(arena), c_(c), o_(o), host_(be.hostVisible()) {
  if (o.keep_activations) stage_ = arena.floats((int64_t)rows * stageWidth(c));
}

uint64_t Recorder::floatsFor(const ModelConfig& c, const ForwardOptions& o, int rows) {
  return o.keep_activations ? (uint64_t)rows * stageWidth(c) : 0;
}

void Recorder::begin(Side side, int B, int n, int past, RecordTo to) {
  side_ = side;
  B_ = B;
  n_ = n;
  past_ = past;
  to_ = to;
  if (!o_.record) to_.blocks = nullptr;
  acts_ = stage_ && past == 0 ? to.activations : nullptr;
}

AttentionBlock* Recorder::block(AttentionKind kind, int layer, int n, int Tk, int q0,
                                const MaskRule& mask, const float* relative_bias) {
  if (!to_.blocks) return nullptr;
  AttentionBlock& b =
      to_.blocks->emplace_back(kind, layer, B_, c_.n_heads, c_.kvHeads(), n, Tk, c_.d_k);
  b.d_v = c_.d_v;
  b.q_pos0 = q0;
  b.mask = mask;
  ScoreRule& r = b.rule;
  r.scale = c_.scoreScale();
  r.softcap = c_.attn_softcap;
  r.fill = c_.mask_fill;
  if (relative_bias) {
    r.relative_bias.resize((size_t)c_.relative_buckets * c_.n_heads);
    be_.copy_to_host(relative_bias, r.relative_bias.data(), (int64_t)r.relative_bias.size());
    r.buckets = c_.relative_buckets;
    r.max_distance = c_.relative_max_distance;
    r.bidirectional = kind == AttentionKind::EncoderSelf;
  }
  for (const HeadIntervention& iv : o_.interventions)
    if (iv.kind == kind && iv.layer == layer && iv.head >= 0 && iv.head < c_.n_heads &&
        iv.temperature != 1.0f) {
      r.temperature.resize((size_t)c_.n_heads, 1.0f);
      r.temperature[(size_t)iv.head] = iv.temperature;
    }
  return &b;
}

void Recorder::vectors(AttentionBlock* block, HeadsView qv, HeadsView kv, int values, int kv0) {
  if (!block) return;
  block->kv0 = kv0;
  const int H = c_.n_heads, Hkv = c_.kvHeads(), keys = block->k_len - kv0;
  captureHeads(qv, 0, block->q_len, 0, c_.d_k, H, block->q);
  captureHeads(kv, kv0, keys, 0, c_.d_k, Hkv, block->k);
  if (o_.keep_qkv) captureHeads(kv, kv0, keys, values, c_.d_v, Hkv, block->v);
}

// out[b, g, i, c] = view[b, row0 + i, col0 + g·d + c] for i < rows and g < heads (out: [B, heads,
// rows, d]).
void Recorder::captureHeads(HeadsView view, int row0, int rows, int col0, int d, int heads,
                            HostVector<float>& out) {
  out.resize((size_t)B_ * heads * rows * d);  // every cell written below
  HostVector<float> tmp((size_t)rows * view.row_stride);
  for (int b = 0; b < B_; ++b) {
    if (rows == 0) break;
    be_.copy_to_host(view.data + b * view.batch_stride + (int64_t)row0 * view.row_stride,
                     tmp.data(), (int64_t)(rows - 1) * view.row_stride + col0 + (int64_t)heads * d);
    for (int g = 0; g < heads; ++g)
      for (int i = 0; i < rows; ++i)
        std::memcpy(&out[(((size_t)b * heads + g) * rows + i) * d],
                    &tmp[(size_t)i * view.row_stride + col0 + (size_t)g * d], d * sizeof(float));
  }
}

const float* Recorder::onHost(const float* p, int64_t n, std::vector<float>& staging) {
  if (host_) return p;
  staging.resize((size_t)n);
  be_.copy_to_host(p, staging.data(), n);
  return staging.data();
}

void Recorder::rows(AttentionBlock* block, int b, int i0, int m, const float* in,
                    const uint8_t* mask, const float* probs) {
  if (!block) return;
  const int H = block->heads, Tk = block->k_len;
  const int64_t cells = (int64_t)H * m * Tk;
  std::vector<float> in_staging, p_staging;
  const float* v = onHost(in, cells, in_staging);
  const float* p = onHost(probs, cells, p_staging);
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < m; ++i) {
      const float* pr = p + ((int64_t)h * m + i) * Tk;
      // The most probable key (the first on ties); a NaN anywhere makes the row NaN, as the pass.
      int at = 0;
      bool nan = false;
      for (int j = 0; j < Tk; ++j) {
        nan |= pr[j] != pr[j];
        if (pr[j] > pr[at]) at = j;
      }
      const size_t r = ((size_t)b * H + h) * block->q_cap + i0 + i;
      float ref = mask[(int64_t)i * Tk + at] ? c_.mask_fill : v[((int64_t)h * m + i) * Tk + at];
      float p_ref = nan ? std::numeric_limits<float>::quiet_NaN() : pr[at];
      if (!nan && (p_ref == 0.0f || !std::isfinite(ref))) {  // every key masked with −∞: zeros
        ref = 0.0f;
        p_ref = 0.0f;
      }
      block->row_ref[r] = ref;
      block->row_prob[r] = p_ref;
    }
}

Tensor Recorder::download(const float* p, int rows, int width) {
  Tensor t({B_, rows / B_, width});
  be_.copy(p, stage_, (int64_t)rows * width);
  a_.get(stage_, t.ptr(), t.data.size() * sizeof(float));
  return t;
}

void Recorder::sublayer(int layer, Sublayer s, const float* in, const float* out, int rows) {
  if (!acts_) return;
  SublayerActivation v;
  v.side = side_;
  v.layer = layer;
  v.sublayer = s;
  v.input = download(in, rows, c_.d_model);
  v.output = download(out, rows, c_.d_model);
  if (s == Sublayer::SelfAttention || s == Sublayer::CrossAttention)
    v.context = std::move(context_);
  context_ = Tensor();
  acts_->push_back(std::move(v));
}

void Recorder::heads(const float* ctx, int rows) {
  if (acts_) context_ = download(ctx, rows, c_.valueWidth());
}

void Recorder::residual(int layer, const float* x, int rows) {
  if (!acts_) return;
  SublayerActivation v;
  v.side = side_;
  v.layer = layer;
  v.sublayer = Sublayer::Residual;
  v.input = std::move(stream_);
  v.output = download(x, rows, c_.d_model);
  stream_ = v.output;
  acts_->push_back(std::move(v));
}

void Recorder::embedding(const int32_t* ids, const int32_t* segments, const float* tokens,
                         const float* segment_table, float scale, const float* x, int rows) {
  if (!acts_) return;
  const int d = c_.d_model;
  SublayerActivation v;
  v.side = side_;
  v.layer = -1;
  v.sublayer = Sublayer::Embedding;
  v.output = download(x, rows, d);
  stream_ = v.output;
  be_.embedding_forward(ids, tokens, nullptr, stage_, B_, rows / B_, d, 0, scale);
  if (segments && segment_table) be_.gather_add_forward(segments, segment_table, stage_, rows, d);
  v.input = Tensor({B_, rows / B_, d});
  a_.get(stage_, v.input.ptr(), v.input.data.size() * sizeof(float));
  acts_->push_back(std::move(v));
}

}  // namespace attnviz

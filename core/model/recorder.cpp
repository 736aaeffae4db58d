#include "model/recorder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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
  if (!o_.record) {
    to_.blocks = nullptr;
    to_.future = nullptr;
  }
  acts_ = stage_ && past == 0 ? to.activations : nullptr;
}

AttentionBlock* Recorder::block(AttentionKind kind, int layer, int n, int Tk,
                                const std::vector<uint8_t>& mask) {
  if (!to_.blocks) return nullptr;
  AttentionBlock& b = to_.blocks->emplace_back(kind, layer, B_, c_.n_heads, n, Tk,
                                               o_.keep_scores && !o_.scores_from_qk,
                                               /*zero_fill=*/false);
  b.scores_from_qk = o_.keep_scores && o_.scores_from_qk;
  b.mask.assign(mask.begin(), mask.end());
  return &b;
}

float* Recorder::scoresTarget(AttentionBlock* block, float* scratch) const {
  return host_ && block && !block->scores.empty() ? block->scores.data() : scratch;
}

float* Recorder::probsTarget(AttentionBlock* block, float* scratch) const {
  return host_ && block ? block->probs.data() : scratch;
}

void Recorder::attention(AttentionBlock* block, const float* scores, const float* probs,
                         HeadsView qv, HeadsView kv, int values, int kv0) {
  if (!block) return;
  if (!host_) {
    const int64_t cells = (int64_t)block->batch * block->heads * block->q_len * block->k_len;
    a_.get(probs, block->probs.data(), cells * sizeof(float));
    if (!block->scores.empty()) a_.get(scores, block->scores.data(), cells * sizeof(float));
  }
  if (o_.keep_qkv || block->scores_from_qk) {
    block->d_k = c_.d_k;
    block->d_v = c_.d_v;
    block->kv0 = kv0;
    const int H = c_.n_heads, Hkv = c_.kvHeads(), keys = block->k_len - kv0;
    captureHeads(qv, 0, block->q_len, 0, c_.d_k, H, block->q);
    captureHeads(kv, kv0, keys, 0, c_.d_k, Hkv, block->k);
    if (o_.keep_qkv) captureHeads(kv, kv0, keys, values, c_.d_v, Hkv, block->v);
  }
}

// out[b, h, i, c] = view[b, row0 + i, col0 + g·d + c] for i < rows, g the view's head that query
// head h reads (out: [B, H, rows, d]; a key/value head shared by a group of query heads is repeated
// for each of them).
void Recorder::captureHeads(HeadsView view, int row0, int rows, int col0, int d, int view_heads,
                            HostVector<float>& out) {
  const int H = c_.n_heads, group = H / view_heads;
  out.resize((size_t)B_ * H * rows * d);  // every cell written below
  HostVector<float> tmp((size_t)rows * view.row_stride);
  for (int b = 0; b < B_; ++b) {
    if (rows == 0) break;
    be_.copy_to_host(view.data + b * view.batch_stride + (int64_t)row0 * view.row_stride,
                     tmp.data(),
                     (int64_t)(rows - 1) * view.row_stride + col0 + (int64_t)view_heads * d);
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < rows; ++i)
        std::memcpy(&out[(((size_t)b * H + h) * rows + i) * d],
                    &tmp[(size_t)i * view.row_stride + col0 + (size_t)(h / group) * d],
                    d * sizeof(float));
  }
}

void Recorder::futureScores(const float* q_store, const float* kv_store, int cap, float* scratch,
                            const float* relative_bias) {
  if (!to_.future) return;
  if (past_ == 0 || !o_.keep_scores || o_.scores_from_qk || !q_store) {
    to_.future->emplace_back();
    return;
  }
  const int H = c_.n_heads, A = c_.attnWidth(), KV = c_.keyWidth() + c_.kvValueWidth();
  std::vector<float>& f = to_.future->emplace_back((size_t)B_ * H * past_ * n_);
  float* dst = host_ ? f.data() : scratch;
  be_.attention_scores_forward(
      {q_store, (int64_t)cap * A, A}, {kv_store + (int64_t)past_ * KV, (int64_t)cap * KV, KV}, dst,
      B_, H, c_.kvHeads(), past_, n_, c_.d_k,
      c_.attn_softcap > 0.0f ? c_.scoreScale() / c_.attn_softcap : c_.scoreScale());
  if (c_.attn_softcap > 0.0f) {  // Gemma 2: cap·tanh(s / cap), as Pass::attend
    be_.activation_forward(dst, (int64_t)f.size(), Activation::Tanh);
    be_.scale_forward(dst, (int64_t)f.size(), c_.attn_softcap);
  }
  // T5's decoder: + the bias of key (past + j) − query i, as position_bias_forward with query
  // positions starting at −past relative to the new keys
  if (relative_bias)
    be_.position_bias_forward(relative_bias, dst, B_, H, past_, n_, -past_, c_.relative_buckets,
                              c_.relative_max_distance, false);
  if (!host_) a_.get(scratch, f.data(), f.size() * sizeof(float));
}

void Recorder::noFutureScores() {
  if (to_.future) to_.future->emplace_back();
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

#include "model/trace.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/error.h"

namespace attnviz {

const char* attentionKindName(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::EncoderSelf:
      return "enc_self";
    case AttentionKind::DecoderSelf:
      return "dec_self";
    case AttentionKind::Cross:
      return "cross";
  }
  return "?";
}

const char* attentionKindTitle(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::EncoderSelf:
      return "Encoder self-attention";
    case AttentionKind::DecoderSelf:
      return "Decoder masked self-attention";
    case AttentionKind::Cross:
      return "Encoder-decoder (cross) attention";
  }
  return "?";
}

Side querySide(AttentionKind kind) {
  return kind == AttentionKind::EncoderSelf ? Side::Source : Side::Target;
}

Side keySide(AttentionKind kind) {
  return kind == AttentionKind::DecoderSelf ? Side::Target : Side::Source;
}

AttentionBlock::AttentionBlock(AttentionKind kind_, int layer_, int batch_, int heads_, int q_len_,
                               int k_len_, bool keep_scores, bool zero_fill)
    : kind(kind_),
      layer(layer_),
      batch(batch_),
      heads(heads_),
      q_len(q_len_),
      k_len(k_len_),
      q_cap(q_len_),
      k_cap(k_len_) {
  const size_t n = (size_t)batch * heads * q_len * k_len, n_mask = (size_t)batch * q_len * k_len;
  if (zero_fill) {
    probs.assign(n, 0.0f);
    if (keep_scores) scores.assign(n, 0.0f);
    mask.assign(n_mask, 0);
  } else {
    probs.resize(n);
    if (keep_scores) scores.resize(n);
    mask.resize(n_mask);
  }
}

namespace {

// [batch, heads, q_len, k_len] from rows that row(b, h, i) points to (k_len values each).
template <class T, class Row>
std::vector<T> dense(const AttentionBlock& a, Row row) {
  std::vector<T> out((size_t)a.batch * a.heads * a.q_len * a.k_len);
  for (int b = 0; b < a.batch; ++b)
    for (int h = 0; h < a.heads; ++h)
      for (int i = 0; i < a.q_len; ++i)
        std::memcpy(out.data() + (((size_t)b * a.heads + h) * a.q_len + i) * a.k_len, row(b, h, i),
                    (size_t)a.k_len * sizeof(T));
  return out;
}

}  // namespace

std::vector<float> AttentionBlock::denseProbs() const {
  return dense<float>(*this, [&](int b, int h, int i) { return probRow(b, h, i); });
}

float AttentionBlock::score(int b, int h, int i, int j) const {
  if (!scores.empty()) return scores[index(b, h, i, j)];
  if (!scores_from_qk || q.empty()) return 0.0f;
  const float* qi = qRow(b, h, i);
  const float* kj = kRow(b, h, j);
  float dot = 0;
  for (int e = 0; e < d_k; ++e) dot += qi[e] * kj[e];
  return dot / std::sqrt((float)d_k);
}

void AttentionBlock::scoresOfRow(int b, int h, int i, float* out) const {
  if (!scores.empty()) {
    std::memcpy(out, scoreRow(b, h, i), (size_t)k_len * sizeof(float));
    return;
  }
  for (int j = 0; j < k_len; ++j) out[j] = score(b, h, i, j);
}

std::vector<float> AttentionBlock::denseScores() const {
  if (!hasScores()) return {};
  std::vector<float> out((size_t)batch * heads * q_len * k_len);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < q_len; ++i)
        scoresOfRow(b, h, i, out.data() + (((size_t)b * heads + h) * q_len + i) * k_len);
  return out;
}

std::vector<uint8_t> AttentionBlock::denseMask() const {
  return dense<uint8_t>(*this, [&](int b, int, int i) { return maskRow(b, i); });
}

namespace {

uint64_t satMul(uint64_t a, uint64_t b) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a)
    return std::numeric_limits<uint64_t>::max();
  return a * b;
}

uint64_t satAdd(uint64_t a, uint64_t b) {
  return b > std::numeric_limits<uint64_t>::max() - a ? std::numeric_limits<uint64_t>::max()
                                                      : a + b;
}

// Moves a [batch, heads, q_cap, k_cap] array (or [batch, q_cap, k_cap] with heads = 1) into a
// larger capacity, keeping the first q_len × k_len cells of every matrix.
template <class T>
void regrow(HostVector<T>& v, int batch, int heads, int q_len, int k_len, int q_cap, int k_cap,
            int new_q_cap, int new_k_cap) {
  if (v.empty()) return;
  HostVector<T> out((size_t)batch * heads * new_q_cap * new_k_cap, T{});
  for (int bh = 0; bh < batch * heads; ++bh)
    for (int i = 0; i < q_len; ++i)
      std::memcpy(out.data() + ((size_t)bh * new_q_cap + i) * new_k_cap,
                  v.data() + ((size_t)bh * q_cap + i) * k_cap, (size_t)k_len * sizeof(T));
  v.swap(out);
}

void ensureCapacity(AttentionBlock& a, int q_need, int k_need) {
  if (q_need <= a.q_cap && k_need <= a.k_cap) return;
  const int nq = std::max(q_need, a.q_cap < q_need ? std::max(2 * a.q_cap, 8) : a.q_cap);
  const int nk = std::max(k_need, a.k_cap < k_need ? std::max(2 * a.k_cap, 8) : a.k_cap);
  regrow(a.probs, a.batch, a.heads, a.q_len, a.k_len, a.q_cap, a.k_cap, nq, nk);
  regrow(a.scores, a.batch, a.heads, a.q_len, a.k_len, a.q_cap, a.k_cap, nq, nk);
  regrow(a.mask, a.batch, 1, a.q_len, a.k_len, a.q_cap, a.k_cap, nq, nk);
  // The vectors: rows grow, their width (d_k, d_v) stays.
  regrow(a.q, a.batch, a.heads, a.q_len, a.d_k, a.q_cap, a.d_k, nq, a.d_k);
  regrow(a.k, a.batch, a.heads, a.k_len, a.d_k, a.k_cap, a.d_k, nk, a.d_k);
  regrow(a.v, a.batch, a.heads, a.k_len, a.d_v, a.k_cap, a.d_v, nk, a.d_v);
  a.q_cap = nq;
  a.k_cap = nk;
}

bool isDecoderKind(AttentionKind k) {
  return k != AttentionKind::EncoderSelf;
}

// Appends the first `rows` rows of a [1, rows, width] tensor to t ([1, n, width]).
void appendTensorRows(Tensor& t, const Tensor& rows) {
  if (rows.empty()) return;
  if (t.empty()) {
    t = rows;
    return;
  }
  t.data.insert(t.data.end(), rows.data.begin(), rows.data.end());
  t.shape[1] += rows.shape[1];
}

void truncateTensorRows(Tensor& t, int n) {
  if (t.empty() || t.shape[1] <= n) return;
  t.data.resize((size_t)n * t.shape[2]);
  t.shape[1] = n;
}

}  // namespace

uint64_t AttentionBlock::bytesFromQk(int batch, int heads, int q_len, int k_len, int d_k) {
  const uint64_t cells = satMul(satMul((uint64_t)batch, (uint64_t)q_len), (uint64_t)k_len);
  const uint64_t vectors =
      satMul(satMul(satMul((uint64_t)batch, (uint64_t)heads), satAdd(q_len, k_len)), d_k);
  return satAdd(satAdd(satMul(satMul(cells, (uint64_t)heads), 4), cells), satMul(vectors, 4));
}

uint64_t AttentionBlock::bytesFor(int batch, int heads, int q_len, int k_len, bool keep_scores) {
  const uint64_t cells = satMul(satMul((uint64_t)batch, (uint64_t)q_len), (uint64_t)k_len);
  return satAdd(satMul(satMul(cells, (uint64_t)heads), keep_scores ? 8 : 4), cells);
}

const AttentionBlock* Trace::block(AttentionKind kind, int layer) const {
  for (const auto& b : blocks)
    if (b.kind == kind && b.layer == layer) return &b;
  return nullptr;
}

const SublayerActivation* Trace::activation(Side side, int layer, Sublayer sublayer) const {
  for (const auto& a : activations)
    if (a.side == side && a.layer == layer && a.sublayer == sublayer) return &a;
  return nullptr;
}

int Trace::layers(AttentionKind kind) const {
  int n = 0;
  for (const auto& b : blocks) n += b.kind == kind;
  return n;
}

int Trace::queryLen(AttentionKind kind) const {
  return querySide(kind) == Side::Source ? src_len : tgt_len;
}

int Trace::keyLen(AttentionKind kind) const {
  return keySide(kind) == Side::Source ? src_len : tgt_len;
}

const std::vector<std::string>& Trace::queryTokens(AttentionKind kind, int b) const {
  return querySide(kind) == Side::Source ? src_tokens.at(b) : tgt_tokens.at(b);
}

const std::vector<std::string>& Trace::keyTokens(AttentionKind kind, int b) const {
  return keySide(kind) == Side::Source ? src_tokens.at(b) : tgt_tokens.at(b);
}

const float* Trace::logitsRow(int b, int i) const {
  const int64_t V = logits.dim(2);
  return logits.ptr() + ((int64_t)b * logits.dim(1) + i) * V;
}

void Trace::appendRows(TraceRows&& rows, const std::vector<std::string>& token_strings) {
  if (rows.q0 == 0) {
    blocks.erase(std::remove_if(blocks.begin(), blocks.end(),
                                [](const AttentionBlock& a) { return isDecoderKind(a.kind); }),
                 blocks.end());
    for (auto& b : rows.blocks) blocks.push_back(std::move(b));
    if (tgt_ids.empty()) tgt_ids.resize(1);
    if (tgt_tokens.empty()) tgt_tokens.resize(1);
    tgt_ids[0] = rows.tokens;
    tgt_tokens[0] = token_strings;
    tgt_len = rows.n;
    logits = std::move(rows.logits);
    hidden = std::move(rows.hidden);
    return;
  }
  if (rows.q0 != tgt_len)
    throw Error(ErrorKind::BadInput, "appendRows: rows start at position " +
                                         std::to_string(rows.q0) + " but the trace holds " +
                                         std::to_string(tgt_len));
  size_t next = 0;
  for (auto& a : blocks) {
    if (!isDecoderKind(a.kind)) continue;
    if (next >= rows.blocks.size())
      throw Error(ErrorKind::BadInput, "appendRows: fewer row blocks than decoder blocks");
    const AttentionBlock& r = rows.blocks[next];
    const bool self = a.kind == AttentionKind::DecoderSelf;
    const int q_new = rows.q0 + rows.n, k_new = self ? q_new : a.k_len;
    ensureCapacity(a, q_new, k_new);
    for (int b = 0; b < a.batch; ++b) {
      for (int h = 0; h < a.heads; ++h)
        for (int i = 0; i < rows.n; ++i) {
          std::memcpy(&a.probs[a.index(b, h, rows.q0 + i, 0)], r.probRow(b, h, i),
                      (size_t)r.k_len * sizeof(float));
          if (!a.scores.empty() && !r.scores.empty())
            std::memcpy(&a.scores[a.index(b, h, rows.q0 + i, 0)], r.scoreRow(b, h, i),
                        (size_t)r.k_len * sizeof(float));
        }
      for (int i = 0; i < rows.n; ++i)
        std::memcpy(&a.mask[((size_t)b * a.q_cap + rows.q0 + i) * a.k_cap], r.maskRow(b, i),
                    (size_t)r.k_len);
      if (self) {  // the new keys as seen from the earlier rows: masked future cells
        const auto& fs = rows.future_scores[next];
        const auto& fm = rows.future_mask[next];
        for (int i = 0; i < rows.q0; ++i)
          for (int j = 0; j < rows.n; ++j) {
            for (int h = 0; h < a.heads; ++h) {
              a.probs[a.index(b, h, i, rows.q0 + j)] = 0.0f;
              if (!a.scores.empty() && !fs.empty())
                a.scores[a.index(b, h, i, rows.q0 + j)] =
                    fs[(((size_t)b * a.heads + h) * rows.q0 + i) * rows.n + j];
            }
            a.mask[((size_t)b * a.q_cap + i) * a.k_cap + rows.q0 + j] =
                fm[((size_t)b * rows.q0 + i) * rows.n + j];
          }
      }
    }
    // Queries of the new rows; keys and values of the keys this step added.
    if (!a.q.empty() && !r.q.empty()) {
      const int new_keys = r.k_len - r.kv0;
      for (int b = 0; b < a.batch; ++b)
        for (int h = 0; h < a.heads; ++h) {
          const size_t bh = (size_t)b * a.heads + h;
          std::memcpy(&a.q[(bh * a.q_cap + rows.q0) * a.d_k], &r.q[bh * rows.n * a.d_k],
                      (size_t)rows.n * a.d_k * sizeof(float));
          if (new_keys <= 0) continue;
          std::memcpy(&a.k[(bh * a.k_cap + r.kv0) * a.d_k], &r.k[bh * new_keys * a.d_k],
                      (size_t)new_keys * a.d_k * sizeof(float));
          if (!a.v.empty() && !r.v.empty())
            std::memcpy(&a.v[(bh * a.k_cap + r.kv0) * a.d_v], &r.v[bh * new_keys * a.d_v],
                        (size_t)new_keys * a.d_v * sizeof(float));
        }
    }
    a.q_len = q_new;
    a.k_len = k_new;
    ++next;
  }
  if (tgt_ids.empty()) tgt_ids.resize(1);
  if (tgt_tokens.empty()) tgt_tokens.resize(1);
  tgt_ids[0].insert(tgt_ids[0].end(), rows.tokens.begin(), rows.tokens.end());
  tgt_tokens[0].insert(tgt_tokens[0].end(), token_strings.begin(), token_strings.end());
  tgt_len += rows.n;
  appendTensorRows(logits, rows.logits);
  appendTensorRows(hidden, rows.hidden);
}

void Trace::truncateTarget(int n) {
  if (n >= tgt_len || n < 1) return;
  for (auto& a : blocks) {
    if (!isDecoderKind(a.kind)) continue;
    a.q_len = n;
    if (a.kind == AttentionKind::DecoderSelf) a.k_len = n;
  }
  for (auto& ids : tgt_ids) ids.resize(n);
  for (auto& t : tgt_tokens) t.resize(n);
  tgt_len = n;
  truncateTensorRows(logits, n);
  truncateTensorRows(hidden, n);
}

uint64_t Trace::bytes() const {
  uint64_t n = 0;
  for (const auto& b : blocks)
    n += (b.probs.size() + b.scores.size()) * sizeof(float) + b.mask.size();
  n += (logits.data.size() + class_logits.data.size() + hidden.data.size()) * sizeof(float);
  return n;
}

}  // namespace attnviz

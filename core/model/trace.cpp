#include "model/trace.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "arch/config.h"
#include "base/error.h"
#include "compute/cpu_backend.h"
#include "compute/position_buckets.h"

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

bool attentionKindNamed(std::string_view name, AttentionKind* kind) {
  for (AttentionKind k : kAttentionKinds)
    if (name == attentionKindName(k)) {
      *kind = k;
      return true;
    }
  return false;
}

int layerCount(const ModelConfig& config, AttentionKind kind) {
  if (kind == AttentionKind::EncoderSelf) return config.hasEncoder() ? config.n_encoder_layers : 0;
  if (kind == AttentionKind::Cross) return config.hasCross() ? config.n_decoder_layers : 0;
  return config.hasDecoder() ? config.n_decoder_layers : 0;
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

AttentionBlock::AttentionBlock(AttentionKind kind_, int layer_, int batch_, int heads_,
                               int kv_heads_, int q_len_, int k_len_, int d_k_)
    : kind(kind_),
      layer(layer_),
      batch(batch_),
      heads(heads_),
      kv_heads(kv_heads_),
      q_len(q_len_),
      k_len(k_len_),
      q_cap(q_len_),
      k_cap(k_len_),
      d_k(d_k_) {
  const size_t rows = (size_t)batch * heads * q_len;
  q.assign(rows * d_k, 0.0f);
  k.assign((size_t)batch * kv_heads * k_len * d_k, 0.0f);
  row_ref.assign(rows, 0.0f);
  row_prob.assign(rows, 0.0f);
  row_keys.assign((size_t)batch * q_len, k_len);
  mask.key_masked.assign((size_t)batch, std::vector<uint8_t>((size_t)k_len, 0));
}

void AttentionBlock::scoreTile(int b, int h, int i0, int i1, int j0, int j1, float* out) const {
  const int ni = i1 - i0, nj = j1 - j0;
  if (ni <= 0 || nj <= 0) return;
  const float cap = rule.softcap;
  hostGemm(true, ni, nj, d_k, cap > 0.0f ? rule.scale / cap : rule.scale, qRow(b, h, i0), d_k,
           kRow(b, h, j0), d_k, out, nj);
  const int64_t cells = (int64_t)ni * nj;
  if (cap > 0.0f)  // Gemma 2: cap·tanh(q·k·scale / cap), as the pass computes it
    for (int64_t c = 0; c < cells; ++c) out[c] = cap * std::tanh(out[c]);
  if (!rule.relative_bias.empty())  // T5: + table[bucket(j − i), h]
    for (int i = 0; i < ni; ++i)
      for (int j = 0; j < nj; ++j)
        out[(int64_t)i * nj + j] +=
            rule.relative_bias[(size_t)relative_position_bucket(j0 + j - (q_pos0 + i0 + i),
                                                                rule.bidirectional, rule.buckets,
                                                                rule.max_distance) *
                                   heads +
                               h];
}

void AttentionBlock::probTile(int b, int h, int i0, int i1, int j0, int j1, float* out) const {
  const int nj = j1 - j0;
  scoreTile(b, h, i0, i1, j0, j1, out);
  const float inv_t = rule.temperature.empty() ? 1.0f : 1.0f / rule.temperature[(size_t)h];
  const std::vector<uint8_t>& key_masked = mask.key_masked[(size_t)b];
  for (int i = i0; i < i1; ++i) {
    float* row = out + (int64_t)(i - i0) * nj;
    const size_t r = ((size_t)b * heads + h) * q_cap + i;
    const float ref = row_ref[r], p_ref = row_prob[r];
    // Keys this row's softmax ran over, and with the look-ahead mask those up to its position.
    const int seen = std::clamp(row_keys[(size_t)b * q_cap + i], j0, j1);
    const int open = mask.causal ? std::clamp(q_pos0 + i + 1, j0, seen) : seen;
    if (p_ref == 0.0f) {
      std::fill(row, row + nj, 0.0f);
      continue;
    }
    for (int j = j0; j < open; ++j) {
      float& x = row[j - j0];
      x = key_masked[(size_t)j] ? rule.fill : x * inv_t;
    }
    std::fill(row + (open - j0), row + (seen - j0), rule.fill);  // after the query: masked
    hostScaledExp(row, seen - j0, ref, p_ref);
    std::fill(row + (seen - j0), row + nj, 0.0f);
  }
}

bool AttentionBlock::anyMasked(int b) const {
  if (b < 0 || b >= batch || q_len <= 0 || k_len <= 0) return false;
  const std::vector<uint8_t>& keys = mask.key_masked[(size_t)b];
  if (std::any_of(keys.begin(), keys.begin() + k_len, [](uint8_t m) { return m != 0; }))
    return true;
  return mask.causal && k_len - 1 > q_pos0;  // the first query's later keys
}

void AttentionBlock::maskTile(int b, int i0, int i1, int j0, int j1, uint8_t* out) const {
  const int nj = j1 - j0;
  for (int i = i0; i < i1; ++i)
    for (int j = j0; j < j1; ++j) out[(int64_t)(i - i0) * nj + (j - j0)] = masked(b, i, j) ? 1 : 0;
}

std::vector<float> AttentionBlock::probRow(int b, int h, int i) const {
  std::vector<float> out((size_t)k_len);
  probsOfRow(b, h, i, out.data());
  return out;
}

std::vector<float> AttentionBlock::scoreRow(int b, int h, int i) const {
  std::vector<float> out((size_t)k_len);
  scoresOfRow(b, h, i, out.data());
  return out;
}

std::vector<uint8_t> AttentionBlock::maskRow(int b, int i) const {
  std::vector<uint8_t> out((size_t)k_len);
  maskOfRow(b, i, out.data());
  return out;
}

float AttentionBlock::score(int b, int h, int i, int j) const {
  float s = 0.0f;
  scoreTile(b, h, i, i + 1, j, j + 1, &s);
  return s;
}

float AttentionBlock::prob(int b, int h, int i, int j) const {
  float p = 0.0f;
  probTile(b, h, i, i + 1, j, j + 1, &p);
  return p;
}

namespace {

// [batch, heads, q_len, k_len] from tiles of whole rows: tile(b, h, i, out) writes k_len values.
template <class T, class Tile>
std::vector<T> dense(const AttentionBlock& a, Tile tile) {
  std::vector<T> out((size_t)a.batch * a.heads * a.q_len * a.k_len);
  for (int b = 0; b < a.batch; ++b)
    for (int h = 0; h < a.heads; ++h)
      tile(b, h, out.data() + ((size_t)b * a.heads + h) * a.q_len * a.k_len);
  return out;
}

}  // namespace

std::vector<float> AttentionBlock::denseProbs() const {
  return dense<float>(*this,
                      [&](int b, int h, float* out) { probTile(b, h, 0, q_len, 0, k_len, out); });
}

std::vector<float> AttentionBlock::denseScores() const {
  return dense<float>(*this,
                      [&](int b, int h, float* out) { scoreTile(b, h, 0, q_len, 0, k_len, out); });
}

std::vector<uint8_t> AttentionBlock::denseMask() const {
  return dense<uint8_t>(*this,
                        [&](int b, int, uint8_t* out) { maskTile(b, 0, q_len, 0, k_len, out); });
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

// Moves a [groups, cap, width] array (a HostVector or a std::vector) into a larger capacity,
// keeping the first `len` rows of every group.
template <class V>
void regrow(V& v, int groups, int len, int cap, int new_cap, int width) {
  if (v.empty()) return;
  V out((size_t)groups * new_cap * width, typename V::value_type{});
  for (int g = 0; g < groups; ++g)
    std::memcpy(out.data() + (size_t)g * new_cap * width, v.data() + (size_t)g * cap * width,
                (size_t)len * width * sizeof(typename V::value_type));
  v.swap(out);
}

void ensureCapacity(AttentionBlock& a, int q_need, int k_need) {
  if (q_need > a.q_cap) {
    const int nq = std::max(q_need, std::max(2 * a.q_cap, 8));
    const int rows = a.batch * a.heads;
    regrow(a.q, rows, a.q_len, a.q_cap, nq, a.d_k);
    regrow(a.row_ref, rows, a.q_len, a.q_cap, nq, 1);
    regrow(a.row_prob, rows, a.q_len, a.q_cap, nq, 1);
    regrow(a.row_keys, a.batch, a.q_len, a.q_cap, nq, 1);
    a.q_cap = nq;
  }
  if (k_need > a.k_cap) {
    const int nk = std::max(k_need, std::max(2 * a.k_cap, 8));
    regrow(a.k, a.batch * a.kv_heads, a.k_len, a.k_cap, nk, a.d_k);
    regrow(a.v, a.batch * a.kv_heads, a.k_len, a.k_cap, nk, a.d_v);
    a.k_cap = nk;
  }
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

uint64_t AttentionBlock::bytesFor(int batch, int heads, int kv_heads, int q_len, int k_len, int d_k,
                                  int d_v, bool values) {
  const uint64_t B = (uint64_t)batch;
  const uint64_t rows = satMul(satMul(B, (uint64_t)heads), (uint64_t)q_len);
  const uint64_t keys = satMul(satMul(B, (uint64_t)kv_heads), (uint64_t)k_len);
  uint64_t n = satMul(satMul(rows, (uint64_t)d_k + 2), 4);  // q, row_ref, row_prob
  n = satAdd(n, satMul(satMul(keys, (uint64_t)d_k), 4));    // k
  if (values) n = satAdd(n, satMul(satMul(keys, (uint64_t)d_v), 4));
  n = satAdd(n, satMul(B, (uint64_t)q_len) * 4);  // row_keys
  return satAdd(n, satMul(B, (uint64_t)k_len));   // the key mask
}

uint64_t AttentionBlock::bytes() const {
  uint64_t n = (q.size() + k.size() + v.size() + row_ref.size() + row_prob.size()) * sizeof(float) +
               row_keys.size() * sizeof(int32_t) + rule.relative_bias.size() * sizeof(float);
  for (const auto& m : mask.key_masked) n += m.size();
  return n;
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
    // The new rows: their queries and softmax statistics, the keys they saw; the keys (and
    // values) this step added, with their mask.
    const int new_keys = r.k_len - r.kv0;
    for (int b = 0; b < a.batch; ++b) {
      for (int h = 0; h < a.heads; ++h) {
        const size_t dst = ((size_t)b * a.heads + h) * a.q_cap + rows.q0,
                     src = ((size_t)b * r.heads + h) * r.q_cap;
        std::memcpy(&a.q[dst * a.d_k], &r.q[src * r.d_k], (size_t)rows.n * a.d_k * sizeof(float));
        std::memcpy(&a.row_ref[dst], &r.row_ref[src], (size_t)rows.n * sizeof(float));
        std::memcpy(&a.row_prob[dst], &r.row_prob[src], (size_t)rows.n * sizeof(float));
      }
      std::memcpy(&a.row_keys[(size_t)b * a.q_cap + rows.q0], &r.row_keys[(size_t)b * r.q_cap],
                  (size_t)rows.n * sizeof(int32_t));
      if (new_keys <= 0) continue;
      for (int g = 0; g < a.kv_heads; ++g) {
        // the step's block holds its new keys only: [batch, kv_heads, new_keys, ·]
        const size_t dst = ((size_t)b * a.kv_heads + g) * a.k_cap + r.kv0,
                     src = ((size_t)b * r.kv_heads + g) * new_keys;
        std::memcpy(&a.k[dst * a.d_k], &r.k[src * r.d_k], (size_t)new_keys * a.d_k * sizeof(float));
        if (!a.v.empty() && !r.v.empty())
          std::memcpy(&a.v[dst * a.d_v], &r.v[src * r.d_v],
                      (size_t)new_keys * a.d_v * sizeof(float));
      }
      auto& km = a.mask.key_masked[(size_t)b];
      const auto& rm = r.mask.key_masked[(size_t)b];
      km.resize((size_t)r.kv0);
      km.insert(km.end(), rm.begin() + r.kv0, rm.begin() + r.k_len);
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
  logits.append(std::move(rows.logits));
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
  logits.truncate(n);
  truncateTensorRows(hidden, n);
}

uint64_t Trace::bytes() const {
  uint64_t n = 0;
  for (const auto& b : blocks) n += b.bytes();
  n += logits.bytes() + (class_logits.data.size() + hidden.data.size()) * sizeof(float);
  return n;
}

}  // namespace attnviz

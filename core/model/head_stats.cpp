#include "model/head_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "base/error.h"

namespace attnviz {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool isSelf(AttentionKind k) {
  return k != AttentionKind::Cross;
}

// Position i of a sequence is padding (the start token may share the pad id: then position 0 is
// the start, not padding).
bool isPadding(const std::vector<int>& ids, int i, const TokenRoles& roles) {
  if (i >= (int)ids.size()) return true;
  if (ids[size_t(i)] != roles.pad || roles.pad < 0) return false;
  return !(i == 0 && roles.bos == roles.pad);
}

const std::vector<int>& idsOf(const std::vector<std::vector<int>>& ids, int b) {
  static const std::vector<int> none;
  return b < (int)ids.size() ? ids[size_t(b)] : none;
}

}  // namespace

TokenRoles tokenRoles(const ModelConfig& c, Side side) {
  TokenRoles r;
  if (side == Side::Source) {
    r.pad = c.src_pad_id;
    r.bos = c.src_bos_id;
    r.eos = c.src_eos_id;
  } else {
    r.pad = c.tgt_pad_id;
    r.bos = c.bos_id;
    r.eos = c.eos_id;
  }
  return r;
}

HeadRowPart headRowPart(const AttentionBlock& a, int b, int head, int i,
                        const std::vector<int>& k_ids, const TokenRoles& k_roles) {
  HeadRowPart r;
  const std::vector<float> p = a.probRow(b, head, i);
  const std::vector<uint8_t> m = a.maskRow(b, i);
  int open = 0;
  for (int j = 0; j < a.k_len; ++j) {
    const double pj = p[j];
    // The float logarithm: a long input has millions of cells, and p is a float anyway.
    if (p[j] > 0) r.entropy -= pj * (double)std::log(p[j]);
    r.centre += pj * j;
    r.distance += pj * std::abs(i - j);
    open += m[j] == 0;
    if (j < (int)k_ids.size()) {
      if (k_roles.bos >= 0 && k_ids[size_t(j)] == k_roles.bos) r.bos += pj;
      if (k_roles.eos >= 0 && k_ids[size_t(j)] == k_roles.eos) r.eos += pj;
    }
    if (isPadding(k_ids, j, k_roles)) r.padding += pj;
  }
  if (open == 0) open = a.k_len;  // a fully masked row: softmax spreads over every key
  r.entropy_norm = open > 1 ? r.entropy / std::log(double(open)) : 0.0;
  r.first = a.k_len > 0 ? p[0] : 0.0;
  if (i < a.k_len) r.diagonal = p[i];
  r.has_previous = i >= 1 && i - 1 < a.k_len;
  if (r.has_previous) r.previous = p[i - 1];
  return r;
}

namespace {

void checkHead(const AttentionBlock& a, int b, int head) {
  if (b < 0 || b >= a.batch || head < 0 || head >= a.heads)
    throw Error(ErrorKind::BadInput, "headStats: sentence " + std::to_string(b) + " or head " +
                                         std::to_string(head) + " is outside the block");
}

// The mean of the parts of the rows that are not padding (every row when all are).
HeadStats combineRows(const AttentionBlock& a, int head, const std::vector<HeadRowPart>& parts,
                      const std::vector<int>& q_ids, const std::vector<int>& k_ids,
                      const TokenRoles& q_roles, const TokenRoles& k_roles) {
  HeadStats s;
  s.kind = a.kind;
  s.layer = a.layer;
  s.head = head;
  std::vector<int> rows;
  for (int i = 0; i < a.q_len; ++i)
    if (!isPadding(q_ids, i, q_roles)) rows.push_back(i);
  if (rows.empty())
    for (int i = 0; i < a.q_len; ++i) rows.push_back(i);
  s.rows = (int)rows.size();
  if (rows.empty() || a.k_len == 0) {
    s.entropy = s.entropy_norm = s.diagonal = s.previous = s.first = s.bos = s.eos = s.padding =
        s.distance = s.monotonicity = kNaN;
    return s;
  }
  bool has_bos = false, has_eos = false;
  for (int j = 0; j < a.k_len && j < (int)k_ids.size(); ++j) {
    has_bos = has_bos || (k_roles.bos >= 0 && k_ids[size_t(j)] == k_roles.bos);
    has_eos = has_eos || (k_roles.eos >= 0 && k_ids[size_t(j)] == k_roles.eos);
  }
  double entropy = 0, entropy_norm = 0, diagonal = 0, previous = 0, first = 0, bos = 0, eos = 0,
         padding = 0, distance = 0;
  int previous_rows = 0;
  std::vector<double> centre;
  for (int i : rows) {
    const HeadRowPart& r = parts[size_t(i)];
    entropy += r.entropy;
    entropy_norm += r.entropy_norm;
    first += r.first;
    distance += r.distance;
    bos += r.bos;
    eos += r.eos;
    padding += r.padding;
    centre.push_back(r.centre);
    diagonal += r.diagonal;
    if (r.has_previous) {
      previous += r.previous;
      ++previous_rows;
    }
  }
  const double n = double(rows.size());
  s.entropy = entropy / n;
  s.entropy_norm = entropy_norm / n;
  s.first = first / n;
  s.bos = has_bos ? bos / n : kNaN;
  s.eos = has_eos ? eos / n : kNaN;
  s.padding = padding / n;
  if (isSelf(a.kind)) {
    s.diagonal = diagonal / n;
    s.previous = previous_rows > 0 ? previous / previous_rows : kNaN;
    s.distance = distance / n;
    s.monotonicity = kNaN;
  } else {
    s.diagonal = s.previous = s.distance = kNaN;
    // Kendall's τ of (i, c_i): concordant minus discordant pairs over all pairs.
    double sum = 0;
    int64_t pairs = 0;
    for (size_t x = 0; x < centre.size(); ++x)
      for (size_t y = x + 1; y < centre.size(); ++y) {
        const double d = centre[y] - centre[x];
        sum += std::abs(d) <= 1e-9 ? 0.0 : (d > 0 ? 1.0 : -1.0);
        ++pairs;
      }
    s.monotonicity = pairs > 0 ? sum / double(pairs) : kNaN;
  }
  return s;
}

}  // namespace

HeadStats headStats(const AttentionBlock& a, int b, int head, const std::vector<int>& q_ids,
                    const std::vector<int>& k_ids, const TokenRoles& q_roles,
                    const TokenRoles& k_roles) {
  checkHead(a, b, head);
  std::vector<HeadRowPart> parts;
  parts.reserve(size_t(a.q_len));
  for (int i = 0; i < a.q_len; ++i) parts.push_back(headRowPart(a, b, head, i, k_ids, k_roles));
  return combineRows(a, head, parts, q_ids, k_ids, q_roles, k_roles);
}

std::vector<HeadStats> headStatistics(const Trace& t, const ModelConfig& c, int b,
                                      std::optional<AttentionKind> kind) {
  return HeadStatistics().update(t, c, b, kind, -1);
}

const std::vector<HeadStats>& HeadStatistics::update(const Trace& t, const ModelConfig& c, int b,
                                                     std::optional<AttentionKind> kind,
                                                     int kept_target_rows) {
  // The blocks and heads of this update, in output order: the same as the last update's, or
  // nothing is kept.
  std::vector<std::pair<const AttentionBlock*, int>> heads;
  for (const AttentionBlock& a : t.blocks) {
    if (kind && a.kind != *kind) continue;
    checkHead(a, b, 0);
    for (int h = 0; h < a.heads; ++h) heads.emplace_back(&a, h);
  }
  bool same_layout =
      kept_target_rows >= 0 && b == b_ && kind == kind_ && heads.size() == layout_.size();
  for (size_t k = 0; same_layout && k < heads.size(); ++k)
    same_layout =
        layout_[k] == std::tuple(heads[k].first->kind, heads[k].first->layer, heads[k].second);
  if (!same_layout) parts_.assign(heads.size(), {});
  layout_.clear();
  b_ = b;
  kind_ = kind;
  stats_.clear();
  for (size_t k = 0; k < heads.size(); ++k) {
    const AttentionBlock& a = *heads[k].first;
    const int h = heads[k].second;
    layout_.emplace_back(a.kind, a.layer, h);
    const Side qs = querySide(a.kind), ks = keySide(a.kind);
    const auto& q_ids = idsOf(qs == Side::Source ? t.src_ids : t.tgt_ids, b);
    const auto& k_ids = idsOf(ks == Side::Source ? t.src_ids : t.tgt_ids, b);
    const TokenRoles k_roles = tokenRoles(c, ks);
    // A source-query block (the encoder's) does not change while the target does.
    const int kept = !same_layout ? 0 : qs == Side::Source ? a.q_len : kept_target_rows;
    std::vector<HeadRowPart>& rows = parts_[k];
    rows.resize(size_t(std::clamp(kept, 0, std::min(a.q_len, (int)rows.size()))));
    for (int i = (int)rows.size(); i < a.q_len; ++i)
      rows.push_back(headRowPart(a, b, h, i, k_ids, k_roles));
    stats_.push_back(combineRows(a, h, rows, q_ids, k_ids, tokenRoles(c, qs), k_roles));
  }
  return stats_;
}

double headDistance(const HeadStats& a, const HeadStats& b, int a_keys, int b_keys) {
  auto profile = [](const HeadStats& s, int keys) {
    return std::vector<double>{s.entropy_norm,
                               s.diagonal,
                               s.previous,
                               s.first,
                               s.bos,
                               s.eos,
                               s.padding,
                               s.distance / std::max(1, keys - 1),
                               (s.monotonicity + 1) / 2};
  };
  const auto pa = profile(a, a_keys), pb = profile(b, b_keys);
  double sum = 0;
  int n = 0;
  for (size_t k = 0; k < pa.size(); ++k) {
    if (std::isnan(pa[k]) || std::isnan(pb[k])) continue;
    sum += (pa[k] - pb[k]) * (pa[k] - pb[k]);
    ++n;
  }
  return n > 0 ? std::sqrt(sum / n) : std::numeric_limits<double>::infinity();
}

std::string headStatsCsv(const std::vector<HeadStats>& stats) {
  std::string out =
      "kind,layer,head,rows,entropy,entropy_norm,diagonal,previous,first,bos,eos,padding,"
      "distance,monotonicity\r\n";
  auto num = [](double v) {
    if (std::isnan(v)) return std::string();
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return std::string(buf);
  };
  for (const HeadStats& s : stats) {
    out += attentionKindName(s.kind);
    // Appended piece by piece (GCC 12 warns falsely about `"," + std::string` here).
    for (int n : {s.layer + 1, s.head + 1, s.rows}) {
      out += ',';
      out += std::to_string(n);
    }
    for (double v : {s.entropy, s.entropy_norm, s.diagonal, s.previous, s.first, s.bos, s.eos,
                     s.padding, s.distance, s.monotonicity}) {
      out += ',';
      out += num(v);
    }
    out += "\r\n";
  }
  return out;
}

namespace {

// The mean of the heads of block (kind, layer) for sentence b: [q_len, k_len].
std::vector<double> meanOfHeads(const Trace& t, AttentionKind kind, int layer, int b) {
  const AttentionBlock* a = t.block(kind, layer);
  if (!a)
    throw Error(ErrorKind::BadInput, std::string("the trace has no ") + attentionKindName(kind) +
                                         " block at layer " + std::to_string(layer + 1));
  if (b < 0 || b >= a->batch)
    throw Error(ErrorKind::BadInput, "sentence " + std::to_string(b + 1) + " is not in the batch");
  std::vector<double> m(size_t(a->q_len) * a->k_len, 0.0);
  for (int h = 0; h < a->heads; ++h)
    for (int i = 0; i < a->q_len; ++i) {
      const std::vector<float> p = a->probRow(b, h, i);
      for (int j = 0; j < a->k_len; ++j) m[size_t(i) * a->k_len + j] += p[j] / a->heads;
    }
  return m;
}

// [n, n] · [n, k] (row-major).
std::vector<double> matmul(const std::vector<double>& x, const std::vector<double>& y, int n, int m,
                           int k) {
  std::vector<double> out(size_t(n) * k, 0.0);
  for (int i = 0; i < n; ++i)
    for (int l = 0; l < m; ++l) {
      const double xv = x[size_t(i) * m + l];
      if (xv == 0) continue;
      for (int j = 0; j < k; ++j) out[size_t(i) * k + j] += xv * y[size_t(l) * k + j];
    }
  return out;
}

std::vector<double> rollout(const Trace& t, AttentionKind kind, int upto, int b, int* len) {
  if (kind == AttentionKind::Cross)
    throw Error(ErrorKind::BadInput,
                "rollout multiplies self-attention matrices; cross-attention "
                "is followed back through the encoder by crossRollout");
  const int layers = t.layers(kind);
  if (upto < 0 || upto >= layers)
    throw Error(ErrorKind::BadInput, "rollout up to layer " + std::to_string(upto + 1) +
                                         ", but the trace has " + std::to_string(layers));
  const int n = t.block(kind, 0)->q_len;
  std::vector<double> r(size_t(n) * n, 0.0);
  for (int i = 0; i < n; ++i) r[size_t(i) * n + i] = 1.0;
  for (int l = 0; l <= upto; ++l) {
    std::vector<double> a = meanOfHeads(t, kind, l, b);
    for (double& v : a) v *= 0.5;
    for (int i = 0; i < n; ++i) a[size_t(i) * n + i] += 0.5;
    r = matmul(a, r, n, n, n);
  }
  *len = n;
  return r;
}

std::vector<float> toFloat(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace

std::vector<float> attentionRollout(const Trace& t, AttentionKind kind, int upto, int b) {
  int n = 0;
  return toFloat(rollout(t, kind, upto, b, &n));
}

std::vector<float> crossRollout(const Trace& t, int layer, int b) {
  const AttentionBlock* a = t.block(AttentionKind::Cross, layer);
  if (!a)
    throw Error(ErrorKind::BadInput,
                "the trace has no cross-attention at layer " + std::to_string(layer + 1));
  int S = 0;
  const std::vector<double> enc =
      rollout(t, AttentionKind::EncoderSelf, t.layers(AttentionKind::EncoderSelf) - 1, b, &S);
  return toFloat(matmul(meanOfHeads(t, AttentionKind::Cross, layer, b), enc, a->q_len, S, S));
}

}  // namespace attnviz

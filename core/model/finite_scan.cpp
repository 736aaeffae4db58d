#include "model/finite_scan.h"

#include <array>
#include <cctype>
#include <cmath>

namespace attnviz {

void NonFiniteCount::add(const float* values, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = values[i];
    if (std::isfinite(v)) continue;
    if (std::isnan(v))
      ++nan;
    else if (v > 0)
      ++pos_inf;
    else
      ++neg_inf;
  }
}

NonFiniteCount& NonFiniteCount::operator+=(const NonFiniteCount& o) {
  nan += o.nan;
  pos_inf += o.pos_inf;
  neg_inf += o.neg_inf;
  return *this;
}

std::string NonFiniteCount::describe() const {
  std::string s;
  auto part = [&](int64_t n, const char* what) {
    if (n) s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  part(nan, "NaN");
  part(pos_inf, "+Inf");
  part(neg_inf, "-Inf");
  return s;
}

NonFiniteCount NonFiniteSpot::total() const {
  NonFiniteCount t = scores;
  t += probs;
  t += qkv;
  t += values;
  return t;
}

std::string NonFiniteSpot::describe() const {
  std::string s;
  auto part = [&](const NonFiniteCount& c, const char* what) {
    if (c.any()) s += (s.empty() ? "" : "; ") + std::string(what) + ": " + c.describe();
  };
  part(scores, "scores");
  part(probs, "probabilities");
  part(qkv, "q/k/v vectors");
  part(values, "values");
  return s;
}

std::string NonFiniteReport::summary() const {
  const NonFiniteSpot* f = first();
  if (!f) return "every value of the pass is finite";
  int blocks = 0;
  std::string outputs;
  for (const auto& s : spots) {
    if (s.block >= 0)
      ++blocks;
    else
      outputs += (outputs.empty() ? "" : ", ") + s.where;
  }
  std::string text = "non-finite values (NaN or infinite) first appear in " + f->where + " (" +
                     f->describe() + ")";
  if (blocks > 0)
    text += "; " + std::to_string(blocks) + " of " + std::to_string(blocks_scanned) +
            " attention blocks hold some";
  if (!outputs.empty()) text += "; outputs affected: " + outputs;
  return text;
}

namespace {

// Counts over rows [0, rows) of `len` values each, the row r starting at row(r).
template <class Row>
NonFiniteCount countRows(int64_t rows, int64_t len, Row row) {
  NonFiniteCount c;
  for (int64_t r = 0; r < rows; ++r) c.add(row(r), len);
  return c;
}

std::string lowerFirst(std::string s) {
  if (!s.empty()) s[0] = (char)std::tolower((unsigned char)s[0]);
  return s;
}

}  // namespace

NonFiniteReport scanTrace(const Trace& tr) {
  NonFiniteReport report;
  report.blocks_scanned = (int)tr.blocks.size();
  for (size_t i = 0; i < tr.blocks.size(); ++i) {
    const AttentionBlock& a = tr.blocks[i];
    NonFiniteSpot s;
    s.block = (int)i;
    s.where = lowerFirst(attentionKindTitle(a.kind)) + ", layer " + std::to_string(a.layer);
    // Rows (b, h, i) of the shown q_len × k_len cells; the capacity beyond is not part of it.
    const int64_t rows = (int64_t)a.batch * a.heads * a.q_len;
    auto bhi = [&](int64_t r, int len) {
      return std::array<int, 3>{(int)(r / ((int64_t)a.heads * len)), (int)(r / len % a.heads),
                                (int)(r % len)};
    };
    // A score is q·k (with the rule's finite terms) and a probability exp(v − ref)·p_ref ≤ 1: the
    // cells of a row can be non-finite only where its query, a key it reads or its normaliser is.
    // Those rows are computed and counted; every other row is finite without computing it.
    auto finite = [](const float* p, int64_t n) {
      for (int64_t e = 0; e < n; ++e)
        if (!std::isfinite(p[e])) return false;
      return true;
    };
    std::vector<uint8_t> bad_keys((size_t)a.batch * a.kv_heads, 0);
    for (int b = 0; b < a.batch; ++b)
      for (int g = 0; g < a.kv_heads; ++g)
        bad_keys[(size_t)b * a.kv_heads + g] =
            !finite(a.k.data() + ((int64_t)b * a.kv_heads + g) * a.k_cap * a.d_k,
                    (int64_t)(a.k_len - a.kv0) * a.d_k);
    std::vector<float> row((size_t)a.k_len);
    for (int64_t r = 0; r < rows && a.kv0 == 0; ++r) {
      const auto [b, h, q] = bhi(r, a.q_len);
      const size_t st = ((size_t)b * a.heads + h) * a.q_cap + q;
      if (finite(a.qRow(b, h, q), a.d_k) && std::isfinite(a.row_ref[st]) &&
          std::isfinite(a.row_prob[st]) && !bad_keys[(size_t)b * a.kv_heads + a.kvHead(h)])
        continue;
      a.probsOfRow(b, h, q, row.data());
      s.probs.add(row.data(), a.k_len);
      a.scoresOfRow(b, h, q, row.data());
      s.scores.add(row.data(), a.k_len);
    }
    // q rows [0, q_len); k and v rows [kv0, k_len) of each key/value head — what the block holds.
    s.qkv += countRows(rows, a.d_k, [&](int64_t r) {
      const auto [b, h, q] = bhi(r, a.q_len);
      return a.qRow(b, h, q);
    });
    const int keys = a.k_len - a.kv0;
    const int64_t krows = (int64_t)a.batch * a.kv_heads * keys;
    auto bgj = [&](int64_t r) {
      return std::array<int, 3>{(int)(r / ((int64_t)a.kv_heads * keys)),
                                (int)(r / keys % a.kv_heads), (int)(r % keys)};
    };
    if (keys > 0) {
      s.qkv += countRows(krows, a.d_k, [&](int64_t r) {
        const auto [b, g, j] = bgj(r);
        return a.k.data() + (((int64_t)b * a.kv_heads + g) * a.k_cap + j) * a.d_k;
      });
      if (a.hasValues())
        s.qkv += countRows(krows, a.d_v, [&](int64_t r) {
          const auto [b, g, j] = bgj(r);
          return a.v.data() + (((int64_t)b * a.kv_heads + g) * a.k_cap + j) * a.d_v;
        });
    }
    if (s.total().any()) report.spots.push_back(std::move(s));
  }
  auto output = [&](const Tensor& t, const char* what) {
    NonFiniteSpot s;
    s.where = what;
    s.values.add(t.ptr(), t.size());
    if (s.values.any()) report.spots.push_back(std::move(s));
  };
  output(tr.hidden, "the last stack's hidden states");
  if (!tr.logits.empty()) {  // counted over every row as the pass made them (TokenLogits)
    NonFiniteSpot s;
    s.where = "the token logits";
    const auto n = tr.logits.nonFinite();
    s.values.nan = n[0];
    s.values.pos_inf = n[1];
    s.values.neg_inf = n[2];
    if (s.values.any()) report.spots.push_back(std::move(s));
  }
  output(tr.class_logits, "the class logits");
  return report;
}

}  // namespace attnviz

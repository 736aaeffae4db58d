#include "model/token_logits.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "base/error.h"

namespace attnviz {

namespace {

// Whether (id a, logit x) ranks above (id b, logit y): the higher logit, then the lower id.
bool above(float x, int a, float y, int b) {
  return x > y || (x == y && a < b);
}

// The k highest entries of a row, highest first, NaNs passed over (the rest of ids stays −1 when
// fewer are left).
void highest(const float* row, int V, int k, int32_t* ids, float* values) {
  std::fill(ids, ids + k, -1);
  int n = 0;  // ids[0 … n) sorted, highest first
  for (int v = 0; v < V; ++v) {
    const float x = row[v];
    if (std::isnan(x)) continue;
    if (n == k && !above(x, v, values[n - 1], ids[n - 1])) continue;
    int at = n < k ? n++ : k - 1;
    while (at > 0 && above(x, v, values[at - 1], ids[at - 1])) {
      values[at] = values[at - 1];
      ids[at] = ids[at - 1];
      --at;
    }
    values[at] = x;
    ids[at] = v;
  }
}

}  // namespace

TokenLogits::TokenLogits(int batch, int positions, int vocab)
    : batch_(batch), positions_(positions), vocab_(vocab), top_(std::min(kTop, vocab)) {
  const size_t rows = (size_t)batch * positions;
  top_ids_.assign(rows * top_, -1);
  top_values_.assign(rows * top_, 0.0f);
  lse_.assign(rows, 0.0);
  next_ids_.assign(rows, -1);
  next_values_.assign(rows, 0.0f);
  non_finite_.assign(rows, {0, 0, 0});
  slot_.assign(rows, -1);
  reshape();
}

int64_t TokenLogits::flat(int b, int i) const {
  if (b < 0 || b >= batch_ || i < 0 || i >= positions_)
    throw Error(ErrorKind::BadInput, "position " + std::to_string(i) + " of sentence " +
                                         std::to_string(b) + " is outside the token logits (" +
                                         std::to_string(batch_) + " × " +
                                         std::to_string(positions_) + " positions)");
  return (int64_t)b * positions_ + i;
}

void TokenLogits::reshape() {
  rows_.shape = allKept() ? Shape{batch_, positions_, vocab_} : Shape{kept_rows_, vocab_};
}

void TokenLogits::add(int64_t r0, int n, const float* logits, const int* next,
                      const uint8_t* keep) {
  const int64_t V = vocab_;
  for (int r = 0; r < n; ++r) {
    const int64_t row = r0 + r;
    const float* l = logits + (int64_t)r * V;
    highest(l, vocab_, top_, &top_ids_[(size_t)(row * top_)], &top_values_[(size_t)(row * top_)]);
    const double mx = top_ > 0 ? top_values_[(size_t)(row * top_)] : 0.0;
    double sum = 0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp((double)l[v] - mx);
    lse_[(size_t)row] = mx + std::log(sum);
    auto& bad = non_finite_[(size_t)row];
    for (int64_t v = 0; v < V; ++v)
      if (!std::isfinite(l[v])) ++bad[std::isnan(l[v]) ? 0 : l[v] > 0 ? 1 : 2];
    const int id = next ? next[r] : -1;
    if (id >= 0 && id < vocab_) {
      next_ids_[(size_t)row] = id;
      next_values_[(size_t)row] = l[id];
    }
    if (keep && keep[r]) {
      slot_[(size_t)row] = kept_rows_++;
      rows_.data.insert(rows_.data.end(), l, l + V);
    }
  }
  reshape();
}

bool TokenLogits::kept(int b, int i) const {
  return slot_[(size_t)flat(b, i)] >= 0;
}

const float* TokenLogits::row(int b, int i) const {
  const int64_t s = slot_[(size_t)flat(b, i)];
  return s < 0 ? nullptr : rows_.ptr() + s * vocab_;
}

const Tensor& TokenLogits::dense() const {
  if (!empty() && !allKept())
    throw Error(ErrorKind::BadInput, "the token logits of this run are not all kept (" +
                                         std::to_string(kept_rows_) + " of " +
                                         std::to_string((int64_t)batch_ * positions_) + " rows)");
  return rows_;
}

std::vector<std::pair<int, float>> TokenLogits::top(int b, int i, int k) const {
  const int64_t r = flat(b, i);
  k = std::max(0, std::min(k, vocab_));
  std::vector<std::pair<int, float>> out;
  const float* l = k > top_ ? row(b, i) : nullptr;  // the summary answers up to top_
  if (l) {
    std::vector<int32_t> ids((size_t)k);
    std::vector<float> values((size_t)k);
    highest(l, vocab_, k, ids.data(), values.data());
    for (int j = 0; j < k; ++j) out.emplace_back(ids[(size_t)j], values[(size_t)j]);
    return out;
  }
  if (k > top_)
    throw Error(ErrorKind::BadInput, "position " + std::to_string(i) + " keeps its " +
                                         std::to_string(top_) + " highest logits, not " +
                                         std::to_string(k));
  for (int j = 0; j < k; ++j)
    out.emplace_back(top_ids_[(size_t)(r * top_ + j)], top_values_[(size_t)(r * top_ + j)]);
  return out;
}

std::vector<std::pair<int, float>> TokenLogits::topProbabilities(int b, int i, int k) const {
  std::vector<std::pair<int, float>> out = top(b, i, k);
  const double lse = logSumExp(b, i);
  for (auto& [id, value] : out) value = (float)std::exp((double)value - lse);
  return out;
}

double TokenLogits::logSumExp(int b, int i) const {
  return lse_[(size_t)flat(b, i)];
}

bool TokenLogits::logitOf(int b, int i, int id, float* out) const {
  const int64_t r = flat(b, i);
  if (id < 0 || id >= vocab_) return false;
  if (const float* l = row(b, i)) {
    *out = l[id];
    return true;
  }
  if (next_ids_[(size_t)r] == id) {
    *out = next_values_[(size_t)r];
    return true;
  }
  for (int j = 0; j < top_; ++j)
    if (top_ids_[(size_t)(r * top_ + j)] == id) {
      *out = top_values_[(size_t)(r * top_ + j)];
      return true;
    }
  return false;
}

void TokenLogits::keepRow(int b, int i, const float* logits) {
  const int64_t r = flat(b, i);
  if (slot_[(size_t)r] >= 0) return;
  int64_t at = 0;  // the kept rows before r
  for (int64_t q = 0; q < r; ++q) at += slot_[(size_t)q] >= 0;
  for (int64_t q = r + 1; q < (int64_t)slot_.size(); ++q)
    if (slot_[(size_t)q] >= 0) ++slot_[(size_t)q];
  slot_[(size_t)r] = at;
  rows_.data.insert(rows_.data.begin() + at * vocab_, logits, logits + vocab_);
  ++kept_rows_;
  reshape();
}

void TokenLogits::append(TokenLogits&& more) {
  if (more.empty()) return;
  if (empty()) {
    *this = std::move(more);
    return;
  }
  if (batch_ != 1 || more.batch_ != 1 || more.vocab_ != vocab_)
    throw Error(ErrorKind::BadInput,
                "token logits are appended for one sentence of one vocabulary");
  auto join = [](auto& a, const auto& b) { a.insert(a.end(), b.begin(), b.end()); };
  join(top_ids_, more.top_ids_);
  join(top_values_, more.top_values_);
  join(lse_, more.lse_);
  join(next_ids_, more.next_ids_);
  join(next_values_, more.next_values_);
  join(non_finite_, more.non_finite_);
  for (int64_t s : more.slot_) slot_.push_back(s < 0 ? -1 : s + kept_rows_);
  join(rows_.data, more.rows_.data);
  kept_rows_ += more.kept_rows_;
  positions_ += more.positions_;
  reshape();
}

void TokenLogits::truncate(int n) {
  if (empty() || n >= positions_ || n < 0) return;
  if (batch_ != 1) throw Error(ErrorKind::BadInput, "token logits are truncated for one sentence");
  int64_t kept = 0;
  for (int i = 0; i < n; ++i) kept += slot_[(size_t)i] >= 0;
  positions_ = n;
  top_ids_.resize((size_t)n * top_);
  top_values_.resize((size_t)n * top_);
  lse_.resize((size_t)n);
  next_ids_.resize((size_t)n);
  next_values_.resize((size_t)n);
  non_finite_.resize((size_t)n);
  slot_.resize((size_t)n);
  kept_rows_ = kept;
  rows_.data.resize((size_t)(kept * vocab_));
  reshape();
}

bool TokenLogits::hasNaN(int b, int i) const {
  return non_finite_[(size_t)flat(b, i)][0] > 0;
}

std::array<int64_t, 3> TokenLogits::nonFinite() const {
  std::array<int64_t, 3> n{0, 0, 0};
  for (const auto& r : non_finite_)
    for (int k = 0; k < 3; ++k) n[(size_t)k] += r[(size_t)k];
  return n;
}

uint64_t TokenLogits::bytes() const {
  return bytesFor((uint64_t)batch_ * positions_, (uint64_t)vocab_, (uint64_t)kept_rows_);
}

uint64_t TokenLogits::bytesFor(uint64_t rows, uint64_t V, uint64_t kept) {
  const uint64_t top = std::min<uint64_t>(kTop, V);
  return rows * (top * 8 + sizeof(double) + 8 + 12 + sizeof(int64_t)) + kept * V * sizeof(float);
}

}  // namespace attnviz

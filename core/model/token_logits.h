// The token logits of a pass, [batch, positions, V], held as the views read them. A long input's
// logits are as large as its attention was (8,192 positions of a 49,152-token vocabulary: 1.6 GB),
// so every position keeps what the views show of it — its kTop highest logits, its log-sum-exp and
// the logit of the token fed after it — and whole rows are kept only for the positions a pass was
// asked for: all of them while they fit in ForwardOptions::kept_logits_bytes, otherwise each
// sentence's last position and ForwardOptions::keep_logits_at. Any other row follows from the
// trace's hidden state through the token head (logitsRow in model/runs.h), the pass's arithmetic.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "base/tensor.h"

namespace attnviz {

class TokenLogits {
 public:
  static constexpr int kTop = 50;  // the highest logits kept per position

  TokenLogits() = default;
  // Room for batch × positions rows of `vocab` logits; add() fills them.
  TokenLogits(int batch, int positions, int vocab);

  bool empty() const { return vocab_ == 0; }
  int batch() const { return batch_; }
  int positions() const { return positions_; }
  int vocab() const { return vocab_; }

  // Takes n rows from flat row r0 (row r = b · positions + i), logits [n, V]: their summaries, and
  // row r whole where keep[r − r0] is set (keep null: none). next[r − r0] is the id fed after row
  // r, −1 for none (next null: none). Rows are added once each, in order.
  void add(int64_t r0, int n, const float* logits, const int* next, const uint8_t* keep);

  bool kept(int b, int i) const;
  bool allKept() const { return kept_rows_ == (int64_t)batch_ * positions_ && kept_rows_ > 0; }
  // The kept row (V values), or nullptr.
  const float* row(int b, int i) const;
  // All rows [batch, positions, V] (an empty tensor without logits); throws Error(BadInput) when
  // some are not kept.
  const Tensor& dense() const;

  // The k highest logits of position i (fewer when V < k), highest first, ties by the lower id:
  // from the summary up to kTop, beyond from the kept row (throws Error(BadInput) when a row not
  // kept is asked for more).
  std::vector<std::pair<int, float>> top(int b, int i, int k) const;
  // The same k tokens with their probabilities, exp(logit − logSumExp).
  std::vector<std::pair<int, float>> topProbabilities(int b, int i, int k) const;
  // log Σ_v exp(logit_v) of position i (double sums): a probability is exp(logit − logSumExp).
  double logSumExp(int b, int i) const;
  // The logit of token `id` at position i where it is known without the row — the row is kept, the
  // id is among the top kTop or it is the id fed after i — into *out; false otherwise.
  bool logitOf(int b, int i, int id, float* out) const;

  // Whether row i of sentence b holds a NaN (top() passes NaNs over).
  bool hasNaN(int b, int i) const;
  // The NaN, +Inf and −Inf values among all the rows' logits (counted as they were added).
  std::array<int64_t, 3> nonFinite() const;

  // Keeps row i of sentence b whole from now on (logits: its V values, e.g. from logitsRow).
  void keepRow(int b, int i, const float* logits);
  // Appends more's positions after these (batch 1).
  void append(TokenLogits&& more);
  // Keeps the first n positions (batch 1).
  void truncate(int n);
  uint64_t bytes() const;
  // The bytes of `rows` positions of which `kept` are whole rows of V logits.
  static uint64_t bytesFor(uint64_t rows, uint64_t V, uint64_t kept);

 private:
  int64_t flat(int b, int i) const;
  void reshape();

  int batch_ = 0, positions_ = 0, vocab_ = 0;
  int top_ = 0;                    // entries kept per position: min(kTop, V)
  std::vector<int32_t> top_ids_;   // [rows, top_]
  std::vector<float> top_values_;  // [rows, top_]
  std::vector<double> lse_;        // [rows]
  std::vector<int32_t> next_ids_;  // [rows]: −1 none
  std::vector<float> next_values_;
  std::vector<std::array<int32_t, 3>> non_finite_;  // [rows]: NaN, +Inf, −Inf
  std::vector<int64_t> slot_;  // [rows]: the row's index in rows_, −1 when not kept
  int64_t kept_rows_ = 0;
  Tensor rows_;  // the kept rows, in row order: [B, positions, V] when all are kept, else [kept, V]
};

}  // namespace attnviz

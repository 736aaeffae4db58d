// Finding NaN and ±Inf in what a pass computed: which attention block (or output) holds them
// first, in the order the pass computed them, and how many — for the CLI's report and the GUI's
// banner. Finite weights can still overflow (embeddings of 1e20 make every score infinite).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/trace.h"

namespace attnviz {

struct NonFiniteCount {
  int64_t nan = 0, pos_inf = 0, neg_inf = 0;

  int64_t total() const { return nan + pos_inf + neg_inf; }
  bool any() const { return total() > 0; }
  void add(const float* values, int64_t n);
  NonFiniteCount& operator+=(const NonFiniteCount& o);
  // "12 NaN, 3 +Inf" (only the kinds present).
  std::string describe() const;
};

// One place of the trace holding non-finite values.
struct NonFiniteSpot {
  int block = -1;     // index into Trace::blocks; -1 for an output
  std::string where;  // "encoder self-attention, layer 0", "token logits", ...
  // Per part, over the cells the trace shows (q_len × k_len of every head): scores, probs and
  // the q/k/v vectors of a block; an output counts in `values`.
  NonFiniteCount scores, probs, qkv, values;

  NonFiniteCount total() const;
  // "scores: 12 NaN; probabilities: 48 NaN"
  std::string describe() const;
};

struct NonFiniteReport {
  std::vector<NonFiniteSpot> spots;  // blocks in the trace's (the pass's) order, then the outputs
  int blocks_scanned = 0;

  bool empty() const { return spots.empty(); }
  // The first block holding any, or else the first output; null when the pass is finite.
  const NonFiniteSpot* first() const { return spots.empty() ? nullptr : &spots.front(); }
  // One paragraph: where they appear first, with the counts, and how far they spread.
  std::string summary() const;
};

// Scans every block (scores, probs, q/k/v) and the outputs (hidden states, token and class
// logits) of a trace.
NonFiniteReport scanTrace(const Trace& trace);

}  // namespace attnviz

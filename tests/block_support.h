// Attention blocks with given probabilities, for hand-computed tests of what reads a trace.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/trace.h"

namespace attnviz {

// A block of one sentence whose head h, row i has the probabilities p[(h·q + i)·k + j] (each row
// summing to 1): the keys are one-hot (d_k = k) and the query of row i holds log p_ij (−10⁴ for a
// zero, whose exp is 0), so score s_ij = log p_ij and the row statistics are those of the softmax
// the pass would have run. `causal`: the look-ahead mask (j > i masked, with probability 0 given).
inline AttentionBlock blockOfProbs(AttentionKind kind, int layer, int heads, int q, int k,
                                   const std::vector<float>& p, bool causal = false) {
  AttentionBlock a(kind, layer, 1, heads, heads, q, k, k);
  a.mask.causal = causal;
  for (int g = 0; g < heads; ++g)
    for (int j = 0; j < k; ++j) a.k[((size_t)g * k + j) * k + j] = 1.0f;
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < q; ++i) {
      const float* row = p.data() + ((size_t)h * q + i) * k;
      float* qi = a.q.data() + ((size_t)h * q + i) * k;
      int best = 0;
      for (int j = 0; j < k; ++j) {
        qi[j] = row[j] > 0.0f ? std::log(row[j]) : -1e4f;
        if (row[j] > row[best]) best = j;
      }
      a.row_ref[(size_t)h * q + i] = qi[best];
      a.row_prob[(size_t)h * q + i] = row[best];
    }
  return a;
}

}  // namespace attnviz

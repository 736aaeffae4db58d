// What each attention head does, in numbers: entropy, where its attention goes (the diagonal, the
// previous token, the first token, BOS / EOS / padding — attention sinks), how far it looks, and
// for cross-attention how monotonic its alignment is; a distance between heads' profiles ("heads
// like this one"); CSV export; and attention rollout across layers. Definitions: docs/formats.md
// "Head statistics".
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "arch/config.h"
#include "model/trace.h"

namespace attnviz {

// Means over the query rows of one sentence whose query token is not padding (all rows when every
// one is). p_ij is the head's probability, i the query position, j the key position. NaN where a
// statistic does not apply.
struct HeadStats {
  AttentionKind kind = AttentionKind::EncoderSelf;
  int layer = 0, head = 0;
  int rows = 0;             // query rows averaged over
  double entropy = 0;       // −Σ_j p_ij ln p_ij (nats)
  double entropy_norm = 0;  // entropy / ln(unmasked keys of the row); a row with one key: 0
  double diagonal = 0;      // p_ii (self-attention; NaN for cross-attention)
  double previous = 0;      // p_i,i−1 over rows i ≥ 1 (self-attention; NaN for cross / one row)
  double first = 0;         // p_i0
  double bos = 0, eos = 0;  // Σ p_ij over keys that are the start / end token (NaN: none there)
  double padding = 0;       // Σ p_ij over padding keys (0 when the padding mask is on)
  double distance = 0;      // Σ_j p_ij |i − j| (self-attention; NaN for cross-attention)
  double monotonicity = 0;  // cross-attention: Kendall's τ between i and the attention centre
                            // c_i = Σ_j p_ij j over pairs of rows (ties count 0); +1: the source
                            // is read in order, −1: in reverse (NaN for self-attention)
};

// The ids that mark the start, end and padding of the query and key sequences of a kind.
struct TokenRoles {
  int pad = -1, bos = -1, eos = -1;
};
TokenRoles tokenRoles(const ModelConfig& config, Side side);

// One head of one block, for sentence b of the batch. q_ids, k_ids: the padded query and key ids.
HeadStats headStats(const AttentionBlock& block, int b, int head, const std::vector<int>& q_ids,
                    const std::vector<int>& k_ids, const TokenRoles& q_roles,
                    const TokenRoles& k_roles);
// Every head of every block of a trace (or only the blocks of `kind`), for sentence b: blocks in
// trace order, heads in order.
std::vector<HeadStats> headStatistics(const Trace& trace, const ModelConfig& config, int b,
                                      std::optional<AttentionKind> kind = std::nullopt);

// One query row's part of a head's statistics: headStats is the mean of its rows' parts (over the
// rows that are not padding), the monotonicity Kendall's τ of their centres.
struct HeadRowPart {
  double entropy = 0, entropy_norm = 0, diagonal = 0, previous = 0, first = 0, bos = 0, eos = 0,
         padding = 0, distance = 0;
  double centre = 0;          // Σ_j p_ij j
  bool has_previous = false;  // the row has a previous key (i ≥ 1)
};
HeadRowPart headRowPart(const AttentionBlock& block, int b, int head, int i,
                        const std::vector<int>& k_ids, const TokenRoles& k_roles);

// headStatistics kept across the steps of a decoding session, whose trace grows or shrinks by a
// row at a time: each query row's part is computed once. A long input has millions of cells per
// head (GPT-2 small at 1,024 tokens: 144 heads of 1,023 × 1,023), and a step changes one row.
class HeadStatistics {
 public:
  // kept_target_rows ≥ 0: the trace is the one of the last update, or one that grew from it in
  // the same session, whose first kept_target_rows query rows of every target-query block
  // (decoder self-attention, cross-attention) are unchanged (their tokens and every earlier token
  // the same); its source-query blocks are unchanged. Those rows' parts are kept; every other row
  // is computed. −1 (or another sentence, kind or layout of blocks): every row is computed.
  const std::vector<HeadStats>& update(const Trace& trace, const ModelConfig& config, int b,
                                       std::optional<AttentionKind> kind, int kept_target_rows);
  const std::vector<HeadStats>& stats() const { return stats_; }

 private:
  int b_ = -1;
  std::optional<AttentionKind> kind_;
  std::vector<std::tuple<AttentionKind, int, int>> layout_;  // (kind, layer, head) per head
  std::vector<std::vector<HeadRowPart>> parts_;              // per head: [q_len] row parts
  std::vector<HeadStats> stats_;
};

// How unlike two heads' profiles are: the root mean square difference of (entropy_norm, diagonal,
// previous, first, bos, eos, padding, distance / (keys − 1), (monotonicity + 1) / 2) over the
// components both define; 0 = the same profile; +∞ when they share none.
double headDistance(const HeadStats& a, const HeadStats& b, int a_keys, int b_keys);

// CSV (RFC 4180): a header line, then one line per head; layer and head count from 1 as the
// application shows them; statistics with 6 significant digits; an empty field where NaN.
std::string headStatsCsv(const std::vector<HeadStats>& stats);

// Attention rollout (Abnar & Zuidema 2020) — an approximation of how much each position's input
// flows into each position's output after layers 0 … upto, that treats the heads' mean attention
// as the only mixing and folds in the residual connection: Ã_l = ½·Ā_l + ½·I,
// R = Ã_upto ··· Ã_0. kind: EncoderSelf or DecoderSelf. [len, len] (len: the trace's padded length
// of that side), row-major; rows sum to 1.
std::vector<float> attentionRollout(const Trace& trace, AttentionKind kind, int upto, int b);
// Cross-attention of decoder layer `layer` (the mean of its heads, [T, S]) followed back through
// the whole encoder's rollout ([S, S]): which source tokens, rather than encoder positions, the
// decoder reads there. Same approximation. [T, S].
std::vector<float> crossRollout(const Trace& trace, int layer, int b);

}  // namespace attnviz

// Two circuit scores per attention head (docs/formats.md "Head statistics"): the induction score —
// how much a head attends, on a random token sequence repeated twice, to the token after the
// earlier occurrence of the current token (Olsson et al. 2022) — and the copying score of its OV
// circuit, from the eigenvalues of W_U·W_O·W_V·W_E (Elhage et al. 2021).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "model/atlas.h"
#include "model/model.h"
#include "model/trace.h"

namespace attnviz {

// One number for one head of one attention block; NaN where it does not apply.
struct HeadScore {
  AttentionKind kind = AttentionKind::EncoderSelf;
  int layer = 0, head = 0;
  double value = 0;
};

struct InductionOptions {
  int sequences = 8;  // R: random sequences, run as one batch
  int length = 16;    // L: tokens of each half; shortened to fit the model's positions
  uint64_t seed = 0;  // of the SplitMix64 that draws the tokens
  const std::atomic<bool>* cancel = nullptr;
};

// The repeated sequences of one side: [R][o + 2L] ids, where o = 1 when the side starts with a
// start token (the decoder's bos_id, the source's src_bos_id when src_bos_eos) and 0 otherwise;
// a source wrapped in src_bos_eos also ends with its end token (after the 2L). Token i of the
// first half is drawn uniformly from the side's ids that are not padding, start, end or unknown
// ids, by SplitMix64(seed) (the source side from seed, the target side from seed + 1). Throws
// Error(BadInput) when the side has fewer than 2 ordinary tokens or fewer than 4 positions.
struct RepeatedSequences {
  int offset = 0;  // o
  int length = 0;  // L, after shortening
  std::vector<std::vector<int>> ids;
};
RepeatedSequences repeatedSequences(const Model& model, Side side, const InductionOptions& options);

// The induction score of every head of every self-attention block (encoder self-attention on the
// repeated source, decoder self-attention on the repeated target; an encoder-decoder runs both
// at once, its cross-attention gets NaN): the mean over the R sequences and the L query positions
// i of the second copy of p(i, i − L + 1), the attention to the token after the earlier
// occurrence of the current token. Blocks in trace order, heads in order. Throws Error(BadInput)
// (see repeatedSequences) or Error(Cancelled).
std::vector<HeadScore> inductionScores(const Model& model, const InductionOptions& options = {});
// The same, from a trace of repeatedSequences' batch (the one inductionScores runs).
std::vector<HeadScore> inductionScores(const Trace& trace, const RepeatedSequences* source,
                                       const RepeatedSequences* target);

// The copying score of an OV circuit: Σ Re λ / Σ |λ| over the eigenvalues λ of the matrix (1 for
// the identity, −1 for its negative, 0 for a rotation by 90°; NaN when every eigenvalue is 0).
// ov: [n, n] row-major.
double copyingScoreOf(const std::vector<double>& ov, int n);
// The eigenvalues of a real square matrix [n, n] row-major (Hessenberg reduction, then Francis's
// double-shift QR), as (real, imaginary) pairs in no particular order. Throws Error(BadInput)
// when the iteration does not converge.
std::vector<std::pair<double, double>> eigenvalues(std::vector<double> a, int n);

// The copying score of every head of every attention block, from the weights: head h's OV circuit
// from tokens to logits is W_U·W_O^h·W_V^h·W_Eᵀ [V, V] (W_E: the key side's token table, W_U: the
// token head's projection); its nonzero eigenvalues are those of the [d_v, d_v] matrix
// W_V^h·(W_Eᵀ·W_U)·W_O^h, which is what is computed. Norms, positions and biases are left out
// (LayerNorm is not folded in). NaN where the key side's vocabulary is not the output vocabulary
// (an encoder-decoder with two vocabularies, a model without a token head). The work is
// V·d² for W_Eᵀ·W_U, then d²·d_v per head (GPT-2 small: about 30 + 5 GFLOP). Throws
// Error(Cancelled) when `cancel` is set.
std::vector<HeadScore> copyingScores(const Model& model, const std::atomic<bool>* cancel = nullptr);

// A model's circuit scores per head of an atlas (in Atlas::heads' order; NaN where a score does
// not apply), and why one is missing altogether (the refusal's message, "" when computed).
struct AtlasScores {
  std::vector<double> induction, copying;
  std::string induction_note, copying_note;
};
// inductionScores and copyingScores of `model` matched to the atlas's heads; a score the model
// refuses (an Error other than Cancelled) becomes NaN everywhere, with the reason in the note.
// Throws Error(Cancelled) when `cancel` is set.
AtlasScores atlasScores(const Model& model, const Atlas& atlas,
                        const std::atomic<bool>* cancel = nullptr);

}  // namespace attnviz

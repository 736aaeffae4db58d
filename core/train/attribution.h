// Why this token? Gradient attribution: how much each input token's embedding moves one output
// logit — saliency (gradient × input) and integrated gradients (Sundararajan et al. 2017) — set
// beside where the chosen head and attention rollout look, with a rank correlation between them.
//
// It lives in train/, not model/, because it runs the backward pass (train/backward.h) that
// training uses, on the tape the forward pass writes (model/tape.h): model/ may not depend on
// train/, and train/ may depend on model/ (the trace, rollout in model/head_stats.h, the lens's
// choice of the output stack in model/lens.h).
//
// Definitions (docs/guide.md "Why this token?"):
// - f = logit[token] at the chosen position of the output stack (the decoder; an encoder-only
//   masked LM: the encoder), or logit[token] − logit[versus].
// - The input of token i is its token-embedding row as the pass adds it: e_i = tokens[id_i]·s,
//   s = √d_model for models that scale their embeddings, else 1. The positions (sinusoidal or
//   learned; rotary ones are no input at all) and BERT's segment rows are held fixed: they are the
//   same for every sentence, so they say nothing about which token mattered. The embedding norm
//   (BERT), when there is one, comes after the sum, so it is part of f.
// - Saliency of token i: Σ_d ∂f/∂e_i,d · e_i,d (signed), and ‖∂f/∂e_i ⊙ e_i‖₂.
// - Integrated gradients with the baseline e' = 0 (every token row zero, positions kept):
//   IG_i = Σ_d e_i,d · (1/N) Σ_k ∂f/∂e_i,d at α_k e, α_k = (k + ½)/N (the midpoint Riemann sum of
//   N steps). Completeness: Σ_i IG_i ≈ f(e) − f(0), the gap shrinking as N grows. For an
//   encoder-decoder every source and target token moves along one path together, so the sum runs
//   over both sides.
// The N steps (and the input and baseline themselves) run as sentences of one batch through the
// pass and its backward: a few large matrix products instead of N small ones.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "model/model.h"

namespace attnviz {

struct AttributionOptions {
  int sentence = 0;   // which sentence of the inputs
  int position = -1;  // the output position explained; −1: the last
  int token = -1;     // the token whose logit is explained; −1: the model's choice (the argmax)
  int versus = -1;    // ≥ 0: explain logit[token] − logit[versus]
  int steps = 32;     // integrated gradients' steps N, 1 … kMaxSteps
  // The attention set beside the attributions: this layer of the output stack (−1: the last) and
  // this head (−1: the mean of the layer's heads). An encoder-decoder's source tokens are compared
  // with the same layer's cross-attention.
  int layer = -1, head = -1;
  int batch = 0;  // sentences per pass (0: as many as keep a pass near 512 rows: larger batches
                  // spend more time on the kernel zeroing fresh pages than they gain in the
                  // products)
  const std::atomic<bool>* cancel = nullptr;          // → Error(Cancelled)
  std::function<void(int done, int total)> progress;  // steps done, after each batch

  static constexpr int kMaxSteps = 4096;
};

// One side's tokens (an encoder-decoder has two: the source, then the target).
struct TokenAttributions {
  Side side = Side::Target;
  std::vector<int> ids;
  std::vector<std::string> tokens;  // as the vocabulary spells them
  int compared = 0;  // tokens [0, compared) enter the rank correlations: the keys the explained
                     // position can see (a decoder's causal mask stops at the position)
  std::vector<float> saliency;       // [n] Σ_d ∂f/∂e_i,d · e_i,d
  std::vector<float> saliency_norm;  // [n] ‖∂f/∂e_i ⊙ e_i‖₂
  std::vector<float> integrated;     // [n] IG_i
  std::vector<float> attention;      // [n] the chosen head's (or the heads' mean) row
  std::vector<float> rollout;        // [n] attention rollout's row at the position
  std::string attention_name;        // "layer 2 self-attention head 3", "layer 2 cross-attention
                                     // (mean of heads)"
  std::string rollout_name;          // which rollout, in words
  // Spearman's ρ between |IG_i| and the attention row, and between |IG_i| and rollout's row, over
  // tokens [0, compared) (ties share their mean rank; NaN with fewer than 2 tokens or no spread).
  double spearman_attention = 0, spearman_rollout = 0;
  std::vector<float> gradient;  // [n, d] ∂f/∂e at the input itself (α = 1)
  std::vector<float> input;     // [n, d] e
};

struct Attribution {
  int position = 0, token = 0, versus = -1, steps = 0;
  int layer = 0, head = -1;  // the attention compared (head −1: the mean)
  double f_input = 0;        // f(e): the batch's sentence at α = 1
  double f_baseline = 0;     // f(0)
  double ig_total = 0;       // Σ_i IG_i over every side
  double gap = 0;            // |ig_total − (f_input − f_baseline)|
  double gap_relative = 0;   // gap / |f_input − f_baseline| (∞ when the difference is 0)
  std::string baseline;      // what the baseline is, in words
  std::string rule;          // how the path integral is summed, in words
  std::vector<TokenAttributions> sides;  // encoder-decoder: source, target; else the one stack
};

// Throws Error(BadInput) for a model without a token head (nothing to explain), a sentence,
// position, token, layer or head out of range, or steps outside 1 … kMaxSteps; Error(Cancelled).
Attribution attribute(const Model& m, const Inputs& inputs, const AttributionOptions& o = {});

// Writes, per side (SIDE = src, tgt), SIDE_saliency.npy, SIDE_saliency_norm.npy,
// SIDE_integrated.npy, SIDE_attention.npy, SIDE_rollout.npy [n] and SIDE_gradient.npy [n, d], and
// attribution.json (f, the baseline and the rule, the completeness figures, per side the tokens,
// ids, the values, the attention and rollout compared and Spearman's ρ; `out` names the explained
// tokens) into `dir`. Throws Error(Io).
void dumpAttribution(const Attribution& a, const std::vector<std::string>& out_tokens,
                     const std::string& dir);

// The same as CSV (RFC 4180): one line per token and side — the side (source, target), the
// position (from 1, as the GUI counts), the token, its id, whether it enters the rank correlations,
// saliency, |g⊙x|, integrated gradients, the attention and rollout compared.
std::string attributionCsv(const Attribution& a);

// Spearman's rank correlation of x and y (average ranks for ties); NaN with fewer than 2 values
// or when either has no spread.
double spearman(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace attnviz

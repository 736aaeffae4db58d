// Why this token? Two readings of a pass run with ForwardOptions::keep_activations: the logit lens
// (every layer's residual stream read through the model's own final norm and token head: what the
// model would predict if it stopped there) and the direct contributions (one token's logit split
// into the embeddings', every attention head's, every feed-forward block's and the biases' parts).
#pragma once

#include <string>
#include <vector>

#include "model/model.h"
#include "model/trace.h"

namespace attnviz {

// The forward options a pass needs for both: its activations (the residual stream and every
// attention sublayer's heads) kept.
ForwardOptions lensForwardOptions();

// The stack whose residual stream reaches the token head: the decoder (encoder-decoder,
// decoder-only), else the encoder (encoder-only masked LM).
Side lensStack(const ModelConfig& c);

struct LensOptions {
  int sentence = 0;  // which sentence of the trace's batch
  int top_k = 5;     // tokens kept per cell
  // The token each cell reports the probability and rank of: a vocabulary id at every position, or
  // −1 for the token the model finally chooses at that position (the argmax of its logits).
  int target = -1;
  bool keep_logits = false;  // keep every row's logits (tests, --dump)
};

// The logit lens of one sentence. Row 0 reads the embeddings (the first layer's input), row l the
// residual stream leaving layer l (Sublayer::Residual): pre-norm x + attention + feed-forward, not
// normed yet; post-norm the block's output, already normed by the layer's last add & norm. Each row
// goes through what the pass applies after its last layer: the stack's final norm when the model
// has one, then the token head (the output projection, tied or not; BERT's masked-LM head) — the
// same backend ops and weights (runTokenHead), so the last row is the model's own logits.
struct LogitLens {
  Side stack = Side::Target;
  int rows = 0, positions = 0, top_k = 0, vocab = 0;
  std::vector<std::string> row_names;  // [rows] "embeddings", "layer 1", …
  std::vector<int> targets;            // [positions] the token reported at each position
  std::vector<int> top_ids;            // [rows, positions, top_k] most probable first
  std::vector<float> top_probs;        // [rows, positions, top_k]
  std::vector<float> target_probs;     // [rows, positions] softmax probability of the target
  std::vector<int> target_ranks;       // [rows, positions] 1 = the most probable token
  Tensor logits;                       // [rows, positions, V] with keep_logits
  std::string reading;                 // what a row is and which norm and head read it, in words

  int64_t cell(int row, int pos) const { return (int64_t)row * positions + pos; }
};

// Throws Error(BadInput) when the trace has no residual stream (a pass without keep_activations),
// the model has no token head, the sentence or the target is out of range.
LogitLens logitLens(const Model& m, const Trace& t, const LensOptions& o = {});

struct ContributionOptions {
  int sentence = 0;
  int position = -1;  // the query position explained; −1: the last of the sentence (padding aside)
  int token = -1;     // the token whose logit is split; −1: the model's choice (the argmax)
  int versus = -1;    // ≥ 0: split logit[token] − logit[versus] instead
};

// One direct contribution: the part of the logit (difference) that a piece of the residual stream
// adds through the frozen final norm and the output projection.
struct LogitPart {
  enum class Kind { TokenEmbedding, Positions, Embeddings, Head, FeedForward, Bias };
  Kind kind = Kind::Bias;
  AttentionKind attention = AttentionKind::DecoderSelf;  // Kind::Head: which block
  int layer = -1, head = -1;                             // 0-based; −1 where none
  std::string name;  // "L2 self H3", "L1 feed-forward", "L1 self-attention bias", "final norm β" …
  double value = 0;
};

// The direct contributions at one position. With the final norm's scale frozen at this input —
// N(x) = γ ⊙ (x − mean x)·s + β, s = 1/σ computed from this position's residual stream as the
// norm computes it (RMSNorm: no centering) — the logit is linear in the stream, and the stream of a
// pre-norm model is a sum: embeddings + Σ layers (Σ heads ctx_h·W_O,hᵀ + b_O + feed-forward + b_2).
// So logit[token] = Σ parts exactly up to rounding: each part is (P(W_U[token] ⊙ γ)·s)·piece, P the
// centering; the final norm's β (W_U[token]·β) and the output bias are parts of their own. For an
// encoder-decoder the decoder's stream is split; the encoder reaches it through the cross-attention
// heads. Post-norm models and BERT's masked-LM head are refused: every add & norm rescales the
// stream it is given, so a head's output does not reach the logits as one term of a sum.
struct Contributions {
  int position = 0, token = 0, versus = -1;
  double logit = 0;              // the model's own logit (difference), from the trace
  double total = 0;              // Σ parts
  double scale = 1;              // the frozen s = 1/σ of the final norm (1 without one)
  std::string norm;              // which norm was frozen, in words
  std::vector<LogitPart> parts;  // largest |value| first
};

// Throws Error(BadInput) for the models it refuses (saying why), a trace without activations and
// positions or tokens out of range.
Contributions directContributions(const Model& m, const Trace& t,
                                  const ContributionOptions& o = {});

}  // namespace attnviz

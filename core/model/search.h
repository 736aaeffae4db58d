// Decoding beyond greedy: sampling with a temperature, top-k and top-p from a seeded generator that
// gives the same draws on every platform, and beam search of a chosen width over cached decoder
// states, keeping the whole search tree. docs/formats.md "Search" states the semantics, which
// tools/make_search_references.py implements independently in PyTorch.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>
#include <vector>

#include "model/model.h"

namespace attnviz {

// SplitMix64 (Steele, Lea, Flood 2014): a tiny generator whose every draw is fixed by the seed, on
// every platform and in Python (std::uniform_real_distribution is not).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();  // [0, 1): the top 53 bits of next() · 2⁻⁵³

 private:
  uint64_t state_;
};

struct SamplingOptions {
  float temperature = 1.0f;  // > 0: softmax(logits / temperature)
  int top_k = 0;             // keep the k most probable tokens; 0 = all
  float top_p = 1.0f;        // then the fewest most probable tokens whose mass reaches p; 1 = all
  uint64_t seed = 0;
  int max_new_tokens = 0;  // 0 = defaultMaxNewTokens (decoding.h)
  MaskOptions masks;
  std::vector<HeadIntervention> interventions;
  const std::atomic<bool>* cancel = nullptr;
};

// The distribution one sampling step draws from: softmax(logits / temperature) in double, sorted
// most probable first (ties: the lower id first), cut to the top k, then to the top p of what is
// left (renormalised), then renormalised to sum 1. (id, probability) pairs. Throws
// Error(BadInput) for a temperature ≤ 0, top_k < 0 or top_p outside (0, 1].
std::vector<std::pair<int, double>> samplingDistribution(const float* logits, int V,
                                                         const SamplingOptions& options);
// The token a uniform draw u ∈ [0, 1) picks: the first whose cumulative probability exceeds u.
int sampleToken(const std::vector<std::pair<int, double>>& distribution, double u);

struct SampledStep {
  int id = -1;
  double prob = 0;        // its probability in the distribution it was drawn from
  double model_prob = 0;  // its probability under the model (softmax of the raw logits)
  int candidates = 0;     // tokens left after temperature, top-k and top-p
};
struct SampleResult {
  std::vector<int> prefix;  // the decoder's first positions (start token, forced words)
  std::vector<int> ids;     // the ids chosen after the prefix (the end token included)
  std::vector<SampledStep> steps;
  double log_prob = 0;  // Σ log model_prob: the model's log-probability of the continuation
};
// Decodes by drawing every next token (one uniform draw per step from SplitMix64(seed)); the same
// length rule as greedy decoding. src: the encoder's ids (empty for a decoder-only model); prefix:
// empty = the start token.
SampleResult sampleDecode(const Model& model, const std::vector<int>& src, std::vector<int> prefix,
                          const SamplingOptions& options);

struct BeamOptions {
  int width = 4;           // hypotheses kept; width 1 is greedy decoding
  int max_new_tokens = 0;  // 0 = defaultMaxNewTokens
  // Finished hypotheses are ranked by score / (generated ids)^length_penalty; 0 = the raw score.
  float length_penalty = 0.0f;
  int pruned_shown = 0;  // per step, how many of the best candidates that were not kept to record
  MaskOptions masks;
  std::vector<HeadIntervention> interventions;
  const std::atomic<bool>* cancel = nullptr;
};

// One node of the search tree: a hypothesis (the prefix and the ids on the path from the root).
struct BeamNode {
  enum class State {
    Root,      // the prefix
    Expanded,  // kept, and extended at the next step
    Finished,  // ended with the end token
    Cut,       // reached the length limit
    Pruned,    // a candidate that was not among the best (recorded when pruned_shown > 0)
  };
  int parent = -1;
  int step = 0;         // ids chosen after the prefix (the root: 0)
  int token = -1;       // the id chosen at this node (the root: the last prefix id)
  double log_prob = 0;  // log P(token | the parent's hypothesis), natural log
  double score = 0;     // Σ log_prob from the root
  double ranked = 0;    // Finished and Cut: score / step^length_penalty
  int rank = -1;        // Finished and Cut: 0 = the best hypothesis
  State state = State::Expanded;
};

struct BeamResult {
  std::vector<int> prefix;
  std::vector<BeamNode> nodes;  // nodes[0] is the root; parents come before their children
  std::vector<int> final;       // Finished and Cut nodes, best first
  float length_penalty = 0.0f;
  int best() const { return final.empty() ? -1 : final.front(); }
  // The ids after the prefix on the path from the root to `node`.
  std::vector<int> path(int node) const;
};

// Beam search as docs/formats.md "Search" defines it: every step, each live hypothesis proposes
// every token, scored by its log-probability added to the hypothesis's score; the best `slots`
// candidates are kept (ties: the earlier hypothesis, then the lower id), where slots = width minus
// the hypotheses finished so far. A kept candidate ending with the end token, or reaching the
// length limit, is finished; the others go on. The search ends when no slot is left.
BeamResult beamSearch(const Model& model, const std::vector<int>& src, std::vector<int> prefix,
                      const BeamOptions& options);

}  // namespace attnviz

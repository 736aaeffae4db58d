#include "model/search.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"
#include "model/decoding.h"

namespace attnviz {

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() {
  return double(next() >> 11) * 0x1.0p-53;
}

namespace {

// log softmax of a logits row in double: logits − (max + log Σ exp(logits − max)).
std::vector<double> logSoftmax(const float* logits, int V, double temperature = 1.0) {
  std::vector<double> z(size_t(V), 0.0);
  double mx = -INFINITY;
  for (int i = 0; i < V; ++i) {
    z[size_t(i)] = double(logits[i]) / temperature;
    mx = std::max(mx, z[size_t(i)]);
  }
  double sum = 0;
  for (double v : z) sum += std::exp(v - mx);
  const double lse = mx + std::log(sum);
  for (double& v : z) v -= lse;
  return z;
}

void checkSampling(const SamplingOptions& o) {
  if (!(o.temperature > 0.0f) || !std::isfinite(o.temperature))
    throw Error(ErrorKind::BadInput, "the sampling temperature must be above 0 (got " +
                                         std::to_string(o.temperature) + ")");
  if (o.top_k < 0)
    throw Error(ErrorKind::BadInput,
                "top-k must be 0 (all tokens) or more (got " + std::to_string(o.top_k) + ")");
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f))
    throw Error(ErrorKind::BadInput,
                "top-p must be in (0, 1] (got " + std::to_string(o.top_p) + ")");
}

void checkCancel(const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) throw Error(ErrorKind::Cancelled, "the search was cancelled");
}

}  // namespace

std::vector<std::pair<int, double>> samplingDistribution(const float* logits, int V,
                                                         const SamplingOptions& o) {
  checkSampling(o);
  const std::vector<double> logp = logSoftmax(logits, V, o.temperature);
  std::vector<int> order(size_t(V), 0);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return logp[size_t(a)] > logp[size_t(b)]; });
  size_t keep = o.top_k > 0 ? std::min<size_t>(size_t(o.top_k), order.size()) : order.size();
  std::vector<std::pair<int, double>> out;
  double mass = 0;
  for (size_t r = 0; r < keep; ++r) {
    const double p = std::exp(logp[size_t(order[r])]);
    out.emplace_back(order[r], p);
    mass += p;
  }
  if (o.top_p < 1.0f) {  // the fewest tokens whose renormalised mass reaches top_p
    double cum = 0;
    size_t n = 0;
    while (n < out.size()) {
      cum += out[n].second / mass;
      ++n;
      if (cum >= double(o.top_p)) break;
    }
    out.resize(n);
    mass = 0;
    for (const auto& e : out) mass += e.second;
  }
  for (auto& e : out) e.second /= mass;
  return out;
}

int sampleToken(const std::vector<std::pair<int, double>>& distribution, double u) {
  if (distribution.empty()) throw Error(ErrorKind::BadInput, "sampling from an empty distribution");
  double cum = 0;
  for (const auto& [id, p] : distribution) {
    cum += p;
    if (u < cum) return id;
  }
  return distribution.back().first;  // rounding left the sum just below u
}

SampleResult sampleDecode(const Model& model, const std::vector<int>& src, std::vector<int> prefix,
                          const SamplingOptions& o) {
  checkSampling(o);
  DecodingSession::Options so;
  so.masks = o.masks;
  so.record = false;
  so.max_new_tokens = o.max_new_tokens;
  so.interventions = o.interventions;
  so.cancel = o.cancel;
  DecodingSession session(model, src, std::move(prefix), so);
  SampleResult r;
  r.prefix = session.targetIds();
  SplitMix64 rng(o.seed);
  const int V = session.vocabSize();
  while (!session.finished()) {
    checkCancel(o.cancel);
    const float* logits = session.lastLogits();
    const auto dist = samplingDistribution(logits, V, o);
    SampledStep s;
    s.id = sampleToken(dist, rng.uniform());
    s.candidates = int(dist.size());
    for (const auto& [id, p] : dist)
      if (id == s.id) s.prob = p;
    const double lp = logSoftmax(logits, V)[size_t(s.id)];
    s.model_prob = std::exp(lp);
    r.log_prob += lp;
    r.steps.push_back(s);
    session.stepForward(s.id);
  }
  r.ids = session.generated();
  return r;
}

std::vector<int> BeamResult::path(int node) const {
  std::vector<int> ids;
  for (int n = node; n > 0; n = nodes[size_t(n)].parent) ids.push_back(nodes[size_t(n)].token);
  std::reverse(ids.begin(), ids.end());
  return ids;
}

namespace {

// A live hypothesis: its node, its decoder cache (every position fed so far) and the logits of
// its next token.
struct Live {
  int node = 0;
  std::unique_ptr<Model::DecoderCache> cache;
  std::vector<float> logits;  // [V]
};

struct Candidate {
  double score;
  int live;  // index into the live hypotheses (their order is the tie-break)
  int token;
  double log_prob;
};

}  // namespace

BeamResult beamSearch(const Model& model, const std::vector<int>& src, std::vector<int> prefix,
                      const BeamOptions& o) {
  const ModelConfig& c = model.config();
  if (!c.hasDecoder())
    throw Error(ErrorKind::BadInput, std::string(modelClassName(c.model)) +
                                         " has no decoder: there is nothing to search");
  if (o.width < 1)
    throw Error(ErrorKind::BadInput,
                "the beam width must be 1 or more (got " + std::to_string(o.width) + ")");
  if (prefix.empty()) prefix = startPrefix(model);
  if ((int)prefix.size() > model.maxPositions())
    throw Error(ErrorKind::BadInput, "the prefix has " + std::to_string(prefix.size()) +
                                         " tokens; this model takes at most " +
                                         std::to_string(model.maxPositions()));
  const int prefix_len = (int)prefix.size();
  const int limit =
      decodeLimit(model, prefix_len,
                  o.max_new_tokens > 0 ? o.max_new_tokens : defaultMaxNewTokens((int)src.size()));
  // With the look-ahead mask off, earlier positions see later ones: cached rows go stale, so
  // every step reruns the decoder over the whole hypothesis (as DecodingSession does).
  const bool use_cache = o.masks.subsequent;
  ForwardOptions fo;
  fo.masks = o.masks;
  fo.record = false;
  fo.interventions = o.interventions;
  fo.cancel = o.cancel;
  std::shared_ptr<const Model::Encoded> enc;
  if (c.hasCross()) enc = model.encode(src, {}, fo, nullptr);

  BeamResult r;
  r.prefix = prefix;
  r.length_penalty = o.length_penalty;
  BeamNode root;
  root.state = BeamNode::State::Root;
  root.token = prefix.back();
  r.nodes.push_back(root);

  // Feeds `tokens` (the new positions of a hypothesis) and returns the last position's logits.
  auto feed = [&](Model::DecoderCache& cache, const std::vector<int>& tokens) {
    TraceRows rows = model.decode(enc.get(), cache, tokens, fo);
    model.commitCache(cache, tokens);
    const float* last = rows.logits.row(0, rows.logits.positions() - 1);  // kept: the last
    return std::vector<float>(last, last + rows.logits.vocab());
  };
  auto hypothesis = [&](int node) {
    std::vector<int> ids = prefix;
    const std::vector<int> p = r.path(node);
    ids.insert(ids.end(), p.begin(), p.end());
    return ids;
  };

  std::vector<Live> live(1);
  live[0].cache = model.newDecoderCache(limit);
  live[0].logits = feed(*live[0].cache, prefix);
  int slots = o.width;
  while (slots > 0 && !live.empty()) {
    checkCancel(o.cancel);
    std::vector<Candidate> cands;
    for (size_t h = 0; h < live.size(); ++h) {
      const std::vector<float>& l = live[h].logits;
      const std::vector<double> lp = logSoftmax(l.data(), (int)l.size());
      const double base = r.nodes[size_t(live[h].node)].score;
      for (size_t v = 0; v < lp.size(); ++v) cands.push_back({base + lp[v], (int)h, (int)v, lp[v]});
    }
    const size_t keep = std::min(cands.size(), size_t(slots));
    const size_t shown = std::min(cands.size(), keep + size_t(std::max(0, o.pruned_shown)));
    std::partial_sort(cands.begin(), cands.begin() + shown, cands.end(),
                      [](const Candidate& a, const Candidate& b) {
                        if (a.score != b.score) return a.score > b.score;
                        if (a.live != b.live) return a.live < b.live;
                        return a.token < b.token;
                      });
    std::vector<Live> next;
    // How many kept children each live hypothesis has: the last one takes its cache over.
    auto ends = [&](const Candidate& cd) {
      const int step = r.nodes[size_t(live[size_t(cd.live)].node)].step + 1;
      return cd.token == c.eos_id || prefix_len + step - 1 >= limit;
    };
    std::vector<int> children(live.size(), 0);
    for (size_t k = 0; k < keep; ++k) children[size_t(cands[k].live)] += !ends(cands[k]);
    for (size_t k = 0; k < shown; ++k) {
      const Candidate& cd = cands[k];
      BeamNode n;
      n.parent = live[size_t(cd.live)].node;
      n.step = r.nodes[size_t(n.parent)].step + 1;
      n.token = cd.token;
      n.log_prob = cd.log_prob;
      n.score = cd.score;
      const int fed = prefix_len + n.step - 1;  // positions fed before this choice
      if (k >= keep) {
        n.state = BeamNode::State::Pruned;
      } else if (n.token == c.eos_id) {
        n.state = BeamNode::State::Finished;
      } else if (fed >= limit) {
        n.state = BeamNode::State::Cut;
      } else {
        n.state = BeamNode::State::Expanded;
      }
      if (n.state == BeamNode::State::Finished || n.state == BeamNode::State::Cut) {
        n.ranked = n.score / std::pow(double(n.step), double(o.length_penalty));
        --slots;
      }
      const int id = (int)r.nodes.size();
      r.nodes.push_back(n);
      if (n.state == BeamNode::State::Finished || n.state == BeamNode::State::Cut)
        r.final.push_back(id);
      if (n.state != BeamNode::State::Expanded) continue;
      Live& parent = live[size_t(cd.live)];
      Live child;
      child.node = id;
      if (!use_cache) {
        child.cache = model.newDecoderCache(limit);
        child.logits = feed(*child.cache, hypothesis(id));
      } else {
        child.cache = --children[size_t(cd.live)] == 0 ? std::move(parent.cache)
                                                       : model.cloneCache(*parent.cache);
        child.logits = feed(*child.cache, {n.token});
      }
      next.push_back(std::move(child));
    }
    // Pruned candidates of a parent whose cache moved on are fine: they are never expanded.
    live = std::move(next);
  }
  std::stable_sort(r.final.begin(), r.final.end(), [&](int a, int b) {
    return r.nodes[size_t(a)].ranked > r.nodes[size_t(b)].ranked;
  });
  for (size_t k = 0; k < r.final.size(); ++k) r.nodes[size_t(r.final[k])].rank = (int)k;
  return r;
}

}  // namespace attnviz

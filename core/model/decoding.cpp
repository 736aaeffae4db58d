#include "model/decoding.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "base/error.h"
#include "model/runs.h"

namespace attnviz {

namespace {
double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int defaultMaxNewTokens(int src_len) {
  return src_len > 0 ? src_len + kExtraTokensOverSource : kDefaultContinuationTokens;
}

int tutorialMaxNewTokens(const ModelConfig& config, int src_len) {
  return config.hasCross() && src_len > 0 ? src_len + config.spec().decode.extra_over_source
                                          : defaultMaxNewTokens(src_len);
}

int decodeLimit(const Model& model, int prefix_len, int max_new_tokens) {
  const int wanted = std::max(1, max_new_tokens);
  // The last chosen id is never fed, so prefix_len + wanted - 1 positions give `wanted` ids.
  const int64_t positions = (int64_t)prefix_len + wanted - 1;
  return (int)std::max<int64_t>(prefix_len, std::min<int64_t>(positions, model.maxPositions()));
}

std::vector<int> startPrefix(const Model& model) {
  const ModelConfig& c = model.config();
  if (c.bos_id < 0)
    throw Error(ErrorKind::BadInput, std::string(modelClassName(c.model)) +
                                         " has no start token: give a prompt to continue");
  return {c.bos_id};
}

DecodingSession::DecodingSession(const Model& model, std::vector<int> src, std::vector<int> prefix,
                                 Options options)
    : model_(model), src_(std::move(src)), options_(options) {
  const ModelConfig& c = model.config();
  if (!c.hasDecoder())
    throw Error(ErrorKind::BadInput, std::string(modelClassName(c.model)) +
                                         " has no decoder: there is nothing to decode");
  if (prefix.empty()) prefix = startPrefix(model);
  if ((int)prefix.size() > model.maxPositions())
    throw Error(ErrorKind::BadInput, "the prefix has " + std::to_string(prefix.size()) +
                                         " tokens; this model takes at most " +
                                         std::to_string(model.maxPositions()) +
                                         model.limitReason());
  prefix_len_ = (int)prefix.size();
  const int wanted =
      options_.max_new_tokens > 0 ? options_.max_new_tokens : defaultMaxNewTokens((int)src_.size());
  limit_ = decodeLimit(model, prefix_len_, wanted);
  limited_by_model_ = (int64_t)prefix_len_ + std::max(wanted, 1) - 1 > model.maxPositions();
  use_cache_ = options_.masks.subsequent;
  const auto t0 = std::chrono::steady_clock::now();
  const ForwardOptions o = forwardOptions();
  if (c.hasCross()) enc_ = model.encode(src_, {}, o, &trace_);
  trace_.batch = 1;
  trace_.backend = model.backend().name();
  cache_ = model.newDecoderCache(limit_);
  Step s;
  s.runs = true;
  s.rows = model.decode(enc_.get(), *cache_, prefix, o);
  s.elapsed_ms = msSince(t0);
  applyStep(std::move(s));
}

DecodingSession::~DecodingSession() = default;

ForwardOptions DecodingSession::forwardOptions() const {
  ForwardOptions o;
  o.masks = options_.masks;
  o.record = options_.record;
  o.keep_qkv = options_.keep_qkv;
  o.interventions = options_.interventions;
  o.max_trace_bytes = options_.max_trace_bytes;
  o.cancel = options_.cancel;
  return o;
}

std::vector<int> DecodingSession::targetIds() const {
  return trace_.tgt_ids.empty() ? std::vector<int>() : trace_.tgt_ids[0];
}

bool DecodingSession::finished() const {
  return choice_ >= 0 && (choice_ == model_.config().eos_id || length() >= limit_);
}

DecodeStop DecodingSession::stopReason() const {
  if (!finished()) return DecodeStop::NotYet;
  if (choice_ == model_.config().eos_id) return DecodeStop::EndToken;
  return limited_by_model_ ? DecodeStop::ModelPositions : DecodeStop::NewTokens;
}

std::vector<int> DecodingSession::generated() const {
  std::vector<int> ids = targetIds();
  ids.erase(ids.begin(), ids.begin() + std::min<size_t>(prefix_len_, ids.size()));
  if (choice_ >= 0) ids.push_back(choice_);
  return ids;
}

const float* DecodingSession::lastLogits() const {
  return trace_.logits.row(0, length() - 1);  // the last row is kept (stepBack)
}

int DecodingSession::vocabSize() const {
  return trace_.logits.vocab();
}

int DecodingSession::argmax() const {
  const float* l = lastLogits();
  return (int)(std::max_element(l, l + vocabSize()) - l);
}

std::vector<std::pair<int, float>> DecodingSession::topK(int k) const {
  return topTokens(lastLogits(), vocabSize(), k);
}

std::vector<std::pair<int, float>> topTokens(const float* logits, int V, int k) {
  std::vector<std::pair<int, float>> out;
  const float mx = *std::max_element(logits, logits + V);
  double sum = 0;
  for (int i = 0; i < V; ++i) sum += std::exp((double)logits[i] - mx);
  std::vector<int> idx(V);
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, V);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int a, int b) { return logits[a] > logits[b]; });
  for (int i = 0; i < k; ++i)
    out.emplace_back(idx[i], (float)(std::exp((double)logits[idx[i]] - mx) / sum));
  return out;
}

DecodingSession::Step DecodingSession::computeStep(int token) const {
  if (finished())
    throw Error(ErrorKind::BadInput, choice_ == model_.config().eos_id
                                         ? std::string("decoding has finished (end token chosen)")
                                         : "the target reached the maximum length of " +
                                               std::to_string(limit_) + " tokens");
  if (choice_ >= 0)
    throw Error(ErrorKind::BadInput, "a token was already chosen after the last position");
  Step s;
  s.token = token < 0 ? argmax() : token;
  if (s.token >= vocabSize())
    throw Error(ErrorKind::BadInput,
                "token id " + std::to_string(s.token) + " is outside the target vocabulary");
  if (s.token == model_.config().eos_id || length() >= limit_) return s;  // ends decoding
  const int next = length() + 1;
  // Greedy decoding (no trace) is not held to the limit, and reads no memory figures.
  std::string why;
  const uint64_t bytes =
      options_.record ? model_.estimatePassBytes(1, (int)src_.size(), next, forwardOptions()) : 0;
  if (options_.record && bytes > passMemoryLimit(options_.max_trace_bytes, &why))
    throw Error(ErrorKind::TooLarge, "a trace of " + std::to_string(next) +
                                         " target positions would need " + formatBytes(bytes) +
                                         "; " + why);
  s.runs = true;
  const auto t0 = std::chrono::steady_clock::now();
  if (use_cache_) {
    s.rows = model_.decode(enc_.get(), *cache_, {s.token}, forwardOptions());
  } else {
    // Positions see later ones (look-ahead mask off): every row changes; rerun the decoder.
    std::vector<int> all = targetIds();
    all.push_back(s.token);
    s.fresh_cache = model_.newDecoderCache(limit_);
    s.rows = model_.decode(enc_.get(), *s.fresh_cache, all, forwardOptions());
  }
  s.elapsed_ms = msSince(t0);
  return s;
}

DecodingSession::Step DecodingSession::computeRerun(int n) const {
  Step s;
  s.runs = true;
  std::vector<int> all = targetIds();
  all.resize(std::min<size_t>(all.size(), (size_t)std::max(n, 1)));
  const auto t0 = std::chrono::steady_clock::now();
  s.fresh_cache = model_.newDecoderCache(limit_);
  s.rows = model_.decode(enc_.get(), *s.fresh_cache, all, forwardOptions());
  s.elapsed_ms = msSince(t0);
  return s;
}

void DecodingSession::applyStep(Step&& s) {
  if (!s.runs) {
    choice_ = s.token;
    return;
  }
  std::vector<int> tokens = s.rows.tokens;
  if (s.fresh_cache) cache_ = std::move(s.fresh_cache);
  model_.commitCache(*cache_, tokens);
  trace_.appendRows(std::move(s.rows), model_.tgtVocab().decode(tokens));
  trace_.elapsed_ms += s.elapsed_ms;
  choice_ = -1;
}

int DecodingSession::stepForward(int token) {
  Step s = computeStep(token);
  const int chosen = s.token;
  applyStep(std::move(s));
  return chosen;
}

bool DecodingSession::stepBack() {
  if (choice_ >= 0) {  // undo the last choice first (e.g. the end token)
    choice_ = -1;
    return true;
  }
  if (length() <= prefix_len_) return false;
  if (use_cache_) {
    model_.truncateCache(*cache_, length() - 1);
    trace_.truncateTarget(length() - 1);
    // A long run keeps whole logits rows at its last position only (TokenLogits).
    const int last = length() - 1;
    if (!trace_.logits.empty() && !trace_.logits.kept(0, last))
      trace_.logits.keepRow(0, last, logitsRow(model_, trace_, 0, last).data());
  } else {
    applyStep(computeRerun(length() - 1));
  }
  return true;
}

std::vector<int> DecodingSession::runToEnd() {
  while (!finished()) stepForward();
  return generated();
}

namespace {
// A greedy decode without a trace, run to its end.
std::unique_ptr<DecodingSession> greedySession(const Model& model, const std::vector<int>& src,
                                               int max_new_tokens, std::vector<int> prefix) {
  DecodingSession::Options o;
  o.max_new_tokens = max_new_tokens;
  o.record = false;
  auto s = std::make_unique<DecodingSession>(model, src, std::move(prefix), o);
  s->runToEnd();
  return s;
}
}  // namespace

std::vector<int> greedyDecode(const Model& model, const std::vector<int>& src, int max_new_tokens,
                              std::vector<int> prefix) {
  return greedySession(model, src, max_new_tokens, std::move(prefix))->generated();
}

std::vector<int> greedyTarget(const Model& model, const std::vector<int>& src, int max_new_tokens,
                              std::vector<int> prefix) {
  return greedySession(model, src, max_new_tokens, std::move(prefix))->targetIds();
}

}  // namespace attnviz

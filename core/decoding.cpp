#include "decoding.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "error.h"

namespace attnviz {

DecodingSession::DecodingSession(const Model& model, std::vector<int> src, MaskOptions masks,
                                 int max_len)
    : model_(model), src_(std::move(src)), masks_(masks) {
  const int limit = model.config().max_len;
  max_len_ = max_len > 0 ? std::min(max_len, limit) : std::min(limit, 256);
  use_cache_ = masks_.subsequent;
  enc_ = model_.encode(src_, masks_, &enc_trace_, true);
  cache_ = model_.newDecoderCache(*enc_, max_len_);
  max_len_ = std::min(max_len_, cache_->capacity);
  runPosition(model_.config().bos_id);
}

DecodingSession::~DecodingSession() = default;

std::vector<int> DecodingSession::targetIds() const {
  std::vector<int> ids;
  for (const auto& s : steps_) ids.push_back(s.input_token);
  return ids;
}

std::vector<int> DecodingSession::generated() const {
  std::vector<int> ids;
  for (size_t i = 1; i < steps_.size(); ++i) ids.push_back(steps_[i].input_token);
  if (!steps_.empty() && steps_.back().chosen == model_.config().eos_id)
    ids.push_back(steps_.back().chosen);
  return ids;
}

void DecodingSession::runPosition(int token) {
  Step s;
  s.input_token = token;
  if (use_cache_) {
    s.rows = model_.decodeStep(*enc_, *cache_, token, masks_);
  } else {
    // Without the subsequent mask a position sees later ones, which do not exist yet while
    // decoding: rerun the decoder over the whole prefix and keep its last row.
    std::vector<int> tgt = targetIds();
    tgt.push_back(token);
    ForwardOptions o;
    o.masks = masks_;
    Trace t = model_.forward({src_}, {tgt}, o);
    const int T = t.tgt_len, S = t.src_len, L = t.dec_self.layers, H = t.dec_self.heads;
    const int i = T - 1;
    for (int l = 0; l < L; ++l)
      for (int h = 0; h < H; ++h) {
        for (int j = 0; j < T; ++j) {
          s.rows.self_scores.push_back(t.dec_self.score(0, l, h, i, j));
          s.rows.self_probs.push_back(t.dec_self.prob(0, l, h, i, j));
        }
        for (int j = 0; j < S; ++j) {
          s.rows.cross_scores.push_back(t.cross.score(0, l, h, i, j));
          s.rows.cross_probs.push_back(t.cross.prob(0, l, h, i, j));
        }
      }
    for (int j = 0; j < T; ++j) s.rows.self_mask.push_back(t.dec_self.masked(0, i, j));
    for (int j = 0; j < S; ++j) s.rows.cross_mask.push_back(t.cross.masked(0, i, j));
    const int V = (int)t.logits.dim(2);
    s.rows.logits.assign(t.logits.data.begin() + (int64_t)i * V,
                         t.logits.data.begin() + (int64_t)(i + 1) * V);
  }
  steps_.push_back(std::move(s));
}

bool DecodingSession::finished() const {
  if (steps_.empty()) return false;
  return steps_.back().chosen == model_.config().eos_id || length() >= max_len_;
}

int DecodingSession::stepForward(int token) {
  if (finished())
    throw Error(ErrorKind::BadInput, length() >= max_len_
                                         ? "the target reached the maximum length of " +
                                               std::to_string(max_len_) + " tokens"
                                         : std::string("decoding has finished (end token chosen)"));
  Step& last = steps_.back();
  const auto& logits = last.rows.logits;
  if (token < 0) token = (int)(std::max_element(logits.begin(), logits.end()) - logits.begin());
  if (token >= (int)logits.size())
    throw Error(ErrorKind::BadInput,
                "token id " + std::to_string(token) + " is outside the target vocabulary");
  last.chosen = token;
  if (token == model_.config().eos_id) return token;  // EOS ends decoding; no new position
  if (length() >= max_len_) return token;
  runPosition(token);
  return token;
}

bool DecodingSession::stepBack() {
  if (steps_.empty()) return false;
  if (steps_.back().chosen >= 0) {  // undo the last choice first (e.g. EOS)
    steps_.back().chosen = -1;
    return true;
  }
  if (steps_.size() <= 1) return false;
  steps_.pop_back();
  if (use_cache_) model_.popDecoderCache(*cache_);
  steps_.back().chosen = -1;
  return true;
}

std::vector<int> DecodingSession::runToEnd() {
  while (!finished()) stepForward();
  return generated();
}

std::vector<std::pair<int, float>> DecodingSession::topK(int k) const {
  std::vector<std::pair<int, float>> out;
  if (steps_.empty()) return out;
  const auto& logits = steps_.back().rows.logits;
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float v : logits) sum += std::exp((double)v - mx);
  std::vector<int> idx(logits.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min<int>(k, (int)idx.size());
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int a, int b) { return logits[a] > logits[b]; });
  for (int i = 0; i < k; ++i)
    out.emplace_back(idx[i], (float)(std::exp((double)logits[idx[i]] - mx) / sum));
  return out;
}

Trace DecodingSession::fullTrace(const ForwardOptions& options) const {
  ForwardOptions o = options;
  o.masks = masks_;
  return model_.forward({src_}, {targetIds()}, o);
}

}  // namespace attnviz

#include "train/attribution.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

#include "base/atomic_file.h"
#include "base/error.h"
#include "io/npy.h"
#include "model/arena.h"
#include "model/device_weights.h"
#include "model/head_stats.h"
#include "model/lens.h"
#include "model/runs.h"
#include "model/trace_dump.h"
#include "train/backward.h"
#include "train/workspace.h"

namespace attnviz {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// 1-based ranks of x, ties sharing their mean rank.
std::vector<double> ranks(const std::vector<double>& x) {
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
    const double mean = (double)(i + j) / 2.0 + 1.0;
    for (size_t k = i; k <= j; ++k) r[order[k]] = mean;
    i = j + 1;
  }
  return r;
}

void checkRange(int value, int lo, int hi, const std::string& what) {
  if (value < lo || value > hi)
    throw Error(ErrorKind::BadInput, what + " " + std::to_string(value) + " is out of range (" +
                                         std::to_string(lo) + " to " + std::to_string(hi) + ")");
}

using Batch = std::vector<std::vector<int>>;

// B copies of one sentence.
Batch repeated(const std::vector<int>& ids, int B) {
  return Batch((size_t)B, ids);
}

// The sum of the pass's gradients over the batch's steps, and what the input and baseline gave.
struct PathSums {
  std::vector<double> ig[2];       // [side][n·d] Σ_k ∂f/∂e at α_k e
  std::vector<float> gradient[2];  // [side][n·d] at α = 1
  std::vector<float> input[2];     // [side][n·d] e
  double f_input = 0, f_baseline = 0;
};

// Runs the α values of `alphas` (the step's sentences, all copies of one) through the pass with the
// tape and back from f; adds each step's gradient into sums (steps: the α values that are steps of
// the sum), keeps f and the gradient of α = 1 and f of α = 0.
class PathRunner {
 public:
  PathRunner(const Model& m, const std::vector<int>& src, const std::vector<int>& segs,
             const std::vector<int>& tgt, int position, int token, int versus,
             const std::atomic<bool>* cancel)
      : m_(m),
        c_(m.config()),
        dw_(m.deviceWeights()),
        src_(src),
        segs_(segs),
        tgt_(tgt),
        position_(position),
        token_(token),
        versus_(versus) {
    o_.record = false;
    o_.cancel = cancel;
  }

  // One batch: sentence b walks at alphas[b]; is_step[b]: its gradient enters the sum.
  void run(const std::vector<float>& alphas, const std::vector<bool>& is_step, PathSums& sums) {
    Backend& be = m_.backend();
    const int B = (int)alphas.size(), d = c_.d_model;
    const int S = c_.hasEncoder() ? (int)src_.size() : 0;
    const int T = c_.hasDecoder() ? (int)tgt_.size() : 0;
    m_.checkPassSize(B, S, T, o_);
    const int n_out = c_.hasDecoder() ? T : S;
    const int64_t rows = (int64_t)B * n_out;
    const int V = dw_.head.projection.out;
    sizeWorkspace(be, c_, dw_, B, S, T, 0.0, workspace_);
    Tape tape;
    GradScratch g;
    LossRegions l;
    Arena a(be, *workspace_);
    carveStep(a, c_, dw_, B, S, T, tape, g, l);
    tape.workspace = &a;
    tape.scratch = &scratch_;
    tape.enc.token_scale = alphas;
    tape.dec.token_scale = alphas;

    // Forward, as the training step runs it, each sentence at its α.
    Model::Encoded enc;
    const std::vector<std::vector<int>> src = c_.hasEncoder() ? repeated(src_, B) : Batch();
    const std::vector<std::vector<int>> segments = segs_.empty() ? Batch() : repeated(segs_, B);
    const std::vector<std::vector<int>> tgt = c_.hasDecoder() ? repeated(tgt_, B) : Batch();
    const float* out_x = forwardWithTape(be, c_, dw_, src, segments, tgt, o_, tape, enc);

    // f of each sentence, and its gradient: 1 at logit[token] (−1 at logit[versus]).
    be.zero(l.dlogits, rows * V);
    for (int b = 0; b < B; ++b) {
      const int64_t row = ((int64_t)b * n_out + position_) * V;
      float f = 0, fv = 0;
      a.get(tape.head.logits + row + token_, &f, sizeof f);
      a.put(l.dlogits + row + token_, std::vector<float>{1.0f});
      if (versus_ >= 0) {
        a.get(tape.head.logits + row + versus_, &fv, sizeof fv);
        a.put(l.dlogits + row + versus_, std::vector<float>{-1.0f});
      }
      if (alphas[(size_t)b] == 1.0f) sums.f_input = (double)f - fv;
      if (alphas[(size_t)b] == 0.0f) sums.f_baseline = (double)f - fv;
    }
    be.zero(l.dout, rows * d);
    Backward bw(be, c_, dw_, {dw_.params->f32(), nullptr}, g);  // no parameter gradients
    bw.tokenHead(tape.head, out_x, l.dlogits, l.dout, (int)rows);

    // Backward to each stack's embeddings: the decoder, its cross-attention's share of the
    // encoder's output, the encoder.
    if (c_.hasEncoder()) {
      if (c_.hasDecoder())
        be.zero(l.dmemory, (int64_t)B * S * d);
      else
        be.copy(l.dout, l.dmemory, rows * d);
    }
    int side = 0;
    if (c_.hasEncoder()) ++side;  // the source is side 0
    if (c_.hasDecoder()) {
      bw.layers(l.dout, dw_.dec, tape.dec, c_.hasEncoder() ? &enc : nullptr, 0.0f, l.dmemory);
      bw.embedSum(dw_.dec, tape.dec, l.dout, 0.0f);
      collect(l.dout, tape.dec, dw_.dec, T, alphas, is_step, sums, side);
    }
    if (c_.hasEncoder()) {
      bw.layers(l.dmemory, dw_.enc, tape.enc, nullptr, 0.0f, nullptr);
      bw.embedSum(dw_.enc, tape.enc, l.dmemory, 0.0f);
      collect(l.dmemory, tape.enc, dw_.enc, S, alphas, is_step, sums, 0);
    }
    be.synchronize();
  }

 private:
  // The gradients dx [B, n, d] of one stack's token rows into the sums of side `side`; the input
  // e of that side once.
  void collect(const float* dx, const StackTape& t, const DeviceStack& st, int n,
               const std::vector<float>& alphas, const std::vector<bool>& is_step, PathSums& sums,
               int side) {
    Backend& be = m_.backend();
    const int d = c_.d_model;
    const int64_t per = (int64_t)n * d;
    std::vector<float> host((size_t)alphas.size() * per);
    be.copy_to_host(dx, host.data(), (int64_t)host.size());
    std::vector<double>& ig = sums.ig[side];
    if (ig.empty()) ig.assign((size_t)per, 0.0);
    for (size_t b = 0; b < alphas.size(); ++b) {
      const float* gb = host.data() + b * per;
      if (is_step[b])
        for (int64_t k = 0; k < per; ++k) ig[(size_t)k] += gb[k];
      if (alphas[b] == 1.0f) sums.gradient[side].assign(gb, gb + per);
    }
    if (sums.input[side].empty()) {
      // e = tokens[ids]·scale of the first sentence (every sentence holds the same ids).
      const float scale = c_.embed_scale ? std::sqrt((float)d) : 1.0f;
      BufferPtr e = be.allocate((size_t)per * sizeof(float));
      be.embedding_forward(t.ids, st.tokens, nullptr, e->f32(), 1, n, d, 0, scale);
      sums.input[side].resize((size_t)per);
      be.copy_to_host(e->f32(), sums.input[side].data(), per);
    }
  }

  const Model& m_;
  const ModelConfig& c_;
  const DeviceWeights& dw_;
  const std::vector<int>& src_;
  const std::vector<int>& segs_;
  const std::vector<int>& tgt_;
  const int position_, token_, versus_;
  ForwardOptions o_;
  BufferPtr workspace_;  // the tape, the backward's scratch and the seeds, reused by batches
  BufferPtr scratch_;    // the forward runs' own scratch
};

// Row `position` of the chosen head (or the heads' mean) of block (kind, layer): [keys].
std::vector<float> attentionRow(const Trace& t, AttentionKind kind, int layer, int head,
                                int position, int keys) {
  const AttentionBlock* block = t.block(kind, layer);
  if (!block) throw Error(ErrorKind::BadInput, "the pass kept no attention for that layer");
  std::vector<float> row((size_t)keys, 0.0f);
  const int h0 = head < 0 ? 0 : head, h1 = head < 0 ? block->heads : head + 1;
  std::vector<float> p((size_t)keys);
  for (int h = h0; h < h1; ++h) {
    block->probTile(0, h, position, position + 1, 0, keys, p.data());
    for (int j = 0; j < keys; ++j) row[(size_t)j] += p[(size_t)j];
  }
  if (head < 0)
    for (float& v : row) v /= (float)block->heads;
  return row;
}

std::string blockName(AttentionKind kind, int layer, int head) {
  return "layer " + std::to_string(layer + 1) +
         (kind == AttentionKind::Cross ? " cross-attention" : " self-attention") +
         (head < 0 ? " (mean of heads)" : " head " + std::to_string(head + 1));
}

double spearmanOf(const std::vector<float>& integrated, const std::vector<float>& other,
                  int compared) {
  std::vector<double> x, y;
  for (int i = 0; i < compared; ++i) {
    x.push_back(std::abs((double)integrated[(size_t)i]));
    y.push_back(other[(size_t)i]);
  }
  return spearman(x, y);
}

}  // namespace

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return kNaN;
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  const double n = (double)x.size(), mean = (n + 1) / 2;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  if (sxx == 0 || syy == 0) return kNaN;
  return sxy / std::sqrt(sxx * syy);
}

Attribution attribute(const Model& m, const Inputs& inputs, const AttributionOptions& o) {
  const ModelConfig& c = m.config();
  if (c.tokenHead() == TokenHead::None)
    throw Error(ErrorKind::BadInput,
                "the model has no token head: there is no token logit to attribute");
  const int batch = (int)m.checkInputs(inputs);
  checkRange(o.sentence, 0, batch - 1, "sentence");
  checkRange(o.steps, 1, AttributionOptions::kMaxSteps, "integrated gradients' step count");
  if (o.batch < 0)
    throw Error(ErrorKind::BadInput, "sentences per pass must be 0 (automatic) or more");

  // The one sentence, unpadded.
  Inputs one;
  const auto pick = [&](const std::vector<std::vector<int>>& v) {
    std::vector<std::vector<int>> out;
    if (!v.empty()) out.push_back(v[(size_t)o.sentence]);
    return out;
  };
  one.src = pick(inputs.src);
  one.tgt = pick(inputs.tgt);
  if ((int)inputs.segments.size() > o.sentence)
    one.segments = {inputs.segments[(size_t)o.sentence]};
  const std::vector<int> src = one.src.empty() ? std::vector<int>() : one.src[0];
  const std::vector<int> tgt = one.tgt.empty() ? std::vector<int>() : one.tgt[0];
  std::vector<int> segs = one.segments.empty() ? std::vector<int>() : one.segments[0];
  if (!segs.empty()) segs.resize(src.size(), 0);
  if ((c.hasEncoder() && src.empty()) || (c.hasDecoder() && tgt.empty()))
    throw Error(ErrorKind::BadInput, "the sentence is empty: there is no token to attribute");

  // The plain pass: the logits (the default token, f(e) as the model computes it), the attention
  // and rollout, the token labels.
  ForwardOptions fo;
  fo.cancel = o.cancel;
  const Trace trace = m.forward(one, fo);
  const Side out_side = lensStack(c);
  const int n_out = out_side == Side::Source ? trace.src_len : trace.tgt_len;
  const int V = trace.logits.vocab();

  Attribution r;
  r.steps = o.steps;
  r.position = o.position < 0 ? n_out - 1 : o.position;
  checkRange(r.position, 0, n_out - 1, "position");
  const std::vector<float> row = logitsRow(m, trace, 0, r.position);
  const float* logits = row.data();
  r.token = o.token < 0 ? (int)(std::max_element(logits, logits + V) - logits) : o.token;
  checkRange(r.token, 0, V - 1, "token");
  if (o.versus < -1) throw Error(ErrorKind::BadInput, "versus must be a token id or −1 (none)");
  if (o.versus >= 0) checkRange(o.versus, 0, V - 1, "versus token");
  r.versus = o.versus;
  const int layers = out_side == Side::Source ? c.n_encoder_layers : c.n_decoder_layers;
  r.layer = o.layer < 0 ? layers - 1 : o.layer;
  checkRange(r.layer, 0, layers - 1, "layer (counted from 0)");
  if (o.head < -1) throw Error(ErrorKind::BadInput, "head must be a head or −1 (their mean)");
  if (o.head >= 0) checkRange(o.head, 0, c.n_heads - 1, "head (counted from 0)");
  r.head = o.head;
  r.baseline = "every token embedding row zero (positions and segments kept)";
  r.rule = "midpoint Riemann sum: the gradient at α = (k + ½)/N, k = 0 … N−1, N = " +
           std::to_string(o.steps);

  // The path: N midpoint steps, then the input (α = 1) and the baseline (α = 0), in batches.
  std::vector<float> alphas;
  for (int k = 0; k < o.steps; ++k) alphas.push_back(((float)k + 0.5f) / (float)o.steps);
  const int n_steps = (int)alphas.size();
  alphas.push_back(1.0f);
  alphas.push_back(0.0f);
  const int rows_per = std::max(trace.src_len, trace.tgt_len);
  const int per_batch = o.batch > 0 ? o.batch : std::max(1, 512 / std::max(1, rows_per));
  PathRunner runner(m, src, segs, tgt, r.position, r.token, r.versus, o.cancel);
  PathSums sums;
  for (size_t b0 = 0; b0 < alphas.size(); b0 += (size_t)per_batch) {
    const size_t b1 = std::min(alphas.size(), b0 + (size_t)per_batch);
    const std::vector<float> chunk(alphas.begin() + (long)b0, alphas.begin() + (long)b1);
    std::vector<bool> is_step;
    for (size_t b = b0; b < b1; ++b) is_step.push_back((int)b < n_steps);
    runner.run(chunk, is_step, sums);
    if (o.progress) o.progress(std::min((int)b1, n_steps), n_steps);
  }
  r.f_input = sums.f_input;
  r.f_baseline = sums.f_baseline;

  // Per token: saliency, integrated gradients, the attention and rollout beside them.
  const int d = c.d_model;
  const std::vector<Side> sides = c.hasEncoder() && c.hasDecoder()
                                      ? std::vector<Side>{Side::Source, Side::Target}
                                      : std::vector<Side>{out_side};
  const int last = layers - 1;
  for (size_t s = 0; s < sides.size(); ++s) {
    TokenAttributions ta;
    ta.side = sides[s];
    ta.ids = sides[s] == Side::Source ? src : tgt;
    ta.tokens = sides[s] == Side::Source ? trace.src_tokens[0] : trace.tgt_tokens[0];
    const int n = (int)ta.ids.size();
    ta.gradient = std::move(sums.gradient[s]);
    ta.input = std::move(sums.input[s]);
    for (int i = 0; i < n; ++i) {
      double sal = 0, norm = 0, ig = 0;
      for (int k = 0; k < d; ++k) {
        const size_t at = (size_t)i * d + k;
        const double e = ta.input[at], gx = (double)ta.gradient[at] * e;
        sal += gx;
        norm += gx * gx;
        ig += e * sums.ig[s][at] / (double)o.steps;
      }
      ta.saliency.push_back((float)sal);
      ta.saliency_norm.push_back((float)std::sqrt(norm));
      ta.integrated.push_back((float)ig);
      r.ig_total += ig;
    }
    // The attention of the output stack's position over this side's tokens.
    const bool cross = sides[s] == Side::Source && out_side == Side::Target;
    const AttentionKind kind = cross ? AttentionKind::Cross
                                     : (out_side == Side::Source ? AttentionKind::EncoderSelf
                                                                 : AttentionKind::DecoderSelf);
    ta.compared = kind == AttentionKind::DecoderSelf ? r.position + 1 : n;
    ta.attention = attentionRow(trace, kind, r.layer, r.head, r.position, n);
    ta.attention_name = blockName(kind, r.layer, r.head);
    std::vector<float> roll;
    if (cross) {
      const std::vector<float> cr = crossRollout(trace, last, 0);  // [T, S]
      ta.rollout.assign(cr.begin() + (long)r.position * n, cr.begin() + (long)(r.position + 1) * n);
      ta.rollout_name = "layer " + std::to_string(last + 1) +
                        " cross-attention (mean of heads) through the encoder's rollout";
    } else {
      const std::vector<float> ro = attentionRollout(trace, kind, last, 0);  // [n, n]
      ta.rollout.assign(ro.begin() + (long)r.position * n, ro.begin() + (long)(r.position + 1) * n);
      ta.rollout_name = std::string("rollout of the ") +
                        (kind == AttentionKind::EncoderSelf ? "encoder" : "decoder") +
                        "'s self-attention, layers 1 to " + std::to_string(last + 1);
    }
    ta.spearman_attention = spearmanOf(ta.integrated, ta.attention, ta.compared);
    ta.spearman_rollout = spearmanOf(ta.integrated, ta.rollout, ta.compared);
    r.sides.push_back(std::move(ta));
  }
  const double delta = r.f_input - r.f_baseline;
  r.gap = std::abs(r.ig_total - delta);
  r.gap_relative = delta != 0 ? r.gap / std::abs(delta) : std::numeric_limits<double>::infinity();
  return r;
}

void dumpAttribution(const Attribution& a, const std::vector<std::string>& out_tokens,
                     const std::string& dir) {
  try {
    makeFolder(dir);
    AtomicFileSet files;
    auto npy = [&](const std::string& name, const std::vector<float>& v, const Shape& shape) {
      AtomicFile& f = files.add(dir + "/" + name);
      f.write(npyPreamble("<f4", shape));
      f.write(v.data(), v.size() * sizeof(float));
    };
    // NaN (no correlation) as null: JSON has no NaN.
    auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
    nlohmann::json j;
    j["position"] = a.position;
    j["token"] = a.token;
    j["token_string"] = out_tokens.at(0);
    if (a.versus >= 0) {
      j["versus"] = a.versus;
      j["versus_string"] = out_tokens.at(1);
    }
    j["f_input"] = a.f_input;
    j["f_baseline"] = a.f_baseline;
    j["sum_of_integrated_gradients"] = a.ig_total;
    j["completeness_gap"] = a.gap;
    j["completeness_gap_relative"] = number(a.gap_relative);
    j["steps"] = a.steps;
    j["baseline"] = a.baseline;
    j["rule"] = a.rule;
    j["layer"] = a.layer;
    j["head"] = a.head;
    for (const TokenAttributions& s : a.sides) {
      const std::string side = s.side == Side::Source ? "src" : "tgt";
      const int n = (int)s.ids.size(), d = n ? (int)(s.gradient.size() / (size_t)n) : 0;
      npy(side + "_saliency.npy", s.saliency, {n});
      npy(side + "_saliency_norm.npy", s.saliency_norm, {n});
      npy(side + "_integrated.npy", s.integrated, {n});
      npy(side + "_attention.npy", s.attention, {n});
      npy(side + "_rollout.npy", s.rollout, {n});
      npy(side + "_gradient.npy", s.gradient, {n, d});
      j["sides"].push_back({{"side", side},
                            {"tokens", s.tokens},
                            {"ids", s.ids},
                            {"compared", s.compared},
                            {"saliency", s.saliency},
                            {"saliency_norm", s.saliency_norm},
                            {"integrated", s.integrated},
                            {"attention", s.attention},
                            {"attention_name", s.attention_name},
                            {"rollout", s.rollout},
                            {"rollout_name", s.rollout_name},
                            {"spearman_attention", number(s.spearman_attention)},
                            {"spearman_rollout", number(s.spearman_rollout)}});
    }
    files.add(dir + "/attribution.json").write(jsonText(j));
    files.commitAll();
  } catch (const Error& e) {
    throw Error(e.kind(), "the attribution was not written to " + dir + ": " + e.what());
  }
}

std::string attributionCsv(const Attribution& a) {
  std::string csv = csvLine({"side", "position", "token", "id", "compared", "saliency",
                             "saliency_norm", "integrated_gradients", "attention", "rollout"});
  for (const TokenAttributions& s : a.sides)
    for (size_t i = 0; i < s.ids.size(); ++i)
      csv +=
          csvLine({s.side == Side::Source ? "source" : "target", std::to_string(i + 1),
                   csvField(s.tokens[i]), std::to_string(s.ids[i]), (int)i < s.compared ? "1" : "0",
                   csvNumber(s.saliency[i]), csvNumber(s.saliency_norm[i]),
                   csvNumber(s.integrated[i]), csvNumber(s.attention[i]), csvNumber(s.rollout[i])});
  return csv;
}

}  // namespace attnviz

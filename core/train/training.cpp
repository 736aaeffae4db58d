#include "train/training.h"

#include <algorithm>
#include <cmath>

#include "base/counter_rng.h"
#include "base/error.h"
#include "model/arena.h"
#include "model/device_weights.h"
#include "model/runs.h"
#include "train/backward.h"
#include "train/workspace.h"

namespace attnviz {

void carveStack(Arena& a, const ModelConfig& c, const DeviceStack& ds, StackTape& t, int B, int n,
                int S, bool keep_out) {
  const int64_t rows = (int64_t)B * n, d = c.d_model, H = c.n_heads;
  t.B = B;
  t.n = n;
  t.S = S;
  t.ids = a.ints(rows);
  t.segs = ds.segments ? a.ints(rows) : nullptr;
  t.mask = a.bytes(rows * n);
  t.cross_mask = S ? a.bytes(rows * S) : nullptr;
  t.embed_norm_in = c.embed_norm ? a.floats(rows * d) : nullptr;
  auto sub = [&](SublayerTape& s) {
    s.f_in = a.floats(rows * d);
    s.norm_in = a.floats(rows * d);
  };
  t.layers.assign(ds.layers.size(), LayerTape());
  for (size_t l = 0; l < ds.layers.size(); ++l) {
    LayerTape& lt = t.layers[l];
    sub(lt.self);
    lt.self_attn = {a.floats(rows * c.attnWidth()),
                    a.floats(rows * (c.keyWidth() + c.kvValueWidth())), a.floats(rows * H * n),
                    a.floats(rows * c.valueWidth())};
    if (ds.layers[l].self_attn.q_norm.gamma) {
      lt.self_attn.q_raw = a.floats(rows * c.attnWidth());
      lt.self_attn.kv_raw = a.floats(rows * (c.keyWidth() + c.kvValueWidth()));
    }
    if (ds.layers[l].has_cross) {
      sub(lt.cross);
      lt.cross_attn = {a.floats(rows * c.attnWidth()), nullptr, a.floats(rows * H * S),
                       a.floats(rows * c.valueWidth())};
    }
    sub(lt.ffn);
    lt.ffn_pre = a.floats(rows * c.d_ff * (c.gated_ffn ? 2 : 1));
    lt.ffn_act = a.floats(rows * c.d_ff);
  }
  t.final_in = c.final_norm ? a.floats(rows * d) : nullptr;
  t.out = keep_out ? a.floats(rows * d) : nullptr;
}

// Everything a training step of B sentences of S source and T target positions needs, in `a`
// (a counting arena first, to size the workspace).
void carveStep(Arena& a, const ModelConfig& c, const DeviceWeights& dw, int B, int S, int T,
               Tape& tape, GradScratch& g, LossRegions& l) {
  const int64_t d = c.d_model, A = c.attnWidth(), KV = c.keyWidth() + c.kvValueWidth();
  if (c.hasEncoder()) carveStack(a, c, dw.enc, tape.enc, B, S, 0, false);
  if (c.hasDecoder()) carveStack(a, c, dw.dec, tape.dec, B, T, c.hasCross() ? S : 0, true);
  const int n_out = c.hasDecoder() ? T : S;
  const int64_t rows = (int64_t)B * n_out;
  const int64_t V = dw.head.projection.out, C = dw.head.classifier.out;
  HeadTape& h = tape.head;
  if (c.tokenHead() != TokenHead::None) h.logits = a.floats(rows * V);
  if (c.output_scale) h.scaled_in = a.floats(rows * d);
  if (c.tokenHead() == TokenHead::BertMlm) {
    h.mlm_pre = a.floats(rows * d);
    h.mlm_act = a.floats(rows * d);
    h.mlm_out = a.floats(rows * d);
  }
  if (c.classHead() != ClassHead::None) {
    h.pooled = a.floats(B * d);
    h.pooler_pre = a.floats(B * d);
    h.pooler_act = a.floats(B * d);
    h.class_logits = a.floats(B * C);
  }
  const int64_t max_rows = (int64_t)B * std::max(S, T), keys = std::max(S, T);
  g.dn = a.floats(max_rows * d);
  g.dy = a.floats(max_rows * d);
  g.dfin = a.floats(max_rows * d);
  g.dq = a.floats(max_rows * A);
  g.dkv = a.floats(max_rows * KV);
  g.dprobs = a.floats(max_rows * c.n_heads * keys);
  g.dctx = a.floats(max_rows * c.valueWidth());
  g.dffn = a.floats(max_rows * c.d_ff * (c.gated_ffn ? 3 : 1));
  l.targets = a.ints(rows);
  l.losses = a.floats(rows);
  l.predictions = a.ints(rows);
  l.dlogits = a.floats(rows * V);
  l.class_targets = a.ints(B);
  l.class_losses = a.floats(B);
  l.class_predictions = a.ints(B);
  l.dclass = a.floats(B * C);
  l.probe = a.floats(rows * d);
  l.dout = a.floats(rows * d);
  l.dmemory = c.hasEncoder() ? a.floats((int64_t)B * S * d) : nullptr;
}

void sizeWorkspace(Backend& be, const ModelConfig& c, const DeviceWeights& dw, int B, int S, int T,
                   double spare, BufferPtr& workspace) {
  Arena counting;
  Tape tape;
  GradScratch g;
  LossRegions l;
  carveStep(counting, c, dw, B, S, T, tape, g, l);
  if (!workspace || workspace->bytes() < counting.used())
    workspace = be.allocate(counting.used() + (uint64_t)(spare * (double)counting.used()));
}

const float* forwardWithTape(Backend& be, const ModelConfig& c, const DeviceWeights& dw,
                             const std::vector<std::vector<int>>& src,
                             const std::vector<std::vector<int>>& segments,
                             const std::vector<std::vector<int>>& tgt, const ForwardOptions& o,
                             Tape& tape, Model::Encoded& enc) {
  if (c.sandwich_norms || c.attn_softcap > 0.0f || c.final_softcap > 0.0f)
    throw Error(ErrorKind::BadInput,
                "this model norms each sublayer's output and soft-caps its scores and logits "
                "(Gemma 2), which attnviz runs forward (attention, logits, decoding) but has no "
                "backward pass for: it does not train or take gradients through it");
  const int B = (int)(c.hasEncoder() ? src.size() : tgt.size());
  const int S = src.empty() ? 0 : (int)src[0].size(), T = tgt.empty() ? 0 : (int)tgt[0].size();
  const int total = c.n_encoder_layers + c.n_decoder_layers;
  int done = 0;
  if (c.hasEncoder()) {
    enc.batch = B;
    enc.S = S;
    enc.src = src;
    runEncoder(be, c, dw, enc, segments, o, {}, &done, total, &tape);
  }
  if (c.hasDecoder()) {
    runDecoder(be, c, dw, c.hasEncoder() ? &enc : nullptr, tgt, 0, T, T, {}, o, &tape);
    return tape.dec.out;
  }
  runEncoderHeads(be, c, dw, enc.memory->f32(), B, S, o, nullptr, &tape);
  return enc.memory->f32();
}

namespace {

// A 64-bit seed for dropout site k of a step seeded with `seed`.
uint64_t siteSeed(uint64_t seed, uint64_t k) {
  return ((uint64_t)counterHash(seed, 2 * k) << 32) | counterHash(seed, 2 * k + 1);
}

// F.cross_entropy of device logits [rows, V] against host targets (-1 = not counted): the targets
// go to dtargets, the per-row losses and argmaxes come back.
void crossEntropy(Backend& be, Arena& workspace, const float* logits,
                  const std::vector<int32_t>& targets, int32_t* dtargets, float* dlosses,
                  int32_t* dpredictions, int V, float smoothing, std::vector<float>* losses,
                  std::vector<int32_t>* predictions) {
  const int rows = (int)targets.size();
  workspace.put(dtargets, targets);
  be.cross_entropy_forward(logits, dtargets, dlosses, dpredictions, rows, V, -1, smoothing);
  losses->resize((size_t)rows);
  predictions->resize((size_t)rows);
  workspace.get(dlosses, losses->data(), losses->size() * sizeof(float));
  workspace.get(dpredictions, predictions->data(), predictions->size() * sizeof(int32_t));
}

}  // namespace

Training::Training(Model& model) : model_(model) {
  const DeviceWeights& dw = model.deviceWeights();
  grads_ = model.backend().allocate((size_t)std::max<int64_t>(dw.n_params, 1) * sizeof(float));
}

Training::~Training() = default;

void Training::zeroGradients() {
  model_.backend().zero(grads_->f32(), model_.deviceWeights().n_params);
}

float* Training::parameters() {
  return model_.deviceWeights().params->f32();
}

float* Training::gradients() {
  return grads_->f32();
}

int64_t Training::parameterCount() const {
  return model_.deviceWeights().n_params;
}

double Training::gradientNorm() {
  const double sum = model_.backend().sum_squares(gradients(), parameterCount());
  return std::sqrt(std::max(sum, 0.0));
}

ModelWeights Training::currentGradients() const {
  return downloadWeights(model_.backend(), model_.deviceWeights(), model_.loaded().weights,
                         grads_->f32());
}

LossStats Training::forwardBackward(const Inputs& in, const Targets& tg, const TrainOptions& opt) {
  const ModelConfig& c = model_.config();
  const DeviceWeights& dw = model_.deviceWeights();
  const int B = (int)model_.checkInputs(in);
  if (!(opt.dropout >= 0.0f && opt.dropout < 1.0f))
    throw Error(ErrorKind::BadInput,
                "dropout must be in [0, 1), got " + std::to_string(opt.dropout));
  if (!(opt.label_smoothing >= 0.0f && opt.label_smoothing <= 1.0f))
    throw Error(ErrorKind::BadInput,
                "label smoothing must be in [0, 1], got " + std::to_string(opt.label_smoothing));
  int S = 0, T = 0;
  std::vector<std::vector<int>> src, tgt, segments;
  if (c.hasEncoder()) src = padBatch(in.src, c.src_pad_id, &S);
  if (c.hasDecoder()) tgt = padBatch(in.tgt, c.tgt_pad_id, &T);
  if (!in.segments.empty()) {
    int len = 0;
    segments = padBatch(in.segments, 0, &len);
  }
  ForwardOptions o;
  o.record = false;
  o.masks = opt.masks;
  model_.checkPassSize(B, S, T, o);
  const int n_out = c.hasDecoder() ? T : S, d = c.d_model;
  const int64_t rows = (int64_t)B * n_out;
  const int V = dw.head.projection.out, C = dw.head.classifier.out;

  // The targets, checked against the outputs the model has.
  const bool token_loss = c.tokenHead() != TokenHead::None && !tg.tokens.empty();
  const bool class_loss = c.classHead() != ClassHead::None && !tg.classes.empty();
  const bool probe = !tg.hidden_weights.empty();
  if (!tg.tokens.empty() && c.tokenHead() == TokenHead::None)
    throw Error(ErrorKind::BadInput, "token targets given, but the model has no token head");
  if (!tg.classes.empty() && c.classHead() == ClassHead::None)
    throw Error(ErrorKind::BadInput, "class targets given, but the model has no class head");
  if (!token_loss && !class_loss && !probe)
    throw Error(ErrorKind::BadInput, "no targets: give token targets, class targets or a probe");
  std::vector<int32_t> targets((size_t)rows, -1);
  if (token_loss) {
    if ((int)tg.tokens.size() != B)
      throw Error(ErrorKind::BadInput, "give token targets for each of the " + std::to_string(B) +
                                           " sentences (got " + std::to_string(tg.tokens.size()) +
                                           ")");
    for (int b = 0; b < B; ++b) {
      if ((int)tg.tokens[b].size() > n_out)
        throw Error(ErrorKind::BadInput, "sentence " + std::to_string(b + 1) + " has " +
                                             std::to_string(tg.tokens[b].size()) +
                                             " token targets for " + std::to_string(n_out) +
                                             " positions");
      for (size_t i = 0; i < tg.tokens[b].size(); ++i) {
        const int t = tg.tokens[b][i];
        if (t >= V)
          throw Error(ErrorKind::BadInput, "target id " + std::to_string(t) +
                                               " is outside the vocabulary (0.." +
                                               std::to_string(V - 1) + ")");
        targets[(size_t)b * n_out + i] = t < 0 ? -1 : t;
      }
    }
  }
  std::vector<int32_t> class_targets;
  if (class_loss) {
    if ((int)tg.classes.size() != B)
      throw Error(ErrorKind::BadInput, "give one class target per sentence");
    for (int k : tg.classes) {
      if (k < 0 || k >= C)
        throw Error(ErrorKind::BadInput, "class target " + std::to_string(k) + " is outside 0.." +
                                             std::to_string(C - 1));
      class_targets.push_back(k);
    }
  }
  if (probe && tg.hidden_weights.shape != Shape{B, n_out, d})
    throw Error(ErrorKind::BadInput, "hidden_weights has shape " +
                                         shapeToString(tg.hidden_weights.shape) + "; expected " +
                                         shapeToString({B, n_out, d}));

  // The workspace: sized by a counting pass, grown when a batch needs more.
  Backend& be = model_.backend();
  sizeWorkspace(be, c, dw, B, S, T, 0.25, workspace_);
  Tape tape;
  GradScratch g;
  LossRegions l;
  Arena a(be, *workspace_);
  carveStep(a, c, dw, B, S, T, tape, g, l);
  tape.workspace = &a;
  tape.scratch = &scratch_;
  tape.dropout = opt.dropout;
  uint64_t site = 0;
  for (StackTape* st : {&tape.enc, &tape.dec}) {
    st->embed_seed = siteSeed(opt.seed, site++);
    for (LayerTape& lt : st->layers) {
      lt.self.seed = siteSeed(opt.seed, site++);
      lt.cross.seed = siteSeed(opt.seed, site++);
      lt.ffn.seed = siteSeed(opt.seed, site++);
      lt.ffn_seed = siteSeed(opt.seed, site++);
    }
  }

  // Forward: the one layer stack, with the tape.
  Model::Encoded enc;
  const float* out_x = forwardWithTape(be, c, dw, src, segments, tgt, o, tape, enc);

  // The loss and its gradient with respect to the outputs.
  LossStats stats;
  be.zero(l.dout, rows * d);
  Backward bw(be, c, dw, {dw.params->f32(), grads_->f32()}, g);
  if (token_loss) {
    std::vector<float> losses;
    std::vector<int32_t> predictions;
    crossEntropy(be, a, tape.head.logits, targets, l.targets, l.losses, l.predictions, V,
                 opt.label_smoothing, &losses, &predictions);
    double sum = 0;
    for (int b = 0; b < B; ++b) {
      int64_t counted = 0, right = 0;
      for (int i = 0; i < n_out; ++i) {
        const size_t r = (size_t)b * n_out + i;
        if (targets[r] < 0) continue;
        ++counted;
        right += predictions[r] == targets[r];
        sum += losses[r];
      }
      stats.tokens += counted;
      stats.correct_tokens += right;
      if (counted) {
        ++stats.sequences;
        stats.correct_sequences += right == counted;
      }
    }
    if (stats.tokens) {
      stats.token_loss = sum / (double)stats.tokens;
      be.cross_entropy_backward(tape.head.logits, l.targets, l.dlogits, (int)rows, V, -1,
                                opt.label_smoothing, 1.0f / (float)stats.tokens);
      bw.tokenHead(tape.head, out_x, l.dlogits, l.dout, (int)rows);
    }
  }
  if (class_loss) {
    std::vector<float> losses;
    std::vector<int32_t> predictions;
    crossEntropy(be, a, tape.head.class_logits, class_targets, l.class_targets, l.class_losses,
                 l.class_predictions, C, opt.label_smoothing, &losses, &predictions);
    double sum = 0;
    for (int b = 0; b < B; ++b) {
      sum += losses[(size_t)b];
      stats.correct_classes += predictions[(size_t)b] == class_targets[(size_t)b];
    }
    stats.classes = B;
    stats.class_loss = sum / B;
    be.cross_entropy_backward(tape.head.class_logits, l.class_targets, l.dclass, B, C, -1,
                              opt.label_smoothing, 1.0f / (float)B);
    bw.classHead(tape.head, l.dclass, l.dout, B, n_out);
  }
  double probe_loss = 0;
  if (probe) {
    a.put(l.probe, tg.hidden_weights.data);
    std::vector<float> hidden((size_t)rows * d);
    be.copy_to_host(out_x, hidden.data(), rows * d);
    for (size_t i = 0; i < hidden.size(); ++i)
      probe_loss += (double)hidden[i] * tg.hidden_weights.data[i];
    be.residual_backward(l.probe, l.dout, rows * d);
  }
  stats.loss = stats.token_loss + stats.class_loss + probe_loss;

  // Backward: the decoder, its cross-attention's share of the encoder's output, the encoder.
  if (c.hasEncoder()) {
    if (c.hasDecoder())
      be.zero(l.dmemory, (int64_t)B * S * d);
    else
      be.copy(l.dout, l.dmemory, rows * d);
  }
  if (c.hasDecoder()) {
    bw.layers(l.dout, dw.dec, tape.dec, c.hasEncoder() ? &enc : nullptr, opt.dropout, l.dmemory);
    bw.embed(dw.dec, tape.dec, l.dout, opt.dropout);
  }
  if (c.hasEncoder()) {
    bw.layers(l.dmemory, dw.enc, tape.enc, nullptr, opt.dropout, nullptr);
    bw.embed(dw.enc, tape.enc, l.dmemory, opt.dropout);
  }
  // The zero bias parts that stand for no tensor stay zero.
  for (const auto& [offset, n] : dw.padding) be.zero(grads_->f32() + offset, n);
  be.synchronize();
  return stats;
}

}  // namespace attnviz

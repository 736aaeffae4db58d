#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/decoding.h"

namespace attnviz {

namespace {

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string joinWords(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

}  // namespace

namespace {

// nn.init.xavier_uniform_: U(−a, a), a = √(6 / (fan_in + fan_out)).
Tensor xavier(int64_t out, int64_t in, std::mt19937_64& rng) {
  Tensor t({out, in});
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const float a = std::sqrt(6.0f / (float)(in + out));
  for (float& v : t.data) v = a * u(rng);
  return t;
}

// The config keys both training models share: sizes, the task's special ids, the norm placement,
// biases, and a name and description.
nlohmann::json sharedConfig(const Task& task, const ModelPreset& p, NormPlacement norm) {
  return {{"d_model", p.d_model},
          {"n_heads", p.n_heads},
          {"d_ff", p.d_ff},
          {"pad_id", Task::kPad},
          {"bos_id", Task::kBos},
          {"eos_id", Task::kEos},
          {"unk_id", Task::kUnk},
          {"norm", norm == NormPlacement::Pre ? "pre" : "post"},
          {"attn_bias", true},
          {"ffn_bias", true},
          {"name", task.name() + " (" + p.name + ")"},
          {"description", "Trained in attnviz to " + task.description() + "."}};
}

// A unit LayerNorm (γ 1, β 0) of width d.
LayerNormWeights unitNorm(int d) {
  LayerNormWeights n{Tensor({d}), Tensor({d})};
  std::fill(n.gamma.data.begin(), n.gamma.data.end(), 1.0f);
  return n;
}

// A fresh nanoGPT-style decoder-only model (family nanogpt) of the preset's decoder depth for a
// language-model task: rotary positions (relative offsets, such as "the previous token", are then
// one query-key pattern for every position: with learned positions the induction recipe's
// induction head had not formed after 4,000 steps, with sinusoidal ones after 8,000), LayerNorm
// before each sublayer and at the end, the output projection tied to the token table;
// Xavier-uniform matrices, zero biases, unit norms. d_ff 0: attention-only.
std::shared_ptr<LoadedModel> makeLanguageModel(const Task& task, const ModelPreset& p,
                                               NormPlacement norm, uint64_t seed) {
  nlohmann::json j = sharedConfig(task, p, norm);
  j.update({{"family", "nanogpt"},
            {"model", "GPT"},
            {"n_layers", p.n_decoder_layers},
            {"vocab", task.tgtVocab()},
            {"proj_bias", false},
            {"positional", "rotary"},
            {"max_len", task.maxTargetLength() + 2}});
  auto m = std::make_shared<LoadedModel>();
  m->path = "(trained in attnviz)";
  m->config = ModelConfig::fromJson(j, "the training model");
  const ModelConfig& c = m->config;
  const int d = c.d_model;
  std::mt19937_64 rng(seed);
  auto linear = [&](int in, int out) { return LinearWeights{xavier(out, in, rng), Tensor({out})}; };
  StackWeights& s = m->weights.decoder;
  s.embed.tokens = xavier((int64_t)c.tgt_vocab.size(), d, rng);
  for (int l = 0; l < c.n_decoder_layers; ++l) {
    LayerWeights e;
    e.self_attn.q = linear(d, c.attnWidth());
    e.self_attn.k = linear(d, c.keyWidth());
    e.self_attn.v = linear(d, c.kvValueWidth());
    e.self_attn.out = linear(c.valueWidth(), d);
    e.norm_self = unitNorm(d);
    if (c.d_ff > 0) {
      e.ffn.fc1 = linear(d, c.d_ff);
      e.ffn.fc2 = linear(c.d_ff, d);
      e.norm_ffn = unitNorm(d);
    }
    s.layers.push_back(std::move(e));
  }
  s.final_norm = unitNorm(d);
  m->weights.head.projection.weight = s.embed.tokens;  // tied, as nanoGPT's lm_head
  return m;
}

}  // namespace

const std::vector<ModelPreset>& modelPresets() {
  static const std::vector<ModelPreset> presets = {
      {"tiny", 32, 2, 64, 1, 1, "1+1 layers, d_model 32, 2 heads, d_ff 64"},
      {"small", 64, 4, 256, 2, 2, "2+2 layers, d_model 64, 4 heads, d_ff 256"},
      {"medium", 128, 4, 512, 3, 3, "3+3 layers, d_model 128, 4 heads, d_ff 512"},
      {"tutorial", 512, 8, 2048, 6, 6,
       "the tutorials' full size: 6+6 layers, d_model 512, 8 heads, d_ff 2048"},
      // A decoder of 2 attention-only layers (no feed-forward): the smallest model in which an
      // induction head forms (Olsson et al. 2022), for the induction task.
      {"attn-only-2l", 64, 4, 0, 0, 2,
       "a decoder of 2 attention-only layers (no feed-forward), d_model 64, 4 heads"},
  };
  return presets;
}

const ModelPreset& findPreset(const std::string& name) {
  for (const auto& p : modelPresets())
    if (p.name == name) return p;
  throw Error(ErrorKind::Usage, "unknown model size \"" + name +
                                    "\" (tiny, small, medium, tutorial or attn-only-2l)");
}

TrainConfig inductionRecipe() {
  TrainConfig c;
  c.task = "induction";
  c.task_options.min_len = 3;
  c.task_options.max_len = 8;
  c.preset = "attn-only-2l";
  c.steps = 2500;
  c.batch = 32;
  c.seed = 1;
  c.optimizer.lr = 1e-3f;
  c.optimizer.schedule = Schedule::Warmup;
  return c;
}

OptimizerOptions TrainConfig::defaultOptimizer() {
  OptimizerOptions o;
  o.lr = 1e-3f;
  o.beta1 = 0.9f;
  o.beta2 = 0.98f;
  o.eps = 1e-9f;
  o.clip = 1.0f;
  o.schedule = Schedule::WarmupCosine;
  o.warmup = 100;
  return o;
}

std::shared_ptr<LoadedModel> makeTrainingModel(const Task& task, const ModelPreset& p,
                                               NormPlacement norm, uint64_t seed) {
  if (task.decoderOnly()) return makeLanguageModel(task, p, norm, seed);
  if (p.n_encoder_layers == 0)
    throw Error(ErrorKind::Usage, "the " + p.name + " size is a decoder-only model, for a " +
                                      "language-model task (induction); \"" + task.name() +
                                      "\" needs an encoder and a decoder");
  const int max_len = std::max(task.maxSourceLength(), task.maxTargetLength() + 1) + 8;
  nlohmann::json j = sharedConfig(task, p, norm);
  j.update({{"family", "pytorch-nn-transformer"},
            {"model", "Seq2SeqTransformer"},
            {"n_encoder_layers", p.n_encoder_layers},
            {"n_decoder_layers", p.n_decoder_layers},
            {"src_vocab", task.srcVocab()},
            {"tgt_vocab", task.tgtVocab()},
            {"proj_bias", true},
            {"max_len", std::max(max_len, 64)},
            {"src_bos_eos", false}});
  auto m = std::make_shared<LoadedModel>();
  m->path = "(trained in attnviz)";
  m->config = ModelConfig::fromJson(j, "the training model");
  const ModelConfig& c = m->config;
  std::mt19937_64 rng(seed);
  auto linear = [&](int in, int out) { return LinearWeights{xavier(out, in, rng), Tensor({out})}; };
  // nn.MultiheadAttention draws in_proj_weight [3d, d] as one Xavier matrix.
  auto attention = [&]() {
    const int d = c.d_model;
    Tensor in_proj = xavier(3 * d, d, rng);
    AttentionWeights a;
    LinearWeights* parts[3] = {&a.q, &a.k, &a.v};
    for (int i = 0; i < 3; ++i) {
      parts[i]->weight =
          Tensor({d, d}, std::vector<float>(in_proj.data.begin() + (int64_t)i * d * d,
                                            in_proj.data.begin() + (int64_t)(i + 1) * d * d));
      parts[i]->bias = Tensor({d});
    }
    a.out = linear(d, d);
    return a;
  };
  auto stack = [&](int layers, int vocab, bool cross) {
    StackWeights s;
    s.embed.tokens = xavier(vocab, c.d_model, rng);
    for (int l = 0; l < layers; ++l) {
      LayerWeights e;
      e.self_attn = attention();
      e.norm_self = unitNorm(c.d_model);
      if (cross) {
        e.cross_attn = attention();
        e.norm_cross = unitNorm(c.d_model);
      }
      e.ffn.fc1 = linear(c.d_model, c.d_ff);
      e.ffn.fc2 = linear(c.d_ff, c.d_model);
      e.norm_ffn = unitNorm(c.d_model);
      s.layers.push_back(std::move(e));
    }
    s.final_norm = unitNorm(c.d_model);
    return s;
  };
  m->weights.encoder = stack(c.n_encoder_layers, (int)c.src_vocab.size(), false);
  m->weights.decoder = stack(c.n_decoder_layers, (int)c.tgt_vocab.size(), true);
  m->weights.head.projection = linear(c.d_model, (int)c.tgt_vocab.size());
  return m;
}

Trainer::Trainer(TrainConfig config, std::shared_ptr<Backend> backend)
    : config_(std::move(config)), rng_(config_.seed) {
  if (config_.steps < 0 || config_.batch < 1)
    throw Error(ErrorKind::Usage, "steps must be >= 0 and the batch >= 1");
  task_ = makeTask(config_.task, config_.task_options);
  const ModelPreset& preset = findPreset(config_.preset);
  if (preset.d_model % preset.n_heads) throw Error(ErrorKind::Usage, "bad preset");
  model_ = std::make_unique<Model>(makeTrainingModel(*task_, preset, config_.norm, config_.seed),
                                   std::move(backend));
  training_ = std::make_unique<Training>(*model_);
  OptimizerOptions o = config_.optimizer;
  if (o.total_steps == 0) o.total_steps = config_.steps;
  optimizer_ = std::make_unique<Optimizer>(*training_, o);
}

Trainer::~Trainer() = default;

std::vector<Example> Trainer::nextBatch() {
  if (pending_.empty()) {
    const int n = std::max(1, config_.bucket);
    std::vector<Example> pool;
    for (int i = 0; i < n * config_.batch; ++i) pool.push_back(task_->sample(rng_));
    if (n > 1)
      std::stable_sort(pool.begin(), pool.end(), [](const Example& a, const Example& b) {
        return std::make_pair(a.src.size(), a.tgt.size()) <
               std::make_pair(b.src.size(), b.tgt.size());
      });
    for (int k = 0; k < n; ++k)
      pending_.emplace_back(pool.begin() + (long)k * config_.batch,
                            pool.begin() + (long)(k + 1) * config_.batch);
    for (int k = n - 1; k > 0; --k)  // Fisher–Yates with the trainer's own generator
      std::swap(pending_[(size_t)k], pending_[(size_t)(rng_() % (uint64_t)(k + 1))]);
  }
  std::vector<Example> batch = std::move(pending_.back());
  pending_.pop_back();
  return batch;
}

Trainer::StepStats Trainer::step() {
  const auto t0 = std::chrono::steady_clock::now();
  Inputs in;
  Targets targets;
  for (const Example& e : nextBatch()) {
    if (!task_->decoderOnly()) in.src.push_back(task_->srcIds(e.src));
    std::vector<int> tgt = task_->tgtIds(e.tgt);
    std::vector<int> dec{Task::kBos};
    dec.insert(dec.end(), tgt.begin(), tgt.end());
    tgt.push_back(Task::kEos);
    in.tgt.push_back(std::move(dec));
    targets.tokens.push_back(std::move(tgt));
  }
  TrainOptions opt;
  opt.label_smoothing = config_.label_smoothing;
  opt.dropout = config_.dropout;
  opt.seed = config_.seed * 1000003ull + (uint64_t)steps_;
  training_->zeroGradients();
  const LossStats loss = training_->forwardBackward(in, targets, opt);
  const Optimizer::StepInfo info = optimizer_->step();
  ++steps_;
  seconds_ += secondsSince(t0);
  StepStats s;
  s.step = steps_;
  s.loss = loss.token_loss;
  s.token_accuracy = loss.tokens ? (double)loss.correct_tokens / (double)loss.tokens : 0.0;
  s.sequence_accuracy =
      loss.sequences ? (double)loss.correct_sequences / (double)loss.sequences : 0.0;
  s.lr = info.lr;
  s.grad_norm = info.grad_norm;
  s.seconds = seconds_;
  return s;
}

Trainer::Evaluation Trainer::evaluate(int limit, const std::atomic<bool>* cancel) const {
  const auto t0 = std::chrono::steady_clock::now();
  Evaluation ev;
  ev.step = steps_;
  const auto& items = task_->heldOut();
  const int n = limit > 0 ? std::min<int>(limit, (int)items.size()) : (int)items.size();
  if (task_->decoderOnly()) {
    // Teacher-forced: a sequence is right when the argmax at every scored position is its token.
    const int chunk = 64;
    for (int i0 = 0; i0 < n; i0 += chunk) {
      if (cancel && cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
      Inputs in;
      for (int i = i0; i < std::min(n, i0 + chunk); ++i) {
        std::vector<int> dec{Task::kBos};
        for (int id : task_->tgtIds(items[(size_t)i].tgt)) dec.push_back(id);
        in.tgt.push_back(std::move(dec));
      }
      ForwardOptions o;
      o.cancel = cancel;
      const Trace t = model_->forward(in, o);
      for (int b = 0; b < (int)in.tgt.size(); ++b) {
        const Example& e = items[(size_t)(i0 + b)];
        const std::vector<int>& dec = in.tgt[(size_t)b];
        const int first = task_->firstScored(e);
        std::vector<int> got;
        bool right = true;
        for (int p = first; p < (int)e.tgt.size(); ++p) {  // position p (token p − 1) predicts p
          const int best = t.logits.top(b, p, 1).front().first;
          got.push_back(best);
          right = right && best == dec[(size_t)p + 1];
        }
        ++ev.total;
        if (right) {
          ++ev.correct;
        } else if (ev.mistakes.size() < 3) {
          const std::vector<std::string> tail(e.tgt.begin() + first, e.tgt.end());
          ev.mistakes.push_back(joinWords(e.tgt) + " → … " +
                                joinWords(model_->tgtVocab().decode(got)) + " (want … " +
                                joinWords(tail) + ")");
        }
      }
    }
    ev.exact_match = ev.total ? (double)ev.correct / ev.total : 0.0;
    ev.seconds = secondsSince(t0);
    return ev;
  }
  for (int i = 0; i < n; ++i) {
    if (cancel && cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
    const Example& e = items[(size_t)i];
    std::vector<int> want = task_->tgtIds(e.tgt);
    want.push_back(Task::kEos);
    const std::vector<int> got = greedyDecode(*model_, task_->srcIds(e.src), (int)want.size() + 5);
    ++ev.total;
    if (got == want) {
      ++ev.correct;
    } else if (ev.mistakes.size() < 3) {
      ev.mistakes.push_back(joinWords(e.src) + " → " + joinWords(model_->tgtVocab().decode(got)) +
                            " (want " + joinWords(e.tgt) + ")");
    }
  }
  ev.exact_match = ev.total ? (double)ev.correct / ev.total : 0.0;
  ev.seconds = secondsSince(t0);
  return ev;
}

Trace Trainer::probeTrace() const {
  const Example& p = task_->probe();
  std::vector<int> dec{Task::kBos};
  for (int id : task_->tgtIds(p.tgt)) dec.push_back(id);
  ForwardOptions o;
  if (task_->decoderOnly()) return model_->forward({{}, {}, {dec}}, o);
  return model_->forward({{task_->srcIds(p.src)}, {}, {dec}}, o);
}

std::shared_ptr<LoadedModel> Trainer::snapshot() const {
  auto m = model_->snapshot();
  m->config.description = "Trained in attnviz for " + std::to_string(steps_) + " steps to " +
                          task_->description() + ".";
  m->config.examples.clear();
  for (size_t i = 0; i < task_->heldOut().size() && i < 6; ++i)
    m->config.examples.push_back(task_->decoderOnly()
                                     ? ExampleInput{"", joinWords(task_->heldOut()[i].tgt)}
                                     : ExampleInput{joinWords(task_->heldOut()[i].src), ""});
  return m;
}

}  // namespace attnviz

// Training: gradients and optimizer steps against PyTorch autograd and torch.optim for every
// reference case (every family and class: tools/make_grad_references.py), dropout, determinism,
// the safetensors writer, and training a small model on a task.
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "arch/weights.h"
#include "arch/writer.h"
#include "base/error.h"
#include "compute/backends.h"
#include "compute/cpu_backend.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "test_support.h"
#include "train/optimizer.h"
#include "train/tasks.h"
#include "train/trainer.h"
#include "train/training.h"

using namespace attnviz;

namespace {

// A DeviceBuffer over a few floats of another buffer (to upload into the middle of the CPU
// backend's parameter array).
class HostView final : public DeviceBuffer {
 public:
  explicit HostView(float* p) : p_(p) {}
  size_t bytes() const override { return sizeof(float); }
  void* data() override { return p_; }
  const void* data() const override { return p_; }

 private:
  float* p_;
};

// $ATTNVIZ_GRAD_REF_DIR: the references tools/make_grad_references.py wrote (the test command
// makes them fresh as a CTest fixture); empty when not set.
std::string gradDir() {
  const char* d = std::getenv("ATTNVIZ_GRAD_REF_DIR");
  return d && *d ? d : "";
}

std::vector<std::vector<int>> idLists(const nlohmann::json& j) {
  std::vector<std::vector<int>> out;
  for (const auto& row : j) out.push_back(row.get<std::vector<int>>());
  return out;
}

// One reference case: the model file, the batch, the targets and what PyTorch computed.
struct Case {
  std::shared_ptr<const LoadedModel> model;
  Inputs inputs;
  Targets targets;
  TrainOptions train;
  nlohmann::json meta;
};

Case loadCase(const std::string& dir, const std::string& name) {
  Case c;
  c.model = loadModel(dir + "/" + name + ".safetensors");
  SafetensorsFile f = SafetensorsFile::open(dir + "/" + name + ".train.safetensors");
  c.meta = nlohmann::json::parse(f.metadata().at("train"));
  const auto& in = c.meta["inputs"];
  if (in.contains("src_ids")) c.inputs.src = idLists(in["src_ids"]);
  if (in.contains("tgt_ids")) c.inputs.tgt = idLists(in["tgt_ids"]);
  if (in.contains("segment_ids")) c.inputs.segments = idLists(in["segment_ids"]);
  if (c.meta.contains("tokens")) c.targets.tokens = idLists(c.meta["tokens"]);
  if (c.meta.contains("classes")) c.targets.classes = c.meta["classes"].get<std::vector<int>>();
  if (f.contains("probe")) {
    Tensor probe = f.toFloat("probe");
    c.targets.hidden_weights = probe;
  }
  c.train.label_smoothing = c.meta["smoothing"].get<float>();
  return c;
}

// Largest |a − b| over the tensor, relative to max(max|b|, floor).
double relError(const Tensor& a, const Tensor& b, double floor) {
  double worst = 0, scale = floor;
  for (float v : b.data) scale = std::max(scale, (double)std::abs(v));
  for (size_t i = 0; i < a.data.size(); ++i) {
    const double e = std::abs((double)a.data[i] - b.data[i]) / scale;
    if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e;
  }
  return worst;
}

double maxAbs(const ModelWeights& w) {
  double m = 0;
  forEachTensor(w, [&](const std::string&, const Tensor& t) {
    for (float v : t.data) m = std::max(m, (double)std::abs(v));
  });
  return m;
}

// Compares every tensor of `got` with `want` (same config); returns the failures, worst first.
struct TensorError {
  std::string name;
  double error;
};
std::vector<TensorError> compareLayouts(const ModelWeights& got, const ModelWeights& want,
                                        double bound, double floor,
                                        const std::vector<std::string>& skip = {}) {
  std::vector<std::pair<std::string, const Tensor*>> wanted;
  forEachTensor(want, [&](const std::string& n, const Tensor& t) { wanted.emplace_back(n, &t); });
  std::vector<TensorError> bad;
  size_t i = 0;
  forEachTensor(got, [&](const std::string& n, const Tensor& t) {
    const Tensor& w = *wanted[i++].second;
    if (std::find(skip.begin(), skip.end(), n) != skip.end()) return;
    if (t.shape != w.shape) {
      bad.push_back(
          {n + " shape " + shapeToString(t.shape) + " vs " + shapeToString(w.shape), INFINITY});
      return;
    }
    const double e = relError(t, w, floor);
    if (!(e <= bound)) bad.push_back({n, e});
  });
  std::sort(bad.begin(), bad.end(),
            [](const TensorError& a, const TensorError& b) { return a.error > b.error; });
  return bad;
}

QString describe(const std::vector<TensorError>& bad) {
  QString s;
  for (size_t i = 0; i < bad.size() && i < 6; ++i)
    s += QString("%1%2: %3").arg(i ? "; " : "").arg(bad[i].name.c_str()).arg(bad[i].error);
  if (bad.size() > 6) s += QString("; … %1 in all").arg(bad.size());
  return s;
}

// The keys' biases get no gradient at all in exact arithmetic (softmax does not change when a
// constant is added to a row of scores, and q·b_k is one per row), so their computed gradients
// are float noise on both sides.
std::vector<std::string> keyBiases(const ModelWeights& w) {
  std::vector<std::string> out;
  forEachTensor(w, [&](const std::string& n, const Tensor& t) {
    if (!t.empty() && n.size() > 7 && n.compare(n.size() - 7, 7, ".k.bias") == 0) out.push_back(n);
  });
  return out;
}

}  // namespace

class TestTraining : public QObject {
  Q_OBJECT

 private:
  std::shared_ptr<Backend> backend_;
  std::string why_not_;

 private slots:
  void initTestCase() {
    backend_ = test::testBackend(&why_not_);
    if (backend_) qInfo("backend: %s", backend_->description().c_str());
  }

  // ---- parity with PyTorch autograd: every parameter's gradient after one backward ----
  void gradients_data() {
    QTest::addColumn<QString>("name");
    for (const char* c : test::referenceCases()) QTest::newRow(c) << QString(c);
  }
  void gradients() {
    QFETCH(QString, name);
    if (!backend_) QSKIP(why_not_.c_str());
    const std::string dir = gradDir();
    if (dir.empty())
      QSKIP(
          "ATTNVIZ_GRAD_REF_DIR is not set: the test command makes the gradient references "
          "with python3-torch (tools/make_grad_references.py)");
    Case c = loadCase(dir, name.toStdString());
    Model model(c.model, backend_);
    Training training(model);
    const LossStats stats = training.forwardBackward(c.inputs, c.targets, c.train);
    const double want_loss = c.meta["first"]["loss"].get<double>();
    QVERIFY2(std::abs(stats.loss - want_loss) <= 1e-5 * std::max(1.0, std::abs(want_loss)),
             qPrintable(QString("loss %1, PyTorch %2").arg(stats.loss, 0, 'g', 9).arg(want_loss)));
    const ModelWeights grads = training.currentGradients();
    const ModelWeights want =
        loadModel(dir + "/" + name.toStdString() + ".grad.safetensors")->weights;
    // Relative error ≤ 1e-4 per tensor, against the tensor's largest gradient or, for tensors whose
    // gradients are all tiny, 10⁻³ of the largest gradient of the model (float noise of a sum of
    // cancelling terms is relative to the terms, not to their near-zero sum).
    const double scale = maxAbs(want);
    const std::vector<std::string> zero = keyBiases(grads);
    const auto bad = compareLayouts(grads, want, 1e-4, 1e-3 * scale, zero);
    QVERIFY2(bad.empty(), qPrintable(describe(bad)));
    // The keys' biases: zero up to float noise, on both sides (see keyBiases).
    forEachTensor(grads, [&](const std::string& n, const Tensor& t) {
      if (std::find(zero.begin(), zero.end(), n) == zero.end()) return;
      for (float v : t.data)
        QVERIFY2(std::abs(v) <= 1e-6 * scale, qPrintable(QString("%1: %2").arg(n.c_str()).arg(v)));
    });
  }

  // ---- parity with torch.optim: the parameters after a few Adam / AdamW steps ----
  void optimizerSteps_data() { gradients_data(); }
  void optimizerSteps() {
    QFETCH(QString, name);
    if (!backend_) QSKIP(why_not_.c_str());
    const std::string dir = gradDir();
    if (dir.empty()) QSKIP("ATTNVIZ_GRAD_REF_DIR is not set (see gradients)");
    Case c = loadCase(dir, name.toStdString());
    const auto& o = c.meta["optimizer"];
    OptimizerOptions options;
    options.decoupled = o["kind"] == "adamw";
    options.lr = o["lr"].get<float>();
    options.beta1 = o["beta1"].get<float>();
    options.beta2 = o["beta2"].get<float>();
    options.eps = o["eps"].get<float>();
    options.weight_decay = o["weight_decay"].get<float>();
    options.clip = o["clip"].get<float>();
    options.schedule = Schedule::Warmup;
    options.warmup = o["warmup"].get<int>();
    const int steps = o["steps"].get<int>();
    Model model(c.model, backend_);
    Training training(model);
    Optimizer opt(training, options);
    for (int k = 0; k < steps; ++k) {
      training.zeroGradients();
      const LossStats stats = training.forwardBackward(c.inputs, c.targets, c.train);
      const double want_loss = c.meta["losses"][k].get<double>();
      QVERIFY2(std::abs(stats.loss - want_loss) <= 1e-4 * std::max(1.0, std::abs(want_loss)),
               qPrintable(
                   QString("step %1: loss %2, PyTorch %3").arg(k).arg(stats.loss).arg(want_loss)));
      const Optimizer::StepInfo info = opt.step();
      const double want_norm = c.meta["grad_norms"][k].get<double>();
      QVERIFY2(std::abs(info.grad_norm - want_norm) <= 1e-4 * want_norm,
               qPrintable(QString("step %1: gradient norm %2, PyTorch %3")
                              .arg(k)
                              .arg(info.grad_norm, 0, 'g', 9)
                              .arg(want_norm, 0, 'g', 9)));
    }
    const ModelWeights after = model.currentWeights();
    const ModelWeights want =
        loadModel(dir + "/" + name.toStdString() + ".steps.safetensors")->weights;
    const ModelWeights first =
        loadModel(dir + "/" + name.toStdString() + ".grad.safetensors")->weights;
    // Adam's first update is about lr·sign(g) whatever |g| is: an element whose gradient is float
    // noise (below 10⁻⁵ of the largest gradient; the keys' biases are all noise, see keyBiases)
    // moves by up to ±lr a step whichever way the noise points, in PyTorch as here. Those must stay
    // within Σ lr of their start; every other element matches PyTorch's to 1e-4 of its tensor's
    // largest value.
    float lr_sum = 0;
    for (int k = 0; k < steps; ++k) lr_sum += learningRate(options, k, c.model->config.d_model);
    const double noise = 1e-5 * maxAbs(first);
    std::vector<const Tensor*> wants, firsts, befores;
    forEachTensor(want, [&](const std::string&, const Tensor& t) { wants.push_back(&t); });
    forEachTensor(first, [&](const std::string&, const Tensor& t) { firsts.push_back(&t); });
    forEachTensor(c.model->weights,
                  [&](const std::string&, const Tensor& t) { befores.push_back(&t); });
    const std::vector<std::string> zero = keyBiases(after);
    std::vector<TensorError> bad;
    int64_t compared = 0, noisy = 0;
    size_t i = 0;
    forEachTensor(after, [&](const std::string& n, const Tensor& t) {
      const Tensor &w = *wants[i], &g = *firsts[i], &b = *befores[i];
      ++i;
      if (t.empty()) return;
      const bool all_noise = std::find(zero.begin(), zero.end(), n) != zero.end();
      double scale = 1e-3, worst = 0;
      for (float v : w.data) scale = std::max(scale, (double)std::abs(v));
      for (size_t e = 0; e < t.data.size(); ++e) {
        if (all_noise || std::abs(g.data[e]) < noise) {
          ++noisy;
          if (!(std::abs(t.data[e] - b.data[e]) <= lr_sum * 1.01f)) worst = INFINITY;
          continue;
        }
        ++compared;
        worst = std::max(worst, std::abs((double)t.data[e] - w.data[e]) / scale);
      }
      if (!(worst <= 1e-4)) bad.push_back({n, worst});
    });
    QVERIFY2(bad.empty(), qPrintable(describe(bad)));
    qInfo(
        "%lld parameters match PyTorch's after %d steps; %lld with noise gradients stayed within "
        "%g of their start",
        (long long)compared, steps, (long long)noisy, lr_sum);
  }

  // ---- determinism: the same seed gives the same weights, bit for bit, on the CPU ----
  void deterministic() {
    auto train = [&](uint64_t seed, float dropout) {
      TrainConfig tc;
      tc.task = "reverse";
      tc.preset = "tiny";
      tc.steps = 12;
      tc.batch = 16;
      tc.seed = seed;
      tc.dropout = dropout;
      Trainer t(tc, makeCpuBackend());
      for (int i = 0; i < tc.steps; ++i) t.step();
      std::vector<float> all;
      forEachTensor(t.model().currentWeights(), [&](const std::string&, const Tensor& w) {
        all.insert(all.end(), w.data.begin(), w.data.end());
      });
      return all;
    };
    const auto a = train(7, 0.1f), b = train(7, 0.1f), c = train(8, 0.1f), d = train(7, 0.0f);
    QVERIFY(a == b);
    QVERIFY(a != c);  // another seed: other data, initialisation and dropout masks
    QVERIFY(a != d);  // dropout changes the steps
  }

  // ---- dropout in the training pass: its backward is the derivative of its forward ----
  // With the masks fixed by the seed the loss is a function of the weights; a central difference
  // of the loss along a few weights must match their gradients (a check independent of PyTorch,
  // whose dropout masks attnviz cannot reproduce).
  void dropoutGradient() {
    auto task = makeTask("copy", {3, 6, "", 50});
    auto loaded = makeTrainingModel(*task, findPreset("tiny"), NormPlacement::Post, 3);
    Model model(loaded, makeCpuBackend());
    Training training(model);
    Inputs in;
    Targets tg;
    std::mt19937_64 rng(4);
    for (int b = 0; b < 4; ++b) {
      const Example e = task->sample(rng);
      in.src.push_back(task->srcIds(e.src));
      std::vector<int> dec{Task::kBos}, want = task->tgtIds(e.tgt);
      dec.insert(dec.end(), want.begin(), want.end());
      want.push_back(Task::kEos);
      in.tgt.push_back(dec);
      tg.tokens.push_back(want);
    }
    TrainOptions opt;
    opt.dropout = 0.3f;
    opt.seed = 99;
    opt.label_smoothing = 0.1f;
    training.zeroGradients();
    const double loss0 = training.forwardBackward(in, tg, opt).loss;
    std::vector<float> grads((size_t)training.parameterCount());
    model.backend().copy_to_host(training.gradients(), grads.data(), training.parameterCount());
    std::vector<float> params((size_t)training.parameterCount());
    model.backend().copy_to_host(training.parameters(), params.data(), training.parameterCount());
    // The weights with the largest gradients, where float32 differences resolve them well.
    std::vector<size_t> order(grads.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::partial_sort(order.begin(), order.begin() + 8, order.end(),
                      [&](size_t x, size_t y) { return std::abs(grads[x]) > std::abs(grads[y]); });
    const float h = 2e-3f;
    for (int k = 0; k < 8; ++k) {
      const size_t i = order[(size_t)k];
      auto lossAt = [&](float v) {
        model.backend().upload(*std::make_unique<HostView>(training.parameters() + i), &v, 4);
        training.zeroGradients();
        return training.forwardBackward(in, tg, opt).loss;
      };
      const double up = lossAt(params[i] + h), down = lossAt(params[i] - h);
      lossAt(params[i]);
      const double numeric = (up - down) / (2.0 * h);
      QVERIFY2(std::abs(numeric - grads[i]) <= 0.02 * std::abs(grads[i]) + 1e-4,
               qPrintable(QString("parameter %1: gradient %2, central difference %3 (loss %4)")
                              .arg(i)
                              .arg(grads[i])
                              .arg(numeric)
                              .arg(loss0)));
    }
  }

  // ---- a model trained here, saved, read back: the same numbers in every view ----
  void savedModelReadsBack() {
    TrainConfig tc;
    tc.task = "copy";
    tc.task_options.min_len = 3;
    tc.task_options.max_len = 6;
    tc.preset = "tiny";
    tc.steps = 5;
    tc.batch = 8;
    Trainer t(tc, makeCpuBackend());
    for (int i = 0; i < tc.steps; ++i) t.step();
    const std::string path = QDir::tempPath().toStdString() + "/attnviz_trained_test.safetensors";
    saveModel(*t.snapshot(), path);
    auto loaded = loadModel(path);
    QCOMPARE(loaded->config.family, std::string("pytorch-nn-transformer"));
    QCOMPARE(loaded->config.model, std::string("Seq2SeqTransformer"));
    QVERIFY(loaded->config.src_vocab == t.task().srcVocab());
    // Every weight exactly as trained.
    const auto bad = compareLayouts(loaded->weights, t.model().currentWeights(), 0.0, 1.0);
    QVERIFY2(bad.empty(), qPrintable(describe(bad)));
    // And the probe's trace from the file equals the trainer's.
    Model reread(loaded, makeCpuBackend());
    const Trace a = t.probeTrace();
    const Example& p = t.task().probe();
    std::vector<int> dec{Task::kBos};
    for (int id : t.task().tgtIds(p.tgt)) dec.push_back(id);
    const Trace b = reread.forward({{t.task().srcIds(p.src)}, {}, {dec}});
    QVERIFY(a.logits.dense().data == b.logits.dense().data);
    QVERIFY(a.blocks.back().denseProbs() == b.blocks.back().denseProbs());
    std::remove(path.c_str());
    // Other families are refused with a message.
    ModelConfig other = loaded->config;
    other.family = "nlp-tutorial";
    other.model = "Transformer";
    QVERIFY(!canSaveModel(other));
  }

  // ---- the tasks ----
  void tasks() {
    std::mt19937_64 rng(5);
    for (const char* name : {"copy", "reverse", "sort"}) {
      auto task = makeTask(name, {3, 12, "", 300});
      QCOMPARE(task->name(), std::string(name));
      QCOMPARE(task->srcVocab()[(size_t)Task::kPad], std::string("<pad>"));
      QCOMPARE(task->tgtVocab()[(size_t)Task::kEos], std::string("<eos>"));
      QCOMPARE((int)task->heldOut().size(), 300);
      std::set<std::vector<std::string>> held;
      for (const auto& e : task->heldOut()) held.insert(e.src);
      for (int i = 0; i < 200; ++i) {
        const Example e = task->sample(rng);
        QVERIFY(e.src.size() >= 3 && e.src.size() <= 12);
        std::vector<std::string> want = e.src;
        if (std::string(name) == "reverse") std::reverse(want.begin(), want.end());
        if (std::string(name) == "sort") std::sort(want.begin(), want.end());
        QVERIFY(e.tgt == want);
        QVERIFY(!held.count(e.src));                          // never a held-out sentence
        for (int id : task->srcIds(e.src)) QVERIFY(id >= 4);  // every word known, no <unk>
      }
    }
    // reorder: the bundled model's language; every target word comes from the lexicon.
    auto reorder = makeTask("reorder");
    for (int i = 0; i < 100; ++i) {
      const Example e = reorder->sample(rng);
      for (int id : reorder->tgtIds(e.tgt)) QVERIFY(id >= 4);
      QVERIFY(e.tgt.size() == e.src.size() + 2);  // the subject and object markers
    }
    QVERIFY(reorder->heldOut().size() >= 100);
  }

  void parallelTask() {
    const QString dir = QDir::tempPath() + "/attnviz_parallel_test";
    QDir().mkpath(dir);
    auto write = [&](const char* name, const QByteArray& text) {
      QFile f(dir + "/" + name);
      f.open(QIODevice::WriteOnly);
      f.write(text);
      return (dir + "/" + name).toStdString();
    };
    QByteArray good;
    for (int i = 0; i < 30; ++i)
      good += QByteArray("ich sehe ") + QByteArray::number(i) + "\ti see " + QByteArray::number(i) +
              "\n";
    auto task = makeTask("parallel", {3, 12, write("good.txt", good), 300});
    QCOMPARE(task->heldOut().size(), size_t(3));  // a tenth held out
    QCOMPARE(task->probe().src.front(), std::string("ich"));
    QVERIFY(std::find(task->tgtVocab().begin(), task->tgtVocab().end(), "see") !=
            task->tgtVocab().end());
    // Errors name the file and the line.
    struct Bad {
      const char* name;
      QByteArray text;
      const char* message;
    };
    const Bad bad[] = {{"notab.txt", "a b\tc d\nno tab here\n", "line 2"},
                       {"empty.txt", "a\t\nb\tc\n", "line 1"},
                       {"one.txt", "a\tb\n", "at least two"},
                       {"latin1.txt", "caf\xe9\tcoffee\nb\tc\n", "not UTF-8"}};
    for (const Bad& b : bad) {
      try {
        makeTask("parallel", {3, 12, write(b.name, b.text), 300});
        QFAIL(b.name);
      } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find(b.message) != std::string::npos, e.what());
      }
    }
    QDir(dir).removeRecursively();
  }

  // ---- training works: a tiny model learns to copy short sequences in a few seconds ----
  void learnsToCopy() {
    TrainConfig tc;
    tc.task = "copy";
    tc.task_options.min_len = 3;
    tc.task_options.max_len = 5;
    tc.task_options.held_out = 50;
    tc.preset = "tiny";
    tc.steps = 300;
    tc.batch = 32;
    tc.optimizer.lr = 3e-3f;
    tc.optimizer.warmup = 30;
    Trainer t(tc, makeCpuBackend());
    Trainer::StepStats first = t.step(), last;
    for (int i = 1; i < tc.steps; ++i) last = t.step();
    QVERIFY2(last.loss < 0.2 * first.loss,
             qPrintable(QString("loss %1 → %2").arg(first.loss).arg(last.loss)));
    const auto ev = t.evaluate();
    QVERIFY2(ev.exact_match >= 0.9,
             qPrintable(QString("held-out exact match %1").arg(ev.exact_match)));
    // The probe's cross-attention: every output position attends most to its own source position
    // (a copy is a diagonal), on average over the heads of the last layer.
    const Trace tr = t.probeTrace();
    const AttentionBlock* cross = tr.block(AttentionKind::Cross, 0);
    QVERIFY(cross);
    int diagonal = 0;
    const int S = cross->k_len;
    for (int i = 0; i < S; ++i) {
      int best = 0;
      float best_p = -1;
      for (int j = 0; j < S; ++j) {
        float p = 0;
        for (int h = 0; h < cross->heads; ++h) p += cross->prob(0, h, i, j);
        if (p > best_p) best_p = p, best = j;
      }
      diagonal += best == i;
    }
    QVERIFY2(diagonal >= S - 1,
             qPrintable(QString("%1 of %2 rows on the diagonal").arg(diagonal).arg(S)));
  }
};

QTEST_APPLESS_MAIN(TestTraining)
#include "test_training.moc"

// Training: gradients and optimizer steps against PyTorch autograd and torch.optim for every
// reference case (every family and class: tools/make_grad_references.py), dropout, determinism,
// the safetensors writer, and training a small model on a task.
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends.h"
#include "cpu_backend.h"
#include "error.h"
#include "model.h"
#include "optimizer.h"
#include "safetensors.h"
#include "test_support.h"
#include "weights.h"

using namespace attnviz;

namespace {

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
    model.enableTraining();
    const LossStats stats = model.forwardBackward(c.inputs, c.targets, c.train);
    const double want_loss = c.meta["first"]["loss"].get<double>();
    QVERIFY2(std::abs(stats.loss - want_loss) <= 1e-5 * std::max(1.0, std::abs(want_loss)),
             qPrintable(QString("loss %1, PyTorch %2").arg(stats.loss, 0, 'g', 9).arg(want_loss)));
    const ModelWeights grads = model.currentGradients();
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
    Optimizer opt(model, options);
    for (int k = 0; k < steps; ++k) {
      model.zeroGradients();
      const LossStats stats = model.forwardBackward(c.inputs, c.targets, c.train);
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
};

QTEST_APPLESS_MAIN(TestTraining)
#include "test_training.moc"

// Gradient attribution (core/train/attribution.h). Against torch autograd
// (tools/make_attribution_references.py, written by the make_attribution_references fixture into
// $ATTNVIZ_ATTR_REF_DIR): the gradient of one logit with respect to every token-embedding row,
// saliency and integrated gradients, for an encoder-decoder (nn.Transformer, pre-norm, source and
// target tokens), decoder-only models (nanoGPT; llama2.c: RMSNorm, rotary positions) and an
// encoder-only masked LM (the wq-tutorial BERT, its MLM head). Without PyTorch (the committed
// tests/data models): completeness at 64 steps, a causal decoder's later tokens get nothing,
// saliency of a one-step path, Spearman's ρ by hand, and what is refused says why.
#include <QtTest>
#include <cmath>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "parity_support.h"
#include "train/attribution.h"

using namespace attnviz;

namespace {

using test::kRelTol;

// The largest |x| of a tensor: what its entries are compared relative to.
double largest(const float* x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, (double)std::abs(x[i]));
  return m;
}

// got against want, each entry relative to the largest |want| (a gradient's entries are small and
// of one scale: relative to 1 would hide a wrong one).
void expectClose(const std::vector<float>& got, const Tensor& want, const QString& what) {
  QCOMPARE(got.size(), want.data.size());
  const double scale = largest(want.ptr(), want.data.size());
  QVERIFY2(scale > 0, qPrintable(what + ": the reference is all zero"));
  const test::Diff d = test::compare(got.data(), want.ptr(), got.size(), scale);
  QVERIFY2(d.worst <= kRelTol, qPrintable(QString("%1 differs by %2 (relative to %3) at %4")
                                              .arg(what)
                                              .arg(d.worst)
                                              .arg(scale)
                                              .arg(d.index)));
}

// The batch's first sentence alone.
Inputs firstSentence(const Inputs& in) {
  Inputs one;
  if (!in.src.empty()) one.src = {in.src[0]};
  if (!in.segments.empty()) one.segments = {in.segments[0]};
  if (!in.tgt.empty()) one.tgt = {in.tgt[0]};
  return one;
}

}  // namespace

class TestAttribution : public QObject {
  Q_OBJECT

  std::shared_ptr<Backend> backend_;

  std::shared_ptr<Model> open(const std::string& path) {
    return std::make_shared<Model>(loadModel(path), backend_);
  }
  std::shared_ptr<Model> committed(const char* name) {
    return open(std::string(ATTNVIZ_TEST_DATA) + "/" + name + ".safetensors");
  }
  static Inputs committedInputs(const char* name) {
    const SafetensorsFile ref =
        SafetensorsFile::open(std::string(ATTNVIZ_TEST_DATA) + "/" + name + ".ref.safetensors");
    return test::referenceInputs(nlohmann::json::parse(ref.metadata().at("inputs")));
  }

 private slots:
  void initTestCase() {
    std::string why;
    backend_ = test::testBackend(&why);
    if (!backend_) QSKIP(why.c_str());
  }

  // Every token row's gradient at the input, saliency, integrated gradients and f against torch
  // autograd; the completeness gap under 1 % at 64 steps where PyTorch's is.
  void matchesAutograd_data() {
    QTest::addColumn<QString>("name");
    for (const char* c : {"torch_pre", "nanogpt", "llama2c", "bert003"}) QTest::newRow(c) << c;
  }
  void matchesAutograd() {
    QFETCH(QString, name);
    const std::string dir = test::fixtureDir("ATTNVIZ_ATTR_REF_DIR");
    if (dir.empty())
      QSKIP("ATTNVIZ_ATTR_REF_DIR is not set (the make_attribution_references fixture sets it)");
    const SafetensorsFile ref =
        SafetensorsFile::open(dir + "/" + name.toStdString() + ".attr.safetensors");
    const auto model =
        open(dir + "/" + nlohmann::json::parse(ref.metadata().at("model")).get<std::string>());
    const nlohmann::json specs = nlohmann::json::parse(ref.metadata().at("attributions"));
    for (size_t n = 0; n < specs.size(); ++n) {
      const nlohmann::json& s = specs[n];
      const std::string key = "a" + std::to_string(n) + ".";
      AttributionOptions o;
      o.position = s["position"];
      o.versus = s["versus"];
      o.steps = s["steps"];
      const Attribution a = attribute(*model, test::referenceInputs(s["inputs"]), o);
      QCOMPARE(a.token, s["token"].get<int>());  // the model chose what PyTorch did
      const Tensor f = ref.toFloat(key + "f");
      const double f1 = f.data[0], f0 = f.data[1];
      QVERIFY2(std::abs(a.f_input - f1) <= kRelTol * std::max(1.0, std::abs(f1)),
               qPrintable(QString("f(input) %1, PyTorch %2").arg(a.f_input).arg(f1)));
      QVERIFY2(std::abs(a.f_baseline - f0) <= kRelTol * std::max(1.0, std::abs(f0)),
               qPrintable(QString("f(baseline) %1, PyTorch %2").arg(a.f_baseline).arg(f0)));
      for (const TokenAttributions& side : a.sides) {
        const std::string sk = key + (side.side == Side::Source ? "src." : "tgt.");
        const QString what = QString::fromStdString(name.toStdString() + " " + sk);
        expectClose(side.gradient, ref.toFloat(sk + "grad"), what + "grad");
        expectClose(side.saliency, ref.toFloat(sk + "saliency"), what + "saliency");
        expectClose(side.integrated, ref.toFloat(sk + "ig"), what + "ig");
      }
      QCOMPARE(a.sides.size(),
               size_t(model->config().hasEncoder() && model->config().hasDecoder() ? 2 : 1));
      if (o.steps >= 64 && s["complete"].get<bool>())
        QVERIFY2(a.gap_relative < 0.01, qPrintable(QString("completeness gap %1 (Σ IG %2, Δf %3)")
                                                       .arg(a.gap_relative)
                                                       .arg(a.ig_total)
                                                       .arg(a.f_input - a.f_baseline)));
    }
  }

  // Without PyTorch: Σ IG against f(input) − f(baseline) at 64 steps, on the committed
  // encoder-decoder (both sides), the wq-tutorial GPT and BERT; the gap shrinks with more steps.
  void completeness_data() {
    QTest::addColumn<QString>("name");
    for (const char* c : {"torch_pre", "torch_post", "gpt003", "bert003"}) QTest::newRow(c) << c;
  }
  void completeness() {
    QFETCH(QString, name);
    const std::string n = name.toStdString();
    auto m = committed(n.c_str());
    AttributionOptions o;
    o.steps = 64;
    const Attribution a = attribute(*m, committedInputs(n.c_str()), o);
    QVERIFY2(a.gap_relative < 0.01,
             qPrintable(QString("gap %1: Σ IG %2, f(input) %3, f(baseline) %4")
                            .arg(a.gap_relative)
                            .arg(a.ig_total)
                            .arg(a.f_input)
                            .arg(a.f_baseline)));
    o.steps = 4;
    const Attribution coarse = attribute(*m, committedInputs(n.c_str()), o);
    QVERIFY(coarse.gap >= a.gap);
    // f(input), from the batch's sentence at α = 1, is the plain pass's own logit (up to the
    // rounding of products over more rows).
    const Trace t = m->forward(firstSentence(committedInputs(n.c_str())));
    QVERIFY(std::abs(a.f_input - t.logits.row(0, a.position)[a.token]) <=
            kRelTol * std::max(1.0, std::abs(a.f_input)));
  }

  // A causal decoder's logit at position i cannot depend on later tokens: their gradient, saliency
  // and IG are exactly 0, and only tokens 0 … i enter the rank correlations.
  void causalTokensAfterThePositionGetNothing() {
    auto m = committed("gpt003");
    AttributionOptions o;
    o.position = 2;
    o.steps = 8;
    const Attribution a = attribute(*m, committedInputs("gpt003"), o);
    QCOMPARE(a.sides.size(), size_t(1));
    const TokenAttributions& s = a.sides[0];
    QCOMPARE(s.compared, 3);
    QVERIFY(s.ids.size() > 3);
    const int d = m->config().d_model;
    for (size_t i = 3; i < s.ids.size(); ++i) {
      QCOMPARE(s.saliency[i], 0.0f);
      QCOMPARE(s.integrated[i], 0.0f);
      for (int k = 0; k < d; ++k) QCOMPARE(s.gradient[i * d + k], 0.0f);
    }
    // The earlier tokens matter.
    QVERIFY(largest(s.integrated.data(), 3) > 0);
  }

  // One step of the midpoint rule is the gradient at α = ½ times the input; the saliency uses the
  // gradient at α = 1: the two differ for a nonlinear model and each is Σ_d of its product.
  void saliencyIsGradientTimesInput() {
    auto m = committed("torch_pre");
    AttributionOptions o;
    o.steps = 1;
    const Attribution a = attribute(*m, committedInputs("torch_pre"), o);
    const int d = m->config().d_model;
    for (const TokenAttributions& s : a.sides)
      for (size_t i = 0; i < s.ids.size(); ++i) {
        double sum = 0, sq = 0;
        for (int k = 0; k < d; ++k) {
          const double gx = (double)s.gradient[i * d + k] * s.input[i * d + k];
          sum += gx;
          sq += gx * gx;
        }
        QVERIFY(std::abs(sum - s.saliency[i]) <= 1e-5 * std::max(1.0, std::abs(sum)));
        QVERIFY(std::abs(std::sqrt(sq) - s.saliency_norm[i]) <=
                1e-5 * std::max(1.0, std::sqrt(sq)));
      }
    // The source side compares with cross-attention, the target side with the decoder's own.
    QCOMPARE(a.sides[0].side, Side::Source);
    QVERIFY(a.sides[0].attention_name.find("cross-attention") != std::string::npos);
    QVERIFY(a.sides[1].attention_name.find("self-attention") != std::string::npos);
    // Attention rows and rollout rows are distributions over the keys.
    for (const TokenAttributions& s : a.sides) {
      double att = 0, roll = 0;
      for (size_t j = 0; j < s.ids.size(); ++j) {
        att += s.attention[j];
        roll += s.rollout[j];
      }
      QVERIFY(std::abs(att - 1) < 1e-4);
      QVERIFY(std::abs(roll - 1) < 1e-4);
    }
  }

  // Spearman's ρ, by hand: a monotone relation is 1, a reversed one −1, ties share their rank.
  void spearmanByHand() {
    QCOMPARE(spearman({1, 2, 3, 4}, {10, 20, 30, 100}), 1.0);
    QCOMPARE(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
    // x ranks 1, 2.5, 2.5, 4; y ranks 1, 2, 3, 4: ρ = Σ dx·dy / √(Σ dx² Σ dy²) = 4.5 / √(4.5·5)
    QVERIFY(std::abs(spearman({1, 2, 2, 3}, {1, 2, 3, 4}) - 4.5 / std::sqrt(4.5 * 5)) < 1e-12);
    QVERIFY(std::isnan(spearman({1}, {1})));
    QVERIFY(std::isnan(spearman({1, 1, 1}, {1, 2, 3})));
  }

  // Bad input says what is wrong.
  void refusals() {
    auto m = committed("torch_pre");
    const Inputs in = committedInputs("torch_pre");
    auto refused = [&](AttributionOptions o, const char* words) {
      const auto e = test::caught([&] { attribute(*m, in, o); });
      QVERIFY2(e && std::string(e->what()).find(words) != std::string::npos,
               e ? e->what() : "no error");
    };
    AttributionOptions o;
    o.steps = 0;
    refused(o, "step count");
    o.steps = AttributionOptions::kMaxSteps + 1;
    refused(o, "step count");
    o = {};
    o.position = 99;
    refused(o, "position");
    o = {};
    o.token = 1 << 20;
    refused(o, "token");
    o = {};
    o.versus = -5;
    refused(o, "versus");
    o = {};
    o.sentence = 7;
    refused(o, "sentence");
    o = {};
    o.layer = 9;
    refused(o, "layer");
    o = {};
    o.head = 64;
    refused(o, "head");
    Inputs empty = in;
    empty.tgt[0].clear();
    QVERIFY(test::caught([&] { attribute(*m, empty, {}); }));
    // A classifier has no token logit to explain.
    auto classifier = committed("classifier003");
    const auto none =
        test::caught([&] { attribute(*classifier, committedInputs("classifier003")); });
    QVERIFY2(none && std::string(none->what()).find("no token head") != std::string::npos,
             none ? none->what() : "no error");
    // Cancelled before the first layer.
    std::atomic<bool> cancel{true};
    o = {};
    o.cancel = &cancel;
    const auto e = test::caught([&] { attribute(*m, in, o); });
    QVERIFY(e && e->kind() == ErrorKind::Cancelled);
  }

  // Progress counts the steps, in batches.
  void progressCountsSteps() {
    auto m = committed("gpt003");
    AttributionOptions o;
    o.steps = 10;
    o.batch = 4;
    std::vector<int> seen;
    o.progress = [&](int done, int total) {
      QCOMPARE(total, 10);
      seen.push_back(done);
    };
    const Attribution a = attribute(*m, committedInputs("gpt003"), o);
    QCOMPARE(seen, (std::vector<int>{4, 8, 10}));  // 10 steps, the input and the baseline
    // The batch size changes nothing but the rounding.
    o.batch = 0;
    o.progress = nullptr;
    const Attribution b = attribute(*m, committedInputs("gpt003"), o);
    for (size_t i = 0; i < a.sides[0].integrated.size(); ++i)
      QVERIFY(std::abs(a.sides[0].integrated[i] - b.sides[0].integrated[i]) <= 1e-5);
  }
};

QTEST_MAIN(TestAttribution)
#include "test_attribution.moc"

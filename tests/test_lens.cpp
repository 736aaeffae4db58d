// The logit lens and the direct logit contributions (core/model/lens.h). Against PyTorch
// (tools/make_lens_references.py, written by the make_lens_references fixture into
// $ATTNVIZ_LENS_REF_DIR): every layer's stream through the final norm and head, for an
// encoder-decoder (nn.Transformer, pre- and post-norm), decoder-only models (nanoGPT, tied;
// llama2.c: RMSNorm, rotary, grouped-query attention, SwiGLU; the wq-tutorial GPT, post-norm) and
// an encoder-only masked LM (the wq-tutorial BERT); every head's, feed-forward block's and
// embedding's contribution. Without PyTorch (the committed tests/data models): the last row is the
// model's own logits bit for bit, the parts add up to the pass's own logit at every position, a
// switched-off head contributes nothing, and what is refused says why.
#include <QtTest>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "model/lens.h"
#include "parity_support.h"

using namespace attnviz;

namespace {

using test::kRelTol;

std::string lensRefDir() {
  const char* d = std::getenv("ATTNVIZ_LENS_REF_DIR");
  return d && *d ? d : "";
}

std::shared_ptr<Model> openModel(const std::string& path, std::shared_ptr<Backend> be) {
  return std::make_shared<Model>(loadModel(path), std::move(be));
}

// |got − want| / max(|want|, 1): the parity suites' relative tolerance.
double relErr(double got, double want) {
  return std::abs(got - want) / std::max(std::abs(want), 1.0);
}

const LogitPart* findPart(const Contributions& c, LogitPart::Kind kind, int layer, int head,
                          AttentionKind attention) {
  for (const LogitPart& p : c.parts)
    if (p.kind == kind && p.layer == layer && p.head == head &&
        (kind != LogitPart::Kind::Head || p.attention == attention))
      return &p;
  return nullptr;
}

}  // namespace

class TestLens : public QObject {
  Q_OBJECT

  std::shared_ptr<Backend> backend_;

  std::shared_ptr<Model> committed(const char* name) {
    return openModel(std::string(ATTNVIZ_TEST_DATA) + "/" + name + ".safetensors", backend_);
  }
  static Inputs committedInputs(const char* name) {
    const SafetensorsFile ref =
        SafetensorsFile::open(std::string(ATTNVIZ_TEST_DATA) + "/" + name + ".ref.safetensors");
    return test::referenceInputs(nlohmann::json::parse(ref.metadata().at("inputs")));
  }

  void addReferenceCases(bool contributions) {
    QTest::addColumn<QString>("name");
    for (const char* c : {"torch_pre", "torch_post", "nanogpt", "llama2c", "gpt003", "bert003"})
      if (!contributions || std::string(c) == "torch_pre" || std::string(c) == "nanogpt" ||
          std::string(c) == "llama2c")
        QTest::newRow(c) << QString(c);
  }

  struct RefCase {
    std::shared_ptr<Model> model;
    SafetensorsFile ref;
    nlohmann::json meta;
    Trace trace;
  };
  RefCase loadRef(const QString& name) {
    const std::string dir = lensRefDir(), base = dir + "/" + name.toStdString();
    SafetensorsFile ref = SafetensorsFile::open(base + ".lens.safetensors");
    nlohmann::json meta;
    for (const auto& [k, v] : ref.metadata()) meta[k] = nlohmann::json::parse(v);
    auto m = openModel(dir + "/" + meta["model"].get<std::string>(), backend_);
    Trace t = m->forward(test::referenceInputs(meta["inputs"]), lensForwardOptions());
    return {m, std::move(ref), meta, std::move(t)};
  }

 private slots:
  void initTestCase() {
    std::string why;
    backend_ = test::testBackend(&why);
    if (!backend_) QSKIP(why.c_str());
  }

  // Every row of the lens, every sentence and position, every logit: PyTorch's hidden state of
  // that layer through the final norm and head, to 1e-4 relative.
  void lensMatchesPyTorch_data() { addReferenceCases(false); }
  void lensMatchesPyTorch() {
    QFETCH(QString, name);
    if (lensRefDir().empty())
      QSKIP("ATTNVIZ_LENS_REF_DIR is not set (the make_lens_references fixture sets it)");
    const RefCase c = loadRef(name);
    const Tensor want = c.ref.toFloat("lens.logits");  // [B, L+1, n, V]
    for (int b = 0; b < (int)want.dim(0); ++b) {
      LensOptions o;
      o.sentence = b;
      o.keep_logits = true;
      const LogitLens lens = logitLens(*c.model, c.trace, o);
      QCOMPARE(lens.rows, (int)want.dim(1));
      QCOMPARE(lens.positions, (int)want.dim(2));
      QCOMPARE(lens.vocab, (int)want.dim(3));
      const size_t per = (size_t)lens.logits.size();
      const test::Diff d = test::compare(lens.logits.ptr(), want.ptr() + b * per, per, 1.0);
      QVERIFY2(
          d.worst <= kRelTol,
          qPrintable(QString("sentence %1: differs by %2 at %3").arg(b).arg(d.worst).arg(d.index)));
      // The top token of each cell is the argmax of PyTorch's row.
      for (int r = 0; r < lens.rows; ++r)
        for (int i = 0; i < lens.positions; ++i) {
          const float* row = want.ptr() + b * per + ((size_t)r * lens.positions + i) * lens.vocab;
          const float best = *std::max_element(row, row + lens.vocab);
          QCOMPARE(row[lens.top_ids[lens.cell(r, i) * lens.top_k]], best);
        }
    }
  }

  // Every head's, feed-forward block's and embedding's part against PyTorch's, and the sum against
  // the model's own logit.
  void contributionsMatchPyTorch_data() { addReferenceCases(true); }
  void contributionsMatchPyTorch() {
    QFETCH(QString, name);
    if (lensRefDir().empty())
      QSKIP("ATTNVIZ_LENS_REF_DIR is not set (the make_lens_references fixture sets it)");
    const RefCase c = loadRef(name);
    const ModelConfig& cfg = c.model->config();
    int n = 0;
    for (const auto& spec : c.meta["contributions"]) {
      const std::string key = "c" + std::to_string(n++) + ".";
      ContributionOptions o;
      o.sentence = spec["sentence"];
      o.position = spec["position"];
      o.versus = spec["versus"];
      const Contributions got = directContributions(*c.model, c.trace, o);
      QCOMPARE(got.token, spec["token"].get<int>());  // the model chose what PyTorch did
      const double logit = c.ref.toFloat(key + "logit").data[0];
      QVERIFY2(relErr(got.logit, logit) <= kRelTol, qPrintable(QString::number(got.logit)));
      QVERIFY2(
          relErr(got.total, got.logit) <= kRelTol,
          qPrintable(QString("parts sum to %1, the logit is %2").arg(got.total).arg(got.logit)));
      auto expect = [&](const LogitPart* p, double want, const QString& what) {
        QVERIFY2(p, qPrintable(what + ": no such part"));
        QVERIFY2(relErr(p->value, want) <= kRelTol,
                 qPrintable(QString("%1: %2, PyTorch %3").arg(what).arg(p->value).arg(want)));
      };
      using K = LogitPart::Kind;
      expect(findPart(got, K::TokenEmbedding, -1, -1, {}),
             c.ref.toFloat(key + "token_embedding").data[0], "token embedding");
      if (c.ref.contains(key + "positions"))
        expect(findPart(got, K::Positions, -1, -1, {}), c.ref.toFloat(key + "positions").data[0],
               "positions");
      else  // rotary positions add nothing to the stream
        QVERIFY(!findPart(got, K::Positions, -1, -1, {}));
      const Tensor self = c.ref.toFloat(key + "self"), ffn = c.ref.toFloat(key + "ffn");
      const bool cross = cfg.hasCross();
      const Tensor crossed = cross ? c.ref.toFloat(key + "cross") : Tensor();
      for (int l = 0; l < (int)self.dim(0); ++l) {
        expect(findPart(got, K::FeedForward, l, -1, {}), ffn.data[l],
               QString("layer %1 feed-forward").arg(l));
        for (int h = 0; h < (int)self.dim(1); ++h) {
          expect(findPart(got, K::Head, l, h, AttentionKind::DecoderSelf),
                 self.data[l * self.dim(1) + h], QString("layer %1 self head %2").arg(l).arg(h));
          if (cross)
            expect(findPart(got, K::Head, l, h, AttentionKind::Cross),
                   crossed.data[l * crossed.dim(1) + h],
                   QString("layer %1 cross head %2").arg(l).arg(h));
        }
      }
    }
  }

  // The lens's last row is the pass's own logits, bit for bit (the same ops on the same rows), and
  // row 0 of a model whose layers matter differs from it.
  void lastRowIsTheModelsLogits_data() {
    QTest::addColumn<QString>("name");
    for (const char* c : {"torch_pre", "torch_post", "gpt003", "bert003", "nlp_variants"})
      QTest::newRow(c) << QString(c);
  }
  void lastRowIsTheModelsLogits() {
    QFETCH(QString, name);
    const std::string n = name.toStdString();
    auto m = committed(n.c_str());
    const Trace t = m->forward(committedInputs(n.c_str()), lensForwardOptions());
    for (int b = 0; b < t.batch; ++b) {
      LensOptions o;
      o.sentence = b;
      o.keep_logits = true;
      const LogitLens lens = logitLens(*m, t, o);
      const int64_t per = (int64_t)lens.positions * lens.vocab;
      QVERIFY(std::memcmp(lens.logits.ptr() + (lens.rows - 1) * per, t.logits.row(b, 0),
                          per * sizeof(float)) == 0);
      QVERIFY(std::memcmp(lens.logits.ptr(), t.logits.row(b, 0), per * sizeof(float)) != 0);
      // The default target is the model's choice: rank 1 in the last row.
      for (int i = 0; i < lens.positions; ++i)
        QCOMPARE(lens.target_ranks[lens.cell(lens.rows - 1, i)], 1);
    }
  }

  // Without PyTorch: at every position of every sentence, the parts add up to the pass's own
  // logit, and to the difference of two logits.
  void contributionsSumToTheLogit() {
    auto m = committed("torch_pre");
    const Trace t = m->forward(committedInputs("torch_pre"), lensForwardOptions());
    for (int b = 0; b < t.batch; ++b)
      for (int i = 0; i < t.tgt_len; ++i)
        for (int versus : {-1, 4}) {
          ContributionOptions o;
          o.sentence = b;
          o.position = i;
          o.versus = versus;
          const Contributions c = directContributions(*m, t, o);
          QVERIFY2(
              relErr(c.total, c.logit) <= kRelTol,
              qPrintable(QString("b %1 i %2: %3 vs %4").arg(b).arg(i).arg(c.total).arg(c.logit)));
          for (size_t k = 1; k < c.parts.size(); ++k)
            QVERIFY(std::abs(c.parts[k - 1].value) >= std::abs(c.parts[k].value));
        }
  }

  // A head switched off (its context 0) contributes exactly nothing; the rest still add up.
  void switchedOffHeadContributesNothing() {
    auto m = committed("torch_pre");
    ForwardOptions fo = lensForwardOptions();
    HeadIntervention off;
    off.kind = AttentionKind::Cross;
    off.layer = 1;
    off.head = 2;
    off.off = true;
    fo.interventions = {off};
    const Trace t = m->forward(committedInputs("torch_pre"), fo);
    const Contributions c = directContributions(*m, t);
    const LogitPart* p = findPart(c, LogitPart::Kind::Head, 1, 2, AttentionKind::Cross);
    QVERIFY(p);
    QCOMPARE(p->value, 0.0);
    QVERIFY(relErr(c.total, c.logit) <= kRelTol);
  }

  // What is refused says why.
  void refusals() {
    auto post = committed("torch_post");
    const Trace tp = post->forward(committedInputs("torch_post"), lensForwardOptions());
    auto e = test::caught([&] { directContributions(*post, tp); });
    QVERIFY(e && std::string(e->what()).find("post-norm") != std::string::npos);
    auto bert = committed("bert003");
    const Trace tb = bert->forward(committedInputs("bert003"), lensForwardOptions());
    e = test::caught([&] { directContributions(*bert, tb); });
    QVERIFY(e && std::string(e->what()).find("masked-LM head") != std::string::npos);
    auto pre = committed("torch_pre");
    const Trace plain = pre->forward(committedInputs("torch_pre"));  // no activations kept
    e = test::caught([&] { logitLens(*pre, plain); });
    QVERIFY(e && std::string(e->what()).find("keep_activations") != std::string::npos);
    const Trace t = pre->forward(committedInputs("torch_pre"), lensForwardOptions());
    LensOptions lo;
    lo.target = (int)t.logits.dense().dim(2);
    e = test::caught([&] { logitLens(*pre, t, lo); });
    QVERIFY(e && std::string(e->what()).find("not in the output vocabulary") != std::string::npos);
    lo = {};
    lo.sentence = t.batch;
    QVERIFY(test::caught([&] { logitLens(*pre, t, lo); }));
    ContributionOptions co;
    co.position = t.tgt_len;
    QVERIFY(test::caught([&] { directContributions(*pre, t, co); }));
    co = {};
    co.versus = -2;  // only −1 means none
    QVERIFY(test::caught([&] { directContributions(*pre, t, co); }));
  }
};

QTEST_MAIN(TestLens)
#include "test_lens.moc"

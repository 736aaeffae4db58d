// Activation patching (core/model/patching.h). Against PyTorch (tools/make_patching_references.py,
// written by the make_patching_references fixture into $ATTNVIZ_PATCHING_REF_DIR): every cell of
// every heatmap — each layer's residual stream at each position, each head of each block — is the
// logit difference PyTorch gets when hooks patch the same activation, for an encoder-decoder
// (nn.Transformer, post-norm), a decoder-only model (nanoGPT) and an encoder-only masked LM (the
// wq-tutorial BERT). Without PyTorch (the committed tests/data models): the invariants that hold
// whatever the weights (patching.h), what is refused says why, and a cancel stops the sweep.
#include <QtTest>
#include <atomic>
#include <nlohmann/json.hpp>
#include <set>

#include "io/safetensors.h"
#include "model/patching.h"
#include "parity_support.h"

using namespace attnviz;

namespace {

std::string patchingRefDir() {
  const char* d = std::getenv("ATTNVIZ_PATCHING_REF_DIR");
  return d && *d ? d : "";
}

std::shared_ptr<Model> openModel(const std::string& path, std::shared_ptr<Backend> be) {
  return std::make_shared<Model>(loadModel(path), std::move(be));
}

// One sentence's inputs from a reference's {"src_ids": [...], "tgt_ids": [...], "segment_ids"}.
Inputs sentence(const nlohmann::json& j) {
  Inputs in;
  if (j.contains("src_ids")) in.src = {j["src_ids"].get<std::vector<int>>()};
  if (j.contains("segment_ids")) in.segments = {j["segment_ids"].get<std::vector<int>>()};
  if (j.contains("tgt_ids")) in.tgt = {j["tgt_ids"].get<std::vector<int>>()};
  return in;
}

std::string mapName(const PatchHeatmap& m) {
  if (m.heads) return std::string("heads_") + attentionKindName(m.block);
  return m.side == Side::Source ? "residual_enc" : "residual_dec";
}

// |got − want| ≤ 1e-4 · max(|want|, 1): the metric, a logit difference, to 1e-4 relative.
bool close(double got, double want) {
  return std::abs(got - want) <= test::kRelTol * std::max(std::abs(want), 1.0);
}

// The positions where two inputs of one side differ (token or segment).
std::set<int> differing(const std::vector<int>& a, const std::vector<int>& b) {
  std::set<int> d;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) d.insert((int)i);
  return d;
}

// Checks the invariants of patching.h on a result; "" when they hold, else the first cell that
// breaks one. m(patched) = m(corrupted) means 0 % restored, = m(clean) 100 %.
std::string checkInvariants(const Model& m, const PatchingResult& r, const Inputs& clean,
                            const Inputs& corrupted, int* checked) {
  const ModelConfig& c = m.config();
  std::set<int> diff[2];  // per side
  if (c.hasEncoder()) {
    diff[0] = differing(clean.src[0], corrupted.src[0]);
    if (!clean.segments.empty())
      for (int p : differing(clean.segments[0], corrupted.segments[0])) diff[0].insert(p);
  }
  if (c.hasDecoder()) diff[1] = differing(clean.tgt[0], corrupted.tgt[0]);
  const size_t differences = diff[0].size() + diff[1].size();
  std::string broken;
  auto expect = [&](const PatchHeatmap& map, int row, int col, double want, const char* rule) {
    ++*checked;
    const double got = map.metric[map.cell(row, col)];
    if (broken.empty() && !close(got, want))
      broken = map.title + " " + map.row_labels[row] + " column " + std::to_string(col) + ": " +
               rule + ": m = " + std::to_string(got) + ", expected " + std::to_string(want);
  };
  for (const PatchHeatmap& map : r.maps) {
    const int s = map.side == Side::Source ? 0 : 1;
    const bool other_same = diff[1 - s].empty();  // the other stack's input is the same
    if (map.heads) {
      // A block whose inputs agree in both runs: the encoder's self-attention when the sources
      // agree; the decoder's first self-attention layer when the targets agree (it reads the
      // target's embeddings alone).
      for (int l = 0; l < map.rows; ++l) {
        const bool agree = map.block == AttentionKind::EncoderSelf   ? diff[0].empty()
                           : map.block == AttentionKind::DecoderSelf ? diff[1].empty() && l == 0
                                                                     : false;
        if (agree)
          for (int h = 0; h < map.cols; ++h)
            expect(map, l, h, r.corrupted, "a head whose inputs agree restores 0 %");
      }
      continue;
    }
    const int L = map.rows - 1;
    // The embeddings where the tokens agree; the only differing token's, 100 %.
    for (int p = 0; p < map.cols; ++p) {
      if (!diff[s].count(p))
        expect(map, 0, p, r.corrupted, "the embeddings where the tokens agree restore 0 %");
      else if (differences == 1)
        expect(map, 0, p, r.clean, "the one differing token's embeddings restore 100 %");
    }
    // The stack whose logits are read: its last layer's stream is read at each position alone.
    if (map.side == r.stack)
      for (int p = 0; p < map.cols; ++p)
        expect(map, L, p, p == r.position ? r.clean : r.corrupted,
               "the last layer's stream restores 100 % at the explained position, 0 % elsewhere");
    // Every row of a stack whose input is the same as far as it reads it: a causal decoder up to
    // its first differing position (when the source agrees), an encoder whose source agrees.
    const bool causal = map.side == Side::Target;
    const int first = diff[s].empty() ? map.cols : *diff[s].begin();
    if (other_same || map.side == Side::Source)
      for (int row = 1; row <= L; ++row)
        for (int p = 0; p < (causal ? first : diff[s].empty() ? map.cols : 0); ++p)
          expect(map, row, p, r.corrupted, "a stream that reads only agreeing tokens restores 0 %");
  }
  return broken;
}

}  // namespace

class TestPatching : public QObject {
  Q_OBJECT

  std::shared_ptr<Backend> backend_;

  std::shared_ptr<Model> committed(const char* name) {
    return openModel(std::string(ATTNVIZ_TEST_DATA) + "/" + name + ".safetensors", backend_);
  }

 private slots:
  void initTestCase() {
    std::string why;
    backend_ = test::testBackend(&why);
    if (!backend_) QSKIP(why.c_str());
  }

  // Every cell of every heatmap against PyTorch's hooks, the defaults (answer, foil) and both runs'
  // metrics too; then the invariants on the same results.
  void matchesPyTorch_data() {
    QTest::addColumn<QString>("name");
    for (const char* c : {"torch_post", "nanogpt", "bert003"}) QTest::newRow(c) << QString(c);
  }
  void matchesPyTorch() {
    QFETCH(QString, name);
    const std::string dir = patchingRefDir();
    if (dir.empty())
      QSKIP("ATTNVIZ_PATCHING_REF_DIR is not set (the make_patching_references fixture sets it)");
    const SafetensorsFile ref =
        SafetensorsFile::open(dir + "/" + name.toStdString() + ".patch.safetensors");
    nlohmann::json meta;
    for (const auto& [k, v] : ref.metadata()) meta[k] = nlohmann::json::parse(v);
    auto m = openModel(dir + "/" + meta["model"].get<std::string>(), backend_);
    const Inputs clean = sentence(meta["clean"]), corrupted = sentence(meta["corrupted"]);
    PatchOptions o;
    o.position = meta["position"].get<int>();
    const PatchingResult r = patchActivations(*m, clean, corrupted, o);
    QCOMPARE(r.answer, meta["answer"].get<int>());
    QCOMPARE(r.foil, meta["foil"].get<int>());
    QVERIFY(close(r.clean, meta["clean_metric"].get<double>()));
    QVERIFY(close(r.corrupted, meta["corrupted_metric"].get<double>()));
    std::set<std::string> names;
    int cells = 0;
    for (const PatchHeatmap& map : r.maps) {
      const std::string key = mapName(map);
      names.insert(key);
      QVERIFY2(ref.find(key + ".metric"), qPrintable(QString::fromStdString(key)));
      const Tensor want = ref.toFloat(key + ".metric");
      QCOMPARE((int)want.dim(0), map.rows);
      QCOMPARE((int)want.dim(1), map.cols);
      for (int i = 0; i < map.rows; ++i)
        for (int j = 0; j < map.cols; ++j, ++cells) {
          const double w = want.ptr()[(int64_t)i * map.cols + j];
          const double got = map.metric[map.cell(i, j)];
          QVERIFY2(close(got, w), qPrintable(QString("%1 %2 column %3: %4, PyTorch %5")
                                                 .arg(QString::fromStdString(map.title))
                                                 .arg(QString::fromStdString(map.row_labels[i]))
                                                 .arg(j)
                                                 .arg(got)
                                                 .arg(w)));
          const double fraction = (w - r.corrupted) / (r.clean - r.corrupted);
          QVERIFY(std::abs(map.restored[map.cell(i, j)] - fraction) <=
                  test::kRelTol * std::max(std::abs(w), 1.0) / std::abs(r.clean - r.corrupted) +
                      1e-9);
        }
    }
    QCOMPARE(r.runs, cells);
    int checked = 0;
    const std::string broken = checkInvariants(*m, r, clean, corrupted, &checked);
    QVERIFY2(broken.empty(), broken.c_str());
    QVERIFY(checked > 0);
  }

  // The invariants on the committed models, with a corrupted source, a corrupted target, a
  // decoder-only model (post-norm) and an encoder-only one (segments kept, another position
  // explained).
  void invariants_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("side");  // which input is corrupted
    QTest::addColumn<int>("position");  // changed
    QTest::addColumn<int>("token");     // its new id
    QTest::addColumn<int>("explained");
    QTest::newRow("torch_post source") << "torch_post"
                                       << "src" << 2 << 8 << -1;
    QTest::newRow("torch_post target") << "torch_post"
                                       << "tgt" << 3 << 8 << -1;
    QTest::newRow("torch_pre source") << "torch_pre"
                                      << "src" << 1 << 5 << -1;
    QTest::newRow("gpt003") << "gpt003"
                            << "tgt" << 4 << 5 << -1;
    QTest::newRow("bert003") << "bert003"
                             << "src" << 6 << 11 << 2;
  }
  void invariants() {
    QFETCH(QString, name);
    QFETCH(QString, side);
    QFETCH(int, position);
    QFETCH(int, token);
    QFETCH(int, explained);
    auto m = committed(name.toStdString().c_str());
    const SafetensorsFile ref = SafetensorsFile::open(std::string(ATTNVIZ_TEST_DATA) + "/" +
                                                      name.toStdString() + ".ref.safetensors");
    const Inputs batch = test::referenceInputs(nlohmann::json::parse(ref.metadata().at("inputs")));
    Inputs clean;  // the batch's first sentence
    if (!batch.src.empty()) clean.src = {batch.src[0]};
    if (!batch.segments.empty()) clean.segments = {batch.segments[0]};
    if (!batch.tgt.empty()) clean.tgt = {batch.tgt[0]};
    Inputs corrupted = clean;
    (side == "src" ? corrupted.src : corrupted.tgt)[0].at(position) = token;
    PatchOptions o;
    o.position = explained;
    std::vector<int> progress;
    o.progress = [&](int done, int total) {
      progress.push_back(done);
      QVERIFY(done <= total);
    };
    o.batch_rows = 40;  // several passes, so that batches are tested too
    const PatchingResult r = patchActivations(*m, clean, corrupted, o);
    QVERIFY(progress.size() > 1);
    QVERIFY(std::is_sorted(progress.begin(), progress.end()));
    QCOMPARE(progress.back(), r.runs);
    int checked = 0;
    const std::string broken = checkInvariants(*m, r, clean, corrupted, &checked);
    QVERIFY2(broken.empty(), broken.c_str());
    QVERIFY(checked >= 10);
    // The same sweep in one batch gives the same numbers (to rounding).
    o.batch_rows = 1 << 20;
    o.progress = nullptr;
    const PatchingResult one = patchActivations(*m, clean, corrupted, o);
    QCOMPARE(one.maps.size(), r.maps.size());
    for (size_t k = 0; k < r.maps.size(); ++k)
      for (size_t i = 0; i < r.maps[k].metric.size(); ++i)
        QVERIFY(close(one.maps[k].metric[i], r.maps[k].metric[i]));
  }

  // What is refused says why; a cancel mid-sweep stops it with Error(Cancelled).
  void refusals() {
    auto m = committed("gpt003");
    Inputs clean, corrupted;
    clean.tgt = {{1, 3, 4, 6, 8, 3, 9, 10}};
    corrupted.tgt = {{1, 3, 4, 6, 5, 3, 9}};
    auto e = test::caught([&] { patchActivations(*m, clean, corrupted); });
    QVERIFY(e && e->kind() == ErrorKind::BadInput);
    QVERIFY2(
        std::string(e->what()).find("clean one has 8, the corrupted one 7") != std::string::npos,
        e->what());
    e = test::caught([&] { patchActivations(*m, clean, clean); });
    QVERIFY(e && std::string(e->what()).find("clean and corrupted give the same logit difference; "
                                             "nothing to restore") != std::string::npos);
    corrupted.tgt = {{1, 3, 4, 6, 5, 3, 9, 10}};
    Inputs bad = corrupted;
    bad.tgt[0][2] = m->config().tgt_vocab.size() + 5;  // out of the vocabulary
    e = test::caught([&] { patchActivations(*m, clean, bad); });
    QVERIFY(e && e->kind() == ErrorKind::BadInput);
    PatchOptions o;
    o.position = 8;
    e = test::caught([&] { patchActivations(*m, clean, corrupted, o); });
    QVERIFY(e && std::string(e->what()).find("past the input's 8 positions") != std::string::npos);
    o = {};
    o.answer = o.foil = 4;
    e = test::caught([&] { patchActivations(*m, clean, corrupted, o); });
    QVERIFY(e && std::string(e->what()).find("the same token") != std::string::npos);
    o = {};
    o.foil = m->config().tgt_vocab.size();
    e = test::caught([&] { patchActivations(*m, clean, corrupted, o); });
    QVERIFY(e && std::string(e->what()).find("not in the output vocabulary") != std::string::npos);
    // Two sentences in one input.
    Inputs two = clean;
    two.tgt.push_back(clean.tgt[0]);
    QVERIFY(test::caught([&] { patchActivations(*m, two, corrupted); }));

    // Cancelled after the first batch: an error, no result.
    std::atomic<bool> cancel{false};
    o = {};
    o.batch_rows = 16;
    o.cancel = &cancel;
    int calls = 0;
    o.progress = [&](int, int) {
      ++calls;
      cancel = true;
    };
    e = test::caught([&] { patchActivations(*m, clean, corrupted, o); });
    QVERIFY(e && e->kind() == ErrorKind::Cancelled);
    QCOMPARE(calls, 1);
  }
};

QTEST_MAIN(TestPatching)
#include "test_patching.moc"

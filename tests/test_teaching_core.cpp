// The core pieces behind the teaching views: sampling (the generator, the filtered distribution,
// reproducible draws), beam search against an independent PyTorch beam search on the bundled
// models, switched-off heads against PyTorch with that head's output zeroed, temperature-scaled
// heads, head statistics and attention rollout against hand-computed cases.
#include <QtTest>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "arch/bundled.h"
#include "base/error.h"
#include "block_support.h"
#include "io/safetensors.h"
#include "model/decoding.h"
#include "model/head_stats.h"
#include "model/model.h"
#include "model/search.h"
#include "test_support.h"

using namespace attnviz;

namespace {

// Beam scores are sums of float32 log-probabilities over ≤ 20 steps: PyTorch and the core differ
// by ~1e-5 at most (tools/make_search_references.py keeps every decision ≥ 1e-3 apart).
constexpr double kScoreTol = 2e-4;
// As tests/test_parity.cpp: probabilities 1e-5 absolute, logits 1e-4 relative to max(|ref|, 1).
constexpr double kProbTol = 1e-5;
constexpr double kRelTol = 1e-4;

std::string modelPath(const std::string& name) {
  if (name == "gpt003") return std::string(ATTNVIZ_TEST_DATA) + "/gpt003.safetensors";
  return std::string(ATTNVIZ_SOURCE_DIR) + "/resources/models/" + name + ".safetensors";
}

// One data row per reference case: "MODEL<detail> #index", carrying the index.
template <class Detail>
void addCaseRows(const nlohmann::json& cases, Detail detail) {
  QTest::addColumn<int>("index");
  for (size_t k = 0; k < cases.size(); ++k) {
    const QString name = QString::fromStdString(cases[k]["model"].get<std::string>()) +
                         detail(cases[k]) + QStringLiteral(" #%1").arg(k);
    QTest::newRow(name.toUtf8().constData()) << int(k);
  }
}

AttentionKind kindByName(const std::string& n) {
  AttentionKind k;
  if (attentionKindNamed(n, &k)) return k;
  throw std::runtime_error("unknown kind " + n);
}

// A block of one sentence and one head from a row-major [q, k] matrix.
AttentionBlock block1(AttentionKind kind, int layer, int q, int k, const std::vector<float>& p,
                      bool causal = false) {
  return blockOfProbs(kind, layer, 1, q, k, p, causal);
}

}  // namespace

class TestTeachingCore : public QObject {
  Q_OBJECT

  std::shared_ptr<Backend> backend_;
  std::map<std::string, std::shared_ptr<Model>> models_;
  SafetensorsFile ref_;
  nlohmann::json beams_, offs_;

  const Model& model(const std::string& name) {
    auto& m = models_[name];
    if (!m) m = std::make_shared<Model>(loadModel(modelPath(name)), backend_);
    return *m;
  }

 private slots:
  void initTestCase() {
    std::string why;
    backend_ = test::testBackend(&why);
    if (!backend_) QSKIP(why.c_str());
    const std::string path = test::referenceDir() + "/search_references.safetensors";
    ref_ = SafetensorsFile::open(path);
    beams_ = nlohmann::json::parse(ref_.metadata().at("beam"));
    offs_ = nlohmann::json::parse(ref_.metadata().at("head_off"));
    QVERIFY(beams_.size() >= 5);
    QVERIFY(offs_.size() >= 4);
  }

  // ---- sampling ------------------------------------------------------------------------------

  // SplitMix64's published first outputs for seed 0.
  void splitMixKnownValues() {
    SplitMix64 r(0);
    QCOMPARE(r.next(), 0xe220a8397b1dcdafULL);
    QCOMPARE(r.next(), 0x6e789e6aa1b965f4ULL);
    QCOMPARE(r.next(), 0x06c45d188009454fULL);
    SplitMix64 u(7);
    for (int k = 0; k < 1000; ++k) {
      const double x = u.uniform();
      QVERIFY(x >= 0.0 && x < 1.0);
    }
  }

  // softmax([1, 2, 3, 0]) = [0.0871443, 0.2368828, 0.6439142, 0.0320586].
  void samplingDistributionHandComputed() {
    const float logits[] = {1, 2, 3, 0};
    SamplingOptions o;
    auto d = samplingDistribution(logits, 4, o);
    QCOMPARE(d.size(), size_t(4));
    const int order[] = {2, 1, 0, 3};
    const double p[] = {0.6439142, 0.2368828, 0.0871443, 0.0320586};
    for (int r = 0; r < 4; ++r) {
      QCOMPARE(d[size_t(r)].first, order[r]);
      QVERIFY(std::abs(d[size_t(r)].second - p[r]) < 1e-6);
    }
    o.top_k = 2;  // 0.6439 / 0.8808, 0.2369 / 0.8808
    d = samplingDistribution(logits, 4, o);
    QCOMPARE(d.size(), size_t(2));
    QVERIFY(std::abs(d[0].second - 0.7310586) < 1e-6);
    QVERIFY(std::abs(d[1].second - 0.2689414) < 1e-6);
    o.top_k = 0;
    o.top_p = 0.7f;  // 0.6439 < 0.7 ≤ 0.6439 + 0.2369: two tokens
    d = samplingDistribution(logits, 4, o);
    QCOMPARE(d.size(), size_t(2));
    o.top_p = 0.6f;  // the first token alone reaches 0.6
    d = samplingDistribution(logits, 4, o);
    QCOMPARE(d.size(), size_t(1));
    QCOMPARE(d[0].first, 2);
    QCOMPARE(d[0].second, 1.0);
    o.top_p = 1.0f;
    o.temperature =
        2.0f;  // softmax([0.5, 1, 1.5, 0]) = [0.1674051, 0.2760043, 0.4550542, 0.1015363]
    d = samplingDistribution(logits, 4, o);
    QVERIFY(std::abs(d[0].second - 0.4550542) < 1e-6);
    QVERIFY(std::abs(d[3].second - 0.1015363) < 1e-6);
    // Ties: the lower id first.
    const float tied[] = {1, 1, 0};
    d = samplingDistribution(tied, 3, SamplingOptions());
    QCOMPARE(d[0].first, 0);
    QCOMPARE(d[1].first, 1);
    // Bad options are errors a user can act on.
    for (auto bad :
         {SamplingOptions{0.0f}, SamplingOptions{1.0f, -1}, SamplingOptions{1.0f, 0, 0.0f}}) {
      try {
        samplingDistribution(logits, 4, bad);
        QFAIL("expected an error");
      } catch (const Error& e) {
        QCOMPARE(e.kind(), ErrorKind::BadInput);
      }
    }
  }

  void sampleTokenFrequencies() {
    const std::vector<std::pair<int, double>> d{{4, 0.5}, {1, 0.3}, {9, 0.2}};
    QCOMPARE(sampleToken(d, 0.0), 4);
    QCOMPARE(sampleToken(d, 0.4999), 4);
    QCOMPARE(sampleToken(d, 0.5), 1);
    QCOMPARE(sampleToken(d, 0.7999), 1);
    QCOMPARE(sampleToken(d, 0.8), 9);
    QCOMPARE(sampleToken(d, 0.9999999), 9);
    // 20000 draws: each frequency within 4.5 standard deviations of its probability.
    SplitMix64 rng(12345);
    std::map<int, int> n;
    const int N = 20000;
    for (int k = 0; k < N; ++k) ++n[sampleToken(d, rng.uniform())];
    for (const auto& [id, p] : d) {
      const double sd = std::sqrt(p * (1 - p) / N);
      QVERIFY2(std::abs(double(n[id]) / N - p) < 4.5 * sd, qPrintable(QString::number(id)));
    }
  }

  void samplingIsReproducible() {
    const Model& m = model("reorder");
    const std::vector<int> src = m.encodeSource("the big dog sees a small cat");
    SamplingOptions o;
    o.temperature = 2.5f;
    o.seed = 42;
    const SampleResult a = sampleDecode(m, src, {}, o);
    const SampleResult b = sampleDecode(m, src, {}, o);
    QCOMPARE(a.ids, b.ids);
    QCOMPARE(a.steps.size(), a.ids.size());
    double lp = 0;
    for (const auto& s : a.steps) {
      QVERIFY(s.prob > 0 && s.prob <= 1);
      QVERIFY(s.candidates >= 1);
      lp += std::log(s.model_prob);
    }
    QVERIFY(std::abs(lp - a.log_prob) < 1e-9);
    // Hot sampling: other seeds give other sentences.
    std::set<std::vector<int>> seen;
    for (uint64_t seed = 0; seed < 6; ++seed) {
      o.seed = seed;
      seen.insert(sampleDecode(m, src, {}, o).ids);
    }
    QVERIFY(seen.size() >= 3);
    // top-k 1 is greedy decoding, whatever the temperature and seed.
    o.top_k = 1;
    QCOMPARE(sampleDecode(m, src, {}, o).ids, greedyDecode(m, src));
    o.top_k = 0;
    o.top_p = 1e-6f;  // only the most probable token: greedy again
    QCOMPARE(sampleDecode(m, src, {}, o).ids, greedyDecode(m, src));
  }

  // ---- beam search ---------------------------------------------------------------------------

  void beamSearchMatchesPyTorch_data() {
    addCaseRows(beams_, [](const nlohmann::json& c) {
      return QStringLiteral(" w%1 a%2")
          .arg(c["width"].get<int>())
          .arg(c["length_penalty"].get<double>());
    });
  }

  void beamSearchMatchesPyTorch() {
    QFETCH(int, index);
    const auto& c = beams_[size_t(index)];
    const Model& m = model(c["model"].get<std::string>());
    BeamOptions o;
    o.width = c["width"];
    o.length_penalty = c["length_penalty"].get<float>();
    o.max_new_tokens = c["max_new_tokens"];
    o.pruned_shown = 3;
    const auto src = c["src_ids"].get<std::vector<int>>();
    const BeamResult r = beamSearch(m, src, c["prefix"].get<std::vector<int>>(), o);
    const auto& want = c["final"];
    QCOMPARE(r.final.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      const BeamNode& n = r.nodes[size_t(r.final[k])];
      const std::string where = "hypothesis " + std::to_string(k);
      QVERIFY2(r.path(r.final[k]) == want[k]["ids"].get<std::vector<int>>(), where.c_str());
      QVERIFY2(std::abs(n.score - want[k]["score"].get<double>()) < kScoreTol, where.c_str());
      QVERIFY2(std::abs(n.ranked - want[k]["ranked"].get<double>()) < kScoreTol, where.c_str());
      QCOMPARE(std::string(n.state == BeamNode::State::Finished ? "finished" : "cut"),
               want[k]["state"].get<std::string>());
      QCOMPARE(n.rank, int(k));
      // The score is the sum of the log-probabilities on the path.
      double sum = 0;
      for (int x = r.final[k]; x > 0; x = r.nodes[size_t(x)].parent)
        sum += r.nodes[size_t(x)].log_prob;
      QVERIFY(std::abs(sum - n.score) < 1e-9);
    }
    // The tree: parents first; as many kept hypotheses per step as there were slots.
    for (size_t k = 1; k < r.nodes.size(); ++k) QVERIFY(r.nodes[k].parent < int(k));
    if (o.width == 1 && o.length_penalty == 0)
      QCOMPARE(r.path(r.best()), greedyDecode(m, src, o.max_new_tokens, r.prefix));
  }

  // Width 1 is greedy decoding, with and without the look-ahead mask (which reruns the decoder).
  void beamWidthOneIsGreedy() {
    const Model& m = model("reverse");
    const std::vector<int> src = m.encodeSource("a 3 b 7 x");
    for (bool subsequent : {true, false}) {
      BeamOptions o;
      o.width = 1;
      o.masks.subsequent = subsequent;
      const BeamResult r = beamSearch(m, src, {}, o);
      DecodingSession::Options so;
      so.masks.subsequent = subsequent;
      so.record = false;
      DecodingSession s(m, src, {}, so);
      QCOMPARE(r.path(r.best()), s.runToEnd());
    }
  }

  // ---- interventions -------------------------------------------------------------------------

  void switchedOffHeadMatchesPyTorch_data() {
    addCaseRows(offs_, [](const nlohmann::json&) { return QString(); });
  }

  void switchedOffHeadMatchesPyTorch() {
    QFETCH(int, index);
    const auto& c = offs_[size_t(index)];
    const Model& m = model(c["model"].get<std::string>());
    Inputs in;
    const auto src = c["src_ids"].get<std::vector<int>>();
    if (!src.empty()) in.src = {src};
    in.tgt = {c["tgt_ids"].get<std::vector<int>>()};
    ForwardOptions o;
    for (const auto& iv : c["interventions"]) {
      HeadIntervention h;
      h.kind = kindByName(iv["kind"]);
      h.layer = iv["layer"];
      h.head = iv["head"];
      h.off = true;
      o.interventions.push_back(h);
    }
    const Trace base = m.forward(in);
    const Trace t = m.forward(in, o);
    const std::string key = c["tensors"];
    const Tensor want = ref_.toFloat(key + ".logits");
    const Tensor want_base = ref_.toFloat(key + ".base_logits");
    const size_t n = want.data.size();
    QCOMPARE(t.logits.dense().data.size(), n);
    const auto d = test::compare(t.logits.dense().ptr(), want.ptr(), n, 1.0);
    QVERIFY2(d.worst <= kRelTol, qPrintable(QStringLiteral("logits differ by %1").arg(d.worst)));
    QVERIFY(test::compare(base.logits.dense().ptr(), want_base.ptr(), n, 1.0).worst <= kRelTol);
    // The intervention matters: the reference moved the logits far beyond the tolerance.
    QVERIFY(c["logit_change"].get<double>() > 0.1);
    // Every block's probabilities, later layers included.
    for (AttentionKind kind : kAttentionKinds) {
      const std::string name = key + "." + attentionKindName(kind) + ".probs";
      if (!ref_.contains(name)) continue;
      const Tensor p = ref_.toFloat(name);  // [L, H, Tq, Tk]
      QCOMPARE(int(p.dim(0)), t.layers(kind));
      for (int l = 0; l < t.layers(kind); ++l) {
        const AttentionBlock& a = *t.block(kind, l);
        for (int h = 0; h < a.heads; ++h)
          for (int i = 0; i < a.q_len; ++i)
            for (int j = 0; j < a.k_len; ++j) {
              const float r = p.data[((size_t(l) * a.heads + h) * a.q_len + i) * a.k_len + j];
              QVERIFY2(std::abs(a.prob(0, h, i, j) - r) <= kProbTol,
                       qPrintable(QStringLiteral("%1 layer %2 head %3 (%4, %5)")
                                      .arg(attentionKindName(kind))
                                      .arg(l)
                                      .arg(h)
                                      .arg(i)
                                      .arg(j)));
            }
      }
    }
  }

  // A tempered head: softmax(scores / T) of the raw scores the trace keeps; other heads unchanged.
  void temperatureScalesOneHead() {
    const Model& m = model("reorder");
    Inputs in;
    in.src = {m.encodeSource("the big dog sees a small cat")};
    in.tgt = {greedyTarget(m, in.src[0])};
    ForwardOptions o;
    HeadIntervention h;
    h.kind = AttentionKind::Cross;
    h.layer = 1;
    h.head = 2;
    h.temperature = 3.0f;
    o.interventions = {h};
    const Trace base = m.forward(in);
    const Trace t = m.forward(in, o);
    const AttentionBlock& a = *t.block(AttentionKind::Cross, 1);
    const AttentionBlock& b = *base.block(AttentionKind::Cross, 1);
    for (int i = 0; i < a.q_len; ++i) {
      double mx = -INFINITY, sum = 0;
      for (int j = 0; j < a.k_len; ++j) mx = std::max(mx, double(a.score(0, 2, i, j)) / 3.0);
      for (int j = 0; j < a.k_len; ++j) sum += std::exp(double(a.score(0, 2, i, j)) / 3.0 - mx);
      for (int j = 0; j < a.k_len; ++j) {
        const double want = std::exp(double(a.score(0, 2, i, j)) / 3.0 - mx) / sum;
        QVERIFY(std::abs(a.prob(0, 2, i, j) - want) < 1e-6);
        QCOMPARE(a.score(0, 2, i, j), b.score(0, 2, i, j));  // the raw scores stay
        for (int other : {0, 1, 3}) QCOMPARE(a.prob(0, other, i, j), b.prob(0, other, i, j));
      }
    }
    // Hotter: the tempered head's rows are flatter (higher entropy) than before.
    const auto roles = tokenRoles(m.config(), Side::Target);
    const auto sroles = tokenRoles(m.config(), Side::Source);
    const double e0 = headStats(b, 0, 2, base.tgt_ids[0], base.src_ids[0], roles, sroles).entropy;
    const double e1 = headStats(a, 0, 2, t.tgt_ids[0], t.src_ids[0], roles, sroles).entropy;
    QVERIFY(e1 > e0);
  }

  // ---- head statistics -----------------------------------------------------------------------

  // P = [[1, 0, 0], [.5, .5, 0], [.2, .3, .5]] (causal) over keys BOS w EOS (ids 5 7 6), a padding
  // query.
  void headStatsHandComputed() {
    AttentionBlock a = block1(AttentionKind::EncoderSelf, 0, 4, 3,
                              {1, 0, 0, .5f, .5f, 0, .2f, .3f, .5f, 0, 0, 1}, true);
    const std::vector<int> q{5, 7, 6, 0}, k{5, 7, 6};
    const TokenRoles roles{0, 5, 6};
    const HeadStats s = headStats(a, 0, 0, q, k, roles, roles);
    QCOMPARE(s.rows, 3);  // the padding query is left out
    const double e2 = -(0.2 * std::log(0.2) + 0.3 * std::log(0.3) + 0.5 * std::log(0.5));
    QVERIFY(std::abs(s.entropy - (std::log(2.0) + e2) / 3) < 1e-6);
    // Unmasked keys per row: 1, 2, 3 → 0, ln2/ln2, e2/ln3.
    QVERIFY(std::abs(s.entropy_norm - (1.0 + e2 / std::log(3.0)) / 3) < 1e-6);
    QVERIFY(std::abs(s.diagonal - 2.0 / 3) < 1e-6);
    QVERIFY(std::abs(s.previous - 0.4) < 1e-6);  // (0.5 + 0.3) / 2
    QVERIFY(std::abs(s.first - 1.7 / 3) < 1e-6);
    QVERIFY(std::abs(s.bos - 1.7 / 3) < 1e-6);
    QVERIFY(std::abs(s.eos - 0.5 / 3) < 1e-6);
    QCOMPARE(s.padding, 0.0);
    QVERIFY(std::abs(s.distance - 0.4) < 1e-6);  // (0 + 0.5 + 0.7) / 3
    QVERIFY(std::isnan(s.monotonicity));
    // Without an EOS among the keys the EOS share does not apply.
    const HeadStats s2 = headStats(a, 0, 0, q, {5, 7, 8}, roles, roles);
    QVERIFY(std::isnan(s2.eos));
    // Padding keys: the share of attention they get.
    const HeadStats s3 = headStats(a, 0, 0, q, {5, 7, 0}, roles, roles);
    QVERIFY(std::abs(s3.padding - 0.5 / 3) < 1e-6);
  }

  void monotonicityHandComputed() {
    const std::vector<int> q{1, 2, 3}, k{1, 2, 3};
    const TokenRoles none;
    // Centres 0, 1, 2: in order.
    AttentionBlock in_order = block1(AttentionKind::Cross, 0, 3, 3, {1, 0, 0, 0, 1, 0, 0, 0, 1});
    QCOMPARE(headStats(in_order, 0, 0, q, k, none, none).monotonicity, 1.0);
    // Centres 2, 1, 0: reversed.
    AttentionBlock reversed = block1(AttentionKind::Cross, 0, 3, 3, {0, 0, 1, 0, 1, 0, 1, 0, 0});
    QCOMPARE(headStats(reversed, 0, 0, q, k, none, none).monotonicity, -1.0);
    // Centres 1, 1, 2: pairs (0,1) tie, (0,2) and (1,2) concordant → 2/3.
    AttentionBlock tie = block1(AttentionKind::Cross, 0, 3, 3, {.5f, 0, .5f, 0, 1, 0, 0, 0, 1});
    const HeadStats s = headStats(tie, 0, 0, q, k, none, none);
    QVERIFY(std::abs(s.monotonicity - 2.0 / 3) < 1e-9);
    QVERIFY(std::isnan(s.diagonal) && std::isnan(s.previous) && std::isnan(s.distance));
  }

  void headDistanceAndCsv() {
    AttentionBlock a = block1(AttentionKind::EncoderSelf, 1, 2, 2, {1, 0, 0, 1});
    AttentionBlock b = block1(AttentionKind::EncoderSelf, 1, 2, 2, {1, 0, 1, 0});
    const std::vector<int> ids{3, 4};
    const TokenRoles none;
    const HeadStats sa = headStats(a, 0, 0, ids, ids, none, none);
    const HeadStats sb = headStats(b, 0, 0, ids, ids, none, none);
    QCOMPARE(headDistance(sa, sa, 2, 2), 0.0);
    // Profiles differ in diagonal (1 vs .5), previous (0 vs 1), first (.5 vs 1), distance (0 vs
    // .5): √((.25 + 1 + .25 + .25) / 6) over the 6 components both define.
    QVERIFY(std::abs(headDistance(sa, sb, 2, 2) - std::sqrt(1.75 / 6)) < 1e-9);
    const std::string csv = headStatsCsv({sa});
    QVERIFY(csv.rfind("kind,layer,head,rows,entropy,", 0) == 0);
    QVERIFY2(csv.find("\r\nenc_self,2,1,2,0,0,1,0,0.5,,,0,0,\r\n") != std::string::npos,
             csv.c_str());
  }

  // Every head of a real trace: shares in [0, 1], entropy within [0, ln(keys)].
  void headStatisticsOfATrace() {
    const Model& m = model("reorder");
    Inputs in;
    in.src = {m.encodeSource("the big dog sees a small cat"),
              m.encodeSource("every rich car carries every brown king")};
    in.tgt = {greedyTarget(m, in.src[0]), greedyTarget(m, in.src[1])};
    const Trace t = m.forward(in);
    for (int b = 0; b < 2; ++b) {
      const auto stats = headStatistics(t, m.config(), b);
      QCOMPARE(int(stats.size()), int(t.blocks.size()) * m.config().n_heads);
      for (const HeadStats& s : stats) {
        for (double v : {s.diagonal, s.previous, s.first, s.bos, s.eos, s.padding})
          QVERIFY(std::isnan(v) || (v >= -1e-6 && v <= 1 + 1e-6));
        QVERIFY(s.entropy >= -1e-9 && s.entropy_norm <= 1 + 1e-6);
        QCOMPARE(s.padding < 1e-6, true);  // the padding mask is on
        if (s.kind == AttentionKind::Cross) QVERIFY(s.monotonicity >= -1 && s.monotonicity <= 1);
      }
    }
    // The reversal model's cross-attention reads the source backwards in some head.
    const Model& rv = model("reverse");
    Inputs r;
    r.src = {rv.encodeSource("a 3 b 7 x 5 q 2")};
    r.tgt = {greedyTarget(rv, r.src[0])};
    const Trace rt = rv.forward(r);
    double lowest = 1;
    for (const HeadStats& s : headStatistics(rt, rv.config(), 0))
      if (s.kind == AttentionKind::Cross) lowest = std::min(lowest, s.monotonicity);
    QVERIFY2(lowest < -0.8, qPrintable(QString::number(lowest)));
  }

  // ---- rollout -------------------------------------------------------------------------------

  // A1 = [[1, 0], [.5, .5]], A2 = [[.5, .5], [0, 1]]: Ã1 = [[1, 0], [.25, .75]],
  // Ã2 = [[.75, .25], [0, 1]], R = Ã2·Ã1 = [[.8125, .1875], [.25, .75]]; cross [.5, .5]·R.
  void rolloutHandComputed() {
    Trace t;
    t.batch = 1;
    t.src_len = 2;
    t.tgt_len = 1;
    // Two heads whose mean is A1 (and A2): the rollout averages the heads first.
    AttentionBlock e0 =
        blockOfProbs(AttentionKind::EncoderSelf, 0, 2, 2, 2, {1, 0, 1, 0, 1, 0, 0, 1});
    t.blocks.push_back(e0);
    t.blocks.push_back(block1(AttentionKind::EncoderSelf, 1, 2, 2, {.5f, .5f, 0, 1}));
    t.blocks.push_back(block1(AttentionKind::Cross, 0, 1, 2, {.5f, .5f}));
    const auto r0 = attentionRollout(t, AttentionKind::EncoderSelf, 0, 0);
    const float w0[] = {1, 0, .25f, .75f};
    for (int k = 0; k < 4; ++k) QVERIFY(std::abs(r0[size_t(k)] - w0[k]) < 1e-7);
    const auto r1 = attentionRollout(t, AttentionKind::EncoderSelf, 1, 0);
    const float w1[] = {.8125f, .1875f, .25f, .75f};
    for (int k = 0; k < 4; ++k) QVERIFY(std::abs(r1[size_t(k)] - w1[k]) < 1e-7);
    const auto c = crossRollout(t, 0, 0);
    QVERIFY(std::abs(c[0] - 0.53125f) < 1e-7 && std::abs(c[1] - 0.46875f) < 1e-7);
    try {
      attentionRollout(t, AttentionKind::Cross, 0, 0);
      QFAIL("rollout of cross-attention must be refused");
    } catch (const Error& e) {
      QCOMPARE(e.kind(), ErrorKind::BadInput);
    }
  }
};

QTEST_GUILESS_MAIN(TestTeachingCore)
#include "test_teaching_core.moc"

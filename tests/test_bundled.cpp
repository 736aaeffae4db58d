// The bundled trained models (resources/models): the C++ core decodes each model's held-out inputs
// (never seen in training) and must reach the accuracy its card claims; the reversal model's
// cross-attention must show the anti-diagonal its task implies.
#include <QtTest>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "arch/bundled.h"
#include "base/error.h"
#include "compute/cpu_backend.h"
#include "io/safetensors.h"
#include "model/decoding.h"
#include "model/model.h"

using namespace attnviz;

namespace {

struct Pair {
  std::string src, tgt;
};

std::vector<Pair> heldOut(const std::string& model_path) {
  std::string path = model_path.substr(0, model_path.size() - std::string(".safetensors").size()) +
                     ".heldout.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("no held-out file " + path);
  nlohmann::json j = nlohmann::json::parse(in);
  std::vector<Pair> out;
  for (const auto& e : j) out.push_back({e["src"].get<std::string>(), e["tgt"].get<std::string>()});
  return out;
}

std::string join(const Model& m, const std::vector<int>& ids) {
  std::string s;
  for (int id : ids) {
    if (id == m.config().eos_id) break;
    s += (s.empty() ? "" : " ") + m.tgtVocab().token(id);
  }
  return s;
}

std::string normalise(const std::string& s) {
  std::istringstream in(s);
  std::string w, out;
  while (in >> w) out += (out.empty() ? "" : " ") + w;
  return out;
}

}  // namespace

class TestBundled : public QObject {
  Q_OBJECT

 private slots:
  void heldOutAccuracy_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<double>("required");
    QTest::addColumn<int>("minimum_pairs");
    // The toy translation reproduces its pairs exactly; the synthetic tasks are checked
    // on at least 100 held-out inputs.
    QTest::newRow("toy-translation") << "toy-translation" << 1.0 << 1;
    QTest::newRow("reverse") << "reverse" << 0.95 << 100;
    QTest::newRow("reorder") << "reorder" << 0.95 << 100;
  }

  void heldOutAccuracy() {
    QFETCH(QString, name);
    QFETCH(double, required);
    QFETCH(int, minimum_pairs);
    std::string path;
    try {
      path = resolveModelPath(name.toStdString());
    } catch (const Error& e) {
      QFAIL(e.what());
    }
    auto lm = loadModel(path);
    Model m(lm, makeCpuBackend());
    auto pairs = heldOut(path);
    QVERIFY2((int)pairs.size() >= minimum_pairs, "too few held-out pairs");
    int correct = 0;
    std::string first_wrong;
    for (const auto& p : pairs) {
      std::vector<int> out = greedyDecode(m, m.encodeSource(p.src), 64);
      const std::string got = join(m, out);
      if (got == normalise(p.tgt))
        ++correct;
      else if (first_wrong.empty())
        first_wrong = p.src + " → " + got + " (expected " + p.tgt + ")";
    }
    const double acc = (double)correct / pairs.size();
    qInfo("%s: %d/%d held-out sequences exact (%.2f%%)%s%s", qPrintable(name), correct,
          (int)pairs.size(), 100 * acc,
          first_wrong.empty() ? "" : "; first miss: ", first_wrong.c_str());
    QVERIFY2(acc >= required, qPrintable(QString("accuracy %1 below %2").arg(acc).arg(required)));
    // The card's claim (stored in the config as heldout_accuracy by the training script).
    SafetensorsFile f = SafetensorsFile::open(path);
    auto cfg = nlohmann::json::parse(f.metadata().at("attnviz_config"));
    if (cfg.contains("heldout_accuracy")) {
      const double claimed = cfg["heldout_accuracy"].get<double>();
      QVERIFY2(std::abs(acc - claimed) <= 0.005,
               qPrintable(QString("C++ accuracy %1 vs the card's %2").arg(acc).arg(claimed)));
    } else {
      QFAIL("the model's config has no heldout_accuracy to check the card against");
    }
  }

  // In the last decoder layer, averaged over heads, each target position's largest cross-attention
  // weight falls on the mirrored source position for at least 90% of positions.
  void reversalAntiDiagonal() {
    std::string path;
    try {
      path = resolveModelPath("reverse");
    } catch (const Error& e) {
      QFAIL(e.what());
    }
    Model m(loadModel(path), makeCpuBackend());
    auto pairs = heldOut(path);
    int hits = 0, total = 0;
    for (size_t k = 0; k < pairs.size() && k < 200; ++k) {
      std::vector<int> src = m.encodeSource(pairs[k].src);
      // The decoding session's trace is the teacher-forced pass over what it decoded.
      DecodingSession::Options o;
      o.max_new_tokens = 64;
      DecodingSession s(m, src, {}, o);
      s.runToEnd();
      const Trace& t = s.trace();
      const AttentionBlock& last =
          *t.block(AttentionKind::Cross, t.layers(AttentionKind::Cross) - 1);
      const int H = last.heads, S = t.src_len;
      // Query row i (fed token i, predicting output token i) should attend to source S-1-i.
      for (int i = 0; i < S && i < t.tgt_len; ++i) {
        int best = 0;
        double best_w = -1;
        for (int j = 0; j < S; ++j) {
          double w = 0;
          for (int h = 0; h < H; ++h) w += last.prob(0, h, i, j);
          if (w > best_w) best_w = w, best = j;
        }
        hits += best == S - 1 - i;
        ++total;
      }
    }
    const double frac = (double)hits / total;
    qInfo("reverse: %d/%d target positions attend most to the mirrored source (%.1f%%)", hits,
          total, 100 * frac);
    QVERIFY2(frac >= 0.9, qPrintable(QString("only %1 on the anti-diagonal").arg(frac)));
  }

  // The examples the GUI offers decode without error on every model.
  void examplesDecode() {
    for (const auto& b : listBundledModels()) {
      Model m(loadModel(b.path), makeCpuBackend());
      QVERIFY2(!m.config().examples.empty(), b.name.c_str());
      for (const auto& e : m.config().examples) {
        DecodingSession s(m, m.encodeSource(e.src));
        QVERIFY(!s.runToEnd().empty());
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestBundled)
#include "test_bundled.moc"

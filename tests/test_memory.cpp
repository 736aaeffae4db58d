// Memory estimates against what the OS reports: for a few shapes — a trace of many
// heads, a batch with q/k/v kept and a dump, long outputs over a large vocabulary, a large
// sinusoid table, many weights — the resident set's growth during the step stays within 1.3× of
// the estimate the core checks before allocating (estimateModelBytes for loading a model and
// building it on the CPU backend, Model::estimatePassBytes for a pass), and the estimate is not
// an empty promise either (at least half of it is really used). Each measurement runs in its own
// memory_probe process, which reads the peak from /proc/self/status (VmHWM, reset before the step)
// as getrusage would.
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <fstream>
#include <nlohmann/json.hpp>

using json = nlohmann::json;

namespace {

constexpr double kAtMost = 1.3;   // the peak may exceed the estimate by this factor
constexpr double kAtLeast = 0.5;  // and uses at least this share of it

json config(int d_model, int d_ff, int heads, int layers, int src_vocab, int tgt_vocab, int max_len,
            int d_k = 0) {
  json c = {{"family", "nlp-tutorial"},
            {"d_model", d_model},
            {"d_ff", d_ff},
            {"n_heads", heads},
            {"n_encoder_layers", layers},
            {"n_decoder_layers", layers},
            {"max_len", max_len},
            {"bos_id", 1},
            {"eos_id", 2}};
  if (d_k) c["d_k"] = c["d_v"] = d_k;
  std::vector<std::string> src{"P"}, tgt{"P", "S", "E"};
  while ((int)src.size() < src_vocab) src.push_back("source-word-" + std::to_string(src.size()));
  while ((int)tgt.size() < tgt_vocab) tgt.push_back("t" + std::to_string(tgt.size()));
  c["src_vocab"] = src;
  c["tgt_vocab"] = tgt;
  return c;
}

}  // namespace

class TestMemory : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  // Runs memory_probe; returns its JSON line.
  QJsonObject probe(const QStringList& args) {
    QProcess p;
    p.start(ATTNVIZ_MEMORY_PROBE, args);
    if (!p.waitForFinished(300000) || p.exitCode() != 0) {
      qWarning() << "memory_probe" << args << "failed:" << p.readAllStandardError();
      return {};
    }
    return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
  }

  QString model(const char* name, const json& c) {
    const QString cfg = dir_.filePath(QString(name) + ".json");
    std::ofstream(cfg.toStdString()) << c.dump();
    const QString file = dir_.filePath(QString(name) + ".safetensors");
    if (!QFile::exists(file)) probe({"write", cfg, file});
    return file;
  }

  void check(const char* what, const QJsonObject& r) {
    QVERIFY2(!r.isEmpty(), what);
    const double estimate = r["estimate"].toDouble();
    const double used = r["peak"].toDouble() - r["baseline"].toDouble();
    qInfo("%-46s estimate %8.1f MiB, peak growth %8.1f MiB (%.2f×)", what, estimate / (1 << 20),
          used / (1 << 20), used / estimate);
    QVERIFY2(used <= kAtMost * estimate, qPrintable(QString("%1: the peak grew by %2 bytes, above "
                                                            "%3 × the estimate of %4")
                                                        .arg(what)
                                                        .arg(used)
                                                        .arg(kAtMost)
                                                        .arg(estimate)));
    QVERIFY2(used >= kAtLeast * estimate, qPrintable(QString("%1: the estimate of %2 bytes is far "
                                                             "above the %3 really used")
                                                         .arg(what)
                                                         .arg(estimate)
                                                         .arg(used)));
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    if (!QFile::exists("/proc/self/clear_refs")) QSKIP("needs Linux's /proc/self/clear_refs");
#ifdef ATTNVIZ_SANITIZED
    QSKIP("under AddressSanitizer the resident set holds its shadow memory and quarantine");
#endif
  }

  // 16 heads × 4 blocks per side over 400 positions: the trace dominates.
  void passOfManyHeads() {
    const QString m = model("heads", config(64, 128, 16, 2, 8, 8, 1024));
    check("pass, 16 heads, 400 + 400 tokens", probe({"pass", m, "1", "400", "400", "1", "0"}));
    check("pass, outputs only (no trace)", probe({"pass", m, "1", "400", "400", "0", "0"}));
    check("pass, 400 source and 10 target tokens", probe({"pass", m, "1", "400", "10", "1", "0"}));
  }

  // A padded batch of three with each head's q/k/v kept, then the dump (streamed from the trace).
  void batchWithQkvAndDump() {
    const QString m = model("heads", config(64, 128, 16, 2, 8, 8, 1024));
    check("pass, batch of 3 × 250 tokens, q/k/v", probe({"pass", m, "3", "250", "250", "1", "1"}));
    check("pass and --dump, batch of 3 × 250 tokens",
          probe({"pass", m, "3", "250", "250", "1", "1", dir_.filePath("dump")}));
  }

  // 200000 target tokens: the logits (and their copy in the pass) dominate.
  void passOverLargeVocabulary() {
    const QString m = model("vocab", config(32, 64, 4, 1, 8, 200000, 256));
    check("pass, 200000-token vocabulary, 100 positions",
          probe({"pass", m, "1", "20", "100", "1", "0"}));
    check("load + Model, 200000-token vocabulary", probe({"model", m}));
  }

  // d_model 4096 × 8192 positions: the sinusoid table (built on the host, then uploaded).
  void largePositionTable() {
    const QString m = model("table", config(4096, 8, 1, 1, 4, 5, 8192, 8));
    check("load + Model, sinusoid table 8192 × 4096", probe({"model", m}));
  }

  // d_model 512, 2+2 layers: the weights, held on the host and copied to the backend.
  void manyWeights() {
    const QString m = model("weights", config(512, 2048, 8, 2, 3000, 3000, 512));
    check("load + Model, 2+2 layers of d_model 512", probe({"model", m}));
  }
};

QTEST_GUILESS_MAIN(TestMemory)
#include "test_memory.moc"

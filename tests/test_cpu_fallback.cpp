// Running out of GPU memory in the middle of a request, and the request redone on the CPU
// (model/cpu_fallback.h), on a machine without a GPU: the CPU backend behind a memory limit
// (compute/memory_limit.h) runs out as a full GPU does, with Error(OutOfMemory). Checked: the
// limit itself; a forward pass and a greedy decode that run out are redone and give exactly what
// a model on the plain CPU backend gives, with the note; a request that fits runs on the limited
// backend again afterwards; a backend lost for good has every request redone; other errors are
// not redone; attnviz-cli run and decode under the test
// hook ATTNVIZ_TEST_MEMORY_LIMIT exit 0 with the note on stderr and print and dump what --backend
// cpu does. The same on a real GPU: scripts/gpu-check.sh's oom-fallback.
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>
#include <string>
#include <vector>

#include "arch/weights.h"
#include "base/error.h"
#include "compute/backends.h"
#include "compute/memory_limit.h"
#include "model/cpu_fallback.h"
#include "model/decoding.h"
#include "model/model.h"
#include "model/trace.h"

using namespace attnviz;

namespace {

const std::string kTinyModel = ATTNVIZ_TEST_DATA "/nlp_tiny.safetensors";

// n ids of the vocabulary `v` after its first special ids, in turn.
std::vector<int> words(const Vocabulary& v, int n, int first = 4) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back(first + i % (int(v.size()) - first));
  return ids;
}

// Every value the views and --dump show, bit for bit.
void compareTraces(const Trace& got, const Trace& want) {
  QCOMPARE(got.blocks.size(), want.blocks.size());
  for (size_t i = 0; i < want.blocks.size(); ++i) {
    const AttentionBlock &g = got.blocks[i], &w = want.blocks[i];
    QVERIFY(g.denseProbs() == w.denseProbs());
    QVERIFY(g.denseScores() == w.denseScores());
    QVERIFY(g.denseMask() == w.denseMask());
  }
  QVERIFY(!want.logits.empty());
  QVERIFY(got.logits.dense().data == want.logits.dense().data);
}

struct Cli {
  int status = -1;
  QString out, err;
};

Cli runCli(const QStringList& args, const QString& limit) {
  QProcess p;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  if (limit.isEmpty())
    env.remove(QStringLiteral("ATTNVIZ_TEST_MEMORY_LIMIT"));
  else
    env.insert(QStringLiteral("ATTNVIZ_TEST_MEMORY_LIMIT"), limit);
  p.setProcessEnvironment(env);
  p.start(QStringLiteral(ATTNVIZ_CLI), args);
  Cli r;
  if (!p.waitForFinished(120000) || p.exitStatus() != QProcess::NormalExit) return r;
  r.status = p.exitCode();
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

// The output without the timing line ("forward pass: 1.23 ms on CPU …"), which differs.
QString withoutTiming(const QString& out) {
  QStringList kept;
  for (const QString& line : out.split('\n'))
    if (!line.startsWith(QStringLiteral("forward pass:"))) kept << line;
  return kept.join('\n');
}

}  // namespace

class TestCpuFallback : public QObject {
  Q_OBJECT

  std::shared_ptr<const LoadedModel> loaded_;
  std::shared_ptr<MemoryLimit> limit_;
  std::shared_ptr<Model> limited_;  // nlp_tiny on the CPU backend behind limit_
  std::shared_ptr<Model> cpu_;      // nlp_tiny on the plain CPU backend: the reference
  Inputs short_, long_;
  uint64_t peak_short_ = 0, peak_long_ = 0;

 private slots:
  void initTestCase() {
    loaded_ = loadModel(kTinyModel);
    limit_ = std::make_shared<MemoryLimit>(~uint64_t(0));
    limited_ = std::make_shared<Model>(loaded_, limitMemory(createBackend("cpu"), limit_));
    cpu_ = std::make_shared<Model>(loaded_, createBackend("cpu"));
    QVERIFY(limited_->config().hasCross());  // an encoder-decoder: every kind of block
    const int n = limited_->maxPositions() - 2;
    short_.src = {words(limited_->srcVocab(), 4)};
    short_.tgt = {limited_->encodeTarget("")};
    long_.src = {words(limited_->srcVocab(), n)};
    long_.tgt = {limited_->encodeTarget("")};
    for (int id : words(limited_->tgtVocab(), n - 1)) long_.tgt[0].push_back(id);
    // What each pass holds on the backend at its peak: the weights and the pass's working set.
    const uint64_t weights = limit_->in_use;
    QVERIFY(weights >= limited_->weightBytes());
    limited_->forward(short_);
    peak_short_ = limit_->peak;
    limited_->forward(long_);
    peak_long_ = limit_->peak;
    QCOMPARE(uint64_t(limit_->in_use), weights);  // every buffer of the passes given back
    qInfo("weights %llu bytes, peak of the short pass %llu, of the long pass %llu",
          (unsigned long long)weights, (unsigned long long)peak_short_,
          (unsigned long long)peak_long_);
    QVERIFY2(peak_long_ > peak_short_ + 4096, "the long pass needs more memory");
    limit_->bytes = (peak_short_ + peak_long_) / 2;  // the short pass fits, the long one not
  }

  // The limit: an allocation past it is refused with Error(OutOfMemory) naming the sizes, the
  // backend stays usable, freed buffers count no more.
  void limitRefusesAndGivesBack() {
    auto limit = std::make_shared<MemoryLimit>(1000);
    auto be = limitMemory(createBackend("cpu"), limit);
    QCOMPARE(be->name(), std::string("cpu"));
    BufferPtr a = be->allocate(600);
    QCOMPARE(uint64_t(limit->in_use), uint64_t(600));
    try {
      be->allocate(401);
      QFAIL("601 + 401 bytes fitted a limit of 1000");
    } catch (const Error& e) {
      QCOMPARE(e.kind(), ErrorKind::OutOfMemory);
      QVERIFY2(QString(e.what()).contains("cannot allocate 401 bytes (600 bytes of the limit of"),
               e.what());
    }
    QCOMPARE(uint64_t(limit->refused), uint64_t(1));
    QVERIFY(be->healthy());
    BufferPtr b = be->allocate(400);  // exactly to the limit
    const float x[4] = {1, 2, 3, 4};
    float y[4] = {};
    be->upload(*b, x, sizeof x);
    be->download(*b, y, sizeof y);
    QCOMPARE(y[3], 4.0f);
    a.reset();
    QCOMPARE(uint64_t(limit->in_use), uint64_t(400));
    BufferPtr c = be->allocate(600);
    QCOMPARE(uint64_t(limit->peak), uint64_t(1000));
  }

  // A pass that runs out is redone on the CPU: the CPU's result, the note; the next pass that fits
  // runs on the limited backend again.
  void passRedoneOnCpu() {
    const Trace want = cpu_->forward(long_);
    std::string note;
    std::vector<const Model*> ran_on;
    const uint64_t refused = limit_->refused;
    const Trace got = runRedoingOnCpu(limited_, 1, &note, [&](const std::shared_ptr<Model>& m) {
      ran_on.push_back(m.get());
      return m->forward(long_);
    });
    QCOMPARE(ran_on.size(), size_t(2));
    QCOMPARE(ran_on[0], limited_.get());
    QVERIFY(ran_on[1] != limited_.get() && ran_on[1] != cpu_.get());
    QVERIFY(limit_->refused > refused);
    QVERIFY2(QString::fromStdString(note).startsWith("the GPU ran out of memory (out of memory: "
                                                     "cannot allocate "),
             note.c_str());
    QVERIFY2(QString::fromStdString(note).endsWith("in use)): this run was redone on the CPU"),
             note.c_str());
    // The device's advice to use the CPU backend is left out: that is what happened.
    QVERIFY2(!QString::fromStdString(note).contains("CPU backend"), note.c_str());
    compareTraces(got, want);

    ran_on.clear();
    const Trace again = runRedoingOnCpu(limited_, 1, &note, [&](const std::shared_ptr<Model>& m) {
      ran_on.push_back(m.get());
      return m->forward(short_);
    });
    QCOMPARE(ran_on, std::vector<const Model*>{limited_.get()});
    QVERIFY(note.empty());
    compareTraces(again, cpu_->forward(short_));
  }

  // A greedy decode with the whole trace (what the GUI's Decoding view steps through), redone: the
  // same tokens and trace as on the CPU; the session lives on the CPU copy it was redone on.
  void decodeRedoneOnCpu() {
    DecodingSession::Options o;
    o.max_new_tokens = limited_->maxPositions() - 1;
    const std::vector<int> src = long_.src[0];
    DecodingSession want(*cpu_, src, {}, o);
    want.runToEnd();
    std::string note;
    std::shared_ptr<Model> kept;
    auto session = runRedoingOnCpu(limited_, 0, &note, [&](const std::shared_ptr<Model>& m) {
      kept = m;
      auto s = std::make_unique<DecodingSession>(*m, src, std::vector<int>{}, o);
      s->runToEnd();
      return s;
    });
    QVERIFY2(!note.empty(), "the long decode fitted under the limit");
    QVERIFY(&session->model() == kept.get() && kept != limited_);
    QCOMPARE(session->targetIds(), want.targetIds());
    compareTraces(session->trace(), want.trace());
  }

  // A backend that fails for good in the middle of a pass (a lost CUDA context, here the limited
  // backend with lose_device): the pass is redone on the CPU with the lost-device note, the backend
  // stays failed, and every later request — even one that would fit — is redone too, until the
  // caller moves to the copy (deviceLost tells it to).
  void lostDeviceRedoneOnCpu() {
    auto limit = std::make_shared<MemoryLimit>(limit_->bytes.load());
    limit->lose_device = true;
    auto lost = std::make_shared<Model>(loaded_, limitMemory(createBackend("cpu"), limit));
    QVERIFY(!deviceLost(*lost));
    compareTraces(lost->forward(short_), cpu_->forward(short_));  // fits: runs there
    QVERIFY(!deviceLost(*lost));
    std::string note;
    std::vector<const Model*> ran_on;
    const Trace got = runRedoingOnCpu(lost, 1, &note, [&](const std::shared_ptr<Model>& m) {
      ran_on.push_back(m.get());
      return m->forward(long_);
    });
    QCOMPARE(ran_on.size(), size_t(2));
    QCOMPARE(ran_on[0], lost.get());
    QVERIFY(deviceLost(*lost));
    QVERIFY2(QString::fromStdString(note).startsWith("the GPU failed (allocate: a lost device"),
             note.c_str());
    QVERIFY2(QString::fromStdString(note).endsWith("): this run was redone on the CPU"),
             note.c_str());
    compareTraces(got, cpu_->forward(long_));
    // The short pass fitted before; the backend is gone now, so it is redone as well.
    ran_on.clear();
    const Trace again = runRedoingOnCpu(lost, 1, &note, [&](const std::shared_ptr<Model>& m) {
      ran_on.push_back(m.get());
      return m->forward(short_);
    });
    QCOMPARE(ran_on.size(), size_t(2));
    QVERIFY2(QString::fromStdString(note).contains("the backend is unusable: a lost device"),
             note.c_str());
    compareTraces(again, cpu_->forward(short_));
    // A healthy backend's errors are not taken for a lost device.
    QVERIFY(!deviceLost(*limited_));
  }

  // Errors other than running out of memory reach the caller, and the request runs once.
  void otherErrorsAreNotRedone() {
    int calls = 0;
    std::string note = "stale";
    try {
      runRedoingOnCpu(limited_, 0, &note, [&](const std::shared_ptr<Model>& m) {
        ++calls;
        Inputs bad = short_;
        bad.src[0].push_back(int(m->srcVocab().size()));  // an id past the vocabulary
        return m->forward(bad);
      });
      QFAIL("an id past the vocabulary was taken");
    } catch (const Error& e) {
      QCOMPARE(e.kind(), ErrorKind::BadInput);
    }
    QCOMPARE(calls, 1);
    QVERIFY(note.empty());
    // An error of the CPU run itself is the caller's too (here the CPU copy refuses the pass).
    calls = 0;
    try {
      runRedoingOnCpu(limited_, 0, &note, [&](const std::shared_ptr<Model>& m) {
        if (++calls == 1) return m->forward(long_);
        throw Error(ErrorKind::TooLarge, "the CPU cannot either");
      });
      QFAIL("the CPU run's error was swallowed");
    } catch (const Error& e) {
      QCOMPARE(e.kind(), ErrorKind::TooLarge);
    }
    QCOMPARE(calls, 2);
  }

  // attnviz-cli run and decode under ATTNVIZ_TEST_MEMORY_LIMIT: exit 0, the note, and what
  // --backend cpu prints and dumps.
  void cli() {
    const QString limit = QString::number(limit_->bytes);
    auto idList = [](const std::vector<int>& v) {
      QString s;
      for (int id : v) s += (s.isEmpty() ? "" : ",") + QString::number(id);
      return s;
    };
    QTemporaryDir dir;
    // The long pass of passRedoneOnCpu, which runs out under the limit.
    const QStringList run{"run",       QString::fromStdString(kTinyModel),
                          "--src-ids", idList(long_.src[0]),
                          "--tgt-ids", idList(long_.tgt[0])};
    const Cli plain = runCli(run + QStringList{"--dump", dir.filePath("cpu")}, {});
    QCOMPARE(plain.status, 0);
    QVERIFY2(!plain.err.contains("ran out of memory"), qPrintable(plain.err));
    const Cli limited = runCli(run + QStringList{"--dump", dir.filePath("limited")}, limit);
    QVERIFY2(limited.status == 0, qPrintable(limited.err));
    QVERIFY2(
        limited.err.contains(QStringLiteral("attnviz-cli: note: the GPU ran out of memory (out "
                                            "of memory: cannot allocate ")) &&
            limited.err.contains(QStringLiteral("): this run was redone on the CPU\n")),
        qPrintable(limited.err));
    QCOMPARE(withoutTiming(limited.out).replace(dir.filePath("limited"), dir.filePath("cpu")),
             withoutTiming(plain.out));
    const QStringList files = QDir(dir.filePath("cpu")).entryList(QDir::Files);
    QVERIFY(files.contains(QStringLiteral("logits.npy")) && files.size() > 3);
    QCOMPARE(QDir(dir.filePath("limited")).entryList(QDir::Files), files);
    for (const QString& f : files) {
      QFile a(dir.filePath("cpu/" + f)), b(dir.filePath("limited/" + f));
      QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
      QVERIFY2(a.readAll() == b.readAll(), qPrintable(f));
    }
    // A short input fits: no note, the limited backend's own run.
    const Cli fits = runCli({"run", QString::fromStdString(kTinyModel), "--src-ids",
                             idList(short_.src[0]), "--tgt-ids", idList(short_.tgt[0])},
                            limit);
    QVERIFY2(fits.status == 0 && !fits.err.contains("ran out of memory"), qPrintable(fits.err));
    QVERIFY2(fits.out.contains(QStringLiteral("for a test")), qPrintable(fits.out));

    // Greedy decoding (no trace kept): a limit half-way between the weights and the decode's peak,
    // measured here on the same backend, makes it run out.
    auto measure = std::make_shared<MemoryLimit>(~uint64_t(0));
    Model dm(loaded_, limitMemory(createBackend("cpu"), measure));
    const uint64_t weights = measure->in_use;
    DecodingSession::Options o;
    o.record = false;
    o.max_new_tokens = 40;
    DecodingSession(dm, long_.src[0], {}, o).runToEnd();
    QVERIFY(measure->peak > weights);
    const QString decode_limit = QString::number(weights + (measure->peak - weights) / 2);
    const QStringList decode{"decode",    QString::fromStdString(kTinyModel),
                             "--src-ids", idList(long_.src[0]),
                             "--ids",     "--max-len",
                             "40"};
    const Cli want = runCli(decode, {});
    const Cli got = runCli(decode, decode_limit);
    QCOMPARE(want.status, 0);
    QVERIFY2(got.status == 0 && got.err.contains(QStringLiteral("this run was redone on the CPU")),
             qPrintable(got.err));
    QVERIFY(!want.out.trimmed().isEmpty());
    QCOMPARE(got.out, want.out);
    // The hook refuses what is not a number of bytes.
    const Cli bad = runCli(run, QStringLiteral("2GiB"));
    QCOMPARE(bad.status, 2);
    QVERIFY2(bad.err.contains(QStringLiteral("ATTNVIZ_TEST_MEMORY_LIMIT=2GiB is not a number of "
                                             "bytes")),
             qPrintable(bad.err));
  }
};

QTEST_GUILESS_MAIN(TestCpuFallback)
#include "test_cpu_fallback.moc"

// What attnviz prints and writes when a careless user or an attacker brings crafted files and a
// full disk (test_hostile covers reading crafted files). Text from files reaches the terminal
// escaped; every write is whole or absent (file-size limits in this process and in attnviz-cli, a
// full tmpfs when one can be mounted); NaN and ±Inf from finite weights are reported with the block
// where they first appear; the header is read before the data; the command line (CLI11) refuses
// what it cannot mean; bench and decode survive tiny vocabularies and short max_len.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QCryptographicHash>
#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>

#include "arch/weights.h"
#include "base/atomic_file.h"
#include "base/error.h"
#include "base/safe_text.h"
#include "block_support.h"
#include "compute/cpu_backend.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "kernel_math.h"
#include "model/finite_scan.h"
#include "model/model.h"
#include "model/trace_dump.h"
#include "model_files.h"
#include "test_support.h"

using namespace attnviz;
using json = nlohmann::json;

namespace {

const std::string kTiny = std::string(ATTNVIZ_TEST_DATA) + "/nlp_tiny.safetensors";
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

using test::caught;

// The error has the kind and its message holds every '|'-separated piece of `needles`.
#define VERIFY_ERROR(expr, want_kind, needles)                                                     \
  do {                                                                                             \
    const std::optional<Error> e_ = (expr);                                                        \
    QVERIFY2(e_.has_value(), "no error was thrown");                                               \
    const QString msg_ = QString::fromUtf8(e_->what());                                            \
    QCOMPARE(QString(errorKindName(e_->kind())), QString(errorKindName(want_kind)));               \
    for (const QString& n_ : QString(needles).split('|', Qt::SkipEmptyParts))                      \
      QVERIFY2(msg_.contains(n_), qPrintable("\"" + msg_ + "\" does not mention \"" + n_ + "\"")); \
  } while (0)

// Every entry of a folder (hidden ones too: a left-over temporary file counts).
QStringList entries(const QString& dir) {
  return QDir(dir).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot, QDir::Name);
}

// name → SHA-1 of every file in a folder.
QMap<QString, QByteArray> digests(const QString& dir) {
  QMap<QString, QByteArray> out;
  for (const QString& f : entries(dir)) {
    QFile file(dir + "/" + f);
    if (file.open(QIODevice::ReadOnly))
      out[f] = QCryptographicHash::hash(file.readAll(), QCryptographicHash::Sha1);
  }
  return out;
}

// A lower file-size limit for this process while it lives (SIGXFSZ ignored, so that a write past
// the limit fails with EFBIG as it does in attnviz-cli).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lower = saved_;
    lower.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lower);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit saved_;
  void (*old_handler_)(int);
};

struct CliResult {
  int code = -1;
  bool crashed = false;
  QString out, err;
};

// attnviz-cli with `args`, optionally through `sh -c PREFIX exec attnviz-cli ARGS`.
CliResult cli(const QStringList& args, const QString& shell_prefix = {}) {
  QProcess p;
  if (shell_prefix.isEmpty()) {
    p.start(ATTNVIZ_CLI, args);
  } else {
    QString cmd = shell_prefix + " exec \"$0\" \"$@\"";
    p.start("sh", QStringList{"-c", cmd, ATTNVIZ_CLI} + args);
  }
  CliResult r;
  if (!p.waitForFinished(120000)) return r;
  r.crashed = p.exitStatus() != QProcess::NormalExit;
  r.code = p.exitCode();
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

// No control character but newlines in what attnviz-cli printed.
bool terminalClean(const QString& text) {
  for (QChar c : text)
    if ((c.unicode() < 0x20 && c != '\n') || c.unicode() == 0x7F ||
        (c.unicode() >= 0x80 && c.unicode() <= 0x9F))
      return false;
  return true;
}

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM"); 0 where there is none.
uint64_t statusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  return 0;
}

// A trace of one encoder-only block per layer with the given cells, for scanTrace.
Trace traceOf(int layers, int heads, int n) {
  Trace t;
  t.batch = 1;
  for (int l = 0; l < layers; ++l) {
    t.blocks.push_back(blockOfProbs(AttentionKind::EncoderSelf, l, heads, n, n,
                                    std::vector<float>(size_t(heads) * n * n, 1.0f / n)));
  }
  return t;
}

}  // namespace

class TestHostileOutput : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString path(const QString& name) const { return dir_.filePath(name); }

  // The CLI's dump of nlp_tiny's run into `out`.
  QStringList dumpArgs(const QString& out, const QString& sentence = "ich mochte ein bier") {
    return {"run", QString::fromStdString(kTiny), "--src", sentence, "--qkv", "--dump", out};
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  // ---- terminal text ----
  void terminalSafeEscapes_data() {
    QTest::addColumn<QByteArray>("in");
    QTest::addColumn<QByteArray>("out");
    QTest::newRow("plain") << QByteArray("ich mochte") << QByteArray("ich mochte");
    QTest::newRow("UTF-8 stays") << QByteArray("caf\xC3\xA9 \xE4\xB8\xAD")
                                 << QByteArray("caf\xC3\xA9 \xE4\xB8\xAD");
    QTest::newRow("clear screen") << QByteArray("\x1b[2J") << QByteArray("\\x1B[2J");
    QTest::newRow("window title") << QByteArray("\x1b]0;model OK\x07")
                                  << QByteArray("\\x1B]0;model OK\\x07");
    QTest::newRow("NUL") << QByteArray("a\0b", 3) << QByteArray("a\\x00b");
    QTest::newRow("backspace and CR")
        << QByteArray("ok\b\b\rno") << QByteArray("ok\\x08\\x08\\x0Dno");
    QTest::newRow("newline and tab") << QByteArray("a\nb\tc") << QByteArray("a\\x0Ab\\x09c");
    QTest::newRow("DEL") << QByteArray("a\x7f") << QByteArray("a\\x7F");
    QTest::newRow("C1 CSI") << QByteArray(
                                   "\xC2\x9B"
                                   "31m")
                            << QByteArray("\\u{009B}31m");
    QTest::newRow("bidi override") << QByteArray(
                                          "abc\xE2\x80\xAE"
                                          "def")
                                   << QByteArray("abc\\u{202E}def");
    QTest::newRow("bidi isolate") << QByteArray("\xE2\x81\xA6x") << QByteArray("\\u{2066}x");
    QTest::newRow("not UTF-8") << QByteArray("a\xff\xc3") << QByteArray("a\\xFF\\xC3");
    QTest::newRow("lone 8-bit CSI") << QByteArray(
                                           "\x9b"
                                           "2J")
                                    << QByteArray("\\x9B2J");
  }
  void terminalSafeEscapes() {
    QFETCH(QByteArray, in);
    QFETCH(QByteArray, out);
    QCOMPARE(QByteArray::fromStdString(terminalSafe(in.toStdString())), out);
    QVERIFY(terminalClean(QString::fromStdString(terminalSafe(in.toStdString()))));
  }

  void findsControlCharacters() {
    QCOMPARE(findControlChar("tok"), std::string::npos);
    QCOMPARE(findControlChar("caf\xC3\xA9"), std::string::npos);
    QCOMPARE(findControlChar(std::string("ab\0c", 4)), size_t(2));
    QCOMPARE(findControlChar("ab\xC2\x85"), size_t(2));  // NEL, a C1 control
    QCOMPARE(findControlChar("ab\xff"), size_t(2));      // not UTF-8
    QCOMPARE(findControlChar("a\tb"), size_t(1));
    QCOMPARE(terminalSafe("line\n\tend", true), std::string("line\n\tend"));
    QCOMPARE(describeControlChar("ab\x1b", 2),
             std::string("a control character (\\x1B at byte 2)"));
  }

  // ---- whole files or none ----
  void atomicFileIsWholeOrAbsent() {
    const std::string file = path("atomic.bin").toStdString();
    {
      AtomicFile f(file);
      f.write("first version");
      QVERIFY(!QFile::exists(QString::fromStdString(file)));  // not in place before commit
      f.commit();
    }
    QCOMPARE(entries(dir_.path()).filter("atomic"), QStringList{"atomic.bin"});
    {
      AtomicFile f(file);
      f.write(std::string(3 << 20, 'x'));  // past the buffer: written through
      QFile old(QString::fromStdString(file));
      QVERIFY(old.open(QIODevice::ReadOnly));
      QCOMPARE(old.readAll(), QByteArray("first version"));  // the old file until the rename
    }  // never committed: the temporary file goes, the old file stays
    QCOMPARE(entries(dir_.path()).filter("atomic"), QStringList{"atomic.bin"});
    QDir(dir_.path()).mkdir("a-folder");
    VERIFY_ERROR(caught([&] { AtomicFile f(path("a-folder").toStdString()); }), ErrorKind::Io,
                 "a-folder|a folder of that name exists");
    VERIFY_ERROR(caught([&] { writeFileAtomically(path("no/such/dir/f").toStdString(), "x"); }),
                 ErrorKind::Io, "no/such/dir/f|cannot create|No such file or directory");
  }

  // A file-size limit in this process: each writer fails with the file's name and the reason, and
  // leaves nothing (no partial file, no temporary file).
  void writersFailUnderFileSizeLimit() {
    const QString out = path("limited");
    QDir(dir_.path()).mkdir("limited");
    Model m(loadModel(kTiny), makeCpuBackend());
    const Trace t = m.forward({{m.encodeSource("ich mochte ein bier")}, {}, {{1, 2, 3}}});
    const std::vector<float> big(100000, 1.0f);
    {
      FileSizeLimit limit(4096);
      VERIFY_ERROR(
          caught([&] { writeNpy((out + "/big.npy").toStdString(), big.data(), {100000}); }),
          ErrorKind::Io, "big.npy|File too large");
      VERIFY_ERROR(caught([&] {
                     writeSafetensors((out + "/m.safetensors").toStdString(),
                                      {{"w", DType::F32, {100000}, std::vector<uint8_t>(400000)}},
                                      {});
                   }),
                   ErrorKind::Io, "m.safetensors|File too large");
    }
    {
      FileSizeLimit limit(600);  // enc_self_probs.npy has 640 bytes, the small files fewer
      VERIFY_ERROR(caught([&] { dumpTrace(t, out.toStdString()); }), ErrorKind::Io,
                   "the trace was not written|File too large");
    }
    QCOMPARE(entries(out), QStringList{});
    dumpTrace(t, out.toStdString());  // without the limit it works
    QVERIFY(entries(out).contains("logits.npy") && entries(out).contains("tokens.json"));
    QVERIFY(entries(out).filter(".part").isEmpty());
  }

  // `run --heads … --rows …`: only the chosen heads' chosen rows, several ranges one after another,
  // row for row what the whole dump holds; wrong heads and ranges refused before anything is
  // written.
  void headDumpHoldsTheChosenRows() {
    Model m(loadModel(kTiny), makeCpuBackend());
    const Trace t = m.forward({{m.encodeSource("ich mochte ein bier")}, {}, {{1, 2, 3, 4, 5}}});
    const std::vector<HeadChoice> heads = parseHeadChoices("enc_self:2:3,dec_self:1:1,cross:2:4");
    QCOMPARE(int(heads.size()), 3);
    QCOMPARE(headChoiceName(heads[2]), std::string("cross:2:4"));
    const std::vector<RowRange> rows = parseRowRanges("0:1,3:");
    QCOMPARE(int(rows.size()), 2);
    QCOMPARE(rows[1].begin, 3);
    QCOMPARE(rows[1].end, -1);
    const QString out = path("head-dump");
    dumpHeads(t, heads, rows, out.toStdString());
    QCOMPARE(entries(out).size(), 10);  // three files per head and tokens.json
    QFile jf(out + "/tokens.json");
    QVERIFY(jf.open(QIODevice::ReadOnly));
    const json j = json::parse(jf.readAll().toStdString());
    QCOMPARE(int(j["heads"].size()), 3);
    for (size_t n = 0; n < heads.size(); ++n) {
      const AttentionBlock& a = *t.block(heads[n].kind, heads[n].layer);
      const std::vector<int> want_rows = [&] {
        std::vector<int> r = {0};
        for (int i = 3; i < a.q_len; ++i) r.push_back(i);
        return r;
      }();
      QCOMPARE(j["heads"][n]["rows"], json::parse("[[0,1],[3," + std::to_string(a.q_len) + "]]"));
      const int K = a.k_len, R = int(want_rows.size());
      const std::string stem = out.toStdString() + "/" + attentionKindName(heads[n].kind) + "_" +
                               std::to_string(heads[n].layer + 1) + "_" +
                               std::to_string(heads[n].head + 1);
      auto body = [&](const std::string& file, const char* descr, size_t cell) {
        QFile f(QString::fromStdString(stem + file));
        if (!f.open(QIODevice::ReadOnly)) return QByteArray();
        const QByteArray all = f.readAll();
        const std::string pre = npyPreamble(descr, {R, K});
        if (all.size() != qsizetype(pre.size() + size_t(R) * K * cell) ||
            all.left(qsizetype(pre.size())).toStdString() != pre)
          return QByteArray();
        return all.mid(qsizetype(pre.size()));
      };
      const QByteArray probs = body("_probs.npy", "<f4", 4), scores = body("_scores.npy", "<f4", 4),
                       mask = body("_mask.npy", "|u1", 1);
      QVERIFY(!probs.isEmpty() && !scores.isEmpty() && !mask.isEmpty());
      const std::vector<float> dp = a.denseProbs(), ds = a.denseScores();
      const std::vector<uint8_t> dm = a.denseMask();
      for (int r = 0; r < R; ++r) {
        double sum = 0;
        for (int k = 0; k < K; ++k) {
          const size_t at = ((size_t)heads[n].head * a.q_len + want_rows[r]) * K + k;
          float p, s;
          std::memcpy(&p, probs.constData() + ((size_t)r * K + k) * 4, 4);
          std::memcpy(&s, scores.constData() + ((size_t)r * K + k) * 4, 4);
          QCOMPARE(p, dp[at]);
          QCOMPARE(s, ds[at]);
          QCOMPARE(uint8_t(mask[qsizetype((size_t)r * K + k)]), dm[at]);
          sum += p;
        }
        QVERIFY(std::abs(sum - 1) < 1e-5);
      }
    }
    VERIFY_ERROR(caught([&] { parseRowRanges("3:1"); }), ErrorKind::BadInput, "selects no row");
    VERIFY_ERROR(caught([&] { parseRowRanges("4:,5:6"); }), ErrorKind::BadInput,
                 "increasing order");
    VERIFY_ERROR(caught([&] { parseRowRanges("0:4,2:6"); }), ErrorKind::BadInput,
                 "not overlapping");
    VERIFY_ERROR(caught([&] { parseRowRanges("a:b"); }), ErrorKind::BadInput, "not a whole number");
    VERIFY_ERROR(caught([&] { parseHeadChoices("enc:1:1"); }), ErrorKind::BadInput,
                 "enc_self, dec_self, cross");
    VERIFY_ERROR(caught([&] { parseHeadChoices("enc_self:0:1"); }), ErrorKind::BadInput,
                 "count from 1");
    const QString refused = path("head-dump-refused");
    VERIFY_ERROR(caught([&] {
                   dumpHeads(t, parseHeadChoices("enc_self:1:1,enc_self:9:1"), {},
                             refused.toStdString());
                 }),
                 ErrorKind::BadInput, "enc_self:9:1|enc_self layers");
    VERIFY_ERROR(
        caught([&] { dumpHeads(t, heads, parseRowRanges("0:2,40:"), refused.toStdString()); }),
        ErrorKind::BadInput, "rows 40:|query rows");
    QVERIFY(!QDir(refused).exists());
  }

  // A file of the dump that cannot be put in place: no file of the new dump appears, the old dump
  // stays as it was.
  void dumpIsAllOrNothing() {
    const QString out = path("dump-folder");
    Model m(loadModel(kTiny), makeCpuBackend());
    const Trace t1 = m.forward({{m.encodeSource("ich mochte ein bier")}, {}, {{1, 2, 3}}});
    dumpTrace(t1, out.toStdString());
    const auto before = digests(out);
    QVERIFY(before.size() >= 11);
    QVERIFY(QFile::remove(out + "/tokens.json"));
    QVERIFY(QDir(out).mkdir("tokens.json"));  // the last file's name is taken by a folder
    const Trace t2 = m.forward({{m.encodeSource("ich mochte")}, {}, {{1, 5}}});
    VERIFY_ERROR(caught([&] { dumpTrace(t2, out.toStdString()); }), ErrorKind::Io,
                 "tokens.json|folder");
    auto after = digests(out);
    auto expected = before;
    expected.remove("tokens.json");
    QCOMPARE(after, expected);
    QVERIFY(entries(out).filter(".part").isEmpty());
  }

  // attnviz-cli under `ulimit -f`: exit 1 with the reason, not killed by SIGXFSZ (it ignores the
  // signal itself), nothing partial left, an earlier dump untouched.
  void cliDumpUnderFileSizeLimit() {
    const QString out = path("cli-limited");
    CliResult r = cli(dumpArgs(out), "ulimit -f 2;");  // 1 KiB (dash counts 512-byte blocks)
    QVERIFY2(!r.crashed, qPrintable(r.err));
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("File too large") && r.err.contains("the trace was not written"),
             qPrintable(r.err));
    QCOMPARE(entries(out), QStringList{});
    r = cli(dumpArgs(out));
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto before = digests(out);
    r = cli(dumpArgs(out, "ich mochte"), "ulimit -f 2;");
    QCOMPARE(r.code, 1);
    QCOMPARE(digests(out), before);
  }

  // A full disk (a 16 KiB tmpfs in a mount namespace of its own; skipped where one cannot be made).
  void cliDumpOnFullDisk() {
    if (QStandardPaths::findExecutable("unshare").isEmpty()) QSKIP("unshare is not installed");
    const QString mnt = path("tiny-fs");
    QDir(dir_.path()).mkdir("tiny-fs");
    QProcess p;
    const QString script =
        "mount -t tmpfs -o size=16k tmpfs \"$1\" || exit 77; \"$0\" run \"$2\" --src 'ich mochte "
        "ein bier' --qkv --dump \"$1/trace\"; rc=$?; echo \"entries: $(ls -A \"$1/trace\" | wc "
        "-l)\"; exit $rc";
    p.start("unshare", {"-m", "--propagation", "private", "sh", "-c", script, ATTNVIZ_CLI, mnt,
                        QString::fromStdString(kTiny)});
    QVERIFY(p.waitForFinished(60000));
    const QString out = QString::fromUtf8(p.readAllStandardOutput());
    const QString err = QString::fromUtf8(p.readAllStandardError());
    if (p.exitCode() == 77 || p.exitStatus() != QProcess::NormalExit || err.contains("unshare"))
      QSKIP("no mount namespace with a tmpfs here (needs privileges)");
    QCOMPARE(p.exitCode(), 1);
    QVERIFY2(err.contains("No space left on device"), qPrintable(err));
    QVERIFY2(out.contains("entries: 0"), qPrintable(out));
  }

  // ---- the command line ----
  void cliRefusesWhatItCannotMean_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("mentions");
    const QString m = QString::fromStdString(kTiny);
    QTest::newRow("repeated --src")
        << QStringList{"run", m, "--src", "ich", "--src", "bier"} << 2 << "--src";
    QTest::newRow("repeated --max-len")
        << QStringList{"decode", m, "--src", "ich", "--max-len", "3", "--max-len", "4"} << 2
        << "--max-len";
    QTest::newRow("unknown option")
        << QStringList{"run", m, "--src", "ich", "--sauce", "x"} << 2 << "--sauce";
    QTest::newRow("unknown command") << QStringList{"frobnicate"} << 2 << "frobnicate";
    QTest::newRow("no model") << QStringList{"run", "--src", "ich"} << 2 << "MODEL";
    QTest::newRow("--src and --src-ids")
        << QStringList{"run", m, "--src", "ich", "--src-ids", "1"} << 2 << "excludes";
    QTest::newRow("trailing comma in --src-ids")
        << QStringList{"run", m, "--src-ids", "1,2,"} << 1 << "empty entry 3";
    QTest::newRow("empty entry in --tgt-ids")
        << QStringList{"run", m, "--src-ids", "1", "--tgt-ids", "1,,2"} << 1 << "empty entry 2";
    QTest::newRow("empty --src-ids") << QStringList{"run", m, "--src-ids", ""} << 1 << "empty";
    // Inputs read from files.
    auto file = [&](const QString& name, const QByteArray& bytes) {
      QFile f(path(name));
      if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size()) qFatal("cannot write");
      return f.fileName();
    };
    QTest::newRow("--src-file missing") << QStringList{"run", m, "--src-file", path("absent.txt")}
                                        << 1 << "cannot read the text file of --src-file";
    QTest::newRow("--src-file holding a NUL")
        << QStringList{"run", m, "--src-file", file("nul.txt", QByteArray("ich\0bier", 8))} << 1
        << "NUL byte";
    QTest::newRow("--src-ids-file a folder")
        << QStringList{"run", m, "--src-ids-file", dir_.path()} << 1 << "id file of --src-ids-file";
    {
      QFile big(path("big.txt"));  // sparse: no 17 MiB written
      if (!big.open(QIODevice::WriteOnly) || !big.resize(17 << 20)) qFatal("cannot resize");
    }
    QTest::newRow("--tgt-ids-file too large")
        << QStringList{"run", m, "--src-ids", "1", "--tgt-ids-file", path("big.txt")} << 1
        << "at most 16.0 MiB";
    QTest::newRow("--src-file and --src-ids")
        << QStringList{"run", m, "--src-ids", "1", "--src-file", file("s.txt", "ich")} << 2
        << "excludes";
    QTest::newRow("empty --src-ids-file")
        << QStringList{"run", m, "--src-ids-file", file("empty.txt", "\n")} << 1 << "empty";
    QTest::newRow("bench --lengths ''")
        << QStringList{"bench", m, "--lengths", ""} << 2 << "--lengths";
    QTest::newRow("bench --lengths 4,,8")
        << QStringList{"bench", m, "--lengths", "4,,8"} << 2 << "--lengths";
    QTest::newRow("bench length 0")
        << QStringList{"bench", m, "--lengths", "0"} << 2 << "outside 1..64";
    QTest::newRow("bench length past max_len")
        << QStringList{"bench", m, "--lengths", "65"} << 2 << "outside 1..64";
    QTest::newRow("--max-len 0") << QStringList{"decode", m, "--src", "ich", "--max-len", "0"} << 2
                                 << "--max-len";
    QTest::newRow("--max-len not a number")
        << QStringList{"decode", m, "--src", "ich", "--max-len", "ten"} << 2 << "--max-len";
    QTest::newRow("--repeat 0") << QStringList{"bench", m, "--repeat", "0"} << 2 << "--repeat";
    QTest::newRow("--backend gpu")
        << QStringList{"run", m, "--src", "ich", "--backend", "gpu"} << 2 << "--backend";
    QTest::newRow("train without --out") << QStringList{"train", "--steps", "1"} << 2 << "--out";
    QTest::newRow("train --task unknown")
        << QStringList{"train", "--out", "x.safetensors", "--task", "juggle"} << 2 << "--task";
    QTest::newRow("train --steps -1")
        << QStringList{"train", "--out", "x.safetensors", "--steps", "-1"} << 2 << "--steps";
    QTest::newRow("train --dropout 1")
        << QStringList{"train", "--out", "x.safetensors", "--dropout", "1"} << 2 << "--dropout";
    QTest::newRow("train positional argument")
        << QStringList{"train", "--out", "x.safetensors", "model"} << 2 << "model";
  }
  void cliRefusesWhatItCannotMean() {
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QString, mentions);
    const CliResult r = cli(args);
    QVERIFY2(!r.crashed, qPrintable(r.err));
    QCOMPARE(r.code, code);
    QVERIFY2(r.err.startsWith("attnviz-cli: error: ") && r.err.contains(mentions),
             qPrintable(r.err));
  }

  // An input read from a file is the input given on the command line: ids one a line or spaced,
  // a text's final line break not part of it.
  void cliInputFromFiles() {
    const QString m = QString::fromStdString(kTiny);
    auto write = [&](const QString& name, const QByteArray& bytes) {
      QFile f(path(name));
      QVERIFY(f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size());
    };
    // What the run printed but the time it took.
    auto printed = [](const CliResult& r) {
      QStringList lines = r.out.split('\n');
      lines.removeIf([](const QString& l) { return l.startsWith("forward pass:"); });
      return lines;
    };
    write("ids.txt", "1\n2 3,\n 4\n");
    write("text.txt", "ich mochte ein bier\r\n");
    const CliResult given = cli({"run", m, "--src-ids", "1,2,3,4"});
    const CliResult ids = cli({"run", m, "--src-ids-file", path("ids.txt")});
    QCOMPARE(given.code, 0);
    QCOMPARE(ids.code, 0);
    QCOMPARE(printed(ids), printed(given));
    const CliResult words = cli({"run", m, "--src", "ich mochte ein bier"});
    const CliResult text = cli({"run", m, "--src-file", path("text.txt")});
    QCOMPARE(words.code, 0);
    QCOMPARE(text.code, 0);
    QCOMPARE(printed(text), printed(words));
    QVERIFY(text.err.isEmpty());
  }

  // Every command has --help, listing the options README.md and docs/formats.md document.
  void cliHelp_data() {
    QTest::addColumn<QString>("command");
    QTest::addColumn<QStringList>("options");
    const QStringList model{"MODEL", "--config"};
    QTest::newRow("info") << "info" << model;
    QTest::newRow("run")
        << "run"
        << model +
               QStringList{"--backend", "--src",       "--src-ids",         "--tgt",
                           "--tgt-ids", "--src-file",  "--tgt-ids-file",    "--segment-ids",
                           "--dump",    "--max-len",   "--no-padding-mask", "--no-subsequent-mask",
                           "--qkv",     "--keep-going"};
    QTest::newRow("decode") << "decode"
                            << model + QStringList{"--backend", "--src",       "--src-ids",
                                                   "--tgt",     "--tgt-ids",   "--max-len",
                                                   "--ids",     "--keep-going"};
    QTest::newRow("bench") << "bench"
                           << model +
                                  QStringList{"--backend", "--lengths", "--repeat", "--uncached"};
    QTest::newRow("train") << "train"
                           << QStringLiteral(
                                  "--out --log --task --data --min-len --max-len --size "
                                  "--norm --steps --batch --seed --lr --warmup "
                                  "--schedule --weight-decay --clip --dropout "
                                  "--label-smoothing --threads --backend --eval-every "
                                  "--eval-size --target-accuracy")
                                  .split(' ');
    QTest::newRow("models") << "models" << QStringList{"--help"};
  }
  void cliHelp() {
    QFETCH(QString, command);
    QFETCH(QStringList, options);
    for (const QStringList& args : {QStringList{command, "--help"}, QStringList{"help", command}}) {
      const CliResult r = cli(args);
      QCOMPARE(r.code, 0);
      QVERIFY2(r.out.contains("attnviz-cli " + command), qPrintable(r.out));
      for (const QString& o : options) QVERIFY2(r.out.contains(o), qPrintable(o + " in " + r.out));
    }
    const CliResult top = cli({"--help"});
    QCOMPARE(top.code, 0);
    QVERIFY(top.out.contains(command));
    QCOMPARE(cli({}).code, 2);  // no command: the overview, as wrong usage
  }

  // bench's random ids stay inside vocabularies of 1, 2 and 3 tokens (it crashed with a stack
  // overflow in uniform_int_distribution when fewer than 4).
  void benchOnTinyVocabularies_data() {
    QTest::addColumn<int>("src");
    QTest::addColumn<int>("tgt");
    QTest::newRow("1 + 1 tokens") << 1 << 1;
    QTest::newRow("2 + 2 tokens") << 2 << 2;
    QTest::newRow("3 + 3 tokens") << 3 << 3;
    QTest::newRow("1 + 4 tokens") << 1 << 4;
  }
  void benchOnTinyVocabularies() {
    QFETCH(int, src);
    QFETCH(int, tgt);
    const QString file = path(QString("vocab_%1_%2.safetensors").arg(src).arg(tgt));
    test::writeRandomModel(file.toStdString(), test::smallConfig(src, tgt));
    const CliResult r = cli({"bench", file, "--lengths", "1,5", "--repeat", "1"});
    QVERIFY2(!r.crashed && r.code == 0, qPrintable(r.err));
    QVERIFY(r.out.contains("n = 5 tokens"));
  }

  // A model of max_len 20 that never emits its end token: decode and run stop at 20 positions
  // whatever --max-len or the default (source length + 5) asks for.
  void decodeStopsAtMaxLen() {
    const QString file = path("maxlen20.safetensors");
    test::writeRandomModel(file.toStdString(), test::smallConfig(30, 6, 20), 3,
                           [](std::vector<NamedTensor>& t) {
                             // Logits: token 3 gets sum(h), every other 0; the end token (2)
                             // never wins (a tie goes to the lower id).
                             float* w = test::tensorValues(t, "projection.weight");
                             std::fill(w, w + 6 * 16, 0.0f);
                             std::fill(w + 3 * 16, w + 4 * 16, 1.0f);
                           });
    QStringList src;
    for (int i = 1; i < 19; ++i) src << QString("s%1").arg(i);  // 18 words: default 23 > 20
    for (const QStringList& extra :
         {QStringList{}, QStringList{"--max-len", "100"}, QStringList{"--max-len", "1048576"}}) {
      CliResult r = cli(QStringList{"decode", file, "--src", src.join(' '), "--ids"} + extra);
      QVERIFY2(r.code == 0, qPrintable(r.err));
      const int ids = (int)r.out.trimmed().split(',').size();
      QVERIFY2(ids >= 19 && ids <= 20, qPrintable(r.out));
      QVERIFY(!r.out.split(',').contains("2"));
      r = cli(QStringList{"run", file, "--src", src.join(' ')} + extra);
      QVERIFY2(r.code == 0, qPrintable(r.err));
      const QString target = r.out.section("target: ", 1, 1).section('\n', 0, 0);
      QCOMPARE(target.split(' ').size(), 20);
    }
  }

  // ---- non-finite values ----
  void softmaxKeepsNaNApartFromMasked() {
    auto be = makeCpuBackend();
    // Rows: all NaN; one NaN; +Inf; fully masked with -inf; normal.
    const int Tk = 3, rows = 5;
    const std::vector<float> scores = {kNaN, kNaN, kNaN, 1, kNaN, 2, 1, kInf, 2, 1, 2, 3, 0, 0, 0};
    std::vector<uint8_t> mask(rows * Tk, 0);
    std::fill(mask.begin() + 9, mask.begin() + 12, 1);
    std::vector<float> cpu(rows * Tk), cuda(rows * Tk);
    be->masked_softmax_forward(scores.data(), mask.data(), cpu.data(), 1, 1, rows, Tk, -kInf);
    for (int r = 0; r < rows; ++r)
      cuda::masked_softmax_row(scores.data() + r * Tk, mask.data() + r * Tk, cuda.data() + r * Tk,
                               Tk, -kInf);
    for (const auto* p : {&cpu, &cuda}) {
      for (int j = 0; j < 9; ++j) QVERIFY2(std::isnan((*p)[j]), qPrintable(QString::number(j)));
      for (int j = 9; j < 12; ++j) QCOMPARE((*p)[j], 0.0f);  // masked: zeros, as documented
      for (int j = 12; j < 15; ++j) QVERIFY(std::abs((*p)[j] - 1.0f / 3) < 1e-6f);
    }
  }

  void scanTraceFindsTheFirstBlock() {
    Trace t = traceOf(3, 2, 4);
    QVERIFY(scanTrace(t).empty());
    // Block 1: head 1, row 2's normaliser is NaN (its 4 probabilities follow); block 2: a query
    // entry is NaN (that row's 4 scores and 4 probabilities follow, and the vector is counted).
    t.blocks[1].row_prob[size_t(1 * 4 + 2)] = kNaN;
    t.blocks[2].q[size_t((0 * 4 + 1) * 4 + 3)] = kNaN;
    std::vector<float> rows(12, 0.0f);
    rows[7] = kNaN;
    const std::vector<uint8_t> keep(4, 1);
    t.logits = TokenLogits(1, 4, 3);
    t.logits.add(0, 4, rows.data(), nullptr, keep.data());
    const NonFiniteReport r = scanTrace(t);
    QCOMPARE(r.spots.size(), size_t(3));
    QCOMPARE(r.first()->block, 1);
    QCOMPARE(r.first()->probs.nan, int64_t(4));
    QVERIFY(!r.first()->scores.any());
    QCOMPARE(r.spots[1].scores.nan, int64_t(4));
    QCOMPARE(r.spots[1].probs.nan, int64_t(4));
    QCOMPARE(r.spots[1].qkv.nan, int64_t(1));
    const QString s = QString::fromStdString(r.summary());
    for (const char* n : {"first appear in encoder self-attention, layer 1", "probabilities: 4 NaN",
                          "2 of 3 attention blocks", "the token logits"})
      QVERIFY2(s.contains(n), qPrintable(s));
  }

  // Finite embeddings of 1e20 overflow: the CLI names the first block and the counts, exits 1
  // (and writes no dump) unless --keep-going.
  void cliReportsNonFinite() {
    const QString file = path("overflow.safetensors");
    test::writeRandomModel(file.toStdString(), test::smallConfig(), 1,
                           [](std::vector<NamedTensor>& t) {
                             float* e = test::tensorValues(t, "encoder.src_emb.weight");
                             for (int i = 0; i < 6 * 16; ++i) e[i] *= 1e20f;
                           });
    const QString out = path("overflow-dump");
    CliResult r = cli({"run", file, "--src", "s1 s2 s3", "--dump", out});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("first appear in encoder self-attention, layer 0") &&
                 r.err.contains("NaN") && r.err.contains("--keep-going"),
             qPrintable(r.err));
    QVERIFY(r.out.isEmpty());
    QVERIFY(!QFile::exists(out));
    r = cli({"run", file, "--src", "s1 s2 s3", "--keep-going", "--dump", out});
    QVERIFY2(r.code == 0 && r.err.contains("warning: non-finite values"), qPrintable(r.err));
    QVERIFY(r.out.contains("argmax: NaN"));
    QVERIFY(QFile::exists(out + "/logits.npy"));
    r = cli({"decode", file, "--src", "s1 s2 s3"});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("logits after target position 1") && r.err.contains("NaN of 6"),
             qPrintable(r.err));
  }

  // ---- the header before the data ----
  void headerIsCheckedBeforeTheData() {
    // 4 GiB, sparse: a 16-byte "header" that is not JSON. Nothing past it may be read.
    const std::string file = path("huge-not-json.safetensors").toStdString();
    {
      std::ofstream out(file, std::ios::binary);
      const char head[8] = {16, 0, 0, 0, 0, 0, 0, 0};
      out.write(head, 8);
      out << "this is no JSON!";
    }
    QVERIFY(::truncate(file.c_str(), off_t(4) << 30) == 0);
    std::ofstream("/proc/self/clear_refs") << "5";  // the peak resident set starts here
    const uint64_t rss = statusBytes("VmRSS");
    VERIFY_ERROR(caught([&] { loadModel(file); }), ErrorKind::InvalidJson,
                 "huge-not-json.safetensors|invalid JSON");
    if (const uint64_t peak = statusBytes("VmHWM"); peak > 0)
      QVERIFY2(peak - rss < (uint64_t(64) << 20), "the data was read before the header");
    // A FIFO is refused at once (no blocking open).
    const std::string fifo = path("fifo.safetensors").toStdString();
    QVERIFY(::mkfifo(fifo.c_str(), 0600) == 0);
    VERIFY_ERROR(caught([&] { SafetensorsFile::open(fifo); }), ErrorKind::Io, "not a regular file");
    // Still fine: a good file loads.
    QVERIFY(loadModel(kTiny)->warnings.empty());
  }

  // The model-size check counts the backend's copy of the weights: 1024 heads and 256 + 256 layers
  // (7.3 GB of float32 weights, under the 8 GiB limit, 14.6 GB with the copy) are refused from the
  // config, before a tensor is read.
  void everyLimitAtItsMaximumIsRefused() {
    json c = test::smallConfig();
    c["d_model"] = 512;
    c["d_ff"] = 512;
    c["n_heads"] = 1024;
    c["d_k"] = c["d_v"] = 1;
    c["n_encoder_layers"] = c["n_decoder_layers"] = 256;
    const std::string file = path("limits.safetensors").toStdString();
    test::writeRandomModel(file, test::smallConfig(), 1, {}, c);
    VERIFY_ERROR(caught([&] { loadModel(file); }), ErrorKind::TooLarge,
                 "256+256 layers|to load and run|the limit is 8.0 GiB");
  }

  // ---- text from files reaches the terminal escaped ----
  void cliEscapesTextFromFiles() {
    // A file name that clears the screen and sets the title.
    const QString evil = path("\x1b[2J\x1b]0;model OK\x07.safetensors");
    QVERIFY(QFile::copy(QString::fromStdString(kTiny), evil));
    CliResult r = cli({"info", evil});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(terminalClean(r.out) && r.out.contains("\\x1B[2J\\x1B]0;model OK\\x07"),
             qPrintable(r.out));
    r = cli({"run", evil, "--src", "ich trinke"});  // an error quoting the path
    QCOMPARE(r.code, 1);
    QVERIFY2(terminalClean(r.err), qPrintable(r.err));
    // A tensor name with a NUL and an escape: the error names it whole, escaped.
    const QString named = path("named.safetensors");
    test::writeRandomModel(named.toStdString(), test::smallConfig(), 1,
                           [](std::vector<NamedTensor>& t) {
                             const char name[] = "projection\0\x1b[1A.weight";
                             t.back().name = std::string(name, sizeof name - 1);
                           });
    r = cli({"info", named});
    QCOMPARE(r.code, 1);
    QVERIFY2(terminalClean(r.err) && r.err.contains("projection\\x00\\x1B[1A.weight"),
             qPrintable(r.err));
    // A config whose name sets the window title: refused, quoted escaped.
    const QString titled = path("titled.safetensors");
    json c = test::smallConfig();
    c["name"] = "\x1b]0;all good\x07";
    test::writeRandomModel(titled.toStdString(), test::smallConfig(), 1, {}, c);
    r = cli({"info", titled});
    QCOMPARE(r.code, 1);
    QVERIFY2(terminalClean(r.err) && r.err.contains("\\x1B]0;all good\\x07"), qPrintable(r.err));
    // A sentence typed with an escape sequence.
    r = cli({"run", QString::fromStdString(kTiny), "--src", "ich \x1b[31mbier"});
    QCOMPARE(r.code, 1);
    QVERIFY2(terminalClean(r.err) && r.err.contains("control character"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestHostileOutput)
#include "test_hostile_output.moc"

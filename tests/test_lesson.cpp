// The lesson page (model/lesson_html.h) without a browser: its size for the tutorial's full-size
// model at 32 tokens, the estimate against the page written, the stored probabilities and scores
// decoded here from the page's base64 against the trace (to the stated precision), the scope, text
// that could end a <script> early or spells the template's placeholders, refusals (a bad scope, a
// page too large) and the atomic write. tests/lesson_browser_check.py runs the page in chromium.
#include <QtTest>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "arch/weights.h"
#include "base/error.h"
#include "compute/backends.h"
#include "compute/cpu_backend.h"
#include "model/lesson_html.h"
#include "model/model.h"

using namespace attnviz;

namespace {

// A tutorial-size model with random weights (6+6 layers, d_model 512, 8 heads) on n source and n
// target tokens (ids 4… of its made-up words; the start token first).
struct TutorialRun {
  std::unique_ptr<Model> model;
  Trace trace;
};
TutorialRun tutorialRun(int n) {
  TutorialRun r;
  r.model = std::make_unique<Model>(makeRandomModel(tutorialSizeConfig(), 1234), makeCpuBackend());
  const ModelConfig& c = r.model->config();
  Inputs in;
  in.src.push_back({});
  in.tgt.push_back({c.bos_id});
  for (int i = 0; i < n; ++i) in.src[0].push_back(4 + (i * 7) % 900);
  for (int i = 1; i < n; ++i) in.tgt[0].push_back(4 + (i * 11) % 900);
  r.trace = r.model->forward(in, {});
  return r;
}

std::vector<uint8_t> fromBase64(const std::string& s) {
  auto value = [](char ch) -> int {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    return ch == '+' ? 62 : ch == '/' ? 63 : -1;
  };
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : s) {
    const int v = value(ch);
    if (v < 0) continue;  // '=' padding
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(uint8_t((acc >> bits) & 0xff));
    }
  }
  return out;
}

// binary16 → double, written from the format's definition (not from the writer's code).
double fromHalf(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double sign = (h & 0x8000) ? -1 : 1;
  if (e == 0) return sign * std::ldexp(m, -24);
  if (e == 31) return m ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + m, e - 25);
}

// The page's data: the JSON inside <script id="lesson-data">.
nlohmann::json pageData(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"lesson-data\">";
  const size_t a = page.find(open);
  const size_t b = page.find("</script>", a);
  if (a == std::string::npos || b == std::string::npos) return {};
  return nlohmann::json::parse(page.substr(a + open.size(), b - a - open.size()));
}

LessonText someText() {
  LessonText text;
  text.title = "a lesson";
  text.model_name = "tutorial-size";
  return text;
}

}  // namespace

class TestLesson : public QObject {
  Q_OBJECT
 private slots:
  // The issue's bound: the tutorial-size model at 32 tokens, every kind, layer and head, under
  // 5 MB at 16 bits; the estimate is the size written.
  void tutorialSizeUnderFiveMegabytes() {
    const TutorialRun r = tutorialRun(32);
    const ModelConfig& c = r.model->config();
    LessonText text = someText();
    text.output_vocab = &r.model->tgtVocab();
    for (int bits : {16, 8}) {
      LessonScope scope;
      scope.bits = bits;
      const uint64_t estimate = estimateLessonBytes(r.trace, c, scope, {}, text);
      const std::string page = lessonHtml(r.trace, c, scope, {}, text);
      QCOMPARE(estimate, uint64_t(page.size()));
      QVERIFY2(page.size() < 5'000'000, qPrintable(QString::number(page.size())));
      const auto data = pageData(page);
      QCOMPARE(int(data["blocks"].size()), 18);  // 6 encoder, 6 + 6 decoder blocks
      QCOMPARE(int(data["steps"].size()), 32);
      qInfo("tutorial size at 32 tokens, %d bits: %.2f MB", bits, page.size() / 1e6);
    }
  }

  // Every stored probability (the heads kept and the mean of all heads) within the stated error of
  // the trace, every raw score within binary16's rounding, the mask as the trace's.
  void storedValuesMatchTheTrace() {
    const TutorialRun r = tutorialRun(12);
    const ModelConfig& c = r.model->config();
    for (int bits : {16, 8}) {
      LessonScope scope;
      scope.bits = bits;
      scope.kinds = {AttentionKind::Cross, AttentionKind::DecoderSelf};
      scope.layers = {1, 5};
      scope.heads = {0, 6};
      const auto data = pageData(lessonHtml(r.trace, c, scope, {}, someText()));
      QCOMPARE(data["precision"]["bits"].get<int>(), bits);
      const double err = data["precision"]["max_error"].get<double>();
      QCOMPARE(err, lessonProbabilityError(bits));
      QCOMPARE(data["heads"], nlohmann::json({0, 6}));
      QCOMPARE(int(data["blocks"].size()), 4);
      double worst = 0;
      for (const auto& jb : data["blocks"]) {
        const AttentionKind kind =
            jb["kind"] == "cross" ? AttentionKind::Cross : AttentionKind::DecoderSelf;
        const AttentionBlock& a = *r.trace.block(kind, jb["layer"].get<int>());
        const auto probs = fromBase64(jb["probs"].get<std::string>());
        const auto scores = fromBase64(jb["scores"].get<std::string>());
        const auto mask = fromBase64(jb["mask"].get<std::string>());
        const size_t cells = size_t(a.q_len) * a.k_len;
        QCOMPARE(probs.size(), 3 * cells * (bits / 8));
        QCOMPARE(scores.size(), 3 * cells * 2);
        QCOMPARE(mask.size(), cells);
        const double scale = bits == 8 ? 255 : 65535;
        for (int slot = 0; slot < 3; ++slot)
          for (int i = 0; i < a.q_len; ++i)
            for (int j = 0; j < a.k_len; ++j) {
              double p = 0, s = 0;  // the trace's value: a head kept, or the mean of all heads
              if (slot < 2) {
                const int h = slot == 0 ? 0 : 6;
                p = a.prob(0, h, i, j);
                s = a.score(0, h, i, j);
              } else {
                for (int h = 0; h < a.heads; ++h) {
                  p += a.prob(0, h, i, j) / a.heads;
                  s += a.score(0, h, i, j) / a.heads;
                }
              }
              const size_t at = slot * cells + size_t(i) * a.k_len + j;
              const double stored = bits == 8 ? probs[at] / scale
                                              : (probs[2 * at] | (probs[2 * at + 1] << 8)) / scale;
              // 1e-6: the float32 sum of the mean against this double one.
              QVERIFY2(std::abs(stored - p) <= err + 1e-6,
                       qPrintable(QString("%1 vs %2").arg(stored).arg(p)));
              worst = std::max(worst, std::abs(stored - p));
              const double half = fromHalf(uint16_t(scores[2 * at] | (scores[2 * at + 1] << 8)));
              QVERIFY2(std::abs(half - s) <= std::abs(s) * std::ldexp(1, -11) + 1e-7,
                       qPrintable(QString("score %1 vs %2").arg(half).arg(s)));
              QCOMPARE(mask[size_t(i) * a.k_len + j] != 0, a.masked(0, i, j));
            }
      }
      qInfo("%d bits: largest error of a stored probability %.3g (stated %.3g)", bits, worst, err);
      QVERIFY(worst > 0);  // the quantization is really there
    }
  }

  // Tokens are text from files: one that closes the script must not end the page's data.
  void tokensCannotEndTheScript() {
    TutorialRun r = tutorialRun(4);
    r.trace.src_tokens[0][1] = "</script><script>alert(1)</script>";
    LessonText text = someText();
    text.title = "<b>title</b>";
    const std::string page = lessonHtml(r.trace, r.model->config(), {}, {}, text);
    QVERIFY(page.find("<script>alert(1)") == std::string::npos);
    QVERIFY(page.find("<title>&lt;b&gt;title&lt;/b&gt;</title>") != std::string::npos);
    const auto data = pageData(page);
    QCOMPARE(data["source"][1].get<std::string>(),
             std::string("</script><script>alert(1)</script>"));
  }

  // A title or model name (a path, --title) spelling the template's placeholders stays text: the
  // template is filled in one pass over the template only, so the data and the script land once,
  // where they belong, never in the <title> (the page would never start).
  void placeholdersInTheTextStayText() {
    const TutorialRun r = tutorialRun(4);
    LessonText text = someText();
    text.title = "a @LESSON_DATA@ b /*@LESSON_JS@*/ c /*@LESSON_CSS@*/ d @LESSON_TITLE@";
    text.model_name = "/tmp/@LESSON_DATA@/*@LESSON_JS@*/.pt";
    const std::string page = lessonHtml(r.trace, r.model->config(), {}, {}, text);
    QCOMPARE(estimateLessonBytes(r.trace, r.model->config(), {}, {}, text), uint64_t(page.size()));
    auto count = [&](const std::string& what) {
      int n = 0;
      for (size_t at = page.find(what); at != std::string::npos; at = page.find(what, at + 1)) ++n;
      return n;
    };
    QCOMPARE(count("<title>" + text.title + "</title>"), 1);
    QCOMPARE(count("<h1 id=\"title\">" + text.title + "</h1>"), 1);
    QCOMPARE(count("<script>" + lessonScript() + "</script>"), 1);
    QCOMPARE(count(lessonScript()), 1);
    QCOMPARE(count("<style>" + lessonStyle() + "</style>"), 1);
    QCOMPARE(count(lessonStyle()), 1);
    QCOMPARE(count("id=\"lesson-data\">"), 1);
    // The placeholders left: the title's three copies' (<title>, heading, data) and the model
    // name's in the data, no other.
    QCOMPARE(count("@LESSON_DATA@"), 4);
    QCOMPARE(count("/*@LESSON_JS@*/"), 4);
    QCOMPARE(count("/*@LESSON_CSS@*/"), 3);
    QCOMPARE(count("@LESSON_TITLE@"), 3);
    // The data after the title and before the script, whole: it parses, the name as given.
    QVERIFY(page.find("id=\"lesson-data\">") > page.find("</h1>"));
    QVERIFY(page.find("id=\"lesson-data\">") < page.find("<script>" + lessonScript()));
    const auto data = pageData(page);
    QCOMPARE(data["title"].get<std::string>(), text.title);
    QCOMPARE(data["model"]["name"].get<std::string>(), text.model_name);
    QCOMPARE(int(data["blocks"].size()), 18);
  }

  void badScopesAreRefused() {
    const TutorialRun r = tutorialRun(4);
    const ModelConfig& c = r.model->config();
    auto refused = [&](LessonScope scope, const char* words) {
      try {
        lessonHtml(r.trace, c, scope, {}, someText());
      } catch (const Error& e) {
        QCOMPARE(e.kind(), ErrorKind::BadInput);
        QVERIFY2(std::string(e.what()).find(words) != std::string::npos, e.what());
        return;
      }
      QFAIL(words);
    };
    LessonScope s;
    s.bits = 12;
    refused(s, "8 or 16 bits, not 12");
    s = {};
    s.heads = {8};
    refused(s, "head 9 is not in this model (heads 1 to 8)");
    s = {};
    s.layers = {6};
    refused(s, "layer 7 is not in this model (layers 1 to 6)");
    s = {};
    s.top_k = 0;
    refused(s, "top-k");
  }

  // Too large: the message says the size and what to leave out; nothing is written.
  void tooLargeIsRefusedWithItsSize() {
    const TutorialRun r = tutorialRun(300);
    const ModelConfig& c = r.model->config();
    const uint64_t estimate = estimateLessonBytes(r.trace, c, {}, {}, someText());
    QVERIFY(estimate > kMaxLessonBytes);
    const std::string path = QDir::tempPath().toStdString() + "/attnviz-too-large-lesson.html";
    std::filesystem::remove(path);
    try {
      writeLessonHtml(path, r.trace, c, {}, {}, someText());
      QFAIL("a page of " + QByteArray::number(qulonglong(estimate)) + " bytes was written");
    } catch (const Error& e) {
      QCOMPARE(e.kind(), ErrorKind::TooLarge);
      const std::string m = e.what();
      QVERIFY2(m.find("the lesson would be") != std::string::npos &&
                   m.find("fewer layers, heads or kinds") != std::string::npos,
               e.what());
    }
    QVERIFY(!std::filesystem::exists(path));
    // Fewer heads and 8 bits bring it under the bound.
    LessonScope small;
    small.heads = {0};
    small.bits = 8;
    small.kinds = {AttentionKind::Cross};
    QVERIFY(estimateLessonBytes(r.trace, c, small, {}, someText()) < kMaxLessonBytes);
  }

  void writtenAtomically() {
    const TutorialRun r = tutorialRun(4);
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString() + "/lesson.html";
    writeLessonHtml(path, r.trace, r.model->config(), {}, {}, someText());
    QCOMPARE(uint64_t(std::filesystem::file_size(path)),
             estimateLessonBytes(r.trace, r.model->config(), {}, {}, someText()));
    const std::string missing = dir.path().toStdString() + "/no/such/folder/lesson.html";
    QVERIFY_THROWS_EXCEPTION(
        Error, writeLessonHtml(missing, r.trace, r.model->config(), {}, {}, someText()));
    QCOMPARE(std::distance(std::filesystem::directory_iterator(dir.path().toStdString()),
                           std::filesystem::directory_iterator()),
             1);  // lesson.html, no temporary file left
  }
};

QTEST_GUILESS_MAIN(TestLesson)
#include "test_lesson.moc"

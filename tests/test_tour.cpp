// Qt Test suite of the tour (Help › Tour, app/gui/shell/tour.h), offscreen: every step is run
// through the window and its state asserted — the model, the sentence, the view, the attention
// shown, the masks, the decoding steps — together with what each step's text claims about the
// bundled models (so a retrained model that no longer does what the tour says fails here); the
// offer on the first start (once, skippable, Help › Tour afterwards); giving back the user's model
// at the end. It also renders the user's guide's pictures (docs/images) and fails when the
// committed ones are stale.
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QFontInfo>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTabWidget>
#include <QtTest/QtTest>
#include <algorithm>
#include <memory>
#include <set>
#include <tuple>

#include "arch/bundled.h"
#include "compute/cpu_backend.h"
#include "gui_fixture.h"
#include "llama_shaped.h"
#include "session/attention_data.h"
#include "shell/main_window.h"
#include "shell/tour.h"
#include "shell/view_registry.h"
#include "views/atlas/atlas_view.h"
#include "views/decoding/decoding_view.h"
#include "views/masks/masks_view.h"
#include "views/positional/positional_view.h"
#include "views/view.h"
#include "views/why/why_view.h"
#include "widgets/fonts.h"

using namespace attnviz;
using namespace attnviz::gui;
using namespace gui_fixture;

namespace {

bool bundled(const QString& name) {
  for (const auto& m : listBundledModels())
    if (QString::fromStdString(m.name) == name) return true;
  return false;
}

Tour* tourOf(MainWindow& w) {
  return w.findChild<Tour*>(QStringLiteral("tour"));
}

// Runs the tour to step `index` (from wherever it is) and waits until the step is set up.
bool reach(Tour& tour, int index) {
  QSignalSpy ready(&tour, &Tour::stepReady);
  QSignalSpy failed(&tour, &Tour::stepFailed);
  if (!tour.running()) tour.start();
  if (tour.current() != index) tour.goTo(index);
  QElapsedTimer t;
  t.start();
  while (!(tour.ready() && tour.current() == index) && failed.isEmpty() && t.elapsed() < 60000)
    QTest::qWait(20);
  QCoreApplication::processEvents();
  return tour.ready() && tour.current() == index && failed.isEmpty();
}

// The matrix the views draw for the window's selection: [Tq, Tk] probabilities.
std::vector<float> shown(MainWindow& w, int* rows, int* cols) {
  auto snap = w.engine()->snapshot();
  const AttentionSelection s = w.state()->selection();
  const AttentionBlock* a = snap->trace->block(s.kind, s.layer);
  *rows = a->q_len;
  *cols = a->k_len;
  return attentionMatrix(*a, s, MatrixValues::Probabilities, -1e9f);
}

int argmaxOfRow(const std::vector<float>& m, int cols, int row) {
  const auto* r = m.data() + size_t(row) * cols;
  return int(std::max_element(r, r + cols) - r);
}

// For each head of a block: the mean over rows of the row's maximum (how peaked the head is).
std::vector<double> peaks(const AttentionBlock& a) {
  std::vector<double> out;
  for (int h = 0; h < a.heads; ++h) {
    AttentionSelection s;
    s.kind = a.kind;
    s.head = h;
    const std::vector<float> m = attentionMatrix(a, s, MatrixValues::Probabilities, -1e9f);
    double sum = 0;
    for (int i = 0; i < a.q_len; ++i)
      sum += *std::max_element(m.begin() + i * a.k_len, m.begin() + (i + 1) * a.k_len);
    out.push_back(sum / a.q_len);
  }
  return out;
}

// The words a step's rows read and its keys, as the views label them.
QStringList rowWords(MainWindow& w) {
  const AttentionSelection s = w.state()->selection();
  return queryLabels(*w.engine()->snapshot()->trace, s.kind, 0);
}
QStringList colWords(MainWindow& w) {
  const AttentionSelection s = w.state()->selection();
  return keyLabels(*w.engine()->snapshot()->trace, s.kind, 0);
}

QString plain(const QString& html) {
  QString t = html;
  t.remove(QRegularExpression(QStringLiteral("<[^>]*>")));
  return t.replace(QStringLiteral("&lt;"), QStringLiteral("<"))
      .replace(QStringLiteral("&gt;"), QStringLiteral(">"));
}

// ---- the guide's pictures ----------------------------------------------------------------------

// Where the committed pictures are, and where fresh renders go.
QString docsImages() {
  return QStringLiteral(ATTNVIZ_SOURCE_DIR "/docs/images");
}
QString freshImages() {
  return QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/guide");
}

// A 256-colour palette for `img` by median cut: the colours (5 bits a channel) are split, box by
// box, at the weighted median of the channel with the widest range; each box gives its mean colour.
// Screenshots keep their colours (the colormaps' gradients included) in a third of the bytes.
QList<QRgb> medianCutPalette(const QImage& img) {
  struct Colour {
    int c[3];
    qint64 n;
  };
  QHash<int, qint64> counts;
  for (int y = 0; y < img.height(); ++y) {
    const auto* p = reinterpret_cast<const QRgb*>(img.constScanLine(y));
    for (int x = 0; x < img.width(); ++x)
      ++counts[((qRed(p[x]) >> 3) << 10) | ((qGreen(p[x]) >> 3) << 5) | (qBlue(p[x]) >> 3)];
  }
  std::vector<Colour> colours;
  for (auto it = counts.cbegin(); it != counts.cend(); ++it)
    colours.push_back({{(it.key() >> 10) & 31, (it.key() >> 5) & 31, it.key() & 31}, it.value()});
  std::sort(colours.begin(), colours.end(), [](const Colour& a, const Colour& b) {
    return std::tie(a.c[0], a.c[1], a.c[2]) < std::tie(b.c[0], b.c[1], b.c[2]);
  });
  std::vector<std::pair<size_t, size_t>> boxes{{0, colours.size()}};  // [begin, end) of colours
  auto range = [&](const std::pair<size_t, size_t>& b, int ch) {
    int lo = 31, hi = 0;
    for (size_t i = b.first; i < b.second; ++i) {
      lo = std::min(lo, colours[i].c[ch]);
      hi = std::max(hi, colours[i].c[ch]);
    }
    return hi - lo;
  };
  while (boxes.size() < 256) {
    // The box with the widest channel range (ties: the first) is split.
    int best = -1, best_range = 0, best_ch = 0;
    for (size_t k = 0; k < boxes.size(); ++k)
      for (int ch = 0; ch < 3; ++ch)
        if (int r = range(boxes[k], ch); r > best_range) {
          best = int(k);
          best_range = r;
          best_ch = ch;
        }
    if (best < 0) break;  // every box holds one colour
    auto [b, e] = boxes[size_t(best)];
    std::sort(colours.begin() + b, colours.begin() + e, [&](const Colour& x, const Colour& y) {
      return std::tie(x.c[best_ch], x.c[0], x.c[1], x.c[2]) <
             std::tie(y.c[best_ch], y.c[0], y.c[1], y.c[2]);
    });
    qint64 total = 0, half = 0;
    for (size_t i = b; i < e; ++i) total += colours[i].n;
    size_t m = b;
    while (m + 1 < e && half + colours[m].n <= total / 2) half += colours[m++].n;
    if (m == b) ++m;
    boxes[size_t(best)] = {b, m};
    boxes.push_back({m, e});
  }
  QList<QRgb> palette;
  for (auto [b, e] : boxes) {
    double sum[3] = {0, 0, 0}, n = 0;
    for (size_t i = b; i < e; ++i) {
      for (int ch = 0; ch < 3; ++ch) sum[ch] += (colours[i].c[ch] * 8 + 4) * double(colours[i].n);
      n += double(colours[i].n);
    }
    palette << qRgb(int(sum[0] / n + 0.5), int(sum[1] / n + 0.5), int(sum[2] / n + 0.5));
  }
  return palette;
}

// The window as the guide shows it: the timing in the status bar cleared (it changes run to run),
// no text cursor, every view drawn, at most 256 colours (small files, same pixels every time).
QImage guideShot(MainWindow& w) {
  w.statusTime()->clear();
  w.statusBackend()->setText(QStringLiteral("Backend: CPU"));  // not the machine's CPU model
  w.tabs()->setFocus();
  if (View* v = w.currentView()) v->refreshNow();
  QElapsedTimer t;
  t.start();
  while (w.positionalView()->isVisible() && w.positionalView()->computing() && t.elapsed() < 20000)
    QTest::qWait(20);
  QTest::qWait(80);
  QCoreApplication::processEvents();
  const QImage img = w.grab().toImage().convertToFormat(QImage::Format_RGB32);
  return img.convertToFormat(QImage::Format_Indexed8, medianCutPalette(img),
                             Qt::ThresholdDither | Qt::AvoidDither);
}

// The share of pixels that differ by more than a little in any channel (1 for another size).
double difference(const QImage& a, const QImage& b) {
  if (a.size() != b.size()) return 1.0;
  const QImage x = a.convertToFormat(QImage::Format_RGB32),
               y = b.convertToFormat(QImage::Format_RGB32);
  qint64 differ = 0;
  for (int r = 0; r < x.height(); ++r) {
    const auto* p = reinterpret_cast<const QRgb*>(x.constScanLine(r));
    const auto* q = reinterpret_cast<const QRgb*>(y.constScanLine(r));
    for (int c = 0; c < x.width(); ++c) {
      const int d =
          std::max({std::abs(qRed(p[c]) - qRed(q[c])), std::abs(qGreen(p[c]) - qGreen(q[c])),
                    std::abs(qBlue(p[c]) - qBlue(q[c]))});
      if (d > 40) ++differ;
    }
  }
  return double(differ) / double(x.width() * x.height());
}

}  // namespace

class TourTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void cleanupTestCase();
  void stepsAreShortAndUseBundledModels();
  void everyStepSetsTheWindowUp();
  void endGivesBackTheUsersModel();
  void endMidwayAndClosePanel();
  void offeredOnceOnFirstStart();
  void guideImagesAreCurrent();
};

void TourTest::initTestCase() {
  // The tour's settings (the offer) in a place of their own, empty at the start.
  QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
  QCoreApplication::setApplicationName(QStringLiteral("test_tour"));
  QSettings().clear();
  for (const QString& m : {QStringLiteral("reorder"), QStringLiteral("reverse")})
    if (!bundled(m))
      QSKIP(qPrintable(QStringLiteral("the bundled model %1 is not found (ATTNVIZ_MODELS, "
                                      "resources/models): the tour runs on it")
                           .arg(m)));
  QVERIFY(QDir().mkpath(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR)));
  // The guide's pictures are compared pixel by pixel: drawn with the fonts attnviz ships, not
  // whichever this machine has (fonts.h).
  QVERIFY(usePinnedFonts());
}

void TourTest::cleanupTestCase() {
  QSettings().clear();
}

void TourTest::stepsAreShortAndUseBundledModels() {
  const auto steps = tourSteps();
  QVERIFY2(steps.size() >= 5 && steps.size() <= 8, "five to eight steps");
  QStringList ids;
  for (const TourStep& s : steps) {
    QVERIFY2(bundled(s.model), qPrintable(s.id));
    QVERIFY2(findViewSpec(s.view), qPrintable(s.id));  // a view of view_registry.cpp
    QVERIFY2(!ids.contains(s.id), qPrintable(s.id));
    ids << s.id;
    // Two sentences: what to look at, what to notice.
    const QString text = plain(s.text);
    const int sentences = int(text.count(QRegularExpression(QStringLiteral("[.!?](\\s|$)"))));
    QVERIFY2(sentences == 2, qPrintable(s.id + QStringLiteral(": ") + text));
  }
}

void TourTest::everyStepSetsTheWindowUp() {
  auto w = showWindow(false);
  QVERIFY(startAndWait(*w));
  Tour* tour = tourOf(*w);
  QVERIFY(tour);
  QAction* action = w->action(QStringLiteral("tour"));
  QVERIFY2(action, "Help › Tour");
  QVERIFY(!tour->panel()->isVisible());
  action->trigger();
  QVERIFY(tour->running());
  QVERIFY(tour->panel()->isVisible());
  const QString shots = QStringLiteral(ATTNVIZ_SCREENSHOT_DIR);
  for (int i = 0; i < tour->count(); ++i) {
    QVERIFY2(reach(*tour, i), qPrintable(QStringLiteral("step %1").arg(i + 1)));
    const TourStep& step = tour->steps()[size_t(i)];
    Engine* e = w->engine();
    auto snap = e->snapshot();
    QVERIFY(snap && snap->trace);
    // What every step sets up.
    QCOMPARE(e->modelSource(), step.model);
    QCOMPARE(w->sourceEdit()->text(), step.src);
    QCOMPARE(w->currentView()->name(), step.view);
    const AttentionSelection sel = w->state()->selection();
    QCOMPARE(int(sel.kind), int(step.kind));
    QCOMPARE(sel.layer, w->state()->layerCount(step.kind) - 1);
    QCOMPARE(e->masks().subsequent, step.masks.subsequent);
    QCOMPARE(e->masks().src_padding, step.masks.src_padding);
    QCOMPARE(snap->masks.subsequent, step.masks.subsequent);
    QCOMPARE(tour->panel()->titleLabel()->text(), step.title);
    QCOMPARE(tour->panel()->textLabel()->text(), step.text);
    QCOMPARE(tour->panel()->counterLabel()->text(),
             QStringLiteral("Step %1 of %2").arg(i + 1).arg(tour->count()));
    QCOMPARE(tour->panel()->backButton()->isEnabled(), i > 0);
    QVERIFY(tour->panel()->nextButton()->isEnabled());
    int rows = 0, cols = 0;
    const std::vector<float> m = shown(*w, &rows, &cols);
    const QStringList r = rowWords(*w), c = colWords(*w);

    // What each text says about the models.
    if (step.id == QStringLiteral("rows-and-columns")) {
      QCOMPARE(sel.head, -1);
      QCOMPARE(r, QStringList({"<bos>", "nara", "lugol", "na", "ka", "bizu", "bumal", "vu", "ro",
                               "lolan"}));
      QCOMPARE(c, QStringList({"the", "big", "dog", "sees", "a", "small", "cat"}));
      for (int i2 = 0; i2 < rows; ++i2) {
        double sum = 0;
        for (int j = 0; j < cols; ++j) sum += m[size_t(i2 * cols + j)];
        QVERIFY(std::abs(sum - 1.0) < 1e-4);  // every row adds up to 1
      }
      QCOMPARE(c[argmaxOfRow(m, cols, 1)], QStringLiteral("big"));  // the row of nara
    } else if (step.id == QStringLiteral("alignment")) {
      const auto p = peaks(*snap->trace->block(AttentionKind::Cross, sel.layer));
      QCOMPARE(sel.head, int(std::max_element(p.begin(), p.end()) - p.begin()));  // the sharpest
      const QStringList want{"dog", "big", "the", "", "cat", "small", "a", "", "sees"};
      for (int q = 0; q < want.size(); ++q)
        if (!want[q].isEmpty()) QCOMPARE(c[argmaxOfRow(m, cols, q)], want[q]);
      for (int q = 0; q < rows; ++q)
        QVERIFY2(*std::max_element(m.begin() + q * cols, m.begin() + (q + 1) * cols) > 0.5f,
                 "nearly all of each row on one word");
    } else if (step.id == QStringLiteral("anti-diagonal")) {
      QCOMPARE(sel.head, -1);
      for (int q = 0; q < 9; ++q)
        QCOMPARE(argmaxOfRow(m, cols, q), 8 - q);  // top right → bottom left
      QCOMPARE(r[1], QStringLiteral("9"));
      QCOMPARE(c[argmaxOfRow(m, cols, 1)], QStringLiteral("8"));
    } else if (step.id == QStringLiteral("heads")) {
      const auto first = peaks(*snap->trace->block(AttentionKind::Cross, 0));
      const auto last = peaks(*snap->trace->block(AttentionKind::Cross, sel.layer));
      QVERIFY2(*std::max_element(first.begin(), first.end()) <
                   *std::min_element(last.begin(), last.end()),
               "the first layer's heads spread, the last layer's are sharp");
      // The heads differ in the first layer and agree in the last: rows where all heads pick the
      // same word.
      auto agreeing = [&](int layer) {
        const AttentionBlock* b = snap->trace->block(AttentionKind::Cross, layer);
        int rows_agreeing = 0;
        for (int q = 0; q < b->q_len; ++q) {
          std::set<int> words;
          for (int h = 0; h < b->heads; ++h) {
            const std::vector<float> row = b->probRow(0, h, q);
            words.insert(int(std::max_element(row.begin(), row.end()) - row.begin()));
          }
          rows_agreeing += words.size() == 1;
        }
        return rows_agreeing;
      };
      QVERIFY2(agreeing(0) < agreeing(sel.layer),
               qPrintable(QStringLiteral("%1 vs %2").arg(agreeing(0)).arg(agreeing(sel.layer))));
      // ... and agree: each head of the last layer picks the mean's word in most rows.
      AttentionSelection mean = sel;
      mean.head = -1;
      const AttentionBlock* a = snap->trace->block(AttentionKind::Cross, sel.layer);
      const auto mm = attentionMatrix(*a, mean, MatrixValues::Probabilities, -1e9f);
      for (int h = 0; h < a->heads; ++h) {
        AttentionSelection one = sel;
        one.head = h;
        const auto hm = attentionMatrix(*a, one, MatrixValues::Probabilities, -1e9f);
        int same = 0;
        for (int q = 0; q < a->q_len; ++q)
          same += argmaxOfRow(hm, a->k_len, q) == argmaxOfRow(mm, a->k_len, q);
        QVERIFY2(same * 10 >= a->q_len * 7, qPrintable(QStringLiteral("head %1").arg(h + 1)));
      }
    } else if (step.id == QStringLiteral("look-ahead-off")) {
      QVERIFY(!w->masksView()->subsequentSwitch()->isChecked());
      QCOMPARE(sel.head, -1);
      // The upper triangle takes about half of each row.
      double above = 0;
      for (int q = 0; q < rows; ++q)
        for (int k = q + 1; k < cols; ++k) above += m[size_t(q * cols + k)];
      above /= rows;
      QVERIFY2(above > 0.3 && above < 0.7, qPrintable(QString::number(above)));
      // The same words; most top choices are now <eos>.
      QCOMPARE(r, QStringList({"<bos>", "nara", "lugol", "na", "ka", "bizu", "bumal", "vu", "ro",
                               "lolan"}));
      int eos = 0;
      for (const StepInfo& st : snap->steps) eos += st.argmax == QStringLiteral("<eos>");
      QVERIFY2(eos * 2 > int(snap->steps.size()), qPrintable(QString::number(eos)));
    } else if (step.id == QStringLiteral("stepping")) {
      QCOMPARE(int(snap->steps.size()), 5);
      QStringList read;
      for (const StepInfo& st : snap->steps) read << st.input;
      QCOMPARE(read, QStringList({"<bos>", "nara", "lugol", "na", "ka"}));
      QCOMPARE(snap->steps.back().argmax, QStringLiteral("bizu"));
      QVERIFY(!snap->finished);
      QCOMPARE(c[argmaxOfRow(m, cols, rows - 1)], QStringLiteral("cat"));  // the newest row
    } else if (step.id == QStringLiteral("branching")) {
      QStringList written;
      for (const StepInfo& st : snap->steps)
        if (st.chosen_id >= 0) written << st.chosen;
      QCOMPARE(written, QStringList({"9", "3", "7", "6", "5", "4", "3", "2", "1", "<eos>"}));
      QCOMPARE(snap->steps[1].argmax, QStringLiteral("8"));  // 3 was not the model's choice
      QCOMPARE(snap->steps[2].argmax, QStringLiteral("7"));
      AttentionSelection mean = sel;
      mean.head = -1;
      const auto mm = attentionMatrix(*snap->trace->block(AttentionKind::Cross, sel.layer), mean,
                                      MatrixValues::Probabilities, -1e9f);
      for (int q = 0; q < 9; ++q) QCOMPARE(argmaxOfRow(mm, cols, q), 8 - q);  // carries on
      // The Decoding view shows the row after the chosen 3: it writes 7.
      QCOMPARE(w->decodingView()->currentStep(), 2);
      QCOMPARE(snap->steps[2].input, QStringLiteral("3"));
      QCOMPARE(c[argmaxOfRow(mm, cols, 2)], QStringLiteral("7"));
    } else {
      QFAIL(qPrintable(QStringLiteral("no check for step ") + step.id));
    }
    const QString file =
        QDir(shots).filePath(QStringLiteral("tour-%1-%2.png").arg(i + 1).arg(step.id));
    QVERIFY2(w->grab().save(file), qPrintable(file));
  }
  // Finish: the panel goes, the window is the user's again.
  QSignalSpy finished(tour, &Tour::finished);
  QCOMPARE(tour->panel()->nextButton()->text(), QStringLiteral("Finish"));
  tour->panel()->nextButton()->click();
  QVERIFY(finished.wait(60000) || !finished.isEmpty());
  QVERIFY(!tour->running());
  QVERIFY(!tour->panel()->isVisible());
  QVERIFY(w->engine()->masks().subsequent);
  qInfo("the tour's screenshots are in %s", qPrintable(shots));
}

void TourTest::endGivesBackTheUsersModel() {
  if (!bundled(QStringLiteral("toy-translation")))
    QSKIP("the bundled toy-translation is not found");
  auto w =
      showWindow(false, QStringLiteral("toy-translation"), QStringLiteral("ich mochte ein cola"));
  QVERIFY(startAndWait(*w));
  w->setCurrentView(QStringLiteral("positional"));
  Tour* tour = tourOf(*w);
  QVERIFY(reach(*tour, 4));  // the look-ahead mask off
  QVERIFY(!w->engine()->masks().subsequent);
  QSignalSpy finished(tour, &Tour::finished);
  tour->panel()->endButton()->click();
  QVERIFY(finished.wait(60000) || !finished.isEmpty());
  QCOMPARE(w->engine()->modelSource(), QStringLiteral("toy-translation"));
  QCOMPARE(w->sourceEdit()->text(), QStringLiteral("ich mochte ein cola"));
  QVERIFY(w->engine()->masks().subsequent);
  QCOMPARE(w->currentView()->name(), QStringLiteral("positional"));
  QStringList written;
  for (const StepInfo& st : w->engine()->snapshot()->steps)
    if (st.chosen_id >= 0) written << st.chosen;
  QCOMPARE(written.join(' '), QStringLiteral("i want a coke . E"));
}

void TourTest::endMidwayAndClosePanel() {
  auto w = showWindow(false);
  QVERIFY(startAndWait(*w));
  Tour* tour = tourOf(*w);
  QVERIFY(reach(*tour, 1));
  QSignalSpy finished(tour, &Tour::finished);
  tour->panel()->close();  // the dock's own close button
  QVERIFY(finished.wait(60000) || !finished.isEmpty());
  QVERIFY(!tour->running());
  // Back steps and forward again from the middle.
  QVERIFY(reach(*tour, 2));
  tour->back();
  QVERIFY(reach(*tour, 1));
  QCOMPARE(w->engine()->modelSource(), QStringLiteral("reorder"));
  tour->stop();
}

void TourTest::offeredOnceOnFirstStart() {
  QSettings().clear();
  {
    // The first start: the window uses the settings, as the application does.
    auto w = showWindow(true);
    Tour* tour = tourOf(*w);
    QVERIFY(tour);
    QVERIFY(!tour->panel()->isVisible());
    QVERIFY(startAndWait(*w));
    QTRY_VERIFY(tour->panel()->isVisible());
    QVERIFY(tour->offering());
    QVERIFY(!tour->running());
    QCOMPARE(tour->panel()->nextButton()->text(), QStringLiteral("Take the tour"));
    QCOMPARE(tour->panel()->endButton()->text(), QStringLiteral("Not now"));
    QVERIFY(QSettings().value(QStringLiteral("tour/offered")).toBool());
    // Skipped: nothing changes, the model stays.
    tour->panel()->endButton()->click();
    QVERIFY(!tour->panel()->isVisible());
    QVERIFY(!tour->running());
    QCOMPARE(w->engine()->modelSource(), QStringLiteral("reorder"));
    // Help › Tour is the Help menu's first entry.
    QMenu* help = nullptr;
    for (QAction* a : w->menuBar()->actions())
      if (a->menu() && a->text().remove('&') == QStringLiteral("Help")) help = a->menu();
    QVERIFY(help);
    QCOMPARE(help->actions().front()->objectName(), QStringLiteral("tour"));
    w->close();
  }
  {
    // Never again unless asked.
    auto w = showWindow(true);
    Tour* tour = tourOf(*w);
    QVERIFY(startAndWait(*w));
    QTest::qWait(100);
    QVERIFY(!tour->panel()->isVisible());
    QVERIFY(!tour->offering());
    w->action(QStringLiteral("tour"))->trigger();
    QVERIFY(reach(*tour, 0));
    QVERIFY(tour->panel()->isVisible());
    tour->stop();
    w->close();
  }
  {
    // Taking the offer starts the tour.
    QSettings().clear();
    auto w = showWindow(true);
    Tour* tour = tourOf(*w);
    QVERIFY(startAndWait(*w));
    QTRY_VERIFY(tour->offering());
    tour->panel()->nextButton()->click();
    QVERIFY(tour->running());
    QVERIFY(reach(*tour, 0));
    tour->stop();
    w->close();
  }
  QSettings().clear();
}

// The user's guide's pictures: rendered here from the tour's steps and the views, compared with
// docs/images. ATTNVIZ_UPDATE_GUIDE_IMAGES=1 writes them instead (scripts/update-guide-images.sh).
void TourTest::guideImagesAreCurrent() {
  // The pinned fonts are the ones drawn with, the explanations' code too.
  QCOMPARE(QFontInfo(QApplication::font()).family(), QStringLiteral("DejaVu Sans"));
  QCOMPARE(QFontInfo(QFont(QStringLiteral("monospace"))).family(),
           QStringLiteral("DejaVu Sans Mono"));
  auto w = showWindow(false);
  w->resize(1280, 860);
  QVERIFY(startAndWait(*w));
  Tour* tour = tourOf(*w);
  QVERIFY(QDir().mkpath(freshImages()));
  std::vector<std::pair<QString, QImage>> images;
  const QStringList names{QStringLiteral("attention"),  QStringLiteral("alignment"),
                          QStringLiteral("reverse"),    QStringLiteral("overview"),
                          QStringLiteral("masks-leak"), QStringLiteral("decoding"),
                          QStringLiteral("branch")};
  for (int i = 0; i < tour->count() && i < names.size(); ++i) {
    QVERIFY(reach(*tour, i));
    if (i == 1) images.emplace_back(QStringLiteral("tour"), guideShot(*w));  // with the panel
    tour->panel()->hide();
    images.emplace_back(names[i], guideShot(*w));
    tour->panel()->show();
  }
  QSignalSpy finished(tour, &Tour::finished);
  tour->stop();
  QVERIFY(finished.wait(60000) || !finished.isEmpty());
  QVERIFY(w->engine()->waitUntilIdle(60000));
  // The positional encodings of the reordering model.
  w->setCurrentView(QStringLiteral("positional"));
  images.emplace_back(QStringLiteral("positional"), guideShot(*w));
  // Why this token? The logit lens of the decode at one of its positions.
  w->setCurrentView(QStringLiteral("why"));
  WhyView* why = w->viewOf<WhyView>();
  why->explain(6, -1);  // after “kozike”: layer 1 does not know the next word yet
  for (int k = 0; k < 500 && why->computing(); ++k) {
    QTest::qWait(20);
    w->engine()->waitUntilIdle(60000);
  }
  QVERIFY(why->answer() && why->answer()->lens);
  images.emplace_back(QStringLiteral("why-this-token"), guideShot(*w));
  // Its Attribution tab at the same position (computed when shown).
  why->tabs()->setCurrentIndex(WhyView::kAttributionTab);
  for (int k = 0; k < 500 && (why->attributing() || !why->attribution()); ++k) {
    QTest::qWait(20);
    w->engine()->waitUntilIdle(60000);
  }
  QVERIFY(why->attribution());
  images.emplace_back(QStringLiteral("why-attribution"), guideShot(*w));
  why->tabs()->setCurrentIndex(0);
  // Padding: a batch of sentences of different lengths, the shortest one shown. (Not before the
  // engine is idle: a job still running refuses the batch, and the picture would show no batch.)
  QVERIFY(w->engine()->waitUntilIdle(60000));
  w->setCurrentView(QStringLiteral("masks"));
  w->masksView()->batchEdit()->setPlainText(
      QStringLiteral("the big dog sees a small cat\nyour girl sees our letter\n"
                     "my fast calm cat counts this door with a young lamp"));
  w->masksView()->batchButton()->click();
  QVERIFY(w->engine()->waitUntilIdle(60000));
  QVERIFY(w->engine()->snapshot() && w->engine()->snapshot()->batch);
  w->state()->setKind(AttentionKind::EncoderSelf);
  w->state()->setBatchIndex(1);
  images.emplace_back(QStringLiteral("padding"), guideShot(*w));
  // The head atlas of the reordering model over its held-out sentences, the head that looks most
  // at the previous token selected, its strongest sentences shown.
  QVERIFY(w->engine()->waitUntilIdle(60000));
  w->setCurrentView(QStringLiteral("atlas"));
  AtlasView* atlas = w->viewOf<AtlasView>();
  QVERIFY(atlas->setSource(AtlasView::Source::HeldOut));
  QVERIFY(atlas->runAtlas());
  QVERIFY(w->engine()->waitUntilIdle(60000));
  QCoreApplication::processEvents();
  QVERIFY(atlas->result().atlas);
  {
    const std::vector<AtlasHead>& heads = atlas->result().atlas->heads;
    size_t best = 0;
    for (size_t i = 0; i < heads.size(); ++i)
      if (heads[i].stat(HeadStat::Previous).meanOrNaN() >
          heads[best].stat(HeadStat::Previous).meanOrNaN())
        best = i;
    AttentionSelection sel = w->state()->selection();
    sel.kind = heads[best].kind;
    sel.layer = heads[best].layer;
    sel.head = heads[best].head;
    w->state()->setSelection(sel);
  }
  atlas->setEvidenceStat(int(HeadStat::Previous));
  atlas->panels()->setCurrentIndex(1);
  images.emplace_back(QStringLiteral("atlas"), guideShot(*w));
  // Rotary positions: the Positional encoding view of a Llama-shaped model (test_model_parts').
  QVERIFY(w->engine()->waitUntilIdle(60000));
  QVERIFY(w->engine()->setModel(
      std::make_shared<Model>(llamaShaped(RopeLayout::Interleaved), makeCpuBackend(2)),
      QStringLiteral("llama-shaped")));
  w->sourceEdit()->setText(QStringLiteral("the cat sat on the mat"));
  QTest::mouseClick(w->runButton(), Qt::LeftButton);
  QVERIFY(w->engine()->waitUntilIdle(60000));
  w->setCurrentView(QStringLiteral("positional"));
  images.emplace_back(QStringLiteral("positional-rotary"), guideShot(*w));

  const bool update = qEnvironmentVariableIntValue("ATTNVIZ_UPDATE_GUIDE_IMAGES") == 1;
  QStringList stale;
  for (const auto& [name, img] : images) {
    const QString fresh = QDir(freshImages()).filePath(name + QStringLiteral(".png"));
    QVERIFY2(img.save(fresh, "PNG", 9), qPrintable(fresh));
    const QString committed = QDir(docsImages()).filePath(name + QStringLiteral(".png"));
    if (update) {
      QVERIFY(QDir().mkpath(docsImages()));
      QVERIFY2(img.save(committed, "PNG", 9), qPrintable(committed));
      continue;
    }
    const double d = difference(QImage(committed), img);
    if (d > 0.005)
      stale << QStringLiteral("%1 (%2% of the pixels differ)").arg(name).arg(100 * d, 0, 'f', 1);
  }
  if (update) qInfo("wrote %d pictures to %s", int(images.size()), qPrintable(docsImages()));
  QVERIFY2(stale.isEmpty(),
           qPrintable(QStringLiteral("docs/images is stale: %1. The fresh renders are in %2; "
                                     "scripts/update-guide-images.sh copies them into docs/images "
                                     "(look at them before committing).")
                          .arg(stale.join(QStringLiteral(", ")), freshImages())));
}

QTEST_MAIN(TourTest)
#include "test_tour.moc"

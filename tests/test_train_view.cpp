// Qt Test suite of the Train view (offscreen): a training run driven through its controls —
// curves, snapshots and the timeline, pause, resume and stop, the saved model opened in the other
// views — and screenshots of a run at its start, middle and end (build/screenshots), checked to
// show the attention change: the reversal task's anti-diagonal forming.
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QPointer>
#include <QPushButton>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QStyleOptionComboBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest/QtTest>
#include <memory>

#include "arch/weights.h"
#include "gui_fixture.h"
#include "session/engine.h"
#include "shell/main_window.h"
#include "train/history.h"
#include "views/train/train_view.h"
#include "widgets/fonts.h"

using namespace attnviz;
using namespace attnviz::gui;
using namespace gui_fixture;

namespace {

const QString kTinyModel = QStringLiteral(ATTNVIZ_TEST_DATA "/nlp_tiny.safetensors");

// The window on the tiny test model, showing the Train view.
std::unique_ptr<MainWindow> openTrainWindow() {
  return openWindow(kTinyModel, QStringLiteral("ich mochte ein bier P"), QStringLiteral("train"));
}

TrainView* trainView(MainWindow& w) {
  return w.viewOf<TrainView>();
}

void choose(QComboBox* combo, const QString& data) {
  combo->setCurrentIndex(combo->findData(data));
}

// The mean of one head's probabilities on the anti-diagonal (query i, key S−1−i) over the
// mean on the whole matrix: 1 for uniform attention, up to S for a perfect anti-diagonal.
double antiDiagonalContrast(const Trace& trace) {
  const AttentionBlock* cross =
      trace.block(AttentionKind::Cross, trace.layers(AttentionKind::Cross) - 1);
  if (!cross) return 0;
  const int S = cross->k_len;
  double on = 0, all = 0;
  for (int h = 0; h < cross->heads; ++h)
    for (int i = 0; i < S; ++i)
      for (int j = 0; j < S; ++j) {
        const double p = cross->prob(0, h, i, j);
        all += p;
        if (j == S - 1 - i) on += p;
      }
  return (on / (S * cross->heads)) / (all / (double(S) * S * cross->heads));
}

}  // namespace

class TrainViewTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    // What fits where depends on the fonts: the ones attnviz ships, whatever this machine has.
    QVERIFY(usePinnedFonts());
  }

  // A short run of a tiny model: curves, snapshots, the timeline, the saved model, and Open in
  // attnviz.
  void trainsRecordsAndOpens() {
    auto w = openTrainWindow();
    TrainView* tv = trainView(*w);
    QVERIFY(tv);
    QCOMPARE(w->currentView(), static_cast<View*>(tv));
    // The view fits the window's usual sizes (it must not force the window wider).
    QVERIFY2(tv->minimumSizeHint().width() <= 1000,
             qPrintable(QString("minimum width %1").arg(tv->minimumSizeHint().width())));
    QTemporaryDir dir;
    tv->setSaveDirectory(dir.path());
    choose(tv->taskCombo(), QStringLiteral("copy"));
    choose(tv->sizeCombo(), QStringLiteral("tiny"));
    tv->stepsSpin()->setValue(240);
    // The window's CPU threads setting holds for a training run too.
    QVERIFY(w->engine()->setThreads(1));
    QSignalSpy finished(tv, &TrainView::trainingFinished);
    tv->startButton()->click();
    QVERIFY(tv->running());
    QVERIFY(!tv->startButton()->isEnabled());
    QVERIFY(!tv->taskCombo()->isEnabled());  // no changing the task mid-run
    QVERIFY(finished.wait(300000));
    QCOMPARE(finished.first().first().toBool(), false);  // not stopped
    QVERIFY(!tv->running());
    QCOMPARE(tv->curves()->points(), 240);
    // Snapshots from step 0 (untrained) to the last step, about 120 of them.
    const auto& snaps = tv->snapshots();
    QVERIFY(snaps.size() >= 100);
    QCOMPARE(snaps.front().step, 0);
    QCOMPARE(snaps.back().step, 240);
    QCOMPARE(tv->timeline()->maximum(), int(snaps.size()) - 1);
    QCOMPARE(tv->timeline()->value(), tv->timeline()->maximum());  // followed the run live
    QVERIFY(tv->statusLabel()->text().contains(QStringLiteral("held-out exact match")));
    if (w->engine()->backendName() == QStringLiteral("cpu"))
      QVERIFY2(tv->statusLabel()->text().contains(QStringLiteral(", 1 thread)")),
               qPrintable(tv->statusLabel()->text()));
    // The grid shows every block × head: encoder self, decoder self, cross for 1+1 layers, 2 heads.
    QCOMPARE(tv->headGrid()->blocks(), 3);
    QCOMPARE(tv->headGrid()->heads(), 2);
    // Scrubbing back to the start shows other attention than the end.
    const QImage end = tv->headGrid()->grab().toImage();
    tv->timeline()->setValue(0);
    QVERIFY(tv->focusHeatmap()->data().title.contains(QStringLiteral("step 0")));
    QVERIFY(tv->headGrid()->grab().toImage() != end);
    // The focused head's axis titles stay inside its heatmap.
    const QRectF title = tv->focusHeatmap()->rowTitleRect();
    QVERIFY(!title.isEmpty());
    QVERIFY2(QRectF(tv->focusHeatmap()->rect()).contains(title),
             qPrintable(QString("row title at y %1 … %2 in a heatmap %3 high")
                            .arg(title.top())
                            .arg(title.bottom())
                            .arg(tv->focusHeatmap()->height())));
    // Clicking a thumbnail focuses that head.
    const QRect r = tv->headGrid()->thumbRect(0, 1);
    QTest::mouseClick(tv->headGrid(), Qt::LeftButton, {}, r.center());
    QVERIFY(
        tv->focusHeatmap()->data().title.startsWith(QStringLiteral("Encoder self · L1 · head 2")));
    // The model was saved, reads back as PyTorch's Seq2SeqTransformer, and opens in the views.
    QVERIFY(QFileInfo::exists(tv->savedPath()));
    auto loaded = loadModel(tv->savedPath().toStdString());
    QCOMPARE(loaded->config.model, std::string("Seq2SeqTransformer"));
    QVERIFY(tv->openButton()->isEnabled());
    tv->openButton()->click();
    QVERIFY(w->engine()->waitUntilIdle(60000));
    QCoreApplication::processEvents();
    QCOMPARE(w->engine()->modelSource(), tv->savedPath());
    QCOMPARE(w->currentView()->name(), QStringLiteral("attention"));
    QVERIFY(w->engine()->snapshot() && w->engine()->snapshot()->trace);  // its first example ran
  }

  // The induction task: the recipe's size and settings, its decoder-only heads in the grid, and
  // checkpoints kept every N steps beside the saved model (what `attnviz-cli history` reads).
  void inductionKeepsCheckpoints() {
    auto w = openTrainWindow();
    TrainView* tv = trainView(*w);
    QTemporaryDir dir;
    tv->setSaveDirectory(dir.path());
    QCOMPARE(tv->keepSpin()->value(), 0);  // off unless asked
    choose(tv->taskCombo(), QStringLiteral("induction"));
    QCOMPARE(tv->sizeCombo()->currentData().toString(), QStringLiteral("attn-only-2l"));
    QCOMPARE(tv->stepsSpin()->value(), inductionRecipe().steps);
    QCOMPARE(tv->keepSpin()->value(), 100);
    tv->stepsSpin()->setValue(120);
    tv->keepSpin()->setValue(50);
    QSignalSpy finished(tv, &TrainView::trainingFinished);
    tv->startButton()->click();
    QVERIFY(finished.wait(300000));
    // Two decoder self-attention blocks of four heads.
    QCOMPARE(tv->headGrid()->blocks(), 2);
    QCOMPARE(tv->headGrid()->heads(), 4);
    QVERIFY(tv->statusLabel()->text().contains(QStringLiteral("held-out exact match")));
    QString keep = tv->savedPath();
    keep.chop(QStringLiteral(".safetensors").size());
    keep += QStringLiteral("-checkpoints");
    const CheckpointIndex index = readCheckpointIndex(keep.toStdString());
    QCOMPARE(index.task, std::string("induction"));
    QCOMPARE(index.task_options.max_len, inductionRecipe().task_options.max_len);
    std::vector<int> steps;
    for (const auto& c : index.checkpoints) steps.push_back(c.step);
    QCOMPARE(steps, (std::vector<int>{0, 50, 100, 120}));
    QVERIFY(QDir().mkpath(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR)));
    const QString file =
        QDir(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR)).filePath("train-induction.png");
    QVERIFY2(w->grab().save(file), qPrintable(file));
  }

  // Pause holds the steps, Resume continues, Stop ends the run early and still saves.
  void pauseResumeStop() {
    auto w = openTrainWindow();
    TrainView* tv = trainView(*w);
    QTemporaryDir dir;
    tv->setSaveDirectory(dir.path());
    choose(tv->taskCombo(), QStringLiteral("reverse"));
    choose(tv->sizeCombo(), QStringLiteral("tiny"));
    tv->stepsSpin()->setValue(100000);
    QSignalSpy finished(tv, &TrainView::trainingFinished);
    tv->startButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(tv->curves()->points() >= 20, 120000);
    tv->pauseButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(tv->paused(), 20000);
    QCOMPARE(tv->pauseButton()->text(), QStringLiteral("Resume"));
    const int held = tv->curves()->points();
    QTest::qWait(400);
    QCOMPARE(tv->curves()->points(), held);
    tv->pauseButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(tv->curves()->points() > held + 5, 60000);
    tv->stopButton()->click();
    QVERIFY(finished.wait(120000));
    QCOMPARE(finished.first().first().toBool(), true);  // stopped
    QVERIFY(tv->curves()->points() < 100000);
    QVERIFY(QFileInfo::exists(tv->savedPath()));
    QVERIFY(tv->statusLabel()->text().contains(QStringLiteral("Stopped after")));
    // No stale "Stopping…" above it, and the axis ends where the run did.
    QVERIFY2(!tv->statusLabel()->text().contains(QStringLiteral("Stopping")),
             qPrintable(tv->statusLabel()->text()));
    QCOMPARE(tv->curves()->plannedSteps(), tv->curves()->points());
    QVERIFY(tv->curves()->xTicks().back() <= tv->curves()->points());
  }

  // Before a run the axis reads the steps asked for, in distinct round numbers whose labels stay
  // inside the chart; the Size box shows its entry whole.
  void axesAndControlsBeforeARun() {
    auto w = openTrainWindow();
    TrainView* tv = trainView(*w);
    QCoreApplication::processEvents();
    for (int steps : {1500, 150, 3000, 900, 30000}) {
      tv->stepsSpin()->setValue(steps);
      TrainingCurves* c = tv->curves();
      QCOMPARE(c->plannedSteps(), steps);
      const std::vector<int> ticks = c->xTicks();
      QVERIFY2(ticks.size() >= 3 && ticks.size() <= 5, qPrintable(QString::number(steps)));
      QCOMPARE(ticks.front(), 0);
      for (size_t k = 1; k < ticks.size(); ++k) QVERIFY(ticks[k] > ticks[k - 1]);
      QVERIFY(ticks.back() <= steps);
      const std::vector<QRect> labels = c->xTickLabelRects();
      QCOMPARE(labels.size(), 2 * ticks.size());
      for (size_t k = 0; k < labels.size(); ++k) {
        const QString text = QString::number(ticks[k % ticks.size()]);
        QVERIFY2(c->rect().contains(labels[k]), qPrintable(text));
        QVERIFY2(labels[k].width() >= c->fontMetrics().horizontalAdvance(text), qPrintable(text));
      }
    }
    // The legend names every curve, each entry inside the widget, over no panel nor step label,
    // at the window's width and at a narrow one (the entries wrap into rows).
    TrainingCurves* c = tv->curves();
    for (int width : {c->width(), 420}) {
      c->resize(width, std::max(c->height(), 260));
      const auto legend = c->legend();
      QCOMPARE(legend.size(), size_t(5));
      if (width > 600) QCOMPARE(legend[4].name, QStringLiteral("held-out exact match (greedy)"));
      QVERIFY(!c->lossPanel().isEmpty());
      for (const auto& e : legend) {
        QVERIFY2(c->rect().contains(e.rect), qPrintable(e.name));
        QVERIFY2(!e.rect.intersects(c->lossPanel()) && !e.rect.intersects(c->accuracyPanel()),
                 qPrintable(e.name));
        for (const QRect& tick : c->xTickLabelRects())
          QVERIFY2(!e.rect.intersects(tick), qPrintable(e.name));
        QVERIFY(e.rect.width() >= c->fontMetrics().horizontalAdvance(e.name));
        for (const auto& other : legend) QVERIFY(&other == &e || !other.rect.intersects(e.rect));
      }
    }
    for (int i = 0; i < tv->sizeCombo()->count(); ++i) {
      tv->sizeCombo()->setCurrentIndex(i);
      QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
      QComboBox* box = tv->sizeCombo();
      QStyleOptionComboBox opt;
      opt.initFrom(box);
      const QRect field = box->style()->subControlRect(QStyle::CC_ComboBox, &opt,
                                                       QStyle::SC_ComboBoxEditField, box);
      QVERIFY2(box->fontMetrics().horizontalAdvance(box->currentText()) <= field.width(),
               qPrintable(box->currentText()));
    }
    QVERIFY2(tv->minimumSizeHint().width() <= 1000,
             qPrintable(QString("minimum width %1").arg(tv->minimumSizeHint().width())));
  }

  // Closing the window mid-run ends the training at once, whatever the run is doing: building its
  // model, training, or paused. Nothing crashes or leaks (CI runs this suite under
  // AddressSanitizer, which fails on a leak at exit), no report reaches the destroyed view, and an
  // aborted run saves nothing.
  void destroyedMidRun_data() {
    QTest::addColumn<int>("points");  // the steps shown before the window goes
    QTest::addColumn<bool>("paused");
    QTest::newRow("preparing") << 0 << false;
    QTest::newRow("training") << 10 << false;
    QTest::newRow("paused") << 10 << true;
  }
  void destroyedMidRun() {
    QFETCH(int, points);
    QFETCH(bool, paused);
    QTemporaryDir dir;
    auto w = openTrainWindow();
    TrainView* tv = trainView(*w);
    tv->setSaveDirectory(dir.path());
    choose(tv->taskCombo(), QStringLiteral("reverse"));
    choose(tv->sizeCombo(), QStringLiteral("tiny"));
    tv->stepsSpin()->setValue(100000);
    tv->startButton()->click();
    QVERIFY(tv->running());
    if (points > 0) QTRY_VERIFY_WITH_TIMEOUT(tv->curves()->points() >= points, 120000);
    if (paused) {
      tv->pauseButton()->click();
      QTRY_VERIFY_WITH_TIMEOUT(tv->paused(), 20000);
    }
    QPointer<TrainView> view = tv;
    w.reset();  // the window, its views, the worker: the thread is joined before the view goes
    QVERIFY(!view);
    QTest::qWait(50);  // anything still queued for the view would arrive now
    QVERIFY(QDir(dir.path()).entryList(QDir::Files).isEmpty());
  }

  // A student's run: reverse, the small model, screenshots at the start, the middle and the end.
  // The anti-diagonal appears in the cross-attention: the end's is far sharper than the start's.
  void screenshots() {
#if defined(__SANITIZE_ADDRESS__)
    QSKIP(
        "the screenshots are the release build's: under AddressSanitizer this run of a "
        "240 000-parameter model for 900 steps takes many minutes (the short runs above cover "
        "the same code under the sanitizers)");
#endif
    const QString out = QStringLiteral(ATTNVIZ_SCREENSHOT_DIR);
    QVERIFY(QDir().mkpath(out));
    auto w = openTrainWindow();
    TrainView* tv = trainView(*w);
    QTemporaryDir dir;
    tv->setSaveDirectory(dir.path());
    choose(tv->taskCombo(), QStringLiteral("reverse"));
    choose(tv->sizeCombo(), QStringLiteral("small"));
    tv->stepsSpin()->setValue(900);
    QSignalSpy finished(tv, &TrainView::trainingFinished);
    tv->startButton()->click();
    QVERIFY(finished.wait(600000));
    const auto& snaps = tv->snapshots();
    QVERIFY(snaps.size() > 10);
    // Focus the last layer's cross-attention, head 1.
    tv->focusHead(tv->headGrid()->blocks() - 1, 0);
    const int middle = int(snaps.size()) / 3;  // the anti-diagonal is forming about here
    const struct {
      int index;
      const char* file;
    } shots[] = {{0, "train-start.png"},
                 {middle, "train-middle.png"},
                 {int(snaps.size()) - 1, "train-end.png"}};
    for (const auto& s : shots) {
      tv->timeline()->setValue(s.index);
      QTest::qWait(50);
      const QString file = QDir(out).filePath(QString::fromLatin1(s.file));
      QVERIFY2(w->grab().save(file), qPrintable(file));
    }
    const double start = antiDiagonalContrast(*snaps.front().trace);
    const double end = antiDiagonalContrast(*snaps.back().trace);
    qInfo("cross-attention on the anti-diagonal: %.2f× the mean at step 0, %.2f× at step %d", start,
          end, snaps.back().step);
    QVERIFY2(start < 2.0, qPrintable(QString("untrained: %1").arg(start)));
    QVERIFY2(end > 4.0, qPrintable(QString("trained: %1").arg(end)));
    qInfo("screenshots in %s", qPrintable(out));
  }
};

QTEST_MAIN(TrainViewTest)
#include "test_train_view.moc"

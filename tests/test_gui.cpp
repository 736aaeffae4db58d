// The application driven as a user would (offscreen): open the bundled model, type a sentence,
// run, step, toggle a mask, switch views, and check what is drawn and shown against the core's
// trace. Each view is also rendered to PNG under the build folder (screenshots/) for a look.
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QLineEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTreeView>
#include <QtTest>

#include <algorithm>

#include "app_state.h"
#include "attention_view.h"
#include "colormap.h"
#include "decoding_view.h"
#include "engine.h"
#include "heatmap.h"
#include "item_models.h"
#include "main_window.h"
#include "masks_view.h"
#include "widgets.h"

using namespace attnviz;
using namespace attnviz::gui;

class TestGui : public QObject {
  Q_OBJECT

  MainWindow* w_ = nullptr;

  void runSentence(const QString& src) {
    w_->sourceEdit()->setText(src);
    w_->prefixEdit()->clear();
    QTest::mouseClick(w_->runButton(), Qt::LeftButton);
    QVERIFY(w_->engine()->waitUntilIdle(60000));
  }

  const Trace& trace() const { return *w_->engine()->snapshot()->trace; }

 private slots:
  void initTestCase() {
    MainWindowOptions o;
    o.model = "reorder";
    o.use_settings = false;
    w_ = new MainWindow(o);
    w_->resize(1400, 900);
    w_->show();
    QSignalSpy first(w_, &MainWindow::firstRunFinished);
    w_->start();
    QVERIFY(first.wait(60000) || first.count() > 0);
    QVERIFY(w_->engine()->hasModel());
    QVERIFY(w_->engine()->snapshot() && w_->engine()->snapshot()->trace);
  }

  void cleanupTestCase() { delete w_; }

  // The app opens on the reordering model's first example, decoded, showing the last decoder
  // layer's cross-attention.
  void opensOnDefaultModel() {
    QCOMPARE(w_->modelCombo()->currentText().contains("reorder"), true);
    const auto& sel = w_->state()->selection();
    QCOMPARE(sel.kind, AttentionKind::Cross);
    QCOMPARE(sel.layer, w_->engine()->model()->config().n_decoder_layers - 1);
    QVERIFY(!w_->engine()->snapshot()->steps.empty());
    QVERIFY(w_->engine()->snapshot()->finished);
  }

  void itemModelsAreConsistent() {
    QAbstractItemModelTester structure(w_->structureModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester steps(w_->decodingView()->stepsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester topk(w_->decodingView()->topkModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(w_->structureModel()->rowCount() >= 2);
  }

  // Typed sentence → axis labels are its tokens; the brightest cell has the colormap's top colour.
  void heatmapShowsTheTrace() {
    runSentence("your girl sees our letter");
    w_->setCurrentView("attention");
    w_->state()->setSelection({AttentionKind::Cross, 1, 0, 0});
    QApplication::processEvents();
    HeatmapWidget* hm = w_->attentionView()->heatmap();
    QTRY_VERIFY(!hm->rendering());
    const Trace& t = trace();
    QStringList src;
    for (const auto& s : t.src_tokens[0]) src << QString::fromStdString(s);
    QCOMPARE(hm->data().col_labels, src);
    QCOMPARE(hm->data().rows, t.tgt_len);
    // The largest probability of layer 2, head 1.
    int br = 0, bc = 0;
    float best = -1;
    for (int i = 0; i < t.tgt_len; ++i)
      for (int j = 0; j < t.src_len; ++j)
        if (t.cross.prob(0, 1, 0, i, j) > best) best = t.cross.prob(0, 1, 0, i, j), br = i, bc = j;
    QImage shot = hm->grab().toImage();
    QRectF cell = hm->cellRect(br, bc);
    QVERIFY(cell.width() >= 4);
    // Sample a corner of the cell, away from the printed value.
    QColor c = shot.pixelColor(QPoint(int(cell.left() + 2), int(cell.top() + 2)));
    const QColor top = w_->state()->colormap().top();
    // "0 … largest value" scale: the largest cell is the top colour (1 unit of rounding allowed).
    QVERIFY2(std::abs(c.red() - top.red()) <= 2 && std::abs(c.green() - top.green()) <= 2 &&
                 std::abs(c.blue() - top.blue()) <= 2,
             qPrintable(QString("cell colour %1 vs top %2").arg(c.name(), top.name())));
    // The tooltip carries the numbers of the trace.
    const QString tip = hm->tooltipText(br, bc);
    QVERIFY2(tip.contains(src[bc]), qPrintable(tip));
    QVERIFY2(tip.contains(QString::number(best, 'f', 4)), qPrintable(tip));
    QVERIFY2(tip.contains(QString::number(t.cross.score(0, 1, 0, br, bc), 'f', 4)), qPrintable(tip));
  }

  // A masked cell (decoder self-attention above the diagonal) is drawn in the masked colour,
  // not in the colormap's bottom colour.
  void maskedCellsLookMasked() {
    w_->state()->setSelection({AttentionKind::DecoderSelf, 0, 0, 0});
    QApplication::processEvents();
    HeatmapWidget* hm = w_->attentionView()->heatmap();
    QTRY_VERIFY(!hm->rendering());
    QVERIFY(hm->data().isMasked(0, 1));
    QImage shot = hm->grab().toImage();
    QRectF cell = hm->cellRect(0, 1);
    QColor c = shot.pixelColor(QPoint(int(cell.left() + 1), int(cell.top() + 1)));
    const Colormap& cm = w_->state()->colormap();
    QVERIFY2(c == cm.maskedFill() || c == cm.maskedHatch(), qPrintable(c.name()));
    QVERIFY(c != cm.bottom());
    QVERIFY(hm->tooltipText(0, 1).contains("masked", Qt::CaseInsensitive));
  }

  // Switching the subsequent mask off reruns the model: the future leaks in.
  void subsequentMaskSwitch() {
    w_->setCurrentView("masks");
    QCheckBox* sw = w_->masksView()->subsequentSwitch();
    QVERIFY(sw->isChecked());
    QCOMPARE(trace().dec_self.prob(0, 0, 0, 0, 1), 0.0f);
    sw->click();
    QVERIFY(w_->engine()->waitUntilIdle(60000));
    QVERIFY(!w_->engine()->masks().subsequent);
    QVERIFY(trace().dec_self.prob(0, 0, 0, 0, 1) > 0.0f);
    QVERIFY(!trace().dec_self.masked(0, 0, 1));
    sw->click();
    QVERIFY(w_->engine()->waitUntilIdle(60000));
    QVERIFY(w_->engine()->masks().subsequent);
    QCOMPARE(trace().dec_self.prob(0, 0, 0, 0, 1), 0.0f);
  }

  // Step back removes a position from the Decoding view's list; step forward adds it again.
  void stepBackAndForward() {
    w_->setCurrentView("decoding");
    const int rows = w_->decodingView()->stepsModel()->rowCount();
    QVERIFY(rows > 2);
    QVERIFY(w_->engine()->stepBack());
    QVERIFY(w_->engine()->waitUntilIdle(60000));
    const int after_back = w_->decodingView()->stepsModel()->rowCount();
    QVERIFY(w_->engine()->stepBack());
    QVERIFY(w_->engine()->waitUntilIdle(60000));
    QVERIFY(w_->decodingView()->stepsModel()->rowCount() < rows || after_back < rows);
    QVERIFY(w_->engine()->stepForward());
    QVERIFY(w_->engine()->waitUntilIdle(60000));
    QVERIFY(w_->engine()->decodeToEnd());
    QVERIFY(w_->engine()->waitUntilIdle(60000));
    QCOMPARE(w_->decodingView()->stepsModel()->rowCount(), rows);
  }

  // Errors are messages in the window; the typed text and the model stay. (The reordering model
  // maps unknown words to <unk>, so the errors here are an empty and an over-long sentence.)
  void badSentenceKeepsInput_data() {
    QTest::addColumn<QString>("sentence");
    QTest::addColumn<QString>("expected");
    QTest::newRow("empty") << "   " << "empty";
    QString longer;
    for (int i = 0; i < 300; ++i) longer += "the ";
    QTest::newRow("too long") << longer << "at most";
  }

  void badSentenceKeepsInput() {
    QFETCH(QString, sentence);
    QFETCH(QString, expected);
    const auto before = w_->engine()->snapshot();
    w_->sourceEdit()->setText(sentence);
    QTest::mouseClick(w_->runButton(), Qt::LeftButton);
    QVERIFY(w_->engine()->waitUntilIdle(60000));
    QCOMPARE(w_->sourceEdit()->text(), sentence);
    QCOMPARE(w_->messageBar()->level(), MessageBar::Level::Error);
    QVERIFY2(w_->messageBar()->text().contains(expected), qPrintable(w_->messageBar()->text()));
    QVERIFY(w_->engine()->hasModel());
    QCOMPARE(w_->engine()->snapshot(), before);  // the last good result is still shown
  }

  void badModelFileKeepsModel() {
    QTemporaryDir dir;
    const QString bad = dir.filePath("broken.safetensors");
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("\x05\x00");
    f.close();
    const Model* before = w_->engine()->model();
    QVERIFY(w_->engine()->loadModel(bad));
    QVERIFY(w_->engine()->waitUntilIdle(60000));
    QCOMPARE(w_->engine()->model(), before);
    QCOMPARE(w_->messageBar()->level(), MessageBar::Level::Error);
    QVERIFY(w_->messageBar()->text().contains("broken.safetensors"));
  }

  // Every view renders; the PNGs go to the build folder for a human to look at, and the exports
  // write real files.
  void renderViewsAndExport() {
    runSentence("my calm red sailor often visits that shy spider beside your bird");
    QDir().mkpath("screenshots");
    for (const QString& v : {"attention", "overview", "masks", "positional", "decoding"}) {
      w_->setCurrentView(v);
      QApplication::processEvents();
      QTest::qWait(200);
      QImage img = w_->grab().toImage();
      QVERIFY(!img.isNull());
      QVERIFY(img.save("screenshots/" + v + ".png"));
    }
    QTemporaryDir dir;
    w_->setCurrentView("attention");
    QVERIFY(w_->exportViewPng(dir.filePath("view.png")));
    QVERIFY(w_->exportViewSvg(dir.filePath("view.svg")));
    QVERIFY(QFileInfo(dir.filePath("view.png")).size() > 1000);
    QVERIFY(QFileInfo(dir.filePath("view.svg")).size() > 1000);
    QVERIFY(w_->exportTrace(dir.filePath("trace"), true));
    QVERIFY(QFileInfo::exists(dir.filePath("trace/cross_probs.npy")));
    QVERIFY(QFileInfo::exists(dir.filePath("trace/tokens.json")));
  }

  // Keys move across layers and heads.
  void keyboardMovesSelection() {
    w_->setCurrentView("attention");
    w_->state()->setSelection({AttentionKind::Cross, 0, 0, 0});
    w_->action("nextLayer")->trigger();
    QCOMPARE(w_->state()->selection().layer, 1);
    w_->action("nextHead")->trigger();
    QCOMPARE(w_->state()->selection().head, 1);
    w_->action("meanOfHeads")->trigger();
    QCOMPARE(w_->state()->selection().head, -1);
  }
};

QTEST_MAIN(TestGui)
#include "test_gui.moc"

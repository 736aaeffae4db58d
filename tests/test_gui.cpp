// Qt Test suite of the GUI (offscreen): colormaps, item models under QAbstractItemModelTester, and
// the main window driven with QTest — what is drawn (pixels, labels, tooltips) and what the views
// show.
#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRawFont>
#include <QScreen>
#include <QSet>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QSvgGenerator>
#include <QSvgRenderer>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTimer>
#include <QToolTip>
#include <QTreeView>
#include <QXmlStreamReader>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtTest/QtTest>
#include <cmath>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "arch/bundled.h"
#include "arch/weights.h"
#include "compute/backends.h"
#include "compute/cpu_backend.h"
#include "compute/memory_limit.h"
#include "compute/thread_pool.h"
#include "figures/apng.h"
#include "figures/figure.h"
#include "gui_fixture.h"
#include "io/safetensors.h"
#include "model_files.h"
#include "session/attention_data.h"
#include "session/item_models.h"
#include "shell/answers_dialog.h"
#include "shell/lesson_dialog.h"
#include "shell/main_window.h"
#include "shell/view_registry.h"
#include "text/token_display.h"
#include "views/attention/attention_view.h"
#include "views/cell/cell_view.h"
#include "views/decoding/decoding_view.h"
#include "views/decoding/translation_panel.h"
#include "views/masks/masks_view.h"
#include "views/overview/overview_view.h"
#include "views/positional/positional_view.h"
#include "widgets/bar_chart.h"
#include "widgets/colormap.h"
#include "widgets/fonts.h"
#include "widgets/heatmap.h"
#include "widgets/widgets.h"

using namespace attnviz;
using namespace attnviz::gui;
using namespace gui_fixture;

namespace {

// Whether `got` attends in its last cross-attention as the model `ref` does, to 1e-6.
bool sameLastCrossAttention(const Model& got, const std::shared_ptr<const LoadedModel>& ref,
                            const Inputs& in) {
  const Trace a = got.forward(in);
  const Trace b = Model(ref, makeCpuBackend()).forward(in);
  const AttentionBlock* ca = a.block(AttentionKind::Cross, a.layers(AttentionKind::Cross) - 1);
  const AttentionBlock* cb = b.block(AttentionKind::Cross, b.layers(AttentionKind::Cross) - 1);
  if (!ca || !cb) return false;
  const std::vector<float> pa = ca->denseProbs(), pb = cb->denseProbs();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i)
    if (!(std::abs(pa[i] - pb[i]) < 1e-6f)) return false;
  return true;
}

// The tensors of a model file alone, as F32, without its config (what a training loop saves).
void writeBare(const QString& from, const QString& to) {
  writeSafetensors(to.toStdString(), floatTensors(SafetensorsFile::open(from.toStdString())), {});
}

const QString kTinyModel = QStringLiteral(ATTNVIZ_TEST_DATA "/nlp_tiny.safetensors");

// The model the screenshots show: the default bundled one when it is there, else the test model.
QString screenshotModel() {
  for (const auto& m : listBundledModels())
    if (m.name == kDefaultModel) return QString::fromStdString(m.name);
  return kTinyModel;
}

// Widgets that take typed characters.
bool typesText(const QWidget* w) {
  return qobject_cast<const QLineEdit*>(w) || qobject_cast<const QPlainTextEdit*>(w) ||
         qobject_cast<const QAbstractSpinBox*>(w);
}

QString bundledPath(const char* name) {
  for (const auto& m : listBundledModels())
    if (m.name == name) return QString::fromStdString(m.path);
  return {};
}

// Pixels of the cell's interior (its border may carry a separator line).
QList<QRgb> cellPixels(HeatmapWidget* hm, int row, int col) {
  const QImage img = hm->grab().toImage();
  const QRect r = hm->cellRect(row, col).toAlignedRect().adjusted(2, 2, -2, -2);
  QList<QRgb> px;
  for (int y = r.top(); y <= r.bottom(); ++y)
    for (int x = r.left(); x <= r.right(); ++x) px << (img.pixel(x, y) & 0xffffff);
  return px;
}

QRgb centerPixel(HeatmapWidget* hm, int row, int col) {
  const QImage img = hm->grab().toImage();
  return img.pixel(hm->cellRect(row, col).center().toPoint()) & 0xffffff;
}

QStringList toQ(const std::vector<std::string>& v) {
  QStringList out;
  for (const auto& s : v) out << QString::fromStdString(s);
  return out;
}

}  // namespace

class GuiTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();

  // Every character the token display adds is drawn by each bundled font.
  void displayedTokensHaveGlyphs();

  // Colormaps and item models.
  void colormapEnds_data();
  void colormapEnds();
  void structureModel();
  void decodingModels();

  // The heatmap widget on its own.
  void heatmapLargeRendersOffThread();
  void heatmapZoom();
  void heatmapLabelRoomFollowsDataAndFont();
  void heatmapWritesCellTextsThatFit();
  void heatmapSvgHasNoSeams();
  void tokenTextFollowsTokensAndFont();

  // The main window.
  void startupShowsLastCrossAttention();
  void heatmapPixelsLabelsTooltip();
  void typeRunAndLabels();
  void stepBackAndForward();
  void subsequentMaskOffLeaksFuture();
  void batchPadsSentences();
  void errorsKeepTypedText();
  void failedLoadKeepsModel();
  void inputTextFromAFile();
  void loaderWarningsShown();
  void askedWhatTheFileDoesNotSay();
  void preNormChosenInTheDialog();
  void keysMoveAcrossLayersAndHeads();
  void switchViews_data();
  void switchViews();
  void overviewClickOpensAttention();
  void positionalView();
  void branchWithAnotherToken();
  void learnedPositions();
  void longRunShowsProgressAndCancels();
  void backendChooser();
  void outOfGpuMemoryRedoneOnCpu();
  void lostGpuMovesTheModelToCpu();
  void exports();
  void exportsLesson();
  void settingsPersist();

  // The application as a student and a teacher use it.
  void explanationsFollowTheMasks();
  void keysAreNotTypedIntoTextFields();
  void unknownWordsAreNamed();
  void probabilityBars();
  void roomyAtTheDefaultSize();
  void noStaleStateAfterAnotherModel();
  void smallThings();
  void translationReadsAndHighlights();
  void decodingFramesAndAnimation();
  void presentationMode();
  void keysHelpFromTheActionTable();
  void architectures_data();
  void architectures();

  // What a second look at figures and explanations found.
  void svgExportsAreXml();
  void masksExplanationNamesEveryMaskOff();
  void attentionHeadingShowsTheMasks();
  void positionsCountFromOne();
  void clickedCellIsEveryViewsCell();
  void modelBoxTellsCheckpointsApart();
  void thinnedLabelsSaidAndExportedWhole();
  void longPromptOfferedCropped();
  void decodingFramesKeepTheFuture();
  void decodeToTheEndShowsProgress();        // 8
  void presentationModeGivesTheSizeBack();   // 10
  void restoredWindowFitsTheScreen();        // 10
  void figureTitleWrapsInsteadOfCutting();   // 11
  void bracketOnTheMeanGoesToTheLastHead();  // 12
  void exportDialogRemembersItsChoices();    // 12
  void modelBoxShowsATrainedModelsName();    // 12

  void screenshots();
};

void GuiTest::initTestCase() {
  QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
  QCoreApplication::setApplicationName(QStringLiteral("test_gui"));
  QSettings().clear();
  QVERIFY2(QFile::exists(kTinyModel), qPrintable(kTinyModel));
  // What fits where depends on the fonts: the ones attnviz ships, whatever this machine has.
  QVERIFY(usePinnedFonts());
}

// ---- colormaps and models ---------------------------------------------------------------------

void GuiTest::colormapEnds_data() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<QColor>("bottom");
  QTest::addColumn<QColor>("top");
  // matplotlib's first and last table entries; ColorBrewer's lightest and darkest classes.
  QTest::newRow("viridis") << "viridis" << QColor::fromRgbF(0.267004f, 0.004874f, 0.329415f)
                           << QColor::fromRgbF(0.993248f, 0.906157f, 0.143936f);
  QTest::newRow("magma") << "magma" << QColor::fromRgbF(0.001462f, 0.000466f, 0.013866f)
                         << QColor::fromRgbF(0.987053f, 0.991438f, 0.749504f);
  QTest::newRow("blues") << "blues" << QColor(0xf7, 0xfb, 0xff) << QColor(0x08, 0x30, 0x6b);
  QTest::newRow("greys") << "greys" << QColor(0xff, 0xff, 0xff) << QColor(0x00, 0x00, 0x00);
}

void GuiTest::displayedTokensHaveGlyphs() {
  // One token for each rule of displayToken (text/token_display.h): controls, invisible
  // characters, bytes that are not UTF-8, a space token, other whitespace.
  const std::vector<std::string> tokens{
      "\n",   "\t",       "\r",           "\x1B",          std::string(1, '\0'),
      "\x7F", "\xC2\x85", "\xE2\x80\x8F", "\xE2\x80\xA8",  "\xFF",
      " ",    "   ",      "\xC2\xA0",     " \xE3\x80\x80", "a b"};
  QSet<char32_t> added;
  for (const std::string& t : tokens) {
    const QString in = QString::fromUtf8(t.data(), qsizetype(t.size()));
    const QString shown = QString::fromStdString(displayToken(t));
    for (char32_t cp : shown.toUcs4())
      if (!in.toUcs4().contains(cp)) added.insert(cp);
  }
  QVERIFY(added.contains(U'\u2423'));  // the space token's marker
  for (const char* file :
       {"DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSans-Oblique.ttf", "DejaVuSansMono.ttf"}) {
    QFile f(QStringLiteral(":/fonts/") + QLatin1String(file));
    QVERIFY2(f.open(QIODevice::ReadOnly), file);
    const QRawFont font(f.readAll(), 12);
    QVERIFY2(font.isValid(), file);
    for (char32_t cp : added)
      QVERIFY2(font.supportsCharacter(cp), qPrintable(QStringLiteral("%1 has no glyph for U+%2")
                                                          .arg(QLatin1String(file))
                                                          .arg(uint(cp), 4, 16, QLatin1Char('0'))));
  }
}

void GuiTest::colormapEnds() {
  QFETCH(QString, name);
  QFETCH(QColor, bottom);
  QFETCH(QColor, top);
  const Colormap& c = Colormap::byName(name);
  QCOMPARE(c.name(), name);
  auto close = [](QColor a, QColor b) {
    return std::abs(a.red() - b.red()) <= 1 && std::abs(a.green() - b.green()) <= 1 &&
           std::abs(a.blue() - b.blue()) <= 1;
  };
  QVERIFY(close(c.bottom(), bottom));
  QVERIFY(close(c.top(), top));
  QCOMPARE(c.color(1.0), c.top());
  QCOMPARE(c.color(0.0), c.bottom());
  // The masked fill is far from every colour of the map: masked never reads as a value.
  for (int k = 0; k <= 255; ++k) {
    const QColor v = c.color(k / 255.0);
    const QColor m = c.maskedFill();
    const int dist = std::abs(v.red() - m.red()) + std::abs(v.green() - m.green()) +
                     std::abs(v.blue() - m.blue());
    QVERIFY2(dist > 24, qPrintable(QStringLiteral("%1 at %2").arg(name).arg(k)));
  }
}

void GuiTest::structureModel() {
  auto loaded = loadModel(kTinyModel.toStdString());
  StructureModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
  model.setConfig(&loaded->config);
  const auto& c = loaded->config;
  QCOMPARE(model.rowCount(), 2);  // encoder, decoder
  // Encoder: embedding + layers; decoder: embedding + layers + output projection.
  QCOMPARE(model.rowCount(model.index(0, 0)), 1 + c.n_encoder_layers);
  QCOMPARE(model.rowCount(model.index(1, 0)), 1 + c.n_decoder_layers + 1);
  const QModelIndex cross = model.find(AttentionKind::Cross, 1, -2);
  QVERIFY(cross.isValid());
  QCOMPARE(cross.data().toString(), QStringLiteral("Cross-attention"));
  QCOMPARE(model.rowCount(cross), c.n_heads + 1);  // mean + heads
  const QModelIndex head = model.find(AttentionKind::DecoderSelf, 0, 2);
  QCOMPARE(head.data().toString(), QStringLiteral("Head 3"));
  QCOMPARE(head.data(StructureModel::KindRole).toInt(), int(AttentionKind::DecoderSelf));
  QCOMPARE(head.parent().parent().data().toString(), QStringLiteral("Layer 1"));
  model.setConfig(nullptr);
  QCOMPARE(model.rowCount(), 0);
}

void GuiTest::decodingModels() {
  DecodingStepsModel steps;
  TopKModel topk;
  QAbstractItemModelTester t1(&steps, QAbstractItemModelTester::FailureReportingMode::QtTest);
  QAbstractItemModelTester t2(&topk, QAbstractItemModelTester::FailureReportingMode::QtTest);
  auto step = [](int pos, int in, int chosen) {
    StepInfo s;
    s.position = pos;
    s.input_id = in;
    s.input = QStringLiteral("t%1").arg(in);
    s.chosen_id = chosen;
    s.chosen = chosen >= 0 ? QStringLiteral("t%1").arg(chosen) : QString();
    s.argmax_id = 3;
    s.argmax = QStringLiteral("t3");
    s.topk = {{3, 0.7f}, {4, 0.2f}, {5, 0.1f}};
    s.topk_tokens = {QStringLiteral("t3"), QStringLiteral("t4"), QStringLiteral("t5")};
    return s;
  };
  steps.setSteps({step(0, 1, 3), step(1, 3, -1)});
  QCOMPARE(steps.rowCount(), 2);
  steps.setSteps({step(0, 1, 3), step(1, 3, 4), step(2, 4, -1)});  // a step forward: one row added
  QCOMPARE(steps.rowCount(), 3);
  QVERIFY(
      steps.index(1, DecodingStepsModel::Chosen).data().toString().contains(QStringLiteral("✎")));
  steps.setSteps({step(0, 1, -1)});  // back to the start
  QCOMPARE(steps.rowCount(), 1);
  QVERIFY(
      steps.index(0, DecodingStepsModel::Chosen).data().toString().contains(QStringLiteral("t3")));
  steps.setSteps({});
  QCOMPARE(steps.rowCount(), 0);

  StepInfo s = step(0, 1, 4);
  topk.setStep(&s);
  QCOMPARE(topk.rowCount(), 3);
  QCOMPARE(topk.index(1, TopKModel::Token).data().toString(), QStringLiteral("t4"));
  QCOMPARE(topk.index(1, 0).data(TopKModel::TokenIdRole).toInt(), 4);
  QCOMPARE(topk.index(0, TopKModel::Probability).data().toString(), QStringLiteral("0.7000"));
  topk.setStep(nullptr);
  QCOMPARE(topk.rowCount(), 0);
}

// ---- heatmap widget ---------------------------------------------------------------------------

void GuiTest::heatmapLargeRendersOffThread() {
  HeatmapWidget hm;
  hm.resize(500, 500);
  hm.show();
  HeatmapData d;
  d.rows = d.cols = 600;  // 360 000 cells: rendered off the GUI thread
  d.values.resize(size_t(d.rows) * d.cols);
  for (size_t k = 0; k < d.values.size(); ++k) d.values[k] = float(k % 601) / 600.0f;
  QSignalSpy done(&hm, &HeatmapWidget::renderingDone);
  hm.setData(d);
  QVERIFY(hm.rendering());
  QVERIFY(done.wait(20000));
  QVERIFY(!hm.rendering());
  QCOMPARE(hm.cellImage().size(), QSize(600, 600));
  QVERIFY(!hm.allRowLabelsDrawn());  // cells below one pixel: labels are thinned out
}

void GuiTest::heatmapZoom() {
  HeatmapView view;
  view.resize(400, 300);
  view.show();
  HeatmapData d;
  d.rows = d.cols = 40;
  d.values.assign(1600, 0.5f);
  view.heatmap()->setData(d);
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  const double fit = view.heatmap()->cellSize();
  view.zoomIn();
  QVERIFY(view.heatmap()->cellSize() > fit);
  QVERIFY(view.heatmap()->width() > view.scrollArea()->viewport()->width());  // scrolls now
  view.zoomFit();
  QCoreApplication::processEvents();
  QCOMPARE(view.heatmap()->cellSize(), fit);
}

// The logit lens of a character model (7 rows, 60 positions): at a window's width the cells are
// too narrow for a word but not for one character, and each cell's text is written when it fits
// (the normal font, else the small one), never an ellipsis alone.
void GuiTest::heatmapWritesCellTextsThatFit() {
  HeatmapWidget hm;
  QFont known = hm.font();
  known.setPointSizeF(9);
  hm.setFont(known);
  HeatmapData d;
  d.rows = 7;
  d.cols = 60;
  d.square_cells = false;
  d.values.assign(size_t(d.rows) * d.cols, 0.5f);
  for (int i = 0; i < d.rows * d.cols; ++i)
    d.cell_texts << QString(QChar(u'a' + i % 26)) + QStringLiteral("\n0.50");
  hm.setData(d);
  hm.resize(1000, 300);
  const double cw = hm.cellRect(0, 0).width();
  QVERIFY2(cw < QFontMetricsF(known).horizontalAdvance(QStringLiteral("ab")) + 6,
           qPrintable(QString::number(cw)));  // narrower than the old rule's "ab"
  QCOMPARE(hm.cellTextsWritten(), d.rows * d.cols);
  // Low rows: the small font.
  hm.resize(1000, 7 * int(QFontMetricsF(known).height()) + 120);
  QCOMPARE(hm.cellTextsWritten(), d.rows * d.cols);
  // Words in the same cells: shortened where a letter and the ellipsis fit, else left out.
  HeatmapData words = d;
  for (QString& t : words.cell_texts) t = QStringLiteral("wwwwwwww\n0.50");
  hm.resize(1000, 300);
  hm.setData(words);
  const QFontMetricsF fm(known);
  const int expected = fm.horizontalAdvance(QStringLiteral("w…")) <= cw - 4 ? d.rows * d.cols : 0;
  QCOMPARE(hm.cellTextsWritten(), expected);
  // Cells a few pixels wide hold nothing.
  hm.resize(200, 300);
  QCOMPARE(hm.cellTextsWritten(), 0);
  hm.resize(1000, 300);
  QVERIFY(hm.grab().width() > 0);  // and it paints
}

// An exported heatmap's cells are rectangles: abutting at fractional pixels, a viewer's anti-
// aliasing let the background show between them as seams (Chromium, PDF viewers, Qt's own SVG
// renderer alike). A uniform matrix of small cells (no grid lines), rendered at 1.37×, is one
// colour inside.
void GuiTest::heatmapSvgHasNoSeams() {
  HeatmapWidget hm;
  HeatmapData d;
  d.rows = d.cols = 131;
  d.values.assign(size_t(d.rows) * d.cols, 0.5f);
  d.values[0] = 0.0f;  // a range for the colours
  d.values[1] = 1.0f;
  hm.setData(d);
  hm.resize(517, 433);
  QBuffer svg;
  svg.open(QIODevice::WriteOnly);
  QSvgGenerator gen;
  gen.setOutputDevice(&svg);
  gen.setSize(hm.size());
  gen.setViewBox(QRect(QPoint(0, 0), hm.size()));
  {
    QPainter p(&gen);
    hm.render(&p);
  }
  QSvgRenderer renderer(svg.data());
  QVERIFY(renderer.isValid());
  const double scale = 1.37;
  QImage img(QSizeF(hm.size() * scale).toSize(), QImage::Format_ARGB32);
  img.fill(Qt::white);
  {
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    renderer.render(&p, QRectF(QPointF(0, 0), QSizeF(hm.size()) * scale));
  }
  // The cells from the third row on (the first holds the range's two cells), inside by a pixel.
  const QRectF grid = hm.gridRect();
  const QRect inside =
      QRectF(grid.left() * scale + 2, (grid.top() + 2 * hm.cellRect(0, 0).height()) * scale + 2,
             grid.width() * scale - 4, grid.height() * scale * 0.9)
          .toRect();
  const QColor want = img.pixelColor(inside.center());
  int off = 0;
  for (int y = inside.top(); y <= inside.bottom(); ++y)
    for (int x = inside.left(); x <= inside.right(); ++x) {
      const QColor c = img.pixelColor(x, y);
      if (std::abs(c.red() - want.red()) + std::abs(c.green() - want.green()) +
              std::abs(c.blue() - want.blue()) >
          6)
        ++off;
    }
  QVERIFY2(off == 0, qPrintable(QStringLiteral("%1 of %2 pixels are not the cells' colour")
                                    .arg(off)
                                    .arg(inside.width() * inside.height())));
}

// The room left of the cells for the row labels is measured once per data and font: new labels
// and a larger font must move the grid, and the old labels and font must move it back.
void GuiTest::heatmapLabelRoomFollowsDataAndFont() {
  HeatmapWidget hm;
  hm.resize(600, 400);
  QFont known = hm.font();  // a known size: the labels stay under the 150 px cap at 1.5×
  known.setPointSizeF(9);
  hm.setFont(known);
  HeatmapData d;
  d.rows = d.cols = 2;
  d.values.assign(4, 0.5f);
  d.row_labels = d.col_labels = {QStringLiteral("a"), QStringLiteral("b")};
  hm.setData(d);
  const double short_left = hm.gridRect().left(), short_top = hm.gridRect().top();
  HeatmapData wide = d;
  wide.row_labels = {QStringLiteral("longer label"), QStringLiteral("b")};
  hm.setData(wide);
  const double wide_left = hm.gridRect().left();
  QVERIFY2(wide_left > short_left + 20,
           qPrintable(QStringLiteral("%1 vs %2").arg(wide_left).arg(short_left)));
  hm.setFontScale(1.5);
  QVERIFY(hm.gridRect().left() > wide_left + 10);
  hm.setFontScale(1.0);
  QCOMPARE(hm.gridRect().left(), wide_left);
  hm.setData(d);
  QCOMPARE(hm.gridRect().left(), short_left);
  // Column labels too wide to stand side by side turn vertical: the grid moves down.
  HeatmapData tall = d;
  tall.col_labels = {QStringLiteral("a much longer column label"), QStringLiteral("b")};
  hm.setData(tall);
  QVERIFY(hm.gridRect().top() > short_top + 20);
  hm.setData(d);
  QCOMPARE(hm.gridRect().top(), short_top);
  QFont big = known;
  big.setPointSizeF(18);
  hm.setFont(big);
  QVERIFY(hm.gridRect().left() > short_left);
}

// Token widths are measured once per tokens and font: a longer token, and then a larger font,
// must widen its box, and the layout must wrap to the width.
void GuiTest::tokenTextFollowsTokensAndFont() {
  TokenText t;
  t.resize(400, 200);
  t.setTokens({QStringLiteral("a"), QStringLiteral("b")});
  const QRect a = t.tokenRect(0), b = t.tokenRect(1);
  QCOMPARE(a.top(), b.top());
  QVERIFY(b.left() > a.right());
  t.setTokens({QStringLiteral("a longer token"), QStringLiteral("b")});
  const QRect wide = t.tokenRect(0);
  QVERIFY(wide.width() > a.width() + 20);
  QCOMPARE(t.tokenAt(t.tokenRect(1).center()), 1);
  QFont big = t.font();
  big.setPointSizeF(big.pointSizeF() * 2);
  t.setFont(big);
  QVERIFY(t.tokenRect(0).width() > wide.width() + 20);
  // Wrapped: at a width of one token per line the second starts a new line.
  t.resize(t.tokenRect(0).width() + 4, 200);
  QVERIFY(t.tokenRect(1).top() > t.tokenRect(0).bottom());
  QVERIFY(t.heightForWidth(t.width()) > t.tokenRect(0).height() * 2 - 1);
  // Painting a part (the repainted area) draws the tokens there, with the current one's outline.
  t.setCurrent(1);
  const QRect r1 = t.tokenRect(1);
  const QImage part = t.grab(r1).toImage();
  bool outline = false;
  for (int x = 0; x <= 2; ++x)
    outline = outline || part.pixel(x, part.height() / 2) == qRgb(0x20, 0x20, 0x20);
  QVERIFY(outline);
}

// ---- main window ------------------------------------------------------------------------------

void GuiTest::startupShowsLastCrossAttention() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  QVERIFY(w->engine()->hasModel());
  auto snap = w->engine()->snapshot();
  QVERIFY(snap && snap->trace);
  const auto& s = w->state()->selection();
  QCOMPARE(s.kind, AttentionKind::Cross);
  QCOMPARE(s.layer, w->engine()->model()->config().n_decoder_layers - 1);
  QCOMPARE(w->currentView(), static_cast<View*>(w->attentionView()));
  QVERIFY(w->statusBackend()->text().contains(QStringLiteral("CPU")));
  QVERIFY(w->statusTime()->text().contains(QStringLiteral("ms")));
  QVERIFY(w->statusLengths()->text().contains(QStringLiteral("source 4")));
  QVERIFY(w->attentionView()->explanation()->html().contains(
      QStringLiteral("[batch, heads, len_q, len_k]")));
}

void GuiTest::heatmapPixelsLabelsTooltip() {
  // "P" is the pad token: its key column is masked in cross-attention.
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier P"));
  AttentionSelection sel = w->state()->selection();
  sel.head = 0;
  w->state()->setSelection(sel);
  HeatmapWidget* hm = w->attentionView()->heatmap();
  const Trace& t = *w->engine()->snapshot()->trace;
  const HeatmapData& d = hm->data();
  // Labels: queries are the target tokens, keys the source tokens.
  QCOMPARE(d.row_labels, toQ(t.tgt_tokens[0]));
  QCOMPARE(d.col_labels, toQ(t.src_tokens[0]));
  QCOMPARE(d.col_labels.last(), QStringLiteral("P"));
  QVERIFY(hm->allColLabelsDrawn());

  // The most probable cell is drawn in the colormap's top colour.
  const AttentionBlock& cross = *t.block(AttentionKind::Cross, sel.layer);
  int br = 0, bc = 0;
  for (int r = 0; r < d.rows; ++r)
    for (int c = 0; c < d.cols; ++c)
      if (cross.prob(0, 0, r, c) > cross.prob(0, 0, br, bc)) br = r, bc = c;
  QCOMPARE(QColor(centerPixel(hm, br, bc)), hm->colormap().top());

  // A masked cell has the masked fill (and its hatch), nothing else.
  const int masked_col = d.cols - 1;
  QVERIFY(cross.masked(0, 0, masked_col));
  const QList<QRgb> px = cellPixels(hm, 0, masked_col);
  const QRgb fill = hm->colormap().maskedFill().rgb() & 0xffffff;
  const QRgb hatch = hm->colormap().maskedHatch().rgb() & 0xffffff;
  int n_fill = 0;
  for (QRgb p : px) {
    QVERIFY(p == fill || p == hatch);
    n_fill += p == fill;
  }
  QVERIFY(n_fill > px.size() / 2);
  // …and is not what a 0-probability cell looks like.
  QVERIFY(QColor(fill) != hm->colormap().bottom());

  // The tooltip carries the trace's numbers.
  const QString tip = hm->tooltipText(br, bc);
  QVERIFY2(tip.contains(QString::number(cross.prob(0, 0, br, bc), 'f', 4)), qPrintable(tip));
  QVERIFY2(tip.contains(QString::number(cross.score(0, 0, br, bc), 'f', 4)), qPrintable(tip));
  QVERIFY(tip.contains(QStringLiteral("“%1”").arg(d.row_labels[br])));
  QVERIFY(tip.contains(QStringLiteral("“%1”").arg(d.col_labels[bc])));
  QVERIFY(tip.contains(QStringLiteral("Masked: no")));
  QVERIFY(hm->tooltipText(0, masked_col).contains(QStringLiteral("Masked: yes")));
  QVERIFY(hm->tooltipText(0, masked_col).contains(QStringLiteral("Probability: 0.0000")));

  // Hovering the cell shows that tooltip.
  QHelpEvent help(QEvent::ToolTip, hm->cellRect(br, bc).center().toPoint(),
                  hm->mapToGlobal(hm->cellRect(br, bc).center().toPoint()));
  QCoreApplication::sendEvent(hm, &help);
  QTRY_COMPARE(QToolTip::text(), tip);
  QToolTip::hideText();

  // Another colormap: the same cell takes its top colour.
  w->colormapCombo()->setCurrentIndex(w->colormapCombo()->findData(QStringLiteral("magma")));
  QCOMPARE(QColor(centerPixel(hm, br, bc)), Colormap::magma().top());
}

void GuiTest::typeRunAndLabels() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  QLineEdit* src = w->sourceEdit();
  src->clear();
  QTest::keyClicks(src, QStringLiteral("ich mochte ein cola"));
  QTest::mouseClick(w->runButton(), Qt::LeftButton);
  QVERIFY(idle(*w));
  const Trace& t = *w->engine()->snapshot()->trace;
  QCOMPARE(toQ(t.src_tokens[0]), (QStringList{"ich", "mochte", "ein", "cola"}));
  QCOMPARE(w->attentionView()->heatmap()->data().col_labels, toQ(t.src_tokens[0]));
  // Encoder self-attention (key 1): sources on both axes.
  w->tabs()->setFocus();
  QTest::keyClick(w->tabs(), Qt::Key_1);
  QCOMPARE(w->state()->selection().kind, AttentionKind::EncoderSelf);
  QCOMPARE(w->attentionView()->heatmap()->data().row_labels, toQ(t.src_tokens[0]));
  // Enter in the source field runs too.
  src->setText(QStringLiteral("ein bier"));
  QTest::keyClick(src, Qt::Key_Return);
  QVERIFY(idle(*w));
  QCOMPARE(w->engine()->snapshot()->trace->src_len, 2);
}

void GuiTest::stepBackAndForward() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  w->setCurrentView(QStringLiteral("decoding"));
  DecodingStepsModel* steps = w->decodingView()->stepsModel();
  w->tabs()->setFocus();
  QTest::keyClick(w->tabs(), Qt::Key_Home);  // back to the prefix: BOS only
  QVERIFY(idle(*w));
  QCOMPARE(steps->rowCount(), 1);
  QCOMPARE(w->engine()->snapshot()->trace->tgt_len, 1);
  QTest::keyClick(w->tabs(), Qt::Key_Right);
  QVERIFY(idle(*w));
  QCOMPARE(steps->rowCount(), 2);
  const int first = steps->steps()[0].chosen_id;
  QCOMPARE(first, steps->steps()[0].argmax_id);  // greedy
  QCOMPARE(steps->steps()[1].input_id, first);
  QTest::keyClick(w->tabs(), Qt::Key_Right);
  QVERIFY(idle(*w));
  QCOMPARE(steps->rowCount(), 3);
  QCOMPARE(w->engine()->snapshot()->trace->tgt_len, 3);
  QTest::keyClick(w->tabs(), Qt::Key_Left);
  QVERIFY(idle(*w));
  QCOMPARE(steps->rowCount(), 2);
  QCOMPARE(steps->steps()[1].chosen_id, -1);
  // End decodes to the end again.
  QTest::keyClick(w->tabs(), Qt::Key_End);
  QVERIFY(idle(*w));
  QVERIFY(w->engine()->snapshot()->finished);
  QVERIFY(steps->rowCount() > 2);
  // The cross-attention rows of the newest step: one row per layer and head.
  const auto& c = w->engine()->model()->config();
  QCOMPARE(w->decodingView()->rowsMap()->data().rows, c.n_decoder_layers * c.n_heads);
  QVERIFY(w->decodingView()->topkModel()->rowCount() > 0);
}

void GuiTest::subsequentMaskOffLeaksFuture() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"), QStringLiteral("masks"));
  w->state()->setKind(AttentionKind::DecoderSelf);
  auto above = [&](const Trace& t) {
    double sum = 0;
    for (int l = 0; l < t.layers(AttentionKind::DecoderSelf); ++l) {
      const AttentionBlock& a = *t.block(AttentionKind::DecoderSelf, l);
      for (int h = 0; h < a.heads; ++h)
        for (int i = 0; i < a.q_len; ++i)
          for (int j = i + 1; j < a.k_len; ++j) sum += a.prob(0, h, i, j);
    }
    return sum;
  };
  auto snap = w->engine()->snapshot();
  QVERIFY(snap->trace->tgt_len >= 3);
  QCOMPARE(above(*snap->trace), 0.0);
  const std::vector<std::vector<int>> tgt_before = snap->trace->tgt_ids;
  MasksView* m = w->masksView();
  QVERIFY(m->unionMap()->data().isMasked(0, 1));
  QTest::mouseClick(m->subsequentSwitch(), Qt::LeftButton);
  QVERIFY(idle(*w));
  snap = w->engine()->snapshot();
  QVERIFY(!snap->masks.subsequent);
  QVERIFY(!m->subsequentSwitch()->isChecked());
  QCOMPARE(snap->trace->tgt_ids, tgt_before);  // the same tokens, rerun
  QVERIFY(above(*snap->trace) > 0.0);
  QVERIFY(!m->unionMap()->data().isMasked(0, 1));
  QVERIFY(m->subsequentMap()->data().title.contains(QStringLiteral("off")));
  // The attention view shows the leak: a cell above the diagonal is no longer masked.
  w->setCurrentView(QStringLiteral("attention"));
  QVERIFY(w->attentionView()->heatmap()->data().prob(0, 1) > 0.0f);
  QVERIFY(!w->attentionView()->heatmap()->data().isMasked(0, 1));
  // Back on.
  w->setCurrentView(QStringLiteral("masks"));
  QTest::mouseClick(m->subsequentSwitch(), Qt::LeftButton);
  QVERIFY(idle(*w));
  QCOMPARE(above(*w->engine()->snapshot()->trace), 0.0);
}

void GuiTest::batchPadsSentences() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"), QStringLiteral("masks"));
  MasksView* m = w->masksView();
  m->batchEdit()->setPlainText(QStringLiteral("ich mochte ein bier cola\nein bier"));
  QTest::mouseClick(m->batchButton(), Qt::LeftButton);
  QVERIFY(idle(*w));
  auto snap = w->engine()->snapshot();
  QVERIFY(snap->batch);
  QCOMPARE(snap->trace->batch, 2);
  QCOMPARE(snap->trace->src_len, 5);
  QVERIFY(w->batchCombo()->isVisible());
  // The short sentence: its padded keys are masked in encoder self-attention.
  w->state()->setKind(AttentionKind::EncoderSelf);
  w->state()->setBatchIndex(1);
  QCOMPARE(w->state()->selection().batch, 1);
  QVERIFY(snap->trace->block(AttentionKind::EncoderSelf, 0)->masked(1, 0, 4));
  QVERIFY(!snap->trace->block(AttentionKind::EncoderSelf, 0)->masked(1, 0, 1));
  QVERIFY(m->paddingMap()->data().isMasked(0, 4));
  QCOMPARE(m->paddingMap()->data().col_labels.mid(0, 2), (QStringList{"ein", "bier"}));
  // A layer switch keeps the masks as drawn (every layer's are the same) and redraws the pipeline;
  // the sentence and the kind draw the masks again.
  auto cellsOf = [](const HeatmapData& d) {
    std::vector<float> v;
    for (int r = 0; r < d.rows; ++r)
      for (int c = 0; c < d.cols; ++c) v.push_back(d.value(r, c));
    return v;
  };
  const std::vector<float> scores_before = cellsOf(m->scoresMap()->data());
  AttentionSelection next = w->state()->selection();
  next.layer = 1 - next.layer;  // the other of the two layers
  w->state()->setSelection(next);
  QVERIFY(cellsOf(m->scoresMap()->data()) != scores_before);
  QVERIFY(m->paddingMap()->data().isMasked(0, 4));
  w->state()->setBatchIndex(0);
  QCOMPARE(m->paddingMap()->data().col_labels.mid(0, 2), (QStringList{"ich", "mochte"}));
  QVERIFY(!m->paddingMap()->data().isMasked(0, 4));
  w->state()->setKind(AttentionKind::DecoderSelf);
  QVERIFY(m->subsequentMap()->data().isMasked(0, 1));
  w->state()->setKind(AttentionKind::EncoderSelf);
  QVERIFY(!m->subsequentMap()->data().mask_only);  // "no look-ahead mask" again
  w->state()->setBatchIndex(1);
  QVERIFY(m->paddingMap()->data().isMasked(0, 4));
  // Padding mask off: the real tokens now attend to the padding.
  QTest::mouseClick(m->srcPaddingSwitch(), Qt::LeftButton);
  QVERIFY(idle(*w));
  snap = w->engine()->snapshot();
  QVERIFY(snap->batch);
  QVERIFY(snap->trace->block(AttentionKind::EncoderSelf, 0)->prob(1, 0, 0, 4) > 0.0f);
  // Decoding needs one sentence.
  QVERIFY(!w->engine()->canStepForward());
}

void GuiTest::errorsKeepTypedText() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  const auto before = w->engine()->snapshot();
  // An unknown word.
  w->sourceEdit()->setText(QStringLiteral("ich mochte xyzzy"));
  w->prefixEdit()->setText(QStringLiteral("i want"));
  QTest::mouseClick(w->runButton(), Qt::LeftButton);
  QVERIFY(idle(*w));
  MessageBar* bar = w->messageBar();
  QVERIFY(bar->isVisible());
  QCOMPARE(bar->level(), MessageBar::Level::Error);
  QVERIFY2(bar->text().contains(QStringLiteral("xyzzy")), qPrintable(bar->text()));
  QCOMPARE(w->sourceEdit()->text(), QStringLiteral("ich mochte xyzzy"));
  QCOMPARE(w->prefixEdit()->text(), QStringLiteral("i want"));
  QCOMPARE(w->engine()->snapshot(), before);  // the views keep the last good run
  // A sentence longer than max_len.
  QStringList words;
  for (int i = 0; i < w->engine()->model()->config().max_len + 5; ++i)
    words << QStringLiteral("bier");
  w->sourceEdit()->setText(words.join(' '));
  w->prefixEdit()->clear();
  QTest::mouseClick(w->runButton(), Qt::LeftButton);
  QVERIFY(idle(*w));
  QVERIFY(bar->isVisible());
  QCOMPARE(bar->level(), MessageBar::Level::Error);
  QCOMPARE(w->sourceEdit()->text(), words.join(' '));
  // A good run clears the error.
  w->sourceEdit()->setText(QStringLiteral("ein bier"));
  QTest::mouseClick(w->runButton(), Qt::LeftButton);
  QVERIFY(idle(*w));
  QVERIFY(!bar->isVisible());
}

// File › Open input text…: a text longer than QLineEdit's default 32,767 characters, over several
// lines, arrives whole (but for its final line break) and runs; a file with a NUL byte, one that is
// not UTF-8 and an empty one are refused naming the file, and the field keeps what it had.
void GuiTest::inputTextFromAFile() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  QTemporaryDir dir;
  auto write = [&](const QString& name, const QByteArray& bytes) {
    QFile f(dir.filePath(name));
    if (!f.open(QIODevice::WriteOnly)) return QString();
    f.write(bytes);
    return f.fileName();
  };
  QByteArray text;
  while (text.size() < 40000) text += "ich mochte ein bier\nein bier ";
  const QString good = write(QStringLiteral("long.txt"), text + "\n");
  QVERIFY(w->openInputText(good));
  QCOMPARE(w->sourceEdit()->text(), QString::fromUtf8(text));
  QCOMPARE(w->messageBar()->level(), MessageBar::Level::Info);
  const QString kept = w->sourceEdit()->text();
  const QString nul = write(QStringLiteral("nul.txt"), QByteArray("ein\0bier", 8));
  QVERIFY(!w->openInputText(nul));
  QCOMPARE(w->messageBar()->level(), MessageBar::Level::Error);
  QVERIFY(w->messageBar()->text().contains(QStringLiteral("NUL")));
  QVERIFY(!w->openInputText(write(QStringLiteral("latin1.txt"), QByteArray("b\xe4r ein", 7))));
  QVERIFY(w->messageBar()->text().contains(QStringLiteral("latin1.txt is not UTF-8")));
  // A multibyte sequence cut short by the end of the file.
  QVERIFY(!w->openInputText(write(QStringLiteral("cut.txt"), QByteArray("ein b\xc3", 6))));
  QVERIFY(w->messageBar()->text().contains(QStringLiteral("cut.txt is not UTF-8")));
  QVERIFY(!w->openInputText(write(QStringLiteral("empty.txt"), QByteArray(" \n"))));
  QVERIFY(w->messageBar()->text().contains(QStringLiteral("empty.txt holds no text")));
  QVERIFY(!w->openInputText(dir.filePath(QStringLiteral("missing.txt"))));
  QVERIFY(w->messageBar()->text().contains(QStringLiteral("missing.txt")));
  QCOMPARE(w->sourceEdit()->text(), kept);
  // The file's text is what runs: a short one, run with Enter.
  QVERIFY(w->openInputText(write(QStringLiteral("short.txt"), "ein bier\r\n")));
  QCOMPARE(w->sourceEdit()->text(), QStringLiteral("ein bier"));
  QTest::keyClick(w->sourceEdit(), Qt::Key_Return);
  QVERIFY(idle(*w));
  QCOMPARE(w->engine()->snapshot()->trace->src_len, 2);  // the tiny model adds no end token
}

void GuiTest::failedLoadKeepsModel() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  const Model* model = w->engine()->model();
  QTemporaryDir dir;
  const QString bad = dir.filePath(QStringLiteral("bad.safetensors"));
  QFile f(bad);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write("\x10\x00\x00\x00\x00\x00\x00\x00{not json at all", 24);
  f.close();
  QVERIFY(w->engine()->loadModel(bad));
  QVERIFY(idle(*w));
  QCOMPARE(w->engine()->model(), model);
  QCOMPARE(w->messageBar()->level(), MessageBar::Level::Error);
  QVERIFY(w->messageBar()->text().contains(QStringLiteral("bad.safetensors")));
  QCOMPARE(w->modelCombo()->currentData().toString(), kTinyModel);
  QVERIFY(w->engine()->loadModel(QStringLiteral("/no/such/model.safetensors")));
  QVERIFY(idle(*w));
  QCOMPARE(w->engine()->model(), model);
  QVERIFY(w->engine()->snapshot() && w->engine()->snapshot()->trace);
  QCOMPARE(w->sourceEdit()->text(), QStringLiteral("ich mochte ein bier"));
}

void GuiTest::askedWhatTheFileDoesNotSay() {
  // The bundled reordering model (the WQ/WK/WV tutorial's Translation, post-norm as the
  // tutorial's) saved as a training loop saves it: the tensors alone, no config. Opening it asks
  // for the heads and the start and end tokens, with the vocabulary as a file; the answers open
  // it, computing what the original computes, and are remembered.
  const QString original = bundledPath("reorder");
  if (original.isEmpty()) QSKIP("the bundled reordering model is not installed");
  QTemporaryDir dir;
  const QString bare = dir.filePath(QStringLiteral("model.safetensors"));
  writeBare(original, bare);
  auto ref = loadModel(original.toStdString());
  const ModelConfig& rc = ref->config;
  // The source's vocabulary as a JSON list, the target's as a text file of one token a line.
  const QString vocab = dir.filePath(QStringLiteral("vocab.json"));
  const QString tgt_vocab = dir.filePath(QStringLiteral("tgt_vocab.txt"));
  {
    QFile v(vocab);
    QVERIFY(v.open(QIODevice::WriteOnly));
    v.write(QByteArray::fromStdString(nlohmann::json(rc.src_vocab).dump()));
    QFile t(tgt_vocab);
    QVERIFY(t.open(QIODevice::WriteOnly));
    for (const std::string& token : rc.tgt_vocab) t.write(QByteArray::fromStdString(token + "\n"));
  }

  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  const Model* before = w->engine()->model();
  QVERIFY(w->engine()->loadModel(bare));
  QVERIFY(idle(*w));
  QCOMPARE(w->engine()->model(), before);  // nothing replaced while asking
  AnswersDialog* d = nullptr;
  QTRY_VERIFY((d = w->findChild<AnswersDialog*>()) != nullptr);
  auto* heads = qobject_cast<QComboBox*>(d->field(QStringLiteral("n_heads")));
  auto* bos = qobject_cast<QSpinBox*>(d->field(QStringLiteral("bos_id")));
  auto* eos = qobject_cast<QSpinBox*>(d->field(QStringLiteral("eos_id")));
  QVERIFY(heads && bos && eos);
  auto* ok = d->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
  QVERIFY(!ok->isEnabled());  // nothing is guessed for the user
  QDir().mkpath(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR));
  d->grab().save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/answers-dialog.png"));
  QVERIFY(heads->findData(rc.n_heads) > 0);
  heads->setCurrentIndex(heads->findData(rc.n_heads));
  bos->setValue(rc.bos_id);
  QVERIFY(!ok->isEnabled());
  eos->setValue(rc.eos_id);
  QVERIFY(ok->isEnabled());
  // A vocabulary file that is not one: the dialog stays and says why.
  d->vocabularyField(false)->setText(dir.filePath(QStringLiteral("no-such-vocab.json")));
  d->accept();
  QVERIFY(d->isVisible());
  d->vocabularyField(false)->setText(vocab);
  d->vocabularyField(true)->setText(tgt_vocab);
  d->accept();
  QVERIFY(idle(*w));
  QVERIFY2(w->engine()->model() != before, qPrintable(w->messageBar()->text()));
  const ModelConfig& c = w->engine()->model()->config();
  QCOMPARE(c.n_heads, rc.n_heads);
  QCOMPARE(c.bos_id, rc.bos_id);
  QCOMPARE(c.eos_id, rc.eos_id);
  QCOMPARE(c.src_vocab, rc.src_vocab);
  QCOMPARE(c.tgt_vocab, rc.tgt_vocab);
  // The same attention as the original model's.
  QVERIFY(sameLastCrossAttention(*w->engine()->model(), ref,
                                 {{{5, 9, 12, 3}}, {}, {{rc.bos_id, 7, 8}}}));
  // Remembered: the next opening (after another model) asks nothing.
  auto reopensWithoutAsking = [&](const QString& path) {
    QVERIFY(w->engine()->loadModel(kTinyModel));
    QVERIFY(idle(*w));
    QVERIFY(w->engine()->loadModel(path));
    QVERIFY(idle(*w));
    QCOMPARE(w->engine()->model()->config().n_heads, rc.n_heads);
    QTRY_VERIFY(w->findChildren<AnswersDialog*>().isEmpty());
  };
  QVERIFY(QFile::exists(bare + QStringLiteral(".attnviz.json")));
  reopensWithoutAsking(bare);
  if (QTest::currentTestFailed()) return;

  // A folder holding only the model file asks the same, and remembers the answers beside the
  // file in it, where the next opening finds them.
  const QString folder = dir.filePath(QStringLiteral("folder"));
  QVERIFY(QDir().mkpath(folder));
  QVERIFY(QFile::copy(bare, folder + QStringLiteral("/model.safetensors")));
  QVERIFY(w->engine()->loadModel(folder));
  QVERIFY(idle(*w));
  AnswersDialog* fd = nullptr;
  QTRY_VERIFY((fd = w->findChild<AnswersDialog*>()) != nullptr);
  auto* fheads = qobject_cast<QComboBox*>(fd->field(QStringLiteral("n_heads")));
  QVERIFY(fheads);
  fheads->setCurrentIndex(fheads->findData(rc.n_heads));
  qobject_cast<QSpinBox*>(fd->field(QStringLiteral("bos_id")))->setValue(rc.bos_id);
  qobject_cast<QSpinBox*>(fd->field(QStringLiteral("eos_id")))->setValue(rc.eos_id);
  fd->vocabularyField(false)->setText(vocab);
  fd->vocabularyField(true)->setText(tgt_vocab);
  fd->accept();
  QVERIFY(idle(*w));
  QCOMPARE(w->engine()->model()->config().n_heads, rc.n_heads);
  QVERIFY(QFile::exists(folder + QStringLiteral("/model.safetensors.attnviz.json")));
  QVERIFY(!QFile::exists(folder + QStringLiteral(".attnviz.json")));
  reopensWithoutAsking(folder);
}

void GuiTest::preNormChosenInTheDialog() {
  // The bundled reversing model (PyTorch's Seq2SeqTransformer, pre-norm) without its config: its
  // names cannot tell pre- from post-norm, so the dialog offers the LayerNorm's place (post
  // preselected, as nn.Transformer's default) and the activation; choosing pre opens a model
  // whose attention is the original's.
  const QString original = bundledPath("reverse");
  if (original.isEmpty()) QSKIP("the bundled reversing model is not installed");
  QTemporaryDir dir;
  const QString bare = dir.filePath(QStringLiteral("reverse.safetensors"));
  writeBare(original, bare);
  auto ref = loadModel(original.toStdString());
  const ModelConfig& rc = ref->config;
  QCOMPARE(rc.norm, NormPlacement::Pre);
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  QVERIFY(w->engine()->loadModel(bare));
  QVERIFY(idle(*w));
  AnswersDialog* d = nullptr;
  QTRY_VERIFY((d = w->findChild<AnswersDialog*>()) != nullptr);
  QVERIFY(d->normField() && d->activationField());
  QCOMPARE(d->normField()->currentData().toString(), QStringLiteral("post"));
  QCOMPARE(d->activationField()->currentData().toString(), QStringLiteral("relu"));
  QDir().mkpath(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR));
  d->grab().save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/answers-dialog-norm.png"));
  d->normField()->setCurrentIndex(d->normField()->findData(QStringLiteral("pre")));
  auto* heads = qobject_cast<QComboBox*>(d->field(QStringLiteral("n_heads")));
  QVERIFY(heads);
  heads->setCurrentIndex(heads->findData(rc.n_heads));
  for (const char* key : {"pad_id", "bos_id", "eos_id"})
    if (auto* spin = qobject_cast<QSpinBox*>(d->field(QString::fromLatin1(key))))
      spin->setValue(std::string(key) == "pad_id"   ? rc.tgt_pad_id
                     : std::string(key) == "bos_id" ? rc.bos_id
                                                    : rc.eos_id);
  d->vocabularyField(false)->setText(QString());
  d->accept();
  QVERIFY(idle(*w));
  QVERIFY2(w->engine()->model() && w->engine()->model()->config().norm == NormPlacement::Pre,
           qPrintable(w->messageBar()->text()));
  QVERIFY(sameLastCrossAttention(
      *w->engine()->model(), ref,
      {{{rc.bos_id >= 0 ? rc.bos_id : 3, 5, 6, 7}}, {}, {{rc.bos_id, 5, 6}}}));
  // A copy whose remembered answers already say pre and GELU (but not the heads): the dialog
  // shows what they say, not the defaults.
  const QString second = dir.filePath(QStringLiteral("reverse2.safetensors"));
  writeBare(original, second);
  QFile answers(second + QStringLiteral(".attnviz.json"));
  QVERIFY(answers.open(QIODevice::WriteOnly));
  answers.write(R"({"norm": "pre", "activation": "gelu"})");
  answers.close();
  QTRY_VERIFY(w->findChildren<AnswersDialog*>().isEmpty());
  QVERIFY(w->engine()->loadModel(second));
  QVERIFY(idle(*w));
  AnswersDialog* d2 = nullptr;
  QTRY_VERIFY((d2 = w->findChild<AnswersDialog*>()) != nullptr);
  QCOMPARE(d2->normField()->currentData().toString(), QStringLiteral("pre"));
  QCOMPARE(d2->activationField()->currentData().toString(), QStringLiteral("gelu"));
  d2->reject();
}

void GuiTest::loaderWarningsShown() {
  // The test model with one weight overwritten by NaN: it loads, and the window says so.
  QFile in(kTinyModel);
  QVERIFY(in.open(QIODevice::ReadOnly));
  QByteArray bytes = in.readAll();
  quint64 header = 0;
  memcpy(&header, bytes.constData(), 8);
  const float nan = std::nanf("");
  memcpy(bytes.data() + 8 + header, &nan, 4);
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("nan.safetensors"));
  QFile out(path);
  QVERIFY(out.open(QIODevice::WriteOnly));
  out.write(bytes);
  out.close();
  auto w = openWindow(path, QStringLiteral("ich mochte ein bier"));
  QVERIFY(w->engine()->hasModel());
  QVERIFY(!w->engine()->model()->loaded().warnings.empty());
  QVERIFY(w->messageBar()->isVisible());
  QCOMPARE(w->messageBar()->level(), MessageBar::Level::Warning);
  QVERIFY2(w->messageBar()->text().contains(QStringLiteral("NaN"), Qt::CaseInsensitive),
           qPrintable(w->messageBar()->text()));
}

void GuiTest::keysMoveAcrossLayersAndHeads() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  const auto& c = w->engine()->model()->config();
  QWidget* target = w->tabs();
  target->setFocus();
  QCOMPARE(w->state()->selection().head, -1);
  QTest::keyClick(target, Qt::Key_BracketRight);
  QCOMPARE(w->state()->selection().head, 0);
  QTest::keyClick(target, Qt::Key_BracketRight);
  QCOMPARE(w->state()->selection().head, 1);
  QCOMPARE(w->headCombo()->currentText(), QStringLiteral("Head 2"));
  QTest::keyClick(target, Qt::Key_M);
  QCOMPARE(w->state()->selection().head, -1);
  QTest::keyClick(target, Qt::Key_M);
  QCOMPARE(w->state()->selection().head, 1);  // back to the head it came from
  QTest::keyClick(target, Qt::Key_BracketLeft);
  QCOMPARE(w->state()->selection().head, 0);
  QTest::keyClick(target, Qt::Key_PageUp);
  QCOMPARE(w->state()->selection().layer, c.n_decoder_layers - 2);
  QTest::keyClick(target, Qt::Key_PageDown);
  QCOMPARE(w->state()->selection().layer, c.n_decoder_layers - 1);
  QTest::keyClick(target, Qt::Key_PageDown);  // stays at the last layer
  QCOMPARE(w->state()->selection().layer, c.n_decoder_layers - 1);
  QTest::keyClick(target, Qt::Key_2);
  QCOMPARE(w->state()->selection().kind, AttentionKind::DecoderSelf);
  // The structure panel follows, and selecting in it drives the views.
  const QModelIndex cur = w->structureView()->currentIndex();
  QCOMPARE(cur.data(StructureModel::KindRole).toInt(), int(AttentionKind::DecoderSelf));
  QCOMPARE(cur.data(StructureModel::HeadRole).toInt(), 0);
  const QModelIndex enc = w->structureModel()->find(AttentionKind::EncoderSelf, 0, 2);
  w->structureView()->setCurrentIndex(enc);
  QCOMPARE(w->state()->selection().kind, AttentionKind::EncoderSelf);
  QCOMPARE(w->state()->selection().layer, 0);
  QCOMPARE(w->state()->selection().head, 2);
  QVERIFY(w->attentionView()->title().size() > 0);
  QVERIFY(w->attentionView()->heatmap()->data().tooltip_note.isEmpty());  // one head, not the mean
  // Keys typed into the sentence are text, not shortcuts.
  w->sourceEdit()->setFocus();
  w->sourceEdit()->clear();
  QTest::keyClicks(w->sourceEdit(), QStringLiteral("m[2"));
  QCOMPARE(w->sourceEdit()->text(), QStringLiteral("m[2"));
  QCOMPARE(w->state()->selection().head, 2);
}

// Every view of the registry (view_registry.cpp), in its order: Ctrl+1 … Ctrl+9 reach the first
// nine, the View menu every one; each has its tab, explains itself and folds with F1.
void GuiTest::switchViews_data() {
  QTest::addColumn<int>("index");
  QTest::addColumn<QString>("view");
  for (int i = 0; i < int(viewSpecs().size()); ++i)
    QTest::newRow(viewSpecs()[size_t(i)].name)
        << i << QString::fromLatin1(viewSpecs()[size_t(i)].name);
}

void GuiTest::switchViews() {
  QFETCH(int, index);
  QFETCH(QString, view);
  static std::unique_ptr<MainWindow> w;
  if (!w) w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  const ViewSpec& spec = viewSpecs()[size_t(index)];
  QCOMPARE(int(w->views().size()), int(viewSpecs().size()));
  QCOMPARE(w->views()[size_t(index)]->name(), view);
  QCOMPARE(w->tabs()->indexOf(w->view(view)), index);
  QCOMPARE(w->tabs()->tabToolTip(index), spec.helpText());
  // The View menu lists the views in tab order, the first nine with their Ctrl+N.
  QMenu* menu = nullptr;
  for (QMenu* m : w->menuBar()->findChildren<QMenu*>())
    if (m->title() == QStringLiteral("&View")) menu = m;
  QVERIFY(menu);
  QAction* entry = w->action(QStringLiteral("view-") + view);
  QVERIFY(entry && menu->actions().contains(entry));
  QCOMPARE(menu->actions().indexOf(entry), index);
  QCOMPARE(entry->text(), w->view(view)->title());
  QCOMPARE(entry->statusTip(), spec.helpText());
  // From another view: by the menu …
  w->setCurrentView(index == 0 ? viewSpecs()[1].name : viewSpecs()[0].name);
  entry->trigger();
  QCOMPARE(w->currentView()->name(), view);
  // … and by Ctrl+N.
  if (index < 9) {
    QCOMPARE(entry->shortcut(), QKeySequence(QStringLiteral("Ctrl+%1").arg(index + 1)));
    w->setCurrentView(index == 0 ? viewSpecs()[1].name : viewSpecs()[0].name);
    w->tabs()->setFocus();
    QTest::keyClick(w->tabs(), Qt::Key(Qt::Key_1 + index), Qt::ControlModifier);
    QCOMPARE(w->currentView()->name(), view);
  } else {
    QVERIFY(entry->shortcut().isEmpty());
  }
  QVERIFY(w->currentView()->isVisible());
  QVERIFY(!w->currentView()->explanation()->html().isEmpty());
  // F1 folds every explanation in and out.
  QVERIFY(w->currentView()->explanation()->expanded());
  QTest::keyClick(w->tabs(), Qt::Key_F1);
  QVERIFY(!w->currentView()->explanation()->expanded());
  QTest::keyClick(w->tabs(), Qt::Key_F1);
  QVERIFY(w->currentView()->explanation()->expanded());
  if (index + 1 == int(viewSpecs().size())) w.reset();
}

void GuiTest::overviewClickOpensAttention() {
  auto w =
      openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"), QStringLiteral("overview"));
  OverviewGrid* grid = w->overviewView()->grid();
  const auto& c = w->engine()->model()->config();
  QCOMPARE(grid->layers(), c.n_decoder_layers);
  QCOMPARE(grid->heads(), c.n_heads);
  QTest::mouseClick(grid, Qt::LeftButton, {}, grid->thumbRect(0, 2).center());
  QCOMPARE(w->state()->selection().layer, 0);
  QCOMPARE(w->state()->selection().head, 2);
  QCOMPARE(w->currentView()->name(), QStringLiteral("attention"));
  QVERIFY(w->attentionView()->heatmap()->isVisible());
}

void GuiTest::positionalView() {
  auto w =
      openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"), QStringLiteral("positional"));
  PositionalView* v = w->positionalView();
  QTRY_VERIFY(!v->computing());
  const auto& c = w->engine()->model()->config();
  QCOMPARE(v->matrixMap()->data().cols, c.d_model);
  QCOMPARE(v->matrixMap()->data().rows, v->positionsSpin()->value());
  QCOMPARE(v->similarityMap()->data().rows, v->positionsSpin()->value());
  QCOMPARE(int(v->chartView()->chart()->series().size()), int(v->chosenDims().size()));
  // PE(1, 0) = sin(1): the matrix holds the sinusoidal table.
  QVERIFY(std::abs(v->matrixMap()->data().value(1, 0) - std::sin(1.0f)) < 1e-6f);
  QVERIFY(std::abs(v->matrixMap()->data().value(1, 1) - std::cos(1.0f)) < 1e-6f);
  QVERIFY(std::abs(v->similarityMap()->data().value(3, 3) - 1.0f) < 1e-5f);
  // Sinusoids: the curves and the matrix, not the rotary view's offset curve.
  QVERIFY(v->matrixMap()->isVisible() && v->dimsEdit()->isVisible());
  QVERIFY(!v->offsetChartView()->isVisible());
  v->dimsEdit()->setText(QStringLiteral("0, 3, 9999"));  // out of range is dropped
  QTest::keyClick(v->dimsEdit(), Qt::Key_Return);
  QTRY_VERIFY(!v->computing());
  QTRY_COMPARE(int(v->chartView()->chart()->series().size()), 2);
  v->positionsSpin()->setValue(20);
  QTRY_VERIFY(!v->computing());
  QTRY_COMPARE(v->similarityMap()->data().rows, 20);
  QVERIFY(v->explanation()->html().contains(QStringLiteral("d_model")));
  QVERIFY(v->explanation()->html().contains(QString::number(c.d_model)));
}

void GuiTest::branchWithAnotherToken() {
  auto w =
      openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"), QStringLiteral("decoding"));
  DecodingView* v = w->decodingView();
  v->selectStep(0);
  QCOMPARE(v->currentStep(), 0);
  const StepInfo& first = w->engine()->snapshot()->steps[0];
  QVERIFY(first.topk.size() >= 2);
  const int second_best = first.topk[1].first;
  v->topkTable()->selectRow(1);
  v->continueBox()->setChecked(false);
  QTest::mouseClick(v->useTokenButton(), Qt::LeftButton);
  QVERIFY(idle(*w));
  auto snap = w->engine()->snapshot();
  QCOMPARE(snap->steps.size(), size_t(2));  // branched after position 0, not decoded on
  QCOMPARE(snap->steps[0].chosen_id, second_best);
  QVERIFY(snap->steps[0].chosen_id != snap->steps[0].argmax_id);
  QVERIFY(v->stepsModel()
              ->index(0, DecodingStepsModel::Chosen)
              .data()
              .toString()
              .contains(QStringLiteral("✎")));
  QCOMPARE(snap->trace->tgt_ids[0][1], second_best);
}

void GuiTest::learnedPositions() {
  const QString path = QStringLiteral(ATTNVIZ_TEST_DATA "/nlp_variants.safetensors");
  auto w = openWindow(path, {}, QStringLiteral("positional"));
  QVERIFY(w->engine()->hasModel());
  const LoadedModel& m = w->engine()->model()->loaded();
  QCOMPARE(m.config.positional, Positional::Learned);
  PositionalView* v = w->positionalView();
  QTRY_VERIFY(!v->computing());
  QCOMPARE(v->tableCombo()->count(), 2);  // encoder and decoder tables
  const int d = m.config.d_model;
  const HeatmapData& pe = v->matrixMap()->data();
  QCOMPARE(pe.rows, std::min(v->positionsSpin()->value(), m.config.max_len));
  QCOMPARE(pe.value(3, 5), m.weights.encoder.embed.positions.data[size_t(3) * d + 5]);
  v->tableCombo()->setCurrentIndex(1);
  QTRY_VERIFY(!v->computing());
  QTRY_COMPARE(v->matrixMap()->data().value(3, 5),
               m.weights.decoder.embed.positions.data[size_t(3) * d + 5]);
  QVERIFY(v->explanation()->html().contains(QStringLiteral("learns")));
}

// A tutorial-size model (6+6 layers, d_model 512) decoding a long sentence: the window keeps
// running, shows progress, and Cancel stops the job and keeps what was shown before.
namespace {

// A window on a random model of the tutorials' size (6+6 layers, d_model 512): long jobs.
std::unique_ptr<MainWindow> tutorialSizeWindow() {
  MainWindow::Options o;
  o.use_settings = false;
  auto w = std::make_unique<MainWindow>(o);
  w->resize(1200, 800);
  w->show();
  auto loaded = makeRandomModel(tutorialSizeConfig(1000), 11);
  if (!w->engine()->setModel(std::make_shared<Model>(loaded, createBackend("cpu")),
                             QStringLiteral("tutorial-size")))
    return nullptr;
  return w;
}

// The window's model again, on the CPU backend behind `limit` (compute/memory_limit.h: it runs out
// of memory, or fails for good, as a GPU does), once the window is idle; nullptr when it cannot be
// set.
std::shared_ptr<Model> onLimitedBackend(MainWindow& w, const std::shared_ptr<MemoryLimit>& limit) {
  Engine* e = w.engine();
  auto model =
      std::make_shared<Model>(e->model()->loadedPtr(), limitMemory(createBackend("cpu"), limit));
  if (!e->setModel(model, QStringLiteral("nlp_tiny"))) return nullptr;
  if (!idle(w)) return nullptr;  // the window may run its input again on the new model
  return model;
}

}  // namespace

void GuiTest::longRunShowsProgressAndCancels() {
  auto window = tutorialSizeWindow();
  QVERIFY(window);
  MainWindow& w = *window;
  QStringList words;
  for (int i = 0; i < 120; ++i) words << QStringLiteral("w%1").arg(1 + (i * 37) % 999);
  w.sourceEdit()->setText(words.join(' '));
  // Long enough that it is still running when Esc comes, however fast the machine: a decode of
  // up to 2000 steps (random weights rarely pick the end token).
  w.engine()->setMaxNewTokens(2000);
  QSignalSpy progress(w.engine(), &Engine::progress);
  QTest::mouseClick(w.runButton(), Qt::LeftButton);
  QVERIFY(w.engine()->busy());
  QVERIFY(!w.runButton()->isEnabled());
  QVERIFY(progress.wait(20000));
  // The GUI thread is free: a timer's events are delivered while the job runs.
  int ticks = 0;
  QTimer ticker;
  connect(&ticker, &QTimer::timeout, [&] { ++ticks; });
  ticker.start(20);
  QTRY_VERIFY_WITH_TIMEOUT(ticks >= 3, 20000);
  ticker.stop();
  // The status bar's progress appears once a job has run for a quarter of a second (a short job
  // does not flash it); the progress signal may come before that.
  auto* bar = w.findChild<QProgressBar*>(QStringLiteral("statusProgress"));
  QVERIFY(bar);
  QTRY_VERIFY_WITH_TIMEOUT(bar->isVisible() || !w.engine()->busy(), 20000);
  QVERIFY2(w.engine()->busy(), "the run ended before Esc could cancel it");
  QVERIFY(bar->isVisible());
  QTest::keyClick(w.tabs(), Qt::Key_Escape);  // Esc cancels
  QVERIFY(idle(w));
  QVERIFY(!w.engine()->snapshot());  // nothing half-done is shown
  QCOMPARE(w.messageBar()->title(), QStringLiteral("Cancelled"));
  QCOMPARE(w.messageBar()->level(), MessageBar::Level::Info);  // the user's doing, not a fault
  QCOMPARE(w.sourceEdit()->text(), words.join(' '));
  QVERIFY(w.runButton()->isEnabled());
  // A later job that succeeds withdraws it (the backend chosen again: the model is rebuilt).
  w.engine()->setMaxNewTokens(4);
  QVERIFY(w.engine()->setBackend(QStringLiteral("cpu")));
  QVERIFY(idle(w));
  QVERIFY2(!w.messageBar()->isVisible(), qPrintable(w.messageBar()->title()));
}

void GuiTest::backendChooser() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  QComboBox* combo = w->backendCombo();
  QCOMPARE(combo->itemData(0).toString(), QStringLiteral("cpu"));
  QCOMPARE(combo->itemData(1).toString(), QStringLiteral("cuda"));
  const QString reason = QString::fromStdString(cudaUnavailableReason());
  auto* model = qobject_cast<QStandardItemModel*>(combo->model());
  QVERIFY(model);
  if (reason.isEmpty()) {
    QVERIFY(model->item(1)->isEnabled());
  } else {
    QVERIFY(!model->item(1)->isEnabled());  // greyed out, with the reason as its tooltip
    QVERIFY(combo->itemData(1, Qt::ToolTipRole).toString().contains(reason));
  }
  // The CPU threads: one, then every core again; a model loaded after keeps the setting, and the
  // numbers do not depend on it.
  const std::vector<float> probs_all = w->engine()->snapshot()->trace->blocks.back().denseProbs();
  w->threadsSpin()->setValue(1);
  QCOMPARE(w->engine()->threads(), 1);
  QVERIFY(w->engine()->loadModel(kTinyModel));
  QVERIFY(idle(*w));
  QCOMPARE(w->engine()->threads(), 1);
  QVERIFY(w->engine()->run(QStringLiteral("ich mochte ein bier"), {}));
  QVERIFY(idle(*w));
  const std::vector<float> probs_one = w->engine()->snapshot()->trace->blocks.back().denseProbs();
  QCOMPARE(probs_one.size(), probs_all.size());
  for (size_t i = 0; i < probs_one.size(); ++i)
    QVERIFY(std::abs(probs_one[i] - probs_all[i]) < 1e-6f);
  w->threadsSpin()->setValue(0);
  QCOMPARE(w->engine()->threads(), availableCores());
}

// A run that runs out of GPU memory is redone on the CPU, the window says so, and the model stays
// on its backend for the next run. Without a GPU: the CPU backend behind a memory limit
// (compute/memory_limit.h) runs out as a full GPU does.
void GuiTest::outOfGpuMemoryRedoneOnCpu() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  Engine* e = w->engine();
  const auto loaded = e->model()->loadedPtr();
  auto limit = std::make_shared<MemoryLimit>(~uint64_t(0));
  const auto model = onLimitedBackend(*w, limit);
  QVERIFY(model);
  const QString short_src = QStringLiteral("ich mochte ein bier");
  QString long_src = short_src;
  while (int(model->encodeSource((long_src + " ein bier").toStdString()).size()) <
         model->maxPositions() - 2)
    long_src += QStringLiteral(" ein bier");
  // The peak of each decode (weights + the session's buffers): the limit half-way between.
  auto peakOf = [&](const QString& src) {
    limit->peak = uint64_t(limit->in_use);
    if (!e->run(src, {})) return uint64_t(1);
    if (!idle(*w)) return uint64_t(2);
    return uint64_t(limit->peak);
  };
  const uint64_t peak_short = peakOf(short_src), peak_long = peakOf(long_src);
  QVERIFY2(peak_long > peak_short && peak_short > 2,
           qPrintable(QStringLiteral("%1, %2").arg(peak_short).arg(peak_long)));
  limit->bytes = (peak_short + peak_long) / 2;

  QSignalSpy notices(e, &Engine::notice);
  QSignalSpy failures(e, &Engine::failed);
  const uint64_t refused = limit->refused;
  QVERIFY(e->run(long_src, {}));
  QVERIFY(idle(*w));
  QCOMPARE(failures.count(), 0);
  QVERIFY(limit->refused > refused);
  QCOMPARE(notices.count(), 1);
  const QString note = notices.at(0).at(0).toString();
  QVERIFY2(note.startsWith(QStringLiteral("The GPU ran out of memory (out of memory: cannot "
                                          "allocate ")) &&
               note.endsWith(QStringLiteral("): this run was redone on the CPU. The model stays "
                                            "on the GPU: the next run tries it again.")),
           qPrintable(note));
  QVERIFY(w->messageBar()->isVisible());
  QCOMPARE(w->messageBar()->level(), MessageBar::Level::Warning);
  QVERIFY(w->messageBar()->text().contains(QStringLiteral("redone on the CPU")));
  QDir().mkpath(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR));
  QVERIFY(w->grab().save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/out-of-gpu-memory-note.png")));
  QCOMPARE(e->model(), model.get());  // the engine's model stays where it was
  // What is shown is the CPU's decode, value for value.
  Model cpu(loaded, createBackend("cpu"));
  DecodingSession::Options o;
  o.keep_qkv = true;
  DecodingSession want(cpu, cpu.encodeSource(long_src.toStdString()), {}, o);
  want.runToEnd();
  const auto snap = e->snapshot();
  QCOMPARE(int(snap->steps.size()), want.length());
  for (int i = 0; i + 1 < want.length(); ++i)
    QCOMPARE(snap->steps[size_t(i)].chosen_id, want.targetIds()[size_t(i) + 1]);
  const Trace& got = *snap->trace;
  QCOMPARE(got.blocks.size(), want.trace().blocks.size());
  for (size_t b = 0; b < got.blocks.size(); ++b)
    QVERIFY(got.blocks[b].denseProbs() == want.trace().blocks[b].denseProbs());
  QVERIFY(got.logits.dense().data == want.trace().logits.dense().data);
  // Stepping in that decode goes on with its CPU copy: no new note, no error.
  QVERIFY(e->stepBack());
  QVERIFY(idle(*w));
  QVERIFY(e->stepForward());
  QVERIFY(idle(*w));
  QCOMPARE(e->snapshot()->steps.size(), snap->steps.size());
  QCOMPARE(notices.count(), 1);
  QCOMPARE(failures.count(), 0);
  // The next run that fits runs on the engine's model again: no note.
  const uint64_t refused_before = limit->refused, in_use_before = limit->in_use;
  limit->peak = in_use_before;
  QVERIFY(e->run(short_src, {}));
  QVERIFY(idle(*w));
  QCOMPARE(notices.count(), 1);
  QCOMPARE(failures.count(), 0);
  QCOMPARE(uint64_t(limit->refused), refused_before);
  QVERIFY(limit->peak > in_use_before);  // its buffers came from the limited backend
}

// A GPU that fails for good (a lost CUDA context) in the middle of a run: the run is redone on the
// CPU, the window says the model now runs there, the backend box and the status bar say "cpu", and
// the next runs go to the CPU copy without a note. Without a GPU: the limited CPU backend with
// lose_device fails as a lost context does.
void GuiTest::lostGpuMovesTheModelToCpu() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  Engine* e = w->engine();
  const auto loaded = e->model()->loadedPtr();
  auto limit = std::make_shared<MemoryLimit>(~uint64_t(0));
  const auto model = onLimitedBackend(*w, limit);
  QVERIFY(model);
  limit->lose_device = true;
  limit->bytes = uint64_t(limit->in_use) + 1;  // the weights fit, the next pass does not
  QSignalSpy notices(e, &Engine::notice);
  QSignalSpy failures(e, &Engine::failed);
  QSignalSpy moved(e, &Engine::backendChanged);
  QVERIFY(e->run(QStringLiteral("ich mochte ein bier"), {}));
  QVERIFY(idle(*w));
  QCOMPARE(failures.count(), 0);
  QCOMPARE(notices.count(), 1);
  QCOMPARE(moved.count(), 1);
  const QString note = notices.at(0).at(0).toString();
  QVERIFY2(note.startsWith(QStringLiteral("The GPU failed (allocate: a lost device")) &&
               note.endsWith(QStringLiteral("): this run was redone on the CPU. The model now runs "
                                            "on the CPU; restart attnviz to use the GPU again.")),
           qPrintable(note));
  QVERIFY(e->model() != model.get());
  QCOMPARE(e->backendName(), QStringLiteral("cpu"));
  QVERIFY2(!e->backendDescription().contains(QStringLiteral("for a test")),
           qPrintable(e->backendDescription()));
  QCOMPARE(w->backendCombo()->currentData().toString(), QStringLiteral("cpu"));
  QCOMPARE(w->statusBackend()->text(), QStringLiteral("Backend: %1").arg(e->backendDescription()));
  // What is shown is the CPU's decode.
  Model cpu(loaded, createBackend("cpu"));
  DecodingSession::Options o;
  o.keep_qkv = true;
  DecodingSession want(cpu, cpu.encodeSource("ich mochte ein bier"), {}, o);
  want.runToEnd();
  const auto snap = e->snapshot();
  QCOMPARE(int(snap->steps.size()), want.length());
  for (size_t b = 0; b < snap->trace->blocks.size(); ++b)
    QVERIFY(snap->trace->blocks[b].denseProbs() == want.trace().blocks[b].denseProbs());
  // The next run goes to the CPU copy: no note, no error, the lost backend not asked again.
  const uint64_t refused = limit->refused;
  QVERIFY(e->run(QStringLiteral("ich mochte ein bier ein bier"), {}));
  QVERIFY(idle(*w));
  QCOMPARE(notices.count(), 1);
  QCOMPARE(failures.count(), 0);
  QCOMPARE(uint64_t(limit->refused), refused);
}

void GuiTest::exports() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  AttentionSelection sel = w->state()->selection();
  sel.head = 1;
  w->state()->setSelection(sel);
  QTemporaryDir dir;
  QString error;
  const QString png = dir.filePath(QStringLiteral("view.png"));
  const QString svg = dir.filePath(QStringLiteral("view.svg"));
  QVERIFY2(w->exportViewPng(png, &error), qPrintable(error));
  // The figure is as tight as the matrix, its labels and legend: no empty half.
  const QImage img = QImage(png).convertToFormat(QImage::Format_RGB32);
  QVERIFY(!img.isNull());
  QVERIFY(img.width() < w->attentionView()->heatmap()->width());
  int blank = 0, last_inked = 0;
  for (int x = 0; x < img.width(); ++x) {
    bool ink = false;
    for (int y = 0; y < img.height() && !ink; ++y) ink = (img.pixel(x, y) & 0xffffff) != 0xffffff;
    blank += !ink;
    if (ink) last_inked = x;
  }
  QVERIFY2(blank < img.width() / 6,
           qPrintable(QStringLiteral("%1 of %2 columns are empty").arg(blank).arg(img.width())));
  QVERIFY(img.width() - last_inked < 24);

  // SVG: vector cells (no embedded image), text labels and a title naming what and which sentence.
  QVERIFY2(w->exportViewSvg(svg, &error), qPrintable(error));
  QFile f(svg);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QByteArray text = f.readAll();
  QVERIFY(text.contains("<svg"));
  QVERIFY(!text.contains("<image"));
  QVERIFY(text.contains("mochte"));  // labels are text in the SVG
  QVERIFY(text.contains("Cross-attention"));
  QVERIFY(text.contains("head 2"));
  QVERIFY(text.contains("ich mochte ein bier"));
  // The most probable cell's colour is a filled vector shape.
  const QColor top = w->attentionView()->heatmap()->colormap().top();
  QVERIFY2(text.contains(top.name().toLatin1()), top.name().toLatin1().constData());

  // PDF, a chosen size, 2×, no title, no legend.
  FigureOptions o;
  o.format = FigureOptions::Format::Pdf;
  const QString pdf = dir.filePath(QStringLiteral("view.pdf"));
  QVERIFY2(w->exportView(pdf, o, &error), qPrintable(error));
  QFile pf(pdf);
  QVERIFY(pf.open(QIODevice::ReadOnly));
  QVERIFY(pf.read(5) == "%PDF-");
  o.format = FigureOptions::Format::Png;
  o.size = QSize(500, 400);
  o.scale = 2;
  const QString big = dir.filePath(QStringLiteral("big.png"));
  QVERIFY2(w->exportView(big, o, &error), qPrintable(error));
  const QImage b2(big);
  QVERIFY(b2.width() <= 1000 && b2.height() <= 800);
  QVERIFY(b2.width() >= 900 || b2.height() >= 720);  // it fills the chosen size in one direction
  o.title = false;
  o.legend = false;
  o.format = FigureOptions::Format::Svg;
  const QString bare = dir.filePath(QStringLiteral("bare.svg"));
  QVERIFY2(w->exportView(bare, o, &error), qPrintable(error));
  QFile bf(bare);
  QVERIFY(bf.open(QIODevice::ReadOnly));
  const QByteArray bare_text = bf.readAll();
  QVERIFY(!bare_text.contains("head 2"));
  QVERIFY(!bare_text.contains(">probability<"));
  QVERIFY(text.contains(">probability<") || text.contains("probability"));

  // Every view exports without an error.
  for (View* v : w->views()) {
    w->setCurrentView(v->name());
    QVERIFY2(w->exportViewSvg(dir.filePath(v->name() + QStringLiteral(".svg")), &error),
             qPrintable(error));
  }
  const QString npy = dir.filePath(QStringLiteral("trace"));
  QVERIFY2(w->exportTrace(npy, true, &error), qPrintable(error));
  for (const char* name : {"cross_probs.npy", "cross_scores.npy", "cross_mask.npy",
                           "enc_self_probs.npy", "dec_self_probs.npy", "logits.npy", "tokens.json"})
    QVERIFY2(QFile::exists(QDir(npy).filePath(QString::fromLatin1(name))), name);
  QFile head(QDir(npy).filePath(QStringLiteral("cross_probs.npy")));
  QVERIFY(head.open(QIODevice::ReadOnly));
  QVERIFY(head.read(6) == QByteArray("\x93NUMPY", 6));
}

// File › Export lesson as HTML: the dialog's size is the page written; the page opens on the view
// and head on screen; a scope too large is refused in the dialog (lesson_browser runs pages in
// chromium).
void GuiTest::exportsLesson() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  AttentionSelection sel = w->state()->selection();
  sel.kind = AttentionKind::DecoderSelf;
  sel.layer = 0;
  sel.head = 1;
  w->state()->setSelection(sel);
  w->setCurrentView(QStringLiteral("overview"));
  QVERIFY(w->action(QStringLiteral("exportLesson"))->isEnabled());
  auto snap = w->engine()->snapshot();
  const LessonStart start = w->lessonStart();
  const LessonText text = w->lessonText();
  QCOMPARE(start.view, std::string("overview"));
  QCOMPARE(start.kind, AttentionKind::DecoderSelf);
  QCOMPARE(start.head, 1);
  QCOMPARE(text.source_text, std::string("ich mochte ein bier"));
  LessonDialog dialog(*snap->trace, w->engine()->model()->config(), start, text);
  QVERIFY(dialog.acceptable());
  dialog.show();
  QDir().mkpath(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR));
  dialog.grab().save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/lesson-dialog.png"));
  const LessonScope scope = dialog.scope();
  QCOMPARE(int(scope.kinds.size()), 3);
  QCOMPARE(int(scope.heads.size()), snap->trace->heads());
  const uint64_t bytes =
      estimateLessonBytes(*snap->trace, w->engine()->model()->config(), scope, start, text);
  QCOMPARE(dialog.estimateText(), QStringLiteral("%1 MB").arg(double(bytes) / 1e6, 0, 'f', 2));
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("lesson.html"));
  QString error;
  QVERIFY2(w->exportLesson(path, scope, true, &error), qPrintable(error));
  QFile f(path);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QByteArray page = f.readAll();
  QCOMPARE(uint64_t(page.size()), bytes);
  QVERIFY(page.contains(R"("start":{"head":1,"kind":"dec_self","layer":0)"));
  QVERIFY(page.contains("\"view\":\"overview\""));
  QVERIFY(page.contains("What am I looking at?"));
  // Nothing kept: the dialog says so and refuses.
  for (QCheckBox* box : dialog.findChildren<QCheckBox*>()) box->setChecked(false);
  QVERIFY(!dialog.acceptable());
  QVERIFY(dialog.estimateText().startsWith(QStringLiteral("Keep at least one")));
}

void GuiTest::settingsPersist() {
  {
    MainWindow::Options o;
    o.model = kTinyModel;
    o.src = QStringLiteral("ich mochte ein bier");
    MainWindow w(o);  // use_settings: reads and writes QSettings
    w.show();
    QSignalSpy done(&w, &MainWindow::firstRunFinished);
    w.start();
    QVERIFY(done.wait(60000) || !done.isEmpty());
    w.colormapCombo()->setCurrentIndex(w.colormapCombo()->findData(QStringLiteral("magma")));
    w.resize(1111, 777);
    w.close();
  }
  QSettings s;
  QCOMPARE(s.value(QStringLiteral("colormap")).toString(), QStringLiteral("magma"));
  QCOMPARE(s.value(QStringLiteral("model")).toString(), kTinyModel);
  {
    MainWindow w;  // no options: the last model and colormap come back
    QCOMPARE(w.state()->colormap().name(), QStringLiteral("magma"));
    // The size comes back, within the screen, down to the window's minimum.
    w.show();
    QTest::qWait(20);
    const QSize room = QGuiApplication::primaryScreen()->availableGeometry().size();
    QCOMPARE(w.size(), QSize(1111, 777).boundedTo(room).expandedTo(w.minimumSizeHint()));
    QSignalSpy done(&w, &MainWindow::firstRunFinished);
    w.start();
    QVERIFY(done.wait(60000) || !done.isEmpty());
    QCOMPARE(w.engine()->modelSource(), kTinyModel);
  }
  QSettings().clear();
}

// ---- as a student and a teacher use it --------------------------------------------------------

// The explanation, the window title and the status bar say which masks are off.
void GuiTest::explanationsFollowTheMasks() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  MasksView* m = w->masksView();
  ExplanationPanel* e = w->attentionView()->explanation();
  w->state()->setKind(AttentionKind::DecoderSelf);
  w->attentionView()->refreshNow();
  QVERIFY2(e->html().contains(QStringLiteral("masked by the look-ahead mask")),
           qPrintable(e->html()));
  QVERIFY(!w->statusMasks()->isVisible());
  QVERIFY(!w->windowTitle().contains(QStringLiteral("off")));
  m->subsequentSwitch()->click();
  QVERIFY(idle(*w));
  QVERIFY(!m->subsequentSwitch()->isChecked());
  w->attentionView()->refreshNow();
  QVERIFY2(e->html().contains(QStringLiteral("look-ahead mask is off")), qPrintable(e->html()));
  QVERIFY(!e->html().contains(QStringLiteral("masked by the look-ahead mask")));
  QVERIFY2(w->windowTitle().contains(QStringLiteral("look-ahead mask off")),
           qPrintable(w->windowTitle()));
  QVERIFY(w->statusMasks()->isVisible());
  QVERIFY(w->statusMasks()->text().contains(QStringLiteral("look-ahead")));
  // Cross-attention: "padding is masked" only while the source padding mask is on.
  w->state()->setKind(AttentionKind::Cross);
  w->attentionView()->refreshNow();
  QVERIFY(!e->html().contains(QStringLiteral("padding mask is off")));
  m->srcPaddingSwitch()->click();
  QVERIFY(idle(*w));
  w->attentionView()->refreshNow();
  QVERIFY2(e->html().contains(QStringLiteral("source padding mask is off")), qPrintable(e->html()));
  QVERIFY(!e->html().contains(QStringLiteral("padding keys are masked")));
  QVERIFY(w->windowTitle().contains(QStringLiteral("source padding")));
  QVERIFY(w->statusMasks()->text().contains(QStringLiteral("source padding")));
  // A figure of it says so too.
  QVERIFY(w->attentionView()->figureTitle().join(' ').contains(QStringLiteral("masks off")));
  m->subsequentSwitch()->click();
  QVERIFY(idle(*w));
  m->srcPaddingSwitch()->click();
  QVERIFY(idle(*w));
  QVERIFY(!w->statusMasks()->isVisible());
  QVERIFY(!w->windowTitle().contains(QStringLiteral("off")));
}

// After each action the keyboard belongs to the view: 1/2/3, M, [ and ] act, nothing is typed.
void GuiTest::keysAreNotTypedIntoTextFields() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  activate(*w);
  QLineEdit* src = w->sourceEdit();
  MasksView* m = w->masksView();
  const QString batch_text = m->batchEdit()->toPlainText();
  // After an action: the focus is outside the text fields, and the single keys work.
  auto keysAct = [&](const char* after) {
    QVERIFY(idle(*w));
    QWidget* f = QApplication::focusWidget();
    QVERIFY2(f && !typesText(f), qPrintable(QStringLiteral("%1: focus in %2")
                                                .arg(QLatin1String(after))
                                                .arg(f ? f->metaObject()->className() : "none")));
    const QString text = src->text();
    const int head = w->state()->selection().head;
    QTest::keyClick(f, Qt::Key_BracketRight);
    QVERIFY2(w->state()->selection().head != head || head == w->state()->headCount() - 1, after);
    QTest::keyClick(f, Qt::Key_M);
    QTest::keyClick(f, Qt::Key_1);
    QCOMPARE(w->state()->selection().kind, AttentionKind::EncoderSelf);
    QTest::keyClick(f, Qt::Key_3);
    QCOMPARE(w->state()->selection().kind, AttentionKind::Cross);
    QCOMPARE(src->text(), text);
    QCOMPARE(m->batchEdit()->toPlainText(), batch_text);
  };
  // Ctrl+Enter in the source field.
  src->setFocus();
  src->setText(QStringLiteral("ein bier"));
  QTest::keyClick(src, Qt::Key_Return, Qt::ControlModifier);
  keysAct("Ctrl+Enter");
  // Enter in the source field.
  src->setFocus();
  QTest::keyClick(src, Qt::Key_Return);
  keysAct("Enter");
  // A mask switch (it is disabled while the model reruns: the focus must come back to it).
  w->setCurrentView(QStringLiteral("masks"));
  m->subsequentSwitch()->setFocus();
  QTest::keyClick(m->subsequentSwitch(), Qt::Key_Space);
  keysAct("mask switch off");
  QVERIFY(!m->subsequentSwitch()->isChecked());
  QTest::mouseClick(m->subsequentSwitch(), Qt::LeftButton, {}, QPoint(6, 6));
  keysAct("mask switch on");
  QVERIFY(m->subsequentSwitch()->isChecked());
  // An example from the Examples button.
  src->setFocus();
  if (w->examplesMenu()->actions().first()->isEnabled()) {
    w->examplesMenu()->actions().first()->trigger();
    keysAct("example");
  }
  // The Run button, Esc in a text field.
  QTest::mouseClick(w->runButton(), Qt::LeftButton);
  keysAct("Run button");
  src->setFocus();
  QTest::keyClick(src, Qt::Key_Escape);
  keysAct("Esc");
  // Clicking into a view takes the keys back from a text field.
  src->setFocus();
  w->setCurrentView(QStringLiteral("attention"));
  HeatmapWidget* hm = w->attentionView()->heatmap();
  QTest::mouseClick(hm, Qt::LeftButton, {}, hm->cellRect(0, 0).center().toPoint());
  keysAct("click on the heatmap");
}

// Words a model reads as its unknown token are named.
void GuiTest::unknownWordsAreNamed() {
  const QString reverse = bundledPath("reverse");
  if (reverse.isEmpty()) QSKIP("the bundled reverse model (which has an <unk> token) is missing");
  auto w = openWindow(reverse, QStringLiteral("a 3 zz"));
  QVERIFY(w->engine()->snapshot());       // it runs…
  QVERIFY(w->messageBar()->isVisible());  // …and says what it did with "zz"
  QCOMPARE(w->messageBar()->level(), MessageBar::Level::Warning);
  QVERIFY2(w->messageBar()->text().contains(QStringLiteral("“zz”")),
           qPrintable(w->messageBar()->text()));
  QVERIFY(w->messageBar()->text().contains(QStringLiteral("<unk>")));
  QVERIFY(w->messageBar()->title().contains(QStringLiteral("source")));
  // A sentence of known words takes the warning away.
  w->sourceEdit()->setText(QStringLiteral("a 3 b"));
  QTest::mouseClick(w->runButton(), Qt::LeftButton);
  QVERIFY(idle(*w));
  QVERIFY(!w->messageBar()->isVisible());
  // In a batch, the sentence is named.
  QSignalSpy spy(w->engine(), &Engine::unknownWords);
  w->engine()->runBatch({QStringLiteral("a b"), QStringLiteral("c qq qq d")});
  QVERIFY(idle(*w));
  QCOMPARE(spy.size(), 1);
  QCOMPARE(spy.first().at(0).toString(), QStringLiteral("sentence 2"));
  QCOMPARE(spy.first().at(1).toStringList(), QStringList{QStringLiteral("qq")});
  // A model with a tokenizer splits a word its vocabulary lacks into pieces it has: no word is
  // unknown ("walk" is ▁w·a·l·k in T5's spiece.model), as the CLI says too.
  auto t5 = openWindow(QStringLiteral(ATTNVIZ_TEST_DATA "/hf/t5"),
                       QStringLiteral("we walk to the old station every morning ."));
  QVERIFY(t5->engine()->snapshot());
  QVERIFY2(!t5->messageBar()->isVisible() ||
               !t5->messageBar()->title().contains(QStringLiteral("Unknown words")),
           qPrintable(t5->messageBar()->text()));
}

// The top-k bars: every label drawn (also with the message bar shown), the axis ends at 1,
// and a log scale shows the alternatives of a confident model.
void GuiTest::probabilityBars() {
  auto w = openWindow(screenshotModel(), QString(), QStringLiteral("decoding"));
  w->resize(1366, 768);
  w->messageBar()->showMessage(MessageBar::Level::Warning, QStringLiteral("A message"),
                               QStringLiteral("that takes room\nfrom the views\nfor a while"));
  QCoreApplication::processEvents();
  DecodingView* v = w->decodingView();
  v->refreshNow();
  v->selectStep(1);
  BarChart* bars = v->barChart();
  QVERIFY(bars->count() >= 5);
  QVERIFY2(bars->allLabelsDrawn(),
           qPrintable(QStringLiteral("bars %1 px high").arg(bars->height())));
  QCOMPARE(bars->axisMax(), 1.0);
  QCOMPARE(bars->axisMin(), 0.0);
  const StepInfo& step = w->engine()->snapshot()->steps[1];
  QVERIFY(bars->labelText(0).startsWith(step.topk_tokens.first()));
  // Linear: the second token's bar is as long as its probability says.
  const double full = bars->barRect(0).width() / std::max(1e-6, double(step.topk[0].second));
  QVERIFY(std::abs(bars->barRect(1).width() - std::max(1.0, full * step.topk[1].second)) < 2);
  v->logScaleBox()->setChecked(true);
  QVERIFY(bars->logScale());
  QVERIFY(bars->axisMin() <= step.topk.back().second);
  // Every alternative is a visible bar now.
  for (int i = 0; i < bars->count(); ++i) QVERIFY(bars->barRect(i).width() >= 3);
  QVERIFY(bars->barRect(0).width() > bars->barRect(bars->count() - 1).width());
}

// At 1366×768: the Masks view's matrices have room (all labels), the batch box shows five
// lines, and the Decoding view keeps its table and readable attention rows with a long source.
void GuiTest::roomyAtTheDefaultSize() {
  auto w =
      openWindow(kTinyModel, QStringLiteral("ich mochte ein bier cola"), QStringLiteral("masks"));
  w->resize(1366, 768);
  w->state()->setKind(AttentionKind::DecoderSelf);
  QCoreApplication::processEvents();
  MasksView* m = w->masksView();
  m->refreshNow();
  for (HeatmapWidget* hm : {m->paddingMap(), m->subsequentMap(), m->unionMap(), m->scoresMap(),
                            m->maskedScoresMap(), m->probsMap()}) {
    QVERIFY2(hm->height() >= 150, qPrintable(QString::number(hm->height())));
    QVERIFY(hm->allRowLabelsDrawn());
    QVERIFY(hm->allColLabelsDrawn());
  }
  QVERIFY(m->batchEdit()->height() >= 5 * m->batchEdit()->fontMetrics().lineSpacing());
  // A long source: the steps table keeps its rows, the attention rows keep their height.
  QStringList words;
  for (int i = 0; i < 12; ++i) words << QStringLiteral("ich mochte ein bier cola");
  w->sourceEdit()->setText(words.join(' '));
  w->setCurrentView(QStringLiteral("decoding"));
  QTest::mouseClick(w->runButton(), Qt::LeftButton);
  QVERIFY(idle(*w));
  DecodingView* d = w->decodingView();
  d->refreshNow();
  QCoreApplication::processEvents();
  QVERIFY(d->stepsTable()->viewport()->height() >=
          6 * d->stepsTable()->verticalHeader()->defaultSectionSize());
  const HeatmapWidget* rows = d->rowsMap();
  QCOMPARE(rows->data().cols, 60);
  QVERIFY2(rows->cellRect(0, 0).height() >= 12,
           qPrintable(QString::number(rows->cellRect(0, 0).height())));
}

// Another model: the batch box, the typed sentence and the chooser follow it.
void GuiTest::noStaleStateAfterAnotherModel() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  QTemporaryDir dir;
  const QString copy = dir.filePath(QStringLiteral("same-vocabulary.safetensors"));
  QVERIFY(QFile::copy(kTinyModel, copy));
  // A typed sentence survives a model with the same vocabulary.
  w->sourceEdit()->setText(QStringLiteral("ein bier"));
  QVERIFY(w->engine()->loadModel(copy));
  QVERIFY(idle(*w));
  QCOMPARE(w->engine()->modelSource(), copy);
  QCOMPARE(w->sourceEdit()->text(), QStringLiteral("ein bier"));
  // Opened files stay in the chooser.
  QVERIFY(w->modelCombo()->findData(kTinyModel) >= 0);
  QVERIFY(w->modelCombo()->findData(copy) >= 0);
  // A model with another vocabulary: its own example, its own batch.
  const QString gpt = QStringLiteral(ATTNVIZ_TEST_DATA "/gpt003.safetensors");
  w->masksView()->setBatch({QStringLiteral("ich mochte ein bier"), QStringLiteral("ein bier")});
  QVERIFY(w->engine()->loadModel(gpt));
  QVERIFY(idle(*w));
  const Vocabulary& v = w->engine()->model()->tgtVocab();
  for (const QString& line : w->masksView()->batchLines())
    QVERIFY2(v.unknownWords(line.toStdString()).empty(), qPrintable(line));
  QVERIFY(v.unknownWords(w->sourceEdit()->text().toStdString()).empty());
  QVERIFY(w->modelCombo()->findData(copy) >= 0);
  QVERIFY(w->modelCombo()->findData(gpt) >= 0);
  QVERIFY(w->recentModels().contains(kTinyModel));
}

// The small things.
void GuiTest::smallThings() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  w->resize(1366, 768);
  QCoreApplication::processEvents();
  // The attention chooser shows its longest entry whole.
  QComboBox* kind = w->kindCombo();
  int longest = 0;
  for (int i = 0; i < kind->count(); ++i)
    longest = std::max(longest, kind->fontMetrics().horizontalAdvance(kind->itemText(i)));
  QVERIFY(kind->width() > longest + 10);
  // Tooltips count rows from 1 and name the token.
  HeatmapWidget* hm = w->attentionView()->heatmap();
  const QString tip = hm->tooltipText(0, 1);
  QVERIFY2(tip.contains(QStringLiteral("Query “S” · row 1 of")), qPrintable(tip));
  QVERIFY(tip.contains(QStringLiteral("column 2 of")));
  // A matrix without a mask does not speak of masks.
  w->setCurrentView(QStringLiteral("positional"));
  QTRY_VERIFY(!w->positionalView()->computing());
  QVERIFY(
      !w->positionalView()->similarityMap()->tooltipText(1, 2).contains(QStringLiteral("Masked")));
  // A forced token says so instead of a probability of 0.000.
  w->prefixEdit()->setText(QStringLiteral("coke"));
  QTest::mouseClick(w->runButton(), Qt::LeftButton);
  QVERIFY(idle(*w));
  DecodingStepsModel* steps = w->decodingView()->stepsModel();
  w->decodingView()->refreshNow();
  QCOMPARE(steps->index(0, DecodingStepsModel::Probability).data().toString(),
           QStringLiteral("forced"));
  QVERIFY(steps->index(0, DecodingStepsModel::Probability)
              .data(Qt::ToolTipRole)
              .toString()
              .contains(QStringLiteral("prefix")));
  // "Examples" is a button, not also a menu.
  for (QAction* a : w->menuBar()->actions())
    QVERIFY(!a->text().contains(QStringLiteral("Examples")));
  // In batch mode the hint above the views is whole or absent, never cut.
  w->masksView()->setBatch(
      {QStringLiteral("ich mochte ein bier cola"), QStringLiteral("ein bier")});
  w->masksView()->batchButton()->click();
  QVERIFY(idle(*w));
  QVERIFY(w->batchCombo()->isVisible());
  auto* hint = w->findChild<FitLabel*>();
  QVERIFY(hint);
  QVERIFY(hint->fullyShown() ||
          hint->fontMetrics().horizontalAdvance(hint->text()) > hint->contentsRect().width());
}

// The translation as sentences: hovering a word tints the other side by cross-attention.
void GuiTest::translationReadsAndHighlights() {
  auto w =
      openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"), QStringLiteral("decoding"));
  TranslationPanel* t = w->decodingView()->translation();
  auto snap = w->engine()->snapshot();
  const Trace& tr = *snap->trace;
  QCOMPARE(t->sourceText()->tokens(), toQ(tr.src_tokens[0]));
  QStringList out;
  for (const StepInfo& s : snap->steps)
    if (s.chosen_id >= 0) out << s.chosen;
  QCOMPARE(t->outputText()->tokens(), out);
  // Output word k was written by query row k: its source tint is that row (mean of the heads of
  // the last layer, the selection at start), scaled to its maximum.
  const AttentionBlock& cross =
      *tr.block(AttentionKind::Cross, tr.layers(AttentionKind::Cross) - 1);
  const int k = 1;
  t->hoverOutput(k);
  QCOMPARE(t->outputText()->current(), k);
  std::vector<float> row(size_t(cross.k_len), 0.0f);
  for (int h = 0; h < cross.heads; ++h)
    for (int j = 0; j < cross.k_len; ++j) row[size_t(j)] += cross.prob(0, h, k, j) / cross.heads;
  const float mx = *std::max_element(row.begin(), row.end());
  const std::vector<float>& tint = t->sourceText()->weights();
  QCOMPARE(int(tint.size()), cross.k_len);
  for (int j = 0; j < cross.k_len; ++j)
    QVERIFY(std::abs(tint[size_t(j)] - row[size_t(j)] / mx) < 1e-5f);
  // The reverse: a source word tints the output words that looked at it.
  t->hoverSource(2);
  QCOMPARE(int(t->outputText()->weights().size()), out.size());
  QVERIFY(*std::max_element(t->outputText()->weights().begin(), t->outputText()->weights().end()) ==
          1.0f);
  // The mouse does the same.
  TokenText* o = t->outputText();
  const QPointF at = o->tokenRect(0).center();
  QMouseEvent move(QEvent::MouseMove, at, o->mapToGlobal(at), Qt::NoButton, Qt::NoButton,
                   Qt::NoModifier);
  QCoreApplication::sendEvent(o, &move);
  QCOMPARE(o->current(), 0);
  QVERIFY(!t->sourceText()->weights().empty());
}

// The decode as numbered PNG frames and one animated PNG whose frames are those images.
void GuiTest::decodingFramesAndAnimation() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  QTemporaryDir dir;
  QString error;
  FigureOptions o;
  o.size = QSize(900, 500);
  const int n = w->exportDecodingFrames(dir.path(), o, true, &error);
  QVERIFY2(n > 0, qPrintable(error));
  QCOMPARE(n, int(w->engine()->snapshot()->steps.size()));
  std::vector<QImage> frames;
  for (int i = 1; i <= n; ++i) {
    const QString f =
        QDir(dir.path()).filePath(QStringLiteral("decoding-%1.png").arg(i, 3, 10, QChar('0')));
    QVERIFY2(QFile::exists(f), qPrintable(f));
    frames.push_back(QImage(f).convertToFormat(QImage::Format_RGB888));
  }
  QVERIFY(frames.front() != frames.back());  // the frames differ: the decode moves on
  // The APNG: signature, acTL with n frames, then per frame fcTL and its image data; each frame's
  // data, wrapped as a plain PNG, decodes (Qt's own reader) to that frame's pixels.
  QFile f(QDir(dir.path()).filePath(QStringLiteral("decoding-animated.png")));
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QByteArray apng = f.readAll();
  QVERIFY(apng.startsWith(QByteArray("\x89PNG\r\n\x1a\n", 8)));
  QByteArray ihdr;
  std::vector<QByteArray> data(1);
  int num_frames = -1, fctl = 0;
  quint32 expected_seq = 0;
  for (qsizetype at = 8; at + 12 <= apng.size();) {
    const quint32 len = qFromBigEndian<quint32>(apng.constData() + at);
    const QByteArray type = apng.mid(at + 4, 4);
    const QByteArray body = apng.mid(at + 8, len);
    const quint32 crc = qFromBigEndian<quint32>(apng.constData() + at + 8 + len);
    QCOMPARE(crc, pngCrc32(apng.constData() + at + 4, 4 + len));
    if (type == "IHDR") ihdr = body;
    if (type == "acTL") num_frames = int(qFromBigEndian<quint32>(body.constData()));
    if (type == "fcTL" || type == "fdAT") {
      QCOMPARE(qFromBigEndian<quint32>(body.constData()), expected_seq++);
    }
    if (type == "fcTL" && fctl++ > 0) data.emplace_back();
    if (type == "IDAT") data.back() += body;
    if (type == "fdAT") data.back() += body.mid(4);
    at += 12 + len;
  }
  QCOMPARE(num_frames, n);
  QCOMPARE(fctl, n);
  QCOMPARE(int(data.size()), n);
  auto chunk = [](const char* type, const QByteArray& body) {
    QByteArray c;
    char buf[4];
    qToBigEndian(quint32(body.size()), buf);
    c.append(buf, 4);
    const QByteArray tb = QByteArray(type, 4) + body;
    c += tb;
    qToBigEndian(pngCrc32(tb.constData(), tb.size()), buf);
    c.append(buf, 4);
    return c;
  };
  for (int i = 0; i < n; ++i) {
    const QByteArray png = QByteArray("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) +
                           chunk("IDAT", data[size_t(i)]) + chunk("IEND", {});
    QImage img;
    QVERIFY(img.loadFromData(png, "PNG"));
    QCOMPARE(img.convertToFormat(QImage::Format_RGB888), frames[size_t(i)]);
  }
}

// Large fonts for a projector, everywhere (the heatmaps' labels too).
void GuiTest::presentationMode() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier der katze"));
  HeatmapWidget* map = w->attentionView()->heatmap();
  const double before = map->font().pointSizeF();
  const double cell = map->cellRect(0, 0).width();
  QVERIFY(w->attentionView()->explanation()->expanded());
  w->action(QStringLiteral("presentation"))->trigger();
  QVERIFY(w->presentationMode());
  QVERIFY(map->font().pointSizeF() > 1.3 * before);
  QVERIFY(w->decodingView()->barChart()->font().pointSizeF() > 1.3 * before);
  QVERIFY(w->attentionView()->explanation()->label()->font().pointSizeF() > 1.3 * before);
  QVERIFY(!w->structureView()->isVisible());
  // The room goes to the heatmap: the explanations fold, the cells do not shrink.
  QVERIFY(!w->attentionView()->explanation()->expanded());
  QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
  QCoreApplication::processEvents();
  QVERIFY2(map->cellRect(0, 0).width() >= cell,
           qPrintable(QStringLiteral("cells of %1 px, %2 px before")
                          .arg(map->cellRect(0, 0).width())
                          .arg(cell)));
  w->action(QStringLiteral("presentation"))->trigger();
  QCOMPARE(map->font().pointSizeF(), before);
  QVERIFY(w->structureView()->isVisible());
  QVERIFY(w->attentionView()->explanation()->expanded());
}

// The help lists what the action table holds: every key, every view.
void GuiTest::keysHelpFromTheActionTable() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  const QString help = w->keysHelpHtml();
  for (QAction* a : w->findChildren<QAction*>()) {
    if (a->shortcuts().isEmpty()) continue;
    QVERIFY2(help.contains(a->shortcut().toString(QKeySequence::NativeText).toHtmlEscaped()),
             qPrintable(a->objectName()));
  }
  for (View* v : w->views()) {
    QVERIFY(help.contains(v->title()));
    QVERIFY(w->action(QStringLiteral("view-") + v->name()));
  }
  // The keys' column holds keys only: a view without one says where to find it beside its name.
  QVERIFY2(!help.contains(QStringLiteral("<td>&nbsp;&nbsp;its tab")), qPrintable(help));
  QVERIFY(help.contains(QStringLiteral("no key: its tab or the View menu")));
  QVERIFY(w->action(QStringLiteral("exportPdf")));
  QVERIFY(w->action(QStringLiteral("exportFrames")));
}

// Encoder-only and decoder-only models: fields, buttons, tab and table names, status bar, and
// every view shows what the model has.
void GuiTest::architectures_data() {
  QTest::addColumn<QString>("file");
  QTest::addColumn<QString>("input");
  QTest::addColumn<QString>("label");
  QTest::addColumn<QString>("tab");
  QTest::newRow("bert003") << "bert003"
                           << "[CLS] hello how [MASK] you [SEP]"
                           << "Input:"
                           << "Outputs";
  QTest::newRow("classifier003") << "classifier003"
                                 << "this movie is great"
                                 << "Input:"
                                 << "Outputs";
  QTest::newRow("encoder001") << "encoder001"
                              << "time flies like an arrow"
                              << "Input:"
                              << "Outputs";
  QTest::newRow("gpt003") << "gpt003"
                          << "the cat"
                          << "Prompt:"
                          << "Decoding";
}

void GuiTest::architectures() {
  QFETCH(QString, file);
  QFETCH(QString, input);
  QFETCH(QString, label);
  QFETCH(QString, tab);
  const QString path =
      QStringLiteral(ATTNVIZ_TEST_DATA "/") + file + QStringLiteral(".safetensors");
  auto w = openWindow(path, input, QStringLiteral("decoding"));
  QVERIFY2(w->engine()->snapshot() && w->engine()->snapshot()->trace,
           qPrintable(w->messageBar()->text()));
  const ModelConfig& c = w->engine()->model()->config();
  QCOMPARE(w->sourceLabel()->text(), label);
  QVERIFY(!w->prefixBox()->isVisible());
  QCOMPARE(w->tabs()->tabText(w->tabs()->indexOf(w->decodingView())), tab);
  QCOMPARE(w->decodingView()->title(), tab);
  QCOMPARE(w->action(QStringLiteral("view-decoding"))->text(), tab);
  QCOMPARE(w->stepForwardButton()->isVisible(), c.hasDecoder());
  QCOMPARE(w->decodingView()->stepForwardButton()->isVisible(), c.hasDecoder());
  QVERIFY2(!w->statusLengths()->text().contains(QStringLiteral("target")),
           qPrintable(w->statusLengths()->text()));
  QVERIFY(!w->statusLengths()->text().contains(QStringLiteral("source")));
  // The kinds offered are the kinds the model has.
  QCOMPARE(w->kindCombo()->count(), int(modelKinds(c).size()));
  DecodingView* d = w->decodingView();
  d->refreshNow();
  const QString header =
      d->stepsModel()->headerData(DecodingStepsModel::Chosen, Qt::Horizontal).toString();
  if (!c.hasDecoder()) {
    QCOMPARE(header, QStringLiteral("Prediction"));
    QVERIFY(!d->useTokenButton()->isVisible());
    QVERIFY(w->statusLengths()->text().contains(QStringLiteral("input")));
    QCOMPARE(d->classChart()->isVisible(), c.classHead() != ClassHead::None);
    if (c.classHead() != ClassHead::None) {
      QCOMPARE(d->classChart()->count(), c.n_classes);
    }
    QCOMPARE(d->barChart()->isVisible(), c.tokenHead() != TokenHead::None);
  } else {
    QCOMPARE(header, QStringLiteral("Next token"));
    // The prompt is the decoder's start: what follows continues it.
    const auto snap = w->engine()->snapshot();
    QCOMPARE(snap->prefix_positions, int(w->engine()->model()->encodeTarget("the cat").size()));
    QVERIFY(d->translation()->outputText()->tokens().join(' ').contains(QStringLiteral("the cat")));
    QVERIFY(!d->translation()->sourceText()->isVisible());
    // Worded for a decoder-only model: a prompt, and why the decode ended.
    QVERIFY2(!w->sourceEdit()->placeholderText().contains(QStringLiteral("source")),
             qPrintable(w->sourceEdit()->placeholderText()));
    const QString status = d->statusLabel()->text();
    QVERIFY2(snap->stop == DecodeStop::EndToken
                 ? status == QStringLiteral("Finished: the end token was chosen.")
             : snap->stop == DecodeStop::NewTokens
                 ? status == QStringLiteral("Stopped after %1 new tokens, the limit of one run.")
                                 .arg(snap->max_new_tokens)
                 : status.startsWith(QStringLiteral("Stopped: the text fills the model's")),
             qPrintable(status));
  }
  // Every view draws without complaint, and its explanation speaks of this model.
  for (View* v : w->views()) {
    w->setCurrentView(v->name());
    v->refreshNow();
    QVERIFY(!v->explanation()->html().isEmpty());
  }
  QVERIFY(
      !w->attentionView()->explanation()->html().contains(QStringLiteral("target tokens fed")) ||
      c.hasCross());
}

// Renders every view to build/screenshots: the default model at 1366×768 and 1920×1080, with and
// without the explanations, then one model of each other architecture (to look at by eye; the
// README's picture is one of them).
// ---- a second look: SVG as XML, masks named, positions from 1, frames ------------------------

namespace {

// The text of an SVG file's <title> and <text> elements, read by an XML parser; empty with *error
// set when the file is not well-formed XML.
QString svgText(const QString& path, QString* error) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    *error = QStringLiteral("cannot open ") + path;
    return {};
  }
  QXmlStreamReader xml(&f);
  QString text;
  int inside = 0;
  while (!xml.atEnd()) {
    xml.readNext();
    if (xml.isStartElement() && (xml.name() == u"text" || xml.name() == u"title")) ++inside;
    if (xml.isEndElement() && (xml.name() == u"text" || xml.name() == u"title")) {
      --inside;
      text += QLatin1Char('\n');
    }
    if (xml.isCharacters() && inside > 0) text += xml.text();
  }
  if (xml.hasError()) {
    *error =
        QStringLiteral("%1: line %2: %3").arg(path).arg(xml.lineNumber()).arg(xml.errorString());
    return {};
  }
  return text;
}

// Saves what a test looked at into build/screenshots (to look at, not compared).
void saveShot(const QImage& image, const QString& name) {
  const QString dir = QStringLiteral(ATTNVIZ_SCREENSHOT_DIR);
  QDir().mkpath(dir);
  QVERIFY2(image.save(QDir(dir).filePath(name)), qPrintable(name));
}

// A small encoder-decoder whose tokens hold what XML must escape.
QString writeXmlHostileModel(const QString& dir) {
  nlohmann::json c = test::smallConfig(6, 6);
  c["src_vocab"] = {"P", "a<b", "x&y", "<tag>", "q\"r", "it's"};
  c["tgt_vocab"] = {"P", "<bos>", "<eos>", "&amp;", "c>d", "t5"};
  const QString path = QDir(dir).filePath(QStringLiteral("xml-hostile.safetensors"));
  test::writeRandomModel(path.toStdString(), c, 7);
  return path;
}

}  // namespace

// 1. Every view's SVG export is XML, with the title on and tokens holding <, >, & and quotes.
void GuiTest::svgExportsAreXml() {
  QTemporaryDir dir;
  const QString source = QStringLiteral("a<b x&y <tag> q\"r it's");
  auto w = openWindow(writeXmlHostileModel(dir.path()), source);
  QVERIFY(w->engine()->snapshot() && w->engine()->snapshot()->trace);
  for (View* v : w->views()) {
    w->setCurrentView(v->name());
    v->refreshNow();
    if (v == w->positionalView()) QTRY_VERIFY(!w->positionalView()->computing());
    for (bool title : {true, false}) {
      FigureOptions o;
      o.format = FigureOptions::Format::Svg;
      o.title = title;
      const QString path = dir.filePath(
          v->name() + (title ? QStringLiteral("-title.svg") : QStringLiteral("-plain.svg")));
      QString error;
      QVERIFY2(w->exportView(path, o, &error), qPrintable(error));
      const QString text = svgText(path, &error);
      QVERIFY2(error.isEmpty(), qPrintable(error));
      // The parsed title holds the tokens as they are.
      if (title && v->figureTitle().size() > 1)
        QVERIFY2(text.contains(QStringLiteral("a<b x&y <tag> q\"r it's")), qPrintable(text));
    }
  }
}

// 2. The Masks view's explanation names every mask that is off, the padding masks too.
void GuiTest::masksExplanationNamesEveryMaskOff() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"), QStringLiteral("masks"));
  const ModelConfig& c = w->engine()->model()->config();
  QVERIFY(c.src_padding_mask && c.tgt_padding_mask);
  ExplanationPanel* e = w->masksView()->explanation();
  auto setMasks = [&](bool src, bool tgt, bool subsequent) {
    MaskOptions m;
    m.src_padding = src;
    m.tgt_padding = tgt;
    m.subsequent = subsequent;
    QVERIFY(w->engine()->setMasks(m));
    QVERIFY(idle(*w));
    w->masksView()->refreshNow();
  };
  QVERIFY(!e->html().contains(QStringLiteral("is off")));
  setMasks(false, true, true);
  saveShot(w->grab().toImage(), QStringLiteral("visit-masks-source-padding-off.png"));
  QVERIFY2(e->html().contains(QStringLiteral("The source padding mask is off")),
           qPrintable(e->html()));
  QVERIFY2(e->html().contains(QStringLiteral("run a batch")), qPrintable(e->html()));
  QVERIFY(!e->html().contains(QStringLiteral("look-ahead mask is off")));
  setMasks(true, false, true);
  QVERIFY2(e->html().contains(QStringLiteral("The target padding mask is off")),
           qPrintable(e->html()));
  QVERIFY(!e->html().contains(QStringLiteral("source padding mask is off")));
  setMasks(false, false, false);
  for (const char* name : {"look-ahead", "source padding", "target padding"})
    QVERIFY2(e->html().contains(QStringLiteral("The %1 mask is off").arg(QLatin1String(name))),
             qPrintable(e->html()));
}

// 3. The Attention view's heading shows all it says, the masks that are off at its end included.
void GuiTest::attentionHeadingShowsTheMasks() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  w->resize(1100, 800);
  w->masksView()->setBatch({QStringLiteral("ich mochte ein bier"), QStringLiteral("ein bier"),
                            QStringLiteral("ich mochte cola"), QStringLiteral("bier")});
  w->masksView()->batchButton()->click();
  QVERIFY(idle(*w));
  MaskOptions m;
  m.subsequent = false;
  m.src_padding = false;
  QVERIFY(w->engine()->setMasks(m));
  QVERIFY(idle(*w));
  w->state()->setBatchIndex(1);
  w->setCurrentView(QStringLiteral("attention"));
  w->attentionView()->refreshNow();
  for (int k = 0; k < 3; ++k) {
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    QTest::qWait(10);
  }
  saveShot(w->grab().toImage(), QStringLiteral("visit-attention-heading.png"));
  QLabel* caption = w->attentionView()->captionLabel();
  const QString text = caption->text();
  QVERIFY2(text.contains(QStringLiteral("sentence\u00a02\u00a0of\u00a04")) &&
               text.endsWith(QStringLiteral("masks off: look-ahead, source padding")),
           qPrintable(text));
  const int width = caption->contentsRect().width();
  const bool whole = caption->wordWrap()
                         ? caption->heightForWidth(caption->width()) <= caption->height()
                         : caption->fontMetrics().horizontalAdvance(text) <= width;
  QVERIFY2(whole, qPrintable(QStringLiteral("\"%1\" is cut at %2 × %3 pixels")
                                 .arg(text)
                                 .arg(caption->width())
                                 .arg(caption->height())));
}

// 4. Inside a cell and the Attention view's hover count the same cell's positions from 1.
void GuiTest::positionsCountFromOne() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"), QStringLiteral("cell"));
  AttentionSelection s = w->state()->selection();
  s.head = 1;
  w->state()->setSelection(s);
  auto* cell = qobject_cast<CellView*>(w->view(QStringLiteral("cell")));
  QVERIFY(cell);
  cell->selectCell(2, 3);
  saveShot(w->grab().toImage(), QStringLiteral("visit-cell-positions.png"));
  const QString headline = cell->breakdownWidget()->headline();
  QVERIFY2(headline.startsWith(QStringLiteral("Query 3 ")) && headline.contains(u"× key 4 "),
           qPrintable(headline));
  w->setCurrentView(QStringLiteral("attention"));
  w->attentionView()->refreshNow();
  const QString tip = w->attentionView()->heatmap()->tooltipText(2, 3);
  QVERIFY2(tip.contains(u"row 3 of") && tip.contains(u"column 4 of"), qPrintable(tip));
}

// A cell clicked in the Attention view is the one Inside a cell takes apart, and a click there
// is the Attention view's cell too: one selected cell for every view, dropped with the model.
void GuiTest::clickedCellIsEveryViewsCell() {
  auto w =
      openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"), QStringLiteral("attention"));
  HeatmapWidget* map = w->attentionView()->heatmap();
  QTest::mouseClick(map, Qt::LeftButton, {}, map->cellRect(2, 1).center().toPoint());
  QCOMPARE(w->state()->selection().query, 2);
  QCOMPARE(w->state()->selection().key, 1);
  w->setCurrentView(QStringLiteral("cell"));
  auto* cell = qobject_cast<CellView*>(w->view(QStringLiteral("cell")));
  QVERIFY(cell);
  cell->refreshNow();
  QCOMPARE(cell->cellRow(), 2);
  QCOMPARE(cell->cellColumn(), 1);
  QVERIFY2(cell->breakdownWidget()->headline().startsWith(QStringLiteral("Query 3 ")),
           qPrintable(cell->breakdownWidget()->headline()));
  cell->selectCell(0, 2);
  QCOMPARE(w->state()->selection().query, 0);
  QCOMPARE(w->state()->selection().key, 2);
  QCOMPARE(cell->cellRow(), 0);
  QCOMPARE(cell->cellColumn(), 2);
}

// Two training runs' out/ckpt.pt are told apart in the Model box by their folders.
void GuiTest::modelBoxTellsCheckpointsApart() {
  QCOMPARE(distinctPathLabels({QStringLiteral("/data/s/run-a/out/ckpt.pt"),
                               QStringLiteral("/data/s/run-b/out/ckpt.pt"),
                               QStringLiteral("/data/s/model.pt")}),
           (QStringList{QStringLiteral("run-a/out/ckpt.pt"), QStringLiteral("run-b/out/ckpt.pt"),
                        QStringLiteral("model.pt")}));
  QCOMPARE(distinctPathLabels({QStringLiteral("/a/ckpt.pt"), QStringLiteral("/b/a/ckpt.pt")}),
           (QStringList{QStringLiteral("a/ckpt.pt"), QStringLiteral("b/a/ckpt.pt")}));
  QCOMPARE(distinctPathLabels({QStringLiteral("/x/one.safetensors")}),
           QStringList{QStringLiteral("one.safetensors")});
}

// Sixty tokens: the window's heatmap labels one token in two and its axis titles say so; the
// figure exported at its default size labels every token (the SVG read by an XML parser).
void GuiTest::thinnedLabelsSaidAndExportedWhole() {
  QStringList words;
  for (int k = 0; k < 12; ++k) words << QStringLiteral("the dog sees a cat");
  auto w = openWindow(QStringLiteral("reorder"), words.join(u' '), QStringLiteral("attention"));
  w->resize(1100, 700);
  AttentionSelection s = w->state()->selection();
  s.kind = AttentionKind::EncoderSelf;
  s.layer = 0;
  s.head = 0;
  w->state()->setSelection(s);
  QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
  QCoreApplication::processEvents();
  w->attentionView()->refreshNow();
  HeatmapWidget* map = w->attentionView()->heatmap();
  QCOMPARE(map->data().cols, 60);
  QVERIFY2(!map->allRowLabelsDrawn(), "60 rows fit a label each: no thinning to say");
  QString row;
  map->rowTitleRect(&row);
  QVERIFY2(row.contains(QStringLiteral("one label in ")), qPrintable(row));
  saveShot(w->grab().toImage(), QStringLiteral("thinned-labels.png"));
  QTemporaryDir dir;
  FigureOptions o;
  o.format = FigureOptions::Format::Svg;
  const QString path = dir.filePath(QStringLiteral("sixty.svg"));
  QString error;
  QVERIFY2(w->exportView(path, o, &error), qPrintable(error));
  const QString text = svgText(path, &error);
  QVERIFY2(error.isEmpty(), qPrintable(error));
  int dogs = 0;
  for (const QString& line : text.split(u'\n')) dogs += line.trimmed() == QStringLiteral("dog");
  QCOMPARE(dogs, 24);  // 12 query rows and 12 key columns
  QVERIFY(!text.contains(QStringLiteral("one label in")));
}

// A prompt longer than a decoder-only model's positions is not run cut unasked: the message bar
// offers to keep its last tokens (as nanoGPT's sample.py does), and that runs.
void GuiTest::longPromptOfferedCropped() {
  const QString gpt = QStringLiteral(ATTNVIZ_TEST_DATA "/gpt003.safetensors");
  auto w = openWindow(gpt, QStringLiteral("the cat"));
  const int positions = w->engine()->model()->maxPositions();
  QStringList words;
  while (words.size() < positions + 8)
    words << QStringLiteral("the cat sat on the mat .").split(u' ');
  const QString prompt = words.join(u' ');
  const auto before = w->engine()->snapshot();
  w->sourceEdit()->setText(prompt);
  w->action(QStringLiteral("run"))->trigger();
  QVERIFY(idle(*w));
  QCOMPARE(w->engine()->snapshot(), before);  // nothing ran
  QCOMPARE(w->messageBar()->title(), QStringLiteral("The prompt is longer than the model reads"));
  QVERIFY2(w->messageBar()->text().contains(QStringLiteral("%1 tokens long").arg(words.size())),
           qPrintable(w->messageBar()->text()));
  QPushButton* keep = w->messageBar()->actionButton();
  QVERIFY(keep && !keep->isHidden());
  keep->click();
  QVERIFY(idle(*w));
  const auto snap = w->engine()->snapshot();
  QVERIFY(snap && snap->trace && snap != before);
  const bool start = w->engine()->model()->config().bos_id >= 0;
  QCOMPARE(snap->prefix_positions, positions);
  QVERIFY(prompt.endsWith(w->sourceEdit()->text()));
  QCOMPARE(w->sourceEdit()->text().split(u' ').size(), positions - (start ? 1 : 0));
}

// 5. A frame of the decode shows the decode as it was then: no later steps, words or ending.
void GuiTest::decodingFramesKeepTheFuture() {
  auto w =
      openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"), QStringLiteral("decoding"));
  auto snap = w->engine()->snapshot();
  const int n = int(snap->steps.size());
  QVERIFY(n >= 3 && snap->finished);
  DecodingView* d = w->decodingView();
  const QString ending = d->statusLabel()->text();  // "Finished: …" or "Stopped at …"
  const QString whole = d->figureTitle().value(1);  // “source” → “the whole translation”
  d->setFrameStep(0);
  // The frame's subtitle has the words written so far: the start token and the first choice.
  const QString subtitle = d->figureTitle().value(1);
  QVERIFY2(subtitle != whole && subtitle.endsWith(QStringLiteral("“%1 %2”").arg(
                                    toQ(snap->trace->tgt_tokens[0])[0], snap->steps[0].chosen)),
           qPrintable(subtitle + QStringLiteral(" / ") + whole));
  FigureOptions frame;
  frame.size = QSize(900, 500);
  saveShot(renderFigure(d, frame), QStringLiteral("visit-decoding-frame-1.png"));
  for (int r = 0; r < n; ++r) QCOMPARE(d->stepsTable()->isRowHidden(r), r > 0);
  QCOMPARE(d->translation()->outputText()->tokens(), QStringList{snap->steps[0].chosen});
  QVERIFY2(d->statusLabel()->text().startsWith(QStringLiteral("Step 1 of %1").arg(n)),
           qPrintable(d->statusLabel()->text()));
  d->setFrameStep(1);
  QCOMPARE(d->translation()->outputText()->tokens().size(), 2);
  QVERIFY(!d->stepsTable()->isRowHidden(1) && d->stepsTable()->isRowHidden(2));
  d->setFrameStep(n - 1);  // the last frame: the decode as it ended
  QCOMPARE(d->statusLabel()->text(), ending);
  d->setFrameStep(-1);
  for (int r = 0; r < n; ++r) QVERIFY(!d->stepsTable()->isRowHidden(r));
  QCOMPARE(d->statusLabel()->text(), ending);
}

// 8. "Decode to the end" (one job a step) shows the progress bar and Cancel, as one long job.
void GuiTest::decodeToTheEndShowsProgress() {
  auto window = tutorialSizeWindow();
  QVERIFY(window);
  MainWindow& w = *window;
  std::vector<int> src;
  for (int i = 0; i < 120; ++i) src.push_back(4 + (i * 37) % 990);
  const ModelConfig& c = w.engine()->model()->config();
  QVERIFY(w.engine()->loadDecode(src, {c.bos_id}, {}, 2000));
  QVERIFY(idle(w));
  QVERIFY(w.engine()->canStepForward());
  QSignalSpy busy(w.engine(), &Engine::busyChanged);
  QTest::keyClick(w.tabs(), Qt::Key_End);
  QVERIFY(w.engine()->busy());
  QTest::qWait(700);
  QVERIFY2(w.engine()->busy(), "the decode ended before the progress bar was due");
  auto* bar = w.findChild<QProgressBar*>(QStringLiteral("statusProgress"));
  QVERIFY(bar && bar->isVisible());
  QVERIFY(bar->maximum() > 0 && bar->value() > 1);  // it moves
  QCOMPARE(busy.count(), 1);                        // one job to the listeners, however many steps
  QTest::keyClick(w.tabs(), Qt::Key_Escape);
  QVERIFY(idle(w));
  QVERIFY(!bar->isVisible());
  QCOMPARE(busy.count(), 2);
}

// 10. Presentation mode on and off gives the window its size back, and the explanations keep no
// blank band.
void GuiTest::presentationModeGivesTheSizeBack() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  // Just above the window's smallest height: the large fonts may need more (the explanations
  // fold meanwhile), and whatever the window grew to, leaving gives back the size it had.
  w->resize(1400, w->minimumSizeHint().height() + 10);
  QCoreApplication::processEvents();
  const QSize before = w->size();
  w->action(QStringLiteral("presentation"))->trigger();
  QCoreApplication::processEvents();
  w->action(QStringLiteral("presentation"))->trigger();
  QCoreApplication::processEvents();
  for (int k = 0; k < 3; ++k) {
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    QTest::qWait(10);
  }
  QCOMPARE(w->size(), before);
  saveShot(w->grab().toImage(), QStringLiteral("visit-after-presentation.png"));
  for (View* v : w->views()) {
    w->setCurrentView(v->name());
    for (int k = 0; k < 3; ++k) {
      QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
      QTest::qWait(10);
    }
    // The height the text needs, measured on a fresh label (a label never answers below its
    // own minimum height).
    QLabel* text = v->explanation()->label();
    QLabel fresh;
    fresh.setWordWrap(true);
    fresh.setTextFormat(Qt::RichText);
    fresh.setFont(text->font());
    fresh.setText(text->text());
    const int need = fresh.heightForWidth(text->width());
    QVERIFY2(text->height() <= need + 2,
             qPrintable(QStringLiteral("%1: the explanation is %2 pixels high for %3 of text")
                            .arg(v->name())
                            .arg(text->height())
                            .arg(need)));
  }
}

// 10. A saved window larger than the screen, or below its bottom, comes back on the screen.
void GuiTest::restoredWindowFitsTheScreen() {
  QSettings().clear();
  const QRect avail = QGuiApplication::primaryScreen()->availableGeometry();
  {
    MainWindow::Options o;
    o.model = kTinyModel;
    MainWindow w(o);
    w.show();
    w.move(avail.left() + 40, avail.top() + avail.height() / 2);
    w.resize(avail.width() - 100, avail.height() + 300);
    w.close();
  }
  {
    MainWindow w;
    w.show();
    QTest::qWait(20);
    const QRect frame = w.frameGeometry();
    // Within the screen, but for a width the window cannot go below (the offscreen test screen
    // is narrower than the window's minimum).
    QVERIFY(w.minimumSizeHint().height() < avail.height());
    QVERIFY2(frame.top() >= avail.top() && frame.bottom() <= avail.bottom() &&
                 frame.left() >= avail.left() &&
                 (frame.right() <= avail.right() || w.width() == w.minimumSizeHint().width()),
             qPrintable(QStringLiteral("the window (%1, %2, %3 × %4) leaves the screen (%5 × %6)")
                            .arg(frame.x())
                            .arg(frame.y())
                            .arg(frame.width())
                            .arg(frame.height())
                            .arg(avail.width())
                            .arg(avail.height())));
  }
  QSettings().clear();
}

// 11. A long figure title breaks into lines instead of being cut with "…".
void GuiTest::figureTitleWrapsInsteadOfCutting() {
  const QString sentence = QStringLiteral("ich mochte ein bier ich mochte ein bier cola ein bier");
  auto w = openWindow(kTinyModel, sentence);
  QTemporaryDir dir;
  FigureOptions o;
  o.format = FigureOptions::Format::Svg;
  o.size = QSize(420, 700);
  const QString path = dir.filePath(QStringLiteral("narrow.svg"));
  QString error;
  QVERIFY2(w->exportView(path, o, &error), qPrintable(error));
  const QString text = svgText(path, &error);
  QVERIFY2(error.isEmpty(), qPrintable(error));
  const QStringList title = w->attentionView()->figureTitle();
  QVERIFY(title.size() == 2 && title[1].contains(sentence));
  // Every word of the subtitle is drawn, none cut.
  for (const QString& word : title[1].split(u' '))
    QVERIFY2(text.contains(word), qPrintable(word + QStringLiteral(" is not in the figure")));
  QVERIFY2(!text.contains(QChar(0x2026)), qPrintable(text));
  // The PNG draws the same lines, each within the figure.
  o.format = FigureOptions::Format::Png;
  saveShot(renderFigure(w->attentionView(), o), QStringLiteral("visit-figure-narrow.png"));
  const QStringList lines = figureTitleLines(w->attentionView(), o);
  QVERIFY(lines.size() > 2);
  const QSize size = figureSize(w->attentionView(), o);
  QVERIFY(size.width() <= 420);
  for (const QString& line : lines)
    QVERIFY2(w->attentionView()->fontMetrics().horizontalAdvance(line) <= size.width(),
             qPrintable(line));

  // At the default size the figure is as wide as its heatmap, not as its title: a long sentence's
  // title breaks over the heatmap instead of widening the page beside it.
  QStringList many;
  for (int i = 0; i < 2; ++i) many << sentence;
  auto wide = openWindow(kTinyModel, many.join(u' '));
  FigureOptions d;
  d.format = FigureOptions::Format::Png;
  AttentionView* view = wide->attentionView();
  saveShot(renderFigure(view, d), QStringLiteral("visit-figure-long-title.png"));
  const QSize fig = figureSize(view, d);
  const QStringList natural = view->figureTitle();
  const int natural_w = view->fontMetrics().horizontalAdvance(natural.value(1));
  QVERIFY2(natural_w > fig.width(),
           qPrintable(QStringLiteral("title %1 px, figure %2 px").arg(natural_w).arg(fig.width())));
  QVERIFY(fig.width() >= view->figureLeastBodySize(true).width());
  for (const QString& line : figureTitleLines(view, d))
    QVERIFY2(view->fontMetrics().horizontalAdvance(line) <= fig.width(), qPrintable(line));
}

// 12. [ on the mean of the heads goes to the last head, ] on the last head back to the mean.
void GuiTest::bracketOnTheMeanGoesToTheLastHead() {
  auto w = openWindow(kTinyModel, QStringLiteral("ich mochte ein bier"));
  const int heads = w->state()->headCount();
  QWidget* target = w->tabs();
  target->setFocus();
  QCOMPARE(w->state()->selection().head, -1);
  QTest::keyClick(target, Qt::Key_BracketLeft);
  QCOMPARE(w->state()->selection().head, heads - 1);
  QCOMPARE(w->headCombo()->currentText(), QStringLiteral("Head %1").arg(heads));
  QTest::keyClick(target, Qt::Key_BracketRight);
  QCOMPARE(w->state()->selection().head, -1);
  QTest::keyClick(target, Qt::Key_BracketRight);
  QCOMPARE(w->state()->selection().head, 0);
}

// 12. The export dialog starts from the title, legend and scale chosen last, also after a restart.
void GuiTest::exportDialogRemembersItsChoices() {
  QSettings().clear();
  auto answer = [](bool title, bool* was_checked) {
    QTimer::singleShot(0, [=] {
      auto* d = qobject_cast<QDialog*>(QApplication::activeModalWidget());
      QVERIFY(d);
      QCheckBox* box = nullptr;
      for (QCheckBox* b : d->findChildren<QCheckBox*>())
        if (b->text().startsWith(u"Title")) box = b;
      QVERIFY(box);
      *was_checked = box->isChecked();
      box->setChecked(title);
      // The file dialog that follows is cancelled.
      QTimer::singleShot(0, [] {
        if (QWidget* f = QApplication::activeModalWidget()) qobject_cast<QDialog*>(f)->reject();
      });
      d->accept();
    });
  };
  bool was = false;
  {
    MainWindow::Options o;
    o.model = kTinyModel;
    MainWindow w(o);
    w.show();
    QVERIFY(w.figureDefaults().title);
    answer(false, &was);
    w.action(QStringLiteral("exportPng"))->trigger();
    QVERIFY(was);
    QVERIFY(!w.figureDefaults().title);
    answer(false, &was);
    w.action(QStringLiteral("exportSvg"))->trigger();
    QVERIFY2(!was, "the second export starts with the title off, as chosen the first time");
    w.close();
  }
  {
    MainWindow::Options o;
    o.model = kTinyModel;
    MainWindow w(o);  // after a restart
    QVERIFY(!w.figureDefaults().title);
  }
  QSettings().clear();
}

// 12. The model box shows a trained model's file name whole.
void GuiTest::modelBoxShowsATrainedModelsName() {
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("reverse-small-20261126-153012.safetensors"));
  QVERIFY(QFile::copy(kTinyModel, path));
  auto w = openWindow(path, QStringLiteral("ich mochte ein bier"));
  QComboBox* box = w->modelCombo();
  QCOMPARE(box->currentText(), QFileInfo(path).fileName());
  QStyleOptionComboBox opt;
  opt.initFrom(box);
  opt.editable = box->isEditable();
  const QRect field =
      box->style()->subControlRect(QStyle::CC_ComboBox, &opt, QStyle::SC_ComboBoxEditField, box);
  QVERIFY2(box->fontMetrics().horizontalAdvance(box->currentText()) <= field.width(),
           qPrintable(QStringLiteral("%1 pixels of text in a %2-pixel field")
                          .arg(box->fontMetrics().horizontalAdvance(box->currentText()))
                          .arg(field.width())));
}

void GuiTest::screenshots() {
  const QString out = QStringLiteral(ATTNVIZ_SCREENSHOT_DIR);
  QVERIFY(QDir().mkpath(out));
  auto shoot = [&](MainWindow& w, const QString& stem) {
    for (View* v : w.views()) {
      if (v == w.masksView()) w.state()->setKind(AttentionKind::DecoderSelf);
      w.setCurrentView(v->name());
      v->refreshNow();
      if (v == w.positionalView()) QTRY_VERIFY(!w.positionalView()->computing());
      // Nested layouts settle over a few event-loop turns.
      for (int k = 0; k < 3; ++k) {
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        QTest::qWait(10);
      }
      const QString file = QDir(out).filePath(QStringLiteral("%1-%2.png").arg(stem, v->name()));
      QVERIFY2(w.grab().save(file), qPrintable(file));
      QCOMPARE(QImage(file).size(), w.size());
      if (v == w.masksView()) {
        AttentionSelection s = w.state()->selection();
        s.kind = modelKinds(w.engine()->model()->config()).back();
        w.state()->setSelection(s);
      }
    }
  };
  const QString model = screenshotModel();
  auto w =
      openWindow(model, model == kTinyModel ? QStringLiteral("ich mochte ein bier P") : QString());
  QVERIFY(w->engine()->snapshot() && w->engine()->snapshot()->trace);
  for (const QSize size : {QSize(1366, 768), QSize(1920, 1080)}) {
    w->resize(size);
    for (bool explain : {true, false}) {
      if (w->action(QStringLiteral("explanations"))->isChecked() != explain)
        w->action(QStringLiteral("explanations"))->trigger();
      shoot(*w, QStringLiteral("%1x%2%3")
                    .arg(size.width())
                    .arg(size.height())
                    .arg(explain ? QString() : QStringLiteral("-plain")));
    }
  }
  w->action(QStringLiteral("explanations"))->trigger();
  // The masks view with the look-ahead mask off, and a batch.
  w->resize(1366, 768);
  w->state()->setKind(AttentionKind::DecoderSelf);
  w->setCurrentView(QStringLiteral("masks"));
  w->masksView()->subsequentSwitch()->click();
  QVERIFY(idle(*w));
  QVERIFY(w->grab().save(QDir(out).filePath(QStringLiteral("masks-lookahead-off.png"))));
  w->setCurrentView(QStringLiteral("attention"));
  QVERIFY(w->grab().save(QDir(out).filePath(QStringLiteral("attention-lookahead-off.png"))));
  w->masksView()->subsequentSwitch()->click();
  QVERIFY(idle(*w));
  w->setCurrentView(QStringLiteral("masks"));
  QStringList sentences;
  for (const auto& ex : w->engine()->model()->config().examples)
    sentences << QString::fromStdString(ex.src);
  if (sentences.size() < 2)
    sentences = {QStringLiteral("ich mochte ein bier cola"), QStringLiteral("ein bier")};
  w->masksView()->setBatch(sentences.mid(0, 3));
  w->masksView()->batchButton()->click();
  QVERIFY(idle(*w));
  w->state()->setKind(AttentionKind::EncoderSelf);
  w->state()->setBatchIndex(1);
  QVERIFY(w->grab().save(QDir(out).filePath(QStringLiteral("masks-batch.png"))));
  // The decode as frames and an animated PNG, to look at (and to open in a browser).
  {
    QString error;
    FigureOptions frames;
    frames.size = QSize(1100, 560);
    w->state()->setKind(AttentionKind::Cross);
    w->sourceEdit()->setText(QString());
    QVERIFY(w->engine()->run(
        w->engine()->model()->config().examples.empty()
            ? QStringLiteral("ich mochte ein bier")
            : QString::fromStdString(w->engine()->model()->config().examples.front().src),
        QString()));
    QVERIFY(idle(*w));
    QVERIFY2(w->exportDecodingFrames(QDir(out).filePath(QStringLiteral("frames")), frames, true,
                                     &error) > 0,
             qPrintable(error));
  }
  w->resize(1920, 1080);  // a projector's size
  w->setPresentationMode(true);
  w->setCurrentView(QStringLiteral("attention"));
  QTest::qWait(50);
  QVERIFY(w->grab().save(QDir(out).filePath(QStringLiteral("presentation-attention.png"))));
  w.reset();
  // One model of each other architecture, at both sizes.
  const QList<QPair<QString, QString>> others = {
      {QStringLiteral("gpt003"), QStringLiteral("the cat")},
      {QStringLiteral("bert003"), QStringLiteral("[CLS] hello how [MASK] you [SEP]")},
      {QStringLiteral("classifier003"), QStringLiteral("this movie is not great")}};
  for (const auto& [name, input] : others) {
    auto o = openWindow(
        QStringLiteral(ATTNVIZ_TEST_DATA "/") + name + QStringLiteral(".safetensors"), input);
    QVERIFY(o->engine()->snapshot());
    for (const QSize size : {QSize(1366, 768), QSize(1920, 1080)}) {
      o->resize(size);
      shoot(*o, QStringLiteral("%1-%2x%3").arg(name).arg(size.width()).arg(size.height()));
    }
  }
  qInfo("screenshots in %s", qPrintable(out));
}

QTEST_MAIN(GuiTest)
#include "test_gui.moc"

// Heatmaps larger than the screen: cells read tile by tile from a source and pooled (the maximum
// or the mean of f × f cells), checked against the same pooling written as plain loops here; the
// widget drawing an 8,192-wide matrix in bounded memory, a single sharp cell surviving the
// pooling, the colour scale found while reading, the exact cell in the tooltip and at one cell a
// pixel once zoomed in.
#include <QComboBox>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QtTest/QtTest>
#include <cmath>
#include <limits>

#include "widgets/colormap.h"
#include "widgets/heatmap.h"
#include "widgets/heatmap_pooling.h"

using namespace attnviz::gui;

namespace {

// Cells computed from their coordinates, with a mask of its own (j > i + shift: "causal"), and
// one sharp cell.
class ComputedCells final : public HeatmapCells {
 public:
  ComputedCells(int rows, int cols, int sharp_r, int sharp_c, bool causal, bool nans = false)
      : rows_(rows), cols_(cols), sr_(sharp_r), sc_(sharp_c), causal_(causal), nans_(nans) {}
  int rows() const override { return rows_; }
  int cols() const override { return cols_; }
  bool has(Field f) const override { return f != Field::Scores; }
  bool hasMask() const override { return causal_; }
  static float at(int r, int c) { return float((r * 7 + c * 13) % 97) / 970.0f; }  // 0 … 0.099
  // With nans, one cell in 11 has no value (NaN), as a cell with nothing to show has.
  float cellValue(int r, int c) const {
    if (nans_ && (r * 3 + c) % 11 == 0) return std::numeric_limits<float>::quiet_NaN();
    return r == sr_ && c == sc_ ? 1.0f : at(r, c);
  }
  bool isMasked(int r, int c) const { return causal_ && c > r; }
  void tile(Field, int r0, int r1, int c0, int c1, float* out) const override {
    tiles_read.fetch_add(1);
    for (int r = r0; r < r1; ++r)
      for (int c = c0; c < c1; ++c) *out++ = cellValue(r, c);
  }
  void maskTile(int r0, int r1, int c0, int c1, uint8_t* out) const override {
    for (int r = r0; r < r1; ++r)
      for (int c = c0; c < c1; ++c) *out++ = isMasked(r, c) ? 1 : 0;
  }
  mutable std::atomic<int> tiles_read{0};

 private:
  int rows_, cols_, sr_, sc_;
  bool causal_, nans_;
};

// A heatmap of such cells, coloured 0 … their largest.
HeatmapData computedData(std::shared_ptr<const ComputedCells> cells) {
  HeatmapData d;
  d.rows = cells->rows();
  d.cols = cells->cols();
  d.cells = std::move(cells);
  d.scale = HeatmapData::Scale::ZeroToMax;
  return d;
}

// The pooling as a person would write it: every element on its own.
PooledCells plainPooling(const ComputedCells& cells, const PoolRequest& q) {
  PooledCells p;
  p.fr = q.fr;
  p.fc = q.fc;
  p.r0 = q.r0;
  p.c0 = q.c0;
  p.r1 = q.r1;
  p.c1 = q.c1;
  p.rows = (q.r1 - q.r0 + q.fr - 1) / q.fr;
  p.cols = (q.c1 - q.c0 + q.fc - 1) / q.fc;
  for (int pr = 0; pr < p.rows; ++pr)
    for (int pc = 0; pc < p.cols; ++pc) {
      double acc = q.pooling == Pooling::Max ? -std::numeric_limits<double>::infinity() : 0.0;
      int counted = 0, masked = 0, total = 0;
      for (int r = q.r0 + pr * q.fr; r < std::min(q.r1, q.r0 + (pr + 1) * q.fr); ++r)
        for (int c = q.c0 + pc * q.fc; c < std::min(q.c1, q.c0 + (pc + 1) * q.fc); ++c) {
          ++total;
          const bool m = cells.isMasked(r, c);
          p.any_masked = p.any_masked || m;
          if (q.mask_only) {
            masked += m;
            continue;
          }
          const double v = cells.cellValue(r, c);
          if ((m && q.draw_mask) || std::isnan(v)) {  // drawn as masked
            ++masked;
            continue;
          }
          if (!m) {
            p.lo = std::min(p.lo, v);
            p.hi = std::max(p.hi, v);
          }
          ++counted;
          acc = q.pooling == Pooling::Max ? std::max(acc, v) : acc + v;
        }
      p.value.push_back(counted == 0 ? std::numeric_limits<float>::quiet_NaN()
                                     : float(q.pooling == Pooling::Max ? acc : acc / counted));
      p.masked.push_back(float(masked) / float(total));
    }
  return p;
}

bool samePooled(const PooledCells& a, const PooledCells& b, QString* why) {
  if (a.rows != b.rows || a.cols != b.cols) {
    *why = QStringLiteral("%1 × %2 elements, expected %3 × %4")
               .arg(a.rows)
               .arg(a.cols)
               .arg(b.rows)
               .arg(b.cols);
    return false;
  }
  for (size_t e = 0; e < a.value.size(); ++e) {
    const bool both_nan = std::isnan(a.value[e]) && std::isnan(b.value[e]);
    if ((!both_nan && a.value[e] != b.value[e]) || a.masked[e] != b.masked[e]) {
      *why = QStringLiteral("element %1: %2 (masked %3), expected %4 (masked %5)")
                 .arg(e)
                 .arg(double(a.value[e]))
                 .arg(double(a.masked[e]))
                 .arg(double(b.value[e]))
                 .arg(double(b.masked[e]));
      return false;
    }
  }
  if (a.lo != b.lo || a.hi != b.hi || a.any_masked != b.any_masked) {
    *why =
        QStringLiteral("range %1 … %2, expected %3 … %4").arg(a.lo).arg(a.hi).arg(b.lo).arg(b.hi);
    return false;
  }
  return true;
}

}  // namespace

class HeatmapPoolingTest : public QObject {
  Q_OBJECT
 private slots:
  void smallCaseByHand();
  void poolingEqualsPlainLoops_data();
  void poolingEqualsPlainLoops();
  void cancelStops();
  void widgetPoolsAWideMatrix();
  void zoomedInDrawsEachCell();
  void maskPictureBlendsByShare();
  void colormapBeforeAnyData();
};

// 3 × 3 cells, f = 2: four elements, worked out on paper.
void HeatmapPoolingTest::smallCaseByHand() {
  HeatmapData d;
  d.rows = d.cols = 3;
  d.values = {0.1f, 0.9f, 0.2f,  //
              0.3f, 0.4f, 0.8f,  //
              0.5f, 0.6f, 0.7f};
  d.masked = {0, 1, 1,  //
              0, 0, 1,  //
              0, 0, 0};
  // The widget wraps held vectors as a source; a one-off copy of that here.
  class Held final : public HeatmapCells {
   public:
    explicit Held(const HeatmapData& d) : d_(d) {}
    int rows() const override { return 3; }
    int cols() const override { return 3; }
    bool has(Field f) const override { return f == Field::Values; }
    bool hasMask() const override { return true; }
    void tile(Field, int r0, int r1, int c0, int c1, float* out) const override {
      for (int r = r0; r < r1; ++r)
        for (int c = c0; c < c1; ++c) *out++ = d_.values[size_t(r) * 3 + c];
    }
    void maskTile(int r0, int r1, int c0, int c1, uint8_t* out) const override {
      for (int r = r0; r < r1; ++r)
        for (int c = c0; c < c1; ++c) *out++ = d_.masked[size_t(r) * 3 + c];
    }
    const HeatmapData& d_;
  } held(d);
  PoolRequest q;
  q.r1 = q.c1 = 3;
  q.fr = q.fc = 2;
  PooledCells p = poolCells(held, q);
  QCOMPARE(p.rows, 2);
  QCOMPARE(p.cols, 2);
  // [0.1 ■ / 0.3 0.4] → max 0.4, one of four masked; [■ / ■] → nothing drawn; [0.5 0.6] → 0.6;
  // [0.7] → 0.7.
  QCOMPARE(p.value[0], 0.4f);
  QCOMPARE(p.masked[0], 0.25f);
  QVERIFY(std::isnan(p.value[1]));
  QCOMPARE(p.masked[1], 1.0f);
  QCOMPARE(p.value[2], 0.6f);
  QCOMPARE(p.value[3], 0.7f);
  QCOMPARE(p.lo, double(0.1f));
  QCOMPARE(p.hi, double(0.7f));  // 0.9 and 0.8 are masked: outside the scale
  QVERIFY(p.any_masked);
  q.pooling = Pooling::Mean;
  p = poolCells(held, q);
  QCOMPARE(p.value[0], float((double(0.1f) + 0.3f + 0.4f) / 3));
  QCOMPARE(p.value[2], float((double(0.5f) + 0.6f) / 2));
  // Not drawn as masked (raw scores before the mask): the masked cells are pooled too, but stay
  // outside the scale.
  q.pooling = Pooling::Max;
  q.draw_mask = false;
  p = poolCells(held, q);
  QCOMPARE(p.value[0], 0.9f);
  QCOMPARE(p.value[1], 0.8f);
  QCOMPARE(p.masked[1], 0.0f);
  QCOMPARE(p.hi, double(0.7f));
  // A picture of the mask: only the fraction.
  q.mask_only = true;
  p = poolCells(held, q);
  QCOMPARE(p.masked[0], 0.25f);
  QCOMPARE(p.masked[1], 1.0f);
  QCOMPARE(p.masked[3], 0.0f);
}

void HeatmapPoolingTest::poolingEqualsPlainLoops_data() {
  QTest::addColumn<int>("rows");
  QTest::addColumn<int>("cols");
  QTest::addColumn<int>("fr");
  QTest::addColumn<int>("fc");
  QTest::addColumn<bool>("mean");
  QTest::addColumn<bool>("causal");
  QTest::addColumn<int>("r0");
  QTest::addColumn<int>("c0");
  QTest::addColumn<bool>("draw_mask");
  QTest::addColumn<bool>("mask_only");
  QTest::addColumn<bool>("nans");
  // Sizes that are not multiples of the factors, bands and column chunks of the implementation
  // (32 rows, 2,048 columns) crossed, windows inside the matrix, masked cells drawn by value,
  // mask pictures, cells without a value.
  QTest::newRow("f1") << 70 << 2100 << 1 << 1 << false << true << 0 << 0 << true << false << false;
  QTest::newRow("f3 max causal") << 1001 << 4500 << 3 << 3 << false << true << 0 << 0 << true
                                 << false << false;
  QTest::newRow("f3 mean causal") << 1001 << 4500 << 3 << 3 << true << true << 0 << 0 << true
                                  << false << false;
  QTest::newRow("f5 mean") << 333 << 5000 << 5 << 5 << true << false << 0 << 0 << true << false
                           << false;
  QTest::newRow("rows 1, columns 3")
      << 8 << 4500 << 1 << 3 << false << true << 0 << 0 << true << false << false;
  QTest::newRow("window f2") << 1000 << 3000 << 2 << 2 << false << true << 120 << 2046 << true
                             << false << false;
  QTest::newRow("window wider than a chunk")
      << 700 << 9000 << 2 << 3 << true << true << 64 << 1200 << true << false << false;
  QTest::newRow("scores: mask not drawn")
      << 500 << 2500 << 3 << 3 << false << true << 0 << 0 << false << false << false;
  QTest::newRow("mask picture") << 500 << 2500 << 3 << 4 << false << true << 0 << 0 << true << true
                                << false;
  QTest::newRow("NaN cells") << 400 << 2300 << 3 << 3 << true << true << 0 << 0 << true << false
                             << true;
}

void HeatmapPoolingTest::poolingEqualsPlainLoops() {
  QFETCH(int, rows);
  QFETCH(int, cols);
  QFETCH(int, fr);
  QFETCH(int, fc);
  QFETCH(bool, mean);
  QFETCH(bool, causal);
  QFETCH(int, r0);
  QFETCH(int, c0);
  QFETCH(bool, draw_mask);
  QFETCH(bool, mask_only);
  QFETCH(bool, nans);
  const ComputedCells cells(rows, cols, rows / 2, cols / 3, causal, nans);
  PoolRequest q;
  q.r0 = r0;
  q.c0 = c0;
  q.r1 = rows;
  q.c1 = cols;
  q.fr = fr;
  q.fc = fc;
  q.pooling = mean ? Pooling::Mean : Pooling::Max;
  q.draw_mask = draw_mask;
  q.mask_only = mask_only;
  const PooledCells got = poolCells(cells, q), want = plainPooling(cells, q);
  QString why;
  QVERIFY2(samePooled(got, want, &why), qPrintable(why));
  QVERIFY(!got.cancelled);
  // Pooled further from the elements alone: what pooling at the coarser factors gives directly
  // (the mean up to the order of its sums).
  const PooledCells coarse = coarsen(got, 3, 2, q.pooling);
  PoolRequest qc = q;
  qc.fr = fr * 3;
  qc.fc = fc * 2;
  const PooledCells direct = plainPooling(cells, qc);
  QCOMPARE(coarse.rows, direct.rows);
  QCOMPARE(coarse.cols, direct.cols);
  for (size_t e = 0; e < direct.value.size(); ++e) {
    const float a = coarse.value[e], b = direct.value[e];
    QVERIFY2(
        (std::isnan(a) && std::isnan(b)) || std::abs(a - b) <= 1e-6f * std::max(1.0f, std::abs(b)),
        qPrintable(QStringLiteral("element %1: %2, directly %3").arg(e).arg(a).arg(b)));
    QVERIFY(std::abs(coarse.masked[e] - direct.masked[e]) <= 1e-6f);
  }
}

void HeatmapPoolingTest::cancelStops() {
  const ComputedCells cells(4000, 4000, 0, 0, false);
  std::atomic<bool> cancel{true};
  PoolRequest q;
  q.r1 = q.c1 = 4000;
  q.fr = q.fc = 2;
  q.cancel = &cancel;
  const PooledCells p = poolCells(cells, q);
  QVERIFY(p.cancelled);
  QCOMPARE(cells.tiles_read.load(), 0);
}

// 8,192 × 8,192 cells (67 M; as floats 256 MiB, never held): one picture of 2,048 × 2,048
// elements of 4 × 4 cells, the sharp cell's element at the top of the scale, the scale found
// while reading (0 … 1), the tooltip's cell exact and its pooling said.
void HeatmapPoolingTest::widgetPoolsAWideMatrix() {
  const int n = 8192, sr = 5000, sc = 1234;
  auto cells = std::make_shared<ComputedCells>(n, n, sr, sc, true);
  HeatmapData d = computedData(cells);
  d.vmax = 7;  // not used: the scale is the cells' own
  HeatmapWidget w;
  w.resize(900, 800);
  w.show();
  QSignalSpy done(&w, &HeatmapWidget::renderingDone);
  w.setData(d);
  QVERIFY(w.rendering());
  QVERIFY(done.wait(120000));
  QCOMPARE(w.poolFactor(), 4);
  QCOMPARE(w.cellImage().size(), QSize(2048, 2048));
  QCOMPARE(w.scaleMin(), 0.0);
  QCOMPARE(w.scaleMax(), 1.0);
  const Colormap& cmap = w.colormap();
  QCOMPARE(w.cellImage().pixel(sc / 4, sr / 4), cmap.rgb(1.0));
  // Above the diagonal: masked.
  QCOMPARE(w.cellImage().pixel(2000, 10), cmap.maskedFill().rgb());
  const QString tip = w.tooltipText(sr, sc);
  QVERIFY2(tip.contains(QStringLiteral("1.0000")), qPrintable(tip));
  // On screen (cells of ~0.09 px) a pixel holds more than the picture's 4 × 4: the picture is
  // pooled further, never smoothed, so the sharp cell's pixel keeps the top colour.
  const double cell = w.cellRect(0, 0).width();
  QVERIFY(cell < 0.25);
  const int shown = int(std::ceil(1.0 / cell - 1e-9) + 3) / 4 * 4;
  QVERIFY2(tip.contains(QStringLiteral("largest of %1 × %1 cells").arg(shown)), qPrintable(tip));
  const QImage screen = w.grab().toImage();
  const QPoint at = w.cellRect(sr, sc).center().toPoint();
  bool top = false;  // the element is about a pixel wide: it is one of the pixels around
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx)
      top = top || screen.pixel(at + QPoint(dx, dy)) == cmap.rgb(1.0);
  QVERIFY2(top, "the sharp cell's colour is not on screen");
  QVERIFY(w.tooltipText(10, 2000).contains(QStringLiteral("Masked: yes")));
  // The mean: the sharp cell's element is (1 + the other 15 cells) / 16 of the same scale.
  done.clear();
  w.setPooling(Pooling::Mean);
  QVERIFY(done.wait(120000));
  double sum = 0;
  for (int r = sr / 4 * 4; r < sr / 4 * 4 + 4; ++r)
    for (int c = sc / 4 * 4; c < sc / 4 * 4 + 4; ++c) sum += cells->cellValue(r, c);
  QCOMPARE(w.cellImage().pixel(sc / 4, sr / 4), cmap.rgb(float(sum / 16)));
  QCOMPARE(w.scaleMax(), 1.0);
  QVERIFY(w.tooltipText(sr, sc).contains(QStringLiteral("mean of %1 × %1 cells").arg(shown)));
}

// Zoomed in to 5-pixel cells: the visible cells are read again one cell an element, and a
// neighbour of the sharp cell is drawn in its own colour, not the pooled maximum.
void HeatmapPoolingTest::zoomedInDrawsEachCell() {
  const int n = 4500, sr = 3001, sc = 2999;
  auto cells = std::make_shared<ComputedCells>(n, n, sr, sc, false);
  const HeatmapData d = computedData(cells);
  HeatmapView view;
  view.resize(700, 600);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  QSignalSpy done(view.heatmap(), &HeatmapWidget::renderingDone);
  view.heatmap()->setData(d);
  QVERIFY(done.wait(120000));
  QCOMPARE(view.heatmap()->poolFactor(), 3);
  QTRY_VERIFY(view.poolingBox()->isVisible());  // how pixels pool is a choice here
  view.zoomIn();
  for (int k = 0; k < 3; ++k) view.zoomIn();
  HeatmapWidget* hm = view.heatmap();
  QVERIFY(hm->cellSize() >= 5);
  // A neighbour of the sharp cell in the same 3 × 3 element: drawn pooled, it took the sharp
  // cell's colour; at one cell an element, its own.
  const int r = sr, c = sc - 1;
  const QRectF cell = hm->cellRect(r, c);
  view.scrollArea()->ensureVisible(int(cell.center().x()), int(cell.center().y()), 200, 200);
  QTRY_VERIFY_WITH_TIMEOUT(hm->windowPoolFactor() == 1, 60000);
  const QImage shot = hm->grab(cell.toAlignedRect()).toImage();
  const QRgb own = hm->colormap().rgb(double(ComputedCells::at(r, c)));
  QVERIFY(own != hm->colormap().rgb(1.0));
  QCOMPARE(shot.pixel(shot.width() / 2, shot.height() / 2), own);
  QVERIFY(hm->tooltipText(r, c).contains(QString::number(double(ComputedCells::at(r, c)), 'f', 4)));
}

// A picture of a causal mask at 4,500 × 4,500 (3 × 3 cells a pixel): pixels above the diagonal
// the masked fill, below it white, on it the blend of the share masked (3 of 9 cells: j > i within
// a diagonal element); the tooltip says what the colour is.
void HeatmapPoolingTest::maskPictureBlendsByShare() {
  auto cells = std::make_shared<ComputedCells>(4500, 4500, 0, 0, true);
  HeatmapData d = computedData(cells);
  d.mask_only = true;
  HeatmapWidget w;
  w.resize(800, 700);
  QSignalSpy done(&w, &HeatmapWidget::renderingDone);
  w.setData(d);
  QVERIFY(done.wait(120000));
  QCOMPARE(w.poolFactor(), 3);
  const QImage img = w.cellImage();
  const QColor fill = w.colormap().maskedFill();
  QCOMPARE(img.pixel(1000, 10), fill.rgb());
  QCOMPARE(img.pixel(10, 1000), qRgb(255, 255, 255));
  const double share = double(3.0f / 9.0f);  // the fraction as the pooling stores it
  QCOMPARE(img.pixel(700, 700), qRgb(int(std::lround(255 + (fill.red() - 255) * share)),
                                     int(std::lround(255 + (fill.green() - 255) * share)),
                                     int(std::lround(255 + (fill.blue() - 255) * share))));
  const QString tip = w.tooltipText(2100, 2101);
  QVERIFY2(tip.contains(QStringLiteral("cells that are masked")), qPrintable(tip));
  QVERIFY(tip.contains(QStringLiteral("Masked: yes")));
}

// A view sets its colormap before it has data (the Positional view does, in its constructor): the
// empty matrix is a source of no cells, not a null one (UBSan caught the reference to it).
void HeatmapPoolingTest::colormapBeforeAnyData() {
  HeatmapWidget w;
  w.setColormap(Colormap::magma());
  QCOMPARE(w.poolFactor(), 1);
  QVERIFY(w.cellImage().isNull());
  QVERIFY(w.grab().width() > 0);
}

QTEST_MAIN(HeatmapPoolingTest)
#include "test_heatmap_pooling.moc"

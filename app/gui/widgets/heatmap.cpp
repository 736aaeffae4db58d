#include "widgets/heatmap.h"

#include <QApplication>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPaintEngine>
#include <QPainter>
#include <QPainterPath>
#include <QScrollBar>
#include <QTimer>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>
#include <tuple>

namespace attnviz::gui {

namespace {

constexpr double kPad = 8;
constexpr double kMaxLabelWidth = 150;  // longer token labels are elided
constexpr double kLegendBar = 14;
constexpr qint64 kSyncRenderCells = 160'000;  // larger matrices are rendered off the GUI thread
constexpr qint64 kMaxVectorCells = 250'000;   // larger ones stay an image in SVG and PDF
constexpr int kMayPoolCells = 512;  // more rows or columns may have cells smaller than a pixel

// Numbers in tooltips and legends: 4 decimals, or scientific for tiny/huge magnitudes.
QString formatNumber(double v, int decimals = 4) {
  if (std::isnan(v)) return QStringLiteral("—");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("+∞") : QStringLiteral("−∞");
  const double a = std::abs(v);
  if (v != 0 && (a < 1e-3 || a >= 1e5)) return QString::number(v, 'e', 2);
  return QString::number(v, 'f', decimals);
}

QString formatTick(double v) {
  if (std::abs(v) >= 1e5 || (v != 0 && std::abs(v) < 1e-3)) return QString::number(v, 'e', 1);
  return QString::number(v, 'g', 3);
}

QString capitalized(QString s) {
  if (!s.isEmpty()) s[0] = s[0].toUpper();
  return s;
}

double normalizedIn(double v, double lo, double hi) {
  if (std::isnan(v)) return std::nan("");
  if (hi > lo) return std::clamp((v - lo) / (hi - lo), 0.0, 1.0);
  return v >= hi ? 1.0 : 0.0;
}

// The vectors of a HeatmapData as a source of tiles: one way to draw held and computed cells.
class HeldCells final : public HeatmapCells {
 public:
  explicit HeldCells(std::shared_ptr<const HeatmapData> d) : d_(std::move(d)) {}
  int rows() const override { return d_->rows; }
  int cols() const override { return d_->cols; }
  bool has(Field f) const override { return !of(f).empty(); }
  bool hasMask() const override { return !d_->masked.empty(); }
  void tile(Field f, int r0, int r1, int c0, int c1, float* out) const override {
    copyTile(of(f), r0, r1, c0, c1, out);
  }
  void maskTile(int r0, int r1, int c0, int c1, uint8_t* out) const override {
    copyTile(d_->masked, r0, r1, c0, c1, out);
  }

 private:
  const std::vector<float>& of(Field f) const {
    switch (f) {
      case Field::Probs:
        return d_->probs;
      case Field::Scores:
        return d_->scores;
      case Field::Values:
        break;
    }
    return d_->values;
  }
  template <class T>
  void copyTile(const std::vector<T>& v, int r0, int r1, int c0, int c1, T* out) const {
    const int w = c1 - c0;
    for (int r = r0; r < r1; ++r)
      std::copy_n(v.begin() + (ptrdiff_t(r) * d_->cols + c0), w, out + ptrdiff_t(r - r0) * w);
  }
  std::shared_ptr<const HeatmapData> d_;
};

}  // namespace

bool HeatmapData::hasMask() const {
  return cells ? cells->hasMask() : !masked.empty();
}

bool HeatmapData::isMasked(int r, int c) const {
  if (cells) return cells->masked(r, c);
  return !masked.empty() && masked[size_t(r) * cols + c] != 0;
}

float HeatmapData::value(int r, int c) const {
  return cells ? cells->cell(HeatmapCells::Field::Values, r, c) : values[size_t(r) * cols + c];
}

bool HeatmapData::hasProbs() const {
  return cells ? cells->has(HeatmapCells::Field::Probs) : !probs.empty();
}

float HeatmapData::prob(int r, int c) const {
  return cells ? cells->cell(HeatmapCells::Field::Probs, r, c) : probs[size_t(r) * cols + c];
}

bool HeatmapData::hasScores() const {
  return cells ? cells->has(HeatmapCells::Field::Scores) : !scores.empty();
}

float HeatmapData::score(int r, int c) const {
  return cells ? cells->cell(HeatmapCells::Field::Scores, r, c) : scores[size_t(r) * cols + c];
}

// ---------------------------------------------------------------------------------------------

HeatmapWidget::HeatmapWidget(QWidget* parent)
    : QWidget(parent),
      data_(std::make_shared<HeatmapData>()),
      cells_(std::make_shared<HeldCells>(data_)),  // before any data: the empty matrix
      cmap_(&Colormap::viridis()) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

HeatmapWidget::~HeatmapWidget() {
  for (auto* c : {&cancel_, &window_cancel_})
    if (*c) **c = true;
  if (watcher_) watcher_->waitForFinished();
  if (window_watcher_) window_watcher_->waitForFinished();
}

void HeatmapWidget::setData(HeatmapData data) {
  data_ = std::make_shared<const HeatmapData>(std::move(data));
  if (data_->cells)
    cells_ = data_->cells;
  else
    cells_ = std::make_shared<HeldCells>(data_);
  ++data_serial_;
  hover_ = {-1, -1};
  startRender();
  if (!fit_) adjustSize();
  updateGeometry();
  update();
}

void HeatmapWidget::copyForFigure(const HeatmapWidget& from, bool legend) {
  setFont(from.font());
  setColormap(from.colormap());
  setSynchronousRendering(true);
  pooling_ = from.pooling();  // before the data: it is rendered at once
  HeatmapData d = from.data();
  d.title.clear();
  setData(std::move(d));
  setShowLegend(legend);
}

void HeatmapWidget::setColormap(const Colormap& cmap) {
  if (cmap_ == &cmap) return;
  cmap_ = &cmap;
  if (rendering_ || whole_.image.isNull()) {
    startRender();
  } else {  // the cells as read, coloured again
    for (Rendered* b : {&whole_, &window_})
      if (!b->image.isNull()) b->image = colourCells(b->cells, b->lo, b->hi, *data_, *cmap_);
    display_ = {};
  }
  update();
}

void HeatmapWidget::setFit(bool fit) {
  fit_ = fit;
  if (!fit_) adjustSize();
  updateGeometry();
  update();
}

void HeatmapWidget::setCellSize(double px) {
  cell_px_ = std::clamp(px, 0.25, 256.0);
  if (!fit_) adjustSize();
  updateGeometry();
  update();
}

double HeatmapWidget::cellSize() const {
  return computeLayout(size()).cell;
}

void HeatmapWidget::setShowLegend(bool show) {
  show_legend_ = show;
  updateGeometry();
  update();
}

void HeatmapWidget::setPooling(Pooling pooling) {
  if (pooling_ == pooling) return;
  pooling_ = pooling;
  startRender();
  update();
}

HeatmapWidget::Rendered HeatmapWidget::renderBlock(const HeatmapCells& cells, const HeatmapData& d,
                                                   const PoolRequest& q, const Colormap& cmap,
                                                   const std::pair<double, double>* scale) {
  Rendered out;
  out.cells = poolCells(cells, q);
  if (out.cells.cancelled) return out;
  const PooledCells& p = out.cells;
  if (scale) {
    std::tie(out.lo, out.hi) = *scale;
  } else {
    switch (d.scale) {
      case HeatmapData::Scale::Given:
        out.lo = d.vmin;
        out.hi = d.vmax;
        break;
      case HeatmapData::Scale::ZeroToMax:
        out.lo = 0;
        out.hi = p.lo <= p.hi && p.hi > 0 ? p.hi : 1;
        break;
      case HeatmapData::Scale::MinToMax:
        out.lo = p.lo <= p.hi ? p.lo : 0;
        out.hi = p.lo <= p.hi && p.hi > p.lo ? p.hi : out.lo + 1;
        break;
    }
  }
  out.image = colourCells(p, out.lo, out.hi, d, cmap);
  return out;
}

QImage HeatmapWidget::colourCells(const PooledCells& p, double lo, double hi, const HeatmapData& d,
                                  const Colormap& cmap) {
  if (p.rows <= 0 || p.cols <= 0) return {};
  QImage img(p.cols, p.rows, QImage::Format_RGB32);
  const QColor fill = cmap.maskedFill();
  const QRgb masked = fill.rgb();
  for (int r = 0; r < p.rows; ++r) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(r));
    for (int c = 0; c < p.cols; ++c) {
      const size_t e = size_t(r) * p.cols + c;
      if (d.mask_only) {  // white → the masked fill by the masked fraction
        const double m = p.masked[e];
        line[c] = qRgb(int(std::lround(255 + (fill.red() - 255) * m)),
                       int(std::lround(255 + (fill.green() - 255) * m)),
                       int(std::lround(255 + (fill.blue() - 255) * m)));
        continue;
      }
      const double t = normalizedIn(p.value[e], lo, hi);
      line[c] = std::isnan(t) ? masked : cmap.rgb(t);
    }
  }
  return img;
}

std::pair<int, int> HeatmapWidget::displayFactors(const Layout& l) const {
  // Each picture element at least a device pixel each way: no pooled maximum is lost to scaling.
  const double dpr = devicePixelRatioF();
  auto need = [dpr](double px) { return std::max(1, int(std::ceil(1.0 / (px * dpr) - 1e-9))); };
  return {need(l.ch), need(l.cw)};
}

const HeatmapWidget::Rendered& HeatmapWidget::displayedWhole(const Layout& l) {
  const auto [nr, nc] = displayFactors(l);
  const PooledCells& w = whole_.cells;
  const int kr = std::max(1, (nr + w.fr - 1) / w.fr), kc = std::max(1, (nc + w.fc - 1) / w.fc);
  if (kr == 1 && kc == 1) return whole_;
  if (display_.image.isNull() || display_.cells.fr != w.fr * kr || display_.cells.fc != w.fc * kc) {
    display_.cells = coarsen(w, kr, kc, pooling_);
    display_.lo = whole_.lo;
    display_.hi = whole_.hi;
    display_.image = colourCells(display_.cells, display_.lo, display_.hi, *data_, *cmap_);
  }
  return display_;
}

std::pair<int, int> HeatmapWidget::shownFactors(const Layout& l) const {
  const auto [nr, nc] = displayFactors(l);
  const PooledCells& w = whole_.cells;
  return {std::max(1, (nr + w.fr - 1) / w.fr) * w.fr, std::max(1, (nc + w.fc - 1) / w.fc) * w.fc};
}

void HeatmapWidget::startRender() {
  ++generation_;
  for (auto* c : {&cancel_, &window_cancel_})
    if (*c) **c = true;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  window_ = {};
  display_ = {};
  window_request_ = {};
  window_request_.fr = 0;
  const auto& d = *data_;
  PoolRequest q;
  q.r1 = d.rows;
  q.c1 = d.cols;
  q.fr = poolFactorFor(d.rows, kMaxWholePixels);
  q.fc = poolFactorFor(d.cols, kMaxWholePixels);
  q.pooling = pooling_;
  q.draw_mask = d.draw_mask;
  q.mask_only = d.mask_only;
  auto apply = [this](Rendered r) {
    whole_ = std::move(r);
    scale_lo_ = whole_.lo;
    scale_hi_ = whole_.hi;
    rendering_ = false;
    updateGeometry();  // the legend's ticks may be wider
    update();
    emit renderingDone();
  };
  if (d.rows <= 0 || d.cols <= 0 || sync_render_ || qint64(d.rows) * d.cols <= kSyncRenderCells) {
    apply(renderBlock(*cells_, d, q, *cmap_, nullptr));
    return;
  }
  rendering_ = true;
  launch(q, cancel_, false, &watcher_, apply);
}

void HeatmapWidget::launch(PoolRequest q, std::shared_ptr<std::atomic<bool>> cancel,
                           bool with_scale, QFutureWatcher<Rendered>** slot,
                           std::function<void(Rendered)> done) {
  q.cancel = cancel.get();
  const int gen = generation_;
  auto data = data_;
  auto cells = cells_;
  const Colormap* cmap = cmap_;
  const std::pair<double, double> scale{scale_lo_, scale_hi_};
  auto* watcher = new QFutureWatcher<Rendered>(this);
  connect(watcher, &QFutureWatcher<Rendered>::finished, this,
          [this, watcher, gen, slot, cancel, done = std::move(done)] {
            // Superseded (a newer window, new data): dropped even when it ran to the end.
            if (gen == generation_ && !cancel->load()) {
              Rendered r = watcher->future().takeResult();
              if (!r.cells.cancelled) done(std::move(r));
            }
            if (*slot == watcher) *slot = nullptr;
            watcher->deleteLater();
          });
  watcher->setFuture(QtConcurrent::run([data, cells, cancel, cmap, q, with_scale, scale] {
    return renderBlock(*cells, *data, q, *cmap, with_scale ? &scale : nullptr);
  }));
  *slot = watcher;
}

void HeatmapWidget::scheduleWindow() {
  if (rendering_ || sync_render_ || (whole_.cells.fr <= 1 && whole_.cells.fc <= 1)) return;
  if (!window_timer_) {
    window_timer_ = new QTimer(this);
    window_timer_->setSingleShot(true);
    window_timer_->setInterval(60);  // after a burst of scrolling or zooming, once
    connect(window_timer_, &QTimer::timeout, this, &HeatmapWidget::startWindow);
  }
  window_timer_->start();
}

void HeatmapWidget::startWindow() {
  const auto& d = *data_;
  const PooledCells& whole = whole_.cells;
  if (rendering_ || (whole.fr <= 1 && whole.fc <= 1) || d.rows <= 0 || d.cols <= 0) return;
  const Layout l = computeLayout(size());
  const auto [need_r, need_c] = displayFactors(l);
  const int fr = std::min(need_r, whole.fr), fc = std::min(need_c, whole.fc);
  auto dropWindow = [&] {
    window_request_.fr = 0;
    if (window_cancel_) *window_cancel_ = true;
    if (!window_.image.isNull()) {
      window_ = {};
      update();
    }
  };
  if (fr >= whole.fr && fc >= whole.fc) {  // the whole matrix's picture is fine enough here
    dropWindow();
    return;
  }
  const QRectF vis = QRectF(visibleRegion().boundingRect()).intersected(l.grid);
  if (vis.isEmpty()) {
    dropWindow();
    return;
  }
  const int vr0 = std::max(0, int((vis.top() - l.grid.top()) / l.ch));
  const int vr1 = std::min(d.rows, int(std::ceil((vis.bottom() - l.grid.top()) / l.ch)));
  const int vc0 = std::max(0, int((vis.left() - l.grid.left()) / l.cw));
  const int vc1 = std::min(d.cols, int(std::ceil((vis.right() - l.grid.left()) / l.cw)));
  const PoolRequest& w = window_request_;
  if (w.fr == fr && w.fc == fc && w.r0 <= vr0 && w.r1 >= vr1 && w.c0 <= vc0 && w.c1 >= vc1) return;
  // The visible cells and half as much again on every side, on the element grid.
  auto span = [](int a0, int a1, int n, int f, int* b0, int* b1) {
    const int margin = (a1 - a0) / 2;
    *b0 = std::max(0, a0 - margin) / f * f;
    *b1 = std::min(n, (std::min(n, a1 + margin) + f - 1) / f * f);
  };
  PoolRequest q;
  span(vr0, vr1, d.rows, fr, &q.r0, &q.r1);
  span(vc0, vc1, d.cols, fc, &q.c0, &q.c1);
  q.fr = fr;
  q.fc = fc;
  q.pooling = pooling_;
  q.draw_mask = d.draw_mask;
  q.mask_only = d.mask_only;
  window_request_ = q;
  // A window asked for before this one is of no use any more.
  if (window_cancel_) *window_cancel_ = true;
  window_cancel_ = std::make_shared<std::atomic<bool>>(false);
  launch(q, window_cancel_, true, &window_watcher_, [this](Rendered r) {
    window_ = std::move(r);
    update();
  });
}

bool HeatmapWidget::cellDrawn(int r, int c, float* value, float* masked) const {
  for (const Rendered* b : {&window_, &whole_}) {
    if (b->image.isNull() || b->cells.fr != 1 || b->cells.fc != 1) continue;
    const int64_t e = b->cells.indexOf(r, c);
    if (e < 0) continue;
    *value = b->cells.value[size_t(e)];
    *masked = b->cells.masked[size_t(e)];
    return true;
  }
  return false;
}

double HeatmapWidget::normalizedValue(double v) const {
  return normalizedIn(v, scale_lo_, scale_hi_);
}

double HeatmapWidget::maxLabelWidth(const QStringList& labels) const {
  const QFontMetricsF fm(hfont());
  double w = 0;
  // Long sequences: measuring every label is wasted work beyond a few thousand.
  const int n = std::min<int>(int(labels.size()), 4096);
  for (int i = 0; i < n; ++i) w = std::max(w, fm.horizontalAdvance(labels[i]));
  return std::min(w, kMaxLabelWidth);
}

std::pair<double, double> HeatmapWidget::labelWidths() const {
  const QString font = hfont().key();
  if (label_widths_.data_serial != data_serial_ || label_widths_.font != font) {
    const auto& d = *data_;
    label_widths_ = {data_serial_, font, d.row_labels.isEmpty() ? 0 : maxLabelWidth(d.row_labels),
                     d.col_labels.isEmpty() ? 0 : maxLabelWidth(d.col_labels)};
  }
  return {label_widths_.row, label_widths_.col};
}

double HeatmapWidget::titleHeight() const {
  const auto& d = *data_;
  if (d.title.isEmpty()) return 0;
  return (d.title.count('\n') + 1) * (QFontMetricsF(hfont()).height() + 2) + 6;
}

HeatmapWidget::Layout HeatmapWidget::computeLayout(QSize size) const {
  Layout l;
  const auto& d = *data_;
  const QFontMetricsF fm(hfont());
  const double lh = fm.height();
  double top = kPad, left = kPad;
  top += titleHeight();
  if (!d.col_title.isEmpty()) top += lh + 2;
  if (!d.row_title.isEmpty()) left += lh + 4;
  const auto [row_label_w, col_label_w] = labelWidths();
  l.row_label_w = d.row_labels.isEmpty() ? 0 : row_label_w + 8;
  left += l.row_label_w;

  double legend_w = 0;
  if (show_legend_) {
    const double tick_w = std::max({fm.horizontalAdvance(formatTick(scale_lo_)),
                                    fm.horizontalAdvance(formatTick(scale_hi_)),
                                    fm.horizontalAdvance(tr("allowed"))});
    double pooling_w = 0;
    for (const QString& line : poolingLegend({99, 99}))  // the widest it says
      pooling_w = std::max(pooling_w, fm.horizontalAdvance(line));
    legend_w = std::max({18 + kLegendBar + 6 + tick_w, 18 + fm.horizontalAdvance(d.value_name),
                         18 + pooling_w}) +
               4;
  }
  const double right = kPad + legend_w;
  const double bottom = kPad;
  const int rows = std::max(d.rows, 1), cols = std::max(d.cols, 1);

  // Cell width and height: square unless the data allows stretching (then each axis fills).
  auto cellsFor = [&](double col_labels_h) -> std::pair<double, double> {
    if (!fit_) return {cell_px_, cell_px_};
    const double aw = (size.width() - left - right) / cols;
    const double ah = (size.height() - top - col_labels_h - bottom) / rows;
    auto snap = [](double c) { return std::max(c >= 2 ? std::floor(c) : c, 0.05); };
    if (d.square_cells) {
      const double c = snap(std::min({aw, ah, double(max_fit_cell_)}));
      return {c, c};
    }
    return {snap(std::min(aw, 4.0 * max_fit_cell_)), snap(std::min(ah, double(max_fit_cell_)))};
  };
  const double horizontal_h = d.col_labels.isEmpty() ? 0 : lh + 4;
  auto [cw, ch] = cellsFor(horizontal_h);
  l.col_vertical = false;
  l.col_label_h = horizontal_h;
  if (!d.col_labels.isEmpty() && col_label_w + 6 > cw) {
    l.col_vertical = true;
    l.col_label_h = col_label_w + 8;
    std::tie(cw, ch) = cellsFor(l.col_label_h);
  }
  l.cw = cw;
  l.ch = ch;
  l.cell = std::min(cw, ch);
  l.grid = QRectF(left, top + l.col_label_h, cw * d.cols, ch * d.rows);
  l.row_step = std::max(1, int(std::ceil(lh * 0.9 / ch)));
  l.col_step = l.col_vertical ? std::max(1, int(std::ceil(lh * 0.9 / cw))) : 1;
  if (show_legend_) {
    const double lt = l.grid.top() + 1.6 * lh + 6;
    double lhgt = std::clamp(l.grid.height() - 1.6 * lh - 6, 90.0, 260.0);
    // In fit mode keep the masked swatch under the bar inside the widget.
    const double below = 2 * lh + 16 + poolingLegendLines() * lh;
    if (fit_) lhgt = std::max(40.0, std::min(lhgt, size.height() - lt - below - kPad));
    if (d.mask_only) lhgt = 2 * kLegendBar + 8;
    l.legend = QRectF(l.grid.right() + 18, lt, kLegendBar, lhgt);
  }
  return l;
}

QSize HeatmapWidget::sizeForCell(double cell) const {
  const bool was = fit_;
  auto* self = const_cast<HeatmapWidget*>(this);
  const double saved = cell_px_;
  self->fit_ = false;
  self->cell_px_ = cell;
  const Layout l = computeLayout(QSize(0, 0));
  self->fit_ = was;
  self->cell_px_ = saved;
  const QFontMetricsF fm(hfont());
  double w = l.grid.right() + kPad;
  double h = l.grid.bottom() + kPad;
  if (show_legend_) {
    w = std::max(w, l.legend.right() + 6 + fm.horizontalAdvance(tr("allowed")) + kPad);
    h = std::max(h, l.legend.bottom() + (2.5 + poolingLegendLines()) * fm.height() + 10 + kPad);
  }
  return QSize(int(std::ceil(w)), int(std::ceil(h)));
}

double HeatmapWidget::labelledCell() const {
  // A label every row while ch ≥ 0.9 line heights (computeLayout's row_step), the same for the
  // columns when their labels stand upright.
  return std::ceil(QFontMetricsF(hfont()).height() * 0.9);
}

QSize HeatmapWidget::labelledSize() const {
  return sizeForCell(labelledCell());
}

QSize HeatmapWidget::tightSize(QSize available, double max_cell, double* cell_out) const {
  // sizeForCell grows with the cell: the largest cell that fits, by bisection.
  double lo = 0.25, hi = std::max(0.25, max_cell);
  auto fits = [&](double c) {
    const QSize s = sizeForCell(c);
    return s.width() <= available.width() && s.height() <= available.height();
  };
  if (fits(hi)) {
    lo = hi;
  } else {
    for (int k = 0; k < 40; ++k) {
      const double mid = (lo + hi) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    if (lo >= 2) lo = std::floor(lo);  // whole pixels: crisp cell edges
  }
  if (cell_out) *cell_out = lo;
  QSize s = sizeForCell(lo);
  // The title is not elided in a figure: room for its widest line.
  if (!data_->title.isEmpty()) {
    QFont bold = hfont();
    bold.setBold(true);
    const QFontMetricsF fb(bold);
    double w = 0;
    for (const QString& line : data_->title.split('\n'))
      w = std::max(w, fb.horizontalAdvance(line));
    s.setWidth(std::min(available.width(), std::max(s.width(), int(std::ceil(w + 2 * kPad)))));
  }
  return s;
}

QSize HeatmapWidget::sizeHint() const {
  if (!fit_) return sizeForCell(cell_px_);
  QSize s = sizeForCell(28);
  return s.boundedTo(QSize(900, 700)).expandedTo(QSize(240, 180));
}

QSize HeatmapWidget::minimumSizeHint() const {
  if (!fit_) return sizeForCell(cell_px_);
  return QSize(160, 120);
}

QString HeatmapWidget::thinnedTitle(const QString& title, int step) {
  // Too many tokens for a label each at this size: said, not left to be guessed.
  return step <= 1 ? title : tr("%1 · one label in %2").arg(title).arg(step);
}

QRectF HeatmapWidget::rowTitleRect(QString* text) const {
  const HeatmapData& d = *data_;
  if (d.row_title.isEmpty()) return {};
  const QFontMetricsF fm(hfont());
  const double lh = fm.height();
  const Layout l = computeLayout(size());
  // Beside the rows, from their top down; moved up where it would run off the widget (never into
  // the title above), and cut short (with "…") only where there is not room for it there.
  const double top = kPad + titleHeight();
  const double room = std::max(0.0, height() - kPad - top);
  QString t = thinnedTitle(d.row_title, d.row_labels.isEmpty() ? 1 : l.row_step);
  double tw = fm.horizontalAdvance(t) + 4;
  if (tw > room) {
    t = fm.elidedText(t, Qt::ElideRight, std::max(0.0, room - 4));
    tw = fm.horizontalAdvance(t) + 4;
  }
  double y = std::max(l.grid.center().y(), l.grid.top() + tw / 2);
  y = std::max(top + tw / 2, std::min(y, height() - kPad - tw / 2));
  if (text) *text = t;
  return QRectF(kPad, y - tw / 2, lh, tw);
}

QRectF HeatmapWidget::gridRect() const {
  return computeLayout(size()).grid;
}

QRectF HeatmapWidget::cellRect(int row, int col) const {
  const Layout l = computeLayout(size());
  return QRectF(l.grid.left() + col * l.cw, l.grid.top() + row * l.ch, l.cw, l.ch);
}

QPoint HeatmapWidget::cellAt(const QPointF& pos) const {
  const Layout l = computeLayout(size());
  if (!l.grid.contains(pos) || l.cell <= 0) return {-1, -1};
  const int c = std::min(int((pos.x() - l.grid.left()) / l.cw), data_->cols - 1);
  const int r = std::min(int((pos.y() - l.grid.top()) / l.ch), data_->rows - 1);
  return {c, r};
}

QFont HeatmapWidget::smallFont() const {
  QFont small = hfont();
  small.setPointSizeF(std::max(6.0, hfont().pointSizeF() * 0.85));
  return small;
}

HeatmapWidget::CellWriting HeatmapWidget::cellWriting(const Layout& l) const {
  const HeatmapData& d = *data_;
  CellWriting w;
  if (d.mask_only || rendering_) return w;
  const QFontMetricsF fm(hfont()), fs(smallFont());
  if (!d.cell_texts.isEmpty()) {
    // A one-character token (a character model's) fits where a word would not: each cell's text
    // is fitted on its own, and a cell where nothing fits stays plain.
    if (l.ch >= fm.height() + 4 && l.cw >= fm.horizontalAdvance(QLatin1Char('M')) + 4) {
      w.texts = true;
    } else if (l.ch >= fs.height() + 2 && l.cw >= fs.horizontalAdvance(QLatin1Char('M')) + 4) {
      w.texts = true;
      w.small_texts = true;
    }
    return w;
  }
  w.values = d.show_values && l.cw >= fm.horizontalAdvance(QStringLiteral("0.00")) + 8 &&
             l.ch >= fm.height() + 6;
  return w;
}

QString HeatmapWidget::fittedCellText(const QString& first, const QFont& f, double width) {
  const QFontMetricsF fm(f);
  const QString shown = fm.elidedText(first, Qt::ElideRight, width - 4);
  return shown == QStringLiteral("…") ? QString() : shown;
}

int HeatmapWidget::cellTextsWritten() const {
  const HeatmapData& d = *data_;
  const Layout l = computeLayout(size());
  const CellWriting writing = cellWriting(l);
  if (!writing.texts) return 0;
  const QFont f = writing.small_texts ? smallFont() : hfont();
  int n = 0;
  for (int r = 0; r < d.rows; ++r)
    for (int c = 0; c < d.cols; ++c)
      if (!d.drawMasked(r, c) && !std::isnan(d.value(r, c)) &&
          !fittedCellText(d.cell_texts.value(qsizetype(r) * d.cols + c).section('\n', 0, 0), f,
                          l.cw)
               .isEmpty())
        ++n;
  return n;
}

bool HeatmapWidget::allRowLabelsDrawn() const {
  return data_->rows > 0 && computeLayout(size()).row_step == 1;
}

bool HeatmapWidget::allColLabelsDrawn() const {
  return data_->cols > 0 && computeLayout(size()).col_step == 1;
}

QString HeatmapWidget::tooltipText(int row, int col) const {
  const auto& d = *data_;
  if (row < 0 || col < 0 || row >= d.rows || col >= d.cols) return {};
  const qsizetype i = qsizetype(row) * d.cols + col;
  auto label = [](const QStringList& labels, int k) {
    return k < labels.size() ? QStringLiteral("“%1”").arg(labels[k]) : QString();
  };
  QStringList lines;
  // Rows and columns count from 1, like layers and heads; the token says which one it is.
  lines << tr("%1 %2 · row %3 of %4")
               .arg(capitalized(d.row_noun), label(d.row_labels, row))
               .arg(row + 1)
               .arg(d.rows);
  lines << tr("%1 %2 · column %3 of %4")
               .arg(capitalized(d.col_noun), label(d.col_labels, col))
               .arg(col + 1)
               .arg(d.cols);
  const bool masked = d.isMasked(row, col);
  if (!d.mask_only) {
    const bool probs = d.hasProbs(), scores = d.hasScores();
    if (probs) lines << tr("Probability: %1").arg(formatNumber(d.prob(row, col)));
    if (scores) lines << tr("Raw score (before the mask): %1").arg(formatNumber(d.score(row, col)));
    if ((!probs && !scores) || d.value_in_tooltip)
      lines << QStringLiteral("%1: %2").arg(capitalized(d.value_name),
                                            formatNumber(d.value(row, col)));
  }
  // Only matrices that have a mask say whether the cell was masked.
  if (d.hasMask()) lines << (masked ? tr("Masked: yes") : tr("Masked: no"));
  if (i < d.cell_notes.size() && !d.cell_notes[i].isEmpty()) lines << d.cell_notes[i];
  if (!d.tooltip_note.isEmpty()) lines << d.tooltip_note;
  // Where the picture under the mouse pools several cells, say so: its colour is theirs.
  const std::pair<int, int> f = !window_.image.isNull() && window_.cells.indexOf(row, col) >= 0
                                    ? std::pair{window_.cells.fr, window_.cells.fc}
                                    : shownFactors(computeLayout(size()));
  if (f.first > 1 || f.second > 1)
    lines << (d.mask_only ? tr("The colour here is the share of %1 × %2 cells that are masked; "
                               "zoom in for each cell.")
              : pooling_ == Pooling::Max
                  ? tr("The colour here is the largest of %1 × %2 cells; zoom in for each cell.")
                  : tr("The colour here is the mean of %1 × %2 cells; zoom in for each cell."))
                 .arg(f.first)
                 .arg(f.second);
  return lines.join('\n');
}

void HeatmapWidget::drawLegend(QPainter& p, const Layout& l) const {
  const auto& d = *data_;
  const QFontMetricsF fm(hfont());
  const QRectF bar = l.legend;
  p.setPen(palette().color(QPalette::Text));
  p.drawText(QPointF(bar.left(), bar.top() - fm.ascent() / 2 - fm.descent() - 5), d.value_name);
  double y = bar.top();
  auto swatch = [&](double yy, bool masked, const QString& text) {
    const QRectF r(bar.left(), yy, kLegendBar, kLegendBar);
    p.fillRect(r, masked ? cmap_->maskedFill() : QColor(Qt::white));
    if (masked) p.fillRect(r, QBrush(cmap_->maskedHatch(), Qt::BDiagPattern));
    p.setPen(QColor(0x80, 0x80, 0x80));
    p.drawRect(r);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QPointF(r.right() + 6, r.center().y() + fm.ascent() / 2 - 1), text);
  };
  // How a matrix larger than the screen is drawn, below the rest of the legend.
  auto poolingNote = [&](double below) {
    const QStringList lines = poolingLegend(
        !window_.image.isNull() ? std::pair{window_.cells.fr, window_.cells.fc} : shownFactors(l));
    p.setPen(palette().color(QPalette::PlaceholderText).darker(130));
    for (int k = 0; k < lines.size(); ++k)
      p.drawText(QPointF(bar.left(), below + fm.ascent() + k * fm.height()), lines[k]);
  };
  if (d.mask_only) {
    swatch(y, false, tr("allowed"));
    swatch(y + kLegendBar + 8, true, tr("masked"));
    poolingNote(y + 2 * (kLegendBar + 8));
    return;
  }
  // The gradient: top of the bar = vmax.
  // A gradient rather than an image: it stays vector in SVG and PDF.
  QLinearGradient ramp(bar.bottomLeft(), bar.topLeft());
  for (int k = 0; k <= 32; ++k) ramp.setColorAt(k / 32.0, cmap_->color(k / 32.0));
  p.fillRect(bar, ramp);
  p.setPen(QColor(0x80, 0x80, 0x80));
  p.drawRect(bar);
  p.setPen(palette().color(QPalette::Text));
  const double ticks[3] = {scale_hi_, (scale_lo_ + scale_hi_) / 2, scale_lo_};
  for (int k = 0; k < 3; ++k) {
    const double ty = bar.top() + bar.height() * k / 2.0;
    p.drawLine(QPointF(bar.right(), ty), QPointF(bar.right() + 3, ty));
    p.drawText(QPointF(bar.right() + 6, ty + fm.ascent() / 2 - 1), formatTick(ticks[k]));
  }
  const bool any_masked = d.draw_mask && whole_.cells.any_masked;
  double below = bar.bottom() + 12;
  if (any_masked) {
    swatch(below, true, tr("masked"));
    below += kLegendBar + 8;
  }
  poolingNote(below);
}

int HeatmapWidget::poolingLegendLines() const {
  // Room for the note wherever cells may be pooled on screen (the layout cannot ask the layout).
  return std::max(data_->rows, data_->cols) > kMayPoolCells ? 2 : 0;
}

QStringList HeatmapWidget::poolingLegend(std::pair<int, int> f) const {
  const auto [fr, fc] = f;
  if ((fr <= 1 && fc <= 1) || poolingLegendLines() == 0) return {};
  // A mask picture blends allowed and masked by the share of its cells that are masked.
  const QString how = data_->mask_only           ? tr("pixel: the share of\n%1 × %2 cells masked")
                      : pooling_ == Pooling::Max ? tr("pixel: max of\n%1 × %2 cells")
                                                 : tr("pixel: mean of\n%1 × %2 cells");
  return how.arg(fr).arg(fc).split('\n');
}

QFont HeatmapWidget::hfont() const {
  QFont f = font();
  if (font_scale_ != 1.0) f.setPointSizeF(f.pointSizeF() * font_scale_);
  return f;
}

void HeatmapWidget::setFontScale(double scale) {
  font_scale_ = scale;
  updateGeometry();
  update();
}

QSize HeatmapWidget::labelledMinimumSize(int max_rows) const {
  // Square cells just tall enough for a label each (up to max_rows rows).
  const QFontMetricsF fm(hfont());
  const int rows = std::min(std::max(data_->rows, 1), max_rows);
  const double cell = fm.height() * 0.95;
  const QSize s = sizeForCell(cell);
  const double extra = std::max(0, data_->rows - rows) * cell;
  return QSize(160, int(std::ceil(s.height() - extra)));
}

void HeatmapWidget::paintEvent(QPaintEvent* event) {
  QPainter p(this);
  p.setFont(hfont());
  p.fillRect(rect(), palette().color(QPalette::Base));
  const auto& d = *data_;
  const QFontMetricsF fm(hfont());
  const QColor text = palette().color(QPalette::Text);
  if (d.rows <= 0 || d.cols <= 0) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
               d.title.isEmpty() ? tr("Nothing to show yet") : d.title);
    return;
  }
  const Layout l = computeLayout(size());
  const double lh = fm.height();

  if (!d.title.isEmpty()) {
    // The first line bold (what is shown), the others plain (e.g. the sentence).
    QFont bold = hfont();
    bold.setBold(true);
    const QStringList lines = d.title.split('\n');
    for (int k = 0; k < lines.size(); ++k) {
      p.setFont(k == 0 ? bold : hfont());
      p.setPen(text);
      const QFontMetricsF fl(p.font());
      p.drawText(QRectF(kPad, kPad + k * (lh + 2), width() - 2 * kPad, lh + 2),
                 Qt::AlignLeft | Qt::AlignVCenter,
                 fl.elidedText(lines[k], Qt::ElideRight, width() - 2 * kPad));
    }
    p.setFont(hfont());
  }

  // Cells: one image scaled up on screen; rectangles on vector devices (SVG, PDF), where an
  // image would be a blurred bitmap.
  const QPaintEngine::Type engine =
      p.paintEngine() ? p.paintEngine()->type() : QPaintEngine::Raster;
  const bool vector = vector_cells_ || engine == QPaintEngine::SVG || engine == QPaintEngine::Pdf ||
                      engine == QPaintEngine::Picture;
  const QImage& image = whole_.image;
  if (image.isNull() || rendering_) {
    p.fillRect(l.grid, palette().color(QPalette::AlternateBase));
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(l.grid, Qt::AlignCenter, tr("Rendering…"));
  } else if (vector && whole_.cells.fr == 1 && whole_.cells.fc == 1 &&
             qint64(d.rows) * d.cols <= kMaxVectorCells) {
    // Runs of equal colour along a row become one rectangle. A viewer anti-aliases each
    // rectangle's edges on its own, so two abutting at a fractional pixel let the background show
    // through as a seam (Chromium, PDF viewers): each reaches under its right and lower neighbours
    // (drawn after it, over the overlap), except at the grid's edge.
    const double bleed_x = std::min(0.75, l.cw / 2), bleed_y = std::min(0.75, l.ch / 2);
    for (int r = 0; r < d.rows; ++r) {
      const QRgb* line = reinterpret_cast<const QRgb*>(image.constScanLine(r));
      const double by = r + 1 < d.rows ? bleed_y : 0.0;
      for (int c = 0; c < d.cols;) {
        int e = c + 1;
        while (e < d.cols && line[e] == line[c]) ++e;
        const double bx = e < d.cols ? bleed_x : 0.0;
        p.fillRect(QRectF(l.grid.left() + c * l.cw, l.grid.top() + r * l.ch, (e - c) * l.cw + bx,
                          l.ch + by),
                   QColor::fromRgb(line[c]));
        c = e;
      }
    }
  } else {
    // Each block's elements cover f × f cells (fewer at the matrix's last row and column).
    // Each element at least a device pixel (displayedWhole pools further where the whole picture's
    // are smaller): drawn without smoothing, which would average maxima away.
    auto drawBlock = [&](const Rendered& b) {
      const PooledCells& c = b.cells;
      const QRectF target(l.grid.left() + c.c0 * l.cw, l.grid.top() + c.r0 * l.ch,
                          c.cols * c.fc * l.cw, c.rows * c.fr * l.ch);
      p.save();
      p.setClipRect(target.intersected(l.grid));
      p.drawImage(target, b.image);
      p.restore();
    };
    drawBlock(displayedWhole(l));
    if (!window_.image.isNull()) drawBlock(window_);
    scheduleWindow();
  }

  // Visible cell range (the widget may be much larger than the viewport when zoomed).
  const QRectF vis = QRectF(event->rect()).intersected(l.grid);
  int r0 = 0, r1 = -1, c0 = 0, c1 = -1;
  if (!vis.isEmpty() && l.cell > 0) {
    r0 = std::max(0, int((vis.top() - l.grid.top()) / l.ch));
    r1 = std::min(d.rows - 1, int((vis.bottom() - l.grid.top()) / l.ch));
    c0 = std::max(0, int((vis.left() - l.grid.left()) / l.cw));
    c1 = std::min(d.cols - 1, int((vis.right() - l.grid.left()) / l.cw));
  }

  if (!rendering_ && l.cell >= 5) {
    // Hatch masked cells so they never read as 0-probability cells.
    const QBrush hatch(cmap_->maskedHatch(), Qt::BDiagPattern);
    float v = 0, m = 0;
    for (int r = r0; r <= r1; ++r)
      for (int c = c0; c <= c1; ++c)
        if (cellDrawn(r, c, &v, &m) && m > 0 && (d.draw_mask || !d.mask_only))
          p.fillRect(QRectF(l.grid.left() + c * l.cw, l.grid.top() + r * l.ch, l.cw, l.ch), hatch);
  }
  if (l.cell >= 14 || (d.mask_only && l.cell >= 4)) {
    // Thin separators between cells.
    p.setPen(QPen(d.mask_only ? QColor(0xc8, 0xc8, 0xc8) : palette().color(QPalette::Base), 1));
    for (int r = r0; r <= r1 + 1 && r <= d.rows; ++r) {
      const double y = l.grid.top() + r * l.ch;
      p.drawLine(QPointF(l.grid.left(), y), QPointF(l.grid.right(), y));
    }
    for (int c = c0; c <= c1 + 1 && c <= d.cols; ++c) {
      const double x = l.grid.left() + c * l.cw;
      p.drawLine(QPointF(x, l.grid.top()), QPointF(x, l.grid.bottom()));
    }
  }
  // Values inside cells that are large enough to hold them; or each cell's own text (a token, and
  // a second line below it when the cell has room for two).
  const CellWriting writing = cellWriting(l);
  if (writing.texts || writing.values) {
    const QFont small = smallFont();
    const QFontMetricsF fs(small);
    const QFont text_font = writing.small_texts ? small : hfont();
    const bool two_lines = !writing.small_texts && l.ch >= lh + fs.height() + 6;
    float v = 0, m = 0;
    for (int r = r0; r <= r1; ++r)
      for (int c = c0; c <= c1; ++c) {
        if (!cellDrawn(r, c, &v, &m) || m > 0 || std::isnan(v)) continue;
        const double t = normalizedValue(v);
        p.setPen(cmap_->textOn(t));
        const QRectF cell(l.grid.left() + c * l.cw, l.grid.top() + r * l.ch, l.cw, l.ch);
        if (writing.values) {
          p.setFont(small);
          p.drawText(cell, Qt::AlignCenter,
                     std::abs(v) >= 100 ? QString::number(v, 'g', 3) : QString::number(v, 'f', 2));
          continue;
        }
        const QString text = d.cell_texts.value(qsizetype(r) * d.cols + c);
        const QString second = text.section('\n', 1);
        const QString shown = fittedCellText(text.section('\n', 0, 0), text_font, l.cw);
        if (shown.isEmpty()) continue;
        p.setFont(text_font);
        if (second.isEmpty() || !two_lines) {
          p.drawText(cell, Qt::AlignCenter, shown);
          continue;
        }
        const double top = cell.center().y() - (lh + fs.height()) / 2;
        p.drawText(QRectF(cell.left(), top, cell.width(), lh), Qt::AlignCenter, shown);
        p.setFont(small);
        p.drawText(QRectF(cell.left(), top + lh, cell.width(), fs.height()), Qt::AlignCenter,
                   fs.elidedText(second, Qt::ElideRight, l.cw - 4));
      }
    p.setFont(hfont());
  }
  p.setPen(QColor(0x60, 0x60, 0x60));
  p.setBrush(Qt::NoBrush);
  p.drawRect(l.grid.adjusted(-0.5, -0.5, 0.5, 0.5));

  // Highlighted row (e.g. the current decoding step) and the hovered cell.
  if (d.highlight_col >= 0 && d.highlight_col < d.cols) {
    p.setPen(QPen(QColor(0xff, 0x6f, 0x00), 2));
    p.drawRect(QRectF(l.grid.left() + d.highlight_col * l.cw, l.grid.top(), l.cw, l.grid.height())
                   .adjusted(-1, -1, 1, 1));
  }
  if (d.highlight_row >= 0 && d.highlight_row < d.rows) {
    p.setPen(QPen(QColor(0xff, 0x6f, 0x00), 2));
    p.drawRect(QRectF(l.grid.left(), l.grid.top() + d.highlight_row * l.ch, l.grid.width(), l.ch)
                   .adjusted(-1, -1, 1, 1));
  }
  if (hover_.x() >= 0 && l.cell >= 3) {
    p.setPen(QPen(QColor(0xff, 0xff, 0xff), 2));
    p.drawRect(
        QRectF(l.grid.left() + hover_.x() * l.cw, l.grid.top() + hover_.y() * l.ch, l.cw, l.ch));
    p.setPen(QPen(QColor(0, 0, 0), 1));
    p.drawRect(QRectF(l.grid.left() + hover_.x() * l.cw - 1, l.grid.top() + hover_.y() * l.ch - 1,
                      l.cw + 2, l.ch + 2));
  }

  // Row labels (queries), right-aligned next to the matrix.
  p.setPen(text);
  if (!d.row_labels.isEmpty()) {
    const int lr0 = std::max(0, r0 - 1);
    const int lr1 = std::min(d.rows - 1, r1 + 1);
    for (int r = lr0; r <= lr1; ++r) {
      if (r % l.row_step != 0 || r >= d.row_labels.size()) continue;
      const double y = l.grid.top() + r * l.ch;
      const QRectF box(l.grid.left() - l.row_label_w, y + l.ch / 2 - lh / 2, l.row_label_w - 6, lh);
      p.drawText(box, Qt::AlignRight | Qt::AlignVCenter,
                 fm.elidedText(d.row_labels[r], Qt::ElideRight, kMaxLabelWidth));
    }
  }
  // Column labels (keys), above the matrix; vertical when they do not fit horizontally.
  if (!d.col_labels.isEmpty()) {
    const int lc0 = std::max(0, c0 - 1);
    const int lc1 = std::min(d.cols - 1, c1 + 1);
    for (int c = lc0; c <= lc1; ++c) {
      if (c % l.col_step != 0 || c >= d.col_labels.size()) continue;
      const QString s = fm.elidedText(d.col_labels[c], Qt::ElideRight, kMaxLabelWidth);
      const double x = l.grid.left() + c * l.cw;
      if (l.col_vertical) {
        p.save();
        p.translate(x + l.cw / 2, l.grid.top() - 5);
        p.rotate(-90);
        p.drawText(QRectF(0, -lh / 2, l.col_label_h, lh), Qt::AlignLeft | Qt::AlignVCenter, s);
        p.restore();
      } else {
        p.drawText(QRectF(x - 20, l.grid.top() - l.col_label_h, l.cw + 40, l.col_label_h - 3),
                   Qt::AlignHCenter | Qt::AlignBottom, s);
      }
    }
  }
  // Axis titles.
  QFont title_font = hfont();
  title_font.setItalic(true);
  p.setFont(title_font);
  p.setPen(palette().color(QPalette::PlaceholderText).darker(130));
  if (!d.col_title.isEmpty()) {
    const QString title = thinnedTitle(d.col_title, d.col_labels.isEmpty() ? 1 : l.col_step);
    const double tw = fm.horizontalAdvance(title) + 4;
    const double x = std::max(kPad, l.grid.center().x() - tw / 2);
    p.drawText(QRectF(x, l.grid.top() - l.col_label_h - lh - 2, tw + 10, lh), Qt::AlignLeft, title);
  }
  if (!d.row_title.isEmpty()) {
    QString text;
    const QRectF r = rowTitleRect(&text);
    p.save();
    p.translate(r.center());
    p.rotate(-90);
    p.drawText(QRectF(-r.height() / 2, -r.width() / 2, r.height(), r.width()), Qt::AlignCenter,
               text);
    p.restore();
  }
  p.setFont(hfont());
  if (show_legend_) drawLegend(p, l);
}

void HeatmapWidget::mouseMoveEvent(QMouseEvent* event) {
  const QPoint cell = cellAt(event->position());
  if (cell != hover_) {
    hover_ = cell;
    update();
    emit cellHovered(cell.y(), cell.x());
  }
  QWidget::mouseMoveEvent(event);
}

void HeatmapWidget::mousePressEvent(QMouseEvent* event) {
  const QPoint cell = cellAt(event->position());
  if (cell.x() >= 0 && event->button() == Qt::LeftButton) emit cellClicked(cell.y(), cell.x());
  QWidget::mousePressEvent(event);
}

void HeatmapWidget::leaveEvent(QEvent* event) {
  if (hover_.x() >= 0) {
    hover_ = {-1, -1};
    update();
    emit cellHovered(-1, -1);
  }
  QWidget::leaveEvent(event);
}

bool HeatmapWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(event);
    const QPoint cell = cellAt(he->pos());
    if (cell.x() >= 0) {
      QToolTip::showText(he->globalPos(), tooltipText(cell.y(), cell.x()), this,
                         cellRect(cell.y(), cell.x()).toAlignedRect());
    } else {
      QToolTip::hideText();
      event->ignore();
    }
    return true;
  }
  return QWidget::event(event);
}

void HeatmapWidget::changeEvent(QEvent* event) {
  // QFont::key() leaves out some of what a width depends on (kerning, hinting): measure again.
  if (event->type() == QEvent::FontChange) label_widths_.data_serial = -1;
  QWidget::changeEvent(event);
}

// ---------------------------------------------------------------------------------------------

HeatmapView::HeatmapView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  toolbar_ = new QWidget(this);
  auto* tl = new QHBoxLayout(toolbar_);
  tl->setContentsMargins(0, 0, 0, 0);
  auto button = [&](const QString& text, const QString& tip) {
    auto* b = new QToolButton(toolbar_);
    b->setText(text);
    b->setToolTip(tip);
    b->setAutoRaise(true);
    tl->addWidget(b);
    return b;
  };
  connect(button(QStringLiteral("−"), tr("Zoom out (Ctrl+−, Ctrl+wheel)")), &QToolButton::clicked,
          this, &HeatmapView::zoomOut);
  connect(button(tr("Fit"), tr("Fit the matrix to the window (Ctrl+0)")), &QToolButton::clicked,
          this, &HeatmapView::zoomFit);
  connect(button(QStringLiteral("+"), tr("Zoom in (Ctrl++, Ctrl+wheel)")), &QToolButton::clicked,
          this, &HeatmapView::zoomIn);
  zoom_label_ = new QLabel(toolbar_);
  zoom_label_->setForegroundRole(QPalette::PlaceholderText);
  tl->addWidget(zoom_label_);
  tl->addStretch(1);
  // Only for a matrix larger than the screen: how its pixels pool their cells.
  pooling_ = new QComboBox(toolbar_);
  pooling_->addItem(tr("max of the cells"), int(Pooling::Max));
  pooling_->addItem(tr("mean of the cells"), int(Pooling::Mean));
  pooling_->setToolTip(
      tr("The matrix has more cells than the screen has pixels: each pixel shows the largest of "
         "its cells (a single sharp key stays visible) or their mean. Zoom in to see every "
         "cell."));
  pooling_->setVisible(false);
  tl->addWidget(pooling_);
  layout->addWidget(toolbar_);

  scroll_ = new QScrollArea(this);
  scroll_->setFrameShape(QFrame::NoFrame);
  scroll_->setWidgetResizable(true);
  heatmap_ = new HeatmapWidget;
  scroll_->setWidget(heatmap_);
  scroll_->viewport()->installEventFilter(this);
  layout->addWidget(scroll_, 1);
  zoom_label_->setText(tr("fit to window"));
  connect(pooling_, &QComboBox::currentIndexChanged, this,
          [this] { heatmap_->setPooling(Pooling(pooling_->currentData().toInt())); });
  connect(heatmap_, &HeatmapWidget::renderingDone, this,
          [this] { pooling_->setVisible(heatmap_->poolFactor() > 1); });
}

void HeatmapView::setToolbarVisible(bool visible) {
  toolbar_->setVisible(visible);
}

void HeatmapView::setZoom(double cell) {
  heatmap_->setFit(false);
  scroll_->setWidgetResizable(false);
  heatmap_->setCellSize(cell);
  heatmap_->adjustSize();
  zoom_label_->setText(tr("%1 px per cell").arg(QString::number(heatmap_->cellSize(), 'g', 3)));
}

void HeatmapView::zoomIn() {
  setZoom(std::max(2.0, std::ceil(heatmap_->cellSize() * 1.25)));
}

void HeatmapView::zoomOut() {
  setZoom(std::max(0.25, heatmap_->cellSize() / 1.25));
}

void HeatmapView::zoomFit() {
  heatmap_->setFit(true);
  scroll_->setWidgetResizable(true);
  zoom_label_->setText(tr("fit to window"));
}

bool HeatmapView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == scroll_->viewport() && event->type() == QEvent::Wheel) {
    auto* we = static_cast<QWheelEvent*>(event);
    if (we->modifiers() & Qt::ControlModifier) {
      if (we->angleDelta().y() > 0) zoomIn();
      if (we->angleDelta().y() < 0) zoomOut();
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

}  // namespace attnviz::gui

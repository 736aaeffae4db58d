#include "widgets/heatmap.h"

#include <QApplication>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPaintEngine>
#include <QPainter>
#include <QPainterPath>
#include <QScrollBar>
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

}  // namespace

double HeatmapData::normalized(int r, int c) const {
  const double v = value(r, c);
  if (std::isnan(v)) return std::nan("");
  if (vmax > vmin) return std::clamp((v - vmin) / (vmax - vmin), 0.0, 1.0);
  return v >= vmax ? 1.0 : 0.0;
}

QImage renderCells(const HeatmapData& d, const Colormap& cmap) {
  if (d.rows <= 0 || d.cols <= 0) return {};
  QImage img(d.cols, d.rows, QImage::Format_RGB32);
  const QRgb masked = cmap.maskedFill().rgb();
  const QRgb allowed = qRgb(255, 255, 255);
  for (int r = 0; r < d.rows; ++r) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(r));
    for (int c = 0; c < d.cols; ++c) {
      if (d.mask_only) {
        line[c] = d.isMasked(r, c) ? masked : allowed;
        continue;
      }
      const double t = d.drawMasked(r, c) ? std::nan("") : d.normalized(r, c);
      line[c] = std::isnan(t) ? masked : cmap.rgb(t);
    }
  }
  return img;
}

// ---------------------------------------------------------------------------------------------

HeatmapWidget::HeatmapWidget(QWidget* parent)
    : QWidget(parent), data_(std::make_shared<HeatmapData>()), cmap_(&Colormap::viridis()) {
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

HeatmapWidget::~HeatmapWidget() {
  if (watcher_) watcher_->waitForFinished();
}

void HeatmapWidget::setData(HeatmapData data) {
  data_ = std::make_shared<const HeatmapData>(std::move(data));
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
  HeatmapData d = from.data();
  d.title.clear();
  setData(std::move(d));
  setShowLegend(legend);
}

void HeatmapWidget::setColormap(const Colormap& cmap) {
  if (cmap_ == &cmap) return;
  cmap_ = &cmap;
  startRender();
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

void HeatmapWidget::startRender() {
  ++generation_;
  const auto& d = *data_;
  if (sync_render_ || qint64(d.rows) * d.cols <= kSyncRenderCells) {
    image_ = renderCells(d, *cmap_);
    rendering_ = false;
    emit renderingDone();
    return;
  }
  rendering_ = true;
  const int gen = generation_;
  auto data = data_;
  const Colormap* cmap = cmap_;
  auto* watcher = new QFutureWatcher<QImage>(this);
  connect(watcher, &QFutureWatcher<QImage>::finished, this, [this, watcher, gen] {
    if (gen == generation_) {
      image_ = watcher->result();
      rendering_ = false;
      update();
      emit renderingDone();
    }
    if (watcher_ == watcher) watcher_ = nullptr;
    watcher->deleteLater();
  });
  watcher->setFuture(QtConcurrent::run([data, cmap] { return renderCells(*data, *cmap); }));
  watcher_ = watcher;
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
    const double tick_w =
        std::max({fm.horizontalAdvance(formatTick(d.vmin)),
                  fm.horizontalAdvance(formatTick(d.vmax)), fm.horizontalAdvance(tr("allowed"))});
    legend_w = std::max(18 + kLegendBar + 6 + tick_w, 18 + fm.horizontalAdvance(d.value_name)) + 4;
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
    if (fit_) lhgt = std::max(40.0, std::min(lhgt, size.height() - lt - 2 * lh - 16 - kPad));
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
    h = std::max(h, l.legend.bottom() + 2.5 * fm.height() + 10 + kPad);
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
  const size_t i = size_t(row) * d.cols + col;
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
    if (!d.probs.empty()) lines << tr("Probability: %1").arg(formatNumber(d.probs[i]));
    if (!d.scores.empty())
      lines << tr("Raw score (before the mask): %1").arg(formatNumber(d.scores[i]));
    if ((d.probs.empty() && d.scores.empty()) || d.value_in_tooltip)
      lines << QStringLiteral("%1: %2").arg(capitalized(d.value_name), formatNumber(d.values[i]));
  }
  // Only matrices that have a mask say whether the cell was masked.
  if (!d.masked.empty()) lines << (masked ? tr("Masked: yes") : tr("Masked: no"));
  if (i < size_t(d.cell_notes.size()) && !d.cell_notes[qsizetype(i)].isEmpty())
    lines << d.cell_notes[qsizetype(i)];
  if (!d.tooltip_note.isEmpty()) lines << d.tooltip_note;
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
  if (d.mask_only) {
    swatch(y, false, tr("allowed"));
    swatch(y + kLegendBar + 8, true, tr("masked"));
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
  const double ticks[3] = {d.vmax, (d.vmin + d.vmax) / 2, d.vmin};
  for (int k = 0; k < 3; ++k) {
    const double ty = bar.top() + bar.height() * k / 2.0;
    p.drawLine(QPointF(bar.right(), ty), QPointF(bar.right() + 3, ty));
    p.drawText(QPointF(bar.right() + 6, ty + fm.ascent() / 2 - 1), formatTick(ticks[k]));
  }
  bool any_masked = false;
  if (d.draw_mask)
    for (uint8_t m : d.masked) any_masked = any_masked || m;
  if (any_masked) swatch(bar.bottom() + 12, true, tr("masked"));
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
  if (image_.isNull() || rendering_) {
    p.fillRect(l.grid, palette().color(QPalette::AlternateBase));
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(l.grid, Qt::AlignCenter, tr("Rendering…"));
  } else if (vector && qint64(d.rows) * d.cols <= kMaxVectorCells) {
    // Runs of equal colour along a row become one rectangle. A viewer anti-aliases each
    // rectangle's edges on its own, so two abutting at a fractional pixel let the background show
    // through as a seam (Chromium, PDF viewers): each reaches under its right and lower neighbours
    // (drawn after it, over the overlap), except at the grid's edge.
    const double bleed_x = std::min(0.75, l.cw / 2), bleed_y = std::min(0.75, l.ch / 2);
    for (int r = 0; r < d.rows; ++r) {
      const QRgb* line = reinterpret_cast<const QRgb*>(image_.constScanLine(r));
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
    p.setRenderHint(QPainter::SmoothPixmapTransform, l.cell < 1.0);
    p.drawImage(l.grid, image_);
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
    for (int r = r0; r <= r1; ++r)
      for (int c = c0; c <= c1; ++c)
        if (d.drawMasked(r, c) || (!d.mask_only && std::isnan(d.value(r, c))))
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
    for (int r = r0; r <= r1; ++r)
      for (int c = c0; c <= c1; ++c) {
        if (d.drawMasked(r, c) || std::isnan(d.value(r, c))) continue;
        const double t = d.normalized(r, c);
        p.setPen(cmap_->textOn(t));
        const QRectF cell(l.grid.left() + c * l.cw, l.grid.top() + r * l.ch, l.cw, l.ch);
        if (writing.values) {
          const double v = d.value(r, c);
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
  layout->addWidget(toolbar_);

  scroll_ = new QScrollArea(this);
  scroll_->setFrameShape(QFrame::NoFrame);
  scroll_->setWidgetResizable(true);
  heatmap_ = new HeatmapWidget;
  scroll_->setWidget(heatmap_);
  scroll_->viewport()->installEventFilter(this);
  layout->addWidget(scroll_, 1);
  zoom_label_->setText(tr("fit to window"));
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

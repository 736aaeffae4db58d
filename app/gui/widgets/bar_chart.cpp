#include "widgets/bar_chart.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>

namespace attnviz::gui {

namespace {

constexpr double kPad = 6;
constexpr double kMaxLabel = 160;  // longer labels are elided
constexpr double kMaxRow = 30;     // bars do not grow taller than this

// The smallest of 1, 2, 2.5, 5 × 10^k at or above v (v > 0): the end of a signed axis.
double niceCeil(double v) {
  const double decade = std::pow(10.0, std::floor(std::log10(v)));
  for (double f : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (f * decade >= v * (1 - 1e-9)) return f * decade;
  return 10 * decade;
}

}  // namespace

QString BarChart::valueText(double v) const {
  if (signed_)
    return (v < 0 ? QStringLiteral("−") : QStringLiteral("+")) +
           QString::number(std::abs(v), 'f', 3);
  if (v > 0 && v < 1e-3) return QString::number(v, 'e', 1);
  return QString::number(v, 'f', 3);
}

BarChart::BarChart(QWidget* parent) : QWidget(parent), axis_title_(tr("probability")) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  setFocusPolicy(Qt::ClickFocus);
}

void BarChart::keyPressEvent(QKeyEvent* event) {
  const int k = event->key();
  if ((k == Qt::Key_Up || k == Qt::Key_Down) && count() > 0) {
    const int i = std::clamp(selected_ + (k == Qt::Key_Up ? -1 : 1), 0, count() - 1);
    setSelected(i);
    emit barClicked(i);
  } else if ((k == Qt::Key_Return || k == Qt::Key_Enter) && selected_ >= 0) {
    emit barActivated(selected_);
  } else {
    QWidget::keyPressEvent(event);
  }
}

void BarChart::setBars(const QStringList& labels, const std::vector<float>& values, int marked) {
  labels_ = labels;
  values_ = values;
  marked_ = marked;
  selected_ = -1;
  updateGeometry();
  update();
}

void BarChart::setLogScale(bool on) {
  log_ = on;
  update();
}

void BarChart::setSigned(bool on) {
  signed_ = on;
  updateGeometry();
  update();
}

void BarChart::setAxisTitle(const QString& title) {
  axis_title_ = title;
  update();
}

void BarChart::setAxisTitleAbove(bool on) {
  title_above_ = on;
  update();
}

QRectF BarChart::axisTitleRect() const {
  const Layout l = computeLayout();
  const QFontMetricsF fm(font());
  const double y = title_above_ ? kPad : l.plot.bottom() + 6 + fm.height();
  return QRectF(l.plot.left(), y, l.plot.width(), fm.height());
}

void BarChart::setSelected(int index) {
  selected_ = index;
  update();
}

double BarChart::axisMax() const {
  if (!signed_) return 1.0;
  double m = 0;
  for (float v : values_) m = std::max(m, double(std::abs(v)));
  return m > 0 ? niceCeil(m) : 1.0;
}

double BarChart::axisMin() const {
  if (signed_) return -axisMax();
  if (!log_) return 0.0;
  double mn = 1.0;
  for (float v : values_)
    if (v > 0) mn = std::min(mn, double(v));
  // A decade at or below the smallest bar, at least one decade, at most 1e-12.
  const double e = std::clamp(std::floor(std::log10(mn)), -12.0, -1.0);
  return std::pow(10.0, e);
}

double BarChart::position(double v) const {
  if (signed_) return std::clamp((v - axisMin()) / (axisMax() - axisMin()), 0.0, 1.0);
  if (!log_) return std::clamp(v, 0.0, 1.0);
  const double lo = std::log10(axisMin());
  if (v <= 0) return 0.0;
  return std::clamp((std::log10(v) - lo) / (0.0 - lo), 0.0, 1.0);
}

BarChart::Layout BarChart::computeLayout() const {
  Layout l;
  const QFontMetricsF fm(font());
  double lw = 0;
  for (int i = 0; i < labels_.size(); ++i)
    lw = std::max(lw, fm.horizontalAdvance(labelText(i).section('\t', 0, 0)));
  l.label_w = std::min(lw, kMaxLabel) + 8;
  l.value_w = fm.horizontalAdvance(QStringLiteral("0.000 ✓")) + 8;
  if (signed_)
    for (float v : values_) l.value_w = std::max(l.value_w, fm.horizontalAdvance(valueText(v)) + 8);
  // The ticks below the bars, the title below them or above the bars.
  const double title_h = fm.height() + 4;
  const double axis_h = fm.height() + 4 + (title_above_ ? 0 : title_h);
  const double top = kPad + (title_above_ ? title_h : 0), left = kPad + l.label_w;
  const double w = std::max(20.0, width() - left - kPad - l.value_w);
  const int n = std::max(1, count());
  l.row_h = std::min(kMaxRow, std::max(1.0, (height() - top - axis_h - kPad) / n));
  l.plot = QRectF(left, top, w, l.row_h * n);
  return l;
}

QRectF BarChart::barRect(int i) const {
  const Layout l = computeLayout();
  if (i < 0 || i >= count()) return {};
  const double gap = std::min(6.0, l.row_h * 0.2);
  const double top = l.plot.top() + i * l.row_h + gap / 2;
  if (signed_) {  // from 0 to the value, either way
    const double zero = l.plot.left() + position(0.0) * l.plot.width();
    const double end = l.plot.left() + position(values_[size_t(i)]) * l.plot.width();
    const double len = std::max(1.0, std::abs(end - zero));
    return QRectF(end < zero ? zero - len : zero, top, len, l.row_h - gap);
  }
  const double len = position(values_[size_t(i)]) * l.plot.width();
  return QRectF(l.plot.left(), top, std::max(1.0, len), l.row_h - gap);
}

QString BarChart::labelText(int i) const {
  if (i < 0 || i >= count()) return {};
  return labels_.value(i) + (i == marked_ ? QStringLiteral(" ✓") : QString()) + '\t' +
         valueText(values_[size_t(i)]);
}

bool BarChart::allLabelsDrawn() const {
  const Layout l = computeLayout();
  const QFontMetricsF fm(font());
  if (l.row_h < fm.height() * 0.9) return false;
  for (int i = 0; i < count(); ++i)
    if (fm.horizontalAdvance(labelText(i).section('\t', 0, 0)) > l.label_w - 8 + 0.5) return false;
  return count() > 0;
}

int BarChart::indexAt(QPointF pos) const {
  const Layout l = computeLayout();
  if (pos.y() < l.plot.top() || pos.y() >= l.plot.bottom() || l.row_h <= 0) return -1;
  const int i = int((pos.y() - l.plot.top()) / l.row_h);
  return i < count() ? i : -1;
}

QSize BarChart::sizeHint() const {
  const QFontMetrics fm(font());
  return QSize(360, int(std::max(1, count()) * (fm.height() + 8) + 2 * fm.height() + 20));
}

QSize BarChart::minimumSizeHint() const {
  // Room for every label: the layout gives the bars this before the table below them.
  const QFontMetrics fm(font());
  return QSize(200, int(std::max(1, count()) * (fm.height() + 1) + 2 * fm.height() + 22));
}

void BarChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  const QColor text = palette().color(QPalette::Text);
  const QFontMetricsF fm(font());
  if (values_.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("Nothing to show yet"));
    return;
  }
  const Layout l = computeLayout();
  p.setRenderHint(QPainter::Antialiasing, false);
  // Grid lines and ticks.
  std::vector<double> ticks;
  if (signed_) {
    const double m = axisMax();
    ticks = {-m, -m / 2, 0.0, m / 2, m};
  } else if (log_) {
    for (double v = axisMin(); v <= 1.0 + 1e-9; v *= 10) ticks.push_back(v);
  } else {
    ticks = {0.0, 0.25, 0.5, 0.75, 1.0};
  }
  const double axis_y = l.plot.bottom();
  for (double v : ticks) {
    const double x = l.plot.left() + position(v) * l.plot.width();
    p.setPen(QColor(0xe0, 0xe0, 0xe0));
    p.drawLine(QPointF(x, l.plot.top()), QPointF(x, axis_y));
    p.setPen(QColor(0x80, 0x80, 0x80));
    p.drawLine(QPointF(x, axis_y), QPointF(x, axis_y + 4));
    const QString t =
        signed_ ? (v < 0 ? QStringLiteral("−") : QString()) + QString::number(std::abs(v), 'g', 3)
        : log_  ? (v >= 1 ? QStringLiteral("1") : QString::number(v, 'g', 1))
                : QString::number(v, 'g', 2);
    const double tw = fm.horizontalAdvance(t);
    p.setPen(text);
    p.drawText(QPointF(std::min(x - tw / 2, width() - kPad - tw), axis_y + 5 + fm.ascent()), t);
  }
  p.setPen(QColor(0x80, 0x80, 0x80));
  p.drawLine(QPointF(l.plot.left(), axis_y), QPointF(l.plot.right(), axis_y));
  if (signed_) {  // the zero the bars grow from
    const double x0 = l.plot.left() + position(0.0) * l.plot.width();
    p.drawLine(QPointF(x0, l.plot.top()), QPointF(x0, axis_y));
  }
  QFont italic = font();
  italic.setItalic(true);
  p.setFont(italic);
  p.setPen(palette().color(QPalette::PlaceholderText).darker(130));
  const QString title = log_ && !signed_ ? tr("%1 (log scale)").arg(axis_title_) : axis_title_;
  p.drawText(axisTitleRect(), Qt::AlignHCenter, title);
  p.setFont(font());

  // Bars, their labels and values. Thin rows show every label they can, never an empty list.
  const int step = std::max(1, int(std::ceil(fm.height() * 0.9 / std::max(l.row_h, 0.1))));
  for (int i = 0; i < count(); ++i) {
    const QRectF bar = barRect(i);
    // Signed: red adds to the sum, blue takes from it (the signed heatmaps' RdBu colours).
    const QColor fill =
        signed_ ? (values_[size_t(i)] < 0 ? QColor(0x43, 0x93, 0xc3) : QColor(0xd6, 0x60, 0x4d))
        : i == marked_ ? QColor(0xe1, 0x57, 0x59)
                       : QColor(0x4e, 0x79, 0xa7);
    p.fillRect(bar, fill);
    if (i == selected_) {
      p.setPen(QPen(QColor(0x20, 0x20, 0x20), 2));
      p.drawRect(QRectF(l.plot.left() - 2, bar.top() - 1, l.plot.width() + 4, bar.height() + 2));
    }
    if (i % step != 0) continue;
    const QString full = labelText(i);
    const QString label = fm.elidedText(full.section('\t', 0, 0), Qt::ElideRight, l.label_w - 8);
    const QRectF row(kPad, l.plot.top() + i * l.row_h, l.label_w - 8, l.row_h);
    p.setPen(text);
    p.drawText(row, Qt::AlignRight | Qt::AlignVCenter, label);
    // Signed values line up in their column right of the plot (a bar may end left of 0).
    const double value_x = signed_ ? l.plot.right() + 6 : bar.right() + 4;
    p.drawText(QRectF(value_x, row.top(), width() - value_x, l.row_h),
               Qt::AlignLeft | Qt::AlignVCenter, full.section('\t', 1, 1));
  }
}

void BarChart::mousePressEvent(QMouseEvent* event) {
  const int i = indexAt(event->position());
  if (i >= 0 && event->button() == Qt::LeftButton) {
    setSelected(i);
    emit barClicked(i);
    emit barPressed(i);
  }
  QWidget::mousePressEvent(event);
}

void BarChart::mouseDoubleClickEvent(QMouseEvent* event) {
  const int i = indexAt(event->position());
  if (i >= 0) emit barActivated(i);
  QWidget::mouseDoubleClickEvent(event);
}

}  // namespace attnviz::gui

#include "widgets/scatter_plot.h"

#include <QEvent>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

namespace attnviz::gui {

namespace {

// Round steps (1, 2 or 5 × 10ⁿ) from lo to hi, about `count` of them.
std::vector<double> roundTicks(double lo, double hi, int count) {
  std::vector<double> ticks;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return ticks;
  const double raw = (hi - lo) / std::max(1, count);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * mag >= raw) {
      step = f * mag;
      break;
    }
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    ticks.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return ticks;
}

// A tick's value with the decimals its step needs, a true minus sign, and an exponent for what
// those decimals cannot show (below their last one, or from a million up).
QString tickText(double v, double step) {
  const int decimals = step >= 1 ? 0 : std::min(4, int(std::ceil(-std::log10(step) - 1e-9)));
  const double a = std::abs(v);
  const bool exponent = v != 0 && (a < std::pow(10.0, -decimals) || a >= 1e6);
  QString s = exponent ? QString::number(v, 'e', 2) : QString::number(v, 'f', decimals);
  if (s.startsWith('-')) s.replace(0, 1, QStringLiteral("−"));
  return s;
}

}  // namespace

ScatterPlot::ScatterPlot(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void ScatterPlot::setData(std::vector<Point> points, const QString& x_title, const QString& y_title,
                          std::vector<LegendEntry> legend, std::pair<double, double> x_span,
                          std::pair<double, double> y_span) {
  points_ = std::move(points);
  legend_ = std::move(legend);
  x_title_ = x_title;
  y_title_ = y_title;
  selected_ = -1;
  // The ranges hold every point with its error bars, and a margin.
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Point& p : points_) {
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;
    const double sx = std::isfinite(p.sd_x) ? p.sd_x : 0, sy = std::isfinite(p.sd_y) ? p.sd_y : 0;
    x0 = std::min(x0, p.x - sx);
    x1 = std::max(x1, p.x + sx);
    y0 = std::min(y0, p.y - sy);
    y1 = std::max(y1, p.y + sy);
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  auto span = [](double& lo, double& hi, std::pair<double, double> s) {
    if (std::isfinite(s.first)) lo = std::min(lo, s.first);
    if (std::isfinite(s.second)) hi = std::max(hi, s.second);
  };
  span(x0, x1, x_span);
  span(y0, y1, y_span);
  auto widen = [](double& lo, double& hi) {
    if (hi - lo < 1e-9) lo -= 0.5, hi += 0.5;
    const double m = (hi - lo) * 0.05;
    lo -= m;
    hi += m;
  };
  widen(x0, x1);
  widen(y0, y1);
  x0_ = x0, x1_ = x1, y0_ = y0, y1_ = y1;
  update();
}

void ScatterPlot::setEmptyText(const QString& text) {
  empty_text_ = text;
  update();
}

void ScatterPlot::setNote(const QString& text) {
  note_ = text;
  update();
}

void ScatterPlot::setLines(bool lines) {
  lines_ = lines;
  update();
}

void ScatterPlot::setMarker(double x) {
  marker_ = x;
  update();
}

void ScatterPlot::setSelected(int index) {
  selected_ = index >= 0 && index < int(points_.size()) ? index : -1;
  update();
}

QRectF ScatterPlot::plotRect(QSize size) const {
  const QFontMetrics fm(font());
  const int line = fm.height();
  // The legend's rows above the plot.
  int rows = legend_.empty() ? 0 : 1, x = 0;
  for (const LegendEntry& e : legend_) {
    const int w = 18 + fm.horizontalAdvance(e.name) + 14;
    if (x > 0 && x + w > size.width() - 8) ++rows, x = 0;
    x += w;
  }
  const double left = line * 1.4 + fm.horizontalAdvance(QStringLiteral("−0.000")) + 8;
  const double top = 8 + rows * (line + 4) + 4;
  const double bottom = line * 2.6 + 6;
  return QRectF(left, top, std::max(10.0, size.width() - left - 14),
                std::max(10.0, size.height() - top - bottom));
}

QPointF ScatterPlot::position(int index, QSize size) const {
  const QRectF r = plotRect(size);
  const Point& p = points_.at(size_t(index));
  return {r.left() + (p.x - x0_) / (x1_ - x0_) * r.width(),
          r.bottom() - (p.y - y0_) / (y1_ - y0_) * r.height()};
}

int ScatterPlot::pointAt(QPointF pos) const {
  int best = -1;
  double best_d = 7.0 * 7.0;
  for (int i = 0; i < int(points_.size()); ++i) {
    if (!std::isfinite(points_[size_t(i)].x) || !std::isfinite(points_[size_t(i)].y)) continue;
    const QPointF d = position(i) - pos;
    const double d2 = d.x() * d.x() + d.y() * d.y();
    if (d2 <= best_d) best_d = d2, best = i;
  }
  return best;
}

QString ScatterPlot::toolTipAt(QPointF pos) const {
  const int i = pointAt(pos);
  return i < 0 ? QString() : points_[size_t(i)].tip;
}

void ScatterPlot::paint(QPainter& p, QSize size) const {
  p.save();
  p.setRenderHint(QPainter::Antialiasing);
  p.setFont(font());
  const QFontMetrics fm(font());
  const QColor ink = palette().color(QPalette::WindowText);
  if (points_.empty()) {
    p.setPen(ink);
    p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter | Qt::TextWordWrap, empty_text_);
    p.restore();
    return;
  }
  const QRectF r = plotRect(size);
  // The legend.
  {
    int x = 8, y = 8;
    for (const LegendEntry& e : legend_) {
      const int w = 18 + fm.horizontalAdvance(e.name) + 14;
      if (x > 8 && x + w > size.width() - 8) x = 8, y += fm.height() + 4;
      p.setPen(Qt::NoPen);
      p.setBrush(e.color);
      p.drawEllipse(QPointF(x + 6, y + fm.height() / 2.0), 5, 5);
      p.setPen(ink);
      p.drawText(QPointF(x + 16, y + fm.ascent()), e.name);
      x += w;
    }
  }
  // Grid and ticks.
  const std::vector<double> xt = roundTicks(x0_, x1_, std::max(2, int(r.width() / 80)));
  const std::vector<double> yt = roundTicks(y0_, y1_, std::max(2, int(r.height() / 50)));
  const double xs = xt.size() > 1 ? xt[1] - xt[0] : 1, ys = yt.size() > 1 ? yt[1] - yt[0] : 1;
  p.setPen(QPen(QColor(0, 0, 0, 28), 1));
  for (double v : xt) {
    const double x = r.left() + (v - x0_) / (x1_ - x0_) * r.width();
    p.drawLine(QPointF(x, r.top()), QPointF(x, r.bottom()));
  }
  for (double v : yt) {
    const double y = r.bottom() - (v - y0_) / (y1_ - y0_) * r.height();
    p.drawLine(QPointF(r.left(), y), QPointF(r.right(), y));
  }
  p.setPen(ink);
  p.setBrush(Qt::NoBrush);
  p.drawRect(r);
  for (double v : xt) {
    const double x = r.left() + (v - x0_) / (x1_ - x0_) * r.width();
    const QString t = tickText(v, xs);
    p.drawText(QPointF(x - fm.horizontalAdvance(t) / 2.0, r.bottom() + fm.ascent() + 3), t);
  }
  for (double v : yt) {
    const double y = r.bottom() - (v - y0_) / (y1_ - y0_) * r.height();
    const QString t = tickText(v, ys);
    p.drawText(QPointF(r.left() - fm.horizontalAdvance(t) - 4, y + fm.ascent() / 2.0 - 1), t);
  }
  // The axis titles.
  // Elided to the plot's sides when too long, never clipped mid-letter.
  p.drawText(QRectF(r.left(), r.bottom() + fm.height() + 4, r.width(), fm.height() + 2),
             Qt::AlignHCenter | Qt::AlignTop,
             fm.elidedText(x_title_, Qt::ElideRight, int(r.width())));
  p.save();
  p.translate(4, r.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-r.height() / 2, 0, r.height(), fm.height() + 2),
             Qt::AlignHCenter | Qt::AlignTop,
             fm.elidedText(y_title_, Qt::ElideRight, int(r.height())));
  p.restore();
  if (!note_.isEmpty()) {
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.9);
    p.setFont(small);
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(QRectF(r.left() + 4, r.top() + 2, r.width() - 8, fm.height() + 2),
               Qt::AlignRight | Qt::AlignTop, note_);
    p.setFont(font());
  }
  // Error bars, then the points, the selected one last and ringed.
  p.setClipRect(r.adjusted(-6, -6, 6, 6));
  const double sx = r.width() / (x1_ - x0_), sy = r.height() / (y1_ - y0_);
  if (std::isfinite(marker_)) {
    const double x = r.left() + (marker_ - x0_) * sx;
    p.setPen(QPen(QColor(0xff, 0x6f, 0x00), 2, Qt::DashLine));
    p.drawLine(QPointF(x, r.top()), QPointF(x, r.bottom()));
  }
  if (lines_)
    for (size_t i = 1; i < points_.size(); ++i) {
      const Point &a = points_[i - 1], &b = points_[i];
      if (a.series < 0 || a.series != b.series || !std::isfinite(a.y) || !std::isfinite(b.y))
        continue;
      p.setPen(QPen(b.color, 1.6));
      p.drawLine(position(int(i - 1), size), position(int(i), size));
    }
  for (int i = 0; i < int(points_.size()); ++i) {
    const Point& pt = points_[size_t(i)];
    if (!std::isfinite(pt.x) || !std::isfinite(pt.y)) continue;
    const QPointF c = position(i, size);
    QColor bar = pt.color;
    bar.setAlpha(110);
    p.setPen(QPen(bar, 1.2));
    if (std::isfinite(pt.sd_x) && pt.sd_x > 0)
      p.drawLine(QPointF(c.x() - pt.sd_x * sx, c.y()), QPointF(c.x() + pt.sd_x * sx, c.y()));
    if (std::isfinite(pt.sd_y) && pt.sd_y > 0)
      p.drawLine(QPointF(c.x(), c.y() - pt.sd_y * sy), QPointF(c.x(), c.y() + pt.sd_y * sy));
  }
  const double radius = lines_ ? 2.5 : points_.size() > 400 ? 2.5 : 4.5;
  for (int i = 0; i < int(points_.size()); ++i) {
    const Point& pt = points_[size_t(i)];
    if (!std::isfinite(pt.x) || !std::isfinite(pt.y)) continue;
    p.setPen(QPen(QColor(255, 255, 255, 200), 0.8));
    p.setBrush(pt.color);
    p.drawEllipse(position(i, size), radius, radius);
  }
  // Labels beside their points, to the left of a line's last point.
  for (int i = 0; i < int(points_.size()); ++i) {
    const Point& pt = points_[size_t(i)];
    if (pt.label.isEmpty() || !std::isfinite(pt.x) || !std::isfinite(pt.y)) continue;
    const QPointF c = position(i, size);
    // On a light backing, so that a label stays legible over the lines it crosses.
    const QRectF box(c.x() - fm.horizontalAdvance(pt.label) - 7, c.y() - 4 - fm.ascent() - 1,
                     fm.horizontalAdvance(pt.label) + 4, fm.height());
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(255, 255, 255, 210));
    p.drawRect(box);
    p.setPen(pt.color.value() > 180 ? pt.color.darker(220) : pt.color);
    p.drawText(QPointF(box.left() + 2, c.y() - 4), pt.label);
  }
  if (selected_ >= 0 && std::isfinite(points_[size_t(selected_)].x) &&
      std::isfinite(points_[size_t(selected_)].y)) {
    p.setPen(QPen(QColor(0xff, 0x6f, 0x00), 2.5));
    p.setBrush(Qt::NoBrush);
    p.drawEllipse(position(selected_, size), radius + 4, radius + 4);
  }
  p.restore();
}

void ScatterPlot::paintEvent(QPaintEvent*) {
  QPainter p(this);
  paint(p, size());
}

bool ScatterPlot::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(event);
    const QString tip = toolTipAt(help->pos());
    if (tip.isEmpty())
      QToolTip::hideText();
    else
      QToolTip::showText(help->globalPos(), tip, this);
    return true;
  }
  return QWidget::event(event);
}

void ScatterPlot::mousePressEvent(QMouseEvent* event) {
  const int i = pointAt(event->position());
  if (i >= 0) emit pointClicked(i);
}

void ScatterPlot::mouseDoubleClickEvent(QMouseEvent* event) {
  const int i = pointAt(event->position());
  if (i >= 0) emit pointDoubleClicked(i);
}

}  // namespace attnviz::gui

// A scatter plot of points with error bars, a legend, axis titles, a tooltip per point and a
// selected point; with lines on, a line chart of series. Any view may draw with it (the Atlas view
// draws its heads, one head's queries and keys, and the training history's curves).
#pragma once

#include <QColor>
#include <QString>
#include <QWidget>
#include <cmath>
#include <utility>
#include <vector>

namespace attnviz::gui {

// A scatter plot of points with optional error bars (± sd on either axis), a legend of colours,
// axis titles, a tooltip per point and a selected point; painted the same on screen and in a
// figure (paint). The Atlas view draws its heads and one head's queries and keys with it.
class ScatterPlot : public QWidget {
  Q_OBJECT
 public:
  struct Point {
    double x = 0, y = 0;
    double sd_x = 0, sd_y = 0;  // error bars (0 or NaN: none)
    QColor color;
    QString tip;      // the tooltip (plain text)
    int series = -1;  // with lines on: consecutive points of one series are joined
    QString label;    // written beside the point ("L2 H3" at a line's end); empty: none
  };
  struct LegendEntry {
    QString name;
    QColor color;
  };
  explicit ScatterPlot(QWidget* parent = nullptr);
  // The axes hold every point with its error bars and at least x_span / y_span (a statistic's
  // whole range, so that 0.04 does not look large; NaN: none).
  void setData(std::vector<Point> points, const QString& x_title, const QString& y_title,
               std::vector<LegendEntry> legend, std::pair<double, double> x_span = {NAN, NAN},
               std::pair<double, double> y_span = {NAN, NAN});
  void setEmptyText(const QString& text);
  // A line under the plot's lower right corner: what is not shown ("4 heads have no value").
  void setNote(const QString& text);
  QString note() const { return note_; }
  // Joins the points of each series by lines (a line chart: x the step) and marks x = marker with
  // a vertical line (NaN: none).
  void setLines(bool lines);
  void setMarker(double x);
  double marker() const { return marker_; }
  void setSelected(int index);  // -1: none
  int selected() const { return selected_; }
  const std::vector<Point>& points() const { return points_; }
  QString xTitle() const { return x_title_; }
  QString yTitle() const { return y_title_; }
  // Where point i is drawn in a plot of `size` (widget coordinates for the widget's size), and the
  // point nearest `pos` within a few pixels (-1: none).
  QPointF position(int index, QSize size) const;
  QPointF position(int index) const { return position(index, size()); }
  int pointAt(QPointF pos) const;
  QString toolTipAt(QPointF pos) const;  // "" away from every point
  void paint(QPainter& painter, QSize size) const;
  QSize sizeHint() const override { return {520, 420}; }
  QSize minimumSizeHint() const override { return {260, 220}; }

 signals:
  void pointClicked(int index);
  void pointDoubleClicked(int index);

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;  // tooltips
  void mousePressEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;

 private:
  QRectF plotRect(QSize size) const;
  std::vector<Point> points_;
  std::vector<LegendEntry> legend_;
  QString x_title_, y_title_, empty_text_, note_;
  double x0_ = 0, x1_ = 1, y0_ = 0, y1_ = 1;  // the axes' ranges
  int selected_ = -1;
  bool lines_ = false;
  double marker_ = NAN;
};

}  // namespace attnviz::gui

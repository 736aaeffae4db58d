// Horizontal probability bars (the top-k next tokens, a classifier's classes): one labelled bar
// per item, the value printed beside it, a 0 … 1 axis, linear or logarithmic so that the
// alternatives of a confident model stay visible. Signed, the bars are parts of a sum (a logit's
// contributions): they grow from 0 to the right (positive, red) or to the left (negative, blue) on
// an axis symmetric around 0. Drawn by hand so that labels never vanish.
#pragma once

#include <QStringList>
#include <QWidget>
#include <vector>

namespace attnviz::gui {

class BarChart : public QWidget {
  Q_OBJECT
 public:
  explicit BarChart(QWidget* parent = nullptr);

  // values in [0, 1], drawn top to bottom; `marked` gets a ✓ (e.g. the token chosen), -1 none.
  void setBars(const QStringList& labels, const std::vector<float>& values, int marked = -1);
  void setLogScale(bool on);
  bool logScale() const { return log_; }
  // Values of either sign on the axis −m … m, m the largest |value| (the log scale does not apply).
  void setSigned(bool on);
  bool isSigned() const { return signed_; }
  void setAxisTitle(const QString& title);
  // The axis title above the bars instead of below the ticks: charts taller than their scroll
  // area keep their names in sight where the list starts.
  void setAxisTitleAbove(bool on);
  QRectF axisTitleRect() const;  // where the axis title is drawn
  void setSelected(int index);   // outlined; -1 none
  int selected() const { return selected_; }

  int count() const { return int(values_.size()); }
  // The axis range (log: a decade at or below the smallest value, up to 1; signed: −m … m).
  double axisMin() const;
  double axisMax() const;
  float value(int index) const { return values_.at(size_t(index)); }
  QRectF barRect(int index) const;  // the bar itself (its length shows the value)
  // True when every label is drawn in full (not elided, not skipped).
  bool allLabelsDrawn() const;
  QString labelText(int index) const;  // as drawn: label and value
  int indexAt(QPointF pos) const;      // the bar whose row is at pos; -1 none

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void barClicked(int index);    // a click, or ↑ ↓ moving the selection
  void barPressed(int index);    // a click of the mouse only
  void barActivated(int index);  // double-click

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;  // ↑ ↓ select, Enter activates

 private:
  struct Layout {
    QRectF plot;         // where bars run from axisMin (left) to 1 (right)
    double row_h = 0;    // height of one bar's row
    double label_w = 0;  // the label column
    double value_w = 0;  // the values' column (right of the plot)
  };
  Layout computeLayout() const;
  double position(double v) const;  // 0 … 1 along the axis
  QString valueText(double v) const;
  QStringList labels_;
  std::vector<float> values_;
  int marked_ = -1, selected_ = -1;
  bool log_ = false;
  bool signed_ = false;
  QString axis_title_;
  bool title_above_ = false;
};

}  // namespace attnviz::gui

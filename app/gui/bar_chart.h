// Horizontal probability bars (the top-k next tokens, a classifier's classes): one labelled bar
// per item, the value printed beside it, a 0 … 1 axis, linear or logarithmic so that the
// alternatives of a confident model stay visible. Drawn by hand so that labels never vanish.
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
  void setAxisTitle(const QString& title);
  void setSelected(int index);  // outlined; -1 none
  int selected() const { return selected_; }

  int count() const { return int(values_.size()); }
  // The axis range (log: a decade at or below the smallest value, up to 1).
  double axisMin() const;
  double axisMax() const { return 1.0; }
  QRectF barRect(int index) const;  // the bar itself (its length shows the value)
  // True when every label is drawn in full (not elided, not skipped).
  bool allLabelsDrawn() const;
  QString labelText(int index) const;  // as drawn: label and value

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void barClicked(int index);
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
  };
  Layout computeLayout() const;
  double position(double v) const;  // 0 … 1 along the axis
  int indexAt(QPointF pos) const;
  QStringList labels_;
  std::vector<float> values_;
  int marked_ = -1, selected_ = -1;
  bool log_ = false;
  QString axis_title_;
};

}  // namespace attnviz::gui

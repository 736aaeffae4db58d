// The Attention view: the heatmap of one kind/layer/head (or the mean of the heads), queries as
// rows and keys as columns, with probabilities, raw scores or masked scores, and zoom.
#pragma once

#include "views/view.h"
#include "widgets/heatmap.h"

class QComboBox;
class QLabel;

namespace attnviz::gui {

class AttentionView : public View {
  Q_OBJECT
 public:
  explicit AttentionView(AppState* state, QWidget* parent = nullptr);
  QWidget* exportWidget() override { return view_->heatmap(); }
  QStringList figureTitle() const override;
  QSize figureBodySize(QSize available, bool legend) override;
  QSize figureLeastBodySize(bool legend) override;
  void paintFigureBody(QPainter& painter, QSize body, bool legend) override;

  HeatmapView* heatmapView() const { return view_; }
  HeatmapWidget* heatmap() const { return view_->heatmap(); }
  QComboBox* valuesCombo() const { return values_; }
  QComboBox* scaleCombo() const { return scale_; }
  QLabel* captionLabel() const { return caption_; }

 protected:
  void refresh() override;

 private:
  QComboBox* values_;
  QComboBox* scale_;
  QLabel* caption_;
  HeatmapView* view_;
};

}  // namespace attnviz::gui

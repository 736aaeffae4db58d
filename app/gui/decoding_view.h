// View 5, Decoding: the steps so far, the top-k next tokens of a step as a bar chart and a table
// (pick one to branch), and that step's new attention row for every layer and head.
#pragma once

#include "heatmap.h"
#include "item_models.h"
#include "view.h"

class QBarSet;
class QChartView;
class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QTableView;

namespace attnviz::gui {

class DecodingView : public View {
  Q_OBJECT
 public:
  explicit DecodingView(AppState* state, QWidget* parent = nullptr);
  QString name() const override { return QStringLiteral("decoding"); }
  QString title() const override { return tr("Decoding"); }

  QTableView* stepsTable() const { return steps_table_; }
  QTableView* topkTable() const { return topk_table_; }
  DecodingStepsModel* stepsModel() const { return steps_model_; }
  TopKModel* topkModel() const { return topk_model_; }
  QChartView* chartView() const { return chart_view_; }
  HeatmapWidget* rowsMap() const { return rows_map_; }
  QComboBox* rowsKindCombo() const { return rows_kind_; }
  QPushButton* useTokenButton() const { return use_token_; }
  QCheckBox* continueBox() const { return continue_; }
  QLabel* summaryLabel() const { return summary_; }
  int currentStep() const;  // the step whose top-k and rows are shown
  void selectStep(int step);
  // Picks the token of the top-k table's selected row at the current step.
  void useSelectedToken();

 protected:
  void refresh() override;

 private:
  void showStep();
  DecodingStepsModel* steps_model_;
  TopKModel* topk_model_;
  QTableView* steps_table_;
  QTableView* topk_table_;
  QChartView* chart_view_;
  HeatmapWidget* rows_map_;
  QComboBox* rows_kind_;
  QPushButton* back_;
  QPushButton* forward_;
  QPushButton* to_end_;
  QPushButton* reset_;
  QPushButton* use_token_;
  QCheckBox* continue_;
  QLabel* summary_;
  QLabel* topk_caption_;
  QLabel* rows_caption_;
  bool updating_ = false;
  uint64_t shown_snapshot_ = 0;  // a new snapshot selects the newest step
};

}  // namespace attnviz::gui

// The Decoding view (Outputs for an encoder-only model): the translation as sentences, the steps so
// far, the top-k next tokens of a step as bars and a table (pick one to branch), and that step's
// new attention row for every layer and head. An encoder-only model shows its masked-LM
// predictions per position and its class probabilities instead.
#pragma once

#include "session/item_models.h"
#include "views/view.h"
#include "widgets/heatmap.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QScrollArea;
class QTableView;

namespace attnviz::gui {

class BarChart;
class TranslationPanel;

class DecodingView : public View {
  Q_OBJECT
 public:
  explicit DecodingView(AppState* state, QWidget* parent = nullptr);
  // "Decoding", or "Outputs" for a model without a decoder.
  QString title() const override;
  QWidget* exportWidget() override { return content_; }
  QStringList figureTitle() const override;

  QTableView* stepsTable() const { return steps_table_; }
  QTableView* topkTable() const { return topk_table_; }
  DecodingStepsModel* stepsModel() const { return steps_model_; }
  TopKModel* topkModel() const { return topk_model_; }
  BarChart* barChart() const { return bars_; }
  BarChart* classChart() const { return classes_; }
  QCheckBox* logScaleBox() const { return log_scale_; }
  HeatmapWidget* rowsMap() const { return rows_map_; }
  QComboBox* rowsKindCombo() const { return rows_kind_; }
  QPushButton* useTokenButton() const { return use_token_; }
  QPushButton* whyButton() const { return why_; }
  QPushButton* stepBackButton() const { return back_; }
  QPushButton* stepForwardButton() const { return forward_; }
  QCheckBox* continueBox() const { return continue_; }
  QLabel* statusLabel() const { return status_; }
  QLabel* topkCaption() const { return topk_caption_; }
  TranslationPanel* translation() const { return translation_; }
  int currentStep() const;  // the step whose top-k and rows are shown
  void selectStep(int step);
  // Picks the token of the top-k table's selected row at the current step.
  void useSelectedToken();
  // Opens "Why this token?" on the current step and the top-k table's selected token.
  void explainSelectedToken();
  // A frame of the decode as it was at `step`: the steps after it, the words they wrote and how it
  // ended are left out (-1: show everything).
  void setFrameStep(int step);

 protected:
  void refresh() override;

 private:
  void showStep();
  void explain(const Snapshot& snap);
  // How the decode stands: finished, stopped at the maximum length, or the next token.
  QString decodeStatus(const Snapshot& snap) const;
  QWidget* content_;
  TranslationPanel* translation_;
  QScrollArea* translation_scroll_;
  DecodingStepsModel* steps_model_;
  TopKModel* topk_model_;
  QTableView* steps_table_;
  QTableView* topk_table_;
  BarChart* bars_;
  BarChart* classes_;
  QLabel* classes_caption_;
  QCheckBox* log_scale_;
  HeatmapWidget* rows_map_;
  QComboBox* rows_kind_;
  QWidget* step_buttons_;
  QPushButton* back_;
  QPushButton* forward_;
  QPushButton* to_end_;
  QPushButton* reset_;
  QWidget* pick_row_;
  QPushButton* use_token_;
  QPushButton* why_;
  QCheckBox* continue_;
  QLabel* status_;
  QLabel* topk_caption_;
  QLabel* rows_caption_;
  QWidget* rows_box_;
  bool updating_ = false;
  int frame_step_ = -1;
  uint64_t shown_snapshot_ = 0;  // a new snapshot selects the newest step
};

}  // namespace attnviz::gui

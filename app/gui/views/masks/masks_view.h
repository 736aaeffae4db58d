// The Masks view: padding, subsequent and union masks; scores → masked scores → softmax for one
// head; switches that turn masks off and rerun; a batch of sentences padded together.
#pragma once

#include "views/view.h"
#include "widgets/heatmap.h"

class QCheckBox;
class QPlainTextEdit;
class QPushButton;
class QLabel;

namespace attnviz::gui {

class MasksView : public View {
  Q_OBJECT
 public:
  explicit MasksView(AppState* state, QWidget* parent = nullptr);
  QWidget* exportWidget() override { return content_; }

  QCheckBox* srcPaddingSwitch() const { return src_padding_; }
  QCheckBox* tgtPaddingSwitch() const { return tgt_padding_; }
  QCheckBox* subsequentSwitch() const { return subsequent_; }
  QPlainTextEdit* batchEdit() const { return batch_edit_; }
  QPushButton* batchButton() const { return batch_run_; }
  HeatmapWidget* paddingMap() const { return padding_; }
  HeatmapWidget* subsequentMap() const { return subsequent_map_; }
  HeatmapWidget* unionMap() const { return union_; }
  HeatmapWidget* scoresMap() const { return scores_; }
  HeatmapWidget* maskedScoresMap() const { return masked_scores_; }
  HeatmapWidget* probsMap() const { return probs_; }
  // The batch editor: its non-empty lines, whether the user typed in it since it was last filled,
  // and filling it (e.g. with a model's examples).
  QStringList batchLines() const;
  bool batchEdited() const { return batch_edited_; }
  void setBatch(const QStringList& sentences);

 protected:
  void refresh() override;

 private:
  void syncSwitches(const MaskOptions& m);
  void applySwitches();
  // What the three mask maps show: a new run, kind or sentence draws them again.
  struct MaskMapsKey {
    uint64_t snapshot = 0;
    AttentionKind kind = AttentionKind::EncoderSelf;
    int batch = -1;
    bool operator==(const MaskMapsKey&) const = default;
  };
  MaskMapsKey mask_maps_key_;
  QWidget* content_;
  QCheckBox* src_padding_;
  QCheckBox* tgt_padding_;
  QCheckBox* subsequent_;
  QPlainTextEdit* batch_edit_;
  QPushButton* batch_run_;
  QLabel* batch_note_;
  QLabel* pipeline_caption_;
  HeatmapWidget* padding_;
  HeatmapWidget* subsequent_map_;
  HeatmapWidget* union_;
  HeatmapWidget* scores_;
  HeatmapWidget* masked_scores_;
  HeatmapWidget* probs_;
  bool batch_edited_ = false;
};

}  // namespace attnviz::gui

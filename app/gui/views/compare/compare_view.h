// The Before / after view: the current run (A) against a variation of it (B) — a mask switched off,
// another source sentence, another target (a branch of the decode), heads switched off or their
// softmax temperature-scaled — side by side and as a signed difference heatmap, with the effect on
// the output and a layer × head map of how much each head's attention moved. Also attention
// rollout across layers (an approximation) for A, B and their difference.
#pragma once

#include <QWidget>
#include <atomic>
#include <memory>
#include <vector>

#include "model/model.h"
#include "session/attention_data.h"
#include "session/run_spec.h"
#include "views/view.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;

namespace attnviz::gui {

class HeatmapWidget;

// A selection of A and B over their common rows and columns: A, B and B − A ([rows, cols]), the
// token labels ("a→b" where the runs differ). rollout: the attention rollout up to the selected
// layer instead of one head (cross-attention: through the encoder's rollout).
struct Difference {
  int rows = 0, cols = 0;
  std::vector<float> a, b, diff;
  std::vector<uint8_t> a_mask, b_mask;
  QStringList row_labels, col_labels;
  bool same_shape = true;
};
Difference attentionDifference(const Trace& a, const Trace& b, const AttentionSelection& s,
                               bool rollout);
// Mean |B − A| of every head of every layer of a kind over their common cells: [layers, heads].
std::vector<float> changePerHead(const Trace& a, const Trace& b, AttentionKind kind, int batch);

class CompareView : public View {
  Q_OBJECT
 public:
  explicit CompareView(AppState* state, QWidget* parent = nullptr);
  QWidget* exportWidget() override { return results_; }

  // B's settings (tests and the controls).
  QCheckBox* paddingMask() const { return padding_; }
  QCheckBox* lookAheadMask() const { return look_ahead_; }
  QLineEdit* sourceEdit() const { return src_edit_; }
  QComboBox* targetMode() const { return tgt_mode_; }
  QLineEdit* targetEdit() const { return tgt_edit_; }
  QComboBox* valuesCombo() const { return values_; }
  void addIntervention(const HeadIntervention& iv);
  void clearInterventions();
  const std::vector<HeadIntervention>& interventions() const { return interventions_; }
  // Runs A and B (a job of the engine); false when it cannot start.
  bool compare();
  const CompareRun& runA() const { return a_; }
  const CompareRun& runB() const { return b_; }
  HeatmapWidget* heatmapA() const { return map_a_; }
  HeatmapWidget* heatmapB() const { return map_b_; }
  HeatmapWidget* heatmapDiff() const { return map_diff_; }
  HeatmapWidget* changeGrid() const { return grid_; }
  QLabel* outputLabel() const { return output_; }

 protected:
  void refresh() override;

 private:
  RunSpec specA() const;
  void resetB();     // B = A: its masks and words (the interventions stay until removed)
  void fillTexts();  // B's source and target words from A's
  void updateInterventionList();
  void showResults();
  QCheckBox* padding_;
  QCheckBox* look_ahead_;
  QLineEdit* src_edit_;
  QComboBox* tgt_mode_;
  QLineEdit* tgt_edit_;
  QListWidget* iv_list_;
  QDoubleSpinBox* temperature_;
  QPushButton* run_;
  QComboBox* values_;
  QWidget* results_;
  QLabel* status_;
  HeatmapWidget* map_a_;
  HeatmapWidget* map_b_;
  HeatmapWidget* map_diff_;
  HeatmapWidget* grid_;
  QLabel* output_;
  std::vector<HeadIntervention> interventions_;
  CompareRun a_, b_;
  uint64_t computed_for_ = 0;  // the snapshot A was taken from
  bool filled_ = false;        // B's fields hold A's words (filled_src_, filled_tgt_)
  std::vector<int> filled_src_, filled_tgt_;
  bool pending_ = false;
  bool b_spec_same_ = false;  // the last B ran with A's settings
};

}  // namespace attnviz::gui

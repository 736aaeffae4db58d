// The "Why this token?" view: why the model chose a token at one position of the current run. Each
// reading is a tab: the logit lens (every layer's residual stream read through the model's final
// norm and token head — a layer × position heatmap of the explained token's probability, each cell
// naming its own most probable token) and the direct contributions (the token's logit, or its
// difference from the runner-up, split into the embeddings, every head, every feed-forward block
// and the biases; click a head to open its attention) and gradient attribution (saliency and
// integrated gradients per input token beside the chosen attention and rollout, computed when the
// tab is shown, with progress and Cancel). Activation patching becomes a tab beside them. The pass
// that keeps the residual stream runs as a job of the engine when the run changes; the Decoding
// view's "Why this token?" opens the view on its step.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/lens.h"
#include "train/attribution.h"
#include "views/view.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QVBoxLayout;

namespace attnviz::gui {

class BarChart;
class HeatmapView;
class HeatmapWidget;
class WhyPatchingTab;

// What the view explains: a position of the lens's stack and an output token there (−1: the
// model's choice), against the runner-up or alone.
struct WhyQuestion {
  int position = -1;  // −1: the last position
  int token = -1;
  bool versus_runner_up = false;
  int sentence = 0;  // the sentence of a batch
  bool operator==(const WhyQuestion&) const = default;
};

// The answer, computed off the GUI thread from one pass with its activations kept.
struct WhyAnswer {
  uint64_t snapshot = 0;  // the snapshot whose run it read
  WhyQuestion question;   // as asked
  std::shared_ptr<const Trace> trace;
  int position = 0, token = 0, versus = -1;       // as resolved
  std::vector<std::string> inputs;                // the tokens at the lens's positions
  std::vector<std::pair<int, float>> candidates;  // the most probable tokens at the position
  std::optional<LogitLens> lens;
  QString lens_refusal;  // why there is no lens (a model without a token head)
  std::optional<Contributions> contributions;
  QString contributions_refusal;  // why there are no contributions (post-norm, BERT's head)
};

// What the attribution tab computes: the explained position and token of an answer, the steps, and
// the attention compared (layer −1: the last; head −1: the mean of the layer's heads).
struct AttributionQuestion {
  uint64_t snapshot = 0;
  int sentence = 0, position = 0, token = 0, versus = -1;
  int steps = 32, layer = -1, head = -1;
  bool operator==(const AttributionQuestion&) const = default;
};

// Reads `trace` (a pass with lensForwardOptions' activations, one sentence) for `question`.
WhyAnswer answerWhy(const Model& model, std::shared_ptr<const Trace> trace,
                    const WhyQuestion& question);

class WhyView : public View {
  Q_OBJECT
 public:
  explicit WhyView(AppState* state, QWidget* parent = nullptr);
  QWidget* exportWidget() override;  // the tab shown
  QStringList figureTitle() const override;
  // The lens as tall as its rows need (not the window's empty room below them).
  QSize figureBodySize(QSize available, bool legend) override;
  void paintFigureBody(QPainter& painter, QSize body, bool legend) override;

  // Explains `token` (−1: the model's choice) at `position` (−1: the last) of the current run.
  void explain(int position, int token);
  const WhyQuestion& question() const { return wanted_; }
  // The answer shown (nullptr before the first one).
  const WhyAnswer* answer() const { return answer_.get(); }
  // True while the view waits for its answer (a job of the engine, or the engine's job before it).
  bool computing() const { return computing_ || pending_; }

  QComboBox* positionCombo() const { return position_; }
  QComboBox* tokenCombo() const { return token_; }
  QCheckBox* versusBox() const { return versus_; }
  QComboBox* colourCombo() const { return colour_; }
  QTabWidget* tabs() const { return tabs_; }
  HeatmapWidget* lensMap() const;
  QLabel* lensCaption() const { return lens_caption_; }
  BarChart* contributionBars() const { return bars_; }
  QLabel* contributionsCaption() const { return parts_caption_; }
  WhyPatchingTab* patchingTab() const { return patching_; }
  // The attribution tab (computed when it is shown, as a job of the engine with progress).
  static constexpr int kAttributionTab = 2;
  const Attribution* attribution() const { return attribution_.get(); }
  const AttributionQuestion& attributionQuestion() const { return attribution_for_; }
  bool attributing() const { return attributing_; }
  QSpinBox* stepsBox() const { return steps_; }
  QComboBox* layerCombo() const { return layer_; }
  QComboBox* headCombo() const { return head_; }
  QPushButton* cancelButton() const { return cancel_; }
  QLabel* attributionCaption() const { return attribution_caption_; }
  QWidget* attributionChart() const { return attribution_chart_; }
  // Per side (source, target): integrated gradients, saliency, attention, rollout.
  std::vector<std::vector<BarChart*>> attributionBars() const { return side_bars_; }
  // The tab shown as CSV (model/trace_dump.h's lensCsv or contributionsCsv); the lens and the
  // contributions as NumPy files and JSON into a folder (dumpLens). False with *error set.
  // The attribution tab: one row per token and side; attribution's NumPy files (dumpAttribution).
  bool exportCsv(const QString& path, QString* error = nullptr) const;
  bool exportNumpy(const QString& dir, QString* error = nullptr) const;

 protected:
  void refresh() override;

 private:
  void request();  // computes the answer to wanted_ (later, when the engine is busy)
  void showAnswer();
  void showLens();
  void showContributions();
  void requestAttribution();  // when the tab is shown and its question changed
  // The attribution question of the answer shown and the controls (snapshot 0: none to ask).
  AttributionQuestion wantedAttribution() const;
  void showAttribution();
  void fillAttentionChoice();  // the layer and head combos for the model
  void openPart(int bar);      // a head's bar: its attention
  void explainView();
  void explainAttribution();
  void fillControls();
  QString tokenText(int id) const;  // “token” as every view labels it
  QComboBox* position_;
  QComboBox* token_;
  QCheckBox* versus_;
  QComboBox* colour_;
  QLabel* status_;
  QPushButton* csv_;
  QPushButton* numpy_;
  QTabWidget* tabs_;
  QWidget* lens_page_;
  QLabel* lens_caption_;
  HeatmapView* lens_map_;
  QWidget* parts_page_;
  QLabel* parts_caption_;
  BarChart* bars_;
  QWidget* bars_box_;
  WhyPatchingTab* patching_;  // activation patching (why_patching.h)
  QWidget* attribution_page_;
  QLabel* attribution_caption_;
  QSpinBox* steps_;
  QComboBox* layer_;
  QComboBox* head_;
  QPushButton* cancel_;
  QWidget* attribution_chart_;  // the sides' charts, exported
  QVBoxLayout* sides_layout_;
  std::vector<QWidget*> side_boxes_;
  std::vector<QLabel*> side_titles_;
  std::vector<std::vector<BarChart*>> side_bars_;
  std::shared_ptr<const Attribution> attribution_;
  AttributionQuestion attribution_for_;  // what attribution_ answers
  AttributionQuestion declined_;         // cancelled: not asked again by itself
  bool attributing_ = false;
  QString attribution_error_;
  WhyQuestion wanted_;
  uint64_t wanted_for_ = 0;  // the snapshot wanted_ was asked on (a new run resets it)
  std::shared_ptr<const WhyAnswer> answer_;
  std::vector<int> bar_parts_;  // the part of answer_->contributions each bar shows
  bool computing_ = false, pending_ = false, filling_ = false;
  QString error_;  // the job's failure
};

}  // namespace attnviz::gui

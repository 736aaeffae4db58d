// The Search view: decoding beyond greedy. Sampling with a temperature, top-k and top-p from a
// seed (the same seed, the same sentence), and beam search of a chosen width drawn as its tree with
// every hypothesis's score; picking a hypothesis loads its decode into every view.
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include "model/search.h"
#include "views/view.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTableWidget;

namespace attnviz::gui {

// The beam search tree: one column per step, the hypotheses kept at that step (then the best
// pruned candidates, greyed) top to bottom; edges from each node to its parent.
class BeamTreeWidget : public QWidget {
  Q_OBJECT
 public:
  explicit BeamTreeWidget(QWidget* parent = nullptr);
  void setResult(std::shared_ptr<const BeamResult> result, const Vocabulary* vocab);
  const BeamResult* result() const { return result_.get(); }
  void setSelected(int node);
  int selected() const { return selected_; }
  QRectF nodeRect(int node) const;
  int nodeAt(QPointF pos) const;
  QSize sizeHint() const override;

 signals:
  void nodeSelected(int node);
  void nodeActivated(int node);  // double-click: load it

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  void layoutNodes();
  std::shared_ptr<const BeamResult> result_;
  const Vocabulary* vocab_ = nullptr;
  std::vector<QRectF> rects_;  // per node
  int selected_ = -1;
  QSize size_;
};

class SearchView : public View {
  Q_OBJECT
 public:
  enum class Method { Greedy, Sampling, Beam };
  explicit SearchView(AppState* state, QWidget* parent = nullptr);
  QWidget* exportWidget() override;

  // The controls (tests).
  QComboBox* methodCombo() const { return method_; }
  QDoubleSpinBox* temperature() const { return temperature_; }
  QSpinBox* topK() const { return top_k_; }
  QDoubleSpinBox* topP() const { return top_p_; }
  QSpinBox* seed() const { return seed_; }
  QSpinBox* samples() const { return samples_; }
  QSpinBox* beamWidth() const { return width_; }
  QDoubleSpinBox* lengthPenalty() const { return alpha_; }
  QSpinBox* maxNewTokens() const { return max_new_; }
  BeamTreeWidget* tree() const { return tree_; }
  QTableWidget* sampleTable() const { return table_; }
  QPushButton* loadButton() const { return load_; }
  // Runs the chosen method (a job of the engine); false when it cannot start.
  bool search();
  // Loads the selected hypothesis (a beam node or a sample) into every view.
  bool loadSelected();
  const std::vector<SampleResult>& sampleResults() const { return samples_out_; }
  std::shared_ptr<const BeamResult> beamResult() const { return beam_; }

 protected:
  void refresh() override;

 private:
  // The source and decoder prefix a search starts from (the current run's); false without one.
  bool startingPoint(std::vector<int>* src, std::vector<int>* prefix) const;
  void updateControls();
  void showSamples();
  void describeSelection();
  QComboBox* method_;
  QDoubleSpinBox* temperature_;
  QSpinBox* top_k_;
  QDoubleSpinBox* top_p_;
  QSpinBox* seed_;
  QSpinBox* samples_;
  QSpinBox* width_;
  QDoubleSpinBox* alpha_;
  QSpinBox* pruned_;
  QSpinBox* max_new_;
  QPushButton* run_;
  QPushButton* load_;
  QLabel* info_;
  QStackedWidget* results_;
  BeamTreeWidget* tree_;
  QTableWidget* table_;
  std::shared_ptr<const BeamResult> beam_;
  std::vector<SampleResult> samples_out_;
  std::vector<int> src_, prefix_;  // what the results were computed from
  int result_max_new_ = 0;
  bool auto_pending_ = false;
};

}  // namespace attnviz::gui

// The Positional encoding view: PE(pos, dim) curves of chosen dimensions (Qt Charts), the
// position × dimension matrix and the position-similarity matrix, sinusoidal or the learned table;
// for rotary positions the rotation speed of each pair of dimensions and the score that the same
// query and key get at every pair of positions (a function of their offset only).
#pragma once

#include <QFutureWatcher>
#include <memory>

#include "base/tensor.h"
#include "views/view.h"
#include "widgets/heatmap.h"

class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QSplitter;

namespace attnviz::gui {

class PositionalView : public View {
  Q_OBJECT
 public:
  explicit PositionalView(AppState* state, QWidget* parent = nullptr);
  ~PositionalView() override;
  QWidget* exportWidget() override;

  QComboBox* tableCombo() const { return table_; }
  QSpinBox* positionsSpin() const { return positions_; }
  QLineEdit* dimsEdit() const { return dims_; }
  // Sinusoidal and learned: the PE curves; rotary: each pair's rotation speed θ_i against i.
  QChartView* chartView() const { return chart_view_; }
  // Rotary only: the score against the offset m − n (hidden otherwise).
  QChartView* offsetChartView() const { return offset_view_; }
  // The position × dimension matrix (hidden for rotary positions, which add nothing).
  HeatmapWidget* matrixMap() const { return matrix_; }
  // The position similarity, or for rotary positions the score ⟨R(m)q, R(n)k⟩ / |q|² [m, n], or
  // for T5's relative positions one head's bias added to the score of query i and key j.
  HeatmapWidget* similarityMap() const { return similarity_; }
  // The dimensions the curves show (parsed from the edit, clamped to d_model).
  std::vector<int> chosenDims() const;
  bool computing() const { return computing_; }
  // Shows the source (false) or target (true) table, for the structure panel's embedding items.
  void showSide(bool target);

 protected:
  void refresh() override;

 private:
  struct Result;
  void recompute();
  void apply(const Result& r);
  void applyRotary(const Result& r);
  void applyRelative(const Result& r);
  void updateExplanation(int positions, bool learned);
  void updateRotaryExplanation(int positions);
  QComboBox* table_;
  QSpinBox* positions_;
  QLabel* dims_label_;
  QLineEdit* dims_;
  QLabel* info_;
  QSplitter* splitter_;
  QChartView* chart_view_;
  QChartView* offset_view_;
  HeatmapWidget* matrix_;
  HeatmapWidget* similarity_;
  QFutureWatcher<std::shared_ptr<Result>>* watcher_;
  bool computing_ = false;
  bool pending_ = false;
  const void* model_seen_ = nullptr;
};

}  // namespace attnviz::gui

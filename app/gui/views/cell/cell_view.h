// The "Inside a cell" view: click one attention weight (query i, key j of one head) and see the
// computation that made it — the query and key vectors of that head, their element-wise product,
// its sum, the division by √d_k, the mask, the whole softmax row with this cell in it, and the
// value vectors weighted by that row, which make the head's output for query i.
#pragma once

#include <QWidget>
#include <vector>

#include "views/view.h"
#include "widgets/heatmap.h"

class QLabel;
class QScrollArea;

namespace attnviz::gui {

// Every number of one cell's computation, from a block that kept its Q, K, V (keep_qkv).
struct CellBreakdown {
  int b = 0, h = 0, i = 0, j = 0;
  int d_k = 0, d_v = 0, k_len = 0;
  std::vector<float> q, k, product;  // [d_k] q_i, k_j, q_i ⊙ k_j
  double dot = 0;                    // Σ q_i ⊙ k_j
  double sqrt_dk = 1;
  double scale = 1;            // the family's factor of q·k: 1/√d_k, or attn_scale (T5: 1)
  bool scaled_by_root = true;  // scale is 1/√d_k
  bool has_bias = false;       // T5's relative position bias (self-attention)
  int bucket = 0;              // its bucket of j − i
  double bias = 0;             // table[bucket, h]
  double softcap = 0;          // Gemma 2: score = cap·tanh(s / cap) (0: none)
  double score = 0;            // dot · scale + bias, recomputed
  double stored_score = 0;     // what the trace holds
  bool masked = false;
  float mask_fill = -1e9f;
  std::vector<float> row_scores;    // [k_len] the trace's scores of row i
  std::vector<uint8_t> row_masked;  // [k_len]
  std::vector<float> row_probs;     // [k_len] the trace's probabilities of row i
  double row_max = 0;               // max of the softmax's inputs (masked: the fill)
  double exp_sum = 0;               // Σ_j e^(input_j − max)
  double exp_cell = 0;              // e^(input_j − max) of this cell
  double prob = 0;                  // exp_cell / exp_sum, recomputed
  double stored_prob = 0;
  std::vector<float> values;   // [k_len, d_v] the value vectors v_j
  std::vector<float> context;  // [d_v] Σ_j p_ij v_j: the head's output for query i
};

// Throws Error(BadInput) when the block has no Q, K, V or the cell is outside it. The score is
// recomputed as `model` computes it (its scale, T5's relative position bias in self-attention).
CellBreakdown cellBreakdown(const AttentionBlock& block, int b, int h, int i, int j,
                            const LoadedModel& model, AttentionKind kind);

// The breakdown drawn as strips of coloured numbers, formulas and a bar chart of the row.
class CellBreakdownWidget : public QWidget {
  Q_OBJECT
 public:
  explicit CellBreakdownWidget(QWidget* parent = nullptr);
  void setBreakdown(const CellBreakdown* c, const QString& query, const QString& key,
                    const QStringList& key_tokens);
  const CellBreakdown* breakdown() const { return has_ ? &c_ : nullptr; }
  QSize sizeHint() const override;
  // "Query 5 “ka” × key 12 “bizu”, head 2: …": the first line, positions counted from 1.
  QString headline() const;
  // Where the softmax row's bar of key j is drawn (tests).
  QRectF barRect(int j) const;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  double render(QPainter& p);  // draws everything; returns the height used
  void remeasure();            // the minimum height: what render() needs at this width
  CellBreakdown c_;
  bool has_ = false;
  QString query_, key_;
  QStringList keys_;
  double bars_top_ = 0, bars_left_ = 0, bar_w_ = 0, bars_h_ = 0;
};

class CellView : public View {
  Q_OBJECT
 public:
  explicit CellView(AppState* state, QWidget* parent = nullptr);
  QWidget* exportWidget() override { return content_; }
  HeatmapWidget* heatmap() const { return map_; }
  CellBreakdownWidget* breakdownWidget() const { return breakdown_; }
  // Selects cell (query i, key j) of the selected head (tests; a click does the same).
  void selectCell(int i, int j);
  int cellRow() const { return i_; }
  int cellColumn() const { return j_; }

 protected:
  void refresh() override;

 private:
  QWidget* content_;
  HeatmapWidget* map_;
  QLabel* caption_;
  CellBreakdownWidget* breakdown_;
  QScrollArea* scroll_;
  int i_ = -1, j_ = -1;
};

}  // namespace attnviz::gui

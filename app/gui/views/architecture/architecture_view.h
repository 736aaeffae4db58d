// The Architecture view: the loaded model drawn as the paper's figure — embeddings and positions,
// the encoder and decoder stacks with each attention block, add & norm (or pre-norm's norm and
// add), feed-forward, the output projection; encoder-only and decoder-only models as what they
// are — laid out from the config, with the current tensor shapes on every arrow. Hover a block for
// one sentence about it; click an attention block to open it in the Attention view, any other to
// see its input and output activations (position × dimension) with their statistics.
#pragma once

#include <QPolygonF>
#include <QRectF>
#include <QWidget>
#include <vector>

#include "arch/config.h"
#include "model/model.h"
#include "views/view.h"

class QLabel;
class QScrollArea;
class QSplitter;

namespace attnviz::gui {

class HeatmapWidget;

// The sizes the arrows are labelled with; 0 = no run yet (then "B", "S", "T").
struct ArchShapes {
  int B = 0, S = 0, T = 0;
  QString src_words, tgt_words;  // the tokens of the sentence shown (drawn in the input blocks)
};

struct ArchBlock {
  enum class Type {
    Tokens,
    Embedding,
    Positional,
    Attention,
    AddNorm,  // post-norm: the residual add, then LayerNorm
    Norm,     // pre-norm's LayerNorm before a sublayer, an embedding norm, a final norm
    Add,      // pre-norm's residual add
    FeedForward,
    Linear,
    Softmax,
    Pool,
    Output,
  };
  QString id;  // "enc.self", "dec.cross", "dec.norm_ffn", "head.linear", … (stable, for tests)
  Type type = Type::Tokens;
  QString label, detail, tooltip;
  Side side = Side::Source;  // the encoder (Source) or decoder (Target) column
  int layer = -1;            // the layer shown, for blocks inside a stack
  AttentionKind kind = AttentionKind::EncoderSelf;  // Attention blocks
  bool has_sublayer = false;                        // activations may be recorded for it
  Sublayer sublayer = Sublayer::Embedding;
  QRectF rect;
};

struct ArchArrow {
  QPolygonF path;    // from its tail to its head
  QString shape;     // the tensor that flows, e.g. "[1, 7, 128]"
  QPointF label_at;  // where the shape is written (its left end, at the text's middle)
  bool residual = false;
};

// A stack drawn once with "N×": which layer its blocks stand for, with ◀ ▶ to choose another.
struct ArchFrame {
  Side side = Side::Source;
  int layer = 0, layers = 0;
  QRectF rect, previous, next;  // the frame and its two chooser arrows
};

struct ArchLayout {
  std::vector<ArchBlock> blocks;
  std::vector<ArchArrow> arrows;
  std::vector<ArchFrame> frames;
  QSizeF size;
  const ArchBlock* find(const QString& id) const;
};

// The figure of a model with these shapes, its stacks showing layers enc_layer and dec_layer.
ArchLayout layoutArchitecture(const ModelConfig& config, const ArchShapes& shapes, int enc_layer,
                              int dec_layer);

// The activations a block shows: input and output matrices (rows: positions) when known.
struct BlockActivations {
  QString title;
  int rows = 0, in_cols = 0, out_cols = 0;
  std::vector<float> input, output;  // empty when unknown
  QString in_name, out_name;
  QStringList row_labels;
  QString note;  // why something is missing
};
// The outputs (hidden states, logits) come from `trace`, the sublayers' and embeddings' inputs and
// outputs from `recorded` (the same pass run again with them kept, or `trace` when it has them).
BlockActivations blockActivations(const ArchBlock& block, const Model& model, const Trace& trace,
                                  const Trace& recorded, int b);

// The drawing: scaled to fit, hover tooltips, clicks.
class ArchitectureDiagram : public QWidget {
  Q_OBJECT
 public:
  explicit ArchitectureDiagram(QWidget* parent = nullptr);
  void setArchLayout(ArchLayout layout);
  const ArchLayout& archLayout() const { return layout_; }
  void setSelected(const QString& id);
  // Widget coordinates of a block (empty when there is none) and the block under a point.
  QRectF blockRect(const QString& id) const;
  QRectF frameChooser(Side side, bool next) const;
  const ArchBlock* blockAt(QPointF pos) const;
  // A block's label and detail as drawn: each in the font that fits its box (at most a quarter
  // smaller than the diagram's), elided only past that.
  struct BlockTexts {
    QFont label_font, detail_font;
    QString label, detail;
  };
  BlockTexts blockTexts(const ArchBlock& b) const;
  QSize sizeHint() const override;

 signals:
  void blockClicked(const QString& id);
  void layerChosen(Side side, int layer);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  QTransform transform() const;
  ArchLayout layout_;
  QString hover_, selected_;
};

class ArchitectureView : public View {
  Q_OBJECT
 public:
  explicit ArchitectureView(AppState* state, QWidget* parent = nullptr);
  QWidget* exportWidget() override;
  ArchitectureDiagram* diagram() const { return diagram_; }
  HeatmapWidget* inputHeatmap() const { return in_map_; }
  HeatmapWidget* outputHeatmap() const { return out_map_; }
  QLabel* detailsLabel() const { return details_; }
  // What a click on the block does (tests).
  void activateBlock(const QString& id);
  QString shownBlock() const { return shown_; }

 protected:
  void refresh() override;

 private:
  void showActivations(const QString& id);
  QSplitter* splitter_;
  QScrollArea* scroll_;
  ArchitectureDiagram* diagram_;
  QWidget* panel_;
  QLabel* details_;
  HeatmapWidget* in_map_;
  HeatmapWidget* out_map_;
  QString shown_;
  // The current input's pass again with every sublayer's input and output recorded (the snapshot's
  // trace comes from decoding steps, which do not record them), for the snapshot it was made for.
  std::shared_ptr<const Trace> recorded_;
  uint64_t recorded_for_ = 0;
  bool recording_ = false;
  int enc_layer_ = 0, dec_layer_ = 0;
  AttentionSelection followed_{AttentionKind::Cross, -1, -2, -1};  // the selection last followed
};

}  // namespace attnviz::gui

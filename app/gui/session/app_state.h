// What every view shares besides the engine's snapshot: the selected attention (kind, layer, head,
// sentence of the batch) and the colormap, with the moves the keyboard makes across them.
#pragma once

#include <QObject>

#include "session/attention_data.h"
#include "session/engine.h"
#include "widgets/colormap.h"

namespace attnviz::gui {

class AppState : public QObject {
  Q_OBJECT
 public:
  explicit AppState(Engine* engine, QObject* parent = nullptr);

  Engine* engine() const { return engine_; }
  const Model* model() const { return engine_->model(); }
  std::shared_ptr<const Snapshot> snapshot() const { return engine_->snapshot(); }

  const AttentionSelection& selection() const { return selection_; }
  // Clamped to the model's layers and heads and to the batch.
  void setSelection(AttentionSelection s);
  void setKind(AttentionKind kind);
  void moveLayer(int delta);
  void moveHead(int delta);  // round the list: the mean of the heads, head 1 … head n
  void toggleMean();
  void setBatchIndex(int b);
  // The cell every view shows first: query row `query`, key column `key` of the selected block.
  void setCell(int query, int key);
  int layerCount(AttentionKind kind) const;
  int headCount() const;

  const Colormap& colormap() const { return *colormap_; }
  void setColormap(const QString& name);

  // Asks the "Why this token?" view to explain `token` (an output id; −1: the model's choice) at
  // `position` of the current run: the Decoding view's step and the bar clicked there.
  void askWhy(int position, int token);
  // Makes `src` (and, for an encoder-decoder, the target prefix `tgt`) the input of every view, as
  // if typed and run: a sentence picked in a view (the Atlas view's evidence).
  void useInput(const QString& src, const QString& tgt = {});

 signals:
  void selectionChanged(const AttentionSelection& selection);
  void colormapChanged(const Colormap& colormap);
  void whyAsked(int position, int token);
  void inputAsked(const QString& src, const QString& tgt);

 private:
  AttentionSelection clamp(AttentionSelection s) const;
  Engine* engine_;
  AttentionSelection selection_;
  int last_head_ = 0;  // where M returns to from the mean
  const Colormap* colormap_;
};

}  // namespace attnviz::gui

#include "session/app_state.h"

#include <algorithm>

#include "session/attention_data.h"

namespace attnviz::gui {

AppState::AppState(Engine* engine, QObject* parent)
    : QObject(parent), engine_(engine), colormap_(&Colormap::viridis()) {
  connect(engine_, &Engine::modelChanged, this, [this] {
    AttentionSelection s = selection_;
    s.query = s.key = -1;  // a cell of another model's blocks
    setSelection(s);
  });
  connect(engine_, &Engine::snapshotChanged, this, [this] { setSelection(selection_); });
}

int AppState::layerCount(AttentionKind kind) const {
  return model() ? attnviz::layerCount(model()->config(), kind) : 0;
}

int AppState::headCount() const {
  return model() ? model()->config().n_heads : 0;
}

AttentionSelection AppState::clamp(AttentionSelection s) const {
  // A kind the model lacks becomes the nearest one it has (cross → decoder self → encoder self).
  if (model() && layerCount(s.kind) == 0) {
    const std::vector<AttentionKind> kinds = modelKinds(model()->config());
    if (!kinds.empty()) s.kind = kinds.back();
  }
  s.layer = std::clamp(s.layer, 0, std::max(0, layerCount(s.kind) - 1));
  s.head = std::clamp(s.head, -1, std::max(-1, headCount() - 1));
  auto snap = snapshot();
  const int batch = snap && snap->trace ? snap->trace->batch : 1;
  s.batch = std::clamp(s.batch, 0, std::max(0, batch - 1));
  return s;
}

void AppState::setSelection(AttentionSelection s) {
  s = clamp(s);
  if (s.head >= 0) last_head_ = s.head;
  selection_ = s;
  // Emitted even when unchanged (after a new model or snapshot): the views refresh from it.
  emit selectionChanged(selection_);
}

void AppState::setKind(AttentionKind kind) {
  AttentionSelection s = selection_;
  s.kind = kind;
  setSelection(s);
}

void AppState::moveLayer(int delta) {
  AttentionSelection s = selection_;
  s.layer += delta;
  setSelection(s);
}

void AppState::moveHead(int delta) {
  // Round the head chooser's list (the mean, head 1 … head n): [ on the mean goes to the last
  // head, ] on the last head back to the mean.
  const int items = headCount() + 1;
  AttentionSelection s = selection_;
  s.head = ((s.head + 1 + delta) % items + items) % items - 1;
  setSelection(s);
}

void AppState::toggleMean() {
  AttentionSelection s = selection_;
  s.head = s.head < 0 ? last_head_ : -1;
  setSelection(s);
}

void AppState::setBatchIndex(int b) {
  AttentionSelection s = selection_;
  s.batch = b;
  setSelection(s);
}

void AppState::setCell(int query, int key) {
  AttentionSelection s = selection_;
  s.query = query;
  s.key = key;
  setSelection(s);
}

void AppState::setColormap(const QString& name) {
  const Colormap& c = Colormap::byName(name);
  if (&c == colormap_) return;
  colormap_ = &c;
  emit colormapChanged(c);
}

void AppState::askWhy(int position, int token) {
  emit whyAsked(position, token);
}

void AppState::useInput(const QString& src, const QString& tgt) {
  emit inputAsked(src, tgt);
}

}  // namespace attnviz::gui

#include "view.h"

namespace attnviz::gui {

View::View(AppState* state, const QString& explanation_heading, QWidget* parent)
    : QWidget(parent), state_(state) {
  layout_ = new QVBoxLayout(this);
  layout_->setContentsMargins(6, 6, 6, 6);
  layout_->setSpacing(6);
  explanation_ = new ExplanationPanel(explanation_heading, this);
  layout_->addWidget(explanation_);
  // A new snapshot or model reaches the views once, through AppState: it re-emits
  // selectionChanged for both (a direct connection too would refresh every view twice).
  connect(state_, &AppState::selectionChanged, this, &View::markDirty);
  connect(state_, &AppState::colormapChanged, this, &View::markDirty);
}

void View::markDirty() {
  dirty_ = true;
  if (isVisible()) refreshNow();
}

void View::refreshNow() {
  dirty_ = false;
  refresh();
}

void View::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (dirty_) refreshNow();
}

QString code(const QString& text) {
  return QStringLiteral("<span style=\"font-family: monospace; background: #eaecef;\">%1</span>")
      .arg(text);
}

}  // namespace attnviz::gui

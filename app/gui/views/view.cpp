#include "views/view.h"

#include <QCoreApplication>
#include <QPainter>
#include <algorithm>

#include "widgets/token_label.h"

namespace attnviz::gui {

View::View(AppState* state, const QString& explanation_heading, QWidget* parent)
    : QWidget(parent), state_(state) {
  // Clicking anywhere in a view takes the focus out of the text fields, so that the single keys
  // (1, 2, 3, M, [, ]) act on the view again.
  setFocusPolicy(Qt::StrongFocus);
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

QString ViewSpec::titleText() const {
  return QCoreApplication::translate("attnviz::gui::View", title);
}

QString ViewSpec::helpText() const {
  return QCoreApplication::translate("attnviz::gui::View", help);
}

QString View::name() const {
  return spec_ ? QString::fromLatin1(spec_->name) : QString();
}

QString View::title() const {
  return spec_ ? spec_->titleText() : QString();
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

QStringList View::figureTitle() const {
  QStringList lines{title()};
  const QString sentence = sentenceLine();
  if (!sentence.isEmpty()) lines << sentence;
  return lines;
}

QSize View::figureBodySize(QSize available, bool) {
  const QSize s = const_cast<View*>(this)->exportWidget()->size();
  if (s.isEmpty()) return available;
  const double f = std::min(
      {1.0, double(available.width()) / s.width(), double(available.height()) / s.height()});
  return QSize(int(s.width() * f), int(s.height() * f));
}

void View::paintFigureBody(QPainter& p, QSize body, bool) {
  QWidget* w = exportWidget();
  const QSize s = w->size();
  if (s.isEmpty()) return;
  p.save();
  p.scale(double(body.width()) / s.width(), double(body.height()) / s.height());
  w->render(&p, QPoint(), QRegion(), QWidget::DrawChildren | QWidget::DrawWindowBackground);
  p.restore();
}

QString View::sentenceLine() const {
  auto snap = state_->snapshot();
  if (!snap || !snap->trace) return {};
  const Trace& t = *snap->trace;
  const int b = std::clamp(state_->selection().batch, 0, std::max(0, t.batch - 1));
  auto join = [](const std::vector<std::string>& tokens) { return tokenLabels(tokens).join(' '); };
  const QString src = b < int(t.src_tokens.size()) ? join(t.src_tokens[size_t(b)]) : QString();
  const QString tgt = b < int(t.tgt_tokens.size()) ? join(t.tgt_tokens[size_t(b)]) : QString();
  if (!src.isEmpty() && !tgt.isEmpty()) return QStringLiteral("“%1” → “%2”").arg(src, tgt);
  return QStringLiteral("“%1”").arg(src.isEmpty() ? tgt : src);
}

QString code(const QString& text) {
  return QStringLiteral("<span style=\"font-family: monospace; background: #eaecef;\">%1</span>")
      .arg(text);
}

}  // namespace attnviz::gui

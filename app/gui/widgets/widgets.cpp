#include "widgets/widgets.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QStyle>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

namespace attnviz::gui {

MessageBar::MessageBar(QWidget* parent) : QFrame(parent) {
  setObjectName(QStringLiteral("messageBar"));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(10, 6, 6, 6);
  icon_ = new QLabel(this);
  label_ = new QLabel(this);
  label_->setWordWrap(true);
  label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  label_->setTextFormat(Qt::RichText);
  action_ = new QPushButton(this);
  action_->setObjectName(QStringLiteral("messageAction"));
  action_->hide();
  connect(action_, &QPushButton::clicked, this, [this] {
    if (auto act = act_) act();  // a copy: the action may replace the message, and so itself
  });
  close_ = new QToolButton(this);
  close_->setText(QStringLiteral("✕"));
  close_->setAutoRaise(true);
  close_->setToolTip(tr("Close this message"));
  layout->addWidget(icon_, 0, Qt::AlignTop);
  layout->addWidget(label_, 1);
  layout->addWidget(action_, 0, Qt::AlignTop);
  layout->addWidget(close_, 0, Qt::AlignTop);
  connect(close_, &QToolButton::clicked, this, &MessageBar::clear);
  hide();
}

void MessageBar::showMessage(Level level, const QString& title, const QString& text,
                             const QString& tag) {
  tag_ = tag;
  level_ = level;
  act_ = nullptr;
  action_->hide();
  title_ = title;
  text_ = text;
  QString bg, border;
  QStyle::StandardPixmap icon = QStyle::SP_MessageBoxInformation;
  switch (level) {
    case Level::Info:
      bg = "#e8f1fb", border = "#7aa7d8";
      break;
    case Level::Warning:
      bg = "#fff6dc", border = "#e0b94f", icon = QStyle::SP_MessageBoxWarning;
      break;
    case Level::Error:
      bg = "#fde8e6", border = "#d9756b", icon = QStyle::SP_MessageBoxCritical;
      break;
  }
  setStyleSheet(
      QStringLiteral("#messageBar { background: %1; border: 1px solid %2; border-radius: 4px; }"
                     "#messageBar QLabel { color: #202020; }")
          .arg(bg, border));
  icon_->setPixmap(style()->standardIcon(icon).pixmap(20, 20));
  QString body = text.toHtmlEscaped();
  body.replace('\n', QStringLiteral("<br>"));
  label_->setText(
      title.isEmpty() ? body : QStringLiteral("<b>%1</b><br>%2").arg(title.toHtmlEscaped(), body));
  show();
}

void MessageBar::setAction(const QString& text, std::function<void()> act) {
  act_ = std::move(act);
  action_->setText(text);
  action_->setVisible(bool(act_));
}

void MessageBar::clear() {
  act_ = nullptr;
  action_->hide();
  tag_.clear();
  title_.clear();
  text_.clear();
  hide();
}

FitLabel::FitLabel(const QString& text, QWidget* parent) : QLabel(text, parent) {
  setToolTip(text);
  setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
}

bool FitLabel::fullyShown() const {
  return isVisible() && fontMetrics().horizontalAdvance(text()) <= contentsRect().width();
}

void FitLabel::paintEvent(QPaintEvent* event) {
  if (fontMetrics().horizontalAdvance(text()) > contentsRect().width()) return;
  QLabel::paintEvent(event);
}

ExplanationPanel::ExplanationPanel(const QString& heading, QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  toggle_ = new QToolButton(this);
  toggle_->setText(heading);
  toggle_->setCheckable(true);
  toggle_->setChecked(true);
  toggle_->setAutoRaise(true);
  toggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  toggle_->setArrowType(Qt::DownArrow);
  toggle_->setToolTip(tr("Show or hide the explanation (F1)"));
  QFont f = toggle_->font();
  f.setBold(true);
  toggle_->setFont(f);
  // The box draws the background and border; the label inside only the text, so that its
  // height for a width is exact (a style-sheet padding on the label itself is not counted).
  box_ = new QFrame(this);
  box_->setObjectName(QStringLiteral("explanationBox"));
  box_->setStyleSheet(QStringLiteral(
      "#explanationBox { background: #f6f7f9; border: 1px solid #dde1e6; border-radius: 4px; }"));
  auto* bl = new QVBoxLayout(box_);
  bl->setContentsMargins(8, 6, 8, 6);
  body_ = new QLabel(box_);
  body_->setWordWrap(true);
  body_->setTextFormat(Qt::RichText);
  body_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  body_->setObjectName(QStringLiteral("explanation"));
  body_->setStyleSheet(QStringLiteral("#explanation { color: #202020; }"));
  bl->addWidget(body_);
  layout->addWidget(toggle_, 0, Qt::AlignLeft);
  layout->addWidget(box_);
  connect(toggle_, &QToolButton::toggled, this, [this](bool on) {
    box_->setVisible(on);
    toggle_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
    emit expandedChanged(on);
  });
}

void ExplanationPanel::setHtml(const QString& html) {
  html_ = html;
  body_->setText(html);
  fitHeight();
}

void ExplanationPanel::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  fitHeight();
}

void ExplanationPanel::changeEvent(QEvent* event) {
  QWidget::changeEvent(event);
  if (event->type() == QEvent::FontChange) {
    box_->setFont(font());
    body_->setFont(font());
    fitHeight();
  }
}

void ExplanationPanel::fitHeight() {
  // Not before the layout has given the panel its width: a view that sets its text while it was
  // never laid out (a hidden tab) would ask for the height of the text at the default 100 pixels,
  // and the window's minimum (the largest of its tabs') with it.
  if (!testAttribute(Qt::WA_Resized)) return;
  const QMargins m = box_->layout()->contentsMargins();
  const int w = width() - m.left() - m.right() - 2 * box_->frameWidth() - 2;
  if (w <= 0) return;
  // A QLabel never answers a height below its minimum height: measured without it, or a larger
  // font's height (presentation mode) would stay after the font is back to normal, as a blank band.
  const int was = body_->minimumHeight();
  body_->setMinimumHeight(0);
  const int h = body_->heightForWidth(w);
  body_->setMinimumHeight(h > 0 ? h : was);
}

void ExplanationPanel::setExpanded(bool expanded) {
  toggle_->setChecked(expanded);
}

bool ExplanationPanel::expanded() const {
  return toggle_->isChecked();
}

QTableView* makeSortableTable(QAbstractItemModel* model, int sort_column, QWidget* parent) {
  auto* table = new QTableView(parent);
  table->setModel(model);
  table->setSortingEnabled(true);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setSelectionMode(QAbstractItemView::SingleSelection);
  table->verticalHeader()->hide();
  table->verticalHeader()->setDefaultSectionSize(table->fontMetrics().height() + 6);
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table->sortByColumn(sort_column, Qt::AscendingOrder);
  return table;
}

}  // namespace attnviz::gui

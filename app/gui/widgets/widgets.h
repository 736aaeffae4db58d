// Small widgets the window and the views share: the inline message bar for errors and warnings,
// and the collapsible "what am I looking at" explanation every view carries.
#pragma once

#include <QFrame>
#include <QLabel>
#include <QString>
#include <QWidget>
#include <functional>

class QAbstractItemModel;
class QTableView;

class QLabel;
class QPushButton;
class QToolButton;

namespace attnviz::gui {

// An inline message above the views: errors stay until closed or replaced; what the user typed
// is never touched.
class MessageBar : public QFrame {
  Q_OBJECT
 public:
  enum class Level { Info, Warning, Error };
  explicit MessageBar(QWidget* parent = nullptr);
  // tag: what the message is about, so that it can be withdrawn when that changes ("input": the
  // typed sentence).
  // Replaces the message (and withdraws the action of the one before).
  void showMessage(Level level, const QString& title, const QString& text, const QString& tag = {});
  // A button beside the message offering what to do about it ("Open with a names map…"), until
  // the next message.
  void setAction(const QString& text, std::function<void()> act);
  QPushButton* actionButton() const { return action_; }  // hidden when the message has none
  void clear();
  Level level() const { return level_; }
  QString title() const { return title_; }
  QString text() const { return text_; }
  QString tag() const { return tag_; }

 private:
  QLabel* icon_;
  QLabel* label_;
  QPushButton* action_;
  std::function<void()> act_;
  QToolButton* close_;
  Level level_ = Level::Info;
  QString title_, text_, tag_;
};

// A hint that is drawn whole or not at all: when the window is too narrow for it, it gives its
// room away instead of showing a cut-off sentence (its tooltip keeps the text).
class FitLabel : public QLabel {
  Q_OBJECT
 public:
  explicit FitLabel(const QString& text, QWidget* parent = nullptr);
  bool fullyShown() const;  // the whole text fits and is drawn

 protected:
  void paintEvent(QPaintEvent* event) override;
};

// A header button that folds a rich-text explanation in and out.
class ExplanationPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ExplanationPanel(const QString& heading, QWidget* parent = nullptr);
  void setHtml(const QString& html);
  QString html() const { return html_; }
  void setExpanded(bool expanded);
  bool expanded() const;
  QLabel* label() const { return body_; }

 signals:
  void expandedChanged(bool expanded);

 protected:
  // The text asks for the height it needs at the panel's width, so that a crowded view never
  // squeezes it to one line.
  void resizeEvent(QResizeEvent* event) override;
  void changeEvent(QEvent* event) override;  // a new font reaches the styled text too

 private:
  void fitHeight();

 private:
  QToolButton* toggle_;
  QFrame* box_;
  QLabel* body_;
  QString html_;
};

// A table of one row per item, sortable by its columns (by `model`'s sort role), one row selected
// at a time, rows as tall as a line of text, columns as wide as their contents; sorted by
// `sort_column` at first. The views' head tables (Head statistics, Head atlas) are such tables.
QTableView* makeSortableTable(QAbstractItemModel* model, int sort_column, QWidget* parent);

}  // namespace attnviz::gui

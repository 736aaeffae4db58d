// The base of the five central views: a collapsible explanation on top, content below, refreshed
// from the shared AppState when visible (hidden views refresh when they are shown).
#pragma once

#include <QVBoxLayout>
#include <QWidget>

#include "app_state.h"
#include "widgets.h"

namespace attnviz::gui {

class View : public QWidget {
  Q_OBJECT
 public:
  View(AppState* state, const QString& explanation_heading, QWidget* parent = nullptr);

  virtual QString name() const = 0;   // "attention", "overview", …
  virtual QString title() const = 0;  // tab title
  // What File › Export view draws.
  virtual QWidget* exportWidget() { return this; }
  ExplanationPanel* explanation() const { return explanation_; }
  // Brings the view up to date now if it is out of date (tests, screenshots).
  void refreshNow();

 protected:
  // Called when the snapshot, the selection or the colormap changed and the view is visible.
  virtual void refresh() = 0;
  void markDirty();
  void showEvent(QShowEvent* event) override;

  AppState* state_;
  ExplanationPanel* explanation_;
  QVBoxLayout* layout_;

 private:
  bool dirty_ = true;
};

// "<code>…</code>" shapes and formulas share one style in every explanation.
QString code(const QString& text);

}  // namespace attnviz::gui

// The base of the window's views (shell/view_registry.cpp lists them): a collapsible explanation on
// top, content below, refreshed from the shared AppState when visible (hidden ones when shown).
#pragma once

#include <QVBoxLayout>
#include <QWidget>
#include <vector>

#include "session/app_state.h"
#include "widgets/widgets.h"

namespace attnviz::gui {

class View;

// What the registry (shell/view_registry.cpp) says of a view: its line in the table.
struct ViewSpec {
  const char* name;   // "attention": --view, the saved view, the action "view-attention", files
  const char* title;  // the tab and the View menu (a view may refine it: View::title())
  const char* help;   // one line: the tab's tooltip and the View menu's status tip
  View* (*make)(AppState* state);

  QString titleText() const;  // title and help, translated
  QString helpText() const;
};

class View : public QWidget {
  Q_OBJECT
 public:
  View(AppState* state, const QString& explanation_heading, QWidget* parent = nullptr);

  // What the registry says of the view (set once makeViews() has made it).
  const ViewSpec* spec() const { return spec_; }
  QString name() const;           // "attention", "overview", …
  virtual QString title() const;  // the tab's title: the registry's unless the view refines it
  // What File › Export view draws by default, and what the figure's size starts from.
  virtual QWidget* exportWidget() { return this; }
  // The figure's title: what is shown (the first line) and on which input (the next ones).
  virtual QStringList figureTitle() const;
  // The figure's body: the size it takes within `available` (logical pixels), and drawing it at
  // (0, 0). By default the export widget as on screen, scaled down to fit when it must.
  virtual QSize figureBodySize(QSize available, bool legend);
  // The least body a figure of the default size gets (a heatmap with every token labelled);
  // empty: the export widget's size on screen is the start.
  virtual QSize figureLeastBodySize(bool legend) {
    (void)legend;
    return {};
  }
  virtual void paintFigureBody(QPainter& painter, QSize body, bool legend);
  ExplanationPanel* explanation() const { return explanation_; }
  // Brings the view up to date now if it is out of date (tests, screenshots).
  void refreshNow();

 signals:
  // Asks the window to show another view, by its name ("attention"): a click that opens a head.
  void openView(const QString& name);

 protected:
  // Called when the snapshot, the selection or the colormap changed and the view is visible.
  virtual void refresh() = 0;
  void markDirty();
  void showEvent(QShowEvent* event) override;

  AppState* state_;
  ExplanationPanel* explanation_;
  QVBoxLayout* layout_;
  // “the big dog” → “der große Hund”: the sentence shown (the batch's selected one), for titles.
  QString sentenceLine() const;

 private:
  friend std::vector<View*> makeViews(AppState* state);  // shell/view_registry.h
  const ViewSpec* spec_ = nullptr;
  bool dirty_ = true;
};

// "<code>…</code>" shapes and formulas share one style in every explanation.
QString code(const QString& text);

}  // namespace attnviz::gui

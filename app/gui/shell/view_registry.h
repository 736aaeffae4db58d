// The window's views in one table (view_registry.cpp, which says how to add one): each view's
// name, title, line of help and how to make it. The tabs, the View menu, Ctrl+1 … Ctrl+9, the
// keyboard help, --view, the saved view and the screenshots all follow the table.
#pragma once

#include <QString>
#include <QStringList>
#include <vector>

#include "views/view.h"

namespace attnviz::gui {

// The views in tab order; Ctrl+1 … Ctrl+9 go to the first nine.
const std::vector<ViewSpec>& viewSpecs();
const ViewSpec* findViewSpec(const QString& name);  // nullptr for an unknown name
QStringList viewNames();

// Every view of the table, made in its order, each knowing its spec (View::name(), View::title()).
std::vector<View*> makeViews(AppState* state);

}  // namespace attnviz::gui

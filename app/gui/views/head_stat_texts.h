// The statistics of HeadStats as the views name them: one entry per HeadStat (model/atlas.h)
// giving its short column name, its title, its unit and what it measures. The Head statistics
// view's table and the Head atlas's axes and table both read them from here.
#pragma once

#include <QString>

#include "model/atlas.h"

namespace attnviz::gui {

struct HeadStatText {
  HeadStat stat;
  QString column;  // a table header's short name: "Previous"
  QString name;    // the full name: "Previous token"
  QString unit;    // "share of attention, 0–1"; empty where the name says it ("Entropy 0–1")
  QString explanation;  // what it measures, for tooltips
  // "Previous token (share of attention, 0–1)": the name with its unit, as the atlas's axes say.
  QString title() const { return unit.isEmpty() ? name : name + " (" + unit + ")"; }
};

// The texts of one statistic (translated when first asked).
const HeadStatText& headStatText(HeadStat stat);

}  // namespace attnviz::gui

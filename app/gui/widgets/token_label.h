// How every view labels a token: text/token_display.h's form (newline as \n, ESC as \x1B, a space
// token as ␣), as a QString. Views call these wherever they draw a token, never the raw string.
#pragma once

#include <QString>
#include <QStringList>
#include <string>
#include <vector>

#include "text/token_display.h"

namespace attnviz::gui {

inline QString tokenLabel(const std::string& token) {
  return QString::fromStdString(displayToken(token));
}

inline QStringList tokenLabels(const std::vector<std::string>& tokens) {
  QStringList out;
  out.reserve(qsizetype(tokens.size()));
  for (const auto& t : tokens) out << tokenLabel(t);
  return out;
}

}  // namespace attnviz::gui

#include "widgets/fonts.h"

#include <QApplication>
#include <QFont>
#include <QFontDatabase>
#include <QStringList>

namespace attnviz::gui {

bool usePinnedFonts() {
  // qt_add_resources in app/gui/CMakeLists.txt puts them at :/fonts.
  for (const char* file :
       {"DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSans-Oblique.ttf", "DejaVuSansMono.ttf"})
    if (QFontDatabase::addApplicationFont(QStringLiteral(":/fonts/") + QLatin1String(file)) < 0)
      return false;
  // A generic family is resolved by the machine's font configuration (whose answer changes with
  // the fonts installed); a substitute is looked up in the application's fonts first.
  QFont::insertSubstitution(QStringLiteral("monospace"), QStringLiteral("DejaVu Sans Mono"));
  QFont f(QStringLiteral("DejaVu Sans"), 9);
  f.setStyleHint(QFont::SansSerif);
  QApplication::setFont(f);
  return true;
}

}  // namespace attnviz::gui

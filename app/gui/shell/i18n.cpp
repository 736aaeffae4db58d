#include "shell/i18n.h"

#include <QCoreApplication>
#include <QDir>
#include <QLibraryInfo>
#include <QLocale>
#include <QTranslator>

#include "base/translate.h"

namespace attnviz::gui {

namespace {

QTranslator* g_app = nullptr;  // attnviz's own, from :/i18n
QTranslator* g_qt = nullptr;   // Qt's qtbase, for the standard dialogs
QString g_current = QStringLiteral("en");

}  // namespace

QStringList availableLanguages() {
  QStringList codes{QStringLiteral("en")};
  // qt_add_translations in app/gui/CMakeLists.txt puts attnviz_<code>.qm at :/i18n.
  const QStringList files =
      QDir(QStringLiteral(":/i18n")).entryList({QStringLiteral("attnviz_*.qm")}, QDir::Files);
  for (const QString& f : files) codes << f.mid(8, f.size() - 8 - 3);
  return codes;
}

QString languageDisplayName(const QString& code) {
  if (code == QLatin1String("en")) return QStringLiteral("English");
  if (code == QLatin1String("zh_CN")) return QStringLiteral("简体中文");
  const QLocale l(code);
  return l.nativeLanguageName().isEmpty() ? code : l.nativeLanguageName();
}

QString matchLanguage(const QString& name) {
  QString n = name.trimmed();
  n = n.left(n.indexOf(QLatin1Char('.')) < 0 ? n.size() : n.indexOf(QLatin1Char('.')));  // .UTF-8
  n = n.left(n.indexOf(QLatin1Char('@')) < 0 ? n.size() : n.indexOf(QLatin1Char('@')));
  n.replace(QLatin1Char('-'), QLatin1Char('_'));
  if (n.isEmpty()) return {};
  const QStringList langs = availableLanguages();
  for (const QString& c : langs)
    if (c.compare(n, Qt::CaseInsensitive) == 0) return c;
  // Chinese written in simplified characters: zh, zh_Hans, zh_Hans_CN, zh_SG.
  const QString lower = n.toLower();
  if (langs.contains(QStringLiteral("zh_CN")) &&
      (lower == QLatin1String("zh") || lower.startsWith(QLatin1String("zh_hans")) ||
       lower == QLatin1String("zh_sg")))
    return QStringLiteral("zh_CN");
  // A language alone matches its only translation ("en_GB" → "en").
  const QString base = lower.section(QLatin1Char('_'), 0, 0);
  if (base == QLatin1String("en")) return QStringLiteral("en");
  return {};
}

QString chooseLanguage(const QString& requested, const QString& saved) {
  if (!requested.isEmpty()) {
    const QString m = matchLanguage(requested);
    return m.isEmpty() ? QStringLiteral("en") : m;
  }
  if (!saved.isEmpty()) {
    const QString m = matchLanguage(saved);
    if (!m.isEmpty()) return m;
  }
  // LANGUAGE (a list, "zh_CN:en"), then LC_ALL, LC_MESSAGES, LANG; QLocale::system() reads them
  // too, but the environment is what a user sets for one program.
  QStringList wanted;
  for (const char* var : {"LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"}) {
    const QString v = qEnvironmentVariable(var);
    if (v.isEmpty()) continue;
    wanted << v.split(QLatin1Char(':'), Qt::SkipEmptyParts);
    if (qstrcmp(var, "LANGUAGE") != 0) break;  // the first locale variable set decides
  }
  wanted << QLocale::system().uiLanguages();
  for (const QString& w : wanted) {
    if (w == QLatin1String("C") || w.startsWith(QLatin1String("C."))) return QStringLiteral("en");
    const QString m = matchLanguage(w);
    if (!m.isEmpty()) return m;
  }
  return QStringLiteral("en");
}

bool installTranslators(const QString& code) {
  // The core's explanations (base/translate.h) are looked up in the same translations.
  setTranslateHook([](const char* context, const char* source) {
    return QCoreApplication::translate(context, source).toStdString();
  });
  for (QTranslator** t : {&g_app, &g_qt}) {
    if (!*t) continue;
    QCoreApplication::removeTranslator(*t);
    delete *t;
    *t = nullptr;
  }
  g_current = QStringLiteral("en");
  QLocale::setDefault(QLocale::system());
  if (code.isEmpty() || code == QLatin1String("en")) return true;
  auto* app = new QTranslator(QCoreApplication::instance());
  if (!app->load(QStringLiteral(":/i18n/attnviz_") + code + QStringLiteral(".qm"))) {
    delete app;
    return false;
  }
  QCoreApplication::installTranslator(app);
  g_app = app;
  // Qt's own (the buttons of QMessageBox, QFileDialog …), where Debian's qt6-translations-l10n
  // put it; without it those stay English.
  auto* qt = new QTranslator(QCoreApplication::instance());
  if (qt->load(QStringLiteral("qtbase_") + code,
               QLibraryInfo::path(QLibraryInfo::TranslationsPath))) {
    QCoreApplication::installTranslator(qt);
    g_qt = qt;
  } else {
    delete qt;
  }
  g_current = code;
  QLocale::setDefault(QLocale(code));
  return true;
}

QString currentLanguage() {
  return g_current;
}

}  // namespace attnviz::gui

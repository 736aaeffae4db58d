// The interface's language: which one to use (the command line, the saved choice, the system's)
// and the translators that put it on every tr() — attnviz's own (resources/translations, inside the
// program at :/i18n) and Qt's qtbase for the standard dialogs.
#pragma once

#include <QString>
#include <QStringList>

namespace attnviz::gui {

// The languages the interface speaks, "en" (the sources' own) first: {"en", "zh_CN"}.
QStringList availableLanguages();

// A language's name in itself, for the View › Language menu: "English", "简体中文".
QString languageDisplayName(const QString& code);

// The language to use: `requested` (--lang) when given, else `saved` (the View › Language
// choice), else the first of the system's UI languages (LANGUAGE, LANG …) attnviz speaks,
// else "en". "zh", "zh-CN", "zh_CN.UTF-8" and "zh-Hans" all mean "zh_CN"; an unknown code, "en".
QString chooseLanguage(const QString& requested, const QString& saved);

// The code `name` stands for among availableLanguages(), or an empty string when none.
QString matchLanguage(const QString& name);

// Installs the translators of `code` on the application (removing those of an earlier call) and
// sets QLocale's default to it. Returns false when attnviz's translation of it could not be loaded
// (the interface then stays English); "en" needs none and returns true.
bool installTranslators(const QString& code);

// The language installTranslators() last installed ("en" before any call).
QString currentLanguage();

}  // namespace attnviz::gui

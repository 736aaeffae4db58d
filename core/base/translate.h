// The core's texts that users read (the explanations) in the interface's language: the GUI sets a
// hook that looks a text up in its translations; without one (the CLI) every text stays English.
#pragma once

#include <initializer_list>
#include <string>

namespace attnviz {

// Returns the translation of `source` in `context`, or `source` itself.
using TranslateHook = std::string (*)(const char* context, const char* source);
void setTranslateHook(TranslateHook hook);

// `source` through the hook. lupdate (Qt's translation tool) reads the calls
// translate("context", "literal") from the sources that app/gui/CMakeLists.txt names.
std::string translate(const char* context, const char* source);

// `pattern` with %1 … %9 replaced by `args` in one pass (an argument's own % is left alone), so
// that a translation may put the pieces in another order.
std::string fillIn(const std::string& pattern, std::initializer_list<std::string> args);

}  // namespace attnviz

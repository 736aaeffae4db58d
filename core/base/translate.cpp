#include "base/translate.h"

#include <atomic>
#include <vector>

namespace attnviz {

namespace {
std::atomic<TranslateHook> g_hook{nullptr};
}

void setTranslateHook(TranslateHook hook) {
  g_hook.store(hook);
}

std::string translate(const char* context, const char* source) {
  const TranslateHook hook = g_hook.load();
  return hook ? hook(context, source) : std::string(source);
}

std::string fillIn(const std::string& pattern, std::initializer_list<std::string> args) {
  const std::vector<std::string> a(args);
  std::string out;
  out.reserve(pattern.size());
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '%' && i + 1 < pattern.size() && pattern[i + 1] >= '1' && pattern[i + 1] <= '9' &&
        size_t(pattern[i + 1] - '1') < a.size()) {
      out += a[size_t(pattern[i + 1] - '1')];
      ++i;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace attnviz

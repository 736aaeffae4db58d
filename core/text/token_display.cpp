#include "text/token_display.h"

#include <cstdint>
#include <cstdio>

#include "base/safe_text.h"
#include "text/unicode_classes.h"

namespace attnviz {

namespace {

std::string hex(const char* format, unsigned value) {
  char buf[16];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

bool invisibleControl(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 ||
         cp == 0x2029;
}

}  // namespace

std::string displayToken(std::string_view token) {
  bool all_space = !token.empty();
  for (size_t i = 0; i < token.size() && all_space;) {
    uint32_t cp = 0;
    const size_t len = utf8SequenceAt(token, i, &cp);
    all_space = len > 0 && isUnicodeSpace(cp) && cp >= 0x20;
    i += len ? len : 1;
  }
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    uint32_t cp = 0;
    const size_t len = utf8SequenceAt(token, i, &cp);
    if (len == 0) {
      out += hex("\\x%02X", static_cast<unsigned char>(token[i]));
      ++i;
      continue;
    }
    if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F) {
      out += hex("\\x%02X", cp);
    } else if (invisibleControl(cp)) {
      out += hex("\\u{%04X}", cp);
    } else if (all_space && cp == ' ') {
      out += "\xE2\x90\xA3";  // ␣
    } else if (all_space) {
      out += hex("\\u{%04X}", cp);
    } else {
      out.append(token.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace attnviz

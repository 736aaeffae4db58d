#include "base/safe_text.h"

#include <cstdint>
#include <cstdio>

namespace attnviz {

namespace {

struct Decoded {
  uint32_t cp = 0;
  size_t len = 0;
};
Decoded decodeAt(std::string_view s, size_t i) {
  Decoded d;
  d.len = utf8SequenceAt(s, i, &d.cp);
  return d;
}

bool isControl(uint32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F);
}

bool isBidiControl(uint32_t cp) {
  return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

std::string hexEscape(const char* format, unsigned value) {
  char buf[16];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace

size_t utf8SequenceAt(std::string_view s, size_t i, uint32_t* code_point) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t len;
  uint32_t cp;
  if (c < 0x80) {
    len = 1;
    cp = c;
  } else if ((c & 0xE0) == 0xC0) {
    len = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const unsigned char cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  if (code_point) *code_point = cp;
  return len;
}

std::string terminalSafe(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const Decoded d = decodeAt(text, i);
    if (d.len == 0) {  // not UTF-8: the byte itself, escaped
      out += hexEscape("\\x%02X", static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (keep_newlines && (d.cp == '\n' || d.cp == '\t')) {
      out += static_cast<char>(d.cp);
    } else if (d.cp < 0x80 && isControl(d.cp)) {
      out += hexEscape("\\x%02X", d.cp);
    } else if (isControl(d.cp) || isBidiControl(d.cp)) {
      out += hexEscape("\\u{%04X}", d.cp);
    } else {
      out.append(text.substr(i, d.len));
    }
    i += d.len;
  }
  return out;
}

size_t findControlChar(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const Decoded d = decodeAt(text, i);
    if (d.len == 0 || isControl(d.cp)) return i;
    i += d.len;
  }
  return std::string_view::npos;
}

std::string describeControlChar(std::string_view text, size_t at) {
  const Decoded d = decodeAt(text, at);
  const std::string shown = d.len == 0 ? hexEscape("\\x%02X", static_cast<unsigned char>(text[at]))
                                       : terminalSafe(text.substr(at, d.len));
  return std::string(d.len == 0 ? "a byte that is not UTF-8" : "a control character") + " (" +
         shown + " at byte " + std::to_string(at) + ")";
}

}  // namespace attnviz

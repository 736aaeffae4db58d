#include "text/unicode_classes.h"

#include <oniguruma.h>

#include <cstring>

namespace attnviz {

namespace {

// Oniguruma's ctype of a Unicode property ("L", "White_Space"): what \p{…} of a pattern tests.
int propertyCtype(const char* name) {
  OnigEncoding enc = ONIG_ENCODING_UTF8;
  const auto* p = reinterpret_cast<const OnigUChar*>(name);
  return ONIGENC_PROPERTY_NAME_TO_CTYPE(enc, const_cast<OnigUChar*>(p),
                                        const_cast<OnigUChar*>(p) + std::strlen(name));
}

bool has(int ctype, char32_t c) {
  return c <= 0x10FFFF && ONIGENC_IS_CODE_CTYPE(ONIG_ENCODING_UTF8, (OnigCodePoint)c, ctype);
}

}  // namespace

bool isUnicodeLetter(char32_t c) {
  static const int ctype = propertyCtype("L");
  return has(ctype, c);
}

bool isUnicodeNumber(char32_t c) {
  static const int ctype = propertyCtype("N");
  return has(ctype, c);
}

bool isUnicodeSpace(char32_t c) {
  static const int ctype = propertyCtype("White_Space");
  return has(ctype, c);
}

bool isUnicodeOther(char32_t c) {
  static const int ctype = propertyCtype("C");
  return c > 0x10FFFF || has(ctype, c);
}

bool isUnicodeSpaceSeparator(char32_t c) {
  static const int ctype = propertyCtype("Zs");
  return has(ctype, c);
}

bool isUnicodePunctuation(char32_t c) {
  static const int ctype = propertyCtype("P");
  return has(ctype, c);
}

bool isUnicodeNonspacingMark(char32_t c) {
  static const int ctype = propertyCtype("Mn");
  return has(ctype, c);
}

bool isPythonSpace(char32_t c) {
  // str.isspace(): bidirectional class WS, B or S, or category Zs — White_Space and the four
  // information separators U+001C..U+001F.
  return (c >= 0x1C && c <= 0x1F) || isUnicodeSpace(c);
}

}  // namespace attnviz

#include "text/unicode_text.h"

#include <algorithm>
#include <cstdint>

#include "base/safe_text.h"
#include "text/unicode_classes.h"

namespace attnviz {

std::u32string utf8ToCodePoints(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t len = utf8SequenceAt(text, i, &cp);
    out.push_back(len ? (char32_t)cp : U'\uFFFD');
    i += len ? len : 1;
  }
  return out;
}

void appendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += (char)cp;
  } else if (cp < 0x800) {
    out += (char)(0xC0 | (cp >> 6));
    out += (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += (char)(0xE0 | (cp >> 12));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  } else {
    out += (char)(0xF0 | (cp >> 18));
    out += (char)(0x80 | ((cp >> 12) & 0x3F));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  }
}

std::string codePointsToUtf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t c : cps) appendUtf8(out, c);
  return out;
}

std::u32string lowercaseEach(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (char32_t c : s) {
    char32_t low[2];
    const int n = unicodeLowercase(c, low);
    out.append(low, low + n);
  }
  return out;
}

namespace {

// Hangul syllables decompose by arithmetic (The Unicode Standard, 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
              kSCount = kLCount * kNCount;

void decompose(char32_t c, std::u32string& out) {
  if (c >= kSBase && c < kSBase + (char32_t)kSCount) {
    const int s = (int)(c - kSBase);
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  char32_t d[4];
  const int n = unicodeDecomposition(c, d);
  if (n == 0)
    out.push_back(c);
  else
    out.append(d, d + n);  // the table holds the full (recursive) decomposition
}

}  // namespace

std::u32string nfd(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (char32_t c : s) decompose(c, out);
  // Canonical ordering: each run of non-starters sorted by combining class, stably.
  for (size_t i = 0; i < out.size();) {
    if (unicodeCombiningClass(out[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < out.size() && unicodeCombiningClass(out[j]) != 0) ++j;
    std::stable_sort(
        out.begin() + (std::ptrdiff_t)i, out.begin() + (std::ptrdiff_t)j,
        [](char32_t a, char32_t b) { return unicodeCombiningClass(a) < unicodeCombiningClass(b); });
    i = j;
  }
  return out;
}

}  // namespace attnviz

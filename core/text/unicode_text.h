// Text as code points for the tokenizers: UTF-8 to UTF-32 and back, and the two transformations of
// Python strings BERT's BasicTokenizer applies (str.lower() and unicodedata.normalize("NFD")), on
// the tables of unicode_classes.h.
#pragma once

#include <string>
#include <string_view>

namespace attnviz {

// The code points of valid UTF-8 (check with isValidUtf8 first: invalid bytes become U+FFFD).
std::u32string utf8ToCodePoints(std::string_view text);
std::string codePointsToUtf8(std::u32string_view cps);
void appendUtf8(std::string& out, char32_t cp);

// Each code point lowercased alone as Python's str.lower() lowercases it (the full mapping: İ
// becomes i + U+0307; Σ always σ, as transformers' tokenize() lowercases a character at a time).
std::u32string lowercaseEach(std::u32string_view text);

// Unicode's NFD: full canonical decomposition (Hangul syllables by the algorithm), then the
// canonical ordering of combining marks.
std::u32string nfd(std::u32string_view text);

}  // namespace attnviz

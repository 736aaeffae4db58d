// Unicode character data the tokenizers need: the classes of GPT-2's pattern (\p{L}, \p{N}, \s) and
// what BERT's BasicTokenizer reads through Python (categories, str.isspace, str.lower, NFD). The
// classes are Oniguruma's (unicode_classes.cpp: what \p{…} means in tokenizer.json's patterns);
// the case mapping and decompositions, which it lacks, are tables (unicode_tables.cpp) generated
// by tools/make_unicode_tables.py, which names the Unicode version.
#pragma once

namespace attnviz {

bool isUnicodeLetter(char32_t c);  // general category L* (Lu, Ll, Lt, Lm, Lo)
bool isUnicodeNumber(char32_t c);  // general category N* (Nd, Nl, No)
bool isUnicodeSpace(char32_t c);   // the White_Space property

bool isUnicodeOther(char32_t c);           // general category C* (Cc, Cf, Cs, Co, Cn unassigned)
bool isUnicodeSpaceSeparator(char32_t c);  // general category Zs
bool isUnicodePunctuation(char32_t c);     // general category P*
bool isUnicodeNonspacingMark(char32_t c);  // general category Mn
bool isPythonSpace(char32_t c);            // Python's str.isspace()

// Python's str.lower() of the one code point alone (so capital sigma is always σ): writes 1 or 2
// code points, returns how many.
int unicodeLowercase(char32_t c, char32_t out[2]);
// The full canonical decomposition of one code point (NFD of it alone), 1 to 4 code points, or 0
// when it has none. Hangul syllables are not in the table (unicode_text.h decomposes them).
int unicodeDecomposition(char32_t c, char32_t out[4]);
int unicodeCombiningClass(char32_t c);  // canonical combining class, 0 for starters

}  // namespace attnviz

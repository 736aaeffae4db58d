// How a token is shown wherever tokens are printed or drawn (the views, the CLI, messages): what
// would be invisible or would act on the terminal is spelled out, the rest is the token itself.
#pragma once

#include <string>
#include <string_view>

namespace attnviz {

// The token as shown:
// - newline, tab and carriage return as \n, \t, \r; the other C0 controls and DEL as \xNN
//   (\x1B for ESC, \x00 for NUL); C1 controls, the bidirectional controls (U+061C, U+200E,
//   U+200F, U+202A–U+202E, U+2066–U+2069) and the line and paragraph separators (U+2028, U+2029)
//   as \u{NNNN}; bytes that are not UTF-8 as \xNN;
// - a token that is nothing but whitespace shows each space as ␣ (U+2423, a glyph the bundled fonts
// have) and any other
//   whitespace character as \u{NNNN}, so that a space token is never an empty-looking cell;
// - everything else, a backslash included, as it is (a token spelled backslash-n reads like the
//   newline token; the id beside it tells them apart).
std::string displayToken(std::string_view token);

}  // namespace attnviz

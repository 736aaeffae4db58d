// Strings from files shown to a person: control characters made visible instead of reaching the
// terminal (or cutting a C string at a NUL), and the test for names where they cannot be meant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace attnviz {

// `text` safe to print: C0 controls, DEL and the C1 controls U+0080–U+009F as \xNN / \u{NN}, the
// bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) as \u{NNNN},
// bytes that are not UTF-8 as \xNN; a backslash stays a backslash. With keep_newlines, '\n' and
// '\t' pass through (multi-line messages).
std::string terminalSafe(std::string_view text, bool keep_newlines = false);

// The length (1 to 4) of the UTF-8 sequence at text[at], its code point in *code_point; 0 when the
// bytes there are not UTF-8 (overlong forms, surrogates, values above U+10FFFF, a cut sequence).
size_t utf8SequenceAt(std::string_view text, size_t at, uint32_t* code_point = nullptr);

// The byte offset of the first control character (C0 including tab and newline, DEL, C1) or of
// the first byte that is not UTF-8; std::string_view::npos when there is none.
size_t findControlChar(std::string_view text);

// "a control character (\x1B at byte 3)" for the character findControlChar found at `at`.
std::string describeControlChar(std::string_view text, size_t at);

}  // namespace attnviz

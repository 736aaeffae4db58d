// JSON parsing for untrusted input: rejects duplicate keys (nlohmann keeps the last silently)
// and nesting deeper than a limit, in time linear in the text, and reports errors with the
// source's name.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attnviz {

constexpr int kMaxJsonDepth = 64;

// Throws Error(InvalidJson) or Error(DuplicateKey); `what` names the text in messages.
nlohmann::json parseJsonStrict(std::string_view text, const std::string& what,
                               int max_depth = kMaxJsonDepth);

// `text` cut to at most about `max_bytes` (at a character boundary, with its full length noted)
// and with control characters escaped (terminalSafe), for names from untrusted files quoted in
// messages.
std::string clipForMessage(std::string_view text, size_t max_bytes = 200);

// `text` with control characters shown escaped (terminalSafe), for names quoted in messages.
std::string escapeControlChars(std::string_view text);

// The JSON type with its article, for messages: "an array", "an object", "a string", "null", ...
std::string jsonTypeName(const nlohmann::json& value);

// True when `text` is valid UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF); otherwise
// *bad_offset (when given) is the byte offset of the first invalid sequence.
bool isValidUtf8(std::string_view text, size_t* bad_offset = nullptr);

}  // namespace attnviz

// JSON parsing for untrusted input: rejects duplicate keys (nlohmann keeps the last silently)
// and nesting deeper than a limit, and reports errors with the source's name.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace attnviz {

constexpr int kMaxJsonDepth = 64;

// Throws Error(InvalidJson) or Error(DuplicateKey); `what` names the text in messages.
nlohmann::json parseJsonStrict(std::string_view text, const std::string& what,
                               int max_depth = kMaxJsonDepth);

// True when `text` is valid UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
bool isValidUtf8(std::string_view text);

}  // namespace attnviz

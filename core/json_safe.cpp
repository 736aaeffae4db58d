#include "json_safe.h"

#include <set>
#include <vector>

#include "error.h"

namespace attnviz {

bool isValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (int k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000))
      return false;  // overlong
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

nlohmann::json parseJsonStrict(std::string_view text, const std::string& what, int max_depth) {
  // The callback sees every key and object boundary: a stack of key sets finds duplicates,
  // and the parser's depth argument enforces the nesting limit before anything deep is built.
  std::vector<std::set<std::string>> keys;
  std::string problem;
  ErrorKind problem_kind = ErrorKind::InvalidJson;
  auto cb = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) -> bool {
    using E = nlohmann::json::parse_event_t;
    if (depth > max_depth) {
      problem = "nested deeper than " + std::to_string(max_depth) + " levels";
      throw Error(ErrorKind::InvalidJson, what + ": JSON " + problem);
    }
    switch (event) {
      case E::object_start: keys.emplace_back(); break;
      case E::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case E::key: {
        const std::string& k = parsed.get_ref<const std::string&>();
        if (!keys.empty() && !keys.back().insert(k).second) {
          problem_kind = ErrorKind::DuplicateKey;
          throw Error(ErrorKind::DuplicateKey, what + ": duplicate key \"" + k + "\"");
        }
        break;
      }
      default: break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), cb);
  } catch (const Error&) {
    throw;
  } catch (const nlohmann::json::exception& e) {
    (void)problem_kind;
    throw Error(ErrorKind::InvalidJson, what + ": invalid JSON (" + std::string(e.what()) + ")");
  }
}

}  // namespace attnviz

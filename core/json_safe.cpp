#include "json_safe.h"

#include <cstdio>
#include <unordered_set>
#include <vector>

#include "error.h"

namespace attnviz {

std::string jsonTypeName(const nlohmann::json& value) {
  if (value.is_null()) return "null";
  if (value.is_array() || value.is_object()) return std::string("an ") + value.type_name();
  return std::string("a ") + value.type_name();
}

bool isValidUtf8(std::string_view s, size_t* bad_offset) {
  auto fail = [&](size_t at) {
    if (bad_offset) *bad_offset = at;
    return false;
  };
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
      return fail(i);
    }
    if (i + len > n) return fail(i);
    for (int k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return fail(i);
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000))
      return fail(i);  // overlong
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return fail(i);
    i += len;
  }
  return true;
}

namespace {

// First pass over untrusted JSON: nesting depth and duplicate keys, without building anything.
// (nlohmann's parse callback cannot do this: its DOM builder rescans the parent object at every
// object end, quadratic in the number of keys, which hangs on a header with a million tensors.)
class StrictChecker : public nlohmann::json_sax<nlohmann::json> {
 public:
  StrictChecker(const std::string& what, int max_depth) : what_(what), max_depth_(max_depth) {}
  std::string error;  // the parser's message when the text is not JSON

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    enter();
    keys_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!keys_.back().insert(k).second)
      throw Error(ErrorKind::DuplicateKey, what_ + ": duplicate key \"" + clipForMessage(k) + "\"");
    return true;
  }
  bool end_object() override {
    keys_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    enter();
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error = e.what();
    return false;
  }

 private:
  void enter() {
    if (++depth_ > max_depth_)
      throw Error(ErrorKind::InvalidJson,
                  what_ + ": JSON nested deeper than " + std::to_string(max_depth_) + " levels");
  }
  const std::string& what_;
  const int max_depth_;
  int depth_ = 0;
  std::vector<std::unordered_set<std::string>> keys_;  // one per open object
};

}  // namespace

nlohmann::json parseJsonStrict(std::string_view text, const std::string& what, int max_depth) {
  StrictChecker checker(what, max_depth);
  if (!nlohmann::json::sax_parse(text.begin(), text.end(), &checker))
    throw Error(ErrorKind::InvalidJson, what + ": invalid JSON (" + checker.error + ")");
  // Checked: now build it (the plain parser is iterative and linear).
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::InvalidJson, what + ": invalid JSON (" + std::string(e.what()) + ")");
  }
}

std::string escapeControlChars(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string clipForMessage(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // whole chars
  return std::string(text.substr(0, cut)) + "… (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace attnviz

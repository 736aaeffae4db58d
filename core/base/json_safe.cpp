#include "base/json_safe.h"

#include <unordered_set>
#include <vector>

#include "base/error.h"
#include "base/safe_text.h"

namespace attnviz {

std::string jsonTypeName(const nlohmann::json& value) {
  if (value.is_null()) return "null";
  if (value.is_array() || value.is_object()) return std::string("an ") + value.type_name();
  return std::string("a ") + value.type_name();
}

bool isValidUtf8(std::string_view s, size_t* bad_offset) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8SequenceAt(s, i);
    if (len == 0) {
      if (bad_offset) *bad_offset = i;
      return false;
    }
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
  return terminalSafe(text);
}

std::string clipForMessage(std::string_view text, size_t max_bytes) {
  // Control characters shown escaped: a name must neither reach a terminal raw nor cut the
  // message at a NUL.
  if (text.size() <= max_bytes) return terminalSafe(text);
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // whole chars
  return terminalSafe(text.substr(0, cut)) + "… (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace attnviz

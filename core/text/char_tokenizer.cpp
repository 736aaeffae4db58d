#include "text/char_tokenizer.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"
#include "text/token_display.h"
#include "text/unicode_text.h"

namespace attnviz {

namespace {

class CharTokenizer : public Tokenizer {
 public:
  CharTokenizer(std::vector<std::string> tokens, std::string source)
      : tokens_(std::move(tokens)), source_(std::move(source)) {
    for (size_t i = 0; i < tokens_.size(); ++i) {
      const std::u32string cps = utf8ToCodePoints(tokens_[i]);
      if (cps.size() == 1) index_.emplace(cps[0], (int)i);
    }
  }

  std::string describe() const override {
    return "characters (" + source_ + ", " + std::to_string(index_.size()) +
           " characters; each character one token)";
  }

  std::vector<int> encodeSource(const std::string& text) const override {
    checkSentenceText(text, "the sentence");
    return encode(text);
  }

  std::vector<int> encodeTarget(const std::string& text) const override {
    checkSentenceText(text, "the prompt");
    return encode(text);
  }

  std::string decode(Side, const std::vector<int>& ids) const override {
    std::string out;
    for (int id : ids)
      if (id >= 0 && id < (int)tokens_.size()) out += tokens_[id];
    return out;
  }

 private:
  std::vector<int> encode(const std::string& text) const {
    std::vector<int> ids;
    std::vector<char32_t> unknown;
    for (char32_t c : utf8ToCodePoints(text)) {
      auto it = index_.find(c);
      if (it != index_.end()) {
        ids.push_back(it->second);
      } else if (std::find(unknown.begin(), unknown.end(), c) == unknown.end()) {
        unknown.push_back(c);
      }
    }
    if (!unknown.empty()) {
      std::string list;
      for (size_t i = 0; i < unknown.size() && i < 8; ++i) {
        std::string one;
        appendUtf8(one, unknown[i]);
        list += (i ? ", \"" : "\"") + displayToken(one) + "\"";
      }
      if (unknown.size() > 8) list += ", …";
      std::string known;
      for (size_t i = 0; i < tokens_.size() && i < 24; ++i) known += displayToken(tokens_[i]);
      if (tokens_.size() > 24) known += "…";
      throw Error(ErrorKind::BadInput,
                  std::string(unknown.size() == 1 ? "the character " : "the characters ") + list +
                      (unknown.size() == 1 ? " is" : " are") + " not in " + source_ + "'s " +
                      std::to_string(index_.size()) + " characters (" + known + ")");
    }
    return ids;
  }

  std::vector<std::string> tokens_;
  std::string source_;
  std::unordered_map<char32_t, int> index_;
};

}  // namespace

std::shared_ptr<const Tokenizer> openCharTokenizer(std::vector<std::string> tokens,
                                                   std::string source) {
  return std::make_shared<CharTokenizer>(std::move(tokens), std::move(source));
}

}  // namespace attnviz

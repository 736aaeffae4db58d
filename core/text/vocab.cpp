#include "text/vocab.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "base/error.h"
#include "base/json_safe.h"

namespace attnviz {

Vocabulary::Vocabulary(std::vector<std::string> tokens, int unk_id, std::string what)
    : tokens_(std::move(tokens)), unk_id_(unk_id), what_(std::move(what)) {
  if (tokens_.empty()) throw Error(ErrorKind::BadVocabulary, what_ + " is empty");
  index_.reserve(tokens_.size());
  for (int i = 0; i < size(); ++i) {
    // Control characters are tokens too (nanoGPT's '\n', a byte vocabulary's bytes): shown
    // escaped (text/token_display.h), never refused. Bytes that are not UTF-8 cannot be shown.
    if (size_t bad = 0; !isValidUtf8(tokens_[i], &bad))
      throw Error(ErrorKind::BadVocabulary,
                  what_ + ": token " + std::to_string(i) + " \"" + clipForMessage(tokens_[i], 40) +
                      "\" is not valid UTF-8 (byte " + std::to_string(bad) + ")");
    if (!index_.emplace(tokens_[i], i).second)
      throw Error(ErrorKind::BadVocabulary, what_ + " has the token \"" +
                                                clipForMessage(tokens_[i], 40) +
                                                "\" twice (again at id " + std::to_string(i) + ")");
  }
  if (unk_id_ >= size()) unk_id_ = -1;
}

const std::string& Vocabulary::token(int id) const {
  static const std::string invalid = "<?>";
  if (id < 0 || id >= size()) return invalid;
  return tokens_[id];
}

int Vocabulary::id(const std::string& token) const {
  auto it = index_.find(token);
  return it == index_.end() ? -1 : it->second;
}

namespace {
// A word from the user for a message: clipped, control characters made visible.
std::string printable(const std::string& s, size_t max = 40) {
  return clipForMessage(s, max);
}
}  // namespace

std::vector<int> Vocabulary::encode(const std::string& sentence, int max_tokens) const {
  for (size_t i = 0; i < sentence.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(sentence[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F)
      throw Error(ErrorKind::BadInput, "the sentence contains a control character (byte " +
                                           std::to_string(c) + " at position " + std::to_string(i) +
                                           ")");
  }
  if (size_t bad = 0; !isValidUtf8(sentence, &bad))
    throw Error(ErrorKind::BadInput,
                "the sentence is not valid UTF-8 text (invalid byte at position " +
                    std::to_string(bad) + ")");
  std::istringstream in(sentence);
  std::vector<std::string> words;
  for (std::string w; in >> w;) {
    if (w.size() > 256)
      throw Error(ErrorKind::BadInput, "the word \"" + printable(w) + "\" is " +
                                           std::to_string(w.size()) + " bytes long; no " + what_ +
                                           " token is that long");
    words.push_back(std::move(w));
    if ((int)words.size() > max_tokens)
      throw Error(ErrorKind::BadInput, "the sentence has more than " + std::to_string(max_tokens) +
                                           " words; the model takes at most " +
                                           std::to_string(max_tokens));
  }
  if (words.empty()) throw Error(ErrorKind::BadInput, "the sentence is empty: type some words");
  std::vector<int> ids;
  ids.reserve(words.size());
  std::vector<std::string> unknown;
  for (const auto& w : words) {
    int i = id(w);
    if (i < 0) {
      if (unk_id_ >= 0) {
        i = unk_id_;
      } else {
        unknown.push_back(w);
        continue;
      }
    }
    ids.push_back(i);
  }
  if (!unknown.empty()) {
    std::string list;
    for (size_t i = 0; i < unknown.size() && i < 5; ++i)
      list += (i ? ", \"" : "\"") + printable(unknown[i]) + "\"";
    std::string hint;
    for (int i = 0; i < size() && i < 12; ++i) hint += (i ? " " : "") + printable(tokens_[i]);
    if (size() > 12) hint += " …";
    throw Error(
        ErrorKind::BadInput,
        std::string(unknown.size() == words.size() ? "every word is unknown: " : "unknown ") +
            (unknown.size() == 1 ? "word " : "words ") + list + " (not in the " + what_ + " of " +
            std::to_string(size()) + " tokens: " + hint + ")");
  }
  return ids;
}

std::vector<std::string> Vocabulary::decode(const std::vector<int>& ids) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (int i : ids) out.push_back(token(i));
  return out;
}

std::vector<std::string> Vocabulary::unknownWords(const std::string& sentence) const {
  std::istringstream in(sentence);
  std::vector<std::string> out;
  for (std::string w; in >> w;)
    if (id(w) < 0 && std::find(out.begin(), out.end(), w) == out.end()) out.push_back(std::move(w));
  return out;
}

std::vector<int> parseIdList(const std::string& text, int vocab_size, const std::string& what) {
  std::vector<int> ids;
  auto space = [&](size_t k) { return k < text.size() && std::isspace((unsigned char)text[k]); };
  size_t k = 0;
  while (space(k)) ++k;
  if (k == text.size()) throw Error(ErrorKind::BadInput, what + ": the id list is empty");
  // Entries are separated by a comma or by white space (a file of ids one a line); every comma
  // separates two entries: "1,2," has an empty third one.
  for (;;) {
    const size_t from = k;
    while (k < text.size() && text[k] != ',' && !space(k)) ++k;
    const std::string item = text.substr(from, k - from);
    if (item.empty())
      throw Error(ErrorKind::BadInput, what + ": empty entry " + std::to_string(ids.size() + 1) +
                                           " in the id list \"" + clipForMessage(text, 80) + "\"");
    if (item.size() > 9 || item.find_first_not_of("0123456789") != std::string::npos)
      throw Error(ErrorKind::BadInput,
                  what + ": \"" + clipForMessage(item, 40) + "\" is not a token id");
    const int id = std::stoi(item);
    if (id >= vocab_size)
      throw Error(ErrorKind::BadInput, what + ": id " + item + " is outside the vocabulary (0.." +
                                           std::to_string(vocab_size - 1) + ")");
    ids.push_back(id);
    while (space(k)) ++k;
    if (k == text.size()) break;
    if (text[k] == ',') {
      ++k;
      while (space(k)) ++k;
    }
  }
  return ids;
}

}  // namespace attnviz

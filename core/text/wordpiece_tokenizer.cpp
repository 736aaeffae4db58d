#include "text/wordpiece_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "base/error.h"
#include "base/file_read.h"
#include "base/json_safe.h"
#include "text/unicode_classes.h"
#include "text/unicode_text.h"

namespace attnviz {

namespace {

constexpr size_t kMaxCharsPerWord = 100;  // WordpieceTokenizer's max_input_chars_per_word

bool isCjk(char32_t c) {
  // The CJK Unified Ideographs blocks BertTokenizer splits around (not Hiragana, Katakana, Hangul).
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool isBertWhitespace(char32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || isUnicodeSpaceSeparator(c);
}

bool isBertControl(char32_t c) {
  return c != '\t' && c != '\n' && c != '\r' && isUnicodeOther(c);
}

bool isBertPunctuation(char32_t c) {
  // Every ASCII character that is not a letter, digit or space counts ("$", "^", "`" too).
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
         (c >= 123 && c <= 126) || isUnicodePunctuation(c);
}

// str.split(): runs of Python whitespace separate words.
std::vector<std::u32string> splitOnSpace(const std::u32string& s) {
  std::vector<std::u32string> out;
  std::u32string cur;
  for (char32_t c : s) {
    if (isPythonSpace(c)) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

std::u32string stripAccents(const std::u32string& s) {
  std::u32string out;
  for (char32_t c : nfd(s))
    if (!isUnicodeNonspacingMark(c)) out.push_back(c);
  return out;
}

std::vector<std::u32string> basicTokenize(const std::u32string& text, bool lower, bool strip,
                                          bool chinese) {
  std::u32string clean;
  for (char32_t c : text) {
    if (c == 0 || c == 0xFFFD || isBertControl(c)) continue;
    if (isBertWhitespace(c)) {
      clean.push_back(' ');
    } else if (chinese && isCjk(c)) {
      clean.push_back(' ');
      clean.push_back(c);
      clean.push_back(' ');
    } else {
      clean.push_back(c);
    }
  }
  std::vector<std::u32string> out;
  for (std::u32string word : splitOnSpace(clean)) {
    if (lower) word = lowercaseEach(word);
    if (strip) word = stripAccents(word);
    // Each punctuation character a word of its own.
    std::u32string cur;
    for (char32_t c : word) {
      if (isBertPunctuation(c)) {
        if (!cur.empty()) out.push_back(std::move(cur));
        cur.clear();
        out.push_back(std::u32string(1, c));
      } else {
        cur.push_back(c);
      }
    }
    if (!cur.empty()) out.push_back(std::move(cur));
  }
  return out;
}

class WordPiece : public Tokenizer {
 public:
  explicit WordPiece(const WordPieceOptions& o) : o_(o) {
    index_.reserve(o_.vocab.size());
    for (size_t i = 0; i < o_.vocab.size(); ++i) {
      index_.emplace(o_.vocab[i], (int)i);
      const std::string_view t = o_.vocab[i];
      max_token_chars_ = std::max(max_token_chars_,
                                  utf8ToCodePoints(t.rfind("##", 0) == 0 ? t.substr(2) : t).size());
    }
    strip_ = o_.strip_accents.value_or(o_.do_lower_case);
    auto need = [&](const std::string& token, const char* role) {
      const int i = id(token);
      if (i < 0)
        throw Error(ErrorKind::BadVocabulary,
                    std::string("the WordPiece vocabulary (") + std::to_string(o_.vocab.size()) +
                        " tokens) has no " + role + " token \"" + clipForMessage(token, 40) + "\"");
      return i;
    };
    unk_ = need(o_.unk_token, "unknown-word");
    cls_ = need(o_.cls_token, "sentence-start");
    sep_ = need(o_.sep_token, "separator");
    pad_ = id(o_.pad_token);
    for (const std::string* t :
         {&o_.unk_token, &o_.sep_token, &o_.pad_token, &o_.cls_token, &o_.mask_token})
      if (!t->empty() && id(*t) >= 0) specials_.push_back(*t);
  }

  std::string describe() const override {
    return "WordPiece (" + std::to_string(o_.vocab.size()) + " tokens; " +
           (o_.do_lower_case ? "lower case" : "case kept") + (strip_ ? ", accents stripped" : "") +
           "; [CLS] … [SEP])";
  }

  std::vector<int> encodeSource(const std::string& text) const override {
    checkSentenceText(text, "the sentence");
    std::vector<int> ids{cls_};
    append(text, ids);
    ids.push_back(sep_);
    return ids;
  }

  std::vector<int> encodeTarget(const std::string& text) const override {
    checkSentenceText(text, "the target prefix");
    std::vector<int> ids;
    append(text, ids);
    return ids;
  }

  std::string decode(Side, const std::vector<int>& ids) const override {
    // BertTokenizer's convert_tokens_to_string: joined by spaces, " ##" removed.
    std::string out;
    for (int i : ids) {
      if (i < 0 || i >= (int)o_.vocab.size() || i == cls_ || i == sep_ || i == pad_) continue;
      const std::string& t = o_.vocab[i];
      if (t.rfind("##", 0) == 0 && !out.empty())
        out += t.substr(2);
      else
        out += (out.empty() ? "" : " ") + t;
    }
    return out;
  }

 private:
  int id(const std::string& token) const {
    auto it = index_.find(token);
    return it == index_.end() ? -1 : it->second;
  }

  // The special token that begins at text[at], the longest when several do; null when none.
  const std::string* specialAt(const std::string& text, size_t at) const {
    const std::string* best = nullptr;
    for (const std::string& s : specials_)
      if (text.compare(at, s.size(), s) == 0 && (!best || s.size() > best->size())) best = &s;
    return best;
  }

  void append(const std::string& typed, std::vector<int>& ids) const {
    // transformers' tokenize(): with do_lower_case every character outside a special token is
    // lowercased alone; then the special tokens are split off (leftmost, longest) and the rest
    // goes through the BasicTokenizer and WordPiece.
    std::string text;
    if (o_.do_lower_case) {
      const std::u32string cps = utf8ToCodePoints(typed);
      size_t byte = 0;
      for (size_t k = 0; k < cps.size();) {
        if (const std::string* s = specialAt(typed, byte)) {
          text += *s;
          const size_t end = byte + s->size();
          while (byte < end) {
            std::string one;
            appendUtf8(one, cps[k++]);
            byte += one.size();
          }
          continue;
        }
        std::string one;
        appendUtf8(one, cps[k]);
        byte += one.size();
        text += codePointsToUtf8(lowercaseEach(std::u32string(1, cps[k++])));
      }
    } else {
      text = typed;
    }
    size_t from = 0;
    for (size_t at = 0; at <= text.size(); ++at) {
      const std::string* s = at < text.size() ? specialAt(text, at) : nullptr;
      if (!s && at < text.size()) continue;
      words(text.substr(from, at - from), ids);
      if (!s) break;
      ids.push_back(id(*s));
      at += s->size() - 1;
      from = at + 1;
    }
  }

  void words(const std::string& chunk, std::vector<int>& ids) const {
    for (const std::u32string& word : basicTokenize(utf8ToCodePoints(chunk), o_.do_lower_case,
                                                    strip_, o_.tokenize_chinese_chars))
      wordPiece(word, ids);
  }

  // Greedy longest match first; the whole word is [UNK] when some rest has no piece.
  void wordPiece(const std::u32string& word, std::vector<int>& ids) const {
    if (word.size() > kMaxCharsPerWord) {
      ids.push_back(unk_);
      return;
    }
    // The word's UTF-8 and where each character begins in it: every candidate is a slice.
    std::string utf8;
    std::vector<size_t> at;
    for (char32_t c : word) {
      at.push_back(utf8.size());
      appendUtf8(utf8, c);
    }
    at.push_back(utf8.size());
    std::vector<int> pieces;
    std::string piece;
    for (size_t start = 0; start < word.size();) {
      int found = -1;
      // No token is longer than the longest in the vocabulary: longer candidates are skipped.
      size_t end = std::min(word.size(), start + max_token_chars_);
      for (; end > start; --end) {
        piece.assign(start > 0 ? "##" : "");
        piece.append(utf8, at[start], at[end] - at[start]);
        if ((found = id(piece)) >= 0) break;
      }
      if (found < 0) {
        ids.push_back(unk_);
        return;
      }
      pieces.push_back(found);
      start = end;
    }
    ids.insert(ids.end(), pieces.begin(), pieces.end());
  }

  WordPieceOptions o_;
  bool strip_ = true;
  std::unordered_map<std::string, int> index_;
  size_t max_token_chars_ = 0;  // code points of the longest token, "##" not counted
  int unk_ = -1, cls_ = -1, sep_ = -1, pad_ = -1;
  std::vector<std::string> specials_;
};

// A special token as tokenizer_config.json writes it: a string or an AddedToken {"content": …}.
std::optional<std::string> tokenName(const nlohmann::json& v, const std::string& where) {
  if (v.is_null()) return std::nullopt;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string())
    return v["content"].get<std::string>();
  throw Error(ErrorKind::BadConfig,
              where + " is " + clipForMessage(v.dump(), 60) +
                  ", expected a token: a string or an object with a \"content\" string");
}

nlohmann::json readJsonFile(const std::filesystem::path& path) {
  constexpr uintmax_t kMaxBytes = 16ull << 20;
  return parseJsonStrict(readBoundedFile(path.string(), kMaxBytes, "the JSON file"), path.string());
}

}  // namespace

std::vector<std::string> bertBasicTokenize(const std::string& text, bool do_lower_case,
                                           bool strip_accents, bool tokenize_chinese_chars) {
  std::vector<std::string> out;
  for (const auto& w :
       basicTokenize(utf8ToCodePoints(text), do_lower_case, strip_accents, tokenize_chinese_chars))
    out.push_back(codePointsToUtf8(w));
  return out;
}

std::shared_ptr<const Tokenizer> openWordPiece(const WordPieceOptions& options) {
  return std::make_shared<WordPiece>(options);
}

WordPieceOptions wordPieceOptionsFromFolder(const std::string& folder,
                                            std::vector<std::string> vocab,
                                            std::vector<std::string>* notes) {
  namespace fs = std::filesystem;
  WordPieceOptions o;
  o.vocab = std::move(vocab);
  const fs::path dir(folder);
  auto flag = [](const nlohmann::json& j, const char* key, const std::string& where, bool* out) {
    if (!j.contains(key) || j[key].is_null()) return false;
    if (!j[key].is_boolean())
      throw Error(ErrorKind::BadConfig, where + ": \"" + key + "\" is " +
                                            clipForMessage(j[key].dump(), 40) +
                                            ", expected true or false");
    *out = j[key].get<bool>();
    return true;
  };
  bool said = false;
  for (const char* name : {"tokenizer_config.json", "special_tokens_map.json"}) {
    if (!fs::exists(dir / name)) continue;
    const nlohmann::json j = readJsonFile(dir / name);
    const std::string where = (dir / name).string();
    if (!j.is_object()) throw Error(ErrorKind::BadConfig, where + ": expected a JSON object");
    said |= flag(j, "do_lower_case", where, &o.do_lower_case);
    bool strip = false;
    if (flag(j, "strip_accents", where, &strip)) o.strip_accents = strip;
    flag(j, "tokenize_chinese_chars", where, &o.tokenize_chinese_chars);
    for (auto [key, slot] : {std::pair{"unk_token", &o.unk_token},
                             {"sep_token", &o.sep_token},
                             {"pad_token", &o.pad_token},
                             {"cls_token", &o.cls_token},
                             {"mask_token", &o.mask_token}})
      if (j.contains(key))
        if (auto t = tokenName(j[key], where + ": \"" + key + "\"")) *slot = *t;
  }
  if (!said && fs::exists(dir / "tokenizer.json")) {
    // A folder saved with only the fast tokenizer: its BertNormalizer says the same.
    const nlohmann::json j = readJsonFile(dir / "tokenizer.json");
    const std::string where = (dir / "tokenizer.json").string() + ": normalizer";
    if (j.is_object() && j.contains("normalizer") && j["normalizer"].is_object() &&
        j["normalizer"].value("type", "") == "BertNormalizer") {
      const nlohmann::json& n = j["normalizer"];
      said = flag(n, "lowercase", where, &o.do_lower_case);
      bool strip = false;
      if (flag(n, "strip_accents", where, &strip)) o.strip_accents = strip;
      flag(n, "handle_chinese_chars", where, &o.tokenize_chinese_chars);
    }
  }
  if (!said && notes)
    notes->push_back(
        "no do_lower_case in tokenizer_config.json: text is lowercased and accents stripped, "
        "as BertTokenizer does by default");
  return o;
}

}  // namespace attnviz

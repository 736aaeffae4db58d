#include "text/hf_tokenizer_json.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "base/file_read.h"
#include "base/json_safe.h"
#include "base/safe_text.h"
#include "text/bpe_merges.h"
#include "text/bpe_tokenizer.h"
#include "text/onig_regex.h"
#include "text/unicode_classes.h"
#include "text/unicode_text.h"
#include "text/vocab.h"

namespace attnviz {

namespace {

using json = nlohmann::json;

constexpr uintmax_t kMaxFileBytes = 64ull << 20;     // Gemma 3's, among the largest, is 33 MiB
constexpr uint64_t kMaxEntries = uint64_t(1) << 20;  // in one JSON list or object
constexpr uint64_t kMaxValues = uint64_t(6) << 20;   // in the whole file
// What one sentence may become: the normalizers' output (all its stretches together) and its ids.
constexpr size_t kMaxNormalizedBytes = size_t(1) << 20;  // 16 times the longest sentence
constexpr size_t kMaxSentenceIds = size_t(1) << 18;
// The added tokens' text, all together (Gemma 3's 6k added tokens hold about 0.1 MiB).
constexpr size_t kMaxAddedTokenBytes = size_t(1) << 20;

// A first pass over the text that refuses a list or object too long before any is built: a
// tokenizer.json with 10^7 merges costs its bytes, never a DOM of 10^7 strings.
class SizeChecker : public json::json_sax_t {
 public:
  explicit SizeChecker(std::string what) : what_(std::move(what)) {}
  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(); }
  bool key(string_t& k) override {
    stack_.back().key = k;
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw Error(ErrorKind::InvalidJson, what_ + ": invalid JSON (" + e.what() + ")");
  }

 private:
  struct Level {
    uint64_t entries = 0;
    std::string key;  // the last key, in an object
  };
  bool value() {
    if (++values_ > kMaxValues)
      throw Error(ErrorKind::TooLarge,
                  what_ + ": more than " + std::to_string(kMaxValues) +
                      " JSON values; no tokenizer attnviz reads has that many");
    if (!stack_.empty() && ++stack_.back().entries > kMaxEntries)
      throw Error(ErrorKind::TooLarge,
                  what_ + ": " + path() + " holds more than " + std::to_string(kMaxEntries) +
                      " entries (a vocabulary or merges table that large is no tokenizer a model "
                      "was trained with)");
    return true;
  }
  bool open() {
    value();
    stack_.emplace_back();
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  // The keys leading to the innermost container: "model.merges".
  std::string path() const {
    std::string p;
    for (size_t i = 0; i + 1 < stack_.size(); ++i)
      if (!stack_[i].key.empty()) p += (p.empty() ? "" : ".") + clipForMessage(stack_[i].key, 40);
    return p.empty() ? "the top level" : "\"" + p + "\"";
  }
  std::string what_;
  std::vector<Level> stack_;
  uint64_t values_ = 0;
};

[[noreturn]] void refuse(const std::string& where, const std::string& what) {
  throw Error(ErrorKind::BadConfig, where + ": " + what);
}

const json* member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string stringOr(const json& j, const char* key, const std::string& where,
                     const std::string& fallback) {
  const json* v = member(j, key);
  if (!v) return fallback;
  if (!v->is_string())
    refuse(where, std::string("\"") + key + "\" is " + clipForMessage(v->dump(), 40) +
                      ", expected a string");
  return v->get<std::string>();
}

bool boolOr(const json& j, const char* key, const std::string& where, bool fallback) {
  const json* v = member(j, key);
  if (!v) return fallback;
  if (!v->is_boolean())
    refuse(where, std::string("\"") + key + "\" is " + clipForMessage(v->dump(), 40) +
                      ", expected true or false");
  return v->get<bool>();
}

std::string typeOf(const json& j, const std::string& where) {
  if (!j.is_object()) refuse(where, "expected an object, found " + jsonTypeName(j));
  return stringOr(j, "type", where, "");
}

// The items of a Sequence (under `list_key`), or the one component itself.
std::vector<const json*> flatten(const json& j, const char* list_key, const std::string& where) {
  std::vector<const json*> out;
  if (typeOf(j, where) != "Sequence") {
    out.push_back(&j);
    return out;
  }
  const json* items = member(j, list_key);
  if (!items || !items->is_array())
    refuse(where, std::string("a Sequence without a \"") + list_key + "\" list");
  for (const json& item : *items)
    for (const json* x : flatten(item, list_key, where)) out.push_back(x);
  return out;
}

// One code point of `s` (the replacement characters of Metaspace and the like are one char).
char32_t oneChar(const std::string& s, const std::string& where, const char* key) {
  const std::u32string cps = utf8ToCodePoints(s);
  if (cps.size() != 1)
    refuse(where, std::string("\"") + key + "\" is \"" + clipForMessage(s, 20) +
                      "\", expected one character");
  return cps[0];
}

// The size `s` has once every `from` in it is `to` (counted, not built).
size_t replacedSize(const std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return s.size();
  size_t hits = 0;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + from.size()))
    ++hits;
  return s.size() - hits * from.size() + hits * to.size();
}

void replaceAll(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  std::string out;
  for (size_t at = 0;;) {
    const size_t hit = s.find(from, at);
    if (hit == std::string::npos) {
      out.append(s, at, std::string::npos);
      break;
    }
    out.append(s, at, hit - at);
    out += to;
    at = hit + from.size();
  }
  s.swap(out);
}

bool isRustWhitespace(char32_t c) {
  return isUnicodeSpace(c);  // char::is_whitespace is the White_Space property
}

std::string stripWhitespace(const std::string& s, bool left, bool right) {
  std::u32string cps = utf8ToCodePoints(s);
  size_t a = 0, b = cps.size();
  if (left)
    while (a < b && isRustWhitespace(cps[a])) ++a;
  if (right)
    while (b > a && isRustWhitespace(cps[b - 1])) --b;
  return codePointsToUtf8(std::u32string_view(cps).substr(a, b - a));
}

// The parts of the pipeline, as read from the file.
struct NormalizerStep {
  enum class Kind { Prepend, Replace, Strip } kind;
  std::string a, b;  // Prepend: a; Replace: a → b
  bool left = false, right = false;
};

struct PreTokenizerStep {
  enum class Kind { ByteLevel, Metaspace, Digits, WhitespaceSplit, Split } kind;
  bool add_prefix_space = false, use_regex = true;  // ByteLevel
  std::string replacement;                          // Metaspace (one character)
  enum class Prepend { Always, First, Never } prepend = Prepend::Always;
  bool split = true;               // Metaspace
  bool individual_digits = false;  // Digits
  // Split: the pattern, what becomes of its matches (tokenizers' SplitDelimiterBehavior), and
  // whether the pattern marks what is between the delimiters instead.
  std::shared_ptr<const OnigPattern> regex;
  enum class Behavior {
    Isolated,
    Removed,
    MergedWithPrevious,
    MergedWithNext,
    Contiguous
  } behavior = Behavior::Isolated;
  bool invert = false;
};

struct DecoderStep {
  enum class Kind { ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip } kind;
  std::string a, b;  // Replace a → b; Metaspace a (replacement); Strip a (content)
  int start = 0, stop = 0;
  bool prepend = true;  // Metaspace: the first token's leading replacement is dropped
};

struct AddedToken {
  std::string content;
  int id = -1;
  bool special = false, lstrip = false, rstrip = false;
};

// A piece of text on its way through the pipeline, and whether it begins the typed text (what
// Metaspace's "first" scheme asks).
struct Piece {
  std::string text;
  bool at_start = false;
};

// The added tokens as one Aho–Corasick automaton over their reversed bytes: one pass over a text,
// right to left, gives the longest added token that begins at each byte, in time linear in the
// text (tokenizers matches added tokens leftmost-longest, with the aho-corasick crate).
class AddedTokenMatcher {
 public:
  void add(const std::string& content, int index) {
    int node = 0;
    for (auto c = content.rbegin(); c != content.rend(); ++c) {
      const int next = child(node, (unsigned char)*c);
      if (next >= 0) {
        node = next;
        continue;
      }
      nodes_.push_back(Node{});
      kids_.emplace_back();
      const int created = (int)nodes_.size() - 1;
      next_.emplace(key(node, (unsigned char)*c), created);
      kids_[node].push_back({(unsigned char)*c, created});
      node = created;
    }
    if (nodes_[node].token < 0) nodes_[node].token = index;
  }

  // The failure links, breadth first, and each node's longest token among its suffixes.
  void build() {
    std::vector<int> queue;
    for (const auto& [c, v] : kids_[0]) queue.push_back(v);
    for (int v : queue) nodes_[v].best = nodes_[v].token;
    for (size_t q = 0; q < queue.size(); ++q) {
      const int u = queue[q];
      for (const auto& [c, v] : kids_[u]) {
        int f = nodes_[u].fail;
        while (f > 0 && child(f, c) < 0) f = nodes_[f].fail;
        const int g = child(f, c);
        nodes_[v].fail = g >= 0 && g != v ? g : 0;
        nodes_[v].best = nodes_[v].token >= 0 ? nodes_[v].token : nodes_[nodes_[v].fail].best;
        queue.push_back(v);
      }
    }
    kids_.clear();
    kids_.shrink_to_fit();
  }

  bool empty() const { return nodes_.size() == 1; }

  // longest[i]: the index (as added) of the longest token that begins at text[i], -1 for none.
  std::vector<int> longestAt(const std::string& text) const {
    std::vector<int> longest(text.size(), -1);
    int state = 0;
    for (size_t i = text.size(); i-- > 0;) {
      const unsigned char c = (unsigned char)text[i];
      while (state > 0 && child(state, c) < 0) state = nodes_[state].fail;
      const int next = child(state, c);
      state = next >= 0 ? next : 0;
      longest[i] = nodes_[state].best;
    }
    return longest;
  }

 private:
  struct Node {
    int fail = 0, token = -1, best = -1;
  };
  static uint64_t key(int node, unsigned char c) { return (uint64_t)node << 8 | c; }
  int child(int node, unsigned char c) const {
    auto it = next_.find(key(node, c));
    return it == next_.end() ? -1 : it->second;
  }
  std::vector<Node> nodes_{Node{}};
  std::vector<std::vector<std::pair<unsigned char, int>>> kids_{{}};  // while building
  std::unordered_map<uint64_t, int> next_;                            // (node, byte) → child
};

class HfTokenizerJson : public Tokenizer {
 public:
  HfTokenizerJson(const json& root, const std::string& path, TokenizerJson& out) : file_(path) {
    name_ = std::filesystem::path(path).filename().string();
    if (!root.is_object()) refuse(path, "expected a JSON object, found " + jsonTypeName(root));
    readModel(root, out);
    readAddedTokens(root, out);
    if (const json* n = member(root, "normalizer")) readNormalizer(*n);
    if (const json* p = member(root, "pre_tokenizer")) readPreTokenizer(*p);
    if (const json* p = member(root, "post_processor")) readPostProcessor(*p);
    if (const json* d = member(root, "decoder")) readDecoder(*d);
    out.prefix_ids = prefix_;
    out.suffix_ids = suffix_;
    out.unk_id = unk_;
  }

  std::string describe() const override {
    return "tokenizer.json: BPE, " + std::to_string(vocab_size_) + " tokens, " +
           std::to_string(merge_count_) + " merges" + (byte_level_ ? ", byte-level" : "") +
           (byte_fallback_ ? ", byte fallback" : "") +
           (dropout_ ? " (its dropout not applied)" : "");
  }

  std::vector<int> encodeSource(const std::string& text) const override {
    checkSentenceText(text, "the sentence");
    std::vector<int> ids = prefix_;
    append(text, ids);
    ids.insert(ids.end(), suffix_.begin(), suffix_.end());
    return ids;
  }

  std::vector<int> encodeTarget(const std::string& text) const override {
    checkSentenceText(text, "the prompt");
    std::vector<int> ids = prefix_;
    append(text, ids);
    return ids;
  }

  std::string decode(Side, const std::vector<int>& ids) const override {
    std::vector<std::string> tokens;
    for (int id : ids) {
      if (id < 0 || id >= (int)tokens_.size() || special_ids_.count(id)) continue;
      tokens.push_back(tokens_[id]);
    }
    for (const DecoderStep& d : decoders_) tokens = applyDecoder(d, tokens);
    std::string out;
    for (const auto& t : tokens) out += t;
    return out;
  }

 private:
  // ---- reading ----
  void readModel(const json& root, TokenizerJson& out) {
    const std::string where = file_ + ": model";
    const json* m = member(root, "model");
    if (!m) refuse(file_, "no \"model\"");
    std::string type = typeOf(*m, where);
    if (type.empty() && member(*m, "merges")) type = "BPE";  // older files name no type
    if (type != "BPE")
      refuse(where, "type \"" + clipForMessage(type, 40) +
                        "\" is not a model attnviz implements (it reads BPE; BERT's WordPiece "
                        "comes from vocab.txt, SentencePiece's Unigram from tokenizer.model)");
    const json* vocab = member(*m, "vocab");
    if (!vocab || !vocab->is_object())
      refuse(where, "\"vocab\" is " + (vocab ? jsonTypeName(*vocab) : std::string("missing")) +
                        ", expected an object token → id");
    // Ids: each token's, at most kMaxTokens, each once.
    int max_id = -1;
    for (auto it = vocab->begin(); it != vocab->end(); ++it) {
      const json& v = it.value();
      if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
          v.get<int64_t>() >= VocabularyLimits::kMaxTokens)
        throw Error(ErrorKind::BadVocabulary, where + ".vocab: \"" + clipForMessage(it.key(), 40) +
                                                  "\" maps to " + clipForMessage(v.dump(), 30) +
                                                  ", expected an id 0 to " +
                                                  std::to_string(VocabularyLimits::kMaxTokens - 1));
      max_id = std::max(max_id, (int)v.get<int64_t>());
    }
    tokens_.assign((size_t)max_id + 1, std::string());
    std::vector<char> named(tokens_.size(), 0);
    for (auto it = vocab->begin(); it != vocab->end(); ++it) {
      const int id = (int)it.value().get<int64_t>();
      if (named[id])
        throw Error(ErrorKind::BadVocabulary, where + ".vocab: \"" + clipForMessage(it.key(), 40) +
                                                  "\" and \"" + clipForMessage(tokens_[id], 40) +
                                                  "\" both have id " + std::to_string(id));
      if (!isValidUtf8(it.key()) || it.key().empty())
        throw Error(ErrorKind::BadVocabulary, where + ".vocab: the token of id " +
                                                  std::to_string(id) + " is " +
                                                  (it.key().empty() ? "empty" : "not valid UTF-8"));
      named[id] = 1;
      tokens_[id] = it.key();
      index_.emplace(it.key(), id);
    }
    vocab_size_ = index_.size();
    dropout_ = member(*m, "dropout") && member(*m, "dropout")->is_number() &&
               member(*m, "dropout")->get<double>() > 0;
    fuse_unk_ = boolOr(*m, "fuse_unk", where, false);
    byte_fallback_ = boolOr(*m, "byte_fallback", where, false);
    ignore_merges_ = boolOr(*m, "ignore_merges", where, false);
    prefix_str_ = stringOr(*m, "continuing_subword_prefix", where, "");
    suffix_str_ = stringOr(*m, "end_of_word_suffix", where, "");
    if (const json* u = member(*m, "unk_token")) {
      if (!u->is_string())
        refuse(where, "\"unk_token\" is " + jsonTypeName(*u) + ", expected a string");
      unk_ = id(u->get<std::string>());
      if (unk_ < 0)
        throw Error(ErrorKind::BadVocabulary, where + ": the unk_token \"" +
                                                  clipForMessage(u->get<std::string>(), 40) +
                                                  "\" is not in the vocabulary");
    }
    if (byte_fallback_)
      for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        byte_token_[b] = id(name);
      }
    const json* merges = member(*m, "merges");
    if (!merges) merges = &empty_;
    if (!merges->is_array())
      refuse(where, "\"merges\" is " + jsonTypeName(*merges) + ", expected a list");
    int rank = 0;
    for (const json& e : *merges) {
      const std::string at = where + ".merges[" + std::to_string(rank) + "]";
      std::string left, right;
      if (e.is_string()) {  // "left right"
        const std::string s = e.get<std::string>();
        const size_t space = s.find(' ');
        if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
          throw Error(ErrorKind::BadVocabulary,
                      at + " is \"" + clipForMessage(s, 40) +
                          "\"; a merge is two tokens separated by one space");
        left = s.substr(0, space);
        right = s.substr(space + 1);
      } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
        left = e[0].get<std::string>();
        right = e[1].get<std::string>();
      } else {
        throw Error(ErrorKind::BadVocabulary, at + " is " + clipForMessage(e.dump(), 40) +
                                                  "; a merge is \"left right\" or [left, right]");
      }
      std::string merged = left;
      merged += !prefix_str_.empty() && right.rfind(prefix_str_, 0) == 0
                    ? right.substr(prefix_str_.size())
                    : right;
      const int l = id(left), r = id(right), mid = id(merged);
      if (l < 0 || r < 0 || mid < 0)
        throw Error(ErrorKind::BadVocabulary, at + " (\"" + clipForMessage(left, 30) + "\" + \"" +
                                                  clipForMessage(right, 30) + "\") needs \"" +
                                                  clipForMessage(l < 0   ? left
                                                                 : r < 0 ? right
                                                                         : merged,
                                                                 40) +
                                                  "\", which the vocabulary lacks");
      merges_.set(l, r, mid, rank++);
    }
    merge_count_ = (size_t)rank;
    (void)out;
  }

  void readAddedTokens(const json& root, TokenizerJson& out) {
    const std::string where = file_ + ": added_tokens";
    size_t added_bytes = 0;
    if (const json* list = member(root, "added_tokens")) {
      if (!list->is_array()) refuse(where, "expected a list, found " + jsonTypeName(*list));
      for (size_t i = 0; i < list->size(); ++i) {
        const json& e = (*list)[i];
        const std::string at = where + "[" + std::to_string(i) + "]";
        if (!e.is_object()) refuse(at, "expected an object");
        AddedToken t;
        t.content = stringOr(e, "content", at, "");
        const json* idv = member(e, "id");
        if (t.content.empty() || !isValidUtf8(t.content) ||
            t.content.size() > (size_t)VocabularyLimits::kMaxTokenBytes)
          throw Error(ErrorKind::BadVocabulary,
                      at + ": \"content\" is empty, not UTF-8 or longer than " +
                          std::to_string(VocabularyLimits::kMaxTokenBytes) + " bytes");
        if (!idv || !idv->is_number_integer() || idv->get<int64_t>() < 0 ||
            idv->get<int64_t>() >= VocabularyLimits::kMaxTokens)
          throw Error(ErrorKind::BadVocabulary,
                      at + ": \"id\" is " + (idv ? clipForMessage(idv->dump(), 30) : "missing") +
                          ", expected an id 0 to " +
                          std::to_string(VocabularyLimits::kMaxTokens - 1));
        t.id = (int)idv->get<int64_t>();
        t.special = boolOr(e, "special", at, false);
        t.lstrip = boolOr(e, "lstrip", at, false);
        t.rstrip = boolOr(e, "rstrip", at, false);
        if (t.id >= (int)tokens_.size()) tokens_.resize((size_t)t.id + 1);
        if (!tokens_[t.id].empty() && tokens_[t.id] != t.content)
          throw Error(ErrorKind::BadVocabulary,
                      at + ": \"" + clipForMessage(t.content, 40) + "\" has id " +
                          std::to_string(t.id) + ", which is \"" +
                          clipForMessage(tokens_[t.id], 40) + "\" in the model's vocabulary");
        tokens_[t.id] = t.content;
        index_.emplace(t.content, t.id);
        if (t.special) special_ids_.insert(t.id);
        if (added_index_.emplace(t.content, added_.size()).second) {
          added_bytes += t.content.size();
          if (added_bytes > kMaxAddedTokenBytes)
            throw Error(
                ErrorKind::TooLarge,
                at + ": the added tokens hold more than " + formatBytes(kMaxAddedTokenBytes) +
                    " of text together; no tokenizer a model was trained with has that much");
          added_matcher_.add(t.content, (int)added_.size());
          added_.push_back(t);
        }
      }
    }
    added_matcher_.build();
    // Ids no token names (a vocabulary with gaps) still need a row label.
    for (size_t i = 0; i < tokens_.size(); ++i)
      if (tokens_[i].empty()) {
        tokens_[i] = "<unused " + std::to_string(i) + ">";
        while (index_.count(tokens_[i])) tokens_[i] += "'";
      }
    out.tokens = tokens_;
  }

  void readNormalizer(const json& n) {
    const std::string where = file_ + ": normalizer";
    for (const json* s : flatten(n, "normalizers", where)) {
      const std::string type = typeOf(*s, where);
      NormalizerStep step{};
      if (type == "Prepend") {
        step.kind = NormalizerStep::Kind::Prepend;
        step.a = stringOr(*s, "prepend", where, "");
      } else if (type == "Replace") {
        step.kind = NormalizerStep::Kind::Replace;
        step.a = replacePattern(*s, where);
        step.b = stringOr(*s, "content", where, "");
      } else if (type == "Strip") {
        step.kind = NormalizerStep::Kind::Strip;
        step.left = boolOr(*s, "strip_left", where, true);
        step.right = boolOr(*s, "strip_right", where, true);
      } else {
        refuse(where, "\"" + clipForMessage(type, 40) +
                          "\" is not a normalizer attnviz implements (it implements Prepend, "
                          "Replace with a string pattern, Strip and Sequence)");
      }
      normalizers_.push_back(step);
    }
  }

  std::string replacePattern(const json& s, const std::string& where) {
    const json* p = member(s, "pattern");
    if (p && p->is_object() && member(*p, "String") && member(*p, "String")->is_string())
      return member(*p, "String")->get<std::string>();
    if (p && p->is_object() && member(*p, "Regex"))
      refuse(where, "Replace with the regular expression " +
                        clipForMessage(member(*p, "Regex")->dump(), 60) +
                        ": attnviz implements string patterns only");
    refuse(where, "Replace without a {\"String\": …} pattern");
  }

  void readPreTokenizer(const json& p) {
    const std::string where = file_ + ": pre_tokenizer";
    for (const json* s : flatten(p, "pretokenizers", where)) {
      const std::string type = typeOf(*s, where);
      PreTokenizerStep step{};
      if (type == "ByteLevel") {
        step.kind = PreTokenizerStep::Kind::ByteLevel;
        step.add_prefix_space = boolOr(*s, "add_prefix_space", where, true);
        step.use_regex = boolOr(*s, "use_regex", where, true);
        byte_level_ = true;
      } else if (type == "Metaspace") {
        step.kind = PreTokenizerStep::Kind::Metaspace;
        step.replacement = stringOr(*s, "replacement", where, "\xE2\x96\x81");
        oneChar(step.replacement, where, "replacement");
        const std::string scheme = stringOr(*s, "prepend_scheme", where, "always");
        const bool add = boolOr(*s, "add_prefix_space", where, true);
        if (scheme == "always")
          step.prepend = PreTokenizerStep::Prepend::Always;
        else if (scheme == "first")
          step.prepend = PreTokenizerStep::Prepend::First;
        else if (scheme == "never")
          step.prepend = PreTokenizerStep::Prepend::Never;
        else
          refuse(where, "Metaspace's prepend_scheme \"" + clipForMessage(scheme, 20) +
                            "\" is none of always, first, never");
        if (!add) step.prepend = PreTokenizerStep::Prepend::Never;
        step.split = boolOr(*s, "split", where, true);
      } else if (type == "Digits") {
        step.kind = PreTokenizerStep::Kind::Digits;
        step.individual_digits = boolOr(*s, "individual_digits", where, false);
      } else if (type == "WhitespaceSplit") {
        step.kind = PreTokenizerStep::Kind::WhitespaceSplit;
      } else if (type == "Split") {
        readSplit(*s, where, step);
      } else {
        refuse(where, "\"" + clipForMessage(type, 40) +
                          "\" is not a pre-tokenizer attnviz implements (it implements ByteLevel, "
                          "Metaspace, Digits, WhitespaceSplit, Split and Sequence)");
      }
      pre_tokenizers_.push_back(step);
    }
  }

  // Split: {"pattern": {"Regex": …} or {"String": …}, "behavior": …, "invert": …}.
  static void readSplit(const json& s, const std::string& where, PreTokenizerStep& step) {
    step.kind = PreTokenizerStep::Kind::Split;
    const json* pat = member(s, "pattern");
    const json* regex = pat ? member(*pat, "Regex") : nullptr;
    const json* literal = pat ? member(*pat, "String") : nullptr;
    if (!(regex && regex->is_string()) && !(literal && literal->is_string()))
      refuse(where, "Split's \"pattern\" is " +
                        (pat ? clipForMessage(pat->dump(), 60) : std::string("missing")) +
                        ", expected {\"Regex\": \"…\"} or {\"String\": \"…\"}");
    step.regex = std::make_shared<const OnigPattern>(
        (regex && regex->is_string() ? regex : literal)->get<std::string>(),
        !(regex && regex->is_string()), where + ": Split");
    using B = PreTokenizerStep::Behavior;
    const std::string behavior = stringOr(s, "behavior", where, "");
    static const std::pair<const char*, B> kBehaviors[] = {
        {"Isolated", B::Isolated},
        {"Removed", B::Removed},
        {"MergedWithPrevious", B::MergedWithPrevious},
        {"MergedWithNext", B::MergedWithNext},
        {"Contiguous", B::Contiguous}};
    bool known = false;
    for (const auto& [name, b] : kBehaviors)
      if (behavior == name) step.behavior = b, known = true;
    if (!known)
      refuse(where, "Split's \"behavior\" is \"" + clipForMessage(behavior, 30) +
                        "\", expected Isolated, Removed, MergedWithPrevious, MergedWithNext or "
                        "Contiguous");
    step.invert = boolOr(s, "invert", where, false);
  }

  int specialId(const json& v, const std::string& where) {
    // ["<s>", 1] (Bert/RobertaProcessing)
    if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_number_integer())
      refuse(where, "expected [token, id], found " + clipForMessage(v.dump(), 40));
    return checkedId(v[1].get<int64_t>(), where);
  }

  int checkedId(int64_t id, const std::string& where) {
    if (id < 0 || id >= (int64_t)tokens_.size())
      throw Error(ErrorKind::BadVocabulary, where + ": id " + std::to_string(id) +
                                                " is outside the vocabulary (0.." +
                                                std::to_string(tokens_.size() - 1) + ")");
    return (int)id;
  }

  void readPostProcessor(const json& p) {
    const std::string where = file_ + ": post_processor";
    for (const json* s : flatten(p, "processors", where)) {
      const std::string type = typeOf(*s, where);
      if (type == "ByteLevel") continue;  // offsets only
      if (type == "TemplateProcessing") {
        const json* single = member(*s, "single");
        if (!single || !single->is_array())
          refuse(where, "TemplateProcessing without a \"single\" list");
        const json* specials = member(*s, "special_tokens");
        bool seen_sequence = false;
        for (const json& item : *single) {
          if (member(item, "Sequence")) {
            seen_sequence = true;
            continue;
          }
          const json* st = member(item, "SpecialToken");
          if (!st)
            refuse(where, "a template item " + clipForMessage(item.dump(), 60) +
                              " that is neither Sequence nor SpecialToken");
          const std::string name = stringOr(*st, "id", where, "");
          const json* entry = specials ? member(*specials, name.c_str()) : nullptr;
          const json* ids = entry ? member(*entry, "ids") : nullptr;
          if (!ids || !ids->is_array())
            refuse(where, "the template's special token \"" + clipForMessage(name, 40) +
                              "\" has no ids in \"special_tokens\"");
          for (const json& i : *ids) {
            if (!i.is_number_integer())
              refuse(where, "an id of \"" + clipForMessage(name, 40) + "\" is not an integer");
            (seen_sequence ? suffix_ : prefix_).push_back(checkedId(i.get<int64_t>(), where));
          }
        }
      } else if (type == "BertProcessing" || type == "RobertaProcessing") {
        prefix_.push_back(
            specialId(member(*s, "cls") ? *member(*s, "cls") : empty_, where + ".cls"));
        suffix_.push_back(
            specialId(member(*s, "sep") ? *member(*s, "sep") : empty_, where + ".sep"));
      } else {
        refuse(where, "\"" + clipForMessage(type, 40) +
                          "\" is not a post-processor attnviz implements (it implements "
                          "TemplateProcessing, ByteLevel, BertProcessing, RobertaProcessing and "
                          "Sequence)");
      }
    }
  }

  void readDecoder(const json& d) {
    const std::string where = file_ + ": decoder";
    for (const json* s : flatten(d, "decoders", where)) {
      const std::string type = typeOf(*s, where);
      DecoderStep step{};
      if (type == "ByteLevel") {
        step.kind = DecoderStep::Kind::ByteLevel;
      } else if (type == "Metaspace") {
        step.kind = DecoderStep::Kind::Metaspace;
        step.a = stringOr(*s, "replacement", where, "\xE2\x96\x81");
        step.prepend = stringOr(*s, "prepend_scheme", where, "always") != "never" &&
                       boolOr(*s, "add_prefix_space", where, true);
      } else if (type == "Replace") {
        step.kind = DecoderStep::Kind::Replace;
        step.a = replacePattern(*s, where);
        step.b = stringOr(*s, "content", where, "");
      } else if (type == "ByteFallback") {
        step.kind = DecoderStep::Kind::ByteFallback;
      } else if (type == "Fuse") {
        step.kind = DecoderStep::Kind::Fuse;
      } else if (type == "Strip") {
        step.kind = DecoderStep::Kind::Strip;
        step.a = stringOr(*s, "content", where, " ");
        for (auto [key, slot] : {std::pair{"start", &step.start}, std::pair{"stop", &step.stop}}) {
          const json* v = member(*s, key);
          if (v && (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > 64))
            refuse(where,
                   std::string("Strip's \"") + key + "\" is " + clipForMessage(v->dump(), 20));
          if (v) *slot = (int)v->get<int64_t>();
        }
      } else {
        refuse(where, "\"" + clipForMessage(type, 40) +
                          "\" is not a decoder attnviz implements (it implements ByteLevel, "
                          "Metaspace, Replace, ByteFallback, Fuse, Strip and Sequence)");
      }
      decoders_.push_back(step);
    }
  }

  // ---- encoding ----
  int id(const std::string& token) const {
    auto it = index_.find(token);
    return it == index_.end() ? -1 : it->second;
  }

  void append(const std::string& text, std::vector<int>& ids) const {
    // Split off the added tokens (leftmost, longest), then each stretch of text goes through the
    // normalizers, the pre-tokenizers and the model.
    struct Segment {
      std::string text;
      size_t offset = 0;
      int added = -1;
    };
    std::vector<Segment> segments;
    RegexBudget budget;  // what the sentence's regex searches may spend, together
    size_t from = 0;
    const std::vector<int> longest =
        added_matcher_.empty() ? std::vector<int>() : added_matcher_.longestAt(text);
    for (size_t at = 0; at < longest.size(); ++at) {
      if (longest[at] < 0) continue;
      const AddedToken* t = &added_[longest[at]];
      std::string before = text.substr(from, at - from);
      if (t->lstrip) before = stripWhitespace(before, false, true);
      segments.push_back({before, from, -1});
      segments.push_back({t->content, at, t->id});
      at += t->content.size();
      from = at;
      if (t->rstrip)
        while (from < text.size() && (text[from] == ' ' || text[from] == '\t' ||
                                      text[from] == '\n' || text[from] == '\r'))
          ++from;
      at = from - 1;
    }
    segments.push_back({text.substr(from), from, -1});
    size_t normalized_bytes = 0;  // of all the stretches so far
    for (const Segment& s : segments) {
      if (s.added >= 0) {
        pushIds(ids, &s.added, 1);
        continue;
      }
      if (s.text.empty()) continue;
      std::string normalized = s.text;
      for (const NormalizerStep& n : normalizers_)
        normalize(n, normalized, kMaxNormalizedBytes - normalized_bytes);
      normalized_bytes += normalized.size();
      std::vector<Piece> pieces{{normalized, s.offset == 0}};
      for (const PreTokenizerStep& p : pre_tokenizers_) pieces = preTokenize(p, pieces, budget);
      for (const Piece& p : pieces) model(p.text, ids);
    }
  }

  // The ids of a sentence, counted as they are pushed: a pipeline that multiplies its text stops
  // at kMaxSentenceIds.
  static void pushIds(std::vector<int>& ids, const int* first, size_t n) {
    if (ids.size() + n > kMaxSentenceIds)
      throw Error(ErrorKind::BadInput,
                  "the sentence gives more than " + std::to_string(kMaxSentenceIds) +
                      " tokens through the tokenizer.json's pipeline; tokenizing stopped");
    ids.insert(ids.end(), first, first + n);
  }

  // One normalizer on `s`, refused before its output is built when that would exceed `room`
  // bytes (what is left of the sentence's kMaxNormalizedBytes).
  void normalize(const NormalizerStep& n, std::string& s, size_t room) const {
    auto check = [&](size_t size, const char* what) {
      if (size > room)
        throw Error(ErrorKind::BadInput, file_ + ": the normalizer " + what +
                                             " makes the sentence " + formatBytes(size) +
                                             " long, over the " + formatBytes(kMaxNormalizedBytes) +
                                             " a sentence may become; tokenizing stopped");
    };
    switch (n.kind) {
      case NormalizerStep::Kind::Prepend:
        if (s.empty()) break;
        check(s.size() + n.a.size(), "Prepend");
        s = n.a + s;
        break;
      case NormalizerStep::Kind::Replace:
        check(replacedSize(s, n.a, n.b), "Replace");
        replaceAll(s, n.a, n.b);
        break;
      case NormalizerStep::Kind::Strip:
        s = stripWhitespace(s, n.left, n.right);
        break;
    }
  }

  static std::vector<Piece> preTokenize(const PreTokenizerStep& p, const std::vector<Piece>& in,
                                        RegexBudget& budget) {
    std::vector<Piece> out;
    for (const Piece& piece : in) {
      switch (p.kind) {
        case PreTokenizerStep::Kind::Split:
          split(p, piece, budget, out);
          break;
        case PreTokenizerStep::Kind::ByteLevel: {
          std::string s = piece.text;
          if (p.add_prefix_space && s.rfind(' ', 0) != 0) s = " " + s;
          std::vector<std::string> parts =
              p.use_regex ? gpt2Pretokenize(s) : std::vector<std::string>{s};
          bool first = piece.at_start;
          for (const std::string& part : parts) {
            std::string chars;
            for (unsigned char b : part) appendUtf8(chars, gpt2ByteChar(b));
            out.push_back({chars, first});
            first = false;
          }
          break;
        }
        case PreTokenizerStep::Kind::Metaspace: {
          std::string s = piece.text;
          replaceAll(s, " ", p.replacement);
          if (s.rfind(p.replacement, 0) != 0 &&
              (p.prepend == PreTokenizerStep::Prepend::Always ||
               (p.prepend == PreTokenizerStep::Prepend::First && piece.at_start)))
            s = p.replacement + s;
          if (!p.split) {
            out.push_back({s, piece.at_start});
            break;
          }
          // Split before each replacement character (it begins the next piece).
          bool first = piece.at_start;
          size_t begin = 0;
          for (size_t at = s.rfind(p.replacement, 0) == 0 ? p.replacement.size() : 0;
               at <= s.size();) {
            const size_t hit = s.find(p.replacement, at);
            const size_t end = hit == std::string::npos ? s.size() : hit;
            if (end > begin) out.push_back({s.substr(begin, end - begin), first});
            first = false;
            begin = end;
            if (hit == std::string::npos) break;
            at = hit + p.replacement.size();
          }
          break;
        }
        case PreTokenizerStep::Kind::Digits: {
          const std::u32string cps = utf8ToCodePoints(piece.text);
          std::u32string cur;
          bool cur_digits = false, first = piece.at_start;
          auto flush = [&] {
            if (!cur.empty()) out.push_back({codePointsToUtf8(cur), first}), first = false;
            cur.clear();
          };
          for (char32_t c : cps) {
            const bool digit = isUnicodeNumber(c);
            if (digit && p.individual_digits) {
              flush();
              cur.push_back(c);
              flush();
              continue;
            }
            if (!cur.empty() && digit != cur_digits) flush();
            cur.push_back(c);
            cur_digits = digit;
          }
          flush();
          break;
        }
        case PreTokenizerStep::Kind::WhitespaceSplit: {
          const std::u32string cps = utf8ToCodePoints(piece.text);
          std::u32string cur;
          bool first = piece.at_start;
          for (char32_t c : cps) {
            if (isRustWhitespace(c)) {
              if (!cur.empty()) out.push_back({codePointsToUtf8(cur), first}), first = false;
              cur.clear();
            } else {
              cur.push_back(c);
            }
          }
          if (!cur.empty()) out.push_back({codePointsToUtf8(cur), first});
          break;
        }
      }
    }
    return out;
  }

  // tokenizers' Split: the piece cut into the stretches between the pattern's matches and the
  // matches (NormalizedString::split), each kept, dropped or joined to a neighbour as `behavior`
  // says; empty pieces are dropped (PreTokenizedString::split).
  static void split(const PreTokenizerStep& p, const Piece& piece, RegexBudget& budget,
                    std::vector<Piece>& out) {
    if (piece.text.empty()) return;
    struct Part {
      size_t begin, end;
      bool match;
    };
    std::vector<Part> parts;
    size_t prev = 0;
    for (const auto& [b, e] : p.regex->findAll(piece.text, budget)) {
      if (prev != b) parts.push_back({prev, b, false});
      parts.push_back({b, e, true});
      prev = e;
    }
    if (prev != piece.text.size()) parts.push_back({prev, piece.text.size(), false});
    if (p.invert)
      for (Part& part : parts) part.match = !part.match;
    using B = PreTokenizerStep::Behavior;
    std::vector<Part> kept;  // match = removed, from here on
    bool previous = false;
    switch (p.behavior) {
      case B::Isolated:
        for (const Part& part : parts) kept.push_back({part.begin, part.end, false});
        break;
      case B::Removed:
        kept = parts;
        break;
      case B::Contiguous:
        for (const Part& part : parts) {
          if (part.match == previous && !kept.empty())
            kept.back().end = part.end;
          else
            kept.push_back({part.begin, part.end, false});
          previous = part.match;
        }
        break;
      case B::MergedWithPrevious:
        for (const Part& part : parts) {
          if (part.match && !previous && !kept.empty())
            kept.back().end = part.end;
          else
            kept.push_back({part.begin, part.end, false});
          previous = part.match;
        }
        break;
      case B::MergedWithNext:
        for (auto part = parts.rbegin(); part != parts.rend(); ++part) {
          if (part->match && !previous && !kept.empty())
            kept.back().begin = part->begin;
          else
            kept.push_back({part->begin, part->end, false});
          previous = part->match;
        }
        std::reverse(kept.begin(), kept.end());
        break;
    }
    bool first = piece.at_start;
    for (const Part& part : kept) {
      if (part.match || part.end == part.begin) continue;
      out.push_back({piece.text.substr(part.begin, part.end - part.begin), first});
      first = false;
    }
  }

  // The BPE model on one pre-tokenized piece (tokenizers' BPE::merge_word, then the merges).
  void model(const std::string& piece, std::vector<int>& ids) const {
    if (piece.empty()) return;
    if (ignore_merges_)
      if (const int whole = id(piece); whole >= 0) {
        pushIds(ids, &whole, 1);
        return;
      }
    const std::u32string cps = utf8ToCodePoints(piece);
    std::vector<int> word;
    bool unk_open = false;  // the last symbol is an <unk> that fuse_unk may extend
    for (size_t k = 0; k < cps.size(); ++k) {
      std::string s;
      if (k > 0) s = prefix_str_;
      appendUtf8(s, cps[k]);
      if (k + 1 == cps.size()) s += suffix_str_;
      if (const int i = id(s); i >= 0) {
        word.push_back(i);
        unk_open = false;
        continue;
      }
      if (byte_fallback_) {
        std::string bytes;
        appendUtf8(bytes, cps[k]);
        bool all = true;
        for (unsigned char b : bytes) all = all && byte_token_[b] >= 0;
        if (all) {
          for (unsigned char b : bytes) word.push_back(byte_token_[b]);
          unk_open = false;
          continue;
        }
      }
      if (unk_ < 0) {
        std::string shown;
        appendUtf8(shown, cps[k]);
        throw Error(ErrorKind::BadInput, "the character \"" + clipForMessage(shown, 8) +
                                             "\" is not in " + name_ +
                                             "'s vocabulary, which has no unk_token");
      }
      if (!(fuse_unk_ && unk_open)) word.push_back(unk_);
      unk_open = true;
    }
    merges_.apply(word);
    pushIds(ids, word.data(), word.size());
  }

  // ---- decoding ----
  std::vector<std::string> applyDecoder(const DecoderStep& d,
                                        const std::vector<std::string>& tokens) const {
    std::vector<std::string> out;
    switch (d.kind) {
      case DecoderStep::Kind::ByteLevel: {
        std::string bytes;
        for (const std::string& t : tokens) {
          std::string mine;
          bool all = true;
          for (char32_t c : utf8ToCodePoints(t)) {
            const int b = gpt2CharByte(c);
            if (b < 0) {
              all = false;
              break;
            }
            mine += (char)b;
          }
          bytes += all ? mine : t;
        }
        out.push_back(lossyUtf8(bytes));
        break;
      }
      case DecoderStep::Kind::Metaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          std::string t = tokens[i];
          replaceAll(t, d.a, " ");
          if (i == 0 && d.prepend && t.rfind(' ', 0) == 0) t.erase(0, 1);
          out.push_back(t);
        }
        break;
      case DecoderStep::Kind::Replace:
        for (std::string t : tokens) {
          replaceAll(t, d.a, d.b);
          out.push_back(t);
        }
        break;
      case DecoderStep::Kind::ByteFallback: {
        std::string pending;  // bytes of consecutive <0xXX> tokens
        auto flush = [&] {
          if (!pending.empty()) out.push_back(lossyUtf8(pending));
          pending.clear();
        };
        for (const std::string& t : tokens) {
          unsigned b = 0;
          if (t.size() == 6 && t.rfind("<0x", 0) == 0 && t[5] == '>' &&
              std::sscanf(t.c_str() + 3, "%2X", &b) == 1) {
            pending += (char)b;
          } else {
            flush();
            out.push_back(t);
          }
        }
        flush();
        break;
      }
      case DecoderStep::Kind::Fuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        out.push_back(all);
        break;
      }
      case DecoderStep::Kind::Strip:
        for (std::string t : tokens) {
          for (int k = 0; k < d.start && t.rfind(d.a, 0) == 0; ++k) t.erase(0, d.a.size());
          for (int k = 0; k < d.stop && t.size() >= d.a.size() &&
                          t.compare(t.size() - d.a.size(), d.a.size(), d.a) == 0;
               ++k)
            t.erase(t.size() - d.a.size());
          out.push_back(t);
        }
        break;
    }
    return out;
  }

  static std::string lossyUtf8(const std::string& bytes) {
    std::string out;
    for (size_t i = 0; i < bytes.size();) {
      const size_t len = utf8SequenceAt(bytes, i);
      if (len == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD for a byte that is not UTF-8
        ++i;
      } else {
        out.append(bytes, i, len);
        i += len;
      }
    }
    return out;
  }

  std::string file_, name_;
  const json empty_ = json::array();
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int> index_;
  size_t vocab_size_ = 0, merge_count_ = 0;
  BpeMerges merges_;
  int unk_ = -1;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false, dropout_ = false,
       byte_level_ = false;
  std::string prefix_str_, suffix_str_;
  int byte_token_[256]{};
  std::vector<AddedToken> added_;
  std::unordered_map<std::string, size_t> added_index_;  // content → added_
  AddedTokenMatcher added_matcher_;
  std::unordered_set<int> special_ids_;
  std::vector<NormalizerStep> normalizers_;
  std::vector<PreTokenizerStep> pre_tokenizers_;
  std::vector<int> prefix_, suffix_;
  std::vector<DecoderStep> decoders_;
};

}  // namespace

TokenizerJson readTokenizerJson(const std::string& path) {
  // The text, once: 10^7 merges cost their bytes, no more.
  const std::string text = readBoundedFile(path, kMaxFileBytes, "the tokenizer");
  SizeChecker sizes(path);
  json::sax_parse(text.begin(), text.end(), &sizes);
  const json root = parseJsonStrict(text, path);
  TokenizerJson out;
  out.tokenizer = std::make_shared<HfTokenizerJson>(root, path, out);
  return out;
}

}  // namespace attnviz

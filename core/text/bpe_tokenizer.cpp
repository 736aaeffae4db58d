#include "text/bpe_tokenizer.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "base/error.h"
#include "base/json_safe.h"
#include "text/unicode_classes.h"

namespace attnviz {

namespace {

constexpr uintmax_t kMaxMergesBytes = 64ull << 20;  // BART's merges.txt is about 0.5 MiB
constexpr size_t kMaxPieceBytes = 1024;             // one pre-tokenized piece (a word, a space run)

// One code point of valid UTF-8 at s[i]; advances i.
char32_t nextCodePoint(const std::string& s, size_t& i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < len && i + k < s.size(); ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += len;
  return cp;
}

std::string utf8(char32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += (char)cp;
  } else if (cp < 0x800) {
    out += (char)(0xC0 | (cp >> 6));
    out += (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += (char)(0xE0 | (cp >> 12));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  } else {
    out += (char)(0xF0 | (cp >> 18));
    out += (char)(0x80 | ((cp >> 12) & 0x3F));
    out += (char)(0x80 | ((cp >> 6) & 0x3F));
    out += (char)(0x80 | (cp & 0x3F));
  }
  return out;
}

// GPT-2's byte ↔ character table: printable Latin-1 bytes stand for themselves, the other 68
// bytes (controls, space, …) for the code points from 256 on, in byte order.
struct ByteChars {
  std::array<char32_t, 256> of{};
  std::unordered_map<char32_t, unsigned char> byte;
  ByteChars() {
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      of[b] = printable ? (char32_t)b : (char32_t)(256 + extra++);
      byte[of[b]] = (unsigned char)b;
    }
  }
};
const ByteChars& byteChars() {
  static const ByteChars table;
  return table;
}

bool isOther(char32_t c) {
  return !isUnicodeSpace(c) && !isUnicodeLetter(c) && !isUnicodeNumber(c);
}

class ByteLevelBpe : public Tokenizer {
 public:
  explicit ByteLevelBpe(const BpeTokenizerFiles& f) : f_(f) {
    for (size_t i = 0; i < f_.vocab.size(); ++i) index_.emplace(f_.vocab[i], (int)i);
    readMerges(f.merges);
  }

  std::string describe() const override {
    return "byte-level BPE (" + std::filesystem::path(f_.merges).filename().string() + ", " +
           std::to_string(ranks_.size()) + " merges; ids from the vocabulary)";
  }

  std::vector<int> encodeSource(const std::string& text) const override {
    checkSentenceText(text, "the sentence");
    std::vector<int> ids;
    if (f_.bos_id >= 0) ids.push_back(f_.bos_id);
    append(text, ids);
    if (f_.eos_id >= 0) ids.push_back(f_.eos_id);
    return ids;
  }

  std::vector<int> encodeTarget(const std::string& text) const override {
    checkSentenceText(text, "the target prefix");
    std::vector<int> ids;
    if (f_.bos_id >= 0) ids.push_back(f_.bos_id);
    append(text, ids);
    return ids;
  }

  std::string decode(Side, const std::vector<int>& ids) const override {
    const ByteChars& bc = byteChars();
    std::string out;
    for (int id : ids) {
      if (id < 0 || id >= (int)f_.vocab.size() || id == f_.bos_id || id == f_.eos_id ||
          id == f_.pad_id)
        continue;
      const std::string& token = f_.vocab[id];
      for (size_t i = 0; i < token.size();) {
        const char32_t cp = nextCodePoint(token, i);
        auto it = bc.byte.find(cp);
        if (it != bc.byte.end()) out += (char)it->second;
      }
    }
    return out;
  }

 private:
  void readMerges(const std::string& path) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) throw Error(ErrorKind::Io, path + ": cannot read the merges (" + ec.message() + ")");
    if (size > kMaxMergesBytes)
      throw Error(ErrorKind::TooLarge, path + ": the merges file is " + formatBytes(size) +
                                           "; at most " + formatBytes(kMaxMergesBytes) +
                                           " are read");
    std::ifstream in(path, std::ios::binary);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || (number == 1 && line.rfind("#version", 0) == 0)) continue;
      const size_t space = line.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
          line.find(' ', space + 1) != std::string::npos || !isValidUtf8(line))
        throw Error(ErrorKind::BadVocabulary,
                    path + ": line " + std::to_string(number) + " is \"" +
                        escapeControlChars(clipForMessage(line, 60)) +
                        "\"; a merge is two symbols separated by one space");
      ranks_.emplace(line, (int)ranks_.size());  // the first of a repeated merge keeps its rank
    }
  }

  int rank(const std::string& a, const std::string& b) const {
    auto it = ranks_.find(a + " " + b);
    return it == ranks_.end() ? std::numeric_limits<int>::max() : it->second;
  }

  // The merges applied to one pre-tokenized piece's byte characters, lowest rank first, every
  // occurrence of that pair at once, until no pair has a rank.
  std::vector<std::string> bpe(const std::string& piece) const {
    // Merging costs O(length²): a word this long is no text a model was trained on.
    if (piece.size() > kMaxPieceBytes)
      throw Error(ErrorKind::BadInput,
                  "the word \"" + escapeControlChars(clipForMessage(piece, 40)) + "\" is " +
                      std::to_string(piece.size()) + " bytes long; at most " +
                      std::to_string(kMaxPieceBytes) + " are tokenized");
    std::vector<std::string> word;
    for (unsigned char b : piece) word.push_back(utf8(byteChars().of[b]));
    while (word.size() > 1) {
      int best = std::numeric_limits<int>::max();
      size_t at = 0;
      for (size_t i = 0; i + 1 < word.size(); ++i) {
        const int r = rank(word[i], word[i + 1]);
        if (r < best) best = r, at = i;
      }
      if (best == std::numeric_limits<int>::max()) break;
      const std::string first = word[at], second = word[at + 1];
      std::vector<std::string> merged;
      for (size_t i = 0; i < word.size();) {
        if (i + 1 < word.size() && word[i] == first && word[i + 1] == second) {
          merged.push_back(first + second);
          i += 2;
        } else {
          merged.push_back(word[i++]);
        }
      }
      word.swap(merged);
    }
    return word;
  }

  void append(const std::string& text, std::vector<int>& ids) const {
    for (const std::string& piece : gpt2Pretokenize(text))
      for (const std::string& symbol : bpe(piece)) {
        auto it = index_.find(symbol);
        if (it != index_.end())
          ids.push_back(it->second);
        else if (f_.unk_id >= 0)
          ids.push_back(f_.unk_id);
        else
          throw Error(ErrorKind::BadInput, "the BPE symbol \"" + symbol +
                                               "\" is not in the vocabulary, which has no <unk>");
      }
  }

  BpeTokenizerFiles f_;
  std::unordered_map<std::string, int> index_;
  std::unordered_map<std::string, int> ranks_;  // "a b" → rank (line order)
};

}  // namespace

std::vector<std::string> gpt2Pretokenize(const std::string& text) {
  // Code points and where each begins in `text`.
  std::vector<char32_t> cp;
  std::vector<size_t> at;
  for (size_t i = 0; i < text.size();) {
    at.push_back(i);
    cp.push_back(nextCodePoint(text, i));
  }
  at.push_back(text.size());
  const size_t n = cp.size();
  std::vector<std::string> out;
  auto emit = [&](size_t a, size_t b) { out.push_back(text.substr(at[a], at[b] - at[a])); };
  auto run = [&](size_t from, bool (*in)(char32_t)) {
    size_t k = from;
    while (k < n && in(cp[k])) ++k;
    return k;
  };
  // The pattern's alternatives, tried in order at each position:
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  for (size_t i = 0; i < n;) {
    if (cp[i] == '\'') {
      auto is = [&](size_t k, char c) { return k < n && cp[k] == (char32_t)c; };
      size_t len = 0;
      if (is(i + 1, 's') || is(i + 1, 't') || is(i + 1, 'm') || is(i + 1, 'd'))
        len = 2;
      else if ((is(i + 1, 'r') && is(i + 2, 'e')) || (is(i + 1, 'v') && is(i + 2, 'e')) ||
               (is(i + 1, 'l') && is(i + 2, 'l')))
        len = 3;
      if (len) {
        emit(i, i + len);
        i += len;
        continue;
      }
    }
    const size_t j = cp[i] == ' ' && i + 1 < n ? i + 1 : i;  // the optional leading space
    bool matched = false;
    for (bool (*cls)(char32_t) : {&isUnicodeLetter, &isUnicodeNumber, &isOther}) {
      if (cls(cp[j])) {
        const size_t end = run(j, cls);
        emit(i, end);
        i = end;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    // Whitespace: the run, less its last character when a non-space follows (that one leads the
    // next piece), unless the run is that one character.
    size_t end = run(i, &isUnicodeSpace);
    if (end == i) end = i + 1;  // not reached: every code point is a letter, number, other or space
    if (end < n && end - i >= 2) --end;
    emit(i, end);
    i = end;
  }
  return out;
}

std::shared_ptr<const Tokenizer> openByteLevelBpe(const BpeTokenizerFiles& files) {
  return std::make_shared<ByteLevelBpe>(files);
}

}  // namespace attnviz

#include "text/bpe_tokenizer.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "base/error.h"
#include "base/file_read.h"
#include "base/json_safe.h"
#include "base/safe_text.h"
#include "text/bpe_merges.h"
#include "text/onig_regex.h"
#include "text/unicode_text.h"

namespace attnviz {

namespace {

constexpr uintmax_t kMaxMergesBytes = 64ull << 20;  // GPT-2's vocab.bpe is 0.45 MiB

// GPT-2's byte ↔ character table: printable Latin-1 bytes stand for themselves, the other 68
// bytes (controls, space, …) for the code points from 256 on, in byte order.
struct ByteChars {
  std::array<char32_t, 256> of{};
  std::array<std::string, 256> utf8{};
  ByteChars() {
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      of[b] = printable ? (char32_t)b : (char32_t)(256 + extra++);
      appendUtf8(utf8[b], of[b]);
    }
  }
};
const ByteChars& byteChars() {
  static const ByteChars table;
  return table;
}

class ByteLevelBpe : public Tokenizer {
 public:
  explicit ByteLevelBpe(const BpeTokenizerFiles& f) : f_(f) {
    index_.reserve(f_.vocab.size());
    for (size_t i = 0; i < f_.vocab.size(); ++i) index_.emplace(f_.vocab[i], (int)i);
    for (int b = 0; b < 256; ++b) {
      auto it = index_.find(byteChars().utf8[b]);
      byte_id_[b] = it == index_.end() ? -1 : it->second;
    }
    readMerges(f.merges);
  }

  std::string describe() const override {
    return "byte-level BPE (" + std::filesystem::path(f_.merges).filename().string() + ", " +
           std::to_string(merges_.size()) + " merges; ids from the vocabulary)";
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
    std::string out;
    for (int id : ids) {
      if (id < 0 || id >= (int)f_.vocab.size() || id == f_.bos_id || id == f_.eos_id ||
          id == f_.pad_id)
        continue;
      for (char32_t cp : utf8ToCodePoints(f_.vocab[id]))
        if (const int b = gpt2CharByte(cp); b >= 0) out += (char)b;
    }
    return out;
  }

 private:
  void readMerges(const std::string& path) {
    checkedFileSize(path, kMaxMergesBytes, "the merges file");
    std::ifstream in(path, std::ios::binary);
    std::string line;
    int number = 0, rank = 0;
    auto bad = [&](const std::string& why) {
      return Error(ErrorKind::BadVocabulary, path + ": line " + std::to_string(number) + " \"" +
                                                 clipForMessage(line, 60) + "\" " + why);
    };
    while (std::getline(in, line)) {
      ++number;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || (number == 1 && line.rfind("#version", 0) == 0)) continue;
      const size_t space = line.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
          line.find(' ', space + 1) != std::string::npos || !isValidUtf8(line))
        throw bad("is not a merge: two symbols separated by one space");
      if (rank == (int)BpeMerges::kMaxMerges)
        throw Error(ErrorKind::TooLarge, path + ": more than " +
                                             std::to_string(BpeMerges::kMaxMerges) +
                                             " merges; no tokenizer attnviz knows has that many");
      const std::string left = line.substr(0, space), right = line.substr(space + 1);
      const int l = id(left), r = id(right), m = id(left + right);
      if (l < 0 || r < 0 || m < 0)
        throw bad("merges \"" +
                  clipForMessage(l < 0   ? left
                                 : r < 0 ? right
                                         : left + right,
                                 40) +
                  "\", which the vocabulary (" + std::to_string(f_.vocab.size()) +
                  " tokens) lacks: the merges and the vocabulary are not one tokenizer's");
      merges_.set(l, r, m, rank++);
    }
  }

  int id(const std::string& token) const {
    auto it = index_.find(token);
    return it == index_.end() ? -1 : it->second;
  }

  void append(const std::string& text, std::vector<int>& ids) const {
    std::vector<int> word;
    for (const std::string& piece : gpt2Pretokenize(text)) {
      word.clear();
      for (unsigned char b : piece) word.push_back(byte_id_[b]);
      merges_.apply(word);
      for (size_t k = 0; k < word.size(); ++k) {
        if (word[k] >= 0) {
          ids.push_back(word[k]);
        } else if (f_.unk_id >= 0) {
          ids.push_back(f_.unk_id);
        } else {
          throw Error(ErrorKind::BadInput, "the byte \"" +
                                               byteChars().utf8[(unsigned char)piece[k]] +
                                               "\" is not in the vocabulary, which has no <unk>");
        }
      }
    }
  }

  BpeTokenizerFiles f_;
  std::unordered_map<std::string, int> index_;
  std::array<int, 256> byte_id_{};  // the id of each byte's character, -1 when absent
  BpeMerges merges_;
};

}  // namespace

char32_t gpt2ByteChar(unsigned char b) {
  return byteChars().of[b];
}

int gpt2CharByte(char32_t c) {
  if (c >= 256 && c < 256 + 68) {
    for (int b = 0; b < 256; ++b)
      if (byteChars().of[b] == c) return b;
    return -1;
  }
  if (c < 256 && byteChars().of[c] == c) return (int)c;
  return -1;
}

std::vector<std::string> gpt2Pretokenize(const std::string& text) {
  // GPT-2's pattern (encoder.py; tokenizers' ByteLevel), in the engine tokenizer.json's patterns
  // run in: \p{L}, \p{N} and \s are Oniguruma's (Unicode's categories, White_Space).
  static const OnigPattern pattern(
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+", false,
      "GPT-2's pre-tokenizer");
  if (size_t bad = 0; !isValidUtf8(text, &bad))
    throw Error(ErrorKind::BadInput, "the text is not valid UTF-8 (invalid byte at position " +
                                         std::to_string(bad) + ")");
  RegexBudget budget;
  std::vector<std::string> out;
  // Every character is a letter, a number, a space or none of these: the matches tile the text.
  for (const auto& [b, e] : pattern.findAll(text, budget)) out.push_back(text.substr(b, e - b));
  return out;
}

std::shared_ptr<const Tokenizer> openByteLevelBpe(const BpeTokenizerFiles& files) {
  return std::make_shared<ByteLevelBpe>(files);
}

std::optional<Gpt2FilePaths> findGpt2Files(const std::string& folder) {
  namespace fs = std::filesystem;
  const fs::path dir(folder);
  for (const auto& [vocab, merges] :
       {std::pair{"vocab.json", "merges.txt"}, std::pair{"encoder.json", "vocab.bpe"}})
    if (fs::exists(dir / vocab) && fs::exists(dir / merges))
      return Gpt2FilePaths{(dir / vocab).string(), (dir / merges).string()};
  return std::nullopt;
}

std::shared_ptr<const Tokenizer> openGpt2Tokenizer(const std::string& merges_path,
                                                   std::vector<std::string> vocab) {
  BpeTokenizerFiles f;
  f.merges = merges_path;
  f.vocab = std::move(vocab);
  f.bos_id = f.eos_id = f.pad_id = f.unk_id = -1;
  return openByteLevelBpe(f);
}

}  // namespace attnviz

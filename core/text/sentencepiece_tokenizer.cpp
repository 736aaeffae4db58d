#include "text/sentencepiece_tokenizer.h"

#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "base/file_read.h"

#ifdef ATTNVIZ_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

namespace attnviz {

#ifdef ATTNVIZ_HAVE_SENTENCEPIECE

namespace {

constexpr uintmax_t kMaxSpmBytes = 64ull << 20;  // Marian's models are under 1 MiB

// A protobuf varint at bytes[at]; false when it runs past the end or over 10 bytes.
bool readVarint(const std::string& bytes, size_t& at, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 70 && at < bytes.size(); shift += 7) {
    const uint8_t c = (uint8_t)bytes[at++];
    v |= uint64_t(c & 0x7f) << shift;
    if (c < 0x80) return true;
  }
  return false;
}

// Walks the fields of the protobuf message bytes[begin, end): f(field, wire type, value or length,
// offset of a length-delimited value). Stops quietly at anything malformed (libsentencepiece then
// says what).
template <class F>
void forEachField(const std::string& bytes, size_t begin, size_t end, F&& f) {
  size_t at = begin;
  while (at < end) {
    uint64_t key = 0, v = 0;
    if (!readVarint(bytes, at, key)) return;
    const int wire = int(key & 7);
    if (wire == 0) {
      if (!readVarint(bytes, at, v)) return;
    } else if (wire == 2) {
      if (!readVarint(bytes, at, v) || v > end - at) return;
    } else if (wire == 1 || wire == 5) {
      v = wire == 1 ? 8 : 4;
      if (v > end - at) return;
    } else {
      return;
    }
    if (at > end) return;
    f(key >> 3, wire, v, at);
    if (wire != 0) at += v;
  }
}

// ModelProto.pieces (field 1): each SentencePiece's text (field 1) and type (field 3; NORMAL 1 by
// default, USER_DEFINED 4, UNUSED 5 go into the tokenizer's trie). libsentencepiece refuses an
// empty piece without saying which, and gives a trie piece's text to darts as a C string, so one
// that begins with a NUL byte is a zero-length key that ends the load with darts' exception.
void checkPieces(const std::string& bytes, const std::string& path) {
  int index = 0;
  forEachField(bytes, 0, bytes.size(), [&](uint64_t field, int wire, uint64_t n, size_t at) {
    if (field != 1 || wire != 2) return;
    std::string text;
    uint64_t type = 1;
    forEachField(bytes, at, at + n, [&](uint64_t f, int w, uint64_t v, size_t a) {
      if (f == 1 && w == 2) text = bytes.substr(a, v);
      if (f == 3 && w == 0) type = v;
    });
    const bool in_trie = type == 1 || type == 4 || type == 5;
    if (text.empty() || (in_trie && text[0] == '\0'))
      throw Error(ErrorKind::BadVocabulary,
                  path + ": piece " + std::to_string(index) + " (" +
                      (type == 1   ? "normal"
                       : type == 4 ? "user-defined"
                       : type == 5 ? "unused"
                                   : "special") +
                      ") is " +
                      (text.empty()
                           ? "empty"
                           : "text beginning with a NUL byte, of zero length to libsentencepiece") +
                      "; every piece needs text");
    ++index;
  });
}

// A normalizer's precompiled_charsmap, as libsentencepiece reads it (normalizer.cc): a
// little-endian uint32 n, n bytes of a Darts double array (4-byte units), then the replacement
// strings, each ended by a NUL. Darts follows the units' offsets without checking them, so a unit
// that points past the array crashes the first encode; this walks every node the lookup can reach
// and checks every unit it would read. Each node is visited once: O(units × 256).
constexpr size_t kMaxCharsmapUnits = size_t(1) << 20;  // nmt_nfkc's trie has 60k units

void checkCharsmap(const std::string& map, const std::string& path, const char* spec) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::BadVocabulary, path + ": the " + spec + "'s precompiled_charsmap " +
                                               why + "; libsentencepiece would read past its data");
  };
  if (map.empty()) return;  // no charsmap: the identity normalization
  if (map.size() < 4) throw bad("is " + std::to_string(map.size()) + " bytes, too short");
  const uint32_t trie_bytes = (uint32_t)(uint8_t)map[0] | (uint32_t)(uint8_t)map[1] << 8 |
                              (uint32_t)(uint8_t)map[2] << 16 | (uint32_t)(uint8_t)map[3] << 24;
  if (trie_bytes > map.size() - 4)
    throw bad("says its trie is " + std::to_string(trie_bytes) + " bytes, more than the " +
              std::to_string(map.size() - 4) + " that follow");
  const size_t n = trie_bytes / 4;
  if (n == 0) throw bad("has an empty trie");
  if (n > kMaxCharsmapUnits)
    throw bad("has a trie of " + std::to_string(n) + " units, more than " +
              std::to_string(kMaxCharsmapUnits));
  const char* units = map.data() + 4;
  const std::string_view strings(map.data() + 4 + trie_bytes, map.size() - 4 - trie_bytes);
  auto unit = [&](size_t i) {
    uint32_t u;
    std::memcpy(&u, units + 4 * i, 4);
    return u;
  };
  // Darts' unit: offset, has_leaf, label, value.
  auto offset = [](uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); };
  auto hasLeaf = [](uint32_t u) { return ((u >> 8) & 1) == 1; };
  auto label = [](uint32_t u) { return u & ((1u << 31) | 0xFF); };
  auto value = [](uint32_t u) { return u & ((1u << 31) - 1); };
  std::vector<char> seen(n, 0);
  std::vector<size_t> todo;  // positions of nodes, whose base is pos ^ offset
  const size_t root_base = 0 ^ offset(unit(0));
  if (root_base >= n) throw bad("has a root that points past its " + std::to_string(n) + " units");
  todo.push_back(root_base);
  std::vector<char> base_seen(n, 0);
  base_seen[root_base] = 1;
  while (!todo.empty()) {
    const size_t base = todo.back();
    todo.pop_back();
    for (uint32_t c = 0; c < 256; ++c) {  // every byte a text may hold
      const size_t child = base ^ c;
      if (child >= n)
        throw bad("has a node at unit " + std::to_string(base) + " whose byte " +
                  std::to_string(c) + " leads to unit " + std::to_string(child) + " of " +
                  std::to_string(n));
      const uint32_t u = unit(child);
      if (label(u) != c || seen[child]) continue;
      seen[child] = 1;
      const size_t next = child ^ offset(u);
      if (next >= n)
        throw bad("has a unit " + std::to_string(child) + " whose offset leads to unit " +
                  std::to_string(next) + " of " + std::to_string(n));
      if (hasLeaf(u)) {
        const uint32_t v = value(unit(next));
        if (v >= strings.size() || strings.find('\0', v) == std::string_view::npos)
          throw bad("has a replacement at byte " + std::to_string(v) + " of its " +
                    std::to_string(strings.size()) + " bytes of strings, not ended by a NUL");
      }
      if (!base_seen[next]) {
        base_seen[next] = 1;
        todo.push_back(next);
      }
    }
  }
}

// ModelProto.normalizer_spec (field 3) and denormalizer_spec (field 5): their
// precompiled_charsmap (field 2) each.
void checkCharsmaps(const std::string& bytes, const std::string& path) {
  forEachField(bytes, 0, bytes.size(), [&](uint64_t field, int wire, uint64_t n, size_t at) {
    if ((field != 3 && field != 5) || wire != 2) return;
    forEachField(bytes, at, at + n, [&](uint64_t f, int w, uint64_t v, size_t a) {
      if (f == 2 && w == 2)
        checkCharsmap(bytes.substr(a, v), path,
                      field == 3 ? "normalizer_spec" : "denormalizer_spec");
    });
  });
}

std::unique_ptr<sentencepiece::SentencePieceProcessor> loadSpm(const std::string& path) {
  const std::string bytes = readBoundedFile(path, kMaxSpmBytes, "the SentencePiece model");
  checkPieces(bytes, path);
  checkCharsmaps(bytes, path);
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  sentencepiece::util::Status status;
  try {
    status = sp->LoadFromSerializedProto(bytes);
  } catch (const std::exception& e) {  // darts' exceptions for a trie it cannot build
    throw Error(ErrorKind::BadVocabulary,
                path + ": not a SentencePiece model libsentencepiece can load (" + e.what() + ")");
  }
  if (!status.ok())
    throw Error(
        ErrorKind::BadVocabulary,
        path + ": not a SentencePiece model libsentencepiece can load (" + status.ToString() + ")");
  return sp;
}

std::unordered_map<std::string, int> indexOf(const std::vector<std::string>& tokens) {
  std::unordered_map<std::string, int> index;
  for (size_t i = 0; i < tokens.size(); ++i) index.emplace(tokens[i], (int)i);
  return index;
}

// One side: its SentencePiece model and the model's ids of its pieces.
struct SpmSide {
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp;
  std::string file;
  const std::vector<std::string>* tokens = nullptr;
  std::unordered_map<std::string, int> index;
  int unk = -1;

  // Pieces → ids; a piece the vocabulary lacks becomes <unk> (as MarianTokenizer's lookup does).
  void append(const std::string& text, std::vector<int>& ids) const {
    std::vector<std::string> pieces;
    const auto status = sp->Encode(text, &pieces);
    if (!status.ok())
      throw Error(ErrorKind::BadInput,
                  file + " cannot encode the sentence (" + status.ToString() + ")");
    for (const auto& p : pieces) {
      auto it = index.find(p);
      if (it != index.end())
        ids.push_back(it->second);
      else if (unk >= 0)
        ids.push_back(unk);
      else
        throw Error(ErrorKind::BadInput, "the piece \"" + p + "\" of " + file +
                                             " is not in the vocabulary, which has no <unk>");
    }
  }
};

class MarianTokenizer : public Tokenizer {
 public:
  explicit MarianTokenizer(const MarianTokenizerFiles& f) : f_(f) {
    src_.sp = loadSpm(f.source_spm);
    tgt_.sp = loadSpm(f.target_spm);
    src_.file = std::filesystem::path(f.source_spm).filename().string();
    tgt_.file = std::filesystem::path(f.target_spm).filename().string();
    src_.tokens = &f_.src_vocab;
    tgt_.tokens = &f_.tgt_vocab;
    src_.index = indexOf(f_.src_vocab);
    tgt_.index = indexOf(f_.tgt_vocab);
    src_.unk = f.src_unk_id;
    tgt_.unk = f.tgt_unk_id;
  }

  std::string describe() const override {
    return "SentencePiece (" + src_.file + " for the source, " + tgt_.file +
           " for the target; ids from the vocabulary)";
  }

  std::vector<int> encodeSource(const std::string& text) const override {
    checkSentenceText(text, "the sentence");
    std::vector<int> ids;
    // A leading language code (">>fra<<", multilingual OPUS models) is a token of its own.
    std::string rest = text;
    const size_t start = rest.find_first_not_of(" \t\r\n");
    if (rest.compare(start, 2, ">>") == 0) {
      const size_t end = rest.find("<<", start + 2);
      if (end != std::string::npos) {
        const std::string code = rest.substr(start, end + 2 - start);
        auto it = src_.index.find(code);
        if (it == src_.index.end() && src_.unk < 0)
          throw Error(ErrorKind::BadInput,
                      "the language code \"" + code + "\" is not in the vocabulary");
        ids.push_back(it != src_.index.end() ? it->second : src_.unk);
        rest = rest.substr(end + 2);
      }
    }
    src_.append(rest, ids);
    ids.push_back(f_.eos_id);
    return ids;
  }

  std::vector<int> encodeTarget(const std::string& text) const override {
    checkSentenceText(text, "the target prefix");
    std::vector<int> ids;
    tgt_.append(text, ids);
    return ids;
  }

  std::string decode(Side side, const std::vector<int>& ids) const override {
    const SpmSide& s = side == Side::Source ? src_ : tgt_;
    std::vector<std::string> pieces;
    for (int id : ids) {
      if (id == f_.eos_id || id == f_.pad_id || id < 0 || id >= (int)s.tokens->size()) continue;
      pieces.push_back((*s.tokens)[id]);
    }
    std::string text;
    if (!s.sp->Decode(pieces, &text).ok()) {  // never for pieces of the model; joined as a fallback
      for (const auto& p : pieces) text += p;
    }
    return text;
  }

 private:
  MarianTokenizerFiles f_;
  SpmSide src_, tgt_;
};

class SpmModelTokenizer : public Tokenizer {
 public:
  explicit SpmModelTokenizer(const SentencePieceModelFiles& f) : f_(f) {
    sp_ = loadSpm(f.model);
    file_ = std::filesystem::path(f.model).filename().string();
    const int n = sp_->GetPieceSize();
    for (int id : {f.bos_id, f.eos_id})
      if (id >= n)
        throw Error(ErrorKind::BadVocabulary, f.model + ": the special id " + std::to_string(id) +
                                                  " is outside its " + std::to_string(n) +
                                                  " pieces");
  }

  std::string describe() const override {
    return "SentencePiece (" + file_ + ", " + std::to_string(sp_->GetPieceSize()) +
           " pieces; ids are the pieces')";
  }

  std::vector<int> encodeSource(const std::string& text) const override {
    checkSentenceText(text, "the sentence");
    std::vector<int> ids = encode(text);
    if (f_.eos_after_source && f_.eos_id >= 0) ids.push_back(f_.eos_id);
    return ids;
  }

  std::vector<int> encodeTarget(const std::string& text) const override {
    checkSentenceText(text, "the prompt");
    return encode(text);
  }

  std::string decode(Side, const std::vector<int>& ids) const override {
    std::vector<int> kept;
    for (int id : ids)
      if (id >= 0 && id < sp_->GetPieceSize() && id != f_.bos_id && id != f_.eos_id)
        kept.push_back(id);
    std::string text;
    if (!sp_->Decode(kept, &text).ok()) text.clear();
    return text;
  }

 private:
  std::vector<int> encode(const std::string& text) const {
    std::vector<int> pieces;
    const auto status = sp_->Encode(text, &pieces);
    if (!status.ok())
      throw Error(ErrorKind::BadInput,
                  file_ + " cannot encode the sentence (" + status.ToString() + ")");
    std::vector<int> ids;
    if (f_.bos_id >= 0) ids.push_back(f_.bos_id);
    ids.insert(ids.end(), pieces.begin(), pieces.end());
    return ids;
  }

  SentencePieceModelFiles f_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::string file_;
};

}  // namespace

bool sentencePieceAvailable() {
  return true;
}

std::shared_ptr<const Tokenizer> openSentencePieceModel(const SentencePieceModelFiles& files) {
  return std::make_shared<SpmModelTokenizer>(files);
}

std::vector<std::string> readSentencePiecePieces(const std::string& path) {
  auto sp = loadSpm(path);
  std::vector<std::string> pieces;
  pieces.reserve((size_t)sp->GetPieceSize());
  for (int i = 0; i < sp->GetPieceSize(); ++i) pieces.push_back(sp->IdToPiece(i));
  return pieces;
}

std::shared_ptr<const Tokenizer> openMarianTokenizer(const MarianTokenizerFiles& files) {
  return std::make_shared<MarianTokenizer>(files);
}

#else

namespace {
[[noreturn]] void noSentencePiece(const std::string& path) {
  throw Error(ErrorKind::BadConfig,
              path +
                  ": this build of attnviz has no SentencePiece (install libsentencepiece-dev "
                  "and rebuild); give the input as ids");
}
}  // namespace

bool sentencePieceAvailable() {
  return false;
}

std::shared_ptr<const Tokenizer> openSentencePieceModel(const SentencePieceModelFiles& files) {
  noSentencePiece(files.model);
}

std::vector<std::string> readSentencePiecePieces(const std::string& path) {
  noSentencePiece(path);
}

std::shared_ptr<const Tokenizer> openMarianTokenizer(const MarianTokenizerFiles& files) {
  throw Error(ErrorKind::BadConfig,
              files.source_spm +
                  ": this build of attnviz has no SentencePiece (install libsentencepiece-dev and "
                  "rebuild); give the source as token ids instead");
}

#endif

}  // namespace attnviz

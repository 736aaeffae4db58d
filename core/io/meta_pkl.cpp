#include "io/meta_pkl.h"

#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/error.h"
#include "base/file_read.h"
#include "base/json_safe.h"
#include "io/pickle.h"

namespace attnviz {

namespace {

constexpr uintmax_t kMaxMetaBytes = 64ull << 20;  // tiny Shakespeare's is 0.7 KiB
constexpr int kMaxVocabTokens = 1 << 20;          // VocabularyLimits::kMaxTokens (text layer)

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(ErrorKind::BadVocabulary,
              path + ": " + what +
                  " (nanoGPT's meta.pkl is a dict with 'itos' {id: character}, "
                  "'stoi' {character: id} and 'vocab_size')");
}

}  // namespace

std::vector<std::string> readNanoGptMeta(const std::string& path) {
  const std::string data = readBoundedFile(path, kMaxMetaBytes, "the vocabulary pickle");
  return nanoGptMetaFromBytes(reinterpret_cast<const uint8_t*>(data.data()), data.size(), path);
}

std::vector<std::string> nanoGptMetaFromBytes(const uint8_t* data, size_t size,
                                              const std::string& path) {
  if (size > kMaxMetaBytes)
    throw Error(ErrorKind::TooLarge, path + " is " + formatBytes(size) + "; at most " +
                                         formatBytes(kMaxMetaBytes) + " are read");
  pickle::Graph g;
  pickle::Limits limits;
  limits.max_objects = 4u << 20;
  const auto refusePersistent = [&](pickle::Graph&, const pickle::Value&,
                                    uint64_t offset) -> pickle::Value {
    throw Error(ErrorKind::BadPickle, path + ": a persistent id at byte " + std::to_string(offset) +
                                          "; meta.pkl holds plain data, no tensors");
  };
  const pickle::Result r = pickle::unpickle(data, size, g, limits, path, refusePersistent);
  // A plain dict of ints and strings names no Python object: any GLOBAL is there to build an
  // object by calling something, which attnviz never does for a vocabulary.
  for (const pickle::Object& o : g.objects)
    if (o.type == pickle::Object::Type::Global)
      throw Error(ErrorKind::ForbiddenGlobal,
                  path + ": the pickle names the Python object " + clipForMessage(o.text, 80) +
                      " (a GLOBAL opcode at byte " + std::to_string(o.offset) +
                      "); nanoGPT's meta.pkl is a plain dict of numbers and strings, and attnviz "
                      "runs no code from a pickle");
  if (!g.is(r.root, pickle::Object::Type::Dict))
    bad(path, "the pickle holds " + g.describe(r.root));
  const pickle::Object& root = g.at(r.root.ref);
  const pickle::Value* itos = g.get(root, "itos");
  if (!itos) bad(path, "no 'itos'");
  if (!g.is(*itos, pickle::Object::Type::Dict)) bad(path, "'itos' is " + g.describe(*itos));
  const auto& items = g.at(itos->ref).items;
  const size_t n = items.size() / 2;
  if (n == 0) bad(path, "'itos' is empty");
  if (n > (size_t)kMaxVocabTokens)
    bad(path, "'itos' has " + std::to_string(n) + " entries; at most " +
                  std::to_string(kMaxVocabTokens) + " tokens are read");
  std::vector<std::string> tokens(n);
  std::vector<char> seen(n, 0);
  for (size_t k = 0; k < n; ++k) {
    const pickle::Value& key = items[2 * k];
    const pickle::Value& value = items[2 * k + 1];
    if (key.kind != pickle::Value::Kind::Int || key.i < 0 || key.i >= (int64_t)n)
      bad(path, "'itos' has the key " + g.describe(key) + "; its keys must be the ids 0 to " +
                    std::to_string(n - 1));
    const std::string* s = g.str(value);
    if (!s)
      bad(path,
          "'itos'[" + std::to_string(key.i) + "] is " + g.describe(value) + ", expected a str");
    if (s->empty()) bad(path, "'itos'[" + std::to_string(key.i) + "] is an empty string");
    if (!isValidUtf8(*s)) bad(path, "'itos'[" + std::to_string(key.i) + "] is not valid UTF-8");
    if (seen[key.i]) bad(path, "'itos' has the id " + std::to_string(key.i) + " twice");
    seen[key.i] = 1;
    tokens[key.i] = *s;
  }
  if (const pickle::Value* stoi = g.get(root, "stoi")) {
    if (!g.is(*stoi, pickle::Object::Type::Dict)) bad(path, "'stoi' is " + g.describe(*stoi));
    const auto& st = g.at(stoi->ref).items;
    if (st.size() / 2 != n)
      bad(path, "'stoi' has " + std::to_string(st.size() / 2) + " entries and 'itos' " +
                    std::to_string(n));
    for (size_t k = 0; k < st.size() / 2; ++k) {
      const std::string* s = g.str(st[2 * k]);
      const pickle::Value& v = st[2 * k + 1];
      if (!s || v.kind != pickle::Value::Kind::Int || v.i < 0 || v.i >= (int64_t)n ||
          tokens[v.i] != *s) {
        std::string key = g.describe(st[2 * k]);
        if (s) key = clipForMessage(*s, 20);
        bad(path,
            "'stoi' maps " + key + " to " + g.describe(v) + ", which 'itos' does not map back");
      }
    }
  }
  if (const pickle::Value* vs = g.get(root, "vocab_size")) {
    if (vs->kind != pickle::Value::Kind::Int || vs->i != (int64_t)n)
      bad(path, "'vocab_size' is " + g.describe(*vs) + " but 'itos' has " + std::to_string(n) +
                    " entries");
  }
  return tokens;
}

}  // namespace attnviz

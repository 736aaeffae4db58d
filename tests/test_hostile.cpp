// Hostile and broken input: one crafted model file, config, vocabulary or sentence per
// case, each asserting the exact ErrorKind and a message that names the file and the tensor or
// field; after each case a valid model still loads and runs. Every file is generated here, in a
// QTemporaryDir, from tests/data/nlp_tiny.safetensors (re-laid-out, then corrupted byte by byte).
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "arch/weights.h"
#include "base/error.h"
#include "compute/cpu_backend.h"
#include "io/safetensors.h"
#include "model/decoding.h"
#include "model/model.h"
#include "model/trace.h"
#include "test_support.h"
#include "text/sentencepiece_tokenizer.h"
#include "train/history.h"
#include "train/trainer.h"

using namespace attnviz;
using json = nlohmann::json;

Q_DECLARE_METATYPE(attnviz::ErrorKind)

namespace {

const std::string kTiny = std::string(ATTNVIZ_TEST_DATA) + "/nlp_tiny.safetensors";

std::vector<uint8_t> readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeBytes(const std::string& path, const QByteArray& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.constData(), bytes.size());
}

// 8-byte little-endian length, then `header` padded with spaces so that the data starts at a
// byte offset ≡ data_start_mod8 (mod 8), then `data`.
QByteArray assemble(std::string header, const std::vector<uint8_t>& data, int data_start_mod8 = 0) {
  while ((8 + header.size()) % 8 != static_cast<size_t>(data_start_mod8)) header += ' ';
  QByteArray out;
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.append(static_cast<char>((n >> (8 * i)) & 0xFF));
  out.append(header.data(), static_cast<qsizetype>(header.size()));
  out.append(reinterpret_cast<const char*>(data.data()), static_cast<qsizetype>(data.size()));
  return out;
}

// A raw length prefix followed by arbitrary bytes.
QByteArray withLength(uint64_t n, const std::string& rest) {
  QByteArray out;
  for (int i = 0; i < 8; ++i) out.append(static_cast<char>((n >> (8 * i)) & 0xFF));
  out.append(rest.data(), static_cast<qsizetype>(rest.size()));
  return out;
}

// nlp_tiny taken apart: metadata and the tensors in data order, each with its own bytes, so a case
// can change a dtype, shape or size and lay the file out again.
struct Parts {
  struct Entry {
    std::string name;
    json dtype;
    json shape;
    std::vector<uint8_t> bytes;
  };
  json metadata;
  std::vector<Entry> tensors;

  static const Parts& tiny() {
    static const Parts p = [] {
      const std::vector<uint8_t> file = readBytes(kTiny);
      uint64_t n = 0;
      for (int i = 7; i >= 0; --i) n = (n << 8) | file.at(i);
      const json h = json::parse(file.begin() + 8, file.begin() + 8 + static_cast<long>(n));
      Parts parts;
      parts.metadata = h.at("__metadata__");
      std::vector<std::pair<uint64_t, Entry>> sorted;
      for (auto it = h.begin(); it != h.end(); ++it) {
        if (it.key() == "__metadata__") continue;
        const uint64_t b = it.value()["data_offsets"][0], e = it.value()["data_offsets"][1];
        const auto start = file.begin() + 8 + static_cast<long>(n);
        sorted.push_back({b, Entry{it.key(), it.value()["dtype"], it.value()["shape"],
                                   std::vector<uint8_t>(start + static_cast<long>(b),
                                                        start + static_cast<long>(e))}});
      }
      std::sort(sorted.begin(), sorted.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      for (auto& s : sorted) parts.tensors.push_back(std::move(s.second));
      return parts;
    }();
    return p;
  }

  Entry& tensor(const std::string& name) {
    for (auto& t : tensors)
      if (t.name == name) return t;
    throw std::runtime_error("test bug: no tensor " + name);
  }
  json config() const { return json::parse(metadata["attnviz_config"].get<std::string>()); }
  void setConfig(const json& c) { metadata["attnviz_config"] = c.dump(); }

  // The header (offsets laid out in order) and the data buffer.
  std::pair<json, std::vector<uint8_t>> layout() const {
    json h = json::object();
    std::vector<uint8_t> data;
    for (const auto& t : tensors) {
      h[t.name] = {{"dtype", t.dtype},
                   {"shape", t.shape},
                   {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
      data.insert(data.end(), t.bytes.begin(), t.bytes.end());
    }
    h["__metadata__"] = metadata;
    return {h, data};
  }
  QByteArray bytes() const {
    auto [h, d] = layout();
    return assemble(h.dump(), d);
  }
};

// Case builders: start from nlp_tiny and change one thing.
QByteArray modParts(const std::function<void(Parts&)>& f) {
  Parts p = Parts::tiny();
  f(p);
  return p.bytes();
}
QByteArray modHeader(const std::function<void(json&, std::vector<uint8_t>&)>& f) {
  auto [h, d] = Parts::tiny().layout();
  f(h, d);
  return assemble(h.dump(), d);
}
QByteArray modHeaderText(const std::function<void(std::string&)>& f) {
  auto [h, d] = Parts::tiny().layout();
  std::string text = h.dump();
  f(text);
  return assemble(text, d);
}
QByteArray modConfig(const std::function<void(json&)>& f) {
  return modParts([&](Parts& p) {
    json c = p.config();
    f(c);
    p.setConfig(c);
  });
}
QByteArray withConfigText(const std::string& text) {
  return modParts([&](Parts& p) { p.metadata["attnviz_config"] = text; });
}
void replaceOnce(std::string& s, const std::string& what, const std::string& with) {
  const size_t at = s.find(what);
  if (at == std::string::npos) throw std::runtime_error("test bug: \"" + what + "\" not found");
  s.replace(at, what.size(), with);
}
std::vector<uint8_t> floats(size_t n, float v = 0.25f) {
  std::vector<uint8_t> b(n * 4);
  for (size_t i = 0; i < n; ++i) std::memcpy(b.data() + 4 * i, &v, 4);
  return b;
}

// A file name for the current data row.
std::string caseFile(const QTemporaryDir& dir, const char* suffix = ".safetensors") {
  QString tag = QString::fromUtf8(QTest::currentDataTag());
  for (QChar& c : tag)
    if (!c.isLetterOrNumber()) c = '_';
  return (dir.path() + "/" + tag).toStdString() + suffix;
}

using attnviz::test::caught;

// Every '|'-separated piece of `needles` must occur in `message`.
bool mentionsAll(const QString& message, const QString& needles) {
  for (const QString& n : needles.split('|', Qt::SkipEmptyParts))
    if (!message.contains(n)) return false;
  return true;
}

// The error (a std::optional<Error>) has the kind and mentions every piece of `needles`.
// ATTNVIZ_SHOW_ERRORS=1 prints each message, to review their wording.
#define VERIFY_ERROR(expr, want_kind, needles)                                                    \
  do {                                                                                            \
    const std::optional<Error> e_ = (expr);                                                       \
    QVERIFY2(e_.has_value(), "no error was thrown");                                              \
    const QString msg_ = QString::fromUtf8(e_->what());                                           \
    if (qEnvironmentVariableIsSet("ATTNVIZ_SHOW_ERRORS"))                                         \
      qInfo().noquote() << errorKindName(e_->kind()) << msg_;                                     \
    QCOMPARE(QString(errorKindName(e_->kind())), QString(errorKindName(want_kind)));              \
    QVERIFY2(mentionsAll(msg_, needles),                                                          \
             qPrintable("message \"" + msg_ + "\" does not mention all of " + QString(needles))); \
  } while (0)

// The process is still fine: a valid model loads and runs, with sane probabilities.
void verifyStillFine() {
  auto loaded = loadModel(kTiny);
  QVERIFY(loaded->warnings.empty());
  Model m(loaded, makeCpuBackend());
  Trace t =
      m.forward({{m.encodeSource("ich mochte ein bier")}, {}, {m.encodeTarget("i want a beer")}});
  QCOMPARE(t.logits.dense().shape, (Shape{1, 5, 9}));
  for (float v : t.logits.dense().data) QVERIFY(std::isfinite(v));
  const AttentionBlock& cross = *t.block(AttentionKind::Cross, 1);
  for (int i = 0; i < t.tgt_len; ++i) {
    double sum = 0;
    for (int j = 0; j < t.src_len; ++j) sum += cross.prob(0, 3, i, j);
    QVERIFY(std::abs(sum - 1.0) < 1e-5);
  }
}

// Marian's source.spm (tests/data/hf/marian) with piece `index` rewritten: its text `text` and,
// when type > 0, its type (protobuf field 3; the file's own otherwise). The proto is walked as
// varint keys and length-delimited pieces (field 1 of ModelProto is every piece).
QByteArray spmWithPiece(int index, const QByteArray& text, int type) {
  const std::vector<uint8_t> in =
      readBytes(std::string(ATTNVIZ_TEST_DATA) + "/hf/marian/source.spm");
  auto varint = [&](size_t& at) {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      v |= uint64_t(in.at(at) & 0x7f) << shift;
      if (in.at(at++) < 0x80) return v;
    }
  };
  auto put = [](QByteArray& out, uint64_t v) {
    for (; v >= 0x80; v >>= 7) out.append(char(v | 0x80));
    out.append(char(v));
  };
  QByteArray out;
  int piece = 0;
  for (size_t at = 0; at < in.size();) {
    const size_t start = at;
    const uint64_t key = varint(at);
    const uint64_t n = (key & 7) == 2 ? varint(at) : (key & 7) == 5 ? 4 : (key & 7) == 1 ? 8 : 0;
    if ((key & 7) == 0) varint(at);
    at += n;
    if (key != ((1 << 3) | 2) || piece++ != index) {
      out.append(reinterpret_cast<const char*>(in.data() + start), qsizetype(at - start));
      continue;
    }
    QByteArray body;
    put(body, (1 << 3) | 2);
    put(body, uint64_t(text.size()));
    body.append(text);
    for (size_t f = at - n; f < at;) {  // the piece's other fields: score, and the type unless set
      const size_t fs = f;
      const uint64_t k = varint(f);
      if ((k & 7) == 2)
        f += varint(f);
      else if ((k & 7) == 5)
        f += 4;
      else
        varint(f);
      if ((k >> 3) != 1 && !((k >> 3) == 3 && type > 0))
        body.append(reinterpret_cast<const char*>(in.data() + fs), qsizetype(f - fs));
    }
    if (type > 0) {
      put(body, 3 << 3);
      put(body, uint64_t(type));
    }
    put(out, key);
    put(out, uint64_t(body.size()));
    out.append(body);
  }
  return out;
}

// Marian's source.spm (nmt_nfkc: a precompiled_charsmap of 44,288 Darts units) with its charsmap
// patched in place by `patch(bytes of the charsmap)`: the normalizer_spec (ModelProto field 3) and
// its precompiled_charsmap (field 2) found by walking the varint keys.
QByteArray spmWithCharsmap(const std::function<void(char* map, size_t size)>& patch) {
  const std::vector<uint8_t> in =
      readBytes(std::string(ATTNVIZ_TEST_DATA) + "/hf/marian/source.spm");
  QByteArray out(reinterpret_cast<const char*>(in.data()), qsizetype(in.size()));
  auto varint = [&](size_t& at) {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      v |= uint64_t(in.at(at) & 0x7f) << shift;
      if (in.at(at++) < 0x80) return v;
    }
  };
  // The fields of [begin, end): the offset and length of field `want`'s bytes.
  auto find = [&](size_t begin, size_t end, uint64_t want) -> std::pair<size_t, size_t> {
    for (size_t at = begin; at < end;) {
      const uint64_t key = varint(at);
      const uint64_t n = (key & 7) == 2 ? varint(at) : (key & 7) == 5 ? 4 : (key & 7) == 1 ? 8 : 0;
      if ((key & 7) == 0) varint(at);
      if (key == ((want << 3) | 2)) return {at, n};
      at += n;
    }
    return {0, 0};
  };
  const auto [spec, spec_len] = find(0, in.size(), 3);
  const auto [map, map_len] = find(spec, spec + spec_len, 2);
  if (map_len < 4) qFatal("source.spm has no precompiled_charsmap");
  patch(out.data() + map, map_len);
  return out;
}

// Darts' unit fields, as libsentencepiece's darts.h reads them.
uint32_t dartsOffset(uint32_t u) {
  return (u >> 10) << ((u & (1u << 9)) >> 6);
}
uint32_t unitAt(const char* map, size_t i) {
  uint32_t u;
  std::memcpy(&u, map + 4 + 4 * i, 4);
  return u;
}
void setUnit(char* map, size_t i, uint32_t u) {
  std::memcpy(map + 4 + 4 * i, &u, 4);
}
}  // namespace

class TestHostile : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;

  void addFileRows();
  void addConfigRows();

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(QFile::exists(QString::fromStdString(kTiny)), kTiny.c_str());
    verifyStillFine();
  }

  // ---- every damaged file: the exact kind, a message naming the file and the tensor/field ----
  void rejectsDamagedFile_data();
  void rejectsDamagedFile() {
    QFETCH(QByteArray, bytes);
    QFETCH(ErrorKind, kind);
    QFETCH(QString, mentions);
    const std::string path = caseFile(dir_);
    writeBytes(path, bytes);

    auto err = caught([&] { loadModel(path); });
    VERIFY_ERROR(err, kind, mentions);
    QVERIFY2(QString::fromUtf8(err->what()).contains(QString::fromStdString(path)),
             "the message does not name the file");

    // The in-memory parser agrees with the file loader wherever it is the one that objects.
    auto mem = caught([&] {
      std::vector<uint8_t> v(bytes.begin(), bytes.end());
      SafetensorsFile::parse(std::move(v), "in-memory");
    });
    if (mem) QCOMPARE(QString(errorKindName(mem->kind())), QString(errorKindName(kind)));

    verifyStillFine();
  }

  // ---- config and vocabulary (in __metadata__["attnviz_config"]) ----
  void rejectsBadConfig_data();
  void rejectsBadConfig() { rejectsDamagedFile(); }

  // The sidecar and --config files get the same checks as the embedded config.
  void rejectsBadConfigFiles() {
    Parts p = Parts::tiny();
    p.metadata.erase("attnviz_config");
    const std::string model = dir_.path().toStdString() + "/sidecar.safetensors";
    const std::string side = dir_.path().toStdString() + "/sidecar.json";
    writeBytes(model, p.bytes());

    // No config anywhere: the tensors tell the family and sizes, not the heads or special ids.
    auto err = caught([&] { loadModel(model); });
    VERIFY_ERROR(err, ErrorKind::MissingInfo,
                 "no config found|sidecar.json|nlp-tutorial Transformer|n_heads");

    writeBytes(side, QByteArray("{\"family\": \"nlp-tutorial\", \"name\": \"caf\xC3\x28\"}"));
    err = caught([&] { loadModel(model); });
    VERIFY_ERROR(err, ErrorKind::InvalidUtf8, QString::fromStdString(side) + "|byte 39");

    writeBytes(side, QByteArray(200000, '['));
    err = caught([&] { loadModel(model); });
    VERIFY_ERROR(err, ErrorKind::InvalidJson, QString::fromStdString(side) + "|nested");

    json c = Parts::tiny().config();
    c["n_heads"] = "four";
    writeBytes(side, QByteArray::fromStdString(c.dump()));
    err = caught([&] { loadModel(model); });
    VERIFY_ERROR(err, ErrorKind::BadConfig, QString::fromStdString(side) + "|n_heads|four");

    c = Parts::tiny().config();
    writeBytes(side, QByteArray::fromStdString(c.dump()));
    QVERIFY(loadModel(model)->warnings.empty());  // the sidecar works when it is right

    LoadOptions o;
    o.config_path = dir_.path().toStdString() + "/no-such-config.json";
    err = caught([&] { loadModel(model, o); });
    VERIFY_ERROR(err, ErrorKind::Io, "no-such-config.json");
    o.config_path = dir_.path().toStdString();  // a directory
    err = caught([&] { loadModel(model, o); });
    QVERIFY(err.has_value());
    QCOMPARE(QString(errorKindName(err->kind())), QString("io"));
    verifyStillFine();
  }

  // ---- a names map (--names) over a file without a config: its settings get the config's
  // checks, and a role it names must be in the file ----
  void rejectsBadNamesMap_data();
  void rejectsBadNamesMap() {
    QFETCH(QString, added);  // JSON keys added to {"base": "nlp-tutorial"}
    QFETCH(ErrorKind, kind);
    QFETCH(QString, mentions);
    Parts p = Parts::tiny();
    p.metadata.erase("attnviz_config");
    const std::string model = dir_.path().toStdString() + "/own_names.safetensors";
    writeBytes(model, p.bytes());
    LoadOptions o;
    o.supplied.names_map = {{"base", "nlp-tutorial"}};
    o.supplied.n_heads = 4;
    o.supplied.bos_id = 6;
    o.supplied.eos_id = 7;
    // The map without the row's keys opens the file: what the row adds is what is refused.
    const auto fine = caught([&] { loadModel(model, o); });
    QVERIFY2(!fine, fine ? fine->what() : "");
    o.supplied.names_map.update(json::parse(added.toStdString()));
    VERIFY_ERROR(caught([&] { loadModel(model, o); }), kind, mentions);
    verifyStillFine();
  }

  // Not a file at all.
  void rejectsDirectoriesAndMissingFiles() {
    const std::string d = dir_.path().toStdString();
    VERIFY_ERROR(caught([&] { loadModel(d); }), ErrorKind::Io, QString::fromStdString(d));
    VERIFY_ERROR(caught([&] { SafetensorsFile::open(d); }), ErrorKind::Io, "not a regular file");
    VERIFY_ERROR(caught([&] { loadModel(d + "/missing.safetensors"); }), ErrorKind::Io,
                 "missing.safetensors");
    VERIFY_ERROR(caught([&] { SafetensorsFile::open(d + "/missing.safetensors"); }), ErrorKind::Io,
                 "missing.safetensors");
    verifyStillFine();
  }

  // ---- SentencePiece models: a piece libsentencepiece cannot take, named with its index ----
  void rejectsBadSentencePiece_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("mentions");
    const QByteArray nul(1, '\0');
    // Piece 5 of source.spm is the normal piece "s"; 0 is <unk>, 2 the control piece </s>.
    QTest::newRow("normal piece beginning with NUL")
        << spmWithPiece(5, nul + "x", 0) << "piece 5 (normal)|NUL byte|zero length";
    QTest::newRow("user-defined piece NUL") << spmWithPiece(5, nul, 4) << "piece 5 (user-defined)";
    QTest::newRow("unused piece NUL") << spmWithPiece(5, nul, 5) << "piece 5 (unused)|NUL";
    QTest::newRow("empty normal piece") << spmWithPiece(5, "", 0) << "piece 5 (normal) is empty";
    QTest::newRow("empty control piece") << spmWithPiece(2, "", 0) << "piece 2 (special) is empty";
    // A precompiled_charsmap whose double array points past its data crashed libsentencepiece's
    // normalizer on the first encode; it is refused when the model is read, naming the field.
    constexpr uint32_t kFar = (0x1FFFFFu << 10) | (1u << 9);  // offset 2^29 - 256: past any array
    QTest::newRow("root unit pointing past the array")
        << spmWithCharsmap([&](char* map, size_t) { setUnit(map, 0, kFar); })
        << "normalizer_spec's precompiled_charsmap|root that points past its 44288 units";
    QTest::newRow("a node's unit pointing past the array")
        << spmWithCharsmap([&](char* map, size_t) {
             // The first byte the root has a child for (nmt_nfkc maps full-width forms, …).
             const uint32_t base = dartsOffset(unitAt(map, 0));
             for (uint32_t c = 1; c < 256; ++c) {
               const uint32_t u = unitAt(map, base ^ c);
               if ((u & ((1u << 31) | 0xFF)) != c) continue;
               setUnit(map, base ^ c, (u & 0x1FF) | kFar);
               return;
             }
             qFatal("the charsmap's root has no child");
           })
        << "precompiled_charsmap|whose offset leads to unit";
    QTest::newRow("trie longer than the charsmap") << spmWithCharsmap([&](char* map, size_t size) {
      const uint32_t n = uint32_t(size - 2);
      std::memcpy(map, &n, 4);
    }) << "says its trie is 237559 bytes, more than the 237557 that follow";
    QTest::newRow("replacement past the strings") << spmWithCharsmap([&](char* map, size_t) {
      // The first child with a leaf: its value unit made to point past the strings.
      const uint32_t base = dartsOffset(unitAt(map, 0));
      for (uint32_t c = 1; c < 256; ++c) {
        const uint32_t u = unitAt(map, base ^ c);
        if ((u & ((1u << 31) | 0xFF)) != c) continue;
        const uint32_t next = (base ^ c) ^ dartsOffset(u);
        for (uint32_t d = 1; d < 256; ++d) {
          const uint32_t w = unitAt(map, next ^ d);
          if ((w & ((1u << 31) | 0xFF)) != d || !((w >> 8) & 1)) continue;
          const uint32_t leaf = (next ^ d) ^ dartsOffset(w);
          setUnit(map, leaf, (1u << 31) | 0x7FFFFFF0u);
          return;
        }
      }
      qFatal("no leaf two bytes deep");
    }) << "precompiled_charsmap has a replacement at byte";
  }
  void rejectsBadSentencePiece() {
    if (!sentencePieceAvailable()) QSKIP("this build has no SentencePiece (libsentencepiece-dev)");
    QFETCH(QByteArray, bytes);
    QFETCH(QString, mentions);
    const std::string path = caseFile(dir_, ".spm");
    writeBytes(path, bytes);
    VERIFY_ERROR(caught([&] { readSentencePiecePieces(path); }), ErrorKind::BadVocabulary,
                 QString::fromStdString(path) + "|" + mentions);
    VERIFY_ERROR(caught([&] {
                   openSentencePieceModel({path, 1, 2, false})->encodeTarget("ｆｕｌｌ width");
                 }),
                 ErrorKind::BadVocabulary, QString::fromStdString(path) + "|" + mentions);
  }

  // What libsentencepiece takes still loads: a control piece may begin with NUL (it is no key of
  // the trie), and the untouched model reads its 48 pieces.
  void sentencePieceControlPieceLoads() {
    if (!sentencePieceAvailable()) QSKIP("this build has no SentencePiece (libsentencepiece-dev)");
    const std::string path = dir_.path().toStdString() + "/control_nul.spm";
    writeBytes(path, spmWithPiece(2, QByteArray(1, '\0') + "pad", 0));
    const std::vector<std::string> pieces = readSentencePiecePieces(path);
    QCOMPARE(pieces.size(), size_t(48));
    QCOMPARE(pieces[2], std::string("\0pad", 4));
    QCOMPARE(pieces[5], std::string("s"));
  }

  // ---- a training-history folder (train --keep-dir): nothing it names reaches outside it ----
  void rejectsHostileHistoryFolder_data() {
    QTest::addColumn<int>("which");
    QTest::addColumn<ErrorKind>("kind");
    QTest::addColumn<QString>("mentions");
    using K = ErrorKind;
    QTest::newRow("checkpoint symlinked outside")
        << 0 << K::BadInput << "step 0|leads outside the folder";
    QTest::newRow("index.json symlinked outside")
        << 1 << K::BadInput << "index.json|leads outside the folder";
    QTest::newRow("checkpoint symlinked to an outside folder")
        << 2 << K::BadInput << "step 0|leads outside the folder";
    QTest::newRow("max_len 2^32 + 5")
        << 3 << K::BadInput << "\"max_len\" is 4294967301|integer 0 to 256";
    QTest::newRow("step past steps_planned")
        << 4 << K::BadInput << "checkpoint 1: \"step\" is 4294967296";
    QTest::newRow("seed negative") << 5 << K::BadInput << "\"seed\" is -1";
    QTest::newRow("10^6 entries naming one file")
        << 6 << K::TooLarge << "lists 1000000 checkpoints; at most 10000";
    QTest::newRow("one file for two steps")
        << 7 << K::BadInput << "\"step-000000.safetensors\" is listed for steps 0 and 1";
    QTest::newRow("one step twice") << 8 << K::BadInput << "step 1 is listed twice";
  }
  void rejectsHostileHistoryFolder() {
    QFETCH(int, which);
    QFETCH(ErrorKind, kind);
    QFETCH(QString, mentions);
    namespace fs = std::filesystem;
    QTemporaryDir scratch;
    const fs::path keep = fs::path(scratch.path().toStdString()) / "ck";
    const fs::path outside = fs::path(scratch.path().toStdString()) / "outside";
    fs::create_directories(outside / "secret-folder");
    std::ofstream(outside / "secret-folder" / "private-name.txt") << "x";
    std::ofstream(outside / "secret.txt") << "SECRET-FIRST-BYTES {";
    TrainConfig tc;
    tc.task = "induction";
    tc.task_options.max_len = 6;
    tc.preset = "attn-only-2l";
    tc.steps = 1;
    tc.batch = 2;
    Trainer t(tc, makeCpuBackend());
    KeepPlan plan;
    plan.every = 1;
    CheckpointKeeper keeper(keep.string(), tc, plan);
    QVERIFY(keeper.keep(t, std::nan("")));
    QVERIFY(keeper.keep(t, t.step().loss));
    QCOMPARE((int)readTrainingHistory(keep.string(), {}).points.size(), 2);  // the good folder
    json index = json::parse(readBytes((keep / "index.json").string()));
    const fs::path step0 = keep / "step-000000.safetensors";
    switch (which) {
      case 0:
        fs::rename(step0, outside / "model.safetensors");
        fs::create_symlink(outside / "model.safetensors", step0);
        break;
      case 1:
        fs::remove(keep / "index.json");
        fs::create_symlink(outside / "secret.txt", keep / "index.json");
        break;
      case 2:
        fs::remove(step0);
        fs::create_directory_symlink(outside / "secret-folder", step0);
        break;
      case 3:
        index["max_len"] = (1ull << 32) + 5;
        break;
      case 4:
        index["checkpoints"][1]["step"] = 1ull << 32;
        break;
      case 5:
        index["seed"] = -1;
        break;
      case 6: {
        json one = index["checkpoints"][0];
        index["checkpoints"] = json::array();
        for (int i = 0; i < 1000000; ++i) index["checkpoints"].push_back(one);
        break;
      }
      case 7:
        index["checkpoints"][1]["file"] = "step-000000.safetensors";
        break;
      case 8:
        index["checkpoints"][0]["step"] = 1;
        break;
    }
    if (which >= 3)
      writeBytes((keep / "index.json").string(), QByteArray::fromStdString(index.dump()));
    auto err = caught([&] { readTrainingHistory(keep.string(), {}); });
    VERIFY_ERROR(err, kind,
                 QString::fromStdString((keep / "index.json").string()) + "|" + mentions);
    const QString msg = QString::fromUtf8(err->what());
    QVERIFY2(!msg.contains("SECRET") && !msg.contains("private-name"), qPrintable(msg));
  }

  // ---- big headers: linear time, and names from the file clipped in messages ----
  void bigHeaders() {
    // 300000 extra zero-size tensors (an 18 MB header). nlohmann's parse callback made this
    // quadratic (minutes; a 100 MB header hung for hours); linear, it takes a second or two. No
    // clock is read here (a loaded machine is slow, not wrong): the suite's CTest timeout is the
    // guard against a return of the quadratic parse.
    auto [h, d] = Parts::tiny().layout();
    std::string text = h.dump();
    std::string extra;
    char entry[96];
    for (int i = 0; i < 300000; ++i) {
      std::snprintf(entry, sizeof entry,
                    "\"z%07d\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},", i);
      extra += entry;
    }
    text.insert(1, extra);
    const std::string path = dir_.path().toStdString() + "/many_tensors.safetensors";
    writeBytes(path, assemble(text, d));
    // Tensors the model does not use are an error naming them, unless the load is partial.
    VERIFY_ERROR(caught([&] { loadModel(path); }), ErrorKind::UnusedTensor,
                 "300000 of the file's 300037 tensors are not used|\"z0|partial load");
    LoadOptions partial;
    partial.allow_partial = true;
    auto m = loadModel(path, partial);
    QCOMPARE(m->warnings.size(), size_t(1));
    QVERIFY(QString::fromStdString(m->warnings[0])
                .startsWith("300000 of the file's 300037 tensors are not used"));

    // A 100000-byte tensor name with an unknown dtype: the message quotes a clipped name.
    const std::string long_name(100000, 'x');
    writeBytes(path, modHeaderText([&](std::string& t) {
                 replaceOnce(t, "{",
                             "{\"" + long_name +
                                 "\":{\"dtype\":\"Q4\",\"shape\":[0],\"data_offsets\":[0,0]},");
               }));
    auto err = caught([&] { loadModel(path); });
    VERIFY_ERROR(err, ErrorKind::UnknownDtype, "xxxxxxxx… (100000 bytes)|unknown dtype \"Q4\"");
    QVERIFY(std::string(err->what()).size() < 1000);
    // The same name twice: the duplicate-key message clips it too.
    writeBytes(path, modHeaderText([&](std::string& t) {
                 const std::string e = "\"" + long_name + "\":{},";
                 replaceOnce(t, "{", "{" + e + e);
               }));
    err = caught([&] { loadModel(path); });
    VERIFY_ERROR(err, ErrorKind::DuplicateKey, "(100000 bytes)");
    QVERIFY(std::string(err->what()).size() < 1000);
    verifyStillFine();
  }

  // ---- a data start that is not 8-byte aligned loads, and gives exactly the same numbers ----
  void unalignedDataStartLoads() {
    for (int mod = 1; mod < 8; ++mod) {
      auto [h, d] = Parts::tiny().layout();
      const std::string path =
          dir_.path().toStdString() + "/unaligned" + std::to_string(mod) + ".safetensors";
      writeBytes(path, assemble(h.dump(), d, mod));
      SafetensorsFile a = SafetensorsFile::open(kTiny), b = SafetensorsFile::open(path);
      QCOMPARE(b.tensors().size(), a.tensors().size());
      for (const auto& t : a.tensors()) {
        Tensor x = a.toFloat(t.name), y = b.toFloat(t.name);
        QCOMPARE(y.shape, x.shape);
        QVERIFY2(std::memcmp(x.ptr(), y.ptr(), x.data.size() * 4) == 0, t.name.c_str());
      }
      Model ma(loadModel(kTiny), makeCpuBackend()), mb(loadModel(path), makeCpuBackend());
      const std::vector<int> src = ma.encodeSource("ich mochte ein bier");
      const std::vector<int> tgt = ma.encodeTarget("i want a beer");
      Trace ta = ma.forward({{src}, {}, {tgt}}), tb = mb.forward({{src}, {}, {tgt}});
      QVERIFY(ta.logits.dense().data == tb.logits.dense().data);
      QVERIFY(ta.block(AttentionKind::Cross, 1)->denseProbs() ==
              tb.block(AttentionKind::Cross, 1)->denseProbs());
      QVERIFY(ta.block(AttentionKind::EncoderSelf, 0)->denseScores() ==
              tb.block(AttentionKind::EncoderSelf, 0)->denseScores());
      QCOMPARE(greedyDecode(mb, src, 8), greedyDecode(ma, src, 8));
    }
  }

  // ---- NaN / Inf weights load, with a warning naming the tensor ----
  void nanAndInfWeightsWarn() {
    const std::string name = "encoder.layers.1.pos_ffn.fc.2.weight";
    const QByteArray bytes = modParts([&](Parts& p) {
      auto& b = p.tensor(name).bytes;
      const float nan = std::numeric_limits<float>::quiet_NaN();
      const float inf = std::numeric_limits<float>::infinity();
      std::memcpy(b.data() + 4 * 3, &nan, 4);
      std::memcpy(b.data() + 4 * 10, &inf, 4);
      const float ninf = -inf;
      std::memcpy(b.data() + 4 * 11, &ninf, 4);
    });
    const std::string path = dir_.path().toStdString() + "/nan.safetensors";
    writeBytes(path, bytes);
    auto m = loadModel(path);
    QCOMPARE(m->warnings.size(), size_t(1));
    const QString w = QString::fromStdString(m->warnings[0]);
    QVERIFY2(w.contains(QString::fromStdString(name)) && w.contains("3 NaN or infinite"),
             qPrintable(w));
    Model model(m, makeCpuBackend());  // runs; NaN flows to the outputs, nothing crashes
    Trace t = model.forward({{{1, 2, 3}}, {}, {{6, 1, 2}}});
    QCOMPARE(t.logits.dense().shape, (Shape{1, 3, 9}));
    verifyStillFine();
  }

  // ---- F64 weights load (docs/formats.md lists F32, F16, BF16 and F64) ----
  // Converted to float32: the same numbers as the F32 file; a double beyond float32's range
  // becomes infinite, with the warning that names the tensor.
  void f64WeightsLoad() {
    // Every tensor as F64; projection.weight[5] replaced by `big` when given.
    auto toF64 = [](Parts& p, std::optional<double> big) {
      for (auto& t : p.tensors) {
        std::vector<uint8_t> wide(t.bytes.size() * 2);
        for (size_t i = 0; i < t.bytes.size() / 4; ++i) {
          float f;
          std::memcpy(&f, t.bytes.data() + 4 * i, 4);
          const double d = (big && t.name == "projection.weight" && i == 5) ? *big : f;
          std::memcpy(wide.data() + 8 * i, &d, 8);
        }
        t.bytes = std::move(wide);
        t.dtype = "F64";
      }
    };
    const std::string path = dir_.path().toStdString() + "/f64.safetensors";
    writeBytes(path, modParts([&](Parts& p) { toF64(p, std::nullopt); }));
    auto wide = loadModel(path);
    QVERIFY(wide->warnings.empty());
    Model a(loadModel(kTiny), makeCpuBackend()), b(wide, makeCpuBackend());
    const Inputs in{{a.encodeSource("ich mochte ein bier")}, {}, {a.encodeTarget("i want")}};
    Trace ta = a.forward(in), tb = b.forward(in);
    QVERIFY(ta.logits.dense().data == tb.logits.dense().data);  // float → double → float is exact
    writeBytes(path, modParts([&](Parts& p) { toF64(p, 1e300); }));
    auto overflow = loadModel(path);
    QCOMPARE(overflow->warnings.size(), size_t(1));
    QVERIFY2(QString::fromStdString(overflow->warnings[0]).contains("projection.weight"),
             overflow->warnings[0].c_str());
    verifyStillFine();
  }

  // ---- memory: model and trace estimates come first, with the numbers ----
  void modelOverMemoryLimit() {
    LoadOptions o;
    o.max_model_bytes = 100000;  // the file is 187816 bytes
    VERIFY_ERROR(caught([&] { loadModel(kTiny, o); }), ErrorKind::TooLarge,
                 "nlp_tiny.safetensors|187816 bytes|the limit is 97.7 KiB");

    // A config that asks for far more than the file holds is refused from its sizes, before a
    // tensor is read (else it would be MissingTensor).
    const std::string path = dir_.path().toStdString() + "/many_layers.safetensors";
    writeBytes(path, modConfig([](json& c) {
                 c["n_encoder_layers"] = 256;
                 c["d_ff"] = 65536;
               }));
    o.max_model_bytes = 64 << 20;
    VERIFY_ERROR(
        caught([&] { loadModel(path, o); }), ErrorKind::TooLarge,
        "many_layers.safetensors|parameters|256+2 layers|d_ff 65536|the limit is 64.0 MiB");

    // The sinusoid table a Model computes counts too: d_model 65536 × as many of the 100000
    // positions as 128 MiB hold (ModelConfig::positionRows: 512).
    json wide;
    writeBytes(path, modConfig([&](json& c) {
                 c["d_model"] = 65536;
                 c["max_len"] = 100000;
                 wide = c;
               }));
    json narrow = wide;
    narrow["max_len"] = 2;
    const uint64_t with_table = estimateModelBytes(ModelConfig::fromJson(wide, "wide")),
                   two_rows = estimateModelBytes(ModelConfig::fromJson(narrow, "narrow"));
    QVERIFY2(with_table - two_rows >= uint64_t(510) * 65536 * 4,
             qPrintable(QString("%1 against %2").arg(with_table).arg(two_rows)));
    o.max_model_bytes = two_rows + (uint64_t(64) << 20);
    VERIFY_ERROR(caught([&] { loadModel(path, o); }), ErrorKind::TooLarge,
                 "d_model 65536|the limit is");
    o.max_model_bytes = with_table;  // within the limit: now the shapes are what is wrong
    VERIFY_ERROR(caught([&] { loadModel(path, o); }), ErrorKind::ShapeMismatch,
                 "encoder.src_emb.weight|[6, 65536]");
    verifyStillFine();
  }

  void traceOverMemoryLimit() {
    Model m(loadModel(kTiny), makeCpuBackend());
    ForwardOptions o;
    o.max_trace_bytes = 1000;
    const std::vector<int> src = m.encodeSource("ich mochte ein bier");
    const std::vector<int> tgt = m.encodeTarget("i want a beer");
    const uint64_t need = m.estimatePassBytes(1, 4, 5, o);
    QVERIFY(need > 1000);
    VERIFY_ERROR(caught([&] {
                   m.forward({{src}, {}, {tgt}}, o);
                 }),
                 ErrorKind::TooLarge,
                 QString::fromStdString("needs " + formatBytes(need)) +
                     "|the limit is 1000 bytes|4 source and 5 target tokens|queries and keys");
    // Ids past max_len (64) through the API, not the tokenizer.
    VERIFY_ERROR(caught([&] {
                   m.forward({{std::vector<int>(65, 1)}, {}, {tgt}});
                 }),
                 ErrorKind::BadInput, "65 tokens|at most 64|max_len");
    VERIFY_ERROR(caught([&] {
                   m.forward({{{1, 99}}, {}, {tgt}});
                 }),
                 ErrorKind::BadInput, "source id 99|outside the vocabulary (0..5)");
    // The estimate saturates instead of wrapping around for absurd batches.
    QCOMPARE(m.estimatePassBytes(INT_MAX, INT_MAX, INT_MAX, ForwardOptions{}),
             std::numeric_limits<uint64_t>::max());
    verifyStillFine();
  }

  // ---- sentences: a clear BadInput each ----
  void rejectsBadSentence_data() {
    QTest::addColumn<QByteArray>("sentence");
    QTest::addColumn<bool>("target");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("empty") << QByteArray("") << false << "empty";
    QTest::newRow("only whitespace") << QByteArray(" \t \n ") << false << "empty";
    QTest::newRow("only unknown words")
        << QByteArray("hello world") << false << "every word is unknown|\"hello\"|\"world\"|source";
    QTest::newRow("one unknown word") << QByteArray("ich mochte ein wein") << false
                                      << "unknown word \"wein\"|source vocabulary|6 tokens";
    QTest::newRow("unknown target word")
        << QByteArray("i want a wine") << true << "unknown word \"wine\"|target vocabulary";
    QByteArray longer;
    for (int i = 0; i < 65; ++i) longer += "ich ";
    QTest::newRow("longer than max_len") << longer << false << "more than 64 words|at most 64";
    QByteArray longer_t;
    for (int i = 0; i < 64; ++i) longer_t += "i ";  // + BOS = 65 > 64
    QTest::newRow("target longer than max_len") << longer_t << true << "at most 63";
    QTest::newRow("control character BEL")
        << QByteArray("ich\x07 bier") << false << "control character|byte 7|position 3";
    QTest::newRow("NUL byte") << QByteArray("ich\0bier", 8) << false << "control character|byte 0";
    QTest::newRow("escape sequence")
        << QByteArray("\x1b[31mich") << false << "control character|byte 27";
    QTest::newRow("DEL") << QByteArray("ich\x7f") << false << "control character|byte 127";
    QTest::newRow("very long word")
        << QByteArray(100000, 'a') << false << "100000 bytes long|source vocabulary";
    QTest::newRow("invalid UTF-8")
        << QByteArray("ich \xff\xfe bier") << false << "UTF-8|position 4";
  }
  void rejectsBadSentence() {
    QFETCH(QByteArray, sentence);
    QFETCH(bool, target);
    QFETCH(QString, mentions);
    Model m(loadModel(kTiny), makeCpuBackend());
    const std::string s = sentence.toStdString();
    auto err = caught([&] { target ? m.encodeTarget(s) : m.encodeSource(s); });
    VERIFY_ERROR(err, ErrorKind::BadInput, mentions);
    verifyStillFine();
  }

  // ---- the CLI prints the error and exits non-zero ----
  void cliReportsErrors_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QStringList>("extra");
    QTest::addColumn<QString>("mentions");
    const QByteArray good = Parts::tiny().bytes();
    QTest::newRow("truncated") << good.left(good.size() - 100) << QStringList{"info"}
                               << "truncated|projection.weight";
    QTest::newRow("duplicate tensor") << modHeaderText([](std::string& t) {
      replaceOnce(t, "{",
                  "{\"projection.weight\":{\"dtype\":\"F32\",\"shape\":[1],"
                  "\"data_offsets\":[0,4]},");
    }) << QStringList{"info"} << "duplicate key|projection.weight";
    QTest::newRow("bad config") << modConfig([](json& c) { c["bos_id"] = 42; })
                                << QStringList{"info"} << "bos_id|42";
    QTest::newRow("unknown word") << good << QStringList{"run", "--src", "ich trinke bier"}
                                  << "unknown word \"trinke\"";
    QTest::newRow("control character")
        << good << QStringList{"run", "--src", "ich\x01"} << "control character";
    QTest::newRow("id out of range")
        << good << QStringList{"run", "--src-ids", "1,2,77"} << "77|outside the vocabulary";
    // --names: the map's settings checked as the config's, the message naming the map's file.
    const QString names = dir_.path() + "/max_len_0.names.json";
    writeBytes(names.toStdString(), R"({"base": "nlp-tutorial", "max_len": 0})");
    QTest::newRow("names map max_len 0")
        << modParts([](Parts& p) { p.metadata.erase("attnviz_config"); })
        << QStringList{"info", "--names", names, "--n-heads", "4"}
        << "max_len_0.names.json: \"max_len\" is 0, expected 2 to 1048576";
  }
  void cliReportsErrors() {
    QFETCH(QByteArray, bytes);
    QFETCH(QStringList, extra);
    QFETCH(QString, mentions);
    const QString path = QString::fromStdString(caseFile(dir_));
    writeBytes(path.toStdString(), bytes);
    QStringList args{extra.front(), path};
    args += extra.mid(1);
    QProcess p;
    p.start(ATTNVIZ_CLI, args);
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);  // no crash
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(p.exitCode() != 0, qPrintable(err));
    QVERIFY2(err.contains("attnviz-cli: error: ") && mentionsAll(err, mentions), qPrintable(err));
  }
  void cliRunsGoodModel() {
    QProcess p;
    p.start(ATTNVIZ_CLI, {"run", QString::fromStdString(kTiny), "--src", "ich mochte ein bier"});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
  }
};

// ---- rows ----

void TestHostile::addFileRows() {
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<ErrorKind>("kind");
  QTest::addColumn<QString>("mentions");
  using K = ErrorKind;
  auto row = [](const char* name, const QByteArray& b, ErrorKind k, const QString& m) {
    QTest::newRow(name) << b << k << m;
  };
  const QByteArray good = Parts::tiny().bytes();
  const std::string tensor = "projection.weight";  // the last tensor in the data buffer

  // The 8-byte length prefix.
  row("empty file", QByteArray(), K::FileTooShort, "0 bytes|8 bytes");
  row("5 bytes", QByteArray("\x10\0\0\0\0", 5), K::FileTooShort, "5 bytes");
  row("header length above the cap", withLength(200'000'000, "{}"), K::HeaderTooLarge,
      "200000000|100000000");
  row("header length 2^64-1", withLength(~uint64_t(0), "{}"), K::HeaderTooLarge,
      "18446744073709551615");
  row("header length beyond the file", withLength(1000, "{}      "), K::HeaderTooLarge,
      "1000|past the end|16-byte file");
  row("file cut inside the header", good.left(100), K::HeaderTooLarge, "past the end|100-byte");
  // A text file named .safetensors: its first letters are no length.
  row("text file", QByteArray("hello world, this is a text file\n"), K::HeaderTooLarge,
      "not a safetensors file (it starts with text: \"hello wo\")");
  row("UTF-8 text file cut inside a character",
      QByteArray("\xc3\x9c"
                 "bersetzung: das Modell\n"),
      K::HeaderTooLarge, "not a safetensors file|starts with text");
  row("text file of one line", QByteArray("{\"a\": 1}\n"), K::HeaderTooLarge,
      "not a safetensors file (it starts with text: \"{\"a\": 1}\")");

  // Names with control characters: refused, and quoted escaped — a NUL no longer cuts
  // the message short, an escape sequence never reaches the terminal.
  auto renamed = [](const std::string& to) {
    return modParts([&](Parts& p) { p.tensor("projection.weight").name = to; });
  };
  row("tensor name with NUL", renamed(std::string("projection\0.weight", 18)), K::BadName,
      "projection\\x00.weight|control character|byte 10");
  row("tensor name with ESC sequence", renamed("\x1b[2J\x1b]0;model OK\x07projection.weight"),
      K::BadName, "\\x1B[2J\\x1B]0;model OK\\x07projection.weight|byte 0");
  row("tensor name with DEL", renamed("projection.weight\x7f"), K::BadName, "\\x7F|byte 17");
  row("tensor name with C1 CSI",
      renamed("projection\xc2\x9b"
              "31m.weight"),
      K::BadName, "\\u{009B}|byte 10");
  row("metadata key with BEL", modParts([](Parts& p) { p.metadata["ring\x07"] = "x"; }), K::BadName,
      "__metadata__ key \"ring\\x07\"");

  // The header text.
  row("invalid UTF-8 byte", assemble("{\"a\xff\":1}", {}), K::InvalidUtf8, "UTF-8|byte 3");
  row("overlong UTF-8", assemble("{\"\xC0\xAF\":1}", {}), K::InvalidUtf8, "UTF-8");
  row("UTF-16 surrogate in UTF-8", assemble("{\"\xED\xA0\x80\":1}", {}), K::InvalidUtf8, "UTF-8");
  row("UTF-8 sequence cut short", assemble("{\"a\":\"\xE2\x82", {}), K::InvalidUtf8, "UTF-8");
  row("code point above U+10FFFF", assemble("{\"\xF4\x90\x80\x80\":1}", {}), K::InvalidUtf8,
      "UTF-8");
  row("invalid JSON: cut off", assemble("{\"a\": ", {}), K::InvalidJson, "header|invalid JSON");
  row("invalid JSON: trailing comma", assemble("{\"a\":1,}", {}), K::InvalidJson, "invalid JSON");
  row("invalid JSON: NaN literal", assemble("{\"a\":NaN}", {}), K::InvalidJson, "invalid JSON");
  row("invalid JSON: two roots", assemble("{} {}", {}), K::InvalidJson, "invalid JSON");
  row("invalid JSON: raw control character", modHeaderText([](std::string& t) {
        replaceOnce(t, "projection",
                    "proj\x01"
                    "ection");
      }),
      K::InvalidJson, "invalid JSON");
  row("invalid JSON: binary", withLength(8, std::string("\x00\x01\x02\x03\x04\x05\x06\x07", 8)),
      K::InvalidJson, "invalid JSON");
  row("deeply nested header: 100000 [", assemble(std::string(100000, '['), {}), K::InvalidJson,
      "nested deeper than 64");
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  row("deeply nested header: 100000 {", assemble(objects, {}), K::InvalidJson, "nested");
  row("root is an array", assemble("[1, 2]", {}), K::NotAnObject, "array|expected an object");
  row("root is a string", assemble("\"model\"", {}), K::NotAnObject, "string");
  row("root is a number", assemble("42", {}), K::NotAnObject, "number");
  row("root is null", assemble("null", {}), K::NotAnObject, "null");
  row("tensor entry is a number", modHeader([&](json& h, auto&) { h[tensor] = 5; }), K::NotAnObject,
      "projection.weight|number");
  row("tensor entry without dtype", modHeader([&](json& h, auto&) { h[tensor].erase("dtype"); }),
      K::NotAnObject, "projection.weight|dtype");
  row("tensor entry without data_offsets",
      modHeader([&](json& h, auto&) { h[tensor].erase("data_offsets"); }), K::NotAnObject,
      "projection.weight|data_offsets");

  // Duplicates (JSON libraries keep the last silently).
  row("duplicate tensor name", modHeaderText([](std::string& t) {
        replaceOnce(t, "{",
                    "{\"projection.weight\":{\"dtype\":\"F32\",\"shape\":[9,32],"
                    "\"data_offsets\":[182144,183296]},");
      }),
      K::DuplicateKey, "duplicate key \"projection.weight\"");
  row("duplicate tensor name, escaped", modHeaderText([](std::string& t) {
        replaceOnce(t, "{",
                    "{\"projection.w\\u0065ight\":{\"dtype\":\"F32\",\"shape\":[9,32],"
                    "\"data_offsets\":[182144,183296]},");
      }),
      K::DuplicateKey, "projection.weight");
  row("duplicate dtype key", modHeaderText([](std::string& t) {
        replaceOnce(t, "\"dtype\":\"F32\"", "\"dtype\":\"F32\",\"dtype\":\"F16\"");
      }),
      K::DuplicateKey, "duplicate key \"dtype\"");
  row("duplicate __metadata__",
      modHeaderText([](std::string& t) { replaceOnce(t, "{", "{\"__metadata__\":{},"); }),
      K::DuplicateKey, "__metadata__");
  row("duplicate metadata key", modHeaderText([](std::string& t) {
        replaceOnce(t, "\"__metadata__\":{", "\"__metadata__\":{\"attnviz_config\":\"{}\",");
      }),
      K::DuplicateKey, "attnviz_config");

  // __metadata__.
  row("__metadata__ value is a number", modParts([](Parts& p) { p.metadata["version"] = 3; }),
      K::BadMetadata, "__metadata__[\"version\"]|number|expected a string");
  row("__metadata__ config is an object",
      modParts([](Parts& p) { p.metadata["attnviz_config"] = p.config(); }), K::BadMetadata,
      "attnviz_config|object|expected a string");
  row("__metadata__ value is null", modParts([](Parts& p) { p.metadata["note"] = nullptr; }),
      K::BadMetadata, "note|null");
  row("__metadata__ is an array", modHeader([](json& h, auto&) {
        h["__metadata__"] = {1, 2};
      }),
      K::BadMetadata, "__metadata__|array");

  // dtypes: unknown to safetensors vs known but not usable as a weight.
  auto dtype = [&](const json& dt, int elem_size) {
    return modParts([&](Parts& p) {
      auto& t = p.tensor(tensor);
      t.dtype = dt;
      t.bytes.assign(9 * 32 * elem_size, 0);
    });
  };
  row("unknown dtype Q4", dtype("Q4", 4), K::UnknownDtype, "projection.weight|\"Q4\"");
  row("unknown dtype f32 (lower case)", dtype("f32", 4), K::UnknownDtype, "\"f32\"");
  row("unknown dtype: empty", dtype("", 4), K::UnknownDtype, "unknown dtype \"\"");
  row("dtype not a string", dtype(32, 4), K::UnknownDtype, "projection.weight|not a string");
  row("unsupported dtype I64 weight", dtype("I64", 8), K::UnsupportedDtype,
      "projection.weight|I64|F32, F16, BF16");
  row("unsupported dtype I32 weight", dtype("I32", 4), K::UnsupportedDtype, "I32");
  row("unsupported dtype BOOL weight", dtype("BOOL", 1), K::UnsupportedDtype, "BOOL");
  row("unsupported dtype F8_E4M3 weight", dtype("F8_E4M3", 1), K::UnsupportedDtype, "F8_E4M3");
  row("unsupported dtype U64 weight", dtype("U64", 8), K::UnsupportedDtype, "U64");

  // Shapes.
  auto shape = [&](const json& s) {
    return modHeader([&](json& h, auto&) { h[tensor]["shape"] = s; });
  };
  auto shapeText = [&](const std::string& s) {
    return modHeaderText([&](std::string& t) { replaceOnce(t, "[9,32]", s); });
  };
  row("shape negative", shape({-9, 32}), K::BadShape, "projection.weight|-9|negative");
  row("shape fractional", shape({9.5, 32}), K::BadShape, "9.5|not a non-negative integer");
  row("shape entry a string", shape({"9", 32}), K::BadShape, "\"9\"");
  row("shape entry null", shape({nullptr, 32}), K::BadShape, "null");
  row("shape not an array", shape("9x32"), K::BadShape, "projection.weight|not an array");
  row("shape with 17 dimensions", shape(json(std::vector<int>(17, 1))), K::BadShape,
      "17 dimensions");
  row("shape entry 2^63", shapeText("[9223372036854775808,32]"), K::BadShape,
      "9223372036854775808|absurdly large");
  row("shape entry 2^64 (not an integer any more)", shapeText("[18446744073709551616,32]"),
      K::BadShape, "not a non-negative integer");
  row("shape entry 1e400", shapeText("[1e400,32]"), K::InvalidJson, "1e400");
  row("shape x dtype overflow [2^32, 2^32, 4]", shape({1ull << 32, 1ull << 32, 4}), K::SizeOverflow,
      "projection.weight|[4294967296,4294967296,4]|64 bits");
  row("shape x dtype overflow [2^31, 2^31, 2] F32", shape({1ull << 31, 1ull << 31, 2}),
      K::SizeOverflow, "projection.weight|× 4 bytes overflows");
  row("shape elements overflow [2^62, 2^62, 0]", shape({1ull << 62, 1ull << 62, 0}),
      K::SizeOverflow, "more elements than 64 bits");
  row("shape elements huge but fitting [2^61]", shape({1ull << 61}), K::BadOffsets,
      "data_offsets span 1152 bytes|needs 9223372036854775808");

  // data_offsets.
  auto offsets = [&](const json& o) {
    return modHeader([&](json& h, auto&) { h[tensor]["data_offsets"] = o; });
  };
  const uint64_t b = 182144, e = 183296;
  row("data_offsets of length 1", offsets({b}), K::BadOffsets, "projection.weight|[182144]");
  row("data_offsets of length 3", offsets({b, e, e}), K::BadOffsets, "[begin, end]");
  row("data_offsets empty", offsets(json::array()), K::BadOffsets, "[]");
  row("data_offsets not an array", offsets("182144-183296"), K::BadOffsets, "data_offsets");
  row("data_offsets negative", offsets({-1, 1151}), K::BadOffsets, "non-negative integers");
  row("data_offsets fractional", offsets({182144.5, 183296}), K::BadOffsets, "non-negative");
  row("data_offsets end before begin", offsets({e, b}), K::BadOffsets,
      "projection.weight|end 182144 is before begin 183296");
  row("data_offsets span not matching the shape", offsets({b, e - 4}), K::BadOffsets,
      "span 1148 bytes|needs 1152");
  row("data_offsets with a gap", modHeader([&](json& h, std::vector<uint8_t>& d) {
        h[tensor]["data_offsets"] = {b + 4, e + 4};
        d.insert(d.begin() + b, 4, 0);
      }),
      K::BadOffsets, "gap of 4 bytes|projection.weight");
  row("data_offsets overlapping", modHeader([&](json& h, std::vector<uint8_t>& d) {
        h[tensor]["data_offsets"] = {b - 4, e - 4};
        d.erase(d.end() - 4, d.end());
      }),
      K::BadOffsets, "projection.weight|overlap");
  row("data_offsets two tensors on the same bytes", modHeader([&](json& h, auto&) {
        h["encoder.pos_emb.pe"]["data_offsets"] = h["decoder.pos_emb.pe"]["data_offsets"];
      }),
      K::BadOffsets, "overlap");
  row("data_offsets out of the buffer", offsets({1'000'000'000'000ull, 1'000'000'001'152ull}),
      K::BadOffsets, "projection.weight|outside the 183296-byte data buffer");
  row("data_offsets at 2^64-1", offsets({~uint64_t(0) - 1152, ~uint64_t(0)}), K::BadOffsets,
      "outside");

  // The buffer's end.
  QByteArray trailing = good;
  trailing.append(QByteArray(16, '\0'));
  row("trailing bytes", trailing, K::TrailingBytes, "16 bytes after the last tensor");
  row("truncated data", good.left(good.size() - 100), K::Truncated,
      "truncated|183296|183196|projection.weight");
  row("truncated after the header", good.left(good.size() - 183296), K::Truncated,
      "truncated|holds 0");
  row("header promising 1 TB", modHeader([&](json& h, auto&) {
        h[tensor]["shape"] = {250'000'000'000ull};
        h[tensor]["data_offsets"] = {b, b + 1'000'000'000'000ull};
      }),
      K::Truncated, "truncated|projection.weight");

  // Loaded fine but the tensors are not what the config says.
  row("missing tensor", modParts([&](Parts& p) {
        std::erase_if(p.tensors,
                      [](const Parts::Entry& t) { return t.name == "projection.weight"; });
      }),
      K::MissingTensor, "projection.weight|[9, 32]");
  row("tensor shape transposed", modParts([&](Parts& p) {
        p.tensor(tensor).shape = {32, 9};
      }),
      K::ShapeMismatch, "projection.weight|[32, 9]|[9, 32]");
}

void TestHostile::addConfigRows() {
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<ErrorKind>("kind");
  QTest::addColumn<QString>("mentions");
  using K = ErrorKind;
  auto row = [](const char* name, const QByteArray& b, ErrorKind k, const QString& m) {
    QTest::newRow(name) << b << k << m;
  };
  auto set = [](const char* key, const json& v) { return modConfig([&](json& c) { c[key] = v; }); };
  auto drop = [](const char* key) { return modConfig([&](json& c) { c.erase(key); }); };
  const QString where = "__metadata__[\"attnviz_config\"]";

  // Syntax.
  row("config missing", modParts([](Parts& p) { p.metadata.erase("attnviz_config"); }),
      K::MissingInfo, "no config found|n_heads");  // the CLI adds --n-heads, --config
  row("config invalid JSON", withConfigText("{\"family\": "), K::InvalidJson,
      where + "|invalid JSON");
  row("config empty", withConfigText(""), K::InvalidJson, where);
  row("config is an array", withConfigText("[1]"), K::BadConfig, "config is an array");
  row("config duplicate key", withConfigText(R"({"family":"nlp-tutorial","family":"seed003"})"),
      K::DuplicateKey, where + "|duplicate key \"family\"");
  row("config duplicate nested key", withConfigText(R"({"examples":[{"src":"a","src":"b"}]})"),
      K::DuplicateKey, "duplicate key \"src\"");
  row("config nested 100000 [", withConfigText(std::string(100000, '[')), K::InvalidJson,
      where + "|nested deeper than 64");
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  row("config nested 100000 {", withConfigText(objects), K::InvalidJson, "nested");
  row("config nested 65 inside examples", modConfig([](json& c) {
        json deep = json::array();
        for (int i = 0; i < 70; ++i) deep = json::array({deep});
        c["examples"] = deep;
      }),
      K::InvalidJson, "nested");

  // Wrong types.
  row("d_model a string", set("d_model", "32"), K::BadConfig, "\"d_model\" is \"32\"|integer");
  row("n_heads a float", set("n_heads", 4.0), K::BadConfig, "\"n_heads\"|integer");
  row("n_heads a bool", set("n_heads", true), K::BadConfig, "\"n_heads\"|integer");
  row("family a number", set("family", 3), K::BadConfig, "\"family\"|string");
  row("family unknown", set("family", "gpt"), K::BadConfig, "\"gpt\"|nlp-tutorial");
  row("attn_bias a string", set("attn_bias", "yes"), K::BadConfig, "attn_bias|true or false");
  row("norm unknown", set("norm", "middle"), K::BadConfig, "\"norm\"|middle|post or pre");
  row("activation unknown", set("activation", "swish"), K::BadConfig, "swish");
  row("positional unknown", set("positional", "rope"), K::BadConfig, "rope");
  row("src_vocab a string", set("src_vocab", "P ich mochte"), K::BadVocabulary,
      "src_vocab|string|array of strings");
  row("examples a number", set("examples", 3), K::BadConfig, "examples");
  row("examples without src", set("examples", json::array({json::object({{"tgt", "x"}})})),
      K::BadConfig, "examples");
  row("mask_fill a string", set("mask_fill", "big"), K::BadConfig, "mask_fill");
  row("mask_fill positive", set("mask_fill", 1e9), K::BadConfig,
      "mask_fill|large negative|must lose the softmax");
  row("layer_norm_eps negative", set("layer_norm_eps", -1), K::BadConfig, "layer_norm_eps");
  row("name a number", set("name", 5), K::BadConfig, "\"name\"");

  // Missing keys.
  for (const char* key : {"family", "d_model", "d_ff", "n_heads", "n_encoder_layers",
                          "n_decoder_layers", "src_vocab", "tgt_vocab", "bos_id", "eos_id"}) {
    const std::string name = std::string("missing ") + key;
    row(name.c_str(), drop(key), K::BadConfig,
        where + "|missing key \"" + QString::fromUtf8(key) + "\"");
  }

  // Negative or absurd sizes.
  row("d_model negative", set("d_model", -32), K::BadConfig, "\"d_model\" is -32|1 to 65536");
  row("d_ff negative", set("d_ff", -1), K::BadConfig, "\"d_ff\" is -1");
  // d_ff 0 is an attention-only model: this file's feed-forward tensors are then left over.
  row("d_ff zero with a feed-forward", set("d_ff", 0), K::UnusedTensor,
      "tensors are not used|pos_ffn");
  row("n_heads zero", set("n_heads", 0), K::BadConfig, "\"n_heads\" is 0");
  row("1e9 encoder layers", set("n_encoder_layers", 1000000000), K::BadConfig,
      "n_encoder_layers|1000000000|1 to 256");
  row("1e9 decoder layers as a float", set("n_decoder_layers", 1e9), K::BadConfig,
      "n_decoder_layers|integer");
  row("2^40 positions", set("max_len", 1ull << 40), K::BadConfig, "max_len|1099511627776");
  row("max_len 2^63 (unsigned)", set("max_len", 1ull << 63), K::BadConfig, "max_len");
  row("max_len 1", set("max_len", 1), K::BadConfig, "max_len");
  row("d_model 2^40", set("d_model", 1ull << 40), K::BadConfig, "d_model|1099511627776");
  row("d_k 2^31", set("d_k", 1ull << 31), K::BadConfig, "d_k");
  row("n_heads x d_k above the limit", modConfig([](json& c) {
        c["n_heads"] = 1024;
        c["d_k"] = 65536;
      }),
      K::BadConfig, "n_heads × d_k");
  row("d_model not divisible by n_heads", modConfig([](json& c) {
        c.erase("d_k");
        c["n_heads"] = 5;
      }),
      K::BadConfig, "not divisible by n_heads");

  // Sizes that disagree with the tensors.
  row("d_model not matching the embeddings", set("d_model", 16), K::ShapeMismatch,
      "encoder.src_emb.weight|[6, 32]|[6, 16]");
  row("d_model larger than the embeddings", set("d_model", 64), K::ShapeMismatch,
      "encoder.src_emb.weight|[6, 64]");
  row("src vocabulary larger than the embedding rows",
      modConfig([](json& c) { c["src_vocab"].push_back("wein"); }), K::ShapeMismatch,
      "encoder.src_emb.weight|[6, 32]|[7, 32]");
  row("tgt vocabulary smaller than the embedding rows",
      modConfig([](json& c) { c["tgt_vocab"].erase(c["tgt_vocab"].size() - 1); }), K::ShapeMismatch,
      "decoder.tgt_emb.weight|[9, 32]|[8, 32]");
  row("n_heads x d_k not matching W_Q", set("d_k", 4), K::ShapeMismatch,
      "encoder.layers.0.enc_self_attn.W_Q.weight|[32, 32]|[16, 32]");
  row("d_ff not matching", set("d_ff", 65), K::ShapeMismatch, "pos_ffn.fc.0.weight|[65, 32]");
  row("more layers than the file holds", set("n_encoder_layers", 3), K::MissingTensor,
      "encoder.layers.2.enc_self_attn.W_Q.weight");
  row("learned positions without tables", set("positional", "learned"), K::MissingTensor,
      "encoder.pos_emb.weight|[64, 32]");
  row("attention biases the file lacks", set("attn_bias", true), K::MissingTensor,
      "enc_self_attn.W_Q.bias");

  // Vocabularies.
  row("duplicate source token", set("src_vocab", {"P", "ich", "mochte", "ich", "bier", "cola"}),
      K::BadVocabulary, "src_vocab|\"ich\" twice|index 3");
  row("duplicate target token",
      set("tgt_vocab", {"P", "i", "want", "a", "beer", "coke", "S", "E", "i"}), K::BadVocabulary,
      "tgt_vocab|\"i\" twice");
  row("empty vocabulary", set("src_vocab", json::array()), K::BadVocabulary, "src_vocab|empty");
  row("empty token", set("src_vocab", {"P", "", "mochte", "ein", "bier", "cola"}), K::BadVocabulary,
      "src_vocab\"[1]|empty token");
  row("token not a string", set("src_vocab", {"P", 1, "mochte", "ein", "bier", "cola"}),
      K::BadVocabulary, "src_vocab\"[1]|expected a string");
  row("token 2000 bytes", set("src_vocab", {"P", std::string(2000, 'x'), "a", "b", "c", "d"}),
      K::BadVocabulary, "2000 bytes|at most 1024");
  // Control characters in tokens are tokens (nanoGPT's '\n'): they load and are shown
  // escaped (test_tokenizers' controlTokens); in names they cannot be meant.
  row("name with a terminal title sequence", set("name", "\x1b]0;model OK\x07"), K::BadConfig,
      "\"name\" \"\\x1B]0;model OK\\x07\" contains|\\x1B at byte 0");
  row("description with BEL", set("description", "line one\nline two\x07"), K::BadConfig,
      "\"description\" \"line one\\x0Aline two\\x07\" contains|\\x07 at byte 17");
  // An epsilon that is positive as a double but 0 as the float32 the model uses.
  row("layer_norm_eps 1e-50", set("layer_norm_eps", 1e-50), K::BadConfig,
      "layer_norm_eps|1e-50|positive float32");
  row("embed_norm_eps 1e-46", set("embed_norm_eps", 1e-46), K::BadConfig, "embed_norm_eps");
  row("layer_norm_eps subnormal", set("layer_norm_eps", 1e-40), K::BadConfig, "layer_norm_eps");
  // The switches of the modern parts: a rotary base that gives no frequencies, key/value heads
  // that do not divide the heads, names that do not exist.
  auto rotary = [&](const json& theta) {
    return modConfig([=](json& c) {
      c["positional"] = "rotary";
      c["rope_theta"] = theta;
    });
  };
  row("rope_theta 0", rotary(0), K::BadConfig, "\"rope_theta\" is 0|finite number above 1");
  row("rope_theta negative", rotary(-10000.0), K::BadConfig, "rope_theta|-10000");
  row("rope_theta NaN", rotary(std::nan("")), K::BadConfig, "rope_theta|finite number");
  row("rope_theta beyond float32", rotary(1e39), K::BadConfig, "rope_theta|1e+39|finite");
  row("rope_theta a string", rotary("10000"), K::BadConfig, "rope_theta|\"10000\"");
  row("n_kv_heads not dividing n_heads", set("n_kv_heads", 3), K::BadConfig,
      "n_kv_heads 3 does not divide n_heads");
  row("n_kv_heads 0", set("n_kv_heads", 0), K::BadConfig, "\"n_kv_heads\" is 0");
  row("n_kv_heads a float", set("n_kv_heads", 2.0), K::BadConfig, "n_kv_heads|integer");
  row("norm_kind unknown", set("norm_kind", "batchnorm"), K::BadConfig,
      "norm_kind|batchnorm|rmsnorm");
  row("rope_layout unknown", set("rope_layout", "spiral"), K::BadConfig, "rope_layout|spiral");
  row("gated_ffn a string", set("gated_ffn", "yes"), K::BadConfig, "gated_ffn|true or false");
  row("custom family without its map", set("family", "custom"), K::BadConfig, "custom|names_map");
  row("custom map naming no role", modConfig([](json& c) {
        c["family"] = "custom";
        c["names_map"] = {{"names", {{"attn_query", "h.{N}.q"}}}};
      }),
      K::BadConfig, "attn_query|not a role|attn_q");
  // A names map's settings get the config's own checks (the config's key dropped, so that the
  // map's is the one read): each of these once loaded, a positive fill giving masked cells the
  // weight.
  auto own = [](const char* key, const json& v) {
    return modConfig([=](json& c) {
      c["family"] = "custom";
      c["names_map"] = {{"base", "nlp-tutorial"}, {key, v}};
      c.erase(key);
    });
  };
  row("names map max_len 0", own("max_len", 0), K::BadConfig,
      "names_map: \"max_len\" is 0, expected 2 to 1048576");
  row("names map max_len -5", own("max_len", -5), K::BadConfig, "names_map: \"max_len\" is -5");
  row("names map max_len 1e30", own("max_len", 1e30), K::BadConfig,
      "names_map: \"max_len\" is 1e+30, expected an integer");
  row("names map layer_norm_eps 0", own("layer_norm_eps", 0), K::BadConfig,
      "names_map: \"layer_norm_eps\" is 0|positive float32");
  row("names map layer_norm_eps negative", own("layer_norm_eps", -1e-5), K::BadConfig,
      "names_map: \"layer_norm_eps\" is -1e-05");
  row("names map rope_theta 0", own("rope_theta", 0), K::BadConfig,
      "names_map: \"rope_theta\" is 0|finite number above 1");
  row("names map rope_theta negative", own("rope_theta", -10000.0), K::BadConfig,
      "names_map: \"rope_theta\" is -10000");
  row("names map mask_fill positive", own("mask_fill", 1e9), K::BadConfig,
      "names_map: \"mask_fill\" is 1000000000.0|large negative|must lose the softmax");
  row("names map mask_fill a string", own("mask_fill", "big"), K::BadConfig,
      "names_map: \"mask_fill\" is \"big\", expected a number or \"-inf\"");

  // Ids out of range.
  row("pad_id out of both vocabularies", set("pad_id", 99), K::BadVocabulary,
      "\"pad_id\" is 99|0 to 8");
  row("pad_id outside the source vocabulary", set("pad_id", 7), K::BadVocabulary,
      "\"src_pad_id\" is 7 (from \"pad_id\")|source vocabulary of 6 tokens");
  // -1 is "none" (the options' documented value); below it is out of range.
  row("tgt_pad_id below -1", set("tgt_pad_id", -2), K::BadVocabulary, "tgt_pad_id|-2|-1 or 0");
  row("bos_id = vocabulary size", set("bos_id", 9), K::BadVocabulary,
      "\"bos_id\" is 9|target vocabulary of 9 tokens|0 to 8");
  row("eos_id below -1", set("eos_id", -2), K::BadVocabulary, "\"eos_id\" is -2");
  row("eos_id 2^40", set("eos_id", 1ull << 40), K::BadVocabulary, "eos_id|1099511627776");
  row("eos_id 2^64-1", set("eos_id", ~uint64_t(0)), K::BadVocabulary,
      "eos_id|18446744073709551615");
  row("unk_id out of range", set("unk_id", 100), K::BadVocabulary, "unk_id|100|-1 or 0 to 8");
  row("src_unk_id out of range", set("src_unk_id", 6), K::BadVocabulary, "src_unk_id|6|0 to 5");
  row("bos_id a string", set("bos_id", "6"), K::BadConfig, "bos_id|integer");
}

void TestHostile::rejectsBadNamesMap_data() {
  QTest::addColumn<QString>("added");
  QTest::addColumn<ErrorKind>("kind");
  QTest::addColumn<QString>("mentions");
  using K = ErrorKind;
  auto row = [](const char* name, const char* added, ErrorKind k, const QString& m) {
    QTest::newRow(name) << QString(added) << k << m;
  };
  // The settings, as the config checks them (each once accepted: the file's sinusoid table gave
  // max_len, and a positive fill let the masked future positions win).
  row("max_len 0", R"({"max_len": 0})", K::BadConfig,
      "the names map: \"max_len\" is 0, expected 2 to 1048576");
  row("max_len -5", R"({"max_len": -5})", K::BadConfig, "\"max_len\" is -5, expected 2 to");
  row("max_len 1e30", R"({"max_len": 1e30})", K::BadConfig,
      "\"max_len\" is 1e+30, expected an integer");
  row("layer_norm_eps 0", R"({"layer_norm_eps": 0})", K::BadConfig,
      "\"layer_norm_eps\" is 0|positive float32");
  row("layer_norm_eps negative", R"({"layer_norm_eps": -0.5})", K::BadConfig,
      "\"layer_norm_eps\" is -0.5|positive float32");
  row("rope_theta 0", R"({"rope_theta": 0})", K::BadConfig,
      "\"rope_theta\" is 0|finite number above 1");
  row("rope_theta negative", R"({"rope_theta": -2})", K::BadConfig,
      "\"rope_theta\" is -2|finite number above 1");
  row("mask_fill positive", R"({"mask_fill": 1e9})", K::BadConfig,
      "\"mask_fill\" is 1000000000.0|large negative|must lose the softmax");
  row("mask_fill zero", R"({"mask_fill": 0})", K::BadConfig,
      "\"mask_fill\" is 0|must lose the softmax");
  // A role named to a tensor the file does not hold: the encoder's feed-forward once read as
  // absent (d_ff 0, attention-only); now the role and the name are given.
  row("ffn_up not in the file", R"({"names": {"encoder.ffn_up": "encoder.layers.{N}.pos_ffn.up"}})",
      K::MissingTensor,
      "own_names.safetensors: the names map names tensors the file does not hold: "
      "encoder.ffn_up (encoder.layers.0.pos_ffn.up.weight)");
  row("two roles not in the file",
      R"({"names": {"decoder.attn_q": "decoder.layers.{N}.q", "output": {"weight": "head"}}})",
      K::MissingTensor, "decoder.attn_q (decoder.layers.0.q.weight), output (head)");
}

void TestHostile::rejectsDamagedFile_data() {
  addFileRows();
}
void TestHostile::rejectsBadConfig_data() {
  addConfigRows();
}

QTEST_GUILESS_MAIN(TestHostile)
#include "test_hostile.moc"

// Hostile PyTorch checkpoints: one crafted file per row (built here byte by byte: pickle opcodes,
// zip archives written by libzip then patched, legacy streams), each asserting the exact ErrorKind,
// a message that names the file and what was wrong, a bounded time, and afterwards that a good
// checkpoint (the committed seed corpus, written by torch.save) still loads with its values.
// Nothing here is ever unpickled by Python: the "malicious" pickles are inert bytes.
#include <sys/resource.h>

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>

#include "arch/weights.h"
#include "base/error.h"
#include "checkpoint_files.h"
#include "io/meta_pkl.h"
#include "io/torch_checkpoint.h"
#include "test_support.h"

using namespace attnviz;
using namespace attnviz::ckpt_test;
using attnviz::test::caught;

Q_DECLARE_METATYPE(attnviz::ErrorKind)

namespace {

const std::string kCorpus = ATTNVIZ_CHECKPOINT_CORPUS;

QTemporaryDir& scratch() {
  static QTemporaryDir dir;
  return dir;
}
Bytes zipped(const std::vector<ZipEntry>& entries) {
  return zipBytes(entries, scratch().path().toStdString() + "/scratch.zip");
}

// The good state_dict every case starts from: w = [[1, 2], [3, 4]] (storage 0), b = [0.5] (1).
std::vector<Bytes> goodStorages() {
  return {floatBytes({1, 2, 3, 4}), floatBytes({0.5f})};
}
Pickle& goodTensorW(Pickle& p) {
  return p.str("w").tensor("0", 4, 0, {2, 2}, {2, 1});
}
// {"w": ..., <extra entries>}
Pickle stateDict(const std::function<void(Pickle&)>& extra = {}) {
  Pickle p;
  p.proto().orderedDict().mark();
  goodTensorW(p);
  if (extra) extra(p);
  return p.setitems().stop();
}
Bytes inZip(const Pickle& p, std::vector<Bytes> storages = goodStorages()) {
  return zipped(checkpointEntries(p.b, storages));
}
// A state_dict whose only tensor is made by `tensor`.
Bytes oneTensor(const std::function<void(Pickle&)>& tensor,
                std::vector<Bytes> storages = goodStorages()) {
  Pickle p;
  p.proto().orderedDict().mark().str("t");
  tensor(p);
  return inZip(p.setitems().stop(), std::move(storages));
}
// A pickle that is just `body` then STOP, in a zip with the good storages.
Bytes bare(const std::function<void(Pickle&)>& body) {
  Pickle p;
  p.proto();
  body(p);
  return inZip(p.stop());
}

// A nanoGPT or llama2.c train.py checkpoint of one tiny layer (every tensor a view of one storage):
// {"model": {…}, "model_args": <args>, "iter_num": 1}, `args` writing the dict (or what stands in
// its place) onto the stack.
Bytes trainCheckpoint(bool llama, const std::function<void(Pickle&)>& args) {
  struct T {
    const char* name;
    std::vector<int64_t> size;
  };
  const std::vector<T> nanogpt = {{"transformer.wte.weight", {3, 4}},
                                  {"transformer.wpe.weight", {2, 4}},
                                  {"transformer.h.0.ln_1.weight", {4}},
                                  {"transformer.h.0.attn.c_attn.weight", {12, 4}},
                                  {"transformer.h.0.attn.c_proj.weight", {4, 4}},
                                  {"transformer.h.0.ln_2.weight", {4}},
                                  {"transformer.h.0.mlp.c_fc.weight", {16, 4}},
                                  {"transformer.h.0.mlp.c_proj.weight", {4, 16}},
                                  {"transformer.ln_f.weight", {4}},
                                  {"lm_head.weight", {3, 4}}};
  const std::vector<T> llama2c = {{"tok_embeddings.weight", {3, 4}},
                                  {"layers.0.attention_norm.weight", {4}},
                                  {"layers.0.attention.wq.weight", {4, 4}},
                                  {"layers.0.attention.wk.weight", {2, 4}},
                                  {"layers.0.attention.wv.weight", {2, 4}},
                                  {"layers.0.attention.wo.weight", {4, 4}},
                                  {"layers.0.ffn_norm.weight", {4}},
                                  {"layers.0.feed_forward.w1.weight", {8, 4}},
                                  {"layers.0.feed_forward.w2.weight", {4, 8}},
                                  {"layers.0.feed_forward.w3.weight", {8, 4}},
                                  {"norm.weight", {4}},
                                  {"output.weight", {3, 4}}};
  Pickle p;
  p.proto().emptyDict().mark().str("model").orderedDict().mark();
  for (const T& t : llama ? llama2c : nanogpt) {
    std::vector<int64_t> stride(t.size.size(), 1);
    if (t.size.size() == 2) stride[0] = t.size[1];
    p.str(t.name).tensor("0", 64, 0, t.size, stride);
  }
  p.setitems().str("model_args");
  args(p);
  p.str("iter_num").integer(1).setitems().stop();
  std::vector<float> values(64);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.01f * (float)i;
  return zipped(checkpointEntries(p.b, {floatBytes(values)}));
}

// A model_args dict of `entries` (key, then a value, each pushed by the function).
std::function<void(Pickle&)> argsDict(
    const std::vector<std::pair<std::string, std::function<void(Pickle&)>>>& entries) {
  return [=](Pickle& p) {
    p.emptyDict().mark();
    for (const auto& [k, v] : entries) v(p.str(k));
    p.setitems();
  };
}
std::function<void(Pickle&)> i64(int64_t v) {
  return [=](Pickle& p) { p.integer(v); };
}

// ---- zip patching: fields of the local and central headers of one entry ----
size_t header(const Bytes& z, const std::string& name, bool central) {
  const uint8_t sig[4] = {'P', 'K', static_cast<uint8_t>(central ? 1 : 3),
                          static_cast<uint8_t>(central ? 2 : 4)};
  const size_t name_at = central ? 46 : 30;
  for (size_t i = 0; i + name_at + name.size() <= z.size(); ++i)
    if (std::memcmp(z.data() + i, sig, 4) == 0 &&
        std::memcmp(z.data() + i + name_at, name.data(), name.size()) == 0)
      return i;
  throw std::runtime_error("test bug: no header for " + name);
}
void put(Bytes& z, size_t at, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) z[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get(const Bytes& z, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | z[at + i];
  return v;
}
// Sets a field in both headers: local offset / central offset.
void patch(Bytes& z, const std::string& name, size_t local_field, size_t central_field, uint64_t v,
           int n) {
  put(z, header(z, name, false) + local_field, v, n);
  put(z, header(z, name, true) + central_field, v, n);
}
void patchSizes(Bytes& z, const std::string& name, uint32_t comp, uint32_t uncomp) {
  patch(z, name, 18, 20, comp, 4);
  patch(z, name, 22, 24, uncomp, 4);
}

// ---- whole models: an object of class __main__.M whose state has the module dicts ----
// modules(p) writes the items of _modules (key, module, ...); params(p) those of _parameters.
void module(Pickle& p, const std::function<void(Pickle&)>& params,
            const std::function<void(Pickle&)>& modules, const std::string& cls = "M") {
  p.global("__main__", cls).emptyTuple().newobj();
  p.emptyDict().mark().str("training").boolean(true);
  p.str("_parameters").orderedDict().mark();
  if (params) params(p);
  p.setitems().str("_buffers").orderedDict();
  p.str("_modules").orderedDict().mark();
  if (modules) modules(p);
  p.setitems().setitems().build();
}
void chain(Pickle& p, int depth) {  // modules nested `depth` deep
  module(p, {}, [&](Pickle& q) {
    if (depth > 0) chain(q.str("l"), depth - 1);
  });
}

// ---- legacy streams ----
Pickle& legacyTensor(Pickle& p, const std::string& key, int64_t numel, int64_t offset,
                     const std::vector<int64_t>& size, const std::vector<int64_t>& stride) {
  p.global("torch._utils", "_rebuild_tensor_v2").mark();
  legacyStorage(p, key, numel).integer(offset).ints(size).ints(stride).boolean(false);
  return p.orderedDict().tuple().reduce();
}
Bytes legacyOne(const std::vector<std::string>& keys,
                const std::vector<std::pair<uint64_t, Bytes>>& storages, int64_t numel = 4,
                bool little = true) {
  Pickle obj;
  obj.proto().orderedDict().mark().str("w");
  legacyTensor(obj, "7", numel, 0, {2, 2}, {2, 1});
  obj.setitems().stop();
  return legacyBytes(obj.b, keys, storages, little);
}

// The good checkpoints still load, with the values torch.save wrote (tools/make_checkpoints.py
// --corpus: w = [[1, 2], [3, 4]] F32, b = [0.5] F16).
void verifyStillFine() {
  for (const char* name : {"/state_dict.pt", "/state_dict_legacy.pt"}) {
    const auto ck = TorchCheckpoint::open(kCorpus + name);
    QCOMPARE(ck->tensors().size(), size_t(2));
    QCOMPARE(ck->toFloat("w").data, (std::vector<float>{1, 2, 3, 4}));
    QCOMPARE(ck->toFloat("w").shape, (Shape{2, 2}));
    QCOMPARE(ck->toFloat("b").data, (std::vector<float>{0.5f}));
    QCOMPARE(ck->find("b")->dtype, DType::F16);
  }
}

bool mentionsAll(const QString& message, const QString& needles) {
  for (const QString& n : needles.split('|', Qt::SkipEmptyParts))
    if (!message.contains(n)) return false;
  return true;
}

// The current data row's tag as a file name (letters and digits, the rest '_').
QString rowTag() {
  QString tag = QString::fromUtf8(QTest::currentDataTag());
  for (QChar& c : tag)
    if (!c.isLetterOrNumber()) c = '_';
  return tag;
}

// Writes the current row's bytes to a file of the scratch folder named after its tag.
std::string writeRowFile(const Bytes& b) {
  const std::string path = scratch().path().toStdString() + "/" + rowTag().toStdString() + ".pt";
  writeFile(path, b);
  return path;
}

// A refusal as a row expects it: its kind, a message mentioning every one of `mentions`
// ('|'-separated) and naming the file at `path` (ATTNVIZ_SHOW_ERRORS=1 prints it).
void checkRefusal(const Error& err, ErrorKind kind, const QString& mentions,
                  const std::string& path) {
  const QString msg = QString::fromUtf8(err.what());
  if (qEnvironmentVariableIsSet("ATTNVIZ_SHOW_ERRORS"))
    qInfo().noquote() << errorKindName(err.kind()) << msg;
  QCOMPARE(QString(errorKindName(err.kind())), QString(errorKindName(kind)));
  QVERIFY2(mentionsAll(msg, mentions),
           qPrintable("message \"" + msg + "\" does not mention all of " + mentions));
  QVERIFY2(msg.contains(QString::fromStdString(path)), "the message does not name the file");
}

// The columns of a table of refused inputs: the bytes, the kind of error and what its message
// must mention ('|'-separated).
void refusalColumns() {
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<ErrorKind>("kind");
  QTest::addColumn<QString>("mentions");
}

void refusalRow(const char* name, const Bytes& b, ErrorKind k, const QString& mentions) {
  QTest::newRow(name) << QByteArray(reinterpret_cast<const char*>(b.data()),
                                    static_cast<qsizetype>(b.size()))
                      << k << mentions;
}

}  // namespace

class TestHostileCheckpoint : public QObject {
  Q_OBJECT

 private:
  qint64 worst_ms_ = 0;
  QString worst_case_;

  void addRows();

 private slots:
  void initTestCase() {
    QVERIFY(scratch().isValid());
    if (qEnvironmentVariableIsSet("ATTNVIZ_KEEP_CASES")) {  // to measure or review the files
      scratch().setAutoRemove(false);
      qInfo("the crafted files stay in %s", qPrintable(scratch().path()));
    }
    verifyStillFine();
  }

  void rejects_data() { addRows(); }
  void rejects() {
    QFETCH(QByteArray, bytes);
    QFETCH(ErrorKind, kind);
    QFETCH(QString, mentions);
    const QString tag = rowTag();
    const Bytes b(bytes.begin(), bytes.end());
    const std::string path = writeRowFile(b);

    QElapsedTimer timer;
    timer.start();
    auto err = caught([&] { TorchCheckpoint::open(path); });
    const qint64 ms = timer.elapsed();
    if (ms > worst_ms_) {
      worst_ms_ = ms;
      worst_case_ = tag;
    }
    QVERIFY2(err.has_value(), "no error was thrown");
    checkRefusal(*err, kind, mentions, path);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(QString::fromUtf8(err->what()).size() < 2000, "the message is not clipped");
    // From memory: the same kind.
    auto mem = caught([&] { TorchCheckpoint::parse(b, "in-memory.pt"); });
    QVERIFY(mem.has_value());
    QCOMPARE(QString(errorKindName(mem->kind())), QString(errorKindName(kind)));
    verifyStillFine();
  }

  // nanoGPT's meta.pkl (io/meta_pkl.h): plain data or refused. A GLOBAL anywhere, even one the
  // checkpoint reader knows, is refused: a vocabulary calls nothing.
  void metaRejects_data() {
    refusalColumns();
    using K = ErrorKind;
    auto row = [](const char* name, const Pickle& p, ErrorKind k, const QString& m) {
      refusalRow(name, p.b, k, m);
    };
    // {'vocab_size': n, 'itos': {...}, 'stoi': {...}} with `body` writing the entries of itos.
    auto meta = [](const std::function<void(Pickle&)>& itos,
                   const std::function<void(Pickle&)>& rest = {}) {
      Pickle p;
      p.proto(4).emptyDict().mark().str("itos").emptyDict().mark();
      itos(p);
      p.setitems();
      if (rest) rest(p);
      return p.setitems().stop();
    };
    auto ab = [](Pickle& p) { p.integer(0).str("\n").integer(1).str("a"); };
    Pickle p;
    row("os.system", p.proto(4).global("os", "system").str("echo pwned").tuple1().reduce().stop(),
        K::ForbiddenGlobal, "os.system|never runs code");
    row("a class of the script",
        meta(ab, [](Pickle& p) { p.str("stoi").global("__main__", "Stoi").emptyTuple().reduce(); }),
        K::ForbiddenGlobal, "__main__.Stoi|GLOBAL opcode|runs no code");
    row("an OrderedDict", (Pickle().proto(4).orderedDict().stop()), K::ForbiddenGlobal,
        "collections.OrderedDict");
    row("builtins.getattr", (Pickle().proto(4).global("builtins", "getattr").stop()),
        K::ForbiddenGlobal, "builtins.getattr");
    row("a list", (Pickle().proto(4).emptyList().stop()), K::BadVocabulary, "holds a list|'itos'");
    row("no itos", (Pickle().proto(4).emptyDict().stop()), K::BadVocabulary, "no 'itos'");
    row("itos keyed by strings", meta([](Pickle& p) { p.str("0").str("a"); }), K::BadVocabulary,
        "has the key a str|ids 0 to 0");
    row("itos with a gap", meta([](Pickle& p) { p.integer(0).str("a").integer(2).str("b"); }),
        K::BadVocabulary, "the key an int (2)|ids 0 to 1");
    row("itos of ints", meta([](Pickle& p) { p.integer(0).integer(7); }), K::BadVocabulary,
        "'itos'[0] is an int (7), expected a str");
    row("an empty token", meta([](Pickle& p) { p.integer(0).str(""); }), K::BadVocabulary,
        "'itos'[0] is an empty string");
    row("stoi disagreeing",
        meta(ab,
             [](Pickle& p) {
               p.str("stoi").emptyDict().mark().str("a").integer(0).str("\n").integer(1).setitems();
             }),
        K::BadVocabulary, "'stoi' maps a to an int (0)");
    row("vocab_size disagreeing", meta(ab, [](Pickle& p) { p.str("vocab_size").integer(65); }),
        K::BadVocabulary, "'vocab_size' is an int (65) but 'itos' has 2");
    row("a persistent id", (Pickle().proto(4).str("0").binpersid().stop()), K::BadPickle,
        "persistent id|no tensors");
    row("no STOP", (Pickle().proto(4).emptyDict()), K::Truncated, "");
  }
  void metaRejects() {
    QFETCH(QByteArray, bytes);
    QFETCH(ErrorKind, kind);
    QFETCH(QString, mentions);
    const std::string where = scratch().path().toStdString() + "/meta.pkl";
    auto err = caught([&] {
      nanoGptMetaFromBytes(reinterpret_cast<const uint8_t*>(bytes.data()), (size_t)bytes.size(),
                           where);
    });
    QVERIFY2(err.has_value(), "no error was thrown");
    checkRefusal(*err, kind, mentions, where);  // an empty `mentions` asks for no words
  }

  // The same helper's good meta.pkl reads, '\n' first.
  void metaGood() {
    Pickle p;
    p.proto(4).emptyDict().mark().str("vocab_size").integer(2).str("itos").emptyDict().mark();
    p.integer(0).str("\n").integer(1).str("a").setitems();
    p.str("stoi").emptyDict().mark().str("\n").integer(0).str("a").integer(1).setitems();
    p.setitems().stop();
    QCOMPARE(nanoGptMetaFromBytes(p.b.data(), p.b.size(), "meta.pkl"),
             (std::vector<std::string>{"\n", "a"}));
  }

  // The fuzzer's hostile seeds (tools/make_checkpoints.py --corpus): files that torch.load refuses
  // are refused here too, each with what is wrong.
  void hostileSeedsAreRefused_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("list key") << "hostile_list_key.pt"
                              << "a dict key that is a list";
    QTest::newRow("list key, bare pickle") << "hostile_list_key.data.pkl"
                                           << "a dict key";
    QTest::newRow("path key") << "hostile_path_key.pt"
                              << "passwd\" is a path";
    QTest::newRow("path key, bare pickle") << "hostile_path_key.data.pkl"
                                           << "is a path";
    QTest::newRow("format version") << "hostile_version.pt"
                                    << "format version 99";
  }
  void hostileSeedsAreRefused() {
    QFETCH(QString, file);
    QFETCH(QString, mentions);
    const std::string path = kCorpus + "/" + file.toStdString();
    QVERIFY2(QFile::exists(QString::fromStdString(path)), path.c_str());
    auto err = caught([&] {
      if (file.endsWith(QStringLiteral(".data.pkl"))) {
        std::ifstream in(path, std::ios::binary);
        const Bytes b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        TorchCheckpoint::fromPickle(
            b, [](const std::string&, uint64_t n) { return std::vector<uint8_t>(n, 0); }, path);
      } else {
        TorchCheckpoint::open(path);
      }
    });
    QVERIFY2(err.has_value(), "no error was thrown");
    QVERIFY2(QString::fromUtf8(err->what()).contains(mentions), err->what());
  }

  // A training script's settings saved as an argparse.Namespace beside the state_dict are read
  // as plain data, the dict of its attributes: the file torch.save wrote
  // (tools/make_checkpoints.py --corpus: namespace_args) and the same made here by hand, with the
  // protocol 0/1 spelling (copyreg._reconstructor) too.
  void namespaceSettingsRead() {
    const nlohmann::json want = {{"lr", 0.001},       {"batch_size", 32}, {"name", "tiny"},
                                 {"layers", nullptr}, {"compile", false}, {"seed", nullptr}};
    const auto torchMade = TorchCheckpoint::open(kCorpus + "/namespace_args.pt");
    QCOMPARE(torchMade->toFloat("w").data, (std::vector<float>{1, 2, 3, 4}));
    QCOMPARE(torchMade->toFloat("b").data, (std::vector<float>{0.5f}));
    nlohmann::json args = torchMade->arguments().at("args");
    QCOMPARE(QString::fromStdString(args.at("layers").at("python").get<std::string>()),
             QString("a list of 2 items"));
    args["layers"] = nullptr;
    QCOMPARE(QString::fromStdString(args.dump()), QString::fromStdString(want.dump()));
    QCOMPARE(torchMade->arguments().at("epoch").get<int>(), 3);

    for (const bool reconstructor : {false, true}) {
      Pickle p;
      p.proto().emptyDict().mark().str("model").orderedDict().mark();
      goodTensorW(p).setitems().str("args");
      if (reconstructor)
        p.global("copyreg", "_reconstructor").global("argparse", "Namespace");
      else
        p.global("argparse", "Namespace").emptyTuple().newobj();
      if (reconstructor) p.global("builtins", "object").none().tuple3().reduce();
      p.emptyDict().mark().str("lr").real(0.25).str("name").str("run 7").str("steps");
      p.integer(1500).setitems().build();
      const auto ck = TorchCheckpoint::parse(inZip(p.setitems().stop()), "namespace.pt");
      QCOMPARE(ck->toFloat("w").data, (std::vector<float>{1, 2, 3, 4}));
      QCOMPARE(QString::fromStdString(ck->arguments().at("args").dump()),
               QString(R"({"lr":0.25,"name":"run 7","steps":1500})"));
    }
  }

  // A train.py checkpoint's model_args of the wrong types: refused naming the key and what it
  // holds (or, where the args leave the heads open, asked for), never guessed.
  void refusesModelArgs_data() {
    refusalColumns();
    using K = ErrorKind;
    const auto row = refusalRow;
    auto nano = [](std::function<void(Pickle&)> head) {
      return trainCheckpoint(false, argsDict({{"n_layer", i64(1)},
                                              {"n_head", head},
                                              {"n_embd", i64(4)},
                                              {"block_size", i64(2)},
                                              {"bias", [](Pickle& p) { p.boolean(false); }},
                                              {"vocab_size", i64(3)},
                                              {"dropout", [](Pickle& p) { p.real(0.0); }}}));
    };
    row("nanoGPT n_head a string", nano([](Pickle& p) { p.str("2"); }), K::BadConfig,
        "model_args[\"n_head\"] is a string \"2\"|expected an integer|nanogpt GPT");
    row("nanoGPT n_head a float", nano([](Pickle& p) { p.real(2.0); }), K::BadConfig,
        "model_args[\"n_head\"] is a float|expected an integer");
    row("nanoGPT n_head a bool", nano([](Pickle& p) { p.boolean(true); }), K::BadConfig,
        "model_args[\"n_head\"] is a bool true");
    row("nanoGPT n_head 2^40", nano(i64(int64_t(1) << 40)), K::BadConfig,
        "n_head|1099511627776|-1 to 2^30");
    row("nanoGPT n_head a list", nano([](Pickle& p) {
          p.ints({1, 2});
        }),
        K::BadConfig, "model_args[\"n_head\"] is a tuple of 2 items|expected an integer");
    row("nanoGPT n_head NaN", nano([](Pickle& p) { p.real(std::nan("")); }), K::BadConfig,
        "model_args[\"n_head\"] is nan");
    row("nanoGPT n_head None: the heads asked", nano([](Pickle& p) { p.none(); }), K::MissingInfo,
        "n_heads|how many heads");
    row("nanoGPT n_head 3 of a width of 4", nano(i64(3)), K::MissingInfo,
        "3 heads do not divide|1, 2, 4");
    row("nanoGPT bias a string",
        trainCheckpoint(false,
                        argsDict({{"n_head", i64(2)}, {"bias", [](Pickle& p) { p.str("yes"); }}})),
        K::BadConfig, "model_args[\"bias\"]|\"yes\"|true or false");
    row("nanoGPT model_args a list", trainCheckpoint(false, [](Pickle& p) { p.emptyList(); }),
        K::BadConfig, "the checkpoint's \"model_args\" is a list of 0 items|expected a dict");
    auto llama = [](
                     std::function<void(Pickle&)> kv,
                     std::function<void(Pickle&)> eps = [](Pickle& p) { p.real(1e-5); }) {
      return trainCheckpoint(true, argsDict({{"dim", i64(4)},
                                             {"n_layers", i64(1)},
                                             {"n_heads", i64(2)},
                                             {"n_kv_heads", kv},
                                             {"vocab_size", i64(3)},
                                             {"multiple_of", i64(4)},
                                             {"max_seq_len", i64(8)},
                                             {"norm_eps", eps}}));
    };
    row("llama2.c n_kv_heads not dividing n_heads", llama(i64(3)), K::BadConfig,
        "n_kv_heads 3 does not divide n_heads 2");
    row("llama2.c n_kv_heads a string", llama([](Pickle& p) { p.str("1"); }), K::BadConfig,
        "model_args[\"n_kv_heads\"] is a string");
    row("llama2.c norm_eps NaN", llama(i64(1), [](Pickle& p) { p.real(std::nan("")); }),
        K::BadConfig, "model_args[\"norm_eps\"] is nan|finite number");
    row("llama2.c norm_eps 0", llama(i64(1), [](Pickle& p) { p.real(0.0); }), K::BadConfig,
        "layer_norm_eps|positive float32");
    row("llama2.c norm_eps a string", llama(i64(1), [](Pickle& p) { p.str("1e-5"); }), K::BadConfig,
        "model_args[\"norm_eps\"] is a string|a number");
  }
  void refusesModelArgs() {
    QFETCH(QByteArray, bytes);
    QFETCH(ErrorKind, kind);
    QFETCH(QString, mentions);
    const std::string path = writeRowFile(Bytes(bytes.begin(), bytes.end()));
    auto err = caught([&] { loadModel(path); });
    QVERIFY2(err.has_value(), "no error was thrown");
    checkRefusal(*err, kind, mentions, path);
  }

  // Bounds set by the caller are honoured, with the numbers in the message.
  void respectsLimits() {
    const std::string path = scratch().path().toStdString() + "/limits.pt";
    Pickle p;
    p.proto().orderedDict().mark();
    goodTensorW(p).str("b").tensor("1", 1, 0, {1}, {1}).setitems().stop();
    writeFile(path, inZip(p));
    QVERIFY(TorchCheckpoint::open(path)->tensors().size() == 2);
    auto expect = [&](const CheckpointLimits& lim, const QString& mentions) {
      auto err = caught([&] { TorchCheckpoint::open(path, lim); });
      QVERIFY(err.has_value());
      QCOMPARE(QString(errorKindName(err->kind())), QString("too-large"));
      QVERIFY2(mentionsAll(err->what(), mentions), err->what());
    };
    CheckpointLimits lim;
    lim.max_entries = 3;
    expect(lim, "4 entries|the limit is 3");
    lim = {};
    lim.max_tensors = 1;
    expect(lim, "more than 1 storages");
    lim = {};
    lim.max_storage_bytes = 8;
    expect(lim, "more than 8 bytes");
    lim = {};
    lim.max_pickle_bytes = 100;
    expect(lim, "the limit is 100 bytes");
    lim = {};
    lim.pickle.max_objects = 10;
    expect(lim, "more than 10 objects");
    lim = {};
    lim.max_name_bytes = 1;
    expect(lim, "tensor names longer than 1 byte");
  }

  void cleanupTestCase() {
    qInfo("slowest case: %s, %lld ms", qPrintable(worst_case_), worst_ms_);
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    qInfo("peak resident memory of the whole run: %ld MiB", u.ru_maxrss / 1024);
  }
};

void TestHostileCheckpoint::addRows() {
  refusalColumns();
  using K = ErrorKind;
  const auto row = refusalRow;
  auto call = [](const std::string& module, const std::string& name, const std::string& arg) {
    return [=](Pickle& p) { p.global(module, name).str(arg).tuple1().reduce(); };
  };

  // ---- names that can only serve to run code: refused where they appear ----
  row("os.system", bare(call("os", "system", "echo pwned")), K::ForbiddenGlobal,
      "byte 2 (GLOBAL)|function os.system|never runs code");
  row("posix.system", bare(call("posix", "system", "id")), K::ForbiddenGlobal, "posix.system");
  row("nt.system", bare(call("nt", "system", "dir")), K::ForbiddenGlobal, "nt.system");
  row("builtins.eval", bare(call("builtins", "eval", "1+1")), K::ForbiddenGlobal,
      "builtins.eval|evaluate code");
  row("__builtin__.eval (Python 2 spelling)", bare(call("__builtin__", "eval", "1")),
      K::ForbiddenGlobal, "builtins.eval");
  row("builtins.exec", bare(call("builtins", "exec", "import os")), K::ForbiddenGlobal,
      "builtins.exec");
  row("__builtin__.getattr", bare([](Pickle& p) {
        p.global("__builtin__", "getattr").global("torch", "Tensor").str("__reduce__").tuple2();
        p.reduce();
      }),
      K::ForbiddenGlobal, "builtins.getattr|any attribute");
  row("subprocess.Popen", bare(call("subprocess", "Popen", "sh")), K::ForbiddenGlobal,
      "class subprocess.Popen");
  row("os.system as a state_dict value",
      inZip(stateDict([&](Pickle& p) { call("os", "system", "rm -rf /")(p.str("evil")); })),
      K::ForbiddenGlobal, "os.system");
  row("os.system hidden in a whole model", inZip([&] {
        Pickle p;
        p.proto();
        module(
            p, [](Pickle& q) { goodTensorW(q); },
            [&](Pickle& q) { call("os", "system", "id")(q.str("hook")); });
        return p.stop();
      }()),
      K::ForbiddenGlobal, "os.system");
  row("STACK_GLOBAL os.system (protocol 4)", bare([](Pickle& p) {
        p.op(0x8c).op(2).raw({'o', 's'}).op(0x8c).op(6).raw({'s', 'y', 's', 't', 'e', 'm'});
        p.op(0x93).str("id").tuple1().reduce();
      }),
      K::ForbiddenGlobal, "STACK_GLOBAL|os.system");
  row("torch.load inside a checkpoint", bare(call("torch", "load", "other.pt")), K::ForbiddenGlobal,
      "torch.load|loads or writes files");
  row("torch.jit.load", bare(call("torch.jit", "load", "x.pt")), K::ForbiddenGlobal,
      "torch.jit.load");
  row("webbrowser.open", bare(call("webbrowser", "open", "http://x")), K::ForbiddenGlobal,
      "webbrowser.open");
  row("operator.attrgetter", bare(call("operator", "attrgetter", "system")), K::ForbiddenGlobal,
      "operator.attrgetter");
  // Names that are harmless stubs in a whole model are refused in a state_dict or checkpoint.
  row("torch._utils._rebuild_tensor (v1) in a state_dict", inZip(stateDict([](Pickle& p) {
        p.str("v1").global("torch._utils", "_rebuild_tensor").mark();
        p.storage("1", 1).integer(0).ints({1}).ints({1}).tuple().reduce();
      })),
      K::ForbiddenGlobal, "state_dict refers to the Python function torch._utils._rebuild_tensor");
  // argparse.Namespace is read as the dict of its attributes (namespaceSettingsRead); only as
  // pickle writes one: Namespace() or Namespace.__new__, then one BUILD of a dict with str keys.
  auto withArgs = [](const std::function<void(Pickle&)>& args) {
    Pickle p;
    p.proto().emptyDict().mark().str("model").orderedDict().mark();
    goodTensorW(p).setitems();
    args(p.str("args"));
    return inZip(p.setitems().stop());
  };
  auto ns = [](Pickle& p) -> Pickle& {
    return p.global("argparse", "Namespace").emptyTuple().newobj();
  };
  row("argparse.ArgumentParser in a checkpoint dict", withArgs([](Pickle& p) {
        p.global("argparse", "ArgumentParser").emptyTuple().newobj().emptyDict().build();
      }),
      K::ForbiddenGlobal, "checkpoint refers to the Python class argparse.ArgumentParser");
  row("argparse.Namespace called with an argument",
      withArgs([](Pickle& p) { p.global("argparse", "Namespace").str("lr").tuple1().reduce(); }),
      K::BadPickle, "argparse.Namespace called with 1 argument(s); expected 0");
  row("argparse.Namespace with a list for its state",
      withArgs([&](Pickle& p) { ns(p).emptyList().build(); }), K::BadPickle,
      "sets the state of an argparse.Namespace to a list of 0 items|a dict of its attributes");
  row("argparse.Namespace with an attribute named by an int", withArgs([&](Pickle& p) {
        ns(p).emptyDict().mark().integer(1).real(0.1).setitems().build();
      }),
      K::BadPickle, "an argparse.Namespace attribute named by an int (1), expected a str");
  row("argparse.Namespace given a state twice", withArgs([&](Pickle& p) {
        ns(p).emptyDict().mark().str("lr").real(0.1).setitems().build();
        p.emptyDict().mark().str("lr").real(0.2).setitems().build();
      }),
      K::BadPickle, "sets the state of an argparse.Namespace a second time");
  row("argparse.Namespace given items",
      withArgs([&](Pickle& p) { ns(p).str("lr").real(0.1).setitem(); }), K::BadPickle,
      "sets items of an argparse.Namespace of 0 entries; only a dict can take them");
  row("a class of the script inside an argparse.Namespace", withArgs([&](Pickle& p) {
        ns(p).emptyDict().mark().str("config");
        p.global("__main__", "Config").emptyTuple().newobj().setitems().build();
      }),
      K::ForbiddenGlobal, "checkpoint refers to the Python class __main__.Config");
  row("numpy scalar in a checkpoint dict", inZip(stateDict([](Pickle& p) {
        p.str("acc").global("numpy.core.multiarray", "scalar").global("numpy", "dtype");
        p.str("f8").tuple1().reduce().str("abc").tuple2().reduce();
      })),
      K::ForbiddenGlobal, "numpy.core.multiarray.scalar|(and 1 more: numpy.dtype)");
  row("the file is the result of a call",
      bare([](Pickle& p) { p.global("collections", "Counter").emptyTuple().reduce(); }),
      K::ForbiddenGlobal, "the result of calling collections.Counter|not a state_dict");

  // ---- calls of understood names with the wrong arguments ----
  auto rebuild = [](const std::function<void(Pickle&)>& args) {
    return oneTensor([=](Pickle& p) {
      p.global("torch._utils", "_rebuild_tensor_v2").mark();
      args(p);
      p.tuple().reduce();
    });
  };
  row("_rebuild_tensor_v2 with 3 arguments",
      rebuild([](Pickle& p) { p.storage("0", 4).integer(0).ints({4}); }), K::BadPickle,
      "byte|REDUCE|_rebuild_tensor_v2 called with 3 arguments");
  row("_rebuild_tensor_v2 on a string",
      rebuild([](Pickle& p) { p.str("0").integer(0).ints({4}).ints({1}).boolean(false).none(); }),
      K::BadPickle, "argument 1 (storage) is a str (\"0\")");
  row("_rebuild_tensor_v2 size a string", rebuild([](Pickle& p) {
        p.storage("0", 4).integer(0).str("4").ints({1}).boolean(false).none();
      }),
      K::BadPickle, "argument 3 (size) is a str");
  row("_rebuild_tensor_v2 size and stride differ", rebuild([](Pickle& p) {
        p.storage("0", 4).integer(0).ints({2, 2}).ints({1}).boolean(false).none();
      }),
      K::BadPickle, "size has 2 dimensions but stride 1");
  row("_rebuild_tensor_v2 stride a float", rebuild([](Pickle& p) {
        p.storage("0", 4).integer(0).ints({4}).mark().real(1.0).tuple().boolean(false).none();
      }),
      K::BadPickle, "stride entry 0 is a float");
  row("_rebuild_tensor_v2 hooks a list", rebuild([](Pickle& p) {
        p.storage("0", 4).integer(0).ints({4}).ints({1}).boolean(false).emptyList();
      }),
      K::BadPickle, "argument 6 (backward_hooks) is a list");
  row("_rebuild_tensor_v2 with 33 dimensions", rebuild([](Pickle& p) {
        p.storage("0", 4).integer(0).ints(std::vector<int64_t>(33, 1));
        p.ints(std::vector<int64_t>(33, 1)).boolean(false).none();
      }),
      K::BadShape, "33 dimensions (at most 32)");
  row("_rebuild_parameter of a string", oneTensor([](Pickle& p) {
        p.global("torch._utils", "_rebuild_parameter").str("x").boolean(true).orderedDict();
        p.tuple3().reduce();
      }),
      K::BadPickle, "_rebuild_parameter: argument 1 is a str");
  row("OrderedDict of a string",
      bare([](Pickle& p) { p.global("collections", "OrderedDict").str("abc").tuple1().reduce(); }),
      K::BadPickle, "collections.OrderedDict called with a str|key-value pairs");
  row("_rebuild_from_type_v2 calling OrderedDict", oneTensor([](Pickle& p) {
        p.global("torch._tensor", "_rebuild_from_type_v2").mark();
        p.global("collections", "OrderedDict").global("torch", "Tensor").emptyTuple().none();
        p.tuple().reduce();
      }),
      K::BadPickle, "only torch's tensor rebuild functions");
  row("torch.FloatStorage called directly",
      bare([](Pickle& p) { p.global("torch", "FloatStorage").integer(1000000).tuple1().reduce(); }),
      K::BadPickle, "calls torch.FloatStorage directly|persistent ids");
  row("REDUCE on a string", bare([](Pickle& p) { p.str("os.system").str("id").tuple1().reduce(); }),
      K::BadPickle, "calls a str|only named classes and functions");
  row("persistent id of a module in a zip", bare([](Pickle& p) {
        p.mark().str("module").global("__main__", "M").str("f.py").str("src").tuple().binpersid();
      }),
      K::BadPickle, "BINPERSID|not a storage");
  row("persistent id with a dict as storage type", bare([](Pickle& p) {
        p.mark().str("storage").global("builtins", "dict").str("0").str("cpu").integer(4);
        p.tuple().binpersid();
      }),
      K::BadPickle, "storage type the Python name builtins.dict is not a torch storage class");
  row("storage declared twice with other sizes",
      inZip(stateDict([](Pickle& p) { p.str("v").tensor("0", 9, 0, {1}, {1}); })), K::BadPickle,
      "storage \"0\" is declared twice|4 FloatStorage|9 FloatStorage");
  row("SETITEM on a list", bare([](Pickle& p) { p.emptyList().str("k").str("v").setitem(); }),
      K::BadPickle, "sets items of a list|only a dict");
  row("SETITEMS on a tensor",
      bare([](Pickle& p) { p.tensor("0", 4, 0, {4}, {1}).mark().str("k").str("v").setitems(); }),
      K::BadPickle, "sets items of a tensor");
  row("APPEND to a dict", bare([](Pickle& p) { p.emptyDict().none().append(); }), K::BadPickle,
      "appends to a dict|only a list");
  // Dict keys Python cannot hash: torch.load fails on them, and so does attnviz.
  row("dict key a list", inZip(stateDict([](Pickle& p) { p.emptyList().str("v"); })), K::BadPickle,
      "SETITEMS|a dict key that is a list of 0 items|cannot hash");
  row("dict key a tuple holding a dict",
      inZip(stateDict([](Pickle& p) { p.str("a").emptyDict().tuple2().str("v"); })), K::BadPickle,
      "a dict key that is a tuple of 2 items holding a dict");
  row("DICT with a list key", bare([](Pickle& p) { p.mark().emptyList().str("v").op('d'); }),
      K::BadPickle, "(DICT)|a dict key that is a list");
  row("OrderedDict of pairs with a list key", bare([](Pickle& p) {
        p.global("collections", "OrderedDict").mark().emptyList().str("v").tuple2().op('l');
        p.tuple1().reduce();
      }),
      K::BadPickle, "a dict key that is a list");
  // A storage key that is a path: torch.save names storages "0", "1", ...
  {
    const std::string up = std::string("..") + "/";
    row("storage key a path out of the archive",
        oneTensor([&](Pickle& p) { p.tensor(up + up + "etc/passwd", 4, 0, {4}, {1}); }),
        K::BadPickle, "BINPERSID|storage key|etc/passwd\" is a path|out of the archive");
    row("storage key a path inside the archive",
        oneTensor([](Pickle& p) { p.tensor("0/../1", 1, 0, {1}, {1}); }), K::BadPickle,
        "storage key \"0/|is a path");
  }
  row("BUILD on a string", bare([](Pickle& p) { p.str("x").emptyDict().build(); }), K::BadPickle,
      "sets the state of a str");

  // ---- malformed pickles ----
  row("unknown opcode 0xFF", bare([](Pickle& p) { p.op(0xFF); }), K::BadPickle,
      "unknown opcode 0xFF");
  row("EXT1 (extension registry)", bare([](Pickle& p) { p.op(0x82).op(1); }), K::BadPickle,
      "opcode EXT1 (0x82) is not supported");
  row("INST (protocol 0 call)", bare([](Pickle& p) {
        p.raw({'i', 'o', 's', '\n', 's', '\n'});
      }),
      K::BadPickle, "opcode INST");
  row("NEXT_BUFFER (out-of-band)", bare([](Pickle& p) { p.op(0x97); }), K::BadPickle,
      "NEXT_BUFFER");
  row("REDUCE on an empty stack", bare([](Pickle& p) { p.reduce(); }), K::BadPickle,
      "needs 1 value(s) on the stack, finds 0");
  row("pops below a MARK", bare([](Pickle& p) { p.none().mark().tuple2(); }), K::BadPickle,
      "above the MARK");
  row("TUPLE without a MARK", bare([](Pickle& p) { p.none().tuple(); }), K::BadPickle,
      "no MARK to pop to");
  row("memo entry never stored", bare([](Pickle& p) { p.get(7); }), K::BadPickle,
      "memo entry 7 was never stored");
  row("STOP on an empty stack", inZip(Pickle().proto().stop()), K::BadPickle,
      "STOP with an empty stack");
  row("no STOP", inZip(Pickle().proto().none()), K::Truncated,
      "data.pkl|ends at byte 3 before its STOP");
  row("string cut short", inZip(Pickle().proto().op('X').raw({100, 0, 0, 0, 'a'})), K::Truncated,
      "BINUNICODE|needs 100 more bytes");
  row("bytes after STOP", inZip(stateDict().op('N').op('.')), K::BadPickle,
      "2 bytes after the pickle's STOP");
  row("protocol 6", inZip(Pickle().proto(6).none().stop()), K::BadPickle, "pickle protocol 6");
  row("string not UTF-8", bare([](Pickle& p) {
        p.op('X').raw({2, 0, 0, 0, 0xC3, 0x28});
      }),
      K::BadPickle, "not valid UTF-8");
  row("LONG4 of negative length", bare([](Pickle& p) {
        p.op(0x8b).raw({0, 0, 0, 0x80});
      }),
      K::BadPickle, "LONG4 with a negative length");

  // ---- bombs: memory and time stay bounded ----
  {
    Pickle p;
    p.proto().none();
    for (uint32_t i = 0; i <= 1'000'000; ++i) {
      p.op('r');
      appendLE(p.b, i, 4);
    }
    row("memo bomb: 1000001 memo entries", inZip(p.stop()), K::TooLarge,
        "more than 1000000 memo entries");
  }
  {
    Pickle p;
    p.proto();
    p.b.insert(p.b.end(), 1'000'001, 'N');
    row("stack bomb: 1000001 values", inZip(p.stop()), K::TooLarge,
        "more than 1000000 values on the stack");
  }
  {
    Pickle p;
    p.proto();
    p.b.insert(p.b.end(), 10'001, '(');
    row("MARK bomb: 10001 open MARKs", inZip(p.stop()), K::TooLarge,
        "MARKs nested more than 10000 deep");
  }
  {
    Pickle p;
    p.proto();
    for (int i = 0; i < 2'100'000; ++i) p.emptyList().op('0');
    row("object bomb: 2100000 lists", inZip(p.none().stop()), K::TooLarge,
        "more than 2000000 objects");
  }
  {
    Pickle p;  // (((None,),),) a million deep: built and dropped without recursion
    p.proto().none();
    p.b.insert(p.b.end(), 1'000'000, 0x85);
    row("tuples nested 1000000 deep", inZip(p.stop()), K::BadCheckpoint,
        "holds a tuple of 1 items");
  }
  {
    Pickle p;  // d0["a"] = d1, d1["a"] = d2, ... 200000 deep, one memo slot reused
    p.proto().emptyDict().op('2');
    for (int i = 0; i < 200'000; ++i) {
      p.str("a").emptyDict().op('r');
      appendLE(p.b, 0, 4);
      p.setitem().op('0').op('j');
      appendLE(p.b, 0, 4);
    }
    row("dicts nested 200000 deep", inZip(p.op('0').stop()), K::BadCheckpoint,
        "with no tensors in it or in the dicts inside it");
  }
  row("dict that contains itself",
      bare([](Pickle& p) { p.emptyDict().put(0).str("me").get(0).setitem(); }), K::BadCheckpoint,
      "a dict of 1 entries (\"me\")");
  {
    Bytes b = Pickle().proto().op(0x8b).raw({0xFF, 0xFF, 0xFF, 0x7F}).b;  // LONG4, 2^31-1 bytes
    row("huge LONG4 (2^31-1 bytes)", inZip(Pickle().raw(b)), K::TooLarge,
        "an integer of 2147483647 bytes|the limit is 64");
  }
  row("LONG1 of 65 bytes", bare([](Pickle& p) { p.op(0x8a).op(65).raw(Bytes(65, 1)); }),
      K::TooLarge, "an integer of 65 bytes");
  row("BINUNICODE8 of 2^63 bytes", bare([](Pickle& p) {
        p.op(0x8d).raw({0, 0, 0, 0, 0, 0, 0, 0x80});
      }),
      K::TooLarge, "a string of 9223372036854775808 bytes");
  row("BINBYTES of 4 GiB", bare([](Pickle& p) {
        p.op('B').raw({0xFF, 0xFF, 0xFF, 0xFF});
      }),
      K::TooLarge, "bytes of 4294967295 bytes");
  row("GLOBAL name without a newline", inZip(Pickle().proto().op('c').raw(Bytes(5000, 'a'))),
      K::BadPickle, "GLOBAL name longer than 4096 bytes");

  // ---- tensors against their storages ----
  row("tensor reaching past its storage",
      oneTensor([](Pickle& p) { p.tensor("0", 4, 0, {5}, {1}); }), K::BadOffsets,
      "tensor \"t\"|reaches element 4 of its storage \"0\" (4 elements of torch.FloatStorage)");
  row("offset past the end with a stride", oneTensor([](Pickle& p) {
        p.tensor("0", 4, 1, {2, 2}, {2, 1});
      }),
      K::BadOffsets, "offset 1|reaches element 4");
  row("empty tensor with an offset past the end",
      oneTensor([](Pickle& p) { p.tensor("0", 4, 9, {0}, {1}); }), K::BadOffsets,
      "is empty but its offset 9 lies past");
  row("negative storage offset", oneTensor([](Pickle& p) { p.tensor("0", 4, -1, {2}, {1}); }),
      K::BadOffsets, "negative storage offset -1");
  row("negative stride", oneTensor([](Pickle& p) { p.tensor("0", 4, 3, {4}, {-1}); }), K::BadShape,
      "stride [-1] has a negative entry");
  row("negative size", oneTensor([](Pickle& p) {
        p.tensor("0", 4, 0, {-2, 2}, {2, 1});
      }),
      K::BadShape, "size [-2, 2] has a negative dimension");
  row("stride overflowing 64 bits",
      oneTensor([](Pickle& p) { p.tensor("0", 4, 0, {5}, {int64_t(1) << 62}); }), K::SizeOverflow,
      "reach past 64 bits");
  row("size overflowing 64 bits", oneTensor([](Pickle& p) {
        p.tensor("0", 4, 0, {int64_t(1) << 32, int64_t(1) << 32, 4}, {0, 0, 0});
      }),
      K::SizeOverflow, "more elements than 64 bits");
  row("empty tensor of 2^40 x 2^40 x 0", oneTensor([](Pickle& p) {
        p.tensor("0", 4, 0, {int64_t(1) << 40, int64_t(1) << 40, 0}, {1, 1, 1});
      }),
      K::SizeOverflow, "[1099511627776, 1099511627776, 0] has more elements than 64 bits");
  row("broadcast of 2^40 elements over one", oneTensor([](Pickle& p) {
        p.tensor("0", 4, 0, {1 << 20, 1 << 20}, {0, 0});
      }),
      K::BadShape, "views 1099511627776 elements|broadcast larger than the limit");
  row("storage entry smaller than declared",
      oneTensor([](Pickle& p) { p.tensor("1", 2, 0, {2}, {1}); }), K::BadOffsets,
      "zip entry \"archive/data/1\" holds 4 bytes|declares 2 elements of torch.FloatStorage");
  row("storage entry missing", oneTensor([](Pickle& p) { p.tensor("5", 1, 0, {1}, {1}); }),
      K::BadArchive, "\"archive/data/5\" is missing|tensor \"t\"");
  row("storage of 2^61 elements",
      oneTensor([](Pickle& p) { p.tensor("0", int64_t(1) << 61, 0, {1}, {1}); }), K::TooLarge,
      "need more than 8.0 GiB");
  row("complex tensor",
      oneTensor([](Pickle& p) { p.tensor("0", 2, 0, {2}, {1}, "ComplexFloatStorage"); }),
      K::UnsupportedDtype, "tensor \"t\" is complex (complex64)");
  row("quantized tensor",
      oneTensor([](Pickle& p) { p.tensor("0", 16, 0, {16}, {1}, "QInt8Storage"); }),
      K::UnsupportedDtype, "quantized (qint8)");
  row("duplicate tensor name", inZip(stateDict([](Pickle& p) { goodTensorW(p); })), K::DuplicateKey,
      "tensor name \"w\" occurs twice");

  // ---- zip archives ----
  const Bytes good = inZip(stateDict());
  row("empty file", {}, K::FileTooShort, "empty");
  row("text file", {'h', 'e', 'l', 'l', 'o', '\n'}, K::BadCheckpoint,
      "not a PyTorch checkpoint|68 65 6c 6c 6f 0a");
  row("zip without data.pkl", zipped({{"archive/data/0", floatBytes({1})}}), K::BadArchive,
      "without a FOLDER/data.pkl|\"archive/data/0\"");
  row("zip with two data.pkl", zipped({{"a/data.pkl", stateDict().b}, {"b/data.pkl", {}}}),
      K::BadArchive, "2 data.pkl entries");
  row("data.pkl outside a folder", zipped({{"data.pkl", stateDict().b}}), K::BadArchive,
      "without a FOLDER/data.pkl");
  row("TorchScript archive",
      zipped({{"archive/data.pkl", stateDict().b}, {"archive/code/__torch__.py", {'x'}}}),
      K::BadCheckpoint, "TorchScript|never runs TorchScript code");
  row("zip cut in half", Bytes(good.begin(), good.begin() + good.size() / 2), K::BadArchive,
      "not a readable zip archive");
  row("zip without its last 10 bytes", Bytes(good.begin(), good.end() - 10), K::BadArchive,
      "not a readable zip archive");
  {
    Bytes z = good;  // one byte of storage 0 changed: the CRC no longer matches
    z[header(z, "archive/data/0", false) + 30 + 14] ^= 0x01;
    row("CRC mismatch", z, K::BadArchive, "zip entry \"archive/data/0\"|CRC");
  }
  {
    // Storage 0's entry claims its data runs on over storage 1's whole entry (a 4000-byte
    // storage): the two overlap, as in overlapping-entry zip bombs.
    Bytes z = inZip(stateDict(), {floatBytes({1, 2, 3, 4}), Bytes(4000, 7)});
    const size_t a = header(z, "archive/data/0", false), b = header(z, "archive/data/1", false);
    const uint32_t span = static_cast<uint32_t>(b + 30 + 14 + 4000 - (a + 30 + 14));
    patchSizes(z, "archive/data/0", span, span);
    row("zip entries overlapping", z, K::BadArchive, "entries overlap");
  }
  {
    Pickle p;
    p.proto().orderedDict().mark().str("w").tensor("0", 262144, 0, {262144}, {1});
    Bytes z = zipped(
        {{"archive/data.pkl", p.setitems().stop().b}, {"archive/data/0", Bytes(1 << 20, 0), true}});
    patch(z, "archive/data/0", 22, 24, 0xFFFFFFF0u, 4);  // claims ~4 GiB from ~1 KiB
    row("zip bomb (deflate claiming 4 GiB)", z, K::BadArchive,
        "zip entry \"archive/data/0\" claims 4.0 GiB|zip bomb");
  }
  {
    Bytes z = good;
    patch(z, "archive/data/0", 8, 10, 14, 2);  // LZMA
    row("compression method 14", z, K::BadArchive, "compression method 14");
  }
  {
    Bytes z = good;
    patch(z, "archive/data.pkl", 6, 8, get(z, header(z, "archive/data.pkl", false) + 6, 2) | 1, 2);
    row("encrypted entry", z, K::BadArchive, "\"archive/data.pkl\" is encrypted");
  }
  {
    Bytes z = good;
    patchSizes(z, "archive/data.pkl", 0x7FFFFFFF, 0x7FFFFFFF);
    row("entry size past the archive", z, K::BadArchive, "not a readable zip archive");
  }
  row(
      "version entry garbage",
      [&] {
        auto e = checkpointEntries(stateDict().b, goodStorages());
        e.back().data = {'x', '\n'};
        return zipped(e);
      }(),
      K::BadArchive, "\"archive/version\" is \"x\"");
  row(
      "format version newer than PyTorch's",
      [&] {
        auto e = checkpointEntries(stateDict().b, goodStorages());
        e.back().data = {'9', '9', '\n'};
        return zipped(e);
      }(),
      K::BadArchive, "\"archive/version\" says format version 99|newer than any PyTorch writes");
  row(
      "byteorder big",
      [&] {
        auto e = checkpointEntries(stateDict().b, goodStorages());
        e.push_back({"archive/byteorder", {'b', 'i', 'g'}});
        return zipped(e);
      }(),
      K::BadArchive, "big-endian");
  row(
      "byteorder entry of 1 MiB",
      [&] {
        auto e = checkpointEntries(stateDict().b, goodStorages());
        e.push_back({"archive/byteorder", Bytes(1 << 20, 'l')});
        return zipped(e);
      }(),
      K::BadArchive, "\"archive/byteorder\" is 1048576 bytes");

  // ---- legacy files that lie ----
  const Bytes f4 = floatBytes({1, 2, 3, 4});
  row("legacy count differs from the pickle", legacyOne({"7"}, {{5, f4}}), K::BadOffsets,
      "storage \"7\"|says 5 elements; the pickle declares 4");
  row("legacy storage past the end", legacyOne({"7"}, {{uint64_t(1) << 61, f4}}, int64_t(1) << 61),
      K::Truncated, "storage \"7\" of 2305843009213693952 elements|runs past the end");
  row("legacy key naming no storage", legacyOne({"7", "8"}, {{4, f4}}), K::BadCheckpoint,
      "names \"8\", which no tensor in the pickle uses");
  row("legacy storage listed twice", legacyOne({"7", "7"}, {{4, f4}, {4, f4}}), K::BadCheckpoint,
      "storage \"7\" is listed twice");
  row("legacy storage without data", legacyOne({}, {}), K::BadCheckpoint,
      "storage \"7\" is used in the pickle but has no data");
  {
    Bytes b = legacyOne({"7"}, {{4, f4}});
    b.push_back(0);
    row("legacy trailing bytes", b, K::TrailingBytes, "1 bytes after the last storage");
  }
  row("legacy big-endian", legacyOne({"7"}, {{4, f4}}, 4, false), K::BadArchive, "big-endian");
  {
    const Bytes b = legacyOne({"7"}, {{4, f4}});
    row("legacy file cut at byte 60", Bytes(b.begin(), b.begin() + 60), K::Truncated,
        "legacy system info pickle|ends at byte");
  }
  {
    Pickle obj;
    obj.proto().orderedDict().mark().str("w").global("torch._utils", "_rebuild_tensor_v2").mark();
    obj.mark().str("storage").global("torch", "FloatStorage").str("7").str("cpu").integer(4);
    obj.str("8").integer(2).integer(9).tuple3().tuple().binpersid();
    obj.integer(0).ints({2}).ints({1}).boolean(false).orderedDict().tuple().reduce();
    obj.setitems().stop();
    row("legacy view outside its storage", legacyBytes(obj.b, {"7"}, {{4, f4}}), K::BadPickle,
        "storage view \"8\" of elements [2, 2 + 9) lies outside storage \"7\" of 4 elements");
  }
  {
    Bytes b = legacyOne({"7"}, {{4, f4}});
    const size_t at = 15;  // PROTO 2, LONG1 10 bytes, STOP = 15 bytes; then PROTO 2, BININT2
    QVERIFY(b[at] == 0x80 && b[at + 2] == 'M');
    b[at + 3] = 0xE8;  // 1001 → 1000
    row("legacy protocol version 1000", b, K::BadCheckpoint,
        "legacy protocol version is an int (1000)");
  }

  // ---- whole models that are not ----
  {
    Pickle p;
    p.proto();
    module(
        p, [](Pickle& q) { goodTensorW(q); },
        [](Pickle& q) { q.str("sub").global("functools", "partial").str("x").tuple1().reduce(); });
    row("submodule made by a call", inZip(p.stop()), K::BadCheckpoint,
        "submodule \"sub\" is the result of calling functools.partial|not a torch.nn.Module");
  }
  {
    Pickle p;
    p.proto().global("__main__", "M").emptyTuple().newobj().put(0);
    p.emptyDict().mark().str("_parameters").orderedDict().mark();
    goodTensorW(p).setitems().str("_modules").orderedDict().mark().str("again").get(0);
    p.setitems().setitems().build();
    row("module containing itself", inZip(p.stop()), K::BadCheckpoint,
        "module \"again\" contains itself");
  }
  {
    // 64 levels, each module holding the next twice: 2^64 paths to walk.
    Pickle p;
    p.proto();
    module(p, {}, {});
    p.put(63).op('0');
    for (int i = 62; i >= 0; --i) {
      module(p,
             i == 0 ? std::function<void(Pickle&)>([](Pickle& q) { goodTensorW(q); })
                    : std::function<void(Pickle&)>(),
             [&](Pickle& q) { q.str("a").get(static_cast<uint8_t>(i + 1)).str("b").get(i + 1); });
      p.put(static_cast<uint8_t>(i));
      if (i) p.op('0');
    }
    row("module graph with 2^63 paths", inZip(p.stop()), K::TooLarge,
        "more than 1000000 module visits");
  }
  {
    Pickle p;
    p.proto();
    chain(p, 200);
    row("modules nested 200 deep", inZip(p.stop()), K::TooLarge, "nested more than 128 deep");
  }
  {
    Pickle p;
    p.proto();
    module(p, [](Pickle& q) { q.str("weight").str("not a tensor"); }, {});
    row("parameter that is a string", inZip(p.stop()), K::BadCheckpoint,
        "module (top): _parameters[\"weight\"] is a str");
  }
  {
    Pickle p;  // in a whole model the old rebuild function is a stub: its result is no tensor
    p.proto();
    module(p,
           [](Pickle& q) {
             q.str("w").global("torch._utils", "_rebuild_tensor").mark();
             q.storage("0", 4).integer(0).ints({4}).ints({1}).tuple().reduce();
           },
           {});
    row("whole model parameter from _rebuild_tensor", inZip(p.stop()), K::BadCheckpoint,
        "_parameters[\"w\"] is the result of calling torch._utils._rebuild_tensor, not a tensor");
  }
  {
    Pickle p;
    p.proto().global("__main__", "M").emptyTuple().newobj().emptyDict().mark();
    p.str("_parameters").emptyList().str("_modules").orderedDict().setitems().build();
    row("_parameters a list", inZip(p.stop()), K::BadCheckpoint,
        "_parameters is a list of 0 items, expected an OrderedDict");
  }
  {
    Pickle p;
    p.proto();
    module(p, {}, {});
    row("whole model without tensors", inZip(p.stop()), K::BadCheckpoint,
        "__main__.M has no parameters or buffers");
  }

  // ---- top levels that hold no tensors ----
  row("top level a list", bare([](Pickle& p) { p.emptyList(); }), K::BadCheckpoint,
      "holds a list of 0 items, not a state_dict");
  row("top level an int", bare([](Pickle& p) { p.integer(5); }), K::BadCheckpoint,
      "holds an int (5)");
  row("dict without tensors", bare([](Pickle& p) {
        p.emptyDict().mark().str("epoch").integer(3).str("lr").real(0.1).setitems();
      }),
      K::BadCheckpoint, "a dict of 2 entries (\"epoch\", \"lr\") with no tensors");
}

QTEST_GUILESS_MAIN(TestHostileCheckpoint)
#include "test_hostile_checkpoint.moc"

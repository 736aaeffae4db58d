// PyTorch checkpoints (core/io/torch_checkpoint.h) against what PyTorch itself saved: every case
// that tools/make_checkpoints.py writes at test time (state_dict zip and legacy, checkpoint dicts,
// whole pickled models, all dtypes, views and shared storages, pickle protocols 2/4/5) is read back
// and compared name by name, dtype by dtype, value by value with the values PyTorch wrote beside
// it. Hand-built pickles cover what the layouts mean, independently of PyTorch.
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"
#include "checkpoint_files.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "test_support.h"

using namespace attnviz;
using namespace attnviz::ckpt_test;
using json = nlohmann::json;

namespace {

// $ATTNVIZ_CHECKPOINT_DIR: written by tools/make_checkpoints.py (the CTest fixture).
std::string checkpointDir() {
  const char* d = std::getenv("ATTNVIZ_CHECKPOINT_DIR");
  return d && *d ? d : "";
}

using attnviz::test::caught;

bool sameBits(const float* a, const float* b, size_t n, size_t* bad) {
  for (size_t i = 0; i < n; ++i) {
    const bool both_nan = std::isnan(a[i]) && std::isnan(b[i]);
    if (!both_nan && std::memcmp(a + i, b + i, 4) != 0) {
      *bad = i;
      return false;
    }
  }
  return true;
}

// Checks one checkpoint against its .expected.safetensors: layout, key path, class, every name in
// order, dtype, shape, strides, storage offset, which tensors share a storage, every value.
void verifyAgainstExpected(const TorchCheckpoint& ck, const SafetensorsFile& exp) {
  const json e = json::parse(exp.metadata().at("expected"));
  QCOMPARE(QString(checkpointLayoutName(ck.layout())), QString::fromStdString(e["layout"]));
  QCOMPARE(json(ck.keyPath()), e["key_path"]);
  QCOMPARE(ck.modelClass(), e["model_class"].get<std::string>());
  const auto& rows = e["tensors"];
  QCOMPARE(ck.tensors().size(), rows.size());
  std::map<int, std::string> storage_of_group;  // PyTorch's storage → the key in the file
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    const std::string name = row[0];
    const TensorInfo& t = ck.tensors()[i];
    QCOMPARE(t.name, name);  // state_dict order
    QCOMPARE(ck.find(name), &t);
    QCOMPARE(QString(dtypeName(t.dtype)), QString::fromStdString(row[1]));
    QCOMPARE(t.shape, row[2].get<Shape>());
    const TensorLayout& l = ck.layout(t);
    QCOMPARE(l.strides, row[3].get<std::vector<int64_t>>());
    QCOMPARE(l.storage_offset, row[4].get<int64_t>());
    const int group = row[5];
    auto [it, fresh] = storage_of_group.emplace(group, l.storage);
    QVERIFY2(it->second == l.storage, name.c_str());  // shared exactly where PyTorch shared
    if (fresh)
      for (const auto& [g, key] : storage_of_group)
        QVERIFY2(g == group || key != l.storage, name.c_str());
    QCOMPARE(t.begin, static_cast<uint64_t>(l.storage_offset) * dtypeSize(t.dtype));
    // Every value, in its own dtype, against PyTorch's bytes.
    const std::vector<uint8_t> raw = ck.contiguousBytes(t);
    const TensorInfo* er = exp.find(name);
    QVERIFY2(er, name.c_str());
    QCOMPARE(raw.size(), static_cast<size_t>(er->end - er->begin));
    ByteTensor want = exp.toBytes(name);
    QVERIFY2(raw == want.data, ("values differ: " + name).c_str());
    // Float tensors: toFloat against PyTorch's own .float().
    if (isFloatDType(t.dtype)) {
      const Tensor got = ck.toFloat(t);
      const Tensor ref = exp.toFloat(name + "::float");
      QCOMPARE(got.shape, t.shape);
      QCOMPARE(got.data.size(), ref.data.size());
      size_t bad = 0;
      QVERIFY2(sameBits(got.ptr(), ref.ptr(), got.data.size(), &bad),
               (name + ": float value " + std::to_string(bad) + " differs").c_str());
    } else {
      auto err = caught([&] { ck.toFloat(t); });
      QVERIFY(err.has_value());
      QCOMPARE(err->kind(), ErrorKind::UnsupportedDtype);
      QVERIFY(QString(err->what()).contains(QString::fromStdString(name)));
      QVERIFY(QString(err->what()).contains(dtypeName(t.dtype)));
    }
  }
}

// A zip checkpoint made here from a pickle and its storages.
std::unique_ptr<TorchCheckpoint> fromZip(const QTemporaryDir& dir, const Bytes& pkl,
                                         const std::vector<Bytes>& storages) {
  const std::string tmp = dir.path().toStdString() + "/made.zip";
  return TorchCheckpoint::parse(zipBytes(checkpointEntries(pkl, storages), tmp), "made.pt");
}

}  // namespace

class TestCheckpoint : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;

 private slots:
  // ---- every case PyTorch wrote ----
  void matchesPyTorch_data() {
    QTest::addColumn<QString>("name");
    const std::string d = checkpointDir();
    if (d.empty()) {
      QTest::newRow("no checkpoints") << QString();
      return;
    }
    std::ifstream cases(d + "/cases.txt");
    std::string name;
    int n = 0;
    while (std::getline(cases, name))
      if (!name.empty()) {
        QTest::newRow(name.c_str()) << QString::fromStdString(name);
        ++n;
      }
    QVERIFY2(n >= 17, "tools/make_checkpoints.py wrote fewer cases than expected");
  }
  void matchesPyTorch() {
    QFETCH(QString, name);
    if (name.isEmpty())
      QSKIP("ATTNVIZ_CHECKPOINT_DIR is not set (python3-torch missing: no fixture)");
    const std::string base = checkpointDir() + "/" + name.toStdString();
    const SafetensorsFile exp = SafetensorsFile::open(base + ".expected.safetensors");
    const auto ck = TorchCheckpoint::open(base + ".pt");
    const bool legacy = name.contains("legacy");
    QCOMPARE(ck->formatName(),
             std::string(legacy ? "PyTorch checkpoint (legacy)" : "PyTorch checkpoint (zip)"));
    QCOMPARE(ck->path(), base + ".pt");
    // torch 1.13 names the zip folder after the file; later versions call it "archive".
    if (!legacy) QVERIFY(ck->archiveName() == name.toStdString() || ck->archiveName() == "archive");
    const int protocol = name.endsWith("protocol4") ? 4 : name.endsWith("protocol5") ? 5 : 2;
    QCOMPARE(ck->pickleProtocol(), protocol);
    verifyAgainstExpected(*ck, exp);
    if (QTest::currentTestFailed()) return;
    // The same bytes from memory.
    const auto mem = TorchCheckpoint::parse(readFile(base + ".pt"), "in-memory.pt");
    verifyAgainstExpected(*mem, exp);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(sniffTensorFile(base + ".pt"),
             legacy ? TensorFileFormat::TorchLegacy : TensorFileFormat::TorchZip);
    QVERIFY(looksLikeTorchCheckpoint(base + ".pt"));
    QCOMPARE(sniffTensorFile(base + ".expected.safetensors"), TensorFileFormat::Safetensors);
    QVERIFY(!looksLikeTorchCheckpoint(base + ".expected.safetensors"));
  }

  // What the notes and names say for the shapes PyTorch users save.
  void checkpointDictNotes() {
    const std::string d = checkpointDir();
    if (d.empty()) QSKIP("ATTNVIZ_CHECKPOINT_DIR is not set");
    auto ck = TorchCheckpoint::open(d + "/checkpoint_model.pt");
    QCOMPARE(ck->describeLayout(),
             std::string("state_dict under [\"model\"] of a checkpoint dict"));
    QCOMPARE(ck->notes().size(), size_t(1));
    QCOMPARE(ck->notes()[0],
             std::string("other entries of the checkpoint, not read: \"optimizer\", \"epoch\""));
    ck = TorchCheckpoint::open(d + "/checkpoint_nested.pt");
    QCOMPARE(ck->describeLayout(),
             std::string("state_dict under [\"state\"][\"net\"] of a checkpoint dict"));
    ck = TorchCheckpoint::open(d + "/whole_model.pt");
    QCOMPARE(ck->describeLayout(), std::string("whole model __main__.TinyModel"));
    QVERIFY(QString::fromStdString(ck->notes().at(0)).contains("torch.nn.modules.linear.Linear"));
    // Tied weights: two names, one storage; a non-persistent buffer and a bias=False are absent.
    const TensorInfo* emb = ck->find("encoder.src_emb.weight");
    const TensorInfo* proj = ck->find("projection.weight");
    QVERIFY(emb && proj);
    QCOMPARE(ck->layout(*emb).storage, ck->layout(*proj).storage);
    QVERIFY(ck->layout(*emb).parameter);
    QVERIFY(!ck->layout(*ck->find("encoder.position_ids")).parameter);
    QVERIFY(!ck->find("encoder.layers.0.scratch"));
    QVERIFY(!ck->find("encoder.layers.0.enc_self_attn.W_K.bias"));
    QVERIFY(ck->find("encoder.layers.1.enc_self_attn.W_Q.weight"));
    QVERIFY(ck->find("bn.num_batches_tracked"));
  }

  // ---- hand-built pickles: the meaning of offsets and strides, independent of PyTorch ----
  void viewsByHand() {
    QVERIFY(dir_.isValid());
    // One storage [0, 1, ..., 11]; tensors over it:
    //   "m"  [3, 4] stride (4, 1)            0 1 2 3 / 4 5 6 7 / 8 9 10 11
    //   "t"  [4, 3] stride (1, 4)            the transpose: 0 4 8 / 1 5 9 / 2 6 10 / 3 7 11
    //   "s"  [2, 2] offset 5 stride (4, 2)   5 7 / 9 11
    //   "b"  [2, 3] offset 2 stride (0, 1)   2 3 4 / 2 3 4
    //   "e"  [0, 5] offset 12                empty, offset at the end
    //   "x"  []     offset 11                a scalar: 11
    std::vector<float> v(12);
    for (int i = 0; i < 12; ++i) v[i] = static_cast<float>(i);
    Pickle p;
    p.proto().orderedDict().mark();
    p.str("m").tensor("0", 12, 0, {3, 4}, {4, 1});
    p.str("t").tensor("0", 12, 0, {4, 3}, {1, 4});
    p.str("s").tensor("0", 12, 5, {2, 2}, {4, 2});
    p.str("b").tensor("0", 12, 2, {2, 3}, {0, 1});
    p.str("e").tensor("0", 12, 12, {0, 5}, {5, 1});
    p.str("x").tensor("0", 12, 11, {}, {});
    p.setitems().stop();
    const auto ck = fromZip(dir_, p.b, {floatBytes(v)});
    QCOMPARE(ck->layout(), CheckpointLayout::StateDict);
    const std::map<std::string, std::vector<float>> want = {
        {"m", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
        {"t", {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}},
        {"s", {5, 7, 9, 11}},
        {"b", {2, 3, 4, 2, 3, 4}},
        {"e", {}},
        {"x", {11}}};
    for (const auto& [name, values] : want) {
      const Tensor t = ck->toFloat(name);
      QVERIFY2(t.data == values, name.c_str());
    }
    QVERIFY(ck->layout(*ck->find("m")).contiguous);
    QVERIFY(!ck->layout(*ck->find("t")).contiguous);
    QVERIFY(!ck->layout(*ck->find("b")).contiguous);
    QCOMPARE(ck->find("s")->begin, uint64_t(20));
    QCOMPARE(ck->find("s")->end, uint64_t(48));  // last element 11, exclusive
    QCOMPARE(ck->find("e")->begin, ck->find("e")->end);
  }

  // F16 and BF16 bit patterns by hand: 1.0 = 0x3C00 (F16), 0x3F80 (BF16); -2 = 0xC000 / 0xC000.
  void halfPrecisionByHand() {
    Pickle p;
    p.proto().orderedDict().mark();
    p.str("h").tensor("0", 3, 0, {3}, {1}, "HalfStorage");
    p.str("bf").tensor("1", 3, 0, {3}, {1}, "BFloat16Storage");
    p.str("d").tensor("2", 2, 1, {1}, {1}, "DoubleStorage");
    p.setitems().stop();
    Bytes h = {0x00, 0x3C, 0x00, 0xC0, 0x00, 0x7C};   // 1, -2, +inf
    Bytes bf = {0x80, 0x3F, 0x00, 0xC0, 0x49, 0x40};  // 1, -2, 3.140625
    Bytes d(16);
    const double two[2] = {0.0, 0.1};
    std::memcpy(d.data(), two, 16);
    const auto ck = fromZip(dir_, p.b, {h, bf, d});
    QCOMPARE(ck->toFloat("h").data, (std::vector<float>{1.0f, -2.0f, INFINITY}));
    QCOMPARE(ck->toFloat("bf").data, (std::vector<float>{1.0f, -2.0f, 3.140625f}));
    QCOMPARE(ck->toFloat("d").data, (std::vector<float>{0.1f}));  // rounded to nearest float
    QCOMPARE(ck->find("d")->dtype, DType::F64);
  }

  // The dict with the most tensors wins; optimizer state (keyed by numbers) is never taken.
  void picksTheLargestTensorDict() {
    Pickle p;
    p.proto().emptyDict().mark();
    p.str("ema").emptyDict().mark().str("w").tensor("0", 1, 0, {1}, {1}).setitems();
    p.str("model").emptyDict().mark().str("a").tensor("1", 1, 0, {1}, {1});
    p.str("b").tensor("2", 1, 0, {1}, {1}).setitems();
    p.str("optimizer").emptyDict().mark().str("state").emptyDict().mark().integer(0);
    p.emptyDict().mark().str("x").tensor("3", 1, 0, {1}, {1}).str("y").tensor("4", 1, 0, {1}, {1});
    p.str("z").tensor("5", 1, 0, {1}, {1}).setitems().setitems().setitems();
    p.str("epoch").integer(3).setitems().stop();
    std::vector<Bytes> storages;
    for (int i = 0; i < 6; ++i) storages.push_back(floatBytes({static_cast<float>(i)}));
    const auto ck = fromZip(dir_, p.b, storages);
    QCOMPARE(ck->layout(), CheckpointLayout::CheckpointDict);
    QCOMPARE(ck->keyPath(), std::vector<std::string>{"model"});
    QCOMPARE(ck->tensors().size(), size_t(2));
    QCOMPARE(ck->toFloat("b").data, std::vector<float>{2.0f});
  }

  // The legacy container by hand: the same state_dict gives the same values.
  void legacyByHand() {
    Pickle obj;
    obj.proto().orderedDict().mark().str("w");
    obj.global("torch._utils", "_rebuild_tensor_v2").mark();
    legacyStorage(obj, "140211", 4).integer(1).ints({3}).ints({1}).boolean(false).orderedDict();
    obj.tuple().reduce().setitems().stop();
    const Bytes file = legacyBytes(obj.b, {"140211"}, {{4, floatBytes({9, 8, 7, 6})}});
    QCOMPARE(sniffTensorBytes(file.data(), file.size()), TensorFileFormat::TorchLegacy);
    const auto ck = TorchCheckpoint::parse(file, "legacy.pt");
    QCOMPARE(ck->formatName(), std::string("PyTorch checkpoint (legacy)"));
    QCOMPARE(ck->toFloat("w").data, (std::vector<float>{8, 7, 6}));

    // Pickles longer than the first MiB read for them: read again, further.
    Pickle big;
    big.proto().orderedDict().mark().str("note").str(std::string(3 << 20, 'x')).str("w");
    big.global("torch._utils", "_rebuild_tensor_v2").mark();
    legacyStorage(big, "1", 2).integer(0).ints({2}).ints({1}).boolean(false).orderedDict();
    big.tuple().reduce().setitems().stop();
    const Bytes long_file = legacyBytes(big.b, {"1"}, {{2, floatBytes({5, 4})}});
    const std::string path = dir_.path().toStdString() + "/long_legacy.pt";
    writeFile(path, long_file);
    const auto lck = TorchCheckpoint::open(path);
    QCOMPARE(lck->toFloat("w").data, (std::vector<float>{5, 4}));
    QCOMPARE(lck->notes().at(0), std::string("entries that are not tensors, not read: \"note\""));
    CheckpointLimits lim;
    lim.max_pickle_bytes = 2 << 20;
    auto err = caught([&] { TorchCheckpoint::open(path, lim); });
    QVERIFY(err && err->kind() == ErrorKind::TooLarge);
    QVERIFY2(QString(err->what()).contains("legacy pickles are longer than 2.0 MiB"), err->what());
  }

  // A checkpoint re-zipped with deflate, and the entries PyTorch 2.x adds, load the same.
  void deflatedAndNewerArchives() {
    const Bytes pkl =
        stateDictPickle({{"a.weight", {2, 2}, {1, -2, 3.5f, 4}}, {"a.bias", {1}, {7}}});
    auto entries = checkpointEntries(pkl, {floatBytes({1, -2, 3.5f, 4}), floatBytes({7})});
    for (auto& e : entries) e.deflate = true;
    const std::string tmp = dir_.path().toStdString() + "/deflated.zip";
    auto ck = TorchCheckpoint::parse(zipBytes(entries, tmp), "deflated.pt");
    QCOMPARE(ck->toFloat("a.weight").data, (std::vector<float>{1, -2, 3.5f, 4}));
    QCOMPARE(ck->toFloat("a.bias").data, std::vector<float>{7});

    entries = checkpointEntries(pkl, {floatBytes({1, -2, 3.5f, 4}), floatBytes({7})});
    entries.pop_back();  // no "version": PyTorch 2.x keeps it under .data/
    entries.push_back({"archive/byteorder", {'l', 'i', 't', 't', 'l', 'e'}});
    entries.push_back({"archive/.data/version", {'3', '\n'}});
    entries.push_back({"archive/.data/serialization_id", Bytes(40, '1')});
    entries.push_back({"archive/.format_version", {'1'}});
    entries.push_back({"archive/.storage_alignment", {'6', '4'}});
    ck = TorchCheckpoint::parse(zipBytes(entries, tmp), "torch2.pt");
    QCOMPARE(ck->archiveName(), std::string("archive"));
    QCOMPARE(ck->toFloat("a.weight").shape, (Shape{2, 2}));
    QCOMPARE(ck->toFloat("a.bias").data, std::vector<float>{7});
  }

  void sniffing() {
    const std::string d = dir_.path().toStdString();
    writeFile(d + "/garbage.bin", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'});
    QCOMPARE(sniffTensorFile(d + "/garbage.bin"), TensorFileFormat::Unknown);
    QCOMPARE(sniffTensorFile(d + "/no-such-file"), TensorFileFormat::Unknown);
    QCOMPARE(sniffTensorFile(d), TensorFileFormat::Unknown);
    const std::string st = std::string(ATTNVIZ_TEST_DATA) + "/nlp_tiny.safetensors";
    QCOMPARE(sniffTensorFile(st), TensorFileFormat::Safetensors);
    auto err = caught([&] { TorchCheckpoint::open(st); });
    QVERIFY(err && err->kind() == ErrorKind::BadCheckpoint);
    QVERIFY(QString(err->what()).contains("safetensors file"));
    err = caught([&] { TorchCheckpoint::open(d + "/garbage.bin"); });
    QVERIFY(err && err->kind() == ErrorKind::BadCheckpoint);
    QVERIFY(QString(err->what()).contains("starts with bytes 68 65 6c 6c 6f 20 77 6f"));
    Bytes tar(512, 0);
    std::memcpy(tar.data() + 257, "ustar", 5);
    QCOMPARE(sniffTensorBytes(tar.data(), tar.size()), TensorFileFormat::TorchTar);
  }
};

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"

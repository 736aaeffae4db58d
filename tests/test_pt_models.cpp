// The tutorials' models as their users save them: every model the tutorials build, saved the way
// their training loops save it (torch.save of the state_dict, a checkpoint dict, DataParallel's
// "module." prefix, the legacy format, a whole pickled model), opens with only what the tensors
// cannot tell — the number of heads and the special ids — and computes what PyTorch computed (the
// cases' references in tests/data), also once converted to safetensors and with its answers
// remembered beside it (instead of given). The checkpoints are written by
// tools/make_checkpoint_models.py in the test command.
#include <QtTest>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "arch/infer.h"
#include "arch/weights.h"
#include "base/error.h"
#include "compute/cpu_backend.h"
#include "model/decoding.h"
#include "parity_support.h"

using namespace attnviz;

namespace {

std::string checkpointDir() {
  return test::fixtureDir("ATTNVIZ_PT_MODELS_DIR");
}

nlohmann::json cases() {
  return test::fixtureCases(checkpointDir());
}

}  // namespace

class TestPtModels : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    if (checkpointDir().empty())
      QSKIP(
          "ATTNVIZ_PT_MODELS_DIR is not set: run through CTest, whose fixture writes the "
          "checkpoints "
          "with PyTorch (tools/make_checkpoint_models.py)");
    QVERIFY2(cases().size() >= 11, "the checkpoint cases were not written");
  }

  void opensAndMatches_data() {
    QTest::addColumn<QString>("entry");
    for (const auto& c : cases())
      QTest::newRow(
          (c["case"].get<std::string>() + " (" + c["how"].get<std::string>() + ")").c_str())
          << QString::fromStdString(c.dump());
  }

  void opensAndMatches() {
    QFETCH(QString, entry);
    const nlohmann::json c = nlohmann::json::parse(entry.toStdString());
    const std::string name = c["case"], pt = checkpointDir() + "/" + c["file"].get<std::string>();
    LoadOptions o;
    const nlohmann::json& s = c["supplied"];
    o.supplied.n_heads = s["n_heads"].get<int>();
    if (s.contains("pad_id")) o.supplied.pad_id = s["pad_id"].get<int>();
    if (s.contains("bos_id")) o.supplied.bos_id = s["bos_id"].get<int>();
    if (s.contains("eos_id")) o.supplied.eos_id = s["eos_id"].get<int>();
    // Without the heads the loader says what it read and asks — except for the step-by-step
    // encoder, whose one module per head tells the count.
    LoadOptions none;
    const auto ask = test::caught([&] { loadModel(pt, none); });
    if (name == "encoder001") {
      QVERIFY2(!ask, ask ? ask->what() : "");
    } else {
      QVERIFY(ask);
      QCOMPARE(ask->kind(), ErrorKind::MissingInfo);
    }
    std::shared_ptr<const LoadedModel> loaded;
    const auto err = test::caught([&] { loaded = loadModel(pt, o); });
    QVERIFY2(!err, err ? err->what() : "");
    const std::string base = std::string(ATTNVIZ_TEST_DATA) + "/" + name;
    const SafetensorsFile ref = SafetensorsFile::open(base + ".ref.safetensors");
    const nlohmann::json inputs = nlohmann::json::parse(ref.metadata().at("inputs"));
    Model m(loaded, makeCpuBackend());
    const std::string diff =
        test::compareWithReference(m.forward(test::referenceInputs(inputs)), ref);
    QVERIFY2(diff.empty(), diff.c_str());
    // Greedy decoding as the tutorial's own decoder.
    if (inputs.contains("greedy")) {
      const auto& g = inputs["greedy"];
      const std::vector<int> src =
          g.contains("src_ids") ? g["src_ids"].get<std::vector<int>>() : std::vector<int>();
      const std::vector<int> prompt =
          g.contains("tgt_ids") ? g["tgt_ids"].get<std::vector<int>>() : std::vector<int>();
      QCOMPARE(greedyDecode(m, src, g["max_len"].get<int>(), prompt),
               g["out_ids"].get<std::vector<int>>());
    }
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    // Converted to safetensors, it opens with nothing supplied and computes the same.
    const std::string converted = tmp.filePath("converted.safetensors").toStdString();
    const auto conv_err = test::caught([&] { convertToSafetensors(pt, converted, o); });
    QVERIFY2(!conv_err, conv_err ? conv_err->what() : "");
    std::shared_ptr<const LoadedModel> reopened;
    const auto reopen_err = test::caught([&] { reopened = loadModel(converted, none); });
    QVERIFY2(!reopen_err, reopen_err ? reopen_err->what() : "");
    QCOMPARE(reopened->config.family, loaded->config.family);
    QCOMPARE(reopened->config.model, loaded->config.model);
    const std::string conv_diff = test::compareWithReference(
        Model(reopened, makeCpuBackend()).forward(test::referenceInputs(inputs)), ref);
    QVERIFY2(conv_diff.empty(), conv_diff.c_str());
    // Writing over the model itself is refused, and the model is left as it was.
    QVERIFY(test::caught([&] { convertToSafetensors(converted, converted, none); }));
    QVERIFY(loadModel(converted, none));
    // Answers remembered beside a copy of the file make the next opening need none; answers
    // given later are added to them.
    const std::string copy =
        tmp.filePath(QString::fromStdString(c["file"].get<std::string>())).toStdString();
    QVERIFY(QFile::copy(QString::fromStdString(pt), QString::fromStdString(copy)));
    UserSupplied heads_only;
    heads_only.n_heads = o.supplied.n_heads;
    rememberAnswers(copy, heads_only);
    UserSupplied ids = o.supplied;
    ids.n_heads.reset();
    rememberAnswers(copy, ids);
    const auto remembered_err = test::caught([&] { loadModel(copy, none); });
    QVERIFY2(!remembered_err, remembered_err ? remembered_err->what() : "");
  }
};

QTEST_GUILESS_MAIN(TestPtModels)
#include "test_pt_models.moc"

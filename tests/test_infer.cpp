// Opening a model without a config: the family read from the tensor names (under a prefix such as
// DataParallel's "module."), the sizes read from the shapes, only what the tensors cannot tell
// supplied (heads, special ids, vocabularies), and the same numbers as the model with its config.
// Also vocabulary files in their three formats, and the diagnosis when names and config disagree.
#include <QTemporaryDir>
#include <QtTest>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "arch/infer.h"
#include "arch/weights.h"
#include "base/error.h"
#include "compute/cpu_backend.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "test_support.h"
#include "text/vocab_files.h"

using namespace attnviz;

namespace {

std::string dataPath(const std::string& name) {
  return std::string(ATTNVIZ_TEST_DATA) + "/" + name + ".safetensors";
}

// The case's tensors as float32 under `prefix`, without the config.
void writeBare(const std::string& from, const std::string& to, const std::string& prefix) {
  writeSafetensors(to, floatTensors(SafetensorsFile::open(from), prefix), {});
}

void writeText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::optional<Error> caught(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

}  // namespace

class TestInfer : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  std::string tmp(const std::string& name) {
    return dir_.filePath(QString::fromStdString(name)).toStdString();
  }

 private slots:
  void bareFilesOpen_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("prefix");
    for (const char* c : test::referenceCases()) {
      QTest::newRow(c) << QString(c) << QString();
      QTest::newRow((std::string(c) + " module.").c_str()) << QString(c) << QString("module.");
    }
  }

  // Every tutorial's state_dict opens with only what the tensors cannot tell, and computes what
  // the model with its full config computes.
  void bareFilesOpen() {
    QFETCH(QString, name);
    QFETCH(QString, prefix);
    const std::string original = dataPath(name.toStdString());
    auto want = loadModel(original);
    const ModelConfig& wc = want->config;
    const std::string bare =
        tmp(name.toStdString() + (prefix.isEmpty() ? "" : "_prefixed") + ".safetensors");
    writeBare(original, bare, prefix.toStdString());

    LoadOptions o;
    // The vocabularies as the user keeps them: a text file and a JSON list.
    if (wc.hasEncoder()) {
      std::string text;
      for (const auto& t : wc.src_vocab) text += t + "\n";
      writeText(tmp("src.txt"), text);
      o.supplied.src_vocab = readVocabularyFile(tmp("src.txt"));
    }
    if (wc.hasDecoder()) {
      writeText(tmp("tgt.json"), nlohmann::json(wc.tgt_vocab).dump());
      o.supplied.tgt_vocab = readVocabularyFile(tmp("tgt.json"));
    }
    // What the tensors cannot tell.
    o.supplied.n_heads = wc.n_heads;
    o.supplied.pad_id = wc.hasEncoder() ? wc.src_pad_id : wc.tgt_pad_id;
    if (wc.bos_id >= 0) o.supplied.bos_id = wc.bos_id;
    if (wc.eos_id >= 0) o.supplied.eos_id = wc.eos_id;
    // Things a state_dict cannot show: activations, norm placement, fill, eps of the reference
    // files that differ from the tutorial's defaults go into a partial config below.
    std::shared_ptr<const LoadedModel> got;
    const auto err = caught([&] { got = loadModel(bare, o); });
    QVERIFY2(!err, err ? err->what() : "");
    const ModelConfig& gc = got->config;
    QCOMPARE(gc.family, wc.family);
    QCOMPARE(gc.model, wc.model);
    QCOMPARE(gc.d_model, wc.d_model);
    QCOMPARE(gc.d_ff, wc.d_ff);
    QCOMPARE(gc.d_k, wc.d_k);
    QCOMPARE(gc.d_v, wc.d_v);
    QCOMPARE(gc.n_encoder_layers, wc.n_encoder_layers);
    QCOMPARE(gc.n_decoder_layers, wc.n_decoder_layers);
    QCOMPARE(gc.positional, wc.positional);
    if (wc.positional == Positional::Learned) QCOMPARE(gc.max_len, wc.max_len);
    QCOMPARE(gc.q_bias, wc.q_bias);
    QCOMPARE(gc.ffn_bias, wc.ffn_bias);
    QCOMPARE(gc.n_classes, wc.n_classes);
    QCOMPARE(gc.n_segments, wc.n_segments);
    const bool prefixed = !prefix.isEmpty();
    bool noted = false;
    for (const auto& n : got->notes)
      noted = noted || n.find("\"module.\" stripped") != std::string::npos;
    QCOMPARE(noted, prefixed);
  }

  // With the tutorial's activation and norm the inferred model computes exactly what the
  // configured one does (here the PyTorch tutorial's reference, post-norm ReLU).
  void inferredModelComputesTheSame() {
    const std::string original = dataPath("torch_post");
    auto want = loadModel(original);
    const std::string bare = tmp("torch_post_bare.safetensors");
    writeBare(original, bare, "module.");
    LoadOptions o;
    o.supplied.n_heads = want->config.n_heads;
    o.supplied.src_vocab = want->config.src_vocab;
    o.supplied.tgt_vocab = want->config.tgt_vocab;
    auto got = loadModel(bare, o);  // pad/bos/eos read off the vocabulary's <pad>, <bos>, <eos>
    QCOMPARE(got->config.tgt_pad_id, want->config.tgt_pad_id);
    QCOMPARE(got->config.bos_id, want->config.bos_id);
    QCOMPARE(got->config.eos_id, want->config.eos_id);
    Model a(want, makeCpuBackend()), b(got, makeCpuBackend());
    const Inputs in{{{2, 4, 5, 7, 3}}, {}, {{2, 4, 5}}};
    Trace ta = a.forward(in), tb = b.forward(in);
    QCOMPARE(tb.logits.dense().data, ta.logits.dense().data);
  }

  // nn.Transformer's names are the same with norm_first=True and activation="gelu": the tutorial's
  // pre-norm GELU reference opens as post-norm ReLU (and computes something else) until --norm
  // pre and --activation gelu are given; then it computes exactly what the configured one does.
  // The answers are remembered like the others, and a wrong one is refused with its name.
  void preNormAndActivationAreAnswers() {
    const std::string original = dataPath("torch_pre");
    auto want = loadModel(original);
    QCOMPARE(want->config.norm, NormPlacement::Pre);
    QCOMPARE(want->config.activation, Activation::Gelu);
    const std::string bare = tmp("torch_pre_bare.safetensors");
    writeBare(original, bare, "");
    LoadOptions o;
    o.supplied.n_heads = want->config.n_heads;
    o.supplied.src_vocab = want->config.src_vocab;
    o.supplied.tgt_vocab = want->config.tgt_vocab;
    const Inputs in{{{2, 4, 5, 7, 3}}, {}, {{2, 4, 5}}};
    Model a(want, makeCpuBackend());
    const Trace ta = a.forward(in);
    auto assumed = loadModel(bare, o);
    QCOMPARE(assumed->config.norm, NormPlacement::Post);
    QCOMPARE(assumed->config.activation, Activation::Relu);
    // What was assumed is data, for each front end to word (the CLI's --norm pre, the dialog's
    // Norm placement): the value taken, the tutorial's alternative and what it means.
    std::map<std::string, Assumed> taken;
    for (const Assumed& a : assumed->assumed) taken[a.key] = a;
    QCOMPARE(taken.size(), size_t(3));
    QCOMPARE(taken["norm"].value, std::string("post"));
    QVERIFY(!taken["norm"].given);
    QCOMPARE(taken["norm"].otherwise.size(), size_t(1));
    QCOMPARE(taken["norm"].otherwise[0].value, std::string("pre"));
    QCOMPARE(taken["norm"].otherwise[0].meaning, std::string("norm_first=True"));
    QCOMPARE(taken["activation"].value, std::string("relu"));
    QCOMPARE(taken["activation"].otherwise[0].value, std::string("gelu"));
    // The padding id, read off the vocabulary's <pad>: an id of both vocabularies.
    QCOMPARE(taken["pad_id"].value, std::to_string(want->config.tgt_pad_id));
    QCOMPARE(taken["pad_id"].id_end,
             (int)std::min(want->config.src_vocab.size(), want->config.tgt_vocab.size()));
    for (const auto& n : assumed->notes)
      QVERIFY2(n.find("--") == std::string::npos, n.c_str());  // no front end's words
    Model b(assumed, makeCpuBackend());
    QVERIFY(b.forward(in).logits.dense().data != ta.logits.dense().data);
    o.supplied.norm = "pre";
    o.supplied.activation = "gelu";
    auto got = loadModel(bare, o);
    QCOMPARE(got->config.norm, NormPlacement::Pre);
    QCOMPARE(got->config.activation, Activation::Gelu);
    for (const Assumed& a : got->assumed)
      if (a.key != "pad_id")
        QVERIFY2(a.given && (a.value == "pre" || a.value == "gelu"), a.key.c_str());
    Model c(got, makeCpuBackend());
    QCOMPARE(c.forward(in).logits.dense().data, ta.logits.dense().data);
    // Remembered beside the file, read back with nothing else given.
    rememberAnswers(bare, o.supplied);
    auto again = loadModel(bare);
    QCOMPARE(again->config.norm, NormPlacement::Pre);
    QCOMPARE(again->config.activation, Activation::Gelu);
    // A placement that does not exist.
    writeText(answersPath(bare), R"({"n_heads": 4, "norm": "middle"})");
    const auto err = caught([&] { loadModel(bare); });
    QVERIFY(err);
    QVERIFY2(std::string(err->what()).find("\"norm\" is not one of post, pre") != std::string::npos,
             err->what());
  }

  // Without the number of heads the loader says what it read and offers the divisors.
  void missingHeadsAreAskedFor() {
    const std::string bare = tmp("nlp_bare.safetensors");
    writeBare(dataPath("nlp_tiny"), bare, "");
    LoadOptions o;
    const auto err = caught([&] { loadModel(bare, o); });
    QVERIFY(err);
    QCOMPARE(err->kind(), ErrorKind::MissingInfo);
    const std::string m = err->what();
    for (const char* needle : {"nlp-tutorial Transformer", "d_model 32", "2 encoder layers",
                               "n_heads", "1, 2, 4, 8, 16, 32", "bos_id", "eos_id"})
      QVERIFY2(m.find(needle) != std::string::npos,
               (std::string(needle) + " not in: " + m).c_str());
    // The error carries what was inferred, as inferWithAnswers tells it (the GUI's dialog starts
    // from it without reading the file again).
    try {
      loadModel(bare, o);
      QFAIL("loaded without the number of heads");
    } catch (const MissingInfoError& e) {
      const Inference again = inferWithAnswers(*openTensorFile(bare), o.supplied);
      QVERIFY(!e.inference.complete());
      QCOMPARE(e.inference.config.dump(), again.config.dump());
      QCOMPARE(e.inference.missing.size(), again.missing.size());
      QVERIFY(!e.inference.missing.empty());
      QCOMPARE(e.inference.missing.front().key, again.missing.front().key);
      // The ids asked are ids of the target vocabulary: the range is data too.
      const int V = (int)e.inference.config["tgt_vocab"].size();
      int ids = 0;
      for (const Question& q : e.inference.missing)
        if (q.key == "bos_id" || q.key == "eos_id") {
          ++ids;
          QCOMPARE(q.id_lowest, 0);
          QCOMPARE(q.id_end, V);
        }
      QCOMPARE(ids, 2);
      QVERIFY2(m.find("(0 to " + std::to_string(V - 1) + ")") != std::string::npos, m.c_str());
      QVERIFY2(m.find("--") == std::string::npos, m.c_str());  // the CLI adds its options
    } catch (const Error& e) {
      QFAIL(e.what());
    }
    // 3 heads do not divide 32.
    o.supplied.n_heads = 3;
    o.supplied.bos_id = 6;
    o.supplied.eos_id = 7;
    QCOMPARE(caught([&] { loadModel(bare, o); })->kind(), ErrorKind::MissingInfo);
    // Answers remembered beside the file are used.
    writeText(answersPath(bare), R"({"n_heads": 4, "bos_id": 6, "eos_id": 7})");
    auto m2 = loadModel(bare);
    QCOMPARE(m2->config.n_heads, 4);
    QCOMPARE(m2->config.src_vocab.front(), std::string("0"));  // tokens shown as their ids
  }

  void unknownNamesAreExplained() {
    const std::string path = tmp("other.safetensors");
    writeSafetensors(path,
                     {{"bert.embeddings.word_embeddings.weight",
                       DType::F32,
                       {2, 2},
                       std::vector<uint8_t>(16, 0)}},
                     {});
    const auto err = caught([&] { loadModel(path); });
    QVERIFY(err);
    QCOMPARE(err->kind(), ErrorKind::BadConfig);
    const std::string m = err->what();
    QVERIFY2(m.find("word_embeddings") != std::string::npos &&
                 m.find("nlp-tutorial Transformer (encoder.src_emb.weight)") != std::string::npos,
             m.c_str());
  }

  // A config naming the wrong family: every problem listed, and what the names look like.
  void wrongFamilyIsNamed() {
    SafetensorsFile f = SafetensorsFile::open(dataPath("seed003_pad3"));
    nlohmann::json c = nlohmann::json::parse(f.metadata().at("attnviz_config"));
    c["family"] = "nlp-tutorial";
    writeText(tmp("wrong.json"), c.dump());
    LoadOptions o;
    o.config_path = tmp("wrong.json");
    const auto err = caught([&] { loadModel(dataPath("seed003_pad3"), o); });
    QVERIFY(err);
    const std::string m = err->what();
    QVERIFY2(m.find("problems") != std::string::npos &&
                 m.find("look like wq-tutorial Translation") != std::string::npos,
             m.c_str());
  }

  // A model of the user's own names opens with a map of them (docs/formats.md "Your own names"),
  // computes what the same weights under a tutorial's names compute, is remembered, converts and
  // reopens with no map given.
  void ownNamesOpen() {
    const std::string original = dataPath("gpt003");
    auto want = loadModel(original);
    const SafetensorsFile f = SafetensorsFile::open(original);
    std::vector<NamedTensor> renamed;
    const std::pair<const char*, const char*> names[] = {{".dec_self_attn.WQ.", ".q."},
                                                         {".dec_self_attn.WK.", ".k."},
                                                         {".dec_self_attn.WV.", ".v."},
                                                         {".dec_self_attn.linear.", ".o."},
                                                         {".dec_self_attn.layer_norm.", ".ln1."},
                                                         {".pos_ffn.l1.", ".up."},
                                                         {".pos_ffn.l2.", ".down."},
                                                         {".pos_ffn.layer_norm.", ".ln2."}};
    for (NamedTensor t : floatTensors(f)) {
      std::string n = t.name;
      if (n.rfind("decoder.layers.", 0) == 0) n = "blk." + n.substr(15);
      for (const auto& [from, to] : names)
        if (size_t at = n.find(from); at != std::string::npos) n.replace(at, strlen(from), to);
      if (n == "decoder.tgt_emb.weight") n = "tok.weight";
      if (n == "projection.weight") n = "head.weight";
      if (n == "decoder.pos_emb.pe") n = "sinusoid";
      t.name = n;
      renamed.push_back(std::move(t));
    }
    const std::string path = tmp("own_names.safetensors");
    writeSafetensors(path, renamed, {});
    const nlohmann::json map = nlohmann::json::parse(R"({
      "architecture": "decoder-only", "norm": "post", "activation": "gelu_tanh",
      "positional": "sinusoidal",
      "names": {"token_embd": "tok.weight", "attn_q": "blk.{N}.q", "attn_k": "blk.{N}.k",
                "attn_v": "blk.{N}.v", "attn_output": "blk.{N}.o", "attn_norm": "blk.{N}.ln1",
                "ffn_up": "blk.{N}.up", "ffn_down": "blk.{N}.down", "ffn_norm": "blk.{N}.ln2",
                "output": "head"},
      "ignore": ["sinusoid"]})");
    // Without the map: refused as an UnknownNamesError, naming the closest architecture and what
    // it lacks, in no front end's words (the CLI adds --names FILE.json, the GUI its menu entry).
    try {
      loadModel(path);
      QFAIL("opened without its names map");
    } catch (const UnknownNamesError& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("follow none of the tutorials") != std::string::npos &&
                   m.find("--") == std::string::npos,
               e.what());
    }
    LoadOptions o;
    o.supplied.names_map = map;
    // Without the heads: asked, the guess naming the map's descriptor, which the error keeps alive
    // (the GUI's dialog reads it after inferConfig has returned).
    try {
      loadModel(path, o);
      QFAIL("opened without the heads");
    } catch (const MissingInfoError& e) {
      QVERIFY(e.inference.guess.own && e.inference.guess.spec == e.inference.guess.own.get());
      QCOMPARE(e.inference.guess.summary(), std::string("custom Model"));
      QCOMPARE(e.inference.missing.front().key, std::string("n_heads"));
    }
    o.supplied.n_heads = 4;
    o.supplied.tgt_vocab = want->config.tgt_vocab;
    std::shared_ptr<const LoadedModel> got;
    const auto err = caught([&] { got = loadModel(path, o); });
    QVERIFY2(!err, err ? err->what() : "");
    QCOMPARE(got->config.family, std::string("custom"));
    const Inputs in{{}, {}, {{1, 4, 5, 7, 3, 6}}};
    Model a(want, makeCpuBackend()), b(got, makeCpuBackend());
    QCOMPARE(b.forward(in).logits.dense().data, a.forward(in).logits.dense().data);
    // Remembered beside the file: it opens with nothing given.
    rememberAnswers(path, o.supplied);
    auto again = loadModel(path);
    QCOMPARE(again->config.family, std::string("custom"));
    // Converted: the map travels in the config.
    const std::string converted = tmp("own_names.converted.safetensors");
    convertToSafetensors(path, converted, o);
    auto reopened = loadModel(converted);
    Model c(reopened, makeCpuBackend());
    QCOMPARE(c.forward(in).logits.dense().data, a.forward(in).logits.dense().data);
    // A map with a role that does not exist is refused naming it and the roles.
    o.supplied.names_map["names"]["attn_query"] = "blk.{N}.q";
    const auto bad = caught([&] { loadModel(path, o); });
    QVERIFY(bad);
    QVERIFY2(
        std::string(bad->what()).find("\"attn_query\", which is not a role") != std::string::npos,
        bad->what());
  }

  // A file close to an architecture but not one: the closest is named with the roles it lacks.
  void closestArchitectureIsNamed() {
    const SafetensorsFile f = SafetensorsFile::open(dataPath("gpt003"));
    std::vector<NamedTensor> renamed;
    for (NamedTensor t : floatTensors(f)) {
      if (size_t at = t.name.find(".WQ."); at != std::string::npos) t.name.replace(at, 4, ".Wq.");
      renamed.push_back(std::move(t));
    }
    const std::string path = tmp("almost_gpt003.safetensors");
    writeSafetensors(path, renamed, {});
    try {
      loadModel(path);
      QFAIL("opened a file whose names follow no architecture");
    } catch (const UnknownNamesError& e) {
      QCOMPARE(e.kind(), ErrorKind::BadConfig);
      const std::string m = e.what();
      QVERIFY2(m.find("Closest: wq-tutorial GPTModel") != std::string::npos &&
                   m.find("attn_q (decoder.layers.0.dec_self_attn.WQ.weight)") != std::string::npos,
               m.c_str());
      // The same as data, for the front ends.
      QVERIFY(e.closest.spec);
      QCOMPARE(e.closest.spec->summary(), std::string("wq-tutorial GPTModel"));
      QCOMPARE(e.closest.missing_roles,
               std::vector<std::string>{"attn_q (decoder.layers.0.dec_self_attn.WQ.weight)"});
    }
  }

  // docs/formats.md holds the tables generated from the table of architectures, unchanged.
  void docsMatchTheTable() {
    std::ifstream in(std::string(ATTNVIZ_SOURCE_DIR) + "/docs/formats.md", std::ios::binary);
    QVERIFY(in);
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string begin = "<!-- BEGIN attnviz-cli architectures --markdown -->\n";
    const std::string end = "<!-- END attnviz-cli architectures --markdown -->";
    const size_t a = doc.find(begin), b = doc.find(end);
    QVERIFY2(a != std::string::npos && b != std::string::npos, "the markers are missing");
    const std::string section = doc.substr(a + begin.size(), b - a - begin.size());
    QVERIFY2(section == architecturesMarkdown(),
             "docs/formats.md's tables differ from the table of architectures: regenerate them "
             "with attnviz-cli architectures --markdown");
  }

  void vocabularyFiles() {
    writeText(tmp("v1.txt"), "\xEF\xBB\xBF<pad>\r\nhello\r\n##lo\r\n");
    QCOMPARE(readVocabularyFile(tmp("v1.txt")),
             (std::vector<std::string>{"<pad>", "hello", "##lo"}));
    writeText(tmp("v2.json"), R"({"b": 1, "a": 0, "c": 2})");
    QCOMPARE(readVocabularyFile(tmp("v2.json")), (std::vector<std::string>{"a", "b", "c"}));
    writeText(tmp("v3.json"), R"(["x", "y"])");
    QCOMPARE(readVocabularyFile(tmp("v3.json")), (std::vector<std::string>{"x", "y"}));
    struct Bad {
      const char* text;
      const char* needle;
    };
    for (const Bad& b :
         {Bad{"a\na\n", "appears twice"}, Bad{"a\n\nb\n", "line 2 is an empty token"},
          Bad{R"({"a": 0, "b": 2})", "expected an id 0 to 1"},
          Bad{R"({"a": 0, "b": 0})", "which \"a\" has too"}, Bad{"a\xffz\n", "not valid UTF-8"},
          Bad{"", "empty"}, Bad{R"(["a", 2])", "entry 1 is not a string"}}) {
      writeText(tmp("bad.txt"), b.text);
      const auto err = caught([&] { readVocabularyFile(tmp("bad.txt")); });
      QVERIFY2(err && std::string(err->what()).find(b.needle) != std::string::npos,
               err ? err->what() : b.needle);
    }
  }
};

QTEST_GUILESS_MAIN(TestInfer)
#include "test_infer.moc"

// The tutorials people train today (nanoGPT, minGPT, "Let's build GPT", the Annotated Transformer,
// Raschka's LLMs-from-scratch, llama2.c) and Hugging Face GPT-2, BERT and Llama folders: each file,
// saved the way its training script saves it (tools/make_tutorial_checkpoints.py in the test
// command), opens asking at most what the file cannot say, through the table of architectures, and
// computes what the tutorial's PyTorch model computed (every attention tensor and the logits).
#include <sys/wait.h>
#include <unistd.h>

#include <QtTest>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "arch/infer.h"
#include "arch/weights.h"
#include "base/error.h"
#include "compute/cpu_backend.h"
#include "model/decoding.h"
#include "model/device_weights.h"
#include "model/explanations.h"
#include "model/lens.h"
#include "parity_support.h"
#include "train/training.h"

using namespace attnviz;

namespace {

std::string casesDir() {
  return test::fixtureDir("ATTNVIZ_TUTORIALS_DIR");
}

nlohmann::json cases() {
  return test::fixtureCases(casesDir());
}

LoadOptions suppliedOptions(const nlohmann::json& s) {
  LoadOptions o;
  if (s.contains("n_heads")) o.supplied.n_heads = s["n_heads"].get<int>();
  if (s.contains("activation")) o.supplied.activation = s["activation"].get<std::string>();
  return o;
}

}  // namespace

class TestTutorials : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    if (casesDir().empty())
      QSKIP(
          "ATTNVIZ_TUTORIALS_DIR is not set: run through CTest, whose fixture writes the "
          "checkpoints with PyTorch (tools/make_tutorial_checkpoints.py)");
    QVERIFY2(cases().size() >= 11, "the tutorial cases were not written");
  }

  // Without answers: it opens, or asks exactly what the file cannot say.
  void asksOnlyWhatTheFileCannotSay_data() {
    QTest::addColumn<QString>("entry");
    for (const auto& c : cases())
      QTest::newRow(c["case"].get<std::string>().c_str()) << QString::fromStdString(c.dump());
  }
  void asksOnlyWhatTheFileCannotSay() {
    QFETCH(QString, entry);
    const nlohmann::json c = nlohmann::json::parse(entry.toStdString());
    const std::string path = casesDir() + "/" + c["path"].get<std::string>();
    const auto asks = c["asks"].get<std::vector<std::string>>();
    try {
      auto m = loadModel(path);
      QVERIFY2(asks.empty(), "opened without being asked");
      QCOMPARE(m->config.family, c["family"].get<std::string>());
    } catch (const MissingInfoError& e) {
      std::vector<std::string> keys;
      for (const Question& q : e.inference.missing) keys.push_back(q.key);
      QVERIFY2(keys == asks, e.what());
      QCOMPARE(e.inference.guess.family(), c["family"].get<std::string>());
    } catch (const Error& e) {
      QFAIL(e.what());
    }
  }

  // nanoGPT's sample.py reads data/<config["dataset"]>/meta.pkl from the folder it runs in: a
  // checkpoint in out/ opens with that vocabulary when the user names none; one with more
  // characters than the token table has rows is not used (said in the notes), and the model opens
  // with its ids as before.
  void findsTheVocabularyItsScriptsUse() {
    nlohmann::json c;
    for (const auto& e : cases())
      if (e["case"] == "nanogpt") c = e;
    QVERIFY(!c.is_null());
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("out")),
                  data = dir.filePath(QStringLiteral("data/shakespeare_char"));
    QVERIFY(QDir().mkpath(out) && QDir().mkpath(data));
    const std::string ckpt = out.toStdString() + "/ckpt.pt";
    QVERIFY(QFile::copy(QString::fromStdString(casesDir() + "/" + c["path"].get<std::string>()),
                        QString::fromStdString(ckpt)));
    const int rows = (int)loadModel(ckpt)->config.tgt_vocab.size();
    // meta.pkl as prepare.py pickles it (protocol 4): {'itos': {i: char}}; '\n' among them.
    auto writeMeta = [&](int n) {
      std::ofstream f(data.toStdString() + "/meta.pkl", std::ios::binary | std::ios::trunc);
      f << "\x80\x04}(\x8c\x04itos}(";
      for (int i = 0; i < n; ++i)
        f << 'K' << char(i) << "\x8c\x01" << (i == 0 ? '\n' : char(' ' + i));
      f << "uu.";
    };
    writeMeta(rows - 3);
    auto m = loadModel(ckpt);
    QCOMPARE((int)m->config.tgt_vocab.size(), rows);
    QCOMPARE(m->config.tgt_vocab[0], std::string("\n"));
    QCOMPARE(m->config.tgt_vocab[1], std::string("!"));
    QVERIFY(m->tokenizer);
    QCOMPARE(m->tokenizer->encodeTarget("!#"), (std::vector<int>{1, 3}));
    bool said = false;
    for (const auto& n : m->notes) said = said || n.find("data/{dataset}/meta.pkl") != n.npos;
    QVERIFY(said);
    // Too many characters for the table: not used, and said why.
    writeMeta(rows + 1);
    m = loadModel(ckpt);
    QVERIFY(!m->tokenizer);
    said = false;
    for (const auto& n : m->notes) said = said || n.find("vocabulary not used") != n.npos;
    QVERIFY(said);
  }

  // With those answers every attention tensor and the logits are PyTorch's.
  void matchesPyTorch_data() { asksOnlyWhatTheFileCannotSay_data(); }
  void matchesPyTorch() {
    QFETCH(QString, entry);
    const nlohmann::json c = nlohmann::json::parse(entry.toStdString());
    const std::string name = c["case"], path = casesDir() + "/" + c["path"].get<std::string>();
    std::shared_ptr<const LoadedModel> loaded;
    const auto err =
        test::caught([&] { loaded = loadModel(path, suppliedOptions(c["supplied"])); });
    QVERIFY2(!err, err ? err->what() : "");
    const SafetensorsFile ref = SafetensorsFile::open(casesDir() + "/" + name + ".ref.safetensors");
    const nlohmann::json inputs = nlohmann::json::parse(ref.metadata().at("inputs"));
    // As many parameters as PyTorch's model.parameters() holds (a tied table once), before the
    // model runs (`info`) and after.
    const int64_t parameters = inputs.at("parameters").get<int64_t>();
    QCOMPARE(countParameters(loaded->config, loaded->weights), parameters);
    auto compare = [&]() -> std::string {
      Model m(loaded, makeCpuBackend());
      if (m.parameterCount() != parameters)
        return "the model holds " + std::to_string(m.parameterCount()) + " parameters, PyTorch's " +
               std::to_string(parameters);
      std::string diff = test::compareWithReference(m.forward(test::referenceInputs(inputs)), ref);
      if (diff.empty() && inputs.contains("greedy")) {
        const auto& g = inputs["greedy"];
        const std::vector<int> src =
            g.contains("src_ids") ? g["src_ids"].get<std::vector<int>>() : std::vector<int>();
        const std::vector<int> prompt =
            g.contains("tgt_ids") ? g["tgt_ids"].get<std::vector<int>>() : std::vector<int>();
        if (greedyDecode(m, src, g["max_len"].get<int>(), prompt) !=
            g["out_ids"].get<std::vector<int>>())
          diff = "the greedy decode differs from the tutorial's";
      }
      return diff;
    };
    std::string diff;
    if (c["needs"].empty()) {
      diff = compare();
    } else {
      // Parts of the model that may not be there yet (RMSNorm, rotary positions, …): run in a
      // child so that a missing one fails this row, not the suite.
      diff = inChild(compare);
      if (!diff.empty()) diff += " (the model needs " + c["needs"].dump() + ")";
    }
    QVERIFY2(diff.empty(), diff.c_str());
  }

  // Gemma 2 as the views read it: the logit lens's last row is the pass's soft-capped logits
  // (within the cap), the attention explanation names the cap, and what has no backward pass or
  // no sum to split (direct contributions, gradients) is refused, not computed wrongly.
  void gemma2ShowsItsCaps() {
    nlohmann::json c;
    for (const auto& e : cases())
      if (e["case"] == "hf_gemma2") c = e;
    QVERIFY(!c.is_null());
    const std::string path = casesDir() + "/" + c["path"].get<std::string>();
    const SafetensorsFile ref = SafetensorsFile::open(casesDir() + "/hf_gemma2.ref.safetensors");
    const nlohmann::json inputs = nlohmann::json::parse(ref.metadata().at("inputs"));
    Model m(loadModel(path), makeCpuBackend());
    ForwardOptions o;
    o.keep_activations = true;
    const Trace t = m.forward(test::referenceInputs(inputs), o);
    const float cap = m.config().final_softcap;
    QCOMPARE(cap, 30.0f);
    for (int b = 0; b < t.batch; ++b) {
      LensOptions lo;
      lo.sentence = b;
      lo.keep_logits = true;
      const LogitLens lens = logitLens(m, t, lo);
      const int64_t per = (int64_t)lens.positions * lens.vocab;
      const float* last = lens.logits.ptr() + (lens.rows - 1) * per;
      QVERIFY(std::memcmp(last, t.logits.row(b, 0), per * sizeof(float)) == 0);
      for (int64_t i = 0; i < per; ++i) QVERIFY(std::fabs(last[i]) < cap);
    }
    const AttentionBlock* block = t.block(AttentionKind::DecoderSelf, 0);
    QVERIFY(block);
    const std::string text = attentionExplanation(m.config(), t, *block, MaskOptions{}, true);
    QVERIFY2(text.find("10\u00b7tanh(") != std::string::npos, text.c_str());
    const auto contributions = test::caught([&] { directContributions(m, t); });
    QVERIFY(contributions &&
            std::string(contributions->what()).find("soft-caps") != std::string::npos);
  }

  // Qwen3's per-head q and k norms in the backward pass (training, attribution): the loss's
  // gradient along every 7th weight — the q_norm and k_norm gains among them, and the projections
  // and layers below them — is its central difference.
  void qkNormGradients() {
    checkGradients("hf_qwen3", {{1, 12, 40, 7, 7, 33, 21}, {1, 44, 3, 26, 26, 15, 9}},
                   {{12, 40, 7, 7, 33, 21, 2}, {44, 3, 26, 26, 15, 9, 38}});
  }

  // GPT-NeoX's parallel residual (both sublayers from the layer's input) and partial rotary (a
  // quarter of each head turned), then its sequential blocks with half of each head turned: the
  // backward pass against central differences.
  void parallelResidualAndPartialRotaryGradients() {
    checkGradients("hf_gpt_neox", {{7, 22, 13, 40, 3, 31, 9}, {5, 5, 28, 44, 19, 10, 2}},
                   {{22, 13, 40, 3, 31, 9, 18}, {5, 28, 44, 19, 10, 2, 36}});
    checkGradients("hf_gpt_neox_seq", {{3, 9, 27, 41, 12, 12, 6}, {48, 2, 15, 30, 8, 21, 39}},
                   {{9, 27, 41, 12, 12, 6, 33}, {2, 15, 30, 8, 21, 39, 4}});
  }

 private:
  // The training pass's gradients of case `name` on one batch against central differences of its
  // loss, every 7th parameter.
  static void checkGradients(const char* name, const std::vector<std::vector<int>>& ids,
                             const std::vector<std::vector<int>>& targets) {
    nlohmann::json c;
    for (const auto& e : cases())
      if (e["case"] == name) c = e;
    QVERIFY2(!c.is_null(), name);
    Model model(loadModel(casesDir() + "/" + c["path"].get<std::string>()), makeCpuBackend(1));
    Training training(model);
    Inputs in;
    in.tgt = ids;
    Targets tg;
    tg.tokens = targets;
    training.zeroGradients();
    training.forwardBackward(in, tg);
    const int64_t n = training.parameterCount();
    const std::vector<float> grads(training.gradients(), training.gradients() + n);
    float* params = training.parameters();  // host memory: the CPU backend's
    const float h = 2e-3f;
    int checked = 0;
    for (int64_t i = 0; i < n; i += 7, ++checked) {
      const float keep = params[i];
      auto lossAt = [&](float v) {
        params[i] = v;
        return training.forwardBackward(in, tg).loss;
      };
      const double numeric = (lossAt(keep + h) - lossAt(keep - h)) / (2.0 * h);
      params[i] = keep;
      QVERIFY2(std::abs(numeric - grads[i]) <= 0.02 * std::abs(grads[i]) + 2e-3,
               qPrintable(QString("%1: parameter %2 of %3: gradient %4, central difference %5")
                              .arg(name)
                              .arg(i)
                              .arg(n)
                              .arg(grads[i])
                              .arg(numeric)));
    }
    QVERIFY(checked > 100);
  }

  // f() in a forked child: its result, or what ended the child.
  static std::string inChild(const std::function<std::string()>& f) {
    int fds[2];
    if (pipe(fds) != 0) return "pipe() failed";
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      std::string r;
      try {
        r = f();
      } catch (const std::exception& e) {
        r = std::string("threw: ") + e.what();
      }
      const ssize_t n = write(fds[1], r.data(), r.size());
      _exit(n == (ssize_t)r.size() ? 0 : 1);
    }
    close(fds[1]);
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, (size_t)n);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
      return "the forward pass crashed (signal " + std::to_string(WTERMSIG(status)) + ")";
    return out;
  }
};

QTEST_GUILESS_MAIN(TestTutorials)
#include "test_tutorials.moc"

// Hand-computed cases for the core's pieces: the CPU backend's ops, masks as the tutorials print
// them, positional encodings, tokenizing, config defaults, the NumPy writer, and the documented
// behaviour of fully masked rows.
#include <QTemporaryDir>
#include <QtTest>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "arch/positional.h"
#include "arch/weights.h"
#include "base/error.h"
#include "base/host_memory.h"
#include "compute/cpu_backend.h"
#include "compute/memory_limit.h"
#include "io/npy.h"
#include "model/decoding.h"
#include "model/head_stats.h"
#include "model/masks.h"
#include "model/model.h"
#include "model/pass.h"
#include "model/runs.h"
#include "test_support.h"
#include "text/vocab.h"

using namespace attnviz;

namespace {

// Runs one op on host vectors through the CPU backend.
struct Host {
  std::shared_ptr<Backend> be = makeCpuBackend();
  BufferPtr put(const std::vector<float>& v) {
    BufferPtr b = be->allocate(v.size() * 4);
    be->upload(*b, v.data(), v.size() * 4);
    return b;
  }
  BufferPtr putBytes(const std::vector<uint8_t>& v) {
    BufferPtr b = be->allocate(v.size());
    be->upload(*b, v.data(), v.size());
    return b;
  }
  std::vector<float> get(const DeviceBuffer& b, size_t n) {
    std::vector<float> v(n);
    be->download(b, v.data(), n * 4);
    return v;
  }
};

template <class F>
ErrorKind kindOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::Usage;  // "no error" sentinel for the tests below (never expected)
}

nlohmann::json tinyConfig() {
  return {{"family", "nlp-tutorial"},
          {"d_model", 8},
          {"d_ff", 16},
          {"n_heads", 2},
          {"n_encoder_layers", 1},
          {"n_decoder_layers", 1},
          {"src_vocab", {"P", "ich", "mochte", "ein", "bier"}},
          {"tgt_vocab", {"P", "i", "want", "a", "beer", "S", "E"}},
          {"bos_id", 5},
          {"eos_id", 6},
          {"max_len", 16}};
}

}  // namespace

class TestCore : public QObject {
  Q_OBJECT

 private slots:
  // softmax([1, 2, 3]) = e^x / Σe^x = [0.0900306, 0.2447285, 0.6652410]
  void softmaxHandComputed() {
    Host h;
    auto s = h.put({1, 2, 3});
    auto m = h.putBytes({0, 0, 0});
    auto p = h.be->allocate(12);
    h.be->masked_softmax_forward(s->f32(), m->u8(), p->f32(), 1, 1, 1, 3, -1e9f);
    auto r = h.get(*p, 3);
    QVERIFY(std::abs(r[0] - 0.0900306f) < 1e-6f);
    QVERIFY(std::abs(r[1] - 0.2447285f) < 1e-6f);
    QVERIFY(std::abs(r[2] - 0.6652410f) < 1e-6f);
  }

  // Scores far below the row's maximum give exactly 0 and nothing undefined on the way (the
  // exponential's bit tricks once overflowed an int32 near x = −8.7e6; the sanitizer suite runs
  // this); a long row so that the vectorised lanes see them too.
  void softmaxFarBelowTheMaximum() {
    Host h;
    std::vector<float> row(40, -8.72e6f);
    row[0] = 0.0f;
    for (size_t j = 1; j < row.size(); ++j) row[j] = -8.72e6f * float(j % 5 + 1) - float(j);
    row[7] = -3e38f;
    row[9] = -1e9f;
    auto s = h.put(row);
    auto m = h.putBytes(std::vector<uint8_t>(row.size(), 0));
    auto p = h.be->allocate(row.size() * 4);
    h.be->masked_softmax_forward(s->f32(), m->u8(), p->f32(), 1, 1, 1, int(row.size()), -1e9f);
    auto r = h.get(*p, row.size());
    QCOMPARE(r[0], 1.0f);
    for (size_t j = 1; j < r.size(); ++j) QCOMPARE(r[j], 0.0f);
  }

  // Masked cells are exactly 0; the rest renormalise: softmax([1, 3]) = [0.1192029, 0.8807971].
  void softmaxMasked() {
    Host h;
    for (float fill : {-1e9f, -std::numeric_limits<float>::infinity()}) {
      auto s = h.put({1, 2, 3});
      auto m = h.putBytes({0, 1, 0});
      auto p = h.be->allocate(12);
      h.be->masked_softmax_forward(s->f32(), m->u8(), p->f32(), 1, 1, 1, 3, fill);
      auto r = h.get(*p, 3);
      QCOMPARE(r[1], 0.0f);
      QVERIFY(std::abs(r[0] - 0.1192029f) < 1e-6f);
      QVERIFY(std::abs(r[2] - 0.8807971f) < 1e-6f);
    }
  }

  // A fully masked row: −1e9 gives PyTorch's uniform row; −∞ gives zeros (PyTorch: NaN).
  void softmaxFullyMasked() {
    Host h;
    auto s = h.put({1, 2, 3, 4});
    auto m = h.putBytes({1, 1, 1, 1});
    auto p = h.be->allocate(16);
    h.be->masked_softmax_forward(s->f32(), m->u8(), p->f32(), 1, 1, 1, 4, -1e9f);
    for (float v : h.get(*p, 4)) QCOMPARE(v, 0.25f);
    h.be->masked_softmax_forward(s->f32(), m->u8(), p->f32(), 1, 1, 1, 4,
                                 -std::numeric_limits<float>::infinity());
    for (float v : h.get(*p, 4)) QCOMPARE(v, 0.0f);
  }

  // A NaN or +∞ score makes the whole row NaN, as in PyTorch (softmax([nan, 1, 2]) and
  // softmax([inf, 1, 2]) are [nan, nan, nan]), also where every other key is masked with −∞; a
  // NaN under the mask is replaced by the fill like any masked score. Rows of 40 keys, so that the
  // vectorised passes see the odd score in their lanes and in the tail.
  void softmaxNaNRows() {
    Host h;
    const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
    struct Case {
      int at;
      float value;
      bool others_masked, odd_masked, expect_nan;
    };
    for (const Case& c : {Case{23, nan, false, false, true}, Case{38, nan, false, false, true},
                          Case{17, inf, false, false, true}, Case{5, nan, true, false, true},
                          Case{23, nan, false, true, false}}) {
      std::vector<float> row(40);
      for (int j = 0; j < 40; ++j) row[j] = 0.1f * float(j % 7);
      row[c.at] = c.value;
      std::vector<uint8_t> mask(40, c.others_masked ? 1 : 0);
      mask[c.at] = c.odd_masked ? 1 : 0;
      auto s = h.put(row);
      auto m = h.putBytes(mask);
      auto p = h.be->allocate(row.size() * 4);
      h.be->masked_softmax_forward(s->f32(), m->u8(), p->f32(), 1, 1, 1, 40, -inf);
      const auto r = h.get(*p, 40);
      double sum = 0;
      for (int j = 0; j < 40; ++j) {
        QVERIFY2(std::isnan(r[j]) == c.expect_nan,
                 qPrintable(QString("case at %1, key %2: %3").arg(c.at).arg(j).arg(r[j])));
        sum += c.expect_nan ? 0.0 : r[j];
      }
      if (!c.expect_nan) {
        QCOMPARE(r[c.at], 0.0f);
        QVERIFY(std::abs(sum - 1.0) < 1e-5);
      }
    }
  }

  // Large host buffers: a freed one serves the next allocation of its size (or up to half as
  // large again), smaller requests get fresh memory, and releaseKeptHostMemory empties the keep.
  void hostMemoryKeepsFreedBuffers() {
    if (!hostMemoryKeepsBuffers())
      QSKIP("large buffers come from operator new in this build (AddressSanitizer or not Linux)");
    releaseKeptHostMemory();
    const size_t mb = size_t(1) << 20;
    void* a = allocateHost(24 * mb);
    QVERIFY(a);
    QCOMPARE(reinterpret_cast<uintptr_t>(a) % (2 * mb), uintptr_t(0));  // huge-page aligned
    std::memset(a, 7, 24 * mb);
    freeHost(a, 24 * mb);
    void* b = allocateHost(24 * mb);  // the same size: the kept buffer, its bytes as left
    QCOMPARE(b, a);
    QCOMPARE(static_cast<unsigned char*>(b)[24 * mb - 1], (unsigned char)7);
    freeHost(b, 24 * mb);
    void* c = allocateHost(20 * mb);  // 24 MiB holds 20 without wasting more than half
    QCOMPARE(c, a);
    void* d = allocateHost(8 * mb);  // nothing kept now: fresh
    QVERIFY(d && d != c);
    freeHost(c, 20 * mb);             // frees the whole 24 MiB mapping
    void* e = allocateHost(12 * mb);  // 24 MiB would waste more than half: fresh
    QVERIFY(e && e != a);
    std::memset(e, 1, 12 * mb);
    freeHost(d, 8 * mb);
    freeHost(e, 12 * mb);
    releaseKeptHostMemory();
    // HostVector: resize leaves the kept bytes (no zero-fill); assign fills.
    HostVector<float> v;
    v.assign(3 * mb, 1.5f);
    QCOMPARE(v[3 * mb - 1], 1.5f);
  }

  // LayerNorm([1, 2, 3]) = (x − 2)/sqrt(2/3 + 1e-5) = [−1.2247357, 0, 1.2247357]; then γ, β.
  void layerNormHandComputed() {
    Host h;
    auto x = h.put({1, 2, 3});
    auto y = h.be->allocate(12);
    h.be->norm_forward(NormKind::LayerNorm, x->f32(), nullptr, nullptr, y->f32(), 1, 3, 1e-5f);
    auto r = h.get(*y, 3);
    QVERIFY(std::abs(r[0] + 1.2247357f) < 1e-5f);
    QVERIFY(std::abs(r[1]) < 1e-6f);
    QVERIFY(std::abs(r[2] - 1.2247357f) < 1e-5f);
    auto g = h.put({2, 2, 2}), b = h.put({1, 1, 1});
    h.be->norm_forward(NormKind::LayerNorm, x->f32(), g->f32(), b->f32(), y->f32(), 1, 3, 1e-5f);
    r = h.get(*y, 3);
    QVERIFY(std::abs(r[2] - (2 * 1.2247357f + 1)) < 1e-5f);
  }

  // relu(−1)=0; gelu(1) = 0.5(1+erf(1/√2)) = 0.8413447; tanh-gelu(1) = 0.8411920.
  void activations() {
    Host h;
    auto x = h.put({-1, 1});
    h.be->activation_forward(x->f32(), 2, Activation::Relu);
    QCOMPARE(h.get(*x, 2), (std::vector<float>{0, 1}));
    x = h.put({1});
    h.be->activation_forward(x->f32(), 1, Activation::Gelu);
    QVERIFY(std::abs(h.get(*x, 1)[0] - 0.8413447f) < 1e-6f);
    x = h.put({1});
    h.be->activation_forward(x->f32(), 1, Activation::GeluTanh);
    QVERIFY(std::abs(h.get(*x, 1)[0] - 0.8411920f) < 1e-6f);
  }

  // y = x·Wᵀ + b with x = [[1, 2]], W = [[1, 0], [0, 1], [1, 1]], b = [0.5, 0, −1] → [1.5, 2, 2].
  void linearHandComputed() {
    Host h;
    auto x = h.put({1, 2}), w = h.put({1, 0, 0, 1, 1, 1}), b = h.put({0.5f, 0, -1});
    auto y = h.be->allocate(12);
    h.be->linear_forward(x->f32(), w->f32(), b->f32(), y->f32(), 1, 2, 3);
    QCOMPARE(h.get(*y, 3), (std::vector<float>{1.5f, 2, 2}));
  }

  // Two heads read from a fused row [q0 q1 | k0 k1]: scores = scale · q_h·k_h.
  void attentionScoresHeads() {
    Host h;
    // B=1, T=2, H=2, d_k=1; row layout [q_h0, q_h1, k_h0, k_h1]
    auto qk = h.put({1, 2, 3, 4, 5, 6, 7, 8});
    auto s = h.be->allocate(2 * 2 * 2 * 4);
    HeadsView q{qk->f32(), 8, 4}, k{qk->f32() + 2, 8, 4};
    h.be->attention_scores_forward(q, k, s->f32(), 1, 2, 2, 2, 2, 1, 0.5f);
    // head 0: q = [1, 5], k = [3, 7] → 0.5·[[3, 7], [15, 35]]; head 1: q = [2, 6], k = [4, 8]
    QCOMPARE(h.get(*s, 8), (std::vector<float>{1.5f, 3.5f, 7.5f, 17.5f, 4, 8, 12, 24}));
  }

  // The subsequent mask is np.triu(ones, k=1), as the tutorial prints it.
  void subsequentMaskAsTutorial() {
    auto m = subsequentMask(3);
    QCOMPARE(m, (std::vector<uint8_t>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
  }

  // get_attn_pad_mask: keys equal to pad are masked for every query; the decoder's union.
  void paddingAndUnion() {
    std::vector<std::vector<int>> seq{{1, 3, 0}};
    QCOMPARE(paddingMask(seq, 2, 0), (std::vector<uint8_t>{0, 0, 1, 0, 0, 1}));
    QCOMPARE(decoderSelfMask(seq, 0, true, true),
             (std::vector<uint8_t>{0, 1, 1, 0, 0, 1, 0, 0, 1}));
    QCOMPARE(decoderSelfMask(seq, 0, false, true), subsequentMask(3));
    QCOMPARE(decoderSelfMask(seq, 0, false, false), std::vector<uint8_t>(9, 0));
  }

  // PE(1, ·) for d_model 4: [sin 1, cos 1, sin(1/100), cos(1/100)].
  void sinusoidalValues() {
    Tensor pe = sinusoidalTable(3, 4);
    QCOMPARE(pe.data[0], 0.0f);
    QCOMPARE(pe.data[1], 1.0f);
    QVERIFY(std::abs(pe.data[4] - std::sin(1.0f)) < 1e-6f);
    QVERIFY(std::abs(pe.data[5] - std::cos(1.0f)) < 1e-6f);
    QVERIFY(std::abs(pe.data[6] - std::sin(0.01f)) < 1e-6f);
    QVERIFY(std::abs(pe.data[7] - std::cos(0.01f)) < 1e-6f);
    Tensor sim = positionSimilarity(pe, 3);
    for (int i = 0; i < 3; ++i) QVERIFY(std::abs(sim.data[i * 3 + i] - 1.0f) < 1e-6f);
  }

  void tokenizing() {
    Vocabulary v({"P", "ich", "mochte"}, -1, "source vocabulary");
    QCOMPARE(v.encode("  ich\tmochte ", 10), (std::vector<int>{1, 2}));
    QCOMPARE(kindOf([&] { v.encode("", 10); }), ErrorKind::BadInput);
    QCOMPARE(kindOf([&] { v.encode("ich bier", 10); }), ErrorKind::BadInput);
    QCOMPARE(kindOf([&] { v.encode("ich\x01", 10); }), ErrorKind::BadInput);
    QCOMPARE(kindOf([&] { v.encode("ich ich ich", 2); }), ErrorKind::BadInput);
    try {
      v.encode("ich bier", 10);
    } catch (const Error& e) {
      QVERIFY(std::string(e.what()).find("\"bier\"") != std::string::npos);
    }
    Vocabulary u({"<unk>", "a"}, 0, "vocab");
    QCOMPARE(u.encode("a zzz", 10), (std::vector<int>{1, 0}));
    // The words that became <unk>: each once, in order, split as encode() splits.
    QCOMPARE(u.unknownWords(" zzz a\tyy zzz "), (std::vector<std::string>{"zzz", "yy"}));
    QVERIFY(u.unknownWords("a <unk>").empty());
    QCOMPARE(parseIdList("5, 1,3", 6, "ids"), (std::vector<int>{5, 1, 3}));
    // White space separates entries too (a file of ids one a line); a comma still needs one after.
    QCOMPARE(parseIdList(" 5 1\n3\t2 ,4\n", 6, "ids"), (std::vector<int>{5, 1, 3, 2, 4}));
    QCOMPARE(kindOf([] { parseIdList("1\n2,\n", 6, "ids"); }), ErrorKind::BadInput);
    QCOMPARE(kindOf([] { parseIdList("1 -2", 6, "ids"); }), ErrorKind::BadInput);
    QCOMPARE(kindOf([] { parseIdList("1,x", 6, "ids"); }), ErrorKind::BadInput);
    QCOMPARE(kindOf([] { parseIdList("9", 6, "ids"); }), ErrorKind::BadInput);
  }

  void configDefaultsAndChecks() {
    ModelConfig c = ModelConfig::fromJson(tinyConfig(), "tiny");
    QCOMPARE(c.d_k, 4);
    QCOMPARE(c.mask_fill, -1e9f);
    QCOMPARE(c.model, std::string("Transformer"));
    QCOMPARE(c.architecture(), Architecture::EncoderDecoder);
    QVERIFY(!c.q_bias.has_value());  // decided by the file's tensors
    QVERIFY(!c.src_bos_eos);
    auto j = tinyConfig();
    j["family"] = "torch-seq2seq";  // the old name of pytorch-nn-transformer still loads
    c = ModelConfig::fromJson(j, "tiny");
    QCOMPARE(c.family, std::string("pytorch-nn-transformer"));
    QVERIFY(std::isinf(c.mask_fill) && c.embed_scale && c.final_norm);
    QVERIFY(!c.src_bos_eos);  // the source vocabulary has no start/end token to wrap it in
    j["d_k"] = 8;             // nn.MultiheadAttention cannot have d_k·H ≠ d_model
    QCOMPARE(kindOf([&] { ModelConfig::fromJson(j, "tiny"); }), ErrorKind::BadConfig);
    j = tinyConfig();
    j["family"] = "seed003";
    j["d_k"] = 64;  // the WQ tutorial's reference uses d_model 128 with 8 heads of 64: allowed
    j["d_v"] = 64;
    c = ModelConfig::fromJson(j, "tiny");
    QCOMPARE(c.family, std::string("wq-tutorial"));
    QCOMPARE(c.attnWidth(), 128);
    j = tinyConfig();
    j["n_encoder_layers"] = 1000000000;
    QCOMPARE(kindOf([&] { ModelConfig::fromJson(j, "tiny"); }), ErrorKind::BadConfig);
    j = tinyConfig();
    j["tgt_vocab"] = {"P", "P"};
    QCOMPARE(kindOf([&] { ModelConfig::fromJson(j, "tiny"); }), ErrorKind::BadVocabulary);
    // layer_norm_eps that is positive as a double but 0 as a float is refused.
    j = tinyConfig();
    j["layer_norm_eps"] = 1e-50;
    QCOMPARE(kindOf([&] { ModelConfig::fromJson(j, "tiny"); }), ErrorKind::BadConfig);
  }

  // "-1: none", as the options' help says, for every special id: a decoder-only model has no
  // padding token unless its file states one, an encoder-decoder may lack an end token (a decode
  // then stops at its length limit) but not a start token; a model with one vocabulary's message
  // says "the vocabulary".
  void specialIdsNone() {
    nlohmann::json gpt = {
        {"family", "nanogpt"}, {"model", "GPT"}, {"d_model", 8},  {"d_ff", 32},
        {"n_heads", 2},        {"n_layers", 1},  {"max_len", 16}, {"vocab", {"a", "b", "c"}}};
    ModelConfig c = ModelConfig::fromJson(gpt, "gpt");
    QCOMPARE(c.tgt_pad_id, -1);  // was 0: "pad 0" for a model that pads nothing
    QCOMPARE(c.bos_id, -1);
    for (const char* key : {"pad_id", "bos_id", "eos_id"}) {
      auto j = gpt;
      j[key] = -1;
      QCOMPARE(ModelConfig::fromJson(j, "gpt").architecture(), Architecture::DecoderOnly);
      j[key] = 3;
      try {
        ModelConfig::fromJson(j, "gpt");
        QFAIL("an id outside the vocabulary");
      } catch (const Error& e) {
        const std::string m = e.what();
        QVERIFY2(m.find("outside the vocabulary of 3 tokens (expected -1 or 0 to 2)") !=
                     std::string::npos,
                 m.c_str());
      }
    }
    auto j = tinyConfig();
    j["pad_id"] = -1;
    j["eos_id"] = -1;
    c = ModelConfig::fromJson(j, "tiny");
    QCOMPARE(c.src_pad_id, -1);
    QCOMPARE(c.tgt_pad_id, -1);
    QCOMPARE(c.eos_id, -1);
    j["bos_id"] = -1;
    try {
      ModelConfig::fromJson(j, "tiny");
      QFAIL("an encoder-decoder without a start token");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("begins with a start token") != std::string::npos,
               e.what());
    }
    // Without a padding token, sentences of one length still run together; different lengths
    // are refused by name instead of padded with the id -1.
    int len = 0;
    QCOMPARE(padBatch({{1, 2}, {2, 1}}, -1, &len).size(), size_t(2));
    QCOMPARE(len, 2);
    try {
      padBatch({{1, 2, 1}, {2}}, -1, &len);
      QFAIL("padded with -1");
    } catch (const Error& e) {
      QCOMPARE(e.kind(), ErrorKind::BadInput);
      QVERIFY2(std::string(e.what()).find("no padding token") != std::string::npos, e.what());
    }
  }

  // Every missing key is named in one message.
  void configMissingKeysAtOnce() {
    auto j = tinyConfig();
    j.erase("d_model");
    j.erase("n_heads");
    j.erase("bos_id");
    try {
      ModelConfig::fromJson(j, "tiny");
      QFAIL("no error");
    } catch (const Error& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("\"d_model\"") != std::string::npos &&
                   m.find("\"n_heads\"") != std::string::npos &&
                   m.find("\"bos_id\"") != std::string::npos,
               m.c_str());
    }
  }

  // Model classes: the architecture, what the config needs and what it refuses.
  void configModelClasses() {
    nlohmann::json bert = {{"family", "wq-tutorial"},
                           {"model", "BertModel"},
                           {"d_model", 8},
                           {"d_ff", 16},
                           {"n_heads", 2},
                           {"n_encoder_layers", 1},
                           {"vocab", {"[PAD]", "[CLS]", "[SEP]", "[MASK]", "a", "b"}}};
    ModelConfig c = ModelConfig::fromJson(bert, "bert");
    QCOMPARE(c.architecture(), Architecture::EncoderOnly);
    QCOMPARE(c.tokenHead(), TokenHead::BertMlm);
    QCOMPARE(c.classHead(), ClassHead::Pooler);
    QCOMPARE(c.n_segments, 2);
    QCOMPARE((int)c.src_vocab.size(), 6);
    QVERIFY(c.tgt_vocab.empty());
    QCOMPARE(c.bos_id, -1);
    bert["n_decoder_layers"] = 2;  // a BertModel has no decoder
    QCOMPARE(kindOf([&] { ModelConfig::fromJson(bert, "bert"); }), ErrorKind::BadConfig);
    nlohmann::json gpt = {{"family", "wq-tutorial"},
                          {"model", "GPTModel"},
                          {"d_model", 8},
                          {"d_ff", 16},
                          {"n_heads", 2},
                          {"n_layers", 3},
                          {"vocab", {"P", "S", "E", "a"}}};
    c = ModelConfig::fromJson(gpt, "gpt");
    QCOMPARE(c.architecture(), Architecture::DecoderOnly);
    QCOMPARE(c.n_decoder_layers, 3);
    QCOMPARE(c.n_encoder_layers, 0);
    QCOMPARE((int)c.tgt_vocab.size(), 4);
    gpt["model"] = "Translation2";
    QCOMPARE(kindOf([&] { ModelConfig::fromJson(gpt, "gpt"); }), ErrorKind::BadConfig);
    nlohmann::json enc = {{"family", "step-by-step-encoder"},
                          {"d_model", 8},
                          {"d_ff", 16},
                          {"n_heads", 2},
                          {"n_encoder_layers", 1},
                          {"max_len", 8},
                          {"vocab", {"[PAD]", "a", "b"}}};
    c = ModelConfig::fromJson(enc, "enc");
    QCOMPARE(c.norm, NormPlacement::Pre);
    QCOMPARE(c.positional, Positional::Learned);
    QVERIFY(c.embed_norm);
    QCOMPARE(c.embed_norm_eps, 1e-12f);
    QCOMPARE(c.activation, Activation::Gelu);
  }

  // PyTorch's nn.Transformer tutorial wraps the source in BOS … EOS; attnviz does it for the user.
  void sourceWrappedInMarkers() {
    auto j = tinyConfig();
    j["family"] = "pytorch-nn-transformer";
    j["d_ff"] = 16;
    j["src_vocab"] = {"<unk>", "<pad>", "<bos>", "<eos>", "a", "b"};
    j["tgt_vocab"] = {"<unk>", "<pad>", "<bos>", "<eos>", "x", "y"};
    j["pad_id"] = 1;
    j["bos_id"] = 2;
    j["eos_id"] = 3;
    auto cfg = ModelConfig::fromJson(j, "tiny");
    QCOMPARE(cfg.src_bos_id, 2);
    QCOMPARE(cfg.src_eos_id, 3);
    Model m(makeRandomModel(cfg, 3), makeCpuBackend());
    QCOMPARE(m.encodeSource("a b a"), (std::vector<int>{2, 4, 5, 4, 3}));
    QCOMPARE(m.encodeSource("<bos> a <eos>"), (std::vector<int>{2, 4, 3}));  // typed markers kept
    j["src_bos_eos"] = false;
    Model plain(makeRandomModel(ModelConfig::fromJson(j, "tiny"), 3), makeCpuBackend());
    QCOMPARE(plain.encodeSource("a b"), (std::vector<int>{4, 5}));
  }

  // The source's markers are the target's ids only where the source vocabulary spells the same
  // tokens there: a word at that id is a word, not a start or end marker (its head statistics
  // would count attention to it as a sink).
  void sourceMarkersOnlyWhereSpelled() {
    auto j = tinyConfig();
    j["family"] = "pytorch-nn-transformer";
    j["d_ff"] = 16;
    j["src_vocab"] = {"<unk>", "<pad>", "the", "a", "b", "c"};
    j["tgt_vocab"] = {"<unk>", "<pad>", "<bos>", "<eos>", "x", "y"};
    j["pad_id"] = 1;
    j["bos_id"] = 2;
    j["eos_id"] = 3;
    const auto cfg = ModelConfig::fromJson(j, "tiny");
    QCOMPARE(cfg.src_bos_id, -1);
    QCOMPARE(cfg.src_eos_id, -1);
    QVERIFY(!cfg.src_bos_eos);
    QCOMPARE(tokenRoles(cfg, Side::Source).bos, -1);
    QCOMPARE(tokenRoles(cfg, Side::Source).eos, -1);
    QCOMPARE(tokenRoles(cfg, Side::Target).bos, 2);
    j["src_vocab"] = {"<unk>", "<pad>", "<bos>", "the", "b", "c"};  // only the start is shared
    const auto half = ModelConfig::fromJson(j, "tiny");
    QCOMPARE(half.src_bos_id, 2);
    QCOMPARE(half.src_eos_id, -1);
  }

  // A start token equal to the pad id (Marian) is the start, not padding: never masked.
  void startTokenEqualToPadIsNotMasked() {
    auto j = tinyConfig();
    j["pad_id"] = 0;
    j["bos_id"] = 0;
    auto cfg = ModelConfig::fromJson(j, "tiny");
    Model m(makeRandomModel(cfg, 4), makeCpuBackend());
    Inputs in;
    in.src = {{1, 2}};
    in.tgt = {{0, 1, 0}};  // start, a word, then padding
    Trace t = m.forward(in);
    const AttentionBlock* a = t.block(AttentionKind::DecoderSelf, 0);
    QVERIFY(!a->masked(0, 1, 0));  // the start token is seen
    QVERIFY(a->masked(0, 2, 2));   // the later pad id is padding
  }

  // A batch of sentences of different lengths: each sentence's attention equals what it gets alone
  // (padding is masked), and pad keys get exactly 0.
  void batchEqualsSingles() {
    auto cfg = ModelConfig::fromJson(tinyConfig(), "tiny");
    Model m(makeRandomModel(cfg, 5), makeCpuBackend());
    std::vector<int> a{1, 2, 3, 4}, b{1, 3};
    std::vector<int> ta{5, 1, 2}, tb{5, 1};
    Inputs both{{a, b}, {}, {ta, tb}}, one{{b}, {}, {tb}};
    Trace batch = m.forward(both);
    Trace single = m.forward(one);
    QCOMPARE(batch.src_len, 4);
    const AttentionBlock &bc = *batch.block(AttentionKind::Cross, 0),
                         &sc = *single.block(AttentionKind::Cross, 0);
    const AttentionBlock &be = *batch.block(AttentionKind::EncoderSelf, 0),
                         &se = *single.block(AttentionKind::EncoderSelf, 0);
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 2; ++j) {
          QVERIFY(std::abs(bc.prob(1, h, i, j) - sc.prob(0, h, i, j)) < 1e-5f);
          QVERIFY(std::abs(be.prob(1, h, i, j) - se.prob(0, h, i, j)) < 1e-5f);
        }
        QCOMPARE(bc.prob(1, h, i, 2), 0.0f);
        QCOMPARE(bc.prob(1, h, i, 3), 0.0f);
      }
    const int V = (int)cfg.tgt_vocab.size();
    for (int i = 0; i < 2; ++i)
      for (int v = 0; v < V; ++v)
        QVERIFY(std::abs(batch.logits.row(1, i)[v] - single.logits.row(0, i)[v]) < 1e-4f);
    // Whether a sentence has a masked cell, read from the rule, equals asking every cell: the
    // padded sentence's encoder and cross blocks do, the full one's encoder block does not, every
    // decoder self block does (look-ahead).
    for (const Trace* t : {&batch, &single})
      for (const AttentionBlock& blk : t->blocks)
        for (int b = 0; b < blk.batch; ++b) {
          bool any = false;
          for (int i = 0; i < blk.q_len; ++i)
            for (int j = 0; j < blk.k_len; ++j) any = any || blk.masked(b, i, j);
          QCOMPARE(blk.anyMasked(b), any);
        }
    QVERIFY(be.anyMasked(1));
    QVERIFY(!be.anyMasked(0));
    QVERIFY(batch.block(AttentionKind::DecoderSelf, 0)->anyMasked(0));
  }

  // Turning the subsequent mask off lets positions see the future (the GUI's leakage switch).
  void maskSwitches() {
    auto cfg = ModelConfig::fromJson(tinyConfig(), "tiny");
    Model m(makeRandomModel(cfg, 6), makeCpuBackend());
    ForwardOptions o;
    const Inputs in{{{1, 2, 3}}, {}, {{5, 1, 2, 3}}};
    Trace on = m.forward(in, o);
    QCOMPARE(on.block(AttentionKind::DecoderSelf, 0)->prob(0, 0, 0, 3), 0.0f);
    o.masks.subsequent = false;
    Trace off = m.forward(in, o);
    QVERIFY(off.block(AttentionKind::DecoderSelf, 0)->prob(0, 0, 0, 3) > 0.0f);
    QVERIFY(!off.block(AttentionKind::DecoderSelf, 0)->masked(0, 0, 3));
    // The first row can now see every position, so later layers' outputs change too.
    QVERIFY(off.logits.dense().data != on.logits.dense().data);
    // A decoding session without the subsequent mask reruns the decoder, and its trace is the
    // teacher-forced pass with the same masks, also after a step back.
    DecodingSession::Options so;
    so.masks = o.masks;
    DecodingSession s(m, {1, 2, 3}, {}, so);
    s.stepForward(1);
    s.stepForward(2);
    s.stepForward(3);
    QVERIFY(s.stepBack());
    QCOMPARE(s.length(), 3);
    const Trace full = m.forward({{{1, 2, 3}}, {}, {{5, 1, 2}}}, o);
    const AttentionBlock& got = *s.trace().block(AttentionKind::DecoderSelf, 0);
    const AttentionBlock& want = *full.block(AttentionKind::DecoderSelf, 0);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        QVERIFY(std::abs(got.prob(0, 1, i, j) - want.prob(0, 1, i, j)) < 1e-6f);
  }

  // An all-padding source under −∞ fill: fully masked rows are zeros and nothing becomes NaN.
  void fullyMaskedRowsNoNaN() {
    auto j = tinyConfig();
    j["family"] = "torch-seq2seq";
    j["src_bos_eos"] = false;
    auto cfg = ModelConfig::fromJson(j, "tiny");
    Model m(makeRandomModel(cfg, 7), makeCpuBackend());
    Trace t = m.forward({{{0, 0}}, {}, {{5, 1}}});
    for (float p : t.block(AttentionKind::Cross, 0)->denseProbs()) QCOMPARE(p, 0.0f);
    for (float v : t.logits.dense().data) QVERIFY(std::isfinite(v));
  }

  void traceMemoryLimit() {
    auto cfg = ModelConfig::fromJson(tinyConfig(), "tiny");
    Model m(makeRandomModel(cfg, 8), makeCpuBackend());
    ForwardOptions o;
    o.max_trace_bytes = 500;  // this pass needs more
    QCOMPARE(kindOf([&] {
               m.forward({{{1, 2, 3, 4}}, {}, {{5, 1, 2, 3}}}, o);
             }),
             ErrorKind::TooLarge);
    std::vector<int> longer(17, 1);  // max_len 16
    QCOMPARE(kindOf([&] { m.forward({{longer}, {}, {{5}}}); }), ErrorKind::BadInput);
  }

  // A long pass never holds a whole [n, n] matrix per head: on a backend that counts its buffers
  // (compute/memory_limit.h), 4,096 tokens through 8 heads (every head's scores would be 512 MiB)
  // peak at the pass's chunk of rows (Pass::kTileFloats) and the linear buffers, as the estimate
  // says; the kept trace is q, k and the row statistics.
  void longPassHoldsOneChunkOfScores() {
    nlohmann::json gpt = {{"family", "nanogpt"}, {"model", "GPT"},
                          {"d_model", 32},       {"d_ff", 64},
                          {"n_heads", 8},        {"n_layers", 2},
                          {"max_len", 4096},     {"vocab", {"a", "b", "c", "d"}}};
    const ModelConfig c = ModelConfig::fromJson(gpt, "gpt");
    auto limit = std::make_shared<MemoryLimit>(UINT64_MAX);
    Model m(makeRandomModel(c, 3), limitMemory(makeCpuBackend(), limit));
    const int n = 4096;
    std::vector<int> ids(n);
    for (int i = 0; i < n; ++i) ids[size_t(i)] = (i * 7 + i / 5) % 4;
    const uint64_t weights = limit->in_use;
    const Trace t = m.forward({{}, {}, {ids}});
    const uint64_t dense = uint64_t(8) * n * n * 4;  // one kind of matrix, every head of one layer
    const uint64_t pass = limit->peak - weights;
    QVERIFY2(pass < dense / 4, qPrintable(QString("the pass peaked at %1 bytes").arg(pass)));
    QVERIFY(pass >= uint64_t(Pass::kTileFloats) * 4);  // it did take a whole chunk of scores
    QVERIFY(pass <= m.estimatePassBytes(1, 0, n, ForwardOptions()));
    const AttentionBlock& a = *t.block(AttentionKind::DecoderSelf, 1);
    QVERIFY(a.bytes() < dense / 16);
    // What is kept still gives any row exactly: the last row sums to 1 over all 4,096 keys.
    const std::vector<float> row = a.probRow(0, 7, n - 1);
    QVERIFY(std::abs(std::accumulate(row.begin(), row.end(), 0.0) - 1.0) < 1e-4);
  }

  // A long input's logits go through one buffer of Pass::tokenHeadRows rows into the trace: every
  // row, in each chunk and at the seams, is the head's projection of that row's final hidden state
  // (hidden · Wᵀ + b, computed here in double).
  void longLogitsPassThroughOneBuffer() {
    std::vector<std::string> vocab;
    for (int i = 0; i < 4096; ++i) vocab.push_back("t" + std::to_string(i));
    nlohmann::json gpt = {{"family", "nanogpt"}, {"model", "GPT"}, {"d_model", 16},
                          {"d_ff", 32},          {"n_heads", 2},   {"n_layers", 1},
                          {"max_len", 2200},     {"vocab", vocab}};
    const ModelConfig c = ModelConfig::fromJson(gpt, "gpt");
    auto loaded = makeRandomModel(c, 5);
    Model m(loaded, makeCpuBackend());
    const int n = 2100, V = 4096, d = 16;
    const int chunk = Pass::tokenHeadRows(n, V);
    QVERIFY(chunk < n);  // two buffers' worth: 2048 rows, then 52
    std::vector<int> ids(n);
    for (int i = 0; i < n; ++i) ids[size_t(i)] = (i * 37 + i / 3) % V;
    const Trace t = m.forward({{}, {}, {ids}});
    QCOMPARE(t.logits.dense().dim(1), int64_t(n));
    const LinearWeights& head = loaded->weights.head.projection;
    for (int i : {0, 1, chunk - 1, chunk, chunk + 1, n - 1}) {
      const float* h = t.hidden.ptr() + (int64_t)i * d;
      const float* got = t.logits.row(0, i);
      for (int v = 0; v < V; v += 97) {
        double want = head.bias.empty() ? 0.0 : head.bias.data[size_t(v)];
        for (int x = 0; x < d; ++x) want += double(h[x]) * head.weight.data[size_t(v) * d + x];
        QVERIFY2(std::abs(got[v] - want) < 1e-4 * std::max(1.0, std::abs(want)),
                 qPrintable(
                     QString("row %1, token %2: %3, want %4").arg(i).arg(v).arg(got[v]).arg(want)));
      }
    }
  }

  // A run whose logits exceed ForwardOptions::kept_logits_bytes keeps, of every position, its
  // top tokens, its log-sum-exp and the logit of the token fed after it, and whole rows only at
  // the last position and those asked; they equal what the whole rows say (sorted and summed here,
  // in long double), and any other row computed again from the hidden state equals the pass's.
  void logitsBeyondTheBudgetKeepSummaries() {
    std::vector<std::string> vocab;
    for (int i = 0; i < 4096; ++i) vocab.push_back("t" + std::to_string(i));
    nlohmann::json gpt = {{"family", "nanogpt"}, {"model", "GPT"}, {"d_model", 16},
                          {"d_ff", 32},          {"n_heads", 2},   {"n_layers", 1},
                          {"max_len", 400},      {"vocab", vocab}};
    const ModelConfig c = ModelConfig::fromJson(gpt, "gpt");
    Model m(makeRandomModel(c, 7), makeCpuBackend());
    const int n = 300, V = 4096;
    std::vector<int> ids(n);
    for (int i = 0; i < n; ++i) ids[size_t(i)] = (i * 53 + i / 5) % V;
    const Trace whole = m.forward({{}, {}, {ids}});
    QVERIFY(whole.logits.allKept());
    ForwardOptions o;
    o.kept_logits_bytes = 0;
    o.keep_logits_at = {17};
    const Trace part = m.forward({{}, {}, {ids}}, o);
    QVERIFY(!part.logits.allKept());
    QVERIFY(part.logits.kept(0, n - 1) && part.logits.kept(0, 17));
    QVERIFY(!part.logits.kept(0, 0) && !part.logits.kept(0, 200) && !part.logits.row(0, 16));
    QVERIFY2(
        part.logits.bytes() * 20 < whole.logits.bytes(),
        qPrintable(
            QString("%1 bytes kept of %2").arg(part.logits.bytes()).arg(whole.logits.bytes())));
    QVERIFY(m.estimatePassBytes(1, 0, n, o) < m.estimatePassBytes(1, 0, n, {}));
    QVERIFY(test::caught([&] { (void)part.logits.dense(); }));
    for (int i : {0, 1, 16, 17, 150, n - 2, n - 1}) {
      const float* w = whole.logits.row(0, i);
      std::vector<int> order(static_cast<size_t>(V));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return w[a] > w[b]; });
      const auto top = part.logits.top(0, i, TokenLogits::kTop);
      QCOMPARE(int(top.size()), TokenLogits::kTop);
      for (int k = 0; k < TokenLogits::kTop; ++k) {
        QCOMPARE(top[size_t(k)].first, order[size_t(k)]);
        QCOMPARE(top[size_t(k)].second, w[order[size_t(k)]]);
      }
      long double sum = 0;
      for (int v = 0; v < V; ++v) sum += std::exp((long double)w[v] - w[order[0]]);
      const double lse = double(w[order[0]] + std::log(sum));
      QVERIFY2(std::abs(part.logits.logSumExp(0, i) - lse) < 1e-9 * std::max(1.0, std::abs(lse)),
               qPrintable(QString("position %1: %2, want %3")
                              .arg(i)
                              .arg(part.logits.logSumExp(0, i))
                              .arg(lse)));
      const auto probs = part.logits.topProbabilities(0, i, 3);
      QVERIFY(std::abs(probs[0].second - std::exp(double(w[order[0]]) - lse)) < 1e-6);
      float got = 0;
      if (i + 1 < n) {
        QVERIFY(part.logits.logitOf(0, i, ids[size_t(i) + 1], &got));
        QCOMPARE(got, w[ids[size_t(i) + 1]]);
      }
      const bool kept = part.logits.kept(0, i);
      QCOMPARE(part.logits.logitOf(0, i, order[size_t(V) - 1], &got),
               kept || (i + 1 < n && ids[size_t(i) + 1] == order[size_t(V) - 1]));
      const std::vector<float> again = logitsRow(m, part, 0, i);
      QCOMPARE(int(again.size()), V);
      for (int v = 0; v < V; ++v)
        QVERIFY2(std::abs(again[size_t(v)] - w[v]) <= 1e-5f * std::max(1.0f, std::abs(w[v])),
                 qPrintable(QString("position %1, token %2: %3, the pass %4")
                                .arg(i)
                                .arg(v)
                                .arg(again[size_t(v)])
                                .arg(w[v])));
    }
    // More than the summary holds of a row not kept is refused, naming what is kept.
    const std::optional<Error> e =
        test::caught([&] { (void)part.logits.top(0, 0, TokenLogits::kTop + 1); });
    QVERIFY(e && std::string(e->what()).find("keeps its 50 highest logits") != std::string::npos);
    QCOMPARE(int(whole.logits.top(0, 0, 60).size()), 60);  // a kept row answers any k
  }

  // A computed position table is bounded by its bytes, not by a count of rows: a rotary model of
  // 32,768 positions takes them all (32,768 × 64 angles, 8 MiB), a sinusoid 65,536 wide takes as
  // many as 128 MiB hold, and the model says why it stops there.
  void positionTableRowsByBytes() {
    ModelConfig c = ModelConfig::fromJson(tinyConfig(), "tiny");
    c.positional = Positional::Rotary;
    c.max_len = 32768;
    c.d_k = 64;
    c.rotary_pct = 1.0f;
    QCOMPARE(c.positionRows(), 32768);
    c.positional = Positional::Sinusoidal;
    c.d_model = 65536;
    QCOMPARE(c.positionRows(), int((uint64_t(128) << 20) / 4 / 65536));
    c.positional = Positional::Learned;
    QCOMPARE(c.positionRows(), 32768);
    ModelConfig small = ModelConfig::fromJson(tinyConfig(), "tiny");
    small.max_len = 20000;
    Model m(makeRandomModel(small, 3), makeCpuBackend());
    QCOMPARE(m.maxPositions(), small.positionRows());
    QCOMPARE(m.maxPositions(), 20000);
    QCOMPARE(m.limitReason(), std::string(" (max_len)"));
  }

  // TokenLogits by hand: ties go to the lower id, NaNs are passed over and counted, rows kept
  // later, appended and truncated stay in order.
  void tokenLogitsByHand() {
    const float nan = std::numeric_limits<float>::quiet_NaN(),
                inf = std::numeric_limits<float>::infinity();
    const std::vector<float> rows{1, 3, 3, 0, 2, nan, -1, 4, 4, -inf};
    TokenLogits l(1, 2, 5);
    const std::vector<int> next{4, -1};
    l.add(0, 2, rows.data(), next.data(), nullptr);
    QVERIFY(!l.kept(0, 0) && !l.kept(0, 1) && !l.allKept());
    using Top = std::vector<std::pair<int, float>>;
    QCOMPARE(l.top(0, 0, 3), (Top{{1, 3.0f}, {2, 3.0f}, {4, 2.0f}}));
    QCOMPARE(l.top(0, 1, 3), (Top{{2, 4.0f}, {3, 4.0f}, {1, -1.0f}}));
    QVERIFY(!l.hasNaN(0, 0) && l.hasNaN(0, 1));
    QCOMPARE(l.nonFinite(), (std::array<int64_t, 3>{1, 0, 1}));
    const double lse0 = std::log(std::exp(1.0) + 2 * std::exp(3.0) + 1 + std::exp(2.0));
    QVERIFY(std::abs(l.logSumExp(0, 0) - lse0) < 1e-12);
    float got = 0;
    QVERIFY(l.logitOf(0, 0, 4, &got) && got == 2.0f);  // the next token (and in the top)
    QVERIFY(l.logitOf(0, 0, 3, &got) && got == 0.0f);  // the top holds all 5 of them
    l.keepRow(0, 1, rows.data() + 5);
    QVERIFY(l.kept(0, 1) && !l.kept(0, 0));
    QCOMPARE(l.row(0, 1)[2], 4.0f);
    l.keepRow(0, 0, rows.data());  // before the kept one: the order stays
    QVERIFY(l.allKept());
    QCOMPARE(l.dense().shape, (Shape{1, 2, 5}));
    QCOMPARE(l.row(0, 0)[1], 3.0f);
    QCOMPARE(l.row(0, 1)[3], 4.0f);
    TokenLogits more(1, 1, 5);
    const std::vector<float> third{5, 0, 0, 0, 0};
    const uint8_t keep = 1;
    more.add(0, 1, third.data(), nullptr, &keep);
    const uint64_t two = l.bytes();
    l.append(std::move(more));
    QCOMPARE(l.positions(), 3);
    QVERIFY(l.allKept());
    QCOMPARE(l.row(0, 2)[0], 5.0f);
    QCOMPARE(l.top(0, 2, 1), (Top{{0, 5.0f}}));
    l.truncate(2);
    QCOMPARE(l.positions(), 2);
    QCOMPARE(l.bytes(), two);
    QCOMPARE(l.row(0, 1)[2], 4.0f);
    QVERIFY(test::caught([&] { (void)l.top(0, 2, 1); }));  // past the end: refused, not read
  }

  // The default limit is the machine's: the memory it has available now (/proc/meminfo's
  // MemAvailable), less a reserve; a batch larger than that is refused with the figures, before
  // anything is allocated.
  void passLimitIsTheMachinesMemory() {
    auto cfg = ModelConfig::fromJson(tinyConfig(), "tiny");
    Model m(makeRandomModel(cfg, 8), makeCpuBackend());
    const uint64_t available = availableHostBytes();
    if (available == 0) QSKIP("this system does not say how much memory is available");
    std::string why;
    const uint64_t limit = passMemoryLimit(0, &why);
    QVERIFY(limit < available && limit >= available / 8 * 7 - (uint64_t(64) << 20));
    QVERIFY2(why.find("available now") != std::string::npos, why.c_str());
    QCOMPARE(passMemoryLimit(12345), uint64_t(12345));
    ForwardOptions o;  // max_trace_bytes 0: the machine's
    int batch = 1;
    while (batch < (1 << 30) && m.estimatePassBytes(batch, 4, 4, o) <= limit) batch *= 2;
    QVERIFY(m.estimatePassBytes(batch, 4, 4, o) > limit);
    const std::optional<Error> e = test::caught([&] { m.checkPassSize(batch, 4, 4, o); });
    QVERIFY2(e, "a pass above the machine's memory was not refused");
    QCOMPARE(e->kind(), ErrorKind::TooLarge);
    const std::string msg = e->what();
    QVERIFY2(msg.find("of memory available now") != std::string::npos &&
                 msg.find("close programs") != std::string::npos,
             msg.c_str());
    m.checkPassSize(1, 4, 4, o);  // a small one fits
  }

  void cancelBetweenLayers() {
    auto cfg = ModelConfig::fromJson(tinyConfig(), "tiny");
    Model m(makeRandomModel(cfg, 9), makeCpuBackend());
    std::atomic<bool> cancel{true};
    ForwardOptions o;
    o.cancel = &cancel;
    const Inputs in{{{1}}, {}, {{5}}};
    QCOMPARE(kindOf([&] { m.forward(in, o); }), ErrorKind::Cancelled);
    int calls = 0;
    o.cancel = nullptr;
    o.progress = [&](int done, int total) {
      ++calls;
      QVERIFY(done <= total);
    };
    m.forward(in, o);
    QCOMPARE(calls, 2);
  }

  // The one length rule: at most max_new_tokens ids after the prefix, never past max_len.
  void decodeLengthRule() {
    auto j = tinyConfig();
    j["max_len"] = 6;
    auto cfg = ModelConfig::fromJson(j, "tiny");
    Model m(makeRandomModel(cfg, 10), makeCpuBackend());
    QCOMPARE(decodeLimit(m, 1, 3), 3);    // BOS + 2 fed + the last choice = 3 ids
    QCOMPARE(decodeLimit(m, 1, 100), 6);  // clamped to max_len
    QCOMPARE(defaultMaxNewTokens(4), 9);  // the source length + 5, as PyTorch's tutorial
    QCOMPARE(defaultMaxNewTokens(0), 50);
    // Decoding always ends within the limits, at the end token or at the length.
    for (int n : {1, 2, 3, 50}) {
      const std::vector<int> out = greedyDecode(m, {1, 2}, n);
      QVERIFY((int)out.size() <= std::min(n, 6));
      QVERIFY(!out.empty());
    }
  }

  // .npy header: magic, version 1.0, a dict with descr/shape, padded to a multiple of 64 bytes.
  void npyFormat() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("a.npy").toStdString();
    std::vector<float> data{1, 2, 3, 4, 5, 6};
    writeNpy(path, data.data(), {2, 3});
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    QCOMPARE(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    const size_t hlen = (unsigned char)bytes[8] | ((unsigned char)bytes[9] << 8);
    QCOMPARE((10 + hlen) % 64, size_t(0));
    const std::string header = bytes.substr(10, hlen);
    QVERIFY(header.find("'descr': '<f4'") != std::string::npos);
    QVERIFY(header.find("'shape': (2, 3)") != std::string::npos);
    QCOMPARE(bytes.size(), 10 + hlen + 24);
    float last;
    std::memcpy(&last, bytes.data() + bytes.size() - 4, 4);
    QCOMPARE(last, 6.0f);
  }
};

QTEST_GUILESS_MAIN(TestCore)
#include "test_core.moc"

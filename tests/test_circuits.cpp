// Circuit scores (model/circuits.h): the induction score of a hand-built induction head (a
// 2-layer attention-only decoder whose weights are written here: a previous-token head, then a
// head whose keys read what it wrote — K-composition) and of a uniform head, against the values
// computed here from the same sequences; the eigenvalue solver and copying score on matrices whose
// eigenvalues are known by hand; an attention-only model (d_ff 0) whose backward agrees with
// finite differences of its loss; the induction recipe's model saved and read back, checkpoints
// kept and their history; and PNG / APNG files decoded again with zlib.
#include <zlib.h>

#include <QTemporaryDir>
#include <QtTest>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "arch/weights.h"
#include "arch/writer.h"
#include "base/error.h"
#include "base/png.h"
#include "compute/cpu_backend.h"
#include "model/circuits.h"
#include "model/model.h"
#include "test_support.h"
#include "train/history.h"
#include "train/history_figures.h"
#include "train/trainer.h"
#include "train/training.h"

using namespace attnviz;

namespace {

// The hand-built model. Residual stream layout (d_model = 2·V + P, rounded up to even):
//   [0, V)         the token, one-hot
//   [V, V + P)     the position, one-hot (learned positions)
//   [V + P, 2V+P)  the previous token, one-hot: written by layer 1's head 0
// Norms are RMSNorm without weights (identity affine): every position's vector has the same norm
// at each layer (two ones, then two ones plus the copied token), so the norm only scales.
struct HandBuilt {
  int V = 0, P = 0, d = 0, dk = 0;
  std::shared_ptr<LoadedModel> loaded;
};

constexpr int kSymbols = 100;    // ordinary tokens
constexpr float kSharp = 40.0f;  // how hard the hand-built heads attend

HandBuilt handBuiltInduction(int length) {
  HandBuilt m;
  std::vector<std::string> vocab = {"<pad>", "<bos>"};
  for (int i = 0; i < kSymbols; ++i) vocab.push_back("t" + std::to_string(i));
  m.V = (int)vocab.size();
  m.P = 2 * length + 1;
  m.d = 2 * m.V + m.P + ((2 * m.V + m.P) % 2);
  m.dk = m.d / 2;  // two heads splitting d_model (the GPT families)
  nlohmann::json j = {{"family", "nanogpt"},
                      {"model", "GPT"},
                      {"d_model", m.d},
                      {"n_heads", 2},
                      {"d_ff", 0},
                      {"n_layers", 2},
                      {"vocab", vocab},
                      {"pad_id", 0},
                      {"bos_id", 1},
                      {"norm", "pre"},
                      {"norm_kind", "rmsnorm"},
                      {"final_norm", false},
                      {"positional", "learned"},
                      {"max_len", m.P},
                      {"attn_bias", false},
                      {"proj_bias", false}};
  auto loaded = std::make_shared<LoadedModel>();
  loaded->config = ModelConfig::fromJson(j, "the hand-built induction model");
  const int d = m.d, V = m.V, P = m.P, dk = m.dk;
  ModelWeights& w = loaded->weights;
  w.decoder.embed.tokens = Tensor({V, d});
  for (int t = 0; t < V; ++t) w.decoder.embed.tokens.data[(size_t)t * d + t] = 1;
  w.decoder.embed.positions = Tensor({P, d});
  for (int p = 0; p < P; ++p) w.decoder.embed.positions.data[(size_t)p * d + V + p] = 1;
  auto zeros = [](int out, int in) { return LinearWeights{Tensor({out, in}), Tensor()}; };
  auto set = [&](LinearWeights& l, int row, int col, float v) {
    l.weight.data[(size_t)row * l.weight.dim(1) + col] = v;
  };
  // The scale of the normalised stream: RMSNorm(x) = x / rms(x); scores are divided by √d_k.
  const float sharp = kSharp * std::sqrt((float)dk);
  for (int l = 0; l < 2; ++l) {
    LayerWeights e;
    AttentionWeights& a = e.self_attn;
    a.q = zeros(2 * dk, d);
    a.k = zeros(2 * dk, d);
    a.v = zeros(2 * dk, d);
    a.out = zeros(d, 2 * dk);
    if (l == 0) {
      // Head 0, previous token: the query of position p is e_p, the key of position p is e_{p+1};
      // they meet where key = query − 1. Its value is the token, written to the previous-token
      // subspace.
      for (int p = 0; p < P; ++p) set(a.q, p, V + p, 1);
      for (int p = 0; p + 1 < P; ++p) set(a.k, p + 1, V + p, 1);
      for (int t = 0; t < V; ++t) {
        set(a.v, t, t, 1);
        set(a.out, V + P + t, t, 1);
      }
    } else {
      // Head 0, induction: the query is the current token, the key the previous token (layer 1's
      // output): they meet at the position after an earlier occurrence of the current token.
      // Head 1 has zero queries and keys: uniform attention.
      for (int t = 0; t < V; ++t) {
        set(a.q, t, t, 1);
        set(a.k, t, V + P + t, 1);
      }
    }
    // Make the matching scores large: only the queries are scaled.
    for (float& v : a.q.weight.data) v *= sharp;
    w.decoder.layers.push_back(std::move(e));
  }
  w.head.projection = zeros(V, d);
  for (int t = 0; t < V; ++t) set(w.head.projection, t, t, 1);
  m.loaded = loaded;
  return m;
}

// The score an exactly hard induction head gets on these sequences: query i of the second copy
// spreads its attention evenly over the keys j ≤ i whose previous token is the current token.
double idealInduction(const RepeatedSequences& r) {
  double sum = 0;
  int n = 0;
  const int o = r.offset, L = r.length;
  for (const auto& s : r.ids)
    for (int i = o + L; i < o + 2 * L; ++i) {
      int matches = 0;
      for (int j = 1; j <= i; ++j) matches += s[(size_t)j - 1] == s[(size_t)i];
      sum += 1.0 / matches;
      ++n;
    }
  return sum / n;
}

const HeadScore& scoreOf(const std::vector<HeadScore>& s, int layer, int head) {
  for (const HeadScore& x : s)
    if (x.layer == layer && x.head == head) return x;
  throw Error(ErrorKind::BadInput, "no such head");
}

std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, int n) {
  std::vector<double> c((size_t)n * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k)
      for (int j = 0; j < n; ++j)
        c[(size_t)i * n + j] += a[(size_t)i * n + k] * b[(size_t)k * n + j];
  return c;
}

}  // namespace

class TestCircuits : public QObject {
  Q_OBJECT

 private slots:
  void handBuiltInductionHead() {
    const int L = 10;
    HandBuilt m = handBuiltInduction(L);
    Model model(m.loaded, makeCpuBackend());
    InductionOptions o;
    o.sequences = 16;
    o.length = L;
    o.seed = 7;
    const RepeatedSequences r = repeatedSequences(model, Side::Target, o);
    QCOMPARE(r.offset, 1);
    QCOMPARE(r.length, L);
    const std::vector<HeadScore> s = inductionScores(model, o);
    QCOMPARE((int)s.size(), 4);
    const double ideal = idealInduction(r);
    const double induction = scoreOf(s, 1, 0).value;
    qInfo("hand-built induction head: %.4f (an exactly hard head on these sequences: %.4f)",
          induction, ideal);
    // The softmax leaves each wrong key e^(−40·c) of a right one (c ≥ 1 the normalisation's
    // scale): the score is the hard head's to 1e-3.
    QVERIFY(std::abs(induction - ideal) < 1e-3);
    QVERIFY(induction >= 0.9);
    // The uniform head: p(i, j) = 1/(i + 1) over the i + 1 keys a causal row has, so its score is
    // the mean of 1/(i + 1) over the second copy's rows i = o + L … o + 2L − 1 —
    // at most 1/(o + L + 1) = 1/12 here.
    double uniform = 0;
    for (int i = 1 + L; i < 1 + 2 * L; ++i) uniform += 1.0 / (i + 1) / L;
    QVERIFY(std::abs(scoreOf(s, 1, 1).value - uniform) < 1e-6);
    QVERIFY(scoreOf(s, 1, 1).value <= 1.0 / (1 + L + 1));
    // The previous-token head attends to i − 1, never to i − L + 1.
    QVERIFY(scoreOf(s, 0, 0).value < 1e-3);
    // The same seed draws the same sequences; another seed others.
    QCOMPARE(repeatedSequences(model, Side::Target, o).ids, r.ids);
    InductionOptions other = o;
    other.seed = 8;
    QVERIFY(repeatedSequences(model, Side::Target, other).ids != r.ids);
    // No special token is drawn.
    for (const auto& seq : r.ids)
      for (size_t i = 1; i < seq.size(); ++i) QVERIFY(seq[i] >= 2);
  }

  void inductionRefusals() {
    HandBuilt m = handBuiltInduction(3);  // 7 positions: L shortened to 3
    Model model(m.loaded, makeCpuBackend());
    InductionOptions o;
    o.length = 50;
    QCOMPARE(repeatedSequences(model, Side::Target, o).length, 3);
    o.length = 1;
    auto e = test::caught([&] { inductionScores(model, o); });
    QVERIFY(e && e->kind() == ErrorKind::BadInput);
    o.length = 4;
    o.sequences = 0;
    e = test::caught([&] { inductionScores(model, o); });
    QVERIFY(e && e->kind() == ErrorKind::BadInput);
    // Cancel: both scores stop with Error(Cancelled).
    std::atomic<bool> cancel{true};
    o.sequences = 2;
    o.cancel = &cancel;
    e = test::caught([&] { inductionScores(model, o); });
    QVERIFY(e && e->kind() == ErrorKind::Cancelled);
    e = test::caught([&] { copyingScores(model, &cancel); });
    QVERIFY(e && e->kind() == ErrorKind::Cancelled);
  }

  void eigenvaluesKnownByHand() {
    // A triangular matrix has its diagonal as eigenvalues; S·T·S⁻¹ has the same. S is a random
    // matrix with a known inverse: S = I + N with N strictly upper triangular (S⁻¹ by
    // back-substitution), times a permutation to mix rows.
    const int n = 7;
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> T((size_t)n * n, 0.0), S((size_t)n * n, 0.0), Si((size_t)n * n, 0.0);
    const double diag[n] = {3, -2, 0.5, 0.5, -1.25, 4, 0};
    for (int i = 0; i < n; ++i) {
      T[(size_t)i * n + i] = diag[i];
      for (int j = i + 1; j < n; ++j) T[(size_t)i * n + j] = u(rng);
    }
    for (int i = 0; i < n; ++i) {
      S[(size_t)i * n + i] = 1;
      for (int j = i + 1; j < n; ++j) S[(size_t)i * n + j] = u(rng);
    }
    for (int col = 0; col < n; ++col)  // solve S x = e_col, upward
      for (int i = n - 1; i >= 0; --i) {
        double x = i == col ? 1 : 0;
        for (int j = i + 1; j < n; ++j) x -= S[(size_t)i * n + j] * Si[(size_t)j * n + col];
        Si[(size_t)i * n + col] = x;
      }
    std::vector<double> A = matmul(matmul(S, T, n), Si, n);
    // A permutation similarity (reverse the order of rows and columns) makes A far from
    // triangular.
    std::vector<double> B((size_t)n * n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) B[(size_t)i * n + j] = A[(size_t)(n - 1 - i) * n + (n - 1 - j)];
    auto w = eigenvalues(B, n);
    std::vector<double> re;
    for (auto [r, i] : w) {
      QVERIFY(std::abs(i) < 1e-8);
      re.push_back(r);
    }
    std::sort(re.begin(), re.end());
    std::vector<double> want(diag, diag + n);
    std::sort(want.begin(), want.end());
    for (int i = 0; i < n; ++i)
      QVERIFY2(std::abs(re[(size_t)i] - want[(size_t)i]) < 1e-8,
               qPrintable(QString::number(re[(size_t)i])));
    // A rotation by θ in a plane: e^{±iθ}; with a 1 beside it.
    const double th = 0.7;
    std::vector<double> R = {
        std::cos(th), -std::sin(th), 0, std::sin(th), std::cos(th), 0, 0, 0, 1};
    auto wr = eigenvalues(R, 3);
    int complex = 0;
    for (auto [r, i] : wr) {
      if (std::abs(i) > 1e-9) {
        ++complex;
        QVERIFY(std::abs(r - std::cos(th)) < 1e-12 && std::abs(std::abs(i) - std::sin(th)) < 1e-12);
      } else {
        QVERIFY(std::abs(r - 1) < 1e-12);
      }
    }
    QCOMPARE(complex, 2);
  }

  void copyingScoreByHand() {
    const int n = 5;
    std::vector<double> I((size_t)n * n, 0.0);
    for (int i = 0; i < n; ++i) I[(size_t)i * n + i] = 1;
    QVERIFY(std::abs(copyingScoreOf(I, n) - 1) < 1e-12);
    std::vector<double> minus = I;
    for (double& v : minus) v = -v;
    QVERIFY(std::abs(copyingScoreOf(minus, n) + 1) < 1e-12);
    // A rotation by θ: Σλ = 2cos θ, Σ|λ| = 2.
    const double th = 1.1;
    std::vector<double> R = {std::cos(th), -std::sin(th), std::sin(th), std::cos(th)};
    QVERIFY(std::abs(copyingScoreOf(R, 2) - std::cos(th)) < 1e-12);
    // diag(2, −1, 0): (2 − 1) / 3.
    QVERIFY(std::abs(copyingScoreOf({2, 0, 0, 0, -1, 0, 0, 0, 0}, 3) - 1.0 / 3) < 1e-12);
    QVERIFY(std::isnan(copyingScoreOf(std::vector<double>(4, 0.0), 2)));
  }

  void copyingScoresOfHeads() {
    // The hand-built model's OV circuits, token → logits: layer 1 head 0 reads the token and
    // writes it to the previous-token subspace, which W_U does not read: W_U·W_O·W_V·W_Eᵀ = 0
    // (NaN). Rewire layer 2's head 1 to copy (value = token, output = token) and then to
    // anti-copy, and compare with the scores the definition gives by hand.
    const int L = 4;
    HandBuilt m = handBuiltInduction(L);
    auto setOv = [&](float sign) {
      AttentionWeights& a = m.loaded->weights.decoder.layers[1].self_attn;
      std::fill(a.v.weight.data.begin(), a.v.weight.data.end(), 0.0f);
      std::fill(a.out.weight.data.begin(), a.out.weight.data.end(), 0.0f);
      // Head 1's value rows are [dk, 2dk); its output columns the same.
      for (int t = 0; t < m.V; ++t) {
        a.v.weight.data[(size_t)(m.dk + t) * m.d + t] = 1;
        a.out.weight.data[(size_t)t * 2 * m.dk + m.dk + t] = sign;
      }
    };
    setOv(1);
    {
      Model model(m.loaded, makeCpuBackend());
      const auto s = copyingScores(model);
      QCOMPARE((int)s.size(), 4);
      QVERIFY(std::isnan(scoreOf(s, 0, 0).value));
      QVERIFY(std::abs(scoreOf(s, 1, 1).value - 1) < 1e-9);  // the identity on V of its dk dims
    }
    setOv(-1);
    {
      Model model(m.loaded, makeCpuBackend());
      QVERIFY(std::abs(scoreOf(copyingScores(model), 1, 1).value + 1) < 1e-9);
    }
  }

  void attentionOnlyGradients() {
    // An attention-only decoder (d_ff 0) with random weights: its backward's gradient of the loss
    // against central finite differences, on a few parameters of every kind.
    std::vector<std::string> vocab;
    for (int i = 0; i < 12; ++i) vocab.push_back("w" + std::to_string(i));
    nlohmann::json j = {{"family", "nanogpt"}, {"model", "GPT"}, {"d_model", 16},  {"n_heads", 2},
                        {"d_ff", 0},           {"n_layers", 2},  {"vocab", vocab}, {"max_len", 16}};
    ModelConfig c = ModelConfig::fromJson(j, "the attention-only test model");
    QCOMPARE(c.d_ff, 0);
    auto random = makeRandomModel(c, 11);
    QVERIFY(random->weights.decoder.layers[0].ffn.fc1.weight.empty());
    Model model(random, makeCpuBackend());
    Training training(model);
    Inputs in;
    in.tgt = {{1, 5, 7, 2, 9, 3}, {4, 4, 8, 0, 11, 6}};
    Targets targets;
    targets.tokens = {{5, 7, 2, 9, 3, 1}, {4, 8, 0, 11, 6, 2}};
    training.zeroGradients();
    const double loss = training.forwardBackward(in, targets).loss;
    QVERIFY(std::isfinite(loss));
    const int64_t n = training.parameterCount();
    std::vector<float> grads(training.gradients(), training.gradients() + n);
    float* params = training.parameters();
    auto lossAt = [&]() {
      training.zeroGradients();
      return training.forwardBackward(in, targets).loss;
    };
    int checked = 0;
    for (int64_t k = 0; k < n; k += std::max<int64_t>(1, n / 60)) {
      const float keep = params[k];
      const float h = 1e-2f;
      params[k] = keep + h;
      const double up = lossAt();
      params[k] = keep - h;
      const double down = lossAt();
      params[k] = keep;
      const double fd = (up - down) / (2 * h);
      // float32 losses: differences of 1e-2 steps agree to ~1e-3 of the loss's scale.
      QVERIFY2(std::abs(fd - grads[(size_t)k]) < 2e-3 + 2e-2 * std::abs(fd),
               qPrintable(QString("parameter %1: backward %2, finite differences %3")
                              .arg(k)
                              .arg(grads[(size_t)k])
                              .arg(fd)));
      ++checked;
    }
    QVERIFY(checked >= 50);
  }
};

namespace {

uint32_t be32(const std::string& s, size_t at) {
  return (uint32_t)(uint8_t)s[at] << 24 | (uint32_t)(uint8_t)s[at + 1] << 16 |
         (uint32_t)(uint8_t)s[at + 2] << 8 | (uint32_t)(uint8_t)s[at + 3];
}

// The chunks of a PNG file, each CRC checked with zlib's crc32 (an implementation of its own).
std::vector<std::pair<std::string, std::string>> pngChunks(const std::string& png) {
  std::vector<std::pair<std::string, std::string>> out;
  if (png.compare(0, 8, std::string("\x89PNG\r\n\x1a\n", 8)) != 0) return out;
  size_t at = 8;
  while (at + 12 <= png.size()) {
    const uint32_t len = be32(png, at);
    const std::string body = png.substr(at + 4, 4 + len);
    const uint32_t crc = (uint32_t)crc32(0, (const Bytef*)body.data(), (uInt)body.size());
    if (crc != be32(png, at + 8 + len)) return {};
    out.push_back({body.substr(0, 4), body.substr(4)});
    at += 12 + len;
  }
  return out;
}

// The RGBA pixels of zlib data of filter 0 / 1 rows, undone here.
std::vector<uint8_t> unfiltered(const std::string& z, int w, int h) {
  std::vector<uint8_t> raw((size_t)(w * 4 + 1) * h);
  uLongf n = raw.size();
  if (uncompress(raw.data(), &n, (const Bytef*)z.data(), (uLong)z.size()) != Z_OK ||
      n != raw.size())
    return {};
  std::vector<uint8_t> px;
  for (int y = 0; y < h; ++y) {
    const uint8_t* r = raw.data() + (size_t)y * (w * 4 + 1);
    const size_t start = px.size();
    for (int i = 0; i < w * 4; ++i) {
      uint8_t v = r[1 + i];
      if (r[0] == 1 && i >= 4) v = (uint8_t)(v + px[start + i - 4]);
      px.push_back(v);
    }
  }
  return px;
}

}  // namespace

class TestRecipe : public QObject {
  Q_OBJECT

 private slots:
  void languageModelSavedAndRead() {
    TrainConfig tc;
    tc.task = "induction";
    tc.preset = "attn-only-2l";
    tc.steps = 3;
    tc.batch = 8;
    Trainer t(tc, makeCpuBackend());
    QVERIFY(t.task().decoderOnly());
    QCOMPARE(t.model().config().d_ff, 0);
    QCOMPARE(t.model().config().n_decoder_layers, 2);
    QVERIFY(!t.model().config().hasEncoder());
    // The config's count (attention, its norms and biases only) is the model's, less the output
    // projection the config counts on its own and the model shares with the token table.
    const ModelConfig& c = t.model().config();
    QCOMPARE(t.model().parameterCount(),
             c.parameterCount() - (int64_t)c.tgt_vocab.size() * c.d_model);
    for (int i = 0; i < 3; ++i) QVERIFY(std::isfinite(t.step().loss));
    QTemporaryDir dir;
    const std::string path = dir.filePath("m.safetensors").toStdString();
    saveModel(*t.snapshot(), path);
    Model back(loadModel(path), makeCpuBackend());
    QCOMPARE(back.config().d_ff, 0);
    Inputs in;
    in.tgt = {{Task::kBos, 5, 9, 12, 5, 9, 12}};
    const Trace a = t.model().forward(in), b = back.forward(in);
    QCOMPARE(a.logits.dense().data, b.logits.dense().data);
    // A sequence-to-sequence task refuses the decoder-only size.
    TrainConfig bad = tc;
    bad.task = "reverse";
    auto e = test::caught([&] { Trainer x(bad, makeCpuBackend()); });
    QVERIFY(e && e->kind() == ErrorKind::Usage);
  }

  void checkpointsAndHistory() {
    TrainConfig tc;
    tc.task = "induction";
    tc.task_options.max_len = 6;
    tc.preset = "attn-only-2l";
    tc.steps = 5;
    tc.batch = 8;
    tc.seed = 3;
    QTemporaryDir dir;
    const std::string keep = dir.filePath("ck").toStdString();
    Trainer t(tc, makeCpuBackend());
    KeepPlan plan;
    plan.every = 2;  // 0, 2, 4 and the last, 5
    CheckpointKeeper keeper(keep, tc, plan);
    QVERIFY(keeper.keep(t, std::nan("")));
    std::vector<double> losses;
    for (int i = 0; i < tc.steps; ++i) {
      const double loss = t.step().loss;
      if (keeper.keep(t, loss)) losses.push_back(loss);
    }
    const CheckpointIndex x = readCheckpointIndex(keep);
    QCOMPARE((int)x.checkpoints.size(), 4);
    const int want[] = {0, 2, 4, 5};
    for (int i = 0; i < 4; ++i) {
      QCOMPARE(x.checkpoints[(size_t)i].step, want[i]);
      QVERIFY(std::filesystem::exists(std::filesystem::path(keep) / x.checkpoints[(size_t)i].file));
    }
    QVERIFY(std::isnan(x.checkpoints[0].loss));
    QCOMPARE(x.checkpoints[1].loss, losses[0]);
    QCOMPARE(x.task, std::string("induction"));
    QCOMPARE(x.seed, (uint64_t)3);
    QCOMPARE(x.task_options.max_len, 6);
    // No temporary file is left beside them.
    int files = 0;
    for (const auto& f : std::filesystem::directory_iterator(keep)) {
      (void)f;
      ++files;
    }
    QCOMPARE(files, 5);

    HistoryOptions o;
    o.probes = 4;
    o.induction.length = 6;
    const TrainingHistory h = readTrainingHistory(keep, o);
    QCOMPARE((int)h.points.size(), 4);
    // The last point is the trainer's model now: its scores are the ones computed directly.
    const auto direct = inductionScores(t.model(), o.induction);
    QCOMPARE((int)h.points.back().induction.size(), 8);
    for (size_t k = 0; k < direct.size(); ++k)
      QVERIFY(std::abs(direct[k].value - h.points.back().induction[k].value) < 1e-6);
    // One loss per target position of the longest probe (its symbols and <eos>).
    size_t longest = 0;
    const auto task = makeTask("induction", tc.task_options);
    for (int i = 0; i < 4; ++i) longest = std::max(longest, task->heldOut()[(size_t)i].tgt.size());
    const int positions = (int)longest + 1;
    QCOMPARE((int)h.points.front().position_loss.size(), positions);
    for (double l : h.points.front().position_loss) QVERIFY(l > 0 && std::isfinite(l));
    // CSV: a header, then (2 circuit scores + 10 statistics) × 8 heads per checkpoint.
    const std::string csv = historyHeadCsv(h);
    QCOMPARE((int)std::count(csv.begin(), csv.end(), '\n'), 1 + 4 * 12 * 8);
    QVERIFY(csv.rfind("step,block,layer,head,statistic,value\r\n", 0) == 0);
    QVERIFY(csv.find("\r\n5,dec_self,2,4,induction,") != std::string::npos);
    const std::string loss_csv = historyLossCsv(h);
    QCOMPARE((int)std::count(loss_csv.begin(), loss_csv.end(), '\n'), 1 + 4 * positions);

    // A folder without an index, and a malformed index.
    auto e = test::caught([&] { readCheckpointIndex(dir.path().toStdString()); });
    QVERIFY(e && e->kind() == ErrorKind::Io);
    std::ofstream(dir.filePath("index.json").toStdString()) << R"({"format": "other"})";
    e = test::caught([&] { readCheckpointIndex(dir.path().toStdString()); });
    QVERIFY(e && e->kind() == ErrorKind::BadInput);
    QCOMPARE(parseStepList("100,0,50,50"), (std::vector<int>{0, 50, 100}));
    for (const char* bad : {"", "1,,2", "-1", "a", "1.5"}) {
      e = test::caught([&] { parseStepList(bad); });
      QVERIFY2(e && e->kind() == ErrorKind::Usage, bad);
    }

    // The figures: a PNG and an APNG of one frame per checkpoint, decoded again with zlib.
    const RgbaImage plot = inductionScorePlot(h);
    const std::string png = encodePng(plot);
    const auto chunks = pngChunks(png);
    QCOMPARE((int)chunks.size(), 3);
    QCOMPARE(chunks[0].first, std::string("IHDR"));
    QCOMPARE((int)be32(chunks[0].second, 0), plot.width());
    QCOMPARE((int)be32(chunks[0].second, 4), plot.height());
    QCOMPARE(unfiltered(chunks[1].second, plot.width(), plot.height()), plot.bytes());
    const std::vector<RgbaImage> frames = inductionScoreFrames(h);
    QCOMPARE((int)frames.size(), 4);
    const std::string apng = encodeApng(frames, 500);
    const auto ac = pngChunks(apng);
    QVERIFY(!ac.empty());
    int fctl = 0, fdat = 0;
    std::string last_data;
    for (const auto& [type, data] : ac) {
      fctl += type == "fcTL";
      if (type == "fdAT") {
        ++fdat;
        last_data = data.substr(4);
      }
      if (type == "acTL") QCOMPARE((int)be32(data, 0), 4);
    }
    QCOMPARE(fctl, 4);
    QCOMPARE(fdat, 3);
    QCOMPARE(unfiltered(last_data, frames[3].width(), frames[3].height()), frames[3].bytes());
    // The two frames differ where the scores do.
    QVERIFY(frames[0].bytes() != frames[3].bytes());
  }
};

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  TestCircuits circuits;
  TestRecipe recipe;
  return QTest::qExec(&circuits, argc, argv) | QTest::qExec(&recipe, argc, argv);
}
#include "test_circuits.moc"

// The parts modern models are made of, through the whole model: RMSNorm, rotary positions (both
// pair layouts), grouped-query attention and the gated (SwiGLU) feed-forward, in a pre-norm
// decoder-only stack with a final norm — the forward pass against a plain double-precision forward
// written here from the definitions, decoding step by step against the whole pass, and the
// training step's gradients against central differences of its loss; and what the Positional view
// shows of rotary positions (each pair's speed, the score against the offset) against values
// computed here.
#include <QtTest>
#include <cmath>
#include <random>

#include "arch/positional.h"
#include "arch/weights.h"
#include "compute/cpu_backend.h"
#include "llama_shaped.h"
#include "model/model.h"
#include "model/trace.h"
#include "train/training.h"

using namespace attnviz;

namespace {

// The model's forward, in double, from the definitions: logits [T, V] and each layer's
// probabilities [H, T, T] of the ids.
struct Reference {
  std::vector<std::vector<double>> logits;
  std::vector<std::vector<double>> probs;  // per layer, [H·T·T]
};

Reference reference(const LoadedModel& m, const std::vector<int>& ids) {
  const ModelConfig& c = m.config;
  const StackWeights& st = m.weights.decoder;
  const int T = (int)ids.size(), d = c.d_model, H = c.n_heads, G = c.kvHeads(), dk = c.d_k;
  using Mat = std::vector<std::vector<double>>;
  auto linear = [](const Mat& x, const LinearWeights& l) {
    const int out = (int)l.weight.dim(0), in = (int)l.weight.dim(1);
    Mat y(x.size(), std::vector<double>((size_t)out));
    for (size_t r = 0; r < x.size(); ++r)
      for (int o = 0; o < out; ++o) {
        double s = l.bias.empty() ? 0.0 : l.bias.data[(size_t)o];
        for (int i = 0; i < in; ++i) s += l.weight.data[(size_t)o * in + i] * x[r][(size_t)i];
        y[r][(size_t)o] = s;
      }
    return y;
  };
  auto rmsnorm = [&](const Mat& x, const LayerNormWeights& n) {
    Mat y = x;
    for (auto& row : y) {
      double ms = 0;
      for (double v : row) ms += v * v;
      const double inv = 1.0 / std::sqrt(ms / d + c.layer_norm_eps);
      for (int k = 0; k < d; ++k) row[(size_t)k] *= inv * n.gamma.data[(size_t)k];
    }
    return y;
  };
  // Pair i of a head turns by pos · θ^(−2i/d_k): (x[2i], x[2i+1]) or (x[i], x[i + d_k/2]).
  auto rotate = [&](Mat& x, int heads) {
    for (int p = 0; p < T; ++p)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < dk / 2; ++i) {
          const double angle = p * std::pow((double)c.rope_theta, -2.0 * i / dk);
          const int a = c.rope_layout == RopeLayout::Interleaved ? 2 * i : i;
          const int b = c.rope_layout == RopeLayout::Interleaved ? 2 * i + 1 : i + dk / 2;
          double& xa = x[(size_t)p][(size_t)(h * dk + a)];
          double& xb = x[(size_t)p][(size_t)(h * dk + b)];
          const double ra = xa * std::cos(angle) - xb * std::sin(angle);
          const double rb = xa * std::sin(angle) + xb * std::cos(angle);
          xa = ra;
          xb = rb;
        }
  };
  Reference ref;
  Mat x((size_t)T, std::vector<double>((size_t)d));
  for (int p = 0; p < T; ++p)
    for (int k = 0; k < d; ++k)
      x[(size_t)p][(size_t)k] = st.embed.tokens.data[(size_t)ids[p] * d + k];
  for (const LayerWeights& L : st.layers) {
    const Mat h = rmsnorm(x, L.norm_self);
    Mat q = linear(h, L.self_attn.q), k = linear(h, L.self_attn.k), v = linear(h, L.self_attn.v);
    rotate(q, H);
    rotate(k, G);
    Mat ctx((size_t)T, std::vector<double>((size_t)H * c.d_v));
    std::vector<double>& probs = ref.probs.emplace_back((size_t)H * T * T);
    for (int hq = 0; hq < H; ++hq) {
      const int g = hq / (H / G);  // the key/value head of query head hq
      for (int i = 0; i < T; ++i) {
        std::vector<double> s((size_t)T);
        double mx = -1e300;
        for (int j = 0; j < T; ++j) {
          double dot = 0;
          for (int e = 0; e < dk; ++e)
            dot += q[(size_t)i][(size_t)(hq * dk + e)] * k[(size_t)j][(size_t)(g * dk + e)];
          s[(size_t)j] = j > i ? (double)c.mask_fill : dot / std::sqrt((double)dk);
          mx = std::max(mx, s[(size_t)j]);
        }
        double z = 0;
        for (double& e : s) z += (e = std::exp(e - mx));
        for (int j = 0; j < T; ++j) {
          const double p = s[(size_t)j] / z;
          probs[((size_t)hq * T + i) * T + j] = p;
          for (int e = 0; e < c.d_v; ++e)
            ctx[(size_t)i][(size_t)(hq * c.d_v + e)] += p * v[(size_t)j][(size_t)(g * c.d_v + e)];
        }
      }
    }
    const Mat o = linear(ctx, L.self_attn.out);
    for (int p = 0; p < T; ++p)
      for (int e = 0; e < d; ++e) x[(size_t)p][(size_t)e] += o[(size_t)p][(size_t)e];
    const Mat h2 = rmsnorm(x, L.norm_ffn);
    Mat gate = linear(h2, L.ffn.gate);
    const Mat up = linear(h2, L.ffn.fc1);
    for (size_t p = 0; p < gate.size(); ++p)
      for (size_t e = 0; e < gate[p].size(); ++e)
        gate[p][e] = gate[p][e] / (1 + std::exp(-gate[p][e])) * up[p][e];
    const Mat f = linear(gate, L.ffn.fc2);
    for (int p = 0; p < T; ++p)
      for (int e = 0; e < d; ++e) x[(size_t)p][(size_t)e] += f[(size_t)p][(size_t)e];
  }
  ref.logits = linear(rmsnorm(x, st.final_norm), m.weights.head.projection);
  return ref;
}

}  // namespace

class TestModelParts : public QObject {
  Q_OBJECT

 private slots:
  // θ^(−2i/d_head): with θ = 10000 and d_head = 8 the powers 10^(−i) (by hand); with Llama 3's
  // θ = 500000 and d_head = 16 the same formula in double.
  void rotaryFrequenciesAreThePairsSpeeds() {
    const std::vector<float> f = rotaryFrequencies(8, 10000.0f);
    const std::vector<double> by_hand = {1.0, 0.1, 0.01, 0.001};
    QCOMPARE(f.size(), by_hand.size());
    for (size_t i = 0; i < f.size(); ++i)
      QVERIFY2(std::abs(f[i] - by_hand[i]) <= 1e-6 * by_hand[i],
               qPrintable(QString("pair %1: %2, by hand %3").arg(i).arg(f[i]).arg(by_hand[i])));
    const std::vector<float> g = rotaryFrequencies(16, 500000.0f);
    QCOMPARE(g.size(), size_t(8));
    for (size_t i = 0; i < g.size(); ++i) {
      const double want = std::pow(500000.0, -2.0 * double(i) / 16.0);
      QVERIFY(std::abs(g[i] - want) <= 1e-6 * want);
    }
    // The rotation table the pass uploads turns pair i by pos · θ_i.
    const Tensor t = rotaryTable(5, 8, 10000.0f);
    QVERIFY(std::abs(t.data[(size_t)3 * 4 + 1] - std::cos(3 * 0.1)) < 1e-6);
    QVERIFY(std::abs(t.data[((size_t)5 + 3) * 4 + 1] - std::sin(3 * 0.1)) < 1e-6);
  }

  void rotaryScoresDependOnTheOffsetOnly_data() { addRopeLayoutRows(); }
  // rotaryScores of a random vector against its rotation written here in double (so the layout
  // matters: the pairs' lengths differ), and every cell equal to the cell k down the diagonal.
  void rotaryScoresDependOnTheOffsetOnly() {
    QFETCH(int, layout);
    const int d = 8, len = 12;
    const double theta = 100.0;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> x((size_t)d);
    for (float& v : x) v = u(rng);
    const Tensor s = rotaryScores(len, d, (float)theta, (RopeLayout)layout, x);
    const std::vector<double> xd(x.begin(), x.end());
    QCOMPARE(s.dim(0), int64_t(len));
    QCOMPARE(s.dim(1), int64_t(len));
    double norm2 = 0;
    for (float v : x) norm2 += (double)v * v;
    for (int m = 0; m < len; ++m)
      for (int n = 0; n < len; ++n) {
        const std::vector<double> qm = rotatedByDefinition(xd, m, theta, (RopeLayout)layout);
        const std::vector<double> kn = rotatedByDefinition(xd, n, theta, (RopeLayout)layout);
        double dot = 0;
        for (int c = 0; c < d; ++c) dot += qm[(size_t)c] * kn[(size_t)c];
        const float got = s.data[(size_t)m * len + n];
        QVERIFY2(
            std::abs(got - dot / norm2) <= 1e-5,
            qPrintable(QString("(%1, %2): %3, here %4").arg(m).arg(n).arg(got).arg(dot / norm2)));
        if (m + 3 < len && n + 3 < len)  // the same offset three positions on
          QVERIFY(std::abs(got - s.data[(size_t)(m + 3) * len + n + 3]) <= 1e-5);
      }
    QVERIFY(std::abs(s.data[0] - 1.0f) <= 1e-6);  // no offset: the vector with itself
  }

  void forwardMatchesDefinitions_data() { addRopeLayoutRows(); }
  // Every probability (1e-5 absolute) and logit (1e-4 relative) of the pass against the plain
  // double forward; the decoder's probabilities rows sum to 1 and the masked cells are 0.
  void forwardMatchesDefinitions() {
    QFETCH(int, layout);
    auto m = llamaShaped((RopeLayout)layout);
    Model model(m, makeCpuBackend(2));
    const std::vector<int> ids = {1, 3, 4, 6, 8, 3, 9, 10, 5};
    Inputs in;
    in.tgt = {ids};
    const Trace t = model.forward(in);
    const Reference ref = reference(*m, ids);
    const int T = (int)ids.size(), H = m->config.n_heads;
    for (int l = 0; l < m->config.n_decoder_layers; ++l) {
      const AttentionBlock& b = *t.block(AttentionKind::DecoderSelf, l);
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < T; ++i)
          for (int j = 0; j < T; ++j) {
            const double want = ref.probs[(size_t)l][((size_t)h * T + i) * T + j];
            QVERIFY2(std::abs(b.prob(0, h, i, j) - want) <= 1e-5,
                     qPrintable(QString("layer %1 head %2 (%3, %4): %5, the definition %6")
                                    .arg(l)
                                    .arg(h)
                                    .arg(i)
                                    .arg(j)
                                    .arg(b.prob(0, h, i, j))
                                    .arg(want)));
          }
    }
    const int V = (int)t.logits.dense().dim(2);
    for (int i = 0; i < T; ++i)
      for (int v = 0; v < V; ++v) {
        const double want = ref.logits[(size_t)i][(size_t)v];
        QVERIFY2(std::abs(t.logits.row(0, i)[v] - want) <= 1e-4 * std::max(1.0, std::abs(want)),
                 qPrintable(QString("logit (%1, %2): %3, the definition %4")
                                .arg(i)
                                .arg(v)
                                .arg(t.logits.row(0, i)[v])
                                .arg(want)));
      }
  }

  // Decoding one position at a time against cached keys and values (rotated at their positions)
  // gives the whole pass's logits.
  void decodingStepByStepEqualsThePass() {
    auto m = llamaShaped(RopeLayout::Halves);
    Model model(m, makeCpuBackend(1));
    const std::vector<int> ids = {1, 7, 3, 3, 9, 4, 10};
    Inputs in;
    in.tgt = {ids};
    const Trace whole = model.forward(in);
    auto cache = model.newDecoderCache((int)ids.size());
    ForwardOptions o;
    for (size_t i = 0; i < ids.size(); ++i) {
      const TraceRows rows = model.decode(nullptr, *cache, {ids[i]}, o);
      model.commitCache(*cache, {ids[i]});
      const int V = (int)rows.logits.dense().dim(2);
      for (int v = 0; v < V; ++v)
        QVERIFY2(std::abs(rows.logits.dense().data[(size_t)v] - whole.logits.row(0, (int)i)[v]) <=
                     1e-5f * (1 + std::abs(whole.logits.row(0, (int)i)[v])),
                 qPrintable(QString("position %1, token %2").arg(i).arg(v)));
    }
  }

  // The training step's gradients (RMSNorm's γ, the rotated q and k, the grouped key/value
  // heads, the gate) against central differences of its loss along the weights with the largest
  // gradients.
  void gradientsMatchCentralDifferences() {
    auto m = llamaShaped(RopeLayout::Interleaved);
    Model model(m, makeCpuBackend(1));
    Training training(model);
    Inputs in;
    in.tgt = {{1, 3, 4, 6, 8, 3}, {1, 9, 10, 5, 2, 0}};
    Targets tg;
    tg.tokens = {{3, 4, 6, 8, 3, 2}, {9, 10, 5, 2, -1, -1}};
    training.zeroGradients();
    const double loss0 = training.forwardBackward(in, tg).loss;
    QVERIFY(std::isfinite(loss0));
    const int64_t n = training.parameterCount();
    std::vector<float> grads((size_t)n), params((size_t)n);
    model.backend().copy_to_host(training.gradients(), grads.data(), n);
    model.backend().copy_to_host(training.parameters(), params.data(), n);
    std::vector<size_t> order((size_t)n);
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::partial_sort(order.begin(), order.begin() + 12, order.end(),
                      [&](size_t a, size_t b) { return std::abs(grads[a]) > std::abs(grads[b]); });
    const float h = 1e-2f;
    for (int k = 0; k < 12; ++k) {
      const size_t i = order[(size_t)k];
      auto lossAt = [&](float v) {
        model.backend().copy(&v, training.parameters() + i, 1);
        training.zeroGradients();
        return training.forwardBackward(in, tg).loss;
      };
      const double up = lossAt(params[i] + h), down = lossAt(params[i] - h);
      lossAt(params[i]);
      const double numeric = (up - down) / (2.0 * h);
      QVERIFY2(std::abs(numeric - grads[i]) <= 0.02 * std::abs(grads[i]) + 1e-4,
               qPrintable(QString("parameter %1: gradient %2, central difference %3")
                              .arg(i)
                              .arg(grads[i])
                              .arg(numeric)));
    }
  }
};

QTEST_MAIN(TestModelParts)
#include "test_model_parts.moc"

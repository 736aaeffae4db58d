// Parity with PyTorch: every tensor of the trace (scores, masks, probabilities of every attention
// block; token logits, class logits, hidden states), the greedy decoder's output, and incremental
// decoding against references that tools/make_references.py computed with the tutorials' own
// PyTorch models (docs/formats.md "Reference files"), for every family and model class.
#include <QtTest>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "model/decoding.h"
#include "model/model.h"
#include "model/trace_dump.h"
#include "parity_support.h"

using namespace attnviz;

namespace {

using test::compareBlocks;
using test::kProbTol;
using test::kRelTol;

struct Case {
  std::shared_ptr<Model> model;
  SafetensorsFile ref;
  nlohmann::json inputs;
};

std::vector<std::vector<int>> ids(const nlohmann::json& j, const char* key) {
  return test::idsOf(j, key);
}

// Strips the padding the reference batch carries.
std::vector<std::vector<int>> unpad(std::vector<std::vector<int>> b, int pad) {
  for (auto& s : b)
    while (s.size() > 1 && s.back() == pad) s.pop_back();
  return b;
}

std::string where(const AttentionBlock& a, int b, int h, int i, int j) {
  return std::string(attentionKindName(a.kind)) + " layer " + std::to_string(a.layer) +
         " b=" + std::to_string(b) + " h=" + std::to_string(h) + " i=" + std::to_string(i) +
         " j=" + std::to_string(j);
}

}  // namespace

class TestParity : public QObject {
  Q_OBJECT

 private:
  std::shared_ptr<Backend> backend_;

  // The case's first sentence without padding, its target cut before the end token (a session
  // stops there), and the same as one pass's inputs: what the session tests step through.
  struct Sentence {
    std::vector<int> src, tgt;
    Inputs inputs;
  };
  static Sentence firstSentence(const Case& c) {
    const ModelConfig& cfg = c.model->config();
    Sentence s;
    if (cfg.hasCross()) s.src = unpad(ids(c.inputs, "src_ids"), cfg.src_pad_id)[0];
    s.tgt = unpad(ids(c.inputs, "tgt_ids"), cfg.tgt_pad_id)[0];
    if (auto e = std::find(s.tgt.begin() + 1, s.tgt.end(), cfg.eos_id); e != s.tgt.end())
      s.tgt.erase(e, s.tgt.end());
    if (cfg.hasCross()) s.inputs.src = {s.src};
    s.inputs.tgt = {s.tgt};
    return s;
  }

  Case load(const QString& name) {
    const std::string base = test::referenceDir() + "/" + name.toStdString();
    auto lm = loadModel(base + ".safetensors");
    Case c{std::make_shared<Model>(lm, backend_),
           SafetensorsFile::open(base + ".ref.safetensors"),
           {}};
    c.inputs = nlohmann::json::parse(c.ref.metadata().at("inputs"));
    return c;
  }

  static Inputs inputsOf(const Case& c) { return test::referenceInputs(c.inputs); }

  void addCases(bool decoders_only) {
    QTest::addColumn<QString>("name");
    for (const char* c : test::referenceCases()) {
      if (decoders_only) {
        Case k = load(c);
        if (!k.model->config().hasDecoder()) continue;
      }
      QTest::newRow(c) << QString(c);
    }
  }

 private slots:
  void initTestCase() {
    std::string why;
    backend_ = test::testBackend(&why);
    if (!backend_) QSKIP(why.c_str());
    qInfo("backend under test: %s; references from %s", backend_->description().c_str(),
          test::referenceDir().c_str());
  }

  void trace_data() { addCases(false); }

  // Every block's scores, masks and probabilities, and the outputs, of a padded batch.
  void trace() {
    QFETCH(QString, name);
    Case c = load(name);
    const Trace t = c.model->forward(test::referenceInputs(c.inputs));
    const std::string diff = test::compareWithReference(t, c.ref);
    QVERIFY2(diff.empty(), diff.c_str());
  }

  void greedy_data() { addCases(true); }

  // Greedy decoding token for token as the reference tutorial's greedy decoder.
  void greedy() {
    QFETCH(QString, name);
    Case c = load(name);
    const auto& g = c.inputs["greedy"];
    const std::vector<int> src =
        g.contains("src_ids") ? g["src_ids"].get<std::vector<int>>() : std::vector<int>();
    const std::vector<int> prompt =
        g.contains("tgt_ids") ? g["tgt_ids"].get<std::vector<int>>() : std::vector<int>();
    const std::vector<int> want = g["out_ids"].get<std::vector<int>>();
    const int max_len = g["max_len"].get<int>();
    QCOMPARE(greedyDecode(*c.model, src, max_len, prompt), want);
    // A recording session (the GUI's path) decodes the same.
    DecodingSession::Options o;
    o.max_new_tokens = max_len;
    DecodingSession s(*c.model, src, prompt, o);
    QCOMPARE(s.runToEnd(), want);
  }

  void incremental_data() { addCases(true); }

  // Incremental decoding with the key/value cache builds, row by row, exactly the trace of the
  // teacher-forced pass over the same target: every block's probabilities, masks and scores
  // (including the masked cells of earlier rows), the logits and the hidden states.
  void incremental() {
    QFETCH(QString, name);
    Case c = load(name);
    const ModelConfig& cfg = c.model->config();
    const Sentence sentence = firstSentence(c);
    const std::vector<int>&src = sentence.src, &tgt = sentence.tgt;
    const Inputs& in = sentence.inputs;
    const Trace full = c.model->forward(in);
    DecodingSession::Options o;
    o.max_new_tokens = (int)tgt.size() + 1;
    DecodingSession s(*c.model, src, {tgt[0]}, o);
    for (size_t i = 1; i < tgt.size(); ++i) s.stepForward(tgt[i]);
    QCOMPARE(s.length(), (int)tgt.size());
    auto same = [&](const Trace& t) {
      for (const AttentionBlock& want : full.blocks) {
        const AttentionBlock* got = t.block(want.kind, want.layer);
        QVERIFY(got);
        const std::string diff = compareBlocks(*got, want);
        QVERIFY2(diff.empty(), diff.c_str());
      }
      QCOMPARE(t.logits.dense().shape, full.logits.dense().shape);
      test::Diff d = test::compare(t.logits.dense().ptr(), full.logits.dense().ptr(),
                                   full.logits.dense().data.size(), 1.0);
      QVERIFY2(d.worst <= kRelTol, ("logits differ by " + std::to_string(d.worst)).c_str());
      d = test::compare(t.hidden.ptr(), full.hidden.ptr(), full.hidden.data.size(), 1.0);
      QVERIFY2(d.worst <= kRelTol, ("hidden differ by " + std::to_string(d.worst)).c_str());
    };
    same(s.trace());
    if (QTest::currentTestFailed()) return;
    // Stepping back drops the last row; stepping forward again gives the same trace.
    QVERIFY(s.stepBack());
    QCOMPARE(s.length(), (int)tgt.size() - 1);
    QCOMPARE(s.trace().tgt_len, (int)tgt.size() - 1);
    s.stepForward(tgt.back());
    same(s.trace());
  }

  void qkv_data() { addCases(false); }

  // The kept values explain every head's output: the context the pass recorded for row i of head
  // h is Σ_j p_ij · v_j (the scores and probabilities themselves are checked against the
  // reference); and a decoding session that keeps them grows the same vectors as the
  // teacher-forced pass.
  void qkv() {
    QFETCH(QString, name);
    Case c = load(name);
    ForwardOptions o;
    o.keep_qkv = true;
    o.keep_activations = true;
    Trace t = c.model->forward(inputsOf(c), o);
    for (const AttentionBlock& a : t.blocks) {
      QVERIFY(a.hasValues());
      const SublayerActivation* act = t.activation(
          querySide(a.kind), a.layer,
          a.kind == AttentionKind::Cross ? Sublayer::CrossAttention : Sublayer::SelfAttention);
      QVERIFY(act && !act->context.empty());
      for (int b = 0; b < a.batch; ++b)
        for (int h = 0; h < a.heads; ++h)
          for (int i = 0; i < a.q_len; ++i) {
            const std::vector<float> p = a.probRow(b, h, i);
            for (int e = 0; e < a.d_v; ++e) {
              double want = 0;
              for (int j = 0; j < a.k_len; ++j) want += (double)p[(size_t)j] * a.vRow(b, h, j)[e];
              const double got =
                  act->context.data[(((size_t)b * a.q_len + i) * a.heads + h) * a.d_v + e];
              QVERIFY2(std::abs(got - want) <= 1e-4 * std::max(1.0, std::abs(want)),
                       (where(a, b, h, i, 0) + ": context " + std::to_string(got) + " vs Σ p·v " +
                        std::to_string(want))
                           .c_str());
            }
          }
    }
    const ModelConfig& cfg = c.model->config();
    if (!cfg.hasDecoder()) return;
    const Sentence sentence = firstSentence(c);
    const std::vector<int>&src = sentence.src, &tgt = sentence.tgt;
    const Inputs& in = sentence.inputs;
    const Trace full = c.model->forward(in, o);
    DecodingSession::Options so;
    so.keep_qkv = true;
    so.max_new_tokens = (int)tgt.size() + 1;
    DecodingSession s(*c.model, src, {tgt[0]}, so);
    for (size_t i = 1; i < tgt.size(); ++i) s.stepForward(tgt[i]);
    for (const AttentionBlock& want : full.blocks) {
      const AttentionBlock& got = *s.trace().block(want.kind, want.layer);
      QVERIFY(got.hasValues());
      for (int h = 0; h < want.heads; ++h) {
        for (int i = 0; i < want.q_len; ++i)
          for (int e = 0; e < want.d_k; ++e)
            QVERIFY(std::abs(got.qRow(0, h, i)[e] - want.qRow(0, h, i)[e]) <= 1e-4);
        for (int j = 0; j < want.k_len; ++j) {
          for (int e = 0; e < want.d_k; ++e)
            QVERIFY(std::abs(got.kRow(0, h, j)[e] - want.kRow(0, h, j)[e]) <= 1e-4);
          for (int e = 0; e < want.d_v; ++e)
            QVERIFY(std::abs(got.vRow(0, h, j)[e] - want.vRow(0, h, j)[e]) <= 1e-4);
        }
      }
    }
  }

  void activations_data() { addCases(false); }

  // Every sublayer's input and output, recorded: in the order computed — each stack's embeddings
  // first (their input the token rows of the weights × the scale, plus the segments'; their output
  // the first layer's input) — wired as the norm placement says (the residual add and the
  // LayerNorm between consecutive entries), each attention sublayer's output its heads' context
  // through W_O, each layer closed by its residual entry (the stream entering and leaving it),
  // ending in the stack's output that the references check; recording changes nothing else.
  void activations() {
    QFETCH(QString, name);
    Case c = load(name);
    const ModelConfig& cfg = c.model->config();
    ForwardOptions o;
    o.keep_activations = true;
    const Trace plain = c.model->forward(inputsOf(c));
    const Trace t = c.model->forward(inputsOf(c), o);
    QVERIFY(plain.activations.empty());
    QCOMPARE(t.logits.dense().data, plain.logits.dense().data);
    QCOMPARE(t.hidden.data, plain.hidden.data);
    auto close = [](const Tensor& a, const Tensor& b, float tol) {
      if (a.shape != b.shape) return false;
      for (size_t i = 0; i < a.data.size(); ++i)
        if (!(std::abs(a.data[i] - b.data[i]) <= tol * (1 + std::abs(b.data[i])))) return false;
      return true;
    };
    auto sum = [](const Tensor& a, const Tensor& b) {
      Tensor r = a;
      for (size_t i = 0; i < r.data.size(); ++i) r.data[i] += b.data[i];
      return r;
    };
    size_t at = 0;
    // Checks one stack's entries from `at` on; returns the stack's output (the residual stream
    // after its last sublayer, through the final norm when there is one).
    auto stack = [&](Side side, int layers, bool cross) -> Tensor {
      const int len = side == Side::Source ? t.src_len : t.tgt_len;
      const StackWeights& w = side == Side::Source ? c.model->loaded().weights.encoder
                                                   : c.model->loaded().weights.decoder;
      if (at >= t.activations.size()) return {};
      const SublayerActivation& e = t.activations[at++];
      if (e.side != side || e.layer != -1 || e.sublayer != Sublayer::Embedding ||
          e.input.shape != Shape{t.batch, len, cfg.d_model} || e.output.shape != e.input.shape)
        return {};
      // The embedding rows of the ids, from the weights, × √d_model when the model scales them.
      const auto& ids = side == Side::Source ? t.src_ids : t.tgt_ids;
      const float scale = cfg.embed_scale ? std::sqrt((float)cfg.d_model) : 1.0f;
      for (int b = 0; b < t.batch; ++b)
        for (int i = 0; i < len; ++i)
          for (int k = 0; k < cfg.d_model; ++k) {
            float want = w.embed.tokens.data[(size_t)ids[b][i] * cfg.d_model + k] * scale;
            if (!w.embed.segments.empty() && side == Side::Source) {
              const int seg = t.segment_ids.empty() ? 0 : t.segment_ids[b][i];
              want += w.embed.segments.data[(size_t)seg * cfg.d_model + k];
            }
            const float got = e.input.data[((size_t)b * len + i) * cfg.d_model + k];
            if (!(std::abs(got - want) <= 1e-6f * (1 + std::abs(want)))) return {};
          }
      Tensor stream = e.output;  // the residual stream entering the next sublayer
      // An attention sublayer's output is its heads' context through W_O: context·W_Oᵀ + b_O.
      auto throughWo = [&](const SublayerActivation& e, const LinearWeights& wo) {
        const int C = cfg.valueWidth(), d = cfg.d_model;
        if (e.context.shape != Shape{t.batch, len, C}) return false;
        for (int64_t row = 0; row < (int64_t)t.batch * len; ++row)
          for (int j = 0; j < d; ++j) {
            double want = wo.bias.empty() ? 0.0 : wo.bias.data[j];
            for (int k = 0; k < C; ++k)
              want += (double)e.context.data[row * C + k] * wo.weight.data[(size_t)j * C + k];
            if (!(std::abs(e.output.data[row * d + j] - want) <= 1e-4 * (1 + std::abs(want))))
              return false;
          }
        return true;
      };
      for (int l = 0; l < layers; ++l) {
        const Tensor entering = stream;
        std::vector<std::pair<Sublayer, Sublayer>> subs = {
            {Sublayer::SelfAttention, Sublayer::NormSelf}};
        if (cross) subs.push_back({Sublayer::CrossAttention, Sublayer::NormCross});
        subs.push_back({Sublayer::FeedForward, Sublayer::NormFeedForward});
        for (auto [sub, norm] : subs) {
          if (at + 1 >= t.activations.size()) return {};
          const SublayerActivation& a = t.activations[at];
          const SublayerActivation& b = t.activations[at + 1];
          at += 2;
          for (const SublayerActivation* e : {&a, &b}) {
            if (e->side != side || e->layer != l ||
                e->input.shape != Shape{t.batch, len, cfg.d_model} ||
                e->output.shape != e->input.shape)
              return {};
          }
          if (cfg.norm == NormPlacement::Pre) {  // LN(x), then f(LN(x)); x + f(LN(x)) goes on
            if (a.sublayer != norm || b.sublayer != sub) return {};
            if (!close(a.input, stream, 1e-6f)) return {};
            if (b.input.data != a.output.data) return {};
            stream = sum(a.input, b.output);
          } else {  // f(x), then LN(x + f(x)), which goes on
            if (a.sublayer != sub || b.sublayer != norm) return {};
            if (!close(a.input, stream, 1e-6f)) return {};
            if (!close(b.input, sum(a.input, a.output), 1e-5f)) return {};
            stream = b.output;
          }
          const SublayerActivation& f = a.sublayer == sub ? a : b;
          if (sub != Sublayer::FeedForward &&
              !throughWo(f, sub == Sublayer::SelfAttention ? w.layers[l].self_attn.out
                                                           : w.layers[l].cross_attn.out))
            return {};
        }
        // The residual stream around the whole layer: what entered it and what leaves it.
        if (at >= t.activations.size()) return {};
        const SublayerActivation& r = t.activations[at++];
        if (r.sublayer != Sublayer::Residual || r.side != side || r.layer != l ||
            !close(r.input, entering, 1e-6f) || !close(r.output, stream, 1e-6f))
          return {};
      }
      if (cfg.final_norm) {
        if (at >= t.activations.size()) return {};
        const SublayerActivation& f = t.activations[at++];
        if (f.sublayer != Sublayer::FinalNorm || f.layer != -1 || !close(f.input, stream, 1e-5f))
          return {};
        stream = f.output;
      }
      return stream;
    };
    if (cfg.hasEncoder()) {
      const Tensor out = stack(Side::Source, cfg.n_encoder_layers, false);
      QVERIFY2(!out.empty(), "the encoder's activations are not wired as computed");
      // An encoder-only model's hidden states are the encoder's output.
      if (!cfg.hasDecoder()) QVERIFY(close(out, t.hidden, 1e-5f));
    }
    if (cfg.hasDecoder()) {
      const Tensor out = stack(Side::Target, cfg.n_decoder_layers, cfg.hasCross());
      QVERIFY2(!out.empty(), "the decoder's activations are not wired as computed");
      QVERIFY(close(out, t.hidden, 1e-5f));
    }
    QCOMPARE(at, t.activations.size());
  }

  void chunkedAttention_data() { addCases(false); }

  // Attention runs chunk by chunk of query rows: a pass split into chunks of 1 and 3 rows gives
  // the trace and the outputs of the pass in one chunk, any tile of a block equals that part of
  // its whole matrix, and a decoding session (one row per step) equals the pass.
  void chunkedAttention() {
    QFETCH(QString, name);
    Case c = load(name);
    const Trace whole = c.model->forward(inputsOf(c));
    for (int rows : {1, 3}) {
      ForwardOptions o;
      o.max_chunk_rows = rows;
      const Trace split = c.model->forward(inputsOf(c), o);
      for (const AttentionBlock& want : whole.blocks) {
        const std::string diff = compareBlocks(*split.block(want.kind, want.layer), want);
        QVERIFY2(diff.empty(), diff.c_str());
      }
      const std::pair<const Tensor*, const Tensor*> outputs[] = {
          {&split.logits.dense(), &whole.logits.dense()}, {&split.hidden, &whole.hidden}};
      for (const auto& [got, want] : outputs) {
        QCOMPARE(got->shape, want->shape);
        const test::Diff d = test::compare(got->ptr(), want->ptr(), want->data.size(), 1.0);
        QVERIFY2(d.worst <= 1e-5, std::to_string(d.worst).c_str());
      }
    }
    for (const AttentionBlock& a : whole.blocks) {  // a tile inside the matrix, as the views ask
      const int i0 = a.q_len / 3, i1 = a.q_len, j0 = a.k_len / 2, j1 = a.k_len;
      const int h = a.heads - 1, b = a.batch - 1, w = j1 - j0;
      std::vector<float> p((size_t)(i1 - i0) * w), s((size_t)(i1 - i0) * w);
      a.probTile(b, h, i0, i1, j0, j1, p.data());
      a.scoreTile(b, h, i0, i1, j0, j1, s.data());
      const std::vector<float> P = a.denseProbs(), S = a.denseScores();
      for (int i = i0; i < i1; ++i)
        for (int j = j0; j < j1; ++j) {
          const size_t at = (((size_t)b * a.heads + h) * a.q_len + i) * a.k_len + j;
          QVERIFY(std::abs(p[(size_t)(i - i0) * w + (j - j0)] - P[at]) <= 1e-6f);
          QVERIFY(std::abs(s[(size_t)(i - i0) * w + (j - j0)] - S[at]) <=
                  1e-5f * std::max(1.0f, std::abs(S[at])));
          QCOMPARE(a.masked(b, i, j), a.denseMask()[at] != 0);
        }
    }
    const ModelConfig& cfg = c.model->config();
    if (!cfg.hasDecoder()) return;
    const Sentence sentence = firstSentence(c);
    const std::vector<int>&src = sentence.src, &tgt = sentence.tgt;
    const Trace full = c.model->forward(sentence.inputs);
    DecodingSession::Options so;
    so.max_new_tokens = (int)tgt.size() + 1;
    DecodingSession session(*c.model, src, {tgt[0]}, so);
    for (size_t i = 1; i < tgt.size(); ++i) session.stepForward(tgt[i]);
    for (const AttentionBlock& want : full.blocks) {
      const std::string diff = compareBlocks(*session.trace().block(want.kind, want.layer), want);
      QVERIFY2(diff.empty(), diff.c_str());
    }
  }

  void invariants_data() { addCases(false); }

  // Every probability row sums to 1 (or is a documented fully-masked row); masked cells are 0.
  void invariants() {
    QFETCH(QString, name);
    Case c = load(name);
    const ModelConfig& cfg = c.model->config();
    Inputs in = inputsOf(c);
    in.src = unpad(in.src, cfg.src_pad_id);
    in.tgt = unpad(in.tgt, cfg.tgt_pad_id);
    if (!in.segments.empty())
      for (size_t b = 0; b < in.segments.size(); ++b) in.segments[b].resize(in.src[b].size());
    Trace t = c.model->forward(in);
    for (const AttentionBlock& a : t.blocks)
      for (int b = 0; b < a.batch; ++b)
        for (int h = 0; h < a.heads; ++h)
          for (int i = 0; i < a.q_len; ++i) {
            double sum = 0;
            int unmasked = 0;
            for (int j = 0; j < a.k_len; ++j) {
              sum += a.prob(b, h, i, j);
              if (a.masked(b, i, j))
                QCOMPARE(a.prob(b, h, i, j), 0.0f);
              else
                ++unmasked;
            }
            if (unmasked > 0) QVERIFY2(std::abs(sum - 1.0) < 1e-5, attentionKindName(a.kind));
          }
  }
};

QTEST_GUILESS_MAIN(TestParity)
#include "test_parity.moc"

#include "model/lens.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"
#include "model/device_weights.h"
#include "model/runs.h"

namespace attnviz {

namespace {

int layersOf(const ModelConfig& c, Side side) {
  return side == Side::Source ? c.n_encoder_layers : c.n_decoder_layers;
}

// The activation (side, layer, sublayer) of the trace, or an error that says how to get it.
const SublayerActivation& activationOf(const Trace& t, Side side, int layer, Sublayer s) {
  const SublayerActivation* a = t.activation(side, layer, s);
  if (!a)
    throw Error(ErrorKind::BadInput,
                "the trace has no residual stream: run the pass with its activations kept "
                "(ForwardOptions::keep_activations, lensForwardOptions())");
  return *a;
}

// Row (b, i) of a [B, n, w] tensor.
const float* rowOf(const Tensor& x, int b, int i) {
  return x.ptr() + ((int64_t)b * x.dim(1) + i) * x.dim(2);
}

// Softmax of one row in double: probabilities [n].
std::vector<double> softmaxRow(const float* logits, int n) {
  const double mx = *std::max_element(logits, logits + n);
  std::vector<double> p((size_t)n);
  double sum = 0;
  for (int j = 0; j < n; ++j) sum += p[j] = std::exp((double)logits[j] - mx);
  for (double& v : p) v /= sum;
  return p;
}

int argmax(const float* row, int n) {
  return (int)(std::max_element(row, row + n) - row);
}

int positionsOf(const Trace& t, Side side) {
  return side == Side::Source ? t.src_len : t.tgt_len;
}

void checkSentence(const Trace& t, int sentence) {
  if (sentence < 0 || sentence >= t.batch)
    throw Error(ErrorKind::BadInput, "sentence " + std::to_string(sentence) +
                                         " is not in the batch of " + std::to_string(t.batch));
}

void checkToken(int token, int V, const char* what) {
  if (token < 0 || token >= V)
    throw Error(ErrorKind::BadInput, std::string(what) + " " + std::to_string(token) +
                                         " is not in the output vocabulary (ids 0 to " +
                                         std::to_string(V - 1) + ")");
}

std::string normWords(const ModelConfig& c) {
  return std::string("the stack's final ") + (c.norm_kind == NormKind::RmsNorm ? "RMSNorm"
                                              : c.norm_kind == NormKind::LayerNormStd
                                                  ? "LayerNorm (unbiased std, ε outside the root)"
                                                  : "LayerNorm");
}

std::string lensReading(const ModelConfig& c, Side stack) {
  std::string s = std::string("row 0: the ") + (stack == Side::Source ? "encoder" : "decoder") +
                  "'s embeddings (its first layer's input); row l: the residual stream leaving "
                  "layer l";
  s += c.norm == NormPlacement::Pre
           ? " (pre-norm: x + attention + feed-forward, not normed yet)"
           : " (post-norm: the block's output, already normed by the layer's last add & norm)";
  s += c.final_norm ? ", then " + normWords(c) : ", with no final norm (the model has none)";
  s += c.tokenHead() == TokenHead::BertMlm
           ? ", then the masked-LM head (dense, activation, LayerNorm, the tied decoder)"
           : ", then the output projection";
  return s + " — what the model applies after its last layer";
}

// Host copy of n floats of the model's parameters at a device pointer (null: empty).
std::vector<float> fetch(const Model& m, const float* p, int64_t n) {
  std::vector<float> out;
  if (!p) return out;
  out.resize((size_t)n);
  m.backend().copy_to_host(p, out.data(), n);
  return out;
}

double dot(const std::vector<double>& g, const float* x) {
  double s = 0;
  for (size_t j = 0; j < g.size(); ++j) s += g[j] * x[j];
  return s;
}

double dot(const std::vector<double>& g, const std::vector<float>& x) {
  return x.empty() ? 0.0 : dot(g, x.data());
}

// The frozen scale s of the final norm at the stream x [d]: 1/σ as rowNorm computes σ (double).
double frozenScale(const ModelConfig& c, const float* x, int d) {
  double center = 0;
  if (c.norm_kind != NormKind::RmsNorm) {
    for (int j = 0; j < d; ++j) center += x[j];
    center /= d;
  }
  double squares = 0;
  for (int j = 0; j < d; ++j) squares += (x[j] - center) * (x[j] - center);
  const double eps = c.layer_norm_eps;
  if (c.norm_kind == NormKind::LayerNormStd) return 1.0 / (std::sqrt(squares / (d - 1)) + eps);
  return 1.0 / std::sqrt(squares / d + eps);
}

const char* blockWord(AttentionKind k) {
  return k == AttentionKind::Cross ? "cross" : "self";
}

}  // namespace

ForwardOptions lensForwardOptions() {
  ForwardOptions o;
  o.keep_activations = true;
  return o;
}

Side lensStack(const ModelConfig& c) {
  return c.hasDecoder() ? Side::Target : Side::Source;
}

LogitLens logitLens(const Model& m, const Trace& t, const LensOptions& o) {
  const ModelConfig& c = m.config();
  if (c.tokenHead() == TokenHead::None)
    throw Error(ErrorKind::BadInput, "the model has no token head: there is no logit to read");
  checkSentence(t, o.sentence);
  if (t.logits.empty())
    throw Error(ErrorKind::BadInput, "the trace has no token logits to compare the lens with");
  LogitLens lens;
  lens.stack = lensStack(c);
  const int L = layersOf(c, lens.stack), n = positionsOf(t, lens.stack);
  const int V = t.logits.vocab();
  lens.rows = L + 1;
  lens.positions = n;
  lens.vocab = V;
  lens.top_k = std::clamp(o.top_k, 1, V);
  lens.reading = lensReading(c, lens.stack);
  if (o.target != -1) checkToken(o.target, V, "target token");
  for (int i = 0; i < n; ++i)
    lens.targets.push_back(o.target >= 0 ? o.target : t.logits.top(o.sentence, i, 1).front().first);
  const size_t cells = (size_t)lens.rows * n;
  lens.top_ids.resize(cells * lens.top_k);
  lens.top_probs.resize(cells * lens.top_k);
  lens.target_probs.resize(cells);
  lens.target_ranks.resize(cells);
  if (o.keep_logits) lens.logits = Tensor({lens.rows, n, V});
  const DeviceWeights& dw = m.deviceWeights();
  std::vector<int> order((size_t)V);
  for (int r = 0; r < lens.rows; ++r) {
    lens.row_names.push_back(r == 0 ? "embeddings" : "layer " + std::to_string(r));
    const SublayerActivation& a = r == 0 ? activationOf(t, lens.stack, -1, Sublayer::Embedding)
                                         : activationOf(t, lens.stack, r - 1, Sublayer::Residual);
    // The whole batch, as the pass ran it: the same rows through the same ops.
    const Tensor logits = runTokenHead(m.backend(), c, dw, a.output, lens.stack);
    for (int i = 0; i < n; ++i) {
      const float* row = rowOf(logits, o.sentence, i);
      if (o.keep_logits) std::copy(row, row + V, lens.logits.ptr() + ((int64_t)r * n + i) * V);
      const std::vector<double> p = softmaxRow(row, V);
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + lens.top_k, order.end(), [&](int x, int y) {
        return row[x] > row[y] || (row[x] == row[y] && x < y);
      });
      const int64_t k0 = lens.cell(r, i) * lens.top_k;
      for (int k = 0; k < lens.top_k; ++k) {
        lens.top_ids[k0 + k] = order[k];
        lens.top_probs[k0 + k] = (float)p[order[k]];
      }
      const int target = lens.targets[i];
      lens.target_probs[lens.cell(r, i)] = (float)p[target];
      int rank = 1;
      for (int j = 0; j < V; ++j) rank += row[j] > row[target];
      lens.target_ranks[lens.cell(r, i)] = rank;
    }
  }
  return lens;
}

Contributions directContributions(const Model& m, const Trace& t, const ContributionOptions& o) {
  const ModelConfig& c = m.config();
  if (c.tokenHead() == TokenHead::None)
    throw Error(ErrorKind::BadInput, "the model has no token head: there is no logit to split");
  if (c.tokenHead() == TokenHead::BertMlm)
    throw Error(
        ErrorKind::BadInput,
        "direct contributions need a linear head: BERT's masked-LM head (dense, activation, "
        "LayerNorm) is not, so a part of the stream has no logit of its own (the logit "
        "lens reads it)");
  if (c.norm != NormPlacement::Pre)
    throw Error(ErrorKind::BadInput,
                "direct contributions are defined for pre-norm models only: in a post-norm model "
                "every layer's add & norm rescales and recenters the stream it is given, so a "
                "head's output does not reach the logits as one term of a sum (the logit lens "
                "still shows what each layer's output predicts)");
  if (c.sandwich_norms || c.final_softcap > 0.0f)
    throw Error(ErrorKind::BadInput,
                "direct contributions need the logits to be a sum of the stream's parts: this "
                "model norms each sublayer's output and soft-caps the logits (Gemma 2), so a "
                "head's output does not reach them as one term (the logit lens still shows what "
                "each layer's output predicts)");
  checkSentence(t, o.sentence);
  const Side side = lensStack(c);
  const int L = layersOf(c, side), n = positionsOf(t, side), d = c.d_model;
  const int V = t.logits.vocab();
  int pos = o.position;
  if (pos < 0) {
    const auto& ids = side == Side::Source ? t.src_ids[o.sentence] : t.tgt_ids[o.sentence];
    const int pad = side == Side::Source ? c.src_pad_id : c.tgt_pad_id;
    pos = n - 1;
    while (pos > 0 && ids[pos] == pad) --pos;
  }
  if (pos < 0 || pos >= n)
    throw Error(ErrorKind::BadInput, "position " + std::to_string(pos) +
                                         " is past the sentence's " + std::to_string(n) +
                                         " positions");
  Contributions out;
  out.position = pos;
  const std::vector<float> row = logitsRow(m, t, o.sentence, pos);
  const float* logits = row.data();
  out.token = o.token == -1 ? argmax(logits, V) : o.token;
  checkToken(out.token, V, "token");
  out.versus = o.versus;
  if (o.versus != -1) checkToken(o.versus, V, "the token to compare with");
  out.logit = (double)logits[out.token] - (o.versus >= 0 ? (double)logits[o.versus] : 0.0);

  // u = W_U[token] − W_U[versus]: the output projection's rows, as the pass reads them.
  const DeviceWeights& dw = m.deviceWeights();
  const DeviceStack& st = side == Side::Source ? dw.enc : dw.dec;
  const DeviceLinear& proj = dw.head.projection;
  std::vector<double> u((size_t)d, 0.0);
  double bias = 0;
  for (const auto& [id, sign] : {std::pair{out.token, 1.0}, std::pair{o.versus, -1.0}}) {
    if (id < 0) continue;
    const std::vector<float> row = fetch(m, proj.w + (int64_t)id * d, d);
    for (int j = 0; j < d; ++j) u[j] += sign * row[j];
    if (proj.b) bias += sign * fetch(m, proj.b + id, 1)[0];
  }
  // T5's tied embeddings: lm_head reads the stream × 1/√d (output_scale).
  if (c.output_scale)
    for (double& v : u) v /= std::sqrt((double)d);
  // g: the direction a piece of the stream is read along, through the frozen final norm.
  std::vector<double> g = u;
  std::vector<LogitPart> parts;
  auto add = [&](LogitPart::Kind kind, std::string name, double value, int layer = -1,
                 int head = -1, AttentionKind attention = AttentionKind::DecoderSelf) {
    LogitPart p;
    p.kind = kind;
    p.name = std::move(name);
    p.value = value;
    p.layer = layer;
    p.head = head;
    p.attention = attention;
    parts.push_back(std::move(p));
  };
  const SublayerActivation& emb = activationOf(t, side, -1, Sublayer::Embedding);
  const Tensor& stream =
      L > 0 ? activationOf(t, side, L - 1, Sublayer::Residual).output : emb.output;
  if (c.final_norm) {
    out.scale = frozenScale(c, rowOf(stream, o.sentence, pos), d);
    const std::vector<float> gamma = fetch(m, st.final_norm.gamma, d);
    const std::vector<float> beta = fetch(m, st.final_norm.beta, d);
    if (!beta.empty()) add(LogitPart::Kind::Bias, "final norm β", dot(u, beta));
    for (int j = 0; j < d; ++j) g[j] *= (gamma.empty() ? 1.0 : gamma[j]) * out.scale;
    if (c.norm_kind != NormKind::RmsNorm) {  // (x − mean x)·g = x·(g − mean g)
      const double mean = std::accumulate(g.begin(), g.end(), 0.0) / d;
      for (double& v : g) v -= mean;
    }
    out.norm = normWords(c) +
               " with its scale frozen at this input: s = 1/σ = " + std::to_string(out.scale);
  } else {
    out.norm = "no final norm: the stream goes to the output projection as it is";
  }
  if (proj.b) add(LogitPart::Kind::Bias, "output bias", bias);

  // The embeddings: token rows × scale (+ segments), and what the positions add.
  const float* emb_in = rowOf(emb.input, o.sentence, pos);
  const float* emb_out = rowOf(emb.output, o.sentence, pos);
  if (c.embed_norm) {
    add(LogitPart::Kind::Embeddings, "embeddings (normed)", dot(g, emb_out));
  } else {
    add(LogitPart::Kind::TokenEmbedding, "token embedding", dot(g, emb_in));
    if (c.positional != Positional::Rotary && c.positional != Positional::Relative) {
      double s = 0;
      for (int j = 0; j < d; ++j) s += g[j] * ((double)emb_out[j] - emb_in[j]);
      add(LogitPart::Kind::Positions, "positions", s);
    }
  }
  const int H = c.n_heads, dv = c.d_v, C = c.valueWidth();
  for (int l = 0; l < L; ++l) {
    const DeviceLayer& DL = st.layers[l];
    const std::string where = "L" + std::to_string(l + 1);
    for (const auto& [sub, kind, W] :
         {std::tuple{Sublayer::SelfAttention,
                     side == Side::Source ? AttentionKind::EncoderSelf : AttentionKind::DecoderSelf,
                     &DL.self_attn},
          std::tuple{Sublayer::CrossAttention, AttentionKind::Cross, &DL.cross_attn}}) {
      if (sub == Sublayer::CrossAttention && !DL.has_cross) continue;
      const SublayerActivation& a = activationOf(t, side, l, sub);
      const float* ctx = rowOf(a.context, o.sentence, pos);  // [C] the heads' outputs
      // w = W_Oᵀ g [C]: head h's part is its slice of the context · its slice of w.
      const std::vector<float> wo = fetch(m, W->out.w, (int64_t)d * C);
      std::vector<double> w((size_t)C, 0.0);
      for (int j = 0; j < d; ++j)
        for (int k = 0; k < C; ++k) w[k] += g[j] * wo[(size_t)j * C + k];
      for (int h = 0; h < H; ++h) {
        double s = 0;
        for (int k = h * dv; k < (h + 1) * dv; ++k) s += w[k] * ctx[k];
        add(LogitPart::Kind::Head, where + " " + blockWord(kind) + " H" + std::to_string(h + 1), s,
            l, h, kind);
      }
      if (W->out.b)
        add(LogitPart::Kind::Bias, where + " " + blockWord(kind) + "-attention bias",
            dot(g, fetch(m, W->out.b, d)), l, -1, kind);
    }
    if (m.config().d_ff == 0) continue;  // an attention-only model: no feed-forward part
    const SublayerActivation& f = activationOf(t, side, l, Sublayer::FeedForward);
    const std::vector<float> b2 = fetch(m, DL.fc2.b, d);
    const double bias2 = dot(g, b2);
    add(LogitPart::Kind::FeedForward, where + " feed-forward",
        dot(g, rowOf(f.output, o.sentence, pos)) - bias2, l);
    if (!b2.empty()) add(LogitPart::Kind::Bias, where + " feed-forward bias", bias2, l);
  }
  for (const LogitPart& p : parts) out.total += p.value;
  std::stable_sort(parts.begin(), parts.end(), [](const LogitPart& a, const LogitPart& b) {
    return std::abs(a.value) > std::abs(b.value);
  });
  out.parts = std::move(parts);
  return out;
}

}  // namespace attnviz

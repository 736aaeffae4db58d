#include "model/circuits.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "model/head_stats.h"
#include "model/search.h"

namespace attnviz {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The ids a random sequence of `side` may use: every id but padding, start, end and unknown.
std::vector<int> ordinaryIds(const ModelConfig& c, Side side) {
  const TokenRoles roles = tokenRoles(c, side);
  const int unk = side == Side::Source ? c.src_unk_id : c.tgt_unk_id;
  const int V = (int)(side == Side::Source ? c.src_vocab.size() : c.tgt_vocab.size());
  std::vector<int> ids;
  for (int id = 0; id < V; ++id)
    if (id != roles.pad && id != roles.bos && id != roles.eos && id != unk) ids.push_back(id);
  return ids;
}

}  // namespace

RepeatedSequences repeatedSequences(const Model& model, Side side, const InductionOptions& o) {
  const ModelConfig& c = model.config();
  const char* name = side == Side::Source ? "source" : "target";
  if (o.sequences < 1 || o.length < 2)
    throw Error(ErrorKind::BadInput, "the induction score needs at least 1 sequence of 2 tokens");
  const std::vector<int> ids = ordinaryIds(c, side);
  if (ids.size() < 2)
    throw Error(ErrorKind::BadInput, std::string("the ") + name +
                                         " vocabulary has fewer than 2 ordinary tokens: no random "
                                         "sequence for the induction score");
  RepeatedSequences r;
  const bool start = side == Side::Source ? c.src_bos_eos && c.src_bos_id >= 0 : c.bos_id >= 0;
  const bool end = side == Side::Source && c.src_bos_eos && c.src_eos_id >= 0;
  r.offset = start ? 1 : 0;
  const int room = model.maxPositions() - r.offset - (end ? 1 : 0);
  r.length = std::min(o.length, room / 2);
  if (r.length < 2)
    throw Error(ErrorKind::BadInput, "the model takes " + std::to_string(model.maxPositions()) +
                                         " positions: too few for a repeated sequence");
  SplitMix64 rng(o.seed + (side == Side::Source ? 0 : 1));
  for (int s = 0; s < o.sequences; ++s) {
    std::vector<int> seq;
    if (start) seq.push_back(side == Side::Source ? c.src_bos_id : c.bos_id);
    for (int i = 0; i < r.length; ++i) seq.push_back(ids[(size_t)(rng.next() % ids.size())]);
    for (int i = 0; i < r.length; ++i) {
      const int id = seq[(size_t)(r.offset + i)];
      seq.push_back(id);
    }
    if (end) seq.push_back(c.src_eos_id);
    r.ids.push_back(std::move(seq));
  }
  return r;
}

std::vector<HeadScore> inductionScores(const Trace& trace, const RepeatedSequences* source,
                                       const RepeatedSequences* target) {
  std::vector<HeadScore> out;
  for (const AttentionBlock& a : trace.blocks) {
    const RepeatedSequences* r = a.kind == AttentionKind::EncoderSelf   ? source
                                 : a.kind == AttentionKind::DecoderSelf ? target
                                                                        : nullptr;
    for (int h = 0; h < a.heads; ++h) {
      HeadScore s{a.kind, a.layer, h, kNaN};
      if (r) {
        const int o = r->offset, L = r->length;
        double sum = 0;
        int64_t n = 0;
        for (int b = 0; b < a.batch; ++b)
          for (int i = o + L; i < o + 2 * L && i < a.q_len; ++i) {
            sum += a.prob(b, h, i, i - L + 1);
            ++n;
          }
        s.value = n ? sum / (double)n : kNaN;
      }
      out.push_back(s);
    }
  }
  return out;
}

std::vector<HeadScore> inductionScores(const Model& model, const InductionOptions& o) {
  const ModelConfig& c = model.config();
  std::optional<RepeatedSequences> src, tgt;
  Inputs in;
  if (c.hasEncoder()) {
    src = repeatedSequences(model, Side::Source, o);
    in.src = src->ids;
  }
  if (c.hasDecoder()) {
    tgt = repeatedSequences(model, Side::Target, o);
    in.tgt = tgt->ids;
  }
  ForwardOptions f;
  f.cancel = o.cancel;
  const Trace trace = model.forward(in, f);
  return inductionScores(trace, src ? &*src : nullptr, tgt ? &*tgt : nullptr);
}

std::vector<std::pair<double, double>> eigenvalues(std::vector<double> m, int n) {
  if (n < 0 || (int64_t)m.size() != (int64_t)n * n)
    throw Error(ErrorKind::BadInput, "eigenvalues: the matrix is not square");
  std::vector<std::pair<double, double>> w((size_t)n);
  if (n == 0) return w;
  // 1-based indexing, as the algorithms are usually written (Numerical Recipes' elmhes and hqr,
  // after EISPACK).
  auto a = [&](int i, int j) -> double& { return m[(size_t)(i - 1) * n + (j - 1)]; };
  // Reduction to upper Hessenberg form by elimination with pivoting (a similarity transform).
  for (int k = 2; k < n; ++k) {
    double x = 0;
    int i = k;
    for (int j = k; j <= n; ++j)
      if (std::abs(a(j, k - 1)) > std::abs(x)) {
        x = a(j, k - 1);
        i = j;
      }
    if (i != k) {
      for (int j = k - 1; j <= n; ++j) std::swap(a(i, j), a(k, j));
      for (int j = 1; j <= n; ++j) std::swap(a(j, i), a(j, k));
    }
    if (x != 0)
      for (i = k + 1; i <= n; ++i) {
        double y = a(i, k - 1);
        if (y == 0) continue;
        y /= x;
        a(i, k - 1) = y;
        for (int j = k; j <= n; ++j) a(i, j) -= y * a(k, j);
        for (int j = 1; j <= n; ++j) a(j, k) += y * a(j, i);
      }
  }
  for (int i = 3; i <= n; ++i)  // the multipliers left below the subdiagonal
    for (int j = 1; j < i - 1; ++j) a(i, j) = 0;
  // Francis's double-shift QR on the Hessenberg matrix.
  double anorm = 0;
  for (int i = 1; i <= n; ++i)
    for (int j = std::max(i - 1, 1); j <= n; ++j) anorm += std::abs(a(i, j));
  const double eps = DBL_EPSILON;
  auto sign = [](double x, double y) { return y >= 0 ? std::abs(x) : -std::abs(x); };
  int nn = n, l = 1;
  double t = 0, p = 0, q = 0, r = 0, s = 0, x = 0, y = 0, z = 0, ww = 0;
  while (nn >= 1) {
    int its = 0;
    do {
      for (l = nn; l >= 2; --l) {  // a small subdiagonal element splits the matrix
        s = std::abs(a(l - 1, l - 1)) + std::abs(a(l, l));
        if (s == 0) s = anorm;
        if (std::abs(a(l, l - 1)) <= eps * s) {
          a(l, l - 1) = 0;
          break;
        }
      }
      x = a(nn, nn);
      if (l == nn) {  // one root
        w[(size_t)nn - 1] = {x + t, 0};
        --nn;
      } else {
        y = a(nn - 1, nn - 1);
        ww = a(nn, nn - 1) * a(nn - 1, nn);
        if (l == nn - 1) {  // two roots
          p = 0.5 * (y - x);
          q = p * p + ww;
          z = std::sqrt(std::abs(q));
          x += t;
          if (q >= 0) {  // a real pair
            z = p + sign(z, p);
            w[(size_t)nn - 2] = w[(size_t)nn - 1] = {x + z, 0};
            if (z != 0) w[(size_t)nn - 1] = {x - ww / z, 0};
          } else {  // a complex pair
            w[(size_t)nn - 2] = {x + p, -z};
            w[(size_t)nn - 1] = {x + p, z};
          }
          nn -= 2;
        } else {
          if (its == 60)
            throw Error(ErrorKind::BadInput, "eigenvalues: the QR iteration did not converge");
          if (its == 10 || its == 20 || its == 40) {  // an exceptional shift
            t += x;
            for (int i = 1; i <= nn; ++i) a(i, i) -= x;
            s = std::abs(a(nn, nn - 1)) + std::abs(a(nn - 1, nn - 2));
            y = x = 0.75 * s;
            ww = -0.4375 * s * s;
          }
          ++its;
          int k0 = nn - 2;
          for (; k0 >= l; --k0) {  // two consecutive small subdiagonal elements
            z = a(k0, k0);
            r = x - z;
            s = y - z;
            p = (r * s - ww) / a(k0 + 1, k0) + a(k0, k0 + 1);
            q = a(k0 + 1, k0 + 1) - z - r - s;
            r = a(k0 + 2, k0 + 1);
            s = std::abs(p) + std::abs(q) + std::abs(r);
            p /= s;
            q /= s;
            r /= s;
            if (k0 == l) break;
            const double u = std::abs(a(k0, k0 - 1)) * (std::abs(q) + std::abs(r));
            const double v = std::abs(p) * (std::abs(a(k0 - 1, k0 - 1)) + std::abs(z) +
                                            std::abs(a(k0 + 1, k0 + 1)));
            if (u <= eps * v) break;
          }
          for (int i = k0 + 2; i <= nn; ++i) {
            a(i, i - 2) = 0;
            if (i != k0 + 2) a(i, i - 3) = 0;
          }
          for (int k = k0; k <= nn - 1; ++k) {  // the double QR step on rows l … nn
            if (k != k0) {
              p = a(k, k - 1);
              q = a(k + 1, k - 1);
              r = k != nn - 1 ? a(k + 2, k - 1) : 0;
              if ((x = std::abs(p) + std::abs(q) + std::abs(r)) != 0) {
                p /= x;
                q /= x;
                r /= x;
              }
            }
            if ((s = sign(std::sqrt(p * p + q * q + r * r), p)) != 0) {
              if (k == k0) {
                if (l != k0) a(k, k - 1) = -a(k, k - 1);
              } else {
                a(k, k - 1) = -s * x;
              }
              p += s;
              x = p / s;
              y = q / s;
              z = r / s;
              q /= p;
              r /= p;
              for (int j = k; j <= nn; ++j) {
                p = a(k, j) + q * a(k + 1, j);
                if (k != nn - 1) {
                  p += r * a(k + 2, j);
                  a(k + 2, j) -= p * z;
                }
                a(k + 1, j) -= p * y;
                a(k, j) -= p * x;
              }
              const int last = std::min(nn, k + 3);
              for (int i = l; i <= last; ++i) {
                p = x * a(i, k) + y * a(i, k + 1);
                if (k != nn - 1) {
                  p += z * a(i, k + 2);
                  a(i, k + 2) -= p * r;
                }
                a(i, k + 1) -= p * q;
                a(i, k) -= p;
              }
            }
          }
        }
      }
    } while (nn >= 1 && l < nn - 1);
  }
  return w;
}

double copyingScoreOf(const std::vector<double>& ov, int n) {
  double sum = 0, sum_abs = 0;
  for (const auto& [re, im] : eigenvalues(ov, n)) {
    sum += re;
    sum_abs += std::hypot(re, im);
  }
  return sum_abs > 0 ? sum / sum_abs : kNaN;
}

std::vector<HeadScore> copyingScores(const Model& model, const std::atomic<bool>* cancel) {
  auto checkCancel = [&] {
    if (cancel && cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
  };
  const ModelConfig& c = model.config();
  const ModelWeights w = model.currentWeights();
  const Tensor& unembed = w.head.projection.weight;  // [V, d]
  const int d = c.d_model, dv = c.d_v;
  // G = W_Eᵀ·W_U [d, d] of the key side whose vocabulary is the output vocabulary (null: none).
  auto gram = [&](Side side) -> std::optional<std::vector<double>> {
    const auto& vocab = side == Side::Source ? c.src_vocab : c.tgt_vocab;
    const Tensor& embed = side == Side::Source ? w.encoder.embed.tokens : w.decoder.embed.tokens;
    if (unembed.empty() || embed.empty() || vocab != c.outputVocab()) return std::nullopt;
    const int64_t V = (int64_t)vocab.size();
    std::vector<double> g((size_t)d * d, 0.0);
    std::vector<float> row((size_t)d * d, 0.0f);
    for (int64_t t = 0; t < V; ++t) {
      const float* e = embed.data.data() + t * d;
      const float* u = unembed.data.data() + t * d;
      for (int i = 0; i < d; ++i) {
        float* r = row.data() + (size_t)i * d;
        for (int j = 0; j < d; ++j) r[j] += e[i] * u[j];
      }
      if ((t + 1) % 256 == 0 || t + 1 == V) {  // float sums of at most 256 terms, then double
        checkCancel();
        for (size_t k = 0; k < g.size(); ++k) g[k] += row[k];
        std::fill(row.begin(), row.end(), 0.0f);
      }
    }
    return g;
  };
  std::optional<std::vector<double>> g_src, g_tgt;
  if (c.hasEncoder()) g_src = gram(Side::Source);
  if (c.hasDecoder()) g_tgt = gram(Side::Target);
  std::vector<HeadScore> out;
  auto block = [&](AttentionKind kind, int layer, const AttentionWeights& a) {
    const std::optional<std::vector<double>>& g = keySide(kind) == Side::Source ? g_src : g_tgt;
    for (int h = 0; h < c.n_heads; ++h) {
      HeadScore s{kind, layer, h, kNaN};
      checkCancel();
      if (g) {
        const int kv = c.kvHeadOf(h);
        const float* wv = a.v.weight.data.data() + (int64_t)kv * dv * d;  // W_V^h [dv, d]
        const float* wo = a.out.weight.data.data();                       // W_O [d, H·dv]
        const int C = c.valueWidth();
        // P = G·W_O^h [d, dv], then M = W_V^h·P [dv, dv].
        std::vector<double> p((size_t)d * dv, 0.0), m((size_t)dv * dv, 0.0);
        for (int i = 0; i < d; ++i)
          for (int k = 0; k < d; ++k) {
            const double gik = (*g)[(size_t)i * d + k];
            for (int j = 0; j < dv; ++j)
              p[(size_t)i * dv + j] += gik * wo[(int64_t)k * C + h * dv + j];
          }
        for (int i = 0; i < dv; ++i)
          for (int k = 0; k < d; ++k)
            for (int j = 0; j < dv; ++j)
              m[(size_t)i * dv + j] += (double)wv[(int64_t)i * d + k] * p[(size_t)k * dv + j];
        s.value = copyingScoreOf(m, dv);
      }
      out.push_back(s);
    }
  };
  // Trace order: encoder layers, then per decoder layer its self- and cross-attention.
  for (size_t l = 0; l < w.encoder.layers.size(); ++l)
    block(AttentionKind::EncoderSelf, (int)l, w.encoder.layers[l].self_attn);
  for (size_t l = 0; l < w.decoder.layers.size(); ++l) {
    block(AttentionKind::DecoderSelf, (int)l, w.decoder.layers[l].self_attn);
    if (w.decoder.layers[l].hasCross())
      block(AttentionKind::Cross, (int)l, w.decoder.layers[l].cross_attn);
  }
  return out;
}

AtlasScores atlasScores(const Model& model, const Atlas& atlas, const std::atomic<bool>* cancel) {
  AtlasScores out;
  out.induction.assign(atlas.heads.size(), NAN);
  out.copying.assign(atlas.heads.size(), NAN);
  auto place = [&atlas](const std::vector<HeadScore>& scores, std::vector<double>& into) {
    for (const HeadScore& s : scores)
      if (const AtlasHead* h = atlas.find(s.kind, s.layer, s.head))
        into[size_t(h - atlas.heads.data())] = s.value;
  };
  try {
    InductionOptions o;
    o.cancel = cancel;
    place(inductionScores(model, o), out.induction);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Cancelled) throw;
    out.induction_note = e.what();
  }
  try {
    place(copyingScores(model, cancel), out.copying);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::Cancelled) throw;
    out.copying_note = e.what();
  }
  return out;
}

}  // namespace attnviz

#include "model/pass.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace attnviz {

Pass::Pass(Backend& be, const ModelConfig& c, const DeviceWeights& dw, const ForwardOptions& o,
           Arena& arena, Recorder* recorder, int B, int n, int max_keys, bool training)
    : Widths(c), be(be), c(c), dw(dw), o(o), a(arena), rec(recorder) {
  const int64_t rows = (int64_t)B * n;
  chunk = chunkRows(c, n, max_keys, training);
  if (!training && o.max_chunk_rows > 0) chunk = std::min(chunk, o.max_chunk_rows);
  const int64_t cells = (int64_t)chunk * H * max_keys;
  h = a.floats(rows * d);
  y = a.floats(rows * d);
  q = a.floats(rows * A);
  ctx = a.floats(rows * C);
  ffn = a.floats(rows * c.d_ff * (c.gated_ffn ? 2 : 1));
  if (c.gated_ffn) ffn_act = a.floats(rows * c.d_ff);
  scores = a.floats(cells);
  probs = a.floats(cells);
  if (!o.interventions.empty()) extra = a.floats(cells);
  mask_rows = reinterpret_cast<uint8_t*>(a.floats(((int64_t)chunk * max_keys + 3) / 4));
  if (c.parallel_residual) layer_in = a.floats(rows * d);
  if (c.sandwich_norms) post_out = a.floats(rows * d);
}

int Pass::chunkRows(const ModelConfig& c, int n, int max_keys, bool training) {
  if (training) return std::max(n, 1);
  const int64_t per_row = (int64_t)c.n_heads * std::max(max_keys, 1);
  return (int)std::max<int64_t>(1, std::min<int64_t>(n, kTileFloats / per_row));
}

void applyRotary(Backend& be, const ModelConfig& c, const DeviceWeights& dw, HeadsGrad x, int B,
                 int T, int heads, int pos0, bool backward) {
  const int rd = c.rotaryDims();
  const float *cos = dw.rotaryCos(), *sin = dw.rotarySin(rd);
  auto turn = [&](HeadsGrad v, int n_heads, int width) {
    if (backward)
      be.rope_backward(v, cos, sin, B, T, n_heads, width, pos0, c.rope_layout);
    else
      be.rope_forward(v, cos, sin, B, T, n_heads, width, pos0, c.rope_layout);
  };
  if (rd == c.d_k) {
    turn(x, heads, c.d_k);
    return;
  }
  for (int h = 0; h < heads; ++h)  // head h's first rd values, one head at a time
    turn({x.data + (int64_t)h * c.d_k, x.batch_stride, x.row_stride}, 1, rd);
}

uint64_t Pass::floatsFor(const ModelConfig& c, const ForwardOptions& o, int B, int n, int max_keys,
                         bool training) {
  const uint64_t rows = (uint64_t)B * n, keys = (uint64_t)std::max(max_keys, 1);
  const uint64_t chunk = (uint64_t)chunkRows(c, n, max_keys, training);
  const uint64_t per_key = (o.interventions.empty() ? 2 : 3) * (uint64_t)c.n_heads;
  const uint64_t ffn = (uint64_t)c.d_ff * (c.gated_ffn ? 3 : 1);
  return rows * ((2 + c.parallel_residual + c.sandwich_norms) * c.d_model + c.attnWidth() +
                 c.valueWidth() + ffn) +
         chunk * keys * per_key + (chunk * keys + 3) / 4 + Recorder::floatsFor(c, o, (int)rows);
}

void Pass::checkCancel() const {
  if (o.cancel && o.cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
}

void Pass::linear(const float* x, const DeviceLinear& l, float* out, int rows) {
  be.linear_forward(x, l.w, l.b, out, rows, l.in, l.out);
}

void Pass::norm(const float* x, const DeviceNorm& n, float* out, int rows, float eps) {
  be.norm_forward(c.norm_kind, x, n.gamma, n.beta, out, rows, d, eps);
}

std::vector<PositionFix> positionFixes(const ModelConfig& c, int pad,
                                       const std::vector<std::vector<int>>& tokens, int past,
                                       int n) {
  std::vector<PositionFix> out;
  if (c.positional != Positional::SinusoidalFairseq && !c.positions_skip_pad) return out;
  for (size_t b = 0; b < tokens.size(); ++b) {
    int count = 0;
    for (int j = 0; j < n && past + j < (int)tokens[b].size(); ++j) {
      const int row = (int)b * n + j, index = past + j;
      if (tokens[b][(size_t)index] == pad) {
        out.push_back({row, index, -1});
      } else if (past + count++ != index) {
        out.push_back({row, index, past + count - 1});
      }
    }
  }
  return out;
}

void Pass::embed(const DeviceStack& st, const int32_t* ids, const int32_t* segs, float* x, int B,
                 int n, int pos0, StackTape* t, float p, const std::vector<PositionFix>* fixes) {
  const int64_t cells = (int64_t)B * n * d;
  const float scale = c.embed_scale ? std::sqrt((float)d) : 1.0f;
  be.embedding_forward(ids, st.tokens, st.positions, x, B, n, d, pos0, scale);
  // Positions counted over the tokens that are not padding (M2M100, RoBERTa): each such row's
  // position replaced, through y as scratch (the sinusoid is no parameter: nothing to the
  // gradients; RoBERTa's learned table is, and runEncoder refuses to train through the fixes).
  if (fixes && st.positions)
    for (const PositionFix& f : *fixes) {
      float* row = x + (int64_t)f.row * d;
      be.copy(st.positions + (int64_t)f.from * d, y, d);
      be.scale_forward(y, d, -1.0f);
      be.residual_forward(y, row, d);
      // RoBERTa's pad token reads the learned row before position 0 (padding_idx).
      if (f.to >= 0 || c.positions_skip_pad)
        be.residual_forward(st.positions + (int64_t)f.to * d, row, d);
    }
  if (t && !t->token_scale.empty()) {
    // x ← x + (α_b − 1)·tokens[ids]·scale: sentence b's token rows scaled by α_b, the positions
    // not (integrated gradients' path from the all-zero token embeddings).
    be.embedding_forward(ids, st.tokens, nullptr, h, B, n, d, pos0, scale);
    for (int b = 0; b < B; ++b)
      be.scale_forward(h + (int64_t)b * n * d, (int64_t)n * d, t->token_scale[(size_t)b] - 1.0f);
    be.residual_forward(h, x, cells);
  }
  if (segs && st.segments) be.gather_add_forward(segs, st.segments, x, B * n, d);
  if (c.embed_norm) {
    if (t) be.copy(x, t->embed_norm_in, cells);
    norm(x, st.embed_norm, x, B * n, c.embed_norm_eps);
  }
  if (t) be.dropout_forward(x, cells, p, t->embed_seed);
  if (rec) rec->embedding(ids, segs, st.tokens, st.segments, scale, x, B * n);
}

void Pass::start(const DeviceStack& st, Side side, const int32_t* ids, const int32_t* segs,
                 float* x, StackRun& r, int pos0, StackTape* t, float p) {
  const StreamResume* resume = o.patches && !t ? o.patches->resumeOf(side) : nullptr;
  if (!resume || resume->layer < 0 || r.store.past != 0) {
    embed(st, ids, segs, x, r.B, r.n, pos0, t, p, &r.position_fixes);
    return;
  }
  const int64_t cells = (int64_t)r.n * d;
  for (int b = 0; b < r.B; ++b) be.copy(resume->stream, x + b * cells, cells);
  r.first_layer = std::min(resume->layer + 1, (int)st.layers.size());
}

void Pass::layers(float* x, const StackRun& r, int* done, int total) {
  const int rows = r.B * r.n;
  const DeviceStack& st = *r.stack;
  patchStream(r, r.first_layer - 1, x);
  for (int l = r.first_layer; l < (int)st.layers.size(); ++l) {
    checkCancel();
    const DeviceLayer& L = st.layers[l];
    LayerTape* t = r.tape ? &r.tape->layers[l] : nullptr;
    // The parallel residual (GPT-NeoX): x ← x + SelfAttention(N₁(x)) + FeedForward(N₂(x)), the
    // feed-forward's norm reading the layer's input, kept here (with a tape: as its norm's input).
    float* in = nullptr;
    if (c.parallel_residual) {
      in = t ? t->ffn.norm_in : layer_in;
      be.copy(x, in, (int64_t)rows * d);
    }
    // x ← x + SelfAttention(N(x))                 (post-norm: x ← N(x + SelfAttention(x)))
    residual(
        x, rows, L.norm_self, t ? &t->self : nullptr, r.dropout, l, Sublayer::SelfAttention,
        Sublayer::NormSelf,
        [&](const float* in, float* out) {
          selfAttention(in, out, r, l, L.self_attn, t ? &t->self_attn : nullptr);
        },
        nullptr, L.has_post_norms ? &L.post_self : nullptr);
    // x ← x + CrossAttention(N(x), memory)       (an encoder-decoder's decoder)
    if (L.has_cross)
      residual(x, rows, L.norm_cross, t ? &t->cross : nullptr, r.dropout, l,
               Sublayer::CrossAttention, Sublayer::NormCross, [&](const float* in, float* out) {
                 crossAttention(in, out, r, l, L.cross_attn, t ? &t->cross_attn : nullptr);
               });
    // x ← x + FeedForward(N(x))                  (none in an attention-only model, d_ff 0)
    if (c.d_ff > 0)
      residual(
          x, rows, L.norm_ffn, t ? &t->ffn : nullptr, r.dropout, l, Sublayer::FeedForward,
          Sublayer::NormFeedForward,
          [&](const float* f_in, float* out) { feedForward(f_in, out, rows, L, t, r.dropout); }, in,
          L.has_post_norms ? &L.post_ffn : nullptr);
    patchStream(r, l, x);
    if (rec && rec->keepsActivations()) rec->residual(l, x, rows);
    ++*done;
    if (o.progress) o.progress(*done, total);
  }
  if (!c.final_norm) return;
  // x ← N(x), the stack's final norm
  const bool keep = rec && rec->keepsActivations();
  float* in = r.tape ? r.tape->final_in : keep ? h : x;
  if (in != x) be.copy(x, in, (int64_t)rows * d);
  finalNorm(st, in, x, rows);
  if (keep) rec->sublayer(-1, Sublayer::FinalNorm, in, x, rows);
}

void Pass::finalNorm(const DeviceStack& st, const float* x, float* y, int rows) {
  norm(x, st.final_norm, y, rows, c.layer_norm_eps);
}

template <class F>
void Pass::residual(float* x, int rows, const DeviceNorm& n, SublayerTape* t, float p, int layer,
                    Sublayer s, Sublayer ns, F&& f, const float* from, const DeviceNorm* post) {
  const int64_t cells = (int64_t)rows * d;
  const bool keep = rec && rec->keepsActivations();
  if (c.norm == NormPlacement::Pre) {
    const float* src = from ? from : x;
    float* normed = h;
    if (t) {
      if (src != t->norm_in) be.copy(src, t->norm_in, cells);
      normed = t->f_in;
    }
    norm(src, n, normed, rows, c.layer_norm_eps);
    if (keep) rec->sublayer(layer, ns, src, normed, rows);
    f(normed, y);
    if (post) {  // Gemma 2: x ← x + N₂(f(N₁(x))); no tape (training refuses sandwich norms)
      norm(y, *post, post_out, rows, c.layer_norm_eps);
      be.copy(post_out, y, cells);
    }
    if (keep) rec->sublayer(layer, s, normed, y, rows);
    if (t) be.dropout_forward(y, cells, p, t->seed);
    be.residual_forward(y, x, cells);
  } else {
    const float* in = x;
    float* sum = y;
    if (t) {
      be.copy(x, t->f_in, cells);
      in = t->f_in;
      sum = t->norm_in;
    }
    f(in, sum);
    if (keep) rec->sublayer(layer, s, in, sum, rows);
    if (t) be.dropout_forward(sum, cells, p, t->seed);
    be.residual_forward(in, sum, cells);
    norm(sum, n, x, rows, c.layer_norm_eps);
    if (keep) rec->sublayer(layer, ns, sum, x, rows);
  }
}

void Pass::selfAttention(const float* in, float* out, const StackRun& r, int l,
                         const DeviceAttention& W, AttentionTape* t) {
  const KvStore& s = r.store;
  const int K = s.past + r.n;
  float* qs = t ? t->q : q;
  float* kvs = s.kvAt(l);
  linear(in, W.q, qs, r.B * r.n);                   // q [B, n, A]
  project(in, W.kv, kvs, r.B, r.n, s.past, s.cap);  // k|v rows [past, past + n) [B, ·, KV]
  if (W.q_norm.gamma) {  // each head's q and new k normalised (Qwen3's q_norm and k_norm)
    if (t) {             // a training pass: its own buffers, the whole batch (past 0)
      be.copy(qs, t->q_raw, (int64_t)r.B * r.n * A);
      be.copy(kvs, t->kv_raw, (int64_t)r.B * r.n * KV);
    }
    be.head_norm_forward(c.norm_kind, {qs, (int64_t)r.n * A, A}, W.q_norm.gamma, r.B, r.n, H, c.d_k,
                         c.layer_norm_eps);
    be.head_norm_forward(c.norm_kind, {kvs + (int64_t)s.past * KV, (int64_t)s.cap * KV, KV},
                         W.k_norm.gamma, r.B, r.n, Hkv, c.d_k, c.layer_norm_eps);
  }
  if (c.positional == Positional::Rotary) {  // q and the new k turned by their positions
    applyRotary(be, c, dw, {qs, (int64_t)r.n * A, A}, r.B, r.n, H, s.past, false);
    applyRotary(be, c, dw, {kvs + (int64_t)s.past * KV, (int64_t)s.cap * KV, KV}, r.B, r.n, Hkv,
                s.past, false);
  }
  const HeadsView qv{qs, (int64_t)r.n * A, A};
  const HeadsView kv{kvs, (int64_t)s.cap * KV, KV};
  attend(r.self_kind, l, qv, kv, r.B, r.n, K, s.past, s.past, *r.self_mask, r.self_mask_tape, t);
  if (!t) patchHeads(r, r.self_kind, l);
  linear(t ? t->ctx : ctx, W.out, out, r.B * r.n);  // out [rows, d] ← ctx·W_oᵀ
  if (rec) rec->heads(ctx, r.B * r.n);
}

void Pass::crossAttention(const float* in, float* out, const StackRun& r, int l,
                          const DeviceAttention& W, AttentionTape* t) {
  const Model::Encoded& e = *r.enc;
  float* qs = t ? t->q : q;
  linear(in, W.q, qs, r.B * r.n);  // q [B, n, A]
  const HeadsView qv{qs, (int64_t)r.n * A, A};
  const HeadsView kv{e.cross_kv[l]->f32(), (int64_t)e.S * KV, KV};
  // The source's keys and values are new only in the first run over a sentence.
  attend(AttentionKind::Cross, l, qv, kv, r.B, r.n, e.S, r.store.past, r.store.past == 0 ? 0 : e.S,
         *r.cross_mask, r.cross_mask_tape, t);
  if (!t) patchHeads(r, AttentionKind::Cross, l);
  linear(t ? t->ctx : ctx, W.out, out, r.B * r.n);
  if (rec) rec->heads(ctx, r.B * r.n);
}

void Pass::feedForward(const float* in, float* out, int rows, const DeviceLayer& L, LayerTape* t,
                       float p) {
  const int64_t cells = (int64_t)rows * c.d_ff;
  if (c.gated_ffn) {  // out = fc2(act(gate(x)) ⊙ up(x)), gate | up one projection [rows, 2·d_ff]
    float* pre = t ? t->ffn_pre : ffn;
    float* hidden = t ? t->ffn_act : ffn_act;
    linear(in, L.fc1, pre, rows);
    be.gated_activation_forward(pre, hidden, rows, c.d_ff, c.activation);  // [rows, d_ff]
    if (t) be.dropout_forward(hidden, cells, p, t->ffn_seed);
    linear(hidden, L.fc2, out, rows);
    return;
  }
  float* hidden = ffn;
  if (t) {
    linear(in, L.fc1, t->ffn_pre, rows);  // [rows, d_ff]
    hidden = t->ffn_act;
    be.copy(t->ffn_pre, hidden, cells);
  } else {
    linear(in, L.fc1, hidden, rows);
  }
  be.activation_forward(hidden, cells, c.activation);
  if (t) be.dropout_forward(hidden, cells, p, t->ffn_seed);
  linear(hidden, L.fc2, out, rows);  // out [rows, d]
}

void Pass::attend(AttentionKind kind, int layer, HeadsView qv, HeadsView kv, int B, int n, int Tk,
                  int q0, int kv0, const MaskRule& mask, const uint8_t* tape_mask,
                  AttentionTape* t) {
  const float* table = kind != AttentionKind::Cross ? stackOf(kind).relative_bias : nullptr;
  AttentionBlock* block = rec ? rec->block(kind, layer, n, Tk, q0, mask, table) : nullptr;
  if (rec) rec->vectors(block, qv, kv, Ak, kv0);
  const float cap = c.attn_softcap;
  float* context = t ? t->ctx : ctx;
  std::vector<uint8_t> host_rows;
  for (int b = 0; b < B; ++b) {
    const HeadsView kb{kv.data + b * kv.batch_stride, 0, kv.row_stride};
    const HeadsView vb{kb.data + Ak, 0, kv.row_stride};
    for (int i0 = 0; i0 < n; i0 += chunk) {
      const int m = std::min(chunk, n - i0);
      const int64_t cells = (int64_t)H * m * Tk;
      const HeadsView qb{qv.data + b * qv.batch_stride + (int64_t)i0 * qv.row_stride, 0,
                         qv.row_stride};
      // a tape's chunk is the whole sentence: its probabilities [H, n, Tk] where the backward reads
      float* pr = t ? t->probs + (int64_t)b * cells : probs;
      // [H, m, Tk]; soft-capped (Gemma 2): cap·tanh(QKᵀ·scale / cap), the division in the scale
      be.attention_scores_forward(qb, kb, scores, 1, H, Hkv, m, Tk, c.d_k,
                                  cap > 0.0f ? c.scoreScale() / cap : c.scoreScale());
      if (cap > 0.0f) softcap(scores, cells, cap, true);
      // T5: scores + the stack's relative position bias (self-attention), before the mask
      if (table)
        be.position_bias_forward(table, scores, 1, H, m, Tk, q0 + i0, c.relative_buckets,
                                 c.relative_max_distance, kind == AttentionKind::EncoderSelf);
      const uint8_t* mk = tape_mask ? tape_mask + ((int64_t)b * n + i0) * Tk
                                    : maskRows(mask, b, q0 + i0, m, Tk, host_rows);
      const float* in = tempered(kind, layer, scores, m, Tk);
      be.masked_softmax_forward(in, mk, pr, 1, H, m, Tk, c.mask_fill);
      if (block) {
        if (tape_mask) host_rows = maskRowsOnHost(mask, b, q0 + i0, m, Tk);
        rec->rows(block, b, i0, m, in, host_rows.data(), pr);
      }
      be.attention_context_forward(switchedOff(kind, layer, pr, m, Tk), vb,
                                   context + ((int64_t)b * n + i0) * C, 1, H, Hkv, m, Tk,
                                   c.d_v);  // ctx [B, n, C]
    }
  }
}

const uint8_t* Pass::maskRows(const MaskRule& mask, int b, int pos0, int m, int Tk,
                              std::vector<uint8_t>& host_rows) {
  host_rows = maskRowsOnHost(mask, b, pos0, m, Tk);
  a.put(mask_rows, host_rows);
  return mask_rows;
}

std::vector<uint8_t> maskRowsOnHost(const MaskRule& mask, int b, int pos0, int m, int Tk) {
  std::vector<uint8_t> out((size_t)m * Tk);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < Tk; ++j) out[(size_t)i * Tk + j] = mask.masked(b, pos0 + i, j) ? 1 : 0;
  return out;
}

void Pass::softcap(float* x, int64_t n, float cap, bool divided) {
  if (!divided) be.scale_forward(x, n, 1.0f / cap);
  be.activation_forward(x, n, Activation::Tanh);
  be.scale_forward(x, n, cap);
}

const DeviceStack& Pass::stackOf(AttentionKind kind) const {
  return kind == AttentionKind::EncoderSelf ? dw.enc : dw.dec;
}

void Pass::patchStream(const StackRun& r, int layer, float* x) {
  if (!o.patches || r.tape) return;
  const Side side = r.self_kind == AttentionKind::EncoderSelf ? Side::Source : Side::Target;
  for (const StreamPatch& p : o.patches->streams) {
    const int i = p.position - r.store.past;  // the row of this run
    if (p.side != side || p.layer != layer || p.sentence < 0 || p.sentence >= r.B || i < 0 ||
        i >= r.n)
      continue;
    be.copy(p.values, x + ((int64_t)p.sentence * r.n + i) * d, d);
  }
}

void Pass::patchHeads(const StackRun& r, AttentionKind kind, int layer) {
  if (!o.patches) return;
  const int dv = c.d_v;
  for (const HeadPatch& p : o.patches->heads) {
    if (p.kind != kind || p.layer != layer || p.head < 0 || p.head >= H || p.sentence < 0 ||
        p.sentence >= r.B)
      continue;
    for (int i = 0; i < r.n; ++i)  // head h's slice of row (sentence, past + i)
      be.copy(p.values + (int64_t)(r.store.past + i) * C + p.head * dv,
              ctx + ((int64_t)p.sentence * r.n + i) * C + p.head * dv, dv);
  }
}

template <class Factor>
const float* Pass::scaledHeads(AttentionKind kind, int layer, const float* x, int m, int Tk,
                               Factor&& factor) {
  const int64_t head_cells = (int64_t)m * Tk;
  bool copied = false;
  for (const auto& iv : o.interventions) {
    const float f = factor(iv);
    if (iv.kind != kind || iv.layer != layer || iv.head < 0 || iv.head >= H || f == 1.0f) continue;
    if (!copied) be.copy(x, extra, (int64_t)H * head_cells);
    copied = true;
    be.scale_forward(extra + (int64_t)iv.head * head_cells, head_cells, f);
  }
  return copied ? extra : x;
}

const float* Pass::tempered(AttentionKind kind, int layer, const float* sc, int m, int Tk) {
  return scaledHeads(kind, layer, sc, m, Tk,
                     [](const HeadIntervention& iv) { return 1.0f / iv.temperature; });
}

const float* Pass::switchedOff(AttentionKind kind, int layer, const float* pr, int m, int Tk) {
  return scaledHeads(kind, layer, pr, m, Tk,
                     [](const HeadIntervention& iv) { return iv.off ? 0.0f : 1.0f; });
}

void Pass::project(const float* x, const DeviceLinear& l, float* store, int B, int n, int past,
                   int cap) {
  const int width = l.out;
  if (B == 1 || (past == 0 && cap == n)) {
    linear(x, l, store + (int64_t)past * width, B * n);
    return;
  }
  for (int b = 0; b < B; ++b)
    linear(x + (int64_t)b * n * d, l, store + ((int64_t)b * cap + past) * width, n);
}

float* Pass::tokenHead(const float* x, int rows, HeadTape* t, float* out) {
  if (c.tokenHead() == TokenHead::None) return nullptr;
  const DeviceHead& hd = dw.head;
  float* logits = t ? t->logits : out ? out : a.floats((int64_t)rows * hd.projection.out);
  const float* in = x;
  if (c.output_scale) {  // T5's tied embeddings: the stream × 1/√d_model before lm_head
    const int64_t cells = (int64_t)rows * d;
    float* scaled = t ? t->scaled_in : y;
    be.copy(x, scaled, cells);
    be.scale_forward(scaled, cells, 1.0f / std::sqrt((float)d));
    in = scaled;
  }
  if (c.tokenHead() == TokenHead::BertMlm) {
    // BERT's masked-LM head: N(act(x·W + b)) · decoderᵀ + decoder_bias.
    const int64_t cells = (int64_t)rows * d;
    float* act = y;
    if (t) {
      linear(x, hd.mlm_transform, t->mlm_pre, rows);
      act = t->mlm_act;
      be.copy(t->mlm_pre, act, cells);
    } else {
      linear(x, hd.mlm_transform, act, rows);
    }
    be.activation_forward(act, cells, c.activation);
    float* normed = t ? t->mlm_out : y;
    norm(act, hd.mlm_norm, normed, rows, c.layer_norm_eps);
    in = normed;
  }
  linear(in, hd.projection, logits, rows);  // logits [rows, V]
  if (c.final_softcap > 0.0f)               // Gemma 2: cap·tanh(logits / cap)
    softcap(logits, (int64_t)rows * hd.projection.out, c.final_softcap, false);
  return logits;
}

float* Pass::classHead(const float* x, int B, int n, HeadTape* t) {
  if (c.classHead() == ClassHead::None) return nullptr;
  const DeviceHead& hd = dw.head;
  float* pooled = t ? t->pooled : a.floats((int64_t)B * d);
  float* logits = t ? t->class_logits : a.floats((int64_t)B * hd.classifier.out);
  if (c.classHead() == ClassHead::MeanPool) {
    be.mean_pool_forward(x, pooled, B, n, d);
    linear(pooled, hd.classifier, logits, B);
  } else {  // BERT's pooler: tanh(W·x[:, 0] + b), then the classifier
    for (int b = 0; b < B; ++b) be.copy(x + (int64_t)b * n * d, pooled + (int64_t)b * d, d);
    float* act = y;
    if (t) {
      linear(pooled, hd.pooler, t->pooler_pre, B);
      act = t->pooler_act;
      be.copy(t->pooler_pre, act, (int64_t)B * d);
    } else {
      linear(pooled, hd.pooler, act, B);
    }
    be.activation_forward(act, (int64_t)B * d, Activation::Tanh);
    linear(act, hd.classifier, logits, B);
  }
  return logits;
}

}  // namespace attnviz

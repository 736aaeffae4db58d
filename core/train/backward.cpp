#include "train/backward.h"

#include <cmath>

namespace attnviz {

void Backward::linear(const float* dy, const float* x, const DeviceLinear& l, float* dx, int rows) {
  // dx += dy·W, and the weight's and bias's gradients
  be.linear_backward(dy, x, l.w, dx, grads.of(l.w), grads.of(l.b), rows, l.in, l.out);
}

void Backward::norm(const float* dy, const float* x, const DeviceNorm& n, float* dx, int rows,
                    float eps) {
  // dx += the norm's input gradient, and γ's and β's
  be.norm_backward(c.norm_kind, dy, x, n.gamma, dx, grads.of(n.gamma), grads.of(n.beta), rows, d,
                   eps);
}

template <class F>
void Backward::residual(float* dx, int rows, const DeviceNorm& n, const SublayerTape& t, float p,
                        F&& back, const float* up) {
  const int64_t cells = (int64_t)rows * d;
  if (c.norm == NormPlacement::Pre) {  // x_out = x + drop(f(N(x)))
    be.copy(up ? up : dx, g.dy, cells);
    be.dropout_backward(g.dy, cells, p, t.seed);
    be.zero(g.dfin, cells);
    back(t.f_in, g.dy, g.dfin);
    norm(g.dfin, t.norm_in, n, dx, rows, c.layer_norm_eps);
  } else {  // x_out = N(x + drop(f(x)))
    be.zero(g.dn, cells);
    norm(dx, t.norm_in, n, g.dn, rows, c.layer_norm_eps);
    be.copy(g.dn, dx, cells);
    be.copy(g.dn, g.dy, cells);
    be.dropout_backward(g.dy, cells, p, t.seed);
    back(t.f_in, g.dy, dx);
  }
}

void Backward::attend(HeadsView qv, HeadsView kv, const float* probs, const uint8_t* mask, int B,
                      int n, int Tk, HeadsGrad dk, HeadsGrad dv, const DeviceStack* bias) {
  const HeadsView vv{kv.data + Ak, kv.batch_stride, kv.row_stride};
  be.attention_context_backward(g.dctx, probs, vv, g.dprobs, dv, B, H, Hkv, n, Tk, c.d_v);
  be.masked_softmax_backward(probs, g.dprobs, mask, g.dprobs, B, H, n, Tk);
  // T5's relative position bias: the table's gradient, the sum of each bucket's score gradients
  if (bias && bias->relative_bias && grads.of(bias->relative_bias))
    be.position_bias_backward(g.dprobs, grads.of(bias->relative_bias), B, H, n, Tk, 0,
                              c.relative_buckets, c.relative_max_distance, bias == &dw.enc);
  be.zero(g.dq, (int64_t)B * n * A);
  be.attention_scores_backward(g.dprobs, qv, kv, {g.dq, (int64_t)n * A, A}, dk, B, H, Hkv, n, Tk,
                               c.d_k, c.scoreScale());
}

void Backward::selfAttention(const DeviceStack& st, const DeviceAttention& W,
                             const AttentionTape& t, const uint8_t* mask, const float* in,
                             const float* dout, float* din, int B, int n) {
  const int rows = B * n;
  be.zero(g.dctx, (int64_t)rows * C);
  linear(dout, t.ctx, W.out, g.dctx, rows);
  be.zero(g.dkv, (int64_t)rows * KV);
  const int64_t kv_batch = (int64_t)n * KV;
  attend({t.q, (int64_t)n * A, A}, {t.kv, kv_batch, KV}, t.probs, mask, B, n, n,
         {g.dkv, kv_batch, KV}, {g.dkv + Ak, kv_batch, KV}, &st);
  if (c.positional == Positional::Rotary) {  // back through the rotation of q and k
    applyRotary(be, c, dw, {g.dq, (int64_t)n * A, A}, B, n, H, 0, true);
    applyRotary(be, c, dw, {g.dkv, kv_batch, KV}, B, n, Hkv, 0, true);
  }
  if (W.q_norm.gamma) {  // back through the per-head norms of q and k, in place
    be.head_norm_backward(c.norm_kind, {g.dq, (int64_t)n * A, A}, {t.q_raw, (int64_t)n * A, A},
                          W.q_norm.gamma, grads.of(W.q_norm.gamma), B, n, H, c.d_k,
                          c.layer_norm_eps);
    be.head_norm_backward(c.norm_kind, {g.dkv, kv_batch, KV}, {t.kv_raw, kv_batch, KV},
                          W.k_norm.gamma, grads.of(W.k_norm.gamma), B, n, Hkv, c.d_k,
                          c.layer_norm_eps);
  }
  linear(g.dq, in, W.q, din, rows);
  linear(g.dkv, in, W.kv, din, rows);
}

void Backward::crossAttention(const DeviceAttention& W, const AttentionTape& t, const uint8_t* mask,
                              const Model::Encoded& e, size_t layer, const float* in,
                              const float* dout, float* din, float* dmemory, int B, int n) {
  const int rows = B * n, S = e.S;
  be.zero(g.dctx, (int64_t)rows * C);
  linear(dout, t.ctx, W.out, g.dctx, rows);
  be.zero(g.dkv, (int64_t)B * S * KV);
  const int64_t kv_batch = (int64_t)S * KV;
  attend({t.q, (int64_t)n * A, A}, {e.cross_kv[layer]->f32(), kv_batch, KV}, t.probs, mask, B, n, S,
         {g.dkv, kv_batch, KV}, {g.dkv + Ak, kv_batch, KV});
  linear(g.dq, in, W.q, din, rows);
  // dmemory += through this layer's keys and values
  linear(g.dkv, e.memory->f32(), W.kv, dmemory, B * S);
}

void Backward::feedForward(const DeviceLayer& L, const LayerTape& t, const float* in,
                           const float* dout, float* din, int rows, float p) {
  const int64_t cells = (int64_t)rows * c.d_ff;
  if (c.gated_ffn) {  // g.dffn: [rows, d_ff] the activation's gradient, then [rows, 2·d_ff] fc1's
    float* dpre = g.dffn + cells;
    be.zero(g.dffn, cells);
    linear(dout, t.ffn_act, L.fc2, g.dffn, rows);
    be.dropout_backward(g.dffn, cells, p, t.ffn_seed);
    be.gated_activation_backward(t.ffn_pre, g.dffn, dpre, rows, c.d_ff, c.activation);
    linear(dpre, in, L.fc1, din, rows);
    return;
  }
  be.zero(g.dffn, cells);
  linear(dout, t.ffn_act, L.fc2, g.dffn, rows);
  be.dropout_backward(g.dffn, cells, p, t.ffn_seed);
  be.activation_backward(t.ffn_pre, g.dffn, g.dffn, cells, c.activation);
  linear(g.dffn, in, L.fc1, din, rows);
}

void Backward::layers(float* dx, const DeviceStack& st, const StackTape& t,
                      const Model::Encoded* enc, float p, float* dmemory) {
  const int rows = t.B * t.n;
  if (c.final_norm) {
    be.zero(g.dn, (int64_t)rows * d);
    norm(dx, t.final_in, st.final_norm, g.dn, rows, c.layer_norm_eps);
    be.copy(g.dn, dx, (int64_t)rows * d);
  }
  for (size_t l = st.layers.size(); l-- > 0;) {
    const DeviceLayer& L = st.layers[l];
    const LayerTape& lt = t.layers[l];
    // The parallel residual: both sublayers receive the layer output's gradient, kept in g.dn (a
    // pre-norm layer's free scratch) while the feed-forward's share is added to dx.
    const float* up = nullptr;
    if (c.parallel_residual) {
      be.copy(dx, g.dn, (int64_t)rows * d);
      up = g.dn;
    }
    if (c.d_ff > 0)  // an attention-only model (d_ff 0) has no feed-forward
      residual(dx, rows, L.norm_ffn, lt.ffn, p,
               [&](const float* in, const float* dout, float* din) {
                 feedForward(L, lt, in, dout, din, rows, p);
               });
    if (L.has_cross)
      residual(dx, rows, L.norm_cross, lt.cross, p,
               [&](const float* in, const float* dout, float* din) {
                 crossAttention(L.cross_attn, lt.cross_attn, t.cross_mask, *enc, l, in, dout, din,
                                dmemory, t.B, t.n);
               });
    residual(
        dx, rows, L.norm_self, lt.self, p,
        [&](const float* in, const float* dout, float* din) {
          selfAttention(st, L.self_attn, lt.self_attn, t.mask, in, dout, din, t.B, t.n);
        },
        up);
  }
}

void Backward::embedSum(const DeviceStack& st, const StackTape& t, float* dx, float p) {
  const int rows = t.B * t.n;
  const int64_t cells = (int64_t)rows * d;
  be.dropout_backward(dx, cells, p, t.embed_seed);
  if (c.embed_norm) {
    be.zero(g.dn, cells);
    norm(dx, t.embed_norm_in, st.embed_norm, g.dn, rows, c.embed_norm_eps);
    be.copy(g.dn, dx, cells);
  }
}

void Backward::embed(const DeviceStack& st, const StackTape& t, float* dx, float p) {
  const int rows = t.B * t.n;
  embedSum(st, t, dx, p);
  if (t.segs && st.segments) be.gather_add_backward(t.segs, dx, grads.of(st.segments), rows, d);
  const float scale = c.embed_scale ? std::sqrt((float)d) : 1.0f;
  // Learned positions are a parameter (from row position_offset on); a sinusoid table is not.
  float* dpositions = st.learned_positions ? grads.of(st.positions) : nullptr;
  be.embedding_backward(t.ids, dx, grads.of(st.tokens), dpositions, t.B, t.n, d, 0, scale);
}

void Backward::tokenHead(const HeadTape& t, const float* x, const float* dlogits, float* dx,
                         int rows) {
  const DeviceHead& h = dw.head;
  if (c.tokenHead() == TokenHead::Linear && c.output_scale) {
    // lm_head read x·s (s = 1/√d): the weight's gradient from that input, dx += s · dlogits·W
    const int64_t cells = (int64_t)rows * d;
    be.zero(g.dn, cells);
    linear(dlogits, t.scaled_in, h.projection, g.dn, rows);
    be.scale_forward(g.dn, cells, 1.0f / std::sqrt((float)d));
    be.residual_backward(g.dn, dx, cells);
  } else if (c.tokenHead() == TokenHead::Linear) {
    linear(dlogits, x, h.projection, dx, rows);
  } else if (c.tokenHead() == TokenHead::BertMlm) {
    const int64_t cells = (int64_t)rows * d;
    be.zero(g.dy, cells);
    linear(dlogits, t.mlm_out, h.projection, g.dy, rows);
    be.zero(g.dn, cells);
    norm(g.dy, t.mlm_act, h.mlm_norm, g.dn, rows, c.layer_norm_eps);
    be.activation_backward(t.mlm_pre, g.dn, g.dn, cells, c.activation);
    linear(g.dn, x, h.mlm_transform, dx, rows);
  }
}

void Backward::classHead(const HeadTape& t, const float* dlogits, float* dx, int B, int n) {
  const DeviceHead& h = dw.head;
  const int64_t cells = (int64_t)B * d;
  if (c.classHead() == ClassHead::MeanPool) {
    be.zero(g.dy, cells);
    linear(dlogits, t.pooled, h.classifier, g.dy, B);
    be.mean_pool_backward(g.dy, dx, B, n, d);
  } else if (c.classHead() == ClassHead::Pooler) {
    be.zero(g.dy, cells);
    linear(dlogits, t.pooler_act, h.classifier, g.dy, B);
    be.activation_backward(t.pooler_pre, g.dy, g.dy, cells, Activation::Tanh);
    be.zero(g.dn, cells);
    linear(g.dy, t.pooled, h.pooler, g.dn, B);
    for (int b = 0; b < B; ++b)
      be.residual_backward(g.dn + (int64_t)b * d, dx + (int64_t)b * n * d, d);
  }
}

}  // namespace attnviz

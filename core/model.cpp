#include "model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "error.h"
#include "positional.h"
#include "tokenizer.h"

namespace attnviz {

namespace {

struct DeviceLinear {
  BufferPtr w, b;  // w: [out, in]; b: [out] or null
  int in = 0, out = 0;
  const float* wp() const { return w->f32(); }
  const float* bp() const { return b ? b->f32() : nullptr; }
};

struct DeviceNorm {
  BufferPtr gamma, beta;  // null = identity affine
  const float* g() const { return gamma ? gamma->f32() : nullptr; }
  const float* bt() const { return beta ? beta->f32() : nullptr; }
};

// Queries, and keys with values as one projection [W_k; W_v]: queries come from the layer's
// input; keys and values from the same input (self-attention, into the key/value cache) or from
// the encoder's output (cross-attention, computed once per sentence).
struct DeviceAttention {
  DeviceLinear q;    // [A, d]
  DeviceLinear kv;   // [A + Av, d]
  DeviceLinear out;  // [d, Av]
};

struct DeviceLayer {
  DeviceAttention self_attn, cross_attn;
  DeviceNorm norm_self, norm_cross, norm_ffn;
  DeviceLinear fc1, fc2;
  bool has_cross = false;
};

struct DeviceStack {
  BufferPtr tokens;                  // [vocab, d]
  BufferPtr segments;                // [n_segments, d] or null
  BufferPtr learned_positions;       // [max_len, d] or null
  const float* positions = nullptr;  // learned, or the model's shared sinusoid table
  DeviceNorm embed_norm;
  std::vector<DeviceLayer> layers;
  DeviceNorm final_norm;
};

struct DeviceHead {
  DeviceLinear projection, mlm_transform, pooler, classifier;
  DeviceNorm mlm_norm;
};

}  // namespace

struct DeviceWeights {
  DeviceStack enc, dec;
  DeviceHead head;
  BufferPtr sinusoid;  // [rows, d] shared by both stacks
  uint64_t bytes = 0;
};

namespace {

BufferPtr uploadFloats(Backend& be, const float* data, size_t n, uint64_t* total) {
  BufferPtr buf = be.allocate(n * sizeof(float));
  be.upload(*buf, data, n * sizeof(float));
  *total += n * sizeof(float);
  return buf;
}

// Stacks the parts' rows: [W_1; W_2; ...] and their biases (all or none have one).
DeviceLinear uploadLinear(Backend& be, std::initializer_list<const LinearWeights*> parts,
                          uint64_t* total) {
  DeviceLinear l;
  l.in = (int)(*parts.begin())->weight.dim(1);
  std::vector<float> w, b;
  bool bias = false;
  for (const LinearWeights* p : parts) bias = bias || !p->bias.empty();
  for (const LinearWeights* p : parts) {
    w.insert(w.end(), p->weight.data.begin(), p->weight.data.end());
    if (bias) {
      if (p->bias.empty())
        b.insert(b.end(), (size_t)p->weight.dim(0), 0.0f);
      else
        b.insert(b.end(), p->bias.data.begin(), p->bias.data.end());
    }
    l.out += (int)p->weight.dim(0);
  }
  l.w = uploadFloats(be, w.data(), w.size(), total);
  if (bias) l.b = uploadFloats(be, b.data(), b.size(), total);
  return l;
}

DeviceNorm uploadNorm(Backend& be, const LayerNormWeights& n, uint64_t* total) {
  DeviceNorm d;
  if (!n.identity()) {
    d.gamma = uploadFloats(be, n.gamma.ptr(), n.gamma.data.size(), total);
    d.beta = uploadFloats(be, n.beta.ptr(), n.beta.data.size(), total);
  }
  return d;
}

DeviceAttention uploadAttention(Backend& be, const AttentionWeights& a, uint64_t* total) {
  return {uploadLinear(be, {&a.q}, total), uploadLinear(be, {&a.k, &a.v}, total),
          uploadLinear(be, {&a.out}, total)};
}

DeviceStack uploadStack(Backend& be, const StackWeights& s, uint64_t* total) {
  DeviceStack d;
  d.tokens = uploadFloats(be, s.embed.tokens.ptr(), s.embed.tokens.data.size(), total);
  if (!s.embed.segments.empty())
    d.segments = uploadFloats(be, s.embed.segments.ptr(), s.embed.segments.data.size(), total);
  if (!s.embed.positions.empty()) {
    d.learned_positions =
        uploadFloats(be, s.embed.positions.ptr(), s.embed.positions.data.size(), total);
    d.positions = d.learned_positions->f32();
  }
  d.embed_norm = uploadNorm(be, s.embed.norm, total);
  for (const auto& l : s.layers) {
    DeviceLayer e;
    e.self_attn = uploadAttention(be, l.self_attn, total);
    e.norm_self = uploadNorm(be, l.norm_self, total);
    if (l.hasCross()) {
      e.has_cross = true;
      e.cross_attn = uploadAttention(be, l.cross_attn, total);
      e.norm_cross = uploadNorm(be, l.norm_cross, total);
    }
    e.fc1 = uploadLinear(be, {&l.ffn.fc1}, total);
    e.fc2 = uploadLinear(be, {&l.ffn.fc2}, total);
    e.norm_ffn = uploadNorm(be, l.norm_ffn, total);
    d.layers.push_back(std::move(e));
  }
  d.final_norm = uploadNorm(be, s.final_norm, total);
  return d;
}

void checkCancel(const ForwardOptions& o) {
  if (o.cancel && o.cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
}

// One allocation per run, carved into the run's activations (llm.c's
// malloc_and_point_activations): every size is known before the first op.
class Arena {
 public:
  Arena(Backend& be, uint64_t bytes) : be_(be), buf_(be.allocate(std::max<uint64_t>(bytes, 64))) {}
  float* floats(int64_t n) { return static_cast<float*>(take((uint64_t)n * sizeof(float))); }
  int32_t* ints(int64_t n) { return static_cast<int32_t*>(take((uint64_t)n * sizeof(int32_t))); }
  uint8_t* bytes(int64_t n) { return static_cast<uint8_t*>(take((uint64_t)n)); }
  // Copies host data into an arena region.
  template <class T>
  void put(T* dst, const std::vector<T>& src) {
    if (!src.empty()) be_.upload(*buf_, src.data(), src.size() * sizeof(T), offset(dst));
  }
  // Copies an arena region to the host.
  void get(const void* src, void* dst, uint64_t bytes) {
    if (bytes) be_.download(*buf_, dst, bytes, offset(src));
  }
  // Bytes a run needs for these many floats and bytes (with alignment slack per region).
  static uint64_t size(uint64_t floats, uint64_t bytes, int regions) {
    return floats * sizeof(float) + bytes + (uint64_t)regions * 64;
  }

 private:
  void* take(uint64_t bytes) {
    used_ = (used_ + 63) / 64 * 64;
    if (used_ + bytes > buf_->bytes())
      throw Error(ErrorKind::Backend, "internal error: the pass's arena is too small");
    void* p = buf_->u8() + used_;
    used_ += bytes;
    return p;
  }
  size_t offset(const void* p) const {
    return (size_t)(static_cast<const uint8_t*>(p) - static_cast<const uint8_t*>(buf_->data()));
  }
  Backend& be_;
  BufferPtr buf_;
  uint64_t used_ = 0;
};

// Copies n floats at p — a pointer into `buf` — to the host.
void fetchFloats(Backend& be, const DeviceBuffer& buf, const float* p, float* dst, int64_t n) {
  if (n <= 0) return;
  const size_t off =
      (size_t)(reinterpret_cast<const uint8_t*>(p) - static_cast<const uint8_t*>(buf.data()));
  be.download(buf, dst, (size_t)n * sizeof(float), off);
}

std::vector<std::vector<int>> padBatch(const std::vector<std::vector<int>>& seqs, int pad,
                                       int* len) {
  int n = 0;
  for (const auto& s : seqs) n = std::max(n, (int)s.size());
  *len = n;
  std::vector<std::vector<int>> out = seqs;
  for (auto& s : out) s.resize(n, pad);
  return out;
}

std::vector<int32_t> flatten(const std::vector<std::vector<int>>& seqs) {
  std::vector<int32_t> out;
  for (const auto& s : seqs) out.insert(out.end(), s.begin(), s.end());
  return out;
}

// One run of a stack over n new positions [past, past + n) of B sequences: x [B·n, d] holds
// their embeddings on entry and the stack's output on return. Self-attention reads its keys and
// values from kv [B, cap, A + Av] (positions [0, past + n)), into which this run writes the new
// positions' rows; queries go to q_store [B, cap, A] when given (the decoder keeps them), else to
// scratch. Attention is recorded into `blocks` (one per block, in layer order) when given.
struct StackRun {
  const DeviceStack* stack = nullptr;
  AttentionKind self_kind = AttentionKind::EncoderSelf;
  int B = 1, n = 0, past = 0, cap = 0;
  // Per layer (or one for all layers): [B, cap, A + Av] keys | values, [B, cap, A] queries (none
  // = scratch).
  std::vector<float*> kv;
  std::vector<float*> q_store;
  float* kvAt(size_t l) const { return kv.size() == 1 ? kv[0] : kv[l]; }
  float* qAt(size_t l) const {
    return q_store.empty() ? nullptr : q_store.size() == 1 ? q_store[0] : q_store[l];
  }
  const uint8_t* self_mask = nullptr;  // device [B, n, past + n]
  const std::vector<uint8_t>* self_mask_host = nullptr;
  const Model::Encoded* enc = nullptr;  // cross-attention source (decoder of an encoder-decoder)
  const uint8_t* cross_mask = nullptr;  // device [B, n, S]
  const std::vector<uint8_t>* cross_mask_host = nullptr;
  std::vector<AttentionBlock>* blocks = nullptr;
  std::vector<std::vector<float>>* future = nullptr;  // [B, H, past, n] per self block
};

class Pass {
 public:
  Pass(Backend& be, const ModelConfig& c, const ForwardOptions& o, Arena& arena, int rows,
       int max_keys)
      : be(be),
        c(c),
        o(o),
        a(arena),
        d(c.d_model),
        H(c.n_heads),
        A(c.attnWidth()),
        Av(c.valueWidth()),
        KV(c.attnWidth() + c.valueWidth()),
        host(be.hostVisible()) {
    h = a.floats((int64_t)rows * d);
    y = a.floats((int64_t)rows * d);
    q = a.floats((int64_t)rows * A);
    ctx = a.floats((int64_t)rows * Av);
    ffn = a.floats((int64_t)rows * c.d_ff);
    scores = a.floats((int64_t)rows * H * max_keys);
    probs = a.floats((int64_t)rows * H * max_keys);
    if (!o.interventions.empty()) extra = a.floats((int64_t)rows * H * max_keys);
  }
  // Arena floats a Pass takes for `rows` query rows over at most `max_keys` keys.
  static uint64_t floatsFor(const ModelConfig& c, const ForwardOptions& o, int rows, int max_keys) {
    const uint64_t per_key = (o.interventions.empty() ? 2 : 3) * (uint64_t)c.n_heads * max_keys;
    return (uint64_t)rows * (2 * c.d_model + c.attnWidth() + c.valueWidth() + c.d_ff + per_key);
  }
  static constexpr int kRegions = 8;

  void linear(const float* x, const DeviceLinear& l, float* out, int rows) {
    be.linear_forward(x, l.wp(), l.bp(), out, rows, l.in, l.out);
  }
  void norm(const float* x, const DeviceNorm& n, float* out, int rows, float eps) {
    be.layernorm_forward(x, n.g(), n.bt(), out, rows, d, eps);
  }

  // Residual wiring around a sublayer f(in, out): post-norm x = LN(x + f(x)); pre-norm
  // x = x + f(LN(x)).
  template <class F>
  void sublayer(float* x, int rows, const DeviceNorm& n, F&& f) {
    if (c.norm == NormPlacement::Pre) {
      norm(x, n, h, rows, c.layer_norm_eps);
      f(h, y);
      be.residual_forward(y, x, (int64_t)rows * d);
    } else {
      f(x, y);
      be.residual_forward(x, y, (int64_t)rows * d);
      norm(y, n, x, rows, c.layer_norm_eps);
    }
  }

  void feedForward(const float* x, const DeviceLayer& L, float* out, int rows) {
    linear(x, L.fc1, ffn, rows);
    be.activation_forward(ffn, (int64_t)rows * c.d_ff, c.activation);
    linear(ffn, L.fc2, out, rows);
  }

  // Rows [past, past + n) of each batch's region of a [B, cap, width] store ← x · Wᵀ.
  void project(const float* x, const DeviceLinear& l, float* store, int B, int n, int past,
               int cap) {
    const int width = l.out;
    if (B == 1 || (past == 0 && cap == n)) {
      linear(x, l, store + (int64_t)past * width, B * n);
      return;
    }
    for (int b = 0; b < B; ++b)
      linear(x + (int64_t)b * n * d, l, store + ((int64_t)b * cap + past) * width, n);
  }

  bool storeScores() const { return o.keep_scores && !o.scores_from_qk; }

  // out[b, h, i, c] = view[b, row0 + i, col0 + h·d + c] for i < rows (out: [B, H, rows, d]).
  void captureHeads(HeadsView view, int B, int row0, int rows, int col0, int d,
                    std::vector<float>& out) {
    out.assign((size_t)B * H * rows * d, 0.0f);
    std::vector<float> tmp((size_t)rows * view.row_stride);
    for (int b = 0; b < B; ++b) {
      if (rows == 0) break;
      be.copy_to_host(view.data + b * view.batch_stride + (int64_t)row0 * view.row_stride,
                      tmp.data(), (int64_t)(rows - 1) * view.row_stride + col0 + (int64_t)H * d);
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < rows; ++i)
          std::memcpy(&out[(((size_t)b * H + h) * rows + i) * d],
                      &tmp[(size_t)i * view.row_stride + col0 + (size_t)h * d], d * sizeof(float));
    }
  }

  // scores → mask → softmax → context for n queries over Tk keys of a block (kind, layer), with
  // the options' interventions on its heads; records the block. kv is the keys' base view (keys
  // at column 0, values at column A); key rows [kv0, Tk) are new in this run.
  void attend(AttentionKind kind, int layer, HeadsView qv, HeadsView kv, int B, int n, int Tk,
              int kv0, const uint8_t* mask, AttentionBlock* block) {
    const bool direct = host && block;
    float* sc = direct && block->hasScores() ? block->scores.data() : scores;
    float* pr = direct ? block->probs.data() : probs;
    const int dk = c.d_k;
    const HeadsView vv{kv.data + A, kv.batch_stride, kv.row_stride};
    be.attention_scores_forward(qv, kv, sc, B, H, n, Tk, dk, 1.0f / std::sqrt((float)dk));
    // Interventions on this block's heads: a temperature divides a head's scores (on a copy, so
    // the trace keeps the raw ones); a head switched off attends as usual but adds nothing.
    std::vector<const HeadIntervention*> mine;
    for (const auto& iv : o.interventions)
      if (iv.kind == kind && iv.layer == layer && iv.head >= 0 && iv.head < H) mine.push_back(&iv);
    const int64_t head_cells = (int64_t)n * Tk;
    const float* softmax_in = sc;
    bool tempered = false;
    for (const auto* iv : mine) tempered = tempered || iv->temperature != 1.0f;
    if (tempered) {
      be.copy(sc, extra, (int64_t)B * H * head_cells);
      for (const auto* iv : mine)
        if (iv->temperature != 1.0f)
          for (int b = 0; b < B; ++b)
            be.scale_forward(extra + ((int64_t)b * H + iv->head) * head_cells, head_cells,
                             1.0f / iv->temperature);
      softmax_in = extra;
    }
    be.masked_softmax_forward(softmax_in, mask, pr, B, H, n, Tk, c.mask_fill);
    if (block && !direct) {
      const int64_t cells = (int64_t)B * H * n * Tk;
      a.get(pr, block->probs.data(), cells * sizeof(float));
      if (block->hasScores()) a.get(sc, block->scores.data(), cells * sizeof(float));
    }
    if (block && (o.keep_qkv || block->scores_from_qk)) {
      block->d_k = dk;
      block->d_v = c.d_v;
      block->kv0 = kv0;
      captureHeads(qv, B, 0, n, 0, dk, block->q);
      captureHeads(kv, B, kv0, Tk - kv0, 0, dk, block->k);
      if (o.keep_qkv) captureHeads(kv, B, kv0, Tk - kv0, A, c.d_v, block->v);
    }
    const float* context_probs = pr;
    bool off = false;
    for (const auto* iv : mine) off = off || iv->off;
    if (off) {
      be.copy(pr, extra, (int64_t)B * H * head_cells);
      for (const auto* iv : mine)
        if (iv->off)
          for (int b = 0; b < B; ++b)
            be.scale_forward(extra + ((int64_t)b * H + iv->head) * head_cells, head_cells, 0.0f);
      context_probs = extra;
    }
    be.attention_context_forward(context_probs, vv, ctx, B, H, n, Tk, c.d_v);
  }

  // All layers of one stack run (see StackRun).
  void layers(float* x, const StackRun& r, int* done, int total) {
    const int rows = r.B * r.n, K = r.past + r.n;
    const DeviceStack& st = *r.stack;
    for (size_t l = 0; l < st.layers.size(); ++l) {
      checkCancel(o);
      const DeviceLayer& L = st.layers[l];
      AttentionBlock* self_block = nullptr;
      if (r.blocks) {
        r.blocks->emplace_back(r.self_kind, (int)l, r.B, H, r.n, K, storeScores());
        r.blocks->back().scores_from_qk = o.keep_scores && o.scores_from_qk;
        r.blocks->back().mask = *r.self_mask_host;
        self_block = &r.blocks->back();
      }
      sublayer(x, rows, L.norm_self, [&](const float* in, float* out) {
        float* store = r.qAt(l);
        float* qs = store ? store : q;
        const int qcap = store ? r.cap : r.n, qpast = store ? r.past : 0;
        float* kvs = r.kvAt(l);
        project(in, L.self_attn.q, qs, r.B, r.n, qpast, qcap);
        project(in, L.self_attn.kv, kvs, r.B, r.n, r.past, r.cap);
        const HeadsView qv{qs + (int64_t)qpast * A, (int64_t)qcap * A, A};
        const HeadsView kv{kvs, (int64_t)r.cap * KV, KV};
        attend(r.self_kind, (int)l, qv, kv, r.B, r.n, K, r.past, r.self_mask, self_block);
        linear(ctx, L.self_attn.out, out, rows);
        // The new keys as the earlier rows see them: the masked cells of the full matrix.
        if (r.future && r.past > 0 && storeScores() && store) {
          std::vector<float>& f = r.future->emplace_back((size_t)r.B * H * r.past * r.n);
          float* dst = host ? f.data() : scores;
          be.attention_scores_forward({store, (int64_t)r.cap * A, A},
                                      {kvs + (int64_t)r.past * KV, (int64_t)r.cap * KV, KV}, dst,
                                      r.B, H, r.past, r.n, c.d_k, 1.0f / std::sqrt((float)c.d_k));
          if (!host) a.get(scores, f.data(), f.size() * sizeof(float));
        } else if (r.future) {
          r.future->emplace_back();
        }
      });
      if (L.has_cross) {
        const Model::Encoded& e = *r.enc;
        AttentionBlock* cross_block = nullptr;
        if (r.blocks) {
          r.blocks->emplace_back(AttentionKind::Cross, (int)l, r.B, H, r.n, e.S, storeScores());
          r.blocks->back().scores_from_qk = o.keep_scores && o.scores_from_qk;
          r.blocks->back().mask = *r.cross_mask_host;
          cross_block = &r.blocks->back();
        }
        if (r.future) r.future->emplace_back();
        sublayer(x, rows, L.norm_cross, [&](const float* in, float* out) {
          linear(in, L.cross_attn.q, q, rows);
          const float* m = e.cross_kv[l]->f32();
          const HeadsView qv{q, (int64_t)r.n * A, A};
          const HeadsView kv{m, (int64_t)e.S * KV, KV};
          // The source's keys and values are new only in the first run over a sentence.
          attend(AttentionKind::Cross, (int)l, qv, kv, r.B, r.n, e.S, r.past == 0 ? 0 : e.S,
                 r.cross_mask, cross_block);
          linear(ctx, L.cross_attn.out, out, rows);
        });
      }
      sublayer(x, rows, L.norm_ffn,
               [&](const float* in, float* out) { feedForward(in, L, out, rows); });
      ++*done;
      if (o.progress) o.progress(*done, total);
    }
    if (c.final_norm) norm(x, st.final_norm, x, rows, c.layer_norm_eps);
  }

  // x [B·n, d] ← tokens[id]·scale (+ segments[seg]) + positions[pos0 …], then the embedding norm.
  void embed(const DeviceStack& st, const int32_t* ids, const int32_t* segs, float* x, int B, int n,
             int pos0) {
    const float scale = c.embed_scale ? std::sqrt((float)d) : 1.0f;
    be.embedding_forward(ids, st.tokens->f32(), st.positions, x, B, n, d, pos0, scale);
    if (segs && st.segments) be.gather_add_forward(segs, st.segments->f32(), x, B * n, d);
    if (c.embed_norm) norm(x, st.embed_norm, x, B * n, c.embed_norm_eps);
  }

  Backend& be;
  const ModelConfig& c;
  const ForwardOptions& o;
  Arena& a;
  const int d, H, A, Av, KV;
  const bool host;
  float *h, *y, *q, *ctx, *ffn, *scores, *probs, *extra = nullptr;
};

// Key-padding mask [B, q_len, K]: 1 where key j of sentence b is padding (and the mask is on).
std::vector<uint8_t> keyPaddingMask(const std::vector<std::vector<int>>& keys, int q_len,
                                    int pad_id, bool on, bool start_is_not_pad) {
  std::vector<uint8_t> m;
  const int K = keys.empty() ? 0 : (int)keys[0].size();
  m.assign(keys.size() * (size_t)q_len * K, 0);
  if (!on) return m;
  for (size_t b = 0; b < keys.size(); ++b)
    for (int j = 0; j < K; ++j) {
      const bool pad = keys[b][j] == pad_id && !(j == 0 && start_is_not_pad);
      if (!pad) continue;
      for (int i = 0; i < q_len; ++i) m[(b * q_len + i) * K + j] = 1;
    }
  return m;
}

}  // namespace

Model::Model(std::shared_ptr<const LoadedModel> model, std::shared_ptr<Backend> backend)
    : model_(std::move(model)),
      backend_(std::move(backend)),
      dw_(std::make_unique<DeviceWeights>()) {
  const ModelConfig& c = model_->config;
  const ModelWeights& w = model_->weights;
  if (c.hasEncoder()) src_vocab_ = Vocabulary(c.src_vocab, c.src_unk_id, "source vocabulary");
  if (c.hasDecoder()) tgt_vocab_ = Vocabulary(c.tgt_vocab, c.tgt_unk_id, "target vocabulary");
  Backend& be = *backend_;
  uint64_t* total = &dw_->bytes;
  if (c.positional == Positional::Learned) {
    position_rows_ = c.max_len;
  } else {
    position_rows_ = std::min(c.max_len, ConfigLimits::kMaxSinusoidalPositions);
    Tensor pe = c.positional == Positional::SinusoidalHalves
                    ? sinusoidalHalvesTable(position_rows_, c.d_model)
                    : sinusoidalTable(position_rows_, c.d_model);
    dw_->sinusoid = uploadFloats(be, pe.ptr(), pe.data.size(), total);
  }
  auto stack = [&](const StackWeights& s, DeviceStack& d) {
    d = uploadStack(be, s, total);
    if (!d.positions)
      d.positions = dw_->sinusoid->f32();
    else  // a learned table whose first position_offset rows are never used (BART)
      d.positions += (size_t)c.position_offset * c.d_model;
  };
  if (c.hasEncoder()) stack(w.encoder, dw_->enc);
  if (c.hasDecoder()) stack(w.decoder, dw_->dec);
  const HeadWeights& h = w.head;
  DeviceHead& dh = dw_->head;
  if (!h.projection.empty()) dh.projection = uploadLinear(be, {&h.projection}, total);
  if (!h.mlm_transform.empty()) {
    dh.mlm_transform = uploadLinear(be, {&h.mlm_transform}, total);
    dh.mlm_norm = uploadNorm(be, h.mlm_norm, total);
  }
  if (!h.pooler.empty()) dh.pooler = uploadLinear(be, {&h.pooler}, total);
  if (!h.classifier.empty()) dh.classifier = uploadLinear(be, {&h.classifier}, total);
}

Model::~Model() = default;

uint64_t Model::weightBytes() const {
  return dw_->bytes;
}

std::vector<int> Model::encodeSource(const std::string& sentence) const {
  const ModelConfig& c = config();
  if (!c.hasEncoder())
    throw Error(ErrorKind::BadInput, std::string(modelClassName(c.model)) +
                                         " has no encoder: give the input as the target");
  if (model_->tokenizer) {  // the model's own tokenizer adds its markers itself
    std::vector<int> ids = model_->tokenizer->encodeSource(sentence);
    if ((int)ids.size() > position_rows_)
      throw Error(ErrorKind::BadInput, "the sentence is " + std::to_string(ids.size()) +
                                           " tokens long; the model takes at most " +
                                           std::to_string(position_rows_));
    return ids;
  }
  const int wrap = c.src_bos_eos ? 2 : 0;
  std::vector<int> ids = src_vocab_.encode(sentence, position_rows_ - wrap);
  if (c.src_bos_eos) {
    if (ids.front() != c.src_bos_id) ids.insert(ids.begin(), c.src_bos_id);
    if (ids.back() != c.src_eos_id) ids.push_back(c.src_eos_id);
    if ((int)ids.size() > position_rows_)
      throw Error(ErrorKind::BadInput,
                  "the sentence with its start and end markers has " + std::to_string(ids.size()) +
                      " tokens; the model takes at most " + std::to_string(position_rows_));
  }
  return ids;
}

std::vector<int> Model::encodeTarget(const std::string& prefix) const {
  const ModelConfig& c = config();
  if (!c.hasDecoder())
    throw Error(ErrorKind::BadInput, std::string(modelClassName(c.model)) +
                                         " has no decoder: give the input as the source");
  std::vector<int> ids;
  if (c.bos_id >= 0) ids.push_back(c.bos_id);
  const bool blank = prefix.find_first_not_of(" \t\r\n") == std::string::npos;
  if (!blank) {
    std::vector<int> words = model_->tokenizer
                                 ? model_->tokenizer->encodeTarget(prefix)
                                 : tgt_vocab_.encode(prefix, position_rows_ - (int)ids.size());
    if ((int)(ids.size() + words.size()) > position_rows_)
      throw Error(ErrorKind::BadInput, "the prefix is " + std::to_string(words.size()) +
                                           " tokens long; the model takes at most " +
                                           std::to_string(position_rows_ - (int)ids.size()));
    if (!words.empty() && !ids.empty() && words.front() == c.bos_id) words.erase(words.begin());
    ids.insert(ids.end(), words.begin(), words.end());
  }
  if (ids.empty())
    throw Error(ErrorKind::BadInput,
                "the prompt is empty: type some words (this model has no "
                "start token)");
  return ids;
}

void Model::checkIds(const std::vector<std::vector<int>>& seqs, const Vocabulary& v,
                     const char* what) const {
  for (size_t b = 0; b < seqs.size(); ++b) {
    if (seqs[b].empty())
      throw Error(ErrorKind::BadInput,
                  std::string(what) + " sentence " + std::to_string(b + 1) + " is empty");
    for (int id : seqs[b])
      if (id < 0 || id >= v.size())
        throw Error(ErrorKind::BadInput, std::string(what) + " id " + std::to_string(id) +
                                             " is outside the vocabulary (0.." +
                                             std::to_string(v.size() - 1) + ")");
  }
}

uint64_t Model::estimatePassBytes(int B, int S, int T, bool keep_scores,
                                  uint64_t max_stored_scores_bytes) const {
  // Saturating arithmetic throughout: an absurd batch gives UINT64_MAX, never a wrapped number.
  const ModelConfig& c = config();
  auto mul = [](std::initializer_list<uint64_t> xs) {
    uint64_t r = 1;
    for (uint64_t x : xs) {
      if (x != 0 && r > UINT64_MAX / x) return UINT64_MAX;
      r *= x;
    }
    return r;
  };
  uint64_t bytes = 0;
  auto add = [&](uint64_t n) { bytes = n > UINT64_MAX - bytes ? UINT64_MAX : bytes + n; };
  const int H = c.n_heads, Le = c.n_encoder_layers, Ld = c.n_decoder_layers;
  const bool from_qk = keep_scores && scoresFromQk(B, S, T, max_stored_scores_bytes);
  auto block = [&](int q, int k) {
    return from_qk ? AttentionBlock::bytesFromQk(B, H, q, k, c.d_k)
                   : AttentionBlock::bytesFor(B, H, q, k, keep_scores);
  };
  add(mul({(uint64_t)Le, block(S, S)}));
  add(mul({(uint64_t)Ld, block(T, T)}));
  if (c.hasCross()) add(mul({(uint64_t)Ld, block(T, S)}));
  const uint64_t n_out = mul({(uint64_t)B, (uint64_t)(c.hasDecoder() ? T : S)});
  if (c.tokenHead() != TokenHead::None)
    add(mul({2, n_out, c.outputVocab().size(), 4}));  // the trace's and the pass's copy
  add(mul({2, n_out, (uint64_t)c.d_model, 4}));       // hidden states
  // Activations: the larger of the two runs, the caches and the encoder's output.
  const uint64_t keys = (uint64_t)std::max(S, T), rows = mul({(uint64_t)B, keys});
  const uint64_t width = 2ull * c.d_model + c.attnWidth() + c.valueWidth() + c.d_ff;
  add(mul({rows, width + 3ull * H * keys, 4}));
  add(mul({(uint64_t)B, keys, keys, 2}));  // masks
  const uint64_t KV = c.attnWidth() + c.valueWidth();
  add(mul({(uint64_t)B, (uint64_t)S, c.d_model + KV * (1 + Ld), 4}));         // memory, K/V
  add(mul({(uint64_t)Ld, (uint64_t)B, (uint64_t)T, KV + c.attnWidth(), 4}));  // decoder caches
  return bytes;
}

bool Model::scoresFromQk(int B, int S, int T, uint64_t max_stored_scores_bytes) const {
  const ModelConfig& c = config();
  const double cells =
      (double)B * c.n_heads *
      ((double)c.n_encoder_layers * S * S +
       (double)c.n_decoder_layers * ((double)T * T + (c.hasCross() ? (double)T * S : 0)));
  return cells * 4 > (double)max_stored_scores_bytes;
}

void Model::checkPassSize(int B, int S, int T, const ForwardOptions& o) const {
  const ModelConfig& c = config();
  if (S > position_rows_ || T > position_rows_)
    throw Error(ErrorKind::BadInput, "the sequence has " + std::to_string(std::max(S, T)) +
                                         " tokens; this model takes at most " +
                                         std::to_string(position_rows_) + " (max_len)");
  const uint64_t bytes =
      estimatePassBytes(B, S, T, o.keep_scores && o.record, o.max_stored_scores_bytes);
  if (bytes > o.max_trace_bytes)
    throw Error(ErrorKind::TooLarge,
                "the pass over " + std::to_string(B) + " sentence(s) of " +
                    (c.hasEncoder() ? std::to_string(S) + " source" : std::string()) +
                    (c.hasCross() ? " and " : "") +
                    (c.hasDecoder() ? std::to_string(T) + " target" : std::string()) +
                    " tokens needs " + formatBytes(bytes) + " (" + std::to_string(c.n_heads) +
                    " heads × " + std::to_string(c.n_encoder_layers + c.n_decoder_layers) +
                    " layers × n² for the attention trace, and the activations); the limit is " +
                    formatBytes(o.max_trace_bytes) + ". Use a shorter input.");
}

// ---- the encoder ----

namespace {

// Runs the encoder over a padded batch: fills enc (memory, cross K/V, key mask) and, when
// recording, appends its blocks.
void runEncoder(Backend& be, const ModelConfig& c, const DeviceWeights& dw, Model::Encoded& enc,
                const std::vector<std::vector<int>>& segments, const ForwardOptions& o,
                std::vector<AttentionBlock>* blocks, int* done, int total) {
  const int B = enc.batch, S = enc.S, d = c.d_model;
  const int KV = c.attnWidth() + c.valueWidth();
  enc.key_mask.assign((size_t)B * S, 0);
  const bool pad_on = c.src_padding_mask && o.masks.src_padding;
  for (int b = 0; b < B; ++b)
    for (int j = 0; j < S; ++j)
      enc.key_mask[(size_t)b * S + j] = pad_on && enc.src[b][j] == c.src_pad_id;
  const std::vector<uint8_t> mask = keyPaddingMask(enc.src, S, c.src_pad_id, pad_on, false);
  const uint64_t floats = Pass::floatsFor(c, o, B * S, S) + (uint64_t)B * S * KV;
  Arena arena(be, Arena::size(floats, mask.size() + (uint64_t)B * S * 8, Pass::kRegions + 4));
  Pass P(be, c, o, arena, B * S, S);
  int32_t* ids = arena.ints((int64_t)B * S);
  arena.put(ids, flatten(enc.src));
  int32_t* segs = nullptr;
  if (dw.enc.segments) {
    segs = arena.ints((int64_t)B * S);
    std::vector<int32_t> flat((size_t)B * S, 0);
    for (int b = 0; b < B && b < (int)segments.size(); ++b)
      for (int j = 0; j < S && j < (int)segments[b].size(); ++j)
        flat[(size_t)b * S + j] = segments[b][j];
    arena.put(segs, flat);
  }
  uint8_t* dmask = arena.bytes((int64_t)mask.size());
  arena.put(dmask, mask);
  float* kv = arena.floats((int64_t)B * S * KV);
  enc.memory = be.allocate((size_t)B * S * d * sizeof(float));
  float* x = enc.memory->f32();
  P.embed(dw.enc, ids, segs, x, B, S, 0);
  StackRun r;
  r.stack = &dw.enc;
  r.self_kind = AttentionKind::EncoderSelf;
  r.B = B;
  r.n = r.cap = S;
  r.kv = {kv};
  r.self_mask = dmask;
  r.self_mask_host = &mask;
  r.blocks = blocks;
  P.layers(x, r, done, total);
  // Every decoder layer's cross-attention keys and values, once per sentence.
  for (const auto& L : dw.dec.layers) {
    if (!L.has_cross) continue;
    BufferPtr ckv = be.allocate((size_t)B * S * KV * sizeof(float));
    P.linear(x, L.cross_attn.kv, ckv->f32(), B * S);
    enc.cross_kv.push_back(std::move(ckv));
  }
}

}  // namespace

std::shared_ptr<const Model::Encoded> Model::encode(const std::vector<int>& src,
                                                    const std::vector<int>& segments,
                                                    const ForwardOptions& o, Trace* trace) const {
  const ModelConfig& c = config();
  checkIds({src}, src_vocab_, "source");
  if (!segments.empty() && segments.size() != src.size())
    throw Error(ErrorKind::BadInput, "give one segment id per source token (" +
                                         std::to_string(src.size()) + "), got " +
                                         std::to_string(segments.size()));
  for (int s : segments)
    if (s < 0 || s >= std::max(c.n_segments, 1))
      throw Error(ErrorKind::BadInput, "segment id " + std::to_string(s) + " is outside 0.." +
                                           std::to_string(std::max(c.n_segments, 1) - 1));
  checkPassSize(1, (int)src.size(), 1, o);
  auto enc = std::make_shared<Encoded>();
  enc->batch = 1;
  enc->S = (int)src.size();
  enc->src = {src};
  int done = 0;
  std::vector<AttentionBlock> blocks;
  const bool record = o.record && trace;
  runEncoder(*backend_, c, *dw_, *enc, {segments}, o, record ? &blocks : nullptr, &done,
             c.n_encoder_layers + c.n_decoder_layers);
  if (trace) {
    trace->batch = 1;
    trace->src_len = enc->S;
    trace->src_ids = {src};
    trace->src_tokens = {src_vocab_.decode(src)};
    if (!segments.empty()) trace->segment_ids = {segments};
    trace->backend = backend_->name();
    for (auto& b : blocks) trace->blocks.push_back(std::move(b));
  }
  return enc;
}

// ---- the decoder ----

std::unique_ptr<Model::DecoderCache> Model::newDecoderCache(int capacity) const {
  const ModelConfig& c = config();
  capacity = std::max(1, std::min(capacity, position_rows_));
  auto cache = std::make_unique<DecoderCache>();
  cache->capacity = capacity;
  const size_t KV = c.attnWidth() + c.valueWidth();
  for (int l = 0; l < c.n_decoder_layers; ++l) {
    cache->kv.push_back(backend_->allocate((size_t)capacity * KV * sizeof(float)));
    cache->q.push_back(backend_->allocate((size_t)capacity * c.attnWidth() * sizeof(float)));
  }
  return cache;
}

int Model::cacheLength(const DecoderCache& cache) const {
  return cache.length;
}

void Model::commitCache(DecoderCache& cache, const std::vector<int>& tokens) const {
  cache.tokens.insert(cache.tokens.end(), tokens.begin(), tokens.end());
  cache.length = (int)cache.tokens.size();
}

std::unique_ptr<Model::DecoderCache> Model::cloneCache(const DecoderCache& cache) const {
  auto copy = newDecoderCache(cache.capacity);
  copy->length = cache.length;
  copy->tokens = cache.tokens;
  const int64_t used_kv = (int64_t)cache.length * (config().attnWidth() + config().valueWidth());
  const int64_t used_q = (int64_t)cache.length * config().attnWidth();
  for (size_t l = 0; l < cache.kv.size(); ++l) {
    backend_->copy(cache.kv[l]->f32(), copy->kv[l]->f32(), used_kv);
    backend_->copy(cache.q[l]->f32(), copy->q[l]->f32(), used_q);
  }
  return copy;
}

void Model::truncateCache(DecoderCache& cache, int length) const {
  if (length < cache.length) {
    cache.length = std::max(0, length);
    cache.tokens.resize(cache.length);
  }
}

namespace {

// The decoder's self-attention mask for new positions [past, past + n) of B sequences whose
// tokens (all positions so far and the new ones) are `tokens`: key padding ∪ causal.
// future: the mask of earlier rows [0, past) against the new keys, [B, past, n].
void decoderMasks(const ModelConfig& c, const MaskOptions& m,
                  const std::vector<std::vector<int>>& tokens, int past, int n,
                  std::vector<uint8_t>* self, std::vector<uint8_t>* future) {
  const int B = (int)tokens.size(), K = past + n;
  const bool pad_on = c.tgt_padding_mask && m.tgt_padding;
  // With the start token equal to the pad id (Marian), position 0 is the start, not padding.
  const bool start_is_pad = c.bos_id >= 0 && c.bos_id == c.tgt_pad_id;
  auto padded = [&](int b, int j) {
    return pad_on && tokens[b][j] == c.tgt_pad_id && !(j == 0 && start_is_pad);
  };
  self->assign((size_t)B * n * K, 0);
  future->assign((size_t)B * past * n, 0);
  for (int b = 0; b < B; ++b) {
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < K; ++j)
        (*self)[((size_t)b * n + i) * K + j] = padded(b, j) || (m.subsequent && j > past + i);
    for (int i = 0; i < past; ++i)
      for (int j = 0; j < n; ++j)
        (*future)[((size_t)b * past + i) * n + j] = padded(b, past + j) || m.subsequent;
  }
}

// The token head on x [rows, d] → logits [rows, V] (host).
void tokenHead(Pass& P, const DeviceHead& h, const ModelConfig& c, const float* x, int rows,
               Tensor& out, Shape shape) {
  if (c.tokenHead() == TokenHead::None) return;
  const int V = h.projection.out;
  float* logits = P.a.floats((int64_t)rows * V);
  const float* in = x;
  if (c.tokenHead() == TokenHead::BertMlm) {
    // BERT's masked-LM head: LayerNorm(act(x·W + b)) · decoderᵀ + decoder_bias.
    P.linear(x, h.mlm_transform, P.y, rows);
    P.be.activation_forward(P.y, (int64_t)rows * c.d_model, c.activation);
    P.norm(P.y, h.mlm_norm, P.y, rows, c.layer_norm_eps);
    in = P.y;
  }
  P.linear(in, h.projection, logits, rows);
  out = Tensor(std::move(shape));
  P.a.get(logits, out.ptr(), out.data.size() * sizeof(float));
}

// The class head on x [B, n, d] → class logits [B, n_classes] (host).
void classHead(Pass& P, const DeviceHead& h, const ModelConfig& c, const float* x, int B, int n,
               Tensor& out) {
  if (c.classHead() == ClassHead::None) return;
  const int d = c.d_model, C = h.classifier.out;
  float* pooled = P.a.floats((int64_t)B * d);
  float* logits = P.a.floats((int64_t)B * C);
  if (c.classHead() == ClassHead::MeanPool) {
    P.be.mean_pool_forward(x, pooled, B, n, d);
    P.linear(pooled, h.classifier, logits, B);
  } else {  // BERT's pooler: tanh(W·x[:, 0] + b), then the classifier
    for (int b = 0; b < B; ++b) P.be.copy(x + (int64_t)b * n * d, pooled + (int64_t)b * d, d);
    P.linear(pooled, h.pooler, P.y, B);
    P.be.activation_forward(P.y, (int64_t)B * d, Activation::Tanh);
    P.linear(P.y, h.classifier, logits, B);
  }
  out = Tensor({B, C});
  P.a.get(logits, out.ptr(), out.data.size() * sizeof(float));
}

uint64_t headFloats(const ModelConfig& c, int B, int rows, int V, int C) {
  return (uint64_t)rows * V + (uint64_t)B * (c.d_model + C);
}

// Runs the decoder over new positions [past, past + n) of B sequences: all_tokens[b] holds every
// position's id so far and the new ones (past + n). Self-attention keys and values go to kv (per
// layer, [B, cap, A + Av]) and queries to q_store (per layer, [B, cap, A]); when kv is empty
// (a teacher-forced pass, past = 0) one scratch buffer serves every layer.
TraceRows runDecoder(Backend& be, const ModelConfig& c, const DeviceWeights& dw,
                     const Model::Encoded* enc, const std::vector<std::vector<int>>& all_tokens,
                     int past, int n, int cap, std::vector<float*> kv, std::vector<float*> q_store,
                     const ForwardOptions& o) {
  const int B = (int)all_tokens.size(), K = past + n, d = c.d_model;
  const int KV = c.attnWidth() + c.valueWidth();
  std::vector<uint8_t> self_mask, future_mask;
  decoderMasks(c, o.masks, all_tokens, past, n, &self_mask, &future_mask);
  const int S = enc ? enc->S : 0;
  std::vector<uint8_t> cross_mask;
  if (enc) {
    cross_mask.assign((size_t)B * n * S, 0);
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < n; ++i)
        std::copy(enc->key_mask.begin() + (size_t)b * S,
                  enc->key_mask.begin() + (size_t)(b + 1) * S,
                  cross_mask.begin() + ((size_t)b * n + i) * S);
  }
  const int V = dw.head.projection.out, C = dw.head.classifier.out;
  const int keys = std::max(K, S) + past;  // the masked columns of earlier rows share the scratch
  const bool scratch_kv = kv.empty();
  const uint64_t floats = Pass::floatsFor(c, o, B * n, keys) + headFloats(c, B, B * n, V, C) +
                          (uint64_t)B * n * d + (scratch_kv ? (uint64_t)B * n * KV : 0);
  Arena arena(be, Arena::size(floats, self_mask.size() + cross_mask.size() + (uint64_t)B * n * 4,
                              Pass::kRegions + 8));
  Pass P(be, c, o, arena, B * n, keys);
  std::vector<int32_t> fed;
  for (const auto& t : all_tokens) fed.insert(fed.end(), t.begin() + past, t.end());
  int32_t* ids = arena.ints((int64_t)B * n);
  arena.put(ids, fed);
  uint8_t* dself = arena.bytes((int64_t)self_mask.size());
  arena.put(dself, self_mask);
  uint8_t* dcross = enc ? arena.bytes((int64_t)cross_mask.size()) : nullptr;
  if (enc) arena.put(dcross, cross_mask);
  if (scratch_kv) {
    kv = {arena.floats((int64_t)B * n * KV)};
    cap = n;
  }
  float* x = arena.floats((int64_t)B * n * d);
  P.embed(dw.dec, ids, nullptr, x, B, n, past);

  TraceRows rows;
  rows.q0 = past;
  rows.n = n;
  if (B == 1) rows.tokens.assign(all_tokens[0].begin() + past, all_tokens[0].end());
  StackRun r;
  r.stack = &dw.dec;
  r.self_kind = AttentionKind::DecoderSelf;
  r.B = B;
  r.n = n;
  r.past = past;
  r.cap = cap;
  r.kv = std::move(kv);
  r.q_store = std::move(q_store);
  r.self_mask = dself;
  r.self_mask_host = &self_mask;
  r.enc = enc;
  r.cross_mask = dcross;
  r.cross_mask_host = &cross_mask;
  if (o.record) {
    r.blocks = &rows.blocks;
    r.future = &rows.future_scores;
  }
  int done = c.n_encoder_layers;
  P.layers(x, r, &done, c.n_encoder_layers + c.n_decoder_layers);
  if (o.record)
    for (const auto& b : rows.blocks)
      rows.future_mask.push_back(b.kind == AttentionKind::DecoderSelf ? future_mask
                                                                      : std::vector<uint8_t>());
  tokenHead(P, dw.head, c, x, B * n, rows.logits, {B, n, V});
  rows.hidden = Tensor({B, n, d});
  arena.get(x, rows.hidden.ptr(), rows.hidden.data.size() * sizeof(float));
  return rows;
}

}  // namespace

TraceRows Model::decode(const Encoded* enc, const DecoderCache& cache,
                        const std::vector<int>& tokens, const ForwardOptions& o) const {
  const ModelConfig& c = config();
  if (c.hasCross() && !enc)
    throw Error(ErrorKind::BadInput, "decode: this encoder-decoder needs the encoded source");
  checkIds({tokens}, tgt_vocab_, "target");
  const int past = cache.length, n = (int)tokens.size();
  if (past + n > cache.capacity)
    throw Error(ErrorKind::BadInput, "the target reached the maximum length of " +
                                         std::to_string(cache.capacity) + " tokens");
  std::vector<std::vector<int>> all{cache.tokens};
  all[0].insert(all[0].end(), tokens.begin(), tokens.end());
  // The cache's buffers are written beyond its length only; commitCache makes the rows count.
  std::vector<float*> kv, q;
  for (size_t l = 0; l < cache.kv.size(); ++l) {
    kv.push_back(cache.kv[l]->f32());
    q.push_back(cache.q[l]->f32());
  }
  return runDecoder(*backend_, c, *dw_, enc, all, past, n, cache.capacity, std::move(kv),
                    std::move(q), o);
}

Trace Model::forward(const Inputs& in, const ForwardOptions& options) const {
  const auto t0 = std::chrono::steady_clock::now();
  const ModelConfig& c = config();
  const size_t B = c.hasEncoder() ? in.src.size() : in.tgt.size();
  if (B == 0)
    throw Error(ErrorKind::BadInput,
                std::string("forward: no ") + (c.hasEncoder() ? "source" : "target") + " sentence");
  if (c.hasCross() && in.tgt.size() != B)
    throw Error(ErrorKind::BadInput, "forward: need as many target as source sentences (got " +
                                         std::to_string(in.src.size()) + " and " +
                                         std::to_string(in.tgt.size()) + ")");
  if (!c.hasEncoder() && !in.src.empty())
    throw Error(ErrorKind::BadInput, std::string(modelClassName(c.model)) +
                                         " has no encoder: give the input as the target");
  if (!c.hasDecoder() && !in.tgt.empty())
    throw Error(ErrorKind::BadInput, std::string(modelClassName(c.model)) +
                                         " has no decoder: give the input as the source");
  if (c.hasEncoder()) checkIds(in.src, src_vocab_, "source");
  if (c.hasDecoder()) checkIds(in.tgt, tgt_vocab_, "target");
  if (!in.segments.empty()) {
    if (in.segments.size() != B)
      throw Error(ErrorKind::BadInput, "give segment ids for every sentence or none");
    for (size_t b = 0; b < B; ++b) {
      if (in.segments[b].size() != in.src[b].size())
        throw Error(ErrorKind::BadInput, "sentence " + std::to_string(b + 1) + " has " +
                                             std::to_string(in.src[b].size()) + " tokens but " +
                                             std::to_string(in.segments[b].size()) +
                                             " segment ids");
      for (int s : in.segments[b])
        if (s < 0 || s >= std::max(c.n_segments, 1))
          throw Error(ErrorKind::BadInput, "segment id " + std::to_string(s) + " is outside 0.." +
                                               std::to_string(std::max(c.n_segments, 1) - 1));
    }
  }

  Trace tr;
  tr.batch = (int)B;
  tr.backend = backend_->name();
  if (c.hasEncoder()) {
    tr.src_ids = padBatch(in.src, c.src_pad_id, &tr.src_len);
    for (const auto& s : tr.src_ids) tr.src_tokens.push_back(src_vocab_.decode(s));
    if (!in.segments.empty()) {
      int len = 0;
      tr.segment_ids = padBatch(in.segments, 0, &len);
    }
  }
  if (c.hasDecoder()) {
    tr.tgt_ids = padBatch(in.tgt, c.tgt_pad_id, &tr.tgt_len);
    for (const auto& s : tr.tgt_ids) tr.tgt_tokens.push_back(tgt_vocab_.decode(s));
  }
  const int S = tr.src_len, T = tr.tgt_len;
  checkPassSize((int)B, S, T, options);
  // Long inputs keep q and k rather than their scores (kMaxStoredScoresBytes).
  ForwardOptions o = options;
  o.scores_from_qk = o.scores_from_qk || (o.keep_scores && o.record &&
                                          scoresFromQk((int)B, S, T, o.max_stored_scores_bytes));
  Backend& be = *backend_;
  const int total = c.n_encoder_layers + c.n_decoder_layers;
  int done = 0;
  std::shared_ptr<Encoded> enc;
  if (c.hasEncoder()) {
    enc = std::make_shared<Encoded>();
    enc->batch = (int)B;
    enc->S = S;
    enc->src = tr.src_ids;
    runEncoder(be, c, *dw_, *enc, tr.segment_ids, o, o.record ? &tr.blocks : nullptr, &done, total);
    if (!c.hasDecoder()) {
      // Encoder-only: the heads read the encoder's output.
      const int rows = (int)B * S, V = dw_->head.projection.out, C = dw_->head.classifier.out;
      Arena arena(be,
                  Arena::size(Pass::floatsFor(c, o, rows, 1) + headFloats(c, (int)B, rows, V, C), 0,
                              Pass::kRegions + 2));
      Pass P(be, c, o, arena, rows, 1);
      const float* x = enc->memory->f32();
      tokenHead(P, dw_->head, c, x, rows, tr.logits, {(int64_t)B, S, V});
      classHead(P, dw_->head, c, x, (int)B, S, tr.class_logits);
      tr.hidden = Tensor({(int64_t)B, S, c.d_model});
      fetchFloats(be, *enc->memory, x, tr.hidden.ptr(), (int64_t)tr.hidden.data.size());
    }
  }
  if (c.hasDecoder()) {
    TraceRows rows = runDecoder(be, c, *dw_, enc.get(), tr.tgt_ids, 0, T, T, {}, {}, o);
    for (auto& b : rows.blocks) tr.blocks.push_back(std::move(b));
    tr.logits = std::move(rows.logits);
    tr.hidden = std::move(rows.hidden);
  }
  tr.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return tr;
}

}  // namespace attnviz

#include "model/model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>

#include "arch/positional.h"
#include "base/counter_rng.h"
#include "base/error.h"
#include "text/tokenizer.h"

namespace attnviz {

namespace {

// Every parameter lives in one device array (llm.c's params_memory) and its gradient at the same
// offset of a second one, so that the optimizer and gradient clipping run once over all of them;
// the structs below point into it.
struct DeviceLinear {
  float* w = nullptr;  // [out, in]
  float* b = nullptr;  // [out] or null
  int in = 0, out = 0;
  const float* wp() const { return w; }
  const float* bp() const { return b; }
};

struct DeviceNorm {
  float* gamma = nullptr;  // [d]; null = identity affine
  float* beta = nullptr;   // [d]
  const float* g() const { return gamma; }
  const float* bt() const { return beta; }
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
  float* tokens = nullptr;             // [vocab, d]
  float* segments = nullptr;           // [n_segments, d] or null
  float* learned_positions = nullptr;  // [max_len, d] or null
  const float* positions = nullptr;    // learned, or the model's shared sinusoid table
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
  BufferPtr sinusoid;  // [rows, d] shared by both stacks (no parameter)
  BufferPtr params;    // [n_params] every parameter
  BufferPtr grads;     // [n_params] their gradients (allocated by enableTraining)
  int64_t n_params = 0;
  // Where each host tensor's values sit in `params` (for writing the weights back), and the slots
  // that stand for no host tensor (the zero bias of a fused part that has none: kept at zero).
  std::vector<std::pair<const Tensor*, int64_t>> pieces;
  std::vector<std::pair<int64_t, int64_t>> padding;  // (offset, count)
  uint64_t bytes = 0;

  // The gradient of the parameter at p (a pointer into params).
  float* grad(const float* p) const {
    return p && grads ? grads->f32() + (p - params->f32()) : nullptr;
  }
};

namespace {

BufferPtr uploadFloats(Backend& be, const float* data, size_t n, uint64_t* total) {
  BufferPtr buf = be.allocate(n * sizeof(float));
  be.upload(*buf, data, n * sizeof(float));
  *total += n * sizeof(float);
  return buf;
}

// Lays the parameters out in DeviceWeights::params. Run twice over the same weights: first to
// count (base == nullptr: hands out null pointers), then to place and upload.
class ParamPacker {
 public:
  ParamPacker(Backend& be, DeviceWeights& dw) : be_(be), dw_(dw) {}
  void start(int64_t total) {
    dw_.params = be_.allocate((size_t)std::max<int64_t>(total, 1) * sizeof(float));
    dw_.n_params = total;
    dw_.bytes += (uint64_t)total * sizeof(float);
    base_ = dw_.params->f32();
    used_ = 0;
  }
  int64_t used() const { return used_; }

  // A region of n floats made of these host tensors in order (null = n_i zeros).
  float* take(std::initializer_list<std::pair<const Tensor*, int64_t>> parts) {
    float* at = base_ ? base_ + used_ : nullptr;
    for (const auto& [t, n] : parts) {
      if (base_) {
        if (t) {
          be_.upload(*dw_.params, t->ptr(), (size_t)n * sizeof(float),
                     (size_t)used_ * sizeof(float));
          dw_.pieces.emplace_back(t, used_);
        } else {
          dw_.padding.emplace_back(used_, n);
        }
      }
      used_ += n;
    }
    return at;
  }
  float* take(const Tensor& t) { return take({{&t, t.size()}}); }

 private:
  Backend& be_;
  DeviceWeights& dw_;
  float* base_ = nullptr;
  int64_t used_ = 0;
};

// Stacks the parts' rows: [W_1; W_2; ...] and their biases (all or none have one; a part without
// one gets zeros).
DeviceLinear packLinear(ParamPacker& pk, std::initializer_list<const LinearWeights*> parts) {
  DeviceLinear l;
  l.in = (int)(*parts.begin())->weight.dim(1);
  bool bias = false;
  for (const LinearWeights* p : parts) {
    bias = bias || !p->bias.empty();
    l.out += (int)p->weight.dim(0);
  }
  if (parts.size() == 1) {
    const LinearWeights& p = **parts.begin();
    l.w = pk.take(p.weight);
    if (bias) l.b = pk.take(p.bias);
    return l;
  }
  const LinearWeights *a = *parts.begin(), *b = *(parts.begin() + 1);  // [K; V]
  l.w = pk.take({{&a->weight, a->weight.size()}, {&b->weight, b->weight.size()}});
  if (bias)
    l.b = pk.take({{a->bias.empty() ? nullptr : &a->bias, a->weight.dim(0)},
                   {b->bias.empty() ? nullptr : &b->bias, b->weight.dim(0)}});
  return l;
}

DeviceNorm packNorm(ParamPacker& pk, const LayerNormWeights& n) {
  DeviceNorm d;
  if (!n.identity()) {
    d.gamma = pk.take(n.gamma);
    d.beta = pk.take(n.beta);
  }
  return d;
}

DeviceAttention packAttention(ParamPacker& pk, const AttentionWeights& a) {
  return {packLinear(pk, {&a.q}), packLinear(pk, {&a.k, &a.v}), packLinear(pk, {&a.out})};
}

DeviceStack packStack(ParamPacker& pk, const StackWeights& s) {
  DeviceStack d;
  d.tokens = pk.take(s.embed.tokens);
  if (!s.embed.segments.empty()) d.segments = pk.take(s.embed.segments);
  if (!s.embed.positions.empty()) {
    d.learned_positions = pk.take(s.embed.positions);
    d.positions = d.learned_positions;
  }
  d.embed_norm = packNorm(pk, s.embed.norm);
  for (const auto& l : s.layers) {
    DeviceLayer e;
    e.self_attn = packAttention(pk, l.self_attn);
    e.norm_self = packNorm(pk, l.norm_self);
    if (l.hasCross()) {
      e.has_cross = true;
      e.cross_attn = packAttention(pk, l.cross_attn);
      e.norm_cross = packNorm(pk, l.norm_cross);
    }
    e.fc1 = packLinear(pk, {&l.ffn.fc1});
    e.fc2 = packLinear(pk, {&l.ffn.fc2});
    e.norm_ffn = packNorm(pk, l.norm_ffn);
    d.layers.push_back(std::move(e));
  }
  d.final_norm = packNorm(pk, s.final_norm);
  return d;
}

// Every parameter of a model into dw (stacks and heads; the sinusoid table is the caller's).
void packWeights(ParamPacker& pk, const ModelConfig& c, const ModelWeights& w, DeviceWeights& dw) {
  if (c.hasEncoder()) dw.enc = packStack(pk, w.encoder);
  if (c.hasDecoder()) dw.dec = packStack(pk, w.decoder);
  const HeadWeights& h = w.head;
  DeviceHead& dh = dw.head;
  if (!h.projection.empty()) dh.projection = packLinear(pk, {&h.projection});
  if (!h.mlm_transform.empty()) {
    dh.mlm_transform = packLinear(pk, {&h.mlm_transform});
    dh.mlm_norm = packNorm(pk, h.mlm_norm);
  }
  if (!h.pooler.empty()) dh.pooler = packLinear(pk, {&h.pooler});
  if (!h.classifier.empty()) dh.classifier = packLinear(pk, {&h.classifier});
}

void checkCancel(const ForwardOptions& o) {
  if (o.cancel && o.cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
}

// One allocation per run, carved into the run's activations (llm.c's
// malloc_and_point_activations): every size is known before the first op. A training step carves
// its tape from a workspace that lives across steps instead, sized by a counting arena first.
class Arena {
 public:
  Arena(Backend& be, uint64_t bytes)
      : be_(&be), owned_(be.allocate(std::max<uint64_t>(bytes, 64))), buf_(owned_.get()) {}
  Arena(Backend& be, DeviceBuffer& reuse) : be_(&be), buf_(&reuse) {}
  Arena() = default;  // counting: hands out null pointers and adds up what they would take
  float* floats(int64_t n) { return static_cast<float*>(take((uint64_t)n * sizeof(float))); }
  int32_t* ints(int64_t n) { return static_cast<int32_t*>(take((uint64_t)n * sizeof(int32_t))); }
  uint8_t* bytes(int64_t n) { return static_cast<uint8_t*>(take((uint64_t)n)); }
  uint64_t used() const { return used_; }
  // Copies host data into an arena region.
  template <class T>
  void put(T* dst, const std::vector<T>& src) {
    if (!src.empty()) be_->upload(*buf_, src.data(), src.size() * sizeof(T), offset(dst));
  }
  // Copies an arena region to the host.
  void get(const void* src, void* dst, uint64_t bytes) {
    if (bytes) be_->download(*buf_, dst, bytes, offset(src));
  }
  // Bytes a run needs for these many floats and bytes (with alignment slack per region).
  static uint64_t size(uint64_t floats, uint64_t bytes, int regions) {
    return floats * sizeof(float) + bytes + (uint64_t)regions * 64;
  }

 private:
  void* take(uint64_t bytes) {
    used_ = (used_ + 63) / 64 * 64;
    if (!buf_) {
      used_ += bytes;
      return nullptr;
    }
    if (used_ + bytes > buf_->bytes())
      throw Error(ErrorKind::Backend, "internal error: the pass's arena is too small");
    void* p = buf_->u8() + used_;
    used_ += bytes;
    return p;
  }
  size_t offset(const void* p) const {
    return (size_t)(static_cast<const uint8_t*>(p) - static_cast<const uint8_t*>(buf_->data()));
  }
  Backend* be_ = nullptr;
  BufferPtr owned_;
  DeviceBuffer* buf_ = nullptr;
  uint64_t used_ = 0;
};

// ---- the tape: what a training pass keeps for its backward (llm.c's activations) ----
// rows = B·n positions of the stack run.

// One residual block. Pre-norm: x ← x + drop(f(LN(x))); post-norm: x ← LN(x + drop(f(x))).
struct SublayerTape {
  float* f_in = nullptr;     // [rows, d] the sublayer's input: LN(x) (pre), x (post)
  float* norm_in = nullptr;  // [rows, d] the LayerNorm's input: x (pre), x + drop(f(x)) (post)
  uint64_t seed = 0;         // dropout of f's output
};

struct AttentionTape {
  float* q = nullptr;      // [rows, A] queries
  float* kv = nullptr;     // [B, n, A + Av] keys | values (self-attention; cross: Encoded)
  float* probs = nullptr;  // [B, H, n, Tk]
  float* ctx = nullptr;    // [rows, Av]
};

struct LayerTape {
  SublayerTape self, cross, ffn;
  AttentionTape self_attn, cross_attn;
  float* ffn_pre = nullptr;  // [rows, d_ff] fc1's output, the activation's input
  float* ffn_act = nullptr;  // [rows, d_ff] after the activation and dropout: fc2's input
  uint64_t ffn_seed = 0;
};

struct StackTape {
  int B = 0, n = 0, S = 0;         // S: the cross-attention's keys (0 without)
  int32_t* ids = nullptr;          // [B, n]
  int32_t* segs = nullptr;         // [B, n] or null
  uint8_t* mask = nullptr;         // [B, n, n] self-attention
  uint8_t* cross_mask = nullptr;   // [B, n, S]
  float* embed_norm_in = nullptr;  // [rows, d] before the embedding LayerNorm
  uint64_t embed_seed = 0;         // dropout of the embeddings
  std::vector<LayerTape> layers;
  float* final_in = nullptr;  // [rows, d] before the stack's final LayerNorm
  float* out = nullptr;       // [rows, d] the stack's output (decoder; the encoder's: memory)
};

struct HeadTape {
  float* logits = nullptr;        // [rows, V] token logits
  float* mlm_pre = nullptr;       // [rows, d] BERT MLM transform's output
  float* mlm_act = nullptr;       // [rows, d] after the activation: the LayerNorm's input
  float* mlm_out = nullptr;       // [rows, d] the projection's input
  float* pooled = nullptr;        // [B, d] mean or first position
  float* pooler_pre = nullptr;    // [B, d] BERT pooler's linear output
  float* pooler_act = nullptr;    // [B, d] after tanh: the classifier's input
  float* class_logits = nullptr;  // [B, C]
};

struct Tape {
  float dropout = 0.0f;
  StackTape enc, dec;
  HeadTape head;
  DeviceBuffer* workspace = nullptr;  // what the tape is carved from
  BufferPtr* scratch = nullptr;       // the passes' scratch, kept across steps
};

// A pass's arena of `bytes`: a fresh allocation, or (training) the tape's scratch buffer, grown
// when it is too small, so that steps do not allocate and zero-fill it again and again.
Arena passArena(Backend& be, uint64_t bytes, Tape* tape) {
  if (!tape) return Arena(be, bytes);
  if (!*tape->scratch || (*tape->scratch)->bytes() < bytes)
    *tape->scratch = be.allocate(bytes + bytes / 4);
  return Arena(be, **tape->scratch);
}

// Copies host data into a tape region.
template <class T>
void tapePut(Backend& be, Tape& tape, T* dst, const std::vector<T>& src) {
  if (src.empty()) return;
  const size_t offset = (size_t)(reinterpret_cast<const uint8_t*>(dst) -
                                 static_cast<const uint8_t*>(tape.workspace->data()));
  be.upload(*tape.workspace, src.data(), src.size() * sizeof(T), offset);
}

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
  std::vector<SublayerActivation>* acts = nullptr;    // sublayers' inputs and outputs (past = 0)
  StackTape* tape = nullptr;  // training: keep what the backward needs (past = 0, no blocks)
  float dropout = 0.0f;       // training: drop probability of the tape's dropout sites
};

// The widths a pass works with: d_model, heads, query/key width A = H·d_k, value width Av = H·d_v,
// and the fused key|value width KV = A + Av.
struct Widths {
  explicit Widths(const ModelConfig& c)
      : d(c.d_model),
        H(c.n_heads),
        A(c.attnWidth()),
        Av(c.valueWidth()),
        KV(c.attnWidth() + c.valueWidth()) {}
  const int d, H, A, Av, KV;
};

class Pass : public Widths {
 public:
  Pass(Backend& be, const ModelConfig& c, const ForwardOptions& o, Arena& arena, int rows,
       int max_keys)
      : Widths(c), be(be), c(c), o(o), a(arena), host(be.hostVisible()) {
    h = a.floats((int64_t)rows * d);
    y = a.floats((int64_t)rows * d);
    q = a.floats((int64_t)rows * A);
    ctx = a.floats((int64_t)rows * Av);
    ffn = a.floats((int64_t)rows * c.d_ff);
    scores = a.floats((int64_t)rows * H * max_keys);
    probs = a.floats((int64_t)rows * H * max_keys);
    if (!o.interventions.empty()) extra = a.floats((int64_t)rows * H * max_keys);
    if (o.keep_activations) stage = a.floats((int64_t)rows * d);
    own_q = q;
    own_ctx = ctx;
    own_probs = probs;
  }
  // Arena floats a Pass takes for `rows` query rows over at most `max_keys` keys.
  static uint64_t floatsFor(const ModelConfig& c, const ForwardOptions& o, int rows, int max_keys) {
    const uint64_t per_key = (o.interventions.empty() ? 2 : 3) * (uint64_t)c.n_heads * max_keys;
    const uint64_t stage = o.keep_activations ? c.d_model : 0;
    return (uint64_t)rows *
           (2 * c.d_model + c.attnWidth() + c.valueWidth() + c.d_ff + per_key + stage);
  }
  static constexpr int kRegions = 9;

  // Where a sublayer's input and output are recorded (keep_activations), or null.
  struct Keep {
    int layer;
    Sublayer sublayer, norm;
  };
  // [rows, d] on the backend → [batch, rows / batch, d] on the host, through the stage region.
  Tensor download(const float* p, int rows) {
    Tensor t({act_batch, rows / act_batch, d});
    be.copy(p, stage, (int64_t)rows * d);
    a.get(stage, t.ptr(), t.data.size() * sizeof(float));
    return t;
  }
  void keep(int layer, Sublayer s, const float* in, const float* out, int rows) {
    SublayerActivation v;
    v.side = act_side;
    v.layer = layer;
    v.sublayer = s;
    v.input = download(in, rows);
    v.output = download(out, rows);
    acts->push_back(std::move(v));
  }

  void linear(const float* x, const DeviceLinear& l, float* out, int rows) {
    be.linear_forward(x, l.wp(), l.bp(), out, rows, l.in, l.out);
  }
  void norm(const float* x, const DeviceNorm& n, float* out, int rows, float eps) {
    be.norm_forward(NormKind::LayerNorm, x, n.g(), n.bt(), out, rows, d, eps);
  }

  // Residual wiring around a sublayer f(in, out): post-norm x = LN(x + f(x)); pre-norm
  // x = x + f(LN(x)). With a tape (training) f's output goes through dropout and the tape keeps
  // f's input and the LayerNorm's input.
  template <class F>
  void sublayer(float* x, int rows, const DeviceNorm& n, SublayerTape* t, float p, F&& f,
                const Keep* k = nullptr) {
    const int64_t cells = (int64_t)rows * d;
    if (c.norm == NormPlacement::Pre) {
      float* hh = h;
      if (t) {
        be.copy(x, t->norm_in, cells);
        hh = t->f_in;
      }
      norm(x, n, hh, rows, c.layer_norm_eps);
      if (k) keep(k->layer, k->norm, x, hh, rows);
      f(hh, y);
      if (k) keep(k->layer, k->sublayer, hh, y, rows);
      if (t) be.dropout_forward(y, cells, p, t->seed);
      be.residual_forward(y, x, cells);
    } else {
      const float* in = x;
      float* yy = y;
      if (t) {
        be.copy(x, t->f_in, cells);
        in = t->f_in;
        yy = t->norm_in;
      }
      f(in, yy);
      if (k) keep(k->layer, k->sublayer, in, yy, rows);
      if (t) be.dropout_forward(yy, cells, p, t->seed);
      be.residual_forward(in, yy, cells);
      norm(yy, n, x, rows, c.layer_norm_eps);
      if (k) keep(k->layer, k->norm, yy, x, rows);
    }
  }

  // fc2(act(fc1(x))); with a tape, fc1's output and the activation's (after dropout) are kept.
  void feedForward(const float* x, const DeviceLayer& L, float* out, int rows, LayerTape* t,
                   float p) {
    const int64_t cells = (int64_t)rows * c.d_ff;
    float* hidden = ffn;
    if (t) {
      linear(x, L.fc1, t->ffn_pre, rows);
      hidden = t->ffn_act;
      be.copy(t->ffn_pre, hidden, cells);
    } else {
      linear(x, L.fc1, hidden, rows);
    }
    be.activation_forward(hidden, cells, c.activation);
    if (t) be.dropout_forward(hidden, cells, p, t->ffn_seed);
    linear(hidden, L.fc2, out, rows);
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
                    HostVector<float>& out) {
    out.resize((size_t)B * H * rows * d);  // every cell written below
    HostVector<float> tmp((size_t)rows * view.row_stride);
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
    be.attention_scores_forward(qv, kv, sc, B, H, H, n, Tk, dk, 1.0f / std::sqrt((float)dk));
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
    be.attention_context_forward(context_probs, vv, ctx, B, H, H, n, Tk, c.d_v);
  }

  // Points the attention scratch at a tape's slots (training), or back at the pass's own.
  void useAttention(const AttentionTape* t) {
    q = t ? t->q : own_q;
    probs = t ? t->probs : own_probs;
    ctx = t ? t->ctx : own_ctx;
  }

  // All layers of one stack run (see StackRun).
  void layers(float* x, const StackRun& r, int* done, int total) {
    const int rows = r.B * r.n, K = r.past + r.n;
    const DeviceStack& st = *r.stack;
    acts = stage && r.past == 0 && !r.tape ? r.acts : nullptr;
    act_side = r.self_kind == AttentionKind::EncoderSelf ? Side::Source : Side::Target;
    act_batch = r.B;
    for (size_t l = 0; l < st.layers.size(); ++l) {
      checkCancel(o);
      const DeviceLayer& L = st.layers[l];
      const Keep keep_self{(int)l, Sublayer::SelfAttention, Sublayer::NormSelf},
          keep_cross{(int)l, Sublayer::CrossAttention, Sublayer::NormCross},
          keep_ffn{(int)l, Sublayer::FeedForward, Sublayer::NormFeedForward};
      LayerTape* lt = r.tape ? &r.tape->layers[l] : nullptr;
      AttentionBlock* self_block = nullptr;
      if (r.blocks) {
        r.blocks->emplace_back(r.self_kind, (int)l, r.B, H, r.n, K, storeScores(),
                               /*zero_fill=*/false);
        r.blocks->back().scores_from_qk = o.keep_scores && o.scores_from_qk;
        r.blocks->back().mask.assign(r.self_mask_host->begin(), r.self_mask_host->end());
        self_block = &r.blocks->back();
      }
      useAttention(lt ? &lt->self_attn : nullptr);
      sublayer(
          x, rows, L.norm_self, lt ? &lt->self : nullptr, r.dropout,
          [&](const float* in, float* out) {
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
                                          {kvs + (int64_t)r.past * KV, (int64_t)r.cap * KV, KV},
                                          dst, r.B, H, H, r.past, r.n, c.d_k,
                                          1.0f / std::sqrt((float)c.d_k));
              if (!host) a.get(scores, f.data(), f.size() * sizeof(float));
            } else if (r.future) {
              r.future->emplace_back();
            }
          },
          acts ? &keep_self : nullptr);
      if (L.has_cross) {
        const Model::Encoded& e = *r.enc;
        AttentionBlock* cross_block = nullptr;
        if (r.blocks) {
          r.blocks->emplace_back(AttentionKind::Cross, (int)l, r.B, H, r.n, e.S, storeScores(),
                                 /*zero_fill=*/false);
          r.blocks->back().scores_from_qk = o.keep_scores && o.scores_from_qk;
          r.blocks->back().mask.assign(r.cross_mask_host->begin(), r.cross_mask_host->end());
          cross_block = &r.blocks->back();
        }
        if (r.future) r.future->emplace_back();
        useAttention(lt ? &lt->cross_attn : nullptr);
        sublayer(
            x, rows, L.norm_cross, lt ? &lt->cross : nullptr, r.dropout,
            [&](const float* in, float* out) {
              linear(in, L.cross_attn.q, q, rows);
              const float* m = e.cross_kv[l]->f32();
              const HeadsView qv{q, (int64_t)r.n * A, A};
              const HeadsView kv{m, (int64_t)e.S * KV, KV};
              // The source's keys and values are new only in the first run over a sentence.
              attend(AttentionKind::Cross, (int)l, qv, kv, r.B, r.n, e.S, r.past == 0 ? 0 : e.S,
                     r.cross_mask, cross_block);
              linear(ctx, L.cross_attn.out, out, rows);
            },
            acts ? &keep_cross : nullptr);
      }
      useAttention(nullptr);
      sublayer(
          x, rows, L.norm_ffn, lt ? &lt->ffn : nullptr, r.dropout,
          [&](const float* in, float* out) { feedForward(in, L, out, rows, lt, r.dropout); },
          acts ? &keep_ffn : nullptr);
      ++*done;
      if (o.progress) o.progress(*done, total);
    }
    if (c.final_norm) {
      if (r.tape) be.copy(x, r.tape->final_in, (int64_t)rows * d);
      Tensor before = acts ? download(x, rows) : Tensor();
      norm(x, st.final_norm, x, rows, c.layer_norm_eps);
      if (acts)
        acts->push_back({act_side, -1, Sublayer::FinalNorm, std::move(before), download(x, rows)});
    }
    acts = nullptr;
  }

  // x [B·n, d] ← tokens[id]·scale (+ segments[seg]) + positions[pos0 …], then the embedding norm
  // (and, training, dropout).
  void embed(const DeviceStack& st, const int32_t* ids, const int32_t* segs, float* x, int B, int n,
             int pos0, StackTape* t = nullptr, float p = 0.0f) {
    const float scale = c.embed_scale ? std::sqrt((float)d) : 1.0f;
    be.embedding_forward(ids, st.tokens, st.positions, x, B, n, d, pos0, scale);
    if (segs && st.segments) be.gather_add_forward(segs, st.segments, x, B * n, d);
    if (c.embed_norm) {
      if (t) be.copy(x, t->embed_norm_in, (int64_t)B * n * d);
      norm(x, st.embed_norm, x, B * n, c.embed_norm_eps);
    }
    if (t) be.dropout_forward(x, (int64_t)B * n * d, p, t->embed_seed);
  }

  Backend& be;
  const ModelConfig& c;
  const ForwardOptions& o;
  Arena& a;
  const bool host;
  float *h, *y, *q, *ctx, *ffn, *scores, *probs, *extra = nullptr;
  float *own_q, *own_ctx, *own_probs;  // the pass's own attention scratch (useAttention)
  float* stage = nullptr;  // [rows, d]: activations on their way to the host (keep_activations)
  std::vector<SublayerActivation>* acts = nullptr;  // where layers() records them, or null
  Side act_side = Side::Source;
  int act_batch = 1;
};

// ---- the backward pass: Pass's functions in reverse, one for one (llm.c's gpt2_backward) ----

// The gradients of one backward pass's activations, carved once for the larger stack run.
struct GradScratch {
  float* dn = nullptr;      // [rows, d] a LayerNorm's input gradient
  float* dy = nullptr;      // [rows, d] a sublayer's output gradient (after dropout's backward)
  float* dfin = nullptr;    // [rows, d] a pre-norm sublayer's input gradient
  float* dq = nullptr;      // [rows, A]
  float* dkv = nullptr;     // [B, max(S, T), A + Av]
  float* dprobs = nullptr;  // [B, H, n, keys] (then, in place, the scores' gradient)
  float* dctx = nullptr;    // [rows, Av]
  float* dffn = nullptr;    // [rows, d_ff]
};

class Backward : public Widths {
 public:
  Backward(Backend& be, const ModelConfig& c, const DeviceWeights& dw, const GradScratch& g)
      : Widths(c), be(be), c(c), dw(dw), g(g) {}

  // Pass::linear: dx += dy·W, and the weight's and bias's gradients.
  void linear(const float* dy, const float* x, const DeviceLinear& l, float* dx, int rows) {
    be.linear_backward(dy, x, l.w, dx, dw.grad(l.w), dw.grad(l.b), rows, l.in, l.out);
  }
  // Pass::norm: dx += LayerNorm's input gradient, and γ's and β's.
  void norm(const float* dy, const float* x, const DeviceNorm& n, float* dx, int rows, float eps) {
    be.norm_backward(NormKind::LayerNorm, dy, x, n.g(), dx, dw.grad(n.gamma), dw.grad(n.beta), rows,
                     d, eps);
  }

  // Pass::sublayer. dx [rows, d]: the gradient of the sublayer's output on entry, of its input on
  // return. back(f_in, dout, din) is f's backward: din += ∂f/∂f_in · dout.
  template <class F>
  void sublayer(float* dx, int rows, const DeviceNorm& n, const SublayerTape& t, float p,
                F&& back) {
    const int64_t cells = (int64_t)rows * d;
    if (c.norm == NormPlacement::Pre) {  // x_out = x + drop(f(LN(x)))
      be.copy(dx, g.dy, cells);
      be.dropout_backward(g.dy, cells, p, t.seed);
      be.zero(g.dfin, cells);
      back(t.f_in, g.dy, g.dfin);
      norm(g.dfin, t.norm_in, n, dx, rows, c.layer_norm_eps);
    } else {  // x_out = LN(x + drop(f(x)))
      be.zero(g.dn, cells);
      norm(dx, t.norm_in, n, g.dn, rows, c.layer_norm_eps);
      be.copy(g.dn, dx, cells);
      be.copy(g.dn, g.dy, cells);
      be.dropout_backward(g.dy, cells, p, t.seed);
      back(t.f_in, g.dy, dx);
    }
  }

  // Pass::attend (scores → mask → softmax → context) for n queries over Tk keys, from the
  // context's gradient in g.dctx: g.dq ← the queries' gradient; dk, dv += the keys' and values'.
  void attend(HeadsView qv, HeadsView kv, const float* probs, const uint8_t* mask, int B, int n,
              int Tk, HeadsGrad dk, HeadsGrad dv) {
    const HeadsView vv{kv.data + A, kv.batch_stride, kv.row_stride};
    be.attention_context_backward(g.dctx, probs, vv, g.dprobs, dv, B, H, H, n, Tk, c.d_v);
    be.masked_softmax_backward(probs, g.dprobs, mask, g.dprobs, B, H, n, Tk);
    be.zero(g.dq, (int64_t)B * n * A);
    be.attention_scores_backward(g.dprobs, qv, kv, {g.dq, (int64_t)n * A, A}, dk, B, H, H, n, Tk,
                                 c.d_k, 1.0f / std::sqrt((float)c.d_k));
  }

  // The self-attention sublayer's f: din += its input's gradient.
  void selfAttention(const DeviceAttention& W, const AttentionTape& t, const uint8_t* mask,
                     const float* in, const float* dout, float* din, int B, int n) {
    const int rows = B * n;
    be.zero(g.dctx, (int64_t)rows * Av);
    linear(dout, t.ctx, W.out, g.dctx, rows);
    be.zero(g.dkv, (int64_t)rows * KV);
    const int64_t kv_batch = (int64_t)n * KV;
    attend({t.q, (int64_t)n * A, A}, {t.kv, kv_batch, KV}, t.probs, mask, B, n, n,
           {g.dkv, kv_batch, KV}, {g.dkv + A, kv_batch, KV});
    linear(g.dq, in, W.q, din, rows);
    linear(g.dkv, in, W.kv, din, rows);
  }

  // The cross-attention sublayer's f: din += its input's gradient, dmemory += the encoder
  // output's (through this layer's keys and values).
  void crossAttention(const DeviceAttention& W, const AttentionTape& t, const uint8_t* mask,
                      const Model::Encoded& e, size_t layer, const float* in, const float* dout,
                      float* din, float* dmemory, int B, int n) {
    const int rows = B * n, S = e.S;
    be.zero(g.dctx, (int64_t)rows * Av);
    linear(dout, t.ctx, W.out, g.dctx, rows);
    be.zero(g.dkv, (int64_t)B * S * KV);
    const int64_t kv_batch = (int64_t)S * KV;
    attend({t.q, (int64_t)n * A, A}, {e.cross_kv[layer]->f32(), kv_batch, KV}, t.probs, mask, B, n,
           S, {g.dkv, kv_batch, KV}, {g.dkv + A, kv_batch, KV});
    linear(g.dq, in, W.q, din, rows);
    linear(g.dkv, e.memory->f32(), W.kv, dmemory, B * S);
  }

  // Pass::feedForward: din += its input's gradient.
  void feedForward(const DeviceLayer& L, const LayerTape& t, const float* in, const float* dout,
                   float* din, int rows, float p) {
    const int64_t cells = (int64_t)rows * c.d_ff;
    be.zero(g.dffn, cells);
    linear(dout, t.ffn_act, L.fc2, g.dffn, rows);
    be.dropout_backward(g.dffn, cells, p, t.ffn_seed);
    be.activation_backward(t.ffn_pre, g.dffn, g.dffn, cells, c.activation);
    linear(g.dffn, in, L.fc1, din, rows);
  }

  // Pass::layers in reverse. dx [rows, d]: the gradient of the stack's output on entry, of its
  // embeddings on return; the decoder adds its cross-attention's share to dmemory [B·S, d].
  void layers(float* dx, const StackRun& r, float* dmemory) {
    const int rows = r.B * r.n;
    const DeviceStack& st = *r.stack;
    const StackTape& t = *r.tape;
    if (c.final_norm) {
      be.zero(g.dn, (int64_t)rows * d);
      norm(dx, t.final_in, st.final_norm, g.dn, rows, c.layer_norm_eps);
      be.copy(g.dn, dx, (int64_t)rows * d);
    }
    for (size_t l = st.layers.size(); l-- > 0;) {
      const DeviceLayer& L = st.layers[l];
      const LayerTape& lt = t.layers[l];
      sublayer(dx, rows, L.norm_ffn, lt.ffn, r.dropout,
               [&](const float* in, const float* dout, float* din) {
                 feedForward(L, lt, in, dout, din, rows, r.dropout);
               });
      if (L.has_cross)
        sublayer(dx, rows, L.norm_cross, lt.cross, r.dropout,
                 [&](const float* in, const float* dout, float* din) {
                   crossAttention(L.cross_attn, lt.cross_attn, r.cross_mask, *r.enc, l, in, dout,
                                  din, dmemory, r.B, r.n);
                 });
      sublayer(dx, rows, L.norm_self, lt.self, r.dropout,
               [&](const float* in, const float* dout, float* din) {
                 selfAttention(L.self_attn, lt.self_attn, r.self_mask, in, dout, din, r.B, r.n);
               });
    }
  }

  // Pass::embed in reverse: the token table's (and learned positions', segments') gradients.
  void embed(const DeviceStack& st, const StackTape& t, float* dx, int B, int n, float p) {
    const int rows = B * n;
    const int64_t cells = (int64_t)rows * d;
    be.dropout_backward(dx, cells, p, t.embed_seed);
    if (c.embed_norm) {
      be.zero(g.dn, cells);
      norm(dx, t.embed_norm_in, st.embed_norm, g.dn, rows, c.embed_norm_eps);
      be.copy(g.dn, dx, cells);
    }
    if (t.segs && st.segments) be.gather_add_backward(t.segs, dx, dw.grad(st.segments), rows, d);
    const float scale = c.embed_scale ? std::sqrt((float)d) : 1.0f;
    // Learned positions are a parameter (from row position_offset on); a sinusoid table is not.
    float* dpositions = st.learned_positions ? dw.grad(st.positions) : nullptr;
    be.embedding_backward(t.ids, dx, dw.grad(st.tokens), dpositions, B, n, d, 0, scale);
  }

  // tokenHead in reverse: dx [rows, d] += from dlogits [rows, V].
  void tokenHead(const DeviceHead& h, const HeadTape& t, const float* x, const float* dlogits,
                 float* dx, int rows) {
    if (c.tokenHead() == TokenHead::Linear) {
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

  // classHead in reverse: dx [B, n, d] += from dlogits [B, C].
  void classHead(const DeviceHead& h, const HeadTape& t, const float* dlogits, float* dx, int B,
                 int n) {
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

 private:
  Backend& be;
  const ModelConfig& c;
  const DeviceWeights& dw;
  const GradScratch& g;
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
  if (c.positional == Positional::Learned) {
    position_rows_ = c.max_len;
  } else {
    position_rows_ = std::min(c.max_len, ConfigLimits::kMaxSinusoidalPositions);
    Tensor pe = c.positional == Positional::SinusoidalHalves
                    ? sinusoidalHalvesTable(position_rows_, c.d_model)
                    : sinusoidalTable(position_rows_, c.d_model);
    dw_->sinusoid = uploadFloats(be, pe.ptr(), pe.data.size(), &dw_->bytes);
  }
  ParamPacker packer(be, *dw_);
  packWeights(packer, c, w, *dw_);  // counts
  packer.start(packer.used());
  packWeights(packer, c, w, *dw_);  // places and uploads
  for (DeviceStack* st : {&dw_->enc, &dw_->dec}) {
    if (!st->positions) {
      if (dw_->sinusoid) st->positions = dw_->sinusoid->f32();
    } else {  // a learned table whose first position_offset rows are never used (BART)
      st->positions += (size_t)c.position_offset * c.d_model;
    }
  }
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

uint64_t Model::estimatePassBytes(int B, int S, int T, bool keep_scores) const {
  ForwardOptions o;
  o.keep_scores = keep_scores;
  return estimatePassBytes(B, S, T, o);
}

uint64_t Model::estimatePassBytes(int B, int S, int T, const ForwardOptions& o) const {
  // What a pass allocates, as runEncoder and runDecoder allocate it (on the CPU backend all of it
  // is host memory): the trace's blocks and outputs, which stay; the encoder's output and the
  // cross-attention keys and values, which live through the decoder; and the larger of the two
  // runs' working sets (the arena of activations, the masks, the head's output before its copy).
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
  auto sum = [](std::initializer_list<uint64_t> xs) {
    uint64_t r = 0;
    for (uint64_t x : xs) r = x > UINT64_MAX - r ? UINT64_MAX : r + x;
    return r;
  };
  const uint64_t b = (uint64_t)B, s = c.hasEncoder() ? (uint64_t)S : 0,
                 t = c.hasDecoder() ? (uint64_t)T : 0, H = c.n_heads, d = c.d_model,
                 A = c.attnWidth(), Av = c.valueWidth(), KV = A + Av, F = c.d_ff,
                 Le = c.n_encoder_layers, Ld = c.n_decoder_layers;
  const bool record = o.record, scores = o.record && o.keep_scores, qkv = o.record && o.keep_qkv;
  const uint64_t V = c.tokenHead() == TokenHead::None ? 0 : c.outputVocab().size();
  const uint64_t C = c.classHead() == ClassHead::None ? 0 : (uint64_t)std::max(c.n_classes, 1);
  // Above max_stored_scores_bytes of scores a block keeps each head's q and k instead.
  const bool from_qk = scores && scoresFromQk(B, S, T, o.max_stored_scores_bytes);
  // A block of q × k cells: probs (and scores, or q and k) per head, its mask, and on request each
  // head's q [q, d_k], k [k, d_k] and v [k, d_v].
  auto block = [&](uint64_t q, uint64_t k) {
    if (!record) return uint64_t(0);
    const int qi = (int)std::min<uint64_t>(q, INT32_MAX),
              ki = (int)std::min<uint64_t>(k, INT32_MAX);
    if (from_qk)
      return sum({AttentionBlock::bytesFromQk(B, c.n_heads, qi, ki, c.d_k),
                  qkv ? mul({b, H, k * (uint64_t)c.d_v, 4}) : 0});
    return sum({AttentionBlock::bytesFor(B, c.n_heads, qi, ki, scores),
                qkv ? mul({b, H, q * c.d_k + k * (uint64_t)(c.d_k + c.d_v), 4}) : 0});
  };
  // The arena of one run over `rows` query rows and `keys` keys (Pass::floatsFor).
  const uint64_t per_key = (o.interventions.empty() ? 2 : 3) * H;
  auto arena = [&](uint64_t rows, uint64_t keys) {
    return mul({rows, 2 * d + A + Av + F + per_key * keys + (o.keep_activations ? d : 0), 4});
  };
  // Sublayer activations (keep_activations): an input and an output [B, len, d] per entry, four
  // entries per encoder layer and six per decoder layer (four without cross-attention), and the
  // final norm's.
  const uint64_t fin = c.final_norm ? 1 : 0;
  const uint64_t activations = o.keep_activations
                                   ? sum({mul({Le * 4 + fin, b, s, d, 8}),
                                          mul({Ld * (c.hasCross() ? 6 : 4) + fin, b, t, d, 8})})
                                   : 0;
  const uint64_t trace = sum({mul({Le, block(s, s)}), mul({Ld, block(t, t)}),
                              c.hasCross() ? mul({Ld, block(t, s)}) : 0, activations});
  // Outputs: the logits, class logits and hidden states of the trace.
  const uint64_t out_rows = mul({b, c.hasDecoder() ? t : s});
  const uint64_t outputs = mul({sum({mul({out_rows, V + d}), b * C}), 4});
  // The encoder's output and every decoder layer's cross-attention keys and values.
  const uint64_t memory = c.hasEncoder() ? mul({b, s, d + (c.hasCross() ? Ld * KV : 0), 4}) : 0;
  uint64_t encoder = 0, decoder = 0;
  if (c.hasEncoder()) {
    const uint64_t rows = b * s;
    encoder = sum({arena(rows, s), mul({rows, KV + 2, 4}), mul({b, s, s, 2})});
    if (!c.hasDecoder())  // the heads' arena, then the copy into the trace
      encoder =
          std::max(encoder, sum({arena(rows, 1), mul({rows, V, 4}), mul({b, d + C, 4}), outputs}));
  }
  if (c.hasDecoder()) {
    const uint64_t rows = b * t, keys = std::max(s, t);
    decoder = sum({arena(rows, keys), mul({rows, V + d + KV + 1, 4}), mul({b, d + C, 4}),
                   mul({b, t, t + s, 2}), outputs});
  }
  return sum({trace, memory, std::max(encoder, decoder)});
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
  const uint64_t bytes = estimatePassBytes(B, S, T, o);
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
// recording, appends its blocks. With a tape (training), keeps what the backward needs in it.
void runEncoder(Backend& be, const ModelConfig& c, const DeviceWeights& dw, Model::Encoded& enc,
                const std::vector<std::vector<int>>& segments, const ForwardOptions& o,
                std::vector<AttentionBlock>* blocks, int* done, int total, Tape* tape = nullptr,
                std::vector<SublayerActivation>* acts = nullptr) {
  const int B = enc.batch, S = enc.S, d = c.d_model;
  const int KV = c.attnWidth() + c.valueWidth();
  enc.key_mask.assign((size_t)B * S, 0);
  const bool pad_on = c.src_padding_mask && o.masks.src_padding;
  for (int b = 0; b < B; ++b)
    for (int j = 0; j < S; ++j)
      enc.key_mask[(size_t)b * S + j] = pad_on && enc.src[b][j] == c.src_pad_id;
  const std::vector<uint8_t> mask = keyPaddingMask(enc.src, S, c.src_pad_id, pad_on, false);
  const uint64_t floats = Pass::floatsFor(c, o, B * S, S) + (uint64_t)B * S * KV;
  Arena arena = passArena(
      be, Arena::size(floats, mask.size() + (uint64_t)B * S * 8, Pass::kRegions + 4), tape);
  Pass P(be, c, o, arena, B * S, S);
  StackTape* t = tape ? &tape->enc : nullptr;
  auto put = [&](auto* dst, const auto& host) {
    t ? tapePut(be, *tape, dst, host) : arena.put(dst, host);
  };
  int32_t* ids = t ? t->ids : arena.ints((int64_t)B * S);
  put(ids, flatten(enc.src));
  int32_t* segs = nullptr;
  if (dw.enc.segments) {
    segs = t ? t->segs : arena.ints((int64_t)B * S);
    std::vector<int32_t> flat((size_t)B * S, 0);
    for (int b = 0; b < B && b < (int)segments.size(); ++b)
      for (int j = 0; j < S && j < (int)segments[b].size(); ++j)
        flat[(size_t)b * S + j] = segments[b][j];
    put(segs, flat);
  }
  uint8_t* dmask = t ? t->mask : arena.bytes((int64_t)mask.size());
  put(dmask, mask);
  enc.memory = be.allocate((size_t)B * S * d * sizeof(float));
  float* x = enc.memory->f32();
  P.embed(dw.enc, ids, segs, x, B, S, 0, t, tape ? tape->dropout : 0.0f);
  StackRun r;
  r.stack = &dw.enc;
  r.self_kind = AttentionKind::EncoderSelf;
  r.B = B;
  r.n = r.cap = S;
  if (t) {
    for (const LayerTape& lt : t->layers) r.kv.push_back(lt.self_attn.kv);
    r.tape = t;
    r.dropout = tape->dropout;
  } else {
    r.kv = {arena.floats((int64_t)B * S * KV)};
  }
  r.self_mask = dmask;
  r.self_mask_host = &mask;
  r.blocks = blocks;
  r.acts = acts;
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

// The token head on x [rows, d] → logits [rows, V] (host). With a tape (training) the logits and
// what the backward needs stay in it, on the device.
void tokenHead(Pass& P, const DeviceHead& h, const ModelConfig& c, const float* x, int rows,
               Tensor& out, Shape shape, HeadTape* t = nullptr) {
  if (c.tokenHead() == TokenHead::None) return;
  const int V = h.projection.out;
  float* logits = t ? t->logits : P.a.floats((int64_t)rows * V);
  const float* in = x;
  if (c.tokenHead() == TokenHead::BertMlm) {
    // BERT's masked-LM head: LayerNorm(act(x·W + b)) · decoderᵀ + decoder_bias.
    const int64_t cells = (int64_t)rows * c.d_model;
    float* act = P.y;
    if (t) {
      P.linear(x, h.mlm_transform, t->mlm_pre, rows);
      act = t->mlm_act;
      P.be.copy(t->mlm_pre, act, cells);
    } else {
      P.linear(x, h.mlm_transform, act, rows);
    }
    P.be.activation_forward(act, cells, c.activation);
    float* normed = t ? t->mlm_out : P.y;
    P.norm(act, h.mlm_norm, normed, rows, c.layer_norm_eps);
    in = normed;
  }
  P.linear(in, h.projection, logits, rows);
  if (t) return;
  out = Tensor(std::move(shape));
  P.a.get(logits, out.ptr(), out.data.size() * sizeof(float));
}

// The class head on x [B, n, d] → class logits [B, n_classes] (host; with a tape, on the device).
void classHead(Pass& P, const DeviceHead& h, const ModelConfig& c, const float* x, int B, int n,
               Tensor& out, HeadTape* t = nullptr) {
  if (c.classHead() == ClassHead::None) return;
  const int d = c.d_model, C = h.classifier.out;
  float* pooled = t ? t->pooled : P.a.floats((int64_t)B * d);
  float* logits = t ? t->class_logits : P.a.floats((int64_t)B * C);
  if (c.classHead() == ClassHead::MeanPool) {
    P.be.mean_pool_forward(x, pooled, B, n, d);
    P.linear(pooled, h.classifier, logits, B);
  } else {  // BERT's pooler: tanh(W·x[:, 0] + b), then the classifier
    for (int b = 0; b < B; ++b) P.be.copy(x + (int64_t)b * n * d, pooled + (int64_t)b * d, d);
    float* act = P.y;
    if (t) {
      P.linear(pooled, h.pooler, t->pooler_pre, B);
      act = t->pooler_act;
      P.be.copy(t->pooler_pre, act, (int64_t)B * d);
    } else {
      P.linear(pooled, h.pooler, act, B);
    }
    P.be.activation_forward(act, (int64_t)B * d, Activation::Tanh);
    P.linear(act, h.classifier, logits, B);
  }
  if (t) return;
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
                     const ForwardOptions& o, Tape* tape = nullptr) {
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
  Arena arena =
      passArena(be,
                Arena::size(floats, self_mask.size() + cross_mask.size() + (uint64_t)B * n * 4,
                            Pass::kRegions + 8),
                tape);
  Pass P(be, c, o, arena, B * n, keys);
  StackTape* t = tape ? &tape->dec : nullptr;
  auto put = [&](auto* dst, const auto& host) {
    t ? tapePut(be, *tape, dst, host) : arena.put(dst, host);
  };
  std::vector<int32_t> fed;
  for (const auto& tokens : all_tokens) fed.insert(fed.end(), tokens.begin() + past, tokens.end());
  int32_t* ids = t ? t->ids : arena.ints((int64_t)B * n);
  put(ids, fed);
  uint8_t* dself = t ? t->mask : arena.bytes((int64_t)self_mask.size());
  put(dself, self_mask);
  uint8_t* dcross = !enc ? nullptr : t ? t->cross_mask : arena.bytes((int64_t)cross_mask.size());
  if (enc) put(dcross, cross_mask);
  if (t) {
    kv.clear();
    for (const LayerTape& lt : t->layers) kv.push_back(lt.self_attn.kv);
    cap = n;
  } else if (scratch_kv) {
    kv = {arena.floats((int64_t)B * n * KV)};
    cap = n;
  }
  float* x = t ? t->out : arena.floats((int64_t)B * n * d);
  P.embed(dw.dec, ids, nullptr, x, B, n, past, t, tape ? tape->dropout : 0.0f);

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
  r.acts = &rows.activations;
  r.tape = t;
  r.dropout = tape ? tape->dropout : 0.0f;
  int done = c.n_encoder_layers;
  P.layers(x, r, &done, c.n_encoder_layers + c.n_decoder_layers);
  if (o.record)
    for (const auto& b : rows.blocks)
      rows.future_mask.push_back(b.kind == AttentionKind::DecoderSelf ? future_mask
                                                                      : std::vector<uint8_t>());
  tokenHead(P, dw.head, c, x, B * n, rows.logits, {B, n, V}, tape ? &tape->head : nullptr);
  if (tape) return rows;  // training: the outputs stay on the device, in the tape
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

size_t Model::checkInputs(const Inputs& in) const {
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
  return B;
}

Trace Model::forward(const Inputs& in, const ForwardOptions& options) const {
  const auto t0 = std::chrono::steady_clock::now();
  const ModelConfig& c = config();
  const size_t B = checkInputs(in);

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
    runEncoder(be, c, *dw_, *enc, tr.segment_ids, o, o.record ? &tr.blocks : nullptr, &done, total,
               nullptr, &tr.activations);
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
    for (auto& a : rows.activations) tr.activations.push_back(std::move(a));
    tr.logits = std::move(rows.logits);
    tr.hidden = std::move(rows.hidden);
  }
  tr.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return tr;
}

// ---- training ----

struct TrainingState {
  BufferPtr workspace;  // the tape, the backward's scratch and the loss's buffers, reused by steps
  BufferPtr scratch;    // the forward passes' own scratch
  bool tied = false;    // BERT's decoder.weight is tok_embed.weight: one gradient for both
};

namespace {

// The device regions of the loss: targets, per-row losses and argmaxes, the logits' gradients.
struct LossRegions {
  int32_t* targets = nullptr;        // [rows] token targets (-1 = not counted)
  float* losses = nullptr;           // [rows]
  int32_t* predictions = nullptr;    // [rows]
  float* dlogits = nullptr;          // [rows, V]
  int32_t* class_targets = nullptr;  // [B]
  float* class_losses = nullptr;     // [B]
  int32_t* class_predictions = nullptr;
  float* dclass = nullptr;   // [B, C]
  float* probe = nullptr;    // [rows, d] hidden_weights
  float* dout = nullptr;     // [rows, d] the output stack's gradient
  float* dmemory = nullptr;  // [B, S, d] the encoder output's gradient
};

void carveStack(Arena& a, const ModelConfig& c, const DeviceStack& ds, StackTape& t, int B, int n,
                int S, bool keep_out) {
  const int64_t rows = (int64_t)B * n, d = c.d_model, H = c.n_heads;
  t.B = B;
  t.n = n;
  t.S = S;
  t.ids = a.ints(rows);
  t.segs = ds.segments ? a.ints(rows) : nullptr;
  t.mask = a.bytes(rows * n);
  t.cross_mask = S ? a.bytes(rows * S) : nullptr;
  t.embed_norm_in = c.embed_norm ? a.floats(rows * d) : nullptr;
  auto sub = [&](SublayerTape& s) {
    s.f_in = a.floats(rows * d);
    s.norm_in = a.floats(rows * d);
  };
  t.layers.assign(ds.layers.size(), LayerTape());
  for (size_t l = 0; l < ds.layers.size(); ++l) {
    LayerTape& lt = t.layers[l];
    sub(lt.self);
    lt.self_attn = {a.floats(rows * c.attnWidth()),
                    a.floats(rows * (c.attnWidth() + c.valueWidth())), a.floats(rows * H * n),
                    a.floats(rows * c.valueWidth())};
    if (ds.layers[l].has_cross) {
      sub(lt.cross);
      lt.cross_attn = {a.floats(rows * c.attnWidth()), nullptr, a.floats(rows * H * S),
                       a.floats(rows * c.valueWidth())};
    }
    sub(lt.ffn);
    lt.ffn_pre = a.floats(rows * c.d_ff);
    lt.ffn_act = a.floats(rows * c.d_ff);
  }
  t.final_in = c.final_norm ? a.floats(rows * d) : nullptr;
  t.out = keep_out ? a.floats(rows * d) : nullptr;
}

// Everything a training step of B sentences of S source and T target positions needs, in `a`
// (a counting arena first, to size the workspace).
void carveStep(Arena& a, const ModelConfig& c, const DeviceWeights& dw, int B, int S, int T,
               Tape& tape, GradScratch& g, LossRegions& l) {
  const int64_t d = c.d_model, A = c.attnWidth(), KV = c.attnWidth() + c.valueWidth();
  if (c.hasEncoder()) carveStack(a, c, dw.enc, tape.enc, B, S, 0, false);
  if (c.hasDecoder()) carveStack(a, c, dw.dec, tape.dec, B, T, c.hasCross() ? S : 0, true);
  const int n_out = c.hasDecoder() ? T : S;
  const int64_t rows = (int64_t)B * n_out;
  const int64_t V = dw.head.projection.out, C = dw.head.classifier.out;
  HeadTape& h = tape.head;
  if (c.tokenHead() != TokenHead::None) h.logits = a.floats(rows * V);
  if (c.tokenHead() == TokenHead::BertMlm) {
    h.mlm_pre = a.floats(rows * d);
    h.mlm_act = a.floats(rows * d);
    h.mlm_out = a.floats(rows * d);
  }
  if (c.classHead() != ClassHead::None) {
    h.pooled = a.floats(B * d);
    h.pooler_pre = a.floats(B * d);
    h.pooler_act = a.floats(B * d);
    h.class_logits = a.floats(B * C);
  }
  const int64_t max_rows = (int64_t)B * std::max(S, T), keys = std::max(S, T);
  g.dn = a.floats(max_rows * d);
  g.dy = a.floats(max_rows * d);
  g.dfin = a.floats(max_rows * d);
  g.dq = a.floats(max_rows * A);
  g.dkv = a.floats(max_rows * KV);
  g.dprobs = a.floats(max_rows * c.n_heads * keys);
  g.dctx = a.floats(max_rows * c.valueWidth());
  g.dffn = a.floats(max_rows * c.d_ff);
  l.targets = a.ints(rows);
  l.losses = a.floats(rows);
  l.predictions = a.ints(rows);
  l.dlogits = a.floats(rows * V);
  l.class_targets = a.ints(B);
  l.class_losses = a.floats(B);
  l.class_predictions = a.ints(B);
  l.dclass = a.floats(B * C);
  l.probe = a.floats(rows * d);
  l.dout = a.floats(rows * d);
  l.dmemory = c.hasEncoder() ? a.floats((int64_t)B * S * d) : nullptr;
}

// A 64-bit seed for dropout site k of a step seeded with `seed`.
uint64_t siteSeed(uint64_t seed, uint64_t k) {
  return ((uint64_t)counterHash(seed, 2 * k) << 32) | counterHash(seed, 2 * k + 1);
}

template <class T>
void tapeGet(Backend& be, const Tape& tape, const T* src, T* dst, size_t n) {
  if (n == 0) return;
  const size_t offset = (size_t)(reinterpret_cast<const uint8_t*>(src) -
                                 static_cast<const uint8_t*>(tape.workspace->data()));
  be.download(*tape.workspace, dst, n * sizeof(T), offset);
}

// The stack run a tape recorded (for the backward).
StackRun tapedRun(const DeviceStack& stack, StackTape& t, const Model::Encoded* enc, float p) {
  StackRun r;
  r.stack = &stack;
  r.B = t.B;
  r.n = t.n;
  r.self_mask = t.mask;
  r.enc = enc;
  r.cross_mask = t.cross_mask;
  r.tape = &t;
  r.dropout = p;
  return r;
}

// F.cross_entropy of device logits [rows, V] against host targets (-1 = not counted): the targets
// go to dtargets, the per-row losses and argmaxes come back.
void crossEntropy(Backend& be, Tape& tape, const float* logits, const std::vector<int32_t>& targets,
                  int32_t* dtargets, float* dlosses, int32_t* dpredictions, int V, float smoothing,
                  std::vector<float>* losses, std::vector<int32_t>* predictions) {
  const int rows = (int)targets.size();
  tapePut(be, tape, dtargets, targets);
  be.cross_entropy_forward(logits, dtargets, dlosses, dpredictions, rows, V, -1, smoothing);
  losses->resize((size_t)rows);
  predictions->resize((size_t)rows);
  tapeGet(be, tape, dlosses, losses->data(), losses->size());
  tapeGet(be, tape, dpredictions, predictions->data(), predictions->size());
}

}  // namespace

void Model::enableTraining() {
  if (train_) return;
  train_ = std::make_unique<TrainingState>();
  dw_->grads = backend_->allocate((size_t)std::max<int64_t>(dw_->n_params, 1) * sizeof(float));
  const ModelWeights& w = model_->weights;
  train_->tied = config().tokenHead() == TokenHead::BertMlm && !w.encoder.embed.tokens.empty() &&
                 w.encoder.embed.tokens.data == w.head.projection.weight.data;
}

void Model::zeroGradients() {
  if (train_) backend_->zero(dw_->grads->f32(), dw_->n_params);
}

float* Model::parameters() {
  return dw_->params->f32();
}

float* Model::gradients() {
  if (!train_)
    throw Error(ErrorKind::BadInput, "the model is not trainable: enableTraining() first");
  return dw_->grads->f32();
}

int64_t Model::parameterCount() const {
  return dw_->n_params;
}

double Model::gradientNorm() {
  Backend& be = *backend_;
  double sum = be.sum_squares(gradients(), dw_->n_params);
  if (train_->tied)  // the tied copy counts once
    sum -= be.sum_squares(dw_->grad(dw_->head.projection.w),
                          (int64_t)dw_->head.projection.out * config().d_model);
  return std::sqrt(std::max(sum, 0.0));
}

ModelWeights Model::downloadLayout(const float* base) const {
  std::vector<float> all((size_t)dw_->n_params);
  backend_->copy_to_host(base, all.data(), dw_->n_params);
  std::vector<const Tensor*> from;
  forEachTensor(model_->weights, [&](const std::string&, const Tensor& t) { from.push_back(&t); });
  ModelWeights out = model_->weights;
  std::vector<Tensor*> to;
  forEachTensor(out, [&](const std::string&, Tensor& t) { to.push_back(&t); });
  std::map<const Tensor*, Tensor*> match;
  for (size_t i = 0; i < from.size(); ++i) match[from[i]] = to[i];
  for (const auto& [t, offset] : dw_->pieces) {
    Tensor* dst = match.at(t);
    std::copy(all.begin() + offset, all.begin() + offset + dst->size(), dst->data.begin());
  }
  return out;
}

ModelWeights Model::currentWeights() const {
  return downloadLayout(dw_->params->f32());
}

ModelWeights Model::currentGradients() const {
  if (!train_)
    throw Error(ErrorKind::BadInput, "the model is not trainable: enableTraining() first");
  return downloadLayout(dw_->grads->f32());
}

std::shared_ptr<LoadedModel> Model::snapshot() const {
  auto m = std::make_shared<LoadedModel>();
  m->path = model_->path;
  m->config = model_->config;
  m->weights = currentWeights();
  return m;
}

LossStats Model::forwardBackward(const Inputs& in, const Targets& tg, const TrainOptions& opt) {
  if (!train_)
    throw Error(ErrorKind::BadInput, "the model is not trainable: enableTraining() first");
  const ModelConfig& c = config();
  const int B = (int)checkInputs(in);
  if (!(opt.dropout >= 0.0f && opt.dropout < 1.0f))
    throw Error(ErrorKind::BadInput,
                "dropout must be in [0, 1), got " + std::to_string(opt.dropout));
  if (!(opt.label_smoothing >= 0.0f && opt.label_smoothing <= 1.0f))
    throw Error(ErrorKind::BadInput,
                "label smoothing must be in [0, 1], got " + std::to_string(opt.label_smoothing));
  int S = 0, T = 0;
  std::vector<std::vector<int>> src, tgt, segments;
  if (c.hasEncoder()) src = padBatch(in.src, c.src_pad_id, &S);
  if (c.hasDecoder()) tgt = padBatch(in.tgt, c.tgt_pad_id, &T);
  if (!in.segments.empty()) {
    int len = 0;
    segments = padBatch(in.segments, 0, &len);
  }
  ForwardOptions o;
  o.record = false;
  o.keep_scores = false;
  o.masks = opt.masks;
  checkPassSize(B, S, T, o);
  const int n_out = c.hasDecoder() ? T : S, d = c.d_model;
  const int64_t rows = (int64_t)B * n_out;
  const int V = dw_->head.projection.out, C = dw_->head.classifier.out;

  // The targets, checked against the outputs the model has.
  const bool token_loss = c.tokenHead() != TokenHead::None && !tg.tokens.empty();
  const bool class_loss = c.classHead() != ClassHead::None && !tg.classes.empty();
  const bool probe = !tg.hidden_weights.empty();
  if (!tg.tokens.empty() && c.tokenHead() == TokenHead::None)
    throw Error(ErrorKind::BadInput, "token targets given, but the model has no token head");
  if (!tg.classes.empty() && c.classHead() == ClassHead::None)
    throw Error(ErrorKind::BadInput, "class targets given, but the model has no class head");
  if (!token_loss && !class_loss && !probe)
    throw Error(ErrorKind::BadInput, "no targets: give token targets, class targets or a probe");
  std::vector<int32_t> targets((size_t)rows, -1);
  if (token_loss) {
    if ((int)tg.tokens.size() != B)
      throw Error(ErrorKind::BadInput, "give token targets for each of the " + std::to_string(B) +
                                           " sentences (got " + std::to_string(tg.tokens.size()) +
                                           ")");
    for (int b = 0; b < B; ++b) {
      if ((int)tg.tokens[b].size() > n_out)
        throw Error(ErrorKind::BadInput, "sentence " + std::to_string(b + 1) + " has " +
                                             std::to_string(tg.tokens[b].size()) +
                                             " token targets for " + std::to_string(n_out) +
                                             " positions");
      for (size_t i = 0; i < tg.tokens[b].size(); ++i) {
        const int t = tg.tokens[b][i];
        if (t >= V)
          throw Error(ErrorKind::BadInput, "target id " + std::to_string(t) +
                                               " is outside the vocabulary (0.." +
                                               std::to_string(V - 1) + ")");
        targets[(size_t)b * n_out + i] = t < 0 ? -1 : t;
      }
    }
  }
  std::vector<int32_t> class_targets;
  if (class_loss) {
    if ((int)tg.classes.size() != B)
      throw Error(ErrorKind::BadInput, "give one class target per sentence");
    for (int k : tg.classes) {
      if (k < 0 || k >= C)
        throw Error(ErrorKind::BadInput, "class target " + std::to_string(k) + " is outside 0.." +
                                             std::to_string(C - 1));
      class_targets.push_back(k);
    }
  }
  if (probe && tg.hidden_weights.shape != Shape{B, n_out, d})
    throw Error(ErrorKind::BadInput, "hidden_weights has shape " +
                                         shapeToString(tg.hidden_weights.shape) + "; expected " +
                                         shapeToString({B, n_out, d}));

  // The workspace: sized by a counting pass, grown when a batch needs more.
  Backend& be = *backend_;
  Tape tape;
  GradScratch g;
  LossRegions l;
  {
    Arena counting;
    carveStep(counting, c, *dw_, B, S, T, tape, g, l);
    if (!train_->workspace || train_->workspace->bytes() < counting.used())
      train_->workspace = be.allocate(counting.used() + counting.used() / 4);
  }
  tape = Tape();
  Arena a(be, *train_->workspace);
  carveStep(a, c, *dw_, B, S, T, tape, g, l);
  tape.workspace = train_->workspace.get();
  tape.scratch = &train_->scratch;
  tape.dropout = opt.dropout;
  uint64_t site = 0;
  for (StackTape* st : {&tape.enc, &tape.dec}) {
    st->embed_seed = siteSeed(opt.seed, site++);
    for (LayerTape& lt : st->layers) {
      lt.self.seed = siteSeed(opt.seed, site++);
      lt.cross.seed = siteSeed(opt.seed, site++);
      lt.ffn.seed = siteSeed(opt.seed, site++);
      lt.ffn_seed = siteSeed(opt.seed, site++);
    }
  }

  // Forward: the one layer stack, with the tape.
  const int total = c.n_encoder_layers + c.n_decoder_layers;
  int done = 0;
  Model::Encoded enc;
  if (c.hasEncoder()) {
    enc.batch = B;
    enc.S = S;
    enc.src = src;
    runEncoder(be, c, *dw_, enc, segments, o, nullptr, &done, total, &tape);
  }
  const float* out_x = nullptr;
  if (c.hasDecoder()) {
    runDecoder(be, c, *dw_, c.hasEncoder() ? &enc : nullptr, tgt, 0, T, T, {}, {}, o, &tape);
    out_x = tape.dec.out;
  } else {
    out_x = enc.memory->f32();
    Arena arena = passArena(
        be,
        Arena::size(Pass::floatsFor(c, o, (int)rows, 1) + headFloats(c, B, (int)rows, V, C), 0,
                    Pass::kRegions + 2),
        &tape);
    Pass P(be, c, o, arena, (int)rows, 1);
    Tensor unused;
    tokenHead(P, dw_->head, c, out_x, (int)rows, unused, {}, &tape.head);
    classHead(P, dw_->head, c, out_x, B, S, unused, &tape.head);
  }

  // The loss and its gradient with respect to the outputs.
  LossStats stats;
  be.zero(l.dout, rows * d);
  Backward bw(be, c, *dw_, g);
  if (token_loss) {
    std::vector<float> losses;
    std::vector<int32_t> predictions;
    crossEntropy(be, tape, tape.head.logits, targets, l.targets, l.losses, l.predictions, V,
                 opt.label_smoothing, &losses, &predictions);
    double sum = 0;
    for (int b = 0; b < B; ++b) {
      int64_t counted = 0, right = 0;
      for (int i = 0; i < n_out; ++i) {
        const size_t r = (size_t)b * n_out + i;
        if (targets[r] < 0) continue;
        ++counted;
        right += predictions[r] == targets[r];
        sum += losses[r];
      }
      stats.tokens += counted;
      stats.correct_tokens += right;
      if (counted) {
        ++stats.sequences;
        stats.correct_sequences += right == counted;
      }
    }
    if (stats.tokens) {
      stats.token_loss = sum / (double)stats.tokens;
      be.cross_entropy_backward(tape.head.logits, l.targets, l.dlogits, (int)rows, V, -1,
                                opt.label_smoothing, 1.0f / (float)stats.tokens);
      bw.tokenHead(dw_->head, tape.head, out_x, l.dlogits, l.dout, (int)rows);
    }
  }
  if (class_loss) {
    std::vector<float> losses;
    std::vector<int32_t> predictions;
    crossEntropy(be, tape, tape.head.class_logits, class_targets, l.class_targets, l.class_losses,
                 l.class_predictions, C, opt.label_smoothing, &losses, &predictions);
    double sum = 0;
    for (int b = 0; b < B; ++b) {
      sum += losses[(size_t)b];
      stats.correct_classes += predictions[(size_t)b] == class_targets[(size_t)b];
    }
    stats.classes = B;
    stats.class_loss = sum / B;
    be.cross_entropy_backward(tape.head.class_logits, l.class_targets, l.dclass, B, C, -1,
                              opt.label_smoothing, 1.0f / (float)B);
    bw.classHead(dw_->head, tape.head, l.dclass, l.dout, B, n_out);
  }
  double probe_loss = 0;
  if (probe) {
    tapePut(be, tape, l.probe, tg.hidden_weights.data);
    std::vector<float> hidden((size_t)rows * d);
    be.copy_to_host(out_x, hidden.data(), rows * d);
    for (size_t i = 0; i < hidden.size(); ++i)
      probe_loss += (double)hidden[i] * tg.hidden_weights.data[i];
    be.residual_backward(l.probe, l.dout, rows * d);
  }
  stats.loss = stats.token_loss + stats.class_loss + probe_loss;

  // Backward: the decoder, its cross-attention's share of the encoder's output, the encoder.
  if (c.hasEncoder()) {
    if (c.hasDecoder())
      be.zero(l.dmemory, (int64_t)B * S * d);
    else
      be.copy(l.dout, l.dmemory, rows * d);
  }
  if (c.hasDecoder()) {
    bw.layers(l.dout, tapedRun(dw_->dec, tape.dec, c.hasEncoder() ? &enc : nullptr, opt.dropout),
              l.dmemory);
    bw.embed(dw_->dec, tape.dec, l.dout, B, T, opt.dropout);
  }
  if (c.hasEncoder()) {
    bw.layers(l.dmemory, tapedRun(dw_->enc, tape.enc, nullptr, opt.dropout), nullptr);
    bw.embed(dw_->enc, tape.enc, l.dmemory, B, S, opt.dropout);
  }
  // Tied weights share one gradient; zero bias parts that stand for no tensor stay zero.
  if (train_->tied) {
    float* a_grad = dw_->grad(dw_->enc.tokens);
    float* b_grad = dw_->grad(dw_->head.projection.w);
    const int64_t n = (int64_t)V * d;
    be.residual_backward(b_grad, a_grad, n);
    be.copy(a_grad, b_grad, n);
  }
  for (const auto& [offset, n] : dw_->padding) be.zero(dw_->grads->f32() + offset, n);
  be.synchronize();
  return stats;
}

}  // namespace attnviz

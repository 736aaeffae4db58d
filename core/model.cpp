#include "model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "error.h"
#include "positional.h"

namespace attnviz {

namespace {

// Sinusoidal tables are computed up to this many positions; longer inputs are refused.
constexpr int kMaxSinusoidalPositions = ConfigLimits::kMaxSinusoidalPositions;

struct DeviceLinear {
  BufferPtr w, b;  // w: [out, in]; b: [out] or null
  int in = 0, out = 0;
  const float* wp() const { return w->f32(); }
  const float* bp() const { return b ? b->f32() : nullptr; }
};

struct DeviceNorm {
  BufferPtr gamma, beta;  // null = identity
  const float* g() const { return gamma ? gamma->f32() : nullptr; }
  const float* bt() const { return beta ? beta->f32() : nullptr; }
};

// Q, K, V are fused into one projection so a block does one GEMM: rows of [W_q; W_k; W_v].
struct DeviceAttention {
  DeviceLinear qkv;  // [A + A + Av, d]  (self-attention)
  DeviceLinear q;    // [A, d]           (cross-attention: queries from the decoder)
  DeviceLinear kv;   // [A + Av, d]      (cross-attention: keys/values from the encoder output)
  DeviceLinear out;  // [d, Av]
};

struct DeviceEncoderLayer {
  DeviceAttention self_attn;
  DeviceNorm norm_attn, norm_ffn;
  DeviceLinear fc1, fc2;
};

struct DeviceDecoderLayer {
  DeviceAttention self_attn, cross_attn;
  DeviceNorm norm_self, norm_cross, norm_ffn;
  DeviceLinear fc1, fc2;
};

}  // namespace

struct DeviceWeights {
  BufferPtr src_emb, tgt_emb;
  std::vector<DeviceEncoderLayer> enc;
  std::vector<DeviceDecoderLayer> dec;
  DeviceNorm enc_final, dec_final;
  DeviceLinear proj;
  uint64_t bytes = 0;
};

namespace {

BufferPtr uploadFloats(Backend& be, const float* data, size_t n, uint64_t* total) {
  BufferPtr buf = be.allocate(n * sizeof(float));
  be.upload(*buf, data, n * sizeof(float));
  *total += n * sizeof(float);
  return buf;
}

DeviceLinear uploadLinear(Backend& be, std::initializer_list<const LinearWeights*> parts,
                          uint64_t* total) {
  // Stacks the parts' rows: [W_1; W_2; ...] and their biases.
  DeviceLinear l;
  l.in = (int)(*parts.begin())->weight.dim(1);
  std::vector<float> w, b;
  bool bias = (*parts.begin())->bias.size() > 0;
  for (const LinearWeights* p : parts) {
    w.insert(w.end(), p->weight.data.begin(), p->weight.data.end());
    if (bias) b.insert(b.end(), p->bias.data.begin(), p->bias.data.end());
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

DeviceAttention uploadAttention(Backend& be, const AttentionWeights& a, bool self,
                                uint64_t* total) {
  DeviceAttention d;
  if (self) {
    d.qkv = uploadLinear(be, {&a.q, &a.k, &a.v}, total);
  } else {
    d.q = uploadLinear(be, {&a.q}, total);
    d.kv = uploadLinear(be, {&a.k, &a.v}, total);
  }
  d.out = uploadLinear(be, {&a.out}, total);
  return d;
}

void checkCancel(const ForwardOptions& o) {
  if (o.cancel && o.cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
}

}  // namespace

Model::Model(std::shared_ptr<const LoadedModel> model, std::shared_ptr<Backend> backend)
    : model_(std::move(model)),
      backend_(std::move(backend)),
      dw_(std::make_unique<DeviceWeights>()) {
  const ModelConfig& c = model_->config;
  const ModelWeights& w = model_->weights;
  src_vocab_ = Vocabulary(c.src_vocab, c.src_unk_id, "source vocabulary");
  tgt_vocab_ = Vocabulary(c.tgt_vocab, c.tgt_unk_id, "target vocabulary");
  Backend& be = *backend_;
  uint64_t* total = &dw_->bytes;
  dw_->src_emb = uploadFloats(be, w.src_embedding.ptr(), w.src_embedding.data.size(), total);
  dw_->tgt_emb = uploadFloats(be, w.tgt_embedding.ptr(), w.tgt_embedding.data.size(), total);
  for (const auto& l : w.encoder) {
    DeviceEncoderLayer d;
    d.self_attn = uploadAttention(be, l.self_attn, true, total);
    d.norm_attn = uploadNorm(be, l.norm_attn, total);
    d.norm_ffn = uploadNorm(be, l.norm_ffn, total);
    d.fc1 = uploadLinear(be, {&l.ffn.fc1}, total);
    d.fc2 = uploadLinear(be, {&l.ffn.fc2}, total);
    dw_->enc.push_back(std::move(d));
  }
  for (const auto& l : w.decoder) {
    DeviceDecoderLayer d;
    d.self_attn = uploadAttention(be, l.self_attn, true, total);
    d.cross_attn = uploadAttention(be, l.cross_attn, false, total);
    d.norm_self = uploadNorm(be, l.norm_self, total);
    d.norm_cross = uploadNorm(be, l.norm_cross, total);
    d.norm_ffn = uploadNorm(be, l.norm_ffn, total);
    d.fc1 = uploadLinear(be, {&l.ffn.fc1}, total);
    d.fc2 = uploadLinear(be, {&l.ffn.fc2}, total);
    dw_->dec.push_back(std::move(d));
  }
  dw_->enc_final = uploadNorm(be, w.encoder_final_norm, total);
  dw_->dec_final = uploadNorm(be, w.decoder_final_norm, total);
  dw_->proj = uploadLinear(be, {&w.projection}, total);
  if (c.positional == Positional::Learned) {
    position_rows_ = c.max_len;
    src_positions_ = uploadFloats(be, w.src_positions.ptr(), w.src_positions.data.size(), total);
    tgt_positions_ = uploadFloats(be, w.tgt_positions.ptr(), w.tgt_positions.data.size(), total);
  } else {
    position_rows_ = std::min(c.max_len, kMaxSinusoidalPositions);
    Tensor pe = sinusoidalTable(position_rows_, c.d_model);
    src_positions_ = uploadFloats(be, pe.ptr(), pe.data.size(), total);
    tgt_positions_ = uploadFloats(be, pe.ptr(), pe.data.size(), total);
  }
}

Model::~Model() = default;

uint64_t Model::weightBytes() const {
  return dw_->bytes;
}

std::vector<int> Model::encodeSource(const std::string& sentence) const {
  return src_vocab_.encode(sentence, position_rows_);
}

std::vector<int> Model::encodeTarget(const std::string& prefix) const {
  std::vector<int> ids{config().bos_id};
  bool blank = prefix.find_first_not_of(" \t\r\n") == std::string::npos;
  if (!blank) {
    std::vector<int> words = tgt_vocab_.encode(prefix, position_rows_ - 1);
    if (!words.empty() && words.front() == config().bos_id) words.erase(words.begin());
    ids.insert(ids.end(), words.begin(), words.end());
  }
  return ids;
}

namespace {

// The work of one forward pass: shapes and scratch buffers.
struct Pass {
  Backend& be;
  const ModelConfig& c;
  int d, H, dk, dv, A, Av;
  Pass(Backend& b, const ModelConfig& cfg)
      : be(b),
        c(cfg),
        d(cfg.d_model),
        H(cfg.n_heads),
        dk(cfg.d_k),
        dv(cfg.d_v),
        A(cfg.attnWidth()),
        Av(cfg.valueWidth()) {}

  BufferPtr floats(int64_t n) { return be.allocate((size_t)std::max<int64_t>(n, 1) * 4); }

  void linear(const float* x, const DeviceLinear& l, float* y, int rows) {
    be.linear_forward(x, l.wp(), l.bp(), y, rows, l.in, l.out);
  }

  // out = LayerNorm(x) or identity-affine LayerNorm.
  void norm(const float* x, const DeviceNorm& n, float* y, int rows) {
    be.layernorm_forward(x, n.g(), n.bt(), y, rows, d, c.layer_norm_eps);
  }

  // Attention of queries q (heads view) over keys k / values v (heads views), writing scores and
  // probs [B, H, Tq, Tk] and the block's output (after the output projection) into out [B·Tq, d].
  void attend(HeadsView q, HeadsView k, HeadsView v, const uint8_t* mask,
              const DeviceLinear& out_proj, int B, int Tq, int Tk, float* scores, float* probs,
              float* out) {
    be.attention_scores_forward(q, k, scores, B, H, Tq, Tk, dk, 1.0f / std::sqrt((float)dk));
    be.masked_softmax_forward(scores, mask, probs, B, H, Tq, Tk, c.mask_fill);
    BufferPtr ctx = floats((int64_t)B * Tq * Av);
    be.attention_context_forward(probs, v, ctx->f32(), B, H, Tq, Tk, dv);
    linear(ctx->f32(), out_proj, out, B * Tq);
  }

  // Residual wiring around a sublayer f: post-norm x = LN(x + f(x)); pre-norm x = x + f(LN(x)).
  template <class F>
  void sublayer(float* x, int rows, const DeviceNorm& n, F&& f) {
    BufferPtr y = floats((int64_t)rows * d);
    if (c.norm == NormPlacement::Pre) {
      BufferPtr h = floats((int64_t)rows * d);
      norm(x, n, h->f32(), rows);
      f(h->f32(), y->f32());
      be.residual_forward(y->f32(), x, (int64_t)rows * d);
    } else {
      f(x, y->f32());
      be.residual_forward(x, y->f32(), (int64_t)rows * d);
      norm(y->f32(), n, x, rows);
    }
  }

  void feedForward(const float* x, const DeviceLinear& fc1, const DeviceLinear& fc2, float* y,
                   int rows) {
    BufferPtr h = floats((int64_t)rows * c.d_ff);
    linear(x, fc1, h->f32(), rows);
    be.activation_forward(h->f32(), (int64_t)rows * c.d_ff, c.activation);
    linear(h->f32(), fc2, y, rows);
  }

  // Self-attention sublayer body: fused QKV projection, heads read in place.
  void selfAttention(const float* h, const DeviceAttention& a, const uint8_t* mask, int B, int T,
                     float* scores, float* probs, float* out) {
    const int W = 2 * A + Av;
    BufferPtr qkv = floats((int64_t)B * T * W);
    linear(h, a.qkv, qkv->f32(), B * T);
    const float* p = qkv->f32();
    HeadsView q{p, (int64_t)T * W, W}, k{p + A, (int64_t)T * W, W}, v{p + 2 * A, (int64_t)T * W, W};
    attend(q, k, v, mask, a.out, B, T, T, scores, probs, out);
  }

  // Cross-attention sublayer body: queries from h, keys/values from kv [B, S, A + Av].
  void crossAttention(const float* h, const DeviceAttention& a, const float* kv,
                      const uint8_t* mask, int B, int T, int S, float* scores, float* probs,
                      float* out) {
    BufferPtr q = floats((int64_t)B * T * A);
    linear(h, a.q, q->f32(), B * T);
    const int W = A + Av;
    HeadsView qv{q->f32(), (int64_t)T * A, A}, k{kv, (int64_t)S * W, W},
        v{kv + A, (int64_t)S * W, W};
    attend(qv, k, v, mask, a.out, B, T, S, scores, probs, out);
  }
};

// Device buffer holding [L, B, H, Tq, Tk] → host trace [B, L, H, Tq, Tk].
void downloadAttention(Backend& be, const DeviceBuffer& buf, int L, int B, int H, int Tq, int Tk,
                       std::vector<float>& dst) {
  const int64_t per = (int64_t)H * Tq * Tk;
  std::vector<float> tmp((size_t)L * B * per);
  be.download(buf, tmp.data(), tmp.size() * 4);
  dst.resize(tmp.size());
  for (int l = 0; l < L; ++l)
    for (int b = 0; b < B; ++b)
      std::memcpy(dst.data() + ((int64_t)b * L + l) * per, tmp.data() + ((int64_t)l * B + b) * per,
                  per * 4);
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

}  // namespace

void Model::checkTraceSize(int B, int S, int T, const ForwardOptions& o) const {
  const ModelConfig& c = config();
  if (S > position_rows_ || T > position_rows_)
    throw Error(ErrorKind::BadInput, "the sequence has " + std::to_string(std::max(S, T)) +
                                         " tokens; this model takes at most " +
                                         std::to_string(position_rows_) + " (max_len)");
  uint64_t bytes = estimateTraceBytes(B, S, T, c.n_encoder_layers, c.n_decoder_layers, c.n_heads,
                                      (int)c.tgt_vocab.size(), o.keep_scores);
  if (bytes > o.max_trace_bytes)
    throw Error(ErrorKind::TooLarge, "the attention trace for " + std::to_string(B) +
                                         " sentence(s) of " + std::to_string(S) + " source and " +
                                         std::to_string(T) + " target tokens needs " +
                                         formatBytes(bytes) + " (" + std::to_string(c.n_heads) +
                                         " heads × " +
                                         std::to_string(c.n_encoder_layers + c.n_decoder_layers) +
                                         " layers × n²); the limit is " +
                                         formatBytes(o.max_trace_bytes) + ". Use a shorter input.");
}

Trace Model::forward(const std::vector<std::vector<int>>& src_in,
                     const std::vector<std::vector<int>>& tgt_in, const ForwardOptions& o) const {
  const auto t0 = std::chrono::steady_clock::now();
  const ModelConfig& c = config();
  if (src_in.empty() || src_in.size() != tgt_in.size())
    throw Error(ErrorKind::BadInput, "forward: need as many target as source sentences (got " +
                                         std::to_string(src_in.size()) + " and " +
                                         std::to_string(tgt_in.size()) + ")");
  for (const auto& s : src_in)
    for (int id : s)
      if (id < 0 || id >= (int)c.src_vocab.size())
        throw Error(ErrorKind::BadInput, "source id " + std::to_string(id) +
                                             " is outside the vocabulary (0.." +
                                             std::to_string(c.src_vocab.size() - 1) + ")");
  for (const auto& s : tgt_in)
    for (int id : s)
      if (id < 0 || id >= (int)c.tgt_vocab.size())
        throw Error(ErrorKind::BadInput, "target id " + std::to_string(id) +
                                             " is outside the vocabulary (0.." +
                                             std::to_string(c.tgt_vocab.size() - 1) + ")");
  for (size_t b = 0; b < src_in.size(); ++b)
    if (src_in[b].empty() || tgt_in[b].empty())
      throw Error(ErrorKind::BadInput, "sentence " + std::to_string(b + 1) + " is empty");

  Trace tr;
  tr.batch = (int)src_in.size();
  tr.src_ids = padBatch(src_in, c.src_pad_id, &tr.src_len);
  tr.tgt_ids = padBatch(tgt_in, c.tgt_pad_id, &tr.tgt_len);
  const int B = tr.batch, S = tr.src_len, T = tr.tgt_len;
  checkTraceSize(B, S, T, o);
  for (int b = 0; b < B; ++b) {
    tr.src_tokens.push_back(src_vocab_.decode(tr.src_ids[b]));
    tr.tgt_tokens.push_back(tgt_vocab_.decode(tr.tgt_ids[b]));
  }
  tr.backend = backend_->name();

  Backend& be = *backend_;
  Pass P(be, c);
  const int d = c.d_model, H = c.n_heads, Le = c.n_encoder_layers, Ld = c.n_decoder_layers;
  const int total_layers = Le + Ld;

  // Ids and masks to the device.
  std::vector<int32_t> src_flat, tgt_flat;
  for (const auto& s : tr.src_ids) src_flat.insert(src_flat.end(), s.begin(), s.end());
  for (const auto& s : tr.tgt_ids) tgt_flat.insert(tgt_flat.end(), s.begin(), s.end());
  BufferPtr src_ids = be.allocate(src_flat.size() * 4), tgt_ids = be.allocate(tgt_flat.size() * 4);
  be.upload(*src_ids, src_flat.data(), src_flat.size() * 4);
  be.upload(*tgt_ids, tgt_flat.data(), tgt_flat.size() * 4);

  auto key_pad = [&](bool on, int q_len) {
    return on ? paddingMask(tr.src_ids, q_len, c.src_pad_id)
              : std::vector<uint8_t>((size_t)B * q_len * S, 0);
  };
  tr.enc_self.mask = key_pad(o.masks.src_padding, S);
  tr.cross.mask = key_pad(o.masks.src_padding, T);
  tr.dec_self.mask =
      decoderSelfMask(tr.tgt_ids, c.tgt_pad_id, o.masks.tgt_padding, o.masks.subsequent);
  auto uploadMask = [&](const std::vector<uint8_t>& m) {
    BufferPtr buf = be.allocate(m.size());
    be.upload(*buf, m.data(), m.size());
    return buf;
  };
  BufferPtr enc_mask = uploadMask(tr.enc_self.mask), dec_mask = uploadMask(tr.dec_self.mask),
            cross_mask = uploadMask(tr.cross.mask);

  const float scale = c.embed_scale ? std::sqrt((float)d) : 1.0f;
  const int64_t enc_per = (int64_t)B * H * S * S, dec_per = (int64_t)B * H * T * T,
                cross_per = (int64_t)B * H * T * S;
  BufferPtr enc_scores = P.floats(Le * enc_per), enc_probs = P.floats(Le * enc_per);
  BufferPtr dec_scores = P.floats(Ld * dec_per), dec_probs = P.floats(Ld * dec_per);
  BufferPtr cross_scores = P.floats(Ld * cross_per), cross_probs = P.floats(Ld * cross_per);

  // ---- encoder ----
  BufferPtr x = P.floats((int64_t)B * S * d);  // [B, S, d]
  be.embedding_forward(src_ids->i32(), dw_->src_emb->f32(), src_positions_->f32(), x->f32(), B, S,
                       d, 0, scale);
  for (int l = 0; l < Le; ++l) {
    checkCancel(o);
    const DeviceEncoderLayer& L = dw_->enc[l];
    P.sublayer(x->f32(), B * S, L.norm_attn, [&](const float* h, float* out) {
      P.selfAttention(h, L.self_attn, enc_mask->u8(), B, S, enc_scores->f32() + l * enc_per,
                      enc_probs->f32() + l * enc_per, out);
    });
    P.sublayer(x->f32(), B * S, L.norm_ffn,
               [&](const float* h, float* out) { P.feedForward(h, L.fc1, L.fc2, out, B * S); });
    if (o.progress) o.progress(l + 1, total_layers);
  }
  if (c.final_norm) P.norm(x->f32(), dw_->enc_final, x->f32(), B * S);
  const float* memory = x->f32();

  // ---- decoder ----
  BufferPtr y = P.floats((int64_t)B * T * d);  // [B, T, d]
  be.embedding_forward(tgt_ids->i32(), dw_->tgt_emb->f32(), tgt_positions_->f32(), y->f32(), B, T,
                       d, 0, scale);
  for (int l = 0; l < Ld; ++l) {
    checkCancel(o);
    const DeviceDecoderLayer& L = dw_->dec[l];
    P.sublayer(y->f32(), B * T, L.norm_self, [&](const float* h, float* out) {
      P.selfAttention(h, L.self_attn, dec_mask->u8(), B, T, dec_scores->f32() + l * dec_per,
                      dec_probs->f32() + l * dec_per, out);
    });
    BufferPtr kv = P.floats((int64_t)B * S * (P.A + P.Av));
    P.linear(memory, L.cross_attn.kv, kv->f32(), B * S);
    P.sublayer(y->f32(), B * T, L.norm_cross, [&](const float* h, float* out) {
      P.crossAttention(h, L.cross_attn, kv->f32(), cross_mask->u8(), B, T, S,
                       cross_scores->f32() + l * cross_per, cross_probs->f32() + l * cross_per,
                       out);
    });
    P.sublayer(y->f32(), B * T, L.norm_ffn,
               [&](const float* h, float* out) { P.feedForward(h, L.fc1, L.fc2, out, B * T); });
    if (o.progress) o.progress(Le + l + 1, total_layers);
  }
  if (c.final_norm) P.norm(y->f32(), dw_->dec_final, y->f32(), B * T);
  const int V = (int)c.tgt_vocab.size();
  BufferPtr logits = P.floats((int64_t)B * T * V);
  P.linear(y->f32(), dw_->proj, logits->f32(), B * T);

  // ---- the trace back to the host, once ----
  auto fill = [&](AttentionTrace& at, int L, int Tq, int Tk, const DeviceBuffer& sc,
                  const DeviceBuffer& pr) {
    at.batch = B;
    at.layers = L;
    at.heads = H;
    at.q_len = Tq;
    at.k_len = Tk;
    downloadAttention(be, pr, L, B, H, Tq, Tk, at.probs);
    if (o.keep_scores) downloadAttention(be, sc, L, B, H, Tq, Tk, at.scores);
  };
  fill(tr.enc_self, Le, S, S, *enc_scores, *enc_probs);
  fill(tr.dec_self, Ld, T, T, *dec_scores, *dec_probs);
  fill(tr.cross, Ld, T, S, *cross_scores, *cross_probs);
  tr.logits = Tensor({B, T, V});
  be.download(*logits, tr.logits.ptr(), tr.logits.data.size() * 4);
  tr.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return tr;
}

std::shared_ptr<Model::EncoderOutput> Model::encode(const std::vector<int>& src,
                                                    const MaskOptions& masks,
                                                    AttentionTrace* enc_trace,
                                                    bool keep_scores) const {
  // One sentence through the encoder (via forward's machinery for the trace), then the
  // cross-attention keys/values of every decoder layer, computed once.
  const ModelConfig& c = config();
  Backend& be = *backend_;
  Pass P(be, c);
  const int S = (int)src.size(), d = c.d_model, H = c.n_heads, Le = c.n_encoder_layers;
  if (S == 0) throw Error(ErrorKind::BadInput, "the source sentence is empty");
  for (int id : src)
    if (id < 0 || id >= (int)c.src_vocab.size())
      throw Error(ErrorKind::BadInput,
                  "source id " + std::to_string(id) + " is outside the vocabulary");
  ForwardOptions o;
  o.keep_scores = keep_scores;
  checkTraceSize(1, S, 1, o);
  auto enc = std::make_shared<EncoderOutput>();
  enc->src = src;
  enc->S = S;
  std::vector<std::vector<int>> batch{src};
  std::vector<uint8_t> mask = masks.src_padding ? paddingMask(batch, S, c.src_pad_id)
                                                : std::vector<uint8_t>((size_t)S * S, 0);
  enc->cross_mask_host.assign(mask.begin(), mask.begin() + S);  // every query row is the same
  BufferPtr mbuf = be.allocate(mask.size());
  be.upload(*mbuf, mask.data(), mask.size());
  enc->cross_mask = be.allocate(S);
  be.upload(*enc->cross_mask, enc->cross_mask_host.data(), S);
  std::vector<int32_t> ids(src.begin(), src.end());
  BufferPtr idbuf = be.allocate(ids.size() * 4);
  be.upload(*idbuf, ids.data(), ids.size() * 4);
  const int64_t per = (int64_t)H * S * S;
  BufferPtr scores = P.floats(Le * per), probs = P.floats(Le * per);
  enc->memory = P.floats((int64_t)S * d);
  float* x = enc->memory->f32();
  const float scale = c.embed_scale ? std::sqrt((float)d) : 1.0f;
  be.embedding_forward(idbuf->i32(), dw_->src_emb->f32(), src_positions_->f32(), x, 1, S, d, 0,
                       scale);
  for (int l = 0; l < Le; ++l) {
    const DeviceEncoderLayer& L = dw_->enc[l];
    P.sublayer(x, S, L.norm_attn, [&](const float* h, float* out) {
      P.selfAttention(h, L.self_attn, mbuf->u8(), 1, S, scores->f32() + l * per,
                      probs->f32() + l * per, out);
    });
    P.sublayer(x, S, L.norm_ffn,
               [&](const float* h, float* out) { P.feedForward(h, L.fc1, L.fc2, out, S); });
  }
  if (c.final_norm) P.norm(x, dw_->enc_final, x, S);
  for (const auto& L : dw_->dec) {
    BufferPtr kv = P.floats((int64_t)S * (P.A + P.Av));
    P.linear(x, L.cross_attn.kv, kv->f32(), S);
    enc->cross_kv.push_back(std::move(kv));
  }
  if (enc_trace) {
    enc_trace->batch = 1;
    enc_trace->layers = Le;
    enc_trace->heads = H;
    enc_trace->q_len = enc_trace->k_len = S;
    enc_trace->mask = mask;
    downloadAttention(be, *probs, Le, 1, H, S, S, enc_trace->probs);
    if (keep_scores)
      downloadAttention(be, *scores, Le, 1, H, S, S, enc_trace->scores);
    else
      enc_trace->scores.clear();
  }
  return enc;
}

std::unique_ptr<Model::DecoderCache> Model::newDecoderCache(const EncoderOutput&,
                                                            int capacity) const {
  const ModelConfig& c = config();
  capacity = std::min(capacity, position_rows_);
  auto cache = std::make_unique<DecoderCache>();
  cache->capacity = capacity;
  for (int l = 0; l < c.n_decoder_layers; ++l)
    cache->self_kv.push_back(
        backend_->allocate((size_t)capacity * (c.attnWidth() + c.valueWidth()) * 4));
  return cache;
}

int Model::decoderCacheLength(const DecoderCache& cache) const {
  return cache.length;
}

void Model::popDecoderCache(DecoderCache& cache) const {
  if (cache.length > 0) {
    --cache.length;
    cache.tokens.pop_back();
  }
}

Model::StepRows Model::decodeStep(const EncoderOutput& enc, DecoderCache& cache, int token,
                                  const MaskOptions& masks) const {
  const ModelConfig& c = config();
  if (token < 0 || token >= (int)c.tgt_vocab.size())
    throw Error(ErrorKind::BadInput,
                "target id " + std::to_string(token) + " is outside the vocabulary");
  const int pos = cache.length;
  if (pos >= cache.capacity)
    throw Error(ErrorKind::BadInput, "the target reached the maximum length of " +
                                         std::to_string(cache.capacity) + " tokens");
  Backend& be = *backend_;
  Pass P(be, c);
  const int d = c.d_model, H = c.n_heads, S = enc.S, Ld = c.n_decoder_layers, K = pos + 1;
  const int W = 2 * P.A + P.Av, KV = P.A + P.Av;
  cache.tokens.push_back(token);
  cache.length = K;

  // Self-attention mask of the new row: padding keys only (no key lies in the future).
  StepRows rows;
  rows.self_mask.assign(K, 0);
  if (masks.tgt_padding)
    for (int j = 0; j < K; ++j) rows.self_mask[j] = cache.tokens[j] == c.tgt_pad_id;
  rows.cross_mask = enc.cross_mask_host;
  BufferPtr self_mask = be.allocate(K);
  be.upload(*self_mask, rows.self_mask.data(), K);

  int32_t tok = token;
  BufferPtr idbuf = be.allocate(4);
  be.upload(*idbuf, &tok, 4);
  BufferPtr x = P.floats(d);
  const float scale = c.embed_scale ? std::sqrt((float)d) : 1.0f;
  be.embedding_forward(idbuf->i32(), dw_->tgt_emb->f32(), tgt_positions_->f32(), x->f32(), 1, 1, d,
                       pos, scale);
  BufferPtr self_scores = P.floats((int64_t)Ld * H * K), self_probs = P.floats((int64_t)Ld * H * K);
  BufferPtr cross_scores = P.floats((int64_t)Ld * H * S),
            cross_probs = P.floats((int64_t)Ld * H * S);
  for (int l = 0; l < Ld; ++l) {
    const DeviceDecoderLayer& L = dw_->dec[l];
    float* kvc = cache.self_kv[l]->f32();
    P.sublayer(x->f32(), 1, L.norm_self, [&](const float* h, float* out) {
      BufferPtr qkv = P.floats(W);
      P.linear(h, L.self_attn.qkv, qkv->f32(), 1);
      be.copy(qkv->f32() + P.A, kvc + (int64_t)pos * KV, KV);  // this position's K | V
      HeadsView q{qkv->f32(), W, W}, k{kvc, (int64_t)K * KV, KV}, v{kvc + P.A, (int64_t)K * KV, KV};
      P.attend(q, k, v, self_mask->u8(), L.self_attn.out, 1, 1, K,
               self_scores->f32() + (int64_t)l * H * K, self_probs->f32() + (int64_t)l * H * K,
               out);
    });
    P.sublayer(x->f32(), 1, L.norm_cross, [&](const float* h, float* out) {
      P.crossAttention(h, L.cross_attn, enc.cross_kv[l]->f32(), enc.cross_mask->u8(), 1, 1, S,
                       cross_scores->f32() + (int64_t)l * H * S,
                       cross_probs->f32() + (int64_t)l * H * S, out);
    });
    P.sublayer(x->f32(), 1, L.norm_ffn,
               [&](const float* h, float* out) { P.feedForward(h, L.fc1, L.fc2, out, 1); });
  }
  if (c.final_norm) P.norm(x->f32(), dw_->dec_final, x->f32(), 1);
  const int V = (int)c.tgt_vocab.size();
  BufferPtr logits = P.floats(V);
  P.linear(x->f32(), dw_->proj, logits->f32(), 1);
  auto down = [&](const DeviceBuffer& b, std::vector<float>& v, size_t n) {
    v.resize(n);
    be.download(b, v.data(), n * 4);
  };
  down(*self_scores, rows.self_scores, (size_t)Ld * H * K);
  down(*self_probs, rows.self_probs, (size_t)Ld * H * K);
  down(*cross_scores, rows.cross_scores, (size_t)Ld * H * S);
  down(*cross_probs, rows.cross_probs, (size_t)Ld * H * S);
  down(*logits, rows.logits, V);
  return rows;
}

std::vector<int> Model::greedyDecode(const std::vector<int>& src, int max_steps) const {
  auto enc = encode(src, {}, nullptr, false);
  auto cache = newDecoderCache(*enc, max_steps + 1);
  std::vector<int> out;
  int token = config().bos_id;
  for (int step = 0; step < max_steps; ++step) {
    StepRows r = decodeStep(*enc, *cache, token, {});
    token = (int)(std::max_element(r.logits.begin(), r.logits.end()) - r.logits.begin());
    out.push_back(token);
    if (token == config().eos_id) break;
  }
  return out;
}

}  // namespace attnviz

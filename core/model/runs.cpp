#include "model/runs.h"

#include <algorithm>

#include "base/error.h"
#include "model/pass.h"

namespace attnviz {

namespace {

std::vector<int32_t> flatten(const std::vector<std::vector<int>>& seqs) {
  std::vector<int32_t> out;
  for (const auto& s : seqs) out.insert(out.end(), s.begin(), s.end());
  return out;
}

// The mask of attention over keys `keys` [B][K]: key j of sentence b masked where it is padding
// (and `padded(b, j)` says so), and with `causal` every key after the query's position.
template <class Padded>
MaskRule maskRule(int B, int K, bool causal, Padded padded) {
  MaskRule m;
  m.causal = causal;
  m.key_masked.assign((size_t)B, std::vector<uint8_t>((size_t)K, 0));
  for (int b = 0; b < B; ++b)
    for (int j = 0; j < K; ++j) m.key_masked[(size_t)b][(size_t)j] = padded(b, j) ? 1 : 0;
  return m;
}

// The rule as a matrix [B, n, K] of rows at positions past … (a training pass's masks, which the
// backward reads).
std::vector<uint8_t> maskMatrix(const MaskRule& m, int B, int n, int past, int K) {
  std::vector<uint8_t> out;
  out.reserve((size_t)B * n * K);
  for (int b = 0; b < B; ++b) {
    const std::vector<uint8_t> rows = maskRowsOnHost(m, b, past, n, K);
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

// The decoder's self-attention mask over positions [0, past + n) of B sequences whose tokens (all
// positions so far and the new ones) are `tokens`: key padding ∪ causal.
MaskRule decoderMask(const ModelConfig& c, const MaskOptions& m,
                     const std::vector<std::vector<int>>& tokens, int K) {
  const bool pad_on = c.tgt_padding_mask && m.tgt_padding;
  // With the start token equal to the pad id (Marian), position 0 is the start, not padding.
  const bool start_is_pad = c.bos_id >= 0 && c.bos_id == c.tgt_pad_id;
  return maskRule((int)tokens.size(), K, m.subsequent, [&](int b, int j) {
    return pad_on && tokens[(size_t)b][(size_t)j] == c.tgt_pad_id && !(j == 0 && start_is_pad);
  });
}

uint64_t headFloats(const ModelConfig& c, int B, int rows, int V, int C) {
  return (uint64_t)rows * V + (uint64_t)B * (c.d_model + C);
}

// A run's arena of `bytes`: a fresh allocation, or (training) the tape's scratch, kept across
// steps.
Arena runArena(Backend& be, uint64_t bytes, Tape* tape) {
  return tape ? Arena::reusing(be, *tape->scratch, bytes) : Arena(be, bytes);
}

// The token head over x [B·n, d] (positions past … past + n − 1 of each sentence) through one
// buffer of Pass::tokenHeadRows rows into TokenLogits: every row's summary, and whole rows as
// ForwardOptions::kept_logits_bytes and keep_logits_at say. fed: each sentence's ids (the one after
// a position is its "next"), or null.
TokenLogits headLogits(Pass& P, Arena& arena, const float* x, int B, int n, int past, int V, int d,
                       const ForwardOptions& o, const std::vector<std::vector<int>>* fed) {
  TokenLogits out(B, n, V);
  const int64_t rows = (int64_t)B * n;
  const bool keep_all = (uint64_t)rows * V * sizeof(float) <= o.kept_logits_bytes;
  std::vector<uint8_t> keep((size_t)rows, keep_all ? 1 : 0);
  std::vector<int> next((size_t)rows, -1);
  for (int b = 0; b < B; ++b) {
    if (!keep_all) {
      keep[(size_t)b * n + n - 1] = 1;
      for (int p : o.keep_logits_at)
        if (p >= past && p < past + n) keep[(size_t)b * n + (p - past)] = 1;
    }
    if (fed)
      for (int i = 0; i < n; ++i)
        if ((size_t)(past + i + 1) < (*fed)[(size_t)b].size())
          next[(size_t)b * n + i] = (*fed)[(size_t)b][(size_t)(past + i + 1)];
  }
  const int head_rows = Pass::tokenHeadRows((int)rows, V);
  float* buf = arena.floats((int64_t)head_rows * V);
  std::vector<float> host((size_t)head_rows * V);
  for (int64_t r0 = 0; r0 < rows; r0 += head_rows) {
    const int r = (int)std::min<int64_t>(head_rows, rows - r0);
    P.tokenHead(x + r0 * d, r, nullptr, buf);
    arena.get(buf, host.data(), (size_t)r * V * sizeof(float));
    out.add(r0, r, host.data(), next.data() + r0, keep.data() + r0);
  }
  return out;
}

}  // namespace

std::vector<std::vector<int>> padBatch(const std::vector<std::vector<int>>& seqs, int pad,
                                       int* len) {
  int n = 0;
  for (const auto& s : seqs) n = std::max(n, (int)s.size());
  *len = n;
  if (pad < 0)
    for (const auto& s : seqs)
      if ((int)s.size() != n)
        throw Error(ErrorKind::BadInput,
                    "the model has no padding token (pad_id -1: none), so sentences of different "
                    "lengths cannot be run together in one batch: run them one at a time, or "
                    "give the padding token's id");
  std::vector<std::vector<int>> out = seqs;
  for (auto& s : out) s.resize(n, pad);
  return out;
}

void runEncoder(Backend& be, const ModelConfig& c, const DeviceWeights& dw, Model::Encoded& enc,
                const std::vector<std::vector<int>>& segments, const ForwardOptions& o, RecordTo to,
                int* done, int total, Tape* tape) {
  const int B = enc.batch, S = enc.S, d = c.d_model;
  const int KV = c.keyWidth() + c.kvValueWidth();
  enc.key_mask.assign((size_t)B * S, 0);
  const bool pad_on = c.src_padding_mask && o.masks.src_padding;
  for (int b = 0; b < B; ++b)
    for (int j = 0; j < S; ++j)
      enc.key_mask[(size_t)b * S + j] = pad_on && enc.src[b][j] == c.src_pad_id;
  const MaskRule mask =
      maskRule(B, S, false, [&](int b, int j) { return enc.key_mask[(size_t)b * S + j] != 0; });
  const std::vector<uint8_t> tape_mask =
      tape ? maskMatrix(mask, B, S, 0, S) : std::vector<uint8_t>();
  const uint64_t floats = Pass::floatsFor(c, o, B, S, S, tape != nullptr) + (uint64_t)B * S * KV;
  Arena arena = runArena(
      be, Arena::size(floats, tape_mask.size() + (uint64_t)B * S * 8, Pass::kRegions + 4), tape);
  StackTape* t = tape ? &tape->enc : nullptr;
  Recorder recorder(be, arena, c, o, B * S);
  recorder.begin(Side::Source, B, S, 0, to);
  Pass P(be, c, dw, o, arena, t ? nullptr : &recorder, B, S, S, t != nullptr);
  auto put = [&](auto* dst, const auto& host) {
    t ? tape->workspace->put(dst, host) : arena.put(dst, host);
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
  if (t) put(t->mask, tape_mask);
  enc.memory = be.allocate((size_t)B * S * d * sizeof(float));
  float* x = enc.memory->f32();
  StackRun r;
  r.stack = &dw.enc;
  r.self_kind = AttentionKind::EncoderSelf;
  r.B = B;
  r.n = r.store.cap = S;
  if (t) {
    for (const LayerTape& lt : t->layers) r.store.kv.push_back(lt.self_attn.kv);
    r.tape = t;
    r.dropout = tape->dropout;
  } else {
    r.store.kv = {arena.floats((int64_t)B * S * KV)};
  }
  r.self_mask = &mask;
  r.self_mask_tape = t ? t->mask : nullptr;
  r.position_fixes = positionFixes(c, c.src_pad_id, enc.src, 0, S);
  if (t && c.positions_skip_pad && !r.position_fixes.empty())
    throw Error(
        ErrorKind::BadInput,
        "padding moves this model's learned positions (RoBERTa counts positions over the "
        "tokens that are not padding); attnviz runs that forward but does not train or take "
        "gradients through it: give sentences of one length, without pad tokens");
  P.start(dw.enc, Side::Source, ids, segs, x, r, 0, t, tape ? tape->dropout : 0.0f);
  P.layers(x, r, done, total);
  // Every decoder layer's cross-attention keys and values, once per sentence.
  for (const auto& L : dw.dec.layers) {
    if (!L.has_cross) continue;
    BufferPtr ckv = be.allocate((size_t)B * S * KV * sizeof(float));
    P.linear(x, L.cross_attn.kv, ckv->f32(), B * S);
    enc.cross_kv.push_back(std::move(ckv));
  }
}

TraceRows runDecoder(Backend& be, const ModelConfig& c, const DeviceWeights& dw,
                     const Model::Encoded* enc, const std::vector<std::vector<int>>& all_tokens,
                     int past, int n, int cap, std::vector<float*> kv, const ForwardOptions& o,
                     Tape* tape) {
  const int B = (int)all_tokens.size(), K = past + n, d = c.d_model;
  const int KV = c.keyWidth() + c.kvValueWidth();
  const MaskRule self_mask = decoderMask(c, o.masks, all_tokens, K);
  const int S = enc ? enc->S : 0;
  MaskRule cross_mask;
  if (enc)
    cross_mask =
        maskRule(B, S, false, [&](int b, int j) { return enc->key_mask[(size_t)b * S + j] != 0; });
  std::vector<uint8_t> tape_self, tape_cross;
  if (tape) {
    tape_self = maskMatrix(self_mask, B, n, past, K);
    if (enc) tape_cross = maskMatrix(cross_mask, B, n, 0, S);
  }
  const int V = dw.head.projection.out, C = dw.head.classifier.out;
  const int keys = std::max(K, S);
  const bool scratch_kv = kv.empty();
  const int head_rows = tape ? B * n : Pass::tokenHeadRows(B * n, V);
  const uint64_t floats = Pass::floatsFor(c, o, B, n, keys, tape != nullptr) +
                          headFloats(c, B, head_rows, V, C) + (uint64_t)B * n * d +
                          (scratch_kv ? (uint64_t)B * n * KV : 0);
  Arena arena =
      runArena(be,
               Arena::size(floats, tape_self.size() + tape_cross.size() + (uint64_t)B * n * 4,
                           Pass::kRegions + 8),
               tape);
  StackTape* t = tape ? &tape->dec : nullptr;
  TraceRows rows;
  rows.q0 = past;
  rows.n = n;
  if (B == 1) rows.tokens.assign(all_tokens[0].begin() + past, all_tokens[0].end());
  Recorder recorder(be, arena, c, o, B * n);
  recorder.begin(Side::Target, B, n, past, {&rows.blocks, &rows.activations});
  Pass P(be, c, dw, o, arena, t ? nullptr : &recorder, B, n, keys, t != nullptr);
  auto put = [&](auto* dst, const auto& host) {
    t ? tape->workspace->put(dst, host) : arena.put(dst, host);
  };
  std::vector<int32_t> fed;
  for (const auto& tokens : all_tokens) fed.insert(fed.end(), tokens.begin() + past, tokens.end());
  int32_t* ids = t ? t->ids : arena.ints((int64_t)B * n);
  put(ids, fed);
  if (t) {
    put(t->mask, tape_self);
    if (enc) put(t->cross_mask, tape_cross);
  }
  StackRun r;
  r.stack = &dw.dec;
  r.self_kind = AttentionKind::DecoderSelf;
  r.B = B;
  r.n = n;
  r.store.past = past;
  r.store.cap = cap;
  r.store.kv = std::move(kv);
  if (t) {
    r.store.kv.clear();
    for (const LayerTape& lt : t->layers) r.store.kv.push_back(lt.self_attn.kv);
    r.store.cap = n;
  } else if (scratch_kv) {
    r.store.kv = {arena.floats((int64_t)B * n * KV)};
    r.store.cap = n;
  }
  r.self_mask = &self_mask;
  r.self_mask_tape = t ? t->mask : nullptr;
  r.enc = enc;
  r.cross_mask = &cross_mask;
  r.cross_mask_tape = t && enc ? t->cross_mask : nullptr;
  r.tape = t;
  r.dropout = tape ? tape->dropout : 0.0f;
  r.position_fixes = positionFixes(c, c.tgt_pad_id, all_tokens, past, n);
  float* x = t ? t->out : arena.floats((int64_t)B * n * d);
  P.start(dw.dec, Side::Target, ids, nullptr, x, r, past, t, r.dropout);
  int done = c.n_encoder_layers;
  P.layers(x, r, &done, c.n_encoder_layers + c.n_decoder_layers);
  if (tape) {  // training: the outputs stay on the device, in the tape
    P.tokenHead(x, B * n, &tape->head);
    return rows;
  }
  if (c.tokenHead() != TokenHead::None)
    rows.logits = headLogits(P, arena, x, B, n, past, V, d, o, &all_tokens);
  rows.hidden = Tensor({B, n, d});
  arena.get(x, rows.hidden.ptr(), rows.hidden.data.size() * sizeof(float));
  return rows;
}

void runEncoderHeads(Backend& be, const ModelConfig& c, const DeviceWeights& dw, const float* x,
                     int B, int S, const ForwardOptions& o, Trace* tr, Tape* tape) {
  const int rows = B * S, V = dw.head.projection.out, C = dw.head.classifier.out;
  const int head_rows = tape ? rows : Pass::tokenHeadRows(rows, V);
  Arena arena = runArena(be,
                         Arena::size(Pass::floatsFor(c, o, 1, rows, 1, tape != nullptr) +
                                         headFloats(c, B, head_rows, V, C),
                                     0, Pass::kRegions + 3),
                         tape);
  Pass P(be, c, dw, o, arena, nullptr, 1, rows, 1, tape != nullptr);
  if (tape) {
    P.tokenHead(x, rows, &tape->head);
    P.classHead(x, B, S, &tape->head);
    return;
  }
  if (c.tokenHead() != TokenHead::None)
    tr->logits = headLogits(P, arena, x, B, S, 0, V, c.d_model, o, nullptr);
  const float* class_logits = P.classHead(x, B, S, nullptr);
  if (class_logits) {
    tr->class_logits = Tensor({B, C});
    arena.get(class_logits, tr->class_logits.ptr(), tr->class_logits.data.size() * sizeof(float));
  }
}

Tensor runTokenHead(Backend& be, const ModelConfig& c, const DeviceWeights& dw, const Tensor& x,
                    Side stack, bool normed) {
  const int B = (int)x.dim(0), n = (int)x.dim(1), rows = B * n, d = c.d_model;
  const int V = dw.head.projection.out;
  if (c.tokenHead() == TokenHead::None || x.dim(2) != d)
    throw Error(ErrorKind::BadInput, "the model has no token head to read a residual stream with");
  ForwardOptions o;
  o.record = false;
  Arena arena(be, Arena::size(Pass::floatsFor(c, o, 1, rows, 1, false) +
                                  headFloats(c, B, rows, V, 0) + (uint64_t)rows * d,
                              0, Pass::kRegions + 3));
  Pass P(be, c, dw, o, arena, nullptr, 1, rows, 1, false);
  float* h = arena.floats((int64_t)rows * d);
  arena.put(h, x.data);
  if (c.final_norm && !normed) P.finalNorm(stack == Side::Source ? dw.enc : dw.dec, h, h, rows);
  const float* logits = P.tokenHead(h, rows);
  Tensor out({B, n, V});
  arena.get(logits, out.ptr(), out.data.size() * sizeof(float));
  return out;
}

Tensor logitsRows(const Model& m, const Trace& t, int b, int i0, int n) {
  if (t.logits.empty())
    throw Error(ErrorKind::BadInput, "the model has no token head: this run has no token logits");
  const int64_t len = t.hidden.dim(1), d = t.hidden.dim(2), V = t.logits.vocab();
  if (b < 0 || b >= t.hidden.dim(0) || i0 < 0 || n < 0 || i0 + (int64_t)n > len)
    throw Error(ErrorKind::BadInput, "positions " + std::to_string(i0) + " to " +
                                         std::to_string(i0 + (int64_t)n - 1) + " of sentence " +
                                         std::to_string(b) + " are outside the run");
  Tensor out({n, V});
  std::vector<int> missing;  // positions whose rows were not kept
  for (int i = 0; i < n; ++i) {
    if (const float* row = t.logits.row(b, i0 + i))
      std::copy(row, row + V, out.ptr() + (int64_t)i * V);
    else
      missing.push_back(i);
  }
  if (missing.empty()) return out;
  Tensor x({1, (int64_t)missing.size(), d});
  for (size_t k = 0; k < missing.size(); ++k) {
    const float* h = t.hidden.ptr() + ((int64_t)b * len + i0 + missing[k]) * d;
    std::copy(h, h + d, x.ptr() + (int64_t)k * d);
  }
  const ModelConfig& c = m.config();
  const Tensor computed = runTokenHead(m.backend(), c, m.deviceWeights(), x,
                                       c.hasDecoder() ? Side::Target : Side::Source, true);
  for (size_t k = 0; k < missing.size(); ++k)
    std::copy(computed.ptr() + (int64_t)k * V, computed.ptr() + (int64_t)(k + 1) * V,
              out.ptr() + (int64_t)missing[k] * V);
  return out;
}

std::vector<float> logitsRow(const Model& m, const Trace& t, int b, int i) {
  return std::move(logitsRows(m, t, b, i, 1).data);
}

}  // namespace attnviz

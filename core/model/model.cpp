#include "model/model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "base/host_memory.h"
#include "model/device_weights.h"
#include "model/pass.h"
#include "model/runs.h"
#include "text/tokenizer.h"

namespace attnviz {

Model::Model(std::shared_ptr<const LoadedModel> model, std::shared_ptr<Backend> backend)
    : model_(std::move(model)), backend_(std::move(backend)) {
  const ModelConfig& c = model_->config;
  const ModelWeights& w = model_->weights;
  if (c.hasEncoder()) src_vocab_ = Vocabulary(c.src_vocab, c.src_unk_id, "source vocabulary");
  if (c.hasDecoder()) tgt_vocab_ = Vocabulary(c.tgt_vocab, c.tgt_unk_id, "target vocabulary");
  position_rows_ = c.positionRows();
  dw_ = std::make_unique<DeviceWeights>(uploadWeights(*backend_, c, w, position_rows_));
  max_tokens_ = c.local_window > 0 ? std::min(position_rows_, c.local_window) : position_rows_;
}

std::string Model::limitReason() const {
  if (max_tokens_ < position_rows_)
    return " (its local attention layers see each query's last " +
           std::to_string(config().local_window) +
           " keys; attnviz does not reproduce that window over longer inputs, where it differs "
           "from causal attention)";
  if (position_rows_ < config().max_len)
    return " (the rows of the position table attnviz computes for it: " +
           formatBytes(ConfigLimits::kMaxPositionTableBytes) + " of them; its max_len is " +
           std::to_string(config().max_len) + ")";
  return " (max_len)";
}

Model::~Model() = default;

int64_t Model::parameterCount() const {
  int64_t zeros = 0;  // standing for a missing bias in a fused projection: not parameters
  for (const auto& [at, n] : dw_->padding) zeros += n;
  return dw_->n_params - zeros;
}

uint64_t Model::weightBytes() const {
  return dw_->bytes;
}

std::vector<int> Model::encodeSource(const std::string& sentence, bool within_positions) const {
  const ModelConfig& c = config();
  // No limit but the words of the text: a corpus line is at most kMaxCorpusBytes.
  const int max_tokens = within_positions ? max_tokens_ : std::numeric_limits<int>::max() / 2;
  if (!c.hasEncoder())
    throw Error(ErrorKind::BadInput, std::string(modelClassName(c.model)) +
                                         " has no encoder: give the input as the target");
  if (model_->tokenizer) {  // the model's own tokenizer adds its markers itself
    std::vector<int> ids = model_->tokenizer->encodeSource(sentence);
    if ((int)ids.size() > max_tokens)
      throw Error(ErrorKind::BadInput, "the sentence is " + std::to_string(ids.size()) +
                                           " tokens long; the model takes at most " +
                                           std::to_string(max_tokens_));
    return ids;
  }
  const bool start = c.src_bos_eos && c.src_bos_id >= 0;  // T5 appends </s> only
  const int wrap = c.src_bos_eos ? (start ? 2 : 1) : 0;
  std::vector<int> ids = src_vocab_.encode(sentence, max_tokens - wrap);
  if (c.src_bos_eos) {
    if (start && ids.front() != c.src_bos_id) ids.insert(ids.begin(), c.src_bos_id);
    if (ids.back() != c.src_eos_id) ids.push_back(c.src_eos_id);
    if ((int)ids.size() > max_tokens)
      throw Error(ErrorKind::BadInput,
                  "the sentence with its start and end markers has " + std::to_string(ids.size()) +
                      " tokens; the model takes at most " + std::to_string(max_tokens_));
  }
  return ids;
}

std::vector<int> Model::encodeTarget(const std::string& prefix, bool within_positions) const {
  const ModelConfig& c = config();
  const int max_tokens = within_positions ? max_tokens_ : std::numeric_limits<int>::max() / 2;
  if (!c.hasDecoder())
    throw Error(ErrorKind::BadInput, std::string(modelClassName(c.model)) +
                                         " has no decoder: give the input as the source");
  std::vector<int> ids;
  if (c.bos_id >= 0) ids.push_back(c.bos_id);
  const bool blank = prefix.find_first_not_of(" \t\r\n") == std::string::npos;
  if (!blank) {
    std::vector<int> words = model_->tokenizer
                                 ? model_->tokenizer->encodeTarget(prefix)
                                 : tgt_vocab_.encode(prefix, max_tokens - (int)ids.size());
    if ((int)(ids.size() + words.size()) > max_tokens)
      throw Error(ErrorKind::BadInput, "the prefix is " + std::to_string(words.size()) +
                                           " tokens long; the model takes at most " +
                                           std::to_string(max_tokens_ - (int)ids.size()) +
                                           limitReason());
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
                 A = c.attnWidth(), Cw = c.valueWidth(), KV = c.keyWidth() + c.kvValueWidth(),
                 F = (uint64_t)c.d_ff * (c.gated_ffn ? 3 : 1), Le = c.n_encoder_layers,
                 Ld = c.n_decoder_layers;
  const bool record = o.record, qkv = o.record && o.keep_qkv;
  const uint64_t V = c.tokenHead() == TokenHead::None ? 0 : c.outputVocab().size();
  const uint64_t C = c.classHead() == ClassHead::None ? 0 : (uint64_t)std::max(c.n_classes, 1);
  // A block of q queries over k keys: its q and k, the rows' normalisers, the key mask, and on
  // request its values (AttentionBlock::bytesFor).
  auto block = [&](uint64_t q, uint64_t k) {
    if (!record) return uint64_t(0);
    return AttentionBlock::bytesFor(B, c.n_heads, c.kvHeads(),
                                    (int)std::min<uint64_t>(q, INT32_MAX),
                                    (int)std::min<uint64_t>(k, INT32_MAX), c.d_k, c.d_v, qkv);
  };
  // The arena of one run over n query rows of each sentence and `keys` keys (Pass::floatsFor:
  // attention's scratch holds one chunk of rows).
  const uint64_t per_key = (o.interventions.empty() ? 2 : 3) * H;
  auto arena = [&](uint64_t n, uint64_t keys) {
    const uint64_t chunk = (uint64_t)Pass::chunkRows(
        c, (int)std::min<uint64_t>(n, INT32_MAX), (int)std::min<uint64_t>(keys, INT32_MAX), false);
    return sum({mul({b, n,
                     (c.parallel_residual ? 3 : 2) * d + A + Cw + F +
                         (o.keep_activations ? std::max(d, Cw) : 0),
                     4}),
                mul({chunk, keys, per_key * 4 + 1})});
  };
  // Sublayer activations (keep_activations): an input and an output [B, len, d] per entry, five
  // entries per encoder layer and seven per decoder layer (five without cross-attention), the
  // residual's among them, and the embeddings' and the final norm's; and each attention
  // sublayer's context [B, len, H·d_v].
  const uint64_t fin = (c.final_norm ? 1 : 0) + 1, attn_dec = c.hasCross() ? 2 : 1;
  const uint64_t activations = o.keep_activations
                                   ? sum({mul({Le * 5 + fin, b, s, d, 8}), mul({Le, b, s, Cw, 4}),
                                          mul({Ld * (3 + 2 * attn_dec) + fin, b, t, d, 8}),
                                          mul({Ld * attn_dec, b, t, Cw, 4})})
                                   : 0;
  const uint64_t trace = sum({mul({Le, block(s, s)}), mul({Ld, block(t, t)}),
                              c.hasCross() ? mul({Ld, block(t, s)}) : 0, activations});
  // Outputs: the token logits (TokenLogits: each row's summary, the rows kept whole), class logits
  // and hidden states of the trace.
  const uint64_t out_rows = mul({b, c.hasDecoder() ? t : s});
  const uint64_t kept_rows =
      mul({out_rows, V, 4}) <= o.kept_logits_bytes
          ? out_rows
          : std::min(out_rows, mul({b, 1 + (uint64_t)o.keep_logits_at.size()}));
  const uint64_t logits =
      V ? sum({mul({out_rows, TokenLogits::bytesFor(1, V, 0)}), mul({kept_rows, V, 4})}) : 0;
  const uint64_t outputs = sum({logits, mul({sum({mul({out_rows, d}), b * C}), 4})});
  // The token head's buffer of rows, on the device and on the host.
  const uint64_t head_rows = (uint64_t)Pass::tokenHeadRows(
      (int)std::min<uint64_t>(out_rows, INT32_MAX), (int)std::min<uint64_t>(V, INT32_MAX));
  const uint64_t head = mul({head_rows, V, 8});
  // The encoder's output and every decoder layer's cross-attention keys and values.
  const uint64_t memory = c.hasEncoder() ? mul({b, s, d + (c.hasCross() ? Ld * KV : 0), 4}) : 0;
  uint64_t encoder = 0, decoder = 0;
  if (c.hasEncoder()) {
    const uint64_t rows = b * s;
    encoder = sum({arena(s, s), mul({rows, KV + 2, 4}), rows});
    if (!c.hasDecoder())  // the heads' arena, then the copy into the trace
      encoder = std::max(encoder, sum({arena(s, 1), head, mul({b, d + C, 4}), outputs}));
  }
  if (c.hasDecoder()) {
    const uint64_t rows = b * t, keys = std::max(s, t);
    decoder = sum({arena(t, keys), head, mul({rows, d + KV + 1, 4}), mul({b, d + C, 4}),
                   mul({b, t + s}), outputs});
  }
  return sum({trace, memory, std::max(encoder, decoder)});
}

uint64_t passMemoryLimit(uint64_t max_trace_bytes, std::string* why) {
  if (max_trace_bytes > 0) {
    if (why) *why = "the limit is " + formatBytes(max_trace_bytes);
    return max_trace_bytes;
  }
  const uint64_t available = availableHostBytes();
  if (available == 0) {
    constexpr uint64_t kUnknown = uint64_t(4) << 30;
    if (why)
      *why = "the limit is " + formatBytes(kUnknown) +
             " (the system does not say how much memory is available)";
    return kUnknown;
  }
  constexpr uint64_t kLeft = uint64_t(256) << 20;
  const uint64_t limit = available <= kLeft ? 0 : std::min(available - kLeft, available / 8 * 7);
  if (why) {
    const uint64_t total = physicalHostBytes();
    *why = "this machine has " + formatBytes(available) + " of memory available now" +
           (total > 0 ? " (of " + formatBytes(total) + ")" : std::string()) +
           ", and a pass may take " + formatBytes(limit) + " of it";
  }
  return limit;
}

void Model::checkPassSize(int B, int S, int T, const ForwardOptions& o) const {
  const ModelConfig& c = config();
  if (S > max_tokens_ || T > max_tokens_)
    throw Error(ErrorKind::BadInput, "the sequence has " + std::to_string(std::max(S, T)) +
                                         " tokens; this model takes at most " +
                                         std::to_string(max_tokens_) + limitReason());
  const uint64_t bytes = estimatePassBytes(B, S, T, o);
  std::string why;
  if (bytes > passMemoryLimit(o.max_trace_bytes, &why))
    throw Error(ErrorKind::TooLarge,
                "the pass over " + std::to_string(B) + " sentence(s) of " +
                    (c.hasEncoder() ? std::to_string(S) + " source" : std::string()) +
                    (c.hasCross() ? " and " : "") +
                    (c.hasDecoder() ? std::to_string(T) + " target" : std::string()) +
                    " tokens needs " + formatBytes(bytes) +
                    " (the attention trace's queries and keys, the logits and the activations); " +
                    why + ". Use a shorter input" +
                    (o.max_trace_bytes == 0 ? ", or close programs that hold memory." : "."));
}

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
  runEncoder(*backend_, c, *dw_, *enc, {segments}, o, {record ? &blocks : nullptr}, &done,
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

std::unique_ptr<Model::DecoderCache> Model::newDecoderCache(int capacity) const {
  const ModelConfig& c = config();
  capacity = std::max(1, std::min(capacity, max_tokens_));
  auto cache = std::make_unique<DecoderCache>();
  cache->capacity = capacity;
  const size_t KV = c.keyWidth() + c.kvValueWidth();
  for (int l = 0; l < c.n_decoder_layers; ++l) {
    cache->kv.push_back(backend_->allocate((size_t)capacity * KV * sizeof(float)));
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
  const int64_t used_kv = (int64_t)cache.length * (config().keyWidth() + config().kvValueWidth());
  for (size_t l = 0; l < cache.kv.size(); ++l)
    backend_->copy(cache.kv[l]->f32(), copy->kv[l]->f32(), used_kv);
  return copy;
}

void Model::truncateCache(DecoderCache& cache, int length) const {
  if (length < cache.length) {
    cache.length = std::max(0, length);
    cache.tokens.resize(cache.length);
  }
}

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
  std::vector<float*> kv;
  for (size_t l = 0; l < cache.kv.size(); ++l) kv.push_back(cache.kv[l]->f32());
  return runDecoder(*backend_, c, *dw_, enc, all, past, n, cache.capacity, std::move(kv), o);
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
  const ForwardOptions& o = options;
  Backend& be = *backend_;
  const int total = c.n_encoder_layers + c.n_decoder_layers;
  int done = 0;
  std::shared_ptr<Encoded> enc;
  if (c.hasEncoder()) {
    enc = std::make_shared<Encoded>();
    enc->batch = (int)B;
    enc->S = S;
    enc->src = tr.src_ids;
    runEncoder(be, c, *dw_, *enc, tr.segment_ids, o, {&tr.blocks, &tr.activations}, &done, total);
    if (!c.hasDecoder()) {  // encoder-only: the heads read the encoder's output
      runEncoderHeads(be, c, *dw_, enc->memory->f32(), (int)B, S, o, &tr);
      tr.hidden = Tensor({(int64_t)B, S, c.d_model});
      be.download(*enc->memory, tr.hidden.ptr(), tr.hidden.data.size() * sizeof(float));
    }
  }
  if (c.hasDecoder()) {
    TraceRows rows = runDecoder(be, c, *dw_, enc.get(), tr.tgt_ids, 0, T, T, {}, o);
    for (auto& b : rows.blocks) tr.blocks.push_back(std::move(b));
    for (auto& a : rows.activations) tr.activations.push_back(std::move(a));
    tr.logits = std::move(rows.logits);
    tr.hidden = std::move(rows.hidden);
  }
  tr.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return tr;
}

ModelWeights Model::currentWeights() const {
  return downloadWeights(*backend_, *dw_, model_->weights, dw_->params->f32());
}

std::shared_ptr<LoadedModel> Model::snapshot() const {
  auto m = std::make_shared<LoadedModel>();
  m->path = model_->path;
  m->config = model_->config;
  m->weights = currentWeights();
  return m;
}

}  // namespace attnviz

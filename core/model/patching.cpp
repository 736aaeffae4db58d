#include "model/patching.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "model/lens.h"
#include "model/runs.h"

namespace attnviz {

namespace {

const char* sideWord(Side s) {
  return s == Side::Source ? "encoder" : "decoder";
}

// The lengths of one side of both inputs must agree: positions align.
void checkSameLength(size_t clean, size_t corrupted, const char* what) {
  if (clean != corrupted)
    throw Error(ErrorKind::BadInput,
                std::string("the clean and corrupted ") + what + " must have the same number of " +
                    "tokens so that positions align: the clean one has " + std::to_string(clean) +
                    ", the corrupted one " + std::to_string(corrupted));
}

int argmaxExcept(const float* row, int V, int except) {
  int best = -1;
  for (int j = 0; j < V; ++j)
    if (j != except && (best < 0 || row[j] > row[best])) best = j;
  return best;
}

void checkToken(int token, int V, const char* what) {
  if (token < -1 || token >= V)
    throw Error(ErrorKind::BadInput, std::string(what) + " " + std::to_string(token) +
                                         " is not in the output vocabulary (ids 0 to " +
                                         std::to_string(V - 1) + ")");
}

// The clean run's activations on the backend: what the patches copy from.
// The corrupted run's streams: where the patched runs resume.
struct Sources {
  std::vector<BufferPtr> keep;
  const float* streams[2] = {nullptr, nullptr};  // per side [L + 1, n, d]: embeddings, layer 1 …
  const float* resume[2] = {nullptr, nullptr};   // per side [L + 1, n, d], the corrupted run's
  const float* contexts[3] = {nullptr, nullptr, nullptr};  // per block kind [L, n, C]
};

BufferPtr upload(Backend& be, const std::vector<const Tensor*>& parts) {
  size_t floats = 0;
  for (const Tensor* t : parts) floats += t->data.size();
  BufferPtr b = be.allocate(std::max<size_t>(floats, 1) * sizeof(float));
  size_t at = 0;
  for (const Tensor* t : parts) {
    be.upload(*b, t->ptr(), t->data.size() * sizeof(float), at * sizeof(float));
    at += t->data.size();
  }
  return b;
}

const SublayerActivation& activationOf(const Trace& t, Side side, int layer, Sublayer s) {
  const SublayerActivation* a = t.activation(side, layer, s);
  if (!a) throw Error(ErrorKind::Backend, "patching: the clean run kept no activations");
  return *a;
}

// One patched run: its heatmap cell and its patch.
struct Job {
  int map = 0;
  int64_t cell = 0;
  bool encoder = false;  // it changes the encoder (the whole model runs), else the decoder alone
  bool stream = true;
  int resume = -1;  // the patched run starts from the corrupted stream leaving this layer
  StreamPatch s;
  HeadPatch h;
};

}  // namespace

PatchingResult patchActivations(const Model& m, const Inputs& clean, const Inputs& corrupted,
                                const PatchOptions& o) {
  const ModelConfig& c = m.config();
  if (c.tokenHead() == TokenHead::None)
    throw Error(ErrorKind::BadInput,
                "activation patching compares two tokens' logits: this model has no token head");
  if (m.checkInputs(clean) != 1 || m.checkInputs(corrupted) != 1)
    throw Error(ErrorKind::BadInput, "give one clean and one corrupted sentence");
  if (c.hasEncoder()) checkSameLength(clean.src[0].size(), corrupted.src[0].size(), "sources");
  if (c.hasDecoder()) checkSameLength(clean.tgt[0].size(), corrupted.tgt[0].size(), "targets");
  if (clean.segments.size() != corrupted.segments.size())
    throw Error(ErrorKind::BadInput, "give segment ids for both inputs or for neither");

  Backend& be = m.backend();
  ForwardOptions plain;
  plain.record = false;
  plain.cancel = o.cancel;
  ForwardOptions keep = plain;
  keep.keep_activations = true;
  const Trace ct = m.forward(clean, keep);
  const Trace rt = m.forward(corrupted, keep);

  PatchingResult res;
  res.stack = lensStack(c);
  const int n = res.stack == Side::Source ? ct.src_len : ct.tgt_len;
  const int V = ct.logits.vocab();
  res.position = o.position < 0 ? n - 1 : o.position;
  if (res.position >= n)
    throw Error(ErrorKind::BadInput, "position " + std::to_string(res.position) +
                                         " is past the input's " + std::to_string(n) +
                                         " positions (0 to " + std::to_string(n - 1) + ")");
  checkToken(o.answer, V, "the answer");
  checkToken(o.foil, V, "the foil");
  const std::vector<float> clean_logits = logitsRow(m, ct, 0, res.position);
  const std::vector<float> corrupted_logits = logitsRow(m, rt, 0, res.position);
  const float* clean_row = clean_logits.data();
  const float* corrupted_row = corrupted_logits.data();
  res.answer = o.answer >= 0 ? o.answer : argmaxExcept(clean_row, V, -1);
  res.foil = o.foil >= 0 ? o.foil : argmaxExcept(corrupted_row, V, res.answer);
  const Vocabulary& out = m.vocab(res.stack);
  res.answer_token = out.token(res.answer);
  res.foil_token = out.token(res.foil);
  if (res.answer == res.foil)
    throw Error(ErrorKind::BadInput, "the answer and the foil are the same token (\"" +
                                         res.answer_token +
                                         "\"): the logit difference would be 0 in every run");
  auto metric = [&](const float* row) { return (double)row[res.answer] - row[res.foil]; };
  res.clean = metric(clean_row);
  res.corrupted = metric(corrupted_row);
  const double delta = res.clean - res.corrupted;
  if (std::abs(delta) <= 1e-6 * std::max({1.0, std::abs(res.clean), std::abs(res.corrupted)}))
    throw Error(ErrorKind::BadInput,
                "clean and corrupted give the same logit difference; nothing to restore (logit[\"" +
                    res.answer_token + "\"] − logit[\"" + res.foil_token +
                    "\"] = " + std::to_string(res.clean) + " in both)");
  res.definition =
      "m = logit[\"" + res.answer_token + "\"] − logit[\"" + res.foil_token + "\"] at " +
      sideWord(res.stack) + " position " + std::to_string(res.position) +
      "; restored = (m(patched) − m(corrupted)) / (m(clean) − m(corrupted)) with m(clean) = " +
      std::to_string(res.clean) + ", m(corrupted) = " + std::to_string(res.corrupted);

  // The clean run's activations, uploaded once.
  Sources src;
  std::vector<Side> sides;
  if (c.hasEncoder()) sides.push_back(Side::Source);
  if (c.hasDecoder()) sides.push_back(Side::Target);
  auto layersOf = [&](Side s) {
    return s == Side::Source ? c.n_encoder_layers : c.n_decoder_layers;
  };
  for (Side s : sides)
    for (const Trace* t : {&ct, &rt}) {
      std::vector<const Tensor*> rows{&activationOf(*t, s, -1, Sublayer::Embedding).output};
      for (int l = 0; l < layersOf(s); ++l)
        rows.push_back(&activationOf(*t, s, l, Sublayer::Residual).output);
      src.keep.push_back(upload(be, rows));
      (t == &ct ? src.streams : src.resume)[(int)s] = src.keep.back()->f32();
    }
  std::vector<AttentionKind> blocks;
  if (c.hasEncoder()) blocks.push_back(AttentionKind::EncoderSelf);
  if (c.hasDecoder()) blocks.push_back(AttentionKind::DecoderSelf);
  if (c.hasCross()) blocks.push_back(AttentionKind::Cross);
  for (AttentionKind k : blocks) {
    const Side s = k == AttentionKind::EncoderSelf ? Side::Source : Side::Target;
    const Sublayer sub =
        k == AttentionKind::Cross ? Sublayer::CrossAttention : Sublayer::SelfAttention;
    std::vector<const Tensor*> parts;
    for (int l = 0; l < layersOf(s); ++l) parts.push_back(&activationOf(ct, s, l, sub).context);
    src.keep.push_back(upload(be, parts));
    src.contexts[(int)k] = src.keep.back()->f32();
  }

  // The heatmaps and one job per cell.
  const int d = c.d_model, C = c.valueWidth(), H = c.n_heads;
  std::vector<Job> jobs;
  if (o.residuals)
    for (Side s : sides) {
      const int len = s == Side::Source ? ct.src_len : ct.tgt_len, L = layersOf(s);
      const auto& a = s == Side::Source ? ct.src_ids[0] : ct.tgt_ids[0];
      const auto& b = s == Side::Source ? rt.src_ids[0] : rt.tgt_ids[0];
      PatchHeatmap map;
      map.side = s;
      map.title = std::string(sideWord(s)) + " residual stream";
      map.rows = L + 1;
      map.cols = len;
      for (int r = 0; r <= L; ++r)
        map.row_labels.push_back(r == 0 ? "embeddings" : "layer " + std::to_string(r));
      const Vocabulary& v = m.vocab(s);
      for (int i = 0; i < len; ++i)
        map.col_labels.push_back(a[i] == b[i] ? v.token(a[i])
                                              : v.token(a[i]) + " → " + v.token(b[i]));
      for (int r = 0; r <= L; ++r)
        for (int i = 0; i < len; ++i) {
          Job j;
          j.map = (int)res.maps.size();
          j.cell = map.cell(r, i);
          j.encoder = s == Side::Source;
          j.s.side = s;
          j.s.layer = j.resume = r - 1;
          j.s.position = i;
          j.s.values = src.streams[(int)s] + ((int64_t)r * len + i) * d;
          jobs.push_back(j);
        }
      res.maps.push_back(std::move(map));
    }
  if (o.heads)
    for (AttentionKind k : blocks) {
      const Side s = k == AttentionKind::EncoderSelf ? Side::Source : Side::Target;
      const int len = s == Side::Source ? ct.src_len : ct.tgt_len, L = layersOf(s);
      PatchHeatmap map;
      map.heads = true;
      map.side = s;
      map.block = k;
      map.title = k == AttentionKind::EncoderSelf   ? "encoder self-attention heads"
                  : k == AttentionKind::DecoderSelf ? "decoder self-attention heads"
                                                    : "cross-attention heads";
      map.rows = L;
      map.cols = H;
      for (int l = 0; l < L; ++l) map.row_labels.push_back("layer " + std::to_string(l + 1));
      for (int h = 0; h < H; ++h) map.col_labels.push_back("H" + std::to_string(h + 1));
      for (int l = 0; l < L; ++l)
        for (int h = 0; h < H; ++h) {
          Job j;
          j.map = (int)res.maps.size();
          j.cell = map.cell(l, h);
          j.encoder = s == Side::Source;
          j.stream = false;
          j.h.kind = k;
          j.h.layer = l;
          j.h.head = h;
          j.resume = l - 1;
          j.h.values = src.contexts[(int)k] + (int64_t)l * len * C;
          jobs.push_back(j);
        }
      res.maps.push_back(std::move(map));
    }
  for (PatchHeatmap& map : res.maps) {
    map.metric.assign((size_t)map.rows * map.cols, 0.0);
    map.restored.assign((size_t)map.rows * map.cols, 0.0);
  }

  // The patched runs, in batches of copies of the corrupted input. An encoder-decoder's
  // decoder-side patches leave the encoder as the corrupted run had it: its output is computed
  // once and shared by every copy.
  const int rows_per_copy = (c.hasEncoder() ? ct.src_len : 0) + (c.hasDecoder() ? ct.tgt_len : 0);
  const int per_pass = std::max(1, o.batch_rows / std::max(1, rows_per_copy));
  // Encoder-side first; in each, by the layer the runs resume from.
  std::stable_sort(jobs.begin(), jobs.end(), [](const Job& x, const Job& y) {
    return x.encoder != y.encoder ? x.encoder : x.resume < y.resume;
  });
  std::shared_ptr<Model::Encoded> shared;  // the corrupted encoding, one copy per batch sentence
  if (c.hasCross() &&
      std::any_of(jobs.begin(), jobs.end(), [](const Job& j) { return !j.encoder; })) {
    const auto one = m.encode(
        corrupted.src[0], corrupted.segments.empty() ? std::vector<int>{} : corrupted.segments[0],
        plain, nullptr);
    const int B = per_pass, S = one->S, KV = c.keyWidth() + c.kvValueWidth();
    shared = std::make_shared<Model::Encoded>();
    shared->batch = B;
    shared->S = S;
    shared->src.assign((size_t)B, one->src[0]);
    for (int b = 0; b < B; ++b)
      shared->key_mask.insert(shared->key_mask.end(), one->key_mask.begin(), one->key_mask.end());
    shared->memory = be.allocate((size_t)B * S * d * sizeof(float));
    for (int b = 0; b < B; ++b)
      be.copy(one->memory->f32(), shared->memory->f32() + (int64_t)b * S * d, (int64_t)S * d);
    for (const BufferPtr& kv : one->cross_kv) {
      BufferPtr copies = be.allocate((size_t)B * S * KV * sizeof(float));
      for (int b = 0; b < B; ++b)
        be.copy(kv->f32(), copies->f32() + (int64_t)b * S * KV, (int64_t)S * KV);
      shared->cross_kv.push_back(std::move(copies));
    }
  }
  const int total = (int)jobs.size();
  for (size_t first = 0; first < jobs.size();) {
    if (o.cancel && o.cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
    // A batch: jobs of one kind (encoder or decoder side), at most per_pass of them.
    size_t last = first;
    while (last < jobs.size() && last - first < (size_t)per_pass &&
           jobs[last].encoder == jobs[first].encoder && jobs[last].resume == jobs[first].resume)
      ++last;
    const int B = (int)(last - first);
    ActivationPatches patches;
    const Job& lead = jobs[first];
    const Side side = lead.encoder ? Side::Source : Side::Target;
    const int len = side == Side::Source ? ct.src_len : ct.tgt_len;
    if (lead.resume >= 0)  // the corrupted run's stream leaving that layer
      patches.resume.push_back(
          {side, lead.resume, src.resume[(int)side] + (int64_t)(lead.resume + 1) * len * d});
    for (int b = 0; b < B; ++b) {
      Job& j = jobs[first + b];
      if (j.stream) {
        j.s.sentence = b;
        patches.streams.push_back(j.s);
      } else {
        j.h.sentence = b;
        patches.heads.push_back(j.h);
      }
    }
    ForwardOptions po = plain;
    po.patches = &patches;
    po.keep_logits_at = {res.position};  // the row the metric reads, whole
    TokenLogits logits;
    if (shared && !jobs[first].encoder) {
      const std::vector<std::vector<int>> tgt((size_t)B, corrupted.tgt[0]);
      logits =
          runDecoder(be, c, m.deviceWeights(), shared.get(), tgt, 0, ct.tgt_len, ct.tgt_len, {}, po)
              .logits;
    } else {
      Inputs copies;
      if (c.hasEncoder()) copies.src.assign((size_t)B, corrupted.src[0]);
      if (!corrupted.segments.empty()) copies.segments.assign((size_t)B, corrupted.segments[0]);
      if (c.hasDecoder()) copies.tgt.assign((size_t)B, corrupted.tgt[0]);
      logits = std::move(m.forward(copies, po).logits);
    }
    for (int b = 0; b < B; ++b) {
      const Job& j = jobs[first + b];
      PatchHeatmap& map = res.maps[j.map];
      const double v = metric(logits.row(b, res.position));
      map.metric[j.cell] = v;
      map.restored[j.cell] = (v - res.corrupted) / delta;
    }
    res.runs += B;
    first = last;
    if (o.progress) o.progress((int)first, total);
  }
  return res;
}

}  // namespace attnviz

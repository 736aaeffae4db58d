// A Transformer composed once on top of a Backend — encoder-decoder, encoder-only or decoder-only —
// with one layer stack for all of them: weights uploaded at construction, a teacher-forced pass
// that returns the whole attention trace, and the two pieces a decoding session needs (the encoder
// once, then the decoder over new positions against cached keys and values). A cached decode step
// is the decoder run on one new query row.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "arch/weights.h"
#include "compute/backend.h"
#include "model/masks.h"
#include "model/trace.h"
#include "text/vocab.h"

namespace attnviz {

// A what-if experiment on one head of one block: switch it off (its output, the head's slice of
// the context before the output projection, becomes 0) or sharpen / flatten its softmax
// (softmax(scores / temperature); the trace keeps the raw scores and shows the tempered probs).
struct HeadIntervention {
  AttentionKind kind = AttentionKind::EncoderSelf;
  int layer = 0;
  int head = 0;
  bool off = false;
  float temperature = 1.0f;
};

// Activation patching (model/patching.h): values copied over the pass's own while it runs — from
// another run of the model, the clean input's, into this one. The values live on the model's
// backend (device pointers the caller filled). Positions are a pass's own (Model::forward, or a
// stack run from position 0).
struct StreamPatch {
  Side side = Side::Target;  // Source: the encoder's stream; Target: the decoder's
  int layer = -1;  // −1: the embeddings (the first layer's input); l: the stream leaving
                   // layer l (Sublayer::Residual), before the next layer reads it
  int sentence = 0, position = 0;
  const float* values = nullptr;  // [d_model]
};
struct HeadPatch {
  AttentionKind kind = AttentionKind::DecoderSelf;
  int layer = 0, head = 0, sentence = 0;
  // [len, H·d_v] a whole block's context, of which head h's columns [h·d_v, (h + 1)·d_v) replace
  // the head's output before W_O at every position of the sentence
  const float* values = nullptr;
};
// A run that starts part-way up a stack: every sentence's stream leaving layer `layer` is
// `stream` [len, d_model] (another run's, which the layers below would compute again), and the
// stack runs from layer `layer` + 1 on (after the patches at `layer`).
struct StreamResume {
  Side side = Side::Target;
  int layer = -1;  // −1: from the embeddings
  const float* stream = nullptr;
};
struct ActivationPatches {
  std::vector<StreamPatch> streams;
  std::vector<HeadPatch> heads;
  std::vector<StreamResume> resume;  // at most one per side
  const StreamResume* resumeOf(Side side) const {
    for (const StreamResume& r : resume)
      if (r.side == side) return &r;
    return nullptr;
  }
};

struct ForwardOptions {
  MaskOptions masks;
  bool record = true;     // keep attention blocks (false: outputs only, e.g. greedy decoding)
  bool keep_qkv = false;  // keep each block's values too (the cell view; q and k are always kept)
  // keep every sublayer's input and output [batch, len, d_model] in Trace::activations (a full
  // pass: Model::forward; decoding steps do not record them)
  bool keep_activations = false;
  std::vector<HeadIntervention> interventions;
  // Attention runs over chunks of query rows, as many as Pass::kTileFloats of scores allow; a
  // positive number caps a chunk at that many rows (the tests split short inputs this way).
  int max_chunk_rows = 0;
  const ActivationPatches* patches = nullptr;  // activation patching; null: none
  // The most a pass may allocate (Model::estimatePassBytes); 0: what the machine has available
  // when the pass starts (passMemoryLimit).
  uint64_t max_trace_bytes = 0;
  // Token logits kept as whole rows (TokenLogits): all of them while [B, n, V] floats take at most
  // this many bytes; beyond, each sentence's last position and the positions in keep_logits_at
  // (counted from 0 over the whole sequence), the others their top tokens and log-sum-exp.
  uint64_t kept_logits_bytes = uint64_t(256) << 20;
  std::vector<int> keep_logits_at;
  const std::atomic<bool>* cancel = nullptr;          // checked between layers → Error(Cancelled)
  std::function<void(int done, int total)> progress;  // layers done, called between layers
};

// The limit a pass of `max_trace_bytes` (ForwardOptions) is held to: that figure, or for 0 seven
// eighths of the memory the machine has available now (availableHostBytes; at least 256 MiB are
// left to the rest of the system), 4 GiB where the system does not say. `why` (optional) gets the
// figures the limit comes from, for a refusal: "the limit is 4.0 GiB" or "this machine has 3.1 GiB
// of memory available now (of 23.4 GiB)".
uint64_t passMemoryLimit(uint64_t max_trace_bytes, std::string* why = nullptr);

// The inputs of one pass, as the architecture needs them. Sentences of a batch may differ in
// length; they are padded with the pad ids.
struct Inputs {
  std::vector<std::vector<int>> src;       // [B][S_b] encoder ids (none for decoder-only)
  std::vector<std::vector<int>> segments;  // [B][S_b] segment ids; empty = all 0
  std::vector<std::vector<int>> tgt;       // [B][T_b] decoder ids, from the start token (none for
                                           // encoder-only)
};

struct DeviceWeights;  // the parameters on the backend (model/device_weights.h)

class Model {
 public:
  // Uploads the weights. Throws Error(Backend) if the backend cannot hold them.
  Model(std::shared_ptr<const LoadedModel> model, std::shared_ptr<Backend> backend);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return model_->config; }
  const LoadedModel& loaded() const { return *model_; }
  std::shared_ptr<const LoadedModel> loadedPtr() const { return model_; }
  Backend& backend() const { return *backend_; }
  const Vocabulary& srcVocab() const { return src_vocab_; }
  const Vocabulary& tgtVocab() const { return tgt_vocab_; }
  const Vocabulary& vocab(Side side) const {
    return side == Side::Source ? src_vocab_ : tgt_vocab_;
  }
  // The longest sequence the model takes: the rows of the position table, or fewer where a local
  // attention window (ModelConfig::local_window) would differ from causal attention beyond it.
  int maxPositions() const { return max_tokens_; }
  // Why maxPositions() is the limit, for messages: " (max_len)" or the local window's reason.
  std::string limitReason() const;

  // Text → ids. The source is wrapped in BOS … EOS when the config says so; the target starts
  // with the start token (when the model has one). Throw Error(BadInput), also for text longer
  // than maxPositions() unless `within_positions` is false (the atlas cuts such lines itself).
  std::vector<int> encodeSource(const std::string& sentence, bool within_positions = true) const;
  std::vector<int> encodeTarget(const std::string& prefix, bool within_positions = true) const;

  // A teacher-forced pass of the whole model over a padded batch.
  Trace forward(const Inputs& inputs, const ForwardOptions& options = {}) const;

  // ---- pieces of a decoding session (batch 1) ----
  // The encoder's output and every decoder layer's cross-attention keys and values, for B
  // sentences.
  struct Encoded {
    int batch = 0, S = 0;
    std::vector<std::vector<int>> src;  // [B][S] padded
    std::vector<uint8_t> key_mask;      // [B, S] 1 = masked source key (padding, when masked)
    BufferPtr memory;                   // [B, S, d] the encoder's output (after any final norm)
    std::vector<BufferPtr> cross_kv;    // per decoder layer: [B, S, A + Av] keys | values
  };
  // Per decoder layer, the keys and values of the positions fed so far (batch 1).
  struct DecoderCache {
    int capacity = 0, length = 0;
    std::vector<int> tokens;    // [length] the ids fed so far
    std::vector<BufferPtr> kv;  // per decoder layer: [capacity, A + Av] keys | values
  };
  // Runs the encoder on one sentence; its blocks go into `trace` (with the source tokens) when
  // options.record.
  std::shared_ptr<const Encoded> encode(const std::vector<int>& src,
                                        const std::vector<int>& segments,
                                        const ForwardOptions& options, Trace* trace) const;
  std::unique_ptr<DecoderCache> newDecoderCache(int capacity) const;
  int cacheLength(const DecoderCache& cache) const;
  // Runs decoder positions [length, length + tokens.size()) fed with `tokens`: writes their K/V
  // into the cache (without changing its length: commitCache does, so that a computed step can be
  // dropped) and returns their rows. `enc` is null for a decoder-only model.
  TraceRows decode(const Encoded* enc, const DecoderCache& cache, const std::vector<int>& tokens,
                   const ForwardOptions& options) const;
  void commitCache(DecoderCache& cache, const std::vector<int>& tokens) const;
  // A copy of a cache (a beam of a beam search going its own way).
  std::unique_ptr<DecoderCache> cloneCache(const DecoderCache& cache) const;
  void truncateCache(DecoderCache& cache, int length) const;

  // The weights as they are now (training changes them), in the host layout of arch/weights.h.
  ModelWeights currentWeights() const;
  // The config with the current weights: what a trained model is saved from.
  std::shared_ptr<LoadedModel> snapshot() const;
  // The parameters on the backend: what the training step (train/training.h) differentiates and
  // the optimizer updates in place. forward() and decoding see the weights as they change.
  const DeviceWeights& deviceWeights() const { return *dw_; }
  DeviceWeights& deviceWeights() { return *dw_; }

  // How many parameters the model has (tied weights count once, as in PyTorch).
  int64_t parameterCount() const;
  // Bytes the weights take on the backend.
  uint64_t weightBytes() const;
  // Bytes a pass of B sentences of S source and T target tokens allocates at its peak: the trace
  // (blocks, q/k/v when kept, outputs), the encoder's output and cross-attention keys and values,
  // and the larger of the encoder's and the decoder's working sets. checkPassSize compares it with
  // ForwardOptions::max_trace_bytes before anything is allocated.
  uint64_t estimatePassBytes(int B, int S, int T, const ForwardOptions& options) const;
  // Refuses a pass longer than the position table or larger than options.max_trace_bytes, with a
  // message that says why. Throws Error(BadInput / TooLarge).
  void checkPassSize(int B, int S, int T, const ForwardOptions& o) const;
  // Checks a pass's inputs against the architecture and vocabularies; returns the batch size.
  // Throws Error(BadInput).
  size_t checkInputs(const Inputs& inputs) const;

 private:
  std::shared_ptr<const LoadedModel> model_;
  std::shared_ptr<Backend> backend_;
  std::unique_ptr<DeviceWeights> dw_;
  Vocabulary src_vocab_, tgt_vocab_;
  int position_rows_ = 0;
  int max_tokens_ = 0;

  void checkIds(const std::vector<std::vector<int>>& seqs, const Vocabulary& v,
                const char* what) const;
};

}  // namespace attnviz

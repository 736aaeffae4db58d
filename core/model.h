// The encoder-decoder Transformer composed once on top of a Backend: weights uploaded at
// construction, forward passes that return the full attention trace, and the pieces a decoding
// session needs (encode once, then one decoder row at a time with cached keys and values).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "masks.h"
#include "trace.h"
#include "vocab.h"
#include "weights.h"

namespace attnviz {

struct ForwardOptions {
  MaskOptions masks;
  bool keep_scores = true;  // scores take as much memory as probs
  uint64_t max_trace_bytes = uint64_t(4) << 30;
  const std::atomic<bool>* cancel = nullptr;          // checked between layers → Error(Cancelled)
  std::function<void(int done, int total)> progress;  // layers done, called between layers
};

struct DeviceWeights;  // weights on the backend (model.cpp)
struct EncoderState;   // encoder output + cross-attention K/V per layer on the backend

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

  // Source/target text → ids (target gets BOS prepended). Throw Error(BadInput).
  std::vector<int> encodeSource(const std::string& sentence) const;
  std::vector<int> encodeTarget(const std::string& prefix) const;  // [BOS, w1, w2, ...]

  // Teacher-forced forward pass of a padded batch. src[b] and tgt[b] may have different lengths;
  // they are padded with the pad ids. tgt[b] should start with BOS.
  Trace forward(const std::vector<std::vector<int>>& src, const std::vector<std::vector<int>>& tgt,
                const ForwardOptions& options = {}) const;

  // Greedy decoding as the tutorials do it (start with BOS, append argmax, stop at EOS or after
  // max_steps tokens). Returns the generated ids without BOS (with EOS if produced).
  std::vector<int> greedyDecode(const std::vector<int>& src, int max_steps) const;

  // ---- pieces for DecodingSession ----
  // The encoder's result for one sentence, computed once.
  struct EncoderOutput {
    std::vector<int> src;  // [S] ids
    int S = 0;
    BufferPtr memory;                 // [S, d_model] encoder output (after the final norm)
    std::vector<BufferPtr> cross_kv;  // per decoder layer: [S, A + Av] keys | values
    BufferPtr cross_mask;             // [S] uint8, 1 = masked source key
    std::vector<uint8_t> cross_mask_host;
  };
  // Keys and values of every target position so far, per decoder layer.
  struct DecoderCache {
    int capacity = 0;
    int length = 0;
    std::vector<int> tokens;         // [length] tokens fed so far
    std::vector<BufferPtr> self_kv;  // per layer: [capacity, A + Av] keys | values
  };
  std::shared_ptr<EncoderOutput> encode(const std::vector<int>& src, const MaskOptions& masks,
                                        AttentionTrace* enc_trace, bool keep_scores) const;
  std::unique_ptr<DecoderCache> newDecoderCache(const EncoderOutput& enc, int capacity) const;
  // Runs target position `pos` (= cache length) with input `token`; appends its K/V to the cache
  // and writes one row per layer/head: self [L, H, pos+1], cross [L, H, S], logits [V].
  struct StepRows {
    std::vector<float> self_scores, self_probs;    // [L, H, pos+1]
    std::vector<uint8_t> self_mask;                // [pos+1]
    std::vector<float> cross_scores, cross_probs;  // [L, H, S]
    std::vector<uint8_t> cross_mask;               // [S]
    std::vector<float> logits;                     // [V]
  };
  StepRows decodeStep(const EncoderOutput& enc, DecoderCache& cache, int token,
                      const MaskOptions& masks) const;
  void popDecoderCache(DecoderCache& cache) const;  // forget the last position
  int decoderCacheLength(const DecoderCache& cache) const;

  // Bytes the weights take on the backend.
  uint64_t weightBytes() const;

 private:
  std::shared_ptr<const LoadedModel> model_;
  std::shared_ptr<Backend> backend_;
  std::unique_ptr<DeviceWeights> dw_;
  Vocabulary src_vocab_, tgt_vocab_;
  BufferPtr src_positions_, tgt_positions_;  // [max_len or table rows, d_model]
  int position_rows_ = 0;

  void checkTraceSize(int B, int S, int T, const ForwardOptions& o) const;
};

}  // namespace attnviz

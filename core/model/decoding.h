// Decoding: encode the source once, then grow the target one position at a time (the argmax, or a
// token the user picks), computing only the new row of every decoder block against cached keys
// and values, and appending it to the session's trace; stepping back drops rows. The one greedy
// decoder (CLI, GUI, tests) and the one length rule live here.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/model.h"

namespace attnviz {

// The length rule (docs/formats.md "Decoding"): decoding stops after the end token, or once
// max_new_tokens ids were chosen after the prefix, or when the target fills the model's positions
// (max_len). Unless given, max_new_tokens is the source length + 5 (as PyTorch's translation
// tutorial decodes), or 50 for a decoder-only model's continuation.
constexpr int kExtraTokensOverSource = 5;
constexpr int kDefaultContinuationTokens = 50;
int defaultMaxNewTokens(int src_len);
// The length the model's tutorial gives its own greedy decoder, where it defines one (the
// architecture's DecodeRule: PyTorch's tutorial makes at most the source's length + 4), else
// defaultMaxNewTokens: what attnviz-cli decode and run use when --max-len is not given.
int tutorialMaxNewTokens(const ModelConfig& config, int src_len);
// Target positions a decode from a prefix of prefix_len may feed (the last choice needs none).
int decodeLimit(const Model& model, int prefix_len, int max_new_tokens);
// The decoder's first positions for a typed prefix: the start token (when the model has one) and
// the words. Throws Error(BadInput).
std::vector<int> startPrefix(const Model& model);

// The k most probable tokens of a logits row of V: (id, softmax probability), most probable first.
std::vector<std::pair<int, float>> topTokens(const float* logits, int V, int k);

// Why a decode ended: the end token was chosen, the run's number of new tokens was reached, or the
// target filled the model's positions (max_len) first.
enum class DecodeStop { NotYet, EndToken, NewTokens, ModelPositions };

class DecodingSession {
 public:
  struct Options {
    MaskOptions masks;
    int max_new_tokens = 0;  // 0 = defaultMaxNewTokens(source length)
    bool record = true;      // keep the attention trace (false: greedy decoding)
    bool keep_qkv = false;
    std::vector<HeadIntervention> interventions;
    uint64_t max_trace_bytes = 0;  // 0: what the machine has available (passMemoryLimit)
    const std::atomic<bool>* cancel = nullptr;
  };

  // src: the encoder's ids (encoder-decoders; empty for decoder-only models), segments optional.
  // prefix: the first decoder positions (start token and forced words; a decoder-only model's
  // prompt); empty = startPrefix(model). Runs the encoder and the prefix.
  DecodingSession(const Model& model, std::vector<int> src, std::vector<int> prefix,
                  Options options);
  DecodingSession(const Model& model, std::vector<int> src)
      : DecodingSession(model, std::move(src), {}, Options()) {}
  ~DecodingSession();

  const Model& model() const { return model_; }
  const Options& options() const { return options_; }
  const std::vector<int>& source() const { return src_; }
  // The trace so far: the encoder's blocks, and every decoder block's rows for the positions fed;
  // equal to a teacher-forced pass over targetIds().
  const Trace& trace() const { return trace_; }
  int length() const { return trace_.tgt_len; }  // positions fed, the prefix included
  int prefixLength() const { return prefix_len_; }
  int limit() const { return limit_; }
  std::vector<int> targetIds() const;
  int choice() const { return choice_; }  // chosen after the last position; -1 = not yet
  bool finished() const;                  // the end token was chosen, or a token at the limit
  DecodeStop stopReason() const;
  int maxNewTokens() const { return limit_ - prefix_len_ + 1; }  // ids the limit allows
  std::vector<int> generated() const;  // ids after the prefix, with the last choice

  const float* lastLogits() const;  // [V] next-token logits after the last position
  int vocabSize() const;
  int argmax() const;
  // The k most probable next tokens: (id, probability), most probable first.
  std::vector<std::pair<int, float>> topK(int k) const;

  // One step, in two halves so that the work can run off the GUI thread: computeStep chooses
  // `token` (the argmax when < 0) and, unless it ends decoding, runs it as the next position
  // (reading the cache, never the trace); applyStep records it. Throws Error(BadInput) when
  // finished().
  struct Step {
    int token = -1;
    bool runs = false;  // a new position was computed
    TraceRows rows;
    std::unique_ptr<Model::DecoderCache> fresh_cache;  // set when the decoder was rerun whole
    double elapsed_ms = 0;  // compute time (the trace's elapsed_ms adds up every step's)
  };
  Step computeStep(int token = -1) const;
  void applyStep(Step&& step);
  int stepForward(int token = -1);
  // The decoder rerun over the first n positions (used after a step back when positions see later
  // ones, i.e. with the look-ahead mask off).
  Step computeRerun(int n) const;
  // Undoes the last choice, else drops the last position (never the prefix). False when nothing
  // is left to undo. Without the look-ahead mask it reruns the decoder.
  bool stepBack();
  bool needsRerunToStepBack() const { return !use_cache_ && choice_ < 0; }
  // Runs until finished(); returns generated().
  std::vector<int> runToEnd();

 private:
  const Model& model_;
  std::vector<int> src_;
  Options options_;
  int prefix_len_ = 0;
  int limit_ = 0;
  bool limited_by_model_ = false;  // the model's positions set limit_, not max_new_tokens
  bool use_cache_ = true;  // false with the look-ahead mask off: each step reruns the decoder
  int choice_ = -1;
  std::shared_ptr<const Model::Encoded> enc_;
  std::unique_ptr<Model::DecoderCache> cache_;
  Trace trace_;

  ForwardOptions forwardOptions() const;
};

// Greedy decoding as the tutorials do it: from the prefix (default: the start token), append the
// argmax, stop after the end token (kept in the result) or max_new_tokens ids. Returns the ids
// after the prefix. src is empty for a decoder-only model, whose prefix is the prompt.
std::vector<int> greedyDecode(const Model& model, const std::vector<int>& src,
                              int max_new_tokens = 0, std::vector<int> prefix = {});
// The positions a greedy decode feeds the decoder (the prefix and every chosen id but the last):
// the target of the teacher-forced pass that shows what the decode computed.
std::vector<int> greedyTarget(const Model& model, const std::vector<int>& src,
                              int max_new_tokens = 0, std::vector<int> prefix = {});

}  // namespace attnviz

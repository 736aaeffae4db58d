// The tasks a model can be trained on in the application and the CLI (docs/training.md): copy,
// reverse or sort a sequence of symbols, translate the bundled reorder model's made-up language,
// or the user's own parallel sentences; or continue a repeated random sequence (induction, a
// language model). Each gives the vocabularies, fresh random training pairs,
// a held-out set never used in training, and a probe sentence whose attention the Train view
// records as training goes.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace attnviz {

// One sentence pair, as words.
struct Example {
  std::vector<std::string> src;
  std::vector<std::string> tgt;
};

struct TaskOptions {
  int min_len = 3;  // symbol tasks: sequence lengths, uniform in [min_len, max_len]
  int max_len = 12;
  std::string path;    // the "parallel" task: a UTF-8 text file of "source<TAB>target" lines
  int held_out = 300;  // sentences kept out of training (at most 10% of a parallel file's lines)
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string name() const = 0;         // "reverse"
  virtual std::string description() const = 0;  // a sentence for the model card and the GUI

  // The specials first, as PyTorch's translation tutorial numbers them: <unk> 0, <pad> 1,
  // <bos> 2, <eos> 3 (the target side; the source side has the same four).
  static constexpr int kUnk = 0, kPad = 1, kBos = 2, kEos = 3;
  const std::vector<std::string>& srcVocab() const { return src_vocab_; }
  const std::vector<std::string>& tgtVocab() const { return tgt_vocab_; }

  // A random training pair; never one of the held-out sentences.
  virtual Example sample(std::mt19937_64& rng) const = 0;
  const std::vector<Example>& heldOut() const { return held_out_; }
  // The sentence whose attention the Train view follows.
  const Example& probe() const { return probe_; }
  // A language-model task: the model is decoder-only, trained on the targets alone (the sources
  // are empty), and evaluated teacher-forced on the target tokens from firstScored(example) on.
  virtual bool decoderOnly() const { return false; }
  virtual int firstScored(const Example&) const { return 0; }
  // The longest source and target (without <bos>/<eos>) this task produces.
  virtual int maxSourceLength() const = 0;
  virtual int maxTargetLength() const = 0;

  // Words → ids of the two vocabularies (every word of the task is in them).
  std::vector<int> srcIds(const std::vector<std::string>& words) const;
  std::vector<int> tgtIds(const std::vector<std::string>& words) const;

 protected:
  std::vector<std::string> src_vocab_, tgt_vocab_;
  std::vector<Example> held_out_;
  Example probe_;
  // Sets both vocabularies to the four specials followed by `words` (sorted, distinct).
  void setVocab(std::vector<std::string> src_words, std::vector<std::string> tgt_words);
};

// The task names: "copy", "reverse", "sort", "reorder", "parallel", "induction".
std::vector<std::string> taskNames();
// Builds a task. Throws Error(Usage) for an unknown name or bad lengths, Error(Io / BadInput)
// for an unreadable or malformed parallel file (naming the line).
std::unique_ptr<Task> makeTask(const std::string& name, const TaskOptions& options = {});

}  // namespace attnviz

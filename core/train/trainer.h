// Training a Transformer on a task (docs/training.md): a fresh model of a preset size, batches of
// random pairs from the task, Adam with warm-up, held-out exact match by greedy decoding, and the
// probe sentence's attention for the Train view. What the Train view and `attnviz-cli train` run.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/trace.h"
#include "train/optimizer.h"
#include "train/tasks.h"
#include "train/training.h"

namespace attnviz {

// Model sizes, from a toy to the tutorials' full size.
struct ModelPreset {
  std::string name;
  int d_model, n_heads, d_ff, n_encoder_layers, n_decoder_layers;
  std::string description;
};
const std::vector<ModelPreset>& modelPresets();          // tiny, small, medium, tutorial
const ModelPreset& findPreset(const std::string& name);  // throws Error(Usage)

struct TrainConfig {
  std::string task = "reverse";
  TaskOptions task_options;
  std::string preset = "small";
  NormPlacement norm = NormPlacement::Pre;
  int steps = 1500;
  int batch = 64;
  uint64_t seed = 1;
  OptimizerOptions optimizer = defaultOptimizer();
  float dropout = 0.0f;
  float label_smoothing = 0.0f;
  int threads = 0;  // the CPU backend's threads (0 = its default)
  // Batches of similar lengths, as torchtext's BucketIterator: pairs are drawn `bucket` batches
  // at a time, sorted by length and cut into batches, which are then taken in random order —
  // less padding, the same pairs. 1 = each batch drawn on its own.
  int bucket = 16;

  // Adam (β 0.9 / 0.98, ε 1e-9, as PyTorch's translation tutorial), lr 1e-3 with 100 warm-up
  // steps then a cosine decay, gradients clipped to norm 1.
  static OptimizerOptions defaultOptimizer();
};

// The induction recipe (docs/training.md "The induction recipe"): the induction task (a random
// prefix, then 3–8 random symbols twice) on the attn-only-2l model, 2,500 steps of 32 sequences,
// Adam at 1e-3 held after 100 warm-up steps, seed 1 — an induction head forms in layer 2 around
// step 1,500 (its induction score jumps from about 0.1 to 0.9).
TrainConfig inductionRecipe();

// A fresh PyTorch-tutorial Seq2SeqTransformer (family pytorch-nn-transformer) for the task's
// vocabularies at the preset's size, initialised as that tutorial does: Xavier-uniform matrices
// (embeddings too), zero biases, unit LayerNorms. For a language-model task (Task::decoderOnly) a
// nanoGPT-style decoder of the preset's decoder depth instead: rotary positions, pre-norm, the
// output tied to the token table (d_ff 0: attention-only). Throws Error(Usage) for a decoder-only
// preset and a sequence-to-sequence task.
std::shared_ptr<LoadedModel> makeTrainingModel(const Task& task, const ModelPreset& preset,
                                               NormPlacement norm, uint64_t seed);

class Trainer {
 public:
  // Builds the task, the model and the optimizer on the backend. Throws Error.
  Trainer(TrainConfig config, std::shared_ptr<Backend> backend);
  ~Trainer();

  const TrainConfig& config() const { return config_; }
  const Task& task() const { return *task_; }
  Model& model() { return *model_; }
  const Model& model() const { return *model_; }

  struct StepStats {
    int step = 0;                  // steps done, this one included
    double loss = 0;               // the batch's mean token cross-entropy
    double token_accuracy = 0;     // argmax = target, teacher-forced, over the batch's tokens
    double sequence_accuracy = 0;  // sentences whose every token is right, teacher-forced
    float lr = 0;
    double grad_norm = 0;
    double seconds = 0;  // time spent in step() so far
  };
  // One optimizer step on a fresh batch.
  StepStats step();
  // The next batch of training pairs (what step() trains on).
  std::vector<Example> nextBatch();
  int steps() const { return steps_; }

  struct Evaluation {
    int step = 0;
    int correct = 0, total = 0;  // held-out sentences whose greedy decoding is exactly the target
    double exact_match = 0;
    double seconds = 0;
    std::vector<std::string> mistakes;  // a few "source → got (want …)" lines
  };
  // Greedy-decodes the first `limit` held-out sentences (0 = all) and counts exact matches.
  Evaluation evaluate(int limit = 0, const std::atomic<bool>* cancel = nullptr) const;

  // The probe sentence, teacher-forced on its target, with the whole attention trace.
  Trace probeTrace() const;
  // The config (with a name and description) and the current weights: what is saved.
  std::shared_ptr<LoadedModel> snapshot() const;

 private:
  TrainConfig config_;
  std::unique_ptr<Task> task_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Training> training_;
  std::unique_ptr<Optimizer> optimizer_;
  std::mt19937_64 rng_;
  std::vector<std::vector<Example>> pending_;  // batches drawn and not yet used (bucketing)
  int steps_ = 0;
  double seconds_ = 0;
};

}  // namespace attnviz

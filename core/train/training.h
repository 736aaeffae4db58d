// Training a model in place: its parameters' gradients, and one training step — a teacher-forced
// pass with the tape, the loss against the targets, and the backward (docs/training.md). The
// optimizer (train/optimizer.h) updates the parameters from the gradients; the model's forward
// pass and decoding see the weights as they change.
#pragma once

#include <cstdint>
#include <vector>

#include "compute/backend.h"
#include "model/model.h"

namespace attnviz {

// What a training step compares the model's outputs with.
struct Targets {
  // [B][n]: the id each output position should predict — the decoder's positions, or a masked
  // LM's source positions. A negative id, and every position past the list, counts for nothing
  // (padding, unmasked positions).
  std::vector<std::vector<int>> tokens;
  std::vector<int> classes;  // [B] class ids (a model with a class head); empty = no class loss
  Tensor hidden_weights;     // [B, n, d_model]: adds Σ hidden ⊙ weights to the loss (a probe for
                             // models without a head, e.g. the step-by-step encoder); empty = none
};

struct TrainOptions {
  float label_smoothing = 0.0f;  // of both cross-entropies, as F.cross_entropy's label_smoothing
  float dropout = 0.0f;          // on the embeddings, each sublayer's output and the FFN's hidden
  uint64_t seed = 0;             // of the dropout masks
  MaskOptions masks;
};

// The loss of one batch and how many outputs were right (argmax = target).
struct LossStats {
  double loss = 0;        // what the backward differentiates: token + class + probe terms
  double token_loss = 0;  // mean cross-entropy over the counted positions
  double class_loss = 0;  // mean cross-entropy over the sentences
  int64_t tokens = 0, correct_tokens = 0;        // counted positions
  int64_t sequences = 0, correct_sequences = 0;  // sentences with a counted position; all right
  int64_t classes = 0, correct_classes = 0;
};

class Training {
 public:
  // Allocates a gradient for every parameter of `model` (zeroed), on the model's backend.
  explicit Training(Model& model);
  ~Training();
  Training(const Training&) = delete;
  Training& operator=(const Training&) = delete;

  Model& model() { return model_; }
  // A teacher-forced pass over the batch with the tape (the same layer stack as Model::forward),
  // the loss against `targets`, and the backward: ADDS the batch's gradients to the gradients.
  // Throws Error(BadInput) like Model::forward, and when the targets do not fit the inputs.
  LossStats forwardBackward(const Inputs& inputs, const Targets& targets,
                            const TrainOptions& options = {});
  void zeroGradients();
  // Every parameter as one device array, and its gradients at the same offsets (the optimizer's
  // view); the count of floats. Tied weights are one parameter.
  float* parameters();
  float* gradients();
  int64_t parameterCount() const;
  // The gradients' global L2 norm (as clip_grad_norm_).
  double gradientNorm();
  // The gradients in the host layout of arch/weights.h (a tied parameter's under both names).
  ModelWeights currentGradients() const;

 private:
  Model& model_;
  BufferPtr grads_;      // [n_params]
  BufferPtr workspace_;  // the tape, the backward's scratch and the loss's buffers, reused by steps
  BufferPtr scratch_;    // the forward runs' own scratch
};

}  // namespace attnviz

// Adam and AdamW over a model's one parameter array, with the learning-rate schedules of the
// tutorials (linear warm-up, then constant or a cosine decay; the Annotated Transformer's "Noam"
// rate) and gradient clipping by the global norm — torch.optim.Adam / AdamW and
// torch.nn.utils.clip_grad_norm_, step for step (tests/test_training.cpp compares them).
#pragma once

#include <cstdint>
#include <string>

#include "compute/backend.h"

namespace attnviz {

class Training;

enum class Schedule {
  Constant,      // lr
  Warmup,        // lr · min(1, (t + 1) / warmup)
  WarmupCosine,  // warm-up, then a cosine decay to lr / 20 at the last step (tools/train_common.py)
  Noam,  // lr · d_model^-0.5 · min((t + 1)^-0.5, (t + 1) · warmup^-1.5) (Annotated Transformer)
};
const char* scheduleName(Schedule s);  // "constant", "warmup", "warmup-cosine", "noam"
Schedule scheduleFromName(const std::string& name);  // throws Error(Usage)

struct OptimizerOptions {
  bool decoupled = false;  // AdamW (decoupled weight decay) instead of Adam
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.98f;  // the translation tutorials' betas
  float eps = 1e-9f;
  float weight_decay = 0.0f;
  float clip = 1.0f;  // the gradients' global norm is clipped to this; 0 = no clipping
  Schedule schedule = Schedule::WarmupCosine;
  int warmup = 0;       // steps
  int total_steps = 0;  // for the cosine decay
};

// The learning rate of step t (0-based) under the options' schedule.
float learningRate(const OptimizerOptions& o, int t, int d_model);

class Optimizer {
 public:
  // Keeps the first and second moments (two arrays as large as the parameters) on the model's
  // backend.
  Optimizer(Training& training, const OptimizerOptions& options);
  ~Optimizer();
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  struct StepInfo {
    float lr = 0;
    double grad_norm = 0;  // before clipping
  };
  // One update from the model's gradients (which it leaves as they are).
  StepInfo step();
  int steps() const { return t_; }
  const OptimizerOptions& options() const { return options_; }

 private:
  Training& training_;
  OptimizerOptions options_;
  BufferPtr m_, v_;  // [n_params]
  int t_ = 0;
};

}  // namespace attnviz

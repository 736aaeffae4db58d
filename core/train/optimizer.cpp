#include "train/optimizer.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "train/training.h"

namespace attnviz {

const char* scheduleName(Schedule s) {
  switch (s) {
    case Schedule::Constant:
      return "constant";
    case Schedule::Warmup:
      return "warmup";
    case Schedule::WarmupCosine:
      return "warmup-cosine";
    case Schedule::Noam:
      return "noam";
  }
  return "?";
}

Schedule scheduleFromName(const std::string& name) {
  for (Schedule s : {Schedule::Constant, Schedule::Warmup, Schedule::WarmupCosine, Schedule::Noam})
    if (name == scheduleName(s)) return s;
  throw Error(ErrorKind::Usage, "unknown learning-rate schedule \"" + name +
                                    "\" (constant, warmup, warmup-cosine or noam)");
}

float learningRate(const OptimizerOptions& o, int t, int d_model) {
  const double step = t + 1.0, warmup = std::max(o.warmup, 1);
  switch (o.schedule) {
    case Schedule::Constant:
      return o.lr;
    case Schedule::Warmup:
      return (float)(o.lr * std::min(1.0, step / warmup));
    case Schedule::WarmupCosine: {
      if (t < o.warmup) return (float)(o.lr * step / warmup);
      const double p =
          std::min(1.0, (double)(t - o.warmup) / std::max(1, o.total_steps - o.warmup));
      const double floor = o.lr / 20.0;
      return (float)(floor + (o.lr - floor) * 0.5 * (1.0 + std::cos(3.14159265358979323846 * p)));
    }
    case Schedule::Noam:
      return (float)(o.lr / std::sqrt((double)d_model) *
                     std::min(1.0 / std::sqrt(step), step * std::pow(warmup, -1.5)));
  }
  return o.lr;
}

Optimizer::Optimizer(Training& training, const OptimizerOptions& options)
    : training_(training), options_(options) {
  const size_t bytes = (size_t)std::max<int64_t>(training.parameterCount(), 1) * sizeof(float);
  m_ = training.model().backend().allocate(bytes);
  v_ = training.model().backend().allocate(bytes);
}

Optimizer::~Optimizer() = default;

Optimizer::StepInfo Optimizer::step() {
  Backend& be = training_.model().backend();
  StepInfo info;
  info.lr = learningRate(options_, t_, training_.model().config().d_model);
  info.grad_norm = training_.gradientNorm();
  ++t_;
  AdamStep s;
  s.lr = info.lr;
  s.beta1 = options_.beta1;
  s.beta2 = options_.beta2;
  s.eps = options_.eps;
  s.weight_decay = options_.weight_decay;
  s.decoupled = options_.decoupled;
  s.bias_correction1 = 1.0f - std::pow(options_.beta1, (float)t_);
  s.bias_correction2 = 1.0f - std::pow(options_.beta2, (float)t_);
  // torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), clamped to 1.
  if (options_.clip > 0)
    s.grad_scale = std::min(1.0f, options_.clip / ((float)info.grad_norm + 1e-6f));
  be.adamw_update(training_.parameters(), training_.gradients(), m_->f32(), v_->f32(),
                  training_.parameterCount(), s);
  return info;
}

}  // namespace attnviz

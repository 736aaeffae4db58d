// Writing a model as a safetensors file under its architecture's tensor names (the first spelling
// of each role in its descriptor, architectures.h), with its config in
// __metadata__["attnviz_config"]: what the Train view and `attnviz-cli train` save, readable by
// loadModel and by the tutorial's own PyTorch class (load_state_dict). The descriptors marked
// writable are saved; today the two the Train view creates: pytorch-nn-transformer (PyTorch's
// translation tutorial, the nn.Transformer students meet first) and nanogpt (its language models).
#pragma once

#include <string>

#include "arch/weights.h"

namespace attnviz {

// Whether saveModel can write this config's family and class.
bool canSaveModel(const ModelConfig& config);
// Writes model (config and weights) to path. Throws Error(BadInput) for a family it cannot write,
// Error(Io) when the file cannot be written.
void saveModel(const LoadedModel& model, const std::string& path);

}  // namespace attnviz

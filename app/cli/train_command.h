// `attnviz-cli train`: trains a Transformer on a task (core/trainer.h), with progress on stderr, a
// JSON log of loss and accuracy, and the trained model saved as safetensors with its config.
#pragma once

#include <string>
#include <vector>

namespace attnviz::cli {

// args: the options after "train". Returns the exit code; throws Error(Usage) for bad options.
int runTrain(const std::vector<std::string>& args);
// The command's lines for the usage text.
std::string trainUsage();

}  // namespace attnviz::cli

// A decoder-only model's prompt that is longer than the model's positions, cut as nanoGPT's
// sample.py cuts its context (idx[:, -block_size:]): the start token, when the model has one, and
// the last tokens that fit. Offered, never done silently: the CLI's --crop and the GUI's "Keep the
// last N tokens" say how many were dropped.
#pragma once

#include <string>
#include <vector>

#include "model/model.h"

namespace attnviz {

struct Prompt {
  std::vector<int> ids;  // the start token (if any) and the tokens kept
  int tokens = 0;        // the prompt's tokens, the start token not counted
  int kept = 0;          // of those, the last `kept` are in ids
  bool cropped() const { return kept < tokens; }
};

// The prompt's ids, its last tokens only when the whole does not fit the model's positions.
// Throws Error(BadInput) as Model::encodeTarget does for an empty or unreadable prompt.
Prompt cropPrompt(const Model& model, std::vector<int> ids);
Prompt encodePrompt(const Model& model, const std::string& text);

// The kept tokens as text to type again (the start token left out): the tokenizer's decoding, or
// a word vocabulary's words between spaces.
std::string promptText(const Model& model, const Prompt& prompt);

}  // namespace attnviz

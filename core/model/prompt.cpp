#include "model/prompt.h"

#include <algorithm>

#include "base/error.h"
#include "text/tokenizer.h"

namespace attnviz {

Prompt cropPrompt(const Model& model, std::vector<int> ids) {
  const ModelConfig& c = model.config();
  const bool start = c.bos_id >= 0 && !ids.empty() && ids.front() == c.bos_id;
  Prompt p;
  p.tokens = (int)ids.size() - (start ? 1 : 0);
  const int room = std::max(0, model.maxPositions() - (start ? 1 : 0));
  p.kept = std::min(p.tokens, room);
  if (p.kept < p.tokens) {
    std::vector<int> kept(start ? 1 : 0, c.bos_id);
    kept.insert(kept.end(), ids.end() - p.kept, ids.end());
    ids = std::move(kept);
  }
  p.ids = std::move(ids);
  return p;
}

Prompt encodePrompt(const Model& model, const std::string& text) {
  const ModelConfig& c = model.config();
  if (!c.hasDecoder() || c.hasCross()) return cropPrompt(model, model.encodeTarget(text));
  const bool blank = text.find_first_not_of(" \t\r\n") == std::string::npos;
  if (blank) return cropPrompt(model, model.encodeTarget(text));  // its own message
  // The whole prompt, however long (the text itself is bounded by the tokenizer's limits).
  std::vector<int> words = model.loaded().tokenizer
                               ? model.loaded().tokenizer->encodeTarget(text)
                               : model.tgtVocab().encode(text, ConfigLimits::kMaxLen);
  std::vector<int> ids;
  if (c.bos_id >= 0) ids.push_back(c.bos_id);
  if (!words.empty() && !ids.empty() && words.front() == c.bos_id) words.erase(words.begin());
  ids.insert(ids.end(), words.begin(), words.end());
  return cropPrompt(model, std::move(ids));
}

std::string promptText(const Model& model, const Prompt& prompt) {
  const ModelConfig& c = model.config();
  std::vector<int> ids = prompt.ids;
  if (!ids.empty() && c.bos_id >= 0 && ids.front() == c.bos_id) ids.erase(ids.begin());
  if (model.loaded().tokenizer) return model.loaded().tokenizer->decode(Side::Target, ids);
  std::string text;
  for (int id : ids) text += (text.empty() ? "" : " ") + model.tgtVocab().token(id);
  return text;
}

}  // namespace attnviz

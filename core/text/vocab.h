// Word-level tokenizing with a model's vocabularies: whitespace-separated words to ids and back,
// with clear errors for empty input, unknown words, control characters and over-long sentences.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

namespace attnviz {

// Which of a model's two sequences (and vocabularies) a thing belongs to: the source, read by the
// encoder, or the target, read and written by the decoder.
enum class Side { Source, Target };

// Hard limits that keep a hostile vocabulary from asking for absurd allocations.
struct VocabularyLimits {
  static constexpr int kMaxTokens = 1 << 20;   // tokens per vocabulary
  static constexpr int kMaxTokenBytes = 1024;  // bytes per token string
};

class Vocabulary {
 public:
  Vocabulary() = default;
  // Throws Error(BadVocabulary) on empty or duplicate tokens; `what` names it ("source
  // vocabulary").
  Vocabulary(std::vector<std::string> tokens, int unk_id, std::string what);

  int size() const { return static_cast<int>(tokens_.size()); }
  const std::string& token(int id) const;  // "<id N?>" for ids out of range
  int id(const std::string& token) const;  // -1 if absent
  int unkId() const { return unk_id_; }
  const std::vector<std::string>& tokens() const { return tokens_; }

  // Splits on whitespace and maps to ids. Throws Error(BadInput) naming the first problem.
  // max_tokens: the longest sentence allowed (the model's max_len, less room for BOS).
  std::vector<int> encode(const std::string& sentence, int max_tokens) const;
  std::vector<std::string> decode(const std::vector<int>& ids) const;
  // The words of `sentence` (split as encode() splits it) that are not in the vocabulary, each
  // once, in the order they first appear. With an unk id, encode() maps them to it silently; the
  // GUI names them.
  std::vector<std::string> unknownWords(const std::string& sentence) const;

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int> index_;
  int unk_id_ = -1;
  std::string what_;
};

// Parses "5,1,3" (or "5 1 3", one a line, …: commas or white space between entries) into ids,
// each checked against [0, vocab_size). Throws Error(BadInput) naming `what`.
std::vector<int> parseIdList(const std::string& text, int vocab_size, const std::string& what);

}  // namespace attnviz

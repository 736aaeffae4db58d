// A model's own subword tokenizer, used instead of word-level vocabulary lookup when a model comes
// with one (a Hugging Face folder's SentencePiece models or byte-level BPE files): text to ids with
// the markers the model was trained with, and ids back to text.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "text/vocab.h"

namespace attnviz {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // What it is and which files it reads, for the model's notes: "SentencePiece (source.spm, …)".
  virtual std::string describe() const = 0;
  // A source sentence's ids with the markers the model's tokenizer adds (Marian: pieces </s>;
  // BART: <s> pieces </s>). Throws Error(BadInput) for text that is empty, not UTF-8 or holds
  // control characters.
  virtual std::vector<int> encodeSource(const std::string& text) const = 0;
  // A target prefix's ids, to follow the decoder's start token: the pieces (BART: <s> first, as
  // its labels begin), no end marker.
  virtual std::vector<int> encodeTarget(const std::string& text) const = 0;
  // The text the ids spell (markers and padding dropped, pieces joined).
  virtual std::string decode(Side side, const std::vector<int>& ids) const = 0;
};

// Throws Error(BadInput) when text cannot be a sentence: longer than kMaxSentenceBytes, not valid
// UTF-8, control characters, or nothing but whitespace. `what` names it ("the sentence").
constexpr size_t kMaxSentenceBytes = 64 * 1024;
void checkSentenceText(const std::string& text, const std::string& what);

}  // namespace attnviz

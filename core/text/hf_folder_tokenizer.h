// The tokenizer of a Hugging Face model folder, found by its config.json's model_type: the files
// each kind of folder holds (GPT-2's vocab.json + merges.txt, BERT's vocab.txt, a Llama-family
// tokenizer.json or tokenizer.model), opened with the vocabulary they define.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace attnviz {

struct HfFolderTokenizer {
  std::shared_ptr<const Tokenizer> tokenizer;  // null when the folder has none of the files
  std::vector<std::string> tokens;  // its vocabulary, index = id; empty with no tokenizer
  int unk_id = -1;                  // the unknown token's id, -1 when there is none
  // What the tokenizer puts before a sentence itself (BERT: [CLS]; a Llama tokenizer.json's
  // template or tokenizer.model: <s>; GPT-2 and SmolLM: nothing), so that the model's own start
  // id is not added twice, nor where the tokenizer adds none.
  std::vector<int> prefix_ids;
  std::string files;  // what was read: "vocab.json + merges.txt"
};

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
HfFolderTokenizer openHfFolderTokenizer(const std::string& folder, const std::string& model_type,
                                        int bos_id, std::vector<std::string>* notes);

}  // namespace attnviz

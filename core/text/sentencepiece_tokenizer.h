// SentencePiece tokenizers, run through Debian's libsentencepiece: Marian's (a Hugging Face
// folder's source.spm and target.spm, pieces mapped to the model's ids through its vocabulary,
// vocab.json, shared by both sides unless the folder has target_vocab.json) and a decoder-only
// model's one tokenizer.model whose piece ids are the model's ids (Llama, llama2.c, TinyLlama).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace attnviz {

struct MarianTokenizerFiles {
  std::string source_spm, target_spm;             // paths
  std::vector<std::string> src_vocab, tgt_vocab;  // the model's tokens, index = id
  int src_unk_id = -1, tgt_unk_id = -1;           // pieces not in the vocabulary map here
  int eos_id = 0, pad_id = -1;                    // </s> (appended to the source), <pad>
};

// Whether this build has SentencePiece (libsentencepiece-dev at build time).
bool sentencePieceAvailable();
// Loads both models. Throws Error(Io / BadVocabulary) naming the file; Error(BadConfig) when this
// build has no SentencePiece.
std::shared_ptr<const Tokenizer> openMarianTokenizer(const MarianTokenizerFiles& files);

struct SentencePieceModelFiles {
  std::string model;  // path of tokenizer.model
  // What encoding adds, as the model states it (config.json's bos_token_id / eos_token_id;
  // llama2.c's tokenizer.model: 1 and 2): the start id before every sentence and prompt (Llama's
  // tokenizer and llama2.c's encode(bos=True)), the end id after a source sentence only. -1 = none.
  int bos_id = 1, eos_id = 2;
  bool eos_after_source = false;
};
// Loads the model. Throws Error(Io / TooLarge / BadVocabulary) naming the file; Error(BadConfig)
// when this build has no SentencePiece. The ids are the pieces' own.
std::shared_ptr<const Tokenizer> openSentencePieceModel(const SentencePieceModelFiles& files);
// The model's pieces, index = id ("<unk>", "<s>", "</s>", "<0x00>" …, "▁the" …): the vocabulary of
// a model trained with it. Same errors.
std::vector<std::string> readSentencePiecePieces(const std::string& path);

}  // namespace attnviz

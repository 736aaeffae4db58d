// Marian's tokenizer: SentencePiece models for each side (a Hugging Face folder's source.spm and
// target.spm, run through Debian's libsentencepiece), pieces mapped to the model's ids through its
// vocabulary (vocab.json, shared by both sides unless the folder has target_vocab.json).
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

}  // namespace attnviz

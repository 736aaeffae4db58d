// BERT's tokenizer: WordPiece over a vocab.txt, as Hugging Face's BertTokenizer splits text —
// special tokens typed as text ("[MASK]") kept whole, then the BasicTokenizer (control characters
// dropped, whitespace cleaned, CJK characters split, lower case and accents stripped when asked,
// punctuation split) and the WordpieceTokenizer (greedy longest match first, "##" inside a word,
// [UNK] for a word with no split or over 100 characters); a sentence is [CLS] … [SEP].
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace attnviz {

struct WordPieceOptions {
  std::vector<std::string> vocab;     // vocab.txt's tokens, index = id
  bool do_lower_case = true;          // BertTokenizer's default (bert-base-cased says false)
  std::optional<bool> strip_accents;  // unset: as do_lower_case
  bool tokenize_chinese_chars = true;
  std::string unk_token = "[UNK]", sep_token = "[SEP]", pad_token = "[PAD]", cls_token = "[CLS]",
              mask_token = "[MASK]";
};

// Throws Error(BadVocabulary) when the vocabulary lacks [UNK], [CLS] or [SEP] (by the names given).
std::shared_ptr<const Tokenizer> openWordPiece(const WordPieceOptions& options);

// The options a folder's tokenizer_config.json states (do_lower_case, strip_accents,
// tokenize_chinese_chars, the special tokens as strings or {"content": …}); BertTokenizer's
// defaults for what it does not say or when there is no such file (a note says so). Throws
// Error(InvalidJson / BadConfig) naming the key of a wrong type.
WordPieceOptions wordPieceOptionsFromFolder(const std::string& folder,
                                            std::vector<std::string> vocab,
                                            std::vector<std::string>* notes);

// The BasicTokenizer alone: the words and punctuation `text` splits into before WordPiece (tests).
std::vector<std::string> bertBasicTokenize(const std::string& text, bool do_lower_case,
                                           bool strip_accents, bool tokenize_chinese_chars);

}  // namespace attnviz

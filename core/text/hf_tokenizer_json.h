// Hugging Face's tokenizer.json (the "fast" tokenizers' one file) for Llama-family folders: a BPE
// model (vocab + merges) behind either GPT-2's byte-level pre-tokenizer (SmolLM; Llama 3 and Qwen2
// with their Split pattern) or SentencePiece's conventions ("▁" for spaces, byte fallback "<0x0A>":
// TinyLlama, Llama 2), with the added tokens, the template that adds <s>, and the decoder. What
// the file asks for that attnviz does not implement is refused, naming it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace attnviz {

struct TokenizerJson {
  std::shared_ptr<const Tokenizer> tokenizer;
  // Every id's token, index = id: the model's vocabulary and the added tokens (ids that neither
  // names, if any, are "<unused N>").
  std::vector<std::string> tokens;
  int unk_id = -1;  // the model's unk_token, -1 when it has none
  // The ids the post-processor's template puts before and after a sentence ([<s>] and [] for
  // Llama 2; none for SmolLM).
  std::vector<int> prefix_ids, suffix_ids;
};

// Reads and checks the whole file. Supported (anything else is refused with Error(BadConfig)
// naming the component and what is supported):
// - model: BPE (vocab, merges as "a b" strings or [a, b] pairs, unk_token, fuse_unk,
//   byte_fallback, ignore_merges, continuing_subword_prefix, end_of_word_suffix; dropout is not
//   applied);
// - normalizer: null, Sequence, Prepend, Replace (a string pattern), Strip;
// - pre_tokenizer: null, Sequence, ByteLevel, Metaspace, Digits, WhitespaceSplit, Split (its
//   regex run by Oniguruma under limits, text/onig_regex.h; every behavior, invert);
// - post_processor: null, TemplateProcessing, ByteLevel, BertProcessing, RobertaProcessing,
//   Sequence of these;
// - decoder (decode() only): ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, Sequence.
// Added tokens typed in the text are recognised (leftmost, longest, by one automaton;
// lstrip/rstrip honoured), as tokenizers does. A sentence may become at most 1 MiB through the
// normalizers and 2^18 ids, else Error(BadInput). Hostile files: over 64 MiB, more than 2^20
// entries in any list or object (a vocabulary or merges table), a merge whose parts or result the
// vocabulary lacks, ids out of range or repeated — Error(TooLarge / BadVocabulary / InvalidJson)
// naming the file and entry, before memory is spent on them.
TokenizerJson readTokenizerJson(const std::string& path);

}  // namespace attnviz

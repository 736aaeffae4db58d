// The merge step of byte-pair encoding, shared by GPT-2's and BART's files (merges.txt, vocab.bpe)
// and tokenizer.json's BPE model: a table (left id, right id) → (rank, merged id), applied to a
// word's symbols lowest rank first, as Hugging Face's tokenizers and GPT-2's encoder.py merge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace attnviz {

class BpeMerges {
 public:
  // Hugging Face's largest tables hold about 300,000 merges (Llama 3: 280,147); more is no
  // tokenizer a model was trained with, and each costs about 50 bytes here.
  static constexpr size_t kMaxMerges = size_t(1) << 20;

  // Sets (left, right) → merged at `rank` (the merge's line or entry, counted from 0); a pair
  // given again takes its later rank, as GPT-2's encoder.py, gpt-3-encoder and tokenizers do.
  void set(int left, int right, int merged, int rank);
  size_t size() const { return table_.size(); }

  // Merges `ids` (a word's symbols; -1 for a symbol outside the vocabulary, which never merges)
  // in place: the adjacent pair of lowest rank first, the leftmost of equal ranks, until no pair
  // has a rank. O(n log n) in the word's length.
  void apply(std::vector<int>& ids) const;

 private:
  struct Merge {
    int rank, merged;
  };
  static uint64_t key(int left, int right) {
    return (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
  }
  const Merge* find(int left, int right) const;
  std::unordered_map<uint64_t, Merge> table_;
};

}  // namespace attnviz

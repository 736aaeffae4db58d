// Regular expressions of tokenizer.json (the Split pre-tokenizer's pattern, GPT-2's pattern) run by
// Oniguruma, the engine Hugging Face's tokenizers run them with, so a pattern means the same thing:
// its syntax, its \p{L} and \s, its case folding. Every search runs under limits (backtracking
// steps, stack depth, a time budget per sentence) so that no pattern can hang the app.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace attnviz {

// The limits every search runs under, and what one sentence may spend on all of its searches.
struct RegexLimits {
  static constexpr size_t kMaxPatternBytes = 4096;  // Llama 3's pattern is 0.1 KiB
  // Backtracking steps of one search (Oniguruma's retry limit in search) and of one match attempt
  // at one position (its retry limit in match, Oniguruma's default and Hugging Face's).
  static constexpr unsigned long kRetriesPerSearch = 20'000'000;
  static constexpr unsigned long kRetriesPerMatch = 10'000'000;
  static constexpr unsigned kStackEntries = 1u << 22;  // the backtracking stack, 4 Mi entries
  static constexpr std::chrono::milliseconds kSentenceBudget{3000};
};

// The time one sentence may spend in searches, shared by all the regexes it goes through.
class RegexBudget {
 public:
  RegexBudget() : deadline_(std::chrono::steady_clock::now() + RegexLimits::kSentenceBudget) {}
  bool spent() const { return std::chrono::steady_clock::now() > deadline_; }

 private:
  std::chrono::steady_clock::time_point deadline_;
};

class OnigPattern {
 public:
  // Compiles `pattern` (UTF-8, Oniguruma's default syntax, no options: what tokenizers' SysRegex
  // does). `literal`: the pattern is a string matched as it is (Split's {"String": …}). Throws
  // Error(BadConfig) naming `where`, the pattern and Oniguruma's message when it does not compile,
  // is longer than kMaxPatternBytes or not UTF-8.
  OnigPattern(const std::string& pattern, bool literal, const std::string& where);
  ~OnigPattern();
  OnigPattern(const OnigPattern&) = delete;
  OnigPattern& operator=(const OnigPattern&) = delete;

  // Every match in `text` (valid UTF-8) as [begin, end) byte offsets, as Rust onig's find_iter
  // finds them: each search starts where the last match ended, and an empty match right where the
  // last one ended is skipped by one character. Throws Error(BadInput) naming the pattern when a
  // search hits a limit or the sentence's budget is spent.
  std::vector<std::pair<size_t, size_t>> findAll(const std::string& text,
                                                 RegexBudget& budget) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string pattern_, where_;
};

}  // namespace attnviz

#include "text/onig_regex.h"

#include <oniguruma.h>

#include <algorithm>
#include <mutex>

#include "base/error.h"
#include "base/json_safe.h"
#include "base/safe_text.h"

namespace attnviz {

namespace {

// Limits that hold for every regex of the process, set once with the engine: the nesting of
// groups a pattern may have (real tokenizer patterns nest two deep) and its capture groups.
void initOniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
    onig_set_parse_depth_limit(64);
    onig_set_capture_num_limit(256);
    onig_set_subexp_call_max_nest_level(16);
  });
}

std::string onigMessage(int code, OnigErrorInfo* info) {
  OnigUChar buf[ONIG_MAX_ERROR_MESSAGE_LEN];
  if (info)
    onig_error_code_to_str(buf, code, info);
  else
    onig_error_code_to_str(buf, code);
  return reinterpret_cast<const char*>(buf);
}

// One search's limits; `retries`: its retry limit in search.
struct MatchParam {
  OnigMatchParam* p = onig_new_match_param();
  explicit MatchParam(unsigned long retries) {
    if (!p) throw Error(ErrorKind::TooLarge, "Oniguruma could not allocate its match parameters");
    onig_initialize_match_param(p);
    onig_set_retry_limit_in_search_of_match_param(p, retries);
    onig_set_retry_limit_in_match_of_match_param(p,
                                                 std::min(retries, RegexLimits::kRetriesPerMatch));
    onig_set_match_stack_limit_size_of_match_param(p, RegexLimits::kStackEntries);
  }
  ~MatchParam() { onig_free_match_param(p); }
};

struct Region {
  OnigRegion* r = onig_region_new();
  Region() {
    if (!r) throw Error(ErrorKind::TooLarge, "Oniguruma could not allocate a match region");
  }
  ~Region() { onig_region_free(r, 1); }
};

// Texts that make a pattern which backtracks catastrophically show it at once: runs of one kind
// of character (letters, digits, spaces, punctuation, a newline, a non-ASCII letter) ended by a
// character of another kind.
std::vector<std::string> probeTexts() {
  const char* runs[] = {"a", "A", "1", " ", "!", "\n", "\xC3\xA9", "ab", "a ", "'s"};
  const char* ends[] = {"", "!", "a", "1", " ", "\n", "\xE4\xB8\xAD"};
  std::vector<std::string> out;
  for (const char* run : runs)
    for (const char* end : ends) {
      std::string s;
      while (s.size() < 48) s += run;
      out.push_back(s + end);
    }
  return out;
}

constexpr unsigned long kProbeRetries = 1'000'000;  // a pattern needs far fewer on 50 characters

// Every match of `reg` in `text` as Rust onig's find_iter finds them (see findAll), each search
// under `retries`; returns Oniguruma's error code (< 0) when one hits a limit, else 0. `spent` is
// asked before each search.
template <class Spent>
int searchAll(OnigRegex reg, const std::string& text, unsigned long retries, Spent spent,
              std::vector<std::pair<size_t, size_t>>& out, size_t& failed_at) {
  Region region;
  MatchParam mp(retries);
  const auto* s = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = s + text.size();
  size_t last_end = 0, last_match_end = 0;
  bool matched = false;
  while (last_end <= text.size()) {
    spent();
    const int r =
        onig_search_with_param(reg, s, end, s + last_end, end, region.r, ONIG_OPTION_NONE, mp.p);
    if (r == ONIG_MISMATCH) break;
    if (r < 0) {
      failed_at = last_end;
      return r;
    }
    const size_t b = (size_t)region.r->beg[0], e = (size_t)region.r->end[0];
    if (b == e && matched && last_match_end == e) {
      // An empty match where the last one ended: step over one character and search again.
      const size_t len = last_end < text.size() ? utf8SequenceAt(text, last_end) : 1;
      last_end += len ? len : 1;
      continue;
    }
    last_end = e;
    last_match_end = e;
    matched = true;
    out.emplace_back(b, e);
  }
  return 0;
}

}  // namespace

struct OnigPattern::Impl {
  OnigRegex reg = nullptr;
  ~Impl() {
    if (reg) onig_free(reg);
  }
};

OnigPattern::OnigPattern(const std::string& pattern, bool literal, const std::string& where)
    : impl_(std::make_unique<Impl>()), pattern_(pattern), where_(where) {
  initOniguruma();
  const std::string shown = "\"" + clipForMessage(pattern, 80) + "\"";
  if (pattern.size() > RegexLimits::kMaxPatternBytes)
    throw Error(ErrorKind::BadConfig, where + ": the pattern " + shown + " is " +
                                          std::to_string(pattern.size()) + " bytes long; at most " +
                                          std::to_string(RegexLimits::kMaxPatternBytes) +
                                          " are compiled");
  if (!isValidUtf8(pattern))
    throw Error(ErrorKind::BadConfig, where + ": the pattern " + shown + " is not valid UTF-8");
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  OnigErrorInfo info{};
  const int r = onig_new(&impl_->reg, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                         literal ? ONIG_SYNTAX_ASIS : ONIG_SYNTAX_DEFAULT, &info);
  if (r != ONIG_NORMAL) {
    impl_->reg = nullptr;
    throw Error(ErrorKind::BadConfig, where + ": the pattern " + shown +
                                          " is not a regular expression Oniguruma compiles (" +
                                          onigMessage(r, &info) + ")");
  }
  // A pattern that backtracks catastrophically is refused now, not on the sentence it hangs on.
  for (const std::string& text : probeTexts()) {
    std::vector<std::pair<size_t, size_t>> matches;
    size_t at = 0;
    if (const int code = searchAll(
            impl_->reg, text, kProbeRetries, [] {}, matches, at);
        code < 0)
      throw Error(ErrorKind::BadConfig,
                  where + ": the pattern " + shown + " backtracks catastrophically: on the " +
                      std::to_string(text.size()) + " characters \"" + clipForMessage(text, 24) +
                      "\" Oniguruma stopped after " + std::to_string(kProbeRetries) + " steps (" +
                      onigMessage(code, nullptr) + "); a sentence would hang the app");
  }
}

OnigPattern::~OnigPattern() = default;

std::vector<std::pair<size_t, size_t>> OnigPattern::findAll(const std::string& text,
                                                            RegexBudget& budget) const {
  std::vector<std::pair<size_t, size_t>> out;
  size_t at = 0;
  auto spent = [&] {
    if (budget.spent())
      throw Error(ErrorKind::BadInput,
                  where_ + ": the pattern \"" + clipForMessage(pattern_, 60) + "\" took over " +
                      std::to_string(RegexLimits::kSentenceBudget.count()) +
                      " ms on this sentence; tokenizing stopped (the pattern backtracks too much)");
  };
  if (const int code = searchAll(impl_->reg, text, RegexLimits::kRetriesPerSearch, spent, out, at);
      code < 0)
    throw Error(ErrorKind::BadInput, where_ + ": the pattern \"" + clipForMessage(pattern_, 60) +
                                         "\" gave up on this sentence at byte " +
                                         std::to_string(at) + " (" + onigMessage(code, nullptr) +
                                         "); it backtracks catastrophically on this text");
  return out;
}

}  // namespace attnviz

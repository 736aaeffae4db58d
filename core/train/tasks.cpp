#include "train/tasks.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "arch/bundled.h"
#include "base/error.h"
#include "base/file_read.h"
#include "base/json_safe.h"

namespace attnviz {

namespace {

const std::vector<std::string> kSpecials = {"<unk>", "<pad>", "<bos>", "<eos>"};
constexpr uint64_t kHeldOutSeed = 20260101;  // the held-out sets do not depend on the run's seed
constexpr uint64_t kMaxParallelBytes = 64ull << 20;

std::string join(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

std::vector<std::string> splitWords(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

int uniformInt(std::mt19937_64& rng, int lo, int hi) {  // [lo, hi]
  return lo + (int)(rng() % (uint64_t)(hi - lo + 1));
}

template <class T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& v) {
  return v[(size_t)(rng() % v.size())];
}

double uniform01(std::mt19937_64& rng) {
  return (double)(rng() >> 11) * (1.0 / 9007199254740992.0);
}

// ---- copy, reverse, sort: sequences of digits and lower-case letters ----

class SymbolTask : public Task {
 public:
  enum class Kind { Copy, Reverse, Sort };
  SymbolTask(Kind kind, const TaskOptions& o) : kind_(kind), min_(o.min_len), max_(o.max_len) {
    if (min_ < 1 || max_ < min_ || max_ > 256)
      throw Error(ErrorKind::Usage, "sequence lengths must satisfy 1 <= min <= max <= 256 (got " +
                                        std::to_string(min_) + ".." + std::to_string(max_) + ")");
    for (char ch : std::string("0123456789abcdefghijklmnopqrstuvwxyz"))
      symbols_.push_back(std::string(1, ch));
    setVocab(symbols_, symbols_);
    std::vector<std::vector<std::string>> held;
    // The reverse task's held-out set is the bundled reverse model's (its card reports accuracy on
    // it; tools/train_compare.py reads the same file), when the models are installed.
    if (kind_ == Kind::Reverse && min_ == 3 && max_ == 12) held = bundledHeldOut("reverse");
    if (held.empty()) {
      // Lengths spread evenly over min..max, distinct sequences, from a fixed seed.
      std::mt19937_64 rng(kHeldOutSeed);
      std::set<std::string> seen;
      const int64_t distinct = countSequences();
      for (int i = 0; (int)held.size() < std::min<int64_t>(o.held_out, distinct / 10 + 1); ++i) {
        std::vector<std::string> s = randomSequence(rng, min_ + i % (max_ - min_ + 1));
        if (seen.insert(join(s)).second) held.push_back(std::move(s));
      }
    }
    for (auto& s : held) {
      held_set_.insert(join(s));
      held_out_.push_back({s, target(s)});
    }
    // Nine distinct symbols (fewer when sequences are shorter), so that every row of the
    // attention has one place to look.
    std::vector<std::string> probe =
        kind_ == Kind::Sort ? splitWords("q 3 k 9 a 7 c 1 m") : splitWords("1 2 3 4 5 6 7 8 9");
    probe.resize((size_t)std::clamp(9, min_, max_), "x");
    probe_ = {probe, target(probe)};
  }

  std::string name() const override {
    return kind_ == Kind::Copy ? "copy" : kind_ == Kind::Reverse ? "reverse" : "sort";
  }
  std::string description() const override {
    const std::string n = std::to_string(min_) + "-" + std::to_string(max_);
    switch (kind_) {
      case Kind::Copy:
        return "copy a sequence of " + n + " digits and letters (a diagonal)";
      case Kind::Reverse:
        return "reverse a sequence of " + n + " digits and letters (an anti-diagonal)";
      case Kind::Sort:
        return "sort a sequence of " + n + " digits and letters";
    }
    return "";
  }

  Example sample(std::mt19937_64& rng) const override {
    for (;;) {
      std::vector<std::string> s = randomSequence(rng, uniformInt(rng, min_, max_));
      if (!held_set_.count(join(s))) return {s, target(s)};
    }
  }
  int maxSourceLength() const override { return max_; }
  int maxTargetLength() const override { return max_; }

 private:
  Kind kind_;
  int min_, max_;
  std::vector<std::string> symbols_;
  std::set<std::string> held_set_;

  std::vector<std::string> randomSequence(std::mt19937_64& rng, int n) const {
    std::vector<std::string> s;
    for (int i = 0; i < n; ++i) s.push_back(pick(rng, symbols_));
    return s;
  }
  std::vector<std::string> target(std::vector<std::string> s) const {
    if (kind_ == Kind::Reverse) std::reverse(s.begin(), s.end());
    if (kind_ == Kind::Sort) std::sort(s.begin(), s.end());
    return s;
  }
  int64_t countSequences() const {
    int64_t n = 0, per = 1;
    for (int len = 1; len <= max_ && per < (int64_t)1 << 40; ++len) {
      per *= (int64_t)symbols_.size();
      if (len >= min_) n += per;
    }
    return n;
  }
  // The held-out sources of a bundled model (NAME.heldout.json), or none.
  static std::vector<std::vector<std::string>> bundledHeldOut(const std::string& name) {
    std::vector<std::vector<std::string>> out;
    for (const auto& dir : bundledModelDirs()) {
      const std::string path = dir + "/" + name + ".heldout.json";
      std::ifstream in(path);
      if (!in) continue;
      std::stringstream ss;
      ss << in.rdbuf();
      try {
        for (const auto& item : nlohmann::json::parse(ss.str()))
          out.push_back(splitWords(item.at("src").get<std::string>()));
      } catch (const std::exception&) {
        out.clear();
      }
      if (!out.empty()) break;
    }
    return out;
  }
};

// ---- reorder: the bundled reorder model's language (resources/models/reorder.language.json) ----

class ReorderTask : public Task {
 public:
  explicit ReorderTask(const TaskOptions& o) {
    const std::string path = findResource("reorder.language.json");
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    const nlohmann::json j = parseJsonStrict(ss.str(), path);
    try {
      for (const char* cls : {"det", "noun", "adj", "verb", "adv", "prep"})
        classes_[cls] = j.at("classes").at(cls).get<std::vector<std::string>>();
      lexicon_ = j.at("lexicon").get<std::map<std::string, std::string>>();
      subj_ = j.at("subject_marker").get<std::string>();
      obj_ = j.at("object_marker").get<std::string>();
      adj_weights_ = j.at("adjective_weights").get<std::vector<double>>();
      p_adverb_ = j.at("adverb").get<double>();
      p_prep_ = j.at("prep_phrase").get<double>();
    } catch (const std::exception& e) {
      throw Error(ErrorKind::BadConfig, path + ": not the reorder language (" + e.what() + ")");
    }
    std::vector<std::string> src, tgt{subj_, obj_};
    for (const auto& [s, t] : lexicon_) {
      src.push_back(s);
      tgt.push_back(t);
    }
    setVocab(src, tgt);
    // The bundled model's held-out sentences, else fresh ones from a fixed seed.
    std::set<std::string> seen;
    const std::string held_path = findResource("reorder.heldout.json", false);
    if (!held_path.empty()) {
      std::ifstream hin(held_path);
      std::stringstream hs;
      hs << hin.rdbuf();
      for (const auto& item : nlohmann::json::parse(hs.str(), nullptr, false)) {
        if (!item.is_object() || !item.contains("src") || !item.contains("tgt")) continue;
        Example e{splitWords(item["src"].get<std::string>()),
                  splitWords(item["tgt"].get<std::string>())};
        if (seen.insert(join(e.src)).second) held_out_.push_back(std::move(e));
      }
    }
    std::mt19937_64 rng(kHeldOutSeed);
    while ((int)held_out_.size() < o.held_out) {
      Example e = generate(rng);
      if (seen.insert(join(e.src)).second) held_out_.push_back(std::move(e));
    }
    held_out_.resize((size_t)std::min<int>((int)held_out_.size(), o.held_out));
    for (const auto& e : held_out_) held_set_.insert(join(e.src));
    probe_ = held_out_.front();
  }

  std::string name() const override { return "reorder"; }
  std::string description() const override {
    return "translate the bundled reorder model's made-up language: verb-final, mirrored noun "
           "phrases (crossing alignments)";
  }
  Example sample(std::mt19937_64& rng) const override {
    for (;;) {
      Example e = generate(rng);
      if (!held_set_.count(join(e.src))) return e;
    }
  }
  // subject (det adj adj noun) adv verb object prep pp: 3·4 + 3 words.
  int maxSourceLength() const override { return 15; }
  int maxTargetLength() const override { return 16; }

 private:
  std::map<std::string, std::vector<std::string>> classes_;
  std::map<std::string, std::string> lexicon_;
  std::string subj_, obj_;
  std::vector<double> adj_weights_;
  double p_adverb_ = 0, p_prep_ = 0;
  std::set<std::string> held_set_;

  static std::string findResource(const std::string& file, bool required = true) {
    for (const auto& dir : bundledModelDirs()) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(dir + "/" + file, ec)) return dir + "/" + file;
    }
    if (!required) return "";
    throw Error(ErrorKind::Io, "cannot find " + file +
                                   " among the bundled models (set "
                                   "ATTNVIZ_MODELS to the folder of the bundled models)");
  }

  // det adj* noun, with 0, 1 or 2 distinct adjectives.
  std::vector<std::string> nounPhrase(std::mt19937_64& rng) const {
    const double u = uniform01(rng);
    int n_adj = 0;
    for (double acc = adj_weights_[0]; n_adj < 2 && u >= acc; acc += adj_weights_[++n_adj]) {
    }
    std::vector<std::string> np{pick(rng, classes_.at("det"))};
    while ((int)np.size() < 1 + n_adj) {
      const std::string& a = pick(rng, classes_.at("adj"));
      if (std::find(np.begin(), np.end(), a) == np.end()) np.push_back(a);
    }
    np.push_back(pick(rng, classes_.at("noun")));
    return np;
  }

  // [subj] [adv] verb [obj] [prep pp]  →  subj⁻¹ ka [pp⁻¹ prep] obj⁻¹ ro [adv] verb
  // (a noun phrase⁻¹ is its words in reverse order), word for word through the lexicon.
  Example generate(std::mt19937_64& rng) const {
    const auto subj = nounPhrase(rng);
    const bool has_adv = uniform01(rng) < p_adverb_;
    const std::string adv = has_adv ? pick(rng, classes_.at("adv")) : "";
    const std::string verb = pick(rng, classes_.at("verb"));
    const auto obj = nounPhrase(rng);
    const bool has_pp = uniform01(rng) < p_prep_;
    const std::string prep = has_pp ? pick(rng, classes_.at("prep")) : "";
    const auto pp = nounPhrase(rng);
    Example e;
    auto add = [&](const std::vector<std::string>& words) {
      e.src.insert(e.src.end(), words.begin(), words.end());
    };
    auto mirrored = [&](const std::vector<std::string>& np) {
      for (auto it = np.rbegin(); it != np.rend(); ++it) e.tgt.push_back(lexicon_.at(*it));
    };
    add(subj);
    if (has_adv) e.src.push_back(adv);
    e.src.push_back(verb);
    add(obj);
    if (has_pp) {
      e.src.push_back(prep);
      add(pp);
    }
    mirrored(subj);
    e.tgt.push_back(subj_);
    if (has_pp) {
      mirrored(pp);
      e.tgt.push_back(lexicon_.at(prep));
    }
    mirrored(obj);
    e.tgt.push_back(obj_);
    if (has_adv) e.tgt.push_back(lexicon_.at(adv));
    e.tgt.push_back(lexicon_.at(verb));
    return e;
  }
};

// ---- parallel: the user's own sentence pairs ----

class ParallelTask : public Task {
 public:
  explicit ParallelTask(const TaskOptions& o) : path_(o.path) {
    if (path_.empty())
      throw Error(ErrorKind::Usage,
                  "the parallel task needs a file of \"source<TAB>target\" lines");
    const std::string text = readBoundedFile(path_, kMaxParallelBytes, "the sentence file");
    if (size_t bad = 0; !isValidUtf8(text, &bad))
      throw Error(
          ErrorKind::InvalidUtf8,
          path_ + ": not UTF-8 text (invalid byte sequence at byte " + std::to_string(bad) + ")");
    std::vector<Example> all;
    std::set<std::string> src_words, tgt_words;
    std::istringstream lines(text);
    int number = 0;
    for (std::string line; std::getline(lines, line);) {
      ++number;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      const size_t tab = line.find('\t');
      if (tab == std::string::npos)
        throw Error(ErrorKind::BadInput, path_ + " line " + std::to_string(number) +
                                             ": no tab between the source and the target (each "
                                             "line is \"source<TAB>target\")");
      Example e{splitWords(line.substr(0, tab)), splitWords(line.substr(tab + 1))};
      if (e.src.empty() || e.tgt.empty())
        throw Error(ErrorKind::BadInput, path_ + " line " + std::to_string(number) +
                                             ": the source or the target is empty");
      for (const auto& w : e.src) src_words.insert(w);
      for (const auto& w : e.tgt) tgt_words.insert(w);
      max_src_ = std::max(max_src_, (int)e.src.size());
      max_tgt_ = std::max(max_tgt_, (int)e.tgt.size());
      all.push_back(std::move(e));
    }
    if (all.size() < 2)
      throw Error(ErrorKind::BadInput,
                  path_ + ": needs at least two sentence pairs (one to train on, one held out)");
    setVocab({src_words.begin(), src_words.end()}, {tgt_words.begin(), tgt_words.end()});
    // The last lines (a tenth, at most held_out) are held out; the first is the probe.
    const size_t held = std::max<size_t>(1, std::min<size_t>(all.size() / 10, o.held_out));
    train_.assign(all.begin(), all.end() - (long)held);
    held_out_.assign(all.end() - (long)held, all.end());
    probe_ = held_out_.front();
  }

  std::string name() const override { return "parallel"; }
  std::string description() const override {
    return "translate the sentence pairs of " + std::filesystem::path(path_).filename().string() +
           " (" + std::to_string(train_.size()) + " to train on, " +
           std::to_string(held_out_.size()) + " held out)";
  }
  Example sample(std::mt19937_64& rng) const override { return pick(rng, train_); }
  int maxSourceLength() const override { return max_src_; }
  int maxTargetLength() const override { return max_tgt_; }

 private:
  std::string path_;
  std::vector<Example> train_;
  int max_src_ = 0, max_tgt_ = 0;
};

}  // namespace

void Task::setVocab(std::vector<std::string> src_words, std::vector<std::string> tgt_words) {
  auto build = [](std::vector<std::string> words) {
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    std::vector<std::string> v = kSpecials;
    for (auto& w : words)
      if (std::find(kSpecials.begin(), kSpecials.end(), w) == kSpecials.end()) v.push_back(w);
    return v;
  };
  src_vocab_ = build(std::move(src_words));
  tgt_vocab_ = build(std::move(tgt_words));
}

namespace {
std::vector<int> toIds(const std::vector<std::string>& vocab,
                       const std::vector<std::string>& words) {
  std::vector<int> ids;
  for (const auto& w : words) {
    auto it = std::lower_bound(vocab.begin() + 4, vocab.end(), w);
    ids.push_back(it != vocab.end() && *it == w ? (int)(it - vocab.begin()) : Task::kUnk);
  }
  return ids;
}
}  // namespace

std::vector<int> Task::srcIds(const std::vector<std::string>& words) const {
  return toIds(src_vocab_, words);
}

std::vector<int> Task::tgtIds(const std::vector<std::string>& words) const {
  return toIds(tgt_vocab_, words);
}

// ---- induction: a random sequence, then the same again (a decoder-only language model) ----

// The second copy is predictable only by looking back: find the earlier occurrence of the current
// symbol and copy the one after it — what an induction head does (Olsson et al. 2022).
class InductionTask : public Task {
 public:
  explicit InductionTask(const TaskOptions& o) : min_(o.min_len), max_(o.max_len) {
    if (min_ < 2 || max_ < min_ || max_ > 128)
      throw Error(ErrorKind::Usage,
                  "the induction task repeats a sequence of min_len to max_len symbols: "
                  "2 <= min <= max <= 128 (got " +
                      std::to_string(min_) + ".." + std::to_string(max_) + ")");
    for (char ch : std::string("0123456789abcdefghijklmnopqrstuvwxyz"))
      symbols_.push_back(std::string(1, ch));
    setVocab({}, symbols_);
    // 36^L sequences: a training draw equals a held-out one with negligible probability.
    std::mt19937_64 rng(kHeldOutSeed);
    for (int i = 0; i < o.held_out; ++i) held_out_.push_back(sample(rng));
    std::vector<std::string> probe = splitWords("q 3 k 9 a 7 c 1 m x 5 t");
    probe.resize((size_t)max_, "z");
    probe_ = {{}, twice(probe)};
  }
  std::string name() const override { return "induction"; }
  std::string description() const override {
    return "continue a sequence of " + std::to_string(min_) + "-" + std::to_string(max_) +
           " random digits and letters seen earlier (an induction head)";
  }
  bool decoderOnly() const override { return true; }
  // The second copy's tokens after its first: those an induction head predicts. The copy is the
  // longest suffix that repeats the tokens just before it.
  int firstScored(const Example& e) const override {
    const int n = (int)e.tgt.size();
    for (int L = n / 2; L >= 1; --L)
      if (std::equal(e.tgt.end() - 2 * L, e.tgt.end() - L, e.tgt.end() - L)) return n - L + 1;
    return n;
  }
  // A random prefix of 0 to max symbols, then a sequence of min to max symbols, then the same
  // sequence again. The prefix and the length vary, so that no position or offset finds the
  // earlier copy: the model has to find the earlier occurrence of the current symbol by content.
  Example sample(std::mt19937_64& rng) const override {
    std::vector<std::string> prefix, s;
    const int p = uniformInt(rng, 0, max_), n = uniformInt(rng, min_, max_);
    for (int i = 0; i < p; ++i) prefix.push_back(pick(rng, symbols_));
    for (int i = 0; i < n; ++i) s.push_back(pick(rng, symbols_));
    std::vector<std::string> tgt = twice(s);
    tgt.insert(tgt.begin(), prefix.begin(), prefix.end());
    return {{}, tgt};
  }
  int maxSourceLength() const override { return 0; }
  int maxTargetLength() const override { return 3 * max_; }

 private:
  int min_, max_;
  std::vector<std::string> symbols_;

  static std::vector<std::string> twice(const std::vector<std::string>& s) {
    std::vector<std::string> out = s;
    out.insert(out.end(), s.begin(), s.end());
    return out;
  }
};

std::vector<std::string> taskNames() {
  return {"copy", "reverse", "sort", "reorder", "parallel", "induction"};
}

std::unique_ptr<Task> makeTask(const std::string& name, const TaskOptions& options) {
  if (name == "copy") return std::make_unique<SymbolTask>(SymbolTask::Kind::Copy, options);
  if (name == "reverse") return std::make_unique<SymbolTask>(SymbolTask::Kind::Reverse, options);
  if (name == "sort") return std::make_unique<SymbolTask>(SymbolTask::Kind::Sort, options);
  if (name == "reorder") return std::make_unique<ReorderTask>(options);
  if (name == "parallel") return std::make_unique<ParallelTask>(options);
  if (name == "induction") return std::make_unique<InductionTask>(options);
  throw Error(ErrorKind::Usage, "unknown task \"" + name +
                                    "\" (copy, reverse, sort, reorder, parallel or induction)");
}

}  // namespace attnviz

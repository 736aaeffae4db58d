#include "model/atlas.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "arch/bundled.h"
#include "base/error.h"
#include "base/file_read.h"
#include "base/json_safe.h"
#include "model/circuits.h"
#include "model/decoding.h"
#include "model/pca.h"

namespace attnviz {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// s without the spaces (and carriage returns) at its ends; `tabs` trims tabs too.
std::string trimmed(std::string_view s, bool tabs = true) {
  const char* space = tabs ? " \t\r\v\f" : " \r\v\f";
  const size_t a = s.find_first_not_of(space);
  if (a == std::string_view::npos) return {};
  return std::string(s.substr(a, s.find_last_not_of(space) - a + 1));
}

}  // namespace

// ---- the corpus ----

Corpus readCorpusFile(const std::string& path, uint64_t max_bytes) {
  std::string text = readBoundedFile(path, max_bytes, "the corpus");
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    throw Error(ErrorKind::BadInput, path + ": not a text file (a NUL byte at byte " +
                                         std::to_string(nul) +
                                         "); a corpus is UTF-8 text, one sentence a line");
  size_t from = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a byte-order mark
  Corpus c;
  c.origin = path;
  int line = 0, lines_with_text = 0;
  while (from < text.size()) {
    size_t end = text.find('\n', from);
    if (end == std::string::npos) end = text.size();
    const std::string_view raw(text.data() + from, end - from);
    from = end + 1;
    ++line;
    const std::string whole = trimmed(raw, false);  // a tab at the end still makes a pair
    if (whole.empty()) {
      ++c.empty_lines;
      continue;
    }
    ++lines_with_text;
    if (!isValidUtf8(whole)) {
      c.invalid_utf8_lines.push_back(line);
      continue;
    }
    CorpusEntry e;
    e.line = line;
    if (const size_t tab = whole.find('\t'); tab != std::string::npos) {
      e.src = trimmed(std::string_view(whole).substr(0, tab));
      e.tgt = trimmed(std::string_view(whole).substr(tab + 1));
      e.has_tgt = true;
    } else {
      e.src = whole;
    }
    c.entries.push_back(std::move(e));
  }
  if (lines_with_text > 0 && 2 * c.invalid_utf8_lines.size() > size_t(lines_with_text))
    throw Error(ErrorKind::BadInput, path + ": not a UTF-8 text file (" +
                                         std::to_string(c.invalid_utf8_lines.size()) + " of its " +
                                         std::to_string(lines_with_text) + " lines are not UTF-8)");
  if (c.entries.empty())
    throw Error(ErrorKind::BadInput,
                path +
                    ": no sentence in it (a corpus is UTF-8 text, one sentence a line, or "
                    "source<TAB>target)");
  return c;
}

Corpus corpusFromExamples(const ModelConfig& config) {
  Corpus c;
  c.origin = (config.name.empty() ? std::string("the model") : config.name) + "'s examples";
  for (const ExampleInput& ex : config.examples) {
    CorpusEntry e;
    e.src = ex.src;
    // A reference translation is a teacher-forced target for an encoder-decoder; the other
    // architectures read the sentence alone.
    e.has_tgt = config.hasCross() && !ex.tgt.empty();
    if (e.has_tgt) e.tgt = ex.tgt;
    c.entries.push_back(std::move(e));
  }
  return c;
}

Corpus corpusFromHeldOut(const std::string& bundled_name) {
  for (const std::string& dir : bundledModelDirs()) {
    const std::string path = dir + "/" + bundled_name + ".heldout.json";
    std::string text;
    try {
      text = readBoundedFile(path, kMaxCorpusBytes, "the held-out set");
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Io) continue;  // not in this folder
      throw;
    }
    const nlohmann::json j = parseJsonStrict(text, path);
    Corpus c;
    c.origin = bundled_name + "'s held-out sentences";
    if (!j.is_array())
      throw Error(ErrorKind::BadInput, path + ": not a list of {\"src\", \"tgt\"} sentences");
    for (const nlohmann::json& item : j) {
      if (!item.is_object() || !item.contains("src") || !item["src"].is_string())
        throw Error(ErrorKind::BadInput, path + ": an entry without a \"src\" string");
      CorpusEntry e;
      e.src = item["src"].get<std::string>();
      if (item.contains("tgt") && item["tgt"].is_string()) {
        e.tgt = item["tgt"].get<std::string>();
        e.has_tgt = true;
      }
      c.entries.push_back(std::move(e));
    }
    return c;
  }
  throw Error(ErrorKind::Io, "the bundled model \"" + bundled_name +
                                 "\" has no held-out sentences (" + bundled_name +
                                 ".heldout.json)");
}

// ---- the statistics ----

const char* headStatName(HeadStat s) {
  switch (s) {
    case HeadStat::Entropy:
      return "entropy";
    case HeadStat::EntropyNorm:
      return "entropy_norm";
    case HeadStat::Diagonal:
      return "diagonal";
    case HeadStat::Previous:
      return "previous";
    case HeadStat::First:
      return "first";
    case HeadStat::Bos:
      return "bos";
    case HeadStat::Eos:
      return "eos";
    case HeadStat::Padding:
      return "padding";
    case HeadStat::Distance:
      return "distance";
    case HeadStat::Monotonicity:
      return "monotonicity";
  }
  return "?";
}

double headStatValue(const HeadStats& s, HeadStat stat) {
  switch (stat) {
    case HeadStat::Entropy:
      return s.entropy;
    case HeadStat::EntropyNorm:
      return s.entropy_norm;
    case HeadStat::Diagonal:
      return s.diagonal;
    case HeadStat::Previous:
      return s.previous;
    case HeadStat::First:
      return s.first;
    case HeadStat::Bos:
      return s.bos;
    case HeadStat::Eos:
      return s.eos;
    case HeadStat::Padding:
      return s.padding;
    case HeadStat::Distance:
      return s.distance;
    case HeadStat::Monotonicity:
      return s.monotonicity;
  }
  return kNaN;
}

std::optional<HeadStat> headStatNamed(const std::string& name) {
  for (HeadStat s : kHeadStats)
    if (name == headStatName(s)) return s;
  return std::nullopt;
}

void Moments::add(double value) {
  if (std::isnan(value)) return;
  ++count;
  const double delta = value - mean;
  mean += delta / double(count);
  m2 += delta * (value - mean);
}

double Moments::sd() const {
  return count > 0 ? std::sqrt(std::max(m2, 0.0) / double(count)) : kNaN;
}

double Moments::meanOrNaN() const {
  return count > 0 ? mean : kNaN;
}

namespace {

// a before b in "largest first" order: the larger value, then the earlier sentence (and chunk).
bool higher(const SentenceValue& a, const SentenceValue& b) {
  return a.value != b.value ? a.value > b.value
                            : std::pair(a.sentence, a.chunk) < std::pair(b.sentence, b.chunk);
}
// a before b in "smallest first" order: the smaller value, then the earlier sentence (and chunk).
bool lower(const SentenceValue& a, const SentenceValue& b) {
  return a.value != b.value ? a.value < b.value
                            : std::pair(a.sentence, a.chunk) < std::pair(b.sentence, b.chunk);
}

// Keeps the k best of a stream under `better` in a heap whose front is the worst kept.
template <typename Better>
void keepBest(std::vector<SentenceValue>& heap, int k, SentenceValue v, Better better) {
  if (k <= 0) return;
  if ((int)heap.size() < k) {
    heap.push_back(v);
    std::push_heap(heap.begin(), heap.end(), better);
  } else if (better(v, heap.front())) {
    std::pop_heap(heap.begin(), heap.end(), better);
    heap.back() = v;
    std::push_heap(heap.begin(), heap.end(), better);
  }
}

}  // namespace

void ExtremeValues::add(int sentence, double value, int chunk) {
  if (std::isnan(value)) return;
  keepBest(top_, k_, {sentence, value, chunk}, higher);
  keepBest(bottom_, k_, {sentence, value, chunk}, lower);
}

std::vector<SentenceValue> ExtremeValues::top() const {
  std::vector<SentenceValue> v = top_;
  std::sort(v.begin(), v.end(), higher);
  return v;
}

std::vector<SentenceValue> ExtremeValues::bottom() const {
  std::vector<SentenceValue> v = bottom_;
  std::sort(v.begin(), v.end(), lower);
  return v;
}

HeadStats AtlasHead::means() const {
  HeadStats s;
  s.kind = kind;
  s.layer = layer;
  s.head = head;
  s.rows = (int)std::lround(rows.meanOrNaN());
  s.entropy = stat(HeadStat::Entropy).meanOrNaN();
  s.entropy_norm = stat(HeadStat::EntropyNorm).meanOrNaN();
  s.diagonal = stat(HeadStat::Diagonal).meanOrNaN();
  s.previous = stat(HeadStat::Previous).meanOrNaN();
  s.first = stat(HeadStat::First).meanOrNaN();
  s.bos = stat(HeadStat::Bos).meanOrNaN();
  s.eos = stat(HeadStat::Eos).meanOrNaN();
  s.padding = stat(HeadStat::Padding).meanOrNaN();
  s.distance = stat(HeadStat::Distance).meanOrNaN();
  s.monotonicity = stat(HeadStat::Monotonicity).meanOrNaN();
  return s;
}

const AtlasHead* Atlas::find(AttentionKind kind, int layer, int head) const {
  for (const AtlasHead& h : heads)
    if (h.kind == kind && h.layer == layer && h.head == head) return &h;
  return nullptr;
}

// ---- running a corpus in batches ----

namespace {

// One corpus entry (or one chunk of it), encoded: the ids of a pass.
struct Prepared {
  int sentence = -1, line = 0;
  int chunk = -1;  // of a line cut into chunks; −1: the whole line
  std::vector<int> src, tgt;
};

// What a run needs besides the caller's CorpusRun.
struct RunNeeds {
  bool decode_targets = true;  // an encoder-decoder without a target decodes one (else: the start)
  ForwardOptions forward;      // record, keep_qkv
};

// Whether a sentence padded in a batch gives the statistics it gives alone: every stack's attention
// must hide padding keys from the sentence's own rows — the padding mask (in the model and in the
// masks chosen), or for the decoder the causal mask (padding comes after every real position).
bool paddingHidden(const Model& m, const MaskOptions& masks) {
  const ModelConfig& c = m.config();
  if (c.hasEncoder() && (c.src_pad_id < 0 || !(masks.src_padding && c.src_padding_mask)))
    return false;
  if (c.hasDecoder() &&
      (c.tgt_pad_id < 0 || !(masks.subsequent || (masks.tgt_padding && c.tgt_padding_mask))))
    return false;
  return true;
}

void checkCancel(const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) throw Error(ErrorKind::Cancelled, "the atlas was cancelled");
}

// Runs the corpus's entries through the model, `batch` at a time, and hands every batch's trace to
// `consume` with its sentences; consume returns false to stop. Skipped entries are reported, never
// thrown.
CorpusRunReport runCorpus(
    const Model& m, const Corpus& corpus, const CorpusRun& o, const RunNeeds& needs,
    const std::function<bool(const Trace&, const std::vector<Prepared>&)>& consume) {
  if (o.batch < 1) throw Error(ErrorKind::BadInput, "a batch holds at least 1 sentence");
  if (o.limit < 0) throw Error(ErrorKind::BadInput, "the limit of sentences is negative");
  const ModelConfig& c = m.config();
  CorpusRunReport r;
  r.same_length_batches = !paddingHidden(m, o.masks);
  auto skip = [&](int sentence, int line, std::string reason) {
    ++r.skipped_count;
    if ((int)r.skipped.size() < o.max_reported_skips)
      r.skipped.push_back({sentence, line, std::move(reason)});
  };
  // Lines of the file that never became entries (not UTF-8) are reported in line order among the
  // entries' skips: those before line `line` once the entry of that line comes.
  std::vector<int> bad_lines = corpus.invalid_utf8_lines;
  std::sort(bad_lines.begin(), bad_lines.end());
  size_t next_bad = 0;
  auto badLinesBefore = [&](int line) {
    for (; next_bad < bad_lines.size() && bad_lines[next_bad] < line; ++next_bad)
      skip(-1, bad_lines[next_bad], "not UTF-8 text");
  };

  const int total =
      o.limit > 0 ? std::min<int>(o.limit, (int)corpus.entries.size()) : (int)corpus.entries.size();
  const int positions = m.maxPositions();
  ForwardOptions fo = needs.forward;
  fo.masks = o.masks;
  fo.cancel = o.cancel;
  int done = 0;
  bool stopped = false;

  fo.max_trace_bytes = o.max_batch_bytes;
  // A batch whose pass would take more than max_batch_bytes runs in halves; a sentence that alone
  // would is skipped.
  std::function<void(const std::vector<Prepared>&)> runPart =
      [&](const std::vector<Prepared>& part) {
        if (part.empty() || stopped) return;
        checkCancel(o.cancel);
        Inputs in;
        size_t S = 0, T = 0;
        for (const Prepared& p : part) {
          if (c.hasEncoder()) in.src.push_back(p.src);
          if (c.hasDecoder()) in.tgt.push_back(p.tgt);
          S = std::max(S, p.src.size());
          T = std::max(T, p.tgt.size());
        }
        const uint64_t bytes = m.estimatePassBytes((int)part.size(), (int)S, (int)T, fo);
        if (bytes > o.max_batch_bytes) {
          if (part.size() == 1) {
            skip(part[0].sentence, part[0].line,
                 "its pass needs " + formatBytes(bytes) + ", more than the limit of " +
                     formatBytes(o.max_batch_bytes));
            return;
          }
          const auto half = part.begin() + std::ptrdiff_t(part.size() / 2);
          runPart(std::vector<Prepared>(part.begin(), half));
          runPart(std::vector<Prepared>(half, part.end()));
          return;
        }
        const Trace t = m.forward(in, fo);
        r.largest_batch_trace_bytes = std::max(r.largest_batch_trace_bytes, t.bytes());
        ++r.batches;
        r.sentences += (int)part.size();
        if (!consume(t, part)) stopped = true;
      };
  auto runBatch = [&](std::vector<Prepared>& batch) {
    runPart(batch);
    batch.clear();
  };
  auto report = [&] {
    if (o.progress) o.progress({done, total, r.batches});
  };

  // Mixed lengths: one queue. Same lengths: a queue per (source, target) length.
  std::map<std::pair<size_t, size_t>, std::vector<Prepared>> queues;
  for (int i = 0; i < total && !stopped; ++i) {
    checkCancel(o.cancel);
    const CorpusEntry& e = corpus.entries[size_t(i)];
    badLinesBefore(e.line);
    Prepared p;
    p.sentence = i;
    p.line = e.line;
    std::vector<Prepared> pieces;  // the entry, or its chunks
    try {
      if (e.has_tgt && !c.hasCross()) {
        skip(i, e.line,
             std::string("a source–target pair, but the model has no ") +
                 (c.hasEncoder() ? "decoder" : "encoder") + " (give one sentence a line)");
        ++done;
        continue;
      }
      if (e.has_tgt && trimmed(e.tgt).empty()) {
        skip(i, e.line, "nothing after the tab (the target is empty)");
        ++done;
        continue;
      }
      // Encoded whole, however long, so that a line too long is told (and cut) here.
      if (c.hasEncoder()) p.src = m.encodeSource(e.src, false);
      if (c.hasDecoder())
        p.tgt = c.hasEncoder() ? m.encodeTarget(e.tgt, false) : m.encodeTarget(e.src, false);
      // The context a line's text goes to: the encoder's (an encoder-decoder's source), or a
      // decoder-only model's decoder. An encoder-decoder's given target is never cut.
      const Side text_side = c.hasEncoder() ? Side::Source : Side::Target;
      const std::vector<int>& text = text_side == Side::Source ? p.src : p.tgt;
      const std::string limit =
          "; the model takes at most " + std::to_string(positions) + m.limitReason();
      if (c.hasCross() && (int)p.tgt.size() > positions) {
        ++r.too_long;
        skip(i, e.line,
             "the target is " + std::to_string(p.tgt.size()) + " tokens" + limit +
                 "; a target is not cut into chunks");
        ++done;
        continue;
      }
      if ((int)text.size() > positions) {
        if (!o.chunk || (c.hasCross() && e.has_tgt)) {
          ++r.too_long;
          skip(i, e.line,
               std::to_string(text.size()) + " tokens" + limit +
                   (!o.chunk ? std::string("; such a line can be cut into chunks")
                             : std::string("; a source–target pair is not cut into chunks (which "
                                           "words of the target go with each chunk is unknown): "
                                           "give the source alone to have each chunk "
                                           "translated")));
          ++done;
          continue;
        }
        const std::vector<std::vector<int>> cut = cutIntoChunks(c, text_side, text, positions);
        ++r.cut_lines;
        r.chunks += (int)cut.size();
        for (size_t k = 0; k < cut.size(); ++k) {
          Prepared piece = p;  // the other side as it is (the decoder's start token alone)
          piece.chunk = (int)k;
          (text_side == Side::Source ? piece.src : piece.tgt) = cut[k];
          pieces.push_back(std::move(piece));
        }
      } else {
        pieces.push_back(std::move(p));
      }
      for (Prepared& piece : pieces)
        if (c.hasCross() && !e.has_tgt && needs.decode_targets) {
          // No target given: the model's own greedy translation (of each chunk), as attnviz-cli
          // run decodes it.
          DecodingSession::Options so;
          so.masks = o.masks;
          so.record = false;
          so.cancel = o.cancel;
          so.max_new_tokens = o.max_new_tokens > 0 ? o.max_new_tokens
                                                   : tutorialMaxNewTokens(c, (int)piece.src.size());
          DecodingSession s(m, piece.src, {}, so);
          s.runToEnd();
          piece.tgt = s.targetIds();
        }
    } catch (const Error& err) {
      if (err.kind() != ErrorKind::BadInput) throw;
      skip(i, e.line, err.what());
      ++done;
      continue;
    }
    ++done;
    for (Prepared& piece : pieces) {
      const auto key = r.same_length_batches ? std::make_pair(piece.src.size(), piece.tgt.size())
                                             : std::make_pair(size_t(0), size_t(0));
      std::vector<Prepared>& q = queues[key];
      q.push_back(std::move(piece));
      if ((int)q.size() >= o.batch) {
        runBatch(q);
        report();
      }
      if (stopped) break;
    }
  }
  if (total == (int)corpus.entries.size()) badLinesBefore(std::numeric_limits<int>::max());
  // What is left in the queues, the queue of the earliest sentence first.
  std::vector<std::vector<Prepared>*> left;
  for (auto& [key, q] : queues)
    if (!q.empty()) left.push_back(&q);
  std::sort(left.begin(), left.end(),
            [](auto* a, auto* b) { return a->front().sentence < b->front().sentence; });
  for (std::vector<Prepared>* q : left) {
    runBatch(*q);
    report();
  }
  if (left.empty()) report();
  // Found in line order but for the batches' own (a pass too large): the first found, in order.
  std::sort(r.skipped.begin(), r.skipped.end(),
            [](const SkippedSentence& a, const SkippedSentence& b) {
              return std::pair(a.line, a.sentence) < std::pair(b.line, b.sentence);
            });
  if (r.sentences == 0) {
    std::string why = corpus.origin + ": no sentence could be run through the model";
    if (!r.skipped.empty()) why += " (" + r.skipped.front().reason + ")";
    throw Error(ErrorKind::BadInput, why);
  }
  return r;
}

}  // namespace

void addSentence(std::vector<AtlasHead>& heads, const std::vector<HeadStats>& stats, int sentence,
                 int src_keys, int tgt_keys, int top_k, int chunk) {
  if (heads.empty())
    for (const HeadStats& h : stats) {
      AtlasHead a;
      a.kind = h.kind;
      a.layer = h.layer;
      a.head = h.head;
      a.extremes.fill(ExtremeValues(top_k));
      heads.push_back(std::move(a));
    }
  if (heads.size() != stats.size())
    throw Error(ErrorKind::BadInput, "addSentence: the statistics of another model's heads");
  for (size_t k = 0; k < stats.size(); ++k) {
    AtlasHead& a = heads[k];
    for (HeadStat st : kHeadStats) {
      const double v = headStatValue(stats[k], st);
      a.stats[size_t(st)].add(v);
      a.extremes[size_t(st)].add(sentence, v, chunk);
    }
    a.keys.add(double(keySide(a.kind) == Side::Source ? src_keys : tgt_keys));
    a.rows.add(stats[k].rows);
  }
}

std::vector<std::vector<int>> cutIntoChunks(const ModelConfig& c, Side side,
                                            const std::vector<int>& ids, int positions) {
  if ((int)ids.size() <= positions) return {ids};
  // The markers the encoding puts at the ends (Model::encodeSource, Model::encodeTarget).
  size_t lead = 0, trail = 0;
  if (side == Side::Source && c.src_bos_eos) {
    lead = c.src_bos_id >= 0 && ids.front() == c.src_bos_id;
    trail = c.src_eos_id >= 0 && ids.back() == c.src_eos_id && ids.size() > lead;
  } else if (side == Side::Target) {
    lead = c.bos_id >= 0 && ids.front() == c.bos_id;
  }
  const int room = positions - int(lead + trail);  // text tokens per chunk
  if (room < 1)
    throw Error(ErrorKind::BadInput, "the model's " + std::to_string(positions) +
                                         " positions leave no room for text between the "
                                         "markers: the line cannot be cut into chunks");
  const auto first = ids.begin() + std::ptrdiff_t(lead), last = ids.end() - std::ptrdiff_t(trail);
  std::vector<std::vector<int>> out;
  for (auto at = first; at < last;) {
    const auto to = at + std::min<std::ptrdiff_t>(room, last - at);
    std::vector<int> chunk(ids.begin(), first);  // the leading markers
    chunk.insert(chunk.end(), at, to);
    chunk.insert(chunk.end(), last, ids.end());  // the trailing ones
    out.push_back(std::move(chunk));
    at = to;
  }
  return out;
}

Atlas buildAtlas(const Model& m, const Corpus& corpus, const AtlasOptions& options) {
  if (options.top_k < 0) throw Error(ErrorKind::BadInput, "top_k is negative");
  const auto t0 = std::chrono::steady_clock::now();
  const ModelConfig& c = m.config();
  RunNeeds needs;
  Atlas atlas;
  atlas.origin = corpus.origin;
  atlas.run =
      runCorpus(m, corpus, options.run, needs, [&](const Trace& t, const std::vector<Prepared>& b) {
        for (size_t s = 0; s < b.size(); ++s)
          addSentence(atlas.heads, headStatistics(t, c, (int)s), b[s].sentence,
                      (int)b[s].src.size(), (int)b[s].tgt.size(), options.top_k, b[s].chunk);
        return true;
      });
  atlas.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return atlas;
}

std::vector<HeadDistance> headsLike(const Atlas& atlas, int index) {
  if (index < 0 || index >= (int)atlas.heads.size())
    throw Error(ErrorKind::BadInput, "head " + std::to_string(index) + " is not in the atlas (" +
                                         std::to_string(atlas.heads.size()) + " heads)");
  auto keysOf = [](const AtlasHead& h) {
    return std::max(1, (int)std::lround(h.keys.meanOrNaN()));
  };
  const AtlasHead& me = atlas.heads[size_t(index)];
  const HeadStats mine = me.means();
  std::vector<HeadDistance> out;
  for (int k = 0; k < (int)atlas.heads.size(); ++k) {
    if (k == index) continue;
    const AtlasHead& other = atlas.heads[size_t(k)];
    out.push_back({k, headDistance(mine, other.means(), keysOf(me), keysOf(other))});
  }
  std::stable_sort(out.begin(), out.end(), [](const HeadDistance& a, const HeadDistance& b) {
    return a.distance < b.distance;
  });
  return out;
}

std::string atlasJson(const Atlas& atlas, const Corpus& corpus, const HeadEmbedding* embedding,
                      const AtlasScores* scores) {
  using nlohmann::json;
  auto number = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  auto sentence = [&](int index) {
    json s = {{"sentence", index}};
    if (index >= 0 && index < (int)corpus.entries.size()) {
      const CorpusEntry& e = corpus.entries[size_t(index)];
      if (e.line > 0) s["line"] = e.line;
      s["src"] = e.src;
      if (e.has_tgt) s["tgt"] = e.tgt;
    }
    return s;
  };
  json j;
  j["corpus"] = atlas.origin;
  j["sentences"] = atlas.run.sentences;
  j["batches"] = atlas.run.batches;
  j["same_length_batches"] = atlas.run.same_length_batches;
  j["seconds"] = atlas.seconds;
  j["skipped_count"] = atlas.run.skipped_count;
  j["too_long"] = atlas.run.too_long;
  j["cut_lines"] = atlas.run.cut_lines;
  j["chunks"] = atlas.run.chunks;
  j["skipped"] = json::array();
  for (const SkippedSentence& s : atlas.run.skipped) {
    json o = {{"reason", s.reason}};
    if (s.sentence >= 0) o["sentence"] = s.sentence;
    if (s.line > 0) o["line"] = s.line;
    j["skipped"].push_back(o);
  }
  if (scores) {
    j["induction_note"] = scores->induction_note;
    j["copying_note"] = scores->copying_note;
  }
  j["statistics"] = json::array();
  for (HeadStat st : kHeadStats) j["statistics"].push_back(headStatName(st));
  j["heads"] = json::array();
  for (const AtlasHead& h : atlas.heads) {
    json o = {{"kind", attentionKindName(h.kind)},
              {"layer", h.layer + 1},
              {"head", h.head + 1},
              {"keys_mean", number(h.keys.meanOrNaN())},
              {"rows_mean", number(h.rows.meanOrNaN())}};
    for (HeadStat st : kHeadStats) {
      const Moments& mo = h.stat(st);
      json s = {{"mean", number(mo.meanOrNaN())}, {"sd", number(mo.sd())}, {"count", mo.count}};
      for (const auto& [name, list] : {std::pair{"top", h.extremes[size_t(st)].top()},
                                       std::pair{"bottom", h.extremes[size_t(st)].bottom()}}) {
        json items = json::array();
        for (const SentenceValue& v : list) {
          json item = sentence(v.sentence);
          if (v.chunk >= 0) item["chunk"] = v.chunk + 1;
          item["value"] = number(v.value);
          items.push_back(item);
        }
        s[name] = items;
      }
      o["stats"][headStatName(st)] = s;
    }
    if (scores) {
      const size_t r = j["heads"].size();
      o["induction"] = number(scores->induction[r]);
      o["copying"] = number(scores->copying[r]);
    }
    j["heads"].push_back(o);
  }
  if (embedding) {
    const HeadEmbedding& e = *embedding;
    json o = {{"kind", attentionKindName(e.kind)},
              {"layer", e.layer + 1},
              {"head", e.head + 1},
              {"d_k", e.d_k},
              {"sentences", e.sentences},
              {"capped", e.capped},
              {"explained_variance", {e.explained_variance[0], e.explained_variance[1]}},
              {"explained_ratio", {e.explained_ratio[0], e.explained_ratio[1]}},
              {"points", json::array()}};
    for (const EmbeddingPoint& p : e.points) {
      json point = {{"x", p.x},
                    {"y", p.y},
                    {"query", p.query},
                    {"sentence", p.sentence},
                    {"position", p.position},
                    {"token", p.token}};
      if (p.chunk >= 0) point["chunk"] = p.chunk + 1;
      o["points"].push_back(point);
    }
    j["embedding"] = o;
  }
  return j.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

// ---- one head's queries and keys ----

HeadEmbedding headEmbedding(const Model& m, const Corpus& corpus, AttentionKind kind, int layer,
                            int head, const HeadEmbeddingOptions& options) {
  const ModelConfig& c = m.config();
  const int layers = layerCount(c, kind);
  if (layer < 0 || layer >= layers || head < 0 || head >= c.n_heads)
    throw Error(ErrorKind::BadInput, std::string("the model has no ") + attentionKindTitle(kind) +
                                         " head " + std::to_string(head + 1) + " at layer " +
                                         std::to_string(layer + 1));
  if (options.max_points < 2)
    throw Error(ErrorKind::BadInput, "the embedding needs room for at least 2 points");
  RunNeeds needs;
  // The encoder's heads need no target: the start token stands in for the decoder's input.
  needs.decode_targets = kind != AttentionKind::EncoderSelf;
  needs.forward.keep_qkv = true;
  HeadEmbedding out;
  out.kind = kind;
  out.layer = layer;
  out.head = head;
  out.d_k = c.d_k;
  std::vector<float> rows;  // [points, d_k]: the pooled queries and keys
  out.run = runCorpus(
      m, corpus, options.run, needs, [&](const Trace& t, const std::vector<Prepared>& batch) {
        const AttentionBlock* a = t.block(kind, layer);
        if (!a) throw Error(ErrorKind::BadInput, "the pass kept no queries and keys");
        for (size_t b = 0; b < batch.size(); ++b) {
          const auto& q_ids = querySide(kind) == Side::Source ? batch[b].src : batch[b].tgt;
          const auto& k_ids = keySide(kind) == Side::Source ? batch[b].src : batch[b].tgt;
          const int nq = (int)q_ids.size(), nk = (int)k_ids.size();
          if ((int)out.points.size() + nq + nk > options.max_points) {
            out.capped = true;
            return false;
          }
          const auto& q_tokens = t.queryTokens(kind, (int)b);
          const auto& k_tokens = t.keyTokens(kind, (int)b);
          auto take = [&](const float* v, bool query, int position, const std::string& token) {
            rows.insert(rows.end(), v, v + a->d_k);
            EmbeddingPoint p;
            p.query = query;
            p.sentence = batch[b].sentence;
            p.chunk = batch[b].chunk;
            p.position = position;
            p.token = token;
            out.points.push_back(std::move(p));
          };
          for (int i = 0; i < nq; ++i) take(a->qRow((int)b, head, i), true, i, q_tokens[size_t(i)]);
          for (int j = 0; j < nk; ++j)
            take(a->kRow((int)b, head, j), false, j, k_tokens[size_t(j)]);
          ++out.sentences;
        }
        return true;
      });
  if (out.points.size() < 2)
    throw Error(ErrorKind::BadInput,
                "the embedding needs at least 2 query and key vectors; max_points " +
                    std::to_string(options.max_points) + " left room for none");
  const Pca p = principalComponents(rows.data(), (int)out.points.size(), out.d_k, 2);
  for (size_t i = 0; i < out.points.size(); ++i) {
    out.points[i].x = p.projections[2 * i];
    out.points[i].y = p.projections[2 * i + 1];
  }
  out.explained_variance = {p.explained_variance[0], p.explained_variance[1]};
  out.explained_ratio = {p.explained_ratio[0], p.explained_ratio[1]};
  return out;
}

}  // namespace attnviz

// The head atlas: every head of every attention block over a whole corpus of sentences. The corpus
// runs through the model in batches, streamed — each batch's trace gives every sentence's head
// statistics (model/head_stats.h, the ones the views show for one sentence), which are accumulated
// per head (mean, standard deviation, count) and then dropped, so that memory is one batch's trace
// however long the corpus. Per head it keeps its evidence: the sentences where each statistic is
// largest and smallest. Beside it: heads ranked by how like a chosen head they are over the corpus,
// and a 2-D PCA of one head's queries and keys over the corpus (AttentionViz's joint query–key
// embedding). Definitions: docs/formats.md "Head statistics over a corpus".
//
// A view drives it from a worker thread: buildAtlas and headEmbedding only read the model (one
// pass at a time, as every other caller of Model::forward), report progress through a callback on
// that thread and stop with Error(Cancelled) when the cancel flag is set; the results are plain
// values to hand back to the GUI thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/head_stats.h"
#include "model/model.h"

namespace attnviz {

// ---- the corpus ----

// One sentence of a corpus, as text the model's tokenizer encodes. An encoder-decoder takes `src`
// and, when given, `tgt` (a teacher-forced target; empty: the target is greedy-decoded first); an
// encoder-only or decoder-only model takes `src` alone (a decoder-only model's text goes to its
// decoder), and a line that gives a target too is skipped as not meant for it.
struct CorpusEntry {
  std::string src;
  std::string tgt;
  bool has_tgt = false;  // a source–target pair (a tab in the file)
  int line = 0;          // 1-based line of the file it came from (0: not from a file)
};

struct Corpus {
  std::string origin;  // what it was read from, for messages and the view ("corpus.txt")
  std::vector<CorpusEntry> entries;
  // Lines of the file that are no entry: empty (or only spaces) and not valid UTF-8. Reported with
  // the lines the model cannot encode (CorpusRunReport::skipped); they never become entries.
  int empty_lines = 0;
  std::vector<int> invalid_utf8_lines;  // 1-based
};

// Files larger than this are refused (Error(TooLarge)): 64 MiB is some hundred thousand sentences,
// far more than an atlas needs.
constexpr uint64_t kMaxCorpusBytes = uint64_t(64) << 20;

// A UTF-8 text file of one sentence per line, or of "source<TAB>target" pairs (an encoder-decoder's
// teacher-forced targets); a line may end in CR LF, the file may start with a byte-order mark.
// Throws Error(Io) when it cannot be read, Error(TooLarge) above max_bytes, Error(BadInput) when it
// is not text (a NUL byte, or most lines not UTF-8) or holds no sentence.
Corpus readCorpusFile(const std::string& path, uint64_t max_bytes = kMaxCorpusBytes);
// The example sentences a model's config carries (ModelConfig::examples, the GUI's Examples menu).
Corpus corpusFromExamples(const ModelConfig& config);
// A bundled model's held-out set, resources/models/NAME.heldout.json ([{"src", "tgt"}], the
// sentences its training never saw). Throws Error(Io) when the bundled model has none.
Corpus corpusFromHeldOut(const std::string& bundled_name);
// (The Train view's task data: trainingTaskCorpus in train/task_corpus.h.)

// ---- the statistics ----

// The statistics of HeadStats that are accumulated, in this order.
enum class HeadStat {
  Entropy,
  EntropyNorm,
  Diagonal,
  Previous,
  First,
  Bos,
  Eos,
  Padding,
  Distance,
  Monotonicity
};
constexpr int kHeadStatCount = 10;
constexpr std::array<HeadStat, kHeadStatCount> kHeadStats = {
    HeadStat::Entropy,  HeadStat::EntropyNorm, HeadStat::Diagonal, HeadStat::Previous,
    HeadStat::First,    HeadStat::Bos,         HeadStat::Eos,      HeadStat::Padding,
    HeadStat::Distance, HeadStat::Monotonicity};
const char* headStatName(HeadStat stat);  // "entropy_norm": the name in headStatsCsv and JSON
double headStatValue(const HeadStats& stats, HeadStat stat);
// The HeadStat of a name; nullopt for an unknown one.
std::optional<HeadStat> headStatNamed(const std::string& name);

// Mean and standard deviation of the values added (Welford's update, in double). NaN values are
// not counted. sd is the population standard deviation (divided by count, numpy's default); with
// no value the mean and sd are NaN.
struct Moments {
  int64_t count = 0;
  double mean = 0, m2 = 0;
  void add(double value);
  double sd() const;
  double meanOrNaN() const;
};

// One sentence of the evidence: its index in Corpus::entries and its statistic; for a line cut into
// chunks (CorpusRun::chunk), which chunk.
struct SentenceValue {
  int sentence = -1;
  double value = 0;
  int chunk = -1;  // 0-based chunk of a line cut into chunks; −1: the whole line
};

// The k largest and k smallest of a stream of (sentence, value), kept in bounded heaps: O(k)
// memory, O(log k) per value. Ties go to the earlier sentence (then the earlier chunk). NaN values
// are not kept.
class ExtremeValues {
 public:
  explicit ExtremeValues(int k = 5) : k_(k) {}
  void add(int sentence, double value, int chunk = -1);
  std::vector<SentenceValue> top() const;     // largest first
  std::vector<SentenceValue> bottom() const;  // smallest first

 private:
  int k_;
  std::vector<SentenceValue> top_, bottom_;  // heaps: the smallest kept (top_), the largest kept
};

// One head over the corpus.
struct AtlasHead {
  AttentionKind kind = AttentionKind::EncoderSelf;
  int layer = 0, head = 0;
  std::array<Moments, kHeadStatCount> stats;           // per HeadStat
  std::array<ExtremeValues, kHeadStatCount> extremes;  // per HeadStat: the evidence
  Moments keys;  // unpadded keys per sentence (for headDistance's normalisation of the distance)
  Moments rows;  // query rows per sentence

  const Moments& stat(HeadStat s) const { return stats[size_t(s)]; }
  // The corpus means as a HeadStats (NaN where no sentence defines one), for headDistance and the
  // views that show a HeadStats.
  HeadStats means() const;
};

// Adds one sentence's head statistics (headStatistics' order, every head of every block) to
// `heads`, which it creates at the first sentence: each statistic's moments and evidence, the
// query rows, and the sentence's unpadded keys per side (src_keys, tgt_keys). top_k: the evidence
// kept per end when the heads are created; chunk: which chunk of a line cut into chunks (−1: none).
void addSentence(std::vector<AtlasHead>& heads, const std::vector<HeadStats>& stats, int sentence,
                 int src_keys, int tgt_keys, int top_k, int chunk = -1);

// ---- lines longer than the context ----

// The ids of one sequence longer than `positions`, cut into consecutive chunks of at most
// `positions` tokens, no overlap, each run as a sequence of its own. What is cut is the text's
// tokens between the markers the model's encoding adds (the source's src_bos_id … src_eos_id when
// src_bos_eos is set, the decoder's start token bos_id): every chunk gets those markers again, so
// that a chunk is exactly what its tokens typed as a line of their own encode to. All chunks hold
// positions − markers text tokens but the last, which holds the rest. `side` is the side the ids
// are of (Source: the encoder's input; Target: a decoder-only model's text). Ids that fit are
// returned as they are (one chunk). Throws Error(BadInput) when the markers leave no room.
std::vector<std::vector<int>> cutIntoChunks(const ModelConfig& config, Side side,
                                            const std::vector<int>& ids, int positions);

struct SkippedSentence {
  int sentence = -1;  // index in Corpus::entries (−1: a line that never became an entry)
  int line = 0;       // its line in the file (0: not from a file)
  std::string reason;
};

// What running a corpus did: how many sentences went through the model, which were left out.
struct CorpusRunReport {
  int sentences = 0;      // sequences that went through the model (each chunk of a
                          // line cut into chunks counts)
  int skipped_count = 0;  // sentences and lines left out (below, the first few)
  int too_long = 0;   // of them: longer than the model's context (CorpusRun::chunk was off, or a
                      // source–target pair, which is not cut)
  int cut_lines = 0;  // lines cut into chunks (CorpusRun::chunk)
  int chunks = 0;     // the chunks they made, each run as a sentence
  std::vector<SkippedSentence> skipped;  // at most CorpusRun::max_reported_skips, in line (or
                                         // corpus) order
  int batches = 0;
  bool same_length_batches = false;        // padding would show (see buildAtlas), so batches held
                                           // sentences of one length only
  uint64_t largest_batch_trace_bytes = 0;  // Trace::bytes() of the largest batch
};

struct Atlas {
  std::string origin;            // Corpus::origin
  std::vector<AtlasHead> heads;  // blocks in trace order (encoder, then per decoder layer self,
                                 // cross), heads in order — headStatistics' order
  CorpusRunReport run;
  double seconds = 0;

  // The head (kind, layer, head), or nullptr.
  const AtlasHead* find(AttentionKind kind, int layer, int head) const;
};

struct AtlasProgress {
  int done = 0;   // corpus entries read (run, waiting for their batch, or skipped)
  int total = 0;  // entries to handle (after CorpusRun::limit)
  int batches = 0;
};

// How a corpus goes through the model, for the atlas and the embedding alike.
struct CorpusRun {
  int batch = 16;     // sentences per pass
  int limit = 0;      // the first `limit` entries of the corpus; 0 = all
  MaskOptions masks;  // as the views' mask switches
  // An encoder-decoder given a source without a target greedy-decodes at most this many tokens
  // first; 0 = the tutorial's rule (tutorialMaxNewTokens), as attnviz-cli run.
  int max_new_tokens = 0;
  int max_reported_skips = 10;  // CorpusRunReport::skipped keeps the first ones
  // A line longer than the model's context (Model::maxPositions) is skipped, or, with `chunk`, cut
  // into consecutive chunks of at most the context (cutIntoChunks: by tokens, no overlap), each run
  // as a sentence of its own. The context is the side the line's text goes to: the encoder's for
  // an encoder-only model and for an encoder-decoder's source (each chunk then greedy-decodes its
  // own target), the decoder's for a decoder-only model. A source–target pair is never cut (which
  // words of the target go with each chunk is unknown): it is skipped, saying why.
  bool chunk = false;
  // A batch whose pass would take more memory (Model::estimatePassBytes: the trace and the working
  // set) runs in halves; a sentence that alone would is skipped.
  uint64_t max_batch_bytes = uint64_t(1) << 30;
  const std::atomic<bool>* cancel = nullptr;           // → Error(Cancelled), between passes and
                                                       // between a pass's layers
  std::function<void(const AtlasProgress&)> progress;  // after each batch, on the caller's thread
};

struct AtlasOptions {
  CorpusRun run;
  int top_k = 5;  // evidence kept per head and statistic (each end)
};

// Runs the corpus through the model and accumulates every head's statistics. A sentence that
// cannot be encoded (an unknown word, empty after tokenizing), is longer than the model's
// positions (unless CorpusRun::chunk cuts it into chunks), or gives a target to a model without a
// decoder is skipped and reported (CorpusRunReport::skipped) — never an error. A batch pads its
// sentences to the longest; the masks hide the padding, so that every sentence's statistics are
// those of the sentence alone. Where they cannot (a padding mask switched off or missing for a
// bidirectional stack), batches hold sentences of one length. Throws Error(BadInput) when no
// sentence can be run, Error(Cancelled) when cancelled.
Atlas buildAtlas(const Model& model, const Corpus& corpus, const AtlasOptions& options = {});

// The heads most like head `index` of the atlas over the corpus: headDistance between the heads'
// corpus means (AtlasHead::means), each normalised by its mean number of keys; nearest first, the
// head itself left out, heads sharing no statistic (distance +∞) last.
struct HeadDistance {
  int index = -1;  // into Atlas::heads
  double distance = 0;
};
std::vector<HeadDistance> headsLike(const Atlas& atlas, int index);

// ---- one head's queries and keys, projected ----

struct HeadEmbeddingOptions {
  CorpusRun run;
  // Points kept (queries and keys together): whole sentences are taken in corpus order while their
  // points fit. 4,000 points of d_k = 64 floats are 1 MiB.
  int max_points = 4000;
};

struct EmbeddingPoint {
  double x = 0, y = 0;  // on the first and second principal component
  bool query = true;    // a query vector (else a key)
  int sentence = -1;    // index in Corpus::entries
  int chunk = -1;       // the chunk of a line cut into chunks (CorpusRun::chunk); −1: none
  int position = 0;     // the token's position in its sequence (the chunk's, for a chunk)
  std::string token;    // the token's text
};

struct HeadEmbedding {
  AttentionKind kind = AttentionKind::EncoderSelf;
  int layer = 0, head = 0;
  int d_k = 0;
  std::vector<EmbeddingPoint> points;
  std::array<double, 2> explained_variance{};  // eigenvalues of the covariance (divided by n − 1)
  std::array<double, 2> explained_ratio{};     // their share of the total variance
  int sentences = 0;                           // sentences whose tokens are in
  bool capped = false;                         // sentences were left out by max_points
  CorpusRunReport run;
};

// The joint query–key embedding of head (kind, layer, head): the head's query vectors of every
// query token and key vectors of every key token (padding left out) of the corpus's sentences,
// pooled into one matrix, centred, and projected on its top two principal components (pca.h).
// Throws Error(BadInput) for a head the model does not have or when no sentence can be run.
HeadEmbedding headEmbedding(const Model& model, const Corpus& corpus, AttentionKind kind, int layer,
                            int head, const HeadEmbeddingOptions& options = {});

struct AtlasScores;  // model/circuits.h

// The whole atlas as JSON: the corpus, the skipped lines, and per head every statistic's mean, sd,
// count, top and bottom sentences (with their text); with `scores`, each head's induction and
// copying scores (null where one does not apply) and why one is missing; with `embedding`, that
// head's points too. docs/formats.md "Head atlas JSON".
std::string atlasJson(const Atlas& atlas, const Corpus& corpus,
                      const HeadEmbedding* embedding = nullptr,
                      const AtlasScores* scores = nullptr);

}  // namespace attnviz

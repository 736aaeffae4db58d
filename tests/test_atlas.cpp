// The head atlas (core/model/atlas.h, core/model/pca.h): the corpus statistics against the same
// statistics computed one sentence at a time with headStatistics (batches of mixed lengths that
// pad, a batch size that does not divide the corpus; an encoder-decoder with teacher-forced and
// decoded targets, a decoder-only and an encoder-only model), the evidence against a full sort,
// heads-like against headDistance, cancel, a corpus file's bad lines and files that are no corpus,
// and the PCA against numpy's (tools/make_atlas_references.py, written by the
// make_atlas_references fixture into $ATTNVIZ_ATLAS_REF_DIR) and the joint query–key embedding
// against the queries and keys of one-sentence passes.
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "base/error.h"
#include "model/atlas.h"
#include "model/circuits.h"
#include "model/decoding.h"
#include "model/pca.h"
#include "test_support.h"
#include "train/task_corpus.h"

using namespace attnviz;

namespace {

// Statistics of a sentence alone and in a padded batch differ by the float rounding of products of
// other shapes; their means over the corpus too.
constexpr double kStatTol = 2e-5;

std::string atlasRefDir() {
  const char* d = std::getenv("ATTNVIZ_ATLAS_REF_DIR");
  return d && *d ? d : "";
}

std::string modelPath(const std::string& name) {
  if (name == "gpt003" || name == "bert003")
    return std::string(ATTNVIZ_TEST_DATA) + "/" + name + ".safetensors";
  return std::string(ATTNVIZ_SOURCE_DIR) + "/resources/models/" + name + ".safetensors";
}

// Random sentences of 1 … max_words words of the model's own vocabulary (no special tokens).
Corpus randomCorpus(const std::vector<std::string>& words, int sentences, int max_words,
                    uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> word(0, words.size() - 1);
  std::uniform_int_distribution<int> length(1, max_words);
  Corpus c;
  c.origin = "random";
  for (int s = 0; s < sentences; ++s) {
    CorpusEntry e;
    const int n = length(rng);
    for (int k = 0; k < n; ++k) e.src += (k ? " " : "") + words[word(rng)];
    c.entries.push_back(e);
  }
  return c;
}

// The per-sentence values of every head and statistic, each sentence run alone (batch 1):
// values[head][stat][sentence] (NaN where undefined).
using PerSentence = std::vector<std::array<std::vector<double>, kHeadStatCount>>;

std::vector<std::string> plainWords(const std::vector<std::string>& vocab, int skip_first) {
  return std::vector<std::string>(vocab.begin() + skip_first, vocab.end());
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

}  // namespace

class TestAtlas : public QObject {
  Q_OBJECT

  std::shared_ptr<Backend> backend_;
  std::map<std::string, std::shared_ptr<Model>> models_;

  const Model& model(const std::string& name) {
    auto& m = models_[name];
    if (!m) m = std::make_shared<Model>(loadModel(modelPath(name)), backend_);
    return *m;
  }

  // The inputs of one corpus entry alone, encoded as an independent caller would: the source, and
  // the given target, or the greedy decoding's (DecodingSession, the one greedy decoder).
  static Inputs aloneInputs(const Model& m, const CorpusEntry& e) {
    const ModelConfig& c = m.config();
    Inputs in;
    if (c.hasEncoder()) in.src = {m.encodeSource(e.src)};
    if (c.hasCross()) {
      if (e.has_tgt) {
        in.tgt = {m.encodeTarget(e.tgt)};
      } else {
        DecodingSession::Options so;
        so.record = false;
        so.max_new_tokens = tutorialMaxNewTokens(c, (int)in.src[0].size());
        DecodingSession s(m, in.src[0], {}, so);
        s.runToEnd();
        in.tgt = {s.targetIds()};
      }
    } else if (c.hasDecoder()) {
      in.tgt = {m.encodeTarget(e.src)};
    }
    return in;
  }

  static PerSentence perSentence(const Model& m, const Corpus& corpus, int n) {
    PerSentence v;
    for (int s = 0; s < n; ++s) {
      const Trace t = m.forward(aloneInputs(m, corpus.entries[size_t(s)]));
      const std::vector<HeadStats> stats = headStatistics(t, m.config(), 0);
      if (v.empty()) v.resize(stats.size());
      for (size_t h = 0; h < stats.size(); ++h)
        for (HeadStat st : kHeadStats) v[h][size_t(st)].push_back(headStatValue(stats[h], st));
    }
    return v;
  }

  // The atlas's means, sds and counts equal those of the per-sentence values; its top and bottom
  // sentences equal a full sort's (larger first, ties to the earlier sentence).
  static void compare(const Atlas& atlas, const PerSentence& want, int top_k) {
    QCOMPARE(atlas.heads.size(), want.size());
    for (size_t h = 0; h < want.size(); ++h)
      for (HeadStat st : kHeadStats) {
        const std::vector<double>& all = want[h][size_t(st)];
        std::vector<SentenceValue> defined;
        for (int s = 0; s < (int)all.size(); ++s)
          if (!std::isnan(all[size_t(s)])) defined.push_back({s, all[size_t(s)]});
        double sum = 0, sq = 0;
        for (const SentenceValue& d : defined) sum += d.value;
        const double mean = defined.empty() ? NAN : sum / double(defined.size());
        for (const SentenceValue& d : defined) sq += (d.value - mean) * (d.value - mean);
        const double sd = defined.empty() ? NAN : std::sqrt(sq / double(defined.size()));
        const Moments& got = atlas.heads[h].stat(st);
        const QString where = QStringLiteral("head %1 %2").arg(h).arg(headStatName(st));
        QVERIFY2(got.count == (int64_t)defined.size(), qPrintable(where));
        if (defined.empty()) {
          QVERIFY2(std::isnan(got.meanOrNaN()) && std::isnan(got.sd()), qPrintable(where));
          continue;
        }
        QVERIFY2(std::abs(got.mean - mean) <= kStatTol * std::max(1.0, std::abs(mean)),
                 qPrintable(where + QStringLiteral(": mean %1, alone %2").arg(got.mean).arg(mean)));
        QVERIFY2(std::abs(got.sd() - sd) <= kStatTol * std::max(1.0, sd),
                 qPrintable(where + QStringLiteral(": sd %1, alone %2").arg(got.sd()).arg(sd)));
        // The evidence: a full sort of the values alone. Values closer than the tolerance may
        // swap places; their sentences must then be each other's.
        auto checkEnd = [&](std::vector<SentenceValue> sorted,
                            const std::vector<SentenceValue>& kept, bool largest) {
          std::stable_sort(sorted.begin(), sorted.end(),
                           [&](const SentenceValue& a, const SentenceValue& b) {
                             return largest ? a.value > b.value : a.value < b.value;
                           });
          QCOMPARE((int)kept.size(), std::min<int>(top_k, (int)sorted.size()));
          for (size_t k = 0; k < kept.size(); ++k) {
            QVERIFY2(std::abs(kept[k].value - sorted[k].value) <= kStatTol,
                     qPrintable(where + QStringLiteral(" rank %1").arg(k)));
            if (kept[k].sentence != sorted[k].sentence) {
              const double alone = all[size_t(kept[k].sentence)];
              QVERIFY2(std::abs(alone - sorted[k].value) <= kStatTol,
                       qPrintable(where + QStringLiteral(" rank %1: sentence %2, sorted %3")
                                              .arg(k)
                                              .arg(kept[k].sentence)
                                              .arg(sorted[k].sentence)));
            }
          }
        };
        checkEnd(defined, atlas.heads[h].extremes[size_t(st)].top(), true);
        checkEnd(defined, atlas.heads[h].extremes[size_t(st)].bottom(), false);
      }
  }

 private slots:
  void initTestCase() {
    std::string why;
    backend_ = test::testBackend(&why);
    if (!backend_) QSKIP(why.c_str());
  }

  // ---- the corpus statistics equal the per-sentence statistics -------------------------------

  void encoderDecoderPairs() {
    // The bundled reorder model's held-out pairs, teacher-forced; 37 sentences in batches of 5
    // (the last one of 2), lengths from 3 to 20 words padded together.
    const Model& m = model("reorder");
    Corpus corpus = corpusFromHeldOut("reorder");
    QVERIFY(corpus.entries.size() >= 37);
    corpus.entries.resize(37);
    AtlasOptions o;
    o.run.batch = 5;
    o.top_k = 4;
    const Atlas atlas = buildAtlas(m, corpus, o);
    QCOMPARE(atlas.run.sentences, 37);
    QCOMPARE(atlas.run.batches, 8);
    QVERIFY(!atlas.run.same_length_batches);
    QCOMPARE(atlas.run.skipped_count, 0);
    // The batches did pad: the first five sentences are not all of one length.
    std::set<size_t> lengths;
    for (int s = 0; s < 5; ++s)
      lengths.insert(m.encodeSource(corpus.entries[size_t(s)].src).size());
    QVERIFY(lengths.size() > 1);
    // Every head of every kind: 2 encoder layers, 2 decoder layers with self and cross, 4 heads.
    QCOMPARE(atlas.heads.size(), size_t(24));
    compare(atlas, perSentence(m, corpus, 37), 4);
  }

  // The circuit scores beside the atlas (the CLI's table and JSON, the GUI's axes): each head's
  // the one inductionScores / copyingScores give it; the reorder model's two vocabularies leave
  // copying undefined (NaN, JSON null) with no note, cross-attention has no induction score.
  void circuitScoresMatchedToHeads() {
    const Model& m = model("reorder");
    Corpus corpus = corpusFromHeldOut("reorder");
    corpus.entries.resize(6);
    const Atlas atlas = buildAtlas(m, corpus, {});
    const AtlasScores scores = atlasScores(m, atlas);
    QCOMPARE(scores.induction.size(), atlas.heads.size());
    QCOMPARE(scores.copying.size(), atlas.heads.size());
    QVERIFY2(scores.induction_note.empty(), scores.induction_note.c_str());
    int matched = 0;
    for (const HeadScore& h : inductionScores(m)) {
      const AtlasHead* a = atlas.find(h.kind, h.layer, h.head);
      QVERIFY(a);
      const double mine = scores.induction[size_t(a - atlas.heads.data())];
      QVERIFY(std::isnan(h.value) ? std::isnan(mine) : mine == h.value);
      matched += std::isfinite(h.value);
    }
    QCOMPARE(matched, 16);  // 2 encoder + 2 decoder self-attention layers × 4 heads
    const nlohmann::json j = nlohmann::json::parse(atlasJson(atlas, corpus, nullptr, &scores));
    QCOMPARE(j["heads"].size(), atlas.heads.size());
    for (size_t r = 0; r < atlas.heads.size(); ++r) {
      const nlohmann::json& h = j["heads"][r];
      if (std::isfinite(scores.induction[r]))
        QCOMPARE(h["induction"].get<double>(), scores.induction[r]);
      else
        QVERIFY(h["induction"].is_null());
      QVERIFY(h["copying"].is_null() == !std::isfinite(scores.copying[r]));
      QVERIFY(h["kind"] != "cross" || h["induction"].is_null());
    }
    QVERIFY(j.contains("copying_note"));
  }

  void encoderDecoderDecoded() {
    // Sources alone: each target is the model's greedy decoding.
    const Model& m = model("reorder");
    Corpus corpus = corpusFromHeldOut("reorder");
    corpus.entries.resize(11);
    for (CorpusEntry& e : corpus.entries) e.has_tgt = false;
    AtlasOptions o;
    o.run.batch = 4;
    compare(buildAtlas(m, corpus, o), perSentence(m, corpus, 11), 5);
  }

  void decoderOnly() {
    const Model& m = model("gpt003");
    const Corpus corpus = randomCorpus(plainWords(m.config().tgt_vocab, 3), 23, 12, 5);
    AtlasOptions o;
    o.run.batch = 6;
    o.top_k = 3;
    const Atlas atlas = buildAtlas(m, corpus, o);
    QVERIFY(!atlas.run.same_length_batches);
    QCOMPARE(atlas.run.sentences, 23);
    compare(atlas, perSentence(m, corpus, 23), 3);
  }

  void encoderOnly() {
    const Model& m = model("bert003");
    const Corpus corpus = randomCorpus(plainWords(m.config().src_vocab, 4), 19, 10, 9);
    AtlasOptions o;
    o.run.batch = 4;
    const Atlas atlas = buildAtlas(m, corpus, o);
    QCOMPARE(atlas.run.sentences, 19);
    compare(atlas, perSentence(m, corpus, 19), 5);
  }

  void paddingVisibleGivesSameLengthBatches() {
    // The padding mask switched off: padded keys would take attention, so batches hold sentences
    // of one length, and the statistics are still those of each sentence alone (which has no
    // padding to see).
    const Model& m = model("bert003");
    const Corpus corpus = randomCorpus(plainWords(m.config().src_vocab, 4), 17, 4, 3);
    AtlasOptions o;
    o.run.batch = 3;
    o.run.masks.src_padding = false;
    const Atlas atlas = buildAtlas(m, corpus, o);
    QVERIFY(atlas.run.same_length_batches);
    QVERIFY(atlas.run.batches > 17 / 3);  // more batches than mixed lengths would need
    PerSentence want;
    {
      ForwardOptions fo;
      fo.masks.src_padding = false;
      for (int s = 0; s < 17; ++s) {
        const Trace t = m.forward(aloneInputs(m, corpus.entries[size_t(s)]), fo);
        const std::vector<HeadStats> stats = headStatistics(t, m.config(), 0);
        if (want.empty()) want.resize(stats.size());
        for (size_t h = 0; h < stats.size(); ++h)
          for (HeadStat st : kHeadStats) want[h][size_t(st)].push_back(headStatValue(stats[h], st));
      }
    }
    compare(atlas, want, 5);
  }

  void largePassesSplitOrSkip() {
    // A memory limit per pass: a batch over it runs in halves (the statistics unchanged); a
    // sentence that alone is over it is skipped, naming the sizes.
    const Model& m = model("reorder");
    Corpus corpus = corpusFromHeldOut("reorder");
    corpus.entries.resize(20);
    ForwardOptions fo;
    std::vector<uint64_t> alone;
    size_t S = 0, T = 0;
    for (const CorpusEntry& e : corpus.entries) {
      const Inputs in = aloneInputs(m, e);
      S = std::max(S, in.src[0].size());
      T = std::max(T, in.tgt[0].size());
      alone.push_back(m.estimatePassBytes(1, (int)in.src[0].size(), (int)in.tgt[0].size(), fo));
    }
    AtlasOptions o;
    o.run.batch = 8;
    o.run.max_batch_bytes = m.estimatePassBytes(3, (int)S, (int)T, fo);
    const Atlas split = buildAtlas(m, corpus, o);
    QCOMPARE(split.run.sentences, 20);
    QVERIFY2(split.run.batches > 3, qPrintable(QString::number(split.run.batches)));  // not 8, 8, 4
    compare(split, perSentence(m, corpus, 20), 5);

    std::vector<uint64_t> sorted = alone;
    std::sort(sorted.begin(), sorted.end());
    const uint64_t median = sorted[10];
    o.run.max_batch_bytes = median;
    o.run.max_reported_skips = 20;
    const Atlas some = buildAtlas(m, corpus, o);
    int over = 0;
    for (uint64_t b : alone) over += b > median;
    QVERIFY(over > 0 && over < 20);
    QCOMPARE(some.run.skipped_count, over);
    QCOMPARE(some.run.sentences, 20 - over);
    for (const SkippedSentence& k : some.run.skipped) {
      QVERIFY(alone[size_t(k.sentence)] > median);
      QVERIFY2(QString::fromStdString(k.reason).contains("more than the limit"), k.reason.c_str());
    }
    for (size_t k = 1; k < some.run.skipped.size(); ++k)
      QVERIFY(some.run.skipped[k - 1].sentence < some.run.skipped[k].sentence);  // in order
    o.run.max_batch_bytes = 1;
    const auto none = test::caught([&] { buildAtlas(m, corpus, o); });
    QVERIFY(none && none->kind() == ErrorKind::BadInput);
  }

  void limitAndTaskCorpus() {
    // The Train view's task data: the reverse task's held-out pairs, on the bundled reverse model
    // (trained on that task: its vocabularies are the task's).
    const Model& m = model("reverse");
    const Corpus corpus = trainingTaskCorpus(*makeTask("reverse"));
    QVERIFY(corpus.entries.size() > 20);
    for (const CorpusEntry& e : corpus.entries) QVERIFY(e.has_tgt && !e.tgt.empty());
    AtlasOptions o;
    o.run.limit = 20;
    o.run.batch = 7;
    const Atlas atlas = buildAtlas(m, corpus, o);
    QCOMPARE(atlas.run.sentences, 20);
    QCOMPARE(atlas.run.skipped_count, 0);
    compare(atlas, perSentence(m, corpus, 20), 5);
  }

  void examplesCorpus() {
    const Model& m = model("reorder");
    const Corpus c = corpusFromExamples(m.config());
    QCOMPARE(c.entries.size(), m.config().examples.size());
    QVERIFY(!c.entries.empty());
    QCOMPARE(c.entries[0].src, m.config().examples[0].src);
    QCOMPARE(buildAtlas(m, c).run.sentences, (int)c.entries.size());
  }

  // ---- the evidence and the ranking -----------------------------------------------------------

  void extremeValuesAgainstSort() {
    // A stream with ties and NaNs against a full sort, for k below, at and above its length.
    std::mt19937 rng(1);
    std::uniform_int_distribution<int> value(0, 9);
    std::vector<SentenceValue> all;
    for (int s = 0; s < 60; ++s) all.push_back({s, s % 13 == 0 ? NAN : double(value(rng)) / 4});
    for (int k : {0, 1, 5, 54, 80}) {
      ExtremeValues e(k);
      for (const SentenceValue& v : all) e.add(v.sentence, v.value);
      std::vector<SentenceValue> defined;
      for (const SentenceValue& v : all)
        if (!std::isnan(v.value)) defined.push_back(v);
      for (bool largest : {true, false}) {
        std::vector<SentenceValue> sorted = defined;
        std::stable_sort(sorted.begin(), sorted.end(), [&](auto& a, auto& b) {
          return largest ? a.value > b.value : a.value < b.value;
        });
        sorted.resize(std::min(sorted.size(), size_t(k)));
        const std::vector<SentenceValue> got = largest ? e.top() : e.bottom();
        QCOMPARE(got.size(), sorted.size());
        for (size_t r = 0; r < got.size(); ++r) {
          QCOMPARE(got[r].sentence, sorted[r].sentence);
          QCOMPARE(got[r].value, sorted[r].value);
        }
      }
    }
  }

  void momentsByHand() {
    Moments m;
    QVERIFY(std::isnan(m.meanOrNaN()) && std::isnan(m.sd()));
    for (double v : {2.0, 4.0, double(NAN), 4.0, 4.0, 5.0, 5.0, 7.0, 9.0}) m.add(v);
    QCOMPARE(m.count, int64_t(8));
    QCOMPARE(m.mean, 5.0);
    QVERIFY(std::abs(m.sd() - 2.0) < 1e-12);  // the textbook example: population sd 2
  }

  void headsLikeRanksByDistance() {
    const Model& m = model("reorder");
    Corpus corpus = corpusFromHeldOut("reorder");
    corpus.entries.resize(12);
    const Atlas atlas = buildAtlas(m, corpus);
    const int me = 13;
    const std::vector<HeadDistance> like = headsLike(atlas, me);
    QCOMPARE(like.size(), atlas.heads.size() - 1);
    auto keys = [](const AtlasHead& h) { return (int)std::lround(h.keys.mean); };
    for (size_t k = 0; k < like.size(); ++k) {
      QVERIFY(like[k].index != me);
      const AtlasHead& a = atlas.heads[size_t(me)];
      const AtlasHead& b = atlas.heads[size_t(like[k].index)];
      QCOMPARE(like[k].distance, headDistance(a.means(), b.means(), keys(a), keys(b)));
      if (k > 0) QVERIFY(like[k - 1].distance <= like[k].distance);
    }
    // The means are the Moments' means.
    const HeadStats means = atlas.heads[0].means();
    QCOMPARE(means.entropy, atlas.heads[0].stat(HeadStat::Entropy).mean);
    QVERIFY(std::isnan(means.monotonicity));  // an encoder head has none
    QVERIFY_THROWS_EXCEPTION(Error, headsLike(atlas, (int)atlas.heads.size()));
  }

  void jsonHasEverything() {
    const Model& m = model("reorder");
    Corpus corpus = corpusFromHeldOut("reorder");
    corpus.entries.resize(9);
    AtlasOptions o;
    o.top_k = 2;
    const Atlas atlas = buildAtlas(m, corpus, o);
    const nlohmann::json j = nlohmann::json::parse(atlasJson(atlas, corpus));
    QCOMPARE(j["sentences"].get<int>(), 9);
    QCOMPARE(j["heads"].size(), atlas.heads.size());
    const nlohmann::json& e = j["heads"][0]["stats"]["entropy"];
    QCOMPARE(e["mean"].get<double>(), atlas.heads[0].stat(HeadStat::Entropy).mean);
    QCOMPARE(e["count"].get<int>(), 9);
    QCOMPARE(e["top"].size(), size_t(2));
    const int s = e["top"][0]["sentence"].get<int>();
    QCOMPARE(e["top"][0]["src"].get<std::string>(), corpus.entries[size_t(s)].src);
    QVERIFY(j["heads"][0]["stats"]["monotonicity"]["mean"].is_null());  // NaN → null
  }

  // ---- lines longer than the context, cut into chunks -----------------------------------------

  void cutIntoChunksByHand() {
    ModelConfig c;
    c.src_bos_eos = true;  // BOS … EOS around the source, as BART's tokenizer
    c.src_bos_id = 1;
    c.src_eos_id = 2;
    using Ids = std::vector<std::vector<int>>;
    const std::vector<int> bart = {1, 10, 11, 12, 13, 14, 15, 16, 2};
    QCOMPARE(cutIntoChunks(c, Side::Source, bart, 5),
             (Ids{{1, 10, 11, 12, 2}, {1, 13, 14, 15, 2}, {1, 16, 2}}));
    QCOMPARE(cutIntoChunks(c, Side::Source, bart, 9), Ids{bart});  // fits: as it is
    c.src_bos_id = -1;                                             // T5: </s> only
    QCOMPARE(cutIntoChunks(c, Side::Source, {10, 11, 12, 13, 14, 15, 16, 2}, 4),
             (Ids{{10, 11, 12, 2}, {13, 14, 15, 2}, {16, 2}}));
    c.src_bos_eos = false;  // no markers: the ids as they come
    QCOMPARE(cutIntoChunks(c, Side::Source, {10, 11, 12, 13, 2}, 2),
             (Ids{{10, 11}, {12, 13}, {2}}));
    c.bos_id = 1;  // a decoder-only model's text: the start token again in front of every chunk
    QCOMPARE(cutIntoChunks(c, Side::Target, {1, 10, 11, 12, 13, 14, 15, 16}, 3),
             (Ids{{1, 10, 11}, {1, 12, 13}, {1, 14, 15}, {1, 16}}));
    const auto no_room = test::caught([&] { cutIntoChunks(c, Side::Target, {1, 10, 11}, 1); });
    QVERIFY(no_room && no_room->kind() == ErrorKind::BadInput);
    QVERIFY2(QString(no_room->what()).contains("no room"), no_room->what());
  }

  // A line longer than the context, cut into chunks, gives exactly the statistics of its chunks
  // given as lines of their own (the same passes, in the same batches); the evidence names the
  // line and the chunk.
  void longLinesCutIntoChunks_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("words");
    QTest::addColumn<int>("chunks");
    // reorder: 128 positions, no source markers, each chunk greedy-decodes its own target.
    QTest::newRow("encoder-decoder source") << "reorder" << 300 << 3;
    // gpt003: 32 positions, the start token S in front: 31 words a chunk.
    QTest::newRow("decoder-only") << "gpt003" << 70 << 3;
  }
  void longLinesCutIntoChunks() {
    QFETCH(QString, name);
    QFETCH(int, words);
    QFETCH(int, chunks);
    const Model& m = model(name.toStdString());
    const ModelConfig& c = m.config();
    const bool enc = c.hasEncoder();
    const std::vector<std::string> vocab =
        plainWords(enc ? c.src_vocab : c.tgt_vocab, enc ? 2 : 3);  // no <pad> <unk> (P S E)
    // The tokens the encoding adds around one word: the room for words in a chunk.
    const int markers = int((enc ? m.encodeSource(vocab[0]) : m.encodeTarget(vocab[0])).size()) - 1;
    const int room = m.maxPositions() - markers;
    QCOMPARE((words + room - 1) / room, chunks);
    std::mt19937 rng(17);
    std::uniform_int_distribution<size_t> pick(0, vocab.size() - 1);
    std::vector<std::string> long_words;
    for (int k = 0; k < words; ++k) long_words.push_back(vocab[pick(rng)]);
    auto lineOf = [](auto from, auto to) {
      std::string s;
      for (auto w = from; w != to; ++w) s += (s.empty() ? "" : " ") + *w;
      return s;
    };
    const Corpus shorts = randomCorpus(vocab, 2, 8, 11);
    Corpus whole, split;
    whole.origin = split.origin = "long";
    whole.entries = {
        shorts.entries[0], {lineOf(long_words.begin(), long_words.end())}, shorts.entries[1]};
    split.entries.push_back(shorts.entries[0]);
    for (int k = 0; k < words; k += room)
      split.entries.push_back(
          {lineOf(long_words.begin() + k, long_words.begin() + std::min(k + room, words))});
    split.entries.push_back(shorts.entries[1]);
    QCOMPARE((int)split.entries.size(), chunks + 2);

    AtlasOptions o;
    o.run.batch = 3;  // batches that mix short lines and chunks, padded
    o.run.chunk = true;
    const Atlas a = buildAtlas(m, whole, o);
    QCOMPARE(a.run.cut_lines, 1);
    QCOMPARE(a.run.chunks, chunks);
    QCOMPARE(a.run.sentences, chunks + 2);
    QCOMPARE(a.run.skipped_count, 0);
    QCOMPARE(a.run.too_long, 0);
    const Atlas b = buildAtlas(m, split, o);
    QCOMPARE(b.run.cut_lines, 0);
    QCOMPARE(b.run.sentences, chunks + 2);
    QCOMPARE(a.run.batches, b.run.batches);
    // Sentence s of `split` is line 1's chunk s − 1, or a short line.
    auto asWhole = [&](int s) {
      if (s == 0) return std::pair(0, -1);
      if (s == chunks + 1) return std::pair(2, -1);
      return std::pair(1, s - 1);
    };
    QCOMPARE(a.heads.size(), b.heads.size());
    int chunk_evidence = 0;
    for (size_t h = 0; h < a.heads.size(); ++h)
      for (HeadStat st : kHeadStats) {
        const Moments &x = a.heads[h].stat(st), &y = b.heads[h].stat(st);
        const QString where = QStringLiteral("head %1 %2").arg(h).arg(headStatName(st));
        QVERIFY2(x.count == y.count, qPrintable(where));
        QVERIFY2(x.mean == y.mean && x.m2 == y.m2, qPrintable(where));  // exactly
        for (bool top : {true, false}) {
          const auto ex = top ? a.heads[h].extremes[size_t(st)].top()
                              : a.heads[h].extremes[size_t(st)].bottom();
          const auto ey = top ? b.heads[h].extremes[size_t(st)].top()
                              : b.heads[h].extremes[size_t(st)].bottom();
          QCOMPARE(ex.size(), ey.size());
          for (size_t k = 0; k < ex.size(); ++k) {
            QVERIFY2(ex[k].value == ey[k].value, qPrintable(where));
            QVERIFY2(std::pair(ex[k].sentence, ex[k].chunk) == asWhole(ey[k].sentence),
                     qPrintable(where));
            chunk_evidence += ex[k].chunk >= 0;
          }
        }
      }
    QVERIFY(chunk_evidence > 0);
    // The JSON tells the cut and which chunk each piece of evidence is.
    const nlohmann::json j = nlohmann::json::parse(atlasJson(a, whole));
    QCOMPARE(j["cut_lines"].get<int>(), 1);
    QCOMPARE(j["chunks"].get<int>(), chunks);
    QCOMPARE(j["too_long"].get<int>(), 0);
    int chunk_items = 0;
    for (const nlohmann::json& head : j["heads"])
      for (const nlohmann::json& stat : head["stats"])
        for (const nlohmann::json& item : stat["top"])
          if (item.contains("chunk")) {
            QCOMPARE(item["sentence"].get<int>(), 1);
            QVERIFY(item["chunk"].get<int>() >= 1 && item["chunk"].get<int>() <= chunks);
            ++chunk_items;
          }
    QVERIFY(chunk_items > 0);
    // The query–key embedding runs the same chunks: each chunk's queries and keys (text tokens and
    // markers), named by line and chunk.
    HeadEmbeddingOptions eo;
    eo.run = o.run;
    eo.max_points = 100000;
    const AtlasHead& h0 = a.heads[0];
    const HeadEmbedding emb = headEmbedding(m, whole, h0.kind, h0.layer, h0.head, eo);
    QCOMPARE(emb.sentences, chunks + 2);
    QCOMPARE(emb.run.chunks, chunks);
    std::set<int> chunk_ids;
    int chunk_points = 0;
    for (const EmbeddingPoint& p : emb.points)
      if (p.chunk >= 0) {
        QCOMPARE(p.sentence, 1);
        QVERIFY(p.position < m.maxPositions());
        chunk_ids.insert(p.chunk);
        ++chunk_points;
      }
    QCOMPARE((int)chunk_ids.size(), chunks);
    QCOMPARE(chunk_points, 2 * (words + chunks * markers));

    // Without the option the line is skipped as too long, saying that it could be cut.
    o.run.chunk = false;
    const Atlas skipped = buildAtlas(m, whole, o);
    QCOMPARE(skipped.run.sentences, 2);
    QCOMPARE(skipped.run.too_long, 1);
    QCOMPARE(skipped.run.skipped_count, 1);
    QCOMPARE(skipped.run.cut_lines, 0);
    QCOMPARE(skipped.run.skipped[0].sentence, 1);
    const QString why = QString::fromStdString(skipped.run.skipped[0].reason);
    QVERIFY2(why.contains(QStringLiteral("%1 tokens").arg(words + markers)), qPrintable(why));
    QVERIFY2(why.contains("cut into chunks"), qPrintable(why));
  }

  // An encoder-decoder's context is its source: a source–target pair is never cut (which words of
  // the target go with which chunk is unknown) and a target too long is not cut either; both are
  // skipped saying so, and counted as too long.
  void pairsAreNotCut() {
    const Model& m = model("reorder");
    const std::vector<std::string> vocab = plainWords(m.config().src_vocab, 2);
    std::string long_src, long_tgt;
    for (int k = 0; k < 130; ++k) long_src += (k ? " " : "") + vocab[size_t(k) % vocab.size()];
    const std::vector<std::string> tgt_words = plainWords(m.config().tgt_vocab, 4);
    for (int k = 0; k < 140; ++k) long_tgt += (k ? " " : "") + tgt_words[size_t(k) % 20];
    Corpus corpus = corpusFromHeldOut("reorder");
    corpus.entries.resize(3);
    corpus.entries.push_back({long_src, "nara", true});
    corpus.entries.push_back({"the dog", long_tgt, true});
    AtlasOptions o;
    o.run.chunk = true;
    const Atlas a = buildAtlas(m, corpus, o);
    QCOMPARE(a.run.sentences, 3);
    QCOMPARE(a.run.cut_lines, 0);
    QCOMPARE(a.run.too_long, 2);
    QCOMPARE(a.run.skipped.size(), size_t(2));
    const QString pair = QString::fromStdString(a.run.skipped[0].reason);
    QVERIFY2(pair.contains("130 tokens") && pair.contains("pair is not cut"), qPrintable(pair));
    const QString target = QString::fromStdString(a.run.skipped[1].reason);
    QVERIFY2(target.contains("target is 141 tokens") && target.contains("not cut"),
             qPrintable(target));
  }

  // ---- cancel and progress --------------------------------------------------------------------

  void cancelStops() {
    const Model& m = model("reorder");
    const Corpus corpus = corpusFromHeldOut("reorder");
    std::atomic<bool> cancel{false};
    std::vector<AtlasProgress> seen;
    AtlasOptions o;
    o.run.batch = 8;
    o.run.cancel = &cancel;
    o.run.progress = [&](const AtlasProgress& p) {
      seen.push_back(p);
      if (p.batches == 2) cancel = true;
    };
    const auto e = test::caught([&] { buildAtlas(m, corpus, o); });
    QVERIFY(e && e->kind() == ErrorKind::Cancelled);
    QCOMPARE(seen.size(), size_t(2));  // it stopped before a third batch
    QCOMPARE(seen[1].done, 16);
    QCOMPARE(seen[1].total, (int)corpus.entries.size());
    // Cancelled before it starts: nothing runs; the embedding stops the same way.
    std::atomic<bool> already{true};
    AtlasOptions early;
    early.run.cancel = &already;
    early.run.progress = [&](const AtlasProgress&) { QFAIL("no batch may run once cancelled"); };
    const auto e2 = test::caught([&] { buildAtlas(m, corpus, early); });
    QVERIFY(e2 && e2->kind() == ErrorKind::Cancelled);
    HeadEmbeddingOptions eo;
    eo.run.cancel = &already;
    const auto e3 = test::caught([&] { headEmbedding(m, corpus, AttentionKind::Cross, 0, 0, eo); });
    QVERIFY(e3 && e3->kind() == ErrorKind::Cancelled);
  }

  // ---- bad corpora ----------------------------------------------------------------------------

  void badLinesReported() {
    const Model& m = model("reorder");
    const std::string dir = QDir::tempPath().toStdString() + "/attnviz-atlas-test";
    std::filesystem::create_directories(dir);
    std::string long_line;
    for (int k = 0; k < 200; ++k) long_line += "the dog ";
    const std::string path = dir + "/corpus.txt";
    writeFile(path,
              "\xEF\xBB\xBFthe big dog sees a small cat\r\n"  // 1: fine (a BOM, CR LF)
              "\n"                                            // 2: empty
              "   \n"                                         // 3: spaces only
                  + long_line +
                  "\n"                     // 4: too long
                  "the \xFF\xFE cat\n"     // 5: not UTF-8
                  "the big dog\t\n"        // 6: a pair without a target
                  "the dog\tnara lugol\n"  // 7: a pair, teacher-forced
                  "\tnara\n"               // 8: a pair without a source
                  "a cat sees the dog");   // 9: fine, no final newline
    const Corpus c = readCorpusFile(path);
    QCOMPARE(c.empty_lines, 2);
    QCOMPARE(c.invalid_utf8_lines, std::vector<int>{5});
    QCOMPARE(c.entries.size(), size_t(6));
    QCOMPARE(c.entries[0].src, std::string("the big dog sees a small cat"));
    QCOMPARE(c.entries[3].src, std::string("the dog"));
    QCOMPARE(c.entries[3].tgt, std::string("nara lugol"));
    QVERIFY(c.entries[3].has_tgt);
    QCOMPARE(c.entries[5].line, 9);
    AtlasOptions o;
    o.run.max_reported_skips = 3;
    const Atlas atlas = buildAtlas(m, c, o);
    QCOMPARE(atlas.run.sentences, 3);  // lines 1, 7, 9
    QCOMPARE(atlas.run.skipped_count, 4);
    QCOMPARE(atlas.run.skipped.size(), size_t(3));  // the first three, in line order
    QCOMPARE(atlas.run.skipped[0].line, 4);
    QVERIFY2(QString::fromStdString(atlas.run.skipped[0].reason).contains("at most 128"),
             atlas.run.skipped[0].reason.c_str());
    QCOMPARE(atlas.run.skipped[1].line, 5);
    QCOMPARE(atlas.run.skipped[2].line, 6);
    QVERIFY(QString::fromStdString(atlas.run.skipped[2].reason).contains("target is empty"));

    // A decoder-only model given a pair skips it, naming why.
    const Model& gpt = model("gpt003");
    writeFile(path, "the cat sat\nthe dog\tran\n");
    const Atlas g = buildAtlas(gpt, readCorpusFile(path));
    QCOMPARE(g.run.sentences, 1);
    QCOMPARE(g.run.skipped.size(), size_t(1));
    QVERIFY(QString::fromStdString(g.run.skipped[0].reason).contains("no encoder"));
    // No sentence the model can run: an error naming the first reason.
    writeFile(path, "the dog\tran\n");
    const auto none = test::caught([&] { buildAtlas(gpt, readCorpusFile(path)); });
    QVERIFY(none && none->kind() == ErrorKind::BadInput);
    QVERIFY2(QString(none->what()).contains("no encoder"), none->what());
  }

  void filesThatAreNoCorpus() {
    const std::string dir = QDir::tempPath().toStdString() + "/attnviz-atlas-test";
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/not-a-corpus";
    auto kindOf = [&](const std::string& bytes, uint64_t max = kMaxCorpusBytes) {
      writeFile(path, bytes);
      const auto e = test::caught([&] { readCorpusFile(path, max); });
      return e ? std::optional<ErrorKind>(e->kind()) : std::nullopt;
    };
    QCOMPARE(kindOf(std::string("PK\x03\x04\0\0binary", 12)), ErrorKind::BadInput);  // a NUL
    QCOMPARE(kindOf("\xFF\xFE\n\x80\x81\nok\n"), ErrorKind::BadInput);  // mostly not UTF-8
    QCOMPARE(kindOf("\n  \n\n"), ErrorKind::BadInput);                  // no sentence
    QCOMPARE(kindOf(""), ErrorKind::BadInput);
    QCOMPARE(kindOf(std::string(4096, 'a'), 1024), ErrorKind::TooLarge);  // huge
    const auto missing = test::caught([&] { readCorpusFile(dir + "/no-such-file"); });
    QVERIFY(missing && missing->kind() == ErrorKind::Io);
    const auto no_held_out = test::caught([] { corpusFromHeldOut("no-such-model"); });
    QVERIFY(no_held_out && no_held_out->kind() == ErrorKind::Io);
    // Options out of range.
    const Model& m = model("reorder");
    const Corpus c = corpusFromExamples(m.config());
    AtlasOptions bad;
    bad.run.batch = 0;
    QVERIFY_THROWS_EXCEPTION(Error, buildAtlas(m, c, bad));
  }

  // ---- PCA --------------------------------------------------------------------------------------

  void pcaAgainstNumpy() {
    if (atlasRefDir().empty())
      QSKIP("ATTNVIZ_ATLAS_REF_DIR is not set (the make_atlas_references fixture sets it)");
    std::ifstream f(atlasRefDir() + "/pca_references.json");
    QVERIFY(f.good());
    const nlohmann::json ref = nlohmann::json::parse(f);
    QCOMPARE(ref["cases"].size(), size_t(3));
    for (const nlohmann::json& c : ref["cases"]) {
      const int rows = c["rows"], dims = c["dims"], k = c["components"];
      const std::vector<float> input = c["input"].get<std::vector<float>>();
      QCOMPARE((int)input.size(), rows * dims);
      const Pca p = principalComponents(input.data(), rows, dims, k);
      const QString name = QString::fromStdString(c["name"].get<std::string>());
      for (int d = 0; d < dims; ++d)
        QVERIFY2(std::abs(p.mean[size_t(d)] - c["mean"][d].get<double>()) < 1e-9, qPrintable(name));
      for (int a = 0; a < k; ++a) {
        // The same axis up to its sign: the sign that makes the two agree best.
        double dot = 0;
        for (int d = 0; d < dims; ++d)
          dot += p.axes[size_t(a) * dims + d] * c["axes"][a][d].get<double>();
        const double sign = dot < 0 ? -1 : 1;
        for (int d = 0; d < dims; ++d)
          QVERIFY2(
              std::abs(p.axes[size_t(a) * dims + d] - sign * c["axes"][a][d].get<double>()) < 1e-8,
              qPrintable(name + QStringLiteral(" axis %1").arg(a)));
        for (int r = 0; r < rows; ++r)
          QVERIFY2(std::abs(p.projections[size_t(r) * k + a] -
                            sign * c["projections"][r][a].get<double>()) < 1e-8,
                   qPrintable(name + QStringLiteral(" projection %1 on %2").arg(r).arg(a)));
        const double want = c["explained_variance"][a], ratio = c["explained_ratio"][a];
        QVERIFY2(std::abs(p.explained_variance[size_t(a)] - want) < 1e-10 * std::max(1.0, want),
                 qPrintable(name));
        QVERIFY2(std::abs(p.explained_ratio[size_t(a)] - ratio) < 1e-10, qPrintable(name));
      }
    }
  }

  void pcaByHand() {
    // Points on the line y = 2x (and z = 0) around (1, 1, 1): one axis, (1, 2, 0)/√5, carries all
    // the variance.
    std::vector<float> pts;
    for (float t : {-2.f, -1.f, 0.f, 1.f, 2.f}) pts.insert(pts.end(), {1 + t, 1 + 2 * t, 1.f});
    const Pca p = principalComponents(pts.data(), 5, 3, 2);
    QVERIFY(std::abs(p.axes[0] - 1 / std::sqrt(5.0)) < 1e-9);
    QVERIFY(std::abs(p.axes[1] - 2 / std::sqrt(5.0)) < 1e-9);  // its largest entry positive
    QVERIFY(std::abs(p.explained_ratio[0] - 1) < 1e-12);
    QVERIFY(std::abs(p.explained_variance[0] - 5 * 10.0 / 4) < 1e-9);  // Σ t²·5 / (n − 1)
    QVERIFY(std::abs(p.projections[0] + 2 * std::sqrt(5.0)) < 1e-9);
    QVERIFY_THROWS_EXCEPTION(Error, principalComponents(pts.data(), 1, 3, 1));
    QVERIFY_THROWS_EXCEPTION(Error, principalComponents(pts.data(), 5, 3, 4));
  }

  void embeddingOfQueriesAndKeys() {
    // Cross-attention head 2 of layer 2 of the reorder model: its queries (target tokens) and
    // keys (source tokens) of each sentence, from one-sentence passes that keep them, pooled and
    // projected by principalComponents — the embedding's points up to each axis's sign.
    const Model& m = model("reorder");
    Corpus corpus = corpusFromHeldOut("reorder");
    corpus.entries.resize(10);
    HeadEmbeddingOptions o;
    o.run.batch = 3;
    o.max_points = 150;
    const HeadEmbedding e = headEmbedding(m, corpus, AttentionKind::Cross, 1, 2, o);
    std::vector<float> rows;
    std::vector<std::pair<bool, std::string>> tokens;
    int sentences = 0;
    for (const CorpusEntry& entry : corpus.entries) {
      ForwardOptions fo;
      fo.keep_qkv = true;
      const Trace t = m.forward(aloneInputs(m, entry), fo);
      const AttentionBlock* a = t.block(AttentionKind::Cross, 1);
      if ((int)tokens.size() + a->q_len + a->k_len > o.max_points) break;
      for (int i = 0; i < a->q_len; ++i) {
        rows.insert(rows.end(), a->qRow(0, 2, i), a->qRow(0, 2, i) + a->d_k);
        tokens.emplace_back(true, t.tgt_tokens[0][size_t(i)]);
      }
      for (int j = 0; j < a->k_len; ++j) {
        rows.insert(rows.end(), a->kRow(0, 2, j), a->kRow(0, 2, j) + a->d_k);
        tokens.emplace_back(false, t.src_tokens[0][size_t(j)]);
      }
      ++sentences;
    }
    QVERIFY(sentences < 10);  // the cap took effect
    QVERIFY(e.capped);
    QCOMPARE(e.sentences, sentences);
    QCOMPARE(e.points.size(), tokens.size());
    const Pca p = principalComponents(rows.data(), (int)tokens.size(), m.config().d_k, 2);
    for (int axis = 0; axis < 2; ++axis) {
      double dot = 0;
      for (size_t i = 0; i < tokens.size(); ++i)
        dot += (axis ? e.points[i].y : e.points[i].x) * p.projections[2 * i + size_t(axis)];
      const double sign = dot < 0 ? -1 : 1;
      for (size_t i = 0; i < tokens.size(); ++i)
        QVERIFY2(std::abs((axis ? e.points[i].y : e.points[i].x) -
                          sign * p.projections[2 * i + size_t(axis)]) < 1e-4,
                 qPrintable(QStringLiteral("point %1 axis %2").arg(i).arg(axis)));
      QVERIFY(std::abs(e.explained_variance[size_t(axis)] - p.explained_variance[size_t(axis)]) <
              1e-4 * p.explained_variance[size_t(axis)]);
    }
    for (size_t i = 0; i < tokens.size(); ++i) {
      QCOMPARE(e.points[i].query, tokens[i].first);
      QCOMPARE(e.points[i].token, tokens[i].second);
    }
    QVERIFY(e.explained_ratio[0] >= e.explained_ratio[1] && e.explained_ratio[1] > 0);
    // A head the model does not have.
    QVERIFY_THROWS_EXCEPTION(Error, headEmbedding(m, corpus, AttentionKind::Cross, 2, 0));
    QVERIFY_THROWS_EXCEPTION(Error, headEmbedding(m, corpus, AttentionKind::EncoderSelf, 0, 4));
  }
};

QTEST_GUILESS_MAIN(TestAtlas)
#include "test_atlas.moc"

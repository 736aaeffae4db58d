// attnviz-cli atlas MODEL --corpus FILE: every head over a whole corpus (model/atlas.h) — each
// head statistic's mean ± standard deviation over the sentences, as a table; with --json
// everything (counts, the sentences where each statistic is largest and smallest); --like ranks
// the heads most like one, --embed projects one head's queries and keys on their top two principal
// components; --chunk cuts lines longer than the context into chunks. Progress goes to stderr.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "base/atomic_file.h"
#include "base/error.h"
#include "cli_common.h"
#include "commands.h"
#include "model/atlas.h"
#include "model/circuits.h"
#include "model/trace_dump.h"
#include "train/task_corpus.h"

namespace attnviz::cli {

namespace {

struct AtlasArgs {
  ModelArgs model;
  std::string corpus, task, json, like, embed;
  bool examples = false, held_out = false, chunk = false;
  int batch = 16, limit = 0, top_k = 5, max_new_tokens = 0, max_points = 4000;
};

// One head, as `run --heads` names it ("enc_self:1:2": layer and head from 1), from 0.
HeadChoice parseHead(const std::string& text, const char* option) {
  try {
    const std::vector<HeadChoice> h = parseHeadChoices(text);
    if (h.size() != 1)
      throw Error(ErrorKind::Usage, "give one head, not " + std::to_string(h.size()));
    return h.front();
  } catch (const Error& e) {
    throw Error(ErrorKind::Usage,
                std::string(option) + " " + safe(text.substr(0, 80)) + ": " + e.what());
  }
}

Corpus corpusOf(const AtlasArgs& a, const Model& m) {
  const int given = !a.corpus.empty() + a.examples + a.held_out + !a.task.empty();
  if (given != 1)
    throw Error(ErrorKind::Usage,
                "give one corpus: --corpus FILE, --examples, --held-out or --task NAME");
  if (!a.corpus.empty()) return readCorpusFile(a.corpus);
  if (a.examples) {
    Corpus c = corpusFromExamples(m.config());
    if (c.entries.empty())
      throw Error(ErrorKind::BadInput, "the model's config carries no example sentences");
    return c;
  }
  if (a.held_out) return corpusFromHeldOut(a.model.model);
  TaskOptions to;
  return trainingTaskCorpus(*makeTask(a.task, to));
}

std::string meanSd(const Moments& m) {
  if (m.count == 0) return "—";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f±%.3f", m.mean, m.sd());
  return buf;
}

std::string headLabel(AttentionKind kind, int layer, int head) {
  return headChoiceName({kind, layer, head});
}

// Progress on stderr: one line rewritten on a terminal, a line per tenth otherwise.
std::function<void(const AtlasProgress&)> progressPrinter(const char* what) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  auto last_tenth = std::make_shared<int>(-1);
  return [tty, what, last_tenth](const AtlasProgress& p) {
    // What stdout holds goes first: where both go to one pipe, a line of the table is never cut
    // by a progress line.
    std::cout.flush();
    const int tenth = p.total > 0 ? 10 * p.done / p.total : 10;
    if (tty) {
      std::fprintf(stderr, "\r%s: %d/%d sentences, %d batches", what, p.done, p.total, p.batches);
      if (p.done == p.total) std::fprintf(stderr, "\n");
    } else if (tenth != *last_tenth) {
      *last_tenth = tenth;
      std::fprintf(stderr, "%s: %d/%d sentences, %d batches\n", what, p.done, p.total, p.batches);
    }
    std::fflush(stderr);
  };
}

int runAtlas(const AtlasArgs& a) {
  // What --like and --embed name, read before the corpus runs.
  const std::optional<HeadChoice> like =
      a.like.empty() ? std::nullopt : std::optional(parseHead(a.like, "--like"));
  const std::optional<HeadChoice> embed_head =
      a.embed.empty() ? std::nullopt : std::optional(parseHead(a.embed, "--embed"));
  Model m(openModel(a.model), openBackend(a.model));
  const Corpus corpus = corpusOf(a, m);
  CorpusRun run;
  run.batch = a.batch;
  run.limit = a.limit;
  run.max_new_tokens = a.max_new_tokens;
  run.chunk = a.chunk;
  AtlasOptions o;
  o.run = run;
  o.run.progress = progressPrinter("atlas");
  o.top_k = a.top_k;
  const Atlas atlas = buildAtlas(m, corpus, o);
  // The circuit scores are the model's, not the corpus's (model/circuits.h), as the GUI's atlas
  // shows them.
  const AtlasScores scores = atlasScores(m, atlas);

  std::cout << "corpus: " << safe(corpus.origin) << " — " << atlas.run.sentences
            << " sentences run in " << atlas.run.batches << " batches"
            << (atlas.run.same_length_batches
                    ? " of one length each (the masks cannot hide padding)"
                    : "")
            << ", " << std::fixed << std::setprecision(2) << atlas.seconds << " s on "
            << m.backend().description() << "\n";
  if (atlas.run.cut_lines > 0)
    std::cout << "cut into chunks: " << atlas.run.cut_lines << " lines longer than the model's "
              << m.maxPositions() << " positions, into " << atlas.run.chunks
              << " chunks (each counted as a sentence)\n";
  if (atlas.run.too_long > 0 && !a.chunk)
    std::cout << "too long: " << atlas.run.too_long << " lines longer than the model's "
              << m.maxPositions() << " positions were skipped (--chunk cuts them into chunks)\n";
  if (atlas.run.skipped_count > 0) {
    std::cout << "skipped: " << atlas.run.skipped_count << " lines or sentences";
    if (atlas.run.skipped_count > (int)atlas.run.skipped.size())
      std::cout << " (the first " << atlas.run.skipped.size() << " below)";
    std::cout << "\n";
    for (const SkippedSentence& s : atlas.run.skipped)
      std::cout << "  "
                << (s.line > 0 ? "line " + std::to_string(s.line)
                               : "sentence " + std::to_string(s.sentence + 1))
                << ": " << safe(s.reason) << "\n";
  }
  if (corpus.empty_lines > 0)
    std::cout << "empty lines: " << corpus.empty_lines << " (not counted as sentences)\n";

  // The table: every statistic's mean ± standard deviation over the sentences that define it.
  auto printRow = [](std::ostringstream& row) {
    std::string line = row.str();
    line.erase(line.find_last_not_of(' ') + 1);
    std::cout << line << "\n";
  };
  std::ostringstream header;
  header << std::left << std::setw(9) << "kind" << std::setw(6) << "layer" << std::setw(5)
         << "head";
  for (HeadStat s : kHeadStats) header << " " << std::setw(13) << headStatName(s);
  header << " " << std::setw(9) << "induction"
         << " " << std::setw(9) << "copying";
  printRow(header);
  for (const AtlasHead& h : atlas.heads) {
    std::ostringstream row;
    row << std::left << std::setw(9) << attentionKindName(h.kind) << std::setw(6) << h.layer + 1
        << std::setw(5) << h.head + 1;
    for (HeadStat s : kHeadStats) {
      const std::string v = meanSd(h.stat(s));
      // setw counts bytes: "±" takes two, "—" three, for one column each.
      const int pad = 13 - (int)v.size() + (v == "—" ? 2 : 1);
      row << " " << v << std::string(size_t(std::max(pad, 0)), ' ');
    }
    const size_t r = size_t(&h - atlas.heads.data());
    for (double score : {scores.induction[r], scores.copying[r]}) {
      std::ostringstream v;
      v << std::fixed << std::setprecision(3) << score;
      const std::string shown = std::isfinite(score) ? v.str() : "—";
      row << " " << std::setw(shown == "—" ? 11 : 9) << shown;  // "—" is three bytes wide
    }
    printRow(row);
  }
  for (const auto& [what, note] :
       {std::pair{"induction", &scores.induction_note}, std::pair{"copying", &scores.copying_note}})
    if (!note->empty()) std::cout << "no " << what << " scores: " << safe(*note) << "\n";

  if (like) {
    const HeadChoice& n = *like;
    const AtlasHead* h = atlas.find(n.kind, n.layer, n.head);
    if (!h)
      throw Error(ErrorKind::Usage, "--like " + safe(a.like) + ": the model has no such head");
    std::cout << "heads like " << headLabel(n.kind, n.layer, n.head)
              << " over the corpus (distance between their mean profiles):\n";
    int shown = 0;
    for (const HeadDistance& d : headsLike(atlas, int(h - atlas.heads.data()))) {
      if (shown++ == 10) break;
      const AtlasHead& o2 = atlas.heads[size_t(d.index)];
      std::cout << "  " << std::left << std::setw(16) << headLabel(o2.kind, o2.layer, o2.head)
                << std::setprecision(4) << d.distance << "\n";
    }
  }
  std::optional<HeadEmbedding> embedding;
  if (embed_head) {
    const HeadChoice& n = *embed_head;
    HeadEmbeddingOptions eo;
    eo.run = run;
    eo.run.progress = progressPrinter("embedding");
    eo.max_points = a.max_points;
    embedding = headEmbedding(m, corpus, n.kind, n.layer, n.head, eo);
    std::cout << "queries and keys of " << headLabel(n.kind, n.layer, n.head) << ": "
              << embedding->points.size() << " vectors from " << embedding->sentences
              << " sentences" << (embedding->capped ? " (capped by --max-points)" : "")
              << "; the first two principal components explain " << std::setprecision(1)
              << 100 * embedding->explained_ratio[0] << " % and "
              << 100 * embedding->explained_ratio[1] << " % of the variance\n";
  }
  if (!a.json.empty()) {
    writeFileAtomically(a.json,
                        atlasJson(atlas, corpus, embedding ? &*embedding : nullptr, &scores));
    std::cout << "wrote " << safe(a.json) << "\n";
  }
  return 0;
}

}  // namespace

Command addAtlasCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "atlas",
      "every head over a whole corpus: each head statistic's mean ± sd over the sentences "
      "(docs/formats.md \"Head statistics over a corpus\"), the sentences where each is largest "
      "and smallest (--json), heads like one (--like), a head's query–key PCA (--embed)");
  auto a = std::make_shared<AtlasArgs>();
  addModelArgs(cmd, a->model);
  const std::string g = "The corpus (one of)";
  cmd->add_option("--corpus", a->corpus,
                  "a UTF-8 text file: one sentence a line, or source<TAB>target pairs (an "
                  "encoder-decoder's teacher-forced targets; without one it decodes greedily)")
      ->type_name("FILE")
      ->group(g);
  cmd->add_flag("--examples", a->examples, "the example sentences of the model's config")->group(g);
  cmd->add_flag("--held-out", a->held_out,
                "the bundled model's held-out sentences (resources/models/NAME.heldout.json)")
      ->group(g);
  // The parallel task's sentences are the user's own file: --corpus reads it.
  std::vector<std::string> tasks = taskNames();
  std::erase(tasks, std::string("parallel"));
  cmd->add_option("--task", a->task,
                  "the held-out sentences of a training task (attnviz-cli train --task; a "
                  "parallel file: --corpus)")
      ->check(CLI::IsMember(tasks))
      ->group(g);
  cmd->add_option("--json", a->json,
                  "write everything as JSON: per head every statistic's mean, sd, count and its "
                  "top and bottom sentences (docs/formats.md \"Head atlas JSON\")")
      ->type_name("OUT");
  cmd->add_option("--batch", a->batch, "sentences per forward pass (default 16)")
      ->check(CLI::Range(1, 1024))
      ->type_name("N");
  cmd->add_option("--limit", a->limit, "only the first N sentences of the corpus")
      ->check(CLI::Range(1, 100000000))
      ->type_name("N");
  cmd->add_option("--top-k", a->top_k,
                  "sentences kept per head and statistic at each end (default 5)")
      ->check(CLI::Range(0, 100))
      ->type_name("N");
  cmd->add_option("--max-len", a->max_new_tokens,
                  "an encoder-decoder given a line without a target decodes at most N new tokens "
                  "(default: the tutorial's rule, as run)")
      ->check(CLI::Range(1, ConfigLimits::kMaxLen))
      ->type_name("N");
  cmd->add_flag("--chunk", a->chunk,
                "cut a line longer than the model's context into consecutive chunks of at most "
                "the context, by tokens, no overlap, each run as a sentence (the start and end "
                "markers around each); without it such a line is skipped. An encoder-decoder's "
                "context is its source: each chunk decodes its own target; a source<TAB>target "
                "pair is never cut");
  cmd->add_option("--like", a->like,
                  "list the 10 heads most like this one over the corpus (layer and head from 1)")
      ->type_name("KIND:LAYER:HEAD");
  cmd->add_option("--embed", a->embed,
                  "project this head's queries and keys over the corpus on their top two "
                  "principal components (into the JSON)")
      ->type_name("KIND:LAYER:HEAD");
  cmd->add_option("--max-points", a->max_points,
                  "query and key vectors --embed keeps, whole sentences in order (default 4000)")
      ->check(CLI::Range(2, 1000000))
      ->type_name("N");
  return {cmd, [a] { return runAtlas(*a); }};
}

}  // namespace attnviz::cli

// attnviz-cli history: what the checkpoints a training run kept (train --keep-dir) show step by
// step (core/train/history.h): each head's induction and copying scores and statistics on the
// task's held-out probes, and the loss at each position; as a table, CSV, a plot and an APNG.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "base/atomic_file.h"
#include "base/error.h"
#include "commands.h"
#include "train/history.h"
#include "train/history_figures.h"

namespace attnviz::cli {

namespace {

struct HistoryArgs {
  std::string dir, csv, loss_csv, png, apng;
  HistoryOptions options;
  int frame_ms = 700;
};

int runHistory(HistoryArgs a) {
  a.options.progress = [](int done, int total) {
    std::fprintf(stderr, "\rcheckpoint %d/%d", done, total);
    if (done == total) std::fprintf(stderr, "\n");
  };
  const TrainingHistory h = readTrainingHistory(a.dir, a.options);
  // The table: per checkpoint, the batch and probe losses and the best induction head.
  std::printf("%8s  %10s  %10s  %9s  %s\n", "step", "train loss", "probe loss", "induction",
              "best head");
  for (const HistoryPoint& p : h.points) {
    const HeadScore* best = nullptr;
    for (const HeadScore& s : p.induction)
      if (!std::isnan(s.value) && (!best || s.value > best->value)) best = &s;
    char train[32] = "-";
    if (!std::isnan(p.train_loss)) std::snprintf(train, sizeof train, "%.4f", p.train_loss);
    const std::string head = best ? "layer " + std::to_string(best->layer + 1) + " head " +
                                        std::to_string(best->head + 1)
                                  : "-";
    std::printf("%8d  %10s  %10.4f  %9.3f  %s\n", p.step, train, p.probe_loss,
                best ? best->value : std::nan(""), head.c_str());
  }
  const Crossing c = firstCrossing(h);
  if (c.step >= 0)
    std::printf("an induction score first reaches 0.5 at step %d (layer %d head %d)\n", c.step,
                c.head.layer + 1, c.head.head + 1);
  else
    std::printf("no head's induction score reaches 0.5 in the kept steps\n");
  if (!a.csv.empty()) writeFileAtomically(a.csv, historyHeadCsv(h));
  if (!a.loss_csv.empty()) writeFileAtomically(a.loss_csv, historyLossCsv(h));
  if (!a.png.empty()) writeFileAtomically(a.png, encodePng(inductionScorePlot(h)));
  if (!a.apng.empty())
    writeFileAtomically(a.apng, encodeApng(inductionScoreFrames(h), a.frame_ms, 3 * a.frame_ms));
  return 0;
}

}  // namespace

Command addHistoryCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "history",
      "what the checkpoints of a training run (train --keep-dir DIR) show step by step: each "
      "head's induction and copying scores and statistics on the task's held-out probes, and "
      "the loss at each position (docs/training.md); a table on stdout");
  auto a = std::make_shared<HistoryArgs>();
  cmd->add_option("dir", a->dir, "the checkpoint folder (with index.json)")
      ->required()
      ->type_name("DIR");
  cmd->add_option("--csv", a->csv,
                  "write step,block,layer,head,statistic,value for every checkpoint and head")
      ->type_name("FILE.csv");
  cmd->add_option("--loss-csv", a->loss_csv, "write step,position,loss (the probes' mean)")
      ->type_name("FILE.csv");
  cmd->add_option("--png", a->png, "plot the induction score of every head against the step")
      ->type_name("FILE.png");
  cmd->add_option("--apng", a->apng,
                  "an animated PNG: the heads' induction scores as a grid, a frame per checkpoint")
      ->type_name("FILE.png");
  cmd->add_option("--frame-ms", a->frame_ms, "how long each frame of --apng shows (default 700)")
      ->check(CLI::Range(20, 60000))
      ->type_name("MS");
  cmd->add_option("--probes", a->options.probes,
                  "held-out examples of the task to probe with (default 16)")
      ->check(CLI::Range(1, 10000))
      ->type_name("N");
  cmd->add_option("--sequences", a->options.induction.sequences,
                  "repeated random sequences of the induction score (default 8)")
      ->check(CLI::Range(1, 1024))
      ->type_name("N");
  cmd->add_option("--length", a->options.induction.length,
                  "tokens of each half of those sequences (default: the task's --max-len; "
                  "shortened to fit)")
      ->check(CLI::Range(2, 4096))
      ->type_name("L");
  cmd->add_option("--seed", a->options.induction.seed, "seed of those sequences (default 0)")
      ->type_name("S");
  cmd->add_option("--threads", a->options.threads, "CPU threads; 0 = the backend's default")
      ->check(CLI::Range(0, 1024))
      ->type_name("N");
  return {cmd, [a] { return runHistory(*a); }};
}

}  // namespace attnviz::cli

// attnviz-cli train: trains a Transformer on a task (core/train/trainer.h), with progress on
// stderr, a JSON log of loss and accuracy, and the trained model saved as safetensors with its
// config.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "arch/writer.h"
#include "base/error.h"
#include "cli_common.h"
#include "commands.h"
#include "compute/backends.h"
#include "model/circuits.h"
#include "train/history.h"
#include "train/trainer.h"

namespace attnviz::cli {

namespace {

struct TrainArgs {
  TrainConfig tc;  // the task, size, steps, optimizer … (defaults: TrainConfig's)
  std::string norm = "pre";
  std::string schedule = scheduleName(TrainConfig::defaultOptimizer().schedule);
  std::string backend = "cpu";
  std::string out, log;
  std::string recipe;
  std::string keep_dir, keep_steps;
  int keep_every = 0;
  int eval_every = 250;
  int eval_size = 0;
  double target = 0;
};

nlohmann::json stepJson(const Trainer::StepStats& s) {
  return {{"step", s.step},
          {"loss", s.loss},
          {"token_accuracy", s.token_accuracy},
          {"sequence_accuracy", s.sequence_accuracy},
          {"lr", s.lr},
          {"grad_norm", s.grad_norm},
          {"seconds", s.seconds}};
}

nlohmann::json evalJson(const Trainer::Evaluation& e) {
  return {{"step", e.step},   {"exact_match", e.exact_match}, {"correct", e.correct},
          {"total", e.total}, {"seconds", e.seconds},         {"mistakes", e.mistakes}};
}

// --recipe induction: the recipe's settings for every option not given on the command line.
void applyRecipe(TrainArgs& a, const CLI::App& cmd) {
  const TrainConfig r = inductionRecipe();
  TrainConfig& tc = a.tc;
  auto unset = [&](const char* option) { return cmd.count(option) == 0; };
  if (unset("--task")) tc.task = r.task;
  if (unset("--size")) tc.preset = r.preset;
  if (unset("--min-len")) tc.task_options.min_len = r.task_options.min_len;
  if (unset("--max-len")) tc.task_options.max_len = r.task_options.max_len;
  if (unset("--steps")) tc.steps = r.steps;
  if (unset("--batch")) tc.batch = r.batch;
  if (unset("--seed")) tc.seed = r.seed;
  if (unset("--lr")) tc.optimizer.lr = r.optimizer.lr;
  if (unset("--schedule")) a.schedule = scheduleName(r.optimizer.schedule);
  if (unset("--eval-every")) a.eval_every = 100;
}

int runTrain(TrainArgs a) {
  const auto t0 = std::chrono::steady_clock::now();
  TrainConfig& tc = a.tc;
  tc.norm = a.norm == "pre" ? NormPlacement::Pre : NormPlacement::Post;
  tc.optimizer.schedule = scheduleFromName(a.schedule);
  tc.optimizer.decoupled = tc.optimizer.weight_decay > 0;  // AdamW when decaying

  // The folders of the outputs, made now so that a bad path fails before the training.
  for (const std::string& path : {a.out, a.log}) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!path.empty() && !parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec)
      throw Error(ErrorKind::Io,
                  parent.string() + ": cannot create the folder (" + ec.message() + ")");
  }
  KeepPlan plan;
  if (!a.keep_steps.empty()) plan.steps = parseStepList(a.keep_steps);
  plan.every = a.keep_every;
  if (a.keep_dir.empty() != plan.empty())
    throw Error(ErrorKind::Usage, a.keep_dir.empty()
                                      ? "--keep-steps and --keep-every need --keep-dir DIR"
                                      : "--keep-dir needs --keep-steps LIST or --keep-every N");
  std::shared_ptr<Backend> backend = openBackend(a.backend, tc.threads);
  Trainer trainer(tc, backend);
  std::unique_ptr<CheckpointKeeper> keeper;
  if (!a.keep_dir.empty()) {
    keeper = std::make_unique<CheckpointKeeper>(a.keep_dir, tc, plan);
    keeper->keep(trainer, std::nan(""));  // step 0, when the plan lists it
  }
  const Model& model = trainer.model();
  std::fprintf(stderr, "training %s on \"%s\": %s, %lld parameters, batch %d, %d steps, %s\n",
               findPreset(tc.preset).description.c_str(), tc.task.c_str(),
               trainer.task().description().c_str(), (long long)model.parameterCount(), tc.batch,
               tc.steps, backend->description().c_str());

  nlohmann::json log = {{"task", tc.task},
                        {"size", tc.preset},
                        {"norm", a.norm},
                        {"parameters", model.parameterCount()},
                        {"batch", tc.batch},
                        {"steps_planned", tc.steps},
                        {"seed", tc.seed},
                        {"lr", tc.optimizer.lr},
                        {"warmup", tc.optimizer.warmup},
                        {"schedule", scheduleName(tc.optimizer.schedule)},
                        {"backend", backend->description()},
                        {"steps", nlohmann::json::array()},
                        {"evaluations", nlohmann::json::array()}};
  auto evaluate = [&]() {
    const Trainer::Evaluation ev = trainer.evaluate(a.eval_size);
    std::fprintf(stderr, "step %5d  held-out exact match %d/%d = %.1f%%  (%.1f s)\n", ev.step,
                 ev.correct, ev.total, 100 * ev.exact_match, ev.seconds);
    for (const auto& m : ev.mistakes) std::fprintf(stderr, "    %s\n", m.c_str());
    nlohmann::json j = evalJson(ev);
    if (trainer.task().decoderOnly()) {  // a language model: its best induction head so far
      double best = 0;
      std::string where;
      InductionOptions io;
      io.length = tc.task_options.max_len;  // sequences as long as the task's
      for (const HeadScore& s : inductionScores(trainer.model(), io))
        if (s.value > best) {
          best = s.value;
          where = "layer " + std::to_string(s.layer + 1) + " head " + std::to_string(s.head + 1);
        }
      std::fprintf(stderr, "step %5d  best induction score %.3f (%s)\n", ev.step, best,
                   where.c_str());
      j["best_induction_score"] = best;
    }
    log["evaluations"].push_back(j);
    return ev;
  };
  double eval_seconds = 0;
  bool reached = false;
  Trainer::StepStats last;
  for (int s = 0; s < tc.steps && !reached; ++s) {
    last = trainer.step();
    log["steps"].push_back(stepJson(last));
    if (keeper) keeper->keep(trainer, last.loss);
    if (last.step % 50 == 0 || last.step == tc.steps)
      std::fprintf(stderr,
                   "step %5d/%d  loss %.4f  tokens %.1f%%  sequences %.1f%%  lr %.2e  %.1f s\n",
                   last.step, tc.steps, last.loss, 100 * last.token_accuracy,
                   100 * last.sequence_accuracy, last.lr, last.seconds);
    if (a.eval_every > 0 && last.step % a.eval_every == 0 && last.step < tc.steps) {
      const auto ev = evaluate();
      eval_seconds += ev.seconds;
      reached = a.target > 0 && ev.exact_match >= a.target;
    }
  }
  const Trainer::Evaluation final_eval = evaluate();
  eval_seconds += final_eval.seconds;
  saveModel(*trainer.snapshot(), a.out);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The process's CPU time (all threads): what a loaded machine does not inflate.
  const double cpu_seconds = (double)std::clock() / CLOCKS_PER_SEC;
  log["final"] = evalJson(final_eval);
  log["train_seconds"] = last.seconds;
  log["cpu_seconds"] = cpu_seconds;
  log["eval_seconds"] = eval_seconds;
  log["total_seconds"] = total;
  log["out"] = a.out;
  if (keeper) log["kept"] = (int)keeper->index().checkpoints.size();
  std::fprintf(
      stderr,
      "trained %d steps in %.1f s (+ %.1f s evaluating, %.1f s in all, %.1f s of CPU time); "
      "held-out exact match %.1f%%; wrote %s\n",
      trainer.steps(), last.seconds, eval_seconds, total, cpu_seconds, 100 * final_eval.exact_match,
      a.out.c_str());
  if (a.log.empty()) {
    std::cout << log.dump() << "\n";
  } else {
    std::ofstream f(a.log);
    f << log.dump(1) << "\n";
    if (!f) throw Error(ErrorKind::Io, a.log + ": cannot write the log");
  }
  return a.target > 0 && final_eval.exact_match < a.target ? 3 : 0;
}

}  // namespace

Command addTrainCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "train",
      "train a Transformer on a task (docs/training.md): progress on stderr, a JSON log of loss, "
      "accuracy and held-out evaluations on stdout (or --log FILE), the model saved as "
      "safetensors with its config; exit code 3 when --target-accuracy is not reached");
  auto a = std::make_shared<TrainArgs>();
  TrainConfig& tc = a->tc;
  std::vector<std::string> tasks = taskNames(), sizes;
  for (const ModelPreset& p : modelPresets()) sizes.push_back(p.name);

  cmd->add_option("--out", a->out, "where to save the trained model")
      ->required()
      ->type_name("FILE.safetensors");
  cmd->add_option("--log", a->log, "write the JSON log to FILE instead of stdout")
      ->type_name("FILE");
  cmd->add_option("--task", tc.task,
                  "copy, reverse, sort, reorder (the bundled reorder language), parallel "
                  "(--data FILE) or induction (a sequence repeated: a language model; use "
                  "--size attn-only-2l) (default reverse)")
      ->check(CLI::IsMember(tasks))
      ->type_name("NAME");
  cmd->add_option("--data", tc.task_options.path,
                  "the parallel task's sentence pairs, lines \"source<TAB>target\"")
      ->type_name("FILE");
  cmd->add_option("--min-len", tc.task_options.min_len,
                  "shortest sequence of copy, reverse and sort (default 3)")
      ->check(CLI::Range(1, 256))
      ->type_name("N");
  cmd->add_option("--max-len", tc.task_options.max_len,
                  "longest sequence of copy, reverse and sort; the induction task's repeated "
                  "length (default 12)")
      ->check(CLI::Range(1, 256))
      ->type_name("N");
  cmd->add_option("--size", tc.preset,
                  "tiny | small (2+2 layers, d_model 64) | medium | tutorial (6+6, d_model 512) | "
                  "attn-only-2l (a 2-layer attention-only decoder) (default small)")
      ->check(CLI::IsMember(sizes))
      ->type_name("NAME");
  cmd->add_option("--norm", a->norm,
                  "LayerNorm before (pre) or after (post) each block (default pre)")
      ->check(CLI::IsMember({"pre", "post"}));
  cmd->add_option("--steps", tc.steps, "optimizer steps (default 1500)")
      ->check(CLI::Range(0, 100000000))
      ->type_name("N");
  cmd->add_option("--batch", tc.batch, "sentence pairs per step (default 64)")
      ->check(CLI::Range(1, 65536))
      ->type_name("N");
  cmd->add_option("--seed", tc.seed, "seed of the weights, the batches and dropout (default 1)")
      ->check(CLI::Range(uint64_t(0), uint64_t(1) << 62))
      ->type_name("S");
  cmd->add_option("--lr", tc.optimizer.lr, "peak learning rate (default 1e-3)")
      ->check(CLI::Range(1e-9f, 10.0f))
      ->type_name("X");
  cmd->add_option("--warmup", tc.optimizer.warmup, "warm-up steps (default 100)")
      ->check(CLI::Range(0, 100000000))
      ->type_name("N");
  cmd->add_option("--schedule", a->schedule, "learning-rate schedule (default " + a->schedule + ")")
      ->check(CLI::IsMember({"warmup-cosine", "warmup", "constant", "noam"}));
  cmd->add_option("--weight-decay", tc.optimizer.weight_decay,
                  "decoupled weight decay (AdamW) when above 0 (default 0)")
      ->check(CLI::Range(0.0f, 1.0f))
      ->type_name("X");
  cmd->add_option("--clip", tc.optimizer.clip,
                  "clip the gradients' global norm to X; 0 = no clipping (default 1)")
      ->check(CLI::Range(0.0f, 1e9f))
      ->type_name("X");
  cmd->add_option("--dropout", tc.dropout, "dropout probability (default 0)")
      ->check(CLI::Range(0.0f, 0.95f))
      ->type_name("P");
  cmd->add_option("--label-smoothing", tc.label_smoothing,
                  "label smoothing of the cross-entropy (default 0)")
      ->check(CLI::Range(0.0f, 1.0f))
      ->type_name("X");
  cmd->add_option("--threads", tc.threads, "CPU threads; 0 = the backend's default")
      ->check(CLI::Range(0, 1024))
      ->type_name("N");
  cmd->add_option("--backend", a->backend, "compute backend (default cpu)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--recipe", a->recipe,
                  "induction: the induction recipe (docs/training.md) — --task induction --size "
                  "attn-only-2l --max-len 8 --steps 2500 --batch 32 --lr 1e-3 --schedule warmup; "
                  "options given override it")
      ->check(CLI::IsMember({"induction"}))
      ->type_name("NAME");
  cmd->add_option("--keep-dir", a->keep_dir,
                  "keep checkpoints in DIR: step-NNNNNN.safetensors and index.json (steps, loss, "
                  "seed, task), for attnviz-cli history")
      ->type_name("DIR");
  cmd->add_option("--keep-steps", a->keep_steps,
                  "the steps to keep, e.g. 0,50,100 (0 = before training)")
      ->type_name("LIST");
  cmd->add_option("--keep-every", a->keep_every, "keep steps 0, N, 2N, … and the last step")
      ->check(CLI::Range(1, 100000000))
      ->type_name("N");
  cmd->add_option("--eval-every", a->eval_every,
                  "held-out exact match (greedy decoding) every N steps; 0 = only at the end "
                  "(default 250)")
      ->check(CLI::Range(0, 100000000))
      ->type_name("N");
  cmd->add_option("--eval-size", a->eval_size,
                  "the first N held-out pairs per evaluation; 0 = all of them")
      ->check(CLI::Range(0, 100000000))
      ->type_name("N");
  cmd->add_option("--target-accuracy", a->target,
                  "stop once held-out exact match reaches A (e.g. 0.99); 0 = train every step")
      ->check(CLI::Range(0.0, 1.0))
      ->type_name("A");
  return {cmd, [a, cmd] {
            if (!a->recipe.empty()) applyRecipe(*a, *cmd);
            return runTrain(*a);
          }};
}

}  // namespace attnviz::cli

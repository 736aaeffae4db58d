#include "train_command.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "backends.h"
#include "error.h"
#include "trainer.h"
#include "writer.h"

namespace attnviz::cli {

namespace {

// --key value options (every option of train takes a value).
class Options {
 public:
  Options(const std::vector<std::string>& args, const std::vector<std::string>& known) {
    for (size_t i = 0; i < args.size(); ++i) {
      std::string key = args[i], value;
      if (key.rfind("--", 0) != 0)
        throw Error(ErrorKind::Usage, "train takes no positional argument (got \"" + key + "\")");
      key = key.substr(2);
      if (auto eq = key.find('='); eq != std::string::npos) {
        value = key.substr(eq + 1);
        key = key.substr(0, eq);
      } else {
        if (i + 1 >= args.size()) throw Error(ErrorKind::Usage, "--" + key + " needs a value");
        value = args[++i];
      }
      if (std::find(known.begin(), known.end(), key) == known.end())
        throw Error(ErrorKind::Usage, "unknown option --" + key + " for train");
      values_[key] = value;
    }
  }
  std::string get(const std::string& k, const std::string& fallback) const {
    auto it = values_.find(k);
    return it == values_.end() ? fallback : it->second;
  }
  long long integer(const std::string& k, long long fallback, long long lo, long long hi) const {
    if (!values_.count(k)) return fallback;
    const std::string v = values_.at(k);
    size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != v.size())
      throw Error(ErrorKind::Usage, "--" + k + " expects a whole number, got \"" + v + "\"");
    if (n < lo || n > hi)
      throw Error(ErrorKind::Usage, "--" + k + " must be between " + std::to_string(lo) + " and " +
                                        std::to_string(hi) + ", got " + v);
    return n;
  }
  double number(const std::string& k, double fallback, double lo, double hi) const {
    if (!values_.count(k)) return fallback;
    const std::string v = values_.at(k);
    size_t used = 0;
    double x = 0;
    try {
      x = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != v.size() || !(x >= lo && x <= hi))
      throw Error(ErrorKind::Usage, "--" + k + " expects a number in [" + std::to_string(lo) +
                                        ", " + std::to_string(hi) + "], got \"" + v + "\"");
    return x;
  }

 private:
  std::map<std::string, std::string> values_;
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

}  // namespace

std::string trainUsage() {
  return R"(  train --out FILE.safetensors      train a Transformer on a task; progress on stderr, a JSON log of
        [--task reverse]             loss and accuracy on stdout (or --log FILE)
        tasks: copy, reverse, sort, reorder (the bundled reorder language), parallel --data FILE
        (lines "source<TAB>target"); [--min-len 3 --max-len 12] for copy, reverse and sort
        [--size small] tiny | small (2+2 layers, d_model 64) | medium | tutorial (6+6, d_model 512)
        [--norm pre|post] [--steps 1500] [--batch 64] [--seed 1] [--lr 1e-3] [--warmup 100]
        [--schedule warmup-cosine|warmup|constant|noam] [--weight-decay 0] [--clip 1]
        [--dropout 0] [--label-smoothing 0] [--threads T]
        [--eval-every 250] [--eval-size N] [--target-accuracy A]  held-out exact match (greedy);
                                     stop once it reaches A (e.g. 0.99)
)";
}

int runTrain(const std::vector<std::string>& args) {
  const auto t0 = std::chrono::steady_clock::now();
  const Options o(args, {"task",
                         "data",
                         "min-len",
                         "max-len",
                         "size",
                         "norm",
                         "steps",
                         "batch",
                         "seed",
                         "lr",
                         "warmup",
                         "schedule",
                         "weight-decay",
                         "clip",
                         "dropout",
                         "label-smoothing",
                         "threads",
                         "backend",
                         "out",
                         "log",
                         "eval-every",
                         "eval-size",
                         "target-accuracy"});
  const std::string out = o.get("out", "");
  if (out.empty()) throw Error(ErrorKind::Usage, "train needs --out FILE.safetensors");
  TrainConfig tc;
  tc.task = o.get("task", "reverse");
  tc.task_options.path = o.get("data", "");
  tc.task_options.min_len = (int)o.integer("min-len", 3, 1, 256);
  tc.task_options.max_len = (int)o.integer("max-len", 12, 1, 256);
  tc.preset = o.get("size", "small");
  const std::string norm = o.get("norm", "pre");
  if (norm != "pre" && norm != "post")
    throw Error(ErrorKind::Usage, "--norm must be pre or post, got \"" + norm + "\"");
  tc.norm = norm == "pre" ? NormPlacement::Pre : NormPlacement::Post;
  tc.steps = (int)o.integer("steps", 1500, 0, 100000000);
  tc.batch = (int)o.integer("batch", 64, 1, 65536);
  tc.seed = (uint64_t)o.integer("seed", 1, 0, (1ll << 62));
  tc.optimizer.lr = (float)o.number("lr", tc.optimizer.lr, 1e-9, 10);
  tc.optimizer.warmup = (int)o.integer("warmup", tc.optimizer.warmup, 0, 100000000);
  tc.optimizer.schedule = scheduleFromName(o.get("schedule", scheduleName(tc.optimizer.schedule)));
  tc.optimizer.weight_decay = (float)o.number("weight-decay", 0, 0, 1);
  tc.optimizer.decoupled = tc.optimizer.weight_decay > 0;  // AdamW when decaying
  tc.optimizer.clip = (float)o.number("clip", tc.optimizer.clip, 0, 1e9);
  tc.dropout = (float)o.number("dropout", 0, 0, 0.95);
  tc.label_smoothing = (float)o.number("label-smoothing", 0, 0, 1);
  tc.threads = (int)o.integer("threads", 0, 0, 1024);
  const int eval_every = (int)o.integer("eval-every", 250, 0, 100000000);
  const int eval_size = (int)o.integer("eval-size", 0, 0, 100000000);
  const double target = o.number("target-accuracy", 0, 0, 1);
  const std::string backend_name = o.get("backend", "cpu");
  if (backend_name != "cpu" && backend_name != "cuda")
    throw Error(ErrorKind::Usage, "--backend must be cpu or cuda, got \"" + backend_name + "\"");

  // The folders of the outputs, made now so that a bad path fails before the training.
  for (const std::string& path : {out, o.get("log", "")}) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!path.empty() && !parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec)
      throw Error(ErrorKind::Io,
                  parent.string() + ": cannot create the folder (" + ec.message() + ")");
  }
  std::shared_ptr<Backend> backend = createBackend(backend_name);
  if (tc.threads) {
    backend->setThreads(tc.threads);
    if (backend->threads() != tc.threads)
      std::fprintf(stderr,
                   "note: the %s backend runs on %d thread(s); --threads %d has no effect\n",
                   backend->name().c_str(), backend->threads(), tc.threads);
  }
  Trainer trainer(tc, backend);
  const Model& model = trainer.model();
  std::fprintf(stderr, "training %s on \"%s\": %s, %lld parameters, batch %d, %d steps, %s\n",
               findPreset(tc.preset).description.c_str(), tc.task.c_str(),
               trainer.task().description().c_str(), (long long)model.parameterCount(), tc.batch,
               tc.steps, backend->description().c_str());

  nlohmann::json log = {{"task", tc.task},
                        {"size", tc.preset},
                        {"norm", norm},
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
    const Trainer::Evaluation ev = trainer.evaluate(eval_size);
    std::fprintf(stderr, "step %5d  held-out exact match %d/%d = %.1f%%  (%.1f s)\n", ev.step,
                 ev.correct, ev.total, 100 * ev.exact_match, ev.seconds);
    for (const auto& m : ev.mistakes) std::fprintf(stderr, "    %s\n", m.c_str());
    log["evaluations"].push_back(evalJson(ev));
    return ev;
  };
  double eval_seconds = 0;
  bool reached = false;
  Trainer::StepStats last;
  for (int s = 0; s < tc.steps && !reached; ++s) {
    last = trainer.step();
    log["steps"].push_back(stepJson(last));
    if (last.step % 50 == 0 || last.step == tc.steps)
      std::fprintf(stderr,
                   "step %5d/%d  loss %.4f  tokens %.1f%%  sequences %.1f%%  lr %.2e  %.1f s\n",
                   last.step, tc.steps, last.loss, 100 * last.token_accuracy,
                   100 * last.sequence_accuracy, last.lr, last.seconds);
    if (eval_every > 0 && last.step % eval_every == 0 && last.step < tc.steps) {
      const auto ev = evaluate();
      eval_seconds += ev.seconds;
      reached = target > 0 && ev.exact_match >= target;
    }
  }
  const Trainer::Evaluation final_eval = evaluate();
  eval_seconds += final_eval.seconds;
  saveModel(*trainer.snapshot(), out);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log["final"] = evalJson(final_eval);
  log["train_seconds"] = last.seconds;
  // The process's CPU time (all threads): what a loaded machine does not inflate.
  log["cpu_seconds"] = (double)std::clock() / CLOCKS_PER_SEC;
  log["eval_seconds"] = eval_seconds;
  log["total_seconds"] = total;
  log["out"] = out;
  std::fprintf(
      stderr,
      "trained %d steps in %.1f s (+ %.1f s evaluating, %.1f s in all, %.1f s of CPU time); "
      "held-out exact match %.1f%%; wrote %s\n",
      trainer.steps(), last.seconds, eval_seconds, total, (double)std::clock() / CLOCKS_PER_SEC,
      100 * final_eval.exact_match, out.c_str());
  const std::string log_path = o.get("log", "");
  if (log_path.empty()) {
    std::cout << log.dump() << "\n";
  } else {
    std::ofstream f(log_path);
    f << log.dump(1) << "\n";
    if (!f) throw Error(ErrorKind::Io, log_path + ": cannot write the log");
  }
  return target > 0 && final_eval.exact_match < target ? 3 : 0;
}

}  // namespace attnviz::cli

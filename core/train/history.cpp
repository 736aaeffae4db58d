#include "train/history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "arch/weights.h"
#include "arch/writer.h"
#include "base/atomic_file.h"
#include "base/error.h"
#include "base/folder_path.h"
#include "base/json_safe.h"
#include "compute/cpu_backend.h"
#include "model/atlas.h"
#include "model/runs.h"

namespace attnviz {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxCheckpoints = 10000;  // what readTrainingHistory reads of one folder
constexpr int64_t kMaxSteps = 100'000'000;

std::string stepFile(int step) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "step-%06d.safetensors", step);
  return buf;
}

std::string number(double v) {
  if (std::isnan(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

bool KeepPlan::wants(int step, int last_step) const {
  if (std::binary_search(steps.begin(), steps.end(), step)) return true;
  return every > 0 && (step % every == 0 || step == last_step);
}

std::vector<int> parseStepList(const std::string& list) {
  std::vector<int> steps;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, comma - at);
    if (item.empty() || item.size() > 9 ||
        !std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw Error(ErrorKind::Usage,
                  "the steps to keep are numbers separated by commas, e.g. "
                  "0,50,100 (got \"" +
                      list + "\")");
    steps.push_back(std::stoi(item));
    at = comma + 1;
  }
  std::sort(steps.begin(), steps.end());
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  return steps;
}

std::string checkpointIndexPath(const std::string& dir) {
  return (std::filesystem::path(dir) / "index.json").string();
}

std::string checkpointIndexJson(const CheckpointIndex& x) {
  nlohmann::json list = nlohmann::json::array();
  for (const CheckpointEntry& e : x.checkpoints)
    list.push_back({{"step", e.step},
                    {"loss", std::isnan(e.loss) ? nlohmann::json() : nlohmann::json(e.loss)},
                    {"file", e.file}});
  nlohmann::json j = {{"format", "attnviz-checkpoints"},
                      {"version", 1},
                      {"task", x.task},
                      {"min_len", x.task_options.min_len},
                      {"max_len", x.task_options.max_len},
                      {"data", x.task_options.path},
                      {"size", x.size},
                      {"norm", x.norm},
                      {"seed", x.seed},
                      {"steps_planned", x.steps_planned},
                      {"checkpoints", list}};
  return j.dump(1) + "\n";
}

CheckpointIndex readCheckpointIndex(const std::string& dir) {
  const std::string path = checkpointIndexPath(dir);
  if (!std::filesystem::exists(path))
    throw Error(ErrorKind::Io, path +
                                   ": no checkpoint index here (a folder written by "
                                   "a training run that keeps checkpoints has one)");
  const nlohmann::json j = readJsonFile(fileInsideFolder(dir, "index.json", path));
  // An integer field in [lo, hi]: a float, a string or 2^32 + 5 is refused, never narrowed.
  auto integer = [&](const nlohmann::json& obj, const char* key, int64_t lo, int64_t hi,
                     const std::string& where) -> int64_t {
    const nlohmann::json& v = obj.at(key);
    const bool in = (v.is_number_unsigned() && v.get<uint64_t>() <= (uint64_t)hi) ||
                    (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() >= lo &&
                     v.get<int64_t>() <= hi);
    if (!in)
      throw Error(ErrorKind::BadInput, path + ": " + where + "\"" + key + "\" is " +
                                           clipForMessage(v.dump(), 60) + ", expected an integer " +
                                           std::to_string(lo) + " to " + std::to_string(hi));
    return v.is_number_unsigned() ? (int64_t)v.get<uint64_t>() : v.get<int64_t>();
  };
  CheckpointIndex x;
  try {
    if (j.at("format").get<std::string>() != "attnviz-checkpoints") throw std::runtime_error("");
    x.task = j.at("task").get<std::string>();
    x.task_options.min_len = (int)integer(j, "min_len", 0, 256, "");
    x.task_options.max_len = (int)integer(j, "max_len", 0, 256, "");
    x.task_options.path = j.at("data").get<std::string>();
    x.size = j.at("size").get<std::string>();
    x.norm = j.at("norm").get<std::string>();
    const nlohmann::json& seed = j.at("seed");
    if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<int64_t>() >= 0))
      throw Error(ErrorKind::BadInput, path + ": \"seed\" is " + clipForMessage(seed.dump(), 60) +
                                           ", expected an integer 0 to 2^64 - 1");
    x.seed = seed.get<uint64_t>();
    x.steps_planned = (int)integer(j, "steps_planned", 0, kMaxSteps, "");
    const nlohmann::json& list = j.at("checkpoints");
    if (list.is_array() && list.size() > (size_t)kMaxCheckpoints)
      throw Error(ErrorKind::TooLarge, path + ": lists " + std::to_string(list.size()) +
                                           " checkpoints; at most " +
                                           std::to_string(kMaxCheckpoints) + " are read");
    std::unordered_map<int, size_t> by_step;
    std::unordered_map<std::string, int> by_file;
    for (const auto& e : list) {
      CheckpointEntry c;
      const std::string where = "checkpoint " + std::to_string(x.checkpoints.size()) + ": ";
      c.step = (int)integer(e, "step", 0, x.steps_planned, where);
      c.loss = e.at("loss").is_null() ? kNaN : e.at("loss").get<double>();
      c.file = e.at("file").get<std::string>();
      if (c.file.empty() || c.file.find('/') != std::string::npos ||
          c.file.find('\\') != std::string::npos || c.file[0] == '.')
        throw std::runtime_error("");
      if (!by_step.emplace(c.step, x.checkpoints.size()).second)
        throw Error(ErrorKind::BadInput,
                    path + ": step " + std::to_string(c.step) + " is listed twice");
      if (auto [it, fresh] = by_file.emplace(c.file, c.step); !fresh)
        throw Error(ErrorKind::BadInput,
                    path + ": \"" + clipForMessage(c.file, 120) + "\" is listed for steps " +
                        std::to_string(it->second) + " and " + std::to_string(c.step));
      x.checkpoints.push_back(std::move(c));
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception&) {
    throw Error(ErrorKind::BadInput,
                path +
                    ": not a checkpoint index (format, task, min_len, max_len, data, size, "
                    "norm, seed, steps_planned and checkpoints [{step, loss, file}] expected; "
                    "files are names inside the folder)");
  }
  std::sort(x.checkpoints.begin(), x.checkpoints.end(),
            [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step < b.step; });
  return x;
}

CheckpointKeeper::CheckpointKeeper(std::string dir, const TrainConfig& c, KeepPlan plan)
    : dir_(std::move(dir)), plan_(std::move(plan)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec || !std::filesystem::is_directory(dir_))
    throw Error(ErrorKind::Io, dir_ + ": cannot create the checkpoint folder (" +
                                   (ec ? ec.message() : std::string("not a folder")) + ")");
  index_.task = c.task;
  index_.task_options = c.task_options;
  index_.size = c.preset;
  index_.norm = c.norm == NormPlacement::Pre ? "pre" : "post";
  index_.seed = c.seed;
  index_.steps_planned = c.steps;
}

bool CheckpointKeeper::keep(const Trainer& trainer, double loss) {
  const int step = trainer.steps();
  if (!plan_.wants(step, index_.steps_planned)) return false;
  if (!index_.checkpoints.empty() && index_.checkpoints.back().step == step) return false;
  const std::string file = stepFile(step);
  saveModel(*trainer.snapshot(), (std::filesystem::path(dir_) / file).string());
  index_.checkpoints.push_back({step, loss, file});
  writeFileAtomically(checkpointIndexPath(dir_), checkpointIndexJson(index_));
  return true;
}

HistoryPoint historyPoint(const Model& model, const Task& task, const HistoryOptions& o) {
  HistoryPoint h;
  const ModelConfig& c = model.config();
  const auto& held = task.heldOut();
  const int n = std::min<int>(std::max(o.probes, 1), (int)held.size());
  if (n == 0) throw Error(ErrorKind::BadInput, "the task has no held-out examples to probe with");
  Inputs in;
  std::vector<std::vector<int>> targets;
  for (int i = 0; i < n; ++i) {
    const Example& e = held[(size_t)i];
    if (!task.decoderOnly()) in.src.push_back(task.srcIds(e.src));
    std::vector<int> tgt = task.tgtIds(e.tgt);
    std::vector<int> dec{Task::kBos};
    dec.insert(dec.end(), tgt.begin(), tgt.end());
    tgt.push_back(Task::kEos);
    in.tgt.push_back(std::move(dec));
    targets.push_back(std::move(tgt));
  }
  ForwardOptions f;
  f.cancel = o.cancel;
  const Trace t = model.forward(in, f);
  // Per-position cross-entropy: −log softmax(logits)[target], in double.
  size_t longest = 0;
  for (const auto& tg : targets) longest = std::max(longest, tg.size());
  std::vector<double> sum(longest, 0.0);
  std::vector<int> count(longest, 0);
  double total = 0;
  int64_t tokens = 0;
  for (int b = 0; b < n; ++b)
    for (size_t p = 0; p < targets[(size_t)b].size(); ++p) {
      const int target = targets[(size_t)b][p];
      float logit = 0;
      if (!t.logits.logitOf(b, (int)p, target, &logit))
        logit = logitsRow(model, t, b, (int)p)[(size_t)target];
      const double loss = t.logits.logSumExp(b, (int)p) - logit;
      sum[p] += loss;
      ++count[p];
      total += loss;
      ++tokens;
    }
  for (size_t p = 0; p < longest; ++p)
    h.position_loss.push_back(count[p] ? sum[p] / count[p] : kNaN);
  h.probe_loss = tokens ? total / (double)tokens : kNaN;
  // Head statistics: each one's mean over the probes where it is defined, accumulated as the
  // atlas accumulates a corpus (model/atlas.h).
  std::vector<AtlasHead> heads;
  for (int b = 0; b < n; ++b)
    addSentence(heads, headStatistics(t, c, b), b,
                in.src.empty() ? 0 : (int)in.src[size_t(b)].size(), (int)in.tgt[size_t(b)].size(),
                0);
  for (const AtlasHead& a : heads) h.stats.push_back(a.means());
  InductionOptions io = o.induction;
  io.cancel = o.cancel;
  h.induction = inductionScores(model, io);
  h.copying = copyingScores(model, o.cancel);
  return h;
}

TrainingHistory readTrainingHistory(const std::string& dir, const HistoryOptions& o) {
  TrainingHistory history;
  history.index = readCheckpointIndex(dir);
  if (history.index.checkpoints.empty())
    throw Error(ErrorKind::BadInput, checkpointIndexPath(dir) + ": lists no checkpoint");
  const std::unique_ptr<Task> task = makeTask(history.index.task, history.index.task_options);
  HistoryOptions options = o;
  if (options.induction.length <= 0) options.induction.length = history.index.task_options.max_len;
  std::shared_ptr<Backend> backend = makeCpuBackend(o.threads);
  const int total = (int)history.index.checkpoints.size();
  for (int i = 0; i < total; ++i) {
    if (o.cancel && o.cancel->load()) throw Error(ErrorKind::Cancelled, "cancelled");
    const CheckpointEntry& e = history.index.checkpoints[(size_t)i];
    const std::string file = fileInsideFolder(
        dir, e.file,
        checkpointIndexPath(dir) + ": the checkpoint of step " + std::to_string(e.step));
    const Model model(loadModel(file), backend);
    HistoryPoint p = historyPoint(model, *task, options);
    p.step = e.step;
    p.train_loss = e.loss;
    history.points.push_back(std::move(p));
    if (o.progress) o.progress(i + 1, total);
  }
  return history;
}

std::string historyHeadCsv(const TrainingHistory& history) {
  std::string out = "step,block,layer,head,statistic,value\r\n";
  auto line = [&](int step, AttentionKind kind, int layer, int head, const char* name, double v) {
    out += std::to_string(step);
    out += ',';
    out += attentionKindName(kind);
    for (int x : {layer + 1, head + 1}) {
      out += ',';
      out += std::to_string(x);
    }
    out += ',';
    out += name;
    out += ',';
    out += number(v);
    out += "\r\n";
  };
  for (const HistoryPoint& p : history.points) {
    for (const HeadScore& s : p.induction)
      line(p.step, s.kind, s.layer, s.head, "induction", s.value);
    for (const HeadScore& s : p.copying) line(p.step, s.kind, s.layer, s.head, "copying", s.value);
    for (const HeadStats& s : p.stats)
      for (HeadStat st : kHeadStats)
        line(p.step, s.kind, s.layer, s.head, headStatName(st), headStatValue(s, st));
  }
  return out;
}

std::string historyLossCsv(const TrainingHistory& history) {
  std::string out = "step,position,loss\r\n";
  for (const HistoryPoint& p : history.points)
    for (size_t i = 0; i < p.position_loss.size(); ++i) {
      out += std::to_string(p.step);
      out += ',';
      out += std::to_string(i);
      out += ',';
      out += number(p.position_loss[i]);
      out += "\r\n";
    }
  return out;
}

}  // namespace attnviz

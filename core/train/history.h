// A training run's history (docs/training.md "Checkpoints and history"): checkpoints kept at chosen
// steps in one folder — each a safetensors model with its config, listed with the batch loss in an
// index — and what they show step by step: every head's induction and copying scores and its
// statistics on a fixed probe set, and the loss at each position of that set. What
// `attnviz-cli history` prints and a timeline in the GUI scrubs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/circuits.h"
#include "model/head_stats.h"
#include "train/trainer.h"

namespace attnviz {

// Which steps to keep: listed steps and/or every N steps (step 0 is the model before training).
struct KeepPlan {
  std::vector<int> steps;  // sorted, distinct
  int every = 0;           // 0 = none; N: steps 0, N, 2N, … and the run's last step
  bool empty() const { return steps.empty() && every <= 0; }
  bool wants(int step, int last_step) const;
};
// "0,50,100" → steps. Throws Error(Usage) for anything but non-negative integers and commas.
std::vector<int> parseStepList(const std::string& list);

struct CheckpointEntry {
  int step = 0;
  double loss = 0;   // the training batch's loss at that step (NaN for step 0)
  std::string file;  // relative to the folder: step-000050.safetensors
};

// DIR/index.json: the run that wrote the checkpoints and the list of them, by step.
struct CheckpointIndex {
  std::string task, size;
  TaskOptions task_options;
  std::string norm = "pre";
  uint64_t seed = 0;
  int steps_planned = 0;
  std::vector<CheckpointEntry> checkpoints;
};
std::string checkpointIndexPath(const std::string& dir);
std::string checkpointIndexJson(const CheckpointIndex& index);
// Throws Error(Io) when DIR has no readable index, Error(BadInput) when it is malformed.
CheckpointIndex readCheckpointIndex(const std::string& dir);

// Keeps a trainer's model at the steps a plan wants, in one folder.
class CheckpointKeeper {
 public:
  // Creates the folder. Throws Error(Io) when it cannot.
  CheckpointKeeper(std::string dir, const TrainConfig& config, KeepPlan plan);
  // When the plan wants the trainer's current step: saves the model as DIR/step-NNNNNN.safetensors
  // and rewrites the index (each written to a temporary file, then renamed). Returns whether it
  // kept one. loss: the step's batch loss (NaN before the first step).
  bool keep(const Trainer& trainer, double loss);
  const CheckpointIndex& index() const { return index_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  KeepPlan plan_;
  CheckpointIndex index_;
};

struct HistoryOptions {
  int probes = 16;  // held-out examples of the task: the probe set of every checkpoint
  // The repeated sequences of the induction score; length 0 = the task's longest sequence
  // (--max-len: the lengths the model was trained on).
  InductionOptions induction = {8, 0, 0, nullptr};
  int threads = 0;  // the CPU backend's threads (0 = its default)
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(int done, int total)> progress;  // checkpoints read so far
};

// What one checkpoint shows.
struct HistoryPoint {
  int step = 0;
  double train_loss = 0;
  std::vector<HeadScore> induction;  // every head of every block, in trace order
  std::vector<HeadScore> copying;
  std::vector<HeadStats> stats;  // each statistic's mean over the probe set (NaN-free sentences)
  // [positions]: the mean cross-entropy (nats) of target position p over the probes that reach
  // it — the token after the start token is position 0, the end token the last.
  std::vector<double> position_loss;
  double probe_loss = 0;  // the mean over every probe token
};

struct TrainingHistory {
  CheckpointIndex index;
  std::vector<HistoryPoint> points;  // by step
};

// The probe set's teacher-forced pass, its per-position loss and mean head statistics, and the
// circuit scores of `model` (a checkpoint of `task`).
HistoryPoint historyPoint(const Model& model, const Task& task, const HistoryOptions& options);
// Every checkpoint of DIR. Throws Error(Io / BadInput) for a missing or malformed folder,
// Error(Cancelled).
TrainingHistory readTrainingHistory(const std::string& dir, const HistoryOptions& options = {});

// CSV (RFC 4180) of the head statistics: step,block,layer,head,statistic,value (layer and head
// from 1; block enc_self | dec_self | cross; statistics induction, copying and those of
// headStatsCsv); an empty value where NaN.
std::string historyHeadCsv(const TrainingHistory& history);
// CSV of the per-position loss: step,position,loss (position from 0).
std::string historyLossCsv(const TrainingHistory& history);

}  // namespace attnviz

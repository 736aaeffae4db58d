// The Train view's training run, off the GUI thread (Qt's Mandelbrot example's RenderThread is the
// model): the view owns one worker and starts runs on it; the worker trains (core/train/trainer.h),
// reports each step, evaluation and snapshot by signals queued to the view, and never touches a
// widget. Stop ends a run early and still evaluates and saves; abortAndWait() (and so destroying
// the worker) ends it at once, saving nothing.
#pragma once

#include <QString>
#include <QThread>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "model/trace.h"
#include "train/trainer.h"

namespace attnviz::gui {

// One recorded moment of a run: the probe's attention after `step` optimizer steps.
struct TrainSnapshot {
  int step = 0;
  double loss = 0;  // the training loss of that step (0 before the first)
  std::shared_ptr<const Trace> trace;
};

// What one run does.
struct TrainRun {
  TrainConfig config;
  std::shared_ptr<Backend> backend;
  QString save_path;       // the trained model is saved here when the run ends
  int snapshot_every = 1;  // steps between snapshots of the probe's attention
  int eval_every = 25;     // steps between held-out evaluations
  // Checkpoints kept every `keep_every` steps (and step 0 and the last) in `keep_dir`, for
  // `attnviz-cli history` (train/history.h); 0 = none.
  int keep_every = 0;
  QString keep_dir;
};

class TrainWorker : public QThread {
  Q_OBJECT
 public:
  explicit TrainWorker(QObject* parent = nullptr);
  ~TrainWorker() override;  // abortAndWait()

  // Starts a run; false while one runs.
  bool startRun(TrainRun run);
  // Holds the run before its next step until resumed (pausedChanged says when it holds).
  void setPaused(bool paused);
  bool pauseRequested() const { return pause_requested_; }
  // Ends the run after the current step (or evaluation): it then evaluates, saves and finishes.
  void stop();
  // Ends the run as soon as the current step is done, without evaluating or saving, and waits for
  // the thread: afterwards no signal of that run is emitted.
  void abortAndWait();

 signals:
  // The task, the model and the optimizer are built: "reverse · small · 240 000 parameters · CPU"
  // and the probe sentence's source and target.
  void prepared(const QString& description, const QString& probe_src, const QString& probe_tgt);
  void pausedChanged(bool paused);
  void stepDone(const attnviz::Trainer::StepStats& stats);
  void evaluated(const attnviz::Trainer::Evaluation& evaluation);
  void snapshotTaken(const attnviz::gui::TrainSnapshot& snapshot);
  // The run ended (stopped early or not) and `model`, its config and weights, is saved at `path`.
  void runFinished(const QString& path, const attnviz::Trainer::Evaluation& final_evaluation,
                   bool stopped, std::shared_ptr<const attnviz::LoadedModel> model);
  void runFailed(const QString& message);

 protected:
  void run() override;  // the training loop

 private:
  void train(const TrainRun& run);
  void holdWhilePaused();

  TrainRun run_;  // written by startRun() before the thread starts
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<bool> active_{false};  // a run started and has not emitted its end
  std::atomic<bool> stop_{false};    // Stop, or abort: also cancels an evaluation
  std::atomic<bool> abort_{false};
  std::atomic<bool> pause_requested_{false};
};

}  // namespace attnviz::gui

#include "session/train_worker.h"

#include <cmath>
#include <exception>

#include "arch/writer.h"
#include "train/history.h"

namespace attnviz::gui {

TrainWorker::TrainWorker(QObject* parent) : QThread(parent) {}

TrainWorker::~TrainWorker() {
  abortAndWait();
}

bool TrainWorker::startRun(TrainRun run) {
  if (active_) return false;
  wait();  // the previous run has emitted its end: its thread is returning
  run_ = std::move(run);
  stop_ = false;
  abort_ = false;
  pause_requested_ = false;
  active_ = true;
  start();
  return true;
}

void TrainWorker::setPaused(bool paused) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pause_requested_ = paused;
  }
  wake_.notify_all();
}

void TrainWorker::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
}

void TrainWorker::abortAndWait() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    abort_ = true;
    stop_ = true;
  }
  wake_.notify_all();
  wait();
}

void TrainWorker::run() {
  train(run_);
  active_ = false;  // an aborted run ends without a signal
}

void TrainWorker::holdWhilePaused() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!pause_requested_ || stop_) return;
  emit pausedChanged(true);
  wake_.wait(lock, [this] { return !pause_requested_ || stop_; });
  emit pausedChanged(false);
}

// The training loop, on the worker's thread: it reads only `run` and its own Trainer, and speaks
// only through signals.
void TrainWorker::train(const TrainRun& run) {
  try {
    Trainer trainer(run.config, run.backend);
    QString src, tgt;
    const Example probe = trainer.task().probe();
    for (const auto& w : probe.src) src += QString::fromStdString(w) + QStringLiteral(" ");
    for (const auto& w : probe.tgt) tgt += QString::fromStdString(w) + QStringLiteral(" ");
    emit prepared(tr("%1 · %2 · %3 parameters · %4")
                      .arg(QString::fromStdString(trainer.task().description()))
                      .arg(QString::fromStdString(findPreset(run.config.preset).description))
                      .arg(trainer.model().parameterCount())
                      .arg(QString::fromStdString(run.backend->description())),
                  src.trimmed(), tgt.trimmed());
    auto snapshot = [&](int step, double loss) {
      emit snapshotTaken({step, loss, std::make_shared<const Trace>(trainer.probeTrace())});
    };
    snapshot(0, 0.0);
    std::unique_ptr<CheckpointKeeper> keeper;
    if (run.keep_every > 0) {
      KeepPlan plan;
      plan.every = run.keep_every;
      keeper = std::make_unique<CheckpointKeeper>(run.keep_dir.toStdString(), run.config, plan);
      keeper->keep(trainer, std::nan(""));
    }
    Trainer::StepStats s;
    for (int k = 0; k < run.config.steps; ++k) {
      holdWhilePaused();
      if (stop_) break;
      s = trainer.step();
      emit stepDone(s);
      if (keeper) keeper->keep(trainer, s.loss);
      if (s.step % run.snapshot_every == 0 || s.step == run.config.steps) snapshot(s.step, s.loss);
      if (s.step % run.eval_every == 0 && s.step < run.config.steps)
        emit evaluated(trainer.evaluate(100, &stop_));
    }
    if (abort_) return;
    const bool stopped = stop_;
    if (stopped && s.step % run.snapshot_every != 0 && s.step > 0) snapshot(s.step, s.loss);
    Trainer::Evaluation final_evaluation;
    if (!stopped || s.step > 0) {
      final_evaluation = trainer.evaluate(stopped ? 100 : 0, &abort_);
      if (abort_) return;
      emit evaluated(final_evaluation);
    }
    std::shared_ptr<const LoadedModel> model = trainer.snapshot();
    saveModel(*model, run.save_path.toStdString());
    active_ = false;  // a new run may start as soon as the view hears of the end
    emit runFinished(run.save_path, final_evaluation, stopped, std::move(model));
  } catch (const std::exception& e) {
    active_ = false;
    if (!abort_) emit runFailed(QString::fromUtf8(e.what()));
  }
}

}  // namespace attnviz::gui

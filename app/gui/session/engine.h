// The GUI's link to the core: owns the loaded model and the decoding session, runs every heavy job
// (loading, decoding, forward passes) off the GUI thread, and hands the views immutable snapshots.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "arch/infer.h"
#include "model/decoding.h"
#include "model/masks.h"
#include "model/model.h"
#include "model/trace.h"

namespace attnviz::gui {

// One decoding position as the Decoding view lists it.
struct StepInfo {
  int position = 0;
  int input_id = 0;
  QString input;       // token fed at this position (BOS at 0)
  int chosen_id = -1;  // token chosen after it; -1 = not chosen yet (the newest position)
  QString chosen;
  bool forced = false;  // the chosen token came from the typed target prefix
  float chosen_prob = 0;
  int argmax_id = -1;
  QString argmax;
  float argmax_prob = 0;
  std::vector<std::pair<int, float>> topk;  // (id, probability), most probable first
  QStringList topk_tokens;
  double log_sum =
      0;  // log Σ exp(logits) of the row: a token's probability is exp(logit − log_sum)
};

// What the views show. Built when a job ends (on the GUI thread); never changed afterwards, except
// that in decode mode `trace` is the decoding session's trace, which later steps grow in place —
// on the GUI thread only, each time with a new snapshot.
struct Snapshot {
  // Increases with every snapshot any engine of the process publishes: caches keyed by it never
  // mistake one window's snapshot for another's.
  uint64_t id = 0;
  // A step forward or back of the same decoding session: the snapshot this one grew from (0:
  // none) and how many leading rows of its target-query blocks (decoder self-attention, cross-
  // attention) are unchanged since — rows whose token and every earlier token are the same. The
  // caches of per-row work (head statistics, the Overview's thumbnails) keep those rows.
  uint64_t grown_from = 0;
  int same_target_rows = 0;
  std::shared_ptr<const Trace> trace;  // the attention trace over the current target(s)
  MaskOptions masks;
  bool batch = false;
  // Decode mode (batch == false, the model has a decoder): one entry per target position.
  // Encoder-only models: one entry per input position with its masked-LM predictions.
  std::vector<StepInfo> steps;
  bool finished = false;
  int prefix_positions = 1;  // the start token and the typed prefix: Reset goes back here
  int max_positions = 0;     // decoding stops here
  int max_new_tokens = 0;    // the ids a run may choose after the prefix
  DecodeStop stop = DecodeStop::NotYet;
  std::vector<int> src_ids;
  // Encoder-only models with a class head: the class probabilities of sentence 0.
  std::vector<float> class_probs;
  QStringList class_labels;
  // Batch mode: the inputs, so that a mask switch can rerun them.
  std::vector<std::vector<int>> batch_src, batch_tgt;
  QStringList batch_sentences;
};

class Engine : public QObject {
  Q_OBJECT
 public:
  explicit Engine(QObject* parent = nullptr);
  ~Engine() override;  // cancels and waits for a running job

  bool busy() const { return busy_; }
  bool hasModel() const { return model_ != nullptr; }
  const Model* model() const { return model_.get(); }
  // The model, held for background work that must outlive a switch (an export).
  std::shared_ptr<const Model> sharedModel() const { return model_; }
  std::shared_ptr<const Snapshot> snapshot() const { return snapshot_; }
  const MaskOptions& masks() const { return masks_; }
  QString modelSource() const { return model_source_; }  // bundled name or path, as opened
  QString configPath() const { return config_path_; }
  QString backendName() const { return backend_name_; }  // "cpu" or "cuda"
  QString backendDescription() const;

  // Each starts a job and returns true, or returns false when a job is running or the action
  // does not apply now (no model, batch mode, nothing to step back to, …).
  // A file without a config whose tensors do not tell everything emits answersNeeded instead of
  // failed; loading again with `supplied` (and `remember`: kept beside the file) goes on. One whose
  // names follow no architecture emits namesUnknown (supplied.names_map opens it).
  bool loadModel(const QString& name_or_path, const QString& config_path = {},
                 const UserSupplied& supplied = {}, bool remember = false);
  // Uses a model built elsewhere (tests, embedding); `label` is what modelSource() reports.
  bool setModel(std::shared_ptr<Model> model, const QString& label);
  bool setBackend(const QString& name);
  // The CPU backend's threads (0 = one per core, the default), for this model and the ones
  // loaded after it; false while a job runs. threads(): what the backend runs on now.
  bool setThreads(int n);
  int threadsSetting() const { return threads_; }
  // A new backend of the kind in use, with the threads setting applied (a training run's own).
  std::shared_ptr<Backend> newBackend() const;
  int threads() const;
  bool run(const QString& src, const QString& prefix);
  bool runBatch(const QStringList& sentences);
  bool setMasks(const MaskOptions& masks);  // reruns the current input with the same tokens
  // At most this many tokens are chosen after the prefix (0 = the core's default: the source
  // length + 5, or 50 for a continuation; see decoding.h). Applies from the next run.
  void setMaxNewTokens(int n) { max_new_tokens_ = n < 0 ? 0 : n; }
  int maxNewTokens() const { return max_new_tokens_; }
  bool stepForward(int token = -1);
  bool stepBack();
  bool reset();
  bool decodeToEnd();
  // Keeps positions 0 … position, picks `token` after `position`, then (optionally) decodes on.
  bool choose(int position, int token, bool continue_decoding);

  // A job of a view's own (a beam search, a comparison) on the loaded model, run off the GUI
  // thread like every other job — one at a time, with progress and Esc: `work` returns what to do
  // on the GUI thread with its result. False when a job runs or no model is loaded.
  using TaskWork =
      std::function<std::function<void()>(const Model& model, const std::atomic<bool>& cancel)>;
  bool runTask(const QString& what, TaskWork work);
  // The same, for work that reports how far it is: `progress(done, total)` (any thread) reaches
  // the progress signal, as the engine's own jobs do.
  using TaskProgress = std::function<void(int done, int total)>;
  using ProgressTaskWork = std::function<std::function<void()>(
      const Model& model, const std::atomic<bool>& cancel, const TaskProgress& progress)>;
  bool runProgressTask(const QString& what, ProgressTaskWork work);
  // Shows in every view a decode of `src` whose target is `prefix` and then `generated` (the last
  // id chosen, not fed), as if it had been stepped there (a beam or a sample picked in the Search
  // view). max_new_tokens: the session's length rule (0 = the engine's setting).
  bool loadDecode(std::vector<int> src, std::vector<int> prefix, std::vector<int> generated,
                  int max_new_tokens = 0);

  bool canStepForward() const;
  bool canStepBack() const;

  void cancel();
  // Processes events until no job runs (tests, --screenshot). False on timeout.
  bool waitUntilIdle(int timeout_ms = 60000);

 signals:
  void busyChanged(bool busy, const QString& what);
  void progress(int done, int total, const QString& what);
  void modelChanged();
  void snapshotChanged();
  void masksChanged(const MaskOptions& masks);
  // A job ended with an error; `cancelled`: the user's own Cancel (or Esc), not a fault.
  void failed(const QString& title, const QString& message, bool cancelled = false);
  void notice(const QString& message);  // warnings: loader warnings, backend fallback
  // The model moved to another backend without being asked (the GPU failed for good).
  void backendChanged();
  // The model at `path` has no config and its tensors leave `inference.missing` open: ask, then
  // loadModel(path, config_path, answers). `supplied`: what was given this time.
  void answersNeeded(const QString& path, const QString& config_path,
                     const attnviz::Inference& inference, const attnviz::UserSupplied& supplied);
  // The model at `path` was refused because its tensor names follow no architecture of the table
  // (`message` names the closest and the roles it lacks there): a map of its names opens it.
  void namesUnknown(const QString& path, const QString& message);
  // Words of the input that are not in the vocabulary and that the model reads as its unknown
  // token (models without one refuse them with an error instead). `field`: "source", "target
  // prefix", "prompt", "input" or "sentence 2".
  void unknownWords(const QString& field, const QStringList& words, const QString& unk_token);
  void jobFinished(bool ok);

 private:
  using Apply = std::function<void()>;
  struct JobContext {
    Engine* engine;
    std::atomic<bool>* cancel;
    bool cancellable;
    void report(int done, int total, const QString& what) const;
    bool cancelled() const { return cancel->load(); }
    ForwardOptions forwardOptions(const MaskOptions& masks) const;
    DecodingSession::Options sessionOptions(const MaskOptions& masks) const;
    int max_new_tokens = 0;
  };
  bool start(const QString& what, bool cancellable, std::function<Apply(const JobContext&)> work);
  // A job on the loaded model: `work` gets the model to run on — the engine's, or, when the job ran
  // out of GPU memory there, a copy on the CPU on which the whole job is redone
  // (model/cpu_fallback.h); a notice then says so. The engine's model stays on its backend for the
  // next job, which may fit; a decoding session redone on the CPU goes on there. After a fatal GPU
  // fault the CPU copy becomes the engine's model (backendChanged).
  using ModelWork = std::function<Apply(const JobContext&, const std::shared_ptr<Model>& model)>;
  bool startOnModel(const QString& what, bool cancellable, ModelWork work);
  void finish();
  bool decodeMode() const { return model_ && session_ && snapshot_ && !snapshot_->batch; }

  // Decoding actions run one after another as jobs, each applied on the GUI thread before the
  // next starts (the session's trace is only ever changed on the GUI thread).
  struct Action {
    enum Kind { Step, Rerun, DecodeOn } kind;
    int value = -1;  // Step: the token (-1 = argmax); Rerun: the positions to keep
  };
  void plan(std::vector<Action> actions, const QString& what);
  void pump();
  std::deque<Action> plan_;
  QString plan_what_;

  std::shared_ptr<Snapshot> makeSnapshot(const DecodingSession& session) const;
  std::shared_ptr<Snapshot> encoderSnapshot(std::shared_ptr<const Trace> trace,
                                            const MaskOptions& masks) const;
  void adoptSession(std::shared_ptr<DecodingSession> session);
  // Emits unknownWords for the words of `text` that `vocab` maps to its unknown token (not for a
  // model with a tokenizer, which splits them into pieces).
  void checkUnknown(const Vocabulary& vocab, const std::string& text, const QString& field);

  std::shared_ptr<Model> model_;              // declared before session_: outlives it
  std::shared_ptr<DecodingSession> session_;  // changed on the GUI thread (or before adoption)
  std::shared_ptr<const Snapshot> snapshot_;
  void publish(std::shared_ptr<Snapshot> snap);  // numbers it, stores it, emits snapshotChanged
  MaskOptions masks_;
  int max_new_tokens_ = 0;
  QString model_source_, config_path_;
  int threads_ = 0;
  QString backend_name_ = QStringLiteral("cpu");
  std::atomic<bool> cancel_{false};
  bool busy_ = false;
  bool continuing_plan_ = false;  // finish() starts a plan's next job: still busy to the listeners
  bool job_failed_ = false;       // set by a failed job's Apply
  QFutureWatcher<Apply>* watcher_;
};

}  // namespace attnviz::gui

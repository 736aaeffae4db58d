#include "session/engine.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QThread>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <numeric>

#include "arch/bundled.h"
#include "arch/weights.h"
#include "base/error.h"
#include "base/host_memory.h"
#include "compute/backends.h"
#include "model/cpu_fallback.h"
#include "model/runs.h"
#include "session/teaching_util.h"
#include "widgets/token_label.h"

namespace attnviz::gui {

namespace {

constexpr int kTopK = 10;

QString errorTitle(const Error& e) {
  switch (e.kind()) {
    case ErrorKind::BadInput:
      return QObject::tr("The input cannot be used");
    case ErrorKind::Cancelled:
      return QObject::tr("Cancelled");
    case ErrorKind::Backend:
      return QObject::tr("Compute backend error");
    case ErrorKind::OutOfMemory:
      return QObject::tr("Out of GPU memory");
    case ErrorKind::TooLarge:
      return QObject::tr("Too large");
    case ErrorKind::Io:
      return QObject::tr("File error");
    default:
      return QObject::tr("The model cannot be loaded");
  }
}

// A decoding session on `model` that keeps the model alive as long as it lives (the model may be a
// CPU copy made for this session alone: model/cpu_fallback.h).
std::shared_ptr<DecodingSession> sessionOn(const std::shared_ptr<Model>& model,
                                           std::vector<int> src, std::vector<int> prefix,
                                           const DecodingSession::Options& options) {
  return std::shared_ptr<DecodingSession>(
      new DecodingSession(*model, std::move(src), std::move(prefix), options),
      [model](DecodingSession* session) { delete session; });
}

// A session over the same source and fed tokens (the first prefix_len of them its prefix) and the
// same last choice (-1: none), computed again on `model` with `options`.
std::shared_ptr<DecodingSession> replayOn(const std::shared_ptr<Model>& model,
                                          const std::vector<int>& src, const std::vector<int>& fed,
                                          int prefix_len, int choice,
                                          const DecodingSession::Options& options) {
  auto session =
      sessionOn(model, src, std::vector<int>(fed.begin(), fed.begin() + prefix_len), options);
  for (size_t i = size_t(prefix_len); i < fed.size(); ++i) session->stepForward(fed[i]);
  if (choice >= 0 && !session->finished()) session->stepForward(choice);
  return session;
}

}  // namespace

void Engine::JobContext::report(int done, int total, const QString& what) const {
  QMetaObject::invokeMethod(
      engine, [e = engine, done, total, what] { emit e->progress(done, total, what); },
      Qt::QueuedConnection);
}

DecodingSession::Options Engine::JobContext::sessionOptions(const MaskOptions& masks) const {
  DecodingSession::Options o;
  o.masks = masks;
  o.max_new_tokens = max_new_tokens;
  o.keep_qkv = true;  // the cell view shows the vectors behind every score
  if (cancellable) o.cancel = cancel;
  return o;
}

ForwardOptions Engine::JobContext::forwardOptions(const MaskOptions& masks) const {
  ForwardOptions o;
  o.masks = masks;
  o.keep_qkv = true;
  if (cancellable) o.cancel = cancel;
  const JobContext ctx = *this;
  o.progress = [ctx](int done, int total) {
    ctx.report(done, total, QObject::tr("Forward pass (layers)"));
  };
  return o;
}

Engine::Engine(QObject* parent) : QObject(parent), watcher_(new QFutureWatcher<Apply>(this)) {
  connect(watcher_, &QFutureWatcher<Apply>::finished, this, &Engine::finish);
}

Engine::~Engine() {
  cancel_ = true;
  watcher_->waitForFinished();
}

QString Engine::backendDescription() const {
  return model_ ? QString::fromStdString(model_->backend().description()) : QString();
}

bool Engine::start(const QString& what, bool cancellable,
                   std::function<Apply(const JobContext&)> work) {
  if (busy_) return false;
  busy_ = true;
  cancel_ = false;
  // A plan's next job (a step of "decode to the end") continues the work already announced: the
  // window's progress bar and Cancel stay up instead of starting over at every step.
  if (!continuing_plan_) emit busyChanged(true, what);
  JobContext ctx{this, &cancel_, cancellable, max_new_tokens_};
  watcher_->setFuture(QtConcurrent::run([ctx, work, what]() -> Apply {
    Engine* e = ctx.engine;
    try {
      return work(ctx);
    } catch (const Error& err) {
      const QString title = errorTitle(err);
      const QString msg = QString::fromStdString(err.what());
      const bool cancelled = err.kind() == ErrorKind::Cancelled;
      return [e, title, msg, cancelled] {
        e->job_failed_ = true;
        emit e->failed(title, msg, cancelled);
      };
    } catch (const std::bad_alloc&) {
      return [e, what] {
        e->job_failed_ = true;
        emit e->failed(QObject::tr("Out of memory"),
                       QObject::tr("%1 needed more memory than is available.").arg(what));
      };
    } catch (const std::exception& err) {
      const QString msg = QString::fromStdString(err.what());
      return [e, msg] {
        e->job_failed_ = true;
        emit e->failed(QObject::tr("Unexpected error"), msg);
      };
    }
  }));
  return true;
}

bool Engine::startOnModel(const QString& what, bool cancellable, ModelWork work) {
  if (!model_) return false;
  auto model = model_;
  const int threads = threads_;
  return start(what, cancellable, [this, model, threads, work](const JobContext& ctx) -> Apply {
    std::string note;
    std::shared_ptr<Model> ran_on;
    Apply apply = runRedoingOnCpu(model, threads, &note, [&](const std::shared_ptr<Model>& m) {
      ran_on = m;
      return work(ctx, m);
    });
    if (note.empty()) return apply;
    // `ran_on` (the CPU copy) lives as long as what the job made needs it. After a fatal fault the
    // GPU runs nothing more: the copy becomes the engine's model.
    const bool lost = deviceLost(*model);
    const QString message =
        messageSentence(note.c_str()) +
        (lost ? tr(" The model now runs on the CPU; restart attnviz to use the GPU again.")
              : tr(" The model stays on the GPU: the next run tries it again."));
    return [this, apply, ran_on, message, lost, model] {
      if (lost && model_ == model) {
        model_ = ran_on;
        backend_name_ = QStringLiteral("cpu");
      }
      if (apply) apply();
      emit notice(message);
      if (lost) emit backendChanged();
    };
  });
}

void Engine::finish() {
  Apply apply = watcher_->result();
  busy_ = false;
  job_failed_ = false;
  if (apply) apply();
  if (job_failed_) plan_.clear();
  // A plan of decoding actions goes on with its next action (pump), unless cancelled.
  if (!plan_.empty() && !cancel_) {
    continuing_plan_ = true;
    pump();
    continuing_plan_ = false;
    if (busy_) return;
  }
  plan_.clear();
  emit busyChanged(false, {});
  emit jobFinished(!job_failed_);
}

void Engine::cancel() {
  if (busy_) cancel_ = true;
}

bool Engine::waitUntilIdle(int timeout_ms) {
  QElapsedTimer timer;
  timer.start();
  while (busy_ && timer.elapsed() < timeout_ms) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    if (busy_) QThread::msleep(2);
  }
  QCoreApplication::processEvents();
  return !busy_;
}

bool Engine::canStepForward() const {
  return !busy_ && decodeMode() && !snapshot_->finished;
}

bool Engine::canStepBack() const {
  if (busy_ || !decodeMode()) return false;
  return session_->length() > session_->prefixLength() || session_->choice() >= 0;
}

void Engine::publish(std::shared_ptr<Snapshot> snap) {
  static std::atomic<uint64_t> ids{0};
  snap->id = ++ids;
  snapshot_ = std::move(snap);
  emit snapshotChanged();
}

// ---- jobs -----------------------------------------------------------------------------------

bool Engine::loadModel(const QString& name_or_path, const QString& config_path,
                       const UserSupplied& supplied, bool remember) {
  const std::string name = name_or_path.toStdString();
  const std::string config = config_path.toStdString();
  const std::string backend = backend_name_.toStdString();
  const int threads = threads_;
  return start(tr("Loading %1").arg(name_or_path), false, [=, this](const JobContext&) -> Apply {
    const std::string path = resolveModelPath(name);
    LoadOptions opts;
    opts.config_path = config;
    opts.supplied = supplied;
    std::shared_ptr<const LoadedModel> loaded;
    try {
      loaded = attnviz::loadModel(path, opts);
    } catch (const MissingInfoError& e) {
      // What the tensors tell and what is missing, for the dialog that asks for it.
      return [this, name_or_path, config_path, inf = e.inference, supplied] {
        emit answersNeeded(name_or_path, config_path, inf, supplied);
      };
    } catch (const UnknownNamesError& e) {
      return [this, name_or_path, message = QString::fromStdString(e.what())] {
        job_failed_ = true;
        emit namesUnknown(name_or_path, message);
      };
    }
    // Beside the model file itself (a folder's model.safetensors), where the loader looks.
    if (remember) rememberAnswers(loaded->path, supplied);
    BackendChoice choice = createBackendOrFallback(backend);
    if (threads > 0) choice.backend->setThreads(threads);
    auto model = std::make_shared<Model>(loaded, choice.backend);
    QStringList notes;
    for (const auto& w : loaded->warnings) notes << QString::fromStdString(w);
    if (!choice.message.empty()) notes << QString::fromStdString(choice.message);
    const QString backend_now = QString::fromStdString(choice.backend->name());
    return [this, model, notes, name_or_path, config_path, backend_now] {
      session_.reset();
      snapshot_.reset();
      model_ = model;
      model_source_ = name_or_path;
      config_path_ = config_path;
      backend_name_ = backend_now;
      emit modelChanged();
      emit snapshotChanged();
      // The old model's buffers and traces, freed now that the views let go of them, are not
      // kept for passes of the new one's sizes: give them back to the system.
      releaseKeptHostMemory();
      if (!notes.isEmpty()) emit notice(notes.join('\n'));
    };
  });
}

bool Engine::setModel(std::shared_ptr<Model> model, const QString& label) {
  if (busy_ || !model) return false;
  session_.reset();
  snapshot_.reset();
  model_ = std::move(model);
  model_source_ = label;
  config_path_.clear();
  backend_name_ = QString::fromStdString(model_->backend().name());
  emit modelChanged();
  emit snapshotChanged();
  return true;
}

bool Engine::setBackend(const QString& name) {
  if (!model_) {
    if (busy_) return false;
    backend_name_ = name;
    return true;
  }
  auto loaded = model_->loadedPtr();
  const std::string backend = name.toStdString();
  const int threads = threads_;
  return start(tr("Switching to %1").arg(name), false, [=, this](const JobContext&) -> Apply {
    // createBackend (not the fallback): the user asked for this one, so say why it fails.
    std::shared_ptr<Backend> be = createBackend(backend);
    if (threads > 0) be->setThreads(threads);
    auto model = std::make_shared<Model>(loaded, be);
    return [this, model, name] {
      session_.reset();
      snapshot_.reset();
      model_ = model;
      backend_name_ = name;
      emit modelChanged();
      emit snapshotChanged();
    };
  });
}

std::shared_ptr<Backend> Engine::newBackend() const {
  std::shared_ptr<Backend> be = createBackendOrFallback(backendName().toStdString()).backend;
  if (threads_ > 0) be->setThreads(threads_);
  return be;
}

bool Engine::setThreads(int n) {
  if (busy_) return false;
  threads_ = n < 0 ? 0 : n;
  if (model_) model_->backend().setThreads(threads_);  // 0: one per core
  return true;
}

int Engine::threads() const {
  return model_ ? model_->backend().threads() : threads_;
}

namespace {

// The top-k of position i of sentence 0 as StepInfo's lists (TokenLogits keeps them for every
// position), and the chosen token's probability: from what the trace keeps, or its row computed
// again.
void fillTopK(StepInfo& info, const Model& m, const Trace& t, int i, const Vocabulary& vocab,
              int chosen) {
  const TokenLogits& l = t.logits;
  info.log_sum = l.logSumExp(0, i);
  info.topk = l.topProbabilities(0, i, kTopK);
  for (const auto& [id, p] : info.topk) info.topk_tokens << tokenLabel(vocab.token(id));
  info.argmax_id = info.topk.front().first;
  info.argmax = info.topk_tokens.front();
  info.argmax_prob = info.topk.front().second;
  if (chosen < 0 || chosen >= l.vocab()) return;
  float logit = 0;
  if (!l.logitOf(0, i, chosen, &logit)) logit = logitsRow(m, t, 0, i)[size_t(chosen)];
  info.chosen_prob = float(std::exp(double(logit) - info.log_sum));
}

}  // namespace

std::shared_ptr<Snapshot> Engine::makeSnapshot(const DecodingSession& session) const {
  auto snap = std::make_shared<Snapshot>();
  snap->masks = session.options().masks;
  // The session's trace, kept alive by the session (which the engine holds while it is shown).
  snap->trace = std::shared_ptr<const Trace>(session_, &session.trace());
  snap->prefix_positions = session.prefixLength();
  snap->max_positions = session.limit();
  snap->src_ids = session.source();
  snap->finished = session.finished();
  snap->stop = session.stopReason();
  snap->max_new_tokens = session.maxNewTokens();
  const Vocabulary& vocab = session.model().tgtVocab();
  const Trace& t = session.trace();
  const std::vector<int> fed = session.targetIds();
  // A step forward or back grows or shrinks the session's trace in place: the rows of the same
  // tokens keep their logits.
  const Snapshot* shown =
      snapshot_ && !snapshot_->batch && snapshot_->trace.get() == &t ? snapshot_.get() : nullptr;
  bool same_rows = shown != nullptr;
  for (int i = 0; i < session.length(); ++i) {
    StepInfo info;
    info.position = i;
    info.input_id = fed[size_t(i)];
    info.input = tokenLabel(vocab.token(info.input_id));
    info.chosen_id = i + 1 < session.length() ? fed[size_t(i) + 1] : session.choice();
    if (info.chosen_id >= 0) info.chosen = tokenLabel(vocab.token(info.chosen_id));
    info.forced = i + 1 < session.prefixLength();
    // Row i's logits follow from the tokens fed at positions 0 … i.
    same_rows = same_rows && i < (int)shown->steps.size() &&
                shown->steps[size_t(i)].input_id == info.input_id;
    fillTopK(info, session.model(), t, i, vocab, info.chosen_id);
    if (same_rows) snap->same_target_rows = i + 1;
    snap->steps.push_back(std::move(info));
  }
  if (shown) snap->grown_from = shown->id;
  return snap;
}

std::shared_ptr<Snapshot> Engine::encoderSnapshot(std::shared_ptr<const Trace> trace,
                                                  const MaskOptions& masks) const {
  auto snap = std::make_shared<Snapshot>();
  snap->masks = masks;
  snap->trace = trace;
  const Trace& t = *trace;
  if (!t.src_ids.empty()) snap->src_ids = t.src_ids[0];
  if (!t.logits.empty()) {  // a masked LM: the predictions at every input position
    const Vocabulary& vocab = model_->srcVocab();
    for (int i = 0; i < t.src_len; ++i) {
      StepInfo info;
      info.position = i;
      info.input_id = t.src_ids[0][size_t(i)];
      info.input = tokenLabel(vocab.token(info.input_id));
      fillTopK(info, *model_, t, i, vocab, -1);
      snap->steps.push_back(std::move(info));
    }
  }
  if (!t.class_logits.empty()) {
    const int C = int(t.class_logits.dim(1));
    const float* l = t.class_logits.ptr();
    const float mx = *std::max_element(l, l + C);
    double sum = 0;
    for (int k = 0; k < C; ++k) sum += std::exp(double(l[k]) - mx);
    for (int k = 0; k < C; ++k) {
      snap->class_probs.push_back(float(std::exp(double(l[k]) - mx) / sum));
      snap->class_labels << QString::fromStdString(model_->config().classLabel(k));
    }
  }
  snap->finished = true;
  return snap;
}

void Engine::adoptSession(std::shared_ptr<DecodingSession> session) {
  session_ = std::move(session);
  publish(makeSnapshot(*session_));
}

void Engine::checkUnknown(const Vocabulary& vocab, const std::string& text, const QString& field) {
  if (vocab.unkId() < 0) return;  // encode() names unknown words in its error
  // A tokenizer splits a word the vocabulary lacks into pieces it has (the CLI's rule too).
  if (model_ && model_->loaded().tokenizer) return;
  QStringList words;
  for (const auto& w : vocab.unknownWords(text)) words << QString::fromStdString(w);
  if (!words.isEmpty()) emit unknownWords(field, words, tokenLabel(vocab.token(vocab.unkId())));
}

bool Engine::run(const QString& src, const QString& prefix) {
  if (!model_ || busy_) return false;
  auto model = model_;
  const MaskOptions masks = masks_;
  const std::string s = src.toStdString(), p = prefix.toStdString();
  const ModelConfig& c = model->config();
  if (c.hasEncoder())
    checkUnknown(model->srcVocab(), s, c.hasDecoder() ? tr("source") : tr("input"));
  if (c.hasCross())
    checkUnknown(model->tgtVocab(), p, tr("target prefix"));
  else if (c.hasDecoder())
    checkUnknown(model->tgtVocab(), p.find_first_not_of(" \t") != std::string::npos ? p : s,
                 tr("prompt"));
  if (!c.hasDecoder()) {  // encoder-only: one pass, its outputs
    return startOnModel(
        tr("Running"), true, [=, this](const JobContext& ctx, const auto& m) -> Apply {
          Inputs in;
          in.src = {m->encodeSource(s)};
          auto trace = std::make_shared<const Trace>(m->forward(in, ctx.forwardOptions(masks)));
          return [this, trace, masks] {
            session_.reset();
            publish(encoderSnapshot(trace, masks));
          };
        });
  }
  return startOnModel(
      tr("Decoding"), true, [=, this](const JobContext& ctx, const auto& m) -> Apply {
        std::vector<int> ids;
        if (c.hasCross()) ids = m->encodeSource(s);
        // A decoder-only model continues what was typed (in the source box or the
        // prefix box).
        const std::string typed =
            c.hasCross() || p.find_first_not_of(" \t") != std::string::npos ? p : s;
        std::vector<int> prefix_ids = m->encodeTarget(typed);
        auto session = sessionOn(m, ids, prefix_ids, ctx.sessionOptions(masks));
        // Not yet shown: the whole greedy decode runs here.
        while (!session->finished()) {
          if (ctx.cancelled())
            throw Error(ErrorKind::Cancelled,
                        QT_TRANSLATE_NOOP("attnviz::Error", "decoding was cancelled"));
          session->stepForward();
          ctx.report(session->length(), session->limit(), QObject::tr("Decoding"));
        }
        return [this, session] { adoptSession(session); };
      });
}

bool Engine::runBatch(const QStringList& sentences) {
  if (!model_ || busy_) return false;
  auto model = model_;
  const MaskOptions masks = masks_;
  std::vector<std::string> texts;
  for (const auto& s : sentences) texts.push_back(s.toStdString());
  const ModelConfig& mc = model->config();
  for (size_t b = 0; b < texts.size(); ++b)
    checkUnknown(mc.hasEncoder() ? model->srcVocab() : model->tgtVocab(), texts[b],
                 tr("sentence %1").arg(b + 1));
  return startOnModel(
      tr("Running a batch"), true, [=, this](const JobContext& ctx, const auto& m) -> Apply {
        if (texts.size() < 2)
          throw Error(ErrorKind::BadInput,
                      QT_TRANSLATE_NOOP("attnviz::Error",
                                        "a batch needs at least two sentences (one per line)"));
        const ModelConfig& c = m->config();
        std::vector<std::vector<int>> srcs, tgts;
        for (size_t b = 0; b < texts.size(); ++b) {
          try {
            if (c.hasEncoder()) srcs.push_back(m->encodeSource(texts[b]));
            if (c.hasCross()) {
              tgts.push_back(greedyTarget(*m, srcs.back()));
            } else if (c.hasDecoder()) {
              tgts.push_back(m->encodeTarget(texts[b]));
            }
          } catch (const Error& e) {
            throw Error(e.kind(), "sentence " + std::to_string(b + 1) + ": " + e.what());
          }
          ctx.report(int(b) + 1, int(texts.size()), QObject::tr("Decoding the batch"));
          if (ctx.cancelled())
            throw Error(ErrorKind::Cancelled,
                        QT_TRANSLATE_NOOP("attnviz::Error", "the batch was cancelled"));
        }
        auto snap = std::make_shared<Snapshot>();
        snap->batch = true;
        snap->masks = masks;
        Inputs in;
        in.src = srcs;
        in.tgt = tgts;
        snap->trace = std::make_shared<const Trace>(m->forward(in, ctx.forwardOptions(masks)));
        snap->batch_src = srcs;
        snap->batch_tgt = tgts;
        for (const auto& t : texts) snap->batch_sentences << QString::fromStdString(t);
        return [this, snap] { publish(snap); };
      });
}

void Engine::plan(std::vector<Action> actions, const QString& what) {
  plan_.assign(actions.begin(), actions.end());
  plan_what_ = what;
  pump();
}

void Engine::pump() {
  if (plan_.empty() || !session_) return;
  const Action act = plan_.front();
  plan_.pop_front();
  auto session = session_;
  if (act.kind == Action::DecodeOn) {
    if (session->finished()) {
      plan_.clear();
      return;
    }
    plan_.push_front(act);  // again after this step
  }
  // What a redo on the CPU replays (read here, on the GUI thread).
  const std::vector<int> src = session->source(), fed = session->targetIds();
  const int prefix_len = session->prefixLength(), choice = session->choice();
  // A session redone on a CPU copy of the model earlier goes on there.
  const bool on_copy = &session->model() != model_.get();
  startOnModel(plan_what_, true, [=, this](const JobContext& ctx, const auto& m) -> Apply {
    // Runs off the GUI thread: reads the session's cache, never its trace's rows being shown.
    // Redone on a CPU copy of the model (the step ran out of GPU memory), the session is first
    // computed again there, and goes on there.
    auto on = on_copy || &session->model() == m.get()
                  ? session
                  : replayOn(m, src, fed, prefix_len, choice, session->options());
    auto step = std::make_shared<DecodingSession::Step>(
        act.kind == Action::Rerun ? on->computeRerun(act.value)
                                  : on->computeStep(act.kind == Action::Step ? act.value : -1));
    ctx.report(on->length() + 1, on->limit(), plan_what_);
    return [this, session, on, step] {
      if (session != session_) return;  // the model or input changed meanwhile
      session_ = on;
      on->applyStep(std::move(*step));
      publish(makeSnapshot(*on));
    };
  });
}

bool Engine::setMasks(const MaskOptions& masks) {
  if (busy_) return false;
  const MaskOptions old = masks_;
  masks_ = masks;
  if (!model_ || !snapshot_) {
    emit masksChanged(masks_);
    return true;
  }
  bool started = false;
  auto prev = snapshot_;
  if (snapshot_->batch || !session_) {
    // A batch, or an encoder-only model: the same inputs again.
    started = startOnModel(
        tr("Rerunning with the new masks"), true,
        [=, this](const JobContext& ctx, const auto& model) -> Apply {
          Inputs in;
          if (prev->batch) {
            in.src = prev->batch_src;
            in.tgt = prev->batch_tgt;
          } else {
            in.src = {prev->src_ids};
          }
          auto trace = std::make_shared<const Trace>(model->forward(in, ctx.forwardOptions(masks)));
          if (!prev->batch) return [this, trace, masks] { publish(encoderSnapshot(trace, masks)); };
          auto snap = std::make_shared<Snapshot>(*prev);
          snap->masks = masks;
          snap->trace = trace;
          return [this, snap] { publish(snap); };
        });
  } else {
    // The same source and target tokens, the same last choice, with the new masks.
    const std::vector<int> src = session_->source(), fed = session_->targetIds();
    const int prefix_len = session_->prefixLength(), choice = session_->choice();
    started = startOnModel(tr("Rerunning with the new masks"), true,
                           [=, this](const JobContext& ctx, const auto& m) -> Apply {
                             auto session = replayOn(m, src, fed, prefix_len, choice,
                                                     ctx.sessionOptions(masks));
                             return [this, session] { adoptSession(session); };
                           });
  }
  if (!started) {
    masks_ = old;
    return false;
  }
  // Keep the switches honest if the rerun fails.
  auto conn = std::make_shared<QMetaObject::Connection>();
  *conn = connect(this, &Engine::jobFinished, this, [this, conn, old](bool ok) {
    disconnect(*conn);
    if (!ok) masks_ = old;
    emit masksChanged(masks_);
  });
  return true;
}

bool Engine::stepForward(int token) {
  if (!canStepForward()) return false;
  plan({{Action::Step, token}}, tr("Step forward"));
  return busy_;
}

bool Engine::stepBack() {
  if (!canStepBack()) return false;
  if (session_->needsRerunToStepBack()) {
    plan({{Action::Rerun, session_->length() - 1}}, tr("Step back"));
    return busy_;
  }
  session_->stepBack();  // drops rows: immediate
  publish(makeSnapshot(*session_));
  emit jobFinished(true);
  return true;
}

bool Engine::reset() {
  if (!decodeMode() || busy_) return false;
  if (session_->needsRerunToStepBack() && session_->length() > session_->prefixLength()) {
    plan({{Action::Rerun, session_->prefixLength()}}, tr("Reset"));
    return busy_;
  }
  while (session_->stepBack()) {
  }
  publish(makeSnapshot(*session_));
  emit jobFinished(true);
  return true;
}

bool Engine::decodeToEnd() {
  if (!canStepForward()) return false;
  plan({{Action::DecodeOn, -1}}, tr("Decoding"));
  return busy_;
}

bool Engine::choose(int position, int token, bool continue_decoding) {
  if (!decodeMode() || busy_) return false;
  if (position < 0 || position >= session_->length() || position + 1 < session_->prefixLength())
    return false;
  // Keep positions 0 … position (the shared prefix), then branch with `token`.
  std::vector<Action> actions;
  if (session_->choice() >= 0) session_->stepBack();
  if (position + 1 < session_->length()) {
    if (session_->needsRerunToStepBack()) {
      actions.push_back({Action::Rerun, position + 1});
    } else {
      while (session_->length() > position + 1) session_->stepBack();
    }
  }
  actions.push_back({Action::Step, token});
  if (continue_decoding) actions.push_back({Action::DecodeOn, -1});
  plan(std::move(actions), tr("Branching"));
  return busy_;
}

bool Engine::runTask(const QString& what, TaskWork work) {
  if (!model_ || busy_) return false;
  return startOnModel(what, true, [work](const JobContext& ctx, const auto& m) -> Apply {
    return work(*m, *ctx.cancel);
  });
}

bool Engine::runProgressTask(const QString& what, ProgressTaskWork work) {
  if (!model_ || busy_) return false;
  return startOnModel(what, true, [work, what](const JobContext& ctx, const auto& m) -> Apply {
    const TaskProgress progress = [&ctx, what](int done, int total) {
      ctx.report(done, total, what);
    };
    return work(*m, *ctx.cancel, progress);
  });
}

bool Engine::loadDecode(std::vector<int> src, std::vector<int> prefix, std::vector<int> generated,
                        int max_new_tokens) {
  if (!model_ || busy_ || !model_->config().hasDecoder()) return false;
  const MaskOptions masks = masks_;
  return startOnModel(
      tr("Loading the decode"), true, [=, this](const JobContext& ctx, const auto& m) -> Apply {
        DecodingSession::Options o = ctx.sessionOptions(masks);
        if (max_new_tokens > 0) o.max_new_tokens = max_new_tokens;
        auto session = sessionOn(m, src, prefix, o);
        for (int id : generated) {
          if (session->finished()) break;
          if (ctx.cancelled())
            throw Error(ErrorKind::Cancelled,
                        QT_TRANSLATE_NOOP("attnviz::Error", "loading the decode was cancelled"));
          session->stepForward(id);
        }
        return [this, session] { adoptSession(session); };
      });
}

}  // namespace attnviz::gui

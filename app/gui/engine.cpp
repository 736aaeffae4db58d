#include "engine.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QThread>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "backends.h"
#include "bundled.h"
#include "error.h"
#include "weights.h"

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
    case ErrorKind::TooLarge:
      return QObject::tr("Too large");
    case ErrorKind::Io:
      return QObject::tr("File error");
    default:
      return QObject::tr("The model cannot be loaded");
  }
}

}  // namespace

void Engine::JobContext::report(int done, int total, const QString& what) const {
  QMetaObject::invokeMethod(
      engine, [e = engine, done, total, what] { emit e->progress(done, total, what); },
      Qt::QueuedConnection);
}

ForwardOptions Engine::JobContext::forwardOptions(const MaskOptions& masks) const {
  ForwardOptions o;
  o.masks = masks;
  o.keep_scores = true;
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

int Engine::decodeLimit(const Model& model, int src_len, int prefix_len) {
  const int by_source = std::max(2 * src_len + 10, 32);
  return std::min(model.config().max_len, std::max(by_source, prefix_len + src_len + 1));
}

bool Engine::start(const QString& what, bool cancellable,
                   std::function<Apply(const JobContext&)> work) {
  if (busy_) return false;
  busy_ = true;
  cancel_ = false;
  emit busyChanged(true, what);
  JobContext ctx{this, &cancel_, cancellable};
  watcher_->setFuture(QtConcurrent::run([ctx, work, what]() -> Apply {
    Engine* e = ctx.engine;
    try {
      return work(ctx);
    } catch (const Error& err) {
      const QString title = errorTitle(err);
      const QString msg = QString::fromStdString(err.what());
      return [e, title, msg] {
        e->job_failed_ = true;
        emit e->failed(title, msg);
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

void Engine::finish() {
  Apply apply = watcher_->result();
  busy_ = false;
  emit busyChanged(false, {});
  job_failed_ = false;
  if (apply) apply();
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
  const auto& steps = snapshot_->steps;
  return steps.size() > 1 || (!steps.empty() && steps.back().chosen_id >= 0);
}

void Engine::publish(std::shared_ptr<Snapshot> snap) {
  snap->id = ++snapshot_ids_;
  snapshot_ = std::move(snap);
  emit snapshotChanged();
}

// ---- jobs -----------------------------------------------------------------------------------

bool Engine::loadModel(const QString& name_or_path, const QString& config_path) {
  const std::string name = name_or_path.toStdString();
  const std::string config = config_path.toStdString();
  const std::string backend = backend_name_.toStdString();
  return start(tr("Loading %1").arg(name_or_path), false, [=, this](const JobContext&) -> Apply {
    const std::string path = resolveModelPath(name);
    LoadOptions opts;
    opts.config_path = config;
    std::shared_ptr<const LoadedModel> loaded = attnviz::loadModel(path, opts);
    BackendChoice choice = createBackendOrFallback(backend);
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
  return start(tr("Switching to %1").arg(name), false, [=, this](const JobContext&) -> Apply {
    // createBackend (not the fallback): the user asked for this one, so say why it fails.
    std::shared_ptr<Backend> be = createBackend(backend);
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

std::shared_ptr<Snapshot> Engine::makeSnapshot(const DecodingSession& session, int prefix_positions,
                                               int max_positions, const JobContext& ctx) {
  auto snap = std::make_shared<Snapshot>();
  snap->masks = session.masks();
  snap->trace =
      std::make_shared<const Trace>(session.fullTrace(ctx.forwardOptions(session.masks())));
  snap->prefix_positions = prefix_positions;
  snap->max_positions = max_positions;
  snap->src_ids = session.source();
  snap->finished = session.finished();
  const Vocabulary& vocab = session.model().tgtVocab();
  const auto& steps = session.steps();
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto& st = steps[i];
    StepInfo info;
    info.position = int(i);
    info.input_id = st.input_token;
    info.input = QString::fromStdString(vocab.token(st.input_token));
    const auto& logits = st.rows.logits;
    if (!logits.empty()) {
      const float mx = *std::max_element(logits.begin(), logits.end());
      double sum = 0;
      for (float v : logits) sum += std::exp(double(v) - mx);
      auto prob = [&](int id) { return float(std::exp(double(logits[size_t(id)]) - mx) / sum); };
      std::vector<int> idx(logits.size());
      std::iota(idx.begin(), idx.end(), 0);
      const int k = std::min<int>(kTopK, int(idx.size()));
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                        [&](int a, int b) { return logits[size_t(a)] > logits[size_t(b)]; });
      for (int r = 0; r < k; ++r) {
        info.topk.emplace_back(idx[size_t(r)], prob(idx[size_t(r)]));
        info.topk_tokens << QString::fromStdString(vocab.token(idx[size_t(r)]));
      }
      info.argmax_id = idx[0];
      info.argmax = info.topk_tokens.front();
      info.argmax_prob = info.topk.front().second;
      if (st.chosen >= 0 && st.chosen < int(logits.size())) info.chosen_prob = prob(st.chosen);
    }
    info.chosen_id = st.chosen;
    if (st.chosen >= 0) info.chosen = QString::fromStdString(vocab.token(st.chosen));
    snap->steps.push_back(std::move(info));
  }
  return snap;
}

void Engine::greedy(DecodingSession& session, int max_positions, const JobContext& ctx) {
  while (!session.finished()) {
    if (ctx.cancellable && ctx.cancelled())
      throw Error(ErrorKind::Cancelled, "decoding was cancelled");
    session.stepForward();
    ctx.report(session.length(), max_positions, QObject::tr("Decoding"));
  }
}

bool Engine::run(const QString& src, const QString& prefix) {
  if (!model_ || busy_) return false;
  auto model = model_;
  const MaskOptions masks = masks_;
  const std::string s = src.toStdString(), p = prefix.toStdString();
  return start(tr("Decoding"), true, [=, this](const JobContext& ctx) -> Apply {
    std::vector<int> ids = model->encodeSource(s);
    std::vector<int> tgt = model->encodeTarget(p);
    const int limit = decodeLimit(*model, int(ids.size()), int(tgt.size()));
    auto session = std::make_shared<DecodingSession>(*model, ids, masks, limit);
    for (size_t i = 1; i < tgt.size() && !session->finished(); ++i) session->stepForward(tgt[i]);
    const int prefix_positions = session->length();
    greedy(*session, limit, ctx);
    auto snap = makeSnapshot(*session, prefix_positions, limit, ctx);
    return [this, session, snap] {
      session_ = session;
      publish(snap);
    };
  });
}

bool Engine::runBatch(const QStringList& sentences) {
  if (!model_ || busy_) return false;
  auto model = model_;
  const MaskOptions masks = masks_;
  std::vector<std::string> texts;
  for (const auto& s : sentences) texts.push_back(s.toStdString());
  return start(tr("Running a batch"), true, [=, this](const JobContext& ctx) -> Apply {
    if (texts.size() < 2)
      throw Error(ErrorKind::BadInput, "a batch needs at least two sentences (one per line)");
    std::vector<std::vector<int>> srcs, tgts;
    for (size_t b = 0; b < texts.size(); ++b) {
      std::vector<int> ids;
      try {
        ids = model->encodeSource(texts[b]);
      } catch (const Error& e) {
        throw Error(e.kind(), "sentence " + std::to_string(b + 1) + ": " + e.what());
      }
      const int limit = decodeLimit(*model, int(ids.size()));
      std::vector<int> tgt{model->config().bos_id};
      for (int id : model->greedyDecode(ids, limit - 1)) tgt.push_back(id);
      srcs.push_back(std::move(ids));
      tgts.push_back(std::move(tgt));
      ctx.report(int(b) + 1, int(texts.size()), QObject::tr("Decoding the batch"));
      if (ctx.cancelled()) throw Error(ErrorKind::Cancelled, "the batch was cancelled");
    }
    auto snap = std::make_shared<Snapshot>();
    snap->batch = true;
    snap->masks = masks;
    snap->trace =
        std::make_shared<const Trace>(model->forward(srcs, tgts, ctx.forwardOptions(masks)));
    snap->batch_src = srcs;
    snap->batch_tgt = tgts;
    for (const auto& t : texts) snap->batch_sentences << QString::fromStdString(t);
    return [this, snap] { publish(snap); };
  });
}

bool Engine::replayJob(const QString& what, std::vector<int> choices, int extra_token,
                       bool decode_on, const MaskOptions& masks) {
  if (!decodeMode() || busy_) return false;
  auto model = model_;
  const std::vector<int> src = snapshot_->src_ids;
  const int prefix_positions = snapshot_->prefix_positions;
  const int limit = snapshot_->max_positions;
  return start(what, true, [=, this](const JobContext& ctx) -> Apply {
    auto session = std::make_shared<DecodingSession>(*model, src, masks, limit);
    for (int t : choices) {
      if (session->finished()) break;
      session->stepForward(t);
    }
    if (extra_token >= 0 && !session->finished()) session->stepForward(extra_token);
    if (decode_on) greedy(*session, limit, ctx);
    auto snap = makeSnapshot(*session, prefix_positions, limit, ctx);
    return [this, session, snap] {
      session_ = session;
      publish(snap);
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
  if (snapshot_->batch) {
    auto model = model_;
    auto prev = snapshot_;
    started =
        start(tr("Rerunning with the new masks"), true, [=, this](const JobContext& ctx) -> Apply {
          auto snap = std::make_shared<Snapshot>(*prev);
          snap->masks = masks;
          snap->trace = std::make_shared<const Trace>(
              model->forward(prev->batch_src, prev->batch_tgt, ctx.forwardOptions(masks)));
          return [this, snap] { publish(snap); };
        });
  } else {
    std::vector<int> choices;
    for (const auto& s : snapshot_->steps)
      if (s.chosen_id >= 0) choices.push_back(s.chosen_id);
    started = replayJob(tr("Rerunning with the new masks"), choices, -1, false, masks);
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
  auto session = session_;
  const int prefix_positions = snapshot_->prefix_positions;
  const int limit = snapshot_->max_positions;
  return start(tr("Step forward"), false, [=, this](const JobContext& ctx) -> Apply {
    session->stepForward(token);
    std::shared_ptr<Snapshot> snap;
    try {
      snap = makeSnapshot(*session, prefix_positions, limit, ctx);
    } catch (...) {
      session->stepBack();  // keep the session and the shown snapshot in step
      throw;
    }
    return [this, snap] { publish(snap); };
  });
}

bool Engine::stepBack() {
  if (!canStepBack()) return false;
  auto session = session_;
  const int prefix_positions = snapshot_->prefix_positions;
  const int limit = snapshot_->max_positions;
  return start(tr("Step back"), false, [=, this](const JobContext& ctx) -> Apply {
    session->stepBack();
    auto snap = makeSnapshot(*session, prefix_positions, limit, ctx);
    return [this, snap] { publish(snap); };
  });
}

bool Engine::reset() {
  if (!decodeMode() || busy_) return false;
  auto session = session_;
  const int prefix_positions = snapshot_->prefix_positions;
  const int limit = snapshot_->max_positions;
  return start(tr("Reset"), false, [=, this](const JobContext& ctx) -> Apply {
    while (session->length() > prefix_positions && session->stepBack()) {
    }
    if (session->length() == prefix_positions && session->steps().back().chosen >= 0)
      session->stepBack();
    auto snap = makeSnapshot(*session, prefix_positions, limit, ctx);
    return [this, snap] { publish(snap); };
  });
}

bool Engine::decodeToEnd() {
  if (!canStepForward()) return false;
  std::vector<int> choices;
  for (const auto& s : snapshot_->steps)
    if (s.chosen_id >= 0) choices.push_back(s.chosen_id);
  return replayJob(tr("Decoding"), choices, -1, true, snapshot_->masks);
}

bool Engine::choose(int position, int token, bool continue_decoding) {
  if (!decodeMode() || busy_) return false;
  const auto& steps = snapshot_->steps;
  if (position < 0 || position >= int(steps.size())) return false;
  std::vector<int> choices;
  for (int i = 0; i < position; ++i) choices.push_back(steps[size_t(i)].chosen_id);
  return replayJob(tr("Branching"), choices, token, continue_decoding, snapshot_->masks);
}

}  // namespace attnviz::gui

#include "shell/tour.h"

#include <QAction>
#include <QCloseEvent>
#include <QCoreApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QSettings>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include "views/view.h"

namespace attnviz::gui {

namespace {

const char* const kOfferedKey = "tour/offered";

bool sameMasks(const MaskOptions& a, const MaskOptions& b) {
  return a.src_padding == b.src_padding && a.tgt_padding == b.tgt_padding &&
         a.subsequent == b.subsequent;
}

}  // namespace

// ---- the steps --------------------------------------------------------------------------------

std::vector<TourStep> tourSteps() {
  // The sentences, heads and words named in the texts are checked against what the bundled
  // models compute by tests/test_tour.cpp: a retrained model that no longer does what a text
  // says fails there.
  const QString reorder = QStringLiteral("reorder"), reverse = QStringLiteral("reverse");
  const QString sentence = QStringLiteral("the big dog sees a small cat");  // i18n: model input
  const QString digits = QStringLiteral("1 2 3 4 5 6 7 8 9");
  const QString attention = QStringLiteral("attention"), decoding = QStringLiteral("decoding");
  MaskOptions no_look_ahead;
  no_look_ahead.subsequent = false;
  return {
      {.id = QStringLiteral("rows-and-columns"),
       .title = QObject::tr("A row and a column"),
       .text = QObject::tr(
           "Each <b>row</b> is one position of the decoder — the target word it has just read, "
           "<code>&lt;bos&gt;</code> first — and each <b>column</b> a source word: a cell's "
           "colour is how much that row takes from that word, and every row adds up to 1. A row "
           "is choosing the <i>next</i> word, so the row of <i>nara</i> (the word for dog) "
           "already looks at <i>big</i>, the word it is about to translate; hover a cell for its "
           "numbers."),
       .model = reorder,
       .src = sentence,
       .view = attention},
      {.id = QStringLiteral("alignment"),
       .title = QObject::tr("Finding the alignment"),
       .text = QObject::tr(
           "One head alone — the sharpest of the last layer — puts most of each row on one source "
           "word, the word being translated next. Follow the bright cells down: <i>dog, big, "
           "the</i>, then <i>cat, small, a</i>, and <i>sees</i> last; they cross instead of "
           "running down the diagonal, because this made-up language mirrors every noun phrase "
           "and puts the verb at the end."),
       .model = reorder,
       .src = sentence,
       .view = attention,
       .head = TourStep::kSharpestHead},
      {.id = QStringLiteral("anti-diagonal"),
       .title = QObject::tr("The anti-diagonal of reversal"),
       .text = QObject::tr(
           "This model reverses its input, so its first output copies the last input and the "
           "bright cells run from the top right to the bottom left: an anti-diagonal. Each row "
           "again looks at the word it is about to write: the row of <i>9</i> (just written) "
           "looks at <i>8</i>."),
       .model = reverse,
       .src = digits,
       .view = attention},
      {.id = QStringLiteral("heads"),
       .title = QObject::tr("One head, or the mean of the heads"),
       .text = QObject::tr(
           "Each thumbnail is one head of one decoder layer: in the first layer the heads differ "
           "and spread their weight, in the last they are sharp and agree. The mean of the heads "
           "(key <b>M</b>) sums up heads that agree, but where they disagree, as in the first "
           "layer, it draws a blur no head computes — click a thumbnail to see one head alone."),
       .model = reorder,
       .src = sentence,
       .view = QStringLiteral("overview")},
      {.id = QStringLiteral("look-ahead-off"),
       .title = QObject::tr("Switching the look-ahead mask off"),
       .text = QObject::tr(
           "The look-ahead mask is now off (its switch is in the Masks view): every target "
           "position also sees the words after it, and the upper triangle of the decoder's "
           "self-attention, hatched before, takes about half of each row. The model never "
           "learned to use the future, so for the same words its predictions fall apart — in the "
           "Decoding view most top choices are now <code>&lt;eos&gt;</code>."),
       .model = reorder,
       .src = sentence,
       .view = attention,
       .kind = AttentionKind::DecoderSelf,
       .masks = no_look_ahead},
      {.id = QStringLiteral("stepping"),
       .title = QObject::tr("Stepping the decoder"),
       .text = QObject::tr(
           "The decoder writes one word per step: after <i>nara lugol na ka</i> (dog, big, the, "
           "then the subject marker) its newest row of cross-attention has moved to <i>cat</i>, "
           "and the chart shows how sure it is that <i>bizu</i> comes next. Press <b>→</b> to let "
           "it write a word, <b>←</b> to take one back."),
       .model = reorder,
       .src = sentence,
       .view = decoding,
       .steps = 4},
      {.id = QStringLiteral("branching"),
       .title = QObject::tr("Branching"),
       .text = QObject::tr(
           "Choose a word other than the model's (select it in the top-k list, then <i>Use this "
           "token</i>) and the decoder goes on from yours: here <i>3</i> was picked instead of "
           "<i>8</i>. After it the row looks at <i>7</i> and writes <i>7</i>, not <i>2</i> — "
           "this model reverses by position, reading one source slot after the other, whatever "
           "it wrote before."),
       .model = reverse,
       .src = digits,
       .view = decoding,
       .branch_at = 1,
       .branch_token = QStringLiteral("3"),
       .show_step = 2},  // the row after the chosen 3
  };
}

// ---- the panel --------------------------------------------------------------------------------

TourPanel::TourPanel(QWidget* window) : QFrame(window) {
  setObjectName(QStringLiteral("tourPanel"));
  setFrameShape(QFrame::StyledPanel);
  setAutoFillBackground(true);
  setBackgroundRole(QPalette::ToolTipBase);
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(14, 8, 8, 12);
  auto* top = new QHBoxLayout;
  counter_ = new QLabel(this);
  counter_->setForegroundRole(QPalette::PlaceholderText);
  close_ = new QToolButton(this);
  close_->setText(QStringLiteral("×"));
  close_->setAutoRaise(true);
  close_->setToolTip(tr("Close the tour"));
  top->addWidget(counter_, 1);
  top->addWidget(close_);
  title_ = new QLabel(this);
  QFont f = title_->font();
  f.setBold(true);
  f.setPointSizeF(f.pointSizeF() * 1.2);
  title_->setFont(f);
  title_->setWordWrap(true);
  text_ = new QLabel(this);
  text_->setWordWrap(true);
  text_->setTextFormat(Qt::RichText);
  text_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  status_->setForegroundRole(QPalette::PlaceholderText);
  back_ = new QPushButton(tr("◀ Back"), this);
  next_ = new QPushButton(tr("Next ▶"), this);
  end_ = new QPushButton(tr("End tour"), this);
  next_->setDefault(true);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(back_);
  buttons->addWidget(next_);
  buttons->addStretch(1);
  buttons->addWidget(end_);
  l->addLayout(top);
  l->addWidget(title_);
  l->addWidget(text_);
  l->addWidget(status_);
  l->addSpacing(4);
  l->addLayout(buttons);
  connect(close_, &QToolButton::clicked, this, &QWidget::close);
  window->installEventFilter(this);
}

void TourPanel::place() {
  auto* w = qobject_cast<QMainWindow*>(parentWidget());
  const QRect area =
      w && w->centralWidget() ? w->centralWidget()->geometry() : parentWidget()->rect();
  const int width = std::min(360, std::max(240, area.width() / 3));
  const int height =
      std::min(heightForWidth(width) > 0 ? heightForWidth(width) : sizeHint().height(),
               std::max(120, area.height() - 24));
  setGeometry(area.right() - width - 12, area.bottom() - height - 12, width, height);
  raise();
}

bool TourPanel::eventFilter(QObject* watched, QEvent* event) {
  if (watched == parentWidget() &&
      (event->type() == QEvent::Resize || event->type() == QEvent::LayoutRequest) && isVisible())
    place();
  return QFrame::eventFilter(watched, event);
}

void TourPanel::showEvent(QShowEvent* event) {
  QFrame::showEvent(event);
  place();
}

void TourPanel::closeEvent(QCloseEvent* event) {
  QFrame::closeEvent(event);
  emit closedByUser();
}

// ---- the tour ---------------------------------------------------------------------------------

Tour::Tour(TourWindow window, std::vector<TourStep> steps)
    : QObject(window.window), window_(std::move(window)), steps_(std::move(steps)) {
  setObjectName(QStringLiteral("tour"));
  panel_ = new TourPanel(window_.window);
  panel_->hide();
  connect(panel_->back_, &QPushButton::clicked, this, &Tour::back);
  connect(panel_->next_, &QPushButton::clicked, this, [this] {
    if (offering_)
      start();
    else
      next();
  });
  connect(panel_->end_, &QPushButton::clicked, this, &Tour::stop);
  connect(panel_, &TourPanel::closedByUser, this, [this] {
    if (offering_) {
      offering_ = false;
      return;
    }
    if (running()) stop();
  });
  Engine* engine = window_.engine;
  connect(engine, &Engine::jobFinished, this, [this](bool) { onEngineIdle(); });
  connect(engine, &Engine::failed, this, [this](const QString& title, const QString& message) {
    if (!running() || !waiting_) return;
    // The step cannot be set up (a bundled model missing, …): say so and let the user move on.
    ops_.clear();
    waiting_ = false;
    setStatus(tr("This step could not be set up: %1 — %2").arg(title, message));
    panel_->back_->setEnabled(current_ > 0);
    panel_->next_->setEnabled(true);
    emit stepFailed(current_, message);
  });
}

void Tour::offer() {
  offering_ = true;
  panel_->counter_->clear();
  panel_->title_->setText(tr("New to attnviz?"));
  panel_->text_->setText(
      tr("A tour of %1 short steps shows what to look for: what a row and a column of a heatmap "
         "are, alignments, heads, masks and decoding, each on a bundled model. It takes a few "
         "minutes; Help › Tour brings it back at any time.")
          .arg(count()));
  panel_->status_->clear();
  panel_->back_->hide();
  panel_->next_->setText(tr("Take the tour"));
  panel_->next_->setEnabled(true);
  panel_->end_->setText(tr("Not now"));
  panel_->show();
  panel_->place();
}

void Tour::start() {
  offering_ = false;
  if (!running()) {
    Engine* e = window_.engine;
    before_ = Before{};
    before_.had_model = e->hasModel();
    before_.model = e->modelSource();
    before_.config = e->configPath();
    before_.src = window_.source->text();
    before_.prefix = window_.prefix->text();
    before_.masks = e->masks();
    before_.selection = window_.state->selection();
    if (View* v = window_.currentView()) before_.view = v->name();
  }
  panel_->back_->show();
  panel_->end_->setText(tr("End tour"));
  panel_->show();
  goTo(0);
}

void Tour::goTo(int index) {
  if (index < 0 || index >= count()) return;
  offering_ = false;
  restoring_ = false;
  current_ = index;
  ops_.clear();
  queueStep(steps_[size_t(index)]);
  showStep();
  runOps();
}

void Tour::next() {
  if (!running()) return;
  if (current_ + 1 >= count()) {
    stop();
    return;
  }
  goTo(current_ + 1);
}

void Tour::back() {
  if (running() && current_ > 0) goTo(current_ - 1);
}

void Tour::stop() {
  if (offering_) {
    offering_ = false;
    panel_->hide();
    return;
  }
  if (!running()) return;
  current_ = -1;
  ops_.clear();
  panel_->hide();
  restoring_ = true;
  queueRestore();
  runOps();
}

void Tour::showStep() {
  const TourStep& s = steps_[size_t(current_)];
  panel_->counter_->setText(tr("Step %1 of %2").arg(current_ + 1).arg(count()));
  panel_->title_->setText(s.title);
  panel_->text_->setText(s.text);
  panel_->back_->setEnabled(false);
  panel_->next_->setEnabled(false);
  panel_->next_->setText(current_ + 1 == count() ? tr("Finish") : tr("Next ▶"));
  setStatus(tr("Setting up…"));
  panel_->place();
}

void Tour::setStatus(const QString& text) {
  panel_->status_->setText(text);
  panel_->status_->setVisible(!text.isEmpty());
  if (panel_->isVisible()) panel_->place();
}

int Tour::sharpestHead(AttentionKind kind, int layer) const {
  auto snap = window_.engine->snapshot();
  if (!snap || !snap->trace) return 0;
  const AttentionBlock* a = snap->trace->block(kind, layer);
  if (!a || a->q_len == 0 || a->k_len == 0) return 0;
  // The head whose rows are most peaked: the largest mean over rows of the row's maximum.
  int best = 0;
  double best_peak = -1;
  for (int h = 0; h < a->heads; ++h) {
    double peak = 0;
    for (int i = 0; i < a->q_len; ++i) {
      const std::vector<float> row = a->probRow(0, h, i);
      peak += *std::max_element(row.begin(), row.end());
    }
    peak /= std::max(1, a->q_len);
    if (peak > best_peak) {
      best_peak = peak;
      best = h;
    }
  }
  return best;
}

void Tour::queueStep(const TourStep& s) {
  Engine* e = window_.engine;
  const TourWindow* w = &window_;
  // The model (a new one also runs its first example; the sentence below follows).
  ops_.push_back([e, s] {
    if (e->hasModel() && e->modelSource() == s.model) return false;
    return e->loadModel(s.model);
  });
  // Every mask on before the greedy decode, so the words are the model's own.
  ops_.push_back([e] {
    if (sameMasks(e->masks(), MaskOptions{})) return false;
    return e->setMasks(MaskOptions{});
  });
  ops_.push_back([e, w, s] {
    w->source->setText(s.src);
    w->prefix->clear();
    return e->run(s.src, QString());
  });
  // Switches the step turns off: the same tokens again, with the mask off.
  if (!sameMasks(s.masks, MaskOptions{})) ops_.push_back([e, s] { return e->setMasks(s.masks); });
  if (s.steps >= 0) {
    ops_.push_back([e] { return e->reset(); });
    for (int i = 0; i < s.steps; ++i) ops_.push_back([e] { return e->stepForward(); });
  }
  if (s.branch_at >= 0) {
    ops_.push_back([e, s] {
      const int id = e->model() ? e->model()->tgtVocab().id(s.branch_token.toStdString()) : -1;
      return id >= 0 && e->choose(s.branch_at, id, true);
    });
  }
  // The view and the attention shown, once the trace is there.
  ops_.push_back([this, w, s] {
    w->setCurrentView(s.view);
    AppState* st = w->state;
    AttentionSelection sel = st->selection();
    sel.kind = s.kind;
    sel.layer = s.layer >= 0 ? s.layer : std::max(0, st->layerCount(s.kind) - 1);
    sel.head = s.head == TourStep::kSharpestHead ? sharpestHead(s.kind, sel.layer) : s.head;
    sel.batch = 0;
    st->setSelection(sel);
    if (s.show_step >= 0) w->selectDecodingStep(s.show_step);
    return false;
  });
}

void Tour::queueRestore() {
  Engine* e = window_.engine;
  const TourWindow* w = &window_;
  const Before b = before_;
  if (!b.had_model) return;  // nothing was open: leave the last step's model
  ops_.push_back([e, b] {
    if (e->modelSource() == b.model) return false;
    return e->loadModel(b.model, b.config);
  });
  ops_.push_back([e] {
    if (sameMasks(e->masks(), MaskOptions{})) return false;
    return e->setMasks(MaskOptions{});
  });
  ops_.push_back([e, w, b] {
    w->source->setText(b.src);
    w->prefix->setText(b.prefix);
    return !b.src.trimmed().isEmpty() && e->run(b.src, b.prefix);
  });
  ops_.push_back([e, b] {
    if (sameMasks(e->masks(), b.masks)) return false;
    return e->setMasks(b.masks);
  });
  ops_.push_back([w, b] {
    if (!b.view.isEmpty()) w->setCurrentView(b.view);
    w->state->setSelection(b.selection);
    return false;
  });
}

void Tour::runOps() {
  if (in_ops_) return;
  in_ops_ = true;
  Engine* e = window_.engine;
  while (!ops_.empty()) {
    if (e->busy()) {
      waiting_ = true;
      break;
    }
    Op op = std::move(ops_.front());
    ops_.pop_front();
    if (op() && e->busy()) {
      waiting_ = true;
      break;
    }
  }
  in_ops_ = false;
  if (waiting_ || !ops_.empty()) return;
  if (restoring_) {
    restoring_ = false;
    emit finished();
    return;
  }
  if (!running()) return;
  setStatus(QString());
  panel_->back_->setEnabled(current_ > 0);
  panel_->next_->setEnabled(true);
  emit stepReady(current_);
}

void Tour::onEngineIdle() {
  // jobFinished also comes while a job started by the finished one runs (a model load starts the
  // window's first run): wait until the engine is really idle.
  if (!waiting_ || in_ops_ || window_.engine->busy()) return;
  waiting_ = false;
  // Let the window and the views take the new snapshot first.
  QTimer::singleShot(0, this, [this] {
    if (!waiting_) runOps();
  });
}

// ---- installing -------------------------------------------------------------------------------

Tour* installTour(const TourWindow& w) {
  QMainWindow* window = w.window;
  if (auto* existing = window->findChild<Tour*>(QStringLiteral("tour"), Qt::FindDirectChildrenOnly))
    return existing;
  auto* tour = new Tour(w);
  auto* action = new QAction(QObject::tr("&Tour: what to look for…"), window);
  action->setObjectName(QStringLiteral("tour"));
  action->setToolTip(
      QObject::tr("A guided first look at attention, in %1 steps").arg(tour->count()));
  QObject::connect(action, &QAction::triggered, tour, &Tour::start);
  window->addAction(action);
  // The Help menu, first entry.
  QMenu* help = nullptr;
  for (QAction* a : window->menuBar()->actions())
    if (a->menu() && a->text() == QCoreApplication::translate("attnviz::gui::MainWindow", "&Help"))
      help = a->menu();
  if (!help) help = window->menuBar()->addMenu(QObject::tr("&Help"));
  help->insertAction(help->actions().isEmpty() ? nullptr : help->actions().front(), action);
  return tour;
}

void Tour::offerOnce() {
  QSettings s;  // the application's: main() names it, the tests name their own
  if (s.value(QString::fromLatin1(kOfferedKey), false).toBool() || running()) return;
  s.setValue(QString::fromLatin1(kOfferedKey), true);  // once, whatever the answer
  offer();
}

}  // namespace attnviz::gui

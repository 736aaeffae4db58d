#include "views/why/why_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QTabWidget>
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "model/cpu_fallback.h"
#include "model/decoding.h"
#include "model/trace_dump.h"
#include "session/run_spec.h"
#include "session/teaching_util.h"
#include "views/why/why_patching.h"
#include "widgets/bar_chart.h"
#include "widgets/heatmap.h"
#include "widgets/token_label.h"

namespace attnviz::gui {

namespace {

// A row name the core writes in English ("embeddings", "layer 3"), in the interface's language.
QString rowNameText(const std::string& name) {
  if (name == "embeddings")
    return QCoreApplication::translate("attnviz::gui::WhyView", "embeddings");
  if (name.rfind("layer ", 0) == 0)
    return QCoreApplication::translate("attnviz::gui::WhyView", "layer %1")
        .arg(QString::fromStdString(name.substr(6)));
  return QString::fromStdString(name);
}

constexpr int kTopK = 5;         // tokens per lens cell
constexpr int kCandidates = 10;  // tokens offered in the "Explain" list

// One tab of the view: a page, its caption at the top left (a row the tab may add controls to) and
// what it shows below. Attribution and patching come as more of them.
struct Tab {
  QWidget* page;
  QVBoxLayout* layout;
  QHBoxLayout* top;
  QLabel* caption;
};

Tab addTab(QTabWidget* tabs, const QString& title, const QString& tip) {
  Tab t;
  t.page = new QWidget(tabs);
  t.layout = new QVBoxLayout(t.page);
  t.layout->setContentsMargins(0, 4, 0, 0);
  t.top = new QHBoxLayout;
  t.caption = new QLabel(t.page);
  t.caption->setWordWrap(true);
  t.caption->setTextFormat(Qt::RichText);
  t.caption->setTextInteractionFlags(Qt::TextSelectableByMouse);
  t.caption->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  t.top->addWidget(t.caption, 1);
  t.layout->addLayout(t.top);
  tabs->setTabToolTip(tabs->addTab(t.page, title), tip);
  return t;
}

// "Σ attributions 2.6152 vs f(input) − f(baseline) = 23.0431 − 20.4277 = 2.6155: gap 0.01 %".
QString completenessText(const Attribution& r) {
  const QString gap =
      std::isfinite(r.gap_relative)
          ? QStringLiteral("%1 %").arg(QString::number(100 * r.gap_relative, 'f', 2))
          : QObject::tr("%1 (f(input) = f(baseline))").arg(num(r.gap, 4));
  return QObject::tr("Σ attributions %1 vs f(input) − f(baseline) = %2 − %3 = %4: gap %5")
      .arg(num(r.ig_total, 4), num(r.f_input, 4),
           r.f_baseline < 0 ? QStringLiteral("(%1)").arg(num(r.f_baseline, 4))
                            : num(r.f_baseline, 4),
           num(r.f_input - r.f_baseline, 4), gap);
}

}  // namespace

WhyAnswer answerWhy(const Model& model, std::shared_ptr<const Trace> trace,
                    const WhyQuestion& question) {
  const ModelConfig& c = model.config();
  const Trace& t = *trace;
  WhyAnswer a;
  a.question = question;
  a.trace = trace;
  const Side side = lensStack(c);
  a.inputs = side == Side::Source ? t.src_tokens.at(0) : t.tgt_tokens.at(0);
  const int n = int(a.inputs.size());
  if (n == 0)
    throw Error(ErrorKind::BadInput,
                QT_TRANSLATE_NOOP("attnviz::Error", "the run has no positions to explain"));
  if (question.position >= n)
    throw Error(ErrorKind::BadInput, "position " + std::to_string(question.position + 1) +
                                         " is past the run's " + std::to_string(n) + " positions");
  a.position = question.position < 0 ? n - 1 : question.position;
  if (t.logits.empty()) {
    a.lens_refusal = a.contributions_refusal = QObject::tr(
        "This model has no token head: it predicts no token, so there is no token to "
        "explain (the attention views show what it computes).");
    return a;
  }
  const int V = t.logits.vocab();
  if (question.token >= V)
    throw Error(ErrorKind::BadInput,
                "token " + std::to_string(question.token) + " is not in the output vocabulary");
  a.candidates = t.logits.topProbabilities(0, a.position, kCandidates);
  const int choice = a.candidates.front().first;
  a.token = question.token >= 0 ? question.token : choice;
  if (question.versus_runner_up && V > 1) {
    // The most probable token other than the one explained.
    a.versus = a.candidates[0].first == a.token ? a.candidates[1].first : a.candidates[0].first;
  }
  try {
    LensOptions lo;
    lo.top_k = kTopK;
    lo.target = a.token == choice ? -1 : a.token;  // −1: each position's own choice
    a.lens = logitLens(model, t, lo);
  } catch (const Error& e) {
    a.lens_refusal = messageSentence(e.what());
  }
  try {
    ContributionOptions co;
    co.position = a.position;
    co.token = a.token;
    co.versus = a.versus;
    a.contributions = directContributions(model, t, co);
  } catch (const Error& e) {
    a.contributions_refusal = messageSentence(e.what());
  }
  return a;
}

// ---- the view ---------------------------------------------------------------------------------

WhyView::WhyView(AppState* state, QWidget* parent)
    : View(state, tr("What am I looking at?"), parent) {
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Position:"), this));
  position_ = new QComboBox(this);
  position_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  position_->setToolTip(
      tr("The position whose next token is explained (the Decoding view's step); the model "
         "predicts the token after the one read there"));
  bar->addWidget(position_);
  bar->addSpacing(8);
  bar->addWidget(new QLabel(tr("Explain:"), this));
  token_ = new QComboBox(this);
  token_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  token_->setToolTip(
      tr("The token explained: the model's choice, or another candidate (click a bar of the "
         "Decoding view's next-token chart and press “Why this token?” to come here with it)"));
  bar->addWidget(token_);
  versus_ = new QCheckBox(tr("against the runner-up"), this);
  versus_->setToolTip(
      tr("Split logit[token] − logit[runner-up] instead of the logit: what makes the model prefer "
         "this token to its closest rival"));
  bar->addWidget(versus_);
  bar->addStretch(1);
  status_ = new QLabel(this);
  status_->setForegroundRole(QPalette::PlaceholderText);
  bar->addWidget(status_);
  csv_ = new QPushButton(tr("Export CSV…"), this);
  csv_->setToolTip(tr("The tab shown as a table: every lens cell, or every contribution"));
  numpy_ = new QPushButton(tr("Export NumPy…"), this);
  numpy_->setToolTip(
      tr("lens_top_probs.npy, lens_target_probs.npy, lens.json and contributions.json into a "
         "folder (as attnviz-cli lens --dump); on the Attribution tab its SIDE_*.npy and "
         "attribution.json (as attnviz-cli attribute --dump). PNG, SVG and PDF: File › Export "
         "view"));
  bar->addWidget(csv_);
  bar->addWidget(numpy_);
  layout_->addLayout(bar);

  tabs_ = new QTabWidget(this);
  tabs_->setDocumentMode(true);
  // The logit lens.
  const Tab lens = addTab(tabs_, tr("Logit lens"),
                          tr("What every layer would predict if the model stopped there"));
  lens_page_ = lens.page;
  lens_caption_ = lens.caption;
  lens.top->addWidget(new QLabel(tr("Colour:"), lens_page_), 0, Qt::AlignTop);
  colour_ = new QComboBox(lens_page_);
  colour_->addItem(tr("probability of the explained token"));
  colour_->addItem(tr("probability of each cell's top token"));
  colour_->setToolTip(
      tr("What the colour shows; each cell names its own most probable token either way"));
  lens.top->addWidget(colour_, 0, Qt::AlignTop);
  lens_map_ = new HeatmapView(lens_page_);
  lens_map_->heatmap()->setMaxFitCell(64);
  lens.layout->addWidget(lens_map_, 1);
  // The direct contributions: every part as a bar, in a scroll area when they are many.
  const Tab parts = addTab(tabs_, tr("Contributions"),
                           tr("The logit split into what the embeddings, every head, every "
                              "feed-forward block and the biases add to it"));
  parts_page_ = parts.page;
  parts_caption_ = parts.caption;
  auto* scroll = new QScrollArea(parts_page_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  bars_box_ = scroll;
  bars_ = new BarChart(scroll);
  bars_->setSigned(true);
  bars_->setToolTip(
      tr("Each part of the logit, largest first: red adds to it, blue takes from it. Click a head "
         "(or ↑ ↓ and Enter) to open its attention"));
  scroll->setWidget(bars_);
  parts.layout->addWidget(scroll, 1);
  // Gradient attribution, computed when the tab is shown: per side, the tokens with their
  // integrated gradients, saliency, the chosen attention and rollout, rows aligned.
  const Tab attr =
      addTab(tabs_, tr("Attribution"),
             tr("How much each input token moves the explained logit (saliency, integrated "
                "gradients) beside where the chosen attention and rollout look"));
  attribution_page_ = attr.page;
  attribution_caption_ = attr.caption;
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Steps:"), attribution_page_));
  steps_ = new QSpinBox(attribution_page_);
  steps_->setRange(1, 1024);
  steps_->setValue(32);
  steps_->setToolTip(
      tr("Integrated gradients' steps N (the midpoint rule): more steps, a smaller completeness "
         "gap, a longer computation"));
  controls->addWidget(steps_);
  controls->addSpacing(8);
  controls->addWidget(new QLabel(tr("Attention of:"), attribution_page_));
  layer_ = new QComboBox(attribution_page_);
  layer_->setToolTip(
      tr("The layer whose attention is set beside the attributions (default: the last, as "
         "attnviz-cli attribute; the source side uses its cross-attention)"));
  controls->addWidget(layer_);
  head_ = new QComboBox(attribution_page_);
  head_->setToolTip(
      tr("The head compared (default: the mean of the layer's heads, as attnviz-cli attribute)"));
  controls->addWidget(head_);
  cancel_ = new QPushButton(tr("Cancel"), attribution_page_);
  cancel_->setToolTip(tr("Stop the computation (Esc); “Compute” runs it again"));
  controls->addWidget(cancel_);
  controls->addStretch(1);
  attr.layout->addLayout(controls);
  auto* attr_scroll = new QScrollArea(attribution_page_);
  attr_scroll->setWidgetResizable(true);
  attr_scroll->setFrameShape(QFrame::NoFrame);
  attribution_chart_ = new QWidget(attr_scroll);
  attribution_chart_->setAutoFillBackground(true);
  attribution_chart_->setBackgroundRole(QPalette::Base);
  sides_layout_ = new QVBoxLayout(attribution_chart_);
  attr_scroll->setWidget(attribution_chart_);
  attr.layout->addWidget(attr_scroll, 1);
  patching_ = new WhyPatchingTab(state_, tabs_);
  tabs_->setTabToolTip(tabs_->addTab(patching_, tr("Patching")),
                       tr("Which layer, position and head carry the difference between the "
                          "current input and one with a word changed"));
  layout_->addWidget(tabs_, 1);

  connect(position_, &QComboBox::currentIndexChanged, this, [this] {
    if (filling_) return;
    wanted_.position = position_->currentData().toInt();
    wanted_.token = -1;  // another position: its own choice
    request();
  });
  connect(token_, &QComboBox::currentIndexChanged, this, [this] {
    if (filling_) return;
    wanted_.token = token_->currentData().toInt();
    request();
  });
  connect(versus_, &QCheckBox::toggled, this, [this](bool on) {
    if (filling_) return;
    wanted_.versus_runner_up = on;
    request();
  });
  connect(colour_, &QComboBox::currentIndexChanged, this, [this] { showLens(); });
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    explainView();
    requestAttribution();
  });
  connect(patching_, &WhyPatchingTab::explanationChanged, this, [this] { explainView(); });
  connect(steps_, &QSpinBox::valueChanged, this, [this] { requestAttribution(); });
  connect(layer_, &QComboBox::currentIndexChanged, this, [this] {
    if (!filling_) requestAttribution();
  });
  connect(head_, &QComboBox::currentIndexChanged, this, [this] {
    if (!filling_) requestAttribution();
  });
  connect(cancel_, &QPushButton::clicked, this, [this] {
    if (attributing_) {
      state_->engine()->cancel();
    } else {
      declined_ = {};
      requestAttribution();
    }
  });
  // A click opens a head (the arrow keys only move along the bars; Enter opens).
  connect(bars_, &BarChart::barPressed, this, &WhyView::openPart);
  connect(bars_, &BarChart::barActivated, this, &WhyView::openPart);
  connect(csv_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export as CSV"),
        tabs_->currentIndex() == 0            ? QStringLiteral("logit-lens.csv")
        : tabs_->currentIndex() == 1          ? QStringLiteral("contributions.csv")
        : tabs_->currentWidget() == patching_ ? QStringLiteral("patching.csv")
                                              : QStringLiteral("attribution.csv"),
        tr("CSV (*.csv)"));
    QString error;
    if (!path.isEmpty() && !exportCsv(path, &error)) status_->setText(error);
  });
  connect(numpy_, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Write the NumPy files into"));
    QString error;
    if (!dir.isEmpty() && !exportNumpy(dir, &error)) status_->setText(error);
  });
  connect(state_, &AppState::whyAsked, this, &WhyView::explain);
  Engine* engine = state_->engine();
  connect(engine, &Engine::modelChanged, this, [this] {
    answer_.reset();
    attribution_.reset();
    attribution_for_ = {};
    declined_ = {};
    wanted_ = {};
    wanted_for_ = 0;
    fillAttentionChoice();
  });
  // A question asked while the engine was busy is asked again when it is free.
  connect(engine, &Engine::busyChanged, this, [this](bool busy) {
    if (busy || !isVisible()) return;
    if (pending_) request();
    if (!computing()) requestAttribution();
  });
  connect(engine, &Engine::progress, this, [this](int done, int total, const QString&) {
    if (attributing_)
      status_->setText(tr("Integrated gradients: %1 of %2 steps…").arg(done).arg(total));
  });
  // The job ended without its result (cancelled, or failed): nothing is computing any more.
  connect(engine, &Engine::jobFinished, this, [this](bool ok) {
    if (attributing_) {
      attributing_ = false;
      if (!ok) {  // cancelled: not asked again until a setting changes or Compute is pressed
        declined_ = wantedAttribution();
        status_->setText(tr("Attribution cancelled"));
        showAttribution();
      }
      return;
    }
    if (!computing_) return;
    computing_ = false;
    if (!ok) showAnswer();
  });
  fillAttentionChoice();
}

void WhyView::openPart(int bar) {
  if (!answer_ || !answer_->contributions || bar < 0 || bar >= int(bar_parts_.size())) return;
  const LogitPart& p = answer_->contributions->parts[size_t(bar_parts_[size_t(bar)])];
  if (p.kind != LogitPart::Kind::Head) return;
  AttentionSelection s = state_->selection();
  s.kind = p.attention;
  s.layer = p.layer;
  s.head = p.head;
  state_->setSelection(s);
  emit openView(QStringLiteral("attention"));
}

HeatmapWidget* WhyView::lensMap() const {
  return lens_map_->heatmap();
}

QWidget* WhyView::exportWidget() {
  if (tabs_->currentWidget() == patching_) return patching_->exportWidget();
  if (tabs_->currentIndex() == kAttributionTab)
    return attribution_ && attribution_for_ == wantedAttribution() ? attribution_chart_
                                                                   : attribution_page_;
  if (tabs_->currentIndex() == 0) return answer_ && answer_->lens ? lensMap() : lens_page_;
  return answer_ && answer_->contributions ? static_cast<QWidget*>(bars_) : parts_page_;
}

QStringList WhyView::figureTitle() const {
  QStringList lines{title()};
  if (tabs_->currentWidget() == patching_) {
    lines[0] = patching_->figureTitle();
  } else if (answer_) {
    const int tab = tabs_->currentIndex();
    lines[0] = (tab == 0   ? tr("Logit lens")
                : tab == 1 ? tr("Direct contributions")
                           : tr("Gradient attribution")) +
               tr(" · why %1 after “%2” (position %3)")
                   .arg(tokenText(answer_->token))
                   .arg(tokenLabel(answer_->inputs[size_t(answer_->position)]))
                   .arg(answer_->position + 1);
    if (answer_->versus >= 0 && tab != 0)
      lines[0] += tr(" rather than %1").arg(tokenText(answer_->versus));
  }
  const QString sentence = sentenceLine();
  if (!sentence.isEmpty()) lines << sentence;
  if (tabs_->currentIndex() == kAttributionTab && attribution_ &&
      attribution_for_ == wantedAttribution())
    lines << tr("integrated gradients, %1 steps: %2")
                 .arg(attribution_->steps)
                 .arg(completenessText(*attribution_));
  return lines;
}

namespace {

// A copy of the lens's heatmap for a figure of `width`: its cells as tall as on screen at most (the
// widget's largest fitted cell), and no taller than `height` — the smallest height that gives them.
void setUpFigureLens(HeatmapWidget& hm, const HeatmapWidget& from, bool legend, int width,
                     int height) {
  hm.copyForFigure(from, legend);
  hm.setMaxFitCell(64);
  hm.resize(width, height);
  const double full = hm.cellRect(0, 0).height();
  const int least = QFontMetrics(hm.font()).height() * 8;  // room for the legend
  for (int h = least; h < height; h += 4) {
    hm.resize(width, h);
    if (hm.cellRect(0, 0).height() >= full - 0.5) return;
  }
  hm.resize(width, height);
}

}  // namespace

QSize WhyView::figureBodySize(QSize available, bool legend) {
  if (exportWidget() != lensMap()) return View::figureBodySize(available, legend);
  const QSize room = available.boundedTo(lensMap()->size());
  HeatmapWidget hm;
  setUpFigureLens(hm, *lensMap(), legend, room.width(), room.height());
  return hm.size();
}

void WhyView::paintFigureBody(QPainter& p, QSize body, bool legend) {
  if (exportWidget() != lensMap()) return View::paintFigureBody(p, body, legend);
  HeatmapWidget hm;
  setUpFigureLens(hm, *lensMap(), legend, body.width(), body.height());
  hm.render(&p, QPoint(), QRegion(), QWidget::DrawChildren);
}

QString WhyView::tokenText(int id) const {
  const Model* model = state_->model();
  if (!model || id < 0) return {};
  return QStringLiteral("“%1”").arg(tokenLabel(model->vocab(lensStack(model->config())).token(id)));
}

void WhyView::explain(int position, int token) {
  auto snap = state_->snapshot();
  wanted_.position = position;
  wanted_.token = token;
  wanted_.sentence = snap && snap->batch ? state_->selection().batch : 0;
  wanted_for_ = snap ? snap->id : 0;
  request();
}

void WhyView::refresh() {
  auto snap = state_->snapshot();
  if (!snap || !snap->trace || !state_->model()) {
    answer_.reset();
    fillControls();
    showAnswer();
    return;
  }
  // A new run: its last position and its own choice, unless asked about this run already.
  if (wanted_for_ != snap->id) {
    wanted_ = {-1, -1, wanted_.versus_runner_up};
    wanted_for_ = snap->id;
  }
  wanted_.sentence = snap->batch ? state_->selection().batch : 0;
  if (!answer_ || answer_->snapshot != snap->id || !(answer_->question == wanted_)) request();
  showAnswer();
}

void WhyView::request() {
  auto snap = state_->snapshot();
  Engine* engine = state_->engine();
  if (!snap || !snap->trace || !state_->model()) return;
  if (answer_ && answer_->snapshot == snap->id && answer_->question == wanted_) {
    pending_ = false;
    showAnswer();
    return;
  }
  if (!isVisible()) {  // when shown
    pending_ = true;
    markDirty();
    return;
  }
  if (engine->busy()) {  // when the engine's job is done
    pending_ = true;
    status_->setText(tr("Waiting for the current job…"));
    return;
  }
  // The pass with the residual stream kept is run once per run; a new question reads it again.
  std::shared_ptr<const Trace> kept =
      answer_ && answer_->snapshot == snap->id && answer_->question.sentence == wanted_.sentence
          ? answer_->trace
          : nullptr;
  RunSpec spec = currentRunSpec(*snap, wanted_.sentence);
  spec.keep_activations = true;
  const WhyQuestion question = wanted_;
  const uint64_t id = snap->id;
  pending_ = false;
  error_.clear();
  const bool started = engine->runTask(
      tr("Why this token?"), [=, this](const Model& model, const std::atomic<bool>& cancel) {
        std::shared_ptr<const WhyAnswer> answer;
        QString error;
        try {
          auto trace = kept ? kept : runComparison(model, spec, &cancel).trace;
          auto a = std::make_shared<WhyAnswer>(answerWhy(model, trace, question));
          a->snapshot = id;
          answer = a;
        } catch (const Error& e) {
          // Out of GPU memory: the engine redoes the task on the CPU (model/cpu_fallback.h).
          if (e.kind() == ErrorKind::Cancelled || ranOutOfDeviceMemory(e)) throw;
          error = QString::fromStdString(e.what());
        }
        return std::function<void()>([this, answer, error] {
          computing_ = false;
          error_ = error;
          if (answer) answer_ = answer;
          showAnswer();
        });
      });
  computing_ = started;
  if (started) {
    status_->setText(tr("Computing…"));
  } else {
    pending_ = true;
    status_->setText(tr("Waiting for the current job…"));
  }
}

void WhyView::fillControls() {
  filling_ = true;
  position_->clear();
  token_->clear();
  const WhyAnswer* a = answer_.get();
  if (a) {
    for (int i = 0; i < int(a->inputs.size()); ++i)
      position_->addItem(tr("%1 · after “%2”").arg(i + 1).arg(tokenLabel(a->inputs[size_t(i)])), i);
    position_->setCurrentIndex(a->position);
    if (!a->candidates.empty()) {
      const auto& best = a->candidates.front();
      token_->addItem(
          tr("the model's choice: %1 (p = %2)").arg(tokenText(best.first)).arg(num(best.second, 3)),
          -1);
      for (size_t k = 1; k < a->candidates.size(); ++k)
        token_->addItem(tr("%1 (p = %2)")
                            .arg(tokenText(a->candidates[k].first))
                            .arg(num(a->candidates[k].second, 3)),
                        a->candidates[k].first);
      // A token asked for that is not among the candidates.
      if (a->question.token >= 0 && token_->findData(a->question.token) < 0)
        token_->addItem(tokenText(a->question.token), a->question.token);
      const int at = token_->findData(a->question.token == best.first ? -1 : a->question.token);
      token_->setCurrentIndex(std::max(0, at));
    }
  }
  versus_->setChecked(wanted_.versus_runner_up);
  // Patching explains the same position and token (the model's choice: the clean run's, −1).
  patching_->setQuestion(
      a ? a->position : -1,
      a && !a->candidates.empty() && a->token != a->candidates.front().first ? a->token : -1);
  position_->setEnabled(a != nullptr);
  token_->setEnabled(a != nullptr && !a->candidates.empty());
  filling_ = false;
}

void WhyView::showAnswer() {
  fillControls();
  const bool have = answer_ != nullptr;
  csv_->setEnabled(have);
  numpy_->setEnabled(have && answer_->lens);
  if (!error_.isEmpty())
    status_->setText(error_);
  else if (!computing())
    status_->setText(QString());
  showLens();
  showContributions();
  requestAttribution();
  explainView();
}

void WhyView::showLens() {
  HeatmapWidget* hm = lensMap();
  hm->setColormap(state_->colormap());
  const WhyAnswer* a = answer_.get();
  if (!a || !a->lens) {
    lens_caption_->setText(a ? a->lens_refusal.toHtmlEscaped()
                             : tr("The logit lens appears here after a run."));
    HeatmapData empty;
    empty.title = computing() ? tr("Computing…") : tr("Nothing to show");
    hm->setData(empty);
    return;
  }
  const LogitLens& lens = *a->lens;
  const Vocabulary& out = state_->model()->vocab(lens.stack);
  const bool own_choice = a->token == a->candidates.front().first;
  const bool top_colour = colour_->currentIndex() == 1;
  const int K = lens.top_k;
  HeatmapData d;
  d.rows = lens.rows;
  d.cols = lens.positions;
  d.values.resize(size_t(d.rows) * d.cols);
  for (int r = 0; r < d.rows; ++r) {
    d.row_labels << rowNameText(lens.row_names[size_t(r)]);
    for (int i = 0; i < d.cols; ++i) {
      const int64_t cell = lens.cell(r, i);
      d.values[size_t(cell)] =
          top_colour ? lens.top_probs[size_t(cell * K)] : lens.target_probs[size_t(cell)];
      d.cell_texts << tokenLabel(out.token(lens.top_ids[size_t(cell * K)])) + '\n' +
                          QString::number(lens.top_probs[size_t(cell * K)], 'f', 2);
      QStringList top;
      for (int k = 0; k < K; ++k)
        top << QStringLiteral("%1 %2")
                   .arg(tokenLabel(out.token(lens.top_ids[size_t(cell * K + k)])))
                   .arg(num(lens.top_probs[size_t(cell * K + k)], 3));
      d.cell_notes << tr("Top %1: %2\n%3: probability %4, rank %5")
                          .arg(K)
                          .arg(top.join(QStringLiteral(" · ")))
                          .arg(tokenText(lens.targets[size_t(i)]))
                          .arg(num(lens.target_probs[size_t(cell)], 4))
                          .arg(lens.target_ranks[size_t(cell)]);
    }
  }
  for (const std::string& s : a->inputs) d.col_labels << tokenLabel(s);
  d.row_title = tr("stream read after ↓");
  d.col_title = tr("positions → · the token read there");
  d.row_noun = tr("row");
  d.col_noun = tr("position");
  d.value_name = tr("probability");
  d.value_in_tooltip = true;
  d.vmin = 0;
  d.vmax = 1;
  d.square_cells = false;
  d.highlight_col = a->position;
  d.title =
      top_colour ? tr("Each layer's most probable next token and its probability")
      : own_choice
          ? tr("Colour: probability of the model's final choice at each position · written: "
               "each layer's top token")
          : tr("Colour: probability of %1 at every position · written: each layer's top token")
                .arg(tokenText(a->token));
  hm->setData(std::move(d));

  // Where the explained token becomes the lens's top token at the explained position.
  const int pos = a->position;
  int first = -1;
  for (int r = 0; r < lens.rows; ++r)
    if (lens.target_ranks[size_t(lens.cell(r, pos))] == 1) {
      first = r;
      break;
    }
  const int64_t last = lens.cell(lens.rows - 1, pos);
  QString when = first < 0 ? tr("%1 is never the top token there (rank %2 at the last layer)")
                                 .arg(tokenText(lens.targets[size_t(pos)]))
                                 .arg(lens.target_ranks[size_t(last)])
                 : first == 0 ? tr("%1 is the top token from the embeddings on")
                                    .arg(tokenText(lens.targets[size_t(pos)]))
                              : tr("%1 becomes the top token at %2")
                                    .arg(tokenText(lens.targets[size_t(pos)]))
                                    .arg(rowNameText(lens.row_names[size_t(first)]));
  lens_caption_->setText(tr("At position %1 (after “%2”, outlined): %3; it ends with probability "
                            "%4. Hover a cell for its top %5.")
                             .arg(pos + 1)
                             .arg(tokenLabel(a->inputs[size_t(pos)]).toHtmlEscaped())
                             .arg(when.toHtmlEscaped())
                             .arg(num(lens.target_probs[size_t(last)], 3))
                             .arg(K));
}

void WhyView::showContributions() {
  const WhyAnswer* a = answer_.get();
  bar_parts_.clear();
  if (!a || !a->contributions) {
    const Model* model = state_->model();
    const bool post_norm = model && model->config().norm != NormPlacement::Pre;
    parts_caption_->setText(
        a ? tr("<b>No direct contributions for this model.</b> %1%2")
                .arg(a->contributions_refusal.toHtmlEscaped())
                .arg(post_norm && a->lens_refusal.isEmpty()
                         ? tr("<br><br>The bundled <i>reverse</i> model is pre-norm: choose it "
                              "under Model to see a logit split into its parts.")
                         : QString())
          : tr("The contributions appear here after a run."));
    bars_->setBars({}, {});
    bars_box_->setVisible(false);
    return;
  }
  bars_box_->setVisible(true);
  const Contributions& c = *a->contributions;
  QStringList labels;
  std::vector<float> values;
  for (size_t k = 0; k < c.parts.size(); ++k) {
    const LogitPart& p = c.parts[k];
    labels << QString::fromStdString(p.name) +
                  (p.kind == LogitPart::Kind::Head ? QStringLiteral(" ↗") : QString());
    values.push_back(float(p.value));
    bar_parts_.push_back(int(k));
  }
  bars_->setBars(labels, values);
  bars_->setAxisTitle(
      c.versus >= 0
          ? tr("part of logit[%1] − logit[%2]").arg(tokenText(c.token), tokenText(c.versus))
          : tr("part of logit[%1]").arg(tokenText(c.token)));
  // Room for every bar's label: the scroll area scrolls when there are many.
  bars_->setMinimumHeight(bars_->sizeHint().height());
  const QString what =
      c.versus >= 0 ? tr("logit[%1] − logit[%2]").arg(tokenText(c.token), tokenText(c.versus))
                    : tr("logit[%1]").arg(tokenText(c.token));
  parts_caption_->setText(
      tr("<b>%1 = %2</b> at position %3 = the sum of the %4 parts below, %5 (difference %6). "
         "Red adds, blue takes away; ↗ marks a head: click it to open its attention.")
          .arg(what.toHtmlEscaped())
          .arg(num(c.logit, 4))
          .arg(c.position + 1)
          .arg(c.parts.size())
          .arg(num(c.total, 4))
          .arg(num(c.total - c.logit, 2)));
}

// ---- the attribution tab ----------------------------------------------------------------------

void WhyView::fillAttentionChoice() {
  const Model* model = state_->model();
  const bool was = filling_;
  filling_ = true;
  layer_->clear();
  head_->clear();
  if (model) {
    const ModelConfig& c = model->config();
    const int layers = lensStack(c) == Side::Source ? c.n_encoder_layers : c.n_decoder_layers;
    for (int l = 0; l < layers; ++l)
      layer_->addItem(
          l == layers - 1 ? tr("layer %1 (last)").arg(l + 1) : tr("layer %1").arg(l + 1), l);
    layer_->setCurrentIndex(layers - 1);
    head_->addItem(tr("mean of heads"), -1);
    for (int h = 0; h < c.n_heads; ++h) head_->addItem(tr("head %1").arg(h + 1), h);
  }
  filling_ = was;
}

AttributionQuestion WhyView::wantedAttribution() const {
  AttributionQuestion q;
  const WhyAnswer* a = answer_.get();
  auto snap = state_->snapshot();
  if (!a || !snap || a->snapshot != snap->id || a->candidates.empty()) return q;
  q.snapshot = a->snapshot;
  q.sentence = a->question.sentence;
  q.position = a->position;
  q.token = a->token;
  q.versus = a->versus;
  q.steps = steps_->value();
  q.layer = layer_->currentData().toInt();
  q.head = head_->currentData().toInt();
  return q;
}

void WhyView::requestAttribution() {
  if (tabs_->currentIndex() != kAttributionTab || !isVisible() || attributing_) {
    showAttribution();
    return;
  }
  const AttributionQuestion q = wantedAttribution();
  Engine* engine = state_->engine();
  if (q.snapshot == 0 || (attribution_ && attribution_for_ == q) || q == declined_ ||
      engine->busy()) {
    showAttribution();  // nothing to ask yet, answered, cancelled, or asked when the engine is free
    return;
  }
  auto snap = state_->snapshot();
  const RunSpec spec = currentRunSpec(*snap, q.sentence);
  AttributionOptions o;
  o.position = q.position;
  o.token = q.token;
  o.versus = q.versus;
  o.steps = q.steps;
  o.layer = q.layer;
  o.head = q.head;
  attribution_error_.clear();
  const bool started = engine->runProgressTask(
      tr("Integrated gradients"), [=, this](const Model& model, const std::atomic<bool>& cancel,
                                            const Engine::TaskProgress& progress) {
        Inputs in;
        if (model.config().hasEncoder()) in.src = {spec.src};
        if (model.config().hasDecoder()) in.tgt = {spec.tgt};
        AttributionOptions run = o;
        run.cancel = &cancel;
        run.progress = progress;
        std::shared_ptr<const Attribution> result;
        QString error;
        try {
          result = std::make_shared<const Attribution>(attribute(model, in, run));
        } catch (const Error& e) {
          // Out of GPU memory: the engine redoes the task on the CPU (model/cpu_fallback.h).
          if (e.kind() == ErrorKind::Cancelled || ranOutOfDeviceMemory(e)) throw;
          error = messageSentence(e.what());
        }
        return std::function<void()>([this, q, result, error] {
          attributing_ = false;
          attribution_error_ = error;
          attribution_ = result;
          attribution_for_ = q;
          if (!computing()) status_->setText(error.isEmpty() ? QString() : error);
          showAttribution();
          explainView();
        });
      });
  attributing_ = started;
  if (started) status_->setText(tr("Integrated gradients…"));
  showAttribution();
}

void WhyView::showAttribution() {
  const AttributionQuestion q = wantedAttribution();
  const Attribution* r =
      attribution_ && attribution_for_ == q && q.snapshot != 0 ? attribution_.get() : nullptr;
  cancel_->setText(attributing_ ? tr("Cancel") : tr("Compute"));
  cancel_->setVisible(attributing_ || (!r && q.snapshot != 0 && q == declined_));
  const Model* model = state_->model();
  const bool masked = [&] {
    auto snap = state_->snapshot();
    if (!snap) return false;
    const MaskOptions& m = snap->masks;
    return !m.src_padding || !m.tgt_padding || !m.subsequent;
  }();
  for (QWidget* box : side_boxes_) box->setVisible(r != nullptr);
  if (!r || !model) {
    QString text;
    if (answer_ && answer_->candidates.empty())
      text = answer_->lens_refusal.toHtmlEscaped();
    else if (attributing_)
      text = tr("Computing the gradients along the path from the baseline to the input…");
    else if (!attribution_error_.isEmpty() && attribution_for_ == q)
      text = tr("<b>No attribution:</b> %1").arg(attribution_error_.toHtmlEscaped());
    else if (q.snapshot != 0 && q == declined_)
      text = tr("Cancelled. Press Compute (or change a setting) to compute it again.");
    else
      text = tr("The attribution appears here after a run.");
    attribution_caption_->setText(text);
    return;
  }
  const QString f = r->versus >= 0
                        ? tr("logit[%1] − logit[%2]").arg(tokenText(r->token), tokenText(r->versus))
                        : tr("logit[%1]").arg(tokenText(r->token));
  const bool gap_known = std::isfinite(r->gap_relative);
  QString completeness = completenessText(*r);
  if (!gap_known || r->gap_relative > 0.01)
    completeness =
        tr("<span style='color:#c0392b'><b>⚠ %1</b> — over 1 %: too few steps (N = %2) to "
           "follow the path (the gradient changes quickly along it); raise the steps until the "
           "gap is small before trusting the bars.</span>")
            .arg(completeness.toHtmlEscaped())
            .arg(r->steps);
  else
    completeness = completeness.toHtmlEscaped() + tr(" ✓");
  attribution_caption_->setText(
      tr("<b>f = %1 = %2</b> at position %3 (after “%4”).<br>%5%6")
          .arg(f.toHtmlEscaped())
          .arg(num(r->f_input, 4))
          .arg(r->position + 1)
          .arg(answer_ ? tokenLabel(answer_->inputs[size_t(r->position)]).toHtmlEscaped()
                       : QString())
          .arg(completeness)
          .arg(masked ? tr("<br><i>Computed with the usual masks: the masks switched off in "
                           "this run do not apply here.</i>")
                      : QString()));

  // One box per side: its title (ρ) and four charts whose rows are the same tokens.
  while (side_boxes_.size() < r->sides.size()) {
    auto* box = new QWidget(attribution_chart_);
    auto* v = new QVBoxLayout(box);
    v->setContentsMargins(0, 0, 0, 8);
    auto* title = new QLabel(box);
    title->setTextFormat(Qt::RichText);
    title->setWordWrap(true);
    v->addWidget(title);
    auto* row = new QHBoxLayout;
    row->setSpacing(2);
    std::vector<BarChart*> bars;
    for (int k = 0; k < 4; ++k) {
      auto* chart = new BarChart(box);
      chart->setSigned(k < 2);
      chart->setAxisTitleAbove(true);  // a long sentence's list scrolls: the names stay on top
      row->addWidget(chart, k == 0 ? 3 : 2);
      bars.push_back(chart);
    }
    bars[0]->setToolTip(tr("Integrated gradients: red pushes f up, blue pulls it down"));
    bars[1]->setToolTip(tr("Saliency Σ gradient × input at the input itself"));
    bars[2]->setToolTip(tr("The chosen head's attention from the explained position"));
    bars[3]->setToolTip(tr("Attention rollout's row at the explained position"));
    v->addLayout(row);
    sides_layout_->addWidget(box);
    side_boxes_.push_back(box);
    side_titles_.push_back(title);
    side_bars_.push_back(bars);
  }
  for (size_t s = 0; s < side_boxes_.size(); ++s) side_boxes_[s]->setVisible(s < r->sides.size());
  for (size_t s = 0; s < r->sides.size(); ++s) {
    const TokenAttributions& t = r->sides[s];
    const int n = t.compared;  // the tokens the position can see (the rest are 0 by the mask)
    QStringList labels, blank;
    for (int i = 0; i < n; ++i) {
      labels << QStringLiteral("%1 %2").arg(i + 1).arg(tokenLabel(t.tokens[size_t(i)]));
      blank << QString();
    }
    auto first = [n](const std::vector<float>& v) {
      return std::vector<float>(v.begin(), v.begin() + n);
    };
    const std::vector<BarChart*>& bars = side_bars_[s];
    bars[0]->setBars(labels, first(t.integrated));
    bars[1]->setBars(blank, first(t.saliency));
    bars[2]->setBars(blank, first(t.attention));
    bars[3]->setBars(blank, first(t.rollout));
    bars[0]->setAxisTitle(tr("integrated gradients"));
    bars[1]->setAxisTitle(tr("saliency Σ g·x"));
    bars[2]->setAxisTitle(tr("attention"));
    bars[3]->setAxisTitle(tr("rollout"));
    for (BarChart* b : bars) b->setMinimumHeight(bars[0]->sizeHint().height());
    auto rho = [](double v) {
      return std::isfinite(v) ? QString::number(v, 'f', 2) : QObject::tr("n/a");
    };
    const bool two = r->sides.size() > 1;
    side_titles_[s]->setText(
        tr("<b>%1</b>%2 · Spearman's ρ of |integrated gradients| with the attention "
           "<b>%3</b>, with rollout <b>%4</b><br><span style='color:gray'>attention: %5; "
           "rollout: %6</span>")
            .arg(t.side == Side::Source ? tr("Source tokens")
                 : two                  ? tr("Target tokens")
                                        : tr("Tokens"))
            .arg(n < int(t.ids.size())
                     ? tr(" 1–%1 (those position %2 sees)").arg(n).arg(r->position + 1)
                     : QString())
            .arg(rho(t.spearman_attention), rho(t.spearman_rollout))
            .arg(QString::fromStdString(t.attention_name).toHtmlEscaped(),
                 QString::fromStdString(t.rollout_name).toHtmlEscaped()));
  }
}

void WhyView::explainView() {
  if (tabs_->currentWidget() == patching_) {
    explanation_->setHtml(patching_->explanation());
    return;
  }
  const WhyAnswer* a = answer_.get();
  const Model* model = state_->model();
  if (!a || !model) {
    explanation_->setHtml(
        tr("<p style='margin:0'><b>Why this token?</b> After a run this view shows why the model "
           "chose its next token: the <b>logit lens</b> (what every layer would predict) and the "
           "<b>direct contributions</b> (the token's logit split into the parts that add up to "
           "it).</p>"));
    return;
  }
  const ModelConfig& c = model->config();
  if (tabs_->currentIndex() == kAttributionTab) {
    explainAttribution();
    return;
  }
  if (tabs_->currentIndex() == 0) {
    const QString reading = a->lens ? QString::fromStdString(a->lens->reading).toHtmlEscaped()
                                    : a->lens_refusal.toHtmlEscaped();
    explanation_->setHtml(
        tr("<p style='margin:0'><b>The logit lens</b> reads the residual stream of every layer as "
           "if the model stopped there: %1 = softmax(%2) for each row l and position i. Rows: "
           "%3.</p><p style='margin:4px 0 0 0'>The last row is the model's own prediction; the "
           "first row whose top token matches it shows the layer that settles the choice. Colour: "
           "the probability of the explained token (or of each cell's top token); written in each "
           "cell: that row's most probable token and its probability.</p>")
            .arg(code(tr("p<sub>l,i</sub>")))
            .arg(code(c.final_norm ? tr("N(x<sub>l,i</sub>) W<sub>U</sub>ᵀ + b")
                                   : tr("x<sub>l,i</sub> W<sub>U</sub>ᵀ + b")))
            .arg(reading));
    return;
  }
  if (!a->contributions) {
    explanation_->setHtml(
        tr("<p style='margin:0'><b>Direct contributions</b> split a logit into the parts of the "
           "residual stream that add up to it. %1</p>")
            .arg(a->contributions_refusal.toHtmlEscaped()));
    return;
  }
  const Contributions& k = *a->contributions;
  const QString logit =
      k.versus >= 0
          ? tr("logit[%1] − logit[%2]").arg(tokenText(k.token), tokenText(k.versus)).toHtmlEscaped()
          : tr("logit[%1]").arg(tokenText(k.token)).toHtmlEscaped();
  explanation_->setHtml(
      tr("<p style='margin:0'><b>Direct contributions.</b> The logit is %1 with the final norm "
         "%2. Freezing its scale s = 1/σ at this input (s = %3) makes the logit linear in the "
         "stream, and the stream of a pre-norm model is a sum: %4. So each piece adds its own "
         "part %5 (P centres, γ is the norm's weight), and %6 = %7 = Σ parts = %8 (gap %9).</p>"
         "<p style='margin:4px 0 0 0'>A head's part is its output through its slice of "
         "W<sub>O</sub>; %10 %11</p>")
          .arg(code(tr("u · N(x) + b")))
          .arg(code(c.norm_kind == NormKind::RmsNorm ? tr("N(x) = γ ⊙ x · s")
                                                     : tr("N(x) = γ ⊙ (x − mean x) · s + β")))
          .arg(num(k.scale, 4))
          .arg(code(tr("x = embeddings + Σ<sub>layers</sub> (Σ<sub>heads</sub> head·W<sub>O</sub> "
                       "+ feed-forward + biases)")))
          .arg(code(tr("(P(u ⊙ γ) · s) · piece")))
          .arg(logit)
          .arg(num(k.logit, 4))
          .arg(num(k.total, 4))
          .arg(num(k.total - k.logit, 2))
          .arg(c.hasCross() ? tr("the encoder reaches the decoder's stream only through the "
                                 "cross-attention heads, so their parts carry the source's "
                                 "share.")
                            : QString())
          .arg(tr("Direct means the path straight to the logits: a head whose output later heads "
                  "read shows its effect in theirs, not here (activation patching measures "
                  "that).")));
}

void WhyView::explainAttribution() {
  const Attribution* r =
      attribution_ && attribution_for_ == wantedAttribution() ? attribution_.get() : nullptr;
  const QString definitions =
      tr("<p style='margin:0'><b>Gradient attribution</b> asks how much each input token moves "
         "f, the explained logit. The input of token i is its embedding row e<sub>i</sub> as the "
         "model adds it (positions and segments are held fixed: they are the same for every "
         "sentence). <b>Saliency</b> = %1 at the input: positive pushes f up. <b>Integrated "
         "gradients</b> walk from a baseline e′ to e in N steps: %2.</p>")
          .arg(code(tr("Σ<sub>d</sub> ∂f/∂e<sub>i,d</sub> · e<sub>i,d</sub>")))
          .arg(code(tr("IG<sub>i</sub> = Σ<sub>d</sub> e<sub>i,d</sub> · (1/N) Σ<sub>k</sub> "
                       "∂f/∂e<sub>i,d</sub>(α<sub>k</sub> e), α<sub>k</sub> = (k + ½)/N")));
  if (!r) {
    explanation_->setHtml(definitions);
    return;
  }
  const QString f = r->versus >= 0
                        ? tr("logit[%1] − logit[%2]").arg(tokenText(r->token), tokenText(r->versus))
                        : tr("logit[%1]").arg(tokenText(r->token));
  explanation_->setHtml(
      definitions +
      tr("<p style='margin:4px 0 0 0'>Here f = %1 at position %2 = %3; the baseline: %4, where f "
         "= %5; N = %6 (%7). <b>Completeness</b>: the attributions of every token add up to f(e) − "
         "f(e′): Σ IG = %8 against %9, a gap of %10 %. A gap over 1 % means too few steps.</p>"
         "<p style='margin:4px 0 0 0'>Beside them: where the chosen attention and attention "
         "rollout look from the position. Spearman's ρ compares the ranks of |IG| with each: near "
         "1, attention and attribution tell the same story; near 0 or below, a token can be "
         "looked at without moving the output, or move it without being looked at. Each chart "
         "has its own scale: read its axis before comparing lengths.</p>")
          .arg(f.toHtmlEscaped())
          .arg(r->position + 1)
          .arg(num(r->f_input, 4))
          .arg(QString::fromStdString(r->baseline).toHtmlEscaped())
          .arg(num(r->f_baseline, 4))
          .arg(r->steps)
          .arg(QString::fromStdString(r->rule).toHtmlEscaped())
          .arg(num(r->ig_total, 4))
          .arg(num(r->f_input - r->f_baseline, 4))
          .arg(std::isfinite(r->gap_relative) ? QString::number(100 * r->gap_relative, 'f', 2)
                                              : tr("∞")));
}

bool WhyView::exportCsv(const QString& path, QString* error) const {
  const WhyAnswer* a = answer_.get();
  std::string csv;
  if (tabs_->currentWidget() == patching_ && patching_->result())
    csv = patchingCsv(*patching_->result());
  else if (a && tabs_->currentIndex() == 0 && a->lens)
    csv = lensCsv(*a->lens, a->inputs, state_->model()->vocab(a->lens->stack));
  else if (a && tabs_->currentIndex() == 1 && a->contributions)
    csv = contributionsCsv(*a->contributions);
  else if (tabs_->currentIndex() == kAttributionTab && attribution_ &&
           attribution_for_ == wantedAttribution())
    csv = attributionCsv(*attribution_);
  if (csv.empty()) {
    if (error) *error = tr("Nothing to export in this tab.");
    return false;
  }
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
      f.write(csv.data(), qint64(csv.size())) != qint64(csv.size())) {
    if (error) *error = tr("Could not write %1: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

bool WhyView::exportNumpy(const QString& dir, QString* error) const {
  if (tabs_->currentWidget() == patching_) return patching_->exportNumpy(dir, error);
  const WhyAnswer* a = answer_.get();
  if (tabs_->currentIndex() == kAttributionTab) {
    if (!a || !attribution_ || !(attribution_for_ == wantedAttribution())) {
      if (error) *error = tr("Nothing to export: the attribution has not been computed.");
      return false;
    }
    const Vocabulary& out = state_->model()->vocab(lensStack(state_->model()->config()));
    std::vector<std::string> names{out.token(attribution_->token)};
    if (attribution_->versus >= 0) names.push_back(out.token(attribution_->versus));
    try {
      dumpAttribution(*attribution_, names, dir.toStdString());
    } catch (const Error& e) {
      if (error) *error = QString::fromStdString(e.what());
      return false;
    }
    return true;
  }
  if (!a || !a->lens) {
    if (error) *error = tr("Nothing to export: the lens has not been computed.");
    return false;
  }
  try {
    dumpLens(*a->lens, a->inputs, state_->model()->vocab(a->lens->stack),
             a->contributions ? &*a->contributions : nullptr, dir.toStdString());
  } catch (const Error& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

}  // namespace attnviz::gui

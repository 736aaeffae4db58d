#include "views/decoding/decoding_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <algorithm>

#include "session/attention_data.h"
#include "views/decoding/translation_panel.h"
#include "widgets/bar_chart.h"
#include "widgets/token_label.h"

namespace attnviz::gui {

namespace {

bool encoderOnly(const Model* m) {
  return m && !m->config().hasDecoder();
}

}  // namespace

DecodingView::DecodingView(AppState* state, QWidget* parent)
    : View(state, tr("What am I looking at?"), parent) {
  steps_model_ = new DecodingStepsModel(this);
  topk_model_ = new TopKModel(this);
  content_ = new QWidget(this);
  content_->setBackgroundRole(QPalette::Base);
  content_->setAutoFillBackground(true);
  auto* cl = new QVBoxLayout(content_);
  cl->setContentsMargins(4, 4, 4, 4);
  cl->setSpacing(4);

  // Top: the sentences, as a person reads them (a few lines at most; long ones scroll).
  translation_ = new TranslationPanel(content_);
  translation_scroll_ = new QScrollArea(content_);
  translation_scroll_->setWidget(translation_);
  translation_scroll_->setWidgetResizable(true);
  translation_scroll_->setFrameShape(QFrame::NoFrame);
  translation_scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  translation_scroll_->setMaximumHeight(translation_->fontMetrics().height() * 6 + 24);
  translation_scroll_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Maximum);
  cl->addWidget(translation_scroll_);
  status_ = new QLabel(content_);
  status_->setForegroundRole(QPalette::PlaceholderText);
  // One line, not word-wrapped: a height-for-width label would make the whole content demand its
  // preferred height and squeeze the explanation above it.
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  cl->addWidget(status_);

  // Left: the steps and the stepping buttons.
  auto* left = new QWidget(content_);
  auto* ll = new QVBoxLayout(left);
  ll->setContentsMargins(0, 0, 0, 0);
  steps_table_ = new QTableView(left);
  steps_table_->setModel(steps_model_);
  steps_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  steps_table_->setSelectionMode(QAbstractItemView::SingleSelection);
  steps_table_->verticalHeader()->hide();
  steps_table_->verticalHeader()->setDefaultSectionSize(steps_table_->fontMetrics().height() + 6);
  QHeaderView* sh = steps_table_->horizontalHeader();
  sh->setSectionResizeMode(QHeaderView::ResizeToContents);
  sh->setSectionResizeMode(DecodingStepsModel::Input, QHeaderView::Stretch);
  sh->setSectionResizeMode(DecodingStepsModel::Chosen, QHeaderView::Stretch);
  sh->setSectionResizeMode(DecodingStepsModel::Probability, QHeaderView::Fixed);
  sh->resizeSection(DecodingStepsModel::Probability,
                    steps_table_->fontMetrics().horizontalAdvance(QStringLiteral("1.0e-08")) + 16);
  steps_table_->setToolTip(
      tr("Select a step to see its next-token probabilities and attention rows"));
  ll->addWidget(steps_table_, 1);
  step_buttons_ = new QWidget(left);
  auto* buttons = new QGridLayout(step_buttons_);
  buttons->setContentsMargins(0, 0, 0, 0);
  back_ = new QPushButton(tr("◀ Step back"), step_buttons_);
  forward_ = new QPushButton(tr("Step forward ▶"), step_buttons_);
  to_end_ = new QPushButton(tr("Decode to the end"), step_buttons_);
  reset_ = new QPushButton(tr("Reset"), step_buttons_);
  back_->setToolTip(tr("Remove the newest token (←)"));
  forward_->setToolTip(tr("Append the most probable next token (→)"));
  to_end_->setToolTip(tr("Keep appending the argmax until the end token (End)"));
  reset_->setToolTip(tr("Go back to the target prefix (Home)"));
  buttons->addWidget(back_, 0, 0);
  buttons->addWidget(forward_, 0, 1);
  buttons->addWidget(reset_, 1, 0);
  buttons->addWidget(to_end_, 1, 1);
  ll->addWidget(step_buttons_);
  Engine* engine = state_->engine();
  connect(back_, &QPushButton::clicked, engine, [engine] { engine->stepBack(); });
  connect(forward_, &QPushButton::clicked, engine, [engine] { engine->stepForward(); });
  connect(to_end_, &QPushButton::clicked, engine, [engine] { engine->decodeToEnd(); });
  connect(reset_, &QPushButton::clicked, engine, [engine] { engine->reset(); });

  // Middle: top-k as bars and a table; a classifier's classes.
  auto* middle = new QWidget(content_);
  auto* ml = new QVBoxLayout(middle);
  ml->setContentsMargins(0, 0, 0, 0);
  auto* cap_row = new QHBoxLayout;
  topk_caption_ = new QLabel(middle);
  topk_caption_->setWordWrap(true);
  cap_row->addWidget(topk_caption_, 1);
  log_scale_ = new QCheckBox(tr("Log scale"), middle);
  log_scale_->setToolTip(
      tr("A logarithmic probability axis: the alternatives of a confident model stay visible"));
  cap_row->addWidget(log_scale_, 0, Qt::AlignTop);
  ml->addLayout(cap_row);
  bars_ = new BarChart(middle);
  ml->addWidget(bars_, 1);
  topk_table_ = new QTableView(middle);
  topk_table_->setModel(topk_model_);
  topk_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  topk_table_->setSelectionMode(QAbstractItemView::SingleSelection);
  topk_table_->verticalHeader()->hide();
  topk_table_->verticalHeader()->setDefaultSectionSize(topk_table_->fontMetrics().height() + 6);
  topk_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  // The bars are the list (click, double-click, ↑ ↓ Enter); the table behind them holds the choice
  // (and is what tests and the keyboard drive), never shown: it would take the bars' room.
  topk_table_->hide();
  pick_row_ = new QWidget(middle);
  auto* pick = new QHBoxLayout(pick_row_);
  pick->setContentsMargins(0, 0, 0, 0);
  use_token_ = new QPushButton(tr("Use this token"), pick_row_);
  use_token_->setToolTip(
      tr("Branch: keep the steps before this one and continue with the selected "
         "token instead (double-click a row or a bar, or Enter)"));
  continue_ = new QCheckBox(tr("then decode to the end"), pick_row_);
  continue_->setChecked(true);
  why_ = new QPushButton(tr("Why this token?"), pick_row_);
  why_->setToolTip(
      tr("Explain the selected token at this step: what every layer predicted (the logit lens) "
         "and what every head and block adds to its logit (right-click a bar for the same)"));
  pick->addWidget(use_token_);
  pick->addWidget(continue_);
  pick->addStretch(1);
  pick->addWidget(why_);
  ml->addWidget(pick_row_);
  classes_caption_ = new QLabel(tr("<b>Class probabilities</b>"), middle);
  classes_ = new BarChart(middle);
  classes_->setMinimumHeight(120);
  ml->addWidget(classes_caption_);
  ml->addWidget(classes_, 2);
  connect(use_token_, &QPushButton::clicked, this, &DecodingView::useSelectedToken);
  connect(why_, &QPushButton::clicked, this, &DecodingView::explainSelectedToken);
  // Right-click a candidate: why this one?
  bars_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(bars_, &QWidget::customContextMenuRequested, this, [this](const QPoint& at) {
    const int i = bars_->indexAt(at);
    if (i < 0) return;
    topk_table_->selectRow(i);
    const QString token = topk_model_->data(topk_model_->index(i, TopKModel::Token)).toString();
    QMenu menu(this);
    menu.addAction(tr("Why “%1”?").arg(token), this, &DecodingView::explainSelectedToken);
    if (!encoderOnly(state_->model()))
      menu.addAction(tr("Use this token"), this, &DecodingView::useSelectedToken);
    menu.exec(bars_->mapToGlobal(at));
  });
  connect(topk_table_, &QTableView::activated, this, [this] { useSelectedToken(); });
  connect(bars_, &BarChart::barClicked, this, [this](int i) { topk_table_->selectRow(i); });
  connect(topk_table_->selectionModel(), &QItemSelectionModel::currentRowChanged, bars_,
          [this](const QModelIndex& i) { bars_->setSelected(i.row()); });
  connect(bars_, &BarChart::barActivated, this, [this](int i) {
    topk_table_->selectRow(i);
    useSelectedToken();
  });
  connect(log_scale_, &QCheckBox::toggled, this, [this](bool on) {
    bars_->setLogScale(on);
    classes_->setLogScale(on);
  });

  // Right: the step's new attention rows for every layer and head.
  rows_box_ = new QWidget(content_);
  auto* rl = new QVBoxLayout(rows_box_);
  rl->setContentsMargins(0, 0, 0, 0);
  auto* rh = new QHBoxLayout;
  rows_caption_ = new QLabel(rows_box_);
  rows_caption_->setWordWrap(true);
  rh->addWidget(rows_caption_, 1);
  rows_kind_ = new QComboBox(rows_box_);
  rows_kind_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  rh->addWidget(rows_kind_, 0, Qt::AlignTop);
  rl->addLayout(rh);
  rows_map_ = new HeatmapWidget(rows_box_);
  rows_map_->setMaxFitCell(40);
  rl->addWidget(rows_map_, 1);
  connect(rows_kind_, &QComboBox::currentIndexChanged, this, [this] { showStep(); });
  connect(rows_map_, &HeatmapWidget::cellClicked, this, [this](int row, int) {
    const int heads = state_->headCount();
    if (heads <= 0) return;
    AttentionSelection s = state_->selection();
    s.kind = static_cast<AttentionKind>(rows_kind_->currentData().toInt());
    s.layer = row / heads;
    s.head = row % heads;
    state_->setSelection(s);
  });

  auto* split = new QSplitter(Qt::Horizontal, content_);
  split->addWidget(left);
  split->addWidget(middle);
  split->addWidget(rows_box_);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 2);
  split->setStretchFactor(2, 3);
  cl->addWidget(split, 1);
  layout_->addWidget(content_, 1);

  connect(steps_table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] {
    if (!updating_) showStep();
  });
  connect(engine, &Engine::busyChanged, this, [this] { markDirty(); });
}

QString DecodingView::title() const {
  return encoderOnly(state_->model()) ? tr("Outputs") : tr("Decoding");
}

QStringList DecodingView::figureTitle() const {
  auto snap = state_->snapshot();
  QStringList lines{title()};
  if (snap && !snap->steps.empty()) {
    const int step = std::clamp(currentStep(), 0, int(snap->steps.size()) - 1);
    const StepInfo& info = snap->steps[size_t(step)];
    lines[0] = encoderOnly(state_->model())
                   ? tr("Outputs · position %1 (“%2”)").arg(step + 1).arg(info.input)
                   : tr("Decoding · step %1 of %2 · after “%3”")
                         .arg(step + 1)
                         .arg(snap->steps.size())
                         .arg(info.input);
  }
  QString sentence = sentenceLine();
  if (frame_step_ >= 0 && snap && snap->trace && !snap->batch) {
    // A frame's subtitle has the words written so far, not the whole translation.
    const Trace& t = *snap->trace;
    auto join = [](const std::vector<std::string>& tokens, size_t n) {
      QStringList out;
      for (size_t k = 0; k < std::min(n, tokens.size()); ++k)
        out << QString::fromStdString(tokens[k]);
      return out.join(QLatin1Char(' '));
    };
    const QString written =
        t.tgt_tokens.empty() ? QString() : join(t.tgt_tokens[0], size_t(frame_step_) + 2);
    sentence = t.src_tokens.empty() || t.src_tokens[0].empty()
                   ? QStringLiteral("“%1”").arg(written)
                   : QStringLiteral("“%1” → “%2”").arg(join(t.src_tokens[0], SIZE_MAX), written);
  }
  if (!sentence.isEmpty()) lines << sentence;
  return lines;
}

int DecodingView::currentStep() const {
  const QModelIndex i = steps_table_->currentIndex();
  if (i.isValid()) return i.row();
  return steps_model_->rowCount() - 1;
}

void DecodingView::selectStep(int step) {
  if (step < 0 || step >= steps_model_->rowCount()) return;
  steps_table_->setCurrentIndex(steps_model_->index(step, 0));
  steps_table_->scrollTo(steps_model_->index(step, 0));
}

void DecodingView::setFrameStep(int step) {
  const bool leaving = frame_step_ >= 0 && step < 0;
  frame_step_ = step;
  // A frame shows the decode as it was at that step: the steps after it, the words they wrote and
  // how the decode ended are not known yet.
  for (int r = 0; r < steps_model_->rowCount(); ++r)
    steps_table_->setRowHidden(r, step >= 0 && r > step);
  if (step >= 0) selectStep(step);
  showStep();
  auto snap = state_->snapshot();
  const bool decode =
      snap && snap->trace && !snap->batch && !snap->steps.empty() && !encoderOnly(state_->model());
  if (step >= 0 && decode) {
    const StepInfo& info = snap->steps[size_t(std::min(step, int(snap->steps.size()) - 1))];
    // The last frame ends as the decode did.
    status_->setText(step < int(snap->steps.size()) - 1
                         ? tr("Step %1 of %2: after “%3” the model chooses “%4” (p = %5).")
                               .arg(step + 1)
                               .arg(snap->steps.size())
                               .arg(info.input, info.chosen)
                               .arg(info.chosen_prob, 0, 'f', 3)
                         : decodeStatus(*snap));
  } else if (leaving) {
    refreshNow();  // the status of the whole decode again
  }
}

void DecodingView::useSelectedToken() {
  if (encoderOnly(state_->model())) return;
  const QModelIndex i = topk_table_->currentIndex();
  if (!i.isValid()) return;
  const int token = topk_model_->data(i, TopKModel::TokenIdRole).toInt();
  state_->engine()->choose(currentStep(), token, continue_->isChecked());
}

void DecodingView::explainSelectedToken() {
  const QModelIndex i = topk_table_->currentIndex();
  const int token = i.isValid() ? topk_model_->data(i, TopKModel::TokenIdRole).toInt() : -1;
  state_->askWhy(currentStep(), token);
  emit openView(QStringLiteral("why"));
}

void DecodingView::refresh() {
  auto snap = state_->snapshot();
  Engine* engine = state_->engine();
  const Model* model = state_->model();
  const bool enc_only = encoderOnly(model);
  const bool decode = snap && snap->trace && !snap->batch;
  // The rows the right-hand side can show: the kinds the model has, the cross-attention first.
  if (model) {
    std::vector<AttentionKind> kinds = modelKinds(model->config());
    std::reverse(kinds.begin(), kinds.end());
    QList<int> want;
    for (AttentionKind k : kinds) want << int(k);
    QList<int> have;
    for (int i = 0; i < rows_kind_->count(); ++i) have << rows_kind_->itemData(i).toInt();
    if (want != have) {
      const QSignalBlocker b(rows_kind_);
      rows_kind_->clear();
      for (AttentionKind k : kinds)
        rows_kind_->addItem(k == AttentionKind::Cross         ? tr("Cross-attention rows")
                            : k == AttentionKind::DecoderSelf ? tr("Self-attention rows")
                                                              : tr("Encoder self-attention rows"),
                            int(k));
    }
  }
  // What applies to this architecture: stepping and branching need a decoder; a classifier
  // without a token head has no per-position predictions.
  const bool token_head = model && model->config().tokenHead() != TokenHead::None;
  const bool class_head = model && model->config().classHead() != ClassHead::None;
  steps_model_->setMode(enc_only ? DecodingStepsModel::Mode::Positions
                                 : DecodingStepsModel::Mode::Decode);
  topk_model_->setMode(enc_only ? DecodingStepsModel::Mode::Positions
                                : DecodingStepsModel::Mode::Decode);
  step_buttons_->setVisible(!enc_only);
  use_token_->setVisible(!enc_only);
  continue_->setVisible(!enc_only);
  why_->setVisible(token_head);
  steps_table_->parentWidget()->setVisible(!enc_only || token_head);
  bars_->setVisible(!enc_only || token_head);
  log_scale_->setVisible(!enc_only || token_head || class_head);
  topk_caption_->setVisible(!enc_only || token_head);
  classes_->setVisible(enc_only && class_head);
  classes_caption_->setVisible(enc_only && class_head);
  rows_box_->setVisible(!enc_only || token_head);
  back_->setEnabled(engine->canStepBack());
  forward_->setEnabled(engine->canStepForward());
  to_end_->setEnabled(engine->canStepForward());
  reset_->setEnabled(decode && !engine->busy());
  use_token_->setEnabled(decode && !engine->busy());
  why_->setEnabled(decode);
  updating_ = true;
  steps_model_->setSteps(decode ? snap->steps : std::vector<StepInfo>{});
  updating_ = false;
  if (!decode) {
    status_->setText(snap && snap->batch
                         ? tr("Decoding works on one sentence. Batch mode is on (Masks view): "
                              "press Run to go back to one sentence.")
                         : tr("Press Run to see the outputs."));
    translation_->setContent(snap.get(), model ? &model->config() : nullptr, state_->selection());
    classes_->setBars({}, {});
    showStep();
    explanation_->setHtml(tr("The model's outputs appear here after a run."));
    return;
  }
  // A new snapshot selects the newest step; otherwise the user's choice of step stays.
  if (snap->id != shown_snapshot_ || !steps_table_->currentIndex().isValid()) {
    shown_snapshot_ = snap->id;
    updating_ = true;
    selectStep(int(snap->steps.size()) - 1);
    updating_ = false;
  }
  showStep();

  if (enc_only) {
    std::vector<float> probs(snap->class_probs.begin(), snap->class_probs.end());
    int best = -1;
    for (size_t k = 0; k < probs.size(); ++k)
      if (best < 0 || probs[k] > probs[size_t(best)]) best = int(k);
    classes_->setBars(snap->class_labels, probs, best);
    if (token_head)
      status_->setText(
          tr("Masked-LM predictions at every position: select a position on the left "
             "to see its most probable tokens."));
    else if (class_head)
      status_->setText(tr("The classifier's answer: “%1” (p = %2).")
                           .arg(snap->class_labels.value(best))
                           .arg(best >= 0 ? probs[size_t(best)] : 0.0f, 0, 'f', 3));
    else
      status_->setText(
          tr("This model outputs hidden states only: there is no token or class "
             "to predict. The attention views show what it computes."));
  } else {
    status_->setText(decodeStatus(*snap));
  }
  explain(*snap);
}

QString DecodingView::decodeStatus(const Snapshot& snap) const {
  switch (snap.stop) {
    case DecodeStop::EndToken:
      return tr("Finished: the end token was chosen.");
    case DecodeStop::NewTokens:
      return tr("Stopped after %n new tokens, the limit of one run.", nullptr, snap.max_new_tokens);
    case DecodeStop::ModelPositions:
      return tr("Stopped: the text fills the model's %n positions.", nullptr, snap.max_positions);
    case DecodeStop::NotYet:
      break;
  }
  if (snap.finished) return tr("Finished.");
  return tr("Next: “%1”, p = %2. Step forward (→) to take it, or pick another token.")
      .arg(snap.steps.back().argmax)
      .arg(snap.steps.back().argmax_prob, 0, 'f', 3);
}

void DecodingView::explain(const Snapshot& snap) {
  const auto& c = state_->model()->config();
  const Trace& t = *snap.trace;
  if (!c.hasDecoder()) {
    explanation_->setHtml(
        tr("<p style='margin:0'><b>An encoder-only model</b> reads the whole input at once; there "
           "is nothing to decode. %1%2%3</p>")
            .arg(c.tokenHead() != TokenHead::None
                     ? tr("Its masked-LM head turns every position's output vector into "
                          "probabilities over the vocabulary %1: select a position to see its top "
                          "predictions (put [MASK]-like tokens in the input to ask for them). ")
                           .arg(shapeString({1, t.src_len, (long long)c.src_vocab.size()}))
                     : QString())
            .arg(c.classHead() != ClassHead::None
                     ? tr("Its classifier pools the positions (%1) into one vector [1, d_model] = "
                          "%2 and gives probabilities over %3 classes. ")
                           .arg(c.classHead() == ClassHead::MeanPool ? tr("their mean")
                                                                     : tr("the first position"))
                           .arg(shapeString({1, c.d_model}))
                           .arg(c.n_classes)
                     : QString())
            .arg(c.tokenHead() == TokenHead::None && c.classHead() == ClassHead::None
                     ? tr("This one has no output head: its result is the hidden states "
                          "[1, len, d_model] = %1.")
                           .arg(shapeString({1, t.src_len, c.d_model}))
                     : QString()));
    return;
  }
  const int pos = std::max(0, int(snap.steps.size()) - 1);
  explanation_->setHtml(
      tr("<p style='margin:0'><b>Greedy decoding</b>: %1each step feeds the newest token at "
         "position t and computes only that position's query row, attending to the keys and "
         "values cached from earlier steps. The output projection and softmax give the next-token "
         "probabilities %2; greedy decoding appends the argmax, and you may pick another token to "
         "branch.</p>"
         "<p style='margin:4px 0 0 0'>Shapes at position %8 (t = %3 in the formulas, which "
         "count from 0 as PyTorch does): the new self-attention row is "
         "[batch, heads, 1, t + 1] = %4%5, for each of %6 decoder layers; the logits are "
         "[1, vocab] = %7.</p>")
          .arg(c.hasCross() ? tr("the encoder runs once; then ")
                            : tr("the prompt runs in one pass; then "))
          .arg(code(c.hasCross() ? tr("p(y<sub>t+1</sub> | y<sub>≤t</sub>, x) = "
                                      "softmax(h<sub>t</sub>W<sub>out</sub>ᵀ)")
                                 : tr("p(y<sub>t+1</sub> | y<sub>≤t</sub>) = "
                                      "softmax(h<sub>t</sub>W<sub>out</sub>ᵀ)")))
          .arg(pos)
          .arg(shapeString({1, c.n_heads, 1, pos + 1}))
          .arg(c.hasCross() ? tr(", the new cross-attention row [batch, heads, 1, len_src] = %1")
                                  .arg(shapeString({1, c.n_heads, 1, std::max(t.src_len, 0)}))
                            : QString())
          .arg(c.n_decoder_layers)
          .arg(shapeString({1, (long long)c.tgt_vocab.size()}))
          .arg(pos + 1));
}

void DecodingView::showStep() {
  auto snap = state_->snapshot();
  const Model* model = state_->model();
  const bool decode = snap && snap->trace && !snap->batch && !snap->steps.empty();
  const int step = decode ? std::clamp(currentStep(), 0, int(snap->steps.size()) - 1) : -1;
  translation_->setContent(snap.get(), model ? &model->config() : nullptr, state_->selection(),
                           frame_step_ >= 0 ? step : -1);
  if (!decode) {
    topk_model_->setStep(nullptr);
    bars_->setBars({}, {});
    topk_caption_->setText(QString());
    rows_caption_->setText(QString());
    HeatmapData empty;
    empty.title = tr("No steps to show");
    rows_map_->setData(empty);
    return;
  }
  const StepInfo& info = snap->steps[size_t(step)];
  topk_model_->setStep(&info);
  if (!info.topk.empty()) topk_table_->selectRow(0);
  const bool enc_only = encoderOnly(model);
  topk_caption_->setText((enc_only ? tr("<b>Masked-LM predictions at position %1</b> (input “%2”)")
                                   : tr("<b>Next-token probabilities after position %1</b> (input "
                                        "“%2”)"))
                             .arg(step + 1)
                             .arg(info.input.toHtmlEscaped()));
  std::vector<float> values;
  int marked = -1;
  for (size_t k = 0; k < info.topk.size(); ++k) {
    values.push_back(info.topk[k].second);
    if (info.topk[k].first == info.chosen_id) marked = int(k);
  }
  bars_->setBars(info.topk_tokens, values, marked);

  // The step's attention row for every layer and head.
  const Trace& t = *snap->trace;
  const AttentionKind kind = rows_kind_->count()
                                 ? static_cast<AttentionKind>(rows_kind_->currentData().toInt())
                                 : AttentionKind::Cross;
  const bool cross = kind != AttentionKind::DecoderSelf;  // keys: the source
  const AttentionBlock* first = t.block(kind, 0);
  HeatmapData d;
  d.value_name = tr("probability");
  if (first && step < first->q_len) {
    const int L = t.layers(kind), H = first->heads;
    // Self-attention sees keys up to this position (all of them with the look-ahead mask off).
    const int K = cross || !snap->masks.subsequent ? first->k_len : step + 1;
    d.rows = L * H;
    d.cols = K;
    d.values.resize(size_t(d.rows) * K);
    d.masked.resize(size_t(d.rows) * K);
    d.scores.resize(size_t(d.rows) * K);
    for (int l = 0; l < L; ++l)
      for (int h = 0; h < H; ++h) {
        const int r = l * H + h;
        d.row_labels << tr("L%1 H%2").arg(l + 1).arg(h + 1);
        const AttentionBlock& a = *t.block(kind, l);
        a.probTile(0, h, step, step + 1, 0, K, &d.values[size_t(r) * K]);
        a.scoreTile(0, h, step, step + 1, 0, K, &d.scores[size_t(r) * K]);
        for (int j = 0; j < K; ++j) d.masked[size_t(r) * K + j] = a.masked(0, step, j);
      }
    d.probs = d.values;
    const auto& keys = cross ? t.src_tokens[0] : t.tgt_tokens[0];
    for (int j = 0; j < K; ++j) d.col_labels << tokenLabel(keys[size_t(j)]);
    d.row_title = tr("layer · head ↓");
    d.col_title = kind == AttentionKind::Cross         ? tr("keys → · source tokens")
                  : kind == AttentionKind::EncoderSelf ? tr("keys → · input tokens")
                                                       : tr("keys → · tokens so far");
    d.row_noun = tr("row");
    d.col_noun = tr("key");
    // Long sources: columns narrow, rows keep a readable height.
    d.square_cells = false;
    float mx = 0;
    for (size_t k = 0; k < d.values.size(); ++k)
      if (!d.masked[k]) mx = std::max(mx, d.values[k]);
    d.vmax = mx > 0 ? mx : 1;
    const AttentionSelection sel = state_->selection();
    if (sel.kind == kind && sel.head >= 0) d.highlight_row = sel.layer * H + sel.head;
  }
  rows_caption_->setText(
      (kind == AttentionKind::EncoderSelf
           ? tr("<b>Self-attention row of position %2</b> (query “%3”), every layer and head")
           : tr("<b>New %1 row at position %2</b> (query “%3”), every layer and head")
                 .arg(cross ? tr("cross-attention") : tr("self-attention")))
          .arg(step + 1)
          .arg(info.input.toHtmlEscaped()));
  rows_map_->setColormap(state_->colormap());
  rows_map_->setData(std::move(d));
}

}  // namespace attnviz::gui

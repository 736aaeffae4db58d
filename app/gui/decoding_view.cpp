#include "decoding_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QHorizontalBarSeries>
#include <QtCharts/QLegend>
#include <QtCharts/QValueAxis>
#include <algorithm>

#include "attention_data.h"

namespace attnviz::gui {

DecodingView::DecodingView(AppState* state, QWidget* parent)
    : View(state, tr("What am I looking at?"), parent) {
  steps_model_ = new DecodingStepsModel(this);
  topk_model_ = new TopKModel(this);

  // Left: the steps and the stepping buttons.
  auto* left = new QWidget(this);
  auto* ll = new QVBoxLayout(left);
  ll->setContentsMargins(0, 0, 0, 0);
  summary_ = new QLabel(left);
  summary_->setWordWrap(true);
  summary_->setTextFormat(Qt::RichText);
  ll->addWidget(summary_);
  steps_table_ = new QTableView(left);
  steps_table_->setModel(steps_model_);
  steps_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  steps_table_->setSelectionMode(QAbstractItemView::SingleSelection);
  steps_table_->verticalHeader()->hide();
  steps_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  steps_table_->horizontalHeader()->setSectionResizeMode(DecodingStepsModel::Input,
                                                         QHeaderView::Stretch);
  steps_table_->horizontalHeader()->setSectionResizeMode(DecodingStepsModel::Chosen,
                                                         QHeaderView::Stretch);
  steps_table_->horizontalHeader()->setSectionResizeMode(DecodingStepsModel::Probability,
                                                         QHeaderView::Fixed);
  steps_table_->horizontalHeader()->resizeSection(
      DecodingStepsModel::Probability,
      steps_table_->fontMetrics().horizontalAdvance(QStringLiteral("0.0000")) + 16);
  steps_table_->setToolTip(
      tr("Select a step to see its next-token probabilities and attention rows"));
  ll->addWidget(steps_table_, 1);
  auto* buttons = new QGridLayout;
  back_ = new QPushButton(tr("◀ Step back"), left);
  forward_ = new QPushButton(tr("Step forward ▶"), left);
  to_end_ = new QPushButton(tr("Decode to the end"), left);
  reset_ = new QPushButton(tr("Reset"), left);
  back_->setToolTip(tr("Remove the newest token (←)"));
  forward_->setToolTip(tr("Append the most probable next token (→)"));
  to_end_->setToolTip(tr("Keep appending the argmax until the end token (End)"));
  reset_->setToolTip(tr("Go back to the target prefix (Home)"));
  buttons->addWidget(back_, 0, 0);
  buttons->addWidget(forward_, 0, 1);
  buttons->addWidget(reset_, 1, 0);
  buttons->addWidget(to_end_, 1, 1);
  ll->addLayout(buttons);
  Engine* engine = state_->engine();
  connect(back_, &QPushButton::clicked, engine, [engine] { engine->stepBack(); });
  connect(forward_, &QPushButton::clicked, engine, [engine] { engine->stepForward(); });
  connect(to_end_, &QPushButton::clicked, engine, [engine] { engine->decodeToEnd(); });
  connect(reset_, &QPushButton::clicked, engine, [engine] { engine->reset(); });

  // Middle: top-k as a bar chart and a table.
  auto* middle = new QWidget(this);
  auto* ml = new QVBoxLayout(middle);
  ml->setContentsMargins(0, 0, 0, 0);
  topk_caption_ = new QLabel(middle);
  topk_caption_->setWordWrap(true);
  ml->addWidget(topk_caption_);
  auto* chart = new QChart;
  chart->legend()->hide();
  chart->setMargins(QMargins(2, 2, 2, 2));
  chart_view_ = new QChartView(chart, middle);
  chart_view_->setRenderHint(QPainter::Antialiasing);
  chart_view_->setMinimumHeight(180);
  ml->addWidget(chart_view_, 3);
  topk_table_ = new QTableView(middle);
  topk_table_->setModel(topk_model_);
  topk_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  topk_table_->setSelectionMode(QAbstractItemView::SingleSelection);
  topk_table_->verticalHeader()->hide();
  topk_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  ml->addWidget(topk_table_, 2);
  auto* pick = new QHBoxLayout;
  use_token_ = new QPushButton(tr("Use this token"), middle);
  use_token_->setToolTip(
      tr("Branch: keep the steps before this one and continue with the selected "
         "token instead (double-click a row, or Enter)"));
  continue_ = new QCheckBox(tr("then decode to the end"), middle);
  continue_->setChecked(true);
  pick->addWidget(use_token_);
  pick->addWidget(continue_);
  pick->addStretch(1);
  ml->addLayout(pick);
  connect(use_token_, &QPushButton::clicked, this, &DecodingView::useSelectedToken);
  connect(topk_table_, &QTableView::activated, this, [this] { useSelectedToken(); });

  // Right: the step's new attention rows for every layer and head.
  auto* right = new QWidget(this);
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(0, 0, 0, 0);
  auto* rh = new QHBoxLayout;
  rows_caption_ = new QLabel(right);
  rows_caption_->setWordWrap(true);
  rh->addWidget(rows_caption_, 1);
  rows_kind_ = new QComboBox(right);
  rh->addWidget(rows_kind_);
  rl->addLayout(rh);
  rows_map_ = new HeatmapWidget(right);
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

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(left);
  split->addWidget(middle);
  split->addWidget(right);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 2);
  split->setStretchFactor(2, 3);
  layout_->addWidget(split, 1);

  connect(steps_table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] {
    if (!updating_) showStep();
  });
  connect(engine, &Engine::busyChanged, this, [this] { markDirty(); });
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

void DecodingView::useSelectedToken() {
  const QModelIndex i = topk_table_->currentIndex();
  if (!i.isValid()) return;
  const int token = topk_model_->data(i, TopKModel::TokenIdRole).toInt();
  state_->engine()->choose(currentStep(), token, continue_->isChecked());
}

void DecodingView::refresh() {
  auto snap = state_->snapshot();
  Engine* engine = state_->engine();
  const bool decode = snap && snap->trace && !snap->batch;
  // The rows the right-hand side can show: the kinds the model has, the cross-attention first.
  const Model* model = state_->model();
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
  back_->setEnabled(engine->canStepBack());
  forward_->setEnabled(engine->canStepForward());
  to_end_->setEnabled(engine->canStepForward());
  reset_->setEnabled(decode && !engine->busy());
  use_token_->setEnabled(decode && !engine->busy());
  updating_ = true;
  steps_model_->setSteps(decode ? snap->steps : std::vector<StepInfo>{});
  updating_ = false;
  if (!decode) {
    summary_->setText(snap && snap->batch
                          ? tr("Decoding works on one sentence. Batch mode is on (Masks view): "
                               "press Run to go back to one sentence.")
                          : tr("Press Run to decode a sentence."));
    showStep();
    explanation_->setHtml(tr("The decoder's steps appear here after a run."));
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

  const Trace& t = *snap->trace;
  const auto& c = model->config();
  QStringList src, out;
  if (!t.src_tokens.empty())
    for (const auto& tok : t.src_tokens[0]) src << QString::fromStdString(tok).toHtmlEscaped();
  if (!c.hasDecoder()) {
    // An encoder-only model: what it predicts, not a decode.
    QStringList classes;
    for (size_t k = 0; k < snap->class_probs.size(); ++k)
      classes << tr("%1 %2")
                     .arg(snap->class_labels.value(int(k)).toHtmlEscaped())
                     .arg(snap->class_probs[k], 0, 'f', 3);
    for (const auto& s : snap->steps) out << s.argmax.toHtmlEscaped();
    summary_->setText(
        tr("<b>Input:</b> %1%2%3")
            .arg(src.join(' '))
            .arg(out.isEmpty() ? QString()
                               : tr("<br><b>Masked-LM argmax:</b> %1").arg(out.join(' ')))
            .arg(classes.isEmpty()
                     ? QString()
                     : tr("<br><b>Class probabilities:</b> %1").arg(classes.join(" · "))));
    explanation_->setHtml(
        tr("<p style='margin:0'><b>An encoder-only model</b> reads the whole input at once; there "
           "is nothing to decode. %1%2</p>")
            .arg(c.tokenHead() == TokenHead::BertMlm
                     ? tr("Its masked-LM head turns every position's output vector into "
                          "probabilities over the vocabulary %1: select a position to see its top "
                          "predictions (put [MASK]-like tokens in the input to ask for them). ")
                           .arg(shapeString({1, t.src_len, (long long)c.src_vocab.size()}))
                     : QString())
            .arg(c.classHead() != ClassHead::None
                     ? tr("Its classifier pools the positions (%1) into one vector and gives "
                          "probabilities over %2 classes.")
                           .arg(c.classHead() == ClassHead::MeanPool ? tr("their mean")
                                                                     : tr("the first position"))
                           .arg(c.n_classes)
                     : QString()));
    return;
  }
  for (const auto& s : snap->steps)
    if (s.chosen_id >= 0 && s.position + 1 >= snap->prefix_positions)
      out << s.chosen.toHtmlEscaped();
  QString status;
  if (snap->finished)
    status = snap->steps.back().chosen_id >= 0 && int(snap->steps.size()) < snap->max_positions
                 ? tr("finished: the end token was chosen")
                 : tr("stopped at the maximum length (%1 positions)").arg(snap->max_positions);
  else
    status = tr("next: “%1”, p = %2")
                 .arg(snap->steps.back().argmax.toHtmlEscaped())
                 .arg(snap->steps.back().argmax_prob, 0, 'f', 3);
  summary_->setText((c.hasCross() ? tr("<b>Source:</b> %1<br>").arg(src.join(' ')) : QString()) +
                    tr("<b>Output:</b> %1<br><span style='color:#666'>%2</span>")
                        .arg(out.isEmpty() ? tr("(nothing yet)") : out.join(' '), status));

  const int pos = std::max(0, int(snap->steps.size()) - 1);
  explanation_->setHtml(
      tr("<p style='margin:0'><b>Greedy decoding</b>: the encoder runs once; then each step feeds "
         "the newest token at position t and computes only that position's query row, attending to "
         "the keys and values cached from earlier steps. The output projection and softmax give "
         "the next-token probabilities %1; greedy decoding appends the argmax, and you may pick "
         "another token to branch.</p>"
         "<p style='margin:4px 0 0 0'>Shapes at step t = %2: the new self-attention row is "
         "[batch, heads, 1, t + 1] = %3, the new cross-attention row [batch, heads, 1, len_src] = "
         "%4, for each of %5 decoder layers; the logits are [1, tgt_vocab] = %6.</p>")
          .arg(code(tr(
              "p(y<sub>t+1</sub> | y<sub>≤t</sub>, x) = softmax(h<sub>t</sub>W<sub>out</sub>ᵀ)")))
          .arg(pos)
          .arg(shapeString({1, c.n_heads, 1, pos + 1}))
          .arg(shapeString({1, c.n_heads, 1, std::max(t.src_len, 0)}))
          .arg(c.n_decoder_layers)
          .arg(shapeString({1, (long long)c.tgt_vocab.size()})));
}

void DecodingView::showStep() {
  auto snap = state_->snapshot();
  QChart* chart = chart_view_->chart();
  chart->removeAllSeries();
  for (QAbstractAxis* axis : chart->axes()) {
    chart->removeAxis(axis);
    delete axis;
  }
  const bool decode = snap && snap->trace && !snap->batch && !snap->steps.empty();
  if (!decode) {
    topk_model_->setStep(nullptr);
    topk_caption_->setText(QString());
    rows_caption_->setText(QString());
    HeatmapData empty;
    empty.title = tr("No decoding steps");
    rows_map_->setData(empty);
    return;
  }
  const int step = std::clamp(currentStep(), 0, int(snap->steps.size()) - 1);
  const StepInfo& info = snap->steps[size_t(step)];
  topk_model_->setStep(&info);
  if (!info.topk.empty()) topk_table_->selectRow(0);
  const bool enc_only = state_->model() && !state_->model()->config().hasDecoder();
  topk_caption_->setText((enc_only ? tr("<b>Masked-LM predictions at position %1</b> (input “%2”)")
                                   : tr("<b>Next-token probabilities after position %1</b> (input "
                                        "“%2”)"))
                             .arg(step)
                             .arg(info.input.toHtmlEscaped()));

  // Horizontal bars, the most probable at the top.
  auto* set = new QBarSet(tr("p"));
  QStringList cats;
  for (int k = int(info.topk.size()) - 1; k >= 0; --k) {
    *set << info.topk[size_t(k)].second;
    // Category labels are rich text: escape tokens such as <eos>.
    QString label = info.topk_tokens.value(k).toHtmlEscaped();
    if (info.topk[size_t(k)].first == info.chosen_id) label += tr(" ✓");
    cats << label;
  }
  set->setColor(QColor(0x4e, 0x79, 0xa7));
  set->setLabelColor(QColor(0x20, 0x20, 0x20));
  auto* series = new QHorizontalBarSeries;
  series->append(set);
  series->setLabelsVisible(true);
  series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
  series->setLabelsFormat(QStringLiteral("@value"));
  series->setLabelsPrecision(3);
  chart->addSeries(series);
  auto* ay = new QBarCategoryAxis;
  ay->append(cats);
  auto* ax = new QValueAxis;
  ax->setRange(0, 1.2);
  ax->setTickCount(7);
  ax->setLabelFormat(QStringLiteral("%.1f"));
  ax->setTitleText(tr("probability"));
  chart->addAxis(ay, Qt::AlignLeft);
  chart->addAxis(ax, Qt::AlignBottom);
  series->attachAxis(ay);
  series->attachAxis(ax);
  connect(set, &QBarSet::clicked, this,
          [this, n = int(info.topk.size())](int index) { topk_table_->selectRow(n - 1 - index); });

  // The step's new attention row for every layer and head.
  const Trace& t = *snap->trace;
  const AttentionKind kind = rows_kind_->count()
                                 ? static_cast<AttentionKind>(rows_kind_->currentData().toInt())
                                 : AttentionKind::Cross;
  const bool cross = kind != AttentionKind::DecoderSelf;  // keys: the source
  const AttentionBlock* first = t.block(kind, 0);
  HeatmapData d;
  if (first && step < first->q_len) {
    const int L = t.layers(kind), H = first->heads;
    // Self-attention sees keys up to this position (all of them with the subsequent mask off).
    const int K = cross || !snap->masks.subsequent ? first->k_len : step + 1;
    d.rows = L * H;
    d.cols = K;
    d.values.resize(size_t(d.rows) * K);
    d.masked.resize(size_t(d.rows) * K);
    if (first->hasScores()) d.scores.resize(size_t(d.rows) * K);
    for (int l = 0; l < L; ++l)
      for (int h = 0; h < H; ++h) {
        const int r = l * H + h;
        d.row_labels << tr("L%1 H%2").arg(l + 1).arg(h + 1);
        const AttentionBlock& a = *t.block(kind, l);
        for (int j = 0; j < K; ++j) {
          d.values[size_t(r) * K + j] = a.prob(0, h, step, j);
          d.masked[size_t(r) * K + j] = a.masked(0, step, j);
          if (a.hasScores()) d.scores[size_t(r) * K + j] = a.score(0, h, step, j);
        }
      }
    d.probs = d.values;
    const auto& keys = cross ? t.src_tokens[0] : t.tgt_tokens[0];
    for (int j = 0; j < K; ++j) d.col_labels << QString::fromStdString(keys[size_t(j)]);
    d.row_title = tr("layer · head ↓");
    d.col_title = cross ? tr("keys → · source tokens") : tr("keys → · target tokens so far");
    d.row_noun = tr("row");
    d.col_noun = tr("key");
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
          .arg(step)
          .arg(info.input.toHtmlEscaped()));
  rows_map_->setColormap(state_->colormap());
  rows_map_->setData(std::move(d));
}

}  // namespace attnviz::gui

#include "views/masks/masks_view.h"

#include <QCheckBox>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <cmath>

#include "session/attention_data.h"

namespace attnviz::gui {

namespace {

HeatmapWidget* smallMap(QWidget* parent) {
  auto* w = new HeatmapWidget(parent);
  w->setMinimumSize(160, 150);
  w->setMaxFitCell(40);
  w->setFontScale(0.85);  // small multiples: smaller labels, so that every one of them fits
  return w;
}

}  // namespace

MasksView::MasksView(AppState* state, QWidget* parent)
    : View(state, tr("What am I looking at?"), parent) {
  content_ = new QWidget(this);
  content_->setBackgroundRole(QPalette::Base);
  content_->setAutoFillBackground(true);
  auto* h = new QHBoxLayout(content_);
  h->setContentsMargins(0, 0, 0, 0);

  // Left: the switches and the batch, in a narrow column; the matrices get the height.
  auto* side = new QWidget(content_);
  side->setMaximumWidth(side->fontMetrics().horizontalAdvance(QLatin1Char('x')) * 44);
  auto* sv = new QVBoxLayout(side);
  sv->setContentsMargins(0, 0, 0, 0);
  auto* switches = new QGroupBox(tr("Masks applied in the forward pass"), side);
  auto* sl = new QVBoxLayout(switches);
  src_padding_ = new QCheckBox(tr("Source padding"), switches);
  tgt_padding_ = new QCheckBox(tr("Target padding"), switches);
  subsequent_ = new QCheckBox(tr("Look-ahead (subsequent, causal)"), switches);
  src_padding_->setToolTip(
      tr("Masks <pad> keys in encoder self-attention and cross-attention. "
         "Off: real tokens attend to padding too — watch the probabilities leak"));
  tgt_padding_->setToolTip(tr("Masks <pad> keys in decoder self-attention"));
  subsequent_->setToolTip(
      tr("Off: decoder queries see future target tokens — the future leaks into "
         "every later layer (teacher forcing makes this look deceptively good)"));
  for (auto* c : {src_padding_, tgt_padding_, subsequent_}) {
    c->setChecked(true);
    sl->addWidget(c, 0, Qt::AlignLeft);
    connect(c, &QCheckBox::toggled, this, &MasksView::applySwitches);
  }
  auto* hint = new QLabel(tr("Switching a mask off reruns the model with the same tokens: the "
                             "leak shows in every later layer and view."),
                          switches);
  hint->setForegroundRole(QPalette::PlaceholderText);
  hint->setWordWrap(true);
  sl->addWidget(hint);
  sv->addWidget(switches);

  auto* batch = new QGroupBox(tr("Batch: sentences padded together"), side);
  batch->setToolTip(
      tr("Sentences of different lengths, padded to the longest: the padding mask "
         "at work"));
  auto* bl = new QVBoxLayout(batch);
  batch_edit_ = new QPlainTextEdit(batch);
  batch_edit_->setPlaceholderText(tr("One sentence per line (two or more)"));
  batch_edit_->setMinimumHeight(batch_edit_->fontMetrics().lineSpacing() * 5 + 12);
  batch_edit_->setLineWrapMode(QPlainTextEdit::NoWrap);
  batch_run_ = new QPushButton(tr("Run as a batch"), batch);
  batch_run_->setToolTip(
      tr("Decode every sentence greedily, then run them together as one padded "
         "batch; pick the sentence to show with “Sentence” above the views"));
  batch_note_ = new QLabel(batch);
  batch_note_->setWordWrap(true);
  batch_note_->setForegroundRole(QPalette::PlaceholderText);
  bl->addWidget(batch_edit_, 1);
  bl->addWidget(batch_run_, 0, Qt::AlignLeft);
  bl->addWidget(batch_note_);
  sv->addWidget(batch, 1);
  h->addWidget(side);
  connect(batch_edit_, &QPlainTextEdit::textChanged, this, [this] { batch_edited_ = true; });
  connect(batch_run_, &QPushButton::clicked, this,
          [this] { state_->engine()->runBatch(batchLines()); });

  // Right: the masks above, the pipeline of one head below; they scroll rather than shrink below
  // the height where every label fits.
  auto* scroll = new QScrollArea(content_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* maps = new QWidget(scroll);
  maps->setBackgroundRole(QPalette::Base);
  scroll->setWidget(maps);
  auto* mv = new QVBoxLayout(maps);
  mv->setContentsMargins(0, 0, 0, 0);
  auto* masks_box = new QGroupBox(tr("The masks (1 = masked, hatched)"), maps);
  auto* ml = new QHBoxLayout(masks_box);
  padding_ = smallMap(masks_box);
  subsequent_map_ = smallMap(masks_box);
  union_ = smallMap(masks_box);
  ml->addWidget(padding_);
  ml->addWidget(subsequent_map_);
  ml->addWidget(union_);
  mv->addWidget(masks_box, 1);

  auto* pipe_box = new QGroupBox(tr("Scores → masked scores → softmax"), maps);
  auto* pl = new QVBoxLayout(pipe_box);
  pipeline_caption_ = new QLabel(pipe_box);
  pl->addWidget(pipeline_caption_);
  auto* row = new QHBoxLayout;
  scores_ = smallMap(pipe_box);
  masked_scores_ = smallMap(pipe_box);
  probs_ = smallMap(pipe_box);
  row->addWidget(scores_);
  row->addWidget(masked_scores_);
  row->addWidget(probs_);
  pl->addLayout(row, 1);
  mv->addWidget(pipe_box, 1);
  h->addWidget(scroll, 1);

  layout_->addWidget(content_, 1);

  connect(state_->engine(), &Engine::masksChanged, this, &MasksView::syncSwitches);
  connect(state_->engine(), &Engine::busyChanged, this, [this](bool busy) {
    for (auto* c : {src_padding_, tgt_padding_, subsequent_}) c->setEnabled(!busy);
    batch_run_->setEnabled(!busy && state_->model());
  });
}

QStringList MasksView::batchLines() const {
  QStringList lines;
  for (const QString& l : batch_edit_->toPlainText().split('\n'))
    if (!l.trimmed().isEmpty()) lines << l.trimmed();
  return lines;
}

void MasksView::setBatch(const QStringList& sentences) {
  batch_edit_->setPlainText(sentences.join('\n'));
  batch_edited_ = false;
}

void MasksView::syncSwitches(const MaskOptions& m) {
  const QSignalBlocker b1(src_padding_), b2(tgt_padding_), b3(subsequent_);
  src_padding_->setChecked(m.src_padding);
  tgt_padding_->setChecked(m.tgt_padding);
  subsequent_->setChecked(m.subsequent);
}

void MasksView::applySwitches() {
  MaskOptions m;
  m.src_padding = src_padding_->isChecked();
  m.tgt_padding = tgt_padding_->isChecked();
  m.subsequent = subsequent_->isChecked();
  if (!state_->engine()->setMasks(m)) syncSwitches(state_->engine()->masks());
}

void MasksView::refresh() {
  auto snap = state_->snapshot();
  const Model* model = state_->model();
  if (model) {  // only the switches of masks this model has
    const auto& mc = model->config();
    src_padding_->setVisible(mc.hasEncoder());
    tgt_padding_->setVisible(mc.hasDecoder());
    subsequent_->setVisible(mc.hasDecoder());
    src_padding_->setText(mc.hasDecoder() ? tr("Source padding") : tr("Padding"));
    tgt_padding_->setText(mc.hasEncoder() ? tr("Target padding") : tr("Padding"));
  }
  for (auto* w : {padding_, subsequent_map_, union_, scores_, masked_scores_, probs_})
    w->setColormap(state_->colormap());
  const Trace* t = snap && snap->trace ? snap->trace.get() : nullptr;
  batch_note_->setText(
      snap && snap->batch
          ? tr("Showing a batch of %1 sentences padded to %2 source and %3 target tokens. "
               "Press Run above to go back to one sentence.")
                .arg(t->batch)
                .arg(t->src_len)
                .arg(t->tgt_len)
          : tr("A single sentence has no padding. Run two or more sentences of different lengths "
               "to see the padding mask at work."));
  if (!t || !model) {
    HeatmapData empty;
    empty.title = tr("Press Run to see the masks");
    for (auto* w : {padding_, subsequent_map_, union_, scores_, masked_scores_, probs_})
      w->setData(empty);
    explanation_->setHtml(tr("The masks of the current input appear here after a run."));
    mask_maps_key_ = {};
    return;
  }
  const auto& c = model->config();
  const AttentionSelection s = clampSelection(*t, state_->selection());
  const bool dec = s.kind == AttentionKind::DecoderSelf;
  // The three masks depend on the run, the kind and the sentence, not on the layer or the head: a
  // layer or head switch keeps them as drawn.
  const MaskMapsKey key{snap->id, s.kind, s.batch};
  if (!(key == mask_maps_key_)) {
    mask_maps_key_ = key;
    const MaskParts parts = maskParts(*t, s.kind, s.batch, c, snap->masks);
    const QStringList rows = queryLabels(*t, s.kind, s.batch);
    const QStringList cols = keyLabels(*t, s.kind, s.batch);
    const QString off = tr(" — off");
    padding_->setData(maskHeatmap(parts.padding, rows, cols,
                                  (!c.hasCross() ? tr("Padding mask")
                                   : dec         ? tr("Target padding mask")
                                                 : tr("Source padding mask")) +
                                      (parts.padding_on ? QString() : off)));
    if (dec) {
      subsequent_map_->setData(
          maskHeatmap(parts.subsequent, rows, cols,
                      tr("Look-ahead mask (j > i)") + (parts.subsequent_on ? QString() : off)));
    } else {
      HeatmapData none;
      none.title = tr("No look-ahead mask in %1:\nevery query may see every key")
                       .arg(s.kind == AttentionKind::EncoderSelf ? tr("encoder self-attention")
                                                                 : tr("cross-attention"));
      subsequent_map_->setData(none);
    }
    union_->setData(maskHeatmap(parts.applied, rows, cols, tr("Applied: the union of those on")));
  }
  AttentionSelection head = s;
  if (head.head < 0) head.head = 0;
  // One copy of the block for the three heatmaps of its pipeline.
  const std::shared_ptr<const AttentionBlock> tiles = blockForTiles(*t, head.kind, head.layer);
  auto titled = [&](HeatmapData d, const QString& title) {
    d.title = title;
    d.row_title.clear();
    d.col_title.clear();
    return d;
  };
  const QString fill = maskFillText(c.mask_fill);
  // The scores as the family makes them: T5 adds each head's relative position bias in
  // self-attention and does not divide by √d_k.
  const bool bias = c.positional == Positional::Relative && head.kind != AttentionKind::Cross;
  const QString scaled = c.attn_scale == 0.0f   ? tr("QKᵀ/√d_k")
                         : c.attn_scale == 1.0f ? tr("QKᵀ")
                                                : tr("QKᵀ·%1").arg(double(c.attn_scale));
  // Gemma 2 soft-caps them before the mask: cap·tanh(s / cap).
  const QString qk =
      c.attn_softcap > 0.0f ? tr("%1·tanh(%2/%1)").arg(double(c.attn_softcap)).arg(scaled) : scaled;
  scores_->setData(
      titled(attentionHeatmap(*t, head, MatrixValues::Scores, true, c.mask_fill, tiles),
             bias ? tr("1 · scores %1 + position bias").arg(qk) : tr("1 · scores %1").arg(qk)));
  masked_scores_->setData(
      titled(attentionHeatmap(*t, head, MatrixValues::MaskedScores, true, c.mask_fill, tiles),
             tr("2 · masked (%1)").arg(fill)));
  probs_->setData(
      titled(attentionHeatmap(*t, head, MatrixValues::Probabilities, false, c.mask_fill, tiles),
             tr("3 · softmax, row by row")));
  // Each map asks for the height at which all its labels fit (the scroll area gives it).
  for (HeatmapWidget* w : {padding_, subsequent_map_, union_, scores_, masked_scores_, probs_})
    w->setMinimumHeight(std::max(150, w->labelledMinimumSize().height()));
  AttentionSelection shown = head;
  pipeline_caption_->setText(tr("%1%2").arg(
      selectionTitle(shown),
      s.head < 0 ? tr("  (the mean of the heads has no single pipeline: head 1 shown)")
                 : QString()));

  const AttentionBlock* block = t->block(head.kind, head.layer);
  if (!block) return;
  const AttentionBlock& a = *block;
  // Every mask that is off, named (the masks masksOff() names, in its order).
  QStringList masks_off;
  if (c.hasDecoder() && !snap->masks.subsequent)
    masks_off << tr(
        "<b>The look-ahead mask is off</b>: decoder queries see future tokens, the cells "
        "above the diagonal are no longer 0.");
  bool padding_off = false;
  if (c.hasEncoder() && c.src_padding_mask && !snap->masks.src_padding) {
    masks_off << (c.hasDecoder()
                      ? tr("<b>The source padding mask is off</b>: queries in encoder "
                           "self-attention and cross-attention attend to the source's "
                           "padding keys too.")
                      : tr("<b>The padding mask is off</b>: queries attend to padding keys "
                           "too."));
    padding_off = true;
  }
  if (c.hasDecoder() && c.tgt_padding_mask && !snap->masks.tgt_padding) {
    masks_off << (c.hasEncoder()
                      ? tr("<b>The target padding mask is off</b>: decoder queries attend "
                           "to the target's padding keys too.")
                      : tr("<b>The padding mask is off</b>: queries attend to padding keys "
                           "too."));
    padding_off = true;
  }
  if (padding_off && !snap->batch)
    masks_off << tr(
        "One sentence has no padding, so nothing leaks yet: run a batch of sentences of "
        "different lengths to see it.");
  explanation_->setHtml(
      tr("<p style='margin:0'>A mask marks the (query, key) pairs that must not attend: before the "
         "softmax their scores are replaced by %1, so their probabilities become exactly 0. "
         "<b>Padding mask</b>: key <i>j</i> is the pad token (id %2) — %3. "
         "<b>Look-ahead (subsequent) mask</b>: key <i>j</i> lies after query <i>i</i> (%4, "
         "np.triu(ones, k=1)), used only in decoder self-attention. The decoder uses their "
         "union.</p>"
         "<p style='margin:4px 0 0 0'>Shapes: the mask is [batch, len_q, len_k] = %5 and is "
         "broadcast over the heads; scores and probabilities are [batch, heads, len_q, len_k] = "
         "%6. "
         "%7</p>")
          .arg(code(fill))
          .arg((dec ? c.tgt_pad_id : c.src_pad_id) >= 0
                   ? QString::number(dec ? c.tgt_pad_id : c.src_pad_id)
                   : tr("none: this model has no padding token"))
          .arg(code(tr("M[b, i, j] = (key[b, j] == pad)")))
          .arg(code(tr("j &gt; i")))
          .arg(shapeString({t->batch, a.q_len, a.k_len}))
          .arg(shapeString({t->batch, a.heads, a.q_len, a.k_len}))
          .arg(masks_off.join(QLatin1Char(' '))));
}

}  // namespace attnviz::gui

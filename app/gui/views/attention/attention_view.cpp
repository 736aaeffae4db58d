#include "views/attention/attention_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <cmath>

#include "model/explanations.h"

namespace attnviz::gui {

AttentionView::AttentionView(AppState* state, QWidget* parent)
    : View(state, tr("What am I looking at?"), parent) {
  auto* controls = new QHBoxLayout;
  caption_ = new QLabel(this);
  QFont f;  // only bold: the size follows the window's (presentation mode)
  f.setBold(true);
  caption_->setFont(f);
  caption_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  caption_->setMinimumWidth(120);
  // Two lines rather than a cut one: the end says which masks are off.
  caption_->setWordWrap(true);
  controls->addWidget(caption_, 1);
  controls->addWidget(new QLabel(tr("Show:"), this));
  values_ = new QComboBox(this);
  values_->addItem(tr("Probabilities"));
  values_->addItem(tr("Raw scores QKᵀ/√d_k"));
  values_->addItem(tr("Masked scores"));
  values_->setToolTip(
      tr("Probabilities: after softmax. Raw scores: QKᵀ/√d_k before the mask (T5: QKᵀ plus the "
         "head's relative position bias). Masked scores: "
         "what softmax sees, masked cells set to the fill value."));
  controls->addWidget(values_);
  controls->addWidget(new QLabel(tr("Colour scale:"), this));
  scale_ = new QComboBox(this);
  scale_->addItem(tr("0 … max"));
  scale_->addItem(tr("0 … 1"));
  scale_->setToolTip(
      tr("Probabilities: stretch the colours to this matrix's largest value, or use "
         "the fixed range 0 … 1 (to compare heads)"));
  controls->addWidget(scale_);
  layout_->addLayout(controls);
  view_ = new HeatmapView(this);
  layout_->addWidget(view_, 1);
  connect(values_, &QComboBox::currentIndexChanged, this, [this] { refreshNow(); });
  connect(scale_, &QComboBox::currentIndexChanged, this, [this] { refreshNow(); });
  // A clicked cell is the one Inside a cell takes apart.
  connect(heatmap(), &HeatmapWidget::cellClicked, this,
          [this](int row, int col) { state_->setCell(row, col); });
}

void AttentionView::refresh() {
  auto snap = state_->snapshot();
  const Model* model = state_->model();
  heatmap()->setColormap(state_->colormap());
  // The raw scores as the family makes them (T5: QKᵀ plus its relative position bias).
  if (model) {
    const ModelConfig& c = model->config();
    const QString qk = c.attn_scale == 0.0f ? tr("QKᵀ/√d_k") : tr("QKᵀ·%1").arg(c.attn_scale);
    // Gemma 2's soft-capped scores: cap·tanh(s / cap), before the mask.
    const QString capped =
        c.attn_softcap > 0.0f ? tr("%1·tanh(%2/%1)").arg(c.attn_softcap).arg(qk) : qk;
    values_->setItemText(1, c.positional == Positional::Relative ? tr("Raw scores QKᵀ + bias")
                                                                 : tr("Raw scores %1").arg(capped));
  }
  if (!snap || !snap->trace || !model) {
    const ModelConfig* mc = model ? &model->config() : nullptr;
    caption_->setText(!mc                ? tr("No model loaded")
                      : mc->hasCross()   ? tr("Type a source sentence and press Run")
                      : mc->hasDecoder() ? tr("Type a prompt and press Run")
                                         : tr("Type an input and press Run"));
    HeatmapData empty;
    empty.title = model ? tr("Press Run (Ctrl+Enter) to see the attention") : tr("Open a model");
    heatmap()->setData(empty);
    explanation_->setHtml(tr("Attention heatmaps appear here after a run."));
    return;
  }
  const Trace& t = *snap->trace;
  const AttentionSelection s = clampSelection(t, state_->selection());
  const auto& c = model->config();
  const MatrixValues which = static_cast<MatrixValues>(values_->currentIndex());
  scale_->setEnabled(which == MatrixValues::Probabilities);
  HeatmapData d = attentionHeatmap(t, s, which, scale_->currentIndex() == 0, c.mask_fill);
  // Grouped-query attention: which key/value head this query head reads.
  const QString kv = kvHeadText(c, s.head), kv_short = kvHeadShort(c, s.head);
  caption_->setToolTip(kv.isEmpty() ? selectionTitle(s)
                                    : selectionTitle(s) + QStringLiteral("\n") + kv);
  const QStringList off = masksOff(snap->masks, c);
  caption_->setText(
      selectionTitle(s) + (kv_short.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(kv_short)) +
      // No-break spaces keep "sentence 2 of 4" on one line when the heading wraps.
      (t.batch > 1 ? tr(" · sentence\u00a0%1\u00a0of\u00a0%2").arg(s.batch + 1).arg(t.batch)
                   : QString()) +
      (off.isEmpty() ? QString() : tr(" · masks off: %1").arg(off.join(QStringLiteral(", ")))));
  heatmap()->setData(std::move(d));

  const AttentionSelection cs = clampSelection(t, s);
  const AttentionBlock* block = t.block(cs.kind, cs.layer);
  if (!block) return;
  const AttentionBlock& a = *block;
  // Said as the masks were when this trace was made, and whether this matrix has a masked cell.
  const bool any_masked = a.anyMasked(cs.batch);
  // The text the exported lesson page shows too (model/explanations.h).
  explanation_->setHtml(
      QString::fromStdString(attentionExplanation(c, t, a, snap->masks, any_masked)));
}

QStringList AttentionView::figureTitle() const {
  auto snap = state_->snapshot();
  if (!snap || !snap->trace) return {title()};
  const AttentionSelection s = clampSelection(*snap->trace, state_->selection());
  QString what = selectionTitle(s) + QStringLiteral(" · ") + values_->currentText();
  if (const Model* m = state_->model()) {
    const QStringList off = masksOff(snap->masks, m->config());
    if (!off.isEmpty()) what += tr(" · masks off: %1").arg(off.join(QStringLiteral(", ")));
  }
  QStringList lines{what};
  const QString sentence = sentenceLine();
  if (!sentence.isEmpty()) lines << sentence;
  return lines;
}

namespace {

// A copy of the heatmap, drawn for a figure: not fitted to the window but as tight as the matrix,
// its labels and legend allow, with cells as vector rectangles.
void setUpFigureHeatmap(HeatmapWidget& hm, const HeatmapWidget& from, bool legend) {
  hm.copyForFigure(from, legend);
  hm.setFit(false);
}

}  // namespace

QSize AttentionView::figureBodySize(QSize available, bool legend) {
  HeatmapWidget hm;
  setUpFigureHeatmap(hm, *heatmap(), legend);
  return hm.tightSize(available, 64);
}

QSize AttentionView::figureLeastBodySize(bool legend) {
  HeatmapWidget hm;
  setUpFigureHeatmap(hm, *heatmap(), legend);
  return hm.labelledSize();
}

void AttentionView::paintFigureBody(QPainter& p, QSize body, bool legend) {
  HeatmapWidget hm;
  setUpFigureHeatmap(hm, *heatmap(), legend);
  double cell = 0;
  hm.tightSize(body, 64, &cell);
  hm.setCellSize(cell);
  hm.resize(body);
  hm.render(&p, QPoint(), QRegion(), QWidget::DrawChildren);
}

}  // namespace attnviz::gui

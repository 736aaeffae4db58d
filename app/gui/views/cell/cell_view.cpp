#include "views/cell/cell_view.h"

#include <QHBoxLayout>
#include <QImage>
#include <QLabel>
#include <QPainter>
#include <QResizeEvent>
#include <QScrollArea>
#include <QSplitter>
#include <algorithm>
#include <cmath>

#include "arch/positional.h"
#include "base/error.h"
#include "session/attention_data.h"
#include "session/teaching_util.h"
#include "widgets/colormap.h"

namespace attnviz::gui {

CellBreakdown cellBreakdown(const AttentionBlock& a, int b, int h, int i, int j,
                            const LoadedModel& model, AttentionKind kind) {
  const ModelConfig& cfg = model.config;
  const float mask_fill = cfg.mask_fill;
  if (!a.hasValues())
    throw Error(
        ErrorKind::BadInput,
        QT_TRANSLATE_NOOP("attnviz::Error",
                          "this trace did not keep the value vectors (keep_qkv): run again"));
  if (b < 0 || b >= a.batch || h < 0 || h >= a.heads || i < 0 || i >= a.q_len || j < 0 ||
      j >= a.k_len)
    throw Error(ErrorKind::BadInput, "the cell (" + std::to_string(i) + ", " + std::to_string(j) +
                                         ") of head " + std::to_string(h + 1) +
                                         " is outside the block");
  CellBreakdown c;
  c.b = b;
  c.h = h;
  c.i = i;
  c.j = j;
  c.d_k = a.d_k;
  c.d_v = a.d_v;
  c.k_len = a.k_len;
  c.mask_fill = mask_fill;
  const float* q = a.qRow(b, h, i);
  const float* k = a.kRow(b, h, j);
  c.q.assign(q, q + a.d_k);
  c.k.assign(k, k + a.d_k);
  c.product.resize(size_t(a.d_k));
  for (int x = 0; x < a.d_k; ++x) {
    c.product[size_t(x)] = q[x] * k[x];
    c.dot += double(q[x]) * double(k[x]);
  }
  c.sqrt_dk = std::sqrt(double(a.d_k));
  c.scaled_by_root = cfg.attn_scale == 0.0f;
  c.scale = cfg.scoreScale();
  c.score = c.dot * c.scale;
  if (cfg.positional == Positional::Relative && kind != AttentionKind::Cross) {
    // Row i is query position i, column j key position j (the trace's blocks start at 0).
    const bool decoder = kind == AttentionKind::DecoderSelf;
    c.has_bias = true;
    c.bias = relativePositionBias(cfg, decoder ? model.weights.decoder : model.weights.encoder,
                                  decoder, h, i, j, &c.bucket);
    c.score += c.bias;
  }
  if (cfg.attn_softcap > 0.0f) {  // Gemma 2's soft-cap, before the mask
    c.softcap = cfg.attn_softcap;
    c.score = c.softcap * std::tanh(c.score / c.softcap);
  }
  c.stored_score = a.score(b, h, i, j);
  c.masked = a.masked(b, i, j);
  const std::vector<float> pr = a.probRow(b, h, i);
  const std::vector<uint8_t> mr = a.maskRow(b, i);
  c.row_scores.resize(size_t(a.k_len));
  a.scoresOfRow(b, h, i, c.row_scores.data());  // computed from the kept q and k
  c.row_probs = pr;
  c.row_masked.assign(mr.begin(), mr.end());
  // The softmax's inputs: the scores, masked cells replaced by the fill.
  std::vector<double> in(size_t(a.k_len), 0.0);
  c.row_max = -INFINITY;
  for (int x = 0; x < a.k_len; ++x) {
    in[size_t(x)] = mr[x] ? double(mask_fill) : double(c.row_scores[size_t(x)]);
    c.row_max = std::max(c.row_max, in[size_t(x)]);
  }
  for (int x = 0; x < a.k_len; ++x) {
    const double e = std::isinf(in[size_t(x)]) ? 0.0 : std::exp(in[size_t(x)] - c.row_max);
    c.exp_sum += e;
    if (x == j) c.exp_cell = e;
  }
  c.prob = c.exp_sum > 0 ? c.exp_cell / c.exp_sum : 0.0;
  c.stored_prob = a.prob(b, h, i, j);
  c.values.resize(size_t(a.k_len) * a.d_v);
  c.context.assign(size_t(a.d_v), 0.0f);
  for (int x = 0; x < a.k_len; ++x) {
    const float* v = a.vRow(b, h, x);
    std::copy(v, v + a.d_v, c.values.begin() + size_t(x) * a.d_v);
    for (int y = 0; y < a.d_v; ++y) c.context[size_t(y)] += pr[x] * v[y];
  }
  return c;
}

// ---- the drawing ------------------------------------------------------------------------------

namespace {

constexpr double kLeft = 12;
constexpr double kStripH = 24;
constexpr double kLine = 20;

double absMax(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::abs(x)));
  return m > 0 ? m : 1.0;
}

QString check(double recomputed, double stored) {
  const double rel = std::abs(recomputed - stored) / std::max(1.0, std::abs(stored));
  return rel <= 1e-4 ? QStringLiteral("✓") : QStringLiteral("≠ (differs by %1)").arg(num(rel, 6));
}

}  // namespace

CellBreakdownWidget::CellBreakdownWidget(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
}

void CellBreakdownWidget::setBreakdown(const CellBreakdown* c, const QString& query,
                                       const QString& key, const QStringList& key_tokens) {
  has_ = c != nullptr;
  if (c) c_ = *c;
  query_ = query;
  key_ = key;
  keys_ = key_tokens;
  remeasure();
  updateGeometry();
  update();
}

QSize CellBreakdownWidget::sizeHint() const {
  return QSize(640, std::max(200, minimumHeight()));
}

QString CellBreakdownWidget::headline() const {
  if (!has_) return {};
  // Positions count from 1, like the rows and columns of the Attention view's hover.
  return tr("Query %1 “%2” × key %3 “%4”, head %5: how this attention weight was made")
      .arg(c_.i + 1)
      .arg(query_)
      .arg(c_.j + 1)
      .arg(key_)
      .arg(c_.h + 1);
}

QRectF CellBreakdownWidget::barRect(int j) const {
  if (!has_ || j < 0 || j >= c_.k_len) return {};
  const double p = c_.row_probs[size_t(j)];
  const double h = std::max(1.0, p * bars_h_);
  return QRectF(bars_left_ + j * bar_w_ + 1, bars_top_ + bars_h_ - h, bar_w_ - 2, h);
}

void CellBreakdownWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  p.setRenderHint(QPainter::Antialiasing);
  if (!has_) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
               tr("Click a cell of the heatmap to see how it was computed"));
    return;
  }
  render(p);
}

void CellBreakdownWidget::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  remeasure();
}

void CellBreakdownWidget::remeasure() {
  if (!has_) {
    setMinimumHeight(0);
    return;
  }
  QImage scratch(1, 1, QImage::Format_ARGB32);
  QPainter p(&scratch);
  p.setFont(font());
  const int h = int(std::ceil(render(p)));
  p.end();
  if (h != minimumHeight()) setMinimumHeight(h);
}

double CellBreakdownWidget::render(QPainter& p) {
  const QColor text(0x20, 0x20, 0x20), blue(0x1a, 0x5f, 0xb4);
  QFont base = font(), bold = font(), small = font();
  bold.setBold(true);
  small.setPointSizeF(base.pointSizeF() * 0.8);
  const Colormap& cm = Colormap::rdbu();
  const double W = width() - 2 * kLeft;
  double y = 8;
  auto line = [&](const QString& s, bool is_bold = false, QColor color = QColor()) {
    p.setFont(is_bold ? bold : base);
    p.setPen(color.isValid() ? color : text);
    const QRectF box(kLeft, y, W, 1000);
    const QRectF used = p.boundingRect(box, Qt::AlignLeft | Qt::TextWordWrap, s);
    p.drawText(box, Qt::AlignLeft | Qt::TextWordWrap, s);
    y += std::max(kLine, used.height() + 3);
  };
  // A strip of d coloured cells (blue negative, red positive), values written when they fit.
  auto strip = [&](const std::vector<float>& v, double scale, double x0, double yy, double cw,
                   double h) {
    p.setFont(small);
    const QFontMetricsF fm(small);
    for (size_t k = 0; k < v.size(); ++k) {
      const double t = 0.5 + 0.5 * std::clamp(double(v[k]) / scale, -1.0, 1.0);
      const QRectF r(x0 + k * cw, yy, cw, h);
      p.fillRect(r, QColor::fromRgb(cm.rgb(t)));
      if (cw >= fm.horizontalAdvance(QStringLiteral("-0.00")) + 2 && h >= fm.height()) {
        p.setPen(cm.textOn(t));
        p.drawText(r, Qt::AlignCenter, QString::number(v[k], 'f', std::abs(v[k]) >= 10 ? 0 : 2));
      }
    }
    p.setPen(QColor(0x80, 0x80, 0x80));
    p.drawRect(QRectF(x0, yy, cw * v.size(), h));
  };
  const double cw = std::clamp((W - 120) / std::max(c_.d_k, c_.d_v), 2.0, 34.0);
  const double qk_scale = std::max(absMax(c_.q), absMax(c_.k));

  line(headline(), true);
  y += 4;
  line(tr("① q_i: the query vector of position %1 in this head (d_k = %2 numbers, from x·W_Q)")
           .arg(c_.i + 1)
           .arg(c_.d_k));
  strip(c_.q, qk_scale, kLeft, y, cw, kStripH);
  y += kStripH + 6;
  line(tr("② k_j: the key vector of position %1 (from x·W_K)").arg(c_.j + 1));
  strip(c_.k, qk_scale, kLeft, y, cw, kStripH);
  y += kStripH + 6;
  line(
      tr("③ q_i ⊙ k_j: multiplied number by number (red: the two agree in sign, blue: they "
         "disagree)"));
  strip(c_.product, absMax(c_.product), kLeft, y, cw, kStripH);
  y += kStripH + 6;
  line(tr("④ Σ (q_i ⊙ k_j) = q_i · k_j = %1").arg(num(c_.dot)), false, blue);
  const QString scaled =
      c_.scaled_by_root ? tr("÷ √d_k = ÷ √%1 = ÷ %2").arg(c_.d_k).arg(num(c_.sqrt_dk))
                        : (c_.scale == 1.0 ? tr("no scaling (this family does not divide by √d_k)")
                                           : tr("× %1 (the family's scale)").arg(num(c_.scale)));
  const QString biased = c_.has_bias
                             ? tr(" + relative bias of head %1, bucket %2 of j − i = %3: %4")
                                   .arg(c_.h + 1)
                                   .arg(c_.bucket)
                                   .arg(c_.j - c_.i)
                                   .arg(num(c_.bias))
                             : QString();
  const QString capped =
      c_.softcap > 0.0 ? tr(", soft-capped: %1·tanh(s / %1)").arg(num(c_.softcap)) : QString();
  line(tr("⑤ %1%2%3  →  score = %4    (the trace gives %5 %6)")
           .arg(scaled, biased, capped)
           .arg(num(c_.score))
           .arg(num(c_.stored_score))
           .arg(check(c_.score, c_.stored_score)),
       false, blue);
  if (c_.masked)
    line(tr("⑥ the mask: this cell IS masked — its score is replaced by %1 before the softmax, "
            "so its probability is 0")
             .arg(maskFillText(c_.mask_fill)),
         false, QColor(0xb0, 0x30, 0x20));
  else
    line(tr("⑥ the mask: this cell is not masked — the score goes into the softmax as it is"));
  line(tr("⑦ softmax over row %1: p = e^(s − max) / Σ e^(s − max) = %2 / %3 = %4    (the trace "
          "gives %5 %6)")
           .arg(c_.i + 1)
           .arg(num(c_.exp_cell))
           .arg(num(c_.exp_sum))
           .arg(num(c_.prob))
           .arg(num(c_.stored_prob))
           .arg(check(c_.prob, c_.stored_prob)),
       false, blue);
  // The row as bars, this cell highlighted, masked keys hatched.
  y += 4;
  bars_left_ = kLeft + 40;
  bars_top_ = y;
  bars_h_ = 90;
  bar_w_ = std::clamp((W - 60) / std::max(c_.k_len, 1), 6.0, 60.0);
  p.setFont(small);
  p.setPen(QColor(0x80, 0x80, 0x80));
  p.drawLine(QPointF(bars_left_, y + bars_h_),
             QPointF(bars_left_ + bar_w_ * c_.k_len, y + bars_h_));
  p.drawText(QRectF(kLeft, y - 6, 36, 14), Qt::AlignRight, QStringLiteral("1"));
  p.drawText(QRectF(kLeft, y + bars_h_ - 8, 36, 14), Qt::AlignRight, QStringLiteral("0"));
  for (int x = 0; x < c_.k_len; ++x) {
    const QRectF r = barRect(x);
    if (c_.row_masked[size_t(x)]) {
      const QRectF cell(bars_left_ + x * bar_w_ + 1, y + bars_h_ - 10, bar_w_ - 2, 10);
      p.fillRect(cell, QBrush(QColor(0x90, 0x90, 0x90), Qt::BDiagPattern));
    } else {
      p.fillRect(r, x == c_.j ? QColor(0xff, 0x6f, 0x00) : QColor(0x6a, 0x8c, 0xc8));
    }
    const QString label = x < keys_.size() ? keys_[x] : QString::number(x);
    p.setPen(x == c_.j ? QColor(0xc0, 0x50, 0x00) : text);
    p.save();
    p.translate(bars_left_ + x * bar_w_ + bar_w_ / 2 + 4, y + bars_h_ + 4);
    p.rotate(45);
    p.drawText(QPointF(0, 0), label.left(12));
    p.restore();
  }
  y += bars_h_ + 62;
  // The value vectors weighted by the row, and their sum.
  line(tr("⑧ the head's output for query %1: Σ_j p_ij · v_j — each key's value vector (d_v = %2, "
          "from x·W_V) weighted by its probability")
           .arg(c_.i + 1)
           .arg(c_.d_v));
  const double vs = absMax(c_.values);
  const double rh = 14;
  const double vx = kLeft + 120;
  for (int x = 0; x < c_.k_len; ++x) {
    const double pj = c_.row_probs[size_t(x)];
    p.setFont(small);
    p.setPen(x == c_.j ? QColor(0xc0, 0x50, 0x00) : text);
    const QString label = x < keys_.size() ? keys_[x] : QString::number(x);
    p.drawText(QRectF(kLeft, y, 66, rh), Qt::AlignRight | Qt::AlignVCenter, label.left(10));
    p.fillRect(QRectF(kLeft + 70, y + 2, 44 * pj, rh - 4),
               x == c_.j ? QColor(0xff, 0x6f, 0x00) : QColor(0x6a, 0x8c, 0xc8));
    std::vector<float> row(c_.values.begin() + size_t(x) * c_.d_v,
                           c_.values.begin() + size_t(x + 1) * c_.d_v);
    p.setOpacity(0.25 + 0.75 * std::min(1.0, pj / std::max(1e-9, double(*std::max_element(
                                                                     c_.row_probs.begin(),
                                                                     c_.row_probs.end())))));
    strip(row, vs, vx, y, cw, rh - 1);
    p.setOpacity(1.0);
    y += rh;
  }
  y += 6;
  p.setFont(base);
  p.setPen(blue);
  p.drawText(QRectF(kLeft, y, 110, kStripH), Qt::AlignRight | Qt::AlignVCenter, tr("= output_i"));
  strip(c_.context, absMax(c_.context), vx, y, cw, kStripH);
  y += kStripH + 6;
  p.setFont(small);
  line(
      tr("The heads' outputs are put side by side and go through the output projection W_O; "
         "then come the residual add and the norm."));
  return y + 8;
}

// ---- the view ---------------------------------------------------------------------------------

CellView::CellView(AppState* state, QWidget* parent)
    : View(state, tr("What am I looking at?"), parent) {
  content_ = new QWidget(this);
  auto* h = new QHBoxLayout(content_);
  h->setContentsMargins(0, 0, 0, 0);
  auto* left = new QWidget(content_);
  auto* ll = new QVBoxLayout(left);
  ll->setContentsMargins(0, 0, 0, 0);
  caption_ = new QLabel(left);
  caption_->setWordWrap(true);
  ll->addWidget(caption_);
  map_ = new HeatmapWidget(left);
  map_->setMaxFitCell(44);
  ll->addWidget(map_, 1);
  scroll_ = new QScrollArea(content_);
  scroll_->setWidgetResizable(true);
  scroll_->setFrameShape(QFrame::NoFrame);
  breakdown_ = new CellBreakdownWidget(scroll_);
  scroll_->setWidget(breakdown_);
  h->addWidget(left, 2);
  h->addWidget(scroll_, 3);
  layout_->addWidget(content_, 1);
  connect(map_, &HeatmapWidget::cellClicked, this,
          [this](int row, int col) { selectCell(row, col); });
}

void CellView::selectCell(int i, int j) {
  state_->setCell(i, j);  // every view's cell; refreshes this one through selectionChanged
}

void CellView::refresh() {
  auto snap = state_->snapshot();
  const Model* model = state_->model();
  map_->setColormap(state_->colormap());
  if (!snap || !snap->trace || !model) {
    HeatmapData none;
    none.title = tr("Press Run to see the attention");
    map_->setData(none);
    breakdown_->setBreakdown(nullptr, {}, {}, {});
    caption_->clear();
    explanation_->setHtml(tr("One attention weight taken apart appears here after a run."));
    return;
  }
  const Trace& t = *snap->trace;
  AttentionSelection s = clampSelection(t, state_->selection());
  const bool mean = s.head < 0;
  if (mean) s.head = 0;  // a cell belongs to one head
  const AttentionBlock* a = t.block(s.kind, s.layer);
  if (!a) return;
  // The cell chosen in any view; without one (or outside this block) the last query's strongest
  // key.
  i_ = s.query;
  j_ = s.key;
  if (i_ < 0 || i_ >= a->q_len || j_ < 0 || j_ >= a->k_len) {
    i_ = a->q_len - 1;
    const std::vector<float> r = a->probRow(s.batch, s.head, i_);
    j_ = int(std::max_element(r.begin(), r.end()) - r.begin());
  }
  HeatmapData d =
      attentionHeatmap(t, s, MatrixValues::Probabilities, true, model->config().mask_fill);
  d.highlight_row = i_;
  const QString kv = kvHeadShort(model->config(), s.head);
  d.title = kv.isEmpty() ? tr("Head %1 — click a cell").arg(s.head + 1)
                         : tr("Head %1 (%2) — click a cell").arg(s.head + 1).arg(kv);
  map_->setData(std::move(d));
  caption_->setText(mean ? tr("The mean of the heads has no vectors of its own: head 1 is shown "
                              "([ and ] choose another head).")
                         : QString());
  caption_->setVisible(mean);
  const QStringList keys = keyLabels(t, s.kind, s.batch);
  const QStringList queries = queryLabels(t, s.kind, s.batch);
  try {
    const CellBreakdown c = cellBreakdown(*a, s.batch, s.head, i_, j_, model->loaded(), s.kind);
    breakdown_->setBreakdown(&c, queries.value(i_), keys.value(j_), keys);
  } catch (const Error& e) {
    breakdown_->setBreakdown(nullptr, {}, {}, {});
    caption_->setText(QString::fromStdString(e.what()));
    caption_->show();
  }
  const auto& c = model->config();
  explanation_->setHtml(
      tr("<p style='margin:0'>An attention weight is made in a few steps. The layer's input x "
         "(one row of d_model = %1 numbers per position) is projected into a query, a key and a "
         "value per head: Q = x·W<sub>Q</sub>, K = x·W<sub>K</sub>, V = x·W<sub>V</sub> "
         "(d_k = %2 numbers each). The score of query i and key j is "
         "q<sub>i</sub>·k<sub>j</sub>/√d<sub>k</sub>; "
         "masked cells are replaced by %3; softmax turns row i into probabilities; and the head's "
         "output for query i is those probabilities times the value vectors.</p>"
         "<p style='margin:4px 0 0 0'>Click any cell of the heatmap: every number on the right is "
         "recomputed here from the vectors the trace kept and the model's config, and checked "
         "(✓) against the score and probability the trace gives, from the pass's own scoring "
         "rule and each row's softmax statistics. Shapes: Q %4, K and V %5.</p>%6%7")
          .arg(c.d_model)
          .arg(c.d_k)
          .arg(code(maskFillText(c.mask_fill)))
          .arg(shapeString({t.batch, a->heads, a->q_len, a->d_k}))
          .arg(shapeString({t.batch, c.kvHeads(), a->k_len, a->d_k}))
          .arg(kvHeadText(c, s.head).isEmpty()
                   ? QString()
                   : tr("<p style='margin:4px 0 0 0'>Grouped-query attention: %1, so k<sub>j</sub> "
                        "and v<sub>j</sub> below are that key/value head's.</p>")
                         .arg(kvHeadText(c, s.head)))
          .arg(c.positional == Positional::Rotary && s.kind != AttentionKind::Cross
                   ? tr("<p style='margin:4px 0 0 0'>Rotary positions: q<sub>i</sub> and "
                        "k<sub>j</sub> are shown as the model used them, already turned by their "
                        "positions (the Positional encoding view shows how).</p>")
                   : QString()));
}

}  // namespace attnviz::gui

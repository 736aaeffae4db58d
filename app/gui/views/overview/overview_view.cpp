#include "views/overview/overview_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QScrollArea>
#include <algorithm>

#include "session/attention_data.h"
#include "views/heads/head_stats_view.h"

namespace attnviz::gui {

namespace {

// Row i of the matrix a thumbnail shows, read in place (a long input's matrices are never copied
// whole): one head's probabilities, or their mean at the columns asked for.
class ThumbnailRows {
 public:
  ThumbnailRows(const AttentionBlock& a, int batch, int head)
      : a_(a), batch_(batch), h0_(head < 0 ? 0 : head), h1_(head < 0 ? a.heads : head + 1) {}
  void select(int i) {
    rows_.clear();
    for (int h = h0_; h < h1_; ++h) rows_.push_back(a_.probRow(batch_, h, i));
  }
  float operator[](int j) const {
    if (rows_.size() == 1) return rows_[0][j];
    float sum = 0;
    for (const float* r : rows_) sum += r[j];
    return sum / float(rows_.size());
  }

 private:
  const AttentionBlock& a_;
  const int batch_, h0_, h1_;
  std::vector<const float*> rows_;
};

}  // namespace

void thumbnailRowMaxima(const AttentionBlock& a, int batch, int head, std::vector<float>& maxima) {
  ThumbnailRows row(a, batch, head);
  for (int i = (int)maxima.size(); i < a.q_len; ++i) {
    row.select(i);
    const uint8_t* m = a.maskRow(batch, i);
    float mx = 0;
    for (int j = 0; j < a.k_len; ++j)
      if (!m[j] && row[j] > mx) mx = row[j];
    maxima.push_back(mx);
  }
}

QImage attentionThumbnail(const Trace& trace, const AttentionSelection& s, const Colormap& cmap,
                          int max_px, float vmax) {
  const AttentionBlock* block = trace.block(s.kind, s.layer);
  if (!block || block->q_len == 0) return {};
  const AttentionBlock& a = *block;
  const int w = std::min(a.k_len, max_px), h = std::min(a.q_len, max_px);
  if (vmax <= 0) {
    std::vector<float> maxima;
    thumbnailRowMaxima(a, s.batch, s.head, maxima);
    vmax = *std::max_element(maxima.begin(), maxima.end());
  }
  if (vmax <= 0) vmax = 1;
  QImage img(w, h, QImage::Format_RGB32);
  const QRgb masked = cmap.maskedFill().rgb();
  ThumbnailRows row(a, s.batch, s.head);
  for (int y = 0; y < h; ++y) {
    const int i = int(int64_t(y) * a.q_len / h);
    row.select(i);
    const uint8_t* m = a.maskRow(s.batch, i);
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
    for (int x = 0; x < w; ++x) {
      const int j = int(int64_t(x) * a.k_len / w);
      line[x] = m[j] ? masked : cmap.rgb(row[j] / vmax);
    }
  }
  return img;
}

// ---- OverviewGrid -----------------------------------------------------------------------------

OverviewGrid::OverviewGrid(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void OverviewGrid::setThumbnails(int layers, int heads, std::vector<QImage> thumbs,
                                 const QString& kind) {
  layers_ = layers;
  heads_ = heads;
  thumbs_ = std::move(thumbs);
  kind_ = kind;
  updateGeometry();
  update();
}

void OverviewGrid::setMask(std::vector<uint8_t> mask, int q_len, int k_len, QColor hatch) {
  mask_ = std::move(mask);
  q_len_ = q_len;
  k_len_ = k_len;
  hatch_ = hatch;
  update();
}

void OverviewGrid::setCurrent(int layer, int head) {
  cur_layer_ = layer;
  cur_head_ = head;
  update();
}

OverviewGrid::Geometry OverviewGrid::geometry() const {
  Geometry g;
  const QFontMetrics fm(font());
  g.left = 12 + fm.horizontalAdvance(tr("Layer 88")) + 8;
  g.top = 8 + fm.height() + 6 + fm.height() + 4;
  g.gap = 8;
  const int cols = heads_ + 1, rows = std::max(layers_, 1);
  const int extra_gap = 10;  // between the mean column and head 1
  const int aw = width() - g.left - 12 - cols * g.gap - extra_gap;
  const int ah = height() - g.top - 12 - rows * g.gap;
  g.cell = std::clamp(std::min(aw / std::max(cols, 1), ah / rows), 24, 200);
  return g;
}

QRect OverviewGrid::thumbRect(int layer, int head) const {
  const Geometry g = geometry();
  const int col = head + 1;
  const int x = g.left + col * (g.cell + g.gap) + (col > 0 ? 10 : 0);
  const int y = g.top + layer * (g.cell + g.gap);
  return QRect(x, y, g.cell, g.cell);
}

QSize OverviewGrid::sizeHint() const {
  const QFontMetrics fm(font());
  const int cell = 96;
  return QSize(12 + fm.horizontalAdvance(tr("Layer 88")) + 8 + (heads_ + 1) * (cell + 8) + 22,
               8 + 2 * fm.height() + 10 + std::max(layers_, 1) * (cell + 8) + 12);
}

bool OverviewGrid::hit(QPoint pos, int* layer, int* head) const {
  for (int l = 0; l < layers_; ++l)
    for (int h = -1; h < heads_; ++h)
      if (thumbRect(l, h).contains(pos)) {
        *layer = l;
        *head = h;
        return true;
      }
  return false;
}

void OverviewGrid::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  const QFontMetrics fm(font());
  if (layers_ == 0) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("Press Run to see every layer and head"));
    return;
  }
  const Geometry g = geometry();
  QFont bold = font();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(palette().color(QPalette::Text));
  p.drawText(QPoint(12, 8 + fm.ascent()),
             tr("%1 — layers × heads (click one to open it)").arg(kind_));
  p.setFont(font());
  for (int h = -1; h < heads_; ++h) {
    const QRect r = thumbRect(0, h);
    p.drawText(QRect(r.left() - 4, g.top - fm.height() - 4, r.width() + 8, fm.height()),
               Qt::AlignHCenter | Qt::AlignBottom, h < 0 ? tr("Mean") : tr("Head %1").arg(h + 1));
  }
  for (int l = 0; l < layers_; ++l) {
    const QRect r = thumbRect(l, -1);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(8, r.top(), g.left - 16, r.height()), Qt::AlignRight | Qt::AlignVCenter,
               tr("Layer %1").arg(l + 1));
    for (int h = -1; h < heads_; ++h) {
      const QRect tr_ = thumbRect(l, h);
      const size_t idx = size_t(l) * (heads_ + 1) + size_t(h + 1);
      if (idx < thumbs_.size() && !thumbs_[idx].isNull()) {
        p.setRenderHint(QPainter::SmoothPixmapTransform, thumbs_[idx].width() > tr_.width());
        p.drawImage(tr_, thumbs_[idx]);
        const double cw = double(tr_.width()) / std::max(k_len_, 1);
        const double ch = double(tr_.height()) / std::max(q_len_, 1);
        if (cw >= 4 && ch >= 4 && mask_.size() == size_t(q_len_) * k_len_) {
          const QBrush hatch(hatch_, Qt::BDiagPattern);
          for (int i = 0; i < q_len_; ++i)
            for (int j = 0; j < k_len_; ++j)
              if (mask_[size_t(i) * k_len_ + j])
                p.fillRect(QRectF(tr_.left() + j * cw, tr_.top() + i * ch, cw, ch), hatch);
        }
      }
      p.setPen(QColor(0x90, 0x90, 0x90));
      p.drawRect(tr_.adjusted(0, 0, -1, -1));
      if (l == hover_layer_ && h == hover_head_) {
        p.setPen(QPen(QColor(0x30, 0x30, 0x30), 2));
        p.drawRect(tr_.adjusted(-2, -2, 1, 1));
      }
      if (l == cur_layer_ && h == cur_head_) {
        p.setPen(QPen(QColor(0xff, 0x6f, 0x00), 3));
        p.drawRect(tr_.adjusted(-3, -3, 2, 2));
      }
    }
  }
}

void OverviewGrid::mousePressEvent(QMouseEvent* event) {
  int l, h;
  if (event->button() == Qt::LeftButton && hit(event->position().toPoint(), &l, &h))
    emit thumbnailClicked(l, h);
}

void OverviewGrid::mouseMoveEvent(QMouseEvent* event) {
  int l = -1, h = -2;
  if (!hit(event->position().toPoint(), &l, &h)) l = -1, h = -2;
  if (l != hover_layer_ || h != hover_head_) {
    hover_layer_ = l;
    hover_head_ = h;
    setToolTip(l >= 0 ? (h < 0 ? tr("Layer %1, mean of the heads").arg(l + 1)
                               : tr("Layer %1, head %2").arg(l + 1).arg(h + 1))
                      : QString());
    update();
  }
}

// ---- OverviewView -----------------------------------------------------------------------------

OverviewView::OverviewView(AppState* state, QWidget* parent)
    : View(state, tr("What am I looking at?"), parent) {
  grid_ = new OverviewGrid(this);
  layout_->addWidget(grid_, 1);
  new HeadBadgeOverlay(grid_, state_);  // each head's badge from the head statistics
  connect(grid_, &OverviewGrid::thumbnailClicked, this, [this](int layer, int head) {
    AttentionSelection s = state_->selection();
    s.layer = layer;
    s.head = head;
    state_->setSelection(s);
    emit openView(QStringLiteral("attention"));
  });
}

void OverviewView::refresh() {
  auto snap = state_->snapshot();
  const Model* model = state_->model();
  if (!snap || !snap->trace || !model) {
    thumbnail_key_ = {};
    grid_->setThumbnails(0, 0, {}, {});
    grid_->setMask({}, 0, 0, {});
    explanation_->setHtml(
        tr("Every layer and head of one kind of attention appears here after a run."));
    return;
  }
  const Trace& t = *snap->trace;
  const AttentionSelection sel = clampSelection(t, state_->selection());
  const AttentionBlock* first = t.block(sel.kind, 0);
  if (!first) return;
  const AttentionBlock& a = *first;
  const int layers = t.layers(sel.kind);
  // Every layer's and head's thumbnail: drawn again only for another snapshot, kind, sentence or
  // colormap (a layer or head switch only moves the frame).
  const ThumbnailKey key{snap->id, snap->trace.get(), sel.kind, sel.batch,
                         state_->colormap().name()};
  if (!(key == thumbnail_key_)) {
    thumbnail_key_ = key;
    // The rows each thumbnail's maximum is kept for: all of them for the same snapshot (another
    // colormap), the unchanged rows for a step of the same decoding session, else none.
    RowMaxima& rm = row_maxima_;
    const bool same_matrices = rm.kind == sel.kind && rm.batch == sel.batch && rm.snapshot != 0;
    const int kept = !same_matrices                        ? 0
                     : rm.snapshot == snap->id             ? a.q_len
                     : rm.snapshot != snap->grown_from     ? 0
                     : querySide(sel.kind) == Side::Source ? a.q_len
                                                           : snap->same_target_rows;
    const size_t count = size_t(layers) * size_t(a.heads + 1);
    if (rm.rows.size() != count) rm.rows.assign(count, {});
    rm.snapshot = snap->id;
    rm.kind = sel.kind;
    rm.batch = sel.batch;
    std::vector<QImage> thumbs;
    for (int l = 0; l < layers; ++l)
      for (int h = -1; h < a.heads; ++h) {
        AttentionSelection s = sel;
        s.layer = l;
        s.head = h;
        std::vector<float>& maxima = rm.rows[thumbs.size()];
        maxima.resize(std::min(maxima.size(), size_t(std::max(kept, 0))));
        thumbnailRowMaxima(*t.block(sel.kind, l), sel.batch, h, maxima);
        const float vmax = maxima.empty() ? 0 : *std::max_element(maxima.begin(), maxima.end());
        thumbs.push_back(attentionThumbnail(t, s, state_->colormap(), 160, vmax));
      }
    grid_->setThumbnails(layers, a.heads, std::move(thumbs), kindTitle(sel.kind));
    grid_->setMask(maskMatrix(a, sel.batch), a.q_len, a.k_len, state_->colormap().maskedHatch());
  }
  grid_->setCurrent(sel.layer, sel.head);
  explanation_->setHtml(
      tr("<p style='margin:0'>Each thumbnail is one head's [len_q, len_k] = %1 probability matrix "
         "(rows: queries, columns: keys, as in the Attention view), coloured from 0 to its own "
         "largest value so that every head's pattern shows. The full tensor is "
         "[batch, layers, heads, len_q, len_k] = %2. Heads of one layer run in parallel on "
         "different d_k = %3 slices of the projections, so they can learn different patterns: "
         "a diagonal, the previous token, a word's translation, or the end token.</p>")
          .arg(shapeString({a.q_len, a.k_len}))
          .arg(shapeString({t.batch, layers, a.heads, a.q_len, a.k_len}))
          .arg(model->config().d_k));
}

}  // namespace attnviz::gui

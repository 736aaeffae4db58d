#include "widgets/overview_grid.h"

#include <QMouseEvent>
#include <QPainter>
#include <algorithm>

namespace attnviz::gui {

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

}  // namespace attnviz::gui

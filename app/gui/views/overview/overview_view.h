// The Overview: every layer × head of one kind of attention as labelled thumbnails (plus the
// mean of the heads); clicking one opens it in the Attention view.
#pragma once

#include <QImage>
#include <cstdint>
#include <vector>

#include "views/view.h"

namespace attnviz::gui {

// The thumbnail grid: rows are layers, columns are the mean and the heads.
class OverviewGrid : public QWidget {
  Q_OBJECT
 public:
  explicit OverviewGrid(QWidget* parent = nullptr);
  // thumbs[l * (heads + 1) + h + 1]: the mean at h = -1.
  void setThumbnails(int layers, int heads, std::vector<QImage> thumbs, const QString& kind);
  // The mask shared by every thumbnail ([q_len, k_len], 1 = masked): hatched when cells are big.
  void setMask(std::vector<uint8_t> mask, int q_len, int k_len, QColor hatch);
  void setCurrent(int layer, int head);
  QRect thumbRect(int layer, int head) const;  // head -1 = the mean
  int layers() const { return layers_; }
  int heads() const { return heads_; }
  const std::vector<QImage>& thumbnails() const { return thumbs_; }
  QSize sizeHint() const override;

 signals:
  void thumbnailClicked(int layer, int head);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  struct Geometry {
    int left = 0, top = 0, cell = 0, gap = 0;
  };
  Geometry geometry() const;
  bool hit(QPoint pos, int* layer, int* head) const;
  int layers_ = 0, heads_ = 0;
  std::vector<QImage> thumbs_;
  QString kind_;
  std::vector<uint8_t> mask_;
  int q_len_ = 0, k_len_ = 0;
  QColor hatch_;
  int cur_layer_ = -1, cur_head_ = -2;
  int hover_layer_ = -1, hover_head_ = -2;
};

class OverviewView : public View {
  Q_OBJECT
 public:
  explicit OverviewView(AppState* state, QWidget* parent = nullptr);
  QWidget* exportWidget() override { return grid_; }
  OverviewGrid* grid() const { return grid_; }

 protected:
  void refresh() override;

 private:
  // What the thumbnails on screen were drawn from.
  struct ThumbnailKey {
    uint64_t snapshot = 0;
    const Trace* trace = nullptr;
    AttentionKind kind = AttentionKind::Cross;
    int batch = 0;
    QString colormap;
    bool operator==(const ThumbnailKey&) const = default;
  };
  // Each thumbnail's largest value per row (thumbnailRowMaxima), kept across the steps of a
  // decoding session: a step changes one row of each matrix.
  struct RowMaxima {
    uint64_t snapshot = 0;
    AttentionKind kind = AttentionKind::Cross;
    int batch = -1;
    std::vector<std::vector<float>> rows;  // per thumbnail, in the grid's order
  };
  OverviewGrid* grid_;
  ThumbnailKey thumbnail_key_;
  RowMaxima row_maxima_;
};

// One head's (or the heads' mean when head < 0) probabilities as an image of at most max_px
// pixels a side, each thumbnail scaled to its own maximum (vmax, or when vmax ≤ 0 the largest
// unmasked value of the matrix). Masked cells take the masked colour.
QImage attentionThumbnail(const Trace& trace, const AttentionSelection& s, const Colormap& cmap,
                          int max_px, float vmax = 0);
// The largest unmasked value of each row of that matrix, for the rows after those `maxima` holds
// (appended: a decoding step computes only its new row).
void thumbnailRowMaxima(const AttentionBlock& block, int batch, int head,
                        std::vector<float>& maxima);

}  // namespace attnviz::gui

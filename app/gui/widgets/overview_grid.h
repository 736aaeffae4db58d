// The grid of every layer × head of one kind of attention as thumbnails: rows are layers, columns
// the mean of the heads and each head; the current one outlined, a click reported (the Overview).
#pragma once

#include <QColor>
#include <QImage>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <vector>

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

}  // namespace attnviz::gui

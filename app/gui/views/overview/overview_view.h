// The Overview: every layer × head of one kind of attention as labelled thumbnails (plus the
// mean of the heads); clicking one opens it in the Attention view.
#pragma once

#include <cstdint>
#include <vector>

#include "views/view.h"
#include "widgets/overview_grid.h"

namespace attnviz::gui {

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

}  // namespace attnviz::gui

// Every head's statistics for a snapshot, computed once (model/head_stats.h), and the short badges
// they give the Overview's thumbnails: the Head statistics view and the Overview share them.
#pragma once

#include <QString>
#include <QWidget>
#include <optional>
#include <vector>

#include "model/head_stats.h"
#include "session/app_state.h"
#include "widgets/overview_grid.h"

namespace attnviz::gui {

// A short name for what a head mostly does, for badges: "diag", "prev", "BOS", "EOS", "first",
// "pad" (≥ half of its attention), else for cross-attention "in order" / "reversed" (|τ| ≥ 0.8),
// else "broad" (normalised entropy ≥ 0.85) or "sharp" (≤ 0.25); empty when none applies.
QString headBadge(const HeadStats& s);

// Every head's statistics for sentence b of a snapshot (or only the blocks of `kind`), computed
// once per snapshot, sentence and kind: the Head statistics view and the Overview's badges ask
// again and again as the selection moves.
const std::vector<HeadStats>& snapshotHeadStats(const Snapshot& snap, const ModelConfig& config,
                                                int b,
                                                std::optional<AttentionKind> kind = std::nullopt);

// Paints each head's badge over the Overview's thumbnails (a transparent child of the grid).
class HeadBadgeOverlay : public QWidget {
  Q_OBJECT
 public:
  HeadBadgeOverlay(OverviewGrid* grid, AppState* state);
  QString badge(int layer, int head) const;  // "" when none
  // Marks the badges stale; they are computed when next painted or read (the statistics of a long
  // input take a while: only a visible Overview pays for them).
  void recompute();

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  OverviewGrid* grid_;
  AppState* state_;
  void compute() const;
  mutable bool stale_ = true;
  mutable int layers_ = 0, heads_ = 0;
  mutable std::vector<QString> badges_;  // [layer * heads + head]
};

}  // namespace attnviz::gui

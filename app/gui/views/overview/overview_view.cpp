#include "views/overview/overview_view.h"

#include <QScrollArea>
#include <algorithm>

#include "session/attention_data.h"
#include "views/head_badges.h"
#include "views/thumbnails.h"

namespace attnviz::gui {

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

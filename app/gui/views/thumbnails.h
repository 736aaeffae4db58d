// An attention matrix as a small image, each scaled to its own largest value: the thumbnails of
// the Overview and of the Train view's timeline.
#pragma once

#include <QImage>
#include <vector>

#include "model/trace.h"
#include "session/attention_data.h"
#include "widgets/colormap.h"

namespace attnviz::gui {

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

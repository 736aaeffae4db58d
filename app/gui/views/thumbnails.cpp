#include "views/thumbnails.h"

#include <algorithm>
#include <cstdint>

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
    if (rows_.size() == 1) return rows_[0][size_t(j)];
    float sum = 0;
    for (const std::vector<float>& r : rows_) sum += r[size_t(j)];
    return sum / float(rows_.size());
  }

 private:
  const AttentionBlock& a_;
  const int batch_, h0_, h1_;
  std::vector<std::vector<float>> rows_;
};

}  // namespace

void thumbnailRowMaxima(const AttentionBlock& a, int batch, int head, std::vector<float>& maxima) {
  ThumbnailRows row(a, batch, head);
  for (int i = (int)maxima.size(); i < a.q_len; ++i) {
    row.select(i);
    const std::vector<uint8_t> m = a.maskRow(batch, i);
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
    const std::vector<uint8_t> m = a.maskRow(s.batch, i);
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
    for (int x = 0; x < w; ++x) {
      const int j = int(int64_t(x) * a.k_len / w);
      line[x] = m[j] ? masked : cmap.rgb(row[j] / vmax);
    }
  }
  return img;
}

}  // namespace attnviz::gui

// What a heatmap draws when its matrix is larger than the screen: the cells read on demand, tile
// by tile, from a source that computes them (HeatmapCells), and pooled — each picture element the
// maximum or the mean of f × f cells — so that an 8,192 × 8,192 head is never held whole. Pure
// functions, safe to run off the GUI thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <vector>

namespace attnviz::gui {

// The cells of a heatmap as a source of tiles. Implementations are immutable once handed to a
// heatmap and must be safe to read from several threads at once.
class HeatmapCells {
 public:
  enum class Field {
    Values,  // what is coloured (NaN = no value)
    Probs,   // shown in the tooltip
    Scores,  // raw scores, shown in the tooltip
  };
  virtual ~HeatmapCells() = default;
  virtual int rows() const = 0;
  virtual int cols() const = 0;
  virtual bool has(Field field) const = 0;
  virtual bool hasMask() const = 0;
  // The tile [r0, r1) × [c0, c1), row-major, (r1 − r0) · (c1 − c0) entries. Only fields that
  // has() names; the mask only when hasMask().
  virtual void tile(Field field, int r0, int r1, int c0, int c1, float* out) const = 0;
  virtual void maskTile(int r0, int r1, int c0, int c1, uint8_t* out) const = 0;

  float cell(Field field, int r, int c) const {
    float v = std::numeric_limits<float>::quiet_NaN();
    tile(field, r, r + 1, c, c + 1, &v);
    return v;
  }
  bool masked(int r, int c) const {
    if (!hasMask()) return false;
    uint8_t m = 0;
    maskTile(r, r + 1, c, c + 1, &m);
    return m != 0;
  }
};

enum class Pooling {
  Max,   // each picture element shows the largest of its cells: a single sharp key never vanishes
  Mean,  // the mean of its cells
};

struct PoolRequest {
  int r0 = 0, r1 = 0, c0 = 0, c1 = 0;  // the cells pooled (r0 a multiple of fr, c0 of fc)
  int fr = 1, fc = 1;                  // fr rows × fc columns of cells per picture element
  Pooling pooling = Pooling::Max;
  bool draw_mask = true;   // false: masked cells are pooled by value like the others
  bool mask_only = false;  // a picture of the mask: only the masked fraction counts
  const std::atomic<bool>* cancel = nullptr;  // set: stop soon, the result marked cancelled
};

struct PooledCells {
  int r0 = 0, c0 = 0, r1 = 0, c1 = 0;  // the cells pooled
  int fr = 1, fc = 1;
  int rows = 0, cols = 0;     // picture elements: ceil((r1 − r0) / fr) × ceil((c1 − c0) / fc)
  std::vector<float> value;   // [rows · cols] pooled over the cells drawn by value; NaN: none
  std::vector<float> masked;  // [rows · cols] the fraction of the cells drawn as masked
  // Over every cell pooled that is neither masked (whether drawn so or not) nor NaN nor infinite:
  // the smallest and largest value (lo > hi when there is none). any_masked: a masked cell seen.
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  bool any_masked = false;
  bool cancelled = false;
  // The element of cell (r, c), or −1 when this block does not hold it.
  int64_t indexOf(int r, int c) const {
    if (r < r0 || c < c0 || r >= r1 || c >= c1) return -1;
    return int64_t((r - r0) / fr) * cols + (c - c0) / fc;
  }
  // How many cells element e covers (fewer at the last row and column).
  int cellsOf(int64_t e) const {
    const int pr = int(e / cols), pc = int(e % cols);
    return (std::min(r1, r0 + (pr + 1) * fr) - (r0 + pr * fr)) *
           (std::min(c1, c0 + (pc + 1) * fc) - (c0 + pc * fc));
  }
};

// Reads the request's cells tile by tile (a band of rows at a time, spread over the cores) and
// pools them. Cells drawn as masked — masked with draw_mask, or NaN — do not enter the value; an
// element whose cells are all drawn masked has none (NaN) and masked = 1.
PooledCells poolCells(const HeatmapCells& cells, const PoolRequest& request);

// The same cells pooled kr × kc times coarser, from the pooled elements alone: the maximum of
// their maxima, or the mean of their means weighted by the cells each counted — what poolCells
// gives at fr·kr × fc·kc up to the order of the sums.
PooledCells coarsen(const PooledCells& pooled, int kr, int kc, Pooling pooling);

// The smallest f that brings n cells within max_elements picture elements (at least 1).
int poolFactorFor(int n, int max_elements);

}  // namespace attnviz::gui

#include "widgets/heatmap_pooling.h"

#include <algorithm>
#include <cmath>

#include "compute/thread_pool.h"

namespace attnviz::gui {

namespace {

constexpr int kBandRows = 32;     // cell rows a task reads at least (rounded up to f)
constexpr int kChunkCols = 2048;  // cell columns a tile holds at most (rounded up to f)

ThreadPool& poolingThreads() {
  // Shared by every heatmap; a second render while one runs takes its tasks serially.
  static ThreadPool pool(availableCores());
  return pool;
}

}  // namespace

int poolFactorFor(int n, int max_elements) {
  if (n <= 0 || max_elements <= 0) return 1;
  return std::max(1, (n + max_elements - 1) / max_elements);
}

PooledCells poolCells(const HeatmapCells& cells, const PoolRequest& q) {
  PooledCells out;
  const int f = std::max(1, q.f);
  out.f = f;
  out.r0 = q.r0;
  out.c0 = q.c0;
  const int nr = std::max(0, q.r1 - q.r0), nc = std::max(0, q.c1 - q.c0);
  out.rows = (nr + f - 1) / f;
  out.cols = (nc + f - 1) / f;
  if (out.rows == 0 || out.cols == 0) return out;
  const size_t elements = size_t(out.rows) * out.cols;
  out.value.assign(elements, std::numeric_limits<float>::quiet_NaN());
  out.masked.assign(elements, 0.0f);

  const bool has_mask = cells.hasMask();
  const bool has_values = !q.mask_only && cells.has(HeatmapCells::Field::Values);
  // Each task: `band` pooled rows, every column chunk of them.
  const int band = std::max(1, (kBandRows + f - 1) / f);
  const int chunk = std::max(1, kChunkCols / f) * f;
  const int64_t tasks = (out.rows + band - 1) / band;
  std::vector<double> lo(size_t(tasks), std::numeric_limits<double>::infinity());
  std::vector<double> hi(size_t(tasks), -std::numeric_limits<double>::infinity());
  std::vector<uint8_t> any_masked(size_t(tasks), 0);
  std::atomic<bool> stopped{false};

  poolingThreads().run(tasks, [&](int64_t t) {
    const int pr0 = int(t) * band, pr1 = std::min(out.rows, pr0 + band);
    const int r0 = q.r0 + pr0 * f, r1 = std::min(q.r1, q.r0 + pr1 * f);
    std::vector<float> vals;
    std::vector<uint8_t> mask;
    // Per element of the band's current chunk: the pooled value, the cells counted by value, the
    // cells drawn masked, all cells.
    std::vector<double> acc;
    std::vector<int> counted, drawn_masked, total;
    double tlo = lo[size_t(t)], thi = hi[size_t(t)];
    bool tmasked = false;
    for (int c0 = q.c0; c0 < q.c1; c0 += chunk) {
      if (q.cancel && q.cancel->load(std::memory_order_relaxed)) {
        stopped = true;
        return;
      }
      const int c1 = std::min(q.c1, c0 + chunk);
      const int w = c1 - c0, h = r1 - r0;
      const int pc0 = (c0 - q.c0) / f, pcols = (w + f - 1) / f;
      const size_t n = size_t(w) * h;
      if (has_values) {
        vals.resize(n);
        cells.tile(HeatmapCells::Field::Values, r0, r1, c0, c1, vals.data());
      }
      if (has_mask) {
        mask.resize(n);
        cells.maskTile(r0, r1, c0, c1, mask.data());
      }
      const size_t el = size_t(pr1 - pr0) * pcols;
      acc.assign(el, q.pooling == Pooling::Max ? -std::numeric_limits<double>::infinity() : 0.0);
      counted.assign(el, 0);
      drawn_masked.assign(el, 0);
      total.assign(el, 0);
      for (int i = 0; i < h; ++i) {
        const size_t erow = size_t(i / f) * pcols;
        for (int j = 0; j < w; ++j) {
          const size_t k = size_t(i) * w + j, e = erow + j / f;
          ++total[e];
          const bool is_masked = has_mask && mask[k] != 0;
          tmasked = tmasked || is_masked;
          if (q.mask_only) {
            drawn_masked[e] += is_masked;
            continue;
          }
          const float v = has_values ? vals[k] : std::numeric_limits<float>::quiet_NaN();
          if ((is_masked && q.draw_mask) || std::isnan(v)) {
            ++drawn_masked[e];
            continue;
          }
          if (!is_masked && std::isfinite(v)) {
            tlo = std::min(tlo, double(v));
            thi = std::max(thi, double(v));
          }
          ++counted[e];
          if (q.pooling == Pooling::Max)
            acc[e] = std::max(acc[e], double(v));
          else
            acc[e] += v;
        }
      }
      for (int pr = pr0; pr < pr1; ++pr)
        for (int pc = 0; pc < pcols; ++pc) {
          const size_t e = size_t(pr - pr0) * pcols + pc, o = size_t(pr) * out.cols + pc0 + pc;
          if (counted[e] > 0)
            out.value[o] = float(q.pooling == Pooling::Max ? acc[e] : acc[e] / counted[e]);
          out.masked[o] = total[e] > 0 ? float(drawn_masked[e]) / float(total[e]) : 0.0f;
        }
    }
    lo[size_t(t)] = tlo;
    hi[size_t(t)] = thi;
    any_masked[size_t(t)] = tmasked;
  });
  for (int64_t t = 0; t < tasks; ++t) {
    out.lo = std::min(out.lo, lo[size_t(t)]);
    out.hi = std::max(out.hi, hi[size_t(t)]);
    out.any_masked = out.any_masked || any_masked[size_t(t)];
  }
  out.cancelled = stopped.load();
  return out;
}

}  // namespace attnviz::gui

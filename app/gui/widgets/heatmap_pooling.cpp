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
  const int fr = std::max(1, q.fr), fc = std::max(1, q.fc);
  out.fr = fr;
  out.fc = fc;
  out.r0 = q.r0;
  out.c0 = q.c0;
  out.r1 = std::max(q.r0, q.r1);
  out.c1 = std::max(q.c0, q.c1);
  const int nr = out.r1 - q.r0, nc = out.c1 - q.c0;
  out.rows = (nr + fr - 1) / fr;
  out.cols = (nc + fc - 1) / fc;
  if (out.rows == 0 || out.cols == 0) return out;
  const size_t elements = size_t(out.rows) * out.cols;
  out.value.assign(elements, std::numeric_limits<float>::quiet_NaN());
  out.masked.assign(elements, 0.0f);

  const bool has_mask = cells.hasMask();
  const bool has_values = !q.mask_only && cells.has(HeatmapCells::Field::Values);
  // Each task: `band` pooled rows, every column chunk of them.
  const int band = std::max(1, (kBandRows + fr - 1) / fr);
  const int chunk = std::max(1, kChunkCols / fc) * fc;
  const int64_t tasks = (out.rows + band - 1) / band;
  std::vector<double> lo(size_t(tasks), std::numeric_limits<double>::infinity());
  std::vector<double> hi(size_t(tasks), -std::numeric_limits<double>::infinity());
  std::vector<uint8_t> any_masked(size_t(tasks), 0);
  std::atomic<bool> stopped{false};

  poolingThreads().run(tasks, [&](int64_t t) {
    const int pr0 = int(t) * band, pr1 = std::min(out.rows, pr0 + band);
    const int r0 = q.r0 + pr0 * fr, r1 = std::min(q.r1, q.r0 + pr1 * fr);
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
      const int pc0 = (c0 - q.c0) / fc, pcols = (w + fc - 1) / fc;
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
        const size_t erow = size_t(i / fr) * pcols;
        for (int j = 0; j < w; ++j) {
          const size_t k = size_t(i) * w + j, e = erow + j / fc;
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

PooledCells coarsen(const PooledCells& p, int kr, int kc, Pooling pooling) {
  kr = std::max(1, kr);
  kc = std::max(1, kc);
  PooledCells out;
  out.r0 = p.r0;
  out.c0 = p.c0;
  out.r1 = p.r1;
  out.c1 = p.c1;
  out.fr = p.fr * kr;
  out.fc = p.fc * kc;
  out.rows = (p.rows + kr - 1) / kr;
  out.cols = (p.cols + kc - 1) / kc;
  out.lo = p.lo;
  out.hi = p.hi;
  out.any_masked = p.any_masked;
  out.cancelled = p.cancelled;
  const size_t n = size_t(out.rows) * out.cols;
  out.value.assign(n, std::numeric_limits<float>::quiet_NaN());
  out.masked.assign(n, 0.0f);
  for (int r = 0; r < out.rows; ++r)
    for (int c = 0; c < out.cols; ++c) {
      double acc = pooling == Pooling::Max ? -std::numeric_limits<double>::infinity() : 0.0;
      double counted = 0, drawn_masked = 0, total = 0;
      for (int a = r * kr; a < std::min(p.rows, (r + 1) * kr); ++a)
        for (int b = c * kc; b < std::min(p.cols, (c + 1) * kc); ++b) {
          const int64_t e = int64_t(a) * p.cols + b;
          const double cells = p.cellsOf(e), m = p.masked[size_t(e)];
          total += cells;
          drawn_masked += cells * m;
          const float v = p.value[size_t(e)];
          if (std::isnan(v)) continue;
          const double k = cells * (1.0 - m);  // the cells the element's value counted
          counted += k;
          if (pooling == Pooling::Max)
            acc = std::max(acc, double(v));
          else
            acc += double(v) * k;
        }
      const size_t o = size_t(r) * out.cols + c;
      if (counted > 0) out.value[o] = float(pooling == Pooling::Max ? acc : acc / counted);
      out.masked[o] = total > 0 ? float(drawn_masked / total) : 0.0f;
    }
  return out;
}

}  // namespace attnviz::gui

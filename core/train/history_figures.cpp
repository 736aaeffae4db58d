#include "train/history_figures.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "base/error.h"

namespace attnviz {

namespace {

const Rgba kInk{30, 30, 30, 255}, kGrid{225, 225, 225, 255}, kMuted{120, 120, 120, 255};

// Ten distinct colours (matplotlib's tab10), one per head line.
const Rgba kPalette[] = {{31, 119, 180, 255},  {255, 127, 14, 255},  {44, 160, 44, 255},
                         {214, 39, 40, 255},   {148, 103, 189, 255}, {140, 86, 75, 255},
                         {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255},
                         {23, 190, 207, 255}};

std::string format(const char* f, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string headName(const HeadScore& s) {
  std::string block = s.kind == AttentionKind::EncoderSelf ? "enc " : "";
  return block + "L" + std::to_string(s.layer + 1) + " H" + std::to_string(s.head + 1);
}

// The heads that have an induction score (self-attention), in order.
std::vector<size_t> scoredHeads(const TrainingHistory& h) {
  std::vector<size_t> out;
  const auto& first = h.points.front().induction;
  for (size_t k = 0; k < first.size(); ++k)
    if (first[k].kind != AttentionKind::Cross) out.push_back(k);
  return out;
}

}  // namespace

Crossing firstCrossing(const TrainingHistory& h, double level) {
  for (const HistoryPoint& p : h.points)
    for (const HeadScore& s : p.induction)
      if (!std::isnan(s.value) && s.value >= level) return {p.step, s};
  return {};
}

RgbaImage inductionScorePlot(const TrainingHistory& h) {
  if (h.points.empty()) throw Error(ErrorKind::BadInput, "the history has no checkpoint to plot");
  const int W = 960, H = 560, s = 2;
  const int left = 90, right = 200, top = 90, bottom = 80;
  const int pw = W - left - right, ph = H - top - bottom;
  RgbaImage img(W, H);
  const int first = h.points.front().step, last = std::max(h.points.back().step, first + 1);
  auto X = [&](double step) {
    return left + (int)std::lround((step - first) / (last - first) * pw);
  };
  auto Y = [&](double v) { return top + ph - (int)std::lround(std::clamp(v, 0.0, 1.0) * ph); };
  img.text(left, 16, "Induction score per head during training", kInk, s);
  img.text(left, 42,
           h.index.task + " task, " + h.index.size + ", seed " + std::to_string(h.index.seed),
           kMuted, s);
  img.text(left - 70, top - 24, "induction score", kInk, s);
  // Grid and axes: y 0 … 1 every 0.25, x at about eight round steps.
  for (int k = 0; k <= 4; ++k) {
    const double v = k / 4.0;
    img.line(left, Y(v), left + pw, Y(v), kGrid);
    const std::string label = format("%.2f", v);
    img.text(left - 10 - RgbaImage::textWidth(label, s), Y(v) - 7, label, kInk, s);
  }
  const double raw = (last - first) / 8.0;
  const double mag = std::pow(10.0, std::floor(std::log10(std::max(raw, 1.0))));
  double tick = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      tick = m * mag;
      break;
    }
  for (double v = std::ceil(first / tick) * tick; v <= last + 1e-9; v += tick) {
    img.line(X(v), top, X(v), top + ph, kGrid);
    const std::string label = std::to_string((long long)std::lround(v));
    img.text(X(v) - RgbaImage::textWidth(label, s) / 2, top + ph + 10, label, kInk, s);
  }
  img.line(left, top, left, top + ph, kInk);
  img.line(left, top + ph, left + pw, top + ph, kInk);
  img.text(left + pw / 2 - RgbaImage::textWidth("training step", s) / 2, H - 34, "training step",
           kInk, s);
  for (int x = left; x < left + pw; x += 12) img.line(x, Y(0.5), x + 5, Y(0.5), kMuted);  // 0.5
  const Crossing c = firstCrossing(h);
  if (c.step >= 0) {
    for (int y = top; y < top + ph; y += 10) img.line(X(c.step), y, X(c.step), y + 4, kMuted);
    const std::string label =
        "score " + std::string("\xE2\x89\xA5") + " 0.5 at step " + std::to_string(c.step);
    img.text(std::min(X(c.step) + 8, left + pw - RgbaImage::textWidth(label, s)), top + 8, label,
             kMuted, s);
  }
  const std::vector<size_t> heads = scoredHeads(h);
  for (size_t n = 0; n < heads.size(); ++n) {
    const Rgba colour = kPalette[n % 10];
    const size_t k = heads[n];
    for (size_t i = 0; i + 1 < h.points.size(); ++i) {
      const double a = h.points[i].induction[k].value, b = h.points[i + 1].induction[k].value;
      if (std::isnan(a) || std::isnan(b)) continue;
      img.line(X(h.points[i].step), Y(a), X(h.points[i + 1].step), Y(b), colour, 3);
    }
    if (h.points.size() == 1 && !std::isnan(h.points[0].induction[k].value))
      img.fillRect(X(first) - 3, Y(h.points[0].induction[k].value) - 3, 7, 7, colour);
    // Legend: the heads in order, at most as many as fit.
    const int ly = top + 10 + (int)n * 24;
    if (ly + 14 > top + ph) continue;
    img.fillRect(left + pw + 20, ly + 4, 24, 6, colour);
    img.text(left + pw + 52, ly, headName(h.points.front().induction[k]), kInk, s);
  }
  return img;
}

std::vector<RgbaImage> inductionScoreFrames(const TrainingHistory& h) {
  if (h.points.empty()) throw Error(ErrorKind::BadInput, "the history has no checkpoint to draw");
  const std::vector<size_t> heads = scoredHeads(h);
  // The grid: one row per (kind, layer), one column per head.
  std::vector<std::pair<AttentionKind, int>> rows;
  int columns = 0;
  for (size_t k : heads) {
    const HeadScore& s = h.points.front().induction[k];
    if (rows.empty() || rows.back() != std::make_pair(s.kind, s.layer))
      rows.push_back({s.kind, s.layer});
    columns = std::max(columns, s.head + 1);
  }
  const int s = 2, cell = 84, left = 150, top = 112;
  const int W = std::max(left + columns * cell + 40, 560);
  const int H = top + (int)rows.size() * cell + 110;
  const int last = std::max(h.points.back().step, 1);
  std::vector<RgbaImage> frames;
  for (const HistoryPoint& p : h.points) {
    RgbaImage img(W, H);
    img.text(20, 20, "Induction score per head", kInk, s);
    img.text(20, 52,
             "step " + std::to_string(p.step) + "   probe loss " + format("%.3f", p.probe_loss),
             kInk, s);
    for (int c = 0; c < columns; ++c) {
      const std::string label = "head " + std::to_string(c + 1);
      img.text(left + c * cell + (cell - RgbaImage::textWidth(label, s)) / 2, top - 22, label, kInk,
               s);
    }
    for (size_t r = 0; r < rows.size(); ++r) {
      const std::string label = (rows[r].first == AttentionKind::EncoderSelf ? "enc " : "") +
                                std::string("layer ") + std::to_string(rows[r].second + 1);
      img.text(20, top + (int)r * cell + cell / 2 - 7, label, kInk, s);
    }
    for (size_t k : heads) {
      const HeadScore& sc = p.induction[k];
      size_t r = 0;
      while (rows[r] != std::make_pair(sc.kind, sc.layer)) ++r;
      const int x = left + sc.head * cell, y = top + (int)r * cell;
      const double v = std::isnan(sc.value) ? 0 : std::clamp(sc.value, 0.0, 1.0);
      // White (0) to dark blue (1).
      const Rgba fill{(uint8_t)std::lround(255 - v * (255 - 8)),
                      (uint8_t)std::lround(255 - v * (255 - 48)),
                      (uint8_t)std::lround(255 - v * (255 - 107)), 255};
      img.fillRect(x + 2, y + 2, cell - 4, cell - 4, fill);
      const std::string value = std::isnan(sc.value) ? "-" : format("%.2f", sc.value);
      img.text(x + (cell - RgbaImage::textWidth(value, s)) / 2, y + cell / 2 - 7, value,
               v > 0.5 ? Rgba{255, 255, 255, 255} : kInk, s);
    }
    // The run's progress: a bar from step 0 to the last kept step.
    const int by = H - 50, bw = W - 40;
    img.fillRect(20, by, bw, 10, kGrid);
    img.fillRect(20, by, (int)std::lround((double)p.step / last * bw), 10, kPalette[0]);
    frames.push_back(std::move(img));
  }
  return frames;
}

}  // namespace attnviz

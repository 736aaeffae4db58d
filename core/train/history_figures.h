// Figures of a training history (train/history.h) drawn without a GUI: the induction score of every
// head against the training step (a line chart), and one frame per checkpoint of the heads' scores
// as a grid (layers × heads) for an animated PNG. What `attnviz-cli history --png / --apng` write.
#pragma once

#include <vector>

#include "base/png.h"
#include "train/history.h"

namespace attnviz {

// Induction score (0 … 1) against step, one line per self-attention head, with a legend, the 0.5
// line dashed, and the step where the best head first reaches 0.5 marked. Throws Error(BadInput)
// for a history without points.
RgbaImage inductionScorePlot(const TrainingHistory& history);
// One frame per checkpoint: the step, the probe loss, and a grid of the self-attention heads
// (a row per block, a column per head) shaded by induction score with the value written in.
std::vector<RgbaImage> inductionScoreFrames(const TrainingHistory& history);
// The first step at which some head's induction score reaches `level` (−1: never), and that head.
struct Crossing {
  int step = -1;
  HeadScore head;
};
Crossing firstCrossing(const TrainingHistory& history, double level = 0.5);

}  // namespace attnviz

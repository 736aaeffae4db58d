// A run of the loaded model beside the one the window shows: its inputs and settings as a RunSpec
// (masks, interventions, teacher-forced or decoded), run off the GUI thread by the views that
// compare or explain runs (Before / after, Why this token? and its Patching tab).
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "model/model.h"
#include "session/engine.h"

namespace attnviz::gui {

// One run of a comparison: the inputs and the settings it runs with.
struct RunSpec {
  std::vector<int> src;  // encoder ids (empty without an encoder)
  std::vector<int> tgt;  // decoder positions, teacher-forced (unless decode)
  bool decode = false;   // decode the target greedily from `tgt` (the prefix) under these settings
  MaskOptions masks;
  std::vector<HeadIntervention> interventions;
  bool keep_activations = false;  // the residual stream too (the logit lens, contributions)
};

// The run a snapshot shows, as a spec: its masks and the tokens of its sentence `batch` (the
// selected one of a batch), the target as far as it was fed.
RunSpec currentRunSpec(const Snapshot& snap, int batch);

struct CompareRun {
  std::shared_ptr<const Trace> trace;
  std::vector<int> generated;  // decode: the ids chosen after the prefix (the end token included)
};
CompareRun runComparison(const Model& model, const RunSpec& spec,
                         const std::atomic<bool>* cancel = nullptr);

}  // namespace attnviz::gui

#include "session/run_spec.h"

#include <algorithm>

#include "model/decoding.h"

namespace attnviz::gui {

CompareRun runComparison(const Model& model, const RunSpec& spec, const std::atomic<bool>* cancel) {
  const ModelConfig& c = model.config();
  CompareRun r;
  Inputs in;
  if (c.hasEncoder()) in.src = {spec.src};
  std::vector<int> tgt = spec.tgt;
  if (c.hasDecoder() && spec.decode) {
    DecodingSession::Options o;
    o.masks = spec.masks;
    o.record = false;
    o.interventions = spec.interventions;
    o.cancel = cancel;
    DecodingSession s(model, c.hasCross() ? spec.src : std::vector<int>(), spec.tgt, o);
    r.generated = s.runToEnd();
    tgt = s.targetIds();
  }
  if (c.hasDecoder()) in.tgt = {tgt};
  ForwardOptions o;
  o.masks = spec.masks;
  o.interventions = spec.interventions;
  o.keep_activations = spec.keep_activations;
  o.cancel = cancel;
  r.trace = std::make_shared<const Trace>(model.forward(in, o));
  return r;
}

RunSpec currentRunSpec(const Snapshot& snap, int batch) {
  RunSpec s;
  if (!snap.trace) return s;
  const Trace& t = *snap.trace;
  s.masks = snap.masks;
  if (snap.batch) {
    const int b = std::clamp(batch, 0, std::max(0, t.batch - 1));
    if (b < int(snap.batch_src.size())) s.src = snap.batch_src[size_t(b)];
    if (b < int(snap.batch_tgt.size())) s.tgt = snap.batch_tgt[size_t(b)];
  } else {
    s.src = snap.src_ids;
    if (!t.tgt_ids.empty()) s.tgt = t.tgt_ids[0];
  }
  return s;
}

}  // namespace attnviz::gui

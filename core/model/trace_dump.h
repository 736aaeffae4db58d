// The CLI's `run --dump` and the GUI's NumPy export: a trace written as .npy files and
// tokens.json (docs/formats.md "Dumps").
#pragma once

#include <string>

#include "model/trace.h"

namespace attnviz {

// Writes, for each attention kind the model has, KIND_{scores,mask,probs}.npy [L, H, Tq, Tk]
// (KIND = enc_self, dec_self, cross) and, when the trace kept them, KIND_{q,k,v}.npy
// [L, H, len, d_k or d_v], then logits.npy, class_logits.npy, hidden.npy (those the
// model has) and tokens.json into `dir` (created if missing). A batch of one drops the batch
// axis; a batch adds a leading one. Throws Error(Io).
void dumpTrace(const Trace& trace, const std::string& dir);

}  // namespace attnviz

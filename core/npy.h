// Writing NumPy .npy files (format 1.0) and the CLI/GUI trace dump (docs/formats.md "Dumps").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace.h"

namespace attnviz {

void writeNpy(const std::string& path, const float* data, const Shape& shape);
void writeNpy(const std::string& path, const uint8_t* data, const Shape& shape);

// Writes enc_self_*.npy, dec_self_*.npy, cross_*.npy, logits.npy and tokens.json into `dir`
// (created if missing). A batch of one drops the batch axis. Masks are expanded to
// [L, H, Tq, Tk]. Throws Error(Io).
void dumpTrace(const Trace& trace, const std::string& dir);

}  // namespace attnviz

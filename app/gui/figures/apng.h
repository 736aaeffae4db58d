// Animated PNG (APNG) writing for the GUI: QImage frames handed to the core's encoder
// (core/base/png.h, which `attnviz-cli history --apng` uses too). Every browser animates the
// file; other PNG viewers show its first frame.
#pragma once

#include <QImage>
#include <QString>
#include <vector>

#include "base/png.h"

namespace attnviz::gui {

// Writes `frames` (scaled to the first frame's size) as an APNG that loops forever, each frame
// shown `delay_ms` (the last one `last_delay_ms`, 0 = the same). False with *error set when it
// cannot be written.
bool writeApng(const QString& path, const std::vector<QImage>& frames, int delay_ms,
               int last_delay_ms = 0, QString* error = nullptr);

}  // namespace attnviz::gui

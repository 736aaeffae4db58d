// Animated PNG (APNG) writing: frames encoded by Qt's PNG writer, their image data re-wrapped as
// APNG frame chunks (acTL, fcTL, fdAT). Every browser animates the file; other PNG viewers show
// its first frame.
#pragma once

#include <QImage>
#include <QString>
#include <vector>

namespace attnviz::gui {

// Writes `frames` (converted to one size and format: the first frame's size) as an APNG that
// loops forever, each frame shown `delay_ms` (the last one `last_delay_ms`, 0 = the same).
// False with *error set when it cannot be written.
bool writeApng(const QString& path, const std::vector<QImage>& frames, int delay_ms,
               int last_delay_ms = 0, QString* error = nullptr);

// CRC-32 as PNG chunks use it (ISO 3309, the polynomial 0xEDB88320, reflected).
quint32 pngCrc32(const char* data, qsizetype size, quint32 crc = 0);

}  // namespace attnviz::gui

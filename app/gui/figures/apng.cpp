#include "figures/apng.h"

#include <QFile>
#include <QObject>
#include <cstring>
#include <exception>

namespace attnviz::gui {

bool writeApng(const QString& path, const std::vector<QImage>& frames, int delay_ms,
               int last_delay_ms, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  if (frames.empty()) return fail(QObject::tr("no frames to write"));
  const QSize size = frames.front().size();
  std::vector<RgbaImage> rgba;
  for (const QImage& frame : frames) {
    // One size and format for every frame (8-bit RGBA, rows without padding).
    QImage img = frame.size() == size ? frame : frame.scaled(size);
    img = img.convertToFormat(QImage::Format_RGBA8888);
    RgbaImage out(img.width(), img.height());
    for (int y = 0; y < img.height(); ++y)
      std::memcpy(out.bytes().data() + (size_t)y * img.width() * 4, img.constScanLine(y),
                  (size_t)img.width() * 4);
    rgba.push_back(std::move(out));
  }
  std::string bytes;
  try {
    bytes = encodeApng(rgba, delay_ms, last_delay_ms);
  } catch (const std::exception& e) {
    return fail(QString::fromUtf8(e.what()));
  }
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly) ||
      file.write(bytes.data(), qint64(bytes.size())) != qint64(bytes.size()))
    return fail(QObject::tr("could not write %1").arg(path));
  return true;
}

}  // namespace attnviz::gui

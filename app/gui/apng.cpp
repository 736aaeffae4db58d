#include "apng.h"

#include <QBuffer>
#include <QFile>
#include <QtEndian>
#include <algorithm>
#include <array>
#include <cstring>

namespace attnviz::gui {

namespace {

struct Chunk {
  QByteArray type;  // four letters
  QByteArray data;
};

// The chunks of one PNG file (after its 8-byte signature).
bool parsePng(const QByteArray& png, std::vector<Chunk>* out) {
  static const char kSignature[] = "\x89PNG\r\n\x1a\n";
  if (png.size() < 8 || memcmp(png.constData(), kSignature, 8) != 0) return false;
  qsizetype at = 8;
  while (at + 12 <= png.size()) {
    const quint32 len = qFromBigEndian<quint32>(png.constData() + at);
    if (at + 12 + qsizetype(len) > png.size()) return false;
    out->push_back({png.mid(at + 4, 4), png.mid(at + 8, len)});
    at += 12 + len;
  }
  return at == png.size();
}

void putU32(QByteArray& b, quint32 v) {
  char buf[4];
  qToBigEndian(v, buf);
  b.append(buf, 4);
}

void putU16(QByteArray& b, quint16 v) {
  char buf[2];
  qToBigEndian(v, buf);
  b.append(buf, 2);
}

void writeChunk(QByteArray& out, const char* type, const QByteArray& data) {
  putU32(out, quint32(data.size()));
  QByteArray body(type, 4);
  body += data;
  out += body;
  putU32(out, pngCrc32(body.constData(), body.size()));
}

}  // namespace

quint32 pngCrc32(const char* data, qsizetype size, quint32 crc) {
  static const std::array<quint32, 256> table = [] {
    std::array<quint32, 256> t{};
    for (quint32 n = 0; n < 256; ++n) {
      quint32 c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (qsizetype i = 0; i < size; ++i) crc = table[(crc ^ quint8(data[i])) & 0xff] ^ (crc >> 8);
  return ~crc;
}

bool writeApng(const QString& path, const std::vector<QImage>& frames, int delay_ms,
               int last_delay_ms, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  if (frames.empty()) return fail(QStringLiteral("no frames to write"));
  const QSize size = frames.front().size();
  QByteArray ihdr;
  std::vector<QByteArray> image_data;  // each frame's IDAT payloads, concatenated
  for (const QImage& frame : frames) {
    // One format for every frame, so that one IHDR describes them all (colour type 2, 8 bits).
    QImage img = frame.size() == size ? frame : frame.scaled(size);
    img = img.convertToFormat(QImage::Format_RGB888);
    img.setDevicePixelRatio(1);
    QByteArray png;
    QBuffer buf(&png);
    buf.open(QIODevice::WriteOnly);
    if (!img.save(&buf, "PNG")) return fail(QStringLiteral("could not encode a frame as PNG"));
    std::vector<Chunk> chunks;
    if (!parsePng(png, &chunks)) return fail(QStringLiteral("Qt wrote an unreadable PNG"));
    QByteArray data;
    for (const Chunk& c : chunks) {
      if (c.type == "IHDR") {
        if (ihdr.isEmpty()) ihdr = c.data;
        if (c.data != ihdr) return fail(QStringLiteral("frames differ in size or colour type"));
      } else if (c.type == "IDAT") {
        data += c.data;
      }
    }
    image_data.push_back(std::move(data));
  }

  QByteArray out("\x89PNG\r\n\x1a\n", 8);
  writeChunk(out, "IHDR", ihdr);
  QByteArray actl;
  putU32(actl, quint32(frames.size()));  // num_frames
  putU32(actl, 0);                       // num_plays: 0 = loop forever
  writeChunk(out, "acTL", actl);
  quint32 seq = 0;
  for (size_t f = 0; f < image_data.size(); ++f) {
    const int ms = f + 1 == image_data.size() && last_delay_ms > 0 ? last_delay_ms : delay_ms;
    QByteArray fctl;
    putU32(fctl, seq++);
    putU32(fctl, quint32(size.width()));
    putU32(fctl, quint32(size.height()));
    putU32(fctl, 0);                                  // x offset
    putU32(fctl, 0);                                  // y offset
    putU16(fctl, quint16(std::clamp(ms, 1, 65535)));  // delay = ms / 1000 s
    putU16(fctl, 1000);
    fctl.append(char(0));  // dispose_op: none
    fctl.append(char(0));  // blend_op: source
    writeChunk(out, "fcTL", fctl);
    if (f == 0) {
      writeChunk(out, "IDAT", image_data[f]);  // the default image is the first frame
    } else {
      QByteArray fdat;
      putU32(fdat, seq++);
      fdat += image_data[f];
      writeChunk(out, "fdAT", fdat);
    }
  }
  writeChunk(out, "IEND", {});

  QFile file(path);
  if (!file.open(QIODevice::WriteOnly) || file.write(out) != out.size())
    return fail(QStringLiteral("could not write %1").arg(path));
  return true;
}

}  // namespace attnviz::gui

#include "base/png.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

#include "base/error.h"

namespace attnviz {

namespace {

// The 5×7 font: seven rows of five dots per glyph, '#' = ink.
const std::map<char, std::array<const char*, 7>>& font() {
  static const std::map<char, std::array<const char*, 7>> f = {
      {'A', {".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"}},
      {'B', {"####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."}},
      {'C', {".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."}},
      {'D', {"####.", "#...#", "#...#", "#...#", "#...#", "#...#", "####."}},
      {'E', {"#####", "#....", "#....", "####.", "#....", "#....", "#####"}},
      {'F', {"#####", "#....", "#....", "####.", "#....", "#....", "#...."}},
      {'G', {".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"}},
      {'H', {"#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"}},
      {'I', {".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."}},
      {'J', {"..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."}},
      {'K', {"#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"}},
      {'L', {"#....", "#....", "#....", "#....", "#....", "#....", "#####"}},
      {'M', {"#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"}},
      {'N', {"#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"}},
      {'O', {".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."}},
      {'P', {"####.", "#...#", "#...#", "####.", "#....", "#....", "#...."}},
      {'Q', {".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"}},
      {'R', {"####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"}},
      {'S', {".####", "#....", "#....", ".###.", "....#", "....#", "####."}},
      {'T', {"#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."}},
      {'U', {"#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."}},
      {'V', {"#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."}},
      {'W', {"#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."}},
      {'X', {"#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"}},
      {'Y', {"#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."}},
      {'Z', {"#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"}},
      {'0', {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."}},
      {'1', {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."}},
      {'2', {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"}},
      {'3', {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."}},
      {'4', {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."}},
      {'5', {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."}},
      {'6', {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."}},
      {'7', {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."}},
      {'8', {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."}},
      {'9', {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."}},
      {' ', {".....", ".....", ".....", ".....", ".....", ".....", "....."}},
      {'.', {".....", ".....", ".....", ".....", ".....", ".##..", ".##.."}},
      {',', {".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."}},
      {':', {".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."}},
      {';', {".....", ".##..", ".##..", ".....", ".##..", "..#..", ".#..."}},
      {'-', {".....", ".....", ".....", "#####", ".....", ".....", "....."}},
      {'+', {".....", "..#..", "..#..", "#####", "..#..", "..#..", "....."}},
      {'/', {".....", "....#", "...#.", "..#..", ".#...", "#....", "....."}},
      {'(', {"...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."}},
      {')', {".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."}},
      {'%', {"##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##"}},
      {'=', {".....", ".....", "#####", ".....", "#####", ".....", "....."}},
      {'_', {".....", ".....", ".....", ".....", ".....", ".....", "#####"}},
      {'\'', {"..#..", "..#..", ".#...", ".....", ".....", ".....", "....."}},
      {'#', {".#.#.", ".#.#.", "#####", ".#.#.", "#####", ".#.#.", ".#.#."}},
      {'<', {"...#.", "..#..", ".#...", "#....", ".#...", "..#..", "...#."}},
      {'>', {".#...", "..#..", "...#.", "....#", "...#.", "..#..", ".#..."}},
      {'\x01', {"..#..", ".#...", "#....", ".#...", "..#..", ".....", "#####"}},  // ≤
      {'\x02', {"..#..", "...#.", "....#", "...#.", "..#..", ".....", "#####"}},  // ≥
      {'\x03', {"#####", "#...#", "#...#", "#...#", "#...#", "#...#", "#####"}},  // unknown
  };
  return f;
}

// The glyphs of a UTF-8 string: ASCII upper-cased; ≤ ≥ as themselves; anything else a box.
std::string glyphs(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = (unsigned char)s[i];
    if (c < 0x80) {
      out += (char)std::toupper(c);
      ++i;
      continue;
    }
    const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    const std::string cp = s.substr(i, n);
    out += cp == "\xE2\x89\xA4" ? '\x01' : cp == "\xE2\x89\xA5" ? '\x02' : '\x03';
    i += n;
  }
  return out;
}

void putU32(std::string& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b += (char)((v >> s) & 0xff);
}

void putU16(std::string& b, uint16_t v) {
  b += (char)(v >> 8);
  b += (char)(v & 0xff);
}

void writeChunk(std::string& out, const char* type, const std::string& data) {
  putU32(out, (uint32_t)data.size());
  std::string body(type, 4);
  body += data;
  out += body;
  putU32(out, pngCrc32(body.data(), body.size()));
}

std::string header(const RgbaImage& image) {
  std::string ihdr;
  putU32(ihdr, (uint32_t)image.width());
  putU32(ihdr, (uint32_t)image.height());
  ihdr += (char)8;  // bits per channel
  ihdr += (char)6;  // colour type: RGBA
  ihdr += (char)0;  // deflate
  ihdr += (char)0;  // no filter method but the standard one
  ihdr += (char)0;  // no interlace
  return ihdr;
}

// The zlib stream of the image's rows, each with filter type 0 (none) or 1 (sub) — the smaller.
std::string imageData(const RgbaImage& image) {
  const size_t row = (size_t)image.width() * 4;
  std::string raw;
  raw.reserve((row + 1) * (size_t)image.height());
  std::string sub(row, '\0');
  for (int y = 0; y < image.height(); ++y) {
    const uint8_t* p = image.bytes().data() + (size_t)y * row;
    int64_t plain = 0, diff = 0;
    for (size_t i = 0; i < row; ++i) {
      sub[i] = (char)(uint8_t)(p[i] - (i >= 4 ? p[i - 4] : 0));
      plain += p[i] < 128 ? p[i] : 256 - p[i];
      diff += (uint8_t)sub[i] < 128 ? (uint8_t)sub[i] : 256 - (uint8_t)sub[i];
    }
    if (diff < plain) {
      raw += (char)1;
      raw += sub;
    } else {
      raw += (char)0;
      raw.append((const char*)p, row);
    }
  }
  uLongf size = compressBound((uLong)raw.size());
  std::string out(size, '\0');
  if (compress2((Bytef*)out.data(), &size, (const Bytef*)raw.data(), (uLong)raw.size(), 9) != Z_OK)
    throw Error(ErrorKind::BadInput, "PNG: zlib could not compress the image");
  out.resize(size);
  return out;
}

}  // namespace

uint32_t pngCrc32(const void* data, size_t size, uint32_t crc) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[n] = c;
    }
    return t;
  }();
  const uint8_t* p = (const uint8_t*)data;
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

RgbaImage::RgbaImage(int width, int height, Rgba fill) : width_(width), height_(height) {
  if (width < 0 || height < 0 || (int64_t)width * height > (int64_t)1 << 28)
    throw Error(ErrorKind::BadInput, "an image of " + std::to_string(width) + " × " +
                                         std::to_string(height) + " pixels is not drawn");
  bytes_.resize((size_t)width * height * 4);
  for (size_t i = 0; i < bytes_.size(); i += 4) {
    bytes_[i] = fill.r;
    bytes_[i + 1] = fill.g;
    bytes_[i + 2] = fill.b;
    bytes_[i + 3] = fill.a;
  }
}

Rgba RgbaImage::pixel(int x, int y) const {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return {0, 0, 0, 0};
  const uint8_t* p = bytes_.data() + ((size_t)y * width_ + x) * 4;
  return {p[0], p[1], p[2], p[3]};
}

void RgbaImage::set(int x, int y, Rgba c) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  uint8_t* p = bytes_.data() + ((size_t)y * width_ + x) * 4;
  p[0] = c.r;
  p[1] = c.g;
  p[2] = c.b;
  p[3] = c.a;
}

void RgbaImage::fillRect(int x, int y, int w, int h, Rgba c) {
  const int x0 = std::max(x, 0), y0 = std::max(y, 0);
  const int x1 = std::min(x + w, width_), y1 = std::min(y + h, height_);
  for (int yy = y0; yy < y1; ++yy)
    for (int xx = x0; xx < x1; ++xx) set(xx, yy, c);
}

void RgbaImage::line(int x0, int y0, int x1, int y1, Rgba c, int thickness) {
  // Bresenham's line, each point a square of the thickness.
  const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0);
  const int sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
  int err = dx + dy;
  const int half = (thickness - 1) / 2;
  for (;;) {
    fillRect(x0 - half, y0 - half, thickness, thickness, c);
    if (x0 == x1 && y0 == y1) break;
    const int e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      x0 += sx;
    }
    if (e2 <= dx) {
      err += dx;
      y0 += sy;
    }
  }
}

int RgbaImage::textWidth(const std::string& s, int scale) {
  const size_t n = glyphs(s).size();
  return n ? (int)(n * 6 - 1) * scale : 0;
}

int RgbaImage::text(int x, int y, const std::string& s, Rgba c, int scale) {
  const auto& f = font();
  int at = x;
  for (char g : glyphs(s)) {
    auto it = f.find(g);
    if (it == f.end()) it = f.find('\x03');
    for (int r = 0; r < 7; ++r)
      for (int k = 0; k < 5; ++k)
        if (it->second[(size_t)r][k] == '#')
          fillRect(at + k * scale, y + r * scale, scale, scale, c);
    at += 6 * scale;
  }
  return at - x;
}

std::string encodePng(const RgbaImage& image) {
  if (image.width() == 0 || image.height() == 0)
    throw Error(ErrorKind::BadInput, "PNG: the image is empty");
  std::string out("\x89PNG\r\n\x1a\n", 8);
  writeChunk(out, "IHDR", header(image));
  writeChunk(out, "IDAT", imageData(image));
  writeChunk(out, "IEND", {});
  return out;
}

std::string encodeApng(const std::vector<RgbaImage>& frames, int delay_ms, int last_delay_ms) {
  if (frames.empty()) throw Error(ErrorKind::BadInput, "APNG: no frames to write");
  const RgbaImage& first = frames.front();
  if (first.width() == 0 || first.height() == 0)
    throw Error(ErrorKind::BadInput, "APNG: the first frame is empty");
  for (const RgbaImage& f : frames)
    if (f.width() != first.width() || f.height() != first.height())
      throw Error(ErrorKind::BadInput, "APNG: the frames differ in size");
  std::string out("\x89PNG\r\n\x1a\n", 8);
  writeChunk(out, "IHDR", header(first));
  std::string actl;
  putU32(actl, (uint32_t)frames.size());  // num_frames
  putU32(actl, 0);                        // num_plays: 0 = loop forever
  writeChunk(out, "acTL", actl);
  uint32_t seq = 0;
  for (size_t f = 0; f < frames.size(); ++f) {
    const int ms = f + 1 == frames.size() && last_delay_ms > 0 ? last_delay_ms : delay_ms;
    std::string fctl;
    putU32(fctl, seq++);
    putU32(fctl, (uint32_t)first.width());
    putU32(fctl, (uint32_t)first.height());
    putU32(fctl, 0);                                   // x offset
    putU32(fctl, 0);                                   // y offset
    putU16(fctl, (uint16_t)std::clamp(ms, 1, 65535));  // delay = ms / 1000 s
    putU16(fctl, 1000);
    fctl += (char)0;  // dispose_op: none
    fctl += (char)0;  // blend_op: source
    writeChunk(out, "fcTL", fctl);
    const std::string data = imageData(frames[f]);
    if (f == 0) {
      writeChunk(out, "IDAT", data);  // the default image is the first frame
    } else {
      std::string fdat;
      putU32(fdat, seq++);
      fdat += data;
      writeChunk(out, "fdAT", fdat);
    }
  }
  writeChunk(out, "IEND", {});
  return out;
}

}  // namespace attnviz

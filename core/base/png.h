// PNG and animated PNG (APNG) encoding of RGBA images (zlib's deflate), and a small raster to draw
// figures on without a GUI toolkit: rectangles, lines and text in a 5×7 pixel font. What the CLI's
// figures are made of; the GUI's APNG export (app/gui/figures/apng.h) encodes its frames here too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attnviz {

struct Rgba {
  uint8_t r = 0, g = 0, b = 0, a = 255;
};

// An image: [height, width] pixels, 4 bytes each (R, G, B, A), rows top to bottom.
class RgbaImage {
 public:
  RgbaImage() = default;
  RgbaImage(int width, int height, Rgba fill = {255, 255, 255, 255});
  int width() const { return width_; }
  int height() const { return height_; }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t>& bytes() { return bytes_; }
  Rgba pixel(int x, int y) const;

  // Drawing, clipped to the image.
  void set(int x, int y, Rgba c);
  void fillRect(int x, int y, int w, int h, Rgba c);
  void line(int x0, int y0, int x1, int y1, Rgba c, int thickness = 1);
  // Text in the 5×7 font (letters drawn upper-case; digits, space and . , : ; - + / ( ) % = _ ' #
  // < > ≥ as themselves, anything else as a box), each dot `scale` pixels, 1 dot between letters;
  // (x, y) is the top left corner. Returns the width drawn.
  int text(int x, int y, const std::string& s, Rgba c, int scale = 2);
  static int textWidth(const std::string& s, int scale = 2);
  static int textHeight(int scale = 2) { return 7 * scale; }

 private:
  int width_ = 0, height_ = 0;
  std::vector<uint8_t> bytes_;
};

// A PNG file (8-bit RGBA, no interlace). Throws Error(BadInput) for an empty image.
std::string encodePng(const RgbaImage& image);
// An animated PNG that loops forever, each frame shown `delay_ms` (the last `last_delay_ms`,
// 0 = the same); every browser animates it, other viewers show the first frame. Frames must have
// the first frame's size. Throws Error(BadInput) for no frames or frames of different sizes.
std::string encodeApng(const std::vector<RgbaImage>& frames, int delay_ms, int last_delay_ms = 0);
// CRC-32 as PNG chunks use it (ISO 3309, the polynomial 0xEDB88320, reflected).
uint32_t pngCrc32(const void* data, size_t size, uint32_t crc = 0);

}  // namespace attnviz

#include "widgets/colormap.h"

#include <algorithm>
#include <cmath>

namespace attnviz::gui {

namespace {

// matplotlib _cm_listed.py (CC0, van der Walt & Smith), entries 0, 16, 32, …, 240 and 255.
const std::vector<std::array<float, 3>> kViridis = {
    {0.267004f, 0.004874f, 0.329415f}, {0.282327f, 0.094955f, 0.417331f},
    {0.278826f, 0.175490f, 0.483397f}, {0.258965f, 0.251537f, 0.524736f},
    {0.229739f, 0.322361f, 0.545706f}, {0.199430f, 0.387607f, 0.554642f},
    {0.172719f, 0.448791f, 0.557885f}, {0.149039f, 0.508051f, 0.557250f},
    {0.127568f, 0.566949f, 0.550556f}, {0.120638f, 0.625828f, 0.533488f},
    {0.157851f, 0.683765f, 0.501686f}, {0.246070f, 0.738910f, 0.452024f},
    {0.369214f, 0.788888f, 0.382914f}, {0.515992f, 0.831158f, 0.294279f},
    {0.678489f, 0.863742f, 0.189503f}, {0.845561f, 0.887322f, 0.099702f},
    {0.993248f, 0.906157f, 0.143936f}};

const std::vector<std::array<float, 3>> kMagma = {
    {0.001462f, 0.000466f, 0.013866f}, {0.039608f, 0.031090f, 0.133515f},
    {0.113094f, 0.065492f, 0.276784f}, {0.211718f, 0.061992f, 0.418647f},
    {0.316654f, 0.071690f, 0.485380f}, {0.414709f, 0.110431f, 0.504662f},
    {0.512831f, 0.148179f, 0.507648f}, {0.613617f, 0.181811f, 0.498536f},
    {0.716387f, 0.214982f, 0.475290f}, {0.816914f, 0.255895f, 0.436461f},
    {0.904281f, 0.319610f, 0.388137f}, {0.960949f, 0.418323f, 0.359630f},
    {0.986700f, 0.535582f, 0.382210f}, {0.996096f, 0.653659f, 0.446213f},
    {0.996898f, 0.769591f, 0.534892f}, {0.992440f, 0.884330f, 0.640099f},
    {0.987053f, 0.991438f, 0.749504f}};

std::array<float, 3> hex(unsigned v) {
  return {((v >> 16) & 0xff) / 255.0f, ((v >> 8) & 0xff) / 255.0f, (v & 0xff) / 255.0f};
}

// ColorBrewer 9-class sequential schemes (Cynthia Brewer, Penn State), light to dark.
std::vector<std::array<float, 3>> hexStops(std::initializer_list<unsigned> values) {
  std::vector<std::array<float, 3>> out;
  for (unsigned v : values) out.push_back(hex(v));
  return out;
}

// The sampled tables hold entries 0, 16, …, 240 of 256 (at t = 16k/255) and entry 255 (at t = 1):
// the last gap is shorter, so the positions are given explicitly.
std::vector<double> sampledPositions(size_t n) {
  std::vector<double> pos(n);
  for (size_t i = 0; i + 1 < n; ++i) pos[i] = 16.0 * i / 255.0;
  pos[n - 1] = 1.0;
  return pos;
}

}  // namespace

Colormap::Colormap(QString name, std::vector<std::array<float, 3>> stops, QColor masked_fill,
                   QColor masked_hatch)
    : name_(std::move(name)), masked_fill_(masked_fill), masked_hatch_(masked_hatch) {
  const bool sampled = (name_ == "viridis" || name_ == "magma");
  std::vector<double> pos;
  if (sampled) {
    pos = sampledPositions(stops.size());
  } else {
    pos.resize(stops.size());
    for (size_t i = 0; i < stops.size(); ++i) pos[i] = double(i) / double(stops.size() - 1);
  }
  lut_.resize(kLutSize);
  size_t seg = 0;
  for (int k = 0; k < kLutSize; ++k) {
    const double t = double(k) / (kLutSize - 1);
    while (seg + 2 < pos.size() && t > pos[seg + 1]) ++seg;
    const double span = pos[seg + 1] - pos[seg];
    const double f = std::clamp(span > 0 ? (t - pos[seg]) / span : 0.0, 0.0, 1.0);
    int rgb[3];
    for (int c = 0; c < 3; ++c) {
      const double v = stops[seg][c] + f * (stops[seg + 1][c] - stops[seg][c]);
      rgb[c] = std::clamp(int(std::lround(v * 255.0)), 0, 255);
    }
    lut_[k] = qRgb(rgb[0], rgb[1], rgb[2]);
  }
}

int Colormap::index(double t) const {
  if (!(t >= 0.0)) return 0;  // also NaN
  if (t >= 1.0) return kLutSize - 1;
  return int(t * (kLutSize - 1) + 0.5);
}

QColor Colormap::color(double t) const {
  if (std::isnan(t)) return masked_fill_;
  return QColor::fromRgb(rgb(t));
}

QColor Colormap::textOn(double t) const {
  const QColor c = color(t);
  const double luminance = 0.2126 * c.redF() + 0.7152 * c.greenF() + 0.0722 * c.blueF();
  return luminance > 0.45 ? QColor(Qt::black) : QColor(Qt::white);
}

const Colormap& Colormap::viridis() {
  static const Colormap m("viridis", kViridis, QColor(0xd6, 0xd6, 0xd6), QColor(0x8a, 0x8a, 0x8a));
  return m;
}

const Colormap& Colormap::magma() {
  static const Colormap m("magma", kMagma, QColor(0xc9, 0xdc, 0xd3), QColor(0x6f, 0x8f, 0x80));
  return m;
}

const Colormap& Colormap::greys() {
  static const Colormap m("greys",
                          hexStops({0xffffff, 0xf0f0f0, 0xd9d9d9, 0xbdbdbd, 0x969696, 0x737373,
                                    0x525252, 0x252525, 0x000000}),
                          QColor(0xf3, 0xc9, 0xc4), QColor(0xc0, 0x39, 0x2b));
  return m;
}

const Colormap& Colormap::blues() {
  static const Colormap m("blues",
                          hexStops({0xf7fbff, 0xdeebf7, 0xc6dbef, 0x9ecae1, 0x6baed6, 0x4292c6,
                                    0x2171b5, 0x08519c, 0x08306b}),
                          QColor(0xf3, 0xc9, 0xc4), QColor(0xc0, 0x39, 0x2b));
  return m;
}

const Colormap& Colormap::rdbu() {
  // ColorBrewer RdBu (11 classes), reversed so that negative values are blue.
  static const Colormap m("rdbu",
                          hexStops({0x053061, 0x2166ac, 0x4393c3, 0x92c5de, 0xd1e5f0, 0xf7f7f7,
                                    0xfddbc7, 0xf4a582, 0xd6604d, 0xb2182b, 0x67001f}),
                          QColor(0xd6, 0xd6, 0xd6), QColor(0x8a, 0x8a, 0x8a));
  return m;
}

QStringList Colormap::names() {
  return {"viridis", "magma", "blues", "greys"};
}

const Colormap& Colormap::byName(const QString& name) {
  const QString n = name.toLower();
  if (n == "magma") return magma();
  if (n == "greys" || n == "grays") return greys();
  if (n == "blues") return blues();
  if (n == "rdbu") return rdbu();
  return viridis();
}

}  // namespace attnviz::gui

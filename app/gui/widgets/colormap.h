// Colormaps for heatmaps: viridis and magma from matplotlib's published tables, ColorBrewer's
// Greys and Blues, and RdBu for signed values; masked cells get a colour outside each map.
#pragma once

#include <QColor>
#include <QString>
#include <QStringList>
#include <array>
#include <vector>

namespace attnviz::gui {

class Colormap {
 public:
  // `stops`: RGB control points in [0, 1], evenly spaced from t = 0 to t = 1.
  Colormap(QString name, std::vector<std::array<float, 3>> stops, QColor masked_fill,
           QColor masked_hatch);

  const QString& name() const { return name_; }
  // t in [0, 1] (clamped; NaN gives the masked colour).
  QColor color(double t) const;
  QRgb rgb(double t) const { return lut_[index(t)]; }
  QColor bottom() const { return QColor::fromRgb(lut_.front()); }
  QColor top() const { return QColor::fromRgb(lut_.back()); }
  // Masked cells are filled with masked_fill and hatched with masked_hatch: neither occurs in the
  // map itself, so a masked cell never looks like a 0-probability cell.
  QColor maskedFill() const { return masked_fill_; }
  QColor maskedHatch() const { return masked_hatch_; }
  // Black or white, whichever reads better on colour(t).
  QColor textOn(double t) const;

  static const Colormap& byName(const QString& name);  // unknown names give viridis
  static QStringList names();                          // the sequential maps offered to users
  static const Colormap& viridis();
  static const Colormap& magma();
  static const Colormap& greys();
  static const Colormap& blues();
  static const Colormap& rdbu();  // diverging: blue (low) – white – red (high)

  static constexpr int kLutSize = 1024;

 private:
  int index(double t) const;
  QString name_;
  std::vector<QRgb> lut_;  // kLutSize entries
  QColor masked_fill_, masked_hatch_;
};

}  // namespace attnviz::gui

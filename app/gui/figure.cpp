#include "figure.h"

#include <QFileInfo>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <algorithm>
#include <cmath>

#include "view.h"

namespace attnviz::gui {

namespace {

constexpr int kMargin = 12;

struct TitleBlock {
  QStringList lines;
  QFont first, rest;
  int height = 0;
  int width = 0;
};

TitleBlock titleBlock(View* view, const FigureOptions& o) {
  TitleBlock t;
  t.rest = view->font();
  t.first = view->font();
  t.first.setBold(true);
  t.first.setPointSizeF(t.first.pointSizeF() * 1.15);
  if (!o.title) return t;
  t.lines = view->figureTitle();
  for (int k = 0; k < t.lines.size(); ++k) {
    const QFontMetrics fm(k == 0 ? t.first : t.rest);
    t.height += fm.height() + 2;
    t.width = std::max(t.width, fm.horizontalAdvance(t.lines[k]));
  }
  if (!t.lines.isEmpty()) t.height += 8;
  return t;
}

QSize requested(View* view, const FigureOptions& o, const TitleBlock& t) {
  if (o.size.isValid() && !o.size.isEmpty()) return o.size;
  const QSize screen = view->exportWidget()->size();
  return QSize(screen.width() + 2 * kMargin, screen.height() + 2 * kMargin + t.height);
}

}  // namespace

FigureOptions::Format figureFormatFor(const QString& path) {
  const QString s = QFileInfo(path).suffix().toLower();
  if (s == QStringLiteral("svg")) return FigureOptions::Format::Svg;
  if (s == QStringLiteral("pdf")) return FigureOptions::Format::Pdf;
  return FigureOptions::Format::Png;
}

QString figureSuffix(FigureOptions::Format format) {
  switch (format) {
    case FigureOptions::Format::Svg:
      return QStringLiteral("svg");
    case FigureOptions::Format::Pdf:
      return QStringLiteral("pdf");
    default:
      return QStringLiteral("png");
  }
}

QSize figureSize(View* view, const FigureOptions& o) {
  const TitleBlock t = titleBlock(view, o);
  const QSize max = requested(view, o, t);
  const QSize avail(std::max(40, max.width() - 2 * kMargin),
                    std::max(40, max.height() - 2 * kMargin - t.height));
  const QSize body = view->figureBodySize(avail, o.legend);
  const int w = std::min(max.width(), std::max(body.width(), t.width) + 2 * kMargin);
  return QSize(w, body.height() + t.height + 2 * kMargin);
}

void paintFigure(QPainter& p, View* view, const FigureOptions& o) {
  const TitleBlock t = titleBlock(view, o);
  const QSize size = figureSize(view, o);
  p.fillRect(QRect(QPoint(0, 0), size), Qt::white);
  int y = kMargin;
  p.setPen(QColor(0x20, 0x20, 0x20));
  for (int k = 0; k < t.lines.size(); ++k) {
    p.setFont(k == 0 ? t.first : t.rest);
    const QFontMetrics fm(p.font());
    const int w = size.width() - 2 * kMargin;
    p.drawText(QRect(kMargin, y, w, fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(t.lines[k], Qt::ElideRight, w));
    y += fm.height() + 2;
  }
  if (!t.lines.isEmpty()) y += 8;
  const QSize avail(size.width() - 2 * kMargin, size.height() - y - kMargin);
  p.save();
  p.translate(kMargin, y);
  view->paintFigureBody(p, view->figureBodySize(avail, o.legend), o.legend);
  p.restore();
}

QImage renderFigure(View* view, const FigureOptions& o) {
  const QSize size = figureSize(view, o);
  const double scale = std::clamp(o.scale, 0.25, 8.0);
  QImage img(QSize(int(std::ceil(size.width() * scale)), int(std::ceil(size.height() * scale))),
             QImage::Format_ARGB32_Premultiplied);
  img.setDevicePixelRatio(scale);
  img.fill(Qt::white);
  QPainter p(&img);
  p.setRenderHint(QPainter::Antialiasing);
  p.setRenderHint(QPainter::TextAntialiasing);
  paintFigure(p, view, o);
  p.end();
  return img;
}

bool writeFigure(View* view, const QString& path, const FigureOptions& o, QString* error) {
  auto fail = [&] {
    if (error) *error = QObject::tr("Could not write %1").arg(path);
    return false;
  };
  const QSize size = figureSize(view, o);
  switch (o.format) {
    case FigureOptions::Format::Png: {
      const QImage img = renderFigure(view, o);
      if (img.isNull() || !img.save(path, "PNG")) return fail();
      return true;
    }
    case FigureOptions::Format::Svg: {
      QSvgGenerator gen;
      gen.setFileName(path);
      gen.setSize(size);
      gen.setViewBox(QRect(QPoint(0, 0), size));
      gen.setResolution(view->logicalDpiX());  // fonts the size they have on screen
      const QStringList title = o.title ? view->figureTitle() : QStringList{view->title()};
      gen.setTitle(title.join(QStringLiteral(" — ")));
      gen.setDescription(QObject::tr("Exported by attnviz"));
      QPainter p;
      if (!p.begin(&gen)) return fail();
      paintFigure(p, view, o);
      p.end();
      return QFileInfo(path).size() > 0 || fail();
    }
    case FigureOptions::Format::Pdf: {
      QPdfWriter pdf(path);
      // One device unit = one logical pixel, so that fonts keep the size they have on screen.
      const int dpi = view->logicalDpiX();
      pdf.setResolution(dpi);
      pdf.setPageLayout(QPageLayout(QPageSize(QSizeF(size) * 72.0 / dpi, QPageSize::Point),
                                    QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
      pdf.setTitle(o.title ? view->figureTitle().join(QStringLiteral(" — ")) : view->title());
      pdf.setCreator(QStringLiteral("attnviz"));
      QPainter p;
      if (!p.begin(&pdf)) return fail();
      paintFigure(p, view, o);
      p.end();
      return QFileInfo(path).size() > 0 || fail();
    }
  }
  return fail();
}

}  // namespace attnviz::gui

#include "figures/figure.h"

#include <QBuffer>
#include <QFileInfo>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <algorithm>
#include <cmath>
#include <vector>

#include "views/view.h"

namespace attnviz::gui {

namespace {

constexpr int kMargin = 12;
constexpr int kMinTitleWidth = 320;  // logical pixels a title may take beside a narrower body

// The title's lines as drawn: each line of View::figureTitle() broken at spaces to the figure's
// width (a word wider than the whole width is elided), measured with the fonts it is drawn with.
struct TitleBlock {
  QStringList lines;     // as drawn
  std::vector<int> row;  // for each drawn line, which line of figureTitle() it belongs to
  QFont first, rest;     // the first line of figureTitle() (what is shown) and the others
  int height = 0;
  int natural_width = 0;  // the widest line of figureTitle(), unbroken
};

// Breaks `text` into lines no wider than `width` (greedy, at spaces).
QStringList breakLines(const QString& text, const QFontMetrics& fm, int width) {
  QStringList out;
  QString line;
  for (const QString& word : text.split(QLatin1Char(' '))) {
    const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
    if (line.isEmpty() || fm.horizontalAdvance(longer) <= width) {
      line = longer;
      continue;
    }
    out << line;
    line = word;
  }
  out << line;
  for (QString& l : out)
    if (fm.horizontalAdvance(l) > width) l = fm.elidedText(l, Qt::ElideRight, width);
  return out;
}

// The title broken to `width` (logical pixels); with width <= 0, each line unbroken.
TitleBlock titleBlock(View* view, const FigureOptions& o, int width = 0) {
  TitleBlock t;
  t.rest = view->font();
  t.first = view->font();
  t.first.setBold(true);
  t.first.setPointSizeF(t.first.pointSizeF() * 1.15);
  if (!o.title) return t;
  const QStringList lines = view->figureTitle();
  for (int k = 0; k < lines.size(); ++k) {
    const QFontMetrics fm(k == 0 ? t.first : t.rest);
    t.natural_width = std::max(t.natural_width, fm.horizontalAdvance(lines[k]));
    const QStringList drawn = width > 0 ? breakLines(lines[k], fm, width) : QStringList{lines[k]};
    for (const QString& d : drawn) {
      t.lines << d;
      t.row.push_back(k);
      t.height += fm.height() + 2;
    }
  }
  if (!t.lines.isEmpty()) t.height += 8;
  return t;
}

QSize requested(View* view, const FigureOptions& o, const TitleBlock& t) {
  if (o.size.isValid() && !o.size.isEmpty()) return o.size;
  const QSize screen = view->exportWidget()->size();
  // Not smaller than what the view needs to show everything (every token labelled).
  const QSize body = screen.expandedTo(view->figureLeastBodySize(o.legend));
  return QSize(body.width() + 2 * kMargin, body.height() + 2 * kMargin + t.height);
}

// The figure's layout: its size, and its title broken to its width.
struct FigureLayout {
  QSize size;
  TitleBlock title;
};

FigureLayout figureLayout(View* view, const FigureOptions& o) {
  const TitleBlock unbroken = titleBlock(view, o);
  const QSize max = requested(view, o, unbroken);
  const int max_inner = std::max(40, max.width() - 2 * kMargin);
  // The body gets the height the title leaves at the widest the title may be; the figure is as
  // wide as the body (at most the width asked for), and the title breaks to that.
  const TitleBlock widest =
      titleBlock(view, o, std::min(std::max(unbroken.natural_width, 1), max_inner));
  const bool asked = o.size.isValid() && !o.size.isEmpty();
  auto bodyFor = [&](int title_height) {
    QSize avail(max_inner, std::max(40, max.height() - 2 * kMargin - title_height));
    // At the default size the body gets at least what shows everything, whatever the title takes.
    if (!asked) avail = avail.expandedTo(view->figureLeastBodySize(o.legend));
    return view->figureBodySize(avail, o.legend);
  };
  // As wide as the body: a long title breaks into lines over it rather than widening the figure
  // past it (a tight heatmap in the left of a wide page), down to kMinTitleWidth for a small body.
  const int title_w = std::min(unbroken.natural_width, kMinTitleWidth);
  auto widthFor = [&](const QSize& body) {
    return std::min(max.width(), std::max(body.width(), title_w) + 2 * kMargin);
  };
  QSize body = bodyFor(widest.height);
  int w = widthFor(body);
  // The title broken to that width may take more lines: at a size asked for, the body gives them
  // the height (once more; a narrower body only breaks the title more where it is already short).
  if (const int h = titleBlock(view, o, w - 2 * kMargin).height;
      asked && h > widest.height && body.height() + h + 2 * kMargin > max.height()) {
    body = bodyFor(h);
    w = widthFor(body);
  }
  FigureLayout l;
  l.title = titleBlock(view, o, w - 2 * kMargin);
  l.size = QSize(w, body.height() + l.title.height + 2 * kMargin);
  return l;
}

// Qt's SVG generator (at least up to 6.4) writes the title and the description into <title> and
// <desc> as they are: a token such as <bos> there makes the file invalid XML. Whether this Qt
// escapes them itself is found out once, on a throwaway SVG.
bool svgGeneratorEscapes() {
  static const bool escapes = [] {
    QBuffer buffer;
    QSvgGenerator gen;
    gen.setOutputDevice(&buffer);
    gen.setSize(QSize(1, 1));
    gen.setTitle(QStringLiteral("<&>"));
    QPainter p(&gen);
    p.end();
    return !buffer.data().contains("<&>");
  }();
  return escapes;
}

QString svgText(const QString& text) {
  return svgGeneratorEscapes() ? text : text.toHtmlEscaped();
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
  return figureLayout(view, o).size;
}

QStringList figureTitleLines(View* view, const FigureOptions& o) {
  return figureLayout(view, o).title.lines;
}

void paintFigure(QPainter& p, View* view, const FigureOptions& o) {
  const FigureLayout l = figureLayout(view, o);
  const TitleBlock& t = l.title;
  const QSize size = l.size;
  p.fillRect(QRect(QPoint(0, 0), size), Qt::white);
  int y = kMargin;
  p.setPen(QColor(0x20, 0x20, 0x20));
  for (int k = 0; k < t.lines.size(); ++k) {
    p.setFont(t.row[size_t(k)] == 0 ? t.first : t.rest);
    const QFontMetrics fm(p.font());
    // Broken to the width with these metrics already: drawn without wrapping or eliding again.
    p.drawText(QRect(kMargin, y, size.width() - 2 * kMargin, fm.height()),
               Qt::AlignLeft | Qt::AlignVCenter | Qt::TextDontClip, t.lines[k]);
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
      gen.setTitle(svgText(title.join(QStringLiteral(" — "))));
      gen.setDescription(svgText(QObject::tr("Exported by attnviz")));
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

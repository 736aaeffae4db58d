// Figures for slides and papers: a view drawn at a chosen size and scale into PNG (1×, 2×, 3×),
// vector SVG or PDF, with or without its title (what is shown, on which sentence) and legend.
#pragma once

#include <QImage>
#include <QSize>
#include <QString>
#include <QStringList>

class QPainter;

namespace attnviz::gui {

class View;

struct FigureOptions {
  enum class Format { Png, Svg, Pdf };
  Format format = Format::Png;
  QSize size;        // the largest figure in logical pixels (PDF: points); empty = as on screen
  double scale = 1;  // PNG: device pixels per logical pixel (2 or 3 for sharp slides)
  bool title = true;
  bool legend = true;
};

// The format a file name asks for (.png, .svg, .pdf); Png for anything else.
FigureOptions::Format figureFormatFor(const QString& path);
QString figureSuffix(FigureOptions::Format format);  // "png", "svg", "pdf"

// The figure's size in logical pixels: the view's body, shrunk to what it draws, plus the title.
QSize figureSize(View* view, const FigureOptions& options);
// The title's lines as the figure draws them: View::figureTitle() broken at spaces to the figure's
// width (empty without options.title).
QStringList figureTitleLines(View* view, const FigureOptions& options);
// Draws the whole figure (white background, title, body) at (0, 0) in logical pixels.
void paintFigure(QPainter& painter, View* view, const FigureOptions& options);
// The figure as an image of figureSize × scale device pixels.
QImage renderFigure(View* view, const FigureOptions& options);
// Writes the figure in options.format. False with *error set on failure.
bool writeFigure(View* view, const QString& path, const FigureOptions& options,
                 QString* error = nullptr);

}  // namespace attnviz::gui

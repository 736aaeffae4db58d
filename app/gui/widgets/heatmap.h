// The heatmap widget every view uses: a matrix of cells coloured through a colormap, token labels
// on both axes, a colour legend, hatched masked cells, hover tooltips and zoom.
#pragma once

#include <QFutureWatcher>
#include <QImage>
#include <QScrollArea>
#include <QStringList>
#include <QWidget>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "widgets/colormap.h"
#include "widgets/heatmap_pooling.h"

class QComboBox;
class QToolButton;
class QLabel;

namespace attnviz::gui {

// What one heatmap shows: its cells either held here (every matrix [rows, cols], row-major) or,
// for a matrix too large to hold, read on demand from `cells`. Read them through the accessors
// below, which serve both.
struct HeatmapData {
  int rows = 0, cols = 0;
  std::vector<float> values;    // what is coloured (NaN = no value, drawn like a masked cell)
  std::vector<uint8_t> masked;  // 1 = masked; empty = nothing masked
  std::vector<float> probs;     // shown in the tooltip when not empty
  std::vector<float> scores;    // raw scores, shown in the tooltip when not empty
  // Set: the cells come from here (rows and cols equal to its own) and the four vectors above
  // stay empty. The heatmap reads it tile by tile off the GUI thread.
  std::shared_ptr<const HeatmapCells> cells;
  QStringList row_labels, col_labels;
  QString row_title, col_title;  // e.g. "queries (target tokens)"
  QString row_noun = "query", col_noun = "key";
  QString title;  // drawn above the matrix when not empty; '\n' starts a new (plain) line
  QString value_name = "probability";  // legend title and tooltip name of `values`
  double vmin = 0, vmax = 1;           // colour scale (Scale::Given)
  // Given: vmin … vmax. ZeroToMax: 0 … the largest unmasked value; MinToMax: the smallest … the
  // largest unmasked finite value — found by the heatmap as it reads the cells.
  enum class Scale { Given, ZeroToMax, MinToMax } scale = Scale::Given;
  bool mask_only = false;   // a picture of a mask: allowed cells white, masked cells hatched
  bool show_values = true;  // print values in cells that are large enough
  // Text written in each cell ([rows * cols], e.g. the token a cell predicts) in place of its
  // value; what follows a '\n' is a second, smaller line, drawn when the cell is tall enough.
  // Empty: the values (show_values).
  QStringList cell_texts;
  QStringList cell_notes;         // [rows * cols] more lines of each cell's tooltip; empty: none
  QString tooltip_note;           // an extra line in every tooltip, e.g. "mean of 8 heads"
  int highlight_row = -1;         // drawn with an outline (e.g. the current decoding step)
  int highlight_col = -1;         // the same for a column (e.g. the position explained)
  bool value_in_tooltip = false;  // also list `values` in the tooltip (beside probs and scores)
  bool draw_mask = true;     // false: masked cells are coloured by value (the tooltip still tells)
  bool square_cells = true;  // false: in fit mode, columns and rows stretch independently

  // One cell, from the vectors or the source (a source computes it: for a cell or a few, not for
  // whole matrices).
  bool hasMask() const;
  bool isMasked(int r, int c) const;
  bool drawMasked(int r, int c) const { return draw_mask && isMasked(r, c); }
  float value(int r, int c) const;
  bool hasProbs() const;
  float prob(int r, int c) const;
  bool hasScores() const;
  float score(int r, int c) const;
};

class HeatmapWidget : public QWidget {
  Q_OBJECT
 public:
  explicit HeatmapWidget(QWidget* parent = nullptr);
  ~HeatmapWidget() override;

  void setData(HeatmapData data);
  const HeatmapData& data() const { return *data_; }
  void setColormap(const Colormap& cmap);
  const Colormap& colormap() const { return *cmap_; }

  // Fit: cells shrink and grow with the widget. Otherwise cells are cellSize() pixels and the
  // widget asks its scroll area for the room.
  void setFit(bool fit);
  bool fit() const { return fit_; }
  void setCellSize(double px);
  double cellSize() const;  // the current cell size in pixels
  void setMaxFitCell(int px) {
    max_fit_cell_ = px;
    update();
  }
  void setShowLegend(bool show);
  bool showLegend() const { return show_legend_; }
  // Cells as vector rectangles rather than one scaled image (SVG and PDF exports do this by
  // themselves: the painter's engine tells).
  void setVectorCells(bool on) { vector_cells_ = on; }
  // Labels and titles at this fraction of the widget's font (small multiples use ~0.85).
  void setFontScale(double scale);
  // The height at which every row label of the first max_rows rows has room (compact views ask
  // their scroll area for it), and a narrow width.
  QSize labelledMinimumSize(int max_rows = 24) const;
  // Renders every matrix on the GUI thread (figures: drawn at once, whatever the size).
  void setSynchronousRendering(bool on) { sync_render_ = on; }
  // Takes another heatmap's data (without its title: a figure has its own), font and colormap, to
  // be drawn for a figure: at once, with or without the legend.
  void copyForFigure(const HeatmapWidget& from, bool legend);
  // The tightest size (cells square, nothing empty around the matrix, its labels and legend) that
  // fits in `available` with cells no larger than max_cell pixels; the cell size it uses.
  QSize tightSize(QSize available, double max_cell, double* cell = nullptr) const;
  // The smallest cell at which every row and column has its label, and the size it takes.
  double labelledCell() const;
  QSize labelledSize() const;

  // Geometry, for tests and for views that draw over the matrix.
  QRectF cellRect(int row, int col) const;
  QRectF gridRect() const;
  // Where the rows' axis title is drawn (rotated, its box upright), inside the widget; the text as
  // drawn in *text (elided only when the widget is shorter than the title).
  QRectF rowTitleRect(QString* text = nullptr) const;
  // The cell under pos: x = column, y = row; (-1, -1) when pos is not over a cell.
  QPoint cellAt(const QPointF& pos) const;
  QString tooltipText(int row, int col) const;
  // True when every row/column label is drawn (cells are tall/wide enough for text).
  bool allRowLabelsDrawn() const;
  bool allColLabelsDrawn() const;
  // How many of the cells' own texts (HeatmapData::cell_texts) are written, whole or shortened,
  // at the widget's size; 0 when the cells are too small for text or the data has none.
  int cellTextsWritten() const;
  // True while a large matrix is still being rendered off the GUI thread.
  bool rendering() const { return rendering_; }
  // The whole matrix as read: one element per cell, or per fr × fc cells for a matrix larger than
  // kMaxWholePixels a side (poolFactor: the larger of the two); on screen it is pooled further
  // where its elements would be smaller than a pixel.
  QImage cellImage() const { return whole_.image; }
  static constexpr int kMaxWholePixels = 2048;
  int poolFactor() const { return std::max(whole_.cells.fr, whole_.cells.fc); }
  // How a picture element of f × f cells is drawn: their maximum (the default) or their mean.
  void setPooling(Pooling pooling);
  Pooling pooling() const { return pooling_; }
  // The colour scale in effect (HeatmapData::scale resolved once the cells are read).
  double scaleMin() const { return scale_lo_; }
  double scaleMax() const { return scale_hi_; }
  // The cells around the visible part at a finer pooling than the whole matrix (zoomed in);
  // its factor, 0 when there is none.
  int windowPoolFactor() const {
    return window_.image.isNull() ? 0 : std::max(window_.cells.fr, window_.cells.fc);
  }

  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void cellClicked(int row, int col);
  void cellHovered(int row, int col);  // -1, -1 when the mouse leaves the matrix
  void renderingDone();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;
  bool event(QEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  struct Layout {
    QRectF grid;
    double cell = 0;                 // min(cw, ch)
    double cw = 0, ch = 0;           // cell width and height in pixels
    int row_step = 1, col_step = 1;  // draw every n-th label
    bool col_vertical = false;
    double row_label_w = 0, col_label_h = 0;
    QRectF legend;
  };
  Layout computeLayout(QSize size) const;
  // What the cells hold at layout l: each cell's text in the normal font when a line of it fits
  // the cell's height, else in the small font when that fits; values only without cell texts.
  struct CellWriting {
    bool texts = false, values = false;
    bool small_texts = false;  // the texts in the small font (the cells are too low for hfont)
  };
  CellWriting cellWriting(const Layout& l) const;
  QFont smallFont() const;
  // The first line of a cell's text as it fits a cell `width` wide in font `f`; empty when not
  // even one character and the ellipsis fit.
  static QString fittedCellText(const QString& first, const QFont& f, double width);
  QSize sizeForCell(double cell) const;
  // An axis title with the thinning of its labels said (one every `step` rows or columns).
  static QString thinnedTitle(const QString& title, int step);
  // A block of cells read, pooled and coloured.
  struct Rendered {
    PooledCells cells;
    QImage image;
    double lo = 0, hi = 1;  // the colour scale it was coloured with
  };
  static Rendered renderBlock(const HeatmapCells& cells, const HeatmapData& data,
                              const PoolRequest& request, const Colormap& cmap,
                              const std::pair<double, double>* scale);
  static QImage colourCells(const PooledCells& cells, double lo, double hi, const HeatmapData& data,
                            const Colormap& cmap);
  // The pooling (rows, columns) that gives each element at least a device pixel at layout l.
  std::pair<int, int> displayFactors(const Layout& l) const;
  // The whole picture as drawn at layout l: whole_, or whole_ pooled further (display_).
  const Rendered& displayedWhole(const Layout& l);
  // The pooling of the whole picture on screen at the widget's size.
  std::pair<int, int> shownFactors(const Layout& l) const;
  void startRender();
  // Renders q off the GUI thread (with this widget's scale, or the one the cells give when
  // with_scale is false); done(result) on the GUI thread unless the data changed or it was
  // cancelled. *slot holds the watcher while it runs.
  void launch(PoolRequest q, std::shared_ptr<std::atomic<bool>> cancel, bool with_scale,
              QFutureWatcher<Rendered>** slot, std::function<void(Rendered)> done);
  // Zoomed in beyond what the whole matrix's pooling shows: the visible cells at a finer pooling.
  void scheduleWindow();
  void startWindow();
  // The value and masked fraction of one cell drawn at one cell per element; false when no
  // rendered block holds it at that pooling yet.
  bool cellDrawn(int r, int c, float* value, float* masked) const;
  double normalizedValue(double v) const;
  double maxLabelWidth(const QStringList& labels) const;
  // The widest row and column labels (each at most kMaxLabelWidth), measured once per data and
  // font: every layout needs them, and measuring a thousand labels takes milliseconds.
  std::pair<double, double> labelWidths() const;
  double titleHeight() const;
  QFont hfont() const;  // the font everything is drawn in
  void drawLegend(QPainter& p, const Layout& l) const;
  // The legend's lines on pooling ("pixel: max of", "4 × 4 cells"); empty at one cell a pixel.
  QStringList poolingLegend(std::pair<int, int> factors) const;
  int poolingLegendLines() const;  // the lines the layout keeps for it

  std::shared_ptr<const HeatmapData> data_;
  std::shared_ptr<const HeatmapCells> cells_;  // data_->cells, or data_'s vectors as a source
  const Colormap* cmap_;
  Rendered whole_, window_;
  Rendered display_;  // whole_ pooled further for the screen (displayedWhole), when it must be
  PoolRequest window_request_;  // the window rendered or being rendered (f = 0: none)
  double scale_lo_ = 0, scale_hi_ = 1;
  Pooling pooling_ = Pooling::Max;
  bool rendering_ = false;
  int generation_ = 0;
  std::shared_ptr<std::atomic<bool>> cancel_;         // of the jobs of the current generation
  std::shared_ptr<std::atomic<bool>> window_cancel_;  // of the latest window's job
  class QTimer* window_timer_ = nullptr;
  int data_serial_ = 0;  // counts setData calls
  struct LabelWidths {
    int data_serial = -1;
    QString font;  // QFont::key()
    double row = 0, col = 0;
  };
  mutable LabelWidths label_widths_;
  QFutureWatcher<Rendered>* watcher_ = nullptr;
  QFutureWatcher<Rendered>* window_watcher_ = nullptr;
  bool fit_ = true;
  double cell_px_ = 28;
  int max_fit_cell_ = 72;
  bool show_legend_ = true;
  bool vector_cells_ = false;
  bool sync_render_ = false;
  double font_scale_ = 1.0;
  QPoint hover_{-1, -1};
};

// A heatmap in a scroll area with zoom buttons (−, fit, +) and Ctrl+wheel zoom.
class HeatmapView : public QWidget {
  Q_OBJECT
 public:
  explicit HeatmapView(QWidget* parent = nullptr);
  HeatmapWidget* heatmap() const { return heatmap_; }
  QScrollArea* scrollArea() const { return scroll_; }
  QComboBox* poolingBox() const { return pooling_; }
  void setToolbarVisible(bool visible);

 public slots:
  void zoomIn();
  void zoomOut();
  void zoomFit();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void setZoom(double cell);
  QScrollArea* scroll_;
  HeatmapWidget* heatmap_;
  QWidget* toolbar_;
  QLabel* zoom_label_;
  QComboBox* pooling_;
};

}  // namespace attnviz::gui

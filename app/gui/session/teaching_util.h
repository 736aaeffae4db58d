// What the teaching views (architecture, inside a cell, head statistics, before / after, search)
// share: signed heatmaps on a diverging scale, summaries of activations, number formatting and the
// token labels of one sentence.
#pragma once

#include <QString>
#include <QStringList>
#include <vector>

#include "model/trace.h"
#include "widgets/heatmap.h"

namespace attnviz::gui {

// A [rows, cols] matrix of signed values on a scale symmetric around 0 (for the RdBu colormap):
// vmin = −vmax = −max |value| (1 when all are 0).
HeatmapData signedHeatmap(std::vector<float> values, int rows, int cols, const QString& title,
                          const QString& value_name);

// Mean, standard deviation, extremes of a [rows, cols] matrix, and the mean L2 norm of its rows.
struct MatrixSummary {
  double mean = 0, std = 0, min = 0, max = 0, row_norm = 0;
};
MatrixSummary summarize(const float* values, int rows, int cols);
QString summaryText(const MatrixSummary& s);

// "0.1235", "−1.2e−05", "—" for NaN: numbers as the teaching views print them.
QString num(double v, int decimals = 4);

// The tokens of sentence b on one side of the trace (source or target), padded as the trace is.
QStringList sideTokens(const Trace& trace, Side side, int b);

// A message of the core ("the clean input has 7 tokens …") as a sentence of a view: capitalised,
// ending with a full stop.
QString messageSentence(const char* what);

}  // namespace attnviz::gui

#include "session/teaching_util.h"

#include <QCoreApplication>
#include <QObject>
#include <algorithm>
#include <cmath>

#include "widgets/token_label.h"

namespace attnviz::gui {

HeatmapData signedHeatmap(std::vector<float> values, int rows, int cols, const QString& title,
                          const QString& value_name) {
  HeatmapData d;
  d.rows = rows;
  d.cols = cols;
  double m = 0;
  for (float v : values)
    if (std::isfinite(v)) m = std::max(m, double(std::abs(v)));
  if (m <= 0) m = 1;
  d.values = std::move(values);
  d.vmin = -m;
  d.vmax = m;
  d.title = title;
  d.value_name = value_name;
  d.value_in_tooltip = true;
  return d;
}

MatrixSummary summarize(const float* v, int rows, int cols) {
  MatrixSummary s;
  const size_t n = size_t(rows) * cols;
  if (n == 0) return s;
  s.min = s.max = v[0];
  double sum = 0, sq = 0, norms = 0;
  for (int i = 0; i < rows; ++i) {
    double row = 0;
    for (int j = 0; j < cols; ++j) {
      const double x = v[size_t(i) * cols + j];
      sum += x;
      sq += x * x;
      row += x * x;
      s.min = std::min(s.min, x);
      s.max = std::max(s.max, x);
    }
    norms += std::sqrt(row);
  }
  s.mean = sum / double(n);
  s.std = std::sqrt(std::max(0.0, sq / double(n) - s.mean * s.mean));
  s.row_norm = rows > 0 ? norms / rows : 0;
  return s;
}

QString summaryText(const MatrixSummary& s) {
  return QObject::tr("mean %1, std %2, min %3, max %4, mean length of a position's vector %5")
      .arg(num(s.mean), num(s.std), num(s.min), num(s.max), num(s.row_norm));
}

QString num(double v, int decimals) {
  if (std::isnan(v)) return QStringLiteral("—");
  if (std::isinf(v)) return v > 0 ? QStringLiteral("+∞") : QStringLiteral("−∞");
  const double a = std::abs(v);
  QString s = (v != 0 && (a < std::pow(10.0, -decimals) || a >= 1e6))
                  ? QString::number(v, 'e', 2)
                  : QString::number(v, 'f', decimals);
  if (s.startsWith('-')) s.replace(0, 1, QStringLiteral("−"));
  return s;
}

QStringList sideTokens(const Trace& t, Side side, int b) {
  const auto& all = side == Side::Source ? t.src_tokens : t.tgt_tokens;
  QStringList out;
  if (b < int(all.size())) out = tokenLabels(all[size_t(b)]);
  return out;
}

QString messageSentence(const char* what) {
  // A message thrown in app/gui with QT_TRANSLATE_NOOP("attnviz::Error", …) has its translation
  // there; any other (the core's, with its numbers) stays as written.
  QString s = QCoreApplication::translate("attnviz::Error", what);
  if (!s.isEmpty()) s[0] = s[0].toUpper();
  // A sentence ends with its full stop: a Chinese one with 。
  const QChar last = s.isEmpty() ? QChar() : s.back();
  if (!QStringLiteral(".!?。！？").contains(last))
    s += last.unicode() >= 0x3000 ? QStringLiteral("。") : QStringLiteral(".");
  return s;
}

}  // namespace attnviz::gui

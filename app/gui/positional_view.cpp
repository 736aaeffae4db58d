#include "positional_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QSpinBox>
#include <QSplitter>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLegend>
#include <QtCharts/QLineSeries>
#include <QtCharts/QValueAxis>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>

#include "arch/positional.h"

namespace attnviz::gui {

namespace {

// Tableau 10: distinct line colours for the curves.
const QColor kLineColors[] = {QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b),
                              QColor(0xe1, 0x57, 0x59), QColor(0x76, 0xb7, 0xb2),
                              QColor(0x59, 0xa1, 0x4f), QColor(0xed, 0xc9, 0x48),
                              QColor(0xb0, 0x7a, 0xa1), QColor(0xff, 0x9d, 0xa7),
                              QColor(0x9c, 0x75, 0x5f), QColor(0xba, 0xb0, 0xac)};

QStringList numbers(int n) {
  QStringList out;
  for (int i = 0; i < n; ++i) out << QString::number(i);
  return out;
}

}  // namespace

struct PositionalView::Result {
  Tensor table;       // [N, d_model]
  Tensor similarity;  // [N, N]
  bool learned = false;
  QString source;
};

PositionalView::PositionalView(AppState* state, QWidget* parent)
    : View(state, tr("What am I looking at?"), parent),
      watcher_(new QFutureWatcher<std::shared_ptr<Result>>(this)) {
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("Table:"), this));
  table_ = new QComboBox(this);
  table_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  controls->addWidget(table_);
  controls->addWidget(new QLabel(tr("Positions:"), this));
  positions_ = new QSpinBox(this);
  positions_->setRange(2, 2048);
  positions_->setValue(64);
  positions_->setToolTip(tr("How many positions (rows of the table) to show"));
  controls->addWidget(positions_);
  controls->addWidget(new QLabel(tr("Curves of dimensions:"), this));
  dims_ = new QLineEdit(this);
  dims_->setText(QStringLiteral("0, 1, 4, 5, 10, 11"));
  dims_->setToolTip(
      tr("Comma-separated dimension indices (0 … d_model − 1); even ones are sines, "
         "odd ones cosines"));
  dims_->setMinimumWidth(160);
  dims_->setMaximumWidth(320);
  controls->addWidget(dims_, 1);
  info_ = new QLabel(this);
  info_->setForegroundRole(QPalette::PlaceholderText);
  info_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  info_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  controls->addWidget(info_, 1);
  layout_->addLayout(controls);

  auto* chart = new QChart;
  chart->setMargins(QMargins(4, 4, 4, 4));
  chart->legend()->setAlignment(Qt::AlignRight);
  chart_view_ = new QChartView(chart, this);
  chart_view_->setRenderHint(QPainter::Antialiasing);
  chart_view_->setMinimumHeight(200);
  matrix_ = new HeatmapWidget(this);
  matrix_->setColormap(Colormap::rdbu());
  similarity_ = new HeatmapWidget(this);
  auto* left = new QSplitter(Qt::Vertical, this);
  left->addWidget(chart_view_);
  left->addWidget(matrix_);
  left->setStretchFactor(0, 1);
  left->setStretchFactor(1, 1);
  splitter_ = new QSplitter(Qt::Horizontal, this);
  splitter_->addWidget(left);
  splitter_->addWidget(similarity_);
  splitter_->setStretchFactor(0, 3);
  splitter_->setStretchFactor(1, 2);
  layout_->addWidget(splitter_, 1);

  connect(table_, &QComboBox::currentIndexChanged, this, [this] { recompute(); });
  connect(positions_, &QSpinBox::valueChanged, this, [this] { recompute(); });
  connect(dims_, &QLineEdit::editingFinished, this, [this] { recompute(); });
  connect(watcher_, &QFutureWatcher<std::shared_ptr<Result>>::finished, this, [this] {
    computing_ = false;
    auto r = watcher_->result();
    if (r) apply(*r);
    if (pending_) {
      pending_ = false;
      recompute();
    }
  });
}

PositionalView::~PositionalView() {
  watcher_->waitForFinished();
}

QWidget* PositionalView::exportWidget() {
  return splitter_;
}

std::vector<int> PositionalView::chosenDims() const {
  const Model* model = state_->model();
  const int d = model ? model->config().d_model : 0;
  std::vector<int> out;
  for (const QString& part :
       dims_->text().split(QRegularExpression(QStringLiteral("[,;\\s]+")), Qt::SkipEmptyParts)) {
    bool ok = false;
    const int v = part.toInt(&ok);
    if (ok && v >= 0 && v < d && std::find(out.begin(), out.end(), v) == out.end())
      out.push_back(v);
    if (out.size() >= 10) break;
  }
  return out;
}

void PositionalView::showSide(bool target) {
  if (table_->count() > 1) table_->setCurrentIndex(target ? 1 : 0);
}

void PositionalView::refresh() {
  const Model* model = state_->model();
  similarity_->setColormap(state_->colormap());
  if (model != model_seen_) {
    model_seen_ = model;
    const QSignalBlocker block(table_);
    table_->clear();
    if (model) {
      const auto& c = model->config();
      if (c.positional == Positional::Learned) {
        table_->addItem(tr("Encoder (learned)"));
        table_->addItem(tr("Decoder (learned)"));
      } else {
        table_->addItem(tr("Sinusoidal (encoder and decoder)"));
      }
      positions_->setMaximum(std::max(2, std::min(c.max_len, 2048)));
      // Enough positions to cover the current input, and at least 64.
      int want = 64;
      if (auto snap = state_->snapshot(); snap && snap->trace)
        want = std::max(want, std::max(snap->trace->src_len, snap->trace->tgt_len));
      const QSignalBlocker b2(positions_);
      positions_->setValue(std::min(want, positions_->maximum()));
      // Default curves: a fast pair, a middle pair and a slow pair of dimensions.
      const int d = c.d_model;
      QList<int> dims{0, 1};
      const int mid = (d / 8) & ~1;
      if (mid >= 2) dims << mid << mid + 1;
      if (d >= 4) dims << d / 2 << d / 2 + 1;
      QStringList s;
      for (int v : dims)
        if (v < d && !s.contains(QString::number(v))) s << QString::number(v);
      dims_->setText(s.join(QStringLiteral(", ")));
    }
  }
  recompute();
}

void PositionalView::recompute() {
  const Model* model = state_->model();
  if (!model) {
    HeatmapData empty;
    empty.title = tr("No model loaded");
    matrix_->setData(empty);
    similarity_->setData(empty);
    chart_view_->chart()->removeAllSeries();
    info_->clear();
    explanation_->setHtml(tr("Positional encodings appear here once a model is loaded."));
    return;
  }
  if (computing_) {
    pending_ = true;
    return;
  }
  const auto& c = model->config();
  const bool learned = c.positional == Positional::Learned;
  const bool target = learned && table_->currentIndex() == 1;
  const int n = std::min(positions_->value(), learned ? c.max_len : positions_->value());
  std::shared_ptr<const LoadedModel> loaded = model->loadedPtr();
  const int d = c.d_model;
  updateExplanation(n, learned);
  computing_ = true;
  watcher_->setFuture(QtConcurrent::run([loaded, learned, target, n, d]() {
    auto r = std::make_shared<Result>();
    r->learned = learned;
    if (learned) {
      const Tensor& full = target || !loaded->config.hasEncoder()
                               ? loaded->weights.decoder.embed.positions
                               : loaded->weights.encoder.embed.positions;
      const int rows = std::min<int>(n, int(full.dim(0)));
      r->table = Tensor(
          {rows, d}, std::vector<float>(full.data.begin(), full.data.begin() + int64_t(rows) * d));
      r->source = target ? QStringLiteral("decoder") : QStringLiteral("encoder");
    } else {
      r->table = loaded->config.positional == Positional::SinusoidalHalves
                     ? sinusoidalHalvesTable(n, d)
                     : sinusoidalTable(n, d);
    }
    r->similarity = positionSimilarity(r->table, int(r->table.dim(0)));
    return r;
  }));
}

void PositionalView::updateExplanation(int n, bool learned) {
  const auto& c = state_->model()->config();
  const QString scale = c.embed_scale ? tr("x = embedding·√d_model + PE (this model scales its "
                                           "embeddings by √%1 = %2)")
                                            .arg(c.d_model)
                                            .arg(std::sqrt(double(c.d_model)), 0, 'f', 1)
                                      : tr("x = embedding + PE");
  if (learned) {
    explanation_->setHtml(
        tr("<p style='margin:0'>This model <b>learns</b> its positions: row <i>pos</i> of the "
           "weight table [max_len, d_model] = %1 is added to the embedding of the token at "
           "position <i>pos</i>: %2. The curves show chosen columns, the matrix the first %3 rows, "
           "and the right-hand matrix the cosine similarity of every pair of rows — trained "
           "positions often end up similar to their neighbours.</p>")
            .arg(shapeString({c.max_len, c.d_model}))
            .arg(code(scale))
            .arg(n));
  } else {
    explanation_->setHtml(
        tr("<p style='margin:0'>%1, %2, i = 0 … d_model/2 − 1. Each pair of dimensions is a sine "
           "and a cosine of one frequency: low dimensions turn fast, high ones slowly, so every "
           "position gets a unique pattern, and PE(pos + k) is a rotation of PE(pos). It is added "
           "to the token embeddings: %3.</p>"
           "<p style='margin:4px 0 0 0'>Shapes: the table is [max_len, d_model] = %4 (shown: the "
           "first %5 positions); the similarity matrix PE·PEᵀ (rows normalised) is "
           "[positions, positions] = %6 and depends only on the distance |p − q|.</p>")
            .arg(code(tr("PE(pos, 2i) = sin(pos / 10000<sup>2i/d_model</sup>)")))
            .arg(code(tr("PE(pos, 2i+1) = cos(pos / 10000<sup>2i/d_model</sup>)")))
            .arg(code(scale))
            .arg(shapeString({c.max_len, c.d_model}))
            .arg(n)
            .arg(shapeString({n, n})));
  }
}

void PositionalView::apply(const Result& r) {
  const Model* model = state_->model();
  if (!model) return;
  const auto& c = model->config();
  const int n = int(r.table.dim(0)), d = int(r.table.dim(1));

  // Curves.
  QChart* chart = chart_view_->chart();
  chart->removeAllSeries();
  for (QAbstractAxis* axis : chart->axes()) {
    chart->removeAxis(axis);
    delete axis;
  }
  float lo = 0, hi = 0;
  const std::vector<int> dims = chosenDims();
  for (size_t k = 0; k < dims.size(); ++k) {
    auto* series = new QLineSeries;
    const int dim = dims[k];
    series->setName(r.learned
                        ? tr("dim %1").arg(dim)
                        : tr("dim %1: %2, i = %3")
                              .arg(dim)
                              .arg(dim % 2 == 0 ? QStringLiteral("sin") : QStringLiteral("cos"))
                              .arg(dim / 2));
    QList<QPointF> points;
    for (int p = 0; p < n; ++p) {
      const float v = r.table.data[size_t(p) * d + dim];
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      points.append(QPointF(p, v));
    }
    series->replace(points);
    series->setPen(QPen(kLineColors[k % 10], 2));
    chart->addSeries(series);
  }
  auto* ax = new QValueAxis;
  ax->setTitleText(tr("position"));
  ax->setRange(0, std::max(1, n - 1));
  ax->setLabelFormat(QStringLiteral("%d"));
  // Integer ticks at a round interval from 0.
  double step = 1;
  for (double s : {1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0})
    if ((n - 1) / s <= 8) {
      step = s;
      break;
    }
  ax->setTickType(QValueAxis::TicksDynamic);
  ax->setTickAnchor(0);
  ax->setTickInterval(step);
  auto* ay = new QValueAxis;
  ay->setTitleText(tr("PE"));
  ay->setTickCount(5);
  if (r.learned) {
    const float pad = 0.05f * std::max(1e-6f, hi - lo);
    ay->setRange(lo - pad, hi + pad);
  } else {
    ay->setRange(-1.0, 1.0);
  }
  chart->addAxis(ax, Qt::AlignBottom);
  chart->addAxis(ay, Qt::AlignLeft);
  for (QAbstractSeries* s : chart->series()) {
    s->attachAxis(ax);
    s->attachAxis(ay);
  }
  chart->setTitle(r.learned ? tr("Learned positions (%1 table): chosen dimensions").arg(r.source)
                            : tr("Sinusoidal positional encoding: chosen dimensions"));

  // The position × dimension matrix.
  HeatmapData m;
  m.rows = n;
  m.cols = d;
  m.values = r.table.data;
  m.row_labels = numbers(n);
  m.col_labels = numbers(d);
  m.row_title = tr("position ↓");
  m.col_title = tr("dimension → (0 … %1)").arg(d - 1);
  m.row_noun = tr("position");
  m.col_noun = tr("dimension");
  m.value_name = tr("PE value");
  m.title = tr("PE matrix [positions, d_model] = %1").arg(shapeString({n, d}));
  float amax = 0;
  for (float v : r.table.data) amax = std::max(amax, std::abs(v));
  if (amax <= 0) amax = 1;
  m.vmin = -amax;
  m.vmax = amax;
  m.show_values = false;
  m.square_cells = false;
  matrix_->setData(std::move(m));

  HeatmapData s;
  s.rows = n;
  s.cols = n;
  s.values = r.similarity.data;
  s.row_labels = numbers(n);
  s.col_labels = numbers(n);
  s.row_title = tr("position p ↓");
  s.col_title = tr("position q →");
  s.row_noun = tr("position");
  s.col_noun = tr("position");
  s.value_name = tr("cosine");
  s.title = tr("Position similarity cos(PE_p, PE_q)");
  float smin = 1;
  for (float v : r.similarity.data) smin = std::min(smin, v);
  s.vmin = smin;
  s.vmax = 1;
  s.show_values = false;
  similarity_->setData(std::move(s));

  info_->setText(tr("d_model = %1 · %2 · max_len = %3")
                     .arg(c.d_model)
                     .arg(r.learned ? tr("learned") : tr("sinusoidal"))
                     .arg(c.max_len));
  updateExplanation(n, r.learned);
}

}  // namespace attnviz::gui

#include "views/positional/positional_view.h"

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
#include <QtCharts/QLogValueAxis>
#include <QtCharts/QValueAxis>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>
#include <numbers>

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

// A [positions, positions] matrix as a heatmap, its rows and columns labelled with the positions
// and their titles and nouns, no numbers in the cells (the caller adds the value's name and range).
HeatmapData positionPairs(const Tensor& matrix, const QString& row_title, const QString& col_title,
                          const QString& row_noun, const QString& col_noun) {
  const int n = int(matrix.dim(0));
  HeatmapData s;
  s.rows = n;
  s.cols = n;
  s.values = matrix.data;
  s.row_labels = numbers(n);
  s.col_labels = numbers(n);
  s.row_title = row_title;
  s.col_title = col_title;
  s.row_noun = row_noun;
  s.col_noun = col_noun;
  s.show_values = false;
  return s;
}

// A chart emptied of its series and axes.
void clearChart(QChart* chart) {
  chart->removeAllSeries();
  for (QAbstractAxis* axis : chart->axes()) {
    chart->removeAxis(axis);
    delete axis;
  }
}

// An axis over 0 … n − 1 with integer ticks at a round interval from 0.
QValueAxis* integerAxis(int n, const QString& title) {
  auto* ax = new QValueAxis;
  ax->setTitleText(title);
  ax->setRange(0, std::max(1, n - 1));
  ax->setLabelFormat(QStringLiteral("%d"));
  double step = 1;
  for (double s : {1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0})
    if ((n - 1) / s <= 8) {
      step = s;
      break;
    }
  ax->setTickType(QValueAxis::TicksDynamic);
  ax->setTickAnchor(0);
  ax->setTickInterval(step);
  return ax;
}

// Adds the axes to the chart and attaches every series to them.
void attachAxes(QChart* chart, QAbstractAxis* x, QAbstractAxis* y) {
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  for (QAbstractSeries* s : chart->series()) {
    s->attachAxis(x);
    s->attachAxis(y);
  }
}

// Rotary positions: which dimensions of a head pair i turns, as the model's layout pairs them.
QString pairDims(const ModelConfig& c) {
  return c.rope_layout == RopeLayout::Halves ? QObject::tr("(i, i + %1)").arg(c.rotaryDims() / 2)
                                             : QObject::tr("(2i, 2i + 1)");
}

}  // namespace

struct PositionalView::Result {
  Tensor table;       // [N, d_model] (empty for rotary positions)
  Tensor similarity;  // [N, N]; rotary: ⟨R(m)q, R(n)k⟩ / |q|² of q = k = (1, …, 1)
  bool learned = false;
  bool rotary = false;
  std::vector<float> frequencies;  // rotary: θ_i of pair i [d_k / 2]
  // Relative (T5): the bias of `head` of the encoder's or decoder's table, [N, N] in similarity.
  bool relative = false;
  bool decoder = false;
  int head = 0;
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
  dims_label_ = new QLabel(tr("Curves of dimensions:"), this);
  controls->addWidget(dims_label_);
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
  auto* offset_chart = new QChart;
  offset_chart->setMargins(QMargins(4, 4, 4, 4));
  offset_chart->legend()->hide();
  offset_view_ = new QChartView(offset_chart, this);
  offset_view_->setRenderHint(QPainter::Antialiasing);
  offset_view_->setMinimumHeight(200);
  offset_view_->hide();
  matrix_ = new HeatmapWidget(this);
  matrix_->setColormap(Colormap::rdbu());
  similarity_ = new HeatmapWidget(this);
  auto* left = new QSplitter(Qt::Vertical, this);
  left->addWidget(chart_view_);
  left->addWidget(offset_view_);
  left->addWidget(matrix_);
  left->setStretchFactor(0, 1);
  left->setStretchFactor(1, 1);  // the offset curve (rotary models)
  left->setStretchFactor(2, 1);
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
  const bool rotary = model && model->config().positional == Positional::Rotary;
  const bool relative = model && model->config().positional == Positional::Relative;
  // The rotary scores and the relative biases are signed: blue below 0, red above.
  similarity_->setColormap(rotary || relative ? Colormap::rdbu() : state_->colormap());
  if (model != model_seen_) {
    model_seen_ = model;
    const QSignalBlocker block(table_);
    table_->clear();
    if (model) {
      const auto& c = model->config();
      if (c.positional == Positional::Learned) {
        table_->addItem(tr("Encoder (learned)"));
        table_->addItem(tr("Decoder (learned)"));
      } else if (rotary) {
        table_->addItem(tr("Rotary (every head's queries and keys)"));
      } else if (relative) {  // one item per stack and head: each head has its own bias
        for (const bool dec : {false, true}) {
          if (dec ? !c.hasDecoder() : !c.hasEncoder()) continue;
          for (int h = 0; h < c.n_heads; ++h)
            table_->addItem(dec ? tr("Decoder relative bias, head %1").arg(h + 1)
                                : tr("Encoder relative bias, head %1").arg(h + 1),
                            QVariant::fromValue(dec ? -(h + 1) : h + 1));
        }
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
    // Rotary positions add no table: no curves of dimensions, no position × dimension matrix.
    // Relative positions (T5) add no table either: a bias per head and offset instead.
    dims_label_->setVisible(!rotary && !relative);
    dims_->setVisible(!rotary && !relative);
    matrix_->setVisible(!rotary && !relative);
    offset_view_->setVisible(rotary);
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
  computing_ = true;
  if (c.positional == Positional::Relative) {
    const int item = table_->currentData().toInt();
    const bool decoder = item < 0;
    const int head = std::abs(item) - 1;
    watcher_->setFuture(QtConcurrent::run([loaded, n, decoder, head]() {
      // bias[i, j] = table[bucket(j − i), head], the bucket as the forward pass computes it.
      const ModelConfig& cfg = loaded->config;
      auto r = std::make_shared<Result>();
      r->relative = true;
      r->decoder = decoder;
      r->head = head;
      r->similarity = relativePositionBiasMatrix(
          cfg, decoder ? loaded->weights.decoder : loaded->weights.encoder, decoder, head, n);
      return r;
    }));
    return;
  }
  if (c.positional == Positional::Rotary) {
    updateRotaryExplanation(n);
    watcher_->setFuture(QtConcurrent::run([loaded, n]() {
      // The rotation the forward pass applies (its table, its op, its pair layout) to q = k = 1.
      const ModelConfig& cfg = loaded->config;
      auto r = std::make_shared<Result>();
      r->rotary = true;
      r->frequencies = rotaryFrequencies(cfg.rotaryDims(), cfg.rope_theta);
      r->similarity = rotaryScores(n, cfg.rotaryDims(), cfg.rope_theta, cfg.rope_layout,
                                   std::vector<float>(size_t(cfg.rotaryDims()), 1.0f));
      return r;
    }));
    return;
  }
  updateExplanation(n, learned);
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
                 : loaded->config.positional == Positional::SinusoidalFairseq
                     ? sinusoidalFairseqTable(n, d, loaded->config.src_pad_id)
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
  if (r.relative) {
    applyRelative(r);
    return;
  }
  if (r.rotary) {
    applyRotary(r);
    return;
  }
  const auto& c = model->config();
  const int n = int(r.table.dim(0)), d = int(r.table.dim(1));

  // Curves.
  QChart* chart = chart_view_->chart();
  clearChart(chart);
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
  QValueAxis* ax = integerAxis(n, tr("position"));
  auto* ay = new QValueAxis;
  ay->setTitleText(tr("PE"));
  ay->setTickCount(5);
  if (r.learned) {
    const float pad = 0.05f * std::max(1e-6f, hi - lo);
    ay->setRange(lo - pad, hi + pad);
  } else {
    ay->setRange(-1.0, 1.0);
  }
  attachAxes(chart, ax, ay);
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

  HeatmapData s = positionPairs(r.similarity, tr("position p ↓"), tr("position q →"),
                                tr("position"), tr("position"));
  s.value_name = tr("cosine");
  s.title = tr("Position similarity cos(PE_p, PE_q)");
  float smin = 1;
  for (float v : r.similarity.data) smin = std::min(smin, v);
  s.vmin = smin;
  s.vmax = 1;
  similarity_->setData(std::move(s));

  info_->setText(tr("d_model = %1 · %2 · max_len = %3")
                     .arg(c.d_model)
                     .arg(r.learned ? tr("learned") : tr("sinusoidal"))
                     .arg(c.max_len));
  updateExplanation(n, r.learned);
}

void PositionalView::updateRotaryExplanation(int n) {
  const auto& c = state_->model()->config();
  const std::vector<float> speeds = rotaryFrequencies(c.rotaryDims(), c.rope_theta);
  if (speeds.empty()) return;
  const double kTurn = 2 * std::numbers::pi;
  // "6.3" positions for a full turn, "19869" for a slow one.
  auto turn = [&](float speed) {
    const double w = kTurn / speed;
    return w < 100 ? QString::number(w, 'f', 1) : QString::number(std::llround(w));
  };
  const QString layout = c.rope_layout == RopeLayout::Halves
                             ? tr("Hugging Face's rotate_half layout")
                             : tr("llama2.c's and Meta's interleaved layout");
  explanation_->setHtml(
      tr("<p style='margin:0'><b>Rotary position embeddings (RoPE)</b> add nothing to the token "
         "vectors. Inside every self-attention layer each head's query and key — not its value "
         "— are <b>rotated</b> by an angle that grows with their position: the d_head = %1 "
         "numbers form %2 pairs, dimensions %3 (%4), and at position <i>pos</i> pair <i>i</i> "
         "turns by pos·θ<sub>i</sub>, %5. Upper chart: pair 0 turns %6 radian per position (a "
         "full turn every %7 positions), the last pair %8 (a turn every %9 positions).</p>"
         "<p style='margin:4px 0 0 0'><b>Why only the offset counts.</b> Turning q by mθ and k "
         "by nθ changes the angle between them by (m − n)θ alone: ⟨R(m)q, R(n)k⟩ = ⟨q, "
         "R(n − m)k⟩. A query at position 10 and a key at 7 score as a query at 3 and a key at "
         "0. The heatmap puts the same vector q = k = (1, …, 1) at every position, turns it with "
         "the model's own rotation and compares: it is the same along every diagonal. The lower "
         "chart is that score against the offset m − n: 1 at 0, then falling and wavering as the "
         "pairs drift out of step.</p>"
         "<p style='margin:4px 0 0 0'><b>rope_theta = %10</b> sets how slowly the last pairs "
         "turn: a larger value (Llama 2: 10000, Llama 3: 500000) keeps far-apart positions "
         "distinguishable over longer texts. Shapes: the forward pass's rotation table holds cos "
         "and sin, [2, positions, d_head/2] = %11; Q [batch, heads, len, d_head] and K [batch, "
         "key/value heads, len, d_head] = %12 are turned head by head.</p>")
          .arg(c.rotaryDims() == c.d_k
                   ? QString::number(c.d_k)
                   : tr("%1 (only the first %2 rotate, rotary_pct %3; the rest pass unturned)")
                         .arg(c.d_k)
                         .arg(c.rotaryDims())
                         .arg(c.rotary_pct))
          .arg(c.rotaryDims() / 2)
          .arg(pairDims(c), layout)
          .arg(code(tr("θ<sub>i</sub> = rope_theta<sup>−2i/d_head</sup> = "
                       "%1<sup>−2i/%2</sup>")
                        .arg(c.rope_theta)
                        .arg(c.rotaryDims())))
          .arg(speeds.front(), 0, 'g', 3)
          .arg(turn(speeds.front()))
          .arg(speeds.back(), 0, 'g', 3)
          .arg(turn(speeds.back()))
          .arg(c.rope_theta)
          .arg(shapeString({2, n, c.rotaryDims() / 2}))
          .arg(shapeString({1, c.kvHeads(), n, c.d_k})));
}

void PositionalView::applyRelative(const Result& r) {
  const auto& c = state_->model()->config();
  const int n = int(r.similarity.dim(0));
  // The bias against the offset j − i: row 0 gives the keys after the query, the last row those
  // before it.
  QChart* chart = chart_view_->chart();
  clearChart(chart);
  auto* curve = new QLineSeries;
  QList<QPointF> points;
  float lo = 0, hi = 0;
  for (int off = -(n - 1); off <= n - 1; ++off) {
    const int i = off < 0 ? n - 1 : 0, j = i + off;
    const float v = r.similarity.data[size_t(i) * n + j];
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    points.append(QPointF(off, v));
  }
  curve->replace(points);
  curve->setPen(QPen(kLineColors[0], 2));
  chart->addSeries(curve);
  chart->legend()->hide();
  auto* ax = new QValueAxis;
  ax->setTitleText(tr("offset j − i (key position − query position)"));
  ax->setRange(-(n - 1), n - 1);
  ax->setLabelFormat(QStringLiteral("%d"));
  auto* ay = new QValueAxis;
  ay->setTitleText(tr("bias"));
  const float pad = 0.05f * std::max(1e-6f, hi - lo);
  ay->setRange(lo - pad, hi + pad);
  attachAxes(chart, ax, ay);
  chart->setTitle(tr("%1 head %2: the bias added to a score, by offset")
                      .arg(r.decoder ? tr("Decoder") : tr("Encoder"))
                      .arg(r.head + 1));

  HeatmapData s = positionPairs(r.similarity, tr("query position i ↓"), tr("key position j →"),
                                tr("query position"), tr("key position"));
  s.value_name = tr("bias");
  s.title = tr("bias[i, j] = table[bucket(j − i), head %1]").arg(r.head + 1);
  float amax = 0;
  for (float v : r.similarity.data) amax = std::max(amax, std::abs(v));
  if (amax <= 0) amax = 1;
  s.vmin = -amax;
  s.vmax = amax;
  similarity_->setData(std::move(s));
  info_->setText(tr("relative position bias · %1 buckets · max_distance %2 · %3 heads")
                     .arg(c.relative_buckets)
                     .arg(c.relative_max_distance)
                     .arg(c.n_heads));
  explanation_->setHtml(
      tr("<p style='margin:0'><b>Relative position bias (T5)</b> adds nothing to the token "
         "vectors. Each head learns one number per <b>bucket</b> of the offset j − i between a "
         "key and a query, and adds it to their score before the mask and the softmax: score = "
         "q·k + bias[bucket(j − i)] (T5 does not divide by √d_k). Offsets below %1 each have a "
         "bucket of their own; larger ones share buckets on a logarithmic scale up to %2, beyond "
         "which they all read the last one. %3</p>"
         "<p style='margin:4px 0 0 0'>The table [buckets, heads] = %4 is held by the first "
         "layer of each stack and used by every layer of it; cross-attention has none. The "
         "heatmap is this head's bias for every query and key position; the chart reads it "
         "along one row, by offset.</p>")
          .arg(r.decoder ? c.relative_buckets / 2 : c.relative_buckets / 4)
          .arg(c.relative_max_distance)
          .arg(r.decoder ? tr("In the decoder the buckets are causal: every key after the "
                              "query reads bucket 0 (and is masked anyway).")
                         : tr("In the encoder half the buckets are for keys after the query, "
                              "half for keys before it."))
          .arg(shapeString({c.relative_buckets, c.n_heads})));
}

void PositionalView::applyRotary(const Result& r) {
  const auto& c = state_->model()->config();
  const int n = int(r.similarity.dim(0)), half = int(r.frequencies.size());

  // Each pair's speed on a log scale: from 1 radian per position down to rope_theta^(−(d−2)/d).
  QChart* chart = chart_view_->chart();
  clearChart(chart);
  auto* speeds = new QLineSeries;
  speeds->setName(tr("θ_i"));
  QList<QPointF> points;
  float slowest = 1;
  for (int i = 0; i < half; ++i) {
    points.append(QPointF(i, r.frequencies[size_t(i)]));
    slowest = std::min(slowest, r.frequencies[size_t(i)]);
  }
  speeds->replace(points);
  speeds->setPointsVisible(true);
  speeds->setPen(QPen(kLineColors[0], 2));
  chart->addSeries(speeds);
  chart->legend()->hide();
  auto* ay = new QLogValueAxis;
  ay->setBase(10);
  ay->setLabelFormat(QStringLiteral("%g"));
  ay->setTitleText(tr("θ_i"));
  // A power of 10 below the slowest pair, so that its point is not on the edge.
  ay->setRange(std::pow(10.0, std::floor(std::log10(std::max(slowest, 1e-30f)) - 0.01)), 2.0);
  attachAxes(chart, integerAxis(half, tr("pair i: dimensions %1").arg(pairDims(c))), ay);
  chart->setTitle(tr("How fast each pair of dimensions turns: θ_i radians per position"));

  // The score against the offset: the first column of the heatmap, score(m, 0).
  QChart* oc = offset_view_->chart();
  clearChart(oc);
  auto* curve = new QLineSeries;
  QList<QPointF> offsets;
  for (int m = 0; m < n; ++m) offsets.append(QPointF(m, r.similarity.data[size_t(m) * n]));
  curve->replace(offsets);
  curve->setPen(QPen(kLineColors[2], 2));
  oc->addSeries(curve);
  auto* oy = new QValueAxis;
  oy->setTitleText(tr("score / |q|²"));
  oy->setRange(-1.0, 1.0);
  oy->setTickCount(5);
  attachAxes(oc, integerAxis(n, tr("offset m − n (query position − key position)")), oy);
  oc->setTitle(tr("The score of the same q and k, m − n positions apart"));

  HeatmapData s = positionPairs(r.similarity, tr("query position m ↓"), tr("key position n →"),
                                tr("query position"), tr("key position"));
  s.value_name = tr("score / |q|²");
  s.title = tr("⟨R(m)q, R(n)k⟩ / |q|², q = k = (1, …, 1)");
  s.vmin = -1;
  s.vmax = 1;
  similarity_->setData(std::move(s));

  info_->setText(tr("d_head = %1 · rotary, rope_theta = %2 · max_len = %3")
                     .arg(c.d_k)
                     .arg(c.rope_theta)
                     .arg(c.max_len));
  updateRotaryExplanation(n);
}

}  // namespace attnviz::gui

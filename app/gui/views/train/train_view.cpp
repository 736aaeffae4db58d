#include "views/train/train_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <algorithm>
#include <cmath>

#include "arch/writer.h"
#include "base/error.h"
#include "compute/backends.h"
#include "session/attention_data.h"
#include "views/thumbnails.h"

namespace attnviz::gui {

namespace {

// Suggested steps for a task at the small size (what reaches about 99% held-out exact match).
int suggestedSteps(const QString& task) {
  if (task == QStringLiteral("copy")) return 600;
  if (task == QStringLiteral("reverse")) return 1500;
  if (task == QStringLiteral("sort")) return 2000;
  if (task == QStringLiteral("reorder")) return 3000;
  if (task == QStringLiteral("induction")) return inductionRecipe().steps;  // attn-only-2l
  return 2000;
}

QString blockLabel(const AttentionBlock& b) {
  switch (b.kind) {
    case AttentionKind::EncoderSelf:
      return QObject::tr("Encoder self · L%1").arg(b.layer + 1);
    case AttentionKind::DecoderSelf:
      return QObject::tr("Decoder self · L%1").arg(b.layer + 1);
    case AttentionKind::Cross:
      return QObject::tr("Cross · L%1").arg(b.layer + 1);
  }
  return {};
}

QString percent(double x) {
  return QString::number(100.0 * x, 'f', 1) + QStringLiteral("%");
}

}  // namespace

// ---- TrainingCurves -------------------------------------------------------------------------

TrainingCurves::TrainingCurves(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  setMinimumHeight(150);
}

void TrainingCurves::clear(int planned_steps) {
  planned_ = std::max(planned_steps, 1);
  marker_ = -1;
  steps_.clear();
  loss_.clear();
  smooth_.clear();
  tokens_.clear();
  sequences_.clear();
  smooth_tokens_.clear();
  smooth_sequences_.clear();
  exact_.clear();
  update();
}

void TrainingCurves::addStep(const Trainer::StepStats& s) {
  steps_.push_back(s.step);
  loss_.push_back(s.loss);
  // An exponential moving average, as the tutorials' printed running loss.
  smooth_.push_back(smooth_.empty() ? s.loss : 0.95 * smooth_.back() + 0.05 * s.loss);
  tokens_.push_back(s.token_accuracy);
  sequences_.push_back(s.sequence_accuracy);
  smooth_tokens_.push_back(smooth_tokens_.empty()
                               ? s.token_accuracy
                               : 0.95 * smooth_tokens_.back() + 0.05 * s.token_accuracy);
  smooth_sequences_.push_back(smooth_sequences_.empty()
                                  ? s.sequence_accuracy
                                  : 0.95 * smooth_sequences_.back() + 0.05 * s.sequence_accuracy);
}

void TrainingCurves::addEvaluation(const Trainer::Evaluation& e) {
  exact_.emplace_back(e.step, e.exact_match);
}

void TrainingCurves::setMarker(int step) {
  marker_ = step;
  update();
}

void TrainingCurves::setPlannedSteps(int steps) {
  planned_ = std::max(steps, 1);
  update();
}

std::vector<int> TrainingCurves::xTicks() const {
  // Three or four intervals of a round size: 1, 2, 2.5 or 5 times a power of ten (2.5 from 25 up).
  int step = 1;
  for (int scale = 1; step * 4 < planned_; scale *= 10) {
    for (int m10 : {10, 20, 25, 50}) {
      if (m10 == 25 && scale == 1) continue;
      step = m10 * scale / 10;
      if (step * 4 >= planned_) break;
    }
  }
  std::vector<int> ticks;
  for (int x = 0; x <= planned_; x += step) ticks.push_back(x);
  return ticks;
}

namespace {
const QColor kLossColor(31, 119, 180), kTokenColor(44, 160, 44), kSequenceColor(255, 127, 14),
    kExactColor(214, 39, 40);
constexpr int kSwatch = 16;  // a legend entry: the swatch, 6 px, the name; 14 px to the next
}  // namespace

TrainingCurves::Boxes TrainingCurves::boxes() const {
  const QFontMetrics fm(font());
  Boxes b;
  const int gap = 24;
  b.left = fm.horizontalAdvance(QStringLiteral("100%")) + 12;
  b.top = fm.height() + 8;
  const int pw = (width() - 2 * b.left - gap - 8) / 2;
  if (pw < 40) return b;
  const int loss_x = b.left, acc_x = 2 * b.left + pw + gap;
  // Each panel's legend flows left to right under its step labels, a new row where it would
  // leave the panel's width; the panels end where the taller legend needs its room.
  const std::vector<LegendEntry> loss_entries = {
      {{}, tr("each step"), kLossColor.lighter(170), 1.5},
      {{}, tr("running mean"), kLossColor, 2.5}};
  const std::vector<LegendEntry> acc_entries = {
      {{}, tr("tokens right (batch)"), kTokenColor, 2.5},
      {{}, tr("sentences right (batch)"), kSequenceColor, 2.5},
      {{}, tr("held-out exact match (greedy)"), kExactColor, 2.5}};
  const int row_h = fm.height() + 2;
  auto flow = [&](std::vector<LegendEntry> entries, int x0) {
    int x = x0, row = 0;
    for (LegendEntry& e : entries) {
      // A name wider than the panel is shortened to it (a very narrow window).
      e.name = fm.elidedText(e.name, Qt::ElideRight, pw - kSwatch - 6);
      const int w = kSwatch + 6 + fm.horizontalAdvance(e.name);
      if (x > x0 && x + w > x0 + pw) {
        x = x0;
        ++row;
      }
      e.rect = QRect(x, row * row_h, w, fm.height());  // y: the row, moved down below
      x += w + 14;
    }
    return std::make_pair(entries, row + 1);
  };
  auto [loss_legend, loss_rows] = flow(loss_entries, loss_x);
  auto [acc_legend, acc_rows] = flow(acc_entries, acc_x);
  const int legend_h = std::max(loss_rows, acc_rows) * row_h;
  const int ticks_h = fm.height() + 6;
  const int ph = height() - b.top - ticks_h - legend_h - 6;
  if (ph < 40) return b;
  b.loss = QRect(loss_x, b.top, pw, ph);
  b.accuracy = QRect(acc_x, b.top, pw, ph);
  const int legend_top = b.top + ph + ticks_h;
  for (auto* entries : {&loss_legend, &acc_legend})
    for (LegendEntry& e : *entries) {
      e.rect.translate(0, legend_top);
      b.legend.push_back(e);
    }
  return b;
}

std::vector<QRect> TrainingCurves::xTickLabelRects() const {
  const QFontMetrics fm(font());
  const Boxes b = boxes();
  std::vector<QRect> out;
  if (b.loss.isEmpty()) return out;
  for (const QRect& box : {b.loss, b.accuracy})
    for (int step : xTicks()) {
      const int w = fm.horizontalAdvance(QString::number(step)) + 4;
      const int x = box.left() + int(std::lround(box.width() * double(step) / planned_));
      // Centred under its step, moved in where it would leave the widget (the last one).
      const int left = std::clamp(x - w / 2, 0, std::max(0, width() - w));
      out.emplace_back(left, box.bottom() + 2, w, fm.height());
    }
  return out;
}

void TrainingCurves::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), palette().color(QPalette::Base));
  const QFontMetrics fm(font());
  const QColor text = palette().color(QPalette::Text);
  const QColor grid = palette().color(QPalette::Mid).lighter(130);
  const Boxes b = boxes();
  if (b.loss.isEmpty()) return;
  const int left = b.left, top = b.top;
  const QRect loss_box = b.loss, acc_box = b.accuracy;
  const std::vector<int> ticks = xTicks();
  const std::vector<QRect> tick_rects = xTickLabelRects();
  auto xAt = [&](const QRect& box, double step) {
    return box.left() + box.width() * std::clamp(step / planned_, 0.0, 1.0);
  };
  // Loss on a log scale: 10^lo … 10^hi.
  double lo = -2, hi = 1;
  for (double v : loss_)
    if (v > 0) lo = std::min(lo, std::floor(std::log10(v)));
  lo = std::max(lo, -6.0);
  auto lossY = [&](double v) {
    const double t = (std::log10(std::max(v, 1e-9)) - lo) / (hi - lo);
    return loss_box.bottom() - loss_box.height() * std::clamp(t, 0.0, 1.0);
  };
  auto accY = [&](double v) {
    return acc_box.bottom() - acc_box.height() * std::clamp(v, 0.0, 1.0);
  };
  auto frame = [&](const QRect& box, const QString& title, size_t first_label) {
    p.setPen(text);
    p.drawText(QRect(box.left(), 0, box.width(), top - 4), Qt::AlignLeft | Qt::AlignBottom, title);
    p.setPen(grid);
    p.drawRect(box);
    p.setPen(text);
    for (size_t k = 0; k < ticks.size(); ++k)
      p.drawText(tick_rects[first_label + k], Qt::AlignCenter, QString::number(ticks[k]));
  };
  frame(loss_box, tr("Loss (cross-entropy, log scale)"), 0);
  frame(acc_box, tr("Accuracy"), ticks.size());
  p.setPen(grid);
  for (int e = int(lo); e <= int(hi); ++e) {
    const double y = lossY(std::pow(10.0, e));
    p.setPen(grid);
    p.drawLine(QPointF(loss_box.left(), y), QPointF(loss_box.right(), y));
    p.setPen(text);
    p.drawText(QRectF(0, y - fm.height() / 2.0, left - 4, fm.height()),
               Qt::AlignRight | Qt::AlignVCenter,
               e == 0 ? QStringLiteral("1") : QStringLiteral("1e%1").arg(e));
  }
  for (int k = 0; k <= 4; ++k) {
    const double y = accY(k / 4.0);
    p.setPen(grid);
    p.drawLine(QPointF(acc_box.left(), y), QPointF(acc_box.right(), y));
    p.setPen(text);
    p.drawText(QRectF(acc_box.left() - left, y - fm.height() / 2.0, left - 4, fm.height()),
               Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("%1%").arg(k * 25));
  }
  auto polyline = [&](const std::vector<double>& v, auto yOf, const QRect& box, QColor c,
                      double w) {
    if (v.size() < 2) return;
    QPainterPath path;
    const size_t stride = std::max<size_t>(1, v.size() / 2000);  // at most ~2000 points drawn
    for (size_t i = 0; i < v.size(); i += stride) {
      const QPointF pt(xAt(box, steps_[i]), yOf(v[i]));
      if (i == 0)
        path.moveTo(pt);
      else
        path.lineTo(pt);
    }
    p.setPen(QPen(c, w));
    p.setBrush(Qt::NoBrush);
    p.save();
    p.setClipRect(box.adjusted(0, -1, 1, 1));
    p.drawPath(path);
    p.restore();
  };
  const QColor loss_color = kLossColor, token_color = kTokenColor, seq_color = kSequenceColor,
               exact_color = kExactColor;
  polyline(loss_, lossY, loss_box, loss_color.lighter(170), 1.0);
  polyline(smooth_, lossY, loss_box, loss_color, 2.0);
  // Each batch's accuracy faintly (batches of long or short sentences differ), the running mean
  // bold.
  polyline(tokens_, accY, acc_box, token_color.lighter(160), 1.0);
  polyline(sequences_, accY, acc_box, seq_color.lighter(140), 1.0);
  polyline(smooth_tokens_, accY, acc_box, token_color, 2.0);
  polyline(smooth_sequences_, accY, acc_box, seq_color, 2.0);
  if (!exact_.empty()) {
    QPainterPath path;
    for (size_t i = 0; i < exact_.size(); ++i) {
      const QPointF pt(xAt(acc_box, exact_[i].first), accY(exact_[i].second));
      i ? path.lineTo(pt) : path.moveTo(pt);
    }
    p.setPen(QPen(exact_color, 2.0));
    p.drawPath(path);
    p.setBrush(exact_color);
    for (const auto& [step, v] : exact_)
      p.drawEllipse(QPointF(xAt(acc_box, step), accY(v)), 3.5, 3.5);
    p.setBrush(Qt::NoBrush);
  }
  // The legend, under the step labels.
  for (const LegendEntry& e : b.legend) {
    const int y = e.rect.top() + fm.height() / 2;
    p.setPen(QPen(e.color, e.pen));
    p.drawLine(e.rect.left(), y, e.rect.left() + kSwatch, y);
    p.setPen(text);
    p.drawText(e.rect.left() + kSwatch + 6, e.rect.top() + fm.ascent(), e.name);
  }
  if (marker_ >= 0) {
    QPen pen(text, 1.0, Qt::DashLine);
    p.setPen(pen);
    for (const QRect& box : {loss_box, acc_box}) {
      const double x = xAt(box, marker_);
      p.drawLine(QPointF(x, box.top()), QPointF(x, box.bottom()));
    }
  }
  if (steps_.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(loss_box, Qt::AlignCenter, tr("Press Start"));
  }
}

// ---- HeadGrid -------------------------------------------------------------------------------

HeadGrid::HeadGrid(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  setMinimumSize(240, 160);
}

void HeadGrid::setTrace(std::shared_ptr<const Trace> trace, const Colormap& cmap) {
  labels_.clear();
  thumbs_.clear();
  heads_ = 0;
  if (trace) {
    heads_ = trace->heads();
    for (const AttentionBlock& b : trace->blocks) {
      labels_.push_back(blockLabel(b));
      for (int h = 0; h < heads_; ++h) {
        AttentionSelection s;
        s.kind = b.kind;
        s.layer = b.layer;
        s.head = h;
        thumbs_.push_back(attentionThumbnail(*trace, s, cmap, 64));
      }
    }
  }
  updateGeometry();
  update();
}

void HeadGrid::setCurrent(int block, int head) {
  cur_block_ = block;
  cur_head_ = head;
  update();
}

HeadGrid::Geometry HeadGrid::geometry() const {
  Geometry g;
  const QFontMetrics fm(font());
  g.left = 8 + fm.horizontalAdvance(tr("Decoder self · L88")) + 8;
  g.top = 6 + fm.height() + 4;
  g.gap = 6;
  const int cols = std::max(heads_, 1), rows = std::max(blocks(), 1);
  const int aw = width() - g.left - 8 - cols * g.gap, ah = height() - g.top - 8 - rows * g.gap;
  g.cell = std::clamp(std::min(aw / cols, ah / rows), 16, 160);
  return g;
}

QRect HeadGrid::thumbRect(int block, int head) const {
  const Geometry g = geometry();
  return QRect(g.left + head * (g.cell + g.gap), g.top + block * (g.cell + g.gap), g.cell, g.cell);
}

QSize HeadGrid::sizeHint() const {
  const QFontMetrics fm(font());
  return QSize(fm.horizontalAdvance(tr("Decoder self · L88")) + 24 + std::max(heads_, 1) * 76,
               fm.height() + 18 + std::max(blocks(), 1) * 76);
}

void HeadGrid::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  if (thumbs_.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter,
               tr("Every head's attention on the probe sentence shows here"));
    return;
  }
  const QFontMetrics fm(font());
  const Geometry g = geometry();
  p.setPen(palette().color(QPalette::Text));
  for (int h = 0; h < heads_; ++h) {
    const QRect r = thumbRect(0, h);
    const QString label = fm.horizontalAdvance(tr("head %1").arg(h + 1)) <= r.width() + g.gap
                              ? tr("head %1").arg(h + 1)
                              : QString::number(h + 1);
    p.drawText(QRect(r.left() - g.gap / 2, 4, r.width() + g.gap, fm.height()), Qt::AlignHCenter,
               label);
  }
  for (int b = 0; b < blocks(); ++b) {
    const QRect r0 = thumbRect(b, 0);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(4, r0.top(), g.left - 10, r0.height()), Qt::AlignRight | Qt::AlignVCenter,
               labels_[size_t(b)]);
    for (int h = 0; h < heads_; ++h) {
      const QRect r = thumbRect(b, h);
      const QImage& img = thumbs_[size_t(b) * heads_ + h];
      if (!img.isNull()) p.drawImage(r, img);
      const bool current = b == cur_block_ && h == cur_head_;
      p.setPen(current ? QPen(palette().color(QPalette::Highlight), 3)
                       : QPen(palette().color(QPalette::Mid)));
      p.drawRect(current ? r.adjusted(-2, -2, 1, 1) : r.adjusted(0, 0, -1, -1));
    }
  }
}

void HeadGrid::mousePressEvent(QMouseEvent* event) {
  for (int b = 0; b < blocks(); ++b)
    for (int h = 0; h < heads_; ++h)
      if (thumbRect(b, h).contains(event->position().toPoint())) {
        emit thumbnailClicked(b, h);
        return;
      }
}

// ---- TrainView ------------------------------------------------------------------------------

TrainView::TrainView(AppState* state, QWidget* parent)
    : View(state, tr("What happens when a Transformer trains?"), parent) {
  save_dir_ = QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
              QStringLiteral("/trained");
  buildControls();
  repaint_timer_.setSingleShot(true);
  repaint_timer_.setInterval(50);  // at most 20 repaints a second while training
  connect(&repaint_timer_, &QTimer::timeout, this, [this] {
    curves_->update();
    setStatus();
  });
  connect(state_, &AppState::colormapChanged, this, [this] {
    if (shown_ >= 0) showSnapshot(shown_);
  });
  // The worker's reports arrive queued, on this thread.
  worker_ = new TrainWorker(this);
  connect(worker_, &TrainWorker::prepared, this, &TrainView::onPrepared);
  connect(worker_, &TrainWorker::pausedChanged, this, &TrainView::onPaused);
  connect(worker_, &TrainWorker::stepDone, this, &TrainView::onStep);
  connect(worker_, &TrainWorker::evaluated, this, &TrainView::onEvaluation);
  connect(worker_, &TrainWorker::snapshotTaken, this, &TrainView::onSnapshot);
  connect(worker_, &TrainWorker::runFinished, this, &TrainView::onFinished);
  connect(worker_, &TrainWorker::runFailed, this, &TrainView::onFailed);
  updateExplanation();
  updateControls();
}

TrainView::~TrainView() {
  // Before any widget goes: no report of the run is emitted afterwards (those already queued are
  // dropped with this object).
  worker_->abortAndWait();
}

void TrainView::buildControls() {
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Task:"), this));
  task_combo_ = new QComboBox(this);
  task_combo_->addItem(tr("Copy a sequence"), QStringLiteral("copy"));
  task_combo_->addItem(tr("Reverse a sequence"), QStringLiteral("reverse"));
  task_combo_->addItem(tr("Sort a sequence"), QStringLiteral("sort"));
  task_combo_->addItem(tr("Reorder language (bundled)"), QStringLiteral("reorder"));
  task_combo_->addItem(tr("My sentences (file)…"), QStringLiteral("parallel"));
  task_combo_->addItem(tr("Induction (repeats)"), QStringLiteral("induction"));
  task_combo_->setCurrentIndex(1);
  task_combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  task_combo_->setMinimumContentsLength(16);
  task_combo_->setToolTip(
      tr("What the model learns: copy, reverse or sort 3–12 digits and letters; translate the "
         "bundled reorder model's made-up language; or your own sentence pairs, one "
         "\"source<TAB>target\" pair a line; or continue a sequence seen earlier (Induction: the "
         "recipe in which an induction head forms, docs/training.md)"));
  row->addWidget(task_combo_);
  file_button_ = new QPushButton(tr("Sentences file…"), this);
  file_button_->setToolTip(tr("A UTF-8 text file with one \"source<TAB>target\" pair a line"));
  row->addWidget(file_button_);
  row->addSpacing(8);
  row->addWidget(new QLabel(tr("Size:"), this));
  size_combo_ = new QComboBox(this);
  for (const auto& p : modelPresets())
    size_combo_->addItem(QString::fromStdString(p.name + " — " + p.description),
                         QString::fromStdString(p.name));
  size_combo_->setCurrentIndex(1);
  size_combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  size_combo_->setMinimumContentsLength(24);
  size_combo_->setToolTip(
      tr("The model's size; \"tutorial\" is the tutorials' full size and "
         "trains slowly on a CPU"));
  row->addWidget(size_combo_);
  row->addStretch(1);
  layout_->addLayout(row);
  // The run's length and seed start the second row, beside the buttons: the first keeps its room
  // for the task and the size, shown whole.
  row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Steps:"), this));
  steps_spin_ = new QSpinBox(this);
  steps_spin_->setRange(10, 1000000);
  steps_spin_->setSingleStep(100);
  steps_spin_->setValue(suggestedSteps(QStringLiteral("reverse")));
  steps_spin_->setToolTip(tr("Optimizer steps, each on a fresh batch of 64 sentence pairs"));
  row->addWidget(steps_spin_);
  row->addWidget(new QLabel(tr("Seed:"), this));
  seed_spin_ = new QSpinBox(this);
  seed_spin_->setRange(0, 1000000);
  seed_spin_->setValue(1);
  seed_spin_->setToolTip(tr("The same seed trains the same model again, step for step"));
  row->addWidget(seed_spin_);
  // "Keep checkpoints every N steps", short enough for the row: "Keep: every 100 steps".
  row->addWidget(new QLabel(tr("Keep:"), this));
  keep_spin_ = new QSpinBox(this);
  keep_spin_->setRange(0, 1000000);
  keep_spin_->setValue(0);
  keep_spin_->setPrefix(tr("every "));
  keep_spin_->setSuffix(tr(" steps"));
  keep_spin_->setSpecialValueText(tr("off"));
  keep_spin_->setToolTip(
      tr("Keep checkpoints: the model every N steps (and before the first and after the last) "
         "in a folder "
         "beside the saved model, NAME-checkpoints, with an index of steps and losses: "
         "attnviz-cli history FOLDER shows how each head changed over the run"));
  row->addWidget(keep_spin_);
  start_button_ = new QPushButton(tr("Start"), this);
  pause_button_ = new QPushButton(tr("Pause"), this);
  stop_button_ = new QPushButton(tr("Stop"), this);
  open_button_ = new QPushButton(tr("Open in attnviz"), this);
  open_button_->setToolTip(
      tr("Load the trained model in the other views: Attention, Overview, "
         "Masks, Positional encoding, Decoding"));
  save_button_ = new QPushButton(tr("Save as…"), this);
  row->addSpacing(8);
  for (QPushButton* b : {start_button_, pause_button_, stop_button_}) row->addWidget(b);
  row->addSpacing(16);
  for (QPushButton* b : {open_button_, save_button_}) row->addWidget(b);
  row->addStretch(1);
  layout_->addLayout(row);

  status_ = new QLabel(this);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout_->addWidget(status_);

  auto* split = new QSplitter(Qt::Vertical, this);
  curves_ = new TrainingCurves(split);
  split->addWidget(curves_);
  auto* lower = new QWidget(split);
  auto* ll = new QVBoxLayout(lower);
  ll->setContentsMargins(0, 0, 0, 0);
  probe_label_ = new QLabel(lower);
  probe_label_->setWordWrap(true);
  ll->addWidget(probe_label_);
  auto* heads_split = new QSplitter(Qt::Horizontal, lower);
  grid_ = new HeadGrid(heads_split);
  focus_ = new HeatmapWidget(heads_split);
  focus_->setMaxFitCell(40);
  heads_split->addWidget(grid_);
  heads_split->addWidget(focus_);
  heads_split->setStretchFactor(0, 1);
  heads_split->setStretchFactor(1, 1);
  ll->addWidget(heads_split, 1);
  split->addWidget(lower);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 2);
  split->setSizes({190, 420});
  heads_split->setSizes({500, 500});
  layout_->addWidget(split, 1);

  auto* tl = new QHBoxLayout;
  tl->addWidget(new QLabel(tr("Snapshot:"), this));
  timeline_ = new QSlider(Qt::Horizontal, this);
  timeline_->setRange(0, 0);
  timeline_->setToolTip(tr("Scrub through the recorded snapshots of every head's attention"));
  tl->addWidget(timeline_, 1);
  timeline_label_ = new QLabel(this);
  timeline_label_->setMinimumWidth(
      QFontMetrics(font()).horizontalAdvance(tr("step 888888 of 888888 · loss 8.888")));
  tl->addWidget(timeline_label_);
  layout_->addLayout(tl);

  // Before a run the curves' axis shows the steps asked for.
  connect(steps_spin_, &QSpinBox::valueChanged, this, [this](int steps) {
    if (!running_ && curves_->points() == 0) curves_->setPlannedSteps(steps);
  });
  curves_->setPlannedSteps(steps_spin_->value());
  // The Size box as wide as the size it shows, with its description unclipped.
  auto fitSize = [this] {
    const QFontMetrics fm(size_combo_->font());
    size_combo_->setMinimumContentsLength(
        int(std::ceil(fm.horizontalAdvance(size_combo_->currentText()) /
                      double(fm.horizontalAdvance(QLatin1Char('X'))))));
  };
  connect(size_combo_, &QComboBox::currentIndexChanged, this, fitSize);
  fitSize();
  connect(task_combo_, &QComboBox::currentIndexChanged, this, [this] {
    const QString task = task_combo_->currentData().toString();
    steps_spin_->setValue(suggestedSteps(task));
    if (task == QStringLiteral("parallel") && parallel_file_.isEmpty()) file_button_->click();
    if (task == QStringLiteral("induction")) {  // the recipe: its model, and its history kept
      size_combo_->setCurrentIndex(size_combo_->findData(QStringLiteral("attn-only-2l")));
      keep_spin_->setValue(100);
    }
    updateControls();
  });
  connect(file_button_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Sentence pairs"),
                                                      QFileInfo(parallel_file_).absolutePath(),
                                                      tr("Text (*.txt *.tsv);;All files (*)"));
    if (!path.isEmpty()) setParallelFile(path);
  });
  connect(start_button_, &QPushButton::clicked, this, &TrainView::startTraining);
  connect(pause_button_, &QPushButton::clicked, this, &TrainView::togglePause);
  connect(stop_button_, &QPushButton::clicked, this, &TrainView::stopTraining);
  connect(open_button_, &QPushButton::clicked, this, &TrainView::openInViews);
  connect(save_button_, &QPushButton::clicked, this, &TrainView::saveAs);
  connect(timeline_, &QSlider::valueChanged, this, &TrainView::showSnapshot);
  connect(grid_, &HeadGrid::thumbnailClicked, this, &TrainView::focusHead);
}

void TrainView::setParallelFile(const QString& path) {
  parallel_file_ = path;
  const int i = task_combo_->findData(QStringLiteral("parallel"));
  task_combo_->setItemText(i, tr("My sentences: %1").arg(QFileInfo(path).fileName()));
  updateControls();
}

void TrainView::updateControls() {
  const bool parallel = task_combo_->currentData().toString() == QStringLiteral("parallel");
  file_button_->setVisible(parallel);
  for (QWidget* w : std::initializer_list<QWidget*>{task_combo_, size_combo_, steps_spin_,
                                                    seed_spin_, file_button_})
    w->setEnabled(!running_);
  start_button_->setEnabled(!running_ && (!parallel || !parallel_file_.isEmpty()));
  pause_button_->setEnabled(running_);
  pause_button_->setText(paused_ ? tr("Resume") : tr("Pause"));
  stop_button_->setEnabled(running_);
  open_button_->setEnabled(!running_ && !saved_path_.isEmpty());
  save_button_->setEnabled(!running_ && trained_ != nullptr);
}

void TrainView::updateExplanation() {
  explanation_->setHtml(
      tr("<p>Training repeats one step: a batch of 64 fresh sentence pairs goes through the model "
         "(teacher-forced: the decoder reads %1 + the target), the <b>cross-entropy</b> of its "
         "next-token predictions is the loss, the <b>backward pass</b> gives every weight its "
         "gradient (each op of the forward pass has its backward beside it), and <b>Adam</b> moves "
         "the weights a small step against their gradients (the learning rate warms up, then "
         "decays).</p>"
         "<p>Every few steps the model reads the fixed <b>probe sentence</b> and every head's "
         "attention is kept: drag the <b>Snapshot</b> slider to watch it form — copying draws a "
         "diagonal in the cross-attention, reversing an anti-diagonal. Click a head to see it with "
         "its tokens. The curves show the loss, how many next tokens of the batch were right "
         "(teacher-forced), and the <b>held-out exact match</b>: sentences never trained on, "
         "decoded greedily as the Decoding view does.</p>"
         "<p>The model is PyTorch's translation tutorial's <code>Seq2SeqTransformer</code> "
         "(<code>nn.Transformer</code>): when training ends it is saved as safetensors with its "
         "config, and <b>Open in attnviz</b> shows it in every other view.</p>")
          .arg(code(QStringLiteral("&lt;bos&gt;"))));
}

void TrainView::startTraining() {
  if (running_) return;
  TrainRun run;
  TrainConfig& tc = run.config;
  // The induction task trains with its recipe's settings (lengths, batch, learning rate).
  if (task_combo_->currentData().toString() == QStringLiteral("induction")) tc = inductionRecipe();
  tc.task = task_combo_->currentData().toString().toStdString();
  tc.task_options.path = parallel_file_.toStdString();
  tc.preset = size_combo_->currentData().toString().toStdString();
  tc.steps = steps_spin_->value();
  tc.seed = (uint64_t)seed_spin_->value();
  run.backend = state_->engine()->newBackend();  // the CPU threads chosen in the window too
  if (!QDir().mkpath(save_dir_)) {
    status_->setText(tr("Cannot create %1 to save the trained model in").arg(save_dir_));
    return;
  }
  run.save_path = QDir(save_dir_).filePath(
      QString::fromStdString(tc.task) + QStringLiteral("-") + QString::fromStdString(tc.preset) +
      QStringLiteral("-") +
      QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-HHmmss")) +
      QStringLiteral(".safetensors"));
  run.keep_every = keep_spin_->value();
  if (run.keep_every > 0)
    run.keep_dir = run.save_path.chopped(QStringLiteral(".safetensors").size()) +
                   QStringLiteral("-checkpoints");
  // About 120 snapshots a run, and 10 held-out evaluations.
  run.snapshot_every = std::max(1, tc.steps / 120);
  run.eval_every = std::max(25, tc.steps / 10);
  snapshots_.clear();
  shown_ = -1;
  timeline_->setRange(0, 0);
  curves_->clear(tc.steps);
  grid_->setTrace(nullptr, state_->colormap());
  focus_->setData(HeatmapData());
  have_eval_ = false;
  last_ = Trainer::StepStats();
  saved_path_.clear();
  finish_note_.clear();
  trained_.reset();
  planned_steps_ = tc.steps;
  run_description_ = tr("Preparing…");
  paused_ = false;
  if (!worker_->startRun(std::move(run))) return;
  running_ = true;
  updateControls();
  setStatus();
}

void TrainView::togglePause() {
  if (!running_) return;
  worker_->setPaused(!worker_->pauseRequested());
  pause_button_->setText(worker_->pauseRequested() ? tr("Resume") : tr("Pause"));
}

void TrainView::stopTraining() {
  if (!running_) return;
  worker_->stop();
  stopping_ = true;  // said until the run has ended (setStatus)
  setStatus();
}

void TrainView::onPrepared(const QString& description, const QString& probe_src,
                           const QString& probe_tgt) {
  run_description_ = description;
  probe_label_->setText(tr("Probe sentence: <b>%1</b> → <b>%2</b> (teacher-forced; rows are "
                           "queries, columns keys)")
                            .arg(probe_src.toHtmlEscaped(), probe_tgt.toHtmlEscaped()));
  setStatus();
}

void TrainView::onPaused(bool paused) {
  paused_ = paused;
  updateControls();
  setStatus();
}

void TrainView::onStep(const Trainer::StepStats& s) {
  last_ = s;
  curves_->addStep(s);
  if (!repaint_timer_.isActive()) repaint_timer_.start();
}

void TrainView::onEvaluation(const Trainer::Evaluation& e) {
  last_eval_ = e;
  have_eval_ = true;
  curves_->addEvaluation(e);
  if (!repaint_timer_.isActive()) repaint_timer_.start();
}

void TrainView::onSnapshot(const TrainSnapshot& snap) {
  const bool follow = shown_ < 0 || shown_ == int(snapshots_.size()) - 1;
  snapshots_.push_back(snap);
  const QSignalBlocker block(timeline_);
  timeline_->setRange(0, int(snapshots_.size()) - 1);
  if (follow) {
    timeline_->setValue(int(snapshots_.size()) - 1);
    showSnapshot(int(snapshots_.size()) - 1);
  } else {
    showSnapshot(shown_);
  }
}

void TrainView::onFinished(const QString& path, const Trainer::Evaluation& final_eval, bool stopped,
                           std::shared_ptr<const LoadedModel> model) {
  running_ = false;
  paused_ = false;
  trained_ = std::move(model);
  saved_path_ = path;
  if (stopped) curves_->setPlannedSteps(last_.step);  // the axis ends where the run did
  finish_note_ =
      (stopped ? tr("Stopped after %1 steps") : tr("Finished %1 steps")).arg(last_.step) +
      tr(" in %1 s; held-out exact match %2 (%3 of %4); saved to %5")
          .arg(last_.seconds, 0, 'f', 1)
          .arg(percent(final_eval.exact_match))
          .arg(final_eval.correct)
          .arg(final_eval.total)
          .arg(QDir::toNativeSeparators(path));
  updateControls();
  setStatus();
  curves_->update();
  emit trainingFinished(stopped);
}

void TrainView::onFailed(const QString& message) {
  running_ = false;
  paused_ = false;
  finish_note_ = tr("Training failed: %1").arg(message);
  updateControls();
  setStatus();
  emit trainingFinished(true);
}

void TrainView::setStatus() {
  if (!running_) stopping_ = false;  // the run has ended: "Stopped after …" says the rest
  QString s = run_description_;
  if (stopping_) s += tr("<br>Stopping…");
  if (running_ || last_.step > 0) {
    s += tr("<br>Step <b>%1</b> of %2 · %3 s · loss <b>%4</b> · tokens %5 · sentences %6")
             .arg(last_.step)
             .arg(planned_steps_)
             .arg(last_.seconds, 0, 'f', 1)
             .arg(last_.loss, 0, 'f', 4)
             .arg(percent(last_.token_accuracy))
             .arg(percent(last_.sequence_accuracy));
    if (have_eval_)
      s += tr(" · held-out exact match <b>%1</b> (step %2)")
               .arg(percent(last_eval_.exact_match))
               .arg(last_eval_.step);
    if (paused_) s += tr(" · <b>paused</b>");
  }
  if (!finish_note_.isEmpty()) s += QStringLiteral("<br>") + finish_note_.toHtmlEscaped();
  if (s.isEmpty())
    s =
        tr("Choose a task and a size, then Start. Training runs in the background; you can keep "
           "using the other views.");
  status_->setText(s);
}

void TrainView::showSnapshot(int i) {
  if (i < 0 || i >= int(snapshots_.size())) return;
  shown_ = i;
  const TrainSnapshot& snap = snapshots_[size_t(i)];
  grid_->setTrace(snap.trace, state_->colormap());
  if (focus_block_ < 0 && !snap.trace->blocks.empty()) {
    // Start with the last cross-attention block (an encoder-decoder's alignment), head 1.
    focus_block_ = int(snap.trace->blocks.size()) - 1;
    focus_head_ = 0;
  }
  focusHead(focus_block_, focus_head_);
  timeline_label_->setText(snap.step == 0 ? tr("step 0 (untrained)")
                                          : tr("step %1 of %2 · loss %3")
                                                .arg(snap.step)
                                                .arg(planned_steps_)
                                                .arg(snap.loss, 0, 'f', 3));
  curves_->setMarker(snap.step);
  if (timeline_->value() != i) {
    const QSignalBlocker block(timeline_);
    timeline_->setValue(i);
  }
}

void TrainView::focusHead(int block, int head) {
  if (shown_ < 0) return;
  const Trace& trace = *snapshots_[size_t(shown_)].trace;
  if (block < 0 || block >= int(trace.blocks.size()) || head < 0 || head >= trace.heads()) return;
  focus_block_ = block;
  focus_head_ = head;
  grid_->setCurrent(block, head);
  const AttentionBlock& b = trace.blocks[size_t(block)];
  AttentionSelection s;
  s.kind = b.kind;
  s.layer = b.layer;
  s.head = head;
  HeatmapData data = attentionHeatmap(trace, s, MatrixValues::Probabilities, false,
                                      -std::numeric_limits<float>::infinity());
  data.title = tr("%1 · head %2 · step %3")
                   .arg(blockLabel(b))
                   .arg(head + 1)
                   .arg(snapshots_[size_t(shown_)].step);
  focus_->setColormap(state_->colormap());
  focus_->setData(std::move(data));
}

void TrainView::openInViews() {
  if (running_ || saved_path_.isEmpty()) return;
  if (state_->engine()->loadModel(saved_path_)) emit openView(QStringLiteral("attention"));
}

void TrainView::saveAs() {
  if (running_ || !trained_) return;
  const QString path = QFileDialog::getSaveFileName(this, tr("Save the trained model"), saved_path_,
                                                    tr("Models (*.safetensors)"));
  if (path.isEmpty()) return;
  try {
    saveModel(*trained_, path.toStdString());
    saved_path_ = path;
    finish_note_ = tr("Saved to %1").arg(QDir::toNativeSeparators(path));
  } catch (const Error& e) {
    finish_note_ = tr("Could not save: %1").arg(QString::fromUtf8(e.what()));
  }
  setStatus();
}

void TrainView::refresh() {
  // Training state lives here, not in the engine's snapshot: nothing to redo.
  setStatus();
}

}  // namespace attnviz::gui

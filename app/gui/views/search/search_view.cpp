#include "views/search/search_view.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTableWidget>
#include <QTimer>
#include <QToolTip>
#include <cmath>

#include "model/decoding.h"
#include "session/teaching_util.h"
#include "widgets/token_label.h"

namespace attnviz::gui {

namespace {

constexpr double kColW = 124, kRowH = 48, kNodeW = 108, kNodeH = 38, kMargin = 16;

QString tokenText(const Vocabulary* v, int id) {
  return v ? tokenLabel(v->token(id)) : QString::number(id);
}

QString stateText(BeamNode::State s) {
  switch (s) {
    case BeamNode::State::Root:
      return QObject::tr("the prefix");
    case BeamNode::State::Expanded:
      return QObject::tr("kept and extended");
    case BeamNode::State::Finished:
      return QObject::tr("finished (end token)");
    case BeamNode::State::Cut:
      return QObject::tr("cut at the length limit");
    case BeamNode::State::Pruned:
      return QObject::tr("pruned: not among the best");
  }
  return {};
}

}  // namespace

// ---- the tree ---------------------------------------------------------------------------------

BeamTreeWidget::BeamTreeWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
}

void BeamTreeWidget::setResult(std::shared_ptr<const BeamResult> result, const Vocabulary* vocab) {
  result_ = std::move(result);
  vocab_ = vocab;
  selected_ = result_ ? result_->best() : -1;
  layoutNodes();
  updateGeometry();
  update();
}

void BeamTreeWidget::layoutNodes() {
  rects_.clear();
  size_ = QSize(400, 120);
  if (!result_) return;
  std::vector<int> per_step;
  double w = 0, h = 0;
  for (const BeamNode& n : result_->nodes) {
    if (int(per_step.size()) <= n.step) per_step.resize(size_t(n.step) + 1, 0);
    const int row = per_step[size_t(n.step)]++;
    const QRectF r(kMargin + n.step * kColW, kMargin + 22 + row * kRowH, kNodeW, kNodeH);
    rects_.push_back(r);
    w = std::max(w, r.right());
    h = std::max(h, r.bottom());
  }
  size_ = QSize(int(w + kMargin), int(h + kMargin));
}

QSize BeamTreeWidget::sizeHint() const {
  return size_;
}

void BeamTreeWidget::setSelected(int node) {
  selected_ = node;
  update();
}

QRectF BeamTreeWidget::nodeRect(int node) const {
  return node >= 0 && node < int(rects_.size()) ? rects_[size_t(node)] : QRectF();
}

int BeamTreeWidget::nodeAt(QPointF pos) const {
  for (size_t k = 0; k < rects_.size(); ++k)
    if (rects_[k].contains(pos)) return int(k);
  return -1;
}

void BeamTreeWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  if (!result_) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("Press Search to draw the beam search tree"));
    return;
  }
  p.setRenderHint(QPainter::Antialiasing);
  const auto& nodes = result_->nodes;
  // The paths of the best and the selected hypotheses.
  std::vector<uint8_t> on_best(nodes.size(), 0), on_sel(nodes.size(), 0);
  for (int n = result_->best(); n >= 0; n = nodes[size_t(n)].parent) on_best[size_t(n)] = 1;
  for (int n = selected_; n >= 0 && n < int(nodes.size()); n = nodes[size_t(n)].parent)
    on_sel[size_t(n)] = 1;
  QFont base = font(), bold = font(), small = font();
  bold.setBold(true);
  small.setPointSizeF(base.pointSizeF() * 0.82);
  // Step headers.
  p.setFont(small);
  p.setPen(QColor(0x70, 0x70, 0x70));
  int steps = 0;
  for (const auto& n : nodes) steps = std::max(steps, n.step);
  for (int s = 0; s <= steps; ++s)
    p.drawText(QRectF(kMargin + s * kColW, 2, kNodeW, 18), Qt::AlignCenter,
               s == 0 ? tr("prefix") : tr("step %1").arg(s));
  // Edges.
  for (size_t k = 1; k < nodes.size(); ++k) {
    const QRectF a = rects_[size_t(nodes[k].parent)], b = rects_[k];
    QPainterPath path(QPointF(a.right(), a.center().y()));
    const double mx = (a.right() + b.left()) / 2;
    path.cubicTo(QPointF(mx, a.center().y()), QPointF(mx, b.center().y()),
                 QPointF(b.left(), b.center().y()));
    QColor c(0xb8, 0xb8, 0xb8);
    double w = 1.2;
    if (on_best[k]) c = QColor(0xff, 0x6f, 0x00), w = 2.6;
    if (on_sel[k] && selected_ != result_->best()) c = QColor(0x1a, 0x5f, 0xb4), w = 2.6;
    if (nodes[k].state == BeamNode::State::Pruned) c.setAlpha(110);
    p.setPen(QPen(c, w));
    p.drawPath(path);
  }
  // Nodes.
  for (size_t k = 0; k < nodes.size(); ++k) {
    const BeamNode& n = nodes[k];
    const QRectF r = rects_[k];
    QColor fill(0xfd, 0xf0, 0xdc), border(0x80, 0x80, 0x80), text(0x20, 0x20, 0x20);
    Qt::PenStyle style = Qt::SolidLine;
    double bw = 1.2;
    switch (n.state) {
      case BeamNode::State::Root:
        fill = QColor(0xee, 0xee, 0xee);
        break;
      case BeamNode::State::Finished:
        fill = QColor(0xd9, 0xf0, 0xd3);
        border = QColor(0x2e, 0x7d, 0x32);
        bw = 2;
        break;
      case BeamNode::State::Cut:
        fill = QColor(0xfb, 0xe6, 0xc8);
        border = QColor(0xc0, 0x70, 0x10);
        style = Qt::DashLine;
        bw = 1.6;
        break;
      case BeamNode::State::Pruned:
        fill = QColor(0xf7, 0xf7, 0xf7);
        border = QColor(0xc8, 0xc8, 0xc8);
        text = QColor(0x9a, 0x9a, 0x9a);
        style = Qt::DotLine;
        break;
      case BeamNode::State::Expanded:
        break;
    }
    if (int(k) == selected_) border = QColor(0x1a, 0x5f, 0xb4), bw = 3;
    p.setPen(QPen(border, bw, style));
    p.setBrush(fill);
    p.drawRoundedRect(r, 6, 6);
    p.setBrush(Qt::NoBrush);
    p.setPen(text);
    p.setFont(bold);
    const QString tok =
        n.state == BeamNode::State::Root ? tokenText(vocab_, n.token) : tokenText(vocab_, n.token);
    p.drawText(r.adjusted(4, 2, -4, -r.height() / 2), Qt::AlignCenter,
               QFontMetrics(bold).elidedText(tok, Qt::ElideRight, int(r.width() - 8)));
    p.setFont(small);
    const double pr = std::exp(n.log_prob);
    const QString score =
        n.state == BeamNode::State::Root
            ? QStringLiteral("score 0")
            : QStringLiteral("%1 · p %2")
                  .arg(QString::number(n.score, 'f', 2).replace('-', QChar(0x2212)),
                       pr >= 0.01 ? QString::number(pr, 'f', 2) : QStringLiteral("<0.01"));
    p.drawText(r.adjusted(4, r.height() / 2, -4, -2), Qt::AlignCenter, score);
    if (n.rank >= 0) {
      const QRectF badge(r.right() - 22, r.top() - 8, 26, 15);
      p.setPen(Qt::NoPen);
      p.setBrush(n.rank == 0 ? QColor(0xff, 0x6f, 0x00) : QColor(0x2e, 0x7d, 0x32));
      p.drawRoundedRect(badge, 6, 6);
      p.setBrush(Qt::NoBrush);
      p.setPen(Qt::white);
      p.drawText(badge, Qt::AlignCenter, QStringLiteral("#%1").arg(n.rank + 1));
    }
  }
}

void BeamTreeWidget::mousePressEvent(QMouseEvent* event) {
  const int n = nodeAt(event->position());
  if (n >= 0) {
    selected_ = n;
    update();
    emit nodeSelected(n);
  }
}

void BeamTreeWidget::mouseDoubleClickEvent(QMouseEvent* event) {
  const int n = nodeAt(event->position());
  if (n >= 0) emit nodeActivated(n);
}

bool BeamTreeWidget::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip && result_) {
    auto* he = static_cast<QHelpEvent*>(event);
    const int k = nodeAt(he->pos());
    if (k < 0) {
      QToolTip::hideText();
      return true;
    }
    const BeamNode& n = result_->nodes[size_t(k)];
    QStringList words;
    for (int id : result_->prefix) words << tokenText(vocab_, id);
    for (int id : result_->path(k)) words << tokenText(vocab_, id);
    QString tip = tr("<b>%1</b><br>%2").arg(words.join(' ').toHtmlEscaped(), stateText(n.state));
    if (n.state != BeamNode::State::Root)
      tip += tr("<br>log P(“%1”) = %2 (p = %3)<br>score (Σ log P) = %4")
                 .arg(tokenText(vocab_, n.token).toHtmlEscaped(), num(n.log_prob),
                      num(std::exp(n.log_prob)), num(n.score));
    if (n.rank >= 0)
      tip += tr("<br>rank %1, ranked by score / %2^%3 = %4")
                 .arg(n.rank + 1)
                 .arg(n.step)
                 .arg(result_->length_penalty)
                 .arg(num(n.ranked));
    QToolTip::showText(he->globalPos(), tip, this);
    return true;
  }
  return QWidget::event(event);
}

// ---- the view ---------------------------------------------------------------------------------

SearchView::SearchView(AppState* state, QWidget* parent)
    : View(state, tr("What am I looking at?"), parent) {
  auto* g = new QGridLayout;
  g->setHorizontalSpacing(8);
  auto spin = [this](int lo, int hi, int value, const QString& tip) {
    auto* s = new QSpinBox(this);
    s->setRange(lo, hi);
    s->setValue(value);
    s->setToolTip(tip);
    return s;
  };
  auto dspin = [this](double lo, double hi, double step, double value, const QString& tip) {
    auto* s = new QDoubleSpinBox(this);
    s->setRange(lo, hi);
    s->setSingleStep(step);
    s->setDecimals(2);
    s->setValue(value);
    s->setToolTip(tip);
    return s;
  };
  method_ = new QComboBox(this);
  method_->addItem(tr("Greedy (beam width 1)"));
  method_->addItem(tr("Sampling"));
  method_->addItem(tr("Beam search"));
  method_->setCurrentIndex(2);
  g->addWidget(new QLabel(tr("Method:"), this), 0, 0);
  g->addWidget(method_, 0, 1);
  g->addWidget(new QLabel(tr("Max new tokens:"), this), 0, 2);
  max_new_ =
      spin(0, 8192, 0, tr("default: the decoding length setting (else the source length + 5)"));
  max_new_->setSpecialValueText(tr("default"));
  g->addWidget(max_new_, 0, 3);
  run_ = new QPushButton(tr("Search"), this);
  run_->setDefault(true);
  g->addWidget(run_, 0, 5);
  load_ = new QPushButton(tr("Show the chosen hypothesis in every view"), this);
  load_->setToolTip(
      tr("Loads the selected beam (or sample) as the current decode (double-click "
         "a node does the same)"));
  g->addWidget(load_, 0, 6);

  g->addWidget(new QLabel(tr("Sampling:"), this), 1, 0);
  auto* sr = new QHBoxLayout;
  temperature_ =
      dspin(0.05, 10, 0.1, 1.0, tr("softmax(logits / T): T < 1 sharpens, T > 1 flattens"));
  top_k_ = spin(0, 1 << 20, 0, tr("Keep only the k most probable tokens (0 = all)"));
  top_k_->setSpecialValueText(tr("all"));
  top_p_ = dspin(0.01, 1.0, 0.05, 1.0,
                 tr("Then keep the fewest most probable tokens whose "
                    "probabilities add up to p (1 = all)"));
  seed_ = spin(0, 1'000'000'000, 1, tr("The same seed draws the same sentence"));
  samples_ = spin(1, 50, 5, tr("How many samples, with seeds seed, seed + 1, …"));
  for (auto [label, w] :
       std::initializer_list<std::pair<QString, QWidget*>>{{tr("temperature"), temperature_},
                                                           {tr("top-k"), top_k_},
                                                           {tr("top-p"), top_p_},
                                                           {tr("seed"), seed_},
                                                           {tr("samples"), samples_}}) {
    sr->addWidget(new QLabel(label, this));
    sr->addWidget(w);
    sr->addSpacing(10);
  }
  sr->addStretch(1);
  g->addLayout(sr, 1, 1, 1, 6);
  g->addWidget(new QLabel(tr("Beam:"), this), 2, 0);
  auto* br = new QHBoxLayout;
  width_ = spin(1, 32, 4, tr("How many hypotheses are kept at each step"));
  alpha_ = dspin(0, 3, 0.1, 0.0,
                 tr("Finished hypotheses are ranked by score / length^α; 0 = the "
                    "plain sum of log-probabilities"));
  pruned_ = spin(0, 8, 2, tr("How many of the best candidates that were not kept to draw, greyed"));
  for (auto [label, w] :
       std::initializer_list<std::pair<QString, QWidget*>>{{tr("width"), width_},
                                                           {tr("length penalty α"), alpha_},
                                                           {tr("pruned shown"), pruned_}}) {
    br->addWidget(new QLabel(label, this));
    br->addWidget(w);
    br->addSpacing(10);
  }
  br->addStretch(1);
  g->addLayout(br, 2, 1, 1, 6);
  g->setColumnStretch(4, 1);
  layout_->addLayout(g);

  info_ = new QLabel(this);
  info_->setWordWrap(true);
  info_->setTextFormat(Qt::RichText);
  layout_->addWidget(info_);
  results_ = new QStackedWidget(this);
  auto* scroll = new QScrollArea(results_);
  tree_ = new BeamTreeWidget(scroll);
  scroll->setWidget(tree_);
  scroll->setWidgetResizable(false);
  scroll->setBackgroundRole(QPalette::Base);
  results_->addWidget(scroll);
  table_ = new QTableWidget(results_);
  table_->setColumnCount(4);
  table_->setHorizontalHeaderLabels({tr("seed"), tr("sampled sentence"), tr("log P (model)"),
                                     tr("each token: p drawn from / p model")});
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->hide();
  results_->addWidget(table_);
  layout_->addWidget(results_, 1);

  connect(method_, &QComboBox::currentIndexChanged, this, [this] { updateControls(); });
  connect(run_, &QPushButton::clicked, this, [this] { search(); });
  connect(load_, &QPushButton::clicked, this, [this] { loadSelected(); });
  connect(tree_, &BeamTreeWidget::nodeSelected, this, [this] { describeSelection(); });
  connect(tree_, &BeamTreeWidget::nodeActivated, this, [this] { loadSelected(); });
  connect(table_, &QTableWidget::itemSelectionChanged, this, [this] { describeSelection(); });
  connect(table_, &QTableWidget::cellDoubleClicked, this, [this] { loadSelected(); });
  updateControls();
}

QWidget* SearchView::exportWidget() {
  return results_->currentIndex() == 0 ? static_cast<QWidget*>(tree_) : table_;
}

void SearchView::updateControls() {
  const auto m = Method(method_->currentIndex());
  for (QWidget* w : {static_cast<QWidget*>(temperature_), static_cast<QWidget*>(top_k_),
                     static_cast<QWidget*>(top_p_), static_cast<QWidget*>(seed_),
                     static_cast<QWidget*>(samples_)})
    w->setEnabled(m == Method::Sampling);
  for (QWidget* w : {static_cast<QWidget*>(width_), static_cast<QWidget*>(pruned_)})
    w->setEnabled(m != Method::Sampling);
  width_->setEnabled(m == Method::Beam);
  alpha_->setEnabled(m == Method::Beam);
  results_->setCurrentIndex(m == Method::Sampling ? 1 : 0);
}

bool SearchView::startingPoint(std::vector<int>* src_out, std::vector<int>* prefix_out) const {
  auto snap = state_->snapshot();
  const Model* model = state_->model();
  if (!snap || !snap->trace || !model || !model->config().hasDecoder()) return false;
  const Trace& t = *snap->trace;
  std::vector<int>& src = *src_out;
  std::vector<int>& prefix = *prefix_out;
  src.clear();
  prefix.clear();
  if (snap->batch) {
    const int b = std::clamp(state_->selection().batch, 0, std::max(0, t.batch - 1));
    if (b < int(snap->batch_src.size())) src = snap->batch_src[size_t(b)];
    if (b < int(snap->batch_tgt.size()) && !snap->batch_tgt[size_t(b)].empty())
      prefix = {snap->batch_tgt[size_t(b)].front()};
  } else {
    src = snap->src_ids;
    if (!t.tgt_ids.empty())
      prefix.assign(
          t.tgt_ids[0].begin(),
          t.tgt_ids[0].begin() +
              std::min<size_t>(t.tgt_ids[0].size(), size_t(std::max(1, snap->prefix_positions))));
  }
  return true;
}

bool SearchView::search() {
  auto snap = state_->snapshot();
  const Model* model = state_->model();
  Engine* engine = state_->engine();
  if (!snap || !snap->trace || !model || engine->busy()) return false;
  std::vector<int> src, prefix;
  if (!startingPoint(&src, &prefix)) {
    info_->setText(tr("This model has no decoder: there is nothing to decode."));
    return false;
  }
  const auto method = Method(method_->currentIndex());
  const MaskOptions masks = snap->masks;
  // "default": the length the engine decodes with (its setting, else the usual rule).
  const int max_new = max_new_->value() > 0 ? max_new_->value() : engine->maxNewTokens();
  SamplingOptions so;
  so.temperature = float(temperature_->value());
  so.top_k = top_k_->value();
  so.top_p = float(top_p_->value());
  so.max_new_tokens = max_new;
  so.masks = masks;
  const int n_samples = samples_->value();
  const uint64_t seed0 = uint64_t(seed_->value());
  BeamOptions bo;
  bo.width = method == Method::Greedy ? 1 : width_->value();
  bo.length_penalty = method == Method::Greedy ? 0.0f : float(alpha_->value());
  bo.max_new_tokens = max_new;
  bo.pruned_shown = pruned_->value();
  bo.masks = masks;
  info_->setText(tr("Searching…"));
  return engine->runTask(
      tr("Searching"), [=, this](const Model& m, const std::atomic<bool>& cancel) {
        std::shared_ptr<const BeamResult> beam;
        std::vector<SampleResult> samples;
        if (method == Method::Sampling) {
          for (int k = 0; k < n_samples; ++k) {
            SamplingOptions o = so;
            o.seed = seed0 + uint64_t(k);
            o.cancel = &cancel;
            samples.push_back(sampleDecode(m, src, prefix, o));
          }
        } else {
          BeamOptions o = bo;
          o.cancel = &cancel;
          beam = std::make_shared<const BeamResult>(beamSearch(m, src, prefix, o));
        }
        return std::function<void()>([this, beam, samples, src, prefix, max_new] {
          beam_ = beam;
          samples_out_ = samples;
          src_ = src;
          prefix_ = prefix;
          result_max_new_ = max_new;
          const Model* model = state_->model();
          tree_->setResult(beam_, model ? &model->tgtVocab() : nullptr);
          tree_->adjustSize();
          showSamples();
          describeSelection();
        });
      });
}

void SearchView::showSamples() {
  const Model* model = state_->model();
  table_->setRowCount(int(samples_out_.size()));
  for (size_t r = 0; r < samples_out_.size(); ++r) {
    const SampleResult& s = samples_out_[r];
    QStringList words, steps;
    for (size_t k = 0; k < s.ids.size(); ++k) {
      const QString w = model ? tokenLabel(model->tgtVocab().token(s.ids[k])) : QString();
      words << w;
      if (k < s.steps.size())
        steps << QStringLiteral("%1 %2/%3")
                     .arg(w, num(s.steps[k].prob, 2), num(s.steps[k].model_prob, 2));
    }
    auto item = [](const QString& t) { return new QTableWidgetItem(t); };
    table_->setItem(int(r), 0, item(QString::number(seed_->value() + int(r))));
    table_->setItem(int(r), 1, item(words.join(' ')));
    table_->setItem(int(r), 2, item(num(s.log_prob, 3)));
    table_->setItem(int(r), 3, item(steps.join(QStringLiteral(" · "))));
  }
  if (!samples_out_.empty()) table_->selectRow(0);
}

void SearchView::describeSelection() {
  const Model* model = state_->model();
  if (!model) return;
  const Vocabulary& v = model->tgtVocab();
  auto words = [&](const std::vector<int>& ids) {
    QStringList out;
    for (const auto& w : v.decode(ids)) out << QString::fromStdString(w).toHtmlEscaped();
    return out.join(' ');
  };
  if (results_->currentIndex() == 0 && beam_) {
    const int n = tree_->selected();
    if (n < 0) return;
    const BeamNode& node = beam_->nodes[size_t(n)];
    QStringList finals;
    for (int f : beam_->final)
      finals << QStringLiteral("#%1 %2 (%3)")
                    .arg(beam_->nodes[size_t(f)].rank + 1)
                    .arg(words(beam_->path(f)))
                    .arg(num(beam_->nodes[size_t(f)].score, 3));
    info_->setText(
        tr("<b>Chosen:</b> %1 — score %2%3<br><b>Finished hypotheses, best first:</b> %4")
            .arg(words(beam_->path(n)))
            .arg(num(node.score, 4))
            .arg(node.rank >= 0 ? tr(", rank %1").arg(node.rank + 1) : QString())
            .arg(finals.join(QStringLiteral(" · "))));
  } else if (results_->currentIndex() == 1 && !samples_out_.empty()) {
    const int r = std::max(0, table_->currentRow());
    if (r < int(samples_out_.size()))
      info_->setText(tr("<b>Sample %1:</b> %2 — log P = %3 under the model")
                         .arg(r + 1)
                         .arg(words(samples_out_[size_t(r)].ids))
                         .arg(num(samples_out_[size_t(r)].log_prob, 4)));
  }
}

bool SearchView::loadSelected() {
  std::vector<int> ids;
  if (results_->currentIndex() == 0 && beam_ && tree_->selected() >= 0) {
    ids = beam_->path(tree_->selected());
  } else if (results_->currentIndex() == 1 && !samples_out_.empty()) {
    const int r = std::max(0, table_->currentRow());
    if (r >= int(samples_out_.size())) return false;
    ids = samples_out_[size_t(r)].ids;
  } else {
    return false;
  }
  return state_->engine()->loadDecode(src_, prefix_, ids, result_max_new_);
}

void SearchView::refresh() {
  const Model* model = state_->model();
  const bool decoder = model && model->config().hasDecoder();
  run_->setEnabled(decoder);
  load_->setEnabled(decoder);
  if (model) top_k_->setMaximum(std::max(1, int(model->config().outputVocab().size())));
  if (model && !decoder)
    info_->setText(tr("This model has no decoder: there is nothing to decode."));
  else if (!beam_ && samples_out_.empty())
    info_->setText(tr("Press Search: it starts from the current source and target prefix."));
  // A new source (or prefix): search again once the engine is free (not inside its signal).
  std::vector<int> src, prefix;
  if (isVisible() && !auto_pending_ && startingPoint(&src, &prefix) &&
      (src != src_ || prefix != prefix_ || (!beam_ && samples_out_.empty()))) {
    auto_pending_ = true;
    QTimer::singleShot(0, this, [this] {
      auto_pending_ = false;
      if (isVisible() && !state_->engine()->busy()) search();
    });
  }
  explanation_->setHtml(
      tr("<p style='margin:0'>Greedy decoding takes the most probable token at every step. "
         "<b>Sampling</b> draws it instead from softmax(logits / temperature), after keeping only "
         "the top-k tokens and then the fewest tokens whose probabilities reach top-p; a seed "
         "makes the draws repeatable. <b>Beam search</b> keeps the <i>width</i> best partial "
         "sentences by their score, the sum of the log-probabilities of their tokens (natural "
         "log; 0 is certain, more negative is less likely): at every step each kept hypothesis "
         "proposes every token, and the best candidates stay; a hypothesis that chooses the end "
         "token (or reaches the length limit) is finished and frees its slot. Finished ones are "
         "ranked by score / length^α (α = 0: the plain score).</p>"
         "<p style='margin:4px 0 0 0'>In the tree each column is a step: green boxes finished, "
         "dashed ones were cut at the length limit, grey ones were pruned; the orange path is the "
         "best hypothesis. Click a box to choose it, double-click (or the button) to load it "
         "into every view.</p>"));
}

}  // namespace attnviz::gui

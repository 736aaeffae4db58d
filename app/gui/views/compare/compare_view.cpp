#include "views/compare/compare_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QTimer>
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "model/decoding.h"
#include "model/head_stats.h"
#include "session/teaching_util.h"
#include "widgets/heatmap.h"
#include "widgets/token_label.h"

namespace attnviz::gui {

namespace {

// The matrix a comparison shows for one run: one head, the mean of the heads, or a rollout.
std::vector<float> matrixOf(const Trace& t, const AttentionSelection& s, bool rollout, int* rows,
                            int* cols) {
  const AttentionBlock* a = t.block(s.kind, s.layer);
  if (!a) return {};
  *rows = a->q_len;
  *cols = a->k_len;
  if (!rollout) return attentionMatrix(*a, s, MatrixValues::Probabilities, 0.0f);
  if (s.kind == AttentionKind::Cross) return crossRollout(t, s.layer, s.batch);
  return attentionRollout(t, s.kind, s.layer, s.batch);
}

QStringList mergedLabels(const QStringList& a, const QStringList& b, int n) {
  QStringList out;
  for (int k = 0; k < n; ++k) {
    const QString x = a.value(k), y = b.value(k);
    out << (x == y ? x : QStringLiteral("%1→%2").arg(x, y));
  }
  return out;
}

}  // namespace

Difference attentionDifference(const Trace& ta, const Trace& tb, const AttentionSelection& s,
                               bool rollout) {
  Difference d;
  int ra = 0, ca = 0, rb = 0, cb = 0;
  const std::vector<float> a = matrixOf(ta, s, rollout, &ra, &ca);
  const std::vector<float> b = matrixOf(tb, s, rollout, &rb, &cb);
  if (a.empty() || b.empty()) return d;
  d.rows = std::min(ra, rb);
  d.cols = std::min(ca, cb);
  d.same_shape = ra == rb && ca == cb;
  const std::vector<uint8_t> ma = maskMatrix(*ta.block(s.kind, s.layer), s.batch);
  const std::vector<uint8_t> mb = maskMatrix(*tb.block(s.kind, s.layer), s.batch);
  for (int i = 0; i < d.rows; ++i)
    for (int j = 0; j < d.cols; ++j) {
      const float x = a[size_t(i) * ca + j], y = b[size_t(i) * cb + j];
      d.a.push_back(x);
      d.b.push_back(y);
      d.diff.push_back(y - x);
      d.a_mask.push_back(rollout ? 0 : ma[size_t(i) * ca + j]);
      d.b_mask.push_back(rollout ? 0 : mb[size_t(i) * cb + j]);
    }
  d.row_labels =
      mergedLabels(queryLabels(ta, s.kind, s.batch), queryLabels(tb, s.kind, s.batch), d.rows);
  d.col_labels =
      mergedLabels(keyLabels(ta, s.kind, s.batch), keyLabels(tb, s.kind, s.batch), d.cols);
  return d;
}

std::vector<float> changePerHead(const Trace& ta, const Trace& tb, AttentionKind kind, int batch) {
  const int layers = std::min(ta.layers(kind), tb.layers(kind));
  const int heads = ta.heads();
  std::vector<float> out(size_t(layers) * heads, 0.0f);
  for (int l = 0; l < layers; ++l) {
    const AttentionBlock& a = *ta.block(kind, l);
    const AttentionBlock& b = *tb.block(kind, l);
    const int rows = std::min(a.q_len, b.q_len), cols = std::min(a.k_len, b.k_len);
    std::vector<float> pa(size_t(rows) * cols), pb(pa.size());
    for (int h = 0; h < heads; ++h) {
      a.probTile(batch, h, 0, rows, 0, cols, pa.data());
      b.probTile(batch, h, 0, rows, 0, cols, pb.data());
      double sum = 0;
      for (size_t c = 0; c < pa.size(); ++c) sum += std::abs(pb[c] - pa[c]);
      out[size_t(l) * heads + h] = rows * cols > 0 ? float(sum / (rows * cols)) : 0.0f;
    }
  }
  return out;
}

// ---- the view ---------------------------------------------------------------------------------

CompareView::CompareView(AppState* state, QWidget* parent)
    : View(state, tr("What am I looking at?"), parent) {
  auto* form = new QGridLayout;
  form->setHorizontalSpacing(8);
  form->addWidget(new QLabel(tr("<b>B</b> is A with:"), this), 0, 0);
  auto* masks = new QHBoxLayout;
  padding_ = new QCheckBox(tr("padding mask"), this);
  look_ahead_ = new QCheckBox(tr("look-ahead mask"), this);
  padding_->setToolTip(tr("Untick to let B attend to padding"));
  look_ahead_->setToolTip(tr("Untick to let B's decoder see later positions: the leak"));
  masks->addWidget(padding_);
  masks->addWidget(look_ahead_);
  masks->addSpacing(16);
  masks->addWidget(new QLabel(tr("source:"), this));
  src_edit_ = new QLineEdit(this);
  src_edit_->setPlaceholderText(tr("B's source sentence (change one word)"));
  masks->addWidget(src_edit_, 2);
  form->addLayout(masks, 0, 1);
  auto* tgt = new QHBoxLayout;
  tgt->addWidget(new QLabel(tr("target:"), this));
  tgt_mode_ = new QComboBox(this);
  tgt_mode_->addItem(tr("A's target (teacher-forced)"));
  tgt_mode_->addItem(tr("this target (teacher-forced):"));
  tgt_mode_->addItem(tr("B's own greedy decode"));
  tgt_mode_->setToolTip(
      tr("A's target keeps the rows aligned; B's own decode shows how the output "
         "changes; a target you type is a branch of the decode"));
  tgt->addWidget(tgt_mode_);
  tgt_edit_ = new QLineEdit(this);
  tgt_edit_->setPlaceholderText(tr("B's target words (after the start token)"));
  tgt->addWidget(tgt_edit_, 2);
  form->addLayout(tgt, 1, 1);
  form->addWidget(new QLabel(tr("heads:"), this), 2, 0, Qt::AlignRight | Qt::AlignTop);
  auto* ivs = new QHBoxLayout;
  iv_list_ = new QListWidget(this);
  iv_list_->setMaximumHeight(58);
  iv_list_->setToolTip(tr("B's interventions on single heads"));
  ivs->addWidget(iv_list_, 2);
  auto* ivb = new QVBoxLayout;
  auto* off = new QPushButton(tr("Switch off the selected head"), this);
  off->setToolTip(tr("B: the selected head's output (its slice of the context) becomes 0"));
  auto* temp_row = new QHBoxLayout;
  auto* scale = new QPushButton(tr("Scale its softmax: T ="), this);
  scale->setToolTip(
      tr("B: softmax(scores / T) for the selected head; T > 1 flattens, T < 1 "
         "sharpens"));
  temperature_ = new QDoubleSpinBox(this);
  temperature_->setRange(0.05, 20.0);
  temperature_->setSingleStep(0.5);
  temperature_->setValue(3.0);
  temp_row->addWidget(scale);
  temp_row->addWidget(temperature_);
  auto* clear = new QPushButton(tr("Remove all"), this);
  ivb->addWidget(off);
  ivb->addLayout(temp_row);
  ivb->addWidget(clear);
  ivs->addLayout(ivb);
  auto* go = new QVBoxLayout;
  run_ = new QPushButton(tr("Compare A and B"), this);
  run_->setDefault(true);
  auto* reset = new QPushButton(tr("Reset B to A"), this);
  go->addWidget(run_);
  go->addWidget(reset);
  go->addStretch(1);
  ivs->addLayout(go);
  form->addLayout(ivs, 2, 1);
  form->setColumnStretch(1, 1);
  layout_->addLayout(form);

  results_ = new QWidget(this);
  auto* rl = new QVBoxLayout(results_);
  rl->setContentsMargins(0, 0, 0, 0);
  auto* top = new QHBoxLayout;
  status_ = new QLabel(results_);
  status_->setWordWrap(true);
  top->addWidget(status_, 1);
  top->addWidget(new QLabel(tr("Show:"), results_));
  values_ = new QComboBox(results_);
  values_->addItem(tr("Attention of the selected head"));
  values_->addItem(tr("Attention rollout to this layer (an approximation)"));
  values_->setToolTip(
      tr("Rollout multiplies the layers' mean attention with the residual "
         "connection folded in (½·A + ½·I): a rough picture of how much each "
         "input position reaches each position, not what the model computes"));
  top->addWidget(values_);
  rl->addLayout(top);
  auto* maps = new QHBoxLayout;
  map_a_ = new HeatmapWidget(results_);
  map_b_ = new HeatmapWidget(results_);
  map_diff_ = new HeatmapWidget(results_);
  map_diff_->setColormap(Colormap::rdbu());
  for (auto* m : {map_a_, map_b_, map_diff_}) {
    m->setMaxFitCell(40);
    maps->addWidget(m, 1);
  }
  rl->addLayout(maps, 5);
  auto* bottom = new QHBoxLayout;
  output_ = new QLabel(results_);
  output_->setWordWrap(true);
  output_->setTextFormat(Qt::RichText);
  output_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  output_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  bottom->addWidget(output_, 3);
  grid_ = new HeatmapWidget(results_);
  grid_->setColormap(Colormap::byName(QStringLiteral("blues")));
  grid_->setMaxFitCell(34);
  grid_->setMaximumHeight(170);
  bottom->addWidget(grid_, 2);
  rl->addLayout(bottom, 0);
  layout_->addWidget(results_, 1);

  connect(run_, &QPushButton::clicked, this, [this] { compare(); });
  connect(reset, &QPushButton::clicked, this, [this] {
    resetB();
    clearInterventions();
    compare();
  });
  connect(values_, &QComboBox::currentIndexChanged, this, [this] { refreshNow(); });
  connect(tgt_mode_, &QComboBox::currentIndexChanged, this,
          [this](int i) { tgt_edit_->setEnabled(i == 1); });
  connect(off, &QPushButton::clicked, this, [this] {
    const AttentionSelection& s = state_->selection();
    addIntervention({s.kind, s.layer, std::max(0, s.head), true, 1.0f});
  });
  connect(scale, &QPushButton::clicked, this, [this] {
    const AttentionSelection& s = state_->selection();
    addIntervention({s.kind, s.layer, std::max(0, s.head), false, float(temperature_->value())});
  });
  connect(clear, &QPushButton::clicked, this, &CompareView::clearInterventions);
  connect(grid_, &HeatmapWidget::cellClicked, this, [this](int row, int col) {
    AttentionSelection s = state_->selection();
    s.layer = row;
    s.head = col;
    state_->setSelection(s);
  });
  connect(state_->engine(), &Engine::modelChanged, this, [this] {
    a_ = b_ = {};
    clearInterventions();
    filled_ = false;
  });
  tgt_edit_->setEnabled(false);
}

void CompareView::addIntervention(const HeadIntervention& iv) {
  // One intervention per head: a new one replaces the old.
  interventions_.erase(std::remove_if(interventions_.begin(), interventions_.end(),
                                      [&](const HeadIntervention& x) {
                                        return x.kind == iv.kind && x.layer == iv.layer &&
                                               x.head == iv.head;
                                      }),
                       interventions_.end());
  interventions_.push_back(iv);
  updateInterventionList();
}

void CompareView::clearInterventions() {
  interventions_.clear();
  updateInterventionList();
}

void CompareView::updateInterventionList() {
  iv_list_->clear();
  for (const auto& iv : interventions_)
    iv_list_->addItem(
        QStringLiteral("%1 · layer %2 · head %3: %4")
            .arg(kindTitle(iv.kind))
            .arg(iv.layer + 1)
            .arg(iv.head + 1)
            .arg(iv.off ? tr("switched off") : tr("softmax temperature %1").arg(iv.temperature)));
  if (interventions_.empty()) iv_list_->addItem(tr("(no head is changed)"));
}

RunSpec CompareView::specA() const {
  auto snap = state_->snapshot();
  return snap ? currentRunSpec(*snap, state_->selection().batch) : RunSpec{};
}

void CompareView::resetB() {
  const Model* model = state_->model();
  auto snap = state_->snapshot();
  if (!model || !snap) return;
  const RunSpec a = specA();
  const ModelConfig& c = model->config();
  padding_->setChecked(a.masks.src_padding && a.masks.tgt_padding);
  look_ahead_->setChecked(a.masks.subsequent);
  look_ahead_->setEnabled(c.hasDecoder());
  src_edit_->setEnabled(c.hasEncoder());
  tgt_mode_->setEnabled(c.hasDecoder());
  fillTexts();
}

void CompareView::fillTexts() {
  const Model* model = state_->model();
  if (!model) return;
  const RunSpec a = specA();
  const ModelConfig& c = model->config();
  auto join = [](const std::vector<std::string>& words) {
    QStringList out;
    for (const auto& w : words) out << QString::fromStdString(w);
    return out.join(' ');
  };
  src_edit_->setText(c.hasEncoder() ? join(model->srcVocab().decode(a.src)) : QString());
  std::vector<int> words = a.tgt;
  if (!words.empty() && c.bos_id >= 0 && words.front() == c.bos_id) words.erase(words.begin());
  tgt_edit_->setText(c.hasDecoder() ? join(model->tgtVocab().decode(words)) : QString());
  filled_src_ = a.src;
  filled_tgt_ = a.tgt;
  filled_ = true;
}

bool CompareView::compare() {
  Engine* engine = state_->engine();
  auto snap = state_->snapshot();
  if (!snap || !snap->trace || engine->busy()) return false;
  if (!filled_) resetB();
  const RunSpec a = specA();
  RunSpec b = a;
  b.masks.src_padding = b.masks.tgt_padding = padding_->isChecked();
  b.masks.subsequent = look_ahead_->isChecked();
  b.interventions = interventions_;
  const std::string src = src_edit_->text().toStdString();
  const std::string tgt = tgt_edit_->text().toStdString();
  const int mode = tgt_mode_->currentIndex();
  const int prefix = snap->batch ? 1 : snap->prefix_positions;
  const uint64_t id = snap->id;
  status_->setText(tr("Running A and B…"));
  const bool started = engine->runTask(
      tr("Comparing A and B"), [=, this](const Model& model, const std::atomic<bool>& cancel) {
        RunSpec bb = b;
        const ModelConfig& c = model.config();
        if (c.hasEncoder()) bb.src = model.encodeSource(src);
        if (c.hasDecoder()) {
          if (mode == 1) bb.tgt = model.encodeTarget(tgt);
          if (mode == 2) {
            bb.tgt.resize(std::min<size_t>(bb.tgt.size(), size_t(std::max(prefix, 1))));
            bb.decode = true;
          }
        }
        auto ra = std::make_shared<CompareRun>(runComparison(model, a, &cancel));
        auto rb = std::make_shared<CompareRun>(runComparison(model, bb, &cancel));
        const bool same = bb.src == a.src && bb.tgt == a.tgt && !bb.decode &&
                          bb.interventions.empty() && bb.masks.src_padding == a.masks.src_padding &&
                          bb.masks.tgt_padding == a.masks.tgt_padding &&
                          bb.masks.subsequent == a.masks.subsequent;
        return std::function<void()>([this, ra, rb, id, same] {
          a_ = *ra;
          b_ = *rb;
          b_spec_same_ = same;
          computed_for_ = id;
          refreshNow();
        });
      });
  if (!started) status_->setText(tr("Busy: press Compare again when the current job is done."));
  return started;
}

void CompareView::refresh() {
  auto snap = state_->snapshot();
  const Model* model = state_->model();
  explanation_->setHtml(
      tr("<p style='margin:0'><b>A</b> is the current run; <b>B</b> the same with the changes "
         "above: a mask switched off (the look-ahead mask off shows the leak: B's decoder rows "
         "attend to later positions), another source sentence (change one word), another target "
         "(a branch of the decode), or heads switched off (their output becomes 0) or with their "
         "softmax temperature-scaled. Both are run again from their tokens; the right heatmap is "
         "<b>B − A</b> (red: B attends more, blue: less) over the rows and columns they share.</p>"
         "<p style='margin:4px 0 0 0'>Below: how the output changed, and how much every head's "
         "attention moved (mean |B − A|) in the kind shown — an intervention changes only the "
         "layers after it. <i>Rollout</i> multiplies the layers' mean attention with the residual "
         "connection folded in (½·A + ½·I), an approximation of how much each input position "
         "reaches each position.</p>"));
  if (!snap || !snap->trace || !model) {
    status_->setText(tr("Press Run first: A is the current run."));
    return;
  }
  if (!filled_) {
    resetB();
  } else {
    const RunSpec a = specA();  // B's words follow A's while A changes
    if (a.src != filled_src_ || a.tgt != filled_tgt_) fillTexts();
  }
  if (computed_for_ != snap->id) {
    a_ = b_ = {};
    // A follows the current run: compare again once the engine is free (not inside its signal).
    if (isVisible() && !pending_) {
      pending_ = true;
      QTimer::singleShot(0, this, [this] {
        pending_ = false;
        if (isVisible() && !state_->engine()->busy()) compare();
      });
    }
  }
  showResults();
}

void CompareView::showResults() {
  const Model* model = state_->model();
  if (!a_.trace || !b_.trace || !model) {
    for (auto* m : {map_a_, map_b_, map_diff_, grid_}) m->setData({});
    output_->clear();
    if (!status_->text().startsWith(tr("Running")))
      status_->setText(tr("Press “Compare A and B”."));
    return;
  }
  const Trace& ta = *a_.trace;
  const Trace& tb = *b_.trace;
  AttentionSelection s = clampSelection(ta, state_->selection());
  s.batch = 0;
  const bool rollout = values_->currentIndex() == 1;
  const Difference d = attentionDifference(ta, tb, s, rollout);
  map_a_->setColormap(state_->colormap());
  map_b_->setColormap(state_->colormap());
  auto side = [&](const std::vector<float>& v, const std::vector<uint8_t>& m,
                  const QString& title) {
    HeatmapData h;
    h.rows = d.rows;
    h.cols = d.cols;
    h.values = v;
    h.masked = m;
    h.row_labels = d.row_labels;
    h.col_labels = d.col_labels;
    h.title = title;
    h.value_name = rollout ? tr("rollout") : tr("probability");
    h.vmin = 0;
    h.vmax = 0;
    for (float x : v) h.vmax = std::max(h.vmax, double(x));
    if (h.vmax <= 0) h.vmax = 1;
    return h;
  };
  const QString what = rollout ? tr("rollout to layer %1").arg(s.layer + 1) : selectionTitle(s);
  map_a_->setData(side(d.a, d.a_mask, tr("A (the current run)")));
  map_b_->setData(side(d.b, d.b_mask, tr("B (the variation)")));
  HeatmapData diff = signedHeatmap(d.diff, d.rows, d.cols, tr("B − A"), tr("B − A"));
  diff.row_labels = d.row_labels;
  diff.col_labels = d.col_labels;
  map_diff_->setData(std::move(diff));
  double worst = 0;
  for (float x : d.diff) worst = std::max(worst, double(std::abs(x)));
  const bool same_settings = b_spec_same_;
  status_->setText(
      same_settings
          ? tr("B is the same as A: change something above (a mask, a word, a head) and "
               "press Compare.")
          : what + QStringLiteral(" — ") +
                (d.same_shape
                     ? tr("largest change in this matrix: %1.").arg(num(worst))
                     : tr("A and B differ in length; their common %1 × %2 cells are compared "
                          "(labels a→b where the tokens differ). Largest change: %3.")
                           .arg(d.rows)
                           .arg(d.cols)
                           .arg(num(worst))));

  // How much each head moved, for the kind shown.
  const std::vector<float> change = changePerHead(ta, tb, s.kind, 0);
  HeatmapData g;
  g.rows = std::min(ta.layers(s.kind), tb.layers(s.kind));
  g.cols = ta.heads();
  g.values = change;
  for (int l = 0; l < g.rows; ++l) g.row_labels << tr("layer %1").arg(l + 1);
  for (int h = 0; h < g.cols; ++h) g.col_labels << tr("head %1").arg(h + 1);
  g.title = tr("Mean |B − A| per head · %1").arg(kindTitle(s.kind));
  g.value_name = tr("mean |B − A|");
  g.row_noun = tr("layer");
  g.col_noun = tr("head");
  g.vmax = 1e-6;
  for (float x : change) g.vmax = std::max(g.vmax, double(x));
  g.highlight_row = s.layer;
  grid_->setData(std::move(g));

  // The output: what each position predicts in A and in B.
  const ModelConfig& c = model->config();
  QStringList lines;
  const Vocabulary& vocab = c.hasDecoder() ? model->tgtVocab() : model->srcVocab();
  auto words = [&](const std::vector<int>& ids) {
    QStringList out;
    for (const auto& w : vocab.decode(ids)) out << tokenLabel(w).toHtmlEscaped();
    return out.join(' ');
  };
  if (!b_.generated.empty()) lines << tr("<b>B's own decode:</b> %1").arg(words(b_.generated));
  if (!ta.logits.empty() && !tb.logits.empty()) {
    const int n = std::min(ta.logits.positions(), tb.logits.positions());
    auto top = [&](const Trace& t, int i) {
      const auto [id, p] = t.logits.topProbabilities(0, i, 1).front();
      return std::make_pair(id, double(p));
    };
    QStringList cells;
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const auto [xa, pa] = top(ta, i);
      const auto [xb, pb] = top(tb, i);
      const bool diff_token = xa != xb;
      changed += diff_token;
      cells << QStringLiteral("%1%2 %3 → %4 %5%6")
                   .arg(diff_token ? QStringLiteral("<b style='color:#b03020'>") : QString())
                   .arg(tokenLabel(vocab.token(xa)).toHtmlEscaped())
                   .arg(num(pa, 3))
                   .arg(tokenLabel(vocab.token(xb)).toHtmlEscaped())
                   .arg(num(pb, 3))
                   .arg(diff_token ? QStringLiteral("</b>") : QString());
    }
    lines << tr("<b>Most probable next token at each position, A → B</b> (%1 of %2 differ):")
                 .arg(changed)
                 .arg(n);
    lines << cells.join(QStringLiteral(" · "));
  }
  if (!ta.class_logits.empty() && !tb.class_logits.empty()) {
    QStringList cls;
    const int C = int(ta.class_logits.dim(1));
    auto probs = [&](const Trace& t) {
      const float* l = t.class_logits.ptr();
      const float mx = *std::max_element(l, l + C);
      std::vector<double> p(size_t(C), 0.0);
      double sum = 0;
      for (int k = 0; k < C; ++k) sum += (p[size_t(k)] = std::exp(double(l[k]) - mx));
      for (double& x : p) x /= sum;
      return p;
    };
    const auto pa = probs(ta), pb = probs(tb);
    for (int k = 0; k < C; ++k)
      cls << QStringLiteral("%1: %2 → %3")
                 .arg(QString::fromStdString(c.classLabel(k)).toHtmlEscaped())
                 .arg(num(pa[size_t(k)], 3))
                 .arg(num(pb[size_t(k)], 3));
    lines << tr("<b>Class probabilities, A → B:</b> %1").arg(cls.join(QStringLiteral(" · ")));
  }
  output_->setText(lines.join(QStringLiteral("<br>")));
}

}  // namespace attnviz::gui

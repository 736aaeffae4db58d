#include "views/why/why_patching.h"

#include <QCoreApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "model/cpu_fallback.h"
#include "model/lens.h"
#include "model/trace_dump.h"
#include "session/app_state.h"
#include "session/engine.h"
#include "session/run_spec.h"
#include "session/teaching_util.h"
#include "views/view.h"
#include "widgets/colormap.h"
#include "widgets/heatmap.h"
#include "widgets/token_label.h"

namespace attnviz::gui {

namespace {

// A row name the core writes in English ("embeddings", "layer 3"), in the interface's language.
QString rowNameText(const std::string& name) {
  if (name == "embeddings")
    return QCoreApplication::translate("attnviz::gui::WhyView", "embeddings");
  if (name.rfind("layer ", 0) == 0)
    return QCoreApplication::translate("attnviz::gui::WhyView", "layer %1")
        .arg(QString::fromStdString(name.substr(6)));
  return QString::fromStdString(name);
}

constexpr int kCellPixels = 42;  // the smallest cell of a heatmap: room for "-100%"

// A restored fraction as the cells write it: "87%" (never "-0%").
QString percent(double fraction) {
  const double shown = std::abs(fraction) < 0.005 ? 0.0 : 100.0 * fraction;
  return QStringLiteral("%1%").arg(shown, 0, 'f', 0);
}

QString joined(const std::vector<std::string>& words) {
  QStringList out;
  for (const auto& w : words) out << QString::fromStdString(w);
  return out.join(' ');
}

}  // namespace

WhyPatchingTab::WhyPatchingTab(AppState* state, QWidget* parent) : QWidget(parent), state_(state) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 4, 0, 0);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Corrupted input:"), this));
  corrupted_ = new QLineEdit(this);
  corrupted_->setToolTip(
      tr("The current input with one word changed: the run the clean activations are copied "
         "into. It must have as many tokens as the clean input, so that positions line up"));
  bar->addWidget(corrupted_, 1);
  run_ = new QPushButton(tr("Run patching"), this);
  run_->setToolTip(
      tr("Copy every layer's residual stream at every position, and every head's "
         "output, from the clean run into the corrupted one, one at a time"));
  bar->addWidget(run_);
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(160);
  progress_->setTextVisible(true);
  progress_->setFormat(tr("%v / %m runs"));
  bar->addWidget(progress_);
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setToolTip(tr("Stop the sweep (Esc); the tab keeps what it showed"));
  bar->addWidget(cancel_);
  layout->addLayout(bar);
  hint_ = new QLabel(this);
  hint_->setWordWrap(true);
  hint_->setForegroundRole(QPalette::PlaceholderText);
  layout->addWidget(hint_);
  caption_ = new QLabel(this);
  caption_->setWordWrap(true);
  caption_->setTextFormat(Qt::RichText);
  caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(caption_);
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  // Each residual stream on a row of its own (its positions take the width), then the head
  // blocks side by side (a few heads each).
  maps_box_ = new QWidget(scroll);
  rows_ = new QVBoxLayout(maps_box_);
  rows_->setContentsMargins(0, 0, 0, 0);
  rows_->setSpacing(12);
  heads_row_ = new QHBoxLayout;
  rows_->addLayout(heads_row_);
  rows_->addStretch(1);
  scroll->setWidget(maps_box_);
  layout->addWidget(scroll, 1);
  setRunning(false);

  connect(run_, &QPushButton::clicked, this, &WhyPatchingTab::run);
  connect(corrupted_, &QLineEdit::returnPressed, this, &WhyPatchingTab::run);
  Engine* engine = state_->engine();
  connect(cancel_, &QPushButton::clicked, engine, &Engine::cancel);
  connect(engine, &Engine::progress, this, [this](int done, int total) {
    if (!running_) return;
    progress_->setRange(0, std::max(total, 1));
    progress_->setValue(std::min(done, total));
  });
  // The job ended without its result (it failed outside the core): the tab is usable again.
  connect(engine, &Engine::jobFinished, this, [this](bool ok) {
    if (running_ && !ok) {
      setRunning(false);
      showResult();
    }
  });
  connect(state_, &AppState::colormapChanged, this, [this] { showResult(); });
}

void WhyPatchingTab::setQuestion(int position, int token) {
  position_ = position;
  token_ = token;
  syncInput();
}

void WhyPatchingTab::syncInput() {
  const Model* model = state_->model();
  auto snap = state_->snapshot();
  Inputs clean;
  QString text;
  if (model && snap && snap->trace) {
    const ModelConfig& c = model->config();
    const RunSpec spec = currentRunSpec(*snap, snap->batch ? state_->selection().batch : 0);
    if (c.hasEncoder()) clean.src = {spec.src};
    if (c.hasDecoder()) clean.tgt = {spec.tgt};
    if (c.hasEncoder()) {
      text = joined(model->srcVocab().decode(spec.src));
    } else {
      std::vector<int> words = spec.tgt;  // the prompt, without the start token
      if (!words.empty() && c.bos_id >= 0 && words.front() == c.bos_id) words.erase(words.begin());
      text = joined(model->tgtVocab().decode(words));
    }
  }
  const bool changed = clean.src != clean_.src || clean.tgt != clean_.tgt;
  clean_ = clean;
  if (changed || clean_text_ != text) {
    // A new input: the corrupted line starts from it again, for one word to be changed.
    clean_text_ = text;
    corrupted_->setText(text);
  }
  const bool encoder = model && model->config().hasEncoder();
  const int n = int(encoder ? (clean_.src.empty() ? 0 : clean_.src[0].size())
                            : (clean_.tgt.empty() ? 0 : clean_.tgt[0].size()));
  hint_->setText(
      !model ? QString()
      : encoder
          ? tr("Change one word of the source (%1 tokens): the corrupted source must have as many "
               "tokens as the clean one, so that positions line up. The target stays the current "
               "run's.")
                .arg(n)
      : model->config().bos_id >= 0
          ? tr("Change one word of the prompt (%1 tokens with the start token): the corrupted "
               "prompt must have as many tokens as the clean one, so that positions line up.")
                .arg(n)
          : tr("Change one word of the prompt (%1 tokens): the corrupted prompt must have as "
               "many tokens as the clean one, so that positions line up.")
                .arg(n));
  // A result of another input no longer describes the run shown.
  if (result_ && (result_clean_.src != clean_.src || result_clean_.tgt != clean_.tgt)) {
    result_.reset();
    refusal_.clear();
    showResult();
  } else if (!result_ && maps_.empty()) {
    showResult();
  }
  run_->setEnabled(!running_ && model && snap && snap->trace);
}

bool WhyPatchingTab::run() {
  Engine* engine = state_->engine();
  syncInput();
  if (running_) return false;
  if (!state_->model() || (clean_.src.empty() && clean_.tgt.empty())) {
    refusal_ = tr("Press Run first: the clean input is the current run.");
    showResult();
    return false;
  }
  const QString text = corrupted_->text().trimmed();
  if (text.isEmpty()) {
    refusal_ = tr("Type the corrupted input: the current one with a word changed.");
    showResult();
    return false;
  }
  const Inputs clean = clean_;
  PatchOptions options;
  options.position = position_;
  options.answer = token_;
  const std::string words = text.toStdString();
  const bool started = engine->runProgressTask(
      tr("Activation patching"), [=, this](const Model& model, const std::atomic<bool>& cancel,
                                           const Engine::TaskProgress& progress) {
        std::shared_ptr<const PatchingResult> result;
        QString refusal;
        try {
          Inputs corrupted = clean;
          if (model.config().hasEncoder())
            corrupted.src = {model.encodeSource(words)};
          else
            corrupted.tgt = {model.encodeTarget(words)};
          PatchOptions o = options;
          o.cancel = &cancel;
          o.progress = progress;
          result = std::make_shared<PatchingResult>(patchActivations(model, clean, corrupted, o));
        } catch (const Error& e) {
          // Out of GPU memory: the engine redoes the task on the CPU (model/cpu_fallback.h).
          if (ranOutOfDeviceMemory(e)) throw;
          refusal = e.kind() == ErrorKind::Cancelled
                        ? tr("Cancelled: the heatmaps below are those of the run before.")
                        : messageSentence(e.what());
        }
        return std::function<void()>([this, result, refusal, clean, text] {
          setRunning(false);
          refusal_ = refusal;
          if (result) {
            result_ = result;
            result_clean_ = clean;
            corrupted_text_ = text;
          }
          showResult();
        });
      });
  if (!started) {
    refusal_ = tr("Busy: press Run patching again when the current job is done.");
    showResult();
    return false;
  }
  refusal_.clear();
  setRunning(true);
  progress_->setRange(0, 0);  // until the first pass reports
  showResult();
  return true;
}

void WhyPatchingTab::setRunning(bool on) {
  running_ = on;
  progress_->setVisible(on);
  cancel_->setVisible(on);
  run_->setEnabled(!on);
  corrupted_->setEnabled(!on);
}

void WhyPatchingTab::showResult() {
  for (HeatmapWidget* hm : maps_) delete hm;
  maps_.clear();
  const PatchingResult* r = result_.get();
  QString text;
  if (r) {
    text = tr("m = logit[%1] − logit[%2] at position %3: <b>m(clean) = %4</b>, <b>m(corrupted) = "
              "%5</b> (corrupted: “%6”). Each cell: the share of the difference that copying "
              "that one activation from the clean run brings back — 100% the clean margin whole, "
              "0% nothing.")
               .arg(QStringLiteral("“%1”").arg(tokenLabel(r->answer_token)).toHtmlEscaped())
               .arg(QStringLiteral("“%1”").arg(tokenLabel(r->foil_token)).toHtmlEscaped())
               .arg(r->position + 1)
               .arg(num(r->clean, 4))
               .arg(num(r->corrupted, 4))
               .arg(corrupted_text_.toHtmlEscaped());
  } else if (!running_ && refusal_.isEmpty()) {
    text =
        tr("Change a word of the corrupted input and press <b>Run patching</b>: each "
           "layer's residual stream at each position, and each head, is copied from the clean "
           "run (the current one) into the corrupted run, one at a time.");
  }
  if (running_) text = tr("Patching… every layer, position and head is a run of its own.");
  if (!refusal_.isEmpty())
    text = QStringLiteral("<b>%1</b>%2")
               .arg(refusal_.toHtmlEscaped(), text.isEmpty() ? QString() : "<br>" + text);
  caption_->setText(text);
  if (r) {
    int residual = 0;  // residual streams placed so far, above the heads' row
    for (const PatchHeatmap& m : r->maps) {
      auto* hm = new HeatmapWidget(maps_box_);
      hm->setColormap(Colormap::rdbu());
      hm->setMaxFitCell(64);
      HeatmapData d;
      d.rows = m.rows;
      d.cols = m.cols;
      d.values.resize(size_t(m.rows) * m.cols);
      for (int row = 0; row < m.rows; ++row)
        for (int col = 0; col < m.cols; ++col) {
          const int64_t cell = m.cell(row, col);
          d.values[size_t(cell)] = float(m.restored[size_t(cell)]);
          d.cell_texts << percent(m.restored[size_t(cell)]);
          d.cell_notes << tr("= %1 of the difference · m(patched) = %2 (clean %3, corrupted %4)")
                              .arg(percent(m.restored[size_t(cell)]))
                              .arg(num(m.metric[size_t(cell)], 4))
                              .arg(num(r->clean, 4))
                              .arg(num(r->corrupted, 4));
        }
      for (const std::string& s : m.row_labels) d.row_labels << rowNameText(s);
      for (const std::string& s : m.col_labels)
        d.col_labels << (m.heads ? QString::fromStdString(s) : tokenLabel(s));
      d.title = QString::fromStdString(m.title);
      d.row_title = m.heads ? tr("layer") : tr("stream after ↓");
      d.col_title = m.heads ? tr("head") : tr("position · clean → corrupted token");
      d.row_noun = m.heads ? tr("layer") : tr("row");
      d.col_noun = m.heads ? tr("head") : tr("position");
      d.value_name = tr("restored");  // 1 = 100%
      d.vmin = -1;
      d.vmax = 1;
      d.square_cells = false;
      if (!m.heads && m.side == r->stack) d.highlight_col = r->position;
      hm->setData(std::move(d));
      // Cells wide enough for "-100%" and every label: the tab scrolls rather than elide them.
      hm->setMinimumSize(hm->tightSize(QSize(1 << 14, 1 << 14), kCellPixels));
      if (m.heads)
        heads_row_->addWidget(hm, m.cols);
      else
        rows_->insertWidget(residual++, hm);
      maps_.push_back(hm);
    }
  }
  emit explanationChanged();
}

QString WhyPatchingTab::explanation() const {
  QString html =
      tr("<p style='margin:0'><b>Activation patching</b> asks which activations carry the "
         "difference between two inputs. The <b>clean</b> input is the current run, the "
         "<b>corrupted</b> one the same with a word changed; the model's answer changes with it. "
         "The metric is %1 at the explained position. Each cell copies <i>one</i> activation of "
         "the "
         "clean run into the corrupted run and runs the rest of the model on: %2. Residual "
         "streams: "
         "the stream leaving a layer (row 0: the embeddings) at one position; heads: the head's "
         "output, before W<sub>O</sub>, at every position.</p>")
          .arg(code(tr("m = logit[answer] − logit[foil]")))
          .arg(code(tr("restored = (m(patched) − m(corrupted)) / (m(clean) − "
                       "m(corrupted))")));
  if (const PatchingResult* r = result_.get())
    html += tr("<p style='margin:4px 0 0 0'>Here: m = logit[%1] − logit[%2] at position %3 of "
               "the %4, m(clean) = %5, m(corrupted) = %6 (corrupted: “%7”), %8 patched runs. Red: "
               "the patch brings the clean answer back (100% = whole), blue: "
               "it pushes further away; the last layer's stream restores 100% at the explained "
               "position and 0% elsewhere. Patching measures what an activation causes, not where "
               "a head looks.</p>")
                .arg(QStringLiteral("“%1”").arg(tokenLabel(r->answer_token)).toHtmlEscaped())
                .arg(QStringLiteral("“%1”").arg(tokenLabel(r->foil_token)).toHtmlEscaped())
                .arg(r->position + 1)
                .arg(r->stack == Side::Source ? tr("encoder") : tr("decoder"))
                .arg(num(r->clean, 4))
                .arg(num(r->corrupted, 4))
                .arg(corrupted_text_.toHtmlEscaped())
                .arg(r->runs);
  return html;
}

QWidget* WhyPatchingTab::exportWidget() {
  return maps_.empty() ? static_cast<QWidget*>(this) : maps_box_;
}

QString WhyPatchingTab::figureTitle() const {
  const PatchingResult* r = result_.get();
  if (!r) return tr("Activation patching");
  return tr("Activation patching · %1 rather than %2 at position %3 · corrupted: “%4”")
      .arg(QStringLiteral("“%1”").arg(tokenLabel(r->answer_token)))
      .arg(QStringLiteral("“%1”").arg(tokenLabel(r->foil_token)))
      .arg(r->position + 1)
      .arg(corrupted_text_);
}

bool WhyPatchingTab::exportNumpy(const QString& dir, QString* error) const {
  if (!result_) {
    if (error) *error = tr("Nothing to export: run patching first.");
    return false;
  }
  try {
    dumpPatching(*result_, dir.toStdString());
  } catch (const Error& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

}  // namespace attnviz::gui

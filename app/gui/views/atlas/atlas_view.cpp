#include "views/atlas/atlas_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <algorithm>
#include <cmath>
#include <map>

#include "arch/bundled.h"
#include "base/atomic_file.h"
#include "base/error.h"
#include "model/circuits.h"
#include "model/trace_dump.h"
#include "session/attention_data.h"
#include "session/teaching_util.h"
#include "train/history_figures.h"
#include "train/task_corpus.h"
#include "train/tasks.h"
#include "widgets/fonts.h"
#include "widgets/widgets.h"

namespace attnviz::gui {

namespace {

QString headName(const AtlasHead& h) {
  return QObject::tr("%1 · layer %2 · head %3")
      .arg(kindTitle(h.kind))
      .arg(h.layer + 1)
      .arg(h.head + 1);
}

// Writes an export through the core's atomic file (no half-written file is left behind). False
// with *error set when it cannot.
bool writeBytes(const QString& path, const std::string& bytes, QString* error) {
  try {
    writeFileAtomically(path.toStdString(), bytes);
    return true;
  } catch (const Error& e) {
    if (error) *error = messageSentence(e.what());
    return false;
  }
}

}  // namespace

// ---- the view ---------------------------------------------------------------------------------

AtlasView::AtlasView(AppState* state, QWidget* parent)
    : View(state, tr("What am I looking at?"), parent) {
  // The corpus and the run.
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Corpus:"), this));
  source_ = new QComboBox(this);
  source_->setToolTip(tr("The sentences every head is measured on"));
  bar->addWidget(source_, 1);
  open_file_ = new QPushButton(tr("Text file…"), this);
  open_file_->setToolTip(
      tr("A UTF-8 text file: one sentence per line, or source<TAB>target pairs"));
  bar->addWidget(open_file_);
  bar->addWidget(new QLabel(tr("Batch:"), this));
  batch_ = new QSpinBox(this);
  batch_->setRange(1, 256);
  batch_->setValue(16);
  batch_->setToolTip(tr("Sentences per forward pass: memory holds one batch's attention"));
  bar->addWidget(batch_);
  chunk_ = new QCheckBox(tr("Cut long lines"), this);
  chunk_->setToolTip(
      tr("A line longer than the model's context is cut into consecutive chunks of at most the "
         "context, by tokens, without overlap; each chunk runs as a sentence of its own, with the "
         "start and end markers around it. Off: such a line is skipped.\nAn encoder-decoder's "
         "context is its source: each chunk is translated on its own; a source–target pair is "
         "never cut."));
  bar->addWidget(chunk_);
  run_ = new QPushButton(tr("Run the corpus"), this);
  bar->addWidget(run_);
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setEnabled(false);
  bar->addWidget(cancel_);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1);
  progress_->setValue(0);
  progress_->setMaximumWidth(160);
  bar->addWidget(progress_);
  layout_->addLayout(bar);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout_->addWidget(status_);

  // The axes and the export.
  auto* axes = new QHBoxLayout;
  x_axis_ = new QComboBox(this);
  y_axis_ = new QComboBox(this);
  for (const AtlasMeasure& m : atlasMeasures()) {
    x_axis_->addItem(m.title);
    y_axis_->addItem(m.title);
    x_axis_->setItemData(x_axis_->count() - 1, m.tip, Qt::ToolTipRole);
    y_axis_->setItemData(y_axis_->count() - 1, m.tip, Qt::ToolTipRole);
  }
  x_axis_->setCurrentIndex(int(HeadStat::EntropyNorm));
  y_axis_->setCurrentIndex(int(HeadStat::Previous));
  axes->addWidget(new QLabel(tr("x:"), this));
  axes->addWidget(x_axis_);
  axes->addWidget(new QLabel(tr("y:"), this));
  axes->addWidget(y_axis_);
  axes->addStretch(1);
  export_csv_ = new QPushButton(tr("Export CSV…"), this);
  export_csv_->setToolTip(tr("The table: every head's mean and standard deviation per statistic"));
  axes->addWidget(export_csv_);
  layout_->addLayout(axes);

  // The scatter | the table and the heads like the selected one.
  auto* split = new QSplitter(Qt::Horizontal, this);
  // Left: the heads over the corpus, or the heads over a training run.
  left_ = new QTabWidget(split);
  scatter_ = new ScatterPlot(left_);
  left_->addTab(scatter_, tr("Heads over the corpus"));
  scatter_->setEmptyText(
      tr("Choose a corpus and press Run the corpus: every head of the model "
         "becomes a point here."));
  auto* right = new QSplitter(Qt::Vertical, split);
  model_ = new AtlasTableModel(this);
  proxy_ = new AtlasProxy(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(AtlasTableModel::SortRole);
  table_ = makeSortableTable(proxy_, AtlasTableModel::Block, right);

  panels_ = new QTabWidget(right);
  like_ = new QListWidget(panels_);
  like_->setToolTip(
      tr("The heads whose statistics over the corpus are nearest the selected "
         "head's (0 = the same); click one to select it"));
  panels_->addTab(like_, tr("Heads like this one"));
  auto* evidence = new QWidget(panels_);
  auto* ev = new QVBoxLayout(evidence);
  ev->setContentsMargins(4, 4, 4, 4);
  auto* ev_bar = new QHBoxLayout;
  ev_bar->addWidget(new QLabel(tr("Sentences by:"), evidence));
  evidence_stat_ = new QComboBox(evidence);
  for (const AtlasMeasure& m : atlasMeasures())
    if (m.stat >= 0) evidence_stat_->addItem(m.title, m.stat);
  evidence_stat_->setCurrentIndex(int(HeadStat::Previous));
  ev_bar->addWidget(evidence_stat_, 1);
  ev->addLayout(ev_bar);
  ev->addWidget(new QLabel(tr("Strongest (double-click: the input of every view):"), evidence));
  top_ = new QListWidget(evidence);
  ev->addWidget(top_, 1);
  evidence_note_ = new QLabel(evidence);
  evidence_note_->setWordWrap(true);
  ev->addWidget(evidence_note_);
  ev->addWidget(new QLabel(tr("Weakest:"), evidence));
  bottom_ = new QListWidget(evidence);
  ev->addWidget(bottom_, 1);
  panels_->addTab(evidence, tr("Evidence"));
  auto* pca = new QWidget(panels_);
  auto* pv = new QVBoxLayout(pca);
  pv->setContentsMargins(4, 4, 4, 4);
  auto* pca_bar = new QHBoxLayout;
  project_ = new QPushButton(tr("Project this head's queries and keys"), pca);
  pca_bar->addWidget(project_);
  embedding_status_ = new QLabel(pca);
  embedding_status_->setWordWrap(true);
  pca_bar->addWidget(embedding_status_, 1);
  pv->addLayout(pca_bar);
  embedding_plot_ = new ScatterPlot(pca);
  embedding_plot_->setEmptyText(
      tr("Select a head, then press the button: its queries and keys over the corpus, projected "
         "on their two main directions (PCA)."));
  pv->addWidget(embedding_plot_, 1);
  panels_->addTab(pca, tr("Queries and keys"));
  auto* hist = new QWidget(left_);
  auto* hv = new QVBoxLayout(hist);
  hv->setContentsMargins(4, 4, 4, 4);
  auto* hist_bar = new QHBoxLayout;
  open_history_ = new QPushButton(tr("Open training history…"), hist);
  open_history_->setToolTip(
      tr("A folder of checkpoints kept during training (the Train view's "
         "or attnviz-cli train --keep-dir)"));
  hist_bar->addWidget(open_history_);
  history_measure_ = new QComboBox(hist);
  history_measure_->addItem(tr("Induction score (0–1)"));
  history_measure_->addItem(tr("Copying score (−1…1)"));
  for (const AtlasMeasure& m : atlasMeasures())
    if (m.stat >= 0) history_measure_->addItem(m.title);
  history_measure_->addItem(tr("Held-out loss at each position (nats)"));
  hist_bar->addWidget(history_measure_, 1);
  hv->addLayout(hist_bar);
  auto* step_bar = new QHBoxLayout;
  step_slider_ = new QSlider(Qt::Horizontal, hist);
  step_slider_->setEnabled(false);
  step_slider_->setToolTip(tr("The kept steps: moving it opens that checkpoint in every view"));
  step_bar->addWidget(step_slider_, 1);
  export_history_ = new QPushButton(tr("CSV…"), hist);
  export_history_->setToolTip(tr("Every head's scores and statistics at every kept step"));
  export_apng_ = new QPushButton(tr("Animation…"), hist);
  export_apng_->setToolTip(tr("An animated PNG: the heads' induction scores, a frame per step"));
  export_history_->setEnabled(false);
  export_apng_->setEnabled(false);
  step_bar->addWidget(export_history_);
  step_bar->addWidget(export_apng_);
  hv->addLayout(step_bar);
  history_label_ = new QLabel(hist);
  history_label_->setWordWrap(true);
  hv->addWidget(history_label_);
  history_chart_ = new ScatterPlot(hist);
  history_chart_->setLines(true);
  history_chart_->setEmptyText(
      tr("Open the checkpoints of a training run: every head's score over the steps, and a "
         "slider that opens any step in every view."));
  hv->addWidget(history_chart_, 1);
  left_->addTab(hist, tr("Heads over training"));
  load_timer_ = new QTimer(this);
  load_timer_->setSingleShot(true);
  load_timer_->setInterval(250);  // a dragged slider loads where it stops
  right->setStretchFactor(0, 3);
  right->setStretchFactor(1, 2);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout_->addWidget(split, 1);

  fillSources();
  connect(open_file_, &QPushButton::clicked, this, [this] {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("A corpus of sentences"), QString(),
                                     tr("Text files (*.txt *.tsv);;All files (*)"));
    if (!path.isEmpty()) setCorpusFile(path);
  });
  connect(run_, &QPushButton::clicked, this, &AtlasView::runAtlas);
  connect(cancel_, &QPushButton::clicked, this, &AtlasView::cancel);
  // What was said of the last run's sentences (none found, cancelled) is not said of another
  // source.
  connect(source_, &QComboBox::currentIndexChanged, this, [this] {
    if (running_) return;
    status_text_.clear();
    status_->clear();
  });
  connect(x_axis_, &QComboBox::currentIndexChanged, this, &AtlasView::updateScatter);
  connect(y_axis_, &QComboBox::currentIndexChanged, this, &AtlasView::updateScatter);
  connect(evidence_stat_, &QComboBox::currentIndexChanged, this, &AtlasView::fillEvidence);
  connect(export_csv_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export the head atlas"), QStringLiteral("head-atlas.csv"), tr("CSV (*.csv)"));
    QString error;
    if (!path.isEmpty() && !exportCsv(path, &error)) status_->setText(error.toHtmlEscaped());
  });
  connect(scatter_, &ScatterPlot::pointClicked, this, &AtlasView::selectHead);
  connect(scatter_, &ScatterPlot::pointDoubleClicked, this, [this](int i) {
    selectHead(i);
    emit openView(QStringLiteral("attention"));
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& cur) {
            if (!syncing_ && cur.isValid()) selectHead(proxy_->mapToSource(cur).row());
          });
  connect(table_, &QTableView::doubleClicked, this,
          [this] { emit openView(QStringLiteral("attention")); });
  connect(like_, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
    if (!syncing_) selectHead(item->data(Qt::UserRole).toInt());
  });
  auto use = [this](QListWidgetItem* item) { useSentence(item->data(Qt::UserRole).toInt()); };
  connect(top_, &QListWidget::itemDoubleClicked, this, use);
  connect(bottom_, &QListWidget::itemDoubleClicked, this, use);
  connect(project_, &QPushButton::clicked, this, &AtlasView::projectSelected);
  connect(open_history_, &QPushButton::clicked, this, [this] {
    const QString dir =
        QFileDialog::getExistingDirectory(this, tr("A folder of training checkpoints"));
    if (!dir.isEmpty()) openHistory(dir);
  });
  connect(history_measure_, &QComboBox::currentIndexChanged, this, &AtlasView::updateHistoryChart);
  connect(step_slider_, &QSlider::valueChanged, this, [this] {
    showHistoryStep();
    load_timer_->start();
  });
  connect(load_timer_, &QTimer::timeout, this, &AtlasView::loadHistoryStep);
  connect(export_history_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export the training history"), QStringLiteral("history.csv"), tr("CSV (*.csv)"));
    QString error;
    if (!path.isEmpty() && !exportHistoryCsv(path, &error)) history_label_->setText(error);
  });
  connect(export_apng_, &QPushButton::clicked, this, [this] {
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export the induction scores as an animation"),
                                     QStringLiteral("history.png"), tr("Animated PNG (*.png)"));
    QString error;
    if (!path.isEmpty() && !exportHistoryApng(path, &error)) history_label_->setText(error);
  });
  connect(state_, &AppState::selectionChanged, this, [this] {
    if (!syncing_) showSelection();
  });
  Engine* engine = state_->engine();
  connect(engine, &Engine::modelChanged, this, [this] {
    // An atlas belongs to the model it was built on.
    result_ = {};
    embedding_.reset();
    atlas_model_ = nullptr;
    status_text_.clear();
    status_->clear();
    progress_->setRange(0, 1);  // no "100 %" of the previous model's run
    progress_->setValue(0);
    model_->setAtlas(nullptr, nullptr);
    embedding_plot_->setData({}, {}, {}, {});
    embedding_status_->clear();
    fillSources();
    updateScatter();
    markDirty();
  });
  connect(engine, &Engine::progress, this, [this](int done, int total, const QString&) {
    if (!running_) return;
    progress_->setRange(0, std::max(1, total));
    progress_->setValue(std::clamp(done, 0, std::max(1, total)));
  });
  connect(engine, &Engine::jobFinished, this, [this](bool ok) {
    if (reading_history_) {
      reading_history_ = false;
      open_history_->setEnabled(true);
      if (!ok && !history_) history_label_->setText(tr("Reading the history was cancelled."));
    }
    // A cancelled or failed run applies nothing: the buttons come back here.
    if (!running_) return;
    running_ = false;
    run_->setEnabled(true);
    cancel_->setEnabled(false);
    if (!ok && status_text_.isEmpty()) status_text_ = tr("The run was cancelled.");
    status_->setText(status_text_);
    project_->setEnabled(true);
  });
  connect(engine, &Engine::failed, this, [this](const QString& title, const QString& message) {
    if (running_)
      status_text_ = title + QStringLiteral(": ") + messageSentence(qPrintable(message));
  });
}

void AtlasView::fillSources() {
  const QSignalBlocker block(source_);
  const int previous = source_->currentData().toInt();
  source_->clear();
  const Model* model = state_->model();
  // A checkpoint states no examples: then its first source is another one.
  if (!model || !model->config().examples.empty())
    source_->addItem(tr("The model's example sentences"), int(Source::Examples));
  const QString bundled = state_->engine()->modelSource();
  bool held_out = false;
  if (model && !bundled.contains(QLatin1Char('/')) && !bundled.contains(QLatin1Char('.')))
    for (const std::string& dir : bundledModelDirs())
      held_out = held_out || QFileInfo::exists(QString::fromStdString(dir) + QLatin1Char('/') +
                                               bundled + QStringLiteral(".heldout.json"));
  if (held_out) source_->addItem(tr("%1's held-out sentences").arg(bundled), int(Source::HeldOut));
  for (const std::string& name : taskNames())
    source_->addItem(tr("Training task “%1”: its held-out pairs").arg(QString::fromStdString(name)),
                     QVariantList{int(Source::TrainingTask), QString::fromStdString(name)});
  if (!file_.isEmpty())
    source_->addItem(tr("File: %1").arg(QFileInfo(file_).fileName()), int(Source::File));
  // The held-out set when there is one: sentences the model never saw.
  int pick = held_out ? source_->findData(int(Source::HeldOut)) : 0;
  if (previous == int(Source::File) && !file_.isEmpty()) pick = source_->count() - 1;
  source_->setCurrentIndex(pick);
}

void AtlasView::setCorpusFile(const QString& path) {
  file_ = path;
  fillSources();
  source_->setCurrentIndex(source_->count() - 1);
}

bool AtlasView::setSource(Source source, const QString& task) {
  for (int i = 0; i < source_->count(); ++i) {
    const QVariant d = source_->itemData(i);
    const bool match =
        source == Source::TrainingTask
            ? d.typeId() == QMetaType::QVariantList && d.toList().value(1).toString() == task
            : d.typeId() != QMetaType::QVariantList && d.toInt() == int(source);
    if (match) {
      source_->setCurrentIndex(i);
      return true;
    }
  }
  return false;
}

bool AtlasView::runAtlas() {
  Engine* engine = state_->engine();
  if (!engine->hasModel() || running_) return false;
  // What the corpus is, read on the worker (a file may be large).
  const QVariant d = source_->currentData();
  Source source = Source::Examples;
  QString task;
  if (d.typeId() == QMetaType::QVariantList) {
    source = Source::TrainingTask;
    task = d.toList().value(1).toString();
  } else {
    source = Source(d.toInt());
  }
  const std::string file = file_.toStdString();
  const std::string bundled = engine->modelSource().toStdString();
  const std::string task_name = task.toStdString();
  AtlasOptions options;
  options.run.batch = batch_->value();
  options.run.masks = engine->masks();
  options.run.max_new_tokens = engine->maxNewTokens();
  options.run.chunk = chunk_->isChecked();
  const Model* built_on = engine->model();
  // The scores of an earlier run on this model, when its heads are the same (they are per model).
  std::shared_ptr<const AtlasScores> scores =
      atlas_model_ == built_on && result_.atlas ? result_.scores : nullptr;
  const Model* scores_for = scores ? built_on : nullptr;
  status_text_.clear();
  const bool started = engine->runProgressTask(
      tr("Head atlas"), [=, this](const Model& model, const std::atomic<bool>& cancel,
                                  const Engine::TaskProgress& progress) {
        AtlasResult result;
        QString error;
        try {
          Corpus corpus;
          switch (source) {
            case Source::Examples:
              corpus = corpusFromExamples(model.config());
              break;
            case Source::HeldOut:
              corpus = corpusFromHeldOut(bundled);
              break;
            case Source::TrainingTask:
              corpus = trainingTaskCorpus(*makeTask(task_name));
              break;
            case Source::File:
              corpus = readCorpusFile(file);
              break;
          }
          AtlasOptions run = options;
          run.run.cancel = &cancel;
          run.run.progress = [&progress](const AtlasProgress& p) { progress(p.done, p.total); };
          auto atlas = std::make_shared<const Atlas>(buildAtlas(model, corpus, run));
          // The circuit scores are the model's, not the corpus's: computed once per model.
          result.scores =
              scores && scores_for == &model
                  ? scores
                  : std::make_shared<const AtlasScores>(atlasScores(model, *atlas, &cancel));
          result.corpus = std::make_shared<const Corpus>(std::move(corpus));
          result.atlas = std::move(atlas);
          result.chunk = run.run.chunk;
          result.positions = model.maxPositions();
        } catch (const Error& e) {
          if (e.kind() == ErrorKind::Cancelled) throw;
          error = messageSentence(e.what());
        }
        return std::function<void()>([this, result, error, built_on] {
          if (error.isEmpty()) {
            result_ = result;
            atlas_model_ = built_on;
            embedding_.reset();
            embedding_plot_->setData({}, {}, {}, {});
            embedding_status_->clear();
            model_->setAtlas(result_.atlas, result_.scores);
            const CorpusRunReport& r = result_.atlas->run;
            QString text = tr("%1: %2 sentences through the model in %3 batches (%4).")
                               .arg(QString::fromStdString(result_.atlas->origin))
                               .arg(r.sentences)
                               .arg(r.batches)
                               .arg(result_.atlas->seconds < 1
                                        ? tr("%1 ms").arg(num(1000 * result_.atlas->seconds, 0))
                                        : tr("%1 s").arg(num(result_.atlas->seconds, 1)));
            // Lines longer than the context: cut (the option on) or skipped, naming the option.
            auto lines = [this](int n) { return n == 1 ? tr("1 line") : tr("%1 lines").arg(n); };
            if (r.cut_lines > 0)
              text += QLatin1Char(' ') +
                      tr("%1 longer than the model's context of %2 tokens cut into %3 chunks, "
                         "each run as a sentence.")
                          .arg(lines(r.cut_lines))
                          .arg(result_.positions)
                          .arg(r.chunks);
            if (r.too_long > 0 && !result_.chunk)
              text += QLatin1Char(' ') +
                      tr("%1 longer than the model's context of %2 tokens skipped: Cut long "
                         "lines runs them in chunks.")
                          .arg(lines(r.too_long))
                          .arg(result_.positions);
            if (r.skipped_count > 0) {
              QStringList first;
              for (const SkippedSentence& s : r.skipped)
                first << (s.line > 0 ? tr("line %1: %2").arg(s.line)
                                     : tr("sentence %1: %2").arg(s.sentence + 1))
                             .arg(QString::fromStdString(s.reason));
              text += QLatin1Char(' ') + tr("%n skipped (%1).", nullptr, r.skipped_count)
                                             .arg(first.join(QStringLiteral("; ")));
            }
            for (const std::string& note :
                 {result_.scores->induction_note, result_.scores->copying_note})
              if (!note.empty()) text += QLatin1Char(' ') + messageSentence(note.c_str());
            status_text_ = text;
            updateScatter();
            showSelection();
          } else {
            status_text_ = error;
          }
          explain();
        });
      });
  if (!started) {
    status_->setText(
        tr("The model is busy with another job: press Run the corpus again when it "
           "is done."));
    return false;
  }
  running_ = true;
  run_->setEnabled(false);
  cancel_->setEnabled(true);
  project_->setEnabled(false);
  progress_->setRange(0, 0);  // busy until the first batch says how far
  status_->setText(tr("Running the corpus…"));
  return true;
}

void AtlasView::cancel() {
  if (running_) state_->engine()->cancel();
}

QString AtlasView::statusText() const {
  return status_->text();
}

void AtlasView::setAxes(int x_measure, int y_measure) {
  x_axis_->setCurrentIndex(x_measure);
  y_axis_->setCurrentIndex(y_measure);
  updateScatter();
}

void AtlasView::setEvidenceStat(int stat) {
  evidence_stat_->setCurrentIndex(evidence_stat_->findData(stat));
}

void AtlasView::updateScatter() {
  const Atlas* atlas = model_->atlas();
  if (!atlas) {
    scatter_->setData({}, {}, {}, {});
    return;
  }
  const int mx = std::max(0, x_axis_->currentIndex()), my = std::max(0, y_axis_->currentIndex());
  const std::vector<AtlasMeasure>& ms = model_->measures();
  std::vector<ScatterPlot::Point> points;
  std::vector<ScatterPlot::LegendEntry> legend;
  std::map<int, int> layers;  // per kind
  int missing = 0;
  for (const AtlasHead& h : atlas->heads)
    layers[int(h.kind)] = std::max(layers[int(h.kind)], h.layer + 1);
  for (int r = 0; r < int(atlas->heads.size()); ++r) {
    const AtlasHead& h = atlas->heads[size_t(r)];
    ScatterPlot::Point p;
    p.x = model_->mean(r, mx);
    p.y = model_->mean(r, my);
    p.sd_x = model_->sd(r, mx);
    p.sd_y = model_->sd(r, my);
    p.color = headColor(h.kind, h.layer, layers[int(h.kind)]);
    p.tip = headName(h) + QLatin1Char('\n') + ms[size_t(mx)].title + QStringLiteral(": ") +
            meanSd(p.x, p.sd_x) + QLatin1Char('\n') + ms[size_t(my)].title + QStringLiteral(": ") +
            meanSd(p.y, p.sd_y);
    if (std::isnan(p.x) || std::isnan(p.y)) ++missing;
    points.push_back(p);
  }
  // The legend: per block kind, its layers in order.
  for (AttentionKind kind : kAttentionKinds)
    for (int l = 0; l < layers[int(kind)]; ++l)
      legend.push_back(
          {tr("%1 %2").arg(blockName(kind)).arg(l + 1), headColor(kind, l, layers[int(kind)])});
  scatter_->setData(std::move(points), ms[size_t(mx)].title, ms[size_t(my)].title,
                    std::move(legend), {ms[size_t(mx)].low, ms[size_t(mx)].high},
                    {ms[size_t(my)].low, ms[size_t(my)].high});
  scatter_->setNote(missing == 0 ? QString()
                                 : tr("%n head(s) not shown: a statistic that does not apply "
                                      "to them (—)",
                                      nullptr, missing));
  scatter_->setSelected(selectedHead());
}

int AtlasView::selectedHead() const {
  const AttentionSelection& s = state_->selection();
  return model_->rowOf(s.kind, s.layer, std::max(0, s.head));
}

void AtlasView::selectHead(int index) {
  const Atlas* atlas = model_->atlas();
  if (!atlas || index < 0 || index >= int(atlas->heads.size())) return;
  const AtlasHead& h = atlas->heads[size_t(index)];
  AttentionSelection sel = state_->selection();
  sel.kind = h.kind;
  sel.layer = h.layer;
  sel.head = h.head;
  state_->setSelection(sel);
  showSelection();  // also when the selection was already that head
}

void AtlasView::showSelection() {
  const int r = selectedHead();
  scatter_->setSelected(r);
  syncing_ = true;
  if (r >= 0) {
    const QModelIndex idx = proxy_->mapFromSource(model_->index(r, 0));
    table_->selectionModel()->setCurrentIndex(
        idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    table_->scrollTo(idx);
  } else {
    table_->clearSelection();
  }
  syncing_ = false;
  fillLike();
  fillEvidence();
  project_->setEnabled(!running_ && r >= 0);
}

void AtlasView::fillLike() {
  like_->clear();
  const Atlas* atlas = model_->atlas();
  const int r = selectedHead();
  if (!atlas || r < 0) return;
  const std::vector<HeadDistance> near = headsLike(*atlas, r);
  for (size_t k = 0; k < near.size() && k < 12; ++k) {
    const AtlasHead& h = atlas->heads[size_t(near[k].index)];
    auto* item = new QListWidgetItem(
        tr("%1   distance %2").arg(headName(h), num(near[k].distance, 3)), like_);
    item->setData(Qt::UserRole, near[k].index);
  }
}

QString AtlasView::evidenceNote() const {
  return evidence_note_->text();
}

void AtlasView::fillEvidence() {
  top_->clear();
  bottom_->clear();
  evidence_note_->clear();
  const Atlas* atlas = model_->atlas();
  const int r = selectedHead();
  if (!atlas || r < 0 || !result_.corpus) return;
  const int stat = std::max(0, evidence_stat_->currentData().toInt());
  const AtlasHead& h = atlas->heads[size_t(r)];
  const ExtremeValues& ex = h.extremes[size_t(stat)];
  if (ex.top().empty())
    evidence_note_->setText(tr("%1 does not apply to this head (%2): choose another statistic.")
                                .arg(evidence_stat_->currentText(), kindTitle(h.kind)));
  auto fill = [this](QListWidget* list, const std::vector<SentenceValue>& values) {
    for (const SentenceValue& v : values) {
      const CorpusEntry& e = result_.corpus->entries.at(size_t(v.sentence));
      QString text = QString::fromStdString(e.src);
      if (e.has_tgt) text += QStringLiteral("  →  ") + QString::fromStdString(e.tgt);
      if (v.chunk >= 0) text = tr("[chunk %1] %2").arg(v.chunk + 1).arg(text);
      auto* item = new QListWidgetItem(QStringLiteral("%1   %2").arg(num(v.value, 3), text), list);
      // A chunk's line is longer than the model's context: it cannot become the input.
      item->setData(Qt::UserRole, v.chunk >= 0 ? -1 : v.sentence);
      QString where = e.line > 0 ? tr("Line %1 of the corpus").arg(e.line)
                                 : tr("Sentence %1 of the corpus").arg(v.sentence + 1);
      if (v.chunk >= 0)
        where += tr(", chunk %1 (the line is longer than the model's context: it runs in chunks "
                    "and cannot be opened as the input)")
                     .arg(v.chunk + 1);
      item->setToolTip(where);
    }
  };
  fill(top_, ex.top());
  fill(bottom_, ex.bottom());
}

void AtlasView::useSentence(int sentence) {
  if (!result_.corpus || sentence < 0 || sentence >= int(result_.corpus->entries.size())) return;
  const CorpusEntry& e = result_.corpus->entries[size_t(sentence)];
  state_->useInput(QString::fromStdString(e.src),
                   e.has_tgt ? QString::fromStdString(e.tgt) : QString());
}

bool AtlasView::projectSelected() {
  Engine* engine = state_->engine();
  const Atlas* atlas = model_->atlas();
  const int r = selectedHead();
  if (!atlas || r < 0 || !result_.corpus || running_) return false;
  const AtlasHead h = atlas->heads[size_t(r)];
  auto corpus = result_.corpus;
  HeadEmbeddingOptions options;
  options.run.batch = batch_->value();
  options.run.masks = engine->masks();
  options.run.max_new_tokens = engine->maxNewTokens();
  options.run.chunk = result_.chunk;  // the sentences the atlas ran
  const bool started = engine->runProgressTask(
      tr("Queries and keys"), [=, this](const Model& model, const std::atomic<bool>& cancel,
                                        const Engine::TaskProgress& progress) {
        std::shared_ptr<const HeadEmbedding> result;
        QString error;
        try {
          HeadEmbeddingOptions o = options;
          o.run.cancel = &cancel;
          o.run.progress = [&progress](const AtlasProgress& p) { progress(p.done, p.total); };
          result = std::make_shared<const HeadEmbedding>(
              headEmbedding(model, *corpus, h.kind, h.layer, h.head, o));
        } catch (const Error& e) {
          if (e.kind() == ErrorKind::Cancelled) throw;
          error = messageSentence(e.what());
        }
        return std::function<void()>([this, result, error] {
          project_->setEnabled(true);
          if (!result) {
            embedding_status_->setText(error);
            return;
          }
          embedding_ = result;
          std::vector<ScatterPlot::Point> points;
          const QColor query(0x1f, 0x77, 0xb4), key(0xd6, 0x27, 0x28);
          for (const EmbeddingPoint& e : result->points) {
            ScatterPlot::Point p;
            p.x = e.x;
            p.y = e.y;
            p.color = e.query ? query : key;
            p.tip = tr("%1 “%2”\nsentence %3, position %4")
                        .arg(e.query ? tr("Query") : tr("Key"))
                        .arg(QString::fromStdString(e.token))
                        .arg(e.chunk >= 0 ? tr("%1 (chunk %2)").arg(e.sentence + 1).arg(e.chunk + 1)
                                          : QString::number(e.sentence + 1))
                        .arg(e.position);
            points.push_back(p);
          }
          embedding_plot_->setData(
              std::move(points),
              tr("Principal component 1 (%1% of the variance)")
                  .arg(num(100 * result->explained_ratio[0], 1)),
              tr("Component 2 (%1%)").arg(num(100 * result->explained_ratio[1], 1)),
              {{tr("queries"), query}, {tr("keys"), key}});
          embedding_status_->setText(
              tr("%1 · layer %2 · head %3: %4 points from %5 sentences%6.")
                  .arg(kindTitle(result->kind))
                  .arg(result->layer + 1)
                  .arg(result->head + 1)
                  .arg(result->points.size())
                  .arg(result->sentences)
                  .arg(result->capped ? tr(" (the first ones only)") : QString()));
        });
      });
  if (started) {
    project_->setEnabled(false);
    embedding_status_->setText(tr("Projecting…"));
  }
  return started;
}

// ---- the training history ----

bool AtlasView::openHistory(const QString& dir) {
  Engine* engine = state_->engine();
  if (running_ || reading_history_) return false;
  const std::string folder = dir.toStdString();
  const bool started = engine->runProgressTask(
      tr("Reading the training history"),
      [this, folder, dir](const Model&, const std::atomic<bool>& cancel,
                          const Engine::TaskProgress& progress) {
        std::shared_ptr<const TrainingHistory> history;
        QString error;
        try {
          HistoryOptions o;
          o.cancel = &cancel;
          o.progress = progress;
          auto h = readTrainingHistory(folder, o);
          if (h.points.empty())
            throw Error(
                ErrorKind::BadInput,
                QT_TRANSLATE_NOOP("attnviz::Error", "the folder's index lists no checkpoint"));
          history = std::make_shared<const TrainingHistory>(std::move(h));
        } catch (const Error& e) {
          if (e.kind() == ErrorKind::Cancelled) throw;
          error = messageSentence(e.what());
        }
        return std::function<void()>([this, history, error, dir] {
          if (!history) {
            history_label_->setText(error);
            return;
          }
          history_ = history;
          history_dir_ = dir;
          const QSignalBlocker block(step_slider_);
          step_slider_->setRange(0, int(history_->points.size()) - 1);
          step_slider_->setValue(int(history_->points.size()) - 1);
          step_slider_->setEnabled(true);
          export_history_->setEnabled(true);
          export_apng_->setEnabled(true);
          updateHistoryChart();
          showHistoryStep();
        });
      });
  if (!started) {
    history_label_->setText(engine->hasModel() ? tr("Wait until the running job is done.")
                                               : tr("Open a model first."));
    return false;
  }
  reading_history_ = true;
  open_history_->setEnabled(false);
  history_label_->setText(tr("Reading the checkpoints…"));
  left_->setCurrentWidget(history_chart_->parentWidget());
  return true;
}

void AtlasView::setHistoryStep(int index) {
  step_slider_->setValue(index);
}

int AtlasView::historyStep() const {
  return step_slider_->value();
}

void AtlasView::setHistoryMeasure(int measure) {
  history_measure_->setCurrentIndex(measure);
}

QString AtlasView::historyText() const {
  return history_label_->text();
}

void AtlasView::updateHistoryChart() {
  if (!history_) return;
  const int measure = std::max(0, history_measure_->currentIndex());
  if (measure == 2 + kHeadStatCount) {
    // The loss at each target position of the probes: a line per position, early positions
    // light, late ones dark (the positions after the repeat's start are where induction helps).
    size_t positions = 0;
    for (const HistoryPoint& p : history_->points)
      positions = std::max(positions, p.position_loss.size());
    std::vector<ScatterPlot::Point> points;
    for (size_t q = 0; q < positions; ++q) {
      const double t = positions <= 1 ? 0.5 : double(q) / double(positions - 1);
      const QColor color = QColor::fromHsv(280, int(60 + 180 * t), int(235 - 150 * t));
      for (size_t i = 0; i < history_->points.size(); ++i) {
        const HistoryPoint& p = history_->points[i];
        ScatterPlot::Point pt;
        pt.x = p.step;
        pt.y = q < p.position_loss.size() ? p.position_loss[q] : NAN;
        pt.series = int(q);
        pt.color = color;
        pt.tip = tr("Position %1\nstep %2: %3 nats").arg(q).arg(p.step).arg(num(pt.y, 3));
        if (i + 1 == history_->points.size() && (q == 0 || q + 1 == positions))
          pt.label = tr("pos %1").arg(q);
        points.push_back(pt);
      }
    }
    history_chart_->setData(std::move(points), tr("Training step"), history_measure_->currentText(),
                            {{tr("first position"), QColor::fromHsv(280, 60, 235)},
                             {tr("last position"), QColor::fromHsv(280, 240, 85)}},
                            {NAN, NAN}, {0.0, NAN});
    showHistoryStep();
    return;
  }
  const HistoryPoint& first = history_->points.front();
  // The heads, as the first checkpoint lists them (every checkpoint is the same model shape).
  const size_t heads =
      measure < 2 ? (measure == 0 ? first.induction : first.copying).size() : first.stats.size();
  std::map<int, int> layers;
  auto headOf = [&](const HistoryPoint& p, size_t k, double* value) -> HeadScore {
    if (measure < 2) {
      const std::vector<HeadScore>& v = measure == 0 ? p.induction : p.copying;
      *value = k < v.size() ? v[k].value : NAN;
      return k < v.size() ? v[k] : HeadScore{};
    }
    const HeadStats& s = p.stats.at(k);
    *value = headStatValue(s, kHeadStats[size_t(measure - 2)]);
    return HeadScore{s.kind, s.layer, s.head, *value};
  };
  for (size_t k = 0; k < heads; ++k) {
    double v = 0;
    const HeadScore h = headOf(first, k, &v);
    layers[int(h.kind)] = std::max(layers[int(h.kind)], h.layer + 1);
  }
  // The three heads highest at the last step are named at their line's end.
  std::vector<std::pair<double, size_t>> last;
  for (size_t k = 0; k < heads; ++k) {
    double v = 0;
    headOf(history_->points.back(), k, &v);
    if (std::isfinite(v)) last.push_back({v, k});
  }
  std::sort(last.begin(), last.end(), std::greater<>());
  last.resize(std::min<size_t>(last.size(), 3));
  std::vector<ScatterPlot::Point> points;
  for (size_t k = 0; k < heads; ++k)
    for (const HistoryPoint& p : history_->points) {
      ScatterPlot::Point pt;
      const HeadScore h = headOf(p, k, &pt.y);
      if (&p == &history_->points.back() &&
          std::any_of(last.begin(), last.end(), [k](const auto& e) { return e.second == k; }))
        pt.label = tr("L%1 H%2").arg(h.layer + 1).arg(h.head + 1);
      pt.x = p.step;
      pt.series = int(k);
      pt.color = headColor(h.kind, h.layer, layers[int(h.kind)]);
      pt.tip = tr("%1 · layer %2 · head %3\nstep %4: %5")
                   .arg(kindTitle(h.kind))
                   .arg(h.layer + 1)
                   .arg(h.head + 1)
                   .arg(p.step)
                   .arg(num(pt.y, 3));
      points.push_back(pt);
    }
  std::vector<ScatterPlot::LegendEntry> legend;
  for (AttentionKind kind : kAttentionKinds)
    for (int l = 0; l < layers[int(kind)]; ++l)
      legend.push_back(
          {tr("%1 %2").arg(blockName(kind)).arg(l + 1), headColor(kind, l, layers[int(kind)])});
  const bool signed_range = measure == 1;
  const bool unbounded = measure >= 2 && (kHeadStats[size_t(measure - 2)] == HeadStat::Entropy ||
                                          kHeadStats[size_t(measure - 2)] == HeadStat::Distance);
  history_chart_->setData(std::move(points), tr("Training step"), history_measure_->currentText(),
                          std::move(legend), {NAN, NAN},
                          {signed_range ? -1.0 : 0.0, unbounded ? NAN : 1.0});
  showHistoryStep();
}

void AtlasView::showHistoryStep() {
  if (!history_) return;
  const int i = std::clamp(step_slider_->value(), 0, int(history_->points.size()) - 1);
  const HistoryPoint& p = history_->points[size_t(i)];
  history_chart_->setMarker(p.step);
  history_label_->setText(tr("Step %1 of %2 (checkpoint %3 of %4) · training loss %5 · held-out "
                             "loss %6 nats per token")
                              .arg(p.step)
                              .arg(history_->index.steps_planned)
                              .arg(i + 1)
                              .arg(history_->points.size())
                              .arg(num(p.train_loss, 3))
                              .arg(num(p.probe_loss, 3)));
}

void AtlasView::loadHistoryStep() {
  if (!history_) return;
  const int i = std::clamp(step_slider_->value(), 0, int(history_->points.size()) - 1);
  const std::vector<CheckpointEntry>& ck = history_->index.checkpoints;
  const int step = history_->points[size_t(i)].step;
  for (const CheckpointEntry& e : ck)
    if (e.step == step) {
      const QString path = QDir(history_dir_).filePath(QString::fromStdString(e.file));
      if (state_->engine()->modelSource() == path) return;
      // A job still running: try again shortly.
      if (!state_->engine()->loadModel(path)) load_timer_->start();
      return;
    }
}

bool AtlasView::exportHistoryCsv(const QString& path, QString* error) const {
  if (!history_) {
    if (error) *error = tr("Open a training history first.");
    return false;
  }
  return writeBytes(path, historyHeadCsv(*history_), error);
}

bool AtlasView::exportHistoryApng(const QString& path, QString* error) const {
  if (!history_) {
    if (error) *error = tr("Open a training history first.");
    return false;
  }
  std::string bytes;
  try {
    // The frames and their encoding are the core's, as attnviz-cli history --apng writes them.
    bytes = encodeApng(inductionScoreFrames(*history_), 700, 2100);
  } catch (const Error& e) {
    if (error) *error = messageSentence(e.what());
    return false;
  }
  return writeBytes(path, bytes, error);
}

bool AtlasView::exportCsv(const QString& path, QString* error) const {
  if (!model_->atlas()) {
    if (error) *error = tr("Run a corpus first: there is no atlas to export.");
    return false;
  }
  return writeBytes(path, model_->csv(), error);
}

ScatterPlot* AtlasView::figurePlot() const {
  return left_->currentIndex() == 1 ? history_chart_ : scatter_;
}

QWidget* AtlasView::exportWidget() {
  return figurePlot();
}

QStringList AtlasView::figureTitle() const {
  if (figurePlot() == history_chart_ && history_)
    return {
        tr("Every head over training: %1").arg(history_measure_->currentText()),
        tr("%1 · task %2 · %3 checkpoints")
            .arg(QFileInfo(history_dir_).fileName(), QString::fromStdString(history_->index.task))
            .arg(history_->points.size())};
  QStringList lines = {tr("Head atlas: every head over a corpus (mean ± sd)")};
  if (const Atlas* a = model_->atlas())
    lines << tr("%1 · %2 sentences · %3")
                 .arg(state_->engine()->modelSource(), QString::number(a->run.sentences),
                      QString::fromStdString(a->origin));
  return lines;
}

QSize AtlasView::figureBodySize(QSize available, bool) {
  const ScatterPlot* plot = figurePlot();
  const QSize s = plot->size().isEmpty() ? plot->sizeHint() : plot->size();
  return s.boundedTo(available);
}

void AtlasView::paintFigureBody(QPainter& painter, QSize body, bool) {
  figurePlot()->paint(painter, body);
}

void AtlasView::explain() {
  QString html = tr(
      "<p>Every other view looks at one sentence. Here each <b>point is one head</b> of one "
      "attention block, measured over a whole <b>corpus</b> of sentences: its position is the "
      "mean of two statistics over the sentences, the bars show ± one standard deviation (a long "
      "bar: the head does different things on different sentences). Colours: the block (blue "
      "encoder self-attention, green decoder self-attention, orange cross-attention), darker for "
      "later layers. Two measures are the model's, one number per head without a spread: the "
      "<i>induction score</i> (on a random sequence repeated twice, how much the second copy "
      "attends to the token after the same token's earlier occurrence: 1 = an induction head) and "
      "the <i>copying score</i> of the head's weights (1 = it raises the very tokens it attends "
      "to).</p>"
      "<p>Click a point or a row to select that head in every view; double-click to open it in "
      "the Attention view. <i>Heads like this one</i> lists the heads whose statistics are "
      "nearest; <i>Evidence</i> the sentences where the head's pattern is strongest and weakest "
      "(double-click one to make it the input); <i>Queries and keys</i> projects the head's "
      "query and key vectors over the corpus on their two main directions: where queries sit "
      "near keys, the head attends.</p>");
  explanation_->setHtml(html);
  status_->setText(status_text_);
}

void AtlasView::refresh() {
  if (!state_->model()) {
    run_->setEnabled(false);
    explanation_->setHtml(tr("Open a model first: the atlas measures every head of it."));
    return;
  }
  run_->setEnabled(!running_);
  showSelection();
  explain();
}

}  // namespace attnviz::gui

#include "shell/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QFutureWatcher>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPainter>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStringDecoder>
#include <QTabWidget>
#include <QTextEdit>
#include <QThread>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "arch/architectures.h"
#include "arch/bundled.h"
#include "arch/weights.h"
#include "base/error.h"
#include "base/file_read.h"
#include "compute/backends.h"
#include "compute/thread_pool.h"
#include "figures/apng.h"
#include "model/prompt.h"
#include "model/trace_dump.h"
#include "session/attention_data.h"
#include "session/item_models.h"
#include "shell/answers_dialog.h"
#include "shell/i18n.h"
#include "shell/lesson_dialog.h"
#include "shell/tour.h"
#include "shell/view_registry.h"
#include "views/attention/attention_view.h"
#include "views/decoding/decoding_view.h"
#include "views/masks/masks_view.h"
#include "views/overview/overview_view.h"
#include "views/positional/positional_view.h"
#include "widgets/widgets.h"

namespace attnviz::gui {

namespace {

// The head chooser's tooltip (a grouped-query model's adds the key/value head of the one chosen).
QString headKeysTip() {
  return MainWindow::tr("[ and ] move across heads, M toggles the mean of the heads");
}

// The application's organisation and name (main() sets "attnviz"; the tests their own).
QSettings appSettings() {
  const QString org = QCoreApplication::organizationName();
  const QString app = QCoreApplication::applicationName();
  return QSettings(org.isEmpty() ? QStringLiteral("attnviz") : org,
                   app.isEmpty() ? QStringLiteral("attnviz") : app);
}

QString menuText(QString s) {
  return s.replace('&', QStringLiteral("&&"));
}

// Widgets that take typed characters: the single-key shortcuts must not be typed into them.
bool isTextInput(const QWidget* w) {
  return qobject_cast<const QLineEdit*>(w) || qobject_cast<const QPlainTextEdit*>(w) ||
         qobject_cast<const QTextEdit*>(w) || qobject_cast<const QAbstractSpinBox*>(w);
}

constexpr int kMaxRecentModels = 8;
constexpr double kPresentationScale = 1.4;

}  // namespace

QStringList distinctPathLabels(const QStringList& paths) {
  // Each path's last k components, k growing for the paths whose label another path shares
  // (two training runs' out/ckpt.pt: "run-a/out/ckpt.pt", "run-b/out/ckpt.pt").
  std::vector<QStringList> parts;
  for (const QString& p : paths)
    parts.push_back(QDir::cleanPath(QDir::fromNativeSeparators(p)).split(u'/', Qt::SkipEmptyParts));
  std::vector<int> k(size_t(paths.size()), 1);
  QStringList labels;
  for (int round = 0; round < 64; ++round) {
    labels.clear();
    for (size_t i = 0; i < parts.size(); ++i) {
      const int n = std::min<int>(k[i], int(parts[i].size()));
      labels << parts[i].mid(parts[i].size() - n).join(u'/');
    }
    bool grew = false;
    for (size_t i = 0; i < parts.size(); ++i)
      if (labels.count(labels[int(i)]) > 1 && k[i] < int(parts[i].size())) {
        ++k[i];
        grew = true;
      }
    if (!grew) break;
  }
  return labels;
}

namespace {}  // namespace

MainWindow::MainWindow(const Options& options, QWidget* parent)
    : QMainWindow(parent), options_(options) {
  setWindowTitle(tr("attnviz"));
  normal_font_ = font();
  engine_ = new Engine(this);
  // First of all the engine's listeners: the window must see where the focus is before the views
  // disable their controls for a job.
  connect(engine_, &Engine::busyChanged, this, &MainWindow::onBusyChanged);
  state_ = new AppState(engine_, this);
  structure_ = new StructureModel(this);
  cuda_reason_ = QString::fromStdString(cudaUnavailableReason());

  auto* central = new QWidget(this);
  auto* cl = new QVBoxLayout(central);
  cl->setContentsMargins(6, 6, 6, 0);
  cl->setSpacing(4);
  cl->addWidget(buildInputBar());
  message_bar_ = new MessageBar(central);
  cl->addWidget(message_bar_);

  splitter_ = new QSplitter(Qt::Horizontal, central);
  tree_ = new QTreeView(splitter_);
  tree_->setModel(structure_);
  tree_->setHeaderHidden(true);
  tree_->setUniformRowHeights(true);
  tree_->setMinimumWidth(190);
  tree_->setToolTip(tr("The model's structure: select an attention block or a head to show it"));
  splitter_->addWidget(tree_);

  auto* right = new QWidget(splitter_);
  auto* rl = new QVBoxLayout(right);
  rl->setContentsMargins(0, 0, 0, 0);
  rl->setSpacing(4);
  rl->addWidget(buildSelectionBar());
  tabs_ = new QTabWidget(right);
  tabs_->setDocumentMode(true);
  // The views, in the registry's order (view_registry.cpp): the tabs, the View menu and Ctrl+1 …
  // follow it. A view asks for another with openView(name).
  views_ = makeViews(state_);
  for (View* v : views_) {
    tabs_->setTabToolTip(tabs_->addTab(v, v->title()), v->spec()->helpText());
    connect(v, &View::openView, this, &MainWindow::setCurrentView);
  }
  // The views the window itself works with (zoom, the batch, the structure panel, frames).
  attention_ = viewOf<AttentionView>();
  overview_ = viewOf<OverviewView>();
  masks_ = viewOf<MasksView>();
  positional_ = viewOf<PositionalView>();
  decoding_ = viewOf<DecodingView>();
  rl->addWidget(tabs_, 1);
  splitter_->addWidget(right);
  splitter_->setStretchFactor(0, 0);
  splitter_->setStretchFactor(1, 1);
  splitter_->setSizes({230, 1100});
  cl->addWidget(splitter_, 1);
  setCentralWidget(central);

  buildStatusBar();
  buildMenus();
  updateInputBar();
  if (QAction* a = action(QStringLiteral("colormap-viridis"))) a->setChecked(true);

  connect(engine_, &Engine::modelChanged, this, &MainWindow::onModelChanged);
  connect(engine_, &Engine::snapshotChanged, this, &MainWindow::onSnapshotChanged);
  connect(engine_, &Engine::masksChanged, this, &MainWindow::updateMaskIndicators);
  connect(engine_, &Engine::progress, this, [this](int done, int total, const QString& what) {
    progress_->setRange(0, std::max(total, 1));
    progress_->setValue(std::min(done, total));
    status_busy_->setText(what + QStringLiteral("…"));
  });
  // What a job's failure says lasts until a later job succeeds; a cancel is the user's own doing,
  // said without alarm.
  connect(engine_, &Engine::failed, this,
          [this](const QString& title, const QString& message, bool cancelled) {
            message_bar_->showMessage(
                cancelled ? MessageBar::Level::Info : MessageBar::Level::Error, title, message,
                QStringLiteral("job"));
            syncModelCombo();
            syncBackendCombo();
          });
  connect(engine_, &Engine::notice, this, [this](const QString& message) {
    message_bar_->showMessage(MessageBar::Level::Warning, tr("Please note"), message);
  });
  connect(engine_, &Engine::backendChanged, this, [this] {
    syncBackendCombo();
    status_backend_->setText(tr("Backend: %1").arg(engine_->backendDescription()));
  });
  connect(engine_, &Engine::unknownWords, this, &MainWindow::showUnknownWords);
  connect(engine_, &Engine::answersNeeded, this, &MainWindow::askForAnswers);
  connect(engine_, &Engine::namesUnknown, this, &MainWindow::showNamesRefused);
  connect(engine_, &Engine::jobFinished, this, [this](bool ok) {
    if (ok && message_bar_->isVisible() && message_bar_->tag() == QStringLiteral("job"))
      message_bar_->clear();
    if (pending_ != Pending::None && !engine_->busy()) {
      pending_ = Pending::None;
      emit firstRunFinished();
    }
    updateActions();
  });
  connect(state_, &AppState::selectionChanged, this, &MainWindow::onSelectionChanged);
  connect(tree_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          [this](const QModelIndex& index) {
            if (!syncing_) onStructureActivated(index);
          });
  connect(tree_, &QTreeView::clicked, this, &MainWindow::onStructureActivated);
  connect(tabs_, &QTabWidget::currentChanged, this, [this] { updateActions(); });

  busy_timer_.setSingleShot(true);
  connect(&busy_timer_, &QTimer::timeout, this, [this] {
    if (!engine_->busy()) return;
    progress_->show();
    cancel_button_->show();
    status_busy_->show();
  });

  resize(1360, 880);
  loadSettings();
  if (!options_.view.isEmpty()) setCurrentView(options_.view);
  if (options_.presentation) setPresentationMode(true);
  syncBackendCombo();
  updateActions();
  // Help › Tour, offered once after the first start (shell/tour.h).
  Tour* tour =
      installTour({this, engine_, state_, src_edit_, tgt_edit_, [this] { return currentView(); },
                   [this](const QString& name) { setCurrentView(name); },
                   [this](int step) { decoding_->selectStep(step); }});
  if (options_.use_settings) connect(this, &MainWindow::firstRunFinished, tour, &Tour::offerOnce);
}

MainWindow::~MainWindow() = default;

// ---- building ---------------------------------------------------------------------------------

QWidget* MainWindow::buildInputBar() {
  auto* bar = new QWidget(this);
  auto* g = new QGridLayout(bar);
  g->setContentsMargins(0, 0, 0, 0);
  g->setHorizontalSpacing(6);
  g->setVerticalSpacing(4);

  g->addWidget(new QLabel(tr("Model:"), bar), 0, 0);
  auto* top = new QHBoxLayout;
  model_combo_ = new QComboBox(bar);
  model_combo_->setMinimumContentsLength(18);
  model_combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  model_combo_->setToolTip(
      tr("The bundled models and the files you opened; File › Open model… loads another"));
  top->addWidget(model_combo_);
  auto* open = new QPushButton(tr("Open…"), bar);
  open->setToolTip(
      tr("Open a model: .safetensors, or a PyTorch checkpoint (.pt, .pth, .bin) (Ctrl+O)"));
  top->addWidget(open);
  top->addSpacing(12);
  top->addWidget(new QLabel(tr("Backend:"), bar));
  backend_combo_ = new QComboBox(bar);
  backend_combo_->addItem(tr("CPU"), QStringLiteral("cpu"));
  backend_combo_->addItem(tr("CUDA (GPU)"), QStringLiteral("cuda"));
  if (!cuda_reason_.isEmpty()) {
    auto* m = qobject_cast<QStandardItemModel*>(backend_combo_->model());
    if (m) m->item(1)->setEnabled(false);
    backend_combo_->setItemData(1, tr("CUDA is unavailable: %1").arg(cuda_reason_),
                                Qt::ToolTipRole);
    backend_combo_->setToolTip(tr("CUDA is unavailable: %1").arg(cuda_reason_));
  } else {
    backend_combo_->setToolTip(tr("Where the forward pass runs"));
  }
  top->addWidget(backend_combo_);
  top->addSpacing(12);
  // The examples live on this button only (one place, next to the sentence they fill in).
  examples_button_ = new QPushButton(tr("Examples"), bar);
  examples_menu_ = new QMenu(tr("Examples"), this);
  examples_button_->setMenu(examples_menu_);
  examples_button_->setToolTip(tr("Example sentences from the model's config"));
  top->addWidget(examples_button_);
  top->addStretch(1);
  g->addLayout(top, 0, 1, 1, 3);

  src_label_ = new QLabel(tr("Source:"), bar);
  g->addWidget(src_label_, 1, 0);
  src_edit_ = new QLineEdit(bar);
  // Long inputs (File › Open input text…): QLineEdit's default stops at 32,767 characters.
  src_edit_->setMaxLength(int(kMaxInputTextBytes));
  src_edit_->setPlaceholderText(tr("A source sentence, words separated by spaces"));
  src_edit_->setClearButtonEnabled(true);
  g->addWidget(src_edit_, 1, 1);
  tgt_box_ = new QWidget(bar);
  auto* tl = new QHBoxLayout(tgt_box_);
  tl->setContentsMargins(0, 0, 0, 0);
  tl->addWidget(new QLabel(tr("Target prefix:"), tgt_box_));
  tgt_edit_ = new QLineEdit(tgt_box_);
  tgt_edit_->setPlaceholderText(tr("optional: forces the first target tokens"));
  tgt_edit_->setClearButtonEnabled(true);
  tgt_edit_->setMinimumWidth(120);
  tl->addWidget(tgt_edit_, 1);
  g->addWidget(tgt_box_, 1, 2);
  auto* bl = new QHBoxLayout;
  run_button_ = new QPushButton(tr("Run"), bar);
  run_button_->setDefault(true);
  back_button_ = new QPushButton(tr("◀ Step back"), bar);
  back_button_->setToolTip(tr("Remove the newest target token (←)"));
  forward_button_ = new QPushButton(tr("Step forward ▶"), bar);
  forward_button_->setToolTip(tr("Append the most probable next token (→)"));
  reset_button_ = new QPushButton(tr("Reset"), bar);
  reset_button_->setToolTip(tr("Back to the target prefix, ready to step (Home)"));
  for (auto* b : {run_button_, back_button_, forward_button_, reset_button_}) bl->addWidget(b);
  g->addLayout(bl, 1, 3);
  g->setColumnStretch(1, 3);
  g->setColumnStretch(2, 2);

  connect(open, &QPushButton::clicked, this, [this] { openModelDialog(false); });
  connect(model_combo_, &QComboBox::activated, this, [this](int i) {
    const QString name = model_combo_->itemData(i).toString();
    if (name.isEmpty() || name == engine_->modelSource()) return;
    if (!engine_->loadModel(name)) syncModelCombo();
  });
  connect(backend_combo_, &QComboBox::activated, this, [this](int i) {
    const QString name = backend_combo_->itemData(i).toString();
    if (name == engine_->backendName()) return;
    pending_ = engine_->hasModel() ? Pending::Rerun : Pending::None;
    if (!engine_->setBackend(name)) {
      pending_ = Pending::None;
      syncBackendCombo();
    }
  });
  connect(run_button_, &QPushButton::clicked, this, &MainWindow::runCurrentInput);
  connect(src_edit_, &QLineEdit::returnPressed, this, &MainWindow::runCurrentInput);
  connect(tgt_edit_, &QLineEdit::returnPressed, this, &MainWindow::runCurrentInput);
  // A sentence a view picked (the Atlas view's evidence) is typed into the bar and run.
  connect(state_, &AppState::inputAsked, this, [this](const QString& src, const QString& tgt) {
    src_edit_->setText(src);
    tgt_edit_->setText(tgt);
    runCurrentInput();
  });
  connect(back_button_, &QPushButton::clicked, this, [this] { engine_->stepBack(); });
  connect(forward_button_, &QPushButton::clicked, this, [this] { engine_->stepForward(); });
  connect(reset_button_, &QPushButton::clicked, this, [this] { engine_->reset(); });
  return bar;
}

QWidget* MainWindow::buildSelectionBar() {
  auto* bar = new QWidget(this);
  auto* l = new QHBoxLayout(bar);
  l->setContentsMargins(0, 0, 0, 0);
  l->addWidget(new QLabel(tr("Attention:"), bar));
  kind_combo_ = new QComboBox(bar);
  QStringList kind_keys;
  for (AttentionKind k : kAttentionKinds) {
    kind_combo_->addItem(kindTitle(k), int(k));
    kind_keys << QString::number(kind_combo_->count());
  }
  kind_combo_->setToolTip(tr("Keys %1").arg(kind_keys.join(QStringLiteral(", "))));
  kind_combo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);  // never clipped
  l->addWidget(kind_combo_);
  l->addWidget(new QLabel(tr("Layer:"), bar));
  layer_combo_ = new QComboBox(bar);
  layer_combo_->setToolTip(tr("PgUp / PgDn"));
  layer_combo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  l->addWidget(layer_combo_);
  l->addWidget(new QLabel(tr("Head:"), bar));
  head_combo_ = new QComboBox(bar);
  head_combo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);  // "Mean of heads" unclipped
  head_combo_->setToolTip(headKeysTip());
  l->addWidget(head_combo_);
  batch_label_ = new QLabel(tr("Sentence:"), bar);
  batch_combo_ = new QComboBox(bar);
  batch_combo_->setToolTip(tr("Which sentence of the batch the views show"));
  l->addWidget(batch_label_);
  l->addWidget(batch_combo_);
  batch_combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  batch_combo_->setMinimumContentsLength(14);
  batch_label_->hide();
  batch_combo_->hide();
  l->addSpacing(12);
  l->addWidget(new QLabel(tr("Colormap:"), bar));
  colormap_combo_ = new QComboBox(bar);
  for (const QString& n : Colormap::names()) colormap_combo_->addItem(n, n);
  l->addWidget(colormap_combo_);
  // Drawn whole or not at all (F1 › Keyboard shortcuts has them all).
  hint_ = new FitLabel(tr("PgUp/PgDn layer · [ ] head · M mean · ← → step"), bar);
  hint_->setForegroundRole(QPalette::PlaceholderText);
  hint_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  l->addWidget(hint_, 1);

  connect(kind_combo_, &QComboBox::activated, this, [this](int i) {
    state_->setKind(static_cast<AttentionKind>(kind_combo_->itemData(i).toInt()));
  });
  connect(layer_combo_, &QComboBox::activated, this, [this](int i) {
    AttentionSelection s = state_->selection();
    s.layer = i;
    state_->setSelection(s);
  });
  connect(head_combo_, &QComboBox::activated, this, [this](int i) {
    AttentionSelection s = state_->selection();
    s.head = i - 1;
    state_->setSelection(s);
  });
  connect(batch_combo_, &QComboBox::activated, this, [this](int i) { state_->setBatchIndex(i); });
  connect(colormap_combo_, &QComboBox::currentIndexChanged, this,
          [this](int i) { state_->setColormap(colormap_combo_->itemData(i).toString()); });
  return bar;
}

void MainWindow::buildStatusBar() {
  status_backend_ = new QLabel(this);
  status_time_ = new QLabel(this);
  status_lengths_ = new QLabel(this);
  status_masks_ = new QLabel(this);
  status_masks_->setStyleSheet(
      QStringLiteral("QLabel { background: #fde8e6; color: #8a1c12; border: 1px solid #d9756b;"
                     " border-radius: 3px; padding: 0 6px; font-weight: bold; }"));
  status_masks_->setToolTip(tr("Masks switched off in the Masks view: every view shows the leak"));
  status_masks_->hide();
  status_busy_ = new QLabel(this);
  progress_ = new QProgressBar(this);
  progress_->setObjectName(QStringLiteral("statusProgress"));  // the window's, in the status bar
  progress_->setMaximumWidth(180);
  progress_->setTextVisible(true);
  cancel_button_ = new QPushButton(tr("Cancel"), this);
  cancel_button_->setToolTip(tr("Stop the running computation (Esc)"));
  connect(cancel_button_, &QPushButton::clicked, engine_, &Engine::cancel);
  threads_spin_ = new QSpinBox(this);
  threads_spin_->setObjectName(QStringLiteral("threads"));
  // The same text and width on every machine (the guide's pictures are compared across them).
  threads_spin_->setRange(0, 256);
  threads_spin_->setSpecialValueText(tr("CPU threads: one per core"));
  threads_spin_->setPrefix(tr("CPU threads: "));
  threads_spin_->setToolTip(
      tr("How many threads the CPU backend computes on (default: one per core, %1 here). Fewer "
         "leave cores to other programs.")
          .arg(availableCores()));
  threads_spin_->setFocusPolicy(Qt::ClickFocus);
  connect(threads_spin_, &QSpinBox::valueChanged, this, [this](int n) {
    if (!engine_->setThreads(n)) {  // a job runs: show what still holds
      const QSignalBlocker b(threads_spin_);
      threads_spin_->setValue(engine_->threadsSetting());
      return;
    }
    status_backend_->setText(tr("Backend: %1").arg(engine_->backendDescription()));
  });
  statusBar()->addWidget(status_backend_);
  statusBar()->addWidget(threads_spin_);
  statusBar()->addWidget(status_time_);
  statusBar()->addWidget(status_lengths_);
  statusBar()->addWidget(status_masks_);
  statusBar()->addPermanentWidget(status_busy_);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_button_);
  progress_->hide();
  cancel_button_->hide();
  status_busy_->hide();
  status_backend_->setText(tr("No model"));
}

// ---- the action table -------------------------------------------------------------------------

std::vector<ActionSpec> MainWindow::actionTable() {
  const QString file = tr("&File"), decode = tr("&Decode"), view = tr("&View"), help = tr("&Help");
  std::vector<ActionSpec> t = {
      {QStringLiteral("openModel"),
       file,
       tr("&Open model…"),
       {QKeySequence::Open},
       [this] { openModelDialog(false); }},
      {QStringLiteral("openModelConfig"),
       file,
       tr("Open model with a &config file…"),
       {},
       [this] { openModelDialog(true); }},
      {QStringLiteral("openModelNames"),
       file,
       tr("Open model with a &names map…"),
       {},
       [this] {
         const QString path = chooseModelFile();
         if (!path.isEmpty()) chooseNamesMap(path);
       }},
      {QStringLiteral("vocabularyFile"),
       file,
       tr("Use a &vocabulary file…"),
       {},
       [this] {
         const QString model = engine_->modelSource();
         const QString f = QFileDialog::getOpenFileName(
             this, tr("The vocabulary %1 was trained with").arg(QFileInfo(model).fileName()),
             QFileInfo(model).absolutePath(),
             tr("Vocabularies (*.pkl *.model *.json *.txt *.vocab);;All files (*)"));
         if (!f.isEmpty()) openWithVocabulary(f);
       }},
      {QStringLiteral("openInput"),
       file,
       tr("Open input &text…"),
       {QKeySequence(tr("Ctrl+Shift+T"))},
       [this] {
         const QString f =
             QFileDialog::getOpenFileName(this, tr("A text to run the model on"), QString(),
                                          tr("Text files (*.txt *.md);;All files (*)"));
         if (!f.isEmpty()) openInputText(f);
       }},
      {QStringLiteral("openFolder"),
       file,
       tr("Open a model &folder…"),
       {QKeySequence(tr("Ctrl+Shift+O"))},
       [this] { openFolderDialog(); }},
      {QStringLiteral("exportPng"),
       file,
       tr("Export view as &PNG…"),
       {QKeySequence(tr("Ctrl+E"))},
       [this] { exportViewDialog(FigureOptions::Format::Png); },
       false,
       true},
      {QStringLiteral("exportSvg"),
       file,
       tr("Export view as &SVG…"),
       {QKeySequence(tr("Ctrl+Shift+E"))},
       [this] { exportViewDialog(FigureOptions::Format::Svg); }},
      {QStringLiteral("exportPdf"),
       file,
       tr("Export view as P&DF…"),
       {QKeySequence(tr("Ctrl+Shift+P"))},
       [this] { exportViewDialog(FigureOptions::Format::Pdf); }},
      {QStringLiteral("exportFrames"),
       file,
       tr("Export the decoding as &frames…"),
       {QKeySequence(tr("Ctrl+Shift+F"))},
       [this] { exportFramesDialog(); }},
      {QStringLiteral("exportTrace"),
       file,
       tr("Export trace as &NumPy…"),
       {QKeySequence(tr("Ctrl+Shift+N"))},
       [this] { exportTraceDialog(); }},
      {QStringLiteral("exportLesson"),
       file,
       tr("Export &lesson as HTML…"),
       {},
       [this] { exportLessonDialog(); }},
      {QStringLiteral("quit"),
       file,
       tr("&Quit"),
       {QKeySequence::Quit},
       [this] { close(); },
       false,
       true},

      {QStringLiteral("run"),
       decode,
       tr("&Run"),
       {QKeySequence(tr("Ctrl+Return")), QKeySequence(tr("Ctrl+Enter")), QKeySequence(tr("F5"))},
       [this] { runCurrentInput(); }},
      {QStringLiteral("stepForward"),
       decode,
       tr("Step &forward"),
       {QKeySequence(Qt::Key_Right), QKeySequence(tr("Alt+Right"))},
       [this] { engine_->stepForward(); }},
      {QStringLiteral("stepBack"),
       decode,
       tr("Step &back"),
       {QKeySequence(Qt::Key_Left), QKeySequence(tr("Alt+Left"))},
       [this] { engine_->stepBack(); }},
      {QStringLiteral("decodeToEnd"),
       decode,
       tr("Decode to the &end"),
       {QKeySequence(Qt::Key_End)},
       [this] { engine_->decodeToEnd(); }},
      {QStringLiteral("reset"),
       decode,
       tr("Re&set to the prefix"),
       {QKeySequence(Qt::Key_Home)},
       [this] { engine_->reset(); }},
      // Esc: cancels a running job; otherwise leaves a text field for the view.
      {QStringLiteral("cancel"),
       decode,
       tr("&Cancel"),
       {QKeySequence(Qt::Key_Escape)},
       [this] {
         if (engine_->busy())
           engine_->cancel();
         else if (isTextInput(QApplication::focusWidget()))
           focusView();
       },
       false,
       true},
  };
  // The views, Ctrl+1 … in tab order.
  for (size_t i = 0; i < views_.size(); ++i) {
    View* v = views_[i];
    t.push_back({QStringLiteral("view-") + v->name(), view, v->title(),
                 i < 9 ? QList<QKeySequence>{QKeySequence(tr("Ctrl+%1").arg(i + 1))}
                       : QList<QKeySequence>{},
                 [this, v] { tabs_->setCurrentWidget(v); }});
  }
  // The attention kinds, 1 … in their order.
  for (size_t k = 0; k < std::size(kAttentionKinds); ++k) {
    const AttentionKind kind = kAttentionKinds[k];
    t.push_back({QStringLiteral("kind-") + QString::fromLatin1(attentionKindName(kind)),
                 view,
                 kindTitle(kind),
                 {QKeySequence(QString::number(k + 1))},
                 [this, kind] { state_->setKind(kind); },
                 false,
                 k == 0});
  }
  const std::vector<ActionSpec> rest = {
      {QStringLiteral("previousLayer"),
       view,
       tr("Previous layer"),
       {QKeySequence(Qt::Key_PageUp)},
       [this] { state_->moveLayer(-1); }},
      {QStringLiteral("nextLayer"),
       view,
       tr("Next layer"),
       {QKeySequence(Qt::Key_PageDown)},
       [this] { state_->moveLayer(1); }},
      {QStringLiteral("previousHead"),
       view,
       tr("Previous head"),
       {QKeySequence(Qt::Key_BracketLeft)},
       [this] { state_->moveHead(-1); }},
      {QStringLiteral("nextHead"),
       view,
       tr("Next head"),
       {QKeySequence(Qt::Key_BracketRight)},
       [this] { state_->moveHead(1); }},
      {QStringLiteral("meanOfHeads"),
       view,
       tr("Mean of the heads"),
       {QKeySequence(Qt::Key_M)},
       [this] { state_->toggleMean(); }},
      {QStringLiteral("zoomIn"),
       view,
       tr("Zoom in"),
       {QKeySequence::ZoomIn, QKeySequence(tr("Ctrl+="))},
       [this] { attention_->heatmapView()->zoomIn(); },
       false,
       true},
      {QStringLiteral("zoomOut"),
       view,
       tr("Zoom out"),
       {QKeySequence::ZoomOut},
       [this] { attention_->heatmapView()->zoomOut(); }},
      {QStringLiteral("zoomFit"),
       view,
       tr("Fit to window"),
       {QKeySequence(tr("Ctrl+0"))},
       [this] { attention_->heatmapView()->zoomFit(); }},
      {QStringLiteral("explanations"),
       view,
       tr("Show e&xplanations"),
       {QKeySequence(Qt::Key_F1)},
       [] {},
       true,
       true},
      {QStringLiteral("presentation"),
       view,
       tr("&Presentation mode (large fonts)"),
       {QKeySequence(Qt::Key_F11)},
       [this] { setPresentationMode(!presentation_); },
       true},
      {QStringLiteral("keys"), help, tr("&Keyboard shortcuts"), {}, [this] { showKeys(); }},
      {QStringLiteral("about"),
       help,
       tr("&About attnviz"),
       {},
       [this] {
         QMessageBox::about(
             this, tr("About attnviz"),
             tr("<b>attnviz</b> %1 — see inside Transformers.<br>Every layer's and head's "
                "attention: scores, masks and probabilities, computed by attnviz's own core.")
                 .arg(QCoreApplication::applicationVersion()));
       }},
  };
  t.insert(t.end(), rest.begin(), rest.end());
  return t;
}

void MainWindow::addActions(const std::vector<ActionSpec>& table) {
  std::vector<std::pair<QString, QMenu*>> menus;
  for (const ActionSpec& spec : table) {
    auto* a = new QAction(spec.text, this);
    a->setObjectName(spec.name);
    a->setShortcuts(spec.keys);
    a->setShortcutContext(Qt::WindowShortcut);
    a->setCheckable(spec.checkable);
    connect(a, &QAction::triggered, this, [fn = spec.fn] { fn(); });
    QWidget::addAction(a);
    if (spec.menu.isEmpty()) continue;
    auto it = std::find_if(menus.begin(), menus.end(),
                           [&](const auto& m) { return m.first == spec.menu; });
    if (it == menus.end()) {
      menus.emplace_back(spec.menu, menuBar()->addMenu(spec.menu));
      it = menus.end() - 1;
    } else if (spec.separator) {
      it->second->addSeparator();
    }
    it->second->addAction(a);
  }
}

void MainWindow::buildMenus() {
  actions_ = actionTable();
  addActions(actions_);
  // The colormaps: a submenu of View, checked with the chooser above the views.
  QMenu* view = nullptr;
  for (QMenu* m : menuBar()->findChildren<QMenu*>())
    if (m->title() == tr("&View")) view = m;
  if (view) {
    QMenu* cmaps = new QMenu(tr("&Colormap"), view);
    view->insertMenu(action(QStringLiteral("zoomIn")), cmaps);
    auto* group = new QActionGroup(this);
    for (const QString& n : Colormap::names()) {
      QAction* a = cmaps->addAction(n);
      a->setCheckable(true);
      a->setObjectName(QStringLiteral("colormap-") + n);
      group->addAction(a);
      connect(a, &QAction::triggered, this,
              [this, n] { colormap_combo_->setCurrentIndex(colormap_combo_->findData(n)); });
    }
    connect(state_, &AppState::colormapChanged, this, [cmaps](const Colormap& c) {
      for (QAction* a : cmaps->actions()) a->setChecked(a->text() == c.name());
    });
    // The interface's language (shell/i18n.h): saved, and used from the next start on.
    QMenu* langs = new QMenu(tr("&Language"), view);
    langs->setObjectName(QStringLiteral("languageMenu"));
    view->insertMenu(action(QStringLiteral("zoomIn")), langs);
    auto* lgroup = new QActionGroup(this);
    for (const QString& code : availableLanguages()) {
      QAction* a = langs->addAction(languageDisplayName(code));
      a->setCheckable(true);
      a->setChecked(code == currentLanguage());
      a->setObjectName(QStringLiteral("language-") + code);
      lgroup->addAction(a);
      connect(a, &QAction::triggered, this, [this, code] { setLanguage(code); });
    }
    view->insertSeparator(action(QStringLiteral("zoomIn")));
  }
  QAction* explain = action(QStringLiteral("explanations"));
  explain->setChecked(true);
  connect(explain, &QAction::toggled, this, [this](bool on) {
    for (View* v : views_) v->explanation()->setExpanded(on);
  });
  for (View* v : views_) {
    connect(v->explanation(), &ExplanationPanel::expandedChanged, explain, [explain](bool on) {
      const QSignalBlocker b(explain);
      explain->setChecked(on);
    });
    if (QAction* a = action(QStringLiteral("view-") + v->name()))
      a->setStatusTip(v->spec()->helpText());
  }
}

void MainWindow::setLanguage(const QString& code) {
  if (options_.use_settings) appSettings().setValue(QStringLiteral("language"), code);
  if (code == currentLanguage()) return;
  const QString name = languageDisplayName(code);
  const QString text =
      options_.use_settings
          ? tr("attnviz will speak %1 from its next start on: quit and open it again. Your model "
               "and settings are kept.")
                .arg(name)
          : tr("Settings are off (--no-settings): start attnviz with --lang %1 to see it in %2.")
                .arg(code, name);
  // Window-modal, not blocking: the user's work goes on behind it.
  auto* box =
      new QMessageBox(QMessageBox::Information, tr("Language"), text, QMessageBox::Ok, this);
  box->setObjectName(QStringLiteral("languageRestartBox"));
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

QString MainWindow::keysHelpHtml() const {
  QString html = QStringLiteral("<table cellspacing=3>");
  QString menu;
  for (const ActionSpec& spec : actions_) {
    // Every view is listed, those past Ctrl+9 (no key) with where to find them.
    const bool view = spec.name.startsWith(QStringLiteral("view-"));
    if (spec.keys.isEmpty() && !view) continue;
    if (spec.menu != menu) {
      menu = spec.menu;
      html += QStringLiteral("<tr><td colspan=2><b>%1</b></td></tr>")
                  .arg(QString(menu).remove('&').toHtmlEscaped());
    }
    QStringList keys;
    for (const QKeySequence& k : spec.keys) keys << k.toString(QKeySequence::NativeText);
    keys.removeDuplicates();
    // A view without a key: no key in the keys' column, where to find it beside its name.
    QString text = QString(spec.text).remove('&');
    if (keys.isEmpty()) text += tr(" (no key: its tab or the View menu)");
    html += QStringLiteral("<tr><td>&nbsp;&nbsp;%1</td><td>%2</td></tr>")
                .arg(keys.isEmpty() ? QStringLiteral("—")
                                    : keys.join(QStringLiteral(", ")).toHtmlEscaped(),
                     text.toHtmlEscaped());
  }
  html += QStringLiteral("</table>");
  html +=
      tr("<p>Single keys (1, 2, 3, M, [, ], arrows) act when the focus is not in a text field: "
         "Enter or Ctrl+Enter runs and hands the keys back to the view, Esc leaves a text "
         "field, Alt+← / Alt+→ step from anywhere.</p>");
  return html;
}

void MainWindow::showKeys() {
  QMessageBox box(this);
  box.setWindowTitle(tr("Keyboard shortcuts"));
  box.setTextFormat(Qt::RichText);
  box.setText(keysHelpHtml());
  box.exec();
}

// ---- start-up and model changes ---------------------------------------------------------------

void MainWindow::start() {
  QString model = options_.model;
  QString config = options_.config;
  const auto bundled = listBundledModels();
  if (model.isEmpty() && options_.use_settings) {
    QSettings s = appSettings();
    const QString last = s.value(QStringLiteral("model")).toString();
    bool ok = false;
    try {
      ok = !last.isEmpty() && !resolveModelPath(last.toStdString()).empty();
    } catch (const Error&) {
      ok = false;
    }
    if (ok) {
      model = last;
      config = s.value(QStringLiteral("config")).toString();
    }
  }
  if (model.isEmpty()) {
    for (const auto& m : bundled)
      if (m.name == kDefaultModel) model = QString::fromStdString(m.name);
    if (model.isEmpty() && !bundled.empty()) model = QString::fromStdString(bundled.front().name);
  }
  syncModelCombo();
  if (model.isEmpty()) {
    QStringList dirs;
    for (const auto& d : bundledModelDirs()) dirs << QString::fromStdString(d);
    message_bar_->showMessage(
        MessageBar::Level::Info, tr("No bundled model was found"),
        tr("Looked in: %1.\nOpen a model of your own with File › Open model… (Ctrl+O).")
            .arg(dirs.join(QStringLiteral(", "))));
    QTimer::singleShot(0, this, [this] { emit firstRunFinished(); });
    return;
  }
  pending_ = Pending::FirstRun;
  if (!engine_->loadModel(model, config)) {
    pending_ = Pending::None;
    QTimer::singleShot(0, this, [this] { emit firstRunFinished(); });
  }
}

bool MainWindow::readable(const QString& text, bool source) const {
  const Model* m = engine_->model();
  if (!m || text.trimmed().isEmpty()) return false;
  const Vocabulary& v = source && m->config().hasEncoder() ? m->srcVocab() : m->tgtVocab();
  return v.unknownWords(text.toStdString()).empty();
}

void MainWindow::onModelChanged() {
  const Model* model = engine_->model();
  const QString source = engine_->modelSource();
  // Files opened are kept in the chooser (and across sessions).
  if (model && QFileInfo(source).isFile()) {
    recent_models_.removeAll(source);
    recent_models_.prepend(source);
    while (recent_models_.size() > kMaxRecentModels) recent_models_.removeLast();
    if (options_.use_settings)
      appSettings().setValue(QStringLiteral("recentModels"), recent_models_);
  }
  syncModelCombo();
  syncBackendCombo();
  structure_->setConfig(model ? &model->config() : nullptr);
  examples_menu_->clear();
  updateInputBar();
  updateMaskIndicators();
  // A warning about the input's words spoke of the previous model's vocabulary.
  if (message_bar_->isVisible() && message_bar_->tag() == QStringLiteral("input"))
    message_bar_->clear();
  if (!model) return;
  const auto& c = model->config();
  status_backend_->setText(tr("Backend: %1").arg(engine_->backendDescription()));
  status_backend_->setToolTip(
      cuda_reason_.isEmpty() ? QString() : tr("CUDA unavailable: %1").arg(cuda_reason_));
  status_time_->clear();
  status_lengths_->setText(
      tr("d_model %1 · %2 heads · %3")
          .arg(c.d_model)
          .arg(c.n_heads)
          .arg(c.hasCross()     ? tr("%1+%2 layers").arg(c.n_encoder_layers).arg(c.n_decoder_layers)
               : c.hasEncoder() ? tr("%1 encoder layers").arg(c.n_encoder_layers)
                                : tr("%1 decoder layers").arg(c.n_decoder_layers)));
  // The attention kinds this model has, and only those.
  {
    const QSignalBlocker b(kind_combo_);
    kind_combo_->clear();
    for (AttentionKind k : modelKinds(c)) kind_combo_->addItem(kindTitle(k), int(k));
  }
  {
    const QSignalBlocker b(head_combo_);
    head_combo_->clear();
    head_combo_->addItem(tr("Mean of heads"));
    for (int h = 0; h < c.n_heads; ++h) {
      head_combo_->addItem(tr("Head %1").arg(h + 1));
      // Grouped-query attention: the key/value head it reads, on the list's items.
      if (const QString kv = kvHeadText(c, h); !kv.isEmpty())
        head_combo_->setItemData(h + 1, kv, Qt::ToolTipRole);
    }
  }
  QStringList examples;
  for (const auto& ex : c.examples) {
    const QString src = QString::fromStdString(ex.src);
    const QString tgt = QString::fromStdString(ex.tgt);
    QAction* a = examples_menu_->addAction(
        menuText(tgt.isEmpty() ? src : src + QStringLiteral("  →  ") + tgt));
    a->setToolTip(tgt.isEmpty() ? QString() : tr("Reference translation: %1").arg(tgt));
    connect(a, &QAction::triggered, this, [this, src] {
      src_edit_->setText(src);
      tgt_edit_->clear();
      runCurrentInput();
    });
    examples << src;
  }
  examples_button_->setEnabled(!c.examples.empty());
  if (c.examples.empty())
    examples_menu_->addAction(tr("(this model has no examples)"))->setEnabled(false);
  // The batch: what the user typed stays when this model can read it; otherwise (or when it was
  // only the previous model's examples) this model's examples.
  {
    const QStringList lines = masks_->batchLines();
    bool keep = masks_->batchEdited() && !lines.isEmpty();
    for (const QString& l : lines) keep = keep && readable(l, true);
    if (!keep) masks_->setBatch(examples.mid(0, 4));
  }

  if (pending_ == Pending::Rerun) {
    // Same model on another backend: rerun what is typed.
    if (!src_edit_->text().trimmed().isEmpty()) runCurrentInput();
    return;
  }
  // A new model: start where a student should: the last layer of the last kind it has (the
  // cross-attention of an encoder-decoder).
  AttentionSelection s;
  s.kind = modelKinds(c).back();
  s.layer = layerCount(c, s.kind) - 1;
  s.head = -1;
  state_->setSelection(s);
  // The sentence typed stays when this model can read it (e.g. the same vocabulary); otherwise
  // the model's first example.
  // A decoder-only model's prompt is its target prefix: --tgt gives it too.
  QString src = options_.src.isEmpty() && !c.hasEncoder() ? options_.tgt : options_.src;
  if (src.isEmpty() && !readable(src_edit_->text(), true))
    src = c.examples.empty() ? QString() : QString::fromStdString(c.examples.front().src);
  if (!src.isEmpty() || !readable(src_edit_->text(), true)) src_edit_->setText(src);
  if (!options_.tgt.isEmpty() || !c.hasCross() || !readable(tgt_edit_->text(), false))
    tgt_edit_->setText(c.hasCross() ? options_.tgt : QString());
  options_.src.clear();
  options_.tgt.clear();
  if (!src_edit_->text().trimmed().isEmpty()) runCurrentInput();
}

void MainWindow::updateInputBar() {
  const Model* m = engine_->model();
  const bool enc = !m || m->config().hasEncoder(), dec = !m || m->config().hasDecoder();
  // A word vocabulary reads words between spaces; a tokenizer (characters, subwords) any text.
  const bool words = !m || !m->loaded().tokenizer;
  if (enc && dec) {
    src_label_->setText(tr("Source:"));
    src_edit_->setPlaceholderText(words ? tr("A source sentence, words separated by spaces")
                                        : tr("A source sentence"));
    run_button_->setToolTip(tr("Encode the source and decode greedily to the end (Ctrl+Enter)"));
  } else if (dec) {
    src_label_->setText(tr("Prompt:"));
    src_edit_->setPlaceholderText(words ? tr("The start of a text, words separated by spaces")
                                        : tr("The start of a text to continue"));
    run_button_->setToolTip(tr("Continue the prompt greedily to the end (Ctrl+Enter)"));
  } else {
    src_label_->setText(tr("Input:"));
    src_edit_->setPlaceholderText(words ? tr("An input sentence, words separated by spaces")
                                        : tr("An input text"));
    run_button_->setToolTip(tr("Run the encoder on the input (Ctrl+Enter)"));
  }
  // A target prefix forces the first tokens of a translation; a decoder-only model's prompt is
  // its prefix, and an encoder-only model has nothing to decode.
  tgt_box_->setVisible(enc && dec);
  for (QPushButton* b : {back_button_, forward_button_, reset_button_}) b->setVisible(dec);
  for (int i = 0; i < tabs_->count(); ++i)
    tabs_->setTabText(i, qobject_cast<View*>(tabs_->widget(i))->title());
  for (View* v : views_)
    if (QAction* a = action(QStringLiteral("view-") + v->name())) a->setText(v->title());
}

void MainWindow::updateMaskIndicators() {
  const Model* m = engine_->model();
  const QStringList off = m ? masksOff(engine_->masks(), m->config()) : QStringList();
  QString title = tr("attnviz");
  if (m) {
    const auto& c = m->config();
    title += QStringLiteral(" — ") + (c.name.empty()
                                          ? QFileInfo(engine_->modelSource()).completeBaseName()
                                          : QString::fromStdString(c.name));
  }
  if (!off.isEmpty()) {
    const QString what = off.size() == 1 ? tr("%1 mask off").arg(off.front())
                                         : tr("masks off: %1").arg(off.join(QStringLiteral(", ")));
    title += QStringLiteral(" — ") + what;
    status_masks_->setText(QStringLiteral("⚠ ") + what);
  }
  setWindowTitle(title);
  status_masks_->setVisible(!off.isEmpty());
}

void MainWindow::showUnknownWords(const QString& field, const QStringList& words,
                                  const QString& unk) {
  QStringList quoted;
  for (const QString& w : words) quoted << QStringLiteral("“%1”").arg(w);
  message_bar_->showMessage(
      MessageBar::Level::Warning,
      words.size() == 1 ? tr("An unknown word in the %1").arg(field)
                        : tr("Unknown words in the %1").arg(field),
      (words.size() == 1 ? tr("%1 is not in the model's vocabulary: the model reads it as %2, so "
                              "the output says nothing about that word.")
                         : tr("%1 are not in the model's vocabulary: the model reads each as %2, "
                              "so the output says nothing about those words."))
          .arg(quoted.join(QStringLiteral(", ")), unk),
      QStringLiteral("input"));
}

void MainWindow::onSnapshotChanged() {
  auto snap = engine_->snapshot();
  if (!snap || !snap->trace) {
    updateActions();
    return;
  }
  const Trace& t = *snap->trace;
  const ModelConfig& c = engine_->model()->config();
  status_time_->setText(
      tr("Forward pass: %1 ms").arg(t.elapsed_ms, 0, 'f', t.elapsed_ms < 10 ? 2 : 1));
  QString lengths;
  if (c.hasCross())
    lengths = tr("source %1 · target %2 tokens").arg(t.src_len).arg(t.tgt_len);
  else if (c.hasDecoder())
    lengths = snap->batch ? tr("%1 tokens").arg(t.tgt_len)
                          : tr("%1 tokens (prompt %2)").arg(t.tgt_len).arg(snap->prefix_positions);
  else
    lengths = tr("input %1 tokens").arg(t.src_len);
  if (t.batch > 1) lengths = tr("batch %1 · %2 (padded)").arg(t.batch).arg(lengths);
  status_lengths_->setText(lengths);
  status_backend_->setText(tr("Backend: %1").arg(engine_->backendDescription()));
  if (message_bar_->isVisible() && message_bar_->level() == MessageBar::Level::Error)
    message_bar_->clear();
  {
    const QSignalBlocker b(batch_combo_);
    batch_combo_->clear();
    if (snap->batch)
      for (int i = 0; i < snap->batch_sentences.size(); ++i)
        batch_combo_->addItem(tr("%1: %2").arg(i + 1).arg(snap->batch_sentences[i]));
    batch_combo_->setCurrentIndex(
        std::clamp(state_->selection().batch, 0, std::max(0, batch_combo_->count() - 1)));
  }
  batch_label_->setVisible(snap->batch);
  batch_combo_->setVisible(snap->batch);
  updateMaskIndicators();
  updateActions();
}

void MainWindow::onSelectionChanged() {
  const AttentionSelection& s = state_->selection();
  syncing_ = true;
  kind_combo_->setCurrentIndex(kind_combo_->findData(int(s.kind)));
  const int layers = state_->layerCount(s.kind);
  if (layer_combo_->count() != layers) {
    layer_combo_->clear();
    for (int l = 0; l < layers; ++l) layer_combo_->addItem(tr("%1 of %2").arg(l + 1).arg(layers));
  }
  layer_combo_->setCurrentIndex(s.layer);
  head_combo_->setCurrentIndex(s.head + 1);
  {
    const QString kv = state_->model() ? kvHeadText(state_->model()->config(), s.head) : QString();
    head_combo_->setToolTip(headKeysTip() + (kv.isEmpty() ? QString() : QStringLiteral("\n") + kv));
  }
  if (batch_combo_->count() > s.batch) batch_combo_->setCurrentIndex(s.batch);
  // Follow in the structure panel.
  QModelIndex idx = structure_->find(s.kind, s.layer, s.head);
  if (idx.isValid()) {
    tree_->setCurrentIndex(idx);
    tree_->scrollTo(idx);
  }
  syncing_ = false;
}

void MainWindow::onStructureActivated(const QModelIndex& index) {
  if (!index.isValid() || syncing_) return;
  const QString action = index.data(StructureModel::ActionRole).toString();
  if (action == QStringLiteral("attention")) {
    AttentionSelection s = state_->selection();
    s.kind = static_cast<AttentionKind>(index.data(StructureModel::KindRole).toInt());
    s.layer = index.data(StructureModel::LayerRole).toInt();
    const int head = index.data(StructureModel::HeadRole).toInt();
    if (head != -2) s.head = head;
    state_->setSelection(s);
    if (currentView() == positional_) tabs_->setCurrentWidget(attention_);
  } else if (action.startsWith(QStringLiteral("positional"))) {
    tabs_->setCurrentWidget(positional_);
    positional_->showSide(action.endsWith(QStringLiteral("tgt")));
  } else if (action == QStringLiteral("decoding")) {
    tabs_->setCurrentWidget(decoding_);
  }
}

void MainWindow::onBusyChanged(bool busy, const QString& what) {
  if (busy) {
    // Widgets disabled while a job runs hand their focus on, possibly to a text field: where the
    // focus was comes back afterwards (see below).
    focus_before_busy_ = QApplication::focusWidget();
    progress_->setRange(0, 0);
    status_busy_->setText(what + QStringLiteral("…"));
    busy_timer_.start(250);
    QApplication::setOverrideCursor(Qt::BusyCursor);
  } else {
    busy_timer_.stop();
    progress_->hide();
    cancel_button_->hide();
    status_busy_->hide();
    QApplication::restoreOverrideCursor();
  }
  updateActions();
  if (!busy) {
    QWidget* now = QApplication::focusWidget();
    QWidget* before = focus_before_busy_;
    if (isTextInput(now) && now != before) {
      if (before && before->isEnabled() && before->isVisible())
        before->setFocus(Qt::OtherFocusReason);
      else
        focusView();
    }
  }
}

void MainWindow::syncModelCombo() {
  const QSignalBlocker b(model_combo_);
  model_combo_->clear();
  for (const auto& m : listBundledModels())
    model_combo_->addItem(QString::fromStdString(m.name), QString::fromStdString(m.name));
  const QString cur = engine_->modelSource();
  QStringList files = recent_models_;
  if (!cur.isEmpty() && model_combo_->findData(cur) < 0 && !files.contains(cur)) files << cur;
  bool separated = model_combo_->count() == 0;
  files.removeIf([&](const QString& f) { return f != cur && !QFileInfo(f).isFile(); });
  const QStringList labels = distinctPathLabels(files);
  for (int k = 0; k < files.size(); ++k) {
    const QString& f = files[k];
    if (!separated) {
      model_combo_->insertSeparator(model_combo_->count());
      separated = true;
    }
    model_combo_->addItem(labels[k], f);
    model_combo_->setItemData(model_combo_->count() - 1, f, Qt::ToolTipRole);
  }
  if (model_combo_->count() == 0) model_combo_->addItem(tr("(no model)"), QString());
  const int i = model_combo_->findData(cur);
  model_combo_->setCurrentIndex(i >= 0 ? i : 0);
  // Wide enough for the model shown (a trained model's file name is long), up to a limit.
  model_combo_->setMinimumContentsLength(
      std::clamp(int(model_combo_->currentText().size()), 18, 56));
}

void MainWindow::syncBackendCombo() {
  const QSignalBlocker b(backend_combo_);
  backend_combo_->setCurrentIndex(std::max(0, backend_combo_->findData(engine_->backendName())));
}

void MainWindow::updateActions() {
  const bool busy = engine_->busy();
  const bool model = engine_->hasModel();
  run_button_->setEnabled(!busy && model);
  action(QStringLiteral("run"))->setEnabled(!busy && model);
  const bool fwd = engine_->canStepForward(), back = engine_->canStepBack();
  forward_button_->setEnabled(fwd);
  back_button_->setEnabled(back);
  action(QStringLiteral("stepForward"))->setEnabled(fwd);
  action(QStringLiteral("stepBack"))->setEnabled(back);
  action(QStringLiteral("decodeToEnd"))->setEnabled(fwd);
  auto snap = engine_->snapshot();
  const bool decode =
      snap && !snap->batch && !busy && model && engine_->model()->config().hasDecoder();
  reset_button_->setEnabled(decode);
  action(QStringLiteral("reset"))->setEnabled(decode);
  action(QStringLiteral("exportTrace"))->setEnabled(snap && snap->trace);
  action(QStringLiteral("exportLesson"))->setEnabled(snap && snap->trace && !busy);
  action(QStringLiteral("exportFrames"))->setEnabled(decode && snap->steps.size() > 0);
  action(QStringLiteral("vocabularyFile"))
      ->setEnabled(!busy && model && engine_->model()->loaded().takes_vocabulary);
  model_combo_->setEnabled(!busy);
  backend_combo_->setEnabled(!busy);
  examples_button_->setEnabled(!busy && model && engine_->model()->config().examples.size() > 0);
}

void MainWindow::runCurrentInput() {
  if (!engine_->hasModel()) {
    message_bar_->showMessage(MessageBar::Level::Info, tr("No model"),
                              tr("Open a model first (File › Open model…)."));
    return;
  }
  // The keys go back to the view: the next 1, 2, 3, M, [ or ] is a command, not a letter.
  focusView();
  // A warning about the previous input's words does not outlive it.
  if (message_bar_->isVisible() && message_bar_->tag() == QStringLiteral("input"))
    message_bar_->clear();
  const ModelConfig& c = engine_->model()->config();
  if (c.hasCross() || !c.hasDecoder()) {
    engine_->run(src_edit_->text(), c.hasCross() ? tgt_edit_->text() : QString());
    return;
  }
  // A prompt past the model's positions: offered cut as nanoGPT's sample.py cuts its context,
  // never cut unasked (what cannot be read at all, the engine's run says).
  const Model* m = engine_->model();
  Prompt p;
  try {
    p = encodePrompt(*m, src_edit_->text().toStdString());
  } catch (const Error&) {
  }
  if (p.cropped()) {
    message_bar_->showMessage(
        MessageBar::Level::Warning, tr("The prompt is longer than the model reads"),
        tr("It is %1 tokens long; the model takes %2 positions (its max_len). nanoGPT's "
           "sample.py keeps the last %3 tokens and goes on.")
            .arg(p.tokens)
            .arg(m->maxPositions())
            .arg(p.kept),
        QStringLiteral("input"));
    const QString kept = QString::fromStdString(promptText(*m, p));
    message_bar_->setAction(tr("Keep the last %1 tokens").arg(p.kept), [this, kept] {
      src_edit_->setText(kept);
      runCurrentInput();
    });
    return;
  }
  engine_->run(QString(), src_edit_->text());  // the prompt is the decoder's prefix
}

void MainWindow::focusView() {
  if (View* v = currentView()) v->setFocus(Qt::OtherFocusReason);
}

View* MainWindow::currentView() const {
  return qobject_cast<View*>(tabs_->currentWidget());
}

View* MainWindow::view(const QString& name) const {
  for (View* v : views_)
    if (v->name() == name) return v;
  return nullptr;
}

void MainWindow::setCurrentView(const QString& name) {
  if (View* v = view(name)) tabs_->setCurrentWidget(v);
}

QAction* MainWindow::action(const QString& name) const {
  return findChild<QAction*>(name);
}

void MainWindow::setPresentationMode(bool on) {
  // The large fonts may make the window grow; leaving them gives back the size it had.
  if (on && !presentation_) size_before_presentation_ = size();
  const bool give_back = !on && presentation_ && size_before_presentation_.isValid() &&
                         !isMaximized() && !isFullScreen();
  const bool was = presentation_;
  presentation_ = on;
  QFont f = normal_font_;
  if (on) f.setPointSizeF(normal_font_.pointSizeF() * kPresentationScale);
  setFont(f);
  // The room goes to the views' figures: the structure panel steps aside (the keys still move
  // across layers and heads) and the explanations fold (X brings them back); leaving gives back
  // what was shown.
  tree_->setVisible(!on);
  if (QAction* explain = action(QStringLiteral("explanations"))) {
    if (on && !was) {
      explanations_before_presentation_ = explain->isChecked();
      explain->setChecked(false);
    } else if (!on && was) {
      explain->setChecked(explanations_before_presentation_);
    }
  }
  if (give_back)  // once the layouts have taken the smaller fonts in (they may grow the window)
    QTimer::singleShot(0, this, [this, size = size_before_presentation_] {
      // Nested layouts settle over a few rounds, each of which may grow the window again.
      for (int round = 0; round < 4 && !presentation_; ++round) {
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        resize(size);
      }
    });
  if (QAction* a = action(QStringLiteral("presentation"))) {
    const QSignalBlocker b(a);
    a->setChecked(on);
  }
}

// ---- dialogs and exports ----------------------------------------------------------------------

QString MainWindow::chooseModelFile() {
  QString dir = QFileInfo(engine_->modelSource()).absolutePath();
  if (!QFileInfo(engine_->modelSource()).isFile() && !recent_models_.isEmpty())
    dir = QFileInfo(recent_models_.front()).absolutePath();
  return QFileDialog::getOpenFileName(this, tr("Open a model"), dir,
                                      tr("Models (*.safetensors *.pt *.pth *.bin);;All files (*)"));
}

void MainWindow::openModelDialog(bool with_config) {
  const QString path = chooseModelFile();
  if (path.isEmpty()) return;
  QString config;
  if (with_config) {
    config = QFileDialog::getOpenFileName(this, tr("Its config"), QFileInfo(path).absolutePath(),
                                          tr("JSON (*.json);;All files (*)"));
    if (config.isEmpty()) return;
  }
  engine_->loadModel(path, config);
}

bool MainWindow::openInputText(const QString& path) {
  const QString name = QFileInfo(path).fileName();
  auto refuse = [&](const QString& why) {
    message_bar_->showMessage(MessageBar::Level::Error, tr("The input text was not read"), why);
    return false;
  };
  std::string bytes;
  try {
    bytes = readInputText(path.toStdString(), "the input text");
  } catch (const std::exception& e) {
    return refuse(QString::fromStdString(e.what()));
  }
  // Stateless: a sequence cut short at the end is an error too, not left pending.
  QStringDecoder utf8(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
  const QString text = utf8(QByteArray::fromStdString(bytes));
  if (utf8.hasError())
    return refuse(tr("%1 is not UTF-8 text: save it as UTF-8 and open it again.").arg(name));
  if (text.trimmed().isEmpty()) return refuse(tr("%1 holds no text.").arg(name));
  int characters = 0;  // code points, not UTF-16 units
  for (const QChar ch : text) characters += !ch.isLowSurrogate();
  src_edit_->setText(text);
  src_edit_->setCursorPosition(0);
  src_edit_->setFocus();
  message_bar_->showMessage(
      MessageBar::Level::Info, tr("Input text read"),
      tr("%n character(s) from %1 are in the input field: press Enter or Run to run them.", "",
         characters)
          .arg(name));
  return true;
}

void MainWindow::openFolderDialog() {
  QString dir = QFileInfo(engine_->modelSource()).absolutePath();
  if (!QFileInfo(engine_->modelSource()).exists() && !recent_models_.isEmpty())
    dir = QFileInfo(recent_models_.front()).absolutePath();
  const QString path = QFileDialog::getExistingDirectory(
      this, tr("Open a model folder (config.json with model.safetensors or pytorch_model.bin)"),
      dir);
  if (!path.isEmpty()) engine_->loadModel(path);
}

void MainWindow::showNamesRefused(const QString& path, const QString& message) {
  names_refused_path_ = path;
  names_refused_ = message;
  message_bar_->showMessage(
      MessageBar::Level::Error, tr("Its names follow no architecture attnviz knows"),
      message + QStringLiteral(".\n") +
          tr("Open %1 with a JSON map of its names (the button, or File › Open model with a names "
             "map…), or with a config (File › Open model with a config file…).")
              .arg(QFileInfo(path).fileName()));
  message_bar_->setAction(tr("Open with a names map…"), [this, path] { chooseNamesMap(path); });
  syncModelCombo();
  syncBackendCombo();
}

void MainWindow::chooseNamesMap(const QString& model) {
  const QString map = QFileDialog::getOpenFileName(
      this, tr("The map of %1's tensor names to their roles").arg(QFileInfo(model).fileName()),
      QFileInfo(model).absolutePath(), tr("JSON (*.json);;All files (*)"));
  if (!map.isEmpty()) openWithNamesMap(model, map);
}

bool MainWindow::openWithNamesMap(const QString& model, const QString& map) {
  UserSupplied supplied;
  try {
    // Checked here, where the message can name the map's file; the load checks it against the
    // model's tensors.
    const std::string file = map.toStdString();
    supplied.names_map = readJsonFile(file);
    customArchitecture(supplied.names_map, file);
  } catch (const Error& e) {
    QString text = QString::fromStdString(e.what());
    if (model == names_refused_path_)
      text += QStringLiteral("\n\n") + tr("Why the model needs one: ") + names_refused_;
    message_bar_->showMessage(MessageBar::Level::Error, tr("The names map was refused"), text);
    message_bar_->setAction(tr("Open with a names map…"), [this, model] { chooseNamesMap(model); });
    return false;
  }
  return engine_->loadModel(model, {}, supplied);
}

bool MainWindow::openWithVocabulary(const QString& file) {
  const Model* m = engine_->model();
  const QString model = engine_->modelSource();
  if (!m || !QFileInfo::exists(model) || !m->loaded().takes_vocabulary) {
    message_bar_->showMessage(
        MessageBar::Level::Info, tr("This model names its own vocabulary"),
        tr("%1's config names its vocabulary; a vocabulary file is for a checkpoint opened "
           "without one (nanoGPT, llama2.c, minGPT, …) or a Hugging Face GPT-2, BERT or Llama "
           "folder.")
            .arg(m ? QFileInfo(model).fileName() : tr("No model")));
    return false;
  }
  UserSupplied supplied;
  try {
    supplyVocabulary(supplied, file.toStdString());
  } catch (const Error& e) {
    message_bar_->showMessage(MessageBar::Level::Error, tr("The vocabulary was refused"),
                              QString::fromStdString(e.what()));
    return false;
  }
  return engine_->loadModel(model, engine_->configPath(), supplied);
}

void MainWindow::askForAnswers(const QString& path, const QString& config_path,
                               const Inference& inference, const UserSupplied& supplied) {
  auto* d = new AnswersDialog(path, inference, supplied, this);
  d->setAttribute(Qt::WA_DeleteOnClose);
  connect(d, &QDialog::accepted, this, [this, d, path, config_path] {
    engine_->loadModel(path, config_path, d->answers(), d->remember());
  });
  connect(d, &QDialog::rejected, this, [this, path] {
    message_bar_->showMessage(MessageBar::Level::Info, tr("Not opened"),
                              tr("%1 needs the answers to open.").arg(QFileInfo(path).fileName()));
    syncModelCombo();
  });
  d->open();
}

bool MainWindow::exportView(const QString& path, const FigureOptions& options, QString* error) {
  View* v = currentView();
  v->refreshNow();
  return writeFigure(v, path, options, error);
}

bool MainWindow::exportViewPng(const QString& path, QString* error) {
  FigureOptions o;
  o.format = FigureOptions::Format::Png;
  return exportView(path, o, error);
}

bool MainWindow::exportViewSvg(const QString& path, QString* error) {
  FigureOptions o;
  o.format = FigureOptions::Format::Svg;
  return exportView(path, o, error);
}

int MainWindow::exportDecodingFrames(const QString& dir, const FigureOptions& options,
                                     bool animated, QString* error) {
  auto snap = engine_->snapshot();
  if (!snap || snap->batch || snap->steps.empty() || !engine_->model()->config().hasDecoder()) {
    if (error) *error = tr("Nothing to animate: decode a sentence first (Run).");
    return 0;
  }
  if (!QDir().mkpath(dir)) {
    if (error) *error = tr("Could not create %1").arg(dir);
    return 0;
  }
  QWidget* was = tabs_->currentWidget();
  tabs_->setCurrentWidget(decoding_);  // laid out at its size on screen
  decoding_->refreshNow();
  const int was_step = decoding_->currentStep();
  FigureOptions o = options;
  o.format = FigureOptions::Format::Png;
  std::vector<QImage> frames;
  QString err;
  for (int i = 0; i < int(snap->steps.size()); ++i) {
    decoding_->setFrameStep(i);
    const QImage img = renderFigure(decoding_, o);
    const QString file =
        QDir(dir).filePath(QStringLiteral("decoding-%1.png").arg(i + 1, 3, 10, QChar('0')));
    if (img.isNull() || !img.save(file, "PNG")) {
      err = tr("Could not write %1").arg(file);
      break;
    }
    if (animated) frames.push_back(img);
  }
  decoding_->setFrameStep(-1);
  decoding_->selectStep(was_step);
  tabs_->setCurrentWidget(was);
  if (err.isEmpty() && animated &&
      !writeApng(QDir(dir).filePath(QStringLiteral("decoding-animated.png")), frames, 900, 2500,
                 &err))
    err = tr("Could not write the animation: %1").arg(err);
  if (!err.isEmpty()) {
    if (error) *error = err;
    return 0;
  }
  return int(snap->steps.size());
}

bool MainWindow::exportInBackground(std::function<void()> write, bool wait, QString* error,
                                    const QString& done_title, const QString& done_text) {
  auto future = QtConcurrent::run([write = std::move(write)]() -> QString {
    try {
      write();
      return {};
    } catch (const std::exception& e) {
      return QString::fromStdString(e.what());
    }
  });
  if (wait) {
    const QString err = future.result();
    if (!err.isEmpty()) {
      if (error) *error = err;
      return false;
    }
    return true;
  }
  auto* watcher = new QFutureWatcher<QString>(this);
  connect(watcher, &QFutureWatcher<QString>::finished, this,
          [this, watcher, done_title, done_text] {
            const QString err = watcher->result();
            if (err.isEmpty())
              message_bar_->showMessage(MessageBar::Level::Info, done_title, done_text);
            else
              message_bar_->showMessage(MessageBar::Level::Error, tr("Export failed"), err);
            watcher->deleteLater();
          });
  watcher->setFuture(future);
  return true;
}

bool MainWindow::exportTrace(const QString& dir, bool wait, QString* error) {
  auto snap = engine_->snapshot();
  if (!snap || !snap->trace) {
    if (error) *error = tr("Nothing to export yet: press Run first.");
    return false;
  }
  auto trace = snap->trace;
  // The model that made the trace computes the logits rows a long run did not keep.
  auto model = engine_->sharedModel();
  const std::string d = dir.toStdString();
  return exportInBackground([trace, model, d] { dumpTrace(*trace, d, model.get()); }, wait, error,
                            tr("Trace exported"),
                            tr("NumPy files written to %1").arg(QDir::toNativeSeparators(dir)));
}

LessonStart MainWindow::lessonStart() const {
  LessonStart start;
  const View* view = currentView();
  const QString name = view ? view->name() : QString();
  for (const char* shown : {"attention", "overview", "masks", "decoding"})
    if (name == QLatin1String(shown)) start.view = shown;
  const AttentionSelection s = state_->selection();
  start.kind = s.kind;
  start.layer = s.layer;
  start.head = s.head;
  return start;
}

LessonText MainWindow::lessonText() const {
  LessonText text;
  const QString model = QFileInfo(engine_->modelSource()).fileName();
  text.model_name = model.toStdString();
  text.source_text = src_edit_->text().toStdString();
  text.target_text = tgt_edit_->text().toStdString();
  // The input box holds what was typed: the source, or a decoder-only model's prompt.
  text.title = lessonTitle(engine_->modelSource().toStdString(), text.source_text);
  text.masks = engine_->masks();
  if (auto snap = engine_->snapshot()) {
    text.masks = snap->masks;
    text.prefix_length = snap->prefix_positions;
  }
  if (const Model* m = engine_->model())
    text.output_vocab = &m->vocab(m->config().hasDecoder() ? Side::Target : Side::Source);
  return text;
}

bool MainWindow::exportLesson(const QString& path, const LessonScope& scope, bool wait,
                              QString* error) {
  auto snap = engine_->snapshot();
  const Model* model = engine_->model();
  if (!snap || !snap->trace || !model) {
    if (error) *error = tr("Nothing to export yet: press Run first.");
    return false;
  }
  // The export holds its own trace, config and vocabulary: another model may open meanwhile.
  auto trace = snap->trace;
  const ModelConfig config = model->config();
  const LessonStart start = lessonStart();
  const LessonText text = lessonText();
  auto vocab = std::make_shared<const Vocabulary>(*text.output_vocab);
  const std::string p = path.toStdString();
  return exportInBackground(
      [trace, config, start, text, vocab, scope, p] {
        LessonText t = text;
        t.output_vocab = vocab.get();
        writeLessonHtml(p, *trace, config, scope, start, t);
      },
      wait, error, tr("Lesson exported"),
      tr("%1: open it in any web browser, offline; share the one file")
          .arg(QDir::toNativeSeparators(path)));
}

namespace {

// Size, scale, title and legend of a figure; false when cancelled.
bool askFigureOptions(QWidget* parent, FigureOptions* o, QSize screen, const QString& heading) {
  QDialog d(parent);
  d.setWindowTitle(heading);
  auto* form = new QFormLayout(&d);
  auto* width = new QSpinBox(&d);
  auto* height = new QSpinBox(&d);
  for (QSpinBox* s : {width, height}) {
    s->setRange(100, 8000);
    s->setSuffix(QObject::tr(" px"));
  }
  const QSize start = o->size.isValid() ? o->size : screen;
  width->setValue(start.width());
  height->setValue(start.height());
  auto* size_row = new QHBoxLayout;
  size_row->addWidget(width);
  size_row->addWidget(new QLabel(QStringLiteral("×"), &d));
  size_row->addWidget(height);
  form->addRow(QObject::tr("At most:"), size_row);
  auto* scale = new QComboBox(&d);
  for (int k : {1, 2, 3}) scale->addItem(QStringLiteral("%1×").arg(k), k);
  scale->setCurrentIndex(std::clamp(int(o->scale) - 1, 0, 2));
  scale->setEnabled(o->format == FigureOptions::Format::Png);
  scale->setToolTip(QObject::tr("Pixels per point of the PNG: 2× or 3× stays sharp on slides"));
  form->addRow(QObject::tr("Scale:"), scale);
  auto* title = new QCheckBox(QObject::tr("Title (what is shown, on which sentence)"), &d);
  title->setChecked(o->title);
  auto* legend = new QCheckBox(QObject::tr("Colour legend"), &d);
  legend->setChecked(o->legend);
  form->addRow(title);
  form->addRow(legend);
  auto* note =
      new QLabel(QObject::tr("The figure shrinks to what it draws: no empty margins."), &d);
  note->setForegroundRole(QPalette::PlaceholderText);
  form->addRow(note);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &d);
  QObject::connect(buttons, &QDialogButtonBox::accepted, &d, &QDialog::accept);
  QObject::connect(buttons, &QDialogButtonBox::rejected, &d, &QDialog::reject);
  form->addRow(buttons);
  if (d.exec() != QDialog::Accepted) return false;
  o->size = QSize(width->value(), height->value());
  o->scale = scale->currentData().toInt();
  o->title = title->isChecked();
  o->legend = legend->isChecked();
  return true;
}

}  // namespace

QString MainWindow::exportDir() const {
  if (!export_dir_.isEmpty() && QFileInfo(export_dir_).isDir()) return export_dir_;
  const QString pictures = QStandardPaths::writableLocation(QStandardPaths::PicturesLocation);
  return QFileInfo(pictures).isDir() ? pictures : QDir::homePath();
}

void MainWindow::rememberExportDir(const QString& path) {
  export_dir_ = QFileInfo(path).isDir() ? path : QFileInfo(path).absolutePath();
  if (options_.use_settings) appSettings().setValue(QStringLiteral("exportDir"), export_dir_);
}

void MainWindow::rememberFigureOptions(const FigureOptions& o) {
  figure_defaults_.title = o.title;
  figure_defaults_.legend = o.legend;
  figure_defaults_.scale = o.scale;
  if (!options_.use_settings) return;
  QSettings s = appSettings();
  s.setValue(QStringLiteral("figureTitle"), o.title);
  s.setValue(QStringLiteral("figureLegend"), o.legend);
  s.setValue(QStringLiteral("figureScale"), o.scale);
}

void MainWindow::exportViewDialog(FigureOptions::Format format) {
  View* v = currentView();
  FigureOptions o = figure_defaults_;  // the title, legend and scale chosen last time
  o.format = format;
  const QString suffix = figureSuffix(format);
  if (!askFigureOptions(this, &o, v->exportWidget()->size() + QSize(24, 60),
                        tr("Export view as %1").arg(suffix.toUpper())))
    return;
  rememberFigureOptions(o);
  const QString suggested =
      QDir(exportDir()).filePath(QStringLiteral("attnviz-%1.%2").arg(v->name(), suffix));
  const QString path =
      QFileDialog::getSaveFileName(this, tr("Export view as %1").arg(suffix.toUpper()), suggested,
                                   tr("%1 files (*.%2)").arg(suffix.toUpper(), suffix));
  if (path.isEmpty()) return;
  rememberExportDir(path);
  QString error;
  if (exportView(path, o, &error))
    message_bar_->showMessage(MessageBar::Level::Info, tr("View exported"),
                              QDir::toNativeSeparators(path));
  else
    message_bar_->showMessage(MessageBar::Level::Error, tr("Export failed"), error);
}

void MainWindow::exportFramesDialog() {
  FigureOptions o = figure_defaults_;
  o.format = FigureOptions::Format::Png;
  if (!askFigureOptions(this, &o, decoding_->exportWidget()->size() + QSize(24, 60),
                        tr("Export the decoding as frames")))
    return;
  rememberFigureOptions(o);
  const QString dir = QFileDialog::getExistingDirectory(
      this, tr("Write the frames (decoding-001.png …) and the animation into"), exportDir());
  if (dir.isEmpty()) return;
  rememberExportDir(dir);
  QString error;
  const int n = exportDecodingFrames(dir, o, true, &error);
  if (n > 0)
    message_bar_->showMessage(
        MessageBar::Level::Info, tr("Decoding exported"),
        tr("%1 frames and decoding-animated.png (an animated PNG: open it in a web browser) in %2")
            .arg(n)
            .arg(QDir::toNativeSeparators(dir)));
  else
    message_bar_->showMessage(MessageBar::Level::Error, tr("Export failed"), error);
}

void MainWindow::exportTraceDialog() {
  const QString dir = QFileDialog::getExistingDirectory(
      this, tr("Export the trace as NumPy files into"), exportDir());
  if (dir.isEmpty()) return;
  rememberExportDir(dir);
  QString error;
  if (!exportTrace(dir, false, &error))
    message_bar_->showMessage(MessageBar::Level::Error, tr("Export failed"), error);
}

void MainWindow::exportLessonDialog() {
  auto snap = engine_->snapshot();
  const Model* model = engine_->model();
  if (!snap || !snap->trace || !model) return;
  const LessonStart start = lessonStart();
  const LessonText text = lessonText();
  LessonDialog dialog(*snap->trace, model->config(), start, text, this);
  if (dialog.exec() != QDialog::Accepted) return;
  const QString base = QFileInfo(engine_->modelSource()).completeBaseName();
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export lesson as HTML"),
      QDir(exportDir()).filePath(tr("%1-lesson.html").arg(base.isEmpty() ? tr("attnviz") : base)),
      tr("Web pages (*.html)"));
  if (path.isEmpty()) return;
  rememberExportDir(QFileInfo(path).absolutePath());
  QString error;
  if (!exportLesson(path, dialog.scope(), false, &error))
    message_bar_->showMessage(MessageBar::Level::Error, tr("Export failed"), error);
}

// ---- settings ---------------------------------------------------------------------------------

void MainWindow::loadSettings() {
  if (!options_.use_settings) {
    if (!options_.backend.isEmpty()) engine_->setBackend(options_.backend);
    return;
  }
  QSettings s = appSettings();
  if (s.contains(QStringLiteral("geometry"))) {
    restoreGeometry(s.value(QStringLiteral("geometry")).toByteArray());
    fitOnScreen();
    QTimer::singleShot(0, this, [this] { fitOnScreen(); });  // again with the frame, once shown
  }
  if (s.contains(QStringLiteral("windowState")))
    restoreState(s.value(QStringLiteral("windowState")).toByteArray());
  if (s.contains(QStringLiteral("splitter")))
    splitter_->restoreState(s.value(QStringLiteral("splitter")).toByteArray());
  threads_spin_->setValue(s.value(QStringLiteral("threads"), 0).toInt());
  const QString cmap = s.value(QStringLiteral("colormap"), QStringLiteral("viridis")).toString();
  const int ci = colormap_combo_->findData(cmap);
  if (ci >= 0) colormap_combo_->setCurrentIndex(ci);
  const bool explain = s.value(QStringLiteral("explanations"), true).toBool();
  action(QStringLiteral("explanations"))->setChecked(explain);
  if (!explain)
    for (View* v : views_) v->explanation()->setExpanded(false);
  const QString view = s.value(QStringLiteral("view")).toString();
  if (!view.isEmpty()) setCurrentView(view);
  recent_models_ = s.value(QStringLiteral("recentModels")).toStringList();
  export_dir_ = s.value(QStringLiteral("exportDir")).toString();
  figure_defaults_.title = s.value(QStringLiteral("figureTitle"), true).toBool();
  figure_defaults_.legend = s.value(QStringLiteral("figureLegend"), true).toBool();
  figure_defaults_.scale = std::clamp(s.value(QStringLiteral("figureScale"), 1).toInt(), 1, 3);
  if (s.value(QStringLiteral("presentation"), false).toBool()) setPresentationMode(true);
  QString backend = options_.backend.isEmpty()
                        ? s.value(QStringLiteral("backend"), QStringLiteral("cpu")).toString()
                        : options_.backend;
  if (backend == QStringLiteral("cuda") && !cuda_reason_.isEmpty() && options_.backend.isEmpty())
    backend = QStringLiteral("cpu");
  engine_->setBackend(backend);
}

void MainWindow::fitOnScreen() {
  // Qt's restoreGeometry brings back only a window that lies wholly off the screens: one saved
  // taller than this screen, or reaching below it, is made to fit (down to its minimum size).
  const QScreen* sc = screen();
  if (!sc || isMaximized() || isFullScreen()) return;
  const QRect avail = sc->availableGeometry();
  const QRect g = geometry(), f = frameGeometry();  // the frame is known once the window is shown
  const QMargins frame(g.left() - f.left(), g.top() - f.top(), f.right() - g.right(),
                       f.bottom() - g.bottom());
  const QSize room = avail.marginsRemoved(frame).size();
  resize(g.size().boundedTo(room));  // the layout keeps it at its minimum size at least
  const QRect inner = avail.marginsRemoved(frame);
  const int x = std::max(inner.left(), std::min(g.left(), inner.right() + 1 - width()));
  const int y = std::max(inner.top(), std::min(g.top(), inner.bottom() + 1 - height()));
  move(QPoint(x, y) - QPoint(frame.left(), frame.top()));
}

void MainWindow::saveSettings() {
  if (!options_.use_settings) return;
  QSettings s = appSettings();
  s.setValue(QStringLiteral("geometry"), saveGeometry());
  s.setValue(QStringLiteral("windowState"), saveState());
  s.setValue(QStringLiteral("splitter"), splitter_->saveState());
  s.setValue(QStringLiteral("colormap"), state_->colormap().name());
  s.setValue(QStringLiteral("threads"), threads_spin_->value());
  // Presentation mode folds the explanations for a while: what the user chose is kept.
  s.setValue(QStringLiteral("explanations"),
             presentation_ ? explanations_before_presentation_
                           : action(QStringLiteral("explanations"))->isChecked());
  if (View* v = currentView()) s.setValue(QStringLiteral("view"), v->name());
  s.setValue(QStringLiteral("backend"), engine_->backendName());
  s.setValue(QStringLiteral("recentModels"), recent_models_);
  s.setValue(QStringLiteral("presentation"), presentation_);
  if (engine_->hasModel()) {
    s.setValue(QStringLiteral("model"), engine_->modelSource());
    s.setValue(QStringLiteral("config"), engine_->configPath());
  }
}

void MainWindow::closeEvent(QCloseEvent* event) {
  saveSettings();
  engine_->cancel();
  QMainWindow::closeEvent(event);
}

}  // namespace attnviz::gui

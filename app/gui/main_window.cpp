#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
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
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QSvgGenerator>
#include <QTabWidget>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "attention_view.h"
#include "backends.h"
#include "bundled.h"
#include "decoding_view.h"
#include "error.h"
#include "item_models.h"
#include "masks_view.h"
#include "npy.h"
#include "overview_view.h"
#include "positional_view.h"
#include "train_view.h"
#include "widgets.h"

namespace attnviz::gui {

namespace {

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

}  // namespace

MainWindow::MainWindow(const Options& options, QWidget* parent)
    : QMainWindow(parent), options_(options) {
  setWindowTitle(tr("attnviz"));
  engine_ = new Engine(this);
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
  attention_ = new AttentionView(state_);
  overview_ = new OverviewView(state_);
  masks_ = new MasksView(state_);
  positional_ = new PositionalView(state_);
  decoding_ = new DecodingView(state_);
  for (View* v :
       std::initializer_list<View*>{attention_, overview_, masks_, positional_, decoding_})
    tabs_->addTab(v, v->title());
  auto* train = new TrainView(state_);  // View 6: train a model, watch its attention form
  tabs_->addTab(train, train->title());
  connect(train, &TrainView::modelOpened, this, [this] { tabs_->setCurrentWidget(attention_); });
  rl->addWidget(tabs_, 1);
  splitter_->addWidget(right);
  splitter_->setStretchFactor(0, 0);
  splitter_->setStretchFactor(1, 1);
  splitter_->setSizes({230, 1100});
  cl->addWidget(splitter_, 1);
  setCentralWidget(central);

  buildStatusBar();
  buildMenus();
  if (QAction* a = action(QStringLiteral("colormap-viridis"))) a->setChecked(true);

  connect(overview_, &OverviewView::openRequested, this,
          [this] { tabs_->setCurrentWidget(attention_); });
  connect(engine_, &Engine::modelChanged, this, &MainWindow::onModelChanged);
  connect(engine_, &Engine::snapshotChanged, this, &MainWindow::onSnapshotChanged);
  connect(engine_, &Engine::busyChanged, this, &MainWindow::onBusyChanged);
  connect(engine_, &Engine::progress, this, [this](int done, int total, const QString& what) {
    progress_->setRange(0, std::max(total, 1));
    progress_->setValue(std::min(done, total));
    status_busy_->setText(what + QStringLiteral("…"));
  });
  connect(engine_, &Engine::failed, this, [this](const QString& title, const QString& message) {
    message_bar_->showMessage(MessageBar::Level::Error, title, message);
    syncModelCombo();
    syncBackendCombo();
  });
  connect(engine_, &Engine::notice, this, [this](const QString& message) {
    message_bar_->showMessage(MessageBar::Level::Warning, tr("Please note"), message);
  });
  connect(engine_, &Engine::jobFinished, this, [this](bool) {
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
  syncBackendCombo();
  updateActions();
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
  model_combo_->setToolTip(tr("The bundled models; File › Open model… loads your own"));
  top->addWidget(model_combo_);
  auto* open = new QPushButton(tr("Open…"), bar);
  open->setToolTip(tr("Open a .safetensors model (Ctrl+O)"));
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
  examples_button_ = new QPushButton(tr("Examples"), bar);
  examples_menu_ = new QMenu(tr("&Examples"), this);
  examples_button_->setMenu(examples_menu_);
  examples_button_->setToolTip(tr("Example sentences from the model's config"));
  top->addWidget(examples_button_);
  top->addStretch(1);
  g->addLayout(top, 0, 1, 1, 3);

  g->addWidget(new QLabel(tr("Source:"), bar), 1, 0);
  src_edit_ = new QLineEdit(bar);
  src_edit_->setPlaceholderText(tr("A source sentence, words separated by spaces"));
  src_edit_->setClearButtonEnabled(true);
  g->addWidget(src_edit_, 1, 1);
  auto* tl = new QHBoxLayout;
  tl->addWidget(new QLabel(tr("Target prefix:"), bar));
  tgt_edit_ = new QLineEdit(bar);
  tgt_edit_->setPlaceholderText(tr("optional: forces the first target tokens"));
  tgt_edit_->setClearButtonEnabled(true);
  tgt_edit_->setMinimumWidth(120);
  tl->addWidget(tgt_edit_, 1);
  g->addLayout(tl, 1, 2);
  auto* bl = new QHBoxLayout;
  run_button_ = new QPushButton(tr("Run"), bar);
  run_button_->setDefault(true);
  run_button_->setToolTip(tr("Encode the source and decode greedily to the end (Ctrl+Enter)"));
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
  kind_combo_->addItem(tr("Encoder self-attention"), int(AttentionKind::EncoderSelf));
  kind_combo_->addItem(tr("Decoder masked self-attention"), int(AttentionKind::DecoderSelf));
  kind_combo_->addItem(tr("Cross-attention"), int(AttentionKind::Cross));
  kind_combo_->setToolTip(tr("Keys 1, 2, 3"));
  kind_combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  kind_combo_->setMinimumContentsLength(16);
  l->addWidget(kind_combo_);
  l->addWidget(new QLabel(tr("Layer:"), bar));
  layer_combo_ = new QComboBox(bar);
  layer_combo_->setToolTip(tr("PgUp / PgDn"));
  l->addWidget(layer_combo_);
  l->addWidget(new QLabel(tr("Head:"), bar));
  head_combo_ = new QComboBox(bar);
  head_combo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);  // "Mean of heads" unclipped
  head_combo_->setToolTip(tr("[ and ] move across heads, M toggles the mean of the heads"));
  l->addWidget(head_combo_);
  batch_label_ = new QLabel(tr("Sentence:"), bar);
  batch_combo_ = new QComboBox(bar);
  batch_combo_->setToolTip(tr("Which sentence of the batch the views show"));
  l->addWidget(batch_label_);
  l->addWidget(batch_combo_);
  batch_combo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  batch_combo_->setMinimumContentsLength(16);
  batch_label_->hide();
  batch_combo_->hide();
  l->addSpacing(12);
  l->addWidget(new QLabel(tr("Colormap:"), bar));
  colormap_combo_ = new QComboBox(bar);
  for (const QString& n : Colormap::names()) colormap_combo_->addItem(n, n);
  l->addWidget(colormap_combo_);
  auto* hint = new QLabel(tr("PgUp/PgDn layer · [ ] head · M mean · ← → step"), bar);
  hint->setForegroundRole(QPalette::PlaceholderText);
  hint->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  hint->setAlignment(Qt::AlignLeft | Qt::AlignVCenter);
  l->addWidget(hint, 1);

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
  status_busy_ = new QLabel(this);
  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(180);
  progress_->setTextVisible(true);
  cancel_button_ = new QPushButton(tr("Cancel"), this);
  cancel_button_->setToolTip(tr("Stop the running computation (Esc)"));
  connect(cancel_button_, &QPushButton::clicked, engine_, &Engine::cancel);
  statusBar()->addWidget(status_backend_);
  statusBar()->addWidget(status_time_);
  statusBar()->addWidget(status_lengths_);
  statusBar()->addPermanentWidget(status_busy_);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_button_);
  progress_->hide();
  cancel_button_->hide();
  status_busy_->hide();
  status_backend_->setText(tr("No model"));
}

QAction* MainWindow::addShortcutAction(const QString& name, const QString& text,
                                       const QList<QKeySequence>& keys, std::function<void()> fn) {
  auto* a = new QAction(text, this);
  a->setObjectName(name);
  a->setShortcuts(keys);
  a->setShortcutContext(Qt::WindowShortcut);
  connect(a, &QAction::triggered, this, [fn] { fn(); });
  addAction(a);
  return a;
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(addShortcutAction(QStringLiteral("openModel"), tr("&Open model…"),
                                    {QKeySequence::Open}, [this] { openModelDialog(false); }));
  file->addAction(addShortcutAction(QStringLiteral("openModelConfig"),
                                    tr("Open model with a &config file…"), {},
                                    [this] { openModelDialog(true); }));
  file->addSeparator();
  file->addAction(addShortcutAction(QStringLiteral("exportPng"), tr("Export view as &PNG…"),
                                    {QKeySequence(tr("Ctrl+E"))},
                                    [this] { exportViewDialog(false); }));
  file->addAction(addShortcutAction(QStringLiteral("exportSvg"), tr("Export view as &SVG…"),
                                    {QKeySequence(tr("Ctrl+Shift+E"))},
                                    [this] { exportViewDialog(true); }));
  file->addAction(addShortcutAction(QStringLiteral("exportTrace"), tr("Export trace as &NumPy…"),
                                    {QKeySequence(tr("Ctrl+Shift+N"))},
                                    [this] { exportTraceDialog(); }));
  file->addSeparator();
  file->addAction(addShortcutAction(QStringLiteral("quit"), tr("&Quit"), {QKeySequence::Quit},
                                    [this] { close(); }));

  QMenu* decode = menuBar()->addMenu(tr("&Decode"));
  decode->addAction(addShortcutAction(
      QStringLiteral("run"), tr("&Run"),
      {QKeySequence(tr("Ctrl+Return")), QKeySequence(tr("Ctrl+Enter")), QKeySequence(tr("F5"))},
      [this] { runCurrentInput(); }));
  decode->addAction(addShortcutAction(QStringLiteral("stepForward"), tr("Step &forward"),
                                      {QKeySequence(Qt::Key_Right), QKeySequence(tr("Alt+Right"))},
                                      [this] { engine_->stepForward(); }));
  decode->addAction(addShortcutAction(QStringLiteral("stepBack"), tr("Step &back"),
                                      {QKeySequence(Qt::Key_Left), QKeySequence(tr("Alt+Left"))},
                                      [this] { engine_->stepBack(); }));
  decode->addAction(addShortcutAction(QStringLiteral("decodeToEnd"), tr("Decode to the &end"),
                                      {QKeySequence(Qt::Key_End)},
                                      [this] { engine_->decodeToEnd(); }));
  decode->addAction(addShortcutAction(QStringLiteral("reset"), tr("Re&set to the prefix"),
                                      {QKeySequence(Qt::Key_Home)}, [this] { engine_->reset(); }));
  decode->addSeparator();
  decode->addAction(addShortcutAction(QStringLiteral("cancel"), tr("&Cancel"),
                                      {QKeySequence(Qt::Key_Escape)},
                                      [this] { engine_->cancel(); }));

  QMenu* view = menuBar()->addMenu(tr("&View"));
  const QStringList names{QStringLiteral("attention"), QStringLiteral("overview"),
                          QStringLiteral("masks"), QStringLiteral("positional"),
                          QStringLiteral("decoding")};
  for (int i = 0; i < names.size(); ++i) {
    auto* v = qobject_cast<View*>(tabs_->widget(i));
    view->addAction(addShortcutAction(QStringLiteral("view-") + names[i], v->title(),
                                      {QKeySequence(tr("Ctrl+%1").arg(i + 1))},
                                      [this, i] { tabs_->setCurrentIndex(i); }));
  }
  view->addSeparator();
  view->addAction(addShortcutAction(QStringLiteral("kindEncoder"), tr("Encoder self-attention"),
                                    {QKeySequence(Qt::Key_1)},
                                    [this] { state_->setKind(AttentionKind::EncoderSelf); }));
  view->addAction(addShortcutAction(QStringLiteral("kindDecoder"), tr("Decoder self-attention"),
                                    {QKeySequence(Qt::Key_2)},
                                    [this] { state_->setKind(AttentionKind::DecoderSelf); }));
  view->addAction(addShortcutAction(QStringLiteral("kindCross"), tr("Cross-attention"),
                                    {QKeySequence(Qt::Key_3)},
                                    [this] { state_->setKind(AttentionKind::Cross); }));
  view->addAction(addShortcutAction(QStringLiteral("previousLayer"), tr("Previous layer"),
                                    {QKeySequence(Qt::Key_PageUp)},
                                    [this] { state_->moveLayer(-1); }));
  view->addAction(addShortcutAction(QStringLiteral("nextLayer"), tr("Next layer"),
                                    {QKeySequence(Qt::Key_PageDown)},
                                    [this] { state_->moveLayer(1); }));
  view->addAction(addShortcutAction(QStringLiteral("previousHead"), tr("Previous head"),
                                    {QKeySequence(Qt::Key_BracketLeft)},
                                    [this] { state_->moveHead(-1); }));
  view->addAction(addShortcutAction(QStringLiteral("nextHead"), tr("Next head"),
                                    {QKeySequence(Qt::Key_BracketRight)},
                                    [this] { state_->moveHead(1); }));
  view->addAction(addShortcutAction(QStringLiteral("meanOfHeads"), tr("Mean of the heads"),
                                    {QKeySequence(Qt::Key_M)}, [this] { state_->toggleMean(); }));
  view->addSeparator();
  QMenu* cmaps = view->addMenu(tr("&Colormap"));
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
  view->addAction(addShortcutAction(QStringLiteral("zoomIn"), tr("Zoom in"),
                                    {QKeySequence::ZoomIn, QKeySequence(tr("Ctrl+="))},
                                    [this] { attention_->heatmapView()->zoomIn(); }));
  view->addAction(addShortcutAction(QStringLiteral("zoomOut"), tr("Zoom out"),
                                    {QKeySequence::ZoomOut},
                                    [this] { attention_->heatmapView()->zoomOut(); }));
  view->addAction(addShortcutAction(QStringLiteral("zoomFit"), tr("Fit to window"),
                                    {QKeySequence(tr("Ctrl+0"))},
                                    [this] { attention_->heatmapView()->zoomFit(); }));
  QAction* explain = addShortcutAction(QStringLiteral("explanations"), tr("Show e&xplanations"),
                                       {QKeySequence(Qt::Key_F1)}, [] {});
  explain->setCheckable(true);
  explain->setChecked(true);
  connect(explain, &QAction::toggled, this, [this](bool on) {
    for (int i = 0; i < tabs_->count(); ++i)
      qobject_cast<View*>(tabs_->widget(i))->explanation()->setExpanded(on);
  });
  for (int i = 0; i < tabs_->count(); ++i)
    connect(qobject_cast<View*>(tabs_->widget(i))->explanation(),
            &ExplanationPanel::expandedChanged, explain, [explain](bool on) {
              const QSignalBlocker b(explain);
              explain->setChecked(on);
            });
  view->addAction(explain);

  menuBar()->addMenu(examples_menu_);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Keyboard shortcuts"), this, &MainWindow::showKeys);
  help->addAction(tr("&About attnviz"), this, [this] {
    QMessageBox::about(this, tr("About attnviz"),
                       tr("<b>attnviz</b> — see inside encoder-decoder Transformers.<br>"
                          "Every layer's and head's attention: scores, masks and probabilities, "
                          "computed by attnviz's own core."));
  });
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

void MainWindow::onModelChanged() {
  const Model* model = engine_->model();
  syncModelCombo();
  syncBackendCombo();
  structure_->setConfig(model ? &model->config() : nullptr);
  examples_menu_->clear();
  if (!model) return;
  const auto& c = model->config();
  const QString name = c.name.empty() ? QFileInfo(engine_->modelSource()).completeBaseName()
                                      : QString::fromStdString(c.name);
  setWindowTitle(tr("attnviz — %1").arg(name));
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

  // Layer and head combos.
  {
    const QSignalBlocker b(head_combo_);
    head_combo_->clear();
    head_combo_->addItem(tr("Mean of heads"));
    for (int h = 0; h < c.n_heads; ++h) head_combo_->addItem(tr("Head %1").arg(h + 1));
  }
  QStringList batch_suggestion;
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
    batch_suggestion << src;
  }
  examples_button_->setEnabled(!c.examples.empty());
  if (c.examples.empty())
    examples_menu_->addAction(tr("(this model has no examples)"))->setEnabled(false);
  masks_->suggestBatch(batch_suggestion.mid(0, 4));

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
  QString src = options_.src;
  if (src.isEmpty() && !c.examples.empty()) src = QString::fromStdString(c.examples.front().src);
  if (!src.isEmpty()) src_edit_->setText(src);
  if (!options_.tgt.isEmpty() || pending_ != Pending::FirstRun) tgt_edit_->setText(options_.tgt);
  options_.src.clear();
  options_.tgt.clear();
  if (!src_edit_->text().trimmed().isEmpty()) runCurrentInput();
}

void MainWindow::onSnapshotChanged() {
  auto snap = engine_->snapshot();
  if (!snap || !snap->trace) {
    updateActions();
    return;
  }
  const Trace& t = *snap->trace;
  status_time_->setText(
      tr("Forward pass: %1 ms").arg(t.elapsed_ms, 0, 'f', t.elapsed_ms < 10 ? 2 : 1));
  status_lengths_->setText(t.batch > 1
                               ? tr("batch %1 · source %2 · target %3 tokens (padded)")
                                     .arg(t.batch)
                                     .arg(t.src_len)
                                     .arg(t.tgt_len)
                               : tr("source %1 · target %2 tokens").arg(t.src_len).arg(t.tgt_len));
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
}

void MainWindow::syncModelCombo() {
  const QSignalBlocker b(model_combo_);
  model_combo_->clear();
  for (const auto& m : listBundledModels())
    model_combo_->addItem(QString::fromStdString(m.name), QString::fromStdString(m.name));
  const QString cur = engine_->modelSource();
  if (!cur.isEmpty() && model_combo_->findData(cur) < 0)
    model_combo_->addItem(QFileInfo(cur).fileName(), cur);
  if (model_combo_->count() == 0) model_combo_->addItem(tr("(no model)"), QString());
  const int i = model_combo_->findData(cur);
  model_combo_->setCurrentIndex(i >= 0 ? i : 0);
  if (i >= 0) model_combo_->setItemData(i, cur, Qt::ToolTipRole);
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
  const bool decode = snap && !snap->batch && !busy;
  reset_button_->setEnabled(decode);
  action(QStringLiteral("reset"))->setEnabled(decode);
  action(QStringLiteral("cancel"))->setEnabled(busy);
  action(QStringLiteral("exportTrace"))->setEnabled(snap && snap->trace);
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
  engine_->run(src_edit_->text(), tgt_edit_->text());
}

View* MainWindow::currentView() const {
  return qobject_cast<View*>(tabs_->currentWidget());
}

void MainWindow::setCurrentView(const QString& name) {
  for (int i = 0; i < tabs_->count(); ++i)
    if (qobject_cast<View*>(tabs_->widget(i))->name() == name) tabs_->setCurrentIndex(i);
}

QAction* MainWindow::action(const QString& name) const {
  return findChild<QAction*>(name);
}

// ---- dialogs and exports ----------------------------------------------------------------------

void MainWindow::openModelDialog(bool with_config) {
  const QString dir = QFileInfo(engine_->modelSource()).absolutePath();
  const QString path = QFileDialog::getOpenFileName(this, tr("Open a model"), dir,
                                                    tr("Models (*.safetensors);;All files (*)"));
  if (path.isEmpty()) return;
  QString config;
  if (with_config) {
    config = QFileDialog::getOpenFileName(this, tr("Its config"), QFileInfo(path).absolutePath(),
                                          tr("JSON (*.json);;All files (*)"));
    if (config.isEmpty()) return;
  }
  engine_->loadModel(path, config);
}

bool MainWindow::exportViewPng(const QString& path, QString* error) {
  QWidget* w = currentView()->exportWidget();
  const QPixmap pm = w->grab();
  if (pm.isNull() || !pm.save(path, "PNG")) {
    if (error) *error = tr("Could not write %1").arg(path);
    return false;
  }
  return true;
}

bool MainWindow::exportViewSvg(const QString& path, QString* error) {
  QWidget* w = currentView()->exportWidget();
  QSvgGenerator gen;
  gen.setFileName(path);
  gen.setSize(w->size());
  gen.setViewBox(QRect(QPoint(0, 0), w->size()));
  gen.setTitle(tr("attnviz — %1").arg(currentView()->title()));
  gen.setDescription(tr("Exported by attnviz"));
  QPainter p;
  if (!p.begin(&gen)) {
    if (error) *error = tr("Could not write %1").arg(path);
    return false;
  }
  w->render(&p, QPoint(), QRegion(), QWidget::DrawChildren | QWidget::DrawWindowBackground);
  p.end();
  if (!QFileInfo::exists(path)) {
    if (error) *error = tr("Could not write %1").arg(path);
    return false;
  }
  return true;
}

bool MainWindow::exportTrace(const QString& dir, bool wait, QString* error) {
  auto snap = engine_->snapshot();
  if (!snap || !snap->trace) {
    if (error) *error = tr("Nothing to export yet: press Run first.");
    return false;
  }
  auto trace = snap->trace;
  const std::string d = dir.toStdString();
  auto future = QtConcurrent::run([trace, d]() -> QString {
    try {
      dumpTrace(*trace, d);
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
  connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, dir] {
    const QString err = watcher->result();
    if (err.isEmpty())
      message_bar_->showMessage(MessageBar::Level::Info, tr("Trace exported"),
                                tr("NumPy files written to %1").arg(QDir::toNativeSeparators(dir)));
    else
      message_bar_->showMessage(MessageBar::Level::Error, tr("Export failed"), err);
    watcher->deleteLater();
  });
  watcher->setFuture(future);
  return true;
}

void MainWindow::exportViewDialog(bool svg) {
  const QString suffix = svg ? QStringLiteral("svg") : QStringLiteral("png");
  const QString suggested =
      QDir::home().filePath(QStringLiteral("attnviz-%1.%2").arg(currentView()->name(), suffix));
  const QString path = QFileDialog::getSaveFileName(
      this, svg ? tr("Export view as SVG") : tr("Export view as PNG"), suggested,
      svg ? tr("SVG images (*.svg)") : tr("PNG images (*.png)"));
  if (path.isEmpty()) return;
  QString error;
  const bool ok = svg ? exportViewSvg(path, &error) : exportViewPng(path, &error);
  if (ok)
    message_bar_->showMessage(MessageBar::Level::Info, tr("View exported"),
                              QDir::toNativeSeparators(path));
  else
    message_bar_->showMessage(MessageBar::Level::Error, tr("Export failed"), error);
}

void MainWindow::exportTraceDialog() {
  const QString dir = QFileDialog::getExistingDirectory(
      this, tr("Export the trace as NumPy files into"), QDir::homePath());
  if (dir.isEmpty()) return;
  QString error;
  if (!exportTrace(dir, false, &error))
    message_bar_->showMessage(MessageBar::Level::Error, tr("Export failed"), error);
}

void MainWindow::showKeys() {
  QMessageBox box(this);
  box.setWindowTitle(tr("Keyboard shortcuts"));
  box.setTextFormat(Qt::RichText);
  box.setText(
      tr("<table cellspacing=4>"
         "<tr><td><b>Ctrl+Enter</b>, F5</td><td>Run: encode and decode greedily</td></tr>"
         "<tr><td><b>→</b> / <b>←</b></td><td>Step the decoder forward / back</td></tr>"
         "<tr><td><b>Home</b> / <b>End</b></td><td>Back to the prefix / decode to the end</td></tr>"
         "<tr><td><b>PgUp</b> / <b>PgDn</b></td><td>Previous / next layer</td></tr>"
         "<tr><td><b>[</b> / <b>]</b></td><td>Previous / next head</td></tr>"
         "<tr><td><b>M</b></td><td>Mean of the heads on / off</td></tr>"
         "<tr><td><b>1</b> / <b>2</b> / <b>3</b></td><td>Encoder self- / decoder self- / "
         "cross-attention</td></tr>"
         "<tr><td><b>Ctrl+1 … Ctrl+5</b></td><td>Attention, Overview, Masks, Positional, "
         "Decoding</td></tr>"
         "<tr><td><b>Ctrl++</b> / <b>Ctrl+−</b> / <b>Ctrl+0</b></td><td>Zoom the heatmap in / out "
         "/ fit (also Ctrl+wheel)</td></tr>"
         "<tr><td><b>F1</b></td><td>Show or hide the explanations</td></tr>"
         "<tr><td><b>Esc</b></td><td>Cancel a long computation</td></tr>"
         "<tr><td><b>Ctrl+O</b>, <b>Ctrl+E</b>, <b>Ctrl+Shift+E</b>, <b>Ctrl+Shift+N</b></td>"
         "<td>Open a model, export PNG, SVG, NumPy</td></tr>"
         "</table><p>Keys act when the focus is not in a text field.</p>"));
  box.exec();
}

// ---- settings ---------------------------------------------------------------------------------

void MainWindow::loadSettings() {
  if (!options_.use_settings) {
    if (!options_.backend.isEmpty()) engine_->setBackend(options_.backend);
    return;
  }
  QSettings s = appSettings();
  if (s.contains(QStringLiteral("geometry")))
    restoreGeometry(s.value(QStringLiteral("geometry")).toByteArray());
  if (s.contains(QStringLiteral("windowState")))
    restoreState(s.value(QStringLiteral("windowState")).toByteArray());
  if (s.contains(QStringLiteral("splitter")))
    splitter_->restoreState(s.value(QStringLiteral("splitter")).toByteArray());
  const QString cmap = s.value(QStringLiteral("colormap"), QStringLiteral("viridis")).toString();
  const int ci = colormap_combo_->findData(cmap);
  if (ci >= 0) colormap_combo_->setCurrentIndex(ci);
  const bool explain = s.value(QStringLiteral("explanations"), true).toBool();
  action(QStringLiteral("explanations"))->setChecked(explain);
  if (!explain)
    for (int i = 0; i < tabs_->count(); ++i)
      qobject_cast<View*>(tabs_->widget(i))->explanation()->setExpanded(false);
  const int tab = s.value(QStringLiteral("view"), 0).toInt();
  if (tab >= 0 && tab < tabs_->count()) tabs_->setCurrentIndex(tab);
  QString backend = options_.backend.isEmpty()
                        ? s.value(QStringLiteral("backend"), QStringLiteral("cpu")).toString()
                        : options_.backend;
  if (backend == QStringLiteral("cuda") && !cuda_reason_.isEmpty() && options_.backend.isEmpty())
    backend = QStringLiteral("cpu");
  engine_->setBackend(backend);
}

void MainWindow::saveSettings() {
  if (!options_.use_settings) return;
  QSettings s = appSettings();
  s.setValue(QStringLiteral("geometry"), saveGeometry());
  s.setValue(QStringLiteral("windowState"), saveState());
  s.setValue(QStringLiteral("splitter"), splitter_->saveState());
  s.setValue(QStringLiteral("colormap"), state_->colormap().name());
  s.setValue(QStringLiteral("explanations"), action(QStringLiteral("explanations"))->isChecked());
  s.setValue(QStringLiteral("view"), tabs_->currentIndex());
  s.setValue(QStringLiteral("backend"), engine_->backendName());
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

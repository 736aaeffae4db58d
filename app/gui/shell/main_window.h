// The attnviz main window: model, backend and input controls, the structure panel, the views (one
// tab each, from view_registry.cpp), the message bar and the status bar; keyboard shortcuts,
// exports and persistent settings.
#pragma once

#include <QKeySequence>
#include <QMainWindow>
#include <QPointer>
#include <QTimer>
#include <functional>
#include <vector>

#include "figures/figure.h"
#include "model/lesson_html.h"
#include "session/app_state.h"
#include "session/engine.h"

class QAction;
class QComboBox;
class QLabel;
class QSpinBox;
class QLineEdit;
class QMenu;
class QProgressBar;
class QPushButton;
class QSplitter;
class QTabWidget;
class QTreeView;

namespace attnviz::gui {

class AttentionView;
class DecodingView;
class MasksView;
class MessageBar;
class OverviewView;
class PositionalView;
class StructureModel;
class View;

// The Model box's names of model files: each path's shortest trailing part that no other path of
// the list shares ("ckpt.pt", or "run-a/out/ckpt.pt" beside "run-b/out/ckpt.pt").
QStringList distinctPathLabels(const QStringList& paths);

// What the command line can ask of the window.
struct MainWindowOptions {
  QString model;    // bundled name or .safetensors path; empty: the last one used, or "reorder"
  QString config;   // config JSON for `model`, when it is not inside or beside the file
  QString src;      // source sentence for the first run; empty: the model's first example
  QString tgt;      // target prefix for the first run
  QString backend;  // "cpu" or "cuda"; empty: the last one used
  QString view;     // the view shown first, by name (attention, overview, masks, …)
  bool use_settings = true;   // read and write QSettings
  bool presentation = false;  // start in presentation mode (large fonts)
};

// One entry of the window's action table: the table drives the menus, the shortcuts and the
// keyboard help.
struct ActionSpec {
  QString name;              // object name: action("run")
  QString menu;              // the menu it is listed in; empty: a window shortcut only
  QString text;              // menu text (with & for the mnemonic)
  QList<QKeySequence> keys;  // the first one is the one the help lists first
  std::function<void()> fn;
  bool checkable = false;
  bool separator = false;  // a separator before it in its menu
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  using Options = MainWindowOptions;

  explicit MainWindow(const Options& options = {}, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens the first model and decodes its first example; firstRunFinished() follows.
  void start();
  // File › Open input text…: a UTF-8 text file (at most 16 MiB; one final line break dropped)
  // into the input field, for inputs longer than one types. False, with the reason in the message
  // bar, for a file that cannot be read, is no UTF-8 text or is empty; the field is kept then.
  bool openInputText(const QString& path);

  Engine* engine() const { return engine_; }
  AppState* state() const { return state_; }
  QLineEdit* sourceEdit() const { return src_edit_; }
  QLineEdit* prefixEdit() const { return tgt_edit_; }
  QPushButton* runButton() const { return run_button_; }
  MessageBar* messageBar() const { return message_bar_; }
  QTabWidget* tabs() const { return tabs_; }
  QTreeView* structureView() const { return tree_; }
  StructureModel* structureModel() const { return structure_; }
  QComboBox* modelCombo() const { return model_combo_; }
  QComboBox* backendCombo() const { return backend_combo_; }
  QComboBox* kindCombo() const { return kind_combo_; }
  QComboBox* layerCombo() const { return layer_combo_; }
  QComboBox* headCombo() const { return head_combo_; }
  QComboBox* batchCombo() const { return batch_combo_; }
  QComboBox* colormapCombo() const { return colormap_combo_; }
  QLabel* statusBackend() const { return status_backend_; }
  QSpinBox* threadsSpin() const { return threads_spin_; }
  QLabel* statusTime() const { return status_time_; }
  QLabel* statusLengths() const { return status_lengths_; }
  QMenu* examplesMenu() const { return examples_menu_; }
  QPushButton* examplesButton() const { return examples_button_; }
  QLabel* sourceLabel() const { return src_label_; }
  QWidget* prefixBox() const { return tgt_box_; }
  QPushButton* stepForwardButton() const { return forward_button_; }
  QPushButton* stepBackButton() const { return back_button_; }
  QPushButton* resetButton() const { return reset_button_; }
  QLabel* statusMasks() const { return status_masks_; }
  // The views in tab order, as view_registry.cpp lists them.
  const std::vector<View*>& views() const { return views_; }
  View* view(const QString& name) const;
  // The view of class V (nullptr when the registry has none).
  template <class V>
  V* viewOf() const {
    for (View* v : views_)
      if (auto* found = qobject_cast<V*>(v)) return found;
    return nullptr;
  }
  AttentionView* attentionView() const { return attention_; }
  OverviewView* overviewView() const { return overview_; }
  MasksView* masksView() const { return masks_; }
  PositionalView* positionalView() const { return positional_; }
  DecodingView* decodingView() const { return decoding_; }
  View* currentView() const;
  void setCurrentView(const QString& name);
  // Actions by object name: "run", "stepForward", "stepBack", "reset", "decodeToEnd", "cancel",
  // "nextLayer", "previousLayer", "nextHead", "previousHead", "meanOfHeads", …
  QAction* action(const QString& name) const;

  // The current view as a figure (PNG, SVG or PDF by options.format).
  bool exportView(const QString& path, const FigureOptions& options, QString* error = nullptr);
  bool exportViewPng(const QString& path, QString* error = nullptr);
  // Opens `model` with the map of its tensor names to their roles in the JSON file `map`
  // (docs/formats.md "Your own names"; File › Open model with a names map…). A map that cannot be
  // read or is wrong is shown in the message bar, naming the file and what is wrong (with the
  // model's refusal when it was refused before), and false returned; else the load starts.
  bool openWithNamesMap(const QString& model, const QString& map);
  // Opens the current model again with the vocabulary (and its tokenizer) in `file` — nanoGPT's
  // meta.pkl, a SentencePiece .model, tokenizer.json, GPT-2's encoder.json or vocab.json, a plain
  // list (File › Use a vocabulary file…). A file that cannot be read, or a model whose config
  // names its own vocabulary, is said in the message bar and false returned; else the load starts.
  bool openWithVocabulary(const QString& file);
  bool exportViewSvg(const QString& path, QString* error = nullptr);
  // The decode as frames, one per step: DIR/decoding-001.png … and, with animated,
  // DIR/decoding-animated.png (an APNG). Returns the number of frames written, 0 on failure.
  int exportDecodingFrames(const QString& dir, const FigureOptions& options, bool animated,
                           QString* error = nullptr);
  // What the export dialogs start from: title, legend and scale as last chosen (and saved).
  const FigureOptions& figureDefaults() const { return figure_defaults_; }
  // Large fonts for a projector.
  void setPresentationMode(bool on);
  bool presentationMode() const { return presentation_; }
  // Models opened from files this session and before (newest first); the chooser lists them.
  QStringList recentModels() const { return recent_models_; }
  // The keyboard help, as generated from the action table (rows of key and action).
  QString keysHelpHtml() const;
  // View › Language: saves `code` ("zh_CN") for the next start and says so.
  void setLanguage(const QString& code);
  // Writes the NumPy dump off the GUI thread; with wait, returns when it is written.
  bool exportTrace(const QString& dir, bool wait = false, QString* error = nullptr);
  // The lesson page (model/lesson_html.h) of the current run in `scope`, opening on the current
  // view and selection; written off the GUI thread as exportTrace.
  bool exportLesson(const QString& path, const attnviz::LessonScope& scope, bool wait = false,
                    QString* error = nullptr);
  // What the lesson page opens on (the current view and selection) and says of the run.
  attnviz::LessonStart lessonStart() const;
  attnviz::LessonText lessonText() const;

 signals:
  void firstRunFinished();

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  enum class Pending { None, FirstRun, Rerun };
  void buildMenus();
  QWidget* buildInputBar();
  QWidget* buildSelectionBar();
  void buildStatusBar();
  void addActions(const std::vector<ActionSpec>& table);
  std::vector<ActionSpec> actionTable();
  void onModelChanged();
  void onSnapshotChanged();
  void onSelectionChanged();
  void onBusyChanged(bool busy, const QString& what);
  void onStructureActivated(const QModelIndex& index);
  void syncModelCombo();
  void syncBackendCombo();
  void updateActions();
  void runCurrentInput();
  void openModelDialog(bool with_config);
  void openFolderDialog();
  QString chooseModelFile();  // a file dialog in the folder of the model open or opened last
  // The refusal of a model whose names follow no architecture, with "Open with a names map…".
  void showNamesRefused(const QString& path, const QString& message);
  void chooseNamesMap(const QString& model);  // a file dialog for the map, then openWithNamesMap
  // A model file without a config whose tensors leave questions open: AnswersDialog, then load.
  void askForAnswers(const QString& path, const QString& config_path,
                     const attnviz::Inference& inference, const attnviz::UserSupplied& supplied);
  void exportViewDialog(FigureOptions::Format format);
  void rememberFigureOptions(const FigureOptions& o);
  void exportFramesDialog();
  void exportTraceDialog();
  void exportLessonDialog();
  // Runs `write` off the GUI thread; its error (an exception's message) goes to `error` with wait,
  // else to the message bar, as does `done` when it succeeds.
  bool exportInBackground(std::function<void()> write, bool wait, QString* error,
                          const QString& done_title, const QString& done_text);
  QString exportDir() const;
  void rememberExportDir(const QString& path);
  void focusView();  // the current view takes the keyboard (out of any text field)
  void updateInputBar();
  void updateMaskIndicators();
  void showUnknownWords(const QString& field, const QStringList& words, const QString& unk);
  bool readable(const QString& text, bool source) const;
  void showKeys();
  void loadSettings();
  void fitOnScreen();  // a restored window larger than the screen, or below it, is brought back
  void saveSettings();

  Options options_;
  std::vector<View*> views_;
  std::vector<ActionSpec> actions_;
  QStringList recent_models_;
  QString names_refused_path_, names_refused_;  // the last model refused for its names, and why
  QString export_dir_;
  FigureOptions figure_defaults_;
  bool presentation_ = false;
  QFont normal_font_;
  QSize size_before_presentation_;                // given back when presentation mode ends
  bool explanations_before_presentation_ = true;  // likewise the explanations shown or not
  QPointer<QWidget> focus_before_busy_;
  Engine* engine_;
  AppState* state_;
  StructureModel* structure_;
  Pending pending_ = Pending::None;
  bool syncing_ = false;

  QComboBox* model_combo_;
  QComboBox* backend_combo_;
  QLabel* src_label_;
  QLineEdit* src_edit_;
  QWidget* tgt_box_;
  QLineEdit* tgt_edit_;
  QPushButton* run_button_;
  QPushButton* back_button_;
  QPushButton* forward_button_;
  QPushButton* reset_button_;
  QPushButton* examples_button_;
  QMenu* examples_menu_;
  MessageBar* message_bar_;
  QComboBox* kind_combo_;
  QComboBox* layer_combo_;
  QComboBox* head_combo_;
  QLabel* batch_label_;
  QLabel* hint_;
  QComboBox* batch_combo_;
  QComboBox* colormap_combo_;
  QSplitter* splitter_;
  QTreeView* tree_;
  QTabWidget* tabs_;
  AttentionView* attention_;
  OverviewView* overview_;
  MasksView* masks_;
  PositionalView* positional_;
  DecodingView* decoding_;
  QLabel* status_backend_;
  QSpinBox* threads_spin_ = nullptr;  // the CPU backend's threads (0 = every core)
  QLabel* status_time_;
  QLabel* status_lengths_;
  QLabel* status_busy_;
  QLabel* status_masks_;
  QProgressBar* progress_;
  QPushButton* cancel_button_;
  QTimer busy_timer_;
  QString cuda_reason_;
};

}  // namespace attnviz::gui

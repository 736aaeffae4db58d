// The attnviz main window: model, backend and input controls, the structure panel, the five views,
// the message bar and the status bar; keyboard shortcuts, exports and persistent settings.
#pragma once

#include <QMainWindow>
#include <QPointer>
#include <QTimer>

#include "app_state.h"
#include "engine.h"

class QAction;
class QComboBox;
class QLabel;
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

// What the command line can ask of the window.
struct MainWindowOptions {
  QString model;    // bundled name or .safetensors path; empty: the last one used, or "reorder"
  QString config;   // config JSON for `model`, when it is not inside or beside the file
  QString src;      // source sentence for the first run; empty: the model's first example
  QString tgt;      // target prefix for the first run
  QString backend;  // "cpu" or "cuda"; empty: the last one used
  QString view;     // the view shown first: attention, overview, masks, positional, decoding
  bool use_settings = true;  // read and write QSettings
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  using Options = MainWindowOptions;

  explicit MainWindow(const Options& options = {}, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens the first model and decodes its first example; firstRunFinished() follows.
  void start();

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
  QLabel* statusTime() const { return status_time_; }
  QLabel* statusLengths() const { return status_lengths_; }
  QMenu* examplesMenu() const { return examples_menu_; }
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

  bool exportViewPng(const QString& path, QString* error = nullptr);
  bool exportViewSvg(const QString& path, QString* error = nullptr);
  // Writes the NumPy dump off the GUI thread; with wait, returns when it is written.
  bool exportTrace(const QString& dir, bool wait = false, QString* error = nullptr);

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
  QAction* addShortcutAction(const QString& name, const QString& text,
                             const QList<QKeySequence>& keys, std::function<void()> fn);
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
  void exportViewDialog(bool svg);
  void exportTraceDialog();
  void showKeys();
  void loadSettings();
  void saveSettings();

  Options options_;
  Engine* engine_;
  AppState* state_;
  StructureModel* structure_;
  Pending pending_ = Pending::None;
  bool syncing_ = false;

  QComboBox* model_combo_;
  QComboBox* backend_combo_;
  QLineEdit* src_edit_;
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
  QLabel* status_time_;
  QLabel* status_lengths_;
  QLabel* status_busy_;
  QProgressBar* progress_;
  QPushButton* cancel_button_;
  QTimer busy_timer_;
  QString cuda_reason_;
};

}  // namespace attnviz::gui

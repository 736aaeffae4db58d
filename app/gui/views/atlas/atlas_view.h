// The Atlas view: every head of every attention block over a whole corpus (model/atlas.h). The
// corpus — a text file, the model's examples, a bundled model's held-out set or a training task's
// held-out pairs — runs through the model off the GUI thread with progress and Cancel; then every
// head is a point in a scatter of two of its statistics (means over the corpus, ± one standard
// deviation as error bars) beside a sortable table of them, with the heads most like the selected
// one, the corpus sentences where its pattern is strongest and weakest (double-click: that
// sentence becomes the input of every view), and a 2-D PCA of its queries and keys.
#pragma once

#include <QAbstractTableModel>
#include <QColor>
#include <QSortFilterProxyModel>
#include <QWidget>
#include <atomic>
#include <cmath>
#include <memory>
#include <vector>

#include "model/atlas.h"
#include "model/circuits.h"
#include "train/history.h"
#include "views/atlas/atlas_table.h"
#include "views/view.h"
#include "widgets/scatter_plot.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSlider;
class QSpinBox;
class QTabWidget;
class QTableView;
class QTimer;

namespace attnviz::gui {

// The atlas as the view shows it: the corpus, the atlas of the current model, and its scores.
struct AtlasResult {
  std::shared_ptr<const Corpus> corpus;
  std::shared_ptr<const Atlas> atlas;
  std::shared_ptr<const AtlasScores> scores;
  bool chunk = false;  // lines longer than the context were cut into chunks (CorpusRun::chunk)
  int positions = 0;   // the model's context (Model::maxPositions)
};

class AtlasView : public View {
  Q_OBJECT
 public:
  explicit AtlasView(AppState* state, QWidget* parent = nullptr);
  QWidget* exportWidget() override;
  QStringList figureTitle() const override;
  QSize figureBodySize(QSize available, bool legend) override;
  void paintFigureBody(QPainter& painter, QSize body, bool legend) override;

  // Where the corpus comes from (the combo's items).
  enum class Source { Examples, HeldOut, TrainingTask, File };
  // Chooses the corpus: a file (File: `path`), or a training task by its name.
  void setCorpusFile(const QString& path);
  bool setSource(Source source, const QString& task = {});
  // Starts the run (false when the engine is busy or no model is loaded).
  bool runAtlas();
  bool running() const { return running_; }
  void cancel();
  const AtlasResult& result() const { return result_; }
  QString statusText() const;  // the line under the buttons: what ran, what was skipped, errors
  // The measures on the scatter's axes (indices into atlasMeasures()).
  void setAxes(int x_measure, int y_measure);
  // The evidence's statistic (an index into kHeadStats).
  void setEvidenceStat(int stat);
  bool exportCsv(const QString& path, QString* error = nullptr) const;
  // The selected head's queries and keys, projected (a job of the engine).
  bool projectSelected();
  const HeadEmbedding* embedding() const { return embedding_.get(); }

  ScatterPlot* scatter() const { return scatter_; }
  ScatterPlot* embeddingPlot() const { return embedding_plot_; }
  QTableView* table() const { return table_; }
  AtlasTableModel* tableModel() const { return model_; }
  AtlasProxy* proxy() const { return proxy_; }
  QListWidget* likeList() const { return like_; }
  QListWidget* topList() const { return top_; }
  QListWidget* bottomList() const { return bottom_; }
  QString evidenceNote() const;  // why the lists are empty ("" when they are not)
  QTabWidget* panels() const { return panels_; }
  // Left: 0 the heads over the corpus (the scatter), 1 over training (the history's chart); File ›
  // Export view draws the one shown.
  QTabWidget* plots() const { return left_; }

  // The training history: a folder of checkpoints (train/history.h), read off the GUI thread;
  // the slider's step loads that checkpoint as the model of every view.
  bool openHistory(const QString& dir);
  const TrainingHistory* history() const { return history_.get(); }
  void setHistoryStep(int index);  // an index into history()->points
  int historyStep() const;
  // 0 induction, 1 copying, 2 + k: kHeadStats[k], 2 + kHeadStatCount: the held-out loss at each
  // position (a line per position instead of per head).
  void setHistoryMeasure(int measure);
  ScatterPlot* historyChart() const { return history_chart_; }
  QString historyText() const;  // the line above the chart
  bool exportHistoryCsv(const QString& path, QString* error = nullptr) const;
  bool exportHistoryApng(const QString& path, QString* error = nullptr) const;
  QProgressBar* progressBar() const { return progress_; }
  QPushButton* runButton() const { return run_; }
  QPushButton* cancelButton() const { return cancel_; }
  // "Cut long lines": lines longer than the model's context run in chunks (CorpusRun::chunk).
  QCheckBox* chunkBox() const { return chunk_; }

 protected:
  void refresh() override;

 private:
  void fillSources();
  void updateScatter();
  void showSelection();  // the selected head in the scatter, the table, the lists
  void fillEvidence();
  void fillLike();
  void useSentence(int sentence);
  void explain();
  int selectedHead() const;  // index into the atlas's heads of AppState's head (-1: none)
  void selectHead(int index);

  ScatterPlot* figurePlot() const;  // the plot shown on the left
  QTabWidget* left_;
  QComboBox* source_;
  QPushButton* open_file_;
  QSpinBox* batch_;
  QCheckBox* chunk_;
  QPushButton* run_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* status_;
  QComboBox* x_axis_;
  QComboBox* y_axis_;
  QPushButton* export_csv_;
  ScatterPlot* scatter_;
  QTableView* table_;
  AtlasTableModel* model_;
  AtlasProxy* proxy_;
  QListWidget* like_;
  QTabWidget* panels_;
  QComboBox* evidence_stat_;
  QListWidget* top_;
  QListWidget* bottom_;
  QLabel* evidence_note_;
  QPushButton* project_;
  QLabel* embedding_status_;
  ScatterPlot* embedding_plot_;

  void updateHistoryChart();
  void showHistoryStep();
  void loadHistoryStep();
  QPushButton* open_history_;
  QSlider* step_slider_;
  QLabel* history_label_;
  QComboBox* history_measure_;
  ScatterPlot* history_chart_;
  QPushButton* export_history_;
  QPushButton* export_apng_;
  QTimer* load_timer_;
  QString history_dir_;
  std::shared_ptr<const TrainingHistory> history_;
  bool reading_history_ = false;

  QString file_;
  AtlasResult result_;
  std::shared_ptr<const HeadEmbedding> embedding_;
  QString status_text_;
  const Model* atlas_model_ = nullptr;  // the model the atlas was built on
  bool running_ = false;
  bool syncing_ = false;
};

}  // namespace attnviz::gui

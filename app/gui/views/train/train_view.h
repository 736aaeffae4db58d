// The Train view: train a Transformer on a task in front of the student — choose the task and the
// model size, start, pause, resume or stop — with live loss and accuracy curves and every head's
// attention on a fixed probe sentence recorded as training goes, scrubbed with a timeline. The
// training runs on the view's TrainWorker (train_worker.h), off the GUI thread; the trained model
// is saved as safetensors with its config and opens in every other view with one click.
#pragma once

#include <QTimer>
#include <memory>
#include <vector>

#include "session/train_worker.h"
#include "train/trainer.h"
#include "views/view.h"
#include "widgets/heatmap.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QSlider;
class QSpinBox;

namespace attnviz::gui {

// Loss (log scale) and accuracy against steps, painted; a marker at the timeline's step.
class TrainingCurves : public QWidget {
  Q_OBJECT
 public:
  explicit TrainingCurves(QWidget* parent = nullptr);
  void clear(int planned_steps);
  void addStep(const Trainer::StepStats& s);
  void addEvaluation(const Trainer::Evaluation& e);
  void setMarker(int step);  // -1: none
  // The x axis runs from 0 to this many steps (the run's plan; a stopped run's last step).
  void setPlannedSteps(int steps);
  int plannedSteps() const { return planned_; }
  // The steps the x axis labels (0, then round numbers up to the planned steps), and where each
  // label is drawn under the loss panel, then under the accuracy panel: inside the widget.
  std::vector<int> xTicks() const;
  std::vector<QRect> xTickLabelRects() const;
  int points() const { return int(steps_.size()); }
  // The legend: each curve's swatch and name, in rows under its panel's step labels (never over
  // the curves).
  struct LegendEntry {
    QRect rect;  // swatch and name
    QString name;
    QColor color;
    double pen = 2.5;
  };
  std::vector<LegendEntry> legend() const { return boxes().legend; }
  // The two panels (empty when the widget is too small).
  QRect lossPanel() const { return boxes().loss; }
  QRect accuracyPanel() const { return boxes().accuracy; }
  QSize sizeHint() const override { return {520, 260}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  // The two panels: loss on the left, accuracy on the right (empty when the widget is too small).
  struct Boxes {
    QRect loss, accuracy;
    int left = 0, top = 0;  // the y labels' width, the titles' height
    std::vector<LegendEntry> legend;
  };
  Boxes boxes() const;
  int planned_ = 1, marker_ = -1;
  std::vector<int> steps_;
  std::vector<double> loss_, smooth_, tokens_, sequences_, smooth_tokens_, smooth_sequences_;
  std::vector<std::pair<int, double>> exact_;
};

// Every attention block of a trace (rows: encoder self-attention layer 1, …, then per decoder
// layer its self- and cross-attention) × every head, as thumbnails; click one to focus it.
class HeadGrid : public QWidget {
  Q_OBJECT
 public:
  explicit HeadGrid(QWidget* parent = nullptr);
  void setTrace(std::shared_ptr<const Trace> trace, const Colormap& cmap);
  void setCurrent(int block, int head);
  int blocks() const { return int(labels_.size()); }
  int heads() const { return heads_; }
  QRect thumbRect(int block, int head) const;
  QSize sizeHint() const override;

 signals:
  void thumbnailClicked(int block, int head);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  struct Geometry {
    int left = 0, top = 0, cell = 0, gap = 0;
  };
  Geometry geometry() const;
  std::vector<QString> labels_;
  std::vector<QImage> thumbs_;  // [block · heads + head]
  int heads_ = 0, cur_block_ = -1, cur_head_ = -1;
};

class TrainView : public View {
  Q_OBJECT
 public:
  explicit TrainView(AppState* state, QWidget* parent = nullptr);
  ~TrainView() override;  // aborts a running training (nothing saved) and waits for it

  // The controls (tests drive them).
  QComboBox* taskCombo() const { return task_combo_; }
  QComboBox* sizeCombo() const { return size_combo_; }
  QSpinBox* stepsSpin() const { return steps_spin_; }
  QSpinBox* seedSpin() const { return seed_spin_; }
  QSpinBox* keepSpin() const { return keep_spin_; }
  QPushButton* startButton() const { return start_button_; }
  QPushButton* pauseButton() const { return pause_button_; }
  QPushButton* stopButton() const { return stop_button_; }
  QPushButton* openButton() const { return open_button_; }
  QSlider* timeline() const { return timeline_; }
  QLabel* statusLabel() const { return status_; }
  TrainingCurves* curves() const { return curves_; }
  HeadGrid* headGrid() const { return grid_; }
  HeatmapWidget* focusHeatmap() const { return focus_; }

  // The user's sentence file for the "parallel" task (the file dialog sets it too).
  void setParallelFile(const QString& path);
  // Where finished runs are saved (default: the application's data folder, "trained").
  void setSaveDirectory(const QString& dir) { save_dir_ = dir; }
  bool running() const { return running_; }
  bool paused() const { return paused_; }
  const std::vector<TrainSnapshot>& snapshots() const { return snapshots_; }
  QString savedPath() const { return saved_path_; }
  // Shows snapshot i (the timeline does the same).
  void showSnapshot(int i);
  // Focuses attention block `block` (trace order), head `head` in the large heatmap.
  void focusHead(int block, int head);

 public slots:
  void startTraining();
  void togglePause();
  void stopTraining();
  void openInViews();  // loads the saved model in the engine: every other view shows it
  void saveAs();

 signals:
  void trainingFinished(bool stopped);

 protected:
  void refresh() override;

 private:
  void buildControls();
  void updateControls();
  // What the worker reports, on the GUI thread.
  void onPrepared(const QString& description, const QString& probe_src, const QString& probe_tgt);
  void onPaused(bool paused);
  void onStep(const Trainer::StepStats& s);
  void onEvaluation(const Trainer::Evaluation& e);
  void onSnapshot(const TrainSnapshot& snap);
  void onFinished(const QString& path, const Trainer::Evaluation& final_eval, bool stopped,
                  std::shared_ptr<const LoadedModel> model);
  void onFailed(const QString& message);
  void setStatus();
  void updateExplanation();

  QComboBox* task_combo_;
  QPushButton* file_button_;
  QComboBox* size_combo_;
  QSpinBox* steps_spin_;
  QSpinBox* seed_spin_;
  QSpinBox* keep_spin_;
  QPushButton* start_button_;
  QPushButton* pause_button_;
  QPushButton* stop_button_;
  QPushButton* open_button_;
  QPushButton* save_button_;
  QLabel* status_;
  QLabel* probe_label_;
  TrainingCurves* curves_;
  HeadGrid* grid_;
  HeatmapWidget* focus_;
  QSlider* timeline_;
  QLabel* timeline_label_;
  QTimer repaint_timer_;

  QString parallel_file_, save_dir_, saved_path_;
  std::vector<TrainSnapshot> snapshots_;
  int shown_ = -1, focus_block_ = -1, focus_head_ = -1;
  Trainer::StepStats last_;
  Trainer::Evaluation last_eval_;
  bool have_eval_ = false;
  int planned_steps_ = 0;
  QString run_description_, finish_note_;

  TrainWorker* worker_;                         // the runs, off the GUI thread
  std::shared_ptr<const LoadedModel> trained_;  // the last run's model (Save as…)
  bool running_ = false, paused_ = false;
  bool stopping_ = false;  // Stop was pressed and the run has not ended yet
};

}  // namespace attnviz::gui

// The "Patching" tab of the "Why this token?" view: activation patching (model/patching.h) between
// the current run (the clean input) and a corrupted input the student types, one word changed: the
// source of an encoder-decoder or an encoder, the prompt of a decoder-only model. Run patching
// starts the sweep as a job of the engine (its progress bar and Cancel in the tab); the result is a
// layer × position heatmap of the restored fraction for each residual stream and a layer × head
// heatmap for each attention block, with m(clean), m(corrupted), the answer and the foil above.
// The core's refusals (inputs of different lengths, nothing to restore …) are shown as text.
// The view adds the tab with one addTab and asks it for its explanation, figure and exports.
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include "model/patching.h"

class QHBoxLayout;
class QLabel;
class QLineEdit;
class QVBoxLayout;
class QProgressBar;
class QPushButton;

namespace attnviz::gui {

class AppState;
class HeatmapWidget;

class WhyPatchingTab : public QWidget {
  Q_OBJECT
 public:
  explicit WhyPatchingTab(AppState* state, QWidget* parent = nullptr);

  // The position of the stack whose logits are read (−1: the last) and the answer token (−1: the
  // clean run's choice), as the view explains them: the next Run patching uses them.
  void setQuestion(int position, int token);
  // Starts the sweep on the current run and the corrupted text; false (with the reason shown)
  // when there is no run, the engine is busy or the text is empty.
  bool run();
  bool running() const { return running_; }
  // The result shown (nullptr before the first one, or after the run changed).
  const PatchingResult* result() const { return result_.get(); }

  QLineEdit* corruptedEdit() const { return corrupted_; }
  QPushButton* runButton() const { return run_; }
  QPushButton* cancelButton() const { return cancel_; }
  QProgressBar* progressBar() const { return progress_; }
  QLabel* caption() const { return caption_; }  // the numbers, or the core's refusal
  // One heatmap per PatchingResult::maps entry, in its order.
  const std::vector<HeatmapWidget*>& heatmaps() const { return maps_; }

  // The "What am I looking at?" text: the definition and the current numbers.
  QString explanation() const;
  QWidget* exportWidget();  // the heatmaps (this tab before a result)
  QString figureTitle() const;
  // The .npy files and patch.json (dumpPatching) into a folder; false with *error set. (The view
  // writes the CSV: model/trace_dump.h's patchingCsv of result().)
  bool exportNumpy(const QString& dir, QString* error = nullptr) const;

 signals:
  void explanationChanged();  // a result, a refusal or a new run: the view rewrites its panel

 private:
  void syncInput();  // the clean input of the current run; the corrupted line follows a new one
  void showResult();
  void setRunning(bool on);
  AppState* state_;
  QLabel* caption_;
  QLabel* hint_;
  QLineEdit* corrupted_;
  QPushButton* run_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QWidget* maps_box_;
  QVBoxLayout* rows_;       // the residual streams' heatmaps, then heads_row_
  QHBoxLayout* heads_row_;  // the head blocks'
  std::vector<HeatmapWidget*> maps_;
  Inputs clean_;        // the current run's input, one sentence
  QString clean_text_;  // the side the student changes, as words
  int position_ = -1, token_ = -1;
  std::shared_ptr<const PatchingResult> result_;
  Inputs result_clean_;     // the clean input result_ was computed on
  QString corrupted_text_;  // the corrupted input result_ was computed on
  QString refusal_;         // the core's refusal of the last run, or "Cancelled"
  bool running_ = false;
};

}  // namespace attnviz::gui

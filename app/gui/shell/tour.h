// The guided first look (Help › Tour): seven steps over the bundled models, each setting the window
// up — model, sentence, masks, view, attention kind/layer/head, decoding steps, a branch — and
// saying in two sentences what to notice. Offered once on the first start; skippable; never again
// unless asked for. The tour drives the window only through what TourWindow gives it, as a user's
// clicks would.
#pragma once

#include <QFrame>
#include <QObject>
#include <QPointer>
#include <QString>
#include <deque>
#include <functional>
#include <vector>

#include "model/masks.h"
#include "session/attention_data.h"

class QLabel;
class QLineEdit;
class QMainWindow;
class QPushButton;
class QToolButton;

namespace attnviz::gui {

class AppState;
class Engine;
class View;

// What the tour drives: the window, through what a user's clicks would do. MainWindow gives it this
// (the tour knows nothing else of the window).
struct TourWindow {
  QMainWindow* window = nullptr;  // the panel floats over it; Help › Tour goes in its menu bar
  Engine* engine = nullptr;
  AppState* state = nullptr;
  QLineEdit* source = nullptr;  // the input bar's sentence and target prefix
  QLineEdit* prefix = nullptr;
  std::function<View*()> currentView;
  std::function<void(const QString&)> setCurrentView;  // by the view's name
  std::function<void(int)> selectDecodingStep;         // the step the Decoding view shows
};

// One step: what it sets up, and what it says.
struct TourStep {
  // The head that the step shows: a head index, kMeanOfHeads, or kSharpestHead (the head of the
  // layer whose rows are most peaked, found when the step runs: the tour never hard-codes a head
  // of a model that may be retrained).
  static constexpr int kMeanOfHeads = -1;
  static constexpr int kSharpestHead = -2;

  QString id{};     // short name: tests, screenshots ("rows-and-columns")
  QString title{};  // "A row and a column"
  QString text{};   // two sentences: what to notice (rich text)
  QString model{};  // a bundled model's name
  QString src{};    // the source sentence, decoded greedily to the end
  QString view{};   // the view shown: "attention", "overview", "masks", "decoding"
  AttentionKind kind = AttentionKind::Cross;
  int layer = -1;  // -1: the last layer of that kind
  int head = kMeanOfHeads;
  MaskOptions masks{};  // after the run: the switches the step turns off (the same tokens rerun)
  // Decoding: after the full decode, back to the start token and this many steps forward
  // (-1: leave the full decode).
  int steps = -1;
  // Branching: at target position `branch_at` pick `branch_token` instead of the model's choice,
  // then decode on (empty: no branch).
  int branch_at = -1;
  QString branch_token{};
  // The decoding step the Decoding view shows (its top-k and new attention rows); -1: the newest.
  int show_step = -1;
};

// The tour's steps, in order.
std::vector<TourStep> tourSteps();

// The card the tour talks in: it floats over the bottom right of the window's views (it takes no
// room from them and does not make the window wider), follows the window's size, and can be
// closed like a window (×).
class TourPanel : public QFrame {
  Q_OBJECT
 public:
  explicit TourPanel(QWidget* window);
  QLabel* counterLabel() const { return counter_; }
  QLabel* titleLabel() const { return title_; }
  QLabel* textLabel() const { return text_; }
  QLabel* statusLabel() const { return status_; }
  QPushButton* backButton() const { return back_; }
  QPushButton* nextButton() const { return next_; }
  QPushButton* endButton() const { return end_; }
  // Back to the bottom right of the window's central area, sized to its text.
  void place();

 signals:
  void closedByUser();

 protected:
  void closeEvent(QCloseEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  friend class Tour;
  QLabel* counter_;
  QLabel* title_;
  QLabel* text_;
  QLabel* status_;
  QPushButton* back_;
  QPushButton* next_;
  QPushButton* end_;
  QToolButton* close_;
};

class Tour : public QObject {
  Q_OBJECT
 public:
  explicit Tour(TourWindow window, std::vector<TourStep> steps = tourSteps());

  const std::vector<TourStep>& steps() const { return steps_; }
  int count() const { return int(steps_.size()); }
  int current() const { return current_; }  // -1 when the tour is not running
  bool running() const { return current_ >= 0; }
  bool offering() const { return offering_; }
  // The current step's set-up has finished (its view shows what the text talks about).
  bool ready() const { return running() && ops_.empty() && !waiting_; }
  TourPanel* panel() const { return panel_; }

  // The panel asks whether to take the tour ("Take the tour" / "Not now").
  void offer();
  // offer() unless the tour was offered before (QSettings "tour/offered"; the offer is made once,
  // whatever the answer) or is running: the window calls it after its first run.
  void offerOnce();
  // From the first step; remembers the model, sentence and masks to give them back at the end.
  void start();
  void goTo(int index);
  void next();
  void back();
  // Ends the tour (the last step's Finish, End tour, closing the panel) and gives back what the
  // user had before it started.
  void stop();

 signals:
  void stepReady(int index);  // the step's views are set up
  void stepFailed(int index, const QString& message);
  void finished();  // the tour ended and the user's model and sentence are back

 private:
  using Op = std::function<bool()>;  // true: it started a job of the engine (wait for it)
  void runOps();
  void onEngineIdle();
  void showStep();
  void setStatus(const QString& text);
  int sharpestHead(AttentionKind kind, int layer) const;
  void queueStep(const TourStep& s);
  void queueRestore();

  TourWindow window_;
  std::vector<TourStep> steps_;
  QPointer<TourPanel> panel_;
  int current_ = -1;
  bool offering_ = false;
  bool waiting_ = false;  // an op started a job; the next op runs when the engine is idle
  bool in_ops_ = false;
  bool restoring_ = false;
  std::deque<Op> ops_;
  // What the user had when the tour started.
  struct Before {
    QString model, config, src, prefix, view;
    MaskOptions masks;
    AttentionSelection selection;
    bool had_model = false;
  } before_;
};

// Adds Help › Tour (action "tour") to the window, first in its Help menu. Returns the tour (a child
// of the window; the one already there when called again).
Tour* installTour(const TourWindow& window);

}  // namespace attnviz::gui

// File › Export lesson as HTML…: what the page keeps (kinds of attention, layers, heads, bits per
// probability), with the page's size said as the teacher chooses and OK refused above the limit
// (model/lesson_html.h writes the page).
#pragma once

#include <QDialog>
#include <vector>

#include "arch/config.h"
#include "model/lesson_html.h"
#include "model/trace.h"

class QCheckBox;
class QComboBox;
class QDialogButtonBox;
class QLabel;

namespace attnviz::gui {

class LessonDialog : public QDialog {
  Q_OBJECT
 public:
  // The trace, config, start and text must outlive the dialog.
  LessonDialog(const Trace& trace, const ModelConfig& config, const LessonStart& start,
               const LessonText& text, QWidget* parent = nullptr);
  LessonScope scope() const;
  // "0.96 MB", or why the page cannot be written: what the size label says now.
  QString estimateText() const;
  bool acceptable() const { return acceptable_; }

 private:
  void updateEstimate();

  const Trace& trace_;
  const ModelConfig& config_;
  const LessonStart& start_;
  const LessonText& text_;
  std::vector<std::pair<AttentionKind, QCheckBox*>> kinds_;
  std::vector<QCheckBox*> layers_, heads_;
  QComboBox* bits_;
  QLabel* estimate_;
  QDialogButtonBox* buttons_;
  bool acceptable_ = false;
};

}  // namespace attnviz::gui

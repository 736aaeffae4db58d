// File › Open for a model file without a config whose tensors do not tell everything (a
// state_dict saved by a tutorial's training loop): shows what was read from the tensors and asks
// for the rest — the number of heads, the start and end tokens' ids — with optional vocabulary
// files, the switches the names cannot tell (the descriptor's assumptions: the LayerNorm's place,
// the activation; preselected as the tutorial has them), and "Remember for this file" (kept
// beside it as MODEL.attnviz.json).
#pragma once

#include <QDialog>
#include <QString>
#include <map>

#include "arch/infer.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace attnviz::gui {

class AnswersDialog : public QDialog {
  Q_OBJECT
 public:
  // `given`: what was supplied before (kept, and shown where a question remains).
  AnswersDialog(const QString& path, const Inference& inference, const UserSupplied& given,
                QWidget* parent = nullptr);

  // What was given before with this dialog's answers over it; call after accept().
  const UserSupplied& answers() const { return answers_; }
  bool remember() const;

  // The field of a question ("n_heads": a QComboBox; the ids: a QSpinBox), or null (tests).
  QWidget* field(const QString& key) const;
  QLineEdit* vocabularyField(bool target) const { return target ? tgt_vocab_ : src_vocab_; }
  // The LayerNorm placement and activation choices (null unless the architecture's descriptor
  // leaves them open: Inference::assumptions).
  QComboBox* normField() const { return norm_; }
  QComboBox* activationField() const { return activation_; }

  void accept() override;  // reads the vocabularies; stays open with the problem shown

 private:
  void updateOk();

  UserSupplied answers_;
  std::map<QString, QWidget*> fields_;
  QLineEdit *src_vocab_ = nullptr, *tgt_vocab_ = nullptr;
  QComboBox *norm_ = nullptr, *activation_ = nullptr;
  QCheckBox* remember_ = nullptr;
  QLabel* problem_ = nullptr;
  QPushButton* ok_ = nullptr;
};

}  // namespace attnviz::gui

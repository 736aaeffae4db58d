// File › Open for a model file without a config whose tensors do not tell everything (a
// state_dict saved by a tutorial's training loop): shows what was read from the tensors and asks
// for the rest — the number of heads, the start and end tokens' ids — with optional vocabulary
// files, what the names cannot tell and was taken as the tutorial has it (Inference::assumed: the
// norm's placement, the activation, a translation model's padding id; preselected), and
// "Remember for this file" (kept beside it as MODEL.attnviz.json). The core says what is open as
// data; the words here are the GUI's (the CLI's are its options).
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
  // leaves them open: Inference::assumed) and the padding id (null unless the model masks padding
  // and the file does not state its id).
  QComboBox* normField() const { return norm_; }
  QComboBox* activationField() const { return activation_; }
  QSpinBox* padField() const { return pad_; }
  // What keeps Open disabled besides unanswered questions (an id outside the vocabulary), or "".
  QString problem() const;

  void accept() override;  // reads the vocabularies; stays open with the problem shown

 private:
  void updateOk();

  // An id's valid values: lowest (-1: none allowed) to end − 1; `asked`: a question, unanswered
  // below lowest.
  struct IdRange {
    int lowest = 0, end = 0;
    bool asked = false;
  };

  UserSupplied answers_;
  std::map<QString, QWidget*> fields_;
  std::map<QString, IdRange> ids_;
  QSpinBox* pad_ = nullptr;
  int pad_proposed_ = 0;
  bool pad_given_ = false;
  QLineEdit *src_vocab_ = nullptr, *tgt_vocab_ = nullptr;
  QComboBox *norm_ = nullptr, *activation_ = nullptr;
  QCheckBox* remember_ = nullptr;
  QLabel* problem_ = nullptr;
  QPushButton* ok_ = nullptr;
};

}  // namespace attnviz::gui

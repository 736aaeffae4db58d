#include "answers_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "base/error.h"
#include "text/vocab_files.h"

namespace attnviz::gui {

namespace {

// The question's words for a person (the key is what the CLI option and the answers file say).
QString questionLabel(const std::string& key) {
  if (key == "n_heads") return QObject::tr("Attention heads:");
  if (key == "bos_id") return QObject::tr("Start token's id:");
  if (key == "eos_id") return QObject::tr("End token's id:");
  if (key == "pad_id") return QObject::tr("Padding token's id:");
  return QString::fromStdString(key) + QLatin1Char(':');
}

}  // namespace

AnswersDialog::AnswersDialog(const QString& path, const Inference& inference,
                             const UserSupplied& given, QWidget* parent)
    : QDialog(parent), answers_(given) {
  setWindowTitle(tr("What the file does not say"));
  setObjectName(QStringLiteral("answersDialog"));
  setMinimumWidth(620);
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(
      tr("<b>%1</b> has no config. Its tensors follow <b>%2</b>; what they tell is listed below. "
         "They cannot tell the rest: please give it (your training script has these numbers).")
          .arg(QFileInfo(path).fileName().toHtmlEscaped(),
               QString::fromStdString(inference.guess.summary()).toHtmlEscaped()),
      this);
  intro->setWordWrap(true);
  layout->addWidget(intro);
  auto* facts = new QPlainTextEdit(this);
  facts->setReadOnly(true);
  QString text;
  for (const auto& f : inference.facts) text += QString::fromStdString(f) + QLatin1Char('\n');
  facts->setPlainText(text.trimmed());
  facts->setMinimumHeight(120);
  facts->setMaximumHeight(180);
  facts->setToolTip(tr("Read from the tensors' names and shapes"));
  layout->addWidget(facts);

  auto* form = new QFormLayout;
  for (const Question& q : inference.missing) {
    const QString key = QString::fromStdString(q.key);
    QWidget* w = nullptr;
    if (!q.choices.empty()) {
      auto* combo = new QComboBox(this);
      combo->addItem(tr("choose…"), -1);
      for (int c : q.choices) combo->addItem(QString::number(c), c);
      connect(combo, &QComboBox::currentIndexChanged, this, [this] { updateOk(); });
      w = combo;
    } else {
      auto* spin = new QSpinBox(this);
      spin->setRange(-2, 1 << 24);
      spin->setSpecialValueText(tr("choose…"));  // shown at the minimum, -2
      spin->setValue(-2);
      spin->setToolTip(tr("-1: the model has none"));
      connect(spin, &QSpinBox::valueChanged, this, [this] { updateOk(); });
      w = spin;
    }
    w->setObjectName(key);
    w->setToolTip(QString::fromStdString(q.why) +
                  (w->toolTip().isEmpty() ? QString() : QStringLiteral(" (") + w->toolTip() + ')'));
    form->addRow(questionLabel(q.key), w);
    fields_[key] = w;
  }
  // Switches the names cannot tell (the descriptor's assumptions): not questions — the
  // tutorial's choice is preselected (or the answer given before), the other one click away.
  const ArchDefaults& tutorial =
      inference.guess.spec ? inference.guess.spec->defaults : ArchDefaults{};
  for (const Assumption& assumed : inference.assumptions) {
    const QString hint = QString::fromStdString(assumed.hint);
    if (assumed.key == "norm") {
      const bool pre_default = tutorial.norm == NormPlacement::Pre;
      norm_ = new QComboBox(this);
      norm_->setObjectName(QStringLiteral("norm"));
      norm_->addItem(tr("after each sublayer (post-norm: norm_first=False)") +
                         (pre_default ? QString() : tr(", the default")),
                     QStringLiteral("post"));
      norm_->addItem(tr("before each sublayer (pre-norm: norm_first=True)") +
                         (pre_default ? tr(", the default") : QString()),
                     QStringLiteral("pre"));
      // As inferred: the answers given now and those remembered beside the file.
      const std::string given = inference.config.value("norm", pre_default ? "pre" : "post");
      norm_->setCurrentIndex(given == "pre" ? 1 : 0);
      norm_->setToolTip(hint);
      form->addRow(tr("LayerNorm:"), norm_);
    } else if (assumed.key == "activation") {
      activation_ = new QComboBox(this);
      activation_->setObjectName(QStringLiteral("activation"));
      const std::string fallback = activationName(tutorial.activation);
      for (const char* a : {"relu", "gelu", "gelu_tanh", "silu"})
        activation_->addItem(
            QString::fromLatin1(a) + (fallback == a ? tr(" (the default)") : QString()),
            QString::fromLatin1(a));
      activation_->setCurrentIndex(
          std::max(0, activation_->findData(
                          QString::fromStdString(inference.config.value("activation", fallback)))));
      activation_->setToolTip(hint);
      form->addRow(tr("Activation:"), activation_);
    }
  }
  auto vocabRow = [&](QLineEdit*& edit, const QString& label, const QString& tip) {
    edit = new QLineEdit(this);
    edit->setPlaceholderText(tr("optional: tokens are shown as their ids without one"));
    edit->setToolTip(tip);
    auto* browse = new QPushButton(tr("Browse…"), this);
    QLineEdit* e = edit;
    connect(browse, &QPushButton::clicked, this, [this, e, path] {
      const QString f =
          QFileDialog::getOpenFileName(this, tr("A vocabulary"), QFileInfo(path).absolutePath(),
                                       tr("Vocabularies (*.json *.txt);;All files (*)"));
      if (!f.isEmpty()) e->setText(f);
    });
    auto* row = new QHBoxLayout;
    row->addWidget(edit, 1);
    row->addWidget(browse);
    form->addRow(label, row);
  };
  const QString formats =
      tr("A JSON list of tokens (index = id), a JSON object token → id (vocab.json), or a text "
         "file of one token a line (vocab.txt, torchtext's get_itos())");
  vocabRow(src_vocab_, tr("Vocabulary:"), tr("The source's (or the only) vocabulary. ") + formats);
  vocabRow(tgt_vocab_, tr("Target vocabulary:"),
           tr("Only when the target has its own vocabulary. ") + formats);
  layout->addLayout(form);

  remember_ = new QCheckBox(tr("&Remember for this file"), this);
  remember_->setChecked(true);
  remember_->setToolTip(
      tr("Keeps the answers beside the model as %1, so that it opens directly next time")
          .arg(QFileInfo(path).fileName() + QStringLiteral(".attnviz.json")));
  layout->addWidget(remember_);
  problem_ = new QLabel(this);
  problem_->setWordWrap(true);
  problem_->setStyleSheet(QStringLiteral("color: #b00020"));
  problem_->hide();
  layout->addWidget(problem_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  ok_ = buttons->button(QDialogButtonBox::Ok);
  ok_->setText(tr("&Open"));
  connect(buttons, &QDialogButtonBox::accepted, this, &AnswersDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  updateOk();
}

bool AnswersDialog::remember() const {
  return remember_->isChecked();
}

QWidget* AnswersDialog::field(const QString& key) const {
  auto it = fields_.find(key);
  return it == fields_.end() ? nullptr : it->second;
}

void AnswersDialog::updateOk() {
  bool all = true;
  for (const auto& [key, w] : fields_) {
    if (auto* c = qobject_cast<QComboBox*>(w)) all &= c->currentData().toInt() > 0;
    if (auto* s = qobject_cast<QSpinBox*>(w)) all &= s->value() >= -1;
  }
  ok_->setEnabled(all);
  ok_->setToolTip(all ? QString() : tr("Every question above needs an answer"));
}

void AnswersDialog::accept() {
  UserSupplied a = answers_;
  for (const auto& [key, w] : fields_) {
    int v = 0;
    if (auto* c = qobject_cast<QComboBox*>(w)) v = c->currentData().toInt();
    if (auto* s = qobject_cast<QSpinBox*>(w)) v = s->value();
    if (key == QLatin1String("n_heads")) a.n_heads = v;
    if (key == QLatin1String("pad_id")) a.pad_id = v;
    if (key == QLatin1String("bos_id")) a.bos_id = v;
    if (key == QLatin1String("eos_id")) a.eos_id = v;
  }
  if (norm_) a.norm = norm_->currentData().toString().toStdString();
  if (activation_) a.activation = activation_->currentData().toString().toStdString();
  try {
    const QString src = src_vocab_->text().trimmed(), tgt = tgt_vocab_->text().trimmed();
    if (!src.isEmpty()) a.src_vocab = a.tgt_vocab = readVocabularyFile(src.toStdString());
    if (!tgt.isEmpty()) a.tgt_vocab = readVocabularyFile(tgt.toStdString());
  } catch (const Error& e) {
    problem_->setText(QString::fromStdString(e.what()));
    problem_->show();
    return;
  }
  answers_ = std::move(a);
  QDialog::accept();
}

}  // namespace attnviz::gui

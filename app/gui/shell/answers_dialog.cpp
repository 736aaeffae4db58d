#include "shell/answers_dialog.h"

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
#include <cstdlib>

#include "base/error.h"
#include "text/vocab_files.h"

namespace attnviz::gui {

namespace {

// The GUI's words for what a file cannot tell (the core keeps it as data: the key is
// UserSupplied's and the answers file's; the CLI says it as its options).
QString settingName(const std::string& key) {
  if (key == "n_heads") return QObject::tr("Attention heads");
  if (key == "bos_id") return QObject::tr("Start token's id");
  if (key == "eos_id") return QObject::tr("End token's id");
  if (key == "pad_id") return QObject::tr("Padding token's id");
  if (key == "norm") return QObject::tr("Norm placement");
  if (key == "activation") return QObject::tr("Activation");
  return QString::fromStdString(key);
}

// An alternative's meaning, for a choice's tooltip: "pre: norm_first=True".
QString alternativesText(const std::vector<Alternative>& otherwise) {
  QStringList lines;
  for (const Alternative& alt : otherwise)
    lines << QObject::tr("%1 for %2")
                 .arg(QString::fromStdString(alt.value), QString::fromStdString(alt.meaning));
  return lines.join(QLatin1Char('\n'));
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
  // An id's field: unanswered ("choose…") one below the lowest id when `ask`, else the value
  // proposed; checked against the vocabulary's size in updateOk.
  auto idField = [&](const std::string& key, int lowest, int end, bool ask, int value) {
    auto* spin = new QSpinBox(this);
    spin->setRange(ask ? lowest - 1 : lowest, 1 << 24);
    if (ask) spin->setSpecialValueText(tr("choose…"));  // shown at the minimum
    spin->setValue(ask ? lowest - 1 : value);
    QString range = end > 0 ? tr("0 to %1").arg(end - 1) : QString();
    if (lowest < 0) range = tr("-1: the model has none; ") + range;
    if (!range.isEmpty()) spin->setToolTip(range);
    connect(spin, &QSpinBox::valueChanged, this, [this] { updateOk(); });
    ids_[QString::fromStdString(key)] = {lowest, end, ask};
    return spin;
  };
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
      w = idField(q.key, q.id_end > 0 ? q.id_lowest : -1, q.id_end, true, 0);
    }
    w->setObjectName(key);
    w->setToolTip(QString::fromStdString(q.why) +
                  (w->toolTip().isEmpty() ? QString() : QStringLiteral(" (") + w->toolTip() + ')'));
    form->addRow(settingName(q.key) + QLatin1Char(':'), w);
    fields_[key] = w;
  }
  // What the names cannot tell and was taken as the tutorial has it (the norm's place, the
  // activation, the padding id): not questions — the value taken is preselected (the answer given
  // before, else the tutorial's), the other one a click away.
  const ArchDefaults& tutorial =
      inference.guess.spec ? inference.guess.spec->defaults : ArchDefaults{};
  for (const Assumed& assumed : inference.assumed) {
    const QString hint = QString::fromStdString(assumed.hint);
    const QString others = alternativesText(assumed.otherwise);
    const QString tip = others.isEmpty() ? hint : hint + QStringLiteral("\n") + others;
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
      norm_->setCurrentIndex(assumed.value == "pre" ? 1 : 0);
      norm_->setToolTip(tip);
      form->addRow(settingName(assumed.key) + QLatin1Char(':'), norm_);
    } else if (assumed.key == "activation") {
      activation_ = new QComboBox(this);
      activation_->setObjectName(QStringLiteral("activation"));
      const std::string fallback = activationName(tutorial.activation);
      for (const char* a : {"relu", "gelu", "gelu_tanh", "silu"})
        activation_->addItem(
            QString::fromLatin1(a) + (fallback == a ? tr(" (the default)") : QString()),
            QString::fromLatin1(a));
      activation_->setCurrentIndex(
          std::max(0, activation_->findData(QString::fromStdString(assumed.value))));
      activation_->setToolTip(tip);
      form->addRow(settingName(assumed.key) + QLatin1Char(':'), activation_);
    } else if (assumed.key == "pad_id") {
      const int proposed = std::atoi(assumed.value.c_str());
      pad_ = idField(assumed.key, assumed.id_lowest, assumed.id_end, false, proposed);
      pad_->setObjectName(QStringLiteral("pad_id"));
      pad_->setToolTip(tip + QStringLiteral(" (") + pad_->toolTip() + QLatin1Char(')'));
      pad_proposed_ = proposed;
      pad_given_ = assumed.given;
      form->addRow(settingName(assumed.key) + QLatin1Char(':'), pad_);
      fields_[QStringLiteral("pad_id")] = pad_;
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
                                       tr("Vocabularies and tokenizers (*.json *.txt *.pkl "
                                          "*.model *.bpe);;All files (*)"));
      if (!f.isEmpty()) e->setText(f);
    });
    auto* row = new QHBoxLayout;
    row->addWidget(edit, 1);
    row->addWidget(browse);
    form->addRow(label, row);
  };
  const QString formats =
      tr("a JSON list of tokens (index = id), a JSON object token → id (vocab.json), or a text "
         "file of one token a line (vocab.txt, torchtext's get_itos())");
  vocabRow(src_vocab_, tr("Vocabulary:"),
           tr("The source's (or the only) vocabulary: a tokenizer, which serves both sides and "
              "types text as the tutorial did (nanoGPT's data/…/meta.pkl, llama2.c's "
              "tokenizer.model, a tokenizer.json, GPT-2's encoder.json or vocab.json with "
              "vocab.bpe or merges.txt beside it), or ") +
               formats);
  vocabRow(tgt_vocab_, tr("Target vocabulary:"),
           tr("Only when the target has its own vocabulary: ") + formats);
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

QString AnswersDialog::problem() const {
  return problem_->isHidden() ? QString() : problem_->text();
}

void AnswersDialog::updateOk() {
  bool all = true;
  QStringList problems;
  for (const auto& [key, w] : fields_) {
    if (auto* c = qobject_cast<QComboBox*>(w)) all &= c->currentData().toInt() > 0;
    auto* s = qobject_cast<QSpinBox*>(w);
    auto range = ids_.find(key);
    if (!s || range == ids_.end()) continue;
    const IdRange& r = range->second;
    if (r.asked && s->value() < r.lowest) {
      all = false;  // not answered yet
    } else if (r.end > 0 && s->value() >= r.end) {
      all = false;
      problems << tr("%1: %2 is not an id of the vocabulary of %3 tokens (0 to %4%5).")
                      .arg(settingName(key.toStdString()))
                      .arg(s->value())
                      .arg(r.end)
                      .arg(r.end - 1)
                      .arg(r.lowest < 0 ? tr(", or -1 for none") : QString());
    }
  }
  problem_->setText(problems.join(QLatin1Char('\n')));
  problem_->setVisible(!problems.isEmpty());
  ok_->setEnabled(all);
  ok_->setToolTip(all                  ? QString()
                  : problems.isEmpty() ? tr("Every question above needs an answer")
                                       : problems.join(QLatin1Char('\n')));
}

void AnswersDialog::accept() {
  UserSupplied a = answers_;
  for (const auto& [key, w] : fields_) {
    int v = 0;
    if (auto* c = qobject_cast<QComboBox*>(w)) v = c->currentData().toInt();
    if (auto* s = qobject_cast<QSpinBox*>(w)) v = s->value();
    if (key == QLatin1String("n_heads")) a.n_heads = v;
    // The padding id proposed and left as it is stays the inference's (a vocabulary given here
    // may spell it elsewhere); one the user chose, or gave before, is the answer.
    if (key == QLatin1String("pad_id") && (w != pad_ || pad_given_ || v != pad_proposed_))
      a.pad_id = v;
    if (key == QLatin1String("bos_id")) a.bos_id = v;
    if (key == QLatin1String("eos_id")) a.eos_id = v;
  }
  if (norm_) a.norm = norm_->currentData().toString().toStdString();
  if (activation_) a.activation = activation_->currentData().toString().toStdString();
  try {
    const QString src = src_vocab_->text().trimmed(), tgt = tgt_vocab_->text().trimmed();
    if (!src.isEmpty() && tgt.isEmpty()) {
      supplyVocabulary(a, src.toStdString());  // both sides, its tokenizer too
    } else if (!src.isEmpty()) {
      a.src_vocab = readVocabularyFile(src.toStdString());
      a.tgt_vocab = readVocabularyFile(tgt.toStdString());
    } else if (!tgt.isEmpty()) {
      a.tgt_vocab = readVocabularyFile(tgt.toStdString());
    }
  } catch (const Error& e) {
    problem_->setText(QString::fromStdString(e.what()));
    problem_->show();
    return;
  }
  answers_ = std::move(a);
  QDialog::accept();
}

}  // namespace attnviz::gui

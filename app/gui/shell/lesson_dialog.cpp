#include "shell/lesson_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>
#include <algorithm>

#include "base/error.h"
#include "session/attention_data.h"

namespace attnviz::gui {

namespace {

// A row of check boxes, all checked: "1 2 3 …".
QHBoxLayout* checkRow(int n, std::vector<QCheckBox*>& boxes, QWidget* parent) {
  auto* row = new QHBoxLayout;
  for (int i = 0; i < n; ++i) {
    auto* box = new QCheckBox(QString::number(i + 1), parent);
    box->setChecked(true);
    boxes.push_back(box);
    row->addWidget(box);
  }
  row->addStretch(1);
  return row;
}

}  // namespace

LessonDialog::LessonDialog(const Trace& trace, const ModelConfig& config, const LessonStart& start,
                           const LessonText& text, QWidget* parent)
    : QDialog(parent), trace_(trace), config_(config), start_(start), text_(text) {
  setWindowTitle(tr("Export lesson as HTML"));
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(
      tr("One HTML file that opens in any current web browser, offline and without a server: the "
         "sentence, every heatmap you keep with hover, the overview, the masks, the decoding steps "
         "and the explanations. It opens on the view and head you are looking at now."),
      this);
  intro->setWordWrap(true);
  layout->addWidget(intro);
  auto* form = new QFormLayout;
  auto* kinds = new QHBoxLayout;
  for (AttentionKind k : kAttentionKinds) {
    if (!trace.has(k)) continue;
    auto* box = new QCheckBox(kindTitle(k), this);
    box->setChecked(true);
    kinds_.emplace_back(k, box);
    kinds->addWidget(box);
  }
  kinds->addStretch(1);
  form->addRow(tr("Attention:"), kinds);
  int most_layers = 0;
  for (AttentionKind k : kAttentionKinds) most_layers = std::max(most_layers, trace.layers(k));
  form->addRow(tr("Layers:"), checkRow(most_layers, layers_, this));
  form->addRow(tr("Heads:"), checkRow(trace.heads(), heads_, this));
  bits_ = new QComboBox(this);
  bits_->addItem(tr("16 bits (within ±%1)").arg(lessonProbabilityError(16), 0, 'g', 2), 16);
  bits_->addItem(tr("8 bits (within ±%1, half the size)").arg(lessonProbabilityError(8), 0, 'g', 2),
                 8);
  bits_->setToolTip(tr("How precisely each probability is stored in the page"));
  form->addRow(tr("Probabilities:"), bits_);
  estimate_ = new QLabel(this);
  estimate_->setWordWrap(true);
  form->addRow(tr("Size of the page:"), estimate_);
  layout->addLayout(form);
  buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons_->button(QDialogButtonBox::Ok)->setText(tr("Export…"));
  connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons_);
  for (auto& [kind, box] : kinds_)
    connect(box, &QCheckBox::toggled, this, [this] { updateEstimate(); });
  for (QCheckBox* box : layers_)
    connect(box, &QCheckBox::toggled, this, [this] { updateEstimate(); });
  for (QCheckBox* box : heads_)
    connect(box, &QCheckBox::toggled, this, [this] { updateEstimate(); });
  connect(bits_, &QComboBox::currentIndexChanged, this, [this] { updateEstimate(); });
  updateEstimate();
}

LessonScope LessonDialog::scope() const {
  LessonScope s;
  for (const auto& [kind, box] : kinds_)
    if (box->isChecked()) s.kinds.push_back(kind);
  for (size_t i = 0; i < layers_.size(); ++i)
    if (layers_[i]->isChecked()) s.layers.push_back(int(i));
  for (size_t i = 0; i < heads_.size(); ++i)
    if (heads_[i]->isChecked()) s.heads.push_back(int(i));
  s.bits = bits_->currentData().toInt();
  return s;
}

QString LessonDialog::estimateText() const {
  return estimate_->text();
}

void LessonDialog::updateEstimate() {
  const LessonScope s = scope();
  QString text;
  acceptable_ = false;
  if (s.kinds.empty() || s.layers.empty() || s.heads.empty()) {
    text = tr("Keep at least one kind of attention, one layer and one head.");
  } else {
    try {
      const uint64_t bytes = estimateLessonBytes(trace_, config_, s, start_, text_);
      acceptable_ = bytes <= kMaxLessonBytes;
      text = acceptable_ ? tr("%1 MB").arg(double(bytes) / 1e6, 0, 'f', 2)
                         : tr("%1 MB: too large (at most %2 MB). Keep fewer layers, heads or "
                              "kinds of attention, or store 8 bits.")
                               .arg(double(bytes) / 1e6, 0, 'f', 1)
                               .arg(double(kMaxLessonBytes) / 1e6, 0, 'f', 0);
    } catch (const Error& e) {
      text = QString::fromStdString(e.what());
    }
  }
  estimate_->setText(text);
  estimate_->setStyleSheet(acceptable_ ? QString() : QStringLiteral("color: #b00020;"));
  buttons_->button(QDialogButtonBox::Ok)->setEnabled(acceptable_);
}

}  // namespace attnviz::gui

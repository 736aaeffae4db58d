#include "views/decoding/translation_panel.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QVBoxLayout>
#include <algorithm>

#include "widgets/token_label.h"

namespace attnviz::gui {

namespace {

constexpr int kPadX = 3, kGap = 5, kLineGap = 3;

QStringList toQ(const std::vector<std::string>& v) {
  return tokenLabels(v);
}

std::vector<float> normalized(std::vector<float> w) {
  float mx = 0;
  for (float v : w) mx = std::max(mx, v);
  if (mx > 0)
    for (float& v : w) v /= mx;
  return w;
}

}  // namespace

// ---- TokenText --------------------------------------------------------------------------------

TokenText::TokenText(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  QSizePolicy sp(QSizePolicy::Expanding, QSizePolicy::Preferred);
  sp.setHeightForWidth(true);
  setSizePolicy(sp);
}

void TokenText::setTokens(const QStringList& tokens) {
  tokens_ = tokens;
  text_widths_font_.clear();
  weights_.clear();
  current_ = hover_ = -1;
  updateGeometry();
  update();
}

void TokenText::setWeights(std::vector<float> weights) {
  weights_ = std::move(weights);
  update();
}

void TokenText::setCurrent(int index) {
  current_ = index;
  update();
}

void TokenText::setPlaceholder(const QString& text) {
  placeholder_ = text;
  update();
}

const std::vector<int>& TokenText::textWidths() const {
  const QString key = font().key();
  if (text_widths_font_ != key) {
    const QFontMetrics fm(font());
    text_widths_.clear();
    for (const QString& t : tokens_) text_widths_.push_back(fm.horizontalAdvance(t));
    text_widths_font_ = key;
  }
  return text_widths_;
}

std::vector<QRect> TokenText::layoutFor(int width) const {
  const QFontMetrics fm(font());
  const std::vector<int>& text_w = textWidths();
  std::vector<QRect> rects;
  rects.reserve(text_w.size());
  int x = 0, y = 0;
  const int h = fm.height() + 2;
  for (const int tw : text_w) {
    const int w = std::min(tw + 2 * kPadX, std::max(20, width));
    if (x > 0 && x + w > width) {
      x = 0;
      y += h + kLineGap;
    }
    rects.emplace_back(x, y, w, h);
    x += w + kGap;
  }
  return rects;
}

int TokenText::heightForWidth(int width) const {
  const QFontMetrics fm(font());
  if (tokens_.isEmpty()) return fm.height() + 2;
  return layoutFor(width).back().bottom() + 1;
}

QSize TokenText::sizeHint() const {
  return QSize(300, heightForWidth(300));
}

QSize TokenText::minimumSizeHint() const {
  const QFontMetrics fm(font());
  return QSize(80, fm.height() + 2);
}

QRect TokenText::tokenRect(int index) const {
  const auto rects = layoutFor(width());
  return index >= 0 && index < int(rects.size()) ? rects[size_t(index)] : QRect();
}

int TokenText::tokenAt(QPoint pos) const {
  const auto rects = layoutFor(width());
  for (size_t i = 0; i < rects.size(); ++i)
    if (rects[i].adjusted(-kGap / 2, -kLineGap / 2, kGap / 2, kLineGap / 2).contains(pos))
      return int(i);
  return -1;
}

void TokenText::paintEvent(QPaintEvent* event) {
  QPainter p(this);
  if (tokens_.isEmpty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignLeft | Qt::AlignTop, placeholder_);
    return;
  }
  const auto rects = layoutFor(width());
  const std::vector<int>& text_w = textWidths();
  const QFontMetrics fm(font());
  for (size_t i = 0; i < rects.size(); ++i) {
    const QRect r = rects[i];
    if (!r.intersects(event->rect())) continue;  // scrolled away, or outside the repaint
    if (i < weights_.size() && weights_[i] > 0.02f)
      p.fillRect(r, QColor(0xff, 0x8c, 0x00, int(40 + 180 * std::clamp(weights_[i], 0.0f, 1.0f))));
    p.setPen(palette().color(QPalette::Text));
    // Elided only when the token is wider than the whole line.
    const QString& tok = tokens_[int(i)];
    const bool fits = text_w[i] + 2 * kPadX <= r.width();
    p.drawText(r.adjusted(kPadX, 0, fits ? 0 : -kPadX, 0), Qt::AlignLeft | Qt::AlignVCenter,
               fits ? tok : fm.elidedText(tok, Qt::ElideRight, r.width() - 2 * kPadX));
    if (int(i) == current_) {
      p.setPen(QPen(QColor(0x20, 0x20, 0x20), 2));
      p.setBrush(Qt::NoBrush);
      p.drawRect(r.adjusted(1, 1, -1, -1));
    }
  }
}

void TokenText::mouseMoveEvent(QMouseEvent* event) {
  const int i = tokenAt(event->position().toPoint());
  if (i != hover_) {
    hover_ = i;
    emit hovered(i);
  }
  QWidget::mouseMoveEvent(event);
}

void TokenText::leaveEvent(QEvent* event) {
  if (hover_ != -1) {
    hover_ = -1;
    emit hovered(-1);
  }
  QWidget::leaveEvent(event);
}

void TokenText::changeEvent(QEvent* event) {
  // QFont::key() leaves out some of what a width depends on (kerning, hinting): measure again.
  if (event->type() == QEvent::FontChange) text_widths_font_.clear();
  QWidget::changeEvent(event);
}

// ---- TranslationPanel -------------------------------------------------------------------------

TranslationPanel::TranslationPanel(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(2);
  auto* row = new QHBoxLayout;
  row->setSpacing(12);
  source_label_ = new QLabel(tr("<b>Source</b>"), this);
  output_label_ = new QLabel(tr("<b>Translation</b>"), this);
  source_ = new TokenText(this);
  output_ = new TokenText(this);
  source_box_ = new QWidget(this);
  auto* sl = new QVBoxLayout(source_box_);
  sl->setContentsMargins(0, 0, 0, 0);
  sl->setSpacing(2);
  sl->addWidget(source_label_);
  sl->addWidget(source_, 1);
  auto* ol = new QVBoxLayout;
  ol->setSpacing(2);
  ol->addWidget(output_label_);
  ol->addWidget(output_, 1);
  // Side by side; a model with one sequence hides the source and the output takes the width.
  row->addWidget(source_box_, 1);
  row->addLayout(ol, 1);
  v->addLayout(row);
  caption_ = new QLabel(this);
  caption_->setForegroundRole(QPalette::PlaceholderText);
  caption_->setWordWrap(true);
  v->addWidget(caption_);
  connect(source_, &TokenText::hovered, this, &TranslationPanel::hoverSource);
  connect(output_, &TokenText::hovered, this, &TranslationPanel::hoverOutput);
}

void TranslationPanel::setContent(const Snapshot* snap, const ModelConfig* config,
                                  const AttentionSelection& sel, int upto_step) {
  weights_.clear();
  n_out_ = n_keys_ = 0;
  if (!snap || !snap->trace || !config) {
    source_->setTokens({});
    output_->setTokens({});
    caption_->clear();
    return;
  }
  const Trace& t = *snap->trace;
  const int b = std::clamp(sel.batch, 0, std::max(0, t.batch - 1));
  one_sequence_ = !config->hasCross();
  source_box_->setVisible(!one_sequence_);

  // The words shown as the output, and the attention row behind each (-1: none). A frame of the
  // decode (upto_step) shows only the words written up to that step.
  QStringList out;
  std::vector<int> rows;
  if (!snap->batch && !snap->steps.empty() && config->hasDecoder()) {
    if (one_sequence_) {  // the prompt and what followed, as one text
      out << snap->steps.front().input;
      rows.push_back(-1);
    }
    const int last = upto_step >= 0 && upto_step < int(snap->steps.size())
                         ? snap->steps[size_t(upto_step)].position
                         : -1;
    for (const StepInfo& s : snap->steps)
      if (s.chosen_id >= 0 && (last < 0 || s.position <= last)) {
        out << s.chosen;
        rows.push_back(s.position);
      }
  } else if (config->hasDecoder() && b < int(t.tgt_tokens.size())) {
    const QStringList fed = toQ(t.tgt_tokens[size_t(b)]);
    for (int k = one_sequence_ ? 0 : 1; k < fed.size(); ++k) {
      out << fed[k];
      rows.push_back(k - 1);
    }
  } else if (b < int(t.src_tokens.size())) {  // encoder-only: the input, row by row
    out = toQ(t.src_tokens[size_t(b)]);
    for (int k = 0; k < out.size(); ++k) rows.push_back(k);
  }

  // The attention that tints: the selection when it is of the kind shown, else the last layer's
  // mean of the heads.
  const AttentionKind kind = config->hasCross()     ? AttentionKind::Cross
                             : config->hasDecoder() ? AttentionKind::DecoderSelf
                                                    : AttentionKind::EncoderSelf;
  AttentionSelection s = sel;
  if (s.kind != kind) {
    s.kind = kind;
    s.layer = t.layers(kind) - 1;
    s.head = -1;
  }
  s = clampSelection(t, s);
  s.batch = b;
  const AttentionBlock* block = t.block(kind, s.layer);
  if (block) {
    n_keys_ = block->k_len;
    n_out_ = int(out.size());
    weights_.assign(size_t(n_out_) * n_keys_, 0.0f);
    const int h0 = s.head < 0 ? 0 : s.head, h1 = s.head < 0 ? block->heads : s.head + 1;
    for (int k = 0; k < n_out_; ++k) {
      const int r = rows[size_t(k)];
      if (r < 0 || r >= block->q_len) continue;
      for (int h = h0; h < h1; ++h)
        for (int j = 0; j < n_keys_; ++j)
          weights_[size_t(k) * n_keys_ + j] += block->prob(b, h, r, j) / float(h1 - h0);
    }
    caption_->setText(tr("Hover a word to see %1 (%2, %3 layer %4, %5)")
                          .arg(one_sequence_ ? tr("the words it looked at")
                                             : tr("where it looked on the other side"))
                          .arg(kindTitle(kind).toLower())
                          .arg(kind == AttentionKind::EncoderSelf ? tr("encoder") : tr("decoder"))
                          .arg(s.layer + 1)
                          .arg(s.head < 0 ? tr("mean of heads") : tr("head %1").arg(s.head + 1)));
  }
  const QStringList src = config->hasCross() && b < int(t.src_tokens.size())
                              ? toQ(t.src_tokens[size_t(b)])
                              : QStringList();
  source_->setTokens(src);
  output_->setTokens(out);
  const bool enc_only = !config->hasDecoder();
  output_label_->setText(enc_only        ? tr("<b>Input</b>")
                         : one_sequence_ ? tr("<b>Prompt and continuation</b>")
                                         : tr("<b>Translation</b>"));
  output_->setPlaceholder(tr("(nothing decoded yet)"));
}

void TranslationPanel::hoverOutput(int k) {
  output_->setCurrent(k);
  source_->setCurrent(-1);
  TokenText* keys = one_sequence_ ? output_ : source_;
  if (k < 0 || k >= n_out_) {
    source_->setWeights({});
    output_->setWeights({});
    return;
  }
  std::vector<float> w(weights_.begin() + ptrdiff_t(k) * n_keys_,
                       weights_.begin() + ptrdiff_t(k + 1) * n_keys_);
  keys->setWeights(normalized(std::move(w)));
}

void TranslationPanel::hoverSource(int j) {
  source_->setCurrent(j);
  output_->setCurrent(-1);
  if (j < 0 || j >= n_keys_ || one_sequence_) {
    output_->setWeights({});
    source_->setWeights({});
    return;
  }
  std::vector<float> w(size_t(n_out_), 0.0f);
  for (int k = 0; k < n_out_; ++k) w[size_t(k)] = weights_[size_t(k) * n_keys_ + j];
  output_->setWeights(normalized(std::move(w)));
}

}  // namespace attnviz::gui

// The translation as a person reads it: the source and the decoded output as sentences side by
// side. The word under the mouse is outlined, and the other side is tinted by attention: hover an
// output word to see where the decoder looked when it wrote it, a source word to see which output
// words looked at it. Decoder-only and encoder-only models show their one sequence, tinted by its
// self-attention.
#pragma once

#include <QWidget>
#include <vector>

#include "session/attention_data.h"
#include "session/engine.h"

class QLabel;

namespace attnviz::gui {

// Tokens in reading order, wrapped to the width; each can be tinted (0 … 1) and outlined.
class TokenText : public QWidget {
  Q_OBJECT
 public:
  explicit TokenText(QWidget* parent = nullptr);
  void setTokens(const QStringList& tokens);
  void setWeights(std::vector<float> weights);  // empty: no tint
  void setCurrent(int index);                   // outlined; -1 none
  void setPlaceholder(const QString& text);
  const QStringList& tokens() const { return tokens_; }
  const std::vector<float>& weights() const { return weights_; }
  int current() const { return current_; }
  QRect tokenRect(int index) const;
  int tokenAt(QPoint pos) const;

  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void hovered(int index);  // -1 when the mouse leaves the tokens

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  std::vector<QRect> layoutFor(int width) const;
  // Each token's text width, measured once per tokens and font (layouts run on every paint,
  // size query and mouse move; a long source has a thousand tokens).
  const std::vector<int>& textWidths() const;
  QStringList tokens_;
  mutable std::vector<int> text_widths_;
  mutable QString text_widths_font_;  // QFont::key() of text_widths_; empty: not measured
  std::vector<float> weights_;
  int current_ = -1, hover_ = -1;
  QString placeholder_;
};

class TranslationPanel : public QWidget {
  Q_OBJECT
 public:
  explicit TranslationPanel(QWidget* parent = nullptr);
  // Shows the snapshot's sentence; `sel` picks the attention that tints (cross-attention of its
  // layer and head when it is cross-attention, else the last layer's mean of heads); with
  // `upto_step` (a frame of the decode), only the words written up to that step (-1: all).
  void setContent(const Snapshot* snap, const ModelConfig* config, const AttentionSelection& sel,
                  int upto_step = -1);
  TokenText* sourceText() const { return source_; }
  TokenText* outputText() const { return output_; }
  QLabel* captionLabel() const { return caption_; }
  // Hover, for tests and for the views around: highlights as the mouse would.
  void hoverSource(int index);
  void hoverOutput(int index);

 private:
  // [outputs, keys] the weights of each output word over the key tokens (the source for an
  // encoder-decoder, else the same sequence).
  std::vector<float> weights_;
  int n_out_ = 0, n_keys_ = 0;
  bool one_sequence_ = false;  // decoder-only or encoder-only: keys are the output's own tokens
  int key_offset_ = 0;         // one sequence: output word k is token k + key_offset_ of the keys
  QLabel* source_label_;
  QLabel* output_label_;
  QLabel* caption_;
  TokenText* source_;
  TokenText* output_;
  QWidget* source_box_;
};

}  // namespace attnviz::gui

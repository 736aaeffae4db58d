#include "session/attention_data.h"

#include <QObject>
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/explanations.h"
#include "widgets/token_label.h"

namespace attnviz::gui {

AttentionSelection clampSelection(const Trace& trace, AttentionSelection s) {
  if (!trace.has(s.kind))
    for (AttentionKind k : kAttentionKinds)
      if (trace.has(k)) {
        s.kind = k;
        break;
      }
  s.layer = std::clamp(s.layer, 0, std::max(0, trace.layers(s.kind) - 1));
  if (s.head >= trace.heads()) s.head = trace.heads() - 1;
  if (s.head < -1) s.head = -1;
  s.batch = std::clamp(s.batch, 0, std::max(0, trace.batch - 1));
  return s;
}

std::vector<AttentionKind> modelKinds(const ModelConfig& config) {
  std::vector<AttentionKind> kinds;
  if (config.hasEncoder()) kinds.push_back(AttentionKind::EncoderSelf);
  if (config.hasDecoder()) kinds.push_back(AttentionKind::DecoderSelf);
  if (config.hasCross()) kinds.push_back(AttentionKind::Cross);
  return kinds;
}

QStringList queryLabels(const Trace& trace, AttentionKind kind, int batch) {
  if (batch < 0 || batch >= trace.batch || trace.queryLen(kind) == 0) return {};
  return tokenLabels(trace.queryTokens(kind, batch));
}

QStringList keyLabels(const Trace& trace, AttentionKind kind, int batch) {
  if (batch < 0 || batch >= trace.batch || trace.keyLen(kind) == 0) return {};
  return tokenLabels(trace.keyTokens(kind, batch));
}

QString queryAxisTitle(AttentionKind kind) {
  return kind == AttentionKind::EncoderSelf
             ? QObject::tr("queries ↓ · input tokens")
             : QObject::tr("queries ↓ · target tokens (decoder input)");
}

QString keyAxisTitle(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::EncoderSelf:
      return QObject::tr("keys → · input tokens");
    case AttentionKind::DecoderSelf:
      return QObject::tr("keys → · target tokens");
    case AttentionKind::Cross:
      return QObject::tr("keys → · source tokens (encoder output)");
  }
  return {};
}

QString kindTitle(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::EncoderSelf:
      return QObject::tr("Encoder self-attention");
    case AttentionKind::DecoderSelf:
      return QObject::tr("Decoder masked self-attention");
    case AttentionKind::Cross:
      return QObject::tr("Cross-attention (encoder–decoder)");
  }
  return {};
}

QString selectionTitle(const AttentionSelection& s) {
  const QString side =
      s.kind == AttentionKind::EncoderSelf ? QObject::tr("encoder") : QObject::tr("decoder");
  const QString head =
      s.head < 0 ? QObject::tr("mean of heads") : QObject::tr("head %1").arg(s.head + 1);
  return QObject::tr("%1 · %2 layer %3 · %4")
      .arg(kindTitle(s.kind), side)
      .arg(s.layer + 1)
      .arg(head);
}

QString kvHeadText(const ModelConfig& c, int head) {
  if (head < 0 || c.kvHeads() == c.n_heads) return {};
  if (c.kvHeads() == 1)
    return QObject::tr("query head %1 reads the one key/value head — all %2 query heads share it")
        .arg(head + 1)
        .arg(c.n_heads);
  return QObject::tr("query head %1 reads key/value head %2 of %3 — %4 query heads share it")
      .arg(head + 1)
      .arg(c.kvHeadOf(head) + 1)
      .arg(c.kvHeads())
      .arg(c.queriesPerKvHead());
}

QString kvHeadShort(const ModelConfig& c, int head) {
  if (head < 0 || c.kvHeads() == c.n_heads) return {};
  return QObject::tr("reads K/V head %1 of %2").arg(c.kvHeadOf(head) + 1).arg(c.kvHeads());
}

QString kvHeadsSummary(const ModelConfig& c) {
  return QString::fromStdString(attnviz::kvHeadsSummary(c));
}

QString kvGroupsText(const ModelConfig& c) {
  return QString::fromStdString(attnviz::kvGroupsText(c));
}

std::vector<float> attentionMatrix(const AttentionBlock& a, const AttentionSelection& s,
                                   MatrixValues which, float mask_fill) {
  const int Tq = a.q_len, Tk = a.k_len;
  std::vector<float> out(size_t(Tq) * Tk, 0.0f);
  if (s.batch < 0 || s.batch >= a.batch) return out;
  const bool scores = which != MatrixValues::Probabilities;
  const int h0 = s.head < 0 ? 0 : s.head;
  const int h1 = s.head < 0 ? a.heads : s.head + 1;
  auto tile = [&](int h, float* dst) {
    if (scores)
      a.scoreTile(s.batch, h, 0, Tq, 0, Tk, dst);
    else
      a.probTile(s.batch, h, 0, Tq, 0, Tk, dst);
  };
  if (h1 - h0 == 1) {
    tile(h0, out.data());
  } else {  // the mean of the heads
    const float inv = 1.0f / float(h1 - h0);
    std::vector<float> head(out.size());
    for (int h = h0; h < h1; ++h) {
      tile(h, head.data());
      for (size_t c = 0; c < out.size(); ++c) out[c] += head[c] * inv;
    }
  }
  if (which == MatrixValues::MaskedScores)
    for (int i = 0; i < Tq; ++i)
      for (int j = 0; j < Tk; ++j)
        if (a.masked(s.batch, i, j)) out[size_t(i) * Tk + j] = mask_fill;
  return out;
}

std::vector<uint8_t> maskMatrix(const AttentionBlock& a, int batch) {
  std::vector<uint8_t> out(size_t(a.q_len) * a.k_len, 0);
  if (batch < 0 || batch >= a.batch) return out;
  a.maskTile(batch, 0, a.q_len, 0, a.k_len, out.data());
  return out;
}

HeatmapData attentionHeatmap(const Trace& trace, const AttentionSelection& sel, MatrixValues which,
                             bool scale_to_max, float mask_fill) {
  HeatmapData d;
  const AttentionSelection s = clampSelection(trace, sel);
  const AttentionBlock* block = trace.block(s.kind, s.layer);
  if (!block) return d;
  const AttentionBlock& a = *block;
  d.rows = a.q_len;
  d.cols = a.k_len;
  d.masked = maskMatrix(a, s.batch);
  d.probs = attentionMatrix(a, s, MatrixValues::Probabilities, mask_fill);
  d.scores = attentionMatrix(a, s, MatrixValues::Scores, mask_fill);
  d.row_labels = queryLabels(trace, s.kind, s.batch);
  d.col_labels = keyLabels(trace, s.kind, s.batch);
  d.row_title = queryAxisTitle(s.kind);
  d.col_title = keyAxisTitle(s.kind);
  if (s.head < 0) d.tooltip_note = QObject::tr("(mean of %1 heads)").arg(a.heads);
  switch (which) {
    case MatrixValues::Probabilities: {
      d.values = d.probs;
      d.value_name = QObject::tr("probability");
      d.vmin = 0;
      d.vmax = 1;
      if (scale_to_max) {
        float mx = 0;
        for (size_t k = 0; k < d.values.size(); ++k)
          if (d.masked.empty() || !d.masked[k]) mx = std::max(mx, d.values[k]);
        d.vmax = mx > 0 ? mx : 1;
      }
      break;
    }
    case MatrixValues::Scores:
    case MatrixValues::MaskedScores: {
      d.values = attentionMatrix(a, s, which, mask_fill);
      d.value_name =
          which == MatrixValues::Scores ? QObject::tr("score") : QObject::tr("masked score");
      // The colour scale spans the unmasked scores; masked cells are drawn as masked anyway.
      float lo = std::numeric_limits<float>::infinity(), hi = -lo;
      for (size_t k = 0; k < d.scores.size(); ++k) {
        if (!d.masked.empty() && d.masked[k]) continue;
        if (!std::isfinite(d.scores[k])) continue;
        lo = std::min(lo, d.scores[k]);
        hi = std::max(hi, d.scores[k]);
      }
      if (!(lo <= hi)) lo = hi = 0;
      d.vmin = lo;
      d.vmax = hi > lo ? hi : lo + 1;
      // Before the mask nothing is masked yet: every raw score is coloured; the tooltip still
      // says which cells the mask will hit.
      if (which == MatrixValues::Scores) d.draw_mask = false;
      d.value_in_tooltip = which == MatrixValues::MaskedScores;
      break;
    }
  }
  return d;
}

MaskParts maskParts(const Trace& trace, AttentionKind kind, int batch, const ModelConfig& config,
                    const MaskOptions& masks) {
  MaskParts m;
  const AttentionBlock* block = trace.block(kind, 0);
  if (!block) return m;
  const AttentionBlock& a = *block;
  m.q_len = a.q_len;
  m.k_len = a.k_len;
  if (batch < 0 || batch >= trace.batch) return m;
  const bool dec = kind == AttentionKind::DecoderSelf;
  const std::vector<int>& keys = dec ? trace.tgt_ids[batch] : trace.src_ids[batch];
  const int pad = dec ? config.tgt_pad_id : config.src_pad_id;
  m.padding = paddingMask({keys}, m.q_len, pad);
  m.padding.resize(size_t(m.q_len) * m.k_len, 0);
  if (dec) m.subsequent = subsequentMask(m.q_len);
  m.applied = maskMatrix(a, batch);
  m.padding_on = dec ? masks.tgt_padding : masks.src_padding;
  m.subsequent_on = dec && masks.subsequent;
  return m;
}

HeatmapData maskHeatmap(const std::vector<uint8_t>& mask, int q_len, int k_len,
                        const QStringList& rows, const QStringList& cols, const QString& title) {
  HeatmapData d;
  d.rows = q_len;
  d.cols = k_len;
  d.values.assign(size_t(q_len) * k_len, 0.0f);
  d.masked = mask;
  d.masked.resize(d.values.size(), 0);
  d.mask_only = true;
  d.row_labels = rows;
  d.col_labels = cols;
  d.title = title;
  d.value_name = QObject::tr("mask");
  return d;
}

QStringList masksOff(const MaskOptions& m, const ModelConfig& c) {
  QStringList off;
  if (c.hasDecoder() && !m.subsequent) off << QObject::tr("look-ahead");
  if (c.hasEncoder() && c.src_padding_mask && !m.src_padding)
    off << (c.hasDecoder() ? QObject::tr("source padding") : QObject::tr("padding"));
  if (c.hasDecoder() && c.tgt_padding_mask && !m.tgt_padding)
    off << (c.hasEncoder() ? QObject::tr("target padding") : QObject::tr("padding"));
  return off;
}

QString maskDescription(AttentionKind kind, const MaskOptions& m, const ModelConfig& c,
                        bool any_masked) {
  return QString::fromStdString(attnviz::maskDescription(kind, m, c, any_masked));
}

QString maskFillText(float fill) {
  return QString::fromStdString(attnviz::maskFillText(fill));
}

QString shapeString(std::initializer_list<long long> dims) {
  return QString::fromStdString(attnviz::shapeString(dims));
}

}  // namespace attnviz::gui

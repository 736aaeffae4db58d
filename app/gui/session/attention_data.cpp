#include "session/attention_data.h"

#include <QObject>
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

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

namespace {

// One selection's cells computed on demand from the queries and keys the block kept: a head's (or
// the mean of the heads') probabilities, scores and mask, tile by tile, on any thread.
class AttentionCells final : public HeatmapCells {
 public:
  AttentionCells(std::shared_ptr<const AttentionBlock> block, const AttentionSelection& s,
                 MatrixValues which, float mask_fill)
      : a_(std::move(block)),
        batch_(s.batch),
        h0_(s.head < 0 ? 0 : s.head),
        h1_(s.head < 0 ? a_->heads : s.head + 1),
        which_(which),
        fill_(mask_fill) {}
  int rows() const override { return a_->q_len; }
  int cols() const override { return a_->k_len; }
  bool has(Field) const override { return true; }
  bool hasMask() const override { return true; }
  void tile(Field field, int r0, int r1, int c0, int c1, float* out) const override {
    const size_t n = size_t(r1 - r0) * (c1 - c0);
    std::fill(out, out + n, 0.0f);
    if (n == 0 || batch_ < 0 || batch_ >= a_->batch) return;
    const bool scores =
        field == Field::Scores || (field == Field::Values && which_ != MatrixValues::Probabilities);
    auto headTile = [&](int h, float* dst) {
      if (scores)
        a_->scoreTile(batch_, h, r0, r1, c0, c1, dst);
      else
        a_->probTile(batch_, h, r0, r1, c0, c1, dst);
    };
    if (h1_ - h0_ == 1) {
      headTile(h0_, out);
    } else {  // the mean of the heads, summed in head order
      const float inv = 1.0f / float(h1_ - h0_);
      std::vector<float> head(n);
      for (int h = h0_; h < h1_; ++h) {
        headTile(h, head.data());
        for (size_t c = 0; c < n; ++c) out[c] += head[c] * inv;
      }
    }
    if (field == Field::Values && which_ == MatrixValues::MaskedScores) {
      const int w = c1 - c0;
      for (int i = r0; i < r1; ++i)
        for (int j = c0; j < c1; ++j)
          if (a_->masked(batch_, i, j)) out[size_t(i - r0) * w + (j - c0)] = fill_;
    }
  }
  void maskTile(int r0, int r1, int c0, int c1, uint8_t* out) const override {
    const size_t n = size_t(r1 - r0) * (c1 - c0);
    std::fill(out, out + n, uint8_t{0});
    if (batch_ < 0 || batch_ >= a_->batch) return;
    a_->maskTile(batch_, r0, r1, c0, c1, out);
  }

 private:
  std::shared_ptr<const AttentionBlock> a_;
  int batch_, h0_, h1_;
  MatrixValues which_;
  float fill_;
};

}  // namespace

std::vector<float> attentionMatrix(const AttentionBlock& a, const AttentionSelection& s,
                                   MatrixValues which, float mask_fill) {
  // The block is only borrowed here: an owner-less pointer to it.
  const AttentionCells cells(std::shared_ptr<const AttentionBlock>(std::shared_ptr<void>(), &a), s,
                             which, mask_fill);
  std::vector<float> out(size_t(a.q_len) * a.k_len, 0.0f);
  cells.tile(HeatmapCells::Field::Values, 0, a.q_len, 0, a.k_len, out.data());
  return out;
}

std::vector<uint8_t> maskMatrix(const AttentionBlock& a, int batch) {
  std::vector<uint8_t> out(size_t(a.q_len) * a.k_len, 0);
  if (batch < 0 || batch >= a.batch) return out;
  a.maskTile(batch, 0, a.q_len, 0, a.k_len, out.data());
  return out;
}

std::shared_ptr<const AttentionBlock> blockForTiles(const Trace& trace, AttentionKind kind,
                                                    int layer) {
  const AttentionBlock* a = trace.block(kind, layer);
  if (!a) return nullptr;
  auto copy = std::make_shared<AttentionBlock>(*a);
  HostVector<float>().swap(copy->v);
  return copy;
}

HeatmapData attentionHeatmap(const Trace& trace, const AttentionSelection& sel, MatrixValues which,
                             bool scale_to_max, float mask_fill,
                             std::shared_ptr<const AttentionBlock> block) {
  HeatmapData d;
  const AttentionSelection s = clampSelection(trace, sel);
  if (!block || block->kind != s.kind || block->layer != s.layer)
    block = blockForTiles(trace, s.kind, s.layer);
  if (!block) return d;
  const AttentionBlock& a = *block;
  d.rows = a.q_len;
  d.cols = a.k_len;
  d.cells = std::make_shared<AttentionCells>(block, s, which, mask_fill);
  d.row_labels = queryLabels(trace, s.kind, s.batch);
  d.col_labels = keyLabels(trace, s.kind, s.batch);
  d.row_title = queryAxisTitle(s.kind);
  d.col_title = keyAxisTitle(s.kind);
  if (s.head < 0) d.tooltip_note = QObject::tr("(mean of %1 heads)").arg(a.heads);
  switch (which) {
    case MatrixValues::Probabilities:
      d.value_name = QObject::tr("probability");
      d.vmin = 0;
      d.vmax = 1;
      if (scale_to_max) d.scale = HeatmapData::Scale::ZeroToMax;
      break;
    case MatrixValues::Scores:
    case MatrixValues::MaskedScores:
      d.value_name =
          which == MatrixValues::Scores ? QObject::tr("score") : QObject::tr("masked score");
      // The colour scale spans the unmasked scores; masked cells are drawn as masked anyway.
      d.scale = HeatmapData::Scale::MinToMax;
      // Before the mask nothing is masked yet: every raw score is coloured; the tooltip still
      // says which cells the mask will hit.
      if (which == MatrixValues::Scores) d.draw_mask = false;
      d.value_in_tooltip = which == MatrixValues::MaskedScores;
      break;
  }
  return d;
}

namespace {

// A mask as its rule: key j masked for every query (padding), and with `causal` every key after
// the query's position (pos0 + i).
class MaskRuleCells final : public HeatmapCells {
 public:
  MaskRuleCells(int rows, std::vector<uint8_t> key_masked, bool causal, int pos0)
      : rows_(rows), keys_(std::move(key_masked)), causal_(causal), pos0_(pos0) {}
  int rows() const override { return rows_; }
  int cols() const override { return int(keys_.size()); }
  bool has(Field f) const override { return f == Field::Values; }
  bool hasMask() const override { return true; }
  void tile(Field, int r0, int r1, int c0, int c1, float* out) const override {
    std::fill(out, out + size_t(r1 - r0) * (c1 - c0), 0.0f);
  }
  void maskTile(int r0, int r1, int c0, int c1, uint8_t* out) const override {
    for (int i = r0; i < r1; ++i)
      for (int j = c0; j < c1; ++j) *out++ = keys_[size_t(j)] || (causal_ && j > pos0_ + i);
  }

 private:
  int rows_;
  std::vector<uint8_t> keys_;
  bool causal_;
  int pos0_;
};

}  // namespace

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
  std::vector<uint8_t> padded(size_t(m.k_len), 0);
  for (int j = 0; j < m.k_len && j < int(keys.size()); ++j) padded[size_t(j)] = keys[j] == pad;
  m.padding = std::make_shared<MaskRuleCells>(m.q_len, std::move(padded), false, 0);
  if (dec)
    m.subsequent =
        std::make_shared<MaskRuleCells>(m.q_len, std::vector<uint8_t>(size_t(m.k_len), 0), true, 0);
  std::vector<uint8_t> applied_keys(a.mask.key_masked[size_t(batch)].begin(),
                                    a.mask.key_masked[size_t(batch)].begin() + a.k_len);
  m.applied =
      std::make_shared<MaskRuleCells>(m.q_len, std::move(applied_keys), a.mask.causal, a.q_pos0);
  m.padding_on = dec ? masks.tgt_padding : masks.src_padding;
  m.subsequent_on = dec && masks.subsequent;
  return m;
}

HeatmapData maskHeatmap(std::shared_ptr<const HeatmapCells> mask, const QStringList& rows,
                        const QStringList& cols, const QString& title) {
  HeatmapData d;
  if (!mask) return d;
  d.rows = mask->rows();
  d.cols = mask->cols();
  d.cells = std::move(mask);
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

#include "views/atlas/atlas_table.h"

#include "model/trace_dump.h"
#include "session/teaching_util.h"
#include "views/head_stat_texts.h"

namespace attnviz::gui {

// A head's block as the app names it: "Encoder self", "Decoder self", "Cross".
QString blockName(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::EncoderSelf:
      return QObject::tr("encoder self");
    case AttentionKind::DecoderSelf:
      return QObject::tr("decoder self");
    case AttentionKind::Cross:
      return QObject::tr("cross");
  }
  return {};
}

// A block kind's hue, a layer's shade: later layers darker.
QColor headColor(AttentionKind kind, int layer, int layers) {
  const int hue = kind == AttentionKind::EncoderSelf   ? 215
                  : kind == AttentionKind::DecoderSelf ? 135
                                                       : 25;
  const double t = layers <= 1 ? 0.5 : double(layer) / (layers - 1);
  return QColor::fromHsv(hue, int(140 + 100 * t), int(240 - 150 * t));
}

QString meanSd(double mean, double sd) {
  if (std::isnan(mean)) return QStringLiteral("—");
  return std::isnan(sd) ? num(mean, 3) : QStringLiteral("%1 ± %2").arg(num(mean, 3), num(sd, 3));
}

// ---- the measures and the table ---------------------------------------------------------------

std::vector<AtlasMeasure> atlasMeasures() {
  std::vector<AtlasMeasure> m;
  for (HeadStat s : kHeadStats) {
    const HeadStatText& t = headStatText(s);
    m.push_back({int(s), t.title(), t.explanation});
  }
  const std::vector<AtlasMeasure> scores = {
      {-1, QObject::tr("Induction score (0–1)"),
       QObject::tr("On a random token sequence repeated twice: the attention of the second copy "
                   "to the token after the earlier occurrence of the current token (1 = an "
                   "induction head). One number per head, from the model, not the corpus"),
       0},
      {-1, QObject::tr("Copying score (−1…1)"),
       QObject::tr("Σ Re λ / Σ |λ| over the eigenvalues of the head's OV circuit from tokens to "
                   "logits: 1 = it raises the tokens it attends to. One number per head, from the "
                   "weights"),
       1},
  };
  m.insert(m.end(), scores.begin(), scores.end());
  // The bounded ones' whole range: shares and scores of 0–1, τ and the copying score of −1…1.
  for (AtlasMeasure& a : m) {
    const bool signed_range = a.stat == int(HeadStat::Monotonicity) || a.score == 1;
    if (a.stat == int(HeadStat::Entropy) || a.stat == int(HeadStat::Distance)) {
      a.low = 0;  // from 0, no upper bound
    } else {
      a.low = signed_range ? -1 : 0;
      a.high = 1;
    }
  }
  return m;
}

AtlasTableModel::AtlasTableModel(QObject* parent)
    : QAbstractTableModel(parent), measures_(atlasMeasures()) {}

void AtlasTableModel::setAtlas(std::shared_ptr<const Atlas> atlas,
                               std::shared_ptr<const AtlasScores> scores) {
  beginResetModel();
  atlas_ = std::move(atlas);
  scores_ = std::move(scores);
  endResetModel();
}

double AtlasTableModel::mean(int row, int measure) const {
  if (!atlas_ || row < 0 || row >= int(atlas_->heads.size())) return NAN;
  const AtlasMeasure& m = measures_.at(size_t(measure));
  if (m.stat >= 0) return atlas_->heads[size_t(row)].stats[size_t(m.stat)].meanOrNaN();
  if (!scores_) return NAN;
  const std::vector<double>& v = m.score == 0 ? scores_->induction : scores_->copying;
  return size_t(row) < v.size() ? v[size_t(row)] : NAN;
}

double AtlasTableModel::sd(int row, int measure) const {
  if (!atlas_ || row < 0 || row >= int(atlas_->heads.size())) return NAN;
  const AtlasMeasure& m = measures_.at(size_t(measure));
  return m.stat >= 0 ? atlas_->heads[size_t(row)].stats[size_t(m.stat)].sd() : NAN;
}

int AtlasTableModel::rowOf(AttentionKind kind, int layer, int head) const {
  if (!atlas_) return -1;
  for (size_t r = 0; r < atlas_->heads.size(); ++r) {
    const AtlasHead& h = atlas_->heads[r];
    if (h.kind == kind && h.layer == layer && h.head == head) return int(r);
  }
  return -1;
}

std::string AtlasTableModel::csv() const {
  std::vector<std::string> header = {"block", "layer", "head"};
  for (const AtlasMeasure& m : measures_) {
    if (m.stat < 0) {
      header.push_back(m.score == 0 ? "induction" : "copying");
      continue;
    }
    const std::string name = headStatName(kHeadStats[size_t(m.stat)]);
    header.push_back(name + "_mean");
    header.push_back(name + "_sd");
  }
  std::string out = csvLine(header);
  for (int r = 0; r < rowCount(); ++r) {
    const AtlasHead& h = atlas_->heads[size_t(r)];
    std::vector<std::string> row = {attentionKindName(h.kind), std::to_string(h.layer + 1),
                                    std::to_string(h.head + 1)};
    // An empty value where a statistic does not apply (NaN), as headStatsCsv writes it.
    auto number = [](double v) { return std::isnan(v) ? std::string() : csvNumber(v); };
    for (int m = 0; m < int(measures_.size()); ++m) {
      row.push_back(number(mean(r, m)));
      if (measures_[size_t(m)].stat >= 0) row.push_back(number(sd(r, m)));
    }
    out += csvLine(row);
  }
  return out;
}

int AtlasTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !atlas_ ? 0 : int(atlas_->heads.size());
}

int AtlasTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : FirstMeasure + int(measures_.size());
}

QVariant AtlasTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const int r = index.row(), col = index.column();
  const AtlasHead& h = atlas_->heads[size_t(r)];
  if (role == SortRole) {
    if (col == Block) return double(int(h.kind)) * 1e6 + h.layer * 1e3 + h.head;
    if (col == Layer) return h.layer + 1;
    if (col == Head) return h.head + 1;
    return mean(r, col - FirstMeasure);
  }
  if (role == Qt::DisplayRole) {
    if (col == Block) return blockName(h.kind);
    if (col == Layer) return h.layer + 1;
    if (col == Head) return h.head + 1;
    return meanSd(mean(r, col - FirstMeasure), sd(r, col - FirstMeasure));
  }
  if (role == Qt::TextAlignmentRole)
    return col == Block ? int(Qt::AlignLeft | Qt::AlignVCenter)
                        : int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::DecorationRole && col == Block) {
    int layers = 0;
    for (const AtlasHead& o : atlas_->heads)
      if (o.kind == h.kind) layers = std::max(layers, o.layer + 1);
    return headColor(h.kind, h.layer, layers);
  }
  return {};
}

QVariant AtlasTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return {};
  if (section < FirstMeasure) {
    static const char* names[] = {QT_TR_NOOP("Block"), QT_TR_NOOP("Layer"), QT_TR_NOOP("Head")};
    static const char* tips[] = {
        QT_TR_NOOP("Which attention: encoder self-, decoder self- or cross-attention"),
        QT_TR_NOOP("Layer (from 1)"), QT_TR_NOOP("Head (from 1)")};
    if (role == Qt::DisplayRole) return tr(names[section]);
    if (role == Qt::ToolTipRole) return tr(tips[section]);
    return {};
  }
  const AtlasMeasure& m = measures_.at(size_t(section - FirstMeasure));
  if (role == Qt::DisplayRole) return m.title;
  if (role == Qt::ToolTipRole)
    return m.stat < 0 ? m.tip + QLatin1Char('.')
                      : tr("%1. Mean ± standard deviation over the corpus's sentences").arg(m.tip);
  return {};
}

bool AtlasProxy::lessThan(const QModelIndex& a, const QModelIndex& b) const {
  const double x = a.data(AtlasTableModel::SortRole).toDouble();
  const double y = b.data(AtlasTableModel::SortRole).toDouble();
  // NaN ("does not apply") sorts after every number in ascending order.
  if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
  if (x != y) return x < y;
  return a.row() < b.row();
}

}  // namespace attnviz::gui

// The Atlas view's measures and its table: what each head is measured by (the core's HeadStats
// over the corpus, the model's circuit scores), one row per head with every measure's mean ± sd,
// and the proxy that sorts it.
#pragma once

#include <QAbstractTableModel>
#include <QColor>
#include <QSortFilterProxyModel>
#include <QString>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "model/atlas.h"
#include "model/circuits.h"

namespace attnviz::gui {

// What a head is measured by in the atlas: a statistic of HeadStats (mean ± sd over the corpus) or
// a circuit score of the model (one number per head, no spread).
struct AtlasMeasure {
  int stat = -1;   // index into kHeadStats; -1: a score
  QString title;   // "Previous token", as the axes and the table's header say
  QString tip;     // what it is, with its unit
  int score = -1;  // with stat -1: 0 the induction score, 1 the copying score (model/circuits.h)
  double low = NAN, high = NAN;  // its whole range when bounded (the scatter shows it all)
};
std::vector<AtlasMeasure> atlasMeasures();

// One row per head of the atlas: block, layer and head (from 1), then per measure "mean ± sd".
class AtlasTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Block, Layer, Head, FirstMeasure };
  enum Roles { SortRole = Qt::UserRole + 1 };
  explicit AtlasTableModel(QObject* parent = nullptr);
  void setAtlas(std::shared_ptr<const Atlas> atlas, std::shared_ptr<const AtlasScores> scores);
  const Atlas* atlas() const { return atlas_.get(); }
  const std::vector<AtlasMeasure>& measures() const { return measures_; }
  // The mean and sd of measure m for head `row` (NaN where the measure does not apply).
  double mean(int row, int measure) const;
  double sd(int row, int measure) const;
  int rowOf(AttentionKind kind, int layer, int head) const;
  // The table as CSV: block,layer,head, then per statistic NAME_mean,NAME_sd, then the scores
  // induction,copying (layer and head from 1; an empty value where NaN).
  std::string csv() const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const Atlas> atlas_;
  std::shared_ptr<const AtlasScores> scores_;
  std::vector<AtlasMeasure> measures_;
};

// Sorts by the numbers (NaN — "does not apply" — last).
class AtlasProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;

 protected:
  bool lessThan(const QModelIndex& a, const QModelIndex& b) const override;
};

// A head's block as the atlas names it ("encoder self"), a block kind's hue and a layer's shade
// (later layers darker), and "mean ± sd" with three decimals ("—" for NaN).
QString blockName(AttentionKind kind);
QColor headColor(AttentionKind kind, int layer, int layers);
QString meanSd(double mean, double sd);

}  // namespace attnviz::gui

// The Head statistics view: for every head of every attention block its entropy and where its
// attention goes (the diagonal, the previous token, the first token, BOS / EOS, padding), how far
// it looks and, for cross-attention, how monotonic its alignment is — a sortable table, "find heads
// like this one", CSV export — and the badges those numbers give the Overview's thumbnails.
#pragma once

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QWidget>
#include <vector>

#include "model/atlas.h"
#include "model/head_stats.h"
#include "views/head_badges.h"
#include "views/view.h"

class QComboBox;
class QPushButton;

namespace attnviz::gui {

class HeadStatsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // Block, layer, head and the badge, then one column per HeadStat (in kHeadStats's order, see
  // column()), then the distance to the chosen head.
  enum Column {
    Block,
    Layer,
    Head,
    Pattern,
    FirstStat,
    Likeness = FirstStat + kHeadStatCount,
    ColumnCount
  };
  static constexpr int column(HeadStat stat) { return FirstStat + int(stat); }
  enum Roles { SortRole = Qt::UserRole + 1 };
  explicit HeadStatsModel(QObject* parent = nullptr);
  // keys[r]: the key length of row r's block (to normalise distances).
  void setStats(std::vector<HeadStats> stats, std::vector<int> keys);
  const std::vector<HeadStats>& stats() const { return stats_; }
  // Distances of every head's profile to row `reference`'s (headDistance); -1 clears them.
  void setReference(int reference);
  int reference() const { return reference_; }
  double likeness(int row) const;
  int rowOf(AttentionKind kind, int layer, int head) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  double value(int row, int column) const;
  std::vector<HeadStats> stats_;
  std::vector<int> keys_;
  std::vector<double> likeness_;
  int reference_ = -1;
};

// Sorts by the numbers (NaN — "does not apply" — last) and filters by kind.
class HeadStatsProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;
  void setKindFilter(int kind);  // -1 = every kind

 protected:
  bool lessThan(const QModelIndex& a, const QModelIndex& b) const override;
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

 private:
  int kind_ = -1;
};

class HeadStatsView : public View {
  Q_OBJECT
 public:
  explicit HeadStatsView(AppState* state, QWidget* parent = nullptr);
  QWidget* exportWidget() override { return table_; }
  QTableView* table() const { return table_; }
  HeadStatsModel* model() const { return model_; }
  HeadStatsProxy* proxy() const { return proxy_; }
  // "Find heads like this one" for the selected head; sorts by likeness.
  void findLikeSelected();
  bool exportCsv(const QString& path, QString* error = nullptr) const;

 protected:
  void refresh() override;

 private:
  void selectRowOfSelection();
  QComboBox* kind_filter_;
  QPushButton* like_;
  QPushButton* export_;
  QTableView* table_;
  HeadStatsModel* model_;
  HeadStatsProxy* proxy_;
  bool syncing_ = false;
};

}  // namespace attnviz::gui

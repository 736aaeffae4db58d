#include "views/heads/head_stats_view.h"

#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QStandardItemModel>
#include <QTableView>
#include <cmath>

#include "session/attention_data.h"
#include "session/teaching_util.h"
#include "views/head_stat_texts.h"
#include "widgets/widgets.h"

namespace attnviz::gui {

// ---- model ------------------------------------------------------------------------------------

HeadStatsModel::HeadStatsModel(QObject* parent) : QAbstractTableModel(parent) {}

void HeadStatsModel::setStats(std::vector<HeadStats> stats, std::vector<int> keys) {
  beginResetModel();
  stats_ = std::move(stats);
  keys_ = std::move(keys);
  likeness_.clear();
  reference_ = -1;
  endResetModel();
}

void HeadStatsModel::setReference(int reference) {
  reference_ = reference >= 0 && reference < int(stats_.size()) ? reference : -1;
  likeness_.assign(stats_.size(), NAN);
  if (reference_ >= 0)
    for (size_t r = 0; r < stats_.size(); ++r)
      likeness_[r] =
          headDistance(stats_[size_t(reference_)], stats_[r], keys_[size_t(reference_)], keys_[r]);
  if (rowCount() > 0) emit dataChanged(index(0, Likeness), index(rowCount() - 1, Likeness));
  emit headerDataChanged(Qt::Horizontal, Likeness, Likeness);
}

double HeadStatsModel::likeness(int row) const {
  return row >= 0 && row < int(likeness_.size()) ? likeness_[size_t(row)] : NAN;
}

int HeadStatsModel::rowOf(AttentionKind kind, int layer, int head) const {
  for (size_t r = 0; r < stats_.size(); ++r)
    if (stats_[r].kind == kind && stats_[r].layer == layer && stats_[r].head == head) return int(r);
  return -1;
}

int HeadStatsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(stats_.size());
}

int HeadStatsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

double HeadStatsModel::value(int row, int column) const {
  const HeadStats& s = stats_[size_t(row)];
  if (column >= FirstStat && column < FirstStat + kHeadStatCount)
    return headStatValue(s, kHeadStats[size_t(column - FirstStat)]);
  switch (column) {
    case Block:
      return double(int(s.kind));
    case Layer:
      return s.layer + 1;
    case Head:
      return s.head + 1;
    case Likeness:
      return likeness(row);
    default:
      return NAN;
  }
}

QVariant HeadStatsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= int(stats_.size())) return {};
  const int r = index.row(), col = index.column();
  const HeadStats& s = stats_[size_t(r)];
  if (role == SortRole) {
    if (col == Pattern) return headBadge(s);
    if (col == Block) return double(int(s.kind)) * 1e6 + s.layer * 1e3 + s.head;
    return value(r, col);
  }
  if (role == Qt::DisplayRole) {
    if (col == Block) {
      switch (s.kind) {
        case AttentionKind::EncoderSelf:
          return tr("encoder self");
        case AttentionKind::DecoderSelf:
          return tr("decoder self");
        case AttentionKind::Cross:
          return tr("cross");
      }
    }
    if (col == Pattern) return headBadge(s);
    if (col == Layer || col == Head) return int(value(r, col));
    const double v = value(r, col);
    if (std::isnan(v)) return QStringLiteral("—");
    return num(v, col == Likeness ? 3 : 3);
  }
  if (role == Qt::TextAlignmentRole)
    return col == Block || col == Pattern ? int(Qt::AlignLeft | Qt::AlignVCenter)
                                          : int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::BackgroundRole) {
    // Shares (0 … 1) shaded, so that a head's pattern stands out in the table.
    if (col == column(HeadStat::EntropyNorm) ||
        (col >= column(HeadStat::Diagonal) && col <= column(HeadStat::Padding))) {
      const double v = value(r, col);
      if (std::isnan(v)) return {};
      const int a = int(std::clamp(v, 0.0, 1.0) * 150);
      return QColor(0x3b, 0x7d, 0xd8, a);
    }
    if (col == Likeness && r == reference_) return QColor(0xff, 0x6f, 0x00, 90);
  }
  if (role == Qt::ToolTipRole && col == Pattern) {
    const QString b = headBadge(s);
    return b.isEmpty() ? tr("No single pattern dominates this head")
                       : tr("This head mostly: %1").arg(b);
  }
  return {};
}

QVariant HeadStatsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal) return {};
  if (section >= FirstStat && section < FirstStat + kHeadStatCount) {
    const HeadStatText& t = headStatText(kHeadStats[size_t(section - FirstStat)]);
    if (role == Qt::DisplayRole) return t.column;
    if (role == Qt::ToolTipRole) return t.explanation;
    return {};
  }
  static const char* names[] = {QT_TR_NOOP("Block"), QT_TR_NOOP("Layer"), QT_TR_NOOP("Head"),
                                QT_TR_NOOP("Pattern")};
  static const char* tips[] = {
      QT_TR_NOOP("Which attention: encoder self-, decoder self- or cross-attention"),
      QT_TR_NOOP("Layer (from 1)"), QT_TR_NOOP("Head (from 1)"),
      QT_TR_NOOP("What the head mostly does (the Overview's badge)")};
  if (section == Likeness) {
    if (role == Qt::DisplayRole) return tr("vs chosen");
    if (role == Qt::ToolTipRole)
      return tr(
          "Distance of this head's profile to the chosen head's (0 = the same): Find heads "
          "like this one");
    return {};
  }
  if (section < 0 || section >= FirstStat) return {};
  if (role == Qt::DisplayRole) return tr(names[section]);
  if (role == Qt::ToolTipRole) return tr(tips[section]);
  return {};
}

// ---- proxy ------------------------------------------------------------------------------------

void HeadStatsProxy::setKindFilter(int kind) {
  kind_ = kind;
  invalidateFilter();
}

bool HeadStatsProxy::lessThan(const QModelIndex& a, const QModelIndex& b) const {
  const QVariant va = a.data(HeadStatsModel::SortRole), vb = b.data(HeadStatsModel::SortRole);
  if (va.typeId() == QMetaType::QString) return va.toString() < vb.toString();
  const double x = va.toDouble(), y = vb.toDouble();
  // NaN ("does not apply") sorts after every number in ascending order.
  if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
  if (x != y) return x < y;
  return a.row() < b.row();
}

bool HeadStatsProxy::filterAcceptsRow(int row, const QModelIndex&) const {
  if (kind_ < 0) return true;
  auto* m = static_cast<HeadStatsModel*>(sourceModel());
  return int(m->stats()[size_t(row)].kind) == kind_;
}

// ---- view -------------------------------------------------------------------------------------

HeadStatsView::HeadStatsView(AppState* state, QWidget* parent)
    : View(state, tr("What am I looking at?"), parent) {
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Show:"), this));
  kind_filter_ = new QComboBox(this);
  kind_filter_->addItem(tr("Every attention block"), -1);
  for (AttentionKind k : kAttentionKinds) kind_filter_->addItem(kindTitle(k), int(k));
  bar->addWidget(kind_filter_);
  like_ = new QPushButton(tr("Find heads like this one"), this);
  like_->setToolTip(tr("Sort every head by how close its statistics are to the selected head's"));
  bar->addWidget(like_);
  bar->addStretch(1);
  export_ = new QPushButton(tr("Export CSV…"), this);
  bar->addWidget(export_);
  layout_->addLayout(bar);
  model_ = new HeadStatsModel(this);
  proxy_ = new HeadStatsProxy(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(HeadStatsModel::SortRole);
  table_ = makeSortableTable(proxy_, HeadStatsModel::Block, this);
  layout_->addWidget(table_, 1);

  connect(kind_filter_, &QComboBox::currentIndexChanged, this,
          [this] { proxy_->setKindFilter(kind_filter_->currentData().toInt()); });
  connect(like_, &QPushButton::clicked, this, &HeadStatsView::findLikeSelected);
  connect(export_, &QPushButton::clicked, this, [this] {
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export head statistics"),
                                     QStringLiteral("head-statistics.csv"), tr("CSV (*.csv)"));
    QString error;
    if (!path.isEmpty() && !exportCsv(path, &error)) explanation_->setHtml(error.toHtmlEscaped());
  });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& cur) {
            if (syncing_ || !cur.isValid()) return;
            const HeadStats& s = model_->stats()[size_t(proxy_->mapToSource(cur).row())];
            AttentionSelection sel = state_->selection();
            sel.kind = s.kind;
            sel.layer = s.layer;
            sel.head = s.head;
            syncing_ = true;
            state_->setSelection(sel);
            syncing_ = false;
          });
  connect(table_, &QTableView::doubleClicked, this,
          [this] { emit openView(QStringLiteral("attention")); });
  connect(state_, &AppState::selectionChanged, this, [this] {
    if (!syncing_) selectRowOfSelection();
  });
}

void HeadStatsView::selectRowOfSelection() {
  const AttentionSelection& s = state_->selection();
  const int row = model_->rowOf(s.kind, s.layer, std::max(0, s.head));
  if (row < 0) return;
  const QModelIndex idx = proxy_->mapFromSource(model_->index(row, 0));
  if (!idx.isValid()) return;
  syncing_ = true;
  table_->selectionModel()->setCurrentIndex(
      idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  table_->scrollTo(idx);
  syncing_ = false;
}

void HeadStatsView::findLikeSelected() {
  const AttentionSelection& s = state_->selection();
  const int row = model_->rowOf(s.kind, s.layer, std::max(0, s.head));
  if (row < 0) return;
  model_->setReference(row);
  table_->sortByColumn(HeadStatsModel::Likeness, Qt::AscendingOrder);
  selectRowOfSelection();
}

bool HeadStatsView::exportCsv(const QString& path, QString* error) const {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
    if (error) *error = tr("Could not write %1: %2").arg(path, f.errorString());
    return false;
  }
  const std::string csv = headStatsCsv(model_->stats());
  if (f.write(csv.data(), qint64(csv.size())) != qint64(csv.size())) {
    if (error) *error = tr("Could not write %1: %2").arg(path, f.errorString());
    return false;
  }
  return true;
}

void HeadStatsView::refresh() {
  auto snap = state_->snapshot();
  const Model* model = state_->model();
  if (!snap || !snap->trace || !model) {
    model_->setStats({}, {});
    explanation_->setHtml(tr("Statistics of every head appear here after a run."));
    return;
  }
  const Trace& t = *snap->trace;
  const int b = std::clamp(state_->selection().batch, 0, std::max(0, t.batch - 1));
  const int reference = model_->reference();
  const HeadStats ref = reference >= 0 ? model_->stats()[size_t(reference)] : HeadStats();
  std::vector<HeadStats> stats = snapshotHeadStats(*snap, model->config(), b);
  std::vector<int> keys;
  for (const HeadStats& s : stats) keys.push_back(t.block(s.kind, s.layer)->k_len);
  model_->setStats(std::move(stats), std::move(keys));
  if (reference >= 0) model_->setReference(model_->rowOf(ref.kind, ref.layer, ref.head));
  if (auto* items = qobject_cast<QStandardItemModel*>(kind_filter_->model()))
    for (int k = 1; k < kind_filter_->count(); ++k)
      items->item(k)->setEnabled(t.has(AttentionKind(kind_filter_->itemData(k).toInt())));
  selectRowOfSelection();
  explanation_->setHtml(
      tr("<p style='margin:0'>One row per head of every attention block, for sentence %1. Each "
         "number is a mean over the query rows that are not padding: <b>entropy</b> −Σ p ln p "
         "(0 = all attention on one key; “0–1” divides by its largest possible value), the share "
         "of attention on the <b>diagonal</b> (itself), the <b>previous</b> token, the "
         "<b>first</b> token, the start and end tokens (<b>BOS</b>, <b>EOS</b>: heads with "
         "nothing to do often park their attention there — “attention sinks”), <b>padding</b>, "
         "the mean <b>distance</b> |i − j| it looks over, and for cross-attention how "
         "<b>monotonic</b> the alignment is (Kendall's τ: +1 reads the source in order, −1 in "
         "reverse). “—”: does not apply.</p>"
         "<p style='margin:4px 0 0 0'>Click a header to sort; select a row to show that head in "
         "the other views (double-click opens it); <i>Find heads like this one</i> sorts by how "
         "close every head's numbers are to the selected head's. The Overview's badges name "
         "each head's strongest pattern.</p>")
          .arg(b + 1));
}

}  // namespace attnviz::gui

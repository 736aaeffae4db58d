// Qt item models of the GUI: the model's structure (stacks → layers → attention blocks → heads) for
// the structure panel, the decoding steps, and the top-k next tokens of one step.
#pragma once

#include <QAbstractItemModel>
#include <QAbstractTableModel>
#include <vector>

#include "arch/config.h"
#include "model/trace.h"
#include "session/engine.h"

namespace attnviz::gui {

class StructureModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  enum Roles {
    KindRole = Qt::UserRole + 1,  // int(AttentionKind), or -1 for items that are not attention
    LayerRole,                    // layer index, or -1
    HeadRole,                     // head index, -1 = mean of heads, -2 = the block itself
    ActionRole,                   // "attention", "positional-src", "positional-tgt", "decoding", ""
  };

  explicit StructureModel(QObject* parent = nullptr);
  void setConfig(const ModelConfig* config);  // nullptr: empty

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;

  // The item of an attention block (head == -2) or of one of its heads.
  QModelIndex find(AttentionKind kind, int layer, int head) const;

 private:
  struct Node {
    int parent = -1;  // index into nodes_, -1 = top level
    std::vector<int> children;
    QString text, tooltip;
    int kind = -1, layer = -1, head = -2;
    QString action;
    bool selectable = true;
    bool is_layer = false;  // a layer node: selecting it opens its first attention block
  };
  int add(int parent, Node node);
  int rowOf(int node) const;
  std::vector<Node> nodes_;
  std::vector<int> roots_;
};

// The decoding steps: position, input token, next token chosen, its probability.
class DecodingStepsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Position, Input, Chosen, Probability, ColumnCount };
  // Decode: the tokens fed and chosen. Positions: an encoder-only model's input positions and
  // their masked-LM predictions.
  enum class Mode { Decode, Positions };
  explicit DecodingStepsModel(QObject* parent = nullptr);
  void setMode(Mode mode);
  Mode mode() const { return mode_; }
  // Replaces the steps, inserting/removing only the rows that changed.
  void setSteps(const std::vector<StepInfo>& steps);
  const std::vector<StepInfo>& steps() const { return steps_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<StepInfo> steps_;
  Mode mode_ = Mode::Decode;
};

// The k most probable next tokens after one position.
class TopKModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Rank, Token, Probability, ColumnCount };
  enum Roles { TokenIdRole = Qt::UserRole + 1 };
  explicit TopKModel(QObject* parent = nullptr);
  void setStep(const StepInfo* step);  // nullptr: empty
  void setMode(DecodingStepsModel::Mode mode) { mode_ = mode; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  std::vector<std::pair<int, float>> topk_;
  QStringList tokens_;
  int chosen_ = -1;
  DecodingStepsModel::Mode mode_ = DecodingStepsModel::Mode::Decode;
};

}  // namespace attnviz::gui

#include "session/item_models.h"

#include <QBrush>
#include <QColor>
#include <QFont>
#include <algorithm>
#include <cmath>

#include "session/attention_data.h"

namespace attnviz::gui {

// ---- StructureModel ---------------------------------------------------------------------------

StructureModel::StructureModel(QObject* parent) : QAbstractItemModel(parent) {}

int StructureModel::add(int parent, Node node) {
  node.parent = parent;
  const int id = int(nodes_.size());
  nodes_.push_back(std::move(node));
  if (parent < 0)
    roots_.push_back(id);
  else
    nodes_[size_t(parent)].children.push_back(id);
  return id;
}

void StructureModel::setConfig(const ModelConfig* c) {
  beginResetModel();
  nodes_.clear();
  roots_.clear();
  if (c) {
    auto heads = [&](int block, int kind, int layer) {
      Node mean;
      mean.text = tr("Mean of heads");
      mean.tooltip = tr("The average of the %1 heads' attention").arg(c->n_heads);
      mean.kind = kind;
      mean.layer = layer;
      mean.head = -1;
      mean.action = QStringLiteral("attention");
      add(block, mean);
      for (int h = 0; h < c->n_heads; ++h) {
        Node n;
        n.text = tr("Head %1").arg(h + 1);
        const QString kv = kvHeadText(*c, h);
        n.tooltip = kv.isEmpty() ? tr("Head %1: its own W_Q, W_K, W_V slices of width d_k = %2")
                                       .arg(h + 1)
                                       .arg(c->d_k)
                                 : tr("Head %1: its own W_Q slice of width d_k = %2; %3")
                                       .arg(h + 1)
                                       .arg(c->d_k)
                                       .arg(kv);
        n.kind = kind;
        n.layer = layer;
        n.head = h;
        n.action = QStringLiteral("attention");
        add(block, n);
      }
    };
    auto block = [&](int layer_node, int kind, int layer, const QString& text, const QString& tip) {
      Node b;
      b.text = text;
      b.tooltip = tip;
      b.kind = kind;
      b.layer = layer;
      b.head = -2;
      b.action = QStringLiteral("attention");
      const int id = add(layer_node, b);
      heads(id, kind, layer);
    };
    auto plain = [&](int parent, const QString& text, const QString& tip) {
      Node n;
      n.text = text;
      n.tooltip = tip;
      n.selectable = false;
      add(parent, n);
    };
    const QString pos_kind =
        c->positional == Positional::Learned ? tr("learned") : tr("sinusoidal");

    auto embedding = [&](int parent, const std::vector<std::string>& vocab, const char* which,
                         const char* action) {
      Node emb;
      const bool rotary = c->positional == Positional::Rotary;  // nothing added to the embedding
      emb.text = rotary ? tr("Embedding (rotary positions)") : tr("Embedding + positions");
      emb.tooltip =
          tr("Token embedding [%1 %2, d_model %3]%4%5%6")
              .arg(QString::fromLatin1(which))
              .arg(vocab.size())
              .arg(c->d_model)
              .arg(rotary ? QString() : tr(" plus the %1 positional encoding").arg(pos_kind))
              .arg(c->n_segments ? tr(" and %1 segment embeddings").arg(c->n_segments) : QString())
              .arg(c->embed_norm ? tr(", then a LayerNorm") : QString()) +
          (rotary ? tr("; rotary positions turn the queries and keys inside attention instead")
                  : QString());
      emb.action = QString::fromLatin1(action);
      add(parent, emb);
    };
    const QString ffn_tip = tr("Position-wise: the same two linear layers for every token");
    if (c->hasEncoder()) {
      Node enc;
      enc.text = c->n_encoder_layers == 1 ? tr("Encoder (1 layer)")
                                          : tr("Encoder (%1 layers)").arg(c->n_encoder_layers);
      enc.tooltip = tr("Reads the input; every layer is self-attention + feed-forward");
      enc.selectable = false;
      const int enc_id = add(-1, enc);
      embedding(enc_id, c->src_vocab, "src_vocab", "positional-src");
      for (int l = 0; l < c->n_encoder_layers; ++l) {
        Node layer;
        layer.text = tr("Layer %1").arg(l + 1);
        layer.kind = int(AttentionKind::EncoderSelf);
        layer.layer = l;
        layer.head = -2;
        layer.is_layer = true;
        layer.action = QStringLiteral("attention");
        const int lid = add(enc_id, layer);
        block(lid, int(AttentionKind::EncoderSelf), l, tr("Self-attention"),
              tr("Every input token attends to every input token (padding masked)"));
        plain(lid, tr("Feed-forward (d_ff %1)").arg(c->d_ff), ffn_tip);
      }
      if (!c->hasDecoder()) {
        Node out;
        out.text = c->tokenHead() != TokenHead::None   ? tr("Masked-LM head → softmax")
                   : c->classHead() != ClassHead::None ? tr("Classifier → softmax")
                                                       : tr("Output: hidden states");
        out.tooltip = c->classHead() == ClassHead::MeanPool
                          ? tr("The mean over positions, then Linear [classes %1, d_model %2]")
                                .arg(c->n_classes)
                                .arg(c->d_model)
                          : tr("What the model predicts (the Decoding view shows it)");
        out.action = QStringLiteral("decoding");
        add(enc_id, out);
      }
    }
    if (c->hasDecoder()) {
      Node dec;
      dec.text = c->n_decoder_layers == 1 ? tr("Decoder (1 layer)")
                                          : tr("Decoder (%1 layers)").arg(c->n_decoder_layers);
      dec.tooltip = tr("Writes the target one token at a time");
      dec.selectable = false;
      const int dec_id = add(-1, dec);
      embedding(dec_id, c->tgt_vocab, "tgt_vocab", "positional-tgt");
      for (int l = 0; l < c->n_decoder_layers; ++l) {
        Node layer;
        layer.text = tr("Layer %1").arg(l + 1);
        layer.kind = int(c->hasCross() ? AttentionKind::Cross : AttentionKind::DecoderSelf);
        layer.layer = l;
        layer.head = -2;
        layer.is_layer = true;
        layer.action = QStringLiteral("attention");
        const int lid = add(dec_id, layer);
        block(lid, int(AttentionKind::DecoderSelf), l, tr("Masked self-attention"),
              tr("Target tokens attend to themselves and earlier target tokens only"));
        if (c->hasCross())
          block(lid, int(AttentionKind::Cross), l, tr("Cross-attention"),
                tr("Target tokens (queries) attend to the encoder output (keys and values)"));
        plain(lid, tr("Feed-forward (d_ff %1)").arg(c->d_ff), ffn_tip);
      }
      Node out;
      out.text = tr("Output projection → softmax");
      out.tooltip =
          tr("Linear [tgt_vocab %1, d_model %2]: the next-token probabilities (Decoding view)")
              .arg(c->tgt_vocab.size())
              .arg(c->d_model);
      out.action = QStringLiteral("decoding");
      add(dec_id, out);
    }
  }
  endResetModel();
}

int StructureModel::rowOf(int node) const {
  const Node& n = nodes_[size_t(node)];
  const std::vector<int>& siblings = n.parent < 0 ? roots_ : nodes_[size_t(n.parent)].children;
  return int(std::find(siblings.begin(), siblings.end(), node) - siblings.begin());
}

QModelIndex StructureModel::index(int row, int column, const QModelIndex& parent) const {
  if (column != 0 || row < 0) return {};
  if (parent.isValid() && parent.column() != 0) return {};
  const std::vector<int>& list =
      parent.isValid() ? nodes_[size_t(parent.internalId())].children : roots_;
  if (row >= int(list.size())) return {};
  return createIndex(row, 0, quintptr(list[size_t(row)]));
}

QModelIndex StructureModel::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  const int p = nodes_[size_t(child.internalId())].parent;
  if (p < 0) return {};
  return createIndex(rowOf(p), 0, quintptr(p));
}

int StructureModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return int(roots_.size());
  if (parent.column() != 0) return 0;
  return int(nodes_[size_t(parent.internalId())].children.size());
}

int StructureModel::columnCount(const QModelIndex&) const {
  return 1;
}

QVariant StructureModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const Node& n = nodes_[size_t(index.internalId())];
  switch (role) {
    case Qt::DisplayRole:
      return n.text;
    case Qt::ToolTipRole:
      return n.tooltip.isEmpty() ? QVariant() : QVariant(n.tooltip);
    case Qt::ForegroundRole:
      return n.selectable || n.parent < 0 ? QVariant() : QVariant(QBrush(QColor(0x70, 0x70, 0x70)));
    case Qt::FontRole:
      if (n.parent < 0) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    case KindRole:
      return n.kind;
    case LayerRole:
      return n.layer;
    case HeadRole:
      return n.head;
    case ActionRole:
      return n.action;
    default:
      return {};
  }
}

Qt::ItemFlags StructureModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  const Node& n = nodes_[size_t(index.internalId())];
  Qt::ItemFlags f = Qt::ItemIsEnabled;
  if (n.selectable) f |= Qt::ItemIsSelectable;
  if (n.children.empty()) f |= Qt::ItemNeverHasChildren;
  return f;
}

QModelIndex StructureModel::find(AttentionKind kind, int layer, int head) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (n.is_layer || n.kind != int(kind) || n.layer != layer || n.head != head) continue;
    return createIndex(rowOf(int(i)), 0, quintptr(i));
  }
  return {};
}

// ---- DecodingStepsModel -----------------------------------------------------------------------

DecodingStepsModel::DecodingStepsModel(QObject* parent) : QAbstractTableModel(parent) {}

void DecodingStepsModel::setMode(Mode mode) {
  if (mode == mode_) return;
  mode_ = mode;
  emit headerDataChanged(Qt::Horizontal, 0, ColumnCount - 1);
}

namespace {

// Probabilities as the tables print them: tiny ones in scientific notation, never a bare 0.000.
QString probabilityText(double p, int decimals) {
  if (p > 0 && p < std::pow(10.0, -decimals)) return QString::number(p, 'e', 1);
  return QString::number(p, 'f', decimals);
}

}  // namespace

void DecodingStepsModel::setSteps(const std::vector<StepInfo>& steps) {
  auto same = [](const StepInfo& a, const StepInfo& b) {
    return a.input_id == b.input_id && a.chosen_id == b.chosen_id && a.argmax_id == b.argmax_id &&
           a.chosen_prob == b.chosen_prob && a.argmax_prob == b.argmax_prob;
  };
  const int old_n = int(steps_.size()), new_n = int(steps.size());
  int common = 0;
  while (common < old_n && common < new_n &&
         steps_[size_t(common)].input_id == steps[size_t(common)].input_id)
    ++common;
  if (old_n > common) {
    beginRemoveRows({}, common, old_n - 1);
    steps_.resize(size_t(common));
    endRemoveRows();
  }
  // Rows kept: update in place where something changed.
  for (int i = 0; i < common; ++i) {
    if (!same(steps_[size_t(i)], steps[size_t(i)])) {
      steps_[size_t(i)] = steps[size_t(i)];
      emit dataChanged(index(i, 0), index(i, ColumnCount - 1));
    } else {
      steps_[size_t(i)] = steps[size_t(i)];
    }
  }
  if (new_n > common) {
    beginInsertRows({}, common, new_n - 1);
    steps_.insert(steps_.end(), steps.begin() + common, steps.end());
    endInsertRows();
  }
}

int DecodingStepsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(steps_.size());
}

int DecodingStepsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant DecodingStepsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= int(steps_.size())) return {};
  const StepInfo& s = steps_[size_t(index.row())];
  // The columns both modes share.
  if (role == Qt::TextAlignmentRole &&
      (index.column() == Position || index.column() == Probability))
    return int(Qt::AlignRight | Qt::AlignVCenter);
  // Positions count from 1 wherever a person reads them (the views' rows, columns and captions).
  if (role == Qt::DisplayRole && index.column() == Position) return s.position + 1;
  if (role == Qt::DisplayRole && index.column() == Input) return s.input;
  if (mode_ == Mode::Positions) {  // an input position and its masked-LM prediction
    if (role == Qt::DisplayRole)
      return index.column() == Chosen ? QVariant(s.argmax)
                                      : QVariant(probabilityText(s.argmax_prob, 3));
    if (role == Qt::ToolTipRole)
      return tr("Position %1 holds “%2”; the masked-LM head's most probable token there is “%3” "
                "(p = %4)")
          .arg(s.position + 1)
          .arg(s.input, s.argmax)
          .arg(s.argmax_prob, 0, 'f', 4);
    return {};
  }
  const bool pending = s.chosen_id < 0;
  const bool picked = !pending && !s.forced && s.chosen_id != s.argmax_id;
  if (role == Qt::DisplayRole) {
    if (index.column() == Chosen) {
      if (pending) return tr("(next: %1?)").arg(s.argmax);
      return picked ? tr("%1 ✎").arg(s.chosen) : s.chosen;
    }
    if (s.forced) return tr("forced");
    return probabilityText(pending ? s.argmax_prob : s.chosen_prob, 3);
  }
  if (role == Qt::ToolTipRole) {
    if (s.forced)
      return tr("“%1” was forced by the target prefix; the model itself gave it p = %2 (its "
                "choice would have been “%3”, p = %4)")
          .arg(s.chosen, probabilityText(s.chosen_prob, 4), s.argmax)
          .arg(s.argmax_prob, 0, 'f', 4);
    if (pending)
      return tr("Position %1 has not chosen its next token yet; the argmax is “%2” (p = %3). "
                "Step forward (→) to take it, or pick another token on the right.")
          .arg(s.position + 1)
          .arg(s.argmax)
          .arg(s.argmax_prob, 0, 'f', 4);
    if (picked)
      return tr("You picked “%1” (p = %2) instead of the argmax “%3” (p = %4)")
          .arg(s.chosen)
          .arg(s.chosen_prob, 0, 'f', 4)
          .arg(s.argmax)
          .arg(s.argmax_prob, 0, 'f', 4);
    return tr("Position %1 read “%2” and chose “%3” (p = %4)")
        .arg(s.position + 1)
        .arg(s.input)
        .arg(s.chosen)
        .arg(s.chosen_prob, 0, 'f', 4);
  }
  if (role == Qt::ForegroundRole) {
    if ((pending || s.forced) && index.column() >= Chosen) return QBrush(QColor(0x80, 0x80, 0x80));
    if (picked && index.column() == Chosen) return QBrush(QColor(0xb0, 0x40, 0x00));
  }
  return {};
}

QVariant DecodingStepsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case Position:
      return tr("#");
    case Input:
      return mode_ == Mode::Positions ? tr("Input token") : tr("Input");
    case Chosen:
      return mode_ == Mode::Positions ? tr("Prediction") : tr("Next token");
    case Probability:
      return tr("p");
  }
  return {};
}

// ---- TopKModel --------------------------------------------------------------------------------

TopKModel::TopKModel(QObject* parent) : QAbstractTableModel(parent) {}

void TopKModel::setStep(const StepInfo* step) {
  beginResetModel();
  if (step) {
    topk_ = step->topk;
    tokens_ = step->topk_tokens;
    chosen_ = step->chosen_id;
  } else {
    topk_.clear();
    tokens_.clear();
    chosen_ = -1;
  }
  endResetModel();
}

int TopKModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(topk_.size());
}

int TopKModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant TopKModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= int(topk_.size())) return {};
  const auto& [id, p] = topk_[size_t(index.row())];
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Rank:
        return index.row() + 1;
      case Token:
        return tokens_.value(index.row());
      case Probability:
        return probabilityText(p, 4);
    }
  }
  if (role == TokenIdRole) return id;
  if (role == Qt::FontRole && id == chosen_) {
    QFont f;
    f.setBold(true);
    return f;
  }
  if (role == Qt::ToolTipRole)
    return mode_ == DecodingStepsModel::Mode::Positions
               ? tr("“%1”: p = %2 at this position")
                     .arg(tokens_.value(index.row()))
                     .arg(p, 0, 'g', 4)
               : tr("Double-click (or press Enter) to continue the decode with “%1”")
                     .arg(tokens_.value(index.row()));
  if (role == Qt::TextAlignmentRole && index.column() != Token)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant TopKModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case Rank:
      return tr("Rank");
    case Token:
      return tr("Token");
    case Probability:
      return tr("Probability");
  }
  return {};
}

}  // namespace attnviz::gui

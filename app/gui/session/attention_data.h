// Turning a Trace into what the views draw: one head's (or the mean of the heads') matrix with its
// token labels, the masks taken apart (padding, subsequent, union), and the shape strings.
#pragma once

#include <QString>
#include <QStringList>
#include <cstdint>
#include <memory>
#include <vector>

#include "arch/config.h"
#include "model/masks.h"
#include "model/trace.h"
#include "widgets/heatmap.h"

namespace attnviz::gui {

// What the views look at: one kind of attention, one layer, one head or the mean of the heads,
// one sentence of the batch.
struct AttentionSelection {
  AttentionKind kind = AttentionKind::Cross;
  int layer = 0;
  int head = -1;  // -1 = mean of the heads
  int batch = 0;
  // The one cell chosen (a click in the Attention view or Inside a cell): query row, key column of
  // the block; -1 when none (each view then picks its own).
  int query = -1, key = -1;
  bool operator==(const AttentionSelection&) const = default;
};

enum class MatrixValues {
  Probabilities,  // softmax output
  Scores,         // QKᵀ/√d_k before the mask
  MaskedScores,   // the scores with masked cells replaced by the fill value
};

// Clamps layer/head/batch into the trace's ranges (and the kind into the kinds it has).
AttentionSelection clampSelection(const Trace& trace, AttentionSelection s);
// The kinds of attention this model has, in the order encoder self, decoder self, cross.
std::vector<AttentionKind> modelKinds(const ModelConfig& config);

QStringList queryLabels(const Trace& trace, AttentionKind kind, int batch);
QStringList keyLabels(const Trace& trace, AttentionKind kind, int batch);
QString queryAxisTitle(AttentionKind kind);  // "queries · target tokens (decoder input)"
QString keyAxisTitle(AttentionKind kind);
QString kindTitle(AttentionKind kind);                // "Cross-attention"
QString selectionTitle(const AttentionSelection& s);  // "Cross-attention · layer 2 · head 3"

// Grouped- and multi-query attention in words (ModelConfig::kvHeadOf), for query head `head`
// counted from 0: "query head 3 reads key/value head 2 of 2 — 2 query heads share it"; empty where
// every query head has its own key/value head, and for the mean of the heads (head < 0).
QString kvHeadText(const ModelConfig& config, int head);
// The same for a heading: "reads K/V head 2 of 2"; empty as above.
QString kvHeadShort(const ModelConfig& config, int head);
// How the model's heads are laid out, for explanations: "4 query heads share 2 key/value heads
// (grouped-query attention: 2 query heads per key/value head)", "… (multi-query attention)", or
// empty for multi-head attention.
QString kvHeadsSummary(const ModelConfig& config);
// The groups, counted from 1: "query heads 1–2 read key/value head 1, 3–4 key/value head 2"
// (the first two groups and "and so on" past three); empty for multi-head attention.
QString kvGroupsText(const ModelConfig& config);

// [Tq, Tk] of one head (or the mean of the heads when s.head < 0).
std::vector<float> attentionMatrix(const AttentionBlock& a, const AttentionSelection& s,
                                   MatrixValues which, float mask_fill);
std::vector<uint8_t> maskMatrix(const AttentionBlock& a, int batch);  // [Tq, Tk]

// What a heatmap reads its cells from: a copy of one block (a decoding step grows the trace's own
// in place while a heatmap reads off the GUI thread), without the value vectors, which no tile
// needs. Null when the trace has no such block.
std::shared_ptr<const AttentionBlock> blockForTiles(const Trace& trace, AttentionKind kind,
                                                    int layer);

// The heatmap of a selection, its cells computed on demand from `block` (blockForTiles of the
// selection's kind and layer; null: made here — pass one to share it among several heatmaps).
// scale_to_max: colour scale 0 … max of the matrix (probabilities) rather than 0 … 1.
HeatmapData attentionHeatmap(const Trace& trace, const AttentionSelection& s, MatrixValues which,
                             bool scale_to_max, float mask_fill,
                             std::shared_ptr<const AttentionBlock> block = nullptr);

// The masks of one kind taken apart, computed from the token ids, whether or not each part was
// switched on, and the union that the forward pass applied (from the trace) — each as a rule
// whose cells a mask picture reads on demand, never as a [query, key] matrix.
struct MaskParts {
  int q_len = 0, k_len = 0;
  std::shared_ptr<const HeatmapCells> padding;     // keys equal to the pad id
  std::shared_ptr<const HeatmapCells> subsequent;  // j > i (decoder self-attention only; else null)
  std::shared_ptr<const HeatmapCells> applied;     // what the trace applied
  bool padding_on = true, subsequent_on = true;
};
MaskParts maskParts(const Trace& trace, AttentionKind kind, int batch, const ModelConfig& config,
                    const MaskOptions& masks);
// A picture of one of those masks: allowed cells white, masked cells hatched.
HeatmapData maskHeatmap(std::shared_ptr<const HeatmapCells> mask, const QStringList& rows,
                        const QStringList& cols, const QString& title);

// The masks this model uses that are switched off, in words ("look-ahead", "source padding",
// "target padding"); empty when every mask is on.
QStringList masksOff(const MaskOptions& masks, const ModelConfig& config);
// What is masked in one kind of attention under these switches, as a sentence fragment for the
// explanations ("keys to the right of the query (the future) and padding keys are masked").
// any_masked: whether the shown matrix has a masked cell at all (padding on, but no padding).
QString maskDescription(AttentionKind kind, const MaskOptions& masks, const ModelConfig& config,
                        bool any_masked);

// The mask fill as the tutorials write it: "−1e9", "−∞".
QString maskFillText(float fill);

// "[1, 8, 7, 9]"
QString shapeString(std::initializer_list<long long> dims);

}  // namespace attnviz::gui

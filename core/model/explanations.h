// The "What am I looking at?" texts that the application's views and the exported lesson page
// (model/lesson_html.h) share, as HTML fragments in UTF-8: what an attention heatmap shows for a
// kind of attention, what its mask hides, how grouped-query heads are laid out.
#pragma once

#include <initializer_list>
#include <string>

#include "arch/config.h"
#include "model/masks.h"
#include "model/trace.h"

namespace attnviz {

// The mask fill as the tutorials write it: "−1e9", "−∞".
std::string maskFillText(float fill);
// "[1, 8, 7, 9]"
std::string shapeString(std::initializer_list<long long> dims);
// What is masked in one kind of attention under these switches, as a sentence fragment ("keys to
// the right of the query (the future) and padding keys are masked"). any_masked: whether the shown
// matrix has a masked cell at all (padding on, but no padding).
std::string maskDescription(AttentionKind kind, const MaskOptions& masks, const ModelConfig& config,
                            bool any_masked);
// How the model's heads are laid out: "4 query heads share 2 key/value heads (grouped-query
// attention: 2 query heads per key/value head)", "… (multi-query attention)", or empty for
// multi-head attention.
std::string kvHeadsSummary(const ModelConfig& config);
// The groups, counted from 1: "query heads 1–2 read key/value head 1, 3–4 key/value head 2" (the
// first two groups and "and so on" past three); empty for multi-head attention.
std::string kvGroupsText(const ModelConfig& config);

// The Attention view's explanation of one block's heatmap: scaled dot-product attention with this
// model's d_k and mask fill, what the rows and columns are, what is masked, the shapes.
// any_masked: whether the shown matrix has a masked cell.
std::string attentionExplanation(const ModelConfig& config, const Trace& trace,
                                 const AttentionBlock& block, const MaskOptions& masks,
                                 bool any_masked);

}  // namespace attnviz

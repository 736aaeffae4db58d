// The CLI's `run --dump` and the GUI's NumPy export: a trace written as .npy files and
// tokens.json (docs/formats.md "Dumps"); the logit lens and the direct contributions as .npy and
// JSON (`lens --dump`).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "model/lens.h"
#include "model/patching.h"
#include "model/trace.h"
#include "text/vocab.h"

namespace attnviz {

// Creates `dir` (and its parents) for a dump; Error(Io) when it cannot, or it is not a folder.
void makeFolder(const std::string& dir);
// A dump's JSON text: indented by 2, strings that are not UTF-8 written with U+FFFD.
std::string jsonText(const nlohmann::json& j);

// Writes, for each attention kind the model has, KIND_{scores,mask,probs}.npy [L, H, Tq, Tk]
// (KIND = enc_self, dec_self, cross) and, when the trace kept them, KIND_{q,k,v}.npy
// [L, H, len, d_k or d_v], then logits.npy, class_logits.npy, hidden.npy (those the
// model has) and tokens.json into `dir` (created if missing). A batch of one drops the batch
// axis; a batch adds a leading one. The logits rows the trace did not keep whole (TokenLogits) are
// computed again by `model`, the model whose pass made the trace (null: every row must be kept).
// Throws Error(Io), Error(BadInput) for rows not kept without a model.
void dumpTrace(const Trace& trace, const std::string& dir, const Model* model = nullptr);
// The bytes dumpTrace writes for this trace (the attention files, the outputs; tokens.json aside).
uint64_t dumpBytes(const Trace& trace);

// One head of one attention block, counted from 0.
struct HeadChoice {
  AttentionKind kind = AttentionKind::EncoderSelf;
  int layer = 0, head = 0;
};
// "KIND:LAYER:HEAD[,…]" with layers and heads counted from 1, as `atlas --like` counts them
// (KIND: enc_self, dec_self, cross). Error(BadInput) naming the part that is wrong.
std::vector<HeadChoice> parseHeadChoices(const std::string& text);
// "KIND:LAYER:HEAD" of one head (layer and head from 1).
std::string headChoiceName(const HeadChoice& h);
// Query rows [begin, end) counted from 0; end −1: to the last.
struct RowRange {
  int begin = 0, end = -1;
};
// "A:B[,C:D…]" (query rows A … B − 1, counted from 0, as NumPy slices; A or B may be left out: 0,
// the end), in increasing order, not overlapping. Error(BadInput) naming the part that is wrong.
std::vector<RowRange> parseRowRanges(const std::string& text);
// Writes only those heads' rows (the ranges one after another; none: every row) — for each head
// KIND_LAYER_HEAD_{scores,mask,probs}.npy [rows, keys] (float32, uint8, float32; layer and head
// from 1) — and tokens.json (with the heads and the row ranges written) into `dir`, computed tile
// by tile from the trace (any length). Error(BadInput) for a head or rows the trace does not
// have, checked before anything is written; Error(Io).
void dumpHeads(const Trace& trace, const std::vector<HeadChoice>& heads,
               const std::vector<RowRange>& rows, const std::string& dir);

// Writes lens_top_probs.npy [rows, n, k], lens_target_probs.npy [rows, n], lens_logits.npy
// [rows, n, V] (when kept) and lens.json (the reading, row names, input tokens, targets, top ids
// and tokens, target ranks; `out` is the output vocabulary), and with `contributions`
// contributions.json (the logit, the sum, the frozen scale, every part) into `dir`. Throws
// Error(Io).
void dumpLens(const LogitLens& lens, const std::vector<std::string>& inputs, const Vocabulary& out,
              const Contributions* contributions, const std::string& dir);

// The same as CSV (RFC 4180, for a spreadsheet; positions, layers and heads count from 1 as the
// GUI shows them). The lens: one line per layer row and position — the row's name, the position,
// its input token, the target token, its probability and rank, then the top k tokens and their
// probabilities. The contributions: one line per part, largest |value| first — its name, kind,
// attention block, layer, head and value.
std::string lensCsv(const LogitLens& lens, const std::vector<std::string>& inputs,
                    const Vocabulary& out);
std::string contributionsCsv(const Contributions& contributions);
// An activation patching result: one line per cell of every heatmap — the heatmap's file name part
// (residual_dec, heads_cross …, as dumpPatching names it), its row and column labels, the row and
// column (from 1), the restored fraction and m(patched run).
std::string patchingCsv(const PatchingResult& result);

// The pieces of those CSV files, for the others (train/attribution's attributionCsv): a field
// quoted when it needs to be, a number with 7 significant digits, a line ended by CR LF.
std::string csvField(const std::string& text);
std::string csvNumber(double v);
std::string csvLine(const std::vector<std::string>& fields);

// Writes an activation patching result (model/patching.h) into `dir`: for each heatmap NAME
// (residual_enc, residual_dec, heads_enc_self, heads_dec_self, heads_cross, those it has)
// patch_NAME_restored.npy and patch_NAME_metric.npy [rows, cols] (float32), and patch.json (the
// definition, position, answer and foil, m(clean), m(corrupted), every heatmap's title, file
// name, and row and column labels). Throws Error(Io).
void dumpPatching(const PatchingResult& result, const std::string& dir);

}  // namespace attnviz

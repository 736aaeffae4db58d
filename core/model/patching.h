// Why this token? Activation patching: which parts of a run carry the difference between two
// inputs. A clean input and a corrupted one differ in a word; the model's answer changes with it.
// Copying one activation of the clean run into the corrupted run (and running the rest of the
// model on) shows how much of the answer that activation alone brings back.
//
// Definitions (the numbers every heatmap shows):
//  - the metric m(run) = logit[answer] − logit[foil] at the explained position of the stack whose
//    logits are read (lensStack: the decoder, or an encoder-only model's encoder). Defaults: the
//    answer is the clean run's argmax there; the foil the corrupted run's argmax, or its runner-up
//    when that is the answer too. The user may name both.
//  - restored fraction of a patch = (m(patched) − m(corrupted)) / (m(clean) − m(corrupted)):
//    0 = the patch changes nothing, 1 (100 %) = it brings the clean answer's margin back whole.
//    When m(clean) − m(corrupted) is about 0 (|Δ| ≤ 1e-6 · max(1, |m|)) there is nothing to
//    restore and the sweep is refused rather than dividing by 0.
//  - residual patch (layer l, position p): the corrupted run's residual stream leaving layer l —
//    Sublayer::Residual, as the logit lens reads it (model/lens.h); row 0 = the embeddings, the
//    first layer's input — is replaced at position p by the clean run's, then the rest of the stack
//    (and, for the encoder of an encoder-decoder, the whole decoder through cross-attention) runs
//    on it.
//  - head patch (block, layer l, head h): the head's output, its slice of the context before W_O,
//    replaced at every position by the clean run's. Blocks: the encoder's self-attention, the
//    decoder's self-attention and the cross-attention.
//  Clean and corrupted must have the same number of tokens on each side, so that positions align.
//
// What always holds (tests/test_patching.cpp): the stream leaving the last layer at the explained
// position restores 100 % (the final norm and the token head read that row alone) and at every
// other position 0 %; a patch where the clean and corrupted activations are equal restores 0 %:
// the embeddings at a position whose token is the same, and in a causal stack every row at a
// position before the first token that differs.
//
// How it is computed: the patched runs are copies of the corrupted input run as one batch (up to
// PatchOptions::batch_rows rows a pass), each copy with its own patch (ForwardOptions::patches),
// on the model's backend (the GPU when the model is on it). The layers below a patch compute what
// the corrupted run computed, so a batch of patches at layer l starts from the corrupted run's
// stream entering layer l + 1 (the embeddings' patches: from the embeddings; a head of layer l:
// entering layer l) and runs the layers above it (StreamResume); an encoder-decoder's decoder-side
// patches share the corrupted run's encoder output instead of rerunning the encoder.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "model/model.h"

namespace attnviz {

struct PatchOptions {
  int position = -1;  // the explained position (of the stack whose logits are read); −1: the last
  int answer = -1;    // −1: the clean run's argmax at the position
  int foil = -1;      // −1: the corrupted run's argmax (its runner-up when that is the answer)
  bool residuals = true;  // the layer × position sweeps
  bool heads = true;      // the layer × head sweeps
  int batch_rows = 2048;  // at most this many query rows (copies × tokens) in one patched pass
  const std::atomic<bool>* cancel = nullptr;          // → Error(Cancelled), no partial result
  std::function<void(int done, int total)> progress;  // patched runs done, after each pass
};

// One heatmap: the residual stream of one stack (rows: embeddings, layer 1 …; columns: positions)
// or the heads of one attention block (rows: layers; columns: heads).
struct PatchHeatmap {
  bool heads = false;                                // false: a residual stream
  Side side = Side::Target;                          // the stack (residual stream)
  AttentionKind block = AttentionKind::DecoderSelf;  // the attention block (heads)
  std::string title;  // "decoder residual stream", "encoder self-attention heads" …
  int rows = 0, cols = 0;
  std::vector<std::string> row_labels;  // "embeddings", "layer 1" … / "layer 1" …
  // Residual: the token at each position, "clean → corrupted" where they differ; heads: "H1" …
  std::vector<std::string> col_labels;
  std::vector<double> metric;    // [rows, cols] m(patched run)
  std::vector<double> restored;  // [rows, cols] the restored fraction (1 = 100 %)
  int64_t cell(int row, int col) const { return (int64_t)row * cols + col; }
};

struct PatchingResult {
  Side stack = Side::Target;  // the stack whose logits are read
  int position = 0, answer = 0, foil = 0;
  std::string answer_token, foil_token;
  double clean = 0, corrupted = 0;  // m(clean run), m(corrupted run)
  // The residual streams (the encoder's, then the decoder's), then the heads (encoder self,
  // decoder self, cross), as asked and as the model has them.
  std::vector<PatchHeatmap> maps;
  int runs = 0;            // patched runs made
  std::string definition;  // the metric and the fraction, in words, with this result's tokens
};

// Throws Error(BadInput) when the model has no token head, the inputs are not one sentence each,
// differ in length (naming both lengths) or hold ids outside the vocabulary, the position, answer
// or foil is out of range, the answer and foil are the same token, or clean and corrupted give the
// same logit difference; Error(Cancelled) when cancelled (no partial result).
PatchingResult patchActivations(const Model& m, const Inputs& clean, const Inputs& corrupted,
                                const PatchOptions& o = {});

}  // namespace attnviz

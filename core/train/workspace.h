// The workspace of a step that runs the forward pass with the tape and then the backward: the
// tape's regions, the backward's scratch and the loss's buffers, carved from one arena; and the
// forward pass with the tape. The training step (train/training.h) and gradient attribution
// (train/attribution.h) share them.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/config.h"
#include "model/arena.h"
#include "model/device_weights.h"
#include "model/model.h"
#include "model/tape.h"
#include "train/backward.h"

namespace attnviz {

// The device regions of the loss: targets, per-row losses and argmaxes, the logits' gradients.
struct LossRegions {
  int32_t* targets = nullptr;        // [rows] token targets (-1 = not counted)
  float* losses = nullptr;           // [rows]
  int32_t* predictions = nullptr;    // [rows]
  float* dlogits = nullptr;          // [rows, V]
  int32_t* class_targets = nullptr;  // [B]
  float* class_losses = nullptr;     // [B]
  int32_t* class_predictions = nullptr;
  float* dclass = nullptr;   // [B, C]
  float* probe = nullptr;    // [rows, d] hidden_weights
  float* dout = nullptr;     // [rows, d] the output stack's gradient
  float* dmemory = nullptr;  // [B, S, d] the encoder output's gradient
};

// The tape of one stack run of B sentences of n positions (S: the cross-attention's keys, 0
// without); keep_out: a region for the stack's output.
void carveStack(Arena& a, const ModelConfig& c, const DeviceStack& ds, StackTape& t, int B, int n,
                int S, bool keep_out);
// Everything a step of B sentences of S source and T target positions needs, in `a` (a counting
// arena first, to size the workspace).
void carveStep(Arena& a, const ModelConfig& c, const DeviceWeights& dw, int B, int S, int T,
               Tape& tape, GradScratch& g, LossRegions& l);

// Grows `workspace` when a step of B sentences of S source and T target positions needs more
// than it holds, to that size and `spare` (a fraction) more.
void sizeWorkspace(Backend& be, const ModelConfig& c, const DeviceWeights& dw, int B, int S, int T,
                   double spare, BufferPtr& workspace);

// The forward pass over a padded batch with the tape (the same layer stack as Model::forward):
// the encoder into enc, the decoder, an encoder-only model's heads; the token logits stay in the
// tape. Returns the output stack's output [B·n, d] (the decoder's, else the encoder's).
const float* forwardWithTape(Backend& be, const ModelConfig& c, const DeviceWeights& dw,
                             const std::vector<std::vector<int>>& src,
                             const std::vector<std::vector<int>>& segments,
                             const std::vector<std::vector<int>>& tgt, const ForwardOptions& o,
                             Tape& tape, Model::Encoded& enc);

}  // namespace attnviz

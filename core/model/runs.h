// Runs of whole stacks on top of the forward pass (model/pass.h): the encoder over a batch, the
// decoder over new positions (a whole teacher-forced pass, or a decoding step against cached keys
// and values), and an encoder-only model's heads. The model (model/model.h) and the training step
// (train/training.h) call them; each allocates its pass's arena once.
#pragma once

#include <vector>

#include "model/device_weights.h"
#include "model/model.h"
#include "model/recorder.h"
#include "model/tape.h"

namespace attnviz {

// Pads every sequence to the longest with `pad`; *len receives that length.
std::vector<std::vector<int>> padBatch(const std::vector<std::vector<int>>& seqs, int pad,
                                       int* len);

// Runs the encoder over a padded batch: fills enc (memory, cross-attention keys and values, key
// mask) and records into `to` when recording. With a tape (training) keeps what the backward
// needs in it.
void runEncoder(Backend& be, const ModelConfig& c, const DeviceWeights& dw, Model::Encoded& enc,
                const std::vector<std::vector<int>>& segments, const ForwardOptions& o, RecordTo to,
                int* done, int total, Tape* tape = nullptr);

// Runs the decoder over new positions [past, past + n) of B sequences: all_tokens[b] holds every
// position's id so far and the new ones. Self-attention keys and values go to kv (per layer,
// [B, cap, KV]); when kv is empty (a teacher-forced pass, past = 0) one scratch buffer serves
// every layer.
TraceRows runDecoder(Backend& be, const ModelConfig& c, const DeviceWeights& dw,
                     const Model::Encoded* enc, const std::vector<std::vector<int>>& all_tokens,
                     int past, int n, int cap, std::vector<float*> kv, const ForwardOptions& o,
                     Tape* tape = nullptr);

// The heads of an encoder-only model over the encoder's output x [B, S, d]: token logits
// [B, S, V] and class logits [B, C] into the trace (or, with a tape, kept on the device).
void runEncoderHeads(Backend& be, const ModelConfig& c, const DeviceWeights& dw, const float* x,
                     int B, int S, const ForwardOptions& o, Trace* tr, Tape* tape = nullptr);

// What the pass does after a stack's last layer, on any residual stream of that stack: the stack's
// final norm (when the config has one) and the token head, over x [B, n, d] (host) → logits
// [B, n, V]. The same ops and weights as the pass, so the stream leaving the last layer gives the
// pass's own logits, bit for bit. The logit lens (model/lens.h) runs it on every layer's stream.
// normed: x is already past the final norm (a trace's hidden state), the head alone runs.
Tensor runTokenHead(Backend& be, const ModelConfig& c, const DeviceWeights& dw, const Tensor& x,
                    Side stack, bool normed = false);

// Row i of sentence b of a trace's token logits (V values): the kept row (TokenLogits), or computed
// again from the trace's hidden state through the token head — the pass's arithmetic, up to the
// order of a sum. Throws Error(BadInput) without a token head or for a position outside the run.
std::vector<float> logitsRow(const Model& m, const Trace& t, int b, int i);
// Rows i0 … i0 + n − 1 of sentence b the same way, those not kept computed in one run: [n, V].
Tensor logitsRows(const Model& m, const Trace& t, int b, int i0, int n);

}  // namespace attnviz

// The backward pass: the forward pass's functions (model/pass.h) in reverse, one for one (llm.c's
// gpt2_backward), from the tape a training pass kept. Adds every parameter's gradient into an
// array laid out as the parameters are (DeviceWeights::params).
#pragma once

#include <cstdint>

#include "compute/backend.h"
#include "model/device_weights.h"
#include "model/model.h"
#include "model/pass.h"
#include "model/tape.h"

namespace attnviz {

// The gradients of the parameters: an array with the parameters' offsets.
struct Gradients {
  const float* params = nullptr;  // DeviceWeights::params
  float* grads = nullptr;         // [n_params]; null: only the activations' gradients are wanted
                                  // (attribution), and the backward skips the parameters'
  // The gradient of the parameter at p (a pointer into params), or null for a null parameter.
  float* of(const float* p) const { return p && grads ? grads + (p - params) : nullptr; }
};

// The gradients of one backward pass's activations, carved once for the larger stack run.
struct GradScratch {
  float* dn = nullptr;      // [rows, d] a norm's input gradient
  float* dy = nullptr;      // [rows, d] a sublayer's output gradient (after dropout's backward)
  float* dfin = nullptr;    // [rows, d] a pre-norm sublayer's input gradient
  float* dq = nullptr;      // [rows, A]
  float* dkv = nullptr;     // [B, max(S, T), KV]
  float* dprobs = nullptr;  // [B, H, n, keys] (then, in place, the scores' gradient)
  float* dctx = nullptr;    // [rows, C]
  float* dffn = nullptr;    // [rows, d_ff] (gated: [rows, 3·d_ff])
};

class Backward : public Widths {
 public:
  Backward(Backend& be, const ModelConfig& c, const DeviceWeights& dw, Gradients grads,
           const GradScratch& g)
      : Widths(c), be(be), c(c), dw(dw), grads(grads), g(g) {}

  // Pass::layers in reverse. dx [rows, d]: the gradient of the stack's output on entry, of its
  // embeddings on return; the decoder adds its cross-attention's share to dmemory [B·S, d].
  void layers(float* dx, const DeviceStack& st, const StackTape& t, const Model::Encoded* enc,
              float dropout, float* dmemory);
  // Pass::embed's dropout and embedding norm in reverse: dx [rows, d], the gradient of the
  // embeddings on entry, of the sum tokens[ids]·scale + positions (+ segments) on return — which
  // is also the gradient of each token row (train/attribution.h).
  void embedSum(const DeviceStack& st, const StackTape& t, float* dx, float dropout);
  // Pass::embed in reverse: the token table's (and learned positions', segments') gradients.
  void embed(const DeviceStack& st, const StackTape& t, float* dx, float dropout);
  // Pass::tokenHead in reverse: dx [rows, d] += from dlogits [rows, V].
  void tokenHead(const HeadTape& t, const float* x, const float* dlogits, float* dx, int rows);
  // Pass::classHead in reverse: dx [B, n, d] += from dlogits [B, C].
  void classHead(const HeadTape& t, const float* dlogits, float* dx, int B, int n);

 private:
  void linear(const float* dy, const float* x, const DeviceLinear& l, float* dx, int rows);
  void norm(const float* dy, const float* x, const DeviceNorm& n, float* dx, int rows, float eps);
  // Pass::residual. dx [rows, d]: the gradient of the block's output on entry, of its input on
  // return. back(f_in, dout, din) is f's backward: din += ∂f/∂f_in · dout. `up` (pre-norm only):
  // the block output's gradient when it is not dx (the parallel residual's second sublayer).
  template <class F>
  void residual(float* dx, int rows, const DeviceNorm& n, const SublayerTape& t, float p, F&& back,
                const float* up = nullptr);
  // Pass::attend, from the context's gradient in g.dctx: g.dq ← the queries' gradient; dk, dv +=
  // the keys' and values'.
  // `bias`: the stack whose relative position bias the scores had (T5's self-attention; its
  // table's gradient += from the scores'), or null.
  void attend(HeadsView qv, HeadsView kv, const float* probs, const uint8_t* mask, int B, int n,
              int Tk, HeadsGrad dk, HeadsGrad dv, const DeviceStack* bias = nullptr);
  void selfAttention(const DeviceStack& st, const DeviceAttention& W, const AttentionTape& t,
                     const uint8_t* mask, const float* in, const float* dout, float* din, int B,
                     int n);
  void crossAttention(const DeviceAttention& W, const AttentionTape& t, const uint8_t* mask,
                      const Model::Encoded& e, size_t layer, const float* in, const float* dout,
                      float* din, float* dmemory, int B, int n);
  void feedForward(const DeviceLayer& L, const LayerTape& t, const float* in, const float* dout,
                   float* din, int rows, float p);

  Backend& be;
  const ModelConfig& c;
  const DeviceWeights& dw;
  const Gradients grads;
  const GradScratch& g;
};

}  // namespace attnviz

// Launchers of the CUDA backend's kernels (kernels.cu): masked softmax, the norms, activations,
// residual and bias adds, embedding, each with its backward beside it; dropout, cross-entropy,
// the gradients' norm and Adam for training. Each queues its kernel on `stream` and returns the
// launch's cudaGetLastError(); cuda_backend.cpp checks it with CUDA_CHECK.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernel_math.h"

namespace attnviz::cuda {

// probs[b, h, i, :] = softmax(where(mask[b, i, :], fill, scores[b, h, i, :]))
//   scores, probs: [B, H, Tq, Tk]; mask: [B, Tq, Tk] uint8 (1 = masked)
cudaError_t masked_softmax_forward(const float* scores, const uint8_t* mask, float* probs, int B,
                                   int H, int Tq, int Tk, float fill, cudaStream_t stream);
// Backward (written; dscores may alias dprobs): dscores = probs ⊙ (dprobs − Σ probs·dprobs),
// 0 where masked.   probs, dprobs, dscores: [B, H, Tq, Tk]; mask: [B, Tq, Tk]
cudaError_t masked_softmax_backward(const float* probs, const float* dprobs, const uint8_t* mask,
                                    float* dscores, int B, int H, int Tq, int Tk,
                                    cudaStream_t stream);

// y[r, :] = x̂[r, :] · gamma + beta, x̂ as `kind` normalises (backend.h's norm_forward)
//   x, y: [rows, d] (may alias); gamma, beta: [d] or nullptr
cudaError_t norm_forward(NormKind kind, const float* x, const float* gamma, const float* beta,
                         float* y, int rows, int d, float eps, cudaStream_t stream);
// Backward from the input x: dx += the input's gradient; dgamma, dbeta += Σ over rows (when
// gamma is not null). row_stats: scratch [rows, 2] (center, scale) between the two kernels.
//   dy, x, dx: [rows, d]; gamma, dgamma, dbeta: [d]
// head_norm_forward: each head of a heads view normalised in place (backend.h)
cudaError_t head_norm_forward(NormKind kind, float* x, int64_t batch_stride, int64_t row_stride,
                              const float* gamma, int B, int T, int heads, int d_head, float eps,
                              cudaStream_t stream);
// head_norm_backward, in place: each head's center and scale into row_stats [B·T·heads, 2],
// dgamma += Σ dy ⊙ x̂ (when gamma and dgamma are given), then dx overwritten. Each view is (data,
// batch_stride, row_stride).
cudaError_t head_norm_backward(NormKind kind, float* dx, int64_t dx_batch, int64_t dx_row,
                               const float* x, int64_t x_batch, int64_t x_row, const float* gamma,
                               float* dgamma, float* row_stats, int B, int T, int heads, int d_head,
                               float eps, cudaStream_t stream);
cudaError_t norm_backward(NormKind kind, const float* dy, const float* x, const float* gamma,
                          float* dx, float* dgamma, float* dbeta, float* row_stats, int rows, int d,
                          float eps, cudaStream_t stream);

// Rotary position embeddings in place on a heads view (data, batch_stride, row_stride) of
// [B, T, ·]: backend.h's rope_forward with sign 1, rope_backward with sign −1.
//   cos, sin: [>= pos0 + T, d_head/2]
cudaError_t rope(float* data, int64_t batch_stride, int64_t row_stride, const float* cos,
                 const float* sin, int B, int T, int heads, int d_head, int pos0, RopeLayout layout,
                 float sign, cudaStream_t stream);

// x[i] = act(x[i]) for i < n
cudaError_t activation_forward(float* x, int64_t n, Activation kind, cudaStream_t stream);
// dx[i] = dy[i] · act'(x[i]) (written; dx may alias dy)
cudaError_t activation_backward(const float* x, const float* dy, float* dx, int64_t n,
                                Activation kind, cudaStream_t stream);

// scores[b, h, i, j] += table[bucket(j − (q0 + i)), h] (T5's relative position bias)
//   table: [num_buckets, H]; scores: [B, H, Tq, Tk]
cudaError_t position_bias_forward(const float* table, float* scores, int B, int H, int Tq, int Tk,
                                  int q0, int num_buckets, int max_distance, bool bidirectional,
                                  cudaStream_t stream);
// dtable[k, h] += Σ dscores[b, h, i, j] over the cells of bucket k (accumulates)
cudaError_t position_bias_backward(const float* dscores, float* dtable, int B, int H, int Tq,
                                   int Tk, int q0, int num_buckets, int max_distance,
                                   bool bidirectional, cudaStream_t stream);

// y[r, c] = act(x[r, c]) · x[r, f + c]: x [rows, 2f] holds [gate | up] per row, y: [rows, f]
cudaError_t gated_activation_forward(const float* x, float* y, int rows, int f, Activation kind,
                                     cudaStream_t stream);
// Backward (written): dx[r, c] = dy[r, c] · up · act'(gate), dx[r, f + c] = dy[r, c] · act(gate)
//   x, dx: [rows, 2f]; dy: [rows, f]
cudaError_t gated_activation_backward(const float* x, const float* dy, float* dx, int rows, int f,
                                      Activation kind, cudaStream_t stream);

// y[i] += x[i] for i < n
cudaError_t residual_forward(const float* x, float* y, int64_t n, cudaStream_t stream);

// x[i] *= s for i < n
cudaError_t scale_forward(float* x, int64_t n, float s, cudaStream_t stream);

// y[r, c] += bias[c]   y: [rows, width], bias: [width]
cudaError_t bias_add_forward(const float* bias, float* y, int rows, int width, cudaStream_t stream);
// Backward: dbias[c] += Σ_r dy[r, c]   dy: [rows, width]
cudaError_t bias_add_backward(const float* dy, float* dbias, int rows, int width,
                              cudaStream_t stream);

// out[b, t, :] = table[ids[b, t], :] · scale + positions[pos0 + t, :]
//   ids: [B, T] int32, table: [vocab, d], positions: [>= pos0 + T, d], out: [B, T, d]
cudaError_t embedding_forward(const int32_t* ids, const float* table, const float* positions,
                              float* out, int B, int T, int d, int pos0, float scale,
                              cudaStream_t stream);
// Backward: dtable[ids[b, t], :] += scale · dout[b, t, :]; dpositions[pos0 + t, :] += dout[b, t, :]
// (atomic adds: repeated ids and positions accumulate)
cudaError_t embedding_backward(const int32_t* ids, const float* dout, float* dtable,
                               float* dpositions, int B, int T, int d, int pos0, float scale,
                               cudaStream_t stream);

// out[r, :] += table[ids[r], :]   ids: [rows] int32, table: [n, d], out: [rows, d]
cudaError_t gather_add_forward(const int32_t* ids, const float* table, float* out, int rows, int d,
                               cudaStream_t stream);
// Backward: dtable[ids[r], :] += dout[r, :] (atomic adds)
cudaError_t gather_add_backward(const int32_t* ids, const float* dout, float* dtable, int rows,
                                int d, cudaStream_t stream);

// y[b, :] = mean over t of x[b, t, :]   x: [B, T, d], y: [B, d]
cudaError_t mean_pool_forward(const float* x, float* y, int B, int T, int d, cudaStream_t stream);
// Backward: dx[b, t, :] += dy[b, :] / T
cudaError_t mean_pool_backward(const float* dy, float* dx, int B, int T, int d,
                               cudaStream_t stream);

// ---- training only ----

// x[i] = keep(seed, i) ? x[i] / (1 − p) : 0 (counter_rng.h), in place; the backward is the same
cudaError_t dropout_forward(float* x, int64_t n, float p, uint64_t seed, cudaStream_t stream);

// losses[r], predictions[r] of F.cross_entropy with label smoothing, per row of logits [rows, V]
cudaError_t cross_entropy_forward(const float* logits, const int32_t* targets, float* losses,
                                  int32_t* predictions, int rows, int V, int ignore_index,
                                  float smoothing, cudaStream_t stream);
// dlogits[r] = scale · (softmax(logits[r]) − q) (written; 0 for ignored rows)
cudaError_t cross_entropy_backward(const float* logits, const int32_t* targets, float* dlogits,
                                   int rows, int V, int ignore_index, float smoothing, float scale,
                                   cudaStream_t stream);

// partial[k] = Σ x[i]² over block k's share (double); blocks = sum_squares_blocks(n)
int sum_squares_blocks(int64_t n);
cudaError_t sum_squares(const float* x, int64_t n, double* partial, cudaStream_t stream);

// One Adam / AdamW step over n parameters (adamw_element of kernel_math.h)
cudaError_t adamw_update(float* params, const float* grads, float* m, float* v, int64_t n, float lr,
                         float beta1, float beta2, float eps, float weight_decay, bool decoupled,
                         float bias_correction1, float bias_correction2, float grad_scale,
                         cudaStream_t stream);

// cudaSuccess when this binary holds code (SASS or PTX) the current device can run; otherwise
// the error (cudaErrorNoKernelImageForDevice, ...). Queries a kernel, launches nothing.
cudaError_t kernel_image_status();

}  // namespace attnviz::cuda

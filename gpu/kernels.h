// Launchers of the CUDA backend's kernels (kernels.cu): masked softmax, LayerNorm, activations,
// residual and bias adds, embedding. Each queues its kernel on `stream` and returns the launch's
// cudaGetLastError(); cuda_backend.cpp checks it with CUDA_CHECK.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernel_math.h"

namespace attnviz::cuda {

// probs[b, h, i, :] = softmax(where(mask[b, i, :], fill, scores[b, h, i, :]))
//   scores, probs: [B, H, Tq, Tk]; mask: [B, Tq, Tk] uint8 (1 = masked)
cudaError_t masked_softmax_forward(const float* scores, const uint8_t* mask, float* probs, int B,
                                   int H, int Tq, int Tk, float fill, cudaStream_t stream);

// y[r, :] = (x[r, :] - mean) / sqrt(var + eps) · gamma + beta
//   x, y: [rows, d] (may alias); gamma, beta: [d] or nullptr
cudaError_t layernorm_forward(const float* x, const float* gamma, const float* beta, float* y,
                              int rows, int d, float eps, cudaStream_t stream);

// x[i] = act(x[i]) for i < n
cudaError_t activation_forward(float* x, int64_t n, ActivationKind kind, cudaStream_t stream);

// y[i] += x[i] for i < n
cudaError_t residual_forward(const float* x, float* y, int64_t n, cudaStream_t stream);

// x[i] *= s for i < n
cudaError_t scale_forward(float* x, int64_t n, float s, cudaStream_t stream);

// y[r, c] += bias[c]   y: [rows, width], bias: [width]
cudaError_t bias_add_forward(const float* bias, float* y, int rows, int width, cudaStream_t stream);

// out[b, t, :] = table[ids[b, t], :] · scale + positions[pos0 + t, :]
//   ids: [B, T] int32, table: [vocab, d], positions: [>= pos0 + T, d], out: [B, T, d]
cudaError_t embedding_forward(const int32_t* ids, const float* table, const float* positions,
                              float* out, int B, int T, int d, int pos0, float scale,
                              cudaStream_t stream);

// out[r, :] += table[ids[r], :]   ids: [rows] int32, table: [n, d], out: [rows, d]
cudaError_t gather_add_forward(const int32_t* ids, const float* table, float* out, int rows, int d,
                               cudaStream_t stream);

// y[b, :] = mean over t of x[b, t, :]   x: [B, T, d], y: [B, d]
cudaError_t mean_pool_forward(const float* x, float* y, int B, int T, int d, cudaStream_t stream);

// cudaSuccess when this binary holds code (SASS or PTX) the current device can run; otherwise
// the error (cudaErrorNoKernelImageForDevice, ...). Queries a kernel, launches nothing.
cudaError_t kernel_image_status();

}  // namespace attnviz::cuda

// The cuBLAS call plans of the CUDA backend as plain data: which column-major (strided-batched)
// SGEMMs compute linear_forward, attention_scores_forward and attention_context_forward.
// Plain C++ (no CUDA): the backend executes these plans with cuBLAS, and tests/test_gpu_host.cpp
// executes the very same plans with a reference column-major GEMM on the host.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnviz::cuda {

// One cublasSgemmStridedBatched call (batch_count 1 = a plain cublasSgemm), in cuBLAS's own
// column-major terms:
//   for p < batch_count:
//     C_p[m×n] = alpha · op(A_p)[m×k] · op(B_p)[k×n] + beta · C_p
//   A_p = a + a_offset + p·stride_a   (column-major, leading dimension lda)
//   B_p = b + b_offset + p·stride_b   (column-major, leading dimension ldb)
//   C_p = c + c_offset + p·stride_c   (column-major, leading dimension ldc)
// where a, b, c are the base pointers the op was given and every offset/stride counts floats.
struct GemmCall {
  bool transa = false;  // op(A) = Aᵀ (CUBLAS_OP_T) when true, A (CUBLAS_OP_N) when false
  bool transb = false;
  int m = 0, n = 0, k = 0;
  int lda = 0, ldb = 0, ldc = 0;
  int64_t a_offset = 0, b_offset = 0, c_offset = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  int batch_count = 1;
  float alpha = 1.0f;
  float beta = 0.0f;
};

// An op's calls, executed in order. Empty when the op has nothing to compute (a zero extent).
using GemmPlan = std::vector<GemmCall>;

// Why row-major data goes to column-major cuBLAS with swapped operands — the one place this
// is explained:
//   A row-major r×c matrix with row stride ld is, read by cuBLAS, the column-major c×r matrix
//   (its transpose) with leading dimension ld. So a row-major product C = A·B is computed as the
//   column-major product Cᵀ = Bᵀ·Aᵀ: pass B where cuBLAS expects its first operand and A as its
//   second, with m = columns of C, n = rows of C, and ldc = the row stride of C. An operand that
//   the row-major formula uses transposed (Wᵀ, Kᵀ) is then passed with CUBLAS_OP_T.
// Every plan below is this rule applied to the formula in core/compute/backend.h.
//
// The attention plans take H query heads and kv_heads key/value heads (grouped-query attention,
// as backend.h): query head h reads key/value head h / (H / kv_heads); Error(Backend) unless
// kv_heads divides H. Where a gradient of the key/value heads accumulates (dK, dV), the query
// heads of one group add to it in successive calls, never two in one call.

// y[rows, out] = x[rows, in] · W[out, in]ᵀ          (cuBLAS A = W, B = x, C = y; no bias:
// the backend adds the bias afterwards with a kernel)
//   column-major: yᵀ[out×rows] = op(W-as-stored[in×out] , T) · x-as-stored[in×rows]
GemmPlan planLinear(int rows, int in, int out);

// scores[b, h, i, j] = scale · Σ_c q[b, i, h·d_k + c] · k[b, j, h·d_k + c]   (cuBLAS A = k view,
// B = q view, C = scores). The head view strides (in floats) are those of core/compute/backend.h's
// HeadsView: element (b, r, h, c) at b·batch_stride + r·row_stride + h·head_dim + c.
//   column-major per (b, h): S_bhᵀ[Tk×Tq] = op(K_bh-as-stored[d_k×Tk], T) · Q_bh-as-stored[d_k×Tq]
// Batches over heads (stride d_k) with one call per batch item (and member of a group of query
// heads), or over the batch (stride batch_stride) with one call per head, whichever needs fewer
// calls.
GemmPlan planScores(int64_t q_batch_stride, int64_t q_row_stride, int64_t k_batch_stride,
                    int64_t k_row_stride, int B, int H, int kv_heads, int Tq, int Tk, int d_k,
                    float scale);

// ctx[b, i, h·d_v + c] = Σ_j probs[b, h, i, j] · v[b, j, h·d_v + c]   (cuBLAS A = v view,
// B = probs, C = ctx)
//   column-major per (b, h): C_bhᵀ[d_v×Tq] = V_bh-as-stored[d_v×Tk] · P_bh-as-stored[Tk×Tq]
GemmPlan planContext(int64_t v_batch_stride, int64_t v_row_stride, int B, int H, int kv_heads,
                     int Tq, int Tk, int d_v);

// ---- the backward ops' products (core/compute/backend.h); beta = 1 where the op accumulates ----

// linear_backward's input gradient: dx[rows, in] += dy[rows, out] · W[out, in]
//   (cuBLAS A = W, B = dy, C = dx)   column-major: dxᵀ[in×rows] += W-as-stored[in×out] · dyᵀ
GemmPlan planLinearBackwardInput(int rows, int in, int out);

// linear_backward's weight gradient: dW[out, in] += dy[rows, out]ᵀ · x[rows, in]
//   (cuBLAS A = x, B = dy, C = dW)   column-major: dWᵀ[in×out] += xᵀ[in×rows] · op(dyᵀ, T)
GemmPlan planLinearBackwardWeight(int rows, int in, int out);

// attention_scores_backward, queries: dq_h[b] += scale · dS[b, h] · K_h[b]
//   (cuBLAS A = k view, B = dscores, C = dq view)
GemmPlan planScoresBackwardQuery(int64_t k_batch_stride, int64_t k_row_stride,
                                 int64_t dq_batch_stride, int64_t dq_row_stride, int B, int H,
                                 int kv_heads, int Tq, int Tk, int d_k, float scale);

// attention_scores_backward, keys: dk_g[b] += scale · dS[b, h]ᵀ · Q_h[b] for each h of group g
//   (cuBLAS A = q view, B = dscores, C = dk view)
GemmPlan planScoresBackwardKey(int64_t q_batch_stride, int64_t q_row_stride,
                               int64_t dk_batch_stride, int64_t dk_row_stride, int B, int H,
                               int kv_heads, int Tq, int Tk, int d_k, float scale);

// attention_context_backward, probabilities: dP[b, h] = dC_h[b] · V_h[b]ᵀ (written)
//   (cuBLAS A = v view, B = dctx, C = dprobs)
GemmPlan planContextBackwardProbs(int64_t v_batch_stride, int64_t v_row_stride, int B, int H,
                                  int kv_heads, int Tq, int Tk, int d_v);

// attention_context_backward, values: dv_g[b] += P[b, h]ᵀ · dC_h[b] for each h of group g
//   (cuBLAS A = dctx, B = probs, C = dv view)
GemmPlan planContextBackwardValues(int64_t dv_batch_stride, int64_t dv_row_stride, int B, int H,
                                   int kv_heads, int Tq, int Tk, int d_v);

// Empty when the call satisfies cuBLAS's argument rules (m, n, k, batch_count ≥ 0;
// lda ≥ max(1, transa ? k : m); ldb ≥ max(1, transb ? n : k); ldc ≥ max(1, m); offsets ≥ 0);
// otherwise what is wrong. The planners throw Error(Backend) rather than return such a call.
std::string checkGemmCall(const GemmCall& call);

// "sgemm T N m=.. n=.. k=.. lda=.. ..." for messages and test failures.
std::string describeGemmCall(const GemmCall& call);

}  // namespace attnviz::cuda

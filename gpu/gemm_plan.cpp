#include "gemm_plan.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "error.h"

namespace attnviz::cuda {

namespace {

// cuBLAS's (32-bit) API takes m, n, k and the leading dimensions as int.
int asCublasInt(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw Error(ErrorKind::Backend, std::string("cuBLAS plan: ") + what + " = " +
                                        std::to_string(v) +
                                        " does not fit cuBLAS's 32-bit int arguments");
  return static_cast<int>(v);
}

// A leading dimension must be ≥ 1 even for an empty operand.
int leadingDim(int64_t v, const char* what) {
  return asCublasInt(std::max<int64_t>(v, 1), what);
}

GemmPlan checked(GemmPlan plan) {
  for (const GemmCall& call : plan) {
    std::string why = checkGemmCall(call);
    if (!why.empty())
      throw Error(ErrorKind::Backend,
                  "cuBLAS plan is invalid (" + why + "): " + describeGemmCall(call));
  }
  return plan;
}

}  // namespace

GemmPlan planLinear(int rows, int in, int out) {
  if (rows <= 0 || out <= 0 || in < 0) return {};
  GemmCall c;
  c.transa = true;  // W is used transposed: x · Wᵀ
  c.transb = false;
  c.m = out;
  c.n = rows;
  c.k = in;
  c.lda = leadingDim(in, "in (lda)");
  c.ldb = leadingDim(in, "in (ldb)");
  c.ldc = leadingDim(out, "out (ldc)");
  return checked({c});
}

GemmPlan planScores(int64_t q_batch_stride, int64_t q_row_stride, int64_t k_batch_stride,
                    int64_t k_row_stride, int B, int H, int Tq, int Tk, int d_k, float scale) {
  if (B <= 0 || H <= 0 || Tq <= 0 || Tk <= 0) return {};
  const int64_t score_matrix = int64_t{Tq} * Tk;  // one head's [Tq, Tk] block of scores
  GemmCall base;
  base.transa = true;  // K is used transposed: Q · Kᵀ
  base.transb = false;
  base.m = Tk;
  base.n = Tq;
  base.k = d_k;
  base.lda = leadingDim(k_row_stride, "k row stride (lda)");
  base.ldb = leadingDim(q_row_stride, "q row stride (ldb)");
  base.ldc = leadingDim(Tk, "Tk (ldc)");
  base.alpha = scale;
  GemmPlan plan;
  if (B <= H) {
    // One call per batch item; the heads are the cuBLAS batch, d_k floats apart in Q and K.
    for (int b = 0; b < B; ++b) {
      GemmCall c = base;
      c.a_offset = b * k_batch_stride;
      c.b_offset = b * q_batch_stride;
      c.c_offset = int64_t{b} * H * score_matrix;
      c.stride_a = d_k;
      c.stride_b = d_k;
      c.stride_c = score_matrix;
      c.batch_count = H;
      plan.push_back(c);
    }
  } else {
    // One call per head; the batch items are the cuBLAS batch, batch_stride floats apart.
    for (int h = 0; h < H; ++h) {
      GemmCall c = base;
      c.a_offset = int64_t{h} * d_k;
      c.b_offset = int64_t{h} * d_k;
      c.c_offset = h * score_matrix;
      c.stride_a = k_batch_stride;
      c.stride_b = q_batch_stride;
      c.stride_c = H * score_matrix;
      c.batch_count = B;
      plan.push_back(c);
    }
  }
  return checked(std::move(plan));
}

GemmPlan planContext(int64_t v_batch_stride, int64_t v_row_stride, int B, int H, int Tq, int Tk,
                     int d_v) {
  if (B <= 0 || H <= 0 || Tq <= 0 || d_v <= 0) return {};
  const int64_t score_matrix = int64_t{Tq} * Tk;  // one head's [Tq, Tk] block of probs
  const int64_t ctx_width = int64_t{H} * d_v;     // row stride of ctx [B, Tq, H·d_v]
  GemmCall base;
  base.transa = false;
  base.transb = false;
  base.m = d_v;
  base.n = Tq;
  base.k = Tk;
  base.lda = leadingDim(v_row_stride, "v row stride (lda)");
  base.ldb = leadingDim(Tk, "Tk (ldb)");
  base.ldc = leadingDim(ctx_width, "H·d_v (ldc)");
  GemmPlan plan;
  if (B <= H) {
    for (int b = 0; b < B; ++b) {
      GemmCall c = base;
      c.a_offset = b * v_batch_stride;
      c.b_offset = int64_t{b} * H * score_matrix;
      c.c_offset = int64_t{b} * Tq * ctx_width;
      c.stride_a = d_v;
      c.stride_b = score_matrix;
      c.stride_c = d_v;
      c.batch_count = H;
      plan.push_back(c);
    }
  } else {
    for (int h = 0; h < H; ++h) {
      GemmCall c = base;
      c.a_offset = int64_t{h} * d_v;
      c.b_offset = h * score_matrix;
      c.c_offset = int64_t{h} * d_v;
      c.stride_a = v_batch_stride;
      c.stride_b = H * score_matrix;
      c.stride_c = Tq * ctx_width;
      c.batch_count = B;
      plan.push_back(c);
    }
  }
  return checked(std::move(plan));
}

std::string checkGemmCall(const GemmCall& c) {
  if (c.m < 0 || c.n < 0 || c.k < 0) return "negative m, n or k";
  if (c.batch_count < 0) return "negative batch count";
  if (c.lda < std::max(1, c.transa ? c.k : c.m)) return "lda too small";
  if (c.ldb < std::max(1, c.transb ? c.n : c.k)) return "ldb too small";
  if (c.ldc < std::max(1, c.m)) return "ldc too small";
  if (c.a_offset < 0 || c.b_offset < 0 || c.c_offset < 0) return "negative offset";
  if (c.stride_a < 0 || c.stride_b < 0 || c.stride_c < 0) return "negative stride";
  return {};
}

std::string describeGemmCall(const GemmCall& c) {
  std::ostringstream s;
  s << (c.batch_count == 1 ? "sgemm " : "sgemmStridedBatched ") << (c.transa ? 'T' : 'N') << ' '
    << (c.transb ? 'T' : 'N') << " m=" << c.m << " n=" << c.n << " k=" << c.k << " lda=" << c.lda
    << " ldb=" << c.ldb << " ldc=" << c.ldc << " offsets=(" << c.a_offset << ", " << c.b_offset
    << ", " << c.c_offset << ") strides=(" << c.stride_a << ", " << c.stride_b << ", " << c.stride_c
    << ") batch=" << c.batch_count << " alpha=" << c.alpha << " beta=" << c.beta;
  return s.str();
}

}  // namespace attnviz::cuda

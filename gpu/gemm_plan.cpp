#include "gemm_plan.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "base/error.h"

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

namespace {

// Where one (batch item, head) matrix of an operand starts: b·per_batch + h·per_head floats.
struct Strides {
  int64_t per_batch, per_head;
};

// One product per (batch item, head): a strided-batched call per batch item over the heads, or
// per head over the batch items, whichever needs fewer calls (as planScores and planContext).
GemmPlan perHead(const GemmCall& base, int B, int H, Strides a, Strides b, Strides c) {
  GemmPlan plan;
  if (B <= H) {
    for (int i = 0; i < B; ++i) {
      GemmCall g = base;
      g.a_offset = i * a.per_batch;
      g.b_offset = i * b.per_batch;
      g.c_offset = i * c.per_batch;
      g.stride_a = a.per_head;
      g.stride_b = b.per_head;
      g.stride_c = c.per_head;
      g.batch_count = H;
      plan.push_back(g);
    }
  } else {
    for (int h = 0; h < H; ++h) {
      GemmCall g = base;
      g.a_offset = h * a.per_head;
      g.b_offset = h * b.per_head;
      g.c_offset = h * c.per_head;
      g.stride_a = a.per_batch;
      g.stride_b = b.per_batch;
      g.stride_c = c.per_batch;
      g.batch_count = B;
      plan.push_back(g);
    }
  }
  return checked(std::move(plan));
}

}  // namespace

GemmPlan planLinearBackwardInput(int rows, int in, int out) {
  if (rows <= 0 || in <= 0) return {};
  GemmCall c;  // column-major: dxᵀ[in×rows] += W-as-stored[in×out] · dy-as-stored[out×rows]
  c.m = in;
  c.n = rows;
  c.k = out;
  c.lda = leadingDim(in, "in (lda)");
  c.ldb = leadingDim(out, "out (ldb)");
  c.ldc = leadingDim(in, "in (ldc)");
  c.beta = 1.0f;
  return checked({c});
}

GemmPlan planLinearBackwardWeight(int rows, int in, int out) {
  if (out <= 0 || in <= 0) return {};
  GemmCall c;  // column-major: dWᵀ[in×out] += x-as-stored[in×rows] · op(dy-as-stored[out×rows], T)
  c.transb = true;
  c.m = in;
  c.n = out;
  c.k = rows;
  c.lda = leadingDim(in, "in (lda)");
  c.ldb = leadingDim(out, "out (ldb)");
  c.ldc = leadingDim(in, "in (ldc)");
  c.beta = 1.0f;
  return checked({c});
}

GemmPlan planScoresBackwardQuery(int64_t k_batch_stride, int64_t k_row_stride,
                                 int64_t dq_batch_stride, int64_t dq_row_stride, int B, int H,
                                 int Tq, int Tk, int d_k, float scale) {
  if (B <= 0 || H <= 0 || Tq <= 0 || d_k <= 0) return {};
  GemmCall base;  // column-major: dQᵀ[d_k×Tq] += K-as-stored[d_k×Tk] · dS-as-stored[Tk×Tq]
  base.m = d_k;
  base.n = Tq;
  base.k = Tk;
  base.lda = leadingDim(k_row_stride, "k row stride (lda)");
  base.ldb = leadingDim(Tk, "Tk (ldb)");
  base.ldc = leadingDim(dq_row_stride, "dq row stride (ldc)");
  base.alpha = scale;
  base.beta = 1.0f;
  const int64_t score_matrix = int64_t{Tq} * Tk;
  return perHead(base, B, H, {k_batch_stride, d_k}, {H * score_matrix, score_matrix},
                 {dq_batch_stride, d_k});
}

GemmPlan planScoresBackwardKey(int64_t q_batch_stride, int64_t q_row_stride,
                               int64_t dk_batch_stride, int64_t dk_row_stride, int B, int H, int Tq,
                               int Tk, int d_k, float scale) {
  if (B <= 0 || H <= 0 || Tk <= 0 || d_k <= 0) return {};
  GemmCall base;  // column-major: dKᵀ[d_k×Tk] += Q-as-stored[d_k×Tq] · op(dS-as-stored[Tk×Tq], T)
  base.transb = true;
  base.m = d_k;
  base.n = Tk;
  base.k = Tq;
  base.lda = leadingDim(q_row_stride, "q row stride (lda)");
  base.ldb = leadingDim(Tk, "Tk (ldb)");
  base.ldc = leadingDim(dk_row_stride, "dk row stride (ldc)");
  base.alpha = scale;
  base.beta = 1.0f;
  const int64_t score_matrix = int64_t{Tq} * Tk;
  return perHead(base, B, H, {q_batch_stride, d_k}, {H * score_matrix, score_matrix},
                 {dk_batch_stride, d_k});
}

GemmPlan planContextBackwardProbs(int64_t v_batch_stride, int64_t v_row_stride, int B, int H,
                                  int Tq, int Tk, int d_v) {
  if (B <= 0 || H <= 0 || Tq <= 0 || Tk <= 0) return {};
  GemmCall base;  // column-major: dPᵀ[Tk×Tq] = op(V-as-stored[d_v×Tk], T) · dC-as-stored[d_v×Tq]
  base.transa = true;
  base.m = Tk;
  base.n = Tq;
  base.k = d_v;
  base.lda = leadingDim(v_row_stride, "v row stride (lda)");
  base.ldb = leadingDim(int64_t{H} * d_v, "H·d_v (ldb)");
  base.ldc = leadingDim(Tk, "Tk (ldc)");
  const int64_t score_matrix = int64_t{Tq} * Tk;
  return perHead(base, B, H, {v_batch_stride, d_v}, {int64_t{Tq} * H * d_v, d_v},
                 {H * score_matrix, score_matrix});
}

GemmPlan planContextBackwardValues(int64_t dv_batch_stride, int64_t dv_row_stride, int B, int H,
                                   int Tq, int Tk, int d_v) {
  if (B <= 0 || H <= 0 || Tk <= 0 || d_v <= 0) return {};
  GemmCall base;  // column-major: dVᵀ[d_v×Tk] += dC-as-stored[d_v×Tq] · op(P-as-stored[Tk×Tq], T)
  base.transb = true;
  base.m = d_v;
  base.n = Tk;
  base.k = Tq;
  base.lda = leadingDim(int64_t{H} * d_v, "H·d_v (lda)");
  base.ldb = leadingDim(Tk, "Tk (ldb)");
  base.ldc = leadingDim(dv_row_stride, "dv row stride (ldc)");
  base.beta = 1.0f;
  const int64_t score_matrix = int64_t{Tq} * Tk;
  return perHead(base, B, H, {int64_t{Tq} * H * d_v, d_v}, {H * score_matrix, score_matrix},
                 {dv_batch_stride, d_v});
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

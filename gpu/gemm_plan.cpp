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

// Where an operand's matrix for (batch item b, head h) starts: b·per_batch + (h / group)·per_head
// floats. group > 1: a key/value operand of grouped-query attention, whose head serves `group`
// consecutive query heads.
struct Strides {
  int64_t per_batch, per_head;
  int group = 1;
  int64_t at(int b, int h) const { return b * per_batch + (h / group) * per_head; }
};

// How many query heads share a key/value head: H / kv_heads; Error(Backend) unless kv_heads
// divides H.
int groupSize(int H, int kv_heads) {
  if (kv_heads < 1 || H % kv_heads != 0)
    throw Error(ErrorKind::Backend, "cuBLAS plan: " + std::to_string(kv_heads) +
                                        " key/value heads do not divide " + std::to_string(H) +
                                        " query heads");
  return H / kv_heads;
}

// One strided-batched call over the products (b0 + p·db, h0 + p·dh) for p < count; each
// operand's offset must grow linearly along them (the planners below only step that way).
GemmCall batched(const GemmCall& base, Strides a, Strides b, Strides c, int b0, int h0, int db,
                 int dh, int count) {
  GemmCall g = base;
  g.a_offset = a.at(b0, h0);
  g.b_offset = b.at(b0, h0);
  g.c_offset = c.at(b0, h0);
  if (count > 1) {
    g.stride_a = a.at(b0 + db, h0 + dh) - g.a_offset;
    g.stride_b = b.at(b0 + db, h0 + dh) - g.b_offset;
    g.stride_c = c.at(b0 + db, h0 + dh) - g.c_offset;
  }
  g.batch_count = count;
  return g;
}

// One product per (batch item, query head), whichever of two batchings needs fewer calls:
//   over the heads: a call per batch item and member i of a group (for a grouped operand, head
//     h = g·group + i reads its head g: the call steps g), each over H / group heads;
//   over the batch: a call per head, each over the B batch items.
// No call has two products writing the same C: where C is grouped (dK, dV), the members of a
// group write their key/value head in successive calls, so their contributions add up in order.
GemmPlan perHead(const GemmCall& base, int B, int H, Strides a, Strides b, Strides c) {
  const int group = std::max({a.group, b.group, c.group});
  GemmPlan plan;
  if (int64_t{B} * group <= H) {
    for (int bi = 0; bi < B; ++bi)
      for (int i = 0; i < group; ++i)
        plan.push_back(batched(base, a, b, c, bi, i, 0, group, H / group));
  } else {
    for (int h = 0; h < H; ++h) plan.push_back(batched(base, a, b, c, 0, h, 1, 0, B));
  }
  return checked(std::move(plan));
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
                    int64_t k_row_stride, int B, int H, int kv_heads, int Tq, int Tk, int d_k,
                    float scale) {
  const int group = groupSize(H, kv_heads);
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
  return perHead(base, B, H, {k_batch_stride, d_k, group}, {q_batch_stride, d_k},
                 {H * score_matrix, score_matrix});
}

GemmPlan planContext(int64_t v_batch_stride, int64_t v_row_stride, int B, int H, int kv_heads,
                     int Tq, int Tk, int d_v) {
  const int group = groupSize(H, kv_heads);
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
  return perHead(base, B, H, {v_batch_stride, d_v, group}, {H * score_matrix, score_matrix},
                 {Tq * ctx_width, d_v});
}

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
                                 int kv_heads, int Tq, int Tk, int d_k, float scale) {
  const int group = groupSize(H, kv_heads);
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
  return perHead(base, B, H, {k_batch_stride, d_k, group}, {H * score_matrix, score_matrix},
                 {dq_batch_stride, d_k});
}

GemmPlan planScoresBackwardKey(int64_t q_batch_stride, int64_t q_row_stride,
                               int64_t dk_batch_stride, int64_t dk_row_stride, int B, int H,
                               int kv_heads, int Tq, int Tk, int d_k, float scale) {
  const int group = groupSize(H, kv_heads);
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
                 {dk_batch_stride, d_k, group});
}

GemmPlan planContextBackwardProbs(int64_t v_batch_stride, int64_t v_row_stride, int B, int H,
                                  int kv_heads, int Tq, int Tk, int d_v) {
  const int group = groupSize(H, kv_heads);
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
  return perHead(base, B, H, {v_batch_stride, d_v, group}, {int64_t{Tq} * H * d_v, d_v},
                 {H * score_matrix, score_matrix});
}

GemmPlan planContextBackwardValues(int64_t dv_batch_stride, int64_t dv_row_stride, int B, int H,
                                   int kv_heads, int Tq, int Tk, int d_v) {
  const int group = groupSize(H, kv_heads);
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
                 {dv_batch_stride, d_v, group});
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

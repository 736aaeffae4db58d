#include "cpu_backend.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <vector>

#include "counter_rng.h"
#include "error.h"

namespace attnviz {

namespace {

// The one place Eigen maps raw row-major buffers.
using MatrixRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMapRM = Eigen::Map<const MatrixRM>;
using MapRM = Eigen::Map<MatrixRM>;
using Stride = Eigen::OuterStride<>;
using ConstStridedMapRM = Eigen::Map<const MatrixRM, 0, Stride>;
using StridedMapRM = Eigen::Map<MatrixRM, 0, Stride>;
using VectorRow = Eigen::Matrix<float, 1, Eigen::Dynamic>;

// The mean and 1/√(variance + eps) of a row of d values (biased variance, two passes, as PyTorch).
void rowStats(const float* x, int d, float eps, float* mean_out, float* rstd_out) {
  float mean = 0;
  for (int c = 0; c < d; ++c) mean += x[c];
  mean /= d;
  float var = 0;
  for (int c = 0; c < d; ++c) var += (x[c] - mean) * (x[c] - mean);
  var /= d;
  *mean_out = mean;
  *rstd_out = 1.0f / std::sqrt(var + eps);
}

class HostBuffer final : public DeviceBuffer {
 public:
  explicit HostBuffer(size_t bytes) : bytes_(bytes) {
    // 64-byte aligned, zero-filled; at least one byte so data() is never null.
    data_ = static_cast<uint8_t*>(
        ::operator new[](std::max<size_t>(bytes, 1), std::align_val_t(64), std::nothrow));
    if (!data_)
      throw Error(ErrorKind::Backend,
                  "out of host memory allocating " + std::to_string(bytes >> 20) + " MiB");
    std::memset(data_, 0, std::max<size_t>(bytes, 1));
  }
  ~HostBuffer() override { ::operator delete[](data_, std::align_val_t(64)); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  size_t bytes() const override { return bytes_; }
  void* data() override { return data_; }
  const void* data() const override { return data_; }

 private:
  size_t bytes_;
  uint8_t* data_;
};

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::string description() const override {
    // One thread: on a 2-core laptop the GUI needs the other core, and OpenMP's spinning
    // barriers made a loaded machine 30× slower (see docs/performance.md).
    return "CPU (Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
           std::to_string(EIGEN_MAJOR_VERSION) + ", 1 thread)";
  }

  bool hostVisible() const override { return true; }
  BufferPtr allocate(size_t bytes) override { return std::make_unique<HostBuffer>(bytes); }
  void upload(DeviceBuffer& dst, const void* src, size_t bytes, size_t offset) override {
    if (offset + bytes > dst.bytes()) throw Error(ErrorKind::Backend, "upload out of bounds");
    if (bytes) std::memcpy(dst.u8() + offset, src, bytes);
  }
  void download(const DeviceBuffer& src, void* dst, size_t bytes, size_t offset) override {
    if (offset + bytes > src.bytes()) throw Error(ErrorKind::Backend, "download out of bounds");
    if (bytes) std::memcpy(dst, src.u8() + offset, bytes);
  }
  void copy(const float* src, float* dst, int64_t n) override {
    if (n > 0) std::memmove(dst, src, (size_t)n * sizeof(float));
  }
  void copy_to_host(const float* src, float* dst, int64_t n) override {
    if (n > 0) std::memcpy(dst, src, (size_t)n * sizeof(float));
  }

  // out[b, t, :] = table[ids[b, t], :] · scale + positions[pos0 + t, :]
  void embedding_forward(const int32_t* ids, const float* table, const float* positions, float* out,
                         int B, int T, int d, int pos0, float scale) override {
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t) {
        const float* e = table + (size_t)ids[b * T + t] * d;
        float* o = out + ((size_t)b * T + t) * d;
        if (positions) {
          const float* p = positions + (size_t)(pos0 + t) * d;
          for (int c = 0; c < d; ++c) o[c] = e[c] * scale + p[c];
        } else {
          for (int c = 0; c < d; ++c) o[c] = e[c] * scale;
        }
      }
  }

  // dtable[ids[b, t], :] += scale · dout[b, t, :]; dpositions[pos0 + t, :] += dout[b, t, :]
  void embedding_backward(const int32_t* ids, const float* dout, float* dtable, float* dpositions,
                          int B, int T, int d, int pos0, float scale) override {
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t) {
        const float* g = dout + ((size_t)b * T + t) * d;
        float* e = dtable + (size_t)ids[b * T + t] * d;
        for (int c = 0; c < d; ++c) e[c] += scale * g[c];
        if (dpositions) {
          float* p = dpositions + (size_t)(pos0 + t) * d;
          for (int c = 0; c < d; ++c) p[c] += g[c];
        }
      }
  }

  // out[r, :] += table[ids[r], :]
  void gather_add_forward(const int32_t* ids, const float* table, float* out, int rows,
                          int d) override {
    for (int r = 0; r < rows; ++r) {
      const float* e = table + (size_t)ids[r] * d;
      float* o = out + (size_t)r * d;
      for (int c = 0; c < d; ++c) o[c] += e[c];
    }
  }

  // dtable[ids[r], :] += dout[r, :]
  void gather_add_backward(const int32_t* ids, const float* dout, float* dtable, int rows,
                           int d) override {
    for (int r = 0; r < rows; ++r) {
      const float* g = dout + (size_t)r * d;
      float* e = dtable + (size_t)ids[r] * d;
      for (int c = 0; c < d; ++c) e[c] += g[c];
    }
  }

  // y[b, :] = mean over t of x[b, t, :]
  void mean_pool_forward(const float* x, float* y, int B, int T, int d) override {
    for (int b = 0; b < B; ++b) {
      float* yb = y + (size_t)b * d;
      std::fill(yb, yb + d, 0.0f);
      for (int t = 0; t < T; ++t) {
        const float* xr = x + ((size_t)b * T + t) * d;
        for (int c = 0; c < d; ++c) yb[c] += xr[c];
      }
      const float inv = 1.0f / (float)T;
      for (int c = 0; c < d; ++c) yb[c] *= inv;
    }
  }

  // dx[b, t, :] += dy[b, :] / T
  void mean_pool_backward(const float* dy, float* dx, int B, int T, int d) override {
    const float inv = 1.0f / (float)T;
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t) {
        const float* g = dy + (size_t)b * d;
        float* o = dx + ((size_t)b * T + t) * d;
        for (int c = 0; c < d; ++c) o[c] += g[c] * inv;
      }
  }

  // y[rows, out] = x[rows, in] · W[out, in]ᵀ (+ bias)
  void linear_forward(const float* x, const float* weight, const float* bias, float* y, int rows,
                      int in, int out) override {
    ConstMapRM X(x, rows, in);
    ConstMapRM W(weight, out, in);
    MapRM Y(y, rows, out);
    Y.noalias() = X * W.transpose();
    if (bias) Y.rowwise() += Eigen::Map<const VectorRow>(bias, out);
  }

  // dx[rows, in] += dy · W;  dW[out, in] += dyᵀ · x;  dbias[out] += Σ_r dy[r, :]
  void linear_backward(const float* dy, const float* x, const float* weight, float* dx,
                       float* dweight, float* dbias, int rows, int in, int out) override {
    if (rows <= 0) return;
    ConstMapRM DY(dy, rows, out);
    if (dx) MapRM(dx, rows, in).noalias() += DY * ConstMapRM(weight, out, in);
    if (dweight) MapRM(dweight, out, in).noalias() += DY.transpose() * ConstMapRM(x, rows, in);
    if (dbias) Eigen::Map<VectorRow>(dbias, out) += DY.colwise().sum();
  }

  // scores[b, h, i, j] = scale · q_h[b, i, :] · k_h[b, j, :]
  void attention_scores_forward(HeadsView q, HeadsView k, float* scores, int B, int H, int Tq,
                                int Tk, int d_k, float scale) override {
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h) {
        ConstStridedMapRM Q(q.data + b * q.batch_stride + (int64_t)h * d_k, Tq, d_k,
                            Stride(q.row_stride));
        ConstStridedMapRM K(k.data + b * k.batch_stride + (int64_t)h * d_k, Tk, d_k,
                            Stride(k.row_stride));
        MapRM S(scores + (((int64_t)b * H + h) * Tq) * Tk, Tq, Tk);
        S.noalias() = (Q * K.transpose()) * scale;
      }
  }

  // dq_h += scale · dS · K_h;  dk_h += scale · dSᵀ · Q_h   (per batch item and head)
  void attention_scores_backward(const float* dscores, HeadsView q, HeadsView k, HeadsGrad dq,
                                 HeadsGrad dk, int B, int H, int Tq, int Tk, int d_k,
                                 float scale) override {
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h) {
        ConstMapRM dS(dscores + (((int64_t)b * H + h) * Tq) * Tk, Tq, Tk);
        ConstStridedMapRM Q(q.data + b * q.batch_stride + (int64_t)h * d_k, Tq, d_k,
                            Stride(q.row_stride));
        ConstStridedMapRM K(k.data + b * k.batch_stride + (int64_t)h * d_k, Tk, d_k,
                            Stride(k.row_stride));
        StridedMapRM dQ(dq.data + b * dq.batch_stride + (int64_t)h * d_k, Tq, d_k,
                        Stride(dq.row_stride));
        StridedMapRM dK(dk.data + b * dk.batch_stride + (int64_t)h * d_k, Tk, d_k,
                        Stride(dk.row_stride));
        dQ.noalias() += scale * (dS * K);
        dK.noalias() += scale * (dS.transpose() * Q);
      }
  }

  void masked_softmax_forward(const float* scores, const uint8_t* mask, float* probs, int B, int H,
                              int Tq, int Tk, float fill) override {
    const int64_t rows = (int64_t)B * H * Tq;

    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = r / ((int64_t)H * Tq), i = r % Tq;
      const float* s = scores + r * Tk;
      const uint8_t* m = mask + (b * Tq + i) * Tk;
      float* p = probs + r * Tk;
      float mx = -std::numeric_limits<float>::infinity();
      for (int j = 0; j < Tk; ++j) {
        p[j] = m[j] ? fill : s[j];
        mx = std::max(mx, p[j]);
      }
      if (mx == -std::numeric_limits<float>::infinity()) {  // every key masked with −∞
        std::fill(p, p + Tk, 0.0f);
        continue;
      }
      float sum = 0;
      for (int j = 0; j < Tk; ++j) {
        p[j] = std::exp(p[j] - mx);
        sum += p[j];
      }
      const float inv = 1.0f / sum;
      for (int j = 0; j < Tk; ++j) p[j] *= inv;
    }
  }

  // dscores = probs ⊙ (dprobs − Σ probs·dprobs), 0 where masked (written; may alias dprobs)
  void masked_softmax_backward(const float* probs, const float* dprobs, const uint8_t* mask,
                               float* dscores, int B, int H, int Tq, int Tk) override {
    const int64_t rows = (int64_t)B * H * Tq;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = r / ((int64_t)H * Tq), i = r % Tq;
      const float* p = probs + r * Tk;
      const float* g = dprobs + r * Tk;
      const uint8_t* m = mask + (b * Tq + i) * Tk;
      float* o = dscores + r * Tk;
      float dot = 0;
      for (int j = 0; j < Tk; ++j) dot += p[j] * g[j];
      for (int j = 0; j < Tk; ++j) o[j] = m[j] ? 0.0f : p[j] * (g[j] - dot);
    }
  }

  // ctx[b, i, h·d_v + c] = Σ_j probs[b, h, i, j] · v_h[b, j, c]
  void attention_context_forward(const float* probs, HeadsView v, float* ctx, int B, int H, int Tq,
                                 int Tk, int d_v) override {
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h) {
        ConstMapRM P(probs + (((int64_t)b * H + h) * Tq) * Tk, Tq, Tk);
        ConstStridedMapRM V(v.data + b * v.batch_stride + (int64_t)h * d_v, Tk, d_v,
                            Stride(v.row_stride));
        Eigen::Map<MatrixRM, 0, Stride> C(ctx + (int64_t)b * Tq * H * d_v + (int64_t)h * d_v, Tq,
                                          d_v, Stride((int64_t)H * d_v));
        C.noalias() = P * V;
      }
  }

  // dprobs[b, h] = dC_h · V_hᵀ (written);  dv_h += P[b, h]ᵀ · dC_h
  void attention_context_backward(const float* dctx, const float* probs, HeadsView v, float* dprobs,
                                  HeadsGrad dv, int B, int H, int Tq, int Tk, int d_v) override {
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h) {
        ConstMapRM P(probs + (((int64_t)b * H + h) * Tq) * Tk, Tq, Tk);
        MapRM dP(dprobs + (((int64_t)b * H + h) * Tq) * Tk, Tq, Tk);
        ConstStridedMapRM V(v.data + b * v.batch_stride + (int64_t)h * d_v, Tk, d_v,
                            Stride(v.row_stride));
        StridedMapRM dV(dv.data + b * dv.batch_stride + (int64_t)h * d_v, Tk, d_v,
                        Stride(dv.row_stride));
        ConstStridedMapRM dC(dctx + (int64_t)b * Tq * H * d_v + (int64_t)h * d_v, Tq, d_v,
                             Stride((int64_t)H * d_v));
        dP.noalias() = dC * V.transpose();
        dV.noalias() += P.transpose() * dC;
      }
  }

  void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, int rows,
                         int d, float eps) override {
    for (int r = 0; r < rows; ++r) {
      const float* xr = x + (int64_t)r * d;
      float* yr = y + (int64_t)r * d;
      float mean, rstd;
      rowStats(xr, d, eps, &mean, &rstd);
      for (int c = 0; c < d; ++c) {
        float v = (xr[c] - mean) * rstd;
        yr[c] = gamma ? v * gamma[c] + beta[c] : v;
      }
    }
  }

  // From the input x: x̂ = (x − mean)·rstd, dx̂ = dy ⊙ gamma,
  // dx += rstd · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂)); dgamma += Σ dy ⊙ x̂; dbeta += Σ dy
  void layernorm_backward(const float* dy, const float* x, const float* gamma, float* dx,
                          float* dgamma, float* dbeta, int rows, int d, float eps) override {
    // Row by row: x̂ and dx̂ once into scratch, then the two means, then dx; the parameters'
    // gradients are sums over rows.
    std::vector<float> xhat((size_t)d), dxhat((size_t)d);
    for (int r = 0; r < rows; ++r) {
      const float* xr = x + (int64_t)r * d;
      const float* g = dy + (int64_t)r * d;
      float mean, rstd;
      rowStats(xr, d, eps, &mean, &rstd);
      for (int c = 0; c < d; ++c) xhat[(size_t)c] = (xr[c] - mean) * rstd;
      if (gamma)
        for (int c = 0; c < d; ++c) dxhat[(size_t)c] = g[c] * gamma[c];
      else
        std::copy(g, g + d, dxhat.begin());
      float mean_dxhat = 0, mean_dxhat_xhat = 0;
      for (int c = 0; c < d; ++c) {
        mean_dxhat += dxhat[(size_t)c];
        mean_dxhat_xhat += dxhat[(size_t)c] * xhat[(size_t)c];
      }
      mean_dxhat /= d;
      mean_dxhat_xhat /= d;
      if (dx) {
        float* __restrict o = dx + (int64_t)r * d;
        for (int c = 0; c < d; ++c)
          o[c] += rstd * (dxhat[(size_t)c] - mean_dxhat - xhat[(size_t)c] * mean_dxhat_xhat);
      }
      if (gamma && dgamma)
        for (int c = 0; c < d; ++c) dgamma[c] += g[c] * xhat[(size_t)c];
      if (gamma && dbeta)
        for (int c = 0; c < d; ++c) dbeta[c] += g[c];
    }
  }

  void activation_forward(float* x, int64_t n, Activation act) override {
    switch (act) {
      case Activation::Relu:
        for (int64_t i = 0; i < n; ++i)
          x[i] = x[i] < 0 ? 0.0f : x[i];  // NaN stays NaN, as torch.relu
        break;
      case Activation::Gelu:
        for (int64_t i = 0; i < n; ++i)
          x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
        break;
      case Activation::GeluTanh: {
        const float k = std::sqrt(2.0f / 3.14159265358979323846f);
        for (int64_t i = 0; i < n; ++i) {
          const float v = x[i];
          x[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
        }
        break;
      }
      case Activation::Silu:
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
        break;
      case Activation::Tanh:
        for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
        break;
    }
  }

  // dx[i] = dy[i] · act'(x[i]) (written; dx may alias dy)
  void activation_backward(const float* x, const float* dy, float* dx, int64_t n,
                           Activation act) override {
    switch (act) {
      case Activation::Relu:
        for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0 ? dy[i] : 0.0f;
        break;
      case Activation::Gelu:
        // d/dx x·Φ(x) = Φ(x) + x·φ(x)
        for (int64_t i = 0; i < n; ++i) {
          const float v = x[i];
          const float cdf = 0.5f * (1.0f + std::erf(v * 0.70710678118654752f));
          const float pdf = 0.39894228040143268f * std::exp(-0.5f * v * v);
          dx[i] = dy[i] * (cdf + v * pdf);
        }
        break;
      case Activation::GeluTanh: {
        // u = k·(x + 0.044715·x³): d/dx ½x(1 + tanh u) = ½(1 + tanh u) + ½x·(1 − tanh²u)·u'
        const float k = std::sqrt(2.0f / 3.14159265358979323846f);
        for (int64_t i = 0; i < n; ++i) {
          const float v = x[i];
          const float t = std::tanh(k * (v + 0.044715f * v * v * v));
          const float du = k * (1.0f + 3.0f * 0.044715f * v * v);
          dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
        }
        break;
      }
      case Activation::Silu:
        // d/dx x·σ(x) = σ(x)·(1 + x·(1 − σ(x)))
        for (int64_t i = 0; i < n; ++i) {
          const float sg = 1.0f / (1.0f + std::exp(-x[i]));
          dx[i] = dy[i] * sg * (1.0f + x[i] * (1.0f - sg));
        }
        break;
      case Activation::Tanh:
        for (int64_t i = 0; i < n; ++i) {
          const float t = std::tanh(x[i]);
          dx[i] = dy[i] * (1.0f - t * t);
        }
        break;
    }
  }

  void residual_forward(const float* x, float* y, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) y[i] += x[i];
  }

  // dx[i] += dy[i]
  void residual_backward(const float* dy, float* dx, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) dx[i] += dy[i];
  }

  void scale_forward(float* x, int64_t n, float s) override {
    for (int64_t i = 0; i < n; ++i) x[i] *= s;
  }

  // dx[i] *= s
  void scale_backward(float* dx, int64_t n, float s) override {
    for (int64_t i = 0; i < n; ++i) dx[i] *= s;
  }

  // ---- training only ----
  void zero(float* x, int64_t n) override {
    if (n > 0) std::memset(x, 0, (size_t)n * sizeof(float));
  }

  // x[i] = keep(seed, i) ? x[i] / (1 − p) : 0
  void dropout_forward(float* x, int64_t n, float p, uint64_t seed) override {
    if (p <= 0.0f) return;
    const uint32_t threshold = dropoutThreshold(p);
    const float keep_scale = 1.0f / (1.0f - p);
    for (int64_t i = 0; i < n; ++i)
      x[i] = dropoutKeep(seed, (uint64_t)i, threshold) ? x[i] * keep_scale : 0.0f;
  }
  // the same mask: dx[i] = keep(seed, i) ? dx[i] / (1 − p) : 0
  void dropout_backward(float* dx, int64_t n, float p, uint64_t seed) override {
    dropout_forward(dx, n, p, seed);
  }

  // losses[r] = logsumexp(z) − (1 − ε)·z[target] − (ε/V)·Σ_v z[v]  (= −Σ q·log softmax(z))
  void cross_entropy_forward(const float* logits, const int32_t* targets, float* losses,
                             int32_t* predictions, int rows, int V, int ignore_index,
                             float smoothing) override {
    for (int r = 0; r < rows; ++r) {
      const float* z = logits + (int64_t)r * V;
      int arg = 0;
      float mx = z[0], sum_z = 0;
      for (int v = 0; v < V; ++v) {
        if (z[v] > mx) mx = z[v], arg = v;
        sum_z += z[v];
      }
      predictions[r] = arg;
      const int t = targets[r];
      if (t == ignore_index) {
        losses[r] = 0.0f;
        continue;
      }
      float sum = 0;
      for (int v = 0; v < V; ++v) sum += std::exp(z[v] - mx);
      const float lse = mx + std::log(sum);
      losses[r] = lse - (1.0f - smoothing) * z[t] - smoothing / (float)V * sum_z;
    }
  }
  // dlogits[r] = scale · (softmax(z) − q), 0 for ignored rows
  void cross_entropy_backward(const float* logits, const int32_t* targets, float* dlogits, int rows,
                              int V, int ignore_index, float smoothing, float scale) override {
    for (int r = 0; r < rows; ++r) {
      const float* z = logits + (int64_t)r * V;
      float* g = dlogits + (int64_t)r * V;
      const int t = targets[r];
      if (t == ignore_index) {
        std::fill(g, g + V, 0.0f);
        continue;
      }
      float mx = z[0];
      for (int v = 1; v < V; ++v) mx = std::max(mx, z[v]);
      float sum = 0;
      for (int v = 0; v < V; ++v) sum += std::exp(z[v] - mx);
      const float inv = 1.0f / sum, off = smoothing / (float)V;
      for (int v = 0; v < V; ++v) g[v] = scale * (std::exp(z[v] - mx) * inv - off);
      g[t] -= scale * (1.0f - smoothing);
    }
  }

  double sum_squares(const float* x, int64_t n) override {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += (double)x[i] * x[i];
    return s;
  }

  void adamw_update(float* params, const float* grads, float* m, float* v, int64_t n,
                    const AdamStep& a) override {
    float* __restrict p = params;
    const float* __restrict g_in = grads;
    float* __restrict mm = m;
    float* __restrict vv = v;
    const float step_size = a.lr / a.bias_correction1;
    const float inv_bc2_sqrt = 1.0f / std::sqrt(a.bias_correction2);
    const float decay = a.decoupled ? 1.0f - a.lr * a.weight_decay : 1.0f;
    const float l2 = a.decoupled ? 0.0f : a.weight_decay;
    for (int64_t i = 0; i < n; ++i) {
      const float g = g_in[i] * a.grad_scale + l2 * p[i];
      mm[i] += (1.0f - a.beta1) * (g - mm[i]);
      vv[i] = a.beta2 * vv[i] + (1.0f - a.beta2) * g * g;
      p[i] = p[i] * decay - step_size * mm[i] / (std::sqrt(vv[i]) * inv_bc2_sqrt + a.eps);
    }
  }
};

}  // namespace

std::shared_ptr<Backend> makeCpuBackend() {
  return std::make_shared<CpuBackend>();
}

}  // namespace attnviz

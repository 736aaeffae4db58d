#include "cpu_backend.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>

#include "error.h"

namespace attnviz {

namespace {

// The one place Eigen maps raw row-major buffers.
using MatrixRM = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMapRM = Eigen::Map<const MatrixRM>;
using MapRM = Eigen::Map<MatrixRM>;
using Stride = Eigen::OuterStride<>;
using ConstStridedMapRM = Eigen::Map<const MatrixRM, 0, Stride>;
using VectorRow = Eigen::Matrix<float, 1, Eigen::Dynamic>;

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

  // out[r, :] += table[ids[r], :]
  void gather_add_forward(const int32_t* ids, const float* table, float* out, int rows,
                          int d) override {
    for (int r = 0; r < rows; ++r) {
      const float* e = table + (size_t)ids[r] * d;
      float* o = out + (size_t)r * d;
      for (int c = 0; c < d; ++c) o[c] += e[c];
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

  // y[rows, out] = x[rows, in] · W[out, in]ᵀ (+ bias)
  void linear_forward(const float* x, const float* weight, const float* bias, float* y, int rows,
                      int in, int out) override {
    ConstMapRM X(x, rows, in);
    ConstMapRM W(weight, out, in);
    MapRM Y(y, rows, out);
    Y.noalias() = X * W.transpose();
    if (bias) Y.rowwise() += Eigen::Map<const VectorRow>(bias, out);
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

  void masked_softmax_forward(const float* scores, const uint8_t* mask, float* probs, int B, int H,
                              int Tq, int Tk, float fill) override {
    const int64_t rows = (int64_t)B * H * Tq;

    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = r / ((int64_t)H * Tq), i = r % Tq;
      const float* s = scores + r * Tk;
      const uint8_t* m = mask + (b * Tq + i) * Tk;
      float* p = probs + r * Tk;
      float mx = -std::numeric_limits<float>::infinity();
      bool nan = false;
      for (int j = 0; j < Tk; ++j) {
        p[j] = m[j] ? fill : s[j];
        mx = std::max(mx, p[j]);
        nan = nan || std::isnan(p[j]);
      }
      if (nan) {  // a NaN score makes the row NaN (as PyTorch), never a fully masked row of zeros
        std::fill(p, p + Tk, std::numeric_limits<float>::quiet_NaN());
        continue;
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

  void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y, int rows,
                         int d, float eps) override {
    for (int r = 0; r < rows; ++r) {
      const float* xr = x + (int64_t)r * d;
      float* yr = y + (int64_t)r * d;
      float mean = 0;
      for (int c = 0; c < d; ++c) mean += xr[c];
      mean /= d;
      float var = 0;
      for (int c = 0; c < d; ++c) var += (xr[c] - mean) * (xr[c] - mean);
      var /= d;
      const float rstd = 1.0f / std::sqrt(var + eps);
      for (int c = 0; c < d; ++c) {
        float v = (xr[c] - mean) * rstd;
        yr[c] = gamma ? v * gamma[c] + beta[c] : v;
      }
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

  void residual_forward(const float* x, float* y, int64_t n) override {
    for (int64_t i = 0; i < n; ++i) y[i] += x[i];
  }

  void scale_forward(float* x, int64_t n, float s) override {
    for (int64_t i = 0; i < n; ++i) x[i] *= s;
  }
};

}  // namespace

std::shared_ptr<Backend> makeCpuBackend() {
  return std::make_shared<CpuBackend>();
}

}  // namespace attnviz

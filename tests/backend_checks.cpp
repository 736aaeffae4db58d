#include "backend_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <numbers>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "error.h"

namespace attnviz::checks {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Bounds on the normalised MSE Σ(x − y)² / Σy², per op. Both sides compute in float32:
// - products (linear, scores, context) of ≤ 512 terms summed in different orders differ by
//   ~1e-7 relative per element, an NMSE near 1e-13; 1e-9 keeps a wide margin and still fails
//   reduced-precision products (TF32's 10-bit mantissa gives ~1e-7, ggml's bound for them is 5e-4).
// - element- and row-wise ops differ by a few ulp of expf/erff/tanhf/sqrtf: NMSE ~1e-14.
constexpr double kNmseProduct = 1e-9;
constexpr double kNmseElementwise = 1e-10;

// The kernels' grid-stride loops cover 65535 blocks per sweep (gpu/kernels.cu): 65535 · 256
// elements for the element-wise kernels, 65535 · 4 rows for the row kernels. Cases named
// "…_sweep" go past one sweep, so every kernel runs its loop at least twice.
constexpr int64_t kElementSweep = int64_t{65535} * 256;
constexpr int64_t kRowSweep = int64_t{65535} * 4;

Outcome pass(std::string note = {}) {
  return {Status::Pass, std::move(note)};
}
Outcome fail(std::string why) {
  return {Status::Fail, std::move(why)};
}
Outcome skip(std::string why) {
  return {Status::Skip, std::move(why)};
}

template <class... Parts>
std::string str(const Parts&... parts) {
  std::ostringstream s;
  (s << ... << parts);
  return s.str();
}

// EXPECT(cond, "text " << value << ...): return a failure carrying the streamed message.
#define EXPECT(cond, why)          \
  do {                             \
    if (!(cond)) {                 \
      std::ostringstream message_; \
      message_ << why;             \
      return fail(message_.str()); \
    }                              \
  } while (0)

#define EXPECT_NMSE(err, bound, what) \
  EXPECT((err) <= (bound), what << ": nmse " << (err) << " > " << (bound))

bool onCpu(const Backend& be) {
  return be.name() == "cpu";
}

// Σ(x − y)² / Σy²  (NaN or a size mismatch gives +inf, so `nmse <= bound` fails).
double nmse(const float* x, const double* y, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(x[i]) - y[i];
    num += d * d;
    den += y[i] * y[i];
  }
  const double e = num / std::max(den, 1e-30);
  return std::isnan(e) ? double(kInf) : e;
}

double nmse(const std::vector<float>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) return kInf;
  return nmse(x.data(), y.data(), x.size());
}

double nmse(const std::vector<float>& x, const std::vector<float>& y) {
  return nmse(x, std::vector<double>(y.begin(), y.end()));
}

// Runs `run` (one op on a backend, returning its result) on `be` and on the CPU backend, and
// compares the first with the double reference and with the second.
template <class Run>
Outcome againstBoth(Run run, Backend& be, Backend& cpu, const std::vector<double>& ref,
                    double bound) {
  const auto got = run(be), cpu_result = run(cpu);
  EXPECT_NMSE(nmse(got, ref), bound, "vs reference");
  EXPECT_NMSE(nmse(got, cpu_result), bound, "vs cpu");
  return pass();
}

// Buffers of one backend for one check: upload host vectors, run ops on the returned pointers,
// download results. Pointers may be offset into a buffer (views); get() finds the owner.
class Arena {
 public:
  explicit Arena(Backend& backend) : be_(backend) {}

  template <class T>
  T* put(const std::vector<T>& host) {
    const size_t bytes = host.size() * sizeof(T);
    BufferPtr buffer = be_.allocate(std::max<size_t>(bytes, 1));
    if (bytes) be_.upload(*buffer, host.data(), bytes);
    T* p = static_cast<T*>(buffer->data());
    buffers_.push_back(std::move(buffer));
    return p;
  }
  // n zero floats (allocate() zero-fills).
  float* zeros(size_t n) {
    BufferPtr buffer = be_.allocate(std::max<size_t>(n * sizeof(float), 1));
    float* p = buffer->f32();
    buffers_.push_back(std::move(buffer));
    return p;
  }

  std::vector<float> get(const float* p, size_t n) {
    std::vector<float> host(n);
    for (const BufferPtr& b : buffers_) {
      const char* base = static_cast<const char*>(b->data());
      const char* at = reinterpret_cast<const char*>(p);
      if (at >= base && at < base + b->bytes()) {
        be_.download(*b, host.data(), n * sizeof(float), size_t(at - base));
        return host;
      }
    }
    throw std::logic_error("Arena::get: pointer not in any buffer");
  }

 private:
  Backend& be_;
  std::vector<BufferPtr> buffers_;
};

// ---- memory: allocate (zero-filled), upload/download at offsets, copy ----

Outcome memoryZeroedOffsetsCopy(Backend& be) {
  const size_t n = 1027;
  BufferPtr buf = be.allocate(n * sizeof(float));
  EXPECT(buf->bytes() == n * sizeof(float), "allocate(" << n * 4 << ") has " << buf->bytes());
  std::vector<float> host(n, 1.0f);
  be.download(*buf, host.data(), n * sizeof(float));
  EXPECT(std::all_of(host.begin(), host.end(), [](float v) { return v == 0.0f; }),
         "a new buffer is not zero-filled");

  const std::vector<float> src = randomFloats(n, 1);
  be.upload(*buf, src.data() + 100, 300 * sizeof(float), 200 * sizeof(float));
  std::vector<float> part(300);
  be.download(*buf, part.data(), 300 * sizeof(float), 200 * sizeof(float));
  EXPECT(std::equal(part.begin(), part.end(), src.begin() + 100), "upload/download at an offset");

  BufferPtr dst = be.allocate(n * sizeof(float));
  be.copy(buf->f32() + 200, dst->f32() + 7, 300);
  std::vector<float> all(n);
  be.download(*dst, all.data(), n * sizeof(float));
  EXPECT(std::equal(all.begin() + 7, all.begin() + 307, src.begin() + 100), "copy between buffers");
  EXPECT(all[6] == 0.0f && all[307] == 0.0f, "copy wrote outside its range");

  // int32 and uint8 contents round-trip unchanged.
  const std::vector<int32_t> ids{5, -1, 1 << 30, 7};
  BufferPtr ibuf = be.allocate(ids.size() * sizeof(int32_t));
  be.upload(*ibuf, ids.data(), ids.size() * sizeof(int32_t));
  std::vector<int32_t> ids_back(ids.size());
  be.download(*ibuf, ids_back.data(), ids.size() * sizeof(int32_t));
  EXPECT(ids_back == ids, "int32 round trip");

  // Out-of-range transfers are errors, not overruns.
  bool threw = false;
  try {
    be.upload(*buf, src.data(), 8, n * sizeof(float) - 4);
  } catch (const Error& e) {
    threw = e.kind() == ErrorKind::Backend;
  }
  EXPECT(threw, "an upload past the end of a buffer did not throw Error(Backend)");
  be.synchronize();
  return pass();
}

// copy() within one buffer, source and destination overlapping either way: memmove semantics.
Outcome memoryOverlappingCopy(Backend& be) {
  const size_t n = size_t{1} << 22;  // 16 MiB: the copy engines split it into many pieces
  const std::vector<float> src = randomFloats(n, 2);
  for (const int64_t shift : {int64_t{1}, int64_t{1000}, int64_t{-1}, int64_t{-1000}}) {
    BufferPtr buf = be.allocate(n * sizeof(float));
    be.upload(*buf, src.data(), n * sizeof(float));
    const int64_t count = int64_t(n) - 1000;
    const int64_t from = shift > 0 ? 0 : 1000, to = from + shift;
    be.copy(buf->f32() + from, buf->f32() + to, count);
    std::vector<float> want = src;
    std::memmove(want.data() + to, want.data() + from, size_t(count) * sizeof(float));
    std::vector<float> got(n);
    be.download(*buf, got.data(), n * sizeof(float));
    EXPECT(got == want,
           "an overlapping copy shifted by " << shift << " floats differs from memmove");
  }
  return pass();
}

// Uploads from host memory that is overwritten and freed as soon as upload() returns, while the
// device is still busy with earlier work (model.cpp uploads a decode step's token from the stack).
Outcome memoryTransientUpload(Backend& be) {
  // 256 MiB of element-wise work queued first, so the copies wait behind it (on the CPU, which
  // runs everything at once, a token amount).
  const size_t busy_n = onCpu(be) ? 1024 : size_t{1} << 26;
  BufferPtr busy = be.allocate(busy_n * sizeof(float));
  const size_t n = (size_t{9} << 20) + 3;  // 36 MiB: more than the staging ring holds at once
  const std::vector<float> want = randomFloats(n, 3);
  BufferPtr buf = be.allocate(n * sizeof(float));
  for (int i = 0; i < 4; ++i) be.activation_forward(busy->f32(), int64_t(busy_n), Activation::Tanh);
  {
    auto scratch = std::make_unique<std::vector<float>>(want);
    be.upload(*buf, scratch->data(), n * sizeof(float));
    std::fill(scratch->begin(), scratch->end(), std::numeric_limits<float>::quiet_NaN());
  }
  const int steps = 200;
  BufferPtr ids = be.allocate(steps * sizeof(int32_t));
  be.activation_forward(busy->f32(), int64_t(busy_n), Activation::Tanh);
  for (int32_t i = 0; i < steps; ++i) {
    int32_t token = 1000 + i;  // on the stack, as model.cpp's `tok`
    be.upload(*ids, &token, sizeof token, size_t(i) * sizeof token);
    token = -1;
  }
  std::vector<float> got(n);
  be.download(*buf, got.data(), n * sizeof(float));
  EXPECT(got == want, "a large upload from a buffer overwritten right after upload() differs");
  std::vector<int32_t> got_ids(steps);
  be.download(*ids, got_ids.data(), steps * sizeof(int32_t));
  for (int32_t i = 0; i < steps; ++i)
    EXPECT(got_ids[size_t(i)] == 1000 + i,
           "token " << i << " uploaded from the stack reads " << got_ids[size_t(i)]);
  return pass();
}

// Buffers made on this thread, ops run and results read on another (the GUI's worker threads).
Outcome memorySecondThread(Backend& be, Backend& cpu) {
  const int rows = 33, in = 64, out = 255;
  const auto x = randomFloats(size_t(rows) * in, 4), w = randomFloats(size_t(out) * in, 5);
  auto run = [&](Backend& on, bool other_thread) {
    Arena a(on);
    const float* xd = a.put(x);
    const float* wd = a.put(w);
    float* y = a.zeros(size_t(rows) * out);
    std::vector<float> result;
    std::string error;
    auto work = [&] {
      try {
        on.linear_forward(xd, wd, nullptr, y, rows, in, out);
        result = a.get(y, size_t(rows) * out);
      } catch (const std::exception& e) {
        error = e.what();
      }
    };
    if (other_thread)
      std::thread(work).join();
    else
      work();
    if (!error.empty()) throw std::runtime_error("on the second thread: " + error);
    return result;
  };
  const auto got = run(be, true), cpu_result = run(cpu, false);
  EXPECT_NMSE(nmse(got, cpu_result), kNmseProduct, "vs cpu");
  return pass();
}

// copy_to_host() from a pointer inside a buffer, right behind work that writes it.
Outcome memoryCopyToHost(Backend& be) {
  const size_t n = 100003;
  const std::vector<float> src = randomFloats(n, 5, -3.0f, 3.0f);
  BufferPtr buf = be.allocate(n * sizeof(float));
  be.upload(*buf, src.data(), n * sizeof(float));
  be.activation_forward(buf->f32(), int64_t(n), Activation::Relu);
  std::vector<float> got(n - 200, -1.0f);
  be.copy_to_host(buf->f32() + 100, got.data(), int64_t(got.size()));
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT(got[i] == std::max(src[i + 100], 0.0f),
           "element " << i << " reads " << got[i] << ", want relu(" << src[i + 100] << ")");
  return pass();
}

Outcome memory(Backend& be, Backend& cpu, int which) {
  switch (which) {
    case 0:
      return memoryZeroedOffsetsCopy(be);
    case 1:
      return memoryOverlappingCopy(be);
    case 2:
      return memoryTransientUpload(be);
    case 3:
      return memorySecondThread(be, cpu);
    default:
      return memoryCopyToHost(be);
  }
}

// ---- embedding_forward ----
Outcome embedding(Backend& be, Backend& cpu, int which) {
  struct Case {
    int B, T, d, vocab, max_len, pos0;
    float scale;
  };
  const Case cases[] = {{3, 7, 37, 23, 16, 0, 1.0f},
                        {2, 5, 64, 11, 12, 7, 8.0f},
                        {1, 1, 1, 2, 1, 0, 1.0f},
                        {2, 3, 16, 5, 0, 0, 2.0f},  // max_len 0: no positions (nullptr)
                        {2, 4100, 2048, 50, 4103, 3, 1.5f}};
  const Case c = cases[which];
  std::vector<int32_t> ids(size_t(c.B) * c.T);  // [B, T]
  std::mt19937 rng(10 + which);
  for (auto& id : ids) id = int32_t(rng() % c.vocab);
  const auto table = randomFloats(size_t(c.vocab) * c.d, 11);        // [vocab, d]
  const auto positions = randomFloats(size_t(c.max_len) * c.d, 12);  // [max_len, d]
  const size_t n = size_t(c.B) * c.T * c.d;                          // out [B, T, d]
  std::vector<double> ref(n);
  for (int b = 0; b < c.B; ++b)
    for (int t = 0; t < c.T; ++t)
      for (int k = 0; k < c.d; ++k)
        ref[(size_t(b) * c.T + t) * c.d + k] =
            double(table[size_t(ids[size_t(b) * c.T + t]) * c.d + k]) * c.scale +
            (c.max_len ? positions[size_t(c.pos0 + t) * c.d + k] : 0.0f);
  auto run = [&](Backend& on) {
    Arena a(on);
    float* out = a.zeros(n);
    on.embedding_forward(a.put(ids), a.put(table), c.max_len ? a.put(positions) : nullptr, out, c.B,
                         c.T, c.d, c.pos0, c.scale);
    return a.get(out, n);
  };
  return againstBoth(run, be, cpu, ref, kNmseElementwise);
}

// ---- gather_add_forward (segment embeddings) ----
Outcome gatherAdd(Backend& be, Backend& cpu, int which) {
  struct Case {
    int rows, n, d;
  };
  const Case cases[] = {{5, 2, 37}, {64, 3, 512}, {33000, 3, 512}};
  const Case c = cases[which];
  std::vector<int32_t> ids(size_t(c.rows));  // [rows]
  std::mt19937 rng(20 + which);
  for (auto& id : ids) id = int32_t(rng() % c.n);
  const auto table = randomFloats(size_t(c.n) * c.d, 21);    // [n, d]
  const auto out0 = randomFloats(size_t(c.rows) * c.d, 22);  // [rows, d]
  std::vector<double> ref(out0.size());
  for (int r = 0; r < c.rows; ++r)
    for (int k = 0; k < c.d; ++k)
      ref[size_t(r) * c.d + k] =
          double(out0[size_t(r) * c.d + k]) + table[size_t(ids[size_t(r)]) * c.d + k];
  auto run = [&](Backend& on) {
    Arena a(on);
    float* out = a.put(out0);
    on.gather_add_forward(a.put(ids), a.put(table), out, c.rows, c.d);
    return a.get(out, out0.size());
  };
  const auto got = run(be), cpu_result = run(cpu);
  EXPECT_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
  EXPECT(got == cpu_result, "vs cpu: one float addition per element must be bit-identical");
  return pass();
}

// ---- mean_pool_forward ----
Outcome meanPool(Backend& be, Backend& cpu, int which) {
  struct Case {
    int B, T, d;
  };
  const Case cases[] = {{1, 1, 8}, {3, 7, 37}, {2, 300, 512}, {33000, 2, 512}};
  const Case c = cases[which];
  const auto x = randomFloats(size_t(c.B) * c.T * c.d, 30 + which);  // [B, T, d]
  std::vector<double> ref(size_t(c.B) * c.d);                        // [B, d]
  for (int b = 0; b < c.B; ++b)
    for (int k = 0; k < c.d; ++k) {
      double sum = 0.0;
      for (int t = 0; t < c.T; ++t) sum += x[(size_t(b) * c.T + t) * c.d + k];
      ref[size_t(b) * c.d + k] = sum / c.T;
    }
  auto run = [&](Backend& on) {
    Arena a(on);
    float* y = a.zeros(ref.size());
    on.mean_pool_forward(a.put(x), y, c.B, c.T, c.d);
    return a.get(y, ref.size());
  };
  return againstBoth(run, be, cpu, ref, kNmseElementwise);
}

// ---- linear_forward ----
Outcome linear(Backend& be, Backend& cpu, int which) {
  struct Case {
    int rows, in, out;
    bool bias;
  };
  const Case cases[] = {{7, 13, 5, false},   {7, 13, 5, true},      {1, 129, 67, true},
                        {33, 64, 255, true}, {64, 512, 513, false}, {33000, 8, 512, true}};
  const Case c = cases[which];
  const auto x = randomFloats(size_t(c.rows) * c.in, 20);  // [rows, in]
  const auto w = randomFloats(size_t(c.out) * c.in, 21);   // [out, in]
  const auto bias = randomFloats(size_t(c.out), 22);       // [out]
  const size_t n = size_t(c.rows) * c.out;                 // y [rows, out]
  std::vector<double> ref(n);
  for (int r = 0; r < c.rows; ++r)
    for (int o = 0; o < c.out; ++o) {
      double acc = c.bias ? bias[size_t(o)] : 0.0;
      for (int i = 0; i < c.in; ++i)
        acc += double(x[size_t(r) * c.in + i]) * w[size_t(o) * c.in + i];
      ref[size_t(r) * c.out + o] = acc;
    }
  auto run = [&](Backend& on) {
    Arena a(on);
    float* y = a.zeros(n);
    on.linear_forward(a.put(x), a.put(w), c.bias ? a.put(bias) : nullptr, y, c.rows, c.in, c.out);
    return a.get(y, n);
  };
  return againstBoth(run, be, cpu, ref, kNmseProduct);
}

// One attention layout: where Q, K, V sit in their activation buffers (all in floats).
struct Layout {
  const char* name;
  int B, H, Tq, Tk, d;
  int64_t q_size, q_offset, q_batch, q_row;  // the q view's buffer and head-0 offset, strides
  int64_t k_size, k_offset, k_batch, k_row;  // likewise k
  int64_t v_offset;                          // v: k's buffer shape, this head-0 offset
  bool fused;                                // Q, K, V in one buffer (q's)
};

const std::vector<Layout>& layouts() {
  static const std::vector<Layout> ls = [] {
    std::vector<Layout> ls;
    {  // separate contiguous projections [B, T, H·d]
      const int B = 2, H = 3, Tq = 5, Tk = 7, d = 4, w = H * d;
      ls.push_back({"contiguous", B, H, Tq, Tk, d, int64_t{B} * Tq * w, 0, int64_t{Tq} * w, w,
                    int64_t{B} * Tk * w, 0, int64_t{Tk} * w, w, 0, false});
    }
    {  // more batch items than heads
      const int B = 5, H = 2, Tq = 3, Tk = 6, d = 5, w = H * d;
      ls.push_back({"batch_gt_heads", B, H, Tq, Tk, d, int64_t{B} * Tq * w, 0, int64_t{Tq} * w, w,
                    int64_t{B} * Tk * w, 0, int64_t{Tk} * w, w, 0, false});
    }
    {  // fused QKV projection [B, T, 3·H·d], tutorial-sized heads
      const int B = 2, H = 8, T = 33, d = 64, w = H * d;
      const int64_t size = int64_t{B} * T * 3 * w;
      ls.push_back({"fused_qkv", B, H, T, T, d, size, 0, int64_t{T} * 3 * w, 3 * w, size, w,
                    int64_t{T} * 3 * w, 3 * w, 2 * w, true});
    }
    {  // decode step: one query [B, 1, H·d] against a KV cache [B, capacity, H·d]
      const int B = 3, H = 4, Tk = 6, capacity = 11, d = 3, w = H * d;
      ls.push_back({"kv_cache_step", B, H, 1, Tk, d, int64_t{B} * w, 0, w, w,
                    int64_t{B} * capacity * w, 0, int64_t{capacity} * w, w, 0, false});
    }
    {  // cross attention: decoder queries [B, Tq, H·d] against fused encoder K/V [B, S, 2·H·d]
      const int B = 2, H = 2, Tq = 4, S = 9, d = 7, w = H * d;
      ls.push_back({"cross_fused_kv", B, H, Tq, S, d, int64_t{B} * Tq * w, 0, int64_t{Tq} * w, w,
                    int64_t{B} * S * 2 * w, 0, int64_t{S} * 2 * w, 2 * w, w, false});
    }
    ls.push_back({"single", 1, 1, 3, 1, 1, 3, 0, 3, 1, 1, 0, 1, 1, 0, false});
    {  // the tutorial's size at 200 tokens, fused QKV: the interleaved outputs of a real layer
      const int B = 1, H = 8, T = 200, d = 64, w = H * d;
      const int64_t size = int64_t{B} * T * 3 * w;
      ls.push_back({"tutorial_fused_200", B, H, T, T, d, size, 0, int64_t{T} * 3 * w, 3 * w, size,
                    w, int64_t{T} * 3 * w, 3 * w, 2 * w, true});
    }
    {  // long and uneven, few heads: split over query rows across threads; fused QKV strides
      const int B = 1, H = 3, T = 301, d = 64, w = H * d;
      const int64_t size = int64_t{B} * T * 3 * w;
      ls.push_back({"fused_301x301_3heads", B, H, T, T, d, size, 0, int64_t{T} * 3 * w, 3 * w,
                    size, w, int64_t{T} * 3 * w, 3 * w, 2 * w, true});
    }
    {  // cross attention, Tq != Tk, both uneven, batch 2
      const int B = 2, H = 5, Tq = 77, S = 259, d = 32, w = H * d;
      ls.push_back({"cross_77x259_5heads", B, H, Tq, S, d, int64_t{B} * Tq * w, 0,
                    int64_t{Tq} * w, w, int64_t{B} * S * 2 * w, 0, int64_t{S} * 2 * w, 2 * w, w,
                    false});
    }
    {  // decode step over a long cache: one query row per head (matrix-vector products)
      const int B = 1, H = 16, Tk = 3001, capacity = 3003, d = 64, w = H * d;
      ls.push_back({"kv_cache_step_3001", B, H, 1, Tk, d, int64_t{B} * w, 0, w, w,
                    int64_t{B} * capacity * w, 0, int64_t{capacity} * w, w, 0, false});
    }
    return ls;
  }();
  return ls;
}

std::vector<std::string> layoutNames() {
  std::vector<std::string> names;
  for (const Layout& l : layouts()) names.push_back(l.name);
  return names;
}

// ---- attention_scores_forward ----
Outcome scores(Backend& be, Backend& cpu, int which) {
  const Layout l = layouts()[size_t(which)];
  const auto qbuf = randomFloats(size_t(l.q_size), 30 + which);
  const auto kbuf = l.fused ? qbuf : randomFloats(size_t(l.k_size), 40 + which);
  const float scale = 1.0f / std::sqrt(float(l.d));
  const size_t n = size_t(l.B) * l.H * l.Tq * l.Tk;  // scores [B, H, Tq, Tk]
  std::vector<double> ref(n);
  for (int b = 0; b < l.B; ++b)
    for (int h = 0; h < l.H; ++h)
      for (int i = 0; i < l.Tq; ++i)
        for (int j = 0; j < l.Tk; ++j) {
          double acc = 0.0;
          for (int c = 0; c < l.d; ++c)
            acc += double(qbuf[size_t(l.q_offset + b * l.q_batch + i * l.q_row + h * l.d + c)]) *
                   kbuf[size_t(l.k_offset + b * l.k_batch + j * l.k_row + h * l.d + c)];
          ref[((size_t(b) * l.H + h) * l.Tq + i) * l.Tk + j] = scale * acc;
        }
  auto run = [&](Backend& on) {
    Arena a(on);
    const float* q = a.put(qbuf);
    const float* k = l.fused ? q : a.put(kbuf);
    float* s = a.zeros(n);
    on.attention_scores_forward({q + l.q_offset, l.q_batch, l.q_row},
                                {k + l.k_offset, l.k_batch, l.k_row}, s, l.B, l.H, l.Tq, l.Tk, l.d,
                                scale);
    return a.get(s, n);
  };
  return againstBoth(run, be, cpu, ref, kNmseProduct);
}

// One row of masked softmax in double, as backend.h defines it (a fully masked row with a -inf
// fill is all zeros).
void softmaxRowReference(const float* s, const uint8_t* m, int Tk, float fill, double* out) {
  double mx = -kInf;
  for (int j = 0; j < Tk; ++j) mx = std::max(mx, m[j] ? double(fill) : s[j]);
  double sum = 0.0;
  for (int j = 0; j < Tk; ++j)
    sum += mx == -kInf ? 0.0 : std::exp((m[j] ? double(fill) : s[j]) - mx);
  for (int j = 0; j < Tk; ++j)
    out[j] = sum == 0.0 ? 0.0 : std::exp((m[j] ? double(fill) : s[j]) - mx) / sum;
}

// ---- masked_softmax_forward ----
Outcome softmax(Backend& be, Backend& cpu, int which) {
  struct Case {
    int B, H, Tq, Tk;
    float fill;
    bool causal;
  };
  const Case cases[] = {{2, 3, 5, 7, -1e9f, false},    {2, 3, 5, 7, -kInf, false},
                        {1, 2, 4, 1, -1e9f, false},    {2, 2, 3, 33, -kInf, true},
                        {1, 4, 9, 129, -1e9f, false},  {2, 8, 17, 300, -kInf, false},
                        {4, 16, 4100, 5, -1e9f, false}};
  const Case c = cases[which];
  const size_t n = size_t(c.B) * c.H * c.Tq * c.Tk;  // scores, probs [B, H, Tq, Tk]
  const auto scores = randomFloats(n, 50 + which, -20.0f, 20.0f);
  // mask [B, Tq, Tk]: random (~35%) or causal plus padding; query 0 of the last batch item
  // fully masked, and (when Tq > 1) query 1 of batch item 0 not masked at all.
  std::vector<uint8_t> mask(size_t(c.B) * c.Tq * c.Tk);
  std::mt19937 rng(60 + which);
  for (int b = 0; b < c.B; ++b)
    for (int i = 0; i < c.Tq; ++i)
      for (int j = 0; j < c.Tk; ++j)
        mask[(size_t(b) * c.Tq + i) * c.Tk + j] =
            c.causal ? (j > i || j >= c.Tk - b) : (rng() % 100) < 35;
  for (int j = 0; j < c.Tk; ++j) {
    mask[(size_t(c.B - 1) * c.Tq + 0) * c.Tk + j] = 1;
    if (c.Tq > 1 && c.B > 1) mask[(size_t(0) * c.Tq + 1) * c.Tk + j] = 0;
  }
  std::vector<double> ref(n);
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.H; ++h)
      for (int i = 0; i < c.Tq; ++i) {
        const size_t row = ((size_t(b) * c.H + h) * c.Tq + i) * c.Tk;
        softmaxRowReference(scores.data() + row, mask.data() + (size_t(b) * c.Tq + i) * c.Tk, c.Tk,
                            c.fill, ref.data() + row);
      }
  auto run = [&](Backend& on) {
    Arena a(on);
    float* p = a.zeros(n);
    on.masked_softmax_forward(a.put(scores), a.put(mask), p, c.B, c.H, c.Tq, c.Tk, c.fill);
    return a.get(p, n);
  };
  const auto got = run(be), cpu_result = run(cpu);
  EXPECT_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
  EXPECT_NMSE(nmse(got, cpu_result), kNmseElementwise, "vs cpu");
  // backend.h's promises, exactly: masked cells 0, rows sum to 1, fully masked rows uniform
  // (finite fill) or all zeros (-inf fill).
  for (int b = 0; b < c.B; ++b)
    for (int h = 0; h < c.H; ++h)
      for (int i = 0; i < c.Tq; ++i) {
        const size_t row = ((size_t(b) * c.H + h) * c.Tq + i) * c.Tk;
        const uint8_t* m = mask.data() + (size_t(b) * c.Tq + i) * c.Tk;
        const bool all = std::all_of(m, m + c.Tk, [](uint8_t v) { return v != 0; });
        double sum = 0.0;
        for (int j = 0; j < c.Tk; ++j) {
          const float p = got[row + j];
          sum += p;
          const char* broken = nullptr;
          if (all && c.fill == -kInf && p != 0.0f)
            broken = "a fully masked row with fill -inf is not all zeros";
          else if (all && c.fill != -kInf && !(std::abs(p - 1.0f / float(c.Tk)) <= 1e-7f))
            broken = "a fully masked row with a finite fill is not uniform";
          else if (!all && m[j] && p != 0.0f)
            broken = "a masked cell is not 0";
          EXPECT(!broken,
                 broken << " at (" << b << ", " << h << ", " << i << ", " << j << "): " << p);
        }
        if (!(all && c.fill == -kInf))
          EXPECT(std::abs(sum - 1.0) <= 1e-5,
                 "row (" << b << ", " << h << ", " << i << ") sums to " << sum);
      }
  return pass();
}

// ---- attention_context_forward ----
Outcome context(Backend& be, Backend& cpu, int which) {
  const Layout l = layouts()[size_t(which)];
  const auto vbuf = randomFloats(size_t(l.k_size), 70 + which);  // k's buffer shape
  const size_t np = size_t(l.B) * l.H * l.Tq * l.Tk;             // probs [B, H, Tq, Tk]
  const auto probs = randomFloats(np, 80 + which, 0.0f, 1.0f);
  const int64_t width = int64_t{l.H} * l.d;
  const size_t n = size_t(l.B) * l.Tq * size_t(width);  // ctx [B, Tq, H·d]
  std::vector<double> ref(n);
  for (int b = 0; b < l.B; ++b)
    for (int h = 0; h < l.H; ++h)
      for (int i = 0; i < l.Tq; ++i)
        for (int c = 0; c < l.d; ++c) {
          double acc = 0.0;
          for (int j = 0; j < l.Tk; ++j)
            acc += double(probs[((size_t(b) * l.H + h) * l.Tq + i) * l.Tk + j]) *
                   vbuf[size_t(l.v_offset + b * l.k_batch + j * l.k_row + h * l.d + c)];
          ref[(size_t(b) * l.Tq + i) * size_t(width) + size_t(h) * l.d + c] = acc;
        }
  auto run = [&](Backend& on) {
    Arena a(on);
    const float* v = a.put(vbuf);
    float* ctx = a.zeros(n);
    on.attention_context_forward(a.put(probs), {v + l.v_offset, l.k_batch, l.k_row}, ctx, l.B, l.H,
                                 l.Tq, l.Tk, l.d);
    return a.get(ctx, n);
  };
  return againstBoth(run, be, cpu, ref, kNmseProduct);
}

// ---- layernorm_forward ----
Outcome layernorm(Backend& be, Backend& cpu, int which) {
  struct Case {
    int rows, d;
    bool affine, in_place;
  };
  const Case cases[] = {{5, 37, true, false},   {5, 37, false, false}, {3, 129, true, true},
                        {9, 512, false, true},  {4, 1, true, false},   {2, 2048, true, false},
                        {300000, 3, true, true}};
  const Case c = cases[which];
  const float eps = 1e-5f;
  const size_t n = size_t(c.rows) * c.d;  // x, y [rows, d]
  const auto x = randomFloats(n, 90 + which, -3.0f, 5.0f);
  const auto gamma = randomFloats(size_t(c.d), 91, 0.5f, 1.5f);  // [d]
  const auto beta = randomFloats(size_t(c.d), 92);               // [d]
  std::vector<double> ref(n);
  for (int r = 0; r < c.rows; ++r) {
    const float* xr = x.data() + size_t(r) * c.d;
    double mean = 0.0, var = 0.0;
    for (int k = 0; k < c.d; ++k) mean += xr[k];
    mean /= c.d;
    for (int k = 0; k < c.d; ++k) var += (xr[k] - mean) * (xr[k] - mean);
    var /= c.d;
    for (int k = 0; k < c.d; ++k) {
      const double v = (xr[k] - mean) / std::sqrt(var + eps);
      ref[size_t(r) * c.d + k] = c.affine ? v * gamma[size_t(k)] + beta[size_t(k)] : v;
    }
  }
  auto run = [&](Backend& on) {
    Arena a(on);
    float* xd = a.put(x);
    float* y = c.in_place ? xd : a.zeros(n);
    on.layernorm_forward(xd, c.affine ? a.put(gamma) : nullptr, c.affine ? a.put(beta) : nullptr, y,
                         c.rows, c.d, eps);
    return a.get(y, n);
  };
  return againstBoth(run, be, cpu, ref, kNmseElementwise);
}

// ---- activation_forward ----
Outcome activation(Backend& be, Backend& cpu, int which) {
  const Activation acts[] = {Activation::Relu, Activation::Gelu, Activation::GeluTanh,
                             Activation::Silu, Activation::Tanh, Activation::Gelu};
  const size_t sizes[] = {1003, 1003, 4099, 1003, 1003, size_t(kElementSweep) + 1001};
  const Activation act = acts[which];
  const auto x = randomFloats(sizes[which], 100 + which, -6.0f, 6.0f);
  std::vector<double> ref(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    switch (act) {
      case Activation::Relu:
        ref[i] = v > 0 ? v : 0.0;
        break;
      case Activation::Gelu:
        ref[i] = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
        break;
      case Activation::GeluTanh:
        ref[i] = 0.5 * v *
                 (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
        break;
      case Activation::Silu:
        ref[i] = v / (1.0 + std::exp(-v));
        break;
      case Activation::Tanh:
        ref[i] = std::tanh(v);
        break;
    }
  }
  auto run = [&](Backend& on) {
    Arena a(on);
    float* xd = a.put(x);
    on.activation_forward(xd, int64_t(x.size()), act);
    return a.get(xd, x.size());
  };
  return againstBoth(run, be, cpu, ref, kNmseElementwise);
}

// ---- residual_forward ----
Outcome residual(Backend& be, Backend& cpu, int which) {
  const size_t sizes[] = {1, 1027, 100003, size_t(kElementSweep) + 77};
  const size_t n = sizes[which];
  const auto x = randomFloats(n, 110 + which), y0 = randomFloats(n, 120 + which);
  std::vector<double> ref(n);
  for (size_t i = 0; i < n; ++i) ref[i] = double(y0[i]) + x[i];
  auto run = [&](Backend& on) {
    Arena a(on);
    float* y = a.put(y0);
    on.residual_forward(a.put(x), y, int64_t(n));
    return a.get(y, n);
  };
  const auto got = run(be), cpu_result = run(cpu);
  EXPECT_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
  EXPECT(got == cpu_result, "vs cpu: one float addition per element must be bit-identical");
  return pass();
}

// ---- scale_forward (a head's temperature, a head switched off) ----
Outcome scale(Backend& be, Backend& cpu, int which) {
  const size_t sizes[] = {1, 1027, size_t(kElementSweep) + 5};
  const float factors[] = {0.0f, 0.37f, -2.5f};
  const size_t n = sizes[which];
  const float s = factors[which];
  const auto x0 = randomFloats(n, 150 + which);
  std::vector<double> ref(n);
  for (size_t i = 0; i < n; ++i) ref[i] = double(x0[i]) * s;
  auto run = [&](Backend& on) {
    Arena a(on);
    float* x = a.put(x0);
    on.scale_forward(x, int64_t(n), s);
    return a.get(x, n);
  };
  const auto got = run(be), cpu_result = run(cpu);
  EXPECT_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
  EXPECT(got == cpu_result, "vs cpu: one float multiplication per element must be bit-identical");
  return pass();
}

// ---- large: scores, softmax and context with a score buffer past 2³¹ floats ----
//
// One batch item, 16 heads of 12000 × 12000 scores: 2.3·10⁹ floats (9.2 GB) for the scores and as
// many for the probabilities; the last heads start past float index 2³¹, so every index and
// offset must be 64-bit. Checked on sampled rows (including the one that crosses 2³¹) against a
// double reference.
Outcome largeScores(Backend& be, Backend&, int) {
  if (onCpu(be)) return skip("GPU only (the CPU would need 19 GB and minutes)");
  const int B = 1, H = 16, T = 12000, d = 64, width = H * d;
  const int64_t per_head = int64_t{T} * T, n = int64_t{H} * per_head;  // [1, H, T, T]
  static_assert(int64_t{16} * 12000 * 12000 > (int64_t{1} << 31));
  const float scale = 1.0f / std::sqrt(float(d)), fill = -1e9f;
  BufferPtr s_buf, p_buf;
  try {
    s_buf = be.allocate(size_t(n) * sizeof(float));
    p_buf = be.allocate(size_t(n) * sizeof(float));
  } catch (const Error& e) {
    return skip(str("needs 2 × ", formatBytes(size_t(n) * 4), " of device memory: ", e.what()));
  }
  const auto q = randomFloats(size_t(T) * width, 130), k = randomFloats(size_t(T) * width, 131),
             v = randomFloats(size_t(T) * width, 132);  // [1, T, H·d] each
  std::vector<uint8_t> mask(size_t(T) * T);             // [1, T, T]: causal, last 100 keys padding
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < T; ++j) mask[size_t(i) * T + j] = j > i || j >= T - 100;
  Arena a(be);
  const float* qd = a.put(q);
  const float* kd = a.put(k);
  const float* vd = a.put(v);
  const uint8_t* md = a.put(mask);
  float* ctx = a.zeros(size_t(T) * width);
  be.attention_scores_forward({qd, int64_t{T} * width, width}, {kd, int64_t{T} * width, width},
                              s_buf->f32(), B, H, T, T, d, scale);
  be.masked_softmax_forward(s_buf->f32(), md, p_buf->f32(), B, H, T, T, fill);
  be.attention_context_forward(p_buf->f32(), {vd, int64_t{T} * width, width}, ctx, B, H, T, T, d);
  const auto got_ctx = a.get(ctx, size_t(T) * width);

  const int64_t crossing = int64_t{1} << 31;  // the first flat index past 32-bit signed offsets
  const int cross_h = int(crossing / per_head), cross_i = int((crossing % per_head) / T);
  const std::pair<int, int> rows[] = {{0, 0},
                                      {0, T - 1},
                                      {7, 5999},
                                      {cross_h, cross_i - 1},
                                      {cross_h, cross_i},
                                      {cross_h, cross_i + 1},
                                      {H - 1, 0},
                                      {H - 1, T / 2},
                                      {H - 1, T - 1}};
  std::vector<float> s_row(static_cast<size_t>(T)), p_row(static_cast<size_t>(T));
  std::vector<double> s_ref(static_cast<size_t>(T)), p_ref(static_cast<size_t>(T)),
      c_ref(static_cast<size_t>(d));
  for (const auto& [h, i] : rows) {
    const size_t offset = (size_t(h) * per_head + size_t(i) * T) * sizeof(float);
    be.download(*s_buf, s_row.data(), size_t(T) * sizeof(float), offset);
    be.download(*p_buf, p_row.data(), size_t(T) * sizeof(float), offset);
    for (int j = 0; j < T; ++j) {
      double acc = 0.0;
      for (int c = 0; c < d; ++c)
        acc += double(q[size_t(i) * width + h * d + c]) * k[size_t(j) * width + h * d + c];
      s_ref[size_t(j)] = scale * acc;
    }
    EXPECT_NMSE(nmse(s_row.data(), s_ref.data(), size_t(T)), kNmseProduct,
                "scores of head " << h << " row " << i);
    softmaxRowReference(s_row.data(), mask.data() + size_t(i) * T, T, fill, p_ref.data());
    EXPECT_NMSE(nmse(p_row.data(), p_ref.data(), size_t(T)), kNmseElementwise,
                "probabilities of head " << h << " row " << i);
    for (int c = 0; c < d; ++c) {
      double acc = 0.0;
      for (int j = 0; j < T; ++j) acc += p_ref[size_t(j)] * v[size_t(j) * width + h * d + c];
      c_ref[size_t(c)] = acc;
    }
    EXPECT_NMSE(nmse(got_ctx.data() + size_t(i) * width + size_t(h) * d, c_ref.data(), size_t(d)),
                kNmseProduct, "context of head " << h << " row " << i);
  }
  return pass(str("scores and probabilities of ", n, " floats each (2^31 = ", int64_t{1} << 31,
                  "); rows checked around flat index 2^31 (head ", cross_h, ", row ", cross_i,
                  ")"));
}

// ---- large: out of device memory in the middle of a sequence of ops, then the same again ----
Outcome outOfMemory(Backend& be, Backend&, int) {
  if (onCpu(be)) return skip("GPU only (it would exhaust the host's memory)");
  const int rows = 64, in = 512, out = 513;
  const auto x = randomFloats(size_t(rows) * in, 140), w = randomFloats(size_t(out) * in, 141);
  auto sequence = [&] {  // a linear layer, then a larger temporary: allocations along the way
    Arena a(be);
    float* y = a.zeros(size_t(rows) * out);
    be.linear_forward(a.put(x), a.put(w), nullptr, y, rows, in, out);
    float* big = a.zeros(size_t(64) << 20);  // 256 MiB
    be.residual_forward(y, big, int64_t(rows) * out);
    return a.get(big, size_t(rows) * out);
  };
  const auto before = sequence();
  std::vector<BufferPtr> hog;
  std::string oom;
  for (size_t chunk : {size_t{1} << 30, size_t{64} << 20, size_t{1} << 20}) {
    for (int i = 0; i < 4096; ++i) {
      try {
        hog.push_back(be.allocate(chunk));
      } catch (const Error& e) {
        if (oom.empty()) oom = e.what();
        break;
      }
    }
  }
  EXPECT(!oom.empty(), "allocated " << hog.size() << " buffers without running out of memory");
  EXPECT(oom.find("out of GPU memory") != std::string::npos, "the message: " << oom);
  EXPECT(be.healthy(), "out of memory marked the backend unusable: " << be.failure());
  std::string mid;
  try {
    sequence();
  } catch (const Error& e) {
    mid = e.what();
  }
  EXPECT(be.healthy(), "out of memory mid-sequence marked the backend unusable: " << be.failure());
  hog.clear();
  be.synchronize();
  const auto after = sequence();
  // cuBLAS may pick another algorithm when its workspace could not be had: equal to rounding.
  EXPECT_NMSE(nmse(after, before), kNmseProduct, "after running out of memory, vs before");
  return pass(str("first refusal: ", oom,
                  mid.empty() ? "; the sequence still fitted" : "; mid-sequence: " + mid));
}

// ---- fault: a kernel reads an illegal address ----
Outcome illegalAddress(Backend& be, Backend&, int) {
  if (onCpu(be)) return skip("GPU only (on the CPU it would crash the process)");
  BufferPtr y = be.allocate(size_t{1} << 22);
  const auto* bogus = reinterpret_cast<const float*>(uintptr_t{0x10});  // no device memory there
  std::string first;
  try {
    be.residual_forward(bogus, y->f32(), int64_t{1} << 20);
    be.synchronize();
  } catch (const Error& e) {
    first = e.what();
  }
  EXPECT(!first.empty(), "a kernel reading address 0x10 raised no error");
  EXPECT(first.find("Illegal") != std::string::npos ||
             first.find("LaunchFailure") != std::string::npos,
         "the error does not name the CUDA error: " << first);
  EXPECT(!be.healthy(), "failure() is empty after: " << first);
  const char* sync = std::getenv("ATTNVIZ_CUDA_SYNC");
  if (sync && std::string(sync) == "1")
    EXPECT(first.find("residual_forward faulted") != std::string::npos,
           "with ATTNVIZ_CUDA_SYNC=1 the error does not name the op: " << first);
  std::string second;
  try {
    BufferPtr again = be.allocate(64);
  } catch (const Error& e) {
    second = e.what();
  }
  EXPECT(second.find("unusable") != std::string::npos,
         "a call after the fault did not refuse: " << (second.empty() ? "it succeeded" : second));
  return pass(str("error: ", first, " | failure(): ", be.failure()));
}

}  // namespace

std::vector<float> randomFloats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

const std::vector<OpCheck>& opChecks() {
  static const std::vector<OpCheck> checks{
      {"memory",
       {"zeroed_offsets_copy", "overlapping_copy", "transient_upload", "second_thread",
        "copy_to_host"},
       &memory},
      {"embedding",
       {"3x7x37_pos0", "2x5x64_pos7_scaled", "1x1x1", "2x3x16_no_positions", "2x4100x2048_sweep"},
       &embedding},
      {"gather_add", {"5x2x37", "64x3x512", "33000x3x512_sweep"}, &gatherAdd},
      {"mean_pool", {"1x1x8", "3x7x37", "2x300x512", "33000x2x512_sweep"}, &meanPool},
      {"linear",
       {"7x13->5", "7x13->5_bias", "1x129->67_bias", "33x64->255_bias", "64x512->513",
        "33000x8->512_bias_sweep"},
       &linear},
      {"scores", layoutNames(), &scores},
      {"softmax",
       {"2x3x5x7_-1e9", "2x3x5x7_-inf", "1x2x4x1_-1e9", "2x2x3x33_-inf_causal", "1x4x9x129_-1e9",
        "2x8x17x300_-inf", "4x16x4100x5_-1e9_sweep"},
       &softmax},
      {"context", layoutNames(), &context},
      {"layernorm",
       {"5x37_affine", "5x37_identity", "3x129_affine_inplace", "9x512_identity_inplace",
        "4x1_affine", "2x2048_affine", "300000x3_affine_inplace_sweep"},
       &layernorm},
      {"activation",
       {"relu_1003", "gelu_1003", "gelu_tanh_4099", "silu_1003", "tanh_1003", "gelu_sweep"},
       &activation},
      {"residual", {"1", "1027", "100003", "sweep"}, &residual},
      {"scale", {"1_x0", "1027_x0.37", "sweep_x-2.5"}, &scale},
  };
  static_assert(kRowSweep < int64_t{4} * 16 * 4100 && kRowSweep < 300000);
  return checks;
}

const std::vector<OpCheck>& largeChecks() {
  static const std::vector<OpCheck> checks{
      {"large", {"scores_softmax_context_past_2^31"}, &largeScores},
      {"large", {"out_of_memory_then_recover"}, &outOfMemory},
  };
  return checks;
}

const std::vector<OpCheck>& faultChecks() {
  static const std::vector<OpCheck> checks{
      {"fault", {"illegal_address"}, &illegalAddress},
  };
  return checks;
}

Outcome runCase(const OpCheck& check, Backend& be, Backend& cpu, int which) {
  try {
    return check.run(be, cpu, which);
  } catch (const std::exception& e) {
    return fail(str("threw: ", e.what()));
  }
}

}  // namespace attnviz::checks

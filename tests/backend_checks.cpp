#include "backend_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <numbers>
#include <ostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "base/error.h"

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
// elements for the element-wise kernels, 65535 · 4 rows for the row kernels. A case larger than
// that (the last of most ops in opCases()) makes every kernel run its loop at least twice.
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

// ---- cases named from their parameters ----

std::ostream& operator<<(std::ostream& s, Activation a) {
  const char* names[] = {"relu", "gelu", "gelu_tanh", "silu", "tanh"};
  return s << names[int(a)];
}

std::ostream& operator<<(std::ostream& s, NormKind k) {
  const char* names[] = {"layernorm", "layernorm_std", "rmsnorm"};
  return s << names[int(k)];
}

std::ostream& operator<<(std::ostream& s, RopeLayout l) {
  return s << (l == RopeLayout::Interleaved ? "interleaved" : "halves");
}

// "rows=7 in=13 out=5 bias=1" from each name in `names` ("rows, in, out, bias", as the macro VARS
// writes them) and its value.
template <class... Values>
std::string varsString(const std::string& names, const Values&... values) {
  std::ostringstream out;
  size_t at = 0;
  auto one = [&](const auto& value) {
    const size_t comma = std::min(names.find(',', at), names.size());
    const size_t first = names.find_first_not_of(' ', at);
    if (at > 0) out << ' ';
    out << names.substr(first, comma - first) << '=' << value;
    at = comma + 1;
  };
  (one(values), ...);
  return out.str();
}

// A case struct's vars(): its parameters by name, so that a case's name can never disagree with
// what it checks (ggml's test-backend-ops names its cases so).
#define VARS(...) varsString(#__VA_ARGS__, __VA_ARGS__)

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

Outcome memoryZeroedOffsetsCopy(Backend& be, Backend&) {
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
Outcome memoryOverlappingCopy(Backend& be, Backend&) {
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
Outcome memoryTransientUpload(Backend& be, Backend&) {
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
Outcome memoryCopyToHost(Backend& be, Backend&) {
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

// ---- embedding_forward, embedding_backward ----
struct EmbeddingCase {
  int B, T, d, vocab, max_len, pos0;  // max_len 0: no positions (nullptr)
  float scale;
  std::string vars() const { return VARS(B, T, d, vocab, max_len, pos0, scale); }
};

Outcome embedding(Backend& be, Backend& cpu, const EmbeddingCase& c) {
  std::vector<int32_t> ids(size_t(c.B) * c.T);  // [B, T]
  std::mt19937 rng(10);
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

// Training; gradients start non-zero, so "accumulates" is checked too.
Outcome embeddingBackward(Backend& be, Backend& cpu, const EmbeddingCase& c) {
  std::vector<int32_t> ids(size_t(c.B) * c.T);  // [B, T]; a vocabulary of 4 repeats ids often
  std::mt19937 rng(200);
  for (auto& id : ids) id = int32_t(rng() % c.vocab);
  const auto dout = randomFloats(size_t(c.B) * c.T * c.d, 201);                // [B, T, d]
  const auto dtable0 = randomFloats(size_t(c.vocab) * c.d, 202);               // [vocab, d]
  const auto dpos0 = randomFloats(size_t(std::max(c.max_len, 1)) * c.d, 203);  // [max_len, d]
  std::vector<double> ref(dtable0.begin(), dtable0.end()), ref_pos(dpos0.begin(), dpos0.end());
  for (int b = 0; b < c.B; ++b)
    for (int t = 0; t < c.T; ++t)
      for (int k = 0; k < c.d; ++k) {
        const double g = dout[(size_t(b) * c.T + t) * c.d + k];
        ref[size_t(ids[size_t(b) * c.T + t]) * c.d + k] += c.scale * g;
        if (c.max_len) ref_pos[size_t(c.pos0 + t) * c.d + k] += g;
      }
  auto run = [&](Backend& on) {
    Arena a(on);
    float* dtable = a.put(dtable0);
    float* dpos = a.put(dpos0);
    on.embedding_backward(a.put(ids), a.put(dout), dtable, c.max_len ? dpos : nullptr, c.B, c.T,
                          c.d, c.pos0, c.scale);
    return std::make_pair(a.get(dtable, dtable0.size()), a.get(dpos, dpos0.size()));
  };
  const auto got = run(be), on_cpu = run(cpu);
  EXPECT_NMSE(nmse(got.first, ref), kNmseElementwise, "dtable vs reference");
  EXPECT_NMSE(nmse(got.second, ref_pos), kNmseElementwise, "dpositions vs reference");
  EXPECT_NMSE(nmse(got.first, on_cpu.first), kNmseElementwise, "dtable vs cpu");
  return pass();
}

// ---- gather_add_forward (segment embeddings), gather_add_backward ----
struct GatherAddCase {
  int rows, n, d;
  std::string vars() const { return VARS(rows, n, d); }
};

Outcome gatherAdd(Backend& be, Backend& cpu, const GatherAddCase& c) {
  std::vector<int32_t> ids(size_t(c.rows));  // [rows]
  std::mt19937 rng(20);
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

// Training; gradients start non-zero, so "accumulates" is checked too.
Outcome gatherAddBackward(Backend& be, Backend& cpu, const GatherAddCase& c) {
  const int rows = c.rows, n = c.n, d = c.d;
  std::vector<int32_t> ids(static_cast<size_t>(rows));
  std::mt19937 rng(210);
  for (auto& id : ids) id = int32_t(rng() % n);
  const auto dout = randomFloats(size_t(rows) * d, 211);
  const auto dtable0 = randomFloats(size_t(n) * d, 212);
  std::vector<double> ref(dtable0.begin(), dtable0.end());
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < d; ++k) ref[size_t(ids[size_t(r)]) * d + k] += dout[size_t(r) * d + k];
  auto run = [&](Backend& on) {
    Arena a(on);
    float* dtable = a.put(dtable0);
    on.gather_add_backward(a.put(ids), a.put(dout), dtable, rows, d);
    return a.get(dtable, dtable0.size());
  };
  const auto got = run(be), on_cpu = run(cpu);
  EXPECT_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
  EXPECT_NMSE(nmse(got, on_cpu), kNmseElementwise, "vs cpu");
  return pass();
}

// ---- mean_pool_forward, mean_pool_backward ----
struct MeanPoolCase {
  int B, T, d;
  std::string vars() const { return VARS(B, T, d); }
};

Outcome meanPool(Backend& be, Backend& cpu, const MeanPoolCase& c) {
  const auto x = randomFloats(size_t(c.B) * c.T * c.d, 30);  // [B, T, d]
  std::vector<double> ref(size_t(c.B) * c.d);                // [B, d]
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

// Training; gradients start non-zero, so "accumulates" is checked too.
Outcome meanPoolBackward(Backend& be, Backend& cpu, const MeanPoolCase& c) {
  const int B = c.B, T = c.T, d = c.d;
  const auto dy = randomFloats(size_t(B) * d, 220);
  const auto dx0 = randomFloats(size_t(B) * T * d, 221);
  std::vector<double> ref(dx0.begin(), dx0.end());
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int k = 0; k < d; ++k)
        ref[(size_t(b) * T + t) * d + k] += double(dy[size_t(b) * d + k]) / T;
  auto run = [&](Backend& on) {
    Arena a(on);
    float* dx = a.put(dx0);
    on.mean_pool_backward(a.put(dy), dx, B, T, d);
    return a.get(dx, dx0.size());
  };
  const auto got = run(be), on_cpu = run(cpu);
  EXPECT_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
  EXPECT_NMSE(nmse(got, on_cpu), kNmseElementwise, "vs cpu");
  return pass();
}

// ---- linear_forward ----
struct LinearCase {
  int rows, in, out;
  bool bias;
  std::string vars() const { return VARS(rows, in, out, bias); }
};

Outcome linear(Backend& be, Backend& cpu, const LinearCase& c) {
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

// ---- linear_backward (training; gradients start non-zero, so "accumulates" is checked too) ----
struct LinearBackwardCase {
  int rows, in, out;
  bool dx, bias;  // whether dx and dbias are asked for
  std::string vars() const { return VARS(rows, in, out, dx, bias); }
};

Outcome linearBackward(Backend& be, Backend& cpu, const LinearBackwardCase& c) {
  const auto x = randomFloats(size_t(c.rows) * c.in, 230);    // [rows, in]
  const auto w = randomFloats(size_t(c.out) * c.in, 231);     // [out, in]
  const auto dy = randomFloats(size_t(c.rows) * c.out, 232);  // [rows, out]
  const auto dx0 = randomFloats(x.size(), 233), dw0 = randomFloats(w.size(), 234),
             db0 = randomFloats(size_t(c.out), 235);
  std::vector<double> rdx(dx0.begin(), dx0.end()), rdw(dw0.begin(), dw0.end()),
      rdb(db0.begin(), db0.end());
  for (int r = 0; r < c.rows; ++r)
    for (int o = 0; o < c.out; ++o) {
      const double g = dy[size_t(r) * c.out + o];
      rdb[size_t(o)] += g;
      for (int i = 0; i < c.in; ++i) {
        rdx[size_t(r) * c.in + i] += g * w[size_t(o) * c.in + i];
        rdw[size_t(o) * c.in + i] += g * x[size_t(r) * c.in + i];
      }
    }
  struct Grads {
    std::vector<float> dx, dw, db;
  };
  auto run = [&](Backend& on) {
    Arena a(on);
    float *dx = a.put(dx0), *dw = a.put(dw0), *db = a.put(db0);
    on.linear_backward(a.put(dy), a.put(x), a.put(w), c.dx ? dx : nullptr, dw,
                       c.bias ? db : nullptr, c.rows, c.in, c.out);
    return Grads{a.get(dx, dx0.size()), a.get(dw, dw0.size()), a.get(db, db0.size())};
  };
  const Grads got = run(be), on_cpu = run(cpu);
  EXPECT_NMSE(nmse(got.dw, rdw), kNmseProduct, "dweight vs reference");
  EXPECT_NMSE(nmse(got.dw, on_cpu.dw), kNmseProduct, "dweight vs cpu");
  if (c.dx) EXPECT_NMSE(nmse(got.dx, rdx), kNmseProduct, "dx vs reference");
  if (c.bias) EXPECT_NMSE(nmse(got.db, rdb), kNmseProduct, "dbias vs reference");
  // Gradients not asked for stay as they were.
  if (!c.dx) EXPECT(got.dx == dx0, "dx changed though not asked for");
  if (!c.bias) EXPECT(got.db == db0, "dbias changed though not asked for");
  return pass();
}

// A layout whose query rows lie q_row floats apart ([B, Tq, ·]) and whose key/value buffer holds
// k_rows rows of k_row floats per batch item, K's head 0 at k_offset and V's at v_offset in a
// row; fused: one buffer for Q, K and V (q's).
AttentionLayout views(const char* name, int B, int H, int kv, int Tq, int Tk, int d, int64_t q_row,
                      int64_t k_row, int64_t k_rows, int64_t k_offset, int64_t v_offset,
                      bool fused) {
  AttentionLayout l;
  l.layout = name;
  l.B = B, l.H = H, l.kv_heads = kv, l.Tq = Tq, l.Tk = Tk, l.d = d;
  l.q_row = q_row, l.q_batch = Tq * q_row, l.q_size = B * l.q_batch;
  l.k_row = k_row, l.k_batch = k_rows * k_row, l.k_size = B * l.k_batch;
  l.k_offset = k_offset, l.v_offset = v_offset, l.fused = fused;
  return l;
}

// Separate projections: queries [B, Tq, H·d], keys [B, Tk, kv·d] (the values read the keys).
AttentionLayout contiguous(int B, int H, int kv, int Tq, int Tk, int d) {
  return views("contiguous", B, H, kv, Tq, Tk, d, int64_t{H} * d, int64_t{kv} * d, Tk, 0, 0, false);
}

// One fused projection [B, T, (H + 2·kv)·d]: Q, then K, then V (GPT-2's c_attn when kv = H).
AttentionLayout fusedQkv(int B, int H, int kv, int T, int d) {
  const int64_t row = int64_t{H + 2 * kv} * d;
  return views("fused_qkv", B, H, kv, T, T, d, row, row, T, int64_t{H} * d, int64_t{H + kv} * d,
               true);
}

// A decode step: one query [B, 1, H·d] against a key/value cache [B, capacity, kv·d], Tk used.
AttentionLayout kvCacheStep(int B, int H, int kv, int Tk, int capacity, int d) {
  return views("kv_cache_step", B, H, kv, 1, Tk, d, int64_t{H} * d, int64_t{kv} * d, capacity, 0, 0,
               false);
}

// Cross attention: decoder queries [B, Tq, H·d] against fused encoder K/V [B, S, 2·kv·d].
AttentionLayout crossFusedKv(int B, int H, int kv, int Tq, int S, int d) {
  return views("cross_fused_kv", B, H, kv, Tq, S, d, int64_t{H} * d, 2 * int64_t{kv} * d, S, 0,
               int64_t{kv} * d, false);
}

// ---- head_norm_forward, head_norm_backward: q and k normalised per head ----

// Defined with the norms' checks below.
void normRowReference(NormKind kind, const double* x, int d, double eps, double* xhat);
void normRowGradient(NormKind kind, const float* x, const float* dy, const float* gamma, int d,
                     double eps, double* dx, double* xhat);
Outcome expectNormGradients(const std::vector<float>& dx, const std::vector<float>& cpu_dx,
                            const std::vector<double>& ref_dx, const std::vector<float>& dg,
                            const std::vector<double>& ref_dg, const std::vector<float>& dg0,
                            bool gamma);

// A heads view as the pass meets it: "contiguous" q [B, T, heads·d_head], or "fused_kv" the keys
// of a key/value store [B, T, 2·heads·d_head] (each row's values after its keys).
struct HeadNormCase {
  NormKind kind;
  const char* view;
  int B, T, heads, d_head;
  bool gamma;
  float eps;
  std::string vars() const { return VARS(kind, view, B, T, heads, d_head, gamma, eps); }
  int64_t width() const { return int64_t{heads} * d_head; }
  int64_t row() const { return std::strcmp(view, "fused_kv") == 0 ? 2 * width() : width(); }
  int64_t size() const { return int64_t{B} * T * row(); }
  int64_t at(int b, int t, int h) const {
    return (int64_t{b} * T + t) * row() + int64_t{h} * d_head;
  }
  HeadsView in(const float* p) const { return {p, int64_t{T} * row(), row()}; }
  HeadsGrad out(float* p) const { return {p, int64_t{T} * row(), row()}; }
};

Outcome headNorm(Backend& be, Backend& cpu, const HeadNormCase& c) {
  const auto x = randomFloats(size_t(c.size()), 480, -3.0f, 5.0f);
  const auto gamma = randomFloats(size_t(c.d_head), 481, 0.5f, 1.5f);
  std::vector<double> ref(x.begin(), x.end());  // outside the heads: as it was
  for (int b = 0; b < c.B; ++b)
    for (int t = 0; t < c.T; ++t)
      for (int h = 0; h < c.heads; ++h) {
        double* row = ref.data() + c.at(b, t, h);
        normRowReference(c.kind, row, c.d_head, c.eps, row);
        if (c.gamma)
          for (int k = 0; k < c.d_head; ++k) row[k] *= gamma[size_t(k)];
      }
  auto run = [&](Backend& on) {
    Arena a(on);
    float* xd = a.put(x);
    on.head_norm_forward(c.kind, c.out(xd), c.gamma ? a.put(gamma) : nullptr, c.B, c.T, c.heads,
                         c.d_head, c.eps);
    return a.get(xd, x.size());
  };
  return againstBoth(run, be, cpu, ref, kNmseElementwise);
}

// Training, in place: the buffer holds dy and then dx (outside the heads: as it was); dgamma
// starts non-zero ("accumulates" checked). dx against central differences of the double reference,
// dgamma against Σ dy ⊙ x̂.
Outcome headNormBackward(Backend& be, Backend& cpu, const HeadNormCase& c) {
  const size_t n = size_t(c.size());
  const auto x = randomFloats(n, 490, -3.0f, 5.0f), dy = randomFloats(n, 491);
  const auto gamma = randomFloats(size_t(c.d_head), 492, 0.5f, 1.5f);
  const auto dg0 = randomFloats(size_t(c.d_head), 494);
  std::vector<double> rdx(dy.begin(), dy.end()), rdg(dg0.begin(), dg0.end());
  std::vector<double> xhat(size_t(c.d_head));
  for (int b = 0; b < c.B; ++b)
    for (int t = 0; t < c.T; ++t)
      for (int hd = 0; hd < c.heads; ++hd) {
        const size_t at = size_t(c.at(b, t, hd));
        std::fill_n(rdx.begin() + at, c.d_head, 0.0);
        normRowGradient(c.kind, x.data() + at, dy.data() + at, c.gamma ? gamma.data() : nullptr,
                        c.d_head, c.eps, rdx.data() + at, xhat.data());
        for (int k = 0; k < c.d_head; ++k) rdg[size_t(k)] += dy[at + k] * xhat[size_t(k)];
      }
  struct Grads {
    std::vector<float> dx, dg;
  };
  auto run = [&](Backend& on) {
    Arena a(on);
    float *dx = a.put(dy), *dg = a.put(dg0);
    on.head_norm_backward(c.kind, c.out(dx), c.in(a.put(x)), c.gamma ? a.put(gamma) : nullptr, dg,
                          c.B, c.T, c.heads, c.d_head, c.eps);
    return Grads{a.get(dx, n), a.get(dg, dg0.size())};
  };
  const Grads got = run(be), on_cpu = run(cpu);
  return expectNormGradients(got.dx, on_cpu.dx, rdx, got.dg, rdg, dg0, c.gamma);
}

// ---- rope_forward, rope_backward ----

// The angle tables as PyTorch builds them, in float32: inv_freq_i = 1 / θ^(2i / d_head) with
// θ = 10000, angle = p · inv_freq_i; cos and sin [positions, d_head/2] (row = position).
std::pair<std::vector<float>, std::vector<float>> ropeTables(int positions, int d_head) {
  const int half = d_head / 2;
  std::vector<float> cos(size_t(positions) * half), sin(cos.size());
  for (int i = 0; i < half; ++i) {
    const float inv_freq = 1.0f / std::pow(10000.0f, float(2 * i) / float(d_head));
    for (int p = 0; p < positions; ++p) {
      const float angle = float(p) * inv_freq;
      cos[size_t(p) * half + i] = std::cos(angle);
      sin[size_t(p) * half + i] = std::sin(angle);
    }
  }
  return {cos, sin};
}

struct RopeCase {
  RopeLayout layout;
  const char* view;  // "contiguous": [B, T, heads·d_head]; "fused_qkv": K of [B, T, 3·heads·d_head]
  int B, T, heads, d_head, pos0;
  std::string vars() const { return VARS(layout, view, B, T, heads, d_head, pos0); }

  // The view's buffer, in floats: its size, the offset of head 0, the batch and row strides.
  int64_t width() const { return int64_t{heads} * d_head; }
  bool fused() const { return std::strcmp(view, "fused_qkv") == 0; }
  int64_t row() const { return fused() ? 3 * width() : width(); }
  int64_t size() const { return int64_t{B} * T * row(); }
  int64_t offset() const { return fused() ? width() : 0; }
  // Where element k of head h of row t of batch item b sits in the buffer.
  int64_t at(int b, int t, int h, int k) const {
    return offset() + (int64_t{b} * T + t) * row() + int64_t{h} * d_head + k;
  }
};

// The buffer with the view rotated, in double, as backend.h defines it (sign 1: rope_forward;
// −1: rope_backward); elements outside the view as they were.
std::vector<double> ropeReference(const RopeCase& c, const std::vector<float>& buf,
                                  const std::vector<float>& cos, const std::vector<float>& sin,
                                  double sign) {
  std::vector<double> out(buf.begin(), buf.end());
  const int half = c.d_head / 2;
  const bool interleaved = c.layout == RopeLayout::Interleaved;
  for (int b = 0; b < c.B; ++b)
    for (int t = 0; t < c.T; ++t)
      for (int h = 0; h < c.heads; ++h)
        for (int i = 0; i < half; ++i) {
          const size_t first = size_t(c.at(b, t, h, interleaved ? 2 * i : i));
          const size_t second = size_t(c.at(b, t, h, interleaved ? 2 * i + 1 : i + half));
          const size_t angle = size_t(c.pos0 + t) * half + i;
          const double co = cos[angle], si = sign * sin[angle], x0 = buf[first], x1 = buf[second];
          out[first] = x0 * co - x1 * si;
          out[second] = x0 * si + x1 * co;
        }
  return out;
}

// Whether the elements outside the view are exactly as they were.
bool outsideUntouched(const RopeCase& c, const std::vector<float>& got,
                      const std::vector<float>& before) {
  std::vector<uint8_t> in_view(got.size(), 0);
  for (int b = 0; b < c.B; ++b)
    for (int t = 0; t < c.T; ++t) std::fill_n(in_view.begin() + c.at(b, t, 0, 0), c.width(), 1);
  for (size_t i = 0; i < got.size(); ++i)
    if (!in_view[i] && got[i] != before[i]) return false;
  return true;
}

// rope_forward (backward false) or rope_backward on a copy of `buf`: the whole buffer after.
std::vector<float> runRope(Backend& on, const RopeCase& c, const std::vector<float>& buf,
                           const std::vector<float>& cos, const std::vector<float>& sin,
                           bool backward) {
  Arena a(on);
  float* x = a.put(buf);
  const HeadsGrad view{x + c.offset(), int64_t{c.T} * c.row(), c.row()};
  if (backward)
    on.rope_backward(view, a.put(cos), a.put(sin), c.B, c.T, c.heads, c.d_head, c.pos0, c.layout);
  else
    on.rope_forward(view, a.put(cos), a.put(sin), c.B, c.T, c.heads, c.d_head, c.pos0, c.layout);
  return a.get(x, buf.size());
}

Outcome rope(Backend& be, Backend& cpu, const RopeCase& c) {
  const auto x = randomFloats(size_t(c.size()), 460);
  const auto [cos, sin] = ropeTables(c.pos0 + c.T, c.d_head);
  const auto got = runRope(be, c, x, cos, sin, false), on_cpu = runRope(cpu, c, x, cos, sin, false);
  EXPECT_NMSE(nmse(got, ropeReference(c, x, cos, sin, 1.0)), kNmseElementwise, "vs reference");
  EXPECT_NMSE(nmse(got, on_cpu), kNmseElementwise, "vs cpu");
  EXPECT(outsideUntouched(c, got, x), "an element outside the view changed");
  return pass();
}

// Training; the gradient is WRITTEN in place. Besides the reference, the backward is checked to be
// the transpose of the forward as this backend computes both: ⟨R·x, y⟩ = ⟨x, Rᵀ·y⟩, and Rᵀ·R·x = x
// (a rotation).
Outcome ropeBackward(Backend& be, Backend& cpu, const RopeCase& c) {
  const auto dy = randomFloats(size_t(c.size()), 470), x = randomFloats(dy.size(), 471);
  const auto [cos, sin] = ropeTables(c.pos0 + c.T, c.d_head);
  const auto got = runRope(be, c, dy, cos, sin, true), on_cpu = runRope(cpu, c, dy, cos, sin, true);
  EXPECT_NMSE(nmse(got, ropeReference(c, dy, cos, sin, -1.0)), kNmseElementwise, "vs reference");
  EXPECT_NMSE(nmse(got, on_cpu), kNmseElementwise, "vs cpu");
  EXPECT(outsideUntouched(c, got, dy), "an element outside the view changed");
  const auto rx = runRope(be, c, x, cos, sin, false);
  double lhs = 0.0, rhs = 0.0, magnitude = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    lhs += double(rx[i]) * dy[i];
    rhs += double(x[i]) * got[i];
    magnitude += std::abs(double(rx[i]) * dy[i]);
  }
  EXPECT(std::abs(lhs - rhs) <= 1e-6 * magnitude,
         "<R·x, y> = " << lhs << " but <x, Rᵀ·y> = " << rhs);
  EXPECT_NMSE(nmse(runRope(be, c, rx, cos, sin, true), x), kNmseElementwise, "Rᵀ·R·x vs x");
  return pass();
}

// ---- attention_scores_forward ----
Outcome scores(Backend& be, Backend& cpu, const AttentionLayout& l) {
  const auto qbuf = randomFloats(size_t(l.q_size), 30);
  const auto kbuf = l.fused ? qbuf : randomFloats(size_t(l.k_size), 40);
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
                   kbuf[size_t(l.k_offset + b * l.k_batch + j * l.k_row + l.kvHead(h) * l.d + c)];
          ref[((size_t(b) * l.H + h) * l.Tq + i) * l.Tk + j] = scale * acc;
        }
  auto run = [&](Backend& on) {
    Arena a(on);
    const float* q = a.put(qbuf);
    const float* k = l.fused ? q : a.put(kbuf);
    float* s = a.zeros(n);
    on.attention_scores_forward({q + l.q_offset, l.q_batch, l.q_row},
                                {k + l.k_offset, l.k_batch, l.k_row}, s, l.B, l.H, l.kv_heads, l.Tq,
                                l.Tk, l.d, scale);
    return a.get(s, n);
  };
  return againstBoth(run, be, cpu, ref, kNmseProduct);
}

// ---- attention_scores_backward: every layout; the gradients use the activations' layout
// (training; gradients start non-zero, so "accumulates" is checked too) ----
Outcome scoresBackward(Backend& be, Backend& cpu, const AttentionLayout& l) {
  const auto qbuf = randomFloats(size_t(l.q_size), 240);
  const auto kbuf = l.fused ? qbuf : randomFloats(size_t(l.k_size), 250);
  const auto dqbuf0 = randomFloats(size_t(l.q_size), 260);
  const auto dkbuf0 = l.fused ? dqbuf0 : randomFloats(size_t(l.k_size), 270);
  const size_t n = size_t(l.B) * l.H * l.Tq * l.Tk;
  const auto ds = randomFloats(n, 280);  // [B, H, Tq, Tk]
  const float scale = 1.0f / std::sqrt(float(l.d));
  std::vector<double> rdq(dqbuf0.begin(), dqbuf0.end());
  std::vector<double> rdk(dkbuf0.begin(), dkbuf0.end());
  std::vector<double>& rk = l.fused ? rdq : rdk;  // fused: one gradient buffer for both
  for (int b = 0; b < l.B; ++b)
    for (int h = 0; h < l.H; ++h)
      for (int i = 0; i < l.Tq; ++i)
        for (int j = 0; j < l.Tk; ++j) {
          const double g = scale * double(ds[((size_t(b) * l.H + h) * l.Tq + i) * l.Tk + j]);
          for (int c = 0; c < l.d; ++c) {
            const size_t qi = size_t(l.q_offset + b * l.q_batch + i * l.q_row + h * l.d + c);
            const size_t ki =
                size_t(l.k_offset + b * l.k_batch + j * l.k_row + l.kvHead(h) * l.d + c);
            rdq[qi] += g * kbuf[ki];
            rk[ki] += g * qbuf[qi];
          }
        }
  auto run = [&](Backend& on) {
    Arena a(on);
    const float* q = a.put(qbuf);
    const float* k = l.fused ? q : a.put(kbuf);
    float* dq = a.put(dqbuf0);
    float* dk = l.fused ? dq : a.put(dkbuf0);
    on.attention_scores_backward(
        a.put(ds), {q + l.q_offset, l.q_batch, l.q_row}, {k + l.k_offset, l.k_batch, l.k_row},
        {dq + l.q_offset, l.q_batch, l.q_row}, {dk + l.k_offset, l.k_batch, l.k_row}, l.B, l.H,
        l.kv_heads, l.Tq, l.Tk, l.d, scale);
    return std::make_pair(a.get(dq, dqbuf0.size()), a.get(dk, dkbuf0.size()));
  };
  const auto got = run(be), on_cpu = run(cpu);
  EXPECT_NMSE(nmse(got.first, rdq), kNmseProduct, "dq vs reference");
  EXPECT_NMSE(nmse(got.second, rk), kNmseProduct, "dk vs reference");
  EXPECT_NMSE(nmse(got.first, on_cpu.first), kNmseProduct, "dq vs cpu");
  return pass();
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

// ---- position_bias_forward, position_bias_backward (T5's relative position bias) ----
struct PositionBiasCase {
  int B, H, Tq, Tk, q0, num_buckets, max_distance;
  bool bidirectional;
  std::string vars() const {
    return VARS(B, H, Tq, Tk, q0, num_buckets, max_distance, bidirectional);
  }
};

// The bucket of rel = key − query, written from the contract in double: the sign's half (keys
// after the query in the upper half when bidirectional, none of them counted when not), exact
// below half of the half's buckets, logarithmic up to max_distance, the last bucket beyond.
int bucketReference(int rel, const PositionBiasCase& c) {
  int half = c.num_buckets, base = 0;
  int distance = rel;
  if (c.bidirectional) {
    half /= 2;
    base = rel > 0 ? half : 0;
    distance = std::abs(rel);
  } else {
    distance = rel > 0 ? 0 : -rel;
  }
  const int exact = half / 2;
  if (distance < exact) return base + distance;
  const double scaled = std::log(double(distance) / exact) /
                        std::log(double(c.max_distance) / exact) * (half - exact);
  return base + std::min(exact + int(std::floor(scaled)), half - 1);
}

Outcome positionBias(Backend& be, Backend& cpu, const PositionBiasCase& c) {
  const size_t cells = size_t(c.B) * c.H * c.Tq * c.Tk;
  const auto table = randomFloats(size_t(c.num_buckets) * c.H, 500, -3.0f, 3.0f);
  const auto scores = randomFloats(cells, 501);
  std::vector<double> ref(cells);  // scores + table[bucket(j − (q0 + i)), h]
  for (size_t e = 0; e < cells; ++e) {
    const int j = int(e % c.Tk), i = int(e / c.Tk % c.Tq), h = int(e / c.Tk / c.Tq % c.H);
    ref[e] = double(scores[e]) + table[size_t(bucketReference(j - (c.q0 + i), c)) * c.H + h];
  }
  auto run = [&](Backend& on) {
    Arena a(on);
    float* s = a.put(scores);  // accumulated into
    on.position_bias_forward(a.put(table), s, c.B, c.H, c.Tq, c.Tk, c.q0, c.num_buckets,
                             c.max_distance, c.bidirectional);
    return a.get(s, cells);
  };
  return againstBoth(run, be, cpu, ref, kNmseElementwise);
}

// Training: the gradient of the table, ACCUMULATED onto what dtable held, against the sum over
// each bucket's cells in double; dscores itself is left as it was.
Outcome positionBiasBackward(Backend& be, Backend& cpu, const PositionBiasCase& c) {
  const size_t cells = size_t(c.B) * c.H * c.Tq * c.Tk, n = size_t(c.num_buckets) * c.H;
  const auto dscores = randomFloats(cells, 510), dtable0 = randomFloats(n, 511);
  std::vector<double> ref(dtable0.begin(), dtable0.end());
  for (size_t e = 0; e < cells; ++e) {
    const int j = int(e % c.Tk), i = int(e / c.Tk % c.Tq), h = int(e / c.Tk / c.Tq % c.H);
    ref[size_t(bucketReference(j - (c.q0 + i), c)) * c.H + h] += dscores[e];
  }
  std::vector<float> dscores_after;
  auto run = [&](Backend& on) {
    Arena a(on);
    float* g = a.put(dscores);
    float* dtable = a.put(dtable0);
    on.position_bias_backward(g, dtable, c.B, c.H, c.Tq, c.Tk, c.q0, c.num_buckets, c.max_distance,
                              c.bidirectional);
    dscores_after = a.get(g, cells);
    return a.get(dtable, n);
  };
  const auto got = run(be);
  EXPECT(dscores_after == dscores, "position_bias_backward changed dscores");
  const auto on_cpu = run(cpu);
  // Sums of up to B·Tq·Tk terms per bucket in another order (atomics on a GPU): a product's bound.
  EXPECT_NMSE(nmse(got, ref), kNmseProduct, "vs reference");
  EXPECT_NMSE(nmse(got, on_cpu), kNmseProduct, "vs cpu");
  return pass();
}

// ---- masked_softmax_forward ----
struct SoftmaxCase {
  int B, H, Tq, Tk;
  float fill;
  bool causal;
  std::string vars() const { return VARS(B, H, Tq, Tk, fill, causal); }
};

Outcome softmax(Backend& be, Backend& cpu, const SoftmaxCase& c) {
  const size_t n = size_t(c.B) * c.H * c.Tq * c.Tk;  // scores, probs [B, H, Tq, Tk]
  const auto scores = randomFloats(n, 50, -20.0f, 20.0f);
  // mask [B, Tq, Tk]: random (~35%) or causal plus padding; query 0 of the last batch item
  // fully masked, and (when Tq > 1) query 1 of batch item 0 not masked at all.
  std::vector<uint8_t> mask(size_t(c.B) * c.Tq * c.Tk);
  std::mt19937 rng(60);
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

// ---- masked_softmax_backward: probs from a real masked softmax (training; gradients start
// non-zero, so "accumulates" is checked too) ----
struct SoftmaxBackwardCase {
  int B, H, Tq, Tk;
  float fill;
  bool causal, in_place;
  std::string vars() const { return VARS(B, H, Tq, Tk, fill, causal, in_place); }
};

Outcome softmaxBackward(Backend& be, Backend& cpu, const SoftmaxBackwardCase& c) {
  const size_t n = size_t(c.B) * c.H * c.Tq * c.Tk;
  const auto scores = randomFloats(n, 290, -5.0f, 5.0f);
  std::vector<uint8_t> mask(size_t(c.B) * c.Tq * c.Tk);
  std::mt19937 rng(300);
  for (int b = 0; b < c.B; ++b)
    for (int i = 0; i < c.Tq; ++i)
      for (int j = 0; j < c.Tk; ++j)
        mask[(size_t(b) * c.Tq + i) * c.Tk + j] = c.causal ? j > i : (rng() % 100) < 30;
  for (int j = 0; j < c.Tk; ++j) mask[size_t(j)] = 1;  // one row fully masked
  std::vector<float> probs(n);
  cpu.masked_softmax_forward(scores.data(), mask.data(), probs.data(), c.B, c.H, c.Tq, c.Tk,
                             c.fill);
  const auto dprobs = randomFloats(n, 310);
  std::vector<double> ref(n);
  for (size_t row = 0; row < n / size_t(c.Tk); ++row) {
    const size_t b = row / (size_t(c.H) * c.Tq), i = row % size_t(c.Tq);
    const uint8_t* m = mask.data() + (b * c.Tq + i) * c.Tk;
    double dot = 0.0;
    for (int j = 0; j < c.Tk; ++j) dot += double(probs[row * c.Tk + j]) * dprobs[row * c.Tk + j];
    for (int j = 0; j < c.Tk; ++j)
      ref[row * c.Tk + j] = m[j] ? 0.0 : probs[row * c.Tk + j] * (dprobs[row * c.Tk + j] - dot);
  }
  auto run = [&](Backend& on) {
    Arena a(on);
    float* dp = a.put(dprobs);
    float* ds = c.in_place ? dp : a.zeros(n);
    on.masked_softmax_backward(a.put(probs), dp, a.put(mask), ds, c.B, c.H, c.Tq, c.Tk);
    return a.get(ds, n);
  };
  const auto got = run(be), on_cpu = run(cpu);
  EXPECT_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
  EXPECT_NMSE(nmse(got, on_cpu), kNmseElementwise, "vs cpu");
  // A masked cell gets no gradient, exactly; every unmasked row's gradients sum to 0.
  for (size_t row = 0; row < n / size_t(c.Tk); ++row) {
    const size_t b = row / (size_t(c.H) * c.Tq), i = row % size_t(c.Tq);
    double sum = 0.0;
    for (int j = 0; j < c.Tk; ++j) {
      if (mask[(b * c.Tq + i) * c.Tk + j])
        EXPECT(got[row * c.Tk + j] == 0.0f,
               "masked cell (" << row << ", " << j << ") has gradient " << got[row * c.Tk + j]);
      sum += got[row * c.Tk + j];
    }
    EXPECT(std::abs(sum) <= 1e-5, "the gradients of row " << row << " sum to " << sum);
  }
  return pass();
}

// ---- attention_context_forward ----
Outcome context(Backend& be, Backend& cpu, const AttentionLayout& l) {
  const auto vbuf = randomFloats(size_t(l.k_size), 70);  // k's buffer shape
  const size_t np = size_t(l.B) * l.H * l.Tq * l.Tk;     // probs [B, H, Tq, Tk]
  const auto probs = randomFloats(np, 80, 0.0f, 1.0f);
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
                   vbuf[size_t(l.v_offset + b * l.k_batch + j * l.k_row + l.kvHead(h) * l.d + c)];
          ref[(size_t(b) * l.Tq + i) * size_t(width) + size_t(h) * l.d + c] = acc;
        }
  auto run = [&](Backend& on) {
    Arena a(on);
    const float* v = a.put(vbuf);
    float* ctx = a.zeros(n);
    on.attention_context_forward(a.put(probs), {v + l.v_offset, l.k_batch, l.k_row}, ctx, l.B, l.H,
                                 l.kv_heads, l.Tq, l.Tk, l.d);
    return a.get(ctx, n);
  };
  return againstBoth(run, be, cpu, ref, kNmseProduct);
}

// ---- attention_context_backward (training; gradients start non-zero, so "accumulates" is checked
// too) ----
Outcome contextBackward(Backend& be, Backend& cpu, const AttentionLayout& l) {
  const auto vbuf = randomFloats(size_t(l.k_size), 320);
  const auto dvbuf0 = randomFloats(size_t(l.k_size), 330);
  const size_t np = size_t(l.B) * l.H * l.Tq * l.Tk;
  const auto probs = randomFloats(np, 340, 0.0f, 1.0f);
  const int64_t width = int64_t{l.H} * l.d;
  const auto dctx = randomFloats(size_t(l.B) * l.Tq * size_t(width), 350);
  std::vector<double> rdp(np, 0.0), rdv(dvbuf0.begin(), dvbuf0.end());
  for (int b = 0; b < l.B; ++b)
    for (int h = 0; h < l.H; ++h)
      for (int i = 0; i < l.Tq; ++i)
        for (int j = 0; j < l.Tk; ++j) {
          const size_t pi = ((size_t(b) * l.H + h) * l.Tq + i) * l.Tk + j;
          for (int c = 0; c < l.d; ++c) {
            const size_t vi =
                size_t(l.v_offset + b * l.k_batch + j * l.k_row + l.kvHead(h) * l.d + c);
            const double g = dctx[(size_t(b) * l.Tq + i) * size_t(width) + size_t(h) * l.d + c];
            rdp[pi] += g * vbuf[vi];
            rdv[vi] += double(probs[pi]) * g;
          }
        }
  auto run = [&](Backend& on) {
    Arena a(on);
    const float* v = a.put(vbuf);
    float* dv = a.put(dvbuf0);
    float* dp = a.put(randomFloats(np, 360));  // overwritten
    on.attention_context_backward(a.put(dctx), a.put(probs), {v + l.v_offset, l.k_batch, l.k_row},
                                  dp, {dv + l.v_offset, l.k_batch, l.k_row}, l.B, l.H, l.kv_heads,
                                  l.Tq, l.Tk, l.d);
    return std::make_pair(a.get(dp, np), a.get(dv, dvbuf0.size()));
  };
  const auto got = run(be), on_cpu = run(cpu);
  EXPECT_NMSE(nmse(got.first, rdp), kNmseProduct, "dprobs vs reference");
  EXPECT_NMSE(nmse(got.second, rdv), kNmseProduct, "dv vs reference");
  EXPECT_NMSE(nmse(got.first, on_cpu.first), kNmseProduct, "dprobs vs cpu");
  return pass();
}

// ---- norm_forward, norm_backward: LayerNorm, LayerNormStd, RmsNorm ----

// x̂ of one row of d values in double, as backend.h defines it: (x − center) · scale.
void normRowReference(NormKind kind, const double* x, int d, double eps, double* xhat) {
  double center = 0.0, squares = 0.0;
  if (kind != NormKind::RmsNorm) {
    for (int k = 0; k < d; ++k) center += x[k];
    center /= d;
  }
  for (int k = 0; k < d; ++k) squares += (x[k] - center) * (x[k] - center);
  const double scale = kind == NormKind::LayerNormStd ? 1.0 / (std::sqrt(squares / (d - 1)) + eps)
                                                      : 1.0 / std::sqrt(squares / d + eps);
  for (int k = 0; k < d; ++k) xhat[k] = (x[k] - center) * scale;
}

// The gradient of Σ_k dy_k · x̂_k · gamma_k (gamma null: 1) over one row x of d values, by central
// differences of normRowReference, added to dx; x̂ of the row into xhat.
void normRowGradient(NormKind kind, const float* x, const float* dy, const float* gamma, int d,
                     double eps, double* dx, double* xhat) {
  std::vector<double> row(x, x + d);
  auto loss = [&] {
    normRowReference(kind, row.data(), d, eps, xhat);
    double l = 0.0;
    for (int k = 0; k < d; ++k) l += double(dy[k]) * xhat[k] * (gamma ? gamma[k] : 1.0);
    return l;
  };
  const double h = 1e-4;
  for (int k = 0; k < d; ++k) {
    const double keep = row[size_t(k)];
    row[size_t(k)] = keep + h;
    const double up = loss();
    row[size_t(k)] = keep - h;
    const double down = loss();
    row[size_t(k)] = keep;
    dx[k] += (up - down) / (2 * h);
  }
  loss();  // x̂ of the row as it is
}

// The checks of a norm's gradients: dx against central differences and the CPU, dgamma against
// its reference (or unchanged without gamma). Correct gradients come within ~1e-15 of the
// differences (1e-10 at d = 1, where a fused multiply-add leaves dx̂ − mean(dx̂) a rounding error
// times 1/√eps); a wrong one is far off (LayerNormStd's (d − 1) taken for d gives 8e-8 at d = 129,
// 2e-2 at d = 2).
Outcome expectNormGradients(const std::vector<float>& dx, const std::vector<float>& cpu_dx,
                            const std::vector<double>& ref_dx, const std::vector<float>& dg,
                            const std::vector<double>& ref_dg, const std::vector<float>& dg0,
                            bool gamma) {
  EXPECT_NMSE(nmse(dx, ref_dx), 1e-8, "dx vs central differences");
  EXPECT_NMSE(nmse(dx, cpu_dx), 1e-8, "dx vs cpu");
  if (gamma)
    EXPECT_NMSE(nmse(dg, ref_dg), kNmseProduct, "dgamma vs reference");
  else
    EXPECT(dg == dg0, "no gamma: dgamma changed");
  return pass();
}

struct NormCase {
  NormKind kind;
  int rows, d;
  bool gamma, beta, in_place;  // beta only with gamma
  float eps;
  std::string vars() const { return VARS(kind, rows, d, gamma, beta, in_place, eps); }
};

Outcome norm(Backend& be, Backend& cpu, const NormCase& c) {
  const size_t n = size_t(c.rows) * c.d;  // x, y [rows, d]
  const auto x = randomFloats(n, 90, -3.0f, 5.0f);
  const auto gamma = randomFloats(size_t(c.d), 91, 0.5f, 1.5f);  // [d]
  const auto beta = randomFloats(size_t(c.d), 92);               // [d]
  std::vector<double> ref(x.begin(), x.end());
  for (int r = 0; r < c.rows; ++r) {
    double* row = ref.data() + size_t(r) * c.d;
    normRowReference(c.kind, row, c.d, c.eps, row);
    for (int k = 0; k < c.d; ++k)
      row[k] = row[k] * (c.gamma ? gamma[size_t(k)] : 1.0) + (c.beta ? beta[size_t(k)] : 0.0);
  }
  auto run = [&](Backend& on) {
    Arena a(on);
    float* xd = a.put(x);
    float* y = c.in_place ? xd : a.zeros(n);
    on.norm_forward(c.kind, xd, c.gamma ? a.put(gamma) : nullptr, c.beta ? a.put(beta) : nullptr, y,
                    c.rows, c.d, c.eps);
    return a.get(y, n);
  };
  return againstBoth(run, be, cpu, ref, kNmseElementwise);
}

// Training; gradients start non-zero, so "accumulates" is checked too. The input's gradient is
// checked against central differences of the double reference above (not against the formula
// of backend.h): the contract's forward is the only thing both sides share.
struct NormBackwardCase {
  NormKind kind;
  int rows, d;
  bool gamma, beta;  // whether the norm has gamma (and beta): dgamma (and dbeta) asked for
  float eps;
  std::string vars() const { return VARS(kind, rows, d, gamma, beta, eps); }
};

Outcome normBackward(Backend& be, Backend& cpu, const NormBackwardCase& c) {
  const int rows = c.rows, d = c.d;
  const size_t n = size_t(rows) * d;
  const auto x = randomFloats(n, 370, -3.0f, 5.0f);
  const auto dy = randomFloats(n, 371);
  const auto gamma = randomFloats(size_t(d), 372, 0.5f, 1.5f);
  const auto dx0 = randomFloats(n, 373), dg0 = randomFloats(size_t(d), 374),
             db0 = randomFloats(size_t(d), 375);
  std::vector<double> rdx(dx0.begin(), dx0.end()), rdg(dg0.begin(), dg0.end()),
      rdb(db0.begin(), db0.end());
  std::vector<double> xhat(static_cast<size_t>(d));
  for (int r = 0; r < rows; ++r) {  // loss(row) = Σ_k dy[r, k] · x̂_k · gamma_k (beta: a constant)
    const size_t at = size_t(r) * d;
    normRowGradient(c.kind, x.data() + at, dy.data() + at, c.gamma ? gamma.data() : nullptr, d,
                    c.eps, rdx.data() + at, xhat.data());
    for (int k = 0; k < d; ++k) {
      rdg[size_t(k)] += dy[at + k] * xhat[size_t(k)];
      rdb[size_t(k)] += dy[at + k];
    }
  }
  struct Grads {
    std::vector<float> dx, dg, db;
  };
  auto run = [&](Backend& on) {
    Arena a(on);
    float *dx = a.put(dx0), *dg = a.put(dg0), *db = a.put(db0);
    on.norm_backward(c.kind, a.put(dy), a.put(x), c.gamma ? a.put(gamma) : nullptr, dx, dg,
                     c.beta ? db : nullptr, rows, d, c.eps);
    return Grads{a.get(dx, n), a.get(dg, dg0.size()), a.get(db, db0.size())};
  };
  const Grads got = run(be), on_cpu = run(cpu);
  const Outcome grads = expectNormGradients(got.dx, on_cpu.dx, rdx, got.dg, rdg, dg0, c.gamma);
  if (grads.status != Status::Pass) return grads;
  if (c.beta)
    EXPECT_NMSE(nmse(got.db, rdb), kNmseProduct, "dbeta vs reference");
  else
    EXPECT(got.db == db0, "no beta: dbeta changed");
  return pass();
}

// ---- activation_forward, activation_backward, gated_activation_forward/backward ----

// act(v) in double, PyTorch's definitions.
double activationReference(Activation act, double v) {
  switch (act) {
    case Activation::Relu:
      return v > 0 ? v : 0.0;
    case Activation::Gelu:
      return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    case Activation::GeluTanh:
      return 0.5 * v *
             (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
    case Activation::Silu:
      return v / (1.0 + std::exp(-v));
    case Activation::Tanh:
      return std::tanh(v);
  }
  return 0.0;
}

// act'(v) in double: the analytic derivatives.
double activationGradReference(Activation act, double v) {
  switch (act) {
    case Activation::Relu:
      return v > 0 ? 1.0 : 0.0;
    case Activation::Gelu:
      return 0.5 * (1 + std::erf(v / std::sqrt(2.0))) +
             v * std::exp(-0.5 * v * v) / std::sqrt(2 * std::numbers::pi);
    case Activation::GeluTanh: {
      const double k = std::sqrt(2.0 / std::numbers::pi);
      const double t = std::tanh(k * (v + 0.044715 * v * v * v));
      return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * k * (1 + 3 * 0.044715 * v * v);
    }
    case Activation::Silu: {
      const double sg = 1 / (1 + std::exp(-v));
      return sg * (1 + v * (1 - sg));
    }
    case Activation::Tanh:
      return 1 - std::tanh(v) * std::tanh(v);
  }
  return 0.0;
}

struct ActivationCase {
  Activation act;
  int64_t n;
  std::string vars() const { return VARS(act, n); }
};

Outcome activation(Backend& be, Backend& cpu, const ActivationCase& c) {
  const auto x = randomFloats(size_t(c.n), 100, -6.0f, 6.0f);
  std::vector<double> ref(x.size());
  for (size_t i = 0; i < x.size(); ++i) ref[i] = activationReference(c.act, x[i]);
  auto run = [&](Backend& on) {
    Arena a(on);
    float* xd = a.put(x);
    on.activation_forward(xd, int64_t(x.size()), c.act);
    return a.get(xd, x.size());
  };
  return againstBoth(run, be, cpu, ref, kNmseElementwise);
}

// Against the analytic derivatives, in double; written in place (dx aliases dy).
Outcome activationBackward(Backend& be, Backend& cpu, const ActivationCase& c) {
  const auto x = randomFloats(size_t(c.n), 380, -6.0f, 6.0f);
  const auto dy = randomFloats(x.size(), 390);
  std::vector<double> ref(x.size());
  for (size_t i = 0; i < x.size(); ++i) ref[i] = dy[i] * activationGradReference(c.act, x[i]);
  auto run = [&](Backend& on) {
    Arena a(on);
    float* d = a.put(dy);  // in place: dx aliases dy
    on.activation_backward(a.put(x), d, d, int64_t(x.size()), c.act);
    return a.get(d, x.size());
  };
  const auto got = run(be), on_cpu = run(cpu);
  EXPECT_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
  EXPECT_NMSE(nmse(got, on_cpu), kNmseElementwise, "vs cpu");
  return pass();
}

// Gated: x [rows, 2f] = [gate | up] per row.
struct GatedCase {
  Activation act;
  int rows, f;
  std::string vars() const { return VARS(act, rows, f); }
};

Outcome gatedActivation(Backend& be, Backend& cpu, const GatedCase& c) {
  const auto x = randomFloats(size_t(c.rows) * 2 * c.f, 480, -6.0f, 6.0f);
  std::vector<double> ref(size_t(c.rows) * c.f);  // y [rows, f]
  for (int r = 0; r < c.rows; ++r)
    for (int k = 0; k < c.f; ++k) {
      const float* row = x.data() + size_t(r) * 2 * c.f;
      ref[size_t(r) * c.f + k] = activationReference(c.act, row[k]) * row[c.f + k];
    }
  auto run = [&](Backend& on) {
    Arena a(on);
    float* y = a.put(randomFloats(ref.size(), 481));  // overwritten
    on.gated_activation_forward(a.put(x), y, c.rows, c.f, c.act);
    return a.get(y, ref.size());
  };
  return againstBoth(run, be, cpu, ref, kNmseElementwise);
}

// Training; WRITTEN: dx starts as other values, which must all be replaced. Against the
// contract's formula with the analytic derivatives in double, as activation_backward.
Outcome gatedActivationBackward(Backend& be, Backend& cpu, const GatedCase& c) {
  const size_t n = size_t(c.rows) * 2 * c.f;  // x, dx [rows, 2f]
  const auto x = randomFloats(n, 490, -6.0f, 6.0f), dy = randomFloats(n / 2, 491);
  std::vector<double> ref(n);
  for (int r = 0; r < c.rows; ++r)
    for (int k = 0; k < c.f; ++k) {
      const size_t gate = size_t(r) * 2 * c.f + k, up = gate + c.f;
      const double g = dy[size_t(r) * c.f + k];
      ref[gate] = g * x[up] * activationGradReference(c.act, x[gate]);
      ref[up] = g * activationReference(c.act, x[gate]);
    }
  auto run = [&](Backend& on) {
    Arena a(on);
    float* dx = a.put(randomFloats(n, 492));
    on.gated_activation_backward(a.put(x), a.put(dy), dx, c.rows, c.f, c.act);
    return a.get(dx, n);
  };
  const auto got = run(be), on_cpu = run(cpu);
  EXPECT_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
  EXPECT_NMSE(nmse(got, on_cpu), kNmseElementwise, "vs cpu");
  return pass();
}

// ---- residual_forward ----
struct ElementsCase {
  int64_t n;
  std::string vars() const { return VARS(n); }
};

Outcome residual(Backend& be, Backend& cpu, const ElementsCase& c) {
  const size_t n = size_t(c.n);
  const auto x = randomFloats(n, 110), y0 = randomFloats(n, 120);
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
struct ScaleCase {
  int64_t n;
  float s;
  std::string vars() const { return VARS(n, s); }
};

Outcome scale(Backend& be, Backend& cpu, const ScaleCase& c) {
  const size_t n = size_t(c.n);
  const float s = c.s;
  const auto x0 = randomFloats(n, 150);
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

// ======== training only ========

// ---- residual_backward, scale_backward, zero ----
Outcome elementwiseBackward(Backend& be, Backend&, const ElementsCase& c) {
  const size_t n = size_t(c.n);
  const auto dy = randomFloats(n, 400), dx0 = randomFloats(n, 401);
  std::vector<double> ref_res(n), ref_scale(n);
  for (size_t i = 0; i < n; ++i) {
    ref_res[i] = double(dx0[i]) + dy[i];
    ref_scale[i] = 0.25 * dx0[i];
  }
  Arena a(be);
  float* dx = a.put(dx0);
  be.residual_backward(a.put(dy), dx, int64_t(n));
  EXPECT_NMSE(nmse(a.get(dx, n), ref_res), kNmseElementwise, "residual_backward");
  float* sx = a.put(dx0);
  be.scale_backward(sx, int64_t(n), 0.25f);
  EXPECT_NMSE(nmse(a.get(sx, n), ref_scale), kNmseElementwise, "scale_backward");
  float* z = a.put(dx0);
  be.zero(z + 3, int64_t(n) - 4);
  const auto zeros = a.get(z, n);
  EXPECT(zeros[2] == dx0[2], "zeros[2] is " << zeros[2]);
  EXPECT(zeros[n - 1] == dx0[n - 1], "zeros[n - 1] is " << zeros[n - 1]);
  EXPECT(std::all_of(zeros.begin() + 3, zeros.end() - 1, [](float v) { return v == 0.0f; }),
         "zero() left non-zero values");
  return pass();
}

// ---- dropout: the same mask on every backend, forward and backward ----
struct DropoutCase {
  float p;
  int64_t n;
  std::string vars() const { return VARS(p, n); }
};

Outcome dropout(Backend& be, Backend& cpu, const DropoutCase& c) {
  const float p = c.p;
  const size_t n = size_t(c.n);
  const auto x = randomFloats(n, 410, 0.5f, 1.5f);  // no zeros: a 0 means dropped
  auto run = [&](Backend& on, bool backward) {
    Arena a(on);
    float* d = a.put(x);
    if (backward)
      on.dropout_backward(d, int64_t(n), p, 12345);
    else
      on.dropout_forward(d, int64_t(n), p, 12345);
    return a.get(d, n);
  };
  const auto fwd = run(be, false), bwd = run(be, true), on_cpu = run(cpu, false);
  // The counter-based mask: bit-identical on every backend; the backward recomputes it.
  EXPECT(fwd == on_cpu, "the dropout mask differs from the CPU backend's");
  EXPECT(fwd == bwd, "the backward's mask differs from the forward's");
  size_t dropped = 0;
  for (size_t i = 0; i < n; ++i) {
    if (fwd[i] == 0.0f) {
      ++dropped;
    } else {
      EXPECT(std::abs(fwd[i] - x[i] / (1.0f - p)) <= 1e-6f * fwd[i],
             "a kept element " << i << " is " << fwd[i] << ", not x / (1 − p)");
    }
  }
  // The fraction dropped is p within 5 standard deviations of a binomial.
  const double sd = std::sqrt(p * (1 - p) / double(n));
  EXPECT(std::abs(double(dropped) / n - p) <= 5 * sd + 1e-12,
         "dropped " << dropped << " of " << n << " at p " << p);
  // Another seed, another mask.
  if (p > 0) {
    Arena a(be);
    float* d = a.put(x);
    be.dropout_forward(d, int64_t(n), p, 54321);
    EXPECT(a.get(d, n) != fwd, "another seed gave the same mask");
  }
  return pass();
}

// ---- cross_entropy_forward / cross_entropy_backward ----
struct CrossEntropyCase {
  int rows, V;
  float smoothing;
  std::string vars() const { return VARS(rows, V, smoothing); }
};

Outcome crossEntropy(Backend& be, Backend& cpu, const CrossEntropyCase& c) {
  const int rows = c.rows, V = c.V;
  const float smoothing = c.smoothing, scale = 1.0f / 3.0f;
  auto logits = randomFloats(size_t(rows) * V, 420, -8.0f, 8.0f);
  logits[3] = logits[5] = 20.0f;  // a tie for row 0's argmax: the first wins
  std::vector<int32_t> targets(static_cast<size_t>(rows));
  std::mt19937 rng(430);
  for (auto& t : targets) t = int32_t(rng() % V);
  targets[1] = -1;  // ignored
  std::vector<double> ref_loss(static_cast<size_t>(rows)), ref_grad(logits.size());
  std::vector<int32_t> ref_arg(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    const float* z = logits.data() + size_t(r) * V;
    double mx = z[0];
    int arg = 0;
    for (int v = 1; v < V; ++v)
      if (z[v] > mx) mx = z[v], arg = v;
    ref_arg[size_t(r)] = arg;
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(z[v] - mx);
    const int t = targets[size_t(r)];
    if (t < 0) continue;
    double loss = 0;
    for (int v = 0; v < V; ++v) {
      const double q = (v == t ? 1.0 - smoothing : 0.0) + smoothing / V;
      const double logp = z[v] - mx - std::log(sum);
      loss -= q * logp;
      ref_grad[size_t(r) * V + v] = scale * (std::exp(logp) - q);
    }
    ref_loss[size_t(r)] = loss;
  }
  auto run = [&](Backend& on) {
    Arena a(on);
    const float* z = a.put(logits);
    const int32_t* t = a.put(targets);
    float* losses = a.zeros(size_t(rows));
    int32_t* pred = a.put(std::vector<int32_t>(size_t(rows), -7));
    float* g = a.put(randomFloats(logits.size(), 440));  // overwritten
    on.cross_entropy_forward(z, t, losses, pred, rows, V, -1, smoothing);
    on.cross_entropy_backward(z, t, g, rows, V, -1, smoothing, scale);
    std::vector<int32_t> p(static_cast<size_t>(rows));
    on.copy_to_host(reinterpret_cast<const float*>(pred), reinterpret_cast<float*>(p.data()), rows);
    return std::make_tuple(a.get(losses, size_t(rows)), p, a.get(g, logits.size()));
  };
  const auto [loss, pred, grad] = run(be);
  const auto [cpu_loss, cpu_pred, cpu_grad] = run(cpu);
  EXPECT_NMSE(nmse(loss, ref_loss), kNmseElementwise, "losses vs reference");
  EXPECT_NMSE(nmse(grad, ref_grad), kNmseElementwise, "dlogits vs reference");
  EXPECT_NMSE(nmse(grad, cpu_grad), kNmseElementwise, "dlogits vs cpu");
  EXPECT(pred == ref_arg, "the argmaxes differ from the reference");
  EXPECT(pred[0] == 3, "pred[0] is " << pred[0]);
  EXPECT(loss[1] == 0.0f, "loss[1] is " << loss[1]);
  EXPECT(std::all_of(grad.begin() + V, grad.begin() + 2 * V, [](float v) { return v == 0.0f; }),
         "an ignored row has gradients");
  return pass();
}

// ---- sum_squares and adamw_update (the optimizer's two ops) ----
struct OptimizerCase {
  bool decoupled;  // AdamW rather than Adam
  int64_t n;
  std::string vars() const { return VARS(decoupled, n); }
};

Outcome optimizerOps(Backend& be, Backend&, const OptimizerCase& c) {
  const bool decoupled = c.decoupled;
  const size_t n = size_t(c.n);
  const auto p0 = randomFloats(n, 450), g = randomFloats(n, 451),
             m0 = randomFloats(n, 452, -0.1f, 0.1f);
  const auto v0 = randomFloats(n, 453, 0.0f, 0.01f);
  AdamStep s;
  s.lr = 1e-3f;
  s.beta1 = 0.9f;
  s.beta2 = 0.98f;
  s.eps = 1e-9f;
  s.weight_decay = 0.01f;
  s.decoupled = decoupled;
  s.bias_correction1 = 1.0f - std::pow(0.9f, 3.0f);
  s.bias_correction2 = 1.0f - std::pow(0.98f, 3.0f);
  s.grad_scale = 0.5f;
  std::vector<double> rp(n), rm(n), rv(n);
  double squares = 0;
  for (size_t i = 0; i < n; ++i) {
    squares += double(g[i]) * g[i];
    double p = p0[i];
    const double gi = double(g[i]) * s.grad_scale + (decoupled ? 0.0 : s.weight_decay * p);
    if (decoupled) p *= 1.0 - double(s.lr) * s.weight_decay;
    rm[i] = m0[i] + (1.0 - s.beta1) * (gi - m0[i]);
    rv[i] = s.beta2 * double(v0[i]) + (1.0 - s.beta2) * gi * gi;
    rp[i] = p - (s.lr / double(s.bias_correction1)) * rm[i] /
                    (std::sqrt(rv[i]) / std::sqrt(double(s.bias_correction2)) + s.eps);
  }
  Arena a(be);
  float *p = a.put(p0), *m = a.put(m0), *v = a.put(v0);
  const float* dg = a.put(g);
  const double sum = be.sum_squares(dg, int64_t(n));
  EXPECT(std::abs(sum - squares) <= 1e-9 * squares,
         "sum_squares " << sum << ", reference " << squares);
  be.adamw_update(p, dg, m, v, int64_t(n), s);
  EXPECT_NMSE(nmse(a.get(p, n), rp), kNmseElementwise, "params");
  EXPECT_NMSE(nmse(a.get(m, n), rm), kNmseElementwise, "first moments");
  EXPECT_NMSE(nmse(a.get(v, n), rv), kNmseElementwise, "second moments");
  return pass();
}

// ---- large: scores, softmax and context with a score buffer past 2³¹ floats ----
//
// One batch item, 16 heads of 12000 × 12000 scores: 2.3·10⁹ floats (9.2 GB) for the scores and as
// many for the probabilities; the last heads start past float index 2³¹, so every index and
// offset must be 64-bit. Checked on sampled rows (including the one that crosses 2³¹) against a
// double reference.
Outcome largeScores(Backend& be, Backend&) {
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
                              s_buf->f32(), B, H, H, T, T, d, scale);
  be.masked_softmax_forward(s_buf->f32(), md, p_buf->f32(), B, H, T, T, fill);
  be.attention_context_forward(p_buf->f32(), {vd, int64_t{T} * width, width}, ctx, B, H, H, T, T,
                               d);
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
Outcome outOfMemory(Backend& be, Backend&) {
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
  ErrorKind oom_kind = ErrorKind::Backend;
  for (size_t chunk : {size_t{1} << 30, size_t{64} << 20, size_t{1} << 20}) {
    for (int i = 0; i < 4096; ++i) {
      try {
        hog.push_back(be.allocate(chunk));
      } catch (const Error& e) {
        if (oom.empty()) {
          oom = e.what();
          oom_kind = e.kind();
        }
        break;
      }
    }
  }
  EXPECT(!oom.empty(), "allocated " << hog.size() << " buffers without running out of memory");
  EXPECT(oom.find("out of GPU memory") != std::string::npos, "the message: " << oom);
  // Its own kind: the model redoes the request on the CPU (model/cpu_fallback.h).
  EXPECT(oom_kind == ErrorKind::OutOfMemory, "the kind: " << errorKindName(oom_kind));
  EXPECT(be.healthy(), "out of memory marked the backend unusable: " << be.failure());
  std::string mid;
  try {
    sequence();
  } catch (const Error& e) {
    mid = e.what();
    EXPECT(e.kind() == ErrorKind::OutOfMemory,
           "mid-sequence: " << errorKindName(e.kind()) << ": " << mid);
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
Outcome illegalAddress(Backend& be, Backend&) {
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

// `op` once for each of `cases`: "op " + the case's vars().
template <class Case>
void add(std::vector<OpCase>& list, const char* op,
         Outcome (*check)(Backend& be, Backend& cpu, const Case& c),
         const std::vector<Case>& cases) {
  for (const Case& c : cases)
    list.push_back({str(op, ' ', c.vars()),
                    [check, c](Backend& be, Backend& cpu) { return check(be, cpu, c); }});
}

// A scenario with no parameters beyond its own name: "memory overlapping_copy".
void add(std::vector<OpCase>& list, const char* op, const char* what,
         std::function<Outcome(Backend& be, Backend& cpu)> check) {
  list.push_back({str(op, ' ', what), std::move(check)});
}

// The list, its names checked to be unique (they name the Qt rows and --filter selects by them).
std::vector<OpCase> unique(std::vector<OpCase> list) {
  for (size_t i = 0; i < list.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (list[i].name == list[j].name) throw std::logic_error("two cases named " + list[i].name);
  return list;
}

}  // namespace

std::string AttentionLayout::vars() const {
  return VARS(layout, B, H, kv_heads, Tq, Tk, d);
}

const std::vector<AttentionLayout>& attentionLayouts() {
  static const std::vector<AttentionLayout> ls{
      contiguous(2, 3, 3, 5, 7, 4),
      contiguous(5, 2, 2, 3, 6, 5),  // more batch items than heads
      fusedQkv(2, 8, 8, 33, 64),     // tutorial-sized heads
      kvCacheStep(3, 4, 4, 6, 11, 3),
      crossFusedKv(2, 2, 2, 4, 9, 7),
      contiguous(1, 1, 1, 3, 1, 1),
      fusedQkv(1, 8, 8, 200, 64),  // the tutorial's size at 200 tokens: a real layer's outputs
      fusedQkv(1, 3, 3, 301, 64),  // long and uneven, few heads: split over rows across threads
      crossFusedKv(2, 5, 5, 77, 259, 32),      // Tq != Tk, both uneven
      kvCacheStep(1, 16, 16, 3001, 3003, 64),  // matrix-vector products over a long cache
      // Grouped-query attention: 3 query heads per key/value head; more batch items than groups
      // of heads (the plans batch over the batch then); multi-query (one key/value head) fused as
      // llama2.c's separate wq, wk, wv would be concatenated; a Llama-sized group of 3 at 65
      // tokens.
      contiguous(2, 6, 2, 5, 7, 4),
      contiguous(5, 4, 2, 3, 6, 5),
      fusedQkv(2, 4, 1, 9, 8),
      fusedQkv(1, 12, 4, 65, 64),
      kvCacheStep(3, 8, 2, 6, 11, 3),
      crossFusedKv(2, 6, 3, 4, 9, 7),
  };
  return ls;
}

std::vector<float> randomFloats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The one case list: every op of backend.h at odd sizes, one row per op (or per scenario).
// Adding an op: its case struct (parameters and vars()) and its check above, then one row here.
const std::vector<OpCase>& opCases() {
  constexpr float kFiniteFill = -1e9f;
  static const std::vector<OpCase> cases = unique([] {
    std::vector<OpCase> l;
    add(l, "memory", "zeroed_offsets_copy", memoryZeroedOffsetsCopy);
    add(l, "memory", "overlapping_copy", memoryOverlappingCopy);
    add(l, "memory", "transient_upload", memoryTransientUpload);
    add(l, "memory", "second_thread", memorySecondThread);
    add(l, "memory", "copy_to_host", memoryCopyToHost);
    add(l, "embedding", embedding,
        {{3, 7, 37, 23, 16, 0, 1.0f},
         {2, 5, 64, 11, 12, 7, 8.0f},
         {1, 1, 1, 2, 1, 0, 1.0f},
         {2, 3, 16, 5, 0, 0, 2.0f},
         {2, 4100, 2048, 50, 4103, 3, 1.5f}});
    add(l, "embedding_backward", embeddingBackward,
        {{3, 7, 37, 4, 16, 0, 1.0f}, {2, 5, 16, 11, 12, 3, 4.0f}, {2, 3, 8, 5, 0, 0, 1.0f}});
    add(l, "gather_add", gatherAdd, {{5, 2, 37}, {64, 3, 512}, {33000, 3, 512}});
    add(l, "gather_add_backward", gatherAddBackward, {{5, 2, 37}, {64, 3, 512}});
    add(l, "mean_pool", meanPool, {{1, 1, 8}, {3, 7, 37}, {2, 300, 512}, {33000, 2, 512}});
    add(l, "mean_pool_backward", meanPoolBackward, {{1, 1, 8}, {3, 7, 37}});
    add(l, "linear", linear,
        {{7, 13, 5, false},
         {7, 13, 5, true},
         {1, 129, 67, true},
         {33, 64, 255, true},
         {64, 512, 513, false},
         {33000, 8, 512, true}});
    add(l, "linear_backward", linearBackward,
        {{7, 13, 5, true, true},
         {7, 13, 5, false, false},
         {1, 129, 67, true, true},
         {33, 64, 255, true, true},
         {768, 64, 192, true, true}});
    add(l, "rope", rope,
        {{RopeLayout::Interleaved, "contiguous", 2, 5, 3, 8, 0},
         {RopeLayout::Halves, "contiguous", 2, 5, 3, 8, 0},
         {RopeLayout::Interleaved, "fused_qkv", 2, 7, 4, 16, 3},
         {RopeLayout::Halves, "fused_qkv", 1, 33, 2, 64, 0},
         {RopeLayout::Halves, "contiguous", 3, 1, 2, 6, 10},
         {RopeLayout::Interleaved, "contiguous", 1, 3, 1, 2, 5},
         {RopeLayout::Halves, "contiguous", 1, 4097, 16, 512, 0}});
    add(l, "rope_backward", ropeBackward,
        {{RopeLayout::Interleaved, "contiguous", 2, 5, 3, 8, 0},
         {RopeLayout::Halves, "contiguous", 2, 5, 3, 8, 0},
         {RopeLayout::Interleaved, "fused_qkv", 2, 7, 4, 16, 3},
         {RopeLayout::Halves, "fused_qkv", 1, 33, 2, 64, 7}});
    add(l, "attention_scores", scores, attentionLayouts());
    add(l, "attention_scores_backward", scoresBackward, attentionLayouts());
    // T5's defaults (32 buckets, 128) both ways; a decoding step's one query row at its
    // position; distances past max_distance; few buckets; a sweep past one grid of blocks.
    const std::vector<PositionBiasCase> bias{
        {2, 3, 5, 7, 0, 32, 128, true},   {2, 3, 5, 7, 0, 32, 128, false},
        {1, 4, 1, 40, 39, 32, 20, false}, {1, 2, 150, 300, 0, 8, 64, true},
        {2, 8, 65, 65, 0, 32, 128, true}, {1, 2, 3, 9, 6, 4, 16, true}};
    add(l, "position_bias", positionBias, bias);
    add(l, "position_bias", positionBias, {{4, 16, 260, 4100, 0, 32, 128, true}});
    add(l, "position_bias_backward", positionBiasBackward, bias);
    add(l, "masked_softmax", softmax,
        {{2, 3, 5, 7, kFiniteFill, false},
         {2, 3, 5, 7, -kInf, false},
         {1, 2, 4, 1, kFiniteFill, false},
         {2, 2, 3, 33, -kInf, true},
         {1, 4, 9, 129, kFiniteFill, false},
         {2, 8, 17, 300, -kInf, false},
         {4, 16, 4100, 5, kFiniteFill, false}});
    add(l, "masked_softmax_backward", softmaxBackward,
        {{2, 3, 5, 7, kFiniteFill, false, false},
         {2, 2, 3, 33, -kInf, true, false},
         {1, 4, 9, 129, kFiniteFill, false, true},
         {2, 8, 17, 300, -kInf, false, false}});
    add(l, "attention_context", context, attentionLayouts());
    add(l, "attention_context_backward", contextBackward, attentionLayouts());
    add(l, "norm", norm,
        {{NormKind::LayerNorm, 5, 37, true, true, false, 1e-5f},
         {NormKind::LayerNorm, 5, 37, false, false, false, 1e-5f},
         {NormKind::LayerNorm, 5, 37, true, false, false, 1e-5f},
         {NormKind::LayerNorm, 3, 129, true, true, true, 1e-5f},
         {NormKind::LayerNorm, 9, 512, false, false, true, 1e-5f},
         {NormKind::LayerNorm, 4, 1, true, true, false, 1e-5f},
         {NormKind::LayerNorm, 2, 2048, true, true, false, 1e-5f},
         {NormKind::LayerNorm, 300000, 3, true, true, true, 1e-5f},
         {NormKind::LayerNormStd, 5, 37, true, true, false, 1e-6f},
         {NormKind::LayerNormStd, 3, 129, true, true, true, 1e-6f},
         {NormKind::LayerNormStd, 7, 2, true, true, false, 1e-6f},
         {NormKind::LayerNormStd, 2, 2048, false, false, false, 1e-6f},
         {NormKind::RmsNorm, 5, 37, true, false, false, 1e-5f},
         {NormKind::RmsNorm, 3, 129, true, false, true, 1e-5f},
         {NormKind::RmsNorm, 9, 512, false, false, true, 1e-5f},
         {NormKind::RmsNorm, 4, 1, true, false, false, 1e-5f},
         {NormKind::RmsNorm, 300000, 3, true, false, true, 1e-6f}});
    add(l, "head_norm", headNorm,
        {{NormKind::RmsNorm, "contiguous", 2, 5, 4, 12, true, 1e-6f},
         {NormKind::RmsNorm, "fused_kv", 2, 3, 2, 16, true, 1e-6f},
         {NormKind::RmsNorm, "fused_kv", 1, 7, 3, 1, false, 1e-6f},
         {NormKind::LayerNorm, "contiguous", 3, 2, 2, 33, true, 1e-5f}});
    add(l, "head_norm_backward", headNormBackward,
        {{NormKind::RmsNorm, "contiguous", 2, 5, 4, 12, true, 1e-6f},
         {NormKind::RmsNorm, "fused_kv", 2, 3, 2, 16, true, 1e-6f},
         {NormKind::RmsNorm, "fused_kv", 1, 7, 3, 8, false, 1e-6f},
         {NormKind::LayerNorm, "contiguous", 3, 2, 2, 33, true, 1e-5f}});
    add(l, "norm_backward", normBackward,
        {{NormKind::LayerNorm, 5, 37, true, true, 1e-5f},
         {NormKind::LayerNorm, 5, 37, false, false, 1e-5f},
         {NormKind::LayerNorm, 5, 37, true, false, 1e-5f},
         {NormKind::LayerNorm, 9, 512, true, true, 1e-5f},
         {NormKind::LayerNorm, 4, 1, true, true, 1e-5f},
         {NormKind::LayerNormStd, 5, 37, true, true, 1e-6f},
         {NormKind::LayerNormStd, 6, 2, true, true, 1e-6f},
         {NormKind::LayerNormStd, 3, 129, false, false, 1e-6f},
         {NormKind::RmsNorm, 5, 37, true, false, 1e-5f},
         {NormKind::RmsNorm, 9, 512, true, false, 1e-5f},
         {NormKind::RmsNorm, 4, 1, true, false, 1e-5f},
         {NormKind::RmsNorm, 5, 37, false, false, 1e-5f}});
    add(l, "activation", activation,
        {{Activation::Relu, 1003},
         {Activation::Gelu, 1003},
         {Activation::GeluTanh, 4099},
         {Activation::Silu, 1003},
         {Activation::Tanh, 1003},
         {Activation::Gelu, kElementSweep + 1001}});
    add(l, "activation_backward", activationBackward,
        {{Activation::Relu, 1003},
         {Activation::Gelu, 1003},
         {Activation::GeluTanh, 1003},
         {Activation::Silu, 1003},
         {Activation::Tanh, 1003}});
    const std::vector<GatedCase> gated{{Activation::Silu, 7, 37},      {Activation::Gelu, 5, 64},
                                       {Activation::GeluTanh, 3, 129}, {Activation::Relu, 9, 11},
                                       {Activation::Tanh, 2, 5},       {Activation::Silu, 1, 1}};
    add(l, "gated_activation", gatedActivation, gated);
    add(l, "gated_activation", gatedActivation, {{Activation::Silu, 4099, 4097}});
    add(l, "gated_activation_backward", gatedActivationBackward, gated);
    add(l, "residual", residual, {{1}, {1027}, {100003}, {kElementSweep + 77}});
    add(l, "scale", scale, {{1, 0.0f}, {1027, 0.37f}, {kElementSweep + 5, -2.5f}});
    // residual_backward, scale_backward, zero
    add(l, "elementwise_backward", elementwiseBackward, {{1027}});
    add(l, "dropout", dropout, {{0.1f, 100003}, {0.5f, 4099}, {0.0f, 1027}});
    add(l, "cross_entropy", crossEntropy, {{7, 11, 0.0f}, {33, 40, 0.1f}, {5, 1000, 0.2f}});
    // sum_squares, adamw_update
    add(l, "optimizer_ops", optimizerOps, {{false, 1027}, {true, 100003}});
    return l;
  }());
  static_assert(kRowSweep < int64_t{4} * 16 * 4100 && kRowSweep < 300000);  // softmax, norm
  static_assert(kElementSweep < int64_t{4097} * 16 * 256);                  // rope's pairs
  static_assert(kElementSweep < int64_t{4099} * 4097);                      // gated outputs
  static_assert(kElementSweep < int64_t{4} * 16 * 260 * 4100);              // position bias
  return cases;
}

const std::vector<OpCase>& largeCases() {
  static const std::vector<OpCase> cases = unique([] {
    std::vector<OpCase> l;
    add(l, "large", "scores_softmax_context_past_2^31", largeScores);
    add(l, "large", "out_of_memory_then_recover", outOfMemory);
    return l;
  }());
  return cases;
}

const std::vector<OpCase>& faultCases() {
  static const std::vector<OpCase> cases = unique([] {
    std::vector<OpCase> l;
    add(l, "fault", "illegal_address", illegalAddress);
    return l;
  }());
  return cases;
}

Outcome runCase(const OpCase& c, Backend& be, Backend& cpu) {
  try {
    return c.run(be, cpu);
  } catch (const std::exception& e) {
    return fail(str("threw: ", e.what()));
  }
}

}  // namespace attnviz::checks

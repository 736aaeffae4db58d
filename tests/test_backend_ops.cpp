// Every op of the Backend interface (core/backend.h) on every available backend, against the CPU
// backend on one thread and a plain double-precision reference written from backend.h, on random
// inputs of odd sizes; error is the normalised MSE with a bound per op (after ggml's
// test-backend-ops). The CPU backend runs on 1, 2 and 3 threads, with shapes large enough to be
// split and sizes that do not divide evenly: every op must give the same result on every run, and
// the row and element-wise ops the same bits whatever the thread count.
// Backends that are not available here (no CUDA device) are skipped with the reason, never passed.
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "backend.h"
#include "backends.h"
#include "cpu_backend.h"
#include "error.h"

using namespace attnviz;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Bounds on the normalised MSE Σ(x − y)² / Σy², per op. Both sides compute in float32:
// - products (linear, scores, context) of ≤ 512 terms summed in different orders differ by
//   ~1e-7 relative per element, an NMSE near 1e-13; 1e-9 keeps a wide margin and still fails
//   reduced-precision products (TF32's 10-bit mantissa gives ~1e-7, ggml's bound for them is 5e-4).
// - element- and row-wise ops differ by a few ulp of expf/erff/tanhf/sqrtf: NMSE ~1e-14.
constexpr double kNmseProduct = 1e-9;
constexpr double kNmseElementwise = 1e-10;

std::vector<float> randomFloats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Σ(x − y)² / Σy²  (NaN or a size mismatch gives +inf, so `nmse <= bound` fails).
double nmse(const std::vector<float>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) return kInf;
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = double(x[i]) - y[i];
    num += d * d;
    den += y[i] * y[i];
  }
  const double e = num / std::max(den, 1e-30);
  return std::isnan(e) ? double(kInf) : e;
}

double nmse(const std::vector<float>& x, const std::vector<float>& y) {
  return nmse(x, std::vector<double>(y.begin(), y.end()));
}

// Buffers of one backend for one test: upload host vectors, run ops on the returned pointers,
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
  float* zeros(size_t n) { return put(std::vector<float>(n, 0.0f)); }

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

// One attention layout: where Q, K, V sit in their activation buffers (all in floats).
struct Layout {
  const char* name;
  int B, H, Tq, Tk, d;
  int64_t q_size, q_offset, q_batch, q_row;  // the q view's buffer and head-0 offset, strides
  int64_t k_size, k_offset, k_batch, k_row;  // likewise k
  int64_t v_offset;                          // v: k's buffer shape, this head-0 offset
  bool fused;                                // Q, K, V in one buffer (q's)
};

std::vector<Layout> layouts() {
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
  {  // long and uneven, few heads: split over query rows across threads; fused QKV strides
    const int B = 1, H = 3, T = 301, d = 64, w = H * d;
    const int64_t size = int64_t{B} * T * 3 * w;
    ls.push_back({"fused_301x301_3heads", B, H, T, T, d, size, 0, int64_t{T} * 3 * w, 3 * w, size,
                  w, int64_t{T} * 3 * w, 3 * w, 2 * w, true});
  }
  {  // cross attention, Tq != Tk, both uneven, batch 2
    const int B = 2, H = 5, Tq = 77, S = 259, d = 32, w = H * d;
    ls.push_back({"cross_77x259_5heads", B, H, Tq, S, d, int64_t{B} * Tq * w, 0, int64_t{Tq} * w, w,
                  int64_t{B} * S * 2 * w, 0, int64_t{S} * 2 * w, 2 * w, w, false});
  }
  {  // decode step over a long cache: one query row per head (matrix-vector products)
    const int B = 1, H = 16, Tk = 3001, capacity = 3003, d = 64, w = H * d;
    ls.push_back({"kv_cache_step_3001", B, H, 1, Tk, d, int64_t{B} * w, 0, w, w,
                  int64_t{B} * capacity * w, 0, int64_t{capacity} * w, w, 0, false});
  }
  return ls;
}

// The backends every op runs on: the CPU backend on 1, 2 and 3 threads, and CUDA.
const char* const kBackendNames[] = {"cpu1t", "cpu2t", "cpu3t", "cuda"};

// Rows "backend/case" for every backend name and case.
void addRows(const std::vector<std::string>& cases) {
  QTest::addColumn<QString>("backendName");
  QTest::addColumn<int>("which");
  for (const char* backend : kBackendNames)
    for (size_t i = 0; i < cases.size(); ++i)
      QTest::newRow((std::string(backend) + "/" + cases[i]).c_str()) << QString(backend) << int(i);
}

#define CHECK_NMSE(err, bound, what) \
  QVERIFY2((err) <= (bound), qPrintable(QString("%1: nmse %2 > %3").arg(what).arg(err).arg(bound)))

}  // namespace

// Fetches the row's backend into `be`, or skips the row saying why that backend is unavailable.
// isCpu: one of the CPU backends (whose row-wise results must match 1 thread's bit for bit).
#define FETCH_BACKEND(be)                                                                        \
  QFETCH(QString, backendName);                                                                  \
  QFETCH(int, which);                                                                            \
  Backend* be = backend(backendName);                                                            \
  if (!be) QSKIP(qPrintable(backendName + " backend unavailable: " + unavailable(backendName))); \
  const bool isCpu = backendName.startsWith("cpu");                                              \
  Q_UNUSED(isCpu);

class TestBackendOps : public QObject {
  Q_OBJECT

 private:
  std::shared_ptr<Backend> cpu_;
  std::map<QString, std::shared_ptr<Backend>> backends_;
  std::map<QString, QString> why_;

  Backend* backend(const QString& name) {
    auto it = backends_.find(name);
    return it == backends_.end() ? nullptr : it->second.get();
  }
  QString unavailable(const QString& name) { return why_.count(name) ? why_[name] : "unknown"; }

 private slots:
  void initTestCase() {
    cpu_ = makeCpuBackend(1);
    QCOMPARE(cpu_->threads(), 1);
    backends_["cpu1t"] = cpu_;
    for (int n : {2, 3}) {
      auto be = makeCpuBackend(n);
      QCOMPARE(be->threads(), n);
      backends_[QString("cpu%1t").arg(n)] = be;
    }
    const std::string reason = cudaUnavailableReason();
    if (reason.empty()) {
      try {
        backends_["cuda"] = createBackend("cuda");
      } catch (const Error& e) {
        why_["cuda"] = e.what();
      }
    } else {
      why_["cuda"] = QString::fromStdString(reason);
    }
    for (const auto& [name, be] : backends_)
      qInfo("%s: %s", qPrintable(name), be->description().c_str());
    for (const auto& [name, why] : why_)
      qInfo("%s: unavailable: %s", qPrintable(name), qPrintable(why));
  }

  // ---- memory: allocate (zero-filled), upload/download at offsets, copy ----
  void memory_data() { addRows({"zeroed_offsets_copy"}); }
  void memory() {
    FETCH_BACKEND(be);
    Q_UNUSED(which);
    const size_t n = 1027;
    BufferPtr buf = be->allocate(n * sizeof(float));
    QCOMPARE(buf->bytes(), n * sizeof(float));
    std::vector<float> host(n, 1.0f);
    be->download(*buf, host.data(), n * sizeof(float));
    QVERIFY(std::all_of(host.begin(), host.end(), [](float v) { return v == 0.0f; }));

    const std::vector<float> src = randomFloats(n, 1);
    be->upload(*buf, src.data() + 100, 300 * sizeof(float), 200 * sizeof(float));
    std::vector<float> part(300);
    be->download(*buf, part.data(), 300 * sizeof(float), 200 * sizeof(float));
    QVERIFY(std::equal(part.begin(), part.end(), src.begin() + 100));

    BufferPtr dst = be->allocate(n * sizeof(float));
    be->copy(buf->f32() + 200, dst->f32() + 7, 300);
    std::vector<float> all(n);
    be->download(*dst, all.data(), n * sizeof(float));
    QVERIFY(std::equal(all.begin() + 7, all.begin() + 307, src.begin() + 100));
    QCOMPARE(all[6], 0.0f);
    QCOMPARE(all[307], 0.0f);

    // int32 and uint8 contents round-trip unchanged.
    const std::vector<int32_t> ids{5, -1, 1 << 30, 7};
    BufferPtr ibuf = be->allocate(ids.size() * sizeof(int32_t));
    be->upload(*ibuf, ids.data(), ids.size() * sizeof(int32_t));
    std::vector<int32_t> ids_back(ids.size());
    be->download(*ibuf, ids_back.data(), ids.size() * sizeof(int32_t));
    QCOMPARE(ids_back, ids);

    // Out-of-range transfers are errors, not overruns.
    bool threw = false;
    try {
      be->upload(*buf, src.data(), 8, n * sizeof(float) - 4);
    } catch (const Error& e) {
      threw = e.kind() == ErrorKind::Backend;
    }
    QVERIFY(threw);
    be->synchronize();
  }

  // ---- embedding_forward ----
  void embedding_data() {
    addRows({"3x7x37_pos0", "2x5x64_pos7_scaled", "1x1x1", "2x3x16_no_positions",
             "2x300x515_pos3_scaled"});
  }
  void embedding() {
    FETCH_BACKEND(be);
    struct Case {
      int B, T, d, vocab, max_len, pos0;
      float scale;
    };
    const Case cases[] = {{3, 7, 37, 23, 16, 0, 1.0f},
                          {2, 5, 64, 11, 12, 7, 8.0f},
                          {1, 1, 1, 2, 1, 0, 1.0f},
                          {2, 3, 16, 5, 0, 0, 2.0f},  // max_len 0: no positions (nullptr)
                          {2, 300, 515, 97, 310, 3, 1.5f}};
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
      on.embedding_forward(a.put(ids), a.put(table), c.max_len ? a.put(positions) : nullptr, out,
                           c.B, c.T, c.d, c.pos0, c.scale);
      return a.get(out, n);
    };
    const auto got = run(*be), cpu = run(*cpu_);
    if (isCpu) QVERIFY2(run(*be) == got, "a second run gave different results");
    if (isCpu) QVERIFY2(got == cpu, "differs from the result on 1 thread");
    CHECK_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
    CHECK_NMSE(nmse(got, cpu), kNmseElementwise, "vs cpu");
  }

  // ---- gather_add_forward (segment embeddings) ----
  void gather_add_data() { addRows({"5x2x37", "64x3x512"}); }
  void gather_add() {
    FETCH_BACKEND(be);
    struct Case {
      int rows, n, d;
    };
    const Case cases[] = {{5, 2, 37}, {64, 3, 512}};
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
    const auto got = run(*be), cpu = run(*cpu_);
    if (isCpu) QVERIFY2(run(*be) == got, "a second run gave different results");
    if (isCpu) QVERIFY2(got == cpu, "differs from the result on 1 thread");
    CHECK_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
    QVERIFY(got == cpu);  // one float addition per element: bit-identical
  }

  // ---- mean_pool_forward ----
  void mean_pool_data() { addRows({"1x1x8", "3x7x37", "2x300x512"}); }
  void mean_pool() {
    FETCH_BACKEND(be);
    struct Case {
      int B, T, d;
    };
    const Case cases[] = {{1, 1, 8}, {3, 7, 37}, {2, 300, 512}};
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
    const auto got = run(*be), cpu = run(*cpu_);
    if (isCpu) QVERIFY2(run(*be) == got, "a second run gave different results");
    if (isCpu) QVERIFY2(got == cpu, "differs from the result on 1 thread");
    CHECK_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
    CHECK_NMSE(nmse(got, cpu), kNmseElementwise, "vs cpu");
  }

  // ---- linear_forward ----
  void linear_data() {
    addRows({"7x13->5", "7x13->5_bias", "1x129->67_bias", "33x64->255_bias", "64x512->513",
             "301x512->1537_bias", "3x512->2049_bias", "1x1024->3001_bias", "129x2048->515"});
  }
  void linear() {
    FETCH_BACKEND(be);
    struct Case {
      int rows, in, out;
      bool bias;
    };
    const Case cases[] = {{7, 13, 5, false},    {7, 13, 5, true},      {1, 129, 67, true},
                          {33, 64, 255, true},  {64, 512, 513, false}, {301, 512, 1537, true},
                          {3, 512, 2049, true}, {1, 1024, 3001, true}, {129, 2048, 515, false}};
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
    const auto got = run(*be), cpu = run(*cpu_);
    if (isCpu) QVERIFY2(run(*be) == got, "a second run gave different results");
    CHECK_NMSE(nmse(got, ref), kNmseProduct, "vs reference");
    CHECK_NMSE(nmse(got, cpu), kNmseProduct, "vs cpu");
  }

  // ---- attention_scores_forward ----
  void scores_data() {
    std::vector<std::string> names;
    for (const Layout& l : layouts()) names.push_back(l.name);
    addRows(names);
  }
  void scores() {
    FETCH_BACKEND(be);
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
                                  {k + l.k_offset, l.k_batch, l.k_row}, s, l.B, l.H, l.Tq, l.Tk,
                                  l.d, scale);
      return a.get(s, n);
    };
    const auto got = run(*be), cpu = run(*cpu_);
    if (isCpu) QVERIFY2(run(*be) == got, "a second run gave different results");
    CHECK_NMSE(nmse(got, ref), kNmseProduct, "vs reference");
    CHECK_NMSE(nmse(got, cpu), kNmseProduct, "vs cpu");
  }

  // ---- masked_softmax_forward ----
  void softmax_data() {
    addRows({"2x3x5x7_-1e9", "2x3x5x7_-inf", "1x2x4x1_-1e9", "2x2x3x33_-inf_causal",
             "1x4x9x129_-1e9", "2x8x17x300_-inf", "1x5x301x257_-1e9_causal", "1x16x1x3001_-inf"});
  }
  void softmax() {
    FETCH_BACKEND(be);
    struct Case {
      int B, H, Tq, Tk;
      float fill;
      bool causal;
    };
    const Case cases[] = {{2, 3, 5, 7, -1e9f, false},    {2, 3, 5, 7, -kInf, false},
                          {1, 2, 4, 1, -1e9f, false},    {2, 2, 3, 33, -kInf, true},
                          {1, 4, 9, 129, -1e9f, false},  {2, 8, 17, 300, -kInf, false},
                          {1, 5, 301, 257, -1e9f, true}, {1, 16, 1, 3001, -kInf, false}};
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
          const uint8_t* m = mask.data() + (size_t(b) * c.Tq + i) * c.Tk;
          double mx = -kInf;
          for (int j = 0; j < c.Tk; ++j) mx = std::max(mx, m[j] ? double(c.fill) : scores[row + j]);
          double sum = 0.0;
          for (int j = 0; j < c.Tk; ++j)
            sum += mx == -kInf ? 0.0 : std::exp((m[j] ? double(c.fill) : scores[row + j]) - mx);
          for (int j = 0; j < c.Tk; ++j)
            ref[row + j] =
                sum == 0.0 ? 0.0 : std::exp((m[j] ? double(c.fill) : scores[row + j]) - mx) / sum;
        }
    auto run = [&](Backend& on) {
      Arena a(on);
      float* p = a.zeros(n);
      on.masked_softmax_forward(a.put(scores), a.put(mask), p, c.B, c.H, c.Tq, c.Tk, c.fill);
      return a.get(p, n);
    };
    const auto got = run(*be), cpu = run(*cpu_);
    if (isCpu) QVERIFY2(run(*be) == got, "a second run gave different results");
    if (isCpu) QVERIFY2(got == cpu, "differs from the result on 1 thread");
    CHECK_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
    CHECK_NMSE(nmse(got, cpu), kNmseElementwise, "vs cpu");
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
            if (all && c.fill == -kInf)
              QCOMPARE(p, 0.0f);
            else if (all)
              QVERIFY(std::abs(p - 1.0f / float(c.Tk)) <= 1e-7f);
            else if (m[j])
              QCOMPARE(p, 0.0f);
          }
          if (!(all && c.fill == -kInf))
            QVERIFY2(
                std::abs(sum - 1.0) <= 1e-5,
                qPrintable(QString("row (%1, %2, %3) sums to %4").arg(b).arg(h).arg(i).arg(sum)));
        }
  }

  // ---- attention_context_forward ----
  void context_data() { scores_data(); }
  void context() {
    FETCH_BACKEND(be);
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
      on.attention_context_forward(a.put(probs), {v + l.v_offset, l.k_batch, l.k_row}, ctx, l.B,
                                   l.H, l.Tq, l.Tk, l.d);
      return a.get(ctx, n);
    };
    const auto got = run(*be), cpu = run(*cpu_);
    if (isCpu) QVERIFY2(run(*be) == got, "a second run gave different results");
    CHECK_NMSE(nmse(got, ref), kNmseProduct, "vs reference");
    CHECK_NMSE(nmse(got, cpu), kNmseProduct, "vs cpu");
  }

  // ---- layernorm_forward ----
  void layernorm_data() {
    addRows({"5x37_affine", "5x37_identity", "3x129_affine_inplace", "9x512_identity_inplace",
             "4x1_affine", "2x2048_affine", "301x512_affine", "67x1000_identity_inplace"});
  }
  void layernorm() {
    FETCH_BACKEND(be);
    struct Case {
      int rows, d;
      bool affine, in_place;
    };
    const Case cases[] = {{5, 37, true, false},    {5, 37, false, false},  {3, 129, true, true},
                          {9, 512, false, true},   {4, 1, true, false},    {2, 2048, true, false},
                          {301, 512, true, false}, {67, 1000, false, true}};
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
      on.layernorm_forward(xd, c.affine ? a.put(gamma) : nullptr, c.affine ? a.put(beta) : nullptr,
                           y, c.rows, c.d, eps);
      return a.get(y, n);
    };
    const auto got = run(*be), cpu = run(*cpu_);
    if (isCpu) QVERIFY2(run(*be) == got, "a second run gave different results");
    if (isCpu) QVERIFY2(got == cpu, "differs from the result on 1 thread");
    CHECK_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
    CHECK_NMSE(nmse(got, cpu), kNmseElementwise, "vs cpu");
  }

  // ---- activation_forward ----
  void activation_data() {
    addRows({"relu_1003", "gelu_1003", "gelu_tanh_4099", "silu_1003", "tanh_1003", "relu_300007",
             "gelu_300007"});
  }
  void activation() {
    FETCH_BACKEND(be);
    const Activation acts[] = {Activation::Relu, Activation::Gelu, Activation::GeluTanh,
                               Activation::Silu, Activation::Tanh, Activation::Relu,
                               Activation::Gelu};
    const size_t sizes[] = {1003, 1003, 4099, 1003, 1003, 300007, 300007};
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
          ref[i] =
              0.5 * v *
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
    const auto got = run(*be), cpu = run(*cpu_);
    if (isCpu) QVERIFY2(run(*be) == got, "a second run gave different results");
    if (isCpu) QVERIFY2(got == cpu, "differs from the result on 1 thread");
    CHECK_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
    CHECK_NMSE(nmse(got, cpu), kNmseElementwise, "vs cpu");
  }

  // ---- residual_forward ----
  void residual_data() { addRows({"1", "1027", "100003", "1000003"}); }
  void residual() {
    FETCH_BACKEND(be);
    const size_t sizes[] = {1, 1027, 100003, 1000003};
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
    const auto got = run(*be), cpu = run(*cpu_);
    if (isCpu) QVERIFY2(run(*be) == got, "a second run gave different results");
    if (isCpu) QVERIFY2(got == cpu, "differs from the result on 1 thread");
    CHECK_NMSE(nmse(got, ref), kNmseElementwise, "vs reference");
    QVERIFY(got == cpu);  // one float addition per element: bit-identical
  }
};

QTEST_APPLESS_MAIN(TestBackendOps)
#include "test_backend_ops.moc"

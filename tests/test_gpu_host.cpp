// Host tests of the CUDA backend's logic, with no GPU: the cuBLAS call plans (gpu/gemm_plan.h)
// executed by a reference implementation of cuBLAS's column-major GEMM semantics, and the
// kernels' per-element / per-row math (gpu/kernel_math.h), each compared with the CPU backend —
// the forward ops and their backward ops alike; and, read from the sources, that every op of
// core/compute/backend.h runs inside guard() in gpu/cuda_backend.cpp.
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "backend_checks.h"
#include "base/counter_rng.h"
#include "base/error.h"
#include "compute/backend.h"
#include "compute/cpu_backend.h"
#include "gemm_plan.h"
#include "kernel_math.h"

using namespace attnviz;
using attnviz::checks::randomFloats;
using attnviz::cuda::GemmCall;
using attnviz::cuda::GemmPlan;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// An operand of a reference GEMM: the buffer the plan's offsets count from, with its size, so that
// a plan reaching outside the tensor fails the test instead of reading stray memory.
struct Operand {
  const float* data;
  int64_t size;
};

// cuBLAS's column-major (strided-batched) SGEMM, as its documentation defines it, accumulating in
// double. Throws std::out_of_range when the plan touches an element outside an operand, and
// counts the writes to every element of C in `writes` (each output must be written exactly once).
void referenceGemm(const GemmCall& g, Operand a, Operand b, float* c, int64_t c_size,
                   std::vector<int>& writes) {
  auto at = [](Operand op, int64_t i) {
    if (i < 0 || i >= op.size) throw std::out_of_range("plan reads outside an operand");
    return static_cast<double>(op.data[i]);
  };
  for (int p = 0; p < g.batch_count; ++p) {
    const int64_t a0 = g.a_offset + p * g.stride_a;
    const int64_t b0 = g.b_offset + p * g.stride_b;
    const int64_t c0 = g.c_offset + p * g.stride_c;
    for (int j = 0; j < g.n; ++j)
      for (int i = 0; i < g.m; ++i) {
        double acc = 0.0;
        for (int l = 0; l < g.k; ++l) {
          // op(A)(i, l) and op(B)(l, j) of column-major A (lda) and B (ldb).
          const double av =
              g.transa ? at(a, a0 + l + int64_t{i} * g.lda) : at(a, a0 + i + int64_t{l} * g.lda);
          const double bv =
              g.transb ? at(b, b0 + j + int64_t{l} * g.ldb) : at(b, b0 + l + int64_t{j} * g.ldb);
          acc += av * bv;
        }
        const int64_t ci = c0 + i + int64_t{j} * g.ldc;
        if (ci < 0 || ci >= c_size) throw std::out_of_range("plan writes outside C");
        const double old = g.beta == 0.0f ? 0.0 : g.beta * static_cast<double>(c[ci]);
        c[ci] = static_cast<float>(g.alpha * acc + old);
        ++writes[static_cast<size_t>(ci)];
      }
  }
}

// Executes a whole plan; C [c_size] starts as NaN so that an element no call writes shows.
std::vector<float> executePlan(const GemmPlan& plan, Operand a, Operand b, int64_t c_size,
                               std::vector<int>& writes) {
  std::vector<float> c(static_cast<size_t>(c_size), std::numeric_limits<float>::quiet_NaN());
  writes.assign(static_cast<size_t>(c_size), 0);
  for (const GemmCall& g : plan) referenceGemm(g, a, b, c.data(), c_size, writes);
  return c;
}

// Executes a plan on a C that holds values already (plans with beta = 1 add to them).
std::vector<float> executePlanOn(const GemmPlan& plan, Operand a, Operand b, std::vector<float> c,
                                 std::vector<int>& writes) {
  writes.assign(c.size(), 0);
  for (const GemmCall& g : plan) referenceGemm(g, a, b, c.data(), int64_t(c.size()), writes);
  return c;
}

// Largest |x - y| / max(1, |y|).
double maxRelError(const std::vector<float>& x, const std::vector<float>& y) {
  if (x.size() != y.size()) return std::numeric_limits<double>::infinity();
  double worst = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::abs(double(x[i]) - double(y[i])) / std::max(1.0, std::abs(double(y[i])));
    if (!(d <= worst)) worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
  }
  return worst;
}

// Whether some call of the plan has two of its products write one element of C (cuBLAS runs the
// products of one call concurrently: a gradient that accumulates over a group of query heads must
// take them in successive calls).
bool writesTwiceInOneCall(const GemmPlan& plan) {
  for (const GemmCall& g : plan) {
    std::vector<int64_t> cells;
    for (int p = 0; p < g.batch_count; ++p)
      for (int j = 0; j < g.n; ++j)
        for (int i = 0; i < g.m; ++i)
          cells.push_back(g.c_offset + p * g.stride_c + i + int64_t{j} * g.ldc);
    std::sort(cells.begin(), cells.end());
    if (std::adjacent_find(cells.begin(), cells.end()) != cells.end()) return true;
  }
  return false;
}

// Every element written exactly once; returns the first offending index or -1.
int64_t badCoverage(const std::vector<int>& writes, int64_t expected_size) {
  for (size_t i = 0; i < writes.size(); ++i)
    if (writes[i] != (static_cast<int64_t>(i) < expected_size ? 1 : 0)) return int64_t(i);
  return -1;
}

// How many calls an attention plan makes: one per batch item and member of a group of query
// heads, or one per query head, whichever is fewer (gemm_plan.cpp's perHead).
int fewerCalls(const checks::AttentionLayout& l) {
  return std::min(l.B * (l.H / l.kv_heads), l.H);
}

// Float32 sums of up to 3001 products (the decode step over a long cache), in different orders
// (the CPU backend's blocked loops vs double in the reference): up to ~2e-5 relative to
// max(1, |y|) for the longest; 1e-4 leaves margin and still catches any wrong element (those
// differ by O(1)).
constexpr double kGemmTol = 1e-4;

// ---- every CUDA entry point inside guard() (read from the sources) ----

std::string readSource(const std::string& relative) {
  std::ifstream in(std::string(ATTNVIZ_SOURCE_DIR) + "/" + relative);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// C++ source without its comments (string and character literals kept as they are).
std::string withoutComments(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"' || s[i] == '\'') {  // a literal, to its closing quote
      const char quote = s[i];
      out += s[i];
      while (++i < s.size() && s[i] != quote) {
        out += s[i];
        if (s[i] == '\\' && i + 1 < s.size()) out += s[++i];
      }
      if (i < s.size()) out += s[i];
    } else if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') ++i;
      out += '\n';
    } else if (s.compare(i, 2, "/*") == 0) {
      const size_t end = s.find("*/", i + 2);
      i = end == std::string::npos ? s.size() : end + 1;
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

// The text with the contents of its string literals taken out ("upload" in a message is no call).
std::string withoutStrings(const std::string& s) {
  static const std::regex literal(R"("([^"\\]|\\.)*")");
  return std::regex_replace(s, literal, "\"\"");
}

// The index just past the bracket that closes the one at `open` (s[open] is '(' or '{').
size_t pastClosing(const std::string& s, size_t open) {
  const char o = s[open], c = o == '(' ? ')' : '}';
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == o) ++depth;
    if (s[i] == c && --depth == 0) return i + 1;
  }
  return s.size();
}

// The ops of the Backend interface: the pure virtual member functions of backend.h's class
// Backend, less the const ones (name() and description() describe the backend, touch no device).
std::vector<std::string> backendOps(const std::string& backend_h) {
  static const std::regex pure(R"(virtual\s[^;{}()]*?\b(\w+)\s*\([^()]*\)\s*(const\s*)?=\s*0\s*;)");
  std::string text = withoutComments(backend_h);
  const size_t at = text.find("class Backend {");
  if (at == std::string::npos) return {};
  text = text.substr(at, pastClosing(text, text.find('{', at)) - at);
  std::vector<std::string> ops;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pure); it != std::sregex_iterator();
       ++it)
    if (!(*it)[2].matched) ops.push_back((*it)[1].str());
  return ops;
}

// The body (between its braces) of `op(...) override { ... }` in the source, if there is one.
std::optional<std::string> overrideBody(const std::string& source, const std::string& op) {
  const std::regex head("\\b" + op + "\\s*\\(");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), head);
       it != std::sregex_iterator(); ++it) {
    const size_t open = size_t(it->position()) + size_t(it->length()) - 1;
    static const std::regex tail(R"(^\s*(const\s*)?override\s*\{)");
    std::smatch m;
    const std::string rest = source.substr(pastClosing(source, open), 200);
    if (!std::regex_search(rest, m, tail)) continue;
    const size_t brace = pastClosing(source, open) + size_t(m.length()) - 1;
    return source.substr(brace + 1, pastClosing(source, brace) - brace - 2);
  }
  return std::nullopt;
}

// What is wrong with the CUDA backend's entry points, one line per op: each op of backend.h must
// be overridden, and its body must run all its device work inside exactly one
// guard("<its own name>", ...): outside that call only checks of its arguments and early returns,
// nothing that names CUDA, cuBLAS, the stream, the pool, a plan or another entry point.
std::vector<std::string> unguardedOps(const std::string& backend_h,
                                      const std::string& cuda_backend) {
  static const std::regex device_work(
      R"(\b(CUDA_CHECK|CUBLAS_CHECK|cuda\w*|cublas\w*|Cuda\w*|run|plan\w*|stream_|pool_|staging_|allocate|upload|download|copy|copy_to_host|synchronize)\b)");
  static const std::regex guard_call(R"(\bguard\s*\(\s*"([^"]*)\")");
  const std::string source = withoutComments(cuda_backend);
  std::vector<std::string> problems;
  for (const std::string& op : backendOps(backend_h)) {
    const std::optional<std::string> body = overrideBody(source, op);
    if (!body) {
      problems.push_back(op + ": no override in the CUDA backend");
      continue;
    }
    std::vector<std::smatch> guards;
    for (auto it = std::sregex_iterator(body->begin(), body->end(), guard_call);
         it != std::sregex_iterator(); ++it)
      guards.push_back(*it);
    if (guards.size() != 1) {
      problems.push_back(op + ": " + std::to_string(guards.size()) + " guard() calls, not one");
      continue;
    }
    if (guards[0][1].str() != op) {
      problems.push_back(op + ": its guard() names \"" + guards[0][1].str() + "\"");
      continue;
    }
    const size_t start = size_t(guards[0].position());
    const size_t end = pastClosing(*body, body->find('(', start));
    const std::string outside = withoutStrings(body->substr(0, start) + " " + body->substr(end));
    std::smatch m;
    if (std::regex_search(outside, m, device_work))
      problems.push_back(op + ": \"" + m[1].str() + "\" outside its guard()");
  }
  return problems;
}
}  // namespace

class TestGpuHost : public QObject {
  Q_OBJECT

 private:
  std::shared_ptr<Backend> cpu_ = makeCpuBackend();

 private slots:

  // ---------------------------------------------------------------- guard() around every op

  // Every op of backend.h runs inside guard() named after itself in gpu/cuda_backend.cpp, so that
  // a CUDA fault in any of them (training's included) sets the device, names the op and records
  // failure().
  void everyCudaOpGuarded() {
    const std::string backend_h = readSource("core/compute/backend.h");
    const std::string cuda_backend = readSource("gpu/cuda_backend.cpp");
    QVERIFY2(!backend_h.empty() && !cuda_backend.empty(), "cannot read the sources");
    const std::vector<std::string> ops = backendOps(backend_h);
    // A sanity bound, so that a parser broken by a new style does not pass by finding nothing.
    QVERIFY2(ops.size() >= 30,
             qPrintable(QString("only %1 ops found in backend.h").arg(ops.size())));
    QVERIFY(std::find(ops.begin(), ops.end(), "adamw_update") != ops.end());
    QVERIFY(std::find(ops.begin(), ops.end(), "name") == ops.end());
    std::string all;
    for (const std::string& p : unguardedOps(backend_h, cuda_backend)) all += p + "\n";
    QVERIFY2(all.empty(), all.c_str());
  }

  // The check itself flags each way of getting it wrong, on made-up sources.
  void guardCheckFlagsUnguardedOps() {
    const std::string header = R"(
      class DeviceBuffer {
        virtual void* data() = 0;  // another class: not an op
      };
      class Backend {
        virtual std::string name() const = 0;   // const: not an op
        virtual void a_forward(float* x, int n) = 0;
        virtual void b_backward(float* x,
                                int n) = 0;
        virtual double c_op(const float* x) = 0;
        virtual void d_op(float* x) = 0;
        virtual void e_op(float* x) = 0;
        virtual void f_op(float* x) = 0;
        virtual void setThreads(int n) { (void)n; }  // not pure: not an op
      };)";
    const std::string source = R"(
      std::string name() const override { return "x"; }
      void a_forward(float* x, int n) override {
        if (n <= 0) return;  // guard("a_forward") in a comment does not count
        guard("a_forward", [&] { CUDA_CHECK(cuda::a(x, n, stream_.get())); });
      }
      void b_backward(float* x, int n) override { CUDA_CHECK(cuda::b(x, n, stream_.get())); }
      double c_op(const float* x) override {
        double r = 0;
        guard("a_forward", [&] { r = 1; });
        return r;
      }
      void d_op(float* x) override {
        guard("d_op", [&] { CUDA_CHECK(cuda::d(x)); });
        run(planLinear(1, 2, 3), x, x, x);
      }
      void e_op(float* x) override {
        guard("e_op", [&] { work(x); });
        guard("e_op", [&] { work(x); });
      })";
    const std::vector<std::string> got = unguardedOps(header, source);
    const std::vector<std::string> want{
        "b_backward: 0 guard() calls, not one", "c_op: its guard() names \"a_forward\"",
        "d_op: \"run\" outside its guard()", "e_op: 2 guard() calls, not one",
        "f_op: no override in the CUDA backend"};
    std::string all;
    for (const std::string& p : got) all += p + "\n";
    QVERIFY2(got == want, all.c_str());
  }

  // ---------------------------------------------------------------- the cuBLAS plans

  void linearPlan_data() {
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("in");
    QTest::addColumn<int>("out");
    QTest::addColumn<bool>("bias");
    QTest::newRow("7x13->5") << 7 << 13 << 5 << false;
    QTest::newRow("7x13->5 bias") << 7 << 13 << 5 << true;
    QTest::newRow("1x129->67 bias") << 1 << 129 << 67 << true;
    QTest::newRow("33x1->3") << 33 << 1 << 3 << false;
    QTest::newRow("4x17->1") << 4 << 17 << 1 << false;
  }

  void linearPlan() {
    QFETCH(int, rows);
    QFETCH(int, in);
    QFETCH(int, out);
    QFETCH(bool, bias);
    const std::vector<float> x = randomFloats(size_t(rows) * in, 1);  // [rows, in]
    const std::vector<float> w = randomFloats(size_t(out) * in, 2);   // [out, in]
    const std::vector<float> b = randomFloats(size_t(out), 3);        // [out]
    std::vector<float> expected(size_t(rows) * out);                  // [rows, out]
    cpu_->linear_forward(x.data(), w.data(), bias ? b.data() : nullptr, expected.data(), rows, in,
                         out);

    const GemmPlan plan = cuda::planLinear(rows, in, out);
    QCOMPARE(plan.size(), size_t(1));
    QCOMPARE(plan[0].batch_count, 1);
    QVERIFY2(cuda::checkGemmCall(plan[0]).empty(), cuda::describeGemmCall(plan[0]).c_str());
    std::vector<int> writes;
    // The backend's operand order: cuBLAS A = W, B = x, C = y; then the bias kernel.
    std::vector<float> y =
        executePlan(plan, {w.data(), int64_t(w.size())}, {x.data(), int64_t(x.size())},
                    int64_t(expected.size()), writes);
    QCOMPARE(badCoverage(writes, int64_t(expected.size())), int64_t(-1));
    if (bias)
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < out; ++c) y[size_t(r) * out + c] += b[size_t(c)];
    const double err = maxRelError(y, expected);
    QVERIFY2(err <= kGemmTol, qPrintable(QString("max rel error %1").arg(err)));
  }

  void scoresPlan_data() {
    QTest::addColumn<int>("which");
    const std::vector<checks::AttentionLayout>& cases = checks::attentionLayouts();
    for (size_t i = 0; i < cases.size(); ++i) QTest::newRow(cases[i].vars().c_str()) << int(i);
  }

  void scoresPlan() {
    QFETCH(int, which);
    const checks::AttentionLayout& vc = checks::attentionLayouts()[size_t(which)];
    const std::vector<float> qbuf = randomFloats(size_t(vc.q_size), 10 + which);
    // In the fused cases Q and K share one buffer; a separate buffer otherwise.
    const std::vector<float> kbuf = vc.fused ? qbuf : randomFloats(size_t(vc.k_size), 20 + which);
    const float scale = 1.0f / std::sqrt(float(vc.d));
    HeadsView q{qbuf.data() + vc.q_offset, vc.q_batch, vc.q_row};
    HeadsView k{kbuf.data() + vc.k_offset, vc.k_batch, vc.k_row};
    const int64_t n_scores = int64_t{vc.B} * vc.H * vc.Tq * vc.Tk;
    std::vector<float> expected(static_cast<size_t>(n_scores));  // [B, H, Tq, Tk]
    cpu_->attention_scores_forward(q, k, expected.data(), vc.B, vc.H, vc.kv_heads, vc.Tq, vc.Tk,
                                   vc.d, scale);

    const GemmPlan plan = cuda::planScores(vc.q_batch, vc.q_row, vc.k_batch, vc.k_row, vc.B, vc.H,
                                           vc.kv_heads, vc.Tq, vc.Tk, vc.d, scale);
    QCOMPARE(int(plan.size()), fewerCalls(vc));
    for (const GemmCall& g : plan)
      QVERIFY2(cuda::checkGemmCall(g).empty(), cuda::describeGemmCall(g).c_str());
    // The backend's operand order: cuBLAS A = k view, B = q view, C = scores. The operands are
    // the views' buffers from their head-0 pointer on.
    std::vector<int> writes;
    std::vector<float> scores;
    try {
      scores = executePlan(plan, {k.data, vc.k_size - vc.k_offset},
                           {q.data, vc.q_size - vc.q_offset}, n_scores, writes);
    } catch (const std::out_of_range& e) {
      QFAIL(e.what());
    }
    QCOMPARE(badCoverage(writes, n_scores), int64_t(-1));
    const double err = maxRelError(scores, expected);
    QVERIFY2(err <= kGemmTol, qPrintable(QString("max rel error %1").arg(err)));
  }

  void contextPlan_data() { scoresPlan_data(); }

  void contextPlan() {
    QFETCH(int, which);
    const checks::AttentionLayout& vc = checks::attentionLayouts()[size_t(which)];
    // V lies in K's buffer, at its own offset (after K in a fused buffer).
    const int64_t width = int64_t{vc.H} * vc.d;  // of ctx [B, Tq, H·d]
    const int64_t v_offset = vc.v_offset;
    const std::vector<float> vbuf = randomFloats(size_t(vc.k_size), 30 + which);
    // probs [B, H, Tq, Tk]: any values exercise the plan; use non-negative ones like softmax.
    const int64_t n_probs = int64_t{vc.B} * vc.H * vc.Tq * vc.Tk;
    const std::vector<float> probs = randomFloats(size_t(n_probs), 40 + which, 0.0f, 1.0f);
    HeadsView v{vbuf.data() + v_offset, vc.k_batch, vc.k_row};
    const int64_t n_ctx = int64_t{vc.B} * vc.Tq * vc.H * vc.d;
    std::vector<float> expected(static_cast<size_t>(n_ctx));  // [B, Tq, H·d_v]
    cpu_->attention_context_forward(probs.data(), v, expected.data(), vc.B, vc.H, vc.kv_heads,
                                    vc.Tq, vc.Tk, vc.d);

    const GemmPlan plan =
        cuda::planContext(vc.k_batch, vc.k_row, vc.B, vc.H, vc.kv_heads, vc.Tq, vc.Tk, vc.d);
    QCOMPARE(int(plan.size()), fewerCalls(vc));
    for (const GemmCall& g : plan)
      QVERIFY2(cuda::checkGemmCall(g).empty(), cuda::describeGemmCall(g).c_str());
    // The backend's operand order: cuBLAS A = v view, B = probs, C = ctx.
    std::vector<int> writes;
    std::vector<float> ctx;
    try {
      ctx =
          executePlan(plan, {v.data, vc.k_size - v_offset}, {probs.data(), n_probs}, n_ctx, writes);
    } catch (const std::out_of_range& e) {
      QFAIL(e.what());
    }
    QCOMPARE(badCoverage(writes, n_ctx), int64_t(-1));
    const double err = maxRelError(ctx, expected);
    QVERIFY2(err <= kGemmTol, qPrintable(QString("max rel error %1").arg(err)));
  }

  void planEdgeCases() {
    // Nothing to compute: no calls (cuBLAS is never asked for a zero-sized product).
    QVERIFY(cuda::planLinear(0, 8, 4).empty());
    QVERIFY(cuda::planLinear(3, 8, 0).empty());
    QVERIFY(cuda::planScores(8, 8, 8, 8, 0, 2, 2, 1, 1, 4, 1.0f).empty());
    QVERIFY(cuda::planScores(8, 8, 8, 8, 1, 2, 2, 0, 1, 4, 1.0f).empty());
    QVERIFY(cuda::planContext(8, 8, 1, 2, 2, 1, 1, 0).empty());
    // Key/value heads that do not divide the query heads are refused with Error(Backend).
    for (int kv : {0, 4, 7}) {
      try {
        cuda::planScores(8, 8, 8, 8, 1, 6, kv, 1, 1, 4, 1.0f);
        QFAIL(qPrintable(QString("no error for 6 query heads over %1 key/value heads").arg(kv)));
      } catch (const Error& e) {
        QCOMPARE(e.kind(), ErrorKind::Backend);
      }
    }
    // Leading dimensions beyond cuBLAS's int are refused with Error(Backend), not truncated.
    try {
      cuda::planScores(1, int64_t{1} << 33, 1, 8, 1, 1, 1, 1, 1, 4, 1.0f);
      QFAIL("no error for a row stride beyond int");
    } catch (const Error& e) {
      QCOMPARE(e.kind(), ErrorKind::Backend);
    }
    // checkGemmCall applies cuBLAS's rules on lda/ldb/ldc.
    GemmCall g;
    g.m = 4;
    g.n = 3;
    g.k = 5;
    g.lda = 4;
    g.ldb = 5;
    g.ldc = 4;
    QVERIFY(cuda::checkGemmCall(g).empty());
    g.transa = true;  // A is then k×m stored: lda ≥ k
    QVERIFY(!cuda::checkGemmCall(g).empty());
    g.lda = 5;
    QVERIFY(cuda::checkGemmCall(g).empty());
    g.ldc = 3;
    QVERIFY(!cuda::checkGemmCall(g).empty());
  }

  // ---------------------------------------------------------------- the kernels' math

  void softmaxMaskRow() {
    const int B = 3, H = 4, Tq = 5;
    int64_t row = 0;
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < Tq; ++i, ++row)
          QCOMPARE(cuda::softmax_mask_row(row, H, Tq), int64_t(b * Tq + i));
  }

  void maskedSoftmax_data() {
    QTest::addColumn<float>("fill");
    QTest::addColumn<int>("Tk");
    QTest::newRow("-1e9, Tk 7") << -1e9f << 7;
    QTest::newRow("-inf, Tk 7") << -kInf << 7;
    QTest::newRow("-1e9, Tk 1") << -1e9f << 1;
    QTest::newRow("-inf, Tk 45") << -kInf << 45;
    QTest::newRow("-1e9, Tk 129") << -1e9f << 129;
  }

  void maskedSoftmax() {
    QFETCH(float, fill);
    QFETCH(int, Tk);
    const int B = 2, H = 3, Tq = 5;
    const int64_t rows = int64_t{B} * H * Tq;
    // Scores up to ±30 so the max subtraction matters; [B, H, Tq, Tk]
    const std::vector<float> scores = randomFloats(size_t(rows * Tk), 50 + Tk, -30.0f, 30.0f);
    // mask [B, Tq, Tk]: ~40% masked, query 1 of batch 0 fully masked, query 2 unmasked.
    std::vector<uint8_t> mask(size_t(B) * Tq * Tk);
    std::mt19937 rng(60 + Tk);
    for (auto& m : mask) m = (rng() % 10) < 4;
    for (int j = 0; j < Tk; ++j) {
      mask[size_t(0 * Tq + 1) * Tk + j] = 1;
      mask[size_t(0 * Tq + 2) * Tk + j] = 0;
    }
    std::vector<float> expected(scores.size());
    cpu_->masked_softmax_forward(scores.data(), mask.data(), expected.data(), B, H, Tq, Tk, fill);

    std::vector<float> probs(scores.size());
    for (int64_t r = 0; r < rows; ++r)
      cuda::masked_softmax_row(scores.data() + r * Tk,
                               mask.data() + cuda::softmax_mask_row(r, H, Tq) * Tk,
                               probs.data() + r * Tk, Tk, fill);
    // expf, and division vs the CPU's multiplication by 1/sum: a few ulp.
    const double err = maxRelError(probs, expected);
    QVERIFY2(err <= 1e-6, qPrintable(QString("max rel error %1").arg(err)));

    // The invariants backend.h promises, exactly.
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* m = mask.data() + cuda::softmax_mask_row(r, H, Tq) * Tk;
      const float* p = probs.data() + r * Tk;
      const bool all_masked = std::all_of(m, m + Tk, [](uint8_t v) { return v != 0; });
      double sum = 0.0;
      for (int j = 0; j < Tk; ++j) sum += p[j];
      if (all_masked && fill == -kInf) {
        for (int j = 0; j < Tk; ++j) QCOMPARE(p[j], 0.0f);  // all zeros, not NaN
      } else if (all_masked) {
        for (int j = 0; j < Tk; ++j) QCOMPARE(p[j], 1.0f / float(Tk));  // uniform, as PyTorch
      } else {
        QVERIFY2(std::abs(sum - 1.0) <= 1e-5,
                 qPrintable(QString("row %1 sums to %2").arg(r).arg(sum)));
        for (int j = 0; j < Tk; ++j)
          if (m[j]) QCOMPARE(p[j], 0.0f);  // masked cells exactly 0
      }
    }
  }

  void softmaxPieces() {
    QCOMPARE(cuda::masked_score(3.0f, 1, -1e9f), -1e9f);
    QCOMPARE(cuda::masked_score(3.0f, 0, -1e9f), 3.0f);
    QCOMPARE(cuda::softmax_numerator(-kInf, -kInf), 0.0f);  // not exp(NaN)
    QCOMPARE(cuda::softmax_numerator(-kInf, 2.0f), 0.0f);
    QCOMPARE(cuda::softmax_numerator(2.0f, 2.0f), 1.0f);
    QCOMPARE(cuda::softmax_prob(0.0f, 0.0f), 0.0f);
    QCOMPARE(cuda::softmax_max(-kInf, -1e9f), -1e9f);
  }

  void norm_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("d");
    QTest::addColumn<bool>("gamma");
    QTest::addColumn<bool>("beta");
    QTest::addColumn<bool>("inPlace");
    const std::pair<NormKind, const char*> kinds[] = {{NormKind::LayerNorm, "layernorm"},
                                                      {NormKind::LayerNormStd, "layernorm_std"},
                                                      {NormKind::RmsNorm, "rmsnorm"}};
    for (const auto& [kind, name] : kinds) {
      auto row = [&](int d, bool gamma, bool beta, bool in_place) {
        QTest::addRow("%s d %d%s%s%s", name, d, gamma ? " gamma" : "", beta ? " beta" : "",
                      in_place ? " in place" : "")
            << int(kind) << d << gamma << beta << in_place;
      };
      row(37, true, kind != NormKind::RmsNorm, false);
      row(37, false, false, false);
      row(129, true, false, true);
      row(512, false, false, true);
      row(kind == NormKind::LayerNormStd ? 2 : 1, true, kind != NormKind::RmsNorm, false);
    }
  }

  void norm() {
    QFETCH(int, kind);
    QFETCH(int, d);
    QFETCH(bool, gamma);
    QFETCH(bool, beta);
    QFETCH(bool, inPlace);
    const int rows = 7;
    const float eps = 1e-5f;
    // x [rows, d] with an offset and spread, as activations after a residual add
    std::vector<float> x = randomFloats(size_t(rows) * d, 70 + d, -3.0f, 5.0f);
    const std::vector<float> gammas = randomFloats(size_t(d), 71, 0.5f, 1.5f);  // [d]
    const std::vector<float> betas = randomFloats(size_t(d), 72);               // [d]
    const float* g = gamma ? gammas.data() : nullptr;
    const float* b = beta ? betas.data() : nullptr;
    std::vector<float> expected(x.size());
    cpu_->norm_forward(NormKind(kind), x.data(), g, b, expected.data(), rows, d, eps);

    std::vector<float> y(x.size());
    for (int r = 0; r < rows; ++r) {
      float* out = inPlace ? x.data() + size_t(r) * d : y.data() + size_t(r) * d;
      cuda::norm_row(NormKind(kind), x.data() + size_t(r) * d, g, b, out, d, eps);
    }
    // The same float formulas as the CPU backend, summed in another order: a few ulp apart.
    const double err = maxRelError(inPlace ? x : y, expected);
    QVERIFY2(err <= 1e-5, qPrintable(QString("max rel error %1").arg(err)));
  }

  void rope_data() {
    QTest::addColumn<int>("layout");
    QTest::addColumn<bool>("backward");
    QTest::newRow("interleaved") << int(RopeLayout::Interleaved) << false;
    QTest::newRow("halves") << int(RopeLayout::Halves) << false;
    QTest::newRow("interleaved backward") << int(RopeLayout::Interleaved) << true;
    QTest::newRow("halves backward") << int(RopeLayout::Halves) << true;
  }

  // rope_element over every pair of the K part of a fused QKV buffer [B, T, 3·H·d], against the
  // CPU backend's rope_forward / rope_backward.
  void rope() {
    QFETCH(int, layout);
    QFETCH(bool, backward);
    const int B = 2, T = 5, H = 3, d = 10, pos0 = 4, half = d / 2, width = H * d;
    const std::vector<float> buf = randomFloats(size_t(B) * T * 3 * width, 250);
    const std::vector<float> cos = randomFloats(size_t(pos0 + T) * half, 251);
    const std::vector<float> sin = randomFloats(cos.size(), 252);
    std::vector<float> expected = buf, got = buf;
    const HeadsGrad view{expected.data() + width, int64_t{T} * 3 * width, 3 * width};
    if (backward)
      cpu_->rope_backward(view, cos.data(), sin.data(), B, T, H, d, pos0, RopeLayout(layout));
    else
      cpu_->rope_forward(view, cos.data(), sin.data(), B, T, H, d, pos0, RopeLayout(layout));
    for (int64_t e = 0; e < int64_t{B} * T * H * half; ++e)
      cuda::rope_element(e, got.data() + width, view.batch_stride, view.row_stride, cos.data(),
                         sin.data(), T, H, d, pos0, RopeLayout(layout), backward ? -1.0f : 1.0f);
    // Two products and a sum per element, with or without a fused multiply-add: a rounding apart.
    const double err = maxRelError(got, expected);
    QVERIFY2(err <= 1e-6, qPrintable(QString("max rel error %1").arg(err)));
  }

  void activations_data() {
    QTest::addColumn<int>("act");
    QTest::newRow("relu") << int(Activation::Relu);
    QTest::newRow("gelu") << int(Activation::Gelu);
    QTest::newRow("gelu_tanh") << int(Activation::GeluTanh);
    QTest::newRow("silu") << int(Activation::Silu);
    QTest::newRow("tanh") << int(Activation::Tanh);
  }

  void activations() {
    QFETCH(int, act);
    const auto activation = static_cast<Activation>(act);
    std::vector<float> x = randomFloats(1003, 80, -8.0f, 8.0f);
    for (float v : {0.0f, -0.0f, 1e-7f, -1e-7f, 20.0f, -20.0f, 3.0f, -3.0f}) x.push_back(v);
    std::vector<float> expected = x;
    cpu_->activation_forward(expected.data(), int64_t(expected.size()), activation);
    std::vector<float> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = cuda::activation(x[i], activation);
    // Same formulas; erff/tanhf agree to a few ulp wherever they are evaluated.
    const double err = maxRelError(y, expected);
    QVERIFY2(err <= 1e-6, qPrintable(QString("max rel error %1").arg(err)));
  }

  void activationValues() {
    // Hand-computed: GELU(1) = 0.5·(1 + erf(1/√2)) = 0.841344746; tanh-GELU(1) = 0.841191990.
    QVERIFY(std::abs(cuda::gelu_erf(1.0f) - 0.841344746f) < 1e-6f);
    QVERIFY(std::abs(cuda::gelu_tanh(1.0f) - 0.841191990f) < 1e-6f);
    QCOMPARE(cuda::relu(-2.0f), 0.0f);
    QCOMPARE(cuda::relu(2.5f), 2.5f);
  }

  void embedding_data() {
    QTest::addColumn<int>("pos0");
    QTest::addColumn<float>("scale");
    QTest::newRow("pos0 0, scale 1") << 0 << 1.0f;
    QTest::newRow("pos0 5, scale sqrt(d)") << 5 << std::sqrt(37.0f);
  }

  void embedding() {
    QFETCH(int, pos0);
    QFETCH(float, scale);
    const int B = 3, T = 7, d = 37, vocab = 23, max_len = 16;
    std::vector<int32_t> ids(size_t(B) * T);  // [B, T]
    std::mt19937 rng(90);
    for (auto& id : ids) id = int32_t(rng() % vocab);
    const std::vector<float> table = randomFloats(size_t(vocab) * d, 91);        // [vocab, d]
    const std::vector<float> positions = randomFloats(size_t(max_len) * d, 92);  // [max_len, d]
    std::vector<float> expected(size_t(B) * T * d);                              // [B, T, d]
    cpu_->embedding_forward(ids.data(), table.data(), positions.data(), expected.data(), B, T, d,
                            pos0, scale);
    std::vector<float> out(expected.size());
    for (int64_t e = 0; e < int64_t(out.size()); ++e)
      out[size_t(e)] =
          cuda::embedding_element(e, ids.data(), table.data(), positions.data(), T, d, pos0, scale);
    // One multiply-add per element: at most one rounding apart (a fused multiply-add).
    const double err = maxRelError(out, expected);
    QVERIFY2(err <= 1e-6, qPrintable(QString("max rel error %1").arg(err)));
  }

  // ---------------------------------------------------------------- the backward ops' plans
  // Each executed by the reference GEMM from a C that holds values already (the plans that
  // accumulate have beta = 1), against the CPU backend's backward op.

  void linearBackwardPlans_data() { linearPlan_data(); }
  void linearBackwardPlans() {
    QFETCH(int, rows);
    QFETCH(int, in);
    QFETCH(int, out);
    QFETCH(bool, bias);
    Q_UNUSED(bias);
    const std::vector<float> x = randomFloats(size_t(rows) * in, 101);    // [rows, in]
    const std::vector<float> w = randomFloats(size_t(out) * in, 102);     // [out, in]
    const std::vector<float> dy = randomFloats(size_t(rows) * out, 103);  // [rows, out]
    const std::vector<float> dx0 = randomFloats(x.size(), 104), dw0 = randomFloats(w.size(), 105);
    std::vector<float> want_dx = dx0, want_dw = dw0;
    cpu_->linear_backward(dy.data(), x.data(), w.data(), want_dx.data(), want_dw.data(), nullptr,
                          rows, in, out);
    std::vector<int> writes;
    // cuBLAS A = W, B = dy, C = dx
    const auto dx =
        executePlanOn(cuda::planLinearBackwardInput(rows, in, out), {w.data(), int64_t(w.size())},
                      {dy.data(), int64_t(dy.size())}, dx0, writes);
    QCOMPARE(badCoverage(writes, int64_t(dx.size())), int64_t(-1));
    QVERIFY2(maxRelError(dx, want_dx) <= kGemmTol, "dx");
    // cuBLAS A = x, B = dy, C = dW
    const auto dw =
        executePlanOn(cuda::planLinearBackwardWeight(rows, in, out), {x.data(), int64_t(x.size())},
                      {dy.data(), int64_t(dy.size())}, dw0, writes);
    QCOMPARE(badCoverage(writes, int64_t(dw.size())), int64_t(-1));
    QVERIFY2(maxRelError(dw, want_dw) <= kGemmTol, "dweight");
  }

  void scoresBackwardPlans_data() { scoresPlan_data(); }
  void scoresBackwardPlans() {
    QFETCH(int, which);
    const checks::AttentionLayout& vc = checks::attentionLayouts()[size_t(which)];
    const std::vector<float> qbuf = randomFloats(size_t(vc.q_size), 110 + which);
    const std::vector<float> kbuf = vc.fused ? qbuf : randomFloats(size_t(vc.k_size), 120 + which);
    const int64_t n_scores = int64_t{vc.B} * vc.H * vc.Tq * vc.Tk;
    const std::vector<float> ds = randomFloats(size_t(n_scores), 130 + which);
    // Separate gradient buffers for dq and dk here (the fused layout's views are still strided).
    const std::vector<float> dq0 = randomFloats(size_t(vc.q_size), 140 + which);
    const std::vector<float> dk0 = randomFloats(size_t(vc.k_size), 150 + which);
    const float scale = 1.0f / std::sqrt(float(vc.d));
    std::vector<float> want_dq = dq0, want_dk = dk0;
    cpu_->attention_scores_backward(ds.data(), {qbuf.data() + vc.q_offset, vc.q_batch, vc.q_row},
                                    {kbuf.data() + vc.k_offset, vc.k_batch, vc.k_row},
                                    {want_dq.data() + vc.q_offset, vc.q_batch, vc.q_row},
                                    {want_dk.data() + vc.k_offset, vc.k_batch, vc.k_row}, vc.B,
                                    vc.H, vc.kv_heads, vc.Tq, vc.Tk, vc.d, scale);
    std::vector<int> writes;
    std::vector<float> dq, dk;
    try {
      // dq: cuBLAS A = k view, B = dscores, C = dq view (from its head-0 pointer on)
      std::vector<float> c(dq0.begin() + vc.q_offset, dq0.end());
      dq = executePlanOn(
          cuda::planScoresBackwardQuery(vc.k_batch, vc.k_row, vc.q_batch, vc.q_row, vc.B, vc.H,
                                        vc.kv_heads, vc.Tq, vc.Tk, vc.d, scale),
          {kbuf.data() + vc.k_offset, vc.k_size - vc.k_offset}, {ds.data(), n_scores}, c, writes);
      dq.insert(dq.begin(), dq0.begin(), dq0.begin() + vc.q_offset);
      // dk: cuBLAS A = q view, B = dscores, C = dk view; a key head's query heads in turn
      std::vector<float> ck(dk0.begin() + vc.k_offset, dk0.end());
      const GemmPlan dk_plan =
          cuda::planScoresBackwardKey(vc.q_batch, vc.q_row, vc.k_batch, vc.k_row, vc.B, vc.H,
                                      vc.kv_heads, vc.Tq, vc.Tk, vc.d, scale);
      QVERIFY(!writesTwiceInOneCall(dk_plan));
      dk = executePlanOn(dk_plan, {qbuf.data() + vc.q_offset, vc.q_size - vc.q_offset},
                         {ds.data(), n_scores}, ck, writes);
      dk.insert(dk.begin(), dk0.begin(), dk0.begin() + vc.k_offset);
    } catch (const std::out_of_range& e) {
      QFAIL(e.what());
    }
    QVERIFY2(maxRelError(dq, want_dq) <= kGemmTol, "dq");
    QVERIFY2(maxRelError(dk, want_dk) <= kGemmTol, "dk");
  }

  void contextBackwardPlans_data() { scoresPlan_data(); }
  void contextBackwardPlans() {
    QFETCH(int, which);
    const checks::AttentionLayout& vc = checks::attentionLayouts()[size_t(which)];
    const int64_t width = int64_t{vc.H} * vc.d;  // of ctx [B, Tq, H·d]
    const int64_t v_offset = vc.v_offset;
    const std::vector<float> vbuf = randomFloats(size_t(vc.k_size), 160 + which);
    const std::vector<float> dv0 = randomFloats(size_t(vc.k_size), 170 + which);
    const int64_t n_probs = int64_t{vc.B} * vc.H * vc.Tq * vc.Tk;
    const std::vector<float> probs = randomFloats(size_t(n_probs), 180 + which, 0.0f, 1.0f);
    const int64_t n_ctx = int64_t{vc.B} * vc.Tq * width;
    const std::vector<float> dctx = randomFloats(size_t(n_ctx), 190 + which);
    std::vector<float> want_dp(static_cast<size_t>(n_probs)), want_dv = dv0;
    cpu_->attention_context_backward(dctx.data(), probs.data(),
                                     {vbuf.data() + v_offset, vc.k_batch, vc.k_row}, want_dp.data(),
                                     {want_dv.data() + v_offset, vc.k_batch, vc.k_row}, vc.B, vc.H,
                                     vc.kv_heads, vc.Tq, vc.Tk, vc.d);
    std::vector<int> writes;
    std::vector<float> dp, dv;
    try {
      // dprobs: cuBLAS A = v view, B = dctx, C = dprobs (written: C starts as NaN)
      dp = executePlan(cuda::planContextBackwardProbs(vc.k_batch, vc.k_row, vc.B, vc.H, vc.kv_heads,
                                                      vc.Tq, vc.Tk, vc.d),
                       {vbuf.data() + v_offset, vc.k_size - v_offset}, {dctx.data(), n_ctx},
                       n_probs, writes);
      QCOMPARE(badCoverage(writes, n_probs), int64_t(-1));
      // dv: cuBLAS A = dctx, B = probs, C = dv view; a value head's query heads in turn
      std::vector<float> c(dv0.begin() + v_offset, dv0.end());
      const GemmPlan dv_plan = cuda::planContextBackwardValues(vc.k_batch, vc.k_row, vc.B, vc.H,
                                                               vc.kv_heads, vc.Tq, vc.Tk, vc.d);
      QVERIFY(!writesTwiceInOneCall(dv_plan));
      dv = executePlanOn(dv_plan, {dctx.data(), n_ctx}, {probs.data(), n_probs}, c, writes);
      dv.insert(dv.begin(), dv0.begin(), dv0.begin() + v_offset);
    } catch (const std::out_of_range& e) {
      QFAIL(e.what());
    }
    QVERIFY2(maxRelError(dp, want_dp) <= kGemmTol, "dprobs");
    QVERIFY2(maxRelError(dv, want_dv) <= kGemmTol, "dv");
  }

  void backwardPlanEdgeCases() {
    QVERIFY(cuda::planLinearBackwardInput(0, 8, 4).empty());
    QVERIFY(cuda::planLinearBackwardWeight(5, 8, 0).empty());
    QVERIFY(cuda::planScoresBackwardQuery(8, 8, 8, 8, 1, 2, 2, 0, 1, 4, 1.0f).empty());
    QVERIFY(cuda::planScoresBackwardKey(8, 8, 8, 8, 1, 2, 2, 1, 0, 4, 1.0f).empty());
    QVERIFY(cuda::planContextBackwardProbs(8, 8, 0, 2, 2, 1, 1, 4).empty());
    QVERIFY(cuda::planContextBackwardValues(8, 8, 1, 2, 2, 1, 1, 0).empty());
    // The accumulating plans add to C (beta 1); the probabilities' gradient is written (beta 0).
    QCOMPARE(cuda::planLinearBackwardWeight(3, 4, 5)[0].beta, 1.0f);
    QCOMPARE(cuda::planContextBackwardProbs(8, 8, 1, 2, 2, 1, 1, 4)[0].beta, 0.0f);
  }

  // ---------------------------------------------------------------- the backward kernels' math

  void softmaxBackwardRow() {
    const int B = 2, H = 3, Tq = 4, Tk = 9;
    const int64_t rows = int64_t{B} * H * Tq;
    const std::vector<float> scores = randomFloats(size_t(rows * Tk), 200, -4.0f, 4.0f);
    std::vector<uint8_t> mask(size_t(B) * Tq * Tk);
    std::mt19937 rng(201);
    for (auto& m : mask) m = (rng() % 10) < 3;
    std::vector<float> probs(scores.size());
    cpu_->masked_softmax_forward(scores.data(), mask.data(), probs.data(), B, H, Tq, Tk, -kInf);
    const std::vector<float> dprobs = randomFloats(probs.size(), 202);
    std::vector<float> expected(probs.size()), got(probs.size());
    cpu_->masked_softmax_backward(probs.data(), dprobs.data(), mask.data(), expected.data(), B, H,
                                  Tq, Tk);
    for (int64_t r = 0; r < rows; ++r)
      cuda::masked_softmax_backward_row(probs.data() + r * Tk, dprobs.data() + r * Tk,
                                        mask.data() + cuda::softmax_mask_row(r, H, Tq) * Tk,
                                        got.data() + r * Tk, Tk);
    QVERIFY2(maxRelError(got, expected) <= 1e-6, "softmax backward");
  }

  void normBackwardRow_data() { norm_data(); }
  void normBackwardRow() {
    QFETCH(int, kind);
    QFETCH(int, d);
    QFETCH(bool, gamma);
    const int rows = 5;
    const float eps = 1e-5f;
    const std::vector<float> x = randomFloats(size_t(rows) * d, 210 + d, -3.0f, 5.0f);
    const std::vector<float> dy = randomFloats(x.size(), 211);
    const std::vector<float> gammas = randomFloats(size_t(d), 212, 0.5f, 1.5f);
    const float* g = gamma ? gammas.data() : nullptr;
    std::vector<float> want_dx(x.size(), 0.5f), want_dg(static_cast<size_t>(d), 0.0f),
        want_db(static_cast<size_t>(d), 0.0f);
    cpu_->norm_backward(NormKind(kind), dy.data(), x.data(), g, want_dx.data(), want_dg.data(),
                        want_db.data(), rows, d, eps);
    std::vector<float> dx(x.size(), 0.5f), dg(static_cast<size_t>(d), 0.0f),
        db(static_cast<size_t>(d), 0.0f);
    for (int r = 0; r < rows; ++r) {
      const float* xr = x.data() + size_t(r) * d;
      const float* gr = dy.data() + size_t(r) * d;
      const cuda::NormStats st =
          cuda::norm_backward_row(NormKind(kind), gr, xr, g, dx.data() + size_t(r) * d, d, eps);
      // The parameters' kernel: column sums with the row statistics.
      for (int c = 0; c < d; ++c) {
        dg[size_t(c)] += gr[c] * (xr[c] - st.center) * st.scale;
        db[size_t(c)] += gr[c];
      }
    }
    QVERIFY2(maxRelError(dx, want_dx) <= 1e-5, "dx");
    if (gamma) {
      QVERIFY2(maxRelError(dg, want_dg) <= 1e-5, "dgamma");
      QVERIFY2(maxRelError(db, want_db) <= 1e-5, "dbeta");
    }
  }

  void activationGrads_data() { activations_data(); }
  void activationGrads() {
    QFETCH(int, act);
    const auto activation = static_cast<Activation>(act);
    std::vector<float> x = randomFloats(1003, 220, -8.0f, 8.0f);
    for (float v : {0.5f, -0.5f, 20.0f, -20.0f, 3.0f, -3.0f}) x.push_back(v);
    const std::vector<float> dy = randomFloats(x.size(), 221);
    std::vector<float> expected(x.size()), got(x.size());
    cpu_->activation_backward(x.data(), dy.data(), expected.data(), int64_t(x.size()), activation);
    for (size_t i = 0; i < x.size(); ++i) got[i] = dy[i] * cuda::activation_grad(x[i], activation);
    QVERIFY2(maxRelError(got, expected) <= 1e-6, "activation gradient");
    // Each derivative against a central difference of the forward function, in double steps.
    for (float v : {-2.5f, -0.7f, 0.3f, 1.9f}) {
      const float h = 1e-3f;
      const double numeric =
          (double(cuda::activation(v + h, activation)) - cuda::activation(v - h, activation)) /
          (2.0 * h);
      QVERIFY2(std::abs(numeric - cuda::activation_grad(v, activation)) <= 2e-3,
               qPrintable(QString("at %1: %2 vs %3")
                              .arg(v)
                              .arg(numeric)
                              .arg(cuda::activation_grad(v, activation))));
    }
  }

  void crossEntropyRow() {
    const int rows = 6, V = 37;
    const float smoothing = 0.1f, scale = 0.25f;
    const std::vector<float> logits = randomFloats(size_t(rows) * V, 230, -6.0f, 6.0f);
    std::vector<int32_t> targets{3, -1, 0, 36, 17, 5};
    std::vector<float> want_loss(static_cast<size_t>(rows)), want_grad(logits.size());
    std::vector<int32_t> want_arg(static_cast<size_t>(rows));
    cpu_->cross_entropy_forward(logits.data(), targets.data(), want_loss.data(), want_arg.data(),
                                rows, V, -1, smoothing);
    cpu_->cross_entropy_backward(logits.data(), targets.data(), want_grad.data(), rows, V, -1,
                                 smoothing, scale);
    std::vector<float> loss(static_cast<size_t>(rows)), grad(logits.size());
    std::vector<int32_t> arg(static_cast<size_t>(rows));
    for (int r = 0; r < rows; ++r) {
      const float* z = logits.data() + size_t(r) * V;
      cuda::cross_entropy_row(z, V, targets[size_t(r)], -1, smoothing, &loss[size_t(r)],
                              &arg[size_t(r)]);
      float mx = z[0], sum = 0;
      for (int v = 0; v < V; ++v) mx = std::max(mx, z[v]);
      for (int v = 0; v < V; ++v) sum += std::exp(z[v] - mx);
      for (int v = 0; v < V; ++v)
        grad[size_t(r) * V + v] =
            targets[size_t(r)] < 0
                ? 0.0f
                : cuda::cross_entropy_grad(z[v], mx, sum, v == targets[size_t(r)], V, smoothing,
                                           scale);
    }
    QVERIFY(arg == want_arg);
    QVERIFY2(maxRelError(loss, want_loss) <= 1e-6, "losses");
    QVERIFY2(maxRelError(grad, want_grad) <= 1e-6, "dlogits");
  }

  void dropoutAndAdam() {
    // The dropout element: the CPU backend's mask, bit for bit.
    std::vector<float> x = randomFloats(4099, 240, 0.5f, 1.5f), want = x;
    cpu_->dropout_forward(want.data(), int64_t(want.size()), 0.3f, 777);
    const uint32_t threshold = dropoutThreshold(0.3f);
    for (size_t i = 0; i < x.size(); ++i)
      QCOMPARE(cuda::dropout_element(x[i], 777, int64_t(i), threshold, 1.0f / 0.7f), want[i]);
    // Adam and AdamW: the CPU backend's update.
    for (bool decoupled : {false, true}) {
      const std::vector<float> p0 = randomFloats(513, 241), g = randomFloats(513, 242);
      std::vector<float> p = p0, m(513, 0.01f), v(513, 0.001f);
      AdamStep s;
      s.lr = 2e-3f;
      s.beta2 = 0.98f;
      s.eps = 1e-9f;
      s.weight_decay = 0.05f;
      s.decoupled = decoupled;
      s.bias_correction1 = 0.19f;
      s.bias_correction2 = 0.0394f;
      s.grad_scale = 0.7f;
      cpu_->adamw_update(p.data(), g.data(), m.data(), v.data(), int64_t(p.size()), s);
      for (size_t i = 0; i < p0.size(); ++i) {
        float mi = 0.01f, vi = 0.001f;
        const float got = cuda::adamw_element(p0[i], g[i], &mi, &vi, s.lr, s.beta1, s.beta2, s.eps,
                                              s.weight_decay, s.decoupled, s.bias_correction1,
                                              s.bias_correction2, s.grad_scale);
        QVERIFY(std::abs(got - p[i]) <= 1e-6f * std::max(1.0f, std::abs(p[i])));
        QVERIFY(std::abs(mi - m[i]) <= 1e-6f && std::abs(vi - v[i]) <= 1e-6f);
      }
    }
  }
};

QTEST_APPLESS_MAIN(TestGpuHost)
#include "test_gpu_host.moc"

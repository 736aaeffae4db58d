// The op-by-op checks of the Backend interface (core/compute/backend.h): every op on a backend
// under test against the CPU backend and a plain double-precision reference written from backend.h,
// on random inputs of odd sizes; error is the normalised MSE with a bound per op (after ggml's
// test-backend-ops). Qt-free, so that test_backend_ops.cpp runs them as Qt Test rows and
// backend_checks_main.cpp as a plain program (scripts/gpu-check.sh, on GPU machines without Qt).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compute/backend.h"

namespace attnviz::checks {

enum class Status { Pass, Fail, Skip };

struct Outcome {
  Status status = Status::Pass;
  std::string message;  // why it failed or was skipped; for a pass, a note (may be empty)
};

// One case of the checks, named from what it checks: the op, then its parameters by name, as
// ggml's test-backend-ops names its cases ("linear rows=7 in=13 out=5 bias=1"), or a scenario
// ("memory overlapping_copy"). run(be, cpu) checks it on `be`, with `cpu` the CPU backend as the
// second reference.
struct OpCase {
  std::string name;
  std::function<Outcome(Backend& be, Backend& cpu)> run;
};

// The checks every backend runs: each op at odd sizes, every attention layout (fused QKV, KV
// cache, interleaved context outputs), memory semantics (zero-filled allocations, offsets,
// overlapping copies, uploads from host memory freed at once, use from a second thread), and
// sizes past the first sweep of the kernels' grid-stride loops. A few seconds on the CPU.
const std::vector<OpCase>& opCases();

// GPU-only and heavy (skipped on the CPU): score buffers of more than 2³¹ floats (about 19 GiB of
// device memory, skipped when it is not free); running out of device memory mid-sequence and
// then computing the same results again.
const std::vector<OpCase>& largeCases();

// Breaks the backend on purpose (a kernel reading an illegal address) and checks that it says so:
// the error names the CUDA error, failure() is set, later calls refuse. The CUDA context of the
// process is lost afterwards: run it alone, in a process of its own. Skipped on the CPU.
const std::vector<OpCase>& faultCases();

// One attention layout of the checks: where Q, K and V sit in their activation buffers (all in
// floats), with H query heads and kv_heads key/value heads (grouped-query attention when fewer).
// Shared with tests/test_gpu_host.cpp, which runs the cuBLAS plans on them.
struct AttentionLayout {
  const char* layout = "";  // "contiguous", "fused_qkv", "kv_cache_step", "cross_fused_kv"
  int B = 0, H = 0, kv_heads = 0, Tq = 0, Tk = 0, d = 0;
  // the q view's buffer size, head-0 offset and strides; likewise k (in floats)
  int64_t q_size = 0, q_offset = 0, q_batch = 0, q_row = 0;
  int64_t k_size = 0, k_offset = 0, k_batch = 0, k_row = 0;
  int64_t v_offset = 0;      // v: in k's buffer, its head-0 offset
  bool fused = false;        // Q, K, V in one buffer (q's)
  std::string vars() const;  // "layout=fused_qkv B=2 H=8 kv_heads=8 Tq=33 Tk=33 d=64"
  // The key/value head query head h reads.
  int kvHead(int h) const { return h / (H / kv_heads); }
};

// Every layout the attention ops are checked on: separate, fused QKV, a decode step over a
// key/value cache, cross attention over fused K/V; multi-head and grouped-query.
const std::vector<AttentionLayout>& attentionLayouts();

// n uniform random floats in [lo, hi), the same for the same seed.
std::vector<float> randomFloats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

// Runs a case; an exception becomes a failure carrying its message.
Outcome runCase(const OpCase& c, Backend& be, Backend& cpu);

}  // namespace attnviz::checks

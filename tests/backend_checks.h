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

// n uniform random floats in [lo, hi), the same for the same seed.
std::vector<float> randomFloats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

// Runs a case; an exception becomes a failure carrying its message.
Outcome runCase(const OpCase& c, Backend& be, Backend& cpu);

}  // namespace attnviz::checks

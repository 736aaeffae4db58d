// Helpers shared by the test suites: locating reference data, choosing the backend under test
// (ATTNVIZ_TEST_BACKEND=cpu|cuda), and comparing float arrays with a stated tolerance.
#pragma once

#include <QString>
#include <QtTest>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "compute/backends.h"

namespace attnviz::test {

// Reference directory: $ATTNVIZ_REF_DIR (fresh references made by the test command) or the
// committed tests/data.
inline std::string referenceDir() {
  if (const char* d = std::getenv("ATTNVIZ_REF_DIR"); d && *d) return d;
  return ATTNVIZ_TEST_DATA;
}

// The reference cases of tools/make_references.py (every family and model class).
inline const std::vector<const char*>& referenceCases() {
  static const std::vector<const char*> cases{"nlp_tiny",
                                              "nlp_variants",
                                              "seed003_ref",
                                              "seed003_pad3",
                                              "torch_post",
                                              "torch_pre",
                                              "encoder001",
                                              "bert003",
                                              "classifier003",
                                              "gpt003",
                                              "mytransformer004",
                                              "mytransformer004_linear",
                                              "mytransformer004_fused"};
  return cases;
}

inline std::string backendUnderTest() {
  if (const char* b = std::getenv("ATTNVIZ_TEST_BACKEND"); b && *b) return b;
  return "cpu";
}

// The backend to test with; empty + reason when it cannot run here (the caller QSKIPs).
inline std::shared_ptr<Backend> testBackend(std::string* why_not) {
  const std::string name = backendUnderTest();
  if (name == "cuda") {
    std::string why = cudaUnavailableReason();
    if (!why.empty()) {
      *why_not = "ATTNVIZ_TEST_BACKEND=cuda but no CUDA device can be used: " + why;
      return nullptr;
    }
  }
  return createBackend(name);
}

// Runs f; returns the Error it threw, or nothing when it threw none.
template <class F>
std::optional<Error> caught(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

// Largest |a - b| / max(|b|, floor); reports the index of the worst element.
struct Diff {
  double worst = 0;
  size_t index = 0;
};
inline Diff compare(const float* a, const float* b, size_t n, double floor) {
  Diff d;
  for (size_t i = 0; i < n; ++i) {
    double err = std::abs((double)a[i] - (double)b[i]) / std::max(std::abs((double)b[i]), floor);
    if (!(err <= d.worst)) {  // NaN counts as the worst
      d.worst = std::isnan(err) ? INFINITY : err;
      d.index = i;
    }
  }
  return d;
}

}  // namespace attnviz::test

// backend_checks: the op-by-op checks of backend_checks.h as a plain program (no Qt), for machines
// that have a GPU but no Qt (scripts/gpu-check.sh). One line per case, then "N passed, N failed,
// N skipped".
//
// usage: backend_checks [--backend cpu|cuda|all] [--large] [--fault] [--filter TEXT] [--list]
//   --backend  the backend under test (default all); the CPU backend is always the reference
//   --large    also the heavy GPU-only checks (score buffers past 2³¹ floats, out of memory)
//   --fault    only the check that breaks the CUDA context on purpose (run it in its own process)
//   --filter   only the cases whose name ("linear rows=7 in=13 out=5 bias=1") contains TEXT;
//              given more than once, the cases whose name contains any of them
// exit: 0 none failed; 1 some failed; 2 usage; 77 --backend cuda and CUDA is unavailable here.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backend_checks.h"
#include "base/error.h"
#include "compute/backends.h"
#include "compute/cpu_backend.h"

using namespace attnviz;

namespace {

constexpr int kSkipExit = 77;  // CTest's and automake's "skipped"

int usage(const char* why) {
  std::fprintf(stderr,
               "backend_checks: %s\nusage: backend_checks [--backend cpu|cuda|all] [--large] "
               "[--fault] [--filter TEXT] [--list]\n",
               why);
  return 2;
}

const char* statusName(checks::Status s) {
  switch (s) {
    case checks::Status::Pass:
      return "PASS";
    case checks::Status::Fail:
      return "FAIL";
    case checks::Status::Skip:
      return "SKIP";
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = "all";
  std::vector<std::string> filters;
  bool large = false, fault = false, list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--backend" && i + 1 < argc)
      which = argv[++i];
    else if (a == "--filter" && i + 1 < argc)
      filters.push_back(argv[++i]);
    else if (a == "--large")
      large = true;
    else if (a == "--fault")
      fault = true;
    else if (a == "--list")
      list = true;
    else
      return usage(("unknown argument " + a).c_str());
  }
  if (which != "cpu" && which != "cuda" && which != "all")
    return usage("--backend: cpu, cuda or all");

  auto wanted = [&](const checks::OpCase& c) {
    if (filters.empty()) return true;
    for (const std::string& f : filters)
      if (c.name.find(f) != std::string::npos) return true;
    return false;
  };
  std::vector<checks::OpCase> selected;
  for (const checks::OpCase& c : fault ? checks::faultCases() : checks::opCases())
    if (wanted(c)) selected.push_back(c);
  if (large && !fault)
    for (const checks::OpCase& c : checks::largeCases())
      if (wanted(c)) selected.push_back(c);
  if (list) {
    for (const checks::OpCase& c : selected) std::printf("%s\n", c.name.c_str());
    return 0;
  }

  std::shared_ptr<Backend> cpu = makeCpuBackend();
  struct Under {
    std::string name;
    std::shared_ptr<Backend> backend;  // null: unavailable
    std::string why;
  };
  std::vector<Under> under;
  if (which != "cuda") under.push_back({"cpu", cpu, ""});
  if (which != "cpu") {
    Under cuda{"cuda", nullptr, cudaUnavailableReason()};
    if (cuda.why.empty()) {
      try {
        cuda.backend = createBackend("cuda");
      } catch (const Error& e) {
        cuda.why = e.what();
      }
    }
    under.push_back(cuda);
  }
  for (const Under& u : under) {
    if (u.backend)
      std::printf("%s: %s\n", u.name.c_str(), u.backend->description().c_str());
    else
      std::printf("%s: unavailable: %s\n", u.name.c_str(), u.why.c_str());
    if (u.name == "cuda" && u.backend) std::printf("cuda plugin: %s\n", cudaPluginPath().c_str());
  }
  std::fflush(stdout);

  int passed = 0, failed = 0, skipped = 0;
  for (const Under& u : under) {
    if (!u.backend) {  // one line for all its cases
      const int cases = int(selected.size());
      std::printf("SKIP %s/* (%d cases): backend unavailable: %s\n", u.name.c_str(), cases,
                  u.why.c_str());
      skipped += cases;
      continue;
    }
    for (const checks::OpCase& c : selected) {
      const auto t0 = std::chrono::steady_clock::now();
      const checks::Outcome o = checks::runCase(c, *u.backend, *cpu);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%s %s/%s (%.0f ms)%s%s\n", statusName(o.status), u.name.c_str(), c.name.c_str(),
                  ms, o.message.empty() ? "" : ": ", o.message.c_str());
      std::fflush(stdout);
      (o.status == checks::Status::Pass   ? passed
       : o.status == checks::Status::Fail ? failed
                                          : skipped)++;
    }
  }
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  if (which == "cuda" && !under.back().backend) return kSkipExit;
  return failed ? 1 : 0;
}

// memory_probe: measures what one step of attnviz really takes from the OS, next to what the core
// estimates for it, for test_memory (one process per measurement, so that steps do not mix).
//   memory_probe write CONFIG.json MODEL.safetensors   a model of random weights (nlp-tutorial
//                                                      names; its config in the metadata)
//   memory_probe model MODEL.safetensors               loadModel + Model on the CPU backend,
//                                                      against estimateModelBytes
//   memory_probe pass MODEL.safetensors B S T RECORD QKV [DUMP_DIR]
//                                                      one forward pass (and the dump), against
//                                                      Model::estimatePassBytes
// Prints one JSON object: {"estimate": bytes, "baseline": bytes, "peak": bytes}. The peak is the
// resident set's high-water mark (VmHWM; getrusage's ru_maxrss for the whole process), reset
// before the step (/proc/self/clear_refs), the baseline the resident set just before the step.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "arch/weights.h"
#include "base/error.h"
#include "compute/cpu_backend.h"
#include "io/safetensors.h"
#include "model/model.h"
#include "model/trace_dump.h"
#include "model_files.h"

using namespace attnviz;

namespace {

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM").
uint64_t statusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  return 0;
}

// Starts a measurement: the high-water mark becomes the current resident set.
uint64_t startMeasuring() {
  std::ofstream("/proc/self/clear_refs") << "5";
  return statusBytes("VmRSS");
}

uint64_t peakBytes() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  const uint64_t hwm = statusBytes("VmHWM");
  return hwm ? hwm : (uint64_t)u.ru_maxrss * 1024;
}

void print(uint64_t estimate, uint64_t baseline, uint64_t peak) {
  std::cout << nlohmann::json{{"estimate", estimate}, {"baseline", baseline}, {"peak", peak}}
            << std::endl;
}

int run(int argc, char** argv) {
  const std::string step = argc > 1 ? argv[1] : "";
  if (step == "write" && argc == 4) {
    std::ifstream in(argv[2]);
    test::writeRandomModel(argv[3], nlohmann::json::parse(in));
    return 0;
  }
  if (step == "model" && argc == 3) {
    const uint64_t baseline = startMeasuring();
    auto loaded = loadModel(argv[2]);
    Model m(loaded, makeCpuBackend());
    print(estimateModelBytes(loaded->config), baseline, peakBytes());
    return 0;
  }
  if (step == "pass" && (argc == 8 || argc == 9)) {
    Model m(loadModel(argv[2]), makeCpuBackend());
    const ModelConfig& c = m.config();
    const int B = std::atoi(argv[3]), S = std::atoi(argv[4]), T = std::atoi(argv[5]);
    ForwardOptions o;
    o.record = std::atoi(argv[6]) != 0;
    o.keep_qkv = std::atoi(argv[7]) != 0;
    o.max_trace_bytes = UINT64_MAX;
    // Sentence b of the batch is shorter by b tokens (padding), the first one full length.
    Inputs in;
    for (int b = 0; b < B; ++b) {
      if (c.hasEncoder()) in.src.push_back(std::vector<int>(std::max(1, S - b), 1));
      if (c.hasDecoder()) in.tgt.push_back(std::vector<int>(std::max(1, T - b), 2));
    }
    const uint64_t baseline = startMeasuring();
    {
      const Trace t = m.forward(in, o);
      if (argc == 9) dumpTrace(t, argv[8]);
    }
    print(m.estimatePassBytes(B, S, T, o), baseline, peakBytes());
    return 0;
  }
  std::cerr << "usage: memory_probe write CONFIG.json MODEL | model MODEL | pass MODEL B S T "
               "SCORES QKV [DUMP_DIR]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "memory_probe: " << e.what() << "\n";
    return 1;
  }
}

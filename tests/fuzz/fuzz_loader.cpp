// libFuzzer target for the model loader (issue 6). Each input is tried
//  1. as a config JSON (the sidecar / --config path: UTF-8 check, strict JSON, ModelConfig); a
//     config that parses is then used with the tensors of a valid tiny model (the seed
//     nlp_f32.safetensors), so mutated configs reach the shape checks and the model too, and
//  2. as a .safetensors file: SafetensorsFile::parse, findConfig (the config in __metadata__),
//     loadModel, and when a model loads, a tiny forward pass of a padded batch, a greedy decode and
//     the tokenizer on the config's own strings.
// Only attnviz::Error may come out. Anything else is a finding: a crash, a sanitizer report,
// another exception (libFuzzer reports it as a deadly signal), a leak, a hang (-timeout) or an
// allocation over -malloc_limit_mb. Sizes are bounded as the application bounds them (loadModel's
// model-size estimate, ForwardOptions::max_trace_bytes).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config.h"
#include "cpu_backend.h"
#include "error.h"
#include "json_safe.h"
#include "model.h"
#include "safetensors.h"
#include "weights.h"

using namespace attnviz;

namespace {

// The limits the fuzzer runs under (scripts/sanitize.sh passes -malloc_limit_mb=512).
constexpr uint64_t kMaxModelBytes = uint64_t(64) << 20;
constexpr uint64_t kMaxTraceBytes = uint64_t(1) << 20;

template <class F>
void tolerate(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
}

void runModel(const std::shared_ptr<const LoadedModel>& loaded) {
  const ModelConfig& c = loaded->config;
  // loadModel(path) refuses models above LoadOptions::max_model_bytes from this estimate.
  if (estimateModelBytes(c) > kMaxModelBytes) return;
  Model m(loaded, makeCpuBackend());
  const int vs = static_cast<int>(c.src_vocab.size());
  std::vector<int> src;
  for (int i = 1; i <= 3; ++i) src.push_back(i % vs);
  const std::vector<int> tgt{c.bos_id, c.eos_id};
  ForwardOptions o;
  o.max_trace_bytes = kMaxTraceBytes;
  tolerate([&] { m.forward({src, {c.src_pad_id}}, {tgt, {c.bos_id}}, o); });  // padded batch of 2
  tolerate([&] { m.greedyDecode(src, 3); });
  for (const auto& e : c.examples) {
    tolerate([&] { m.encodeSource(e.src); });
    tolerate([&] { m.encodeTarget(e.tgt); });
  }
  tolerate([&] { m.encodeSource(c.name); });
  tolerate([&] { m.encodeSource(c.src_vocab.back() + " " + c.src_vocab.front()); });
}

std::unique_ptr<SafetensorsFile> seed_model;  // tensors for mode 1

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  try {
    seed_model = std::make_unique<SafetensorsFile>(SafetensorsFile::open(ATTNVIZ_FUZZ_SEED_MODEL));
  } catch (const Error&) {  // mode 1 then stops at the config
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // 1. As a config file.
  tolerate([&] {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    if (!isValidUtf8(text)) return;
    const ModelConfig config =
        ModelConfig::fromJson(parseJsonStrict(text, "fuzz.json"), "fuzz.json");
    if (seed_model) runModel(loadModel(*seed_model, config));
  });
  // 2. As a model file. The name points nowhere, so findConfig finds no sidecar on disk.
  tolerate([&] {
    SafetensorsFile file = SafetensorsFile::parse(std::vector<uint8_t>(data, data + size),
                                                  "/nonexistent/fuzz.safetensors");
    for (const TensorInfo& t : file.tensors())  // every tensor that claims to be a float
      if (t.dtype == DType::F32 || t.dtype == DType::F16 || t.dtype == DType::BF16 ||
          t.dtype == DType::F64)
        file.toFloat(t);
    const ModelConfig config = findConfig(file, "");
    runModel(loadModel(file, config));
  });
  return 0;
}

// libFuzzer target for the model loader and what `attnviz-cli run` does with a model (issues 6 and
// 14). Each input is tried
//  1. as a config JSON (the sidecar / --config path: UTF-8 check, strict JSON, ModelConfig); a
//     config that parses is then used with the tensors of a valid tiny model (the seed
//     nlp_f32.safetensors), so mutated configs reach the shape checks and the model too, and
//  2. as a .safetensors file: SafetensorsFile::parse, findConfig (the config in __metadata__),
//     loadModel;
//  3. as nanoGPT's meta.pkl (io/meta_pkl.h), whose vocabulary then tokenizes a few strings;
//  4. as a tokenizer.json (text/hf_tokenizer_json.h; written to the temporary folder), which then
//     tokenizes a few strings and decodes them.
// A model that loads is then run as the CLI runs it: a padded batch of random ids and lengths
// (random segments, masks, q/k/v, an intervention), the non-finite scan, the dump into a
// temporary folder, a decoding session stepped forward and back, and the tokenizer on the config's
// own strings. The ids and lengths come from a generator seeded with the input, so a finding
// reproduces from its file.
// Only attnviz::Error may come out. Anything else is a finding: a crash, a sanitizer report,
// another exception (libFuzzer reports it as a deadly signal), a leak, a hang (-timeout) or an
// allocation over -malloc_limit_mb. Sizes are bounded as the application bounds them (loadModel's
// model-size estimate, ForwardOptions::max_trace_bytes).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "arch/config.h"
#include "arch/weights.h"
#include "base/error.h"
#include "base/json_safe.h"
#include "compute/cpu_backend.h"
#include "io/meta_pkl.h"
#include "io/safetensors.h"
#include "model/decoding.h"
#include "model/finite_scan.h"
#include "model/model.h"
#include "model/trace_dump.h"
#include "text/char_tokenizer.h"
#include "text/hf_tokenizer_json.h"

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

std::string dump_dir;  // a temporary folder for the dumps (in /dev/shm where there is one)

// Runs the model as `attnviz-cli run` and `decode` do, with ids and lengths drawn from `rng`.
void runModel(const std::shared_ptr<const LoadedModel>& loaded, std::mt19937& rng) {
  const ModelConfig& c = loaded->config;
  // loadModel(path) refuses models above LoadOptions::max_model_bytes from this estimate.
  if (estimateModelBytes(c) > kMaxModelBytes) return;
  Model m(loaded, makeCpuBackend());
  auto below = [&](int n) {
    return std::uniform_int_distribution<int>(0, std::max(n, 1) - 1)(rng);
  };
  // Lengths 1..12 (and now and then one past the model's positions), ids over the vocabulary (and
  // now and then one outside it): the errors must be errors.
  auto sentence = [&](int vocab, int first) {
    const int len =
        below(16) == 0 ? m.maxPositions() + 1 : 1 + below(std::min(12, m.maxPositions()));
    std::vector<int> ids;
    if (first >= 0) ids.push_back(first);
    while ((int)ids.size() < len) ids.push_back(below(32) == 0 ? vocab + below(3) : below(vocab));
    return ids;
  };
  Inputs in;
  const int B = 1 + below(3);
  for (int b = 0; b < B; ++b) {
    if (c.hasEncoder()) {
      in.src.push_back(sentence((int)c.src_vocab.size(), -1));
      if (c.n_segments) {
        std::vector<int> seg;
        for (size_t i = 0; i < in.src.back().size(); ++i) seg.push_back(below(c.n_segments + 1));
        in.segments.push_back(seg);
      }
    }
    if (c.hasDecoder()) in.tgt.push_back(sentence((int)c.tgt_vocab.size(), c.bos_id));
  }
  ForwardOptions o;
  o.max_trace_bytes = kMaxTraceBytes;
  o.masks.src_padding = below(4) != 0;
  o.masks.tgt_padding = below(4) != 0;
  o.masks.subsequent = below(4) != 0;
  o.record = below(8) != 0;
  o.keep_qkv = below(2) == 0;
  if (below(4) == 0) {
    HeadIntervention iv;
    iv.kind = kAttentionKinds[below(3)];
    iv.layer = below(4);
    iv.head = below(c.n_heads + 1);
    iv.off = below(2) == 0;
    iv.temperature = below(2) == 0 ? 0.5f : 4.0f;
    o.interventions.push_back(iv);
  }
  tolerate([&] {
    const Trace t = m.forward(in, o);
    const NonFiniteReport report = scanTrace(t);
    (void)report.summary();
    if (!dump_dir.empty() && below(8) == 0) dumpTrace(t, dump_dir);
  });
  // A decoding session stepped forward and back, as decode and the GUI step it.
  if (c.hasDecoder()) {
    tolerate([&] {
      DecodingSession::Options so;
      so.max_new_tokens = 1 + below(6);
      so.max_trace_bytes = kMaxTraceBytes;
      so.masks = o.masks;
      const std::vector<int> src =
          c.hasCross() ? sentence((int)c.src_vocab.size(), -1) : std::vector<int>();
      DecodingSession s(m, src, {}, so);
      for (int i = 0; i < 8 && !s.finished(); ++i) {
        if (below(4) == 0)
          s.stepBack();
        else
          s.stepForward(below(3) == 0 ? below(s.vocabSize()) : -1);
      }
      (void)scanTrace(s.trace());
    });
  }
  for (const auto& e : c.examples) {
    tolerate([&] { m.encodeSource(e.src); });
    tolerate([&] { m.encodeTarget(e.tgt); });
  }
  tolerate([&] { m.encodeSource(c.name); });
  if (c.hasEncoder())
    tolerate([&] { m.encodeSource(c.src_vocab.back() + " " + c.src_vocab.front()); });
}

// The generator for one input: seeded with its bytes.
std::mt19937 rngFor(const uint8_t* data, size_t size) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  return std::mt19937(h);
}

std::unique_ptr<SafetensorsFile> seed_model;  // tensors for mode 1

// What a tokenizer is asked in modes 3 and 4: typed text of several kinds, and the ids back.
void useTokenizer(const Tokenizer& t) {
  for (const char* text : {"Hello world", " two  spaces\n", "caf\xC3\xA9 \xF0\x9F\x98\x80 42",
                           "<s>[MASK]<|endoftext|>", "a"}) {
    tolerate([&] { (void)t.decode(Side::Target, t.encodeTarget(text)); });
    tolerate([&] { (void)t.encodeSource(text); });
  }
  (void)t.describe();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Dumps go to a folder of this process, removed at exit.
  std::error_code ec;
  const std::filesystem::path base = std::filesystem::exists("/dev/shm", ec)
                                         ? std::filesystem::path("/dev/shm")
                                         : std::filesystem::temp_directory_path(ec);
  if (!ec) {
    dump_dir = (base / ("attnviz-fuzz-" + std::to_string(::getpid()))).string();
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(dump_dir, ignored);
    });
  }
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
    std::mt19937 rng = rngFor(data, size);
    if (seed_model) runModel(loadModel(*seed_model, config), rng);
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
    std::mt19937 rng = rngFor(data, size);
    runModel(loadModel(file, config), rng);
  });
  // 3. As nanoGPT's meta.pkl.
  tolerate([&] {
    useTokenizer(*openCharTokenizer(nanoGptMetaFromBytes(data, size, "fuzz.pkl"), "fuzz.pkl"));
  });
  // 4. As a tokenizer.json (only what opens as a JSON object).
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (!dump_dir.empty() && start != std::string_view::npos && text[start] == '{') {
    tolerate([&] {
      std::filesystem::create_directories(dump_dir);
      const std::string path = dump_dir + "/tokenizer.json";
      FILE* f = std::fopen(path.c_str(), "wb");
      if (!f) return;
      std::fwrite(data, 1, size, f);
      std::fclose(f);
      useTokenizer(*readTokenizerJson(path).tokenizer);
    });
  }
  return 0;
}

#include "commands.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "backends.h"
#include "bundled.h"
#include "decoding.h"
#include "error.h"
#include "model.h"
#include "npy.h"
#include "train_command.h"
#include "weights.h"

namespace attnviz::cli {

namespace {

// --flag value options and positional arguments.
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;

  bool has(const std::string& k) const { return options.count(k) > 0; }
  std::string get(const std::string& k, const std::string& fallback = "") const {
    auto it = options.find(k);
    return it == options.end() ? fallback : it->second;
  }
  int getInt(const std::string& k, int fallback, int lo, int hi) const {
    if (!has(k)) return fallback;
    const std::string v = get(k);
    if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
      throw Error(ErrorKind::Usage, "--" + k + " expects a whole number, got \"" + v + "\"");
    int n = std::stoi(v);
    if (n < lo || n > hi)
      throw Error(ErrorKind::Usage, "--" + k + " must be between " + std::to_string(lo) + " and " +
                                        std::to_string(hi) + ", got " + v);
    return n;
  }
};

Args parse(const std::vector<std::string>& args, size_t from,
           const std::vector<std::string>& value_opts, const std::vector<std::string>& flag_opts) {
  Args a;
  for (size_t i = from; i < args.size(); ++i) {
    const std::string& s = args[i];
    if (s.rfind("--", 0) == 0) {
      std::string key = s.substr(2), value;
      if (auto eq = key.find('='); eq != std::string::npos) {
        value = key.substr(eq + 1);
        key = key.substr(0, eq);
      } else if (std::find(value_opts.begin(), value_opts.end(), key) != value_opts.end()) {
        if (i + 1 >= args.size()) throw Error(ErrorKind::Usage, "--" + key + " needs a value");
        value = args[++i];
      }
      const bool known = std::find(value_opts.begin(), value_opts.end(), key) != value_opts.end() ||
                         std::find(flag_opts.begin(), flag_opts.end(), key) != flag_opts.end();
      if (!known) throw Error(ErrorKind::Usage, "unknown option --" + key);
      a.options[key] = value;
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

std::string joinTokens(const std::vector<std::string>& t) {
  std::string s;
  for (const auto& w : t) s += (s.empty() ? "" : " ") + w;
  return s;
}

std::shared_ptr<const LoadedModel> openModel(const Args& a) {
  if (a.positional.empty())
    throw Error(ErrorKind::Usage, "missing MODEL (a .safetensors path or a bundled name)");
  LoadOptions lo;
  lo.config_path = a.get("config");
  auto m = loadModel(resolveModelPath(a.positional[0]), lo);
  for (const auto& w : m->warnings) std::cerr << "attnviz-cli: warning: " << w << "\n";
  return m;
}

std::shared_ptr<Backend> openBackend(const Args& a) {
  const std::string name = a.get("backend", "cpu");
  if (name != "cpu" && name != "cuda")
    throw Error(ErrorKind::Usage, "--backend must be cpu or cuda, got \"" + name + "\"");
  return createBackend(name);  // a clear Error when CUDA is unavailable
}

std::vector<int> sourceIds(const Model& m, const Args& a) {
  if (!m.config().hasEncoder()) {
    if (a.has("src") || a.has("src-ids"))
      throw Error(ErrorKind::Usage, std::string(modelClassName(m.config().model)) +
                                        " has no encoder: give the input with --tgt or --tgt-ids");
    return {};
  }
  if (a.has("src-ids"))
    return parseIdList(a.get("src-ids"), (int)m.config().src_vocab.size(), "--src-ids");
  if (!a.has("src"))
    throw Error(ErrorKind::Usage, "give the source sentence with --src \"…\" or --src-ids 1,2,3");
  return m.encodeSource(a.get("src"));
}

// The decoder's given positions: --tgt-ids (the start token added when missing) or --tgt words
// (after the start token); empty when neither is given.
std::vector<int> targetIds(const Model& m, const Args& a) {
  const ModelConfig& c = m.config();
  if (!c.hasDecoder()) {
    if (a.has("tgt") || a.has("tgt-ids"))
      throw Error(ErrorKind::Usage, std::string(modelClassName(c.model)) +
                                        " has no decoder: give the input with --src or --src-ids");
    return {};
  }
  if (a.has("tgt-ids")) {
    std::vector<int> tgt = parseIdList(a.get("tgt-ids"), (int)c.tgt_vocab.size(), "--tgt-ids");
    if (c.bos_id >= 0 && tgt.front() != c.bos_id) tgt.insert(tgt.begin(), c.bos_id);
    return tgt;
  }
  if (a.has("tgt")) return m.encodeTarget(a.get("tgt"));
  return {};
}

std::vector<int> segmentIds(const Args& a, int n_segments) {
  if (!a.has("segment-ids")) return {};
  return parseIdList(a.get("segment-ids"), std::max(n_segments, 1), "--segment-ids");
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int cmdInfo(const Args& a) {
  auto lm = openModel(a);
  const ModelConfig& c = lm->config;
  std::cout << "model:        " << lm->path << "\n";
  if (!c.name.empty()) std::cout << "name:         " << c.name << "\n";
  if (!c.description.empty()) std::cout << "description:  " << c.description << "\n";
  std::cout << "family:       " << familyName(c.family) << " (" << familyTitle(c.family) << ")\n"
            << "class:        " << modelClassName(c.model) << ", "
            << architectureName(c.architecture()) << "\n"
            << "layers:       ";
  if (c.hasEncoder()) std::cout << c.n_encoder_layers << " encoder";
  if (c.hasCross()) std::cout << " + ";
  if (c.hasDecoder()) std::cout << c.n_decoder_layers << " decoder";
  std::cout << "\n"
            << "d_model:      " << c.d_model << "\n"
            << "heads:        " << c.n_heads << " (d_k " << c.d_k << ", d_v " << c.d_v << ")\n"
            << "d_ff:         " << c.d_ff << " (" << activationName(c.activation) << ")\n"
            << "norm:         " << (c.norm == NormPlacement::Post ? "post" : "pre") << "-LayerNorm"
            << (c.final_norm ? " + final norms" : "") << (c.embed_norm ? " + embedding norm" : "")
            << "\n"
            << "positions:    " << positionalName(c.positional) << ", max_len " << c.max_len << "\n"
            << "embeddings:   " << (c.embed_scale ? "scaled by sqrt(d_model)" : "unscaled")
            << (c.n_segments ? ", " + std::to_string(c.n_segments) + " segments" : "") << "\n"
            << "mask fill:    " << c.mask_fill << "\n"
            << "parameters:   " << c.parameterCount() << "\n";
  auto vocab = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < 40; ++i) s += (i ? " " : "") + v[i];
    if (v.size() > 40) s += " …";
    return s;
  };
  if (c.hasEncoder())
    std::cout << "src vocab:    " << c.src_vocab.size() << " tokens: " << vocab(c.src_vocab)
              << "\n";
  if (c.hasDecoder())
    std::cout << "tgt vocab:    " << c.tgt_vocab.size() << " tokens: " << vocab(c.tgt_vocab)
              << "\n";
  const auto& special = c.hasDecoder() ? c.tgt_vocab : c.src_vocab;
  auto name = [&](int id) {
    return id >= 0 ? std::to_string(id) + " (" + special[id] + ")" : std::string("none");
  };
  std::cout << "special ids:  pad " << (c.hasEncoder() ? c.src_pad_id : c.tgt_pad_id);
  if (c.hasCross()) std::cout << "/" << c.tgt_pad_id;
  std::cout << ", bos " << name(c.bos_id) << ", eos " << name(c.eos_id)
            << (c.src_bos_eos ? ", source wrapped in start/end markers" : "") << "\n";
  if (c.classHead() != ClassHead::None) {
    std::cout << "classes:      " << c.n_classes << ":";
    for (int k = 0; k < c.n_classes; ++k) std::cout << " " << c.classLabel(k);
    std::cout << "\n";
  }
  for (const auto& e : c.examples) std::cout << "example:      " << e.src << "\n";
  for (const auto& w : lm->warnings) std::cout << "warning:      " << w << "\n";
  return 0;
}

int maxNewTokens(const Args& a) {
  return a.getInt("max-len", 0, 1, ConfigLimits::kMaxLen);
}

int cmdRun(const Args& a) {
  Model m(openModel(a), openBackend(a));
  const ModelConfig& c = m.config();
  Inputs in;
  std::vector<int> src = sourceIds(m, a);
  if (c.hasEncoder()) {
    in.src = {src};
    std::vector<int> seg = segmentIds(a, c.n_segments);
    if (!seg.empty()) in.segments = {seg};
  }
  ForwardOptions o;
  o.keep_qkv = a.has("qkv");
  o.masks.src_padding = !a.has("no-padding-mask");
  o.masks.tgt_padding = !a.has("no-padding-mask");
  o.masks.subsequent = !a.has("no-subsequent-mask");
  Trace t;
  std::vector<int> tgt = targetIds(m, a);
  if (c.hasCross() && tgt.empty()) {
    // No target given: greedy-decode it; the decoding session's trace is the teacher-forced pass
    // over what it decoded.
    const auto t0 = std::chrono::steady_clock::now();
    DecodingSession::Options so;
    so.masks = o.masks;
    so.keep_qkv = o.keep_qkv;
    so.max_new_tokens = maxNewTokens(a);
    DecodingSession s(m, src, {}, so);
    s.runToEnd();
    t = s.trace();
    t.elapsed_ms = msSince(t0);
  } else {
    if (c.hasDecoder()) {
      if (tgt.empty())
        throw Error(ErrorKind::Usage, "give the input with --tgt \"…\" or --tgt-ids 1,2,3");
      in.tgt = {tgt};
    }
    t = m.forward(in, o);
  }
  if (c.hasEncoder()) std::cout << "source: " << joinTokens(t.src_tokens[0]) << "\n";
  if (c.hasDecoder()) std::cout << "target: " << joinTokens(t.tgt_tokens[0]) << "\n";
  if (!t.logits.empty()) {
    const int V = (int)t.logits.dim(2), n = (int)t.logits.dim(1);
    const Vocabulary& out = m.vocab(c.hasDecoder() ? Side::Target : Side::Source);
    std::vector<std::string> next;
    for (int i = 0; i < n; ++i) {
      const float* row = t.logitsRow(0, i);
      next.push_back(out.token((int)(std::max_element(row, row + V) - row)));
    }
    std::cout << "argmax: " << joinTokens(next) << "\n";
  }
  if (!t.class_logits.empty()) {
    const int C = (int)t.class_logits.dim(1);
    const float* l = t.class_logits.ptr();
    const float mx = *std::max_element(l, l + C);
    double sum = 0;
    for (int k = 0; k < C; ++k) sum += std::exp((double)l[k] - mx);
    std::cout << "classes:";
    for (int k = 0; k < C; ++k)
      std::cout << " " << c.classLabel(k) << " " << std::fixed << std::setprecision(3)
                << std::exp((double)l[k] - mx) / sum;
    std::cout << "\n";
  }
  std::cout << "forward pass: " << std::fixed << std::setprecision(2) << t.elapsed_ms << " ms on "
            << m.backend().description() << "\n";
  if (a.has("dump")) {
    dumpTrace(t, a.get("dump"));
    std::cout << "wrote the trace to " << a.get("dump") << "\n";
  }
  return 0;
}

int cmdDecode(const Args& a) {
  Model m(openModel(a), openBackend(a));
  const ModelConfig& c = m.config();
  if (!c.hasDecoder())
    throw Error(ErrorKind::Usage, std::string(modelClassName(c.model)) +
                                      " has no decoder: use `run` to see its outputs");
  std::vector<int> src = sourceIds(m, a);
  std::vector<int> prefix = targetIds(m, a);
  std::vector<int> out = greedyDecode(m, src, maxNewTokens(a), prefix);
  std::vector<std::string> words;
  for (int id : out)
    if (id != c.eos_id) words.push_back(m.tgtVocab().token(id));
  if (a.has("ids")) {
    std::string s;
    for (int id : out) s += (s.empty() ? "" : ",") + std::to_string(id);
    std::cout << s << "\n";
  } else {
    std::cout << joinTokens(words) << "\n";
  }
  return 0;
}

struct Stats {
  double median, min;
};
Stats timeIt(int repeat, const std::function<void()>& f) {
  f();  // warm-up
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(msSince(t0));
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

int cmdBench(const Args& a) {
  std::shared_ptr<const LoadedModel> lm;
  if (a.positional.empty())
    lm = makeRandomModel(tutorialSizeConfig(), 1234);
  else
    lm = openModel(a);
  Model m(lm, openBackend(a));
  const ModelConfig& c = m.config();
  const int repeat = a.getInt("repeat", 5, 1, 1000);
  std::vector<int> lengths;
  for (const auto& s : std::vector<std::string>{a.get("lengths", "32,128")}) {
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');) {
      if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos ||
          item.size() > 6)
        throw Error(ErrorKind::Usage, "--lengths expects numbers like 32,128");
      lengths.push_back(std::stoi(item));
    }
  }
  std::cout << "model:   " << (c.name.empty() ? lm->path : c.name) << " — " << c.n_encoder_layers
            << "+" << c.n_decoder_layers << " layers, d_model " << c.d_model << ", " << c.n_heads
            << " heads, d_ff " << c.d_ff << "\n"
            << "backend: " << m.backend().description() << "\n"
            << "median of " << repeat << " runs (min in brackets)\n";
  std::mt19937 rng(7);
  auto randomIds = [&](int n, int vocab, int first) {
    std::vector<int> ids;
    std::uniform_int_distribution<int> d(std::min(3, vocab - 1), vocab - 1);
    if (first >= 0) ids.push_back(first);
    while ((int)ids.size() < n) ids.push_back(d(rng));
    return ids;
  };
  for (int n : lengths) {
    if (n < 1 || n > m.maxPositions())
      throw Error(ErrorKind::Usage, "length " + std::to_string(n) + " is outside 1.." +
                                        std::to_string(m.maxPositions()));
    Inputs in;
    if (c.hasEncoder()) in.src = {randomIds(n, (int)c.src_vocab.size(), -1)};
    if (c.hasDecoder()) in.tgt = {randomIds(n, (int)c.tgt_vocab.size(), c.bos_id)};
    ForwardOptions full;
    Stats f = timeIt(repeat, [&] { m.forward(in, full); });
    ForwardOptions probs_only;
    probs_only.keep_scores = false;
    Stats p = timeIt(repeat, [&] { m.forward(in, probs_only); });
    std::cout << std::fixed << std::setprecision(2) << "n = " << n << " tokens\n"
              << "  forward, full trace:          " << f.median << " ms  (" << f.min << ")\n"
              << "  forward, probabilities only:  " << p.median << " ms  (" << p.min << ")\n";
    if (!c.hasDecoder()) continue;
    // Decode steps: n positions with the key/value cache (the trace growing row by row), and
    // without it (the whole decoder rerun over the prefix each step, as the tutorials' greedy
    // decoder does).
    const std::vector<int>& tgt = in.tgt[0];
    const std::vector<int> src = c.hasCross() ? in.src[0] : std::vector<int>();
    Stats cached = timeIt(repeat, [&] {
      DecodingSession::Options so;
      so.max_new_tokens = n;
      DecodingSession s(m, src, {tgt[0]}, so);
      for (int i = 1; i < n; ++i) s.stepForward(tgt[i]);
    });
    std::cout << "  decode step, KV cache:        " << cached.median / n << " ms/step  ("
              << cached.min / n << ")\n";
    if (a.has("uncached")) {
      Stats uncached = timeIt(std::max(1, repeat / 2), [&] {
        for (int i = 1; i <= n; ++i) {
          Inputs one = in;
          one.tgt = {std::vector<int>(tgt.begin(), tgt.begin() + i)};
          m.forward(one, probs_only);
        }
      });
      std::cout << "  decode step, no cache:        " << uncached.median / n << " ms/step  ("
                << uncached.min / n << ")\n";
    }
  }
  return 0;
}

}  // namespace

std::string usage() {
  return R"(usage: attnviz-cli COMMAND [options]

commands:
  info MODEL                         config, parameter count, vocabularies
  run MODEL --src "…" [--tgt "…"]    one forward pass (greedy-decodes the target when --tgt is absent)
        [--dump DIR]                 write the trace as NumPy files (enc_self_*.npy, dec_self_*.npy,
                                     cross_*.npy, logits.npy, tokens.json)
        [--no-padding-mask] [--no-subsequent-mask]
  decode MODEL --src "…" [--max-len N] [--ids]   greedy decoding; prints the tokens
  bench [MODEL] [--lengths 32,128] [--repeat N]  timings of forward passes and decode steps
                                     (without MODEL: the tutorial's full size, random weights)
  models                             list the bundled models
)" + trainUsage() +
         R"(

common options:
  --config FILE.json                 the model's config when it is not inside the file
  --backend cpu|cuda                 compute backend (default cpu)
  --src-ids 5,1,3 / --tgt-ids 1,4    token ids instead of words

MODEL is a .safetensors file or the name of a bundled model (see `attnviz-cli models`).
)";
}

int runCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << usage();
    return args.empty() ? 2 : 0;
  }
  const std::string& cmd = args[0];
  const std::vector<std::string> common{"config", "backend", "src", "tgt", "src-ids", "tgt-ids"};
  auto opts = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    return extra;
  };
  if (cmd == "info") return cmdInfo(parse(args, 1, opts({}), {}));
  if (cmd == "run")
    return cmdRun(parse(args, 1, opts({"dump", "max-len", "segment-ids"}),
                        {"no-padding-mask", "no-subsequent-mask", "qkv"}));
  if (cmd == "decode") return cmdDecode(parse(args, 1, opts({"max-len"}), {"ids"}));
  if (cmd == "bench") return cmdBench(parse(args, 1, opts({"lengths", "repeat"}), {"uncached"}));
  if (cmd == "train") return runTrain(std::vector<std::string>(args.begin() + 1, args.end()));
  if (cmd == "models") {
    for (const auto& m : listBundledModels()) std::cout << m.name << "\t" << m.path << "\n";
    return 0;
  }
  throw Error(ErrorKind::Usage, "unknown command \"" + cmd + "\"");
}

}  // namespace attnviz::cli

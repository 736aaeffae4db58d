// attnviz-cli bench [MODEL]: milliseconds per forward pass (full trace, probabilities only) and
// per decode step with the key/value cache (and, with --uncached, without it) at given lengths;
// without MODEL the tutorial's full size with random weights.
#include <algorithm>
#include <chrono>
#include <functional>
#include <iomanip>
#include <iostream>
#include <random>

#include "cli_common.h"
#include "commands.h"
#include "decoding.h"
#include "error.h"

namespace attnviz::cli {

namespace {

struct BenchArgs {
  ModelArgs model;
  std::string lengths = "32,128";
  int repeat = 5;
  bool uncached = false;
};

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
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

// "32,128" → {32, 128}, each in 1..max_positions.
std::vector<int> parseLengths(const std::string& text, int max_positions) {
  std::vector<int> lengths;
  for (size_t from = 0;;) {
    const size_t comma = text.find(',', from);
    const std::string item = text.substr(from, comma == std::string::npos ? comma : comma - from);
    if (item.empty() || item.size() > 7 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      throw Error(ErrorKind::Usage, "--lengths expects numbers like 32,128, got \"" +
                                        safe(text.substr(0, 80)) + "\"");
    const int n = std::stoi(item);
    if (n < 1 || n > max_positions)
      throw Error(ErrorKind::Usage, "length " + item + " is outside 1.." +
                                        std::to_string(max_positions) + " (the model's positions)");
    lengths.push_back(n);
    if (comma == std::string::npos) return lengths;
    from = comma + 1;
  }
}

int runBench(const BenchArgs& a) {
  std::shared_ptr<const LoadedModel> lm =
      a.model.model.empty() ? makeRandomModel(tutorialSizeConfig(), 1234) : openModel(a.model);
  Model m(lm, openBackend(a.model));
  const ModelConfig& c = m.config();
  const std::vector<int> lengths = parseLengths(a.lengths, m.maxPositions());
  std::cout << "model:   " << safe(c.name.empty() ? lm->path : c.name) << " — "
            << c.n_encoder_layers << "+" << c.n_decoder_layers << " layers, d_model " << c.d_model
            << ", " << c.n_heads << " heads, d_ff " << c.d_ff << "\n"
            << "backend: " << m.backend().description() << "\n"
            << "median of " << a.repeat << " runs (min in brackets)\n";
  // Random ids: ordinary tokens where the vocabulary has any besides pad, start and end; never
  // the end token in a target (a decode step fed it would end decoding) unless there is nothing
  // else. Whatever the vocabulary's size, the distribution's bounds hold.
  std::mt19937 rng(7);
  auto randomIds = [&](int n, int vocab, int first, int pad) {
    std::vector<int> pool;
    for (int id = 0; id < vocab; ++id)
      if (id != pad && id != c.bos_id && id != c.eos_id) pool.push_back(id);
    for (int id = 0; id < vocab && pool.empty(); ++id)
      if (id != c.eos_id) pool.push_back(id);
    if (pool.empty()) pool.push_back(0);
    std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
    std::vector<int> ids;
    if (first >= 0) ids.push_back(first);
    while ((int)ids.size() < n) ids.push_back(pool[pick(rng)]);
    return ids;
  };
  for (int n : lengths) {
    Inputs in;
    if (c.hasEncoder()) in.src = {randomIds(n, (int)c.src_vocab.size(), -1, c.src_pad_id)};
    if (c.hasDecoder()) in.tgt = {randomIds(n, (int)c.tgt_vocab.size(), c.bos_id, c.tgt_pad_id)};
    ForwardOptions full;
    Stats f = timeIt(a.repeat, [&] { m.forward(in, full); });
    ForwardOptions probs_only;
    probs_only.keep_scores = false;
    Stats p = timeIt(a.repeat, [&] { m.forward(in, probs_only); });
    std::cout << std::fixed << std::setprecision(2) << "n = " << n << " tokens\n"
              << "  forward, full trace:          " << f.median << " ms  (" << f.min << ")\n"
              << "  forward, probabilities only:  " << p.median << " ms  (" << p.min << ")\n";
    if (!c.hasDecoder()) continue;
    // Decode steps: n positions with the key/value cache (the trace growing row by row), and
    // without it (the whole decoder rerun over the prefix each step, as the tutorials' greedy
    // decoder does).
    const std::vector<int>& tgt = in.tgt[0];
    const std::vector<int> src = c.hasCross() ? in.src[0] : std::vector<int>();
    if (n > 1 && std::find(tgt.begin() + 1, tgt.end(), c.eos_id) != tgt.end()) {
      std::cout << "  decode step:                  skipped (every target token ends decoding)\n";
      continue;
    }
    Stats cached = timeIt(a.repeat, [&] {
      DecodingSession::Options so;
      so.max_new_tokens = n;
      DecodingSession s(m, src, {tgt[0]}, so);
      for (int i = 1; i < n; ++i) s.stepForward(tgt[i]);
    });
    std::cout << "  decode step, KV cache:        " << cached.median / n << " ms/step  ("
              << cached.min / n << ")\n";
    if (a.uncached) {
      Stats uncached = timeIt(std::max(1, a.repeat / 2), [&] {
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

Command addBenchCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "bench",
      "timings of forward passes and decode steps (without MODEL: the tutorial's full size, "
      "6+6 layers, d_model 512, 8 heads, d_ff 2048, random weights)");
  auto a = std::make_shared<BenchArgs>();
  addModelArgs(cmd, a->model, false);
  cmd->add_option("--lengths", a->lengths, "sequence lengths to time (default 32,128)")
      ->type_name("32,128");
  cmd->add_option("--repeat", a->repeat, "runs per measurement (default 5)")
      ->check(CLI::Range(1, 1000))
      ->type_name("N");
  cmd->add_flag("--uncached", a->uncached,
                "also time decoding without the key/value cache (the decoder rerun each step)");
  return {cmd, [a] { return runBench(*a); }};
}

}  // namespace attnviz::cli

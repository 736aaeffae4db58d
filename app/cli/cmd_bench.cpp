// attnviz-cli bench [MODEL]: milliseconds per forward pass (full trace, probabilities only) and
// per decode step with the key/value cache (and, with --uncached, without it) at given lengths;
// without MODEL the tutorial's full size with random weights.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>

#include "base/error.h"
#include "cli_common.h"
#include "commands.h"
#include "model/atlas.h"
#include "model/decoding.h"
#include "model/patching.h"
#include "train/attribution.h"

namespace attnviz::cli {

namespace {

struct BenchArgs {
  ModelArgs model;
  std::string lengths = "32,128,512";
  int repeat = 5;
  int attribution_steps = 0;  // > 0: time integrated gradients of that many steps too
  int atlas = 0;              // > 0: time a head atlas over that many random sentences instead
  int atlas_batch = 16;
  bool uncached = false, ops = false, forward_only = false, json = false, patch = false;
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

// The process's peak resident memory so far (VmHWM in /proc/self/status; getrusage elsewhere).
uint64_t peakRssBytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // in kB
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return uint64_t(u.ru_maxrss) * 1024;
}

// attnviz-cli bench --atlas N: a head atlas (model/atlas.h) over N random sentences of `length`
// tokens (an encoder-decoder's teacher-forced targets too), with the wall and CPU time and the
// peak memory before and after: the atlas streams, so the peak is the model's and one batch's.
int benchAtlas(const Model& m, int sentences, int length, int batch, bool json) {
  const ModelConfig& c = m.config();
  std::mt19937 rng(11);
  // Words of a vocabulary that are neither its specials nor its pad (ids ≥ 3 after the tutorial's
  // pad, start and end; a vocabulary this small has no text to make sentences of).
  auto words = [&](const std::vector<std::string>& vocab, int n) {
    if (vocab.size() < 5)
      throw Error(ErrorKind::Usage, "--atlas needs a vocabulary of words to make sentences from");
    std::uniform_int_distribution<size_t> pick(3, vocab.size() - 1);
    std::string s;
    for (int k = 0; k < n; ++k) s += (k ? " " : "") + vocab[pick(rng)];
    return s;
  };
  Corpus corpus;
  corpus.origin =
      std::to_string(sentences) + " random sentences of " + std::to_string(length) + " tokens";
  for (int k = 0; k < sentences; ++k) {
    CorpusEntry e;
    if (c.hasEncoder()) e.src = words(c.src_vocab, length - (c.src_bos_eos ? 2 : 0));
    if (c.hasCross()) {
      e.tgt = words(c.tgt_vocab, length - (c.bos_id >= 0 ? 1 : 0));
      e.has_tgt = true;
    } else if (c.hasDecoder()) {
      e.src = words(c.tgt_vocab, length - (c.bos_id >= 0 ? 1 : 0));
    }
    corpus.entries.push_back(std::move(e));
  }
  AtlasOptions o;
  o.run.batch = batch;
  const uint64_t rss_before = peakRssBytes();
  const std::clock_t c0 = std::clock();
  const Atlas atlas = buildAtlas(m, corpus, o);
  const double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
  const uint64_t rss_after = peakRssBytes();
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) < 0) load[0] = -1;
  const double mib = 1.0 / (1 << 20);
  if (json) {
    std::cout << "{\"atlas_sentences\": " << atlas.run.sentences << ", \"tokens\": " << length
              << ", \"batch\": " << batch << ", \"seconds\": " << atlas.seconds
              << ", \"cpu_seconds\": " << cpu << ", \"peak_rss_before_mib\": " << rss_before * mib
              << ", \"peak_rss_mib\": " << rss_after * mib
              << ", \"largest_batch_trace_mib\": " << atlas.run.largest_batch_trace_bytes * mib
              << ", \"load_average\": " << load[0] << "}" << std::endl;
  } else {
    std::cout << std::fixed << std::setprecision(2) << "atlas: " << atlas.run.sentences
              << " sentences of " << length << " tokens, batches of " << batch << ", "
              << atlas.heads.size() << " heads\n"
              << "  wall " << atlas.seconds << " s (" << atlas.run.sentences / atlas.seconds
              << " sentences/s), CPU " << cpu << " s\n"
              << std::setprecision(1) << "  peak RSS " << rss_before * mib
              << " MiB with the model loaded, " << rss_after * mib << " MiB after the atlas; the "
              << "largest batch's trace " << atlas.run.largest_batch_trace_bytes * mib << " MiB\n"
              << std::setprecision(2) << "  load average " << load[0] << std::endl;
  }
  return 0;
}

int runBench(const BenchArgs& a) {
  std::shared_ptr<const LoadedModel> lm =
      a.model.model.empty() ? makeRandomModel(tutorialSizeConfig(), 1234) : openModel(a.model);
  std::shared_ptr<Backend> backend = openBackend(a.model);  // with --threads
  Model m(lm, backend);
  const ModelConfig& c = m.config();
  const int repeat = a.repeat;
  const bool json = a.json, uncached = a.uncached, ops = a.ops, forward_only = a.forward_only;
  const std::vector<int> lengths = parseLengths(a.lengths, m.maxPositions());
  if (a.atlas > 0) return benchAtlas(m, a.atlas, lengths.front(), a.atlas_batch, json);

  // The pass's matrix-product flops (2·m·n·k each) for S source and T target tokens, batch 1;
  // element-wise work (softmax, LayerNorm, ...) is not counted. A stack the model lacks counts 0.
  // Grouped-query attention projects fewer keys and values (KVw wide); a gated feed-forward has
  // three products.
  const double d = c.d_model, H = c.n_heads, dk = c.d_k, dv = c.d_v, A = c.attnWidth(),
               Av = c.valueWidth(), KVw = c.keyWidth() + c.kvValueWidth(), ff = c.d_ff,
               ffn = (c.gated_ffn ? 6.0 : 4.0) * d * ff, V = (double)c.outputVocab().size();
  auto attentionFlops = [&](double q_rows, double kv_rows) {  // scores + context
    return 2.0 * H * q_rows * kv_rows * (dk + dv);
  };
  auto passFlops = [&](double S, double T) {
    const double enc = 2.0 * S * d * (A + KVw) + attentionFlops(S, S) + 2.0 * S * Av * d + S * ffn;
    const double cross =
        c.hasCross() ? 2.0 * T * d * A + 2.0 * S * d * KVw + attentionFlops(T, S) + 2.0 * T * Av * d
                     : 0.0;
    const double dec =
        2.0 * T * d * (A + KVw) + attentionFlops(T, T) + 2.0 * T * Av * d + cross + T * ffn;
    const double head =
        c.tokenHead() == TokenHead::None ? 0.0 : 2.0 * (c.hasDecoder() ? T : S) * d * V;
    return c.n_encoder_layers * enc + c.n_decoder_layers * dec + head;
  };

  auto quoted = [](const std::string& v) {
    std::string q = "\"";
    for (unsigned char ch : v) {
      if (ch == '"' || ch == '\\') {
        q += '\\';
        q += (char)ch;
      } else if (ch < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", ch);
        q += buf;
      } else {
        q += (char)ch;
      }
    }
    return q + "\"";
  };
  const std::string model_name = c.name.empty() ? lm->path : c.name;
  if (json) {
    std::cout << "{\"model\": " << quoted(model_name)
              << ", \"encoder_layers\": " << c.n_encoder_layers
              << ", \"decoder_layers\": " << c.n_decoder_layers << ", \"d_model\": " << c.d_model
              << ", \"heads\": " << c.n_heads << ", \"d_ff\": " << c.d_ff
              << ", \"backend\": " << quoted(backend->name())
              << ", \"description\": " << quoted(backend->description())
              << ", \"threads\": " << backend->threads() << ", \"repeat\": " << repeat << "}"
              << std::endl;
  } else {
    std::cout << "model:   " << safe(model_name) << " — " << c.n_encoder_layers << "+"
              << c.n_decoder_layers << " layers, d_model " << c.d_model << ", " << c.n_heads
              << " heads, d_ff " << c.d_ff << "\n"
              << "backend: " << backend->description() << "\n"
              << "median of " << repeat
              << " runs (min in round brackets; the process's CPU time in square brackets)"
              << std::endl;
  }
  // timeIt's median and min wall time, and the median CPU time of the process (all its threads),
  // which on a shared machine shows the work done where the wall time also counts waiting for a
  // core.
  struct Timing {
    double median, min, cpu;
  };
  auto measure = [](int times, const std::function<void()>& f) {
    std::vector<double> cpu;
    const Stats wall = timeIt(times, [&] {
      const std::clock_t c0 = std::clock();
      f();
      cpu.push_back(1e3 * double(std::clock() - c0) / CLOCKS_PER_SEC);
    });
    std::sort(cpu.begin() + 1, cpu.end());  // cpu[0] is timeIt's warm-up
    return Timing{wall.median, wall.min, cpu[1 + (cpu.size() - 1) / 2]};
  };
  // One measured row (times divided by `per`), printed and flushed as soon as it is measured.
  // flops 0: no rate.
  auto report = [&](int n, const std::string& what, const std::string& label, Timing t, double per,
                    const std::string& unit, double flops) {
    const double median = t.median / per, min = t.min / per, cpu = t.cpu / per;
    if (json) {
      std::cout << "{\"tokens\": " << n << ", \"what\": " << quoted(what)
                << ", \"median_ms\": " << median << ", \"min_ms\": " << min
                << ", \"cpu_median_ms\": " << cpu;
      if (flops > 0)
        std::cout << ", \"gflop\": " << flops * 1e-9 << ", \"gflops\": " << flops / median * 1e-6;
      std::cout << "}" << std::endl;
      return;
    }
    std::ostringstream row;
    row << std::fixed << std::setprecision(2) << "  " << std::left << std::setw(30) << (label + ":")
        << median << " " << unit << "  (" << min << ")";
    if (flops > 0) row << "  " << std::setprecision(1) << flops / median * 1e-6 << " GFLOP/s";
    row << std::setprecision(2) << "  [cpu " << cpu << " " << unit << "]";
    std::cout << row.str() << std::endl;
  };

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
    const double flops = passFlops(c.hasEncoder() ? n : 0, c.hasDecoder() ? n : 0);
    if (!json)
      std::cout << std::fixed << std::setprecision(2) << "n = " << n
                << " tokens (source and target), " << flops * 1e-9 << " GFLOP per pass"
                << std::endl;
    ForwardOptions full;
    report(n, "forward_full_trace", "forward, full trace",
           measure(repeat, [&] { m.forward(in, full); }), 1, "ms", flops);
    if (!forward_only) {
      ForwardOptions outputs_only;
      outputs_only.record = false;
      report(n, "forward_outputs_only", "forward, outputs only (no trace)",
             measure(repeat, [&] { m.forward(in, outputs_only); }), 1, "ms", flops);
    }
    if (a.attribution_steps > 0 && c.tokenHead() != TokenHead::None) {
      // Integrated gradients of the last position's chosen token: the steps, the input and the
      // baseline as batches through the pass with the tape and the backward (train/attribution.h).
      AttributionOptions ao;
      ao.steps = a.attribution_steps;
      report(n, "attribution_ig", "attribution, IG " + std::to_string(ao.steps) + " steps",
             measure(repeat, [&] { attribute(m, in, ao); }), 1, "ms", 0);
    }
    if (a.patch && c.tokenHead() != TokenHead::None) {
      // A full layer × position activation patching sweep (model/patching.h): every layer's
      // residual stream at every position of both stacks, patched from this input into one whose
      // middle token differs, one patched run per cell.
      Inputs corrupted = in;
      std::vector<int>& side = c.hasEncoder() ? corrupted.src[0] : corrupted.tgt[0];
      const int vocab = (int)(c.hasEncoder() ? c.src_vocab.size() : c.tgt_vocab.size());
      side[n / 2] = side[n / 2] + 1 < vocab ? side[n / 2] + 1 : 3;
      PatchOptions po;
      po.heads = false;
      int runs = 0;
      const Timing t = measure(std::max(1, repeat / 5),
                               [&] { runs = patchActivations(m, in, corrupted, po).runs; });
      report(n, "patch_sweep", "patching, layer × position", t, 1000, "s", 0);
      if (!json) std::cout << "    (" << runs << " patched runs)" << std::endl;
    }
    const bool ends =
        c.hasDecoder() && n > 1 &&
        std::find(in.tgt[0].begin() + 1, in.tgt[0].end(), c.eos_id) != in.tgt[0].end();
    if (!forward_only && ends && !json)
      std::cout << "  decode step:                  skipped (every target token ends decoding)"
                << std::endl;
    if (!forward_only && c.hasDecoder() && !ends) {
      // Decode steps: n positions with the key/value cache, each appending its rows to the
      // session's trace, and (opt-in: hours at 512 tokens) without it, the whole decoder rerun
      // over the prefix each step as the tutorials do.
      const std::vector<int>& tgt = in.tgt[0];
      const std::vector<int> src = c.hasCross() ? in.src[0] : std::vector<int>();
      Timing cached = measure(repeat, [&] {
        DecodingSession::Options so;
        so.max_new_tokens = n;
        DecodingSession s(m, src, {tgt[0]}, so);
        for (int i = 1; i < n; ++i) s.stepForward(tgt[i]);
      });
      report(n, "decode_step_cached", "decode step, KV cache", cached, n, "ms/step", 0);
      if (uncached) {
        ForwardOptions outputs_only;
        outputs_only.record = false;
        Timing u = measure(std::max(1, repeat / 2), [&] {
          for (int i = 1; i <= n; ++i) {
            Inputs prefix = in;
            prefix.tgt = {std::vector<int>(tgt.begin(), tgt.begin() + i)};
            m.forward(prefix, outputs_only);
          }
        });
        report(n, "decode_step_uncached", "decode step, no cache", u, n, "ms/step", 0);
      }
    }
    if (!ops) continue;
    // The backend's ops alone at this size (one layer's shapes, batch 1, buffers reused).
    Backend& be = *backend;
    const int D = c.d_model, W = 2 * c.attnWidth() + c.valueWidth(), F = c.d_ff, Hh = c.n_heads;
    auto buffer = [&](int64_t floats) {
      return be.allocate((size_t)std::max<int64_t>(floats, 1) * 4);
    };
    BufferPtr x = buffer((int64_t)n * std::max(D, F)), w = buffer((int64_t)std::max(W, F) * D),
              y = buffer((int64_t)n * std::max(W, F)), scores = buffer((int64_t)Hh * n * n),
              probs = buffer((int64_t)Hh * n * n);
    BufferPtr mask = be.allocate((size_t)n * n);
    auto timeOp = [&](const std::string& what, double op_flops, const std::function<void()>& op) {
      Timing s = measure(repeat, [&] {
        op();
        be.synchronize();
      });
      report(n, "op_" + what, "op " + what, s, 1, "ms", op_flops);
    };
    const int Ac = c.attnWidth();
    timeOp("linear_qkv", 2.0 * n * D * W,
           [&] { be.linear_forward(x->f32(), w->f32(), nullptr, y->f32(), n, D, W); });
    timeOp("linear_ffn1", 2.0 * n * D * F,
           [&] { be.linear_forward(x->f32(), w->f32(), nullptr, y->f32(), n, D, F); });
    timeOp("linear_ffn2", 2.0 * n * F * D,
           [&] { be.linear_forward(x->f32(), w->f32(), nullptr, y->f32(), n, F, D); });
    HeadsView q{y->f32(), (int64_t)n * W, W}, k{y->f32() + Ac, (int64_t)n * W, W},
        v{y->f32() + 2 * Ac, (int64_t)n * W, W};
    timeOp("attention_scores", 2.0 * Hh * n * n * c.d_k, [&] {
      be.attention_scores_forward(q, k, scores->f32(), 1, Hh, Hh, n, n, c.d_k, 0.125f);
    });
    timeOp("masked_softmax", 0, [&] {
      be.masked_softmax_forward(scores->f32(), mask->u8(), probs->f32(), 1, Hh, n, n, -1e9f);
    });
    timeOp("attention_context", 2.0 * Hh * n * n * c.d_v, [&] {
      be.attention_context_forward(probs->f32(), v, x->f32(), 1, Hh, Hh, n, n, c.d_v);
    });
    timeOp("layernorm", 0, [&] {
      be.norm_forward(NormKind::LayerNorm, x->f32(), nullptr, nullptr, y->f32(), n, D, 1e-5f);
    });
    timeOp("activation", 0, [&] { be.activation_forward(y->f32(), (int64_t)n * F, c.activation); });
    timeOp("residual", 0, [&] { be.residual_forward(x->f32(), y->f32(), (int64_t)n * D); });
  }
  return 0;
}

}  // namespace

Command addBenchCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "bench",
      "timings of forward passes (with GFLOP/s and CPU time) and decode steps (without MODEL: "
      "the tutorial's full size, "
      "6+6 layers, d_model 512, 8 heads, d_ff 2048, random weights)");
  auto a = std::make_shared<BenchArgs>();
  addModelArgs(cmd, a->model, false);
  cmd->add_option("--lengths", a->lengths, "sequence lengths to time (default 32,128,512)")
      ->type_name("32,128");
  cmd->add_option("--repeat", a->repeat, "runs per measurement (default 5)")
      ->check(CLI::Range(1, 1000))
      ->type_name("N");
  cmd->add_flag("--uncached", a->uncached,
                "also time decoding without the key/value cache, the decoder rerun each step "
                "(hours at 512 tokens)");
  cmd->add_option("--attribution", a->attribution_steps,
                  "also time integrated gradients of N steps at each length (attribute's work: "
                  "the steps, input and baseline through the pass and its backward)")
      ->check(CLI::Range(1, AttributionOptions::kMaxSteps))
      ->type_name("N");
  cmd->add_option("--atlas", a->atlas,
                  "instead, time a head atlas (attnviz-cli atlas) over N random sentences of the "
                  "first --lengths tokens, with the peak memory (VmHWM)")
      ->check(CLI::Range(1, 1000000))
      ->type_name("N");
  cmd->add_option("--atlas-batch", a->atlas_batch, "sentences per pass of --atlas (default 16)")
      ->check(CLI::Range(1, 1024))
      ->type_name("N");
  cmd->add_flag("--ops", a->ops, "also time the backend's ops alone at each length");
  cmd->add_flag("--forward-only", a->forward_only,
                "only the full-trace forward pass (no probabilities-only pass, no decoding)");
  cmd->add_flag("--patch", a->patch,
                "also time a full layer × position activation patching sweep (every layer's "
                "residual stream at every position, both stacks) at each length");
  cmd->add_flag("--json", a->json, "one JSON object a line");
  return {cmd, [a] { return runBench(*a); }};
}

}  // namespace attnviz::cli

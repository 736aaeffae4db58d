// attnviz-cli run MODEL: one forward pass with the whole trace (greedy-decoding the target first
// when an encoder-decoder gets none); prints the tokens and outputs, checks every value is
// finite, and writes the trace as NumPy files with --dump.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "base/error.h"
#include "cli_common.h"
#include "commands.h"
#include "model/trace_dump.h"

namespace attnviz::cli {

namespace {

struct RunArgs {
  ModelArgs model;
  InputArgs input;
  PassArgs pass;
  std::string dump;
  std::string heads, rows;
  bool qkv = false;
};

// A dump of every head of every block above this is refused (--heads writes a part of it).
constexpr uint64_t kMaxWholeDumpBytes = uint64_t(2) << 30;

// The pass and what it prints (redone on the CPU when it runs out of GPU memory: runOnModel).
int runOn(Model& m, const RunArgs& a) {
  const ModelConfig& c = m.config();
  // What --heads and --rows ask, checked before the pass.
  std::vector<HeadChoice> heads;
  std::vector<RowRange> rows;
  if (!a.heads.empty()) heads = parseHeadChoices(a.heads);
  if (!a.rows.empty()) rows = parseRowRanges(a.rows);
  for (const HeadChoice& h : heads) {
    const int layers = layerCount(c, h.kind);
    if (h.layer >= layers || h.head >= c.n_heads)
      throw Error(ErrorKind::BadInput, headChoiceName(h) + ": the model has " +
                                           std::to_string(layers) + " " +
                                           attentionKindName(h.kind) + " layers of " +
                                           std::to_string(c.n_heads) + " heads");
  }
  ForwardOptions o;
  o.keep_qkv = a.qkv;
  const Trace t = runPass(m, a.input, a.pass, o);

  if (c.hasEncoder()) std::cout << "source: " << joinTokens(t.src_tokens[0]) << "\n";
  if (c.hasDecoder()) std::cout << "target: " << joinTokens(t.tgt_tokens[0]) << "\n";
  if (!t.logits.empty()) {
    const int n = t.logits.positions();
    const Vocabulary& out = m.vocab(c.hasDecoder() ? Side::Target : Side::Source);
    std::vector<std::string> next;
    for (int i = 0; i < n; ++i) {
      const int best = t.logits.hasNaN(0, i) ? -1 : t.logits.top(0, i, 1).front().first;
      next.push_back(best < 0 ? "NaN" : out.token(best));
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
      std::cout << " " << safe(c.classLabel(k)) << " " << std::fixed << std::setprecision(3)
                << std::exp((double)l[k] - mx) / sum;
    std::cout << "\n";
  }
  std::cout << "forward pass: " << std::fixed << std::setprecision(2) << t.elapsed_ms << " ms on "
            << m.backend().description() << "\n";
  if (!a.dump.empty() && !heads.empty()) {
    dumpHeads(t, heads, rows, a.dump);
    std::cout << "wrote " << heads.size() << " head(s) to " << safe(a.dump) << "\n";
  } else if (!a.dump.empty()) {
    const uint64_t bytes = dumpBytes(t);
    if (bytes > kMaxWholeDumpBytes)
      throw Error(ErrorKind::TooLarge,
                  "the whole trace as NumPy files would take " + formatBytes(bytes) +
                      " (every head's [query, key] matrices); the limit is " +
                      formatBytes(kMaxWholeDumpBytes) +
                      ". Write the heads you want with --heads KIND:LAYER:HEAD[,…] (and "
                      "--rows A:B[,…])");
    dumpTrace(t, a.dump, &m);
    std::cout << "wrote the trace to " << safe(a.dump) << "\n";
  }
  return 0;
}

int runRun(const RunArgs& a) {
  if (!a.heads.empty() && a.dump.empty())
    throw Error(ErrorKind::BadInput, "--heads chooses what --dump writes: give --dump DIR too");
  if (!a.rows.empty() && a.heads.empty())
    throw Error(ErrorKind::BadInput,
                "--rows chooses the rows of the heads --heads names: give "
                "--heads KIND:LAYER:HEAD too");
  return runOnModel(a.model, [&](Model& m) { return runOn(m, a); });
}

}  // namespace

Command addRunCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "run",
      "one forward pass with the whole attention trace (greedy-decodes the target first when an "
      "encoder-decoder gets no --tgt)");
  auto a = std::make_shared<RunArgs>();
  addModelArgs(cmd, a->model);
  addInputArgs(cmd, a->input, true);
  cmd->add_option("--dump", a->dump,
                  "write the trace as NumPy files: enc_self_*.npy, dec_self_*.npy, cross_*.npy "
                  "[L,H,Tq,Tk], logits.npy, class_logits.npy, hidden.npy, tokens.json")
      ->type_name("DIR");
  cmd->add_option("--heads", a->heads,
                  "with --dump: write only these heads' rows, KIND_LAYER_HEAD_{scores,mask,probs}"
                  ".npy [rows,keys] and tokens.json (KIND enc_self, dec_self or cross; layer and "
                  "head counted from 1, as atlas --like counts them; e.g. dec_self:30:9,cross:1:2)")
      ->type_name("KIND:LAYER:HEAD[,...]");
  cmd->add_option("--rows", a->rows,
                  "with --heads: only query rows A … B−1, counted from 0 as a NumPy slice (A or B "
                  "may be left out); several ranges, in order, are written one after another "
                  "(e.g. 0:64,4064:4128,8128:)")
      ->type_name("A:B[,...]");
  addPassArgs(cmd, a->pass);
  cmd->add_flag("--qkv", a->qkv, "keep each head's q, k, v vectors (KIND_{q,k,v}.npy in the dump)");
  return {cmd, [a] { return runRun(*a); }};
}

}  // namespace attnviz::cli

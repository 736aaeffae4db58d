// attnviz-cli lens MODEL and attnviz-cli contributions MODEL: why this token? The logit lens prints
// what every layer's residual stream would predict (layer × position: the top token and its
// probability, then the probability and rank of the token finally chosen); contributions prints
// one token's logit split into the direct parts of the embeddings, every head, every feed-forward
// block and the biases, largest first (model/lens.h).
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "base/error.h"
#include "cli_common.h"
#include "commands.h"
#include "model/finite_scan.h"
#include "model/lens.h"
#include "model/trace_dump.h"
#include "text/token_display.h"

namespace attnviz::cli {

namespace {

constexpr int kColumn = 13;  // characters per position in the tables

struct LensArgs {
  ModelArgs model;
  InputArgs input;
  std::string dump;
  int max_new_tokens = 0, top_k = 5, position = 0;
  std::optional<std::string> target, target_id, versus, versus_id;
  int parts = 20;
  bool keep_going = false;
};

std::string probability(double p) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f", p);
  return buf;
}

struct Run {
  Trace trace;
  std::vector<std::string> inputs;  // the tokens at the lens's positions
};

Run runPass(const Model& m, const LensArgs& a) {
  Run r;
  ForwardOptions o = lensForwardOptions();
  r.trace = m.forward(passInputs(m, a.input, o.masks, a.max_new_tokens), o);
  if (const NonFiniteReport nf = scanTrace(r.trace); !nf.empty())
    reportNonFinite(nf.summary(), a.keep_going);
  const Trace& t = r.trace;
  r.inputs = lensStack(m.config()) == Side::Source ? t.src_tokens[0] : t.tgt_tokens[0];
  return r;
}

int runLens(const LensArgs& a) {
  // Redone on the CPU when it runs out of GPU memory (runOnModel).
  return runOnModel(a.model, [&](Model& m) {
    const Run r = runPass(m, a);
    const Vocabulary& out = m.vocab(lensStack(m.config()));
    LensOptions lo;
    lo.top_k = a.top_k;
    lo.target = outputToken(out, a.target, a.target_id, "--target");
    lo.keep_logits = !a.dump.empty();
    const LogitLens lens = logitLens(m, r.trace, lo);
    const int n = lens.positions, K = lens.top_k;
    std::cout << "reading: " << lens.reading << "\n";
    std::cout << "target: "
              << (lo.target >= 0
                      ? "\"" + displayToken(out.token(lo.target)) + "\" at every position"
                      : std::string("the token the model chooses at each position"))
              << "\n\n";
    const int label = 12;
    auto header = [&](const char* what) {
      std::cout << what << "\n" << std::left << std::setw(label) << "position";
      for (int i = 0; i < n; ++i) std::cout << tokenColumn(std::to_string(i + 1), kColumn);
      std::cout << "\n" << std::setw(label) << "input";
      for (int i = 0; i < n; ++i) std::cout << tokenColumn(r.inputs[i], kColumn);
      std::cout << "\n" << std::setw(label) << "target";
      for (int i = 0; i < n; ++i) std::cout << tokenColumn(out.token(lens.targets[i]), kColumn);
      std::cout << "\n";
    };
    header("top token and its probability per layer (rows) and position (columns):");
    for (int row = 0; row < lens.rows; ++row) {
      std::cout << std::setw(label) << lens.row_names[row];
      for (int i = 0; i < n; ++i) {
        const int64_t k0 = lens.cell(row, i) * K;
        const std::string p = " " + probability(lens.top_probs[k0]) + " ";
        std::cout << tokenColumn(out.token(lens.top_ids[k0]), kColumn - (int)p.size()) << p;
      }
      std::cout << "\n";
    }
    std::cout << "\n";
    header("the target's probability (rank) per layer and position:");
    for (int row = 0; row < lens.rows; ++row) {
      std::cout << std::setw(label) << lens.row_names[row];
      for (int i = 0; i < n; ++i) {
        const int64_t c = lens.cell(row, i);
        std::cout << tokenColumn(
            probability(lens.target_probs[c]) + " (" + std::to_string(lens.target_ranks[c]) + ")",
            kColumn);
      }
      std::cout << "\n";
    }
    if (K > 1) {  // the decoding step: the last position's top K per layer
      std::cout << "\nthe last position's top " << K << " per layer:\n";
      for (int row = 0; row < lens.rows; ++row) {
        std::cout << std::setw(label) << lens.row_names[row];
        for (int k = 0; k < K; ++k) {
          const int64_t at = lens.cell(row, n - 1) * K + k;
          std::cout << " " << displayToken(out.token(lens.top_ids[at])) << " "
                    << probability(lens.top_probs[at]);
        }
        std::cout << "\n";
      }
    }
    if (!a.dump.empty()) {
      dumpLens(lens, r.inputs, out, nullptr, a.dump);
      std::cout << "wrote the lens to " << safe(a.dump) << "\n";
    }
    return 0;
  });
}

int runContributions(const LensArgs& a) {
  // Redone on the CPU when it runs out of GPU memory (runOnModel).
  return runOnModel(a.model, [&](Model& m) {
    const Run r = runPass(m, a);
    const Vocabulary& out = m.vocab(lensStack(m.config()));
    ContributionOptions co;
    co.position = positionIndex(a.position, int(r.inputs.size()));
    co.token = outputToken(out, a.target, a.target_id, "--token");
    co.versus = outputToken(out, a.versus, a.versus_id, "--versus");
    const Contributions c = directContributions(m, r.trace, co);
    std::cout << "position " << c.position + 1 << " (input \"" << displayToken(r.inputs[c.position])
              << "\"): logit[\"" << displayToken(out.token(c.token)) << "\"]";
    if (c.versus >= 0) std::cout << " − logit[\"" << displayToken(out.token(c.versus)) << "\"]";
    std::cout << std::fixed << std::setprecision(4) << " = " << c.logit << "\n";
    std::cout << "sum of the parts: " << c.total << " (" << c.norm << ")\n\n";
    const int shown = std::min<int>((int)c.parts.size(), a.parts);
    for (int k = 0; k < shown; ++k) {
      const LogitPart& p = c.parts[k];
      std::cout << "  " << std::left << std::setw(28) << p.name << std::right << std::setw(10)
                << std::showpos << p.value << std::noshowpos << "\n";
    }
    if (shown < (int)c.parts.size()) {
      double rest = 0;
      for (size_t k = shown; k < c.parts.size(); ++k) rest += c.parts[k].value;
      std::cout << "  " << std::left << std::setw(28)
                << (std::to_string(c.parts.size() - shown) + " more parts") << std::right
                << std::setw(10) << std::showpos << rest << std::noshowpos << "\n";
    }
    if (!a.dump.empty()) {
      LensOptions lo;
      lo.target = c.token;
      lo.keep_logits = true;
      dumpLens(logitLens(m, r.trace, lo), r.inputs, out, &c, a.dump);
      std::cout << "wrote the lens and the contributions to " << safe(a.dump) << "\n";
    }
    return 0;
  });
}

void addPassArgs(CLI::App* cmd, LensArgs& a) {
  addModelArgs(cmd, a.model);
  addInputArgs(cmd, a.input, true);
  addPassMaxLen(cmd, a.max_new_tokens);
  addKeepGoing(cmd, a.keep_going);
}

}  // namespace

Command addLensCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "lens",
      "the logit lens: every layer's residual stream through the model's final norm and token "
      "head — the top tokens per layer and position, and the probability and rank of the token "
      "finally chosen (the decoder's positions; an encoder-only masked LM's source positions)");
  auto a = std::make_shared<LensArgs>();
  addPassArgs(cmd, *a);
  cmd->add_option("--top", a->top_k, "tokens kept per layer and position (default 5)")
      ->check(CLI::Range(1, 100))
      ->type_name("K");
  addTokenOptions(cmd, "target",
                  "report this output token's probability and rank at every position (default: "
                  "the token the model chooses there)",
                  a->target, a->target_id);
  cmd->add_option("--dump", a->dump,
                  "write lens_top_probs.npy [rows,n,K], lens_target_probs.npy [rows,n], "
                  "lens_logits.npy [rows,n,V] and lens.json (tokens, ids, ranks)")
      ->type_name("DIR");
  return {cmd, [a] { return runLens(*a); }};
}

Command addContributionsCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "contributions",
      "one token's logit split into the direct contributions of the embeddings, every attention "
      "head (its output through W_O), every feed-forward block and the biases, with the final "
      "norm's scale frozen at this input; pre-norm models");
  auto a = std::make_shared<LensArgs>();
  addPassArgs(cmd, *a);
  addPositionOption(cmd, a->position, "the position explained");
  addTokenOptions(cmd, "token",
                  "the output token whose logit is split (default: the one the model chooses)",
                  a->target, a->target_id);
  addTokenOptions(cmd, "versus",
                  "split logit[token] − logit[this token] instead (e.g. the runner-up)", a->versus,
                  a->versus_id);
  cmd->add_option("--parts", a->parts,
                  "print the N largest parts (default 20), then the rest summed")
      ->check(CLI::Range(1, 100000))
      ->type_name("N");
  cmd->add_option("--dump", a->dump,
                  "write contributions.json (every part) and the lens at the chosen token (as "
                  "lens --dump)")
      ->type_name("DIR");
  return {cmd, [a] { return runContributions(*a); }};
}

}  // namespace attnviz::cli

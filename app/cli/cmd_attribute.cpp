// attnviz-cli attribute MODEL: why this token? Gradient attribution of one output token's logit
// over the input tokens — saliency (gradient × input) and integrated gradients with their
// completeness check — beside the chosen head's attention and attention rollout, with Spearman's
// rank correlation between them (train/attribution.h).
#include <cmath>
#include <iomanip>
#include <iostream>

#include "base/error.h"
#include "cli_common.h"
#include "commands.h"
#include "model/lens.h"
#include "text/token_display.h"
#include "train/attribution.h"

namespace attnviz::cli {

namespace {

struct AttributeArgs {
  ModelArgs model;
  InputArgs input;
  std::string dump;
  int max_new_tokens = 0, position = 0, steps = 32, layer = 0, head = 0;
  std::optional<std::string> token, token_id, versus, versus_id;
};

std::string correlation(double rho) {
  if (!std::isfinite(rho)) return "n/a";
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << std::showpos << rho;
  return s.str();
}

int runAttribute(const AttributeArgs& a) {
  // Redone on the CPU when it runs out of GPU memory (runOnModel).
  return runOnModel(a.model, [&](Model& m) {
    const Vocabulary& out = m.vocab(lensStack(m.config()));
    AttributionOptions o;
    o.token = outputToken(out, a.token, a.token_id, "--token");
    o.versus = outputToken(out, a.versus, a.versus_id, "--versus");
    o.steps = a.steps;
    o.layer = a.layer - 1;  // the command line counts from 1, 0 = the default
    o.head = a.head - 1;
    const Inputs in = passInputs(m, a.input, MaskOptions{}, a.max_new_tokens);
    o.position = positionIndex(
        a.position,
        int(lensStack(m.config()) == Side::Target ? in.tgt[0].size() : in.src[0].size()));
    const Attribution r = attribute(m, in, o);

    std::cout << std::fixed << std::setprecision(4) << "position " << r.position + 1
              << ": f = logit[\"" << displayToken(out.token(r.token)) << "\"]";
    if (r.versus >= 0) std::cout << " − logit[\"" << displayToken(out.token(r.versus)) << "\"]";
    std::cout << " = " << r.f_input << "\n"
              << "integrated gradients: baseline " << r.baseline << "; " << r.rule << "\n"
              << "completeness: Σ attributions " << r.ig_total << " against f(input) − f(baseline) "
              << r.f_input << " − " << (r.f_baseline < 0 ? "(" : "") << r.f_baseline
              << (r.f_baseline < 0 ? ")" : "") << " = " << r.f_input - r.f_baseline << " (gap "
              << r.gap << ", " << std::setprecision(2) << 100 * r.gap_relative << " %)\n";
    for (const TokenAttributions& s : r.sides) {
      std::cout << "\n"
                << (s.side == Side::Source ? "source" : "target")
                << " tokens; attention: " << s.attention_name << "; rollout: " << s.rollout_name
                << "\n"
                << "Spearman's ρ of |integrated gradients| with the attention "
                << correlation(s.spearman_attention) << ", with rollout "
                << correlation(s.spearman_rollout) << " (over tokens 1 to " << s.compared << ")\n";
      std::cout << "  " << std::left << std::setw(5) << "i" << std::setw(16) << "token"
                << std::right << std::setw(11) << "saliency" << std::setw(11) << "|g⊙x|"
                << std::setw(11) << "integrated" << std::setw(11) << "attention" << std::setw(11)
                << "rollout"
                << "\n";
      for (size_t i = 0; i < s.ids.size(); ++i) {
        std::string token = displayToken(s.tokens[i]);
        if (token.size() > 15) token = token.substr(0, 14) + "…";
        std::cout << "  " << std::left << std::setw(5) << i + 1 << std::setw(16) << token
                  << std::right << std::setprecision(4) << std::setw(11) << s.saliency[i]
                  << std::setw(11) << s.saliency_norm[i] << std::setw(11) << s.integrated[i]
                  << std::setw(11) << s.attention[i] << std::setw(11) << s.rollout[i] << "\n";
      }
    }
    if (!a.dump.empty()) {
      std::vector<std::string> names{out.token(r.token)};
      if (r.versus >= 0) names.push_back(out.token(r.versus));
      dumpAttribution(r, names, a.dump);
      std::cout << "\nwrote the attribution to " << safe(a.dump) << "\n";
    }
    return 0;
  });
}

}  // namespace

Command addAttributeCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "attribute",
      "gradient attribution of one output token's logit over the input tokens: saliency "
      "(gradient × token embedding) and integrated gradients from all-zero token embeddings, with "
      "the completeness check, beside the chosen head's attention and attention rollout and "
      "Spearman's rank correlation between them");
  auto a = std::make_shared<AttributeArgs>();
  addModelArgs(cmd, a->model);
  addInputArgs(cmd, a->input, true);
  addPassMaxLen(cmd, a->max_new_tokens);
  addPositionOption(cmd, a->position, "the output position explained");
  addTokenOptions(cmd, "token", "the output token explained (default: the one the model chooses)",
                  a->token, a->token_id);
  addTokenOptions(cmd, "versus", "explain logit[token] − logit[this token] instead", a->versus,
                  a->versus_id);
  cmd->add_option("--steps", a->steps, "integrated gradients' steps (default 32)")
      ->check(CLI::Range(1, AttributionOptions::kMaxSteps))
      ->type_name("N");
  cmd->add_option("--layer", a->layer,
                  "the layer whose attention is compared, from 1 (default: the last)")
      ->check(CLI::NonNegativeNumber)
      ->type_name("L");
  cmd->add_option("--head", a->head,
                  "the head whose attention is compared, from 1 (default: the mean of the layer's "
                  "heads)")
      ->check(CLI::NonNegativeNumber)
      ->type_name("H");
  cmd->add_option("--dump", a->dump,
                  "write SIDE_{saliency,saliency_norm,integrated,attention,rollout}.npy [n], "
                  "SIDE_gradient.npy [n,d] (SIDE: src, tgt) and attribution.json")
      ->type_name("DIR");
  return {cmd, [a] { return runAttribute(*a); }};
}

}  // namespace attnviz::cli

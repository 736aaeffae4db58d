// attnviz-cli info MODEL: the config, parameter count, vocabularies and warnings.
#include <iostream>
#include <sstream>

#include "cli_common.h"
#include "commands.h"
#include "model/device_weights.h"
#include "text/token_display.h"

namespace attnviz::cli {

namespace {

// How many tokens, labels and examples info shows before "…" (a vocabulary may hold millions).
constexpr size_t kShownTokens = 40;
constexpr size_t kShownItems = 20;

std::string someTokens(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < kShownTokens; ++i)
    s += (i ? " " : "") + displayToken(v[i]);
  if (v.size() > kShownTokens) s += " …";
  return s;
}

std::string shortNumber(float v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

int runInfo(const ModelArgs& args) {
  auto lm = openModel(args);
  const ModelConfig& c = lm->config;
  std::cout << "model:        " << safe(lm->path) << "\n";
  if (!c.name.empty()) std::cout << "name:         " << safe(c.name) << "\n";
  if (!c.description.empty()) std::cout << "description:  " << safe(c.description) << "\n";
  std::cout << "family:       " << c.family << " (" << familyTitle(c.family) << ")\n"
            << "class:        " << c.model << ", " << architectureName(c.architecture()) << "\n"
            << "layers:       ";
  if (c.hasEncoder()) std::cout << c.n_encoder_layers << " encoder";
  if (c.hasCross()) std::cout << " + ";
  if (c.hasDecoder()) std::cout << c.n_decoder_layers << " decoder";
  std::cout << "\n"
            << "d_model:      " << c.d_model << "\n"
            << "heads:        " << c.n_heads << " (d_k " << c.d_k << ", d_v " << c.d_v
            << (c.kvHeads() != c.n_heads
                    ? "; " + std::to_string(c.kvHeads()) + " key/value heads, grouped-query"
                    : std::string())
            << ")\n"
            << "d_ff:         " << c.d_ff << " (" << activationName(c.activation)
            << (c.gated_ffn ? ", gated" : "") << ")\n"
            << "norm:         " << (c.norm == NormPlacement::Post ? "post" : "pre") << "-"
            << (c.norm_kind == NormKind::RmsNorm        ? "RMSNorm"
                : c.norm_kind == NormKind::LayerNormStd ? "LayerNorm (unbiased std + eps)"
                                                        : "LayerNorm")
            << (c.final_norm ? " + final norms" : "") << (c.embed_norm ? " + embedding norm" : "")
            << (c.parallel_residual ? "; parallel residual x + attn(N1(x)) + ffn(N2(x))" : "")
            << "\n"
            << "positions:    " << positionalName(c.positional) << ", max_len " << c.max_len
            << (c.positional == Positional::Rotary ? ", theta " + shortNumber(c.rope_theta) + ", " +
                                                         ropeLayoutName(c.rope_layout) + " pairs"
                                                   : std::string())
            << (c.positional == Positional::Rotary && c.rotaryDims() != c.d_k
                    ? " on the first " + std::to_string(c.rotaryDims()) + " of " +
                          std::to_string(c.d_k) + " dimensions of each head (rotary_pct " +
                          shortNumber(c.rotary_pct) + ")"
                    : std::string())
            << (c.positional == Positional::Relative
                    ? " (a bias per head on the scores: " + std::to_string(c.relative_buckets) +
                          " buckets up to distance " + std::to_string(c.relative_max_distance) + ")"
                    : std::string())
            << (c.local_window > 0 && c.local_window < c.max_len
                    ? "; inputs of at most " + std::to_string(c.local_window) +
                          " tokens (local attention layers' window)"
                    : std::string())
            << "\n"
            << "scores:       QK^T "
            << (c.attn_scale == 1.0f  ? "(unscaled)"
                : c.attn_scale > 0.0f ? "x " + shortNumber(c.attn_scale)
                                      : "/ sqrt(" + std::to_string(c.d_k) + ")")
            << (c.positional == Positional::Relative ? " + relative position bias" : "")
            << ", then the mask\n"
            << "embeddings:   " << (c.embed_scale ? "scaled by sqrt(d_model)" : "unscaled")
            << (c.n_segments ? ", " + std::to_string(c.n_segments) + " segments" : "")
            << (c.output_scale ? "; the output head reads the stream x 1/sqrt(d_model)" : "")
            << "\n"
            << "mask fill:    " << c.mask_fill << "\n"
            << "parameters:   " << countParameters(c, lm->weights) << "\n";
  if (c.hasEncoder())
    std::cout << "src vocab:    " << c.src_vocab.size() << " tokens: " << someTokens(c.src_vocab)
              << "\n";
  if (c.hasDecoder())
    std::cout << "tgt vocab:    " << c.tgt_vocab.size() << " tokens: " << someTokens(c.tgt_vocab)
              << "\n";
  const auto& special = c.hasDecoder() ? c.tgt_vocab : c.src_vocab;
  auto name = [&](int id) {
    return id >= 0 ? std::to_string(id) + " (" + safe(special[id]) + ")" : std::string("none");
  };
  auto padName = [](int id) { return id >= 0 ? std::to_string(id) : std::string("none"); };
  std::cout << "special ids:  pad " << padName(c.hasEncoder() ? c.src_pad_id : c.tgt_pad_id);
  if (c.hasCross()) std::cout << "/" << padName(c.tgt_pad_id);
  std::cout << ", bos " << name(c.bos_id) << ", eos " << name(c.eos_id)
            << (c.src_bos_eos ? (c.src_bos_id >= 0 ? ", source wrapped in start/end markers"
                                                   : ", the end marker appended to the source")
                              : "")
            << "\n";
  if (c.classHead() != ClassHead::None) {
    std::cout << "classes:      " << c.n_classes << ":";
    for (int k = 0; k < c.n_classes && k < (int)kShownTokens; ++k)
      std::cout << " " << safe(c.classLabel(k));
    std::cout << (c.n_classes > (int)kShownTokens ? " …" : "") << "\n";
  }
  if (c.hasCross()) {
    const DecodeRule& rule = c.spec().decode;
    std::cout << "decode:       greedy, at most the source's length + " << rule.extra_over_source
              << " tokens, stopping after the end token"
              << (rule.text.empty() ? std::string(" (attnviz's rule: the tutorial defines none)")
                                    : " (" + rule.text + ")")
              << "\n";
  }
  for (size_t i = 0; i < c.examples.size() && i < kShownItems; ++i)
    std::cout << "example:      " << safe(c.examples[i].src) << "\n";
  if (c.examples.size() > kShownItems)
    std::cout << "example:      … and " << c.examples.size() - kShownItems << " more\n";
  for (const auto& n : lm->notes) std::cout << "note:         " << safe(n) << "\n";
  for (const Assumed& a : lm->assumed)
    if (!a.given && !changeOptions(a).empty())
      std::cout << "otherwise:    " << safe(changeOptions(a)) << "\n";
  for (const auto& w : lm->warnings) std::cout << "warning:      " << safe(w) << "\n";
  return 0;
}

}  // namespace

Command addInfoCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("info", "config, parameter count, vocabularies");
  auto args = std::make_shared<ModelArgs>();
  addModelArgs(cmd, *args, true, false);
  return {cmd, [args] { return runInfo(*args); }};
}

}  // namespace attnviz::cli

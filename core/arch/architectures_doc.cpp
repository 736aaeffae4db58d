// docs/formats.md's tables of architectures, written from the table itself (architectures.h):
// `attnviz-cli architectures --markdown` prints them and tests/test_infer.cpp checks the document.
#include <cmath>
#include <sstream>

#include "arch/architectures.h"
#include "arch/config.h"

namespace attnviz {

namespace {

std::string code(const std::string& s) {
  return "`" + s + "`";
}

std::string outputs(const ArchSpec& a) {
  std::string s;
  switch (a.token_head) {
    case TokenHead::Linear:
      s = "next-token logits";
      break;
    case TokenHead::BertMlm:
      s = "masked-LM logits at every position";
      break;
    case TokenHead::None:
      break;
  }
  const std::string cls =
      a.class_head == ClassHead::Pooler     ? "class logits from the pooled first position"
      : a.class_head == ClassHead::MeanPool ? "class logits from the mean over positions"
                                            : "";
  if (!cls.empty()) s += (s.empty() ? "" : "; ") + cls;
  return s.empty() ? "the hidden states (no head)" : s;
}

std::string number(float v);

std::string positions(const ArchDefaults& d) {
  std::string s = positionalName(d.positional);
  if (d.positional == Positional::Relative) s += " position bias on the scores";
  if (d.position_offset) s += ", `position_offset` " + std::to_string(d.position_offset);
  if (d.positions_skip_pad) s += ", counted over the tokens that are not padding";
  if (d.max_len != 5000) s += ", max_len " + std::to_string(d.max_len);
  if (d.positional == Positional::Rotary)
    s += std::string(", ") + ropeLayoutName(d.rope_layout) + " pairs";
  if (d.positional == Positional::Rotary && d.rotary_pct != 1.0f)
    s += " on the first " + number(d.rotary_pct) + " of each head";
  if (d.attn_scale > 0.0f) s += ", scores × " + number(d.attn_scale) + " (not 1/√d_k)";
  return s;
}

std::string number(float v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  std::ostringstream o;
  o << v;
  return o.str();
}

std::string norms(const ArchDefaults& d) {
  std::string s = d.norm == NormPlacement::Pre ? "pre" : "post";
  s += std::string(" ") + normKindName(d.norm_kind);
  if (d.layer_norm_eps != 1e-5f) s += " (eps " + number(d.layer_norm_eps) + ")";
  if (d.parallel_residual) s += ", parallel residual";
  if (d.sandwich_norms) s += ", sublayer outputs normed too";
  return s;
}

std::string flagsText(const TensorName& t) {
  std::string s;
  auto add = [&](const char* f) { s += (s.empty() ? " (" : ", ") + std::string(f); };
  if (t.flags & kOptional) add("optional");
  if (t.flags & kTransposed) add("stored [in, out]");
  if (t.flags & kTiedCopy) add("one shared table");
  if (t.flags & kBiasOptional) add("bias when present");
  if (t.flags & kBiasRow) add("bias stored [1, out]");
  if (t.flags & kQkvPerHead) add("rows per head: [heads, 3, d_k]");
  if (t.flags & kGateUpFused) add("[gate; up] rows: [2·d_ff, d]");
  if (t.flags & kSeqFirst) add("[max_len, 1, d]");
  if (t.flags & kBatchFirst) add("[1, max_len, d]");
  return s.empty() ? s : s + ")";
}

// `a.{weight,bias}` when the two names share everything up to their last dot.
std::string spelling(const TensorName& t) {
  if (t.bias.empty()) return code(t.weight);
  const size_t a = t.weight.rfind('.'), b = t.bias.rfind('.');
  if (a != std::string::npos && a == b && t.weight.compare(0, a, t.bias, 0, b) == 0)
    return code(t.weight.substr(0, a) + ".{" + t.weight.substr(a + 1) + "," + t.bias.substr(b + 1) +
                "}");
  return code(t.weight) + " + " + code(t.bias);
}

}  // namespace

std::string architecturesMarkdown() {
  std::ostringstream o;
  o << "| family | model | architecture | outputs | the tutorial |\n"
       "|---|---|---|---|---|\n";
  for (const ArchSpec& a : architectures())
    o << "| " << code(a.family) << " | " << code(a.model) << " | " << architectureName(a.arch)
      << " | " << outputs(a) << " | " << a.source << " |\n";
  o << "\nDefaults (what a config, the file's args or the answers do not set):\n\n"
       "| family / model | activation | norm | positional | final_norm | embed_scale | "
       "embed_norm | mask_fill |\n"
       "|---|---|---|---|---|---|---|---|\n";
  for (const ArchSpec& a : architectures()) {
    const ArchDefaults& d = a.defaults;
    std::string embed_norm = d.embed_norm ? "true" : "false";
    if (d.embed_norm && d.embed_norm_eps > 0)
      embed_norm += " (eps " + number(d.embed_norm_eps) + ")";
    o << "| " << code(a.family) << " / " << code(a.model) << " | " << activationName(d.activation)
      << (d.gated_ffn ? " (gated)" : "") << " | " << norms(d) << " | " << positions(d) << " | "
      << (d.final_norm ? "true" : "false") << " | " << (d.embed_scale ? "true" : "false") << " | "
      << embed_norm << " | " << number(d.mask_fill) << " |\n";
  }
  o << "\n";
  for (const ArchSpec& a : architectures()) {
    o << "**" << a.family << " / " << a.model << "** (" << a.title << ")";
    if (!a.alias.empty()) o << "; the family's old name " << code(a.alias) << " still loads";
    o << ":\n";
    for (Part p : {Part::Encoder, Part::Decoder, Part::Head}) {
      std::string line;
      for (int r = 0; r < kRoleCount; ++r) {
        const auto names = a.spellings(p, Role(r));
        if (names.empty()) continue;
        std::string spelled;
        for (const TensorName* t : names)
          spelled += (spelled.empty() ? "" : " or ") + spelling(*t) + flagsText(*t);
        line += (line.empty() ? "" : "; ") + std::string(roleName(Role(r))) + " " + spelled;
      }
      if (!line.empty()) o << "- " << partName(p) << ": " << line << "\n";
    }
    if (!a.ignored.empty()) {
      std::string s;
      for (const auto& i : a.ignored) s += (s.empty() ? "" : ", ") + code(i);
      o << "- ignored buffers: " << s << "\n";
    }
    if (!a.args.empty()) {
      std::string s;
      for (const ArgKey& k : a.args) {
        if (k.kind == ArgKind::Ignored) continue;
        s += (s.empty() ? "" : ", ") + code(k.key) +
             (k.kind == ArgKind::Refused
                  ? " (refused unless " + (k.value.empty() ? "absent" : k.value) + ")"
              : k.config.empty() ? std::string()
                                 : " → " + code(k.config));
      }
      o << "- "
        << (a.args_key.empty() ? std::string("config.json")
                               : code(a.args_key) + " of the checkpoint")
        << " states: " << s << "\n";
    }
    if (!a.assumptions.empty()) {
      std::string s;
      for (const Assumption& as : a.assumptions) {
        // The option's and the dialog's words are the front ends': here the setting's values.
        std::string other;
        for (const Alternative& alt : as.otherwise)
          other +=
              (other.empty() ? "" : ", ") + code(as.key + " " + alt.value) + " for " + alt.meaning;
        s += (s.empty() ? "" : "; ") + as.fact + (other.empty() ? "" : " — " + other);
      }
      o << "- the names cannot tell: " << s << "\n";
    }
    if (!a.vocab_files.empty()) {
      std::string s;
      for (const auto& v : a.vocab_files) s += (s.empty() ? "" : ", then ") + code(v);
      o << "- vocabulary when none is named: " << s
        << " from the checkpoint's folder's parent (or the folder itself), `{key}` from the "
           "checkpoint's `config` dict\n";
    }
    if (!a.decode.text.empty()) o << "- greedy decoding: " << a.decode.text << "\n";
    o << "\n";
  }
  return o.str();
}

}  // namespace attnviz

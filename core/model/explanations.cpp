#include "model/explanations.h"

#include <cmath>
#include <cstdio>

#include "base/translate.h"

namespace attnviz {

namespace {

std::string number(double v, const char* format) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, v);
  return buffer;
}

// "-" as the minus sign U+2212, as the explanations print numbers.
std::string withMinusSign(std::string s) {
  for (size_t p = s.find('-'); p != std::string::npos; p = s.find('-', p + 3))
    s.replace(p, 1, "\u2212");
  return s;
}

// A formula or shape in the explanations' one style.
std::string code(const std::string& text) {
  return "<span style=\"font-family: monospace; background: #eaecef;\">" + text + "</span>";
}

std::string str(long long v) {
  return std::to_string(v);
}

std::string decimal(float v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", (double)v);
  return text;
}

}  // namespace

std::string maskFillText(float fill) {
  if (std::isinf(fill)) return fill < 0 ? "\u2212\u221e" : "+\u221e";
  const double a = std::abs(double(fill));
  if (a >= 1e4) {
    const int e = int(std::lround(std::log10(a)));
    const double mant = double(fill) / std::pow(10.0, e);
    const std::string m = std::abs(std::abs(mant) - 1.0) < 1e-6
                              ? (mant < 0 ? "\u22121" : "1")
                              : withMinusSign(number(mant, "%.3g"));
    return m + "e" + str(e);
  }
  return withMinusSign(number(double(fill), "%.4g"));
}

std::string shapeString(std::initializer_list<long long> dims) {
  std::string out = "[";
  for (long long d : dims) out += (out.size() > 1 ? ", " : "") + str(d);
  return out + "]";
}

std::string maskDescription(AttentionKind kind, const MaskOptions& m, const ModelConfig& c,
                            bool any_masked) {
  const bool dec = kind == AttentionKind::DecoderSelf;
  const bool model_pads = dec ? c.tgt_padding_mask : c.src_padding_mask;
  const bool pad_on = model_pads && (dec ? m.tgt_padding : m.src_padding);
  const std::string which =
      dec ? (c.hasEncoder() ? translate("attnviz::Explanations", "target padding mask")
                            : translate("attnviz::Explanations", "padding mask"))
          : (c.hasDecoder() ? translate("attnviz::Explanations", "source padding mask")
                            : translate("attnviz::Explanations", "padding mask"));
  std::string padding;
  if (!model_pads)
    padding = translate("attnviz::Explanations", "this model masks no padding keys");
  else if (!pad_on)
    padding = fillIn(translate("attnviz::Explanations",
                               "<b>the %1 is off</b>: queries attend to padding keys too"),
                     {which});
  else
    padding = translate("attnviz::Explanations", "padding keys are masked");
  if (!dec) {
    if (pad_on && !any_masked)
      return translate(
          "attnviz::Explanations",
          "padding keys would be masked, but this sentence has none: no cell is masked");
    return padding;
  }
  if (!m.subsequent)
    return fillIn(translate("attnviz::Explanations",
                            "<b>the look-ahead mask is off</b>: every query also sees the keys to "
                            "its right (the future); %1"),
                  {padding});
  return fillIn(translate("attnviz::Explanations",
                          "keys to the right of the query (the future) are masked by the "
                          "look-ahead mask; %1"),
                {padding});
}

std::string kvHeadsSummary(const ModelConfig& c) {
  if (c.kvHeads() == c.n_heads) return {};
  if (c.kvHeads() == 1)
    return str(c.n_heads) + " query heads share one key/value head (multi-query attention)";
  return str(c.n_heads) + " query heads share " + str(c.kvHeads()) +
         " key/value heads (grouped-query attention: " + str(c.queriesPerKvHead()) +
         " query heads per key/value head)";
}

std::string kvGroupsText(const ModelConfig& c) {
  const int groups = c.kvHeads(), size = c.queriesPerKvHead();
  if (groups == c.n_heads) return {};
  auto heads = [&](int g) {  // query heads of group g, from 1
    return size == 1 ? str(g * size + 1) : str(g * size + 1) + "\u2013" + str((g + 1) * size);
  };
  std::string out = "query heads " + heads(0) + " read key/value head 1";
  const int listed = groups > 3 ? 2 : groups;
  for (int g = 1; g < listed; ++g) out += ", " + heads(g) + " key/value head " + str(g + 1);
  if (listed < groups) out += ", and so on";
  return out;
}

std::string attentionExplanation(const ModelConfig& c, const Trace& t, const AttentionBlock& a,
                                 const MaskOptions& masks, bool any_masked) {
  std::string rows_are, cols_are;
  switch (a.kind) {
    case AttentionKind::EncoderSelf:
      rows_are = translate("attnviz::Explanations", "input tokens asking (queries)");
      cols_are = translate("attnviz::Explanations", "input tokens answering (keys)");
      break;
    case AttentionKind::DecoderSelf:
      rows_are = c.hasEncoder() ? translate("attnviz::Explanations",
                                            "target tokens fed to the decoder (queries)")
                                : translate("attnviz::Explanations", "the tokens so far (queries)");
      cols_are = c.hasEncoder()
                     ? translate("attnviz::Explanations", "the same target tokens (keys)")
                     : translate("attnviz::Explanations", "the same tokens (keys)");
      break;
    case AttentionKind::Cross:
      rows_are = translate("attnviz::Explanations", "target tokens fed to the decoder (queries)");
      cols_are = translate("attnviz::Explanations",
                           "source tokens from the encoder output (keys and values)");
      break;
  }
  const std::string hatch =
      any_masked ? translate("attnviz::Explanations",
                             "hatched cells are masked (probability exactly 0), dark unhatched "
                             "cells are probabilities near 0 that the model chose")
                 : translate("attnviz::Explanations", "none is hatched");
  // Grouped-query attention: fewer key/value heads than query heads, each shared by a group.
  const std::string groups =
      c.kvHeads() == c.n_heads
          ? std::string()
          : "<p style='margin:4px 0 0 0'>" + kvHeadsSummary(c) + ": K and V have only " +
                str(c.kvHeads()) + " heads, each read by every query head of its group \u2014 " +
                kvGroupsText(c) +
                ". The query heads of a group score the same keys with their own queries, so "
                "their patterns still differ.</p>";
  // The score as the family computes it: QKᵀ·scale (1/√d_k unless configured), plus T5's relative
  // position bias in self-attention.
  const bool bias = c.positional == Positional::Relative && a.kind != AttentionKind::Cross;
  const std::string scale =
      c.attn_scale > 0.0f
          ? (c.attn_scale == 1.0f ? std::string() : "\u00b7" + decimal(c.attn_scale))
          : "/\u221a" + str(c.d_k);
  const std::string term = bias ? " + b<sub>h</sub>(bucket(j \u2212 i))" : "";
  // Gemma 2: the score soft-capped, cap·tanh(s / cap), before the mask.
  const std::string cap = c.attn_softcap > 0.0f ? decimal(c.attn_softcap) : std::string();
  auto capped = [&](const std::string& s) {
    return cap.empty() ? s : cap + "\u00b7tanh(" + s + "/" + cap + ")";
  };
  const std::string formula =
      c.attn_scale > 0.0f
          ? "softmax(" + capped("QK\u1d40" + scale) + (bias ? " + B" : "") + " + M)\u00b7V"
          : "softmax(" + capped("QK\u1d40/\u221ad<sub>k</sub>") + (bias ? " + B" : "") +
                " + M)\u00b7V";
  const std::string bias_note =
      bias ? translate("attnviz::Explanations",
                       " (T5's relative position bias of head h, learned per bucket of the "
                       "distance)")
           : std::string();
  return fillIn(translate("attnviz::Explanations",
                          "<p style='margin:0'><b>%1</b> %2. Each cell (row <i>i</i>, column "
                          "<i>j</i>) is how much query <i>i</i> attends to key <i>j</i>: score "
                          "%3%4, masked cells get %5, and softmax turns every row into "
                          "probabilities that sum to 1.</p>"),
                {c.attn_scale > 0.0f
                     ? translate("attnviz::Explanations", "Dot-product attention")
                     : translate("attnviz::Explanations", "Scaled dot-product attention"),
                 code(formula), code(capped("q<sub>i</sub>\u00b7k<sub>j</sub>" + scale) + term),
                 bias_note, code(maskFillText(c.mask_fill))}) +
         fillIn(translate("attnviz::Explanations",
                          "<p style='margin:4px 0 0 0'>Rows: %1. Columns: %2. Here %3; %4.</p>"),
                {rows_are, cols_are, maskDescription(a.kind, masks, c, any_masked), hatch}) +
         fillIn(translate("attnviz::Explanations",
                          "<p style='margin:4px 0 0 0'>Shapes: Q %1, K %2 → scores and "
                          "probabilities [batch, heads, len_q, len_k] = %3; one head draws a "
                          "[len_q, len_k] = %4 slice. d_model = %5, heads = %6, d_k = %7.</p>"),
                {shapeString({t.batch, a.heads, a.q_len, c.d_k}),
                 shapeString({t.batch, c.kvHeads(), a.k_len, c.d_k}),
                 shapeString({t.batch, a.heads, a.q_len, a.k_len}), shapeString({a.q_len, a.k_len}),
                 str(c.d_model), str(c.n_heads), str(c.d_k)}) +
         groups;
}

}  // namespace attnviz

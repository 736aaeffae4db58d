#include "model/lesson_html.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/safe_text.h"
#include "model/decoding.h"
#include "model/explanations.h"
#include "text/token_display.h"

namespace attnviz {

namespace {

// The placeholders of resources/lesson/lesson.html that the writer fills.
constexpr const char* kStylePlaceholder = "/*@LESSON_CSS@*/";
constexpr const char* kScriptPlaceholder = "/*@LESSON_JS@*/";
constexpr const char* kDataPlaceholder = "@LESSON_DATA@";
constexpr const char* kTitlePlaceholder = "@LESSON_TITLE@";

uint64_t base64Length(uint64_t bytes) {
  return (bytes + 2) / 3 * 4;
}

std::string base64(const std::vector<uint8_t>& in) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve(base64Length(in.size()));
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint32_t(in[i]) << 16) | (uint32_t(in[i + 1]) << 8) | in[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += alphabet[(v >> s) & 63];
  }
  if (i < in.size()) {
    const bool two = i + 1 < in.size();
    const uint32_t v = (uint32_t(in[i]) << 16) | (two ? uint32_t(in[i + 1]) << 8 : 0);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += two ? alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// IEEE 754 binary16 of a float, rounded to nearest even; beyond ±65504 it is ±∞ (scores that large
// do not occur in a trained model; the page then says "∞").
uint16_t halfBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds above 65504
  if (abs < 0x38800000u) {                                  // below 2^−14: subnormal or 0
    if (abs < 0x33000000u) return uint16_t(sign);
    const uint32_t e = abs >> 23, mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14 + (113 − e) … the subnormal's scale
    uint32_t v = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (v & 1))) ++v;
    return uint16_t(sign | v);
  }
  uint32_t v = ((abs >> 13) - (112u << 10));
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (v & 1))) ++v;
  return uint16_t(sign | v);
}

void putLittle16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(uint8_t(v & 0xff));
  out.push_back(uint8_t(v >> 8));
}

// The blocks in scope, in the trace's order, and the heads kept.
struct Plan {
  std::vector<const AttentionBlock*> blocks;
  std::vector<int> heads;
  std::vector<AttentionKind> kinds;
};

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

Plan plan(const Trace& t, const LessonScope& scope) {
  if (scope.bits != 8 && scope.bits != 16)
    throw Error(ErrorKind::BadInput,
                "probabilities are stored with 8 or 16 bits, not " + std::to_string(scope.bits));
  if (scope.top_k < 1 || scope.top_k > TokenLogits::kTop)  // what a run keeps of every position
    throw Error(ErrorKind::BadInput, "the top-k next tokens are 1 to " +
                                         std::to_string(TokenLogits::kTop) + ", not " +
                                         std::to_string(scope.top_k));
  if (t.blocks.empty())
    throw Error(ErrorKind::BadInput, "this run recorded no attention: nothing to export");
  Plan p;
  for (AttentionKind k : scope.kinds)
    if (!t.has(k))
      throw Error(ErrorKind::BadInput, std::string("this model has no ") + attentionKindTitle(k) +
                                           " (" + attentionKindName(k) + ")");
  for (AttentionKind k : kAttentionKinds)
    if (t.has(k) && (scope.kinds.empty() ||
                     std::find(scope.kinds.begin(), scope.kinds.end(), k) != scope.kinds.end()))
      p.kinds.push_back(k);
  int most_layers = 0;
  for (AttentionKind k : p.kinds) most_layers = std::max(most_layers, t.layers(k));
  for (int l : scope.layers)
    if (l < 0 || l >= most_layers)
      throw Error(ErrorKind::BadInput, "layer " + std::to_string(l + 1) +
                                           " is not in this model (layers 1 to " +
                                           std::to_string(most_layers) + ")");
  const int H = t.heads();
  for (int h : scope.heads)
    if (h < 0 || h >= H)
      throw Error(ErrorKind::BadInput, "head " + std::to_string(h + 1) +
                                           " is not in this model (heads 1 to " +
                                           std::to_string(H) + ")");
  for (int h = 0; h < H; ++h)
    if (scope.heads.empty() || contains(scope.heads, h)) p.heads.push_back(h);
  for (const AttentionBlock& b : t.blocks)
    if (std::find(p.kinds.begin(), p.kinds.end(), b.kind) != p.kinds.end() &&
        (scope.layers.empty() || contains(scope.layers, b.layer)))
      p.blocks.push_back(&b);
  return p;
}

// Bytes of one block's arrays before base64: the heads kept and their mean, each [q, k].
uint64_t probBytes(const AttentionBlock& a, const Plan& p, int bits) {
  return uint64_t(p.heads.size() + 1) * a.q_len * a.k_len * (bits / 8);
}
uint64_t scoreBytes(const AttentionBlock& a, const Plan& p) {
  return uint64_t(p.heads.size() + 1) * a.q_len * a.k_len * 2;
}
uint64_t maskBytes(const AttentionBlock& a) {
  return uint64_t(a.q_len) * a.k_len;
}

// One block's probabilities quantized to `bits` (round(p · (2^bits − 1))), then its raw scores as
// binary16, each as [heads kept + 1, q, k] with the mean of all the heads last, little-endian.
void blockArrays(const AttentionBlock& a, const Plan& p, int bits, std::vector<uint8_t>& probs,
                 std::vector<uint8_t>& scores, std::vector<uint8_t>& mask) {
  const int Q = a.q_len, K = a.k_len, H = a.heads;
  const double scale = bits == 8 ? 255.0 : 65535.0;
  auto putProb = [&](double v) {
    const long q = std::lround(std::clamp(v, 0.0, 1.0) * scale);
    if (bits == 8)
      probs.push_back(uint8_t(q));
    else
      putLittle16(probs, uint16_t(q));
  };
  std::vector<double> mean_p(size_t(Q) * K, 0.0), mean_s(size_t(Q) * K, 0.0);
  std::vector<float> row(K);
  for (int h = 0; h < H; ++h) {
    const bool kept = contains(p.heads, h);
    for (int i = 0; i < Q; ++i) {
      const std::vector<float> pr = a.probRow(0, h, i);
      for (int j = 0; j < K; ++j) mean_p[size_t(i) * K + j] += pr[j] / double(H);
      if (kept)
        for (int j = 0; j < K; ++j) putProb(pr[j]);
    }
  }
  for (double v : mean_p) putProb(v);
  for (int h = 0; h < H; ++h) {
    const bool kept = contains(p.heads, h);
    for (int i = 0; i < Q; ++i) {
      a.scoresOfRow(0, h, i, row.data());
      for (int j = 0; j < K; ++j) {
        mean_s[size_t(i) * K + j] += row[j] / double(H);
        if (kept) putLittle16(scores, halfBits(row[j]));
      }
    }
  }
  for (double v : mean_s) putLittle16(scores, halfBits(float(v)));
  for (int i = 0; i < Q; ++i)
    for (int j = 0; j < K; ++j) mask.push_back(a.masked(0, i, j) ? 1 : 0);
}

std::vector<std::string> shown(const std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  for (const auto& s : tokens) out.push_back(displayToken(s));
  return out;
}

const char* sideName(Side s) {
  return s == Side::Source ? "source" : "target";
}

// JSON that can sit inside <script>: every '<' written as \u003c (only strings can hold one).
std::string scriptSafeJson(const nlohmann::json& j) {
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 64);
  for (char ch : text)
    if (ch == '<')
      out += "\\u003c";
    else
      out += ch;
  return out;
}

std::string htmlEscape(const std::string& s) {
  std::string out;
  for (char ch : s) switch (ch) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  return out;
}

std::string megabytes(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MB", double(bytes) / 1e6);
  return b;
}

// The page's data. With arrays false the arrays are left empty and their base64 length is added
// to *array_chars instead (the estimate).
nlohmann::json lessonData(const Trace& t, const ModelConfig& c, const LessonScope& scope,
                          const LessonStart& start, const LessonText& text, const Plan& p,
                          bool arrays, uint64_t* array_chars) {
  using nlohmann::json;
  json d;
  d["format"] = "attnviz-lesson";
  d["version"] = 1;
  d["title"] = text.title;
  const char* architecture = !c.hasDecoder()   ? "encoder-only"
                             : !c.hasEncoder() ? "decoder-only"
                                               : "encoder-decoder";
  d["model"] = {{"name", text.model_name},
                {"family", familyTitle(c.family)},
                {"architecture", architecture},
                {"d_model", c.d_model},
                {"heads", c.n_heads},
                {"kv_heads", c.kvHeads()},
                {"d_k", c.d_k},
                {"mask_fill", maskFillText(c.mask_fill)}};
  d["source_text"] = text.source_text;
  d["target_text"] = text.target_text;
  d["source"] = t.src_tokens.empty() ? json::array() : json(shown(t.src_tokens[0]));
  d["target"] = t.tgt_tokens.empty() ? json::array() : json(shown(t.tgt_tokens[0]));
  d["prefix_length"] = text.prefix_length;
  const double step = 1.0 / (scope.bits == 8 ? 255.0 : 65535.0);
  d["precision"] = {{"bits", scope.bits},
                    {"scale", scope.bits == 8 ? 255 : 65535},
                    {"max_error", lessonProbabilityError(scope.bits)},
                    {"decimals", scope.bits == 8 ? 3 : 5},
                    {"step", step},
                    {"scores", "binary16 (about 3 significant digits)"}};
  d["masks"] = {{"src_padding", text.masks.src_padding},
                {"tgt_padding", text.masks.tgt_padding},
                {"subsequent", text.masks.subsequent}};
  d["heads"] = p.heads;
  d["heads_total"] = t.heads();
  json kinds = json::array();
  for (AttentionKind k : p.kinds) {
    const AttentionBlock* first = nullptr;
    bool any_masked = false;
    json layers = json::array();
    for (const AttentionBlock* b : p.blocks)
      if (b->kind == k) {
        if (!first) first = b;
        layers.push_back(b->layer);
        for (int i = 0; i < b->q_len && !any_masked; ++i)
          for (int j = 0; j < b->k_len && !any_masked; ++j) any_masked = b->masked(0, i, j);
      }
    if (!first) continue;  // the kind has none of the chosen layers
    kinds.push_back({{"name", attentionKindName(k)},
                     {"title", attentionKindTitle(k)},
                     {"query_side", sideName(querySide(k))},
                     {"key_side", sideName(keySide(k))},
                     {"q_len", first->q_len},
                     {"k_len", first->k_len},
                     {"layers", layers},
                     {"layers_total", t.layers(k)},
                     {"mask_text", maskDescription(k, text.masks, c, any_masked)},
                     {"explanation", attentionExplanation(c, t, *first, text.masks, any_masked)}});
  }
  d["kinds"] = kinds;
  json blocks = json::array();
  for (const AttentionBlock* b : p.blocks) {
    json jb = {{"kind", attentionKindName(b->kind)}, {"layer", b->layer}, {"has_scores", true}};
    if (arrays) {
      std::vector<uint8_t> probs, scores, mask;
      blockArrays(*b, p, scope.bits, probs, scores, mask);
      jb["probs"] = base64(probs);
      jb["scores"] = base64(scores);
      jb["mask"] = base64(mask);
    } else {
      jb["probs"] = jb["scores"] = jb["mask"] = "";
      *array_chars += base64Length(probBytes(*b, p, scope.bits)) + base64Length(scoreBytes(*b, p)) +
                      base64Length(maskBytes(*b));
    }
    blocks.push_back(std::move(jb));
  }
  d["blocks"] = blocks;
  // The decoding steps: position i of the decoder's input predicts the token after it; its new
  // rows are row i of every decoder block (a decoding session computes exactly those rows).
  json steps = json::array();
  if (c.hasDecoder() && !t.logits.empty() && !t.tgt_ids.empty()) {
    const int T = t.tgt_len;
    for (int i = 0; i < T; ++i) {
      json next = json::array();
      for (auto [id, prob] : t.logits.topProbabilities(0, i, scope.top_k))
        next.push_back({{"id", id},
                        {"token", text.output_vocab ? displayToken(text.output_vocab->token(id))
                                                    : std::to_string(id)},
                        {"p", prob}});
      steps.push_back(
          {{"position", i},
           {"fed", displayToken(t.tgt_tokens[0][size_t(i)])},
           {"forced", i + 1 < text.prefix_length},
           {"chosen", i + 1 < T ? displayToken(t.tgt_tokens[0][size_t(i) + 1]) : std::string()},
           {"next", next}});
    }
  }
  d["steps"] = steps;
  const int start_kind_ok = std::count_if(p.kinds.begin(), p.kinds.end(),
                                          [&](AttentionKind k) { return k == start.kind; });
  d["start"] = {{"view", start.view},
                {"kind", attentionKindName(start_kind_ok ? start.kind : p.kinds.front())},
                {"layer", start.layer},
                {"head", start.head},
                {"step", start.step}};
  return d;
}

// The template with its placeholders filled in one pass over the template only: each
// occurrence is replaced once and what replaced it is never scanned again, so a title or data that
// spells a placeholder (a model path, --title) stays text.
std::string fill(const std::string& data_json, const std::string& title) {
  const std::string& page_template = lessonTemplateHtml();
  const std::string escaped_title = htmlEscape(title);  // the <title> and the heading
  const std::pair<std::string_view, const std::string*> fills[] = {
      {kTitlePlaceholder, &escaped_title},
      {kStylePlaceholder, &lessonStyle()},
      {kScriptPlaceholder, &lessonScript()},
      {kDataPlaceholder, &data_json}};
  bool filled[std::size(fills)] = {};
  std::string page;
  page.reserve(page_template.size() + 2 * escaped_title.size() + lessonStyle().size() +
               lessonScript().size() + data_json.size());
  size_t at = 0;
  for (;;) {
    size_t next = std::string::npos, which = 0;
    for (size_t i = 0; i < std::size(fills); ++i)
      if (const size_t p = page_template.find(fills[i].first, at); p < next) {
        next = p;
        which = i;
      }
    if (next == std::string::npos) break;
    page.append(page_template, at, next - at);
    page += *fills[which].second;
    filled[which] = true;
    at = next + fills[which].first.size();
  }
  page.append(page_template, at);
  for (size_t i = 0; i < std::size(fills); ++i)
    if (!filled[i])
      throw Error(ErrorKind::Io,
                  "the built-in lesson template lacks " + std::string(fills[i].first));
  return page;
}

void checkSize(uint64_t bytes) {
  if (bytes > kMaxLessonBytes)
    throw Error(ErrorKind::TooLarge,
                "the lesson would be " + megabytes(bytes) + "; at most " +
                    megabytes(kMaxLessonBytes) +
                    " are written. Choose fewer layers, heads or kinds of attention, 8-bit "
                    "probabilities, or a shorter sentence");
}

}  // namespace

double lessonProbabilityError(int bits) {
  return 0.5 / (bits == 8 ? 255.0 : 65535.0);
}

uint64_t estimateLessonBytes(const Trace& t, const ModelConfig& c, const LessonScope& scope,
                             const LessonStart& start, const LessonText& text) {
  const Plan p = plan(t, scope);
  uint64_t array_chars = 0;
  const std::string data =
      scriptSafeJson(lessonData(t, c, scope, start, text, p, false, &array_chars));
  return fill(data, text.title).size() + array_chars;
}

std::string lessonHtml(const Trace& t, const ModelConfig& c, const LessonScope& scope,
                       const LessonStart& start, const LessonText& text) {
  checkSize(estimateLessonBytes(t, c, scope, start, text));
  const Plan p = plan(t, scope);
  return fill(scriptSafeJson(lessonData(t, c, scope, start, text, p, true, nullptr)), text.title);
}

void writeLessonHtml(const std::string& path, const Trace& t, const ModelConfig& c,
                     const LessonScope& scope, const LessonStart& start, const LessonText& text) {
  writeFileAtomically(path, lessonHtml(t, c, scope, start, text));
}

std::string lessonTitle(const std::string& model, const std::string& sentence) {
  // The file and its folder (the last two parts of the path).
  std::vector<std::string> parts;
  size_t at = 0;
  while (at <= model.size()) {
    const size_t slash = model.find_first_of("/\\", at);
    const size_t stop = slash == std::string::npos ? model.size() : slash;
    if (stop > at && model.compare(at, stop - at, ".") != 0)
      parts.push_back(model.substr(at, stop - at));
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  std::string label = parts.empty() ? model : parts.back();
  if (parts.size() >= 2) label = parts[parts.size() - 2] + "/" + label;
  // The sentence on one line, trimmed, at most 60 characters (whole UTF-8 sequences).
  std::string words;
  for (char ch : sentence) {
    const bool space = ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
    if (space && (words.empty() || words.back() == ' ')) continue;
    words += space ? ' ' : ch;
  }
  while (!words.empty() && words.back() == ' ') words.pop_back();
  size_t cut = 0;
  int chars = 0;
  while (cut < words.size() && chars < 60) {
    cut += std::max<size_t>(1, utf8SequenceAt(words, cut));
    ++chars;
  }
  if (cut < words.size()) words = words.substr(0, cut) + "…";
  return words.empty() ? "Attention in " + label : "Attention in " + label + ": “" + words + "”";
}

}  // namespace attnviz

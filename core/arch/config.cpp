#include "arch/config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_set>

#include "base/error.h"
#include "base/json_safe.h"
#include "base/safe_text.h"

namespace attnviz {

const std::string& familyName(const std::string& family) {
  return family;
}

const std::string& modelClassName(const std::string& model) {
  return model;
}

std::string familyTitle(const std::string& family) {
  if (const ArchSpec* a = findArchitecture(family)) return a->title;
  return family == "custom" ? std::string("a model of your own names") : family;
}

const ArchSpec& ModelConfig::spec() const {
  if (custom) return *custom;
  if (const ArchSpec* a = findArchitecture(family, model)) return *a;
  return architectures().front();
}

const char* positionalName(Positional p) {
  switch (p) {
    case Positional::Sinusoidal:
      return "sinusoidal";
    case Positional::SinusoidalHalves:
      return "sinusoidal-halves";
    case Positional::Learned:
      return "learned";
    case Positional::Rotary:
      return "rotary";
    case Positional::Relative:
      return "relative";
    case Positional::SinusoidalFairseq:
      return "sinusoidal-fairseq";
  }
  return "?";
}

const char* normKindName(NormKind k) {
  switch (k) {
    case NormKind::LayerNorm:
      return "layernorm";
    case NormKind::LayerNormStd:
      return "layernorm-std";
    case NormKind::RmsNorm:
      return "rmsnorm";
  }
  return "?";
}

const char* ropeLayoutName(RopeLayout l) {
  return l == RopeLayout::Interleaved ? "interleaved" : "halves";
}

const char* architectureName(Architecture a) {
  switch (a) {
    case Architecture::EncoderDecoder:
      return "encoder-decoder";
    case Architecture::EncoderOnly:
      return "encoder-only";
    case Architecture::DecoderOnly:
      return "decoder-only";
  }
  return "?";
}

const char* activationName(Activation a) {
  switch (a) {
    case Activation::Relu:
      return "relu";
    case Activation::Gelu:
      return "gelu";
    case Activation::GeluTanh:
      return "gelu_tanh";
    case Activation::Silu:
      return "silu";
    case Activation::Tanh:
      return "tanh";
  }
  return "?";
}

Architecture ModelConfig::architecture() const {
  return spec().arch;
}

TokenHead ModelConfig::tokenHead() const {
  return spec().token_head;
}

ClassHead ModelConfig::classHead() const {
  return spec().class_head;
}

const std::vector<std::string>& ModelConfig::outputVocab() const {
  return hasDecoder() ? tgt_vocab : src_vocab;
}

std::string ModelConfig::classLabel(int c) const {
  if (c >= 0 && c < (int)class_labels.size()) return class_labels[c];
  return "class " + std::to_string(c);
}

namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& source, const std::string& msg) {
  throw Error(ErrorKind::BadConfig, source + ": " + msg);
}

int getInt(const json& j, const char* key, const std::string& src, int lo, int hi,
           const int* fallback = nullptr) {
  if (!j.contains(key)) {
    if (fallback) return *fallback;
    bad(src, std::string("missing key \"") + key + "\"");
  }
  const json& v = j[key];
  if (!v.is_number_integer())
    bad(src, std::string("\"") + key + "\" is " + v.dump().substr(0, 60) + ", expected an integer");
  // Parsed JSON stores every non-negative integer as unsigned: compare in the value's own type,
  // against both bounds (an unsigned 0 must still fail lo = 1).
  const bool out_of_range =
      v.is_number_unsigned()
          ? v.get<uint64_t>() > (uint64_t)hi || (lo > 0 && v.get<uint64_t>() < (uint64_t)lo)
          : (v.get<int64_t>() < lo || v.get<int64_t>() > hi);
  if (out_of_range)
    bad(src, std::string("\"") + key + "\" is " + v.dump() + ", expected " + std::to_string(lo) +
                 " to " + std::to_string(hi));
  return static_cast<int>(v.get<int64_t>());
}

// A token id: a wrong type is a config error; a value outside the vocabulary is a vocabulary
// error naming the field, the value and the valid range. `fallback` (when the key is absent) is
// checked too: an inherited pad_id must fit each vocabulary it is used with.
int getId(const json& j, const char* key, const std::string& src, int lo, int vocab,
          const char* which, const int* fallback = nullptr, const char* fallback_from = nullptr) {
  int64_t id;
  std::string shown;
  if (!j.contains(key)) {
    if (!fallback) bad(src, std::string("missing key \"") + key + "\"");
    id = *fallback;
    shown = std::to_string(id) +
            (fallback_from ? std::string(" (from \"") + fallback_from + "\")" : "");
  } else {
    const json& v = j[key];
    if (!v.is_number_integer())
      bad(src,
          std::string("\"") + key + "\" is " + v.dump().substr(0, 60) + ", expected an integer");
    if (v.is_number_unsigned() && v.get<uint64_t>() > (uint64_t)std::numeric_limits<int>::max())
      id = std::numeric_limits<int64_t>::max();
    else
      id = v.get<int64_t>();
    shown = v.dump();
  }
  if (id < lo || id >= vocab)
    throw Error(ErrorKind::BadVocabulary, src + ": \"" + key + "\" is " + shown + ", outside the " +
                                              which + " of " + std::to_string(vocab) +
                                              " tokens (expected " + (lo < 0 ? "-1 or " : "") +
                                              "0 to " + std::to_string(vocab - 1) + ")");
  return static_cast<int>(id);
}

bool getBool(const json& j, const char* key, const std::string& src, bool fallback) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_boolean())
    bad(src, std::string("\"") + key + "\" is " + j[key].dump().substr(0, 60) +
                 ", expected true or false");
  return j[key].get<bool>();
}

std::string getString(const json& j, const char* key, const std::string& src,
                      const std::string& fallback, bool required = false) {
  if (!j.contains(key)) {
    if (required) bad(src, std::string("missing key \"") + key + "\"");
    return fallback;
  }
  if (!j[key].is_string())
    bad(src,
        std::string("\"") + key + "\" is " + j[key].dump().substr(0, 60) + ", expected a string");
  return j[key].get<std::string>();
}

std::vector<std::string> getVocab(const json& j, const char* key, const std::string& src) {
  if (!j.contains(key)) bad(src, std::string("missing key \"") + key + "\"");
  const json& v = j[key];
  if (!v.is_array())
    throw Error(ErrorKind::BadVocabulary,
                src + ": \"" + key + "\" is " + jsonTypeName(v) + ", expected an array of strings");
  if (v.empty()) throw Error(ErrorKind::BadVocabulary, src + ": \"" + key + "\" is empty");
  if (v.size() > (size_t)ConfigLimits::kMaxVocab)
    throw Error(ErrorKind::BadVocabulary, src + ": \"" + key + "\" has " +
                                              std::to_string(v.size()) + " tokens (at most " +
                                              std::to_string(ConfigLimits::kMaxVocab) + ")");
  std::vector<std::string> out;
  out.reserve(v.size());  // never reallocated: `seen` views the strings in place
  std::unordered_set<std::string_view> seen;
  seen.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      throw Error(ErrorKind::BadVocabulary, src + ": \"" + key + "\"[" + std::to_string(i) +
                                                "] is " + v[i].dump().substr(0, 40) +
                                                ", expected a string");
    std::string t = v[i].get<std::string>();
    if (t.empty())
      throw Error(ErrorKind::BadVocabulary,
                  src + ": \"" + key + "\"[" + std::to_string(i) + "] is an empty token");
    if (t.size() > (size_t)ConfigLimits::kMaxTokenBytes)
      throw Error(ErrorKind::BadVocabulary, src + ": \"" + key + "\"[" + std::to_string(i) +
                                                "] is " + std::to_string(t.size()) +
                                                " bytes long (at most " +
                                                std::to_string(ConfigLimits::kMaxTokenBytes) + ")");
    // Control characters are tokens too (nanoGPT's '\n'): shown escaped, never refused.
    if (size_t bad = 0; !isValidUtf8(t, &bad))
      throw Error(ErrorKind::BadVocabulary,
                  src + ": \"" + key + "\"[" + std::to_string(i) + "] \"" + clipForMessage(t, 40) +
                      "\" is not valid UTF-8 (byte " + std::to_string(bad) + ")");
    out.push_back(std::move(t));
    if (!seen.insert(out.back()).second)
      throw Error(ErrorKind::BadVocabulary,
                  src + ": \"" + key + "\" has the token \"" + clipForMessage(out.back(), 40) +
                      "\" twice (again at index " + std::to_string(i) + ")");
  }
  return out;
}

}  // namespace

float ModelConfig::scoreScale() const {
  return attn_scale > 0.0f ? attn_scale : 1.0f / std::sqrt((float)d_k);
}

int ModelConfig::positionRows() const {
  const bool sinusoid = positional == Positional::Sinusoidal ||
                        positional == Positional::SinusoidalHalves ||
                        positional == Positional::SinusoidalFairseq;
  const int64_t width = sinusoid ? d_model : positional == Positional::Rotary ? rotaryDims() : 0;
  if (width <= 0) return max_len;
  const int64_t fit = (int64_t)(ConfigLimits::kMaxPositionTableBytes / sizeof(float)) / width;
  return (int)std::min<int64_t>(max_len, std::max<int64_t>(1, fit));
}

int64_t ModelConfig::parameterCount() const {
  auto lin = [](int64_t in, int64_t out, bool bias) { return in * out + (bias ? out : 0); };
  const int64_t d = d_model;
  const bool ab = q_bias.value_or(true), fb = ffn_bias.value_or(true);
  const int64_t attn = lin(d, attnWidth(), ab) + lin(d, keyWidth(), ab) +
                       lin(d, kvValueWidth(), ab) + lin(valueWidth(), d, out_bias.value_or(true));
  const int64_t ln = norm_kind == NormKind::RmsNorm ? d : 2 * d;  // RMSNorm: a gain, no bias
  // Per-head norms of q and k (Qwen3): [d_k] each, in self-attention.
  const int64_t qk_norm = [&](Part p) {
    return spec().has(p, Role::AttnQNorm) ? 2 * (int64_t)d_k : 0;
  }(hasDecoder() ? Part::Decoder : Part::Encoder);
  // The feed-forward and its norm; an attention-only model (d_ff 0) has neither.
  const int64_t ffn = d_ff > 0 ? lin(d, d_ff, fb) * (gated_ffn ? 2 : 1) + lin(d_ff, d, fb) + ln : 0;
  const int64_t pos =
      positional == Positional::Learned ? ((int64_t)max_len + position_offset) * d : 0;
  const int64_t relative =
      positional == Positional::Relative ? (int64_t)relative_buckets * n_heads : 0;
  auto embeddings = [&](const std::vector<std::string>& vocab) {
    return (int64_t)vocab.size() * d + pos + (embed_norm ? ln : 0) + relative;
  };
  int64_t n = 0;
  if (hasEncoder())
    n += embeddings(src_vocab) + (int64_t)n_segments * d +
         n_encoder_layers * (attn + qk_norm + ffn + ln) + (final_norm ? ln : 0);
  if (hasDecoder())
    n += embeddings(tgt_vocab) +
         n_decoder_layers * ((hasCross() ? 2 : 1) * (attn + ln) + qk_norm + ffn) +
         (final_norm ? ln : 0);
  const int64_t V = (int64_t)outputVocab().size();
  switch (tokenHead()) {
    case TokenHead::Linear:  // counted even when tied: whether it is, only the file tells
      n += lin(d, V, proj_bias.value_or(true));
      break;
    case TokenHead::BertMlm:
      n += lin(d, d, true) + ln + lin(d, V, true);
      break;
    case TokenHead::None:
      break;
  }
  const int64_t C = std::max(n_classes, 1);
  if (classHead() == ClassHead::Pooler) n += lin(d, d, true);
  if (classHead() != ClassHead::None) n += lin(d, C, true);
  return n;
}

namespace {

// The descriptor's defaults (docs/formats.md "Config keys").
void applyDefaults(ModelConfig& c) {
  const ArchDefaults& d = c.spec().defaults;
  c.activation = d.activation;
  c.norm = d.norm;
  c.norm_kind = d.norm_kind;
  c.layer_norm_eps = d.layer_norm_eps;
  c.embed_norm_eps = d.embed_norm_eps > 0 ? d.embed_norm_eps : d.layer_norm_eps;
  c.positional = d.positional;
  c.rope_theta = d.rope_theta;
  c.rope_layout = d.rope_layout;
  c.attn_scale = d.attn_scale;
  c.output_scale = d.output_scale;
  c.gated_ffn = d.gated_ffn;
  c.parallel_residual = d.parallel_residual;
  c.sandwich_norms = d.sandwich_norms;
  c.rotary_pct = d.rotary_pct;
  c.final_norm = d.final_norm;
  c.embed_scale = d.embed_scale;
  c.embed_norm = d.embed_norm;
  c.mask_fill = d.mask_fill;
  c.max_len = d.max_len;
  c.position_offset = d.position_offset;
  c.positions_skip_pad = d.positions_skip_pad;
  c.src_bos_eos = d.src_bos_eos;
  c.n_segments = d.n_segments;
  c.src_padding_mask = c.tgt_padding_mask = d.padding_mask;
}

// One of a few names (a key whose value is an enum); `fallback` when absent.
template <class E, size_t N>
E getChoice(const json& j, const char* key, const std::string& src, E fallback,
            const std::pair<const char*, E> (&choices)[N]) {
  if (!j.contains(key)) return fallback;
  const std::string v = getString(j, key, src, "");
  std::string names;
  for (const auto& [name, value] : choices) {
    if (v == name) return value;
    names += std::string(names.empty() ? "" : ", ") + name;
  }
  bad(src, "\"" + std::string(key) + "\" is \"" + clipForMessage(v, 40) + "\", expected one of " +
               names);
}

std::optional<bool> getOptionalBool(const json& j, const char* key, const std::string& src,
                                    std::optional<bool> fallback) {
  if (!j.contains(key)) return fallback;
  return getBool(j, key, src, false);
}

}  // namespace

float configEps(const json& j, const char* key, const std::string& src, float fallback) {
  if (!j.contains(key)) return fallback;
  const json& e = j[key];
  // Checked as the float the model uses: 1e-50 is positive as a double but 0 as a float.
  const float f = e.is_number() ? static_cast<float>(e.get<double>()) : 0.0f;
  if (!e.is_number() || !std::isnormal(f) || f <= 0 || f > 1)
    bad(src, std::string("\"") + key + "\" is " + e.dump().substr(0, 40) +
                 ", expected a number in [1.2e-38, 1] (a positive float32)");
  return f;
}

int configMaxLen(const json& j, const std::string& src, int fallback) {
  return getInt(j, "max_len", src, 2, ConfigLimits::kMaxLen, &fallback);
}

float configRopeTheta(const json& j, const std::string& src, float fallback) {
  if (!j.contains("rope_theta")) return fallback;
  const json& t = j["rope_theta"];
  // Checked as the float the model uses: a base of 0, NaN or infinity has no frequencies.
  const float f = t.is_number() ? static_cast<float>(t.get<double>()) : 0.0f;
  if (!t.is_number() || !std::isfinite(f) || !(f > 1.0f))
    bad(src, "\"rope_theta\" is " + t.dump().substr(0, 40) +
                 ", expected a finite number above 1 (the rotary base, 10000 in most models)");
  return f;
}

float configMaskFill(const json& j, const std::string& src, float fallback) {
  if (!j.contains("mask_fill")) return fallback;
  const json& m = j["mask_fill"];
  if (m.is_string() && m.get<std::string>() == "-inf")
    return -std::numeric_limits<float>::infinity();
  if (!m.is_number())
    bad(src, "\"mask_fill\" is " + m.dump().substr(0, 40) + ", expected a number or \"-inf\"");
  const double v = m.get<double>();
  if (!(v <= -1.0) || !std::isfinite(v) || v < -3.0e38)
    bad(src, "\"mask_fill\" is " + m.dump() +
                 ", expected a large negative number or \"-inf\" (masked scores must lose the "
                 "softmax: a fill above the real scores gives the masked positions the weight)");
  return static_cast<float>(v);
}

ModelConfig ModelConfig::fromJson(const json& j, const std::string& src) {
  if (!j.is_object()) bad(src, "config is " + jsonTypeName(j) + ", expected an object");
  ModelConfig c;
  const std::string fam = getString(j, "family", src, "", true);
  if (fam == "custom") {
    // A model of the user's own names: the map is kept in the config.
    if (!j.contains("names_map"))
      bad(src, "family \"custom\" needs \"names_map\" (docs/formats.md \"Your own names\")");
    c.custom = customArchitecture(j["names_map"], src + " names_map");
    c.family = "custom";
    c.model = c.custom->model;
  } else {
    const ArchSpec* family = findArchitecture(fam);
    if (!family)
      bad(src, "\"family\" is \"" + clipForMessage(fam, 40) + "\", expected one of " +
                   familyList() + " or custom");
    // The class: the family's first unless named.
    const ArchSpec* cls = family;
    if (j.contains("model")) {
      const std::string m = getString(j, "model", src, "");
      cls = findArchitecture(family->family, m);
      if (!cls) {
        std::string classes;
        for (const auto& a : architectures())
          if (a.family == family->family) classes += (classes.empty() ? "" : ", ") + a.model;
        bad(src, "\"model\" is \"" + clipForMessage(m, 40) + "\"; the " + family->family +
                     " family has " + classes);
      }
    }
    c.family = cls->family;
    c.model = cls->model;
  }
  const ArchSpec& spec = c.spec();
  applyDefaults(c);

  // Every missing required key is named at once.
  const bool enc = c.hasEncoder(), dec = c.hasDecoder();
  std::vector<std::string> required = {"d_model", "d_ff", "n_heads"};
  auto layers_key = [&](const char* key) {
    if (!j.contains(key) && !j.contains("n_layers")) required.push_back(key);
  };
  if (enc) layers_key("n_encoder_layers");
  if (dec) layers_key("n_decoder_layers");
  auto vocab_key = [&](const char* key, bool only) {
    if (!j.contains(key) && !(only && j.contains("vocab"))) required.push_back(key);
  };
  if (enc) vocab_key("src_vocab", !dec);
  if (dec) vocab_key("tgt_vocab", !enc);
  if (c.hasCross()) {
    for (const char* key : {"bos_id", "eos_id"})
      if (!j.contains(key)) required.push_back(key);
  }
  std::string missing;
  for (const auto& k : required)
    if (!j.contains(k)) missing += std::string(missing.empty() ? "" : ", ") + "\"" + k + "\"";
  if (!missing.empty())
    bad(src, std::string(required.size() > 1 && missing.find(',') != std::string::npos
                             ? "missing keys "
                             : "missing key ") +
                 missing + " (needed by " + spec.summary() + ")");

  const int W = ConfigLimits::kMaxWidth;
  c.d_model = getInt(j, "d_model", src, 1, W);
  c.d_ff = getInt(j, "d_ff", src, 0, W);  // 0: attention-only, no feed-forward sublayer
  c.n_heads = getInt(j, "n_heads", src, 1, ConfigLimits::kMaxHeads);
  if (c.d_model % c.n_heads != 0 && (!j.contains("d_k") || !j.contains("d_v")))
    bad(src, "d_model " + std::to_string(c.d_model) + " is not divisible by n_heads " +
                 std::to_string(c.n_heads) + "; give d_k and d_v explicitly");
  const int per_head = c.d_model / c.n_heads;
  c.d_k = getInt(j, "d_k", src, 1, W, &per_head);
  c.d_v = getInt(j, "d_v", src, 1, W, &per_head);
  if ((int64_t)c.d_k * c.n_heads > W || (int64_t)c.d_v * c.n_heads > W)
    bad(src, "n_heads × d_k = " + std::to_string((int64_t)c.d_k * c.n_heads) +
                 " is larger than the limit " + std::to_string(W));
  if (spec.heads_split_d_model && (c.d_k * c.n_heads != c.d_model || c.d_v != c.d_k))
    bad(src, c.family + " needs d_k = d_v = d_model / n_heads, found d_k " + std::to_string(c.d_k) +
                 ", d_v " + std::to_string(c.d_v));
  if (j.contains("n_kv_heads")) {
    // Grouped-query attention: each key/value head serves n_heads / n_kv_heads query heads.
    const int all = c.n_heads;
    c.n_kv_heads = getInt(j, "n_kv_heads", src, 1, ConfigLimits::kMaxHeads, &all);
    if (c.n_heads % c.n_kv_heads != 0)
      bad(src, "n_kv_heads " + std::to_string(c.n_kv_heads) + " does not divide n_heads " +
                   std::to_string(c.n_heads) +
                   " (each key/value head serves the same number of query heads)");
    if (c.n_kv_heads == c.n_heads) c.n_kv_heads = 0;
  }
  const int zero_layers = 0;
  const int n_layers = j.contains("n_layers")
                           ? getInt(j, "n_layers", src, 1, ConfigLimits::kMaxLayers)
                           : zero_layers;
  auto stack = [&](const char* key, bool has, const char* what) {
    if (!has) {
      if (j.contains(key) && !(j[key].is_number_integer() && j[key].get<int64_t>() == 0))
        bad(src, std::string("\"") + key + "\" is " + j[key].dump().substr(0, 20) + ", but " +
                     c.model + " has no " + what);
      return 0;
    }
    return getInt(j, key, src, 1, ConfigLimits::kMaxLayers, n_layers ? &n_layers : nullptr);
  };
  c.n_encoder_layers = stack("n_encoder_layers", enc, "encoder");
  c.n_decoder_layers = stack("n_decoder_layers", dec, "decoder");
  if (enc) c.src_vocab = getVocab(j, j.contains("src_vocab") || dec ? "src_vocab" : "vocab", src);
  if (dec) c.tgt_vocab = getVocab(j, j.contains("tgt_vocab") || enc ? "tgt_vocab" : "vocab", src);
  const int Vs = (int)c.src_vocab.size(), Vt = (int)c.tgt_vocab.size();
  const int none = -1;
  const int Vmax = std::max(Vs, Vt);
  // Ids valid in both vocabularies are checked against the larger one; a model with one
  // vocabulary says "the vocabulary".
  const char* either = enc && dec ? "larger vocabulary" : "vocabulary";
  // -1 is "none" for every special id. A pad id the file does not state: 0 where the family
  // masks padding (its tutorials pad with 0), none where it masks no padding (nanoGPT, GPT-2):
  // such a model has no padding token to report.
  const int pad_default = c.src_padding_mask || c.tgt_padding_mask ? 0 : -1;
  const int pad = getId(j, "pad_id", src, -1, Vmax, either, &pad_default);
  if (enc)
    c.src_pad_id = getId(j, "src_pad_id", src, -1, Vs, enc && dec ? "source vocabulary" : either,
                         &pad, "pad_id");
  if (dec)
    c.tgt_pad_id = getId(j, "tgt_pad_id", src, -1, Vt, enc && dec ? "target vocabulary" : either,
                         &pad, "pad_id");
  // Start and end tokens: of the target when there is a decoder, else of the one vocabulary.
  const int Vbe = dec ? Vt : Vs;
  const char* which = enc && dec ? "target vocabulary" : either;
  c.bos_id = getId(j, "bos_id", src, -1, Vbe, which, &none);
  c.eos_id = getId(j, "eos_id", src, -1, Vbe, which, &none);
  // Without an end token a decode stops at its length limit; without a start token an
  // encoder-decoder's decoder has nothing to begin with.
  if (c.hasCross() && c.bos_id < 0)
    throw Error(ErrorKind::BadVocabulary,
                src + (j.contains("bos_id") ? ": \"bos_id\" is -1 (none)" : ": no \"bos_id\"") +
                    ", but an encoder-decoder's decoder begins with a start token: give the id "
                    "of the target vocabulary's start token");
  const int unk = getId(j, "unk_id", src, -1, Vmax, either, &none);
  if (enc)
    c.src_unk_id =
        getId(j, "src_unk_id", src, -1, Vs, "source vocabulary", unk < Vs ? &unk : &none);
  if (dec)
    c.tgt_unk_id =
        getId(j, "tgt_unk_id", src, -1, Vt, "target vocabulary", unk < Vt ? &unk : &none);

  const std::string norm = getString(j, "norm", src, c.norm == NormPlacement::Pre ? "pre" : "post");
  if (norm == "post")
    c.norm = NormPlacement::Post;
  else if (norm == "pre")
    c.norm = NormPlacement::Pre;
  else
    bad(src, "\"norm\" is \"" + clipForMessage(norm, 40) + "\", expected post or pre");
  if (j.contains("activation")) {
    const std::string a = getString(j, "activation", src, "");
    const Activation acts[] = {Activation::Relu, Activation::Gelu, Activation::GeluTanh,
                               Activation::Silu};
    bool found = false;
    for (Activation act : acts)
      if (a == activationName(act)) {
        c.activation = act;
        found = true;
      }
    if (!found)
      bad(src, "\"activation\" is \"" + clipForMessage(a, 40) +
                   "\", expected relu, gelu, gelu_tanh or silu");
  }
  const std::optional<bool> attn_bias = getOptionalBool(j, "attn_bias", src, std::nullopt);
  c.q_bias = getOptionalBool(j, "q_bias", src, attn_bias);
  c.k_bias = getOptionalBool(j, "k_bias", src, attn_bias);
  c.v_bias = getOptionalBool(j, "v_bias", src, attn_bias);
  c.out_bias = getOptionalBool(j, "out_bias", src, attn_bias);
  c.ffn_bias = getOptionalBool(j, "ffn_bias", src, std::nullopt);
  c.proj_bias = getOptionalBool(j, "proj_bias", src, std::nullopt);
  c.final_norm = getBool(j, "final_norm", src, c.final_norm);
  c.embed_scale = getBool(j, "embed_scale", src, c.embed_scale);
  c.embed_norm = getBool(j, "embed_norm", src, c.embed_norm);
  static constexpr std::pair<const char*, Positional> kPositions[] = {
      {"sinusoidal", Positional::Sinusoidal},
      {"sinusoidal-halves", Positional::SinusoidalHalves},
      {"learned", Positional::Learned},
      {"rotary", Positional::Rotary},
      {"relative", Positional::Relative},
      {"sinusoidal-fairseq", Positional::SinusoidalFairseq}};
  c.positional = getChoice(j, "positional", src, c.positional, kPositions);
  if (c.positional == Positional::Relative) {
    // T5's buckets: a bidirectional half of relative_buckets / 2, exact below a quarter, and a
    // logarithmic range that needs max_distance beyond the exact ones.
    const int buckets = c.relative_buckets, distance = c.relative_max_distance;
    c.relative_buckets =
        getInt(j, "relative_buckets", src, 4, ConfigLimits::kMaxRelativeBuckets, &buckets);
    c.relative_max_distance =
        getInt(j, "relative_max_distance", src, 1, ConfigLimits::kMaxLen, &distance);
    if (c.relative_max_distance <= c.relative_buckets / 2)
      bad(src, "\"relative_max_distance\" " + std::to_string(c.relative_max_distance) +
                   " must exceed half of the " + std::to_string(c.relative_buckets) +
                   " relative_buckets (the distances that have a bucket each)");
  } else if (j.contains("relative_buckets") || j.contains("relative_max_distance")) {
    bad(src,
        "\"relative_buckets\" and \"relative_max_distance\" need \"positional\": \"relative\"");
  }
  if (j.contains("attn_scale")) {
    const json& a = j["attn_scale"];
    const float f = a.is_number() ? static_cast<float>(a.get<double>()) : 0.0f;
    if (!a.is_number() || !std::isfinite(f) || !(f > 0.0f))
      bad(src, "\"attn_scale\" is " + clipForMessage(a.dump(), 40) +
                   ", expected a positive number (the factor of QKᵀ; absent = 1/√d_k)");
    c.attn_scale = f;
  }
  for (const char* key : {"attn_softcap", "final_softcap"}) {
    if (!j.contains(key)) continue;
    const json& a = j[key];
    const float f = a.is_number() ? static_cast<float>(a.get<double>()) : 0.0f;
    if (!a.is_number() || !std::isfinite(f) || !(f > 0.0f))
      bad(src, std::string("\"") + key + "\" is " + clipForMessage(a.dump(), 40) +
                   ", expected a positive number (the cap c of c·tanh(x / c))");
    (key == std::string("attn_softcap") ? c.attn_softcap : c.final_softcap) = f;
  }
  c.sandwich_norms = getBool(j, "sandwich_norms", src, c.sandwich_norms);
  if (c.sandwich_norms && c.norm != NormPlacement::Pre)
    bad(src, "\"sandwich_norms\" needs pre-norm blocks (Gemma 2)");
  c.output_scale = getBool(j, "output_scale", src, c.output_scale);
  c.tied_output = getOptionalBool(j, "tied_output", src, std::nullopt);
  static constexpr std::pair<const char*, NormKind> kNormKinds[] = {
      {"layernorm", NormKind::LayerNorm},
      {"layernorm-std", NormKind::LayerNormStd},
      {"rmsnorm", NormKind::RmsNorm}};
  c.norm_kind = getChoice(j, "norm_kind", src, c.norm_kind, kNormKinds);
  static constexpr std::pair<const char*, RopeLayout> kRopeLayouts[] = {
      {"interleaved", RopeLayout::Interleaved}, {"halves", RopeLayout::Halves}};
  c.rope_layout = getChoice(j, "rope_layout", src, c.rope_layout, kRopeLayouts);
  c.rope_theta = configRopeTheta(j, src, c.rope_theta);
  if (c.positional == Positional::Rotary && c.d_k % 2 != 0)
    bad(src, "rotary positions rotate pairs of a head's dimensions: d_k " + std::to_string(c.d_k) +
                 " is odd");
  c.gated_ffn = getBool(j, "gated_ffn", src, c.gated_ffn);
  c.parallel_residual = getBool(j, "parallel_residual", src, c.parallel_residual);
  if (c.parallel_residual && (c.architecture() != Architecture::DecoderOnly ||
                              c.norm != NormPlacement::Pre || c.d_ff <= 0))
    bad(src,
        "\"parallel_residual\" needs a pre-norm decoder-only model with a feed-forward (GPT-NeoX)");
  if (j.contains("rotary_pct")) {
    const json& v = j["rotary_pct"];
    const double f = v.is_number() ? v.get<double>() : 0.0;
    if (!v.is_number() || !(f > 0.0) || f > 1.0)
      bad(src, "\"rotary_pct\" is " + clipForMessage(v.dump(), 40) +
                   ", expected a number above 0 and at most 1 (the share of each head's "
                   "dimensions that rotate)");
    c.rotary_pct = (float)f;
  }
  if (c.rotary_pct != 1.0f) {
    if (c.positional != Positional::Rotary) bad(src, "\"rotary_pct\" needs rotary positions");
    const int rd = c.rotaryDims();
    if (rd < 2 || rd % 2 != 0)
      bad(src, "\"rotary_pct\" " +
                   clipForMessage(j.value("rotary_pct", json(c.rotary_pct)).dump(), 40) +
                   " of d_k " + std::to_string(c.d_k) + " rotates " + std::to_string(rd) +
                   " dimensions; rotary positions rotate pairs: an even number from 2 is needed");
  }
  const int family_offset = c.position_offset;
  c.position_offset = getInt(j, "position_offset", src, 0, 1024, &family_offset);
  if (c.position_offset && c.positional != Positional::Learned)
    bad(src, "\"position_offset\" needs learned positions");
  c.positions_skip_pad = getBool(j, "positions_skip_pad", src, c.positions_skip_pad);
  c.max_len = configMaxLen(j, src, c.max_len);  // default 5000, or the family's
  {
    const int none = 0;
    c.local_window = getInt(j, "local_window", src, 0, ConfigLimits::kMaxLen, &none);
    if (c.local_window && !c.hasDecoder())
      bad(src, "\"local_window\" needs a decoder (causal self-attention)");
  }
  c.mask_fill = configMaskFill(j, src, c.mask_fill);
  c.layer_norm_eps = configEps(j, "layer_norm_eps", src, c.layer_norm_eps);
  c.embed_norm_eps =
      configEps(j, "embed_norm_eps", src,
                spec.defaults.embed_norm_eps > 0 ? c.embed_norm_eps : c.layer_norm_eps);

  if (c.hasCross()) {
    // The source markers default to the target's ids where the source vocabulary spells the same
    // tokens there (PyTorch's tutorial shares its specials); elsewhere the source has none — the
    // bundled reorder model's source ids 2 and 3 are the words "the" and "a", not markers.
    auto shared = [&](int id) {
      return id >= 0 && id < Vs && c.src_vocab[size_t(id)] == c.tgt_vocab[size_t(id)];
    };
    const int* sb = shared(c.bos_id) ? &c.bos_id : &none;
    const int* se = shared(c.eos_id) ? &c.eos_id : &none;
    c.src_bos_id = getId(j, "src_bos_id", src, -1, Vs, "source vocabulary", sb, "bos_id");
    c.src_eos_id = getId(j, "src_eos_id", src, -1, Vs, "source vocabulary", se, "eos_id");
    // The family default (wrap) holds when the source vocabulary has the target's start and end
    // tokens at the same ids, as the tutorial's shared special symbols are.
    const bool shared_markers = c.src_bos_id >= 0 && c.src_eos_id >= 0 &&
                                c.src_vocab[c.src_bos_id] == c.tgt_vocab[c.bos_id] &&
                                c.src_vocab[c.src_eos_id] == c.tgt_vocab[c.eos_id];
    c.src_bos_eos = getBool(j, "src_bos_eos", src, c.src_bos_eos && shared_markers);
    // A source with an end marker only (T5 appends </s>) has src_bos_id -1.
    if (c.src_bos_eos && c.src_eos_id < 0)
      bad(src, "\"src_bos_eos\" is true but the source vocabulary of " + std::to_string(Vs) +
                   " tokens has no end id (give src_eos_id, and src_bos_id unless -1: none)");
  } else {
    c.src_bos_eos = false;
  }
  c.src_padding_mask = getBool(j, "src_padding_mask", src, c.src_padding_mask);
  c.tgt_padding_mask = getBool(j, "tgt_padding_mask", src, c.tgt_padding_mask);
  if (j.contains("n_segments") || c.n_segments) {
    const int fallback = c.n_segments;
    c.n_segments = getInt(j, "n_segments", src, 0, ConfigLimits::kMaxSegments, &fallback);
    if (c.n_segments && !enc) bad(src, "\"n_segments\" needs an encoder");
  }
  if (c.classHead() != ClassHead::None) {
    const int fallback = 0;
    c.n_classes = getInt(j, "n_classes", src, 0, ConfigLimits::kMaxClasses, &fallback);
    if (j.contains("class_labels")) {
      c.class_labels = getVocab(j, "class_labels", src);
      if (c.n_classes == 0) c.n_classes = (int)c.class_labels.size();
      if ((int)c.class_labels.size() != c.n_classes)
        bad(src, "\"class_labels\" has " + std::to_string(c.class_labels.size()) + " names for " +
                     std::to_string(c.n_classes) + " classes");
    }
  }
  c.name = getString(j, "name", src, "");
  c.description = getString(j, "description", src, "");
  // Shown as a title and as text: a control character cannot be meant (a description may break
  // lines and hold tabs).
  if (size_t at = findControlChar(c.name); at != std::string::npos)
    bad(src, "\"name\" \"" + clipForMessage(c.name, 80) + "\" contains " +
                 describeControlChar(c.name, at));
  std::string text = c.description;
  std::replace_if(
      text.begin(), text.end(), [](char ch) { return ch == '\n' || ch == '\t'; }, ' ');
  if (size_t at = findControlChar(text); at != std::string::npos)
    bad(src, "\"description\" \"" + clipForMessage(c.description, 80) + "\" contains " +
                 describeControlChar(c.description, at));
  if (j.contains("examples")) {
    const json& ex = j["examples"];
    if (!ex.is_array()) bad(src, "\"examples\" is not an array");
    for (const auto& e : ex) {
      if (!e.is_object() || !e.contains("src") || !e["src"].is_string())
        bad(src, "\"examples\" entries must be objects with a string \"src\"");
      ExampleInput in;
      in.src = e["src"].get<std::string>();
      if (e.contains("tgt") && e["tgt"].is_string()) in.tgt = e["tgt"].get<std::string>();
      c.examples.push_back(std::move(in));
    }
  }
  if (c.positions_skip_pad) {
    const int pad = c.hasEncoder() ? c.src_pad_id : c.tgt_pad_id;
    if (c.positional != Positional::Learned || pad < 0 || c.position_offset != pad + 1)
      bad(src,
          "\"positions_skip_pad\" needs learned positions at \"position_offset\" pad id + 1 "
          "(RoBERTa: padding_idx + 1); here position_offset " +
              std::to_string(c.position_offset) + ", pad id " + std::to_string(pad));
  }
  return c;
}

json ModelConfig::toJson() const {
  json j;
  j["family"] = familyName(family);
  j["model"] = modelClassName(model);
  j["d_model"] = d_model;
  j["d_ff"] = d_ff;
  j["n_heads"] = n_heads;
  j["d_k"] = d_k;
  j["d_v"] = d_v;
  if (n_kv_heads && n_kv_heads != n_heads) j["n_kv_heads"] = n_kv_heads;
  if (custom) j["names_map"] = customArchitectureJson(*custom);
  if (hasEncoder()) {
    j["n_encoder_layers"] = n_encoder_layers;
    j["src_vocab"] = src_vocab;
    j["src_pad_id"] = src_pad_id;
    j["src_unk_id"] = src_unk_id;
  }
  if (hasDecoder()) {
    j["n_decoder_layers"] = n_decoder_layers;
    j["tgt_vocab"] = tgt_vocab;
    j["tgt_pad_id"] = tgt_pad_id;
    j["tgt_unk_id"] = tgt_unk_id;
  }
  j["bos_id"] = bos_id;
  j["eos_id"] = eos_id;
  j["norm"] = norm == NormPlacement::Post ? "post" : "pre";
  j["activation"] = activationName(activation);
  auto opt = [&](const char* key, const std::optional<bool>& v) {
    if (v) j[key] = *v;
  };
  opt("q_bias", q_bias);
  opt("k_bias", k_bias);
  opt("v_bias", v_bias);
  opt("out_bias", out_bias);
  opt("ffn_bias", ffn_bias);
  opt("proj_bias", proj_bias);
  j["final_norm"] = final_norm;
  j["embed_scale"] = embed_scale;
  j["embed_norm"] = embed_norm;
  j["embed_norm_eps"] = embed_norm_eps;
  j["positional"] = positionalName(positional);
  if (norm_kind != NormKind::LayerNorm) j["norm_kind"] = normKindName(norm_kind);
  if (positional == Positional::Rotary) {
    j["rope_theta"] = rope_theta;
    j["rope_layout"] = ropeLayoutName(rope_layout);
  }
  if (positional == Positional::Relative) {
    j["relative_buckets"] = relative_buckets;
    j["relative_max_distance"] = relative_max_distance;
  }
  if (attn_scale > 0.0f) j["attn_scale"] = attn_scale;
  if (output_scale) j["output_scale"] = true;
  if (tied_output) j["tied_output"] = *tied_output;
  if (gated_ffn) j["gated_ffn"] = true;
  if (parallel_residual) j["parallel_residual"] = true;
  if (sandwich_norms) j["sandwich_norms"] = true;
  if (attn_softcap > 0.0f) j["attn_softcap"] = attn_softcap;
  if (final_softcap > 0.0f) j["final_softcap"] = final_softcap;
  if (rotary_pct != 1.0f) j["rotary_pct"] = rotary_pct;
  if (position_offset) j["position_offset"] = position_offset;
  if (positions_skip_pad) j["positions_skip_pad"] = true;
  j["max_len"] = max_len;
  if (local_window) j["local_window"] = local_window;
  if (std::isinf(mask_fill))
    j["mask_fill"] = "-inf";
  else
    j["mask_fill"] = mask_fill;
  j["layer_norm_eps"] = layer_norm_eps;
  if (hasCross()) {
    j["src_bos_eos"] = src_bos_eos;
    j["src_bos_id"] = src_bos_id;
    j["src_eos_id"] = src_eos_id;
  }
  j["src_padding_mask"] = src_padding_mask;
  j["tgt_padding_mask"] = tgt_padding_mask;
  if (n_segments) j["n_segments"] = n_segments;
  if (classHead() != ClassHead::None) {
    j["n_classes"] = n_classes;
    if (!class_labels.empty()) j["class_labels"] = class_labels;
  }
  if (!name.empty()) j["name"] = name;
  if (!description.empty()) j["description"] = description;
  return j;
}

}  // namespace attnviz

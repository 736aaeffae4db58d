#include "config.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "error.h"
#include "json_safe.h"

namespace attnviz {

const char* familyName(Family f) {
  switch (f) {
    case Family::NlpTutorial:
      return "nlp-tutorial";
    case Family::Seed003:
      return "seed003";
    case Family::TorchSeq2Seq:
      return "torch-seq2seq";
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
  out.reserve(v.size());
  std::set<std::string> seen;
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
    if (!seen.insert(t).second)
      throw Error(ErrorKind::BadVocabulary, src + ": \"" + key + "\" has the token \"" + t +
                                                "\" twice (again at index " + std::to_string(i) +
                                                ")");
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

int64_t ModelConfig::parameterCount() const {
  auto lin = [](int64_t in, int64_t out, bool bias) { return in * out + (bias ? out : 0); };
  const int64_t d = d_model;
  int64_t attn = lin(d, attnWidth(), attn_bias) * 2 + lin(d, valueWidth(), attn_bias) +
                 lin(valueWidth(), d, attn_bias);
  int64_t ffn = lin(d, d_ff, ffn_bias) + lin(d_ff, d, ffn_bias);
  int64_t ln = 2 * d;
  int64_t enc = n_encoder_layers * (attn + ffn + 2 * ln);
  int64_t dec = n_decoder_layers * (2 * attn + ffn + 3 * ln);
  int64_t emb = (int64_t)(src_vocab.size() + tgt_vocab.size()) * d;
  int64_t pos = positional == Positional::Learned ? 2 * (int64_t)max_len * d : 0;
  return enc + dec + emb + pos + lin(d, (int64_t)tgt_vocab.size(), false) +
         (final_norm ? 2 * ln : 0);
}

ModelConfig ModelConfig::fromJson(const json& j, const std::string& src) {
  if (!j.is_object()) bad(src, "config is " + jsonTypeName(j) + ", expected an object");
  ModelConfig c;
  const std::string fam = getString(j, "family", src, "", true);
  if (fam == "nlp-tutorial")
    c.family = Family::NlpTutorial;
  else if (fam == "seed003")
    c.family = Family::Seed003;
  else if (fam == "torch-seq2seq")
    c.family = Family::TorchSeq2Seq;
  else
    bad(src, "\"family\" is \"" + clipForMessage(fam, 40) +
                 "\", expected nlp-tutorial, seed003 or torch-seq2seq");

  // Family defaults (docs/formats.md).
  switch (c.family) {
    case Family::NlpTutorial:
      c.activation = Activation::Relu;
      c.attn_bias = c.ffn_bias = c.final_norm = c.embed_scale = false;
      c.mask_fill = -1e9f;
      break;
    case Family::Seed003:
      c.activation = Activation::GeluTanh;
      c.attn_bias = c.ffn_bias = true;
      c.final_norm = c.embed_scale = false;
      c.mask_fill = -1e9f;
      break;
    case Family::TorchSeq2Seq:
      c.activation = Activation::Relu;
      c.attn_bias = c.ffn_bias = c.final_norm = c.embed_scale = true;
      c.mask_fill = -std::numeric_limits<float>::infinity();
      break;
  }

  const int W = ConfigLimits::kMaxWidth;
  c.d_model = getInt(j, "d_model", src, 1, W);
  c.d_ff = getInt(j, "d_ff", src, 1, W);
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
  if (c.family == Family::TorchSeq2Seq && (c.d_k * c.n_heads != c.d_model || c.d_v != c.d_k))
    bad(src,
        "torch-seq2seq (nn.MultiheadAttention) needs d_k = d_v = d_model / n_heads, found d_k " +
            std::to_string(c.d_k) + ", d_v " + std::to_string(c.d_v));
  c.n_encoder_layers = getInt(j, "n_encoder_layers", src, 1, ConfigLimits::kMaxLayers);
  c.n_decoder_layers = getInt(j, "n_decoder_layers", src, 1, ConfigLimits::kMaxLayers);
  c.src_vocab = getVocab(j, "src_vocab", src);
  c.tgt_vocab = getVocab(j, "tgt_vocab", src);
  const int Vs = (int)c.src_vocab.size(), Vt = (int)c.tgt_vocab.size();
  const int zero = 0;
  const int Vmax = std::max(Vs, Vt);
  const int pad = getId(j, "pad_id", src, 0, Vmax, "larger vocabulary", &zero);
  c.src_pad_id = getId(j, "src_pad_id", src, 0, Vs, "source vocabulary", &pad, "pad_id");
  c.tgt_pad_id = getId(j, "tgt_pad_id", src, 0, Vt, "target vocabulary", &pad, "pad_id");
  c.bos_id = getId(j, "bos_id", src, 0, Vt, "target vocabulary");
  c.eos_id = getId(j, "eos_id", src, 0, Vt, "target vocabulary");
  const int none = -1;
  const int unk = getId(j, "unk_id", src, -1, Vmax, "larger vocabulary", &none);
  c.src_unk_id = getId(j, "src_unk_id", src, -1, Vs, "source vocabulary", unk < Vs ? &unk : &none);
  c.tgt_unk_id = getId(j, "tgt_unk_id", src, -1, Vt, "target vocabulary", unk < Vt ? &unk : &none);

  const std::string norm = getString(j, "norm", src, "post");
  if (norm == "post")
    c.norm = NormPlacement::Post;
  else if (norm == "pre")
    c.norm = NormPlacement::Pre;
  else
    bad(src, "\"norm\" is \"" + clipForMessage(norm, 40) + "\", expected post or pre");
  if (j.contains("activation")) {
    const std::string a = getString(j, "activation", src, "");
    if (a == "relu")
      c.activation = Activation::Relu;
    else if (a == "gelu")
      c.activation = Activation::Gelu;
    else if (a == "gelu_tanh")
      c.activation = Activation::GeluTanh;
    else
      bad(src,
          "\"activation\" is \"" + clipForMessage(a, 40) + "\", expected relu, gelu or gelu_tanh");
  }
  c.attn_bias = getBool(j, "attn_bias", src, c.attn_bias);
  c.ffn_bias = getBool(j, "ffn_bias", src, c.ffn_bias);
  c.final_norm = getBool(j, "final_norm", src, c.final_norm);
  c.embed_scale = getBool(j, "embed_scale", src, c.embed_scale);
  const std::string pos = getString(j, "positional", src, "sinusoidal");
  if (pos == "sinusoidal")
    c.positional = Positional::Sinusoidal;
  else if (pos == "learned")
    c.positional = Positional::Learned;
  else
    bad(src,
        "\"positional\" is \"" + clipForMessage(pos, 40) + "\", expected sinusoidal or learned");
  const int default_len = 5000;
  c.max_len = getInt(j, "max_len", src, 2, ConfigLimits::kMaxLen, &default_len);
  if (j.contains("mask_fill")) {
    const json& m = j["mask_fill"];
    if (m.is_string() && m.get<std::string>() == "-inf") {
      c.mask_fill = -std::numeric_limits<float>::infinity();
    } else if (m.is_number()) {
      double v = m.get<double>();
      if (!(v <= -1.0) || !std::isfinite(v) || v < -3.0e38)
        bad(src, "\"mask_fill\" is " + m.dump() + ", expected a large negative number or \"-inf\"");
      c.mask_fill = static_cast<float>(v);
    } else {
      bad(src, "\"mask_fill\" is " + m.dump().substr(0, 40) + ", expected a number or \"-inf\"");
    }
  }
  if (j.contains("layer_norm_eps")) {
    const json& e = j["layer_norm_eps"];
    if (!e.is_number() || !(e.get<double>() > 0) || e.get<double>() > 1)
      bad(src, "\"layer_norm_eps\" is " + e.dump().substr(0, 40) + ", expected a number in (0, 1]");
    c.layer_norm_eps = static_cast<float>(e.get<double>());
  }
  c.name = getString(j, "name", src, "");
  c.description = getString(j, "description", src, "");
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
  return c;
}

json ModelConfig::toJson() const {
  json j;
  j["family"] = familyName(family);
  j["d_model"] = d_model;
  j["d_ff"] = d_ff;
  j["n_heads"] = n_heads;
  j["d_k"] = d_k;
  j["d_v"] = d_v;
  j["n_encoder_layers"] = n_encoder_layers;
  j["n_decoder_layers"] = n_decoder_layers;
  j["src_vocab"] = src_vocab;
  j["tgt_vocab"] = tgt_vocab;
  j["src_pad_id"] = src_pad_id;
  j["tgt_pad_id"] = tgt_pad_id;
  j["bos_id"] = bos_id;
  j["eos_id"] = eos_id;
  j["src_unk_id"] = src_unk_id;
  j["tgt_unk_id"] = tgt_unk_id;
  j["norm"] = norm == NormPlacement::Post ? "post" : "pre";
  j["activation"] = activationName(activation);
  j["attn_bias"] = attn_bias;
  j["ffn_bias"] = ffn_bias;
  j["final_norm"] = final_norm;
  j["embed_scale"] = embed_scale;
  j["positional"] = positional == Positional::Sinusoidal ? "sinusoidal" : "learned";
  j["max_len"] = max_len;
  if (std::isinf(mask_fill))
    j["mask_fill"] = "-inf";
  else
    j["mask_fill"] = mask_fill;
  j["layer_norm_eps"] = layer_norm_eps;
  if (!name.empty()) j["name"] = name;
  if (!description.empty()) j["description"] = description;
  return j;
}

}  // namespace attnviz

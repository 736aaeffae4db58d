#include "arch/infer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <set>

#include "base/error.h"
#include "base/json_safe.h"
#include "base/safe_text.h"
#include "io/meta_pkl.h"
#include "text/char_tokenizer.h"
#include "text/tokenizer_files.h"
#include "text/vocab_files.h"

namespace attnviz {

namespace {

// The tensors of `file` as seen with `prefix` taken off (PrefixedSource's view, without copying):
// a name under the prefix is found without it, a name outside it as it is.
const TensorInfo* lookup(const TensorSource& file, const std::string& prefix,
                         const std::string& name) {
  if (prefix.empty()) return file.find(name);
  if (const TensorInfo* t = file.find(prefix + name)) return t;
  return name.rfind(prefix, 0) == 0 ? nullptr : file.find(name);
}

// A fused Q/K/V weight has 3 (or more) times as many outputs as inputs: [3C, C], or [C, 3C]
// stored transposed. Tells nanoGPT's c_attn from Hugging Face GPT-2's, which share the name.
bool plausible(const TensorName& t, const TensorInfo& info) {
  if (t.role != Role::AttnQkv && t.role != Role::CrossQkv) return true;
  if (info.shape.size() != 2) return false;
  const int64_t out = info.shape[(t.flags & kTransposed) ? 1 : 0];
  const int64_t in = info.shape[(t.flags & kTransposed) ? 0 : 1];
  return out > in;
}

const TensorName* present(const TensorSource& file, const std::string& prefix, const ArchSpec& spec,
                          Part part, Role role, int layer) {
  for (const TensorName* t : spec.spellings(part, role)) {
    const TensorInfo* info = lookup(file, prefix, expandName(t->weight, layer, 0));
    if (info && plausible(*t, *info)) return t;
  }
  return nullptr;
}

std::vector<Part> partsOf(const ArchSpec& spec) {
  std::vector<Part> p;
  if (spec.hasEncoder()) p.push_back(Part::Encoder);
  if (spec.hasDecoder()) p.push_back(Part::Decoder);
  return p;
}

// The roles that identify an architecture: each stack's token table and first attention block
// (the cross-attention too), a required embedding norm, the class head. Each group is satisfied by
// any of its roles.
struct RoleGroup {
  Part part;
  std::vector<Role> roles;
};
std::vector<RoleGroup> requiredRoles(const ArchSpec& spec) {
  std::vector<RoleGroup> g;
  for (Part p : partsOf(spec)) {
    g.push_back({p, {Role::TokenEmbd}});
    g.push_back({p, {Role::AttnQ, Role::AttnQkv}});
    if (p == Part::Decoder && spec.hasCross()) g.push_back({p, {Role::CrossQ, Role::CrossQkv}});
    const auto norms = spec.spellings(p, Role::EmbdNorm);
    if (spec.defaults.embed_norm && !norms.empty() && !(norms.front()->flags & kOptional))
      g.push_back({p, {Role::EmbdNorm}});
  }
  if (spec.class_head != ClassHead::None) g.push_back({Part::Head, {Role::Classifier}});
  return g;
}

// The required roles the file lacks under `prefix`, each with its expected name.
std::vector<std::string> missingRoles(const TensorSource& file, const std::string& prefix,
                                      const ArchSpec& spec) {
  std::vector<std::string> out;
  for (const RoleGroup& g : requiredRoles(spec)) {
    bool found = false;
    for (Role r : g.roles) found = found || present(file, prefix, spec, g.part, r, 0);
    if (found) continue;
    // The role of the group the descriptor spells (nanoGPT's attention is attn_qkv, not attn_q).
    Role shown = g.roles.front();
    for (Role r : g.roles)
      if (spec.has(g.part, r)) {
        shown = r;
        break;
      }
    const auto names = spec.spellings(g.part, shown);
    std::string role = roleName(shown);
    if (g.part != Part::Head && spec.hasCross()) role = std::string(partName(g.part)) + " " + role;
    out.push_back(
        role + (names.empty() ? std::string() : " (" + expandName(names.front()->weight, 0) + ")"));
  }
  return out;
}

// How many of the file's tensors the descriptor's names (and ignored buffers) explain.
int explained(const TensorSource& file, const std::string& prefix, const ArchSpec& spec,
              size_t max_tensors = 1u << 20) {
  std::vector<const std::string*> patterns;
  for (const auto& t : spec.names) {
    patterns.push_back(&t.weight);
    if (!t.bias.empty()) patterns.push_back(&t.bias);
  }
  for (const auto& i : spec.ignored) patterns.push_back(&i);
  int n = 0;
  size_t seen = 0;
  for (const auto& t : file.tensors()) {
    if (++seen > max_tensors) break;
    const std::string name =
        !prefix.empty() && t.name.rfind(prefix, 0) == 0 ? t.name.substr(prefix.size()) : t.name;
    for (const std::string* p : patterns)
      if (matchesName(*p, name)) {
        ++n;
        break;
      }
  }
  return n;
}

std::string describeArg(const nlohmann::json& v);

// Prefixes under which the file holds the descriptor's token table: "" or ending with '.'.
std::vector<std::string> anchorPrefixes(const TensorSource& file, const ArchSpec& spec) {
  std::set<std::string> out;
  const std::vector<Part> parts = partsOf(spec);
  if (parts.empty()) return {};
  for (const TensorName* anchor : spec.spellings(parts.front(), Role::TokenEmbd)) {
    const std::string& a = anchor->weight;
    for (const auto& t : file.tensors()) {
      if (t.name.size() < a.size() || t.name.compare(t.name.size() - a.size(), a.size(), a) != 0)
        continue;
      const std::string p = t.name.substr(0, t.name.size() - a.size());
      if (p.empty() || p.back() == '.') out.insert(p);
    }
  }
  return {out.begin(), out.end()};
}

// Whether the checkpoint holds the args dict the descriptor reads; one of another type is refused.
bool hasArgs(const TensorSource& file, const ArchSpec& spec) {
  if (spec.args_key.empty()) return false;
  const nlohmann::json& a = file.arguments();
  if (!a.is_object() || !a.contains(spec.args_key)) return false;
  const nlohmann::json& v = a[spec.args_key];
  if (!v.is_object() || v.contains("python"))
    throw Error(ErrorKind::BadConfig, file.path() + ": the checkpoint's \"" + spec.args_key +
                                          "\" is " + describeArg(v) + ", expected a dict of " +
                                          spec.summary() + "'s settings (" + spec.args.front().key +
                                          ", …)");
  return true;
}

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int k = 1; k <= n; ++k)
    if (n % k == 0) d.push_back(k);
  return d;
}

// Guesses a special token's id from the vocabulary's spelling of it.
int findToken(const std::vector<std::string>& vocab, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    auto it = std::find(vocab.begin(), vocab.end(), n);
    if (it != vocab.end()) return (int)(it - vocab.begin());
  }
  return -1;
}

std::string shapeText(const TensorInfo* t) {
  return t ? shapeToString(t->shape) : std::string("?");
}

// A value of the args for messages: what it is and, for a short one, its text.
std::string describeArg(const nlohmann::json& v) {
  if (v.is_object() && v.contains("python") && v["python"].is_string())
    return v["python"].get<std::string>();
  if (v.is_number_float() && !std::isfinite(v.get<double>()))
    return std::isnan(v.get<double>()) ? "nan" : (v.get<double>() > 0 ? "inf" : "-inf");
  const char* type = v.is_string()           ? "a string "
                     : v.is_boolean()        ? "a bool "
                     : v.is_number_integer() ? "an integer "
                     : v.is_number_float()   ? "a float "
                     : v.is_null()           ? ""
                                             : "";
  return type + clipForMessage(v.dump(), 40);
}

// An activation's name in Hugging Face's spelling (or attnviz's), as attnviz's.
const char* activationFromHf(const std::string& name) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"swish", "silu"},         {"silu", "silu"},          {"gelu", "gelu"},
      {"relu", "relu"},          {"gelu_new", "gelu_tanh"}, {"gelu_pytorch_tanh", "gelu_tanh"},
      {"gelu_tanh", "gelu_tanh"}};
  for (const auto& [hf, ours] : kNames)
    if (name == hf) return ours;
  return nullptr;
}

// What the args state, as attnviz's config keys (type-checked; wrong types refused).
nlohmann::json readArgs(const ArchSpec& spec, const nlohmann::json& args, const std::string& where,
                        const std::string& file, std::vector<std::string>& facts) {
  nlohmann::json out = nlohmann::json::object();
  auto refuse = [&](const ArgKey& k, const std::string& expected) {
    throw Error(ErrorKind::BadConfig, file + ": " + where + "[\"" + k.key + "\"] is " +
                                          describeArg(args[k.key]) + ", expected " + expected +
                                          " (" + spec.summary() + ")");
  };
  for (const ArgKey& k : spec.args) {
    if (!args.contains(k.key)) continue;
    const nlohmann::json& v = args[k.key];
    switch (k.kind) {
      case ArgKind::Int: {
        if (v.is_null()) continue;
        // A list of ids (Llama 3's eos_token_id): the first.
        const nlohmann::json& n = v.is_array() && !v.empty() && v[0].is_number_integer() ? v[0] : v;
        if (!n.is_number_integer()) refuse(k, "an integer");
        if (n.get<int64_t>() < -1 || n.get<int64_t>() > (1 << 30))
          refuse(k, "an integer from -1 to 2^30");
        if (!k.config.empty()) {
          out[k.config] = n;
          facts.push_back(k.config + " " + n.dump() + " (" + where + "[\"" + k.key + "\"])");
        }
        continue;
      }
      case ArgKind::Number:
        if (v.is_null()) continue;
        if (!v.is_number()) refuse(k, "a number");
        if (!std::isfinite(v.get<double>())) refuse(k, "a finite number");
        break;
      case ArgKind::InverseSqrt: {
        if (v.is_null()) continue;
        if (!v.is_number() || !std::isfinite(v.get<double>()) || !(v.get<double>() > 0.0))
          refuse(k, "a positive number");
        const double s = 1.0 / std::sqrt(v.get<double>());
        if (!k.config.empty()) out[k.config] = s;
        facts.push_back(k.config + " " + clipForMessage(nlohmann::json(s).dump(), 40) +
                        " (1/\u221a" + where + "[\"" + k.key + "\"])");
        continue;
      }
      case ArgKind::Bool:
        if (v.is_null()) continue;
        if (!v.is_boolean()) refuse(k, "true or false");
        break;
      case ArgKind::Activation: {
        if (v.is_null()) continue;
        if (!v.is_string()) refuse(k, "an activation's name");
        const char* ours = activationFromHf(v.get<std::string>());
        if (!ours)
          refuse(k, "one attnviz computes (silu/swish, gelu, gelu_new, gelu_pytorch_tanh, relu)");
        if (!k.config.empty()) out[k.config] = ours;
        facts.push_back(std::string("activation ") + ours + " (" + where + "[\"" + k.key + "\"])");
        continue;
      }
      case ArgKind::Refused: {
        if (v.is_null()) continue;
        if (!k.value.empty()) {
          const nlohmann::json accepted = nlohmann::json::parse(k.value);
          if (v == accepted) continue;
          // A list per layer (Qwen2's layer_types): each item the one value.
          if (v.is_array() && !accepted.is_array() &&
              std::all_of(v.begin(), v.end(), [&](const auto& e) { return e == accepted; }))
            continue;
        }
        throw Error(ErrorKind::BadConfig,
                    file + ": " + where + "[\"" + k.key + "\"] is " + describeArg(v) +
                        ": attnviz reproduces " +
                        (k.value.empty() ? std::string("only its absence") : "only " + k.value) +
                        " (" + spec.summary() + ")");
      }
      case ArgKind::Ignored:
        continue;
    }
    if (!k.config.empty()) {
      out[k.config] = v;
      facts.push_back(k.config + " " + clipForMessage(v.dump(), 40) + " (" + where + "[\"" + k.key +
                      "\"])");
    }
  }
  return out;
}

int shapeDim(const TensorInfo* t, int i) {
  return t && (int)t->shape.size() > i ? (int)std::min<int64_t>(t->shape[i], 1 << 30) : 0;
}

}  // namespace

const TensorName* presentSpelling(const TensorSource& file, const ArchSpec& spec, Part part,
                                  Role role, int layer) {
  return present(file, "", spec, part, role, layer);
}

int countLayers(const TensorSource& file, const ArchSpec& spec, Part part) {
  int count = 0;
  for (; count < (1 << 20); ++count) {
    bool any = false;
    for (const auto& t : spec.names)
      if (t.part == part && isLayerRole(t.role) && file.contains(expandName(t.weight, count, 0))) {
        any = true;
        break;
      }
    if (!any) break;
  }
  return count;
}

std::string FamilyGuess::summary() const {
  std::string s = spec ? spec->summary() : std::string("?");
  if (!prefix.empty()) s += " (prefix \"" + clipForMessage(prefix, 60) + "\" stripped)";
  return s;
}

std::vector<FamilyGuess> guessFamilies(const TensorSource& file) {
  std::vector<FamilyGuess> out;
  for (const ArchSpec& spec : architectures()) {
    const bool args = hasArgs(file, spec);
    if (!spec.args_key.empty() && !args) continue;  // its tensors alone cannot tell it
    for (const auto& p : anchorPrefixes(file, spec)) {
      if (!missingRoles(file, p, spec).empty()) continue;
      FamilyGuess g;
      g.spec = &spec;
      g.prefix = p;
      g.named = explained(file, p, spec);
      g.total = (int)file.tensors().size();
      g.args = args;
      out.push_back(g);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const FamilyGuess& a, const FamilyGuess& b) {
    if (a.args != b.args) return a.args;
    return a.named != b.named ? a.named > b.named : a.prefix.size() < b.prefix.size();
  });
  return out;
}

std::string familyPrefix(const TensorSource& file, const ArchSpec& spec) {
  std::string best;
  bool found = false;
  for (const auto& p : anchorPrefixes(file, spec))
    if (missingRoles(file, p, spec).empty() && (!found || p.size() < best.size())) {
      best = p;
      found = true;
    }
  return best;
}

ClosestArchitecture closestArchitecture(const TensorSource& file) {
  // Prefixes worth trying: none, and the first one or two components of the names.
  std::set<std::string> prefixes = {""};
  size_t seen = 0;
  for (const auto& t : file.tensors()) {
    if (++seen > 4096 || prefixes.size() > 16) break;
    const size_t a = t.name.find('.');
    if (a == std::string::npos) continue;
    prefixes.insert(t.name.substr(0, a + 1));
    const size_t b = t.name.find('.', a + 1);
    if (b != std::string::npos && b + 1 < t.name.size()) prefixes.insert(t.name.substr(0, b + 1));
  }
  ClosestArchitecture best;
  int best_missing = 1 << 30;
  for (const ArchSpec& spec : architectures())
    for (const auto& p : prefixes) {
      const int n = explained(file, p, spec, 4096);
      std::vector<std::string> missing = missingRoles(file, p, spec);
      const int m = (int)missing.size();
      if (n > best.named || (n == best.named && n > 0 && m < best_missing)) {
        best.spec = &spec;
        best.prefix = p;
        best.named = n;
        best.missing_roles = std::move(missing);
        best_missing = m;
      }
    }
  return best;
}

PrefixedSource::PrefixedSource(const TensorSource& base, std::string prefix)
    : base_(base), prefix_(std::move(prefix)) {
  for (const auto& t : base_.tensors()) {
    TensorInfo v = t;
    if (!prefix_.empty() && v.name.rfind(prefix_, 0) == 0) v.name = v.name.substr(prefix_.size());
    if (index_.count(v.name)) v.name = t.name;  // two names would collide: keep the original
    index_.emplace(v.name, tensors_.size());
    tensors_.push_back(std::move(v));
  }
}

const TensorInfo* PrefixedSource::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Tensor PrefixedSource::toFloat(const TensorInfo& info) const {
  // The base knows the tensor by its full name: find it by its position.
  const size_t i = (size_t)(&info - tensors_.data());
  if (i >= tensors_.size()) return base_.toFloat(info);
  return base_.toFloat(base_.tensors()[i]);
}

nlohmann::json UserSupplied::toJson() const {
  nlohmann::json j = nlohmann::json::object();
  if (family) j["family"] = *family;
  if (model) j["model"] = *model;
  if (!names_map.is_null()) j["names_map"] = names_map;
  if (n_heads) j["n_heads"] = *n_heads;
  if (pad_id) j["pad_id"] = *pad_id;
  if (bos_id) j["bos_id"] = *bos_id;
  if (eos_id) j["eos_id"] = *eos_id;
  if (norm) j["norm"] = *norm;
  if (activation) j["activation"] = *activation;
  if (!vocab_file.empty()) {
    j["vocab_file"] = vocab_file;
  } else {
    if (!src_vocab.empty()) j["src_vocab"] = src_vocab;
    if (!tgt_vocab.empty()) j["tgt_vocab"] = tgt_vocab;
  }
  return j;
}

void supplyVocabulary(UserSupplied& u, const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  if (std::filesystem::path(path).extension() == ".pkl") {
    u.src_vocab = readNanoGptMeta(path);
    u.tokenizer = openCharTokenizer(u.src_vocab, name);
  } else {
    TokenizerFiles t = openTokenizerFile(path, -1);
    u.src_vocab = std::move(t.tokens);
    u.tokenizer = t.tokenizer;
  }
  u.tgt_vocab = u.src_vocab;
  u.vocab_file = std::filesystem::absolute(path).lexically_normal().string();
}

UserSupplied UserSupplied::fromJson(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object()) throw Error(ErrorKind::BadConfig, what + ": expected a JSON object");
  UserSupplied u;
  auto integer = [&](const char* key) -> std::optional<int> {
    if (!j.contains(key)) return std::nullopt;
    if (!j[key].is_number_integer() || j[key].get<int64_t>() < -1 ||
        j[key].get<int64_t>() > ConfigLimits::kMaxVocab)
      throw Error(ErrorKind::BadConfig, what + ": \"" + key + "\" is not a valid id or count");
    return (int)j[key].get<int64_t>();
  };
  u.n_heads = integer("n_heads");
  u.pad_id = integer("pad_id");
  u.bos_id = integer("bos_id");
  u.eos_id = integer("eos_id");
  auto oneOf = [&](const char* key,
                   std::initializer_list<const char*> allowed) -> std::optional<std::string> {
    if (!j.contains(key)) return std::nullopt;
    std::string names;
    for (const char* a : allowed) {
      if (j[key].is_string() && j[key].get<std::string>() == a) return std::string(a);
      names += std::string(names.empty() ? "" : ", ") + a;
    }
    throw Error(ErrorKind::BadConfig, what + ": \"" + key + "\" is not one of " + names + " (got " +
                                          clipForMessage(j[key].dump(), 40) + ")");
  };
  u.norm = oneOf("norm", {"post", "pre"});
  u.activation = oneOf("activation", {"relu", "gelu", "gelu_tanh", "silu"});
  for (const char* key : {"src_vocab", "tgt_vocab"}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_array())
      throw Error(ErrorKind::BadConfig, what + ": \"" + key + "\" is not a list");
    std::vector<std::string>& v = std::string(key) == "src_vocab" ? u.src_vocab : u.tgt_vocab;
    for (const auto& t : j[key]) {
      if (!t.is_string()) throw Error(ErrorKind::BadConfig, what + ": a token is not a string");
      v.push_back(t.get<std::string>());
    }
  }
  if (j.contains("vocab_file")) {
    if (!j["vocab_file"].is_string() || j["vocab_file"].get<std::string>().empty())
      throw Error(ErrorKind::BadConfig, what + ": \"vocab_file\" is not a file's path");
    supplyVocabulary(u, j["vocab_file"].get<std::string>());
  }
  if (j.contains("family")) {
    const ArchSpec* a =
        j["family"].is_string() ? findArchitecture(j["family"].get<std::string>()) : nullptr;
    if (!a)
      throw Error(ErrorKind::BadConfig, what + ": \"family\" is not one of " + familyList() +
                                            " (got " + clipForMessage(j["family"].dump(), 40) +
                                            ")");
    u.family = a->family;
  }
  if (j.contains("model")) {
    std::string classes;
    for (const auto& a : architectures())
      if (!u.family || a.family == *u.family) {
        if (j["model"].is_string() && a.model == j["model"].get<std::string>()) u.model = a.model;
        classes += (classes.empty() ? "" : ", ") + a.model;
      }
    if (!u.model)
      throw Error(ErrorKind::BadConfig, what + ": \"model\" is not one of " + classes + " (got " +
                                            clipForMessage(j["model"].dump(), 40) + ")");
  }
  if (j.contains("names_map")) {
    customArchitecture(j["names_map"], what + " names_map");  // checked now, kept as written
    u.names_map = j["names_map"];
  }
  return u;
}

std::string Inference::explain() const {
  std::string s = "the tensor names follow " + guess.summary() + "; read from the tensors:";
  for (const auto& f : facts) s += "\n  " + f;
  if (!missing.empty()) {
    s += "\nwhat the tensors cannot tell:";
    for (const auto& q : missing) {
      s += "\n  " + q.key + ": " + q.why;
      if (!q.choices.empty()) {
        std::string c;
        for (size_t i = 0; i < q.choices.size() && i < 16; ++i)
          c += (i ? ", " : "") + std::to_string(q.choices[i]);
        s += " (one of " + c + (q.choices.size() > 16 ? ", …" : "") + ")";
      }
      if (q.id_end > 0)
        s += " (" + std::string(q.id_lowest < 0 ? "-1 for none, or " : "") + "0 to " +
             std::to_string(q.id_end - 1) + ")";
    }
  }
  return s;
}

namespace {

// The refusal of a file whose names follow no architecture: the closest and what it lacks.
[[noreturn]] void refuseUnknown(const TensorSource& file) {
  std::string known;
  for (const ArchSpec& a : architectures()) {
    const auto anchor =
        a.spellings(a.hasEncoder() ? Part::Encoder : Part::Decoder, Role::TokenEmbd);
    known += std::string(known.empty() ? "" : ", ") + a.summary() + " (" +
             (anchor.empty() ? std::string("?") : anchor.front()->weight) + ")";
  }
  std::string sample;
  for (size_t i = 0; i < file.tensors().size() && i < 4; ++i)
    sample += std::string(i ? ", " : "") + "\"" + clipForMessage(file.tensors()[i].name, 60) + "\"";
  std::string closest;
  const ClosestArchitecture c = closestArchitecture(file);
  if (c.spec && c.named > 0) {
    std::string roles;
    for (size_t i = 0; i < c.missing_roles.size() && i < 6; ++i)
      roles += (i ? ", " : "") + c.missing_roles[i];
    closest =
        ". Closest: " + c.spec->summary() +
        (c.prefix.empty() ? std::string() : " under \"" + clipForMessage(c.prefix, 40) + "\"") +
        ", whose names match " + std::to_string(c.named) + " of its tensors" +
        (roles.empty() ? std::string() : " but not " + roles);
  }
  // The closest architecture and the way out first; the whole table last.
  throw UnknownNamesError(file.path() + ": the tensor names (" + sample +
                              (file.tensors().size() > 4 ? ", …" : "") +
                              ") follow none of the tutorials attnviz knows" + closest +
                              ". A map of your own names to their roles opens it (docs/formats.md "
                              "\"Your own names\"), and so does a config. The architectures "
                              "known, by their token table's name: " +
                              known,
                          c);
}

}  // namespace

Inference inferConfig(const TensorSource& file, const UserSupplied& supplied,
                      const nlohmann::json* hf_config) {
  Inference inf;
  std::shared_ptr<const ArchSpec> custom;
  if (!supplied.names_map.is_null()) {
    custom = customArchitecture(supplied.names_map, "the names map");
    inf.guess.spec = custom.get();
    inf.guess.own = custom;  // the Inference outlives this call (MissingInfoError, the dialog)
    inf.guess.prefix = familyPrefix(file, *custom);
    inf.guess.total = (int)file.tensors().size();
  } else if (supplied.family) {
    // The user named the family (and maybe the class): take the best guess of it, or its naming
    // without a prefix.
    const ArchSpec* spec = findArchitecture(*supplied.family, supplied.model.value_or(""));
    if (!spec) spec = findArchitecture(*supplied.family);
    if (!spec)
      throw Error(ErrorKind::BadConfig, "\"" + clipForMessage(*supplied.family, 40) +
                                            "\" is not a family attnviz knows: " + familyList());
    inf.guess.spec = spec;
    bool found = false;
    for (const FamilyGuess& g : guessFamilies(file))
      if (g.spec->family == spec->family && (!supplied.model || g.spec == spec)) {
        inf.guess = g;
        found = true;
        break;
      }
    if (!found) {
      inf.guess.prefix = familyPrefix(file, *spec);
      inf.guess.total = (int)file.tensors().size();
    }
  } else {
    const std::vector<FamilyGuess> guesses = guessFamilies(file);
    if (guesses.empty()) refuseUnknown(file);
    inf.guess = guesses.front();
  }
  const FamilyGuess& g = inf.guess;
  const ArchSpec& spec = *g.spec;
  // T5's tensors cannot tell its feed-forward's activation, the bucketing of its relative
  // positions nor whether lm_head is read × d_model^-0.5: only its config.json can.
  if (spec.defaults.positional == Positional::Relative && !hf_config)
    throw Error(ErrorKind::BadConfig,
                file.path() + ": the tensors are " + spec.summary() +
                    "'s, whose activation, relative position buckets and tied head only its "
                    "config.json states; open the save_pretrained folder with its config.json");
  // mBART's, Pegasus's and M2M100's tensors are named as BART's and Marian's (a final layer_norm
  // added): where each norm sits and how positions are counted only config.json states.
  const std::string& type = spec.hf_model_type;
  if ((type == "mbart" || type == "pegasus" || type == "m2m_100") && !hf_config)
    throw Error(ErrorKind::BadConfig,
                file.path() + ": the tensors are " + spec.summary() +
                    "'s, whose norm placement, positions and embedding scale only its "
                    "config.json states; open the save_pretrained folder with its config.json");
  if ((type == "bart" || type == "marian") && !hf_config) {
    if (const TensorName* n = present(file, g.prefix, spec, Part::Encoder, Role::FinalNorm, 0))
      throw Error(ErrorKind::BadConfig,
                  file.path() + ": " + g.prefix + n->weight + " is a final layer norm, which " +
                      spec.hf_classes.front() +
                      " has not; the tensors may be a pre-norm model's (mBART, Pegasus, "
                      "M2M100) named alike: open the save_pretrained folder with its "
                      "config.json");
  }
  const PrefixedSource view(file, g.prefix);
  auto info = [&](const std::string& name) { return view.find(name); };
  auto fact = [&](const std::string& s) { inf.facts.push_back(s); };
  // The spelling of a role the file holds (at layer 0), else its first: what to read sizes from.
  auto spelling = [&](Part p, Role r, int layer = 0) -> const TensorName* {
    if (const TensorName* t = present(view, "", spec, p, r, layer)) return t;
    const auto all = spec.spellings(p, r);
    return all.empty() ? nullptr : all.front();
  };
  auto tensor = [&](Part p, Role r, int layer = 0) -> const TensorInfo* {
    const TensorName* t = present(view, "", spec, p, r, layer);
    return t ? info(expandName(t->weight, layer, 0)) : nullptr;
  };
  auto nameOf = [&](Part p, Role r, int layer = 0) {
    const TensorName* t = spelling(p, r, layer);
    return t ? g.prefix + expandName(t->weight, layer, 0) : std::string("?");
  };

  if (custom) {
    // A role the map names is the user's word that the file holds it: a name the file lacks is
    // refused here, not read as a model without that part (an attention-only one, say).
    std::string absent;
    for (const TensorName& t : spec.names) {
      if (!(t.flags & kFromMap) || view.find(expandName(t.weight, 0, 0))) continue;
      const std::string role = (spec.arch == Architecture::EncoderDecoder && t.part != Part::Head
                                    ? std::string(partName(t.part)) + "."
                                    : std::string()) +
                               roleName(t.role);
      absent += (absent.empty() ? "" : ", ") + role + " (" +
                clipForMessage(g.prefix + expandName(t.weight, 0, 0), 80) + ")";
    }
    if (!absent.empty())
      throw Error(ErrorKind::MissingTensor,
                  file.path() + ": the names map names tensors the file does not hold: " + absent +
                      " (docs/formats.md \"Your own names\")");
  }
  nlohmann::json& c = inf.config;
  if (custom) {
    c["family"] = "custom";
    c["names_map"] = supplied.names_map;
  } else {
    c["family"] = spec.family;
    c["model"] = spec.model;
  }
  const bool enc = spec.hasEncoder(), dec = spec.hasDecoder();
  const Part first = enc ? Part::Encoder : Part::Decoder;

  // What the file states beside its tensors.
  nlohmann::json args = nlohmann::json::object();
  if (hf_config) {
    inf.args_source = "config.json";
    args = readArgs(spec, *hf_config, "config.json", file.path(), inf.facts);
  } else if (hasArgs(file, spec)) {
    inf.args_source = spec.args_key;
    args = readArgs(spec, file.arguments()[spec.args_key], spec.args_key, file.path(), inf.facts);
  }
  auto stated = [&](const char* key) -> std::optional<int64_t> {
    if (args.contains(key) && args[key].is_number_integer()) return args[key].get<int64_t>();
    return std::nullopt;
  };

  // Width and vocabularies from the token tables.
  const TensorInfo* emb = tensor(first, Role::TokenEmbd);
  const int d = shapeDim(emb, 1);
  c["d_model"] = d;
  fact("d_model " + std::to_string(d) + " (" + nameOf(first, Role::TokenEmbd) + " " +
       shapeText(emb) + ")");
  auto vocab = [&](const char* key, Part p, const std::vector<std::string>& given) {
    const int V = shapeDim(tensor(p, Role::TokenEmbd), 0);
    const std::string table = nameOf(p, Role::TokenEmbd);
    if ((int)given.size() > V) {
      // A vocabulary with more tokens than the table has rows is another model's.
      const std::string what = supplied.vocab_file.empty()
                                   ? "the " + std::string(key) + " given"
                                   : std::filesystem::path(supplied.vocab_file).filename().string();
      throw Error(ErrorKind::BadVocabulary,
                  what + " has " + std::to_string(given.size()) +
                      " tokens, but this model's token table " + table + " has " +
                      std::to_string(V) + " rows: is it the vocabulary this model was trained on?");
    } else if (!given.empty()) {
      // Fewer is how a model keeps spare rows (nanoGPT rounds GPT-2's 50,257 up to 50,304).
      std::vector<std::string> notes;
      c[key] = fitVocabulary(given, V, key, &notes);
      for (auto& n : notes) fact(std::move(n));
    } else {
      std::vector<std::string> ids;
      for (int i = 0; i < V; ++i) ids.push_back(std::to_string(i));
      c[key] = ids;
      fact(std::string(key) + ": " + std::to_string(V) +
           " tokens, shown as their ids (no vocabulary given)");
    }
  };
  if (enc) vocab("src_vocab", Part::Encoder, supplied.src_vocab);
  if (dec)
    vocab("tgt_vocab", Part::Decoder,
          supplied.tgt_vocab.empty() && !enc ? supplied.src_vocab : supplied.tgt_vocab);

  // Layer counts from the highest layer index present.
  if (enc) {
    c["n_encoder_layers"] = countLayers(view, spec, Part::Encoder);
    fact(std::to_string(c["n_encoder_layers"].get<int>()) + " encoder layers");
  }
  if (dec) {
    c["n_decoder_layers"] = countLayers(view, spec, Part::Decoder);
    fact(std::to_string(c["n_decoder_layers"].get<int>()) + " decoder layers");
  }
  auto rows = [&](Part p, Role r, int layer = 0, int head = 0) {
    const TensorName* t = present(view, "", spec, p, r, layer);
    if (!t) return 0;
    const TensorInfo* i = info(expandName(t->weight, layer, head));
    return shapeDim(i, (t->flags & kTransposed) ? 1 : 0);
  };
  const TensorName* up = present(view, "", spec, first, Role::FfnUp, 0);
  const int d_ff = rows(first, Role::FfnUp) / (up && (up->flags & kGateUpFused) ? 2 : 1);
  c["d_ff"] = d_ff;
  fact("d_ff " + std::to_string(d_ff) + " (" + nameOf(first, Role::FfnUp) + ")");

  // Heads: the projections give the total widths; the number of heads only one module per head,
  // or the file's args, tell.
  int A = 0, Akv = 0, Av = 0, heads = 0;
  if (present(view, "", spec, first, Role::AttnQkv, 0)) {
    const int all = rows(first, Role::AttnQkv);
    A = Akv = Av = all / 3;
    // Grouped-query heads in one fused projection (Phi-3's qkv_proj): H·d_k query rows, then
    // H_kv·d_k key rows and as many value rows, split by the head counts the args state.
    const auto h = supplied.n_heads ? std::optional<int64_t>(*supplied.n_heads) : stated("n_heads");
    const auto kv = stated("n_kv_heads");
    if (h && kv && *h > 0 && *kv > 0 && *kv != *h && all % (*h + 2 * *kv) == 0) {
      const int dk = all / (int)(*h + 2 * *kv);
      A = (int)*h * dk;
      Akv = Av = (int)*kv * dk;
    }
  } else if (spec.perHead(first, Role::AttnQ)) {
    const TensorName* q = spelling(first, Role::AttnQ);
    while (heads < ConfigLimits::kMaxHeads + 1 && info(expandName(q->weight, 0, heads))) ++heads;
    const TensorName* k = spelling(first, Role::AttnK);
    int kv = 0;
    while (k && kv < ConfigLimits::kMaxHeads + 1 && info(expandName(k->weight, 0, kv))) ++kv;
    A = heads * rows(first, Role::AttnQ);
    Akv = kv * rows(first, Role::AttnK);
    Av = kv * rows(first, Role::AttnV);
    fact(std::to_string(heads) + " heads (one module each: " + g.prefix +
         expandName(q->weight, 0, 0) + " …)");
  } else {
    A = rows(first, Role::AttnQ);
    Akv = rows(first, Role::AttnK);
    Av = rows(first, Role::AttnV);
  }
  if (Akv == 0) Akv = A;
  if (Av == 0) Av = Akv;
  if (auto h = stated("n_heads")) heads = (int)*h;
  if (supplied.n_heads) heads = *supplied.n_heads;
  // Head counts h that fit: d_k = A / h; the key/value heads Akv / d_k divide h and Av.
  auto fits = [&](int h) {
    if (h <= 0 || A % h != 0) return false;
    const int dk = A / h;
    if (Akv % dk != 0) return false;
    const int kv = Akv / dk;
    return kv >= 1 && h % kv == 0 && Av % kv == 0;
  };
  std::vector<int> choices;
  for (int h : divisors(std::max(A, 1)))
    if (fits(h)) choices.push_back(h);
  const std::string widths =
      std::to_string(A) + (Akv != A || Av != A ? " (keys " + std::to_string(Akv) + ", values " +
                                                     std::to_string(Av) + ")"
                                               : std::string());
  if (heads > 0 && fits(heads)) {
    c["n_heads"] = heads;
    const int dk = A / heads, kv = Akv / dk;
    c["d_k"] = dk;
    c["d_v"] = Av / kv;
    if (kv != heads) {
      c["n_kv_heads"] = kv;
      fact(std::to_string(kv) + " key/value heads (grouped-query attention: keys " +
           std::to_string(Akv) + " wide)");
    }
  } else if (heads > 0) {
    inf.missing.push_back(
        {"n_heads", std::to_string(heads) + " heads do not divide the projections' width " + widths,
         choices});
  } else {
    inf.missing.push_back({"n_heads",
                           "how many heads share the projections of width " + widths +
                               "; the tensors hold all heads' weights side by side",
                           choices});
  }
  if (auto kv = stated("n_kv_heads"); kv && c.contains("n_heads")) c["n_kv_heads"] = *kv;

  // Positions: a learned table, a stored fixed table's length, the args' context, or the default.
  const Positional pos_default = spec.defaults.positional;
  const TensorInfo* learned = tensor(first, Role::PosEmbd);
  const TensorInfo* table = tensor(first, Role::PosTable);
  const int offset = spec.defaults.position_offset;
  if (learned) {
    const int n = shapeDim(learned, 0);
    c["positional"] = "learned";
    c["max_len"] = std::max(n - offset, 2);
    if (offset) c["position_offset"] = offset;
    fact("learned positions, max_len " + std::to_string(n - offset) + " (" +
         nameOf(first, Role::PosEmbd) + " " + shapeText(learned) +
         (offset ? ", its first " + std::to_string(offset) + " rows unused)" : std::string(")")));
  } else {
    const Positional p = pos_default == Positional::Learned ? Positional::Sinusoidal : pos_default;
    c["positional"] = positionalName(p);
    const std::string kind = p == Positional::SinusoidalHalves
                                 ? "sinusoidal positions ([sin | cos] halves)"
                             : p == Positional::Rotary ? "rotary positions"
                                                       : "sinusoidal positions";
    if (table) {
      // [max_len, d], [max_len, 1, d] (sequence-first) or [1, max_len, d]
      const int n = table->shape.size() >= 2
                        ? (int)std::min<int64_t>(table->shape[0] == 1 && table->shape.size() == 3
                                                     ? table->shape[1]
                                                     : table->shape[0],
                                                 ConfigLimits::kMaxLen)
                        : 0;
      if (n >= 2) {
        c["max_len"] = n;
        fact(kind + ", max_len " + std::to_string(n) + " (buffer " + nameOf(first, Role::PosTable) +
             " " + shapeToString(table->shape) + ")");
      }
    } else if (auto n = stated("max_len")) {
      c["max_len"] = *n;
    } else {
      fact(kind + " (not stored): max_len " + std::to_string(spec.defaults.max_len) + " assumed");
    }
  }
  // Switches the presence of a tensor tells: the final norms, the embedding norm, segments.
  if (spec.has(first, Role::FinalNorm)) c["final_norm"] = tensor(first, Role::FinalNorm) != nullptr;
  const auto embed_norms = spec.spellings(first, Role::EmbdNorm);
  if (!embed_norms.empty() && (embed_norms.front()->flags & kOptional))
    c["embed_norm"] = tensor(first, Role::EmbdNorm) != nullptr;
  if (const TensorInfo* seg = enc ? tensor(Part::Encoder, Role::SegmentEmbd) : nullptr) {
    c["n_segments"] = shapeDim(seg, 0);
    fact(std::to_string(shapeDim(seg, 0)) + " segments (" +
         nameOf(Part::Encoder, Role::SegmentEmbd) + ")");
  }
  if (spec.class_head != ClassHead::None) {
    const int n = rows(Part::Head, Role::Classifier);
    c["n_classes"] = n;
    fact(std::to_string(n) + " classes (" + nameOf(Part::Head, Role::Classifier) + ")");
  }
  // What the args state over what the tensors assumed: epsilons, rotary base, activation, …
  for (const char* key :
       {"layer_norm_eps", "rope_theta", "activation", "n_segments", "local_window", "rotary_pct",
        "parallel_residual", "tied_output", "attn_scale", "attn_softcap", "final_softcap"})
    if (args.contains(key)) c[key] = args[key];
  for (const char* key : {"d_model", "d_ff", "n_layers", "vocab_size", "max_len", "d_k"})
    if (auto v = stated(key);
        v &&
        c.contains(key == std::string("n_layers") ? (dec ? "n_decoder_layers" : "n_encoder_layers")
                   : key == std::string("vocab_size") ? (dec ? "tgt_vocab" : "src_vocab")
                                                      : key)) {
      const std::string k = key;
      const int has = k == "n_layers" ? c[dec ? "n_decoder_layers" : "n_encoder_layers"].get<int>()
                      : k == "vocab_size" ? (int)c[dec ? "tgt_vocab" : "src_vocab"].size()
                                          : c[key].get<int>();
      if (*v != has)
        fact(std::string(key) + ": " + inf.args_source + " says " + std::to_string(*v) +
             ", the tensors " + std::to_string(has) + " (the tensors are read)");
    }

  // Switches the names cannot tell: assumed as the tutorial has them unless given.
  if (supplied.norm) c["norm"] = *supplied.norm;
  if (supplied.activation) c["activation"] = *supplied.activation;
  for (const Assumption& a : spec.assumptions) {
    const bool norm = a.key == "norm";
    const std::optional<std::string>& given = norm ? supplied.norm : supplied.activation;
    const std::string tutorial = norm ? (spec.defaults.norm == NormPlacement::Pre ? "pre" : "post")
                                      : activationName(spec.defaults.activation);
    inf.assumed.push_back(
        {a.key, given.value_or(tutorial), given.has_value(), a.otherwise, a.hint, 0, 0});
    if (given)
      fact(norm ? *given + "-LayerNorm (given)" : *given + " activation (given)");
    else
      fact(a.fact);
  }
  if (spec.assumptions.empty()) {
    if (supplied.norm) fact(*supplied.norm + "-LayerNorm (given)");
    if (supplied.activation) fact(*supplied.activation + " activation (given)");
  }
  if (!spec.notes.empty() && !hf_config) fact(spec.notes);
  if (spec.tied_output && spec.token_head == TokenHead::Linear && !tensor(Part::Head, Role::Output))
    fact("the output projection tied to the token embeddings");

  // Special ids: supplied, else stated, else read off the vocabulary's spelling, else the
  // tutorial's.
  const std::vector<std::string> special =
      c[dec ? "tgt_vocab" : "src_vocab"].get<std::vector<std::string>>();
  const bool real_vocab = dec ? !(supplied.tgt_vocab.empty() && (enc || supplied.src_vocab.empty()))
                              : !supplied.src_vocab.empty();
  // How an id was decided: given, stated by the file, spelled in the vocabulary, the tutorial's.
  enum class IdFrom { None, Given, Stated, Vocabulary, Tutorial };
  auto id = [&](const char* key, const std::optional<int>& given,
                std::initializer_list<const char*> spellings, int tutorial_default,
                const std::string& what, bool needed) {
    if (given) {
      c[key] = *given;
      return IdFrom::Given;
    }
    if (auto v = stated(key); v && *v >= 0) {
      c[key] = *v;
      return IdFrom::Stated;
    }
    if (real_vocab) {
      // One-letter spellings (S, E, P: nlp-tutorial's markers) are markers only in an
      // encoder-decoder's word vocabulary; in a decoder-only or encoder-only model's vocabulary a
      // letter is a letter (a character-level nanoGPT's "S", GPT-2's byte "S"), never a start
      // token.
      int found = -1;
      for (const char* spelling : spellings) {
        if (std::strlen(spelling) == 1 && !spec.hasCross()) continue;
        if ((found = findToken(special, {spelling})) >= 0) break;
      }
      if (found >= 0) {
        c[key] = found;
        fact(std::string(key) + " " + std::to_string(found) + " (\"" + special[found] +
             "\" in the vocabulary)");
        return IdFrom::Vocabulary;
      }
    }
    if (tutorial_default >= 0) {
      c[key] = tutorial_default;
      fact(std::string(key) + " " + std::to_string(tutorial_default) + " (the tutorial's)");
      return IdFrom::Tutorial;
    }
    // bos and eos are asked of an encoder-decoder only: an id of its target vocabulary.
    if (needed) inf.missing.push_back({key, what, {}, 0, (int)special.size()});
    return IdFrom::None;
  };
  const int V = (int)special.size();
  const SpecialIds& ids = spec.ids;
  // A family that masks no padding (a language model) has no padding token unless one is given,
  // stated or spelled: none, not the tutorial's 0.
  const int pad_tutorial = ids.pad == -2 ? V - 1 : spec.defaults.padding_mask ? ids.pad : -1;
  const IdFrom pad_from = id("pad_id", supplied.pad_id, {"<pad>", "[PAD]", "P", "<blank>"},
                             pad_tutorial, "the padding token's id", false);
  // A model that masks padding and whose file does not state the pad id: the id taken is offered
  // (an id of every vocabulary it is used with: the smaller one's).
  if (spec.defaults.padding_mask && pad_from != IdFrom::Stated && c.contains("pad_id")) {
    int pad_end = V;
    if (enc && dec)
      pad_end = (int)std::min(c["src_vocab"].size(), c["tgt_vocab"].size());
    else if (enc)
      pad_end = (int)c["src_vocab"].size();
    inf.assumed.push_back({"pad_id",
                           std::to_string(c["pad_id"].get<int>()),
                           pad_from == IdFrom::Given,
                           {},
                           "The id of the token that pads a batch's shorter sentences (PAD_IDX, "
                           "pad_idx, padding_idx in your training script): its keys are masked",
                           0,
                           pad_end});
  }
  if (ids.eos >= 0) {
    id("eos_id", supplied.eos_id, {"</s>"}, ids.eos, "the end token that stops decoding", true);
  } else {
    id("eos_id", supplied.eos_id, {"<eos>", "</s>", "E", "[SEP]", "<end>"}, -1,
       "the end token that stops decoding", spec.hasCross() && ids.ask_ids);
  }
  if (ids.bos == -3 || ids.bos == -4) {
    // The decoder starts with the pad token (Marian) or the end token (BART).
    const char* start = ids.bos == -3 ? "pad_id" : "eos_id";
    c["bos_id"] = supplied.bos_id ? *supplied.bos_id : c[start].get<int>();
    if (!supplied.bos_id)
      fact("bos_id " + std::to_string(c["bos_id"].get<int>()) + " (the decoder starts with " +
           (ids.bos == -3 ? "the pad token" : "the end token") + ")");
  } else {
    id("bos_id", supplied.bos_id, {"<bos>", "<s>", "S", "[CLS]", "<sos>", "<start>"}, ids.bos,
       "the start token the decoder begins with", spec.hasCross() && ids.ask_ids);
  }
  if (ids.src_bos >= 0) {
    const int s = real_vocab ? findToken(special, {"<s>"}) : -1;
    c["src_bos_id"] = s >= 0 ? s : ids.src_bos;
    c["src_eos_id"] = c["eos_id"];
  }
  if (!spec.hasCross()) {  // optional for encoder-only and decoder-only models
    if (!c.contains("bos_id")) c["bos_id"] = -1;
    if (!c.contains("eos_id")) c["eos_id"] = -1;
  }
  const int unk = real_vocab ? findToken(special, {"<unk>", "[UNK]", "<UNK>"}) : -1;
  if (unk >= 0) c["unk_id"] = unk;
  return inf;
}

}  // namespace attnviz

#include "arch/infer.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "base/error.h"
#include "base/json_safe.h"

namespace attnviz {

namespace {

// The tensors that identify a family's class, and those it must not have.
struct Signature {
  Family family;
  ModelClass model;
  std::vector<const char*> required;
  std::vector<const char*> absent;
};

const std::vector<Signature>& signatures() {
  static const std::vector<Signature> s = {
      {Family::NlpTutorial,
       ModelClass::Transformer,
       {"encoder.src_emb.weight", "decoder.tgt_emb.weight",
        "encoder.layers.0.enc_self_attn.W_Q.weight"},
       {}},
      {Family::WqTutorial,
       ModelClass::Translation,
       {"encoder.src_emb.weight", "decoder.tgt_emb.weight",
        "encoder.layers.0.enc_self_attn.WQ.weight", "decoder.layers.0.dec_enc_attn.WQ.weight"},
       {}},
      {Family::WqTutorial,
       ModelClass::Classifier,
       {"encoder.src_emb.weight", "encoder.layers.0.enc_self_attn.WQ.weight", "projection.weight"},
       {"decoder.tgt_emb.weight"}},
      {Family::WqTutorial,
       ModelClass::GPTModel,
       {"decoder.tgt_emb.weight", "decoder.layers.0.dec_self_attn.WQ.weight"},
       {"encoder.src_emb.weight", "decoder.layers.0.dec_enc_attn.WQ.weight"}},
      {Family::WqTutorial,
       ModelClass::BertModel,
       {"tok_embed.weight", "layers.0.enc_self_attn.WQ.weight"},
       {}},
      {Family::PytorchNnTransformer,
       ModelClass::Seq2SeqTransformer,
       {"src_tok_emb.embedding.weight", "tgt_tok_emb.embedding.weight",
        "transformer.encoder.layers.0.self_attn.out_proj.weight"},
       {}},
      {Family::MyTransformer,
       ModelClass::TranslationModel,
       {"src_token_embedding.embedding.weight", "tgt_token_embedding.embedding.weight",
        "my_transformer.encoder.layers.0.self_attn.out_proj.weight"},
       {}},
      {Family::StepByStepEncoder,
       ModelClass::TransformerEncoder,
       {"embeddings.token_embeddings.weight", "layers.0.attention.heads.0.q.weight"},
       {}},
      // Hugging Face: names under "model." (…ForConditionalGeneration, MarianMTModel; lm_head and
      // final_logits_bias outside it), or unprefixed (a bare BartModel/MarianModel).
      {Family::HfBart,
       ModelClass::BartForConditionalGeneration,
       {"encoder.layers.0.self_attn.q_proj.weight", "decoder.layers.0.encoder_attn.q_proj.weight",
        "encoder.layernorm_embedding.weight"},
       {}},
      {Family::HfMarian,
       ModelClass::MarianMTModel,
       {"encoder.layers.0.self_attn.q_proj.weight", "decoder.layers.0.encoder_attn.q_proj.weight"},
       {"encoder.layernorm_embedding.weight"}},
  };
  return s;
}

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Prefixes under which the file holds every required tensor of `sig` and none of its absent ones.
std::vector<std::string> prefixesFor(const TensorSource& file, const Signature& sig) {
  std::set<std::string> out;
  const std::string first = sig.required.front();
  for (const auto& t : file.tensors()) {
    if (!endsWith(t.name, first)) continue;
    const std::string p = t.name.substr(0, t.name.size() - first.size());
    if (!p.empty() && p.back() != '.') continue;  // "xencoder.src_emb.weight" is not a prefix
    bool ok = true;
    for (const char* r : sig.required) ok = ok && file.contains(p + r);
    for (const char* a : sig.absent) ok = ok && !file.contains(p + a);
    if (ok) out.insert(p);
  }
  return {out.begin(), out.end()};
}

int countUnder(const TensorSource& file, const std::string& prefix) {
  int n = 0;
  for (const auto& t : file.tensors()) n += t.name.rfind(prefix, 0) == 0;
  return n;
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

// The tensor names one family uses for what inference reads.
struct Names {
  std::string src_emb, tgt_emb;        // token tables
  std::string src_pos, tgt_pos;        // learned position tables
  std::string src_pe, tgt_pe;          // stored sinusoid buffers (only their size is read)
  std::string enc_layers, dec_layers;  // "encoder.layers." (layer N: + "N.")
  std::string q_weight, v_weight;      // relative to a layer: the Q and V projections
  std::string fc1;                     // relative to a layer: the first feed-forward linear
  std::string final_norm_enc;
  std::string segments, classifier;
};

Names namesFor(Family f, ModelClass m) {
  Names n;
  switch (f) {
    case Family::NlpTutorial:
    case Family::WqTutorial: {
      const bool nlp = f == Family::NlpTutorial, bert = m == ModelClass::BertModel;
      n.src_emb = bert ? "tok_embed.weight" : "encoder.src_emb.weight";
      n.tgt_emb = "decoder.tgt_emb.weight";
      n.src_pos = bert ? "pos_embed.weight" : "encoder.pos_emb.weight";
      n.tgt_pos = "decoder.pos_emb.weight";
      n.src_pe = bert ? "pos_embed.pe" : "encoder.pos_emb.pe";
      n.tgt_pe = "decoder.pos_emb.pe";
      n.enc_layers = bert ? "layers." : "encoder.layers.";
      n.dec_layers = "decoder.layers.";
      const std::string attn = m == ModelClass::GPTModel ? "dec_self_attn." : "enc_self_attn.";
      n.q_weight = attn + (nlp ? "W_Q.weight" : "WQ.weight");
      n.v_weight = attn + (nlp ? "W_V.weight" : "WV.weight");
      n.fc1 = nlp ? "pos_ffn.fc.0.weight" : "pos_ffn.l1.weight";
      n.final_norm_enc = "encoder.layer_norm.weight";
      n.segments = "seg_embed.weight";
      n.classifier = bert ? "classifier.weight" : "projection.weight";
      break;
    }
    case Family::PytorchNnTransformer:
    case Family::MyTransformer: {
      const bool my = f == Family::MyTransformer;
      n.src_emb = my ? "src_token_embedding.embedding.weight" : "src_tok_emb.embedding.weight";
      n.tgt_emb = my ? "tgt_token_embedding.embedding.weight" : "tgt_tok_emb.embedding.weight";
      n.src_pos = my ? "src_pos_embedding.weight" : "src_pos_emb.weight";
      n.tgt_pos = my ? "tgt_pos_embedding.weight" : "tgt_pos_emb.weight";
      n.src_pe = n.tgt_pe = my ? "pos_embedding.pe" : "positional_encoding.pos_embedding";
      const std::string root = my ? "my_transformer." : "transformer.";
      n.enc_layers = root + "encoder.layers.";
      n.dec_layers = root + "decoder.layers.";
      n.q_weight = "self_attn.out_proj.weight";  // [d, d]: the heads' total width
      n.v_weight = n.q_weight;
      n.fc1 = "linear1.weight";
      n.final_norm_enc = root + "encoder.norm.weight";
      break;
    }
    case Family::HfMarian:
    case Family::HfBart:
      n.src_emb = n.tgt_emb = "shared.weight";  // or encoder./decoder.embed_tokens (inferConfig)
      n.src_pos = "encoder.embed_positions.weight";
      n.tgt_pos = "decoder.embed_positions.weight";
      n.enc_layers = "encoder.layers.";
      n.dec_layers = "decoder.layers.";
      n.q_weight = "self_attn.q_proj.weight";
      n.v_weight = "self_attn.v_proj.weight";
      n.fc1 = "fc1.weight";
      break;
    case Family::StepByStepEncoder:
      n.src_emb = "embeddings.token_embeddings.weight";
      n.src_pos = "embeddings.position_embeddings.weight";
      n.enc_layers = "layers.";
      n.q_weight = "attention.output_linear.weight";
      n.v_weight = n.q_weight;
      n.fc1 = "feed_forward.linear_1.weight";
      break;
  }
  return n;
}

std::string shapeText(const TensorInfo* t) {
  return t ? shapeToString(t->shape) : std::string("?");
}

}  // namespace

std::string FamilyGuess::summary() const {
  std::string s = std::string(familyName(family)) + " " + modelClassName(model);
  if (!prefix.empty()) s += " (prefix \"" + clipForMessage(prefix, 60) + "\" stripped)";
  return s;
}

std::vector<FamilyGuess> guessFamilies(const TensorSource& file) {
  std::vector<FamilyGuess> out;
  for (const auto& sig : signatures())
    for (const auto& p : prefixesFor(file, sig)) {
      FamilyGuess g;
      g.family = sig.family;
      g.model = sig.model;
      g.prefix = p;
      g.named = countUnder(file, p);
      g.total = (int)file.tensors().size();
      out.push_back(g);
    }
  std::stable_sort(out.begin(), out.end(), [](const FamilyGuess& a, const FamilyGuess& b) {
    return a.named != b.named ? a.named > b.named : a.prefix.size() < b.prefix.size();
  });
  return out;
}

std::string familyPrefix(const TensorSource& file, Family family, ModelClass model) {
  for (const auto& sig : signatures())
    if (sig.family == family && sig.model == model) {
      const auto p = prefixesFor(file, sig);
      if (!p.empty())
        return *std::min_element(p.begin(), p.end(),
                                 [](auto& a, auto& b) { return a.size() < b.size(); });
    }
  return "";
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
  if (family) j["family"] = familyName(*family);
  if (model) j["model"] = modelClassName(*model);
  if (n_heads) j["n_heads"] = *n_heads;
  if (pad_id) j["pad_id"] = *pad_id;
  if (bos_id) j["bos_id"] = *bos_id;
  if (eos_id) j["eos_id"] = *eos_id;
  if (norm) j["norm"] = *norm;
  if (activation) j["activation"] = *activation;
  if (!src_vocab.empty()) j["src_vocab"] = src_vocab;
  if (!tgt_vocab.empty()) j["tgt_vocab"] = tgt_vocab;
  return j;
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
  if (j.contains("family") || j.contains("model")) {
    // Reuse the config's own parsing of names: a minimal config carrying only them.
    nlohmann::json probe = {{"family", j.value("family", "")}};
    if (j.contains("model")) probe["model"] = j["model"];
    for (const auto& f :
         {Family::NlpTutorial, Family::WqTutorial, Family::PytorchNnTransformer,
          Family::MyTransformer, Family::StepByStepEncoder, Family::HfMarian, Family::HfBart})
      if (probe["family"] == familyName(f)) u.family = f;
    if (j.contains("model") && j["model"].is_string())
      for (const auto& sig : signatures())
        if (j["model"] == modelClassName(sig.model)) u.model = sig.model;
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
    }
  }
  return s;
}

Inference inferConfig(const TensorSource& file, const UserSupplied& supplied) {
  Inference inf;
  std::vector<FamilyGuess> guesses = guessFamilies(file);
  if (supplied.family) {
    // The user named the family (and maybe the class): take the best guess of it, or its
    // naming without a prefix.
    auto it = std::find_if(guesses.begin(), guesses.end(), [&](const FamilyGuess& g) {
      return g.family == *supplied.family && (!supplied.model || g.model == *supplied.model);
    });
    if (it != guesses.end()) {
      inf.guess = *it;
    } else {
      inf.guess.family = *supplied.family;
      for (const auto& sig : signatures())
        if (sig.family == *supplied.family && (!supplied.model || sig.model == *supplied.model)) {
          inf.guess.model = sig.model;
          break;
        }
      inf.guess.total = (int)file.tensors().size();
    }
  } else if (!guesses.empty()) {
    inf.guess = guesses.front();
  } else {
    std::string known;
    for (const auto& sig : signatures())
      known += std::string(known.empty() ? "" : ", ") + familyName(sig.family) + " " +
               modelClassName(sig.model) + " (" + sig.required.front() + ")";
    std::string sample;
    for (size_t i = 0; i < file.tensors().size() && i < 4; ++i)
      sample +=
          std::string(i ? ", " : "") + "\"" + clipForMessage(file.tensors()[i].name, 60) + "\"";
    throw Error(ErrorKind::BadConfig,
                file.path() + ": the tensor names (" + sample +
                    (file.tensors().size() > 4 ? ", …" : "") +
                    ") follow none of the tutorials attnviz knows: " + known +
                    ". Give a config with --config FILE.json (docs/formats.md)");
  }
  const FamilyGuess& g = inf.guess;
  const ModelClass m = g.model;
  Names n = namesFor(g.family, m);
  auto info = [&](const std::string& name) { return file.find(g.prefix + name); };
  const bool hf = g.family == Family::HfMarian || g.family == Family::HfBart;
  if (hf && !info(n.src_emb)) {  // embeddings not shared (or saved under each stack's name)
    n.src_emb = "encoder.embed_tokens.weight";
    n.tgt_emb = "decoder.embed_tokens.weight";
  }
  auto dim = [&](const std::string& name, int i) -> int {
    const TensorInfo* t = info(name);
    return t && (int)t->shape.size() > i ? (int)t->shape[i] : 0;
  };
  nlohmann::json& c = inf.config;
  c["family"] = familyName(g.family);
  c["model"] = modelClassName(m);
  ModelConfig probe;
  probe.family = g.family;
  probe.model = m;
  const bool enc = probe.hasEncoder(), dec = probe.hasDecoder();
  auto fact = [&](const std::string& s) { inf.facts.push_back(s); };

  // Width and vocabularies from the token tables.
  const std::string emb = enc ? n.src_emb : n.tgt_emb;
  const int d = dim(emb, 1);
  c["d_model"] = d;
  fact("d_model " + std::to_string(d) + " (" + g.prefix + emb + " " + shapeText(info(emb)) + ")");
  auto vocab = [&](const char* key, const std::string& table,
                   const std::vector<std::string>& given) {
    const int V = dim(table, 0);
    if (!given.empty()) {
      c[key] = given;
      if ((int)given.size() != V)
        fact(std::string(key) + ": " + std::to_string(given.size()) + " tokens given, but " +
             table + " has " + std::to_string(V) + " rows");
    } else {
      std::vector<std::string> ids;
      for (int i = 0; i < V; ++i) ids.push_back(std::to_string(i));
      c[key] = ids;
      fact(std::string(key) + ": " + std::to_string(V) +
           " tokens, shown as their ids (no vocabulary given)");
    }
  };
  if (enc) vocab("src_vocab", n.src_emb, supplied.src_vocab);
  if (dec)
    vocab("tgt_vocab", n.tgt_emb,
          supplied.tgt_vocab.empty() && !enc ? supplied.src_vocab : supplied.tgt_vocab);

  // Layer counts from the highest layer index present.
  auto layers = [&](const std::string& stack) {
    int count = 0;
    while (countUnder(file, g.prefix + stack + std::to_string(count) + ".") > 0) ++count;
    return count;
  };
  if (enc) {
    c["n_encoder_layers"] = layers(n.enc_layers);
    fact(std::to_string(c["n_encoder_layers"].get<int>()) + " encoder layers");
  }
  if (dec) {
    c["n_decoder_layers"] = layers(n.dec_layers);
    fact(std::to_string(c["n_decoder_layers"].get<int>()) + " decoder layers");
  }
  const std::string first_layer = (enc ? n.enc_layers : n.dec_layers) + "0.";
  const int d_ff = dim(first_layer + n.fc1, 0);
  c["d_ff"] = d_ff;
  fact("d_ff " + std::to_string(d_ff) + " (" + first_layer + n.fc1 + ")");

  // Heads: the projections give the total width; the number of heads only per-head modules tell.
  const int A = g.family == Family::PytorchNnTransformer || g.family == Family::MyTransformer ||
                        g.family == Family::StepByStepEncoder || hf
                    ? d
                    : dim(first_layer + n.q_weight, 0);
  const int Av = g.family == Family::NlpTutorial || g.family == Family::WqTutorial
                     ? dim(first_layer + n.v_weight, 0)
                     : A;
  int heads = 0;
  if (g.family == Family::StepByStepEncoder) {
    while (countUnder(
               file, g.prefix + first_layer + "attention.heads." + std::to_string(heads) + ".") > 0)
      ++heads;
    fact(std::to_string(heads) + " heads (one AttentionHead module each)");
  }
  if (supplied.n_heads) heads = *supplied.n_heads;
  const int width_gcd = std::gcd(std::max(A, 1), std::max(Av, 1));
  if (heads > 0) {
    c["n_heads"] = heads;
    if (A % heads == 0 && Av % heads == 0) {
      c["d_k"] = A / heads;
      c["d_v"] = Av / heads;
    } else {
      inf.missing.push_back({"n_heads",
                             std::to_string(heads) +
                                 " heads do not divide the projections' width " +
                                 std::to_string(A) + (Av != A ? "/" + std::to_string(Av) : ""),
                             divisors(width_gcd)});
    }
  } else {
    inf.missing.push_back({"n_heads",
                           "how many heads share the projections of width " + std::to_string(A) +
                               (Av != A ? " (values " + std::to_string(Av) + ")" : "") +
                               "; the tensors hold all heads' weights side by side",
                           divisors(width_gcd)});
  }

  // Positions: a learned table, or the sinusoid buffer's length.
  const std::string pos = enc ? n.src_pos : n.tgt_pos;
  const std::string pe = enc ? n.src_pe : n.tgt_pe;
  if (g.family == Family::HfMarian) {
    // Marian's table is a fixed [sin | cos] sinusoid (saved or not): only its length is read.
    c["positional"] = "sinusoidal-halves";
    if (info(pos) && dim(pos, 0) >= 2) c["max_len"] = dim(pos, 0);
    fact("Marian's sinusoidal positions ([sin | cos] halves), max_len " +
         (c.contains("max_len") ? std::to_string(c["max_len"].get<int>()) + " (" + pos + ")"
                                : std::string("512 (MarianConfig's default)")));
  } else if (g.family == Family::HfBart && info(pos)) {
    // BART's learned table has 2 rows before position 0.
    c["positional"] = "learned";
    c["position_offset"] = 2;
    c["max_len"] = std::max(dim(pos, 0) - 2, 2);
    fact("learned positions, max_len " + std::to_string(dim(pos, 0) - 2) + " (" + pos + " " +
         shapeText(info(pos)) + ", its first 2 rows unused)");
  } else if (!pos.empty() && info(pos)) {
    c["positional"] = "learned";
    c["max_len"] = dim(pos, 0);
    fact("learned positions, max_len " + std::to_string(dim(pos, 0)) + " (" + pos + ")");
  } else {
    c["positional"] = "sinusoidal";
    if (const TensorInfo* t = pe.empty() ? nullptr : info(pe)) {
      // [max_len, 1, d] (sequence-first) or [1, max_len, d]
      const int rows =
          t->shape.size() >= 2 ? (int)(t->shape[0] == 1 ? t->shape[1] : t->shape[0]) : 0;
      if (rows >= 2) {
        c["max_len"] = rows;
        fact("sinusoidal positions, max_len " + std::to_string(rows) + " (buffer " + pe + " " +
             shapeToString(t->shape) + ")");
      }
    } else {
      fact("sinusoidal positions (not stored): max_len 5000 assumed");
    }
  }
  if (!n.final_norm_enc.empty() && (g.family == Family::PytorchNnTransformer ||
                                    g.family == Family::MyTransformer || info(n.final_norm_enc))) {
    c["final_norm"] = info(n.final_norm_enc) != nullptr;
  }
  if (g.family == Family::StepByStepEncoder)
    c["embed_norm"] = info("embeddings.layer_norm.weight") != nullptr;
  if (m == ModelClass::BertModel && info(n.segments)) {
    c["n_segments"] = dim(n.segments, 0);
    fact(std::to_string(dim(n.segments, 0)) + " segments (" + n.segments + ")");
  }
  if (m == ModelClass::BertModel || m == ModelClass::Classifier) {
    c["n_classes"] = dim(n.classifier, 0);
    fact(std::to_string(dim(n.classifier, 0)) + " classes (" + n.classifier + ")");
  }
  inf.layout_assumed =
      g.family == Family::PytorchNnTransformer || g.family == Family::MyTransformer;
  if (supplied.norm) c["norm"] = *supplied.norm;
  if (supplied.activation) c["activation"] = *supplied.activation;
  if (inf.layout_assumed) {
    fact(supplied.norm ? *supplied.norm + "-LayerNorm (given)"
                       : "post-LayerNorm assumed (norm_first=False; the names cannot tell: give "
                         "--norm pre for norm_first=True)");
    fact(supplied.activation ? *supplied.activation + " activation (given)"
                             : "ReLU assumed (the names cannot tell: give --activation gelu for "
                               "activation=\"gelu\")");
  } else {
    if (supplied.norm) fact(*supplied.norm + "-LayerNorm (given)");
    if (supplied.activation) fact(*supplied.activation + " activation (given)");
  }
  if (hf) {
    fact(g.family == Family::HfMarian
             ? "swish activation and embeddings × √d_model assumed (MarianConfig as the converted "
               "OPUS models have it; config.json beside the model tells)"
             : "GELU and no embedding scale assumed (BartConfig's defaults; config.json beside "
               "the model tells)");
    if (!info("lm_head.weight")) fact("lm_head tied to the token embeddings");
  }

  // Special ids: supplied, else read off the vocabulary's spelling, else the tutorial's.
  const std::vector<std::string> special =
      c[dec ? "tgt_vocab" : "src_vocab"].get<std::vector<std::string>>();
  const bool real_vocab = dec ? !(supplied.tgt_vocab.empty() && (enc || supplied.src_vocab.empty()))
                              : !supplied.src_vocab.empty();
  auto id = [&](const char* key, const std::optional<int>& given,
                std::initializer_list<const char*> spellings, int tutorial_default,
                const std::string& what, bool needed) {
    if (given) {
      c[key] = *given;
      return;
    }
    if (real_vocab) {
      const int found = findToken(special, spellings);
      if (found >= 0) {
        c[key] = found;
        fact(std::string(key) + " " + std::to_string(found) + " (\"" + special[found] +
             "\" in the vocabulary)");
        return;
      }
    }
    if (tutorial_default >= 0) {
      c[key] = tutorial_default;
      std::string option = key;
      option.replace(option.find('_'), 1, "-");
      fact(std::string(key) + " " + std::to_string(tutorial_default) + " (the tutorial's; give --" +
           option + " otherwise)");
      return;
    }
    if (needed) inf.missing.push_back({key, what, {}});
  };
  const bool torch_specials =
      g.family == Family::PytorchNnTransformer || g.family == Family::MyTransformer;
  // Marian's converter puts <pad> last; BART keeps fairseq's <s>=0, <pad>=1, </s>=2.
  const int V = dim(dec ? n.tgt_emb : n.src_emb, 0);
  const int pad_default = torch_specials || g.family == Family::HfBart ? 1
                          : g.family == Family::HfMarian               ? V - 1
                                                                       : 0;
  id("pad_id", supplied.pad_id, {"<pad>", "[PAD]", "P", "<blank>"}, pad_default,
     "the padding token's id", false);
  if (hf) {
    id("eos_id", supplied.eos_id, {"</s>"}, g.family == Family::HfMarian ? 0 : 2,
       "the end token that stops decoding", true);
    // The decoder starts with Marian's pad token, with BART's end token (decoder_start_token_id).
    const char* start = g.family == Family::HfMarian ? "pad_id" : "eos_id";
    c["bos_id"] = supplied.bos_id ? *supplied.bos_id : c[start].get<int>();
    if (!supplied.bos_id)
      fact("bos_id " + std::to_string(c["bos_id"].get<int>()) + " (the decoder starts with " +
           (g.family == Family::HfMarian ? "the pad token" : "the end token") + ")");
    if (g.family == Family::HfBart) {
      const int s = real_vocab ? findToken(special, {"<s>"}) : -1;
      c["src_bos_id"] = s >= 0 ? s : 0;
      c["src_eos_id"] = c["eos_id"];
    }
  } else {
    id("bos_id", supplied.bos_id, {"<bos>", "<s>", "S", "[CLS]", "<sos>", "<start>"}, -1,
       "the start token the decoder begins with", probe.hasCross());
    id("eos_id", supplied.eos_id, {"<eos>", "</s>", "E", "[SEP]", "<end>"}, -1,
       "the end token that stops decoding", probe.hasCross());
  }
  if (!probe.hasCross()) {  // optional for encoder-only and decoder-only models
    if (!c.contains("bos_id")) c["bos_id"] = -1;
    if (!c.contains("eos_id")) c["eos_id"] = -1;
  }
  const int unk = real_vocab ? findToken(special, {"<unk>", "[UNK]", "<UNK>"}) : -1;
  if (unk >= 0) c["unk_id"] = unk;
  return inf;
}

}  // namespace attnviz

#include "arch/weights.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include "arch/hf_folder.h"
#include "base/atomic_file.h"
#include "base/error.h"
#include "base/file_read.h"
#include "base/json_safe.h"
#include "io/safetensors.h"
#include "io/sharded.h"
#include "io/torch_checkpoint.h"
#include "text/tokenizer.h"
#include "text/tokenizer_files.h"
#include "text/vocab_files.h"

namespace attnviz {

namespace {

// Reads tensors by name and checks their shapes. Problems (missing tensors, wrong shapes, tensors
// left unused) are collected, not thrown one by one, so that finish() names all of them at once.
class TensorReader {
 public:
  TensorReader(const TensorSource& file, std::vector<std::string>& warnings)
      : file_(file), warnings_(warnings) {}

  bool has(const std::string& name) const { return file_.contains(name); }
  const TensorSource& file() const { return file_; }

  // The tensor, or an empty one after recording why not.
  Tensor get(const std::string& name, const Shape& expected) {
    const TensorInfo* info = file_.find(name);
    if (!info) {
      problem(ErrorKind::MissingTensor, "tensor \"" + name + "\" is missing (expected shape " +
                                            shapeToString(expected) + ")");
      return {};
    }
    used_.insert(name);
    if (info->shape != expected) {
      problem(ErrorKind::ShapeMismatch, "tensor \"" + name + "\" has shape " +
                                            shapeToString(info->shape) + "; the config expects " +
                                            shapeToString(expected));
      return {};
    }
    Tensor t = file_.toFloat(*info);
    int64_t bad = 0;
    for (float v : t.data)
      if (!std::isfinite(v)) ++bad;
    if (bad)
      warnings_.push_back("tensor \"" + name + "\" holds " + std::to_string(bad) +
                          " NaN or infinite values; outputs will be NaN");
    return t;
  }

  Tensor optional(const std::string& name, const Shape& expected) {
    return has(name) ? get(name, expected) : Tensor();
  }

  void ignore(const std::string& name) { used_.insert(name); }

  // Throws Error listing every problem; unused tensors are one unless the load is partial.
  void finish(const std::string& reading_as, bool allow_partial) {
    std::vector<std::string> unused;
    for (const auto& t : file_.tensors())
      if (!used_.count(t.name)) unused.push_back(t.name);
    if (!unused.empty()) {
      std::string list;
      for (size_t i = 0; i < unused.size() && i < 6; ++i)
        list += std::string(i ? ", " : "") + "\"" + clipForMessage(unused[i], 80) + "\"";
      if (unused.size() > 6) list += ", …";
      const std::string text = std::to_string(unused.size()) + " of the file's " +
                               std::to_string(file_.tensors().size()) +
                               " tensors are not used: " + list;
      if (allow_partial)
        warnings_.push_back(text);
      else
        problem(ErrorKind::UnusedTensor, text);
    }
    if (problems_.empty()) return;
    std::string msg = file_.path() + ": reading it as " + reading_as + ", " +
                      (problems_.size() == 1 ? std::string("one problem")
                                             : std::to_string(problems_.size()) + " problems") +
                      ": ";
    const size_t shown = std::min<size_t>(problems_.size(), 12);
    for (size_t i = 0; i < shown; ++i) msg += (i ? "; " : "") + problems_[i].text;
    if (problems_.size() > shown)
      msg += "; and " + std::to_string(problems_.size() - shown) + " more";
    if (problems_.front().kind == ErrorKind::UnusedTensor)
      msg +=
          ". Is the family, the model class or a layer count wrong? (a partial load keeps "
          "going)";
    throw Error(problems_.front().kind, msg);
  }

 private:
  struct Problem {
    ErrorKind kind;
    std::string text;
  };
  void problem(ErrorKind kind, std::string text) { problems_.push_back({kind, std::move(text)}); }

  const TensorSource& file_;
  std::vector<std::string>& warnings_;
  std::set<std::string> used_;
  std::vector<Problem> problems_;
};

Tensor transposed(const Tensor& t) {
  if (t.shape.size() != 2) return t;
  const int64_t r = t.shape[0], c = t.shape[1];
  Tensor out({c, r});
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out.data[j * r + i] = t.data[i * c + j];
  return out;
}

// Rows [from, from + n) of a [R, C] tensor (or of a vector).
Tensor rowsOf(const Tensor& t, int64_t from, int64_t n) {
  const int64_t C = t.shape.size() == 2 ? t.shape[1] : 1;
  Shape shape = t.shape;
  shape[0] = n;
  return Tensor(shape,
                std::vector<float>(t.data.begin() + from * C, t.data.begin() + (from + n) * C));
}

// A fused projection whose rows are per head [heads, 3, width] (GPT-NeoX's query_key_value) as
// Q rows, then K, then V: the row of part p (0 q, 1 k, 2 v), head h, i < width moves from
// (h·3 + p)·width + i to (p·heads + h)·width + i.
Tensor qkvFromPerHead(const Tensor& t, int heads, int64_t width) {
  if (t.empty()) return t;
  const int64_t C = t.shape.size() == 2 ? t.shape[1] : 1;
  Tensor out(t.shape, std::vector<float>(t.data.size()));
  for (int h = 0; h < heads; ++h)
    for (int p = 0; p < 3; ++p) {
      const int64_t from = ((int64_t)h * 3 + p) * width * C,
                    to = ((int64_t)p * heads + h) * width * C;
      std::copy(t.data.begin() + from, t.data.begin() + from + width * C, out.data.begin() + to);
    }
  return out;
}

// Reads weights into the one layout by the names of one architecture's descriptor, deciding unset
// bias switches from the file's first layer.
class SpecLoader {
 public:
  SpecLoader(TensorReader& r, ModelConfig& c, const ArchSpec& spec) : r_(r), c_(c), spec_(spec) {}

  ModelWeights read() {
    ModelWeights w;
    if (c_.hasEncoder()) stack(Part::Encoder, c_.n_encoder_layers, w.encoder);
    if (c_.hasDecoder()) stack(Part::Decoder, c_.n_decoder_layers, w.decoder);
    head(w);
    // Buffers the model does not read: causal masks, rotary caches, stored sinusoids.
    for (const auto& t : r_.file().tensors())
      for (const auto& pattern : spec_.ignored)
        if (matchesName(pattern, t.name)) r_.ignore(t.name);
    return w;
  }

 private:
  TensorReader& r_;
  ModelConfig& c_;
  const ArchSpec& spec_;

  // The spelling of a role to read at a layer (and head): the first the file holds, else the
  // first (whose absence is then recorded); null when the descriptor has none.
  const TensorName* pick(Part p, Role role, int layer, int head = 0) {
    const auto all = spec_.spellings(p, role);
    for (const TensorName* t : all)
      if (r_.has(expandName(t->weight, layer, head))) {
        // Other names of the same table (kTiedCopy) are copies, not unused tensors.
        for (const TensorName* other : all)
          if (other != t && (other->flags & kTiedCopy) &&
              r_.has(expandName(other->weight, layer, head)))
            r_.ignore(expandName(other->weight, layer, head));
        return t;
      }
    return all.empty() ? nullptr : all.front();
  }
  bool present(Part p, Role role, int layer = 0) {
    for (const TensorName* t : spec_.spellings(p, role))
      if (r_.has(expandName(t->weight, layer, 0))) return true;
    return false;
  }

  // A weight [out, in] (stored [in, out] when transposed) and its bias [out] ([1, out] when
  // kBiasRow); an unset `bias` switch becomes whether the file has the first bias asked for.
  LinearWeights linear(const TensorName* t, int layer, int head, int64_t in, int64_t out,
                       std::optional<bool>& bias) {
    LinearWeights l;
    if (!t) return l;
    const std::string w = expandName(t->weight, layer, head);
    if (t->flags & kTransposed) {
      Tensor stored = r_.get(w, {in, out});
      if (!stored.empty()) l.weight = transposed(stored);
    } else {
      l.weight = r_.get(w, {out, in});
    }
    const std::string b = t->bias.empty() ? std::string() : expandName(t->bias, layer, head);
    if (!bias) bias = !b.empty() && r_.has(b);
    if (*bias) {
      if (b.empty()) {
        r_.get(w + " (its bias)", {out});  // records that the spelling has none
      } else if (t->flags & kBiasRow) {
        Tensor row = r_.get(b, {1, out});
        if (!row.empty()) l.bias = Tensor({out}, std::move(row.data));
      } else {
        l.bias = r_.get(b, {out});
      }
    }
    return l;
  }
  LinearWeights linear(Part p, Role role, int layer, int64_t in, int64_t out,
                       std::optional<bool>& bias) {
    return linear(pick(p, role, layer), layer, 0, in, out, bias);
  }
  LinearWeights linearWithBias(Part p, Role role, int64_t in, int64_t out) {
    std::optional<bool> yes = true;
    return linear(p, role, 0, in, out, yes);
  }

  // A norm: γ [d] and β [d] (none where the spelling has no bias, or kBiasOptional and absent).
  // Absent with kOptional: the identity — unless `on` (a switch of the config says the norm is
  // there, kOptional only turned it off when absent). No spelling at all: the identity.
  // A norm of d_model values, or of `width` (the per-head norms' d_k).
  LayerNormWeights norm(Part p, Role role, int layer, bool on = false, int64_t width = 0) {
    const int64_t d = width ? width : c_.d_model;
    LayerNormWeights n;
    const TensorName* t = pick(p, role, layer);
    if (!t) return n;
    const std::string w = expandName(t->weight, layer, 0);
    if (!on && (t->flags & kOptional) && !r_.has(w)) return n;
    n.gamma = r_.get(w, {d});
    if (t->flags & kGainPlusOne)  // Gemma's RMSNorm multiplies by (1 + weight)
      for (float& g : n.gamma.data) g += 1.0f;
    if (!t->bias.empty()) {
      const std::string b = expandName(t->bias, layer, 0);
      if (!(t->flags & kBiasOptional) || r_.has(b)) n.beta = r_.get(b, {d});
    }
    return n;
  }

  AttentionWeights attention(Part p, bool cross, int l) {
    const Role q = cross ? Role::CrossQ : Role::AttnQ;
    const Role qkv = cross ? Role::CrossQkv : Role::AttnQkv;
    const Role out = cross ? Role::CrossOut : Role::AttnOut;
    const int64_t d = c_.d_model, A = c_.attnWidth(), Ak = c_.keyWidth(), Av = c_.kvValueWidth();
    AttentionWeights a;
    if (present(p, qkv, l)) {
      // Fused: Q rows, then K, then V (nn.MultiheadAttention's in_proj, GPT's c_attn).
      std::optional<bool> bias = c_.q_bias;
      const TensorName* fused = pick(p, qkv, l);
      LinearWeights all = linear(fused, l, 0, d, A + Ak + Av, bias);
      c_.q_bias = c_.k_bias = c_.v_bias = bias;
      if (fused && (fused->flags & kQkvPerHead)) {  // [H, 3, d_k] rows: one head's q, k, v
        if (c_.kvHeads() != c_.n_heads || c_.d_v != c_.d_k)
          throw Error(ErrorKind::BadConfig,
                      expandName(fused->weight, l, 0) +
                          " holds each head's query, key and value rows together: it needs as "
                          "many key/value heads as heads and d_v = d_k");
        all.weight = qkvFromPerHead(all.weight, c_.n_heads, c_.d_k);
        all.bias = qkvFromPerHead(all.bias, c_.n_heads, c_.d_k);
      }
      if (!all.weight.empty()) {
        a.q.weight = rowsOf(all.weight, 0, A);
        a.k.weight = rowsOf(all.weight, A, Ak);
        a.v.weight = rowsOf(all.weight, A + Ak, Av);
      }
      if (!all.bias.empty()) {
        a.q.bias = rowsOf(all.bias, 0, A);
        a.k.bias = rowsOf(all.bias, A, Ak);
        a.v.bias = rowsOf(all.bias, A + Ak, Av);
      }
    } else if (spec_.perHead(p, q)) {
      // One module per head: [d_k, d] each, stacked into [H·d_k, d].
      LinearWeights* parts[3] = {&a.q, &a.k, &a.v};
      std::optional<bool>* biases[3] = {&c_.q_bias, &c_.k_bias, &c_.v_bias};
      for (int i = 0; i < 3; ++i) {
        const int heads = i == 0 ? c_.n_heads : c_.kvHeads();
        const int64_t width = i == 2 ? c_.d_v : c_.d_k;
        std::vector<float> w, b;
        for (int h = 0; h < heads; ++h) {
          LinearWeights one = linear(pick(p, Role((int)q + i), l, h), l, h, d, width, *biases[i]);
          w.insert(w.end(), one.weight.data.begin(), one.weight.data.end());
          b.insert(b.end(), one.bias.data.begin(), one.bias.data.end());
        }
        if ((int64_t)w.size() == heads * width * d)
          parts[i]->weight = Tensor({heads * width, d}, w);
        if ((int64_t)b.size() == heads * width) parts[i]->bias = Tensor({heads * width}, b);
      }
    } else {
      a.q = linear(p, q, l, d, A, c_.q_bias);
      a.k = linear(p, Role((int)q + 1), l, d, Ak, c_.k_bias);
      a.v = linear(p, Role((int)q + 2), l, d, Av, c_.v_bias);
    }
    a.out = linear(p, out, l, c_.valueWidth(), d, c_.out_bias);
    if (!cross) {
      a.q_norm = norm(p, Role::AttnQNorm, l, false, c_.d_k);
      a.k_norm = norm(p, Role::AttnKNorm, l, false, c_.d_k);
    }
    return a;
  }

  void stack(Part p, int layers, StackWeights& s) {
    const int64_t d = c_.d_model;
    const int64_t V = (int64_t)(p == Part::Encoder ? c_.src_vocab.size() : c_.tgt_vocab.size());
    if (const TensorName* t = pick(p, Role::TokenEmbd, 0))
      s.embed.tokens = r_.get(t->weight, {V, d});
    if (c_.positional == Positional::Learned)
      if (const TensorName* t = pick(p, Role::PosEmbd, 0))
        s.embed.positions = r_.get(t->weight, {(int64_t)c_.max_len + c_.position_offset, d});
    for (const TensorName* t : spec_.spellings(p, Role::PosTable))
      if (r_.has(t->weight)) r_.ignore(t->weight);  // the model computes the table
    if (c_.n_segments && p == Part::Encoder)
      if (const TensorName* t = pick(p, Role::SegmentEmbd, 0))
        s.embed.segments = r_.get(t->weight, {c_.n_segments, d});
    if (c_.embed_norm) s.embed.norm = norm(p, Role::EmbdNorm, 0, true);
    if (c_.positional == Positional::Relative)  // T5: the first layer's self-attention holds it
      if (const TensorName* t = pick(p, Role::RelPosBias, 0))
        s.relative_bias = r_.get(t->weight, {c_.relative_buckets, c_.n_heads});
    const bool cross = p == Part::Decoder && c_.hasCross();
    for (int l = 0; l < layers; ++l) {
      LayerWeights e;
      e.self_attn = attention(p, false, l);
      e.norm_self = norm(p, Role::AttnNorm, l);
      if (c_.sandwich_norms) e.post_self = norm(p, Role::AttnPostNorm, l, true);
      if (cross) {
        e.cross_attn = attention(p, true, l);
        e.norm_cross = norm(p, Role::CrossNorm, l);
      }
      if (c_.d_ff > 0) {  // d_ff 0: an attention-only model, no feed-forward sublayer
        const TensorName* up = pick(p, Role::FfnUp, l);
        if (up && (up->flags & kGateUpFused)) {
          // [gate; up] rows in one tensor (Phi-3's gate_up_proj): the first d_ff rows the gate's.
          if (!c_.gated_ffn)
            throw Error(ErrorKind::BadConfig, expandName(up->weight, l, 0) +
                                                  " holds a gate's and up's rows: it needs a "
                                                  "gated feed-forward (gated_ffn)");
          LinearWeights both = linear(up, l, 0, d, 2 * c_.d_ff, c_.ffn_bias);
          if (!both.weight.empty()) {
            e.ffn.gate.weight = rowsOf(both.weight, 0, c_.d_ff);
            e.ffn.fc1.weight = rowsOf(both.weight, c_.d_ff, c_.d_ff);
          }
          if (!both.bias.empty()) {
            e.ffn.gate.bias = rowsOf(both.bias, 0, c_.d_ff);
            e.ffn.fc1.bias = rowsOf(both.bias, c_.d_ff, c_.d_ff);
          }
        } else {
          e.ffn.fc1 = linear(p, Role::FfnUp, l, d, c_.d_ff, c_.ffn_bias);
          if (c_.gated_ffn) e.ffn.gate = linear(p, Role::FfnGate, l, d, c_.d_ff, c_.ffn_bias);
        }
        e.ffn.fc2 = linear(p, Role::FfnDown, l, c_.d_ff, d, c_.ffn_bias);
        e.norm_ffn = norm(p, Role::FfnNorm, l);
        if (c_.sandwich_norms) e.post_ffn = norm(p, Role::FfnPostNorm, l, true);
      }
      s.layers.push_back(std::move(e));
    }
    if (c_.final_norm) s.final_norm = norm(p, Role::FinalNorm, 0, true);
  }

  // The token logits' projection [V, d]: its own tensor, or — tied (tie_word_embeddings) and not
  // saved, as save_pretrained leaves out a tied copy (GPT-2's lm_head, BERT's MLM decoder under
  // transformers 5) — the token table, with the bias the file may hold.
  LinearWeights outputProjection(const ModelWeights& w, int64_t d, int64_t V) {
    const TensorName* t = pick(Part::Head, Role::Output, 0);
    if (!(t && !r_.has(t->weight) && c_.tied_output.value_or(spec_.tied_output)))
      return linear(t, 0, 0, d, V, c_.proj_bias);
    LinearWeights p;
    const StackWeights& s = c_.hasDecoder() ? w.decoder : w.encoder;
    p.weight = s.embed.tokens;
    const std::string b = t->bias;
    if (!c_.proj_bias) c_.proj_bias = !b.empty() && r_.has(b);
    if (*c_.proj_bias && !b.empty()) {
      Tensor bias = (t->flags & kBiasRow) ? r_.get(b, {1, V}) : r_.get(b, {V});
      if (!bias.empty()) p.bias = Tensor({V}, std::move(bias.data));
    }
    return p;
  }

  void head(ModelWeights& w) {
    const int64_t d = c_.d_model;
    HeadWeights& h = w.head;
    const int64_t V = (int64_t)c_.outputVocab().size();
    switch (c_.tokenHead()) {
      case TokenHead::Linear:
        h.projection = outputProjection(w, d, V);
        break;
      case TokenHead::BertMlm:
        h.mlm_transform = linearWithBias(Part::Head, Role::MlmTransform, d, d);
        h.mlm_norm = norm(Part::Head, Role::MlmNorm, 0, true);
        h.projection = outputProjection(w, d, V);
        break;
      case TokenHead::None:
        break;
    }
    switch (c_.classHead()) {
      case ClassHead::Pooler:
        h.pooler = linearWithBias(Part::Head, Role::Pooler, d, d);
        h.classifier = classifier();
        break;
      case ClassHead::MeanPool:
        h.classifier = classifier();
        break;
      case ClassHead::None:
        break;
    }
  }

  // Class logits [n_classes, d]; the class count comes from the tensor when the config lacks it.
  LinearWeights classifier() {
    const TensorName* t = pick(Part::Head, Role::Classifier, 0);
    if (!t) return {};
    if (c_.n_classes == 0) {
      const TensorInfo* info = r_.file().find(t->weight);
      if (info && info->shape.size() == 2 && info->shape[0] >= 1 &&
          info->shape[0] <= ConfigLimits::kMaxClasses)
        c_.n_classes = (int)info->shape[0];
      else
        c_.n_classes = 2;  // what the tutorial's BertModel has; the shape check reports the rest
    }
    std::optional<bool> yes = true;
    return linear(t, 0, 0, c_.d_model, c_.n_classes, yes);
  }
};

ModelConfig parseConfigText(const std::string& text, const std::string& what) {
  if (size_t bad = 0; !isValidUtf8(text, &bad))
    throw Error(ErrorKind::InvalidUtf8,
                what + ": not valid UTF-8 (invalid sequence at byte " + std::to_string(bad) + ")");
  return ModelConfig::fromJson(parseJsonStrict(text, what), what);
}

}  // namespace

ModelConfig findConfig(const TensorSource& file, const std::string& explicit_path) {
  constexpr uint64_t kMaxConfigBytes = 64ull << 20;
  if (!explicit_path.empty())
    return parseConfigText(readBoundedFile(explicit_path, kMaxConfigBytes, "the config file"),
                           explicit_path);
  auto it = file.metadata().find("attnviz_config");
  if (it != file.metadata().end())
    return parseConfigText(it->second, file.path() + " __metadata__[\"attnviz_config\"]");
  std::filesystem::path side = std::filesystem::path(file.path()).replace_extension(".json");
  if (std::filesystem::exists(side))
    return parseConfigText(readBoundedFile(side.string(), kMaxConfigBytes, "the config file"),
                           side.string());
  throw Error(ErrorKind::BadConfig,
              file.path() + ": no config found (looked for __metadata__[\"attnviz_config\"] and " +
                  side.string() + "; give the model's config file)");
}

std::string answersPath(const std::string& model_path) {
  return model_path + ".attnviz.json";
}

// A JSON file, bounded in size (64 MiB), valid UTF-8, strictly parsed.
nlohmann::json readJsonFile(const std::string& path) {
  const std::string text = readBoundedFile(path, 64ull << 20, "the JSON file");
  if (size_t bad = 0; !isValidUtf8(text, &bad))
    throw Error(ErrorKind::InvalidUtf8,
                path + ": not valid UTF-8 (invalid sequence at byte " + std::to_string(bad) + ")");
  return parseJsonStrict(text, path);
}

namespace {

void overlay(UserSupplied& base, const UserSupplied& top) {
  if (top.family) base.family = top.family;
  if (!top.names_map.is_null()) base.names_map = top.names_map;
  if (top.model) base.model = top.model;
  if (top.n_heads) base.n_heads = top.n_heads;
  if (top.pad_id) base.pad_id = top.pad_id;
  if (top.bos_id) base.bos_id = top.bos_id;
  if (top.eos_id) base.eos_id = top.eos_id;
  if (top.norm) base.norm = top.norm;
  if (top.activation) base.activation = top.activation;
  if (!top.src_vocab.empty() || !top.tgt_vocab.empty()) {  // a vocabulary given replaces one kept
    if (!top.src_vocab.empty()) base.src_vocab = top.src_vocab;
    if (!top.tgt_vocab.empty()) base.tgt_vocab = top.tgt_vocab;
    base.tokenizer = top.tokenizer;
    base.vocab_file = top.vocab_file;
  }
}

// The answers remembered beside the model at `model_path` with `supplied` over them.
UserSupplied answersWith(const std::string& model_path, const UserSupplied& supplied) {
  UserSupplied answers;
  const std::string path = answersPath(model_path);
  if (std::filesystem::exists(path)) answers = UserSupplied::fromJson(readJsonFile(path), path);
  overlay(answers, supplied);
  return answers;
}

// The value of `key` in the checkpoint's "config" dict as a single path component, or "" when it
// has none that could be one (a hostile file's "../.." is not followed).
std::string configComponent(const TensorSource& file, const std::string& key) {
  const nlohmann::json& a = file.arguments();
  if (!a.is_object() || !a.contains("config") || !a["config"].is_object()) return {};
  const nlohmann::json& c = a["config"];
  if (!c.contains(key)) return {};
  const nlohmann::json& v = c[key];
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return std::to_string(v.get<int64_t>());
  if (!v.is_string()) return {};
  const std::string s = v.get<std::string>();
  if (s.empty() || s.size() > 200 || s == "." || s == ".." ||
      s.find_first_of("/\\") != std::string::npos || s.find('\0') != std::string::npos)
    return {};
  return s;
}

}  // namespace

bool findTutorialVocabulary(const TensorSource& file, const ArchSpec& spec, UserSupplied& answers,
                            std::vector<std::string>* notes) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::absolute(fs::path(file.path())).parent_path();
  for (const fs::path& root : {folder.parent_path(), folder})
    for (const std::string& pattern : spec.vocab_files) {
      // Fill each {key} from the checkpoint's config; a pattern with a key it lacks is skipped.
      std::string rel;
      bool filled = true;
      for (size_t i = 0; i < pattern.size() && filled;) {
        const size_t open = pattern.find('{', i);
        if (open == std::string::npos) {
          rel += pattern.substr(i);
          break;
        }
        const size_t close = pattern.find('}', open);
        const std::string value = configComponent(file, pattern.substr(open + 1, close - open - 1));
        filled = !value.empty();
        rel += pattern.substr(i, open - i) + value;
        i = close + 1;
      }
      const fs::path path = root / rel;
      std::error_code ec;
      if (!filled || !fs::is_regular_file(path, ec)) continue;
      UserSupplied trial = answers;
      try {
        supplyVocabulary(trial, path.string());
        inferConfig(file, trial);  // a vocabulary larger than the token table is refused here
      } catch (const Error& e) {
        if (notes) notes->push_back(std::string("vocabulary not used: ") + e.what());
        continue;
      }
      answers = std::move(trial);
      if (notes)
        notes->push_back("vocabulary: " + path.string() + " (where " + spec.family +
                         "'s own scripts look: " + pattern + ")");
      return true;
    }
  return false;
}

Inference inferWithAnswers(const TensorSource& file, const UserSupplied& supplied) {
  return inferConfig(file, answersWith(file.path(), supplied));
}

void rememberAnswers(const std::string& model_path, const UserSupplied& given) {
  writeFileAtomically(answersPath(model_path),
                      answersWith(model_path, given).toJson().dump(2) + "\n");
}

FoundConfig findOrInferConfig(const TensorSource& file, const LoadOptions& options) {
  FoundConfig f;
  namespace fs = std::filesystem;
  const fs::path model(file.path());
  auto parsed = [&](const std::string& text, const std::string& what) {
    f.config = parseConfigText(text, what);
    f.source = what;
    return f;
  };
  if (!options.config_path.empty())
    return parsed(readBoundedFile(options.config_path, 64ull << 20, "the config file"),
                  options.config_path);
  if (auto it = file.metadata().find("attnviz_config"); it != file.metadata().end())
    return parsed(it->second, file.path() + " __metadata__[\"attnviz_config\"]");
  // attnviz's config beside the file (model.json for model.safetensors); an index of shards is
  // itself a .json.
  const fs::path side = fs::path(model).replace_extension(".json");
  if (!isShardIndex(model.string()) && fs::exists(side))
    return parsed(readBoundedFile(side.string(), 64ull << 20, "the config file"), side.string());
  // Hugging Face's convention: config.json in the model's folder, attnviz's (it has a family) or
  // Hugging Face's own (it has a model_type).
  const fs::path folder_config = model.parent_path() / "config.json";
  if (fs::exists(folder_config)) {
    const nlohmann::json j = readJsonFile(folder_config.string());
    if (j.is_object() && j.contains("family")) {
      f.config = ModelConfig::fromJson(j, folder_config.string());
      f.source = folder_config.string();
      return f;
    }
    if (isHfConfig(j)) {
      const std::string folder = model.parent_path().string();
      const ArchSpec& spec = hfArchitecture(j, folder, &f.notes);
      f.source = folder_config.string() + " (Hugging Face's)";
      if (spec.hasCross()) {
        f.config = configFromHf(j, folder, &f.notes);
        return f;
      }
      // The descriptor's config keys over what the tensors tell; the folder's vocabulary.
      UserSupplied given = options.supplied;
      given.family = spec.family;
      given.model = spec.model;
      // The folder's tokenizer and the vocabulary it defines (vocab.json + merges.txt,
      // vocab.txt, tokenizer.json, tokenizer.model), else a vocabulary file alone.
      const int bos = j.contains("bos_token_id") && j["bos_token_id"].is_number_integer()
                          ? (int)std::clamp<int64_t>(j["bos_token_id"].get<int64_t>(), -1, 1 << 30)
                          : -1;
      TokenizerFiles tok = openHfFolderTokenizer(folder, spec.hf_model_type, bos, &f.notes);
      f.tokenizer = given.tokenizer ? given.tokenizer : tok.tokenizer;
      if (given.src_vocab.empty() && given.tgt_vocab.empty() && j.contains("vocab_size") &&
          j["vocab_size"].is_number_integer() && j["vocab_size"].get<int64_t>() >= 1 &&
          j["vocab_size"].get<int64_t>() <= ConfigLimits::kMaxVocab) {
        const int V = (int)j["vocab_size"].get<int64_t>();
        given.src_vocab = given.tgt_vocab =
            !tok.tokens.empty() ? fitVocabulary(std::move(tok.tokens), V, tok.files, &f.notes)
                                : hfVocabulary(folder, spec, V, &f.notes);
      }
      nlohmann::json hf_args = hfWithRopeTheta(j, folder_config.string());
      if (spec.hf_model_type == "gpt_neo")
        hf_args = hfWithGptNeoLayers(hf_args, folder_config.string());
      if (spec.hf_model_type == "gpt_neox")
        hf_args = hfWithGptNeoXRotary(hf_args, folder_config.string());
      if (spec.hf_model_type == "roberta") hfRobertaPad(hf_args, folder_config.string());
      if (spec.hf_model_type == "gemma2") hf_args = hfWithGemma2(hf_args, folder_config.string());
      // OPT's do_layer_norm_before (checked, with word_embed_proj_dim, before the tensors).
      const std::string opt_norm =
          spec.hf_model_type == "opt" ? hfOptNorm(hf_args, folder_config.string()) : "";
      const Inference inf = inferConfig(file, given, &hf_args);
      if (!inf.complete())
        throw MissingInfoError(folder_config.string() + ": " + inf.explain(), inf);
      nlohmann::json c = inf.config;
      if (!opt_norm.empty() && !given.norm) {
        c["norm"] = opt_norm;
        f.notes.push_back(opt_norm + "-LayerNorm (config.json[\"do_layer_norm_before\"] " +
                          (opt_norm == "pre" ? "true or absent)" : "false)"));
      }
      c["name"] = model.parent_path().filename().string();
      c["description"] = "Hugging Face " + spec.hf_classes.front() + " from " + folder;
      f.config = ModelConfig::fromJson(c, folder_config.string() +
                                              " (Hugging Face config mapped "
                                              "to attnviz's)");
      for (const auto& fact : inf.facts) f.notes.push_back(fact);
      f.assumed = inf.assumed;
      f.takes_vocabulary = true;
      return f;
    }
  }
  // No config: what the tensors tell, with what the user supplied now or before.
  if (fs::exists(answersPath(file.path())))
    f.notes.push_back("answers remembered in " + answersPath(file.path()));
  UserSupplied answers = answersWith(file.path(), options.supplied);
  Inference inf = inferConfig(file, answers);
  if (answers.src_vocab.empty() && answers.tgt_vocab.empty() && inf.guess.spec &&
      findTutorialVocabulary(file, *inf.guess.spec, answers, &f.notes))
    inf = inferConfig(file, answers);
  f.tokenizer = answers.tokenizer;
  // What is missing stays data (MissingInfoError::inference): the CLI names its options, the GUI
  // asks in its dialog.
  if (!inf.complete())
    throw MissingInfoError(
        file.path() + ": no config found (looked for __metadata__[\"attnviz_config\"], " +
            side.string() + " and " + folder_config.string() + "); " + inf.explain(),
        inf);
  f.config = ModelConfig::fromJson(inf.config, file.path() + " (config inferred from the tensors)");
  f.source = "inferred from the tensors";
  f.takes_vocabulary = true;
  f.notes.push_back(inf.guess.summary());
  for (const auto& fact : inf.facts) f.notes.push_back(fact);
  f.assumed = inf.assumed;
  return f;
}

std::shared_ptr<const LoadedModel> loadModel(const TensorSource& file, const ModelConfig& config,
                                             const LoadOptions& options) {
  auto m = std::make_shared<LoadedModel>();
  m->path = file.path();
  m->config = config;
  TensorReader r(file, m->warnings);
  const ArchSpec& spec = config.spec();
  m->weights = SpecLoader(r, m->config, spec).read();
  r.finish(spec.summary(), options.allow_partial);
  return m;
}

namespace {

// Bytes the vocabularies' strings take: each token in the config (kept by the LoadedModel) and in
// the Model's Vocabulary with its index (a hash node and a bucket); strings longer than the
// small-string buffer have their own block, three times over.
uint64_t vocabularyBytes(const std::vector<std::string>& v) {
  uint64_t bytes = 0;
  for (const auto& t : v)
    bytes += 2 * sizeof(std::string) + 80 + (t.size() > 15 ? 3 * (t.size() + 17) : 0);
  return bytes;
}

uint64_t weightBytes(const ModelConfig& c) {
  return static_cast<uint64_t>(c.parameterCount()) * sizeof(float);
}

}  // namespace

uint64_t estimateModelBytes(const ModelConfig& config) {
  // Every size is limited by ConfigLimits, so none of this comes near 64 bits.
  const ModelConfig& c = config;
  const uint64_t d = c.d_model, W = weightBytes(c);
  // The sinusoid table a Model computes on the host and uploads (one, shared by both stacks).
  const uint64_t table = c.positional == Positional::Learned || c.positional == Positional::Relative
                             ? 0
                             : static_cast<uint64_t>(c.positionRows()) *
                                   (c.positional == Positional::Rotary ? c.rotaryDims() : d) *
                                   sizeof(float);
  // Uploading a linear layer copies it once (keys and values stacked): the largest one.
  const uint64_t V = c.outputVocab().size();
  const uint64_t largest_linear =
      std::max({(uint64_t)(c.attnWidth() + c.valueWidth()), (uint64_t)c.d_ff, V}) * d *
      sizeof(float);
  // The host weights stay (LoadedModel); the table is built, then uploaded, then freed; then the
  // backend's copy of every weight (on the CPU backend, host memory too).
  return W + table + std::max(table, W + largest_linear) + vocabularyBytes(c.src_vocab) +
         vocabularyBytes(c.tgt_vocab);
}

std::unique_ptr<TensorSource> openTensorFile(const std::string& path) {
  if (isShardIndex(path)) return ShardedSource::open(path, openTensorFile);
  switch (sniffTensorFile(path)) {
    case TensorFileFormat::TorchZip:
    case TensorFileFormat::TorchLegacy:
    case TensorFileFormat::TorchTar:
      return TorchCheckpoint::open(path);
    case TensorFileFormat::Safetensors:
      return std::make_unique<SafetensorsFile>(SafetensorsFile::open(path));
    case TensorFileFormat::Unknown:
      break;
  }
  // Neither format's first bytes: a damaged file. Its name says which reader explains best.
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& ch : ext) ch = (char)std::tolower((unsigned char)ch);
  if (ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".ckpt" || ext == ".tar")
    return TorchCheckpoint::open(path);
  return std::make_unique<SafetensorsFile>(SafetensorsFile::open(path));
}

namespace {

// The model file at `given_path` (a folder's weights file), opened once its size is within the
// limit: the weights can take at most what the file holds.
std::unique_ptr<TensorSource> openModelFile(const std::string& given_path,
                                            const LoadOptions& options, uint64_t* size) {
  // A folder is a Hugging Face model folder: its weights file, with config.json beside it.
  std::error_code ec;
  const std::string path =
      std::filesystem::is_directory(given_path, ec) ? hfWeightsFile(given_path) : given_path;
  if (isShardIndex(path)) {  // several files: their sizes added, checked before any is read
    auto sharded = ShardedSource::open(path, openTensorFile, options.max_model_bytes);
    *size = sharded->bytes();
    return sharded;
  }
  *size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorKind::Io, path + ": cannot open the model (" + ec.message() + ")");
  if (*size > options.max_model_bytes)
    throw Error(ErrorKind::TooLarge, path + ": the file is " + formatBytes(*size) + " (" +
                                         std::to_string(*size) + " bytes); the limit is " +
                                         formatBytes(options.max_model_bytes));
  return openTensorFile(path);
}

// loadModel on an opened model file of `size` bytes.
std::shared_ptr<const LoadedModel> loadOpened(const TensorSource& file, uint64_t size,
                                              const LoadOptions& options) {
  const std::string& path = file.path();
  FoundConfig found = findOrInferConfig(file, options);
  const ModelConfig& config = found.config;
  // Sizes come from the config (learned position tables, sinusoid tables, every weight): check
  // what they need before reading a tensor — and while they are read, the file's data is held
  // beside the float32 weights (an F64 file takes twice their size).
  const uint64_t needed = std::max(estimateModelBytes(config), size + weightBytes(config));
  if (needed > options.max_model_bytes)
    throw Error(ErrorKind::TooLarge,
                path + ": the config describes " + std::to_string(config.parameterCount()) +
                    " parameters (" + std::to_string(config.n_encoder_layers) + "+" +
                    std::to_string(config.n_decoder_layers) + " layers, d_model " +
                    std::to_string(config.d_model) + ", d_ff " + std::to_string(config.d_ff) +
                    ", vocabularies of " + std::to_string(config.src_vocab.size()) + " and " +
                    std::to_string(config.tgt_vocab.size()) + " tokens) needing " +
                    formatBytes(needed) +
                    " to load and run (the float32 weights and the backend's copy, position "
                    "tables, vocabularies); the limit is " +
                    formatBytes(options.max_model_bytes));
  // Names under a prefix ("module." from DataParallel, "model." from a wrapper) are read without.
  const std::string prefix = familyPrefix(file, config.spec());
  PrefixedSource view(file, prefix);
  std::shared_ptr<const LoadedModel> loaded;
  try {
    loaded = loadModel(view, config, options);
  } catch (const Error& e) {
    // Name the family the tensor names look like when it is not the config's.
    const std::vector<FamilyGuess> guesses = guessFamilies(file);
    const bool other = !guesses.empty() && guesses.front().spec != &config.spec();
    if ((e.kind() == ErrorKind::MissingTensor || e.kind() == ErrorKind::UnusedTensor) && other)
      throw Error(e.kind(), std::string(e.what()) + " The tensor names look like " +
                                guesses.front().summary() + ", not " + config.spec().summary() +
                                ".");
    throw;
  }
  // The model is this call's alone: annotated in place, not copied (a copy of the weights would
  // double them at the peak that estimateModelBytes counts).
  auto m = std::const_pointer_cast<LoadedModel>(loaded);
  m->path = path;
  m->notes = found.notes;
  m->assumed = found.assumed;
  m->takes_vocabulary = found.takes_vocabulary;
  m->notes.insert(m->notes.begin(), "config: " + found.source);
  if (const auto* ckpt = dynamic_cast<const TorchCheckpoint*>(&file))
    m->notes.insert(m->notes.begin(), file.formatName() + ": " + ckpt->describeLayout());
  if (!prefix.empty()) m->notes.push_back("tensor name prefix \"" + prefix + "\" stripped");
  if (found.tokenizer)
    m->tokenizer = found.tokenizer;
  else if (config.hasCross() && !config.spec().hf_model_type.empty())
    m->tokenizer =
        openHfTokenizer(std::filesystem::path(path).parent_path().string(), config, &m->notes);
  return m;
}

}  // namespace

std::shared_ptr<const LoadedModel> loadModel(const std::string& path, const LoadOptions& options) {
  uint64_t size = 0;
  const std::unique_ptr<TensorSource> file = openModelFile(path, options, &size);
  return loadOpened(*file, size, options);
}

std::vector<NamedTensor> floatTensors(const TensorSource& file, const std::string& prefix) {
  std::vector<NamedTensor> tensors;
  for (const TensorInfo& info : file.tensors()) {
    if (!isFloatDType(info.dtype)) continue;  // counters and index buffers the model never reads
    const Tensor t = file.toFloat(info);
    NamedTensor nt{prefix + info.name, DType::F32, info.shape,
                   std::vector<uint8_t>(t.data.size() * sizeof(float))};
    std::memcpy(nt.bytes.data(), t.data.data(), nt.bytes.size());
    tensors.push_back(std::move(nt));
  }
  return tensors;
}

std::shared_ptr<const LoadedModel> convertToSafetensors(const std::string& in,
                                                        const std::string& out,
                                                        const LoadOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(out) && fs::equivalent(in, out, ec))
    throw Error(ErrorKind::Usage, out + ": is the model itself; write the conversion elsewhere");
  uint64_t size = 0;
  const std::unique_ptr<TensorSource> file = openModelFile(in, options, &size);
  auto lm = loadOpened(*file, size, options);  // the file read once, for both
  if (lm->tokenizer)
    throw Error(ErrorKind::Usage,
                in + ": a model with its own tokenizer (a Hugging Face folder) opens as it is; "
                     "its tokenizer's files cannot go into one safetensors file");
  if (fs::is_directory(in))
    throw Error(ErrorKind::Usage, in + ": a folder opens as it is; convert takes one model file");
  writeSafetensors(out, floatTensors(*file), {{"attnviz_config", lm->config.toJson().dump()}});
  return lm;
}

// ---- random models (benchmarks, tests) ----

namespace {

Tensor randomTensor(Shape shape, float stddev, std::mt19937& rng) {
  Tensor t(std::move(shape));
  std::normal_distribution<float> dist(0.0f, stddev);
  for (float& v : t.data) v = dist(rng);
  return t;
}

LinearWeights randomLinear(int in, int out, bool bias, std::mt19937& rng) {
  LinearWeights l;
  l.weight = randomTensor({out, in}, 1.0f / std::sqrt((float)in), rng);
  if (bias) l.bias = randomTensor({out}, 0.02f, rng);
  return l;
}

AttentionWeights randomAttention(const ModelConfig& c, std::mt19937& rng) {
  AttentionWeights a;
  a.q = randomLinear(c.d_model, c.attnWidth(), c.q_bias.value_or(false), rng);
  a.k = randomLinear(c.d_model, c.keyWidth(), c.k_bias.value_or(false), rng);
  a.v = randomLinear(c.d_model, c.kvValueWidth(), c.v_bias.value_or(false), rng);
  a.out = randomLinear(c.valueWidth(), c.d_model, c.out_bias.value_or(false), rng);
  return a;
}

StackWeights randomStack(const ModelConfig& c, int layers, int vocab, bool cross,
                         std::mt19937& rng) {
  StackWeights s;
  s.embed.tokens = randomTensor({vocab, c.d_model}, 1.0f, rng);
  if (c.positional == Positional::Learned)
    s.embed.positions = randomTensor({c.max_len + c.position_offset, c.d_model}, 0.1f, rng);
  if (c.positional == Positional::Relative)
    s.relative_bias = randomTensor({c.relative_buckets, c.n_heads}, 1.0f, rng);
  const bool fb = c.ffn_bias.value_or(false);
  for (int l = 0; l < layers; ++l) {
    LayerWeights e;
    e.self_attn = randomAttention(c, rng);
    if (cross) e.cross_attn = randomAttention(c, rng);
    if (c.d_ff > 0) {
      e.ffn.fc1 = randomLinear(c.d_model, c.d_ff, fb, rng);
      if (c.gated_ffn) e.ffn.gate = randomLinear(c.d_model, c.d_ff, fb, rng);
      e.ffn.fc2 = randomLinear(c.d_ff, c.d_model, fb, rng);
    }
    s.layers.push_back(std::move(e));
  }
  return s;
}

}  // namespace

std::shared_ptr<const LoadedModel> makeRandomModel(const ModelConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  auto m = std::make_shared<LoadedModel>();
  m->path = "(random weights)";
  m->config = c;
  ModelConfig& mc = m->config;
  for (auto* b : {&mc.q_bias, &mc.k_bias, &mc.v_bias, &mc.out_bias, &mc.ffn_bias, &mc.proj_bias})
    if (!*b) *b = false;
  ModelWeights& w = m->weights;
  if (c.hasEncoder())
    w.encoder = randomStack(mc, c.n_encoder_layers, (int)c.src_vocab.size(), false, rng);
  if (c.hasDecoder())
    w.decoder = randomStack(mc, c.n_decoder_layers, (int)c.tgt_vocab.size(), c.hasCross(), rng);
  if (c.tokenHead() == TokenHead::Linear)
    w.head.projection = randomLinear(c.d_model, (int)c.outputVocab().size(), false, rng);
  return m;
}

namespace {

template <class W, class F>
void visitTensors(W& w, F&& f) {
  auto linear = [&](const std::string& p, auto& l) {
    f(p + ".weight", l.weight);
    f(p + ".bias", l.bias);
  };
  auto norm = [&](const std::string& p, auto& n) {
    f(p + ".gamma", n.gamma);
    f(p + ".beta", n.beta);
  };
  auto attention = [&](const std::string& p, auto& a) {
    linear(p + ".q", a.q);
    linear(p + ".k", a.k);
    linear(p + ".v", a.v);
    linear(p + ".out", a.out);
  };
  for (auto* s : {&w.encoder, &w.decoder}) {
    const std::string stack = s == &w.encoder ? "encoder" : "decoder";
    f(stack + ".embed.tokens", s->embed.tokens);
    f(stack + ".embed.positions", s->embed.positions);
    f(stack + ".embed.segments", s->embed.segments);
    norm(stack + ".embed.norm", s->embed.norm);
    f(stack + ".relative_bias", s->relative_bias);
    for (size_t i = 0; i < s->layers.size(); ++i) {
      auto& l = s->layers[i];
      const std::string p = stack + ".layers." + std::to_string(i);
      attention(p + ".self_attn", l.self_attn);
      norm(p + ".norm_self", l.norm_self);
      attention(p + ".cross_attn", l.cross_attn);
      norm(p + ".norm_cross", l.norm_cross);
      linear(p + ".ffn.fc1", l.ffn.fc1);
      linear(p + ".ffn.gate", l.ffn.gate);
      linear(p + ".ffn.fc2", l.ffn.fc2);
      norm(p + ".norm_ffn", l.norm_ffn);
    }
    norm(stack + ".final_norm", s->final_norm);
  }
  linear("head.projection", w.head.projection);
  linear("head.mlm_transform", w.head.mlm_transform);
  norm("head.mlm_norm", w.head.mlm_norm);
  linear("head.pooler", w.head.pooler);
  linear("head.classifier", w.head.classifier);
}

}  // namespace

void forEachTensor(ModelWeights& weights,
                   const std::function<void(const std::string&, Tensor&)>& f) {
  visitTensors(weights, f);
}

void forEachTensor(const ModelWeights& weights,
                   const std::function<void(const std::string&, const Tensor&)>& f) {
  visitTensors(weights, f);
}

ModelConfig tutorialSizeConfig(int vocab) {
  ModelConfig c;
  c.family = "nlp-tutorial";
  c.model = "Transformer";
  c.d_model = 512;
  c.d_ff = 2048;
  c.n_heads = 8;
  c.d_k = c.d_v = 64;
  c.n_encoder_layers = c.n_decoder_layers = 6;
  for (int i = 0; i < vocab; ++i) {
    c.src_vocab.push_back(i == 0 ? "P" : "w" + std::to_string(i));
    c.tgt_vocab.push_back(i == 0 ? "P" : i == 1 ? "S" : i == 2 ? "E" : "t" + std::to_string(i));
  }
  c.bos_id = 1;
  c.eos_id = 2;
  c.max_len = 5000;
  c.name = "tutorial-size (random weights)";
  return c;
}

}  // namespace attnviz

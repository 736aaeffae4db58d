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
#include "base/json_safe.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "text/tokenizer.h"

namespace attnviz {

namespace {

// Reads tensors by name and checks their shapes. Problems (missing tensors, wrong shapes, tensors
// left unused) are collected, not thrown one by one, so that finish() names all of them at once.
class TensorReader {
 public:
  TensorReader(const TensorSource& file, std::vector<std::string>& warnings)
      : file_(file), warnings_(warnings) {}

  bool has(const std::string& name) const { return file_.contains(name); }

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

// Reads weights into the one layout, deciding unset bias switches from the file's first layer.
class Loader {
 public:
  Loader(TensorReader& r, ModelConfig& c) : r_(r), c_(c) {}

  // "…weight" [out, in] and "…bias" [out]; an unset `bias` switch becomes whether the file has
  // the first bias asked for.
  LinearWeights linear(const std::string& prefix, int64_t in, int64_t out,
                       std::optional<bool>& bias, const std::string& bias_name = "") {
    LinearWeights l;
    l.weight = r_.get(prefix + ".weight", {out, in});
    const std::string b = bias_name.empty() ? prefix + ".bias" : bias_name;
    if (!bias) bias = r_.has(b);
    if (*bias) l.bias = r_.get(b, {out});
    return l;
  }
  // A linear that always has a bias (the tutorials' heads).
  LinearWeights linearWithBias(const std::string& prefix, int64_t in, int64_t out) {
    std::optional<bool> yes = true;
    return linear(prefix, in, out, yes);
  }

  // A LayerNorm stored under one of several names; absent = identity unless required.
  LayerNormWeights norm(const std::vector<std::string>& prefixes, bool required) {
    const int64_t d = c_.d_model;
    LayerNormWeights n;
    for (const auto& p : prefixes) {
      if (r_.has(p + ".weight")) {
        n.gamma = r_.get(p + ".weight", {d});
        n.beta = r_.get(p + ".bias", {d});
        return n;
      }
    }
    if (required) {
      n.gamma = r_.get(prefixes.front() + ".weight", {d});  // records the missing tensor
      n.beta = r_.get(prefixes.front() + ".bias", {d});
    }
    return n;
  }

  // Q, K, V, out as separate linears (nlp-tutorial, wq-tutorial, MyMultiheadAttention's Linears).
  AttentionWeights separate(const std::string& p, const char* q, const char* k, const char* v,
                            const char* out) {
    const int64_t d = c_.d_model, A = c_.attnWidth(), Av = c_.valueWidth();
    AttentionWeights a;
    a.q = linear(p + "." + q, d, A, c_.q_bias);
    a.k = linear(p + "." + k, d, A, c_.k_bias);
    a.v = linear(p + "." + v, d, Av, c_.v_bias);
    a.out = linear(p + "." + out, Av, d, c_.out_bias);
    return a;
  }

  // nn.MultiheadAttention (in_proj_weight [3d, d] = [W_q; W_k; W_v]) or MyMultiheadAttention in
  // either of its spellings (q_proj_weight Parameters without biases, or q_proj Linears).
  AttentionWeights torchStyle(const std::string& p) {
    const int64_t d = c_.d_model;
    AttentionWeights a;
    if (r_.has(p + ".in_proj_weight")) {
      Tensor w = r_.get(p + ".in_proj_weight", {3 * d, d});
      if (!c_.q_bias) c_.q_bias = c_.k_bias = c_.v_bias = r_.has(p + ".in_proj_bias");
      Tensor b = *c_.q_bias ? r_.get(p + ".in_proj_bias", {3 * d}) : Tensor();
      LinearWeights* parts[3] = {&a.q, &a.k, &a.v};
      for (int i = 0; i < 3 && !w.empty(); ++i) {
        parts[i]->weight = Tensor({d, d}, std::vector<float>(w.data.begin() + i * d * d,
                                                             w.data.begin() + (i + 1) * d * d));
        if (!b.empty())
          parts[i]->bias =
              Tensor({d}, std::vector<float>(b.data.begin() + i * d, b.data.begin() + (i + 1) * d));
      }
    } else if (r_.has(p + ".q_proj_weight")) {
      std::optional<bool> no = false;
      if (c_.q_bias && *c_.q_bias) no = true;  // records the bias tensors as missing
      a.q.weight = r_.get(p + ".q_proj_weight", {d, d});
      a.k.weight = r_.get(p + ".k_proj_weight", {d, d});
      a.v.weight = r_.get(p + ".v_proj_weight", {d, d});
      if (!c_.q_bias) c_.q_bias = c_.k_bias = c_.v_bias = false;
      if (*c_.q_bias) {
        a.q.bias = r_.get(p + ".q_proj_bias", {d});
        a.k.bias = r_.get(p + ".k_proj_bias", {d});
        a.v.bias = r_.get(p + ".v_proj_bias", {d});
      }
    } else {
      a.q = linear(p + ".q_proj", d, d, c_.q_bias);
      a.k = linear(p + ".k_proj", d, d, c_.k_bias);
      a.v = linear(p + ".v_proj", d, d, c_.v_bias);
    }
    a.out = linear(p + ".out_proj", d, d, c_.out_bias);
    return a;
  }

  // The step-by-step encoder's MultiHeadAttention: one AttentionHead (q, k, v Linears of
  // [head_dim, d]) per head, stacked here into [H·head_dim, d], then output_linear.
  AttentionWeights perHead(const std::string& p) {
    const int64_t d = c_.d_model, dk = c_.d_k;
    AttentionWeights a;
    LinearWeights* parts[3] = {&a.q, &a.k, &a.v};
    std::optional<bool>* biases[3] = {&c_.q_bias, &c_.k_bias, &c_.v_bias};
    const char* names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; ++i) {
      std::vector<float> w, b;
      for (int h = 0; h < c_.n_heads; ++h) {
        LinearWeights one =
            linear(p + ".heads." + std::to_string(h) + "." + names[i], d, dk, *biases[i]);
        w.insert(w.end(), one.weight.data.begin(), one.weight.data.end());
        b.insert(b.end(), one.bias.data.begin(), one.bias.data.end());
      }
      if ((int64_t)w.size() == c_.n_heads * dk * d)
        parts[i]->weight = Tensor({c_.n_heads * dk, d}, w);
      if ((int64_t)b.size() == c_.n_heads * dk) parts[i]->bias = Tensor({c_.n_heads * dk}, b);
    }
    a.out = linear(p + ".output_linear", c_.valueWidth(), d, c_.out_bias);
    return a;
  }

  FeedForwardWeights ffn(const std::string& fc1, const std::string& fc2) {
    return {linear(fc1, c_.d_model, c_.d_ff, c_.ffn_bias),
            linear(fc2, c_.d_ff, c_.d_model, c_.ffn_bias)};
  }

  // Token table [vocab, d], learned positions [max_len, d] when the config says so.
  EmbeddingWeights embedding(const std::string& tokens, int64_t vocab,
                             const std::string& positions) {
    EmbeddingWeights e;
    e.tokens = r_.get(tokens, {vocab, c_.d_model});
    if (c_.positional == Positional::Learned)
      e.positions = r_.get(positions, {(int64_t)c_.max_len + c_.position_offset, c_.d_model});
    return e;
  }

  // The token output projection [V, d] (+ bias, as the file has it).
  LinearWeights projection(const std::string& prefix) {
    return linear(prefix, c_.d_model, (int64_t)c_.outputVocab().size(), c_.proj_bias);
  }

  // Class logits [n_classes, d]; the class count comes from the tensor when the config lacks it.
  LinearWeights classifier(const std::string& prefix) {
    if (c_.n_classes == 0) {
      const TensorInfo* info = nullptr;
      if (r_.has(prefix + ".weight")) info = fileInfo(prefix + ".weight");
      if (info && info->shape.size() == 2 && info->shape[0] >= 1 &&
          info->shape[0] <= ConfigLimits::kMaxClasses)
        c_.n_classes = (int)info->shape[0];
      else
        c_.n_classes = 2;  // what the tutorial's BertModel has; the shape check reports the rest
    }
    return linearWithBias(prefix, c_.d_model, c_.n_classes);
  }

  void setFile(const TensorSource* f) { file_ = f; }
  const TensorInfo* fileInfo(const std::string& name) const {
    return file_ ? file_->find(name) : nullptr;
  }

  TensorReader& r_;
  ModelConfig& c_;
  const TensorSource* file_ = nullptr;
};

std::string layerPrefix(const std::string& stack, int l) {
  return stack + "layers." + std::to_string(l);
}

// nlp-tutorial (W_Q/W_K/W_V/fc, pos_ffn.fc.0/2, optional LayerNorms) and wq-tutorial
// (WQ/WK/WV/linear, pos_ffn.l1/l2, LayerNorms inside each sublayer).
void readTutorialFamily(Loader& L, ModelWeights& w) {
  ModelConfig& c = L.c_;
  TensorReader& r = L.r_;
  const bool nlp = c.family == Family::NlpTutorial;
  const bool bert = c.model == ModelClass::BertModel;
  // nlp-tutorial builds nn.LayerNorm inside forward(): absent tensors mean identity. People who
  // fix that store them as .layer_norm. or .ln.; wq-tutorial always has .layer_norm.
  auto norm = [&](const std::string& p) { return L.norm({p + ".layer_norm", p + ".ln"}, !nlp); };
  auto attention = [&](const std::string& p) {
    return nlp ? L.separate(p, "W_Q", "W_K", "W_V", "fc")
               : L.separate(p, "WQ", "WK", "WV", "linear");
  };
  auto ffn = [&](const std::string& p) {
    return nlp ? L.ffn(p + ".fc.0", p + ".fc.2") : L.ffn(p + ".l1", p + ".l2");
  };
  if (c.hasEncoder()) {
    // BertModel keeps its embeddings and layers at the top level.
    const std::string s = bert ? "" : "encoder.";
    const int64_t V = (int64_t)c.src_vocab.size();
    w.encoder.embed = bert ? L.embedding("tok_embed.weight", V, "pos_embed.weight")
                           : L.embedding("encoder.src_emb.weight", V, "encoder.pos_emb.weight");
    r.ignore(bert ? "pos_embed.pe" : "encoder.pos_emb.pe");
    if (c.n_segments)
      w.encoder.embed.segments = r.get("seg_embed.weight", {c.n_segments, c.d_model});
    for (int l = 0; l < c.n_encoder_layers; ++l) {
      const std::string p = layerPrefix(s, l);
      LayerWeights e;
      e.self_attn = attention(p + ".enc_self_attn");
      e.norm_self = norm(p + ".enc_self_attn");
      e.ffn = ffn(p + ".pos_ffn");
      e.norm_ffn = norm(p + ".pos_ffn");
      w.encoder.layers.push_back(std::move(e));
    }
    if (c.final_norm) w.encoder.final_norm = L.norm({"encoder.layer_norm", "encoder.norm"}, true);
  }
  if (c.hasDecoder()) {
    w.decoder.embed = L.embedding("decoder.tgt_emb.weight", (int64_t)c.tgt_vocab.size(),
                                  "decoder.pos_emb.weight");
    r.ignore("decoder.pos_emb.pe");
    for (int l = 0; l < c.n_decoder_layers; ++l) {
      const std::string p = layerPrefix("decoder.", l);
      LayerWeights e;
      e.self_attn = attention(p + ".dec_self_attn");
      e.norm_self = norm(p + ".dec_self_attn");
      if (c.hasCross()) {
        e.cross_attn = attention(p + ".dec_enc_attn");
        e.norm_cross = norm(p + ".dec_enc_attn");
      }
      e.ffn = ffn(p + ".pos_ffn");
      e.norm_ffn = norm(p + ".pos_ffn");
      w.decoder.layers.push_back(std::move(e));
    }
    if (c.final_norm) w.decoder.final_norm = L.norm({"decoder.layer_norm", "decoder.norm"}, true);
  }
  HeadWeights& h = w.head;
  switch (c.tokenHead()) {
    case TokenHead::Linear:
      h.projection = L.projection("projection");
      break;
    case TokenHead::BertMlm: {
      // logits = norm(act(linear(x))) · decoderᵀ + decoder_bias; decoder.weight is tied to
      // tok_embed.weight in the tutorial (the state_dict holds both).
      h.mlm_transform = L.linearWithBias("linear", c.d_model, c.d_model);
      h.mlm_norm = L.norm({"norm"}, true);
      std::optional<bool> yes = true;
      h.projection =
          L.linear("decoder", c.d_model, (int64_t)c.src_vocab.size(), yes, "decoder_bias");
      break;
    }
    case TokenHead::None:
      break;
  }
  switch (c.classHead()) {
    case ClassHead::Pooler:
      h.pooler = L.linearWithBias("fc", c.d_model, c.d_model);
      h.classifier = L.classifier("classifier");
      break;
    case ClassHead::MeanPool:
      h.classifier = L.classifier("projection");
      break;
    case ClassHead::None:
      break;
  }
}

// Layers named like nn.TransformerEncoderLayer / nn.TransformerDecoderLayer under `root`
// ("transformer." for PyTorch's tutorial, "my_transformer." for the TransformerTranslation
// project): self_attn, multihead_attn, linear1/2, norm1..3, and the stacks' final norms.
void readTorchLayers(Loader& L, ModelWeights& w, const std::string& root) {
  ModelConfig& c = L.c_;
  auto layers = [&](const std::string& stack, int n, bool decoder, StackWeights& out) {
    for (int l = 0; l < n; ++l) {
      const std::string p = layerPrefix(root + stack + ".", l);
      LayerWeights e;
      e.self_attn = L.torchStyle(p + ".self_attn");
      e.norm_self = L.norm({p + ".norm1"}, true);
      if (decoder) {
        e.cross_attn = L.torchStyle(p + ".multihead_attn");
        e.norm_cross = L.norm({p + ".norm2"}, true);
      }
      e.ffn = L.ffn(p + ".linear1", p + ".linear2");
      e.norm_ffn = L.norm({p + (decoder ? ".norm3" : ".norm2")}, true);
      out.layers.push_back(std::move(e));
    }
    if (c.final_norm) out.final_norm = L.norm({root + stack + ".norm"}, true);
  };
  layers("encoder", c.n_encoder_layers, false, w.encoder);
  layers("decoder", c.n_decoder_layers, true, w.decoder);
}

// The wrappers around nn.Transformer-style layers: PyTorch's tutorial Seq2SeqTransformer and the
// TransformerTranslation project's TranslationModel.
struct TorchWrapperNames {
  const char* src_tokens;
  const char* tgt_tokens;
  const char* src_positions;  // learned positions (a variant); sinusoidal ones are a buffer
  const char* tgt_positions;
  const char* position_buffer;
  const char* root;
  const char* projection;
};
constexpr TorchWrapperNames kSeq2SeqTransformer = {"src_tok_emb.embedding.weight",
                                                   "tgt_tok_emb.embedding.weight",
                                                   "src_pos_emb.weight",
                                                   "tgt_pos_emb.weight",
                                                   "positional_encoding.pos_embedding",
                                                   "transformer.",
                                                   "generator"};
constexpr TorchWrapperNames kTranslationModel = {"src_token_embedding.embedding.weight",
                                                 "tgt_token_embedding.embedding.weight",
                                                 "src_pos_embedding.weight",
                                                 "tgt_pos_embedding.weight",
                                                 "pos_embedding.pe",
                                                 "my_transformer.",
                                                 "classification"};

void readTorchWrapper(Loader& L, ModelWeights& w, const TorchWrapperNames& n) {
  ModelConfig& c = L.c_;
  w.encoder.embed = L.embedding(n.src_tokens, (int64_t)c.src_vocab.size(), n.src_positions);
  w.decoder.embed = L.embedding(n.tgt_tokens, (int64_t)c.tgt_vocab.size(), n.tgt_positions);
  L.r_.ignore(n.position_buffer);
  readTorchLayers(L, w, n.root);
  w.head.projection = L.projection(n.projection);
}

void readStepByStepFamily(Loader& L, ModelWeights& w) {
  ModelConfig& c = L.c_;
  w.encoder.embed = L.embedding("embeddings.token_embeddings.weight", (int64_t)c.src_vocab.size(),
                                "embeddings.position_embeddings.weight");
  if (c.embed_norm) w.encoder.embed.norm = L.norm({"embeddings.layer_norm"}, true);
  for (int l = 0; l < c.n_encoder_layers; ++l) {
    const std::string p = layerPrefix("", l);
    LayerWeights e;
    e.norm_self = L.norm({p + ".layer_norm_1"}, true);
    e.self_attn = L.perHead(p + ".attention");
    e.norm_ffn = L.norm({p + ".layer_norm_2"}, true);
    e.ffn = L.ffn(p + ".feed_forward.linear_1", p + ".feed_forward.linear_2");
    w.encoder.layers.push_back(std::move(e));
  }
}

// Hugging Face's MarianMTModel and BartForConditionalGeneration (modeling_marian.py,
// modeling_bart.py), read through a view without the "model." prefix: shared token embeddings
// (each stack's embed_tokens is the same table; the saved file may keep any of the names), BART's
// learned positions and layernorm_embedding, layers of self_attn / encoder_attn (q_proj, k_proj,
// v_proj, out_proj) each followed by its LayerNorm, fc1/fc2 and final_layer_norm; lm_head (tied to
// the embeddings when absent) with final_logits_bias [1, V] as its bias.
void readHfFamily(Loader& L, ModelWeights& w) {
  ModelConfig& c = L.c_;
  TensorReader& r = L.r_;
  auto tokens = [&](const char* stack, int64_t vocab) {
    const std::string own = std::string(stack) + ".embed_tokens.weight";
    return L.embedding(r.has(own) || !r.has("shared.weight") ? own : "shared.weight", vocab,
                       std::string(stack) + ".embed_positions.weight");
  };
  auto stack = [&](const char* name, int layers, bool decoder, int64_t vocab, StackWeights& out) {
    out.embed = tokens(name, vocab);
    const std::string s = name;
    // Marian's [sin | cos] table may be saved (a fixed Parameter); the model computes it.
    if (c.positional != Positional::Learned) r.ignore(s + ".embed_positions.weight");
    if (c.embed_norm) out.embed.norm = L.norm({s + ".layernorm_embedding"}, true);
    for (int l = 0; l < layers; ++l) {
      const std::string p = layerPrefix(s + ".", l);
      LayerWeights e;
      e.self_attn = L.separate(p + ".self_attn", "q_proj", "k_proj", "v_proj", "out_proj");
      e.norm_self = L.norm({p + ".self_attn_layer_norm"}, true);
      if (decoder) {
        e.cross_attn = L.separate(p + ".encoder_attn", "q_proj", "k_proj", "v_proj", "out_proj");
        e.norm_cross = L.norm({p + ".encoder_attn_layer_norm"}, true);
      }
      e.ffn = L.ffn(p + ".fc1", p + ".fc2");
      e.norm_ffn = L.norm({p + ".final_layer_norm"}, true);
      out.layers.push_back(std::move(e));
    }
    if (c.final_norm) out.final_norm = L.norm({s + ".layer_norm"}, true);
  };
  const int64_t Vs = (int64_t)c.src_vocab.size(), Vt = (int64_t)c.tgt_vocab.size();
  stack("encoder", c.n_encoder_layers, false, Vs, w.encoder);
  stack("decoder", c.n_decoder_layers, true, Vt, w.decoder);
  // Tied copies of the one table the stacks read.
  for (const char* tied :
       {"shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight"})
    if (r.has(tied)) r.ignore(tied);
  LinearWeights& proj = w.head.projection;
  if (r.has("lm_head.weight"))
    proj.weight = r.get("lm_head.weight", {Vt, c.d_model});
  else
    proj.weight = w.decoder.embed.tokens;  // tie_word_embeddings
  if (!c.proj_bias) c.proj_bias = r.has("final_logits_bias");
  if (*c.proj_bias) {
    Tensor b = r.get("final_logits_bias", {1, Vt});
    if (!b.empty()) proj.bias = Tensor({Vt}, std::move(b.data));
  }
}

std::string readTextFile(const std::string& path, uint64_t max_bytes) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorKind::Io, path + ": cannot read the config file (" + ec.message() + ")");
  if (size > max_bytes)
    throw Error(ErrorKind::TooLarge, path + ": config file is " + std::to_string(size) +
                                         " bytes; at most " + std::to_string(max_bytes) +
                                         " are read");
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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
    return parseConfigText(readTextFile(explicit_path, kMaxConfigBytes), explicit_path);
  auto it = file.metadata().find("attnviz_config");
  if (it != file.metadata().end())
    return parseConfigText(it->second, file.path() + " __metadata__[\"attnviz_config\"]");
  std::filesystem::path side = std::filesystem::path(file.path()).replace_extension(".json");
  if (std::filesystem::exists(side))
    return parseConfigText(readTextFile(side.string(), kMaxConfigBytes), side.string());
  throw Error(ErrorKind::BadConfig,
              file.path() + ": no config found (looked for __metadata__[\"attnviz_config\"] and " +
                  side.string() + "; pass --config FILE.json)");
}

std::string answersPath(const std::string& model_path) {
  return model_path + ".attnviz.json";
}

namespace {

// A JSON file, bounded in size, as an object; `what` names it in messages.
nlohmann::json readJsonFile(const std::string& path) {
  const std::string text = readTextFile(path, 64ull << 20);
  if (size_t bad = 0; !isValidUtf8(text, &bad))
    throw Error(ErrorKind::InvalidUtf8,
                path + ": not valid UTF-8 (invalid sequence at byte " + std::to_string(bad) + ")");
  return parseJsonStrict(text, path);
}

void overlay(UserSupplied& base, const UserSupplied& top) {
  if (top.family) base.family = top.family;
  if (top.model) base.model = top.model;
  if (top.n_heads) base.n_heads = top.n_heads;
  if (top.pad_id) base.pad_id = top.pad_id;
  if (top.bos_id) base.bos_id = top.bos_id;
  if (top.eos_id) base.eos_id = top.eos_id;
  if (top.norm) base.norm = top.norm;
  if (top.activation) base.activation = top.activation;
  if (!top.src_vocab.empty()) base.src_vocab = top.src_vocab;
  if (!top.tgt_vocab.empty()) base.tgt_vocab = top.tgt_vocab;
}

}  // namespace

Inference inferWithAnswers(const TensorSource& file, const UserSupplied& supplied) {
  UserSupplied answers;
  const std::string path = answersPath(file.path());
  if (std::filesystem::exists(path)) answers = UserSupplied::fromJson(readJsonFile(path), path);
  overlay(answers, supplied);
  return inferConfig(file, answers);
}

void rememberAnswers(const std::string& model_path, const UserSupplied& given) {
  UserSupplied answers;
  const std::string path = answersPath(model_path);
  if (std::filesystem::exists(path)) answers = UserSupplied::fromJson(readJsonFile(path), path);
  overlay(answers, given);
  writeFileAtomically(path, answers.toJson().dump(2) + "\n");
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
    return parsed(readTextFile(options.config_path, 64ull << 20), options.config_path);
  if (auto it = file.metadata().find("attnviz_config"); it != file.metadata().end())
    return parsed(it->second, file.path() + " __metadata__[\"attnviz_config\"]");
  const fs::path side = fs::path(model).replace_extension(".json");
  if (fs::exists(side)) return parsed(readTextFile(side.string(), 64ull << 20), side.string());
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
      f.config = configFromHf(j, model.parent_path().string(), &f.notes);
      f.source = folder_config.string() + " (Hugging Face's)";
      return f;
    }
  }
  // No config: what the tensors tell, with what the user supplied now or before.
  if (fs::exists(answersPath(file.path())))
    f.notes.push_back("answers remembered in " + answersPath(file.path()));
  const Inference inf = inferWithAnswers(file, options.supplied);
  if (!inf.complete()) {
    std::string options_needed;
    for (const auto& q : inf.missing) {
      std::string o = q.key;
      std::replace(o.begin(), o.end(), '_', '-');
      options_needed += (options_needed.empty() ? "--" : ", --") + o;
    }
    throw MissingInfoError(
        file.path() + ": no config found (looked for __metadata__[\"attnviz_config\"], " +
            side.string() + " and " + folder_config.string() + "); " + inf.explain() + "\nGive " +
            options_needed + " (or a config with --config FILE.json, docs/formats.md)",
        inf);
  }
  f.config = ModelConfig::fromJson(inf.config, file.path() + " (config inferred from the tensors)");
  f.source = "inferred from the tensors";
  f.notes.push_back(inf.guess.summary());
  for (const auto& fact : inf.facts) f.notes.push_back(fact);
  return f;
}

std::shared_ptr<const LoadedModel> loadModel(const TensorSource& file, const ModelConfig& config,
                                             const LoadOptions& options) {
  auto m = std::make_shared<LoadedModel>();
  m->path = file.path();
  m->config = config;
  TensorReader r(file, m->warnings);
  Loader L(r, m->config);
  L.setFile(&file);
  switch (config.family) {
    case Family::NlpTutorial:
    case Family::WqTutorial:
      readTutorialFamily(L, m->weights);
      break;
    case Family::PytorchNnTransformer:
      readTorchWrapper(L, m->weights, kSeq2SeqTransformer);
      break;
    case Family::MyTransformer:
      readTorchWrapper(L, m->weights, kTranslationModel);
      break;
    case Family::StepByStepEncoder:
      readStepByStepFamily(L, m->weights);
      break;
    case Family::HfMarian:
    case Family::HfBart:
      readHfFamily(L, m->weights);
      break;
  }
  r.finish(std::string(familyName(config.family)) + " " + modelClassName(config.model),
           options.allow_partial);
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
  const uint64_t table =
      c.positional != Positional::Learned
          ? static_cast<uint64_t>(std::min(c.max_len, ConfigLimits::kMaxSinusoidalPositions)) * d *
                sizeof(float)
          : 0;
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
  const std::string prefix = familyPrefix(file, config.family, config.model);
  PrefixedSource view(file, prefix);
  std::shared_ptr<const LoadedModel> loaded;
  try {
    loaded = loadModel(view, config, options);
  } catch (const Error& e) {
    // Name the family the tensor names look like when it is not the config's.
    const std::vector<FamilyGuess> guesses = guessFamilies(file);
    const bool other = !guesses.empty() && (guesses.front().family != config.family ||
                                            guesses.front().model != config.model);
    if ((e.kind() == ErrorKind::MissingTensor || e.kind() == ErrorKind::UnusedTensor) && other)
      throw Error(e.kind(), std::string(e.what()) + " The tensor names look like " +
                                guesses.front().summary() + ", not " + familyName(config.family) +
                                " " + modelClassName(config.model) + ".");
    throw;
  }
  // The model is this call's alone: annotated in place, not copied (a copy of the weights would
  // double them at the peak that estimateModelBytes counts).
  auto m = std::const_pointer_cast<LoadedModel>(loaded);
  m->path = path;
  m->notes = found.notes;
  m->notes.insert(m->notes.begin(), "config: " + found.source);
  if (const auto* ckpt = dynamic_cast<const TorchCheckpoint*>(&file))
    m->notes.insert(m->notes.begin(), file.formatName() + ": " + ckpt->describeLayout());
  if (!prefix.empty()) m->notes.push_back("tensor name prefix \"" + prefix + "\" stripped");
  if (config.family == Family::HfMarian || config.family == Family::HfBart)
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
  a.k = randomLinear(c.d_model, c.attnWidth(), c.k_bias.value_or(false), rng);
  a.v = randomLinear(c.d_model, c.valueWidth(), c.v_bias.value_or(false), rng);
  a.out = randomLinear(c.valueWidth(), c.d_model, c.out_bias.value_or(false), rng);
  return a;
}

StackWeights randomStack(const ModelConfig& c, int layers, int vocab, bool cross,
                         std::mt19937& rng) {
  StackWeights s;
  s.embed.tokens = randomTensor({vocab, c.d_model}, 1.0f, rng);
  if (c.positional == Positional::Learned)
    s.embed.positions = randomTensor({c.max_len + c.position_offset, c.d_model}, 0.1f, rng);
  const bool fb = c.ffn_bias.value_or(false);
  for (int l = 0; l < layers; ++l) {
    LayerWeights e;
    e.self_attn = randomAttention(c, rng);
    if (cross) e.cross_attn = randomAttention(c, rng);
    e.ffn = {randomLinear(c.d_model, c.d_ff, fb, rng), randomLinear(c.d_ff, c.d_model, fb, rng)};
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
    for (size_t i = 0; i < s->layers.size(); ++i) {
      auto& l = s->layers[i];
      const std::string p = stack + ".layers." + std::to_string(i);
      attention(p + ".self_attn", l.self_attn);
      norm(p + ".norm_self", l.norm_self);
      attention(p + ".cross_attn", l.cross_attn);
      norm(p + ".norm_cross", l.norm_cross);
      linear(p + ".ffn.fc1", l.ffn.fc1);
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
  c.family = Family::NlpTutorial;
  c.model = ModelClass::Transformer;
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

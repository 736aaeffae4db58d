#include "weights.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "error.h"
#include "json_safe.h"
#include "safetensors.h"

namespace attnviz {

namespace {

// Reads tensors by name, checks shapes, and remembers which names were used.
class TensorReader {
 public:
  TensorReader(const TensorSource& file, std::vector<std::string>& warnings)
      : file_(file), warnings_(warnings) {}

  bool has(const std::string& name) const { return file_.contains(name); }

  Tensor get(const std::string& name, const Shape& expected) {
    const TensorInfo* info = file_.find(name);
    if (!info)
      throw Error(ErrorKind::MissingTensor, file_.path() + ": tensor \"" + name +
                                                "\" is missing (expected shape " +
                                                shapeToString(expected) + ")");
    if (info->shape != expected)
      throw Error(ErrorKind::ShapeMismatch, file_.path() + ": tensor \"" + name + "\" has shape " +
                                                shapeToString(info->shape) +
                                                "; the config expects " + shapeToString(expected));
    used_.insert(name);
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

  void reportUnused() {
    std::vector<std::string> unused;
    for (const auto& t : file_.tensors())
      if (!used_.count(t.name)) unused.push_back(t.name);
    if (unused.empty()) return;
    std::string list;
    for (size_t i = 0; i < unused.size() && i < 5; ++i) list += (i ? ", " : "") + unused[i];
    if (unused.size() > 5) list += ", …";
    warnings_.push_back(std::to_string(unused.size()) +
                        " tensor(s) in the file are not used: " + list);
  }

 private:
  const TensorSource& file_;
  std::vector<std::string>& warnings_;
  std::set<std::string> used_;
};

LinearWeights readLinear(TensorReader& r, const std::string& prefix, int64_t in, int64_t out,
                         bool bias) {
  LinearWeights l;
  l.weight = r.get(prefix + ".weight", {out, in});
  if (bias) l.bias = r.get(prefix + ".bias", {out});
  return l;
}

// A LayerNorm that may be absent (identity), stored under one of several names.
LayerNormWeights readNorm(TensorReader& r, const std::vector<std::string>& prefixes, int64_t d,
                          bool required) {
  LayerNormWeights n;
  for (const auto& p : prefixes) {
    if (r.has(p + ".weight")) {
      n.gamma = r.get(p + ".weight", {d});
      n.beta = r.get(p + ".bias", {d});
      return n;
    }
  }
  if (required) r.get(prefixes.front() + ".weight", {d});  // throws MissingTensor
  return n;
}

AttentionWeights readTutorialAttention(TensorReader& r, const ModelConfig& c,
                                       const std::string& p) {
  const bool nlp = c.family == Family::NlpTutorial;
  const int64_t d = c.d_model, A = c.attnWidth(), Av = c.valueWidth();
  AttentionWeights a;
  a.q = readLinear(r, p + (nlp ? ".W_Q" : ".WQ"), d, A, c.attn_bias);
  a.k = readLinear(r, p + (nlp ? ".W_K" : ".WK"), d, A, c.attn_bias);
  a.v = readLinear(r, p + (nlp ? ".W_V" : ".WV"), d, Av, c.attn_bias);
  a.out = readLinear(r, p + (nlp ? ".fc" : ".linear"), Av, d, c.attn_bias);
  return a;
}

FeedForwardWeights readTutorialFfn(TensorReader& r, const ModelConfig& c, const std::string& p) {
  const bool nlp = c.family == Family::NlpTutorial;
  FeedForwardWeights f;
  f.fc1 = readLinear(r, p + (nlp ? ".fc.0" : ".l1"), c.d_model, c.d_ff, c.ffn_bias);
  f.fc2 = readLinear(r, p + (nlp ? ".fc.2" : ".l2"), c.d_ff, c.d_model, c.ffn_bias);
  return f;
}

// nn.MultiheadAttention: in_proj_weight [3d, d] = [W_q; W_k; W_v].
AttentionWeights readTorchAttention(TensorReader& r, const ModelConfig& c, const std::string& p) {
  const int64_t d = c.d_model;
  Tensor w = r.get(p + ".in_proj_weight", {3 * d, d});
  Tensor b = c.attn_bias ? r.get(p + ".in_proj_bias", {3 * d}) : Tensor();
  AttentionWeights a;
  LinearWeights* parts[3] = {&a.q, &a.k, &a.v};
  for (int i = 0; i < 3; ++i) {
    parts[i]->weight = Tensor(
        {d, d}, std::vector<float>(w.data.begin() + i * d * d, w.data.begin() + (i + 1) * d * d));
    if (!b.empty())
      parts[i]->bias =
          Tensor({d}, std::vector<float>(b.data.begin() + i * d, b.data.begin() + (i + 1) * d));
  }
  a.out = readLinear(r, p + ".out_proj", d, d, c.attn_bias);
  return a;
}

void readTutorialFamily(TensorReader& r, const ModelConfig& c, ModelWeights& w) {
  const int64_t d = c.d_model;
  const bool nlp = c.family == Family::NlpTutorial;
  // nlp-tutorial builds nn.LayerNorm inside forward(): absent tensors mean identity. People who
  // fix that store them as .layer_norm. or .ln.; seed003 always has .layer_norm.
  auto norm = [&](const std::string& p) {
    return readNorm(r, {p + ".layer_norm", p + ".ln"}, d, !nlp);
  };
  w.src_embedding = r.get("encoder.src_emb.weight", {(int64_t)c.src_vocab.size(), d});
  w.tgt_embedding = r.get("decoder.tgt_emb.weight", {(int64_t)c.tgt_vocab.size(), d});
  if (c.positional == Positional::Learned) {
    w.src_positions = r.get("encoder.pos_emb.weight", {c.max_len, d});
    w.tgt_positions = r.get("decoder.pos_emb.weight", {c.max_len, d});
  }
  r.ignore("encoder.pos_emb.pe");
  r.ignore("decoder.pos_emb.pe");
  for (int l = 0; l < c.n_encoder_layers; ++l) {
    const std::string p = "encoder.layers." + std::to_string(l);
    EncoderLayerWeights e;
    e.self_attn = readTutorialAttention(r, c, p + ".enc_self_attn");
    e.norm_attn = norm(p + ".enc_self_attn");
    e.ffn = readTutorialFfn(r, c, p + ".pos_ffn");
    e.norm_ffn = norm(p + ".pos_ffn");
    w.encoder.push_back(std::move(e));
  }
  for (int l = 0; l < c.n_decoder_layers; ++l) {
    const std::string p = "decoder.layers." + std::to_string(l);
    DecoderLayerWeights e;
    e.self_attn = readTutorialAttention(r, c, p + ".dec_self_attn");
    e.norm_self = norm(p + ".dec_self_attn");
    e.cross_attn = readTutorialAttention(r, c, p + ".dec_enc_attn");
    e.norm_cross = norm(p + ".dec_enc_attn");
    e.ffn = readTutorialFfn(r, c, p + ".pos_ffn");
    e.norm_ffn = norm(p + ".pos_ffn");
    w.decoder.push_back(std::move(e));
  }
  w.projection.weight = r.get("projection.weight", {(int64_t)c.tgt_vocab.size(), d});
  w.projection.bias = r.optional("projection.bias", {(int64_t)c.tgt_vocab.size()});
}

void readTorchFamily(TensorReader& r, const ModelConfig& c, ModelWeights& w) {
  const int64_t d = c.d_model;
  w.src_embedding = r.get("src_tok_emb.embedding.weight", {(int64_t)c.src_vocab.size(), d});
  w.tgt_embedding = r.get("tgt_tok_emb.embedding.weight", {(int64_t)c.tgt_vocab.size(), d});
  if (c.positional == Positional::Learned) {
    w.src_positions = r.get("src_pos_emb.weight", {c.max_len, d});
    w.tgt_positions = r.get("tgt_pos_emb.weight", {c.max_len, d});
  }
  r.ignore("positional_encoding.pos_embedding");
  auto ffn = [&](const std::string& p) {
    FeedForwardWeights f;
    f.fc1 = readLinear(r, p + ".linear1", d, c.d_ff, c.ffn_bias);
    f.fc2 = readLinear(r, p + ".linear2", c.d_ff, d, c.ffn_bias);
    return f;
  };
  for (int l = 0; l < c.n_encoder_layers; ++l) {
    const std::string p = "transformer.encoder.layers." + std::to_string(l);
    EncoderLayerWeights e;
    e.self_attn = readTorchAttention(r, c, p + ".self_attn");
    e.norm_attn = readNorm(r, {p + ".norm1"}, d, true);
    e.ffn = ffn(p);
    e.norm_ffn = readNorm(r, {p + ".norm2"}, d, true);
    w.encoder.push_back(std::move(e));
  }
  for (int l = 0; l < c.n_decoder_layers; ++l) {
    const std::string p = "transformer.decoder.layers." + std::to_string(l);
    DecoderLayerWeights e;
    e.self_attn = readTorchAttention(r, c, p + ".self_attn");
    e.norm_self = readNorm(r, {p + ".norm1"}, d, true);
    e.cross_attn = readTorchAttention(r, c, p + ".multihead_attn");
    e.norm_cross = readNorm(r, {p + ".norm2"}, d, true);
    e.ffn = ffn(p);
    e.norm_ffn = readNorm(r, {p + ".norm3"}, d, true);
    w.decoder.push_back(std::move(e));
  }
  w.projection.weight = r.get("generator.weight", {(int64_t)c.tgt_vocab.size(), d});
  w.projection.bias = r.optional("generator.bias", {(int64_t)c.tgt_vocab.size()});
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

std::shared_ptr<const LoadedModel> loadModel(const TensorSource& file, const ModelConfig& config) {
  auto m = std::make_shared<LoadedModel>();
  m->path = file.path();
  m->config = config;
  TensorReader r(file, m->warnings);
  if (config.family == Family::TorchSeq2Seq) {
    readTorchFamily(r, config, m->weights);
    if (config.final_norm) {
      m->weights.encoder_final_norm =
          readNorm(r, {"transformer.encoder.norm"}, config.d_model, true);
      m->weights.decoder_final_norm =
          readNorm(r, {"transformer.decoder.norm"}, config.d_model, true);
    }
  } else {
    readTutorialFamily(r, config, m->weights);
    if (config.final_norm) {
      m->weights.encoder_final_norm =
          readNorm(r, {"encoder.layer_norm", "encoder.norm"}, config.d_model, true);
      m->weights.decoder_final_norm =
          readNorm(r, {"decoder.layer_norm", "decoder.norm"}, config.d_model, true);
    }
  }
  r.reportUnused();
  return m;
}

uint64_t estimateModelBytes(const ModelConfig& config) {
  // Every size is limited by ConfigLimits, so none of this comes near 64 bits.
  uint64_t bytes = static_cast<uint64_t>(config.parameterCount()) * 4;
  if (config.positional == Positional::Sinusoidal)
    bytes +=
        2 * static_cast<uint64_t>(std::min(config.max_len, ConfigLimits::kMaxSinusoidalPositions)) *
        static_cast<uint64_t>(config.d_model) * 4;
  return bytes;
}

std::shared_ptr<const LoadedModel> loadModel(const std::string& path, const LoadOptions& options) {
  // The weights can take at most what the file holds; refuse files above the limit up front.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(ErrorKind::Io, path + ": is a directory, not a .safetensors file");
  auto size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorKind::Io, path + ": cannot open the model (" + ec.message() + ")");
  if (size > options.max_model_bytes)
    throw Error(ErrorKind::TooLarge, path + ": the file is " + formatBytes(size) + " (" +
                                         std::to_string(size) + " bytes); the limit is " +
                                         formatBytes(options.max_model_bytes));
  SafetensorsFile file = SafetensorsFile::open(path);
  ModelConfig config = findConfig(file, options.config_path);
  // Sizes come from the config (learned position tables, sinusoid tables, every weight): check
  // what they need before reading a tensor.
  const uint64_t needed = estimateModelBytes(config);
  if (needed > options.max_model_bytes)
    throw Error(ErrorKind::TooLarge,
                path + ": the config describes " + std::to_string(config.parameterCount()) +
                    " parameters (" + std::to_string(config.n_encoder_layers) + "+" +
                    std::to_string(config.n_decoder_layers) + " layers, d_model " +
                    std::to_string(config.d_model) + ", d_ff " + std::to_string(config.d_ff) +
                    ") needing " + formatBytes(needed) + " as float32; the limit is " +
                    formatBytes(options.max_model_bytes));
  return loadModel(file, config);
}

}  // namespace attnviz

#include <random>

namespace attnviz {

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
  a.q = randomLinear(c.d_model, c.attnWidth(), c.attn_bias, rng);
  a.k = randomLinear(c.d_model, c.attnWidth(), c.attn_bias, rng);
  a.v = randomLinear(c.d_model, c.valueWidth(), c.attn_bias, rng);
  a.out = randomLinear(c.valueWidth(), c.d_model, c.attn_bias, rng);
  return a;
}
FeedForwardWeights randomFfn(const ModelConfig& c, std::mt19937& rng) {
  return {randomLinear(c.d_model, c.d_ff, c.ffn_bias, rng),
          randomLinear(c.d_ff, c.d_model, c.ffn_bias, rng)};
}
}  // namespace

std::shared_ptr<const LoadedModel> makeRandomModel(const ModelConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  auto m = std::make_shared<LoadedModel>();
  m->path = "(random weights)";
  m->config = c;
  ModelWeights& w = m->weights;
  w.src_embedding = randomTensor({(int64_t)c.src_vocab.size(), c.d_model}, 1.0f, rng);
  w.tgt_embedding = randomTensor({(int64_t)c.tgt_vocab.size(), c.d_model}, 1.0f, rng);
  if (c.positional == Positional::Learned) {
    w.src_positions = randomTensor({c.max_len, c.d_model}, 0.1f, rng);
    w.tgt_positions = randomTensor({c.max_len, c.d_model}, 0.1f, rng);
  }
  for (int l = 0; l < c.n_encoder_layers; ++l) {
    EncoderLayerWeights e;
    e.self_attn = randomAttention(c, rng);
    e.ffn = randomFfn(c, rng);
    w.encoder.push_back(std::move(e));
  }
  for (int l = 0; l < c.n_decoder_layers; ++l) {
    DecoderLayerWeights e;
    e.self_attn = randomAttention(c, rng);
    e.cross_attn = randomAttention(c, rng);
    e.ffn = randomFfn(c, rng);
    w.decoder.push_back(std::move(e));
  }
  w.projection = randomLinear(c.d_model, (int)c.tgt_vocab.size(), false, rng);
  return m;
}

ModelConfig tutorialSizeConfig(int vocab) {
  ModelConfig c;
  c.family = Family::NlpTutorial;
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

#include "arch/hf_folder.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/json_safe.h"
#include "text/bpe_tokenizer.h"
#include "text/sentencepiece_tokenizer.h"
#include "text/vocab_files.h"

namespace attnviz {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

[[noreturn]] void refuse(const std::string& where, const std::string& what) {
  throw Error(ErrorKind::BadConfig, where + ": " + what);
}

int integer(const json& hf, const char* key, const std::string& where, const int* fallback) {
  if (!hf.contains(key) || hf[key].is_null()) {
    if (fallback) return *fallback;
    refuse(where, std::string("missing key \"") + key + "\"");
  }
  const json& v = hf[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1 << 30))
    refuse(where, std::string("\"") + key + "\" is " + clipForMessage(v.dump(), 40) +
                      ", expected a non-negative integer");
  return (int)v.get<int64_t>();
}

bool boolean(const json& hf, const char* key, const std::string& where, bool fallback) {
  if (!hf.contains(key) || hf[key].is_null()) return fallback;
  if (!hf[key].is_boolean())
    refuse(where, std::string("\"") + key + "\" is " + clipForMessage(hf[key].dump(), 40) +
                      ", expected true or false");
  return hf[key].get<bool>();
}

// A vocabulary file's tokens fitted to the model's table of V rows: tokens with ids beyond it are
// dropped (BART-large-CNN's vocab.json has <mask> at 50264 for 50264 rows), missing rows named.
std::vector<std::string> fittedVocab(const std::string& path, int V,
                                     std::vector<std::string>* notes) {
  return fitVocabulary(readVocabularyFile(path), V, fs::path(path).filename().string(), notes);
}

std::vector<std::string> idTokens(int V) {
  std::vector<std::string> t;
  for (int i = 0; i < V; ++i) t.push_back(std::to_string(i));
  return t;
}

int findToken(const std::vector<std::string>& v, const char* token) {
  auto it = std::find(v.begin(), v.end(), token);
  return it == v.end() ? -1 : (int)(it - v.begin());
}

// A positive finite float32 (an epsilon), `fallback` when absent or null.
float positive(const json& hf, const char* key, const std::string& where, float fallback) {
  if (!hf.contains(key) || hf[key].is_null()) return fallback;
  const json& v = hf[key];
  const float f = v.is_number() ? (float)v.get<double>() : 0.0f;
  if (!v.is_number() || !std::isfinite(f) || !(f > 0.0f) || f > 1.0f)
    refuse(where, std::string("\"") + key + "\" is " + clipForMessage(v.dump(), 40) +
                      ", expected a positive number of at most 1");
  return f;
}

// A key that must be absent, null or `accepted` (attnviz does not reproduce anything else).
void onlyValue(const json& hf, const char* key, const json& accepted, const std::string& where,
               const std::string& why) {
  if (hf.contains(key) && !hf[key].is_null() && hf[key] != accepted)
    refuse(where,
           std::string("\"") + key + "\" is " + clipForMessage(hf[key].dump(), 40) + ": " + why);
}

// T5Config (configuration_t5.py; MT5Config the same) onto attnviz's config keys. Every key
// modeling_t5.py reads is read; the keys of training, generation and bookkeeping are named as
// ignored in the notes; anything else is named too, never silently dropped.
ModelConfig configFromT5(const json& hf, const std::string& folder, const ArchSpec& t,
                         std::vector<std::string>* notes) {
  const std::string where = (fs::path(folder) / "config.json").string();
  const int d = integer(hf, "d_model", where, nullptr);
  const int heads = integer(hf, "num_heads", where, nullptr);
  const int d_kv = integer(hf, "d_kv", where, nullptr);
  const int d_ff = integer(hf, "d_ff", where, nullptr);
  const int layers = integer(hf, "num_layers", where, nullptr);
  const int dec_layers = integer(hf, "num_decoder_layers", where, &layers);
  const int V = integer(hf, "vocab_size", where, nullptr);
  if (V < 1 || V > ConfigLimits::kMaxVocab)
    refuse(where, "a vocabulary of " + std::to_string(V) + " tokens (1 to " +
                      std::to_string(ConfigLimits::kMaxVocab) + " are read)");
  const int buckets_default = 32, distance_default = 128;  // T5Config's
  const int buckets = integer(hf, "relative_attention_num_buckets", where, &buckets_default);
  const int distance = integer(hf, "relative_attention_max_distance", where, &distance_default);
  if (buckets < 4 || buckets > ConfigLimits::kMaxRelativeBuckets)
    refuse(where, "\"relative_attention_num_buckets\" is " + std::to_string(buckets) +
                      ", expected 4 to " + std::to_string(ConfigLimits::kMaxRelativeBuckets) +
                      " (the encoder's half of them, exact and logarithmic)");
  if (distance <= buckets / 2)
    refuse(where,
           "\"relative_attention_max_distance\" " + std::to_string(distance) +
               " is not beyond the " + std::to_string(buckets / 2) +
               " distances with a bucket each (relative_attention_num_buckets / 2): "
               "modeling_t5.py's logarithm of max_distance / (num_buckets / 2) has no range");

  // feed_forward_proj "{act}" or "gated-{act}"; "gated-gelu" is gelu_new. A config.json that
  // also holds dense_act_fn and is_gated_act (saved from the config object) has them win, as
  // PretrainedConfig sets them after T5Config derives them.
  const std::string proj = hf.contains("feed_forward_proj") && hf["feed_forward_proj"].is_string()
                               ? hf["feed_forward_proj"].get<std::string>()
                               : "relu";
  if (hf.contains("feed_forward_proj") && !hf["feed_forward_proj"].is_string() &&
      !hf["feed_forward_proj"].is_null())
    refuse(where, "\"feed_forward_proj\" is " + clipForMessage(hf["feed_forward_proj"].dump(), 40) +
                      ", expected \"relu\" or \"gated-gelu\"");
  const bool gated_named = proj.rfind("gated-", 0) == 0;
  std::string act = gated_named ? proj.substr(6) : proj;
  if (act.find('-') != std::string::npos)
    refuse(where, "\"feed_forward_proj\" is \"" + clipForMessage(proj, 40) +
                      "\", expected \"{ACT_FN}\" or \"gated-{ACT_FN}\" (\"relu\", \"gated-gelu\")");
  if (proj == "gated-gelu") act = "gelu_new";
  const bool gated = boolean(hf, "is_gated_act", where, gated_named);
  if (hf.contains("dense_act_fn") && !hf["dense_act_fn"].is_null()) {
    if (!hf["dense_act_fn"].is_string())
      refuse(where, "\"dense_act_fn\" is " + clipForMessage(hf["dense_act_fn"].dump(), 40) +
                        ", expected an activation's name");
    act = hf["dense_act_fn"].get<std::string>();
  }
  const std::pair<const char*, const char*> acts[] = {
      {"relu", "relu"},          {"gelu", "gelu"},
      {"gelu_new", "gelu_tanh"}, {"gelu_pytorch_tanh", "gelu_tanh"},
      {"silu", "silu"},          {"swish", "silu"}};
  const char* activation = nullptr;
  for (const auto& [hf_name, ours] : acts)
    if (act == hf_name) activation = ours;
  if (!activation)
    refuse(where, "the feed-forward's activation \"" + clipForMessage(act, 40) + "\" (from \"" +
                      clipForMessage(proj, 40) +
                      "\") is not one attnviz computes (relu, gelu, gelu_new, gelu_pytorch_tanh, "
                      "silu)");

  onlyValue(hf, "is_encoder_decoder", true, where,
            "attnviz runs T5 as the encoder-decoder T5ForConditionalGeneration is");
  onlyValue(hf, "is_decoder", false, where, "a T5 stack alone as a decoder is not run");
  onlyValue(hf, "add_cross_attention", false, where, "T5's cross-attention is its own");
  if (hf.contains("pruned_heads") && !hf["pruned_heads"].is_null() &&
      !(hf["pruned_heads"].is_object() && hf["pruned_heads"].empty()))
    refuse(where, "\"pruned_heads\" is " + clipForMessage(hf["pruned_heads"].dump(), 40) +
                      ": attnviz runs every layer with num_heads heads");

  const bool tied = boolean(hf, "tie_word_embeddings", where, true);
  const int pad_default = 0, eos_default = 1;  // T5Config's
  const int pad = integer(hf, "pad_token_id", where, &pad_default);
  const int eos = integer(hf, "eos_token_id", where, &eos_default);
  if (!hf.contains("decoder_start_token_id") || hf["decoder_start_token_id"].is_null())
    notes->push_back(
        "config.json has no decoder_start_token_id: the decoder starts with the pad token "
        "(T5's published configs state 0, the pad id)");
  const int start = integer(hf, "decoder_start_token_id", where, &pad);

  // Vocabulary: spiece.model's pieces, then T5Tokenizer's <extra_id_N> (the last id is
  // <extra_id_0>), fitted to the V rows of the table.
  const fs::path dir(folder);
  std::vector<std::string> tokens;
  if (fs::exists(dir / "spiece.model") && sentencePieceAvailable()) {
    tokens = readSentencePiecePieces((dir / "spiece.model").string());
    const int pieces = (int)tokens.size();
    const int extra = std::min(100, std::max(0, V - pieces));
    for (int id = pieces; id < pieces + extra; ++id)
      tokens.push_back("<extra_id_" + std::to_string(pieces + extra - 1 - id) + ">");
    tokens = fitVocabulary(std::move(tokens), V, "spiece.model", notes);
  } else {
    tokens = idTokens(V);
    notes->push_back(std::string(fs::exists(dir / "spiece.model")
                                     ? "this build has no SentencePiece (libsentencepiece-dev)"
                                     : "no spiece.model in " + folder) +
                     ": tokens are shown as their ids");
  }

  json c;
  c["family"] = t.family;
  c["model"] = t.model;
  c["d_model"] = d;
  c["n_heads"] = heads;
  c["d_k"] = c["d_v"] = d_kv;
  c["d_ff"] = d_ff;
  c["n_encoder_layers"] = layers;
  c["n_decoder_layers"] = dec_layers;
  c["activation"] = activation;
  c["gated_ffn"] = gated;
  c["layer_norm_eps"] = positive(hf, "layer_norm_epsilon", where, 1e-6f);
  c["relative_buckets"] = buckets;
  c["relative_max_distance"] = distance;
  c["output_scale"] = tied;  // modeling_t5.py: sequence_output × d_model^-0.5 when tied
  c["tied_output"] = tied;
  c["src_vocab"] = c["tgt_vocab"] = tokens;
  c["pad_id"] = pad;
  c["eos_id"] = eos;
  c["bos_id"] = start;
  if (const int unk = findToken(tokens, "<unk>"); unk >= 0) c["src_unk_id"] = c["tgt_unk_id"] = unk;
  c["src_bos_eos"] = true;  // T5Tokenizer appends </s> to the source; no start marker
  c["src_bos_id"] = -1;
  c["src_eos_id"] = eos;
  c["name"] = fs::path(folder).filename().string();
  c["description"] = "Hugging Face " + t.hf_classes.front() + " from " + folder;

  // What else config.json says: training, generation and bookkeeping keys modeling_t5.py leaves
  // alone, named; any other key named as unknown.
  static const char* const kRead[] = {"model_type",
                                      "architectures",
                                      "d_model",
                                      "num_heads",
                                      "d_kv",
                                      "d_ff",
                                      "num_layers",
                                      "num_decoder_layers",
                                      "vocab_size",
                                      "relative_attention_num_buckets",
                                      "relative_attention_max_distance",
                                      "feed_forward_proj",
                                      "is_gated_act",
                                      "dense_act_fn",
                                      "is_encoder_decoder",
                                      "is_decoder",
                                      "add_cross_attention",
                                      "pruned_heads",
                                      "tie_word_embeddings",
                                      "pad_token_id",
                                      "eos_token_id",
                                      "decoder_start_token_id",
                                      "layer_norm_epsilon"};
  static const char* const kIgnored[] = {"dropout_rate",
                                         "classifier_dropout",
                                         "initializer_factor",
                                         "use_cache",
                                         "n_positions",
                                         "output_past",
                                         "gradient_checkpointing",
                                         "task_specific_params",
                                         "torch_dtype",
                                         "dtype",
                                         "transformers_version",
                                         "_name_or_path",
                                         "tokenizer_class",
                                         "bos_token_id",
                                         "return_dict",
                                         "output_attentions",
                                         "output_hidden_states",
                                         "use_return_dict",
                                         "torchscript",
                                         "tie_encoder_decoder",
                                         "chunk_size_feed_forward",
                                         "id2label",
                                         "label2id",
                                         "max_length",
                                         "min_length",
                                         "num_beams",
                                         "early_stopping",
                                         "length_penalty",
                                         "no_repeat_ngram_size",
                                         "prefix",
                                         "forced_bos_token_id",
                                         "forced_eos_token_id",
                                         "bad_words_ids"};
  std::string ignored, unknown;
  for (const auto& item : hf.items()) {
    const std::string& key = item.key();  // a plain name: clang 14 cannot capture a binding
    auto in = [&](const auto& list) {
      return std::find_if(std::begin(list), std::end(list),
                          [&](const char* k) { return key == k; }) != std::end(list);
    };
    if (in(kRead)) continue;
    std::string& to = in(kIgnored) ? ignored : unknown;
    to += (to.empty() ? "" : ", ") + clipForMessage(key, 40);
  }
  if (!ignored.empty())
    notes->push_back("config.json's " + ignored +
                     ": training, generation or bookkeeping settings the forward pass does not "
                     "read (attnviz's greedy decoder takes the plain argmax)");
  if (!unknown.empty())
    notes->push_back("config.json's " + unknown + ": not keys modeling_t5.py reads; ignored");
  notes->push_back("Hugging Face " + t.hf_classes.front() + ": " + std::to_string(d) + " wide, " +
                   std::to_string(layers) + "+" + std::to_string(dec_layers) + " layers, " +
                   std::to_string(heads) + " heads of " + std::to_string(d_kv) + ", " +
                   (gated ? "gated " : "") + act + ", relative position bias of " +
                   std::to_string(buckets) + " buckets up to " + std::to_string(distance) +
                   (tied ? ", lm_head tied to shared (× d_model^-0.5)" : ", lm_head untied"));
  return ModelConfig::fromJson(c, where + " (Hugging Face config mapped to attnviz's)");
}

// Whether a SentencePiece tokenizer can be opened: its files are there (`files`) and this build
// has SentencePiece; otherwise the note says why words are looked up as typed.
bool sentencePieceReady(bool files, const char* missing, std::vector<std::string>* notes) {
  const char* why = !files ? missing
                    : !sentencePieceAvailable()
                        ? "this build has no SentencePiece (libsentencepiece-dev)"
                        : nullptr;
  if (why) notes->push_back(std::string(why) + ": words are looked up in the vocabulary as typed");
  return why == nullptr;
}

}  // namespace

bool isHfConfig(const json& j) {
  return j.is_object() && j.contains("model_type") && !j.contains("family");
}

const ArchSpec& hfArchitecture(const json& hf, const std::string& folder,
                               std::vector<std::string>* notes) {
  const std::string where = (fs::path(folder) / "config.json").string();
  if (!hf.is_object()) refuse(where, "expected a JSON object");
  const std::string type = hf["model_type"].is_string() ? hf["model_type"].get<std::string>() : "";
  const ArchSpec* t = findHfArchitecture(type);
  if (!t) {
    std::string known;
    for (const auto& a : architectures())
      if (!a.hf_model_type.empty())
        known += (known.empty() ? "" : ", ") + a.hf_model_type + " (" + a.hf_classes.front() + ")";
    refuse(where, "model_type \"" + clipForMessage(type, 40) +
                      "\" is not one attnviz runs; it reproduces Hugging Face's " + known);
  }
  const std::string& head_class = t->hf_classes.front();
  const std::string& base_class = t->hf_classes.back();
  if (hf.contains("architectures") && hf["architectures"].is_array() &&
      !hf["architectures"].empty() && hf["architectures"][0].is_string()) {
    const std::string arch = hf["architectures"][0].get<std::string>();
    if (std::find(t->hf_classes.begin(), t->hf_classes.end(), arch) == t->hf_classes.end())
      refuse(where, "\"architectures\" is " + clipForMessage(arch, 60) +
                        ", whose head attnviz does not reproduce; it runs " + head_class +
                        " (and " + base_class + ", its output tied to the embeddings)");
    if (arch == base_class && arch != head_class)
      notes->push_back(arch +
                       ": no language-model head of its own; the logits come from the "
                       "token embeddings, as " +
                       head_class + " ties them");
  }
  return *t;
}

std::vector<std::string> hfVocabulary(const std::string& folder, const ArchSpec& spec, int V,
                                      std::vector<std::string>* notes) {
  const fs::path dir(folder);
  // GPT-2's vocab.json (token → id), BERT's vocab.txt (a token a line).
  for (const char* name : {"vocab.json", "vocab.txt"})
    if (fs::exists(dir / name)) return fittedVocab((dir / name).string(), V, notes);
  notes->push_back("no vocab.json or vocab.txt in " + folder + ": " + spec.summary() +
                   "'s tokens are shown as their ids");
  return {};
}

ModelConfig configFromHf(const json& hf, const std::string& folder,
                         std::vector<std::string>* notes) {
  const std::string where = (fs::path(folder) / "config.json").string();
  const ArchSpec* t = &hfArchitecture(hf, folder, notes);
  const std::string& head_class = t->hf_classes.front();
  if (!t->hasCross())
    refuse(where, t->summary() +
                      " is read by its descriptor's config keys, not as an "
                      "encoder-decoder");
  if (t->hf_tokenizer == HfTokenizer::T5) return configFromT5(hf, folder, *t, notes);
  const bool marian = t->hf_tokenizer == HfTokenizer::Marian;
  const std::string& type = t->hf_model_type;
  const bool bart = type == "bart", mbart = type == "mbart", pegasus = type == "pegasus",
             m2m = type == "m2m_100";
  const int d = integer(hf, "d_model", where, nullptr);
  const int heads = integer(hf, "encoder_attention_heads", where, nullptr);
  const int dec_heads = integer(hf, "decoder_attention_heads", where, &heads);
  const int ffn = integer(hf, "encoder_ffn_dim", where, nullptr);
  const int dec_ffn = integer(hf, "decoder_ffn_dim", where, &ffn);
  if (dec_heads != heads)
    refuse(where, "the encoder has " + std::to_string(heads) + " heads and the decoder " +
                      std::to_string(dec_heads) + "; attnviz runs one head count for both");
  if (dec_ffn != ffn)
    refuse(where, "encoder_ffn_dim " + std::to_string(ffn) + " and decoder_ffn_dim " +
                      std::to_string(dec_ffn) + " differ; attnviz runs one feed-forward width");
  if (m2m && d < 4)
    refuse(where, "d_model " + std::to_string(d) +
                      ": M2M100's sinusoid divides by d_model / 2 - 1, which is not positive");
  if (heads == 0 || d % heads != 0)
    refuse(where, "d_model " + std::to_string(d) + " is not divisible by " + std::to_string(heads) +
                      " heads");
  const int V = integer(hf, "vocab_size", where, nullptr);
  const bool shared = !marian || boolean(hf, "share_encoder_decoder_embeddings", where, true);
  const int Vt = shared ? V : integer(hf, "decoder_vocab_size", where, &V);
  for (int size : {V, Vt})
    if (size < 1 || size > ConfigLimits::kMaxVocab)
      refuse(where, "a vocabulary of " + std::to_string(size) + " tokens (1 to " +
                        std::to_string(ConfigLimits::kMaxVocab) + " are read)");

  json c;
  c["family"] = t->family;
  c["model"] = t->model;
  c["d_model"] = d;
  c["n_heads"] = heads;
  c["d_ff"] = ffn;
  c["n_encoder_layers"] = integer(hf, "encoder_layers", where, nullptr);
  c["n_decoder_layers"] = integer(hf, "decoder_layers", where, nullptr);
  c["max_len"] = integer(hf, "max_position_embeddings", where, nullptr);
  // The configuration classes' defaults: M2M100Config scales the embeddings and runs ReLU.
  c["embed_scale"] = boolean(hf, "scale_embedding", where, m2m);

  const std::string act =
      hf.contains("activation_function") && hf["activation_function"].is_string()
          ? hf["activation_function"].get<std::string>()
      : m2m ? "relu"
            : "gelu";
  const std::pair<const char*, const char*> acts[] = {
      {"swish", "silu"}, {"silu", "silu"},          {"gelu", "gelu"},
      {"relu", "relu"},  {"gelu_new", "gelu_tanh"}, {"gelu_pytorch_tanh", "gelu_tanh"}};
  const char* activation = nullptr;
  for (const auto& [hf_name, ours] : acts)
    if (act == hf_name) activation = ours;
  if (!activation)
    refuse(where, "activation_function \"" + clipForMessage(act, 40) +
                      "\" is not one attnviz computes (swish/silu, gelu, gelu_new, "
                      "gelu_pytorch_tanh, relu)");
  c["activation"] = activation;

  // Vocabularies: vocab.json (token → id), Marian's target_vocab.json when not shared.
  const fs::path dir(folder);
  std::vector<std::string> src, tgt;
  if (fs::exists(dir / "vocab.json")) {
    src = fittedVocab((dir / "vocab.json").string(), V, notes);
    if (shared) {
      tgt = src;
    } else if (fs::exists(dir / "target_vocab.json")) {
      tgt = fittedVocab((dir / "target_vocab.json").string(), Vt, notes);
    } else {
      tgt = idTokens(Vt);
      notes->push_back("no target_vocab.json: target tokens are shown as their ids");
    }
  } else {
    src = idTokens(V);
    tgt = idTokens(Vt);
    notes->push_back("no vocab.json in " + folder + ": tokens are shown as their ids");
  }
  c["src_vocab"] = src;
  c["tgt_vocab"] = tgt;

  // Special ids (the classes' defaults when config.json lacks them). The decoder starts with
  // decoder_start_token_id: Marian's and Pegasus's pad token, BART's and M2M100's end token;
  // MBartConfig states none, and generate() then starts with bos_token_id.
  const int pad_default = marian    ? V - 1
                          : pegasus ? 0
                                    : 1,
            eos_default = marian    ? 0
                          : pegasus ? 1
                                    : 2;
  const int pad = integer(hf, "pad_token_id", where, &pad_default);
  const int eos = integer(hf, "eos_token_id", where, &eos_default);
  const int bos_default = 0;
  const int bos = integer(hf, "bos_token_id", where, &bos_default);
  const int start_default = marian || pegasus ? pad : mbart ? bos : eos;
  if (mbart && (!hf.contains("decoder_start_token_id") || hf["decoder_start_token_id"].is_null()))
    notes->push_back(
        "config.json has no decoder_start_token_id: the decoder starts with "
        "bos_token_id " +
        std::to_string(bos) +
        ", as generate() does (mBART-cc25's translations start with the target "
        "language code: give it as the target prefix)");
  c["pad_id"] = pad;
  c["eos_id"] = eos;
  c["bos_id"] = integer(hf, "decoder_start_token_id", where, &start_default);
  if (const int unk = findToken(src, "<unk>"); unk >= 0) c["src_unk_id"] = unk;
  if (const int unk = findToken(tgt, "<unk>"); unk >= 0) c["tgt_unk_id"] = unk;
  if (bart) {
    // BART's tokenizer wraps the source in <s> … </s>.
    c["src_bos_eos"] = true;
    c["src_bos_id"] = bos;
    c["src_eos_id"] = eos;
  } else if (pegasus) {
    // PegasusTokenizer appends </s>, nothing before it.
    c["src_bos_eos"] = true;
    c["src_bos_id"] = -1;
    c["src_eos_id"] = eos;
  } else {
    // Marian's tokenizer appends </s> itself; mBART's and M2M100's put a language code beside it
    // (mBART: X </s> en_XX; M2M100/NLLB: __en__ X </s>), which ids given as they are carry.
    c["src_bos_eos"] = false;
  }
  c["name"] = fs::path(folder).filename().string();
  c["description"] = "Hugging Face " + head_class + " from " + folder;

  // What config.json says that attnviz's greedy decoder or the model's code leaves alone.
  if (hf.contains("forced_bos_token_id") && !hf["forced_bos_token_id"].is_null())
    notes->push_back("config.json's forced_bos_token_id " +
                     clipForMessage(hf["forced_bos_token_id"].dump(), 40) +
                     ": generate() forces it as the first token after the start token; "
                     "attnviz's greedy decoder does not, give it as the target prefix "
                     "(--tgt-ids " +
                     std::to_string(c["bos_id"].get<int>()) + "," +
                     clipForMessage(hf["forced_bos_token_id"].dump(), 40) + ")");
  for (const char* key : {"forced_eos_token_id", "bad_words_ids"})
    if (hf.contains(key) && !hf[key].is_null())
      notes->push_back(std::string("config.json's ") + key + " " +
                       clipForMessage(hf[key].dump(), 40) +
                       " is a generation rule; attnviz's greedy decoder takes the plain argmax");
  std::string legacy;
  for (const char* key : {"normalize_before", "add_final_layer_norm", "normalize_embedding",
                          "static_position_embeddings"})
    if (hf.contains(key)) legacy += (legacy.empty() ? "" : ", ") + std::string(key);
  if (!legacy.empty())
    notes->push_back("config.json's " + legacy + ": keys of older versions that " + head_class +
                     " no longer reads; ignored");
  notes->push_back("Hugging Face " + head_class + ": " + std::to_string(d) + " wide, " +
                   std::to_string(c["n_encoder_layers"].get<int>()) + "+" +
                   std::to_string(c["n_decoder_layers"].get<int>()) + " layers, " +
                   std::to_string(heads) + " heads, " + act);
  return ModelConfig::fromJson(c, where + " (Hugging Face config mapped to attnviz's)");
}

json hfWithRopeTheta(const json& hf, const std::string& where) {
  if (!hf.is_object()) return hf;
  // rope_scaling (transformers 4's spelling): any scaling is a rotary embedding attnviz does not
  // compute (Llama 3's "llama3", Phi-3's "longrope" / "su", "linear", "dynamic", "yarn"); its
  // type named, as the whole object is often too long to show.
  if (hf.contains("rope_scaling") && hf["rope_scaling"].is_object())
    for (const char* key : {"rope_type", "type"})
      if (hf["rope_scaling"].contains(key))
        refuse(where, std::string("\"rope_scaling\" has ") + key + " " +
                          clipForMessage(hf["rope_scaling"][key].dump(), 40) +
                          ": attnviz reproduces only the unscaled rotary embedding "
                          "(rope_scaling null)");
  if (!hf.contains("rope_parameters") || hf["rope_parameters"].is_null()) return hf;
  const json& rope = hf["rope_parameters"];
  if (!rope.is_object())
    refuse(where, "\"rope_parameters\" is " + clipForMessage(rope.dump(), 40) +
                      ", expected an object such as {\"rope_type\": \"default\", "
                      "\"rope_theta\": 10000.0}");
  for (const char* key : {"rope_type", "type"})
    if (rope.contains(key) && rope[key] != "default")
      refuse(where, std::string("\"rope_parameters\" has ") + key + " " +
                        clipForMessage(rope[key].dump(), 40) +
                        ": attnviz reproduces only the default rotary embedding (rope_type "
                        "\"default\")");
  for (const auto& [key, value] : rope.items())
    if (key != "rope_type" && key != "type" && key != "rope_theta" &&
        key != "partial_rotary_factor")
      refuse(where, "\"rope_parameters\" has \"" + clipForMessage(key, 40) + "\" " +
                        clipForMessage(value.dump(), 40) +
                        ": attnviz reproduces only the default rotary embedding (rope_type, "
                        "rope_theta and partial_rotary_factor)");
  json out = hf;
  // Copied out (transformers reads rope_parameters first) where the family's keys read them:
  // partial_rotary_factor is Phi-3's, refused elsewhere unless 1.
  for (const char* key : {"rope_theta", "partial_rotary_factor"}) {
    if (!rope.contains(key)) continue;
    out[key] = rope[key];
  }
  return out;
}

json hfWithGptNeoLayers(const json& hf, const std::string& where) {
  if (!hf.is_object()) return hf;
  auto kinds = [&](const json& list, const char* key) {
    if (!list.is_array())
      refuse(where, std::string("\"") + key + "\" is " + clipForMessage(list.dump(), 60) +
                        ", expected a list of \"global\" and \"local\"");
    std::vector<std::string> out;
    for (const json& k : list) {
      if (!k.is_string() || (k != "global" && k != "local"))
        refuse(where, std::string("\"") + key + "\" names " + clipForMessage(k.dump(), 40) +
                          ": GPT-Neo's layers are \"global\" or \"local\"");
      out.push_back(k.get<std::string>());
    }
    return out;
  };
  std::vector<std::string> layers, expanded;
  const bool types = hf.contains("attention_types") && !hf["attention_types"].is_null();
  if (types) {
    const json& t = hf["attention_types"];
    if (!t.is_array())
      refuse(where, "\"attention_types\" is " + clipForMessage(t.dump(), 60) +
                        ", expected [[[\"global\", \"local\"], count], …]");
    for (const json& item : t) {
      if (!item.is_array() || item.size() != 2 || !item[1].is_number_integer() ||
          item[1].get<int64_t>() < 0 || item[1].get<int64_t>() > ConfigLimits::kMaxLayers)
        refuse(where, "\"attention_types\" holds " + clipForMessage(item.dump(), 60) +
                          ", expected [[\"global\", \"local\"], count]");
      const std::vector<std::string> pattern = kinds(item[0], "attention_types");
      for (int64_t i = 0; i < item[1].get<int64_t>(); ++i)
        expanded.insert(expanded.end(), pattern.begin(), pattern.end());
      if (expanded.size() > (size_t)ConfigLimits::kMaxLayers)
        refuse(where, "\"attention_types\" names more than " +
                          std::to_string(ConfigLimits::kMaxLayers) + " layers");
    }
  }
  if (hf.contains("attention_layers") && !hf["attention_layers"].is_null()) {
    layers = kinds(hf["attention_layers"], "attention_layers");
    if (types && layers != expanded)
      refuse(where,
             "\"attention_layers\" and \"attention_types\" name different layers; GPTNeoConfig "
             "takes attention_layers, but which the model was trained with is unclear");
  } else if (types) {
    layers = expanded;
  } else {
    refuse(where,
           "no \"attention_types\" or \"attention_layers\": which of GPT-Neo's layers are "
           "local cannot be told");
  }
  if (hf.contains("num_layers") && hf["num_layers"].is_number_integer() &&
      hf["num_layers"].get<int64_t>() != (int64_t)layers.size())
    refuse(where, "the attention layers name " + std::to_string(layers.size()) +
                      " layers, num_layers says " + hf["num_layers"].dump());
  json out = hf;
  if (std::find(layers.begin(), layers.end(), "local") == layers.end()) {
    out.erase("window_size");
    return out;
  }
  const json w = hf.contains("window_size") ? hf["window_size"] : json(256);  // GPTNeoConfig's
  if (!w.is_number_integer() || w.get<int64_t>() < 1 || w.get<int64_t>() > ConfigLimits::kMaxLen)
    refuse(where, "\"window_size\" is " + clipForMessage(w.dump(), 40) +
                      ", expected a positive integer (the keys a local layer sees)");
  out["window_size"] = w;
  return out;
}

json hfWithGemma2(const json& hf, const std::string& where) {
  if (!hf.is_object()) return hf;
  json out = hf;
  const std::pair<const char*, double> defaults[] = {{"query_pre_attn_scalar", 256.0},
                                                     {"attn_logit_softcapping", 50.0},
                                                     {"final_logit_softcapping", 30.0}};
  for (const auto& [key, value] : defaults)
    if (!hf.contains(key)) out[key] = value;
  const int64_t L = hf.contains("num_hidden_layers") && hf["num_hidden_layers"].is_number_integer()
                        ? hf["num_hidden_layers"].get<int64_t>()
                        : 26;  // Gemma2Config's
  if (L < 0 || L > ConfigLimits::kMaxLayers)
    refuse(where, "\"num_hidden_layers\" is " + std::to_string(L));
  bool sliding = false;
  if (hf.contains("layer_types") && !hf["layer_types"].is_null()) {
    const json& t = hf["layer_types"];
    if (!t.is_array() || (int64_t)t.size() != L)
      refuse(where, "\"layer_types\" is " + clipForMessage(t.dump(), 60) + ", expected " +
                        std::to_string(L) +
                        " of \"sliding_attention\" and \"full_attention\" (one per layer)");
    for (const json& k : t) {
      if (k != "sliding_attention" && k != "full_attention")
        refuse(where, "\"layer_types\" names " + clipForMessage(k.dump(), 40) +
                          ": Gemma 2's layers are \"sliding_attention\" or \"full_attention\"");
      sliding = sliding || k == "sliding_attention";
    }
  } else {
    sliding = L > 0;  // the even layers (0, 2, …)
  }
  if (!sliding) {
    out.erase("sliding_window");
    return out;
  }
  const json w = hf.contains("sliding_window") ? hf["sliding_window"] : json(4096);
  if (!w.is_number_integer() || w.get<int64_t>() < 1 || w.get<int64_t>() > ConfigLimits::kMaxLen)
    refuse(where, "\"sliding_window\" is " + clipForMessage(w.dump(), 40) +
                      ", expected a positive integer (the keys a sliding layer sees)");
  out["sliding_window"] = w;
  return out;
}

json hfWithGptNeoXRotary(const json& hf, const std::string& where) {
  if (!hf.is_object()) return hf;
  const std::pair<const char*, const char*> copies[] = {{"rope_theta", "rotary_emb_base"},
                                                        {"partial_rotary_factor", "rotary_pct"}};
  for (const auto& [copy, key] : copies) {
    if (!hf.contains(copy) || hf[copy].is_null()) continue;
    const json& c = hf[copy];
    if (!hf.contains(key) || hf[key].is_null())
      refuse(where, std::string("\"") + copy + "\" " + clipForMessage(c.dump(), 40) +
                        " without \"" + key +
                        "\": GPTNeoXConfig reads the latter (its default otherwise); give it");
    const json& k = hf[key];
    if (!c.is_number() || !k.is_number() || c.get<double>() != k.get<double>())
      refuse(where, std::string("\"") + copy + "\" " + clipForMessage(c.dump(), 40) + " and \"" +
                        key + "\" " + clipForMessage(k.dump(), 40) +
                        " differ: which the model was trained with is unclear");
  }
  return hf;
}

std::string hfOptNorm(const json& hf, const std::string& where) {
  if (!hf.is_object()) return "pre";
  if (hf.contains("word_embed_proj_dim") && !hf["word_embed_proj_dim"].is_null() &&
      hf["word_embed_proj_dim"] != hf.value("hidden_size", json()))
    refuse(where, "word_embed_proj_dim " + clipForMessage(hf["word_embed_proj_dim"].dump(), 20) +
                      " differs from hidden_size " +
                      clipForMessage(hf.value("hidden_size", json()).dump(), 20) +
                      ": OPT then projects the embeddings in and the output out (project_in, "
                      "project_out), which attnviz does not run (opt-350m)");
  if (hf.contains("do_layer_norm_before") && hf["do_layer_norm_before"] == false) return "post";
  return "pre";
}

void hfRobertaPad(const json& hf, const std::string& where) {
  if (!hf.is_object() || !hf.contains("pad_token_id")) return;
  if (hf["pad_token_id"] != 1)
    refuse(where, "pad_token_id " + clipForMessage(hf["pad_token_id"].dump(), 20) +
                      ": RoBERTa's positions start at padding_idx + 1 and attnviz reads them "
                      "from row 2 (pad_token_id 1, every RoBERTa checkpoint's)");
}

std::string hfWeightsFile(const std::string& folder) {
  const fs::path dir(folder);
  for (const char* name : {"model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                           "pytorch_model.bin.index.json"})
    if (fs::exists(dir / name)) return (dir / name).string();
  std::string held;
  std::error_code ec;
  int shown = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (shown++ == 8) {
      held += ", …";
      break;
    }
    held += std::string(held.empty() ? "" : ", ") + e.path().filename().string();
  }
  throw Error(ErrorKind::Io,
              folder +
                  ": no model.safetensors, pytorch_model.bin or index of their shards in the "
                  "folder" +
                  (held.empty() ? std::string(" (it is empty)") : " (it holds " + held + ")") +
                  "; open the model file itself");
}

std::shared_ptr<const Tokenizer> openHfTokenizer(const std::string& folder, const ModelConfig& c,
                                                 std::vector<std::string>* notes) {
  const fs::path dir(folder);
  std::shared_ptr<const Tokenizer> t;
  if (c.spec().hf_tokenizer == HfTokenizer::Marian) {
    const bool files = fs::exists(dir / "source.spm") && fs::exists(dir / "target.spm") &&
                       fs::exists(dir / "vocab.json");
    if (!sentencePieceReady(files, "no source.spm, target.spm and vocab.json", notes))
      return nullptr;
    MarianTokenizerFiles f;
    f.source_spm = (dir / "source.spm").string();
    f.target_spm = (dir / "target.spm").string();
    f.src_vocab = c.src_vocab;
    f.tgt_vocab = c.tgt_vocab;
    f.src_unk_id = c.src_unk_id;
    f.tgt_unk_id = c.tgt_unk_id;
    f.eos_id = c.eos_id;
    f.pad_id = c.tgt_pad_id;
    t = openMarianTokenizer(f);
  } else if (c.spec().hf_tokenizer == HfTokenizer::T5) {
    if (!sentencePieceReady(fs::exists(dir / "spiece.model"), "no spiece.model", notes))
      return nullptr;
    // T5Tokenizer: the pieces' ids, </s> after the source, nothing before it.
    SentencePieceModelFiles f;
    f.model = (dir / "spiece.model").string();
    f.bos_id = -1;
    f.eos_id = c.src_eos_id;
    f.eos_after_source = true;
    t = openSentencePieceModel(f);
  } else if (c.spec().hf_tokenizer == HfTokenizer::ByteLevelBpe) {  // BART
    if (!fs::exists(dir / "merges.txt") || !fs::exists(dir / "vocab.json")) {
      notes->push_back(
          "no vocab.json and merges.txt: words are looked up in the vocabulary "
          "as typed");
      return nullptr;
    }
    BpeTokenizerFiles f;
    f.merges = (dir / "merges.txt").string();
    f.vocab = c.src_vocab;
    f.bos_id = c.src_bos_id;
    f.eos_id = c.src_eos_id;
    f.pad_id = c.src_pad_id;
    f.unk_id = c.src_unk_id;
    t = openByteLevelBpe(f);
  } else if (c.spec().hf_model_type == "mbart" || c.spec().hf_model_type == "m2m_100" ||
             c.spec().hf_model_type == "pegasus") {
    const std::string& type = c.spec().hf_model_type;
    notes->push_back(
        std::string(type == "pegasus"
                        ? "Pegasus's spiece.model with its 103 reserved ids before the pieces"
                    : type == "mbart"
                        ? "mBART's sentencepiece.bpe.model with fairseq's id offsets and "
                          "language codes"
                        : "M2M100's and NLLB's SentencePiece models with fairseq's id offsets "
                          "and language codes") +
        " are not read yet: the source is given as ids (--src-ids, or ids typed as words), "
        "the tokens shown as their ids");
  }
  if (t) notes->push_back("tokenizer: " + t->describe());
  return t;
}

}  // namespace attnviz

// Hugging Face model folders (docs/formats.md "Hugging Face folders"): a MarianMTModel or
// BartForConditionalGeneration saved with save_pretrained — config.json mapped onto attnviz's
// config, the weights file (model.safetensors or pytorch_model.bin), the vocabulary (vocab.json)
// and the tokenizer (Marian's source.spm/target.spm, BART's merges.txt).
#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "arch/config.h"
#include "text/tokenizer.h"

namespace attnviz {

// The architecture a Hugging Face config.json names: its model_type (a descriptor's
// hf_model_type) and, when given, architectures[0] among the descriptor's classes. Throws
// Error(BadConfig) naming what attnviz runs.
const ArchSpec& hfArchitecture(const nlohmann::json& hf, const std::string& folder,
                               std::vector<std::string>* notes);
// A folder's vocabulary for a decoder-only or encoder-only model (vocab.json, vocab.txt) fitted to
// the model's V rows; empty (tokens shown as ids, with a note) when there is none.
std::vector<std::string> hfVocabulary(const std::string& folder, const ArchSpec& spec, int V,
                                      std::vector<std::string>* notes);

// Whether a config.json is Hugging Face's (it names a "model_type") rather than attnviz's.
bool isHfConfig(const nlohmann::json& j);

// attnviz's config for a Hugging Face encoder-decoder's config.json found in `folder` (Marian,
// BART; the others are read through their descriptor's config keys by inferConfig) (vocabularies
// from the folder's vocab.json, and target_vocab.json when Marian's vocabularies are separate;
// tokens shown as ids when there is none). What the model's own code does regardless of config.json
// is the family's (docs/formats.md). Throws Error(BadConfig) naming what attnviz cannot reproduce
// (another model_type or class, different encoder and decoder heads or widths, an unknown
// activation). `notes` receives what was read and what was ignored.
ModelConfig configFromHf(const nlohmann::json& hf, const std::string& folder,
                         std::vector<std::string>* notes);

// transformers 5 writes the rotary embedding's settings inside "rope_parameters" ({"rope_type":
// "default", "rope_theta": …}) where 4.x wrote a top-level "rope_theta": `hf` with rope_theta taken
// (and partial_rotary_factor) taken from rope_parameters (which transformers reads first). Throws
// Error(BadConfig) for a rope_type other than "default", a key of rope_parameters attnviz does not
// reproduce (scaling factors), or a transformers 4 rope_scaling with a type (named in the
// message). `where` names the file in messages.
nlohmann::json hfWithRopeTheta(const nlohmann::json& hf, const std::string& where);

// Gemma 2's config.json with Gemma2Config's defaults where a key is absent (query_pre_attn_scalar
// 256, attn_logit_softcapping 50, final_logit_softcapping 30, sliding_window 4096) and
// layer_types checked: each "sliding_attention" or "full_attention", one per layer (absent:
// sliding on the even layers, as Gemma2Config writes it). sliding_window is removed when no layer
// slides. Throws Error(BadConfig) naming the key.
nlohmann::json hfWithGemma2(const nlohmann::json& hf, const std::string& where);

// GPT-Neo's layers: attention_layers (what GPTNeoConfig keeps, written by save_pretrained), else
// attention_types expanded ([[["global", "local"], 12]]: the pattern, so many times), each "global"
// or "local", as many as num_layers. `hf` with window_size kept when a layer is local (attnviz then
// limits inputs to it: ModelConfig::local_window) and removed when none is. Throws Error(BadConfig)
// for another kind of layer, a wrong count, the two keys disagreeing or a window below 1.
nlohmann::json hfWithGptNeoLayers(const nlohmann::json& hf, const std::string& where);

// GPT-NeoX's rotary settings: rotary_pct and rotary_emb_base, which GPTNeoXConfig reads; the
// rope_theta and partial_rotary_factor newer versions save beside them must agree (alone, without
// the keys they copy, which one a version reads is unclear: refused). Throws Error(BadConfig).
nlohmann::json hfWithGptNeoXRotary(const nlohmann::json& hf, const std::string& where);

// OPT's norm placement: "pre" when do_layer_norm_before is true or absent (OPTConfig's default),
// "post" when false (opt-350m). Throws Error(BadConfig) for a word_embed_proj_dim other than
// hidden_size (project_in / project_out, which attnviz does not run).
std::string hfOptNorm(const nlohmann::json& hf, const std::string& where);

// RoBERTa's padding_idx: pad_token_id 1 (or absent: RobertaConfig's 1), its positions read from
// row 2. Throws Error(BadConfig) for another pad_token_id.
void hfRobertaPad(const nlohmann::json& hf, const std::string& where);

// The weights file in a folder: model.safetensors, else pytorch_model.bin, else the index of their
// shards (model.safetensors.index.json, pytorch_model.bin.index.json). Throws Error(Io) listing
// what it looked for and what the folder holds.
std::string hfWeightsFile(const std::string& folder);

// The folder's tokenizer for an encoder-decoder of config `c` (hf-marian: SentencePiece; hf-bart:
// byte-level BPE; the other model types' come from text/tokenizer_files.h), or null with a note
// saying why (files absent, a build without SentencePiece): the model then looks words up in its
// vocabulary as they are typed.
std::shared_ptr<const Tokenizer> openHfTokenizer(const std::string& folder, const ModelConfig& c,
                                                 std::vector<std::string>* notes);

}  // namespace attnviz

#include "arch/architectures.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "arch/config.h"
#include "base/error.h"
#include "base/json_safe.h"
#include "base/safe_text.h"

namespace attnviz {

const char* roleName(Role r) {
  static const char* const kNames[kRoleCount] = {
      "token_embd",    "position_embd",   "position_table",
      "token_types",   "token_embd_norm", "attn_norm",
      "attn_q",        "attn_k",          "attn_v",
      "attn_qkv",      "attn_output",     "attn_q_norm",
      "attn_k_norm",   "cross_norm",      "cross_q",
      "cross_k",       "cross_v",         "cross_qkv",
      "cross_output",  "ffn_norm",        "ffn_up",
      "ffn_gate",      "ffn_down",        "post_attention_norm",
      "post_ffw_norm", "output_norm",     "output",
      "mlm_dense",     "mlm_norm",        "pooler",
      "cls",           "attn_rel_b"};
  return kNames[(int)r];
}

bool isNormRole(Role r) {
  return r == Role::EmbdNorm || r == Role::AttnNorm || r == Role::AttnQNorm ||
         r == Role::AttnKNorm || r == Role::CrossNorm || r == Role::FfnNorm ||
         r == Role::FinalNorm || r == Role::MlmNorm || r == Role::AttnPostNorm ||
         r == Role::FfnPostNorm;
}

bool isLayerRole(Role r) {
  return r >= Role::AttnNorm && r <= Role::FfnPostNorm;
}

const char* partName(Part p) {
  switch (p) {
    case Part::Encoder:
      return "encoder";
    case Part::Decoder:
      return "decoder";
    case Part::Head:
      return "head";
  }
  return "?";
}

std::string expandName(const std::string& pattern, int layer, int head) {
  std::string out;
  out.reserve(pattern.size() + 4);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '{' && i + 2 < pattern.size() && pattern[i + 2] == '}' &&
        (pattern[i + 1] == 'N' || pattern[i + 1] == 'M')) {
      out += std::to_string(pattern[i + 1] == 'N' ? layer : head);
      i += 2;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

bool matchesName(const std::string& pattern, const std::string& name) {
  size_t p = 0, n = 0;
  while (p < pattern.size()) {
    if (pattern[p] == '{' && p + 2 < pattern.size() && pattern[p + 2] == '}' &&
        (pattern[p + 1] == 'N' || pattern[p + 1] == 'M')) {
      const size_t start = n;
      while (n < name.size() && std::isdigit((unsigned char)name[n])) ++n;
      if (n == start || n - start > 6) return false;
      p += 3;
    } else {
      if (n >= name.size() || name[n] != pattern[p]) return false;
      ++p;
      ++n;
    }
  }
  return n == name.size();
}

std::vector<const TensorName*> ArchSpec::spellings(Part part, Role role) const {
  std::vector<const TensorName*> out;
  for (const auto& t : names)
    if (t.part == part && t.role == role) out.push_back(&t);
  return out;
}

bool ArchSpec::perHead(Part part, Role role) const {
  for (const auto& t : names)
    if (t.part == part && t.role == role) return t.weight.find("{M}") != std::string::npos;
  return false;
}

std::string ArchSpec::summary() const {
  return family + " " + model;
}

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr Part kEnc = Part::Encoder, kDec = Part::Decoder, kHead = Part::Head;

// A module with .weight and .bias (an nn.Linear, an nn.LayerNorm).
TensorName mod(Part p, Role r, const std::string& base, unsigned flags = 0) {
  return {p, r, base + ".weight", base + ".bias", flags};
}
// A lone tensor (an embedding table, a buffer, a Parameter without bias).
TensorName one(Part p, Role r, const std::string& name, unsigned flags = 0) {
  return {p, r, name, "", flags};
}

using Names = std::vector<TensorName>;

template <class T>
void add(std::vector<T>& to, const std::vector<T>& more) {
  to.insert(to.end(), more.begin(), more.end());
}

// Q, K, V, output of one attention block as separate linears named base + q…out.
Names separate(Part p, bool cross, const std::string& base, const char* q, const char* k,
               const char* v, const char* out) {
  const Role first = cross ? Role::CrossQ : Role::AttnQ;
  const Role outr = cross ? Role::CrossOut : Role::AttnOut;
  return {mod(p, first, base + q), mod(p, Role((int)first + 1), base + k),
          mod(p, Role((int)first + 2), base + v), mod(p, outr, base + out)};
}

// nn.MultiheadAttention (in_proj_weight [3d, d]) or MyMultiheadAttention's spellings
// (q_proj_weight Parameters, or q_proj Linears), then out_proj.
Names torchAttention(Part p, bool cross, const std::string& base) {
  const Role q = cross ? Role::CrossQ : Role::AttnQ;
  Names n = {
      {p, cross ? Role::CrossQkv : Role::AttnQkv, base + "in_proj_weight", base + "in_proj_bias"}};
  const char* parts[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const std::string s = base + parts[i];
    n.push_back({p, Role((int)q + i), s + "_proj_weight", s + "_proj_bias"});
    n.push_back(mod(p, Role((int)q + i), s + "_proj"));
  }
  n.push_back(mod(p, cross ? Role::CrossOut : Role::AttnOut, base + "out_proj"));
  return n;
}

// A descriptor's identity: family, class, what a user recognises, where the public code is.
ArchSpec describe(const char* family, const char* model, const char* title, const char* source) {
  ArchSpec a;
  a.family = family;
  a.model = model;
  a.title = title;
  a.source = source;
  return a;
}

// A Hugging Face model_type's descriptor: its config.json type, classes (the first has the token
// head) and tokenizer.
void huggingFace(ArchSpec& a, const char* model_type, std::vector<std::string> classes,
                 HfTokenizer tokenizer) {
  a.hf_model_type = model_type;
  a.hf_classes = std::move(classes);
  a.hf_tokenizer = tokenizer;
}

// ---- the tutorials attnviz was built from ----

// nlp-tutorial (W_Q/W_K/W_V/fc, pos_ffn.fc.0/2, LayerNorms built inside forward()) and the WQ
// tutorial (WQ/WK/WV/linear, pos_ffn.l1/l2, a LayerNorm inside each sublayer).
Names tutorialStack(Part p, const std::string& emb, const std::string& pos,
                    const std::string& layers, bool nlp, bool cross) {
  Names n = {one(p, Role::TokenEmbd, emb + ".weight"), one(p, Role::PosEmbd, pos + ".weight"),
             one(p, Role::PosTable, pos + ".pe", kSeqFirst)};
  // nlp-tutorial builds nn.LayerNorm inside forward(): absent tensors mean identity. People who
  // fix that store them as .layer_norm. or .ln.
  auto norm = [&](Role r, const std::string& b) {
    Names v = {mod(p, r, b + ".layer_norm", nlp ? kOptional : 0)};
    if (nlp) v.push_back(mod(p, r, b + ".ln", kOptional));
    return v;
  };
  auto block = [&](const std::string& b, bool is_cross) {
    add(n, nlp ? separate(p, is_cross, b + ".", "W_Q", "W_K", "W_V", "fc")
               : separate(p, is_cross, b + ".", "WQ", "WK", "WV", "linear"));
    add(n, norm(is_cross ? Role::CrossNorm : Role::AttnNorm, b));
  };
  const std::string l = layers + "{N}";
  block(l + (p == kDec ? ".dec_self_attn" : ".enc_self_attn"), false);
  if (cross) block(l + ".dec_enc_attn", true);
  add(n, {mod(p, Role::FfnUp, l + (nlp ? ".pos_ffn.fc.0" : ".pos_ffn.l1")),
          mod(p, Role::FfnDown, l + (nlp ? ".pos_ffn.fc.2" : ".pos_ffn.l2"))});
  add(n, norm(Role::FfnNorm, l + ".pos_ffn"));
  const std::string stack = p == kDec ? "decoder" : "encoder";
  add(n, {mod(p, Role::FinalNorm, stack + ".layer_norm", kOptional),
          mod(p, Role::FinalNorm, stack + ".norm", kOptional)});
  return n;
}

Names tutorialTranslation(bool nlp) {
  Names n =
      tutorialStack(kEnc, "encoder.src_emb", "encoder.pos_emb", "encoder.layers.", nlp, false);
  add(n, tutorialStack(kDec, "decoder.tgt_emb", "decoder.pos_emb", "decoder.layers.", nlp, true));
  n.push_back(mod(kHead, Role::Output, "projection"));
  return n;
}

// nn.TransformerEncoderLayer / DecoderLayer under `root` (self_attn, multihead_attn, linear1/2,
// norm1..3) and the stacks' final norms.
Names torchLayers(const std::string& root) {
  Names n;
  for (Part p : {kEnc, kDec}) {
    const bool dec = p == kDec;
    const std::string stack = root + (dec ? "decoder" : "encoder");
    const std::string l = stack + ".layers.{N}.";
    add(n, torchAttention(p, false, l + "self_attn."));
    n.push_back(mod(p, Role::AttnNorm, l + "norm1"));
    if (dec) {
      add(n, torchAttention(p, true, l + "multihead_attn."));
      n.push_back(mod(p, Role::CrossNorm, l + "norm2"));
    }
    add(n, {mod(p, Role::FfnUp, l + "linear1"), mod(p, Role::FfnDown, l + "linear2"),
            mod(p, Role::FfnNorm, l + (dec ? "norm3" : "norm2")),
            mod(p, Role::FinalNorm, stack + ".norm", kOptional)});
  }
  return n;
}

// Hugging Face's encoder-decoders after BART (modeling_bart.py, modeling_marian.py,
// modeling_mbart.py, modeling_pegasus.py, modeling_m2m_100.py), read without "model.".
enum class HfPositions { Learned, StoredTable, Computed };
struct HfSeq2SeqNames {
  HfPositions positions = HfPositions::Learned;
  bool embed_norm = false;  // layernorm_embedding (BART, mBART)
  bool final_norm = false;  // each stack's layer_norm is there (mBART, Pegasus, M2M100)
};
Names hfSeq2Seq(const HfSeq2SeqNames& k) {
  Names n;
  for (Part p : {kEnc, kDec}) {
    const bool dec = p == kDec;
    const std::string s = dec ? "decoder" : "encoder";
    // One shared table; the file may keep any of its names: a stack's own is read first.
    add(n, {one(p, Role::TokenEmbd, s + ".embed_tokens.weight", kTiedCopy),
            one(p, Role::TokenEmbd, "shared.weight", kTiedCopy)});
    if (k.positions == HfPositions::Learned)
      n.push_back(one(p, Role::PosEmbd, s + ".embed_positions.weight"));
    // Marian's and Pegasus's [sin | cos] table may be saved (a fixed Parameter); the model
    // computes it.
    if (k.positions == HfPositions::StoredTable)
      n.push_back(one(p, Role::PosTable, s + ".embed_positions.weight"));
    if (k.embed_norm) n.push_back(mod(p, Role::EmbdNorm, s + ".layernorm_embedding"));
    const std::string l = s + ".layers.{N}.";
    add(n, separate(p, false, l + "self_attn.", "q_proj", "k_proj", "v_proj", "out_proj"));
    n.push_back(mod(p, Role::AttnNorm, l + "self_attn_layer_norm"));
    if (dec) {
      add(n, separate(p, true, l + "encoder_attn.", "q_proj", "k_proj", "v_proj", "out_proj"));
      n.push_back(mod(p, Role::CrossNorm, l + "encoder_attn_layer_norm"));
    }
    add(n, {mod(p, Role::FfnUp, l + "fc1"), mod(p, Role::FfnDown, l + "fc2"),
            mod(p, Role::FfnNorm, l + "final_layer_norm"),
            mod(p, Role::FinalNorm, s + ".layer_norm", k.final_norm ? 0u : kOptional)});
  }
  n.push_back({kHead, Role::Output, "lm_head.weight", "final_logits_bias", kBiasRow});
  return n;
}

const Assumption kTorchNorm = {
    "norm",
    "post-LayerNorm assumed (norm_first=False; the names cannot tell)",
    {{"pre", "norm_first=True"}},
    "Where nn.TransformerEncoderLayer / DecoderLayer put their LayerNorms: the weights are named "
    "the same either way. Look for norm_first in your training script."};
const Assumption kTorchActivation = {
    "activation",
    "ReLU assumed (the names cannot tell)",
    {{"gelu", "activation=\"gelu\""}},
    "The feed-forward's activation (nn.Transformer's activation=…): the weights do not show it"};

// ---- the tutorials people train today ----

// GPT blocks as nanoGPT and minGPT name them (transformer.h.N: ln_1, attn.c_attn [3C, C] fused,
// attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj; transformer.ln_f, lm_head). nanoGPT's LayerNorms lose
// their bias with bias=False.
Names gptNames(unsigned norm_flags) {
  const std::string l = "transformer.h.{N}.";
  return {one(kDec, Role::TokenEmbd, "transformer.wte.weight"),
          one(kDec, Role::PosEmbd, "transformer.wpe.weight"),
          mod(kDec, Role::AttnNorm, l + "ln_1", norm_flags),
          mod(kDec, Role::AttnQkv, l + "attn.c_attn"),
          mod(kDec, Role::AttnOut, l + "attn.c_proj"),
          mod(kDec, Role::FfnNorm, l + "ln_2", norm_flags),
          mod(kDec, Role::FfnUp, l + "mlp.c_fc"),
          mod(kDec, Role::FfnDown, l + "mlp.c_proj"),
          mod(kDec, Role::FinalNorm, "transformer.ln_f", norm_flags | kOptional),
          one(kHead, Role::Output, "lm_head.weight")};
}

ArchDefaults gptDefaults(Activation act) {
  ArchDefaults d;
  d.activation = act;
  d.norm = NormPlacement::Pre;
  d.positional = Positional::Learned;
  d.final_norm = true;
  d.mask_fill = kNegInf;
  d.max_len = 1024;
  d.padding_mask = false;
  return d;
}

// Llama's blocks (llama2.c, Hugging Face): pre-norm RMSNorm, rotary positions, SwiGLU, no padding.
ArchDefaults llamaDefaults(RopeLayout layout, float eps) {
  ArchDefaults d;
  d.activation = Activation::Silu;
  d.gated_ffn = true;
  d.norm = NormPlacement::Pre;
  d.norm_kind = NormKind::RmsNorm;
  d.layer_norm_eps = eps;
  d.positional = Positional::Rotary;
  d.rope_layout = layout;
  d.final_norm = true;
  d.mask_fill = kNegInf;
  d.max_len = 2048;
  d.padding_mask = false;
  return d;
}

void addTutorials(std::vector<ArchSpec>& t) {
  {
    // nanoGPT's model.py and train.py: out/ckpt.pt = {"model", "optimizer", "model_args",
    // "iter_num", "best_val_loss", "config"}; "_orig_mod." under torch.compile; the causal
    // attn.bias buffer where PyTorch has no scaled_dot_product_attention (1.x); wte tied to
    // lm_head (both saved).
    ArchSpec a = describe("nanogpt", "GPT", "Karpathy's nanoGPT (model.py, train.py's out/ckpt.pt)",
                          "karpathy/nanoGPT, model.py and train.py");
    a.arch = Architecture::DecoderOnly;
    a.defaults = gptDefaults(Activation::Gelu);
    a.heads_split_d_model = true;
    a.names = gptNames(kBiasOptional);
    a.ignored = {"transformer.h.{N}.attn.bias"};
    a.args_key = "model_args";
    a.args = {
        {"n_layer", "n_layers"},          {"n_head", "n_heads"},        {"n_embd", "d_model"},
        {"block_size", "max_len"},        {"vocab_size", "vocab_size"}, {"bias", "", ArgKind::Bool},
        {"dropout", "", ArgKind::Ignored}};
    a.assumptions = {
        {"activation",
         "exact GELU assumed (nn.GELU, nanoGPT since May 2023; its earlier new_gelu was the tanh "
         "approximation)",
         {{"gelu_tanh", "a checkpoint of nanoGPT before May 2023 (new_gelu)"}},
         "nanoGPT's MLP uses nn.GELU() (exact) since May 2023; checkpoints of older code used "
         "new_gelu, the tanh approximation (gelu_tanh)"}};
    // sample.py: data/<config["dataset"]>/meta.pkl, else GPT-2's BPE.
    a.vocab_files = {"data/{dataset}/meta.pkl"};
    a.writable = true;  // the Train view's language models (the induction task)
    t.push_back(a);
  }
  {
    // minGPT's mingpt/model.py: the same names, always with biases, NewGELU (tanh), lm_head not
    // tied, the attn.bias buffer always saved; projects/chargpt saves the bare state_dict.
    ArchSpec a = describe("mingpt", "GPT", "Karpathy's minGPT (mingpt/model.py)",
                          "karpathy/minGPT, mingpt/model.py");
    a.arch = Architecture::DecoderOnly;
    a.defaults = gptDefaults(Activation::GeluTanh);
    a.heads_split_d_model = true;
    a.names = gptNames(0);
    a.ignored = {"transformer.h.{N}.attn.bias"};
    a.assumptions = {
        {"activation",
         "the tanh approximation of GELU assumed (minGPT's NewGELU; the names cannot tell)",
         {{"gelu", "a nanoGPT state_dict saved bare (nn.GELU)"}},
         "minGPT's NewGELU is the tanh approximation (gelu_tanh); nanoGPT since May 2023 uses "
         "the exact nn.GELU (gelu). The weights are named the same."}};
    t.push_back(a);
  }
  {
    // "Let's build GPT" (ng-video-lecture gpt.py): one Head module per head
    // (blocks.N.sa.heads.M.{key,query,value}, no bias) with a tril buffer each; scale
    // head_size^-0.5; ReLU feed-forward (net.0, net.2); ln1/ln2 pre-norm, ln_f, lm_head with bias.
    ArchSpec a = describe("ng-video-lecture", "GPTLanguageModel",
                          "Karpathy's \"Let's build GPT\" (ng-video-lecture's gpt.py)",
                          "karpathy/ng-video-lecture, gpt.py");
    a.arch = Architecture::DecoderOnly;
    a.defaults = gptDefaults(Activation::Relu);
    a.defaults.max_len = 256;
    a.heads_split_d_model = true;
    const std::string l = "blocks.{N}.";
    a.names = {one(kDec, Role::TokenEmbd, "token_embedding_table.weight"),
               one(kDec, Role::PosEmbd, "position_embedding_table.weight"),
               mod(kDec, Role::AttnNorm, l + "ln1"),
               mod(kDec, Role::AttnQ, l + "sa.heads.{M}.query"),
               mod(kDec, Role::AttnK, l + "sa.heads.{M}.key"),
               mod(kDec, Role::AttnV, l + "sa.heads.{M}.value"),
               mod(kDec, Role::AttnOut, l + "sa.proj"),
               mod(kDec, Role::FfnNorm, l + "ln2"),
               mod(kDec, Role::FfnUp, l + "ffwd.net.0"),
               mod(kDec, Role::FfnDown, l + "ffwd.net.2"),
               mod(kDec, Role::FinalNorm, "ln_f", kOptional),
               mod(kHead, Role::Output, "lm_head")};
    a.ignored = {"blocks.{N}.sa.heads.{M}.tril"};
    a.notes =
        "scores scaled by head_size^-0.5 as the repository's gpt.py does (the video's first "
        "version scaled by n_embd^-0.5)";
    t.push_back(a);
  }
  {
    // The Annotated Transformer (harvardnlp): make_model's EncoderDecoder; its own LayerNorm
    // a_2·(x − mean)/(std + eps) + b_2 with the unbiased std and eps 1e-6; pre-norm
    // SublayerConnection plus a final norm per stack; linears.0–3 = Q, K, V, output; embeddings
    // × √d_model; a pe buffer [1, 5000, d] per side; the Generator's log-softmax (attnviz shows
    // the logits before it: the same argmax and probabilities).
    ArchSpec a = describe("annotated-transformer", "EncoderDecoder",
                          "Harvard NLP's The Annotated Transformer (make_model)",
                          "harvardnlp/annotated-transformer, the_annotated_transformer.py");
    a.defaults.norm = NormPlacement::Pre;
    a.defaults.norm_kind = NormKind::LayerNormStd;
    a.defaults.layer_norm_eps = 1e-6f;
    a.defaults.final_norm = true;
    a.defaults.embed_scale = true;
    a.defaults.src_bos_eos = true;
    a.heads_split_d_model = true;
    auto norm = [](Part p, Role r, const std::string& base, unsigned flags = 0) {
      return TensorName{p, r, base + ".a_2", base + ".b_2", flags};
    };
    for (Part p : {kEnc, kDec}) {
      const bool dec = p == kDec;
      const std::string side = dec ? "tgt_embed" : "src_embed";
      const std::string s = dec ? "decoder" : "encoder";
      const std::string l = s + ".layers.{N}.";
      add(a.names, {one(p, Role::TokenEmbd, side + ".0.lut.weight"),
                    one(p, Role::PosTable, side + ".1.pe", kBatchFirst)});
      add(a.names, separate(p, false, l + "self_attn.linears.", "0", "1", "2", "3"));
      a.names.push_back(norm(p, Role::AttnNorm, l + "sublayer.0.norm"));
      if (dec) {
        add(a.names, separate(p, true, l + "src_attn.linears.", "0", "1", "2", "3"));
        a.names.push_back(norm(p, Role::CrossNorm, l + "sublayer.1.norm"));
      }
      add(a.names, {mod(p, Role::FfnUp, l + "feed_forward.w_1"),
                    mod(p, Role::FfnDown, l + "feed_forward.w_2"),
                    norm(p, Role::FfnNorm, l + (dec ? "sublayer.2.norm" : "sublayer.1.norm")),
                    norm(p, Role::FinalNorm, s + ".norm", kOptional)});
    }
    a.names.push_back(mod(kHead, Role::Output, "generator.proj"));
    // Multi30k's vocabularies: specials <s>, </s>, <blank>, <unk> first.
    a.ids.pad = 2;
    a.ids.bos = 0;
    a.ids.eos = 1;
    a.decode = {5,
                "attnviz's rule; the tutorial's greedy_decode(…, max_len, start_symbol) makes "
                "max_len − 1 tokens (71 in its Multi30k example), cut at </s> afterwards"};
    a.notes =
        "the Generator's log_softmax is not part of the logits attnviz shows (the same argmax "
        "and softmax)";
    t.push_back(a);
  }
  {
    // Raschka, Build a Large Language Model (From Scratch), ch. 4–5: GPTModel (tok_emb, pos_emb,
    // trf_blocks.N.{att.W_query/W_key/W_value/out_proj, ff.layers.0/2, norm1/norm2 .scale/.shift},
    // final_norm, out_head); its own LayerNorm (biased variance, eps 1e-5) and tanh GELU; a
    // causal mask buffer (1 = masked). model.pth is the state_dict; model_and_optimizer.pth holds
    // it under "model_state_dict".
    ArchSpec a = describe(
        "llms-from-scratch", "GPTModel",
        "Raschka's Build a Large Language Model (From Scratch), ch. 4–5 (GPTModel)",
        "rasbt/LLMs-from-scratch, ch04 gpt.py and ch05 (model.pth, model_and_optimizer.pth)");
    a.arch = Architecture::DecoderOnly;
    a.defaults = gptDefaults(Activation::GeluTanh);
    a.heads_split_d_model = true;
    auto norm = [](const std::string& base, unsigned flags = 0) {
      return TensorName{kDec, Role::AttnNorm, base + ".scale", base + ".shift", flags};
    };
    const std::string l = "trf_blocks.{N}.";
    a.names = {one(kDec, Role::TokenEmbd, "tok_emb.weight"),
               one(kDec, Role::PosEmbd, "pos_emb.weight"), norm(l + "norm1")};
    add(a.names, separate(kDec, false, l + "att.", "W_query", "W_key", "W_value", "out_proj"));
    TensorName ffn_norm = norm(l + "norm2"), final_norm = norm("final_norm", kOptional);
    ffn_norm.role = Role::FfnNorm;
    final_norm.role = Role::FinalNorm;
    add(a.names, {ffn_norm, mod(kDec, Role::FfnUp, l + "ff.layers.0"),
                  mod(kDec, Role::FfnDown, l + "ff.layers.2"), final_norm,
                  one(kHead, Role::Output, "out_head.weight")});
    a.ignored = {"trf_blocks.{N}.att.mask"};
    t.push_back(a);
  }
  {
    // Karpathy's llama2.c (model.py, train.py's out/ckpt.pt with model_args): RMSNorm (eps
    // 1e-5), rotary positions on interleaved pairs (x[2i], x[2i+1]), grouped-query attention
    // (n_kv_heads), SwiGLU w2(silu(w1 x) ⊙ w3 x), output tied to tok_embeddings (both saved).
    ArchSpec a =
        describe("llama2c", "Transformer", "Karpathy's llama2.c (model.py, train.py's out/ckpt.pt)",
                 "karpathy/llama2.c, model.py and train.py");
    a.arch = Architecture::DecoderOnly;
    a.defaults = llamaDefaults(RopeLayout::Interleaved, 1e-5f);
    a.tied_output = true;
    const std::string l = "layers.{N}.";
    a.names = {one(kDec, Role::TokenEmbd, "tok_embeddings.weight"),
               one(kDec, Role::AttnNorm, l + "attention_norm.weight"),
               one(kDec, Role::AttnQ, l + "attention.wq.weight"),
               one(kDec, Role::AttnK, l + "attention.wk.weight"),
               one(kDec, Role::AttnV, l + "attention.wv.weight"),
               one(kDec, Role::AttnOut, l + "attention.wo.weight"),
               one(kDec, Role::FfnNorm, l + "ffn_norm.weight"),
               one(kDec, Role::FfnGate, l + "feed_forward.w1.weight"),
               one(kDec, Role::FfnUp, l + "feed_forward.w3.weight"),
               one(kDec, Role::FfnDown, l + "feed_forward.w2.weight"),
               one(kDec, Role::FinalNorm, "norm.weight", kOptional),
               one(kHead, Role::Output, "output.weight")};
    a.ignored = {"layers.{N}.attention.mask", "freqs_cos", "freqs_sin", "freqs_cis"};
    a.args_key = "model_args";
    a.args = {{"dim", "d_model"},
              {"n_layers", "n_layers"},
              {"n_heads", "n_heads"},
              {"n_kv_heads", "n_kv_heads"},
              {"vocab_size", "vocab_size"},
              {"hidden_dim", "d_ff"},
              {"multiple_of", "", ArgKind::Int},
              {"max_seq_len", "max_len"},
              {"norm_eps", "layer_norm_eps", ArgKind::Number},
              {"dropout", "", ArgKind::Ignored}};
    // sample.py: a custom vocabulary's data/tok<vocab_size>.model (tinystories.py's
    // get_tokenizer_model_path), else Llama 2's tokenizer.model in the repository's folder.
    a.vocab_files = {"data/tok{vocab_size}.model", "tokenizer.model"};
    t.push_back(a);
  }
}

// ---- Hugging Face folders beyond Marian and BART (config.json states the sizes) ----

// Hugging Face's Llama layout (modeling_llama.py and the families written after it): names under
// "model.", lm_head outside (absent with tie_word_embeddings); RMSNorm, rotary positions on halves
// (rotate_half) with config.json's rope_theta, grouped-query attention, SwiGLU
// down(silu(gate x) ⊙ up x); rotary_emb.inv_freq buffers ignored. Biases are read where the file
// has them (Qwen2's q, k, v).
ArchSpec llamaLayout(const char* family, const char* model, const char* title, const char* source) {
  ArchSpec a = describe(family, model, title, source);
  a.arch = Architecture::DecoderOnly;
  a.defaults = llamaDefaults(RopeLayout::Halves, 1e-6f);
  a.tied_output = true;
  const std::string l = "layers.{N}.";
  a.names = {one(kDec, Role::TokenEmbd, "embed_tokens.weight"),
             one(kDec, Role::AttnNorm, l + "input_layernorm.weight")};
  add(a.names, separate(kDec, false, l + "self_attn.", "q_proj", "k_proj", "v_proj", "o_proj"));
  add(a.names,
      {one(kDec, Role::FfnNorm, l + "post_attention_layernorm.weight"),
       mod(kDec, Role::FfnGate, l + "mlp.gate_proj"), mod(kDec, Role::FfnUp, l + "mlp.up_proj"),
       mod(kDec, Role::FfnDown, l + "mlp.down_proj"),
       one(kDec, Role::FinalNorm, "norm.weight", kOptional),
       one(kHead, Role::Output, "lm_head.weight")});
  a.ignored = {"layers.{N}.self_attn.rotary_emb.inv_freq", "rotary_emb.inv_freq"};
  a.args = {{"hidden_size", "d_model"},
            {"num_attention_heads", "n_heads"},
            {"num_key_value_heads", "n_kv_heads"},
            {"num_hidden_layers", "n_layers"},
            {"intermediate_size", "d_ff"},
            {"hidden_act", "activation", ArgKind::Activation},
            {"max_position_embeddings", "max_len"},
            {"rms_norm_eps", "layer_norm_eps", ArgKind::Number},
            {"rope_theta", "rope_theta", ArgKind::Number},
            {"head_dim", "d_k"},
            {"vocab_size", "vocab_size"},
            {"bos_token_id", "bos_id"},
            {"eos_token_id", "eos_id"},
            {"rope_scaling", "", ArgKind::Refused},
            {"partial_rotary_factor", "", ArgKind::Refused, "1.0"},
            {"tie_word_embeddings", "", ArgKind::Bool}};
  return a;
}

// Qwen2's and Qwen3's sliding window (modeling_qwen2.py, modeling_qwen3.py): only when
// use_sliding_window is true (then on the layers from max_window_layers on), or where layer_types
// names a sliding layer. attnviz does not reproduce it: both are refused, and the window's size
// and first layer are read only with them.
std::vector<ArgKey> qwenWindowKeys() {
  return {{"use_sliding_window", "", ArgKind::Refused, "false"},
          {"layer_types", "", ArgKind::Refused, "\"full_attention\""},
          {"sliding_window", "", ArgKind::Ignored, ""},
          {"max_window_layers", "", ArgKind::Ignored, ""}};
}

void addHuggingFace(std::vector<ArchSpec>& t) {
  {
    // modeling_gpt2.py (GPT2LMHeadModel): names under "transformer." (a bare GPT2Model has none),
    // Conv1D weights stored [in, out], attn.bias / attn.masked_bias buffers in older files,
    // lm_head tied to wte (often absent), gelu_new.
    ArchSpec a = describe("hf-gpt2", "GPT2LMHeadModel", "Hugging Face GPT2LMHeadModel (GPT-2)",
                          "Hugging Face transformers' modeling_gpt2.py");
    a.arch = Architecture::DecoderOnly;
    a.defaults = gptDefaults(Activation::GeluTanh);
    a.heads_split_d_model = true;
    a.tied_output = true;
    const std::string l = "h.{N}.";
    a.names = {one(kDec, Role::TokenEmbd, "wte.weight"),
               one(kDec, Role::PosEmbd, "wpe.weight"),
               mod(kDec, Role::AttnNorm, l + "ln_1"),
               mod(kDec, Role::AttnQkv, l + "attn.c_attn", kTransposed),
               mod(kDec, Role::AttnOut, l + "attn.c_proj", kTransposed),
               mod(kDec, Role::FfnNorm, l + "ln_2"),
               mod(kDec, Role::FfnUp, l + "mlp.c_fc", kTransposed),
               mod(kDec, Role::FfnDown, l + "mlp.c_proj", kTransposed),
               mod(kDec, Role::FinalNorm, "ln_f", kOptional),
               one(kHead, Role::Output, "lm_head.weight")};
    a.ignored = {"h.{N}.attn.bias", "h.{N}.attn.masked_bias"};
    a.args = {{"n_embd", "d_model"},
              {"n_head", "n_heads"},
              {"n_layer", "n_layers"},
              {"n_positions", "max_len"},
              {"n_inner", "d_ff"},
              {"activation_function", "activation", ArgKind::Activation},
              {"layer_norm_epsilon", "layer_norm_eps", ArgKind::Number},
              {"vocab_size", "vocab_size"},
              {"eos_token_id", "eos_id"},
              {"scale_attn_weights", "", ArgKind::Refused, "true"},
              {"scale_attn_by_inverse_layer_idx", "", ArgKind::Refused, "false"},
              {"add_cross_attention", "", ArgKind::Refused, "false"}};
    huggingFace(a, "gpt2", {"GPT2LMHeadModel", "GPT2Model"}, HfTokenizer::ByteLevelBpe);
    t.push_back(a);
  }
  {
    // modeling_bert.py (BertForMaskedLM): names under "bert.", the MLM head under "cls.";
    // post-norm, exact GELU, LayerNorm eps 1e-12, word + position + token-type embeddings then a
    // LayerNorm; the decoder tied to the word embeddings (and its bias the same tensor as
    // cls.predictions.bias). A BertForPreTraining file's pooler and next-sentence head are not
    // read.
    ArchSpec a = describe("hf-bert", "BertForMaskedLM", "Hugging Face BertForMaskedLM (BERT)",
                          "Hugging Face transformers' modeling_bert.py");
    a.arch = Architecture::EncoderOnly;
    a.token_head = TokenHead::BertMlm;
    a.defaults.activation = Activation::Gelu;
    a.defaults.positional = Positional::Learned;
    a.defaults.embed_norm = true;
    a.defaults.layer_norm_eps = 1e-12f;
    a.defaults.n_segments = 2;
    a.defaults.max_len = 512;
    a.heads_split_d_model = true;
    a.tied_output = true;
    const std::string l = "encoder.layer.{N}.";
    // Old files spell the LayerNorms gamma/beta.
    auto norm = [](Role r, const std::string& base) {
      Part p = r == Role::MlmNorm ? kHead : kEnc;
      return Names{mod(p, r, base), {p, r, base + ".gamma", base + ".beta"}};
    };
    a.names = {one(kEnc, Role::TokenEmbd, "embeddings.word_embeddings.weight"),
               one(kEnc, Role::PosEmbd, "embeddings.position_embeddings.weight"),
               one(kEnc, Role::SegmentEmbd, "embeddings.token_type_embeddings.weight")};
    add(a.names, norm(Role::EmbdNorm, "embeddings.LayerNorm"));
    add(a.names, separate(kEnc, false, l + "attention.", "self.query", "self.key", "self.value",
                          "output.dense"));
    add(a.names, norm(Role::AttnNorm, l + "attention.output.LayerNorm"));
    add(a.names, {mod(kEnc, Role::FfnUp, l + "intermediate.dense"),
                  mod(kEnc, Role::FfnDown, l + "output.dense")});
    add(a.names, norm(Role::FfnNorm, l + "output.LayerNorm"));
    a.names.push_back(mod(kHead, Role::MlmTransform, "cls.predictions.transform.dense"));
    add(a.names, norm(Role::MlmNorm, "cls.predictions.transform.LayerNorm"));
    a.names.push_back(
        {kHead, Role::Output, "cls.predictions.decoder.weight", "cls.predictions.bias"});
    a.ignored = {"embeddings.position_ids",     "cls.predictions.decoder.bias",
                 "pooler.dense.weight",         "pooler.dense.bias",
                 "cls.seq_relationship.weight", "cls.seq_relationship.bias"};
    a.args = {{"hidden_size", "d_model"},
              {"num_attention_heads", "n_heads"},
              {"num_hidden_layers", "n_layers"},
              {"intermediate_size", "d_ff"},
              {"hidden_act", "activation", ArgKind::Activation},
              {"max_position_embeddings", "max_len"},
              {"type_vocab_size", "n_segments"},
              {"layer_norm_eps", "layer_norm_eps", ArgKind::Number},
              {"vocab_size", "vocab_size"},
              {"pad_token_id", "pad_id"},
              {"position_embedding_type", "", ArgKind::Refused, "\"absolute\""},
              {"is_decoder", "", ArgKind::Refused, "false"},
              {"add_cross_attention", "", ArgKind::Refused, "false"}};
    huggingFace(a, "bert", {"BertForMaskedLM", "BertForPreTraining", "BertModel"},
                HfTokenizer::WordPiece);
    t.push_back(a);
  }
  {
    // modeling_roberta.py (RobertaForMaskedLM): BERT's layers under "roberta."; learned positions
    // from row padding_idx + 1, counted over the tokens that are not padding (a pad token reads
    // row padding_idx: create_position_ids_from_input_ids), one token type; lm_head: dense, gelu,
    // layer_norm, the decoder tied to the word embeddings with lm_head.bias. pad_token_id other
    // than 1 is refused (hfRobertaPad); hidden_act other than gelu too (the head's gelu is fixed,
    // attnviz's BERT head runs the blocks' activation).
    ArchSpec a =
        describe("hf-roberta", "RobertaForMaskedLM", "Hugging Face RobertaForMaskedLM (RoBERTa)",
                 "Hugging Face transformers' modeling_roberta.py");
    a.arch = Architecture::EncoderOnly;
    a.token_head = TokenHead::BertMlm;
    a.defaults.activation = Activation::Gelu;
    a.defaults.positional = Positional::Learned;
    a.defaults.position_offset = 2;
    a.defaults.positions_skip_pad = true;
    a.defaults.embed_norm = true;
    a.defaults.layer_norm_eps = 1e-5f;
    a.defaults.n_segments = 1;
    a.defaults.max_len = 512;
    a.heads_split_d_model = true;
    a.tied_output = true;
    const std::string l = "encoder.layer.{N}.";
    a.names = {one(kEnc, Role::TokenEmbd, "embeddings.word_embeddings.weight"),
               one(kEnc, Role::PosEmbd, "embeddings.position_embeddings.weight"),
               one(kEnc, Role::SegmentEmbd, "embeddings.token_type_embeddings.weight"),
               mod(kEnc, Role::EmbdNorm, "embeddings.LayerNorm")};
    add(a.names, separate(kEnc, false, l + "attention.", "self.query", "self.key", "self.value",
                          "output.dense"));
    add(a.names, {mod(kEnc, Role::AttnNorm, l + "attention.output.LayerNorm"),
                  mod(kEnc, Role::FfnUp, l + "intermediate.dense"),
                  mod(kEnc, Role::FfnDown, l + "output.dense"),
                  mod(kEnc, Role::FfnNorm, l + "output.LayerNorm"),
                  mod(kHead, Role::MlmTransform, "lm_head.dense"),
                  mod(kHead, Role::MlmNorm, "lm_head.layer_norm")});
    a.names.push_back({kHead, Role::Output, "lm_head.decoder.weight", "lm_head.bias"});
    a.ignored = {"embeddings.position_ids", "embeddings.token_type_ids", "lm_head.decoder.bias",
                 "pooler.dense.weight", "pooler.dense.bias"};
    a.args = {{"hidden_size", "d_model"},
              {"num_attention_heads", "n_heads"},
              {"num_hidden_layers", "n_layers"},
              {"intermediate_size", "d_ff"},
              {"type_vocab_size", "n_segments"},
              {"layer_norm_eps", "layer_norm_eps", ArgKind::Number},
              {"vocab_size", "vocab_size"},
              {"pad_token_id", "pad_id"},
              {"bos_token_id", "bos_id"},
              {"eos_token_id", "eos_id"},
              {"hidden_act", "", ArgKind::Refused, "\"gelu\""},
              {"position_embedding_type", "", ArgKind::Refused, "\"absolute\""},
              {"is_decoder", "", ArgKind::Refused, "false"},
              {"add_cross_attention", "", ArgKind::Refused, "false"}};
    huggingFace(a, "roberta", {"RobertaForMaskedLM", "RobertaModel"}, HfTokenizer::ByteLevelBpe);
    t.push_back(a);
  }
  {
    // modeling_distilbert.py (DistilBertForMaskedLM): names under "distilbert.", BERT's post-norm
    // blocks (q_lin/k_lin/v_lin/out_lin, sa_layer_norm, ffn.lin1/lin2, output_layer_norm), learned
    // positions from row 0, no token types; the head: vocab_transform, the activation,
    // vocab_layer_norm, vocab_projector tied to the word embeddings (with its bias). LayerNorm eps
    // 1e-12 throughout (DistilBERT's is fixed). sinusoidal_pos_embds true is refused (the table is
    // then written by create_sinusoidal_embeddings, whose layout attnviz does not reproduce).
    ArchSpec a = describe("hf-distilbert", "DistilBertForMaskedLM",
                          "Hugging Face DistilBertForMaskedLM (DistilBERT)",
                          "Hugging Face transformers' modeling_distilbert.py");
    a.arch = Architecture::EncoderOnly;
    a.token_head = TokenHead::BertMlm;
    a.defaults.activation = Activation::Gelu;
    a.defaults.positional = Positional::Learned;
    a.defaults.embed_norm = true;
    a.defaults.layer_norm_eps = 1e-12f;
    a.defaults.max_len = 512;
    a.heads_split_d_model = true;
    a.tied_output = true;
    const std::string l = "transformer.layer.{N}.";
    a.names = {one(kEnc, Role::TokenEmbd, "embeddings.word_embeddings.weight"),
               one(kEnc, Role::PosEmbd, "embeddings.position_embeddings.weight"),
               mod(kEnc, Role::EmbdNorm, "embeddings.LayerNorm")};
    add(a.names, separate(kEnc, false, l + "attention.", "q_lin", "k_lin", "v_lin", "out_lin"));
    add(a.names, {mod(kEnc, Role::AttnNorm, l + "sa_layer_norm"),
                  mod(kEnc, Role::FfnUp, l + "ffn.lin1"), mod(kEnc, Role::FfnDown, l + "ffn.lin2"),
                  mod(kEnc, Role::FfnNorm, l + "output_layer_norm"),
                  mod(kHead, Role::MlmTransform, "vocab_transform"),
                  mod(kHead, Role::MlmNorm, "vocab_layer_norm")});
    a.names.push_back({kHead, Role::Output, "vocab_projector.weight", "vocab_projector.bias"});
    a.ignored = {"embeddings.position_ids"};
    a.args = {{"dim", "d_model"},
              {"n_heads", "n_heads"},
              {"n_layers", "n_layers"},
              {"hidden_dim", "d_ff"},
              {"activation", "activation", ArgKind::Activation},
              {"max_position_embeddings", "max_len"},
              {"vocab_size", "vocab_size"},
              {"pad_token_id", "pad_id"},
              {"sinusoidal_pos_embds", "", ArgKind::Refused, "false"},
              {"tie_word_embeddings", "", ArgKind::Refused, "true"}};
    huggingFace(a, "distilbert", {"DistilBertForMaskedLM", "DistilBertModel"},
                HfTokenizer::WordPiece);
    t.push_back(a);
  }
  {
    // modeling_llama.py (LlamaForCausalLM: SmolLM, TinyLlama, …): the Llama layout below with
    // config.json's rope_theta; old files' rotary_emb.inv_freq buffers ignored.
    ArchSpec a = llamaLayout("hf-llama", "LlamaForCausalLM",
                             "Hugging Face LlamaForCausalLM (Llama, SmolLM, TinyLlama)",
                             "Hugging Face transformers' modeling_llama.py");
    add(a.args, std::vector<ArgKey>{{"attention_bias", "", ArgKind::Bool},
                                    {"mlp_bias", "", ArgKind::Bool}});
    huggingFace(a, "llama", {"LlamaForCausalLM", "LlamaModel"}, HfTokenizer::SentencePieceOrJson);
    t.push_back(a);
  }
  {
    // modeling_qwen2.py (Qwen2ForCausalLM: Qwen2, Qwen2.5): Llama's layout with biases on q, k and
    // v (none on o_proj, read from the file). Sliding-window attention only when
    // use_sliding_window is true (then the layers from max_window_layers on): refused, as is a
    // layer_types list naming anything but full attention.
    ArchSpec a = llamaLayout("hf-qwen2", "Qwen2ForCausalLM",
                             "Hugging Face Qwen2ForCausalLM (Qwen2, Qwen2.5)",
                             "Hugging Face transformers' modeling_qwen2.py");
    add(a.args, qwenWindowKeys());
    huggingFace(a, "qwen2", {"Qwen2ForCausalLM", "Qwen2Model"}, HfTokenizer::SentencePieceOrJson);
    t.push_back(a);
  }
  {
    // modeling_mistral.py (MistralForCausalLM): Llama's layout; attention over a sliding window
    // of the last sliding_window keys when config.json gives one (Mistral 7B v0.1's 4096; v0.2 and
    // later say null): for inputs up to the window it is the causal mask, and attnviz runs only
    // those (local_window), as for Phi-3 and GPT-Neo's local layers.
    ArchSpec a =
        llamaLayout("hf-mistral", "MistralForCausalLM", "Hugging Face MistralForCausalLM (Mistral)",
                    "Hugging Face transformers' modeling_mistral.py");
    add(a.args, std::vector<ArgKey>{{"sliding_window", "local_window"}});
    huggingFace(a, "mistral", {"MistralForCausalLM", "MistralModel"},
                HfTokenizer::SentencePieceOrJson);
    t.push_back(a);
  }
  {
    // modeling_phi3.py (Phi3ForCausalLM: Phi-3, Phi-4): Llama's blocks with q, k and v fused in
    // qkv_proj (the query rows, then the key rows, then the value rows: n_kv_heads of them) and
    // gate and up fused in gate_up_proj ([gate; up]); rotary positions on each head's first
    // int(head_dim · partial_rotary_factor) dimensions; attention over the last sliding_window keys
    // when config.json gives one (Phi-3-mini-4k's 2047): for inputs up to that many tokens the
    // window is the causal mask, and attnviz runs only those (local_window). Any rope_scaling
    // (Phi-3.5's and Phi-4-mini's "longrope", older "su") is refused.
    ArchSpec a =
        llamaLayout("hf-phi3", "Phi3ForCausalLM", "Hugging Face Phi3ForCausalLM (Phi-3, Phi-4)",
                    "Hugging Face transformers' modeling_phi3.py");
    a.defaults.layer_norm_eps = 1e-5f;  // Phi3Config's rms_norm_eps
    const std::string l = "layers.{N}.";
    Names names;  // Llama's, with q/k/v and gate/up each one tensor, in the same places
    for (const TensorName& n : a.names) {
      if (n.role == Role::AttnQ)
        names.push_back(mod(kDec, Role::AttnQkv, l + "self_attn.qkv_proj"));
      else if (n.role == Role::FfnGate)
        names.push_back(mod(kDec, Role::FfnUp, l + "mlp.gate_up_proj", kGateUpFused));
      else if (n.role != Role::AttnK && n.role != Role::AttnV && n.role != Role::FfnUp)
        names.push_back(n);
    }
    a.names = names;
    for (ArgKey& k : a.args)
      if (k.key == "partial_rotary_factor")
        k = {"partial_rotary_factor", "rotary_pct", ArgKind::Number};
    add(a.args, std::vector<ArgKey>{{"sliding_window", "local_window"},
                                    {"original_max_position_embeddings", "", ArgKind::Ignored},
                                    {"attention_bias", "", ArgKind::Bool}});
    huggingFace(a, "phi3", {"Phi3ForCausalLM", "Phi3Model"}, HfTokenizer::SentencePieceOrJson);
    t.push_back(a);
  }
  {
    // modeling_gemma.py (GemmaForCausalLM): Llama's layout with RMSNorms that multiply by
    // (1 + weight), the token embeddings scaled by √hidden_size, a tanh-GELU gate
    // (hidden_activation; when null, gelu_pytorch_tanh as GemmaMLP then takes, whatever hidden_act
    // says), tied embeddings, head_dim from config.json.
    ArchSpec a =
        llamaLayout("hf-gemma", "GemmaForCausalLM", "Hugging Face GemmaForCausalLM (Gemma)",
                    "Hugging Face transformers' modeling_gemma.py");
    a.defaults.activation = Activation::GeluTanh;
    a.defaults.embed_scale = true;
    for (TensorName& n : a.names)
      if (isNormRole(n.role)) n.flags |= kGainPlusOne;
    for (ArgKey& k : a.args)
      if (k.key == "hidden_act") k = {"hidden_act", "", ArgKind::Ignored};
    add(a.args, std::vector<ArgKey>{{"hidden_activation", "activation", ArgKind::Activation},
                                    {"attention_bias", "", ArgKind::Bool}});
    huggingFace(a, "gemma", {"GemmaForCausalLM", "GemmaModel"}, HfTokenizer::SentencePieceOrJson);
    t.push_back(a);
  }
  {
    // modeling_gemma2.py (Gemma2ForCausalLM): Gemma's (1 + weight) RMSNorms, √hidden_size
    // embeddings, tanh-GELU gate and tied embeddings, with each sublayer between two norms: x +
    // post( attn(input_layernorm(x))) with post_attention_layernorm, then pre_feedforward_layernorm
    // and post_feedforward_layernorm around the MLP (sandwich_norms); the scores scaled by
    // query_pre_attn_scalar^(-1/2) and soft-capped, c·tanh(s / c) with c = attn_logit_softcapping,
    // before the mask; the logits soft-capped by final_logit_softcapping. layer_types alternate
    // sliding (each query sees its last sliding_window keys) and full layers: for inputs up to the
    // window the two are the causal mask, and attnviz runs only those (local_window).
    // hfWithGemma2 checks layer_types and fills in Gemma2Config's defaults.
    ArchSpec a =
        llamaLayout("hf-gemma2", "Gemma2ForCausalLM", "Hugging Face Gemma2ForCausalLM (Gemma 2)",
                    "Hugging Face transformers' modeling_gemma2.py");
    a.defaults.activation = Activation::GeluTanh;
    a.defaults.embed_scale = true;
    a.defaults.sandwich_norms = true;
    const std::string l = "layers.{N}.";
    Names names;  // Llama's, with post_attention_layernorm the attention's output norm
    for (const TensorName& n : a.names) {
      if (n.role == Role::FfnNorm) {
        names.push_back(one(kDec, Role::AttnPostNorm, l + "post_attention_layernorm.weight"));
        names.push_back(one(kDec, Role::FfnNorm, l + "pre_feedforward_layernorm.weight"));
        names.push_back(one(kDec, Role::FfnPostNorm, l + "post_feedforward_layernorm.weight"));
      } else {
        names.push_back(n);
      }
    }
    a.names = names;
    for (TensorName& n : a.names)
      if (isNormRole(n.role)) n.flags |= kGainPlusOne;
    for (ArgKey& k : a.args)
      if (k.key == "hidden_act") k = {"hidden_act", "", ArgKind::Ignored};
    add(a.args, std::vector<ArgKey>{{"hidden_activation", "activation", ArgKind::Activation},
                                    {"attention_bias", "", ArgKind::Bool},
                                    {"query_pre_attn_scalar", "attn_scale", ArgKind::InverseSqrt},
                                    {"attn_logit_softcapping", "attn_softcap", ArgKind::Number},
                                    {"final_logit_softcapping", "final_softcap", ArgKind::Number},
                                    {"sliding_window", "local_window"},
                                    {"layer_types", "", ArgKind::Ignored},
                                    {"cache_implementation", "", ArgKind::Ignored}});
    huggingFace(a, "gemma2", {"Gemma2ForCausalLM", "Gemma2Model"},
                HfTokenizer::SentencePieceOrJson);
    t.push_back(a);
  }
  {
    // modeling_qwen3.py (Qwen3ForCausalLM): Llama's layout with each head's queries and keys
    // RMS-normalised (q_norm, k_norm over head_dim) before the rotation; biases where
    // attention_bias puts them (read from the file). The sliding window as Qwen2's: refused.
    ArchSpec a =
        llamaLayout("hf-qwen3", "Qwen3ForCausalLM", "Hugging Face Qwen3ForCausalLM (Qwen3)",
                    "Hugging Face transformers' modeling_qwen3.py");
    const std::string l = "layers.{N}.self_attn.";
    add(a.names, std::vector<TensorName>{one(kDec, Role::AttnQNorm, l + "q_norm.weight"),
                                         one(kDec, Role::AttnKNorm, l + "k_norm.weight")});
    a.args.push_back({"attention_bias", "", ArgKind::Bool});
    add(a.args, qwenWindowKeys());
    huggingFace(a, "qwen3", {"Qwen3ForCausalLM", "Qwen3Model"}, HfTokenizer::SentencePieceOrJson);
    t.push_back(a);
  }
  {
    // modeling_gpt_neo.py (GPTNeoForCausalLM: GPT-Neo, the TinyStories models): GPT-2's blocks
    // with separate q, k, v (no biases) and out_proj (bias) as nn.Linear, the scores QKᵀ not
    // scaled by 1/√d, gelu_new, tied lm_head. attention_layers alternate "global" (causal) and
    // "local" (each query sees its last window_size keys): for inputs up to window_size tokens the
    // two are the same mask, and attnviz runs only those when a layer is local (local_window).
    ArchSpec a = describe("hf-gpt-neo", "GPTNeoForCausalLM",
                          "Hugging Face GPTNeoForCausalLM (GPT-Neo, TinyStories)",
                          "Hugging Face transformers' modeling_gpt_neo.py");
    a.arch = Architecture::DecoderOnly;
    a.defaults = gptDefaults(Activation::GeluTanh);
    a.defaults.attn_scale = 1.0f;
    a.defaults.max_len = 2048;
    a.heads_split_d_model = true;
    a.tied_output = true;
    const std::string l = "h.{N}.";
    a.names = {one(kDec, Role::TokenEmbd, "wte.weight"), one(kDec, Role::PosEmbd, "wpe.weight"),
               mod(kDec, Role::AttnNorm, l + "ln_1")};
    add(a.names,
        separate(kDec, false, l + "attn.attention.", "q_proj", "k_proj", "v_proj", "out_proj"));
    add(a.names,
        {mod(kDec, Role::FfnNorm, l + "ln_2"), mod(kDec, Role::FfnUp, l + "mlp.c_fc"),
         mod(kDec, Role::FfnDown, l + "mlp.c_proj"), mod(kDec, Role::FinalNorm, "ln_f", kOptional),
         one(kHead, Role::Output, "lm_head.weight")});
    a.ignored = {"h.{N}.attn.attention.bias", "h.{N}.attn.attention.masked_bias"};
    // window_size reaches here only when a layer is local (hfWithGptNeoLayers checks
    // attention_types and attention_layers and drops it otherwise).
    a.args = {{"hidden_size", "d_model"},
              {"num_heads", "n_heads"},
              {"num_layers", "n_layers"},
              {"max_position_embeddings", "max_len"},
              {"intermediate_size", "d_ff"},
              {"activation_function", "activation", ArgKind::Activation},
              {"layer_norm_epsilon", "layer_norm_eps", ArgKind::Number},
              {"vocab_size", "vocab_size"},
              {"eos_token_id", "eos_id"},
              {"window_size", "local_window"},
              {"attention_types", "", ArgKind::Ignored},
              {"attention_layers", "", ArgKind::Ignored},
              {"tie_word_embeddings", "", ArgKind::Bool},
              {"add_cross_attention", "", ArgKind::Refused, "false"}};
    huggingFace(a, "gpt_neo", {"GPTNeoForCausalLM", "GPTNeoModel"}, HfTokenizer::ByteLevelBpe);
    t.push_back(a);
  }
  {
    // modeling_gpt_neox.py (GPTNeoXForCausalLM: GPT-NeoX, Pythia): names under "gpt_neox.", the
    // untied embed_out outside; pre-LayerNorm, exact GELU; query_key_value fused per head
    // ([heads, 3, head_size] rows); rotary positions (rotate_half) on each head's first
    // int(head_size · rotary_pct) dimensions with base rotary_emb_base; with use_parallel_residual
    // x + attn(ln1(x)) + mlp(ln2(x)), else the sequential blocks; final_layer_norm.
    ArchSpec a = describe("hf-gpt-neox", "GPTNeoXForCausalLM",
                          "Hugging Face GPTNeoXForCausalLM (GPT-NeoX, Pythia)",
                          "Hugging Face transformers' modeling_gpt_neox.py");
    a.arch = Architecture::DecoderOnly;
    a.defaults.activation = Activation::Gelu;
    a.defaults.norm = NormPlacement::Pre;
    a.defaults.positional = Positional::Rotary;
    a.defaults.rope_layout = RopeLayout::Halves;
    a.defaults.rotary_pct = 0.25f;
    a.defaults.parallel_residual = true;
    a.defaults.final_norm = true;
    a.defaults.mask_fill = kNegInf;
    a.defaults.max_len = 2048;
    a.defaults.padding_mask = false;
    a.heads_split_d_model = true;
    a.tied_output = false;
    const std::string l = "layers.{N}.";
    a.names = {one(kDec, Role::TokenEmbd, "embed_in.weight"),
               mod(kDec, Role::AttnNorm, l + "input_layernorm"),
               mod(kDec, Role::AttnQkv, l + "attention.query_key_value", kQkvPerHead),
               mod(kDec, Role::AttnOut, l + "attention.dense"),
               mod(kDec, Role::FfnNorm, l + "post_attention_layernorm"),
               mod(kDec, Role::FfnUp, l + "mlp.dense_h_to_4h"),
               mod(kDec, Role::FfnDown, l + "mlp.dense_4h_to_h"),
               mod(kDec, Role::FinalNorm, "final_layer_norm"),
               one(kHead, Role::Output, "embed_out.weight")};
    a.ignored = {"layers.{N}.attention.bias", "layers.{N}.attention.masked_bias",
                 "layers.{N}.attention.rotary_emb.inv_freq", "rotary_emb.inv_freq"};
    // rope_theta and partial_rotary_factor (newer saves write them beside rotary_emb_base and
    // rotary_pct) are checked against those by hfWithGptNeoXRotary.
    a.args = {{"hidden_size", "d_model"},
              {"num_attention_heads", "n_heads"},
              {"num_hidden_layers", "n_layers"},
              {"intermediate_size", "d_ff"},
              {"hidden_act", "activation", ArgKind::Activation},
              {"max_position_embeddings", "max_len"},
              {"layer_norm_eps", "layer_norm_eps", ArgKind::Number},
              {"rotary_pct", "rotary_pct", ArgKind::Number},
              {"rotary_emb_base", "rope_theta", ArgKind::Number},
              {"use_parallel_residual", "parallel_residual", ArgKind::Bool},
              {"vocab_size", "vocab_size"},
              {"eos_token_id", "eos_id"},
              {"tie_word_embeddings", "tied_output", ArgKind::Bool},
              {"attention_bias", "", ArgKind::Bool},
              {"rope_scaling", "", ArgKind::Refused},
              {"rope_theta", "", ArgKind::Ignored},
              {"partial_rotary_factor", "", ArgKind::Ignored}};
    huggingFace(a, "gpt_neox", {"GPTNeoXForCausalLM", "GPTNeoXModel"}, HfTokenizer::ByteLevelBpe);
    t.push_back(a);
  }
  {
    // modeling_opt.py (OPTForCausalLM): names under "model.decoder.", lm_head tied to
    // embed_tokens; learned positions read at position + 2 (OPTLearnedPositionalEmbedding's
    // offset); q, k, v, out_proj and fc1/fc2 with biases (enable_bias), ReLU; LayerNorms before
    // each sublayer and a final_layer_norm (do_layer_norm_before), or after each residual
    // (opt-350m: do_layer_norm_before false, no final norm). word_embed_proj_dim other than
    // hidden_size (project_in / project_out) is refused (hfOptNorm).
    ArchSpec a = describe("hf-opt", "OPTForCausalLM", "Hugging Face OPTForCausalLM (OPT)",
                          "Hugging Face transformers' modeling_opt.py");
    a.arch = Architecture::DecoderOnly;
    a.defaults = gptDefaults(Activation::Relu);
    a.defaults.position_offset = 2;
    a.defaults.max_len = 2048;
    a.heads_split_d_model = true;
    a.tied_output = true;
    const std::string l = "layers.{N}.";
    a.names = {one(kDec, Role::TokenEmbd, "embed_tokens.weight"),
               one(kDec, Role::PosEmbd, "embed_positions.weight")};
    add(a.names, separate(kDec, false, l + "self_attn.", "q_proj", "k_proj", "v_proj", "out_proj"));
    add(a.names,
        {mod(kDec, Role::AttnNorm, l + "self_attn_layer_norm"), mod(kDec, Role::FfnUp, l + "fc1"),
         mod(kDec, Role::FfnDown, l + "fc2"), mod(kDec, Role::FfnNorm, l + "final_layer_norm"),
         mod(kDec, Role::FinalNorm, "final_layer_norm", kOptional),
         one(kHead, Role::Output, "lm_head.weight")});
    a.args = {{"hidden_size", "d_model"},
              {"num_attention_heads", "n_heads"},
              {"num_hidden_layers", "n_layers"},
              {"ffn_dim", "d_ff"},
              {"activation_function", "activation", ArgKind::Activation},
              {"max_position_embeddings", "max_len"},
              {"vocab_size", "vocab_size"},
              {"bos_token_id", "bos_id"},
              {"eos_token_id", "eos_id"},
              {"tie_word_embeddings", "tied_output", ArgKind::Bool},
              {"enable_bias", "", ArgKind::Bool},
              {"do_layer_norm_before", "", ArgKind::Bool},
              {"word_embed_proj_dim", "", ArgKind::Int},
              {"_remove_final_layer_norm", "", ArgKind::Refused, "false"},
              {"layer_norm_elementwise_affine", "", ArgKind::Refused, "true"}};
    huggingFace(a, "opt", {"OPTForCausalLM", "OPTModel"}, HfTokenizer::ByteLevelBpe);
    t.push_back(a);
  }
}

std::vector<ArchSpec> makeTable() {
  std::vector<ArchSpec> t;

  {
    ArchSpec a = describe("nlp-tutorial", "Transformer", "nlp-tutorial's 5-1.Transformer",
                          "graykode's nlp-tutorial, 5-1.Transformer/Transformer.py");
    a.names = tutorialTranslation(true);
    t.push_back(a);
  }
  ArchSpec wq;
  wq.family = "wq-tutorial";
  wq.alias = "seed003";
  wq.title = "the WQ/WK/WV tutorial (Translation, BertModel, GPTModel, Classifier)";
  wq.source =
      "a Chinese blog article on the Transformer's principle and source code (Encoder, Decoder, "
      "BertModel, GPTModel, Classifier, Translation; WQ/WK/WV/linear, pos_ffn.l1/l2, tanh-GELU)";
  wq.defaults.activation = Activation::GeluTanh;
  {
    ArchSpec a = wq;
    a.model = "Translation";
    a.names = tutorialTranslation(false);
    t.push_back(a);
  }
  {
    ArchSpec a = wq;
    a.model = "BertModel";
    a.arch = Architecture::EncoderOnly;
    a.token_head = TokenHead::BertMlm;
    a.class_head = ClassHead::Pooler;
    a.defaults.n_segments = 2;
    a.names = tutorialStack(kEnc, "tok_embed", "pos_embed", "layers.", false, false);
    add(a.names, {one(kEnc, Role::SegmentEmbd, "seg_embed.weight"),
                  // logits = norm(act(linear(x))) · decoderᵀ + decoder_bias; decoder.weight is
                  // tied to tok_embed.weight in the tutorial (the state_dict holds both).
                  mod(kHead, Role::MlmTransform, "linear"),
                  mod(kHead, Role::MlmNorm, "norm"),
                  {kHead, Role::Output, "decoder.weight", "decoder_bias"},
                  mod(kHead, Role::Pooler, "fc"),
                  mod(kHead, Role::Classifier, "classifier")});
    t.push_back(a);
  }
  {
    ArchSpec a = wq;
    a.model = "Classifier";
    a.arch = Architecture::EncoderOnly;
    a.token_head = TokenHead::None;
    a.class_head = ClassHead::MeanPool;
    a.names =
        tutorialStack(kEnc, "encoder.src_emb", "encoder.pos_emb", "encoder.layers.", false, false);
    a.names.push_back(mod(kHead, Role::Classifier, "projection"));
    t.push_back(a);
  }
  {
    ArchSpec a = wq;
    a.model = "GPTModel";
    a.arch = Architecture::DecoderOnly;
    a.names =
        tutorialStack(kDec, "decoder.tgt_emb", "decoder.pos_emb", "decoder.layers.", false, false);
    a.names.push_back(mod(kHead, Role::Output, "projection"));
    t.push_back(a);
  }
  {
    ArchSpec a;
    a.family = "pytorch-nn-transformer";
    a.model = "Seq2SeqTransformer";
    a.alias = "torch-seq2seq";
    a.title = "PyTorch's nn.Transformer translation tutorial (Seq2SeqTransformer)";
    a.source = "PyTorch's tutorial \"Language Translation with nn.Transformer and torchtext\"";
    a.defaults.final_norm = a.defaults.embed_scale = true;
    a.defaults.mask_fill = kNegInf;
    a.defaults.src_bos_eos = true;
    a.heads_split_d_model = true;
    a.names = {one(kEnc, Role::TokenEmbd, "src_tok_emb.embedding.weight"),
               one(kEnc, Role::PosEmbd, "src_pos_emb.weight"),
               one(kEnc, Role::PosTable, "positional_encoding.pos_embedding", kSeqFirst),
               one(kDec, Role::TokenEmbd, "tgt_tok_emb.embedding.weight"),
               one(kDec, Role::PosEmbd, "tgt_pos_emb.weight")};
    add(a.names, torchLayers("transformer."));
    a.names.push_back(mod(kHead, Role::Output, "generator"));
    a.assumptions = {kTorchNorm, kTorchActivation};
    a.ids.pad = 1;
    a.decode = {4,
                "the tutorial's greedy_decode(…, max_len=num_tokens + 5) loops max_len − 1 "
                "times"};
    a.writable = true;
    t.push_back(a);
  }
  {
    ArchSpec a;
    a.family = "my-transformer";
    a.model = "TranslationModel";
    a.title = "MyTransformer of the TransformerTranslation project (MyMultiheadAttention)";
    a.source =
        "the article \"4万字50余图3个实战示例一网打尽Transformer\" and moon-hotel's "
        "TransformerTranslation repository (MyTransformer, MyMultiheadAttention)";
    a.defaults.final_norm = a.defaults.embed_scale = true;
    a.defaults.mask_fill = kNegInf;
    a.heads_split_d_model = true;
    a.names = {one(kEnc, Role::TokenEmbd, "src_token_embedding.embedding.weight"),
               one(kEnc, Role::PosEmbd, "src_pos_embedding.weight"),
               one(kEnc, Role::PosTable, "pos_embedding.pe", kSeqFirst),
               one(kDec, Role::TokenEmbd, "tgt_token_embedding.embedding.weight"),
               one(kDec, Role::PosEmbd, "tgt_pos_embedding.weight")};
    add(a.names, torchLayers("my_transformer."));
    a.names.push_back(mod(kHead, Role::Output, "classification"));
    a.assumptions = {kTorchNorm, kTorchActivation};
    a.ids.pad = 1;
    t.push_back(a);
  }
  {
    ArchSpec a;
    a.family = "step-by-step-encoder";
    a.model = "TransformerEncoder";
    a.title = "the Transformer encoder built step by step on BERT's configuration";
    a.source = "the article \"使用 Pytorch 一步一步实现 Transformer Encoder\" (jsksxs360's gist)";
    a.arch = Architecture::EncoderOnly;
    a.token_head = TokenHead::None;
    a.defaults.activation = Activation::Gelu;
    a.defaults.norm = NormPlacement::Pre;
    a.defaults.positional = Positional::Learned;
    a.defaults.embed_norm = true;
    a.defaults.embed_norm_eps = 1e-12f;
    a.defaults.mask_fill = kNegInf;
    a.heads_split_d_model = true;
    const std::string l = "layers.{N}.";
    a.names = {one(kEnc, Role::TokenEmbd, "embeddings.token_embeddings.weight"),
               one(kEnc, Role::PosEmbd, "embeddings.position_embeddings.weight"),
               mod(kEnc, Role::EmbdNorm, "embeddings.layer_norm", kOptional),
               mod(kEnc, Role::AttnNorm, l + "layer_norm_1"),
               // One AttentionHead (q, k, v Linears of [head_dim, d]) per head.
               mod(kEnc, Role::AttnQ, l + "attention.heads.{M}.q"),
               mod(kEnc, Role::AttnK, l + "attention.heads.{M}.k"),
               mod(kEnc, Role::AttnV, l + "attention.heads.{M}.v"),
               mod(kEnc, Role::AttnOut, l + "attention.output_linear"),
               mod(kEnc, Role::FfnNorm, l + "layer_norm_2"),
               mod(kEnc, Role::FfnUp, l + "feed_forward.linear_1"),
               mod(kEnc, Role::FfnDown, l + "feed_forward.linear_2")};
    t.push_back(a);
  }
  {
    // modeling_marian.py: post-norm layers, swish (= SiLU), token embeddings × √d_model, the
    // sinusoid laid out [sin | cos]; the decoder starts with the pad token.
    ArchSpec a =
        describe("hf-marian", "MarianMTModel", "Hugging Face MarianMTModel (Marian/OPUS-MT)",
                 "Hugging Face transformers' modeling_marian.py");
    a.defaults.activation = Activation::Silu;
    a.defaults.embed_scale = true;
    a.defaults.positional = Positional::SinusoidalHalves;
    a.defaults.max_len = 512;
    a.heads_split_d_model = true;
    a.tied_output = true;
    a.names = hfSeq2Seq({HfPositions::StoredTable, false, false});
    a.ids.pad = -2;
    a.ids.eos = 0;
    a.ids.bos = -3;
    a.notes =
        "swish activation and embeddings × √d_model assumed (MarianConfig as the converted OPUS "
        "models have it; config.json beside the model tells)";
    huggingFace(a, "marian", {"MarianMTModel", "MarianModel"}, HfTokenizer::Marian);
    t.push_back(a);
  }
  {
    // modeling_bart.py: post-norm, GELU (erf), learned positions whose first 2 rows are unused,
    // layernorm_embedding after token + position embeddings, no embedding scale by default.
    ArchSpec a = describe("hf-bart", "BartForConditionalGeneration",
                          "Hugging Face BartForConditionalGeneration (BART)",
                          "Hugging Face transformers' modeling_bart.py");
    a.defaults.activation = Activation::Gelu;
    a.defaults.positional = Positional::Learned;
    a.defaults.position_offset = 2;
    a.defaults.embed_norm = true;
    a.defaults.max_len = 1024;
    a.defaults.src_bos_eos = true;
    a.heads_split_d_model = true;
    a.tied_output = true;
    a.names = hfSeq2Seq({HfPositions::Learned, true, false});
    a.ids.pad = 1;
    a.ids.eos = 2;
    a.ids.bos = -4;
    a.ids.src_bos = 0;
    a.notes =
        "GELU and no embedding scale assumed (BartConfig's defaults; config.json beside the "
        "model tells)";
    huggingFace(a, "bart", {"BartForConditionalGeneration", "BartModel"},
                HfTokenizer::ByteLevelBpe);
    t.push_back(a);
  }
  {
    // modeling_mbart.py: BART's modules with pre-norm layers (each sublayer's LayerNorm before
    // it, the residual after), layernorm_embedding after token + position embeddings, and a final
    // layer_norm on each stack; learned positions from row 2; GELU, no embedding scale unless
    // scale_embedding (MBartConfig's defaults). config.json (configFromHf) states the rest.
    ArchSpec a = describe("hf-mbart", "MBartForConditionalGeneration",
                          "Hugging Face MBartForConditionalGeneration (mBART, mBART-50)",
                          "Hugging Face transformers' modeling_mbart.py");
    a.defaults.activation = Activation::Gelu;
    a.defaults.norm = NormPlacement::Pre;
    a.defaults.final_norm = true;
    a.defaults.positional = Positional::Learned;
    a.defaults.position_offset = 2;
    a.defaults.embed_norm = true;
    a.defaults.max_len = 1024;
    a.heads_split_d_model = true;
    a.tied_output = true;
    a.names = hfSeq2Seq({HfPositions::Learned, true, true});
    a.ids.pad = 1;
    a.ids.eos = 2;
    a.ids.bos = -4;
    a.decode = {5,
                "attnviz's rule (source length + 5 new tokens); the decoder starts with "
                "decoder_start_token_id and stops after </s>, as generate() does greedily; a "
                "forced_bos_token_id (mBART-50's target language) is not forced: give it as the "
                "target prefix"};
    a.notes = "pre-norm layers with final layer norms, as modeling_mbart.py computes them";
    huggingFace(a, "mbart", {"MBartForConditionalGeneration", "MBartModel"}, HfTokenizer::None);
    t.push_back(a);
  }
  {
    // modeling_pegasus.py: Marian's [sin | cos] sinusoid (PegasusSinusoidalPositionalEmbedding,
    // a fixed Parameter save_pretrained keeps) with mBART's pre-norm layers and final layer norms,
    // no layernorm_embedding; GELU and no embedding scale unless config.json says (PegasusConfig's
    // defaults); the decoder starts with the pad token.
    ArchSpec a = describe("hf-pegasus", "PegasusForConditionalGeneration",
                          "Hugging Face PegasusForConditionalGeneration (Pegasus)",
                          "Hugging Face transformers' modeling_pegasus.py");
    a.defaults.activation = Activation::Gelu;
    a.defaults.norm = NormPlacement::Pre;
    a.defaults.final_norm = true;
    a.defaults.positional = Positional::SinusoidalHalves;
    a.defaults.max_len = 1024;
    a.defaults.src_bos_eos = true;
    a.heads_split_d_model = true;
    a.tied_output = true;
    a.names = hfSeq2Seq({HfPositions::StoredTable, false, true});
    a.ids.pad = 0;
    a.ids.eos = 1;
    a.ids.bos = -3;
    a.decode = {5,
                "attnviz's rule (source length + 5 new tokens); the decoder starts with "
                "decoder_start_token_id (the pad token) and stops after </s>, as generate() does "
                "greedily"};
    a.notes = "pre-norm layers and Marian's sinusoid, as modeling_pegasus.py computes them";
    huggingFace(a, "pegasus", {"PegasusForConditionalGeneration", "PegasusModel"},
                HfTokenizer::None);
    t.push_back(a);
  }
  {
    // modeling_m2m_100.py (M2M100, NLLB-200): mBART's pre-norm layers and final layer norms, no
    // layernorm_embedding; fairseq's sinusoid (M2M100SinusoidalPositionalEmbedding, a buffer that
    // is not saved) at positions counted from padding_idx + 1 over the tokens that are not
    // padding; embeddings × √d_model and ReLU (M2M100Config's defaults).
    ArchSpec a = describe("hf-m2m100", "M2M100ForConditionalGeneration",
                          "Hugging Face M2M100ForConditionalGeneration (M2M100, NLLB-200)",
                          "Hugging Face transformers' modeling_m2m_100.py");
    a.defaults.activation = Activation::Relu;
    a.defaults.norm = NormPlacement::Pre;
    a.defaults.final_norm = true;
    a.defaults.embed_scale = true;
    a.defaults.positional = Positional::SinusoidalFairseq;
    a.defaults.max_len = 1024;
    a.heads_split_d_model = true;
    a.tied_output = true;
    a.names = hfSeq2Seq({HfPositions::Computed, false, true});
    // Older versions kept the computed table as a Parameter `weights` (never saved since).
    a.ignored = {"encoder.embed_positions.weights", "decoder.embed_positions.weights"};
    a.ids.pad = 1;
    a.ids.eos = 2;
    a.ids.bos = -4;
    a.decode = {5,
                "attnviz's rule (source length + 5 new tokens); the decoder starts with "
                "decoder_start_token_id (</s>) and stops after </s>, as generate() does greedily; "
                "the target language code generate() forces (forced_bos_token_id) is not forced: "
                "give it as the target prefix"};
    a.notes = "pre-norm layers and fairseq's sinusoid, as modeling_m2m_100.py computes them";
    huggingFace(a, "m2m_100", {"M2M100ForConditionalGeneration", "M2M100Model"}, HfTokenizer::None);
    t.push_back(a);
  }
  {
    // modeling_t5.py (T5ForConditionalGeneration; mT5 and Flan-T5 are the same code): pre-norm
    // T5LayerNorm (RMSNorm, weight only, eps layer_norm_epsilon), no positions added but a
    // relative position bias [buckets, H] held by each stack's first self-attention (bidirectional
    // in the encoder, causal in the decoder) and added to the scores of every layer; scores not
    // scaled (QKᵀ alone); q, k, v, o without biases; a final norm per stack; DenseReluDense
    // (wi, ReLU, wo) or, gated (v1.1, Flan), act(wi_0) ⊙ wi_1 then wo; with tie_word_embeddings
    // the decoder's output × d_model^-0.5 into lm_head = shared. config.json (configFromHf) states
    // the rest.
    ArchSpec a = describe("hf-t5", "T5ForConditionalGeneration",
                          "Hugging Face T5ForConditionalGeneration (T5, mT5, Flan-T5)",
                          "Hugging Face transformers' modeling_t5.py");
    ArchDefaults& d = a.defaults;
    d.norm = NormPlacement::Pre;
    d.norm_kind = NormKind::RmsNorm;
    d.layer_norm_eps = 1e-6f;
    d.positional = Positional::Relative;
    d.final_norm = true;
    d.attn_scale = 1.0f;
    d.max_len = 8192;      // relative positions set no limit of their own: 8,192, as attnviz takes
    d.src_bos_eos = true;  // the tokenizer appends </s> (no start marker)
    a.tied_output = true;
    for (Part p : {kEnc, kDec}) {
      const bool dec = p == kDec;
      const std::string s = dec ? "decoder" : "encoder";
      const std::string l = s + ".block.{N}.layer.";
      add(a.names, {one(p, Role::TokenEmbd, s + ".embed_tokens.weight", kTiedCopy),
                    one(p, Role::TokenEmbd, "shared.weight", kTiedCopy),
                    one(p, Role::RelPosBias,
                        s + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight"),
                    one(p, Role::AttnNorm, l + "0.layer_norm.weight")});
      add(a.names, separate(p, false, l + "0.SelfAttention.", "q", "k", "v", "o"));
      if (dec) {
        a.names.push_back(one(p, Role::CrossNorm, l + "1.layer_norm.weight"));
        add(a.names, separate(p, true, l + "1.EncDecAttention.", "q", "k", "v", "o"));
      }
      const std::string f = l + (dec ? "2." : "1.");
      add(a.names, {one(p, Role::FfnNorm, f + "layer_norm.weight"),
                    one(p, Role::FfnUp, f + "DenseReluDense.wi.weight"),
                    one(p, Role::FfnUp, f + "DenseReluDense.wi_1.weight"),
                    one(p, Role::FfnGate, f + "DenseReluDense.wi_0.weight"),
                    one(p, Role::FfnDown, f + "DenseReluDense.wo.weight"),
                    one(p, Role::FinalNorm, s + ".final_layer_norm.weight")});
    }
    a.names.push_back(one(kHead, Role::Output, "lm_head.weight"));
    a.ids.pad = 0;
    a.ids.eos = 1;
    a.ids.bos = -3;  // decoder_start_token_id: the pad token
    a.decode = {5,
                "attnviz's rule (source length + 5 new tokens); the decoder starts with "
                "decoder_start_token_id (the pad token) and stops after </s>, as generate() "
                "does greedily"};
    a.notes =
        "relative position bias and unscaled scores as modeling_t5.py computes them; "
        "config.json beside the model states the feed-forward and the tied head";
    huggingFace(a, "t5", {"T5ForConditionalGeneration", "T5Model"}, HfTokenizer::T5);
    t.push_back(a);
    // modeling_mt5.py: the same modules and math under model_type "mt5" (MT5Config's defaults
    // differ: gated-gelu, untied; config.json states them).
    a.model = "MT5ForConditionalGeneration";
    a.title = "Hugging Face MT5ForConditionalGeneration (mT5)";
    a.source = "Hugging Face transformers' modeling_mt5.py";
    huggingFace(a, "mt5", {"MT5ForConditionalGeneration", "MT5Model"}, HfTokenizer::T5);
    t.push_back(a);
  }
  addTutorials(t);
  addHuggingFace(t);
  return t;
}

}  // namespace

const std::vector<ArchSpec>& architectures() {
  static const std::vector<ArchSpec> table = makeTable();
  return table;
}

const ArchSpec* findArchitecture(const std::string& family, const std::string& model) {
  for (const auto& a : architectures())
    if ((a.family == family || (!a.alias.empty() && a.alias == family)) &&
        (model.empty() || a.model == model))
      return &a;
  return nullptr;
}

const ArchSpec* findHfArchitecture(const std::string& model_type) {
  for (const auto& a : architectures())
    if (!a.hf_model_type.empty() && a.hf_model_type == model_type) return &a;
  return nullptr;
}

std::string familyList() {
  std::string out, last;
  for (const auto& a : architectures()) {
    if (a.family == last) continue;
    out += (out.empty() ? "" : ", ") + a.family;
    last = a.family;
  }
  return out;
}

namespace {

[[noreturn]] void badMap(const std::string& source, const std::string& what) {
  throw Error(ErrorKind::BadConfig, source + ": " + what + " (docs/formats.md \"Your own names\")");
}

std::string roleList() {
  std::string s;
  for (int r = 0; r < kRoleCount; ++r) s += (r ? ", " : "") + std::string(roleName(Role(r)));
  return s;
}

template <class E, size_t N>
E mapChoice(const nlohmann::json& m, const char* key, const std::string& source, E fallback,
            const std::pair<const char*, E> (&choices)[N]) {
  if (!m.contains(key)) return fallback;
  std::string names;
  for (const auto& [name, value] : choices) {
    if (m[key].is_string() && m[key].get<std::string>() == name) return value;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  badMap(source, "\"" + std::string(key) + "\" is " + clipForMessage(m[key].dump(), 40) +
                     ", expected one of " + names);
}

}  // namespace

std::shared_ptr<const ArchSpec> customArchitecture(const nlohmann::json& m,
                                                   const std::string& source) {
  if (!m.is_object()) badMap(source, "the map is not a JSON object");
  static const char* const kKeys[] = {
      "base",        "architecture", "names",          "ignore",     "activation",
      "norm",        "norm_kind",    "positional",     "rope_theta", "rope_layout",
      "embed_scale", "tied_output",  "layer_norm_eps", "mask_fill",  "max_len"};
  for (const auto& [key, value] : m.items()) {
    bool known = false;
    for (const char* k : kKeys) known = known || key == k;
    if (!known) {
      std::string keys;
      for (const char* k : kKeys) keys += (keys.empty() ? "" : ", ") + std::string(k);
      badMap(source, "unknown key \"" + clipForMessage(key, 40) + "\" (the keys: " + keys + ")");
    }
  }
  auto spec = std::make_shared<ArchSpec>();
  ArchSpec& a = *spec;
  if (m.contains("base")) {
    const ArchSpec* base =
        m["base"].is_string() ? findArchitecture(m["base"].get<std::string>()) : nullptr;
    if (!base)
      badMap(source, "\"base\" is " + clipForMessage(m["base"].dump(), 40) +
                         ", expected a family of the table: " + familyList());
    a = *base;
    a.args_key.clear();  // the user's own file: no checkpoint args are required
    a.args.clear();
    a.writable = false;
    a.hf_model_type.clear();
    a.hf_classes.clear();
    a.hf_tokenizer = HfTokenizer::None;
  } else {
    a.title = "a model of your own names";
    a.model = "Model";
  }
  a.family = "custom";
  a.alias.clear();
  a.title = "your own names" + (m.contains("base") ? " on " + m["base"].get<std::string>() : "");
  static constexpr std::pair<const char*, Architecture> kArchs[] = {
      {"encoder-decoder", Architecture::EncoderDecoder},
      {"encoder-only", Architecture::EncoderOnly},
      {"decoder-only", Architecture::DecoderOnly}};
  a.arch = mapChoice(m, "architecture", source,
                     m.contains("base") ? a.arch : Architecture::DecoderOnly, kArchs);
  if (!m.contains("base")) {
    a.token_head = a.arch == Architecture::EncoderOnly ? TokenHead::None : TokenHead::Linear;
    a.class_head = ClassHead::None;
    a.defaults.norm = NormPlacement::Pre;
    a.defaults.positional = Positional::Learned;
    a.defaults.padding_mask = a.arch != Architecture::DecoderOnly;  // a language model: no padding
  }
  ArchDefaults& d = a.defaults;
  static constexpr std::pair<const char*, Activation> kActs[] = {
      {"relu", Activation::Relu},
      {"gelu", Activation::Gelu},
      {"gelu_tanh", Activation::GeluTanh},
      {"silu", Activation::Silu}};
  d.activation = mapChoice(m, "activation", source, d.activation, kActs);
  static constexpr std::pair<const char*, NormPlacement> kNorms[] = {{"post", NormPlacement::Post},
                                                                     {"pre", NormPlacement::Pre}};
  d.norm = mapChoice(m, "norm", source, d.norm, kNorms);
  static constexpr std::pair<const char*, NormKind> kKinds[] = {
      {"layernorm", NormKind::LayerNorm},
      {"layernorm-std", NormKind::LayerNormStd},
      {"rmsnorm", NormKind::RmsNorm}};
  d.norm_kind = mapChoice(m, "norm_kind", source, d.norm_kind, kKinds);
  static constexpr std::pair<const char*, Positional> kPositions[] = {
      {"sinusoidal", Positional::Sinusoidal},
      {"learned", Positional::Learned},
      {"rotary", Positional::Rotary},
      {"sinusoidal-halves", Positional::SinusoidalHalves},
      {"sinusoidal-fairseq", Positional::SinusoidalFairseq}};
  d.positional = mapChoice(m, "positional", source, d.positional, kPositions);
  static constexpr std::pair<const char*, RopeLayout> kLayouts[] = {
      {"interleaved", RopeLayout::Interleaved}, {"halves", RopeLayout::Halves}};
  d.rope_layout = mapChoice(m, "rope_layout", source, d.rope_layout, kLayouts);
  auto boolean = [&](const char* key, bool fallback) {
    if (!m.contains(key)) return fallback;
    if (!m[key].is_boolean())
      badMap(source, "\"" + std::string(key) + "\" is " + clipForMessage(m[key].dump(), 40) +
                         ", expected true or false");
    return m[key].get<bool>();
  };
  // The settings the config has too, read with the config's checks (arch/config.h).
  d.rope_theta = configRopeTheta(m, source, d.rope_theta);
  d.layer_norm_eps = configEps(m, "layer_norm_eps", source, d.layer_norm_eps);
  d.mask_fill = configMaskFill(m, source, d.mask_fill);
  d.max_len = configMaxLen(m, source, d.max_len);
  d.embed_scale = boolean("embed_scale", d.embed_scale);
  a.tied_output = boolean("tied_output", a.tied_output);
  a.assumptions.clear();
  a.ids.ask_ids = true;

  // "names": role → a module ("blocks.{N}.attn.q": .weight and .bias) or {"weight", "bias",
  // "transposed"}; in an encoder-decoder "encoder.attn_q", "decoder.cross_q".
  if (m.contains("names")) {
    const nlohmann::json& names = m["names"];
    if (!names.is_object()) badMap(source, "\"names\" is not an object of role → name");
    for (const auto& [key, value] : names.items()) {
      std::string role_key = key;
      Part part = a.arch == Architecture::EncoderOnly ? Part::Encoder : Part::Decoder;
      bool part_given = false;
      for (Part p : {Part::Encoder, Part::Decoder}) {
        const std::string pre = std::string(partName(p)) + ".";
        if (role_key.rfind(pre, 0) == 0) {
          role_key = role_key.substr(pre.size());
          part = p;
          part_given = true;
        }
      }
      int role = -1;
      for (int r = 0; r < kRoleCount; ++r)
        if (role_key == roleName(Role(r))) role = r;
      if (role < 0)
        badMap(source, "\"names\" has \"" + clipForMessage(key, 40) +
                           "\", which is not a role (the roles: " + roleList() + ")");
      const Role r = Role(role);
      if (r >= Role::Output) part = Part::Head;
      if (a.arch == Architecture::EncoderDecoder && r < Role::Output && !part_given)
        badMap(source, "\"" + clipForMessage(key, 40) +
                           "\": an encoder-decoder's roles are named \"encoder." + key +
                           "\" or \"decoder." + key + "\"");
      TensorName t{part, r, "", "", kFromMap};
      if (value.is_string()) {
        const std::string base = value.get<std::string>();
        const bool lone = r == Role::TokenEmbd || r == Role::PosEmbd || r == Role::PosTable ||
                          r == Role::SegmentEmbd;
        const bool has_suffix = base.size() > 7 && base.compare(base.size() - 7, 7, ".weight") == 0;
        t.weight = lone || has_suffix ? base : base + ".weight";
        t.bias =
            lone ? std::string() : (has_suffix ? base.substr(0, base.size() - 7) : base) + ".bias";
        if (isNormRole(r)) t.flags |= kBiasOptional;
      } else if (value.is_object()) {
        if (!value.contains("weight") || !value["weight"].is_string())
          badMap(source, "\"" + clipForMessage(key, 40) + "\" needs a string \"weight\"");
        t.weight = value["weight"].get<std::string>();
        if (value.contains("bias")) {
          if (!value["bias"].is_string())
            badMap(source, "\"" + clipForMessage(key, 40) + "\".bias is not a string");
          t.bias = value["bias"].get<std::string>();
        }
        if (value.contains("transposed") && value["transposed"] == true) t.flags |= kTransposed;
      } else {
        badMap(source, "\"" + clipForMessage(key, 40) + "\" is " +
                           clipForMessage(value.dump(), 40) +
                           ", expected a name or {\"weight\": …, \"bias\": …}");
      }
      if (t.weight.empty() || t.weight.size() > 1024)
        badMap(source, "\"" + clipForMessage(key, 40) + "\" has an empty or over-long name");
      if (isLayerRole(r) && t.weight.find("{N}") == std::string::npos)
        badMap(source, "\"" + clipForMessage(key, 40) +
                           "\" is a per-layer role: its name needs {N} "
                           "where the layer's number goes");
      // The user's spelling replaces the base's spellings of that role.
      a.names.erase(
          std::remove_if(a.names.begin(), a.names.end(),
                         [&](const TensorName& n) { return n.part == part && n.role == r; }),
          a.names.end());
      a.names.push_back(t);
      if (r == Role::FfnGate) d.gated_ffn = true;
    }
  }
  if (m.contains("ignore")) {
    if (!m["ignore"].is_array()) badMap(source, "\"ignore\" is not a list of names");
    for (const auto& i : m["ignore"]) {
      if (!i.is_string()) badMap(source, "\"ignore\" holds " + clipForMessage(i.dump(), 40));
      a.ignored.push_back(i.get<std::string>());
    }
  }
  for (Part p : {Part::Encoder, Part::Decoder}) {
    if ((p == Part::Encoder && !a.hasEncoder()) || (p == Part::Decoder && !a.hasDecoder()))
      continue;
    const char* where = a.arch == Architecture::EncoderDecoder ? partName(p) : nullptr;
    auto need = [&](bool ok, const char* what) {
      if (!ok)
        badMap(source, std::string("the map names no ") + what +
                           (where ? std::string(" for the ") + where : std::string()));
    };
    need(a.has(p, Role::TokenEmbd), "token_embd");
    need(a.has(p, Role::AttnQ) || a.has(p, Role::AttnQkv), "attn_q (or attn_qkv)");
    need(a.has(p, Role::FfnUp), "ffn_up");
  }
  if (a.defaults.positional == Positional::Learned && !a.has(Part::Encoder, Role::PosEmbd) &&
      !a.has(Part::Decoder, Role::PosEmbd))
    a.defaults.positional = Positional::Sinusoidal;
  if (!a.has(Part::Head, Role::Output) && a.token_head == TokenHead::Linear) a.tied_output = true;
  a.model = a.model.empty() ? "Model" : a.model;
  a.custom_map = m.dump();
  return spec;
}

nlohmann::json customArchitectureJson(const ArchSpec& spec) {
  return spec.custom_map.empty() ? nlohmann::json() : nlohmann::json::parse(spec.custom_map);
}

}  // namespace attnviz

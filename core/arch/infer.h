// Reading a model's configuration from its tensors: which architecture of the table the names
// follow (and under which prefix, e.g. "module." from DataParallel, "_orig_mod." from
// torch.compile), the sizes their shapes tell and what a checkpoint's args state. What the file
// cannot tell (the number of heads, the special ids, the vocabularies) is supplied by the user;
// inferConfig says exactly what is still missing.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "arch/config.h"
#include "base/error.h"
#include "io/tensor_source.h"
#include "text/tokenizer.h"

namespace attnviz {

// An architecture of the table whose tensor names the file follows.
struct FamilyGuess {
  const ArchSpec* spec = nullptr;  // a table entry (or the user's own names: `own`)
  // The descriptor built from the user's names map, kept alive with the guess (and so with an
  // Inference carried to the GUI's dialog); null for the table's entries.
  std::shared_ptr<const ArchSpec> own;
  std::string prefix;  // stripped from every name ("module.", "_orig_mod."); "" = none
  int named = 0;       // the file's tensors the descriptor explains
  int total = 0;       // tensors in the file
  bool args = false;   // the checkpoint holds the args the descriptor reads
  std::string family() const { return spec ? spec->family : std::string(); }
  std::string model() const { return spec ? spec->model : std::string(); }
  // "wq-tutorial Translation" (+ ", prefix "module." stripped")
  std::string summary() const;
};

// Every architecture whose characteristic tensors (token table and first attention block of each
// stack, the class head, a required embedding norm) are all present, best first: those whose
// checkpoint args are present, then the most tensors explained, then the shortest prefix. Empty
// when none matches.
std::vector<FamilyGuess> guessFamilies(const TensorSource& file);
// The prefix under which the file holds this architecture's characteristic tensors ("" when they
// are unprefixed, or when they are not there at all).
std::string familyPrefix(const TensorSource& file, const ArchSpec& spec);
// The architecture the file comes closest to when none matches, and the roles it lacks
// ("attn_q (transformer.h.0.attn.c_attn.weight)"): for the message refusing the file.
struct ClosestArchitecture {
  const ArchSpec* spec = nullptr;
  std::string prefix;
  int named = 0;
  std::vector<std::string> missing_roles;
};
ClosestArchitecture closestArchitecture(const TensorSource& file);

// The first spelling of a role whose weight the file holds at `layer` (head 0), or null.
const TensorName* presentSpelling(const TensorSource& file, const ArchSpec& spec, Part part,
                                  Role role, int layer = 0);
// How many layers of `part` the file holds (the first index with none of its tensors).
int countLayers(const TensorSource& file, const ArchSpec& spec, Part part);

// A view of a TensorSource with a prefix taken off every name that has it.
class PrefixedSource : public TensorSource {
 public:
  PrefixedSource(const TensorSource& base, std::string prefix);
  const std::string& path() const override { return base_.path(); }
  std::string formatName() const override { return base_.formatName(); }
  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  const TensorInfo* find(const std::string& name) const override;
  Tensor toFloat(const TensorInfo& info) const override;
  using TensorSource::toFloat;
  const std::map<std::string, std::string>& metadata() const override { return base_.metadata(); }
  const nlohmann::json& arguments() const override { return base_.arguments(); }

 private:
  const TensorSource& base_;
  std::string prefix_;
  std::vector<TensorInfo> tensors_;  // names without the prefix
  std::map<std::string, size_t> index_;
};

// What the user supplies for what the tensors cannot tell (CLI options, the GUI's dialog, answers
// remembered beside the file).
struct UserSupplied {
  std::optional<std::string> family;  // a family of the table (architectures.h)
  std::optional<std::string> model;
  // The user's own names (docs/formats.md "Your own names"): a map read with --names FILE.json.
  nlohmann::json names_map;
  std::optional<int> n_heads;
  std::optional<int> pad_id, bos_id, eos_id;
  // The LayerNorm's place ("pre": before each sublayer, nn.Transformer's norm_first=True; "post")
  // and the feed-forward's activation ("relu", "gelu", "gelu_tanh", "silu"): what the names of
  // nn.Transformer's tensors cannot tell.
  std::optional<std::string> norm, activation;
  std::vector<std::string> src_vocab, tgt_vocab;  // empty = tokens shown as their ids
  // A tokenizer for both sides (supplyVocabulary), and the file it was read from (remembered as
  // its path; reopened when the answers are read back).
  std::shared_ptr<const Tokenizer> tokenizer;
  std::string vocab_file;
  nlohmann::json toJson() const;  // for remembering beside the file
  static UserSupplied fromJson(const nlohmann::json& j, const std::string& what);
};

// One vocabulary for both sides from the file a user names: nanoGPT's meta.pkl (its characters,
// read by the restricted unpickler, as a character tokenizer), or whatever openTokenizerFile
// reads (tokenizer.json, a SentencePiece .model, GPT-2's vocab.json / encoder.json with their
// merges beside them, a plain vocabulary file). Sets `u`'s src_vocab, tgt_vocab, tokenizer (null
// for a plain vocabulary) and vocab_file. Throws Error naming the file.
void supplyVocabulary(UserSupplied& u, const std::string& path);

// What the file cannot tell, as data — which setting (UserSupplied's key, the answers file's),
// why, and the values it may take — never as a front end's words: the CLI says it as its options
// (--n-heads, --pad-id, --norm pre), the GUI as the fields of its dialog (Attention heads,
// Padding token's id, Norm placement).
struct Question {
  std::string key;           // "n_heads", "bos_id", "eos_id"
  std::string why;           // what it is and why the tensors cannot tell
  std::vector<int> choices;  // a count's values that fit (the divisors of the projection width)
  // An id's range: id_lowest (-1: none allowed) to id_end − 1 (the vocabulary's size); id_end 0
  // for a question that is not an id.
  int id_lowest = 0, id_end = 0;
};

// A setting the file does not state, taken as its tutorial has it or as the user gave it: the
// LayerNorm's place, the activation (the descriptor's assumptions), the padding id of a model that
// has padding. The front ends offer to change it, each in its own words.
struct Assumed {
  std::string key;                     // "norm", "activation", "pad_id"
  std::string value;                   // the value taken: "post", "gelu_tanh", "1"
  bool given = false;                  // the user's answer (now or remembered), not the tutorial's
  std::vector<Alternative> otherwise;  // other values worth naming and what they mean
  std::string hint;                    // where to look in the training script
  int id_lowest = 0, id_end = 0;       // an id's range, as Question's
};

struct Inference {
  FamilyGuess guess;
  nlohmann::json config;           // a config for ModelConfig::fromJson once nothing is missing
  std::vector<std::string> facts;  // "d_model 512 (from src_tok_emb.embedding.weight [11, 512])"
  std::vector<Question> missing;   // what must still be supplied
  // What the names cannot tell and was taken without asking (nn.Transformer's norm placement and
  // activation, minGPT's GELU, a translation model's padding id): offered in the GUI's dialog,
  // named with its option by the CLI.
  std::vector<Assumed> assumed;
  std::string args_source;  // where stated sizes came from ("model_args", "config.json"); "" = none
  bool complete() const { return missing.empty(); }
  // What was detected and inferred, and what is missing, in a few lines (no front end's words).
  std::string explain() const;
};

// A file whose tensor names follow no architecture of the table (and no names map was given):
// the refusal names the closest architecture and the roles it lacks there. The front ends add how
// to give a map of the names (the CLI --names FILE.json, the GUI File › Open with a names map…).
class UnknownNamesError : public Error {
 public:
  UnknownNamesError(const std::string& message, ClosestArchitecture closest)
      : Error(ErrorKind::BadConfig, message), closest(std::move(closest)) {}
  ClosestArchitecture closest;
};

// Reads the family and sizes from the tensors (and what the file's args state: a checkpoint's
// model_args, or `hf_config`, a Hugging Face config.json, when given) and fills in what was
// supplied. Throws Error(BadConfig) when no architecture's naming matches (naming the closest and
// what it lacks), or when the args hold a value of the wrong type.
Inference inferConfig(const TensorSource& file, const UserSupplied& supplied,
                      const nlohmann::json* hf_config = nullptr);

}  // namespace attnviz

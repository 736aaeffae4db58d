// Reading a model's configuration from its tensors: which tutorial's naming the names follow (and
// under which prefix, e.g. "module." from DataParallel), and the sizes their shapes tell. What the
// tensors cannot tell (the number of heads, the special ids, the vocabularies) is supplied by the
// user; inferConfig says exactly what is still missing.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "arch/config.h"
#include "io/tensor_source.h"

namespace attnviz {

// A family and class whose tensor names the file follows.
struct FamilyGuess {
  Family family = Family::NlpTutorial;
  ModelClass model = ModelClass::Transformer;
  std::string prefix;  // stripped from every name ("module.", "model."); "" when none
  int named = 0;       // tensors under the prefix
  int total = 0;       // tensors in the file
  // "wq-tutorial Translation" (+ ", prefix "module." stripped")
  std::string summary() const;
};

// Every family/class whose characteristic tensors are all present, best first (the most tensors
// under its prefix, then the shortest prefix). Empty when none matches.
std::vector<FamilyGuess> guessFamilies(const TensorSource& file);
// The prefix under which the file holds this family's characteristic tensors ("" when they are
// unprefixed, or when they are not there at all).
std::string familyPrefix(const TensorSource& file, Family family, ModelClass model);

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

 private:
  const TensorSource& base_;
  std::string prefix_;
  std::vector<TensorInfo> tensors_;  // names without the prefix
  std::map<std::string, size_t> index_;
};

// What the user supplies for what the tensors cannot tell (CLI options, the GUI's dialog, answers
// remembered beside the file).
struct UserSupplied {
  std::optional<Family> family;
  std::optional<ModelClass> model;
  std::optional<int> n_heads;
  std::optional<int> pad_id, bos_id, eos_id;
  // The LayerNorm's place ("pre": before each sublayer, nn.Transformer's norm_first=True; "post")
  // and the feed-forward's activation ("relu", "gelu", "gelu_tanh", "silu"): what the names of
  // nn.Transformer's tensors cannot tell.
  std::optional<std::string> norm, activation;
  std::vector<std::string> src_vocab, tgt_vocab;  // empty = tokens shown as their ids
  nlohmann::json toJson() const;                  // for remembering beside the file
  static UserSupplied fromJson(const nlohmann::json& j, const std::string& what);
};

struct Question {
  std::string key;           // "n_heads", "bos_id", …
  std::string why;           // what it is and why the tensors cannot tell
  std::vector<int> choices;  // possible values (the divisors of the projection width for heads)
};

struct Inference {
  FamilyGuess guess;
  nlohmann::json config;           // a config for ModelConfig::fromJson once nothing is missing
  std::vector<std::string> facts;  // "d_model 512 (from src_tok_emb.embedding.weight [11, 512])"
  std::vector<Question> missing;   // what must still be supplied
  // The norm placement and activation are assumptions (post, ReLU) unless supplied: the family's
  // names are the same either way (pytorch-nn-transformer, my-transformer).
  bool layout_assumed = false;
  bool complete() const { return missing.empty(); }
  // What was detected and inferred, and what is missing, in a few lines.
  std::string explain() const;
};

// Reads the family and sizes from the tensors and fills in what was supplied. Throws
// Error(BadConfig) when no family's naming matches (listing the families it knows).
Inference inferConfig(const TensorSource& file, const UserSupplied& supplied);

}  // namespace attnviz

// What attnviz-cli's commands share: the model options (MODEL, --config, --backend), the input
// options (--src/--src-ids, --tgt/--tgt-ids, --segment-ids) and their meaning for each
// architecture, the non-finite check (--keep-going), and printing text from files safely.
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend.h"
#include "model.h"
#include "weights.h"

namespace attnviz::cli {

// MODEL (a .safetensors path or a bundled name), --config FILE.json, --backend cpu|cuda.
struct ModelArgs {
  std::string model;
  std::string config;
  std::string backend = "cpu";
};
// required = false: MODEL may be left out (bench). backend = false: no --backend (info).
void addModelArgs(CLI::App* cmd, ModelArgs& a, bool required = true, bool backend = true);
// Loads the model; its warnings go to stderr.
std::shared_ptr<const LoadedModel> openModel(const ModelArgs& a);
std::shared_ptr<Backend> openBackend(const ModelArgs& a);

// The sentence options. An encoder-decoder takes the source (and optionally the target), an
// encoder-only model the source, a decoder-only model the target.
struct InputArgs {
  std::optional<std::string> src, src_ids, tgt, tgt_ids, segment_ids;
};
void addInputArgs(CLI::App* cmd, InputArgs& a, bool segments = false);
// The encoder's ids; empty for a decoder-only model (whose input is the target).
std::vector<int> sourceIds(const Model& m, const InputArgs& a);
// The decoder's given positions: --tgt-ids (the start token added when missing) or --tgt words
// (after the start token); empty when neither is given.
std::vector<int> targetIds(const Model& m, const InputArgs& a);
std::vector<int> segmentIds(const Model& m, const InputArgs& a);

// --keep-going: non-finite values are reported as a warning instead of an error.
void addKeepGoing(CLI::App* cmd, bool& keep_going);
// Reports `summary` (what is non-finite, and where): a warning on stderr with keep_going, else an
// Error(NonFinite).
void reportNonFinite(const std::string& summary, bool keep_going);

// Text from a file (names, tokens, paths) for the terminal: control characters escaped.
std::string safe(std::string_view text);
// Tokens joined with spaces, each made safe.
std::string joinTokens(const std::vector<std::string>& tokens);

}  // namespace attnviz::cli

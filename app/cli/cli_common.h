// What attnviz-cli's commands share: the model options (MODEL, --config, --backend), the input
// options (--src/--src-ids, --tgt/--tgt-ids, --segment-ids) and their meaning for each
// architecture, the non-finite check (--keep-going), and printing text from files safely.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arch/weights.h"
#include "compute/backend.h"
#include "model/model.h"

namespace attnviz::cli {

// MODEL (a .safetensors or PyTorch file, a Hugging Face folder or a bundled name), --config
// FILE.json, --backend cpu|cuda, and what the tensors of a file without a config cannot tell
// (--family, --model-class, --n-heads, --pad-id, --bos-id, --eos-id, --vocab, --src-vocab,
// --tgt-vocab; --remember keeps them in MODEL.attnviz.json for the next opening).
struct ModelArgs {
  std::string model;
  std::string config;
  std::string backend = "cpu";
  std::optional<std::string> family, model_class, vocab, src_vocab, tgt_vocab, norm, activation,
      names;
  std::optional<int> n_heads, pad_id, bos_id, eos_id;
  std::optional<int> threads;  // --threads: the CPU backend's threads (0 = one per core)
  bool remember = false;
};
// required = false: MODEL may be left out (bench). backend = false: no --backend and --threads
// (info, convert).
void addModelArgs(CLI::App* cmd, ModelArgs& a, bool required = true, bool backend = true);
// The load options the model options give (the answers' vocabularies read from their files).
LoadOptions loadOptions(const ModelArgs& a);
// With --remember: keeps the answers given beside the model file at `path`.
void rememberIfAsked(const ModelArgs& a, const std::string& path, const LoadOptions& lo);
// Loads the model (and remembers the answers when asked); its warnings go to stderr.
std::shared_ptr<const LoadedModel> openModel(const ModelArgs& a);
// The command line's words for what a file cannot tell (the core keeps it as data:
// Inference::missing and ::assumed; the GUI words it as the fields of its dialog).
std::string optionFor(const std::string& key);  // "n_heads" → "--n-heads"
// How to change what was assumed: "--norm pre for norm_first=True", "--pad-id ID (0 to 27)".
std::string changeOptions(const Assumed& a);
// An error's message with the command line's advice: the options a MissingInfoError leaves to
// give (and what was assumed), the --names map an UnknownNamesError asks for.
std::string commandLineMessage(const Error& e);
// The backend `name` ("cpu", "cuda") on `threads` threads (0: the backend's default, one per core);
// a note on stderr when the backend cannot take the count.
// A test hook: with ATTNVIZ_TEST_MEMORY_LIMIT=BYTES in the environment the backend refuses to
// hold more than BYTES at once and runs out of memory as a full GPU does (compute/memory_limit.h),
// so that the CPU fallback below can be tested without a GPU, or on one without filling it.
std::shared_ptr<Backend> openBackend(const std::string& name, int threads);
std::shared_ptr<Backend> openBackend(const ModelArgs& a);  // --backend, --threads
// Loads MODEL, puts it on the chosen backend and runs `body` on it. When the body runs out of GPU
// memory it is redone on the CPU with the same loaded weights (model/cpu_fallback.h), and a note
// on stderr says so: a body prints nothing before its computation is done.
int runOnModel(const ModelArgs& a, const std::function<int(Model&)>& body);

// The sentence options. An encoder-decoder takes the source (and optionally the target), an
// encoder-only model the source, a decoder-only model the target.
struct InputArgs {
  std::optional<std::string> src, src_ids, tgt, tgt_ids, segment_ids;
  bool crop = false;  // a decoder-only model's prompt past its positions: keep its last tokens
};
// --src/--src-ids/--tgt/--tgt-ids, each also as --…-file FILE (read into the same field).
void addInputArgs(CLI::App* cmd, InputArgs& a, bool segments = false);
// The encoder's ids; empty for a decoder-only model (whose input is the target).
std::vector<int> sourceIds(const Model& m, const InputArgs& a);
// The decoder's given positions: --tgt-ids (the start token added when missing) or --tgt words
// (after the start token); empty when neither is given.
std::vector<int> targetIds(const Model& m, const InputArgs& a);
std::vector<int> segmentIds(const Model& m, const InputArgs& a);
// One sentence's inputs for a pass (run, lens, contributions): the source (and segments) and the
// target; an encoder-decoder given no target greedy-decodes one first, with `masks`, at most
// `max_new_tokens` tokens (0: the tutorial's rule, tutorialMaxNewTokens).
Inputs passInputs(const Model& m, const InputArgs& a, const MaskOptions& masks, int max_new_tokens);

// --max-len N of a command that runs one pass (passInputs): an encoder-decoder given no --tgt
// decodes at most N new tokens first.
void addPassMaxLen(CLI::App* cmd, int& max_new_tokens);
// --position P of lens, contributions, attribute and patch: counted from 1, as attnviz counts
// layers, heads and positions everywhere (the GUI, the lesson page and every command's output);
// unset (0), the last position.
void addPositionOption(CLI::App* cmd, int& position, const std::string& help);
// The position's index from 0, as the core takes it: −1 (the last) when unset; Error(Usage) when
// the output stack has fewer than `position` positions (`n`).
int positionIndex(int position, int n);

// The id of an output token given as a string (--NAME) or an id (--NAME-id); −1 when neither.
int outputToken(const Vocabulary& out, const std::optional<std::string>& token,
                const std::optional<std::string>& id, const char* option);
// --NAME TOKEN and --NAME-id ID: an output token as a string or an id, not both.
void addTokenOptions(CLI::App* cmd, const std::string& name, const std::string& help,
                     std::optional<std::string>& token, std::optional<std::string>& id);
// The switches of one forward pass as `run` makes it: --max-len (an encoder-decoder given no target
// greedy-decodes one first), --no-padding-mask, --no-subsequent-mask and --keep-going.
struct PassArgs {
  int max_new_tokens = 0;
  bool no_padding_mask = false, no_subsequent_mask = false, keep_going = false;
  MaskOptions masks() const;
};
void addPassArgs(CLI::App* cmd, PassArgs& a);
// The pass on the sentence options (passInputs), with `options` and the masks the switches leave
// on; non-finite values anywhere are an error (a warning with --keep-going).
Trace runPass(Model& m, const InputArgs& input, const PassArgs& pass, ForwardOptions options);

// --keep-going: non-finite values are reported as a warning instead of an error.
void addKeepGoing(CLI::App* cmd, bool& keep_going);
// Reports `summary` (what is non-finite, and where): a warning on stderr with keep_going, else an
// Error(NonFinite).
void reportNonFinite(const std::string& summary, bool keep_going);

// Text from a file (names, tokens, paths) for the terminal: control characters escaped.
std::string safe(std::string_view text);
// Tokens joined with spaces, each as text/token_display.h shows it (\n, \x1B, ␣ for a space token).
std::string joinTokens(const std::vector<std::string>& tokens);
// `text` shown as a token (text/token_display.h), cut with … or padded to `width` characters (code
// points): a column of a table.
std::string tokenColumn(const std::string& text, int width);

}  // namespace attnviz::cli

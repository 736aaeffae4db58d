// attnviz-cli decode MODEL: greedy decoding from the start token (or a given prefix), printing the
// tokens or their ids; stops with an error when the logits turn non-finite.
#include <cmath>
#include <iostream>

#include "base/error.h"
#include "base/safe_text.h"
#include "cli_common.h"
#include "commands.h"
#include "model/decoding.h"
#include "model/finite_scan.h"
#include "text/tokenizer.h"

namespace attnviz::cli {

namespace {

struct DecodeArgs {
  ModelArgs model;
  InputArgs input;
  int max_new_tokens = 0;
  bool ids = false, keep_going = false, escape = false;
};

// The decode and what it prints (redone on the CPU when it runs out of GPU memory: runOnModel).
int decodeOn(Model& m, const DecodeArgs& a) {
  const ModelConfig& c = m.config();
  if (!c.hasDecoder())
    throw Error(ErrorKind::Usage, std::string(modelClassName(c.model)) +
                                      " has no decoder: use `run` to see its outputs");
  DecodingSession::Options so;
  so.record = false;
  const std::vector<int> src = sourceIds(m, a.input);
  so.max_new_tokens =
      a.max_new_tokens > 0 ? a.max_new_tokens : tutorialMaxNewTokens(c, (int)src.size());
  DecodingSession s(m, src, targetIds(m, a.input), so);
  bool reported = false;
  while (!s.finished()) {
    // The argmax of NaN logits is meaningless: report where they turned non-finite.
    NonFiniteCount bad;
    bad.add(s.lastLogits(), s.vocabSize());
    if (bad.any() && !reported) {
      reportNonFinite("the next-token logits after target position " + std::to_string(s.length()) +
                          " hold " + bad.describe() + " of " + std::to_string(s.vocabSize()) +
                          " (attnviz-cli run shows the first block where they appear)",
                      a.keep_going);
      reported = true;
    }
    s.stepForward();
  }
  const std::vector<int> out = s.generated();
  if (a.ids) {
    std::string line;
    for (int id : out) line += (line.empty() ? "" : ",") + std::to_string(id);
    std::cout << line << "\n";
  } else if (m.loaded().tokenizer) {  // subword pieces joined back into text
    // Text as text: its newlines and tabs as they are (a character model's lines), every other
    // control character escaped; --escape escapes them too.
    std::cout << terminalSafe(m.loaded().tokenizer->decode(Side::Target, out), !a.escape) << "\n";
  } else {
    std::vector<std::string> words;
    for (int id : out)
      if (id != c.eos_id) words.push_back(m.tgtVocab().token(id));
    std::cout << joinTokens(words) << "\n";
  }
  // Why it ended, when not at the end token (after the text, which a pipe may be reading).
  std::cout.flush();
  if (s.stopReason() == DecodeStop::NewTokens)
    std::cerr << "attnviz-cli: stopped after " << s.maxNewTokens() << " new tokens ("
              << (a.max_new_tokens > 0 ? "--max-len " + std::to_string(a.max_new_tokens)
                                       : std::string("the default; --max-len N changes it"))
              << "); the end token was not chosen\n";
  else if (s.stopReason() == DecodeStop::ModelPositions)
    std::cerr << "attnviz-cli: stopped: the text fills the model's " << m.maxPositions()
              << " positions (its max_len); the end token was not chosen\n";
  return 0;
}

int runDecode(const DecodeArgs& a) {
  return runOnModel(a.model, [&](Model& m) { return decodeOn(m, a); });
}

}  // namespace

Command addDecodeCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("decode", "greedy decoding; prints the tokens");
  auto a = std::make_shared<DecodeArgs>();
  addModelArgs(cmd, a->model);
  addInputArgs(cmd, a->input);
  cmd->add_option("--max-len", a->max_new_tokens,
                  "at most N new tokens (default: the tutorial's rule, attnviz-cli info says it, "
                  "else source length + 5, or 50 for a decoder-only "
                  "model; never past the model's max_len)")
      ->check(CLI::Range(1, ConfigLimits::kMaxLen))
      ->type_name("N");
  cmd->add_flag("--ids", a->ids, "print the token ids (with the end token) instead of words");
  cmd->add_flag("--escape", a->escape,
                "print the text's newlines and tabs escaped (\\x0A, \\x09), on one line");
  addKeepGoing(cmd, a->keep_going);
  return {cmd, [a] { return runDecode(*a); }};
}

}  // namespace attnviz::cli

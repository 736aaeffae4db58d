#include "cli_common.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <iostream>

#include "arch/architectures.h"
#include "arch/bundled.h"
#include "arch/infer.h"
#include "base/error.h"
#include "base/file_read.h"
#include "base/safe_text.h"
#include "compute/backends.h"
#include "compute/memory_limit.h"
#include "model/cpu_fallback.h"
#include "model/decoding.h"
#include "model/finite_scan.h"
#include "model/prompt.h"
#include "text/token_display.h"
#include "text/vocab.h"
#include "text/vocab_files.h"

namespace attnviz::cli {

std::string safe(std::string_view text) {
  return terminalSafe(text);
}

std::string joinTokens(const std::vector<std::string>& tokens) {
  std::string s;
  for (const auto& w : tokens) s += (s.empty() ? "" : " ") + displayToken(w);
  return s;
}

void addModelArgs(CLI::App* cmd, ModelArgs& a, bool required, bool backend) {
  auto* model = cmd->add_option("MODEL", a.model,
                                "a .safetensors or PyTorch (.pt, .pth, .bin) file, a Hugging Face "
                                "folder, or a bundled model's name (attnviz-cli models)");
  if (required) model->required();
  cmd->add_option("--config", a.config, "the model's config when it is not inside the file")
      ->type_name("FILE.json");
  // What a file without a config cannot tell by its tensors (docs/formats.md, "Inferred configs").
  const std::string g = "Without a config";
  std::string classes;
  for (const auto& arch : architectures()) classes += (classes.empty() ? "" : ", ") + arch.model;
  cmd->add_option(
         "--family", a.family,
         "the tutorial the model follows, when its tensor names do not tell (" + familyList() + ")")
      ->group(g);
  cmd->add_option("--model-class", a.model_class,
                  "the model's class in its tutorial (" + classes + ")")
      ->group(g);
  cmd->add_option("--names", a.names,
                  "a model of your own names: a JSON map of your tensor names to their roles "
                  "(docs/formats.md \"Your own names\")")
      ->type_name("FILE.json")
      ->group(g);
  cmd->add_option("--n-heads", a.n_heads, "the number of attention heads")
      ->check(CLI::Range(1, 4096))
      ->group(g);
  cmd->add_option("--pad-id", a.pad_id, "the padding token's id (-1: none)")->group(g);
  cmd->add_option("--bos-id", a.bos_id, "the start token's id (-1: none)")->group(g);
  cmd->add_option("--eos-id", a.eos_id, "the end token's id (-1: none)")->group(g);
  cmd->add_option("--norm", a.norm,
                  "where each sublayer's LayerNorm sits, when the tensor names do not tell: post "
                  "(after the residual add; nn.Transformer's default, assumed) or pre "
                  "(norm_first=True)")
      ->check(CLI::IsMember({"post", "pre"}))
      ->group(g);
  cmd->add_option("--activation", a.activation,
                  "the feed-forward's activation, when the tensor names do not tell (relu, "
                  "assumed; gelu, gelu_tanh, silu)")
      ->check(CLI::IsMember({"relu", "gelu", "gelu_tanh", "silu"}))
      ->group(g);
  cmd->add_option("--vocab", a.vocab,
                  "one vocabulary (and tokenizer) for both sides: nanoGPT's meta.pkl, a "
                  "tokenizer.json, a SentencePiece tokenizer.model, GPT-2's vocab.json or "
                  "encoder.json (merges.txt or vocab.bpe beside it), or a vocabulary: a JSON "
                  "list, a JSON token → id object, a text file of one token a line")
      ->type_name("FILE")
      ->group(g);
  cmd->add_option("--src-vocab", a.src_vocab, "the source vocabulary (formats as --vocab)")
      ->type_name("FILE")
      ->group(g);
  cmd->add_option("--tgt-vocab", a.tgt_vocab, "the target vocabulary (formats as --vocab)")
      ->type_name("FILE")
      ->group(g);
  cmd->add_flag("--remember", a.remember,
                "keep these answers in MODEL.attnviz.json, so that the next opening needs none")
      ->group(g);
  if (backend) {
    cmd->add_option("--backend", a.backend, "compute backend (default cpu)")
        ->check(CLI::IsMember({"cpu", "cuda"}));
    cmd->add_option("--threads", a.threads, "CPU threads; 0 = one per core (the default)")
        ->check(CLI::Range(0, 1024));
  }
}

static UserSupplied suppliedAnswers(const ModelArgs& a) {
  // The names are parsed as answers remembered in a file are: one set of rules.
  nlohmann::json j = nlohmann::json::object();
  if (a.family) j["family"] = *a.family;
  if (a.model_class) j["model"] = *a.model_class;
  if (a.n_heads) j["n_heads"] = *a.n_heads;
  if (a.pad_id) j["pad_id"] = *a.pad_id;
  if (a.bos_id) j["bos_id"] = *a.bos_id;
  if (a.eos_id) j["eos_id"] = *a.eos_id;
  if (a.norm) j["norm"] = *a.norm;
  if (a.activation) j["activation"] = *a.activation;
  if (a.names) {
    j["names_map"] = readJsonFile(*a.names);
    customArchitecture(j["names_map"], *a.names);  // checked where the message can name the file
  }
  UserSupplied u = UserSupplied::fromJson(j, "the command line");
  if (a.vocab && (a.src_vocab || a.tgt_vocab))
    throw Error(ErrorKind::Usage,
                "give --vocab (both sides) or --src-vocab / --tgt-vocab, not both");
  if (a.vocab) supplyVocabulary(u, *a.vocab);
  if (a.src_vocab) u.src_vocab = readVocabularyFile(*a.src_vocab);
  if (a.tgt_vocab) u.tgt_vocab = readVocabularyFile(*a.tgt_vocab);
  return u;
}

LoadOptions loadOptions(const ModelArgs& a) {
  LoadOptions lo;
  lo.config_path = a.config;
  lo.supplied = suppliedAnswers(a);
  return lo;
}

void rememberIfAsked(const ModelArgs& a, const std::string& path, const LoadOptions& lo) {
  if (!a.remember) return;
  if (lo.supplied.toJson().empty())
    throw Error(ErrorKind::Usage, "--remember: nothing to remember (give --n-heads, --bos-id, …)");
  rememberAnswers(path, lo.supplied);
  std::cerr << "attnviz-cli: the answers are kept in " << safe(answersPath(path)) << "\n";
}

std::shared_ptr<const LoadedModel> openModel(const ModelArgs& a) {
  const LoadOptions lo = loadOptions(a);
  const std::string path = resolveModelPath(a.model);
  auto m = loadModel(path, lo);
  rememberIfAsked(a, m->path, lo);  // the model file itself (a folder's model.safetensors)
  for (const auto& w : m->warnings) std::cerr << "attnviz-cli: warning: " << safe(w) << "\n";
  return m;
}

std::string optionFor(const std::string& key) {
  std::string o = "--" + key;
  std::replace(o.begin(), o.end(), '_', '-');
  return o;
}

std::string changeOptions(const Assumed& a) {
  std::string s;
  for (const Alternative& alt : a.otherwise)
    s += (s.empty() ? "" : "; ") + optionFor(a.key) + " " + alt.value + " for " + alt.meaning;
  if (s.empty() && a.id_end > 0)
    s = optionFor(a.key) + " ID (" + (a.id_lowest < 0 ? "-1 for none, or " : "") + "0 to " +
        std::to_string(a.id_end - 1) + ")";
  return s;
}

std::string commandLineMessage(const Error& e) {
  std::string m = e.what();
  if (const auto* missing = dynamic_cast<const MissingInfoError*>(&e)) {
    std::string give, change;
    for (const Question& q : missing->inference.missing)
      give += (give.empty() ? "" : ", ") + optionFor(q.key);
    for (const Assumed& a : missing->inference.assumed)
      if (!a.given && !changeOptions(a).empty())
        change += (change.empty() ? "" : "; ") + changeOptions(a);
    if (!give.empty())
      m += "\nGive " + give + " (or a config with --config FILE.json, docs/formats.md)";
    if (!change.empty()) m += "\nAssumed, unless you give " + change;
  }
  if (dynamic_cast<const UnknownNamesError*>(&e))
    m += ": give the map with --names FILE.json, or a config with --config FILE.json";
  return m;
}

std::shared_ptr<Backend> openBackend(const std::string& name, int threads) {
  std::shared_ptr<Backend> backend = createBackend(name);  // an Error when CUDA is absent
  if (threads > 0) {
    backend->setThreads(threads);
    if (backend->threads() != threads)
      std::cerr << "attnviz-cli: note: the " << backend->name() << " backend runs on "
                << backend->threads() << " thread(s); --threads " << threads << " has no effect\n";
  }
  if (const char* limit = std::getenv("ATTNVIZ_TEST_MEMORY_LIMIT"); limit && *limit) {
    const std::string text(limit);
    if (text.find_first_not_of("0123456789") != std::string::npos || text.size() > 19)
      throw Error(ErrorKind::Usage, "ATTNVIZ_TEST_MEMORY_LIMIT=" + safe(text) +
                                        " is not a number of bytes (a test hook: leave it unset)");
    backend = limitMemory(std::move(backend), std::stoull(text));
  }
  return backend;
}

std::shared_ptr<Backend> openBackend(const ModelArgs& a) {
  return openBackend(a.backend, a.threads.value_or(0));
}

int runOnModel(const ModelArgs& a, const std::function<int(Model&)>& body) {
  auto model = std::make_shared<Model>(openModel(a), openBackend(a));
  std::string note;
  const int status = runRedoingOnCpu(model, a.threads.value_or(0), &note,
                                     [&](const std::shared_ptr<Model>& m) { return body(*m); });
  if (!note.empty()) std::cerr << "attnviz-cli: note: " << safe(note) << "\n";
  return status;
}

void addInputArgs(CLI::App* cmd, InputArgs& a, bool segments) {
  auto* src = cmd->add_option("--src", a.src, "the source sentence (encoder input)");
  auto* src_ids = cmd->add_option("--src-ids", a.src_ids, "source token ids instead of words")
                      ->type_name("5,1,3");
  auto* tgt = cmd->add_option("--tgt", a.tgt,
                              "the target words after the start token (decoder input; a "
                              "decoder-only model's prompt)");
  auto* tgt_ids = cmd->add_option("--tgt-ids", a.tgt_ids,
                                  "target token ids instead of words (the start token is added "
                                  "when missing)")
                      ->type_name("1,4");
  // The same read from a file, for inputs longer than a command line holds (Linux takes at most
  // 128 KiB in one argument): the text as it is, but for one final line break; ids separated by
  // commas or white space.
  auto fromFile = [&](const std::string& name, std::optional<std::string>& field, bool ids,
                      const std::string& help) {
    return cmd
        ->add_option_function<std::string>(
            name,
            [&field, name, ids](const std::string& path) {
              field =
                  readInputText(path, ids ? "the id file of " + name : "the text file of " + name);
            },
            help)
        ->type_name("FILE");
  };
  auto* src_file =
      fromFile("--src-file", a.src, false, "the source sentence read from a UTF-8 text file");
  auto* src_ids_file = fromFile("--src-ids-file", a.src_ids, true,
                                "the source token ids read from a file (commas or white space "
                                "between them)");
  auto* tgt_file = fromFile("--tgt-file", a.tgt, false,
                            "the target words (a decoder-only model's prompt) read from a UTF-8 "
                            "text file");
  auto* tgt_ids_file = fromFile("--tgt-ids-file", a.tgt_ids, true,
                                "the target token ids read from a file (the start token is added "
                                "when missing)");
  for (CLI::Option* o : {src_ids, src_file, src_ids_file}) src->excludes(o);
  for (CLI::Option* o : {src_file, src_ids_file}) src_ids->excludes(o);
  src_file->excludes(src_ids_file);
  for (CLI::Option* o : {tgt_ids, tgt_file, tgt_ids_file}) tgt->excludes(o);
  for (CLI::Option* o : {tgt_file, tgt_ids_file}) tgt_ids->excludes(o);
  tgt_file->excludes(tgt_ids_file);
  cmd->add_flag("--crop", a.crop,
                "a decoder-only model's prompt longer than its positions: keep the start token and "
                "the last tokens that fit, as nanoGPT's sample.py crops its context (said on "
                "stderr); without it such a prompt is refused");
  if (segments)
    cmd->add_option("--segment-ids", a.segment_ids,
                    "one segment (token type) id per source token, for models with segments")
        ->type_name("0,0,1");
}

namespace {

// The words of `text` that a word vocabulary reads as its unknown token, said on stderr as the
// GUI's message bar says them (a tokenizer splits words into known pieces instead).
void warnUnknownWords(const Model& m, const Vocabulary& vocab, const std::string& text,
                      const char* field) {
  if (m.loaded().tokenizer || vocab.unkId() < 0) return;
  const std::vector<std::string> words = vocab.unknownWords(text);
  if (words.empty()) return;
  std::string list;
  for (const std::string& w : words) list += (list.empty() ? "\"" : ", \"") + safe(w) + "\"";
  std::cerr << "attnviz-cli: warning: the " << field << " has "
            << (words.size() == 1 ? "a word" : std::to_string(words.size()) + " words")
            << " the vocabulary does not know, read as " << displayToken(vocab.token(vocab.unkId()))
            << ": " << list << "\n";
}

}  // namespace

std::vector<int> sourceIds(const Model& m, const InputArgs& a) {
  const ModelConfig& c = m.config();
  if (!c.hasEncoder()) {
    if (a.src || a.src_ids)
      throw Error(ErrorKind::Usage, std::string(modelClassName(c.model)) +
                                        " has no encoder: give the input with --tgt or --tgt-ids");
    return {};
  }
  if (a.src_ids) return parseIdList(*a.src_ids, (int)c.src_vocab.size(), "--src-ids");
  if (!a.src)
    throw Error(ErrorKind::Usage, "give the source sentence with --src \"…\" or --src-ids 1,2,3");
  warnUnknownWords(m, m.srcVocab(), *a.src, c.hasDecoder() ? "source" : "input");
  return m.encodeSource(*a.src);
}

std::vector<int> targetIds(const Model& m, const InputArgs& a) {
  const ModelConfig& c = m.config();
  if (!c.hasDecoder()) {
    if (a.tgt || a.tgt_ids)
      throw Error(ErrorKind::Usage, std::string(modelClassName(c.model)) +
                                        " has no decoder: give the input with --src or --src-ids");
    return {};
  }
  std::vector<int> tgt;
  if (a.tgt_ids) {
    tgt = parseIdList(*a.tgt_ids, (int)c.tgt_vocab.size(), "--tgt-ids");
    if (c.bos_id >= 0 && tgt.front() != c.bos_id) tgt.insert(tgt.begin(), c.bos_id);
    if (c.hasCross()) return tgt;
  } else if (a.tgt) {
    warnUnknownWords(m, m.tgtVocab(), *a.tgt, c.hasCross() ? "target" : "prompt");
    if (c.hasCross()) return m.encodeTarget(*a.tgt);
  } else {
    return {};
  }
  // A decoder-only model's prompt: cut to the model's positions only when asked.
  const Prompt p = a.tgt_ids ? cropPrompt(m, std::move(tgt)) : encodePrompt(m, *a.tgt);
  if (p.cropped()) {
    // The limit's reason: the model's max_len, or a window attnviz does not reproduce beyond it.
    const std::string why = m.limitReason() == " (max_len)" ? " (its max_len)" : m.limitReason();
    // The start token attnviz puts in front (or the ids begin with) takes a position too.
    const bool start = c.bos_id >= 0 && !p.ids.empty() && p.ids.front() == c.bos_id;
    const std::string sizes =
        std::to_string(p.tokens) + " tokens long" +
        (start ? " (" + std::to_string(p.tokens + 1) + " positions with the start token)"
               : std::string()) +
        "; the model takes " + std::to_string(m.maxPositions()) + " positions" + why;
    if (!a.crop)
      throw Error(ErrorKind::BadInput, "the prompt is " + sizes + ": --crop keeps the last " +
                                           std::to_string(p.kept) +
                                           ", as nanoGPT's sample.py crops its context");
    std::cerr << "attnviz-cli: note: the prompt is " << sizes << ": kept its last " << p.kept
              << " tokens (--crop)\n";
  }
  return p.ids;
}

std::vector<int> segmentIds(const Model& m, const InputArgs& a) {
  if (!a.segment_ids) return {};
  return parseIdList(*a.segment_ids, std::max(m.config().n_segments, 1), "--segment-ids");
}

Inputs passInputs(const Model& m, const InputArgs& a, const MaskOptions& masks,
                  int max_new_tokens) {
  const ModelConfig& c = m.config();
  Inputs in;
  const std::vector<int> src = sourceIds(m, a);
  if (c.hasEncoder()) {
    in.src = {src};
    const std::vector<int> seg = segmentIds(m, a);
    if (!seg.empty()) in.segments = {seg};
  }
  std::vector<int> tgt = targetIds(m, a);
  if (c.hasCross() && tgt.empty()) {
    // No target given: greedy-decode it (without a trace, with the same masks), for one
    // teacher-forced pass over what it decoded — the trace the decoding computed, at the size the
    // pass's memory estimate counts.
    DecodingSession::Options so;
    so.masks = masks;
    so.record = false;
    so.max_new_tokens =
        max_new_tokens > 0 ? max_new_tokens : tutorialMaxNewTokens(c, (int)src.size());
    DecodingSession s(m, src, {}, so);
    s.runToEnd();
    tgt = s.targetIds();
  }
  if (c.hasDecoder()) {
    if (tgt.empty())
      throw Error(ErrorKind::Usage, "give the input with --tgt \"…\" or --tgt-ids 1,2,3");
    in.tgt = {tgt};
  }
  return in;
}

void addPassMaxLen(CLI::App* cmd, int& max_new_tokens) {
  cmd->add_option("--max-len", max_new_tokens,
                  "an encoder-decoder given no --tgt decodes at most N new tokens first (default: "
                  "the tutorial's rule)")
      ->check(CLI::Range(1, ConfigLimits::kMaxLen))
      ->type_name("N");
}

void addPositionOption(CLI::App* cmd, int& position, const std::string& help) {
  cmd->add_option("--position", position,
                  help + " (counted from 1: 1 is the first; default: the last)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            int p = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), p);
            if (ec == std::errc() && end == text.data() + text.size() && p >= 1) return {};
            return "positions count from 1 (1 is the first token, as in the application), not " +
                   safe(text);
          },
          "P ≥ 1"))
      ->type_name("P");
}

int positionIndex(int position, int n) {
  if (position <= 0) return -1;
  if (position > n)
    throw Error(ErrorKind::Usage, "--position " + std::to_string(position) + ": the sentence has " +
                                      std::to_string(n) + " position" + (n == 1 ? "" : "s") +
                                      " (1 to " + std::to_string(n) + ")");
  return position - 1;
}

int outputToken(const Vocabulary& out, const std::optional<std::string>& token,
                const std::optional<std::string>& id, const char* option) {
  if (id) return parseIdList(*id, out.size(), (std::string(option) + "-id").c_str()).at(0);
  if (!token) return -1;
  const int found = out.id(*token);
  if (found < 0)
    throw Error(ErrorKind::BadInput, std::string(option) + ": \"" + safe(*token) +
                                         "\" is not a token of the output vocabulary (give an "
                                         "id with " +
                                         option + "-id)");
  return found;
}

void addTokenOptions(CLI::App* cmd, const std::string& name, const std::string& help,
                     std::optional<std::string>& token, std::optional<std::string>& id) {
  auto* given = cmd->add_option("--" + name, token, help)->type_name("TOKEN");
  cmd->add_option("--" + name + "-id", id, "the same, as an id")->type_name("ID")->excludes(given);
}

MaskOptions PassArgs::masks() const {
  MaskOptions m;
  m.src_padding = m.tgt_padding = !no_padding_mask;
  m.subsequent = !no_subsequent_mask;
  return m;
}

void addPassArgs(CLI::App* cmd, PassArgs& a) {
  addPassMaxLen(cmd, a.max_new_tokens);
  cmd->add_flag("--no-padding-mask", a.no_padding_mask, "switch the padding mask off");
  cmd->add_flag("--no-subsequent-mask", a.no_subsequent_mask,
                "switch the decoder's look-ahead mask off");
  addKeepGoing(cmd, a.keep_going);
}

Trace runPass(Model& m, const InputArgs& input, const PassArgs& pass, ForwardOptions options) {
  options.masks = pass.masks();
  const Inputs in = passInputs(m, input, options.masks, pass.max_new_tokens);
  Trace t = m.forward(in, options);
  // NaN and infinities anywhere stop here (unless --keep-going): nothing is shown as if fine.
  if (const NonFiniteReport r = scanTrace(t); !r.empty())
    reportNonFinite(r.summary(), pass.keep_going);
  return t;
}

void addKeepGoing(CLI::App* cmd, bool& keep_going) {
  cmd->add_flag("--keep-going", keep_going,
                "report NaN or infinite values as a warning and go on (by default they are an "
                "error)");
}

void reportNonFinite(const std::string& summary, bool keep_going) {
  if (!keep_going)
    throw Error(ErrorKind::NonFinite,
                summary +
                    ". The weights may overflow float32, or a LayerNorm epsilon is too "
                    "small; --keep-going shows the outputs anyway");
  std::cerr << "attnviz-cli: warning: " << summary << "\n";
}

// `text` shown as a token, cut or padded to `width` characters (code points).
std::string tokenColumn(const std::string& text, int width) {
  const std::string shown = displayToken(text);
  std::string outText;
  int chars = 0;
  for (size_t i = 0; i < shown.size(); ++i) {
    const bool starts = ((unsigned char)shown[i] & 0xC0) != 0x80;
    if (starts && chars == width - 1) {
      outText += "…";
      ++chars;
      break;
    }
    chars += starts;
    outText += shown[i];
  }
  if (chars < width) outText.append((size_t)(width - chars), ' ');
  return outText;
}

}  // namespace attnviz::cli

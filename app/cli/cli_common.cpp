#include "cli_common.h"

#include <iostream>

#include "backends.h"
#include "bundled.h"
#include "error.h"
#include "safe_text.h"
#include "vocab.h"

namespace attnviz::cli {

std::string safe(std::string_view text) {
  return terminalSafe(text);
}

std::string joinTokens(const std::vector<std::string>& tokens) {
  std::string s;
  for (const auto& w : tokens) s += (s.empty() ? "" : " ") + safe(w);
  return s;
}

void addModelArgs(CLI::App* cmd, ModelArgs& a, bool required, bool backend) {
  auto* model = cmd->add_option(
      "MODEL", a.model, "a .safetensors file or a bundled model's name (attnviz-cli models)");
  if (required) model->required();
  cmd->add_option("--config", a.config, "the model's config when it is not inside the file")
      ->type_name("FILE.json");
  if (backend)
    cmd->add_option("--backend", a.backend, "compute backend (default cpu)")
        ->check(CLI::IsMember({"cpu", "cuda"}));
}

std::shared_ptr<const LoadedModel> openModel(const ModelArgs& a) {
  LoadOptions lo;
  lo.config_path = a.config;
  auto m = loadModel(resolveModelPath(a.model), lo);
  for (const auto& w : m->warnings) std::cerr << "attnviz-cli: warning: " << safe(w) << "\n";
  return m;
}

std::shared_ptr<Backend> openBackend(const ModelArgs& a) {
  return createBackend(a.backend);  // a clear Error when CUDA is unavailable
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
  src->excludes(src_ids);
  tgt->excludes(tgt_ids);
  if (segments)
    cmd->add_option("--segment-ids", a.segment_ids,
                    "one segment (token type) id per source token, for models with segments")
        ->type_name("0,0,1");
}

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
  if (a.tgt_ids) {
    std::vector<int> tgt = parseIdList(*a.tgt_ids, (int)c.tgt_vocab.size(), "--tgt-ids");
    if (c.bos_id >= 0 && tgt.front() != c.bos_id) tgt.insert(tgt.begin(), c.bos_id);
    return tgt;
  }
  if (a.tgt) return m.encodeTarget(*a.tgt);
  return {};
}

std::vector<int> segmentIds(const Model& m, const InputArgs& a) {
  if (!a.segment_ids) return {};
  return parseIdList(*a.segment_ids, std::max(m.config().n_segments, 1), "--segment-ids");
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

}  // namespace attnviz::cli

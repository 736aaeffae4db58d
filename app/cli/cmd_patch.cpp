// attnviz-cli patch MODEL: activation patching between a clean and a corrupted input
// (model/patching.h). Prints the metric of both runs, then each heatmap — every layer's residual
// stream at every position, every head of every attention block — as the percentage of the clean
// run's logit difference that patching it from the clean run into the corrupted one restores.
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>

#include "base/error.h"
#include "cli_common.h"
#include "commands.h"
#include "model/patching.h"
#include "model/trace_dump.h"
#include "text/token_display.h"

namespace attnviz::cli {

namespace {

constexpr int kColumn = 11;  // characters per heatmap column
constexpr int kLabel = 12;   // characters of the row labels

struct PatchArgs {
  ModelArgs model;
  InputArgs input;
  InputArgs corrupt;  // only the sides that differ from the clean input
  std::string dump;
  int max_new_tokens = 0, position = 0;
  std::optional<std::string> answer, answer_id, foil, foil_id;
  bool residuals_only = false, heads_only = false;
};

std::string percent(double fraction) {
  char buf[32];
  const double shown = std::abs(fraction) < 0.005 ? 0.0 : 100.0 * fraction;  // never "-0%"
  std::snprintf(buf, sizeof buf, "%.0f%%", shown);
  return buf;
}

void printMap(const PatchHeatmap& map) {
  std::cout << "\n"
            << map.title << ": restored per " << (map.heads ? "layer and head" : "row and position")
            << "\n";
  std::cout << std::left << std::setw(kLabel) << "";
  for (int j = 0; j < map.cols; ++j)
    std::cout << tokenColumn(map.heads ? map.col_labels[j] : std::to_string(j + 1), kColumn);
  std::cout << "\n";
  if (!map.heads) {
    std::cout << std::setw(kLabel) << "token";
    for (int j = 0; j < map.cols; ++j) std::cout << tokenColumn(map.col_labels[j], kColumn);
    std::cout << "\n";
  }
  for (int r = 0; r < map.rows; ++r) {
    std::cout << std::setw(kLabel) << map.row_labels[r];
    for (int j = 0; j < map.cols; ++j)
      std::cout << std::right << std::setw(kColumn - 1) << percent(map.restored[map.cell(r, j)])
                << " " << std::left;
    std::cout << "\n";
  }
}

int runPatch(const PatchArgs& a) {
  // Redone on the CPU when it runs out of GPU memory (runOnModel).
  return runOnModel(a.model, [&](Model& m) {
    const Inputs clean = passInputs(m, a.input, MaskOptions{}, a.max_new_tokens);
    Inputs corrupted = clean;
    const bool src = a.corrupt.src || a.corrupt.src_ids, tgt = a.corrupt.tgt || a.corrupt.tgt_ids;
    if (!src && !tgt)
      throw Error(
          ErrorKind::Usage,
          "give the corrupted input with --corrupt-src / --corrupt-src-ids or --corrupt-tgt "
          "/ --corrupt-tgt-ids (the sides not given are the clean input's)");
    if (src) corrupted.src = {sourceIds(m, a.corrupt)};
    if (tgt) corrupted.tgt = {targetIds(m, a.corrupt)};
    PatchOptions o;
    o.position = positionIndex(
        a.position, int(m.config().hasDecoder() ? clean.tgt[0].size() : clean.src[0].size()));
    const Vocabulary& out = m.vocab(m.config().hasDecoder() ? Side::Target : Side::Source);
    o.answer = outputToken(out, a.answer, a.answer_id, "--answer");
    o.foil = outputToken(out, a.foil, a.foil_id, "--foil");
    o.residuals = !a.heads_only;
    o.heads = !a.residuals_only;
    const auto t0 = std::chrono::steady_clock::now();
    const PatchingResult r = patchActivations(m, clean, corrupted, o);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << std::fixed << std::setprecision(4);
    std::cout << "metric: m = logit[\"" << displayToken(r.answer_token) << "\"] − logit[\""
              << displayToken(r.foil_token) << "\"] at "
              << (r.stack == Side::Source ? "encoder" : "decoder") << " position " << r.position + 1
              << "\n";
    std::cout << "m(clean) = " << r.clean << ", m(corrupted) = " << r.corrupted << "\n";
    std::cout << "restored = (m(patched) − m(corrupted)) / (m(clean) − m(corrupted)); 100% = the "
                 "clean margin back whole\n";
    std::cout << std::setprecision(2) << r.runs << " patched runs in " << seconds << " s on "
              << m.backend().name() << "\n";
    for (const PatchHeatmap& map : r.maps) printMap(map);
    if (!a.dump.empty()) {
      dumpPatching(r, a.dump);
      std::cout << "\nwrote the heatmaps to " << safe(a.dump) << "\n";
    }
    return 0;
  });
}

}  // namespace

Command addPatchCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "patch",
      "activation patching: how much of the clean input's logit difference (answer − foil) each "
      "layer's residual stream at each position, and each head's output, restores when copied "
      "from the clean run into the corrupted run");
  auto a = std::make_shared<PatchArgs>();
  addModelArgs(cmd, a->model);
  addInputArgs(cmd, a->input, true);
  auto* csrc = cmd->add_option("--corrupt-src", a->corrupt.src,
                               "the corrupted source sentence (default: the clean one)");
  auto* csrc_ids =
      cmd->add_option("--corrupt-src-ids", a->corrupt.src_ids, "the corrupted source as ids")
          ->type_name("5,1,3");
  auto* ctgt = cmd->add_option("--corrupt-tgt", a->corrupt.tgt,
                               "the corrupted target words (default: the clean target)");
  auto* ctgt_ids =
      cmd->add_option("--corrupt-tgt-ids", a->corrupt.tgt_ids, "the corrupted target as ids")
          ->type_name("1,4");
  csrc->excludes(csrc_ids);
  ctgt->excludes(ctgt_ids);
  addPassMaxLen(cmd, a->max_new_tokens);  // the corrupted run is given the same target
  addPositionOption(cmd, a->position, "the position whose logits are compared");
  addTokenOptions(cmd, "answer", "the answer token (default: the clean run's choice)", a->answer,
                  a->answer_id);
  addTokenOptions(cmd, "foil",
                  "the foil token (default: the corrupted run's choice, or its runner-up when that "
                  "is the answer)",
                  a->foil, a->foil_id);
  auto* residuals =
      cmd->add_flag("--residuals-only", a->residuals_only, "only the layer × position sweeps");
  cmd->add_flag("--heads-only", a->heads_only, "only the layer × head sweeps")->excludes(residuals);
  cmd->add_option("--dump", a->dump,
                  "write patch_NAME_restored.npy and patch_NAME_metric.npy [rows,cols] for each "
                  "heatmap and patch.json (the definition, tokens, labels)")
      ->type_name("DIR");
  return {cmd, [a] { return runPatch(*a); }};
}

}  // namespace attnviz::cli

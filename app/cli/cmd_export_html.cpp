// attnviz-cli export-html MODEL OUT.html: a lesson as one self-contained HTML page
// (model/lesson_html.h) — one forward pass as `run` makes it (greedy-decoding the target first when
// an encoder-decoder gets none), the chosen scope, the view it opens on; its size said first.
#include <iostream>
#include <sstream>

#include "base/error.h"
#include "cli_common.h"
#include "commands.h"
#include "model/lesson_html.h"

namespace attnviz::cli {

namespace {

struct ExportHtmlArgs {
  ModelArgs model;
  InputArgs input;
  std::string out;
  std::string kinds, layers, heads, title;
  std::string view = "attention", kind, head = "mean";
  int layer = 0, step = 0, bits = 16, top_k = 5;
  PassArgs pass;
  bool estimate = false;
};

AttentionKind kindNamed(const std::string& name) {
  AttentionKind k;
  if (attentionKindNamed(name, &k)) return k;
  throw Error(ErrorKind::Usage,
              "unknown kind of attention \"" + name + "\" (enc_self, dec_self or cross)");
}

std::vector<std::string> commaList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// "1,3" (counted from 1) → {0, 2}.
std::vector<int> numbersFromOne(const std::string& text, const char* what) {
  std::vector<int> out;
  for (const std::string& item : commaList(text)) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 1)
      throw Error(ErrorKind::Usage, std::string(what) + " are counted from 1: \"" + item +
                                        "\" is not one (write --" + what + " 1,3)");
    out.push_back(v - 1);
  }
  return out;
}

int runExportHtml(const ExportHtmlArgs& a) {
  // Redone on the CPU when it runs out of GPU memory (runOnModel).
  return runOnModel(a.model, [&](Model& m) {
    const ModelConfig& c = m.config();
    const Trace t = runPass(m, a.input, a.pass, {});

    LessonScope scope;
    for (const std::string& k : commaList(a.kinds)) scope.kinds.push_back(kindNamed(k));
    scope.layers = numbersFromOne(a.layers, "layers");
    scope.heads = numbersFromOne(a.heads, "heads");
    scope.bits = a.bits;
    scope.top_k = a.top_k;

    LessonStart start;
    start.view = a.view;
    start.kind = a.kind.empty() ? (c.hasDecoder() && c.hasEncoder() ? AttentionKind::Cross
                                   : c.hasEncoder()                 ? AttentionKind::EncoderSelf
                                                                    : AttentionKind::DecoderSelf)
                                : kindNamed(a.kind);
    start.layer = a.layer > 0 ? a.layer - 1 : t.layers(start.kind) - 1;
    start.head = a.head == "mean" ? -1 : numbersFromOne(a.head, "heads").at(0);
    start.step = a.step - 1;
    LessonText text;
    text.model_name = a.model.model;
    text.source_text = a.input.src.value_or("");
    text.target_text = a.input.tgt.value_or("");
    text.title = a.title.empty() ? lessonTitle(a.model.model,
                                               c.hasEncoder() ? text.source_text : text.target_text)
                                 : a.title;
    text.masks = a.pass.masks();
    text.prefix_length = std::max(1, (int)targetIds(m, a.input).size());
    text.output_vocab = &m.vocab(c.hasDecoder() ? Side::Target : Side::Source);
    const uint64_t bytes = estimateLessonBytes(t, c, scope, start, text);
    std::cout << "the lesson: " << (bytes + 500) / 1000 << " kB (probabilities in " << a.bits
              << " bits, within ±" << lessonProbabilityError(a.bits) << ")\n";
    if (a.estimate) return 0;
    writeLessonHtml(a.out, t, c, scope, start, text);
    std::cout << "wrote " << safe(a.out) << "\n";
    return 0;
  });
}

}  // namespace

Command addExportHtmlCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "export-html",
      "a lesson as one HTML page that works offline in any browser: the sentence, every heatmap "
      "in the scope with hover, the overview, the masks, the decoding steps");
  auto a = std::make_shared<ExportHtmlArgs>();
  addModelArgs(cmd, a->model);
  addInputArgs(cmd, a->input);
  cmd->add_option("out", a->out, "the page to write")->required()->type_name("OUT.html");
  cmd->add_option("--kinds", a->kinds, "the kinds of attention kept (default: all)")
      ->type_name("enc_self,dec_self,cross");
  cmd->add_option("--layers", a->layers, "the layers kept, from 1 (default: all)")
      ->type_name("1,2,…");
  cmd->add_option("--heads", a->heads, "the heads kept, from 1 (default: all)")->type_name("1,2,…");
  cmd->add_option("--bits", a->bits, "bits per stored probability")
      ->check(CLI::IsMember({8, 16}))
      ->capture_default_str();
  cmd->add_option("--top-k", a->top_k, "next tokens listed per decoding step")
      ->check(CLI::Range(1, 50))
      ->capture_default_str();
  cmd->add_option("--view", a->view, "the view the page opens on")
      ->check(CLI::IsMember({"attention", "overview", "masks", "decoding"}))
      ->capture_default_str();
  cmd->add_option("--kind", a->kind, "the kind it opens on (default: cross-attention if any)")
      ->type_name("enc_self|dec_self|cross");
  cmd->add_option("--layer", a->layer, "the layer it opens on, from 1 (default: the last)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--head", a->head, "the head it opens on, from 1, or mean")
      ->capture_default_str();
  cmd->add_option("--step", a->step, "the decoding step it opens on, from 1 (default: the last)")
      ->check(CLI::PositiveNumber);
  cmd->add_option(
      "--title", a->title,
      "the page's title (default: Attention in MODEL: “SENTENCE”, the model named by its file "
      "and folder)");
  cmd->add_flag("--estimate", a->estimate, "print the page's size and write nothing");
  addPassArgs(cmd, a->pass);
  return {cmd, [a] { return runExportHtml(*a); }};
}

}  // namespace attnviz::cli

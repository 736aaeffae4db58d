// A lesson as one self-contained HTML page: the sentence, every attention block in a chosen scope
// (kinds, layers, heads) as heatmaps with hover, the mean of the heads, the overview grid, the
// masks, the decoding steps with their top-k next tokens and the explanations — the page's own
// JavaScript and CSS (resources/lesson/) inlined, no request to any network, no server.
// attnviz-cli export-html and the application's File › Export lesson as HTML… write it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "arch/config.h"
#include "model/masks.h"
#include "model/trace.h"

namespace attnviz {

// What the page holds. Empty lists mean "all of them".
struct LessonScope {
  std::vector<AttentionKind> kinds;  // the kinds of attention (of those the model has)
  std::vector<int> layers;           // layers counted from 0 (of each kind that has them)
  std::vector<int> heads;            // heads counted from 0
  int bits = 16;                     // bits per probability: 8 or 16
  int top_k = 5;                     // next tokens kept per decoding step
};

// What the page opens on: the teacher's view and selection.
struct LessonStart {
  std::string view = "attention";  // attention, overview, masks or decoding
  AttentionKind kind = AttentionKind::Cross;
  int layer = 0;
  int head = -1;  // -1: the mean of the heads
  int step = -1;  // the decoding step shown (a target position); -1: the last one
};

// The page's text that is not in the trace.
struct LessonText {
  std::string title;        // the page's title (lessonTitle)
  std::string model_name;   // "reorder", "model.pt"
  std::string source_text;  // what was typed (empty for a decoder-only model)
  std::string target_text;  // the target prefix or prompt typed
  MaskOptions masks;        // the masks as the trace was made
  int prefix_length = 1;    // decoder positions given (the start token and any typed prefix)
  const Vocabulary* output_vocab = nullptr;  // names the top-k next tokens (ids without it)
};

// The title a page gets unless the teacher gives one: the model, named by its file and folder
// ("out-shakespeare-char/ckpt.pt": many checkpoints share a file name; a bundled model by its
// name), and the sentence typed, cut after 60 characters — "Attention in
// out-shakespeare-char/ckpt.pt: “ROMEO:”". `model`: a bundled model's name or a path.
std::string lessonTitle(const std::string& model, const std::string& sentence);

// The page is refused above this size (browsers slow down well before a string of hundreds of MB).
constexpr uint64_t kMaxLessonBytes = 48ull << 20;

// The size of the page lessonHtml would write, in bytes, without computing its arrays (their sizes
// follow from the scope). Error(BadInput) for a scope that names a kind, layer or head the model
// lacks, or a bits value other than 8 or 16.
uint64_t estimateLessonBytes(const Trace& trace, const ModelConfig& config,
                             const LessonScope& scope, const LessonStart& start,
                             const LessonText& text);

// The whole page (batch item 0 of the trace). Error(BadInput) for a bad scope (as above) or a page
// larger than kMaxLessonBytes, naming its size and what to leave out.
std::string lessonHtml(const Trace& trace, const ModelConfig& config, const LessonScope& scope,
                       const LessonStart& start, const LessonText& text);

// lessonHtml written to `path` whole or not at all (base/atomic_file.h).
void writeLessonHtml(const std::string& path, const Trace& trace, const ModelConfig& config,
                     const LessonScope& scope, const LessonStart& start, const LessonText& text);

// The largest absolute error of a stored probability at `bits` bits: half a step of 1/(2^bits − 1).
double lessonProbabilityError(int bits);

// The page's parts as built into the program (resources/lesson/, embedded at build time).
const std::string& lessonTemplateHtml();
const std::string& lessonScript();
const std::string& lessonStyle();

}  // namespace attnviz

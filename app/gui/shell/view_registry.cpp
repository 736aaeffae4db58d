// The window's views, one line each (view_registry.h).
//
// Adding a view — its folder, one line here, its test:
//   1. Make its folder app/gui/views/NAME/ (NAME as in the table below) with NAME_view.h and
//      NAME_view.cpp: `class NameView : public View` with the constructor
//      `NameView(AppState* state, QWidget* parent = nullptr)`. refresh() draws it from
//      state_->snapshot() and state_->selection() (it is called when the view is visible and out
//      of date); explanation_->setHtml() says what it shows; exportWidget() picks what File ›
//      Export draws; `emit openView("attention")` sends the user to another view. It includes
//      views/view.h and what it needs from views/, session/, widgets/ and the core, by their paths
//      ("session/run_spec.h"), never another view's folder: what two views share moves down to
//      views/ or below (tools/check_layers.py, a test, fails otherwise). The build compiles every
//      .cpp under app/gui (app/gui/CMakeLists.txt): there is no list to add it to.
//   2. Add its line to kViews below, where its tab should be — name, title, one line of help,
//      make<NameView> — with its #include "views/NAME/NAME_view.h" above. The tab, the View
//      menu's entry, Ctrl+N for the first nine, the keyboard help, --view NAME, the saved view and
//      a screenshot per view (tests/test_gui.cpp) follow.
//   3. Test it: tests/test_gui.cpp already switches to every view by its key and menu and checks
//      that it explains itself; what it computes is checked in tests/test_teaching.cpp (or a suite
//      of its own: one attnviz_add_test line in tests/CMakeLists.txt). If it moves a view past
//      Ctrl+9, update the README's Keys table.
#include "shell/view_registry.h"

#include <QCoreApplication>

#include "views/architecture/architecture_view.h"
#include "views/atlas/atlas_view.h"
#include "views/attention/attention_view.h"
#include "views/cell/cell_view.h"
#include "views/compare/compare_view.h"
#include "views/decoding/decoding_view.h"
#include "views/heads/head_stats_view.h"
#include "views/masks/masks_view.h"
#include "views/overview/overview_view.h"
#include "views/positional/positional_view.h"
#include "views/search/search_view.h"
#include "views/train/train_view.h"
#include "views/why/why_view.h"

namespace attnviz::gui {

namespace {

template <class V>
View* make(AppState* state) {
  return new V(state);
}

// Translated in the context "attnviz::gui::View" (the views' own tr() context); written out in
// full, as lupdate does not look inside a macro of our own.

const std::vector<ViewSpec> kViews = {
    {"attention", QT_TRANSLATE_NOOP("attnviz::gui::View", "Attention"),
     QT_TRANSLATE_NOOP(
         "attnviz::gui::View",
         "One kind, layer and head (or the mean of the heads) as a heatmap: queries as rows, "
         "keys as columns"),
     make<AttentionView>},
    {"overview", QT_TRANSLATE_NOOP("attnviz::gui::View", "Overview"),
     QT_TRANSLATE_NOOP("attnviz::gui::View",
                       "Every layer × head of one kind as thumbnails; click one to open it"),
     make<OverviewView>},
    {"masks", QT_TRANSLATE_NOOP("attnviz::gui::View", "Masks"),
     QT_TRANSLATE_NOOP(
         "attnviz::gui::View",
         "The padding and look-ahead masks, scores → masked scores → softmax, switches that "
         "turn a mask off, a padded batch"),
     make<MasksView>},
    {"positional", QT_TRANSLATE_NOOP("attnviz::gui::View", "Positional encoding"),
     QT_TRANSLATE_NOOP(
         "attnviz::gui::View",
         "PE(pos, dim) curves, the position × dimension matrix, the similarity of positions"),
     make<PositionalView>},
    {"decoding", QT_TRANSLATE_NOOP("attnviz::gui::View", "Decoding"),
     QT_TRANSLATE_NOOP(
         "attnviz::gui::View",
         "The translation step by step: the top-k next tokens (pick one to branch) and each "
         "step's new attention rows"),
     make<DecodingView>},
    {"architecture", QT_TRANSLATE_NOOP("attnviz::gui::View", "Architecture"),
     QT_TRANSLATE_NOOP(
         "attnviz::gui::View",
         "The model drawn as the paper's figure with this run's shapes; click a block for its "
         "activations"),
     make<ArchitectureView>},
    {"cell", QT_TRANSLATE_NOOP("attnviz::gui::View", "Inside a cell"),
     QT_TRANSLATE_NOOP(
         "attnviz::gui::View",
         "One attention weight computed step by step: q · k, ÷ √d_k, the mask, the softmax "
         "row, the weighted values"),
     make<CellView>},
    {"heads", QT_TRANSLATE_NOOP("attnviz::gui::View", "Head statistics"),
     QT_TRANSLATE_NOOP("attnviz::gui::View",
                       "Every head's entropy and where its attention goes, sortable; badges on the "
                       "Overview"),
     make<HeadStatsView>},
    {"compare", QT_TRANSLATE_NOOP("attnviz::gui::View", "Before / after"),
     QT_TRANSLATE_NOOP(
         "attnviz::gui::View",
         "This run against a variation (a mask off, another sentence, heads switched off) "
         "and their difference"),
     make<CompareView>},
    {"why", QT_TRANSLATE_NOOP("attnviz::gui::View", "Why this token?"),
     QT_TRANSLATE_NOOP(
         "attnviz::gui::View",
         "Why the model chose a token: what every layer predicts (the logit lens) and what "
         "every head and block adds to its logit"),
     make<WhyView>},
    {"atlas", QT_TRANSLATE_NOOP("attnviz::gui::View", "Head atlas"),
     QT_TRANSLATE_NOOP(
         "attnviz::gui::View",
         "Every head over a whole corpus: a scatter of two statistics, a sortable table, "
         "its strongest sentences and its queries and keys projected"),
     make<AtlasView>},
    {"search", QT_TRANSLATE_NOOP("attnviz::gui::View", "Search"),
     QT_TRANSLATE_NOOP(
         "attnviz::gui::View",
         "Sampling and beam search beyond greedy decoding; load any hypothesis into every "
         "view"),
     make<SearchView>},
    {"train", QT_TRANSLATE_NOOP("attnviz::gui::View", "Train"),
     QT_TRANSLATE_NOOP("attnviz::gui::View",
                       "Train a Transformer on a task and watch its attention form"),
     make<TrainView>},
};

#undef VIEW_TEXT

}  // namespace

const std::vector<ViewSpec>& viewSpecs() {
  return kViews;
}

const ViewSpec* findViewSpec(const QString& name) {
  for (const ViewSpec& s : kViews)
    if (name == QLatin1String(s.name)) return &s;
  return nullptr;
}

QStringList viewNames() {
  QStringList names;
  for (const ViewSpec& s : kViews) names << QString::fromLatin1(s.name);
  return names;
}

std::vector<View*> makeViews(AppState* state) {
  std::vector<View*> views;
  for (const ViewSpec& s : kViews) {
    View* v = s.make(state);
    v->spec_ = &s;
    views.push_back(v);
  }
  return views;
}

}  // namespace attnviz::gui

// Qt Test suite of the teaching views (offscreen): the architecture drawn from the config with the
// run's shapes, inside one attention cell, head statistics, before / after, search, and what the
// views say of rotary positions and grouped-query attention. Every
// number a view shows is checked against the core (which test_teaching_core checks against
// PyTorch and hand-computed cases); each view is rendered to build/screenshots on every bundled
// model.
#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtCharts/QChart>
#include <QtCharts/QChartView>
#include <QtCharts/QLineSeries>
#include <QtTest/QtTest>
#include <cmath>
#include <memory>

#include "arch/bundled.h"
#include "arch/weights.h"
#include "compute/cpu_backend.h"
#include "gui_fixture.h"
#include "llama_shaped.h"
#include "model/decoding.h"
#include "model/head_stats.h"
#include "model/search.h"
#include "session/attention_data.h"
#include "session/item_models.h"
#include "shell/main_window.h"
#include "views/architecture/architecture_view.h"
#include "views/attention/attention_view.h"
#include "views/cell/cell_view.h"
#include "views/compare/compare_view.h"
#include "views/head_badges.h"
#include "views/head_stat_texts.h"
#include "views/heads/head_stats_view.h"
#include "views/overview/overview_view.h"
#include "views/positional/positional_view.h"
#include "views/search/search_view.h"
#include "views/thumbnails.h"
#include "widgets/fonts.h"
#include "widgets/heatmap.h"
#include "widgets/widgets.h"

using namespace attnviz;
using namespace attnviz::gui;
using namespace gui_fixture;

namespace {

QStringList bundledNames() {
  QStringList names;
  for (const auto& m : listBundledModels()) names << QString::fromStdString(m.name);
  return names;
}

// A window on `model`, its first run done, showing `view` (and the job that view starts when
// shown, if any, done too).
std::unique_ptr<MainWindow> window(const QString& model, const QString& view = {},
                                   const QString& src = {}) {
  auto w = openWindow(model, src, view);
  settle(*w);
  return w;
}

const Trace& traceOf(MainWindow& w) {
  return *w.engine()->snapshot()->trace;
}

bool close(double a, double b, double rel) {
  return std::abs(a - b) <= rel * std::max(1.0, std::abs(b));
}

// A window on the Llama-shaped test model (rotary positions in `layout`, 4 query heads over 2
// key/value heads, d_head 8, rope_theta 10000), a prompt run, showing `view`.
std::unique_ptr<MainWindow> llamaWindow(RopeLayout layout, const QString& view) {
  auto w = showWindow(false, {}, {}, view);
  if (!w->engine()->setModel(std::make_shared<Model>(llamaShaped(layout), makeCpuBackend(2)),
                             QStringLiteral("llama-shaped")))
    return nullptr;
  w->sourceEdit()->setText(QStringLiteral("the cat sat on the mat"));
  QTest::mouseClick(w->runButton(), Qt::LeftButton);
  settle(*w);
  return w;
}

// ⟨R(m)1, R(n)1⟩ / |1|² for the all-ones vector of d_head numbers, its pairs turned here in double
// (pair i by pos · θ^(−2i/d_head)) as `layout` pairs them.
double rotaryScoreOfOnes(int m, int n, int d, double theta, RopeLayout layout) {
  const std::vector<double> ones((size_t)d, 1.0);
  const std::vector<double> q = rotatedByDefinition(ones, m, theta, layout);
  const std::vector<double> k = rotatedByDefinition(ones, n, theta, layout);
  double dot = 0;
  for (int c = 0; c < d; ++c) dot += q[(size_t)c] * k[(size_t)c];
  return dot / d;
}

}  // namespace

class TeachingTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_teaching"));
    // What fits where depends on the fonts: the ones attnviz ships, whatever this machine has.
    QVERIFY(usePinnedFonts());
    if (bundledNames().isEmpty()) QSKIP("no bundled model found (resources/models)");
  }

  // ---- architecture ----------------------------------------------------------------------------

  void architectureFromConfig_data() {
    QTest::addColumn<QString>("path");
    for (const QString& n : bundledNames())
      QTest::newRow(n.toUtf8().constData())
          << QStringLiteral(ATTNVIZ_SOURCE_DIR "/resources/models/%1.safetensors").arg(n);
    for (const char* n : {"bert003", "classifier003", "gpt003", "encoder001", "torch_pre"})
      QTest::newRow(n) << dataModel(n);
  }

  // What is drawn follows the config: the stacks, the attention kinds, pre- or post-norm, the
  // final norms and the heads; every block explains itself.
  void architectureFromConfig() {
    QFETCH(QString, path);
    auto lm = loadModel(path.toStdString());
    const ModelConfig& c = lm->config;
    const ArchLayout L = layoutArchitecture(c, {}, 0, 0);
    QCOMPARE(L.find("enc.self") != nullptr, c.hasEncoder());
    QCOMPARE(L.find("dec.self") != nullptr, c.hasDecoder());
    QCOMPARE(L.find("dec.cross") != nullptr, c.hasCross());
    QCOMPARE(L.find("enc.final_norm") != nullptr, c.hasEncoder() && c.final_norm);
    QCOMPARE(L.find("dec.final_norm") != nullptr, c.hasDecoder() && c.final_norm);
    QCOMPARE(L.find("head.classifier") != nullptr, c.classHead() != ClassHead::None);
    QCOMPARE(L.find("head.linear") != nullptr, c.tokenHead() != TokenHead::None);
    QCOMPARE(int(L.frames.size()), int(c.hasEncoder()) + int(c.hasDecoder()));
    const QString p = c.hasEncoder() ? QStringLiteral("enc") : QStringLiteral("dec");
    const ArchBlock* attn = L.find(p + ".self");
    const ArchBlock* norm = L.find(p + ".norm_self");
    QVERIFY(attn && norm);
    if (c.norm == NormPlacement::Pre) {
      // Pre-norm: the norm below the attention (the figure reads upwards), then an Add.
      QCOMPARE(norm->type, ArchBlock::Type::Norm);
      QVERIFY(norm->rect.top() > attn->rect.top());
      QVERIFY(L.find(p + ".add_self") && L.find(p + ".add_self")->rect.top() < attn->rect.top());
    } else {
      QCOMPARE(norm->type, ArchBlock::Type::AddNorm);
      QVERIFY(norm->rect.top() < attn->rect.top());
      QVERIFY(!L.find(p + ".add_self"));
    }
    // One residual arrow per sublayer of the drawn layer(s).
    int residuals = 0;
    for (const auto& a : L.arrows) residuals += a.residual;
    const int sublayers = (c.hasEncoder() ? 2 : 0) + (c.hasDecoder() ? (c.hasCross() ? 3 : 2) : 0);
    QCOMPARE(residuals, sublayers);
    for (const auto& b : L.blocks) {
      if (b.type != ArchBlock::Type::Output) QVERIFY2(!b.tooltip.isEmpty(), qPrintable(b.id));
      QVERIFY2(L.size.width() >= b.rect.right() && L.size.height() >= b.rect.bottom(),
               qPrintable(b.id));
      for (const auto& o : L.blocks)
        QVERIFY2(&o == &b || !o.rect.intersects(b.rect), qPrintable(b.id + " overlaps " + o.id));
    }
  }

  // A block's text wider than its box is drawn smaller, not cut: a learned table's "+ Positional
  // encoding (learned table)" whole at the default font and at a quarter larger (presentation).
  void architectureLabelsFitTheirBlocks() {
    auto w = window(QStringLiteral(ATTNVIZ_TEST_DATA "/encoder001.safetensors"),
                    QStringLiteral("architecture"));
    auto* v = w->viewOf<ArchitectureView>();
    QVERIFY(v);
    v->refreshNow();
    ArchitectureDiagram* d = v->diagram();
    const ArchBlock* pos = nullptr;
    for (const ArchBlock& b : d->archLayout().blocks)
      if (b.label.contains(QStringLiteral("learned table"))) pos = &b;
    QVERIFY2(pos, "no block of the learned positions");
    const double base = d->font().pointSizeF();
    for (double scale : {1.0, 1.25}) {
      QFont f = d->font();
      f.setPointSizeF(base * scale);
      d->setFont(f);
      for (const ArchBlock& b : d->archLayout().blocks) {
        const ArchitectureDiagram::BlockTexts t = d->blockTexts(b);
        QVERIFY(t.label_font.pointSizeF() >= 0.75 * f.pointSizeF() - 1e-9);
        // Drawn at most a quarter smaller, and inside its box.
        QVERIFY2(QFontMetricsF(t.label_font).horizontalAdvance(t.label) <= b.rect.width() - 12,
                 qPrintable(b.label));
      }
      const ArchitectureDiagram::BlockTexts t = d->blockTexts(*pos);
      QCOMPARE(t.label, pos->label);                                         // whole, not elided
      if (scale > 1.0) QVERIFY(t.label_font.pointSizeF() < f.pointSizeF());  // smaller to fit
    }
  }

  // Shapes with this run's numbers; hover and click: attention opens the Attention view, the
  // embedding shows the stack's input (checked against the first layer's queries), the output
  // projection shows the logits.
  void architectureShapesAndClicks() {
    auto w = window(QStringLiteral("reorder"), QStringLiteral("architecture"));
    auto* v = w->viewOf<ArchitectureView>();
    QVERIFY(v);
    v->refreshNow();
    const Trace& t = traceOf(*w);
    const ModelConfig& c = w->engine()->model()->config();
    const ArchLayout& L = v->diagram()->archLayout();
    QStringList shapes;
    for (const auto& a : L.arrows) shapes << a.shape;
    const QString enc_stream = QStringLiteral("[1, %1, %2]").arg(t.src_len).arg(c.d_model);
    const QString dec_stream = QStringLiteral("[1, %1, %2]").arg(t.tgt_len).arg(c.d_model);
    const QString logits = QStringLiteral("[1, %1, %2]").arg(t.tgt_len).arg(c.tgt_vocab.size());
    QVERIFY2(shapes.contains(enc_stream), qPrintable(shapes.join(" | ")));
    QVERIFY(shapes.contains(dec_stream));
    QVERIFY(shapes.contains(logits));
    QVERIFY(shapes.contains(QStringLiteral("[1, %1]").arg(t.src_len)));
    QVERIFY(
        L.find("dec.cross")
            ->detail.contains(
                QStringLiteral("[1, %1, %2, %3]").arg(c.n_heads).arg(t.tgt_len).arg(t.src_len)));

    // Hover: the block under the mouse explains itself.
    const QRectF cross = v->diagram()->blockRect(QStringLiteral("dec.cross"));
    QVERIFY(!cross.isEmpty());
    QCOMPARE(v->diagram()->blockAt(cross.center())->id, QStringLiteral("dec.cross"));

    // ◀ ▶ choose the layer; clicking the attention block opens that layer in the Attention view.
    const QRectF next = v->diagram()->frameChooser(Side::Target, true);
    const int before = L.find("dec.cross")->layer;
    QTest::mouseClick(v->diagram(), Qt::LeftButton, {}, next.center().toPoint());
    const int after = v->diagram()->archLayout().find("dec.cross")->layer;
    QCOMPARE(after, before + 1 < c.n_decoder_layers ? before + 1 : before);
    const QRectF prev = v->diagram()->frameChooser(Side::Target, false);
    QTest::mouseClick(v->diagram(), Qt::LeftButton, {}, prev.center().toPoint());
    QCOMPARE(v->diagram()->archLayout().find("dec.cross")->layer, 0);
    QTest::mouseClick(v->diagram(), Qt::LeftButton, {},
                      v->diagram()->blockRect(QStringLiteral("enc.self")).center().toPoint());
    QCOMPARE(w->currentView()->name(), QStringLiteral("attention"));
    QCOMPARE(w->state()->selection().kind, AttentionKind::EncoderSelf);
    w->setCurrentView(QStringLiteral("architecture"));

    // The embedding: token rows + positions, which W_Q of layer 1 turns into the trace's queries
    // (as the model recorded them: the pass runs again with its activations kept).
    QTest::mouseClick(v->diagram(), Qt::LeftButton, {},
                      v->diagram()->blockRect(QStringLiteral("enc.embedding")).center().toPoint());
    QCOMPARE(v->shownBlock(), QStringLiteral("enc.embedding"));
    QVERIFY(v->detailsLabel()->text().contains(QStringLiteral("Recording")));
    QVERIFY(w->engine()->waitUntilIdle(60000));
    QCoreApplication::processEvents();
    const HeatmapData& out = v->outputHeatmap()->data();
    QCOMPARE(out.rows, t.src_len);
    QCOMPARE(out.cols, c.d_model);
    const AttentionBlock& e0 = *t.block(AttentionKind::EncoderSelf, 0);
    QCOMPARE(e0.q.size(), size_t(t.src_len) * c.n_heads * c.d_k);
    const LinearWeights& wq = w->engine()->model()->loaded().weights.encoder.layers[0].self_attn.q;
    double worst = 0;
    for (int i = 0; i < t.src_len; ++i)
      for (int h = 0; h < c.n_heads; ++h)
        for (int k = 0; k < c.d_k; ++k) {
          const int row = h * c.d_k + k;
          double q = wq.bias.empty() ? 0.0 : wq.bias.data[size_t(row)];
          for (int x = 0; x < c.d_model; ++x)
            q += double(wq.weight.data[size_t(row) * c.d_model + x]) * out.value(i, x);
          worst = std::max(worst, std::abs(q - e0.qRow(0, h, i)[k]) / std::max(1.0, std::abs(q)));
        }
    QVERIFY2(worst < 1e-4, qPrintable(QString::number(worst)));
    // The output projection: the trace's hidden states in, its logits out.
    v->activateBlock(QStringLiteral("head.linear"));
    const HeatmapData& lg = v->outputHeatmap()->data();
    QCOMPARE(lg.rows, t.tgt_len);
    QCOMPARE(lg.cols, int(t.logits.dense().dim(2)));
    for (int i = 0; i < lg.rows; ++i) QCOMPARE(lg.value(i, 3), t.logits.row(0, i)[3]);
    QVERIFY(v->detailsLabel()->text().contains(QStringLiteral("mean")));
    // A feed-forward block, from the same recorded pass: its output is fc2(act(fc1(input))),
    // recomputed here from the weights.
    v->activateBlock(QStringLiteral("enc.ffn"));
    QVERIFY2(v->detailsLabel()->text().contains(QStringLiteral("Input:")),
             qPrintable(v->detailsLabel()->text()));
    const HeatmapData& fin = v->inputHeatmap()->data();
    const HeatmapData& fout = v->outputHeatmap()->data();
    QCOMPARE(fin.rows, t.src_len);
    QCOMPARE(fin.cols, c.d_model);
    QCOMPARE(fout.cols, c.d_model);
    const FeedForwardWeights& ffn = w->engine()->model()->loaded().weights.encoder.layers[0].ffn;
    auto act = [&](double x) {
      switch (c.activation) {
        case Activation::Relu:
          return std::max(0.0, x);
        case Activation::Gelu:
          return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
        case Activation::GeluTanh:
          return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        case Activation::Silu:
          return x / (1 + std::exp(-x));
        case Activation::Tanh:
          return std::tanh(x);
      }
      return x;
    };
    double worst_ffn = 0;
    for (int i = 0; i < fin.rows; ++i) {
      std::vector<double> hid(size_t(c.d_ff));
      for (int k = 0; k < c.d_ff; ++k) {
        double z = ffn.fc1.bias.empty() ? 0.0 : ffn.fc1.bias.data[size_t(k)];
        for (int x = 0; x < c.d_model; ++x)
          z += double(ffn.fc1.weight.data[size_t(k) * c.d_model + x]) * fin.value(i, x);
        hid[size_t(k)] = act(z);
      }
      for (int o = 0; o < c.d_model; ++o) {
        double y = ffn.fc2.bias.empty() ? 0.0 : ffn.fc2.bias.data[size_t(o)];
        for (int k = 0; k < c.d_ff; ++k)
          y += double(ffn.fc2.weight.data[size_t(o) * c.d_ff + k]) * hid[size_t(k)];
        worst_ffn =
            std::max(worst_ffn, std::abs(y - fout.value(i, o)) / std::max(1.0, std::abs(y)));
      }
    }
    QVERIFY2(worst_ffn < 1e-4, qPrintable(QString::number(worst_ffn)));
  }

  // ---- inside a cell -------------------------------------------------------------------------

  void cellBreakdownSumsToStoredScore_data() {
    QTest::addColumn<QString>("model");
    for (const QString& n : bundledNames()) QTest::newRow(n.toUtf8().constData()) << n;
    QTest::newRow("gpt003") << dataModel("gpt003");
    QTest::newRow("bert003") << dataModel("bert003");
    // T5: no 1/√d_k, and each head's relative position bias in self-attention.
    QTest::newRow("t5") << QStringLiteral(ATTNVIZ_TEST_DATA "/hf/t5");
  }

  void cellBreakdownSumsToStoredScore() {
    QFETCH(QString, model);
    // The test models have no examples: a sentence of their words.
    QString src;
    if (model.endsWith(QLatin1String("gpt003.safetensors"))) src = QStringLiteral("the cat sat on");
    if (model.endsWith(QLatin1String("bert003.safetensors")))
      src = QStringLiteral("[CLS] hello how are you [SEP] i am fine [SEP]");
    if (model.endsWith(QLatin1String("/hf/t5")))
      src = QStringLiteral("we walk to the old station every morning .");
    auto w = window(model, QStringLiteral("cell"), src);
    QVERIFY2(w->engine()->snapshot() && w->engine()->snapshot()->trace,
             qPrintable(w->messageBar()->text()));
    auto* v = w->viewOf<CellView>();
    const Trace& t = traceOf(*w);
    const float fill = w->engine()->model()->config().mask_fill;
    int checked = 0, masked = 0;
    for (const AttentionBlock& a : t.blocks) {
      for (int h = 0; h < a.heads; h += std::max(1, a.heads - 1)) {
        AttentionSelection s{a.kind, a.layer, h, 0};
        w->state()->setSelection(s);
        for (int i = 0; i < a.q_len; i += std::max(1, a.q_len / 3))
          for (int j = 0; j < a.k_len; ++j) {
            v->selectCell(i, j);
            const CellBreakdown* c = v->breakdownWidget()->breakdown();
            QVERIFY(c);
            QCOMPARE(c->i, i);
            QCOMPARE(c->j, j);
            double sum = 0;
            for (size_t x = 0; x < c->product.size(); ++x) {
              QCOMPARE(c->product[x], c->q[x] * c->k[x]);
              sum += c->product[x];
            }
            QVERIFY(close(sum, c->dot, 1e-5));
            // The breakdown sums to the score the trace gives …
            // q·k/√d_k, or T5's q·k + the bias of the cell's bucket in self-attention.
            const bool t5 = model.endsWith(QLatin1String("/hf/t5"));
            QCOMPARE(c->has_bias, t5 && a.kind != AttentionKind::Cross);
            const double expected = t5 ? c->dot + c->bias : c->dot / std::sqrt(double(a.d_k));
            QVERIFY(close(c->score, expected, 1e-6));
            QVERIFY2(close(c->score, a.score(0, h, i, j), 1e-4),
                     qPrintable(QStringLiteral("%1 layer %2 head %3 (%4, %5): %6 vs %7")
                                    .arg(attentionKindName(a.kind))
                                    .arg(a.layer)
                                    .arg(h)
                                    .arg(i)
                                    .arg(j)
                                    .arg(c->score)
                                    .arg(a.score(0, h, i, j))));
            // … and its softmax to the stored probability.
            QVERIFY(std::abs(c->prob - a.prob(0, h, i, j)) < 1e-5);
            QCOMPARE(c->masked, a.masked(0, i, j));
            if (c->masked) {
              ++masked;
              QCOMPARE(c->prob, 0.0);
            }
            ++checked;
          }
      }
    }
    QVERIFY(checked > 50);
    if (t.has(AttentionKind::DecoderSelf)) QVERIFY(masked > 0);  // the look-ahead mask's cells
    (void)fill;
    // A click on the heatmap picks the cell.
    w->state()->setSelection({t.blocks.back().kind, t.blocks.back().layer, 0, 0});
    v->refreshNow();
    const QRectF r = v->heatmap()->cellRect(0, 1);
    QTest::mouseClick(v->heatmap(), Qt::LeftButton, {}, r.center().toPoint());
    QCOMPARE(v->cellRow(), 0);
    QCOMPARE(v->cellColumn(), 1);
    QVERIFY(v->breakdownWidget()->barRect(1).height() >= 1);
  }

  // ---- head statistics -----------------------------------------------------------------------

  // A step forward or back of a decoding session recomputes only the rows it changed: the head
  // statistics and the Overview's thumbnails then equal the ones computed from scratch.
  void statisticsFollowTheSteps() {
    auto w = window(QStringLiteral("reverse"), QStringLiteral("overview"),
                    QStringLiteral("a 3 b 7 x 5 q 2"));
    Engine* e = w->engine();
    const ModelConfig& config = e->model()->config();
    auto check = [&](const char* what) {
      QVERIFY2(idle(*w), what);
      auto snap = e->snapshot();
      const Trace& t = *snap->trace;
      for (std::optional<AttentionKind> kind :
           {std::optional<AttentionKind>{}, std::optional(AttentionKind::Cross)}) {
        const auto& got = snapshotHeadStats(*snap, config, 0, kind);
        const auto want = headStatistics(t, config, 0, kind);
        QCOMPARE(got.size(), want.size());
        for (size_t k = 0; k < got.size(); ++k) {
          const HeadStats &g = got[k], &x = want[k];
          QCOMPARE(g.rows, x.rows);
          for (auto [a, b] : {std::pair{g.entropy, x.entropy},
                              {g.entropy_norm, x.entropy_norm},
                              {g.diagonal, x.diagonal},
                              {g.previous, x.previous},
                              {g.first, x.first},
                              {g.bos, x.bos},
                              {g.eos, x.eos},
                              {g.padding, x.padding},
                              {g.distance, x.distance},
                              {g.monotonicity, x.monotonicity}})
            QVERIFY2(a == b || (std::isnan(a) && std::isnan(b)), what);
        }
      }
      for (AttentionKind kind : {AttentionKind::Cross, AttentionKind::DecoderSelf}) {
        AttentionSelection s = w->state()->selection();
        s.kind = kind;
        w->state()->setSelection(s);
        w->overviewView()->refreshNow();
        const auto& thumbs = w->overviewView()->grid()->thumbnails();
        QCOMPARE(int(thumbs.size()), t.layers(kind) * (t.heads() + 1));
        for (int l = 0; l < t.layers(kind); ++l)
          for (int h = -1; h < t.heads(); ++h) {
            const AttentionSelection one{kind, l, h, 0};
            QVERIFY2(thumbs[size_t(l) * (t.heads() + 1) + size_t(h + 1)] ==
                         attentionThumbnail(t, one, w->state()->colormap(), 160),
                     what);
          }
      }
    };
    check("after the run");
    const int T = traceOf(*w).tgt_len;
    QVERIFY(T >= 4);
    QVERIFY(e->stepBack());
    check("a step back");
    QVERIFY(idle(*w));
    QVERIFY(e->stepBack());
    check("two steps back");
    QVERIFY(e->stepForward());
    check("a step forward");
    // Another token at the last position: its row changes, the rows before it stay.
    const int other = e->snapshot()->steps.back().topk.back().first;
    QVERIFY(e->choose(traceOf(*w).tgt_len - 2, other, false));
    check("another token chosen");
    QVERIFY(e->reset());
    check("reset");
  }

  void headStatisticsTable() {
    auto w = window(QStringLiteral("reverse"), QStringLiteral("heads"),
                    QStringLiteral("a 3 b 7 x 5 q 2"));
    auto* v = w->viewOf<HeadStatsView>();
    QAbstractItemModelTester tester(v->model(),
                                    QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester proxy_tester(v->proxy(),
                                          QAbstractItemModelTester::FailureReportingMode::QtTest);
    v->refreshNow();
    const Trace& t = traceOf(*w);
    const auto want = headStatistics(t, w->engine()->model()->config(), 0);
    HeadStatsModel* m = v->model();
    QCOMPARE(m->rowCount(), int(want.size()));
    QCOMPARE(m->rowCount(), int(t.blocks.size()) * t.heads());
    for (int r = 0; r < m->rowCount(); ++r) {
      const HeadStats& s = m->stats()[size_t(r)];
      QCOMPARE(s.kind, want[size_t(r)].kind);
      QCOMPARE(m->index(r, HeadStatsModel::column(HeadStat::Entropy))
                   .data(HeadStatsModel::SortRole)
                   .toDouble(),
               want[size_t(r)].entropy);
      const double mono = m->index(r, HeadStatsModel::column(HeadStat::Monotonicity))
                              .data(HeadStatsModel::SortRole)
                              .toDouble();
      QVERIFY(std::isnan(mono) == std::isnan(want[size_t(r)].monotonicity));
      QCOMPARE(m->index(r, HeadStatsModel::Pattern).data().toString(), headBadge(want[size_t(r)]));
    }
    // The statistics' headers and tooltips come from the shared table, in kHeadStats's order.
    QCOMPARE(m->columnCount(), HeadStatsModel::FirstStat + kHeadStatCount + 1);
    for (HeadStat stat : kHeadStats) {
      const int c = HeadStatsModel::column(stat);
      QCOMPARE(m->headerData(c, Qt::Horizontal).toString(), headStatText(stat).column);
      QCOMPARE(m->headerData(c, Qt::Horizontal, Qt::ToolTipRole).toString(),
               headStatText(stat).explanation);
    }
    QCOMPARE(m->headerData(HeadStatsModel::column(HeadStat::Previous), Qt::Horizontal).toString(),
             QStringLiteral("Previous"));
    QCOMPARE(m->headerData(HeadStatsModel::Pattern, Qt::Horizontal).toString(),
             QStringLiteral("Pattern"));
    QCOMPARE(m->headerData(HeadStatsModel::Likeness, Qt::Horizontal).toString(),
             QStringLiteral("vs chosen"));
    // The reversal model has a head that reads the source backwards.
    bool reversed = false;
    for (const auto& s : want) reversed = reversed || headBadge(s) == QStringLiteral("reversed");
    QVERIFY(reversed);
    // Sorting by a column orders the numbers, "does not apply" last.
    v->table()->sortByColumn(HeadStatsModel::column(HeadStat::Diagonal), Qt::AscendingOrder);
    HeadStatsProxy* p = v->proxy();
    double last = -1;
    bool nan_seen = false;
    for (int r = 0; r < p->rowCount(); ++r) {
      const double x = p->index(r, HeadStatsModel::column(HeadStat::Diagonal))
                           .data(HeadStatsModel::SortRole)
                           .toDouble();
      if (std::isnan(x)) {
        nan_seen = true;
        continue;
      }
      QVERIFY(!nan_seen && x >= last);
      last = x;
    }
    // Find heads like this one: the chosen head first, at distance 0.
    w->state()->setSelection({AttentionKind::Cross, 0, 1, 0});
    v->findLikeSelected();
    const QModelIndex top = p->mapToSource(p->index(0, 0));
    const HeadStats& first = m->stats()[size_t(top.row())];
    QCOMPARE(first.kind, AttentionKind::Cross);
    QCOMPARE(first.head, 1);
    QCOMPARE(m->likeness(top.row()), 0.0);
    QVERIFY(m->likeness(p->mapToSource(p->index(1, 0)).row()) >= 0);
    // Selecting a row selects that head everywhere.
    v->table()->selectRow(3);
    const HeadStats& third = m->stats()[size_t(p->mapToSource(p->index(3, 0)).row())];
    QCOMPARE(w->state()->selection().layer, third.layer);
    QCOMPARE(w->state()->selection().head, third.head);
    // CSV: one line per head after the header, as the core writes it.
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("heads.csv"));
    QVERIFY(v->exportCsv(file));
    QFile f(file);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray csv = f.readAll();
    QCOMPARE(csv, QByteArray::fromStdString(headStatsCsv(want)));
    QCOMPARE(csv.count("\r\n"), int(want.size()) + 1);
    // Badges on the Overview's thumbnails.
    w->state()->setKind(AttentionKind::Cross);
    w->setCurrentView(QStringLiteral("overview"));
    auto* overlay = w->overviewView()->grid()->findChild<HeadBadgeOverlay*>();
    QVERIFY(overlay);
    int badges = 0;
    for (const auto& s : want)
      if (s.kind == AttentionKind::Cross) {
        QCOMPARE(overlay->badge(s.layer, s.head), headBadge(s));
        badges += !headBadge(s).isEmpty();
      }
    QVERIFY(badges > 0);
    const QImage with = w->overviewView()->grid()->grab().toImage();
    overlay->hide();
    const QImage without = w->overviewView()->grid()->grab().toImage();
    overlay->show();
    QVERIFY(with != without);  // the badges are drawn
  }

  // ---- before / after ------------------------------------------------------------------------

  // The look-ahead mask off in B: the leak in one picture; B − A is B's minus A's probabilities.
  void compareMaskLeak() {
    auto w = window(QStringLiteral("reorder"), QStringLiteral("compare"));
    auto* v = w->viewOf<CompareView>();
    QVERIFY(settle(*w));
    w->state()->setSelection({AttentionKind::DecoderSelf, 0, 0, 0});
    v->lookAheadMask()->setChecked(false);
    QVERIFY(v->compare());
    QVERIFY(settle(*w));
    const Trace& A = *v->runA().trace;
    const Trace& B = *v->runB().trace;
    const AttentionBlock& a = *A.block(AttentionKind::DecoderSelf, 0);
    const AttentionBlock& b = *B.block(AttentionKind::DecoderSelf, 0);
    double future_a = 0, future_b = 0;
    for (int i = 0; i < a.q_len; ++i)
      for (int j = i + 1; j < a.k_len; ++j) {
        future_a += a.prob(0, 0, i, j);
        future_b += b.prob(0, 0, i, j);
      }
    QCOMPARE(future_a, 0.0);
    QVERIFY(future_b > 0.1);
    // A is the current run, passed again whole: the decoding session computed its rows step by
    // step, so the sums run in another order (2e-6 apart on an AMD EPYC, OpenBLAS Zen).
    const Trace& now = traceOf(*w);
    for (int i = 0; i < a.q_len; ++i)
      QVERIFY(std::abs(a.prob(0, 0, i, 0) -
                       now.block(AttentionKind::DecoderSelf, 0)->prob(0, 0, i, 0)) < 1e-5);
    const HeatmapData& d = v->heatmapDiff()->data();
    QCOMPARE(d.rows, a.q_len);
    // Within a float's rounding of the probabilities (a whole tile and a single cell sum q·k in
    // different orders): a difference of two near-equal probabilities may differ in its fifth
    // significant digit.
    for (int i = 0; i < d.rows; ++i)
      for (int j = 0; j < d.cols; ++j)
        QVERIFY(std::abs(d.value(i, j) - (b.prob(0, 0, i, j) - a.prob(0, 0, i, j))) <= 1e-6f);
    QVERIFY(d.vmin < 0 || d.vmax > 0);
    QVERIFY(!v->outputLabel()->text().isEmpty());
    // Rollout: A's and B's rollouts as the core computes them.
    v->valuesCombo()->setCurrentIndex(1);
    const auto want = attentionRollout(A, AttentionKind::DecoderSelf, 0, 0);
    const HeatmapData& ra = v->heatmapA()->data();
    for (int i = 0; i < ra.rows; ++i)
      for (int j = 0; j < ra.cols; ++j) QCOMPARE(ra.value(i, j), want[size_t(i) * ra.cols + j]);
    v->valuesCombo()->setCurrentIndex(0);
  }

  // A switched-off head in B: the same logits as the core's forward pass with that head off
  // (which test_teaching_core compares with PyTorch); earlier layers do not move, later ones do.
  void compareSwitchedOffHead() {
    auto w = window(QStringLiteral("reorder"), QStringLiteral("compare"));
    auto* v = w->viewOf<CompareView>();
    QVERIFY(settle(*w));
    w->state()->setSelection({AttentionKind::EncoderSelf, 0, 2, 0});
    HeadIntervention off{AttentionKind::EncoderSelf, 0, 2, true, 1.0f};
    v->addIntervention(off);
    QVERIFY(v->compare());
    QVERIFY(settle(*w));
    const Trace& A = *v->runA().trace;
    const Trace& B = *v->runB().trace;
    Inputs in;
    in.src = A.src_ids;
    in.tgt = A.tgt_ids;
    ForwardOptions o;
    o.interventions = {off};
    const Trace want = w->engine()->model()->forward(in, o);
    QCOMPARE(B.logits.dense().data.size(), want.logits.dense().data.size());
    for (size_t k = 0; k < want.logits.dense().data.size(); ++k)
      QCOMPARE(B.logits.dense().data[k], want.logits.dense().data[k]);
    double moved = 0;
    for (size_t k = 0; k < A.logits.dense().data.size(); ++k)
      moved =
          std::max(moved, double(std::abs(A.logits.dense().data[k] - B.logits.dense().data[k])));
    QVERIFY(moved > 0.1);
    const auto change = changePerHead(A, B, AttentionKind::EncoderSelf, 0);
    const int H = A.heads();
    for (int h = 0; h < H; ++h) QCOMPARE(change[size_t(h)], 0.0f);  // layer 1: before the change
    double later = 0;
    for (int h = 0; h < H; ++h) later += change[size_t(H + h)];
    QVERIFY(later > 0);  // layer 2 sees layer 1's changed output
    QCOMPARE(v->changeGrid()->data().rows, 2);
    // Another source sentence (one word changed): its labels say so.
    v->clearInterventions();
    QString src = v->sourceEdit()->text();
    const QString word = src.section(' ', 2, 2);
    v->sourceEdit()->setText(src.replace(' ' + word + ' ', QStringLiteral(" big ")));
    w->state()->setSelection({AttentionKind::EncoderSelf, 0, -1, 0});
    QVERIFY(v->compare());
    QVERIFY(settle(*w));
    QVERIFY2(v->heatmapDiff()->data().col_labels.join(' ').contains(QStringLiteral("→big")) ||
                 word == QStringLiteral("big"),
             qPrintable(v->heatmapDiff()->data().col_labels.join(' ')));
  }

  // ---- search --------------------------------------------------------------------------------

  void searchBeamTreeAndLoad() {
    auto w = window(QStringLiteral("reorder"), QStringLiteral("search"));
    auto* v = w->viewOf<SearchView>();
    QVERIFY(settle(*w));
    v->methodCombo()->setCurrentIndex(int(SearchView::Method::Beam));
    v->beamWidth()->setValue(3);
    v->lengthPenalty()->setValue(0.0);
    QVERIFY(v->search());
    QVERIFY(settle(*w));
    const BeamResult* r = v->tree()->result();
    QVERIFY(r);
    const Model& m = *w->engine()->model();
    const auto snap = w->engine()->snapshot();
    BeamOptions o;
    o.width = 3;
    o.pruned_shown = 2;
    const BeamResult want = beamSearch(m, snap->src_ids, {m.config().bos_id}, o);
    QCOMPARE(r->final.size(), want.final.size());
    for (size_t k = 0; k < want.final.size(); ++k) {
      QCOMPARE(r->path(r->final[k]), want.path(want.final[k]));
      QCOMPARE(r->nodes[size_t(r->final[k])].score, want.nodes[size_t(want.final[k])].score);
    }
    QCOMPARE(r->path(r->best()), greedyDecode(m, snap->src_ids));
    // Every node is drawn, none on another.
    for (size_t k = 0; k < r->nodes.size(); ++k) {
      const QRectF a = v->tree()->nodeRect(int(k));
      QVERIFY(!a.isEmpty());
      for (size_t j = 0; j < k; ++j) QVERIFY(!a.intersects(v->tree()->nodeRect(int(j))));
    }
    // Pick the second-best hypothesis and load it into every view.
    const int second = r->final.size() > 1 ? r->final[1] : r->final[0];
    QTest::mouseClick(v->tree(), Qt::LeftButton, {},
                      v->tree()->nodeRect(second).center().toPoint());
    QCOMPARE(v->tree()->selected(), second);
    QVERIFY(v->loadSelected());
    QVERIFY(settle(*w));
    const std::vector<int> path = r->path(second);
    std::vector<int> fed{m.config().bos_id};
    fed.insert(fed.end(), path.begin(), path.end() - 1);
    QCOMPARE(traceOf(*w).tgt_ids[0], fed);
    QCOMPARE(w->engine()->snapshot()->steps.back().chosen_id, path.back());
  }

  void samplingIsReproducible() {
    auto w = window(QStringLiteral("reorder"), QStringLiteral("search"));
    auto* v = w->viewOf<SearchView>();
    QVERIFY(settle(*w));
    v->methodCombo()->setCurrentIndex(int(SearchView::Method::Sampling));
    v->temperature()->setValue(2.5);
    v->topK()->setValue(20);
    v->topP()->setValue(0.95);
    v->seed()->setValue(7);
    v->samples()->setValue(3);
    QVERIFY(v->search());
    QVERIFY(settle(*w));
    const auto first = v->sampleResults();
    QCOMPARE(int(first.size()), 3);
    QCOMPARE(v->sampleTable()->rowCount(), 3);
    const Model& m = *w->engine()->model();
    for (int k = 0; k < 3; ++k) {
      SamplingOptions o;
      o.temperature = 2.5f;
      o.top_k = 20;
      o.top_p = 0.95f;
      o.seed = uint64_t(7 + k);
      QCOMPARE(first[size_t(k)].ids, sampleDecode(m, w->engine()->snapshot()->src_ids, {}, o).ids);
    }
    QVERIFY(v->search());
    QVERIFY(settle(*w));
    for (int k = 0; k < 3; ++k) QCOMPARE(v->sampleResults()[size_t(k)].ids, first[size_t(k)].ids);
  }

  // ---- rotary positions and grouped-query attention --------------------------------------------

  // The words for which key/value head a query head reads, and where the views say them.
  void groupedQueryAttentionNamed() {
    ModelConfig c;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    QCOMPARE(kvHeadText(c, 0),
             QStringLiteral("query head 1 reads key/value head 1 of 2 — 2 query heads share it"));
    QCOMPARE(kvHeadText(c, 2),
             QStringLiteral("query head 3 reads key/value head 2 of 2 — 2 query heads share it"));
    QCOMPARE(kvHeadShort(c, 1), QStringLiteral("reads K/V head 1 of 2"));
    QCOMPARE(kvHeadShort(c, 3), QStringLiteral("reads K/V head 2 of 2"));
    QCOMPARE(kvHeadText(c, -1), QString());  // the mean of the heads
    QCOMPARE(kvGroupsText(c),
             QStringLiteral("query heads 1–2 read key/value head 1, 3–4 key/value head 2"));
    c.n_heads = 32;
    c.n_kv_heads = 8;  // Llama 3 8B: the first two groups, then "and so on"
    QCOMPARE(kvGroupsText(c), QStringLiteral("query heads 1–4 read key/value head 1, 5–8 key/value "
                                             "head 2, and so on"));
    QCOMPARE(kvHeadText(c, 13),
             QStringLiteral("query head 14 reads key/value head 4 of 8 — 4 query heads share it"));
    c.n_heads = 4;
    c.n_kv_heads = 1;
    QCOMPARE(
        kvHeadText(c, 3),
        QStringLiteral("query head 4 reads the one key/value head — all 4 query heads share it"));
    c.n_kv_heads = 0;  // multi-head attention: nothing to say
    QCOMPARE(kvHeadText(c, 3), QString());
    QCOMPARE(kvHeadsSummary(c), QString());

    auto w = llamaWindow(RopeLayout::Interleaved, QStringLiteral("attention"));
    QVERIFY(w);
    const ModelConfig& m = w->engine()->model()->config();
    QCOMPARE(m.n_heads, 4);
    QCOMPARE(m.kvHeads(), 2);
    const int T = traceOf(*w).tgt_len;
    w->state()->setSelection({AttentionKind::DecoderSelf, 1, 2, 0});
    QCoreApplication::processEvents();
    AttentionView* av = w->attentionView();
    av->refreshNow();
    const QString want = kvHeadText(m, 2);
    QVERIFY2(av->captionLabel()->text().contains(QStringLiteral("head 3 (reads K/V head 2 of 2)")),
             qPrintable(av->captionLabel()->text()));
    QVERIFY(av->captionLabel()->toolTip().contains(want));
    QVERIFY2(av->explanation()->html().contains(QStringLiteral("K [1, 2, %1, 8]").arg(T)),
             qPrintable(av->explanation()->html()));
    QCOMPARE(w->headCombo()->itemData(3, Qt::ToolTipRole).toString(), want);
    QVERIFY(w->headCombo()->toolTip().contains(want));
    const QModelIndex item = w->structureModel()->find(AttentionKind::DecoderSelf, 1, 2);
    QVERIFY(item.isValid());
    QVERIFY(item.data(Qt::ToolTipRole).toString().contains(want));

    // The architecture: the block says grouped-query attention, K and V with 2 heads.
    w->setCurrentView(QStringLiteral("architecture"));
    auto* arch = w->viewOf<ArchitectureView>();
    arch->refreshNow();
    const ArchBlock* self = arch->diagram()->archLayout().find(QStringLiteral("dec.self"));
    QVERIFY(self);
    QCOMPARE(self->label, QStringLiteral("Masked grouped-query attention"));
    QVERIFY2(self->detail.startsWith(QStringLiteral("4 Q heads, 2 K/V")), qPrintable(self->detail));
    QVERIFY2(self->tooltip.contains(QStringLiteral("K [1, 2, %1, 8]").arg(T)) &&
                 self->tooltip.contains(QStringLiteral("Q [1, 4, %1, 8]").arg(T)) &&
                 self->tooltip.contains(QStringLiteral("rotated")),
             qPrintable(self->tooltip));
    const ArchBlock* pos = arch->diagram()->archLayout().find(QStringLiteral("dec.positional"));
    QVERIFY(pos && pos->label.startsWith(QStringLiteral("Rotary positions")));

    // Inside a cell: the heatmap's title names the key/value head.
    w->setCurrentView(QStringLiteral("cell"));
    w->viewOf<CellView>()->refreshNow();
    QVERIFY2(w->viewOf<CellView>()->heatmap()->data().title.contains(
                 QStringLiteral("(reads K/V head 2 of 2)")),
             qPrintable(w->viewOf<CellView>()->heatmap()->data().title));
  }

  void rotaryPositionalView_data() { addRopeLayoutRows(); }

  // Each pair's speed against the hand-computed 10000^(−2i/8) = 10^(−i); the score heatmap against
  // the all-ones vector turned here, the same along every diagonal; the offset curve its first
  // column. Saves the Positional and Attention views to build/screenshots.
  void rotaryPositionalView() {
    QFETCH(int, layout);
    const auto rope = (RopeLayout)layout;
    auto w = llamaWindow(rope, QStringLiteral("positional"));
    QVERIFY(w);
    PositionalView* v = w->positionalView();
    QTRY_VERIFY(!v->computing());
    QVERIFY(!v->matrixMap()->isVisible());  // rotary positions add no table
    QVERIFY(!v->dimsEdit()->isVisible());
    QVERIFY(v->offsetChartView()->isVisible());

    const auto speeds = v->chartView()->chart()->series();
    QCOMPARE(int(speeds.size()), 1);
    const QList<QPointF> points = static_cast<QLineSeries*>(speeds[0])->points();
    const double by_hand[] = {1.0, 0.1, 0.01, 0.001};
    QCOMPARE(int(points.size()), 4);
    for (int i = 0; i < 4; ++i) {
      QCOMPARE(points[i].x(), double(i));
      QVERIFY2(std::abs(points[i].y() - by_hand[i]) <= 1e-6 * by_hand[i],
               qPrintable(QString("pair %1: %2").arg(i).arg(points[i].y())));
    }

    const HeatmapData& s = v->similarityMap()->data();
    const int n = v->positionsSpin()->value();
    QCOMPARE(s.rows, n);
    QCOMPARE(s.cols, n);
    for (int m = 0; m < n; ++m)
      for (int k = 0; k < n; ++k) {
        const double want = rotaryScoreOfOnes(m, k, 8, 10000.0, rope);
        QVERIFY2(std::abs(s.value(m, k) - want) <= 1e-5,
                 qPrintable(
                     QString("(%1, %2): %3, here %4").arg(m).arg(k).arg(s.value(m, k)).arg(want)));
        if (m + 5 < n && k + 5 < n)
          QVERIFY(std::abs(s.value(m, k) - s.value(m + 5, k + 5)) <= 1e-5);
      }
    const QList<QPointF> offsets =
        static_cast<QLineSeries*>(v->offsetChartView()->chart()->series().at(0))->points();
    QCOMPARE(int(offsets.size()), n);
    for (int m = 0; m < n; ++m)
      QVERIFY(std::abs(offsets[m].y() - rotaryScoreOfOnes(m, 0, 8, 10000.0, rope)) <= 1e-5);
    const QString html = v->explanation()->html();
    QVERIFY(html.contains(QStringLiteral("rope_theta")));
    QVERIFY(html.contains(rope == RopeLayout::Interleaved ? QStringLiteral("(2i, 2i + 1)")
                                                          : QStringLiteral("(i, i + 4)")));

    const QString out = QStringLiteral(ATTNVIZ_SCREENSHOT_DIR);
    QVERIFY(QDir().mkpath(out));
    const QString tag =
        rope == RopeLayout::Interleaved ? QStringLiteral("interleaved") : QStringLiteral("halves");
    QVERIFY(
        w->grab().save(QDir(out).filePath(QStringLiteral("positional-rotary-%1.png").arg(tag))));
    w->state()->setSelection({AttentionKind::DecoderSelf, 1, 2, 0});
    w->setCurrentView(QStringLiteral("attention"));
    QTest::qWait(200);  // the explanation fits its height to the new text
    QVERIFY(w->grab().save(QDir(out).filePath(QStringLiteral("attention-gqa-%1.png").arg(tag))));
  }

  // ---- screenshots ---------------------------------------------------------------------------

  void screenshots_data() {
    QTest::addColumn<QString>("model");
    for (const QString& n : bundledNames()) QTest::newRow(n.toUtf8().constData()) << n;
  }

  void screenshots() {
    QFETCH(QString, model);
    const QString out = QStringLiteral(ATTNVIZ_SCREENSHOT_DIR);
    QVERIFY(QDir().mkpath(out));
    auto w = window(model);
    const Trace& t = traceOf(*w);
    auto save = [&](const QString& view) {
      QTest::qWait(30);
      const QString file = QDir(out).filePath(QStringLiteral("%1-%2.png").arg(view, model));
      QVERIFY2(w->grab().save(file), qPrintable(file));
    };
    // Architecture, then with the embedding's and a feed-forward block's activations open.
    w->setCurrentView(QStringLiteral("architecture"));
    QVERIFY(settle(*w));
    save(QStringLiteral("architecture"));
    w->viewOf<ArchitectureView>()->activateBlock(QStringLiteral("enc.embedding"));
    save(QStringLiteral("architecture-activations"));
    w->viewOf<ArchitectureView>()->activateBlock(QStringLiteral("enc.ffn"));
    QVERIFY(settle(*w));
    save(QStringLiteral("architecture-ffn"));
    // Inside a cell: a cross-attention cell of the last layer.
    w->state()->setSelection({AttentionKind::Cross, t.layers(AttentionKind::Cross) - 1, 0, 0});
    w->setCurrentView(QStringLiteral("cell"));
    save(QStringLiteral("cell"));
    w->setCurrentView(QStringLiteral("heads"));
    save(QStringLiteral("heads"));
    w->setCurrentView(QStringLiteral("overview"));
    save(QStringLiteral("overview-badges"));
    // Before / after: the look-ahead mask off, on the decoder's first layer.
    w->state()->setSelection({AttentionKind::DecoderSelf, 0, -1, 0});
    w->setCurrentView(QStringLiteral("compare"));
    QVERIFY(settle(*w));
    auto* cv = w->viewOf<CompareView>();
    cv->lookAheadMask()->setChecked(false);
    QVERIFY(cv->compare());
    QVERIFY(settle(*w));
    save(QStringLiteral("compare-leak"));
    // … and a head switched off in the encoder, seen in the cross-attention.
    cv->lookAheadMask()->setChecked(true);
    cv->addIntervention({AttentionKind::EncoderSelf, 0, 1, true, 1.0f});
    w->state()->setSelection({AttentionKind::Cross, t.layers(AttentionKind::Cross) - 1, -1, 0});
    QVERIFY(cv->compare());
    QVERIFY(settle(*w));
    save(QStringLiteral("compare-head-off"));
    cv->clearInterventions();
    // Search: beam search of width 4.
    w->setCurrentView(QStringLiteral("search"));
    QVERIFY(settle(*w));
    auto* sv = w->viewOf<SearchView>();
    sv->methodCombo()->setCurrentIndex(int(SearchView::Method::Beam));
    sv->beamWidth()->setValue(4);
    QVERIFY(sv->search());
    QVERIFY(settle(*w));
    save(QStringLiteral("search-beam"));
    sv->methodCombo()->setCurrentIndex(int(SearchView::Method::Sampling));
    sv->temperature()->setValue(4.0);
    QVERIFY(sv->search());
    QVERIFY(settle(*w));
    save(QStringLiteral("search-sampling"));
    qInfo("screenshots in %s", qPrintable(out));
  }
};

QTEST_MAIN(TeachingTest)
#include "test_teaching.moc"

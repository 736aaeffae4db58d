// Qt Test suite of the "Why this token?" view (offscreen): the logit lens it draws against
// model/lens's logitLens on a pass of its own, the contributions' bars summing to the logit the run
// produced, a head's bar opening that head, the Decoding view's "Why this token?" opening the view
// on its step and token, the exports (PNG, SVG, PDF, CSV, NumPy) read back, the refusals of models
// the contributions do not apply to, and screenshots of the view (build/screenshots).
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest/QtTest>
#include <cmath>
#include <cstring>
#include <memory>

#include "figures/figure.h"
#include "gui_fixture.h"
#include "model/lens.h"
#include "model/patching.h"
#include "session/item_models.h"
#include "session/teaching_util.h"
#include "shell/main_window.h"
#include "train/attribution.h"
#include "views/decoding/decoding_view.h"
#include "views/why/why_patching.h"
#include "views/why/why_view.h"
#include "widgets/bar_chart.h"
#include "widgets/fonts.h"
#include "widgets/heatmap.h"
#include "widgets/token_label.h"

using namespace attnviz;
using namespace attnviz::gui;
using namespace gui_fixture;

namespace {

WhyView* whyView(MainWindow& w) {
  return w.viewOf<WhyView>();
}

// A window on `model` showing the Why view with its answer computed.
std::unique_ptr<MainWindow> whyWindow(const QString& model, const QString& src = {}) {
  auto w = openWindow(model, src, QStringLiteral("why"));
  settle(*w);
  return w;
}

// Waits until the Why view has its answer (the job it starts when shown or asked).
bool answered(MainWindow& w) {
  for (int k = 0; k < 200 && whyView(w)->computing(); ++k) {
    QTest::qWait(20);
    idle(w);
  }
  idle(w);  // the job's result is taken before the engine says it is free
  return !whyView(w)->computing() && whyView(w)->answer() != nullptr;
}

bool close(double a, double b, double rel) {
  return std::abs(a - b) <= rel * std::max(1.0, std::abs(b));
}

// The snapshot's run again, with the residual stream kept, as the test's own pass.
Trace lensPass(MainWindow& w) {
  const Model& m = *w.engine()->model();
  const Snapshot& snap = *w.engine()->snapshot();
  Inputs in;
  if (m.config().hasEncoder()) in.src = {snap.src_ids};
  if (m.config().hasDecoder()) in.tgt = {snap.trace->tgt_ids.at(0)};
  ForwardOptions o = lensForwardOptions();
  o.masks = snap.masks;
  return m.forward(in, o);
}

// Shows the attribution tab and waits for its result (the job it starts when shown).
const Attribution* attributed(MainWindow& w) {
  WhyView* v = whyView(w);
  v->tabs()->setCurrentIndex(WhyView::kAttributionTab);
  QCoreApplication::processEvents();
  for (int k = 0; k < 500 && (v->attributing() || v->computing()); ++k) {
    QTest::qWait(20);
    idle(w);
  }
  idle(w);
  return v->attributing() ? nullptr : v->attribution();
}

// attribute() called directly on the snapshot's run with the view's question.
Attribution directAttribution(MainWindow& w, int steps, int layer, int head) {
  const Model& m = *w.engine()->model();
  const Snapshot& snap = *w.engine()->snapshot();
  const WhyAnswer& a = *whyView(w)->answer();
  Inputs in;
  if (m.config().hasEncoder()) in.src = {snap.src_ids};
  if (m.config().hasDecoder()) in.tgt = {snap.trace->tgt_ids.at(0)};
  AttributionOptions o;
  o.position = a.position;
  o.token = a.token;
  o.versus = a.versus;
  o.steps = steps;
  o.layer = layer;
  o.head = head;
  return attribute(m, in, o);
}

// The bars of the contributions tab, shown.
BarChart* showContributions(MainWindow& w) {
  WhyView* v = whyView(w);
  v->tabs()->setCurrentIndex(1);
  QCoreApplication::processEvents();
  return v->contributionBars();
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// File › Export view's PNG, SVG and PDF of the tab shown, as STEM.png/svg/pdf, each read back; the
// PNG kept beside the screenshots as why-figure-NAME.png, to be looked at.
void writeFigures(WhyView* v, const QString& stem, const QString& name) {
  QString error;
  FigureOptions o;
  o.format = FigureOptions::Format::Png;
  QVERIFY2(writeFigure(v, stem + ".png", o, &error), qPrintable(error));
  QImage png(stem + ".png");
  QVERIFY(!png.isNull() && png.width() > 200 && png.height() > 100);
  QVERIFY(QDir().mkpath(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR)));
  QVERIFY(png.save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/why-figure-%1.png").arg(name)));
  o.format = FigureOptions::Format::Svg;
  QVERIFY2(writeFigure(v, stem + ".svg", o, &error), qPrintable(error));
  QXmlStreamReader xml(readAll(stem + ".svg"));
  int elements = 0;
  while (!xml.atEnd())
    if (xml.readNext() == QXmlStreamReader::StartElement) ++elements;
  QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
  QVERIFY(elements > 20);
  o.format = FigureOptions::Format::Pdf;
  QVERIFY2(writeFigure(v, stem + ".pdf", o, &error), qPrintable(error));
  QVERIFY(readAll(stem + ".pdf").startsWith("%PDF-"));
}

// The Patching tab of the Why view on `w`, shown.
WhyPatchingTab* showPatching(MainWindow& w) {
  WhyView* v = whyView(w);
  v->tabs()->setCurrentWidget(v->patchingTab());
  QCoreApplication::processEvents();
  return v->patchingTab();
}

// Types `corrupted` into the Patching tab, runs it and waits for its job.
bool runPatching(MainWindow& w, const QString& corrupted) {
  WhyPatchingTab* tab = showPatching(w);
  tab->corruptedEdit()->setText(corrupted);
  if (!tab->run()) return false;
  idle(w);
  return !tab->running();
}

constexpr const char* kClean = "the big dog sees a small cat";
constexpr const char* kCorrupted = "the big cat sees a small cat";

}  // namespace

class WhyViewTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_why_view"));
    QVERIFY(usePinnedFonts());
  }

  // The bundled reordering model (post-norm): the heatmap is logitLens of the same run, cell by
  // cell; its last row's top tokens are the Decoding view's choices; the contributions are
  // refused with the reason, and the view does not crash.
  void lensOnReorder() {
    auto w = whyWindow(QStringLiteral("reorder"));
    QVERIFY(answered(*w));
    WhyView* v = whyView(*w);
    const Model& m = *w->engine()->model();
    const Snapshot& snap = *w->engine()->snapshot();
    const Trace t = lensPass(*w);
    LensOptions lo;
    lo.top_k = 5;
    const LogitLens ref = logitLens(m, t, lo);
    const HeatmapData& d = v->lensMap()->data();
    QCOMPARE(d.rows, m.config().n_decoder_layers + 1);
    QCOMPARE(d.rows, ref.rows);
    QCOMPARE(d.cols, ref.positions);
    QCOMPARE(d.cols, int(snap.steps.size()));
    const Vocabulary& out = m.tgtVocab();
    for (int r = 0; r < d.rows; ++r)
      for (int i = 0; i < d.cols; ++i) {
        const int64_t c = ref.cell(r, i);
        QVERIFY2(close(d.value(r, i), ref.target_probs[size_t(c)], 1e-5),
                 qPrintable(QStringLiteral("row %1 position %2: %3 against %4")
                                .arg(r)
                                .arg(i)
                                .arg(d.value(r, i))
                                .arg(ref.target_probs[size_t(c)])));
        QCOMPARE(d.cell_texts[qsizetype(c)].section('\n', 0, 0),
                 tokenLabel(out.token(ref.top_ids[size_t(c) * 5])));
        QVERIFY(std::abs(d.cell_texts[qsizetype(c)].section('\n', 1).toDouble() -
                         ref.top_probs[size_t(c) * 5]) <= 0.005 + 1e-6);
        QVERIFY(d.cell_notes[qsizetype(c)].contains(
            QStringLiteral("rank %1").arg(ref.target_ranks[size_t(c)])));
      }
    // The last row reads the model's own logits: its top token is each step's argmax.
    for (int i = 0; i < d.cols; ++i)
      QCOMPARE(d.cell_texts[qsizetype(ref.cell(d.rows - 1, i))].section('\n', 0, 0),
               snap.steps[size_t(i)].argmax);
    // The default question: the last position, the model's choice there.
    QCOMPARE(v->answer()->position, d.cols - 1);
    QCOMPARE(d.highlight_col, d.cols - 1);
    QCOMPARE(v->answer()->token, snap.steps.back().argmax_id);
    // Post-norm: the lens says which norm; the contributions are refused, with the reason.
    QVERIFY(v->explanation()->html().contains(
        QStringLiteral("post-norm: the block's output, already normed")));
    QVERIFY(!v->answer()->contributions);
    showContributions(*w);
    QVERIFY(v->contributionsCaption()->text().contains(QStringLiteral("pre-norm models only")));
    QVERIFY(!v->contributionBars()->isVisible());
    QVERIFY(v->explanation()->html().contains(QStringLiteral("pre-norm models only")));
  }

  // Another position of the combo, another token of the list: the lens follows (its target is
  // that token at every position) and the cell tooltip names its rank.
  void positionAndTokenChoices() {
    auto w = whyWindow(QStringLiteral("reorder"));
    QVERIFY(answered(*w));
    WhyView* v = whyView(*w);
    v->positionCombo()->setCurrentIndex(1);
    QVERIFY(answered(*w));
    QCOMPARE(v->answer()->position, 1);
    QCOMPARE(v->lensMap()->data().highlight_col, 1);
    QVERIFY(v->tokenCombo()->count() >= 3);
    const int other = v->tokenCombo()->itemData(2).toInt();
    v->tokenCombo()->setCurrentIndex(2);
    QVERIFY(answered(*w));
    QCOMPARE(v->answer()->token, other);
    QCOMPARE(v->answer()->position, 1);
    const LogitLens& lens = *v->answer()->lens;
    for (int i = 0; i < lens.positions; ++i) QCOMPARE(lens.targets[size_t(i)], other);
    QCOMPARE(v->tokenCombo()->currentData().toInt(), other);
  }

  // The bundled reversal model (pre-norm): the bars sum to the logit of the run, which is the
  // decoding session's own logit; against the runner-up they sum to the difference.
  void contributionsSumToLogit() {
    auto w = whyWindow(QStringLiteral("reverse"));
    QVERIFY(answered(*w));
    WhyView* v = whyView(*w);
    BarChart* bars = showContributions(*w);
    const WhyAnswer& a = *v->answer();
    QVERIFY2(a.contributions, qPrintable(a.contributions_refusal));
    QVERIFY(bars->isVisible());
    QCOMPARE(bars->count(), int(a.contributions->parts.size()));
    const Trace& t = *w->engine()->snapshot()->trace;  // the decoding session's trace
    const float* row = t.logits.row(0, a.position);
    auto sumOfBars = [&] {
      double s = 0;
      for (int i = 0; i < bars->count(); ++i) s += bars->value(i);
      return s;
    };
    QVERIFY2(close(sumOfBars(), row[a.token], 1e-4),
             qPrintable(QStringLiteral("Σ bars %1, logit %2").arg(sumOfBars()).arg(row[a.token])));
    QVERIFY(close(a.contributions->logit, row[a.token], 1e-4));
    QVERIFY(v->contributionsCaption()->text().contains(
        QStringLiteral("= %1").arg(QString::number(a.contributions->logit, 'f', 4))));
    // Largest first, signs kept.
    for (int i = 1; i < bars->count(); ++i)
      QVERIFY(std::abs(bars->value(i - 1)) >= std::abs(bars->value(i)));
    bool negative = false;
    for (int i = 0; i < bars->count(); ++i) negative |= bars->value(i) < 0;
    QVERIFY(negative);
    // Against the runner-up.
    v->versusBox()->setChecked(true);
    QVERIFY(answered(*w));
    const WhyAnswer& b = *v->answer();
    QVERIFY(b.versus >= 0 && b.versus != b.token);
    const int V = int(t.logits.dense().dim(2));
    int runner = -1;
    for (int j = 0; j < V; ++j)
      if (j != b.token && (runner < 0 || row[j] > row[runner])) runner = j;
    QCOMPARE(b.versus, runner);
    QVERIFY2(close(sumOfBars(), double(row[b.token]) - row[runner], 1e-4),
             qPrintable(QStringLiteral("Σ bars %1").arg(sumOfBars())));
    QVERIFY(v->explanation()->html().contains(QStringLiteral("s = ")));
  }

  // A head's bar, clicked: that head is selected and the Attention view opens; a feed-forward
  // bar opens nothing.
  void clickHeadBar() {
    auto w = whyWindow(QStringLiteral("reverse"));
    QVERIFY(answered(*w));
    WhyView* v = whyView(*w);
    BarChart* bars = showContributions(*w);
    const Contributions& c = *v->answer()->contributions;
    int head = -1, ff = -1;
    for (int i = 0; i < int(c.parts.size()); ++i) {
      if (head < 0 && c.parts[size_t(i)].kind == LogitPart::Kind::Head &&
          c.parts[size_t(i)].attention == AttentionKind::Cross && c.parts[size_t(i)].head > 0)
        head = i;
      if (ff < 0 && c.parts[size_t(i)].kind == LogitPart::Kind::FeedForward) ff = i;
    }
    QVERIFY(head >= 0 && ff >= 0);
    const AttentionSelection before = w->state()->selection();
    QTest::mouseClick(bars, Qt::LeftButton, {}, bars->barRect(ff).center().toPoint());
    QCOMPARE(w->currentView()->name(), QStringLiteral("why"));
    QCOMPARE(w->state()->selection().head, before.head);
    QTest::mouseClick(bars, Qt::LeftButton, {}, bars->barRect(head).center().toPoint());
    const LogitPart& p = c.parts[size_t(head)];
    QCOMPARE(w->currentView()->name(), QStringLiteral("attention"));
    QCOMPARE(w->state()->selection().kind, AttentionKind::Cross);
    QCOMPARE(w->state()->selection().layer, p.layer);
    QCOMPARE(w->state()->selection().head, p.head);
  }

  // The Decoding view's "Why this token?" on an earlier step and a candidate that is not the
  // model's choice: the view opens there, explaining that token.
  void decodingViewAsks() {
    auto w = openWindow(QStringLiteral("reverse"), {}, QStringLiteral("decoding"));
    DecodingView* dv = w->decodingView();
    QVERIFY(dv->stepsModel()->rowCount() >= 3);
    dv->selectStep(1);
    QCoreApplication::processEvents();
    dv->topkTable()->selectRow(2);
    const int token =
        dv->topkModel()->data(dv->topkModel()->index(2, 0), TopKModel::TokenIdRole).toInt();
    QVERIFY(token != w->engine()->snapshot()->steps[1].argmax_id);
    QVERIFY(dv->whyButton()->isVisible() && dv->whyButton()->isEnabled());
    QTest::mouseClick(dv->whyButton(), Qt::LeftButton);
    QCOMPARE(w->currentView()->name(), QStringLiteral("why"));
    QVERIFY(answered(*w));
    WhyView* v = whyView(*w);
    QCOMPARE(v->answer()->position, 1);
    QCOMPARE(v->answer()->token, token);
    QCOMPARE(v->positionCombo()->currentData().toInt(), 1);
    QCOMPARE(v->tokenCombo()->currentData().toInt(), token);
    QCOMPARE(v->answer()->contributions->token, token);
    QCOMPARE(v->answer()->contributions->position, 1);
    // Asked on the model's choice: the lens reads each position's own choice.
    w->setCurrentView(QStringLiteral("decoding"));
    dv->selectStep(1);
    dv->topkTable()->selectRow(0);
    dv->explainSelectedToken();
    QVERIFY(answered(*w));
    QCOMPARE(v->answer()->token, w->engine()->snapshot()->steps[1].argmax_id);
    QCOMPARE(v->tokenCombo()->currentIndex(), 0);
    const LogitLens& lens = *v->answer()->lens;
    for (int i = 0; i < lens.positions; ++i)
      QCOMPARE(lens.targets[size_t(i)], w->engine()->snapshot()->steps[size_t(i)].argmax_id);
  }

  // The view follows the decode: steps back (immediate) and forward (a job of the engine) while
  // it is shown, and it explains each new run's last position; a question about the run asked
  // while the engine's step computes the next one gives way to that next run.
  void followsTheDecode() {
    auto w = whyWindow(QStringLiteral("reverse"));
    QVERIFY(answered(*w));
    WhyView* v = whyView(*w);
    const int last = v->answer()->position;
    // The decode has finished: the first step back takes the end token back, the second the last
    // position.
    QVERIFY(w->engine()->snapshot()->finished);
    QVERIFY(w->engine()->stepBack());
    QVERIFY(answered(*w));  // the view's own job holds the engine meanwhile
    QVERIFY(w->engine()->stepBack());
    QVERIFY(answered(*w));
    QCOMPARE(v->answer()->snapshot, w->engine()->snapshot()->id);
    QCOMPARE(v->answer()->position, last - 1);
    QCOMPARE(v->lensMap()->data().cols, last);
    QVERIFY(w->engine()->stepForward());
    QVERIFY(w->engine()->busy());
    v->explain(1, -1);
    QVERIFY(idle(*w));
    QVERIFY(answered(*w));
    QCOMPARE(v->answer()->snapshot, w->engine()->snapshot()->id);
    QCOMPARE(v->answer()->position, last);
    QCOMPARE(v->lensMap()->data().cols, last + 1);
  }

  // A decoder-only model (the wq GPT): the lens reads its positions; the contributions apply or
  // say why not, and when they apply they add up.
  void decoderOnly() {
    auto w = whyWindow(dataModel("gpt003"), QStringLiteral("the cat"));
    QVERIFY(answered(*w));
    const WhyAnswer& a = *whyView(*w)->answer();
    QVERIFY(a.lens);
    QCOMPARE(a.lens->positions, int(w->engine()->snapshot()->trace->tgt_tokens[0].size()));
    if (a.contributions)
      QVERIFY(close(a.contributions->total, a.contributions->logit, 1e-4));
    else
      QVERIFY(!a.contributions_refusal.isEmpty());
  }

  // PNG, SVG and PDF of both tabs (File › Export view's writeFigure), CSV of both, the NumPy
  // folder: each read back.
  void exports() {
    auto w = whyWindow(QStringLiteral("reverse"));
    QVERIFY(answered(*w));
    WhyView* v = whyView(*w);
    QTemporaryDir dir;
    const WhyAnswer& a = *v->answer();
    for (int tab : {0, 1}) {
      v->tabs()->setCurrentIndex(tab);
      QCoreApplication::processEvents();
      const QString stem =
          dir.filePath(tab == 0 ? QStringLiteral("lens") : QStringLiteral("parts"));
      writeFigures(v, stem, tab == 0 ? QStringLiteral("lens") : QStringLiteral("contributions"));
      if (QTest::currentTestFailed()) return;
      QString error;
      QVERIFY2(v->exportCsv(stem + ".csv", &error), qPrintable(error));
      const QStringList lines = QString::fromUtf8(readAll(stem + ".csv"))
                                    .split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
      if (tab == 0) {
        QCOMPARE(lines.size(), a.lens->rows * a.lens->positions + 1);
        QVERIFY(lines[0].startsWith(QStringLiteral("row,position,input,target")));
      } else {
        QCOMPARE(lines.size(), int(a.contributions->parts.size()) + 1);
        double sum = 0;
        for (int k = 1; k < lines.size(); ++k) sum += lines[k].section(',', -1).toDouble();
        QVERIFY(close(sum, a.contributions->logit, 1e-4));
      }
    }
    const QString npy = dir.filePath(QStringLiteral("numpy"));
    QString error;
    QVERIFY2(v->exportNumpy(npy, &error), qPrintable(error));
    const QByteArray probs = readAll(npy + "/lens_target_probs.npy");
    QVERIFY(probs.startsWith("\x93NUMPY"));
    const int header = uint8_t(probs[8]) | (uint8_t(probs[9]) << 8);
    const QByteArray h = probs.mid(10, header);
    QVERIFY2(h.contains(QStringLiteral("'shape': (%1, %2)")
                            .arg(a.lens->rows)
                            .arg(a.lens->positions)
                            .toLatin1()),
             h.constData());
    QCOMPARE(probs.size(), 10 + header + a.lens->rows * a.lens->positions * 4);
    QVERIFY(QFile::exists(npy + "/lens.json"));
    QVERIFY(QFile::exists(npy + "/contributions.json"));
    // A folder that cannot be made: a message, no crash.
    QVERIFY(!v->exportNumpy(QStringLiteral("/proc/no/such/folder"), &error));
    QVERIFY(!error.isEmpty());
  }

  // The attribution tab on reorder (an encoder-decoder: source and target sides) shows what
  // attribute() computes when called directly with the same question: every bar, Spearman's ρ and
  // the completeness figures written out; then again for the runner-up, 8 steps and one head.
  void attributionOnReorder() {
    auto w = whyWindow(QStringLiteral("reorder"));
    QVERIFY(answered(*w));
    WhyView* v = whyView(*w);
    const Model& m = *w->engine()->model();
    QCOMPARE(v->stepsBox()->value(), 32);
    QCOMPARE(v->layerCombo()->currentData().toInt(), m.config().n_decoder_layers - 1);
    QCOMPARE(v->headCombo()->currentData().toInt(), -1);
    auto check = [&](int steps, int layer, int head) {
      const Attribution* shown = attributed(*w);
      QVERIFY(shown);
      const Attribution ref = directAttribution(*w, steps, layer, head);
      QCOMPARE(shown->steps, steps);
      QCOMPARE(shown->token, ref.token);
      QCOMPARE(shown->versus, ref.versus);
      QCOMPARE(shown->sides.size(), size_t(2));  // source, target
      QCOMPARE(ref.sides.size(), size_t(2));
      // Same pass, same sums: equal up to the order of float additions across threads.
      QVERIFY(close(shown->f_input, ref.f_input, 1e-5));
      QVERIFY(close(shown->f_baseline, ref.f_baseline, 1e-5));
      QVERIFY(close(shown->ig_total, ref.ig_total, 1e-5));
      const QString caption = v->attributionCaption()->text();
      for (double x : {ref.f_input, ref.f_baseline, ref.ig_total, ref.f_input - ref.f_baseline})
        QVERIFY2(caption.contains(num(x, 4)), qPrintable(caption + " lacks " + num(x, 4)));
      QVERIFY(caption.contains(QString::number(100 * ref.gap_relative, 'f', 2) + " %"));
      const auto bars = v->attributionBars();
      for (size_t s = 0; s < 2; ++s) {
        const TokenAttributions& r = ref.sides[s];
        QVERIFY(r.compared > 0);
        const std::vector<const std::vector<float>*> columns{&r.integrated, &r.saliency,
                                                             &r.attention, &r.rollout};
        for (size_t k = 0; k < 4; ++k) {
          QCOMPARE(bars[s][k]->count(), r.compared);
          for (int i = 0; i < r.compared; ++i)
            QVERIFY2(close(bars[s][k]->value(i), (*columns[k])[size_t(i)], 1e-4),
                     qPrintable(QStringLiteral("side %1 column %2 token %3: %4 against %5")
                                    .arg(s)
                                    .arg(k)
                                    .arg(i)
                                    .arg(bars[s][k]->value(i))
                                    .arg((*columns[k])[size_t(i)])));
        }
        QVERIFY(bars[s][0]->allLabelsDrawn());
        // Each column's name above its bars, where a long list starts, not below its end.
        for (BarChart* b : bars[s]) QVERIFY(b->axisTitleRect().bottom() <= b->barRect(0).top());
        const QString title = bars[s][0]->parentWidget()->findChild<QLabel*>()->text();
        for (double rho : {r.spearman_attention, r.spearman_rollout})
          if (std::isfinite(rho))
            QVERIFY2(title.contains(QString::number(rho, 'f', 2)), qPrintable(title));
      }
    };
    check(32, m.config().n_decoder_layers - 1, -1);
    // The runner-up, 8 steps, the first layer's first head.
    v->versusBox()->setChecked(true);
    v->stepsBox()->setValue(8);
    v->layerCombo()->setCurrentIndex(0);
    v->headCombo()->setCurrentIndex(1);
    QVERIFY(answered(*w));
    QVERIFY(v->answer()->versus >= 0);
    check(8, 0, 0);
    QVERIFY(v->attribution()->versus >= 0);
    // One step: the caption flags the gap exactly when it is over 1 %.
    v->stepsBox()->setValue(1);
    check(1, 0, 0);
    QCOMPARE(v->attributionCaption()->text().contains(QStringLiteral("over 1 %")),
             directAttribution(*w, 1, 0, 0).gap_relative > 0.01);
  }

  // Cancel while the integrated gradients run: no result, no job left, the view says so and
  // computes again when asked.
  void attributionCancel() {
    auto w = whyWindow(QStringLiteral("reorder"));
    QVERIFY(answered(*w));
    WhyView* v = whyView(*w);
    v->stepsBox()->setValue(1024);
    v->tabs()->setCurrentIndex(WhyView::kAttributionTab);
    QCoreApplication::processEvents();
    QVERIFY(v->attributing());
    QVERIFY(v->cancelButton()->isVisible());
    QTest::mouseClick(v->cancelButton(), Qt::LeftButton);
    QVERIFY(w->engine()->waitUntilIdle());
    idle(*w);
    QVERIFY(!v->attributing());
    QVERIFY(v->attribution() == nullptr);
    QVERIFY(!w->engine()->busy());
    QVERIFY2(v->attributionCaption()->text().contains(QStringLiteral("Cancelled")),
             qPrintable(v->attributionCaption()->text()));
    QCOMPARE(v->cancelButton()->text(), QStringLiteral("Compute"));
    // Still usable: fewer steps compute at once.
    v->stepsBox()->setValue(4);
    const Attribution* r = attributed(*w);
    QVERIFY(r);
    QCOMPARE(r->steps, 4);
    QVERIFY(!v->cancelButton()->isVisible());
  }

  // The attribution tab's exports: PNG/SVG/PDF (File › Export view), CSV (one row per token and
  // side), NumPy (dumpAttribution's files) read back.
  void attributionExports() {
    auto w = whyWindow(QStringLiteral("reorder"));
    QVERIFY(answered(*w));
    WhyView* v = whyView(*w);
    const Attribution* r = attributed(*w);
    QVERIFY(r);
    QCOMPARE(v->exportWidget(), v->attributionChart());
    QTemporaryDir dir;
    const QString stem = dir.filePath(QStringLiteral("attribution"));
    writeFigures(v, stem, QStringLiteral("attribution"));
    if (QTest::currentTestFailed()) return;
    QString error;
    QVERIFY2(v->exportCsv(stem + ".csv", &error), qPrintable(error));
    const QStringList lines =
        QString::fromUtf8(readAll(stem + ".csv")).split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
    QVERIFY(lines[0].startsWith(QStringLiteral("side,position,token,id,compared,saliency")));
    int row = 1;
    for (const TokenAttributions& s : r->sides)
      for (size_t i = 0; i < s.ids.size(); ++i, ++row) {
        QVERIFY(row < lines.size());
        // No token of reorder's vocabulary needs quoting, so the fields split at commas.
        const QStringList f = lines[row].split(',');
        QCOMPARE(f.size(), 10);
        QCOMPARE(f[0],
                 s.side == Side::Source ? QStringLiteral("source") : QStringLiteral("target"));
        QCOMPARE(f[1].toInt(), int(i) + 1);
        QCOMPARE(f[3].toInt(), s.ids[i]);
        QVERIFY(close(f[7].toDouble(), s.integrated[i], 1e-6));
        QVERIFY(close(f[8].toDouble(), s.attention[i], 1e-6));
      }
    QCOMPARE(row, lines.size());
    const QString npy = dir.filePath(QStringLiteral("numpy"));
    QVERIFY2(v->exportNumpy(npy, &error), qPrintable(error));
    const QByteArray ig = readAll(npy + "/src_integrated.npy");
    QVERIFY(ig.startsWith("\x93NUMPY"));
    const int header = uint8_t(ig[8]) | (uint8_t(ig[9]) << 8);
    const QByteArray h = ig.mid(10, header);
    const int n = int(r->sides[0].ids.size());
    QVERIFY2(h.contains(QStringLiteral("'shape': (%1,)").arg(n).toLatin1()), h.constData());
    QCOMPARE(ig.size(), 10 + header + n * 4);
    float first = 0;
    std::memcpy(&first, ig.constData() + 10 + header, 4);
    QCOMPARE(first, r->sides[0].integrated[0]);
    QVERIFY(QFile::exists(npy + "/tgt_rollout.npy"));
    QVERIFY(QFile::exists(npy + "/attribution.json"));
  }

  // Models the contributions do not apply to: BERT's masked-LM head (the lens still reads it) and
  // a classifier with no token head (neither applies). Each says why.
  void refusals() {
    auto bert = whyWindow(dataModel("bert003"), QStringLiteral("[CLS] hello how [MASK] you [SEP]"));
    QVERIFY(answered(*bert));
    const WhyAnswer& a = *whyView(*bert)->answer();
    QVERIFY(a.lens);
    QVERIFY(!a.contributions);
    QVERIFY(a.contributions_refusal.contains(QStringLiteral("linear head")));
    auto cls = whyWindow(dataModel("classifier003"), QStringLiteral("this movie is not great"));
    QVERIFY(answered(*cls));
    const WhyAnswer& b = *whyView(*cls)->answer();
    QVERIFY(!b.lens && !b.contributions);
    QVERIFY(whyView(*cls)->lensCaption()->text().contains(QStringLiteral("no token head")));
    // The attribution tab: BERT's masked-LM head has one side (the encoder); the classifier has
    // nothing to attribute, says why and starts no job.
    const Attribution* bert_attribution = attributed(*bert);
    QVERIFY(bert_attribution);
    QCOMPARE(bert_attribution->sides.size(), size_t(1));
    QCOMPARE(bert_attribution->sides[0].side, Side::Source);
    WhyView* c = whyView(*cls);
    c->tabs()->setCurrentIndex(WhyView::kAttributionTab);
    QCoreApplication::processEvents();
    QVERIFY(!c->attributing() && !c->attribution());
    QVERIFY2(c->attributionCaption()->text().contains(QStringLiteral("no token head")),
             qPrintable(c->attributionCaption()->text()));
  }

  // The view on reorder (lens; the contributions' refusal) and on reverse (the contributions),
  // saved to build/screenshots; every label of the heatmap and the bars has its room.
  void screenshots() {
    const QString out = QStringLiteral(ATTNVIZ_SCREENSHOT_DIR);
    QVERIFY(QDir().mkpath(out));
    for (const QString model : {QStringLiteral("reorder"), QStringLiteral("reverse")}) {
      auto w = whyWindow(model);
      QVERIFY(answered(*w));
      WhyView* v = whyView(*w);
      v->tabs()->setCurrentIndex(0);
      QTest::qWait(50);
      QVERIFY(v->lensMap()->allRowLabelsDrawn());
      QVERIFY(v->lensMap()->allColLabelsDrawn());
      QVERIFY(w->grab().save(QDir(out).filePath(QStringLiteral("why-lens-%1.png").arg(model))));
      v->tabs()->setCurrentIndex(1);
      QTest::qWait(50);
      if (v->answer()->contributions) QVERIFY(v->contributionBars()->allLabelsDrawn());
      QVERIFY(w->grab().save(
          QDir(out).filePath(QStringLiteral("why-contributions-%1.png").arg(model))));
      QVERIFY(attributed(*w));
      QTest::qWait(50);
      for (const auto& side : whyView(*w)->attributionBars()) QVERIFY(side[0]->allLabelsDrawn());
      QVERIFY(
          w->grab().save(QDir(out).filePath(QStringLiteral("why-attribution-%1.png").arg(model))));
      // One step: the completeness gap, and its warning when it is over 1 %.
      whyView(*w)->stepsBox()->setValue(1);
      QVERIFY(attributed(*w));
      QVERIFY(w->grab().save(
          QDir(out).filePath(QStringLiteral("why-attribution-%1-1-step.png").arg(model))));
    }
    qInfo("screenshots in %s", qPrintable(out));
  }

  // ---- the Patching tab ----

  // On reorder, "dog" → "cat": every heatmap of the tab is patchActivations of the same clean and
  // corrupted inputs, called here directly, cell by cell; the labels are the core's; m(clean) and
  // m(corrupted) are written above the maps and in "What am I looking at?".
  void patchingOnReorder() {
    auto w = whyWindow(QStringLiteral("reorder"), QString::fromLatin1(kClean));
    QVERIFY(answered(*w));
    WhyPatchingTab* tab = showPatching(*w);
    QCOMPARE(tab->corruptedEdit()->text(), QString::fromLatin1(kClean));  // prefilled
    QVERIFY(runPatching(*w, QString::fromLatin1(kCorrupted)));
    QVERIFY2(tab->result(), qPrintable(tab->caption()->text()));
    const Model& m = *w->engine()->model();
    const Snapshot& snap = *w->engine()->snapshot();
    Inputs clean, corrupted;
    clean.src = {snap.src_ids};
    clean.tgt = {snap.trace->tgt_ids.at(0)};
    corrupted.src = {m.encodeSource(kCorrupted)};
    corrupted.tgt = clean.tgt;
    QVERIFY(corrupted.src[0] != clean.src[0]);  // both words are in the vocabulary
    QCOMPARE(corrupted.src[0].size(), clean.src[0].size());
    const PatchingResult ref = patchActivations(m, clean, corrupted);
    const PatchingResult& r = *tab->result();
    QCOMPARE(r.position, ref.position);
    QCOMPARE(r.answer, ref.answer);
    QCOMPARE(r.foil, ref.foil);
    QVERIFY(close(r.clean, ref.clean, 1e-5));
    QVERIFY(close(r.corrupted, ref.corrupted, 1e-5));
    QCOMPARE(int(ref.maps.size()), 5);  // two residual streams, three head blocks
    QCOMPARE(int(tab->heatmaps().size()), int(ref.maps.size()));
    for (size_t k = 0; k < ref.maps.size(); ++k) {
      const PatchHeatmap& want = ref.maps[k];
      const HeatmapData& d = tab->heatmaps()[k]->data();
      QCOMPARE(d.title, QString::fromStdString(want.title));
      QCOMPARE(d.rows, want.rows);
      QCOMPARE(d.cols, want.cols);
      for (int row = 0; row < d.rows; ++row)
        QCOMPARE(d.row_labels[row], QString::fromStdString(want.row_labels[size_t(row)]));
      for (int col = 0; col < d.cols; ++col)
        QCOMPARE(d.col_labels[col], tokenLabel(want.col_labels[size_t(col)]));
      for (int row = 0; row < d.rows; ++row)
        for (int col = 0; col < d.cols; ++col) {
          const double restored = want.restored[size_t(want.cell(row, col))];
          QVERIFY2(std::abs(d.value(row, col) - restored) <= 1e-4,
                   qPrintable(QStringLiteral("%1 (%2, %3): %4 vs %5")
                                  .arg(d.title)
                                  .arg(row)
                                  .arg(col)
                                  .arg(d.value(row, col))
                                  .arg(restored)));
          // The tooltip names the layer, the position or head, the share and m(patched).
          const QString tip = tab->heatmaps()[k]->tooltipText(row, col);
          QVERIFY2(tip.contains(QString::fromStdString(want.row_labels[size_t(row)])) &&
                       tip.contains(QStringLiteral("Restored: ")) &&
                       tip.contains(QStringLiteral("%")) &&
                       tip.contains(QStringLiteral("m(patched) = %1")
                                        .arg(num(want.metric[size_t(want.cell(row, col))], 4))),
                   qPrintable(tip));
        }
    }
    // The encoder's stream: the column of the changed word reads "dog → cat".
    QVERIFY(tab->heatmaps()[0]->data().col_labels.contains(QStringLiteral("dog → cat")));
    QVERIFY(tab->caption()->text().contains(num(ref.clean, 4)));
    QVERIFY(tab->caption()->text().contains(num(ref.corrupted, 4)));
    const QString panel = whyView(*w)->explanation()->html();
    QVERIFY2(
        panel.contains(QStringLiteral("(m(patched) − m(corrupted)) / (m(clean) − m(corrupted))")),
        qPrintable(panel));
    QVERIFY(panel.contains(num(ref.clean, 4)));
  }

  // A corrupted input of another length: the core's refusal in the tab, no heatmaps, no crash;
  // then a good one works.
  void patchingOtherLength() {
    auto w = whyWindow(QStringLiteral("reorder"), QString::fromLatin1(kClean));
    QVERIFY(answered(*w));
    QVERIFY(runPatching(*w, QStringLiteral("the big cat sees a cat")));
    WhyPatchingTab* tab = whyView(*w)->patchingTab();
    QVERIFY(!tab->result());
    QVERIFY(tab->heatmaps().empty());
    const QString text = tab->caption()->text();
    QVERIFY2(text.contains(QStringLiteral("same number of tokens")), qPrintable(text));
    const int n = int(w->engine()->snapshot()->src_ids.size());
    QVERIFY2(text.contains(
                 QStringLiteral("the clean one has %1, the corrupted one %2").arg(n).arg(n - 1)),
             qPrintable(text));
    QVERIFY(runPatching(*w, QString::fromLatin1(kCorrupted)));
    QVERIFY(tab->result());
  }

  // Cancel while the sweep runs: no result, the tab says so and is usable again (a second run
  // completes); the progress bar and Cancel show only while it runs.
  void patchingCancel() {
    auto w = whyWindow(QStringLiteral("reorder"), QString::fromLatin1(kClean));
    QVERIFY(answered(*w));
    WhyPatchingTab* tab = showPatching(*w);
    QVERIFY(tab->progressBar()->isHidden() && tab->cancelButton()->isHidden());
    tab->corruptedEdit()->setText(QString::fromLatin1(kCorrupted));
    QVERIFY(tab->run());
    QVERIFY(tab->running());
    QVERIFY(tab->progressBar()->isVisible() && tab->cancelButton()->isVisible());
    QVERIFY(!tab->runButton()->isEnabled());
    tab->cancelButton()->click();
    idle(*w);
    QVERIFY(!tab->running());
    QVERIFY(!tab->result());
    QVERIFY2(tab->caption()->text().contains(QStringLiteral("Cancelled")),
             qPrintable(tab->caption()->text()));
    QVERIFY(tab->runButton()->isEnabled());
    QVERIFY(tab->progressBar()->isHidden() && tab->cancelButton()->isHidden());
    QVERIFY(runPatching(*w, QString::fromLatin1(kCorrupted)));
    QVERIFY(tab->result());
    QCOMPARE(tab->progressBar()->maximum(), tab->result()->runs);  // the last report: all runs
  }

  // CSV (every cell, its values those of the result), the NumPy folder (dumpPatching), PNG, SVG
  // and PDF through File › Export view's writeFigure; a screenshot of the tab to look at.
  void patchingExports() {
    auto w = whyWindow(QStringLiteral("reorder"), QString::fromLatin1(kClean));
    QVERIFY(answered(*w));
    WhyView* v = whyView(*w);
    QTemporaryDir dir;
    QString error;
    v->tabs()->setCurrentWidget(v->patchingTab());
    QVERIFY(!v->exportCsv(dir.filePath(QStringLiteral("none.csv")), &error));
    QVERIFY(!error.isEmpty());  // nothing yet
    QVERIFY(runPatching(*w, QString::fromLatin1(kCorrupted)));
    const PatchingResult& r = *v->patchingTab()->result();
    const QString csv = dir.filePath(QStringLiteral("patching.csv"));
    QVERIFY2(v->exportCsv(csv, &error), qPrintable(error));
    const QStringList lines =
        QString::fromUtf8(readAll(csv)).split(QStringLiteral("\r\n"), Qt::SkipEmptyParts);
    int cells = 0;
    for (const PatchHeatmap& m : r.maps) cells += m.rows * m.cols;
    QCOMPARE(lines.size(), cells + 1);
    QVERIFY(lines[0].startsWith(QStringLiteral("map,row,column")));
    int line = 1;
    for (const PatchHeatmap& m : r.maps)
      for (int row = 0; row < m.rows; ++row)
        for (int col = 0; col < m.cols; ++col, ++line) {
          const QStringList f = lines[line].split(',');
          QCOMPARE(f[f.size() - 4].toInt(), row + 1);
          QCOMPARE(f[f.size() - 3].toInt(), col + 1);
          QVERIFY(close(f[f.size() - 2].toDouble(), m.restored[size_t(m.cell(row, col))], 1e-5));
          QVERIFY(close(f[f.size() - 1].toDouble(), m.metric[size_t(m.cell(row, col))], 1e-5));
        }
    const QString npy = dir.filePath(QStringLiteral("numpy"));
    QVERIFY2(v->exportNumpy(npy, &error), qPrintable(error));
    const QByteArray restored = readAll(npy + "/patch_residual_dec_restored.npy");
    QVERIFY(restored.startsWith("\x93NUMPY"));
    const int header = uint8_t(restored[8]) | (uint8_t(restored[9]) << 8);
    const PatchHeatmap& dec = r.maps[1];
    QVERIFY(!dec.heads && dec.side == Side::Target);
    QVERIFY(
        restored.mid(10, header)
            .contains(QStringLiteral("'shape': (%1, %2)").arg(dec.rows).arg(dec.cols).toLatin1()));
    QCOMPARE(restored.size(), 10 + header + dec.rows * dec.cols * 4);
    const float* values = reinterpret_cast<const float*>(restored.constData() + 10 + header);
    for (int k = 0; k < dec.rows * dec.cols; ++k)
      QVERIFY(std::abs(values[k] - dec.restored[size_t(k)]) <= 1e-6);
    QVERIFY(readAll(npy + "/patch.json").contains("\"metric_clean\""));
    QVERIFY(!v->exportNumpy(QStringLiteral("/proc/no/such/folder"), &error));
    QVERIFY(!error.isEmpty());
    QVERIFY(v->figureTitle().first().startsWith(QStringLiteral("Activation patching")));
    writeFigures(v, dir.filePath(QStringLiteral("patching")), QStringLiteral("patching"));
    // The tab as a student sees it; every label of every heatmap has its room.
    QTest::qWait(50);
    QVERIFY(w->grab().save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/why-patching-reorder.png")));
    // At the window's 1400 pixels the maps need no horizontal scrolling; the heads at the bottom.
    auto* scroll = v->patchingTab()->findChild<QScrollArea*>();
    QVERIFY(scroll && !scroll->horizontalScrollBar()->isVisible());
    scroll->verticalScrollBar()->setValue(scroll->verticalScrollBar()->maximum());
    QTest::qWait(50);
    QVERIFY(
        w->grab().save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/why-patching-reorder-heads.png")));
    for (HeatmapWidget* hm : v->patchingTab()->heatmaps()) {
      QVERIFY2(hm->allRowLabelsDrawn(), qPrintable(hm->data().title));
      QVERIFY2(hm->allColLabelsDrawn(), qPrintable(hm->data().title));
    }
  }

  // A decoder-only model: the corrupted line is the prompt as far as fed (without the start token)
  // and encodes back to the clean run's ids; a word changed gives patchActivations' result.
  void patchingDecoderOnly() {
    auto w = whyWindow(dataModel("gpt003"), QStringLiteral("the cat"));
    QVERIFY(answered(*w));
    WhyPatchingTab* tab = showPatching(*w);
    const Model& m = *w->engine()->model();
    const std::vector<int> clean = w->engine()->snapshot()->trace->tgt_ids.at(0);
    QVERIFY(!tab->corruptedEdit()->text().isEmpty());
    QCOMPARE(m.encodeTarget(tab->corruptedEdit()->text().toStdString()), clean);
    // The second word replaced by the last (a word of the vocabulary): as many tokens.
    QStringList words = tab->corruptedEdit()->text().split(' ');
    QVERIFY(words.size() >= 3 && words[1] != words.last());
    words[1] = words.last();
    const QString corrupted = words.join(' ');
    QVERIFY(runPatching(*w, corrupted));
    Inputs a, b;
    a.tgt = {clean};
    b.tgt = {m.encodeTarget(corrupted.toStdString())};
    QCOMPARE(b.tgt[0].size(), clean.size());
    const PatchingResult ref = patchActivations(m, a, b);
    QVERIFY2(tab->result(), qPrintable(tab->caption()->text()));
    QVERIFY(close(tab->result()->clean, ref.clean, 1e-5));
    QVERIFY(close(tab->result()->corrupted, ref.corrupted, 1e-5));
    QCOMPARE(int(tab->heatmaps().size()), int(ref.maps.size()));
    const HeatmapData& d = tab->heatmaps()[0]->data();  // the decoder's residual stream
    QCOMPARE(d.rows * d.cols, int(ref.maps[0].restored.size()));
    for (int k = 0; k < d.rows * d.cols; ++k)
      QVERIFY(std::abs(d.values[size_t(k)] - ref.maps[0].restored[size_t(k)]) <= 1e-4);
    QVERIFY(tab->runButton()->isEnabled());
  }
};

QTEST_MAIN(WhyViewTest)
#include "test_why_view.moc"

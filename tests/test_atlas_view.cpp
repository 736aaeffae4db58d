// Qt Test suite of the Atlas view (offscreen): every value it shows — the table's cells, the
// scatter's points and tooltips, the heads like the selected one, the evidence sentences, the
// queries and keys projected — against model/atlas called directly on the same corpus; the scatter,
// the table and AppState's selection kept in step; a double-click opening the head in the
// Attention view and an evidence sentence becoming the input of every view; Cancel; the messages
// for a bad corpus file; the exports (PNG, SVG, PDF, CSV) read back; screenshots of the view on the
// bundled models (build/screenshots).
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest/QtTest>
#include <cmath>
#include <memory>

#include "compute/cpu_backend.h"
#include "figures/figure.h"
#include "gui_fixture.h"
#include "model/atlas.h"
#include "model/circuits.h"
#include "session/attention_data.h"
#include "session/teaching_util.h"
#include "shell/main_window.h"
#include "train/history.h"
#include "train/history_figures.h"
#include "train/task_corpus.h"
#include "train/tasks.h"
#include "views/atlas/atlas_view.h"
#include "views/head_stat_texts.h"
#include "widgets/fonts.h"

using namespace attnviz;
using namespace attnviz::gui;
using namespace gui_fixture;

namespace {

AtlasView* atlasView(MainWindow& w) {
  return w.viewOf<AtlasView>();
}

// A window on `model` showing the Atlas view.
std::unique_ptr<MainWindow> atlasWindow(const QString& model) {
  auto w = openWindow(model, {}, QStringLiteral("atlas"));
  settle(*w);
  return w;
}

// Runs the view's corpus and waits for the job; true when an atlas came back.
bool runAndWait(MainWindow& w) {
  AtlasView* v = atlasView(w);
  if (!v->runAtlas()) return false;
  idle(w);
  return !v->running() && v->result().atlas != nullptr;
}

// buildAtlas called directly, as the view runs it (its batch, the engine's masks).
Atlas directAtlas(MainWindow& w, const Corpus& corpus, int batch = 16) {
  AtlasOptions o;
  o.run.batch = batch;
  o.run.masks = w.engine()->masks();
  o.run.max_new_tokens = w.engine()->maxNewTokens();
  return buildAtlas(*w.engine()->model(), corpus, o);
}

QString meanSdText(const Moments& m) {
  const double mean = m.meanOrNaN(), sd = m.sd();
  if (std::isnan(mean)) return QStringLiteral("—");
  return std::isnan(sd) ? num(mean, 3) : QStringLiteral("%1 ± %2").arg(num(mean, 3), num(sd, 3));
}

// Selects head h of the atlas in AppState, as the head menu does.
void selectHead(MainWindow& w, const AtlasHead& h) {
  AttentionSelection sel = w.state()->selection();
  sel.kind = h.kind;
  sel.layer = h.layer;
  sel.head = h.head;
  w.state()->setSelection(sel);
}

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool writeText(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

// RFC 4180 lines without quotes inside fields (the atlas CSV has none: names and numbers).
std::vector<QStringList> parseCsv(const QByteArray& bytes) {
  std::vector<QStringList> rows;
  for (const QByteArray& line : bytes.split('\n')) {
    QByteArray l = line;
    if (l.endsWith('\r')) l.chop(1);
    if (!l.isEmpty()) rows.push_back(QString::fromUtf8(l).split(QLatin1Char(',')));
  }
  return rows;
}

}  // namespace

class AtlasViewTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QCoreApplication::setOrganizationName(QStringLiteral("attnviz-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_atlas_view"));
    QVERIFY(usePinnedFonts());
  }

  // The bundled reordering model on its held-out sentences: every cell of the table is the mean ±
  // sd of buildAtlas called directly, and every point of the scatter sits at those means, its
  // tooltip naming the head (from 1) and the two values.
  void tableAndScatterAreTheCore() {
    auto w = atlasWindow(QStringLiteral("reorder"));
    AtlasView* v = atlasView(*w);
    QVERIFY(v->setSource(AtlasView::Source::HeldOut));
    QVERIFY(runAndWait(*w));
    const Atlas direct = directAtlas(*w, corpusFromHeldOut("reorder"));
    const Atlas& shown = *v->result().atlas;
    QCOMPARE(shown.heads.size(), direct.heads.size());
    QCOMPARE(shown.run.sentences, direct.run.sentences);
    QVERIFY(direct.run.sentences > 10);
    QVERIFY(v->statusText().contains(QString::number(direct.run.sentences)));
    AtlasTableModel* m = v->tableModel();
    QCOMPARE(m->rowCount(), int(direct.heads.size()));
    const std::vector<AtlasMeasure> measures = atlasMeasures();
    // The statistics' titles and tooltips come from the table the Head statistics view reads too:
    // one measure per HeadStat in kHeadStats's order, then the two scores.
    QCOMPARE(int(measures.size()), kHeadStatCount + 2);
    for (int k = 0; k < kHeadStatCount; ++k) {
      const HeadStatText& t = headStatText(kHeadStats[size_t(k)]);
      QCOMPARE(measures[size_t(k)].stat, k);
      QCOMPARE(measures[size_t(k)].title, t.title());
      QCOMPARE(m->headerData(AtlasTableModel::FirstMeasure + k, Qt::Horizontal).toString(),
               t.title());
      QVERIFY(m->headerData(AtlasTableModel::FirstMeasure + k, Qt::Horizontal, Qt::ToolTipRole)
                  .toString()
                  .startsWith(t.explanation + QStringLiteral(". Mean ± standard deviation")));
    }
    QCOMPARE(measures[size_t(HeadStat::Previous)].title,
             QStringLiteral("Previous token (share of attention, 0–1)"));
    QCOMPARE(measures[size_t(HeadStat::EntropyNorm)].title, QStringLiteral("Entropy 0–1"));
    QCOMPARE(measures[size_t(kHeadStatCount)].score, 0);
    for (int r = 0; r < m->rowCount(); ++r) {
      const AtlasHead& h = direct.heads[size_t(r)];
      QCOMPARE(m->data(m->index(r, AtlasTableModel::Block)).toString(),
               QString(h.kind == AttentionKind::EncoderSelf   ? "encoder self"
                       : h.kind == AttentionKind::DecoderSelf ? "decoder self"
                                                              : "cross"));
      QCOMPARE(m->data(m->index(r, AtlasTableModel::Layer)).toInt(), h.layer + 1);
      QCOMPARE(m->data(m->index(r, AtlasTableModel::Head)).toInt(), h.head + 1);
      for (int c = 0; c < int(measures.size()); ++c) {
        if (measures[size_t(c)].stat < 0) continue;  // the scores: below
        const Moments& mo = h.stats[size_t(measures[size_t(c)].stat)];
        QCOMPARE(m->data(m->index(r, AtlasTableModel::FirstMeasure + c)).toString(),
                 meanSdText(mo));
        const double a = m->mean(r, c), b = mo.meanOrNaN();
        QVERIFY(std::isnan(a) == std::isnan(b));
        if (!std::isnan(b)) QVERIFY(std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b)));
      }
    }
    // The circuit scores: inductionScores and copyingScores called directly, head by head.
    const Model& model = *w->engine()->model();
    const std::vector<HeadScore> induction = inductionScores(model);
    const std::vector<HeadScore> copying = copyingScores(model);
    const int mi = kHeadStatCount, mc = kHeadStatCount + 1;
    QVERIFY(measures[size_t(mi)].title.contains(QStringLiteral("Induction")));
    QVERIFY(measures[size_t(mc)].title.contains(QStringLiteral("Copying")));
    int scored = 0;
    for (const auto& [scores, column] : {std::pair{&induction, mi}, std::pair{&copying, mc}})
      for (const HeadScore& hs : *scores) {
        const int r = m->rowOf(hs.kind, hs.layer, hs.head);
        QVERIFY(r >= 0);
        const QString cell =
            m->data(m->index(r, AtlasTableModel::FirstMeasure + column)).toString();
        if (std::isnan(hs.value)) {
          QCOMPARE(cell, QStringLiteral("—"));
        } else {
          QCOMPARE(cell, num(hs.value, 3));  // one number: no spread over sentences
          QVERIFY(std::abs(m->mean(r, column) - hs.value) <= 1e-12);
          ++scored;
        }
      }
    QVERIFY(scored > int(direct.heads.size()) / 2);
    // The scatter: Previous token against normalised entropy, its points the means.
    const int mx = int(HeadStat::EntropyNorm), my = int(HeadStat::Diagonal);
    v->setAxes(mx, my);
    ScatterPlot* s = v->scatter();
    QCOMPARE(int(s->points().size()), int(direct.heads.size()));
    QVERIFY(s->xTitle().contains(QStringLiteral("Entropy")));
    QVERIFY(s->yTitle().contains(QStringLiteral("0–1")));  // the unit is on the axis
    int checked = 0;
    for (int r = 0; r < int(direct.heads.size()); ++r) {
      const AtlasHead& h = direct.heads[size_t(r)];
      const double x = h.stats[size_t(mx)].meanOrNaN(), y = h.stats[size_t(my)].meanOrNaN();
      if (std::isnan(x) || std::isnan(y)) continue;
      QCOMPARE(s->points()[size_t(r)].x, x);
      QCOMPARE(s->points()[size_t(r)].sd_y, h.stats[size_t(my)].sd());
      // The tooltip where the point is drawn (when no other point is drawn there).
      const QPointF at = s->position(r);
      if (s->pointAt(at) != r) continue;
      const QString tip = s->toolTipAt(at);
      QVERIFY2(tip.contains(QStringLiteral("layer %1 · head %2").arg(h.layer + 1).arg(h.head + 1)),
               qPrintable(tip));
      QVERIFY2(tip.contains(kindTitle(h.kind)), qPrintable(tip));
      QVERIFY2(tip.contains(meanSdText(h.stats[size_t(mx)])), qPrintable(tip));
      QVERIFY2(tip.contains(meanSdText(h.stats[size_t(my)])), qPrintable(tip));
      ++checked;
    }
    QVERIFY(checked >= 4);
    // The heads without a value (cross-attention has no diagonal) are counted under the plot.
    int missing = 0;
    for (const AtlasHead& h : direct.heads)
      missing += std::isnan(h.stats[size_t(mx)].meanOrNaN()) ||
                 std::isnan(h.stats[size_t(my)].meanOrNaN());
    QVERIFY(missing > 0);
    QVERIFY2(s->note().startsWith(QString::number(missing) + QLatin1Char(' ')),
             qPrintable(s->note()));
  }

  // A click on a point selects that head in AppState, the table's current row follows; a row of
  // the table moves the scatter's ring; a double-click opens the Attention view on the head; the
  // heads like it are headsLike's, nearest first.
  void selectionFollowsEverywhere() {
    auto w = atlasWindow(QStringLiteral("reorder"));
    AtlasView* v = atlasView(*w);
    QVERIFY(v->setSource(AtlasView::Source::HeldOut));
    QVERIFY(runAndWait(*w));
    const Atlas& atlas = *v->result().atlas;
    ScatterPlot* s = v->scatter();
    // A point drawn alone where it is.
    int target = -1;
    for (int r = int(atlas.heads.size()) - 1; r >= 0 && target < 0; --r)
      if (std::isfinite(s->points()[size_t(r)].x) && std::isfinite(s->points()[size_t(r)].y) &&
          s->pointAt(s->position(r)) == r)
        target = r;
    QVERIFY(target >= 0);
    QTest::mouseClick(s, Qt::LeftButton, {}, s->position(target).toPoint());
    const AtlasHead& h = atlas.heads[size_t(target)];
    const AttentionSelection& sel = w->state()->selection();
    QCOMPARE(sel.kind, h.kind);
    QCOMPARE(sel.layer, h.layer);
    QCOMPARE(sel.head, h.head);
    QCOMPARE(s->selected(), target);
    QCOMPARE(v->proxy()->mapToSource(v->table()->currentIndex()).row(), target);
    // The heads like it.
    const std::vector<HeadDistance> near = headsLike(atlas, target);
    QVERIFY(v->likeList()->count() > 0);
    for (int k = 0; k < v->likeList()->count(); ++k)
      QCOMPARE(v->likeList()->item(k)->data(Qt::UserRole).toInt(), near[size_t(k)].index);
    // Another row of the table.
    const int other = target == 0 ? 1 : 0;
    v->table()->setCurrentIndex(v->proxy()->mapFromSource(v->tableModel()->index(other, 1)));
    QCOMPARE(s->selected(), other);
    QCOMPARE(w->state()->selection().layer, atlas.heads[size_t(other)].layer);
    QCOMPARE(w->state()->selection().head, atlas.heads[size_t(other)].head);
    // AppState's selection moved elsewhere (the head menu, another view): the ring follows.
    selectHead(*w, h);
    QCOMPARE(s->selected(), target);
    // A double-click opens the Attention view.
    QTest::mouseDClick(s, Qt::LeftButton, {}, s->position(target).toPoint());
    QCOMPARE(w->currentView()->name(), QStringLiteral("attention"));
    QCOMPARE(w->state()->selection().head, h.head);
  }

  // The evidence lists are the atlas's top and bottom sentences of the chosen statistic; a
  // double-click on one makes it the input bar's sentence and the snapshot's run.
  void evidenceOpensInEveryView() {
    auto w = atlasWindow(QStringLiteral("reorder"));
    AtlasView* v = atlasView(*w);
    QVERIFY(v->setSource(AtlasView::Source::HeldOut));
    QVERIFY(runAndWait(*w));
    const Atlas& atlas = *v->result().atlas;
    const Corpus& corpus = *v->result().corpus;
    const int r = 0;  // the first encoder self-attention head: its diagonal is defined
    selectHead(*w, atlas.heads[size_t(r)]);
    v->setEvidenceStat(int(HeadStat::Diagonal));
    const auto top = atlas.heads[size_t(r)].extremes[size_t(HeadStat::Diagonal)].top();
    const auto bottom = atlas.heads[size_t(r)].extremes[size_t(HeadStat::Diagonal)].bottom();
    QVERIFY(!top.empty());
    QCOMPARE(v->topList()->count(), int(top.size()));
    QCOMPARE(v->bottomList()->count(), int(bottom.size()));
    for (size_t k = 0; k < top.size(); ++k) {
      QCOMPARE(v->topList()->item(int(k))->data(Qt::UserRole).toInt(), top[k].sentence);
      QVERIFY(v->topList()->item(int(k))->text().startsWith(num(top[k].value, 3)));
      QVERIFY(v->topList()->item(int(k))->text().contains(
          QString::fromStdString(corpus.entries[size_t(top[k].sentence)].src)));
    }
    QVERIFY(v->evidenceNote().isEmpty());
    // A statistic that does not apply to the head: empty lists, and why.
    selectHead(*w, atlas.heads.back());  // cross-attention: no diagonal
    QVERIFY(std::isnan(atlas.heads.back().stat(HeadStat::Diagonal).meanOrNaN()));
    QCOMPARE(v->topList()->count(), 0);
    QVERIFY2(v->evidenceNote().contains(QStringLiteral("does not apply")),
             qPrintable(v->evidenceNote()));
    selectHead(*w, atlas.heads[size_t(r)]);
    // The weakest sentence becomes the input.
    const CorpusEntry& e = corpus.entries[size_t(bottom.front().sentence)];
    v->panels()->setCurrentIndex(1);
    QCoreApplication::processEvents();
    QListWidgetItem* item = v->bottomList()->item(0);
    v->bottomList()->scrollToItem(item);
    const QRect rect = v->bottomList()->visualItemRect(item);
    const QPoint at(rect.left() + 20, rect.center().y());
    QVERIFY2(v->bottomList()->viewport()->rect().contains(at),
             qPrintable(QStringLiteral("%1,%2 %3x%4 in %5x%6")
                            .arg(rect.x())
                            .arg(rect.y())
                            .arg(rect.width())
                            .arg(rect.height())
                            .arg(v->bottomList()->viewport()->width())
                            .arg(v->bottomList()->viewport()->height())));
    // A double-click is a press, a release, then the double-click (an item view opens the item
    // pressed).
    QTest::mouseClick(v->bottomList()->viewport(), Qt::LeftButton, {}, at);
    QTest::mouseDClick(v->bottomList()->viewport(), Qt::LeftButton, {}, at);
    idle(*w);
    QCOMPARE(w->sourceEdit()->text(), QString::fromStdString(e.src));
    const Model& m = *w->engine()->model();
    const std::vector<int> ids = m.encodeSource(e.src);
    QCOMPARE(w->engine()->snapshot()->src_ids, ids);
  }

  // The queries and keys projected are headEmbedding's on the same corpus; a point's tooltip
  // names its token.
  void embeddingIsTheCore() {
    auto w = atlasWindow(QStringLiteral("reorder"));
    AtlasView* v = atlasView(*w);
    QVERIFY(v->setSource(AtlasView::Source::HeldOut));
    QVERIFY(runAndWait(*w));
    const Atlas& atlas = *v->result().atlas;
    const AtlasHead& h = atlas.heads.front();
    selectHead(*w, h);
    v->panels()->setCurrentIndex(2);
    QVERIFY(v->projectSelected());
    idle(*w);
    QVERIFY(v->embedding());
    HeadEmbeddingOptions o;
    o.run.masks = w->engine()->masks();
    const HeadEmbedding direct =
        headEmbedding(*w->engine()->model(), *v->result().corpus, h.kind, h.layer, h.head, o);
    ScatterPlot* p = v->embeddingPlot();
    QCOMPARE(int(p->points().size()), int(direct.points.size()));
    int queries = 0;
    for (size_t i = 0; i < direct.points.size(); ++i) {
      QVERIFY(std::abs(p->points()[i].x - direct.points[i].x) <= 1e-9);
      QVERIFY(std::abs(p->points()[i].y - direct.points[i].y) <= 1e-9);
      QVERIFY(p->points()[i].tip.contains(QString::fromStdString(direct.points[i].token)));
      queries += direct.points[i].query;
    }
    QVERIFY(queries > 0 && queries < int(direct.points.size()));
    QVERIFY(p->xTitle().contains(num(100 * direct.explained_ratio[0], 1)));
  }

  // The other corpora: a training task's held-out pairs (the reversal model on the reverse task)
  // and the model's example sentences give buildAtlas's atlas of trainingTaskCorpus and
  // corpusFromExamples called directly.
  void otherCorpora() {
    struct Case {
      const char* model;
      AtlasView::Source source;
      const char* task;
    };
    for (const Case& c : {Case{"reverse", AtlasView::Source::TrainingTask, "reverse"},
                          Case{"toy-translation", AtlasView::Source::Examples, ""}}) {
      auto w = atlasWindow(QLatin1String(c.model));
      AtlasView* v = atlasView(*w);
      QVERIFY(v->setSource(c.source, QLatin1String(c.task)));
      QVERIFY2(runAndWait(*w), qPrintable(v->statusText()));
      const Corpus corpus = c.source == AtlasView::Source::TrainingTask
                                ? trainingTaskCorpus(*makeTask(c.task))
                                : corpusFromExamples(w->engine()->model()->config());
      const Atlas direct = directAtlas(*w, corpus);
      const Atlas& shown = *v->result().atlas;
      QCOMPARE(shown.run.sentences, direct.run.sentences);
      QVERIFY(direct.run.sentences > 0);
      QCOMPARE(shown.heads.size(), direct.heads.size());
      for (size_t r = 0; r < direct.heads.size(); ++r)
        for (int s = 0; s < kHeadStatCount; ++s) {
          const double a = shown.heads[r].stats[size_t(s)].meanOrNaN();
          const double b = direct.heads[r].stats[size_t(s)].meanOrNaN();
          QVERIFY(std::isnan(a) == std::isnan(b));
          if (!std::isnan(b)) QVERIFY(std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b)));
        }
    }
  }

  // Cancel stops a long run: no atlas, the buttons back, a line saying so.
  void cancelStops() {
    auto w = atlasWindow(QStringLiteral("reorder"));
    AtlasView* v = atlasView(*w);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("long.txt"));
    // A corpus of the model's example sentences, many times over.
    QByteArray text;
    const ModelConfig& c = w->engine()->model()->config();
    for (int k = 0; k < 4000; ++k)
      text += QByteArray::fromStdString(c.examples[size_t(k) % c.examples.size()].src) + '\n';
    QVERIFY(writeText(path, text));
    v->setCorpusFile(path);
    QVERIFY(v->runAtlas());
    QVERIFY(v->running());
    QVERIFY(!v->runAtlas());  // one run at a time
    QVERIFY(!v->runButton()->isEnabled());
    QVERIFY(v->cancelButton()->isEnabled());
    v->cancel();
    idle(*w);
    QVERIFY(!v->running());
    QVERIFY(v->result().atlas == nullptr);
    QVERIFY(v->runButton()->isEnabled());
    QVERIFY2(v->statusText().contains(QStringLiteral("ancel")), qPrintable(v->statusText()));
  }

  // A line longer than the model's context (the reorder model's 128 positions; 300 words): with
  // Cut long lines off the summary says it was skipped and names the option; on, how many lines
  // were cut into how many chunks, the atlas is buildAtlas's with CorpusRun::chunk, and the
  // evidence names the chunk (and does not open the too-long line as the input).
  void longLinesSkippedOrCut() {
    auto w = atlasWindow(QStringLiteral("reorder"));
    AtlasView* v = atlasView(*w);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("long-line.txt"));
    QVERIFY(writeText(path, "the dog sees a cat\n" + QByteArray("the big dog ").repeated(100) +
                                "\na small cat\n"));
    QVERIFY(!v->chunkBox()->isChecked());
    QVERIFY(v->chunkBox()->toolTip().contains(QStringLiteral("context")));
    v->setCorpusFile(path);
    QVERIFY(runAndWait(*w));
    const CorpusRunReport& off = v->result().atlas->run;
    QCOMPARE(off.sentences, 2);
    QCOMPARE(off.too_long, 1);
    QCOMPARE(off.cut_lines, 0);
    QVERIFY2(v->statusText().contains(QStringLiteral("2 sentences through the model in 1 batches")),
             qPrintable(v->statusText()));
    QVERIFY2(v->statusText().contains(QStringLiteral(
                 "1 line longer than the model's context of 128 tokens skipped: Cut long lines "
                 "runs them in chunks.")),
             qPrintable(v->statusText()));
    QVERIFY(!v->statusText().contains(QStringLiteral("tokens cut into")));

    v->chunkBox()->setChecked(true);
    QVERIFY(runAndWait(*w));
    const Atlas& shown = *v->result().atlas;
    QCOMPARE(shown.run.sentences, 5);  // 2 short lines and 128 + 128 + 44 tokens
    QCOMPARE(shown.run.cut_lines, 1);
    QCOMPARE(shown.run.chunks, 3);
    QCOMPARE(shown.run.too_long, 0);
    QCOMPARE(shown.run.skipped_count, 0);
    const QString text = v->statusText();
    QVERIFY2(text.contains(QStringLiteral("5 sentences through the model")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("1 line longer than the model's context of 128 tokens "
                                          "cut into 3 chunks, each run as a sentence.")),
             qPrintable(text));
    QVERIFY2(!text.contains(QStringLiteral("skipped")), qPrintable(text));
    // The numbers are the core's, called with the option.
    AtlasOptions o;
    o.run.masks = w->engine()->masks();
    o.run.max_new_tokens = w->engine()->maxNewTokens();
    o.run.chunk = true;
    const Corpus corpus = readCorpusFile(path.toStdString());
    const Atlas direct = buildAtlas(*w->engine()->model(), corpus, o);
    QCOMPARE(shown.heads.size(), direct.heads.size());
    for (size_t h = 0; h < direct.heads.size(); ++h)
      for (HeadStat st : kHeadStats) {
        QCOMPARE(shown.heads[h].stat(st).count, direct.heads[h].stat(st).count);
        QCOMPARE(shown.heads[h].stat(st).mean, direct.heads[h].stat(st).mean);
      }
    // The evidence of a head where a chunk is among the top sentences: "[chunk k]", not opened.
    bool found = false;
    for (size_t h = 0; h < shown.heads.size() && !found; ++h) {
      const std::vector<SentenceValue> top =
          shown.heads[h].extremes[size_t(HeadStat::Entropy)].top();
      if (top.empty() || top[0].chunk < 0) continue;
      found = true;
      selectHead(*w, shown.heads[h]);
      v->setEvidenceStat(int(HeadStat::Entropy));
      settle(*w);
      QListWidgetItem* first = v->topList()->item(0);
      QVERIFY(first);
      QVERIFY2(first->text().contains(QStringLiteral("[chunk %1]").arg(top[0].chunk + 1)),
               qPrintable(first->text()));
      QCOMPARE(first->data(Qt::UserRole).toInt(), -1);
      QVERIFY2(first->toolTip().contains(QStringLiteral("Line 2 of the corpus, chunk")),
               qPrintable(first->toolTip()));
    }
    QVERIFY(found);  // the long line's chunks have the most tokens: the largest entropy
  }

  // A corpus file that cannot be run says why, in the core's words, and leaves no atlas.
  void badCorpusFiles() {
    auto w = atlasWindow(QStringLiteral("reorder"));
    AtlasView* v = atlasView(*w);
    QTemporaryDir dir;
    struct Case {
      const char* name;
      QByteArray bytes;
    };
    const Case cases[] = {
        {"empty.txt", QByteArray()},
        {"blank.txt", QByteArray("\n   \n\n")},
        {"binary.txt", QByteArray("\x7f"
                                  "ELF\x02\x01\x00\x00\x00\x00 binary\n",
                                  16)},
        {"too-long.txt", QByteArray("a ").repeated(5000) + "\n"},
    };
    for (const Case& c : cases) {
      const QString path = dir.filePath(QLatin1String(c.name));
      QVERIFY(writeText(path, c.bytes));
      // What the core says, called directly.
      QString expected;
      try {
        directAtlas(*w, readCorpusFile(path.toStdString()));
      } catch (const Error& e) {
        expected = messageSentence(e.what());
      }
      QVERIFY2(!expected.isEmpty(), c.name);
      v->setCorpusFile(path);
      QVERIFY(v->runAtlas());
      idle(*w);
      QVERIFY(!v->running());
      QVERIFY2(v->result().atlas == nullptr, c.name);
      QVERIFY2(v->statusText() == expected,
               qPrintable(QStringLiteral("%1: «%2» vs «%3»")
                              .arg(QLatin1String(c.name), v->statusText(), expected)));
    }
  }

  // The scatter as PNG, SVG and PDF through File › Export's writeFigure, the table as CSV, each
  // read back; the CSV's numbers are the atlas's.
  void exportsReadBack() {
    auto w = atlasWindow(QStringLiteral("reorder"));
    AtlasView* v = atlasView(*w);
    QVERIFY(v->setSource(AtlasView::Source::HeldOut));
    QVERIFY(runAndWait(*w));
    QTemporaryDir dir;
    const QString stem = dir.filePath(QStringLiteral("atlas"));
    QString error;
    FigureOptions o;
    o.format = FigureOptions::Format::Png;
    QVERIFY2(writeFigure(v, stem + ".png", o, &error), qPrintable(error));
    QImage png(stem + ".png");
    QVERIFY(!png.isNull() && png.width() > 200 && png.height() > 150);
    QVERIFY(QDir().mkpath(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR)));
    QVERIFY(png.save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/atlas-figure-reorder.png")));
    o.format = FigureOptions::Format::Svg;
    QVERIFY2(writeFigure(v, stem + ".svg", o, &error), qPrintable(error));
    QXmlStreamReader xml(readAll(stem + ".svg"));
    int elements = 0;
    bool has_title = false;
    while (!xml.atEnd()) {
      if (xml.readNext() == QXmlStreamReader::StartElement) ++elements;
      if (xml.isCharacters() && xml.text().contains(QStringLiteral("Head atlas"))) has_title = true;
    }
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QVERIFY(elements > 3 * int(v->result().atlas->heads.size()));
    QVERIFY(has_title);
    o.format = FigureOptions::Format::Pdf;
    QVERIFY2(writeFigure(v, stem + ".pdf", o, &error), qPrintable(error));
    QVERIFY(readAll(stem + ".pdf").startsWith("%PDF-"));
    // The CSV; a folder that does not exist is refused with a message.
    QVERIFY(!v->exportCsv(dir.filePath(QStringLiteral("no-such-folder/atlas.csv")), &error));
    QVERIFY(!error.isEmpty());
    error.clear();
    QVERIFY2(v->exportCsv(stem + ".csv", &error), qPrintable(error));
    const std::vector<QStringList> rows = parseCsv(readAll(stem + ".csv"));
    const Atlas& atlas = *v->result().atlas;
    QCOMPARE(int(rows.size()), 1 + int(atlas.heads.size()));
    QCOMPARE(rows[0].value(0), QStringLiteral("block"));
    QCOMPARE(rows[0].size(), 3 + 2 * kHeadStatCount + 2);
    QCOMPARE(rows[0].value(3 + 2 * kHeadStatCount), QStringLiteral("induction"));
    QCOMPARE(rows[0].value(4 + 2 * kHeadStatCount), QStringLiteral("copying"));
    const std::vector<HeadScore> induction = inductionScores(*w->engine()->model());
    for (size_t r = 0; r < atlas.heads.size(); ++r) {
      const AtlasHead& h = atlas.heads[r];
      const QStringList& row = rows[r + 1];
      QCOMPARE(row.value(0), QString::fromLatin1(attentionKindName(h.kind)));
      QCOMPARE(row.value(1).toInt(), h.layer + 1);
      QCOMPARE(row.value(2).toInt(), h.head + 1);
      for (const HeadScore& hs : induction)
        if (hs.kind == h.kind && hs.layer == h.layer && hs.head == h.head) {
          const QString cell = row.value(3 + 2 * kHeadStatCount);
          QVERIFY(std::isnan(hs.value) ? cell.isEmpty()
                                       : std::abs(cell.toDouble() - hs.value) <= 1e-6);
        }
      for (int s = 0; s < kHeadStatCount; ++s) {
        QCOMPARE(rows[0].value(3 + 2 * s),
                 QString::fromLatin1(headStatName(kHeadStats[size_t(s)])) + "_mean");
        const double mean = h.stats[size_t(s)].meanOrNaN();
        const QString cell = row.value(3 + 2 * s);
        if (std::isnan(mean)) {
          QVERIFY(cell.isEmpty());
        } else {
          bool ok = false;
          QVERIFY(std::abs(cell.toDouble(&ok) - mean) <= 1e-6 * std::max(1.0, std::abs(mean)));
          QVERIFY(ok);
        }
      }
    }
  }

  // A training run's checkpoints (the induction task on a 2-layer attention-only decoder, kept
  // every 2 steps): the chart's lines are readTrainingHistory's scores, the slider's step loads
  // that checkpoint as the model of every view (its scores computed again on the loaded model),
  // the exports are the core's CSV and an APNG.
  void trainingHistory() {
    QTemporaryDir dir;
    const QString keep = dir.filePath(QStringLiteral("ck"));
    {
      TrainConfig tc;
      tc.task = "induction";
      tc.task_options.max_len = 6;
      tc.preset = "attn-only-2l";
      tc.steps = 5;
      tc.batch = 8;
      tc.seed = 3;
      Trainer t(tc, makeCpuBackend());
      KeepPlan plan;
      plan.every = 2;  // 0, 2, 4 and the last, 5
      CheckpointKeeper keeper(keep.toStdString(), tc, plan);
      QVERIFY(keeper.keep(t, std::nan("")));
      for (int i = 0; i < tc.steps; ++i) keeper.keep(t, t.step().loss);
    }
    auto w = atlasWindow(QStringLiteral("reorder"));
    AtlasView* v = atlasView(*w);
    QVERIFY(v->openHistory(keep));
    idle(*w);
    QVERIFY2(v->history(), qPrintable(v->historyText()));
    const TrainingHistory direct = readTrainingHistory(keep.toStdString(), {});
    QCOMPARE(v->history()->points.size(), direct.points.size());
    QCOMPARE(int(direct.points.size()), 4);
    // The chart: a line per head over the steps, the induction score by default.
    ScatterPlot* chart = v->historyChart();
    const size_t heads = direct.points.front().induction.size();
    QCOMPARE(chart->points().size(), heads * direct.points.size());
    for (size_t k = 0; k < heads; ++k)
      for (size_t p = 0; p < direct.points.size(); ++p) {
        const ScatterPlot::Point& pt = chart->points()[k * direct.points.size() + p];
        QCOMPARE(pt.x, double(direct.points[p].step));
        QVERIFY(std::abs(pt.y - direct.points[p].induction[k].value) <= 1e-6);
        QCOMPARE(pt.series, int(k));
      }
    QCOMPARE(chart->marker(), 5.0);  // the last step, where the slider starts
    // Another statistic: its values per step.
    v->setHistoryMeasure(2 + int(HeadStat::Previous));
    for (size_t p = 0; p < direct.points.size(); ++p)
      QVERIFY(std::abs(chart->points()[p].y - direct.points[p].stats[0].previous) <= 1e-6);
    // The held-out loss at each position: a line per position.
    v->setHistoryMeasure(2 + kHeadStatCount);
    const size_t positions = direct.points.front().position_loss.size();
    QVERIFY(positions > 2);
    QCOMPARE(chart->points().size(), positions * direct.points.size());
    for (size_t q = 0; q < positions; ++q)
      for (size_t p = 0; p < direct.points.size(); ++p)
        QVERIFY(std::abs(chart->points()[q * direct.points.size() + p].y -
                         direct.points[p].position_loss[q]) <= 1e-9);
    v->setHistoryMeasure(0);
    // The three heads highest at the last step are named at their lines' ends.
    int labels = 0;
    for (const ScatterPlot::Point& pt : chart->points()) labels += !pt.label.isEmpty();
    QCOMPARE(labels, 3);
    // The slider: step 2 becomes the model of every view.
    v->setHistoryStep(1);
    QCOMPARE(chart->marker(), 2.0);
    QVERIFY(v->historyText().contains(QStringLiteral("Step 2")));
    QTest::qWait(400);
    idle(*w);
    settle(*w);
    QVERIFY2(w->engine()->modelSource().endsWith(QStringLiteral("step-000002.safetensors")),
             qPrintable(w->engine()->modelSource()));
    InductionOptions induction;  // as readTrainingHistory measures: halves of the task's length
    induction.length = direct.index.task_options.max_len;
    const std::vector<HeadScore> loaded = inductionScores(*w->engine()->model(), induction);
    QCOMPARE(loaded.size(), heads);
    for (size_t k = 0; k < heads; ++k)
      QVERIFY2(std::abs(loaded[k].value - direct.points[1].induction[k].value) <= 1e-5,
               qPrintable(QStringLiteral("head %1: %2 vs %3 (step 0 %4, step 4 %5)")
                              .arg(k)
                              .arg(loaded[k].value)
                              .arg(direct.points[1].induction[k].value)
                              .arg(direct.points[0].induction[k].value)
                              .arg(direct.points[2].induction[k].value)));
    QVERIFY(v->history());  // the history outlives the model it loaded
    // The exports.
    const QString csv = dir.filePath(QStringLiteral("history.csv"));
    QString error;
    QVERIFY2(v->exportHistoryCsv(csv, &error), qPrintable(error));
    QCOMPARE(readAll(csv), QByteArray::fromStdString(historyHeadCsv(direct)));
    const QString apng = dir.filePath(QStringLiteral("history.png"));
    QVERIFY2(v->exportHistoryApng(apng, &error), qPrintable(error));
    const QByteArray bytes = readAll(apng);
    QVERIFY(bytes.startsWith("\x89PNG\r\n\x1a\n"));
    QVERIFY(bytes.contains("acTL"));
    QVERIFY(!QImage(apng).isNull());  // its first frame reads as a PNG
    // File › Export view draws the chart shown on the left: the history's, with its title.
    v->plots()->setCurrentIndex(1);
    QCOMPARE(v->exportWidget(), static_cast<QWidget*>(chart));
    FigureOptions fo;
    fo.format = FigureOptions::Format::Svg;
    const QString svg = dir.filePath(QStringLiteral("history.svg"));
    QVERIFY2(writeFigure(v, svg, fo, &error), qPrintable(error));
    QVERIFY(readAll(svg).contains("Every head over training"));
    // A folder that holds no checkpoints says so.
    QVERIFY(v->openHistory(dir.path()));
    idle(*w);
    QVERIFY(v->historyText().contains(QStringLiteral("index")));
    // Screenshot of the induction scores over the steps.
    v->setHistoryMeasure(0);
    v->plots()->setCurrentIndex(1);
    QCoreApplication::processEvents();
    QVERIFY(QDir().mkpath(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR)));
    QVERIFY(w->grab().save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/atlas-history.png")));
  }

  // The induction recipe's run (CTest's induction_recipe, its folder in ATTNVIZ_RECIPE_DIR; run
  // alone, the slot says it has no run to read): the timeline shows the jump — no head above 0.3
  // at step 0, one above 0.5 at the end, as readTrainingHistory says — and the slider at the first
  // step past 0.5 opens that checkpoint. Screenshot: build/screenshots/atlas-recipe.png.
  void recipeHistory() {
    const QString keep = qEnvironmentVariable("ATTNVIZ_RECIPE_DIR");
    if (keep.isEmpty()) QSKIP("ATTNVIZ_RECIPE_DIR unset: ctest runs this after induction_recipe");
    auto w = atlasWindow(QStringLiteral("reorder"));
    AtlasView* v = atlasView(*w);
    QVERIFY(v->openHistory(keep));
    idle(*w);
    QVERIFY2(v->history(), qPrintable(v->historyText()));
    const TrainingHistory& h = *v->history();
    auto best = [](const HistoryPoint& p) {
      double m = 0;
      for (const HeadScore& s : p.induction) m = std::max(m, s.value);
      return m;
    };
    QVERIFY(best(h.points.front()) < 0.3);
    QVERIFY(best(h.points.back()) > 0.5);
    const Crossing crossing = firstCrossing(h, 0.5);
    QVERIFY(crossing.step > 0);
    int index = 0;
    while (h.points[size_t(index)].step != crossing.step) ++index;
    v->setHistoryStep(index);
    QCOMPARE(v->historyChart()->marker(), double(crossing.step));
    QTest::qWait(400);
    idle(*w);
    settle(*w);
    QVERIFY(w->engine()->modelSource().endsWith(
        QStringLiteral("step-%1.safetensors").arg(crossing.step, 6, 10, QLatin1Char('0'))));
    v->plots()->setCurrentIndex(1);
    QCoreApplication::processEvents();
    QVERIFY(QDir().mkpath(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR)));
    QVERIFY(w->grab().save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/atlas-recipe.png")));
    v->setHistoryMeasure(2 + kHeadStatCount);
    QCoreApplication::processEvents();
    QVERIFY(w->grab().save(QStringLiteral(ATTNVIZ_SCREENSHOT_DIR "/atlas-recipe-loss.png")));
  }

  // The view on each bundled model, its atlas run on the default corpus (the held-out set), saved
  // to build/screenshots to be looked at: the scatter, the table, the evidence and the projection.
  void screenshots() {
    const QString out = QStringLiteral(ATTNVIZ_SCREENSHOT_DIR);
    QVERIFY(QDir().mkpath(out));
    for (const QString model : {QStringLiteral("toy-translation"), QStringLiteral("reorder"),
                                QStringLiteral("reverse")}) {
      auto w = atlasWindow(model);
      AtlasView* v = atlasView(*w);
      QVERIFY2(runAndWait(*w), qPrintable(model + ": " + v->statusText()));
      const Atlas& atlas = *v->result().atlas;
      v->scatter()->setSelected(-1);
      const AtlasHead& h = atlas.heads.back();
      selectHead(*w, h);
      QCoreApplication::processEvents();
      QVERIFY(w->grab().save(QDir(out).filePath(QStringLiteral("atlas-%1.png").arg(model))));
      // The circuit scores against each other.
      v->setAxes(kHeadStatCount, kHeadStatCount + 1);
      QCoreApplication::processEvents();
      QVERIFY(w->grab().save(QDir(out).filePath(QStringLiteral("atlas-scores-%1.png").arg(model))));
      v->setAxes(int(HeadStat::EntropyNorm), int(HeadStat::Previous));
      v->panels()->setCurrentIndex(1);
      QCoreApplication::processEvents();
      QVERIFY(
          w->grab().save(QDir(out).filePath(QStringLiteral("atlas-evidence-%1.png").arg(model))));
      v->panels()->setCurrentIndex(2);
      QVERIFY(v->projectSelected());
      idle(*w);
      QVERIFY(v->embedding());
      QVERIFY(w->grab().save(QDir(out).filePath(QStringLiteral("atlas-pca-%1.png").arg(model))));
    }
    qInfo("screenshots in %s", qPrintable(out));
  }
};

QTEST_MAIN(AtlasViewTest)
#include "test_atlas_view.moc"

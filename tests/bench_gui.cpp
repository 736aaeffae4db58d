// A benchmark of the application's interactions (not a test: nothing here asserts a time).
// The tutorial's full size (6+6 layers, d_model 512, 8 heads, d_ff 2048, random weights) in the
// main window, offscreen, with a source of N tokens: the time from a key press's action (step
// forward, step back, a layer or head switch, the kind, the mean of the heads, a view switch,
// zoom, hover) until the views have repainted, median and min of several repeats.
// --model PATH opens a model instead (a decoder-only one, such as the GPT-2 small folder
// `tools/make_tutorial_checkpoints.py --bench gpt2-small` writes, gets a prompt of N − target
// tokens and decodes to N positions; its self-attention takes the encoder's part below).
// usage: bench_gui [--tokens 512] [--target 24] [--repeat 15] [--model PATH]
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QMouseEvent>
#include <QScrollArea>
#include <QScrollBar>
#include <QThread>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "arch/weights.h"
#include "compute/cpu_backend.h"
#include "session/engine.h"
#include "shell/main_window.h"
#include "views/attention/attention_view.h"
#include "widgets/heatmap.h"

using namespace attnviz;
using namespace attnviz::gui;

namespace {

int intArg(const QStringList& args, const QString& name, int fallback) {
  const int i = args.indexOf(name);
  return i >= 0 && i + 1 < args.size() ? args[i + 1].toInt() : fallback;
}

// Runs the GUI's event loop until the engine is idle and every pending paint is done.
void settle(MainWindow& w) {
  w.engine()->waitUntilIdle(600000);
  QCoreApplication::processEvents();
  // Until the heatmaps have their pictures: large ones read and pool their cells off the GUI
  // thread.
  QElapsedTimer waited;
  waited.start();
  auto busy = [&] {
    for (const HeatmapWidget* h : w.findChildren<HeatmapWidget*>())
      if (h->isVisible() && h->rendering()) return true;
    return false;
  };
  while (busy() && waited.elapsed() < 600000) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
    QThread::msleep(1);
  }
  w.repaint();  // paint now, as a visible window would on the next frame
  QCoreApplication::processEvents();
}

struct Timing {
  double median = 0, min = 0;
};

Timing measure(int repeat, const std::function<void()>& act, MainWindow& w) {
  std::vector<double> ms;
  for (int i = 0; i < repeat; ++i) {
    QElapsedTimer t;
    t.start();
    act();
    settle(w);
    ms.push_back(t.nsecsElapsed() / 1e6);
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms.front()};
}

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM",
          qgetenv("QT_QPA_PLATFORM").isEmpty() ? "offscreen" : qgetenv("QT_QPA_PLATFORM"));
  QApplication app(argc, argv);
  const QStringList args = app.arguments();
  const int tokens = intArg(args, "--tokens", 512), target = intArg(args, "--target", 24),
            repeat = intArg(args, "--repeat", 15);

  const int i_model = args.indexOf(QStringLiteral("--model"));
  const QString model_path = i_model >= 0 && i_model + 1 < args.size() ? args[i_model + 1] : "";

  MainWindow::Options o;
  o.use_settings = false;
  MainWindow w(o);
  w.resize(1400, 900);
  w.show();
  ModelConfig tutorial = tutorialSizeConfig();  // its sinusoid table as long as the input
  tutorial.max_len = std::max(tutorial.max_len, std::max(tokens, target) + 2);
  auto model = std::make_shared<Model>(
      model_path.isEmpty() ? makeRandomModel(tutorial, 1234) : loadModel(model_path.toStdString()),
      makeCpuBackend());
  const ModelConfig& c = model->config();
  w.engine()->setModel(
      model, model_path.isEmpty() ? QStringLiteral("tutorial size (random weights)") : model_path);
  // A source of `tokens` ordinary words; a decoder-only model's prompt leaves room for `target`.
  const bool encoder = c.hasEncoder();
  const std::vector<std::string>& vocab = encoder ? c.src_vocab : c.tgt_vocab;
  const int typed = encoder ? tokens : std::max(1, tokens - target);
  QStringList words;
  for (int i = 0; i < typed; ++i)
    words << QString::fromStdString(vocab[size_t(3 + i % std::max<size_t>(1, vocab.size() - 10))]);
  w.engine()->setMaxNewTokens(target);
  QString failure;  // the run's refusal, if any: said, and nothing is measured
  QObject::connect(w.engine(), &Engine::failed, [&](const QString& title, const QString& message) {
    failure = title + ": " + message;
  });
  QElapsedTimer t;
  t.start();
  w.engine()->run(words.join(' '), QString());
  settle(w);
  std::printf("model: %s, %d+%d layers, d_model %d, %d heads, d_ff %d; %s\n",
              model_path.isEmpty() ? "tutorial size" : model_path.toLocal8Bit().constData(),
              c.n_encoder_layers, c.n_decoder_layers, c.d_model, c.n_heads, c.d_ff,
              model->backend().description().c_str());
  std::printf("first run (%s %d tokens, decode %d): %.0f ms\n", encoder ? "encode" : "prompt of",
              typed, target, t.nsecsElapsed() / 1e6);
  auto snap = w.engine()->snapshot();
  if (!failure.isEmpty() || !snap || !snap->trace) {
    std::fprintf(stderr, "bench_gui: the run gave no trace%s%s\n", failure.isEmpty() ? "" : ": ",
                 failure.toLocal8Bit().constData());
    return 1;
  }
  std::printf("target positions: %d\n", snap->trace->tgt_len);
  auto row = [&](const char* what, Timing s) {
    std::printf("  %-34s %8.1f ms  (min %.1f)\n", what, s.median, s.min);
    std::fflush(stdout);
  };
  std::printf("median of %d (the action until the views have repainted):\n", repeat);
  // Step back then forward again: each measured separately.
  std::vector<double> back, fwd;
  Timing b = measure(
      repeat, [&] { w.engine()->stepBack(); }, w);
  row("step back (one position, repeated)", b);
  Timing f = measure(
      repeat, [&] { w.engine()->stepForward(); }, w);
  row("step forward (one position, repeated)", f);
  for (const char* view : {"attention", "overview", "masks", "decoding"}) {
    w.setCurrentView(QString::fromLatin1(view));
    settle(w);
    Timing s = measure(
        repeat,
        [&] {
          AttentionSelection sel = w.state()->selection();
          sel.layer = (sel.layer + 1) % c.n_decoder_layers;
          w.state()->setSelection(sel);
        },
        w);
    row((std::string("layer switch, ") + view + " view").c_str(), s);
    Timing h = measure(
        repeat,
        [&] {
          AttentionSelection sel = w.state()->selection();
          sel.head = sel.head + 1 >= c.n_heads ? -1 : sel.head + 1;
          w.state()->setSelection(sel);
        },
        w);
    row((std::string("head switch, ") + view + " view").c_str(), h);
    Timing sb = measure(
        repeat, [&] { w.engine()->stepBack(); }, w);
    row((std::string("step back, ") + view + " view").c_str(), sb);
    Timing sf = measure(
        repeat, [&] { w.engine()->stepForward(); }, w);
    row((std::string("step forward, ") + view + " view").c_str(), sf);
  }
  // View switches, each view shown in turn.
  const char* views[] = {"attention", "overview", "masks", "decoding"};
  int next_view = 0;
  row("view switch (the next of 4 views)",
      measure(
          repeat,
          [&] {
            next_view = (next_view + 1) % 4;
            w.setCurrentView(QString::fromLatin1(views[next_view]));
          },
          w));
  // The encoder's self-attention (a decoder-only model's own): the n × n matrices.
  w.setCurrentView(QStringLiteral("attention"));
  settle(w);
  auto select = [&](auto change) {
    AttentionSelection sel = w.state()->selection();
    change(sel);
    w.state()->setSelection(sel);
  };
  const AttentionKind square = encoder ? AttentionKind::EncoderSelf : AttentionKind::DecoderSelf;
  const int square_layers = encoder ? c.n_encoder_layers : c.n_decoder_layers;
  const std::string square_name = encoder ? "encoder self" : "decoder self";
  if (encoder)
    row("kind switch to encoder self-attention",
        measure(
            1, [&] { select([&](AttentionSelection& s) { s.kind = square; }); }, w));
  for (const char* view : {"attention", "overview", "masks"}) {
    w.setCurrentView(QString::fromLatin1(view));
    settle(w);
    const std::string v = ", " + square_name + ", " + view + " view";
    row(("layer switch" + v).c_str(),
        measure(
            repeat,
            [&] {
              select([&](AttentionSelection& s) { s.layer = (s.layer + 1) % square_layers; });
            },
            w));
    row(("head switch" + v).c_str(),
        measure(
            repeat,
            [&] { select([&](AttentionSelection& s) { s.head = (s.head + 1) % c.n_heads; }); }, w));
    row(("mean of heads on/off" + v).c_str(),
        measure(
            repeat, [&] { select([&](AttentionSelection& s) { s.head = s.head < 0 ? 0 : -1; }); },
            w));
  }
  w.setCurrentView(QStringLiteral("attention"));
  settle(w);
  HeatmapWidget* hm = w.attentionView()->heatmap();
  row(("zoom in, " + square_name).c_str(),
      measure(
          repeat, [&] { w.action(QStringLiteral("zoomIn"))->trigger(); }, w));
  row(("zoom out, " + square_name).c_str(),
      measure(
          repeat, [&] { w.action(QStringLiteral("zoomOut"))->trigger(); }, w));
  row(("zoom to fit, " + square_name).c_str(),
      measure(
          repeat, [&] { w.action(QStringLiteral("zoomFit"))->trigger(); }, w));
  int x = 0;
  row("hover (mouse move over the cells)",
      measure(
          repeat,
          [&] {
            x = (x + 37) % std::max(1, hm->width() / 2);
            QMouseEvent move(QEvent::MouseMove, QPointF(hm->width() / 4 + x, hm->height() / 2),
                             hm->mapToGlobal(QPointF(hm->width() / 4 + x, hm->height() / 2)),
                             Qt::NoButton, Qt::NoButton, Qt::NoModifier);
            QApplication::sendEvent(hm, &move);
          },
          w));
  // Zoomed in from the fit: the time until the visible cells are drawn one a pixel or finer
  // (a matrix larger than the screen is pooled; zooming reads the visible cells again).
  w.action(QStringLiteral("zoomFit"))->trigger();
  settle(w);
  const QString shots = [&] {
    const int i = args.indexOf(QStringLiteral("--screenshots"));
    return i >= 0 && i + 1 < args.size() ? args[i + 1] : QString();
  }();
  auto shoot = [&](const QString& name) {
    if (shots.isEmpty()) return;
    QDir().mkpath(shots);
    const QString path = shots + QLatin1Char('/') + name;
    if (w.grab().save(path)) std::printf("  wrote %s\n", qPrintable(path));
  };
  shoot(QStringLiteral("long-fit.png"));
  if (hm->poolFactor() > 1) {
    QElapsedTimer t;
    t.start();
    for (int k = 0; k < 4; ++k) w.action(QStringLiteral("zoomIn"))->trigger();
    settle(w);
    auto* scroll = w.attentionView()->heatmapView()->scrollArea();
    scroll->horizontalScrollBar()->setValue(scroll->horizontalScrollBar()->maximum() / 2);
    scroll->verticalScrollBar()->setValue(scroll->verticalScrollBar()->maximum() / 2);
    while (hm->windowPoolFactor() != 1 && t.elapsed() < 60000) {
      QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
      QThread::msleep(1);
    }
    w.repaint();
    std::printf("  %-38s %6.1f ms  (pooled %d × %d; now one cell an element: %s)\n",
                "zoom in to 5 px cells, drawn cell by cell", t.nsecsElapsed() / 1e6,
                hm->poolFactor(), hm->poolFactor(), hm->windowPoolFactor() == 1 ? "yes" : "no");
    shoot(QStringLiteral("long-zoomed.png"));
  }
  return 0;
}

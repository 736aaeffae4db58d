// attnviz: the Qt application's entry point. Parses the command line (--model, --src, --screenshot
// …), opens the main window and, with --screenshot, saves it after the first run (drawn with the
// bundled fonts) and exits.
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QIcon>
#include <QSettings>
#include <QTimer>
#include <cstdio>

#include "shell/i18n.h"
#include "shell/main_window.h"
#include "shell/view_registry.h"
#include "views/view.h"
#include "widgets/fonts.h"

using attnviz::gui::MainWindow;

int main(int argc, char** argv) {
  // A screenshot, --help and --version need no screen: fall back to the offscreen platform when
  // there is none.
  for (int i = 1; i < argc; ++i) {
    const QByteArray arg(argv[i]);
    const bool screenless = arg.startsWith("--screenshot") || arg == "--help" || arg == "-h" ||
                            arg == "--help-all" || arg == "-?" || arg == "--version" || arg == "-v";
    if (screenless && qEnvironmentVariableIsEmpty("DISPLAY") &&
        qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
        qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
      qputenv("QT_QPA_PLATFORM", "offscreen");
  }

  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("attnviz"));
  QApplication::setOrganizationName(QStringLiteral("attnviz"));
  QApplication::setApplicationVersion(QStringLiteral(ATTNVIZ_VERSION));
  QApplication::setDesktopFileName(QStringLiteral("attnviz"));
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/attnviz.svg")));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("See inside Transformers."));
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption model({"m", "model"},
                           "A bundled model's name, or a model file or folder (.safetensors, a "
                           "PyTorch .pt/.pth/.bin checkpoint, a Hugging Face folder).",
                           "NAME|PATH");
  QCommandLineOption config("config", "Config JSON for the model (when not inside it).", "FILE");
  QCommandLineOption src({"s", "src"}, "Source sentence for the first run.", "TEXT");
  QCommandLineOption tgt(
      {"t", "tgt"}, "Target prefix for the first run (a decoder-only model: its prompt).", "TEXT");
  QCommandLineOption backend("backend", "Compute backend: cpu or cuda.", "NAME");
  QCommandLineOption view("view",
                          QStringLiteral("View shown first: %1.")
                              .arg(attnviz::gui::viewNames().join(QStringLiteral(", "))),
                          "NAME");
  QCommandLineOption screenshot(
      "screenshot", "Save the window as PNG after the first run, then exit.", "FILE.png");
  QCommandLineOption size("size", "Window size, e.g. 1400x900.", "WxH");
  QCommandLineOption no_settings("no-settings", "Neither read nor write the saved settings.");
  QCommandLineOption presentation("presentation", "Presentation mode: large fonts (F11).");
  QCommandLineOption lang("lang",
                          QStringLiteral("The interface's language: %1 (default: the saved choice "
                                         "of View > Language, else the system's).")
                              .arg(attnviz::gui::availableLanguages().join(QStringLiteral(", "))),
                          "CODE");
  parser.addOptions(
      {model, config, src, tgt, backend, view, screenshot, size, no_settings, presentation, lang});
  parser.process(app);

  // A screenshot looks the same on every machine: drawn with the fonts attnviz ships.
  if (parser.isSet(screenshot) && !attnviz::gui::usePinnedFonts())
    std::fprintf(stderr, "attnviz: the bundled fonts could not be loaded\n");

  // The language, before any window is made (every tr() then finds it): --lang, else the saved
  // choice, else the system's (LANGUAGE, LANG …). The command line itself stays English.
  const bool use_settings = !parser.isSet(no_settings) && !parser.isSet(screenshot);
  const QString saved_lang = use_settings
                                 ? QSettings(QStringLiteral("attnviz"), QStringLiteral("attnviz"))
                                       .value(QStringLiteral("language"))
                                       .toString()
                                 : QString();
  const QString language = attnviz::gui::chooseLanguage(parser.value(lang), saved_lang);
  if (parser.isSet(lang) && attnviz::gui::matchLanguage(parser.value(lang)).isEmpty())
    std::fprintf(stderr, "attnviz: no translation for --lang %s; using English\n",
                 qPrintable(parser.value(lang)));
  if (!attnviz::gui::installTranslators(language))
    std::fprintf(stderr, "attnviz: the %s translation could not be loaded; using English\n",
                 qPrintable(language));

  MainWindow::Options opts;
  opts.model = parser.value(model);
  opts.config = parser.value(config);
  opts.src = parser.value(src);
  opts.tgt = parser.value(tgt);
  opts.backend = parser.value(backend);
  opts.view = parser.value(view);
  opts.use_settings = use_settings;
  opts.presentation = parser.isSet(presentation);

  MainWindow window(opts);
  if (parser.isSet(size)) {
    const QStringList wh = parser.value(size).split('x');
    if (wh.size() == 2) window.resize(wh[0].toInt(), wh[1].toInt());
  } else if (parser.isSet(screenshot)) {
    window.resize(1400, 900);
  }
  window.show();

  if (parser.isSet(screenshot)) {
    const QString file = parser.value(screenshot);
    QObject::connect(&window, &MainWindow::firstRunFinished, &window, [&window, file] {
      // Give off-thread heatmap renders a moment, then draw the window as it is.
      window.engine()->waitUntilIdle(120000);
      if (auto* v = window.currentView()) v->refreshNow();
      QTimer::singleShot(400, &window, [&window, file] {
        const bool ok = window.grab().save(file, "PNG");
        std::fprintf(ok ? stdout : stderr, ok ? "wrote %s\n" : "could not write %s\n",
                     qPrintable(QDir::toNativeSeparators(QFileInfo(file).absoluteFilePath())));
        QApplication::exit(ok ? 0 : 1);
      });
    });
  }
  window.start();
  return app.exec();
}

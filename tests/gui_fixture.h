// The main window as the GUI suites (test_gui, test_teaching, test_tour, test_train_view) open it,
// offscreen: 1400 × 900 and shown; openWindow() also loads the model and waits for its first run.
#pragma once

#include <QApplication>
#include <QCoreApplication>
#include <QSignalSpy>
#include <QString>
#include <QtTest/QtTest>
#include <memory>

#include "shell/main_window.h"

namespace gui_fixture {

using attnviz::gui::MainWindow;

// A test model of tests/data by its name ("bert003").
inline QString dataModel(const char* name) {
  return QStringLiteral(ATTNVIZ_TEST_DATA "/%1.safetensors").arg(QLatin1String(name));
}

// A window, shown and not started: `model`, `src` and `view` as the command line gives them;
// use_settings reads and writes the suite's QSettings.
inline std::unique_ptr<MainWindow> showWindow(bool use_settings, const QString& model = {},
                                              const QString& src = {}, const QString& view = {}) {
  MainWindow::Options o;
  o.use_settings = use_settings;
  o.model = model;
  o.src = src;
  o.view = view;
  auto w = std::make_unique<MainWindow>(o);
  w->resize(1400, 900);
  w->show();
  return w;
}

// Opens the window's first model, runs its first input and waits until the engine is idle.
inline bool startAndWait(MainWindow& w, int timeout_ms = 60000) {
  QSignalSpy done(&w, &MainWindow::firstRunFinished);
  w.start();
  if (done.isEmpty() && !done.wait(timeout_ms)) return false;
  return w.engine()->waitUntilIdle(timeout_ms);
}

// A window on `model` (without the saved settings), its first run done, showing `view`.
inline std::unique_ptr<MainWindow> openWindow(const QString& model, const QString& src = {},
                                              const QString& view = {}) {
  auto w = showWindow(false, model, src, view);
  startAndWait(*w);
  return w;
}

// Waits until no job runs, then lets the window and the views take its result.
inline bool idle(MainWindow& w) {
  const bool ok = w.engine()->waitUntilIdle(60000);
  QCoreApplication::processEvents();
  return ok;
}

// Lets the jobs that views queue when shown (Before / after, Search) start, then waits for them.
inline bool settle(MainWindow& w) {
  QTest::qWait(20);
  return idle(w);
}

// A window that has the keyboard, as under a window manager after a click on it.
inline void activate(MainWindow& w) {
  w.activateWindow();
  QApplication::setActiveWindow(&w);
  QVERIFY(QTest::qWaitForWindowActive(&w));
}

}  // namespace gui_fixture

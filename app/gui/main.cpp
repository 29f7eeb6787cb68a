// transportlens: the desktop app.
//   transportlens                      opens the built-in default session (the bundled checkpoint's [CLS]
//                                      maps where this build runs models, else a live point-cloud plan)
//   transportlens SESSION.json         opens that session
//   transportlens --restore-autosave=ask|yes|no
//                                      after a run that was killed or crashed, whether to restore the session it
//                                      autosaved (widgets/shell/session_autosave.h); default: ask
//   transportlens --measure-latency [--scenario cloud|model] [--n 512] [--op SPEC] [--param NAME]
//                   [--device cpu|cuda|auto] [--precision f32|f64] [--moves 30] [--json FILE]
//                                      change-to-screen latency benchmark (latency_benchmark.h)
#include <QApplication>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QStatusBar>
#include <QSurfaceFormat>
#include <iostream>
#include <optional>

#include "common/errors.h"
#include "common/large_buffers.h"
#include "latency_benchmark.h"
#include "openmp_wait_policy.h"
#include "quit_on_signal.h"
#include "widgets/shell/main_window.h"
#include "widgets/shell/restore_prompt.h"
#include "widgets/shell/session_autosave.h"
#include "widgets/shell/session_files.h"
#ifdef TL_WITH_TORCH
#include "model/vit_model_backend.h"
#endif

namespace {

// VTK 9.1's OpenGL2 backend needs a 3.2 core context; it must be the default before QApplication exists.
void setDefaultSurfaceFormat() {
  QSurfaceFormat format;
  format.setRenderableType(QSurfaceFormat::OpenGL);
  format.setVersion(3, 2);
  format.setProfile(QSurfaceFormat::CoreProfile);
  format.setDepthBufferSize(24);
  format.setStencilBufferSize(8);
  format.setSwapBehavior(QSurfaceFormat::DoubleBuffer);
  QSurfaceFormat::setDefaultFormat(format);
}

// After a run that was killed or crashed, the session it autosaved replaces the one asked for if the answer is
// yes. Returns what the status bar should say about it (empty: nothing).
QString offerRecovery(tl::SessionAutosave& autosave, tl::RestoreAnswer answer, tl::Session& session, QString& path) {
  if (!autosave.active()) return QObject::tr("Autosave is off: %1").arg(autosave.offReason());
  if (!autosave.hasRecoverable()) return {};
  if (!tl::shouldRestore(answer, autosave.path())) {
    autosave.discard();
    return {};
  }
  try {
    session = autosave.restore();
    path.clear();  // a restored session is unsaved: Save asks where, never overwrites the file it came from
    return QObject::tr("Restored the autosaved session");
  } catch (const tl::Error& e) {
    return QObject::tr("Could not restore the autosaved session: %1").arg(e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  tl::preferPassiveOpenMpWaits(argv);
  // Before any thread: n × n buffers, allocated on the Engine's worker thread, reuse their pages
  // (common/large_buffers.h).
  tl::keepFreedBuffers(tl::LargeBufferThreads::Any);
#ifdef TL_WITH_TORCH
  tl::installVitModelBackend();  // checkpoint sessions
#endif
  setDefaultSurfaceFormat();
  QApplication app(argc, argv);
  QApplication::setApplicationName("TransportLens");
  QApplication::setApplicationVersion("0.1.0");

  QCommandLineParser parser;
  parser.setApplicationDescription("TransportLens: a lab for doubly-stochastic attention");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("session", "session file (.json) to open; default: the built-in session");
  QCommandLineOption measure("measure-latency", "measure slider-to-heatmap latency, print JSON and exit");
  QCommandLineOption scenario("scenario",
                              "what --measure-latency changes: cloud (the T slider on a point cloud of --n points) "
                              "or model (layer, head and T on the bundled checkpoint session); default cloud",
                              "cloud|model", "cloud");
  QCommandLineOption n("n", "number of points for --measure-latency (default 512)", "n", "512");
  QCommandLineOption op("op", "operator of the cloud scenario, e.g. lot:r=32 (default sinkhorn:T=10)", "SPEC",
                        "sinkhorn:T=10");
  QCommandLineOption param("param", "the operator parameter whose slider moves (default T, else its first numeric)",
                           "NAME");
  QCommandLineOption device("device", "cpu, cuda or auto for the cloud scenario (default cpu)", "DEVICE", "cpu");
  QCommandLineOption precision("precision", "f32 or f64 for --measure-latency (default: the session's, f32)",
                               "PRECISION");
  QCommandLineOption moves("moves", "number of timed moves (default 30)", "N", "30");
  QCommandLineOption json("json", "also write the --measure-latency report to FILE", "FILE");
  QCommandLineOption restore("restore-autosave",
                             "after a run that was killed or crashed, restore the session it autosaved: ask (a "
                             "question at start), yes or no (answered in advance, for scripts); default ask",
                             "ask|yes|no", "ask");
  parser.addOptions({measure, scenario, n, op, param, device, precision, moves, json, restore});
  parser.process(app);

  try {
    if (parser.isSet(measure)) {
      tl::LatencyOptions options;
      bool ok = false;
      options.n = parser.value(n).toInt(&ok);
      if (!ok || options.n < 1) {
        std::cerr << "transportlens: --n needs a positive integer\n";
        return 2;
      }
      options.moves = parser.value(moves).toInt(&ok);
      if (!ok || options.moves < 1) {
        std::cerr << "transportlens: --moves needs a positive integer\n";
        return 2;
      }
      options.op = parser.value(op);
      options.param = parser.value(param);
      options.device = tl::parseDeviceChoice(parser.value(device).toStdString());
      if (parser.isSet(precision)) {
        const QString p = parser.value(precision);
        if (p != "f32" && p != "f64") {
          std::cerr << "transportlens: --precision is f32 or f64\n";
          return 2;
        }
        options.precision = tl::parsePrecision(p.toStdString());
      }
      if (parser.value(scenario) == "model") options.scenario = tl::LatencyScenario::Model;
      else if (parser.value(scenario) != "cloud") {
        std::cerr << "transportlens: --scenario is cloud or model\n";
        return 2;
      }
      options.jsonPath = parser.value(json);
      return tl::runLatencyBenchmark(options);
    }
    const QStringList args = parser.positionalArguments();
    if (args.size() > 1) {
      std::cerr << "transportlens: give at most one session file\n";
      return 2;
    }
    const std::optional<tl::RestoreAnswer> restoreAnswer = tl::parseRestoreAnswer(parser.value(restore));
    if (!restoreAnswer) {
      std::cerr << "transportlens: --restore-autosave is ask, yes or no\n";
      return 2;
    }
    tl::Session session = args.isEmpty() ? tl::defaultSession() : tl::Session::load(args.front().toStdString());
    QString sessionPath = args.isEmpty() ? QString() : args.front();
    tl::SessionAutosave autosave;
    const QString recoveryNote = offerRecovery(autosave, *restoreAnswer, session, sessionPath);
    tl::MainWindow window(session, sessionPath);
    if (!recoveryNote.isEmpty()) window.statusBar()->showMessage(recoveryNote, 15000);
    QObject::connect(&autosave, &tl::SessionAutosave::saveFailed, &window, [&window](const QString& message) {
      window.statusBar()->showMessage(QObject::tr("Autosave failed: %1").arg(message), 15000);
    });
    QObject::connect(&window, &tl::MainWindow::sessionChanged, &autosave, &tl::SessionAutosave::scheduleSave);
    autosave.watch([&window] { return window.currentSession(); });
    tl::quitOnTerminationSignals();
    window.show();
    return app.exec();
  } catch (const tl::Error& e) {
    std::cerr << "transportlens: " << e.what() << "\n";
    if (QGuiApplication::platformName() != "offscreen") QMessageBox::critical(nullptr, "TransportLens", e.what());
    return 1;
  }
}

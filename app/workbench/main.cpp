// pipemare-workbench: the GUI. Without a display (DISPLAY and WAYLAND_DISPLAY unset, no
// QT_QPA_PLATFORM) it runs the default experiment headless and prints where it was stored.
#include <QApplication>
#include <QTimer>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/cli/commands.h"
#include "core/util/paths.h"
#include "ui/designer/designer_view.h"
#include "ui/main/main_window.h"

namespace {
std::atomic<bool> gStop{false};
extern "C" void onSignal(int) { gStop.store(true); }

bool hasDisplay() {
  for (const char* v : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) {
    const char* s = std::getenv(v);
    if (s && *s) return true;
  }
  return false;
}

std::string argValue(int argc, char** argv, const std::string& flag) {
  for (int i = 1; i + 1 < argc; ++i)
    if (flag == argv[i]) return argv[i + 1];
  return "";
}
}  // namespace

int main(int argc, char** argv) {
  std::string db = argValue(argc, argv, "--db");
  if (db.empty()) db = pm::defaultDatabasePath();
  if (!hasDisplay()) {
    std::string experiment = argValue(argc, argv, "--experiment");
    if (experiment.empty()) experiment = std::string(PIPEMARE_SOURCE_DIR) + "/experiments/quickstart.json";
    std::fprintf(stderr, "pipemare-workbench: no display; running the default experiment headless: %s\n",
                 experiment.c_str());
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    pm::cli::RunOptions o;
    o.file = experiment;
    o.db = db;
    return pm::cli::runCommand(o, &gStop);
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName("PipeMare");
  QApplication::setApplicationName("PipeMare Workbench");
  pm::ui::MainWindow w(db, QString::fromStdString(std::string(PIPEMARE_SOURCE_DIR) + "/experiments"));
  // --experiment FILE: open it in the designer.
  const std::string experiment = argValue(argc, argv, "--experiment");
  if (!experiment.empty()) w.designer()->loadFile(QString::fromStdString(experiment));
  // --run: start the designed experiment at once (opens the Live tab).
  bool runNow = false;
  for (int i = 1; i < argc; ++i) runNow = runNow || std::string(argv[i]) == "--run";
  if (runNow) QTimer::singleShot(0, w.designer(), [&w] { w.designer()->requestRun(); });
  // --run-id ID: select that run in the Runs tab and show its trace in the Timeline tab.
  const std::string runId = argValue(argc, argv, "--run-id");
  if (!runId.empty()) {
    char* end = nullptr;
    const long long id = std::strtoll(runId.c_str(), &end, 10);
    if (end == runId.c_str() || *end != '\0' || !w.openRun(id, /*show=*/false))
      std::fprintf(stderr, "pipemare-workbench: no run '%s' in the store\n", runId.c_str());
  }
  // --tab NAME: open on that tab (e.g. --tab compare, --tab sweeps, --tab timeline).
  const std::string tab = argValue(argc, argv, "--tab");
  if (!tab.empty() && !w.selectTab(QString::fromStdString(tab)))
    std::fprintf(stderr, "pipemare-workbench: no tab named '%s'\n", tab.c_str());
  w.show();
  return app.exec();
}

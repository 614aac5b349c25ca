// pipemare-workbench: the GUI. Without a display (DISPLAY and WAYLAND_DISPLAY unset, no
// QT_QPA_PLATFORM) it runs the experiment (default: experiments/quickstart.json) headless, as a
// `pipemare run` child process, which prints where it was stored. It never trains in its own process
// and does not link the engine.
#include <QApplication>
#include <QCoreApplication>
#include <QProcess>
#include <QTimer>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <signal.h>
#include <string>
#include <vector>

#include "core/util/paths.h"
#include "core/util/strings.h"
#include "core/util/system_info.h"
#include "ui/designer/designer_view.h"
#include "ui/live/live_panel.h"
#include "ui/main/about_box.h"
#include "ui/live/run_process.h"
#include "ui/main/main_window.h"
#include "ui/main/signal_notifier.h"
#include "ui/planner/planner_panel.h"

namespace {

bool hasDisplay() {
  for (const char* v : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) {
    const char* s = std::getenv(v);
    if (s && *s) return true;
  }
  return false;
}

constexpr const char* kUsage =
    "usage: pipemare-workbench [--db FILE] [--experiment FILE] [--run | --predict-stability] [--run-id ID]\n"
    "                          [--compare IDS [--metric KEY]] [--tab NAME]\n"
    "  --db FILE          the run store (default: the user's data folder, pipemare/runs.db)\n"
    "  --experiment FILE  open this experiment (a file, or a preset by name) in the designer; without a\n"
    "                     display, run it headless\n"
    "  --run              start the designed experiment at once (Live tab)\n"
    "  --predict-stability  predict the design's stability edge at once (Design tab: the analytic bound\n"
    "                     and the probe, minutes)\n"
    "  --run-id ID        select this stored run (Runs tab) and show its trace (Timeline tab)\n"
    "  --compare IDS      lay these stored runs side by side (Compare tab), e.g. --compare 3,5,8\n"
    "  --metric KEY       the metric --compare plots, e.g. eval/accuracy (default train/loss); KEY,SECOND\n"
    "                     adds a second on the right axis, e.g. train/loss,eval/accuracy\n"
    "  --tab NAME         open on this tab: design, live, runs, sweeps, compare or timeline\n"
    "  -h, --help         show this text\n"
    "Without a display (DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM all unset) the experiment\n"
    "(default: experiments/quickstart.json) runs headless: `pipemare run` (beside this program) in a\n"
    "child process, its progress on this terminal; Ctrl-C or SIGTERM stops the run as `pipemare run`'s\n"
    "Ctrl-C does, and the exit code is the run's.\n"
    "Options with a single dash (-platform offscreen, -style fusion, ...) are Qt's.\n";

struct Args {
  std::string db, experiment, runId, tab, compare, metric;
  std::vector<int64_t> compareIds;
  bool run = false, help = false, predictStability = false;
};

// Our options; a single-dash option (and the word after it) is left to Qt. Returns an error
// message for a usage error, empty when the arguments are fine.
std::string parseArgs(int argc, char** argv, Args& a) {
  const std::map<std::string, std::string*> valued = {
      {"--db", &a.db}, {"--experiment", &a.experiment}, {"--run-id", &a.runId}, {"--tab", &a.tab},
      {"--compare", &a.compare}, {"--metric", &a.metric}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      a.help = true;
    } else if (arg == "--run") {
      a.run = true;
    } else if (arg == "--predict-stability") {
      a.predictStability = true;
    } else if (auto it = valued.find(arg); it != valued.end()) {
      if (i + 1 >= argc || std::string(argv[i + 1]).empty())
        return "option " + arg + " needs a value";
      *it->second = argv[++i];
    } else if (arg.rfind("--", 0) == 0) {
      return "unknown option '" + arg + "'";
    } else if (arg.size() > 1 && arg[0] == '-') {
      if (i + 1 < argc && argv[i + 1][0] != '-') ++i;  // Qt's option and its value
    } else {
      return "unexpected argument '" + arg + "'";
    }
  }
  if (!a.tab.empty()) {
    std::string lower;
    for (char c : a.tab) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    bool known = false;
    for (const char* t : {"design", "live", "runs", "sweeps", "compare", "timeline"}) known = known || lower == t;
    if (!known) return "--tab: no tab named '" + a.tab + "' (design, live, runs, sweeps, compare, timeline)";
  }
  if (!a.runId.empty()) {
    char* end = nullptr;
    std::strtoll(a.runId.c_str(), &end, 10);
    if (end == a.runId.c_str() || *end != '\0') return "--run-id expects a run id (an integer), found '" + a.runId + "'";
  }
  if (!a.compare.empty()) {
    // Run ids are positive integers, digits only (no sign, no spaces), separated by commas.
    const std::string usage = "--compare expects run ids separated by commas (e.g. 3,5,8), found ";
    for (const std::string& piece : pm::split(a.compare, ',')) {
      if (piece.empty()) return usage + "an empty id in '" + a.compare + "'";
      const bool digits = piece.find_first_not_of("0123456789") == std::string::npos;
      const long long id = digits && piece.size() <= 18 ? std::stoll(piece) : 0;
      if (id <= 0) return usage + "'" + piece + "' in '" + a.compare + "' (a run id is a positive integer)";
      a.compareIds.push_back(id);
    }
  }
  if (!a.metric.empty() && a.compare.empty()) return "--metric chooses what --compare plots; give --compare IDS too";
  if (a.predictStability && a.run) return "--predict-stability predicts before a run; not with --run";
  return "";
}

// Without a display: `pipemare run EXPERIMENT --db DB` as a child process, in the foreground. The
// child writes straight to this process's stdout and stderr (on a terminal, `pipemare run` draws its
// progress bar there itself). SIGINT and SIGTERM sent to this process reach the child as SIGINT, the
// run's stop: it finishes the minibatch in progress, writes a checkpoint and records the run as
// stopped. Returns the child's exit code (128 + the signal's number when a signal ended it), 1 when
// it cannot be started.
int runHeadless(int& argc, char** argv, const std::string& experiment, const std::string& db) {
  QCoreApplication app(argc, argv);  // the child's end and the signals arrive through its event loop
  const QString binary = pm::ui::defaultPipemareBinary();
  QProcess child;
  child.setProcessChannelMode(QProcess::ForwardedChannels);
  child.setInputChannelMode(QProcess::ForwardedInputChannel);
  // Made before the child starts: from then on a signal stops the run instead of ending this
  // process while the run goes on.
  pm::ui::SignalNotifier stopOnSignal({SIGINT, SIGTERM});
  QObject::connect(&stopOnSignal, &pm::ui::SignalNotifier::received, &child, [&child](int signalNumber) {
    if (child.state() != QProcess::Running) return;
    const qint64 pid = child.processId();
    std::fprintf(stderr, "pipemare-workbench: %s: stopping the run (pipemare run, pid %lld)\n", strsignal(signalNumber),
                 static_cast<long long>(pid));
    ::kill(static_cast<pid_t>(pid), SIGINT);
  });
  QObject::connect(&child, &QProcess::finished, &app, [](int code, QProcess::ExitStatus how) {
    // After a crash exit QProcess's exit code is the number of the signal that ended the child.
    QCoreApplication::exit(how == QProcess::NormalExit ? code : 128 + code);
  });
  // An argument vector, never a shell string.
  child.start(binary, {QStringLiteral("run"), QString::fromStdString(experiment), QStringLiteral("--db"),
                       QString::fromStdString(db)});
  if (!child.waitForStarted(-1)) {
    std::fprintf(stderr, "pipemare-workbench: cannot start the engine %s: %s\n", binary.toStdString().c_str(),
                 child.errorString().toStdString().c_str());
    return 1;
  }
  return app.exec();
}
}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (const std::string error = parseArgs(argc, argv, args); !error.empty()) {
    std::fprintf(stderr, "pipemare-workbench: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  if (args.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  // A preset may be named without its path, as for `pipemare run` (--experiment quickstart).
  args.experiment = pm::resolveExperimentArgument(args.experiment);
  std::string db = args.db;
  if (db.empty()) db = pm::defaultDatabasePath();
  if (!hasDisplay()) {
    // The viewing options need the window; the engine's command line compares without one.
    if (!args.compareIds.empty()) {
      std::string ids;
      for (int64_t id : args.compareIds) ids += " " + std::to_string(id);
      std::fprintf(stderr, "pipemare-workbench: --compare needs a display (the Compare tab); without one, use "
                           "`pipemare --db %s compare%s`\n", db.c_str(), ids.c_str());
      return 2;
    }
    std::string experiment = args.experiment;
    // The quickstart preset: installed beside this program (share/pipemare/experiments), or the
    // source checkout's when run from the build tree (core/util/paths.h).
    if (experiment.empty()) experiment = pm::presetDirectory() + "/quickstart.json";
    std::fprintf(stderr, "pipemare-workbench: no display; running the experiment headless with pipemare run: %s\n",
                 experiment.c_str());
    std::fflush(stderr);  // before the child's lines, which it writes to the same stream itself
    return runHeadless(argc, argv, experiment, db);
  }
  QApplication app(argc, argv);
  QApplication::setOrganizationName("PipeMare");
  QApplication::setApplicationName("PipeMare Workbench");
  QApplication::setApplicationVersion(QString::fromStdString(pm::projectVersion()));
  // The desktop entry (resources/pipemare-workbench.desktop): Wayland compositors take the window's
  // icon and name from it.
  QApplication::setDesktopFileName(QStringLiteral("pipemare-workbench"));
  QApplication::setWindowIcon(pm::ui::workbenchIcon());  // every window's and dialog's
  // The presets: the installed ones (or the source checkout's, from the build tree); the designer
  // adds those under $XDG_DATA_HOME and $XDG_DATA_DIRS (pipemare/experiments).
  pm::ui::MainWindow w(db, QString::fromStdString(pm::presetDirectory()));
  // --experiment FILE: open it in the designer, as Open... does (File > Open Recent lists it).
  // A file that cannot be read (or is not JSON) is a usage error: nothing opens or runs (with --run
  // neither: the designer's default experiment does not run in its place). One that reads but does
  // not validate opens, its errors shown, for editing; --run then refuses it as the Run button does.
  if (!args.experiment.empty() && !w.designer()->openFile(QString::fromStdString(args.experiment))) {
    std::fprintf(stderr, "pipemare-workbench: --experiment: %s\n", w.designer()->validationMessage().toStdString().c_str());
    return 2;
  }
  // --run: start the designed experiment at once (opens the Live tab).
  if (args.run) QTimer::singleShot(0, w.designer(), [&w] { w.designer()->requestRun(); });
  // --predict-stability: once the planner has planned the design, "Predict stability edge" as if clicked.
  if (args.predictStability) {
    auto once = std::make_shared<QMetaObject::Connection>();
    *once = QObject::connect(w.plannerPanel(), &pm::ui::PlannerPanel::planned, w.plannerPanel(), [&w, once] {
      QObject::disconnect(*once);
      if (!w.plannerPanel()->stabilityRunning()) w.plannerPanel()->toggleStability();
    });
  }
  // --run-id ID: select that run in the Runs tab and show its trace in the Timeline tab.
  if (!args.runId.empty() && !w.openRun(std::strtoll(args.runId.c_str(), nullptr, 10), /*show=*/false)) {
    std::fprintf(stderr, "pipemare-workbench: --run-id: no run %s in the store %s\n%s", args.runId.c_str(), db.c_str(), kUsage);
    return 2;
  }
  // --compare IDS [--metric KEY]: those runs side by side in the Compare tab.
  if (!args.compareIds.empty()) {
    const std::string error = w.compareRuns(args.compareIds, QString::fromStdString(args.metric)).toStdString();
    if (!error.empty()) {
      std::fprintf(stderr, "pipemare-workbench: %s\n%s", error.c_str(), kUsage);
      return 2;
    }
  }
  // --tab NAME: open on that tab (e.g. --tab compare, --tab sweeps, --tab timeline); checked above.
  // Without --tab: --compare opens the Compare tab, else --run-id the Runs tab, where the run is
  // selected (not the last session's tab).
  if (!args.tab.empty()) w.selectTab(QString::fromStdString(args.tab));
  else if (args.predictStability) w.selectTab(QStringLiteral("design"));
  else if (!args.compareIds.empty()) w.selectTab(QStringLiteral("compare"));
  else if (!args.runId.empty()) w.selectTab(QStringLiteral("runs"));
  // SIGINT / SIGTERM: close as the window's close button would, leaving runs in progress running
  // (they are processes of their own and record into the store), so that settings are saved and
  // temporary files removed. The terminal's Ctrl-C reaches those runs too and stops them itself.
  pm::ui::SignalNotifier quitOnSignal({SIGINT, SIGTERM});
  QObject::connect(&quitOnSignal, &pm::ui::SignalNotifier::received, &w, [&w](int signalNumber) {
    const int active = w.livePanel()->activeRuns();
    std::fprintf(stderr, "pipemare-workbench: %s: closing%s\n", strsignal(signalNumber),
                 active > 0 ? "; the runs in progress keep running and recording into the store" : "");
    if (QWidget* modal = QApplication::activeModalWidget()) modal->close();
    w.setCloseAnswer("leave");
    w.close();
    QApplication::quit();
  });
  w.show();
  return app.exec();
}

// pipemare run: one experiment, recorded in the run store (or, on a node other than 0 of a
// multi-node run, that node's share of the ranks).
#include <cmath>
#include <cstdio>
#include <memory>

#include <unistd.h>

#include "core/cli/cli_support.h"
#include "core/cli/commands.h"
#include "core/config/experiment.h"
#include "core/engine/input_check.h"
#include "core/events/event.h"
#include "core/events/event_sink.h"
#include "core/events/node_link.h"
#include "core/runner/local_run.h"
#include "core/runner/progress_printer.h"
#include "core/store/run_store.h"
#include "core/util/errors.h"
#include "core/util/net.h"
#include "core/util/paths.h"
#include "core/util/strings.h"

namespace pm::cli {
namespace {

// The options' own rules, checked before anything is read or started.
void checkRunOptions(const RunOptions& o) {
  if (o.sweepId.empty()) checkTags(o.tags);
  if (!o.name.empty() && (trim(o.name).empty() || textLength(o.name) > 200))  // the format's rule for names
    throw ConfigError("--name", trim(o.name).empty() ? "a run name must not be blank"
                                                     : "a run name has at most 200 characters, found " +
                                                           std::to_string(textLength(o.name)));
  if (o.resume > 0 && (!o.file.empty() || !o.overrides.empty()))
    throw ConfigError("--resume", "continues a stored run with its stored configuration: give no experiment file or --set");
  if (o.resume <= 0 && o.file.empty()) throw ConfigError("run", "give an experiment file (or --resume RUN)");
  if (o.nnodes < 1 || o.nodeRank < 0 || o.nodeRank >= o.nnodes)
    throw ConfigError("--node-rank", "must be in 0.." + std::to_string(o.nnodes - 1) + " for --nnodes " + std::to_string(o.nnodes));
  if (o.nnodes > 1 && o.masterPort <= 0) throw ConfigError("--master-port", "a multi-node run needs the same --master-port on every node");
  if (o.nnodes > 1) {
    checkHostResolves(o.masterAddr, "--master-addr");
    loadRunSecret(o.secretFile);  // a missing or unreadable secret: exit 2 before anything starts
  }
}

// `--events stdout`: the event lines for the client reading this process, written so that a slow or
// stopped client never holds the run (BoundedLinesSink).
std::shared_ptr<EventSink> eventsToStdout() {
  std::fflush(stdout);  // anything printed before goes first
  return std::make_shared<BoundedLinesSink>(STDOUT_FILENO);
}

// A remote share (node rank > 0): nothing is recorded here; node 0 records the whole run.
int runRemoteShareCommand(const RunOptions& o, const std::atomic<bool>* stop) {
  Experiment e = loadWithOverrides(o.file, o.overrides);
  FanoutSink sink;
  if (o.events == "stdout") sink.add(eventsToStdout());
  std::fprintf(stderr, "node %d of %d: starting ranks of \"%s\"; node 0 at %s:%d records the run\n", o.nodeRank, o.nnodes,
               escapeForTerminal(e.name).c_str(), escapeForTerminal(o.masterAddr).c_str(), o.masterPort);
  RunOutcome out = runRemoteShare(e, o.nnodes, o.nodeRank, o.masterAddr, o.masterPort, sink, stop, o.saveState, o.secretFile);
  std::fprintf(stderr, "node %d: %s%s%s\n", o.nodeRank, toString(out.status), out.message.empty() ? "" : ": ",
               escapeForTerminal(out.message).c_str());
  return out.status == RunStatus::Finished ? 0 : out.status == RunStatus::Stopped ? 130 : 1;
}

// The experiment to run: the stored run's with --resume RUN, else the file's with its overrides.
Experiment experimentToRun(const RunOptions& o, const RunStore& store) {
  if (o.resume <= 0) return loadWithOverrides(o.file, o.overrides);
  auto rec = store.getRun(o.resume);
  if (!rec) throw StoreError(store.path(), "no run with id " + std::to_string(o.resume), true);
  checkResumable(*rec);  // before the banner
  return storedExperiment(*rec);
}

LocalRunRequest localRunRequest(const RunOptions& o, const Experiment& e) {
  LocalRunRequest req;
  req.resumeRun = o.resume;
  req.nnodes = o.nnodes;
  req.masterAddr = o.masterAddr;
  req.masterPort = o.masterPort;
  req.secretFile = o.secretFile;
  req.experiment = e;
  req.runName = o.name;
  req.saveStateDir = o.saveState;
  req.extraTags = o.tags;
  req.sweepId = o.sweepId;
  if (o.events == "stdout") req.extraSinks.push_back(eventsToStdout());
  if (!o.quiet) req.extraSinks.push_back(std::make_shared<ProgressPrinter>(stderr));
  return req;
}

// The run's end on stderr: its status, its headline figures and where it is stored.
void printRunResult(const LocalRunResult& r, const RunStore& store) {
  const auto& s = r.outcome.summary;
  const std::string& message = r.outcome.message;
  std::fprintf(stderr, "run %lld %s%s%s\n", static_cast<long long>(r.runId), toString(r.outcome.status),
               message.empty() ? "" : ": ", escapeForTerminal(message).c_str());
  // A figure of the summary; NaN when it is missing or null (a diverged run's NaN loss comes from
  // a worker's event line as null: JSON has no NaN).
  const auto figure = [&](const char* key) {
    const auto it = s.find(key);
    return it != s.end() && it->is_number() ? it->get<double>() : NAN;
  };
  if (s.is_object() && s.contains("samples_per_s")) {
    const double rate = figure("samples_per_s"), wall = figure("wall_s");
    std::fprintf(stderr, "  final loss %s, accuracy %s, %.0f samples/s over %s (start-up and evaluation included)\n",
                 fmtNum(figure("final_loss")).c_str(), fmtNum(figure("final_accuracy")).c_str(), std::isnan(rate) ? 0.0 : rate,
                 formatDuration(std::isnan(wall) ? 0.0 : wall).c_str());
  }
  std::fprintf(stderr, "stored as run %lld in %s (see: pipemare runs show %lld)\n", static_cast<long long>(r.runId),
               escapeForTerminal(store.path()).c_str(), static_cast<long long>(r.runId));
}

}  // namespace

// With --events stdout, an error before the run exists (bad experiment, store, usage) is an event
// too, so that a client reading only the stream learns why nothing ran.
void emitStartError(const std::exception& ex) {
  Json ev = makeErrorEvent(ex);
  const auto* err = dynamic_cast<const Error*>(&ex);
  ev["place"] = err ? err->place() : std::string();
  ev["exit_code"] = err ? err->exitCode() : 1;
  ev["before_run"] = true;
  JsonLinesSink sink(stdout);
  sink.emit(ev);
  sink.flush();
}

int runCommand(const RunOptions& o, const std::atomic<bool>* stop) {
  bool runStarted = false;
  try {
    checkRunOptions(o);
    if (o.nodeRank > 0) return runRemoteShareCommand(o, stop);
    if (!o.db.empty()) ensureParentDirectory(o.db, "--db " + o.db);  // errors name the option
    RunStore store(dbPath(o.db));
    store.markDeadRunsInterrupted();
    const Experiment e = experimentToRun(o, store);
    checkDataAvailable(e);  // a missing dataset: exit 2 before a run is recorded
    const LocalRunRequest req = localRunRequest(o, e);
    std::fprintf(stderr, "%s \"%s\": %s, %d stage(s), %d microbatch(es), %s, %s mode, recording into %s\n",
                 o.resume > 0 ? "resume" : "run", escapeForTerminal(o.name.empty() ? e.name : o.name).c_str(),
                 e.model.name.c_str(), e.pipeline.stages, e.pipeline.microbatches, choiceName(e.pipeline.schedule).c_str(),
                 choiceName(e.execution.mode).c_str(), escapeForTerminal(store.path()).c_str());
    runStarted = true;
    const LocalRunResult r = runLocally(store, req, stop);
    if (const std::string gone = store.fileProblem(); !gone.empty())
      throw StoreError(store.path(), gone + " while run " + std::to_string(r.runId) + " was recording into it (it ended " +
                                         toString(r.outcome.status) + "): what the run recorded went with that file");
    printRunResult(r, store);
    if (r.outcome.status == RunStatus::Finished) return 0;
    if (r.outcome.status == RunStatus::Stopped) return 130;
    return 1;
  } catch (const std::exception& ex) {
    if (o.events == "stdout" && !runStarted) emitStartError(ex);
    return reportError(ex);
  }
}

}  // namespace pm::cli

#pragma once
// The launcher's event relay: the workers' JSON event lines (and their stderr, as log events) go
// to the run's sink and, on node k > 0, to node 0; each worker's stage_finished and exit status
// decide how the run stands (RunVerdict), and settleOutcome turns that into the run's outcome.
#include <atomic>
#include <map>

#include "core/engine/run_outcome.h"
#include "core/events/event_sink.h"
#include "core/runner/node_peers.h"
#include "core/runner/run_verdict.h"
#include "core/runner/worker_processes.h"

namespace pm {

class EventRelay : public WorkerListener {
 public:
  // `up`: node k's link to node 0 (nullptr on node 0 and for a single node). `stop`: the user's stop.
  EventRelay(EventSink& sink, UpLink* up, RunVerdict& verdict, const std::atomic<bool>* stop)
      : sink_(sink), up_(up), verdict_(verdict), stop_(stop) {}

  // One of this node's events: to the sink, and to node 0 from the other nodes.
  void forward(const Json& event);
  // An info log event, forwarded.
  void log(const std::string& message);

  // A worker's stdout line: an event, or (not one) a log line naming its rank.
  void onStdout(WorkerProcess& w, const std::string& line) override;
  void onStderr(WorkerProcess& w, const std::string& line) override;
  // A worker's end: its stage diverged, stopped with the others, or failed the run.
  void onExit(WorkerProcess& w) override;

 private:
  bool stopAsked() const { return stop_ && stop_->load(); }

  EventSink& sink_;
  UpLink* up_;
  RunVerdict& verdict_;
  const std::atomic<bool>* stop_;
};

// The run's outcome once every worker has ended. `stopAsked`: the user asked for the stop;
// `remotes`: node 0's view of the other nodes (nullptr elsewhere). The summary is not set
// (runSummary).
RunOutcome settleOutcome(RunVerdict& verdict, const WorkerProcesses& workers, const RemoteNodes* remotes, bool stopAsked);

// The run's summary: the last stage's final metrics, totals and maxima over the stages (this
// node's and, on node 0, the other nodes'), every stage's, and the whole run's wall time `wallS`.
// `stages`: the model's stage count (modelStages).
Json runSummary(const WorkerProcesses& workers, const std::map<int, Json>& remoteSummaries, int stages, double wallS);

}  // namespace pm

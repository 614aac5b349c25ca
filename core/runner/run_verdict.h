#pragma once
// How a `real` run stands while its launcher watches it: what the workers, the other nodes' launchers
// and the user's stop have decided so far. The launcher's parts (event_relay.h, node_peers.h,
// launcher.cpp) update it; settleOutcome (event_relay.h) turns it into the run's outcome.
#include <string>

#include "core/events/run_status.h"

namespace pm {

struct RunVerdict {
  RunStatus status = RunStatus::Finished;  // becomes RunOutcome::status once the run has ended
  std::string message;                     // becomes RunOutcome::message
  std::string failure;                     // the first failure: the run fails with it unless it diverged
  bool stopping = false;                   // the stages stop together (a stop, not a failure)
  bool remoteStop = false;                 // another node asked for the stop

  // Neither failing nor stopping.
  bool undecided() const { return failure.empty() && !stopping; }

  // Sets the failure unless one is already set (the first one names the cause).
  void fail(const std::string& why) {
    if (failure.empty()) failure = why;
  }

  // A stage or a node diverged: the run diverged, unless it already ended otherwise.
  void diverged(const std::string& why) {
    if (status != RunStatus::Finished) return;
    status = RunStatus::Diverged;
    message = why;
  }

  // The stop was asked on node `node` (node 0's "stop", node k's "node_stopping"): every stage
  // halts after one common minibatch, unless the run is already failing or stopping.
  void stopFromNode(int node) {
    if (!failure.empty() || stopping || status != RunStatus::Finished) return;
    remoteStop = true;
    stopping = true;
    status = RunStatus::Stopped;
    message = "stopped by request on node " + std::to_string(node);
  }
};

}  // namespace pm

#pragma once
// How a run, or one stage or node of it, stands or ended, declared once. The store's runs.status
// and the `status` field of the run_finished, stage_finished and node_finished events hold these
// names (docs/events.md); RunRecord::status and RunOutcome::status hold the enum, parsed once
// where the text is read. Header only: the store, which does not link the event library, uses it
// too.
#include <optional>
#include <ostream>
#include <string>

namespace pm {

enum class RunStatus {
  Created,      // recorded, not started
  Running,      // its launcher records into it
  Finished,     // trained every step
  Stopped,      // stopped by request (with a checkpoint when it writes them)
  Failed,       // an error ended it
  Diverged,     // the loss left training.max_loss or became non-finite
  Interrupted,  // its launcher died, or it was imported while running elsewhere
};

// The name stored and sent: "created", "running", "finished", "stopped", "failed", "diverged",
// "interrupted".
inline const char* toString(RunStatus s) {
  switch (s) {
    case RunStatus::Created: return "created";
    case RunStatus::Running: return "running";
    case RunStatus::Finished: return "finished";
    case RunStatus::Stopped: return "stopped";
    case RunStatus::Failed: return "failed";
    case RunStatus::Diverged: return "diverged";
    case RunStatus::Interrupted: return "interrupted";
  }
  return "?";
}

// The status a name stands for; nothing for any other text (names are exact, lower case).
inline std::optional<RunStatus> parseRunStatus(const std::string& name) {
  for (RunStatus s : {RunStatus::Created, RunStatus::Running, RunStatus::Finished, RunStatus::Stopped, RunStatus::Failed,
                      RunStatus::Diverged, RunStatus::Interrupted})
    if (name == toString(s)) return s;
  return std::nullopt;
}

// Writes the name (test failure messages, logs).
inline std::ostream& operator<<(std::ostream& os, RunStatus s) { return os << toString(s); }

// Ended: the run's rows are final. Created and running are not terminal.
inline bool isTerminal(RunStatus s) { return s != RunStatus::Created && s != RunStatus::Running; }

// May continue from its latest checkpoint (`pipemare run --resume`): stopped, failed, interrupted.
inline bool isResumable(RunStatus s) {
  return s == RunStatus::Stopped || s == RunStatus::Failed || s == RunStatus::Interrupted;
}

}  // namespace pm

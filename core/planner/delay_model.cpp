#include "core/planner/delay_model.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace pm {

namespace {

void validate(const DelayParams& p) {
  if (p.stages < 1) throw std::invalid_argument("stages must be >= 1, got " + std::to_string(p.stages));
  if (p.microbatches < 1) throw std::invalid_argument("microbatches must be >= 1, got " + std::to_string(p.microbatches));
  if (p.updateInterval < 0)
    throw std::invalid_argument("pipedream update interval must be >= 1 (0 = N), got " + std::to_string(p.updateInterval));
  if (p.m < 0 || (p.m > 0 && p.m < p.stages))
    throw std::invalid_argument("pipedream-2bw m must be >= P = " + std::to_string(p.stages) + " (0 = max(N, P)), got " +
                                std::to_string(p.m));
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int updateIntervalOf(const DelayParams& p) {
  const ScheduleDecl& d = p.method.decl();
  if (!d.takesUpdateInterval) return p.microbatches;
  if (d.weights == WeightFamily::TwoVersions) return p.m > 0 ? p.m : std::max(p.microbatches, p.stages);
  return p.updateInterval > 0 ? p.updateInterval : p.microbatches;
}

int64_t forwardBackwardDistance(PipelineTiming t, int stages, int stage) {
  const int64_t after = stages - 1 - stage;  // stages downstream
  return t == PipelineTiming::Paper ? 2 * after + 1 : after;
}

std::vector<StageTiming> stageTimings(const DelayParams& p) {
  validate(p);
  const int P = p.stages;
  const int64_t N = p.microbatches;
  const int64_t u = updateIntervalOf(p);
  std::vector<StageTiming> out(static_cast<size_t>(P));
  std::vector<int64_t> synchronousInFlight;
  if (p.method.decl().synchronous) {
    ScheduleParams sp;
    sp.kind = p.method.schedule;
    sp.stages = P;
    sp.microbatches = static_cast<int>(N);
    for (int s = 0; s < P; ++s) synchronousInFlight.push_back(measureActions(stageActions(sp, s)).inFlight);
  }
  for (int s = 0; s < P; ++s) {
    auto& t = out[static_cast<size_t>(s)];
    const int64_t d = forwardBackwardDistance(p.timing, P, s);
    const int64_t flight = p.timing == PipelineTiming::Paper ? d : d + 1;  // 2(P-i)+1 | P-i+1
    const ScheduleDecl& decl = p.method.decl();
    if (decl.synchronous) {
      // A flushed schedule keeps what its own list holds at one minibatch (gpipe N, 1f1b
      // min(N, P-s), zb-h1 each graph from its F to its W); its delay is 0.
      t.inFlight = std::min<int64_t>(N, synchronousInFlight[static_cast<size_t>(s)]);
      continue;
    }
    t.inFlight = flight;
    switch (decl.weights) {
      case WeightFamily::Stash:  // pipedream: a version per step in flight, stashed FIFO
        t.tau = ceilDiv(d, u);
        t.versions = t.tau + 1;
        break;
      case WeightFamily::TwoVersions:  // pipedream-2bw: a step per m >= P microbatches, two versions
        t.tau = std::min<int64_t>(1, d);
        t.versions = t.tau + 1;
        break;
      case WeightFamily::Predicted:  // pipemare: the current weights, tau steps late
      case WeightFamily::Current:
        t.tau = ceilDiv(d, u);
        break;
    }
  }
  return out;
}

StageTiming measureActions(const std::vector<Action>& actions) {
  StageTiming t;
  t.tau = maxObservedDelay(actions);
  int64_t version = 0;
  std::map<int64_t, int64_t> versionOf;  // in-flight microbatch -> version its forward used
  for (const auto& a : actions) {
    if (a.kind == ActionKind::Forward) {
      versionOf[a.mb] = version;
      t.inFlight = std::max<int64_t>(t.inFlight, static_cast<int64_t>(versionOf.size()));
    } else if (a.kind == ActionKind::Backward || a.kind == ActionKind::BackwardWeight) {
      versionOf.erase(a.mb);
    } else if (a.kind == ActionKind::Step) {
      ++version;
    } else {
      continue;
    }
    std::set<int64_t> held{version};
    for (const auto& kv : versionOf) held.insert(kv.second);
    t.versions = std::max<int64_t>(t.versions, static_cast<int64_t>(held.size()));
  }
  return t;
}

std::vector<StageTiming> measuredStageTimings(const ScheduleParams& sp) {
  std::vector<StageTiming> out;
  for (int s = 0; s < sp.stages; ++s) out.push_back(measureActions(stageActions(sp, s)));
  return out;
}

ScheduleParams engineScheduleParams(const DelayParams& p, int64_t minibatches) {
  validate(p);
  ScheduleParams sp;
  sp.kind = p.method.schedule;
  sp.stages = p.stages;
  sp.microbatches = p.microbatches;
  sp.update_interval = updateIntervalOf(p);
  sp.paper_timing = p.timing == PipelineTiming::Paper && scheduleDecl(sp.kind).takesTiming;
  if (minibatches <= 0) {
    // Steady state: every stage sees a backward whose forward has the full distance behind it,
    // plus a whole update interval (schedule.h: minibatches*N >= P-1-s + update_interval), twice.
    const int64_t need = 2 * (static_cast<int64_t>(p.stages) + sp.update_interval);
    minibatches = std::max<int64_t>(2, (need + p.microbatches - 1) / p.microbatches);
  }
  sp.minibatches = minibatches;
  return sp;
}

}  // namespace pm

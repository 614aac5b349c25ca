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
  switch (p.schedule) {
    case PlanSchedule::PipeDream: return p.updateInterval > 0 ? p.updateInterval : p.microbatches;
    case PlanSchedule::PipeDream2BW: return p.m > 0 ? p.m : std::max(p.microbatches, p.stages);
    default: return p.microbatches;
  }
}

int64_t forwardBackwardDistance(TimingModel t, int stages, int stage) {
  const int64_t after = stages - 1 - stage;  // stages downstream
  return t == TimingModel::Paper ? 2 * after + 1 : after;
}

std::vector<StageTiming> stageTimings(const DelayParams& p) {
  validate(p);
  const int P = p.stages;
  const int64_t N = p.microbatches;
  const int64_t u = updateIntervalOf(p);
  std::vector<StageTiming> out(static_cast<size_t>(P));
  for (int s = 0; s < P; ++s) {
    auto& t = out[static_cast<size_t>(s)];
    const int64_t d = forwardBackwardDistance(p.timing, P, s);
    const int64_t flight = p.timing == TimingModel::Paper ? d : d + 1;  // 2(P-i)+1 | P-i+1
    switch (p.schedule) {
      case PlanSchedule::GPipe:
      case PlanSchedule::GPipeRecompute:
        t.inFlight = N;
        break;
      case PlanSchedule::OneFOneB:
        t.inFlight = std::min(N, flight);
        break;
      case PlanSchedule::ZbH1:
        // A microbatch's graph lives from its F to its W, which comes `s` backwards after its BI:
        // counted on the list itself.
        t.inFlight = measureActions(zbH1Actions(P, static_cast<int>(N), 2, s)).inFlight;
        break;
      case PlanSchedule::PipeDream:
        t.inFlight = flight;
        t.tau = ceilDiv(d, u);
        t.versions = t.tau + 1;
        break;
      case PlanSchedule::PipeDream2BW:
        t.inFlight = flight;
        t.tau = std::min<int64_t>(1, d);
        t.versions = t.tau + 1;
        break;
      case PlanSchedule::PipeMare:
      case PlanSchedule::PipeMareT2:
        t.inFlight = flight;
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
  sp.kind = engineSchedule(p.schedule);
  sp.stages = p.stages;
  sp.microbatches = p.microbatches;
  sp.update_interval = updateIntervalOf(p);
  sp.paper_timing = p.timing == TimingModel::Paper && scheduleDecl(sp.kind).takesTiming;
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

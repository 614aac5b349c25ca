#include "core/planner/timeline_sim.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <stdexcept>

#include "core/planner/analytic_planner.h"

namespace pm {

namespace {


void checkVector(const std::vector<double>& v, size_t P, const char* what, bool optional) {
  if (optional && v.empty()) return;
  if (v.size() != P)
    throw std::invalid_argument(std::string("simulation: ") + what + " needs " + std::to_string(P) + " values, got " +
                                std::to_string(v.size()));
  for (double x : v)
    if (!(x >= 0)) throw std::invalid_argument(std::string("simulation: ") + what + " must be finite and >= 0");
}

template <class T>
T at(const std::vector<T>& v, size_t i) {
  return v.empty() ? T{} : v[i];
}

}  // namespace

SimResult simulateTimeline(const std::vector<std::vector<Action>>& lists, const SimCosts& c) {
  const size_t P = lists.size();
  if (P == 0) throw std::invalid_argument("simulation: no stages");
  checkVector(c.forward, P, "forward costs", false);
  checkVector(c.backward, P, "backward costs", false);
  checkVector(c.step, P, "step costs", true);
  checkVector(c.weight, P, "weight-gradient costs", true);
  checkVector(c.backwardInput, P, "input-gradient costs", true);
  for (size_t s = 0; s < c.weight.size() && c.backwardInput.empty(); ++s)
    if (c.weight[s] > c.backward[s])
      throw std::invalid_argument("simulation: a stage's weight-gradient cost exceeds its whole backward's");
  if (!c.activationBytes.empty() && c.activationBytes.size() != P)
    throw std::invalid_argument("simulation: activation bytes need one value per stage");
  if (!c.gradientBytes.empty() && c.gradientBytes.size() != P)
    throw std::invalid_argument("simulation: gradient bytes need one value per stage");
  if (!(c.link.latency >= 0) || !(c.link.bandwidth >= 0))
    throw std::invalid_argument("simulation: link latency and bandwidth must be >= 0");

  // Messages in flight: arrival time by (channel, microbatch). Channel 2*s: activations from s to
  // s+1; 2*s+1: gradients from s to s-1.
  std::map<std::pair<size_t, int64_t>, double> arrivals;
  std::vector<size_t> pc(P, 0);
  std::vector<double> clock(P, 0.0);
  SimResult r;
  r.busy.assign(P, 0.0);
  r.firstForward.assign(P, -1.0);

  auto transfer = [&](int64_t bytes) { return c.link.bandwidth > 0 ? static_cast<double>(bytes) / c.link.bandwidth : 0.0; };

  size_t done = 0;
  for (size_t s = 0; s < P; ++s)
    if (lists[s].empty()) ++done;
  while (done < P) {
    bool progress = false;
    for (size_t s = 0; s < P; ++s) {
      while (pc[s] < lists[s].size()) {
        const Action& a = lists[s][pc[s]];
        const double start = clock[s];
        double end = start;
        bool waiting = false;  // the message has not been sent yet
        switch (a.kind) {
          case ActionKind::RecvAct:
          case ActionKind::RecvGrad: {
            if (a.kind == ActionKind::RecvAct && s == 0) throw std::runtime_error("simulation: stage 0 cannot receive activations");
            if (a.kind == ActionKind::RecvGrad && s + 1 == P) throw std::runtime_error("simulation: the last stage cannot receive gradients");
            const size_t ch = a.kind == ActionKind::RecvAct ? 2 * (s - 1) : 2 * (s + 1) + 1;
            auto it = arrivals.find({ch, a.mb});
            if (it == arrivals.end()) {
              waiting = true;
              break;
            }
            end = c.link.rendezvous ? std::max(start, it->second) + c.link.latency : std::max(start, it->second);
            arrivals.erase(it);
            break;
          }
          case ActionKind::SendAct:
          case ActionKind::SendGrad: {
            const bool act = a.kind == ActionKind::SendAct;
            if (act && s + 1 == P) throw std::runtime_error("simulation: the last stage cannot send activations");
            if (!act && s == 0) throw std::runtime_error("simulation: stage 0 cannot send gradients");
            end = start + transfer(act ? at(c.activationBytes, s) : at(c.gradientBytes, s));
            arrivals[{act ? 2 * s : 2 * s + 1, a.mb}] = c.link.rendezvous ? end : end + c.link.latency;
            break;
          }
          case ActionKind::Forward: end = start + c.forward[s]; break;
          case ActionKind::Backward: end = start + c.backward[s]; break;
          case ActionKind::Step: end = start + at(c.step, s); break;
          case ActionKind::BackwardInput:
            end = start + (c.backwardInput.empty() ? c.backward[s] - at(c.weight, s) : c.backwardInput[s]);
            break;
          case ActionKind::BackwardWeight: end = start + at(c.weight, s); break;
        }
        if (waiting) break;
        const bool compute = a.kind == ActionKind::Forward || a.kind == ActionKind::Backward || a.kind == ActionKind::Step ||
                             a.kind == ActionKind::BackwardInput || a.kind == ActionKind::BackwardWeight;
        if (compute) r.busy[s] += end - start;
        if (a.kind == ActionKind::Forward && r.firstForward[s] < 0) r.firstForward[s] = start;
        r.trace.push_back({static_cast<int>(s), traceActionName(a.kind), a.mb, start, end});
        clock[s] = end;
        ++pc[s];
        progress = true;
        if (pc[s] == lists[s].size()) ++done;
      }
    }
    if (!progress && done < P) {
      std::string stuck;
      for (size_t s = 0; s < P; ++s)
        if (pc[s] < lists[s].size())
          stuck += (stuck.empty() ? "" : ", ") + std::string("stage ") + std::to_string(s) + " at " +
                   actionToString(lists[s][pc[s]]);
      throw std::runtime_error("simulation: deadlock (" + stuck + ")");
    }
  }
  r.makespan = *std::max_element(clock.begin(), clock.end());
  r.lastEnd = clock;
  for (auto& t : r.firstForward) t = std::max(t, 0.0);
  double total = 0;
  for (size_t s = 0; s < P; ++s) {
    r.utilization.push_back(r.makespan > 0 ? r.busy[s] / r.makespan : 0.0);
    total += r.busy[s];
  }
  r.meanUtilization = r.makespan > 0 ? total / (static_cast<double>(P) * r.makespan) : 0.0;
  return r;
}

SimResult simulateRankOps(const std::vector<std::vector<Action>>& ranks, int chunks,
                          const std::function<int(int, int)>& stageOf, const RankOpCosts& c) {
  const size_t P = ranks.size();
  const int stages = static_cast<int>(c.forward.size());
  if (P == 0 || stages < 1 || chunks < 1) throw std::invalid_argument("simulation: no ranks, stages or chunks");
  for (const auto* v : {&c.backward, &c.backwardInput, &c.weight})
    if (v->size() != c.forward.size())
      throw std::invalid_argument("simulation: " + std::to_string(v->size()) + " op costs for " + std::to_string(stages) + " stages");
  if (!c.step.empty() && c.step.size() != c.forward.size())
    throw std::invalid_argument("simulation: " + std::to_string(c.step.size()) + " step costs for " + std::to_string(stages) + " stages");
  for (const auto* v : {&c.forward, &c.backward, &c.backwardInput, &c.weight, &c.step})
    for (double x : *v)
      if (!(x >= 0) || !std::isfinite(x)) throw std::invalid_argument("simulation: op costs must be finite and >= 0");
  if (!(c.comm >= 0) || !std::isfinite(c.comm)) throw std::invalid_argument("simulation: the communication cost must be finite and >= 0");
  std::vector<int> rankOf(static_cast<size_t>(stages), -1);
  for (size_t r = 0; r < P; ++r)
    for (int ch = 0; ch < chunks; ++ch) {
      const int st = stageOf(static_cast<int>(r), ch);
      if (st < 0 || st >= stages) throw std::invalid_argument("simulation: a chunk placed outside the stages");
      rankOf[static_cast<size_t>(st)] = static_cast<int>(r);
    }
  // When each op ended: (0 forward | 1 input or whole backward | 2 weight, stage, microbatch).
  std::map<std::tuple<int, int, int64_t>, double> ended;
  std::vector<size_t> pc(P, 0);
  std::vector<double> clock(P, 0.0);
  SimResult res;
  res.busy.assign(P, 0.0);
  res.firstForward.assign(P, -1.0);
  auto isCompute = [](ActionKind k) {
    return k == ActionKind::Forward || k == ActionKind::Backward || k == ActionKind::BackwardInput ||
           k == ActionKind::BackwardWeight || k == ActionKind::Step;
  };
  size_t done = 0;
  auto finished = [&](size_t r) { return pc[r] >= ranks[r].size(); };
  auto skipComm = [&](size_t r) {
    while (!finished(r) && !isCompute(ranks[r][pc[r]].kind)) ++pc[r];
  };
  for (size_t r = 0; r < P; ++r) {
    skipComm(r);
    if (finished(r)) ++done;
  }
  while (done < P) {
    bool progress = false;
    for (size_t r = 0; r < P; ++r) {
      while (!finished(r)) {
        const Action& a = ranks[r][pc[r]];
        const int st = stageOf(static_cast<int>(r), a.chunk);
        const size_t si = static_cast<size_t>(st);
        // The op it waits for: its class, stage and microbatch; none for a step or the first stage's F.
        std::optional<std::tuple<int, int, int64_t>> dep;
        double cost = 0;
        int cls = 0;
        switch (a.kind) {
          case ActionKind::Forward:
            cls = 0;
            cost = c.forward[si];
            if (st > 0) dep = std::make_tuple(0, st - 1, a.mb);
            break;
          case ActionKind::Backward:
          case ActionKind::BackwardInput:
            cls = 1;
            cost = a.kind == ActionKind::Backward ? c.backward[si] : c.backwardInput[si];
            dep = st + 1 < stages ? std::make_tuple(1, st + 1, a.mb) : std::make_tuple(0, st, a.mb);
            break;
          case ActionKind::BackwardWeight:
            cls = 2;
            cost = c.weight[si];
            dep = std::make_tuple(1, st, a.mb);
            break;
          default:  // a chunk's step
            cls = -1;
            cost = c.step.empty() ? 0.0 : c.step[si];
            break;
        }
        double ready = clock[r];
        if (dep) {
          const auto it = ended.find(*dep);
          if (it == ended.end()) break;  // not run yet
          const bool crosses = rankOf[static_cast<size_t>(std::get<1>(*dep))] != static_cast<int>(r);
          ready = std::max(ready, it->second + (crosses ? c.comm : 0.0));
        }
        const double end = ready + cost;
        if (cls >= 0) ended[std::make_tuple(cls, st, a.mb)] = end;
        if (a.kind == ActionKind::Forward && res.firstForward[r] < 0) res.firstForward[r] = ready;
        res.busy[r] += cost;
        res.trace.push_back({st, traceActionName(a.kind), a.mb, ready, end});
        clock[r] = end;
        ++pc[r];
        skipComm(r);
        progress = true;
        if (finished(r)) ++done;
      }
    }
    if (!progress && done < P) {
      std::string stuck;
      for (size_t r = 0; r < P; ++r)
        if (!finished(r)) stuck += (stuck.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " at " + actionToString(ranks[r][pc[r]]);
      throw std::runtime_error("simulation: deadlock (" + stuck + ")");
    }
  }
  res.makespan = *std::max_element(clock.begin(), clock.end());
  res.lastEnd = clock;
  double total = 0;
  for (size_t r = 0; r < P; ++r) {
    res.firstForward[r] = std::max(res.firstForward[r], 0.0);
    res.utilization.push_back(res.makespan > 0 ? res.busy[r] / res.makespan : 0.0);
    total += res.busy[r];
  }
  res.meanUtilization = res.makespan > 0 ? total / (static_cast<double>(P) * res.makespan) : 0.0;
  return res;
}

SimResult simulateOps(const std::vector<std::vector<Action>>& ranks, int stages, int chunks,
                      const std::function<int(int, int)>& stageOf, const OpCosts& c) {
  if (stages < 1 || chunks < 1) throw std::invalid_argument("simulation: no ranks, stages or chunks");
  for (double x : {c.forward, c.backwardInput, c.backwardWeight, c.comm})
    if (!(x >= 0) || !std::isfinite(x)) throw std::invalid_argument("simulation: op costs must be finite and >= 0");
  // Each chunk costs its rank's op cost / chunks; a whole backward BI + W.
  const double share = 1.0 / chunks;
  const size_t S = static_cast<size_t>(stages);
  RankOpCosts rc;
  rc.forward.assign(S, c.forward * share);
  rc.backward.assign(S, (c.backwardInput + c.backwardWeight) * share);
  rc.backwardInput.assign(S, c.backwardInput * share);
  rc.weight.assign(S, c.backwardWeight * share);
  rc.comm = c.comm;
  return simulateRankOps(ranks, chunks, stageOf, rc);
}

SimResult simulateChunkedSchedule(const ScheduleParams& p, const RankOpCosts& costs) {
  std::vector<std::vector<Action>> ranks;
  const int P = rankCount(p);
  for (int r = 0; r < P; ++r) ranks.push_back(rankComputeActions(p, r));
  return simulateRankOps(ranks, p.chunks, [&](int r, int c) { return stageOfChunk(p, r, c); }, costs);
}

SimResult simulateTimeline(const ScheduleParams& p, const SimCosts& costs) {
  std::vector<std::vector<Action>> lists;
  for (int s = 0; s < p.stages; ++s) lists.push_back(stageActions(p, s));
  return simulateTimeline(lists, costs);
}

SimResult simulatePlanSchedule(const TrainingMethod& method, int stages, const PlanSpec& spec, const SimCosts& costs,
                               int64_t minibatches) {
  return simulateTimeline(engineScheduleParams(delayParams(method, stages, spec), minibatches), costs);
}

SimCosts costsFromStages(const std::vector<StageProfile>& stages, double flopsPerSecond, double backwardFactor,
                         double stepBytesPerSecond, LinkModel link) {
  if (!(flopsPerSecond > 0)) throw std::invalid_argument("simulation: FLOP rate must be > 0");
  if (!(backwardFactor >= 0)) throw std::invalid_argument("simulation: backward factor must be >= 0");
  if (!(stepBytesPerSecond >= 0)) throw std::invalid_argument("simulation: step rate must be >= 0");
  SimCosts c;
  for (const auto& s : stages) {
    const double f = s.forwardFlops / flopsPerSecond;
    c.forward.push_back(f);
    c.backward.push_back(backwardFactor * f);
    // A split backward's weight part: half of it (with the factor 2, T_F = T_B = T_W, the
    // zero-bubble paper's assumption, until the profile measures W).
    c.weight.push_back(backwardFactor * f / 2);
    c.step.push_back(stepBytesPerSecond > 0 ? static_cast<double>(s.weightBytes) / stepBytesPerSecond : 0.0);
    c.activationBytes.push_back(s.outputBytes);
    c.gradientBytes.push_back(s.inputBytes);
  }
  c.link = link;
  return c;
}

Json traceEvent(const SimTraceRecord& r) {
  Json t = makeEvent(ev::kTrace);
  t["stage"] = r.stage;
  t["action"] = r.action;
  t["mb"] = r.mb;
  t["start"] = r.start;
  t["end"] = r.end;
  return t;
}

}  // namespace pm

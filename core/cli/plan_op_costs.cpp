#include "core/cli/plan_op_costs.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/events/event.h"
#include "core/pipeline/schedule.h"
#include "core/planner/timeline_sim.h"

namespace pm::cli {

namespace {

// A synchronous schedule the planner lays out from op costs: its name, its chunks per rank, where
// a rank's chunk sits among the stages, and one rank's actions (P, N, rank) for one minibatch.
struct OpCostSchedule {
  std::string name;
  int chunks;
  std::function<int(int P, int rank, int chunk)> stage;
  std::function<std::vector<Action>(int P, int N, int rank)> actions;
};

std::vector<OpCostSchedule> opCostSchedules(int interleavedChunks) {
  auto oneChunk = [](int, int rank, int) { return rank; };
  auto engine = [](ScheduleKind kind) {
    return [kind](int P, int N, int rank) {
      ScheduleParams p;
      p.kind = kind;
      p.stages = P;
      p.microbatches = N;
      return stageActions(p, rank);
    };
  };
  const int v = interleavedChunks;
  return {{"gpipe", 1, oneChunk, engine(ScheduleKind::GPipe)},
          {"1f1b", 1, oneChunk, engine(ScheduleKind::OneFOneB)},
          {"interleaved-1f1b", v, interleavedStage, [v](int P, int N, int rank) { return interleaved1F1BActions(P, N, v, rank); }},
          {"zb-h1", 1, oneChunk, [](int P, int N, int rank) { return zbH1Actions(P, N, 1, rank); }},
          {"zb-v", 2, zbVStage, [](int P, int N, int rank) { return zbVActions(P, N, rank); }}};
}

struct OpCostFigures {
  std::string schedule;
  int chunks = 1;
  std::string note;  // why the schedule has no figures here ("" when it has)
  double makespan = 0;
  double bubbleUtilization = 0;  // 1 - sum(busy) / (P x makespan)
  double bubbleRateZb = 0;       // (S - N (TF+TB+TW)) / S, S the largest span of a rank from first F to last op
};

constexpr const char* kMakespanDefinition = "the end of the last op, every rank starting at 0";
constexpr const char* kUtilizationDefinition = "the idle share of P x makespan (1 - utilization)";
constexpr const char* kZbRateDefinition =
    "ZB bubble rate (Qi et al. 2024, eq. 3): the largest span of a rank from its first F to its last op, less "
    "N (TF+TB+TW), as a share of that span";

}  // namespace

int planOpCostsCommand(const PlanOptions& o, std::ostream& out, std::ostream& err) {
  return planGuard("", err, [&] {
    if (o.opCosts.size() != 3)
      throw PlanUsage("--op-costs", "expected three costs TF,TB,TW (forward, input backward, weight backward), found " +
                                        std::to_string(o.opCosts.size()));
    for (double c : o.opCosts)
      if (!std::isfinite(c) || c < 0) throw PlanUsage("--op-costs", "costs must be finite and >= 0");
    if (!std::isfinite(o.commCost) || o.commCost < 0) throw PlanUsage("--comm-cost", "must be finite and >= 0");
    if (o.stages < 1) throw PlanUsage("--stages", "--op-costs needs --stages P >= 1");
    if (o.microbatches < 1) throw PlanUsage("--microbatches", "must be >= 1");
    if (!o.experiment.empty()) throw PlanUsage("--op-costs", "plans from costs alone: give --stages and --microbatches, not --experiment");
    const double tf = o.opCosts[0], tb = o.opCosts[1], tw = o.opCosts[2];
    const int P = o.stages, N = o.microbatches;
    if (o.chunks < 2) throw PlanUsage("--chunks", "interleaved 1F1B needs at least 2 chunks per rank, found " + std::to_string(o.chunks));
    OpCosts costs;
    costs.forward = tf;
    costs.backwardInput = tb;
    costs.backwardWeight = tw;
    costs.comm = o.commCost;
    const double ideal = static_cast<double>(N) * (tf + tb + tw);
    std::vector<OpCostFigures> rows;
    for (const auto& sched : opCostSchedules(o.chunks)) {
      OpCostFigures f;
      f.schedule = sched.name;
      f.chunks = sched.chunks;
      std::vector<std::vector<Action>> lists;
      try {
        for (int r = 0; r < P; ++r) lists.push_back(sched.actions(P, N, r));
      } catch (const std::invalid_argument& ex) {
        f.note = ex.what();  // a schedule that does not apply to this P and N (interleaved: N % P != 0)
        rows.push_back(f);
        continue;
      }
      const SimResult sim =
          simulateOps(lists, P * sched.chunks, sched.chunks, [&](int r, int c) { return sched.stage(P, r, c); }, costs);
      f.makespan = sim.makespan;
      f.bubbleUtilization = 1.0 - sim.meanUtilization;
      double span = 0;
      for (size_t r = 0; r < lists.size(); ++r) span = std::max(span, sim.lastEnd[r] - sim.firstForward[r]);
      f.bubbleRateZb = span > 0 ? (span - ideal) / span : 0.0;
      rows.push_back(f);
    }
    if (o.json) {
      Json j{{"stages", P},
             {"microbatches", N},
             {"op_costs", {{"forward", tf}, {"backward_input", tb}, {"backward_weight", tw}}},
             {"comm_cost", o.commCost},
             {"definitions",
              {{"makespan", kMakespanDefinition}, {"bubble_utilization", kUtilizationDefinition}, {"bubble_rate_zb", kZbRateDefinition}}}};
      Json list = Json::array();
      for (const auto& f : rows) {
        if (!f.note.empty()) {
          list.push_back({{"schedule", f.schedule}, {"chunks", f.chunks}, {"not_applicable", f.note}});
          continue;
        }
        list.push_back({{"schedule", f.schedule},
                        {"chunks", f.chunks},
                        {"makespan", f.makespan},
                        {"bubble_utilization", f.bubbleUtilization},
                        {"bubble_rate_zb", f.bubbleRateZb}});
      }
      j["schedules"] = list;
      out << j.dump(2) << "\n";
      return 0;
    }
    char line[256];
    std::snprintf(line, sizeof line, "P = %d ranks, N = %d microbatches; per rank and microbatch TF %g, TB %g, TW %g; comm %g\n", P,
                  N, tf, tb, tw, o.commCost);
    out << line;
    std::snprintf(line, sizeof line, "%-22s %12s %15s %15s\n", "schedule (chunks)", "makespan", "1-utilization", "ZB bubble rate");
    out << line;
    for (const auto& f : rows) {
      const std::string name = f.schedule + " (" + std::to_string(f.chunks) + ")";
      if (!f.note.empty()) {
        out << name << ": not laid out: " << f.note << "\n";
        continue;
      }
      std::snprintf(line, sizeof line, "%-22s %12.4f %15.4f %15.4f\n", name.c_str(), f.makespan, f.bubbleUtilization,
                    f.bubbleRateZb);
      out << line;
    }
    out << "makespan: " << kMakespanDefinition << "\n1-utilization: " << kUtilizationDefinition << "\nZB bubble rate: "
        << kZbRateDefinition << "\n";
    return 0;
  }, o.failed);
}

}  // namespace pm::cli

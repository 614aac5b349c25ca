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

// A synchronous schedule the planner lays out from op costs: its name and one rank's actions
// (P, N, rank) for one minibatch.
struct OpCostSchedule {
  const char* name;
  std::function<std::vector<Action>(int, int, int)> actions;
};

std::vector<OpCostSchedule> opCostSchedules() {
  auto engine = [](ScheduleKind kind) {
    return [kind](int P, int N, int rank) {
      ScheduleParams p;
      p.kind = kind;
      p.stages = P;
      p.microbatches = N;
      return stageActions(p, rank);
    };
  };
  return {{"gpipe", engine(ScheduleKind::GPipe)},
          {"1f1b", engine(ScheduleKind::OneFOneB)},
          {"zb-h1", [](int P, int N, int rank) { return zbH1Actions(P, N, 1, rank); }}};
}

struct OpCostFigures {
  std::string schedule;
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
    SimCosts costs;
    costs.forward.assign(static_cast<size_t>(P), tf);
    costs.backward.assign(static_cast<size_t>(P), tb + tw);
    costs.weight.assign(static_cast<size_t>(P), tw);
    costs.link.latency = o.commCost;
    const double ideal = static_cast<double>(N) * (tf + tb + tw);
    std::vector<OpCostFigures> rows;
    for (const auto& sched : opCostSchedules()) {
      std::vector<std::vector<Action>> lists;
      for (int r = 0; r < P; ++r) lists.push_back(sched.actions(P, N, r));
      const SimResult sim = simulateTimeline(lists, costs);
      OpCostFigures f;
      f.schedule = sched.name;
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
      for (const auto& f : rows)
        list.push_back({{"schedule", f.schedule},
                        {"makespan", f.makespan},
                        {"bubble_utilization", f.bubbleUtilization},
                        {"bubble_rate_zb", f.bubbleRateZb}});
      j["schedules"] = list;
      out << j.dump(2) << "\n";
      return 0;
    }
    char line[256];
    std::snprintf(line, sizeof line, "P = %d ranks, N = %d microbatches; per rank and microbatch TF %g, TB %g, TW %g; comm %g\n", P,
                  N, tf, tb, tw, o.commCost);
    out << line;
    std::snprintf(line, sizeof line, "%-8s %12s %15s %15s\n", "schedule", "makespan", "1-utilization", "ZB bubble rate");
    out << line;
    for (const auto& f : rows) {
      std::snprintf(line, sizeof line, "%-8s %12.4f %15.4f %15.4f\n", f.schedule.c_str(), f.makespan, f.bubbleUtilization,
                    f.bubbleRateZb);
      out << line;
    }
    out << "makespan: " << kMakespanDefinition << "\n1-utilization: " << kUtilizationDefinition << "\nZB bubble rate: "
        << kZbRateDefinition << "\n";
    return 0;
  });
}

}  // namespace pm::cli

#include "core/cli/plan_against.h"
#include "core/cli/plan_events.h"
#include "core/events/metric_keys.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <tuple>

#include "core/analysis/stored_run.h"
#include "core/config/experiment.h"
#include "core/planner/analytic_planner.h"
#include "core/planner/chrome_trace.h"
#include "core/planner/model_profile.h"
#include "core/planner/plan_design.h"
#include "core/planner/stage_profile.h"
#include "core/pipeline/trace_actions.h"
#include "core/planner/timeline_sim.h"
#include "core/store/run_store.h"
#include "core/util/stats.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "core/util/strings.h"

namespace pm::cli {
namespace {

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

// The partition the run's stages trained with (RunRecord::partition); no stages when none was recorded.
Partition recordedPartition(const RunRecord& run) {
  Partition p;
  for (const auto& [begin, end] : run.partition) {
    p.begin.push_back(begin);
    p.end.push_back(end);
  }
  return p;
}

double pct(double predicted, double measured) {
  return measured != 0 ? 100.0 * (predicted - measured) / measured : (predicted == 0 ? 0.0 : NAN);
}

}  // namespace

// The link's latency as this run saw it, for a rendezvous transport (Gloo moves a message only
// once its receive is posted): for every message, the time from the moment both sides were ready,
// max(receive start, send end), to the end of the receive. Send and
// receive records are matched by stage pair, direction and microbatch. The mean over the messages
// after the first minibatch's (0 when nothing matches): the mean, because the tail costs time too.
double messageLatency(const std::vector<TraceRecord>& trace, int firstMicrobatch) {
  std::map<std::tuple<int, int, int64_t>, double> sent;  // (from, to, mb) -> send end
  for (const auto& t : trace) {
    if (t.action == "send_act") sent[{t.stage, t.stage + 1, t.microbatch}] = t.end;
    if (t.action == "send_grad") sent[{t.stage, t.stage - 1, t.microbatch}] = t.end;
  }
  std::vector<double> samples;
  for (const auto& t : trace) {
    int from = -1;
    if (t.action == "recv_act") from = t.stage - 1;
    if (t.action == "recv_grad") from = t.stage + 1;
    if (from < 0 || t.microbatch < firstMicrobatch) continue;
    auto it = sent.find({from, t.stage, t.microbatch});
    if (it == sent.end()) continue;
    samples.push_back(std::max(0.0, t.end - std::max(t.start, it->second)));
  }
  return mean(samples);
}

Json planAgainst(const RunStore& store, int64_t runId, int traceMinibatches, std::vector<SimTraceRecord>* simulated) {
  auto run = store.getRun(runId);
  if (!run) throw StoreError(store.path(), "no run with id " + std::to_string(runId), true);
  const Experiment e = storedExperiment(*run);
  if (pipelineChunks(e) > 1)
    throw ConfigError("run " + std::to_string(runId), choiceName(e.pipeline.schedule) + " ran " + std::to_string(pipelineChunks(e)) +
                                                          " chunks per rank; the planner's timeline holds one stage per rank "
                                                          "(pipemare plan --op-costs simulates its lists from per-op costs)");
  // The run's design as the planner takes it (schedule row, timing, optimizer, update interval);
  // its partition is the one the run recorded, not the design's.
  const PlanDesign design = planDesign(e, knownTrainSamples(e));
  const PlanSpec spec = design.spec();
  const int P = design.stages, N = design.microbatches;
  const Partition part = recordedPartition(*run);
  if (part.stages() != P)
    throw ConfigError("run " + std::to_string(runId), "has no recorded partition of " + std::to_string(P) + " stages");
  const auto trace = store.loadTrace(runId);
  if (trace.empty())
    throw ConfigError("run " + std::to_string(runId), "has no schedule trace (training.trace_steps = 0)");

  // Measured action costs per stage: trace means after the first minibatch (its warm-up costs
  // more). A trace of the first minibatch only (training.trace_steps = 1, or a run of one step)
  // gives that minibatch's costs, warm-up included, rather than none (all-zero costs predicted
  // "0 s per minibatch, -100 %").
  struct Samples {
    std::vector<double> first, later;
    const std::vector<double>& use() const { return later.empty() ? first : later; }
  };
  // A split backward (zb-h1) is measured in its two parts: bs holds BI, ws W.
  std::vector<Samples> fs(static_cast<size_t>(P)), bs(static_cast<size_t>(P)), ws(static_cast<size_t>(P)), ss(static_cast<size_t>(P));
  // pipemare's recompute of a stale microbatch run ahead of its gradient (R) is part of its backward.
  std::map<std::pair<int, int64_t>, double> ahead;
  for (const auto& t : trace)
    if (t.action == kRecomputeTrace) ahead[{t.stage, t.microbatch}] += t.end - t.start;
  for (const auto& t : trace) {
    const size_t s = static_cast<size_t>(t.stage);
    if (s >= fs.size()) continue;
    const double d = t.end - t.start;
    if (t.action == "F") (t.microbatch >= N ? fs[s].later : fs[s].first).push_back(d);
    if (t.action == "W") (t.microbatch >= N ? ws[s].later : ws[s].first).push_back(d);
    if (t.action == "B" || t.action == "BI") {
      const auto it = ahead.find({t.stage, t.microbatch});
      (t.microbatch >= N ? bs[s].later : bs[s].first).push_back(d + (it == ahead.end() ? 0.0 : it->second));
    }
    if (t.action == "S") (t.microbatch >= 1 ? ss[s].later : ss[s].first).push_back(d);
  }
  bool firstMinibatchOnly = false;
  for (size_t s = 0; s < fs.size(); ++s) {
    firstMinibatchOnly = firstMinibatchOnly || fs[s].later.empty() || bs[s].later.empty() || ss[s].later.empty();
    if (fs[s].use().empty() || bs[s].use().empty())
      throw ConfigError("run " + std::to_string(runId), "its schedule trace has no forward or backward of stage " +
                                                            std::to_string(s) + ": no costs to predict from");
  }
  std::vector<double> f, b, w, st;
  bool split = false;
  for (size_t s = 0; s < fs.size(); ++s) {
    f.push_back(mean(fs[s].use()));
    w.push_back(ws[s].use().empty() ? 0.0 : mean(ws[s].use()));
    split = split || !ws[s].use().empty();
    b.push_back(mean(bs[s].use()) + w.back());  // the whole backward: BI + W when split
    st.push_back(mean(ss[s].use()));
  }
  const double latency = messageLatency(trace, N);
  // Simulation of the schedule with those costs: steady-state seconds per
  // minibatch and utilization.
  ScheduleParams sp = engineScheduleParams(delayParams(design.method, P, spec), 2);
  SimCosts costs;
  costs.forward = f;
  costs.backward = b;
  if (split) costs.weight = w;
  costs.step = st;
  costs.link.latency = latency;
  costs.link.rendezvous = true;
  sp.minibatches = 2;
  const SimResult shortRun = simulateTimeline(sp, costs);
  sp.minibatches = 8;
  const SimResult longRun = simulateTimeline(sp, costs);
  const double predictedPerMinibatch = (longRun.makespan - shortRun.makespan) / 6.0;
  if (simulated && traceMinibatches > 0) {
    sp.minibatches = traceMinibatches;
    *simulated = simulateTimeline(sp, costs).trace;
  }

  // Measured seconds per minibatch: median of wall-time differences between
  // logged steps.
  const auto loss = store.loadMetric(runId, metric::kTrainLoss);
  std::vector<double> perMinibatch;
  for (size_t i = 1; i < loss.size(); ++i)
    if (loss[i].step > loss[i - 1].step)
      perMinibatch.push_back((loss[i].wall_time - loss[i - 1].wall_time) /
                             static_cast<double>(loss[i].step - loss[i - 1].step));
  const double measuredPerMinibatch = median(perMinibatch);

  // Analytic memory for the run's partition.
  const ModelProfile profile = profileModel(e);
  const auto stages = unitStages(profile, part, design.samplesPerMicrobatch());
  const SchedulePlan plan = planSchedule(design.method, stages, spec);

  auto stageMax = [&](const std::string& key) {
    std::vector<double> out(static_cast<size_t>(P), 0);
    for (const auto& p : store.loadStageMetric(runId, key))
      if (p.stage < P) out[static_cast<size_t>(p.stage)] = std::max(out[static_cast<size_t>(p.stage)], p.value);
    return out;
  };
  std::map<int, std::vector<double>> utilWindows;
  for (const auto& p : store.loadStageMetric(runId, "utilization")) utilWindows[p.stage].push_back(p.value);
  const auto mw = stageMax("mem/weights"), mo = stageMax("mem/optimizer"), ms = stageMax("mem/stash"),
             md = stageMax("mem/delta"), ma = stageMax("mem/activations");

  Json out{{"run", runId},
           {"schedule", design.method.name()},
           {"model", design.model},
           {"stages", P},
           {"microbatches", N},
           {"mode", choiceName(e.execution.mode)},
           {"partition", part.describe()}, {"link_latency_s", latency},
           {"costs_from_first_minibatch_only", firstMinibatchOnly},
           {"timing", timingName(design.timing)},
           {"seconds_per_minibatch",
            {{"measured", std::isnan(measuredPerMinibatch) ? Json(nullptr) : Json(measuredPerMinibatch)},
             {"predicted", predictedPerMinibatch},
             {"error_pct", std::isnan(measuredPerMinibatch) ? Json(nullptr) : Json(pct(predictedPerMinibatch, measuredPerMinibatch))}}}};
  Json per = Json::array();
  for (int s = 0; s < P; ++s) {
    const auto& m = plan.perStage[static_cast<size_t>(s)].memory;
    const size_t i = static_cast<size_t>(s);
    per.push_back(
        {{"stage", s},
         {"forward_s", f[i]},
         {"backward_s", b[i]},
         {"backward_input_s", split ? Json(b[i] - w[i]) : Json(nullptr)},
         {"weight_s", split ? Json(w[i]) : Json(nullptr)},
         {"step_s", st[i]},
         {"utilization", {{"measured", median(utilWindows[s])}, {"predicted", longRun.utilization[i]}}},
         {"weights",
          {{"measured", mw[i]}, {"predicted", m.weights}, {"error_pct", pct(static_cast<double>(m.weights), mw[i])}}},
         {"optimizer",
          {{"measured", mo[i]},
           {"predicted", m.optimizer},
           {"error_pct", pct(static_cast<double>(m.optimizer), mo[i])}}},
         {"stash", {{"measured", ms[i]}, {"predicted", m.stash}}},
         {"delta", {{"measured", md[i]}, {"predicted", m.delta}}},
         // The model's A sums every operation's output (an upper bound); measured is what stayed
         // allocated, with each forward's and backward's transient peak.
         {"activations",
          {{"measured", ma[i]},
           {"predicted", m.activations},
           {"error_pct", pct(static_cast<double>(m.activations), ma[i])}}}});
  }
  out["per_stage"] = per;
  out["run_name"] = run->name;
  return out;
}

namespace {

// The command's work: `o.json`'s document on `doc`, or the table on stdout; a failure also told to
// o.failed.
int againstBody(const std::string& db, int64_t runId, const PlanOptions& o, std::ostream& doc) {
  const bool json = o.json;
  const std::string& traceFile = o.traceFile;
  const int traceMinibatches = o.traceMinibatches;
  try {
    if (!traceFile.empty() && traceMinibatches < 1)
      throw ConfigError("--trace-minibatches", "expected an integer >= 1, found " + std::to_string(traceMinibatches));
    auto opened = RunStore::openReadOnly(db.empty() ? defaultDatabasePath() : db);  // never writes
    RunStore& store = *opened;
    std::vector<SimTraceRecord> simulated;
    const Json out = planAgainst(store, runId, traceFile.empty() ? 0 : traceMinibatches, &simulated);
    if (!traceFile.empty())
      writeChromeTrace(traceFile, simulated,
                       out["schedule"].get<std::string>() + ", run " + std::to_string(runId) + " measured costs, P=" +
                           std::to_string(out["stages"].get<int>()) + ", N=" + std::to_string(out["microbatches"].get<int>()));
    if (json) {
      doc << out.dump(2) << "\n";
      return 0;
    }
    const int P = out["stages"].get<int>();
    std::printf("run %lld (%s): %s, %s, P=%d, N=%d, partition %s\n", static_cast<long long>(runId),
                escapeForTerminal(out["run_name"].get<std::string>()).c_str(), out["model"].get<std::string>().c_str(),
                out["schedule"].get<std::string>().c_str(), P, out["microbatches"].get<int>(),
                out["partition"].get<std::string>().c_str());
    std::printf(
        "prediction: simulation of the schedule with this run's measured per-stage F, B (or BI and W) and S costs (trace means after the "
        "first minibatch) and a rendezvous link of latency %.2f ms (mean over the run's messages); memory from the analytic "
        "model (%s timing, as the run)\n",
        out["link_latency_s"].get<double>() * 1e3, out["timing"].get<std::string>().c_str());
    if (out.value("costs_from_first_minibatch_only", false))
      std::printf("note: the trace has only the first minibatch of some stage, so those costs include its warm-up "
                  "(slower): run with training.trace_steps of 2 or more for steady-state costs\n");
    const Json& spm = out["seconds_per_minibatch"];
    const double measured = spm["measured"].is_number() ? spm["measured"].get<double>() : NAN;
    if (std::isnan(measured))
      std::printf("seconds per minibatch: predicted %.4f; measured: none (the run logged fewer than 2 steps: lower "
                  "training.log_interval)\n",
                  spm["predicted"].get<double>());
    else
      std::printf("seconds per minibatch: measured %.4f, predicted %.4f (%+.1f%%)\n", measured, spm["predicted"].get<double>(),
                  spm["error_pct"].get<double>());
    if (out.value("mode", std::string()) == "single" && P > 1)
      std::printf("note: a single-process run: its stages took turns on one thread, so its time per minibatch is the sum "
                  "of the stages' work and its utilization at most 1/P; the prediction is for one process per stage.\n");
    std::printf("activations: measured = the most allocated at once: what forwards kept for their backwards plus a "
                "forward's or backward's transient peak, which includes the backward's fresh weight-gradient buffers (up "
                "to the stage's weight size); pred = the analytic model's A (every operation's output) times the "
                "microbatches in flight, without transients. Different quantities: compare orders of magnitude.\n");
    std::printf(
        "%5s %8s %8s %8s | %6s %6s | %9s %9s | %9s %9s | %9s %9s | %9s %9s | %11s %9s\n", "stage", "F ms", "B ms",
        "S ms", "util", "pred", "weights", "pred", "optimizer", "pred", "stash", "pred", "delta", "pred",
        "activations", "pred");
    std::printf("%5s %8s %8s %8s | %6s %6s | %63s (KiB) | %15s (KiB)\n", "", "", "", "", "", "", "", "");
    for (const Json& st : out["per_stage"]) {
      auto v = [&](const char* k, const char* which) { return st[k][which].get<double>(); };
      auto kib = [&](const char* k, const char* which) { return v(k, which) / 1024.0; };
      std::printf(
          "%5d %8.2f %8.2f %8.2f | %6.3f %6.3f | %9.1f %9.1f | %9.1f %9.1f | %9.1f %9.1f | %9.1f %9.1f | %11.1f %9.1f\n",
          st["stage"].get<int>(), st["forward_s"].get<double>() * 1e3, st["backward_s"].get<double>() * 1e3,
          st["step_s"].get<double>() * 1e3, v("utilization", "measured"), v("utilization", "predicted"),
          kib("weights", "measured"), kib("weights", "predicted"), kib("optimizer", "measured"),
          kib("optimizer", "predicted"), kib("stash", "measured"), kib("stash", "predicted"), kib("delta", "measured"),
          kib("delta", "predicted"), kib("activations", "measured"), kib("activations", "predicted"));
    }
    return 0;
  } catch (const Error& ex) {
    std::fprintf(stderr, "error: %s\n", escapeForTerminal(ex.what()).c_str());
    if (o.failed) o.failed({ex.place(), ex.problem(), ex.exitCode()});
    return ex.exitCode();
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "error: %s\n", escapeForTerminal(ex.what()).c_str());
    if (o.failed) o.failed({"run " + std::to_string(runId), ex.what(), 1});
    return 1;
  }
}

}  // namespace

int planAgainstCommand(const std::string& db, int64_t runId, bool json, const std::string& traceFile, int traceMinibatches,
                       bool events) {
  PlanOptions o;
  o.json = json;
  o.traceFile = traceFile;
  o.traceMinibatches = traceMinibatches;
  if (!events) return againstBody(db, runId, o, std::cout);
  o.events = true;
  return planWithEvents(o, std::cout, [&](const PlanOptions& j, std::ostream& doc) { return againstBody(db, runId, j, doc); });
}

}  // namespace pm::cli

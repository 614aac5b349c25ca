#include "core/engine/pipeline_engine.h"

#include <cstdlib>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "core/comm/chunk_comm.h"
#include "core/comm/in_process_comm.h"
#include "core/comm/device_context.h"
#include "core/engine/batch_source.h"
#include "core/engine/rank_runner.h"
#include "core/engine/stage_worker.h"
#include "core/models/model_zoo.h"
#include "core/util/errors.h"
#include "core/util/system_info.h"

namespace pm {

bool setStageThreads(int threads) {
  torch::set_num_threads(threads);
  return setBlasThreads(threads);
}

Json combineStageSummaries(Json stages) {
  if (!stages.is_array()) stages = Json::array();
  std::sort(stages.begin(), stages.end(),
            [](const Json& a, const Json& b) { return a.value("stage", 0) < b.value("stage", 0); });
  Json out = stages.empty() ? Json::object() : stages.back();
  out.erase("stage");
  for (const char* key : {"compute_s", "wait_s"}) {
    double sum = 0;
    bool any = false;
    for (const auto& s : stages)
      if (s.contains(key) && s[key].is_number()) {
        sum += s[key].get<double>();
        any = true;
      }
    if (any) out[key] = sum;
  }
  for (const char* key : {"peak_memory", "peak_rss", "inflight_max", "tau_max", "tau_expected", "versions_max"}) {
    bool any = false;
    int64_t best = 0;
    for (const auto& s : stages)
      if (s.contains(key) && s[key].is_number()) {
        best = any ? std::max(best, s[key].get<int64_t>()) : s[key].get<int64_t>();
        any = true;
      }
    if (any) out[key] = best;
  }
  out["stages"] = stages;
  return out;
}

Json configureThreadsAndBlas(int threads, EventSink& sink) {
  const bool blasSet = setStageThreads(threads);
  BlasInfo blas = loadedBlas();
  if (blas.isReference() || blas.library.empty()) {
    Json w = makeEvent(ev::kWarning);
    w["message"] = blas.library.empty()
                       ? "no BLAS library found loaded; matrix work may be slow"
                       : "LibTorch is using the reference BLAS (" + blas.library +
                             "), many times slower: install libopenblas0-pthread (scripts/setup.sh does)";
    sink.emit(w);
  }
  return Json{{"blas", {{"library", blas.library}, {"kind", blas.kind}, {"threads_set", blasSet}}},
              {"threads", torch::get_num_threads()}};
}

namespace {

std::vector<double> measuredUnitCosts(const Experiment& e, std::vector<Unit>& units) {
  // One microbatch of random input through each unit, forward + backward, on a stage's threads.
  // First an untimed pass through the whole model: the first calls of a process pay for
  // allocations, kernel selection and thread start-up, which would otherwise be charged to the
  // first unit (cnn: conv1 at 5x its cost, which gives the partition [0,1) [1,6) instead of
  // [0,2) [2,6)). Then 5 timed rounds through the model, each unit's cost its fastest round:
  // interleaving the units spreads a busy spell of the machine (the GUI starting, a planner
  // process) over all of them instead of one, and noise only ever adds time.
  setStageThreads(e.execution.threads_per_stage);
  const int64_t mb = std::max<int64_t>(1, e.data.batch_size / std::max(1, e.pipeline.microbatches));
  const torch::Tensor x0 = exampleInput(e, mb);
  auto pass = [](Unit& u, const torch::Tensor& x) {
    torch::Tensor in = x.is_floating_point() ? x.detach().requires_grad_(true) : x;
    torch::Tensor out = u.module.forward(in);
    out.sum().backward();
    return out.detach();
  };
  std::vector<double> costs(units.size(), std::numeric_limits<double>::infinity());
  for (int round = 0; round <= 5; ++round) {  // round 0: the untimed warm-up
    torch::Tensor x = x0;
    for (size_t i = 0; i < units.size(); ++i) {
      const double t0 = monotonicSeconds();
      x = pass(units[i], x);
      if (round > 0) costs[i] = std::min(costs[i], monotonicSeconds() - t0);
    }
  }
  for (auto& u : units)
    for (auto& p : u.module.ptr()->parameters()) p.mutable_grad() = torch::Tensor();
  return costs;
}

Json partitionJson(const Experiment& e, const Partition& p, const std::vector<Unit>& units) {
  Json arr = Json::array();
  for (int s = 0; s < p.stages(); ++s) {
    int64_t params = 0;
    std::vector<std::string> names;
    for (int u = p.begin[static_cast<size_t>(s)]; u < p.end[static_cast<size_t>(s)]; ++u) {
      params += parameterCount(units[static_cast<size_t>(u)]);
      names.push_back(units[static_cast<size_t>(u)].name);
    }
    arr.push_back({{"stage", s}, {"rank", stageRank(e, s)}, {"units", {p.begin[static_cast<size_t>(s)], p.end[static_cast<size_t>(s)]}},
                   {"unit_names", names}, {"parameters", params}});
  }
  return arr;
}

Json startedEvent(const Experiment& e, const Partition& p, const std::vector<Unit>& units, const TrainingPlan& plan,
                  EventSink& sink) {
  Json started = makeEvent(ev::kRunStarted);
  started["config"] = experimentToJson(e);
  started["host"] = hostName();
  started["revision"] = projectRevision();
  started["build"] = engineBuildJson(engineBuild());
  started.update(configureThreadsAndBlas(e.execution.threads_per_stage, sink));
  started["partition"] = partitionJson(e, p, units);
  started["partition_text"] = p.describe();
  started["total_steps"] = plan.totalSteps();
  started["steps_per_epoch"] = plan.stepsPerEpoch();
  started["mode"] = choiceName(e.execution.mode);
  return started;
}

// What every entry point does before its stages start: data, the model, the partition, the plan,
// threads/BLAS, and the run_started event (not emitted here).
struct PreparedRun {
  std::shared_ptr<const BatchSource> train, eval;
  std::vector<Unit> units;
  Partition partition;
  Json started;
  std::vector<Json> warnings;  // emitted after run_started, by the process that emits it
};

PreparedRun prepareRun(const Experiment& e, EventSink& sink) {
  torch::manual_seed(e.training.seed);
  PreparedRun r;
  r.train = makeBatchSource(e, true);
  r.eval = makeBatchSource(e, false);
  r.units = buildModel(e.model, e.training.seed);
  r.partition = resolvePartition(e, r.units);
  const TrainingPlan plan(e, r.train->size());
  r.started = startedEvent(e, r.partition, r.units, plan, sink);
  r.started["data"] = {{"train", r.train->describe()}, {"eval", r.eval->describe()}};
  if (e.data.batch_size > r.train->size()) {
    Json w = makeEvent(ev::kWarning);
    w["message"] = "data.batch_size = " + std::to_string(e.data.batch_size) + " is larger than the training split (" +
                   std::to_string(r.train->size()) + " samples): every step uses the whole split, one step per epoch (" +
                   std::to_string(plan.totalSteps()) + " steps in all)";
    r.warnings.push_back(std::move(w));
  }
  return r;
}

StageSetup stageSetup(const Experiment& e, const PreparedRun& r, int stage, Communicator* comm, EventSink& sink,
                      double runStart, const EngineOptions& opts) {
  StageSetup setup;
  setup.experiment = e;
  setup.stage = stage;
  setup.partition = r.partition;
  setup.units = r.units;
  setup.train = r.train;
  setup.eval = r.eval;
  setup.comm = comm;
  setup.sink = &sink;
  setup.runStart = runStart;
  setup.checkpointDir = opts.checkpointDir;
  setup.device = opts.device;
  // PIPEMARE_RECOMPUTE_AHEAD=always (tests): recompute stale forwards ahead in a single-process run too.
  const char* ahead = std::getenv("PIPEMARE_RECOMPUTE_AHEAD");
  setup.recomputeAheadAlways = ahead && std::string(ahead) == "always";
  return setup;
}

void restoreIfResuming(StageWorker& w, const EngineOptions& opts, EventSink& sink) {
  if (opts.resumeStep <= 0) return;
  const std::string file = w.restore(opts.resumeStep);
  Json log = makeEvent(ev::kLog);
  log["level"] = "info";
  log["message"] = "stage " + std::to_string(w.stage()) + " resumed from " + file;
  sink.emit(log);
  if (w.traceCut() >= 0) {  // the store drops what the first session traced after the cut
    Json cut = makeEvent(ev::kTraceResumed);
    cut["stage"] = w.stage();
    cut["from"] = w.traceCut();
    sink.emit(cut);
  }
}

void saveStates(const std::vector<StageWorker*>& workers, const EngineOptions& opts) {
  if (opts.saveStateDir.empty()) return;
  std::filesystem::create_directories(opts.saveStateDir);
  for (auto* w : workers) w->saveState(opts.saveStateDir + "/stage" + std::to_string(w->stage()) + ".pt");
}

}  // namespace

Partition resolvePartition(const Experiment& e) { return resolvePartition(e, buildModel(e.model, e.training.seed)); }

Partition resolvePartition(const Experiment& e, const std::vector<Unit>& units) {
  const int P = modelStages(e);
  const auto& part = e.pipeline.partition;
  if (part.method == PartitionMethod::Explicit) {
    try {
      return explicitPartition(part.boundaries, static_cast<int>(units.size()), P);
    } catch (const std::invalid_argument& ex) {
      throw ConfigError("pipeline.partition.boundaries", ex.what());
    }
  }
  std::vector<double> costs;
  if (part.method == PartitionMethod::Time) {
    auto scratch = buildModel(e.model, e.training.seed);
    costs = measuredUnitCosts(e, scratch);
  } else {
    for (const auto& u : units) costs.push_back(static_cast<double>(parameterCount(u)));
  }
  try {
    return balancedPartition(costs, P);
  } catch (const std::invalid_argument& ex) {
    throw ConfigError("pipeline.stages", ex.what());
  }
}

RunOutcome runSingleProcess(const Experiment& e, EventSink& sink, const std::atomic<bool>* stop, const EngineOptions& opts) {
  const double t0 = monotonicSeconds();
  PreparedRun prepared = prepareRun(e, sink);
  if (opts.resumeStep > 0) prepared.started["resumed_from_step"] = opts.resumeStep;
  sink.emit(prepared.started);
  for (const auto& w : prepared.warnings) sink.emit(w);
  const Partition& part = prepared.partition;

  // Every stage on one hub (peers are stages); each rank runs its stages in its own order.
  const ScheduleParams place = stagePlacement(e);
  auto hub = std::make_shared<InProcessHub>(part.stages());
  std::vector<std::unique_ptr<InProcessComm>> comms;
  std::vector<std::unique_ptr<RankRunner>> ranks;
  std::vector<StageWorker*> workers;
  for (int r = 0; r < e.pipeline.stages; ++r) {
    std::vector<std::unique_ptr<StageWorker>> held;
    for (int c = 0; c < place.chunks; ++c) {
      const int s = stageOfChunk(place, r, c);
      comms.push_back(std::make_unique<InProcessComm>(hub, s, e.execution.timeout_s));
      StageSetup setup = stageSetup(e, prepared, s, comms.back().get(), sink, t0, opts);
      setup.rank = r;
      held.push_back(std::make_unique<StageWorker>(std::move(setup)));
      workers.push_back(held.back().get());
    }
    ranks.push_back(std::make_unique<RankRunner>(std::move(held), r, e.pipeline.stages, nullptr, e.execution.timeout_s));
  }
  std::sort(workers.begin(), workers.end(), [](const StageWorker* a, const StageWorker* b) { return a->stage() < b->stage(); });
  for (auto* w : workers) restoreIfResuming(*w, opts, sink);
  for (auto* w : workers) w->resendPending();

  RunOutcome out{RunStatus::Finished, "", Json::object()};
  // The executor: run each rank until it would block; a full round without progress while a
  // rank is unfinished is a deadlock (a schedule bug), reported instead of hanging.
  bool running = true, halting = false;
  while (running) {
    if (stop && stop->load() && !halting) {
      out.status = RunStatus::Stopped;
      out.message = "stopped by request";
      // Finish the minibatch in progress on every stage and checkpoint there (the stage cuts
      // after the same minibatch form a consistent state).
      int64_t k = -1;
      for (auto* w : workers) k = std::max(k, w->nextMinibatchDone());
      if (opts.checkpointDir.empty() || k < 0) break;
      halting = true;
      for (auto* w : workers) w->haltAfterMinibatch(k);
      out.message = "stopped by request after step " + std::to_string(k + 1) + " " + kResumeHint;
      out.haltStep = k + 1;
    }
    bool progress = false, allDone = true;
    for (auto& rank : ranks) {
      while (!rank->done() && rank->ready()) {
        rank->runNext();
        progress = true;
        if (rank->diverged() || (stop && stop->load() && !halting)) break;
      }
      if (rank->diverged()) {
        out.status = RunStatus::Diverged;
        out.message = rank->divergedMessage();
        running = false;
        break;
      }
      allDone = allDone && rank->done();
    }
    if (!running || allDone) break;
    if (!progress) throw EngineError("single-process executor", "no stage can proceed: the schedule deadlocked");
  }

  saveStates(workers, opts);
  const double wall = monotonicSeconds() - t0;
  Json stages = Json::array();
  for (auto* w : workers) stages.push_back(w->summary());
  out.summary = combineStageSummaries(stages);
  out.summary["wall_s"] = wall;
  // A resumed run's rate counts this session's samples over this session's time.
  const double samples =
      static_cast<double>(out.summary.value("samples", int64_t{0}) - out.summary.value("resumed_samples", int64_t{0}));
  out.summary["samples_per_s"] = wall > 0 ? samples / wall : 0.0;
  out.summary["peak_rss"] = processPeakRssBytes();
  return out;
}

std::vector<PayloadChannel> payloadChannels(const Experiment& e) {
  const ScheduleParams place = stagePlacement(e);
  std::vector<PayloadChannel> out;
  for (int s = 0; s + 1 < place.stages; ++s) {
    const int a = chunkPlace(place, s).rank, b = chunkPlace(place, s + 1).rank;
    if (a == b) continue;  // handed over in process
    auto wire = [&](int tag) { return place.chunks > 1 ? ChunkComm::linkTag(tag, s, s + 1) : tag; };
    out.push_back({wire(kTagActivation), a, b});
    out.push_back({wire(kTagGradient), b, a});
    out.push_back({wire(kTagEval), a, b});
  }
  return out;
}

RunOutcome runStageProcess(const Experiment& e, Communicator& comm, EventSink& sink, const std::atomic<bool>* stop,
                           const EngineOptions& opts) {
  const double t0 = monotonicSeconds();
  PreparedRun prepared = prepareRun(e, sink);
  if (e.pipeline.stages != comm.size())
    throw EngineError("rank " + std::to_string(comm.rank()), "the pipeline has " + std::to_string(e.pipeline.stages) +
                                                                 " ranks (pipeline.stages) but the world has " + std::to_string(comm.size()));
  if (comm.rank() == 0) {
    prepared.started["backend"] = comm.backend();
    sink.emit(prepared.started);
    for (const auto& w : prepared.warnings) sink.emit(w);
  }
  // The rank's stages: one on the rank's communicator, or a chunk each on a ChunkComm over it.
  const ScheduleParams place = stagePlacement(e);
  const int r = comm.rank();
  auto local = std::make_shared<InProcessHub>(place.stages);
  std::vector<std::unique_ptr<ChunkComm>> chunkComms;
  std::vector<std::unique_ptr<StageWorker>> held;
  for (int c = 0; c < place.chunks; ++c) {
    const int s = stageOfChunk(place, r, c);
    Communicator* stageComm = &comm;
    if (place.chunks > 1) {
      chunkComms.push_back(std::make_unique<ChunkComm>(comm, local, s, place.stages,
                                                       [place](int stage) { return chunkPlace(place, stage).rank; },
                                                       e.execution.timeout_s));
      stageComm = chunkComms.back().get();
    }
    StageSetup setup = stageSetup(e, prepared, s, stageComm, sink, t0, opts);
    setup.rank = r;
    held.push_back(std::make_unique<StageWorker>(std::move(setup)));
  }
  std::vector<StageWorker*> workers;
  for (auto& w : held) workers.push_back(w.get());
  for (auto* w : workers) restoreIfResuming(*w, opts, sink);
  for (auto* w : workers) w->agreeTraceClock();
  for (auto* w : workers) w->resendPending();
  RankRunner rank(std::move(held), r, comm.size(), &comm, e.execution.timeout_s);
  rank.runToEnd(stop, opts.halt);
  saveStates(workers, opts);
  Json summaries = Json::array();
  for (auto* w : workers) summaries.push_back(w->summary());
  RunOutcome out{RunStatus::Finished, "", workers.size() == 1 ? summaries.front() : combineStageSummaries(summaries)};
  if (rank.diverged()) {
    out.status = RunStatus::Diverged;
    out.message = rank.divergedMessage();
  } else if (rank.halted()) {
    out.status = RunStatus::Stopped;
    out.haltStep = rank.haltStep();
    out.message = "stopped by request after step " + std::to_string(rank.haltStep()) + " " +
                  (opts.checkpointDir.empty() ? std::string("(no checkpoint written)") : std::string(kResumeHint));
  } else if (stop && stop->load() && !rank.done()) {
    out.status = RunStatus::Stopped;
    out.message = "stopped by request";
  }
  const double wall = monotonicSeconds() - t0;
  out.summary["wall_s"] = wall;
  out.summary["samples_per_s"] =
      wall > 0 ? static_cast<double>(out.summary.value("samples", int64_t{0}) - out.summary.value("resumed_samples", int64_t{0})) / wall
               : 0.0;
  out.summary["peak_rss"] = processPeakRssBytes();
  return out;
}

}  // namespace pm

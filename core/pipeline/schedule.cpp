#include "core/pipeline/schedule.h"

#include <algorithm>
#include <deque>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace pm {

void checkScheduleParams(const ScheduleParams& p) {
  if (p.stages < 1) throw std::invalid_argument("schedule: stages must be >= 1, got " + std::to_string(p.stages));
  if (p.microbatches < 1)
    throw std::invalid_argument("schedule: microbatches must be >= 1, got " + std::to_string(p.microbatches));
  if (p.minibatches < 1)
    throw std::invalid_argument("schedule: minibatches must be >= 1, got " + std::to_string(p.minibatches));
  if (!scheduleDecl(p.kind).synchronous && p.update_interval < 1)
    throw std::invalid_argument("schedule " + std::string(scheduleDecl(p.kind).name) + ": update_interval must be >= 1, got " +
                                std::to_string(p.update_interval));
  if (p.paper_timing && !scheduleDecl(p.kind).takesTiming)
    throw std::invalid_argument("schedule " + std::string(scheduleDecl(p.kind).name) + ": the paper's timing applies only to " +
                                scheduleNamesWhere([](const ScheduleDecl& d) { return d.takesTiming; }));
  const ScheduleDecl& d = scheduleDecl(p.kind);
  if (d.chunks == 1 && p.chunks != 1)
    throw std::invalid_argument("schedule " + std::string(d.name) + ": holds one model chunk per rank, got chunks = " +
                                std::to_string(p.chunks));
  if (d.chunks != 1) {
    if (p.chunks < 2 || (d.chunks > 1 && p.chunks != d.chunks))
      throw std::invalid_argument("schedule " + std::string(d.name) + ": needs " +
                                  (d.chunks > 1 ? std::to_string(d.chunks) : std::string("at least 2")) +
                                  " model chunks per rank, got " + std::to_string(p.chunks));
    if (p.stages % p.chunks != 0 || p.stages / p.chunks < 1)
      throw std::invalid_argument("schedule " + std::string(d.name) + ": " + std::to_string(p.stages) +
                                  " stages do not divide into " + std::to_string(p.chunks) + " chunks per rank");
  }
}

namespace {

// Appends compute actions of one stage wrapped in their communication actions.
struct Emitter {
  int stage;
  int stages;
  std::vector<Action> out;

  void forward(int64_t mb) {
    if (stage > 0) out.push_back({ActionKind::RecvAct, mb});
    out.push_back({ActionKind::Forward, mb});
    if (stage < stages - 1) out.push_back({ActionKind::SendAct, mb});
  }
  void backward(int64_t mb) {
    if (stage < stages - 1) out.push_back({ActionKind::RecvGrad, mb});
    out.push_back({ActionKind::Backward, mb});
    if (stage > 0) out.push_back({ActionKind::SendGrad, mb});
  }
  void backwardInput(int64_t mb) {
    if (stage < stages - 1) out.push_back({ActionKind::RecvGrad, mb});
    out.push_back({ActionKind::BackwardInput, mb});
    if (stage > 0) out.push_back({ActionKind::SendGrad, mb});
  }
  void weight(int64_t mb) { out.push_back({ActionKind::BackwardWeight, mb}); }
  void step(int64_t k) { out.push_back({ActionKind::Step, k}); }
};

// One 1F1B pass over microbatches first .. first+count-1: `warmup` forwards, then F,B alternating
// while forwards remain, then the remaining backwards. afterBackward() runs after each backward
// (including its SendGrad).
template <class AfterBackward>
void oneFOneB(Emitter& e, int64_t first, int64_t count, int64_t warmup, AfterBackward afterBackward) {
  int64_t f = 0, b = 0;
  for (; f < warmup; ++f) e.forward(first + f);
  while (f < count) {
    e.forward(first + f++);
    e.backward(first + b++);
    afterBackward();
  }
  while (b < count) {
    e.backward(first + b++);
    afterBackward();
  }
}

}  // namespace

std::vector<Action> gpipeActions(const ScheduleParams& p, int stage) {
  Emitter e{stage, p.stages, {}};
  const int64_t n = p.microbatches;
  for (int64_t k = 0; k < p.minibatches; ++k) {
    for (int64_t i = 0; i < n; ++i) e.forward(k * n + i);
    for (int64_t i = n - 1; i >= 0; --i) e.backward(k * n + i);
    e.step(k);
  }
  return std::move(e.out);
}

std::vector<Action> oneFOneBActions(const ScheduleParams& p, int stage) {
  Emitter e{stage, p.stages, {}};
  const int64_t n = p.microbatches;
  const int64_t depth = p.stages - 1 - stage;  // stages after this one
  for (int64_t k = 0; k < p.minibatches; ++k) {
    oneFOneB(e, k * n, n, std::min(depth, n), [] {});
    e.step(k);
  }
  return std::move(e.out);
}

std::vector<Action> asyncOneFOneBActions(const ScheduleParams& p, int stage) {
  Emitter e{stage, p.stages, {}};
  const int64_t depth = p.stages - 1 - stage;
  const int64_t total = p.minibatches * p.microbatches;
  int64_t backwards = 0, steps = 0;
  oneFOneB(e, 0, total, std::min(p.paper_timing ? 2 * depth : depth, total), [&] {
    if (++backwards % p.update_interval == 0) e.step(steps++);
  });
  if (backwards % p.update_interval != 0) e.step(steps++);
  return std::move(e.out);
}

std::vector<Action> stageActions(const ScheduleParams& p, int stage) {
  checkScheduleParams(p);
  if (stage < 0 || stage >= p.stages)
    throw std::invalid_argument("schedule: stage " + std::to_string(stage) + " out of range [0," +
                                std::to_string(p.stages) + ")");
  return scheduleDecl(p.kind).generate(p, stage);
}

std::vector<Action> zbH1StageActions(const ScheduleParams& p, int stage) {
  return zbH1Actions(p.stages, p.microbatches, p.minibatches, stage);
}

std::vector<Action> zbH1Actions(int stages, int microbatches, int64_t minibatches, int stage) {
  ScheduleParams p;
  p.kind = ScheduleKind::OneFOneB;
  p.stages = stages;
  p.microbatches = microbatches;
  p.minibatches = minibatches;
  checkScheduleParams(p);
  if (stage < 0 || stage >= stages)
    throw std::invalid_argument("schedule: stage " + std::to_string(stage) + " out of range [0," + std::to_string(stages) + ")");
  Emitter e{stage, stages, {}};
  const int64_t n = microbatches;
  const int64_t warmup = std::min<int64_t>(n, stages - 1 - stage);
  for (int64_t k = 0; k < minibatches; ++k) {
    const int64_t first = k * n;
    int64_t f = 0, b = 0, w = 0;
    // After the b-th BI (0-based), W(b - stage) once b >= stage: W starts `stage` steps late.
    auto backwardThenWeight = [&] {
      e.backwardInput(first + b);
      if (b >= stage) e.weight(first + w++);
      ++b;
    };
    for (; f < warmup; ++f) e.forward(first + f);
    while (f < n) {
      e.forward(first + f++);
      backwardThenWeight();
    }
    while (b < n) backwardThenWeight();
    while (w < n) e.weight(first + w++);
    e.step(k);
  }
  return std::move(e.out);
}

int interleavedStage(int stages, int rank, int chunk) { return chunk * stages + rank; }

std::vector<Action> interleaved1F1BActions(int stages, int microbatches, int chunks, int rank) {
  const int P = stages, N = microbatches, v = chunks;
  if (P < 1 || N < 1) throw std::invalid_argument("interleaved 1f1b: stages and microbatches must be >= 1");
  if (v < 2) throw std::invalid_argument("interleaved 1f1b: needs at least 2 chunks per rank, got " + std::to_string(v));
  if (N % P != 0)
    throw std::invalid_argument("interleaved 1f1b: microbatches (" + std::to_string(N) + ") must be a multiple of the ranks (" +
                                std::to_string(P) + "), as Megatron-LM requires");
  if (rank < 0 || rank >= P) throw std::invalid_argument("interleaved 1f1b: rank out of range");
  const int64_t T = static_cast<int64_t>(v) * N;  // ops of each kind on this rank
  const int64_t Pv = static_cast<int64_t>(P) * v;
  // The k-th forward: chunk (k mod Pv) div P, microbatch (k div Pv) P + k mod P; the k-th backward
  // the same microbatch on chunk v-1-c.
  auto forwardOf = [&](int64_t k) {
    return Action{ActionKind::Forward, (k / Pv) * P + k % P, static_cast<int>((k % Pv) / P)};
  };
  auto backwardOf = [&](int64_t k) {
    return Action{ActionKind::Backward, (k / Pv) * P + k % P, v - 1 - static_cast<int>((k % Pv) / P)};
  };
  // The factor 2 keeps a stage from stalling on a message (Megatron-LM issue 169).
  const int64_t warmup = std::min<int64_t>(T, 2 * (P - 1 - rank) + static_cast<int64_t>(v - 1) * P);
  std::vector<Action> out;
  for (int64_t k = 0; k < warmup; ++k) out.push_back(forwardOf(k));
  for (int64_t k = 0; k + warmup < T; ++k) {
    out.push_back(forwardOf(k + warmup));
    out.push_back(backwardOf(k));
  }
  for (int64_t k = std::max<int64_t>(0, T - warmup); k < T; ++k) out.push_back(backwardOf(k));
  out.push_back({ActionKind::Step, 0, 0});
  return out;
}

int zbVStage(int stages, int rank, int chunk) { return chunk == 0 ? rank : 2 * stages - 1 - rank; }

std::vector<Action> zbVRankActions(int stages, int microbatches, int chunks, int rank) {
  if (chunks != 2) throw std::invalid_argument("zb-v: holds 2 chunks per rank, got " + std::to_string(chunks));
  return zbVActions(stages, microbatches, rank);
}

int rankCount(const ScheduleParams& p) { return p.stages / std::max(1, p.chunks); }

ChunkPlace chunkPlace(const ScheduleParams& p, int stage) {
  const ScheduleDecl& d = scheduleDecl(p.kind);
  if (p.chunks <= 1 || !d.placement) return {stage, 0};
  const int P = rankCount(p);
  for (int r = 0; r < P; ++r)
    for (int c = 0; c < p.chunks; ++c)
      if (d.placement(P, r, c) == stage) return {r, c};
  throw std::invalid_argument("schedule " + std::string(d.name) + ": stage " + std::to_string(stage) + " out of range [0," +
                              std::to_string(p.stages) + ")");
}

int stageOfChunk(const ScheduleParams& p, int rank, int chunk) {
  const ScheduleDecl& d = scheduleDecl(p.kind);
  if (p.chunks <= 1 || !d.placement) return rank;
  return d.placement(rankCount(p), rank, chunk);
}

std::vector<Action> rankComputeActions(const ScheduleParams& p, int rank) {
  const ScheduleDecl& d = scheduleDecl(p.kind);
  if (!d.rankGenerate) throw std::invalid_argument("schedule " + std::string(d.name) + ": holds one chunk per rank");
  const std::vector<Action> one = d.rankGenerate(rankCount(p), p.microbatches, p.chunks, rank);
  std::vector<Action> out;
  out.reserve(static_cast<size_t>(p.minibatches) * (one.size() + static_cast<size_t>(p.chunks)));
  for (int64_t k = 0; k < p.minibatches; ++k)
    for (Action a : one) {
      if (a.kind == ActionKind::Step) {
        for (int c = 0; c < p.chunks; ++c) out.push_back({ActionKind::Step, k, c});
        continue;
      }
      a.mb += k * p.microbatches;
      out.push_back(a);
    }
  return out;
}

std::vector<Action> chunkedStageActions(const ScheduleParams& p, int stage) {
  const ChunkPlace at = chunkPlace(p, stage);
  Emitter e{stage, p.stages, {}};
  for (const Action& a : rankComputeActions(p, at.rank)) {
    if (a.chunk != at.chunk) continue;
    switch (a.kind) {
      case ActionKind::Forward: e.forward(a.mb); break;
      case ActionKind::Backward: e.backward(a.mb); break;
      case ActionKind::BackwardInput: e.backwardInput(a.mb); break;
      case ActionKind::BackwardWeight: e.weight(a.mb); break;
      case ActionKind::Step: e.step(a.mb); break;
      default: break;
    }
  }
  for (Action& a : e.out) a.chunk = at.chunk;
  return std::move(e.out);
}

OrderRole orderRole(ActionKind k) {
  switch (k) {
    case ActionKind::RecvAct:
    case ActionKind::RecvGrad: return OrderRole::Lead;
    case ActionKind::SendAct:
    case ActionKind::SendGrad: return OrderRole::Trail;
    default: return OrderRole::Compute;
  }
}

std::vector<std::pair<int, size_t>> mergeRankOrder(const std::vector<std::vector<OrderRole>>& chunkRoles,
                                                   const std::vector<Action>& rankCompute) {
  std::vector<std::pair<int, size_t>> out;
  std::vector<size_t> at(chunkRoles.size(), 0);
  auto take = [&](int c) { out.emplace_back(c, at[static_cast<size_t>(c)]++); };
  for (const Action& a : rankCompute) {
    const int c = a.chunk;
    if (c < 0 || c >= static_cast<int>(chunkRoles.size()))
      throw std::invalid_argument("rank order: chunk " + std::to_string(c) + " out of range");
    const auto& roles = chunkRoles[static_cast<size_t>(c)];
    size_t& i = at[static_cast<size_t>(c)];
    while (i < roles.size() && roles[i] != OrderRole::Compute) take(c);
    if (i >= roles.size()) throw std::invalid_argument("rank order: chunk " + std::to_string(c) + " has fewer computes than the rank's list");
    take(c);
    while (i < roles.size() && roles[i] == OrderRole::Trail) take(c);
  }
  for (size_t c = 0; c < chunkRoles.size(); ++c)
    while (at[c] < chunkRoles[c].size()) take(static_cast<int>(c));
  return out;
}

std::vector<std::pair<int, size_t>> rankOrder(const ScheduleParams& p, int rank) {
  if (p.chunks <= 1) {
    std::vector<std::pair<int, size_t>> out;
    const size_t n = stageActions(p, rank).size();
    for (size_t i = 0; i < n; ++i) out.emplace_back(0, i);
    return out;
  }
  std::vector<std::vector<OrderRole>> roles;
  for (int c = 0; c < p.chunks; ++c) {
    roles.emplace_back();
    for (const Action& a : stageActions(p, stageOfChunk(p, rank, c))) roles.back().push_back(orderRole(a.kind));
  }
  return mergeRankOrder(roles, rankComputeActions(p, rank));
}

std::vector<Action> zbVActions(int stages, int microbatches, int rank) {
  const int P = stages, N = microbatches;
  if (P < 1 || N < 1) throw std::invalid_argument("zb-v: stages and microbatches must be >= 1");
  if (rank < 0 || rank >= P) throw std::invalid_argument("zb-v: rank out of range");
  const int64_t n = std::max<int64_t>(2 * P - 1, N);  // slots; microbatches >= N are idle
  std::vector<Action> out;
  int64_t f[2] = {0, 0}, b[2] = {0, 0}, w[2] = {0, 0};
  auto emit = [&](ActionKind kind, int chunk, int64_t& counter) {
    const int64_t mb = counter++;
    if (mb < N) out.push_back({kind, mb, chunk});
  };
  auto F = [&](int c) { emit(ActionKind::Forward, c, f[c]); };
  auto B = [&](int c) { emit(ActionKind::BackwardInput, c, b[c]); };
  auto W = [&](int c) { emit(ActionKind::BackwardWeight, c, w[c]); };
  const int r = rank;
  for (int i = 0; i < 2 * (P - r) - 1; ++i) F(0);  // 1. the first chunk's warm-up
  for (int i = 0; i < r; ++i) {                     // 2. pairs (F b, F a)
    F(1);
    F(0);
  }
  for (int i = 0; i < P - r; ++i) {  // 3. groups (F b, B b, W b)
    F(1);
    B(1);
    W(1);
  }
  while (f[0] < n || f[1] < f[0]) {  // 4. steady, while a has forwards left or b lags behind a
    if (f[0] < n) F(0);
    B(0);
    W(0);
    F(1);
    B(1);
    W(1);
  }
  for (int i = 0; i < r; ++i) {  // 5. cool-down: pairs (B a, B b)
    B(0);
    B(1);
  }
  for (int i = 0; i < P - r; ++i) {  // pairs (B a, W a oldest)
    B(0);
    W(0);
  }
  while (w[1] < n) W(1);  // the remaining W of b, then of a
  while (w[0] < n) W(0);
  out.push_back({ActionKind::Step, 0, 0});
  return out;
}

std::string actionToString(const Action& a) {
  const char* prefix = "?";
  switch (a.kind) {
    case ActionKind::RecvAct: prefix = "rA"; break;
    case ActionKind::Forward: prefix = "F"; break;
    case ActionKind::SendAct: prefix = "sA"; break;
    case ActionKind::RecvGrad: prefix = "rG"; break;
    case ActionKind::Backward: prefix = "B"; break;
    case ActionKind::SendGrad: prefix = "sG"; break;
    case ActionKind::Step: prefix = "S"; break;
    case ActionKind::BackwardInput: prefix = "BI"; break;
    case ActionKind::BackwardWeight: prefix = "W"; break;
  }
  return prefix + std::to_string(a.mb) + (a.chunk > 0 ? "c" + std::to_string(a.chunk) : std::string());
}

static bool isCompute(ActionKind k) {
  return k == ActionKind::Forward || k == ActionKind::Backward || k == ActionKind::Step || k == ActionKind::BackwardInput ||
         k == ActionKind::BackwardWeight;
}

std::string actionsToString(const std::vector<Action>& actions, bool withComm) {
  std::string out;
  for (const Action& a : actions) {
    if (!withComm && !isCompute(a.kind)) continue;
    if (!out.empty()) out += ' ';
    out += actionToString(a);
  }
  return out;
}

const char* traceActionName(ActionKind k) {
  switch (k) {
    case ActionKind::RecvAct: return "recv_act";
    case ActionKind::Forward: return "F";
    case ActionKind::SendAct: return "send_act";
    case ActionKind::RecvGrad: return "recv_grad";
    case ActionKind::Backward: return "B";
    case ActionKind::SendGrad: return "send_grad";
    case ActionKind::Step: return "S";
    case ActionKind::BackwardInput: return "BI";
    case ActionKind::BackwardWeight: return "W";
  }
  return "?";
}


namespace {
// (microbatch, steps between its forward and its backward) for each backward of the list, in order.
std::vector<std::pair<int64_t, int64_t>> backwardDelays(const std::vector<Action>& actions) {
  std::unordered_map<int64_t, int64_t> stepsAtForward;
  int64_t steps = 0;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const Action& a : actions) {
    if (a.kind == ActionKind::Step) {
      ++steps;
    } else if (a.kind == ActionKind::Forward) {
      stepsAtForward[a.mb] = steps;
    } else if (a.kind == ActionKind::Backward) {
      auto it = stepsAtForward.find(a.mb);
      if (it != stepsAtForward.end()) out.emplace_back(a.mb, steps - it->second);
    }
  }
  return out;
}
}  // namespace

int64_t maxObservedDelay(const std::vector<Action>& actions) {
  int64_t best = 0;
  for (const auto& [mb, delay] : backwardDelays(actions)) best = std::max(best, delay);
  return best;
}

std::vector<int64_t> staleMicrobatches(const std::vector<Action>& actions) {
  std::vector<int64_t> out;
  for (const auto& [mb, delay] : backwardDelays(actions))
    if (delay > 0) out.push_back(mb);
  return out;
}

}  // namespace pm

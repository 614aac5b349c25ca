// The schedule checker (schedule.h): the static checks of each stage's list (every microbatch
// received, computed, sent and stepped in order), then a simulation of the stages, or of the ranks
// where ranks hold several chunks, in which a blocked receive blocks its list: a deadlock is a
// state where every list waits.
#include "core/pipeline/schedule.h"

#include <algorithm>
#include <deque>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>

namespace pm {

namespace {

// Per-microbatch flags of the static pass.
enum : uint8_t { kRA = 1, kF = 2, kSA = 4, kRG = 8, kB = 16, kSG = 32, kBI = 64, kW = 128 };

// Static checks of one stage's list; returns an empty string when fine.
std::string checkStageList(const std::vector<Action>& list, int s, int stages, int64_t total) {
  std::vector<uint8_t> seen(static_cast<size_t>(total), 0);
  int64_t nextStep = 0;
  int64_t pendingWeights = 0;  // BI done, W not yet
  const bool first = s == 0, last = s == stages - 1;
  for (size_t i = 0; i < list.size(); ++i) {
    const Action& a = list[i];
    auto where = [&] {
      return "stage " + std::to_string(s) + " action " + std::to_string(i) + " (" + actionToString(a) + "): ";
    };
    if (a.kind == ActionKind::Step) {
      if (a.mb != nextStep) return where() + "expected step index " + std::to_string(nextStep);
      if (pendingWeights > 0)
        return where() + "step while " + std::to_string(pendingWeights) + " weight gradient(s) (W) are pending";
      ++nextStep;
      continue;
    }
    if (a.mb < 0 || a.mb >= total)
      return where() + "microbatch id out of range [0," + std::to_string(total) + ")";
    uint8_t& f = seen[static_cast<size_t>(a.mb)];
    uint8_t bit = 0;
    switch (a.kind) {
      case ActionKind::RecvAct:
        if (first) return where() + "stage 0 has no previous stage to receive an activation from";
        bit = kRA;
        break;
      case ActionKind::Forward:
        if (!first && !(f & kRA)) return where() + "forward before the activation was received";
        bit = kF;
        break;
      case ActionKind::SendAct:
        if (last) return where() + "the last stage has no next stage to send an activation to";
        if (!(f & kF)) return where() + "activation sent before its forward";
        bit = kSA;
        break;
      case ActionKind::RecvGrad:
        if (last) return where() + "the last stage has no next stage to receive a gradient from";
        bit = kRG;
        break;
      case ActionKind::Backward:
        if (!(f & kF)) return where() + "backward before its forward";
        if (!last && !(f & kRG)) return where() + "backward before the gradient was received";
        bit = kB;
        break;
      case ActionKind::SendGrad:
        if (first) return where() + "stage 0 has no previous stage to send a gradient to";
        if (!(f & (kB | kBI))) return where() + "gradient sent before its backward";
        bit = kSG;
        break;
      case ActionKind::BackwardInput:
        if (!(f & kF)) return where() + "input backward before its forward";
        if (!last && !(f & kRG)) return where() + "input backward before the gradient was received";
        if (f & kB) return where() + "input backward of a microbatch already backwarded whole";
        bit = kBI;
        ++pendingWeights;
        break;
      case ActionKind::BackwardWeight:
        if (!(f & kBI)) return where() + "weight gradient before its input backward";
        bit = kW;
        --pendingWeights;
        break;
      case ActionKind::Step: break;
    }
    if (a.kind == ActionKind::Backward && (f & kBI)) return where() + "whole backward of a microbatch already input-backwarded";
    if (f & bit) return where() + "duplicate action";
    f = static_cast<uint8_t>(f | bit);
  }
  uint8_t common = kF;
  if (!first) common |= kRA | kSG;
  if (!last) common |= kSA | kRG;
  for (int64_t mb = 0; mb < total; ++mb) {
    // The backward whole (B), or split (BI and W).
    const uint8_t have = seen[static_cast<size_t>(mb)];
    const uint8_t need = static_cast<uint8_t>(common | ((have & kBI) ? (kBI | kW) : kB));
    uint8_t missing = static_cast<uint8_t>(need & ~have);
    if (!missing) continue;
    static const std::pair<uint8_t, const char*> names[] = {{kRA, "rA"}, {kF, "F"},   {kSA, "sA"}, {kRG, "rG"},
                                                             {kB, "B"},   {kSG, "sG"}, {kBI, "BI"}, {kW, "W"}};
    for (const auto& [bit, name] : names)
      if (missing & bit)
        return "stage " + std::to_string(s) + " never executes " + name + std::to_string(mb);
  }
  return {};
}

struct Message {
  int64_t mb;
  int64_t tick;  // tick in which it was sent
};

}  // namespace

namespace {

// An executor's list: (stage, action) in the order it runs them. A stage per executor, or a rank
// running its chunks' stages.
using ExecList = std::vector<std::pair<int, Action>>;

// The tick simulation of checkSchedule over executors (named "stage" or "rank" in messages);
// act[s]: activations s -> s+1, grad[s]: gradients s+1 -> s.
ScheduleCheck simulate(const std::vector<ExecList>& execs, int stages, const char* unit) {
  ScheduleCheck r;
  const int E = static_cast<int>(execs.size());
  std::vector<std::deque<Message>> act(static_cast<size_t>(stages)), grad(static_cast<size_t>(stages));
  std::vector<size_t> pos(static_cast<size_t>(E), 0);
  auto name = [&](int x) { return std::string(unit) + " " + std::to_string(x); };
  for (int64_t tick = 0;; ++tick) {
    bool progressed = false, allDone = true;
    for (int x = 0; x < E; ++x) {
      const auto& list = execs[static_cast<size_t>(x)];
      size_t& i = pos[static_cast<size_t>(x)];
      if (i >= list.size()) continue;
      const int s = list[i].first;
      const Action& a = list[i].second;
      if (a.kind == ActionKind::RecvAct || a.kind == ActionKind::RecvGrad) {
        const bool isAct = a.kind == ActionKind::RecvAct;
        auto& ch = isAct ? act[static_cast<size_t>(s - 1)] : grad[static_cast<size_t>(s)];
        if (ch.empty() || ch.front().tick >= tick) {
          allDone = false;
          continue;  // waits (the message, if any, was sent in this very tick)
        }
        if (ch.front().mb != a.mb) {
          r.detail = name(x) + " action " + std::to_string(i) + " (" + actionToString(a) + (E == stages ? "" : " of stage " + std::to_string(s)) +
                     ") at tick " + std::to_string(tick) + ": expected the " + (isAct ? "activation" : "gradient") +
                     " of microbatch " + std::to_string(a.mb) + " but the channel from stage " +
                     std::to_string(isAct ? s - 1 : s + 1) + " delivers microbatch " +
                     std::to_string(ch.front().mb) + " first (channels are FIFO)";
          r.rounds = tick;
          return r;
        }
        ch.pop_front();
      } else if (a.kind == ActionKind::SendAct) {
        act[static_cast<size_t>(s)].push_back({a.mb, tick});
      } else if (a.kind == ActionKind::SendGrad) {
        grad[static_cast<size_t>(s - 1)].push_back({a.mb, tick});
      }
      ++i;
      progressed = true;
      if (i < list.size()) allDone = false;
    }
    if (allDone) {
      r.rounds = progressed ? tick + 1 : tick;
      break;
    }
    if (!progressed) {
      std::ostringstream os;
      os << "deadlock at tick " << tick << ":";
      const char* sep = " ";
      for (int x = 0; x < E; ++x) {
        const auto& list = execs[static_cast<size_t>(x)];
        size_t i = pos[static_cast<size_t>(x)];
        if (i >= list.size()) continue;
        os << sep << name(x) << " waits at " << actionToString(list[i].second);
        if (E != stages) os << " of stage " << list[i].first;
        os << " (action " << i << " of " << list.size() << ")";
        sep = ", ";
      }
      r.detail = os.str();
      r.rounds = tick;
      return r;
    }
  }
  for (int s = 0; s + 1 < stages; ++s) {
    if (!act[static_cast<size_t>(s)].empty() || !grad[static_cast<size_t>(s)].empty()) {
      r.detail = "messages left undelivered between stages " + std::to_string(s) + " and " + std::to_string(s + 1);
      return r;
    }
  }
  r.ok = true;
  r.detail = "ok: " + std::to_string(E) + " " + unit + "s finished in " + std::to_string(r.rounds) + " ticks";
  return r;
}

// The static checks of every stage's list; an empty string when fine.
std::string checkStageLists(const std::vector<std::vector<Action>>& stageLists, int64_t totalMicrobatches) {
  const int P = static_cast<int>(stageLists.size());
  if (P < 1) return "no stages";
  if (totalMicrobatches < 0) return "negative microbatch count";
  for (int s = 0; s < P; ++s) {
    std::string err = checkStageList(stageLists[static_cast<size_t>(s)], s, P, totalMicrobatches);
    if (!err.empty()) return err;
  }
  return {};
}

}  // namespace

ScheduleCheck checkSchedule(const std::vector<std::vector<Action>>& stageLists, int64_t totalMicrobatches) {
  ScheduleCheck r;
  r.detail = checkStageLists(stageLists, totalMicrobatches);
  if (!r.detail.empty()) return r;
  std::vector<ExecList> execs;
  for (size_t s = 0; s < stageLists.size(); ++s) {
    execs.emplace_back();
    for (const Action& a : stageLists[s]) execs.back().emplace_back(static_cast<int>(s), a);
  }
  return simulate(execs, static_cast<int>(stageLists.size()), "stage");
}

ScheduleCheck checkRankSchedule(const ScheduleParams& p) {
  checkScheduleParams(p);
  if (p.chunks <= 1) return checkSchedule(p);
  std::vector<std::vector<Action>> lists;
  for (int s = 0; s < p.stages; ++s) lists.push_back(stageActions(p, s));
  ScheduleCheck r;
  r.detail = checkStageLists(lists, p.minibatches * p.microbatches);
  if (!r.detail.empty()) return r;
  std::vector<ExecList> execs;
  for (int rank = 0; rank < rankCount(p); ++rank) {
    execs.emplace_back();
    for (const auto& [c, i] : rankOrder(p, rank)) {
      const int s = stageOfChunk(p, rank, c);
      execs.back().emplace_back(s, lists[static_cast<size_t>(s)][i]);
    }
  }
  return simulate(execs, p.stages, "rank");
}

std::vector<Action> stageActionsWithWarmup(const ScheduleParams& p, ScheduleKind warmup, int64_t warmupMinibatches,
                                           int stage) {
  if (isAsynchronous(warmup)) throw std::invalid_argument("schedule: the warm-up schedule must be gpipe or 1f1b");
  const int64_t w = std::max<int64_t>(0, std::min(warmupMinibatches, p.minibatches));
  if (w == 0) return stageActions(p, stage);
  ScheduleParams sync = p;
  sync.kind = warmup;
  sync.minibatches = w;
  std::vector<Action> out = stageActions(sync, stage);
  if (w == p.minibatches) return out;
  int64_t steps = 0;
  for (const auto& a : out)
    if (a.kind == ActionKind::Step) ++steps;
  ScheduleParams rest = p;
  rest.minibatches = p.minibatches - w;
  const int64_t offset = w * p.microbatches;
  for (Action a : stageActions(rest, stage)) {
    a.mb += a.kind == ActionKind::Step ? steps : offset;
    out.push_back(a);
  }
  return out;
}


ScheduleCheck checkSchedule(const ScheduleParams& p) {
  checkScheduleParams(p);
  std::vector<std::vector<Action>> lists;
  lists.reserve(static_cast<size_t>(p.stages));
  for (int s = 0; s < p.stages; ++s) lists.push_back(stageActions(p, s));
  return checkSchedule(lists, p.minibatches * p.microbatches);
}

}  // namespace pm

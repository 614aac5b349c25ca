#include "core/pipeline/schedule_decl.h"

#include <stdexcept>

#include "core/pipeline/schedule.h"

namespace pm {

const std::vector<ScheduleDecl>& scheduleDecls() {
  // kind, name, summary,
  //   synchronous, weights, splitBackward, takesUpdateInterval, takesTiming, takesPipeMare, generator
  //   [, chunks, placement, rank generator]
  static const std::vector<ScheduleDecl> t{
      {ScheduleKind::GPipe, "gpipe", "GPipe: all forwards, then all backwards, a flush per minibatch",  //
       true, WeightFamily::Current, false, false, false, false, gpipeActions},
      {ScheduleKind::OneFOneB, "1f1b", "1F1B: forwards and backwards alternate, a flush per minibatch",  //
       true, WeightFamily::Current, false, false, false, false, oneFOneBActions},
      {ScheduleKind::Interleaved1F1B, "interleaved-1f1b",
       "Interleaved 1F1B: v model chunks per rank in a loop (pipeline.chunks), a flush per minibatch",  //
       true, WeightFamily::Current, false, false, false, false, chunkedStageActions, 0, interleavedStage,
       interleaved1F1BActions},
      {ScheduleKind::ZBH1, "zb-h1", "ZB-H1: 1F1B with the backward split in B and W, W filling the bubble",  //
       true, WeightFamily::Current, true, false, false, false, zbH1StageActions},
      {ScheduleKind::ZBV, "zb-v", "ZB-V: two model chunks per rank in a V, the backward split in B and W",  //
       true, WeightFamily::Current, true, false, false, false, chunkedStageActions, 2, zbVStage, zbVRankActions},
      {ScheduleKind::PipeDream, "pipedream", "PipeDream: asynchronous 1F1B, weight stashing",  //
       false, WeightFamily::Stash, false, true, true, false, asyncOneFOneBActions},
      {ScheduleKind::PipeDream2BW, "pipedream-2bw", "PipeDream-2BW: asynchronous 1F1B, two weight versions",  //
       false, WeightFamily::TwoVersions, false, true, false, false, asyncOneFOneBActions},
      {ScheduleKind::PipeMare, "pipemare", "PipeMare: asynchronous 1F1B, one weight version (T1, T2, warm-up)",  //
       false, WeightFamily::Predicted, false, false, true, true, asyncOneFOneBActions},
  };
  return t;
}

const ScheduleDecl& scheduleDecl(ScheduleKind k) {
  for (const auto& d : scheduleDecls())
    if (d.kind == k) return d;
  throw std::invalid_argument("schedule: unknown schedule value " + std::to_string(static_cast<int>(k)));
}

std::string scheduleNamesWhere(bool (*has)(const ScheduleDecl&), const char* conjunction) {
  std::vector<std::string> names;
  for (const auto& d : scheduleDecls())
    if (has(d)) names.emplace_back(d.name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? std::string(" ") + conjunction + " " : ", ";
    out += names[i];
  }
  return out;
}

bool isAsynchronous(ScheduleKind k) { return !scheduleDecl(k).synchronous; }

int scheduleChunks(ScheduleKind k, int configured) {
  const int c = scheduleDecl(k).chunks;
  return c == 0 ? configured : c;
}

bool takesChunks(ScheduleKind k) { return scheduleDecl(k).chunks == 0; }

}  // namespace pm

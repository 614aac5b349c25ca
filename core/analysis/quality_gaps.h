#pragma once
// The study's quality judgments as numbers (reports/study.md, sections 1-1f and the claims): a
// PipeMare variant's final test accuracy against gpipe's at one learning rate, over seeds; whether
// that gap meets the paper's target (within 1.0 point) beyond the seeds' noise; and the rate a
// regime is judged at. Qt-free; the report in ui/report only formats these.
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pm {

// The paper's quality target: PipeMare within 1.0 accuracy point of synchronous training.
inline constexpr double kTargetPoints = 1.0;

// One variant at one learning rate: its final test accuracy over seeds. mean is NaN unless every
// seed finished (a diverged or stopped run's last evaluation is no final figure); lo and hi are
// the seeds' extremes.
struct FinalAccuracy {
  double mean = NAN, lo = NAN, hi = NAN;
  std::vector<int64_t> seeds;
  // Stage 0's largest recorded delay in optimizer steps (its stage0/tau), over the seeds; NaN
  // when none was recorded.
  double delay = NAN;
};
// lr -> variant ("gpipe", "t1t2", "naive", ...) -> its final accuracy.
using RegimeResults = std::map<std::string, std::map<std::string, FinalAccuracy>>;

// A variant's gap to gpipe at one learning rate, in accuracy points: the mean over seeds, and the
// seed spread (the larger of the two variants' ranges; NaN with one seed).
struct Gap {
  double points = NAN, spread = NAN;
  size_t seeds = 0;
};
// NaN points where the rate lacks gpipe or the variant.
Gap gapOf(const RegimeResults& r, const std::string& lr, const std::string& variant);
// The variant's recorded delay at that rate (FinalAccuracy::delay); NaN when unknown.
double delayOf(const RegimeResults& r, const std::string& lr, const std::string& variant);

enum class GapVerdict {
  NoFigure,               // no finite gap
  NotReproduced,          // misses the target by more than the seeds' spread
  WithinNoise,            // misses the target, by less than the seeds' spread
  ReproducedWithinNoise,  // meets it, and the seeds differ by at least the target
  Reproduced,             // meets it
};
GapVerdict judgeGap(const Gap& g);
// A gap that misses the target by more than its seeds' spread (judgeGap == NotReproduced).
bool missesTarget(const Gap& g);

// The learning rate a regime is judged at, where gpipe and `variant` both ran ("" when none):
// among the rates with the most seeds of the two, the one where gpipe ends best. A rate run with
// more seeds has a spread to judge its gap against, so it goes before a rate whose single run of
// gpipe ends a fraction of a point higher.
std::string bestGpipeRate(const RegimeResults& r, const std::string& variant);

// A planner ratio against the paper's: within 20 % of it. False for a ratio that is not finite.
bool ratioReproduced(double ratio, double paper);

}  // namespace pm

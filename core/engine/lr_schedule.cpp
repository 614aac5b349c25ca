#include "core/engine/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace pm {

double baseLearningRate(const OptimizerConfig& opt, int64_t step, int64_t totalSteps) {
  const auto& s = opt.schedule;
  const double lr = opt.lr;
  const double k = static_cast<double>(step);
  if (s.name == LrScheduleType::Step) {
    int64_t drops = s.step_size > 0 ? step / s.step_size : 0;
    return lr * std::pow(s.gamma, static_cast<double>(drops));
  }
  if (s.name == LrScheduleType::Cosine) {
    double warm = static_cast<double>(s.warmup_steps);
    if (warm > 0 && k < warm) return lr * (k + 1) / warm;
    // The decay starts at the peak (the warm-up's last step, or step 0) and reaches min_lr at the
    // run's last step, totalSteps - 1 (so it neither ends above min_lr nor repeats the peak after a
    // warm-up).
    const double start = warm > 0 ? warm - 1 : 0;
    const double span = std::max(1.0, static_cast<double>(totalSteps) - 1 - start);
    const double frac = std::min(1.0, (k - start) / span);
    return s.min_lr + (lr - s.min_lr) * 0.5 * (1.0 + std::cos(M_PI * frac));
  }
  if (s.name == LrScheduleType::LinearWarmup) {
    double warm = static_cast<double>(s.warmup_steps);
    return (warm > 0 && k < warm) ? lr * (k + 1) / warm : lr;
  }
  if (s.name == LrScheduleType::InverseSqrt) {
    double warm = std::max<double>(1.0, static_cast<double>(s.warmup_steps));
    if (k < warm) return lr * (k + 1) / warm;
    return lr * std::sqrt(warm / (k + 1));
  }
  return lr;  // constant
}

double t1LearningRate(double baseLr, double tau, int64_t step, int64_t annealSteps) {
  if (tau <= 1.0) return baseLr;
  double p = annealSteps > 0 ? 1.0 - std::min(static_cast<double>(step) / static_cast<double>(annealSteps), 1.0) : 0.0;
  return baseLr * std::pow(tau, -p);
}

int64_t t1AnnealSteps(const PipeMareConfig& pm, int64_t stepsPerEpoch) {
  int64_t k = stepsPerEpoch;
  if (pm.anneal_steps > 0) k = pm.anneal_steps;
  else if (pm.anneal_epochs > 0) k = std::llround(pm.anneal_epochs * static_cast<double>(stepsPerEpoch));
  return std::max<int64_t>(1, k);
}

}  // namespace pm

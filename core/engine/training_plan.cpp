#include "core/engine/training_plan.h"

#include <algorithm>
#include <cmath>

#include "core/data/datasets.h"
#include "core/util/errors.h"

namespace pm {

TrainingPlan::TrainingPlan(const Experiment& e, int64_t trainSamples)
    : samples_(trainSamples),
      batch_(e.data.batch_size),
      n_(e.pipeline.microbatches),
      evalInterval_(e.training.eval_interval),
      logInterval_(std::max<int64_t>(1, e.training.log_interval)),
      traceSteps_(e.training.trace_steps),
      seed_(e.training.seed),
      shuffle_(e.data.shuffle) {
  if (samples_ < n_)
    throw ConfigError("data", "the training split has " + std::to_string(samples_) + " samples, fewer than pipeline.microbatches = " +
                                  std::to_string(n_));
  stepsPerEpoch_ = samples_ / batch_;
  const int64_t rest = samples_ % batch_;
  if (rest >= n_) ++stepsPerEpoch_;
  stepsPerEpoch_ = std::max<int64_t>(1, stepsPerEpoch_);
  totalSteps_ = e.training.steps > 0 ? e.training.steps
                                     : std::max<int64_t>(1, static_cast<int64_t>(std::ceil(e.training.epochs * static_cast<double>(stepsPerEpoch_) - 1e-9)));
}

std::vector<int64_t> TrainingPlan::minibatchIndices(int64_t k) const {
  const int64_t epoch = k / stepsPerEpoch_;
  const int64_t inEpoch = k % stepsPerEpoch_;
  if (epoch != cachedEpoch_) {
    if (shuffle_) {
      order_ = shuffledIndices(samples_, seed_, epoch);
    } else {
      order_.resize(static_cast<size_t>(samples_));
      for (int64_t i = 0; i < samples_; ++i) order_[static_cast<size_t>(i)] = i;
    }
    cachedEpoch_ = epoch;
  }
  const int64_t begin = inEpoch * batch_;
  const int64_t end = std::min(samples_, begin + batch_);
  return std::vector<int64_t>(order_.begin() + begin, order_.begin() + end);
}

int64_t TrainingPlan::minibatchSize(int64_t k) const {
  const int64_t begin = (k % stepsPerEpoch_) * batch_;
  return std::min(samples_, begin + batch_) - begin;
}

int64_t TrainingPlan::microbatchSize(int64_t mb) const {
  const int64_t b = minibatchSize(mb / n_);
  return b / n_ + (mb % n_ < b % n_ ? 1 : 0);
}

bool TrainingPlan::evalDue(int64_t done) const {
  if (done == totalSteps_) return true;
  if (evalInterval_ > 0) return done % evalInterval_ == 0;
  return done % stepsPerEpoch_ == 0;
}

bool TrainingPlan::logDue(int64_t done) const { return done % logInterval_ == 0 || done == totalSteps_; }

bool TrainingPlan::traceDue(int64_t minibatch) const { return traceSteps_ < 0 || minibatch < traceSteps_; }

int64_t TrainingPlan::warmupMinibatches(double warmupEpochs) const {
  if (!(warmupEpochs > 0)) return 0;
  return std::min(totalSteps_, static_cast<int64_t>(std::llround(warmupEpochs * static_cast<double>(stepsPerEpoch_))));
}

}  // namespace pm

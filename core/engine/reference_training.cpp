#include "core/engine/reference_training.h"

#include "core/engine/batch_source.h"
#include "core/engine/optimizer_factory.h"
#include "core/engine/run_outcome.h"
#include "core/engine/training_plan.h"
#include "core/models/model_zoo.h"
#include "core/util/system_info.h"

namespace pm {

ReferenceResult trainWithoutPipeline(const Experiment& e, int64_t warmupSteps, BackwardOrder order) {
  setStageThreads(e.execution.threads_per_stage);  // as many threads as one stage has
  auto train = makeBatchSource(e, true);
  TrainingPlan plan(e, train->size());
  auto units = buildModel(e.model, e.training.seed);
  auto model = makeStage(units, 0, static_cast<int>(units.size()));
  model->train();
  auto opt = makeOptimizer(e.optimizer, model->parameters());
  double t0 = monotonicSeconds();
  int64_t samples = 0;
  for (int64_t k = 0; k < plan.totalSteps(); ++k) {
    if (k == warmupSteps) {
      t0 = monotonicSeconds();
      samples = 0;
    }
    Batch b = train->get(plan.minibatchIndices(k));
    opt->zero_grad();
    const auto mbs = splitMicrobatches(b, plan.microbatches());
    auto loss = [&](const Batch& mb) {
      return computeLoss(model->forward(mb.x), mb.y, train->task()) * (static_cast<double>(mb.size()) / static_cast<double>(b.size()));
    };
    if (order == BackwardOrder::Reversed) {
      // Every forward first (BatchNorm sees the microbatches in the same order), then the
      // backwards last to first, as gpipe runs them: the gradients are summed in its order.
      std::vector<torch::Tensor> losses;
      for (const auto& mb : mbs) losses.push_back(loss(mb));
      for (auto it = losses.rbegin(); it != losses.rend(); ++it) it->backward();
    } else {
      for (const auto& mb : mbs) loss(mb).backward();
    }
    opt->step();
    samples += b.size();
  }
  ReferenceResult r;
  r.samplesPerSecond = static_cast<double>(samples) / std::max(1e-9, monotonicSeconds() - t0);
  for (const auto& p : model->named_parameters()) r.state.push_back(p.value().detach().clone());
  for (const auto& p : model->named_buffers()) r.state.push_back(p.value().detach().clone());
  return r;
}

}  // namespace pm

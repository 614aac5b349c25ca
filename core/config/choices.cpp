#include "core/config/choices.h"

// The one table of each named value of the format. The order is the order messages ("expected one
// of gpipe, 1f1b, ...") and the designer's lists show.

namespace pm {

template <>
const std::vector<Choice<ScheduleKind>>& choiceTable<ScheduleKind>() {
  static const std::vector<Choice<ScheduleKind>> t = [] {
    std::vector<Choice<ScheduleKind>> v;
    for (const auto& d : scheduleDecls()) v.push_back({d.kind, d.name});
    return v;
  }();
  return t;
}

template <>
const std::vector<Choice<PipelineTiming>>& choiceTable<PipelineTiming>() {
  static const std::vector<Choice<PipelineTiming>> t{{PipelineTiming::Software1F1B, "1f1b"},
                                                     {PipelineTiming::Paper, "paper"}};
  return t;
}

template <>
const std::vector<Choice<PartitionMethod>>& choiceTable<PartitionMethod>() {
  static const std::vector<Choice<PartitionMethod>> t{{PartitionMethod::Parameters, "parameters"},
                                                      {PartitionMethod::Time, "time"},
                                                      {PartitionMethod::Explicit, "explicit"}};
  return t;
}

template <>
const std::vector<Choice<WarmupSchedule>>& choiceTable<WarmupSchedule>() {
  static const std::vector<Choice<WarmupSchedule>> t{{WarmupSchedule::GPipe, "gpipe"},
                                                     {WarmupSchedule::OneFOneB, "1f1b"}};
  return t;
}

template <>
const std::vector<Choice<MomentumMode>>& choiceTable<MomentumMode>() {
  static const std::vector<Choice<MomentumMode>> t{{MomentumMode::Same, "same"},
                                                   {MomentumMode::DelayScaled, "delay-scaled"}};
  return t;
}

template <>
const std::vector<Choice<OptimizerType>>& choiceTable<OptimizerType>() {
  static const std::vector<Choice<OptimizerType>> t{{OptimizerType::Sgd, "sgd"},
                                                    {OptimizerType::Adam, "adam"},
                                                    {OptimizerType::AdamW, "adamw"}};
  return t;
}

template <>
const std::vector<Choice<LrScheduleType>>& choiceTable<LrScheduleType>() {
  static const std::vector<Choice<LrScheduleType>> t{{LrScheduleType::Constant, "constant"},
                                                     {LrScheduleType::Step, "step"},
                                                     {LrScheduleType::Cosine, "cosine"},
                                                     {LrScheduleType::LinearWarmup, "linear-warmup"},
                                                     {LrScheduleType::InverseSqrt, "inverse-sqrt"}};
  return t;
}

template <>
const std::vector<Choice<DatasetKind>>& choiceTable<DatasetKind>() {
  static const std::vector<Choice<DatasetKind>> t{{DatasetKind::FashionMnist, "fashion-mnist"},
                                                  {DatasetKind::Text, "text"},
                                                  {DatasetKind::Synthetic, "synthetic"},
                                                  {DatasetKind::Tensors, "tensors"}};
  return t;
}

template <>
const std::vector<Choice<ModelTask>>& choiceTable<ModelTask>() {
  static const std::vector<Choice<ModelTask>> t{{ModelTask::Auto, "auto"},
                                                {ModelTask::Classification, "classification"},
                                                {ModelTask::LanguageModel, "language-model"},
                                                {ModelTask::Regression, "regression"}};
  return t;
}

template <>
const std::vector<Choice<EvalSplit>>& choiceTable<EvalSplit>() {
  static const std::vector<Choice<EvalSplit>> t{{EvalSplit::Test, "test"}, {EvalSplit::Train, "train"}};
  return t;
}

template <>
const std::vector<Choice<SyntheticTask>>& choiceTable<SyntheticTask>() {
  static const std::vector<Choice<SyntheticTask>> t{{SyntheticTask::Classification, "classification"},
                                                    {SyntheticTask::Regression, "regression"}};
  return t;
}

template <>
const std::vector<Choice<ExecutionMode>>& choiceTable<ExecutionMode>() {
  static const std::vector<Choice<ExecutionMode>> t{{ExecutionMode::Single, "single"}, {ExecutionMode::Real, "real"}};
  return t;
}

template <>
const std::vector<Choice<CommBackend>>& choiceTable<CommBackend>() {
  static const std::vector<Choice<CommBackend>> t{
      {CommBackend::Gloo, "gloo"}, {CommBackend::Nccl, "nccl"}, {CommBackend::Local, "local"}};
  return t;
}

ScheduleKind scheduleFromName(const std::string& name) { return choiceOrThrow<ScheduleKind>(name, "schedule"); }

std::string scheduleName(ScheduleKind k) { return choiceName(k); }

const std::vector<std::string>& scheduleNames() {
  static const std::vector<std::string> names = choiceNames<ScheduleKind>();
  return names;
}

}  // namespace pm

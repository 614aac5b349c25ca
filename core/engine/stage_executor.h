#pragma once
// The arithmetic of one stage: its slice of the model and its optimizer, the forward, backward
// and step of each microbatch, and the messages in flight (activations and gradients received,
// gradients to send, the microbatches whose backward is still to come). Which weights each pass
// uses is its WeightPolicy's; what it measures goes to its StageMeter; the order of the passes
// is the StageWorker's.
#include <torch/torch.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/comm/communicator.h"
#include "core/engine/batch_source.h"
#include "core/engine/memory_accounting.h"
#include "core/engine/stage_meter.h"
#include "core/engine/stage_plan.h"
#include "core/engine/weight_policy.h"
#include "core/models/model_zoo.h"
#include "core/pipeline/partition.h"

namespace pm {

class StageExecutor {
 public:
  // `units` is the whole model (this stage takes its slice); `device` is "cpu" or "cuda:K".
  StageExecutor(const Experiment& e, const StagePlan& plan, const Partition& partition, const std::vector<Unit>& units,
                const std::string& device, std::shared_ptr<const BatchSource> train, Communicator* comm,
                StageMeter& meter, bool keepSentActivations);

  torch::nn::Sequential& module() { return module_; }
  const torch::nn::Sequential& module() const { return module_; }
  const torch::Device& device() const { return device_; }
  WeightPolicy& policy() { return *policy_; }

  void receiveActivation(int64_t mb);
  void receiveGradient(int64_t mb);
  void sendActivation(int64_t mb);
  void sendGradient(int64_t mb);
  void forward(int64_t mb);
  void backward(int64_t mb);
  // The backward split in two (zero-bubble schedules): backwardInput computes the gradient with
  // respect to the stage input alone (sent upstream next) and the gradients of the outputs of the
  // stage's units, keeping the graph; backwardWeight, later, the weight gradients of each unit from
  // its output's gradient, accumulated into the parameters' .grad in the order the W run (the
  // schedules run them in microbatch order, as a whole backward accumulates). The kernels are the
  // ones a whole backward runs: the results are bit-identical to backward(mb).
  void backwardInput(int64_t mb);
  void backwardWeight(int64_t mb);
  // pipemare: a stale microbatch's forward, recomputed with its backward's weights before its
  // gradient arrives (the stage would otherwise wait idle, then recompute while the next stage
  // waits for it). The caller makes sure the backward of mb is the stage's very next action.
  // Returns whether it recomputed.
  bool recomputeAhead(int64_t mb);
  // The parameters hold T2's estimate for a graph recomputed ahead until its backward.
  bool holdingEstimate() const { return holdingEstimate_; }
  // Optimizer step k (0-based).
  void step(int64_t k);
  // Evaluation: the stage's forward in evaluation mode.
  torch::Tensor evaluate(const torch::Tensor& x);

  // The last stage: the mean training loss of minibatch k (NaN when none), forgotten after.
  double takeMinibatchLoss(int64_t k);
  double lastLr() const { return lastLr_; }
  void setLastLr(double lr) { lastLr_ = lr; }
  int64_t lastBackwardMb() const { return lastBackwardMb_; }
  void setLastBackwardMb(int64_t mb) { lastBackwardMb_ = mb; }

  // Memory by category now (stage inputs, kept graphs and messages in flight are activations).
  StageMemory memoryNow() const;
  void updateMemory() { meter_.setMemory(memoryNow()); }

  // Checkpoints: the stage's tensors and messages in flight (`outbox`: the activations sent
  // before the cut and received after it, sent again after a restore).
  bool holdsSent(int64_t mb) const { return sentAct_.count(mb) > 0; }
  void save(torch::serialize::OutputArchive& a, Json& meta, const std::vector<int64_t>& outbox) const;
  void restore(torch::serialize::InputArchive& a, const Json& meta);
  void resendPending();
  std::vector<torch::Tensor> stateTensors() const;

 private:
  struct InFlight {
    torch::Tensor input;   // stage input (leaf with grad for s > 0)
    torch::Tensor output;  // stage output (scaled loss on the last stage); undefined when recomputed
    torch::Tensor target;  // last stage: the microbatch's targets
    double scale = 1.0;    // loss scale: the microbatch's share of its step's samples
    int64_t shadow = -1;   // the weight version whose shadow module ran the forward (-1: the live module)
    // Bytes the forward left allocated (output, and what autograd saved for the backward), measured
    // by the meter; -1 when not measured (CUDA, restored from a checkpoint): the output counts.
    int64_t keptBytes = -1;
    // pipemare: the forward was recomputed ahead, while its gradient was in flight (output is that
    // graph); with T2 `held` keeps the live weights while the estimate stays in the parameters
    // until the backward (which follows at once) puts them back.
    bool recomputedAhead = false;
    std::vector<torch::Tensor> held;
    // Split backward: the output of each of the stage's units (the last: `output`), kept by the
    // forward; after backwardInput, the gradient of each (the last: the gradient received).
    std::vector<torch::Tensor> unitOutputs;
    std::vector<torch::Tensor> unitGrads;
  };
  // The stage's forward unit by unit (what module_->forward does), keeping each unit's output
  // when `outputs` is given.
  torch::Tensor forwardUnits(const torch::Tensor& x, std::vector<torch::Tensor>* outputs);
  const Batch& microbatch(int64_t mb);
  int64_t shapeKey(int64_t mb) const;  // the key of microbatch mb's messages (its rows)
  // The stage forward again from its input, without updating BatchNorm statistics (counted).
  // With `outputs`: unit by unit, keeping each unit's output (a split backward).
  torch::Tensor recomputeForward(const torch::Tensor& input, std::vector<torch::Tensor>* outputs = nullptr);
  // out.backward() with the gradient received from the next stage for microbatch mb.
  void backwardWithPeerGradient(int64_t mb, const torch::Tensor& out);
  void backwardStale(int64_t mb, InFlight& f, int64_t lag);
  void finishBackward(int64_t mb, const InFlight& f, int64_t lag);
  int64_t activationBytes() const;
  std::string where() const { return "stage " + std::to_string(plan_.stage()); }

  const StagePlan& plan_;
  Experiment e_;
  torch::Device device_{torch::kCPU};
  torch::nn::Sequential module_;
  std::vector<torch::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<WeightPolicy> policy_;
  std::shared_ptr<const BatchSource> train_;
  Communicator* comm_;
  StageMeter& meter_;
  bool keepSent_;  // asynchronous with checkpoints: activations sent are kept until their backward
  bool holdingEstimate_ = false;
  double lastLr_ = 0;
  int64_t lastBackwardMb_ = -1;

  std::map<int64_t, std::vector<Batch>> minibatchCache_;
  std::map<int64_t, torch::Tensor> received_;   // activations received, by microbatch
  std::map<int64_t, torch::Tensor> gradsIn_;    // gradients received, by microbatch
  std::map<int64_t, torch::Tensor> gradsOut_;   // gradients to send, by microbatch
  std::map<int64_t, InFlight> inflight_;
  std::map<int64_t, InFlight> pendingWeight_;  // split backward: input gradient done, weight gradients to come
  std::map<int64_t, torch::Tensor> sentAct_;    // activations sent and not yet back-propagated
  std::vector<std::pair<int64_t, torch::Tensor>> resend_;  // after a restore
  std::map<int64_t, double> lossSum_;           // last stage: sum of microbatch losses * size
  std::map<int64_t, int64_t> lossSamples_;
};

}  // namespace pm

#pragma once
// Weight stashing (PipeDream, PipeDream-2BW): which weight version each in-flight microbatch's
// forward used, and copies of the older versions that are still needed. Copy-on-write: the
// current weights are copied only when a step is about to change them while an in-flight
// microbatch still refers to them. Version v = the number of optimizer steps taken before it.
// Also measures the delay of each microbatch (steps between its forward and its backward).
// Single-threaded (one per stage).
#include <torch/torch.h>

#include <map>
#include <vector>

namespace pm {

class WeightVersions {
 public:
  // The forward of `mb` ran on the current version.
  void onForward(int64_t mb);
  int64_t currentVersion() const { return version_; }
  int64_t versionOf(int64_t mb) const;
  // Steps between mb's forward and now.
  int64_t delayOf(int64_t mb) const { return version_ - versionOf(mb); }
  // Before an optimizer step: keep a copy of `current` if an in-flight microbatch refers to it.
  void beforeStep(const std::vector<torch::Tensor>& current);
  // Registers `copy` (the current weights' values, never written while referenced) as the current
  // version's stash, so beforeStep makes no copy of its own. PipeDream's kept graphs use this:
  // their forwards ran on exactly these tensors.
  void adopt(std::vector<torch::Tensor> copy);
  // Whether version v is stashed (still referenced by an in-flight microbatch).
  bool stashed(int64_t v) const { return stash_.count(v) > 0; }
  void afterStep() { ++version_; }
  // The stashed weights mb's forward used, or nullptr when that is the current version.
  const std::vector<torch::Tensor>* weightsFor(int64_t mb) const;
  // The backward of `mb` is done: release its reference (and the version when unused).
  void onBackwardDone(int64_t mb);
  // Versions held now: the stashed copies plus the current weights.
  int versionsHeld() const { return static_cast<int>(stash_.size()) + 1; }
  int64_t stashBytes() const;
  // Checkpoints: the whole state (versions, references and stashed copies).
  void save(torch::serialize::OutputArchive& a) const;
  void load(torch::serialize::InputArchive& a);

 private:
  int64_t version_ = 0;
  std::map<int64_t, int64_t> versionOfMb_;
  std::map<int64_t, int> refs_;                                // version -> in-flight microbatches
  std::map<int64_t, std::vector<torch::Tensor>> stash_;        // old versions still referenced
};

// PipeMare T2, discrepancy correction. Per stage a weight-shaped delta, starting at 0, updated
// after every step as delta = gamma * delta + (1 - gamma) * (w_new - w_old), gamma = D^(1/tau)
// for the stage's delay tau. The backward of a microbatch whose forward ran `lag` steps ago uses
// w_hat = w - lag * delta, an estimate of the weights its forward used.
class DiscrepancyCorrector {
 public:
  DiscrepancyCorrector(double decayD, double stageDelay);
  double gamma() const { return gamma_; }
  // Call with the weights before and after a step.
  void update(const std::vector<torch::Tensor>& before, const std::vector<torch::Tensor>& after);
  // w - lag * delta (new tensors).
  std::vector<torch::Tensor> estimate(const std::vector<torch::Tensor>& w, int64_t lag) const;
  int64_t bytes() const;
  const std::vector<torch::Tensor>& delta() const { return delta_; }
  void save(torch::serialize::OutputArchive& a) const;
  void load(torch::serialize::InputArchive& a);

 private:
  double gamma_;
  std::vector<torch::Tensor> delta_;
};

// Copies of tensors (detached), and in-place assignment of values (no autograd, and without
// bumping the destination's version counter: see weight_versions.cpp).
std::vector<torch::Tensor> cloneAll(const std::vector<torch::Tensor>& ts);
void assignAll(std::vector<torch::Tensor>& dst, const std::vector<torch::Tensor>& src);
// ||a - b|| / ||a|| over all tensors together.
double relativeGap(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b);

}  // namespace pm

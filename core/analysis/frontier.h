#pragma once
// PipeMare against the synchronous frontier (the study's section 5): the best synchronous schedule
// to hold against an asynchronous one within the memory the asynchronous one uses, the ratio of
// their figures, and whether the advantage survives. No Qt; pure functions, any thread.
#include <cmath>
#include <string>
#include <vector>

namespace pm {

// One schedule's figures in one setting: a planner row, or a measured schedule over rounds.
struct FrontierPoint {
  std::string method;        // a training method's name: "zb-v", "pipemare+T2"
  bool synchronous = true;   // its schedule's declaration: a flush per minibatch
  double value = NAN;        // utilization or throughput: higher is better
  double memoryBytes = NAN;  // the largest device's memory (weights, gradients, optimizer, stash, activations)
  // Measured: each round's value, round k of every point run in the same round (empty: planner).
  std::vector<double> rounds;
};

// Whether the subject's figure beats the best synchronous one: over every round (Survives), under
// it in every round (Lost), or rounds on both sides (Even). Without rounds (the planner) a ratio
// above 1 + kFrontierMargin survives, one below 1 - kFrontierMargin is lost, the rest even.
enum class Advantage { Survives, Even, Lost, Unknown };
inline constexpr double kFrontierMargin = 0.05;
const char* advantageName(Advantage a);  // "survives", "even", "lost", "-"

struct FrontierComparison {
  std::string subject;
  // The best synchronous schedule that needs no more memory than the subject (empty: none fits),
  // and the subject's value over its value; ratioRounds: round k's ratio, when both have rounds.
  std::string bestAtMemory;
  double ratioAtMemory = NAN;
  std::vector<double> ratioRounds;
  // The best synchronous schedule at any memory, and the subject's ratio over it.
  std::string bestOverall;
  double ratioOverall = NAN;
  // Judged at the subject's memory; Survives when no synchronous schedule fits in it.
  Advantage advantage = Advantage::Unknown;
};

// Compares `subject` (an asynchronous point) with the synchronous points that have a finite value.
// Ties go to the schedule with less memory. Throws std::invalid_argument when no point is named
// `subject`.
FrontierComparison compareWithFrontier(const std::vector<FrontierPoint>& points, const std::string& subject);

}  // namespace pm

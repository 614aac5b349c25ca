#pragma once
// Base learning-rate schedules (per optimizer step k, 0-based) and PipeMare's T1 rescheduling.
// Pure functions, no LibTorch.
#include <cstdint>

#include "core/config/experiment.h"

namespace pm {

// lr_k for the configured schedule; totalSteps is the run's number of optimizer steps (cosine).
double baseLearningRate(const OptimizerConfig& opt, int64_t step, int64_t totalSteps);

// PipeMare T1: lr_k * tau^(-p_k), p_k = 1 - min(k/K, 1). tau <= 1 or K <= 0 after the anneal: no scaling.
double t1LearningRate(double baseLr, double tau, int64_t step, int64_t annealSteps);

// T1's K in optimizer steps: pipemare.anneal_steps, else pipemare.anneal_epochs epochs of
// stepsPerEpoch updates, else one epoch; at least 1.
int64_t t1AnnealSteps(const PipeMareConfig& pm, int64_t stepsPerEpoch);

}  // namespace pm

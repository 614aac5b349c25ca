#pragma once
// Measures the memory that tensors really take on the CPU: install() wraps c10's CPU allocator
// (once per process) with one that counts the bytes of every storage it hands out and takes back.
// live() is the bytes allocated through it and not yet freed; peak() the highest live() since the
// last resetPeak(). Process-wide and thread-safe (atomics); tensors allocated before install() are
// not counted, nor are CUDA tensors. The stage worker brackets each forward and backward with it to
// measure what autograd keeps for the backward and the action's transient peak.
#include <cstdint>

namespace pm {

class TensorMemoryMeter {
 public:
  static void install();  // idempotent
  static bool installed();
  static int64_t live();
  static int64_t peak();
  static void resetPeak();  // peak := live
};

}  // namespace pm

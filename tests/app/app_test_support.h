#pragma once
// Helpers for the end-to-end tests that drive the real executables: a fixture with a fresh folder
// and store path per test, and the shared helpers (tests/support/test_support.h: child processes,
// files, paths) with the system headers these tests use beside them.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/store/run_store.h"
#include "tests/support/test_support.h"

extern char** environ;

namespace pm::test {

namespace fs = std::filesystem;

// Loss points recorded so far for `run` in the store `db`, read through a read-only connection;
// 0 while the store cannot be read yet.
inline size_t lossPoints(const std::string& db, int64_t run = 1) {
  try {
    pm::RunStore store(db, /*readOnly=*/true);
    return store.loadMetric(run, "train/loss").size();
  } catch (const std::exception&) {
    return 0;
  }
}

// A fresh directory per test, removed afterwards, with the path of a run store in it.
class AppTest : public ::testing::Test {
 public:
  static std::string bin() { return binPath("pipemare"); }
  static std::string exp(const std::string& name) { return experimentPath(name); }

 protected:
  TempDir tmp_;
  const fs::path dir_ = tmp_.dir;
  const std::string db_ = tmp_.file("runs.db");
};

}  // namespace pm::test

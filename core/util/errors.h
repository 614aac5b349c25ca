#pragma once
// Error types shared by core. Each carries a "place" (file, field path, line) so that
// front ends can print "<place>: <problem>". Usage/config errors map to exit code 2.
#include <stdexcept>
#include <string>

namespace pm {

enum class ErrorKind { Config, Data, Store, Engine, Comm, Usage, File };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string place, const std::string& problem);
  ErrorKind kind() const { return kind_; }
  const std::string& place() const { return place_; }
  const std::string& problem() const { return problem_; }
  // Process exit code for this error: 2 for config/usage/data errors, 1 otherwise.
  int exitCode() const;

 private:
  ErrorKind kind_;
  std::string place_;
  std::string problem_;
};

// Bad experiment file, bad --set override, bad command-line usage (exit 2).
class ConfigError : public Error {
 public:
  ConfigError(std::string place, const std::string& problem) : Error(ErrorKind::Config, std::move(place), problem) {}
};
// A dataset file that is missing, truncated or malformed (exit 2).
class DataError : public Error {
 public:
  DataError(std::string place, const std::string& problem) : Error(ErrorKind::Data, std::move(place), problem) {}
};
// The run store (SQLite) could not do what was asked (exit 1; exit 2 for a file that is not a store).
class StoreError : public Error {
 public:
  StoreError(std::string place, const std::string& problem, bool usage = false)
      : Error(usage ? ErrorKind::Usage : ErrorKind::Store, std::move(place), problem) {}
};
// A file that could not be written (a full disk, an I/O error, a folder that is gone; exit 1).
class FileError : public Error {
 public:
  FileError(std::string place, const std::string& problem) : Error(ErrorKind::File, std::move(place), problem) {}
};
// A failure while training (exit 1).
class EngineError : public Error {
 public:
  EngineError(std::string place, const std::string& problem) : Error(ErrorKind::Engine, std::move(place), problem) {}
};

// What an exception says, for people: its what(), less the C++ stack that LibTorch's errors carry
// after their message ("Exception raised from ...", "frame #0: ...").
std::string errorText(const std::exception& ex);

}  // namespace pm

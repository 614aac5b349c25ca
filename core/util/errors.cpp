#include "core/util/errors.h"

namespace pm {

static std::string compose(const std::string& place, const std::string& problem) {
  return place.empty() ? problem : place + ": " + problem;
}

Error::Error(ErrorKind kind, std::string place, const std::string& problem)
    : std::runtime_error(compose(place, problem)), kind_(kind), place_(std::move(place)), problem_(problem) {}

int Error::exitCode() const {
  switch (kind_) {
    case ErrorKind::Config:
    case ErrorKind::Data:
    case ErrorKind::Usage:
      return 2;
    default:
      return 1;
  }
}

std::string errorText(const std::exception& ex) {
  std::string what = ex.what();
  for (const char* marker : {"\nException raised from ", "\nframe #0"})
    if (const auto at = what.find(marker); at != std::string::npos) what.resize(at);
  return what;
}

}  // namespace pm

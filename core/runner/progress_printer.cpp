#include "core/runner/progress_printer.h"

#include <unistd.h>

#include <cmath>
#include <string>

#include "core/util/strings.h"
#include "core/util/system_info.h"

namespace pm {

ProgressPrinter::ProgressPrinter(FILE* out, double lineInterval)
    : out_(out), tty_(isatty(fileno(out)) != 0), lineInterval_(lineInterval) {}

void ProgressPrinter::emit(const Json& e) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string type = e.value("type", "");
  auto endBar = [&] {
    if (barShown_) std::fputc('\n', out_);
    barShown_ = false;
  };
  if (type == ev::kRunStarted) {
    endBar();
    std::string blas = e.contains("blas") ? e["blas"].value("kind", std::string("?")) : std::string("?");
    std::fprintf(out_, "partition: %s; BLAS: %s; %d thread(s) per stage; %lld steps\n",
                 e.value("partition_text", std::string("?")).c_str(), blas.c_str(), e.value("threads", 0),
                 static_cast<long long>(e.value("total_steps", int64_t{0})));
  } else if (type == ev::kStep) {
    // A loss that is not finite travels as null (JSON has no NaN): shown as nan, not as the last one.
    if (e.contains("loss")) lastLoss_ = e["loss"].is_number() ? e["loss"].get<double>() : std::nan("");
    if (e.contains("samples_per_s") && e["samples_per_s"].is_number()) lastThroughput_ = e["samples_per_s"].get<double>();
  } else if (type == ev::kProgress) {
    const int64_t step = e.value("step", int64_t{0}), total = std::max<int64_t>(1, e.value("total_steps", int64_t{1}));
    const double frac = static_cast<double>(step) / static_cast<double>(total);
    char buf[256];
    std::string eta = formatDuration(e.value("eta_s", -1.0));
    if (tty_) {
      const int width = 24;
      int filled = static_cast<int>(frac * width);
      std::string bar(static_cast<size_t>(filled), '#');
      bar += std::string(static_cast<size_t>(width - filled), '.');
      std::snprintf(buf, sizeof buf, "\r[%s] %3.0f%% step %lld/%lld epoch %.2f loss %.4f %.0f samples/s ETA %s ",
                    bar.c_str(), frac * 100, static_cast<long long>(step), static_cast<long long>(total),
                    e.value("epoch", 0.0), lastLoss_, lastThroughput_, eta.c_str());
      std::fputs(buf, out_);
      barShown_ = true;
    } else {
      const double now = monotonicSeconds();
      if (now - lastLine_ < lineInterval_ && step < total) return;
      lastLine_ = now;
      std::snprintf(buf, sizeof buf, "step %lld/%lld (%.0f%%) epoch %.2f loss %.4f %.0f samples/s ETA %s\n",
                    static_cast<long long>(step), static_cast<long long>(total), frac * 100, e.value("epoch", 0.0),
                    lastLoss_, lastThroughput_, eta.c_str());
      std::fputs(buf, out_);
    }
  } else if (type == ev::kEval) {
    endBar();
    std::string line = "eval at step " + std::to_string(e.value("step", int64_t{0})) + ": loss " +
                       std::to_string(e.value("loss", 0.0));
    if (e.contains("accuracy") && e["accuracy"].is_number())
      line += ", accuracy " + std::to_string(e["accuracy"].get<double>());
    if (e.contains("perplexity") && e["perplexity"].is_number())
      line += ", perplexity " + std::to_string(e["perplexity"].get<double>());
    std::fprintf(out_, "%s\n", line.c_str());
  } else if (type == ev::kWarning) {
    endBar();
    std::fprintf(out_, "warning: %s\n", e.value("message", std::string()).c_str());
  } else if (type == ev::kError) {
    endBar();
    std::string place = e.value("place", std::string());
    std::fprintf(out_, "error: %s%s\n", place.empty() ? "" : (place + ": ").c_str(), e.value("message", std::string()).c_str());
  } else if (type == ev::kRunFinished) {
    endBar();
  }
  std::fflush(out_);
}

void ProgressPrinter::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  std::fflush(out_);
}

}  // namespace pm

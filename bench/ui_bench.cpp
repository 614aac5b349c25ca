// ui_bench: the GUI's drawing costs (offscreen).
//  (a) live view: redraw of a plot holding 1,000,000 points per series (4 series) while 1,000 new
//      points per series arrive between frames; the time of one frame (decimate + draw), against a
//      frame of the same plot holding 1,000 points per series (baseline, same run).
//  (b) compare: opening a comparison of 10 runs x 100,000 points (load from the store, decimate,
//      draw, summary table), against loading the same points with RunStore alone (baseline).
// Medians of several repeats; targets printed beside the figures, never asserted.
#include <QApplication>
#include <QElapsedTimer>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/store/run_store.h"
#include "core/util/stats.h"
#include "ui/compare/compare_view.h"
#include "ui/plots/curve_plot.h"

namespace fs = std::filesystem;

namespace {

using pm::median;

// Points per series at the median frame of frameMs(initial, perFrame, frames): the series grow
// by perFrame before each frame.
size_t pointsAtMedianFrame(size_t initial, size_t perFrame, int frames) {
  return initial + perFrame * static_cast<size_t>(frames / 2 + 1);
}

// Median milliseconds of one frame after streaming `perFrame` points into each of 4 series that
// start with `initial` points.
double frameMs(size_t initial, size_t perFrame, int frames) {
  pm::ui::CurvePlot plot;
  plot.resize(1200, 600);
  plot.show();
  const QColor colors[] = {Qt::blue, Qt::red, Qt::darkGreen, Qt::magenta};
  size_t n = initial;
  for (int s = 0; s < 4; ++s) {
    plot.addSeries(QString("series %1").arg(s), colors[s]);
    std::vector<double> x(initial), y(initial);
    for (size_t i = 0; i < initial; ++i) {
      x[i] = static_cast<double>(i);
      y[i] = std::sin(0.001 * static_cast<double>(i) * (s + 1)) + 0.01 * static_cast<double>(i % 97);
    }
    plot.setSeriesData(s, std::move(x), std::move(y));
  }
  plot.replot();
  QApplication::processEvents();
  std::vector<double> ms;
  for (int f = 0; f < frames; ++f) {
    for (size_t i = 0; i < perFrame; ++i, ++n)
      for (int s = 0; s < 4; ++s) plot.appendPoint(s, static_cast<double>(n), std::cos(0.001 * static_cast<double>(n) * (s + 1)));
    QElapsedTimer t;
    t.start();
    plot.replot();
    QApplication::processEvents();
    ms.push_back(static_cast<double>(t.nsecsElapsed()) / 1e6);
  }
  return median(ms);
}

}  // namespace

int main(int argc, char** argv) {
  if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
  QApplication app(argc, argv);

  std::printf("(a) live view redraw, 4 series, 1,000 new points per series per frame (median of 3 repeats, each the median of 15 frames)\n");
  std::vector<double> big, small;
  for (int r = 0; r < 3; ++r) {
    big.push_back(frameMs(1000000, 1000, 15));
    small.push_back(frameMs(1000, 1000, 15));
    std::fprintf(stderr, "  repeat %d: %.1f / %.1f ms\n", r + 1, big.back(), small.back());
  }
  const double bigMs = median(big), smallMs = median(small);
  // The series grow while they stream: name the sizes at the median frame, not the starting ones.
  const size_t bigPts = pointsAtMedianFrame(1000000, 1000, 15), smallPts = pointsAtMedianFrame(1000, 1000, 15);
  std::printf("    %zu points per series (from 1,000,000): %.1f ms per frame (target < 30 ms)\n", bigPts, bigMs);
  std::printf("    %zu points per series (from 1,000):      %.1f ms per frame (baseline)\n", smallPts, smallMs);
  std::printf("    ratio: %.2fx the baseline for %.0fx the points\n\n", bigMs / smallMs,
              static_cast<double>(bigPts) / static_cast<double>(smallPts));

  const fs::path dir = fs::temp_directory_path() / ("pipemare-ui-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string db = (dir / "runs.db").string();
  std::vector<int64_t> ids;
  {
    pm::RunStore store(db);
    for (int r = 0; r < 10; ++r) {
      const int64_t id = store.createRun("bench run " + std::to_string(r),
                                         R"({"model":{"name":"cnn"},"pipeline":{"stages":2,"microbatches":8,"schedule":"gpipe"}})");
      for (int64_t s = 1; s <= 100000; ++s)
        store.appendMetric(id, "train/loss", s, 1.7e9 + static_cast<double>(s), 2.0 / std::sqrt(static_cast<double>(s)) + 0.001 * (s % 13));
      store.flush();
      store.setStatus(id, pm::RunStatus::Finished);
      ids.push_back(id);
    }
  }
  std::printf("(b) compare of 10 runs x 100,000 points (median of 5)\n");
  std::vector<double> open, raw;
  for (int r = 0; r < 5; ++r) {
    QElapsedTimer t;
    t.start();
    {
      pm::RunStore store(db, true);
      size_t n = 0;
      for (int64_t id : ids) n += store.loadMetric(id, "train/loss").size();
      if (n != 1000000) std::fprintf(stderr, "loaded %zu points\n", n);
    }
    raw.push_back(static_cast<double>(t.nsecsElapsed()) / 1e9);
    pm::ui::CompareView view(db);
    view.resize(1400, 800);
    view.show();
    QApplication::processEvents();
    t.restart();
    view.setSelectedRuns(ids);
    QApplication::processEvents();
    open.push_back(static_cast<double>(t.nsecsElapsed()) / 1e9);
  }
  const double openS = median(open), rawS = median(raw);
  std::printf("    open the comparison: %.3f s (target < 1 s)\n", openS);
  std::printf("    load the points from the store only: %.3f s (baseline)\n", rawS);
  std::printf("    ratio: %.2fx the bare load\n", openS / rawS);
  fs::remove_all(dir);
  return 0;
}

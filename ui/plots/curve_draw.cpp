// A curve's points as drawn: decimated to the plot's pixel columns (curve_draw.h).
#include "ui/plots/curve_draw.h"

#include <algorithm>
#include <cmath>

namespace pm::ui {

// Decimate to at most two points (min and max) per bucket of the x range; buckets ~ pixels.
void decimate(const std::vector<double>& x, const std::vector<double>& y, int buckets, QVector<double>& ox,
                     QVector<double>& oy) {
  const size_t n = std::min(x.size(), y.size());
  ox.clear();
  oy.clear();
  if (n <= static_cast<size_t>(buckets) * 2) {
    for (size_t i = 0; i < n; ++i)
      if (std::isfinite(y[i])) {
        ox.push_back(x[i]);
        oy.push_back(y[i]);
      }
    return;
  }
  const double x0 = x.front(), x1 = x.back();
  const double width = (x1 - x0) / buckets;
  size_t i = 0;
  for (int b = 0; b < buckets && i < n; ++b) {
    const double end = (b == buckets - 1) ? x1 + 1 : x0 + width * (b + 1);
    size_t iMin = n, iMax = n;
    for (; i < n && x[i] < end; ++i) {
      if (!std::isfinite(y[i])) continue;
      if (iMin == n || y[i] < y[iMin]) iMin = i;
      if (iMax == n || y[i] > y[iMax]) iMax = i;
    }
    if (iMin == n) continue;
    size_t a = std::min(iMin, iMax), c = std::max(iMin, iMax);
    ox.push_back(x[a]);
    oy.push_back(y[a]);
    if (c != a) {
      ox.push_back(x[c]);
      oy.push_back(y[c]);
    }
  }
}

// Sets a graph's drawn (decimated) points from x, y; returns how many there are.
qsizetype drawGraph(QCPGraph* graph, const std::vector<double>& x, const std::vector<double>& y, int buckets,
                           double width) {
  QVector<double> ox, oy;
  decimate(x, y, buckets, ox, oy);
  graph->setData(ox, oy, true);
  // A dense (decimated) series zig-zags every pixel column: stroking it with a wide antialiased
  // pen makes the raster engine fill a huge self-intersecting outline (seconds per frame).
  // One-pixel cosmetic lines take Qt's fast line path and look the same at that density.
  const bool dense = ox.size() > static_cast<qsizetype>(buckets);
  QPen pen = graph->pen();
  pen.setWidthF(dense ? 1.0 : width);
  pen.setCosmetic(dense);
  graph->setPen(pen);
  graph->setAntialiased(!dense);
  return ox.size();
}

}  // namespace pm::ui

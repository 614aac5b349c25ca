#pragma once
// A curve's points as drawn by CurvePlot: decimated to the plot's pixel columns. Only for files of
// ui/plots (QCustomPlot).
#include <qcustomplot.h>

#include <vector>

namespace pm::ui {

// At most two points (min and max) per bucket of the x range; buckets ~ pixels.
void decimate(const std::vector<double>& x, const std::vector<double>& y, int buckets, QVector<double>& ox, QVector<double>& oy);
// Sets a graph's drawn (decimated) points from x, y; returns how many there are.
qsizetype drawGraph(QCPGraph* graph, const std::vector<double>& x, const std::vector<double>& y, int buckets, double width);

}  // namespace pm::ui

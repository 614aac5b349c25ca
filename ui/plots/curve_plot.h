#pragma once
// A line plot of one or more named series (x, y), wrapping QCustomPlot (which stays inside
// ui/plots). Full-resolution data is kept; drawing decimates each series to a min/max envelope
// per horizontal pixel so spikes stay visible. As in TensorBoard and PlotJuggler: the mouse over
// the axes shows a vertical line at the nearest data x and a box with each series' value there;
// wheel zooms, drag pans, both within the data's extent; double-click, R or the context menu's
// "Reset view" shows all the data again. The legend sits in a row of its own outside the axes,
// so it never covers a curve. GUI thread only.
#include <QColor>
#include <QPoint>
#include <QRect>
#include <QString>
#include <QWidget>
#include <map>
#include <memory>
#include <utility>
#include <vector>

class QCustomPlot;
class QCPItemText;
class QCPItemStraightLine;
class QCPLayoutGrid;
class QCPAxis;

namespace pm::ui {

class CurvePlot : public QWidget {
  Q_OBJECT
 public:
  explicit CurvePlot(QWidget* parent = nullptr);
  ~CurvePlot() override;

  void setTitle(const QString& title);
  QString title() const;  // "" when none was set
  // `right`: the label of a second value axis on the right ("" hides it), for series added with
  // `right` set (a second metric in the same panel, on its own scale).
  void setAxisLabels(const QString& x, const QString& y, const QString& right = QString());
  QString rightAxisLabel() const;  // "" when the right axis is hidden
  // Adds a series and returns its index; `right`: against the right value axis.
  int addSeries(const QString& name, const QColor& color, Qt::PenStyle style = Qt::SolidLine, bool right = false);
  void setSeriesData(int series, std::vector<double> x, std::vector<double> y);
  void appendPoint(int series, double x, double y);
  // The unsmoothed points of a series that holds a smoothed curve: drawn in the series' colour,
  // faded, under every series, with no legend entry (the series' own entry names the curve; say
  // "smoothed" in its name). Part of the series, not a series of its own: seriesCount() and
  // pointCount() are unchanged. Empty vectors remove it.
  void setSeriesRawData(int series, std::vector<double> x, std::vector<double> y);
  size_t rawPointCount(int series) const;
  // The series' faded raw curve is drawn (after the last replot: it has points to show).
  bool showsRaw(int series) const;
  QString seriesName(int series) const;  // as the legend shows it
  void clear();  // removes all series
  void setLogY(bool on);
  // A note drawn in the middle of the axes while no series has a point to show (why the plot is
  // empty: "no evaluation recorded", "waiting for the first step"); "" draws none.
  void setEmptyText(const QString& text);
  QString emptyText() const;
  bool showsEmptyText() const;  // after the last replot
  // Where the legend's row goes: above the axes (AlignTop, the default) or below them
  // (AlignBottom); outside the axes either way, as many entries a line as the width holds.
  void setLegendCorner(Qt::Alignment corner);
  Qt::Alignment legendCorner() const;
  // The legend's and the axes' rectangles in canvas pixels (after the last layout): apart.
  QRect legendRect() const;
  QRect axesRect() const;
  // The canvas pixel of the data point (x, y), as drawn after the last replot or zoom.
  QPoint pixelOf(double x, double y) const;
  // Redraws (decimated) and rescales the axes to the data, unless the user has zoomed or panned
  // since the last reset (then the view stays, kept within the data). Call from a timer, not per point.
  void replot();
  // Shows all the data (as double-click, R and the context menu's "Reset view" do).
  void resetView();
  // The hover box's text while the mouse is over the axes ("" when none is shown): the x of the
  // nearest data point, then one line per series with its value at its point nearest that x.
  QString hoverText() const;
  // Saves the plot; format from the suffix (.png or .pdf). Returns false on failure.
  bool save(const QString& path, int width = 900, int height = 500);
  // The axes' shown ranges after the last replot (lower, upper).
  std::pair<double, double> keyRange() const;
  std::pair<double, double> valueRange() const;
  size_t pointCount(int series) const;
  int seriesCount() const;

 private:
  struct Series;
  void hoverAt(const QPoint& pixel);
  void hideHover();
  void keepInData(QCPAxis* axis);  // after a range change: back within the data's extent
  void placeLegend();
  QCustomPlot* plot_;
  QCPItemText* emptyNote_ = nullptr;
  QCPItemStraightLine* tracer_ = nullptr;  // the hover's vertical line
  QCPItemText* hoverBox_ = nullptr;
  QCPLayoutGrid* legendRow_ = nullptr;  // holds the legend, above or below the axes
  Qt::Alignment legendSide_ = Qt::AlignTop | Qt::AlignRight;
  // The data's extent per axis with a margin (after the last replot with data): the view's bounds.
  std::map<QCPAxis*, std::pair<double, double>> bounds_;  // x, left y, right y
  bool haveBounds_ = false;
  bool userView_ = false;      // zoomed or panned by the user since the last reset
  bool settingRange_ = false;  // the plot itself sets the ranges (not the user)
  std::vector<std::unique_ptr<Series>> series_;
};

}  // namespace pm::ui

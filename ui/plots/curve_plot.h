#pragma once
// A line plot of one or more named series (x, y), wrapping QCustomPlot (which stays inside
// ui/plots). Full-resolution data is kept; drawing decimates each series to a min/max envelope
// per horizontal pixel so spikes stay visible. GUI thread only.
#include <QColor>
#include <QString>
#include <QWidget>
#include <memory>
#include <utility>
#include <vector>

class QCustomPlot;
class QCPItemText;

namespace pm::ui {

class CurvePlot : public QWidget {
  Q_OBJECT
 public:
  explicit CurvePlot(QWidget* parent = nullptr);
  ~CurvePlot() override;

  void setTitle(const QString& title);
  QString title() const;  // "" when none was set
  void setAxisLabels(const QString& x, const QString& y);
  // Adds a series and returns its index.
  int addSeries(const QString& name, const QColor& color, Qt::PenStyle style = Qt::SolidLine);
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
  // The corner of the axes the legend prefers (default top right). At each layout the legend moves
  // to the corner where it covers the fewest data points, the preferred one on a tie;
  // legendCorner() is where it sits after the last layout (replot or save).
  void setLegendCorner(Qt::Alignment corner);
  Qt::Alignment legendCorner() const;
  // Redraws (decimated) and rescales axes. Call from a timer, not per point.
  void replot();
  // Saves the plot; format from the suffix (.png or .pdf). Returns false on failure.
  bool save(const QString& path, int width = 900, int height = 500);
  // The axes' shown ranges after the last replot (lower, upper).
  std::pair<double, double> keyRange() const;
  std::pair<double, double> valueRange() const;
  size_t pointCount(int series) const;
  int seriesCount() const;

 private:
  struct Series;
  QCustomPlot* plot_;
  QCPItemText* emptyNote_ = nullptr;
  std::vector<std::unique_ptr<Series>> series_;
};

}  // namespace pm::ui

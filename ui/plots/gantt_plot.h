#pragma once
// A schedule timeline as a Gantt chart: one row per stage (or per rank, when ranks hold several
// stages: interleaved 1F1B, ZB-V), one box per action from its start to its end, coloured by kind
// (forward, backward, step, communication; a rank's later chunks in lighter shades of the same
// colours), the microbatch written on each compute box wide enough for it at the current zoom. Wraps QCustomPlot; wheel zooms and drag
// pans the time axis within the trace (never before 0); double-click, R or the context menu's
// "Reset view" shows it all; the mouse over a box tells its stage, action, microbatch, start and
// duration. GUI thread only.
#include <QPoint>
#include <QString>
#include <QWidget>
#include <utility>
#include <vector>

class QCustomPlot;
class QCPItemText;

namespace pm::ui {

struct GanttBox {
  int stage;
  QString action;  // "F", "B", "S", "recv_act", "send_act", ...
  int microbatch;
  double start, end;  // seconds
};

// The colours of the actions the boxes hold, for a title: "F blue, BI red, W purple, S green,
// communication grey" (in the trace table's order, only what occurs).
QString ganttLegend(const std::vector<GanttBox>& boxes);
// With ranks holding several stages, how the chart tells chunks apart ("" otherwise).
QString ganttChunkLegend(const std::vector<int>& stageRanks);

class GanttPlot : public QWidget {
  Q_OBJECT
 public:
  explicit GanttPlot(QWidget* parent = nullptr);
  void setTitle(const QString& title);
  QString title() const { return title_; }
  void setBoxes(const std::vector<GanttBox>& boxes, int stages);
  // The rank each stage ran on (RunRecord::stage_ranks), for the next setBoxes: with a rank
  // holding several stages, rows are ranks ("rank 1: stages 1, 6") and a box's chunk is its
  // stage's place among its rank's stages. Empty (the default): one row per stage.
  void setStageRanks(std::vector<int> stageRanks);
  // The row a stage is drawn on, and its chunk on that row (0 with one stage per rank).
  int rowOf(int stage) const;
  int chunkOf(int stage) const;
  int rows() const { return rows_; }
  // The row labels shown ("stage 3", "rank 1: stages 1, 6"): every row's where a row is as tall
  // as a label, else every k-th (the first always); none is cut at the plot's top or bottom.
  QStringList rowLabelsShown() const;
  // Whether every shown row label lies within the axis rectangle, as drawn now.
  bool rowLabelsFit() const;
  size_t boxCount() const { return count_; }
  // From the first start to the last end of the boxes, in ms (0 when empty).
  double makespanMs() const { return spanMs_; }
  // The shown time window in ms from the first start, and how many boxes overlap it.
  double viewStartMs() const;
  double viewEndMs() const;
  size_t boxesInView() const;
  bool save(const QString& path, int width = 900, int height = 400);
  // A sentence drawn in the middle of the chart while it has no box (what to do to get one, or
  // why there is none); "" draws none. Without boxes the axes have no ticks either.
  void setEmptyText(const QString& text);
  QString emptyText() const { return emptyText_; }
  bool showsEmptyText() const;
  // Shows the time window [startMs, endMs] (kept within the trace, as the mouse's zoom is).
  void setView(double startMs, double endMs);
  // The time axis may reach `ms` even when this chart's own boxes end sooner (a linked chart's
  // makespan); 0: this chart's own makespan.
  void setTimeLimitMs(double ms);
  // The tip the mouse over a box shows ("" when it is over none), e.g.
  // "stage 1, B (backward), microbatch 3\nstart 4 ms, duration 2 ms".
  QString hoverText() const { return hoverText_; }
  // Microbatch labels written on boxes wide enough for them at the current zoom, and labels in all.
  int labelsShown() const;
  int labelCount() const { return static_cast<int>(labels_.size()); }
  QWidget* canvas() const;  // the widget that takes the mouse

  // The canvas pixel of time `ms` (from the first start) on the row of `stage` (its rank's row
  // with several stages per rank), as drawn now.
  QPoint pixelOf(double ms, int stage) const;

 public Q_SLOTS:
  // Shows every box (after zooming or panning with the mouse).
  void fit();

 Q_SIGNALS:
  // The shown time window changed (zoom, pan, fit, new boxes).
  void viewChanged();

 private:
  void showEmptyState();  // the empty text and the axes' ticks, as count_ says
  void onRangeChanged();  // keeps the view within the trace, fits the labels, tells viewChanged
  void fitLabels();       // shows the labels that fit their boxes at the current zoom
  bool fitRowLabels();    // the row labels that fit the rows' height, and room for the first and last
  void hoverAt(const QPoint& pixel);
  double limitMs() const;  // the time axis' upper bound
  struct Label {
    QCPItemText* item;
    double startMs, endMs;
  };
  QCustomPlot* plot_;
  std::vector<GanttBox> boxes_;  // as given; times in ms from the first start
  std::vector<int> stageRanks_;  // setStageRanks (empty: a row per stage)
  int rows_ = 1;
  QStringList rowNames_;  // every row's label
  std::vector<Label> labels_;
  QString hoverText_;
  double timeLimitMs_ = 0;
  QCPItemText* emptyNote_ = nullptr;  // an item of plot_: setBoxes() clears it with the boxes
  QString emptyText_;
  size_t count_ = 0;
  QString title_;
  double spanMs_ = 0;
  std::vector<std::pair<double, double>> spans_;  // each box's [start, end] in ms from the first start
};

// Stacked bars: one bar per x position (e.g. per stage), one layer per category.
class StackedBarsPlot : public QWidget {
  Q_OBJECT
 public:
  explicit StackedBarsPlot(QWidget* parent = nullptr);
  void setTitle(const QString& title);
  // values[c][i]: category c at position i.
  void setData(const QStringList& categories, const std::vector<std::vector<double>>& values, const QString& xLabel,
               const QString& yLabel);
  // Names of the x positions (default: 0, 1, ...); call after setData.
  void setPositionLabels(const QStringList& labels);
  bool save(const QString& path, int width = 900, int height = 400);

 private:
  QCustomPlot* plot_;
};

}  // namespace pm::ui

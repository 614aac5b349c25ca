#pragma once
// A heat map of labelled cells: rows x columns, each cell filled by its value on a colour scale
// (or by a fixed colour, e.g. for runs that diverged), its text written in the middle. Clicking a
// cell emits cellClicked(row, col); hovering shows the cell's row, column, value and tool tip. Wraps QCustomPlot (cells
// drawn as items, a colour scale beside them). GUI thread only.
#include <QColor>
#include <QPoint>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <cmath>
#include <vector>

class QCustomPlot;
class QCPColorScale;
class QMouseEvent;

namespace pm::ui {

struct HeatCell {
  int row = 0, col = 0;
  double value = NAN;  // coloured on the scale unless `color` is valid
  QString text;        // written in the cell
  QColor color;        // fixed fill; invalid = the scale's colour of `value` (light grey when not finite)
  QString toolTip;
};

// A line across one column at a fractional row (0 = the first row's centre, 0.5 = the border
// between the first and second rows), e.g. a predicted threshold between two grid values; the
// label is written beside the line.
struct HeatMark {
  int col = 0;
  double row = 0;
  QString label;
  // Dashed, labelled at the column's left: a second mark beside a solid one (labelled at the right).
  bool dashed = false;
};

class HeatMap : public QWidget {
  Q_OBJECT
 public:
  explicit HeatMap(QWidget* parent = nullptr);
  void setTitle(const QString& title);
  // Row labels run top to bottom, column labels left to right; the titles name the axes.
  void setGrid(const QStringList& rowLabels, const QStringList& colLabels, const QString& rowTitle, const QString& colTitle);
  // Cells (any subset of the grid) and the value range of the colour scale. invert: the scale's
  // bright end at the low values (e.g. for a loss, so that the better runs look alike).
  // scaleLabel "" hides the colour scale.
  // scaleNote: said after the label on the colour scale only (where its floor comes from).
  void setCells(const std::vector<HeatCell>& cells, double lo, double hi, const QString& scaleLabel, bool invert = false,
                const QString& scaleNote = QString());
  // Lines drawn over the cells (clamped to the grid); setGrid clears them.
  void setMarks(const std::vector<HeatMark>& marks);
  const std::vector<HeatMark>& marks() const { return marks_; }
  void clear();

  int rows() const { return static_cast<int>(rowLabels_.size()); }
  int cols() const { return static_cast<int>(colLabels_.size()); }
  int cellCount() const { return static_cast<int>(cells_.size()); }
  const HeatCell* cellAt(int row, int col) const;
  QColor fillColor(int row, int col) const;  // the drawn fill (invalid when no such cell)
  // The cell under a point of canvas() (false when none) and the centre of a cell in canvas() pixels.
  bool cellUnder(const QPoint& pixel, int* row, int* col) const;
  QPoint cellCenter(int row, int col) const;
  bool scaleShown() const;  // the colour scale beside the cells
  double scaleLow() const { return lo_; }
  QString scaleTitle() const { return scaleLabel_ + scaleNote_; }  // the colour scale's label
  // The tip the mouse over the cell shows: its row and column, its value, then its own toolTip;
  // hoverText() is the one shown now ("" while the mouse is over no cell).
  QString hoverText(int row, int col) const;
  QString hoverText() const { return hover_; }
  QWidget* canvas() const;  // the widget that takes the clicks
  bool save(const QString& path, int width = 900, int height = 500);

 Q_SIGNALS:
  void cellClicked(int row, int col);

 private:
  void redraw();
  void onPress(QMouseEvent* e);
  void onMove(QMouseEvent* e);
  QCustomPlot* plot_;
  QCPColorScale* scale_;
  QStringList rowLabels_, colLabels_;
  QString rowTitle_, colTitle_;
  std::vector<HeatCell> cells_;
  std::vector<QColor> fills_;
  std::vector<HeatMark> marks_;
  double lo_ = 0, hi_ = 1;
  QString scaleLabel_;
  QString scaleNote_;
  bool invert_ = false;
  QString hover_;
};

}  // namespace pm::ui

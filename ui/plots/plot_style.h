#pragma once
// Colours of a QCustomPlot from the widget palette, so plots follow the system's light or dark
// theme (background = Base, axes, grid and text = Text / Mid), and the canvas every plot of
// ui/plots draws on (PlotCanvas: titles that wrap, Reset view). Only for files of ui/plots.
#include <qcustomplot.h>

#include "ui/plots/text_wrap.h"

#include <functional>
#include <utility>

class QPalette;
class QString;
class QFont;

namespace pm::ui {

// The QCustomPlot of the ui/plots wrappers, with what users bring from TensorBoard and
// PlotJuggler: a double click, the R key or the context menu's "Reset view" shows the data again
// (the wrapper's `resetView`); the mouse is tracked for hover read-outs (`leave` when it goes); a
// title (setPlotTitle) wraps onto more lines when the plot is too narrow for it rather than being
// cut off.
class PlotCanvas : public QCustomPlot {
 public:
  explicit PlotCanvas(QWidget* parent = nullptr);
  // What "Reset view" does; setting it adds the context menu's action (plots without zoom have none).
  void setResetView(std::function<void()> reset);
  std::function<void()> leave;
  // Run after each layout with the axes' final rectangles; true when it changed what the layout
  // prepares (an axis's ticker): the layout then runs once more, so that this very drawing, an
  // export at another size included, shows it (tick labels are prepared before afterLayout).
  std::function<bool()> fitAfterLayout;

 protected:
  void updateLayout() override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  std::function<void()> resetView_;
};

void applyPalette(QCustomPlot* plot, const QPalette& palette);
// A bold title row above the plot (created once, then its text replaced), in the palette's colours.
// On a PlotCanvas it wraps at word boundaries to the plot's width.
void setPlotTitle(QCustomPlot* plot, const QString& title, const QFont& base, const QPalette& palette);
// The text a plot shows in the middle of its axes when it has nothing to draw (hidden at first).
QCPItemText* makeEmptyNote(QCustomPlot* plot, const QPalette& palette);

}  // namespace pm::ui

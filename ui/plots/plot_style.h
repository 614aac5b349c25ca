#pragma once
// Colours of a QCustomPlot from the widget palette, so plots follow the system's light or dark
// theme (background = Base, axes, grid and text = Text / Mid). Only for files of ui/plots.
class QCustomPlot;
class QPalette;
class QString;
class QFont;
class QCPItemText;

namespace pm::ui {

void applyPalette(QCustomPlot* plot, const QPalette& palette);
// A bold title row above the plot (created once, then its text replaced), in the palette's colours.
void setPlotTitle(QCustomPlot* plot, const QString& title, const QFont& base, const QPalette& palette);
// The text a plot shows in the middle of its axes when it has nothing to draw (hidden at first).
QCPItemText* makeEmptyNote(QCustomPlot* plot, const QPalette& palette);

}  // namespace pm::ui

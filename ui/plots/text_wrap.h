#pragma once
// Text broken into lines to a width, for labels and plot titles that must not rely on a widget's
// own word wrap (Qt-only: no QCustomPlot).
#include <QString>

class QFont;

namespace pm::ui {

// `text` broken at spaces into lines no wider than `width` pixels in `font` (a word longer than
// that keeps a line of its own).
QString wrapText(const QString& text, const QFont& font, int width);

}  // namespace pm::ui

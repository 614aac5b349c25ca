#include "ui/plots/plot_style.h"

#include <qcustomplot.h>

#include <QPalette>

namespace pm::ui {

void applyPalette(QCustomPlot* plot, const QPalette& palette) {
  const QColor base = palette.color(QPalette::Base), text = palette.color(QPalette::Text);
  QColor grid = palette.color(QPalette::Mid);
  grid.setAlpha(110);
  plot->setBackground(base);
  plot->axisRect()->setBackground(base);
  for (QCPAxis* axis : plot->axisRect()->axes()) {
    axis->setBasePen(QPen(text));
    axis->setTickPen(QPen(text));
    axis->setSubTickPen(QPen(text));
    axis->setTickLabelColor(text);
    axis->setLabelColor(text);
    axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
  }
  plot->legend->setBrush(base);
  plot->legend->setTextColor(text);
  plot->legend->setBorderPen(QPen(text));
  for (int i = 0; i < plot->plotLayout()->elementCount(); ++i)
    if (auto* t = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i))) t->setTextColor(text);
}

void setPlotTitle(QCustomPlot* plot, const QString& title, const QFont& base, const QPalette& palette) {
  if (!qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0))) {
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, title, QFont(base.family(), 10, QFont::Bold)));
  } else if (auto* t = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0))) {
    t->setText(title);
  }
  if (auto* t = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0))) t->setTextColor(palette.color(QPalette::Text));
}

QCPItemText* makeEmptyNote(QCustomPlot* plot, const QPalette& palette) {
  auto* note = new QCPItemText(plot);
  note->setClipToAxisRect(true);
  note->position->setType(QCPItemPosition::ptAxisRectRatio);
  note->position->setCoords(0.5, 0.5);
  note->setPositionAlignment(Qt::AlignCenter);
  note->setTextAlignment(Qt::AlignCenter);
  note->setColor(palette.color(QPalette::Disabled, QPalette::Text));
  note->setVisible(false);
  return note;
}

}  // namespace pm::ui

#include "ui/plots/plot_style.h"

#include <qcustomplot.h>

#include <QAction>
#include <algorithm>
#include <QFontMetrics>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPalette>
#include <QStringList>

namespace pm::ui {

namespace {
const char* kFullTitle = "pmFullTitle";  // the title's text before wrapping, on its QCPTextElement
}  // namespace

PlotCanvas::PlotCanvas(QWidget* parent) : QCustomPlot(parent) { setMouseTracking(true); }

void PlotCanvas::setResetView(std::function<void()> fn) {
  const bool first = !resetView_;
  resetView_ = std::move(fn);
  if (!first) return;
  setFocusPolicy(Qt::ClickFocus);  // R resets the view of the plot last clicked
  auto* reset = new QAction(QObject::tr("Reset view"), this);
  reset->setObjectName(QStringLiteral("resetView"));
  reset->setShortcut(QKeySequence(Qt::Key_R));
  reset->setShortcutContext(Qt::WidgetShortcut);
  reset->setToolTip(QObject::tr("Show all the data again (also: double-click, R)"));
  QObject::connect(reset, &QAction::triggered, this, [this] { resetView_(); });
  addAction(reset);
  setContextMenuPolicy(Qt::ActionsContextMenu);
}

void PlotCanvas::updateLayout() {
  if (auto* t = qobject_cast<QCPTextElement*>(plotLayout()->elementCount() > 0 ? plotLayout()->elementAt(0) : nullptr)) {
    const QVariant full = t->property(kFullTitle);
    if (full.isValid()) {
      const QString wrapped = wrapText(full.toString(), t->font(), std::max(80, viewport().width() - 16));
      if (wrapped != t->text()) t->setText(wrapped);
    }
  }
  QCustomPlot::updateLayout();
  if (fitAfterLayout && fitAfterLayout()) QCustomPlot::updateLayout();
}

void PlotCanvas::mouseDoubleClickEvent(QMouseEvent* event) {
  QCustomPlot::mouseDoubleClickEvent(event);
  if (event->button() == Qt::LeftButton && resetView_) resetView_();
}

void PlotCanvas::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_R && event->modifiers() == Qt::NoModifier && resetView_) {
    resetView_();
    event->accept();
    return;
  }
  QCustomPlot::keyPressEvent(event);
}

void PlotCanvas::leaveEvent(QEvent* event) {
  QCustomPlot::leaveEvent(event);
  if (leave) leave();
}

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
  if (auto* t = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0))) {
    t->setTextColor(palette.color(QPalette::Text));
    if (dynamic_cast<PlotCanvas*>(plot)) {
      t->setProperty(kFullTitle, title);
      t->setText(wrapText(title, t->font(), std::max(80, plot->viewport().width() - 16)));
    }
  }
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

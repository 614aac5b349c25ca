#include "ui/plots/heat_map.h"

#include <qcustomplot.h>

#include "ui/plots/plot_style.h"

#include <QMouseEvent>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>

namespace pm::ui {

namespace {

// Viridis (perceptually uniform, readable in grey): dark violet -> teal -> yellow.
QCPColorGradient viridis() {
  QCPColorGradient g;
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  QMap<double, QColor> stops;
  stops.insert(0.0, QColor(68, 1, 84));
  stops.insert(0.25, QColor(59, 82, 139));
  stops.insert(0.5, QColor(33, 145, 140));
  stops.insert(0.75, QColor(94, 201, 98));
  stops.insert(1.0, QColor(253, 231, 37));
  g.setColorStops(stops);
  return g;
}

QCPRange valueRange(double lo, double hi) {
  if (!(hi > lo)) {
    const double pad = std::max(1e-12, std::abs(lo) * 0.05);
    return QCPRange(lo - pad, lo + pad);
  }
  return QCPRange(lo, hi);
}

QColor textColorOn(const QColor& fill) {
  const double lum = 0.299 * fill.red() + 0.587 * fill.green() + 0.114 * fill.blue();
  return lum > 140 ? QColor(20, 20, 20) : QColor(Qt::white);
}

}  // namespace

HeatMap::HeatMap(QWidget* parent) : QWidget(parent), plot_(new PlotCanvas(this)), scale_(nullptr) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_);
  plot_->setMinimumSize(300, 150);
  plot_->setMouseTracking(true);
  plot_->plotLayout()->insertRow(0);
  plot_->plotLayout()->addElement(0, 0, new QCPTextElement(plot_, QString(), QFont(font().family(), 10, QFont::Bold)));
  scale_ = new QCPColorScale(plot_);
  scale_->setType(QCPAxis::atRight);
  scale_->setBarWidth(14);
  scale_->setGradient(viridis());
  scale_->axis()->setTickLabelFont(QFont(font().family(), 9));
  auto* group = new QCPMarginGroup(plot_);
  plot_->axisRect()->setMarginGroup(QCP::msTop | QCP::msBottom, group);
  scale_->setMarginGroup(QCP::msTop | QCP::msBottom, group);
  plot_->plotLayout()->addElement(1, 1, scale_);
  for (QCPAxis* a : {plot_->xAxis, plot_->yAxis}) {
    a->grid()->setVisible(false);
    a->setTicks(true);
    a->setSubTicks(false);
    a->setTickLength(0, 0);
    a->setTickLabelFont(QFont(font().family(), 10));
    a->setLabelFont(QFont(font().family(), 10, QFont::Bold));
  }
  plot_->yAxis->setRangeReversed(true);
  connect(plot_, &QCustomPlot::mousePress, this, &HeatMap::onPress);
  connect(plot_, &QCustomPlot::mouseMove, this, &HeatMap::onMove);
  redraw();
  applyPalette(plot_, palette());
}

void HeatMap::setTitle(const QString& title) {
  setPlotTitle(plot_, title, font(), palette());
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void HeatMap::setGrid(const QStringList& rowLabels, const QStringList& colLabels, const QString& rowTitle,
                      const QString& colTitle) {
  rowLabels_ = rowLabels;
  colLabels_ = colLabels;
  rowTitle_ = rowTitle;
  colTitle_ = colTitle;
  cells_.clear();
  fills_.clear();
  marks_.clear();
  redraw();
}

void HeatMap::setMarks(const std::vector<HeatMark>& marks) {
  marks_.clear();
  for (const auto& m : marks)
    if (m.col >= 0 && m.col < cols() && std::isfinite(m.row)) marks_.push_back(m);
  redraw();
}

void HeatMap::setCells(const std::vector<HeatCell>& cells, double lo, double hi, const QString& scaleLabel, bool invert,
                       const QString& scaleNote) {
  cells_.clear();
  for (const auto& c : cells)
    if (c.row >= 0 && c.col >= 0 && c.row < rows() && c.col < cols()) cells_.push_back(c);
  lo_ = lo;
  hi_ = hi;
  scaleLabel_ = scaleLabel;
  scaleNote_ = scaleNote;
  invert_ = invert;
  redraw();
}

void HeatMap::clear() { setGrid({}, {}, {}, {}); }

const HeatCell* HeatMap::cellAt(int row, int col) const {
  for (const auto& c : cells_)
    if (c.row == row && c.col == col) return &c;
  return nullptr;
}

QColor HeatMap::fillColor(int row, int col) const {
  for (size_t i = 0; i < cells_.size(); ++i)
    if (cells_[i].row == row && cells_[i].col == col) return fills_[i];
  return {};
}

void HeatMap::redraw() {
  plot_->clearItems();
  fills_.clear();
  QCPColorGradient gradient = invert_ ? viridis().inverted() : viridis();
  const QCPRange range = valueRange(lo_, hi_);
  const QFont cellFont(font().family(), cols() * rows() > 60 ? 8 : 11, QFont::Bold);
  for (const auto& c : cells_) {
    QColor fill = c.color;
    if (!fill.isValid()) fill = std::isfinite(c.value) ? QColor::fromRgb(gradient.color(c.value, range)) : QColor(225, 225, 225);
    fills_.push_back(fill);
    auto* r = new QCPItemRect(plot_);
    r->topLeft->setCoords(c.col - 0.48, c.row - 0.48);
    r->bottomRight->setCoords(c.col + 0.48, c.row + 0.48);
    r->setBrush(QBrush(fill));
    r->setPen(QPen(fill.darker(115), 1));
    if (!c.text.isEmpty()) {
      auto* t = new QCPItemText(plot_);
      t->position->setCoords(c.col, c.row);
      t->setText(c.text);
      t->setFont(cellFont);
      t->setColor(textColorOn(fill));
      t->setClipToAxisRect(true);
    }
  }
  // Each mark: a white line under a black one, so that it reads on dark and bright cells alike.
  const QFont markFont(font().family(), 8, QFont::Bold);
  for (const auto& m : marks_) {
    const double y = std::clamp(m.row, -0.5, rows() - 0.5);
    for (QPen pen : {QPen(Qt::white, 6), QPen(Qt::black, 3)}) {
      if (m.dashed && pen.color() == Qt::black) pen.setStyle(Qt::DashLine);
      auto* line = new QCPItemLine(plot_);
      line->start->setCoords(m.col - 0.5, y);
      line->end->setCoords(m.col + 0.5, y);
      line->setPen(pen);
    }
    if (!m.label.isEmpty()) {
      auto* t = new QCPItemText(plot_);
      t->position->setCoords(m.dashed ? m.col - 0.47 : m.col + 0.47, y);
      // A dashed mark's label sits on the other side of the line, so that two marks close together both read.
      const Qt::Alignment below = y > rows() - 1 ? Qt::AlignBottom : Qt::AlignTop;
      const Qt::Alignment above = y < 0 ? Qt::AlignTop : Qt::AlignBottom;
      t->setPositionAlignment(m.dashed ? (Qt::AlignLeft | above) : (Qt::AlignRight | below));
      t->setText(m.label);
      t->setFont(markFont);
      t->setColor(Qt::black);
      t->setBrush(QBrush(QColor(255, 255, 255, 210)));
      t->setPadding(QMargins(2, 0, 2, 0));
      t->setClipToAxisRect(true);
    }
  }
  const int nr = std::max(1, rows()), nc = std::max(1, cols());
  plot_->xAxis->setRange(-0.5, nc - 0.5);
  plot_->yAxis->setRange(-0.5, nr - 0.5);
  QSharedPointer<QCPAxisTickerText> xt(new QCPAxisTickerText), yt(new QCPAxisTickerText);
  for (int i = 0; i < cols(); ++i) xt->addTick(i, colLabels_[i]);
  for (int i = 0; i < rows(); ++i) yt->addTick(i, rowLabels_[i]);
  plot_->xAxis->setTicker(xt);
  plot_->yAxis->setTicker(yt);
  plot_->xAxis->setLabel(colTitle_);
  plot_->yAxis->setLabel(rowTitle_);

  // The colour scale only when cells are coloured by values that differ (one value padded into
  // a range would read as, say, accuracy up to 1.04).
  const bool showScale = !scaleLabel_.isEmpty() && hi_ > lo_;
  if (showScale && !scale_->layout()) {
    plot_->plotLayout()->addElement(1, 1, scale_);
  } else if (!showScale && scale_->layout()) {
    plot_->plotLayout()->take(scale_);
    plot_->plotLayout()->simplify();
  }
  scale_->setVisible(showScale);
  scale_->setGradient(gradient);
  scale_->setDataRange(range);
  scale_->axis()->setLabel(scaleLabel_ + scaleNote_);
  plot_->replot();
}

bool HeatMap::cellUnder(const QPoint& pixel, int* row, int* col) const {
  if (!plot_->axisRect()->rect().contains(pixel)) return false;
  const int c = static_cast<int>(std::lround(plot_->xAxis->pixelToCoord(pixel.x())));
  const int r = static_cast<int>(std::lround(plot_->yAxis->pixelToCoord(pixel.y())));
  if (r < 0 || c < 0 || r >= rows() || c >= cols()) return false;
  if (row) *row = r;
  if (col) *col = c;
  return true;
}

QPoint HeatMap::cellCenter(int row, int col) const {
  return QPoint(static_cast<int>(std::lround(plot_->xAxis->coordToPixel(col))),
                static_cast<int>(std::lround(plot_->yAxis->coordToPixel(row))));
}

QWidget* HeatMap::canvas() const { return plot_; }

bool HeatMap::scaleShown() const { return scale_->layout() != nullptr && scale_->visible(); }

void HeatMap::onPress(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  int r = 0, c = 0;
  if (cellUnder(e->position().toPoint(), &r, &c)) Q_EMIT cellClicked(r, c);
}

QString HeatMap::hoverText(int row, int col) const {
  const HeatCell* cell = cellAt(row, col);
  if (!cell) return QString();
  auto axis = [](const QString& title, const QString& label) { return title.isEmpty() ? label : title + QStringLiteral(" = ") + label; };
  QString text = axis(rowTitle_, rowLabels_.value(row)) + QStringLiteral(", ") + axis(colTitle_, colLabels_.value(col));
  if (std::isfinite(cell->value)) {
    text += QStringLiteral(": ") + QString::number(cell->value, 'g', 5);
    if (!scaleLabel_.isEmpty()) text += QStringLiteral(" (") + scaleLabel_ + QLatin1Char(')');
  } else if (!cell->text.isEmpty()) {
    text += QStringLiteral(": ") + cell->text;
  }
  if (!cell->toolTip.isEmpty()) text += QLatin1Char('\n') + cell->toolTip;
  return text;
}

void HeatMap::onMove(QMouseEvent* e) {
  int r = 0, c = 0;
  const HeatCell* cell = cellUnder(e->position().toPoint(), &r, &c) ? cellAt(r, c) : nullptr;
  plot_->setCursor(cell ? Qt::PointingHandCursor : Qt::ArrowCursor);
  hover_ = cell ? hoverText(r, c) : QString();
  if (!hover_.isEmpty())
    QToolTip::showText(e->globalPosition().toPoint(), hover_, plot_);
  else
    QToolTip::hideText();
}

bool HeatMap::save(const QString& path, int width, int height) {
  plot_->replot();
  return path.endsWith(".pdf", Qt::CaseInsensitive) ? plot_->savePdf(path, width, height) : plot_->savePng(path, width, height);
}

}  // namespace pm::ui

#include "ui/plots/curve_plot.h"

#include <qcustomplot.h>

#include "ui/plots/curve_draw.h"
#include "ui/plots/plot_style.h"

#include <QMouseEvent>
#include <QStringList>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <vector>

namespace pm::ui {

namespace {

// The canvas of a CurvePlot: at each layout (on screen and when saved at another size) the legend
// row takes as many entries a line as its width holds.
class CurveCanvas : public PlotCanvas {
 public:
  using PlotCanvas::PlotCanvas;

 protected:
  void updateLayout() override {
    if (legend && legend->visible() && legend->itemCount() > 0) {
      int widest = 1;
      for (int i = 0; i < legend->itemCount(); ++i)
        if (QCPAbstractLegendItem* item = legend->item(i))  // cells of the grid may be empty
          widest = std::max(widest, item->minimumOuterSizeHint().width());
      const int room = viewport().width() - 80 - legend->margins().left() - legend->margins().right();  // less the y axis
      const int columns = std::clamp(room / (widest + legend->columnSpacing()), 1, std::max(1, legend->itemCount()));
      if (columns != legend->wrap()) {
        legend->setWrap(columns);
        legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
      }
    }
    PlotCanvas::updateLayout();
  }
};

QString number(double v) { return QString::number(v, 'g', 6); }

// The index of the finite point of (x, y) whose x is nearest `at`; npos when there is none.
size_t nearestIndex(const std::vector<double>& x, const std::vector<double>& y, double at) {
  const size_t n = std::min(x.size(), y.size());
  size_t best = static_cast<size_t>(-1);
  auto consider = [&](size_t i) {
    if (i < n && std::isfinite(x[i]) && std::isfinite(y[i]) &&
        (best == static_cast<size_t>(-1) || std::abs(x[i] - at) < std::abs(x[best] - at)))
      best = i;
  };
  if (std::is_sorted(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n))) {
    const size_t i = static_cast<size_t>(std::lower_bound(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n), at) - x.begin());
    // The nearest finite neighbours on either side (skipping NaN values).
    for (size_t k = i; k < n; ++k)
      if (std::isfinite(y[k])) {
        consider(k);
        break;
      }
    for (size_t k = i; k-- > 0;)
      if (std::isfinite(y[k])) {
        consider(k);
        break;
      }
  } else {
    for (size_t i = 0; i < n; ++i) consider(i);
  }
  return best;
}

// `r` moved and shrunk to lie within [lo, hi].
QCPRange within(QCPRange r, double lo, double hi) {
  if (!(hi > lo)) return r;
  if (r.size() >= hi - lo) return QCPRange(lo, hi);
  if (r.lower < lo) r += lo - r.lower;
  if (r.upper > hi) r -= r.upper - hi;
  return r;
}

}  // namespace

struct CurvePlot::Series {
  QCPGraph* graph = nullptr;
  std::vector<double> x, y;
  QCPGraph* raw = nullptr;  // the faded unsmoothed curve under a smoothed series (setSeriesRawData), or none
  std::vector<double> rawX, rawY;
};

CurvePlot::CurvePlot(QWidget* parent) : QWidget(parent) {
  auto* canvas = new CurveCanvas(this);
  plot_ = canvas;
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), 8));
  plot_->setMinimumSize(200, 150);
  // The legend in a row of its own outside the axes: inside, in any corner, it covers some curve.
  plot_->axisRect()->insetLayout()->take(plot_->legend);
  plot_->axisRect()->insetLayout()->simplify();
  legendRow_ = new QCPLayoutGrid;
  legendRow_->setMargins(QMargins(6, 2, 6, 2));
  legendRow_->addElement(0, 0, plot_->legend);
  // An empty cell beside it takes the spare width: the entries stay together on the left.
  legendRow_->addElement(0, 1, new QCPLayoutElement(plot_));
  legendRow_->setColumnStretchFactor(0, 0.001);
  plot_->legend->setIconSize(16, 8);
  plot_->legend->setRowSpacing(0);
  plot_->legend->setMargins(QMargins(4, 1, 4, 1));
  placeLegend();
  // Raw curves have a layer of their own under the series' ("main"): every smoothed curve is drawn
  // over every faded raw one, whatever the order the series were added in.
  plot_->addLayer(QStringLiteral("raw"), plot_->layer(QStringLiteral("main")), QCustomPlot::limBelow);
  // The hover's line and box on a buffered layer of their own, on top: a mouse move redraws only it.
  plot_->addLayer(QStringLiteral("hover"));
  plot_->layer(QStringLiteral("hover"))->setMode(QCPLayer::lmBuffered);
  tracer_ = new QCPItemStraightLine(plot_);
  tracer_->setLayer(QStringLiteral("hover"));
  tracer_->point1->setTypeY(QCPItemPosition::ptAxisRectRatio);
  tracer_->point2->setTypeY(QCPItemPosition::ptAxisRectRatio);
  tracer_->setSelectable(false);
  hoverBox_ = new QCPItemText(plot_);
  hoverBox_->setLayer(QStringLiteral("hover"));
  hoverBox_->position->setType(QCPItemPosition::ptAbsolute);
  hoverBox_->setTextAlignment(Qt::AlignLeft);
  hoverBox_->setPadding(QMargins(5, 3, 5, 3));
  hoverBox_->setFont(QFont(font().family(), 8));
  hoverBox_->setSelectable(false);
  hoverBox_->setClipToAxisRect(false);
  hideHover();
  applyPalette(plot_, palette());
  plot_->legend->setBorderPen(Qt::NoPen);
  {
    const QColor text = palette().color(QPalette::Text);
    QColor line = text;
    line.setAlpha(140);
    tracer_->setPen(QPen(line, 1, Qt::DashLine));
    QColor back = palette().color(QPalette::Base);
    back.setAlpha(235);
    hoverBox_->setBrush(back);
    hoverBox_->setPen(QPen(palette().color(QPalette::Mid)));
    hoverBox_->setColor(text);
  }
  connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) { hoverAt(e->position().toPoint()); });
  canvas->leave = [this] { hideHover(); };
  canvas->setResetView([this] { resetView(); });
  // Drag and wheel move both value axes: a second metric on the right follows the left's view.
  plot_->axisRect()->setRangeDragAxes({plot_->xAxis}, {plot_->yAxis, plot_->yAxis2});
  plot_->axisRect()->setRangeZoomAxes({plot_->xAxis}, {plot_->yAxis, plot_->yAxis2});
  for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis, plot_->yAxis2})
    connect(axis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this, axis] { keepInData(axis); });
}

CurvePlot::~CurvePlot() = default;

void CurvePlot::setTitle(const QString& title) { setPlotTitle(plot_, title, font(), palette()); }

QString CurvePlot::title() const {
  auto* t = qobject_cast<QCPTextElement*>(plot_->plotLayout()->element(0, 0));
  if (!t) return QString();
  const QVariant full = t->property("pmFullTitle");  // before wrapping to the width
  return full.isValid() ? full.toString() : t->text();
}

void CurvePlot::setAxisLabels(const QString& x, const QString& y, const QString& right) {
  plot_->xAxis->setLabel(x);
  plot_->yAxis->setLabel(y);
  plot_->yAxis2->setLabel(right);
  plot_->yAxis2->setVisible(!right.isEmpty());
  plot_->yAxis2->setTickLabels(!right.isEmpty());
}

QString CurvePlot::rightAxisLabel() const { return plot_->yAxis2->visible() ? plot_->yAxis2->label() : QString(); }

int CurvePlot::addSeries(const QString& name, const QColor& color, Qt::PenStyle style, bool right) {
  auto s = std::make_unique<Series>();
  s->graph = plot_->addGraph(plot_->xAxis, right ? plot_->yAxis2 : plot_->yAxis);
  s->graph->setName(name);
  s->graph->setPen(QPen(QBrush(color), 1.5, style));
  series_.push_back(std::move(s));
  return static_cast<int>(series_.size()) - 1;
}

void CurvePlot::setSeriesData(int series, std::vector<double> x, std::vector<double> y) {
  auto& s = *series_.at(static_cast<size_t>(series));
  s.x = std::move(x);
  s.y = std::move(y);
}

void CurvePlot::appendPoint(int series, double x, double y) {
  auto& s = *series_.at(static_cast<size_t>(series));
  s.x.push_back(x);
  s.y.push_back(y);
}

void CurvePlot::setSeriesRawData(int series, std::vector<double> x, std::vector<double> y) {
  auto& s = *series_.at(static_cast<size_t>(series));
  s.rawX = std::move(x);
  s.rawY = std::move(y);
  if (s.rawX.empty() || s.rawY.empty()) {
    if (s.raw) plot_->removeGraph(s.raw);
    s.raw = nullptr;
    s.rawX.clear();
    s.rawY.clear();
    return;
  }
  if (!s.raw) {
    s.raw = plot_->addGraph(plot_->xAxis, s.graph->valueAxis());
    s.raw->setLayer(QStringLiteral("raw"));
    s.raw->removeFromLegend();
    s.raw->setName(s.graph->name());
    QColor faded = s.graph->pen().color();
    faded.setAlphaF(0.3f);
    s.raw->setPen(QPen(QBrush(faded), 1.0));
  }
}

size_t CurvePlot::rawPointCount(int series) const { return series_.at(static_cast<size_t>(series))->rawX.size(); }

bool CurvePlot::showsRaw(int series) const {
  const QCPGraph* raw = series_.at(static_cast<size_t>(series))->raw;
  return raw && raw->visible() && !raw->data()->isEmpty();
}

QString CurvePlot::seriesName(int series) const { return series_.at(static_cast<size_t>(series))->graph->name(); }

void CurvePlot::clear() {
  plot_->clearGraphs();
  series_.clear();
  userView_ = false;  // new curves are shown whole
  hideHover();
}

void CurvePlot::setLegendCorner(Qt::Alignment corner) {
  legendSide_ = corner;
  placeLegend();
}

Qt::Alignment CurvePlot::legendCorner() const { return legendSide_; }

// The legend's row right above the axes (under the title) or right below them.
void CurvePlot::placeLegend() {
  QCPLayoutGrid* layout = plot_->plotLayout();
  if (legendRow_->layout()) {
    layout->take(legendRow_);
    layout->simplify();
  }
  int axesRow = 0;
  for (int r = 0; r < layout->rowCount(); ++r)
    if (layout->element(r, 0) == plot_->axisRect()) axesRow = r;
  const int row = (legendSide_ & Qt::AlignBottom) ? axesRow + 1 : axesRow;
  layout->insertRow(row);
  layout->addElement(row, 0, legendRow_);
  layout->setRowStretchFactor(row, 0.001);
}

QRect CurvePlot::legendRect() const { return plot_->legend->outerRect(); }
QRect CurvePlot::axesRect() const { return plot_->axisRect()->rect(); }

QPoint CurvePlot::pixelOf(double x, double y) const {
  return QPoint(static_cast<int>(std::lround(plot_->xAxis->coordToPixel(x))), static_cast<int>(std::lround(plot_->yAxis->coordToPixel(y))));
}

void CurvePlot::setEmptyText(const QString& text) {
  if (!emptyNote_) {
    emptyNote_ = makeEmptyNote(plot_, palette());
  }
  emptyNote_->setText(text);
}

QString CurvePlot::emptyText() const { return emptyNote_ ? emptyNote_->text() : QString(); }

bool CurvePlot::showsEmptyText() const { return emptyNote_ && emptyNote_->visible(); }

void CurvePlot::setLogY(bool on) {
  settingRange_ = true;  // a log axis drops its range's non-positive part: not the user's zoom
  for (QCPAxis* axis : {plot_->yAxis, plot_->yAxis2}) axis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  settingRange_ = false;
}

size_t CurvePlot::pointCount(int series) const { return series_.at(static_cast<size_t>(series))->x.size(); }
int CurvePlot::seriesCount() const { return static_cast<int>(series_.size()); }

void CurvePlot::replot() {
  const int buckets = std::max(100, plot_->axisRect()->width());
  bool any = false;
  for (auto& s : series_) {
    const qsizetype drawn = drawGraph(s->graph, s->x, s->y, buckets, 1.5);
    // Sparse series (evaluations) get markers so that a single point is visible.
    s->graph->setScatterStyle(drawn <= 60 ? QCPScatterStyle(QCPScatterStyle::ssDisc, 6) : QCPScatterStyle());
    any = any || drawn > 0;
    if (s->raw) {
      const qsizetype rawDrawn = drawGraph(s->raw, s->rawX, s->rawY, buckets, 1.0);
      s->raw->setVisible(rawDrawn > 0);
      any = any || rawDrawn > 0;
    }
  }
  if (any) {
    settingRange_ = true;
    if (!userView_) plot_->rescaleAxes();
    // The data's own extent per axis, raw curves included (their spikes stay on screen):
    // QCustomPlot keeps an axis's old size around a single value.
    // Per axis: the key axis, the left and the right value axes.
    std::map<QCPAxis*, QCPRange> extent;
    auto widen = [&](QCPAxis* axis, const QCPRange& r) {
      auto [it, first] = extent.try_emplace(axis, r);
      if (!first) it->second = QCPRange(std::min(it->second.lower, r.lower), std::max(it->second.upper, r.upper));
    };
    for (const auto& s : series_)
      for (const QCPGraph* graph : {static_cast<const QCPGraph*>(s->graph), static_cast<const QCPGraph*>(s->raw)}) {
        if (!graph || (graph == s->raw && !graph->visible())) continue;
        bool found = false;
        const QCPRange k = graph->getKeyRange(found);
        if (found) widen(plot_->xAxis, k);
        const QCPRange v = graph->getValueRange(found);
        if (found) widen(graph->valueAxis(), v);
      }
    for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis, plot_->yAxis2}) {
      auto it = extent.find(axis);
      const QCPRange r = it != extent.end() ? it->second : axis->range();
      const double pad = r.size() > 0 ? r.size() * 0.05 : std::max(1e-3, std::abs(r.center()) * 0.1);
      bounds_[axis] = {r.lower - pad, r.upper + pad};
    }
    haveBounds_ = true;
    for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis, plot_->yAxis2})
      if (userView_) keepInData(axis);
      else axis->setRange(bounds_[axis].first, bounds_[axis].second);
    settingRange_ = false;
  } else {
    haveBounds_ = false;
  }
  plot_->legend->setVisible(!series_.empty());
  if (emptyNote_) emptyNote_->setVisible(!any && !emptyNote_->text().isEmpty());
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void CurvePlot::resetView() {
  userView_ = false;
  if (haveBounds_) {
    settingRange_ = true;
    for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis, plot_->yAxis2}) axis->setRange(bounds_[axis].first, bounds_[axis].second);
    settingRange_ = false;
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void CurvePlot::keepInData(QCPAxis* axis) {
  if (!settingRange_) userView_ = true;
  if (!haveBounds_) return;
  const bool isKey = axis == plot_->xAxis;
  if (!isKey && axis->scaleType() == QCPAxis::stLogarithmic) return;  // decades, not the linear margin
  const auto b = bounds_.find(axis);
  if (b == bounds_.end()) return;
  const QCPRange bounded = within(axis->range(), b->second.first, b->second.second);
  if (bounded != axis->range()) {
    const bool was = settingRange_;
    settingRange_ = true;
    axis->setRange(bounded);
    settingRange_ = was;
  }
}

void CurvePlot::hideHover() {
  if (!hoverBox_ || !hoverBox_->visible()) return;
  hoverBox_->setVisible(false);
  tracer_->setVisible(false);
  plot_->layer(QStringLiteral("hover"))->replot();
}

QString CurvePlot::hoverText() const { return hoverBox_ && hoverBox_->visible() ? hoverBox_->text() : QString(); }

// The line at the data x nearest the mouse (over every series), and a box listing each series'
// value at its own point nearest that x: the nearest stored point, not an interpolation; a
// series whose point lies at another x says where.
void CurvePlot::hoverAt(const QPoint& pixel) {
  const QRect area = plot_->axisRect()->rect();
  if (!area.contains(pixel)) {
    hideHover();
    return;
  }
  const double at = plot_->xAxis->pixelToCoord(pixel.x());
  double snap = NAN;
  for (const auto& s : series_) {
    const size_t i = nearestIndex(s->x, s->y, at);
    if (i != static_cast<size_t>(-1) && (std::isnan(snap) || std::abs(s->x[i] - at) < std::abs(snap - at))) snap = s->x[i];
  }
  if (std::isnan(snap)) {
    hideHover();
    return;
  }
  const QString xName = plot_->xAxis->label().isEmpty() ? QStringLiteral("x") : plot_->xAxis->label();
  QStringList lines{tr("%1 %2 (nearest points)").arg(xName, number(snap))};
  for (const auto& s : series_) {
    const size_t i = nearestIndex(s->x, s->y, snap);
    if (i == static_cast<size_t>(-1)) continue;
    QString line = QStringLiteral("%1: %2").arg(s->graph->name(), number(s->y[i]));
    if (s->raw) {
      const size_t r = nearestIndex(s->rawX, s->rawY, s->x[i]);
      if (r != static_cast<size_t>(-1)) line += tr(" (raw %1)").arg(number(s->rawY[r]));
    }
    if (s->x[i] != snap) line += tr(" at %1").arg(number(s->x[i]));
    lines << line;
  }
  hoverBox_->setText(lines.join(QLatin1Char('\n')));
  const double px = plot_->xAxis->coordToPixel(snap);
  tracer_->point1->setCoords(snap, 0);
  tracer_->point2->setCoords(snap, 1);
  // Beside the line, on the side with more room, at the top of the axes.
  const bool right = px < area.center().x();
  hoverBox_->setPositionAlignment((right ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignTop);
  hoverBox_->position->setCoords(px + (right ? 10 : -10), area.top() + 6);
  hoverBox_->setVisible(true);
  tracer_->setVisible(true);
  plot_->layer(QStringLiteral("hover"))->replot();
}

std::pair<double, double> CurvePlot::keyRange() const { return {plot_->xAxis->range().lower, plot_->xAxis->range().upper}; }
std::pair<double, double> CurvePlot::valueRange() const {
  return {plot_->yAxis->range().lower, plot_->yAxis->range().upper};
}

bool CurvePlot::save(const QString& path, int width, int height) {
  plot_->replot();
  if (path.endsWith(".pdf", Qt::CaseInsensitive)) return plot_->savePdf(path, width, height);
  return plot_->savePng(path, width, height);
}

}  // namespace pm::ui

#include "ui/plots/curve_plot.h"

#include <qcustomplot.h>

#include "ui/plots/plot_style.h"

#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <vector>

namespace pm::ui {

namespace {

// A QCustomPlot whose legend moves, at every layout (on screen and when saved at another size), to
// the corner of the axes where it hides the fewest data points, starting from the preferred one:
// a fixed corner would cover the newest points of rising curves (accuracy) or of loss curves that
// start high on the left.
class LegendPlacingPlot : public QCustomPlot {
 public:
  using QCustomPlot::QCustomPlot;
  Qt::Alignment preferred = Qt::AlignTop | Qt::AlignRight;

 protected:
  void updateLayout() override {
    QCustomPlot::updateLayout();
    if (!legend || !legend->visible() || graphCount() == 0) return;
    QCPLayoutInset* inset = axisRect()->insetLayout();
    const int index = inset->elements(false).indexOf(legend);
    if (index < 0) return;
    const Qt::Alignment best = emptiestCorner(inset->rect(), legend->outerRect().size());
    if (best != inset->insetAlignment(index)) {
      inset->setInsetAlignment(index, best);
      QCustomPlot::updateLayout();
    }
  }

 private:
  // Counts, per corner of `area` (the inset layout's rect: the axes less a margin), the data
  // points (and points every few pixels along the lines between them) that a legend of `size`
  // there would cover; the preferred corner wins ties.
  Qt::Alignment emptiestCorner(QRect area, QSize size) const {
    std::vector<Qt::Alignment> corners = {preferred};
    for (Qt::Alignment c : {Qt::AlignTop | Qt::AlignRight, Qt::AlignTop | Qt::AlignLeft, Qt::AlignBottom | Qt::AlignRight,
                            Qt::AlignBottom | Qt::AlignLeft})
      if (c != preferred) corners.push_back(c);
    std::vector<QRectF> boxes;
    for (Qt::Alignment c : corners) {
      const double x = (c & Qt::AlignLeft) ? area.left() : area.right() - size.width();
      const double y = (c & Qt::AlignTop) ? area.top() : area.bottom() - size.height();
      boxes.emplace_back(x, y, size.width(), size.height());
    }
    std::vector<long> covered(boxes.size(), 0);
    auto count = [&](QPointF p) {
      for (size_t i = 0; i < boxes.size(); ++i)
        if (boxes[i].contains(p)) ++covered[i];
    };
    for (int g = 0; g < graphCount(); ++g) {
      const QCPGraph* graph = this->graph(g);
      if (!graph->visible()) continue;
      bool havePrevious = false;
      QPointF previous;
      for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) {
        if (!std::isfinite(it->value)) continue;
        const QPointF p(xAxis->coordToPixel(it->key), yAxis->coordToPixel(it->value));
        if (havePrevious) {
          const double length = std::hypot(p.x() - previous.x(), p.y() - previous.y());
          const int steps = std::min(200, static_cast<int>(length / 4.0));
          for (int k = 1; k < steps; ++k) count(previous + (p - previous) * (static_cast<double>(k) / steps));
        }
        count(p);
        previous = p;
        havePrevious = true;
      }
    }
    size_t best = 0;
    for (size_t i = 1; i < boxes.size(); ++i)
      if (covered[i] < covered[best]) best = i;
    return corners[best];
  }
};

}  // namespace

struct CurvePlot::Series {
  QCPGraph* graph = nullptr;
  std::vector<double> x, y;
  QCPGraph* raw = nullptr;  // the faded unsmoothed curve under a smoothed series (setSeriesRawData), or none
  std::vector<double> rawX, rawY;
};

CurvePlot::CurvePlot(QWidget* parent) : QWidget(parent), plot_(new LegendPlacingPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), 8));
  plot_->setMinimumSize(200, 150);
  // Raw curves have a layer of their own under the series' ("main"): every smoothed curve is drawn
  // over every faded raw one, whatever the order the series were added in.
  plot_->addLayer(QStringLiteral("raw"), plot_->layer(QStringLiteral("main")), QCustomPlot::limBelow);
  applyPalette(plot_, palette());
}

CurvePlot::~CurvePlot() = default;

void CurvePlot::setTitle(const QString& title) { setPlotTitle(plot_, title, font(), palette()); }

QString CurvePlot::title() const {
  auto* t = qobject_cast<QCPTextElement*>(plot_->plotLayout()->element(0, 0));
  return t ? t->text() : QString();
}

void CurvePlot::setAxisLabels(const QString& x, const QString& y) {
  plot_->xAxis->setLabel(x);
  plot_->yAxis->setLabel(y);
}

int CurvePlot::addSeries(const QString& name, const QColor& color, Qt::PenStyle style) {
  auto s = std::make_unique<Series>();
  s->graph = plot_->addGraph();
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
    s.raw = plot_->addGraph();
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
}

void CurvePlot::setLegendCorner(Qt::Alignment corner) {
  static_cast<LegendPlacingPlot*>(plot_)->preferred = corner;
  plot_->axisRect()->insetLayout()->setInsetAlignment(0, corner);
}

Qt::Alignment CurvePlot::legendCorner() const { return plot_->axisRect()->insetLayout()->insetAlignment(0); }

void CurvePlot::setEmptyText(const QString& text) {
  if (!emptyNote_) {
    emptyNote_ = makeEmptyNote(plot_, palette());
  }
  emptyNote_->setText(text);
}

QString CurvePlot::emptyText() const { return emptyNote_ ? emptyNote_->text() : QString(); }

bool CurvePlot::showsEmptyText() const { return emptyNote_ && emptyNote_->visible(); }

void CurvePlot::setLogY(bool on) {
  plot_->yAxis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
}

size_t CurvePlot::pointCount(int series) const { return series_.at(static_cast<size_t>(series))->x.size(); }
int CurvePlot::seriesCount() const { return static_cast<int>(series_.size()); }

// Decimate to at most two points (min and max) per bucket of the x range; buckets ~ pixels.
static void decimate(const std::vector<double>& x, const std::vector<double>& y, int buckets, QVector<double>& ox,
                     QVector<double>& oy) {
  const size_t n = std::min(x.size(), y.size());
  ox.clear();
  oy.clear();
  if (n <= static_cast<size_t>(buckets) * 2) {
    for (size_t i = 0; i < n; ++i)
      if (std::isfinite(y[i])) {
        ox.push_back(x[i]);
        oy.push_back(y[i]);
      }
    return;
  }
  const double x0 = x.front(), x1 = x.back();
  const double width = (x1 - x0) / buckets;
  size_t i = 0;
  for (int b = 0; b < buckets && i < n; ++b) {
    const double end = (b == buckets - 1) ? x1 + 1 : x0 + width * (b + 1);
    size_t iMin = n, iMax = n;
    for (; i < n && x[i] < end; ++i) {
      if (!std::isfinite(y[i])) continue;
      if (iMin == n || y[i] < y[iMin]) iMin = i;
      if (iMax == n || y[i] > y[iMax]) iMax = i;
    }
    if (iMin == n) continue;
    size_t a = std::min(iMin, iMax), c = std::max(iMin, iMax);
    ox.push_back(x[a]);
    oy.push_back(y[a]);
    if (c != a) {
      ox.push_back(x[c]);
      oy.push_back(y[c]);
    }
  }
}

// Sets a graph's drawn (decimated) points from x, y; returns how many there are.
static qsizetype drawGraph(QCPGraph* graph, const std::vector<double>& x, const std::vector<double>& y, int buckets,
                           double width) {
  QVector<double> ox, oy;
  decimate(x, y, buckets, ox, oy);
  graph->setData(ox, oy, true);
  // A dense (decimated) series zig-zags every pixel column: stroking it with a wide antialiased
  // pen makes the raster engine fill a huge self-intersecting outline (seconds per frame).
  // One-pixel cosmetic lines take Qt's fast line path and look the same at that density.
  const bool dense = ox.size() > static_cast<qsizetype>(buckets);
  QPen pen = graph->pen();
  pen.setWidthF(dense ? 1.0 : width);
  pen.setCosmetic(dense);
  graph->setPen(pen);
  graph->setAntialiased(!dense);
  return ox.size();
}

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
    plot_->rescaleAxes();
    // The data's own extent per axis, raw curves included (their spikes stay on screen):
    // QCustomPlot keeps an axis's old size around a single value.
    QCPRange keys, values;
    bool haveKeys = false, haveValues = false;
    std::vector<const QCPGraph*> graphs;
    for (const auto& s : series_) {
      graphs.push_back(s->graph);
      if (s->raw && s->raw->visible()) graphs.push_back(s->raw);
    }
    for (const QCPGraph* graph : graphs) {
      bool found = false;
      const QCPRange k = graph->getKeyRange(found);
      if (found) keys = haveKeys ? QCPRange(std::min(keys.lower, k.lower), std::max(keys.upper, k.upper)) : k, haveKeys = true;
      const QCPRange v = graph->getValueRange(found);
      if (found) values = haveValues ? QCPRange(std::min(values.lower, v.lower), std::max(values.upper, v.upper)) : v, haveValues = true;
    }
    for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis}) {
      const bool isKey = axis == plot_->xAxis;
      QCPRange r = (isKey ? haveKeys : haveValues) ? (isKey ? keys : values) : axis->range();
      const double pad = r.size() > 0 ? r.size() * 0.05 : std::max(1e-3, std::abs(r.center()) * 0.1);
      axis->setRange(r.lower - pad, r.upper + pad);
    }
  }
  plot_->legend->setVisible(!series_.empty());
  if (emptyNote_) emptyNote_->setVisible(!any && !emptyNote_->text().isEmpty());
  plot_->replot(QCustomPlot::rpQueuedReplot);
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

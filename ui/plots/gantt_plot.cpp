#include "ui/plots/gantt_plot.h"

#include <qcustomplot.h>

#include "core/pipeline/trace_actions.h"
#include "ui/plots/plot_style.h"

#include <QFontMetrics>
#include <QMouseEvent>
#include <QStringList>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace pm::ui {

namespace {
// Each compute action's colour and its word in legends; communication is grey.
struct ActionStyle {
  const char* action;
  QColor colour;
  const char* word;
};
const std::vector<ActionStyle>& actionStyles() {
  static const std::vector<ActionStyle> styles = {
      {"F", QColor(31, 119, 180), "blue"},
      {"B", QColor(255, 127, 14), "orange"},
      {"BI", QColor(214, 39, 40), "red"},      // a split backward's input part
      {"W", QColor(148, 103, 189), "purple"},  // its weight part, filling the bubble
      {"S", QColor(44, 160, 44), "green"},
      {kRecomputeTrace, QColor(255, 187, 120), "light orange"},  // a backward's recompute run ahead: a light B
  };
  return styles;
}
const QColor kCommunication(180, 180, 180);

QColor actionColor(const QString& a) {
  for (const auto& st : actionStyles())
    if (a == st.action) return st.colour;
  return kCommunication;
}

QString actionName(const QString& a) {
  const TraceActionInfo* info = traceActionInfo(a.toStdString());
  return QStringLiteral("%1 (%2)").arg(a, info ? QString::fromUtf8(info->legend) : QObject::tr("unknown"));
}

QString ms(double v) { return QString::number(v, 'g', 4); }

double halfHeight(const GanttBox& b) { return isComputeTraceAction(b.action.toStdString()) ? 0.38 : 0.12; }

// Chunk c of a rank: the action's colour, lighter for each later chunk.
QColor chunkColor(const QColor& c, int chunk) {
  if (chunk <= 0) return c;
  const double mix = std::min(0.6, 0.35 * chunk);  // towards white
  return QColor::fromRgbF(c.redF() + (1 - c.redF()) * mix, c.greenF() + (1 - c.greenF()) * mix, c.blueF() + (1 - c.blueF()) * mix);
}

bool severalPerRank(const std::vector<int>& ranks) {
  for (size_t i = 0; i < ranks.size(); ++i)
    for (size_t j = i + 1; j < ranks.size(); ++j)
      if (ranks[i] == ranks[j]) return true;
  return false;
}
}  // namespace

void GanttPlot::setStageRanks(std::vector<int> stageRanks) { stageRanks_ = severalPerRank(stageRanks) ? std::move(stageRanks) : std::vector<int>{}; }

int GanttPlot::rowOf(int stage) const {
  return stage >= 0 && static_cast<size_t>(stage) < stageRanks_.size() ? stageRanks_[static_cast<size_t>(stage)] : stage;
}

int GanttPlot::chunkOf(int stage) const {
  if (stage < 0 || static_cast<size_t>(stage) >= stageRanks_.size()) return 0;
  int c = 0;
  for (int s = 0; s < stage; ++s)
    if (stageRanks_[static_cast<size_t>(s)] == stageRanks_[static_cast<size_t>(stage)]) ++c;
  return c;
}

QString ganttLegend(const std::vector<GanttBox>& boxes) {
  QStringList parts;
  for (const auto& st : actionStyles())
    if (std::any_of(boxes.begin(), boxes.end(), [&](const GanttBox& b) { return b.action == st.action; })) {
      const TraceActionInfo* info = traceActionInfo(st.action);
      parts << QStringLiteral("%1 %2").arg(info && info->role == TraceRole::Recompute ? QObject::tr("B's recompute run ahead")
                                                                                       : QString::fromUtf8(st.action),
                                           QObject::tr(st.word));
    }
  if (std::any_of(boxes.begin(), boxes.end(), [](const GanttBox& b) { return !isComputeTraceAction(b.action.toStdString()); }))
    parts << QObject::tr("communication grey");
  return parts.join(QStringLiteral(", "));
}

QString ganttChunkLegend(const std::vector<int>& stageRanks) {
  return severalPerRank(stageRanks) ? QObject::tr("a row per rank; its second chunk lighter") : QString();
}

GanttPlot::GanttPlot(QWidget* parent) : QWidget(parent) {
  auto* canvas = new PlotCanvas(this);
  plot_ = canvas;
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->axisRect()->setRangeZoom(Qt::Horizontal);
  plot_->axisRect()->setRangeDrag(Qt::Horizontal);
  plot_->xAxis->setLabel(tr("time (ms)"));
  plot_->yAxis->setLabel(tr("stage"));
  plot_->yAxis->setRangeReversed(true);
  plot_->setMinimumSize(300, 150);
  connect(plot_->xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, &GanttPlot::onRangeChanged);
  // The labels' room changes with the chart's width too.
  connect(plot_, &QCustomPlot::afterLayout, this, &GanttPlot::fitLabels);
  // The row labels follow the axis rectangle's height as each layout sets it (the title may wrap
  // onto more lines in a narrow window; an export draws at its own size).
  canvas->fitAfterLayout = [this] { return fitRowLabels(); };
  connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) { hoverAt(e->position().toPoint()); });
  canvas->setResetView([this] { fit(); });
  canvas->leave = [this] {
    hoverText_.clear();
    QToolTip::hideText();
  };
  applyPalette(plot_, palette());
}

QWidget* GanttPlot::canvas() const { return plot_; }

QPoint GanttPlot::pixelOf(double ms, int stage) const {
  return QPoint(static_cast<int>(std::lround(plot_->xAxis->coordToPixel(ms))), static_cast<int>(std::lround(plot_->yAxis->coordToPixel(rowOf(stage)))));
}

double GanttPlot::limitMs() const { return std::max({1e-6, spanMs_, timeLimitMs_}) * 1.02; }

void GanttPlot::setTimeLimitMs(double ms) {
  timeLimitMs_ = std::max(0.0, ms);
  onRangeChanged();  // a view past the new limit comes back within it
}

void GanttPlot::setView(double startMs, double endMs) {
  plot_->xAxis->setRange(startMs, endMs);
  // Drawn anew: a view set from outside (the other chart, linked) has no mouse event of its own
  // that would redraw it.
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

// Time runs from 0 (the first start) to the limit: zoom and pan stop there.
void GanttPlot::onRangeChanged() {
  QCPRange r = plot_->xAxis->range();
  const double hi = limitMs();
  if (r.size() >= hi) r = QCPRange(0, hi);
  if (r.lower < 0) r += -r.lower;
  if (r.upper > hi) r -= r.upper - hi;
  if (r != plot_->xAxis->range()) {
    plot_->xAxis->setRange(r);  // comes back here, within the bounds
    return;
  }
  fitLabels();
  Q_EMIT viewChanged();
}

// A label shows when its text fits in its box's drawn width: at a zoom where boxes are narrower
// than their numbers, the numbers would run into each other.
void GanttPlot::fitLabels() {
  if (labels_.empty()) return;
  const QFontMetrics fm(labels_.front().item->font());
  bool changed = false;
  for (const Label& l : labels_) {
    const double width = std::abs(plot_->xAxis->coordToPixel(l.endMs) - plot_->xAxis->coordToPixel(l.startMs));
    const bool fits = fm.horizontalAdvance(l.item->text()) + 4 <= width;
    if (fits != l.item->visible()) {
      l.item->setVisible(fits);
      changed = true;
    }
  }
  if (changed) plot_->replot(QCustomPlot::rpQueuedReplot);
}

int GanttPlot::labelsShown() const {
  return static_cast<int>(std::count_if(labels_.begin(), labels_.end(), [](const Label& l) { return l.item->visible(); }));
}

// The box under the mouse (the thin communication boxes first: they lie over compute ones), as a
// tool tip; within 3 pixels of a box counts, so that boxes narrower than a pixel can be found.
void GanttPlot::hoverAt(const QPoint& pixel) {
  const GanttBox* hit = nullptr;
  if (plot_->axisRect()->rect().contains(pixel)) {
    const double t = plot_->xAxis->pixelToCoord(pixel.x());
    const double slack = std::abs(plot_->xAxis->pixelToCoord(pixel.x() + 3) - t);
    const double y = plot_->yAxis->pixelToCoord(pixel.y());
    double best = 1e300;
    for (const GanttBox& b : boxes_) {
      if (std::abs(y - rowOf(b.stage)) > halfHeight(b)) continue;
      if (t < b.start - slack || t > b.end + slack) continue;
      // Inside beats near; then the shorter box (a send over a forward).
      const double outside = t < b.start ? b.start - t : t > b.end ? t - b.end : 0;
      const double score = outside * 1e6 + (b.end - b.start);
      if (score < best) {
        best = score;
        hit = &b;
      }
    }
  }
  QString text;
  if (hit) {
    text = stageRanks_.empty() ? tr("stage %1, %2").arg(hit->stage).arg(actionName(hit->action))
                               : tr("rank %1, chunk %2 (stage %3), %4").arg(rowOf(hit->stage)).arg(chunkOf(hit->stage)).arg(hit->stage).arg(actionName(hit->action));
    if (hit->microbatch >= 0) text += tr(", microbatch %1").arg(hit->microbatch);
    text += tr("\nstart %1 ms, duration %2 ms").arg(ms(hit->start), ms(hit->end - hit->start));
  }
  if (text == hoverText_) return;
  hoverText_ = text;
  if (text.isEmpty())
    QToolTip::hideText();
  else
    QToolTip::showText(plot_->mapToGlobal(pixel), text, plot_);
}

void GanttPlot::setTitle(const QString& title) {
  title_ = title;
  setPlotTitle(plot_, title, font(), palette());
}

void GanttPlot::setBoxes(const std::vector<GanttBox>& boxes, int stages) {
  plot_->clearItems();
  emptyNote_ = nullptr;  // deleted with the items
  labels_.clear();
  boxes_.clear();
  hoverText_.clear();
  spans_.clear();
  double t0 = 1e300, t1 = -1e300;
  for (const auto& b : boxes) {
    t0 = std::min(t0, b.start);
    t1 = std::max(t1, b.end);
  }
  if (boxes.empty()) t0 = t1 = 0;
  for (const auto& b : boxes) {
    const bool compute = isComputeTraceAction(b.action.toStdString());
    const double h = compute ? 0.38 : 0.12;
    spans_.emplace_back((b.start - t0) * 1e3, (b.end - t0) * 1e3);
    boxes_.push_back({b.stage, b.action, b.microbatch, (b.start - t0) * 1e3, (b.end - t0) * 1e3});
    const int row = rowOf(b.stage);
    auto* r = new QCPItemRect(plot_);
    r->topLeft->setCoords((b.start - t0) * 1e3, row - h);
    r->bottomRight->setCoords((b.end - t0) * 1e3, row + h);
    const QColor c = chunkColor(actionColor(b.action), chunkOf(b.stage));
    r->setBrush(QBrush(c));
    r->setPen(QPen(c.darker(140), 0.5));
    if (compute && b.action != "S" && b.microbatch >= 0 && boxes.size() < 400) {
      auto* t = new QCPItemText(plot_);
      t->position->setCoords(((b.start + b.end) / 2 - t0) * 1e3, row);
      t->setText(QString::number(b.microbatch));
      t->setFont(QFont(font().family(), 7));
      t->setColor(Qt::white);
      t->setClipToAxisRect(true);
      labels_.push_back({t, (b.start - t0) * 1e3, (b.end - t0) * 1e3});
    }
  }
  count_ = boxes.size();
  spanMs_ = (t1 - t0) * 1e3;
  fit();
  rowNames_.clear();
  if (stageRanks_.empty()) {
    rows_ = std::max(1, stages);
    for (int s = 0; s < stages; ++s) rowNames_ << tr("stage %1").arg(s);
    plot_->yAxis->setLabel(tr("stage"));
  } else {
    rows_ = 1 + *std::max_element(stageRanks_.begin(), stageRanks_.end());
    for (int r = 0; r < rows_; ++r) {
      QStringList held;
      for (size_t s = 0; s < stageRanks_.size(); ++s)
        if (stageRanks_[s] == r) held << QString::number(s);
      rowNames_ << tr("rank %1: stages %2").arg(r).arg(held.join(QStringLiteral(", ")));
    }
    plot_->yAxis->setLabel(tr("rank"));
  }
  fitRowLabels();
  showEmptyState();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void GanttPlot::setEmptyText(const QString& text) {
  emptyText_ = text;
  showEmptyState();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool GanttPlot::showsEmptyText() const { return emptyNote_ && emptyNote_->visible(); }

bool GanttPlot::fitRowLabels() {
  const double height = std::max(1, plot_->axisRect()->height());
  const double label = QFontMetrics(plot_->yAxis->tickLabelFont()).height();
  // Half a label (and 2 px) of room above the first row's centre and below the last's, so that
  // neither label is cut at the plot's edge: a pad of p rows at each end, with the rows' height
  // height / (rows - 1 + 2p), gives p x that >= m when p = m (rows - 1) / (height - 2m); at least
  // 0.6 rows, which leaves room for the boxes.
  const double m = label / 2 + 2;
  const double pad = height > 2 * m ? std::max(0.6, m * (rows_ - 1) / (height - 2 * m)) : 0.6;
  const double rowPx = height / (rows_ - 1 + 2 * pad);
  // Rows one label tall at least: every k-th row labelled.
  const int every = std::max(1, static_cast<int>(std::ceil(label * 1.1 / std::max(rowPx, 1e-9))));
  QMap<double, QString> ticks;
  for (int r = 0; r < rowNames_.size(); r += every) ticks.insert(r, rowNames_[r]);
  const QCPRange range(-pad, rows_ - 1 + pad);
  const auto current = plot_->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
  if (current && current->ticks() == ticks && plot_->yAxis->range() == range) return false;
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  ticker->setTicks(ticks);
  plot_->yAxis->setTicker(ticker);
  plot_->yAxis->setRange(range);
  return true;
}

QStringList GanttPlot::rowLabelsShown() const {
  QStringList out;
  const auto ticker = plot_->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
  if (!ticker) return out;
  for (auto it = ticker->ticks().cbegin(); it != ticker->ticks().cend(); ++it)
    if (plot_->yAxis->range().contains(it.key())) out << it.value();
  return out;
}

bool GanttPlot::rowLabelsFit() const {
  const double label = QFontMetrics(plot_->yAxis->tickLabelFont()).height();
  const QRect rect = plot_->axisRect()->rect();
  const auto ticker = plot_->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
  if (!ticker) return true;
  double previous = -1e9;
  for (auto it = ticker->ticks().cbegin(); it != ticker->ticks().cend(); ++it) {
    const double y = plot_->yAxis->coordToPixel(it.key());
    if (y - label / 2 < rect.top() - 0.5 || y + label / 2 > rect.bottom() + 1.5) return false;
    if (std::abs(y - previous) < label) return false;  // two labels on each other
    previous = y;
  }
  return true;
}

void GanttPlot::showEmptyState() {
  const bool empty = count_ == 0;
  if (empty && !emptyText_.isEmpty() && !emptyNote_) {
    emptyNote_ = makeEmptyNote(plot_, palette());
  }
  if (emptyNote_) {
    emptyNote_->setText(emptyText_);
    emptyNote_->setVisible(empty && !emptyText_.isEmpty());
  }
  // An empty chart has no time to tick: its axis would count fractions of a nanosecond.
  for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis}) {
    axis->setTicks(!empty);
    axis->setTickLabels(!empty);
    axis->grid()->setVisible(!empty);
  }
}

void GanttPlot::fit() {
  plot_->xAxis->setRange(0, limitMs());
  fitLabels();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

double GanttPlot::viewStartMs() const { return plot_->xAxis->range().lower; }
double GanttPlot::viewEndMs() const { return plot_->xAxis->range().upper; }

size_t GanttPlot::boxesInView() const {
  const QCPRange r = plot_->xAxis->range();
  return static_cast<size_t>(std::count_if(spans_.begin(), spans_.end(), [&](const std::pair<double, double>& s) {
    return s.second >= r.lower && s.first <= r.upper;
  }));
}

bool GanttPlot::save(const QString& path, int width, int height) {
  plot_->replot();
  return path.endsWith(".pdf", Qt::CaseInsensitive) ? plot_->savePdf(path, width, height) : plot_->savePng(path, width, height);
}

StackedBarsPlot::StackedBarsPlot(QWidget* parent) : QWidget(parent), plot_(new PlotCanvas(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_);
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), 8));
  // The legend in a row of its own under the axes, three categories a line: inside the axes it
  // covered the tallest bars.
  plot_->axisRect()->insetLayout()->take(plot_->legend);
  plot_->axisRect()->insetLayout()->simplify();
  // In a holder with margins: the legend draws its frame on its outer rectangle, which at the
  // image's edge would be cut off in saved figures.
  const int row = plot_->plotLayout()->rowCount();
  auto* holder = new QCPLayoutGrid;
  plot_->plotLayout()->addElement(row, 0, holder);
  holder->setMargins(QMargins(8, 2, 8, 6));
  holder->addElement(0, 0, plot_->legend);
  plot_->plotLayout()->setRowStretchFactor(row, 0.001);
  // The x grid's zero line is solid: it drew a line above the first bar.
  plot_->xAxis->grid()->setZeroLinePen(Qt::NoPen);
  plot_->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot_->legend->setWrap(3);  // fits a narrow column (the planner's)
  plot_->legend->setIconSize(12, 8);
  plot_->legend->setMargins(QMargins(4, 0, 4, 4));
  plot_->setMinimumSize(300, 150);
  applyPalette(plot_, palette());
}

void StackedBarsPlot::setTitle(const QString& title) { setPlotTitle(plot_, title, font(), palette()); }

void StackedBarsPlot::setData(const QStringList& categories, const std::vector<std::vector<double>>& values,
                              const QString& xLabel, const QString& yLabel) {
  plot_->clearPlottables();
  static const QColor colors[] = {QColor(31, 119, 180), QColor(174, 199, 232), QColor(255, 127, 14), QColor(214, 39, 40),
                                  QColor(148, 103, 189), QColor(44, 160, 44), QColor(127, 127, 127)};
  QCPBars* below = nullptr;
  double maxTotal = 0;
  size_t n = values.empty() ? 0 : values[0].size();
  std::vector<double> totals(n, 0.0);
  for (int c = 0; c < categories.size() && c < static_cast<int>(values.size()); ++c) {
    auto* bars = new QCPBars(plot_->xAxis, plot_->yAxis);
    bars->setName(categories[c]);
    bars->setBrush(colors[c % 7]);
    bars->setPen(QPen(colors[c % 7].darker(130)));
    bars->setWidth(0.6);
    QVector<double> x, y;
    for (size_t i = 0; i < values[static_cast<size_t>(c)].size(); ++i) {
      x << static_cast<double>(i);
      y << values[static_cast<size_t>(c)][i];
      totals[i] += values[static_cast<size_t>(c)][i];
    }
    bars->setData(x, y);
    if (below) bars->moveAbove(below);
    below = bars;
  }
  for (double t : totals) maxTotal = std::max(maxTotal, t);
  plot_->xAxis->setLabel(xLabel);
  plot_->yAxis->setLabel(yLabel);
  plot_->xAxis->setRange(-0.6, std::max<double>(1, static_cast<double>(n)) - 0.4);
  plot_->yAxis->setRange(0, maxTotal > 0 ? maxTotal * 1.1 : 1);
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (size_t i = 0; i < n; ++i) ticker->addTick(static_cast<double>(i), QString::number(i));
  plot_->xAxis->setTicker(ticker);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void StackedBarsPlot::setPositionLabels(const QStringList& labels) {
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  for (int i = 0; i < labels.size(); ++i) ticker->addTick(static_cast<double>(i), labels[i]);
  plot_->xAxis->setTicker(ticker);
  const bool rotate = labels.size() > 6;
  plot_->xAxis->setTickLabelRotation(rotate ? 30 : 0);
  // Rotated labels reach right of their tick: leave room for the last one.
  plot_->xAxis->setRange(-0.6, static_cast<double>(labels.size()) - 0.4 + (rotate ? 0.9 : 0.0));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool StackedBarsPlot::save(const QString& path, int width, int height) {
  plot_->replot();
  return path.endsWith(".pdf", Qt::CaseInsensitive) ? plot_->savePdf(path, width, height) : plot_->savePng(path, width, height);
}

}  // namespace pm::ui

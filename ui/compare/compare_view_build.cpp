// The Compare view's widgets: the run panel on the left, the control rows, plot and summary table
// on the right, and what their signals do.
#include "ui/compare/compare_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSlider>
#include <QSplitter>
#include <QTableWidget>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "ui/compare/summary_table.h"
#include "ui/plots/curve_plot.h"
#include "ui/plots/metric_chooser.h"
#include "ui/store/store_watcher.h"

namespace pm::ui {

QWidget* CompareView::buildRunPanel() {
  runList_->setColumnCount(kRunColumns);
  runList_->setHeaderLabels({tr("Run"), tr("Name"), tr("Status"), tr("Schedule"), tr("Model"), tr("P"), tr("N")});
  runList_->setRootIsDecorated(false);
  runList_->setUniformRowHeights(true);
  // A sweep's runs share the experiment's name and differ in their "[field=value]" suffix: keep
  // both ends of a long name visible.
  runList_->setTextElideMode(Qt::ElideMiddle);
  runList_->setAlternatingRowColors(true);
  runList_->setSelectionMode(QAbstractItemView::SingleSelection);
  runList_->header()->setStretchLastSection(false);
  auto* filter = new QLineEdit(this);
  filter->setObjectName(QStringLiteral("runFilter"));
  filter->setPlaceholderText(tr("Filter runs..."));
  filter->setClearButtonEnabled(true);
  auto* refreshButton = new QPushButton(tr("Refresh"), this);
  auto* clearButton = new QPushButton(tr("Clear selection"), this);
  auto* left = new QWidget(this);
  auto* leftLayout = new QVBoxLayout(left);
  leftLayout->setContentsMargins(0, 0, 0, 0);
  leftLayout->addWidget(new QLabel(tr("<b>Runs to compare</b> (tick to overlay)"), this));
  leftLayout->addWidget(filter);
  leftLayout->addWidget(runList_, 1);
  auto* leftButtons = new QHBoxLayout;
  leftButtons->addWidget(refreshButton);
  leftButtons->addWidget(clearButton);
  leftButtons->addStretch(1);
  leftLayout->addLayout(leftButtons);

  connect(filter, &QLineEdit::textChanged, this, [this](const QString& text) {
    filterText_ = text;
    applyFilter();
  });
  connect(runList_, &QTreeWidget::itemChanged, this, [this](QTreeWidgetItem* item, int) { onRunChecked(item); });
  connect(refreshButton, &QPushButton::clicked, this, &CompareView::refresh);
  connect(clearButton, &QPushButton::clicked, this, [this] { setSelectedRuns({}); });
  return left;
}

void CompareView::setUpControls() {
  secondBox_->setObjectName(QStringLiteral("secondMetric"));
  secondBox_->setNoneText(tr("(no second metric)"));
  secondBox_->setToolTip(tr("A second metric in the same panel, dashed, on the right axis with its own scale"));
  for (XAxis a : {XAxis::Step, XAxis::Samples, XAxis::Updates, XAxis::TrainingTime, XAxis::WallClock})
    xAxisBox_->addItem(tr(xAxisName(a)), static_cast<int>(a));
  smoothSlider_->setRange(0, 99);
  smoothSlider_->setMinimumWidth(60);
  smoothSpin_->setRange(0, 0.99);
  smoothSpin_->setSingleStep(0.05);
  smoothSpin_->setDecimals(2);
  smoothSpin_->setToolTip(tr("Exponential moving average weight (0 = raw). Applied to the full-resolution data "
                             "for display only; the summary and the stored values are unsmoothed."));
  smoothSlider_->setToolTip(smoothSpin_->toolTip());
  baselineBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  baselineBox_->setMinimumContentsLength(14);
  baselineBox_->setToolTip(tr("Ratios in the summary are each run's value divided by this run's"));
  targetSpin_->setRange(0, 1);
  targetSpin_->setSingleStep(0.05);
  targetSpin_->setDecimals(3);
  targetSpin_->setSpecialValueText(tr("auto"));  // shown at 0
  targetSpin_->setValue(target_);
  targetSpin_->setToolTip(tr("Time to target: training time (a resumed run's pauses left out) at which eval/accuracy first reaches this value. "
                             "auto (0): the baseline run's best accuracy - 0.01, as `pipemare compare` takes it"));
}

// Right: the control rows (the metrics; x axis, smoothing and log y; baseline, accuracy target and
// the exports) over the plot and the summary table.
QWidget* CompareView::buildResultsPanel() {
  auto* exportPlotButton = new QPushButton(tr("Export plot..."), this);
  auto* exportCsvButton = new QPushButton(tr("Export CSV..."), this);
  connect(exportPlotButton, &QPushButton::clicked, this, &CompareView::exportPlotDialog);
  connect(exportCsvButton, &QPushButton::clicked, this, &CompareView::exportCsvDialog);
  auto* row1 = new QHBoxLayout;
  row1->addWidget(new QLabel(tr("Metric"), this));
  row1->addWidget(metricBox_);
  row1->addWidget(new QLabel(tr("and"), this));
  row1->addWidget(secondBox_);
  row1->addStretch(1);
  // The axes on a row of their own: beside the two metric lists they would make the window wider
  // than a 1024 px screen.
  auto* axesRow = new QHBoxLayout;
  axesRow->addWidget(new QLabel(tr("X axis"), this));
  axesRow->addWidget(xAxisBox_);
  axesRow->addSpacing(8);
  axesRow->addWidget(new QLabel(tr("Smoothing"), this));
  axesRow->addWidget(smoothSlider_, 1);
  axesRow->addWidget(smoothSpin_);
  axesRow->addWidget(logY_);
  auto* row2 = new QHBoxLayout;
  row2->addWidget(new QLabel(tr("Baseline"), this));
  row2->addWidget(baselineBox_);
  row2->addSpacing(8);
  row2->addWidget(new QLabel(tr("Accuracy target"), this));
  row2->addWidget(targetSpin_);
  row2->addStretch(1);
  row2->addWidget(exportPlotButton);
  row2->addWidget(exportCsvButton);
  QWidget* tableBox = buildSummaryBox();

  plot_->setMinimumHeight(260);
  auto* vsplit = new QSplitter(Qt::Vertical, this);
  vsplit->addWidget(plot_);
  vsplit->addWidget(tableBox);
  vsplit->setStretchFactor(0, 3);
  vsplit->setStretchFactor(1, 2);
  auto* right = new QWidget(this);
  auto* rightLayout = new QVBoxLayout(right);
  rightLayout->setContentsMargins(0, 0, 0, 0);
  rightLayout->addLayout(row1);
  rightLayout->addLayout(axesRow);
  rightLayout->addLayout(row2);
  rightLayout->addWidget(vsplit, 1);
  return right;
}

QWidget* CompareView::buildSummaryBox() {
  table_->setColumnCount(1 + kSummaryFieldCount);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
  fitSummaryColumns(table_);
  auto* tableBox = new QWidget(this);
  auto* tableLayout = new QVBoxLayout(tableBox);
  tableLayout->setContentsMargins(0, 0, 0, 0);
  auto* caption = new QLabel(tr("<b>Summary</b> (unsmoothed data; against the baseline run: ×ratio, accuracy "
                                "in points; green = better, red = worse)"),
                             this);
  caption->setWordWrap(true);  // onto two lines in a narrow window rather than widening it
  tableLayout->addWidget(caption);
  tableLayout->addWidget(table_, 1);
  return tableBox;
}

// The controls act only when the user changes them: syncControls() sets them with updating_ on.
void CompareView::connectControls() {
  connect(metricBox_, &MetricChooser::metricChosen, this, [this](const QString& key) {
    if (!updating_) setMetric(key);
  });
  connect(secondBox_, &MetricChooser::metricChosen, this, [this](const QString& key) {
    if (!updating_) setSecondMetric(key);
  });
  connect(xAxisBox_, &QComboBox::currentIndexChanged, this, [this](int) {
    if (!updating_) setXAxis(static_cast<XAxis>(xAxisBox_->currentData().toInt()));
  });
  connect(smoothSlider_, &QSlider::valueChanged, this, [this](int v) {
    if (!updating_) setSmoothing(v / 100.0);
  });
  connect(smoothSpin_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    if (!updating_) setSmoothing(v);
  });
  connect(baselineBox_, &QComboBox::currentIndexChanged, this, [this](int) {
    if (!updating_ && baselineBox_->currentIndex() >= 0) setBaseline(baselineBox_->currentData().toLongLong());
  });
  connect(targetSpin_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    if (!updating_) setAccuracyTarget(v);
  });
  connect(logY_, &QCheckBox::toggled, this, [this](bool on) {
    plot_->setLogY(on);
    plot_->replot();
  });
}

void CompareView::connectWatcher() {
  // The watcher's poll: new, deleted or changed runs are re-read; while a selected run is running,
  // its data at every poll.
  connect(watcher_, &StoreWatcher::runsChanged, this, &CompareView::refresh);
  connect(watcher_, &StoreWatcher::activeRunsPolled, this, [this] {
    const bool live = std::any_of(selected_.begin(), selected_.end(), [this](int64_t id) {
      auto it = data_.find(id);
      return it != data_.end() && it->second.record.status == RunStatus::Running;
    });
    if (live) refresh();
  });
}

}  // namespace pm::ui

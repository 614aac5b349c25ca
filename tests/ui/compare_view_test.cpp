#include <gtest/gtest.h>

#include <unistd.h>

#include <QAction>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSlider>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>
#include <algorithm>
#include <cmath>

#include "core/store/run_store.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/compare/compare_view.h"
#include "ui/compare/smoothing.h"
#include "ui/main/main_window.h"
#include "ui/plots/curve_plot.h"
#include "ui/runs/runs_browser.h"

using pm::ui::CompareView;
using pm::SummaryField;
using pm::XAxis;

namespace {

// Three runs with known data. Wall time of step s: 1000 + dt * (s - 1), so every run's first point
// is at 1000 s (t0) and step s lies at dt * (s - 1) seconds on the wall-time axis.
//   alpha: loss 1/s, s = 1..200, dt 0.5; eval/accuracy k/10 at step 20k (k = 1..10): reaches 0.8 at
//          step 160 (79.5 s); samples_per_s alternates 100/200 (133.3 samples/s over the run); 2 stages, last
//          utilization 0.5 and 0.75 (mean 0.625); mem/peak max 4e6.
//   beta:  loss 2/s, s = 1..200, dt 1.0; accuracy k/10 but 0.9 at step 180 and 0.85 at step 200
//          (best 0.9, final 0.85), reaches 0.8 at step 160 (159 s); samples_per_s 75;
//          last utilization 0.25 and 0.375 (mean 0.3125); mem/peak max 2e6.
//   gamma: loss 3/s, s = 1..150, dt 1.0; accuracy k/20 at step 20k (k = 1..7): never reaches 0.8;
//          no samples_per_s, no stage metrics.
struct Fixture {
  QTemporaryDir dir;
  std::string db;
  int64_t alpha = 0, beta = 0, gamma = 0;

  Fixture() {
    db = dir.filePath("runs.db").toStdString();
    pm::RunStore store(db);
    alpha = store.createRun("alpha", R"({"model":{"name":"mlp"},"pipeline":{"schedule":"gpipe","stages":2,"microbatches":4}})");
    beta = store.createRun("beta, \"quoted\"", R"({"model":{"name":"mlp"},"pipeline":{"schedule":"pipemare","stages":2,"microbatches":8}})");
    gamma = store.createRun("gamma", R"({"model":{"name":"cnn"},"pipeline":{"schedule":"1f1b","stages":1,"microbatches":1}})");
    auto wall = [](int64_t s, double dt) { return 1000.0 + dt * static_cast<double>(s - 1); };
    for (int64_t s = 1; s <= 200; ++s) {
      store.appendMetric(alpha, "train/loss", s, wall(s, 0.5), 1.0 / static_cast<double>(s));
      store.appendMetric(alpha, "train/samples", s, wall(s, 0.5), 32.0 * static_cast<double>(s));
      store.appendMetric(alpha, "train/samples_per_s", s, wall(s, 0.5), s % 2 ? 100.0 : 200.0);
      store.appendMetric(beta, "train/loss", s, wall(s, 1.0), 2.0 / static_cast<double>(s));
      store.appendMetric(beta, "train/samples_per_s", s, wall(s, 1.0), 75.0);
    }
    for (int64_t s = 1; s <= 150; ++s) store.appendMetric(gamma, "train/loss", s, wall(s, 1.0), 3.0 / static_cast<double>(s));
    for (int k = 1; k <= 10; ++k) {
      const int64_t s = 20 * k;
      store.appendMetric(alpha, "eval/accuracy", s, wall(s, 0.5), k / 10.0);
      store.appendMetric(beta, "eval/accuracy", s, wall(s, 1.0), k == 9 ? 0.9 : k == 10 ? 0.85 : k / 10.0);
      if (k <= 7) store.appendMetric(gamma, "eval/accuracy", s, wall(s, 1.0), k / 20.0);
    }
    for (int64_t s : {50, 100, 150, 200}) {
      store.appendStageMetric(alpha, 0, s, "utilization", s == 200 ? 0.5 : 0.9);
      store.appendStageMetric(alpha, 1, s, "utilization", s == 200 ? 0.75 : 0.1);
      store.appendStageMetric(alpha, 0, s, "mem/peak", s == 100 ? 4e6 : 1e6);
      store.appendStageMetric(alpha, 1, s, "mem/peak", 3e6);
      store.appendStageMetric(beta, 0, s, "utilization", s == 200 ? 0.25 : 0.9);
      store.appendStageMetric(beta, 1, s, "utilization", s == 200 ? 0.375 : 0.9);
      store.appendStageMetric(beta, 0, s, "mem/peak", 2e6);
      store.appendStageMetric(beta, 1, s, "mem/peak", 1e6);
    }
    store.flush();
    store.setStatus(alpha, "finished");
    store.setStatus(beta, "finished");
    store.setStatus(gamma, "diverged", "loss became NaN");
  }
};

int countLines(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return -1;
  int n = 0;
  while (!f.atEnd()) {
    f.readLine();
    ++n;
  }
  return n;
}

double field(const pm::RunSummary& s, SummaryField f) { return s.value(f); }

// The view's controls, found as a user finds them, by what they show: the x-axis box lists the
// axes, the baseline box says what it is for in its tool tip, the metric box is the third; the
// accuracy target's spin box reads "auto" at 0, the smoothing one does not; the buttons by label.
struct Controls {
  int comboBoxes = 0;
  QComboBox* metric = nullptr;
  QComboBox* second = nullptr;  // the second metric's, on the right axis
  QComboBox* xAxis = nullptr;
  QComboBox* baseline = nullptr;
  QDoubleSpinBox* smoothing = nullptr;
  QDoubleSpinBox* target = nullptr;
  QSlider* smoothingSlider = nullptr;
  QLineEdit* filter = nullptr;
  QPushButton* refresh = nullptr;
  QPushButton* clear = nullptr;
  bool complete() const {
    return comboBoxes == 4 && metric && second && xAxis && baseline && smoothing && target && smoothingSlider && filter && refresh && clear;
  }
};

Controls controlsOf(CompareView& view) {
  Controls c;
  const QString wallTime = QString::fromUtf8(pm::xAxisName(XAxis::TrainingTime));
  for (QComboBox* box : view.findChildren<QComboBox*>()) {
    ++c.comboBoxes;
    if (box->findText(wallTime) >= 0)
      c.xAxis = box;
    else if (box->toolTip().startsWith("Ratios in the summary"))
      c.baseline = box;
    else if (box->parentWidget() && box->parentWidget()->objectName() == "secondMetric")
      c.second = box;
    else
      c.metric = box;
  }
  for (QDoubleSpinBox* spin : view.findChildren<QDoubleSpinBox*>()) {
    if (spin->specialValueText().isEmpty())
      c.smoothing = spin;
    else
      c.target = spin;
  }
  c.smoothingSlider = view.findChild<QSlider*>();
  c.filter = view.findChild<QLineEdit*>("runFilter");
  c.refresh = pm::test::buttonLabelled(&view, "Refresh");
  c.clear = pm::test::buttonLabelled(&view, "Clear selection");
  return c;
}

// A view of the fixture's store, shown (events go to widgets of their real size), with its controls.
struct ShownView {
  CompareView view;
  Controls ui;
  explicit ShownView(const std::string& db, int width = 1200, int height = 800) : view(db) {
    view.resize(width, height);
    if (pm::test::showWindow(&view)) ui = controlsOf(view);
  }
};

QString axisName(XAxis a) { return QString::fromUtf8(pm::xAxisName(a)); }
QVariant runData(int64_t id) { return QVariant::fromValue<qlonglong>(id); }

QTreeWidgetItem* runItem(QTreeWidget* list, int64_t id) {
  for (int i = 0; i < list->topLevelItemCount(); ++i)
    if (list->topLevelItem(i)->data(0, Qt::UserRole).toLongLong() == id) return list->topLevelItem(i);
  return nullptr;
}

bool ticked(const CompareView& view, int64_t id) {
  const auto s = view.selectedRuns();
  return std::find(s.begin(), s.end(), id) != s.end();
}

// Ticks or unticks the run's box in the list as a user does with the keyboard: a click on its first
// cell, right of the box and the colour swatch, makes it the current row, Space toggles the box.
// Waits until the view has taken it in (it rebuilds the list then). False when the run is not
// shown in the list or its box did not change.
bool toggleRun(CompareView& view, int64_t id) {
  QTreeWidget* list = view.runList();
  QTreeWidgetItem* item = runItem(list, id);
  if (!item || item->isHidden()) return false;
  const bool before = ticked(view, id);
  list->scrollToItem(item);
  const int x = list->header()->sectionViewportPosition(0) + list->header()->sectionSize(0) - 4;
  QTest::mouseClick(list->viewport(), Qt::LeftButton, Qt::NoModifier, QPoint(x, list->visualItemRect(item).center().y()));
  if (list->currentItem() != item) return false;
  QTest::keyClick(list, Qt::Key_Space);
  return QTest::qWaitFor([&] { return ticked(view, id) != before; }, 5000);
}

bool tickRuns(CompareView& view, std::initializer_list<int64_t> ids) {
  for (int64_t id : ids)
    if (ticked(view, id) || !toggleRun(view, id)) return false;
  return true;
}

}  // namespace

TEST(Smoothing, EmaOnFullDataKeepsLengthAndPassesNonFinite) {
  const std::vector<double> y{1, 0, 0, NAN, 1};
  const auto s = pm::ui::emaSmooth(y, 0.5);
  ASSERT_EQ(s.size(), y.size());
  EXPECT_DOUBLE_EQ(s[0], 1);
  EXPECT_DOUBLE_EQ(s[1], 0.5);
  EXPECT_DOUBLE_EQ(s[2], 0.25);
  EXPECT_TRUE(std::isnan(s[3]));
  EXPECT_DOUBLE_EQ(s[4], 0.625);
  EXPECT_EQ(pm::ui::emaSmooth(y, 0).size(), y.size());
  EXPECT_DOUBLE_EQ(pm::ui::emaSmooth(y, 0)[1], 0);
}

TEST(CompareData, SamplesAxisInterpolatesBetweenLoggedSteps) {
  const std::vector<pm::MetricPoint> samples{{10, 0, 320}, {20, 0, 640}};
  EXPECT_DOUBLE_EQ(pm::samplesAtStep(samples, 10), 320);
  EXPECT_DOUBLE_EQ(pm::samplesAtStep(samples, 15), 480);
  EXPECT_DOUBLE_EQ(pm::samplesAtStep(samples, 5), 160);
  EXPECT_DOUBLE_EQ(pm::samplesAtStep(samples, 30), 960);
  EXPECT_TRUE(std::isnan(pm::samplesAtStep({}, 3)));
}

TEST(CompareView, OverlaysRunsAtFullResolutionWithSummaryAndRatios) {
  pm::test::app();
  Fixture fx;
  ShownView shown(fx.db);
  CompareView& view = shown.view;
  const Controls& ui = shown.ui;
  ASSERT_TRUE(ui.complete()) << ui.comboBoxes << " combo boxes";
  ASSERT_TRUE(view.lastError().empty()) << view.lastError();
  EXPECT_EQ(view.runList()->topLevelItemCount(), 3);
  EXPECT_EQ(view.accuracyTarget(), 0.0);  // auto by default, as pipemare compare
  EXPECT_EQ(ui.target->text().toStdString(), "auto");
  pm::test::retypeNumber(ui.target, 0.8);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.accuracyTarget() == 0.8; }, 5000)) << view.accuracyTarget();
  // Ticked in another order than listed: plotted and tabulated by id.
  ASSERT_TRUE(tickRuns(view, {fx.gamma, fx.alpha, fx.beta}));
  EXPECT_EQ(view.selectedRuns(), (std::vector<int64_t>{fx.alpha, fx.beta, fx.gamma}));
  ASSERT_TRUE(pm::test::chooseText(ui.metric, "train/loss"));
  EXPECT_EQ(ui.metric->findText("no/such/metric"), -1);
  EXPECT_TRUE(view.availableMetrics().contains("eval/accuracy"));
  EXPECT_TRUE(view.availableMetrics().contains("train/samples"));
  // Per-stage metrics are metrics of their own: alpha's stage 1 utilization at steps 50..200.
  ASSERT_TRUE(view.availableMetrics().contains("stage1/utilization"));
  ASSERT_TRUE(view.availableMetrics().contains("stage0/mem/peak"));
  ASSERT_TRUE(pm::test::chooseText(ui.metric, "stage1/utilization"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.metric() == "stage1/utilization" && view.plot()->seriesCount() >= 2; }, 5000))
      << view.metric().toStdString();
  EXPECT_EQ(view.plot()->pointCount(0), 4u);
  // At the wall time of the run-level points of the same step.
  ASSERT_TRUE(pm::test::chooseText(ui.xAxis, axisName(XAxis::TrainingTime)));
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.xAxis() == XAxis::TrainingTime; }, 5000));
  EXPECT_EQ(view.plot()->pointCount(0), 4u);
  ASSERT_TRUE(pm::test::chooseText(ui.xAxis, axisName(XAxis::Step)));
  ASSERT_TRUE(pm::test::chooseText(ui.metric, "train/loss"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.xAxis() == XAxis::Step && view.metric() == "train/loss"; }, 5000));

  // One series per run, every stored point plotted.
  auto* plot = view.plot();
  ASSERT_EQ(plot->seriesCount(), 3);
  EXPECT_EQ(plot->pointCount(0), 200u);
  EXPECT_EQ(plot->pointCount(1), 200u);
  EXPECT_EQ(plot->pointCount(2), 150u);
  ASSERT_EQ(view.plottedSeries().size(), 3u);
  EXPECT_EQ(view.plottedSeries()[1].runId, fx.beta);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[1].y[99], 2.0 / 100);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].x[99], 100);

  // Summary figures, exactly as the data implies.
  ASSERT_EQ(view.baseline(), fx.alpha);  // default: the first selected run
  auto a = view.summaryRow(fx.alpha), b = view.summaryRow(fx.beta), g = view.summaryRow(fx.gamma);
  ASSERT_TRUE(a && b && g);
  EXPECT_TRUE(a->isBaseline);
  EXPECT_DOUBLE_EQ(field(*a, SummaryField::FinalLoss), 1.0 / 200);
  EXPECT_DOUBLE_EQ(field(*a, SummaryField::BestLoss), 1.0 / 200);
  EXPECT_DOUBLE_EQ(field(*b, SummaryField::FinalLoss), 2.0 / 200);
  EXPECT_DOUBLE_EQ(field(*g, SummaryField::FinalLoss), 3.0 / 150);
  EXPECT_DOUBLE_EQ(field(*a, SummaryField::FinalAccuracy), 1.0);
  EXPECT_DOUBLE_EQ(field(*b, SummaryField::FinalAccuracy), 0.85);
  EXPECT_DOUBLE_EQ(field(*b, SummaryField::BestAccuracy), 0.9);
  EXPECT_DOUBLE_EQ(field(*g, SummaryField::BestAccuracy), 0.35);
  EXPECT_DOUBLE_EQ(field(*a, SummaryField::TimeToTarget), 79.5);
  EXPECT_DOUBLE_EQ(field(*b, SummaryField::TimeToTarget), 159.0);
  EXPECT_TRUE(std::isnan(field(*g, SummaryField::TimeToTarget)));
  EXPECT_NEAR(field(*a, SummaryField::Throughput), 400.0 / 3.0, 1e-9);  // 100 and 200 alternating: samples over time
  EXPECT_DOUBLE_EQ(field(*b, SummaryField::Throughput), 75.0);
  EXPECT_TRUE(std::isnan(field(*g, SummaryField::Throughput)));
  EXPECT_DOUBLE_EQ(field(*a, SummaryField::Utilization), 0.625);
  EXPECT_DOUBLE_EQ(field(*b, SummaryField::Utilization), 0.3125);
  EXPECT_DOUBLE_EQ(field(*a, SummaryField::PeakMemory), 4e6);
  EXPECT_DOUBLE_EQ(field(*b, SummaryField::PeakMemory), 2e6);

  // Ratios against the baseline (alpha).
  EXPECT_DOUBLE_EQ(a->ratio(SummaryField::FinalLoss), 1.0);
  EXPECT_DOUBLE_EQ(b->ratio(SummaryField::FinalLoss), 2.0);
  EXPECT_DOUBLE_EQ(g->ratio(SummaryField::FinalLoss), 4.0);
  EXPECT_DOUBLE_EQ(b->ratio(SummaryField::FinalAccuracy), 0.85);
  EXPECT_DOUBLE_EQ(b->ratio(SummaryField::TimeToTarget), 2.0);
  EXPECT_TRUE(std::isnan(g->ratio(SummaryField::TimeToTarget)));
  EXPECT_NEAR(b->ratio(SummaryField::Throughput), 75.0 / (400.0 / 3.0), 1e-12);
  EXPECT_DOUBLE_EQ(b->ratio(SummaryField::Utilization), 0.5);
  EXPECT_DOUBLE_EQ(b->ratio(SummaryField::PeakMemory), 0.5);
  // The table shows them.
  auto* table = view.summaryTable();
  ASSERT_EQ(table->rowCount(), 3);
  EXPECT_TRUE(table->item(0, 0)->text().contains("(base)"));
  EXPECT_FALSE(table->item(1, 0)->text().contains("(base)"));
  EXPECT_TRUE(table->item(1, 1 + static_cast<int>(SummaryField::FinalLoss))->text().contains(QStringLiteral("×2.00")));
  // Accuracy against the baseline in points, as pipemare compare prints it (beta 0.85, alpha 1.0).
  EXPECT_TRUE(table->item(1, 1 + static_cast<int>(SummaryField::FinalAccuracy))->text().contains("-15.00 pts"))
      << table->item(1, 1 + static_cast<int>(SummaryField::FinalAccuracy))->text().toStdString();
  EXPECT_EQ(table->item(2, 1 + static_cast<int>(SummaryField::TimeToTarget))->text(), "-");

  // Another baseline, chosen in its box (a run not ticked is not offered).
  ASSERT_TRUE(pm::test::chooseData(ui.baseline, runData(fx.beta)));
  EXPECT_EQ(ui.baseline->findData(runData(999)), -1);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.baseline() == fx.beta; }, 5000)) << view.baseline();
  EXPECT_DOUBLE_EQ(view.summaryRow(fx.alpha)->ratio(SummaryField::FinalLoss), 0.5);
  EXPECT_DOUBLE_EQ(view.summaryRow(fx.alpha)->ratio(SummaryField::TimeToTarget), 0.5);
  EXPECT_NEAR(view.summaryRow(fx.alpha)->ratio(SummaryField::Throughput), (400.0 / 3.0) / 75.0, 1e-12);
  EXPECT_TRUE(view.summaryRow(fx.beta)->isBaseline);

  // auto (0, the default): the baseline's best accuracy - 0.01, as pipemare compare: beta's best
  // is 0.9, so the target is 0.89, which alpha reaches at step 180 (89.5 s).
  pm::test::retypeNumber(ui.target, 0);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.accuracyTarget() == 0.0; }, 5000)) << view.accuracyTarget();
  EXPECT_EQ(ui.target->text().toStdString(), "auto");
  EXPECT_DOUBLE_EQ(view.effectiveAccuracyTarget(), 0.89);
  EXPECT_DOUBLE_EQ(field(*view.summaryRow(fx.alpha), SummaryField::TimeToTarget), 89.5);
  EXPECT_TRUE(view.summaryTable()->horizontalHeaderItem(1 + static_cast<int>(SummaryField::TimeToTarget))->text().contains("0.89"));

  // A different accuracy target: alpha reaches 0.5 at step 100 (49.5 s), beta at step 100 (99 s),
  // gamma (max 0.35) never.
  pm::test::retypeNumber(ui.target, 0.5);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.accuracyTarget() == 0.5; }, 5000)) << view.accuracyTarget();
  EXPECT_DOUBLE_EQ(field(*view.summaryRow(fx.alpha), SummaryField::TimeToTarget), 49.5);
  EXPECT_DOUBLE_EQ(field(*view.summaryRow(fx.beta), SummaryField::TimeToTarget), 99.0);
  EXPECT_TRUE(std::isnan(field(*view.summaryRow(fx.gamma), SummaryField::TimeToTarget)));
}

TEST(CompareView, XAxesSmoothingAndUnchecking) {
  pm::test::app();
  Fixture fx;
  ShownView shown(fx.db);
  CompareView& view = shown.view;
  const Controls& ui = shown.ui;
  ASSERT_TRUE(ui.complete()) << ui.comboBoxes << " combo boxes";
  // Nothing ticked yet: the empty plot says so instead of naming a metric.
  EXPECT_TRUE(view.plot()->title().startsWith("No runs ticked")) << view.plot()->title().toStdString();
  ASSERT_TRUE(tickRuns(view, {fx.alpha, fx.beta, fx.gamma}));
  ASSERT_TRUE(pm::test::chooseText(ui.metric, "train/loss"));
  EXPECT_EQ(view.plot()->title().toStdString(), "train/loss");

  // The x axis, chosen in its box.
  const auto axis = [&](XAxis a) {
    return pm::test::chooseText(ui.xAxis, axisName(a)) && QTest::qWaitFor([&] { return view.xAxis() == a; }, 5000);
  };
  ASSERT_TRUE(axis(XAxis::TrainingTime));
  ASSERT_EQ(view.plottedSeries().size(), 3u);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].x.front(), 0.0);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].x.back(), 99.5);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[1].x.back(), 199.0);
  ASSERT_TRUE(axis(XAxis::Samples));
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].x[9], 320.0);  // train/samples at step 10
  // Runs without train/samples have nothing on the samples axis.
  EXPECT_TRUE(view.plottedSeries()[1].x.empty());
  ASSERT_TRUE(axis(XAxis::Updates));
  EXPECT_DOUBLE_EQ(view.plottedSeries()[2].x.back(), 150.0);
  EXPECT_EQ(view.plot()->pointCount(2), 150u);
  ASSERT_TRUE(axis(XAxis::Step));

  // Smoothing, typed into its box, changes the drawn values, never the stored ones, and keeps
  // every point; the slider beside it follows.
  pm::test::retypeNumber(ui.smoothing, 0.9);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.smoothing() == 0.9; }, 5000)) << view.smoothing();
  EXPECT_DOUBLE_EQ(view.smoothing(), 0.9);
  EXPECT_EQ(ui.smoothingSlider->value(), 90);
  const auto& s = view.plottedSeries()[0];
  ASSERT_EQ(s.y.size(), 200u);
  EXPECT_EQ(view.plot()->pointCount(0), 200u);
  EXPECT_DOUBLE_EQ(s.y[0], 1.0);
  EXPECT_DOUBLE_EQ(s.y[1], 0.9 * 1.0 + 0.1 * 0.5);
  EXPECT_NE(s.y[150], s.raw[150]);
  EXPECT_DOUBLE_EQ(s.raw[1], 0.5);
  const auto& stored = view.storedPoints(fx.alpha, "train/loss");
  ASSERT_EQ(stored.size(), 200u);
  EXPECT_DOUBLE_EQ(stored[1].value, 0.5);
  EXPECT_DOUBLE_EQ(pm::RunStore(fx.db).loadMetric(fx.alpha, "train/loss")[1].value, 0.5);
  // The summary uses the unsmoothed data.
  EXPECT_DOUBLE_EQ(field(*view.summaryRow(fx.alpha), SummaryField::FinalLoss), 1.0 / 200);
  // The slider's end (End key) is the most smoothing there is; its start (Home) none.
  QTest::keyClick(ui.smoothingSlider, Qt::Key_End);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.smoothing() == 0.99; }, 5000)) << view.smoothing();
  EXPECT_DOUBLE_EQ(ui.smoothing->value(), 0.99);
  QTest::keyClick(ui.smoothingSlider, Qt::Key_Home);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.smoothing() == 0.0; }, 5000)) << view.smoothing();
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].y[1], 0.5);

  // Unticking a run in the list drops its series.
  QTreeWidgetItem* gammaItem = nullptr;
  for (int i = 0; i < view.runList()->topLevelItemCount(); ++i)
    if (view.runList()->topLevelItem(i)->text(1) == "gamma") gammaItem = view.runList()->topLevelItem(i);
  ASSERT_NE(gammaItem, nullptr);
  EXPECT_EQ(gammaItem->checkState(0), Qt::Checked);
  ASSERT_TRUE(toggleRun(view, fx.gamma));
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.plot()->seriesCount() == 2; })) << view.plot()->seriesCount();
  EXPECT_EQ(view.selectedRuns(), (std::vector<int64_t>{fx.alpha, fx.beta}));
  EXPECT_EQ(view.summaryTable()->rowCount(), 2);
  QTreeWidgetItem* unticked = runItem(view.runList(), fx.gamma);
  ASSERT_NE(unticked, nullptr);
  EXPECT_EQ(unticked->checkState(0), Qt::Unchecked);
}

// A remembered smoothing weight does not move a run's few evaluations: a series of fewer than 10
// points is drawn as stored, while a longer one is smoothed, says so in its legend entry and keeps
// its stored values faded under the smoothed curve (part of its series, not a series of its own).
TEST(CompareView, ShortSeriesAreNotSmoothedAndSmoothedOnesSaySo) {
  pm::test::app();
  QTemporaryDir dir;
  const std::string db = dir.filePath("runs.db").toStdString();
  int64_t few = 0, many = 0;
  {
    pm::RunStore store(db);
    const char* config = R"({"model":{"name":"mlp"},"pipeline":{"schedule":"gpipe","stages":1,"microbatches":1}})";
    few = store.createRun("few", config);
    many = store.createRun("many", config);
    store.appendMetric(few, "eval/accuracy", 10, 1000.0, 0.7);
    store.appendMetric(few, "eval/accuracy", 20, 1001.0, 0.815);
    for (int64_t s = 1; s <= 20; ++s) store.appendMetric(many, "eval/accuracy", s, 1000.0 + static_cast<double>(s), s % 2 ? 0.5 : 0.9);
    store.flush();
    store.setStatus(few, "finished");
    store.setStatus(many, "finished");
  }
  ShownView shown(db);
  CompareView& view = shown.view;
  const Controls& ui = shown.ui;
  ASSERT_TRUE(ui.complete()) << ui.comboBoxes << " combo boxes";
  ASSERT_TRUE(tickRuns(view, {few, many}));
  ASSERT_TRUE(pm::test::chooseText(ui.metric, "eval/accuracy"));
  pm::test::retypeNumber(ui.smoothing, 0.6);
  ASSERT_TRUE(QTest::qWaitFor(
      [&] { return view.smoothing() == 0.6 && view.metric() == "eval/accuracy" && view.plottedSeries().size() == 2; }, 5000))
      << view.smoothing() << " " << view.metric().toStdString();

  pm::ui::CurvePlot* plot = view.plot();
  ASSERT_EQ(plot->seriesCount(), 2);  // one per run
  // The two evaluations, as stored: 0.815 stays 0.815 (smoothed it would read 0.746).
  const auto& short_ = view.plottedSeries()[0];
  ASSERT_EQ(short_.runId, few);
  EXPECT_FALSE(short_.smoothed);
  ASSERT_EQ(short_.y.size(), 2u);
  EXPECT_DOUBLE_EQ(short_.y[1], 0.815);
  EXPECT_FALSE(plot->seriesName(0).contains("smoothed")) << plot->seriesName(0).toStdString();
  EXPECT_FALSE(plot->showsRaw(0));
  EXPECT_EQ(plot->rawPointCount(0), 0u);
  // Twenty points are smoothed, named so, with every stored point drawn faded under them.
  const auto& long_ = view.plottedSeries()[1];
  ASSERT_EQ(long_.runId, many);
  EXPECT_TRUE(long_.smoothed);
  ASSERT_EQ(long_.y.size(), 20u);
  EXPECT_DOUBLE_EQ(long_.raw[1], 0.9);
  EXPECT_DOUBLE_EQ(long_.y[1], 0.6 * 0.5 + (1 - 0.6) * 0.9);
  EXPECT_TRUE(plot->seriesName(1).contains("smoothed 0.6")) << plot->seriesName(1).toStdString();
  EXPECT_EQ(plot->pointCount(1), 20u);
  EXPECT_EQ(plot->rawPointCount(1), 20u);
  EXPECT_TRUE(plot->showsRaw(1));

  // Smoothing off (the slider's start): no faded curve, and the legend names the run alone.
  QTest::keyClick(ui.smoothingSlider, Qt::Key_Home);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.smoothing() == 0.0; }, 5000)) << view.smoothing();
  ASSERT_EQ(plot->seriesCount(), 2);
  EXPECT_FALSE(plot->showsRaw(1));
  EXPECT_FALSE(plot->seriesName(1).contains("smoothed")) << plot->seriesName(1).toStdString();
  EXPECT_DOUBLE_EQ(view.plottedSeries()[1].y[1], 0.9);
}

// A run keeps its colour when others are ticked (colours followed the position in the selection);
// the filter keeps filtering after the list is rebuilt (all runs came back); memory is in MiB and
// stage10 comes after stage2 in the metric list.
TEST(CompareView, StableColoursFilterAndMemoryUnits) {
  pm::test::app();
  Fixture fx;
  ShownView shown(fx.db);
  CompareView& view = shown.view;
  const Controls& ui = shown.ui;
  ASSERT_TRUE(ui.complete()) << ui.comboBoxes << " combo boxes";
  ASSERT_TRUE(tickRuns(view, {fx.beta}));
  const QColor betaColour = view.colorOf(fx.beta);
  ASSERT_TRUE(tickRuns(view, {fx.alpha}));
  EXPECT_EQ(view.colorOf(fx.beta), betaColour);
  EXPECT_NE(view.colorOf(fx.alpha), betaColour);

  auto visible = [&] {
    int n = 0;
    for (int i = 0; i < view.runList()->topLevelItemCount(); ++i) n += view.runList()->topLevelItem(i)->isHidden() ? 0 : 1;
    return n;
  };
  const auto showsRows = [&](int n) { return QTest::qWaitFor([&] { return visible() == n; }, 5000); };
  pm::test::retype(ui.filter, "gamma");
  EXPECT_TRUE(showsRows(1)) << visible();
  ASSERT_TRUE(tickRuns(view, {fx.gamma}));  // rebuilds the list
  EXPECT_TRUE(showsRows(1)) << visible();
  QTest::mouseClick(ui.refresh, Qt::LeftButton);
  EXPECT_TRUE(showsRows(1)) << visible();
  pm::test::retype(ui.filter, "");
  EXPECT_TRUE(showsRows(3)) << visible();

  ASSERT_TRUE(pm::test::chooseText(ui.metric, "stage0/mem/peak"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.metric() == "stage0/mem/peak"; }, 5000)) << view.metric().toStdString();
  ASSERT_FALSE(view.plottedSeries().empty());
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].raw[1], 4e6 / (1024.0 * 1024.0));  // alpha at step 100
  EXPECT_TRUE(view.plot()->title().startsWith("stage0/mem/peak")) << view.plot()->title().toStdString();

  // Eleven stages: stage10 sorts after stage2.
  {
    pm::RunStore store(fx.db);
    for (int stage = 0; stage <= 10; ++stage) store.appendStageMetric(fx.gamma, stage, 10, "tau", 1);
    store.flush();
  }
  // An ended run's data is cached while ticked: Clear selection, then gamma ticked again, reads it afresh.
  QTest::mouseClick(ui.clear, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.selectedRuns().empty(); }, 5000));
  ASSERT_TRUE(tickRuns(view, {fx.gamma}));
  const QStringList metrics = view.availableMetrics();
  ASSERT_TRUE(metrics.contains("stage10/tau") && metrics.contains("stage2/tau")) << metrics.join(" ").toStdString();
  EXPECT_LT(metrics.indexOf("stage2/tau"), metrics.indexOf("stage10/tau"));
}

TEST(RunData, UpdatesPerStepFollowTheSchedule) {
  pm::RunRecord r;
  r.config_json = R"({"pipeline":{"schedule":"gpipe","microbatches":8}})";
  EXPECT_DOUBLE_EQ(pm::updatesPerStep(r), 1.0);
  r.config_json = R"({"pipeline":{"schedule":"pipedream","microbatches":8,"update_interval":1}})";
  EXPECT_DOUBLE_EQ(pm::updatesPerStep(r), 8.0);
  r.config_json = R"({"pipeline":{"schedule":"pipedream-2bw","microbatches":4,"update_interval":8}})";
  EXPECT_DOUBLE_EQ(pm::updatesPerStep(r), 0.5);
  r.config_json = "not json";
  EXPECT_DOUBLE_EQ(pm::updatesPerStep(r), 1.0);
}

TEST(CompareView, ExportsPlotAndCsv) {
  pm::test::app();
  Fixture fx;
  ShownView shown(fx.db, 1000, 700);
  CompareView& view = shown.view;
  const Controls& ui = shown.ui;
  ASSERT_TRUE(ui.complete()) << ui.comboBoxes << " combo boxes";
  pm::test::retypeNumber(ui.target, 0.8);
  ASSERT_TRUE(tickRuns(view, {fx.alpha, fx.beta, fx.gamma}));
  ASSERT_TRUE(pm::test::chooseText(ui.metric, "train/loss"));
  pm::test::retypeNumber(ui.smoothing, 0.5);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.accuracyTarget() == 0.8 && view.metric() == "train/loss" && view.smoothing() == 0.5; }, 5000))
      << view.accuracyTarget() << " " << view.metric().toStdString() << " " << view.smoothing();
  // Written through the view's export functions (the buttons ask for these paths in a file dialog).
  QTemporaryDir out;
  const QString png = out.filePath("cmp.png"), pdf = out.filePath("cmp.pdf"), csv = out.filePath("cmp.csv");
  ASSERT_TRUE(view.exportPlot(png));
  ASSERT_TRUE(view.exportPlot(pdf));
  EXPECT_GT(QFileInfo(png).size(), 1000);
  EXPECT_GT(QFileInfo(pdf).size(), 1000);
  ASSERT_TRUE(view.exportCsv(csv));
  EXPECT_EQ(CompareView::summaryCsvPath(csv), out.filePath("cmp_summary.csv"));
  // Header + every point at full resolution: 200 + 200 + 150.
  EXPECT_EQ(countLines(csv), 1 + 550);
  EXPECT_EQ(countLines(CompareView::summaryCsvPath(csv)), 1 + 3);
  QFile f(csv);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  EXPECT_EQ(f.readLine().trimmed(), "run_id,run_name,metric,step,x,value,smoothed");
  EXPECT_EQ(f.readLine().trimmed(), QStringLiteral("%1,alpha,train/loss,1,1,1,1").arg(fx.alpha).toUtf8());
  EXPECT_EQ(f.readLine().trimmed(), QStringLiteral("%1,alpha,train/loss,2,2,0.5,0.75").arg(fx.alpha).toUtf8());
  const QByteArray all = f.readAll();
  EXPECT_TRUE(all.contains(QStringLiteral("%1,\"beta, \"\"quoted\"\"\",train/loss,200,200,0.01,").arg(fx.beta).toUtf8()));
  QFile sf(CompareView::summaryCsvPath(csv));
  ASSERT_TRUE(sf.open(QIODevice::ReadOnly));
  const QByteArray header = sf.readLine();
  EXPECT_TRUE(header.startsWith("run_id,run_name,schedule,model,stages,microbatches,status,baseline,accuracy_target,final_loss"));
  EXPECT_TRUE(header.contains("final_loss_ratio"));
  const QByteArray alphaRow = sf.readLine();
  EXPECT_TRUE(alphaRow.startsWith(QStringLiteral("%1,alpha,gpipe,mlp,2,4,finished,1,0.80000000000000004,0.0050000000000000001")
                                      .arg(fx.alpha)
                                      .toUtf8()))
      << alphaRow.toStdString();
  EXPECT_FALSE(view.exportCsv(out.filePath("no/such/dir/x.csv")));
}

// An export into a folder that does not exist says, in the view's status line, which file could
// not be written and why, naming the folder (the buttons ask for the path in a file dialog, then
// call these functions); nothing is made. A folder the user may not write into is named too, and
// an export that works says where it went.
TEST(CompareView, ExportIntoAMissingFolderSaysWhy) {
  pm::test::app();
  Fixture fx;
  ShownView shown(fx.db, 1000, 700);
  CompareView& view = shown.view;
  ASSERT_TRUE(shown.ui.complete()) << shown.ui.comboBoxes << " combo boxes";
  ASSERT_TRUE(tickRuns(view, {fx.alpha}));
  QLabel* status = view.statusLabel();
  ASSERT_NE(status, nullptr);
  QTemporaryDir out;
  ASSERT_TRUE(out.isValid());
  const QString missing = out.filePath("no-such-folder");
  const QString png = missing + "/cmp.png", csv = missing + "/cmp.csv";

  ASSERT_FALSE(view.exportPlot(png));
  EXPECT_TRUE(status->isVisible());
  EXPECT_TRUE(status->text().contains("Could not save the plot to " + png + ": the folder " + missing + " does not exist"))
      << status->text().toStdString();
  ASSERT_FALSE(view.exportCsv(csv));
  EXPECT_TRUE(status->text().contains("Could not write " + csv + ": the folder " + missing + " does not exist"))
      << status->text().toStdString();
  EXPECT_FALSE(QFileInfo::exists(missing));

  // A folder without write permission (root may write anywhere: not checked then).
  if (::geteuid() != 0) {
    const QString locked = out.filePath("read-only");
    ASSERT_TRUE(QDir().mkdir(locked));
    ASSERT_TRUE(QFile::setPermissions(locked, QFileDevice::ReadOwner | QFileDevice::ExeOwner));
    const bool saved = view.exportPlot(locked + "/cmp.png");
    const QString text = status->text();
    QFile::setPermissions(locked, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    EXPECT_FALSE(saved);
    EXPECT_TRUE(text.contains("the folder " + locked + " is not writable")) << text.toStdString();
  }

  ASSERT_TRUE(view.exportPlot(out.filePath("cmp.png")));
  EXPECT_TRUE(status->text().contains("Plot saved to " + out.filePath("cmp.png"))) << status->text().toStdString();
}

TEST(CompareView, MainWindowComparesRunsSelectedInTheBrowserWithCtrlK) {
  pm::test::app();
  Fixture fx;
  pm::ui::MainWindow w(fx.db);
  w.resize(1400, 860);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  ASSERT_NE(w.compareView(), nullptr);
  auto* tabs = qobject_cast<QTabWidget*>(w.centralWidget());
  ASSERT_NE(tabs, nullptr);
  ASSERT_TRUE(pm::test::clickTab(tabs, "Runs"));
  auto* table = w.runsBrowser()->table();
  ASSERT_EQ(table->model()->rowCount(), 3);
  // alpha and beta selected with the mouse: a click, then a Ctrl+click.
  const int alphaRow = pm::test::rowWithId(table, 0, fx.alpha), betaRow = pm::test::rowWithId(table, 0, fx.beta);
  ASSERT_GE(alphaRow, 0);
  ASSERT_GE(betaRow, 0);
  pm::test::clickCell(table, alphaRow, 1);
  pm::test::clickCell(table, betaRow, 1, Qt::ControlModifier);
  auto ids = w.runsBrowser()->selectedRunIds();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int64_t>{fx.alpha, fx.beta}));
  QAction* action = w.findChild<QAction*>("compareSelectedAction");
  ASSERT_NE(action, nullptr);
  EXPECT_EQ(action->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_K));
  QTest::keyClick(&w, Qt::Key_K, Qt::ControlModifier);
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.compareView()->isVisible(); }, 5000)) << "Ctrl+K did not show the Compare tab";
  EXPECT_EQ(w.compareView()->selectedRuns(), (std::vector<int64_t>{fx.alpha, fx.beta}));
  EXPECT_EQ(w.compareView()->plot()->seriesCount(), 2);
  ASSERT_TRUE(pm::test::clickTab(tabs, "Runs"));
  EXPECT_FALSE(w.compareView()->isVisible());
  EXPECT_TRUE(w.selectTab("compare"));  // the command line's --tab: by name, in any case
  EXPECT_TRUE(w.compareView()->isVisible());
  EXPECT_FALSE(w.selectTab("nope"));
}

// The workbench's --compare IDS --metric KEY: the runs side by side with that metric; a run not
// in the store or a metric none of them recorded is named (the workbench exits 2 with it).
TEST(CompareView, MainWindowComparesRunsGivenById) {
  pm::test::app();
  Fixture fx;
  pm::ui::MainWindow w(fx.db);
  EXPECT_EQ(w.compareRuns({fx.gamma, fx.alpha}, "eval/accuracy"), QString());
  EXPECT_EQ(w.compareView()->selectedRuns(), (std::vector<int64_t>{fx.alpha, fx.gamma}));
  EXPECT_EQ(w.compareView()->metric(), "eval/accuracy");
  EXPECT_EQ(w.compareView()->plot()->seriesCount(), 2);
  EXPECT_EQ(w.compareRuns({fx.alpha, 999, 999}, ""), "--compare: no run 999 in the store " + QString::fromStdString(fx.db));
  const QString bad = w.compareRuns({fx.alpha}, "eval/perplexity");
  EXPECT_TRUE(bad.startsWith("--metric: none of the compared runs recorded 'eval/perplexity' (they have: ")) << bad.toStdString();
  EXPECT_TRUE(bad.contains("train/loss")) << bad.toStdString();
  // KEY,SECOND: the second on the right axis of the same panel.
  EXPECT_EQ(w.compareRuns({fx.alpha, fx.beta}, "train/loss,eval/accuracy"), QString());
  EXPECT_EQ(w.compareView()->metric(), "train/loss");
  EXPECT_EQ(w.compareView()->secondMetric(), "eval/accuracy");
  EXPECT_EQ(w.compareView()->plot()->seriesCount(), 4);
  EXPECT_TRUE(w.compareRuns({fx.alpha}, "train/loss,eval/loss,eval/accuracy").startsWith("--metric: at most two metrics"));
}

// The refresh reads a selected run's data again only while it is going (and once when it ends);
// a finished run keeps what was read.
TEST(CompareView, RefreshRereadsOnlyRunsStillGoing) {
  pm::test::app();
  Fixture fx;
  int64_t going = 0;
  {
    pm::RunStore store(fx.db);
    going = store.createRun("going", R"({"model":{"name":"mlp"},"pipeline":{"schedule":"gpipe","stages":1,"microbatches":1}})");
    store.setStatus(going, "running");
    store.appendMetric(going, "train/loss", 1, 0.0, 2.0);
    store.flush();
  }
  ShownView shown(fx.db);
  CompareView& view = shown.view;
  const Controls& ui = shown.ui;
  ASSERT_TRUE(ui.complete()) << ui.comboBoxes << " combo boxes";
  ASSERT_TRUE(tickRuns(view, {fx.alpha, going}));
  // From here on no event loop runs between the store's changes and the checks (the Refresh
  // button reads the store before the click returns): the counts are the button's alone, not
  // the watcher's poll's.
  const int first = view.runLoads();
  {
    pm::RunStore store(fx.db);
    store.appendMetric(going, "train/loss", 2, 1.0, 1.0);
    store.flush();
  }
  QTest::mouseClick(ui.refresh, Qt::LeftButton);
  EXPECT_EQ(view.runLoads(), first + 1) << "only the running run is read again";
  EXPECT_EQ(view.storedPoints(going, "train/loss").size(), 2u);
  {
    pm::RunStore store(fx.db);
    store.setStatus(going, "finished");
  }
  QTest::mouseClick(ui.refresh, Qt::LeftButton);
  EXPECT_EQ(view.runLoads(), first + 2) << "read once more when it ends";
  QTest::mouseClick(ui.refresh, Qt::LeftButton);
  EXPECT_EQ(view.runLoads(), first + 2) << "finished runs are not read again";
  ASSERT_TRUE(view.summaryRow(fx.alpha).has_value());
  EXPECT_EQ(view.storedPoints(going, "train/loss").size(), 2u);
}

// The metric list is grouped under headers that cannot be chosen (train, eval, one per per-stage
// metric), and the search box beside it filters it as the user types; choosing a match in the
// list, or Return in the search box, plots it; emptying the search brings every key back.
TEST(CompareView, MetricSearchFiltersTheGroupedList) {
  pm::test::app();
  Fixture fx;
  ShownView shown(fx.db);
  CompareView& view = shown.view;
  const Controls& ui = shown.ui;
  ASSERT_TRUE(ui.complete()) << ui.comboBoxes << " combo boxes";
  ASSERT_TRUE(tickRuns(view, {fx.alpha, fx.beta}));
  auto* search = view.findChild<QLineEdit*>("metricSearch");
  ASSERT_NE(search, nullptr);
  const QStringList all = view.availableMetrics();
  ASSERT_TRUE(all.contains("stage1/utilization") && all.contains("stage0/mem/peak")) << all.join(" ").toStdString();

  // The list: headers (not selectable) and keys; every key under its group's header.
  const auto keysShown = [&] {
    QStringList keys;
    for (int i = 0; i < ui.metric->count(); ++i)
      if (ui.metric->model()->flags(ui.metric->model()->index(i, 0)) & Qt::ItemIsSelectable) keys << ui.metric->itemText(i);
    return keys;
  };
  const auto headerOf = [&](const QString& key) {
    for (int i = ui.metric->findText(key); i >= 0; --i)
      if (!(ui.metric->model()->flags(ui.metric->model()->index(i, 0)) & Qt::ItemIsSelectable)) return ui.metric->itemText(i);
    return QString();
  };
  EXPECT_EQ(keysShown().size(), all.size());
  EXPECT_GT(ui.metric->count(), all.size());
  EXPECT_EQ(headerOf("train/loss"), "train");
  EXPECT_EQ(headerOf("eval/accuracy"), "eval");
  EXPECT_EQ(headerOf("stage1/utilization"), "per stage: utilization");
  EXPECT_EQ(headerOf("stage0/mem/peak"), "per stage: memory");

  // Typing filters the list; the plot keeps its metric until another is chosen.
  QTest::mouseClick(search, Qt::LeftButton);
  pm::test::typeText(search, "UTIL");
  ASSERT_TRUE(QTest::qWaitFor([&] { return keysShown() == QStringList({"stage*/utilization", "stage0/utilization", "stage1/utilization"}); }, 5000))
      << keysShown().join(" ").toStdString();
  EXPECT_EQ(view.metric(), "train/loss");
  ASSERT_TRUE(pm::test::chooseText(ui.metric, "stage1/utilization"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.metric() == "stage1/utilization"; }, 5000)) << view.metric().toStdString();
  EXPECT_TRUE(view.plot()->title().startsWith("stage1/utilization")) << view.plot()->title().toStdString();
  ASSERT_EQ(view.plottedSeries().size(), 2u);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].raw.back(), 0.75);  // alpha's stage 1 at step 200

  // Two words, both in the key; Return plots the first match.
  pm::test::retype(search, "peak mem");
  ASSERT_TRUE(QTest::qWaitFor([&] { return keysShown() == QStringList({"stage*/mem/peak", "stage0/mem/peak", "stage1/mem/peak"}); }, 5000))
      << keysShown().join(" ").toStdString();
  QTest::keyClick(search, Qt::Key_Return);  // the first match: every stage at once
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.metric() == "stage*/mem/peak"; }, 5000)) << view.metric().toStdString();

  pm::test::retype(search, "");
  EXPECT_TRUE(QTest::qWaitFor([&] { return keysShown().size() == all.size(); }, 5000)) << keysShown().join(" ").toStdString();
  EXPECT_EQ(ui.metric->currentText(), "stage*/mem/peak");
  // The API the main window's --metric uses still chooses any key.
  EXPECT_TRUE(view.setMetric("eval/accuracy"));
  EXPECT_EQ(ui.metric->currentText(), "eval/accuracy");
  EXPECT_FALSE(view.setMetric("no/such/metric"));
}

// A run stopped after step 5 and resumed 90 s later (the store's time/paused_s at step 5): on the
// "training time" axis its curve continues where it stopped, on "wall clock" the pause shows. The
// user picks the axis in its box.
TEST(CompareView, TrainingTimeLeavesAResumedRunsPauseOutAndTheWallClockKeepsIt) {
  pm::test::app();
  QTemporaryDir dir;
  const std::string db = dir.filePath("runs.db").toStdString();
  int64_t run = 0;
  {
    pm::RunStore store(db);
    run = store.createRun("resumed", R"({"model":{"name":"mlp"},"pipeline":{"schedule":"gpipe","stages":2,"microbatches":4}})");
    for (int64_t s = 1; s <= 5; ++s) store.appendMetric(run, "train/loss", s, 999.0 + static_cast<double>(s), 1.0 / static_cast<double>(s));
    store.appendMetric(run, "time/paused_s", 5, 1095.0, 90.0);
    for (int64_t s = 6; s <= 10; ++s) store.appendMetric(run, "train/loss", s, 1089.0 + static_cast<double>(s), 1.0 / static_cast<double>(s));
    store.flush();
    store.setStatus(run, "finished");
  }
  ShownView shown(db);
  CompareView& view = shown.view;
  ASSERT_TRUE(shown.ui.complete());
  ASSERT_TRUE(tickRuns(view, {run}));
  ASSERT_TRUE(pm::test::chooseText(shown.ui.metric, "train/loss"));
  EXPECT_FALSE(view.availableMetrics().contains("time/paused_s")) << "the pauses are no curve";
  const auto axis = [&](XAxis a) {
    return pm::test::chooseText(shown.ui.xAxis, axisName(a)) && QTest::qWaitFor([&] { return view.xAxis() == a; }, 5000);
  };
  ASSERT_TRUE(axis(XAxis::TrainingTime));
  ASSERT_EQ(view.plottedSeries().size(), 1u);
  const auto& x = view.plottedSeries()[0].x;
  ASSERT_EQ(x.size(), 10u);
  EXPECT_DOUBLE_EQ(x[4], 4.0);   // step 5, before the stop
  EXPECT_DOUBLE_EQ(x[5], 5.0);   // step 6, the first after the resume: one second later, not 91
  EXPECT_DOUBLE_EQ(x[9], 9.0);
  ASSERT_TRUE(axis(XAxis::WallClock));
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].x[5], 95.0);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].x[9], 99.0);
}

// Ticked runs are named by what tells them apart, before their names (which a narrow column or
// legend cuts first): alpha and beta differ in schedule and N only, so those are what they show;
// ticking gamma as well (another model, P = 1) brings model and P in.
TEST(CompareView, RunsAreNamedByWhatTellsThemApart) {
  pm::test::app();
  Fixture fx;
  ShownView shown(fx.db);
  CompareView& view = shown.view;
  ASSERT_TRUE(shown.ui.complete());
  ASSERT_TRUE(tickRuns(view, {fx.alpha, fx.beta}));
  ASSERT_TRUE(pm::test::chooseText(shown.ui.metric, "train/loss"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.plot()->seriesCount() == 2; }, 5000));
  const QString alpha = QString("#%1 gpipe N=4 \u00b7 alpha").arg(fx.alpha);
  EXPECT_EQ(view.plot()->seriesName(0), alpha);
  EXPECT_TRUE(view.plot()->seriesName(1).startsWith(QString("#%1 pipemare N=8 \u00b7 beta").arg(fx.beta)))
      << view.plot()->seriesName(1).toStdString();
  ASSERT_GE(view.summaryTable()->rowCount(), 1);
  EXPECT_TRUE(view.summaryTable()->item(0, 0)->text().startsWith(alpha)) << view.summaryTable()->item(0, 0)->text().toStdString();
  ASSERT_TRUE(tickRuns(view, {fx.gamma}));
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.plot()->seriesCount() == 3; }, 5000));
  EXPECT_EQ(view.plot()->seriesName(0), QString("#%1 gpipe mlp P=2 N=4 \u00b7 alpha").arg(fx.alpha));
  EXPECT_EQ(view.plot()->seriesName(2), QString("#%1 1f1b cnn P=1 N=1 \u00b7 gamma").arg(fx.gamma));
}

// A per-stage metric for every stage at once ("stage*/utilization"): one panel holding each ticked
// run's stages, in the run's colour, named by run and stage; a run without the metric is named
// as missing.
TEST(CompareView, EveryStageOfAMetricInOnePanel) {
  pm::test::app();
  Fixture fx;
  ShownView shown(fx.db);
  CompareView& view = shown.view;
  ASSERT_TRUE(shown.ui.complete());
  ASSERT_TRUE(tickRuns(view, {fx.alpha, fx.beta, fx.gamma}));
  ASSERT_TRUE(view.availableMetrics().contains("stage*/utilization"));
  ASSERT_TRUE(view.availableMetrics().contains("stage*/mem/peak"));
  ASSERT_TRUE(pm::test::chooseText(shown.ui.metric, "stage*/utilization"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.metric() == "stage*/utilization" && view.plot()->seriesCount() == 4; }, 5000))
      << view.plot()->seriesCount();
  EXPECT_TRUE(view.plot()->seriesName(0).startsWith(QString("#%1 ").arg(fx.alpha))) << view.plot()->seriesName(0).toStdString();
  EXPECT_TRUE(view.plot()->seriesName(0).endsWith(", stage 0")) << view.plot()->seriesName(0).toStdString();
  EXPECT_TRUE(view.plot()->seriesName(1).endsWith(", stage 1")) << view.plot()->seriesName(1).toStdString();
  EXPECT_TRUE(view.plot()->seriesName(3).startsWith(QString("#%1 ").arg(fx.beta))) << view.plot()->seriesName(3).toStdString();
  for (int s = 0; s < 4; ++s) EXPECT_EQ(view.plot()->pointCount(s), 4u) << s;
  // alpha's stage 1: 0.1 until its last report, 0.75.
  ASSERT_EQ(view.plottedSeries().size(), 4u);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[1].y.back(), 0.75);
  EXPECT_TRUE(view.statusLabel()->text().contains(QString("#%1").arg(fx.gamma))) << view.statusLabel()->text().toStdString();
}

// Several metrics in one panel (issue 46 item 4): a second metric chosen from its own list is drawn
// in the same panel, dashed, against a right axis with its own scale (loss near 0.005..2, accuracy
// 0.05..0.9); the legend and the CSV name each series' metric; "(no second metric)" takes it away.
TEST(CompareView, ASecondMetricSharesThePanelOnItsOwnAxis) {
  pm::test::app();
  Fixture fx;
  ShownView shown(fx.db);
  CompareView& view = shown.view;
  ASSERT_TRUE(shown.ui.complete()) << shown.ui.comboBoxes;
  ASSERT_TRUE(tickRuns(view, {fx.alpha, fx.beta}));
  ASSERT_TRUE(pm::test::chooseText(shown.ui.metric, "train/loss"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.plot()->seriesCount() == 2; }, 5000));
  EXPECT_TRUE(view.plot()->rightAxisLabel().isEmpty());

  ASSERT_TRUE(pm::test::pickText(shown.ui.second, "eval/accuracy"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.secondMetric() == "eval/accuracy" && view.plot()->seriesCount() == 4; }, 5000))
      << view.plot()->seriesCount();
  EXPECT_EQ(view.metric(), "train/loss");
  EXPECT_EQ(view.plot()->rightAxisLabel(), "eval/accuracy");
  // Loss series first, then accuracy; each names its metric.
  ASSERT_EQ(view.plottedSeries().size(), 4u);
  EXPECT_EQ(view.plottedSeries()[0].metric, "train/loss");
  EXPECT_EQ(view.plottedSeries()[2].metric, "eval/accuracy");
  EXPECT_TRUE(view.plot()->seriesName(0).startsWith("train/loss: #")) << view.plot()->seriesName(0).toStdString();
  EXPECT_TRUE(view.plot()->seriesName(2).startsWith("eval/accuracy: #")) << view.plot()->seriesName(2).toStdString();
  // alpha's accuracy as stored (k/10 at step 20k), on its own axis: the last value 1.0.
  EXPECT_DOUBLE_EQ(view.plottedSeries()[2].y.back(), 1.0);
  EXPECT_EQ(view.plottedSeries()[2].y.size(), 10u);
  EXPECT_TRUE(view.plot()->title().contains("eval/accuracy (right")) << view.plot()->title().toStdString();

  QTemporaryDir out;
  const QString csv = out.filePath("two.csv");
  ASSERT_TRUE(view.exportCsv(csv));
  QFile file(csv);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  const std::string text = file.readAll().toStdString();
  EXPECT_NE(text.find(",train/loss,"), std::string::npos);
  EXPECT_NE(text.find(",eval/accuracy,20,"), std::string::npos) << text.substr(0, 400);

  ASSERT_TRUE(pm::test::pickText(shown.ui.second, "(no second metric)"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.secondMetric().isEmpty() && view.plot()->seriesCount() == 2; }, 5000));
  EXPECT_TRUE(view.plot()->rightAxisLabel().isEmpty());
}

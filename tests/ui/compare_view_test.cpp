#include <gtest/gtest.h>

#include <QAction>
#include <QFile>
#include <QFileInfo>
#include <QItemSelectionModel>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>
#include <cmath>

#include "core/store/run_store.h"
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
  CompareView view(fx.db);
  view.resize(1200, 800);
  ASSERT_TRUE(view.lastError().empty()) << view.lastError();
  EXPECT_EQ(view.runList()->topLevelItemCount(), 3);
  EXPECT_EQ(view.accuracyTarget(), 0.0);  // auto by default, as pipemare compare
  view.setAccuracyTarget(0.8);
  view.setSelectedRuns({fx.gamma, fx.alpha, fx.beta, 999});
  EXPECT_EQ(view.selectedRuns(), (std::vector<int64_t>{fx.alpha, fx.beta, fx.gamma}));
  ASSERT_TRUE(view.setMetric("train/loss"));
  EXPECT_FALSE(view.setMetric("no/such/metric"));
  EXPECT_TRUE(view.availableMetrics().contains("eval/accuracy"));
  EXPECT_TRUE(view.availableMetrics().contains("train/samples"));
  // Per-stage metrics are metrics of their own: alpha's stage 1 utilization at steps 50..200.
  ASSERT_TRUE(view.availableMetrics().contains("stage1/utilization"));
  ASSERT_TRUE(view.availableMetrics().contains("stage0/mem/peak"));
  ASSERT_TRUE(view.setMetric("stage1/utilization"));
  ASSERT_GE(view.plot()->seriesCount(), 2);
  EXPECT_EQ(view.plot()->pointCount(0), 4u);
  view.setXAxis(pm::XAxis::WallTime);  // at the wall time of the run-level points of the same step
  EXPECT_EQ(view.plot()->pointCount(0), 4u);
  view.setXAxis(pm::XAxis::Step);
  ASSERT_TRUE(view.setMetric("train/loss"));

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

  // Another baseline.
  ASSERT_TRUE(view.setBaseline(fx.beta));
  EXPECT_FALSE(view.setBaseline(999));
  EXPECT_EQ(view.baseline(), fx.beta);
  EXPECT_DOUBLE_EQ(view.summaryRow(fx.alpha)->ratio(SummaryField::FinalLoss), 0.5);
  EXPECT_DOUBLE_EQ(view.summaryRow(fx.alpha)->ratio(SummaryField::TimeToTarget), 0.5);
  EXPECT_NEAR(view.summaryRow(fx.alpha)->ratio(SummaryField::Throughput), (400.0 / 3.0) / 75.0, 1e-12);
  EXPECT_TRUE(view.summaryRow(fx.beta)->isBaseline);

  // auto (0, the default): the baseline's best accuracy - 0.01, as pipemare compare: beta's best
  // is 0.9, so the target is 0.89, which alpha reaches at step 180 (89.5 s).
  view.setAccuracyTarget(0);
  EXPECT_DOUBLE_EQ(view.effectiveAccuracyTarget(), 0.89);
  EXPECT_DOUBLE_EQ(field(*view.summaryRow(fx.alpha), SummaryField::TimeToTarget), 89.5);
  EXPECT_TRUE(view.summaryTable()->horizontalHeaderItem(1 + static_cast<int>(SummaryField::TimeToTarget))->text().contains("0.89"));

  // A different accuracy target: alpha reaches 0.5 at step 100 (49.5 s), beta at step 100 (99 s),
  // gamma (max 0.35) never.
  view.setAccuracyTarget(0.5);
  EXPECT_DOUBLE_EQ(field(*view.summaryRow(fx.alpha), SummaryField::TimeToTarget), 49.5);
  EXPECT_DOUBLE_EQ(field(*view.summaryRow(fx.beta), SummaryField::TimeToTarget), 99.0);
  EXPECT_TRUE(std::isnan(field(*view.summaryRow(fx.gamma), SummaryField::TimeToTarget)));
}

TEST(CompareView, XAxesSmoothingAndUnchecking) {
  pm::test::app();
  Fixture fx;
  CompareView view(fx.db);
  // Nothing ticked yet: the empty plot says so instead of naming a metric.
  EXPECT_TRUE(view.plot()->title().startsWith("No runs ticked")) << view.plot()->title().toStdString();
  view.setSelectedRuns({fx.alpha, fx.beta, fx.gamma});
  ASSERT_TRUE(view.setMetric("train/loss"));
  EXPECT_EQ(view.plot()->title().toStdString(), "train/loss");

  view.setXAxis(XAxis::WallTime);
  ASSERT_EQ(view.plottedSeries().size(), 3u);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].x.front(), 0.0);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].x.back(), 99.5);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[1].x.back(), 199.0);
  view.setXAxis(XAxis::Samples);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].x[9], 320.0);  // train/samples at step 10
  // Runs without train/samples have nothing on the samples axis.
  EXPECT_TRUE(view.plottedSeries()[1].x.empty());
  view.setXAxis(XAxis::Updates);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[2].x.back(), 150.0);
  EXPECT_EQ(view.plot()->pointCount(2), 150u);
  view.setXAxis(XAxis::Step);

  // Smoothing changes the drawn values, never the stored ones, and keeps every point.
  view.setSmoothing(0.9);
  EXPECT_DOUBLE_EQ(view.smoothing(), 0.9);
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
  view.setSmoothing(5.0);
  EXPECT_DOUBLE_EQ(view.smoothing(), 0.99);
  view.setSmoothing(0);
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].y[1], 0.5);

  // Unticking a run in the list drops its series.
  QTreeWidgetItem* gammaItem = nullptr;
  for (int i = 0; i < view.runList()->topLevelItemCount(); ++i)
    if (view.runList()->topLevelItem(i)->text(1) == "gamma") gammaItem = view.runList()->topLevelItem(i);
  ASSERT_NE(gammaItem, nullptr);
  EXPECT_EQ(gammaItem->checkState(0), Qt::Checked);
  gammaItem->setCheckState(0, Qt::Unchecked);
  QTRY_COMPARE(view.plot()->seriesCount(), 2);
  EXPECT_EQ(view.selectedRuns(), (std::vector<int64_t>{fx.alpha, fx.beta}));
  EXPECT_EQ(view.summaryTable()->rowCount(), 2);
}

// A run keeps its colour when others are ticked (colours followed the position in the selection);
// the filter keeps filtering after the list is rebuilt (all runs came back); memory is in MiB and
// stage10 comes after stage2 in the metric list.
TEST(CompareView, StableColoursFilterAndMemoryUnits) {
  pm::test::app();
  Fixture fx;
  CompareView view(fx.db);
  view.setSelectedRuns({fx.beta});
  const QColor betaColour = view.colorOf(fx.beta);
  view.setSelectedRuns({fx.alpha, fx.beta});
  EXPECT_EQ(view.colorOf(fx.beta), betaColour);
  EXPECT_NE(view.colorOf(fx.alpha), betaColour);

  view.setFilterText("gamma");
  auto visible = [&] {
    int n = 0;
    for (int i = 0; i < view.runList()->topLevelItemCount(); ++i) n += view.runList()->topLevelItem(i)->isHidden() ? 0 : 1;
    return n;
  };
  EXPECT_EQ(visible(), 1);
  view.setSelectedRuns({fx.alpha, fx.beta, fx.gamma});  // rebuilds the list
  EXPECT_EQ(visible(), 1);
  view.refresh();
  EXPECT_EQ(visible(), 1);
  view.setFilterText("");
  EXPECT_EQ(visible(), 3);

  ASSERT_TRUE(view.setMetric("stage0/mem/peak"));
  ASSERT_FALSE(view.plottedSeries().empty());
  EXPECT_DOUBLE_EQ(view.plottedSeries()[0].raw[1], 4e6 / (1024.0 * 1024.0));  // alpha at step 100
  EXPECT_TRUE(view.plot()->title().startsWith("stage0/mem/peak")) << view.plot()->title().toStdString();

  // Eleven stages: stage10 sorts after stage2.
  {
    pm::RunStore store(fx.db);
    for (int stage = 0; stage <= 10; ++stage) store.appendStageMetric(fx.gamma, stage, 10, "tau", 1);
    store.flush();
  }
  view.setSelectedRuns({});  // an ended run's data is cached while ticked: read it afresh
  view.setSelectedRuns({fx.gamma});
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
  CompareView view(fx.db);
  view.resize(1000, 700);
  view.setAccuracyTarget(0.8);
  view.setSelectedRuns({fx.alpha, fx.beta, fx.gamma});
  ASSERT_TRUE(view.setMetric("train/loss"));
  view.setSmoothing(0.5);
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

TEST(CompareView, MainWindowComparesRunsSelectedInTheBrowserWithCtrlK) {
  pm::test::app();
  Fixture fx;
  pm::ui::MainWindow w(fx.db);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_NE(w.compareView(), nullptr);
  auto* table = w.runsBrowser()->table();
  ASSERT_EQ(table->model()->rowCount(), 3);
  table->selectionModel()->clearSelection();
  for (int r = 0; r < 3; ++r) {
    const QModelIndex idx = table->model()->index(r, 0);
    if (idx.data().toLongLong() != fx.gamma)
      table->selectionModel()->select(idx, QItemSelectionModel::Select | QItemSelectionModel::Rows);
  }
  auto ids = w.runsBrowser()->selectedRunIds();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int64_t>{fx.alpha, fx.beta}));
  QAction* action = w.findChild<QAction*>("compareSelectedAction");
  ASSERT_NE(action, nullptr);
  EXPECT_EQ(action->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_K));
  action->trigger();
  EXPECT_EQ(w.compareView()->selectedRuns(), (std::vector<int64_t>{fx.alpha, fx.beta}));
  EXPECT_EQ(w.compareView()->plot()->seriesCount(), 2);
  EXPECT_TRUE(w.compareView()->isVisible());
  EXPECT_TRUE(w.selectTab("runs"));
  EXPECT_FALSE(w.compareView()->isVisible());
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
  CompareView view(fx.db);
  view.setSelectedRuns({fx.alpha, going});
  const int first = view.runLoads();
  {
    pm::RunStore store(fx.db);
    store.appendMetric(going, "train/loss", 2, 1.0, 1.0);
    store.flush();
  }
  view.refresh();
  EXPECT_EQ(view.runLoads(), first + 1) << "only the running run is read again";
  EXPECT_EQ(view.storedPoints(going, "train/loss").size(), 2u);
  {
    pm::RunStore store(fx.db);
    store.setStatus(going, "finished");
  }
  view.refresh();
  EXPECT_EQ(view.runLoads(), first + 2) << "read once more when it ends";
  view.refresh();
  EXPECT_EQ(view.runLoads(), first + 2) << "finished runs are not read again";
  ASSERT_TRUE(view.summaryRow(fx.alpha).has_value());
  EXPECT_EQ(view.storedPoints(going, "train/loss").size(), 2u);
}

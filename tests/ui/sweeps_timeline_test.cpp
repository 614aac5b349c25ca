// The Sweeps view (heat map of a sweep's final metric) and the Timeline view (measured trace and
// the planner's predicted timeline), and the pure grid logic behind the Sweeps view.
#include <gtest/gtest.h>

#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QImage>
#include <QTableWidget>
#include <map>
#include <QTest>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/store/run_store.h"
#include "tests/support/test_support.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/main/main_window.h"
#include "ui/plots/gantt_plot.h"
#include "ui/plots/heat_map.h"
#include "ui/runs/runs_browser.h"
#include "ui/sweeps/sweep_grid.h"
#include "ui/sweeps/sweeps_view.h"
#include "ui/timeline/timeline_view.h"

using pm::RunRecord;
using pm::ui::SweepMetric;

namespace {

const QString kPipemare = QString::fromStdString(pm::test::binPath("pipemare"));

RunRecord rec(int64_t id, const std::string& lr, const std::string& stages, pm::RunStatus status, double acc,
              double loss) {
  RunRecord r;
  r.id = id;
  r.name = "run" + std::to_string(id);
  r.status = status;
  r.tags = {"preset", "lr=" + lr, "stages=" + stages};
  r.sweep_id = "sw";
  r.final_accuracy = acc;
  r.final_loss = loss;
  return r;
}

// A 2x2 sweep over lr = {0.1, 10} and stages = {1, 2}: lr=10 at 2 stages diverged; one more run
// outside the sweep.
struct SweepStore {
  QTemporaryDir dir;
  std::string db;
  int64_t ids[2][2] = {{0, 0}, {0, 0}};  // [lr][stages]
  SweepStore() {
    db = dir.filePath("runs.db").toStdString();
    pm::RunStore store(db);
    const char* lrs[] = {"0.1", "10"};
    const char* stages[] = {"1", "2"};
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) {
        const std::string lr = lrs[a], st = stages[b];
        const std::string cfg = R"({"model":{"name":"mlp"},"pipeline":{"schedule":"gpipe","stages":)" + st + R"(,"microbatches":2}})";
        ids[a][b] = store.createRun("sweep lr=" + lr + " stages=" + st, cfg, {"preset", "optimizer.lr=" + lr, "pipeline.stages=" + st},
                                    "", "sweep-1");
        const bool diverged = a == 1 && b == 1;
        store.appendMetric(ids[a][b], "train/loss", 10, 1000.0, diverged ? 1e7 : 0.5 + a + b);
        if (!diverged) store.appendMetric(ids[a][b], "eval/accuracy", 10, 1000.0, 0.5 + 0.1 * (2 * a + b));
      }
    store.flush();
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b)
        store.setStatus(ids[a][b], a == 1 && b == 1 ? "diverged" : "finished", a == 1 && b == 1 ? "loss too large" : "");
    const int64_t lone = store.createRun("not in a sweep", R"({"model":{"name":"mlp"}})");
    store.setStatus(lone, "finished");
  }
};

// Waits until the view's prediction has ended (true) or 20 s have passed (false): its planner is
// done and the summary reports the outcome, the predicted timeline ("Predicted: ...") or why there
// is none ("No prediction: ..."), a planner that could not start included.
bool waitForPrediction(const pm::ui::TimelineView& view) {
  return QTest::qWaitFor(
      [&] {
        const QString summary = view.predictedSummary();
        return !view.predicting() && (summary.startsWith("Predicted: ") || summary.contains("No prediction: "));
      },
      20000);
}

// Two minibatches of GPipe over 2 stages, 2 microbatches, starting at t0 s: per stage F F (1 ms
// each), B B (2 ms each), S (1 ms), 11 ms a minibatch; with `sends`, one send_act per minibatch.
void appendGpipeTrace(pm::RunStore& store, int64_t id, double t0, bool sends) {
  double t = t0;
  for (int mb = 0; mb < 2; ++mb) {
    for (int stage = 0; stage < 2; ++stage) {
      for (int m = 0; m < 2; ++m) store.appendTrace(id, {stage, "F", 2 * mb + m, t + 0.001 * m, t + 0.001 * m + 0.001});
      for (int m = 0; m < 2; ++m) store.appendTrace(id, {stage, "B", 2 * mb + m, t + 0.004 + 0.002 * m, t + 0.006 + 0.002 * m});
      store.appendTrace(id, {stage, "S", mb, t + 0.009, t + 0.010});
    }
    if (sends) store.appendTrace(id, {0, "send_act", 2 * mb, t + 0.002, t + 0.0021});
    t += 0.011;
  }
}

// Clicks the heat map's cell with the mouse, once the map is laid out so that the cell lies under
// its centre. False when it did not come to be within 5 s.
bool clickHeatCell(pm::ui::HeatMap* map, int row, int col) {
  const bool ready = QTest::qWaitFor(
      [&] {
        int r = -1, c = -1;
        return map->canvas()->isVisible() && map->cellUnder(map->cellCenter(row, col), &r, &c) && r == row && c == col;
      },
      5000);
  if (!ready) return false;
  QTest::mouseClick(map->canvas(), Qt::LeftButton, Qt::NoModifier, map->cellCenter(row, col));
  return true;
}

// Chooses the heat map's axes in the Rows and Columns boxes with the keyboard (rows first), as a
// user does; "" is "(none)". False when a key is not offered.
bool chooseAxes(pm::ui::SweepsView& view, const QString& rowKey, const QString& colKey) {
  auto* rows = view.findChild<QComboBox*>("rowKeyBox");
  auto* cols = view.findChild<QComboBox*>("colKeyBox");
  return rows && cols && pm::test::chooseData(rows, rowKey) && pm::test::chooseData(cols, colKey) &&
         view.grid().rowKey == rowKey.toStdString() && view.grid().colKey == colKey.toStdString();
}

// Chooses the run in the Timeline view's Run box with the keyboard; true once the view shows it.
bool chooseRun(pm::ui::TimelineView& view, int64_t id) {
  auto* box = view.findChild<QComboBox*>("runBox");
  return box && pm::test::chooseData(box, QVariant::fromValue<qlonglong>(id)) &&
         QTest::qWaitFor([&] { return view.currentRun() == id; }, 5000);
}

// pipemare's recompute run ahead (R) is drawn and counted as compute, not as communication: the
// summary names it and its time counts in the utilization.
TEST(TimelineView, RecomputeAheadCountsAsCompute) {
  pm::test::app();
  QTemporaryDir dir;
  const std::string db = dir.filePath("runs.db").toStdString();
  int64_t id = 0;
  {
    pm::RunStore store(db);
    id = store.createRun("pipemare", R"({"model":{"name":"mlp"},"pipeline":{"schedule":"pipemare","stages":2,"microbatches":2}})");
    // One stage busy 0-4 ms: F 1 ms, R 1 ms, B 2 ms.
    store.appendTrace(id, {0, "F", 0, 0.000, 0.001});
    store.appendTrace(id, {0, "R", 0, 0.001, 0.002});
    store.appendTrace(id, {0, "B", 0, 0.002, 0.004});
    store.flush();
    store.setStatus(id, "finished");
  }
  pm::ui::TimelineView view(db, "");
  ASSERT_EQ(view.currentRun(), id);  // the one traced run, shown at once
  EXPECT_NE(view.measuredSummary().indexOf("F 1, B 1, S 0, recomputed ahead 1; utilization 1.00"), -1)
      << view.measuredSummary().toStdString();
}

// A split backward (zb-h1) is counted as BI and W, not B, and both parts are busy time; a send
// between them is communication.
TEST(TimelineView, ASplitBackwardIsCountedAsInputAndWeightParts) {
  pm::test::app();
  QTemporaryDir dir;
  const std::string db = dir.filePath("runs.db").toStdString();
  int64_t id = 0;
  {
    pm::RunStore store(db);
    id = store.createRun("zb-h1", R"({"model":{"name":"mlp"},"pipeline":{"schedule":"zb-h1","stages":2,"microbatches":2}})");
    // Stage 0 over 5 ms: F, BI, a send of 1 ms, W, S: 4 ms busy.
    store.appendTrace(id, {0, "F", 0, 0.000, 0.001});
    store.appendTrace(id, {0, "BI", 0, 0.001, 0.002});
    store.appendTrace(id, {0, "send_grad", 0, 0.002, 0.003});
    store.appendTrace(id, {0, "W", 0, 0.003, 0.004});
    store.appendTrace(id, {0, "S", 0, 0.004, 0.005});
    store.flush();
    store.setStatus(id, "finished");
  }
  pm::ui::TimelineView view(db, "");
  ASSERT_EQ(view.currentRun(), id);
  EXPECT_NE(view.measuredSummary().indexOf("F 1, BI 1, W 1, S 1, communication 1; utilization 0.80"), -1)
      << view.measuredSummary().toStdString();
  // The title's legend names the colours of what is drawn: BI and W, no B.
  EXPECT_TRUE(view.measuredPlot()->title().endsWith("(F blue, BI red, W purple, S green, communication grey)"))
      << view.measuredPlot()->title().toStdString();
}

}  // namespace

TEST(SweepGrid, TwoByTwoWithADivergedRun) {
  const double nan = std::nan("");
  // Given out of order: the axes still come out numerically sorted; "10" after "2".
  std::vector<RunRecord> runs{rec(4, "10", "2", pm::RunStatus::Diverged, nan, 1e7),
                              rec(1, "0.1", "1", pm::RunStatus::Finished, 0.5, 0.9),
                              rec(3, "10", "1", pm::RunStatus::Finished, 0.7, 0.4),
                              rec(2, "0.1", "2", pm::RunStatus::Finished, 0.6, 0.8)};
  const auto keys = pm::sweepKeys(runs);
  ASSERT_EQ(keys, (std::vector<std::string>{"lr", "stages"}));
  const auto g = pm::ui::buildSweepGrid(runs, "lr", "stages", SweepMetric::FinalAccuracy);
  ASSERT_EQ(g.rows(), 2);
  ASSERT_EQ(g.cols(), 2);
  EXPECT_EQ(g.rowValues, (std::vector<std::string>{"0.1", "10"}));
  EXPECT_EQ(g.colValues, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(g.runAt(0, 0), 1);
  EXPECT_EQ(g.runAt(0, 1), 2);
  EXPECT_EQ(g.runAt(1, 0), 3);
  EXPECT_EQ(g.runAt(1, 1), 4);
  EXPECT_EQ(g.runAt(2, 0), 0);
  EXPECT_EQ(g.runAt(-1, 0), 0);
  EXPECT_DOUBLE_EQ(g.cell(0, 1)->value, 0.6);
  EXPECT_EQ(g.cell(0, 1)->text, "0.600");
  EXPECT_EQ(g.cell(1, 1)->mark, "D");
  EXPECT_EQ(g.cell(1, 1)->text, "D");
  EXPECT_TRUE(g.cell(0, 0)->mark.empty());
  EXPECT_EQ(g.filledCells(), 4);
  ASSERT_TRUE(g.hasValues);
  EXPECT_DOUBLE_EQ(g.minValue, 0.5);
  EXPECT_DOUBLE_EQ(g.maxValue, 0.7);

  // The loss: the diverged run's huge loss stays out of the colour range.
  const auto l = pm::ui::buildSweepGrid(runs, "lr", "stages", SweepMetric::FinalLoss);
  EXPECT_DOUBLE_EQ(l.maxValue, 0.9);
  EXPECT_EQ(l.cell(1, 0)->text, "0.4");

  // Transposed axes, and a single row.
  const auto t = pm::ui::buildSweepGrid(runs, "stages", "lr", SweepMetric::FinalAccuracy);
  EXPECT_EQ(t.runAt(0, 1), 3);
  const auto one = pm::ui::buildSweepGrid(runs, "", "lr", SweepMetric::FinalAccuracy, {{"stages", "2"}});
  ASSERT_EQ(one.rows(), 1);
  ASSERT_EQ(one.cols(), 2);
  EXPECT_EQ(one.runAt(0, 0), 2);
  EXPECT_EQ(one.runAt(0, 1), 4);
  // Without a value for the other key, two runs fall on each point: the newest is shown.
  const auto both = pm::ui::buildSweepGrid(runs, "", "lr", SweepMetric::FinalAccuracy);
  EXPECT_EQ(both.runAt(0, 0), 2);
  EXPECT_EQ(both.cell(0, 0)->runs, 2);
}

TEST(SweepGrid, AxisOrderMarksAndSweepList) {
  std::vector<RunRecord> runs{rec(1, "b", "1", pm::RunStatus::Failed, 0, 0), rec(2, "a", "1", pm::RunStatus::Stopped, 0, 0),
                              rec(3, "c", "1", pm::RunStatus::Running, 0, 0), rec(4, "c", "1", pm::RunStatus::Interrupted, 0, 0)};
  EXPECT_EQ(pm::ui::axisValues(runs, "lr"), (std::vector<std::string>{"b", "a", "c"}));  // first seen
  EXPECT_EQ(pm::ui::axisValues(runs, "stages"), (std::vector<std::string>{"1"}));
  EXPECT_EQ(pm::ui::statusMark(pm::RunStatus::Failed), "F");
  EXPECT_EQ(pm::ui::statusMark(pm::RunStatus::Stopped), "S");
  EXPECT_EQ(pm::ui::statusMark(pm::RunStatus::Interrupted), "S");
  EXPECT_EQ(pm::ui::statusMark(pm::RunStatus::Running), "\xE2\x80\xA6");
  EXPECT_EQ(pm::ui::statusMark(pm::RunStatus::Finished), "");
  EXPECT_TRUE(pm::ui::isNumber("1e-3"));
  EXPECT_FALSE(pm::ui::isNumber("1e-3x"));
  EXPECT_FALSE(pm::ui::isNumber(""));
  EXPECT_EQ(pm::ui::formatMetric(std::nan(""), SweepMetric::FinalLoss), "-");

  runs[0].sweep_id = "old";
  runs[1].sweep_id = "";
  const auto sweeps = pm::ui::listSweeps(runs);
  ASSERT_EQ(sweeps.size(), 2u);
  EXPECT_EQ(sweeps[0].id, "sw");  // newest first
  EXPECT_EQ(sweeps[0].runs, 2);
  EXPECT_EQ(sweeps[1].id, "old");
}

// Stand-ins for the points a stopped sweep never started: cells marked as not started, with no
// run to open, and no part in the colour range or the run count.
TEST(SweepGrid, PointsNotStartedAreMarked) {
  std::vector<RunRecord> runs{rec(1, "0.1", "1", pm::RunStatus::Finished, 0.5, 0.9),
                              rec(2, "0.1", "2", pm::RunStatus::Stopped, 0.6, 0.8)};
  const std::vector<pm::GridAxis> axes{{"lr", {"0.1", "10"}}, {"stages", {"1", "2"}}};
  for (auto& r : pm::notStartedPoints(runs, axes)) runs.push_back(r);
  ASSERT_EQ(runs.size(), 4u);
  const auto g = pm::ui::buildSweepGrid(runs, "lr", "stages", SweepMetric::FinalAccuracy);
  ASSERT_EQ(g.rows(), 2);
  EXPECT_EQ(g.filledCells(), 2);
  EXPECT_EQ(g.notStartedCells(), 2);
  EXPECT_EQ(g.runAt(1, 0), 0);
  EXPECT_EQ(g.cell(1, 0)->mark, pm::ui::kNotStartedMark);
  EXPECT_EQ(g.cell(1, 1)->text, pm::ui::kNotStartedMark);
  EXPECT_EQ(g.cell(0, 1)->mark, "S");
  EXPECT_EQ(g.cell(0, 0)->runs, 1);
  EXPECT_EQ(g.cell(1, 0)->runs, 0);
  ASSERT_TRUE(g.hasValues);
  EXPECT_DOUBLE_EQ(g.minValue, 0.5);
  EXPECT_DOUBLE_EQ(g.maxValue, 0.5);
}

// A sweep stopped after its first point: the view shows the recorded grid, the rest of it as
// not started (not a 1x1 map of the one run's cell).
TEST(SweepsView, ShowsTheRecordedGridsPointsNotStarted) {
  pm::test::app();
  QTemporaryDir dir;
  const std::string db = dir.filePath("runs.db").toStdString();
  int64_t first = 0;
  {
    pm::RunStore store(db);
    pm::SweepDefinition def;
    def.file = "x.json";
    def.experiment = {{"name", "x"}};
    def.grid = {{"optimizer.lr", {"0.1", "0.2", "0.3"}}};
    store.recordSweep("sweep-2", pm::sweepDefinitionToJson(def));
    first = store.createRun("x [optimizer.lr=0.1]", "{}", {"optimizer.lr=0.1"}, "", "sweep-2");
    store.appendMetric(first, "eval/accuracy", 5, 1.0, 0.7);
    store.flush();
    store.setStatus(first, "stopped", "stopped by request after step 5");
  }
  pm::ui::SweepsView view(db);
  view.resize(900, 600);
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  ASSERT_EQ(view.sweepCount(), 1) << view.lastError();
  pm::ui::HeatMap* map = view.heatMap();
  ASSERT_EQ(map->rows(), 1);
  ASSERT_EQ(map->cols(), 3);
  EXPECT_EQ(map->cellCount(), 3);
  ASSERT_NE(map->cellAt(0, 2), nullptr);
  EXPECT_EQ(map->cellAt(0, 2)->text.toStdString(), "not started");
  EXPECT_NE(map->cellAt(0, 2)->toolTip.indexOf("pipemare sweep --resume sweep-2"), -1) << map->cellAt(0, 2)->toolTip.toStdString();
  EXPECT_EQ(view.grid().runAt(0, 0), first);
  EXPECT_EQ(view.grid().runAt(0, 1), 0);
  EXPECT_NE(view.statusText().indexOf("1 run in the sweep"), -1) << view.statusText().toStdString();
  EXPECT_NE(view.statusText().indexOf("2 not started"), -1) << view.statusText().toStdString();
  QSignalSpy open(&view, &pm::ui::SweepsView::openRun);
  ASSERT_TRUE(clickHeatCell(map, 0, 2));
  EXPECT_EQ(open.count(), 0);  // no run to open there
  ASSERT_TRUE(clickHeatCell(map, 0, 0));  // the run that was stopped opens
  ASSERT_EQ(open.count(), 1);
  EXPECT_EQ(open.takeFirst().at(0).value<int64_t>(), first);
}

TEST(SweepsView, HeatMapOfTheStoredSweepAndClickOpensTheRun) {
  pm::test::app();
  SweepStore fx;
  pm::ui::SweepsView view(fx.db);
  view.resize(900, 600);
  view.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&view));
  ASSERT_EQ(view.sweepCount(), 1) << view.lastError();
  EXPECT_EQ(view.currentSweep().toStdString(), "sweep-1");
  EXPECT_EQ(view.sweptKeys(), (std::vector<std::string>{"optimizer.lr", "pipeline.stages"}));
  EXPECT_EQ(view.metric(), SweepMetric::FinalAccuracy);
  pm::ui::HeatMap* map = view.heatMap();
  ASSERT_EQ(map->rows(), 2);
  ASSERT_EQ(map->cols(), 2);
  EXPECT_EQ(map->cellCount(), 4);
  ASSERT_NE(map->cellAt(0, 1), nullptr);
  EXPECT_EQ(map->cellAt(0, 1)->text.toStdString(), "0.600");
  EXPECT_EQ(map->cellAt(1, 1)->text.toStdString(), "D");
  // Accuracy's colour scale starts at chance (Fashion-MNIST, the runs' data: 0.1), not at the
  // sweep's worst 0.5, and says so.
  EXPECT_TRUE(map->scaleShown());
  EXPECT_DOUBLE_EQ(map->scaleLow(), 0.1);
  EXPECT_EQ(map->scaleTitle().toStdString(), "final accuracy (from chance, 0.1)");
  // The diverged cell has its own colour, unlike any value cell.
  for (const auto& [r, c] : std::vector<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 0}})
    EXPECT_NE(map->fillColor(1, 1), map->fillColor(r, c));

  // Clicks on cells open their runs.
  QSignalSpy open(&view, &pm::ui::SweepsView::openRun);
  ASSERT_TRUE(clickHeatCell(map, 1, 0));
  ASSERT_EQ(open.count(), 1);
  EXPECT_EQ(open.takeFirst().at(0).value<int64_t>(), fx.ids[1][0]);
  ASSERT_TRUE(clickHeatCell(map, 1, 1));  // the diverged cell
  ASSERT_EQ(open.count(), 1);
  EXPECT_EQ(open.takeFirst().at(0).value<int64_t>(), fx.ids[1][1]);

  // Loss, chosen in the Metric box, and the axes swapped in the Rows and Columns boxes.
  auto* metricBox = view.findChild<QComboBox*>("metricBox");
  ASSERT_NE(metricBox, nullptr);
  ASSERT_TRUE(pm::test::chooseData(metricBox, static_cast<int>(SweepMetric::FinalLoss)));
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.metric() == SweepMetric::FinalLoss; }, 5000));
  EXPECT_EQ(map->cellAt(0, 1)->text.toStdString(), "1.5");
  ASSERT_TRUE(chooseAxes(view, "pipeline.stages", "optimizer.lr"));
  ASSERT_TRUE(clickHeatCell(map, 0, 1));
  ASSERT_EQ(open.count(), 1);
  EXPECT_EQ(open.takeFirst().at(0).value<int64_t>(), fx.ids[1][0]);
  // One axis: a single row, the other key gets a value chooser (its first value).
  ASSERT_TRUE(chooseAxes(view, "", "optimizer.lr"));
  EXPECT_EQ(map->rows(), 1);
  EXPECT_EQ(map->cellCount(), 2);
  EXPECT_EQ(view.grid().runAt(0, 1), fx.ids[1][0]);
  auto* stagesBox = view.findChild<QComboBox*>("pipeline.stages");
  ASSERT_NE(stagesBox, nullptr);
  ASSERT_TRUE(pm::test::chooseData(stagesBox, QStringLiteral("2")));
  EXPECT_TRUE(QTest::qWaitFor([&] { return view.grid().runAt(0, 1) == fx.ids[1][1]; }, 5000)) << view.grid().runAt(0, 1);
  // One value shown beside a diverged run: no colour scale (a single value padded into a range
  // would read as accuracy up to 1.04); nor with only a diverged run; it comes back when values differ.
  EXPECT_FALSE(map->scaleShown());
  ASSERT_TRUE(chooseAxes(view, "", ""));
  auto* lrBox = view.findChild<QComboBox*>("optimizer.lr");
  stagesBox = view.findChild<QComboBox*>("pipeline.stages");
  ASSERT_NE(lrBox, nullptr);
  ASSERT_NE(stagesBox, nullptr);
  ASSERT_TRUE(pm::test::chooseData(lrBox, QStringLiteral("10")));
  ASSERT_TRUE(pm::test::chooseData(stagesBox, QStringLiteral("2")));
  ASSERT_TRUE(QTest::qWaitFor([&] { return map->cellCount() == 1; }, 5000)) << map->cellCount();
  EXPECT_EQ(map->cellAt(0, 0)->text.toStdString(), "D");
  EXPECT_EQ(view.grid().runAt(0, 0), fx.ids[1][1]);
  EXPECT_FALSE(map->scaleShown());
  ASSERT_TRUE(pm::test::chooseData(stagesBox, QStringLiteral("1")));
  EXPECT_TRUE(QTest::qWaitFor([&] { return map->cellAt(0, 0) && map->cellAt(0, 0)->text == "1.5"; }, 5000));
  EXPECT_FALSE(map->scaleShown());
  ASSERT_TRUE(chooseAxes(view, "optimizer.lr", "pipeline.stages"));
  EXPECT_TRUE(map->scaleShown());

  // A new run of the sweep shows after a click on Refresh.
  {
    pm::RunStore store(fx.db);
    const int64_t extra = store.createRun("late", "{}", {"optimizer.lr=1", "pipeline.stages=1"}, "", "sweep-1");
    store.setStatus(extra, "failed", "boom");
  }
  auto* refresh = view.findChild<QPushButton*>("refreshButton");
  ASSERT_NE(refresh, nullptr);
  QTest::mouseClick(refresh, Qt::LeftButton);
  EXPECT_TRUE(QTest::qWaitFor([&] { return view.grid().rows() == 3; }, 5000)) << view.grid().rows();
  EXPECT_EQ(view.grid().rowValues[1], "1");
  EXPECT_EQ(map->cellAt(1, 0)->text.toStdString(), "F");
  EXPECT_EQ(view.refreshIfChanged(), false);  // nothing new
  // A run of the sweep started elsewhere (a terminal) appears without Refresh, and a running run
  // is counted as running, not as "not finished normally".
  {
    pm::RunStore store(fx.db);
    store.createRun("running", "{}", {"optimizer.lr=1", "pipeline.stages=2"}, "", "sweep-1");
  }
  EXPECT_TRUE(view.refreshIfChanged());
  EXPECT_NE(view.statusText().indexOf(", 1 running"), -1) << view.statusText().toStdString();
  EXPECT_NE(view.statusText().indexOf(", 2 not finished normally"), -1) << view.statusText().toStdString();
}

TEST(SweepsView, MainWindowOpensTheClickedRunInTheRunsTab) {
  pm::test::app();
  SweepStore fx;
  pm::ui::MainWindow w(fx.db, {}, kPipemare);
  w.setCloseAnswer("leave");
  w.resize(1200, 800);
  ASSERT_TRUE(pm::test::showWindow(&w));
  // The command line's --tab, by name in any case.
  ASSERT_TRUE(w.selectTab("sweeps"));
  ASSERT_TRUE(w.selectTab("Timeline"));
  auto* tabs = qobject_cast<QTabWidget*>(w.centralWidget());
  ASSERT_NE(tabs, nullptr);
  // The user's way: a click on the tab, then on the cell.
  ASSERT_TRUE(pm::test::clickTab(tabs, "Sweeps"));
  EXPECT_EQ(tabs->currentWidget(), w.sweepsView());
  ASSERT_TRUE(clickHeatCell(w.sweepsView()->heatMap(), 0, 1));
  ASSERT_TRUE(QTest::qWaitFor([&] { return tabs->currentWidget() == w.runsBrowser(); }, 5000)) << "the Runs tab did not come up";
  EXPECT_EQ(w.runsBrowser()->shownRun(), fx.ids[0][1]);
  EXPECT_EQ(w.runsBrowser()->selectedRunIds(), (std::vector<int64_t>{fx.ids[0][1]}));
}

// The experiment the Timeline view handed to `plan --experiment` (the file its arguments name);
// null when there is none.
static nlohmann::json handedExperiment(const QStringList& args) {
  const auto i = args.indexOf("--experiment");
  if (i < 0 || i + 1 >= args.size()) return nlohmann::json();
  QFile f(args.at(i + 1));
  if (!f.open(QIODevice::ReadOnly)) return nlohmann::json();
  return nlohmann::json::parse(f.readAll().toStdString(), nullptr, false);
}

// With no runs in the store the Timeline tab says how to make one, on the chart and under it; once
// the store has runs but none with a trace, it says that instead.
TEST(TimelineView, EmptyStoreSaysHowToMakeARun) {
  pm::test::app();
  QTemporaryDir dir;
  const std::string db = dir.filePath("runs.db").toStdString();  // no file yet: nothing recorded
  pm::ui::TimelineView view(db, "");
  view.resize(1000, 700);
  ASSERT_TRUE(pm::test::showWindow(&view));
  EXPECT_EQ(view.runCount(), 0);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.measuredPlot()->showsEmptyText(); }, 5000)) << "no empty-state sentence";
  EXPECT_TRUE(view.measuredPlot()->emptyText().startsWith("No runs yet: design an experiment in the Design tab and press Run"))
      << view.measuredPlot()->emptyText().toStdString();
  EXPECT_NE(view.measuredSummary().indexOf("No runs yet: design an experiment"), -1) << view.measuredSummary().toStdString();
  EXPECT_TRUE(view.predictedPlot()->showsEmptyText());

  {
    pm::RunStore store(db);
    store.setStatus(store.createRun("untraced", "{}"), "finished");
  }
  auto* refresh = view.findChild<QPushButton*>("refreshButton");
  ASSERT_NE(refresh, nullptr);
  QTest::mouseClick(refresh, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor(
      [&] { return view.measuredPlot()->emptyText().startsWith("No run in this store has a schedule trace yet"); }, 5000))
      << view.measuredPlot()->emptyText().toStdString();
  EXPECT_TRUE(view.measuredPlot()->showsEmptyText());
  EXPECT_NE(view.measuredSummary().indexOf("No run in this store has a schedule trace yet"), -1) << view.measuredSummary().toStdString();
  EXPECT_EQ(view.runCount(), 0);
}

TEST(TimelineView, MeasuredTraceAndPredictedTimeline) {
  pm::test::app();
  QTemporaryDir dir;
  const std::string db = dir.filePath("runs.db").toStdString();
  int64_t traced = 0, untraced = 0;
  {
    pm::RunStore store(db);
    untraced = store.createRun("no trace", R"({"model":{"name":"mlp"},"pipeline":{"schedule":"gpipe","stages":2,"microbatches":2}})");
    traced = store.createRun("traced", R"({"model":{"name":"mlp"},"data":{"batch_size":8},"pipeline":{"schedule":"gpipe","stages":2,"microbatches":2},"optimizer":{"name":"sgd","lr":0.1}})");
    // Two minibatches of GPipe over 2 stages, 2 microbatches: F F B B S per stage, plus sends.
    appendGpipeTrace(store, traced, 0.010, /*sends=*/true);
    store.flush();
    store.setStatus(traced, "finished");
    store.setStatus(untraced, "finished");
  }
  pm::ui::TimelineView view(db, kPipemare);
  view.resize(1000, 700);
  ASSERT_TRUE(pm::test::showWindow(&view));
  ASSERT_EQ(view.runCount(), 1) << view.lastError();  // only the run with a trace
  EXPECT_EQ(view.currentRun(), traced);
  // A run without a trace shows nothing and says why, rather than leave the traced run on screen.
  EXPECT_FALSE(view.setRun(untraced));
  EXPECT_EQ(view.currentRun(), 0);
  EXPECT_EQ(view.measuredPlot()->boxCount(), 0u);
  EXPECT_NE(view.measuredSummary().indexOf(QString("Run %1 recorded no schedule trace").arg(untraced)), -1)
      << view.measuredSummary().toStdString();
  // Chosen again in the Run box.
  ASSERT_TRUE(chooseRun(view, traced));
  EXPECT_EQ(view.measuredPlot()->boxCount(), 22u);
  EXPECT_NEAR(view.measuredPlot()->makespanMs(), 21.0, 1e-6);
  EXPECT_NE(view.measuredSummary().indexOf("22"), -1) << view.measuredSummary().toStdString();
  EXPECT_NE(view.measuredSummary().indexOf("F 8, B 8, S 4, communication 2; utilization 0.67"), -1)
      << view.measuredSummary().toStdString();
  EXPECT_EQ(view.predictedMinibatches(), 2);  // two steps on stage 0
  // No recorded partition: the planner gets the run's stored experiment and maps it itself.
  const QStringList args = view.planArguments();
  ASSERT_TRUE(args.contains("--experiment")) << args.join(' ').toStdString();
  EXPECT_FALSE(args.contains("--model")) << args.join(' ').toStdString();
  const nlohmann::json handed = handedExperiment(args);
  ASSERT_TRUE(handed.is_object()) << args.join(' ').toStdString();
  EXPECT_EQ(handed["model"]["name"], "mlp");
  EXPECT_EQ(handed["pipeline"]["stages"], 2);
  EXPECT_EQ(handed["pipeline"]["microbatches"], 2);
  EXPECT_EQ(handed["pipeline"]["schedule"], "gpipe");
  EXPECT_EQ(handed["data"]["batch_size"], 8);
  EXPECT_EQ(args.at(args.indexOf("--trace-minibatches") + 1).toStdString(), "2");

  // Zoom in with the mouse wheel: part of the trace leaves the view; then Fit shows all of it again.
  QWidget* canvas = pm::test::plotCanvas(view.measuredPlot());
  ASSERT_NE(canvas, nullptr);
  EXPECT_EQ(view.measuredPlot()->boxesInView(), 22u);
  pm::test::wheel(canvas, 4);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.measuredPlot()->boxesInView() < 22u; }, 5000))
      << view.measuredPlot()->viewStartMs() << ".." << view.measuredPlot()->viewEndMs() << " ms shown after the wheel";
  EXPECT_GT(view.measuredPlot()->viewStartMs(), 0.0);
  EXPECT_LT(view.measuredPlot()->viewEndMs(), view.measuredPlot()->makespanMs());
  auto* fit = view.findChild<QPushButton*>("measuredFit");
  ASSERT_NE(fit, nullptr);
  QTest::mouseClick(fit, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return view.measuredPlot()->boxesInView() == 22u; }, 5000)) << view.measuredPlot()->boxesInView();
  EXPECT_NEAR(view.measuredPlot()->viewStartMs(), 0.0, 1e-9);

  // The planner's prediction, from the engine binary.
  if (!QFile::exists(kPipemare)) GTEST_SKIP() << "no pipemare binary at " << kPipemare.toStdString();
  ASSERT_TRUE(waitForPrediction(view)) << view.predictedSummary().toStdString();
  EXPECT_GT(view.predictedPlot()->boxCount(), 0u) << view.predictedSummary().toStdString();
  EXPECT_TRUE(view.predictedSummary().startsWith("Predicted: makespan")) << view.predictedSummary().toStdString();
}

// A single-process run's stages took turns on one thread: the measured summary says why its
// utilization is at most 1/P; a run with a process per stage gets no such note.
TEST(TimelineView, SingleProcessRunsAreMarkedAsSuch) {
  pm::test::app();
  QTemporaryDir dir;
  const std::string db = dir.filePath("runs.db").toStdString();
  int64_t single = 0, real = 0;
  {
    pm::RunStore store(db);
    const std::string pipe = R"("model":{"name":"mlp"},"pipeline":{"schedule":"gpipe","stages":2,"microbatches":2})";
    single = store.createRun("single", "{" + pipe + R"(,"execution":{"mode":"single"}})");
    real = store.createRun("real", "{" + pipe + R"(,"execution":{"mode":"real"}})");
    for (int64_t r : {single, real}) {
      appendGpipeTrace(store, r, 0.010, /*sends=*/true);
      store.flush();
      store.setStatus(r, "finished");
    }
  }
  pm::ui::TimelineView view(db, "");
  ASSERT_TRUE(pm::test::showWindow(&view));
  ASSERT_TRUE(chooseRun(view, single));
  EXPECT_NE(view.measuredSummary().indexOf("Single-process run"), -1) << view.measuredSummary().toStdString();
  ASSERT_TRUE(chooseRun(view, real));
  EXPECT_EQ(view.measuredSummary().indexOf("Single-process run"), -1) << view.measuredSummary().toStdString();
}

TEST(TimelineView, PlannerErrorsReadAsText) {
  pm::test::app();
  QTemporaryDir dir;
  const std::string db = dir.filePath("runs.db").toStdString();
  {
    pm::RunStore store(db);
    const int64_t id = store.createRun("odd model", R"({"model":{"name":"nosuch"},"pipeline":{"schedule":"gpipe","stages":2,"microbatches":2}})");
    store.appendTrace(id, {0, "F", 0, 0.0, 0.001});
    store.appendTrace(id, {1, "F", 0, 0.001, 0.002});
    store.flush();
  }
  // A missing planner binary.
  {
    pm::ui::TimelineView view(db, dir.filePath("no-such-pipemare"));
    ASSERT_TRUE(waitForPrediction(view));
    EXPECT_EQ(view.measuredPlot()->boxCount(), 2u);
    EXPECT_NE(view.predictedSummary().indexOf("cannot start the planner"), -1) << view.predictedSummary().toStdString();
  }
  if (!QFile::exists(kPipemare)) GTEST_SKIP() << "no pipemare binary at " << kPipemare.toStdString();
  pm::ui::TimelineView view(db, kPipemare);
  ASSERT_TRUE(waitForPrediction(view));
  const std::string text = view.predictedSummary().toStdString();
  // The experiment's problem, named as the run's experiment (not the temporary file it went in).
  EXPECT_NE(text.find("model.name"), std::string::npos) << text;
  EXPECT_NE(text.find("nosuch"), std::string::npos) << text;
  EXPECT_NE(text.find("the run's experiment"), std::string::npos) << text;
  EXPECT_EQ(text.find("run-experiment.json"), std::string::npos) << text;
  EXPECT_EQ(text.find("pipemare plan:"), std::string::npos) << text;
  EXPECT_EQ(text.find('{'), std::string::npos) << text;
  EXPECT_EQ(view.predictedPlot()->boxCount(), 0u);
}

// A run with a recorded partition is predicted from its own partition, timing and measured costs
// (`plan --against`); when that fails (here: the recorded partition does not match the
// configuration) the view falls back to the planner's model of the configuration.
TEST(TimelineView, RecordedRunIsPredictedFromItsOwnMeasuredCosts) {
  pm::test::app();
  if (!QFile::exists(kPipemare)) GTEST_SKIP() << "no pipemare binary at " << kPipemare.toStdString();
  QTemporaryDir dir;
  const std::string db = dir.filePath("runs.db").toStdString();
  int64_t good = 0, mismatched = 0;
  {
    pm::RunStore store(db);
    const char* cfg = R"({"model":{"name":"mlp"},"data":{"batch_size":8},"pipeline":{"schedule":"gpipe","stages":2,"microbatches":2},"optimizer":{"name":"sgd","lr":0.1}})";
    good = store.createRun("partitioned", cfg);
    mismatched = store.createRun("three stages recorded", cfg);
    for (int64_t id : {good, mismatched}) {
      // GPipe, 2 stages, 2 microbatches, 2 minibatches: F 1 ms, B 2 ms, S 1 ms per stage.
      appendGpipeTrace(store, id, 0.0, /*sends=*/false);
      store.setPartition(id, id == good ? std::vector<std::pair<int, int>>{{0, 1}, {1, 3}}
                                        : std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 3}});
      // The stages' reported memory: weights 1 and 2 MiB (largest over the windows), activations 3 MiB on stage 1.
      for (int64_t step : {1, 2}) {
        store.appendStageMetric(id, 0, step, "mem/weights", step * 0.5 * 1048576.0);
        store.appendStageMetric(id, 1, step, "mem/weights", step * 1048576.0);
        store.appendStageMetric(id, 1, step, "mem/activations", 3 * 1048576.0);
      }
      store.setStatus(id, "finished");
    }
    store.flush();
  }
  pm::ui::TimelineView view(db, kPipemare);
  ASSERT_TRUE(pm::test::showWindow(&view));
  ASSERT_TRUE(chooseRun(view, good));
  EXPECT_TRUE(view.planArguments().contains("--against")) << view.planArguments().join(' ').toStdString();
  ASSERT_TRUE(waitForPrediction(view)) << view.predictedSummary().toStdString();
  EXPECT_GT(view.predictedPlot()->boxCount(), 0u) << view.predictedSummary().toStdString();
  EXPECT_TRUE(view.predictedSummary().startsWith("Predicted: makespan")) << view.predictedSummary().toStdString();
  // Two minibatches of F 1 ms, B 2 ms, S 1 ms on each stage, N = 2: at least 2 x (2 x 3 ms + 1 ms) on a stage.
  EXPECT_GE(view.predictedPlot()->makespanMs(), 14.0);
  // Memory per stage and category, the planner's beside the measured peak: a row per stage's weights
  // (the planner counts the mlp's parameters of each stage), the measured figure the largest window's.
  QTableWidget* memory = view.memoryTable();
  ASSERT_TRUE(memory);
  std::map<std::pair<QString, QString>, std::pair<QString, QString>> rows;
  for (int r = 0; r < memory->rowCount(); ++r)
    rows[{memory->item(r, 0)->text(), memory->item(r, 1)->text()}] = {memory->item(r, 2)->text(), memory->item(r, 3)->text()};
  const auto measuredOf = [&](const char* stage, const char* cat) { return rows[std::make_pair(QString(stage), QString(cat))].second; };
  const auto predictedOf = [&](const char* stage, const char* cat) { return rows[std::make_pair(QString(stage), QString(cat))].first; };
  ASSERT_EQ(measuredOf("0", "weights"), "1.00") << view.memoryNote().toStdString();
  EXPECT_EQ(measuredOf("1", "weights"), "2.00");
  EXPECT_EQ(measuredOf("1", "activations"), "3.00");
  EXPECT_GT(predictedOf("1", "weights").toDouble(), 0.0) << "the planner's prediction beside it";
  EXPECT_TRUE(view.memoryNote().contains(QString("run %1's partition").arg(good))) << view.memoryNote().toStdString();

  ASSERT_TRUE(chooseRun(view, mismatched));
  ASSERT_TRUE(waitForPrediction(view)) << view.predictedSummary().toStdString();
  EXPECT_TRUE(view.planArguments().contains("--experiment")) << view.planArguments().join(' ').toStdString();
  EXPECT_FALSE(view.planArguments().contains("--against"));
  EXPECT_GT(view.predictedPlot()->boxCount(), 0u) << view.predictedSummary().toStdString();
  // No comparison of memory without the run's own partition: the table is empty and says why.
  EXPECT_EQ(view.memoryTable()->rowCount(), 0);
  EXPECT_TRUE(view.memoryNote().contains("plan --against")) << view.memoryNote().toStdString();
}

// The chooser's minibatch count comes from the traced microbatches, not from counting optimizer
// steps (pipedream steps per microbatch: 2 minibatches of N = 2 would read as 4); the model-based
// fallback plans the run's own timing and partition (not always 1F1B timing and the parameter
// partition); an answer for another run than the one shown is dropped.
TEST(TimelineView, PipedreamTraceTimingAndStaleAnswers) {
  pm::test::app();
  QTemporaryDir dir;
  const std::string db = dir.filePath("runs.db").toStdString();
  int64_t dream = 0, untraced = 0;
  {
    pm::RunStore store(db);
    dream = store.createRun("pipedream", R"({"model":{"name":"mlp"},"data":{"batch_size":8},)"
                                         R"("pipeline":{"schedule":"pipedream","stages":2,"microbatches":2,"timing":"paper",)"
                                         R"("update_interval":1,"partition":{"method":"explicit","boundaries":[2]}},)"
                                         R"("optimizer":{"name":"sgd","lr":0.1}})");
    untraced = store.createRun("no trace", R"({"model":{"name":"mlp"},"pipeline":{"schedule":"gpipe","stages":2,"microbatches":2}})");
    for (int mb = 0; mb < 4; ++mb)  // 2 minibatches of 2 microbatches, a step after each microbatch
      for (int stage = 0; stage < 2; ++stage) {
        const double t = 0.004 * mb;
        store.appendTrace(dream, {stage, "F", mb, t, t + 0.001});
        store.appendTrace(dream, {stage, "B", mb, t + 0.001, t + 0.003});
        store.appendTrace(dream, {stage, "S", mb, t + 0.003, t + 0.0035});
      }
    store.flush();
    store.setStatus(dream, "finished");
    store.setStatus(untraced, "finished");
  }
  pm::ui::TimelineView view(db, kPipemare);
  ASSERT_TRUE(pm::test::showWindow(&view));
  ASSERT_TRUE(chooseRun(view, dream));
  EXPECT_EQ(view.predictedMinibatches(), 2);
  // No recorded partition: the model-based plan of the run's own experiment, timing and partition
  // included (the planner takes them from it, with no --timing of the view's).
  const QStringList args = view.planArguments();
  EXPECT_FALSE(args.contains("--timing")) << args.join(' ').toStdString();
  const nlohmann::json handed = handedExperiment(args);
  ASSERT_TRUE(handed.is_object()) << args.join(' ').toStdString();
  EXPECT_EQ(handed["pipeline"]["timing"], "paper");
  EXPECT_EQ(handed["pipeline"]["partition"]["boundaries"], nlohmann::json::array({2}));
  EXPECT_EQ(handed["pipeline"]["update_interval"], 1);
  // Switch to a run without a trace while the planner works: its answer, once the planner has
  // ended (and the view has had its finished() report), must not appear.
  EXPECT_FALSE(view.setRun(untraced));
  ASSERT_TRUE(QTest::qWaitFor([&] { return !view.predicting(); }, 20000)) << "the planner did not end within 20 s";
  EXPECT_EQ(view.predictedPlot()->boxCount(), 0u) << view.predictedSummary().toStdString();
  EXPECT_EQ(view.predictedSummary().indexOf("Predicted: makespan"), -1) << view.predictedSummary().toStdString();
}

namespace {

// A store with one finished run whose trace is appendGpipeTrace's (21 ms, 22 boxes); its id in *id.
std::string tracedStore(QTemporaryDir& dir, int64_t* id) {
  const std::string db = dir.filePath("runs.db").toStdString();
  pm::RunStore store(db);
  *id = store.createRun("traced", R"({"model":{"name":"mlp"},"data":{"batch_size":8},"pipeline":{"schedule":"gpipe","stages":2,"microbatches":2},"optimizer":{"name":"sgd","lr":0.1}})");
  appendGpipeTrace(store, *id, 0.010, /*sends=*/true);
  store.flush();
  store.setStatus(*id, "finished");
  return db;
}

// Drags the canvas with the left button from its centre by (dx, dy) pixels, in steps.
void drag(QWidget* canvas, int dx, int dy) {
  const QPoint from = canvas->rect().center();
  QTest::mousePress(canvas, Qt::LeftButton, Qt::NoModifier, from);
  for (int k = 1; k <= 8; ++k) QTest::mouseMove(canvas, from + QPoint(dx * k / 8, dy * k / 8));
  QTest::mouseRelease(canvas, Qt::LeftButton, Qt::NoModifier, from + QPoint(dx, dy));
}

}  // namespace

// The mouse over a Gantt box tells its stage, action, microbatch, start and duration; over no box,
// nothing.
TEST(GanttPlot, HoverTellsTheBoxUnderTheMouse) {
  pm::test::app();
  pm::ui::GanttPlot plot;
  plot.resize(700, 300);
  plot.setBoxes({{0, "F", 0, 1.000, 1.001}, {0, "B", 1, 1.004, 1.006}, {1, "F", 0, 1.001, 1.002}, {1, "send_act", 2, 1.007, 1.0071}},
                2);
  ASSERT_TRUE(pm::test::showWindow(&plot));
  QWidget* canvas = plot.canvas();
  QTest::mouseMove(canvas, plot.pixelOf(5.0, 0));
  ASSERT_TRUE(QTest::qWaitFor([&] { return !plot.hoverText().isEmpty(); }, 5000));
  EXPECT_EQ(plot.hoverText(), "stage 0, B (backward), microbatch 1\nstart 4 ms, duration 2 ms");
  QTest::mouseMove(canvas, plot.pixelOf(1.5, 1));
  ASSERT_TRUE(QTest::qWaitFor([&] { return plot.hoverText().startsWith("stage 1, F (forward)"); }, 5000)) << plot.hoverText().toStdString();
  EXPECT_TRUE(plot.hoverText().contains("start 1 ms, duration 1 ms")) << plot.hoverText().toStdString();
  QTest::mouseMove(canvas, plot.pixelOf(7.05, 1));
  ASSERT_TRUE(QTest::qWaitFor([&] { return plot.hoverText().startsWith("stage 1, send_act (communication), microbatch 2"); }, 5000))
      << plot.hoverText().toStdString();
  QTest::mouseMove(canvas, plot.pixelOf(3.0, 1));  // stage 1 is idle from 2 to 7 ms
  EXPECT_TRUE(QTest::qWaitFor([&] { return plot.hoverText().isEmpty(); }, 5000)) << plot.hoverText().toStdString();
}

// ZB-V's four stages on two ranks (stage ranks 0, 1, 1, 0): two rows, one per rank; the mouse over
// a box of stage 3 (rank 0's second chunk) names its rank, chunk and stage; without ranks (or one
// stage per rank) a row per stage as before.
TEST(GanttPlot, RanksHoldingSeveralStagesAreOneRowEach) {
  pm::test::app();
  pm::ui::GanttPlot plot;
  plot.resize(700, 300);
  plot.setStageRanks({0, 1, 1, 0});
  plot.setBoxes({{0, "F", 0, 1.000, 1.001}, {1, "F", 0, 1.001, 1.002}, {2, "F", 0, 1.002, 1.003}, {3, "F", 0, 1.003, 1.005},
                 {3, "BI", 0, 1.005, 1.006}},
                4);
  EXPECT_EQ(plot.rows(), 2);
  EXPECT_EQ(plot.rowOf(3), 0);
  EXPECT_EQ(plot.chunkOf(3), 1);
  EXPECT_EQ(plot.chunkOf(1), 0);
  EXPECT_EQ(plot.chunkOf(2), 1);
  ASSERT_TRUE(pm::test::showWindow(&plot));
  QTest::mouseMove(plot.canvas(), plot.pixelOf(4.0, 3));  // 4 ms: stage 3's forward, on rank 0's row
  ASSERT_TRUE(QTest::qWaitFor([&] { return !plot.hoverText().isEmpty(); }, 5000));
  EXPECT_TRUE(plot.hoverText().startsWith("rank 0, chunk 1 (stage 3), F (forward), microbatch 0")) << plot.hoverText().toStdString();
  EXPECT_EQ(pm::ui::ganttChunkLegend({0, 1, 1, 0}), "a row per rank; its second chunk lighter");
  EXPECT_TRUE(pm::ui::ganttChunkLegend({0, 1, 2}).isEmpty());
  plot.setStageRanks({0, 1, 2, 3});  // one stage per rank: rows are stages
  plot.setBoxes({{3, "F", 0, 1.0, 1.1}}, 4);
  EXPECT_EQ(plot.rows(), 4);
  EXPECT_EQ(plot.rowOf(3), 3);
}

// Microbatch labels show only on boxes wide enough for them: zoomed out over many short boxes
// none shows (they would run into each other); the wheel zooms in until they fit, and the
// double-click that shows the whole trace again hides them again.
TEST(GanttPlot, LabelsThatDoNotFitTheirBoxAreHidden) {
  pm::test::app();
  pm::ui::GanttPlot plot;
  plot.resize(500, 250);
  std::vector<pm::ui::GanttBox> boxes;
  for (int m = 0; m < 120; ++m) boxes.push_back({0, "F", m, 0.0001 * m, 0.0001 * m + 0.0001});
  plot.setBoxes(boxes, 1);
  ASSERT_TRUE(pm::test::showWindow(&plot));
  ASSERT_EQ(plot.labelCount(), 120);
  ASSERT_TRUE(QTest::qWaitFor([&] { return plot.labelsShown() == 0; }, 5000)) << plot.labelsShown();
  for (int k = 0; k < 6 && plot.labelsShown() == 0; ++k) pm::test::wheel(plot.canvas(), 3);
  ASSERT_TRUE(QTest::qWaitFor([&] { return plot.labelsShown() > 0; }, 5000)) << plot.viewStartMs() << ".." << plot.viewEndMs();
  EXPECT_LT(plot.labelsShown(), 120);
  QTest::mouseDClick(plot.canvas(), Qt::LeftButton, Qt::NoModifier, plot.canvas()->rect().center());
  EXPECT_TRUE(QTest::qWaitFor([&] { return plot.labelsShown() == 0 && plot.boxesInView() == 120u; }, 5000)) << plot.labelsShown();
}

// Zooming in and dragging towards the start stops at time 0, zooming out at the end of the trace:
// the Timeline never shows negative time or empty time after the trace. R shows it all again.
TEST(TimelineView, ZoomAndPanStayWithinTheTrace) {
  pm::test::app();
  QTemporaryDir dir;
  int64_t id = 0;
  const std::string db = tracedStore(dir, &id);
  pm::ui::TimelineView view(db, kPipemare);
  view.resize(1000, 700);
  ASSERT_TRUE(pm::test::showWindow(&view, /*active=*/true));
  ASSERT_EQ(view.currentRun(), id) << view.lastError();
  pm::ui::GanttPlot* plot = view.measuredPlot();
  QWidget* canvas = pm::test::plotCanvas(plot);
  ASSERT_NE(canvas, nullptr);
  const double end = plot->viewEndMs();
  pm::test::wheel(canvas, 4);
  ASSERT_TRUE(QTest::qWaitFor([&] { return plot->viewStartMs() > 0.5; }, 5000)) << plot->viewStartMs();
  drag(canvas, 900, 0);  // the view moves towards earlier times
  ASSERT_TRUE(QTest::qWaitFor([&] { return plot->viewStartMs() < 1e-9; }, 5000)) << plot->viewStartMs();
  EXPECT_GE(plot->viewStartMs(), 0.0);
  EXPECT_LT(plot->viewEndMs(), end);  // still zoomed
  pm::test::wheel(canvas, -30);
  ASSERT_TRUE(QTest::qWaitFor([&] { return plot->viewEndMs() >= end - 1e-9; }, 5000)) << plot->viewEndMs();
  EXPECT_GE(plot->viewStartMs(), 0.0);
  EXPECT_LE(plot->viewEndMs(), end + 1e-9);
  pm::test::wheel(canvas, 4);
  ASSERT_TRUE(QTest::qWaitFor([&] { return plot->viewEndMs() < end - 1; }, 5000));
  QTest::mouseClick(canvas, Qt::LeftButton, Qt::NoModifier, canvas->rect().center());
  QTest::keyClick(canvas, Qt::Key_R);
  EXPECT_TRUE(QTest::qWaitFor([&] { return plot->boxesInView() == 22u && plot->viewEndMs() >= end - 1e-9; }, 5000));
}

// With "Link time axes" ticked, zooming or dragging one chart moves the other to the same window;
// unticked, each moves on its own.
TEST(TimelineView, LinkedTimeAxesZoomTogether) {
  pm::test::app();
  QTemporaryDir dir;
  int64_t id = 0;
  const std::string db = tracedStore(dir, &id);
  pm::ui::TimelineView view(db, kPipemare);
  view.resize(1000, 700);
  ASSERT_TRUE(pm::test::showWindow(&view));
  ASSERT_EQ(view.currentRun(), id) << view.lastError();
  waitForPrediction(view);  // with or without a prediction (no engine binary), the axes link
  pm::ui::GanttPlot* measured = view.measuredPlot();
  pm::ui::GanttPlot* predicted = view.predictedPlot();
  auto* link = view.findChild<QCheckBox*>("linkAxes");
  ASSERT_NE(link, nullptr);
  ASSERT_FALSE(link->isChecked());

  const double predictedEnd = predicted->viewEndMs();
  pm::test::wheel(pm::test::plotCanvas(measured), 4);
  ASSERT_TRUE(QTest::qWaitFor([&] { return measured->viewStartMs() > 0.5; }, 5000));
  EXPECT_DOUBLE_EQ(predicted->viewEndMs(), predictedEnd);  // not linked: the other stays

  const QImage unlinkedPicture = pm::test::plotCanvas(predicted)->grab().toImage();
  QTest::mouseClick(link, Qt::LeftButton);
  ASSERT_TRUE(view.axesLinked());
  // Ticking the box brings the lower chart to the upper one's window, on screen too.
  EXPECT_TRUE(QTest::qWaitFor([&] { return pm::test::plotCanvas(predicted)->grab().toImage() != unlinkedPicture; }, 5000))
      << "linking moved the lower chart's window but did not redraw it";
  const auto sameWindow = [&] {
    return std::abs(measured->viewStartMs() - predicted->viewStartMs()) < 1e-9 &&
           std::abs(measured->viewEndMs() - predicted->viewEndMs()) < 1e-9;
  };
  EXPECT_TRUE(QTest::qWaitFor(sameWindow, 5000)) << predicted->viewStartMs() << ".." << predicted->viewEndMs();
  const double start = measured->viewStartMs();
  // What the lower chart shows on screen, before the upper one is zoomed: it must be redrawn with
  // the new window, not only report it in its footer.
  const QImage shownBefore = pm::test::plotCanvas(predicted)->grab().toImage();
  pm::test::wheel(pm::test::plotCanvas(measured), 3);
  ASSERT_TRUE(QTest::qWaitFor([&] { return measured->viewStartMs() > start; }, 5000));
  EXPECT_TRUE(sameWindow()) << measured->viewStartMs() << ".." << measured->viewEndMs() << " vs " << predicted->viewStartMs() << ".."
                            << predicted->viewEndMs();
  EXPECT_TRUE(QTest::qWaitFor([&] { return pm::test::plotCanvas(predicted)->grab().toImage() != shownBefore; }, 5000))
      << "the linked chart's window moved but it was not redrawn";
  // Dragging the lower chart moves the upper one.
  const double before = measured->viewStartMs();
  drag(pm::test::plotCanvas(predicted), 150, 0);
  ASSERT_TRUE(QTest::qWaitFor([&] { return measured->viewStartMs() < before; }, 5000)) << measured->viewStartMs();
  EXPECT_TRUE(sameWindow());

  QTest::mouseClick(link, Qt::LeftButton);
  ASSERT_FALSE(view.axesLinked());
  // Unlinked, each chart keeps to its own trace again.
  const double predictedStart = predicted->viewStartMs(), predictedEnd2 = predicted->viewEndMs();
  const double measuredSpan = measured->viewEndMs() - measured->viewStartMs();
  pm::test::wheel(pm::test::plotCanvas(measured), 3);
  ASSERT_TRUE(QTest::qWaitFor([&] { return measured->viewEndMs() - measured->viewStartMs() < 0.9 * measuredSpan; }, 5000))
      << measured->viewStartMs() << ".." << measured->viewEndMs();
  EXPECT_DOUBLE_EQ(predicted->viewStartMs(), predictedStart);
  EXPECT_DOUBLE_EQ(predicted->viewEndMs(), predictedEnd2);
}

// The mouse over a heat-map cell tells its row and column, its value, then the cell's own tip.
TEST(HeatMap, HoverNamesTheCellsRowColumnAndValue) {
  pm::test::app();
  pm::ui::HeatMap map;
  map.resize(600, 400);
  map.setGrid({"0.1", "10"}, {"1", "2"}, "optimizer.lr", "pipeline.stages");
  std::vector<pm::ui::HeatCell> cells;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c) {
      pm::ui::HeatCell cell;
      cell.row = r;
      cell.col = c;
      cell.value = 0.5 + 0.1 * (2 * r + c);
      cell.text = QString::number(cell.value);
      cell.toolTip = QString("run %1").arg(2 * r + c + 1);
      cells.push_back(cell);
    }
  map.setCells(cells, 0.5, 0.8, "final accuracy");
  ASSERT_TRUE(pm::test::showWindow(&map));
  ASSERT_TRUE(QTest::qWaitFor([&] {
    int r = -1, c = -1;
    return map.cellUnder(map.cellCenter(1, 0), &r, &c) && r == 1 && c == 0;
  }, 5000));
  QTest::mouseMove(map.canvas(), map.cellCenter(1, 0));
  ASSERT_TRUE(QTest::qWaitFor([&] { return !map.hoverText().isEmpty(); }, 5000));
  EXPECT_EQ(map.hoverText(), "optimizer.lr = 10, pipeline.stages = 1: 0.7 (final accuracy)\nrun 3");
}

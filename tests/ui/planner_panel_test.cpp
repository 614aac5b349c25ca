// The Design tab's planner panel agrees with itself: the table's figures use the design's own
// partition, the selected row's utilization is the busy share of the timeline beside it, clicking
// a row shows that schedule's timeline and memory, and every column header defines its figure.
#include <gtest/gtest.h>

#include <QAbstractItemModel>
#include <QComboBox>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>

#include "tests/support/test_support.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/designer/designer_view.h"
#include "ui/plots/gantt_plot.h"
#include "ui/main/main_window.h"
#include "ui/planner/planner_panel.h"

namespace {

const QString kPresets = QString::fromStdString(pm::test::sourcePath("experiments"));
const QString kPipemare = QString::fromStdString(pm::test::binPath("pipemare"));

int rowOf(QTableWidget* table, const QString& schedule) {
  for (int r = 0; r < table->rowCount(); ++r)
    if (table->item(r, 0) && table->item(r, 0)->text() == schedule) return r;
  return -1;
}

double number(QTableWidget* table, int row, int column) {
  return table->item(row, column) ? table->item(row, column)->text().toDouble() : -1.0;
}

}  // namespace

// The resnet20-pipemare preset (P = 11, partitioned by parameters, unbalanced in time): its row
// (pipemare+T2) is below full utilization, equal to its timeline's busy share; clicking gpipe's
// row, then 1f1b's and zb-h1's, shows their timelines and memory, each as busy as its row says.
TEST(PlannerPanel, TheTableAgreesWithTheTimelineOfTheRowClicked) {
  pm::test::app();
  pm::test::TempDir tmp;
  pm::ui::MainWindow w((tmp.dir / "runs.db").string(), kPresets, kPipemare);
  w.resize(1400, 900);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  pm::ui::PlannerPanel* panel = w.plannerPanel();
  ASSERT_TRUE(w.designer()->loadFile(kPresets + "/resnet20-pipemare.json"));
  auto* tabs = qobject_cast<QTabWidget*>(w.centralWidget());
  ASSERT_TRUE(tabs);
  ASSERT_TRUE(pm::test::clickTab(tabs, "Design"));
  ASSERT_TRUE(QTest::qWaitFor(
      [&] { return panel->plan().is_object() && panel->plan().value("model", std::string()) == "resnet20" && panel->rowCount() == 9; },
      90000));
  auto* table = panel->findChild<QTableWidget*>();
  ASSERT_TRUE(table);

  // The design's row, with T2 on.
  EXPECT_EQ(panel->selectedSchedule(), "pipemare+T2");
  const int mare = rowOf(table, "pipemare+T2");
  ASSERT_GE(mare, 0);
  const double u = number(table, mare, 1);
  EXPECT_GT(u, 0.0);
  EXPECT_LT(u, 1.0);
  EXPECT_NEAR(u + number(table, mare, 2), 1.0, 1.5e-3);  // bubble
  EXPECT_NEAR(u, panel->ganttBusyShare(), 5e-4) << panel->ganttTitle().toStdString();
  EXPECT_LT(number(table, mare, 3), 1.0);  // long run: bound by the slowest stage
  EXPECT_TRUE(table->item(mare, 4)->text().startsWith("stage ")) << table->item(mare, 4)->text().toStdString();
  EXPECT_TRUE(panel->ganttTitle().contains("pipemare+T2")) << panel->ganttTitle().toStdString();
  EXPECT_TRUE(panel->memoryTitle().contains("pipemare+T2")) << panel->memoryTitle().toStdString();
  EXPECT_TRUE(panel->statusText().contains("the slowest, stage")) << panel->statusText().toStdString();
  EXPECT_FALSE(panel->statusText().contains("Equal stages")) << panel->statusText().toStdString();

  double oneFOneB = 0;
  for (const QString schedule : {"gpipe", "1f1b", "zb-h1"}) {
    SCOPED_TRACE(schedule.toStdString());
    const int row = rowOf(table, schedule);
    ASSERT_GE(row, 0);
    pm::test::clickCell(table, row, 1);
    ASSERT_TRUE(QTest::qWaitFor([&] { return panel->selectedSchedule() == schedule; })) << panel->selectedSchedule().toStdString();
    ASSERT_TRUE(QTest::qWaitFor([&] { return panel->ganttTitle().startsWith("Predicted timeline: " + schedule + ","); }))
        << panel->ganttTitle().toStdString();
    EXPECT_TRUE(panel->memoryTitle().contains(schedule)) << panel->memoryTitle().toStdString();
    EXPECT_GT(panel->ganttBoxes(), 0u);
    EXPECT_NEAR(number(table, row, 1), panel->ganttBusyShare(), 5e-4);
    EXPECT_NEAR(number(table, row, 9), panel->ganttMakespanMs(), 1e-3 + 1e-3 * panel->ganttMakespanMs());  // its span
    if (schedule == "zb-h1") {
      // W fills part of 1f1b's bubble; on these unbalanced stages that can beat pipemare, which
      // runs at the pace of its slowest stage, so only the order against 1f1b is asserted.
      EXPECT_GT(number(table, row, 1), oneFOneB);
    } else {
      EXPECT_LT(number(table, row, 1), u);  // gpipe and 1f1b idle more than pipemare
    }
    if (schedule == "1f1b") oneFOneB = number(table, row, 1);
  }

  // Every column header defines its figure in a tooltip.
  for (int c = 0; c < table->columnCount(); ++c) {
    const QString tip = table->model()->headerData(c, Qt::Horizontal, Qt::ToolTipRole).toString();
    EXPECT_GT(tip.size(), 20) << "column " << c << " ("
                              << table->model()->headerData(c, Qt::Horizontal).toString().toStdString() << ")";
  }
}

// A design given as JSON with explicit, badly unbalanced boundaries: the slowest stage's share is
// far above 1/P and the pipemare row's long-run utilization is 1 / (P x share).
TEST(PlannerPanel, NamesTheSlowestStageOfAnUnbalancedPartition) {
  pm::test::app();
  pm::ui::PlannerPanel panel(kPipemare);
  QSignalSpy planned(&panel, &pm::ui::PlannerPanel::planned);
  nlohmann::json e = {{"model", {{"name", "cnn"}}},
                      {"data", {{"batch_size", 32}}},
                      {"pipeline",
                       {{"schedule", "pipemare"}, {"stages", 2}, {"microbatches", 4},
                        {"partition", {{"method", "explicit"}, {"boundaries", {1}}}}}},
                      {"optimizer", {{"name", "sgd"}, {"momentum", 0.9}}},
                      {"training", {{"epochs", 1}}}};
  panel.setExperiment(e);
  ASSERT_TRUE(planned.wait(60000)) << panel.statusText().toStdString();
  auto* table = panel.findChild<QTableWidget*>();
  ASSERT_TRUE(table);
  const int mare = rowOf(table, "pipemare");
  ASSERT_GE(mare, 0);
  EXPECT_EQ(panel.selectedSchedule(), "pipemare");
  const auto& b = panel.plan()["schedules"][static_cast<size_t>(mare)]["bottleneck"];
  const double share = b["share"].get<double>();
  EXPECT_GT(share, 0.5);
  EXPECT_EQ(table->item(mare, 4)->text(), QString("stage %1: %2 %").arg(b["stage"].get<int>()).arg(share * 100, 0, 'f', 1));
  EXPECT_NEAR(number(table, mare, 3), 1.0 / (2 * share), 1e-3);
  EXPECT_NEAR(number(table, mare, 1), panel.ganttBusyShare(), 5e-4);
}

// "stage times measured", chosen with the keyboard, plans again with each unit's passes timed:
// the plan says so, carries F, B, BI and W per stage, and the footer names where the times are from.
TEST(PlannerPanel, StageTimesMeasuredPlansWithEachStagesTimedPasses) {
  pm::test::app();
  pm::ui::PlannerPanel panel(kPipemare);
  QSignalSpy planned(&panel, &pm::ui::PlannerPanel::planned);
  nlohmann::json e = {{"model", {{"name", "cnn"}}},
                      {"data", {{"batch_size", 32}}},
                      {"pipeline", {{"schedule", "zb-h1"}, {"stages", 2}, {"microbatches", 4}}},
                      {"optimizer", {{"name", "sgd"}, {"momentum", 0.9}}},
                      {"training", {{"epochs", 1}}}};
  panel.setExperiment(e);
  ASSERT_TRUE(planned.wait(60000)) << panel.statusText().toStdString();
  EXPECT_EQ(panel.plan().value("stage_costs", std::string()), "flops");
  EXPECT_FALSE(panel.plan().contains("stage_op_costs"));
  auto* costs = panel.findChild<QComboBox*>("stageCostsBox");
  ASSERT_TRUE(costs);
  ASSERT_TRUE(pm::test::chooseData(costs, QString("measured")));
  ASSERT_TRUE(QTest::qWaitFor([&] { return panel.plan().value("stage_costs", std::string()) == "measured"; }, 60000))
      << panel.statusText().toStdString();
  const auto& ops = panel.plan()["stage_op_costs"];
  ASSERT_EQ(ops.size(), 2u);
  for (const auto& st : ops) EXPECT_GT(st["weight_s"].get<double>(), 0.0) << st.dump();
  EXPECT_TRUE(panel.statusText().contains("Stage times measured")) << panel.statusText().toStdString();
  EXPECT_EQ(panel.selectedSchedule(), "zb-h1");
}

// A design that holds two chunks per rank (zb-v, cnn, P = 2): its own row is selected, its memory
// is drawn per rank and its predicted timeline has one row per rank, as busy as the row says;
// interleaved-1f1b's row likewise. With N not a multiple of P the footer says why interleaved has
// no row.
TEST(PlannerPanel, AChunkedDesignIsPlannedPerRank) {
  pm::test::app();
  pm::ui::PlannerPanel panel(kPipemare);
  QSignalSpy planned(&panel, &pm::ui::PlannerPanel::planned);
  nlohmann::json e = {{"model", {{"name", "cnn"}}},
                      {"data", {{"batch_size", 32}}},
                      {"pipeline", {{"schedule", "zb-v"}, {"stages", 2}, {"microbatches", 4}}},
                      {"optimizer", {{"name", "sgd"}, {"momentum", 0.9}}},
                      {"training", {{"epochs", 1}}}};
  panel.setExperiment(e);
  ASSERT_TRUE(planned.wait(60000)) << panel.statusText().toStdString();
  auto* table = panel.findChild<QTableWidget*>();
  auto* gantt = panel.findChild<pm::ui::GanttPlot*>();
  ASSERT_TRUE(table && gantt);
  EXPECT_EQ(panel.selectedSchedule(), "zb-v");
  EXPECT_TRUE(panel.memoryTitle().contains("per rank, its 2 chunks together")) << panel.memoryTitle().toStdString();
  EXPECT_EQ(gantt->rows(), 2);
  EXPECT_TRUE(panel.ganttTitle().contains("a row per rank")) << panel.ganttTitle().toStdString();
  EXPECT_NEAR(number(table, rowOf(table, "zb-v"), 1), panel.ganttBusyShare(), 5e-4);
  EXPECT_TRUE(panel.statusText().contains("Design: zb-v holds 2 model chunks")) << panel.statusText().toStdString();

  const int il = rowOf(table, "interleaved-1f1b");
  ASSERT_GE(il, 0);
  pm::test::clickCell(table, il, 1);
  ASSERT_TRUE(QTest::qWaitFor([&] { return panel.ganttTitle().startsWith("Predicted timeline: interleaved-1f1b,"); }))
      << panel.ganttTitle().toStdString();
  EXPECT_EQ(gantt->rows(), 2);
  EXPECT_NEAR(number(table, il, 1), panel.ganttBusyShare(), 5e-4);
  EXPECT_TRUE(panel.memoryTitle().contains("per rank")) << panel.memoryTitle().toStdString();

  e["pipeline"]["microbatches"] = 3;
  panel.setExperiment(e);
  ASSERT_TRUE(planned.wait(60000)) << panel.statusText().toStdString();
  EXPECT_LT(rowOf(table, "interleaved-1f1b"), 0);
  EXPECT_TRUE(panel.statusText().contains("No interleaved-1f1b row")) << panel.statusText().toStdString();
}

#include <gtest/gtest.h>

#include <fstream>
#include <signal.h>

#include <QAction>
#include <QComboBox>
#include <QTableView>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>
#include <filesystem>
#include <map>
#include <memory>

#include "core/config/experiment.h"
#include "core/store/run_store.h"
#include "core/util/paths.h"
#include "tests/support/test_support.h"
#include "tests/ui/ui_test_main.h"
#include "ui/designer/designer_view.h"
#include "ui/live/live_panel.h"
#include "ui/live/live_run_view.h"
#include "ui/main/main_window.h"
#include "ui/planner/planner_panel.h"
#include "ui/plots/curve_plot.h"
#include "ui/runs/runs_browser.h"
#include "ui/store/store_watcher.h"

namespace fs = std::filesystem;

namespace {
const QString kPresets = QString::fromStdString(pm::test::sourcePath("experiments"));
const QString kPipemare = QString::fromStdString(pm::test::binPath("pipemare"));
using pm::test::TempDir;
}  // namespace

TEST(Designer, FlagsInvalidValuesInPlaceWithTheValidatorsMessage) {
  pm::test::app();
  pm::ui::DesignerView d(kPresets);
  ASSERT_TRUE(d.loadFile(kPresets + "/quickstart.json"));
  EXPECT_TRUE(d.valid()) << d.validationMessage().toStdString();
  auto* run = d.findChild<QPushButton*>("runButton");
  ASSERT_NE(run, nullptr);
  EXPECT_TRUE(run->isEnabled());

  // Too many stages for the model: flagged at pipeline.stages with the range.
  ASSERT_TRUE(d.setFieldText("pipeline.stages", "7"));
  EXPECT_FALSE(d.valid());
  EXPECT_EQ(d.invalidField().toStdString(), "pipeline.stages");
  EXPECT_NE(d.validationMessage().toStdString().find("mlp has 3 partitionable units"), std::string::npos)
      << d.validationMessage().toStdString();
  EXPECT_FALSE(d.fieldWidget("pipeline.stages")->styleSheet().isEmpty());
  EXPECT_TRUE(d.validationMessage().startsWith("quickstart.json (as edited): pipeline.stages"))
      << d.validationMessage().toStdString();
  EXPECT_FALSE(run->isEnabled());

  // A cross-field rule: T1 with a synchronous schedule.
  ASSERT_TRUE(d.setFieldText("pipeline.stages", "1"));
  EXPECT_TRUE(d.valid());
  ASSERT_TRUE(d.setFieldText("pipemare.t1", "true"));
  EXPECT_FALSE(d.valid());
  EXPECT_EQ(d.invalidField().toStdString(), "pipemare.t1");
  ASSERT_TRUE(d.setFieldText("pipeline.schedule", "pipemare"));
  EXPECT_TRUE(d.valid()) << d.validationMessage().toStdString();

  // A number typed as text.
  ASSERT_TRUE(d.setFieldText("optimizer.lr", "fast"));
  EXPECT_FALSE(d.valid());
  EXPECT_EQ(d.invalidField().toStdString(), "optimizer.lr");
  EXPECT_NE(d.validationMessage().toStdString().find("\"fast\""), std::string::npos);
  ASSERT_TRUE(d.setFieldText("optimizer.lr", "0.1"));
  EXPECT_TRUE(d.valid());
  EXPECT_DOUBLE_EQ(d.currentJson()["optimizer"]["lr"].get<double>(), 0.1);

  // Save and reload round trip.
  TempDir tmp;
  const QString saved = QString::fromStdString((tmp.dir / "mine.json").string());
  ASSERT_TRUE(d.saveTo(saved));
  pm::ui::DesignerView d2(kPresets);
  ASSERT_TRUE(d2.loadFile(saved));
  EXPECT_EQ(d2.currentJson(), d.currentJson());
}

// A value the format does not allow in a choice field ("PipeMare") is shown and flagged, not
// replaced by the list's first item and called valid (which would run gpipe); saving reports a
// file that cannot be written and names the saved file afterwards.
TEST(Designer, KeepsAndFlagsAChoiceOutsideTheListAndReportsSaveFailures) {
  pm::test::app();
  TempDir tmp;
  pm::Json j = pm::loadExperimentJson((kPresets + "/tiny-synthetic.json").toStdString());
  j["pipeline"]["schedule"] = "PipeMare";
  const std::string bad = (tmp.dir / "bad-enum.json").string();
  std::ofstream(bad) << j.dump(2);
  pm::ui::DesignerView d(kPresets);
  ASSERT_TRUE(d.loadFile(QString::fromStdString(bad)));
  auto* box = qobject_cast<QComboBox*>(d.fieldWidget("pipeline.schedule"));
  ASSERT_NE(box, nullptr);
  EXPECT_EQ(box->currentText().toStdString(), "PipeMare");
  EXPECT_FALSE(d.valid());
  EXPECT_EQ(d.invalidField().toStdString(), "pipeline.schedule");
  EXPECT_NE(d.validationMessage().indexOf("pipemare"), -1) << d.validationMessage().toStdString();
  ASSERT_TRUE(d.setFieldText("pipeline.schedule", "pipemare"));
  EXPECT_TRUE(d.valid()) << d.validationMessage().toStdString();

  EXPECT_FALSE(d.saveTo(QString::fromStdString((tmp.dir / "no-such-dir" / "x.json").string())));
  EXPECT_NE(d.validationMessage().indexOf("cannot be written"), -1) << d.validationMessage().toStdString();
  const QString saved = QString::fromStdString((tmp.dir / "mine.json").string());
  ASSERT_TRUE(d.saveTo(saved));
  ASSERT_TRUE(d.setFieldText("pipeline.stages", "99"));
  EXPECT_TRUE(d.validationMessage().startsWith("mine.json (as edited)")) << d.validationMessage().toStdString();
}

// A field's widget follows the format's type, not how the file wrote the value: quickstart writes
// "epochs": 1, a number that takes fractions, so it is a text field that keeps 0.5; stages stays
// an integer spin box.
TEST(Designer, NumberFieldsWrittenAsIntegersTakeFractions) {
  pm::test::app();
  pm::ui::DesignerView d(kPresets);
  ASSERT_TRUE(d.loadFile(kPresets + "/quickstart.json"));
  ASSERT_TRUE(d.currentJson()["training"]["epochs"].is_number_integer());  // as the file writes it
  EXPECT_NE(qobject_cast<QLineEdit*>(d.fieldWidget("training.epochs")), nullptr);
  EXPECT_NE(qobject_cast<QSpinBox*>(d.fieldWidget("pipeline.stages")), nullptr);
  ASSERT_TRUE(d.setFieldText("training.epochs", "0.5"));
  EXPECT_TRUE(d.valid()) << d.validationMessage().toStdString();
  EXPECT_DOUBLE_EQ(d.currentJson()["training"]["epochs"].get<double>(), 0.5);
}

// A run of an edited design carries the edits in its notes (the file's notes describe the file);
// an unedited one keeps the file's notes; saving makes the saved file the reference.
TEST(Designer, ARunOfAnEditedDesignSaysWhatWasEdited) {
  pm::test::app();
  pm::ui::DesignerView d(kPresets);
  ASSERT_TRUE(d.loadFile(kPresets + "/tiny-synthetic.json"));
  QSignalSpy spy(&d, &pm::ui::DesignerView::runRequested);
  const std::string fileNotes = d.currentJson()["notes"].get<std::string>();
  d.requestRun();
  ASSERT_EQ(spy.count(), 1);
  EXPECT_EQ(nlohmann::json::parse(spy.at(0).at(0).toString().toStdString())["notes"], fileNotes);
  ASSERT_TRUE(d.setFieldText("data.batch_size", "16"));
  ASSERT_TRUE(d.setFieldText("optimizer.lr", "0.1"));
  d.requestRun();
  ASSERT_EQ(spy.count(), 2);
  EXPECT_EQ(nlohmann::json::parse(spy.at(1).at(0).toString().toStdString())["notes"],
            fileNotes + " [edited in the workbench: data.batch_size=16, optimizer.lr=0.1]");
  TempDir tmp;
  ASSERT_TRUE(d.saveTo(QString::fromStdString((tmp.dir / "mine.json").string())));
  EXPECT_TRUE(d.editsSinceLoaded().empty());
}

// A tiny experiment launched from the GUI end to end: points reach the live plot, the run row
// appears in the store, the status is finished.
TEST(LiveRun, TinyExperimentEndToEnd) {
  pm::test::app();
  TempDir tmp;
  const QString db = QString::fromStdString((tmp.dir / "runs.db").string());
  pm::ui::LiveRunView view(kPipemare, db);
  view.resize(1000, 700);
  view.show();
  QSignalSpy done(&view, &pm::ui::LiveRunView::runFinished);
  view.start(kPresets + "/tiny-synthetic.json", "from-gui");
  ASSERT_TRUE(done.wait(120000)) << view.logText().toStdString();
  EXPECT_EQ(view.status().toStdString(), "finished") << view.logText().toStdString();
  EXPECT_GT(view.lossPoints(), 0u);
  pm::RunStore store(db.toStdString());
  auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].name, "from-gui");
  EXPECT_EQ(runs[0].status, "finished");
  EXPECT_EQ(view.runId(), runs[0].id);
}

// A run of a million steps started from the Live view, waited for until its first loss point. The
// view tells a store watcher (as the workbench's does) when the run process ends.
struct LongLiveRun {
  TempDir tmp;
  QString db, exp;
  std::unique_ptr<pm::ui::StoreWatcher> watcher;  // outlives the view
  std::unique_ptr<pm::ui::LiveRunView> view;
  std::unique_ptr<QSignalSpy> done;
  explicit LongLiveRun(const QString& title) {
    pm::test::app();
    db = QString::fromStdString((tmp.dir / "runs.db").string());
    exp = QString::fromStdString((tmp.dir / "long.json").string());
    QFile f(exp);
    if (f.open(QIODevice::WriteOnly))
      f.write(R"({"name": "long", "model": {"name": "mlp"}, "data": {"dataset": "synthetic", "batch_size": 32},
                 "training": {"steps": 1000000, "log_interval": 1}})");
    f.close();
    watcher = std::make_unique<pm::ui::StoreWatcher>(db.toStdString());
    view = std::make_unique<pm::ui::LiveRunView>(kPipemare, db);
    view->setStoreWatcher(watcher.get());
    done = std::make_unique<QSignalSpy>(view.get(), &pm::ui::LiveRunView::runFinished);
    view->start(exp, title);
    // Until the first loss point, for at most 60 s: each test asserts that it came.
    static_cast<void>(QTest::qWaitFor([this] { return view->lossPoints() > 0; }, 60000));
  }
};

TEST(LiveRun, StopFromTheGui) {
  LongLiveRun run("to-stop");  // waits for the first loss point
  pm::ui::LiveRunView& view = *run.view;
  ASSERT_GT(view.lossPoints(), 0u) << view.logText().toStdString();
  view.stop();
  ASSERT_TRUE(run.done->wait(30000));
  EXPECT_EQ(view.status().toStdString(), "stopped") << view.logText().toStdString();
  pm::RunStore store(run.db.toStdString());
  auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "stopped");
  EXPECT_FALSE(store.loadMetric(runs[0].id, "train/loss").empty());
}

// The run's process killed with -9: the log names the run (not "run 0: failed") and says the
// process was killed, and the record reads interrupted at once (the store watcher marks it when
// the process ends).
TEST(LiveRun, KilledRunProcessIsExplained) {
  LongLiveRun run("to-kill");
  pm::ui::LiveRunView& view = *run.view;
  ASSERT_GT(view.lossPoints(), 0u) << view.logText().toStdString();
  ASSERT_EQ(::kill(static_cast<pid_t>(view.pid()), SIGKILL), 0);
  ASSERT_TRUE(run.done->wait(30000));
  const std::string log = view.logText().toStdString();
  EXPECT_NE(log.find("was killed or crashed"), std::string::npos) << log;
  EXPECT_NE(log.find("run 1: failed"), std::string::npos) << log;
  EXPECT_NE(log.find("the run is recorded as interrupted"), std::string::npos) << log;
  EXPECT_EQ(pm::RunStore(run.db.toStdString()).getRun(1)->status, "interrupted");
}

// A run the engine refuses (a bad field): the log says why once, with the field's line; the
// engine's stderr repeats the error event and is not shown again.
TEST(LiveRun, BadExperimentShowsItsErrorOnce) {
  pm::test::app();
  TempDir tmp;
  const QString db = QString::fromStdString((tmp.dir / "runs.db").string());
  const QString exp = QString::fromStdString((tmp.dir / "bad.json").string());
  {
    QFile f(exp);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write("{\"name\": \"bad\", \"model\": {\"name\": \"mlp\"},\n \"pipeline\": {\"stages\": \"four\"}}\n");
  }
  pm::ui::LiveRunView view(kPipemare, db);
  QSignalSpy done(&view, &pm::ui::LiveRunView::runFinished);
  view.start(exp, "bad");
  ASSERT_TRUE(done.wait(60000)) << view.logText().toStdString();
  EXPECT_EQ(view.status().toStdString(), "invalid") << view.logText().toStdString();
  const QString log = view.logText();
  EXPECT_EQ(log.count("pipeline.stages"), 1) << log.toStdString();
  EXPECT_TRUE(log.contains("bad.json:2")) << log.toStdString();
}

// A language model's evaluations carry perplexity and next-byte accuracy: the plot shows
// perplexity alone (on an axis shared with perplexity the accuracy would lie flat at the bottom);
// a classifier's shows accuracy.
TEST(LiveRun, LanguageModelsPlotPerplexityAlone) {
  pm::test::app();
  pm::ui::LiveRunView lm(kPipemare, "");
  for (int step = 10; step <= 30; step += 10)
    lm.onEvent({{"type", "eval"}, {"step", step}, {"loss", 3.0}, {"accuracy", 0.3}, {"perplexity", 40.0 - step}});
  EXPECT_EQ(lm.evalPlot()->seriesCount(), 1);
  EXPECT_EQ(lm.evalPlot()->pointCount(0), 3u);
  EXPECT_EQ(lm.evalPlot()->title().toStdString(), "Held-out perplexity");
  pm::ui::LiveRunView cls(kPipemare, "");
  cls.onEvent({{"type", "eval"}, {"step", 10}, {"loss", 0.5}, {"accuracy", 0.8}});
  EXPECT_EQ(cls.evalPlot()->seriesCount(), 1);
  EXPECT_EQ(cls.evalPlot()->title().toStdString(), "Held-out accuracy");
}

// The asynchronous panels and the waiting / idle split are filled from stage events.
TEST(LiveRun, StageEventsFillTheAsyncWaitAndMemoryPanels) {
  pm::test::app();
  pm::ui::LiveRunView view(kPipemare, "");
  for (int step = 1; step <= 3; ++step)
    for (int stage = 0; stage < 2; ++stage)
      view.onEvent({{"type", "stage"}, {"stage", stage}, {"step", step}, {"utilization", 0.7}, {"compute_s", 0.7},
                    {"wait_s", 0.2}, {"idle_s", 0.1}, {"tau", 1 - stage}, {"lr", 0.05 / (2 - stage)},
                    {"weight_gap", 0.01}, {"weight_gap_t2", 0.002},
                    {"memory", {{"weights", 1 << 20}, {"gradients", 1 << 20}, {"optimizer", 0}, {"stash", 0}, {"delta", 1 << 20},
                                {"activations", 3 << 20}, {"total", 6 << 20}, {"peak", (6 + step) << 20}}}});
  EXPECT_EQ(view.lrPlot()->seriesCount(), 2);
  EXPECT_EQ(view.lrPlot()->pointCount(0), 3u);
  EXPECT_EQ(view.gapPlot()->seriesCount(), 4);  // each stage without and with T2
  EXPECT_EQ(view.waitPlot()->seriesCount(), 4);  // each stage waiting and idle
  EXPECT_EQ(view.waitPlot()->pointCount(0), 3u);
  EXPECT_EQ(view.memoryPlot()->seriesCount(), 4);  // each stage's total and its peak so far
  EXPECT_EQ(view.memoryPlot()->pointCount(1), 3u);
  ASSERT_NE(view.memoryNowPlot(), nullptr);
  EXPECT_FALSE(view.gapPlot()->title().contains("none"));
  view.gapPlot()->replot();
  EXPECT_FALSE(view.gapPlot()->showsEmptyText());
  view.lossPlot()->replot();  // no step event yet: the loss plot says it waits for one
  EXPECT_TRUE(view.lossPlot()->showsEmptyText());
  EXPECT_EQ(view.lossPlot()->emptyText(), "waiting for the first step");

  // A synchronous run says why its delay and weight-gap plots stay empty.
  pm::ui::LiveRunView sync(kPipemare, "");
  sync.onEvent({{"type", "run_started"}, {"config", {{"pipeline", {{"schedule", "gpipe"}}}}}});
  EXPECT_TRUE(sync.gapPlot()->title().contains("gpipe is synchronous")) << sync.gapPlot()->title().toStdString();
  sync.gapPlot()->replot();
  EXPECT_TRUE(sync.gapPlot()->showsEmptyText());
  EXPECT_TRUE(sync.gapPlot()->emptyText().contains("gpipe is synchronous")) << sync.gapPlot()->emptyText().toStdString();
}

// Closing the workbench during a run and choosing "Leave running": the run goes on after the
// window (and its process objects) are gone, and finishes recorded with every row.
TEST(LiveRun, ClosingTheGuiWithLeaveRunningLetsTheRunFinishRecorded) {
  pm::test::app();
  TempDir tmp;
  const QString db = QString::fromStdString((tmp.dir / "runs.db").string());
  const QString exp = QString::fromStdString((tmp.dir / "left.json").string());
  {
    QFile f(exp);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(R"({"name": "left running", "model": {"name": "mlp"}, "data": {"dataset": "synthetic", "batch_size": 32},
               "pipeline": {"stages": 2, "microbatches": 2}, "training": {"steps": 400, "log_interval": 1}})");
  }
  qint64 pid = 0;
  {
    auto* w = new pm::ui::MainWindow(db.toStdString(), kPresets, kPipemare);
    w->setCloseAnswer("leave");
    auto* view = w->livePanel()->startRun(exp, "left running");
    ASSERT_TRUE(QTest::qWaitFor([&] { return view->lossPoints() >= 3; }, 60000)) << view->logText().toStdString();
    ASSERT_LT(view->lossPoints(), 400u) << "the run ended before the window was closed";
    pid = view->pid();
    ASSERT_GT(pid, 0);
    EXPECT_TRUE(w->close());
    delete w;
  }
  EXPECT_EQ(::kill(static_cast<pid_t>(pid), 0), 0) << "the run ended with the window";
  // The run's record, read every 100 ms for at most 120 s, until it ends.
  std::string status;
  for (int i = 0; i < 1200; ++i) {
    QTest::qWait(100);
    pm::RunStore store(db.toStdString(), /*readOnly=*/true);
    auto runs = store.listRuns();
    if (runs.size() == 1 && runs[0].status != "running" && runs[0].status != "created") {
      status = runs[0].status;
      EXPECT_EQ(store.loadMetric(runs[0].id, "train/loss").size(), 400u);
      break;
    }
  }
  EXPECT_EQ(status, "finished");
}

// The planner's timing model follows the experiment's pipeline.timing when that changes, and keeps
// the user's choice while it does not.
TEST(PlannerPanel, TimingFollowsTheExperimentsPipelineTiming) {
  pm::ui::PlannerPanel panel("/nonexistent/pipemare");
  nlohmann::json e = {{"pipeline", {{"schedule", "pipemare"}, {"stages", 2}, {"microbatches", 4}, {"timing", "paper"}}}};
  panel.setExperiment(e);
  EXPECT_EQ(panel.timingModel(), "paper");
  panel.setTimingModel("1f1b");  // the user looks at the other model
  e["pipeline"]["stages"] = 3;   // an edit that leaves the timing alone
  panel.setExperiment(e);
  EXPECT_EQ(panel.timingModel(), "1f1b");
  e["pipeline"]["timing"] = "1f1b";
  panel.setExperiment(e);
  EXPECT_EQ(panel.timingModel(), "1f1b");
  e["pipeline"]["timing"] = "paper";
  panel.setExperiment(e);
  EXPECT_EQ(panel.timingModel(), "paper");
}

// A pipemare design with a synchronous warm-up: the panel asks the planner for the hybrid and
// says its time-weighted utilization (ResNet-20, P = 11, N = 2, 1 of 3 epochs as gpipe: 0.375).
TEST(PlannerPanel, ShowsTheUtilizationOfAWarmUp) {
  pm::test::app();
  pm::ui::PlannerPanel panel(kPipemare);
  QSignalSpy planned(&panel, &pm::ui::PlannerPanel::planned);
  nlohmann::json e = {{"model", {{"name", "resnet20"}}},
                      {"data", {{"batch_size", 128}}},
                      {"pipeline", {{"schedule", "pipemare"}, {"stages", 11}, {"microbatches", 2}, {"timing", "1f1b"}}},
                      {"pipemare", {{"t1", true}, {"t2", true}, {"warmup_epochs", 1}}},
                      {"optimizer", {{"name", "sgd"}, {"momentum", 0.9}}},
                      {"training", {{"epochs", 3}}}};
  panel.setExperiment(e);
  ASSERT_TRUE(planned.wait(60000)) << panel.statusText().toStdString();
  EXPECT_TRUE(panel.statusText().contains("With its warm-up (33 % of the run as gpipe) pipemare's utilization is 0.375"))
      << panel.statusText().toStdString();
  EXPECT_NEAR(panel.plan().value("utilization_pipemare_with_warmup", 0.0), 0.375, 1e-9);
  // The design has T2: its row (memory bars, timeline) is pipemare+T2's, with the delta.
  EXPECT_EQ(panel.selectedSchedule(), "pipemare+T2");
  e["pipeline"] = {{"schedule", "gpipe"}, {"stages", 11}, {"microbatches", 2}, {"recompute", true}};
  e.erase("pipemare");
  panel.setExperiment(e);
  ASSERT_TRUE(planned.wait(60000)) << panel.statusText().toStdString();
  EXPECT_EQ(panel.selectedSchedule(), "gpipe+recompute");
}

// The panel plans the design's partition: explicit boundaries and "time" (FLOPs stand in) reach
// the planner, which plans them rather than the parameter balance.
TEST(PlannerPanel, PlansTheDesignsPartition) {
  pm::test::app();
  pm::ui::PlannerPanel panel(kPipemare);
  QSignalSpy planned(&panel, &pm::ui::PlannerPanel::planned);
  nlohmann::json e = {{"model", {{"name", "cnn"}}},
                      {"data", {{"batch_size", 128}}},
                      {"pipeline", {{"schedule", "gpipe"}, {"stages", 2}, {"microbatches", 8},
                                    {"partition", {{"method", "explicit"}, {"boundaries", {1}}}}}}};
  panel.setExperiment(e);
  ASSERT_TRUE(planned.wait(60000)) << panel.statusText().toStdString();
  EXPECT_EQ(panel.plan().value("partition", std::string()), "explicit");
  EXPECT_EQ(panel.plan()["stage_profiles"][0]["end"], 1);
  e["pipeline"]["partition"] = {{"method", "time"}};
  panel.setExperiment(e);
  ASSERT_TRUE(planned.wait(60000)) << panel.statusText().toStdString();
  EXPECT_EQ(panel.plan().value("partition", std::string()), "flops");
}

// A design the planner rejects clears what the previous design's plan showed, and says why; a
// planner binary that cannot start says so instead of "planning..." for ever.
TEST(PlannerPanel, AFailedPlanClearsThePreviousOneAndSaysWhy) {
  pm::test::app();
  pm::ui::PlannerPanel panel(kPipemare);
  QSignalSpy planned(&panel, &pm::ui::PlannerPanel::planned);
  QSignalSpy failed(&panel, &pm::ui::PlannerPanel::failed);
  nlohmann::json e = {{"model", {{"name", "mlp"}}},
                      {"data", {{"batch_size", 32}}},
                      {"pipeline", {{"schedule", "gpipe"}, {"stages", 2}, {"microbatches", 4}}},
                      {"optimizer", {{"name", "sgd"}}}};
  panel.setExperiment(e);
  ASSERT_TRUE(planned.wait(60000)) << panel.statusText().toStdString();
  ASSERT_GT(panel.rowCount(), 0);
  ASSERT_GT(panel.ganttBoxes(), 0u);
  e["model"]["name"] = "no-such-model";
  panel.setExperiment(e);
  ASSERT_TRUE(failed.wait(60000)) << panel.statusText().toStdString();
  EXPECT_EQ(panel.rowCount(), 0);
  EXPECT_EQ(panel.ganttBoxes(), 0u);
  EXPECT_TRUE(panel.statusText().contains("no-such-model")) << panel.statusText().toStdString();

  pm::ui::PlannerPanel missing("/nonexistent/pipemare");
  QSignalSpy missingFailed(&missing, &pm::ui::PlannerPanel::failed);
  missing.setExperiment(e);
  ASSERT_TRUE(missingFailed.wait(10000)) << missing.statusText().toStdString();
  EXPECT_TRUE(missing.statusText().contains("cannot start /nonexistent/pipemare")) << missing.statusText().toStdString();
}

// A design that stops validating takes its plan, which describes the design as it was, off the
// screen and says why; the plan comes back once the design validates again.
TEST(PlannerPanel, AnInvalidDesignClearsThePlan) {
  pm::test::app();
  TempDir tmp;
  pm::ui::MainWindow w((tmp.dir / "runs.db").string(), kPresets, kPipemare);
  QSignalSpy planned(w.plannerPanel(), &pm::ui::PlannerPanel::planned);
  ASSERT_TRUE(w.designer()->loadFile(kPresets + "/quickstart.json"));
  ASSERT_TRUE(planned.wait(60000)) << w.plannerPanel()->statusText().toStdString();
  ASSERT_GT(w.plannerPanel()->rowCount(), 0);
  ASSERT_TRUE(w.designer()->setFieldText("pipeline.stages", "7"));  // mlp has 3 units
  ASSERT_FALSE(w.designer()->valid());
  EXPECT_EQ(w.plannerPanel()->rowCount(), 0);
  EXPECT_EQ(w.plannerPanel()->ganttBoxes(), 0u);
  EXPECT_TRUE(w.plannerPanel()->statusText().contains("not valid")) << w.plannerPanel()->statusText().toStdString();
  EXPECT_TRUE(w.plannerPanel()->statusText().contains("pipeline.stages")) << w.plannerPanel()->statusText().toStdString();
  ASSERT_TRUE(w.designer()->setFieldText("pipeline.stages", "2"));
  ASSERT_TRUE(planned.wait(60000)) << w.plannerPanel()->statusText().toStdString();
  EXPECT_GT(w.plannerPanel()->rowCount(), 0);
}

// Every menu shortcut of the workbench is its own (Refresh is F5, not the platform's Ctrl+R,
// which is Run on GNOME).
TEST(MainWindowShortcuts, EveryShortcutIsUnique) {
  pm::test::app();
  TempDir tmp;
  pm::ui::MainWindow w((tmp.dir / "runs.db").string(), kPresets, kPipemare);
  std::map<QString, QString> seen;
  for (auto* a : w.findChildren<QAction*>())
    for (const auto& k : a->shortcuts()) {
      const QString key = k.toString(QKeySequence::PortableText);
      auto [it, inserted] = seen.emplace(key, a->text());
      EXPECT_TRUE(inserted) << key.toStdString() << " is both " << it->second.toStdString() << " and "
                            << a->text().toStdString();
    }
  EXPECT_TRUE(seen.count("F5")) << "Refresh runs has F5";
}

// GUI tests keep away from the user's own preferences, data folder and run store.
TEST(UiTestEnvironment, PreferencesDataAndStoreAreInATemporaryFolder) {
  pm::test::app();
  const std::string config = std::getenv("XDG_CONFIG_HOME") ? std::getenv("XDG_CONFIG_HOME") : "";
  const std::string data = std::getenv("XDG_DATA_HOME") ? std::getenv("XDG_DATA_HOME") : "";
  ASSERT_NE(config.find("pipemare-ui-test-"), std::string::npos) << config;
  EXPECT_EQ(QSettings().fileName().toStdString().rfind(config, 0), 0u) << QSettings().fileName().toStdString();
  EXPECT_EQ(pm::dataHomeDir().rfind(data, 0), 0u) << pm::dataHomeDir();
  EXPECT_EQ(pm::defaultDatabasePath().rfind(data, 0), 0u) << pm::defaultDatabasePath();
}

// The whole loop with the mouse: Run clicked twice in the Design tab starts two runs in the Live
// tab, both finish recorded and are listed in the Runs tab (every view reads through the window's
// one store connection), and clicking a row shows that run's curve.
TEST(Workbench, ClickRunThenFindTheRunInTheRunsTab) {
  pm::test::app();
  TempDir tmp;
  const std::string db = (tmp.dir / "runs.db").string();
  pm::ui::MainWindow w(db, kPresets, kPipemare);
  w.resize(1400, 900);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_TRUE(w.designer()->loadFile(kPresets + "/tiny-synthetic.json"));
  auto* run = w.designer()->findChild<QPushButton*>("runButton");
  ASSERT_NE(run, nullptr);
  ASSERT_TRUE(run->isEnabled()) << w.designer()->validationMessage().toStdString();
  QSignalSpy finished(w.livePanel(), &pm::ui::LivePanel::runFinished);
  std::vector<pm::ui::LiveRunView*> views;
  for (int i = 0; i < 2; ++i) {
    QTest::mouseClick(run, Qt::LeftButton);
    ASSERT_NE(w.livePanel()->current(), nullptr) << "the click started no run";
    views.push_back(w.livePanel()->current());
    ASSERT_TRUE(finished.wait(120000)) << views.back()->logText().toStdString();
    EXPECT_EQ(finished.back().at(0).toString().toStdString(), "finished") << views.back()->logText().toStdString();
  }
  ASSERT_NE(views[0], views[1]) << "each click is a run of its own";

  auto* browser = w.runsBrowser();
  browser->refresh();
  ASSERT_EQ(browser->runCount(), 2);
  auto* table = browser->table();
  auto clickRow = [&](int row) {
    const QRect cell = table->visualRect(table->model()->index(row, 1));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell.center());
  };
  clickRow(0);  // newest first
  EXPECT_EQ(browser->shownRun(), views[1]->runId());
  clickRow(1);
  EXPECT_EQ(browser->shownRun(), views[0]->runId());
  ASSERT_GE(browser->lossPlot()->seriesCount(), 1);
  EXPECT_EQ(browser->lossPlot()->pointCount(0), views[0]->lossPoints());
}

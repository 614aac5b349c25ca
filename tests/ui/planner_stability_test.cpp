// The Design tab's stability edge: the planner's "Predict stability edge" button runs `pipemare plan
// --stability --probe` in the background and shows the probed edge of the design's schedule and the
// analytic bound, the ones the command itself gives, with the verdict on the design's lr, which
// follows the lr as the user types it;
// the button cancels a prediction running; the engine's error is shown with its message.
#include <gtest/gtest.h>

#include <algorithm>

#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QTabWidget>
#include <QTest>
#include <csignal>
#include <filesystem>
#include <sys/types.h>
#include <sys/wait.h>

#include "tests/support/test_support.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/designer/designer_view.h"
#include "ui/main/main_window.h"
#include "ui/planner/planner_panel.h"

// QTest::qWaitFor under ASSERT/EXPECT throughout: outside a QTest run, a failing QTRY_* returns
// from the test without a gtest failure.

namespace {

const QString kPresets = QString::fromStdString(pm::test::sourcePath("experiments"));
const QString kPipemare = QString::fromStdString(pm::test::binPath("pipemare"));

// A small design that the estimate takes about a second for: the mlp on generated data, two
// stages split by parameters (deterministic), pipemare with momentum (a delayed stage).
nlohmann::json smallDesign() {
  return {{"name", "stability-small"},
          {"model", {{"name", "mlp"}}},
          {"data", {{"dataset", "synthetic"}, {"synthetic_samples", 512}, {"synthetic_task", "classification"}, {"batch_size", 32}}},
          {"pipeline", {{"stages", 2}, {"microbatches", 4}, {"schedule", "pipemare"}, {"partition", {{"method", "parameters"}}}}},
          {"optimizer", {{"name", "sgd"}, {"lr", 0.05}, {"momentum", 0.9}}},
          {"training", {{"steps", 20}, {"seed", 1}}},
          {"execution", {{"mode", "single"}, {"threads_per_stage", 1}}}};
}

// `pipemare plan --stability FILE --probe --json`, run by the test itself: its JSON, null when it failed.
nlohmann::json stabilityOf(const std::string& file) {
  QProcess p;
  p.start(kPipemare, {"plan", "--stability", QString::fromStdString(file), "--timing", "1f1b", "--probe", "--stability-microbatches", "1", "--json"});
  if (!p.waitForFinished(120000) || p.exitCode() != 0) {
    ADD_FAILURE() << "plan --stability failed: " << p.readAllStandardError().toStdString();
    return nlohmann::json();
  }
  return nlohmann::json::parse(p.readAllStandardOutput().toStdString(), nullptr, false);
}

// The edge and the breaking stage the stability line shows ("... edge 0.2002 of pipemare (stage 0
// breaks first ..."); a negative edge when the line shows none.
std::pair<double, int> shownEdge(const QString& text) {
  const QRegularExpression re(QStringLiteral("edge ([0-9.eE+-]+) of [^ ]+ \\(stage (\\d+) breaks first"));
  const auto m = re.match(text);
  if (!m.hasMatch()) return {-1.0, -1};
  return {m.captured(1).toDouble(), m.captured(2).toInt()};
}

QString rateText(double v) { return QString::number(v, 'g', 4); }

}  // namespace

// The design opened from a file: Predict shows the probed edge of its schedule and the analytic
// bound that `plan --stability --probe --json` gives for the same file, below both at the design's
// lr, with every schedule's probed edge and what the probe rests on. Typing an lr above the edges
// turns the line into the warning at once (no new prediction); one below turns it back. Another
// edit (the momentum) asks for a new prediction.
TEST(PlannerStability, ShowsTheEdgeAndWarnsWhileTheLrIsTypedAboveIt) {
  pm::test::app();
  pm::test::TempDir tmp;
  const std::string file = tmp.file("small.json");
  ASSERT_TRUE(pm::test::writeFile(file, smallDesign().dump(2)));
  const nlohmann::json expected = stabilityOf(file);
  ASSERT_TRUE(expected.is_object() && expected["design"]["max_lr"].is_number()) << expected.dump();
  const double edge = expected["design"]["max_lr"].get<double>();
  const int stage = expected["design"]["breaking_stage"].get<int>();
  ASSERT_GT(edge, 0.05 * 1.5) << "the design's lr must be below the edge for this test";
  ASSERT_TRUE(expected["probe"]["design"]["edge"].is_number()) << expected["probe"].dump();
  const double probed = expected["probe"]["design"]["edge"].get<double>();
  ASSERT_GT(probed, 0.05) << "the design's lr must be below the probed edge for this test";

  pm::ui::MainWindow w((tmp.dir / "runs.db").string(), kPresets, kPipemare);
  w.resize(1400, 900);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  auto* tabs = qobject_cast<QTabWidget*>(w.centralWidget());
  ASSERT_TRUE(tabs);
  ASSERT_TRUE(pm::test::clickTab(tabs, "Design"));
  ASSERT_TRUE(w.designer()->loadFile(QString::fromStdString(file)));
  pm::ui::PlannerPanel* panel = w.plannerPanel();
  ASSERT_TRUE(QTest::qWaitFor([&] { return panel->rowCount() > 0; }, 60000)) << panel->statusText().toStdString();

  QPushButton* predict = pm::test::buttonLabelled(panel, "Predict stability edge");
  ASSERT_TRUE(predict);
  QTest::mouseClick(predict, Qt::LeftButton);
  EXPECT_TRUE(panel->stabilityRunning());
  EXPECT_EQ(predict->text(), "Cancel");
  EXPECT_TRUE(panel->stabilityText().contains("Predicting the stability edge")) << panel->stabilityText().toStdString();
  ASSERT_TRUE(QTest::qWaitFor([&] { return !panel->stabilityRunning(); }, 120000));
  ASSERT_TRUE(panel->stability().is_object()) << panel->stabilityText().toStdString();
  EXPECT_EQ(predict->text(), "Predict stability edge");

  // The edge shown is the command's, with its breaking stage, below it at lr 0.05.
  const QString below = panel->stabilityText();
  const auto [shown, shownStage] = shownEdge(below);
  EXPECT_NEAR(shown, edge, 1e-3 * edge) << below.toStdString();
  EXPECT_EQ(shownStage, stage) << below.toStdString();
  EXPECT_TRUE(below.contains("lr 0.05 is below the predicted stability edge")) << below.toStdString();
  EXPECT_TRUE(below.contains(QString("of %1").arg(QString::fromStdString(expected["design"]["schedule"].get<std::string>()))))
      << below.toStdString();
  EXPECT_FALSE(below.contains("above")) << below.toStdString();
  EXPECT_TRUE(below.contains(QString("lr 0.05 is below the probed stability edge %1 of pipemare").arg(rateText(probed))))
      << below.toStdString();
  for (const auto& row : expected["probe"]["schedules"])
    EXPECT_TRUE(below.contains(QString::fromStdString(row["schedule"].get<std::string>()) + " ")) << below.toStdString();
  // The trials are as long as the run (20 steps), below the probe's 50.
  EXPECT_EQ(expected["probe"]["steps"].get<int>(), 20);
  EXPECT_TRUE(below.contains("20-step trainings of each schedule")) << below.toStdString();
  auto* label = panel->findChild<QLabel*>("stabilityLabel");
  ASSERT_TRUE(label);
  EXPECT_EQ(label->toolTip().toStdString(), expected["probe"]["assumes"].get<std::string>());

  // The lr typed above both edges: the warnings, from the same prediction.
  auto* lr = qobject_cast<QLineEdit*>(w.designer()->fieldWidget("optimizer.lr"));
  ASSERT_TRUE(lr);
  const QString high = rateText(std::max(edge, probed) * 2.5), low = rateText(std::min(edge, probed) * 0.4);
  pm::test::retype(lr, high);
  EXPECT_TRUE(QTest::qWaitFor([&] { return panel->stabilityText().contains("above the probed stability edge"); }, 5000))
      << panel->stabilityText().toStdString();
  EXPECT_TRUE(panel->stabilityText().contains(QString("lr %1 is above the probed stability edge %2").arg(high, rateText(probed))))
      << panel->stabilityText().toStdString();
  EXPECT_TRUE(panel->stabilityText().contains(QString("lr %1 is above the predicted stability edge %2").arg(high, rateText(edge))))
      << panel->stabilityText().toStdString();
  EXPECT_FALSE(panel->stabilityRunning());
  EXPECT_TRUE(panel->stabilityCurrent());

  // Below it again: no warning.
  pm::test::retype(lr, low);
  EXPECT_TRUE(QTest::qWaitFor([&] { return panel->stabilityText().contains(QString("lr %1 is below").arg(low)); }, 5000))
      << panel->stabilityText().toStdString();
  EXPECT_FALSE(panel->stabilityText().contains("above")) << panel->stabilityText().toStdString();

  // Another design (the momentum changes the edge): the prediction does not hold for it.
  auto* momentum = qobject_cast<QLineEdit*>(w.designer()->fieldWidget("optimizer.momentum"));
  ASSERT_TRUE(momentum);
  pm::test::retype(momentum, "0.5");
  EXPECT_TRUE(QTest::qWaitFor([&] { return panel->stabilityText().contains("design changed: predict again"); }, 5000))
      << panel->stabilityText().toStdString();
  EXPECT_FALSE(panel->stabilityCurrent());
}

// A prediction cancelled with the same button: its process is killed (gone, not left running),
// the line says it was cancelled and shows no edge; predicting again then gives one.
TEST(PlannerStability, TheButtonCancelsThePredictionRunning) {
  pm::test::app();
  pm::ui::PlannerPanel panel(kPipemare);
  panel.resize(700, 700);
  ASSERT_TRUE(pm::test::showWindow(&panel));
  panel.setExperiment(smallDesign());
  QPushButton* button = pm::test::buttonLabelled(&panel, "Predict stability edge");
  ASSERT_TRUE(button);
  auto* process = panel.findChild<QProcess*>("stabilityProcess");
  ASSERT_TRUE(process);

  QTest::mouseClick(button, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return process->state() == QProcess::Running; }, 10000));
  const qint64 pid = process->processId();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(button->text(), "Cancel");
  QTest::mouseClick(button, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !panel.stabilityRunning(); }, 10000));
  EXPECT_EQ(process->exitStatus(), QProcess::CrashExit);  // killed, not finished
  EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(pid)));
  EXPECT_TRUE(panel.stabilityText().contains("cancelled")) << panel.stabilityText().toStdString();
  EXPECT_FALSE(panel.stability().is_object());
  EXPECT_EQ(shownEdge(panel.stabilityText()).first, -1.0);
  EXPECT_EQ(button->text(), "Predict stability edge");

  QTest::mouseClick(button, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !panel.stabilityRunning(); }, 120000));
  EXPECT_TRUE(panel.stability().is_object()) << panel.stabilityText().toStdString();
  EXPECT_GT(shownEdge(panel.stabilityText()).first, 0.0) << panel.stabilityText().toStdString();
}

// The engine refuses the design (exit 2): its message is shown, naming the field and "the design"
// rather than the temporary file it was handed over in.
TEST(PlannerStability, ShowsTheEnginesErrorMessage) {
  pm::test::app();
  pm::ui::PlannerPanel panel(kPipemare);
  ASSERT_TRUE(pm::test::showWindow(&panel));
  nlohmann::json bad = smallDesign();
  bad["pipeline"]["partition"]["method"] = "by-magic";
  panel.setExperiment(bad);
  QPushButton* button = pm::test::buttonLabelled(&panel, "Predict stability edge");
  ASSERT_TRUE(button);
  QTest::mouseClick(button, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !panel.stabilityRunning(); }, 60000));
  const QString text = panel.stabilityText();
  EXPECT_TRUE(text.contains("pipeline.partition.method")) << text.toStdString();
  EXPECT_TRUE(text.contains("by-magic")) << text.toStdString();
  EXPECT_TRUE(text.contains("the design")) << text.toStdString();
  EXPECT_FALSE(text.contains("stability-design.json")) << text.toStdString();
  EXPECT_FALSE(panel.stability().is_object());
}

// What a prediction holds for: the same design with another lr, name, notes or tags; not another
// momentum or timing model; and, with a pipemare warm-up (trained at the design's lr), not another lr.
TEST(PlannerStability, APredictionHoldsForTheDesignWhateverItsLrUnlessItWarmsUp) {
  using pm::ui::PlannerPanel;
  const nlohmann::json base = smallDesign();
  const std::string key = PlannerPanel::stabilityKey(base, "1f1b");
  nlohmann::json other = base;
  other["optimizer"]["lr"] = 0.7;
  other["name"] = "renamed";
  other["notes"] = "a note";
  other["tags"] = {"x"};
  EXPECT_EQ(PlannerPanel::stabilityKey(other, "1f1b"), key);
  EXPECT_NE(PlannerPanel::stabilityKey(base, "paper"), key);
  other = base;
  other["optimizer"]["momentum"] = 0.5;
  EXPECT_NE(PlannerPanel::stabilityKey(other, "1f1b"), key);

  nlohmann::json warm = base;
  warm["pipemare"] = {{"warmup_epochs", 1}};
  nlohmann::json warmOtherLr = warm;
  warmOtherLr["optimizer"]["lr"] = 0.7;
  EXPECT_NE(PlannerPanel::stabilityKey(warmOtherLr, "1f1b"), PlannerPanel::stabilityKey(warm, "1f1b"));
}

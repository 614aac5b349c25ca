// The Design tab with a model of one's own: "Open model..." (the file dialog answered as a user
// does) makes a TorchScript file the design's model and lists its units under the preset list,
// as `pipemare models --file` describes them; a design naming its files relative to itself runs
// and plans with them (absolute paths in what the run and the planner read); and a file dialog
// that lists the run store's folder leaves the window's store connection whole.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTest>

#include <filesystem>
#include <fstream>

#include "tests/support/script_models.h"
#include "tests/support/test_support.h"
#include "tests/ui/store_files.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "core/store/run_store.h"
#include "ui/designer/designer_view.h"
#include "ui/live/live_panel.h"
#include "ui/live/live_run_view.h"
#include "ui/main/main_window.h"
#include "ui/planner/planner_panel.h"
#include "ui/store/store_watcher.h"

namespace {

const QString kPresets = QString::fromStdString(pm::test::sourcePath("experiments"));
const QString kPipemare = QString::fromStdString(pm::test::binPath("pipemare"));

}  // namespace

TEST(DesignerModelFile, OpenModelMakesTheFileTheModelAndListsItsUnits) {
  pm::test::app();
  pm::test::TempDir tmp;
  pm::test::scriptMlp().save(tmp.file("mlp.pt"));
  pm::ui::DesignerView d(kPresets);
  d.setEngineBinary(kPipemare);
  ASSERT_TRUE(d.loadFile(kPresets + "/tiny-synthetic.json"));
  ASSERT_TRUE(pm::test::showWindow(&d, true));
  EXPECT_TRUE(d.modelUnitsText().isEmpty());  // a zoo model: nothing to list

  QPushButton* openModel = pm::test::buttonLabelled(&d, "Open model...");
  ASSERT_NE(openModel, nullptr);
  pm::test::ModalAnswers answers({pm::test::chooseFile(QString::fromStdString(tmp.file("mlp.pt")))});
  QTest::mouseClick(openModel, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return answers.done(); }, 15000)) << answers.failure();

  auto* model = d.findChild<QComboBox*>(QStringLiteral("model.name"));
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->currentText().toStdString(), "torchscript");
  auto* path = d.findChild<QLineEdit*>(QStringLiteral("model.path"));
  ASSERT_NE(path, nullptr);
  EXPECT_EQ(path->text().toStdString(), tmp.file("mlp.pt"));
  EXPECT_TRUE(d.valid()) << d.validationMessage().toStdString();
  ASSERT_TRUE(QTest::qWaitFor([&] { return d.modelUnitsText().contains("4 units"); }, 20000)) << d.modelUnitsText().toStdString();
  for (const char* unit : {"fc1", "bn1", "fc2", "head", "25,882 parameters"})
    EXPECT_TRUE(d.modelUnitsText().contains(QString::fromLatin1(unit))) << unit << " in " << d.modelUnitsText().toStdString();
  EXPECT_TRUE(d.isModified());
}

TEST(DesignerModelFile, RelativePathsAreTheFilesAndTensorDataShowsOutputShapes) {
  pm::test::app();
  pm::test::TempDir tmp;
  pm::test::scriptMlp().save(tmp.file("mlp.pt"));
  auto [x, y] = pm::test::imageProblem(32, 7);
  pm::test::saveTensorFile(tmp.file("train.pt"), x, y);
  const std::string exp = tmp.file("exp.json");
  std::ofstream(exp) << R"({"model": {"name": "torchscript", "path": "mlp.pt"},
 "data": {"dataset": "tensors", "path": "train.pt", "batch_size": 8}})";
  pm::ui::DesignerView d(kPresets);
  d.setEngineBinary(kPipemare);
  ASSERT_TRUE(pm::test::showWindow(&d));
  ASSERT_TRUE(d.loadFile(QString::fromStdString(exp)));
  EXPECT_TRUE(d.valid()) << d.validationMessage().toStdString();
  // The form shows the file as written; a run and the planner read absolute paths.
  EXPECT_EQ(d.findChild<QLineEdit*>(QStringLiteral("model.path"))->text().toStdString(), "mlp.pt");
  const auto j = d.runnableJson();
  EXPECT_EQ(j["model"]["path"], tmp.file("mlp.pt"));
  EXPECT_EQ(j["data"]["path"], tmp.file("train.pt"));
  // One sample of the tensor file through each unit: the output shapes.
  ASSERT_TRUE(QTest::qWaitFor([&] { return d.modelUnitsText().contains("[10]"); }, 20000)) << d.modelUnitsText().toStdString();
  EXPECT_TRUE(d.modelUnitsText().contains("[32]")) << d.modelUnitsText().toStdString();
  // A file that is not a model: the description says why.
  std::ofstream(tmp.file("notes.pt")) << "not a model";
  d.openModelFile(QString::fromStdString(tmp.file("notes.pt")));
  ASSERT_TRUE(QTest::qWaitFor([&] { return d.modelUnitsText().contains("not a readable TorchScript file"); }, 20000))
      << d.modelUnitsText().toStdString();
}

// The probe's steps, as a user takes them: a store beside the user's model files (`--db` in the
// project folder), Design > Open model... in that folder, a model that is not an nn.Sequential
// (the design turns invalid: status, Run and planner). Qt's file dialog lists the folder; had it read
// the store's files to tell their types, this process's locks would be gone and the next process
// to close the store would delete the log under the window. A run made by the command line after
// it shows in the Runs tab unasked, with the window's first connection and none of its files
// deleted.
TEST(DesignerModelFile, OpenModelBesideTheStoreAndAnInvalidRunKeepTheWindowsLog) {
  pm::test::app();
  ASSERT_TRUE(QFile::exists(kPipemare)) << "no pipemare binary at " << kPipemare.toStdString();
  pm::test::TempDir tmp;
  const std::string db = tmp.file("runs.db");
  {
    pm::RunStore store(db);
    store.setStatus(store.createRun("before the window", R"({"model":{"name":"mlp"}})"), "finished");
  }
  // The design and the model in the store's folder; the model's class is not nn.Sequential.
  std::filesystem::copy_file(pm::test::experimentPath("tiny-synthetic.json"), tmp.file("design.json"));
  torch::manual_seed(3);
  pm::test::scriptSequential({{"fc1", pm::test::scriptLinear("Fc1", 784, 10, false)}}, "__torch__.Net").save(tmp.file("net.pt"));

  pm::ui::MainWindow w(db, {}, kPipemare);
  w.resize(1400, 900);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  auto* tabs = qobject_cast<QTabWidget*>(w.centralWidget());
  ASSERT_NE(tabs, nullptr);
  ASSERT_TRUE(pm::test::clickTab(tabs, "Design"));
  ASSERT_TRUE(w.designer()->loadFile(QString::fromStdString(tmp.file("design.json"))));
  pm::RunStore* const connection = w.storeWatcher()->store();
  ASSERT_NE(connection, nullptr) << w.storeWatcher()->lastError();
  ASSERT_TRUE(pm::test::contains(pm::test::openStoreFiles(db), db + "-wal")) << pm::test::joined(pm::test::openStoreFiles(db));

  QPushButton* openModel = pm::test::buttonLabelled(w.designer(), "Open model...");
  ASSERT_NE(openModel, nullptr);
  {
    // The dialog starts in the design's folder, the store's: it lists the store's files.
    bool listedStore = false;
    pm::test::ModalAnswers answers({[&](QWidget* top) {
      auto* dialog = qobject_cast<QFileDialog*>(top);
      if (!dialog) return false;
      listedStore = QFileInfo(dialog->directory().absolutePath()) == QFileInfo(QString::fromStdString(tmp.path()));
      return pm::test::chooseFile(QString::fromStdString(tmp.file("net.pt")))(top);
    }});
    QTest::mouseClick(openModel, Qt::LeftButton);
    ASSERT_TRUE(QTest::qWaitFor([&] { return answers.done(); }, 15000)) << answers.failure();
    EXPECT_TRUE(listedStore) << "the dialog did not start in the store's folder";
  }
  // The file is checked as a run would read it: a model that is not an nn.Sequential makes the
  // design invalid, and the status, the Run button and the planner say so alike.
  ASSERT_TRUE(QTest::qWaitFor([&] { return !w.designer()->valid(); }, 20000)) << w.designer()->statusText().toStdString();
  EXPECT_TRUE(w.designer()->statusText().contains("not an nn.Sequential")) << w.designer()->statusText().toStdString();
  EXPECT_TRUE(w.designer()->statusText().contains("net.pt")) << w.designer()->statusText().toStdString();
  QPushButton* run = pm::test::buttonLabelled(w.designer(), "Run");
  ASSERT_NE(run, nullptr);
  EXPECT_FALSE(run->isEnabled());
  EXPECT_TRUE(QTest::qWaitFor([&] { return w.plannerPanel()->statusText().contains("not an nn.Sequential"); }, 5000))
      << w.plannerPanel()->statusText().toStdString();
  EXPECT_TRUE(pm::test::deletedStoreFiles(db).empty()) << pm::test::joined(pm::test::deletedStoreFiles(db));

  // Another process records a run and closes the store, the last connection but the window's.
  QString output;
  ASSERT_TRUE(pm::test::runEngine({"run", QString::fromStdString(pm::test::experimentPath("tiny-synthetic.json")), "--db", QString::fromStdString(db), "--quiet", "--name", "after", "--set",
                         "training.steps=4"},
                        &output))
      << output.toStdString();
  ASSERT_TRUE(pm::test::clickTab(tabs, "Runs"));
  pm::ui::RunsBrowser* browser = w.runsBrowser();
  EXPECT_TRUE(QTest::qWaitFor([&] { return pm::test::statusShown(browser, 0, "after") == "finished"; }, 20000))
      << "the Runs tab lists " << browser->runCount() << " runs (" << browser->lastError() << ")";
  EXPECT_TRUE(pm::test::deletedStoreFiles(db).empty()) << "store files deleted under the window: " << pm::test::joined(pm::test::deletedStoreFiles(db));
  EXPECT_EQ(w.storeWatcher()->reconnects(), 0) << "the window's connection lost its log";
  EXPECT_EQ(w.storeWatcher()->store(), connection);
}


// Data of another shape than the model takes: the design is invalid once its files are checked,
// the status names the data file, what the model's first unit expected and what it got, and Run
// is disabled; pointing the data at a file of the right shape (typed, as a user does) makes it
// valid again.
TEST(DesignerModelFile, DataTheModelCannotTakeMakesTheDesignInvalidSayingBothShapes) {
  pm::test::app();
  pm::test::TempDir tmp;
  pm::test::scriptMlp().save(tmp.file("mlp.pt"));
  pm::test::saveTensorFile(tmp.file("rgb.pt"), torch::randn({16, 3, 32, 32}), torch::zeros({16}, torch::kLong));
  auto [x, y] = pm::test::imageProblem(32, 7);
  pm::test::saveTensorFile(tmp.file("train.pt"), x, y);
  const std::string exp = tmp.file("exp.json");
  std::ofstream(exp) << R"({"model": {"name": "torchscript", "path": "mlp.pt"},
 "data": {"dataset": "tensors", "path": "rgb.pt", "batch_size": 8}})";
  pm::ui::DesignerView d(kPresets);
  d.setEngineBinary(kPipemare);
  ASSERT_TRUE(pm::test::showWindow(&d, true));
  ASSERT_TRUE(d.loadFile(QString::fromStdString(exp)));
  QSignalSpy validity(&d, &pm::ui::DesignerView::validityChanged);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !d.valid(); }, 20000)) << d.statusText().toStdString();
  const std::string status = d.statusText().toStdString();
  EXPECT_NE(status.find("rgb.pt"), std::string::npos) << status;
  EXPECT_NE(status.find("[3, 32, 32]"), std::string::npos) << status;  // what the data holds
  EXPECT_NE(status.find("784"), std::string::npos) << status;         // what fc1 takes
  EXPECT_EQ(status.find("The following operation failed"), std::string::npos) << status;
  EXPECT_EQ(d.validationMessage().toStdString(), status);
  ASSERT_FALSE(validity.isEmpty());
  EXPECT_FALSE(validity.last().at(0).toBool()) << "Run and the planner were told";
  QPushButton* run = pm::test::buttonLabelled(&d, "Run");
  ASSERT_NE(run, nullptr);
  EXPECT_FALSE(run->isEnabled());

  auto* data = d.findChild<QLineEdit*>(QStringLiteral("data.path"));
  ASSERT_NE(data, nullptr);
  data->setFocus();
  data->selectAll();
  QTest::keyClicks(data, QStringLiteral("train.pt"));
  QTest::keyClick(data, Qt::Key_Return);
  ASSERT_TRUE(QTest::qWaitFor([&] { return d.valid() && d.statusText().startsWith("valid") && !d.statusText().contains("checking"); }, 20000))
      << d.statusText().toStdString();
  EXPECT_TRUE(run->isEnabled());
}

// The Design tab with a model of one's own: "Open model..." (the file dialog answered as a user
// does) makes a TorchScript file the design's model and lists its units under the preset list,
// as `pipemare models --file` describes them; a design naming its files relative to itself runs
// and plans with them (absolute paths in what the run and the planner read).
#include <gtest/gtest.h>

#include <QComboBox>
#include <QLineEdit>
#include <QPushButton>
#include <QTest>

#include <filesystem>
#include <fstream>

#include "tests/support/script_models.h"
#include "tests/support/test_support.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/designer/designer_view.h"

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

// The Design tab's form as a user meets it in the workbench: the fields grouped under the
// sections of docs/experiment-format.md, in its order; the fields that do not apply to the design
// hidden (Adam's betas with SGD) until a choice makes them apply or "Show all fields" is ticked;
// a value the file sets never hidden; every field's meaning in its tooltip.
#include <gtest/gtest.h>

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QPalette>
#include <QLineEdit>
#include <QTabWidget>
#include <QTest>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/config/experiment_fields.h"
#include "tests/support/test_support.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/designer/designer_view.h"
#include "ui/main/main_window.h"

namespace {

const QString kPresets = QString::fromStdString(pm::test::sourcePath("experiments"));
const QString kPipemare = QString::fromStdString(pm::test::binPath("pipemare"));
using pm::test::TempDir;

// The workbench on its Design tab.
struct Workbench {
  TempDir tmp;
  std::unique_ptr<pm::ui::MainWindow> window;
  pm::ui::DesignerView* designer = nullptr;

  // False (and the reason in `failure`) when the window or its Design tab did not show.
  bool open(std::string* failure) {
    window = std::make_unique<pm::ui::MainWindow>((tmp.dir / "runs.db").string(), kPresets, kPipemare);
    window->resize(1400, 900);
    designer = window->designer();
    if (!pm::test::showWindow(window.get(), /*active=*/true)) {
      *failure = "the window did not show";
      return false;
    }
    if (!pm::test::clickTab(qobject_cast<QTabWidget*>(window->centralWidget()), "Design")) {
      *failure = "no Design tab";
      return false;
    }
    return true;
  }
  // Chooses a preset in the Preset list, as a user does; true when its design is on screen.
  bool choosePreset(const QString& file) {
    auto* presets = designer->findChild<QComboBox*>(QStringLiteral("presetBox"));
    return presets && pm::test::chooseText(presets, file) &&
           QTest::qWaitFor([&] { return designer->currentFile().endsWith(file); }, 5000) && formOnScreen();
  }
  // Waits until the form (rebuilt for a design) is on screen; false when it did not show in 5 s.
  bool formOnScreen() const {
    return QTest::qWaitFor([&] { return shown("name") && shown("optimizer.lr"); }, 5000);
  }
  QWidget* field(const char* path) const { return designer->fieldWidget(QString::fromLatin1(path)); }
  bool shown(const char* path) const {
    QWidget* w = field(path);
    return w && w->isVisible();
  }
  QCheckBox* showAll() const { return designer->findChild<QCheckBox*>(QStringLiteral("showAllFields")); }
  // The label of a field's row; nullptr when none.
  QLabel* labelOf(const char* path) const {
    QWidget* w = field(path);
    auto* rows = w ? qobject_cast<QFormLayout*>(w->parentWidget()->layout()) : nullptr;
    return rows ? qobject_cast<QLabel*>(rows->labelForField(w)) : nullptr;
  }
};

// Top to bottom on the screen.
int screenY(const QWidget* w) { return w->mapToGlobal(QPoint(0, 0)).y(); }

// The "## " headings of docs/experiment-format.md, in its order.
std::vector<std::string> docHeadings() {
  std::ifstream in(pm::test::sourcePath("docs/experiment-format.md"));
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("## ", 0) == 0) out.push_back(line.substr(3));
  return out;
}

}  // namespace

// The sections' group boxes are titled as the doc's sections, one per section of the format, top
// to bottom in the doc's order; within one, the fields come in the field table's order (not
// alphabetically: pipeline's stages before microbatches before schedule).
TEST(DesignerForm, SectionsAndFieldsComeInTheFormatsOrder) {
  pm::test::app();
  Workbench wb;
  std::string failure;
  ASSERT_TRUE(wb.open(&failure)) << failure;
  ASSERT_TRUE(wb.choosePreset("cnn-gpipe-p2.json"));
  ASSERT_NE(wb.showAll(), nullptr);
  QTest::mouseClick(wb.showAll(), Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return wb.shown("optimizer.beta1"); }, 5000)) << "Show all fields left beta1 hidden";

  // The sections' boxes, top to bottom, once laid out.
  ASSERT_TRUE(QTest::qWaitFor([&] { return wb.shown("execution.devices"); }, 5000));
  std::vector<QGroupBox*> boxes;
  for (QGroupBox* box : wb.designer->findChildren<QGroupBox*>())
    if (box->objectName().startsWith("section:") && !box->objectName().contains('.')) boxes.push_back(box);
  std::sort(boxes.begin(), boxes.end(), [](QGroupBox* a, QGroupBox* b) { return screenY(a) < screenY(b); });
  std::vector<std::string> titles;
  for (QGroupBox* box : boxes) titles.push_back(box->title().toStdString());
  // The doc's headings that are sections: those before the cross-field rules.
  std::vector<std::string> sections = docHeadings();
  sections.erase(std::find(sections.begin(), sections.end(), "Cross-field rules"), sections.end());
  ASSERT_EQ(sections.size(), 8u) << "the doc's sections changed";
  EXPECT_EQ(titles, sections);

  // Every field of the format is shown, in the field table's order within its section (once the
  // form is laid out: the first problem found, "" when none).
  const auto orderProblem = [&]() -> std::string {
    std::string previousSection;
    int previousY = -1;
    for (const pm::FieldInfo& f : pm::experimentFields()) {
      if (f.path == "model.options") continue;  // reserved: not a field to edit
      QWidget* w = wb.field(f.path.c_str());
      if (!w || !w->isVisible()) return f.path + " is not shown";
      const std::string section = f.path.substr(0, f.path.find('.') == std::string::npos ? 0 : f.path.find('.'));
      if (section == previousSection && screenY(w) <= previousY) return f.path + " is not below the field before it";
      previousSection = section;
      previousY = screenY(w);
    }
    return "";
  };
  EXPECT_TRUE(QTest::qWaitFor([&] { return orderProblem().empty(); }, 5000)) << orderProblem();
}

// The cnn-gpipe-p2 preset uses SGD: Adam's betas and eps are hidden. Choosing Adam shows them (even
// while another field is invalid); choosing SGD again hides them.
TEST(DesignerForm, AdamsBetasShowOnlyWhenAdamIsChosen) {
  pm::test::app();
  Workbench wb;
  std::string failure;
  ASSERT_TRUE(wb.open(&failure)) << failure;
  ASSERT_TRUE(wb.choosePreset("cnn-gpipe-p2.json"));
  ASSERT_TRUE(wb.designer->valid()) << wb.designer->validationMessage().toStdString();
  ASSERT_FALSE(wb.showAll()->isChecked());
  EXPECT_TRUE(wb.shown("optimizer.momentum"));
  EXPECT_TRUE(wb.shown("optimizer.lr"));
  for (const char* path : {"optimizer.beta1", "optimizer.beta2", "optimizer.eps", "data.context", "data.synthetic_task",
                           "pipemare.t1", "model.path"}) {
    ASSERT_NE(wb.field(path), nullptr) << path;
    EXPECT_FALSE(wb.shown(path)) << path << " shown with " << wb.designer->currentJson().dump();
  }
  EXPECT_TRUE(wb.showAll()->text().contains("hidden")) << wb.showAll()->text().toStdString();

  // An invalid learning rate does not hide what the optimizer's choice shows.
  pm::test::retype(wb.field("optimizer.lr"), "fast");
  ASSERT_TRUE(QTest::qWaitFor([&] { return !wb.designer->valid(); }, 5000));
  auto* optimizer = qobject_cast<QComboBox*>(wb.field("optimizer.name"));
  ASSERT_NE(optimizer, nullptr);
  ASSERT_TRUE(pm::test::chooseText(optimizer, "adam"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return wb.shown("optimizer.beta1"); }, 5000)) << "choosing adam left beta1 hidden";
  EXPECT_TRUE(wb.shown("optimizer.beta2"));
  EXPECT_TRUE(wb.shown("optimizer.eps"));
  // The preset's momentum 0.9 applied to sgd, not to adam: choosing adam set it back to its
  // default, hidden, and the status says so (Ctrl+Z would bring both back).
  ASSERT_TRUE(QTest::qWaitFor([&] { return !wb.shown("optimizer.momentum"); }, 5000)) << "momentum kept for adam";
  EXPECT_EQ(wb.designer->currentJson()["optimizer"]["momentum"], 0.0);
  EXPECT_NE(wb.designer->statusText().indexOf("optimizer.momentum set back to the default"), -1)
      << wb.designer->statusText().toStdString();
  pm::test::retype(wb.field("optimizer.lr"), "0.05");
  ASSERT_TRUE(QTest::qWaitFor([&] { return wb.designer->valid(); }, 5000)) << wb.designer->validationMessage().toStdString();

  ASSERT_TRUE(pm::test::chooseText(optimizer, "sgd"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return !wb.shown("optimizer.beta1"); }, 5000)) << "choosing sgd left beta1 shown";
  EXPECT_FALSE(wb.shown("optimizer.eps"));
  EXPECT_TRUE(wb.designer->valid()) << wb.designer->validationMessage().toStdString();
}

// Ticking "Show all fields" with the mouse shows the hidden fields, marked: greyed, with why they
// do not apply in their tooltips; unticking hides them again. A section none of whose fields
// applies says why.
TEST(DesignerForm, ShowAllFieldsShowsTheOthersWithWhyTheyDoNotApply) {
  pm::test::app();
  Workbench wb;
  std::string failure;
  ASSERT_TRUE(wb.open(&failure)) << failure;
  ASSERT_TRUE(wb.choosePreset("cnn-gpipe-p2.json"));
  ASSERT_FALSE(wb.shown("data.context"));
  auto* pipemare = wb.designer->findChild<QGroupBox*>("section:pipemare");
  ASSERT_NE(pipemare, nullptr);
  EXPECT_TRUE(pipemare->isVisible()) << "the pipemare section is gone";
  auto* note = pipemare->findChild<QLabel*>("sectionNote");
  ASSERT_NE(note, nullptr);
  EXPECT_TRUE(note->isVisible());
  EXPECT_TRUE(note->text().simplified().contains("only with pipeline.schedule=pipemare")) << note->text().toStdString();

  QTest::mouseClick(wb.showAll(), Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return wb.shown("data.context"); }, 5000)) << "Show all fields left data.context hidden";
  EXPECT_TRUE(wb.shown("pipemare.t1"));
  EXPECT_FALSE(note->isVisible());
  const QString tip = wb.field("data.context")->toolTip();
  EXPECT_TRUE(tip.contains("does not apply to this design: only with data.dataset=text, found data.dataset=fashion-mnist"))
      << tip.toStdString();
  QLabel* label = wb.labelOf("data.context");
  ASSERT_NE(label, nullptr);
  EXPECT_FALSE(label->property("applies").toBool()) << "a field that does not apply is not marked so";
  EXPECT_NE(label->palette().color(QPalette::WindowText), wb.labelOf("data.batch_size")->palette().color(QPalette::WindowText))
      << "a field that does not apply is drawn like one that does";
  EXPECT_TRUE(wb.labelOf("data.batch_size")->property("applies").toBool());
  EXPECT_FALSE(wb.field("data.batch_size")->toolTip().contains("does not apply"));

  QTest::mouseClick(wb.showAll(), Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !wb.shown("data.context"); }, 5000)) << "unticked, data.context stays shown";
  EXPECT_TRUE(note->isVisible());
  EXPECT_TRUE(wb.designer->editsSinceLoaded().empty()) << "showing fields edited the design";
}

// A value the file gives a field that does not apply (beta1 with SGD) is shown, called out, while
// the same field at its default would be hidden.
TEST(DesignerForm, AValueTheFileSetsIsShownWhereItDoesNotApply) {
  pm::test::app();
  Workbench wb;
  pm::Json j = pm::loadExperimentJson((kPresets + "/cnn-gpipe-p2.json").toStdString());
  j["optimizer"]["beta1"] = 0.95;
  const std::string file = (wb.tmp.dir / "sgd-with-beta1.json").string();
  ASSERT_TRUE(pm::test::writeFile(file, j.dump(2)));
  std::string failure;
  ASSERT_TRUE(wb.open(&failure)) << failure;
  ASSERT_TRUE(wb.designer->loadFile(QString::fromStdString(file)));
  ASSERT_TRUE(wb.formOnScreen());
  EXPECT_TRUE(wb.designer->valid()) << wb.designer->validationMessage().toStdString();
  EXPECT_TRUE(wb.shown("optimizer.beta1"));
  EXPECT_FALSE(wb.shown("optimizer.beta2"));
  QLabel* label = wb.labelOf("optimizer.beta1");
  ASSERT_NE(label, nullptr);
  EXPECT_TRUE(label->text().contains("does not apply")) << label->text().toStdString();
  EXPECT_TRUE(wb.field("optimizer.beta1")->toolTip().contains("only with optimizer.name adam or adamw"))
      << wb.field("optimizer.beta1")->toolTip().toStdString();
  // At its default value a field that does not apply has nothing to call out: hidden.
  pm::test::retype(wb.field("optimizer.beta1"), "0.9");
  EXPECT_TRUE(QTest::qWaitFor([&] { return !wb.shown("optimizer.beta1"); }, 5000));
}

// Every field's tooltip says what it means (the field table's help, the format's meaning).
TEST(DesignerForm, EveryFieldsTooltipHasItsMeaning) {
  pm::test::app();
  Workbench wb;
  std::string failure;
  ASSERT_TRUE(wb.open(&failure)) << failure;
  ASSERT_TRUE(wb.choosePreset("resnet20-pipemare.json"));
  QTest::mouseClick(wb.showAll(), Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return wb.showAll()->isChecked(); }, 5000));
  ASSERT_TRUE(wb.designer->valid()) << wb.designer->validationMessage().toStdString();
  int fields = 0;
  // The accepted values are the design's (pipeline.stages: resnet20's units).
  for (const pm::FieldInfo& f : pm::experimentFields(pm::experimentFromJson(wb.designer->currentJson()))) {
    if (f.path == "model.options") continue;
    SCOPED_TRACE(f.path);
    QWidget* w = wb.field(f.path.c_str());
    ASSERT_NE(w, nullptr);
    EXPECT_TRUE(w->isVisible());
    EXPECT_FALSE(f.help.empty());
    EXPECT_TRUE(w->toolTip().contains(QString::fromStdString(f.help))) << w->toolTip().toStdString();
    EXPECT_TRUE(w->toolTip().contains(QString::fromStdString(f.accepts))) << w->toolTip().toStdString();
    ++fields;
  }
  EXPECT_GT(fields, 50);
}

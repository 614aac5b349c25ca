#include <gtest/gtest.h>

#include <fstream>
#include <signal.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QTableView>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTest>
#include <QTimer>
#include <filesystem>
#include <map>
#include <memory>

#include "core/config/experiment.h"
#include "core/store/run_store.h"
#include "core/util/errors.h"
#include "core/util/paths.h"
#include "tests/support/test_support.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/designer/designer_view.h"
#include "ui/live/live_panel.h"
#include "ui/live/live_run_view.h"
#include "ui/main/main_window.h"
#include "ui/timeline/timeline_view.h"
#include "ui/planner/planner_panel.h"
#include "ui/plots/curve_plot.h"
#include "ui/runs/runs_browser.h"
#include "ui/store/store_watcher.h"

namespace fs = std::filesystem;

namespace {
const QString kPresets = QString::fromStdString(pm::test::sourcePath("experiments"));
const QString kPipemare = QString::fromStdString(pm::test::binPath("pipemare"));
using pm::test::TempDir;

// A field of the designer, found by its objectName (the field's dotted path).
template <class W>
W* field(QWidget* designer, const char* path) {
  return designer->findChild<W*>(QString::fromLatin1(path));
}

// Types `text` over what the designer's field holds (Ctrl+A, then the keys), as a user edits it.
// False when there is no such field or it is not a text field or spin box.
bool typeInto(QWidget* designer, const char* path, const QString& text) {
  QWidget* w = field<QWidget>(designer, path);
  if (!qobject_cast<QLineEdit*>(w) && !qobject_cast<QSpinBox*>(w)) return false;
  pm::test::retype(w, text);
  return true;
}

// Chooses `text` in the designer's choice field with the arrow keys. False when there is no such
// field or choice.
bool chooseIn(QWidget* designer, const char* path, const QString& text) {
  auto* box = field<QComboBox>(designer, path);
  return box && pm::test::chooseText(box, text);
}

// The main window's tabs.
QTabWidget* tabsOf(pm::ui::MainWindow& w) { return qobject_cast<QTabWidget*>(w.centralWidget()); }
}  // namespace

TEST(Designer, FlagsInvalidValuesInPlaceWithTheValidatorsMessage) {
  pm::test::app();
  pm::ui::DesignerView d(kPresets);
  ASSERT_TRUE(d.loadFile(kPresets + "/quickstart.json"));
  ASSERT_TRUE(pm::test::showWindow(&d));
  EXPECT_TRUE(d.valid()) << d.validationMessage().toStdString();
  auto* run = d.findChild<QPushButton*>("runButton");
  ASSERT_NE(run, nullptr);
  EXPECT_TRUE(run->isEnabled());

  // Too many stages for the model, typed: flagged at pipeline.stages with the range.
  ASSERT_TRUE(typeInto(&d, "pipeline.stages", "7"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return !d.valid(); }, 5000)) << "7 stages of mlp taken as valid";
  EXPECT_EQ(d.invalidField().toStdString(), "pipeline.stages");
  EXPECT_NE(d.validationMessage().toStdString().find("mlp has 3 partitionable units"), std::string::npos)
      << d.validationMessage().toStdString();
  EXPECT_TRUE(d.fieldWidget("pipeline.stages")->property("flagged").toBool());
  EXPECT_FALSE(d.fieldWidget("pipeline.microbatches")->property("flagged").toBool());
  EXPECT_TRUE(d.validationMessage().startsWith("quickstart.json (as edited): pipeline.stages"))
      << d.validationMessage().toStdString();
  EXPECT_FALSE(run->isEnabled());

  // A cross-field rule: T1 (its box ticked with Space) with a synchronous schedule. T1 does not
  // apply to gpipe: it is shown once "Show all fields" is ticked.
  ASSERT_TRUE(typeInto(&d, "pipeline.stages", "1"));
  EXPECT_TRUE(QTest::qWaitFor([&] { return d.valid(); }, 5000)) << d.validationMessage().toStdString();
  auto* t1 = field<QCheckBox>(&d, "pipemare.t1");
  ASSERT_NE(t1, nullptr);
  ASSERT_FALSE(t1->isVisible());
  auto* showAll = d.findChild<QCheckBox*>("showAllFields");
  ASSERT_NE(showAll, nullptr);
  QTest::mouseClick(showAll, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return t1->isVisible(); }, 5000)) << "Show all fields left T1 hidden";
  ASSERT_FALSE(t1->isChecked());
  QTest::keyClick(t1, Qt::Key_Space);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !d.valid(); }, 5000)) << "T1 ticked: " << t1->isChecked();
  EXPECT_EQ(d.invalidField().toStdString(), "pipemare.t1");
  ASSERT_TRUE(chooseIn(&d, "pipeline.schedule", "pipemare"));
  EXPECT_TRUE(QTest::qWaitFor([&] { return d.valid(); }, 5000)) << d.validationMessage().toStdString();

  // A number typed as text.
  ASSERT_TRUE(typeInto(&d, "optimizer.lr", "fast"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return !d.valid(); }, 5000));
  EXPECT_EQ(d.invalidField().toStdString(), "optimizer.lr");
  EXPECT_NE(d.validationMessage().toStdString().find("\"fast\""), std::string::npos);
  ASSERT_TRUE(typeInto(&d, "optimizer.lr", "0.1"));
  EXPECT_TRUE(QTest::qWaitFor([&] { return d.valid(); }, 5000)) << d.validationMessage().toStdString();
  EXPECT_TRUE(run->isEnabled());
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
  ASSERT_TRUE(pm::test::showWindow(&d));
  auto* box = field<QComboBox>(&d, "pipeline.schedule");
  ASSERT_NE(box, nullptr);
  EXPECT_EQ(box->currentText().toStdString(), "PipeMare");
  EXPECT_FALSE(d.valid());
  EXPECT_EQ(d.invalidField().toStdString(), "pipeline.schedule");
  EXPECT_NE(d.validationMessage().indexOf("pipemare"), -1) << d.validationMessage().toStdString();
  ASSERT_TRUE(chooseIn(&d, "pipeline.schedule", "pipemare"));
  EXPECT_TRUE(QTest::qWaitFor([&] { return d.valid(); }, 5000)) << d.validationMessage().toStdString();

  EXPECT_FALSE(d.saveTo(QString::fromStdString((tmp.dir / "no-such-dir" / "x.json").string())));
  EXPECT_NE(d.validationMessage().indexOf("cannot be written"), -1) << d.validationMessage().toStdString();
  const QString saved = QString::fromStdString((tmp.dir / "mine.json").string());
  ASSERT_TRUE(d.saveTo(saved));
  ASSERT_TRUE(typeInto(&d, "pipeline.stages", "99"));
  EXPECT_TRUE(QTest::qWaitFor([&] { return d.validationMessage().startsWith("mine.json (as edited)"); }, 5000))
      << d.validationMessage().toStdString();
}

// A field's widget follows the format's type, not how the file wrote the value: quickstart writes
// "epochs": 1, a number that takes fractions, so it is a text field that keeps 0.5; stages stays
// an integer spin box.
TEST(Designer, NumberFieldsWrittenAsIntegersTakeFractions) {
  pm::test::app();
  pm::ui::DesignerView d(kPresets);
  ASSERT_TRUE(d.loadFile(kPresets + "/quickstart.json"));
  ASSERT_TRUE(pm::test::showWindow(&d));
  ASSERT_TRUE(d.currentJson()["training"]["epochs"].is_number_integer());  // as the file writes it
  EXPECT_NE(field<QLineEdit>(&d, "training.epochs"), nullptr);
  EXPECT_NE(field<QSpinBox>(&d, "pipeline.stages"), nullptr);
  ASSERT_TRUE(typeInto(&d, "training.epochs", "0.5"));
  EXPECT_TRUE(QTest::qWaitFor([&] { return d.currentJson()["training"]["epochs"] == 0.5; }, 5000))
      << d.currentJson()["training"]["epochs"].dump();
  EXPECT_TRUE(d.valid()) << d.validationMessage().toStdString();
  EXPECT_DOUBLE_EQ(d.currentJson()["training"]["epochs"].get<double>(), 0.5);
}

// The wheel turned over a drop-down or spin box of the form that does not have the keyboard focus
// scrolls the form and leaves the value alone (scrolling past a field must not edit the design);
// once the field has the focus (tabbed into), the wheel changes it.
TEST(Designer, TheWheelChangesAFieldOnlyWhenItHasTheFocus) {
  pm::test::app();
  pm::ui::DesignerView d(kPresets);
  ASSERT_TRUE(d.loadFile(kPresets + "/cnn-gpipe-p2.json"));
  d.resize(700, 450);  // the form taller than its scroll area
  ASSERT_TRUE(pm::test::showWindow(&d, /*active=*/true));
  auto* split = field<QComboBox>(&d, "data.eval_split");
  auto* stages = field<QSpinBox>(&d, "pipeline.stages");
  auto* scroll = d.findChild<QScrollArea*>();
  ASSERT_NE(split, nullptr);
  ASSERT_NE(stages, nullptr);
  ASSERT_NE(scroll, nullptr);
  QScrollBar* bar = scroll->verticalScrollBar();
  ASSERT_TRUE(QTest::qWaitFor([&] { return bar->maximum() > 0; }, 5000)) << "the form fits: nothing to scroll";
  ASSERT_FALSE(split->hasFocus());
  ASSERT_FALSE(stages->hasFocus());
  ASSERT_EQ(split->currentText().toStdString(), "test");
  ASSERT_EQ(stages->value(), 2);

  const int top = bar->value();
  pm::test::wheel(split, -1);  // towards the user: the form scrolls down
  ASSERT_TRUE(QTest::qWaitFor([&] { return bar->value() > top; }, 5000)) << "the form did not scroll: " << bar->value();
  EXPECT_EQ(split->currentText().toStdString(), "test");
  const int scrolled = bar->value();
  pm::test::wheel(stages, 1);  // away from the user: the form scrolls back up
  ASSERT_TRUE(QTest::qWaitFor([&] { return bar->value() < scrolled; }, 5000)) << "the form did not scroll: " << bar->value();
  EXPECT_EQ(stages->value(), 2);
  EXPECT_TRUE(d.editsSinceLoaded().empty()) << d.editsSinceLoaded().front();

  split->setFocus(Qt::TabFocusReason);
  ASSERT_TRUE(QTest::qWaitFor([&] { return split->hasFocus(); }, 5000)) << "the drop-down did not take the focus";
  pm::test::wheel(split, -1);
  EXPECT_TRUE(QTest::qWaitFor([&] { return split->currentText() == "train"; }, 5000)) << split->currentText().toStdString();
  const auto edits = d.editsSinceLoaded();
  EXPECT_EQ(edits, (std::vector<std::string>{"data.eval_split=\"train\""}));
}

// A field the file gives the wrong JSON type ("stages": "four") is fixed by typing the value: what
// is typed takes the field's type from the format, so 2 is the integer 2, which validates and is
// saved as a number.
TEST(Designer, AValueTypedOverAWronglyTypedOneTakesTheFieldsType) {
  pm::test::app();
  TempDir tmp;
  pm::Json j = pm::loadExperimentJson((kPresets + "/quickstart.json").toStdString());
  j["pipeline"]["stages"] = "four";
  const std::string file = (tmp.dir / "string-stages.json").string();
  ASSERT_TRUE(pm::test::writeFile(file, j.dump(2)));
  pm::ui::DesignerView d(kPresets);
  ASSERT_TRUE(d.loadFile(QString::fromStdString(file)));
  ASSERT_TRUE(pm::test::showWindow(&d));
  EXPECT_FALSE(d.valid());
  EXPECT_EQ(d.invalidField().toStdString(), "pipeline.stages");
  EXPECT_NE(d.validationMessage().indexOf("\"four\""), -1) << d.validationMessage().toStdString();
  EXPECT_EQ(d.currentJson()["pipeline"]["stages"], pm::Json("four"));  // untouched, as the file gives it

  ASSERT_TRUE(typeInto(&d, "pipeline.stages", "2"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return d.valid(); }, 5000)) << d.validationMessage().toStdString();
  EXPECT_TRUE(d.currentJson()["pipeline"]["stages"].is_number_integer()) << d.currentJson()["pipeline"]["stages"].dump();
  const std::string saved = (tmp.dir / "fixed.json").string();
  ASSERT_TRUE(d.saveTo(QString::fromStdString(saved)));
  const pm::Json written = pm::Json::parse(pm::test::readFile(saved), nullptr, false);
  ASSERT_FALSE(written.is_discarded()) << pm::test::readFile(saved);
  EXPECT_TRUE(written["pipeline"]["stages"].is_number_integer()) << written["pipeline"]["stages"].dump();
  EXPECT_EQ(written["pipeline"]["stages"], pm::Json(2));
}

// A key the format does not have (a misspelt optimizer.lr) is flagged like an invalid value, with
// the validator's own message in its tooltip, and stays flagged while another field is the
// validator's first problem.
TEST(Designer, AnUnknownKeyIsFlaggedWithTheValidatorsMessage) {
  pm::test::app();
  TempDir tmp;
  pm::Json j = pm::loadExperimentJson((kPresets + "/quickstart.json").toStdString());
  j["optimizer"]["lerning_rate"] = 0.1;
  // What `pipemare validate` says about the file.
  std::string expected;
  try {
    static_cast<void>(pm::experimentFromJson(j, "unknown-key.json"));
  } catch (const pm::Error& e) {
    expected = e.problem();
  }
  ASSERT_NE(expected.find("unknown key \"lerning_rate\""), std::string::npos) << expected;
  const std::string file = (tmp.dir / "unknown-key.json").string();
  ASSERT_TRUE(pm::test::writeFile(file, j.dump(2)));
  pm::ui::DesignerView d(kPresets);
  ASSERT_TRUE(d.loadFile(QString::fromStdString(file)));
  ASSERT_TRUE(pm::test::showWindow(&d));
  QWidget* unknown = d.fieldWidget("optimizer.lerning_rate");
  ASSERT_NE(unknown, nullptr);
  EXPECT_FALSE(d.valid());
  EXPECT_EQ(d.invalidField().toStdString(), "optimizer.lerning_rate");
  EXPECT_NE(d.validationMessage().indexOf(QString::fromStdString(expected)), -1) << d.validationMessage().toStdString();
  EXPECT_TRUE(unknown->property("flagged").toBool());
  EXPECT_EQ(unknown->toolTip().toStdString(), expected);

  ASSERT_TRUE(typeInto(&d, "pipeline.stages", "7"));  // mlp has 3 units: reported before the unknown key
  ASSERT_TRUE(QTest::qWaitFor([&] { return d.invalidField() == "pipeline.stages"; }, 5000)) << d.invalidField().toStdString();
  EXPECT_TRUE(unknown->property("flagged").toBool()) << "the unknown key is not flagged after another error";
  EXPECT_EQ(unknown->toolTip().toStdString(), expected);
}

// A run of an edited design carries the edits in its notes (the file's notes describe the file),
// under the name confirmed in the name dialog; an unedited one keeps the file's notes; saving makes
// the saved file the reference.
TEST(Designer, ARunOfAnEditedDesignSaysWhatWasEdited) {
  pm::test::app();
  pm::ui::DesignerView d(kPresets);
  ASSERT_TRUE(d.loadFile(kPresets + "/tiny-synthetic.json"));
  ASSERT_TRUE(pm::test::showWindow(&d));
  auto* run = d.findChild<QPushButton*>("runButton");
  ASSERT_NE(run, nullptr);
  QSignalSpy spy(&d, &pm::ui::DesignerView::runRequested);
  const std::string fileNotes = d.currentJson()["notes"].get<std::string>();
  QTest::mouseClick(run, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return spy.count() == 1; }, 5000)) << "Run clicked: " << spy.count() << " runs requested";
  EXPECT_EQ(nlohmann::json::parse(spy.at(0).at(0).toString().toStdString())["notes"], fileNotes);
  ASSERT_TRUE(typeInto(&d, "data.batch_size", "16"));
  ASSERT_TRUE(typeInto(&d, "optimizer.lr", "0.1"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return d.valid() && run->isEnabled(); }, 5000)) << d.validationMessage().toStdString();
  {
    pm::test::ModalAnswers answers({pm::test::enterText("tiny edited")});
    QTest::mouseClick(run, Qt::LeftButton);
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  ASSERT_TRUE(QTest::qWaitFor([&] { return spy.count() == 2; }, 5000)) << "Run clicked: " << spy.count() << " runs requested";
  EXPECT_EQ(nlohmann::json::parse(spy.at(1).at(0).toString().toStdString())["notes"],
            "From preset tiny-synthetic (file " + (kPresets + "/tiny-synthetic.json").toStdString() +
                "); edited: data.batch_size=16, optimizer.lr=0.1");
  TempDir tmp;
  ASSERT_TRUE(d.saveTo(QString::fromStdString((tmp.dir / "mine.json").string())));
  EXPECT_TRUE(d.editsSinceLoaded().empty());
}

// An edit marks the design unsaved: "*" in the window title (Qt's [*]) and on the Design tab;
// Ctrl+S (File > Save experiment) writes the open file and clears both marks.
TEST(Designer, AnEditMarksTheWindowAndCtrlSSavesTheOpenFile) {
  pm::test::app();
  TempDir tmp;
  const fs::path file = tmp.dir / "mine.json";
  fs::copy_file((kPresets + "/tiny-synthetic.json").toStdString(), file);
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);  // Save writes it
  pm::ui::MainWindow w((tmp.dir / "runs.db").string(), kPresets, kPipemare);
  w.resize(1400, 860);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  ASSERT_TRUE(w.designer()->loadFile(QString::fromStdString(file.string())));
  QTabWidget* tabs = tabsOf(w);
  ASSERT_TRUE(pm::test::clickTab(tabs, "Design"));
  EXPECT_TRUE(w.windowTitle().contains("[*]")) << w.windowTitle().toStdString();
  EXPECT_FALSE(w.isWindowModified()) << "a design just opened is marked unsaved";
  ASSERT_TRUE(typeInto(w.designer(), "data.batch_size", "16"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.isWindowModified(); }, 5000)) << "an edit did not mark the window title";
  EXPECT_EQ(tabs->tabText(0).toStdString(), "Design *");
  QTest::keyClick(&w, Qt::Key_S, Qt::ControlModifier);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !w.isWindowModified(); }, 5000)) << "Ctrl+S left the window title marked";
  EXPECT_EQ(tabs->tabText(0).toStdString(), "Design");
  EXPECT_EQ(w.designer()->currentFile().toStdString(), file.string());
  std::ifstream in(file);
  const nlohmann::json saved = nlohmann::json::parse(in);
  EXPECT_EQ(saved["data"]["batch_size"], 16) << "Ctrl+S did not write the edit to " << file.string();
}

// The window title names the open design's file: File > Open experiment... (Ctrl+O) with the file
// chosen in the dialog puts its name in the title, with the unsaved-edits mark after it.
TEST(Designer, TheWindowTitleNamesTheOpenFile) {
  pm::test::app();
  TempDir tmp;
  const fs::path file = tmp.dir / "my-design.json";
  fs::copy_file((kPresets + "/tiny-synthetic.json").toStdString(), file);
  pm::ui::MainWindow w((tmp.dir / "runs.db").string(), kPresets, kPipemare);
  w.resize(1400, 860);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  EXPECT_TRUE(w.windowTitle().endsWith("[*] - PipeMare Workbench")) << w.windowTitle().toStdString();
  {
    pm::test::ModalAnswers answers({pm::test::chooseFile(QString::fromStdString(file.string()))});
    QTest::keyClick(&w, Qt::Key_O, Qt::ControlModifier);
    ASSERT_TRUE(QTest::qWaitFor([&] { return answers.done(); }, 15000)) << answers.failure();
  }
  EXPECT_EQ(w.designer()->currentFile().toStdString(), file.string());
  EXPECT_EQ(w.windowTitle().toStdString(), "my-design.json[*] - PipeMare Workbench");
}

// Choosing another preset with unsaved edits asks first: Cancel keeps the edits and puts the
// presets list back; Discard opens the other preset.
TEST(Designer, AnotherPresetWithUnsavedEditsAsksFirst) {
  pm::test::app();
  pm::ui::DesignerView d(kPresets);
  ASSERT_TRUE(d.loadFile(kPresets + "/tiny-synthetic.json"));
  ASSERT_TRUE(pm::test::showWindow(&d, /*active=*/true));
  auto* presets = d.findChild<QComboBox*>("presetBox");
  ASSERT_NE(presets, nullptr);
  const int shown = presets->currentIndex();
  ASSERT_GT(presets->count(), 1);
  const Qt::Key toAnother = shown + 1 < presets->count() ? Qt::Key_Down : Qt::Key_Up;
  ASSERT_TRUE(typeInto(&d, "data.batch_size", "16"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return d.isModified(); }, 5000)) << "an edit did not mark the design unsaved";
  QString question;
  {
    pm::test::ModalAnswers answers({pm::test::pressButton(QMessageBox::Cancel, &question)});
    QTest::keyClick(presets, toAnother);
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  EXPECT_TRUE(question.contains("Discard")) << question.toStdString();
  EXPECT_EQ(presets->currentIndex(), shown) << "Cancel left the presets list on another preset";
  EXPECT_TRUE(d.isModified());
  EXPECT_EQ(d.currentFile(), kPresets + "/tiny-synthetic.json");
  EXPECT_EQ(d.currentJson()["data"]["batch_size"], 16) << "Cancel lost the edit";
  {
    pm::test::ModalAnswers answers({pm::test::pressButton(QMessageBox::Discard)});
    QTest::keyClick(presets, toAnother);
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  EXPECT_NE(presets->currentIndex(), shown) << "Discard did not open the other preset";
  EXPECT_FALSE(d.isModified());
}

// Closing the window with unsaved design edits asks: Cancel keeps the window and the edit, Save
// writes them to the open file and closes.
TEST(Designer, ClosingTheWindowWithUnsavedEditsAsksToSaveThem) {
  pm::test::app();
  TempDir tmp;
  const QString file = QString::fromStdString((tmp.dir / "mine.json").string());
  ASSERT_TRUE(QFile::copy(kPresets + "/tiny-synthetic.json", file));
  QFile::setPermissions(file, QFile::ReadOwner | QFile::WriteOwner);
  pm::ui::MainWindow w((tmp.dir / "runs.db").string(), kPresets, kPipemare);
  auto* d = w.findChild<pm::ui::DesignerView*>();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->loadFile(file));
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  ASSERT_TRUE(typeInto(d, "data.batch_size", "24"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return d->isModified(); }, 5000));
  QAction* quit = pm::test::actionNamed(&w, "Quit");
  ASSERT_NE(quit, nullptr);
  QString question;
  {
    pm::test::ModalAnswers answers({pm::test::pressButton(QMessageBox::Cancel, &question)});
    QTest::keySequence(&w, quit->shortcut());
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  EXPECT_TRUE(question.contains("not saved to mine.json")) << question.toStdString();
  EXPECT_TRUE(w.isVisible()) << "Cancel closed the window";
  EXPECT_TRUE(d->isModified());
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));  // the shortcut reaches the active window only
  {
    pm::test::ModalAnswers answers({pm::test::pressButton(QMessageBox::Save)});
    QTest::keySequence(&w, quit->shortcut());
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  ASSERT_TRUE(QTest::qWaitFor([&] { return !w.isVisible(); }, 5000)) << "Save did not close the window";
  EXPECT_EQ(pm::loadExperimentJson(file.toStdString())["data"]["batch_size"], 24) << "the edit was not saved";
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
  EXPECT_EQ(runs[0].status, pm::RunStatus::Finished);
  EXPECT_EQ(view.runId(), runs[0].id);
  // The log ends with the run's summary line (its status and headline figures, as a stopped run's
  // ends with why it stopped), not with "finished: finished".
  const QStringList lines = view.logText().split('\n', Qt::SkipEmptyParts);
  ASSERT_FALSE(lines.isEmpty());
  EXPECT_TRUE(lines.back().startsWith(QStringLiteral("run %1 finished: final loss ").arg(runs[0].id))) << view.logText().toStdString();
  EXPECT_TRUE(lines.back().contains("samples/s over")) << view.logText().toStdString();
  EXPECT_FALSE(lines.contains(QStringLiteral("finished: finished"))) << view.logText().toStdString();
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
  view.resize(1000, 700);
  ASSERT_TRUE(pm::test::showWindow(&view));
  QPushButton* stop = pm::test::buttonLabelled(&view, "Stop");
  ASSERT_NE(stop, nullptr);
  ASSERT_TRUE(stop->isEnabled());
  QTest::mouseClick(stop, Qt::LeftButton);
  ASSERT_TRUE(run.done->wait(30000)) << view.logText().toStdString();
  EXPECT_FALSE(stop->isEnabled()) << "Stop stays enabled after the run ended";
  EXPECT_EQ(view.status().toStdString(), "stopped") << view.logText().toStdString();
  pm::RunStore store(run.db.toStdString());
  auto runs = store.listRuns();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, pm::RunStatus::Stopped);
  // The log's last line: the run, its status and why (the engine's message).
  const QStringList lines = view.logText().split('\n', Qt::SkipEmptyParts);
  ASSERT_FALSE(lines.isEmpty());
  EXPECT_TRUE(lines.back().startsWith(QStringLiteral("run %1 stopped: stopped by request").arg(runs[0].id))) << view.logText().toStdString();
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
  EXPECT_EQ(pm::RunStore(run.db.toStdString()).getRun(1)->status, pm::RunStatus::Interrupted);
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

  // On a GPU each stage's CUDA allocator figure is drawn beside its accounted total (dotted), in
  // MiB, with its own legend entry.
  pm::ui::LiveRunView gpu(kPipemare, "");
  for (int step = 1; step <= 2; ++step)
    gpu.onEvent({{"type", "stage"}, {"stage", 0}, {"step", step}, {"memory", {{"total", 6 << 20}, {"peak", 8 << 20}}},
                 {"cuda", {{"allocated", 10 << 20}, {"allocated_peak", 12 << 20}, {"reserved", 32 << 20}}}});
  ASSERT_EQ(gpu.memoryPlot()->seriesCount(), 3);  // total, peak, CUDA allocated
  EXPECT_EQ(gpu.memoryPlot()->seriesName(2).toStdString(), "stage 0 CUDA allocated");
  EXPECT_EQ(gpu.memoryPlot()->pointCount(2), 2u);
  gpu.memoryPlot()->replot();
  EXPECT_GE(gpu.memoryPlot()->valueRange().second, 10.0) << "the axis leaves CUDA's 10 MiB out";

  // A synchronous run says why its delay and weight-gap plots stay empty.
  pm::ui::LiveRunView sync(kPipemare, "");
  sync.onEvent({{"type", "run_started"}, {"config", {{"pipeline", {{"schedule", "gpipe"}}}}}});
  EXPECT_TRUE(sync.gapPlot()->title().contains("gpipe is synchronous")) << sync.gapPlot()->title().toStdString();
  sync.gapPlot()->replot();
  EXPECT_TRUE(sync.gapPlot()->showsEmptyText());
  EXPECT_TRUE(sync.gapPlot()->emptyText().contains("gpipe is synchronous")) << sync.gapPlot()->emptyText().toStdString();
}

// A run whose ranks hold two stages each (zb-v on 2 ranks: stages 0 and 3 on rank 0, 1 and 2 on
// rank 1) draws memory per rank: a rank's point of a step is its stages' totals summed, drawn
// once both have reported; the peaks summed dashed; the bars of now are per rank.
TEST(LiveRun, RanksHoldingSeveralStagesDrawTheirMemoryTogether) {
  pm::test::app();
  pm::ui::LiveRunView view(kPipemare, "");
  nlohmann::json partition = nlohmann::json::array();
  for (int st : {0, 1, 2, 3}) partition.push_back({{"stage", st}, {"rank", st == 0 || st == 3 ? 0 : 1}, {"units", {st, st + 1}}});
  view.onEvent({{"type", "run_started"}, {"config", {{"pipeline", {{"schedule", "zb-v"}}}}}, {"partition", partition}});
  EXPECT_TRUE(view.memoryPlot()->title().contains("per rank")) << view.memoryPlot()->title().toStdString();
  for (int step = 1; step <= 2; ++step)
    for (int st : {0, 1, 2}) {  // stage 3 of step 2 has not reported yet
      const int mib = st + 1;
      view.onEvent({{"type", "stage"}, {"stage", st}, {"step", step}, {"rank", st == 0 ? 0 : 1},
                    {"memory", {{"weights", mib << 20}, {"activations", 0}, {"total", mib << 20}, {"peak", (2 * mib) << 20}}}});
    }
  view.onEvent({{"type", "stage"}, {"stage", 3}, {"step", 1}, {"rank", 0},
                {"memory", {{"weights", 4 << 20}, {"activations", 0}, {"total", 4 << 20}, {"peak", 12 << 20}}}});
  ASSERT_EQ(view.memoryPlot()->seriesCount(), 4);  // each rank's total and peak
  std::map<std::string, int> index;
  for (int i = 0; i < 4; ++i) index[view.memoryPlot()->seriesName(i).toStdString()] = i;
  ASSERT_TRUE(index.count("rank 0 (stages 0, 3)") && index.count("rank 1 (stages 1, 2)") && index.count("rank 0 (stages 0, 3) peak"))
      << view.memoryPlot()->seriesName(0).toStdString();
  EXPECT_EQ(view.memoryPlot()->pointCount(index["rank 1 (stages 1, 2)"]), 2u);
  EXPECT_EQ(view.memoryPlot()->pointCount(index["rank 0 (stages 0, 3)"]), 1u);  // step 2 waits for stage 3
  view.memoryPlot()->replot();
  // Rank 0's peaks summed, 2 + 12 MiB, above any one stage's 12 MiB.
  EXPECT_GT(view.memoryPlot()->valueRange().second, 13.9);
  EXPECT_LT(view.memoryPlot()->valueRange().second, 16.0);
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
    auto w = std::make_unique<pm::ui::MainWindow>(db.toStdString(), kPresets, kPipemare);
    w->resize(1400, 860);
    ASSERT_TRUE(pm::test::showWindow(w.get(), /*active=*/true));
    auto* view = w->livePanel()->startRun(exp, "left running");
    ASSERT_TRUE(QTest::qWaitFor([&] { return view->lossPoints() >= 3; }, 60000)) << view->logText().toStdString();
    ASSERT_LT(view->lossPoints(), 400u) << "the run ended before the window was closed";
    pid = view->pid();
    ASSERT_GT(pid, 0);
    // File > Quit by its shortcut; the window asks what to do with the run, and "Leave running" is clicked.
    QAction* quit = pm::test::actionNamed(w.get(), "Quit");
    ASSERT_NE(quit, nullptr);
    ASSERT_FALSE(quit->shortcut().isEmpty());
    QString question;
    {
      pm::test::ModalAnswers answers({pm::test::pressButtonLabelled("Leave running", &question)});
      QTest::keySequence(w.get(), quit->shortcut());
      EXPECT_TRUE(answers.done()) << answers.failure();
    }
    EXPECT_TRUE(question.contains("still in progress")) << question.toStdString();
    ASSERT_TRUE(QTest::qWaitFor([&] { return !w->isVisible(); }, 5000)) << "the window did not close";
  }
  EXPECT_EQ(::kill(static_cast<pid_t>(pid), 0), 0) << "the run ended with the window";
  // The run's record, read every 100 ms (a timer: each read opens the store) for at most 120 s,
  // until it ends.
  std::string status;
  size_t points = 0;
  QTimer reader;
  QObject::connect(&reader, &QTimer::timeout, [&] {
    try {
      pm::RunStore store(db.toStdString(), /*readOnly=*/true);
      auto runs = store.listRuns();
      if (runs.size() == 1 && runs[0].status != pm::RunStatus::Running && runs[0].status != pm::RunStatus::Created) {
        points = store.loadMetric(runs[0].id, "train/loss").size();
        status = pm::toString(runs[0].status);
        reader.stop();
      }
    } catch (const std::exception&) {
      // written meanwhile: read again at the next tick
    }
  });
  reader.start(100);
  EXPECT_TRUE(QTest::qWaitFor([&] { return !status.empty(); }, 120000)) << "the run did not end within 120 s";
  EXPECT_EQ(status, "finished");
  EXPECT_EQ(points, 400u);
}

// The planner's timing model follows the experiment's pipeline.timing when that changes, and keeps
// the user's choice while it does not.
// The window destroyed while a run streams its events (no close dialog, as when a test or the
// program ends): the run's process is stopped and its last lines and its end reach no view that
// is being destroyed.
TEST(LiveRun, WindowDestroyedDuringARunStopsItWithoutTouchingTheDeadView) {
  pm::test::app();
  TempDir tmp;
  const QString db = QString::fromStdString((tmp.dir / "runs.db").string());
  const QString exp = QString::fromStdString((tmp.dir / "streaming.json").string());
  {
    QFile f(exp);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(R"({"name": "streaming", "model": {"name": "mlp"}, "data": {"dataset": "synthetic", "batch_size": 32},
               "pipeline": {"stages": 2, "microbatches": 2, "schedule": "pipemare"},
               "training": {"steps": 5000, "log_interval": 1}})");
  }
  qint64 pid = 0;
  {
    auto w = std::make_unique<pm::ui::MainWindow>(db.toStdString(), kPresets, kPipemare);
    ASSERT_TRUE(pm::test::showWindow(w.get()));
    auto* view = w->livePanel()->startRun(exp, "streaming");
    ASSERT_TRUE(QTest::qWaitFor([&] { return view->lossPoints() >= 3; }, 60000)) << view->logText().toStdString();
    pid = view->pid();
    ASSERT_GT(pid, 0);
  }
  // Gone with the window (terminated, or killed after 5 s), not left running.
  EXPECT_TRUE(QTest::qWaitFor([&] { return ::kill(static_cast<pid_t>(pid), 0) != 0; }, 15000)) << "pid " << pid;
}

TEST(PlannerPanel, TimingFollowsTheExperimentsPipelineTiming) {
  pm::test::app();
  pm::ui::PlannerPanel panel("/nonexistent/pipemare");
  ASSERT_TRUE(pm::test::showWindow(&panel));
  auto* timing = panel.findChild<QComboBox*>();  // the panel's one choice: the timing model
  ASSERT_NE(timing, nullptr);
  nlohmann::json e = {{"pipeline", {{"schedule", "pipemare"}, {"stages", 2}, {"microbatches", 4}, {"timing", "paper"}}}};
  panel.setExperiment(e);
  EXPECT_EQ(panel.timingModel(), "paper");
  // The user looks at the other model: chosen in the box with the keyboard.
  ASSERT_TRUE(pm::test::chooseData(timing, QStringLiteral("1f1b")));
  ASSERT_TRUE(QTest::qWaitFor([&] { return panel.timingModel() == "1f1b"; }, 5000)) << panel.timingModel().toStdString();
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
// says its time-weighted utilization (ResNet-20, P = 11, N = 2, 1 of 3 epochs as gpipe:
// 1 / (f/u_gpipe + (1-f)/u_pipemare) with f = 1/3 and the plan's own long-run figures, 0.375 were
// the stages equal).
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
  const auto& rows = panel.plan()["schedules"];  // gpipe first
  ASSERT_EQ(rows[0]["schedule"], "gpipe");
  nlohmann::json mare;
  for (const auto& r : rows)
    if (r["schedule"] == "pipemare") mare = r;
  ASSERT_TRUE(mare.is_object());
  const double hybrid = 1.0 / ((1.0 / 3) / rows[0]["utilization"].get<double>() + (2.0 / 3) / mare["utilization"].get<double>());
  EXPECT_TRUE(panel.statusText().contains(
      QString("With its warm-up (33 % of the run as gpipe) pipemare's utilization is %1").arg(hybrid, 0, 'f', 3)))
      << panel.statusText().toStdString();
  EXPECT_NEAR(panel.plan().value("utilization_pipemare_with_warmup", 0.0), hybrid, 1e-9);
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
  EXPECT_TRUE(missing.statusText().contains("cannot start the planner /nonexistent/pipemare")) << missing.statusText().toStdString();
}

// A design that stops validating takes its plan, which describes the design as it was, off the
// screen and says why; the plan comes back once the design validates again.
TEST(PlannerPanel, AnInvalidDesignClearsThePlan) {
  pm::test::app();
  TempDir tmp;
  pm::ui::MainWindow w((tmp.dir / "runs.db").string(), kPresets, kPipemare);
  w.resize(1400, 860);
  ASSERT_TRUE(pm::test::showWindow(&w));
  ASSERT_TRUE(pm::test::clickTab(tabsOf(w), "Design"));
  QSignalSpy planned(w.plannerPanel(), &pm::ui::PlannerPanel::planned);
  ASSERT_TRUE(w.designer()->loadFile(kPresets + "/quickstart.json"));
  ASSERT_TRUE(planned.wait(60000)) << w.plannerPanel()->statusText().toStdString();
  ASSERT_GT(w.plannerPanel()->rowCount(), 0);
  ASSERT_TRUE(typeInto(w.designer(), "pipeline.stages", "7"));  // mlp has 3 units
  ASSERT_TRUE(QTest::qWaitFor([&] { return !w.designer()->valid(); }, 5000)) << "7 stages of mlp taken as valid";
  EXPECT_EQ(w.plannerPanel()->rowCount(), 0);
  EXPECT_EQ(w.plannerPanel()->ganttBoxes(), 0u);
  EXPECT_TRUE(w.plannerPanel()->statusText().contains("not valid")) << w.plannerPanel()->statusText().toStdString();
  EXPECT_TRUE(w.plannerPanel()->statusText().contains("pipeline.stages")) << w.plannerPanel()->statusText().toStdString();
  ASSERT_TRUE(typeInto(w.designer(), "pipeline.stages", "2"));
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
    for (const auto& k : a->shortcutContext() == Qt::WidgetShortcut ? QList<QKeySequence>() : a->shortcuts()) {  // a widget's own key (a plot's R) cannot clash
      const QString key = k.toString(QKeySequence::PortableText);
      auto [it, inserted] = seen.emplace(key, a->text());
      EXPECT_TRUE(inserted) << key.toStdString() << " is both " << it->second.toStdString() << " and "
                            << a->text().toStdString();
    }
  EXPECT_TRUE(seen.count("F5")) << "Refresh runs has F5";
}

// The menus read File, Edit, Run, View, Help; View's Ctrl+1 .. Ctrl+6 show the tabs in order and
// Ctrl+Tab the next one (wrapping around); Help > Keyboard shortcuts (Ctrl+/) lists every shortcut
// of the menus.
TEST(MainWindowShortcuts, TheKeyboardSwitchesTabsAndHelpListsTheShortcuts) {
  pm::test::app();
  TempDir tmp;
  pm::ui::MainWindow w((tmp.dir / "runs.db").string(), kPresets, kPipemare);
  w.resize(1400, 860);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  QStringList menus;
  for (QAction* a : w.menuBar()->actions()) menus << QString(a->text()).remove(QLatin1Char('&'));
  EXPECT_EQ(menus.join(", ").toStdString(), "File, Edit, Run, View, Help");

  QTabWidget* tabs = tabsOf(w);
  ASSERT_TRUE(pm::test::clickTab(tabs, "Design"));
  QTest::keyClick(&w, Qt::Key_2, Qt::ControlModifier);
  EXPECT_TRUE(QTest::qWaitFor([&] { return tabs->currentWidget() == w.livePanel(); }, 5000))
      << "Ctrl+2 shows " << tabs->tabText(tabs->currentIndex()).toStdString();
  QTest::keyClick(&w, Qt::Key_Tab, Qt::ControlModifier);
  EXPECT_TRUE(QTest::qWaitFor([&] { return tabs->currentWidget() == w.runsBrowser(); }, 5000))
      << "Ctrl+Tab after Live shows " << tabs->tabText(tabs->currentIndex()).toStdString();
  QTest::keyClick(&w, Qt::Key_6, Qt::ControlModifier);
  EXPECT_TRUE(QTest::qWaitFor([&] { return tabs->currentWidget() == w.timelineView(); }, 5000))
      << "Ctrl+6 shows " << tabs->tabText(tabs->currentIndex()).toStdString();
  QTest::keyClick(&w, Qt::Key_Tab, Qt::ControlModifier);
  EXPECT_TRUE(QTest::qWaitFor([&] { return tabs->currentIndex() == 0; }, 5000))
      << "Ctrl+Tab after the last tab shows " << tabs->tabText(tabs->currentIndex()).toStdString();

  QString listed;
  {
    pm::test::ModalAnswers answers({pm::test::pressButton(QMessageBox::Ok, &listed)});
    QTest::keyClick(&w, Qt::Key_Slash, Qt::ControlModifier);
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  int shortcuts = 0;
  for (QMenu* menu : w.menuBar()->findChildren<QMenu*>(QString(), Qt::FindDirectChildrenOnly))
    for (QAction* a : menu->actions())
      for (const QKeySequence& k : a->shortcuts()) {
        ++shortcuts;
        EXPECT_NE(listed.indexOf(k.toString(QKeySequence::NativeText).toHtmlEscaped()), -1)
            << k.toString(QKeySequence::NativeText).toStdString() << " (" << a->text().toStdString() << ") is not listed";
      }
  EXPECT_GE(shortcuts, 16);
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
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  QTabWidget* tabs = tabsOf(w);
  ASSERT_NE(tabs, nullptr);
  ASSERT_TRUE(w.designer()->loadFile(kPresets + "/tiny-synthetic.json"));
  auto* run = w.designer()->findChild<QPushButton*>("runButton");
  ASSERT_NE(run, nullptr);
  ASSERT_TRUE(run->isEnabled()) << w.designer()->validationMessage().toStdString();
  QSignalSpy finished(w.livePanel(), &pm::ui::LivePanel::runFinished);
  std::vector<pm::ui::LiveRunView*> views;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(pm::test::clickTab(tabs, "Design"));
    QTest::mouseClick(run, Qt::LeftButton);
    ASSERT_NE(w.livePanel()->current(), nullptr) << "the click started no run";
    EXPECT_EQ(tabs->currentWidget(), w.livePanel()) << "the Live tab did not come up";
    views.push_back(w.livePanel()->current());
    ASSERT_TRUE(finished.wait(120000)) << views.back()->logText().toStdString();
    EXPECT_EQ(finished.back().at(0).toString().toStdString(), "finished") << views.back()->logText().toStdString();
  }
  ASSERT_NE(views[0], views[1]) << "each click is a run of its own";

  ASSERT_TRUE(pm::test::clickTab(tabs, "Runs"));
  auto* browser = w.runsBrowser();
  QTest::keyClick(&w, Qt::Key_F5);  // File > Refresh runs
  ASSERT_EQ(browser->runCount(), 2);
  auto* table = browser->table();
  pm::test::clickCell(table, 0, 1);  // newest first
  EXPECT_TRUE(QTest::qWaitFor([&] { return browser->shownRun() == views[1]->runId(); }, 5000)) << browser->shownRun();
  pm::test::clickCell(table, 1, 1);
  EXPECT_TRUE(QTest::qWaitFor([&] { return browser->shownRun() == views[0]->runId(); }, 5000)) << browser->shownRun();
  ASSERT_GE(browser->lossPlot()->seriesCount(), 1);
  EXPECT_EQ(browser->lossPlot()->pointCount(0), views[0]->lossPoints());
}

// The legends list the stages in order whichever stage reports first (stage 1's report of a step
// often arrives before stage 0's): each stage's series is made in stage order at the first report.
TEST(LiveRun, LegendsListTheStagesInOrder) {
  pm::test::app();
  pm::ui::LiveRunView view(kPipemare, "");
  view.onEvent({{"type", "run_started"},
                {"config", {{"pipeline", {{"schedule", "1f1b"}}}}},
                {"partition", {{{"stage", 0}, {"rank", 0}}, {{"stage", 1}, {"rank", 1}}}}});
  for (int step = 1; step <= 2; ++step)
    for (int stage : {1, 0})
      view.onEvent({{"type", "stage"}, {"stage", stage}, {"step", step}, {"utilization", 0.5 + 0.1 * stage}, {"compute_s", 0.5},
                    {"wait_s", 0.3}, {"idle_s", 0.2}, {"memory", {{"total", (stage + 1) << 20}, {"peak", (stage + 2) << 20}}}});
  ASSERT_EQ(view.memoryPlot()->seriesCount(), 4);
  EXPECT_EQ(view.memoryPlot()->seriesName(0).toStdString(), "stage 0");
  EXPECT_EQ(view.memoryPlot()->seriesName(1).toStdString(), "stage 1");
  EXPECT_EQ(view.memoryPlot()->seriesName(2).toStdString(), "stage 0 peak");
  EXPECT_EQ(view.waitPlot()->seriesName(0).toStdString(), "stage 0 waiting");
  // Each series holds its own stage's values.
  EXPECT_EQ(view.memoryPlot()->pointCount(1), 2u);
  view.memoryPlot()->replot();
  EXPECT_GE(view.memoryPlot()->valueRange().second, 3.0);
}

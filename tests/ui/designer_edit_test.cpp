// The Design tab's editing aids, used as a user does: undo and redo of field edits (Edit menu,
// Ctrl+Z / Ctrl+Shift+Z), File > Open Recent, and the name, tags and notes of a run started from
// an edited preset (run_naming.h, confirmed in a dialog before the run starts).
#include <gtest/gtest.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFile>
#include <QFileInfo>
#include <QFileDialog>
#include <QDir>
#include <QInputDialog>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTest>
#include <QUndoStack>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "tests/support/test_support.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/designer/designer_view.h"
#include "ui/designer/run_naming.h"
#include "ui/main/main_window.h"

namespace {
const QString kPresets = QString::fromStdString(pm::test::sourcePath("experiments"));
const QString kPipemare = QString::fromStdString(pm::test::binPath("pipemare"));
using pm::test::TempDir;

template <class W>
W* field(QWidget* designer, const char* path) {
  return designer->findChild<W*>(QString::fromLatin1(path));
}

QTabWidget* tabsOf(pm::ui::MainWindow& w) { return qobject_cast<QTabWidget*>(w.centralWidget()); }

// A menu action's text as the user reads it.
std::string plain(const QAction* a) { return a ? QString(a->text()).remove(QLatin1Char('&')).toStdString() : "(none)"; }

// An answer to the run-name dialog: its proposed name kept in *proposed, then OK clicked.
pm::test::ModalAnswers::Step acceptName(QString* proposed) {
  return [proposed](QWidget* top) {
    auto* dialog = qobject_cast<QInputDialog*>(top);
    QLineEdit* edit = dialog ? dialog->findChild<QLineEdit*>() : nullptr;
    auto* buttons = dialog ? dialog->findChild<QDialogButtonBox*>() : nullptr;
    if (!edit || !buttons || !buttons->button(QDialogButtonBox::Ok)) return false;
    *proposed = edit->text();
    QTest::mouseClick(buttons->button(QDialogButtonBox::Ok), Qt::LeftButton);
    return true;
  };
}

// An answer to an input dialog: Cancel clicked.
pm::test::ModalAnswers::Step cancelDialog() {
  return [](QWidget* top) {
    auto* dialog = qobject_cast<QInputDialog*>(top);
    auto* buttons = dialog ? dialog->findChild<QDialogButtonBox*>() : nullptr;
    if (!buttons || !buttons->button(QDialogButtonBox::Cancel)) return false;
    QTest::mouseClick(buttons->button(QDialogButtonBox::Cancel), Qt::LeftButton);
    return true;
  };
}

std::vector<std::string> tagsOf(const nlohmann::json& j) { return j.value("tags", std::vector<std::string>()); }

bool has(const std::vector<std::string>& tags, const std::string& tag) {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}
}  // namespace

// The name says what the design is; tags naming another schedule, model or process layout are
// dropped and the design's schedule and model added; the notes say where it came from.
TEST(DesignerRunNaming, NameTagsAndNotesFollowTheDesign) {
  pm::Json design = pm::experimentToJson(
      pm::experimentFromJson(pm::loadExperimentJson((kPresets + "/cnn-gpipe-p2.json").toStdString()), "cnn-gpipe-p2.json"));
  const pm::Json source = design;
  EXPECT_EQ(pm::ui::designRunName(design), "cnn P=2 N=8 gpipe");
  design["pipeline"]["schedule"] = "pipemare";
  design["pipemare"]["t1"] = true;
  EXPECT_EQ(pm::ui::designRunName(design), "cnn P=2 N=8 pipemare T1");
  design["pipemare"]["t2"] = true;
  design["pipemare"]["warmup_epochs"] = 0.5;
  design["pipeline"]["microbatches"] = 4;
  EXPECT_EQ(pm::ui::designRunName(design), "cnn P=2 N=4 pipemare T1+T2 warm-up=0.5");

  EXPECT_EQ(pm::ui::designRunTags({"preset", "gpipe", "multi-process", "resnet20"}, design),
            (std::vector<std::string>{"preset", "multi-process", "pipemare", "cnn"}));
  design["execution"]["mode"] = "single";
  EXPECT_EQ(pm::ui::designRunTags({"preset", "gpipe", "multi-process", "pipemare"}, design),
            (std::vector<std::string>{"preset", "pipemare", "cnn"}));

  const pm::ui::RunIdentity id = pm::ui::editedRunIdentity(design, source, "/x/cnn-gpipe-p2.json", {"pipeline.schedule=\"pipemare\""});
  EXPECT_EQ(id.name, "cnn P=2 N=4 pipemare T1+T2 warm-up=0.5");
  EXPECT_EQ(id.tags, (std::vector<std::string>{"preset", "pipemare", "cnn"}));
  EXPECT_EQ(id.notes, "From preset cnn-gpipe-p2 (file /x/cnn-gpipe-p2.json); edited: pipeline.schedule=\"pipemare\"");

  // A name, tags and notes the user gave the design are the user's.
  design["name"] = "mine";
  design["tags"] = {"gpipe", "keep"};
  design["notes"] = "my notes";
  const pm::ui::RunIdentity own = pm::ui::editedRunIdentity(design, source, "/x/cnn-gpipe-p2.json", {"name=\"mine\""});
  EXPECT_EQ(own.name, "mine");
  EXPECT_EQ(own.tags, (std::vector<std::string>{"gpipe", "keep", "pipemare", "cnn"}));
  EXPECT_EQ(own.notes, "my notes\nFrom preset cnn-gpipe-p2 (file /x/cnn-gpipe-p2.json); edited: name=\"mine\"");
}

// Each field edit is one step of Edit > Undo (Ctrl+Z), which puts the old value back in the field,
// validates and marks the design as any edit does; Ctrl+Shift+Z redoes it. Undoing back to the
// saved design clears the "*", saving makes the saved design the unmarked one, opening another
// design empties the stack.
TEST(DesignerEdit, CtrlZUndoesFieldEditsAndCtrlShiftZRedoesThem) {
  pm::test::app();
  TempDir tmp;
  const QString file = QString::fromStdString(tmp.file("mine.json"));
  ASSERT_TRUE(QFile::copy(kPresets + "/cnn-gpipe-p2.json", file));
  QFile::setPermissions(file, QFile::ReadOwner | QFile::WriteOwner);
  pm::ui::MainWindow w(tmp.file("runs.db"), kPresets, kPipemare);
  w.resize(1400, 860);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  pm::ui::DesignerView* d = w.designer();
  ASSERT_TRUE(d->loadFile(file));
  QTabWidget* tabs = tabsOf(w);
  ASSERT_TRUE(pm::test::clickTab(tabs, "Design"));
  QAction* undo = d->undoAction();
  QAction* redo = d->redoAction();
  EXPECT_FALSE(undo->isEnabled()) << "a design just opened has something to undo";

  auto* batch = field<QSpinBox>(d, "data.batch_size");
  auto* schedule = field<QComboBox>(d, "pipeline.schedule");
  auto* stages = field<QSpinBox>(d, "pipeline.stages");
  ASSERT_TRUE(batch && schedule && stages);
  ASSERT_EQ(batch->value(), 128);
  ASSERT_EQ(stages->value(), 2);
  QTest::mouseClick(batch, Qt::LeftButton);  // the keyboard focus, as a user clicks into the field
  pm::test::retype(batch, "16");
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.isWindowModified(); }, 5000)) << "the edit did not mark the window";
  EXPECT_EQ(plain(undo), "Undo edit data.batch_size");

  // Ctrl+Z in the field just typed into: the Edit menu's undo, not the text field's own.
  QTest::keyClick(batch, Qt::Key_Z, Qt::ControlModifier);
  EXPECT_TRUE(QTest::qWaitFor([&] { return batch->value() == 128; }, 5000)) << "Ctrl+Z left " << batch->value();
  EXPECT_TRUE(QTest::qWaitFor([&] { return !w.isWindowModified(); }, 5000)) << "undone back to the file, still marked";
  EXPECT_EQ(tabs->tabText(0).toStdString(), "Design");
  EXPECT_EQ(plain(redo), "Redo edit data.batch_size");
  QTest::keyClick(batch, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
  EXPECT_TRUE(QTest::qWaitFor([&] { return batch->value() == 16; }, 5000)) << "Ctrl+Shift+Z left " << batch->value();
  EXPECT_TRUE(w.isWindowModified());
  EXPECT_EQ(d->currentJson()["data"]["batch_size"], 16);

  // Two more edits, the second one invalid: each is its own step back.
  ASSERT_TRUE(pm::test::chooseText(schedule, "1f1b"));
  EXPECT_EQ(plain(undo), "Undo edit pipeline.schedule");
  pm::test::retype(stages, "99");
  ASSERT_TRUE(QTest::qWaitFor([&] { return !d->valid(); }, 5000)) << "99 stages taken as valid";
  EXPECT_EQ(d->invalidField().toStdString(), "pipeline.stages");
  QTest::keyClick(batch, Qt::Key_Z, Qt::ControlModifier);
  EXPECT_TRUE(QTest::qWaitFor([&] { return d->valid() && stages->value() == 2; }, 5000))
      << stages->value() << ": " << d->validationMessage().toStdString();
  QTest::keyClick(batch, Qt::Key_Z, Qt::ControlModifier);
  EXPECT_TRUE(QTest::qWaitFor([&] { return schedule->currentText() == "gpipe"; }, 5000)) << schedule->currentText().toStdString();
  EXPECT_EQ(batch->value(), 16);
  EXPECT_TRUE(w.isWindowModified());

  // Saved at 16: undoing away from the saved design marks it, redoing back unmarks it.
  QTest::keyClick(&w, Qt::Key_S, Qt::ControlModifier);
  ASSERT_TRUE(QTest::qWaitFor([&] { return !w.isWindowModified(); }, 5000)) << "Ctrl+S left the window marked";
  EXPECT_TRUE(d->undoStack()->isClean());
  QTest::keyClick(batch, Qt::Key_Z, Qt::ControlModifier);
  EXPECT_TRUE(QTest::qWaitFor([&] { return batch->value() == 128 && w.isWindowModified(); }, 5000)) << batch->value();
  QTest::keyClick(batch, Qt::Key_Y, Qt::ControlModifier);
  EXPECT_TRUE(QTest::qWaitFor([&] { return batch->value() == 16 && !w.isWindowModified(); }, 5000)) << batch->value();

  // Another design: nothing of this one to undo.
  ASSERT_TRUE(d->loadFile(kPresets + "/tiny-synthetic.json"));
  EXPECT_FALSE(undo->isEnabled());
  EXPECT_EQ(plain(undo), "Undo");
  // Undo is the Design tab's only: in another tab Ctrl+Z changes no design unseen.
  ASSERT_TRUE(pm::test::clickTab(tabs, "Design"));
  pm::test::retype(field<QSpinBox>(d, "data.batch_size"), "24");
  ASSERT_TRUE(QTest::qWaitFor([&] { return undo->isEnabled(); }, 5000));
  ASSERT_TRUE(pm::test::clickTab(tabs, "Runs"));
  EXPECT_FALSE(undo->isEnabled()) << "Undo offered while the Design tab is hidden";
  QTest::keyClick(&w, Qt::Key_Z, Qt::ControlModifier);
  EXPECT_EQ(d->currentJson()["data"]["batch_size"], 24);
}

// Switching a schedule keeps what still applies and sets back what does not (issue 46 item 6):
// pipemare with T1 and T2 ticked switched to gpipe stays valid, T1 and T2 back at their defaults
// in the same step, the status says so; one Ctrl+Z brings back pipemare with both ticked.
TEST(DesignerEdit, SwitchingTheScheduleDropsWhatNoLongerAppliesInOneUndoableStep) {
  pm::test::app();
  TempDir tmp;
  pm::ui::MainWindow w(tmp.file("runs.db"), kPresets, kPipemare);
  w.resize(1400, 860);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  pm::ui::DesignerView* d = w.designer();
  ASSERT_TRUE(d->loadFile(kPresets + "/resnet20-pipemare.json"));  // pipemare, t1 and t2 on, decay 0.1
  ASSERT_TRUE(pm::test::clickTab(tabsOf(w), "Design"));
  auto* schedule = field<QComboBox>(d, "pipeline.schedule");
  auto* t1 = field<QCheckBox>(d, "pipemare.t1");
  auto* t2 = field<QCheckBox>(d, "pipemare.t2");
  auto* batch = field<QSpinBox>(d, "data.batch_size");
  ASSERT_TRUE(schedule && t1 && t2 && batch);
  ASSERT_TRUE(t1->isChecked() && t2->isChecked());
  ASSERT_TRUE(d->valid()) << d->validationMessage().toStdString();

  ASSERT_TRUE(pm::test::pickText(schedule, "gpipe"));  // from the open list: one change
  ASSERT_TRUE(QTest::qWaitFor([&] { return !t1->isChecked() && !t2->isChecked(); }, 5000)) << "T1/T2 kept on gpipe";
  EXPECT_TRUE(d->valid()) << d->validationMessage().toStdString();
  EXPECT_EQ(d->currentJson()["pipemare"]["t1"], false);
  EXPECT_EQ(d->currentJson()["pipemare"]["t2"], false);
  const std::string status = d->statusText().toStdString();
  EXPECT_NE(status.find("pipemare.t1"), std::string::npos) << status;
  EXPECT_NE(status.find("pipemare.t2"), std::string::npos) << status;
  EXPECT_NE(status.find("set back to the default"), std::string::npos) << status;
  EXPECT_EQ(d->currentJson()["data"]["batch_size"], 128);  // what still applies is kept

  // One step back: the schedule and both ticks.
  QTest::mouseClick(batch, Qt::LeftButton);
  QTest::keyClick(batch, Qt::Key_Z, Qt::ControlModifier);
  ASSERT_TRUE(QTest::qWaitFor([&] { return schedule->currentText() == "pipemare"; }, 5000)) << schedule->currentText().toStdString();
  EXPECT_TRUE(t1->isChecked());
  EXPECT_TRUE(t2->isChecked());
  EXPECT_TRUE(d->valid()) << d->validationMessage().toStdString();
  EXPECT_EQ(d->statusText().toStdString().find("set back"), std::string::npos) << d->statusText().toStdString();
  // And forward again in one step.
  QTest::keyClick(batch, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
  ASSERT_TRUE(QTest::qWaitFor([&] { return schedule->currentText() == "gpipe"; }, 5000));
  EXPECT_FALSE(t1->isChecked());
  EXPECT_FALSE(t2->isChecked());
}

// A shipped preset is a template (issue 46 item 7): Ctrl+S on an edited preset opens Save as,
// offering a new file in the user's own folder, never the preset; the saved design is named after
// its file, the preset's "preset" tag and notes replaced by its own; the preset is left as it was.
// Ctrl+Shift+S (the menu's shortcut) is Save as of the user's file, which keeps its identity.
TEST(DesignerEdit, APresetIsATemplateSavedUnderItsOwnNameInTheUsersFolder) {
  pm::test::app();
  TempDir tmp;
  pm::ui::MainWindow w(tmp.file("runs.db"), kPresets, kPipemare);
  w.resize(1400, 860);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  pm::ui::DesignerView* d = w.designer();
  const QString preset = kPresets + "/cnn-gpipe-p2.json";
  QFile original(preset);
  ASSERT_TRUE(original.open(QIODevice::ReadOnly));
  const QByteArray before = original.readAll();
  original.close();
  ASSERT_TRUE(d->loadFile(preset));
  ASSERT_TRUE(pm::test::clickTab(tabsOf(w), "Design"));
  auto* batch = field<QSpinBox>(d, "data.batch_size");
  ASSERT_TRUE(batch);
  QTest::mouseClick(batch, Qt::LeftButton);
  pm::test::retype(batch, "16");
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.isWindowModified(); }, 5000));

  QString offered;
  {
    pm::test::ModalAnswers answers({[&offered](QWidget* top) {
      auto* dialog = qobject_cast<QFileDialog*>(top);
      QLineEdit* name = dialog ? dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit")) : nullptr;
      if (!dialog || !name || name->text().isEmpty()) return false;
      offered = QDir(dialog->directory()).filePath(name->text());
      QTest::keyClick(name, Qt::Key_Return);  // the offered file, as it is
      return QTest::qWaitFor([&] { return !dialog->isVisible(); }, 10000);
    }});
    QTest::keyClick(&w, Qt::Key_S, Qt::ControlModifier);
    ASSERT_TRUE(QTest::qWaitFor([&] { return answers.done(); }, 15000)) << answers.failure();
  }
  const QString userDir = QString::fromLocal8Bit(qgetenv("XDG_DATA_HOME")) + "/pipemare/experiments";
  EXPECT_EQ(QFileInfo(offered).absoluteFilePath().toStdString(), QFileInfo(userDir + "/cnn-gpipe-p2-mine.json").absoluteFilePath().toStdString());
  ASSERT_TRUE(QTest::qWaitFor([&] { return QFile::exists(offered) && !w.isWindowModified(); }, 5000)) << offered.toStdString();
  EXPECT_EQ(d->currentFile().toStdString(), offered.toStdString());
  ASSERT_TRUE(original.open(QIODevice::ReadOnly));
  EXPECT_EQ(original.readAll(), before) << "the preset was written";
  original.close();
  QFile saved(offered);
  ASSERT_TRUE(saved.open(QIODevice::ReadOnly));
  const auto j = nlohmann::json::parse(saved.readAll().toStdString());
  EXPECT_EQ(j["name"], "cnn-gpipe-p2-mine");
  EXPECT_EQ(j["tags"], nlohmann::json({"gpipe", "multi-process", "cnn"}));
  EXPECT_EQ(j["notes"], "From preset cnn-gpipe-p2.");
  EXPECT_EQ(j["data"]["batch_size"], 16);

  const QString other = QString::fromStdString(tmp.file("other.json"));
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));  // back from the dialog
  {
    pm::test::ModalAnswers answers({pm::test::chooseFile(other)});
    QTest::keyClick(&w, Qt::Key_S, Qt::ControlModifier | Qt::ShiftModifier);
    ASSERT_TRUE(QTest::qWaitFor([&] { return answers.done(); }, 15000)) << answers.failure();
  }
  ASSERT_TRUE(QTest::qWaitFor([&] { return QFile::exists(other); }, 5000)) << "Ctrl+Shift+S saved nothing";
  EXPECT_EQ(d->currentFile().toStdString(), other.toStdString());
  EXPECT_EQ(d->currentJson()["name"], "cnn-gpipe-p2-mine");  // a user's file keeps its name when saved as another
}

// File > Open Recent lists the design files saved or opened, most recent first, and reopens the
// one chosen; files gone since are left out; Clear Recent empties it.
TEST(DesignerEdit, OpenRecentListsASavedFileAndReopensIt) {
  pm::test::app();
  TempDir tmp;
  pm::ui::MainWindow w(tmp.file("runs.db"), kPresets, kPipemare);
  w.resize(1400, 860);
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  pm::ui::DesignerView* d = w.designer();
  ASSERT_TRUE(d->loadFile(kPresets + "/tiny-synthetic.json"));
  const QString gone = QString::fromStdString(tmp.file("gone.json"));
  const QString mine = QString::fromStdString(tmp.file("mine.json"));
  QPushButton* saveAs = pm::test::buttonLabelled(d, "Save as...");
  ASSERT_NE(saveAs, nullptr);
  for (const QString& path : {gone, mine}) {
    pm::test::ModalAnswers answers({pm::test::chooseFile(path)});
    QTest::mouseClick(saveAs, Qt::LeftButton);
    ASSERT_TRUE(QTest::qWaitFor([&] { return answers.done(); }, 15000)) << answers.failure();
    ASSERT_TRUE(QFile::exists(path)) << path.toStdString();
    ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  }
  ASSERT_TRUE(QFile::remove(gone));
  ASSERT_TRUE(d->loadFile(kPresets + "/quickstart.json"));

  QStringList listed;
  {
    const auto listThenChoose = [&](QWidget* top) {
      auto* menu = qobject_cast<QMenu*>(top);
      if (!menu) return false;
      for (QAction* a : menu->actions())
        if (!a->isSeparator()) listed << a->text();
      return pm::test::chooseMenuEntry(mine)(top);
    };
    pm::test::ModalAnswers answers({pm::test::chooseMenuEntry("Open Recent"), listThenChoose});
    ASSERT_TRUE(pm::test::clickMenu(w.menuBar(), "File"));
    ASSERT_TRUE(QTest::qWaitFor([&] { return answers.done(); }, 15000)) << answers.failure();
  }
  ASSERT_FALSE(listed.isEmpty());
  EXPECT_EQ(listed.front().toStdString(), mine.toStdString()) << listed.join(" | ").toStdString();
  EXPECT_FALSE(listed.contains(gone)) << "a file that no longer exists is listed";
  EXPECT_TRUE(listed.contains("Clear Recent")) << listed.join(" | ").toStdString();
  EXPECT_TRUE(QTest::qWaitFor([&] { return d->currentFile() == mine; }, 5000)) << d->currentFile().toStdString();
  EXPECT_EQ(d->currentJson()["name"], "gone");  // named after the file it was first saved as from the preset

  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  {
    pm::test::ModalAnswers answers({pm::test::chooseMenuEntry("Open Recent"), pm::test::chooseMenuEntry("Clear Recent")});
    ASSERT_TRUE(pm::test::clickMenu(w.menuBar(), "File"));
    ASSERT_TRUE(QTest::qWaitFor([&] { return answers.done(); }, 15000)) << answers.failure();
  }
  EXPECT_TRUE(QTest::qWaitFor([&] { return d->recentFiles().isEmpty(); }, 5000)) << d->recentFiles().join(" | ").toStdString();
}

// A run of the preset as it is keeps its name, tags and notes, without a question. A run of an
// edited preset is named after what it is in a dialog (OK: that name; a name typed there: that
// one; Cancel: no run), its tags follow the schedule and its notes say where it came from.
TEST(DesignerEdit, ARunOfAnEditedPresetIsNamedAfterTheDesign) {
  pm::test::app();
  pm::ui::DesignerView d(kPresets);
  const QString preset = kPresets + "/cnn-gpipe-p2.json";
  ASSERT_TRUE(d.loadFile(preset));
  d.resize(900, 800);
  ASSERT_TRUE(pm::test::showWindow(&d, /*active=*/true));
  auto* run = d.findChild<QPushButton*>("runButton");
  ASSERT_NE(run, nullptr);
  QSignalSpy spy(&d, &pm::ui::DesignerView::runRequested);
  const auto requested = [&](int i) { return nlohmann::json::parse(spy.at(i).at(0).toString().toStdString()); };

  QTest::mouseClick(run, Qt::LeftButton);
  ASSERT_EQ(spy.count(), 1) << "the unedited preset did not run at once";
  EXPECT_EQ(spy.at(0).at(1).toString().toStdString(), "cnn-gpipe-p2");
  EXPECT_TRUE(has(tagsOf(requested(0)), "gpipe"));
  EXPECT_EQ(requested(0)["notes"], pm::loadExperimentJson(preset.toStdString())["notes"]);

  ASSERT_TRUE(pm::test::chooseText(field<QComboBox>(&d, "pipeline.schedule"), "pipemare"));
  QTest::keyClick(field<QCheckBox>(&d, "pipemare.t1"), Qt::Key_Space);
  QTest::keyClick(field<QCheckBox>(&d, "pipemare.t2"), Qt::Key_Space);
  ASSERT_TRUE(QTest::qWaitFor([&] { return d.valid() && run->isEnabled(); }, 5000)) << d.validationMessage().toStdString();
  QString proposed;
  {
    pm::test::ModalAnswers answers({acceptName(&proposed)});
    QTest::mouseClick(run, Qt::LeftButton);
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  EXPECT_EQ(proposed.toStdString(), "cnn P=2 N=8 pipemare T1+T2");
  ASSERT_EQ(spy.count(), 2);
  EXPECT_EQ(spy.at(1).at(1).toString().toStdString(), "cnn P=2 N=8 pipemare T1+T2");
  const nlohmann::json edited = requested(1);
  EXPECT_EQ(edited["name"], "cnn P=2 N=8 pipemare T1+T2");
  EXPECT_FALSE(has(tagsOf(edited), "gpipe")) << edited["tags"].dump();
  EXPECT_TRUE(has(tagsOf(edited), "pipemare")) << edited["tags"].dump();
  EXPECT_TRUE(has(tagsOf(edited), "preset")) << edited["tags"].dump();
  EXPECT_EQ(edited["notes"], "From preset cnn-gpipe-p2 (file " + preset.toStdString() +
                                 "); edited: pipeline.schedule=\"pipemare\", pipemare.t1=true, pipemare.t2=true");

  {
    pm::test::ModalAnswers answers({pm::test::enterText("pipemare variant A")});
    QTest::mouseClick(run, Qt::LeftButton);
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  ASSERT_EQ(spy.count(), 3);
  EXPECT_EQ(spy.at(2).at(1).toString().toStdString(), "pipemare variant A");
  EXPECT_EQ(requested(2)["name"], "pipemare variant A");

  {
    pm::test::ModalAnswers answers({cancelDialog()});
    QTest::mouseClick(run, Qt::LeftButton);
    EXPECT_TRUE(answers.done()) << answers.failure();
  }
  EXPECT_EQ(spy.count(), 3) << "Cancel in the name dialog started a run";
}

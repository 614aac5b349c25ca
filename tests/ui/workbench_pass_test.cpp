// The workbench's second pass, as a user meets it (issue 46 items 6 and 10): a field one schedule
// uses does not blank the planner, a path field's Browse
// button, F1's documentation window, the planner's table and the Gantt's row labels.
#include <gtest/gtest.h>

#include <QApplication>
#include <QComboBox>
#include <QDialog>
#include <QFileDialog>
#include <QHeaderView>
#include <QLineEdit>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>
#include <QTextBrowser>
#include <QToolButton>

#include "tests/support/test_support.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/designer/designer_view.h"
#include "ui/main/main_window.h"
#include "ui/planner/planner_panel.h"
#include "ui/plots/gantt_plot.h"

namespace {

const QString kPresets = QString::fromStdString(pm::test::sourcePath("experiments"));
const QString kPipemare = QString::fromStdString(pm::test::binPath("pipemare"));

struct Window {
  pm::test::TempDir tmp;
  pm::ui::MainWindow w{(tmp.dir / "runs.db").string(), kPresets, kPipemare};
};

bool openDesign(pm::ui::MainWindow& w, const QString& preset, int width = 1400, int height = 900) {
  w.resize(width, height);
  if (!pm::test::showWindow(&w, /*active=*/true)) return false;
  auto* tabs = qobject_cast<QTabWidget*>(w.centralWidget());
  return tabs && pm::test::clickTab(tabs, "Design") && w.designer()->loadFile(kPresets + "/" + preset);
}

}  // namespace

// A value typed into a field only pipemare uses (pipemare.anneal_epochs) that is not valid: the
// design is invalid and Run disabled, but the planner still shows every schedule, saying it
// planned with that field at its default; a field every schedule uses (optimizer.lr) still clears it.
TEST(WorkbenchPass, AFieldOnlyOneScheduleUsesDoesNotBlankThePlanner) {
  pm::test::app();
  Window win;
  ASSERT_TRUE(openDesign(win.w, "resnet20-pipemare.json"));
  pm::ui::PlannerPanel* panel = win.w.plannerPanel();
  ASSERT_TRUE(QTest::qWaitFor([&] { return panel->rowCount() == 9; }, 90000)) << panel->statusText().toStdString();
  auto* anneal = qobject_cast<QLineEdit*>(win.w.designer()->fieldWidget("pipemare.anneal_epochs"));
  ASSERT_TRUE(anneal);
  pm::test::retype(anneal, "-2");
  ASSERT_TRUE(QTest::qWaitFor([&] { return !win.w.designer()->valid(); }, 5000));
  EXPECT_FALSE(pm::test::buttonLabelled(win.w.designer(), "Run")->isEnabled());
  ASSERT_TRUE(QTest::qWaitFor([&] { return panel->statusText().contains("Planned with pipemare.anneal_epochs at its default"); }, 30000))
      << panel->statusText().toStdString();
  ASSERT_TRUE(QTest::qWaitFor([&] { return panel->rowCount() == 9; }, 30000));
  EXPECT_EQ(panel->selectedSchedule(), "pipemare+T2");

  pm::test::retype(anneal, "0");
  auto* lr = qobject_cast<QLineEdit*>(win.w.designer()->fieldWidget("optimizer.lr"));
  ASSERT_TRUE(lr);
  pm::test::retype(lr, "-1");
  ASSERT_TRUE(QTest::qWaitFor([&] { return panel->rowCount() == 0; }, 5000)) << panel->statusText().toStdString();
  EXPECT_TRUE(panel->statusText().contains("not valid")) << panel->statusText().toStdString();
}

// data.path's Browse button, clicked inside the field: a dialog for the tensor file, and the file
// chosen is the field's value, undone by Ctrl+Z like a typed edit.
TEST(WorkbenchPass, APathFieldsBrowseButtonChoosesTheFile) {
  pm::test::app();
  Window win;
  ASSERT_TRUE(openDesign(win.w, "tiny-synthetic.json"));
  pm::ui::DesignerView* d = win.w.designer();
  ASSERT_TRUE(d->setFieldText("data.dataset", "tensors"));
  auto* path = qobject_cast<QLineEdit*>(d->fieldWidget("data.path"));
  ASSERT_TRUE(path);
  const QString before = path->text();
  const std::string file = win.tmp.file("train.pt");
  ASSERT_TRUE(pm::test::writeFile(file, "not read by the dialog"));
  QToolButton* browse = nullptr;
  for (QToolButton* b : path->findChildren<QToolButton*>())
    if (b->defaultAction() && b->defaultAction()->objectName() == "browse:data.path") browse = b;
  ASSERT_TRUE(browse) << "no Browse button in data.path";
  ASSERT_TRUE(QTest::qWaitFor([&] { return browse->isVisible(); }, 2000));
  pm::test::ModalAnswers answers({pm::test::chooseFile(QString::fromStdString(file))});
  QTest::mouseClick(browse, Qt::LeftButton);
  ASSERT_TRUE(QTest::qWaitFor([&] { return answers.done(); }, 15000)) << answers.failure();
  EXPECT_EQ(path->text(), QString::fromStdString(file));
  QAction* undo = d->findChild<QAction*>("undoAction");
  ASSERT_TRUE(undo);
  undo->trigger();  // Edit > Undo
  EXPECT_EQ(path->text(), before);
}

// F1 shows README.md in a window of the workbench (no desktop viewer needed), rendered, its
// heading first.
TEST(WorkbenchPass, F1ShowsTheDocumentationInTheWorkbench) {
  pm::test::app();
  Window win;
  ASSERT_TRUE(openDesign(win.w, "tiny-synthetic.json"));
  QTest::keyClick(&win.w, Qt::Key_F1);
  QDialog* viewer = nullptr;
  ASSERT_TRUE(QTest::qWaitFor([&] { return (viewer = win.w.findChild<QDialog*>("documentationViewer")) && viewer->isVisible(); }, 5000));
  auto* browser = viewer->findChild<QTextBrowser*>("documentationBrowser");
  ASSERT_TRUE(browser);
  EXPECT_TRUE(browser->source().toLocalFile().endsWith("README.md")) << browser->source().toString().toStdString();
  EXPECT_TRUE(browser->toPlainText().contains("PipeMare Workbench")) << browser->toPlainText().left(200).toStdString();
  EXPECT_FALSE(browser->toPlainText().startsWith("#")) << "Markdown shown as text, not rendered";
  viewer->close();
}

// The planner's table shows all nine rows without scrolling at 1600x1000 and its columns fill its
// width; at 1024x640 the Gantt's row labels (eleven stages) fit without being cut or overlapping.
TEST(WorkbenchPass, ThePlannersTableAndGanttFitTheWindow) {
  pm::test::app();
  Window win;
  ASSERT_TRUE(openDesign(win.w, "resnet20-pipemare.json", 1600, 1000));
  pm::ui::PlannerPanel* panel = win.w.plannerPanel();
  ASSERT_TRUE(QTest::qWaitFor([&] { return panel->rowCount() == 9; }, 90000));
  auto* table = panel->findChild<QTableWidget*>();
  ASSERT_TRUE(table);
  QApplication::processEvents();
  EXPECT_FALSE(table->verticalScrollBar()->isVisible()) << "the table scrolls";
  const QRect last = table->visualItemRect(table->item(8, 0));
  EXPECT_LE(last.bottom(), table->viewport()->height()) << "the last row is cut";
  int widths = 0;
  for (int c = 0; c < table->columnCount(); ++c) widths += table->columnWidth(c);
  EXPECT_GE(widths, table->viewport()->width() - 1) << "an empty band right of the last column";

  win.w.resize(1024, 640);
  auto* gantt = panel->findChild<pm::ui::GanttPlot*>();
  ASSERT_TRUE(gantt);
  ASSERT_TRUE(QTest::qWaitFor([&] { return gantt->rows() == 11 && gantt->rowLabelsFit(); }, 5000))
      << gantt->rowLabelsShown().join(", ").toStdString();
  EXPECT_EQ(gantt->rowLabelsShown().front(), "stage 0");
}

// Switching the schedule (pipemare with T1 and T2 ticked -> gpipe) drops T1 and T2, hides the
// pipemare fields that no longer apply, and yet the schedule field stays where the pointer left it
// (issue 46 item 6): in a tall window the form is wheeled down as far as it goes with the field
// still in view (the fields that hide are below it, and the view's bottom is below the shorter
// form's end), and after the switch the field is at the same place on the screen, as are the
// fields above it; the blank kept below is given back as the user wheels up; switching back
// reveals pipemare's fields below the field.
TEST(WorkbenchPass, SwitchingTheScheduleDoesNotMoveTheFormUnderThePointer) {
  pm::test::app();
  Window win;
  ASSERT_TRUE(openDesign(win.w, "resnet20-pipemare.json", 1600, 1200));
  pm::ui::DesignerView* d = win.w.designer();
  auto* schedule = qobject_cast<QComboBox*>(d->fieldWidget("pipeline.schedule"));
  auto* stages = d->fieldWidget("pipeline.stages");
  ASSERT_TRUE(schedule && stages);
  QScrollArea* area = nullptr;
  for (QWidget* p = schedule->parentWidget(); p && !area; p = p->parentWidget()) area = qobject_cast<QScrollArea*>(p);
  ASSERT_TRUE(area);
  // The user wheels the form until the schedule field is near the view's top (or the form ends).
  auto inView = [&] { return schedule->mapTo(area->viewport(), QPoint(0, 0)).y(); };
  ASSERT_TRUE(QTest::qWaitFor([&] { return schedule->isVisible() && area->widget()->height() >= area->widget()->sizeHint().height(); }, 5000))
      << "the form is laid out";
  for (int i = 0; i < 40 && inView() > 60 &&
                  area->verticalScrollBar()->value() < area->verticalScrollBar()->maximum();
       ++i) {
    pm::test::wheel(area->viewport(), -1, QPoint(area->viewport()->width() - 4, area->viewport()->height() / 2));
    QApplication::processEvents();
  }
  auto yOf = [&](QWidget* w) { return w->mapTo(&win.w, QPoint(0, 0)).y(); };
  const int scheduleBefore = yOf(schedule), stagesBefore = yOf(stages);
  ASSERT_GT(area->verticalScrollBar()->value(), 0) << "the form should need scrolling: view " << area->viewport()->height() << " form " << area->widget()->height() << " max " << area->verticalScrollBar()->maximum() << " at " << inView();
  ASSERT_TRUE(pm::test::pickText(schedule, "gpipe"));
  ASSERT_TRUE(QTest::qWaitFor([&] { return d->currentJson()["pipemare"]["t1"] == false; }, 5000));
  QApplication::processEvents();
  EXPECT_EQ(yOf(schedule), scheduleBefore) << "scroll " << area->verticalScrollBar()->value();
  EXPECT_EQ(yOf(stages), stagesBefore);
  // The blank kept below the shorter form is given back as the user wheels up.
  const int heldRange = area->verticalScrollBar()->maximum();
  for (int i = 0; i < 40 && area->verticalScrollBar()->value() > 0; ++i) {
    pm::test::wheel(area->viewport(), 1, QPoint(area->viewport()->width() - 4, area->viewport()->height() / 2));
    QApplication::processEvents();
  }
  ASSERT_TRUE(QTest::qWaitFor([&] { return area->verticalScrollBar()->maximum() < heldRange; }, 5000)) << heldRange;
  for (int i = 0; i < 40 && inView() > 60 && area->verticalScrollBar()->value() < area->verticalScrollBar()->maximum(); ++i) {
    pm::test::wheel(area->viewport(), -1, QPoint(area->viewport()->width() - 4, area->viewport()->height() / 2));
    QApplication::processEvents();
  }
  const int scheduleOnGpipe = yOf(schedule);
  // And back: pipemare's fields come back below the pointer, the schedule field stays.
  ASSERT_TRUE(pm::test::pickText(schedule, "pipemare"));
  QApplication::processEvents();
  EXPECT_EQ(yOf(schedule), scheduleOnGpipe) << "scroll " << area->verticalScrollBar()->value();
}

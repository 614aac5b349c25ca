// File > Open Recent and the workbench's command line: a design opened with `--experiment FILE`
// is listed there, as one opened with File > Open... is. The window is made and the file opened as
// app/workbench/main.cpp does; the settings (designer/recentFiles) are this test process's own
// (ui_test_main.cpp points XDG_CONFIG_HOME into a temporary folder).
#include <gtest/gtest.h>

#include <QAction>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QStringList>
#include <QTest>

#include <string>

#include "core/util/paths.h"
#include "tests/support/test_support.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/designer/designer_view.h"
#include "ui/main/main_window.h"

namespace {
const QString kPresets = QString::fromStdString(pm::test::sourcePath("experiments"));
const QString kPipemare = QString::fromStdString(pm::test::binPath("pipemare"));

// The entries File > Open Recent lists, read from the menu as the user opens it (File, then Open
// Recent), then both menus closed with Escape.
QStringList openRecentEntries(pm::ui::MainWindow& w, std::string* failure) {
  QStringList listed;
  const auto listThenClose = [&listed](QWidget* top) {
    auto* menu = qobject_cast<QMenu*>(top);
    if (!menu) return false;
    for (QAction* a : menu->actions())
      if (!a->isSeparator()) listed << a->text();
    QTest::keyClick(menu, Qt::Key_Escape);
    return true;
  };
  const auto closeMenu = [](QWidget* top) {
    if (!qobject_cast<QMenu*>(top)) return false;
    QTest::keyClick(top, Qt::Key_Escape);
    return true;
  };
  pm::test::ModalAnswers answers({pm::test::chooseMenuEntry("Open Recent"), listThenClose, closeMenu});
  if (!pm::test::clickMenu(w.menuBar(), "File")) {
    *failure = "no File menu";
    return listed;
  }
  if (!QTest::qWaitFor([&] { return answers.done(); }, 15000)) *failure = answers.failure();
  return listed;
}
}  // namespace

// `pipemare-workbench --experiment FILE` opens FILE in the designer and lists it first in File >
// Open Recent (by its absolute path); a file that cannot be opened (main then exits with a usage
// error) is not listed.
TEST(RecentFiles, AnExperimentGivenOnTheCommandLineIsListedInOpenRecent) {
  pm::test::app();
  pm::test::TempDir tmp;
  const QString design = QString::fromStdString(tmp.file("my-design.json"));
  ASSERT_TRUE(pm::test::writeFile(design.toStdString(), pm::test::readFile(pm::test::sourcePath("experiments/tiny-synthetic.json"))));
  const QString broken = QString::fromStdString(tmp.file("broken.json"));
  ASSERT_TRUE(pm::test::writeFile(broken.toStdString(), "{ \"name\": "));

  pm::ui::MainWindow w(tmp.file("runs.db"), kPresets, kPipemare);
  w.resize(1280, 720);
  // As main does with --experiment: the argument resolved (a path that exists stays as given),
  // then opened in the designer.
  pm::ui::DesignerView* d = w.designer();
  EXPECT_FALSE(d->openFile(QString::fromStdString(pm::resolveExperimentArgument(broken.toStdString()))));
  ASSERT_TRUE(d->openFile(QString::fromStdString(pm::resolveExperimentArgument(design.toStdString()))))
      << d->validationMessage().toStdString();
  ASSERT_TRUE(pm::test::showWindow(&w, /*active=*/true));
  EXPECT_EQ(d->currentFile().toStdString(), design.toStdString());

  std::string failure;
  const QStringList listed = openRecentEntries(w, &failure);
  ASSERT_TRUE(failure.empty()) << failure;
  ASSERT_FALSE(listed.isEmpty());
  EXPECT_EQ(listed.front().toStdString(), QFileInfo(design).absoluteFilePath().toStdString()) << listed.join(" | ").toStdString();
  EXPECT_FALSE(listed.contains(broken)) << "a file that could not be opened is listed: " << listed.join(" | ").toStdString();
  EXPECT_FALSE(listed.contains("(no recent files)")) << listed.join(" | ").toStdString();
}

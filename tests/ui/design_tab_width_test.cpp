// The main window fits a 1024x640 screen with the Design tab shown: the designer beside the
// planner does not force the window wider (their smallest widths side by side fit in 1024 px).
#include <gtest/gtest.h>

#include <QLayout>
#include <QSplitter>
#include <QTabWidget>
#include <QTest>
#include <sstream>

#include "tests/support/test_support.h"
#include "tests/ui/ui_actions.h"
#include "tests/ui/ui_test_main.h"
#include "ui/designer/designer_view.h"
#include "ui/main/main_window.h"
#include "ui/planner/planner_panel.h"

namespace {

const QString kPresets = QString::fromStdString(pm::test::sourcePath("experiments"));
const QString kPipemare = QString::fromStdString(pm::test::binPath("pipemare"));

// The widgets under `root` that are visible and need more than `width` px, with their smallest
// width: what to look at when the window cannot get narrow enough.
std::string widest(QWidget* root, int width) {
  std::ostringstream out;
  for (QWidget* w : root->findChildren<QWidget*>()) {
    if (!w->isVisibleTo(root)) continue;
    const int min = std::max(w->minimumSizeHint().width(), w->minimumWidth());
    if (min > width)
      out << "  " << w->metaObject()->className() << " '" << w->objectName().toStdString() << "' ("
          << (w->parentWidget() ? w->parentWidget()->metaObject()->className() : "") << "): " << min << " px\n";
  }
  return out.str();
}

}  // namespace

// The window as the workbench opens it (the quickstart preset in the designer, its plan beside),
// on the Design tab, then made 1024x640: it takes that size, and its smallest width fits in it.
TEST(DesignTabWidth, TheWindowFitsA1024x640Screen) {
  pm::test::app();
  pm::test::TempDir tmp;
  pm::ui::MainWindow w((tmp.dir / "runs.db").string(), kPresets, kPipemare);
  w.resize(1024, 640);
  ASSERT_TRUE(pm::test::showWindow(&w));
  auto* tabs = qobject_cast<QTabWidget*>(w.centralWidget());
  ASSERT_TRUE(tabs);
  ASSERT_TRUE(pm::test::clickTab(tabs, "Design"));
  // The planner's table filled: its rows are part of what has to fit.
  // (QTest::qWaitFor under ASSERT: QTRY_* outside a QTest run return silently on failure.)
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.plannerPanel()->rowCount() > 0; }, 60000)) << w.plannerPanel()->statusText().toStdString();
  w.resize(1024, 640);
  ASSERT_TRUE(QTest::qWaitFor([&] { return w.width() == 1024; }, 5000))
      << "width " << w.width() << ", smallest " << w.minimumSizeHint().width() << "; wider than 300 px:\n"
      << widest(&w, 300);
  EXPECT_LE(w.height(), 640);
  EXPECT_LE(w.minimumSizeHint().width(), 1024) << "wider than 400 px:\n" << widest(&w, 400);
  EXPECT_LE(w.designer()->minimumSizeHint().width() + w.plannerPanel()->minimumSizeHint().width(), 1000)
      << "designer " << w.designer()->minimumSizeHint().width() << " px, planner "
      << w.plannerPanel()->minimumSizeHint().width() << " px; wider than 300 px:\n"
      << widest(tabs->currentWidget(), 300);
  // Both halves keep a usable share of the window: neither is squeezed to nothing.
  EXPECT_GT(w.designer()->width(), 250);
  EXPECT_GT(w.plannerPanel()->width(), 250);
}

#include <gtest/gtest.h>

#include <QFileInfo>
#include <QTemporaryDir>
#include <cmath>

#include "tests/ui/ui_test_main.h"
#include "ui/plots/curve_plot.h"

TEST(CurvePlot, KeepsFullResolutionAndSavesPngAndPdf) {
  pm::test::app();
  pm::ui::CurvePlot plot;
  plot.resize(600, 400);
  int s = plot.addSeries("loss", Qt::blue);
  for (int i = 0; i < 100000; ++i) plot.appendPoint(s, i, std::sin(i * 0.01) + (i == 54321 ? 50.0 : 0.0));
  plot.replot();
  EXPECT_EQ(plot.pointCount(s), 100000u);
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const QString png = dir.filePath("p.png"), pdf = dir.filePath("p.pdf");
  EXPECT_TRUE(plot.save(png));
  EXPECT_TRUE(plot.save(pdf));
  EXPECT_GT(QFileInfo(png).size(), 1000);
  EXPECT_GT(QFileInfo(pdf).size(), 1000);
}

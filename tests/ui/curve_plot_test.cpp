#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QPalette>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>

#include "tests/ui/ui_actions.h"
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

// Plots take their colours from the palette: a dark system palette gives a dark plot.
TEST(CurvePlot, FollowsTheApplicationPalette) {
  pm::test::app();
  const QPalette old = QApplication::palette();
  QPalette dark = old;
  dark.setColor(QPalette::Base, QColor(30, 30, 30));
  dark.setColor(QPalette::Window, QColor(40, 40, 40));
  dark.setColor(QPalette::Text, QColor(230, 230, 230));
  QApplication::setPalette(dark);
  pm::ui::CurvePlot plot;
  plot.setTitle("dark");
  const int s = plot.addSeries("a", Qt::cyan);
  plot.setSeriesData(s, {0, 1, 2}, {1, 2, 3});
  plot.replot();
  const QString path = QDir::tempPath() + "/pm_dark_plot.png";
  ASSERT_TRUE(plot.save(path, 300, 200));
  QImage img(path);
  ASSERT_FALSE(img.isNull());
  EXPECT_LT(QColor(img.pixel(3, 3)).lightness(), 60);
  QApplication::setPalette(old);
  pm::ui::CurvePlot light;
  light.addSeries("b", Qt::blue);
  ASSERT_TRUE(light.save(path, 300, 200));
  EXPECT_GT(QColor(QImage(path).pixel(3, 3)).lightness(), 200);
  QFile::remove(path);
}

// A series with a single point (one evaluation so far) is shown around its value, not in the
// axis's previous range.
TEST(CurvePlot, SinglePointIsShownAroundItsValue) {
  pm::test::app();
  pm::ui::CurvePlot plot;
  plot.resize(400, 300);
  const int s = plot.addSeries("eval/accuracy", Qt::green);
  plot.appendPoint(s, 47, 0.1);
  plot.replot();
  const auto [ylo, yhi] = plot.valueRange();
  EXPECT_LT(ylo, 0.1);
  EXPECT_GT(yhi, 0.1);
  EXPECT_LT(yhi - ylo, 0.1);
  const auto [xlo, xhi] = plot.keyRange();
  EXPECT_LT(xlo, 47);
  EXPECT_GT(xhi, 47);
  EXPECT_LT(xhi - xlo, 20);
}

TEST(CurvePlot, LegendCornerCanMove) {
  pm::ui::CurvePlot plot;
  EXPECT_EQ(plot.legendCorner(), Qt::AlignTop | Qt::AlignRight);
  plot.setLegendCorner(Qt::AlignBottom | Qt::AlignRight);
  EXPECT_EQ(plot.legendCorner(), Qt::AlignBottom | Qt::AlignRight);
}

// The legend leaves the corner where the curves are: a rising curve (accuracy) ends in the top
// right and starts in the bottom left, so the legend goes to one of the two free corners; a falling
// curve (loss) leaves the preferred top right free, and the legend stays there. On screen and in a
// saved image of another size alike.
TEST(CurvePlot, LegendMovesOffTheCurves) {
  pm::test::app();
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const QString png = dir.filePath("legend.png");
  const Qt::Alignment topRight = Qt::AlignTop | Qt::AlignRight, bottomLeft = Qt::AlignBottom | Qt::AlignLeft;
  for (const bool rising : {true, false}) {
    SCOPED_TRACE(rising ? "rising" : "falling");
    pm::ui::CurvePlot plot;
    plot.resize(500, 350);
    const int a = plot.addSeries("train/loss with a long name", Qt::blue);
    const int b = plot.addSeries("eval/loss", Qt::red);
    for (int i = 0; i <= 200; ++i) {
      const double y = rising ? i : 200 - i;
      plot.appendPoint(a, i, y);
      if (i % 20 == 0) plot.appendPoint(b, i, y + 3);
    }
    plot.replot();
    ASSERT_TRUE(plot.save(png, 900, 500));
    if (rising) {
      EXPECT_NE(plot.legendCorner(), topRight);
      EXPECT_NE(plot.legendCorner(), bottomLeft);
    } else {
      EXPECT_EQ(plot.legendCorner(), topRight);
    }
    ASSERT_TRUE(plot.save(png, 300, 200));
    if (rising) {
      EXPECT_NE(plot.legendCorner(), topRight);
    }
  }
}

// The mouse wheel zooms the plot around the mouse: a turn away from the user shows less of both
// axes (the point under the mouse stays in view), a turn back shows them all again.
TEST(CurvePlot, WheelZoomsAroundTheMouse) {
  pm::test::app();
  pm::ui::CurvePlot plot;
  plot.resize(500, 350);
  const int s = plot.addSeries("train/loss", Qt::blue);
  for (int i = 0; i <= 100; ++i) plot.appendPoint(s, i, 100.0 - i);
  plot.replot();
  ASSERT_TRUE(pm::test::showWindow(&plot));
  QWidget* canvas = pm::test::plotCanvas(&plot);
  ASSERT_NE(canvas, nullptr);
  // Plain copies (a lambda cannot capture a structured binding in C++17).
  const double xlo = plot.keyRange().first, xhi = plot.keyRange().second;
  const double ylo = plot.valueRange().first, yhi = plot.valueRange().second;
  const auto keySpan = [&] { return plot.keyRange().second - plot.keyRange().first; };
  const auto valueSpan = [&] { return plot.valueRange().second - plot.valueRange().first; };

  pm::test::wheel(canvas, 3);
  ASSERT_TRUE(QTest::qWaitFor([&] { return keySpan() < 0.8 * (xhi - xlo); }, 5000))
      << "keys " << plot.keyRange().first << ".." << plot.keyRange().second << " after the wheel, " << xlo << ".." << xhi << " before";
  EXPECT_LT(valueSpan(), 0.8 * (yhi - ylo));
  EXPECT_GT(plot.keyRange().first, xlo);  // around the mouse, in the middle: both ends move in
  EXPECT_LT(plot.keyRange().second, xhi);

  pm::test::wheel(canvas, -3);
  EXPECT_TRUE(QTest::qWaitFor([&] { return keySpan() > 0.99 * (xhi - xlo); }, 5000))
      << "keys " << plot.keyRange().first << ".." << plot.keyRange().second << " after turning back";
}

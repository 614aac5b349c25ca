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

// The legend sits in a row of its own outside the axes, above them by default, below them when
// asked: it never covers a curve, however the curves run, on screen and at a narrow width (where
// its entries wrap onto more lines).
TEST(CurvePlot, LegendSitsOutsideTheAxes) {
  pm::test::app();
  for (const Qt::Alignment side : {Qt::AlignTop | Qt::AlignRight, Qt::AlignBottom | Qt::AlignRight}) {
    pm::ui::CurvePlot plot;
    plot.setTitle("train/loss");
    plot.setLegendCorner(side);
    plot.resize(500, 350);
    const int a = plot.addSeries("#1 a run with a long name (smoothed 0.6)", Qt::blue);
    const int b = plot.addSeries("#2 another run", Qt::red);
    const int c = plot.addSeries("#3 a third run", Qt::darkGreen);
    for (int i = 0; i <= 200; ++i) {
      plot.appendPoint(a, i, i % 7);  // noise over the whole axes: no empty corner
      plot.appendPoint(b, i, 6 - i % 5);
      plot.appendPoint(c, i, 3);
    }
    plot.replot();
    ASSERT_TRUE(pm::test::showWindow(&plot));
    for (const int width : {500, 260}) {
      SCOPED_TRACE(width);
      plot.resize(width, 350);
      ASSERT_TRUE(QTest::qWaitFor([&] { return plot.axesRect().width() > 0 && plot.axesRect().width() < width; }, 5000));
      plot.replot();
      ASSERT_TRUE(QTest::qWaitFor([&] { return !plot.legendRect().isEmpty(); }, 5000));
      const QRect legend = plot.legendRect(), axes = plot.axesRect();
      EXPECT_FALSE(legend.intersects(axes)) << "legend " << legend.top() << ".." << legend.bottom() << ", axes " << axes.top()
                                            << ".." << axes.bottom();
      if (side & Qt::AlignTop)
        EXPECT_LE(legend.bottom(), axes.top());
      else
        EXPECT_GE(legend.top(), axes.bottom());
    }
  }
}

// The mouse over the axes shows, as TensorBoard does, the x of the data point nearest the mouse
// and each series' value at its own nearest point: a series without a point there says where its
// point is; a smoothed series gives its raw value too. Leaving the axes hides it.
TEST(CurvePlot, HoverShowsEachSeriesValueAtTheNearestX) {
  pm::test::app();
  pm::ui::CurvePlot plot;
  plot.resize(600, 400);
  plot.setAxisLabels("step", "loss");
  const int a = plot.addSeries("train/loss", Qt::blue);
  const int b = plot.addSeries("eval/loss", Qt::red);
  std::vector<double> x, y, raw;
  for (int i = 0; i <= 100; ++i) {
    x.push_back(i);
    y.push_back(2.0 * i);
    raw.push_back(2.0 * i + 1);
  }
  plot.setSeriesData(a, x, y);
  plot.setSeriesRawData(a, x, raw);
  for (int i = 0; i <= 100; i += 25) plot.appendPoint(b, i, 1000.0 - i);
  plot.replot();
  ASSERT_TRUE(pm::test::showWindow(&plot));
  QWidget* canvas = pm::test::plotCanvas(&plot);
  ASSERT_NE(canvas, nullptr);
  EXPECT_EQ(plot.hoverText(), "");

  QTest::mouseMove(canvas, plot.pixelOf(40.2, 50));
  ASSERT_TRUE(QTest::qWaitFor([&] { return !plot.hoverText().isEmpty(); }, 5000));
  const QString text = plot.hoverText();
  EXPECT_TRUE(text.startsWith("step 40 (nearest points)")) << text.toStdString();
  EXPECT_TRUE(text.contains("train/loss: 80 (raw 81)")) << text.toStdString();
  EXPECT_TRUE(text.contains("eval/loss: 950 at 50")) << text.toStdString();

  QTest::mouseMove(canvas, plot.pixelOf(74, 50));
  ASSERT_TRUE(QTest::qWaitFor([&] { return plot.hoverText().startsWith("step 74 "); }, 5000)) << plot.hoverText().toStdString();
  EXPECT_TRUE(plot.hoverText().contains("train/loss: 148")) << plot.hoverText().toStdString();
  EXPECT_TRUE(plot.hoverText().contains("eval/loss: 925 at 75")) << plot.hoverText().toStdString();

  // Off the axes (over the tick labels, left of them): nothing shown.
  QTest::mouseMove(canvas, QPoint(2, plot.axesRect().center().y()));
  EXPECT_TRUE(QTest::qWaitFor([&] { return plot.hoverText().isEmpty(); }, 5000)) << plot.hoverText().toStdString();
}

// A view zoomed with the wheel comes back to all the data with a double-click, and with R once the
// plot has been clicked; the view the user chose stays through replots (a live run's new points),
// and a reset follows the data again.
TEST(CurvePlot, DoubleClickAndRResetTheZoom) {
  pm::test::app();
  pm::ui::CurvePlot plot;
  plot.resize(500, 350);
  const int s = plot.addSeries("train/loss", Qt::blue);
  for (int i = 0; i <= 100; ++i) plot.appendPoint(s, i, 100.0 - i);
  plot.replot();
  ASSERT_TRUE(pm::test::showWindow(&plot, /*active=*/true));
  QWidget* canvas = pm::test::plotCanvas(&plot);
  ASSERT_NE(canvas, nullptr);
  const double xlo = plot.keyRange().first, xhi = plot.keyRange().second;
  const auto keySpan = [&] { return plot.keyRange().second - plot.keyRange().first; };

  pm::test::wheel(canvas, 3);
  ASSERT_TRUE(QTest::qWaitFor([&] { return keySpan() < 0.8 * (xhi - xlo); }, 5000));
  plot.appendPoint(s, 101, -1);  // a new point, as in a live run: the zoom stays
  plot.replot();
  EXPECT_LT(keySpan(), 0.8 * (xhi - xlo));
  QTest::mouseDClick(canvas, Qt::LeftButton, Qt::NoModifier, canvas->rect().center());
  ASSERT_TRUE(QTest::qWaitFor([&] { return plot.keyRange().first <= xlo && plot.keyRange().second > xhi; }, 5000))
      << plot.keyRange().first << ".." << plot.keyRange().second;

  pm::test::wheel(canvas, 3);
  ASSERT_TRUE(QTest::qWaitFor([&] { return keySpan() < 0.8 * (xhi - xlo); }, 5000));
  QTest::mouseClick(canvas, Qt::LeftButton, Qt::NoModifier, canvas->rect().center());
  QTest::keyClick(canvas, Qt::Key_R);
  EXPECT_TRUE(QTest::qWaitFor([&] { return keySpan() > 0.99 * (xhi - xlo); }, 5000)) << plot.keyRange().first << ".." << plot.keyRange().second;
  // Reset: new points widen the view again.
  plot.appendPoint(s, 200, 0);
  plot.replot();
  EXPECT_GT(plot.keyRange().second, 200);
}

// Dragging and zooming out stop at the data (with its small margin): no empty axes beyond it.
TEST(CurvePlot, PanAndZoomStayWithinTheData) {
  pm::test::app();
  pm::ui::CurvePlot plot;
  plot.resize(500, 350);
  const int s = plot.addSeries("train/loss", Qt::blue);
  for (int i = 0; i <= 100; ++i) plot.appendPoint(s, i, 100.0 - i);
  plot.replot();
  ASSERT_TRUE(pm::test::showWindow(&plot));
  QWidget* canvas = pm::test::plotCanvas(&plot);
  ASSERT_NE(canvas, nullptr);
  const double xlo = plot.keyRange().first, xhi = plot.keyRange().second;
  const double ylo = plot.valueRange().first, yhi = plot.valueRange().second;
  EXPECT_LT(xlo, 0);  // a small margin around the data
  EXPECT_GT(xlo, -10);

  pm::test::wheel(canvas, 4);
  ASSERT_TRUE(QTest::qWaitFor([&] { return plot.keyRange().second - plot.keyRange().first < 0.7 * (xhi - xlo); }, 5000));
  // Drag far right and down: the view moves towards the start, and stops there.
  const QPoint from = canvas->rect().center();
  QTest::mousePress(canvas, Qt::LeftButton, Qt::NoModifier, from);
  for (int k = 1; k <= 10; ++k) QTest::mouseMove(canvas, from + QPoint(60 * k, 40 * k));
  QTest::mouseRelease(canvas, Qt::LeftButton, Qt::NoModifier, from + QPoint(600, 400));
  ASSERT_TRUE(QTest::qWaitFor([&] { return plot.keyRange().first < xlo + 1; }, 5000)) << plot.keyRange().first;
  EXPECT_GE(plot.keyRange().first, xlo - 1e-9);
  EXPECT_GE(plot.valueRange().first, ylo - 1e-9);
  // Zoomed out far: the whole data, no more.
  pm::test::wheel(canvas, -20);
  ASSERT_TRUE(QTest::qWaitFor([&] { return plot.keyRange().second - plot.keyRange().first > 0.99 * (xhi - xlo); }, 5000));
  EXPECT_NEAR(plot.keyRange().first, xlo, 1e-9);
  EXPECT_NEAR(plot.keyRange().second, xhi, 1e-9);
  EXPECT_NEAR(plot.valueRange().first, ylo, 1e-9);
  EXPECT_NEAR(plot.valueRange().second, yhi, 1e-9);
}

// A title longer than the plot is wide is written on more lines, whole, rather than cut off.
TEST(CurvePlot, LongTitleWrapsInsteadOfBeingCut) {
  pm::test::app();
  pm::ui::CurvePlot plot;
  const QString title = "Measured schedule of run 12: pipemare, mlp, P=4, N=8 (F blue, B orange, step green, communication grey)";
  plot.setTitle(title);
  const int s = plot.addSeries("a", Qt::blue);
  plot.setSeriesData(s, {0, 1, 2}, {1, 2, 3});
  plot.resize(300, 300);
  plot.replot();
  ASSERT_TRUE(pm::test::showWindow(&plot));
  EXPECT_EQ(plot.title(), title);  // the text as set, not as wrapped
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  // Bands of rows with dark pixels in the image's top half (the title's lines, the legend, tick
  // labels): the title on several lines at 300 pixels wide, on one at 1400, the rest alike.
  auto titleLines = [&](int width) {
    const QString png = dir.filePath(QString("t%1.png").arg(width));
    if (!plot.save(png, width, 300)) return -1;
    const QImage img(png);
    int lines = 0;
    bool inLine = false;
    for (int y = 0; y < img.height() / 2; ++y) {
      bool dark = false;
      for (int x = 0; x < img.width() && !dark; ++x) dark = QColor(img.pixel(x, y)).lightness() < 100;
      if (dark && !inLine) ++lines;
      inLine = dark;
    }
    return lines;
  };
  const int narrow = titleLines(300), wide = titleLines(1400);
  EXPECT_GT(narrow, wide);
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

#include <gtest/gtest.h>

#include <cmath>

#include "core/util/csv.h"

using namespace pm;

TEST(Csv, FieldIsQuotedOnlyWhenItMustBe) {
  EXPECT_EQ(csvField("loss"), "loss");
  EXPECT_EQ(csvField(""), "");
  EXPECT_EQ(csvField("a,b"), "\"a,b\"");
  EXPECT_EQ(csvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csvField("two\nlines"), "\"two\nlines\"");
}

TEST(Csv, NumberAtFullPrecision) {
  EXPECT_EQ(csvNumber(2), "2");
  EXPECT_EQ(csvNumber(0.1), "0.10000000000000001");
  EXPECT_EQ(csvNumber(-1.5e-300), "-1.5000000000000001e-300");
  EXPECT_EQ(csvNumber(NAN), "");
}

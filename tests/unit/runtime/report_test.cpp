// Sizes and durations as messages spell them.
#include "initrt/report.h"

#include <gtest/gtest.h>

namespace initrt {
namespace {

TEST(Report, BytesInBinaryUnits) {
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(1536), "1.50 KiB");
  EXPECT_EQ(formatBytes(94.53 * 1024 * 1024), "94.53 MiB");
}

TEST(Report, SecondsWithThreeDigitsThenMinutesAndHours) {
  EXPECT_EQ(formatSeconds(0.00042), "0.42 ms");
  EXPECT_EQ(formatSeconds(0.027), "27.0 ms");
  EXPECT_EQ(formatSeconds(0.0518), "51.8 ms");
  EXPECT_EQ(formatSeconds(0.4), "400 ms");
  EXPECT_EQ(formatSeconds(0.9996), "1.00 s");
  EXPECT_EQ(formatSeconds(3.517), "3.52 s");
  EXPECT_EQ(formatSeconds(42.04), "42.0 s");
  EXPECT_EQ(formatSeconds(59.96), "1 min 0 s");
  EXPECT_EQ(formatSeconds(725), "12 min 5 s");
  EXPECT_EQ(formatSeconds(3599.4), "59 min 59 s");
  EXPECT_EQ(formatSeconds(3599.6), "1 h 0 min");
  EXPECT_EQ(formatSeconds(11520), "3 h 12 min");
}

} // namespace
} // namespace initrt

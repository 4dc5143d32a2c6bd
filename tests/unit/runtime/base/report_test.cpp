// Sizes and durations as messages spell them.
#include "initrt/base/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

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

// Where stderr is not a terminal (a log, a rank's pipe under mpirun): a line per interval, and
// a last one at the end only when an earlier one was written.
TEST(Report, ProgressInALogIsALinePerInterval) {
  testing::internal::CaptureStderr(); // stderr is a file now
  {
    ProgressBar bar(/*logInterval=*/0.0);
    bar.update(1 << 20, 4 << 20);
    bar.update(2 << 20, 4 << 20);
    bar.update(4 << 20, 4 << 20);
    bar.update(4 << 20, 4 << 20);
    bar.finish();
  }
  std::string lines = testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 3) << lines;
  EXPECT_EQ(lines.find('\r'), std::string::npos) << lines;
  EXPECT_EQ(lines.rfind("progress:  25%  1.00 MiB / 4.00 MiB", 0), 0u) << lines;
  EXPECT_NE(lines.find("progress: 100%  4.00 MiB / 4.00 MiB"), std::string::npos) << lines;

  testing::internal::CaptureStderr();
  {
    ProgressBar bar; // ten seconds: a short run says nothing
    bar.update(1, 2);
    bar.update(2, 2);
    bar.finish();
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

} // namespace
} // namespace initrt

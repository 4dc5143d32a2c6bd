// Telling people how things go: sizes, and a progress bar for long runs. One spelling for every
// message, summary and bar of initc and prog/init.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace initrt {

/// `bytes` in binary units: "512 B", "94.53 MiB", "1.48 TiB" (two decimals from KiB up).
std::string formatBytes(double bytes);

/// A tensor shape as messages and tables show it: "[4096, 1024]", "[]" for a scalar.
std::string shapeText(const std::vector<int64_t> &shape);

/// A duration for people, three significant digits up to a minute: "0.42 ms", "27.0 ms",
/// "3.52 s", "12 min 5 s", "3 h 12 min".
std::string formatSeconds(double seconds);

/// Called with the bytes done so far and the total.
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

/// Progress on stderr: bytes done of the total, rate and time left. On a terminal, a one-line
/// bar redrawn at most ten times a second; otherwise (a log, or a rank's stderr under mpirun,
/// which is a pipe) a line every kLogInterval seconds, so a short run prints none.
class ProgressBar {
public:
  /// `logInterval`: seconds between lines when stderr is not a terminal.
  explicit ProgressBar(double logInterval = kLogInterval);
  void update(uint64_t done, uint64_t total);
  /// Ends the bar's line, if one was drawn.
  void finish();

  static constexpr double kLogInterval = 10.0;

private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  Clock::time_point lastDraw;
  double logInterval;
  bool terminal;
  bool drawn = false;
  uint64_t lastDone = 0;
};

} // namespace initrt

// Telling people how things go: sizes, and a progress bar for long runs. One spelling for every
// message, summary and bar of initc and prog/init.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace initrt {

/// `bytes` in binary units: "512 B", "94.53 MiB", "1.48 TiB" (two decimals from KiB up).
std::string formatBytes(double bytes);

/// A duration for people, three significant digits up to a minute: "0.42 ms", "27.0 ms",
/// "3.52 s", "12 min 5 s", "3 h 12 min".
std::string formatSeconds(double seconds);

/// Called with the bytes done so far and the total.
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

/// A one-line bar on stderr (bytes done of the total, rate, time left), redrawn at most ten
/// times a second. Meant for a terminal: callers check isatty(2).
class ProgressBar {
public:
  void update(uint64_t done, uint64_t total);
  /// Ends the bar's line, if one was drawn.
  void finish();

private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  Clock::time_point lastDraw;
  bool drawn = false;
};

} // namespace initrt

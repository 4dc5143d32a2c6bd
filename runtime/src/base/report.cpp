#include "initrt/base/report.h"

#include <cmath>
#include <cstdio>
#include <unistd.h>

namespace initrt {

std::string formatBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.2f %s", bytes, units[unit]);
  return text;
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

std::string formatSeconds(double seconds) {
  char text[32];
  double ms = seconds * 1e3;
  if (ms < 999.5)
    std::snprintf(text, sizeof(text), ms < 9.995 ? "%.2f ms" : ms < 99.95 ? "%.1f ms" : "%.0f ms",
                  ms);
  else if (seconds < 59.95)
    std::snprintf(text, sizeof(text), seconds < 9.995 ? "%.2f s" : "%.1f s", seconds);
  else if (seconds < 3599.5) {
    long long whole = std::llround(seconds);
    std::snprintf(text, sizeof(text), "%lld min %lld s", whole / 60, whole % 60);
  } else {
    long long minutes = std::llround(seconds / 60);
    std::snprintf(text, sizeof(text), "%lld h %lld min", minutes / 60, minutes % 60);
  }
  return text;
}

ProgressBar::ProgressBar(double logInterval)
    : lastDraw(start), logInterval(logInterval), terminal(isatty(2)) {}

void ProgressBar::update(uint64_t done, uint64_t total) {
  Clock::time_point now = Clock::now();
  double sinceDraw = std::chrono::duration<double>(now - lastDraw).count();
  // In a log, the end gets a line when an earlier one was written (a long run), and only one.
  if (terminal        ? done < total && drawn && sinceDraw < 0.1
      : done == total ? !drawn || lastDone == total
                      : sinceDraw < logInterval)
    return;
  lastDone = done;
  lastDraw = now;
  double seconds = std::chrono::duration<double>(now - start).count();
  double fraction = total ? double(done) / double(total) : 1.0;
  double rate = seconds > 0 ? double(done) / seconds : 0;
  char eta[32] = "";
  if (rate > 0 && done < total)
    std::snprintf(eta, sizeof(eta), "  ETA %s",
                  formatSeconds(double(total - done) / rate).c_str());
  std::string amounts = formatBytes(double(done)) + " / " + formatBytes(double(total)) + "  " +
                        formatBytes(rate) + "/s" + eta;
  if (terminal) {
    constexpr int kWidth = 30;
    std::string bar(size_t(fraction * kWidth), '#');
    bar.resize(kWidth, ' ');
    std::fprintf(stderr, "\r[%s] %s\033[K", bar.c_str(), amounts.c_str());
  } else {
    std::fprintf(stderr, "progress: %3.0f%%  %s  (%s)\n", std::floor(fraction * 100),
                 amounts.c_str(), formatSeconds(seconds).c_str());
  }
  drawn = true;
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (drawn && terminal)
    std::fprintf(stderr, "\n");
  drawn = false;
}

} // namespace initrt

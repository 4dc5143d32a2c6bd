#include "initrt/report.h"

#include <cstdio>

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

void ProgressBar::update(uint64_t done, uint64_t total) {
  Clock::time_point now = Clock::now();
  if (done < total && drawn && now - lastDraw < std::chrono::milliseconds(100))
    return;
  lastDraw = now;
  drawn = true;
  double seconds = std::chrono::duration<double>(now - start).count();
  double fraction = total ? double(done) / double(total) : 1.0;
  double rate = seconds > 0 ? double(done) / seconds : 0;
  constexpr int kWidth = 30;
  std::string bar(size_t(fraction * kWidth), '#');
  bar.resize(kWidth, ' ');
  char eta[32] = "";
  if (rate > 0 && done < total)
    std::snprintf(eta, sizeof(eta), "  ETA %.0f s", double(total - done) / rate);
  std::fprintf(stderr, "\r[%s] %s / %s  %s/s%s\033[K", bar.c_str(),
               formatBytes(double(done)).c_str(), formatBytes(double(total)).c_str(),
               formatBytes(rate).c_str(), eta);
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (drawn)
    std::fprintf(stderr, "\n");
  drawn = false;
}

} // namespace initrt

// The table of temporaries and the signal handler that removes them.
#include "initrt/base/temporaries.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <iterator>
#include <mutex>
#include <unistd.h>

namespace initrt {

namespace {

// Temporaries being written, for the signal handler that removes them: a fixed table of paths,
// each slot claimed and released by atomic operations only, so that the handler (which may run on
// any thread, at any moment) reads a path only once it is complete and never one being reused.
enum TempSlotState : int { kSlotFree, kSlotFilling, kSlotLive, kSlotTaken };
constexpr size_t kTempSlots = 64;
constexpr size_t kTempPathMax = 4096;
struct TempSlot {
  std::atomic<int> state{kSlotFree};
  bool directory = false;
  char path[kTempPathMax];
};
TempSlot gTempSlots[kTempSlots];
// SIGABRT: an internal error's abort() (an LLVM fatal error) leaves no temporary behind either.
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGABRT};
struct sigaction gPreviousActions[std::size(kCleanupSignals)];
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

// Empties and removes a directory of files with system calls only (async-signal-safe: no
// opendir, which allocates). Entries removed while listing may shift the listing: it is read
// again until nothing is left to remove.
void removeDirectoryOfFiles(const char *path) {
  int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    alignas(struct dirent64) char buffer[4096];
    for (bool removed = true; removed;) {
      removed = false;
      ::lseek(fd, 0, SEEK_SET);
      for (ssize_t n; (n = ::getdents64(fd, buffer, sizeof buffer)) > 0;)
        for (ssize_t at = 0; at < n;) {
          const auto *entry = reinterpret_cast<const struct dirent64 *>(buffer + at);
          at += entry->d_reclen;
          const char *name = entry->d_name;
          if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0 &&
              ::unlinkat(fd, name, 0) == 0)
            removed = true;
        }
    }
    ::close(fd);
  }
  ::rmdir(path);
}

// Removes every registered temporary, then lets the signal do what it did before this handler
// was installed (by default, end the process: its exit status still says which signal).
void removeTemporariesOnSignal(int signal) {
  int savedErrno = errno;
  for (TempSlot &slot : gTempSlots) {
    int expected = kSlotLive;
    if (slot.state.compare_exchange_strong(expected, kSlotTaken, std::memory_order_acquire)) {
      if (slot.directory)
        removeDirectoryOfFiles(slot.path);
      else
        ::unlink(slot.path);
    }
  }
  for (size_t i = 0; i < std::size(kCleanupSignals); ++i)
    if (kCleanupSignals[i] == signal)
      ::sigaction(signal, &gPreviousActions[i], nullptr);
  // Pending until this handler returns (the signal is blocked while it runs), then delivered to
  // the previous action.
  ::raise(signal);
  errno = savedErrno;
}

void installCleanupHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_handler = removeTemporariesOnSignal;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (int signal : kCleanupSignals)
      sigaddset(&action.sa_mask, signal);
    for (size_t i = 0; i < std::size(kCleanupSignals); ++i) {
      struct sigaction &previous = gPreviousActions[i];
      if (::sigaction(kCleanupSignals[i], nullptr, &previous) != 0)
        continue;
      // An ignored signal (nohup) stays ignored.
      if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler == SIG_IGN)
        continue;
      ::sigaction(kCleanupSignals[i], &action, nullptr);
    }
  });
}

} // namespace

int registerTemporary(const std::string &path, bool directory) {
  installCleanupHandler();
  if (path.size() >= kTempPathMax)
    return -1;
  for (size_t i = 0; i < kTempSlots; ++i) {
    int expected = kSlotFree;
    if (gTempSlots[i].state.compare_exchange_strong(expected, kSlotFilling,
                                                    std::memory_order_acquire)) {
      std::memcpy(gTempSlots[i].path, path.c_str(), path.size() + 1);
      gTempSlots[i].directory = directory;
      gTempSlots[i].state.store(kSlotLive, std::memory_order_release);
      return int(i);
    }
  }
  return -1;
}

void unregisterTemporary(int &slot) {
  if (slot < 0)
    return;
  int expected = kSlotLive;
  // Taken: the handler is removing it and the process is ending; the slot is never reused.
  gTempSlots[size_t(slot)].state.compare_exchange_strong(expected, kSlotFree,
                                                         std::memory_order_release);
  slot = -1;
}

void ignoreFileSizeSignal() {
  static std::once_flag once;
  std::call_once(once, [] { std::signal(SIGXFSZ, SIG_IGN); });
}

} // namespace initrt

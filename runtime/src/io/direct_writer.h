// Writing a large file past the page cache (O_DIRECT) from a thread of its own: the runtime's
// bypass of AtomicFile (initrt/base/atomic_file.h) for checkpoint shards.
#pragma once

#include "initrt/base/atomic_file.h"
#include "initrt/base/direct_io.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace initrt {

/// Writes byte ranges of one file, opened with O_DIRECT, in any order. A range is copied into an
/// aligned staging buffer and written in whole blocks as it grows; the ranges that continue each
/// other (a tensor written piece by piece) form one run. The blocks a run covers only in part
/// wait in memory until the runs sharing them have arrived, then are written whole. Each byte
/// must be written at most once. A full staging buffer is written by a thread of the writer's
/// own while the caller fills the next, so that the device is busy while the caller computes or
/// reads. Where the file system refuses direct I/O (EINVAL on a write), the writer turns O_DIRECT
/// off and goes on through the page cache, losing nothing.
class DirectWriter final : public PageCacheBypass {
public:
  /// `fd` is open for writing with O_DIRECT set; `size` is the file's final length;
  /// `blockBytes` is a power of two that the file system's direct I/O alignment divides.
  DirectWriter(int fd, uint64_t size, uint64_t blockBytes);
  ~DirectWriter() override;
  DirectWriter(const DirectWriter &) = delete;
  DirectWriter &operator=(const DirectWriter &) = delete;

  /// Writes `bytes` at `offset` (or hands them on to be written). Returns 0, or the errno of a
  /// failed write, this one's or an earlier one's.
  int write(uint64_t offset, const void *data, uint64_t bytes) override;
  /// Waits for every write handed on, then writes every block still waiting, its unwritten
  /// bytes as zeros, and the last block through the page cache up to `size`: no write goes
  /// past it. Returns 0 or an errno.
  int finish() override;
  /// Whether writes still bypass the page cache (false once the file system refused them, and
  /// after finish()).
  bool direct() const override { return directOn; }
  /// Whether the file system refused direct I/O and the writer went on through the page cache.
  bool fellBack() const { return refusedByFileSystem; }

private:
  struct Buffer {
    std::unique_ptr<char, void (*)(void *)> data{nullptr, nullptr};
    uint64_t covered = 0; // for a waiting block: how many of its bytes have arrived
  };
  using Range = std::pair<uint64_t, uint64_t>; // file offset, bytes
  /// A staging buffer handed to the writing thread: `ranges` of it, whole blocks, its first byte
  /// at file offset `base`.
  struct Job {
    Buffer buffer;
    uint64_t base = 0;
    std::vector<Range> ranges;
  };
  Buffer allocate(uint64_t bytes) const;
  bool isTail(uint64_t block) const;       // the block `size` ends inside
  uint64_t lengthOf(uint64_t block) const; // its bytes up to `size`
  int closeRun();
  int emit();
  int merge(uint64_t block, uint64_t from, uint64_t to);
  int handOn(std::vector<Range> ranges);
  void writeBehind();
  int writeBlocks(const char *data, uint64_t offset, uint64_t bytes, bool onWriterThread = false);
  int fallBackToPageCache();

  const int fd;
  const uint64_t size, blockBytes, stageBytes;
  Buffer stage;
  bool directOn = true;
  bool refusedByFileSystem = false;
  bool runOpen = false;
  uint64_t runStart = 0, runEnd = 0; // the run being staged
  uint64_t stageBase = 0;            // the file offset of stage's first byte, block-aligned
  std::unordered_map<uint64_t, Buffer> waiting; // blocks written in part, by offset

  // The writing thread, and what it shares with the caller (under `mutex`).
  std::thread writer;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Job> jobs;
  std::vector<Buffer> spare; // staging buffers written out, to fill again
  uint64_t stagesMade = 0;
  bool stopping = false, abandoning = false;
  int writerError = 0;
  std::atomic<bool> refused{false}; // the writing thread met EINVAL and turned O_DIRECT off
};

/// AtomicFile's bypass for large files written once: a DirectWriter where the file system allows
/// it and the file is at least kDirectMinFileBytes (directIoWanted), else nullptr (the page cache).
std::unique_ptr<PageCacheBypass> bypassPageCache(int fd, uint64_t size);

} // namespace initrt

// Writing and reading large files past the page cache (O_DIRECT).
//
// Through the page cache, every byte of a checkpoint is copied once more into cache pages, which
// then have to be found, written back and evicted; on the machines measured (benchmarks/README.md)
// that made a buffered write plus fsync 3 to 5 times slower than writing the same bytes with
// O_DIRECT, and a cold read take 1 to 5 s of system time per 4 GiB where a direct one takes 0.15 s.
// Direct I/O asks for block-aligned offsets, lengths and buffers, which tensor data does not have:
// DirectWriter stages the ranges it is given into aligned buffers, readFileRange reads whole
// blocks around the range it is asked for.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace initrt {

/// A staging buffer: large enough that the device sees long requests, small enough to stay in
/// the last-level cache while pieces are copied in.
inline constexpr uint64_t kDirectStageBytes = 16ull << 20;
/// Staging buffers per writer: one is filled while the other is written.
inline constexpr uint64_t kDirectStages = 2;
/// Files this large are written and read past the page cache; smaller ones gain little.
inline constexpr uint64_t kDirectMinFileBytes = 64ull << 20;
/// Reads this long, of such files, are past the page cache: a shorter one would wait on the
/// device alone, where the kernel's read-ahead serves a sequence of them from memory.
inline constexpr uint64_t kDirectMinReadBytes = 1ull << 20;

/// Whether the file open as `fd`, `fileBytes` long, is written, or read `readBytes` at a time,
/// past the page cache: INITRT_DIRECT_IO=1 says always and =0 never; by default, files of
/// kDirectMinFileBytes or more on local file systems, in reads of kDirectMinReadBytes or more.
/// Network and FUSE file systems, where each direct request is a synchronous one of the server
/// and the gain was not measured, keep the page cache.
bool directIoWanted(int fd, uint64_t fileBytes, uint64_t readBytes = UINT64_MAX);
/// False, with `error` saying what it takes, for an INITRT_DIRECT_IO that is not 0, 1 or unset:
/// checked before a run, so that a mistyped setting is not silently the default.
bool checkDirectIoSetting(std::string &error);
/// The alignment the file system asks of direct I/O on `fd` (a power of two, at least 4096), or 0
/// when it says it takes none.
uint64_t directIoBlock(int fd);

/// Reads bytes [offset, offset + bytes) of the file open as `fd`, handing them to `take` in
/// order, in pieces of at most kDirectStageBytes; past the page cache when `pastCache` (a file
/// read once), going on through it where the file system refuses. Returns 0, the errno of a
/// failed read, or -1 when the file ends first. The pieces are in a buffer of the calling
/// thread's, valid during `take`.
int readFileRange(int fd, uint64_t offset, uint64_t bytes, bool pastCache,
                  const std::function<void(const char *data, uint64_t bytes)> &take);

/// Writes byte ranges of one file, opened with O_DIRECT, in any order. A range is copied into an
/// aligned staging buffer and written in whole blocks as it grows; the ranges that continue each
/// other (a tensor written piece by piece) form one run. The blocks a run covers only in part
/// wait in memory until the runs sharing them have arrived, then are written whole. Each byte
/// must be written at most once. A full staging buffer is written by a thread of the writer's
/// own while the caller fills the next, so that the device is busy while the caller computes or
/// reads. Where the file system refuses direct I/O (EINVAL on a write), the writer turns O_DIRECT
/// off and goes on through the page cache, losing nothing.
class DirectWriter {
public:
  /// `fd` is open for writing with O_DIRECT set; `size` is the file's final length;
  /// `blockBytes` is a power of two that the file system's direct I/O alignment divides.
  DirectWriter(int fd, uint64_t size, uint64_t blockBytes);
  ~DirectWriter();
  DirectWriter(const DirectWriter &) = delete;
  DirectWriter &operator=(const DirectWriter &) = delete;

  /// Writes `bytes` at `offset` (or hands them on to be written). Returns 0, or the errno of a
  /// failed write, this one's or an earlier one's.
  int write(uint64_t offset, const void *data, uint64_t bytes);
  /// Waits for every write handed on, then writes every block still waiting, its unwritten
  /// bytes as zeros, and the last block through the page cache up to `size`: no write goes
  /// past it. Returns 0 or an errno.
  int finish();
  /// Whether writes still bypass the page cache (false once the file system refused them, and
  /// after finish()).
  bool direct() const { return directOn; }
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

} // namespace initrt

// Files that appear whole or not at all: written under a temporary name and renamed into place,
// and the temporaries a killed writer left, cleaned up by the next.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace initrt {

/// Writes a file's bytes past the page cache, each byte once, in any order. The base layer has
/// none (it starts no thread); the runtime's is DirectWriter (src/io/direct_writer.h).
class PageCacheBypass {
public:
  virtual ~PageCacheBypass();
  /// Writes `bytes` at `offset`. Returns 0 or an errno.
  virtual int write(uint64_t offset, const void *data, uint64_t bytes) = 0;
  /// Writes everything still held, up to the file's final length. Returns 0 or an errno.
  virtual int finish() = 0;
  /// Whether writes still bypass the page cache.
  virtual bool direct() const = 0;
};

/// How an AtomicFile's data reaches the disk: nullptr for buffered writes (small files, files
/// read back soon), or a function that makes a bypass for the file open as `fd`, `size` bytes
/// long, or returns nullptr where the page cache is better (the runtime's bypassPageCache: large
/// files written once, such as checkpoints).
using PageCacheBypassMaker = std::unique_ptr<PageCacheBypass> (*)(int fd, uint64_t size);

/// A file written under a temporary name in its final directory (".<name>.tmp-<pid>") and renamed
/// into place by commit() after an fsync, then the directory is fsynced. Until commit() succeeds
/// nothing exists under the final name; the destructor removes an uncommitted temporary.
/// Errors say what to do ("no space left on DIR: free space or choose another --out").
/// While it is written, the temporary is locked (flock: removeAbandonedTemporary leaves it alone)
/// and listed for a handler of SIGINT, SIGTERM, SIGHUP and SIGABRT that removes it before the
/// signal takes its previous course (by default, ending the process). Created with mode 0666 less
/// the umask. A symbolic link is followed (its target is replaced, the link stays); a pipe, a
/// device or a socket is written directly, since a rename would replace it with a regular file.
/// Bytes of written ranges that AtomicFile::startWriteback gathers before it starts them.
inline constexpr uint64_t kWritebackBatchBytes = 4ull << 20;

class AtomicFile {
public:
  AtomicFile() = default;
  ~AtomicFile();
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;

  /// `expectedBytes`, when known, is reserved up front so that a full disk fails before writing.
  /// With a `bypass` it must be the file's final length, and each byte is written once.
  bool open(const std::string &path, uint64_t expectedBytes, std::string &error,
            PageCacheBypassMaker bypass = nullptr);
  /// Writes all of `bytes`, in large pieces, retrying short writes and EINTR.
  bool write(const void *data, uint64_t bytes, std::string &error);
  /// Writes all of `bytes` at `offset` (pwrite), leaving the file position alone; safe to call
  /// from one thread while no other writes. The file then ends at least at offset + bytes.
  bool writeAt(uint64_t offset, const void *data, uint64_t bytes, std::string &error);
  /// Starts writing [offset, offset + bytes) back to the device without waiting, so that
  /// commit's fsync finds little left to do (Linux sync_file_range; a no-op elsewhere). Ranges
  /// are gathered until kWritebackBatchBytes of them are waiting: each request costs a trip to
  /// the device, which for a model of many small tensors was most of the time spent writing it.
  void startWriteback(uint64_t offset, uint64_t bytes);
  bool commit(std::string &error);
  /// Removes the temporary file; called by the destructor when not committed.
  void discard();

private:
  std::string finalPath, tempPath;
  int fd = -1;
  bool inPlace = false;                 // writing a pipe or device itself: no temporary, no rename
  std::unique_ptr<PageCacheBypass> bypass; // past the page cache, where the file system takes it
  uint64_t appendAt = 0;                // where write() goes on, when `bypass` writes
  int signalSlot = -1;     // the temporary's entry in the table a cleanup signal clears
  uint64_t writtenEnd = 0; // end of the furthest writeAt
  // The ranges given to startWriteback and not yet started: their span and their total bytes.
  uint64_t writebackFrom = UINT64_MAX, writebackTo = 0, writebackBytes = 0;
};

/// Removes `path`, a temporary an AtomicFile left (".<name>.tmp-<pid>"), when no writer holds its
/// lock: its writer was killed or failed. A live writer's temporary, on any host, is kept, and so
/// is every temporary on a file system without locks. Returns whether it was removed.
bool removeAbandonedTemporary(const std::string &path);
/// removeAbandonedTemporary of every file in `dir` whose name starts with one of `prefixes`.
/// Returns how many were removed.
int removeAbandonedTemporaries(const std::string &dir, const std::vector<std::string> &prefixes);
/// Those an AtomicFile writing `path` would have left: a rerun of a killed writer cleans up after
/// it (a directory of many files is better cleaned once, with the prefix of them all).
int removeAbandonedTemporariesOf(const std::string &path);

/// Writes `contents` to `path` atomically.
bool writeFileAtomically(const std::string &path, const std::string &contents,
                         std::string &error);

} // namespace initrt

// Reading small files that must be regular files (program.json, index.json), and telling the
// version of a file that was read.
#pragma once

#include <cstdint>
#include <string>

struct stat;

namespace initrt {

/// Which version of a file was read, told apart without reading it again, as make and rsync do:
/// its size and modification time, and its status-change time, which `cp -p` and `touch -r`
/// cannot set back. Times are {seconds, nanoseconds}.
struct FileStamp {
  uint64_t bytes = 0;
  int64_t modified[2] = {0, 0};
  int64_t changed[2] = {0, 0};

  static FileStamp of(const struct stat &info);
  bool operator==(const FileStamp &other) const;
  bool operator!=(const FileStamp &other) const { return !(*this == other); }
};

/// The most program.json or index.json may hold. A 405B model's program for 16,384 ranks is
/// 1.7 MB and its index 1 MB: anything near this is not a file initc wrote.
inline constexpr uint64_t kMaxJsonFileBytes = uint64_t(256) << 20;

enum class ReadFileStatus { Ok, OpenFailed, NotRegular, TooLarge, ReadFailed };

/// Reads `path` whole when it is a regular file of at most `maxBytes`. It is opened without
/// blocking and checked (fstat) before any byte is read, so that a FIFO is never waited on and
/// a device (/dev/zero) or a directory is never read. On failure `why` says what it is instead
/// ("a FIFO", "4294967296 bytes, more than 268435456") or the system's reason.
ReadFileStatus readRegularFile(const std::string &path, uint64_t maxBytes, std::string &text,
                               std::string &why, FileStamp *stamp = nullptr);

/// "a directory", "a FIFO", "a character device", ... for a stat mode that is not a regular file.
std::string fileKindText(unsigned mode);

} // namespace initrt

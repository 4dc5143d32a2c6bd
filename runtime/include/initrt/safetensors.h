// Reading and writing safetensors files (ir-spec/checkpoint.md, "Shard files").
//
// The writer lays tensors out as the reference implementation (huggingface/safetensors) does, so
// its bytes are identical to `safetensors.torch.save_file`; the reader applies the reference
// reader's validation. Tensor data is never copied: the writer streams from the caller's memory
// and the reader preads into the caller's buffer.
#pragma once

#include "initrt/direct_io.h"
#include "initrt/files.h"
#include "initrt/report.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace initrt {

/// Largest header the reference reader accepts.
inline constexpr uint64_t kSafetensorsMaxHeaderSize = 100000000;

/// Bits per element of a safetensors dtype name ("F32" -> 32), or 0 if the name is unknown.
int safetensorsDTypeBits(const std::string &dtype);

/// Position of a dtype in the reference enum, which is in increasing alignment order; -1 if unknown.
int safetensorsDTypeRank(const std::string &dtype);

/// The __metadata__ map, in the order it is written.
using SafetensorsMetadata = std::vector<std::pair<std::string, std::string>>;

/// A tensor to write: `bytes` bytes at `data`, owned by the caller, row-major.
struct SafetensorsTensor {
  std::string name;
  std::string dtype; // safetensors name: "F32", "BF16", ...
  std::vector<int64_t> shape;
  const void *data = nullptr;
  uint64_t bytes = 0;
};

/// Builds the file's first 8 + N bytes (length prefix and padded JSON header) and the order in
/// which tensor data follows it (indices into `tensors`). Fails on an unknown dtype, a size that
/// does not match the shape, a duplicate or invalid UTF-8 name.
bool buildSafetensorsHeader(const std::vector<SafetensorsTensor> &tensors,
                            const std::optional<SafetensorsMetadata> &metadata,
                            std::string &header, std::vector<size_t> &dataOrder,
                            std::string &error);

/// Writes `path` atomically (AtomicFile). __metadata__ is omitted when `metadata` is empty.
/// `progress` (optional) hears the tensor bytes written, tensor by tensor.
bool writeSafetensors(const std::string &path, const std::vector<SafetensorsTensor> &tensors,
                      const std::optional<SafetensorsMetadata> &metadata, std::string &error,
                      const ProgressFn &progress = {});

/// How an AtomicFile's data reaches the disk.
enum class FileCaching {
  PageCache, // buffered writes: small files, files read back soon
  /// Large files written once (checkpoints): past the page cache (DirectWriter) where the file
  /// system allows it and the file is at least kDirectMinFileBytes, except on network and FUSE
  /// file systems. INITRT_DIRECT_IO=0 turns this off, INITRT_DIRECT_IO=1 applies it to any file.
  Bypass,
};

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
  /// With FileCaching::Bypass it must be the file's final length, and each byte is written once.
  bool open(const std::string &path, uint64_t expectedBytes, std::string &error,
            FileCaching caching = FileCaching::PageCache);
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
  void bypassPageCache(uint64_t expectedBytes);

  std::string finalPath, tempPath;
  int fd = -1;
  bool inPlace = false;                 // writing a pipe or device itself: no temporary, no rename
  std::unique_ptr<DirectWriter> bypass; // FileCaching::Bypass, where the file system takes it
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

/// One tensor of a file read back. Offsets are relative to the data section.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
  uint64_t bytes() const { return end - begin; }
};

/// An open safetensors file whose header has been validated. Tensor bytes are read on demand.
class SafetensorsReader {
public:
  SafetensorsReader() = default;
  ~SafetensorsReader();
  SafetensorsReader(SafetensorsReader &&other) noexcept;
  SafetensorsReader &operator=(SafetensorsReader &&other) noexcept;
  SafetensorsReader(const SafetensorsReader &) = delete;
  SafetensorsReader &operator=(const SafetensorsReader &) = delete;

  /// Opens `path` and validates it as the reference reader does: header size, UTF-8 JSON, known
  /// dtypes, string-to-string metadata, no duplicate names, sizes matching shapes, offsets
  /// contiguous from 0 and the file length exact. Errors name the file.
  bool open(const std::string &path, std::string &error);

  const std::string &path() const { return filePath; }
  /// The file as it was opened.
  const FileStamp &stamp() const { return fileStamp; }
  /// Whether the file is still as it was opened (its size and times).
  bool unchanged() const;
  /// Tensors in data-offset order.
  const std::vector<SafetensorsEntry> &tensors() const { return entries; }
  const SafetensorsEntry *find(const std::string &name) const;
  bool hasMetadata() const { return metadataPresent; }
  const SafetensorsMetadata &metadata() const { return metadataEntries; }
  /// The metadata value for `key`, or nullptr.
  const std::string *metadataValue(const std::string &key) const;
  /// Byte offset of the data section in the file (8 + N).
  uint64_t dataStart() const { return dataOffset; }

  /// Reads `bytes` bytes starting `offset` bytes into the data section.
  bool read(uint64_t offset, void *out, uint64_t bytes, std::string &error) const;
  /// XXH3-64 hex of a tensor's bytes, read once, in bounded pieces: past the page cache when the
  /// file is large (directIoWanted), so that they do not fill it.
  bool checksum(const SafetensorsEntry &entry, std::string &hex, std::string &error) const;

private:
  /// Hands bytes [offset, offset + bytes) of the data section to `take`, piece by piece, read
  /// once (readFileRange).
  bool readEach(uint64_t offset, uint64_t bytes,
                const std::function<void(const char *, uint64_t)> &take, std::string &error) const;

  std::string filePath;
  FileStamp fileStamp;
  int fd = -1;
  uint64_t dataOffset = 0;
  bool metadataPresent = false;
  SafetensorsMetadata metadataEntries;
  std::vector<SafetensorsEntry> entries;
  std::unordered_map<std::string, size_t> byName; // index into entries
};

} // namespace initrt

// Reading and writing safetensors files (ir-spec/checkpoint.md, "Shard files").
//
// The writer lays tensors out as the reference implementation (huggingface/safetensors) does, so
// its bytes are identical to `safetensors.torch.save_file`; the reader applies the reference
// reader's validation. Tensor data is never copied: the writer streams from the caller's memory
// and the reader preads into the caller's buffer.
#pragma once

#include "initrt/base/files.h"
#include "initrt/base/report.h"

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
/// does not match the shape, a duplicate or invalid UTF-8 name. Only names, dtypes, shapes and
/// sizes are read (`data` may be null): a layout is planned before its values exist.
bool buildSafetensorsHeader(const std::vector<SafetensorsTensor> &tensors,
                            const std::optional<SafetensorsMetadata> &metadata,
                            std::string &header, std::vector<size_t> &dataOrder,
                            std::string &error);

/// Writes `path` atomically (AtomicFile). __metadata__ is omitted when `metadata` is empty.
/// `progress` (optional) hears the tensor bytes written, tensor by tensor.
bool writeSafetensors(const std::string &path, const std::vector<SafetensorsTensor> &tensors,
                      const std::optional<SafetensorsMetadata> &metadata, std::string &error,
                      const ProgressFn &progress = {});

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

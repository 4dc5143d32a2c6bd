// One mapping that holds all of a rank's shards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace initrt {

/// Anonymous memory for a rank's shards: one mmap, each shard 64-byte aligned (2 MiB aligned when
/// it is at least 2 MiB, so it starts on a huge page), with transparent huge pages requested.
/// Nothing is touched here: each page is first written by the thread that computes it.
class Arena {
public:
  /// Alignment of every shard, and of large shards.
  static constexpr uint64_t kAlignment = 64;
  static constexpr uint64_t kHugePage = uint64_t(2) << 20;

  Arena() = default;
  ~Arena();
  Arena(Arena &&other) noexcept;
  Arena &operator=(Arena &&other) noexcept;
  Arena(const Arena &) = delete;
  Arena &operator=(const Arena &) = delete;

  /// Lays out shards of the given byte sizes and maps memory for them. Returns false with an
  /// actionable message if the mapping fails: "cannot allocate SIZE `purpose`: REASON; `advice`".
  bool allocate(
      const std::vector<uint64_t> &shardBytes, std::string &error,
      const std::string &purpose = "for this rank's shards",
      const std::string &advice = "use more ranks (a larger mesh) or a machine with more memory");

  /// Start of shard `index`; never null, even for an empty shard.
  void *shard(size_t index) const;
  uint64_t shardBytes(size_t index) const { return sizes[index]; }
  size_t shardCount() const { return offsets.size(); }
  /// Bytes mapped, padding included.
  uint64_t mappedBytes() const { return length; }
  /// Sum of the shard sizes.
  uint64_t payloadBytes() const;

private:
  void release();

  void *base = nullptr;
  uint64_t length = 0;
  std::vector<uint64_t> offsets;
  std::vector<uint64_t> sizes;
};

/// Asks for transparent huge pages on the 2 MiB pages wholly inside [data, data + bytes): a fresh
/// page then faults in about 6x faster. Advisory (pages already present keep their size, and
/// nothing fails where THP is off); only for memory that is about to be written whole.
void adviseHugePages(void *data, uint64_t bytes);

/// Faults in, writable, the 4 KiB pages of [data, data + bytes) that lie wholly inside the
/// destination [lo, hi), in one system call (MADV_POPULATE_WRITE, Linux 5.14+) instead of one
/// fault per page; contents are unchanged. Returns false, and does nothing from then on, where
/// the kernel lacks it; other failures (memory that is not anonymous or not writable) are left
/// to the writes that follow, which fault as they would have.
bool populatePages(const void *data, uint64_t bytes, const void *lo, const void *hi);

} // namespace initrt

// The rank's shard arena: one anonymous mapping, huge pages where the kernel allows them.
#include "executor/arena.h"

#include "initrt/base/report.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>

namespace initrt {

namespace {

// Empty shards and empty arenas still get a valid, aligned address.
alignas(Arena::kAlignment) char emptyShard[Arena::kAlignment];

uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

} // namespace

Arena::~Arena() { release(); }

Arena::Arena(Arena &&other) noexcept { *this = std::move(other); }

Arena &Arena::operator=(Arena &&other) noexcept {
  if (this != &other) {
    release();
    base = other.base;
    length = other.length;
    offsets = std::move(other.offsets);
    sizes = std::move(other.sizes);
    other.base = nullptr;
    other.length = 0;
    other.offsets.clear();
    other.sizes.clear();
  }
  return *this;
}

void Arena::release() {
  if (base)
    munmap(base, length);
  base = nullptr;
  length = 0;
}

bool Arena::allocate(const std::vector<uint64_t> &shardBytes, std::string &error,
                     const std::string &purpose, const std::string &advice) {
  release();
  offsets.clear();
  sizes = shardBytes;
  uint64_t end = 0;
  for (uint64_t bytes : shardBytes) {
    uint64_t alignment = bytes >= kHugePage ? kHugePage : kAlignment;
    uint64_t offset = alignUp(end, alignment);
    if (offset < end || offset + bytes < offset) {
      error = "the rank's shards exceed the address space";
      return false;
    }
    offsets.push_back(offset);
    end = offset + bytes;
  }
  if (end == 0)
    return true;
  length = alignUp(end, kHugePage);
  // Map one huge page more than needed and trim, so that the base itself is 2 MiB aligned.
  uint64_t mapped = length + kHugePage;
  void *mapping = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) {
    error = "cannot allocate " + formatBytes(double(length)) + " " + purpose + ": " +
            std::strerror(errno) + "; " + advice;
    length = 0;
    return false;
  }
  uintptr_t raw = reinterpret_cast<uintptr_t>(mapping);
  uintptr_t aligned = alignUp(raw, kHugePage);
  if (aligned > raw)
    munmap(mapping, aligned - raw);
  if (raw + mapped > aligned + length)
    munmap(reinterpret_cast<void *>(aligned + length), raw + mapped - (aligned + length));
  base = reinterpret_cast<void *>(aligned);
  adviseHugePages(base, length);
  return true;
}

void *Arena::shard(size_t index) const {
  if (!base || sizes[index] == 0)
    return emptyShard;
  return static_cast<char *>(base) + offsets[index];
}

void adviseHugePages(void *data, uint64_t bytes) {
  uintptr_t start = alignUp(reinterpret_cast<uintptr_t>(data), Arena::kHugePage);
  uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) / Arena::kHugePage * Arena::kHugePage;
  if (end > start) // advisory: fine to fail where THP is off or the memory is not anonymous
    madvise(reinterpret_cast<void *>(start), end - start, MADV_HUGEPAGE);
}

bool populatePages(const void *data, uint64_t bytes, const void *lo, const void *hi) {
#ifdef MADV_POPULATE_WRITE
  static std::atomic<bool> unsupported{false};
  if (unsupported.load(std::memory_order_relaxed))
    return false;
  constexpr uintptr_t kPage = 4096;
  uintptr_t first = reinterpret_cast<uintptr_t>(data) / kPage * kPage;
  uintptr_t last = alignUp(reinterpret_cast<uintptr_t>(data) + bytes, kPage);
  // Never a page that holds memory outside the destination.
  first = std::max<uintptr_t>(first, alignUp(reinterpret_cast<uintptr_t>(lo), kPage));
  last = std::min<uintptr_t>(last, reinterpret_cast<uintptr_t>(hi) / kPage * kPage);
  if (last <= first)
    return true;
  if (madvise(reinterpret_cast<void *>(first), last - first, MADV_POPULATE_WRITE) != 0 &&
      errno == EINVAL) {
    unsupported.store(true, std::memory_order_relaxed);
    return false;
  }
  return true;
#else
  (void)data, (void)bytes, (void)lo, (void)hi;
  return false;
#endif
}

uint64_t Arena::payloadBytes() const {
  uint64_t total = 0;
  for (uint64_t bytes : sizes)
    total += bytes;
  return total;
}

} // namespace initrt

// DirectWriter: ranges written in any order, through aligned blocks past the page cache, give the
// file exactly the bytes written; a file system that refuses direct I/O midway loses nothing.
// readFileRange: any range read past the page cache gives the file's bytes and leaves no page.
#include "io/direct_writer.h"
#include "initrt/base/safetensors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <random>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace initrt;

namespace {

class DirectIoTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/initrt-direct-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir = pattern;
  }
  void TearDown() override {
    std::string command = "rm -rf '" + dir + "'";
    ASSERT_EQ(std::system(command.c_str()), 0);
  }

  std::string dir;
};

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string randomBytes(uint64_t size, std::mt19937_64 &rng) {
  std::string bytes(size, '\0');
  for (char &byte : bytes)
    byte = char(rng());
  return bytes;
}

using Range = std::pair<uint64_t, uint64_t>; // offset, length

/// [0, size) cut into ranges of 1 to `longest` bytes.
std::vector<Range> cut(uint64_t size, uint64_t longest, std::mt19937_64 &rng) {
  std::vector<Range> ranges;
  for (uint64_t at = 0; at < size;) {
    uint64_t length = std::min(size - at, 1 + rng() % longest);
    ranges.push_back({at, length});
    at += length;
  }
  return ranges;
}

/// The orders writers use: in sequence; runs of consecutive ranges in a shuffled order (a shard's
/// tensors, each written piece by piece); every range on its own; the first range last (a header
/// written once the data is known).
std::vector<std::pair<const char *, std::vector<Range>>> orders(const std::vector<Range> &ranges,
                                                                std::mt19937_64 &rng) {
  std::vector<std::pair<const char *, std::vector<Range>>> all;
  all.push_back({"in sequence", ranges});
  std::vector<std::vector<Range>> runs;
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (runs.empty() || rng() % 4 == 0)
      runs.emplace_back();
    runs.back().push_back(ranges[i]);
  }
  std::shuffle(runs.begin(), runs.end(), rng);
  std::vector<Range> byRuns;
  for (const std::vector<Range> &run : runs)
    byRuns.insert(byRuns.end(), run.begin(), run.end());
  all.push_back({"runs shuffled", byRuns});
  std::vector<Range> shuffled = ranges;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  all.push_back({"ranges shuffled", shuffled});
  std::vector<Range> headerLast(ranges.begin() + (ranges.empty() ? 0 : 1), ranges.end());
  if (!ranges.empty())
    headerLast.push_back(ranges.front());
  all.push_back({"first range last", headerLast});
  return all;
}

/// Opens `path` for direct writes; where the file system takes none, for buffered ones (the
/// writer must give the same bytes either way).
int openForWriting(const std::string &path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EINVAL)
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  return fd;
}

/// Writes `ranges` of `bytes` to `path` through a DirectWriter of `blockBytes` blocks; returns
/// whether the file system refused direct I/O and the writer fell back to the page cache.
bool writeThrough(const std::string &path, const std::string &bytes,
                  const std::vector<Range> &ranges, uint64_t blockBytes) {
  int fd = openForWriting(path);
  EXPECT_GE(fd, 0) << path;
  DirectWriter writer(fd, bytes.size(), blockBytes);
  for (const Range &range : ranges)
    EXPECT_EQ(writer.write(range.first, bytes.data() + range.first, range.second), 0);
  EXPECT_EQ(writer.finish(), 0);
  bool fellBack = writer.fellBack();
  struct stat info;
  EXPECT_EQ(::fstat(fd, &info), 0);
  EXPECT_EQ(uint64_t(info.st_size), bytes.size()) << "a write went past the file's size";
  ::close(fd);
  return fellBack;
}

/// The file system's alignment for direct I/O on a file in `dir`, 0 where it does not say.
uint64_t directAlignment(const std::string &dir) {
  std::string path = dir + "/probe";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  uint64_t alignment = 0;
#ifdef STATX_DIOALIGN
  struct statx info;
  if (fd >= 0 && ::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &info) == 0 &&
      (info.stx_mask & STATX_DIOALIGN))
    alignment = info.stx_dio_offset_align;
#endif
  if (fd >= 0)
    ::close(fd);
  ::unlink(path.c_str());
  return alignment;
}

TEST_F(DirectIoTest, RangesInAnyOrderGiveTheBytesWritten) {
  std::mt19937_64 rng(20261127);
  const uint64_t alignment = directAlignment(dir); // 0: no direct I/O, or the kernel does not say
  // Sizes around a block and around the 16 MiB staging buffer, ranges far below and above both.
  const std::vector<std::pair<uint64_t, uint64_t>> cases = {{1, 1},
                                                            {511, 100},
                                                            {4096, 4096},
                                                            {4097, 700},
                                                            {3 * 4096 + 100, 5000},
                                                            {(1 << 20) + 123, 300},
                                                            {(1 << 20) + 123, 70000},
                                                            {(40 << 20) + 5, 9 << 20},
                                                            {(17 << 20) + 4096, 1 << 20}};
  for (const auto &[size, longest] : cases) {
    std::string bytes = randomBytes(size, rng);
    for (const auto &[order, ranges] : orders(cut(size, longest, rng), rng)) {
      std::string path = dir + "/file";
      bool fellBack = writeThrough(path, bytes, ranges, 4096);
      if (alignment <= 4096)
        EXPECT_FALSE(fellBack) << size << " bytes, " << order;
      EXPECT_TRUE(readBytes(path) == bytes)
          << size << " bytes, ranges of at most " << longest << ", " << order;
    }
  }
}

// Blocks of half the file system's alignment: the first write the kernel refuses turns direct I/O
// off, with blocks already written directly and others waiting for their missing bytes.
TEST_F(DirectIoTest, RefusedDirectWritesFallBackWithoutLosingBytes) {
  uint64_t alignment = directAlignment(dir);
  if (alignment < 2)
    GTEST_SKIP() << "the file system of " << dir << " reports no direct I/O alignment";
  std::mt19937_64 rng(7);
  uint64_t size = 64 * alignment + 17;
  std::string bytes = randomBytes(size, rng);
  int fellBack = 0;
  for (const auto &[order, ranges] : orders(cut(size, 3 * alignment, rng), rng)) {
    std::string path = dir + "/file";
    fellBack += writeThrough(path, bytes, ranges, alignment / 2);
    EXPECT_TRUE(readBytes(path) == bytes) << order;
  }
  // In sequence, every whole block is written in one aligned range; the other orders start runs
  // at odd half-blocks.
  EXPECT_GE(fellBack, 3);
}

TEST_F(DirectIoTest, WriteErrorsAreReturned) {
  DirectWriter writer(-1, 8192, 4096);
  char data[4096] = {};
  EXPECT_EQ(writer.write(0, data, sizeof data), 0); // staged: nothing written yet
  EXPECT_EQ(writer.finish(), EBADF);
}

// AtomicFile with bypassPageCache, forced on for a small file, as shard files use it: pieces
// in any order, then the header, committed to the bytes written and nothing else.
TEST_F(DirectIoTest, AtomicFileBypassingThePageCacheWritesTheSameFile) {
  std::mt19937_64 rng(11);
  const uint64_t size = (3 << 20) + 1001;
  std::string bytes = randomBytes(size, rng);
  for (const char *setting : {"1", "0"}) {
    ASSERT_EQ(::setenv("INITRT_DIRECT_IO", setting, 1), 0);
    for (const auto &[order, ranges] : orders(cut(size, 200000, rng), rng)) {
      std::string path = dir + "/model.safetensors", error;
      AtomicFile file;
      ASSERT_TRUE(file.open(path, size, error, bypassPageCache)) << error;
      for (const Range &range : ranges)
        ASSERT_TRUE(file.writeAt(range.first, bytes.data() + range.first, range.second, error))
            << error;
      ASSERT_TRUE(file.commit(error)) << error;
      EXPECT_TRUE(readBytes(path) == bytes) << "INITRT_DIRECT_IO=" << setting << ", " << order;
    }
    // Sequential writes, as assemble makes them.
    std::string path = dir + "/seq.safetensors", error;
    AtomicFile file;
    ASSERT_TRUE(file.open(path, size, error, bypassPageCache)) << error;
    for (const Range &range : cut(size, 70000, rng))
      ASSERT_TRUE(file.write(bytes.data() + range.first, range.second, error)) << error;
    ASSERT_TRUE(file.commit(error)) << error;
    EXPECT_TRUE(readBytes(path) == bytes) << "INITRT_DIRECT_IO=" << setting;
  }
  ::unsetenv("INITRT_DIRECT_IO");
}

} // namespace

//===----------------------------------------------------------------------===//
// readFileRange
//===----------------------------------------------------------------------===//

/// Whether any page of `bytes` bytes at `offset` of `fd`'s file is in the page cache.
bool anyPageCached(int fd, uint64_t offset, uint64_t bytes) {
  void *map = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, off_t(offset));
  EXPECT_NE(map, MAP_FAILED);
  std::vector<unsigned char> pages((bytes + 4095) / 4096);
  EXPECT_EQ(mincore(map, bytes, pages.data()), 0);
  munmap(map, bytes);
  return std::any_of(pages.begin(), pages.end(), [](unsigned char page) { return page & 1; });
}

TEST_F(DirectIoTest, ReadRangesGiveTheFileBytesInOrder) {
  std::mt19937_64 rng(11);
  const uint64_t size = 2 * kDirectStageBytes + 12345; // three pieces at most, the last ragged
  const std::string bytes = randomBytes(size, rng), path = dir + "/file";
  std::ofstream(path, std::ios::binary) << bytes;
  int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const std::vector<Range> ranges = {{0, size},
                                     {0, 0},
                                     {1, 1},
                                     {4095, 2},
                                     {4096, 4096},
                                     {5000, (1 << 20) + 17},
                                     {size - 1, 1},
                                     {size - 4097, 4097},
                                     {kDirectStageBytes - 3, kDirectStageBytes + 6}};
  for (bool pastCache : {true, false})
    for (const Range &range : ranges) {
      std::string got;
      uint64_t pieces = 0;
      int err = readFileRange(fd, range.first, range.second, pastCache,
                              [&](const char *data, uint64_t length) {
                                EXPECT_LE(length, kDirectStageBytes);
                                EXPECT_GT(length, 0u);
                                got.append(data, length);
                                ++pieces;
                              });
      EXPECT_EQ(err, 0);
      EXPECT_TRUE(got == bytes.substr(range.first, range.second))
          << range.first << " + " << range.second << (pastCache ? " past the cache" : "");
      EXPECT_LE(pieces, (range.second + kDirectStageBytes - 1) / kDirectStageBytes + 1);
    }
  // Past the end of the file: -1, whatever was handed over before it.
  std::string got;
  EXPECT_EQ(readFileRange(fd, size - 10, 20, true,
                          [&](const char *data, uint64_t length) { got.append(data, length); }),
            -1);
  EXPECT_EQ(got, bytes.substr(size - 10));
  EXPECT_EQ(readFileRange(fd, size + 4096, 1, false, [](const char *, uint64_t) {}), -1);
  ::close(fd);
}

// The point of reading past the cache: the pages read are not left in it. Where the file system
// takes no direct I/O (tmpfs), the bytes still come, through the cache.
TEST_F(DirectIoTest, ReadingPastTheCacheLeavesNoPageInIt) {
  std::mt19937_64 rng(12);
  const uint64_t size = 4 << 20;
  const std::string path = dir + "/file";
  std::ofstream(path, std::ios::binary) << randomBytes(size, rng);
  int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fdatasync(fd), 0);
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  if (directIoBlock(fd) == 0 || anyPageCached(fd, 0, size)) {
    ::close(fd);
    GTEST_SKIP() << "this file system takes no direct I/O, or keeps its pages";
  }
  auto nothing = [](const char *, uint64_t) {};
  ASSERT_EQ(readFileRange(fd, 1, size - 2, true, nothing), 0);
  EXPECT_FALSE(anyPageCached(fd, 0, size));
  ASSERT_EQ(readFileRange(fd, 1, size - 2, false, nothing), 0);
  EXPECT_TRUE(anyPageCached(fd, 0, size));
  ::close(fd);
}

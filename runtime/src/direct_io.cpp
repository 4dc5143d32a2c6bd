#include "initrt/direct_io.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <system_error>
#include <unistd.h>

namespace initrt {

//===----------------------------------------------------------------------===//
// When to bypass the page cache
//===----------------------------------------------------------------------===//

namespace {
// Network and FUSE file systems, where direct I/O turns each request into a synchronous one of
// the server and its gain was not measured: they keep the page cache unless asked.
bool networkFileSystem(int fd) {
  struct statfs info;
  if (::fstatfs(fd, &info) != 0)
    return false;
  switch (uint32_t(info.f_type)) {
  case 0x6969:     // NFS
  case 0xFF534D42: // CIFS
  case 0xFE534D42: // SMB2
  case 0x517B:     // SMB
  case 0x65735546: // FUSE
    return true;
  default:
    return false;
  }
}
} // namespace

bool directIoWanted(int fd, uint64_t fileBytes, uint64_t readBytes) {
  const char *setting = std::getenv("INITRT_DIRECT_IO");
  if (setting && std::strcmp(setting, "0") == 0)
    return false;
  if (setting && std::strcmp(setting, "1") == 0)
    return true;
  return fileBytes >= kDirectMinFileBytes && readBytes >= kDirectMinReadBytes &&
         !networkFileSystem(fd);
}

bool checkDirectIoSetting(std::string &error) {
  const char *setting = std::getenv("INITRT_DIRECT_IO");
  if (!setting || !*setting || !std::strcmp(setting, "0") || !std::strcmp(setting, "1"))
    return true;
  error = std::string("INITRT_DIRECT_IO=") + setting +
          ": use 0 (through the page cache) or 1 (past it, for every file), or unset it (past "
          "it for files of 64 MiB or more on local file systems)";
  return false;
}

uint64_t directIoBlock(int fd) {
  uint64_t block = 4096;
#ifdef STATX_DIOALIGN
  struct statx info;
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &info) == 0 &&
      (info.stx_mask & STATX_DIOALIGN)) {
    if (info.stx_dio_offset_align == 0) // this file takes no direct I/O
      return 0;
    block =
        std::max({block, uint64_t(info.stx_dio_offset_align), uint64_t(info.stx_dio_mem_align)});
  }
#else
  (void)fd;
#endif
  return block;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

int readFileRange(int fd, uint64_t offset, uint64_t bytes, bool pastCache,
                  const std::function<void(const char *data, uint64_t bytes)> &take) {
  // The calling thread's buffer, kept between calls: a checkpoint is read tensor by tensor, and
  // fresh pages for each would cost as much as reading them.
  struct ReadBuffer {
    std::unique_ptr<char, void (*)(void *)> data{nullptr, std::free};
    uint64_t bytes = 0, alignment = 0;
  };
  thread_local ReadBuffer buffer;
  const uint64_t block = pastCache ? directIoBlock(fd) : 0;
  // O_DIRECT on a descriptor of its own (the file opened again through /proc): `fd` may be
  // read by other threads meanwhile, with offsets and lengths direct I/O does not take.
  int direct = -1;
  if (block) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    direct = ::open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
  }
  const uint64_t alignment = direct >= 0 ? block : 64;
  const uint64_t want = std::min(bytes, kDirectStageBytes) + 2 * alignment;
  if (buffer.bytes < want || buffer.alignment < alignment) {
    uint64_t size = (want + alignment - 1) / alignment * alignment;
    buffer.data.reset(static_cast<char *>(std::aligned_alloc(alignment, size)));
    buffer.bytes = buffer.data ? size : 0;
    buffer.alignment = alignment;
    if (!buffer.data) {
      if (direct >= 0)
        ::close(direct);
      return ENOMEM;
    }
  }
  int result = 0;
  for (uint64_t at = offset, end = offset + bytes; at < end && !result;) {
    if (direct >= 0) {
      // Whole blocks around [at, end), at most a staging buffer's worth; a read past the end of
      // the file stops at it.
      uint64_t start = at / block * block;
      uint64_t length = std::min(end - start, kDirectStageBytes);
      length = (length + block - 1) / block * block;
      ssize_t got = ::pread(direct, buffer.data.get(), length, off_t(start));
      if (got < 0 && errno == EINTR)
        continue;
      if (got < 0 && errno == EINVAL) { // refused: on through the page cache
        ::close(direct);
        direct = -1;
        continue;
      }
      if (got < 0)
        result = errno;
      else if (uint64_t(got) <= at - start)
        result = -1;
      else {
        uint64_t usable = std::min(start + uint64_t(got), end) - at;
        take(buffer.data.get() + (at - start), usable);
        at += usable;
      }
      continue;
    }
    uint64_t length = std::min(end - at, kDirectStageBytes);
    ssize_t got = ::pread(fd, buffer.data.get(), length, off_t(at));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      result = errno;
    else if (got == 0)
      result = -1;
    else {
      take(buffer.data.get(), uint64_t(got));
      at += uint64_t(got);
    }
  }
  if (direct >= 0)
    ::close(direct);
  return result;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {
// One pwrite moves at most this much (Linux caps a single write a little below 2 GiB).
constexpr uint64_t kMaxWrite = 1ull << 30;
} // namespace

DirectWriter::DirectWriter(int fd, uint64_t size, uint64_t blockBytes)
    : fd(fd), size(size), blockBytes(blockBytes),
      stageBytes(std::max(blockBytes, kDirectStageBytes / blockBytes * blockBytes)) {}

DirectWriter::~DirectWriter() {
  { // Not finished (a failed write, a discarded file): drop what is still queued.
    std::lock_guard<std::mutex> lock(mutex);
    stopping = abandoning = true;
  }
  changed.notify_all();
  if (writer.joinable())
    writer.join();
}

DirectWriter::Buffer DirectWriter::allocate(uint64_t bytes) const {
  Buffer buffer;
  void *memory = nullptr;
  if (::posix_memalign(&memory, size_t(std::max<uint64_t>(4096, blockBytes)), size_t(bytes)) == 0)
    buffer.data = {static_cast<char *>(memory), std::free};
  return buffer;
}

bool DirectWriter::isTail(uint64_t block) const {
  return size % blockBytes && block == size / blockBytes * blockBytes;
}

uint64_t DirectWriter::lengthOf(uint64_t block) const {
  return isTail(block) ? size - block : blockBytes;
}

int DirectWriter::write(uint64_t offset, const void *data, uint64_t bytes) {
  const char *source = static_cast<const char *>(data);
  if (refused && directOn) // the writing thread met a file system that takes no direct I/O
    if (int rc = fallBackToPageCache())
      return rc;
  if (!directOn)
    return writeBlocks(source, offset, bytes);
  if (!bytes)
    return 0;
  if (runOpen && offset != runEnd)
    if (int rc = closeRun())
      return rc;
  if (!directOn) // closing the run found that the file system refuses direct I/O
    return writeBlocks(source, offset, bytes);
  if (!stage.data) {
    if (!(stage = allocate(stageBytes)).data)
      return ENOMEM;
    stagesMade = 1;
  }
  if (!runOpen) {
    runOpen = true;
    runStart = runEnd = offset;
    stageBase = offset / blockBytes * blockBytes;
  }
  while (bytes) {
    uint64_t piece = std::min(bytes, stageBase + stageBytes - runEnd);
    std::memcpy(stage.data.get() + (runEnd - stageBase), source, size_t(piece));
    runEnd += piece;
    source += piece;
    bytes -= piece;
    if (runEnd == stageBase + stageBytes) {
      if (int rc = emit())
        return rc;
      stageBase = runEnd;
      if (!directOn) {
        runOpen = false;
        return writeBlocks(source, runEnd, bytes);
      }
    }
  }
  return 0;
}

int DirectWriter::closeRun() {
  int rc = emit();
  runOpen = false;
  return rc;
}

// Stages out the bytes [max(runStart, stageBase), runEnd): the blocks they cover only in part into
// the blocks waiting for the rest of their bytes, then the stage to the writing thread for the
// blocks they cover whole, as few ranges as possible.
int DirectWriter::emit() {
  const char *base = stage.data.get();
  const uint64_t from = std::max(runStart, stageBase);
  std::vector<Range> whole;
  for (uint64_t block = stageBase; block < runEnd; block += blockBytes) {
    uint64_t lo = std::max(block, from), hi = std::min(block + blockBytes, runEnd);
    if (directOn && lo == block && hi == block + blockBytes && !isTail(block)) {
      if (!whole.empty() && whole.back().first + whole.back().second == block)
        whole.back().second += blockBytes;
      else
        whole.push_back({block, blockBytes});
      continue;
    }
    int rc = directOn ? merge(block, lo, hi) : writeBlocks(base + (lo - stageBase), lo, hi - lo);
    if (rc)
      return rc;
  }
  return whole.empty() ? 0 : handOn(std::move(whole));
}

// Hands the stage to the writing thread (started on first use) and takes another: a spare one,
// a new one while there are fewer than kDirectStages, or the next one written out.
int DirectWriter::handOn(std::vector<Range> ranges) {
  std::unique_lock<std::mutex> lock(mutex);
  if (!writer.joinable()) {
    try {
      writer = std::thread([this] { writeBehind(); });
    } catch (const std::system_error &) { // no thread to be had: write here
      lock.unlock();
      for (const Range &range : ranges)
        if (int rc = writeBlocks(stage.data.get() + (range.first - stageBase), range.first,
                                 range.second))
          return rc;
      return 0;
    }
  }
  jobs.push_back({std::move(stage), stageBase, std::move(ranges)});
  changed.notify_all();
  if (spare.empty() && stagesMade < kDirectStages) {
    lock.unlock();
    if (!(stage = allocate(stageBytes)).data)
      return ENOMEM;
    ++stagesMade;
    return 0;
  }
  changed.wait(lock, [&] { return !spare.empty() || writerError; });
  if (writerError)
    return writerError;
  stage = std::move(spare.back());
  spare.pop_back();
  return 0;
}

// The writing thread: writes each staging buffer handed to it, in order, and gives it back.
void DirectWriter::writeBehind() {
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    changed.wait(lock, [&] { return stopping || !jobs.empty(); });
    if (abandoning || jobs.empty())
      return;
    Job job = std::move(jobs.front());
    jobs.pop_front();
    lock.unlock();
    int rc = 0;
    for (const Range &range : job.ranges)
      if (!rc)
        rc = writeBlocks(job.buffer.data.get() + (range.first - job.base), range.first,
                         range.second, /*onWriterThread=*/true);
    lock.lock();
    if (rc && !writerError)
      writerError = rc;
    spare.push_back(std::move(job.buffer));
    changed.notify_all();
  }
}

int DirectWriter::merge(uint64_t block, uint64_t from, uint64_t to) {
  auto found = waiting.find(block);
  if (found == waiting.end()) {
    Buffer buffer = allocate(blockBytes);
    if (!buffer.data)
      return ENOMEM;
    std::memset(buffer.data.get(), 0, size_t(blockBytes));
    found = waiting.emplace(block, std::move(buffer)).first;
  }
  std::memcpy(found->second.data.get() + (from - block), stage.data.get() + (from - stageBase),
              size_t(to - from));
  found->second.covered += to - from;
  // The tail waits for finish(), which writes it to `size` exactly.
  if (found->second.covered < lengthOf(block) || isTail(block))
    return 0;
  Buffer whole = std::move(found->second); // out of the map: a fallback writes what is left in it
  waiting.erase(found);
  return writeBlocks(whole.data.get(), block, blockBytes);
}

int DirectWriter::writeBlocks(const char *data, uint64_t offset, uint64_t bytes,
                              bool onWriterThread) {
  bool retried = false;
  while (bytes) {
    ssize_t put = ::pwrite(fd, data, size_t(std::min(bytes, kMaxWrite)), off_t(offset));
    if (put < 0 && errno == EINTR)
      continue;
    if (put < 0 && errno == EINVAL && !retried) {
      // The file system refuses direct I/O: off for the file (once, by whichever thread meets it
      // first), then this write again. The waiting blocks are the caller's to write: the writing
      // thread leaves them to the caller's next call.
      retried = true;
      int flags = ::fcntl(fd, F_GETFL);
      if (flags < 0 || ((flags & O_DIRECT) && ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) != 0))
        return EINVAL;
      if (onWriterThread)
        refused = true;
      else if (directOn)
        if (int rc = fallBackToPageCache())
          return rc;
      continue;
    }
    if (put < 0)
      return errno;
    if (put == 0) // no progress and no error: treat as a full device
      return ENOSPC;
    data += put;
    offset += uint64_t(put);
    bytes -= uint64_t(put);
  }
  return 0;
}

// From here on every write goes through the page cache. The waiting blocks are written now,
// whole, with zeros for their missing bytes: those bytes come later and overwrite them.
int DirectWriter::fallBackToPageCache() {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) != 0)
    return EINVAL;
  directOn = false;
  refusedByFileSystem = true;
  std::unordered_map<uint64_t, Buffer> blocks = std::move(waiting);
  waiting.clear();
  for (auto &[block, buffer] : blocks)
    if (int rc = writeBlocks(buffer.data.get(), block, lengthOf(block)))
      return rc;
  return 0;
}

int DirectWriter::finish() {
  int rc = runOpen ? closeRun() : 0;
  {
    std::unique_lock<std::mutex> lock(mutex);
    stopping = true;
    abandoning = rc != 0; // the file is lost anyway
  }
  changed.notify_all();
  if (writer.joinable())
    writer.join();
  if (!rc)
    rc = writerError;
  if (!rc && refused && directOn)
    rc = fallBackToPageCache();
  std::unordered_map<uint64_t, Buffer> blocks = std::move(waiting);
  waiting.clear();
  for (auto &[block, buffer] : blocks)
    if (!rc && !isTail(block))
      rc = writeBlocks(buffer.data.get(), block, blockBytes);
  // The last block, to `size` and no further (a file-size limit or the space reserved may end
  // there): through the page cache, since direct I/O writes whole blocks only.
  auto tail = blocks.find(size / blockBytes * blockBytes);
  if (!rc && tail != blocks.end() && isTail(tail->first)) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ((flags & O_DIRECT) && ::fcntl(fd, F_SETFL, flags & ~O_DIRECT) != 0))
      return EINVAL;
    directOn = false;
    rc = writeBlocks(tail->second.data.get(), tail->first, lengthOf(tail->first));
  }
  return rc;
}

} // namespace initrt

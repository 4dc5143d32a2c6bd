#include "io/direct_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace initrt {

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

std::unique_ptr<PageCacheBypass> bypassPageCache(int fd, uint64_t size) {
  if (!directIoWanted(fd, size))
    return nullptr;
  uint64_t block = directIoBlock(fd);
  if (block == 0)
    return nullptr;
  // Where the kernel cannot tell, O_DIRECT is tried: DirectWriter falls back on EINVAL.
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_DIRECT) != 0)
    return nullptr;
  return std::make_unique<DirectWriter>(fd, size, block);
}

} // namespace initrt

#include "initrt/base/direct_io.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
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

} // namespace initrt

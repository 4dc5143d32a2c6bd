#include "initrt/base/files.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace initrt {

FileStamp FileStamp::of(const struct stat &info) {
  FileStamp stamp;
  stamp.bytes = uint64_t(info.st_size);
  stamp.modified[0] = int64_t(info.st_mtim.tv_sec);
  stamp.modified[1] = int64_t(info.st_mtim.tv_nsec);
  stamp.changed[0] = int64_t(info.st_ctim.tv_sec);
  stamp.changed[1] = int64_t(info.st_ctim.tv_nsec);
  return stamp;
}

bool FileStamp::operator==(const FileStamp &other) const {
  return bytes == other.bytes && modified[0] == other.modified[0] &&
         modified[1] == other.modified[1] && changed[0] == other.changed[0] &&
         changed[1] == other.changed[1];
}

std::string fileKindText(unsigned mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "a special file";
}

ReadFileStatus readRegularFile(const std::string &path, uint64_t maxBytes, std::string &text,
                               std::string &why, FileStamp *stamp) {
  text.clear();
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    why = errno == ENOENT ? "no such file" : std::strerror(errno);
    return ReadFileStatus::OpenFailed;
  }
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    why = std::strerror(errno);
    ::close(fd);
    return ReadFileStatus::ReadFailed;
  }
  if (!S_ISREG(info.st_mode)) {
    why = fileKindText(info.st_mode);
    ::close(fd);
    return ReadFileStatus::NotRegular;
  }
  if (stamp)
    *stamp = FileStamp::of(info);
  if (uint64_t(info.st_size) > maxBytes) {
    why = std::to_string(info.st_size) + " bytes, more than the " +
          std::to_string(maxBytes >> 20) + " MiB such a file can have";
    ::close(fd);
    return ReadFileStatus::TooLarge;
  }
  // One byte more than the file: the read that finds its end then needs no larger buffer (and
  // no copy of what was read).
  text.resize(size_t(info.st_size) + 1);
  size_t done = 0;
  // Read to the end, but never past the limit: the file may grow while it is read.
  for (;;) {
    if (done == text.size()) {
      if (text.size() >= maxBytes + 1)
        break;
      text.resize(std::min<size_t>(size_t(maxBytes + 1), text.size() + (size_t(1) << 16)));
    }
    ssize_t got = ::read(fd, text.data() + done, text.size() - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      why = std::strerror(errno);
      ::close(fd);
      return ReadFileStatus::ReadFailed;
    }
    if (got == 0)
      break;
    done += size_t(got);
  }
  ::close(fd);
  text.resize(done);
  if (done > maxBytes) {
    why = "more than " + std::to_string(maxBytes >> 20) + " MiB, the most such a file can have";
    return ReadFileStatus::TooLarge;
  }
  return ReadFileStatus::Ok;
}

} // namespace initrt

#include "initrt/base/atomic_file.h"

#include "initrt/base/temporaries.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace initrt {

PageCacheBypass::~PageCacheBypass() = default;

namespace {

// One write() moves at most this much; Linux caps a single write a little below 2 GiB.
constexpr uint64_t kMaxWriteChunk = 1ull << 30;

std::string errnoText(int err) { return std::strerror(err); }

std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

std::string baseNameOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Space and size errors get text the user can act on; the rest name the failing call.
std::string writeErrorText(int err, const std::string &path, const char *what) {
  std::string dir = directoryOf(path);
  switch (err) {
  case ENOSPC:
    return "no space left on " + dir + " while writing " + path +
           ": free space or write elsewhere";
  case EDQUOT:
    return "disk quota exceeded on " + dir + " while writing " + path +
           ": free space or write elsewhere";
  case EFBIG:
    return path + " exceeds the file size limit of this process or file system (see `ulimit -f`)"
                  ": raise the limit or write elsewhere";
  case ESPIPE:
    return "cannot write " + path + ": it is a pipe or a stream, and this output is written "
                                    "out of order: write to a regular file";
  default:
    return std::string("cannot ") + what + " " + path + ": " + errnoText(err);
  }
}

bool sameFile(const struct stat &a, const struct stat &b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

} // namespace

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  // Removed while still locked, so that no other writer can have taken the name meanwhile.
  if (!tempPath.empty()) {
    ::unlink(tempPath.c_str());
    tempPath.clear();
  }
  bypass.reset();
  unregisterTemporary(signalSlot);
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

bool removeAbandonedTemporary(const std::string &path) {
  int handle;
  do {
    handle = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  } while (handle < 0 && errno == EINTR);
  if (handle < 0)
    return false;
  bool removed = false;
  struct stat held, named;
  // A writer holds its lock until the file is renamed or removed; without one, nobody writes it.
  // Where the file system has no locks, nothing can be told apart and nothing is removed.
  if (::flock(handle, LOCK_EX | LOCK_NB) == 0 && ::fstat(handle, &held) == 0 &&
      ::lstat(path.c_str(), &named) == 0 && sameFile(held, named) && S_ISREG(named.st_mode))
    removed = ::unlink(path.c_str()) == 0;
  ::close(handle);
  return removed;
}

int removeAbandonedTemporaries(const std::string &dir, const std::vector<std::string> &prefixes) {
  DIR *listing = ::opendir(dir.c_str());
  if (!listing)
    return 0;
  std::vector<std::string> found;
  while (dirent *entry = ::readdir(listing)) {
    std::string name = entry->d_name;
    for (const std::string &prefix : prefixes)
      if (name.compare(0, prefix.size(), prefix) == 0 && name.find(".tmp-") != std::string::npos)
        found.push_back(name);
  }
  ::closedir(listing);
  int removed = 0;
  for (const std::string &name : found)
    removed += removeAbandonedTemporary(dir + "/" + name);
  return removed;
}

int removeAbandonedTemporariesOf(const std::string &path) {
  // The temporary's name, as open() makes it, up to the pid.
  return removeAbandonedTemporaries(directoryOf(path),
                                    {"." + baseNameOf(path).substr(0, 200) + ".tmp-"});
}

bool AtomicFile::open(const std::string &path, uint64_t expectedBytes, std::string &error,
                      PageCacheBypassMaker makeBypass) {
  discard();
  writtenEnd = 0;
  inPlace = false;
  appendAt = 0;
  ignoreFileSizeSignal();
  finalPath = path;
  // A symbolic link stays a link: the file it names is the one replaced.
  struct stat info;
  if (::lstat(path.c_str(), &info) == 0 && S_ISLNK(info.st_mode)) {
    if (char *resolved = ::realpath(path.c_str(), nullptr)) {
      finalPath = resolved;
      std::free(resolved);
    } else { // a link to a file yet to be written: create that file
      std::string target(size_t(info.st_size ? info.st_size : 4096), '\0');
      ssize_t length = ::readlink(path.c_str(), target.data(), target.size());
      if (length <= 0) {
        error = "cannot write " + path + ": cannot read the symbolic link: " + errnoText(errno);
        return false;
      }
      target.resize(size_t(length));
      finalPath = target[0] == '/' ? target : directoryOf(path) + "/" + target;
    }
  }
  if (::stat(finalPath.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    if (S_ISDIR(info.st_mode)) {
      error = "cannot write " + path + ": it is a directory: name a file";
      return false;
    }
    // A pipe, a device or a socket (/dev/null, a FIFO a reader waits on) is written as it is:
    // renaming a temporary over it would replace it with a regular file.
    int handle;
    do {
      handle = ::open(finalPath.c_str(), O_WRONLY | O_CLOEXEC);
    } while (handle < 0 && errno == EINTR);
    if (handle < 0) {
      error = writeErrorText(errno, path, "open");
      return false;
    }
    fd = handle;
    inPlace = true;
    return true;
  }
  std::string dir = directoryOf(finalPath);
  // The temporary name stays within NAME_MAX (255) for any legal final name.
  std::string stem = dir + "/." + baseNameOf(finalPath).substr(0, 200) + ".tmp-" +
                     std::to_string(::getpid());
  std::string temp;
  int handle = -1;
  // The writer holds an exclusive lock on its temporary until it is renamed or removed, so that
  // removeAbandonedTemporary (a rerun cleaning up after a killed one) never takes a live file,
  // whatever host or pid namespace wrote it. A name locked by another writer (the same pid on
  // another host of a shared file system) is skipped for the next.
  for (int attempt = 0; handle < 0; ++attempt) {
    if (attempt == 100) {
      error = "cannot write " + path + ": every temporary name " + stem +
              "[-N] is locked by another writer";
      return false;
    }
    temp = attempt ? stem + "-" + std::to_string(attempt) : stem;
    // Registered first: a signal from here on removes it.
    signalSlot = registerTemporary(temp);
    do {
      handle = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
    } while (handle < 0 && errno == EINTR);
    if (handle < 0) {
      int err = errno;
      unregisterTemporary(signalSlot);
      struct stat dirInfo;
      // ENOENT also comes from directories that exist but take no new files (procfs).
      if (err == ENOENT && ::stat(dir.c_str(), &dirInfo) != 0)
        error = "cannot write " + path + ": directory " + dir + " does not exist";
      else if (err == ENOENT)
        error = "cannot write " + path + ": " + dir + " takes no new files: write elsewhere";
      else if (err == EACCES || err == EROFS || err == EPERM)
        error = "cannot write " + path + ": " + errnoText(err) + ": write elsewhere";
      else
        error = writeErrorText(err, path, "create");
      return false;
    }
    int locked;
    do {
      locked = ::flock(handle, LOCK_EX | LOCK_NB);
    } while (locked != 0 && errno == EINTR);
    struct stat held, named;
    bool ours = locked == 0 || (errno != EWOULDBLOCK && errno != EAGAIN); // no locks here
    // A cleaner may have removed the name between open and flock: then take it again.
    ours = ours && ::fstat(handle, &held) == 0 && ::lstat(temp.c_str(), &named) == 0 &&
           sameFile(held, named);
    if (ours && ::ftruncate(handle, 0) != 0) {
      error = writeErrorText(errno, path, "create");
      ::unlink(temp.c_str()); // ours: locked and still under this name
      unregisterTemporary(signalSlot);
      ::close(handle);
      return false;
    }
    if (!ours) {
      unregisterTemporary(signalSlot);
      ::close(handle);
      handle = -1;
    }
  }
  fd = handle;
  tempPath = temp;
  // Reserve the space now so that a full disk fails before hours of writing, not after.
  if (expectedBytes) {
    // Linux fallocate, not posix_fallocate: where it is unsupported (EOPNOTSUPP) glibc would
    // emulate it by writing zeros, doubling the I/O. Then just write and see.
    int rc;
    do {
      rc = ::fallocate(fd, 0, 0, off_t(expectedBytes));
    } while (rc != 0 && errno == EINTR);
    if (rc != 0 && (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)) {
      error = writeErrorText(errno, path, "write");
      discard();
      return false;
    }
  }
  if (makeBypass)
    bypass = makeBypass(fd, expectedBytes);
  return true;
}

bool AtomicFile::write(const void *data, uint64_t bytes, std::string &error) {
  if (fd < 0) {
    error = "cannot write " + finalPath + ": the file is not open";
    return false;
  }
  if (bypass) {
    if (int err = bypass->write(appendAt, data, bytes)) {
      error = writeErrorText(err, finalPath, "write");
      discard();
      return false;
    }
    appendAt += bytes;
    writtenEnd = std::max(writtenEnd, appendAt);
    return true;
  }
  const char *src = static_cast<const char *>(data);
  while (bytes) {
    size_t piece = size_t(std::min(bytes, kMaxWriteChunk));
    ssize_t put = ::write(fd, src, piece);
    if (put < 0) {
      if (errno == EINTR)
        continue;
      error = writeErrorText(errno, finalPath, "write");
      discard();
      return false;
    }
    if (put == 0) { // no progress and no error: treat as a full device
      error = writeErrorText(ENOSPC, finalPath, "write");
      discard();
      return false;
    }
    src += put;
    bytes -= uint64_t(put);
  }
  return true;
}

bool AtomicFile::writeAt(uint64_t offset, const void *data, uint64_t bytes, std::string &error) {
  if (fd < 0) {
    error = "cannot write " + finalPath + ": the file is not open";
    return false;
  }
  writtenEnd = std::max(writtenEnd, offset + bytes);
  if (bypass) {
    if (int err = bypass->write(offset, data, bytes)) {
      error = writeErrorText(err, finalPath, "write");
      discard();
      return false;
    }
    return true;
  }
  const char *src = static_cast<const char *>(data);
  while (bytes) {
    size_t piece = size_t(std::min(bytes, kMaxWriteChunk));
    ssize_t put = ::pwrite(fd, src, piece, off_t(offset));
    if (put < 0) {
      if (errno == EINTR)
        continue;
      error = writeErrorText(errno, finalPath, "write");
      discard();
      return false;
    }
    if (put == 0) {
      error = writeErrorText(ENOSPC, finalPath, "write");
      discard();
      return false;
    }
    src += put;
    offset += uint64_t(put);
    bytes -= uint64_t(put);
  }
  return true;
}

void AtomicFile::startWriteback(uint64_t offset, uint64_t bytes) {
#ifdef __linux__
  if (fd < 0 || (bypass && bypass->direct())) // direct writes are on their way already
    return;
  // The span of the gathered ranges: any bytes in it that are not written yet have no dirty
  // pages, and the kernel passes over them.
  writebackFrom = std::min(writebackFrom, offset);
  writebackTo = std::max(writebackTo, offset + bytes);
  writebackBytes += bytes;
  if (writebackBytes < kWritebackBatchBytes)
    return;
  ::sync_file_range(fd, off_t(writebackFrom), off_t(writebackTo - writebackFrom),
                    SYNC_FILE_RANGE_WRITE);
  writebackFrom = UINT64_MAX;
  writebackTo = writebackBytes = 0;
#else
  (void)offset, (void)bytes;
#endif
}

bool AtomicFile::commit(std::string &error) {
  if (fd < 0) {
    error = "cannot write " + finalPath + ": the file is not open";
    return false;
  }
  if (inPlace) { // nothing to rename; a pipe or a device has nothing to flush either
    int rc = ::close(fd);
    fd = -1;
    if (rc != 0 && errno != EINTR) {
      error = writeErrorText(errno, finalPath, "close");
      return false;
    }
    return true;
  }
  if (bypass) {
    if (int err = bypass->finish()) {
      error = writeErrorText(err, finalPath, "write");
      discard();
      return false;
    }
  }
  // fallocate may have reserved more than was written (only if a caller miscounted): trim.
  off_t end = std::max(::lseek(fd, 0, SEEK_CUR), off_t(writtenEnd));
  struct stat info;
  if (end >= 0 && ::fstat(fd, &info) == 0 && info.st_size != end && ::ftruncate(fd, end) != 0) {
    error = writeErrorText(errno, finalPath, "truncate");
    discard();
    return false;
  }
  int rc;
  do {
    rc = ::fsync(fd);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    error = writeErrorText(errno, finalPath, "flush");
    discard();
    return false;
  }
  // Renamed while still open, and so locked: a cleaner never finds it unlocked under its
  // temporary name.
  if (::rename(tempPath.c_str(), finalPath.c_str()) != 0) {
    int err = errno;
    error = "cannot rename " + tempPath + " to " + finalPath + ": " + errnoText(err);
    // EPERM/EACCES: an immutable or append-only file in the way, or a sticky directory of
    // another user's (ls -l, lsattr say which).
    if (err == EPERM || err == EACCES)
      error += ": the file in the way, or its directory, does not let this user replace it "
               "(ownership, a sticky directory, or chattr +i); remove it, or write elsewhere";
    discard();
    return false;
  }
  tempPath.clear();
  unregisterTemporary(signalSlot);
  // A failure from here on takes the final name away again, unless another writer of the same
  // file has renamed its own copy over ours meanwhile.
  struct stat mine;
  bool statted = ::fstat(fd, &mine) == 0;
  auto withdraw = [&] {
    struct stat named;
    if (statted && ::lstat(finalPath.c_str(), &named) == 0 && sameFile(mine, named))
      ::unlink(finalPath.c_str());
  };
  // Network file systems report a full disk at close(): then the file under the final name is
  // not complete.
  rc = ::close(fd);
  fd = -1;
  if (rc != 0 && errno != EINTR) {
    error = writeErrorText(errno, finalPath, "close");
    withdraw();
    return false;
  }
  // Make the rename itself durable; file systems that cannot fsync a directory say EINVAL.
  std::string dir = directoryOf(finalPath);
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    do {
      rc = ::fsync(dirFd);
    } while (rc != 0 && errno == EINTR);
    int err = errno;
    ::close(dirFd);
    if (rc != 0 && err != EINVAL && err != EROFS) {
      error = writeErrorText(err, dir, "flush directory");
      withdraw();
      return false;
    }
  }
  return true;
}

bool writeFileAtomically(const std::string &path, const std::string &contents,
                         std::string &error) {
  AtomicFile file;
  return file.open(path, contents.size(), error) &&
         file.write(contents.data(), contents.size(), error) && file.commit(error);
}

} // namespace initrt

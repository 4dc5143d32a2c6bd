#include "initrt/safetensors.h"

#include "initrt/checksum.h"
#include "initrt/files.h"
#include "initrt/json_text.h"
#include "initrt/temporaries.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

namespace initrt {

namespace {

struct DTypeInfo {
  const char *name;
  int bits;
};

// The reference enum, in its order (increasing alignment); the writer sorts by this rank.
const DTypeInfo kDTypes[] = {
    {"BOOL", 8},         {"F4", 4},           {"F6_E2M3", 6},     {"F6_E3M2", 6},
    {"U8", 8},           {"I8", 8},           {"F8_E5M2", 8},     {"F8_E4M3", 8},
    {"F8_E8M0", 8},      {"F8_E4M3FNUZ", 8},  {"F8_E5M2FNUZ", 8}, {"I16", 16},
    {"U16", 16},         {"F16", 16},         {"BF16", 16},       {"I32", 32},
    {"U32", 32},         {"F32", 32},         {"C64", 64},        {"F64", 64},
    {"I64", 64},         {"U64", 64},
};

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

bool checkedMultiply(uint64_t a, uint64_t b, uint64_t &out) {
  return !__builtin_mul_overflow(a, b, &out);
}

bool tensorBytes(const std::string &dtype, const std::vector<int64_t> &shape, uint64_t &bytes,
                 std::string &why) {
  int bits = safetensorsDTypeBits(dtype);
  if (!bits) {
    why = "unknown dtype \"" + dtype + "\"";
    return false;
  }
  uint64_t elements = 1;
  for (int64_t dim : shape) {
    if (dim < 0) {
      why = "negative dimension " + std::to_string(dim);
      return false;
    }
    if (!checkedMultiply(elements, uint64_t(dim), elements)) {
      why = "shape too large";
      return false;
    }
  }
  uint64_t totalBits;
  if (!checkedMultiply(elements, uint64_t(bits), totalBits)) {
    why = "shape too large";
    return false;
  }
  if (totalBits % 8) {
    why = "its " + std::to_string(elements) + " elements of " + dtype +
          " do not fill a whole number of bytes";
    return false;
  }
  bytes = totalBits / 8;
  return true;
}

bool readFully(int fd, uint64_t offset, void *out, uint64_t bytes, int &err) {
  char *dst = static_cast<char *>(out);
  while (bytes) {
    size_t piece = size_t(std::min(bytes, kMaxWriteChunk));
    ssize_t got = ::pread(fd, dst, piece, off_t(offset));
    if (got < 0) {
      if (errno == EINTR)
        continue;
      err = errno;
      return false;
    }
    if (got == 0) {
      err = 0; // the file ended early
      return false;
    }
    dst += got;
    offset += uint64_t(got);
    bytes -= uint64_t(got);
  }
  return true;
}

bool sameFile(const struct stat &a, const struct stat &b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

} // namespace

int safetensorsDTypeBits(const std::string &dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (dtype == info.name)
      return info.bits;
  return 0;
}

int safetensorsDTypeRank(const std::string &dtype) {
  for (size_t i = 0; i < std::size(kDTypes); ++i)
    if (dtype == kDTypes[i].name)
      return int(i);
  return -1;
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

bool buildSafetensorsHeader(const std::vector<SafetensorsTensor> &tensors,
                            const std::optional<SafetensorsMetadata> &metadata,
                            std::string &header, std::vector<size_t> &dataOrder,
                            std::string &error) {
  using OrderedJson = nlohmann::ordered_json;
  dataOrder.resize(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    dataOrder[i] = i;
  for (const SafetensorsTensor &tensor : tensors) {
    uint64_t bytes;
    std::string why;
    if (!tensorBytes(tensor.dtype, tensor.shape, bytes, why)) {
      error = "tensor \"" + tensor.name + "\": " + why;
      return false;
    }
    if (bytes != tensor.bytes) {
      error = "tensor \"" + tensor.name + "\": " + std::to_string(tensor.bytes) +
              " bytes given, its shape and dtype need " + std::to_string(bytes);
      return false;
    }
    if (tensor.bytes && !tensor.data) {
      error = "tensor \"" + tensor.name + "\": no data";
      return false;
    }
    if (tensor.name == "__metadata__") {
      error = "a tensor cannot be named __metadata__";
      return false;
    }
  }
  // Descending alignment, then name ascending (byte order), as the reference writer does.
  std::vector<int> ranks(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    ranks[i] = safetensorsDTypeRank(tensors[i].dtype);
  std::stable_sort(dataOrder.begin(), dataOrder.end(), [&](size_t a, size_t b) {
    if (ranks[a] != ranks[b])
      return ranks[a] > ranks[b];
    return tensors[a].name < tensors[b].name;
  });
  for (size_t i = 1; i < dataOrder.size(); ++i) {
    if (tensors[dataOrder[i]].name == tensors[dataOrder[i - 1]].name) {
      error = "tensor \"" + tensors[dataOrder[i]].name + "\" is given twice";
      return false;
    }
  }

  OrderedJson json = OrderedJson::object();
  if (metadata) {
    OrderedJson meta = OrderedJson::object();
    for (const auto &[key, value] : *metadata) {
      if (meta.contains(key)) {
        error = "metadata key \"" + key + "\" is given twice";
        return false;
      }
      meta[key] = value;
    }
    json["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (size_t index : dataOrder) {
    const SafetensorsTensor &tensor = tensors[index];
    OrderedJson entry = OrderedJson::object();
    entry["dtype"] = tensor.dtype;
    entry["shape"] = tensor.shape;
    entry["data_offsets"] = {offset, offset + tensor.bytes};
    offset += tensor.bytes;
    // Appended: the names are known distinct, and the map's own insert would compare each with
    // every earlier one (a model of 50,000 tensors took seconds).
    json.get_ref<OrderedJson::object_t &>().emplace_back(tensor.name, std::move(entry));
  }
  std::string text;
  try {
    text = json.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::strict);
  } catch (const nlohmann::json::exception &e) {
    error = "a tensor name or metadata string is not valid UTF-8 (" + std::string(e.what()) +
            "): rename it";
    return false;
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t length = text.size();
  header.assign(8, '\0');
  for (int i = 0; i < 8; ++i)
    header[i] = char((length >> (8 * i)) & 0xff);
  header += text;
  return true;
}

bool writeSafetensors(const std::string &path, const std::vector<SafetensorsTensor> &tensors,
                      const std::optional<SafetensorsMetadata> &metadata, std::string &error,
                      const ProgressFn &progress) {
  std::string header;
  std::vector<size_t> order;
  if (!buildSafetensorsHeader(tensors, metadata, header, order, error)) {
    error = "cannot write " + path + ": " + error;
    return false;
  }
  uint64_t data = 0, written = 0;
  for (const SafetensorsTensor &tensor : tensors)
    data += tensor.bytes;
  AtomicFile file;
  if (!file.open(path, header.size() + data, error) ||
      !file.write(header.data(), header.size(), error))
    return false;
  for (size_t index : order) {
    if (!file.write(tensors[index].data, tensors[index].bytes, error))
      return false;
    if (progress)
      progress(written += tensors[index].bytes, data);
  }
  return file.commit(error);
}

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
                      FileCaching caching) {
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
  if (caching == FileCaching::Bypass)
    bypassPageCache(expectedBytes);
  return true;
}

void AtomicFile::bypassPageCache(uint64_t expectedBytes) {
  if (!directIoWanted(fd, expectedBytes))
    return;
  uint64_t block = directIoBlock(fd);
  if (block == 0)
    return;
  // Where the kernel cannot tell, O_DIRECT is tried: DirectWriter falls back on EINVAL.
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_DIRECT) != 0)
    return;
  bypass = std::make_unique<DirectWriter>(fd, expectedBytes, block);
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

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

SafetensorsReader::~SafetensorsReader() {
  if (fd >= 0)
    ::close(fd);
}

SafetensorsReader::SafetensorsReader(SafetensorsReader &&other) noexcept { *this = std::move(other); }

SafetensorsReader &SafetensorsReader::operator=(SafetensorsReader &&other) noexcept {
  if (this != &other) {
    if (fd >= 0)
      ::close(fd);
    filePath = std::move(other.filePath);
    fileStamp = other.fileStamp;
    fd = other.fd;
    other.fd = -1;
    dataOffset = other.dataOffset;
    metadataPresent = other.metadataPresent;
    metadataEntries = std::move(other.metadataEntries);
    entries = std::move(other.entries);
    byName = std::move(other.byName);
  }
  return *this;
}

bool SafetensorsReader::open(const std::string &path, std::string &error) {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
  filePath = path;
  metadataPresent = false;
  metadataEntries.clear();
  entries.clear();
  byName.clear();
  auto fail = [&](const std::string &why) {
    error = path + ": " + why;
    if (fd >= 0)
      ::close(fd);
    fd = -1;
    return false;
  };

  // Without blocking: a FIFO under a shard's name is refused, not waited on.
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0)
    return fail(errno == ENOENT ? "no such file" : errnoText(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0)
    return fail(errnoText(errno));
  if (!S_ISREG(info.st_mode))
    return fail(fileKindText(info.st_mode) + ", not a regular file");
  uint64_t fileSize = uint64_t(info.st_size);
  fileStamp = FileStamp::of(info);
  if (fileSize < 8)
    return fail("not a safetensors file: " + std::to_string(fileSize) +
                " bytes, shorter than the 8-byte header length (truncated?)");
  unsigned char prefix[8];
  int err = 0;
  if (!readFully(fd, 0, prefix, 8, err))
    return fail(err ? errnoText(err) : "truncated");
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | prefix[i];
  if (headerSize > kSafetensorsMaxHeaderSize)
    return fail("not a safetensors file: header length " + std::to_string(headerSize) +
                " exceeds the limit of " + std::to_string(kSafetensorsMaxHeaderSize));
  if (8 + headerSize > fileSize)
    return fail("header length " + std::to_string(headerSize) + " runs past the end of the " +
                std::to_string(fileSize) + "-byte file (truncated or not a safetensors file)");
  std::string text(headerSize, '\0');
  if (!readFully(fd, 8, text.data(), headerSize, err))
    return fail(err ? errnoText(err) : "truncated");

  CheckedJsonParse<nlohmann::json> parse(text.begin(), text.end());
  if (parse.tooDeep)
    return fail("header is " + parse.problem());
  if (!parse.syntaxError.empty())
    return fail("header is not valid UTF-8 JSON: " + parse.syntaxError);
  if (!parse.duplicate.empty())
    return fail("header has the key \"" + parse.duplicate + "\" twice");
  const nlohmann::json &json = parse.value;
  if (!json.is_object())
    return fail("header is not a JSON object");

  for (auto &[key, value] : json.items()) {
    if (key == "__metadata__") {
      if (!value.is_object())
        return fail("__metadata__ is not an object of strings");
      metadataPresent = true;
      for (auto &[metaKey, metaValue] : value.items()) {
        if (!metaValue.is_string())
          return fail("__metadata__[\"" + metaKey + "\"] is not a string");
        metadataEntries.emplace_back(metaKey, metaValue.get<std::string>());
      }
      continue;
    }
    std::string where = "tensor \"" + key + "\": ";
    if (!value.is_object())
      return fail(where + "not an object");
    SafetensorsEntry entry;
    entry.name = key;
    auto dtype = value.find("dtype");
    if (dtype == value.end() || !dtype->is_string())
      return fail(where + "missing dtype");
    entry.dtype = dtype->get<std::string>();
    auto shape = value.find("shape");
    if (shape == value.end() || !shape->is_array())
      return fail(where + "missing shape");
    for (auto &dim : *shape) {
      // nlohmann parses non-negative integers as unsigned, negative ones as signed.
      if (!dim.is_number_unsigned())
        return fail(where + "shape is not a list of non-negative integers");
      if (dim.get<uint64_t>() > uint64_t(INT64_MAX))
        return fail(where + "shape too large");
      entry.shape.push_back(dim.get<int64_t>());
    }
    auto offsets = value.find("data_offsets");
    if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 ||
        !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned())
      return fail(where + "data_offsets is not a pair of non-negative integers");
    entry.begin = (*offsets)[0].get<uint64_t>();
    entry.end = (*offsets)[1].get<uint64_t>();
    entries.push_back(std::move(entry));
  }

  std::sort(entries.begin(), entries.end(), [](const auto &a, const auto &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expectedStart = 0;
  for (const SafetensorsEntry &entry : entries) {
    std::string where = "tensor \"" + entry.name + "\": ";
    if (entry.begin != expectedStart || entry.end < entry.begin)
      return fail(where + "data_offsets [" + std::to_string(entry.begin) + ", " +
                  std::to_string(entry.end) + "] do not start where the previous tensor ends (" +
                  std::to_string(expectedStart) + "): the data has a hole or an overlap");
    uint64_t bytes;
    std::string why;
    if (!tensorBytes(entry.dtype, entry.shape, bytes, why))
      return fail(where + why);
    if (bytes != entry.bytes())
      return fail(where + "holds " + std::to_string(entry.bytes()) +
                  " bytes, its shape and dtype need " + std::to_string(bytes));
    expectedStart = entry.end;
  }
  byName.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i)
    byName.emplace(entries[i].name, i);
  dataOffset = 8 + headerSize;
  if (dataOffset + expectedStart != fileSize)
    return fail("file is " + std::to_string(fileSize) + " bytes, its header describes " +
                std::to_string(dataOffset + expectedStart) +
                (fileSize < dataOffset + expectedStart ? " (truncated)" : " (trailing bytes)"));
  return true;
}

const SafetensorsEntry *SafetensorsReader::find(const std::string &name) const {
  auto found = byName.find(name);
  return found == byName.end() ? nullptr : &entries[found->second];
}

const std::string *SafetensorsReader::metadataValue(const std::string &key) const {
  for (const auto &[metaKey, value] : metadataEntries)
    if (metaKey == key)
      return &value;
  return nullptr;
}

bool SafetensorsReader::unchanged() const {
  struct stat info;
  return fd >= 0 && ::fstat(fd, &info) == 0 && FileStamp::of(info) == fileStamp;
}

bool SafetensorsReader::read(uint64_t offset, void *out, uint64_t bytes,
                             std::string &error) const {
  if (fd < 0) {
    error = filePath + ": not open";
    return false;
  }
  int err = 0;
  if (!readFully(fd, dataOffset + offset, out, bytes, err)) {
    error = filePath + ": " + (err ? errnoText(err) : "the file was truncated while reading");
    return false;
  }
  return true;
}

bool SafetensorsReader::readEach(uint64_t offset, uint64_t bytes,
                                 const std::function<void(const char *, uint64_t)> &take,
                                 std::string &error) const {
  if (fd < 0) {
    error = filePath + ": not open";
    return false;
  }
  int err = readFileRange(fd, dataOffset + offset, bytes,
                          directIoWanted(fd, fileStamp.bytes, bytes), take);
  if (err) {
    error = filePath + ": " + (err > 0 ? errnoText(err) : "the file was truncated while reading");
    return false;
  }
  return true;
}

bool SafetensorsReader::checksum(const SafetensorsEntry &entry, std::string &hex,
                                 std::string &error) const {
  StreamingChecksum sum;
  if (!readEach(
          entry.begin, entry.bytes(),
          [&](const char *data, uint64_t bytes) { sum.update(data, size_t(bytes)); }, error))
    return false;
  hex = sum.hex();
  return true;
}

} // namespace initrt

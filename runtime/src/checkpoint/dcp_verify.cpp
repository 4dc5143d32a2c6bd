// `initc verify DIR` of a dcp checkpoint: every file re-read on its own (each is
// self-describing), then the files together checked to hold every element of every tensor
// exactly once.
#include "checkpoint/verify.h"

#include "checkpoint/dcp_file.h"
#include "checkpoint/records.h"
#include "executor/executor.h"
#include "initrt/base/checksum.h"
#include "initrt/base/json_text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace initrt {

using namespace records;

namespace {

/// One tensor of a file as its header describes it; `begin`/`end` absolute in the file.
struct DcpBox {
  std::string name, dtype;
  std::vector<int64_t> shape, offset;
  uint64_t begin = 0, end = 0;
};

/// What verify finds in one rank's file.
struct FileCheck {
  int64_t rank = 0;
  std::string name;
  bool present = false;
  bool recordRead = false; // `record` and `boxes` are the file's
  DcpFileRecord record;
  std::vector<DcpBox> boxes;
  std::vector<std::string> problems;
};

std::string boxText(const DcpBox &box) {
  return box.name + " " + shapeText(box.shape) + " at " + shapeText(box.offset);
}

bool preadAll(int fd, uint64_t offset, void *out, uint64_t bytes) {
  char *at = static_cast<char *>(out);
  while (bytes) {
    ssize_t got = ::pread(fd, at, size_t(std::min<uint64_t>(bytes, kReadChunk)), off_t(offset));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    at += got;
    offset += uint64_t(got);
    bytes -= uint64_t(got);
  }
  return true;
}

// The header of a safetensors file read without the reader's checks of the data section, so
// that a truncated file still names the tensors it lost. False with `error` when even the header
// is unreadable.
bool readHeader(int fd, uint64_t fileSize, const std::string &path, std::vector<DcpBox> &boxes,
                SafetensorsMetadata &metadata, std::string &error) {
  unsigned char prefix[8];
  if (fileSize < 8 || !preadAll(fd, 0, prefix, 8)) {
    error = path + ": truncated to " + std::to_string(fileSize) + " bytes, before its header";
    return false;
  }
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i)
    length = length << 8 | prefix[i];
  if (length > kSafetensorsMaxHeaderSize || 8 + length > fileSize) {
    error = path + ": truncated or not a safetensors file (a header of " +
            std::to_string(length) + " bytes in a file of " + std::to_string(fileSize) + ")";
    return false;
  }
  std::string text(size_t(length), '\0');
  Json header;
  std::string why;
  if (!preadAll(fd, 8, text.data(), length) || !parseJsonText(text, header, why) ||
      !header.is_object()) {
    error = path + ": unreadable safetensors header" + (why.empty() ? "" : ": " + why);
    return false;
  }
  try {
    for (auto &[name, value] : header.items()) {
      if (name == "__metadata__") {
        for (auto &[key, item] : value.items())
          metadata.emplace_back(key, item.get<std::string>());
        continue;
      }
      DcpBox box;
      box.name = name;
      box.dtype = value.at("dtype").get<std::string>();
      box.shape = value.at("shape").get<std::vector<int64_t>>();
      std::vector<uint64_t> range = value.at("data_offsets").get<std::vector<uint64_t>>();
      if (range.size() != 2 || range[0] > range[1])
        throw std::runtime_error("bad data_offsets of " + name);
      box.begin = 8 + length + range[0];
      box.end = 8 + length + range[1];
      boxes.push_back(std::move(box));
    }
  } catch (const std::exception &e) {
    error = path + ": malformed safetensors header: " + e.what();
    return false;
  }
  std::sort(boxes.begin(), boxes.end(),
            [](const DcpBox &a, const DcpBox &b) { return a.begin < b.begin; });
  return true;
}

// Rank `rank`'s file on its own: its header, its records, every box's bytes against its checksum.
void checkFile(const std::string &dir, FileCheck &check, int64_t worldSize,
               const std::function<void(uint64_t)> &checked) {
  const std::string path = joinPath(dir, check.name);
  const std::string where = "rank " + std::to_string(check.rank) + " (" + check.name + ")";
  const std::string hint = dcpRepairHint(dir, check.rank);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat info;
  if (fd < 0 || ::fstat(fd, &info) != 0) {
    check.problems.push_back(where + ": cannot read: " + std::strerror(errno) + ": " + hint);
    if (fd >= 0)
      ::close(fd);
    return;
  }
  SafetensorsMetadata metadata;
  std::string error;
  if (!readHeader(fd, uint64_t(info.st_size), path, check.boxes, metadata, error)) {
    check.problems.push_back(where + ": " + error + ": " + hint);
    ::close(fd);
    return;
  }
  // The reference reader's checks too: what DCP's reader would refuse is a problem.
  SafetensorsReader reader;
  std::string readerError;
  bool readable = reader.open(path, readerError);
  bool notDcp = false;
  if (!parseDcpMetadata(metadata, path, check.record, error, &notDcp)) {
    check.problems.push_back(where + ": " + error + ": " + hint);
    ::close(fd);
    return;
  }
  if (check.record.rank != check.rank || check.record.worldSize != worldSize) {
    check.problems.push_back(where + ": records rank " + std::to_string(check.record.rank) +
                             " of " + std::to_string(check.record.worldSize) +
                             ", its name rank " + std::to_string(check.rank) + " of " +
                             std::to_string(worldSize) + ": " + hint);
    ::close(fd);
    return;
  }
  check.recordRead = true;
  std::set<std::string> inHeader;
  bool named = false; // some box's problem already says what is wrong with the file
  for (DcpBox &box : check.boxes) {
    inHeader.insert(box.name);
    auto record = check.record.tensors.find(box.name);
    if (record == check.record.tensors.end()) {
      check.problems.push_back(box.name + " on " + where +
                               ": not in the file's initc metadata: " + hint);
      named = true;
      continue;
    }
    box.offset = record->second.offset;
    uint64_t bits = uint64_t(safetensorsDTypeBits(box.dtype));
    if (!bits || elementCount(box.shape) * bits / 8 != box.end - box.begin) {
      check.problems.push_back(boxText(box) + " on " + where + ": its " +
                               std::to_string(box.end - box.begin) + " bytes are not a " +
                               box.dtype + " tensor of that shape: " + hint);
      named = true;
      continue;
    }
    if (box.end > uint64_t(info.st_size)) {
      check.problems.push_back(boxText(box) + " on " + where + ": truncated (the file ends at " +
                               std::to_string(info.st_size) + " bytes, the slice at " +
                               std::to_string(box.end) + "): " + hint);
      named = true;
      checked(box.end - box.begin);
      continue;
    }
    std::string actual;
    if (readable) {
      const SafetensorsEntry *entry = reader.find(box.name);
      if (!entry || !reader.checksum(*entry, actual, error)) {
        check.problems.push_back(boxText(box) + " on " + where + ": " + error + ": " + hint);
        named = true;
        checked(box.end - box.begin);
        continue;
      }
    } else {
      StreamingChecksum sum;
      std::vector<char> chunk(size_t(std::min<uint64_t>(kReadChunk, box.end - box.begin)));
      bool ok = true;
      for (uint64_t at = box.begin; ok && at < box.end; at += chunk.size()) {
        uint64_t n = std::min<uint64_t>(chunk.size(), box.end - at);
        ok = preadAll(fd, at, chunk.data(), n);
        sum.update(chunk.data(), size_t(n));
      }
      actual = ok ? sum.hex() : "";
    }
    checked(box.end - box.begin);
    if (actual != record->second.checksum) {
      check.problems.push_back(boxText(box) + " on " + where +
                               ": checksum mismatch, the file is corrupt: " + hint);
      named = true;
    }
  }
  for (const auto &[name, record] : check.record.tensors)
    if (!inHeader.count(name)) {
      check.problems.push_back(name + " " + shapeText(record.globalShape) + " slice at " +
                               shapeText(record.offset) + " on " + where +
                               ": in the initc metadata but not in the file: " + hint);
      named = true;
    }
  if (!readable && !named)
    check.problems.push_back(where + ": " + readerError + ": " + hint);
  ::close(fd);
}

/// Everything the files say of one tensor, and where its boxes are.
struct TensorCover {
  DcpTensorRecord first; // global shape, index, aliases
  std::string dtype;
  int64_t firstRank = 0;
  std::vector<std::pair<const DcpBox *, int64_t>> boxes; // box, rank
};

// Overlaps and gaps of a tensor's boxes: each element stored exactly once.
void checkCover(const std::string &name, TensorCover &cover,
                const std::vector<int64_t> &missingRanks, const std::string &dir,
                std::vector<std::string> &problems) {
  const std::vector<int64_t> &global = cover.first.globalShape;
  uint64_t stored = 0;
  auto &boxes = cover.boxes;
  for (const auto &[box, rank] : boxes) {
    bool inside = box->shape.size() == global.size() && box->offset.size() == global.size();
    for (size_t d = 0; inside && d < global.size(); ++d)
      inside = box->offset[d] >= 0 && box->offset[d] + box->shape[d] <= global[d];
    if (!inside) {
      problems.push_back(boxText(*box) + " on rank " + std::to_string(rank) +
                         ": outside the tensor's shape " + shapeText(global) + ": " +
                         dcpRepairHint(dir, rank));
      return;
    }
    stored += elementCount(box->shape);
  }
  // Boxes sorted along dim 0: only those whose rows meet can overlap.
  std::sort(boxes.begin(), boxes.end(), [](const auto &a, const auto &b) {
    return a.first->offset < b.first->offset;
  });
  for (size_t i = 0; i < boxes.size(); ++i)
    for (size_t j = i + 1; j < boxes.size(); ++j) {
      const DcpBox &a = *boxes[i].first, &b = *boxes[j].first;
      if (!global.empty() && b.offset[0] >= a.offset[0] + a.shape[0])
        break;
      bool meet = elementCount(a.shape) && elementCount(b.shape);
      for (size_t d = 0; meet && d < global.size(); ++d)
        meet = a.offset[d] < b.offset[d] + b.shape[d] && b.offset[d] < a.offset[d] + a.shape[d];
      if (meet) {
        problems.push_back(name + ": " + shapeText(a.shape) + " at " + shapeText(a.offset) +
                           " on rank " + std::to_string(boxes[i].second) + " and " +
                           shapeText(b.shape) + " at " + shapeText(b.offset) + " on rank " +
                           std::to_string(boxes[j].second) +
                           " overlap: elements are stored twice: " +
                           dcpRepairHint(dir, boxes[j].second));
        return;
      }
    }
  uint64_t total = elementCount(global);
  if (stored != total) {
    std::string which;
    for (int64_t rank : missingRanks)
      which += (which.empty() ? "" : ", ") + std::to_string(rank);
    problems.push_back(name + " " + shapeText(global) + ": " + std::to_string(total - stored) +
                       " of its " + std::to_string(total) + " elements are in no file" +
                       (which.empty() ? ": the checkpoint is incomplete"
                                      : " (the file of rank " + which + " is missing or unreadable)"));
  }
}

} // namespace

bool holdsDcpFiles(const std::string &dir) {
  DIR *listing = ::opendir(dir.c_str());
  if (!listing)
    return false;
  bool found = false;
  int64_t rank, world;
  while (dirent *entry = ::readdir(listing))
    if ((found = parseDcpFileName(entry->d_name, rank, world)))
      break;
  ::closedir(listing);
  return found;
}

bool verifyDcpCheckpoint(const std::string &dir, std::vector<std::string> &problems,
                         std::string &error, const ProgressFn &progress, int threads) {
  problems.clear();
  DIR *listing = ::opendir(dir.c_str());
  if (!listing) {
    error = "cannot list " + dir + ": " + std::strerror(errno);
    return false;
  }
  std::map<int64_t, std::map<int64_t, std::string>> byWorld; // world size -> rank -> name
  std::vector<std::string> strangers; // other *.safetensors files, which DCP's reader reads too
  while (dirent *entry = ::readdir(listing)) {
    int64_t rank, world;
    std::string name = entry->d_name;
    if (parseDcpFileName(name, rank, world))
      byWorld[world][rank] = name;
    else if (name.size() > 12 && name[0] != '.' &&
             name.compare(name.size() - 12, 12, ".safetensors") == 0)
      strangers.push_back(name);
  }
  ::closedir(listing);
  std::sort(strangers.begin(), strangers.end());
  for (const std::string &name : strangers)
    problems.push_back(joinPath(dir, name) + " is not a file of this checkpoint, and DCP's "
                       "reader would read it as one: move it out of " + dir);
  if (byWorld.empty()) {
    error = dir + " holds no shard-*-of-*.safetensors file: not a dcp checkpoint";
    return false;
  }
  // The world size most files name is the checkpoint's; the others are another run's.
  int64_t worldSize = byWorld.begin()->first;
  for (const auto &[world, files] : byWorld)
    if (files.size() > byWorld[worldSize].size())
      worldSize = world;
  for (const auto &[world, files] : byWorld)
    if (world != worldSize)
      problems.push_back(joinPath(dir, files.begin()->second) + " and " +
                         std::to_string(files.size() - 1) + " more are files of a run with " +
                         std::to_string(world) + " ranks, this checkpoint has " +
                         std::to_string(worldSize) + ": remove them");
  const std::map<int64_t, std::string> &files = byWorld[worldSize];

  std::vector<FileCheck> checks(static_cast<size_t>(worldSize));
  uint64_t total = 0, done = 0;
  std::vector<int64_t> missing;
  for (int64_t rank = 0; rank < worldSize; ++rank) {
    FileCheck &check = checks[size_t(rank)];
    check.rank = rank;
    check.name = dcpFileName(rank, worldSize);
    struct stat info;
    check.present = files.count(rank) && ::stat(joinPath(dir, check.name).c_str(), &info) == 0;
    if (check.present)
      total += uint64_t(info.st_size);
  }
  std::atomic<int64_t> next{0};
  std::mutex progressLock;
  auto onChecked = [&](uint64_t bytes) {
    if (!progress)
      return;
    std::lock_guard<std::mutex> hold(progressLock);
    progress(done = std::min(total, done + bytes), total);
  };
  auto work = [&] {
    for (int64_t rank; (rank = next++) < worldSize;)
      if (checks[size_t(rank)].present)
        checkFile(dir, checks[size_t(rank)], worldSize, onChecked);
  };
  runOnThreads(int(std::min<int64_t>(resolveThreads(threads), worldSize)), work);

  for (FileCheck &check : checks) {
    if (!check.present) {
      missing.push_back(check.rank);
      problems.push_back("rank " + std::to_string(check.rank) + " (" + check.name +
                         "): missing: " + dcpRepairHint(dir, check.rank));
    }
    for (std::string &problem : check.problems)
      problems.push_back(std::move(problem));
    if (check.present && !check.recordRead)
      missing.push_back(check.rank);
  }

  // The program is the one rank 0's file names, or the first readable file's.
  const FileCheck *reference = nullptr;
  for (const FileCheck &check : checks)
    if (check.recordRead) {
      reference = &check;
      break;
    }
  if (!reference) {
    if (progress)
      progress(total, total);
    return false;
  }
  std::map<std::string, TensorCover> covers;
  for (FileCheck &check : checks) {
    if (!check.recordRead)
      continue;
    const std::string where = "rank " + std::to_string(check.rank) + " (" + check.name + ")";
    if (check.record.programId != reference->record.programId) {
      problems.push_back(where + ": belongs to another program (program id " +
                         check.record.programId + ", rank " + std::to_string(reference->rank) +
                         "'s is " + reference->record.programId + "): with the prog/init of " +
                         reference->record.programId + ", " +
                         dcpRepairHint(dir, check.rank, /*overwrite=*/true));
      missing.push_back(check.rank);
      continue;
    }
    if (check.record.mesh.axisNames != reference->record.mesh.axisNames ||
        check.record.mesh.shape != reference->record.mesh.shape)
      problems.push_back(where + ": records another mesh than rank " +
                         std::to_string(reference->rank) + ": " + dcpRepairHint(dir, check.rank));
    for (const DcpBox &box : check.boxes) {
      auto record = check.record.tensors.find(box.name);
      if (record == check.record.tensors.end())
        continue; // reported with the file
      auto [cover, added] = covers.try_emplace(box.name);
      if (added) {
        cover->second.first = record->second;
        cover->second.dtype = box.dtype;
        cover->second.firstRank = check.rank;
      } else if (cover->second.first.globalShape != record->second.globalShape ||
                 cover->second.first.index != record->second.index ||
                 cover->second.first.aliases != record->second.aliases ||
                 cover->second.dtype != box.dtype) {
        problems.push_back(boxText(box) + " on " + where + ": its dtype, global shape, index "
                           "or aliases differ from those on rank " +
                           std::to_string(cover->second.firstRank) + ": " +
                           dcpRepairHint(dir, check.rank));
        continue;
      }
      cover->second.boxes.push_back({&box, check.rank});
    }
  }
  std::sort(missing.begin(), missing.end());
  std::map<int64_t, std::string> byIndex;
  for (auto &[name, cover] : covers) {
    checkCover(name, cover, missing, dir, problems);
    auto [at, added] = byIndex.emplace(cover.first.index, name);
    if (!added)
      problems.push_back(name + " and " + at->second + " both record index " +
                         std::to_string(cover.first.index) + ": the files are of two programs");
  }
  // A parameter whose only boxes were in a lost file leaves a gap in the indices.
  int64_t expected = 0;
  for (const auto &[index, name] : byIndex) {
    for (; expected < index; ++expected)
      problems.push_back("parameter #" + std::to_string(expected) +
                         " of the program is in no file" +
                         (missing.empty() ? "" : " (a file is missing or unreadable)"));
    expected = index + 1;
  }
  if (progress)
    progress(total, total);
  return problems.empty();
}

} // namespace initrt

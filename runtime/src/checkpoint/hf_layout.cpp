// The hf checkpoint layout (ir-spec/checkpoint.md, "The hf layout"): whole tensors in Hugging
// Face's sharded safetensors files, which every rank writes its boxes into at their offsets, in
// parallel. Rank 0 creates the files (sized and headed) in a hidden directory of temporaries;
// each rank writes and fdatasyncs its boxes, then writes their checksums in its own sums file
// (.initc/rank-0000K.sums, kept with the checkpoint: nothing is gathered); rank 0 then renames
// the files into place and writes the index, config.json and initc-checkpoint.json, last.
#include "checkpoint/checkpoint.h"

#include "checkpoint/hf_files.h"
#include "checkpoint/records.h"
#include "checkpoint/shard_file.h"
#include "initrt/base/atomic_file.h"
#include "initrt/base/checksum.h"
#include "initrt/base/files.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace initrt {

namespace {

using namespace hf;

bool exists(const std::string &path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0;
}

// The size of `path`, or -1 when it is not there.
int64_t fileSize(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) ? int64_t(info.st_size) : -1;
}

std::string gigabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GB", double(bytes) / 1e9);
  return text;
}

bool startsWith(const std::string &text, const char *prefix) {
  return text.rfind(prefix, 0) == 0;
}
bool endsWith(const std::string &text, const char *suffix) {
  const size_t n = std::strlen(suffix);
  return text.size() >= n && text.compare(text.size() - n, n, suffix) == 0;
}

// The files of the other layouts: initc's own (index.json, rank-K-of-W.safetensors) and dcp's
// (shard-K-of-W.safetensors). HF tools would read them as part of this checkpoint.
bool otherLayoutFile(const std::string &name) {
  return name == "index.json" ||
         (endsWith(name, ".safetensors") && (startsWith(name, "rank-") || startsWith(name, "shard-")));
}
// What this layout writes (and --overwrite removes).
bool hfFile(const std::string &name) {
  return name == kRecordFile || name == kIndexFile || name == kConfigFile || name == kSumsDir ||
         (startsWith(name, "model-") && endsWith(name, ".safetensors"));
}

bool removeTree(const std::string &path, std::string &error) {
  std::error_code failed;
  std::filesystem::remove_all(path, failed);
  if (failed) {
    error = "cannot remove " + path + ": " + failed.message();
    return false;
  }
  return true;
}

// Where a data file is now: its temporary while the job writes it, then its final name.
std::string dataPath(const std::string &dir, const std::string &file) {
  std::string partial = partialDataPath(dir, file);
  return exists(partial) ? partial : joinPath(dir, file);
}

// The checksum of each of `boxes`, re-read from the data files; false with `reason` at the first
// box whose bytes are not `expected`'s.
bool boxesMatch(const std::string &dir, const Program &program, const HfPlan &plan,
                const std::vector<ParamBox> &boxes, const std::vector<uint64_t> &expected,
                std::string &reason) {
  std::map<int64_t, int> fds;
  auto fdOf = [&](int64_t file) {
    auto it = fds.find(file);
    if (it == fds.end())
      it = fds.emplace(file, ::open(dataPath(dir, plan.files[size_t(file)].name).c_str(),
                                    O_RDONLY | O_CLOEXEC)).first;
    return it->second;
  };
  auto fileName = [&](int64_t file) { return plan.files[size_t(file)].name; };
  bool ok = true;
  for (size_t b = 0; ok && b < boxes.size(); ++b) {
    const Param &param = program.params[boxes[b].param];
    const HfPlace &place = plan.places[boxes[b].param];
    const std::string &name = plan.files[size_t(place.file)].name;
    std::string hex, why;
    BoxPlaces places(param.shape, boxes[b].box, uint64_t(dtypeBytes(param.dtype)), hfPieces(place));
    if (!checksumBox(places, fdOf, fileName, hex, why)) {
      reason = why;
      ok = false;
    } else if (hex != checksumToHex(expected[b])) {
      reason = "the bytes of " + param.name + " in " + name + " are not those recorded";
      ok = false;
    }
  }
  for (auto &entry : fds)
    if (entry.second >= 0)
      ::close(entry.second);
  return ok;
}

// Whether the file system keeps pages written through MAP_SHARED windows coherent with the
// other ranks' writes to the same pages: one page cache (local file systems, whose ranks share a
// host) or page-granular locks across hosts (Lustre, GPFS). An NFS or SMB client writes a
// mapped page back whole, over the bytes other hosts wrote into it, so there each run is a
// pwrite of its own bytes.
bool windowsAreCoherent(int fd) {
  struct statfs fs;
  if (::fstatfs(fd, &fs) != 0)
    return false;
  switch (static_cast<unsigned long>(fs.f_type)) {
  case 0xEF53:     // ext2/3/4
  case 0x58465342: // xfs
  case 0x9123683E: // btrfs
  case 0x01021994: // tmpfs
  case 0x2FC12FC1: // zfs
  case 0xF2F52010: // f2fs
  case 0x0BD00BD0: // lustre
  case 0x47504653: // gpfs
    return true;
  default:
    return false;
  }
}

class HfRankWriter final : public RankWriter {
public:
  ~HfRankWriter() override {
    std::string ignored;
    unmapWindow(ignored);
    for (int fd : fds)
      if (fd >= 0)
        ::close(fd);
  }

  bool open(const std::string &dir, const Program &program, uint64_t maxShardBytes,
            HfExperts experts, int64_t rank, const std::vector<ShardTensor> &tensors,
            const std::string &baseStamps, std::string &error) {
    this->dir = dir;
    this->program = &program;
    this->rank = rank;
    this->baseStamps = baseStamps;
    if (!planHfCheckpoint(program, maxShardBytes, plan, error, experts))
      return false;
    fds.assign(plan.files.size(), -1);
    // INITRT_HF_WRITE=pwrite: every run with pwrite, to compare the two ways on a file system.
    const char *how = std::getenv("INITRT_HF_WRITE");
    windows = !(how && std::strcmp(how, "pwrite") == 0);
    // A record of this rank's boxes must not outlive the bytes it vouches for.
    const std::string record = sumsPath(dir, rank);
    if (::unlink(record.c_str()) != 0 && errno != ENOENT) {
      error = "cannot remove " + record + ": " + std::strerror(errno);
      return false;
    }
    for (const ShardTensor &tensor : tensors) {
      const size_t p = size_t(tensor.param - program.params.data());
      const HfPlace &place = plan.places[p];
      if (place.file < 0) {
        error = "internal: " + tensor.param->name + " has no place in the hf checkpoint";
        return false;
      }
      Box box{p, BoxPlaces(tensor.param->shape, tensor.slice,
                           uint64_t(dtypeBytes(tensor.param->dtype)), hfPieces(place))};
      ParamBox paramBox;
      paramBox.param = p;
      paramBox.box = tensor.slice;
      boxes.push_back(paramBox);
      for (int64_t file : box.places.files()) {
        int &fd = fds[size_t(file)];
        if (fd >= 0)
          continue;
        const std::string path = dataPath(dir, plan.files[size_t(file)].name);
        fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        if (fd < 0) {
          error = "cannot open " + path + ", which rank 0 created: " + std::strerror(errno) +
                  ": rerun the whole job";
          return false;
        }
        windows = windows && windowsAreCoherent(fd);
      }
      entries.push_back(std::move(box));
    }
    checksums.assign(entries.size(), std::string());
    return true;
  }

  std::vector<size_t> writeOrder() const override {
    std::vector<size_t> order(entries.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    // By where each box's first byte lies.
    std::vector<std::pair<int64_t, uint64_t>> first(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      uint64_t contiguous;
      entries[i].places.locate(0, first[i].first, first[i].second, contiguous);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return first[a] < first[b]; });
    return order;
  }

  bool writePiece(size_t index, uint64_t offset, const void *data, uint64_t bytes,
                  std::string &error) override {
    if (index != current) {
      if (currentEnd != 0)
        checksums[current] = checksum.hex();
      checksum.reset();
      current = index;
      currentEnd = 0;
    }
    const Box &box = entries[index];
    const char *from = static_cast<const char *>(data);
    checksum.update(data, bytes);
    currentEnd = offset + bytes;
    const bool windowed = windows && usesWindow(box.places.runs());
    // Each run of the box in the file (cut where an expert's tensor ends, for a tensor written
    // per expert) is one pwrite (or a few, for a run longer than a piece), or, for many short
    // runs, a copy into the window that holds it.
    while (bytes > 0) {
      int64_t file;
      uint64_t at, contiguous;
      box.places.locate(offset, file, at, contiguous);
      const uint64_t n = std::min(bytes, contiguous);
      const int fd = fds[size_t(file)];
      if (windowed ? !copyThroughWindow(fd, file, at, from, n, error)
                   : !writeAll(fd, at, from, n, file, error))
        return false;
      from += n;
      offset += n;
      bytes -= n;
    }
    return true;
  }

  bool finish(std::vector<std::string> &out, std::string &error) override {
    // The window's pages go with the file's on fdatasync once they are unmapped.
    if (!unmapWindow(error))
      return false;
    if (currentEnd != 0)
      checksums[current] = checksum.hex();
    for (size_t b = 0; b < entries.size(); ++b)
      if (checksums[b].empty()) { // an empty box is never handed over
        error = "internal: " + program->params[entries[b].param].name + " was not written";
        return false;
      }
    for (size_t f = 0; f < fds.size(); ++f)
      if (fds[f] >= 0 && ::fdatasync(fds[f]) != 0) {
        error = "cannot sync " + plan.files[f].name + " in " + dir + ": " + std::strerror(errno);
        return false;
      }
    // The rank's sums file, under its name only once its boxes are on disk: it lets a rerun skip
    // this rank and verify check it. Each rank writes its own, so nothing is gathered.
    // Verify and a rerun recompute the boxes with writeBoxes: the sums must be in its order.
    const std::vector<ParamBox> expected = writeBoxes(*program, rank);
    bool same = expected.size() == boxes.size();
    for (size_t b = 0; same && b < boxes.size(); ++b)
      same = expected[b].param == boxes[b].param && expected[b].box == boxes[b].box;
    if (!same) {
      error = "internal: rank " + std::to_string(rank) + " wrote other boxes than writeBoxes gives";
      return false;
    }
    std::vector<uint64_t> sums(checksums.size());
    for (size_t b = 0; b < checksums.size(); ++b)
      parseChecksumHex(checksums[b], sums[b]);
    std::error_code failed;
    std::filesystem::create_directories(sumsDir(dir), failed);
    if (failed) {
      error = "cannot create " + sumsDir(dir) + ": " + failed.message();
      return false;
    }
    // The base versions first: a sums file under its name always has the right ones beside it.
    const std::string base = basePath(dir, rank);
    if (!baseStamps.empty() ? !writeFileAtomically(base, baseStamps, error)
                            : ::unlink(base.c_str()) != 0 && errno != ENOENT) {
      if (baseStamps.empty())
        error = "cannot remove " + base + ": " + std::strerror(errno);
      return false;
    }
    if (!writeFileAtomically(sumsPath(dir, rank),
                             sumsFileBytes(program->programId, rank, program->mesh.size(), sums),
                             error))
      return false;
    out = checksums;
    return true;
  }

private:
  struct Box {
    size_t param;
    BoxPlaces places;
  };

  bool writeAll(int fd, uint64_t at, const char *from, uint64_t bytes, int64_t file,
                std::string &error) {
    while (bytes > 0) {
      ssize_t put = ::pwrite(fd, from, std::min<uint64_t>(bytes, 1ull << 30), off_t(at));
      if (put < 0 && errno == EINTR)
        continue;
      if (put <= 0) {
        error = "cannot write " + plan.files[size_t(file)].name + " in " + dir + ": " +
                std::strerror(put < 0 ? errno : EIO);
        return false;
      }
      from += put;
      at += uint64_t(put);
      bytes -= uint64_t(put);
    }
    return true;
  }

  // Maps the window of `file` that holds [at, at + bytes) (the current one when it does) and
  // copies the bytes there. The run's own bytes only: other ranks write the rest of the pages.
  bool copyThroughWindow(int fd, int64_t file, uint64_t at, const char *from, uint64_t bytes,
                         std::string &error) {
    if (windowFile != file || at < windowBegin || at + bytes > windowEnd || !window) {
      if (!unmapWindow(error))
        return false;
      static const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
      windowFor(at, at + bytes, plan.files[size_t(file)].size, page, windowBegin, windowEnd);
      void *mapped = ::mmap(nullptr, windowEnd - windowBegin, PROT_READ | PROT_WRITE, MAP_SHARED,
                            fd, off_t(windowBegin));
      if (mapped == MAP_FAILED) {
        error = "cannot map " + plan.files[size_t(file)].name + " in " + dir + ": " +
                std::strerror(errno);
        return false;
      }
      window = static_cast<char *>(mapped);
      windowFile = file;
    }
    std::memcpy(window + (at - windowBegin), from, bytes);
    return true;
  }
  bool unmapWindow(std::string &error) {
    if (!window)
      return true;
    const int rc = ::munmap(window, windowEnd - windowBegin);
    window = nullptr;
    if (rc != 0) {
      error = "cannot unmap a window of " + plan.files[size_t(windowFile)].name + ": " +
              std::strerror(errno);
      return false;
    }
    return true;
  }

  std::string dir;
  const Program *program = nullptr;
  int64_t rank = 0;
  std::string baseStamps;
  HfPlan plan;
  std::vector<int> fds; // per file, opened when a box needs it
  std::vector<Box> entries;
  std::vector<ParamBox> boxes;
  std::vector<std::string> checksums;
  StreamingChecksum checksum; // of the box being written
  size_t current = 0;
  uint64_t currentEnd = 0;
  bool windows = true;    // short strided runs through a window (else pwrite)
  char *window = nullptr; // the MAP_SHARED window of strided boxes, [windowBegin, windowEnd)
  int64_t windowFile = -1;
  uint64_t windowBegin = 0, windowEnd = 0;
};

class HfLayout final : public CheckpointLayout {
public:
  void configure(const LayoutSettings &settings) const override {
    maxShardBytes = settings.maxShardBytes;
    experts = settings.hfExperts;
  }
  bool storesReplicas() const override { return false; }
  bool sharesFiles() const override { return true; }

  bool prepareDir(const std::string &dir, const Program &program, bool overwrite,
                  std::string &error) const override {
    std::error_code failed;
    std::filesystem::create_directories(dir, failed);
    if (failed) {
      error = "cannot create --out " + dir + ": " + failed.message();
      return false;
    }
    std::vector<std::string> names;
    if (!records::listDirectory(dir, names, error)) {
      error += ": choose another --out";
      return false;
    }
    std::vector<std::string> others, ours;
    for (const std::string &name : names) {
      if (otherLayoutFile(name))
        others.push_back(name);
      else if (hfFile(name))
        ours.push_back(name);
    }
    auto refuse = [&](const std::string &what) {
      error = "--out " + dir + " " + what + ": choose another --out, or pass --overwrite to " +
              "replace it";
      return false;
    };
    if (!others.empty() && !overwrite)
      return refuse("holds a checkpoint of another layout (" + others.front() +
                    (others.size() > 1 ? ", ..." : "") + ")");
    std::string why;
    bool mine = false; // DIR holds this program's hf checkpoint, whole or being written
    if (exists(joinPath(dir, kRecordFile))) {
      Record record;
      if (!readRecord(dir, record, why))
        mine = false;
      else if (record.programId != program.programId)
        why = "holds another program's hf checkpoint (program id " + record.programId +
              "; this program's is " + program.programId + ")";
      else if (record.maxShardSize != maxShardBytes)
        why = "holds this program's hf checkpoint written with --max-shard-size " +
              std::to_string(record.maxShardSize) + ", not " + std::to_string(maxShardBytes);
      else if (!recordIsOurs(dir, program) && recordExperts(program) != record.experts)
        why = std::string("holds this program's hf checkpoint written with --hf-experts ") +
              hfExpertsName(record.experts) + ", not " + hfExpertsName(experts);
      else if (!recordIsOurs(dir, program))
        why = "holds this program's hf checkpoint written by other ranks (initc assemble's " +
              std::string("output, or another mesh)");
      else
        mine = true;
      if (!mine && !overwrite)
        return refuse(startsWith(why, "holds") ? why
                                               : "holds a damaged " + std::string(kRecordFile) +
                                                     " (" + why + ")");
    }
    bool partialMine = false;
    if (exists(partialStatePath(dir))) {
      std::string programId;
      uint64_t size = 0;
      HfExperts partialExperts;
      partialMine = readPartialState(dir, programId, size, partialExperts) &&
                    programId == program.programId && size == maxShardBytes &&
                    partialExperts == experts;
      if (!partialMine && !overwrite)
        return refuse("holds the unfinished hf checkpoint of another program, "
                      "--max-shard-size or --hf-experts (" + std::string(kPartialDir) + ")");
    }
    // model-*.safetensors without a record: another tool's checkpoint, unless this program's
    // job was stopped while renaming its files into place.
    if (!mine && !partialMine && !ours.empty() && !overwrite)
      return refuse("holds files this job would replace (" + ours.front() +
                    ") and no record of this program's checkpoint");
    if (overwrite && !mine) {
      for (const std::string &name : others)
        if (!removeTree(joinPath(dir, name), error))
          return false;
      if (!partialMine) {
        for (const std::string &name : ours)
          if (!removeTree(joinPath(dir, name), error))
            return false;
        if (!removeTree(partialDir(dir), error))
          return false;
      }
    }
    // A job stopped after writing the record, before removing its temporaries.
    if (mine && exists(partialDir(dir)) && !removeTree(partialDir(dir), error))
      return false;
    return true;
  }

  int removeStaleTemporaries(const std::string &dir, const Program &,
                             int64_t rank) const override {
    // The data temporaries are what a rerun resumes from; only the small files written
    // atomically leave temporaries of their own.
    int removed = 0;
    if (rank >= 0)
      removed += removeAbandonedTemporariesOf(sumsPath(dir, rank)) +
                 removeAbandonedTemporariesOf(basePath(dir, rank));
    if (rank < 0) {
      removed += removeAbandonedTemporaries(sumsDir(dir), {".rank-"});
      removed += removeAbandonedTemporaries(partialDir(dir), {".state.json"});
      for (const char *name : {kRecordFile, kIndexFile, kConfigFile})
        removed += removeAbandonedTemporariesOf(joinPath(dir, name));
    }
    return removed;
  }

  bool prepareShared(const std::string &dir, const Program &program,
                     std::string &error) const override {
    Record record;
    std::string why;
    if (readRecord(dir, record, why)) // prepareDir left it: this program's, complete
      return true;
    HfPlan plan;
    if (!planHfCheckpoint(program, maxShardBytes, plan, error, experts))
      return false;
    std::string programId;
    uint64_t size = 0;
    HfExperts partialExperts;
    if (readPartialState(dir, programId, size, partialExperts)) {
      bool whole = true;
      for (const HfFile &file : plan.files)
        whole = whole && (fileSize(partialDataPath(dir, file.name)) == int64_t(file.size) ||
                          fileSize(joinPath(dir, file.name)) == int64_t(file.size));
      if (whole)
        return true; // resumed: the ranks' records say what is done
      if (!removeTree(partialDir(dir), error))
        return false;
    }
    return createFiles(dir, program, plan, error);
  }

  bool prepareRank(const std::string &, const Program &, int64_t, bool,
                   std::string &) const override {
    return true; // prepareDir and prepareShared checked and made everything a rank writes into
  }

  ShardState rankState(const std::string &dir, const Program &program, int64_t rank,
                       std::vector<std::string> &checksums, std::string &reason,
                       const std::string *baseStamps, bool someBasesMissing) const override {
    checksums.assign(program.params.size(), std::string());
    HfPlan plan;
    if (!planHfCheckpoint(program, maxShardBytes, plan, reason, experts))
      return ShardState::Incomplete;
    // This rank's part is done when its sums file is complete and its boxes' bytes match it.
    const std::vector<ParamBox> boxes = writeBoxes(program, rank);
    std::vector<uint64_t> expected;
    if (!exists(sumsPath(dir, rank))) {
      reason = "its boxes are not written yet";
      return ShardState::Incomplete;
    }
    if (!readSumsFile(sumsPath(dir, rank), program.programId, rank, program.mesh.size(),
                      boxes.size(), expected, reason))
      return ShardState::Incomplete;
    // Before reading any data: boxes of another version of the base are written again anyway.
    if (baseStamps) {
      std::string recorded, why;
      const std::string base = basePath(dir, rank);
      const bool hasBase = exists(base);
      if (hasBase && readRegularFile(base, kMaxJsonFileBytes, recorded, why) !=
                         ReadFileStatus::Ok) {
        reason = base + ": " + why;
        return ShardState::Incomplete;
      }
      // A program that loads nothing records nothing.
      const std::string difference =
          baseStamps->empty() && !hasBase
              ? ""
              : baseDifference(hasBase ? &recorded : nullptr, *baseStamps, someBasesMissing);
      if (!difference.empty()) {
        reason = sumsPath(dir, rank) + ": " + difference;
        return ShardState::BaseChanged;
      }
    }
    if (!boxesMatch(dir, program, plan, boxes, expected, reason))
      return ShardState::Incomplete;
    for (size_t b = 0; b < boxes.size(); ++b)
      checksums[boxes[b].param] = checksumToHex(expected[b]);
    return ShardState::Complete;
  }

  std::string afterRebasedRank() const override {
    return " (then rerun the whole job, so that every rank's boxes are of the same base)";
  }

  bool rankOutputExists(const std::string &dir, const Program &, int64_t rank) const override {
    return exists(joinPath(dir, kRecordFile)) || exists(sumsPath(dir, rank));
  }

  std::unique_ptr<RankWriter> openRank(const std::string &dir, const Program &program,
                                       int64_t rank, const std::vector<ShardTensor> &tensors,
                                       std::string &error,
                                       const std::string &baseStamps) const override {
    auto writer = std::make_unique<HfRankWriter>();
    if (!writer->open(dir, program, maxShardBytes, experts, rank, tensors, baseStamps, error))
      return nullptr;
    return writer;
  }

  bool finishJob(const std::string &dir, const Program &program, const std::vector<RankReport> &,
                 std::string &error) const override {
    HfPlan plan;
    if (!planHfCheckpoint(program, maxShardBytes, plan, error, experts))
      return false;
    // Every rank wrote its sums file before it reported; the record vouches for all of them.
    for (int64_t rank = 0; rank < program.mesh.size(); ++rank)
      if (!exists(sumsPath(dir, rank))) {
        error = sumsPath(dir, rank) + " is missing although rank " + std::to_string(rank) +
                " finished: --out is not one directory every rank sees the same; rerun the job";
        return false;
      }
    const std::string record = recordJson(program, plan, maxShardBytes);
    std::string existing, why;
    const bool recorded =
        readRegularFile(joinPath(dir, kRecordFile), kMaxJsonFileBytes, existing, why) ==
        ReadFileStatus::Ok;
    if (recorded && existing != record) {
      // prepareDir kept the directory only for this program's own record.
      error = "internal: " + joinPath(dir, kRecordFile) + " is not the record this job writes";
      return false;
    }
    if (!syncDirectory(sumsDir(dir), error))
      return false;
    // Into place, then what describes them, the record last: its presence means complete.
    for (const HfFile &file : plan.files) {
      const std::string partial = partialDataPath(dir, file.name);
      if (exists(partial) && ::rename(partial.c_str(), joinPath(dir, file.name).c_str()) != 0) {
        error = "cannot rename " + partial + " into place: " + std::strerror(errno);
        return false;
      }
    }
    if (!syncDirectory(dir, error) ||
        !writeFileAtomically(joinPath(dir, kIndexFile), hfIndexJson(program, plan), error) ||
        (!program.hfConfig.empty() &&
         !writeFileAtomically(joinPath(dir, kConfigFile), program.hfConfig, error)) ||
        (!recorded && !writeFileAtomically(joinPath(dir, kRecordFile), record, error)))
      return false;
    return removeTree(partialDir(dir), error) && syncDirectory(dir, error);
  }

private:
  // Whether DIR's record is the one this job writes (same mesh and sharding, not assemble's).
  bool recordIsOurs(const std::string &dir, const Program &program) const {
    HfPlan plan;
    std::string existing, why;
    return planHfCheckpoint(program, maxShardBytes, plan, why, experts) &&
           readRegularFile(joinPath(dir, kRecordFile), kMaxJsonFileBytes, existing, why) ==
               ReadFileStatus::Ok &&
           existing == recordJson(program, plan, maxShardBytes);
  }

  // The data files under their temporary names, each its full size (a full disk is refused here,
  // before any value is computed) with its header written; then state.json says they are there.
  bool createFiles(const std::string &dir, const Program &program, const HfPlan &plan,
                   std::string &error) const {
    const std::string partial = partialDir(dir);
    uint64_t total = 0;
    for (const HfFile &file : plan.files)
      total += file.size;
    auto noSpace = [&] {
      std::string ignored;
      removeTree(partial, ignored);
      error = "no space left on --out " + dir + ": the checkpoint needs " +
              std::to_string(total) + " bytes (" + gigabytes(total) + ") in " +
              std::to_string(plan.files.size()) + " files: free space or choose another --out";
      return false;
    };
    struct statvfs fs;
    if (::statvfs(dir.c_str(), &fs) == 0 && uint64_t(fs.f_bavail) * fs.f_frsize < total)
      return noSpace();
    // Sums of files about to be created anew vouch for nothing.
    if (!removeTree(sumsDir(dir), error))
      return false;
    if (::mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) {
      error = "cannot create " + partial + ": " + std::strerror(errno);
      return false;
    }
    for (const HfFile &file : plan.files) {
      const std::string path = partialDataPath(dir, file.name);
      int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
      if (fd < 0) {
        error = "cannot create " + path + ": " + std::strerror(errno);
        return false;
      }
      int rc = ::posix_fallocate(fd, 0, off_t(file.size));
      if (rc == EOPNOTSUPP || rc == EINVAL) // a file system without it: sized, not reserved
        rc = ::ftruncate(fd, off_t(file.size)) == 0 ? 0 : errno;
      ssize_t put = rc == 0 ? ::pwrite(fd, file.header.data(), file.header.size(), 0) : -1;
      if (rc == 0 && (put != ssize_t(file.header.size()) || ::fdatasync(fd) != 0))
        rc = put < 0 || put == ssize_t(file.header.size()) ? errno : EIO;
      ::close(fd);
      if (rc == ENOSPC || rc == EDQUOT || rc == EFBIG)
        return noSpace();
      if (rc != 0) {
        error = "cannot write " + path + ": " + std::strerror(rc);
        return false;
      }
    }
    return writeFileAtomically(partialStatePath(dir),
                               partialStateJson(program.programId, maxShardBytes, experts), error) &&
           syncDirectory(partial, error) && syncDirectory(dir, error);
  }

  // What a record of this job says of the experts: per-expert only where that changes the plan.
  HfExperts recordExperts(const Program &program) const {
    HfPlan plan;
    std::string why;
    if (!planHfCheckpoint(program, maxShardBytes, plan, why, experts))
      return experts;
    for (const HfPlace &place : plan.places)
      if (!place.pieces.empty())
        return HfExperts::PerExpert;
    return HfExperts::Stacked;
  }

  mutable uint64_t maxShardBytes = kDefaultMaxShardBytes;
  mutable HfExperts experts = HfExperts::Stacked;
};

} // namespace

const CheckpointLayout &hfLayout() {
  static const HfLayout layout;
  return layout;
}

} // namespace initrt

// The dcp layout (ir-spec/checkpoint.md, "The dcp layout") as a CheckpointLayout: each rank
// writes one self-describing safetensors file of its writeBoxes, on a disk of its own if need
// be; nothing is shared between the ranks' files, so the job writes nothing at its end.
#include "checkpoint/checkpoint.h"

#include "checkpoint/dcp_file.h"
#include "checkpoint/records.h"
#include "initrt/base/checksum.h"
#include "initrt/base/files.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

namespace initrt {

using namespace records;

namespace {

class DcpFileWriter final : public RankWriter {
public:
  bool open(const std::string &dir, const Program &program, int64_t rank,
            const std::vector<ShardTensor> &tensors, std::string &error,
            const std::string &baseStamps) {
    std::string path = joinPath(dir, dcpFileName(rank, program.mesh.size()));
    // The computed boxes, then the empty parameters, which take no bytes and are complete now.
    computed = tensors.size();
    std::vector<ShardTensor> all = tensors;
    static const char nothing = 0;
    for (const ParamBox &box : dcpEmptyBoxes(program, rank)) {
      ShardTensor empty;
      empty.param = &program.params[box.param];
      empty.slice = box.box;
      empty.checksum = checksumHex(&nothing, 0);
      all.push_back(std::move(empty));
    }
    auto contents = [path, &program, rank, baseStamps](const std::vector<ShardTensor> &boxes,
                                                       std::vector<SafetensorsTensor> &entries,
                                                       SafetensorsMetadata &metadata,
                                                       std::string &why) {
      return dcpFileContents(path, program, rank, boxes, baseStamps, entries, metadata, why);
    };
    if (stream.openFile(path, all, contents, error))
      return true;
    // Space is reserved for the whole file up front: say how much it takes.
    bool full = error.rfind("no space left on ", 0) == 0;
    if (full || error.rfind("disk quota exceeded on ", 0) == 0)
      error = std::string(full ? "no space left on " : "disk quota exceeded on ") + dir +
              " for " + path + ": rank " + std::to_string(rank) + "'s file needs " +
              std::to_string(stream.fileBytes()) +
              " bytes: free space, or write elsewhere (--out on a larger disk)";
    return false;
  }
  std::vector<size_t> writeOrder() const override {
    std::vector<size_t> order;
    for (size_t t : stream.fileOrder())
      if (t < computed)
        order.push_back(t);
    return order;
  }
  bool writePiece(size_t index, uint64_t offset, const void *data, uint64_t bytes,
                  std::string &error) override {
    return stream.writePiece(index, offset, data, bytes, error);
  }
  bool finish(std::vector<std::string> &checksums, std::string &error) override {
    if (!stream.finish(checksums, error))
      return false;
    checksums.resize(computed); // one per tensor given to open
    return true;
  }

private:
  ShardFileStream stream;
  size_t computed = 0; // tensors given to open(); the empty parameters follow them
};

// What in `name` makes a directory not this layout's: another layout's files, or a
// .safetensors file DCP's reader would take for part of the checkpoint. "" when nothing.
std::string foreignFile(const std::string &name, int64_t worldSize) {
  int64_t rank, world;
  if (parseDcpFileName(name, rank, world))
    return world == worldSize ? ""
                              : name + " is from a run with " + std::to_string(world) + " ranks";
  if (name == kIndexFile || parseShardFileName(name, rank, world))
    return name + " is a file of the ranks layout";
  if (name == "model.safetensors.index.json" || name == "initc-checkpoint.json")
    return name + " is a file of the hf layout";
  const std::string suffix = ".safetensors";
  if (name.size() > suffix.size() && name[0] != '.' &&
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return name + " is not a file of this checkpoint, and DCP's reader would read it as one";
  return "";
}

bool removeFile(const std::string &path, std::string &error) {
  // Other ranks may be removing the same files at the same time.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    error = "cannot remove " + path + " (--overwrite): " + std::strerror(errno);
    return false;
  }
  return true;
}

class DcpLayout final : public CheckpointLayout {
public:
  // Its file records the new base; the other ranks' files may still be of the old one.
  std::string afterRebasedRank() const override {
    return " (then rerun the whole job, so that every rank's file is of the same base)";
  }
  bool storesReplicas() const override { return false; }

  bool prepareDir(const std::string &dir, const Program &program, bool overwrite,
                  std::string &error) const override {
    if (!makeDirectories(dir, error))
      return false;
    std::vector<std::string> names;
    if (!listDirectory(dir, names, error)) {
      error += ": choose another --out";
      return false;
    }
    std::vector<std::string> foreign;
    std::string firstReason;
    for (const std::string &name : names) {
      std::string reason = foreignFile(name, program.mesh.size());
      if (reason.empty())
        continue;
      foreign.push_back(name);
      if (firstReason.empty())
        firstReason = reason;
    }
    if (foreign.empty())
      return true;
    if (!overwrite) {
      error = dir + " holds another checkpoint (" + firstReason + "; this is program " +
              program.programId + " in the dcp layout): pass --overwrite to replace it, or "
              "choose another --out";
      return false;
    }
    for (const std::string &name : foreign)
      if (!removeFile(joinPath(dir, name), error))
        return false;
    return true;
  }

  int removeStaleTemporaries(const std::string &dir, const Program &program,
                             int64_t rank) const override {
    // Temporary names are "." + final name + ".tmp-" + pid (AtomicFile).
    std::string prefix =
        rank >= 0 ? "." + dcpFileName(rank, program.mesh.size()) + ".tmp-" : ".shard-";
    return removeAbandonedTemporaries(dir, {prefix});
  }

  bool prepareRank(const std::string &dir, const Program &program, int64_t rank, bool overwrite,
                   std::string &error) const override {
    // On node-local disks rank 0's prepareDir made DIR on its own host only.
    if (!makeDirectories(dir, error))
      return false;
    const int64_t worldSize = program.mesh.size();
    std::string path = joinPath(dir, dcpFileName(rank, worldSize));
    // A symbolic link is followed (AtomicFile): one to another rank's file would have two ranks
    // write one file.
    const std::string targetName = linkTargetInDir(dir, path);
    if (!targetName.empty()) {
      int64_t otherRank, otherWorld;
      if (parseDcpFileName(targetName, otherRank, otherWorld) && otherRank != rank &&
          otherWorld == worldSize) {
        error = path + " is a symbolic link to " + targetName + ", rank " +
                std::to_string(otherRank) + "'s file, so two ranks would write one file: "
                "remove the link and run again";
        return false;
      }
    }
    // A checkpoint holds regular files only: a FIFO or a device would be written in place.
    struct stat info;
    if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
      if (S_ISDIR(info.st_mode) || !overwrite) {
        error = path + " is " + fileKindText(info.st_mode) + ", not a checkpoint file: remove it" +
                (S_ISDIR(info.st_mode) ? "" : ", pass --overwrite to replace it,") +
                " or choose another --out";
        return false;
      }
      return removeFile(path, error);
    }
    SafetensorsReader reader;
    std::string why;
    // A file of ours that is unreadable is simply incomplete: this rank writes it again.
    if (!reader.open(path, why))
      return true;
    DcpFileRecord record;
    bool notDcp = false;
    std::string other;
    if (!parseDcpMetadata(reader.metadata(), path, record, why, &notDcp))
      other = notDcp ? "its file " + dcpFileName(rank, program.mesh.size()) +
                           " is not of an initc dcp checkpoint"
                     : "";
    else if (record.programId != program.programId)
      other = dcpFileName(rank, program.mesh.size()) + " has program id " + record.programId;
    if (other.empty())
      return true;
    if (!overwrite) {
      error = dir + " holds a checkpoint of another program (" + other + ", this program is " +
              program.programId + "): pass --overwrite to replace it, or choose another --out";
      return false;
    }
    return removeFile(path, error);
  }

  ShardState rankState(const std::string &dir, const Program &program, int64_t rank,
                       std::vector<std::string> &checksums, std::string &reason,
                       const std::string *baseStamps, bool someBasesMissing) const override {
    return dcpFileState(dir, program, rank, checksums, reason, baseStamps, someBasesMissing);
  }

  bool rankOutputExists(const std::string &dir, const Program &program,
                        int64_t rank) const override {
    struct stat existing;
    return ::lstat(joinPath(dir, dcpFileName(rank, program.mesh.size())).c_str(), &existing) == 0;
  }

  std::unique_ptr<RankWriter> openRank(const std::string &dir, const Program &program,
                                       int64_t rank, const std::vector<ShardTensor> &tensors,
                                       std::string &error,
                                       const std::string &baseStamps) const override {
    auto writer = std::make_unique<DcpFileWriter>();
    if (!writer->open(dir, program, rank, tensors, error, baseStamps))
      return nullptr;
    return writer;
  }

  // Each file is complete and self-describing once its rank commits it: there is no shared
  // directory to write an index into.
  bool finishJob(const std::string &, const Program &, const std::vector<RankReport> &,
                 std::string &) const override {
    return true;
  }
};

} // namespace

const CheckpointLayout &dcpLayout() {
  static const DcpLayout layout;
  return layout;
}

} // namespace initrt

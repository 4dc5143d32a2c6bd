// A rank's shard file of initc's own checkpoint layout: written whole or while its tensors are
// computed, and checked on a rerun (ir-spec/checkpoint.md, "Shard files"). The streaming writer
// also writes the other layouts' per-rank files (ShardFileStream::openFile).
#pragma once

#include "initrt/base/atomic_file.h"
#include "initrt/base/checksum.h"
#include "initrt/base/program.h"
#include "initrt/base/safetensors.h"
#include "initrt/base/sharding.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace initrt {

/// "rank-00003-of-00004.safetensors".
std::string shardFileName(int64_t rank, int64_t worldSize);

/// One tensor of a rank's shard file: the rank's slice of `param`, `data` holding its bytes.
struct ShardTensor {
  const Param *param = nullptr;
  Slice slice;
  const void *data = nullptr;
  uint64_t bytes = 0;
  std::string checksum; // XXH3-64 of the bytes, 16 hex digits
};

/// Writes dir/shardFileName(rank, world) atomically: a temporary name in `dir`, fsync, rename, fsync
/// of the directory. Tensors keep the parameter's name; the file's __metadata__ records the program
/// id, rank, world size, and each tensor's global shape, offset and checksum. Returns false and sets
/// `error` (naming the file and what to do) on failure; nothing is left under the final name then.
bool writeShardFile(const std::string &dir, const Program &program, int64_t rank,
                    const std::vector<ShardTensor> &tensors, std::string &error);

/// What a streamed file holds, from its layout tensors (no data; a checksum is empty until its
/// tensor is written): one safetensors entry per persistent layout tensor, in layout order, and
/// the __metadata__. An empty checksum must take the width of a real one (16 zeros), so that the
/// header keeps its length when the real checksums replace them.
using StreamContents =
    std::function<bool(const std::vector<ShardTensor> &tensors,
                       std::vector<SafetensorsTensor> &contents, SafetensorsMetadata &metadata,
                       std::string &error)>;

/// Writes a rank's shard file while its tensors are still being computed: open() lays out the
/// file (the header's length does not depend on the checksums) and reserves its space;
/// writePiece() writes a piece of a tensor at its place and starts its writeback, checksumming
/// the tensor as its pieces pass (they come in order, as streamShardJobs hands them over);
/// finish() writes the header with the checksums and commits the file as writeShardFile does
/// (fsync, rename). Destroying an unfinished stream leaves nothing under the final name.
class ShardFileStream {
public:
  ShardFileStream();
  ~ShardFileStream();
  ShardFileStream(const ShardFileStream &) = delete;
  ShardFileStream &operator=(const ShardFileStream &) = delete;

  /// `layout`: the rank's tensors (param, slice, bytes; no data yet), indexed as writePiece's
  /// `index`. `baseStamps`: the versions of the base checkpoints the tensors are read from
  /// (BaseCheckpoints::stamps()), recorded in the file; "" when none is.
  bool open(const std::string &dir, const Program &program, int64_t rank,
            const std::vector<ShardTensor> &layout, std::string &error,
            const std::string &baseStamps = "");
  /// The same for any safetensors file of a layout: `path` laid out by `contents`, which
  /// finish() calls again with every checksum known.
  bool openFile(const std::string &path, const std::vector<ShardTensor> &layout,
                StreamContents contents, std::string &error);
  /// The size of the file open() laid out.
  uint64_t fileBytes() const { return size; }
  /// The layout indices in the order of the tensors' places in the file: written in this order,
  /// the file grows from front to back, in long runs the device and direct I/O take whole.
  std::vector<size_t> fileOrder() const;
  /// Bytes [offset, offset + bytes) of layout tensor `index`. A tensor's pieces come in order,
  /// starting at 0; tensors one after another. One thread at a time.
  bool writePiece(size_t index, uint64_t offset, const void *data, uint64_t bytes,
                  std::string &error);
  /// Every tensor must have been written whole. `checksums`: one per layout tensor (empty for
  /// tensors that are not persistent).
  bool finish(std::vector<std::string> &checksums, std::string &error);

private:
  StreamContents contentsOf;
  std::string path, header;
  uint64_t size = 0;
  std::vector<ShardTensor> tensors;
  std::vector<uint64_t> offsets; // in the file, per layout tensor
  AtomicFile file;
  StreamingChecksum checksum; // of the tensor being written
  size_t current = 0;         // its layout index
  uint64_t currentEnd = 0;    // bytes of it written so far
};

/// True when dir/shardFileName(rank, world) exists, belongs to `program` (same program id), holds
/// exactly the expected tensors and every tensor's bytes match its recorded checksum. Fills
/// `checksums` (one per param, in program order; empty for params the rank does not store).
bool shardIsComplete(const std::string &dir, const Program &program, int64_t rank,
                     std::vector<std::string> &checksums);
/// The same, saying in `reason` why the shard is not complete (to log before rewriting it).
bool shardIsComplete(const std::string &dir, const Program &program, int64_t rank,
                     std::vector<std::string> &checksums, std::string &reason);

/// What a rerun finds of a rank's shard file.
enum class ShardState {
  Complete,
  Incomplete,  // missing, unfinished, damaged or another program's
  BaseChanged, // whole, but computed from other versions of the base checkpoints
};
/// shardIsComplete's check, which also compares the base checkpoints' versions the shard records
/// with `baseStamps` (BaseCheckpoints::stamps() of the files as they are now; "" when the program
/// loads none). With `someBasesMissing`, only the files there now are compared. `reason` says
/// why the shard is not complete.
ShardState shardState(const std::string &dir, const Program &program, int64_t rank,
                      std::vector<std::string> &checksums, std::string &reason,
                      const std::string *baseStamps = nullptr, bool someBasesMissing = false);

/// How the base checkpoint versions a file records (`recorded`, null for none) differ from those
/// of the files now (`now`, BaseCheckpoints::stamps()), or "" when they do not. With
/// `someMissing`, files absent now are not compared: only those there must be as recorded.
std::string baseDifference(const std::string *recorded, const std::string &now, bool someMissing);

/// baseDifference of a rank's file (its kBaseStampsKey metadata) against `now`; "" also for a
/// program that loads nothing and a file that records nothing.
std::string fileBaseDifference(const SafetensorsReader &reader, const std::string &now,
                               bool someMissing);

/// Whether a tensor of a rank's file (ranks, dcp layouts) is the box `box` of `param` the program
/// puts there: listed (`entry`, `record`), of its dtype, shape, offset and global shape, its
/// bytes matching the recorded checksum (`actual` gets theirs). False with `reason`.
template <class Record>
bool storedBoxMatches(SafetensorsReader &reader, const Param &param, const Slice &box,
                      const SafetensorsEntry *entry, const Record *record, std::string &actual,
                      std::string &reason) {
  if (!entry || !record) {
    reason = reader.path() + ": " + param.name + " is missing";
    return false;
  }
  if (entry->dtype != dtypeName(param.dtype) || entry->shape != box.shape ||
      record->globalShape != param.shape || record->offset != box.offset) {
    reason = reader.path() + ": " + param.name + " has another dtype, shape or offset";
    return false;
  }
  if (!reader.checksum(*entry, actual, reason))
    return false;
  if (actual != record->checksum) {
    reason = reader.path() + ": " + param.name + ": checksum mismatch";
    return false;
  }
  return true;
}

} // namespace initrt

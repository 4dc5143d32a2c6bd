// The checkpoint directory: one safetensors file per rank plus index.json (ir-spec/checkpoint.md).
#pragma once

#include "initrt/checksum.h"
#include "initrt/program.h"
#include "initrt/report.h"
#include "initrt/safetensors.h"
#include "initrt/sharding.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include <cstdint>
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
  bool fileContents(std::vector<SafetensorsTensor> &contents, SafetensorsMetadata &metadata,
                    std::string &error) const;

  const Program *program = nullptr;
  int64_t rank = 0;
  std::string path, header, baseStamps;
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

/// The persistent params some ranks hold copies of (a mesh axis of size > 1 splits none of their
/// dims), in program order: the ones whose replicas index.json's writer compares.
std::vector<size_t> replicatedParams(const Program &program);

/// A rank's shard digest: XXH3-64 of its persistent tensors' checksums (16 hex digits each),
/// concatenated in program order. `checksums` holds one per param, as shardIsComplete fills it.
uint64_t shardDigest(const Program &program, const std::vector<std::string> &checksums);

/// What a rank tells rank 0 for index.json: its shard digest, and the checksums of its
/// replicatedParams() tensors in that order (XXH3-64 values).
struct RankReport {
  uint64_t digest = 0;
  std::vector<uint64_t> replicated;
};

/// A rank's report from its per-param checksums (16 hex digits; empty for params not stored).
RankReport makeRankReport(const Program &program, const std::vector<std::string> &checksums);

/// Checks that every replica holds the same bytes as its slice's owner, then writes
/// dir/index.json atomically. `reports[rank]` for every rank. The index's size grows with the
/// ranks and the params, not with their product: slices follow from the mesh and shardings.
bool writeIndex(const std::string &dir, const Program &program,
                const std::vector<RankReport> &reports, std::string &error);

/// Creates `dir` and refuses it if it holds another program's checkpoint by what one process can
/// tell cheaply: an index.json with another program id, or shard files of another mesh size.
/// With `overwrite`, removes those instead. Run once per job, before any rank writes.
bool checkOutputDir(const std::string &dir, const Program &program, bool overwrite,
                    std::string &error);

/// Refuses rank `rank`'s shard file if it is another program's (another program id, or not an
/// initc shard), unless `overwrite`, which removes it. Every rank checks its own file, so a
/// resumed 16,384-rank job reads each header once, in parallel.
bool checkOwnShard(const std::string &dir, const Program &program, int64_t rank, bool overwrite,
                   std::string &error);

/// Removes the temporary files a killed or failed run left in `dir`: of rank `rank`'s shard file,
/// or, with `rank` < 0, of every shard file and index.json. A temporary that a live writer holds
/// (removeAbandonedTemporary) is kept, wherever that writer runs. Returns how many were removed.
int removeStaleTemporaries(const std::string &dir, const Program &program, int64_t rank);

struct AssembleOptions {
  /// How much of a tensor is read from the shards before it is written out: the memory assemble
  /// holds, whatever the model's size (tests make it small to cross every boundary).
  uint64_t bandBytes = 32ull << 20;
};

/// Reads a checkpoint and writes one standard safetensors file with the global tensors, tensor by
/// tensor and band by band, each slice's bytes checked against its checksum on the way.
/// `progress` (optional) hears the model's bytes written.
bool assembleCheckpoint(const std::string &dir, const std::string &outPath, std::string &error,
                        const ProgressFn &progress = {}, const AssembleOptions &options = {});

/// Re-reads every shard, recomputes each checksum and checks coverage; one line per problem in
/// `problems`, naming the parameter and rank, in rank order. `threads` files are read at a time
/// (0: one per CPU it may run on). `progress` (optional) hears the tensor bytes checked of all the
/// ranks' (replicas included), tensor by tensor, under a lock, from the reading threads.
bool verifyCheckpoint(const std::string &dir, std::vector<std::string> &problems,
                      std::string &error, const ProgressFn &progress = {}, int threads = 0);

} // namespace initrt

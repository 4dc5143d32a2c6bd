// The files of the hf checkpoint layout besides the data files hf_plan.h lays out
// (ir-spec/checkpoint.md, "The hf layout"): initc-checkpoint.json, the directory of temporaries a
// job writes into, and where a box of a tensor lies in its file. Private to src/checkpoint/: the
// layout (hf_layout.cpp) and verify (hf_verify.cpp) share them.
#pragma once

#include "initrt/base/hf_plan.h"
#include "initrt/base/program.h"
#include "initrt/base/sharding.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace initrt::hf {

inline constexpr const char *kRecordFile = "initc-checkpoint.json";
inline constexpr const char *kRecordFormat = "initc-hf";
inline constexpr int kRecordVersion = 2;
/// The version of a record that lists pieces (an MoE model's experts written per expert): a
/// reader that knows only version 2 would take each tensor for one range and refuses it instead.
inline constexpr int kPiecesRecordVersion = 3;
/// The rule initc-checkpoint.json names for the boxes each rank writes (writeBoxes).
inline constexpr const char *kWriteBoxRule = "replicas-split-rows";
inline constexpr const char *kIndexFile = "model.safetensors.index.json";
inline constexpr const char *kConfigFile = "config.json";
// The data files while the job writes them and state.json (what rank 0 created): one hidden directory inside DIR, so that nothing
// there ends in .safetensors and a finished job leaves nothing but the checkpoint.
inline constexpr const char *kPartialDir = ".initc-hf-partial";
inline constexpr const char *kPartialFormat = "initc-hf-partial";
inline constexpr const char *kPartialSuffix = ".part";

std::string joinPath(const std::string &dir, const std::string &name);
std::string partialDir(const std::string &dir);
std::string partialStatePath(const std::string &dir);
std::string partialDataPath(const std::string &dir, const std::string &file);

/// Where a box of a row-major tensor lies in its file: `count` runs of `runBytes` contiguous
/// bytes each, in the box's own row-major order. A box whole in every dim after its first split
/// one is contiguous (one run); a box split on a later dim is one run per row of it.
class BoxRuns {
public:
  BoxRuns(const std::vector<int64_t> &globalShape, const Slice &box, uint64_t elementBytes,
          uint64_t tensorOffset);
  uint64_t runBytes() const { return run; }
  uint64_t count() const { return runs; }
  /// The file offset of run `index`.
  uint64_t runOffset(uint64_t index) const;

private:
  std::vector<int64_t> outer;   // the box's extent in the dims before the run's
  std::vector<uint64_t> stride; // bytes between neighbours in each of those dims
  uint64_t base = 0, run = 0, runs = 0;
};

/// Where the bytes of a box lie in the files: its runs in the tensor's own row-major bytes (a
/// BoxRuns at offset 0), each cut where one of the tensor's pieces (hfPieces) ends, since a
/// tensor written per expert has each expert's bytes at an offset of their own.
class BoxPlaces {
public:
  BoxPlaces(const std::vector<int64_t> &globalShape, const Slice &box, uint64_t elementBytes,
            std::vector<HfPiece> pieces);
  /// The runs in the tensor's bytes: for usesWindow and the box's size.
  const BoxRuns &runs() const { return tensorRuns; }
  uint64_t bytes() const { return tensorRuns.count() * tensorRuns.runBytes(); }
  /// The file and offset of the box's byte `offset` (in its row-major order) and how many bytes
  /// from there on lie contiguous in that file (within one run and one piece).
  void locate(uint64_t offset, int64_t &file, uint64_t &at, uint64_t &contiguous) const;
  /// The files the box's bytes lie in.
  std::vector<int64_t> files() const;

private:
  BoxRuns tensorRuns;
  std::vector<HfPiece> pieces;
};

/// How the writer puts a box into its file. A box that is one run, or whose runs are long, is
/// written with pwrite, in pieces as they come; a box of many short runs (split on a later dim)
/// is copied through a MAP_SHARED window of the file, so that its system calls are two per
/// window (mmap, munmap) rather than one per run.
inline constexpr uint64_t kWindowBytes = 64ull << 20;
inline bool usesWindow(const BoxRuns &runs) {
  return runs.count() > 1 && runs.runBytes() <= kWindowBytes / 4;
}
/// The file range a window maps to take [from, to): from `from` rounded down to a page,
/// kWindowBytes long (or to the end of a file of `fileSize` bytes), and at least to `to`.
void windowFor(uint64_t from, uint64_t to, uint64_t fileSize, uint64_t pageBytes,
               uint64_t &begin, uint64_t &end);

/// The system calls the hf writer issues to write rank `rank`'s boxes when the bytes of each
/// reach it in pieces of `pieceBytes`: pwrite calls (a piece is cut where a run ends and where it
/// ends itself) and, for the boxes written through windows, their mmap and munmap calls. With
/// `windows` false, as if every box were written with pwrite.
uint64_t countWriteCalls(const Program &program, const HfPlan &plan, int64_t rank,
                         uint64_t pieceBytes, bool windows = true);

/// XXH3-64 of the box's bytes as 16 hex digits, read in its row-major order from the files its
/// bytes lie in: `fdOf(file)` is the open file (negative when it cannot be opened). False with
/// `error`, naming the file by `fileName`, on a read error or a short file.
bool checksumBox(const BoxPlaces &places, const std::function<int(int64_t)> &fdOf,
                 const std::function<std::string(int64_t)> &fileName, std::string &hex,
                 std::string &error);

struct TensorRecord {
  int64_t index = 0;
  std::string file, dtype;
  std::vector<int64_t> shape;
  std::vector<std::string> aliases;
  uint64_t offset = 0;
  std::vector<std::vector<int>> splitAxes; // the program's: which mesh axes split each dim
  int stageAxis = -1;                      // the program's pipeline placement, if any
  int64_t stage = 0;
  /// Written per expert: its pieces (file: an index into Record::files). Empty: one range at
  /// `offset` of `file`.
  std::vector<HfPiece> pieces;
  /// The name its file holds it under, when not its own (HfPlace::storedName).
  std::string storedName;
};
struct FileRecord {
  std::string name;
  uint64_t size = 0;
};
/// initc-checkpoint.json, read back. The boxes each rank wrote are not listed: they follow from
/// the mesh and each tensor's split axes by writeBoxes (initrt/base/sharding.h), and their
/// checksums are in the ranks' sums files.
struct Record {
  std::string programId, model;
  std::vector<std::string> meshAxes;
  std::vector<int64_t> meshShape;
  uint64_t maxShardSize = 0;
  HfExperts experts = HfExperts::Stacked;
  std::vector<FileRecord> files;
  std::map<std::string, TensorRecord> tensors;
  /// The tensors as a program without kernels, in their "index" order: what writeBoxes needs.
  Program program() const;
};

/// initc-checkpoint.json's text for `program` written as `plan` with `maxShardBytes`.
std::string recordJson(const Program &program, const HfPlan &plan, uint64_t maxShardBytes);
/// The same for `program` stored on one rank that wrote each tensor whole (initc assemble's
/// output, whatever mesh its source was written on).
std::string wholeTensorRecordJson(const Program &program, const HfPlan &plan,
                                  uint64_t maxShardBytes);
/// Reads dir/initc-checkpoint.json. False with `error` when it is missing or not one.
bool readRecord(const std::string &dir, Record &record, std::string &error);

/// state.json in the directory of temporaries: the program and --max-shard-size of the files
/// rank 0 created there.
std::string partialStateJson(const std::string &programId, uint64_t maxShardBytes,
                             HfExperts experts);
bool readPartialState(const std::string &dir, std::string &programId, uint64_t &maxShardBytes,
                      HfExperts &experts);

// The ranks' sums files (ir-spec/checkpoint.md, "Sums files"): .initc/rank-0000K.sums, kept
// with the checkpoint, each written by its rank alone once its boxes are on disk.
inline constexpr const char *kSumsDir = ".initc";
std::string sumsDir(const std::string &dir);
std::string sumsPath(const std::string &dir, int64_t rank);
/// .initc/rank-0000K.base: the versions of the base checkpoints rank K's boxes were computed
/// from (BaseCheckpoints::stamps()), beside its sums file; absent when the program loads none.
std::string basePath(const std::string &dir, int64_t rank);
/// The bytes of rank `rank`'s sums file: one XXH3-64 per box of writeBoxes(program, rank).
std::string sumsFileBytes(const std::string &programId, int64_t rank, int64_t worldSize,
                          const std::vector<uint64_t> &sums);
/// Reads a sums file and checks it whole: its own checksum, and that it is rank `rank`'s of a
/// `worldSize`-rank checkpoint of `programId` with `boxes` boxes. False with `error` saying
/// what is wrong (missing, truncated, another checkpoint's).
bool readSumsFile(const std::string &path, const std::string &programId, int64_t rank,
                  int64_t worldSize, uint64_t boxes, std::vector<uint64_t> &sums,
                  std::string &error);

/// fsync of a directory, so that renames and creations in it survive a crash.
bool syncDirectory(const std::string &dir, std::string &error);

} // namespace initrt::hf

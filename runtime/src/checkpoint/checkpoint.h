// A checkpoint layout: how prog/init's output directory is laid out, and what each step of a job
// writes into it. Today's is initc's own (ranksLayout(): one safetensors file per rank plus
// index.json, ir-spec/checkpoint.md); another layout is one more implementation of the same two
// classes, in a unit of its own beside it.
#pragma once

#include "checkpoint/index.h"
#include "checkpoint/shard_file.h"
#include "initrt/base/hf_plan.h"
#include "initrt/base/program.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace initrt {

/// Writes one rank's part of a checkpoint while its tensors are computed.
class RankWriter {
public:
  virtual ~RankWriter() = default;
  /// The order to compute the rank's tensors in (indices into the layout given to openRank), so
  /// that the output is written front to back.
  virtual std::vector<size_t> writeOrder() const = 0;
  /// Bytes [offset, offset + bytes) of tensor `index`; a tensor's pieces in order from 0, tensors
  /// one after another. One thread at a time.
  virtual bool writePiece(size_t index, uint64_t offset, const void *data, uint64_t bytes,
                          std::string &error) = 0;
  /// Every tensor written whole: commits the rank's output. `checksums`: one per tensor.
  virtual bool finish(std::vector<std::string> &checksums, std::string &error) = 0;
};

/// What prog/init's command line tells a layout beyond --out.
struct LayoutSettings {
  uint64_t maxShardBytes = kDefaultMaxShardBytes; // --max-shard-size (hf)
  HfExperts hfExperts = HfExperts::PerExpert;      // --hf-experts (hf)
};

/// The steps of a job, in the order prog/init takes them, for one layout.
class CheckpointLayout {
public:
  virtual ~CheckpointLayout() = default;
  /// Once, before any other step (layouts are shared singletons: the settings are the job's).
  virtual void configure(const LayoutSettings &) const {}
  /// True when the ranks write into the same files: prog/init then checks, before anything is
  /// written, that every rank sees the directory rank 0 sees.
  virtual bool sharesFiles() const { return false; }
  /// True when finishJob needs every rank's checksum of each parameter (RankReport::checksums).
  virtual bool gathersChecksums() const { return false; }
  /// True when every rank writes its whole slice of every persistent parameter, copies
  /// included (planRank); false when each element is written once, by the rank writeBoxes
  /// names.
  virtual bool storesReplicas() const = 0;
  /// Once per job, on one process, before any rank writes: creates `dir` and refuses another
  /// program's checkpoint in it (with `overwrite`, removes it).
  virtual bool prepareDir(const std::string &dir, const Program &program, bool overwrite,
                          std::string &error) const = 0;
  /// Removes what a killed run left, of rank `rank`'s output (or, with `rank` < 0, of all).
  virtual int removeStaleTemporaries(const std::string &dir, const Program &program,
                                     int64_t rank) const = 0;
  /// Once per job, on rank 0 (or the lone --rank run), after prepareDir and once every rank is
  /// known to see the directory: creates what the ranks write into together.
  virtual bool prepareShared(const std::string &, const Program &, std::string &) const {
    return true;
  }
  /// Every rank, for its own output, after prepareDir (and prepareShared).
  virtual bool prepareRank(const std::string &dir, const Program &program, int64_t rank,
                           bool overwrite, std::string &error) const = 0;
  /// What a rerun finds of rank `rank`'s output (shardState).
  virtual ShardState rankState(const std::string &dir, const Program &program, int64_t rank,
                               std::vector<std::string> &checksums, std::string &reason,
                               const std::string *baseStamps, bool someBasesMissing) const = 0;
  /// Whether anything is under the name of rank `rank`'s output (complete or not).
  virtual bool rankOutputExists(const std::string &dir, const Program &program,
                                int64_t rank) const = 0;
  /// Opens rank `rank`'s writer for `tensors` (param, slice, bytes; no data yet), or returns
  /// null with `error`.
  virtual std::unique_ptr<RankWriter> openRank(const std::string &dir, const Program &program,
                                               int64_t rank, const std::vector<ShardTensor> &tensors,
                                               std::string &error,
                                               const std::string &baseStamps) const = 0;
  /// What is left to do after a lone --rank run computed its part again because the base
  /// checkpoint it loads changed: a note for its message, "" when nothing is.
  virtual std::string afterRebasedRank() const { return ""; }
  /// Rank 0, once every rank is done, from every rank's report: what the whole checkpoint needs.
  virtual bool finishJob(const std::string &dir, const Program &program,
                         const std::vector<RankReport> &reports, std::string &error) const = 0;
};

/// initc's own layout: rank-K-of-W.safetensors per rank and index.json.
const CheckpointLayout &ranksLayout();
/// One self-describing safetensors file per rank, of its writeBoxes, with the sharding metadata
/// PyTorch's distributed checkpoint reads (dcp_layout.cpp).
const CheckpointLayout &dcpLayout();
/// Hugging Face's layout: model-0000k-of-0000n.safetensors, its index, config.json and
/// initc-checkpoint.json, every rank writing its boxes into the shared files.
const CheckpointLayout &hfLayout();

/// The layout prog/init --layout names ("ranks", ...), or null when there is none of that name.
const CheckpointLayout *checkpointLayout(const std::string &name);
/// Every layout's name, in the order --help lists them.
std::vector<std::string> checkpointLayoutNames();

} // namespace initrt

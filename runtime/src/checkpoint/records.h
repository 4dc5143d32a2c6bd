// What the files of a checkpoint in initc's own layout record, read back: shard file names, the
// initc metadata of a shard file, index.json (ir-spec/checkpoint.md). Private to
// src/checkpoint/: the writer, the output directory's checks, assemble and verify share them.
#pragma once

#include "initrt/base/program.h"
#include "initrt/base/report.h"
#include "initrt/base/safetensors.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace initrt::records {

using OrderedJson = nlohmann::ordered_json;
using Json = nlohmann::json;

inline constexpr const char *kIndexFile = "index.json";
inline constexpr const char *kIndexFormat = "initc-checkpoint";
// Version 3 added "checksum"; earlier versions are refused (a rerun of the job rewrites them).
inline constexpr int kIndexVersion = 3;
// Bounded scratch for streaming tensor bytes out of shard files.
inline constexpr uint64_t kReadChunk = 8ull << 20;
// The shard metadata key of the base checkpoints' versions (BaseCheckpoints::stamps()).
inline constexpr const char *kBaseStampsKey = "initc.base";
// A shard file whose tensors match their own checksums, but not the digest index.json recorded
// for the rank: the file was replaced or edited after the job wrote it.
inline constexpr const char *kNotThisJobsFile =
    "its tensors' checksums are not those index.json recorded for this rank (the file changed "
    "after the job wrote it)";

std::string joinPath(const std::string &dir, const std::string &name);

// `overwrite`: the file is another program's, which prog/init replaces only when told to.
std::string rerunHint(const std::string &dir, int64_t rank, bool overwrite = false);

// A lone `--rank` run never writes index.json: only the whole job (every rank) does.
std::string rerunJobHint(const std::string &dir, bool overwrite);

/// Parses "rank-00003-of-00004.safetensors" (5 or more digits each).
bool parseShardFileName(const std::string &name, int64_t &rank, int64_t &worldSize);
/// Parses "<prefix>00003-of-00004.safetensors" (5 or more digits each): the name of one rank's
/// file, rank-... (ranks layout) or shard-... (dcp).
bool parseRankFileName(const std::string &name, const std::string &prefix, int64_t &rank,
                       int64_t &worldSize);
/// "<prefix>00003-of-00004.safetensors".
std::string rankFileName(const std::string &prefix, int64_t rank, int64_t worldSize);
/// When `path` (a file in `dir`) is a symbolic link to another file in `dir`, that file's name;
/// else "". A rank's file is written through links (AtomicFile), so one to another file of the
/// checkpoint would have two writers share it.
std::string linkTargetInDir(const std::string &dir, const std::string &path);
/// The names in `dir` ("." and ".." among them), sorted; false with `error` when it cannot be
/// listed.
bool listDirectory(const std::string &dir, std::vector<std::string> &names, std::string &error);

/// What a shard file's "initc.tensors" metadata says about one tensor.
struct ShardTensorRecord {
  std::vector<int64_t> globalShape;
  std::vector<int64_t> offset;
  std::string checksum;
};

bool parseShardTensors(const SafetensorsReader &reader,
                       std::map<std::string, ShardTensorRecord> &records, std::string &error);

/// Checks the file-level metadata of a shard file; `why` says what is wrong, and `otherId` is
/// set to the program id of a file that is another program's ("-" for a file not initc's).
bool shardMetadataMatches(const SafetensorsReader &reader, const std::string &programId,
                          int64_t rank, int64_t worldSize, std::string &why,
                          std::string *otherId = nullptr);

//===----------------------------------------------------------------------===//
// index.json, as read back
//===----------------------------------------------------------------------===//

struct IndexParam {
  Param param;       // name, aliases, shape, splitAxes, buffer
  std::string dtype; // as safetensors names it
};

struct Index {
  std::string programId;
  Mesh mesh;
  int64_t worldSize = 0;
  std::vector<std::string> files;
  std::vector<uint64_t> digests; // shardDigest per rank
  std::vector<IndexParam> params;
};

/// Rank `rank`'s entry for `item`, checked against its initc.tensors record and the index; null
/// with `why` saying what is wrong: missing, or what the file holds against what the index
/// expects ("the file holds F32 [2, 3] at [2, 0], the index expects ..."; the global shape is
/// named when it is what differs).
const SafetensorsEntry *indexedEntry(const SafetensorsReader &reader,
                                     const std::map<std::string, ShardTensorRecord> &records,
                                     const Index &index, const IndexParam &item, int64_t rank,
                                     std::string &why);

/// index.json's text; `error` names the file and what it is instead when it cannot be read.
bool readTextFile(const std::string &path, std::string &text, std::string &error);

/// `loadedFrom`: the base checkpoint the parameter is read from (init.load), or "".
std::string replicaMismatch(const std::string &name, int64_t root, int64_t rank, uint64_t a,
                            uint64_t b, const std::string &loadedFrom = "");

/// XXH3-64 (16 hex digits) of the index as written without its "checksum": compact JSON, keys in
/// the file's order.
std::string indexChecksum(OrderedJson document);

bool readIndex(const std::string &dir, Index &index, std::string &error);

/// Rank `rank`'s shard digest from its file's records, in the index's param order (a tensor of
/// another pipeline stage, which the file does not list, counts as empty); false when a listed
/// tensor has no record (reported separately).
bool recordsDigest(const Index &index, const std::map<std::string, ShardTensorRecord> &records,
                   int64_t rank, uint64_t &digest);

uint64_t elementCount(const std::vector<int64_t> &shape);

bool makeDirectories(const std::string &dir, std::string &error);

/// The path a write to `path` replaces: a symbolic link's target (AtomicFile follows links).
std::string writtenPath(const std::string &path);

} // namespace initrt::records

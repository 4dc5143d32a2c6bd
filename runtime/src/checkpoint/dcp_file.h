// A rank's file of the dcp layout (ir-spec/checkpoint.md, "The dcp layout"): a safetensors file
// holding the rank's writeBoxes under the parameters' names, with the DCP_SHARDING_INFO that
// PyTorch's HuggingFaceStorageReader reads and initc's own record of the file. Private to
// src/checkpoint/: the layout and verify share it.
#pragma once

#include "checkpoint/shard_file.h"
#include "initrt/base/program.h"
#include "initrt/base/safetensors.h"
#include "initrt/base/sharding.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace initrt {

inline constexpr const char *kDcpFormat = "initc-dcp";
inline constexpr int kDcpVersion = 1;
// The __metadata__ keys: PyTorch's (torch/distributed/checkpoint/_hf_utils.py) and initc's.
inline constexpr const char *kDcpShardingInfoKey = "DCP_SHARDING_INFO";
inline constexpr const char *kDcpVersionKey = "DCP_VERSION";
inline constexpr const char *kDcpVersionValue = "1.0";
inline constexpr const char *kDcpInitcKey = "initc";

/// "shard-00003-of-00004.safetensors".
std::string dcpFileName(int64_t rank, int64_t worldSize);
/// Parses a dcpFileName (5 or more digits each).
bool parseDcpFileName(const std::string &name, int64_t &rank, int64_t &worldSize);

/// One tensor (box) as DCP_SHARDING_INFO spells it: name and saved_offsets.
struct DcpBoxOffset {
  std::string name;
  std::vector<int64_t> offset;
};
/// DCP_SHARDING_INFO's text exactly as torch's writer makes it (json.dumps of
/// {name: {"saved_offsets": [...]}}: ", " and ": " separators, non-ASCII escaped).
std::string dcpShardingInfoText(const std::vector<DcpBoxOffset> &boxes);

/// The file's tensors and __metadata__ (a StreamContents): the boxes of `tensors` (each a
/// ShardTensor whose slice is the box), placeholders for data and for checksums not known yet.
bool dcpFileContents(const std::string &path, const Program &program, int64_t rank,
                     const std::vector<ShardTensor> &tensors, const std::string &baseStamps,
                     std::vector<SafetensorsTensor> &contents, SafetensorsMetadata &metadata,
                     std::string &error);

/// What the "initc" record says of one tensor of the file.
struct DcpTensorRecord {
  std::vector<int64_t> globalShape;
  std::vector<int64_t> offset; // DCP_SHARDING_INFO's saved_offsets
  std::string checksum;
  int64_t index = -1; // among the program's persistent parameters
  std::vector<std::string> aliases;
};

/// A dcp file's metadata read back.
struct DcpFileRecord {
  std::string programId, model;
  int64_t rank = -1, worldSize = 0;
  Mesh mesh;
  std::map<std::string, DcpTensorRecord> tensors;
};

/// Parses the "initc" and DCP_SHARDING_INFO metadata; `error` names `path` and what is wrong,
/// including the two disagreeing on a tensor's name or offset. `notDcp` is set when the file has
/// no initc-dcp record at all (a file of something else).
bool parseDcpMetadata(const SafetensorsMetadata &metadata, const std::string &path,
                      DcpFileRecord &record, std::string &error, bool *notDcp = nullptr);

/// The boxes rank `rank`'s file holds: writeBoxes(program, rank), and on rank 0 also every
/// persistent parameter with no element (no rank has a box of it), whole, so that DCP's reader
/// finds every tensor of the model. Those take no bytes and no job computes them.
std::vector<ParamBox> dcpBoxes(const Program &program, int64_t rank);
/// The empty parameters dcpBoxes adds on rank `rank` (none off rank 0).
std::vector<ParamBox> dcpEmptyBoxes(const Program &program, int64_t rank);

/// What a rerun finds of rank `rank`'s file (as shardState does for the ranks layout): complete
/// when it is this program's, holds exactly dcpBoxes(program, rank) and every checksum matches.
/// `checksums`: one per parameter, in program order (empty for those the rank writes no box of).
ShardState dcpFileState(const std::string &dir, const Program &program, int64_t rank,
                        std::vector<std::string> &checksums, std::string &reason,
                        const std::string *baseStamps, bool someBasesMissing);

/// `prog/init --rank K --out DIR --layout dcp` (with --overwrite when the file is another
/// program's): what regenerates rank K's file.
std::string dcpRepairHint(const std::string &dir, int64_t rank, bool overwrite = false);

} // namespace initrt

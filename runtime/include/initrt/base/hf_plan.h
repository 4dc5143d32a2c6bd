// The files of a checkpoint in Hugging Face's sharded layout, fixed by the program alone
// (ir-spec/checkpoint.md, "The hf layout"): which file holds each tensor, each file's header and
// size and each tensor's offset, known before any value is computed, so that every rank can write
// its boxes straight into the shared files.
#pragma once

#include "initrt/base/program.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace initrt {

/// save_pretrained's default --max-shard-size, "5GB".
inline constexpr uint64_t kDefaultMaxShardBytes = 5000000000ull;

/// One file of the checkpoint: model-0000k-of-0000n.safetensors.
struct HfFile {
  std::string name;
  std::string header; // the file's first bytes: 8-byte length, JSON, padding
  uint64_t size = 0;  // header plus every tensor's bytes
  std::vector<size_t> params; // indices into Program::params, in the order save_pretrained met them
};

/// How an MoE model's stacked experts tensors are stored (ir-spec/checkpoint.md, "MoE models"):
/// as they are (transformers 5's format, save_original_format=False), or split into one tensor
/// per expert under the model's original names (save_pretrained's default).
enum class HfExperts { Stacked, PerExpert };
/// "stacked", "per-expert"; parseHfExperts is false on anything else.
const char *hfExpertsName(HfExperts experts);
bool parseHfExperts(const std::string &text, HfExperts &experts);

/// A contiguous range of a parameter's row-major bytes, [begin, begin + bytes), stored at
/// `offset` of file `file`.
struct HfPiece {
  uint64_t begin = 0, bytes = 0;
  int64_t file = -1;
  uint64_t offset = 0;
};

/// Where one persistent parameter lives.
struct HfPlace {
  int64_t file = -1;   // index into HfPlan::files; -1 for a parameter the checkpoint leaves out
  uint64_t offset = 0; // of its first byte, from the start of the file
  uint64_t bytes = 0;
  /// A stacked experts tensor stored per expert: its pieces, one per expert tensor, in the
  /// order of its bytes (file and offset above are the first's). Empty: stored whole.
  std::vector<HfPiece> pieces;
  /// The name the file holds it under when that is not its own (a tensor written whole that the
  /// original format renames: mixtral's block_sparse_moe.gate.weight); empty otherwise.
  std::string storedName;
};

/// The pieces of a placed parameter: its own, or the one piece of a tensor stored whole.
std::vector<HfPiece> hfPieces(const HfPlace &place);

struct HfPlan {
  std::vector<HfFile> files;
  std::vector<HfPlace> places; // one per Program::params entry
  uint64_t totalSize = 0;      // every tensor's bytes: the index's metadata.total_size
  /// The names the files hold (the per-expert names where a tensor is stored per expert),
  /// each with its file: the index's weight_map.
  std::vector<std::pair<std::string, int64_t>> stored;
};

/// Assigns the program's persistent parameters to files as save_pretrained does with
/// `maxShardBytes` (huggingface_hub's split_state_dict_into_shards: in program order, a new file
/// when the next tensor would take the current one past the limit, a tensor larger than the
/// limit alone in its own file), under each parameter's name (aliases are not stored: they are
/// tied to it). Each file's header is the reference writer's for its tensors, with __metadata__
/// {"format": "pt"}. With HfExperts::Stacked an MoE model's experts stay stacked, as
/// save_pretrained writes them with save_original_format=False; with PerExpert they are written
/// in the original per-expert format, as its default does (ir-spec/checkpoint.md, "MoE
/// models": the names sorted, each stacked tensor's experts one group of tensors). A program
/// without stacked experts is planned the same either way. Fails on a program no safetensors
/// file can hold, and on per-expert experts of a model type whose original names are unknown.
bool planHfCheckpoint(const Program &program, uint64_t maxShardBytes, HfPlan &plan,
                      std::string &error, HfExperts experts = HfExperts::Stacked);

/// What --hf-experts writes `program` as when it is not given: per-expert, save_pretrained's
/// default, unless the program has stacked experts whose original names are unknown (no model
/// type, as a model captured from a live module has, or one not in the table): then stacked, the
/// one format there is for it.
HfExperts defaultHfExperts(const Program &program);

/// A tensor name of the original per-expert format of model type `modelType` read back as the
/// stacked model's (the inverse of planHfCheckpoint's per-expert names): `stacked` is the name of
/// the tensor it is, or is part of; for one expert's tensor, `expert` is its expert and `group`
/// its group (0: gate_proj or down_proj, 1: up_proj) of the stacked `groups` (2 for gate_up_proj,
/// 1 for down_proj), else `expert` is -1. False when the model type has no original format that
/// initc knows (its names are the model's own).
bool hfStackedName(const std::string &modelType, const std::string &name, std::string &stacked,
                   int64_t &expert, int &group, int &groups);

/// model.safetensors.index.json for `plan`: {"metadata": {"total_size": N}, "weight_map":
/// {name: file}}, names sorted as save_pretrained writes them; aliases (tied names) are not
/// listed, as save_pretrained does not list them.
std::string hfIndexJson(const Program &program, const HfPlan &plan);

/// Parses a size as save_pretrained's max_shard_size does: an integer number of bytes, or one
/// with a unit: "5GB" (10^9), "500MB", "10KB", "2GiB" (2^30), "64MiB", "4KiB". False on anything
/// else or zero.
bool parseShardSize(const std::string &text, uint64_t &bytes);

} // namespace initrt

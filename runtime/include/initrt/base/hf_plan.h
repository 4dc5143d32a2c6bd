// The files of a checkpoint in Hugging Face's sharded layout, fixed by the program alone
// (ir-spec/checkpoint.md, "The hf layout"): which file holds each tensor, each file's header and
// size and each tensor's offset, known before any value is computed, so that every rank can write
// its boxes straight into the shared files.
#pragma once

#include "initrt/base/program.h"

#include <cstdint>
#include <string>
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

/// Where one persistent parameter lives.
struct HfPlace {
  int64_t file = -1;   // index into HfPlan::files; -1 for a parameter the checkpoint leaves out
  uint64_t offset = 0; // of its first byte, from the start of the file
  uint64_t bytes = 0;
};

struct HfPlan {
  std::vector<HfFile> files;
  std::vector<HfPlace> places; // one per Program::params entry
  uint64_t totalSize = 0;      // every tensor's bytes: the index's metadata.total_size
};

/// Assigns the program's persistent parameters to files as save_pretrained does with
/// `maxShardBytes` (huggingface_hub's split_state_dict_into_shards: in program order, a new file
/// when the next tensor would take the current one past the limit, a tensor larger than the
/// limit alone in its own file), under each parameter's name (aliases are not stored: they are
/// tied to it). Each file's header is the reference writer's for its tensors, with __metadata__
/// {"format": "pt"}. An MoE model's experts stay stacked, as save_pretrained writes them with
/// save_original_format=False (ir-spec/checkpoint.md, "MoE models"). Fails only on a program
/// no safetensors file can hold.
bool planHfCheckpoint(const Program &program, uint64_t maxShardBytes, HfPlan &plan,
                      std::string &error);

/// model.safetensors.index.json for `plan`: {"metadata": {"total_size": N}, "weight_map":
/// {name: file}}, names sorted as save_pretrained writes them; aliases (tied names) are not
/// listed, as save_pretrained does not list them.
std::string hfIndexJson(const Program &program, const HfPlan &plan);

/// Parses a size as save_pretrained's max_shard_size does: an integer number of bytes, or one
/// with a unit: "5GB" (10^9), "500MB", "10KB", "2GiB" (2^30), "64MiB", "4KiB". False on anything
/// else or zero.
bool parseShardSize(const std::string &text, uint64_t &bytes);

} // namespace initrt

// A checkpoint's global tensors in standard safetensors (`initc assemble`): one file, or a
// directory in Hugging Face's sharded layout. The checkpoint may be in any layout prog/init
// writes (ranks, hf, dcp).
#pragma once

#include "initrt/base/hf_plan.h"
#include "initrt/base/report.h"

#include <cstdint>
#include <string>

namespace initrt {

struct AssembleOptions {
  /// How much of a tensor is read from the shards before it is written out: the memory assemble
  /// holds, whatever the model's size (tests make it small to cross every boundary).
  uint64_t bandBytes = 32ull << 20;
  /// The largest file of a directory output (save_pretrained's max_shard_size).
  uint64_t maxShardBytes = kDefaultMaxShardBytes;
  /// How a directory output writes an MoE model's experts (--hf-experts).
  HfExperts hfExperts = HfExperts::PerExpert;
  bool hfExpertsGiven = false; // else defaultHfExperts of the source's program
};

/// Whether `outPath` names a directory output (hf layout) rather than one file: a directory, or
/// a name that does not end in .safetensors and is not there yet (an existing file, pipe or
/// device is written as one file).
bool assembleOutputIsDirectory(const std::string &outPath);

/// Reads the checkpoint in `dir` (its layout detected from its files) and writes its global
/// tensors to `outPath`, tensor by tensor and band by band, each stored box's bytes checked
/// against its checksum on the way: one safetensors file, or (assembleOutputIsDirectory) the
/// files of an hf checkpoint with their index and initc-checkpoint.json, that record written
/// last. `progress` (optional) hears the model's bytes written.
bool assembleCheckpoint(const std::string &dir, const std::string &outPath, std::string &error,
                        const ProgressFn &progress = {}, const AssembleOptions &options = {});

} // namespace initrt

// One standard safetensors file of a checkpoint's global tensors (`initc assemble`).
#pragma once

#include "initrt/base/report.h"

#include <cstdint>
#include <string>

namespace initrt {

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

} // namespace initrt

//===- TrainerPresets.h - the trainers' own layouts as presets -----*- C++ -*-===//
//
// `--shard torchtitan`, `megatron` and `maxtext`: each parameter split as that trainer splits
// it, so the per-rank files hold the trainer's own local shards (ir-spec/sharding.md,
// "Trainer presets").
//
//===----------------------------------------------------------------------===//
#ifndef INITC_TRANSFORMS_TRAINERPRESETS_H
#define INITC_TRANSFORMS_TRAINERPRESETS_H

#include "initc/Transforms/Sharding.h"

namespace initc {

enum class Trainer { Torchtitan, Megatron, MaxText };

/// The trainer a preset name stands for, if it names one.
std::optional<Trainer> trainerOfPreset(llvm::StringRef preset);

/// Checks that `mesh` has axes the trainer's layout can use; sets `stageAxis` to its pipeline
/// stage axis (empty if none).
mlir::LogicalResult checkTrainerMesh(Trainer trainer, const MeshSpec &mesh,
                                     std::string &stageAxis, std::string &error);

/// The split of one parameter under the trainer's layout, or an error naming the parameter
/// when the layout has no rule for it or cannot place it as the trainer would.
mlir::LogicalResult applyTrainerPreset(Trainer trainer, const MeshSpec &mesh,
                                       const ParamShape &param, DimAxes &out,
                                       std::string &error);

} // namespace initc

#endif // INITC_TRANSFORMS_TRAINERPRESETS_H

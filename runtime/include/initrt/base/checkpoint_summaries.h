// The one-line summaries of assemble and verify: initc-checkpoint defines both commands, and
// `initc --help` lists them beside its own (initc forwards their arguments, --help included).
#pragma once

namespace initrt {

inline constexpr const char *kAssembleSummary =
    "Join a checkpoint into one model.safetensors, or into a directory in Hugging Face's sharded "
    "layout";

inline constexpr const char *kVerifySummary =
    "Check every shard of a checkpoint against its checksums and the index";

} // namespace initrt

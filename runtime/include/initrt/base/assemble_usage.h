// The usage of `assemble`, shared by initc-checkpoint and `initc assemble` (which runs it), so
// that both --help texts say the same.
#pragma once

namespace initrt {

inline constexpr const char *kAssembleSummary =
    "Join a checkpoint into one model.safetensors, or into a directory in Hugging Face's sharded "
    "layout";

inline constexpr const char *kAssembleOutputHelp = "the safetensors file, or the directory, to write";

inline constexpr const char *kMaxShardSizeHelp =
    "largest file of a directory output, as save_pretrained's max_shard_size (default 5GB; "
    "KB MB GB are 10^3 10^6 10^9, KiB MiB GiB 2^10 2^20 2^30)";

inline constexpr const char *kAssembleFooter =
    "The checkpoint may be in any layout prog/init --layout writes, found from its files:\n"
    "  ranks  index.json and rank-K-of-W.safetensors (prog/init's default)\n"
    "  hf     initc-checkpoint.json and model-0000k-of-0000n.safetensors\n"
    "  dcp    shard-K-of-W.safetensors, one per rank (gathered from several hosts or not)\n"
    "One not completely written is refused. Every stored slice is checked against its checksum\n"
    "as it is read; memory stays bounded whatever the model's size.\n"
    "\n"
    "Outputs:\n"
    "  -o NAME.safetensors (or an existing file, a named pipe, a device): one safetensors file\n"
    "     with every tensor, tied names in its initc.aliases metadata.\n"
    "  -o DIR (any other name): what save_pretrained writes: model-0000k-of-0000n.safetensors\n"
    "     split at --max-shard-size, model.safetensors.index.json, config.json when the\n"
    "     checkpoint has one (an hf checkpoint; otherwise one already in DIR is kept), and\n"
    "     initc-checkpoint.json, written last, so that `verify DIR` checks it. DIR must be new,\n"
    "     empty or an earlier output, and outside the checkpoint.";

} // namespace initrt

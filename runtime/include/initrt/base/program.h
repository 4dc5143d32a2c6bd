// The program format: what `initc compile` writes into prog/ and the runtime reads.
//
// prog/program.json describes the model (mesh, parameters, their shardings and kernels) and
// prog/kernels.so holds one native kernel per distinct parameter recipe. The runtime owns this
// format; the compiler includes this header to write it. See ir-spec/program-format.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace initrt {

/// Version of program.json; bumped on any incompatible change.
inline constexpr int kProgramFormatVersion = 3;

/// Element types a parameter can have, named as safetensors names them.
enum class DType { F32, BF16, F16, F64, BOOL, I64 };

const char *dtypeName(DType dtype);              // "F32", "BF16", ...
bool parseDType(const std::string &name, DType &out);
int64_t dtypeBytes(DType dtype);                 // 4, 2, 2, 8, 1, 8

/// A device mesh with named axes, row-major: the last axis varies fastest with the rank.
struct Mesh {
  std::vector<std::string> axisNames;
  std::vector<int64_t> shape;
  int64_t size() const;                          // product of shape (1 for an empty mesh)
};

/// One parameter or persistent buffer of the model, with its global shape and sharding.
struct Param {
  std::string name;
  std::vector<std::string> aliases;              // tied names that share this tensor
  DType dtype = DType::F32;
  std::vector<int64_t> shape;                    // global shape
  /// splitAxes[d] lists the mesh axes (indices into Mesh) that dim d is split over, major first.
  /// Dims past splitAxes.size() are not split; mesh axes used nowhere replicate.
  std::vector<std::vector<int>> splitAxes;
  /// Pipeline placement: with stageAxis >= 0, only ranks whose coordinate on mesh axis
  /// stageAxis is `stage` hold the parameter (split by splitAxes as usual); the others hold
  /// nothing (ir-spec/sharding.md, "Pipeline stages").
  int stageAxis = -1;
  int64_t stage = 0;
  std::string kernel; // symbol in kernels.so; "" with `load`
  /// Values passed to the kernel as `args` (the parameter's Philox keys, k1 << 32 | k0): they
  /// let parameters with the same recipe share one kernel.
  std::vector<uint64_t> kernelArgs;
  bool buffer = false;                           // a buffer rather than a trainable parameter
  bool persistent = true;                        // non-persistent buffers are not checkpointed
  /// A whole-tensor step applied after the kernel: "" (none) or "orthogonal". For "orthogonal"
  /// the kernel writes the N(0, 1) matrix as F32 at global indices; the runtime computes it for
  /// the whole tensor, orthogonalizes it (Householder QR), scales by `gain`, rounds to `dtype`
  /// and keeps the rank's slice. See ir-spec/program-format.md.
  std::string transform;
  double gain = 1.0;                             // only with a transform
  /// Where an `init.load` parameter's values come from; such a parameter has no kernel.
  struct Load {
    std::string file;   // a .safetensors file, or a Hugging Face index (.json) of several
    std::string tensor; // the tensor's name in it
  };
  std::optional<Load> load;
  int64_t numElements() const;
};

/// The kernels compiled for one CPU: parameter p's symbol is params[p].kernel + suffix.
struct KernelVariant {
  std::string targetCpu;               // LLVM CPU name
  std::string suffix;                  // "" for the first variant, ".<cpu>" for the others
  std::vector<std::string> extensions; // what the code may use beyond its base ISA (cpu.h)
};

/// The whole of program.json.
struct Program {
  int formatVersion = kProgramFormatVersion;
  std::string modelName;
  uint64_t seed = 0;
  Mesh mesh;
  std::vector<Param> params;
  std::string kernelsFile = "kernels.so";
  std::string kernelsChecksum;                   // XXH3-64 of kernels.so, 16 hex digits
  /// The CPUs kernels.so has code for, best first; the runtime runs the first this CPU supports.
  std::vector<KernelVariant> kernelVariants;
  std::string programId;                         // identifies model + seed + mesh + shardings
  /// The model's Hugging Face config.json (JSON text) when the IR came from `initc import hf`,
  /// else "": the `hf` checkpoint layout writes it beside the weights. program.json holds it as
  /// the object "hf_config"; as read back it is canonicalHfConfig's text (program_io.h).
  std::string hfConfig;
};

/// Native kernel ABI. Computes elements [begin, end) of one shard, in the shard's local row-major
/// order, into `out` (which points at the shard's element 0). The shard is the box
/// [offset, offset + localShape) of a tensor of `globalShape`; `rank` is the tensor rank.
/// `args` holds the parameter's Param::kernelArgs (any valid pointer when there are none).
/// Every element is a pure function of its global index, so any split of [begin, end) across
/// threads gives the same bytes.
extern "C" typedef void (*KernelFn)(void *out, const int64_t *globalShape,
                                   const int64_t *offset, const int64_t *localShape,
                                   int64_t begin, int64_t end, const uint64_t *args);

} // namespace initrt

// Base checkpoints: the safetensors files whose tensors `init.load` parameters take as they are
// (ir-spec/dialect.md, init.load). Each rank reads only its slice.
#pragma once

#include "initrt/base/program.h"
#include "initrt/base/safetensors.h"
#include "initrt/base/sharding.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace initrt {

/// A range of a base tensor's row-major bytes, [begin, begin + bytes), held at `at` of the data
/// section of `file`.
struct BasePiece {
  const SafetensorsReader *file = nullptr;
  uint64_t begin = 0, bytes = 0, at = 0;
};

/// One tensor of an open base checkpoint file. A stacked experts tensor of a checkpoint in the
/// original per-expert format is gathered from its experts' tensors: `entry` is then the stacked
/// tensor (its name, dtype and shape; begin 0), `file` the first expert's, and `pieces` where
/// its bytes lie, in their order.
struct BaseTensor {
  const SafetensorsReader *file = nullptr;
  const SafetensorsEntry *entry = nullptr;
  const std::vector<BasePiece> *pieces = nullptr;
};

/// Finds the tensors parameters load, opening each file once. A path is used as written:
/// relative paths start at the working directory. A `.json` path is a Hugging Face index
/// (model.safetensors.index.json) whose "weight_map" names the file, next to it, of each tensor.
/// An index of an MoE model in its original per-expert format (save_pretrained's default; the
/// model type from the config.json beside it) is read as the stacked model: its experts'
/// tensors as the stacked tensors they are parts of, renamed tensors under the model's names
/// (ir-spec/checkpoint.md, "MoE models").
class BaseFiles {
public:
  /// The tensor `tensor` of `file`, or nullopt with `error` saying what is missing.
  std::optional<BaseTensor> find(const std::string &file, const std::string &tensor,
                                 std::string &error);
  /// The names of every tensor of `file` (of every file, for an index), or nullopt with `error`.
  std::optional<std::vector<std::string>> tensorNames(const std::string &file, std::string &error);
  /// The safetensors file that holds `tensor`: `file` itself, or the one its index names (for a
  /// stacked tensor of the original per-expert format, its first expert's).
  std::optional<std::string> locate(const std::string &file, const std::string &tensor,
                                    std::string &error);
  /// Every file read (safetensors files and indexes), as it was then: {path: {"bytes": N,
  /// "mtime": [s, ns], "ctime": [s, ns]}} as compact JSON, paths in byte order; "" for none.
  std::string stamps() const;
  /// The first file read that has changed since (its size or times), or "".
  std::string changedSinceOpened() const;

private:
  const std::map<std::string, std::string> *weightMap(const std::string &index, std::string &error);
  const SafetensorsReader *open(const std::string &path, std::string &error);
  /// The stacked model's tensor `tensor` of an index in the original per-expert format: nullopt
  /// with `error` empty when the index is not in one or has no such tensor.
  std::optional<BaseTensor> stacked(const std::string &index, const std::string &tensor,
                                    std::string &error);
  struct Original {
    std::string name; // a tensor the format renames: its name in the index
    int groups = 1;
    std::map<std::pair<int64_t, int>, std::string> parts; // (expert, group) -> name in the index
  };
  /// The stacked model's names of an index's tensors (empty: not in an original format).
  const std::map<std::string, Original> &originals(const std::string &index);

  std::map<std::string, std::unique_ptr<SafetensorsReader>> files;
  std::map<std::string, std::map<std::string, std::string>> weightMaps; // index -> tensor -> file
  std::map<std::string, FileStamp> indexStamps;                         // index -> as it was read
  std::map<std::string, std::string> failures; // file that cannot be opened -> why
  std::map<std::string, std::map<std::string, Original>> originalNames; // index -> stacked name
  struct Gathered {
    SafetensorsEntry entry;
    std::vector<BasePiece> pieces;
  };
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Gathered>> gathered;
};

/// When `file` is one rank's file of a checkpoint initc wrote on several ranks (it holds slices,
/// not tensors), says so and what to load instead; else "".
std::string shardOfInitcCheckpoint(const SafetensorsReader &file);

/// Checks that `tensor` has the dtype and shape of the parameter that loads it: init.load copies
/// bytes and converts nothing. `param` names it in the error.
bool checkBaseTensor(const BaseTensor &tensor, const std::string &param, DType dtype,
                     const std::vector<int64_t> &shape, std::string &error);

/// A base checkpoint that could not be read while a shard was filled from it (a file cut short
/// or an I/O error after it was opened): the input's fault, not the program's.
class BaseReadError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The tensor each parameter of a program loads, opened and checked.
class BaseCheckpoints {
public:
  /// Finds and checks the tensor of every parameter with a `load` source; false with the first
  /// parameter's error when one cannot be (failure(p) says each one's).
  bool open(const Program &program, std::string &error);
  /// Why params[p]'s tensor could not be opened, or "".
  const std::string &failure(size_t p) const {
    static const std::string none;
    return p < errors.size() ? errors[p] : none;
  }

  /// The tensor params[p] loads, or null when it is computed.
  const BaseTensor *tensor(size_t p) const {
    return p < tensors.size() && tensors[p] ? &*tensors[p] : nullptr;
  }
  /// Which versions of the files were read (BaseFiles::stamps): a shard records them, and a
  /// rerun computes again a shard that records others.
  std::string stamps() const { return files.stamps(); }
  /// The first file read that has changed since, or "": checked before a shard is committed.
  std::string changedSinceOpened() const { return files.changedSinceOpened(); }
  /// After open() failed: whether every file that failed is absent (no such file), rather than
  /// there but unusable. A rerun may keep complete shards without their base only then.
  bool onlyAbsent() const { return failedOnlyAbsent; }

private:
  BaseFiles files;
  std::vector<std::optional<BaseTensor>> tensors;
  std::vector<std::string> errors;
  bool failedOnlyAbsent = true;
};

/// Reads elements [begin, end) of `slice` of `param`, in the slice's row-major order, into `out`
/// (element i at out + i * dtype bytes, as a kernel writes them). Throws std::runtime_error when
/// the file cannot be read (BaseReadError).
void readBaseElements(const BaseTensor &tensor, const Param &param, const Slice &slice, void *out,
                      int64_t begin, int64_t end);

} // namespace initrt

// The reading side of `initc assemble`: a checkpoint in any layout (ranks, hf, dcp) seen as its
// global tensors and, for each, the boxes stored for it, where their bytes are and their
// checksums. One implementation per layout, each in its own unit; assemble.cpp streams any of
// them into its outputs.
#pragma once

#include "checkpoint/dcp_file.h"
#include "initrt/base/files.h"
#include "initrt/base/hf_plan.h"
#include "initrt/base/program.h"
#include "initrt/base/safetensors.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace initrt {

// The hf layout's record (ir-spec/checkpoint.md, "The hf layout").
inline constexpr const char *kHfRecordFile = "initc-checkpoint.json";
inline constexpr const char *kHfIndexFile = "model.safetensors.index.json";
inline constexpr const char *kHfConfigFile = "config.json";

/// One box of a tensor as the checkpoint stores it. Its bytes, in the box's own row-major order,
/// are read out of an array of `storedShape` (the box itself, or the whole tensor) that starts
/// `begin` bytes into the data section of source file `file`, the box at `storedOffset` in it.
struct StoredBox {
  int64_t rank = 0; // the rank that wrote it
  std::vector<int64_t> offset, shape; // in the global tensor
  std::string checksum;               // XXH3-64, 16 hex digits, of the box's bytes
  size_t file = 0;
  uint64_t begin = 0;
  std::vector<int64_t> storedShape, storedOffset;
  /// An hf tensor written per expert: the whole tensor's row-major bytes lie in these pieces
  /// (file: a source file, offset: in its data section) rather than at `begin` of `file`.
  std::vector<HfPiece> pieces;
  std::string where; // "NAME [0, 3] on rank 1 (FILE)": names the box in messages
  std::string hint;  // what to run when its bytes are wrong
};

/// One global tensor of the checkpoint, in the program's order.
struct SourceTensor {
  Param param; // name, aliases, dtype, shape (splitAxes only where the source records them)
  /// Where the layout's records list them (dcp): the stored boxes, which tile the tensor.
  std::vector<StoredBox> boxes;
};

class SliceSource {
public:
  virtual ~SliceSource() = default;
  /// Reads `bytes` bytes at `offset` in the data section of file `file`; the error names it.
  virtual bool readFile(size_t file, uint64_t offset, void *out, uint64_t bytes,
                        std::string &error) = 0;

  /// The model, as a program without kernels: mesh, id, name, HF config, the persistent
  /// parameters in order.
  const Program &program() const { return description; }
  const std::vector<SourceTensor> &tensors() const { return entries; }
  /// Tensor `index`'s stored boxes. By default those read at open; a layout whose boxes follow
  /// from the sharding (ranks, hf) computes them when asked, one tensor at a time, so that a job
  /// of many ranks is never held whole.
  virtual bool boxes(size_t index, std::vector<StoredBox> &stored, std::string &error);

  /// Bytes [from, from + bytes) of `box` in its own row-major order.
  bool readBox(const StoredBox &box, uint64_t elementBytes, uint64_t from, char *out,
               uint64_t bytes, std::string &error);

protected:
  /// Checks that each tensor's boxes tile it (inside it, disjoint, covering it): a checkpoint
  /// whose records say otherwise is refused before anything is written.
  bool checkTiling(std::string &error) const;

  Program description;
  std::vector<SourceTensor> entries;
  std::vector<std::string> paths; // of the files `file` indexes (hf, dcp)
};

/// The layout of the checkpoint in `dir` as its files show it ("ranks", "hf", "dcp"), or "" when
/// they show none; complete or not (openSliceSource says what is missing).
std::string detectCheckpointLayout(const std::string &dir);

/// Whether `name`, a file in a checkpoint's directory in `layout` (any layout for ""), is (or
/// would be) one of the checkpoint's own files.
bool layoutReservesName(const std::string &layout, const std::string &name);

/// Opens the checkpoint in `dir`, its layout detected from its files: index.json (ranks),
/// initc-checkpoint.json (hf), shard-K-of-W.safetensors (dcp). Null with one message when it is
/// none of them or one not completely written.
std::unique_ptr<SliceSource> openSliceSource(const std::string &dir, std::string &error);

// One per layout (ranks_source.cpp, hf_source.cpp, dcp_source.cpp).
std::unique_ptr<SliceSource> openRanksSource(const std::string &dir, std::string &error);
std::unique_ptr<SliceSource> openHfSource(const std::string &dir, std::string &error);
std::unique_ptr<SliceSource> openDcpSource(const std::string &dir, std::string &error);

/// Parses "model-00001-of-00004.safetensors".
bool parseHfFileName(const std::string &name);

/// safetensors files opened on demand, a bounded number at a time, each checked on every reopen
/// to be the file first opened.
class ReaderPool {
public:
  explicit ReaderPool(const std::vector<std::string> &paths) : paths(paths) {}
  SafetensorsReader *get(size_t file, std::string &error);

private:
  const std::vector<std::string> &paths;
  std::map<size_t, std::unique_ptr<SafetensorsReader>> open;
  std::map<size_t, FileStamp> stamps;
};

} // namespace initrt

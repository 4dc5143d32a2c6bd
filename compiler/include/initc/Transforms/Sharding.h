//===- Sharding.h - meshes and sharding rules -------------------*- C++ -*-===//
//
// How `--mesh` and `--shard` become a mesh and one #mesh.shard per parameter
// (ir-spec/sharding.md).
//
//===----------------------------------------------------------------------===//
#ifndef INITC_TRANSFORMS_SHARDING_H
#define INITC_TRANSFORMS_SHARDING_H

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace initc {

/// A mesh as the user writes it: `dp=2,tp=2`.
struct MeshSpec {
  std::vector<std::string> axisNames;
  std::vector<int64_t> shape;
  int64_t size() const;
  std::string str() const; // back to `dp=2,tp=2`
};

/// Parses `dp=2,tp=2`. On failure, `error` says what is wrong and how to write it.
mlir::LogicalResult parseMeshSpec(llvm::StringRef text, MeshSpec &mesh, std::string &error);

/// What a parameter looks like to the sharding rules.
struct ParamShape {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<std::string> axes; // logical axis names, may be empty
  bool buffer = false;            // a module buffer, not a trainable parameter
  // How many heads its `heads` or `kv_heads` dim packs, from the model's config.json
  // (num_attention_heads, num_key_value_heads); 0 when unknown.
  int64_t heads = 0;
};

/// Per dim, the mesh axes (indices) a parameter is split over.
using DimAxes = std::vector<std::vector<int>>;

/// A preset (replicated, fsdp, tp, fsdp+tp; torchtitan, megatron, maxtext: the trainers'
/// layouts) or a JSON rules file, resolved against a mesh.
class ShardingRules {
public:
  /// `spec` is a preset name or a path to a rules file.
  static std::optional<ShardingRules> load(llvm::StringRef spec, const MeshSpec &mesh,
                                           std::string &error);
  /// The split of one parameter. Fails (with `error` naming the parameter) if a rule maps two
  /// dims to one mesh axis.
  mlir::LogicalResult apply(const ParamShape &param, DimAxes &out, std::string &error);
  /// Parameter `name` is tied to `target` and takes its sharding: a pattern matching only such
  /// parameters gets an error that says so.
  void noteTied(llvm::StringRef name, llvm::StringRef target);
  /// After every parameter was seen: rules of a file that decided nothing are errors.
  mlir::LogicalResult checkAllRulesUsed(std::string &error) const;
  /// After every parameter was seen: for a preset that split no parameter over a mesh axis of
  /// more than one device it splits over (the model's dims have no logical axes it knows), a
  /// warning that says so; empty otherwise.
  std::string presetWarning() const;

  static llvm::ArrayRef<llvm::StringRef> presetNames();

  /// The mesh axis whose coordinate is a pipeline stage, or -1: a preset's `pp` (or `pipeline`,
  /// `stage`) axis, a rules file's "pipeline" axis.
  int stageAxis() const { return stageAxisName.empty() ? -1 : axisIndex(stageAxisName); }
  /// The stage of each parameter, given the names of the untied parameters in the module's
  /// order, or -1 for scalars (held by every rank). Layer N (the first all-digit component of a
  /// name, `model.layers.N.`) goes where the rules file's "stages" lists it or, without one,
  /// where torchtitan's split puts it; parameters before the first layer go on the first stage,
  /// the ones after the last layer on the last (ir-spec/sharding.md). Fails, naming the layer,
  /// when the stages do not fit the model. `rankBytes` is, per parameter, the bytes of its
  /// largest shard: the weights of the `"split": "bytes"` rule.
  mlir::LogicalResult assignStages(llvm::ArrayRef<ParamShape> params,
                                   llvm::ArrayRef<int64_t> rankBytes, std::vector<int64_t> &stages,
                                   std::string &error) const;

private:
  struct Rule {
    std::string pattern;           // logical axis name, or a glob over parameter names
    bool byName = false;
    std::vector<std::vector<std::string>> dims; // byName: mesh axes per dim
    std::vector<std::string> meshAxes;          // logical: mesh axes for that dim
    bool used = false;
    std::string shadowedBy;  // a pattern that decided a parameter this rule matches (for a
                             // logical rule: any pattern, since patterns win)
    std::string tiedExample; // a tied parameter this pattern matches
  };
  MeshSpec mesh;
  std::string preset;              // empty for a rules file
  std::string sourceName;
  std::vector<Rule> rules;
  std::string stageAxisName;                    // empty: no pipeline stages
  std::vector<std::vector<int64_t>> stageLayers; // a rules file's layers per stage, if given
  bool splitByBytes = false; // "split": "bytes": balance each stage's per-rank bytes
  bool megatronStages = false; // --shard megatron: L / P layers on every stage
  int axisIndex(llvm::StringRef name) const;
};

} // namespace initc

#endif // INITC_TRANSFORMS_SHARDING_H

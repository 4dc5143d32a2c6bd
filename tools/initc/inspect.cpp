//===- inspect.cpp - initc inspect ----------------------------------------===//
//
// Every parameter with its dtype, shape, sharding and bytes per rank, and the estimate of the
// largest rank's memory and time (initc/Analysis/RankEstimate.h), as a table or as JSON.
//
//===----------------------------------------------------------------------===//
#include "session.h"
#include "subcommands.h"

#include "initc/Analysis/RankEstimate.h"
#include "initc/Pipeline/Pipeline.h"
#include "initrt/base/program.h"
#include "initrt/base/report.h"

#include "llvm/ADT/StringExtras.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <vector>

using namespace mlir;
using initc::analysis::KernelRates;
using initc::analysis::RankEstimate;

namespace initc::driver {

namespace {

/// A name as one table cell: control characters (NUL, newline, ...) escaped as \XX so that a
/// hostile name can neither cut the row short nor break it.
std::string printableName(const std::string &name) {
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::printEscapedString(name, os);
  return os.str();
}

/// `[dp, tp]`-style text of a parameter's sharding: the mesh axes of each dim, `-` for none.
std::string shardingText(const initrt::Program &program, const initrt::Param &param) {
  // On one pipeline stage: `pp=2 [dp, -]`.
  std::string stage = param.stageAxis < 0 ? ""
                                          : program.mesh.axisNames[size_t(param.stageAxis)] +
                                                "=" + std::to_string(param.stage) + " ";
  if (param.splitAxes.empty())
    return stage + (stage.empty() ? "replicated" : "whole");
  std::string s = stage + "[";
  for (size_t d = 0; d < param.shape.size(); ++d) {
    s += d ? ", " : "";
    if (d >= param.splitAxes.size() || param.splitAxes[d].empty()) {
      s += "-";
      continue;
    }
    for (size_t i = 0; i < param.splitAxes[d].size(); ++i)
      s += (i ? "*" : "") + program.mesh.axisNames[param.splitAxes[d][i]];
  }
  return s + "]";
}

/// The mesh axes of more than one device over which `param` is replicated: the ranks holding
/// each of its slices are those that differ only in their coordinates on these axes.
std::vector<std::string> replicatingAxes(const initrt::Program &program,
                                         const initrt::Param &param) {
  std::vector<bool> used(program.mesh.shape.size(), false);
  for (const std::vector<int> &axes : param.splitAxes)
    for (int axis : axes)
      used[size_t(axis)] = true;
  if (param.stageAxis >= 0)
    used[size_t(param.stageAxis)] = true;
  std::vector<std::string> names;
  for (size_t a = 0; a < used.size(); ++a)
    if (!used[a] && program.mesh.shape[a] > 1)
      names.push_back(program.mesh.axisNames[a]);
  return names;
}

/// How many ranks hold each slice of `param` (the product of its replicating axes).
uint64_t copiesOf(const initrt::Program &program, const initrt::Param &param) {
  uint64_t copies = 1;
  for (const std::string &name : replicatingAxes(program, param))
    for (size_t a = 0; a < program.mesh.axisNames.size(); ++a)
      if (program.mesh.axisNames[a] == name)
        copies *= uint64_t(program.mesh.shape[a]);
  return copies;
}

/// Bytes held beyond one copy of every tensor, over all ranks, because of replication.
double replicaBytes(const initrt::Program &program) {
  double extra = 0;
  for (const initrt::Param &p : program.params)
    extra += double(copiesOf(program, p) - 1) * double(p.numElements()) *
             double(initrt::dtypeBytes(p.dtype));
  return extra;
}

void printInspectJson(const initrt::Program &program, const RankEstimate &e) {
  nlohmann::json out;
  out["model"] = program.modelName;
  out["seed"] = program.seed;
  out["mesh"] = {{"axes", program.mesh.axisNames}, {"shape", program.mesh.shape}};
  out["params"] = nlohmann::json::array();
  for (size_t i = 0; i < program.params.size(); ++i) {
    const initrt::Param &p = program.params[i];
    out["params"].push_back({{"name", p.name},
                             {"aliases", p.aliases},
                             {"dtype", initrt::dtypeName(p.dtype)},
                             {"shape", p.shape},
                             {"sharding", shardingText(program, p)},
                             {"split_axes", p.splitAxes},
                             {"buffer", p.buffer},
                             {"persistent", p.persistent},
                             {"bytes", p.numElements() * initrt::dtypeBytes(p.dtype)},
                             {"max_rank_bytes", e.maxSliceBytes[i]},
                             {"replicated_over", replicatingAxes(program, p)},
                             {"copies", copiesOf(program, p)}});
    if (p.stageAxis >= 0)
      out["params"].back()["stage"] = {{"axis", program.mesh.axisNames[size_t(p.stageAxis)]},
                                       {"index", p.stage}};
    if (p.load)
      out["params"].back()["load"] = {{"file", p.load->file}, {"tensor", p.load->tensor}};
  }
  out["totals"] = {{"parameter_count", e.paramCount},
                   {"buffer_elements", e.bufferCount},
                   {"bytes", e.totalBytes},
                   {"ranks", e.ranks},
                   {"largest_rank", e.largestRank},
                   {"largest_rank_bytes", e.largest},
                   {"largest_rank_loaded_bytes", e.loadedBytes},
                   {"per_rank_bytes",
                    {{"min", e.perRank.min},
                     {"min_rank", e.perRank.minRank},
                     {"mean", e.perRank.mean},
                     {"max", e.perRank.max},
                     {"max_rank", e.perRank.maxRank}}},
                   {"replica_bytes", replicaBytes(program)}};
  out["estimate"] = {
      {"note", "an estimate, not a measurement: in memory (the C API) shard bytes plus the "
               "runtime's measured overhead; prog/init (writing, or --discard) its own "
               "overhead plus the streaming buffers (and whole orthogonal shards), and writing the "
               "direct I/O staging buffer; both plus the largest "
               "orthogonal tensor's scratch (one is computed at a time); time at the kernel "
               "benchmark's one-core rates and orthogonal factorizations at "
               "orthogonal_flops_per_second, without page faults, reading base checkpoints "
               "(init.load) or writing the checkpoint"},
      {"runtime_overhead_bytes", uint64_t(e.runtimeOverhead)},
      {"writing_overhead_bytes", uint64_t(e.streamingOverhead)},
      {"orthogonal_scratch_bytes", uint64_t(e.orthogonalScratch)},
      {"orthogonal_flops", e.orthogonalFlops},
      {"orthogonal_flops_per_second", e.orthogonalFlopsPerSecond},
      {"largest_rank_memory_bytes", uint64_t(e.largestMemory)},
      {"writing_memory_bytes_per_thread", uint64_t(e.streamBytesPerThread)},
      {"writing_staging_bytes", uint64_t(e.writingStaging)},
      {"writing_memory_bytes_one_thread",
       uint64_t(e.streamingOverhead + 2 * e.streamBytesPerThread + e.orthogonalScratch)},
      {"time_one_core", nlohmann::json::array()}};
  for (size_t k = 0; k < e.times.size(); ++k) {
    const KernelRates &rates = e.times[k].rates;
    out["estimate"]["time_one_core"].push_back({{"target_cpu", rates.targetCpu},
                                                {"slowest_rank", e.times[k].slowestRank},
                                                {"slowest_rank_seconds", e.times[k].seconds},
                                                {"rates_elements_per_second",
                                                 {{"uniform", rates.uniform},
                                                  {"normal", rates.normal},
                                                  {"trunc_normal", rates.truncNormal}}}});
  }
  std::cout << out.dump(2, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace)
            << "\n";
}

void printInspectTable(const initrt::Program &program, const RankEstimate &e) {
  // A name with its aliases, as the first column shows it.
  auto shownName = [](const initrt::Param &p) {
    std::string name = printableName(p.name);
    if (!p.aliases.empty())
      name += " (= " + printableName(p.aliases[0]) + (p.aliases.size() > 1 ? ", ..." : "") + ")";
    return name;
  };
  size_t nameWidth = 4;
  for (auto &p : program.params)
    nameWidth = std::max(nameWidth, std::min<size_t>(shownName(p).size(), 60));
  std::printf("%-*s  %-5s  %-22s  %-18s  %12s\n", (int)nameWidth, "name", "dtype", "shape",
              "sharding", "bytes/rank");
  for (size_t i = 0; i < program.params.size(); ++i) {
    const initrt::Param &p = program.params[i];
    std::string name = shownName(p);
    std::vector<std::string> notes;
    if (p.buffer)
      notes.push_back(p.persistent ? "buffer" : "buffer, not saved");
    if (p.load)
      notes.push_back("loaded");
    if (uint64_t copies = copiesOf(program, p); copies > 1)
      notes.push_back(std::to_string(copies) + " copies over " +
                      llvm::join(replicatingAxes(program, p), ","));
    std::printf("%-*s  %-5s  %-22s  %-18s  %12s%s%s\n", (int)nameWidth, name.c_str(),
                initrt::dtypeName(p.dtype), initrt::shapeText(p.shape).c_str(),
                shardingText(program, p).c_str(), initrt::formatBytes(e.maxSliceBytes[i]).c_str(),
                notes.empty() ? "" : "  ", llvm::join(notes, ", ").c_str());
  }
  std::string meshText = "single device";
  if (!program.mesh.shape.empty()) {
    meshText.clear();
    for (size_t a = 0; a < program.mesh.shape.size(); ++a)
      meshText +=
          (a ? "," : "") + program.mesh.axisNames[a] + "=" + std::to_string(program.mesh.shape[a]);
  }
  std::printf("\nmodel %s, seed %llu, mesh %s (%lld rank%s)\n", program.modelName.c_str(),
              (unsigned long long)program.seed, meshText.c_str(), (long long)e.ranks,
              e.ranks == 1 ? "" : "s");
  std::printf("%llu parameters in %zu tensors, %s in all; largest rank: %lld with %s\n",
              (unsigned long long)e.paramCount, program.params.size(),
              initrt::formatBytes(e.totalBytes).c_str(), (long long)e.largestRank,
              initrt::formatBytes(e.largest).c_str());
  std::printf("per rank: min %s (rank %lld), mean %s, max %s (rank %lld)\n",
              initrt::formatBytes(e.perRank.min).c_str(), (long long)e.perRank.minRank,
              initrt::formatBytes(uint64_t(e.perRank.mean)).c_str(),
              initrt::formatBytes(e.perRank.max).c_str(), (long long)e.perRank.maxRank);
  size_t replicated = 0;
  for (const initrt::Param &p : program.params)
    replicated += copiesOf(program, p) > 1;
  if (replicated > 0)
    std::printf("%zu of %zu tensors are replicated (see copies): the ranks that differ only in "
                "their coordinates on the axes named hold the same slice, %s beyond one copy "
                "over all ranks\n",
                replicated, program.params.size(),
                initrt::formatBytes(uint64_t(replicaBytes(program))).c_str());
  std::string timeText;
  for (size_t k = 0; k < e.times.size(); ++k) {
    char text[128];
    std::snprintf(text, sizeof(text), "%s%s with %s kernels (rank %lld)", k ? ", " : "",
                  initrt::formatSeconds(e.times[k].seconds).c_str(), e.times[k].rates.instructions,
                  (long long)e.times[k].slowestRank);
    timeText += text;
  }
  std::printf("estimate per rank (not measured): memory up to %s through the C API (shards + %s "
              "runtime), %s + %s per thread in prog/init (streamed, --discard; writing adds %s "
              "of direct I/O staging); time "
              "on one core up to %s; divide by --threads; page faults and writing the "
              "checkpoint not included\n",
              initrt::formatBytes(uint64_t(e.largestMemory)).c_str(),
              initrt::formatBytes(uint64_t(e.runtimeOverhead)).c_str(),
              initrt::formatBytes(
                  uint64_t(e.streamingOverhead + e.streamBytesPerThread + e.orthogonalScratch))
                  .c_str(),
              initrt::formatBytes(uint64_t(e.streamBytesPerThread)).c_str(),
              initrt::formatBytes(uint64_t(e.writingStaging)).c_str(), timeText.c_str());
  if (e.loadedBytes > 0)
    std::printf("rank %lld reads %s of its shards from base checkpoints (init.load, marked "
                "loaded): at the file system's speed, not in the time above\n",
                (long long)e.largestRank, initrt::formatBytes(e.loadedBytes).c_str());
  if (e.orthogonalScratch > 0)
    std::printf("both memory figures include %s of scratch for the largest orthogonal tensor the "
                "rank holds part of (each rank computes it whole, one tensor at a time), and the "
                "times its sampling and its QR factorization (%.3g GFLOP at %.3g GFLOP/s)\n",
                initrt::formatBytes(uint64_t(e.orthogonalScratch)).c_str(), e.orthogonalFlops / 1e9,
                e.orthogonalFlopsPerSecond / 1e9);
}

} // namespace

int runInspect(const InspectArgs &args) {
  Session session;
  int status = 0;
  OwningOpRef<ModuleOp> module =
      loadModelForMesh(session, args.model, args.mesh, args.shard, status);
  if (!module)
    return status;
  initc::PipelineOptions options{args.mesh, args.shard};
  if (failed(initc::runPipeline(*module, options, initc::Stage::Sharded)))
    return 1;
  // What compile would refuse (an op that cannot be fused), inspect refuses too: a copy of the
  // sharded model goes on through fusion, while the table and estimates read the ops as written.
  {
    OwningOpRef<ModuleOp> fused = module->clone();
    initc::PipelineOptions rest;
    rest.first = initc::Stage::Canonical;
    if (failed(initc::runPipeline(*fused, rest, initc::Stage::Fused)))
      return 1;
  }
  initrt::Program program;
  std::string error;
  if (failed(initc::buildProgram(*module, modelNameOf(*module, args.model), program, error)))
    return fail(error);
  RankEstimate estimate = initc::analysis::estimateRanks(*module, program);
  if (args.json)
    printInspectJson(program, estimate);
  else
    printInspectTable(program, estimate);
  return 0;
}

} // namespace initc::driver

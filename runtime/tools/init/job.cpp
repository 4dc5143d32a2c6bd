#include "job.h"

#include "agreement.h"
#include "launcher.h"
#include "summary.h"

#include "checkpoint/checkpoint.h"
#include "executor/executor.h"
#include "initrt/base/atomic_file.h"
#include "initrt/base/checksum.h"
#include "initrt/base/files.h"
#include "initrt/base/program_io.h"
#include "initrt/base/report.h"

#include <chrono>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <unistd.h>

namespace initrt::init {
namespace {

using Clock = std::chrono::steady_clock;

std::string executableDir() {
  std::vector<char> path(PATH_MAX + 1, '\0');
  ssize_t length = readlink("/proc/self/exe", path.data(), PATH_MAX);
  if (length <= 0)
    return ".";
  std::string exe(path.data(), size_t(length));
  size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : exe.substr(0, slash));
}

// `path` made absolute against the working directory and normalized ("a//b/./c/" is "a/b/c"),
// without resolving links: what ranks compare to tell that they were given the same directory.
std::string normalizedPath(const std::string &path) {
  if (path.empty())
    return path;
  std::error_code failed;
  std::filesystem::path absolute = std::filesystem::absolute(path, failed);
  if (failed)
    absolute = path;
  std::string text = absolute.lexically_normal().string();
  while (text.size() > 1 && text.back() == '/')
    text.pop_back();
  return text;
}

// A base checkpoint inside --out is refused, whatever its name: stored as a shard or index.json
// it would be replaced by the run (or removed with --overwrite), and even under another name
// the checkpoint and its base are best kept apart.
// (A Hugging Face index names files next to it.)
bool baseOutsideOutput(const Program &program, const Options &options, std::string &error) {
  if (options.discard)
    return true;
  std::error_code ec;
  const std::filesystem::path out = std::filesystem::weakly_canonical(options.out, ec);
  for (const Param &param : program.params) {
    if (!param.load)
      continue;
    std::filesystem::path dir =
        std::filesystem::weakly_canonical(param.load->file, ec).parent_path();
    if (!ec && dir == out) {
      error = "the base checkpoint " + param.load->file + " (init.load of " + param.name +
              ") is inside --out " + options.out +
              ", which this run writes: copy it elsewhere, or choose another --out";
      return false;
    }
  }
  return true;
}

// The ranks of one job must run one program and write one directory: otherwise each would write
// a valid file of its own, and rank 0 an index of a checkpoint that does not exist. Rank 0 tells
// its program id, program and --out; before anything is written, every rank that differs fails,
// and the lowest of them says how.
int checkOneJob(World &world, const Program &program, const Options &options,
                const std::string &progDir, std::string &error) {
  std::string myDir = normalizedPath(progDir), myOut = normalizedPath(options.out);
  auto modeOf = [](const Options &o) {
    return std::string(o.discard ? "--discard" : "--out") + (o.overwrite ? " --overwrite" : "");
  };
  std::string rootId = program.programId, rootDir = myDir, rootOut = myOut;
  std::string myMode = modeOf(options), rootMode = myMode;
  world.broadcast(rootId);
  world.broadcast(rootDir);
  world.broadcast(rootOut);
  world.broadcast(rootMode);
  if (rootId != program.programId) {
    error = "ranks run different programs: this rank runs " + myDir + "/init (program id " +
            program.programId + "), rank 0 runs " + rootDir + "/init (program id " + rootId +
            "): start every rank of the job with the same prog/init";
    return kExitUsage;
  }
  if (myMode != rootMode) {
    // Some ranks would write shards that no index lists, or replace a checkpoint that the
    // others keep.
    error = "ranks were started with different options: this rank has " + myMode + ", rank 0 has " +
            rootMode + ": start every rank of the job with the same options";
    return kExitUsage;
  }
  if (!options.discard && myOut != rootOut) {
    error = "ranks write to different directories: this rank has --out " + myOut +
            ", rank 0 has --out " + rootOut +
            ": give every rank the same --out (one checkpoint is one directory)";
    return kExitUsage;
  }
  return kExitOk;
}

// Computes this rank's shards. Workers compute pieces into a small ring of buffers while this
// thread takes each in turn: writing it at its place in the file (checksummed as it passes), or,
// with --discard, dropping it. Memory stays a few MiB per thread and no page is faulted in twice.
// Adds the shards' sizes to `stats`; `checksums` (one per parameter) gets those written.
int computeShards(const Program &program, KernelLibrary &kernels, const CheckpointLayout &output,
                  const Options &options, int64_t myRank, int threads, bool showProgress,
                  const std::string &baseStamps, RankStats &stats,
                  std::vector<std::string> &checksums, std::string &error) {
  RunOptions runOptions;
  runOptions.threads = threads;
  std::unique_ptr<ProgressBar> bar;
  if (showProgress) {
    bar.reset(new ProgressBar());
    runOptions.progress = [&](uint64_t done, uint64_t total) { bar->update(done, total); };
  }
  std::vector<ShardJob> jobs =
      output.storesReplicas()
          ? planRank(program, kernels, myRank, /*persistentOnly=*/true)
          : planBoxes(program, kernels, writeBoxes(program, myRank));
  for (const ShardJob &job : jobs) {
    stats.bytes += double(job.bytes);
    stats.elements += double(job.slice.numElements());
    stats.loaded += job.base ? double(job.slice.numElements()) : 0;
  }
  int code = kExitOk;
  try {
    if (options.discard) {
      auto drop = [](size_t, uint64_t, const void *, uint64_t, std::string &) { return true; };
      if (!streamShardJobs(jobs, runOptions, drop, error))
        code = kExitFailure;
    } else {
      std::vector<ShardTensor> layout;
      for (const ShardJob &job : jobs) {
        ShardTensor tensor;
        tensor.param = job.param;
        tensor.slice = job.slice;
        tensor.bytes = job.bytes;
        layout.push_back(std::move(tensor));
      }
      std::unique_ptr<RankWriter> writer;
      std::vector<std::string> written;
      // Computed in the order of the file, so that it is written front to back.
      std::vector<size_t> order;
      std::vector<ShardJob> inFileOrder;
      auto sink = [&](size_t job, uint64_t offset, const void *data, uint64_t bytes,
                      std::string &why) {
        return writer->writePiece(order[job], offset, data, bytes, why);
      };
      // A base file changed while it was read may have given part old, part new bytes.
      auto baseUnchanged = [&] {
        std::string changed = kernels.baseChangedSinceRead();
        if (!changed.empty())
          error = changed + " (a base checkpoint) changed while this rank read it: run again";
        return changed.empty();
      };
      writer = output.openRank(options.out, program, myRank, layout, error, baseStamps);
      bool opened = writer != nullptr;
      if (opened) {
        order = writer->writeOrder();
        for (size_t t : order)
          inFileOrder.push_back(jobs[t]);
      }
      if (!opened || !streamShardJobs(inFileOrder, runOptions, sink, error) || !baseUnchanged() ||
          !writer->finish(written, error)) {
        code = kExitFailure;
      } else {
        checksums.assign(program.params.size(), std::string());
        for (size_t t = 0; t < jobs.size(); ++t)
          checksums[size_t(jobs[t].param - program.params.data())] = written[t];
      }
    }
  } catch (const BaseReadError &e) { // the input changed under the run: not initc's fault
    code = kExitFailure;
    error = e.what();
  }
  if (bar && code == kExitOk)
    bar->finish();
  return code;
}

// Rank 0 writes index.json from every rank's report: its shard digest and its replicated
// tensors' checksums (8 bytes each). Every rank takes part; the code is rank 0's.
int writeIndexFromReports(World &world, const Program &program, const CheckpointLayout &output,
                          const Options &options, const std::vector<std::string> &checksums,
                          std::string &error) {
  RankReport mine = makeRankReport(program, checksums);
  std::vector<uint64_t> words = {mine.digest};
  words.insert(words.end(), mine.replicated.begin(), mine.replicated.end());
  const size_t replicatedEnd = words.size();
  if (output.gathersChecksums())
    for (const std::string &hex : checksums) {
      uint64_t value = 0;
      words.push_back(parseChecksumHex(hex, value) ? value : 0);
    }
  std::vector<uint64_t> all = world.gatherToRoot(words);
  if (world.rank() != 0)
    return kExitOk;
  std::vector<RankReport> reports(size_t(world.size()));
  for (size_t r = 0; r < reports.size(); ++r) {
    const uint64_t *theirs = &all[r * words.size()];
    reports[r].digest = theirs[0];
    reports[r].replicated.assign(theirs + 1, theirs + replicatedEnd);
    reports[r].checksums.assign(theirs + replicatedEnd, theirs + words.size());
  }
  return output.finishJob(options.out, program, reports, error) ? kExitOk : kExitFailure;
}

// Files that several ranks write together need one directory that every rank sees: rank 0
// leaves a token with a random nonce in --out, and every rank reads it back before anything is
// written. A rank on another host's local disk (or another mount) does not find it.
int checkSharedDir(World &world, const Options &options, std::string &error) {
  std::string nonce;
  int code = kExitOk;
  std::string tokenPath;
  if (world.rank() == 0) {
    std::random_device random;
    char text[33];
    std::snprintf(text, sizeof text, "%08x%08x%08x%08x", random(), random(), random(), random());
    nonce = text;
    std::error_code failed;
    std::filesystem::create_directories(options.out, failed);
    tokenPath = options.out + "/.initc-job-" + nonce;
    if (failed || !writeFileAtomically(tokenPath, nonce, error)) {
      if (failed)
        error = "cannot create --out " + options.out + ": " + failed.message();
      code = kExitFailure;
      nonce.clear();
    }
  }
  world.broadcast(nonce);
  if (code == kExitOk && world.rank() != 0) {
    std::string seen, why;
    if (nonce.empty() ||
        readRegularFile(options.out + "/.initc-job-" + nonce, 64, seen, why) !=
            ReadFileStatus::Ok ||
        seen != nonce) {
      error = "--out " + options.out + " is not shared by every rank (rank " +
              std::to_string(world.rank()) +
              " does not see the files rank 0 made there): the " + options.layout +
              " layout needs one directory that every rank sees; use --layout dcp for "
              "node-local disks";
      code = kExitFailure;
    }
  }
  // Every rank has looked before the token goes.
  world.maxInt(code);
  if (!tokenPath.empty())
    ::unlink(tokenPath.c_str());
  return code;
}

int run(World &world, const Options &options, int64_t myRank, const std::string &launcher) {
  Clock::time_point start = Clock::now();
  Agreement agreement(world, myRank);
  const bool singleRank = options.rank >= 0;
  const bool root = world.rank() == 0;
  std::string error;
  const CpuShare cpuShare = world.cpuShare();
  const int threads = options.threads > 0 ? options.threads : cpuShare.threads;
  const CheckpointLayout &output = *checkpointLayout(options.layout); // main.cpp checked it
  LayoutSettings settings;
  settings.maxShardBytes = options.maxShardBytes;
  settings.hfExperts = options.hfExperts;
  output.configure(settings);

  std::string progDir = options.programDir.empty() ? executableDir() : options.programDir;
  Program program;
  int code = readProgram(progDir, program, error) ? kExitOk : kExitFailure;
  if (code == kExitOk && !options.hfExpertsGiven) {
    settings.hfExperts = defaultHfExperts(program);
    output.configure(settings);
  }
  if (int agreed = agreement.settle(code, error))
    return agreed;

  if (world.size() > 1) {
    code = checkOneJob(world, program, options, progDir, error);
    if (int agreed = agreement.settle(code, error))
      return agreed;
  }

  const int64_t meshSize = program.mesh.size();
  if (singleRank && options.rank >= meshSize) {
    error = "--rank " + std::to_string(options.rank) + " is outside the mesh " +
            meshText(program.mesh) + " of " + std::to_string(meshSize) +
            " devices: pass 0 <= K < " + std::to_string(meshSize);
    return agreement.settle(kExitUsage, error);
  }
  if (!singleRank && world.size() != meshSize) {
    // Every rank knows the mismatch; rank 0 alone says it.
    std::string started = !launcher.empty()
                              ? (launcher == "mpirun" ? "MPI" : launcher) + " started " +
                                    std::to_string(world.size()) +
                                    (world.size() == 1 ? " rank" : " ranks")
                              : "it was started without mpirun";
    if (root)
      std::fprintf(stderr,
                   "%s: error: the mesh %s has %lld devices but %s: run %s (or pass --rank K to "
                   "compute one rank alone)\n",
                   programName.c_str(), meshText(program.mesh).c_str(), (long long)meshSize,
                   started.c_str(),
                   launchLine(launcher.empty() ? "mpirun" : launcher, long(meshSize),
                              progDir + "/init")
                       .c_str());
    return kExitUsage;
  }

  std::unique_ptr<KernelLibrary> kernels =
      KernelLibrary::load(progDir, program, error, options.targetCpu);
  code = kernels && baseOutsideOutput(program, options, error) ? kExitOk : kExitFailure;
  // The base checkpoints init.load reads. A rank whose shard is already complete, computed from
  // the files of the base that are there, needs the others no more: a finished job reruns without
  // its base. A base that is there but cannot be used stops the rank, as does a missing one any
  // rank that has to compute, before --out is touched.
  std::string baseError;
  const bool basesOpen = code != kExitOk || kernels->openBaseCheckpoints(program, baseError);
  // The versions of the base files read (those that opened): what a shard records, and what a
  // complete one must record to be kept.
  const std::string baseStamps = code == kExitOk ? kernels->baseStamps() : "";
  auto shardStateNow = [&](std::vector<std::string> &checksums, std::string &reason) {
    return output.rankState(options.out, program, myRank, checksums, reason, &baseStamps,
                            !basesOpen);
  };
  // A shard found complete here (its checksums read) is not read again below: preparing --out
  // leaves a complete shard of this program alone.
  std::vector<std::string> checkedEarly;
  std::string notComplete;
  bool completeEarly = false;
  if (!basesOpen && !options.discard && kernels->basesOnlyAbsent())
    completeEarly = shardStateNow(checkedEarly, notComplete) == ShardState::Complete;
  if (!basesOpen && !completeEarly) {
    code = kExitFailure;
    error = baseError;
  }
  if (int agreed = agreement.settle(code, error))
    return agreed;

  if (!options.discard) {
    code = kExitOk;
    if (output.sharesFiles() && world.size() > 1) {
      code = checkSharedDir(world, options, error);
      if (int agreed = agreement.settle(code, error))
        return agreed;
    }
    if (root && !output.prepareDir(options.out, program, options.overwrite, error))
      code = kExitFailure;
    // A killed run leaves its temporary files behind (never under a final name); they can be as
    // large as a shard. No rank of this job writes yet; a lone --rank run cleans only its own.
    if (root && code == kExitOk)
      output.removeStaleTemporaries(options.out, program, singleRank ? myRank : -1);
    if (root && code == kExitOk && !output.prepareShared(options.out, program, error))
      code = kExitFailure;
    if (int agreed = agreement.settle(code, error))
      return agreed;
    code = output.prepareRank(options.out, program, myRank, options.overwrite, error)
               ? kExitOk
               : kExitFailure;
    if (int agreed = agreement.settle(code, error))
      return agreed;
  }

  // This rank's shards.
  Clock::time_point rankStart = Clock::now();
  RankStats stats;
  std::vector<std::string> checksums(program.params.size());
  code = kExitOk;
  // A whole shard computed from other versions of the base checkpoints is computed again.
  ShardState state = ShardState::Incomplete;
  if (completeEarly) {
    state = ShardState::Complete;
    checksums = std::move(checkedEarly);
  } else if (!options.discard) {
    state = shardStateNow(checksums, notComplete);
  }
  bool complete = state == ShardState::Complete;
  stats.rebased = state == ShardState::BaseChanged;
  stats.unchecked = complete && !basesOpen;
  stats.damaged = state == ShardState::Incomplete && !options.discard &&
                  output.rankOutputExists(options.out, program, myRank);
  if (!complete && !basesOpen) { // complete when checked before --out was prepared, not now
    code = kExitFailure;
    error = state == ShardState::BaseChanged ? notComplete + ", and " + baseError : baseError;
  }
  // Shards computed again from a changed base next to shards kept because their base is absent
  // where their ranks run would be two versions of the base in one checkpoint.
  const bool rebasing = world.maxInt(stats.rebased != 0);
  if (rebasing && world.maxInt(stats.unchecked != 0)) {
    code = kExitFailure;
    error = "the base checkpoint changed since some ranks' shards were written, and other ranks, "
            "where it is absent, cannot check theirs against it: keeping those would mix two "
            "versions of the base in one checkpoint. Give every rank the base, or write to a new "
            "--out";
  }
  if (int agreed = agreement.settle(code, error))
    return agreed;
  // The same bits come back over a damaged file, so the index stays right; from another base
  // they differ, and only the whole job writes the index again.
  if ((stats.rebased || stats.damaged) && !options.quiet && singleRank)
    std::fprintf(stderr, "%s: rank %lld: %s: computing it again%s\n", programName.c_str(),
                 (long long)myRank, notComplete.c_str(),
                 stats.rebased ? output.afterRebasedRank().c_str() : "");
  if (complete) {
    stats.skipped = 1;
    // A job's summary counts the complete ranks; a lone --rank run says it here.
    if (!options.quiet && singleRank)
      std::fprintf(stderr, "%s: rank %lld already complete, verified%s\n", programName.c_str(),
                   (long long)myRank,
                   stats.unchecked ? " (not compared with its base checkpoint, absent)" : "");
    if (output.storesReplicas()) {
      for (const Param &param : program.params) {
        if (!param.persistent)
          continue;
        Slice slice = sliceForRank(program.mesh, param, myRank);
        stats.elements += double(slice.numElements());
        stats.bytes += double(slice.numElements()) * double(dtypeBytes(param.dtype));
      }
    } else { // what the rank writes: its boxes
      for (const ParamBox &box : writeBoxes(program, myRank)) {
        stats.elements += double(box.box.numElements());
        stats.bytes +=
            double(box.box.numElements()) * double(dtypeBytes(program.params[box.param].dtype));
      }
    }
  } else {
    code = computeShards(program, *kernels, output, options, myRank, threads,
                         root && !options.quiet, baseStamps, stats, checksums, error);
  }
  stats.seconds = std::chrono::duration<double>(Clock::now() - rankStart).count();
  stats.peakRssBytes = peakRssBytes();
  if (int agreed = agreement.settle(code, error))
    return agreed;

  // A lone --rank run leaves the index alone.
  if (!options.discard && !singleRank) {
    code = writeIndexFromReports(world, program, output, options, checksums, error);
    if (int agreed = agreement.settle(code, error))
      return agreed;
  }

  std::vector<double> allStats = gatherStats(world, stats);
  if (root && !options.quiet)
    printSummary(program, options, allStats, world.size(), threads, cpuShare,
                 std::chrono::duration<double>(Clock::now() - start).count(), kernels->targetCpu());
  return kExitOk;
}

} // namespace

// An exception here is a bug or memory exhaustion; other ranks may already wait in a collective,
// so under MPI the job is aborted rather than left hanging.
int runGuarded(World &world, const Options &options, int64_t myRank,
               const std::string &launcher) {
  try {
    return run(world, options, myRank, launcher);
  } catch (const initrt::OutOfMemory &e) {
    std::fprintf(stderr, "%s: error (rank %lld): out of memory: %s\n", programName.c_str(),
                 (long long)myRank, e.what());
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "%s: error (rank %lld): out of memory: use more ranks or a machine with "
                 "more memory\n", programName.c_str(), (long long)myRank);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: internal error (rank %lld): %s\n", programName.c_str(),
                 (long long)myRank, e.what());
  }
  if (world.size() > 1)
    world.abortJob(kExitFailure);
  return kExitFailure;
}

} // namespace initrt::init

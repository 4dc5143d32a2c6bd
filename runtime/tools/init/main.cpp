// prog/init: computes this rank's shards of every parameter and writes them to a checkpoint
// directory. One process per rank under mpirun, srun or torchrun, or one rank alone with --rank.
// This file: the command line, and which World runs the job (job.h): this process alone, or one
// rank of a launcher's job. Every rank of a job checks its arguments before any may stop.
#include "job.h"
#include "launcher.h"
#if INITRT_WITH_MPI
#include "mpi_world.h"
#endif
#include "options.h"
#include "rendezvous_world.h"
#include "world.h"

#include "checkpoint/checkpoint.h"
#include "initrt/base/direct_io.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <climits>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>

namespace initrt::init {

std::string programName = "init";

} // namespace initrt::init

using namespace initrt::init;

int main(int argc, char **argv) {
  std::string invoked = argc > 0 ? argv[0] : "init";
  programName = invoked.substr(invoked.rfind('/') + 1);

  Options options;
  CLI::App app{
      "Computes a compiled model's parameters and writes them as a sharded checkpoint.\n\n"
      "Run one process per device of the program's mesh, e.g. `mpirun -np 8 prog/init --out ckpt`\n"
      "(or `srun -n 8`, `torchrun --nproc-per-node 8 --no-python`, or any launcher that sets\n"
      "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT: the ranks then meet over TCP at rank 0;\n"
      "INITC_RENDEZVOUS=HOST:PORT and INITC_RENDEZVOUS_TIMEOUT=SECONDS change where and how\n"
      "long). Each rank computes only its own shards, with the same bits on any mesh. A mesh\n"
      "of one device runs without mpirun. `--rank K` computes rank K alone, without MPI, and\n"
      "writes only its part (to regenerate a lost or corrupt shard; in a complete hf checkpoint its\n"
      "boxes are rewritten in place). A rank whose part is already\n"
      "complete and verified is skipped, so a rerun resumes; one computed from another version\n"
      "of a base checkpoint (init.load) than the one there now is computed again.\n\n"
      "The program (program.json + kernels.so) is read from the directory holding this\n"
      "executable unless --program is given.",
      programName};
  // A value that is empty, or that is the next option (`--out --discard` takes "--discard" as
  // the directory), is a mistake: the directory would be made under that name.
  const CLI::Validator givenValue(
      [](std::string &value) {
        if (value.empty())
          return std::string("must not be empty");
        if (value[0] == '-')
          return "'" + value + "' looks like an option, not a value: give the value first (./" +
                 value + " for a directory of that name)";
        return std::string();
      },
      "", "given");
  app.add_option("--out", options.out, "Checkpoint directory to write (created if missing)")
      ->type_name("DIR")
      ->check(givenValue);
  std::string layouts;
  for (const std::string &name : initrt::checkpointLayoutNames())
    layouts += (layouts.empty() ? "" : "|") + name;
  app.add_option("--layout", options.layout,
                 "How --out is laid out (" + layouts + "; default " + options.layout +
                     "): see the README's \"Checkpoint layouts\"")
      ->type_name("LAYOUT")
      ->check(CLI::Validator(
          [layouts](std::string &name) {
            return initrt::checkpointLayout(name)
                       ? std::string()
                       : "'" + name + "' is not a layout: choose one of " + layouts;
          },
          "", "layout"));
  std::string maxShardSize = "5GB";
  app.add_option("--max-shard-size", maxShardSize,
                 "With --layout hf: the most each model-0000k-of-0000n.safetensors file holds, "
                 "as save_pretrained's max_shard_size (default 5GB; 500MB, 2GiB, bytes)")
      ->type_name("SIZE")
      ->check(CLI::Validator(
          [&options](std::string &text) {
            return initrt::parseShardSize(text, options.maxShardBytes)
                       ? std::string()
                       : "must be a size such as 5GB, 500MB, 2GiB or a number "
                         "of bytes, got '" + text + "'";
          },
          "", "SIZE"));
  std::string hfExperts = "per-expert";
  app.add_option("--hf-experts", hfExperts,
                 "With --layout hf: how an MoE model's experts are written: per-expert, the "
                 "original format save_pretrained writes by default, what from_pretrained "
                 "and vLLM read (the default, where the model type's original names are "
                 "known), or stacked, as transformers 5 holds them (the default otherwise)")
      ->type_name("stacked|per-expert")
      ->check(CLI::Validator(
          [&options](std::string &text) {
            options.hfExpertsGiven = true;
            return initrt::parseHfExperts(text, options.hfExperts)
                       ? std::string()
                       : "must be stacked or per-expert, got '" + text + "'";
          },
          "", "stacked|per-expert"));
  app.add_option("--rank", options.rank,
                 "Compute only rank K, without MPI, and write only its part: its file in the "
                 "ranks and dcp layouts (index.json left alone); in a complete hf checkpoint, "
                 "its boxes rewritten in place (a repair: the bytes are the job's)")
      ->type_name("K")
      ->check(CLI::Validator(
          [](std::string &text) {
            // Decimal digits only: an empty $SLURM_PROCID must not read as rank 0.
            int64_t rank;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), rank);
            if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
                end != text.data() + text.size())
              return "must be a rank number (0, 1, ...), got '" + text + "'";
            if (ec != std::errc())
              return text + " is larger than any mesh";
            return std::string();
          },
          "", "non-negative"));
  app.add_option("--threads", options.threads,
                 "Worker threads per rank (default: one per CPU the rank may run on, as "
                 "mpirun binds it; ranks of one host allowed on the same CPUs divide them)")
      ->type_name("N")
      ->check(CLI::Range(1, 65536));
  app.add_option("--target-cpu", options.targetCpu,
                 "Run the kernels compiled for this CPU (one of program.json's "
                 "kernels.variants; default: the first this CPU supports, or $INITRT_TARGET_CPU). "
                 "The bits are the same for every variant")
      ->type_name("CPU")
      ->check(CLI::Validator(
          [](std::string &value) {
            return value.size() > 1 && value[0] == '-'
                       ? "'" + value + "' looks like an option, not a value: give the value first"
                       : std::string();
          },
          "", "CPU"));
  app.add_option("--program", options.programDir,
                 "Program directory (default: the directory of this executable)")
      ->type_name("DIR")
      ->check(givenValue);
  app.add_flag("--overwrite", options.overwrite,
               "Replace a checkpoint of another program found in --out");
  app.add_flag("--discard", options.discard,
               "Compute every shard as writing does, then drop it: no file, no --out (for timing)");
  app.add_flag("--quiet", options.quiet, "No progress bar and no summary");
  // What ends the run before it starts: --help (code 0) or a usage error, and what it prints.
  bool stop = false;
  int code = kExitOk;
  std::ostringstream help, usage;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    stop = true;
    code = app.exit(e, help, usage) == 0 ? kExitOk : kExitUsage;
  }
  if (std::string why; !stop && !initrt::checkDirectIoSetting(why)) {
    stop = true;
    code = kExitUsage;
    usage << why << "\n";
  }
  if (!stop && options.out.empty() && !options.discard) {
    stop = true;
    code = kExitUsage;
    usage << "--out DIR is required (or --discard to write nothing); see --help\n";
  }
  if (!stop && !options.out.empty() && options.discard) { // which was meant: writing or not?
    stop = true;
    code = kExitUsage;
    usage << "--discard writes nothing, so --out " << options.out
          << " would stay empty: drop --discard to write the checkpoint, or --out to time the "
             "run\n";
  }
  auto rankUnderLauncher = [&](long processes) {
    stop = true;
    code = kExitUsage;
    usage << "--rank " << options.rank << " computes one rank alone, but the launcher started "
          << processes << " processes, which would all write rank " << options.rank
          << "'s file: run `" << invoked << " --rank " << options.rank
          << " --out DIR` without mpirun (or with -np 1), or drop --rank to run the whole job\n";
  };
  if (!stop && options.rank >= 0 && launcherSize() > 1)
    rankUnderLauncher(launcherSize());
  // Help goes to stdout; errors, CLI11's too, get the program's prefix on stderr.
  auto explain = [&](const std::string &where) {
    std::fputs(help.str().c_str(), stdout);
    std::string text = usage.str();
    if (!text.empty())
      std::fprintf(stderr, "%s: error%s: %s", programName.c_str(), where.c_str(), text.c_str());
  };

  // Alone: no launcher, or a launcher of one process (--rank K under srun -n1 needs no MPI).
  const Launch launch = detectLaunch();
  if (launch.kind == Launch::Alone || (launcherSize() == 1 && options.rank >= 0)) {
    if (stop) {
      explain("");
      return code;
    }
    // No mpirun: fine for a mesh of one device, which `run` checks like any world size.
    SoloWorld world;
    return runGuarded(world, options, options.rank >= 0 ? options.rank : 0, /*launcher=*/"");
  }
  // Under a launcher every rank joins the job before any may stop: one that ended alone would
  // leave the others waiting to meet it. When any stops, all do, and the lowest of those with an
  // error (else the lowest stopping) explains; its rank is named unless it is rank 0, whose
  // arguments are the job's. Help on some ranks only is an error too.
  std::unique_ptr<World> joined;
  if (launch.kind == Launch::Mpi) {
#if INITRT_WITH_MPI
    joined.reset(new MpiWorld());
#else
    std::fprintf(stderr,
                 "%s: error: %s started this process, but this prog/init was built without MPI "
                 "(INITC_WITH_MPI=OFF): start the ranks with RANK and WORLD_SIZE set (torchrun, "
                 "srun without --mpi), or run each rank alone with --rank K\n",
                 programName.c_str(), launch.launcher.c_str());
    return kExitUsage;
#endif
  } else {
    std::string why = launch.error;
    int failed = kExitUsage;
    if (launch.canJoin)
      joined = RendezvousWorld::join(launch, why, failed);
    if (!joined) {
      // A rank outside the job's size is no rank to name.
      std::string where = launch.self.rank < launch.self.size
                              ? " (rank " + std::to_string(launch.self.rank) + ")"
                              : "";
      if (!why.empty())
        std::fprintf(stderr, "%s: error%s: %s\n", programName.c_str(), where.c_str(),
                     why.c_str());
      return failed;
    }
  }
  World &world = *joined;
  if (!stop && !launch.error.empty()) { // the launchers' variables disagree
    stop = true;
    code = kExitUsage;
    usage << launch.error << "\n";
  }
  for (const LauncherView &view : launch.mustAgree) {
    if (stop || (view.rank == world.rank() && view.size == world.size()))
      continue;
    stop = true;
    code = kExitUsage;
    usage << "two launchers disagree: MPI (" << launch.launcher << ") started this process as rank "
          << world.rank() << " of " << world.size() << ", but " << view.variables
          << " say rank " << view.rank << " of " << view.size << ": unset "
          << view.variables.substr(0, view.variables.find('/')) << " and "
          << view.variables.substr(view.variables.find('/') + 1)
          << " (left from another launcher?), or start the job with one launcher\n";
  }
  if (!stop && options.rank >= 0 && world.size() > 1) // the launcher did not say its size
    rankUnderLauncher(world.size());
  if (world.minInt(stop ? world.rank() : INT_MAX) != INT_MAX) {
    bool allStop = world.minInt(stop ? 1 : 0) == 1;
    if (stop && code == kExitOk && !allStop) {
      code = kExitUsage;
      help.str("");
      usage << "this rank was given --help and the others were not: start every rank of the "
               "job with the same arguments\n";
    }
    int failing = world.minInt(code != kExitOk ? world.rank() : INT_MAX);
    int speaker = failing != INT_MAX ? failing : world.minInt(stop ? world.rank() : INT_MAX);
    if (world.rank() == speaker)
      explain(speaker == 0 ? "" : " (rank " + std::to_string(speaker) + ")");
    return world.maxInt(code);
  }
  if (options.rank >= 0) { // --rank K under a launcher of one process that did not say so
    SoloWorld solo;
    return runGuarded(solo, options, options.rank, /*launcher=*/"");
  }
  return runGuarded(world, options, world.rank(), launch.launcher);
}

//===- initc_checkpoint.cpp - assemble and verify without the compiler ----===//
//
// initc-checkpoint assemble CKPT -o FILE|DIR [--max-shard-size SIZE] [--hf-experts E] |
// verify CKPT [--threads N]:
// the runtime's own tool, so that a cluster that builds only the runtime can check the
// checkpoints it writes. The commands' options are defined here only: `initc assemble|verify`
// run this tool with every argument they were given, --help included, and argv[0] = "initc": its
// messages and usage start with the basename of argv[0], so they read as initc's.
//
//===----------------------------------------------------------------------===//
#include "checkpoint/assemble.h"
#include "checkpoint/verify.h"
#include "initrt/base/atomic_file.h"
#include "initrt/base/checkpoint_summaries.h"
#include "initrt/base/direct_io.h"
#include "initrt/base/report.h"
#include "initrt/base/temporaries.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

std::string programName = "initc-checkpoint";

const char *const kAssembleFooter =
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

int fail(const std::string &message) {
  std::cerr << programName << ": error: " << message << "\n";
  return 1;
}

// What assemble and verify show as they read a whole checkpoint: progress (a bar on a
// terminal), then the bytes and the time.
class ReadProgress {
public:
  initrt::ProgressFn callback() {
    return [this](uint64_t done, uint64_t total) {
      bytes = total;
      bar.update(done, total);
    };
  }
  void finish() { bar.finish(); }
  std::string took() const { // "4.10 GiB in 0.89 s, 4.63 GiB/s"
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char text[96];
    std::snprintf(text, sizeof(text), "%s in %.2f s, %s/s",
                  initrt::formatBytes(double(bytes)).c_str(), seconds,
                  initrt::formatBytes(seconds > 0 ? double(bytes) / seconds : 0).c_str());
    return text;
  }

private:
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  initrt::ProgressBar bar;
  uint64_t bytes = 0;
};

int runAssemble(const std::string &ckptDir, const std::string &out, const std::string &maxShard,
                const std::string &hfExperts) {
  std::string error;
  if (!initrt::checkDirectIoSetting(error))
    return fail(error);
  initrt::AssembleOptions options;
  const bool directory = initrt::assembleOutputIsDirectory(out);
  if (!hfExperts.empty() && !directory)
    return fail("--hf-experts is how a directory output writes an MoE model's experts; -o " +
                out + " is one file: name a directory (not ending in .safetensors)");
  options.hfExpertsGiven = !hfExperts.empty();
  if (!hfExperts.empty() && !initrt::parseHfExperts(hfExperts, options.hfExperts))
    return fail("--hf-experts must be stacked or per-expert, got '" + hfExperts + "'");
  if (!maxShard.empty() && !directory)
    return fail("--max-shard-size splits a directory output; -o " + out +
                " is one file: name a directory (not ending in .safetensors) for the hf layout");
  if (!maxShard.empty() && !initrt::parseShardSize(maxShard, options.maxShardBytes))
    return fail("--max-shard-size " + maxShard +
                " is not a size: give bytes, or a number with KB, MB, GB, KiB, MiB or GiB "
                "(\"5GB\", save_pretrained's default)");
  // A killed assemble leaves a temporary as large as the model: the next one removes it (in a
  // directory output, the directory's are removed as it is written).
  if (!directory)
    initrt::removeAbandonedTemporariesOf(out);
  ReadProgress progress;
  bool ok = initrt::assembleCheckpoint(ckptDir, out, error, progress.callback(), options);
  progress.finish();
  if (!ok)
    return fail(error);
  std::cout << "wrote " << out << " (" << progress.took() << ")\n";
  return 0;
}

int runVerify(const std::string &ckptDir, int threads) {
  std::string error;
  std::vector<std::string> problems;
  ReadProgress progress;
  bool ok = initrt::verifyCheckpoint(ckptDir, problems, error, progress.callback(), threads);
  progress.finish();
  if (!error.empty())
    return fail(error);
  for (auto &p : problems)
    std::cerr << programName << ": " << p << "\n";
  if (!ok) {
    std::cerr << programName << ": " << ckptDir << ": " << problems.size() << " problem"
              << (problems.size() == 1 ? "" : "s") << " found\n";
    return 1;
  }
  if (initrt::holdsDcpFiles(ckptDir))
    std::cout << ckptDir << ": every file matches its checksums, and together they hold every "
              << "element once (" << progress.took() << ")\n";
  else if (initrt::holdsHfRecord(ckptDir))
    std::cout << ckptDir << ": every file matches its record and every slice its checksum ("
              << progress.took() << ")\n";
  else
    std::cout << ckptDir << ": every shard matches its checksum and the index ("
              << progress.took() << ")\n";
  return 0;
}

int runTool(int argc, char **argv) {
  CLI::App app{programName + ": joins and checks the checkpoints prog/init writes.\n\n"
               "  " + programName + " assemble ckpt/ -o model.safetensors\n"
               "  " + programName + " assemble ckpt/ -o hf-model/ [--max-shard-size 5GB]\n"
               "  " + programName + " verify ckpt/\n"};
  app.require_subcommand(1);

  // A value that is empty, or that looks like the next option (`-o --threads` takes "--threads"
  // as the file to write), is a mistake: a file would be made under that name.
  const CLI::Validator nonEmpty(
      [](std::string &value) {
        if (value.empty())
          return std::string("must not be empty");
        if (value.size() > 1 && value[0] == '-')
          return "'" + value + "' looks like an option, not a value: give the value first (./" +
                 value + " for a file of that name)";
        return std::string();
      },
      "");

  std::string ckptDir, assembleOut, maxShardSize, hfExperts;
  auto *assemble = app.add_subcommand("assemble", initrt::kAssembleSummary);
  assemble->footer(kAssembleFooter);
  assemble->add_option("checkpoint", ckptDir, "checkpoint directory written by prog/init")
      ->required();
  assemble
      ->add_option("--max-shard-size", maxShardSize,
                   "largest file of a directory output, as save_pretrained's max_shard_size "
                   "(default 5GB; KB MB GB are 10^3 10^6 10^9, KiB MiB GiB 2^10 2^20 2^30)")
      ->check(nonEmpty);
  assemble
      ->add_option("--hf-experts", hfExperts,
                   "how a directory output writes an MoE model's experts: per-expert, the "
                   "original format save_pretrained writes by default (the default, where the "
                   "model type's original names are known), or stacked, as transformers 5 "
                   "holds them (the default otherwise)")
      ->type_name("stacked|per-expert")
      ->check(nonEmpty);
  assemble
      ->add_option("-o,--output", assembleOut, "the safetensors file, or the directory, to write")
      ->required()
      ->check(nonEmpty)
      ->check(CLI::Validator(
          [](std::string &value) {
            return value == "-" ? std::string("standard output is not written: name a file (a "
                                              "named pipe is one)")
                                : std::string();
          },
          ""));

  auto *verify = app.add_subcommand("verify", initrt::kVerifySummary);
  verify->add_option("checkpoint", ckptDir, "checkpoint directory")->required();
  int verifyThreads = 0;
  verify
      ->add_option("--threads", verifyThreads,
                   "files read at a time (default: one per CPU " + programName + " may run on)")
      ->check(CLI::Range(1, 65536));

  app.failure_message([](const CLI::App *, const CLI::Error &e) {
    return programName + ": error: " + std::string(e.what()) + " (see " + programName +
           " --help)\n";
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  initrt::ignoreFileSizeSignal(); // past `ulimit -f`, an error message rather than a kill
  if (*assemble)
    return runAssemble(ckptDir, assembleOut, maxShardSize, hfExperts);
  if (*verify)
    return runVerify(ckptDir, verifyThreads);
  return 2;
}

} // namespace

// Output lost to a full disk or a closed pipe is an error, not a success.
int main(int argc, char **argv) {
  if (argc > 0 && argv[0][0]) {
    const char *slash = std::strrchr(argv[0], '/');
    programName = slash ? slash + 1 : argv[0];
  }
  int code = runTool(argc, argv);
  std::cout.flush();
  bool lost = std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout;
  // errno is the failing write's (stdout is written last), or none.
  if (lost && code == 0) {
    std::cerr << programName << ": error: cannot write to stdout: "
              << (errno ? std::strerror(errno) : "write error") << "\n";
    code = 1;
  }
  return code;
}

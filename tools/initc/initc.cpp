//===- initc.cpp - the initc command-line compiler ------------------------===//
//
// initc import hf | inspect | compile | assemble | verify: the command line and its usage errors
// here, each subcommand in its own file (subcommands.h), over the compiler libraries (import,
// pipeline, target, analysis) and the runtime's checkpoint library.
//
//===----------------------------------------------------------------------===//
#include "subcommands.h"

#include "initc/Import/HFConfig.h"
#include "initc/Pipeline/Pipeline.h"
#include "initc/Target/LLVMCPU/TargetArchitecture.h"
#include "initrt/base/checkpoint_summaries.h"
#include "initrt/base/temporaries.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

using namespace initc::driver;

static int runInitc(int argc, char **argv) {
  CLI::App app{"initc: compiles a model's initialization into per-rank programs that compute\n"
               "exactly each rank's shards, bitwise the same on any mesh.\n\n"
               "  initc import hf config.json -o model.mlir\n"
               "  initc inspect model.mlir --mesh dp=2,tp=2 --shard fsdp+tp\n"
               "  initc compile model.mlir --mesh dp=2,tp=2 --shard fsdp+tp -o prog/\n"
               "  mpirun -np 4 prog/init --out ckpt/\n"
               "  initc assemble ckpt/ -o model.safetensors   (or -o hf-model/)\n"
               "  initc verify ckpt/\n"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "initc 0.1 (LLVM/MLIR 19)");

  ImportArgs importArgs;
  auto *importCmd = app.add_subcommand("import", "Import a model description into init IR");
  importCmd->require_subcommand(1);
  auto *hf = importCmd->add_subcommand("hf", "Import a HuggingFace config.json (" +
                                                 [] {
                                                   std::string s;
                                                   for (auto t : initc::import::supportedModelTypes())
                                                     s += (s.empty() ? "" : ", ") + t.str();
                                                   return s;
                                                 }() + ")");
  // Usage errors (exit 2), caught before anything runs.
  // A value that is empty, or that looks like the next option (`-o --mesh` takes "--mesh" as
  // the file to write), is a mistake: a file would be made under that name. ('-' alone is
  // standard input or output.)
  auto givenValue = [](bool path) {
    return CLI::Validator(
        [path](std::string &value) {
          if (value.empty())
            return std::string("must not be empty");
          if (value.size() > 1 && value[0] == '-')
            return "'" + value + "' looks like an option, not a value: give the value first" +
                   (path ? " (./" + value + " for a file of that name)" : std::string());
          return std::string();
        },
        "");
  };
  const CLI::Validator nonEmpty = givenValue(/*path=*/true);
  const CLI::Validator nonEmptyWord = givenValue(/*path=*/false);
  const CLI::Validator seedValue(
      [](std::string &value) {
        uint64_t seed;
        return llvm::StringRef(value).getAsInteger(10, seed)
                   ? "'" + value + "' is not an integer from 0 to 18446744073709551615"
                   : std::string();
      },
      "UINT64");
  hf->add_option("config", importArgs.config, "config.json of the model (- for stdin)")->required();
  hf->add_option("-o,--output", importArgs.output, "output .mlir file ('-' for stdout)")
      ->check(nonEmpty);
  hf->add_option("--init-style", importArgs.initStyle,
                 "hf: transformers' _init_weights; torch: PyTorch's module defaults")
      ->check(CLI::IsMember({"hf", "torch"}))
      ->capture_default_str();
  hf->add_option("--dtype", importArgs.dtype, "dtype of the weights")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}))
      ->capture_default_str();
  hf->add_option("--seed", importArgs.seed, "the seed of every random value")
      ->check(seedValue)
      ->capture_default_str();
  hf->add_option("--load", importArgs.base,
                 "a base checkpoint (.safetensors, or a Hugging Face model.safetensors.index.json) "
                 "to fine-tune from: each parameter it has is read from it (init.load), each it "
                 "lacks is initialized. Its dtypes must match --dtype")
      ->check(nonEmpty);

  InspectArgs inspectArgs;
  auto *inspect = app.add_subcommand(
      "inspect", "List every parameter with its dtype, shape, sharding and bytes per rank");
  // The model and where it goes, as inspect and compile both take them.
  auto addModelOptions = [&](CLI::App *command, std::string &model, std::string &mesh,
                             std::string &shard) {
    command->add_option("model", model, "init IR (.mlir; - for stdin)")->required();
    command->add_option("--mesh", mesh, "mesh axes and sizes, e.g. dp=2,tp=2")->check(nonEmptyWord);
    command
        ->add_option("--shard", shard,
                     "preset (replicated, fsdp, tp, fsdp+tp; the trainers' layouts torchtitan, "
                     "megatron, maxtext) or a JSON rules file")
        ->check(nonEmpty);
  };
  addModelOptions(inspect, inspectArgs.model, inspectArgs.mesh, inspectArgs.shard);
  inspect->add_flag("--json", inspectArgs.json, "print JSON for scripts");

  CompileArgs compileArgs;
  auto *compile = app.add_subcommand(
      "compile", "Compile a model for a mesh into a program directory (kernels + rank table)");
  addModelOptions(compile, compileArgs.model, compileArgs.mesh, compileArgs.shard);
  compile
      ->add_option("-o,--output", compileArgs.output,
                   "program directory to write (with --emit: output file, '-' for stdout)")
      ->check(nonEmpty);
  compile->add_option("--emit", compileArgs.emit,
                      "print instead of building: mlir (after --stage), llvm (LLVM IR), asm")
      ->check(CLI::IsMember({"mlir", "llvm", "asm"}));
  std::string stages;
  for (auto s : initc::stageNames())
    stages += (stages.empty() ? "" : ", ") + s.str();
  auto *stageOption =
      compile->add_option("--stage", compileArgs.stage, "with --emit=mlir, the stage: " + stages)
          ->check(nonEmptyWord)
          ->capture_default_str();
  // A program for this machine by default; `--target-cpu` picks another architecture's CPUs.
  const initc::target::TargetArchitecture *host = initc::target::hostArchitecture();
  compileArgs.targetCpu =
      (host ? host : initc::target::targetArchitectures().front())->defaultCpus().str();
  auto *targetCpuOption =
      compile
          ->add_option("--target-cpu", compileArgs.targetCpu,
                       "CPUs the kernels are compiled for, best first, comma-separated, all of one "
                       "architecture: x86-64, x86-64-v2/v3/v4, native, znver4, ...; aarch64, "
                       "neoverse-v2, ... kernels.so holds code for each and "
                       "prog/init runs the first the CPU it runs on supports (bits never depend "
                       "on it). CPU+FEATURE adds an extension (x86-64-v4+avx512bf16: bf16 "
                       "samples by a conversion instruction; left out when no kernel uses it). "
                       "CPU:GROUPSxBLOCKS sets a CPU's vector loop, for measuring: "
                       "GROUPS groups (1-4) of BLOCKS Philox blocks (8 or 16) per iteration "
                       "(default 3x16 with AVX-512, 2x8 otherwise)")
          ->check(nonEmptyWord)
          ->capture_default_str();
  compile->add_option("--linker", compileArgs.linker, "C compiler used to link kernels.so")
      ->check(nonEmpty);
  compile
      ->add_option("--runtime", compileArgs.runtime,
                   "prog/init to put in the program (default: the one beside initc); for "
                   "kernels of another architecture, that architecture's build of it")
      ->check(nonEmpty);
  compile->add_flag("--timing", compileArgs.timing,
                    "print the time of each stage's passes and of native code generation");

  // assemble and verify are initc-checkpoint's (assemble_verify.cpp): listed here, parsed there.
  app.add_subcommand("assemble", initrt::kAssembleSummary);
  app.add_subcommand("verify", initrt::kVerifySummary);

  // CLI11 answers an unknown subcommand with "A subcommand is required": name it instead.
  auto unknownSubcommand = [&](CLI::App &parent, int index, const char *what) {
    if (index >= argc || argv[index][0] == '-')
      return false;
    std::string names;
    for (CLI::App *sub : parent.get_subcommands({}))
      names += (names.empty() ? "" : ", ") + sub->get_name();
    for (CLI::App *sub : parent.get_subcommands({}))
      if (sub->get_name() == argv[index])
        return false;
    llvm::errs() << "initc: error: unknown " << what << " '" << argv[index] << "': use one of "
                 << names << " (see initc --help)\n";
    return true;
  };
  if (argc > 1 && isCheckpointCommand(argv[1]))
    return runCheckpointCommand(argc - 1, argv + 1);
  if (unknownSubcommand(app, 1, "subcommand") ||
      (argc > 1 && llvm::StringRef(argv[1]) == "import" &&
       unknownSubcommand(*importCmd, 2, "kind of import")))
    return 2;
  // Usage errors look like every other error of initc's.
  app.failure_message([](const CLI::App *, const CLI::Error &e) {
    return "initc: error: " + std::string(e.what()) + " (see initc --help)\n";
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  initrt::ignoreFileSizeSignal(); // past `ulimit -f`, an error message rather than a kill
  if (*hf)
    return runImport(importArgs);
  if (*inspect)
    return runInspect(inspectArgs);
  if (*compile) {
    compileArgs.stageGiven = stageOption->count() > 0;
    compileArgs.targetCpuGiven = targetCpuOption->count() > 0;
    return runCompile(compileArgs);
  }
  return 2;
}

// Output lost to a full disk or a closed pipe is an error, not a success: and llvm::outs()
// would otherwise end the process with an LLVM fatal error when destroyed.
int main(int argc, char **argv) {
  int code = runInitc(argc, argv);
  std::cout.flush();
  llvm::outs().flush();
  bool lost = std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout;
  // errno is the failing write's (stdout is written last), or none.
  std::string reason = !lost ? "" : errno ? std::strerror(errno) : "write error";
  if (llvm::outs().has_error()) {
    lost = true;
    reason = llvm::outs().error().message();
    llvm::outs().clear_error();
  }
  if (lost && code == 0) {
    llvm::errs() << "initc: error: cannot write to stdout: " << reason << "\n";
    code = 1;
  }
  return code;
}

//===- assemble_verify.cpp - initc assemble, initc verify -----------------===//
//
// The two subcommands that read a whole checkpoint, over the runtime's checkpoint library.
//
//===----------------------------------------------------------------------===//
#include "subcommands.h"
#include "session.h"

#include "initrt/checkpoint.h"
#include "initrt/direct_io.h"
#include "initrt/report.h"
#include "initrt/safetensors.h"

#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <vector>

namespace initc::driver {

namespace {

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

} // namespace

int runAssemble(const std::string &ckptDir, const std::string &out) {
  std::string error;
  if (!initrt::checkDirectIoSetting(error))
    return fail(error);
  // A killed assemble leaves a temporary as large as the model: the next one removes it.
  initrt::removeAbandonedTemporariesOf(out);
  ReadProgress progress;
  bool ok = initrt::assembleCheckpoint(ckptDir, out, error, progress.callback());
  progress.finish();
  if (!ok)
    return fail(error);
  llvm::outs() << "wrote " << out << " (" << progress.took() << ")\n";
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
    llvm::errs() << "initc: " << p << "\n";
  if (!ok) {
    llvm::errs() << "initc: " << ckptDir << ": " << problems.size() << " problem"
                 << (problems.size() == 1 ? "" : "s") << " found\n";
    return 1;
  }
  llvm::outs() << ckptDir << ": every shard matches its checksum and the index (" << progress.took()
               << ")\n";
  return 0;
}

} // namespace initc::driver

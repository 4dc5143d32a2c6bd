// initc-hf-write-calls PROG [--rank K] [--max-shard-size SIZE] [--hf-experts E]: the write
// system calls prog/init's hf writer issues for a rank, per GiB it writes (and as many if every
// box took pwrite alone), counted from the plan and writeBoxes alone (no
// value computed), for rank K and for the rank that needs the most. Pieces are kPieceBytes, as
// the executor hands them over. Also the size of the checkpoint's record: initc-checkpoint.json
// and every rank's sums file (ir-spec/checkpoint.md, "Sums files").
#include "checkpoint/hf_files.h"
#include "initrt/base/costs.h"
#include "initrt/base/hf_plan.h"
#include "initrt/base/program_io.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace initrt;

static uint64_t rankBytes(const Program &program, int64_t rank) {
  uint64_t bytes = 0;
  for (const ParamBox &box : writeBoxes(program, rank))
    bytes += uint64_t(box.box.numElements()) * uint64_t(dtypeBytes(program.params[box.param].dtype));
  return bytes;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PROG [--rank K] [--max-shard-size SIZE] [--hf-experts E]\n",
                 argv[0]);
    return 2;
  }
  int64_t rank = 0;
  uint64_t maxShard = kDefaultMaxShardBytes;
  HfExperts experts = HfExperts::PerExpert; // prog/init's default
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rank"))
      rank = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--max-shard-size") && !parseShardSize(argv[i + 1], maxShard)) {
      std::fprintf(stderr, "%s: bad --max-shard-size %s\n", argv[0], argv[i + 1]);
      return 2;
    } else if (!std::strcmp(argv[i], "--hf-experts") && !parseHfExperts(argv[i + 1], experts)) {
      std::fprintf(stderr, "%s: bad --hf-experts %s\n", argv[0], argv[i + 1]);
      return 2;
    }
  }
  Program program;
  HfPlan plan;
  std::string error;
  if (!readProgram(argv[1], program, error) ||
      !planHfCheckpoint(program, maxShard, plan, error, experts)) {
    std::fprintf(stderr, "%s: %s\n", argv[0], error.c_str());
    return 1;
  }
  auto line = [&](const char *what, int64_t r) {
    const uint64_t bytes = rankBytes(program, r);
    const double gib = double(bytes) / double(1ull << 30);
    const uint64_t calls = hf::countWriteCalls(program, plan, r, kPieceBytes);
    const uint64_t pwrites = hf::countWriteCalls(program, plan, r, kPieceBytes, false);
    std::printf("%-14s rank %6lld: %9.3f MiB; %8llu calls (pwrite, mmap, munmap), %9.0f per GiB; "
                "pwrite alone: %9llu, %10.0f per GiB\n",
                what, (long long)r, double(bytes) / (1 << 20), (unsigned long long)calls,
                gib > 0 ? double(calls) / gib : 0.0, (unsigned long long)pwrites,
                gib > 0 ? double(pwrites) / gib : 0.0);
  };
  line("requested", rank);
  // The rank with the most calls per byte (every rank's boxes are known from the program).
  int64_t worst = 0;
  double worstRate = -1;
  for (int64_t r = 0; r < program.mesh.size(); ++r) {
    const uint64_t bytes = rankBytes(program, r);
    if (bytes == 0)
      continue;
    const double rate = double(hf::countWriteCalls(program, plan, r, kPieceBytes)) / double(bytes);
    if (rate > worstRate) {
      worstRate = rate;
      worst = r;
    }
  }
  line("most per GiB", worst);
  std::printf("files: %zu, total %.3f GB\n", plan.files.size(), double(plan.totalSize) / 1e9);
  // The record as the writer makes it; the sums files by their size (a checksum per box).
  const uint64_t recordBytes = hf::recordJson(program, plan, maxShard).size();
  uint64_t sumsBytes = 0, largest = 0, boxes = 0;
  for (int64_t r = 0; r < program.mesh.size(); ++r) {
    const size_t count = writeBoxes(program, r).size();
    const uint64_t bytes =
        hf::sumsFileBytes(program.programId, r, program.mesh.size(),
                          std::vector<uint64_t>(count, 0)).size();
    sumsBytes += bytes;
    largest = std::max(largest, bytes);
    boxes += count;
  }
  std::printf("record: initc-checkpoint.json %llu bytes; %lld sums files %llu bytes in all "
              "(largest %llu) for %llu boxes\n",
              (unsigned long long)recordBytes, (long long)program.mesh.size(),
              (unsigned long long)sumsBytes, (unsigned long long)largest,
              (unsigned long long)boxes);
  return 0;
}

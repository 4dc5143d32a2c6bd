// What the kernels are compiled for: CPU, features, optimization, linker, threads.
//
// Read by every step of Target/LLVMCPU (ir-spec/lowering.md).
#pragma once

#include <string>

namespace initc::target {

struct TargetOptions {
  // Kernels carrying `initc.target_cpu` (init-partition's targets option) are compiled for that
  // CPU; the others, and the target machine, for `cpu`.
  std::string cpu = "x86-64-v3";   // portable default with AVX2; "native" resolves to the host
  std::string features;            // extra "+feature,-feature" list, optional
  unsigned optLevel = 3;           // 0..3
  std::string linker;              // empty: find `cc` then `c++` then `gcc` on PATH
  unsigned threads = 0;            // optimization/codegen threads; 0: all hardware threads
};

} // namespace initc::target

// Tuning: measured plan choices, one per loop and GPU, in a JSON file that `--tuning` reads and
// tests/gpu/tune.py writes from a benchmark run (docs/tuning.md).
#pragma once
#include "tilepipe/Plan.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include <string>
#include <vector>

namespace tilepipe {

/// One loop's measured choice.
struct TuningEntry {
  std::string File;        ///< the loop's file, as tilepipe named it; matched by its last components
  std::string Kernel;      ///< the function that holds the loop
  unsigned Line = 0;       ///< of the loop keyword
  std::string Fingerprint; ///< loopFingerprint of the loop's text when it was measured
  std::string Gpu;         ///< the GPU's name, as the benchmark recorded it
  std::string Arch;        ///< the compute capability it was measured on, as --gpu-arch says it: sm_90
  PlanChoice Choice;
  double Speedup = 1;      ///< the chosen plan's measured speedup over the original (1 for keep)
};

/// A fingerprint of a loop's text (the bytes from the loop keyword to the end of its body): 16 hex
/// digits of xxh3. An entry whose fingerprint differs no longer describes the loop.
std::string loopFingerprint(llvm::StringRef LoopText);

/// Reads a tuning file: {"tool": "tilepipe-tuning", "version": 1, "entries": [...]}. Errors name
/// the file and the entry.
llvm::Expected<std::vector<TuningEntry>> readTuningFile(llvm::StringRef Path);
llvm::Expected<std::vector<TuningEntry>> parseTuning(llvm::StringRef Text, llvm::StringRef Name);
llvm::json::Value tuningJson(llvm::ArrayRef<TuningEntry> Entries);

/// The entry for the loop at File:Line in Kernel, measured for Arch, or null. File matches where
/// one path ends with the other's components (so that entries written from one folder apply to the
/// same file named from another).
const TuningEntry *findTuning(llvm::ArrayRef<TuningEntry> Entries, llvm::StringRef File,
                              llvm::StringRef Kernel, unsigned Line, llvm::StringRef Arch);

} // namespace tilepipe

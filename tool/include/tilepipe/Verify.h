// Verify: a self-contained bundle that builds the original, the rewritten and the compute-only
// variants of a file with nvcc, runs them on the spec's cases, and compares their outputs.
#pragma once
#include "tilepipe/Result.h"
#include "tilepipe/Spec.h"
#include "llvm/Support/Error.h"

namespace tilepipe {

struct VerifyOptions {
  double Tolerance = 0;   ///< 0: bitwise
  unsigned Runs = 3;      ///< runs of every case and variant
  bool Sanitize = false;  ///< also run under compute-sanitizer
  std::string GpuArch = "sm_90";
};

/// The C++ that the driver template holds for the spec: one function per case and the case table.
/// Launchers: the launchers the rewrite wrote (FileResult::Launchers), each by its kernel's
/// qualified name; a kernel of none is called through `tilepipe_launch_<name>`.
std::string generateCases(const LaunchSpec &Spec,
                          llvm::ArrayRef<std::pair<std::string, std::string>> Launchers = {});

/// Writes the bundle: sources, driver.cu, build.sh, run.sh, and include/tilepipe/runtime.cuh.
llvm::Error writeBundle(const std::string &Dir, const FileResult &R, const LaunchSpec &Spec,
                        const VerifyOptions &Opts);

/// Runs Dir/run.sh and returns its exit status (77: built, but no GPU to run on).
int runBundle(const std::string &Dir, const VerifyOptions &Opts);

} // namespace tilepipe

// Verify: a self-contained bundle that builds the original, the rewritten and the compute-only
// variants of a file with nvcc, runs them on the spec's cases, and compares their outputs.
#pragma once
#include "tilepipe/Result.h"
#include "tilepipe/Spec.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/Support/Error.h"
#include <string>
#include <utility>
#include <vector>

namespace tilepipe {

struct VerifyOptions {
  double Tolerance = 0;   ///< 0: bitwise
  unsigned Runs = 3;      ///< runs of every case and variant
  bool Sanitize = false;  ///< also run under compute-sanitizer
  std::string GpuArch = "sm_90";
  /// What the bundle's build takes from the file's compile command (commandFlags).
  struct Flags {
    std::vector<std::string> Macros; ///< `-DX=1`, `-UY`, as given
    /// Include folders, in order, with their option (`-I`, `-iquote`, `-isystem`, `-idirafter`),
    /// absolute: the bundle's build finds the user's among the copies it carries.
    std::vector<std::pair<std::string, std::string>> IncludeDirs;
    std::vector<std::string> ForcedIncludes; ///< `-include` files, absolute
  } Command;
  /// The spec's `sources:`, real paths, and the user's headers they include (addSpecSources).
  std::vector<std::string> ExtraSources, ExtraUserFiles;
  std::vector<std::string> Link; ///< the spec's `link:`
};

/// The macros, include folders and forced includes of a compile command (made absolute against
/// Directory where relative), in the spellings of Clang and nvcc (`-DX`, `-D X`, `-I dir`, ...).
VerifyOptions::Flags commandFlags(llvm::ArrayRef<std::string> CommandLine, llvm::StringRef Directory);

/// The C++ that the driver template holds for the spec: one function per case and the case table.
/// Launchers: the launchers the rewrite wrote (FileResult::Launchers), each by its kernel's
/// qualified name; a kernel of none is called through `tilepipe_launch_<name>`.
std::string generateCases(const LaunchSpec &Spec,
                          llvm::ArrayRef<std::pair<std::string, std::string>> Launchers = {});

/// Writes the bundle: sources, driver.cu, build.sh, run.sh, and include/tilepipe/runtime.cuh; and
/// the user's files the source includes (FileResult::UserFiles) under src/ at their absolute
/// paths, and under rsrc/ with the rewritten headers, so that it builds where the sources are not.
llvm::Error writeBundle(const std::string &Dir, const FileResult &R, const LaunchSpec &Spec,
                        const VerifyOptions &Opts);

/// Adds the spec's `sources:` to Opts: each resolved against the spec's folder (an error where it is
/// not a file, or is the verified file), and the user's headers it includes, as nvcc's passes
/// preprocess it with its compile command in DB (else MainFile's) and the parse's ParseArgs; and
/// its `link:`. An error where a source cannot be preprocessed (a header it names is missing).
llvm::Error addSpecSources(const LaunchSpec &Spec, const clang::tooling::CompilationDatabase &DB,
                           const std::string &MainFile, const std::vector<std::string> &ParseArgs,
                           VerifyOptions &Opts);

/// Runs Dir/run.sh and returns its exit status (77: built, but no GPU to run on).
int runBundle(const std::string &Dir, const VerifyOptions &Opts);

} // namespace tilepipe

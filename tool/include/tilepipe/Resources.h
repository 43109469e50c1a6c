// Resources: what a kernel needs to launch (registers per thread, shared memory per block), and
// the checks that a rewrite still launches with every block size and every dynamic shared memory
// size the original launched with.
//
// A rewrite keeps more state per thread (the pipeline, the fetch cursor) and more shared memory
// per block (the stages). Neither may make a launch fail that worked before:
//  - registers: a kernel without __launch_bounds__ may be launched with up to as many threads as
//    its register count allows (64 registers for 1024 threads). ptxas reports the registers of
//    both builds; where the rewrite's allow fewer threads, the rewritten kernel gets
//    __launch_bounds__(the original's limit), which ptxas must honour;
//  - shared memory: a kernel that also uses dynamic shared memory (extern __shared__) was
//    launched with a dynamic size that fitted next to its static shared memory. More static
//    shared memory could push such a launch over the limit, and the size is not in the code.
#pragma once
#include "tilepipe/Check.h"
#include "clang/AST/ASTContext.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <map>
#include <set>
#include "tilepipe/ArchDependence.h"
#include "tilepipe/UsageCache.h"
#include <string>
#include <vector>

namespace tilepipe {

/// The launch facts of the kernels that run F, for two kinds of rewrite. Shared: why growing their
/// static shared memory could make a launch fail: one of them (or a function it calls) uses dynamic
/// shared memory or cannot be seen whole, or nvcc's host pass launches it where the parse cannot
/// see (a kernel named in host-only text, a launch a macro spells otherwise there). Registers: why a rewrite
/// that adds registers alone, and no shared memory (the register-staged prefetch), could: a kernel
/// that may run F unseen, code a kernel calls that is not in the file (whose registers the launch
/// check cannot count), or a program that asks the runtime about the kernel (cudaOccupancy*,
/// cudaFuncGetAttributes), whose answer the registers change. "" where none.
struct LaunchProblems {
  std::string Shared, Registers;
};
LaunchProblems launchProblems(clang::ASTContext &Ctx, const TranslationUnitIndex &Index,
                              const ArchDependence &Arch, const clang::FunctionDecl *F);

/// Why the shared memory of Kernel is not all its own static variables: it, or a function it calls,
/// uses dynamic shared memory or cannot be seen, or a function it calls declares static __shared__
/// variables (which the planning of its stages does not count). "" when none.
std::string calleeSharedProblem(clang::ASTContext &Ctx, const clang::FunctionDecl *Kernel);

/// Why kernel P (a pattern) must keep its parameter list: tensor copies add parameters, defaulted,
/// which only launches written `P<<<...>>>(...)` supply. Where the kernel's address is taken for
/// anything but the runtime's queries of its attributes (cudaLaunchKernel would pass an argument
/// array without them), or it has C linkage (a launch in another file could not know), "" is not
/// returned.
std::string kernelSignatureProblem(clang::ASTContext &Ctx, const TranslationUnitIndex &Index,
                                   const clang::FunctionDecl *P);

/// One kernel as ptxas compiled it for one architecture.
struct KernelUsage {
  std::string Name;                ///< demangled, without its parameter list
  std::vector<std::string> Params; ///< demangled parameter types
  std::string Arch;                ///< "sm_90"
  unsigned Registers = 0;
  uint64_t SharedBytes = 0;        ///< static shared memory
  uint64_t SpillBytes = 0;         ///< bytes per thread spilled to local memory (spill stores)
};

/// The kernels of ptxas's --resource-usage report (nvcc's stderr).
std::vector<KernelUsage> parseResourceUsage(llvm::StringRef Report);

/// Splits a demangled function name into its name and its parameter types; anonymous namespaces
/// are spelled "(anonymous namespace)" whichever compiler mangled them.
void splitDemangled(llvm::StringRef Demangled, std::string &Name, std::vector<std::string> &Params);

/// The most threads a block of a kernel with this many registers per thread may have on compute
/// capability 8.0 and 9.0 (64 K registers per block, allocated per warp in units of 256).
unsigned maxThreadsPerBlock(unsigned Registers);

/// The warps of a kernel an SM's 64 K registers hold at this many registers a thread (allocated
/// per warp in units of 256), at most 64: its occupancy as its registers bound it, in blocks of
/// one warp.
unsigned warpsByRegisters(unsigned Registers);

/// Compiles Source with nvcc for each of Archs (device code only, no output kept) and returns
/// ptxas's report of every kernel. Args are the compiler arguments the file was parsed with
/// (include paths, macros, the language standard are kept). IncludeDir is searched first for
/// quoted includes, so that a source written elsewhere sees the original's neighbours; Beside
/// are files (relative path, text) placed next to the source, found before those neighbours.
/// tilepipe/runtime.cuh, the runtime a rewrite may include, is this tilepipe's, ahead of Args.
/// With a Cache, a build it holds is not run again, and a build run is kept there.
llvm::Expected<std::vector<KernelUsage>>
compileForUsage(const std::string &Nvcc, llvm::StringRef Source, llvm::StringRef IncludeDir,
                llvm::ArrayRef<std::string> Args, llvm::ArrayRef<std::string> Archs,
                llvm::ArrayRef<std::pair<std::string, std::string>> Beside = {},
                const UsageCache *Cache = nullptr);

} // namespace tilepipe

namespace clang::tooling {
class Replacement;
}

namespace tilepipe {

struct FileResult;
struct HeaderRewrite;

/// What the register comparison of a rewritten file found.
struct LaunchCheck {
  /// __launch_bounds__ insertions into the main file, by kernel name, with the note for its remark.
  struct Bound {
    std::string Kernel;
    std::vector<clang::tooling::Replacement> Edits; ///< of the main file
    /// Of the rewritten headers the kernel is declared in, each with the header's real path
    /// (HeaderRewrite::Path): the header holds a rewritten loop, so it is written anyway.
    std::vector<std::pair<std::string, clang::tooling::Replacement>> HeaderEdits;
    std::string Note;
  };
  std::vector<Bound> Bounds;
  /// Kernels that ptxas makes spill more in the rewrite (with its bounds) than in the original, on
  /// some architecture, by name, with what it measured: a prefetch the cost model counted as free
  /// would go through local memory.
  std::map<std::string, std::string> Spills;
  /// Kernels whose rewrite needs so many more registers a thread than the original, on some
  /// architecture, that an SM holds fewer of its warps (warpsByRegisters), by name, with what it
  /// measured.
  std::map<std::string, std::string> FewerWarps;
  /// Kernels that need __launch_bounds__ which cannot be placed (declared in a macro, or in a
  /// header the rewrite does not change), by name, with why: their loops stay as they were.
  std::map<std::string, std::string> Unbounded;
  /// The names of every kernel of the file (patterns'): a loop of another function (a __device__
  /// function) may run in any of them.
  std::set<std::string> KernelNames;
  /// Not empty: the check could not be made or its fix not placed; every loop stays as it was.
  std::string KeepWhy;
};

/// Places the bounds' header edits (LaunchCheck::Bound::HeaderEdits) in Headers, with their own
/// edits: each header's Edits and Rewritten. Fails where they collide.
llvm::Error boundHeaders(llvm::ArrayRef<LaunchCheck::Bound> Bounds, std::vector<HeaderRewrite> &Headers);

/// Compiles R.Original and R.Rewritten with Nvcc for Archs and compares the registers and static
/// shared memory of every kernel. A kernel without __launch_bounds__ whose rewrite allows fewer
/// threads per block gets __launch_bounds__(the most threads the original allows), and the
/// bounded rewrite is compiled again to confirm it.
LaunchCheck checkLaunchResources(clang::ASTContext &Ctx, const FileResult &R, const std::string &Nvcc,
                                 llvm::ArrayRef<std::string> Args, llvm::ArrayRef<std::string> Archs,
                                 const UsageCache &Cache);

} // namespace tilepipe

// Driver: one file through parse, find, check, plan and emit; the result as data (Result.h).
#pragma once
#include "tilepipe/ArchDependence.h"
#include "tilepipe/Plan.h"
#include "tilepipe/Result.h"
#include "tilepipe/Runtime.h"
#include "tilepipe/Tuning.h"
#include "clang/AST/ASTContext.h"
#include "clang/Tooling/CompilationDatabase.h"
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace clang::tooling {
class ClangTool;
} // namespace clang::tooling

namespace tilepipe {

struct ToolOptions {
  CopyMode Mode = CopyMode::Auto;
  /// Tensor copies only for loops whose stage (all their tiles) holds at least this many bytes:
  /// below, the cp.async copies spread over the block measured faster (docs/verify-record.md).
  uint64_t TmaMinStageBytes = 2048;
  /// Tensor copies for tiles of three dimensions too: off by default, since on the one kernel
  /// measured (brick_tiles) they ran slower than the 16-byte cp.async copies (docs/verify-record.md).
  bool TmaThreeDimensions = false;
  unsigned Stages = 3;
  PlanPolicy Plan = PlanPolicy::Model;
  /// The model keeps loops without copies of the copy engine whose stage holds fewer bytes.
  uint64_t ModelMinStageBytes = 2048;
  bool AssumeNoAlias = false; ///< see CheckOptions::AssumeNoAlias
  /// How a file with tensor or bulk copies gets the runtime: `#include <tilepipe/runtime.cuh>`, or
  /// the header's text in the file (Runtime.h).
  RuntimeMode Runtime = RuntimeMode::Header;
  std::string GpuArch = "sm_90";
  std::vector<std::string> ParseArgs; ///< from cudaParseArgs
  std::vector<std::string> Kernels;   ///< when not empty, only loops in functions of these names
  /// Compile the original and the rewrite with nvcc and compare their kernels' registers, so that
  /// every block size the original launches with still launches (see Resources.h).
  bool CheckLaunchResources = true;
  /// Where the launch check keeps its builds (UsageCache.h); empty: nowhere, each build runs.
  std::string LaunchCacheDir;
  /// A measured plan for every loop (--plan-choice): where it is not legal, the loop stays as it
  /// is (plan-kept). The benchmark's tuning variants are written with it.
  std::optional<PlanChoice> Choice;
  /// Measured plans by loop (--tuning): an entry for the loop, GPU architecture and text wins over
  /// the cost model; one whose fingerprint no longer matches is ignored, with a remark.
  std::vector<TuningEntry> Tuning;
  /// Loops to leave as they are, by file (as LoopRecord::File) and offset of the loop keyword,
  /// each with its refusal (the launch check's: LaunchResources).
  std::map<std::pair<std::string, unsigned>, Verdict> KeepLoops;
  /// `tilepipe audit`: review the asynchronous copies the file already has (Audit.h) into
  /// FileResult::Findings, and rewrite nothing.
  bool Audit = false;
};

/// Sets Tool up to parse as processFile does: the arguments adjuster for Opts.ParseArgs, and the
/// runtime header (tilepipe's own output includes it) in a folder only Tool's parses see.
void prepareParse(clang::tooling::ClangTool &Tool, const ToolOptions &Opts);

/// Parses Path with the compile command DB gives for it, then analyzeAST.
FileResult processFile(const clang::tooling::CompilationDatabase &DB, const std::string &Path,
                       const ToolOptions &Opts);

/// Finds, checks, plans and emits every candidate loop of the main file of Ctx into R (whose Path
/// names the file). Arch says which text depends on the compute capability (loops that read it
/// are refused). Used by processFile and by the clang-tidy check.
void analyzeAST(clang::ASTContext &Ctx, const ToolOptions &Opts, const ArchDependence &Arch,
                FileResult &R);

/// Every file a parse read (the source and all it includes), by real path; Dir: the compile
/// command's working directory, where relative names are.
std::vector<std::string> dependencies(const clang::SourceManager &SM, llvm::StringRef Dir);

/// The files of the user's (not system headers) that the parse entered, other than the main file,
/// by real path.
std::vector<std::string> userFiles(const clang::SourceManager &SM, llvm::StringRef Dir);

/// Name as a real path, read relative to Dir (a compile command's working directory) where it is
/// relative, not to this process's; Name itself where there is no such file.
std::string realPathIn(llvm::StringRef Dir, llvm::StringRef Name);

} // namespace tilepipe

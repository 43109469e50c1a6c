// The driver's steps for one file, in the order analyzeAST (Driver.cpp) runs them, and what each
// hands the next:
//   check  (CheckLoops.cpp):  every candidate loop of every device function, with its annotations,
//                             checked;
//   plan, per function (PlanLoops.cpp): the launch check's keeps and the measured choices, and
//                             each loop's share of the function's shared memory;
//   plan and emit, per loop (RewriteLoop.cpp): the loop's plan, its edits (every instantiation
//                             asking for the same text), the compute-only floor, then per kernel
//                             with tensor copies its map parameters, launcher and launch sites;
//   render, per file (RenderEdits.cpp): includes, line endings, the rewritten file and headers.
// Private to the driver: the program and the clang-tidy module see Driver.h and Result.h only.
#pragma once
#include "tilepipe/ArchDependence.h"
#include "tilepipe/Check.h"
#include "tilepipe/Driver.h"
#include "tilepipe/Emit.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/Error.h"
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tilepipe {

/// `// tilepipe: skip`, `stages=N`, `assume-noalias=...` and `plan=...` in the comment lines right
/// above a loop.
struct Annotation {
  bool Skip = false;
  unsigned Stages = 0;
  std::optional<bool> AssumeNoAlias;
  std::optional<PlanPolicy> Plan;
};

/// Annotations are `// tilepipe: ...` line comments right above a loop; a block comment that reads
/// like one (`/* tilepipe: skip */`) is not read, and is worth a warning rather than silence.
void warnBlockAnnotations(const clang::SourceManager &SM, const clang::LangOptions &LO,
                          clang::FileID FID, llvm::StringRef Name, std::vector<std::string> &Warnings);

using LoopKey = std::pair<clang::FileID, unsigned>; ///< a loop's file and the offset of its keyword

LoopKey loopKey(const clang::SourceManager &SM, const clang::Stmt *S);

/// Check's answer for one instantiation of a candidate loop: its model and verdict, from the
/// loop's text and its annotations alone.
struct CheckedLoop {
  const clang::FunctionDecl *Function;
  LoopModel Model;
  Verdict V;
  unsigned AnnotatedStages = 0; ///< `// tilepipe: stages=N` above the loop, or 0
};

/// Plan's share for a checked loop (planLoops): the launch check's and the measured decisions
/// (which may keep a legal loop: V becomes that refusal) and the loop's share of its function's
/// stages.
struct LoopResult : CheckedLoop {
  std::optional<unsigned> Stages;
  std::string StageNote;
  unsigned Requested = 0;
  unsigned MaxStages = 0; ///< the most stages (up to 6) the function's shared memory allows the loop
  /// The function's static shared variables beside this loop's tiles, the other loops' stage
  /// arrays as planned: what the copy engine's barriers must fit beside (planEngine).
  std::vector<SharedVar> SharedBeside;
  /// The stages lie in dynamic shared memory (two do not fit in 48 KiB of static shared memory,
  /// and every launch of the kernel can ask for their room): the kernel's launcher sizes it.
  bool DynamicStages = false;
  std::string Fingerprint;
  /// A measured choice (--plan-choice, or the tuning file's entry for the loop), what was measured
  /// of it, and why an entry for the loop was not taken.
  std::optional<PlanChoice> Forced;
  std::string Measured;
  std::string TuningNote;
};

/// The compile-time condition under which a template's rewrite runs: it holds for exactly the
/// instantiations the analysis saw (TemplateGuard.cpp; "" outside templates), and what they are.
struct TemplateGuard {
  std::string Condition; ///< `static_cast<long long>(TS) == 64ll || ...`
  std::string Described; ///< `TS = 64; TS = 128`
  bool UsesTypes = false; ///< a type argument is compared (`::cuda::std::is_same_v`)
};
llvm::Expected<TemplateGuard> templateGuard(clang::ASTContext &Ctx,
                                            llvm::ArrayRef<const clang::FunctionDecl *> Instances);

/// The file's candidate loops: Check yields them per function (ByFunction, one entry per
/// instantiation), with the loops' annotations and the loops of templates never instantiated;
/// Plan (planLoops) moves them, planned, into ByLoop, by loop (file, then offset).
struct CheckedLoops {
  std::vector<std::vector<CheckedLoop>> ByFunction;
  std::map<LoopKey, std::vector<LoopResult>> ByLoop;
  std::map<LoopKey, Annotation> Annotations;
  std::map<LoopKey, std::pair<const clang::Stmt *, const clang::FunctionDecl *>> Uninstantiated;
  /// The translation unit's facts, which Check gathered and later steps read (never change).
  std::unique_ptr<TranslationUnitIndex> Index;
};

/// Check: the candidate loops of Instances (functions and instantiations of templates) and of
/// Patterns (templates, for the loops no instantiation reaches), limited to Opts.Kernels, into
/// ByFunction. Fails with the error of an annotation that cannot be read.
llvm::Expected<CheckedLoops> checkLoops(clang::ASTContext &Ctx, const ToolOptions &Opts,
                                        const ArchDependence &Arch,
                                        llvm::ArrayRef<const clang::FunctionDecl *> Instances,
                                        llvm::ArrayRef<const clang::FunctionDecl *> Patterns);

/// Plan, per function: the loops the launch check keeps (Opts.KeepLoops, an input to this run)
/// and the measured choices (--plan-choice, the tuning file) for the legal ones; then the
/// function's legal loops share its static shared memory (planStages). ByFunction into ByLoop.
void planLoops(clang::ASTContext &Ctx, const ToolOptions &Opts, const std::string &Path, CheckedLoops &Loops);

/// The record of a loop, located: the main file's loops by Path, a header's by its name.
LoopRecord loopRecord(const clang::SourceManager &SM, const std::string &Path, const clang::Stmt *Loop,
                      const clang::FunctionDecl *FD);

/// A kernel whose loops take tensor copies (TMA): the tiles that take them and the names of the
/// parameters that carry their maps.
struct TmaKernel {
  const clang::FunctionDecl *Pattern = nullptr;
  std::string Flag;
  std::string Launcher; ///< chosen with the kernel's fresh names
  std::vector<std::pair<const Tile *, std::string>> Tiles; // with the names of their maps
  /// A loop with stages in dynamic shared memory: the kernel's flag (set by its launcher) and
  /// the bytes its launches ask for, on compute capability 8.0 and later and below.
  std::string DynamicFlag;
  uint64_t DynamicBytes = 0, DynamicBytesOne = 0;
  std::unique_ptr<FreshNames> Names;
  /// The function's rewritten loops (their records' files and offsets), whose remarks name its
  /// launch sites: kernels of one name are told apart by them. (A function whose loops take no
  /// tensor copies has only these, and no tiles.)
  std::set<std::pair<std::string, unsigned>> Loops;
};

/// What the per-loop steps add up for the file.
struct FileRewrite {
  /// Edits by file: the main file's, and those of headers that hold rewritten loops.
  std::map<clang::FileID, clang::tooling::Replacements> Edits;
  /// The compute-only variant's edits (main file only), and a warning for each loop that has none
  /// (then the file has none: a floor that leaves a rewritten loop out would time its copies too).
  clang::tooling::Replacements FloorEdits;
  std::vector<std::string> FloorProblems;
  std::map<const clang::FunctionDecl *, TmaKernel> TmaKernels;
  /// Each launcher written: the kernel's qualified name, and the launcher's (FileResult::Launchers).
  std::vector<std::pair<std::string, std::string>> Launchers;
  bool EngineUsed = false; ///< some loop of the main file copies by tensor or bulk copies
  /// The files where some loop became a cuda::pipeline (the register-staged prefetch needs no
  /// header).
  std::set<clang::FileID> CpAsyncUsed;
  std::set<clang::FileID> TraitsUsed; ///< files whose template guards compare types
};

/// Why the kernel that runs FD (FD itself) cannot take parameters and a launcher of tilepipe's
/// (tensor maps, a flag), or "".
std::string launcherProblem(clang::ASTContext &Ctx, const TranslationUnitIndex &Index,
                            const clang::FunctionDecl *FD);

/// Plan and emit for one loop (Results: its instantiations), into F; the loop's record.
LoopRecord rewriteLoop(clang::ASTContext &Ctx, const TranslationUnitIndex &Index, const ToolOptions &Opts,
                       const std::string &Path, LoopKey Key, const std::vector<LoopResult> &Results,
                       const Annotation &A, FileRewrite &F);

/// Kernels with tensor copies: map parameters, a launcher beside the kernel, launch sites, into
/// F's edits and the kernel's records (Loops). Fails where a kernel cannot take them: its loops
/// already read the maps, so the file would not build.
llvm::Error emitKernelMapsOfFile(clang::ASTContext &Ctx, const std::string &Path, FileRewrite &F,
                                 std::vector<LoopRecord> &Loops);

/// Render: F's edits with their includes and the file's line endings, applied to the main file
/// (R.Rewritten, R.Edits), to every header with candidate loops (R.Headers; Checked names them)
/// and to the compute-only variant (R.ComputeOnly). R.Loops' edits get the same includes and
/// line endings, so that each loop's fix stands alone.
llvm::Error renderEdits(const clang::SourceManager &SM, const ToolOptions &Opts,
                        const CheckedLoops &Checked, FileRewrite &F, FileResult &R);

/// An error "<Path>: error: internal: <Why>".
llvm::Error internalError(llvm::StringRef Path, const llvm::Twine &Why);

} // namespace tilepipe

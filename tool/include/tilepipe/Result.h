// Result: what one file's run produced, as data: per candidate loop a LoopRecord, the rewritten
// text of the file and of its user headers. The steps after emit (write, verify, the whole-project
// merge) read these types alone; the driver (Driver.h) fills them.
#pragma once
#include "tilepipe/Plan.h"
#include "tilepipe/Audit.h"
#include "tilepipe/Reasons.h"
#include "clang/Tooling/Core/Replacement.h"
#include <optional>
#include <string>
#include <vector>

namespace tilepipe {

/// What happened to one candidate loop.
struct LoopRecord {
  std::string File;
  unsigned Line = 0, Column = 0; ///< of the loop keyword
  std::string Kernel;
  Reason Code = Reason::Pipelined;
  std::string Detail;
  /// When refused: what else refuses the loop beside Code (Verdict::Others), each with its detail.
  std::vector<std::pair<Reason, std::string>> OtherBlockers;
  unsigned Stages = 0; ///< when transformed
  unsigned Offset = 0; ///< file offset of the loop keyword
  std::vector<clang::tooling::Replacement> Edits; ///< this loop's share of the file's edits
  /// The loop's plan, where it got one (rewritten, or kept by the cost model: the plan it would
  /// have had), and its tiles' names, by LoopPlan::Tiles.
  std::optional<LoopPlan> Plan;
  std::vector<std::string> Tiles;
  /// loopFingerprint of the loop's text, and every legal plan of the loop (enumeratePlans), where
  /// the analysis proved it legal: what tuning measures and keys its entries by.
  std::string Fingerprint;
  std::vector<PlanChoice> Choices;
  bool transformed() const { return Code == Reason::Pipelined; }
  /// When refused: every blocker, Code with Detail first, then OtherBlockers; empty when rewritten.
  std::vector<std::pair<Reason, std::string>> blockers() const;
  /// The one-line text of the remark, without the location and ID.
  std::string message() const;
};

/// "file:line:col" of the loop keyword.
std::string location(const LoopRecord &L);

/// "[reason-id] message": the remark without its location, as every output writes it (the
/// program's remarks, the clang-tidy diagnostics, export-fixes).
std::string remarkText(const LoopRecord &L);

/// "file:line:col: remark: [reason-id] message", in Clang's form: the one remark printer.
std::string remarkLine(const LoopRecord &L);

/// A user header (included by the file) that holds candidate loops; Rewritten == Original when
/// none of them was rewritten.
struct HeaderRewrite {
  std::string Path; ///< real path
  std::string Original, Rewritten;
  clang::tooling::Replacements Edits;
};

struct FileResult {
  std::string Path;
  /// The compile command's working directory: the parse names files relative to it.
  std::string Directory;
  bool Ok = false;
  std::string Error; ///< when !Ok; Clang's own diagnostics were already printed
  std::string Original, Rewritten;
  /// The compute-only timing variant of every rewritten loop; the original where there is none,
  /// or where a rewritten loop has none (a floor that leaves a loop out would not be a floor):
  /// then ComputeOnlyProblems says why, as "file:line:col: warning: ..." lines.
  std::string ComputeOnly;
  std::vector<std::string> ComputeOnlyProblems;
  clang::tooling::Replacements Edits;
  std::vector<LoopRecord> Loops;
  /// Each launcher the rewrite wrote beside a kernel with tensor copies: the kernel's qualified
  /// name, and the launcher's (which another kernel of the same name does not share).
  std::vector<std::pair<std::string, std::string>> Launchers;
  std::vector<std::string> Dependencies; ///< every file the parse read, for build depfiles
  /// The user's files the parse read besides the main file (not system headers), by real path:
  /// what a verify bundle carries so that it builds where the sources are not.
  std::vector<std::string> UserFiles;
  /// The launch check's nvcc builds: run, and answered by its cache (UsageCache.h).
  unsigned LaunchBuilds = 0, LaunchBuildsCached = 0;
  std::vector<HeaderRewrite> Headers;    ///< user headers with candidate loops
  /// The names of ToolOptions::Kernels that name a kernel or device function of the file or its
  /// user headers (a name that matches nothing in a whole run is worth a warning).
  std::vector<std::string> KernelsFound;
  /// "file:line:col: warning: ..." lines, e.g. an annotation written as a block comment.
  std::vector<std::string> Warnings;
  /// `tilepipe audit`'s findings (Audit.h), in source order.
  std::vector<AuditFinding> Findings;
};

} // namespace tilepipe

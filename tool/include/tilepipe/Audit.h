// Audit: a review of the asynchronous copies a user wrote by hand (`tilepipe audit`), with the
// same facts the rewrite reads: which shared arrays the copies fill, how they are aligned, and
// the pipelines and barriers that complete them. Nothing is rewritten; each finding has an ID in
// the one reason table (Reasons.def), the places it concerns, and a fix where one is certain.
//
// Checks (README, "Auditing asynchronous copies"):
//  - async-slow-path: a cuda::memcpy_async whose alignment, as CCCL's dispatch reads it from the
//    call's types (the pointers' element type, cuda::aligned_size_t), is below what its size
//    allows: it runs synchronously (below 4 bytes) or in narrower cp.async instructions;
//  - async-stage-count: a cuda::pipeline_shared_state, or an array of per-stage cuda::barriers,
//    whose depth differs from the number of buffers the copies it completes rotate through.
//  - async-stage-overrun (AuditSchedule.cpp): a copy on a pipeline of thread scope that refills a
//    stage buffer before a block barrier separates it from the last read of what it held;
//  - async-read-before-wait (AuditSchedule.cpp): a read of a tile whose copy group the wait before
//    it (pipeline_consumer_wait_prior<K>, __pipeline_wait_prior) may leave in flight;
//  - async-tma-alignment, async-tx-bytes, async-proxy-fence, async-barrier-reinit (AuditTma.cpp):
//    bulk and tensor copies (TMA) and their mbarriers: a shared address not aligned as the
//    instruction requires, an expectation that differs from the bytes the copies move, a missing
//    fence.proxy.async after the threads' stores or a barrier's init, an init while a copy is in
//    flight;
//  - async-unknown (AuditSchedule.cpp), a remark: a loop whose copies into stage buffers, or reads
//    of them, no loop's schedule reads, so that the two checks above say nothing of them.
#ifndef TILEPIPE_AUDIT_H
#define TILEPIPE_AUDIT_H

#include "tilepipe/AstUtil.h"
#include "tilepipe/Reasons.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include <optional>
#include <string>
#include <vector>

namespace clang {
class ASTContext;
}

namespace tilepipe {

struct AuditFinding {
  Reason Code = Reason::AsyncSlowPath;
  Place At;                                         ///< the copy, or the declaration at fault
  std::string Detail;                                    ///< what was measured, and what would fix it
  std::vector<std::pair<Place, std::string>> Notes; ///< the other places the finding concerns
  std::vector<clang::tooling::Replacement> Fixes;        ///< only where the fix is certain
  std::optional<Place> FixAt; ///< where the fix goes, where not at the first note's place
  /// What the audit could not decide (async-unknown): a remark, not a warning, which no exit status
  /// counts.
  bool Remark = false;
};

/// Every finding in the device code of Ctx's main file and the user's headers it includes
/// (templates as instantiated, each place once), in source order. MainName: the main file's name as
/// the user gave it, which findings there carry.
std::vector<AuditFinding> auditAST(clang::ASTContext &Ctx, llvm::StringRef MainName);

/// "file:line:col: warning: [id] message: detail", then one "file:line:col: note: ..." line per
/// note, in Clang's form.
std::string auditText(const AuditFinding &F);

/// {"id", "message", "detail", "file", "line", "column", "notes": [...], "fixes": [...]}.
llvm::json::Value auditJson(const AuditFinding &F);

} // namespace tilepipe

#endif

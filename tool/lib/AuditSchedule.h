// AuditSchedule: the checks of tilepipe audit that read a loop as a schedule of tiles,
// async-stage-overrun and async-read-before-wait (AuditSchedule.cpp says how).
#ifndef TILEPIPE_AUDIT_SCHEDULE_H
#define TILEPIPE_AUDIT_SCHEDULE_H

#include "tilepipe/Audit.h"

namespace tilepipe {

/// Every copy of the user's device code that may refill a stage buffer another thread still reads,
/// and every read its wait may leave before its copy lands.
std::vector<AuditFinding> scheduleFindings(clang::ASTContext &Ctx, llvm::StringRef MainName);

} // namespace tilepipe

#endif

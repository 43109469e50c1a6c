// AuditOverrun: the async-stage-overrun check of tilepipe audit (AuditOverrun.cpp says how).
#ifndef TILEPIPE_AUDIT_OVERRUN_H
#define TILEPIPE_AUDIT_OVERRUN_H

#include "tilepipe/Audit.h"

namespace tilepipe {

/// Every copy of the user's device code that may refill a stage buffer another thread still reads.
std::vector<AuditFinding> stageOverruns(clang::ASTContext &Ctx, llvm::StringRef MainName);

} // namespace tilepipe

#endif

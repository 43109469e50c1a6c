// Emit: the text edits that turn one checked loop into a multi-stage cp.async pipeline.
#pragma once
#include "tilepipe/Model.h"
#include "clang/AST/ASTContext.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/Error.h"
#include <optional>

namespace tilepipe {

enum class EmitKind {
  Pipeline,    ///< the rewrite
  ComputeOnly, ///< the timing floor: tiles copied once before the loop, the loop only computes
};

/// The loop statement replaced by the pipelined block, and each tile declared before the loop
/// renamed to its stage array. Fails (with a message) when the source cannot be cut as planned.
llvm::Expected<std::vector<clang::tooling::Replacement>>
emitPipeline(clang::ASTContext &Ctx, const LoopModel &M, unsigned Stages,
             EmitKind Kind = EmitKind::Pipeline);

/// `#include <cuda/pipeline>` in front of the file's first include, unless it is there.
std::optional<clang::tooling::Replacement> pipelineInclude(const clang::SourceManager &SM,
                                                           clang::FileID FID);

} // namespace tilepipe

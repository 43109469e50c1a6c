// Model and check: describe one candidate loop (LoopModel) and decide whether rewriting it is
// provably the same program. The first reason found wins; in doubt, refuse.
#pragma once
#include "tilepipe/Find.h"
#include "tilepipe/Model.h"
#include "clang/AST/ASTContext.h"
#include "llvm/ADT/DenseMap.h"

namespace tilepipe {

struct CheckOptions {
  /// Stores through pointers other than the copied ones are assumed not to overlap the copied data.
  /// Off by default: nothing in the source says so, and a wrong guess changes results silently.
  bool AssumeNoAlias = false;
};

/// Facts about the whole translation unit that single loops need: who calls each __device__ function.
class TranslationUnitIndex {
public:
  explicit TranslationUnitIndex(clang::ASTContext &Ctx);
  llvm::ArrayRef<const clang::CallExpr *> callersOf(const clang::FunctionDecl *FD) const;

private:
  llvm::DenseMap<const clang::FunctionDecl *, std::vector<const clang::CallExpr *>> Calls;
};

Verdict checkLoop(clang::ASTContext &Ctx, const TranslationUnitIndex &Index, const Candidate &C,
                  const CheckOptions &Opts, LoopModel &Out);

} // namespace tilepipe

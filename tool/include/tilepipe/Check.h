// Model and check: describe one candidate loop (LoopModel) and decide whether rewriting it is
// provably the same program. The first reason found wins; in doubt, refuse.
#pragma once
#include "tilepipe/Find.h"
#include "tilepipe/Model.h"
#include "clang/AST/ASTContext.h"
#include "llvm/ADT/DenseMap.h"
#include <memory>
#include <optional>

namespace tilepipe {

struct CheckOptions {
  /// Stores through pointers other than the copied ones are assumed not to overlap the copied data.
  /// Off by default: nothing in the source says so, and a wrong guess changes results silently.
  bool AssumeNoAlias = false;
};

struct KernelReferences;

/// Facts about the whole translation unit that single loops need: who calls each __device__
/// function; and, gathered on first use and kept for the other loops and steps of this parse, the
/// non-member operator& declarations and the references to functions and kernel launches.
class TranslationUnitIndex {
public:
  explicit TranslationUnitIndex(clang::ASTContext &Ctx);
  llvm::ArrayRef<const clang::CallExpr *> callersOf(const clang::FunctionDecl *FD) const;
  /// Every non-member operator& with one parameter that a traversal of the translation unit
  /// meets (templates as written, not their instantiations), in its order.
  llvm::ArrayRef<const clang::FunctionDecl *> nonMemberAddressOf() const;
  /// Every kernel launch and reference to a function (KernelReferences.h).
  const KernelReferences &kernelReferences() const;

private:
  clang::ASTContext &Ctx;
  llvm::DenseMap<const clang::FunctionDecl *, std::vector<const clang::CallExpr *>> Calls;
  mutable std::optional<std::vector<const clang::FunctionDecl *>> AddressOfs;
  mutable std::shared_ptr<const KernelReferences> References;
};

Verdict checkLoop(clang::ASTContext &Ctx, const TranslationUnitIndex &Index, const Candidate &C,
                  const CheckOptions &Opts, LoopModel &Out);

} // namespace tilepipe

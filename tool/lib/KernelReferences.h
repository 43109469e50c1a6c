// The kernel launches and the references to functions of a translation unit, gathered in one
// traversal for every kernel of the parse (TranslationUnitIndex::kernelReferences): what the
// questions about one kernel's launches (KernelUses, in Resources.cpp) and about its address
// (kernelSignatureProblem) read. Each question replays the events of its kernel in the order the
// traversal met them, as a traversal of its own would.
#pragma once
#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/StringSet.h"
#include <string>
#include <vector>

namespace tilepipe {

struct KernelReferences {
  /// A launch `k<<<...>>>(...)` (Launch: E is the CUDAKernelCallExpr, F its direct callee or
  /// null), or a name of function F (E is the DeclRefExpr).
  struct Event {
    const clang::Expr *E;
    const clang::FunctionDecl *F;
    bool Launch;
  };
  /// In the order of a traversal of the translation unit with template instantiations.
  std::vector<Event> Events;
  /// The first call outside system headers that hands a function pointer to a call (its line).
  std::string HandedOff;
  /// The first call of the runtime's that launches kernels unseen ("name' at line N").
  std::string GraphCall;
  /// The first launch through a pointer that asks for dynamic shared memory (its line).
  std::string IndirectDynamic;
  /// The names of the file's kernels.
  llvm::StringSet<> KernelNames;
};

/// The dynamic shared-memory argument of launch E where it is not a constant 0, else null.
const clang::Expr *dynamicSharedArgument(const clang::ASTContext &Ctx, const clang::CUDAKernelCallExpr *E);

/// The presumed line of S's expansion, as a number in text.
std::string lineOf(const clang::ASTContext &Ctx, const clang::Stmt *S);

/// The runtime's and the driver's calls that read or set a kernel node's parameters in a CUDA
/// graph (its arguments, its function, its dynamic shared memory), or find a kernel by its name:
/// they launch a kernel with what the text of its launches does not show.
bool launchesUnseen(llvm::StringRef Name);

} // namespace tilepipe

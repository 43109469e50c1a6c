// Small facts shared by the effects, locals and reachability analyses. Internal to tool/lib.
#pragma once
#include "tilepipe/AstUtil.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/Decl.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include <string>

namespace tilepipe {

/// How deep the analyses follow calls, pointer copies and references before giving up.
inline constexpr unsigned MaxDepth = 8;

/// A variable whose value is fixed before the program runs: reading it reads no memory that
/// the program can change.
inline bool isConstantVar(const clang::VarDecl *V) {
  if (V->isConstexpr())
    return true;
  return !V->hasLocalStorage() && V->getType().isConstQualified() && V->hasInit() &&
         !V->hasAttr<clang::CUDADeviceAttr>() && !V->hasAttr<clang::CUDAConstantAttr>() &&
         !isSharedVar(V);
}

/// The function (or lambda call operator) whose body holds S.
const clang::FunctionDecl *enclosingFunction(clang::ASTContext &Ctx, const clang::Stmt *S);

} // namespace tilepipe

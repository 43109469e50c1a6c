// Small facts shared by the effects, locals and reachability analyses. Internal to tool/lib.
#pragma once
#include "tilepipe/AstUtil.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/Decl.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "llvm/ADT/STLFunctionalExtras.h"
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

/// Whether Part holds for T or for any part of an object of type T: an array's element type, a
/// member (with its declaration), a base, at any depth. A class without a definition, or one
/// nested too deeply to look through, is taken to have such a part.
bool anyPart(clang::QualType T,
             llvm::function_ref<bool(clang::QualType, const clang::FieldDecl *)> Part);

/// Whether an object of type T holds a pointer or a reference somewhere in it.
bool holdsPointer(clang::QualType T);

/// Whether a const view of an object of type T keeps it unchanged: no `mutable` member in it, in
/// its members, array elements or bases. (A reference to const, or a const member function, can
/// change a mutable member.)
bool constKeeps(clang::QualType T);

/// Whether FD, or a function it calls, may write through what it was given as const: its body
/// casts const away (a const_cast, or a C-style or functional cast to a pointer or reference of
/// non-const type from one of const type), makes a pointer of an integer, or hands a pointer or
/// reference to a function whose body is not there. A function without a body may.
bool mayCastAwayConst(const clang::FunctionDecl *FD, unsigned Depth = 0);

/// The function (or lambda call operator) whose body holds S.
const clang::FunctionDecl *enclosingFunction(clang::ASTContext &Ctx, const clang::Stmt *S);

} // namespace tilepipe

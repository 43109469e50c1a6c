// The frame of the effects analysis: a function entered through a call, its parameters bound to
// the call's arguments. Internal to the effects analysis (Effects.cpp, EffectsWalk.cpp).
#pragma once
#include "tilepipe/Effects.h"
#include "clang/AST/Decl.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/SmallVector.h"

namespace tilepipe {

struct EffectsAnalyzer::Frame {
  const clang::FunctionDecl *F = nullptr;
  llvm::SmallVector<const clang::Expr *, 4> Args; ///< bound to F's parameters, in order
  const clang::Expr *Object = nullptr;            ///< the object of a member call (what `this` is)
  bool ObjectIsPointer = false;                   ///< `p->f()`: Object is p, `this` its value
  bool Constructing = false;                      ///< F is a constructor: `this` is a new object
  const Frame *Caller = nullptr;

  const clang::Expr *argFor(const clang::ParmVarDecl *P) const {
    if (P->getDeclContext() != F)
      return nullptr;
    unsigned I = P->getFunctionScopeIndex();
    return I < Args.size() ? Args[I] : nullptr;
  }
  /// The frame in which V is a variable of the running function (lambdas name the variables of
  /// the function around them directly).
  const Frame *frameOf(const clang::VarDecl *V) const {
    for (const Frame *Fr = this; Fr; Fr = Fr->Caller)
      if (V->getDeclContext() == Fr->F)
        return Fr;
    return nullptr;
  }
};

} // namespace tilepipe

// What a value depends on: nothing the loop changes, the iteration, or something a copy issued
// ahead of time cannot be sure to see (memory, a call with effects, a variable the loop changes);
// and whether a value that depends on the iteration moves by a fixed step.
#include "LoopChecker.h"
#include "clang/AST/Attr.h"
#include "clang/AST/ExprCXX.h"

using namespace clang;

namespace tilepipe::check {

DepResult LoopChecker::classifyVar(const VarDecl *V) {
  if (isInduction(V))
    return {Dep::Iteration, ""};
  if (InnerVars.contains(V) || RefusedVars.contains(V))
    return {Dep::Invariant, ""};
  if (auto It = IndexDeclDeps.find(V); It != IndexDeclDeps.end())
    return It->second;
  if (auto It = SliceLocalDeps.find(V); It != SliceLocalDeps.end())
    return It->second;
  if (isCudaBuiltinVar(V))
    return {};
  if (V->getType()->isReferenceType())
    return DepResult::bad(quoted(V) + " is a reference");
  if (hasVolatilePart(Ctx, V->getType()))
    return DepResult::bad(quoted(V) + " is volatile");
  if (!V->hasLocalStorage() || V->isStaticLocal()) {
    if (isSharedVar(V))
      return DepResult::read("reads the __shared__ variable " + quoted(V));
    if (V->isConstexpr() || (V->getType().isConstQualified() && V->hasInit() &&
                             !V->hasAttr<CUDADeviceAttr>()))
      return {};
    // Device code cannot write __constant__ memory; the host writes it between launches.
    if (V->hasAttr<CUDAConstantAttr>() && !hasVolatilePart(Ctx, V->getType())) {
      DepResult D;
      D.ReadsUnchanged = true;
      return D;
    }
    return DepResult::read("reads the global variable " + quoted(V));
  }
  if (isSharedVar(V))
    return DepResult::read("reads the __shared__ variable " + quoted(V));
  // A variable of the for-init (`for (float *a = A, *end = A + K; a < end; ...)`) holds the value it
  // got once, before the first iteration, where the rewrite hoists the init: unless the loop
  // changes it (below), every iteration reads that value.
  const auto *For = dyn_cast<ForStmt>(M.Loop);
  const auto *Init = For ? dyn_cast_or_null<DeclStmt>(For->getInit()) : nullptr;
  bool InInit = Init && llvm::is_contained(Init->decls(), V);
  if (InLoop.Declared.contains(V) && !InInit)
    return DepResult::bad(quoted(V) + " is computed inside the loop");
  if (InLoop.Mutated.contains(V))
    return DepResult::bad(quoted(V) + " is modified in the loop");
  if (InFunction->Escaped.contains(V))
    return DepResult::bad(quoted(V) + " escapes: its address is taken, or a reference or a lambda "
                                    "that may change it is bound to it");
  return {};
}

/// A read of memory at the lvalue LV (`p[i]`, `*p`, `p->f`): what its address depends on, where
/// the memory holds the same values while the kernel runs (readOnlyMemory), so that the read, done
/// at another time by the rewrite, gets what the original got; otherwise Bad.
DepResult LoopChecker::readOf(const Expr *LV) {
  const Expr *E = LV->IgnoreParens();
  const Expr *Ptr = nullptr, *Idx = nullptr;
  if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(E)) {
    Ptr = ASE->getBase();
    Idx = ASE->getIdx();
  } else if (const auto *UO = dyn_cast<UnaryOperator>(E); UO && UO->getOpcode() == UO_Deref) {
    Ptr = UO->getSubExpr();
  } else if (const auto *ME = dyn_cast<MemberExpr>(E); ME && ME->isArrow() && !isReferenceMember(ME)) {
    Ptr = ME->getBase();
  }
  if (!Ptr)
    return DepResult::read("reads memory (" + text(LV) + ") not proven unchanged while the kernel runs");
  return readThrough(Ptr, Idx, LV);
}

/// A read of what the pointer Ptr (plus Idx, if any) points to, which the expression Read makes:
/// what the address depends on where readOnlyMemory says the memory holds still, otherwise Bad.
DepResult LoopChecker::readThrough(const Expr *Ptr, const Expr *Idx, const Expr *Read) {
  if (!Ptr->getType()->isPointerType() || hasVolatilePart(Ctx, Read->getType()) ||
      hasVolatilePart(Ctx, Ptr->getType()->getPointeeType()) || !readOnlyMemory(Ptr))
    return DepResult::read("reads memory (" + text(Read) + ") not proven unchanged while the kernel runs");
  DepResult D = classify(Ptr);
  if (Idx)
    D.join(classify(Idx));
  if (D.D != Dep::Bad)
    D.ReadsUnchanged = true;
  return D;
}

/// Whether the memory Ptr points into holds the same values for as long as the kernel runs: Ptr's
/// every root is one that unchangedRoot accepts.
bool LoopChecker::readOnlyMemory(const Expr *Ptr) {
  RootSet R = Effects.rootsOf(M.Function, Ptr);
  return !R.Unknown && !R.Roots.empty() && llvm::all_of(R.Roots, [&](const VarDecl *Root) {
    return unchangedRoot(Root);
  });
}

/// A __constant__ variable (device code cannot write one), or a pointer parameter of the kernel (a
/// __global__ function: a __device__ function's may point anywhere its callers' do) through
/// which no store of the kernel writes (the whole kernel, through every call it makes: other
/// blocks run every part of it while this one runs the loop, and an effect the analysis cannot
/// follow counts as a store), and which either points to const and is __restrict__ (then no other pointer may write its memory either: nvcc itself reads such
/// a parameter as read-only for the kernel's lifetime, through the non-coherent cache), or
/// --assume-noalias says no other pointer reaches its memory (the remark says so).
bool LoopChecker::unchangedRoot(const VarDecl *Root) {
  if (auto It = UnchangedRoots.find(Root); It != UnchangedRoots.end())
    return It->second;
  UnchangedRoots[Root] = false;
  if (Root->hasAttr<CUDAConstantAttr>() && !Root->hasLocalStorage() && !hasVolatilePart(Ctx, Root->getType()))
    return UnchangedRoots[Root] = true;
  const auto *P = dyn_cast<ParmVarDecl>(Root);
  if (!P || !M.Function->hasAttr<CUDAGlobalAttr>() || P->getDeclContext() != M.Function ||
      !P->getType()->isPointerType())
    return false;
  const bool ConstRestrict =
      P->getType().isRestrictQualified() && P->getType()->getPointeeType().isConstQualified();
  if (!ConstRestrict && !Opts.AssumeNoAlias)
    return false;
  if (!KernelEffects)
    KernelEffects = Effects.effectsOf(M.Function, {M.Function->getBody()});
  if (KernelEffects->UnknownAt || llvm::any_of(KernelEffects->Writes, [&](const MemoryWrite &W) {
        return W.Target.Unknown || llvm::is_contained(W.Target.Roots, Root);
      }))
    return false;
  if (!ConstRestrict && !llvm::is_contained(M.UnchangedAssumed, P->getNameAsString()))
    M.UnchangedAssumed.push_back(P->getNameAsString());
  return UnchangedRoots[Root] = true;
}

DepResult LoopChecker::classify(const Expr *E) {
  if (!E)
    return {};
  E = skipCleanups(E)->IgnoreParens();
  if (isBuiltinIndexRead(E))
    return {};
  if (isa<IntegerLiteral, FloatingLiteral, CharacterLiteral, CXXBoolLiteralExpr,
          CXXNullPtrLiteralExpr, UnaryExprOrTypeTraitExpr, SizeOfPackExpr, GNUNullExpr>(E))
    return {};
  if (const auto *ST = dyn_cast<SubstNonTypeTemplateParmExpr>(E))
    return classify(ST->getReplacement());
  if (const auto *CE = dyn_cast<ConstantExpr>(E))
    return classify(CE->getSubExpr());
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
    const ValueDecl *D = DRE->getDecl();
    if (isa<EnumConstantDecl, NonTypeTemplateParmDecl>(D))
      return {};
    if (const auto *V = dyn_cast<VarDecl>(D)) {
      if (V->getType()->isArrayType() && !isSharedVar(V) && V->hasLocalStorage())
        return DepResult::read("reads the local array " + quoted(V));
      return classifyVar(V);
    }
    return DepResult::bad("uses " + quoted(D));
  }
  if (const auto *ICE = dyn_cast<ImplicitCastExpr>(E)) {
    if (ICE->getCastKind() == CK_LValueToRValue) {
      const Expr *Sub = ICE->getSubExpr()->IgnoreParens();
      if (!isa<DeclRefExpr>(Sub) && !isa<MemberExpr>(Sub) && !isBuiltinIndexRead(Sub))
        return readOf(Sub);
    }
    return classify(ICE->getSubExpr());
  }
  if (const auto *CE = dyn_cast<ExplicitCastExpr>(E))
    return classify(CE->getSubExpr());
  if (const auto *UO = dyn_cast<UnaryOperator>(E)) {
    if (UO->isIncrementDecrementOp())
      return DepResult::bad("has a side effect (" + text(UO) + ")");
    if (UO->getOpcode() == UO_Deref)
      return readOf(UO);
    if (UO->getOpcode() == UO_AddrOf) {
      // `&P[i]` through a pointer is `P + i`: arithmetic, no read (`&a[i]` of an array is not).
      if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(UO->getSubExpr()->IgnoreParens());
          ASE && ASE->getBase()->IgnoreParenImpCasts()->getType()->isPointerType()) {
        DepResult D = classify(ASE->getBase());
        D.join(classify(ASE->getIdx()));
        return D;
      }
      return DepResult::bad("takes an address (" + text(UO) + ")");
    }
    return classify(UO->getSubExpr());
  }
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    if (BO->isAssignmentOp())
      return DepResult::bad("has a side effect (" + text(BO) + ")");
    DepResult R = classify(BO->getLHS());
    R.join(classify(BO->getRHS()));
    return R;
  }
  if (const auto *CO = dyn_cast<AbstractConditionalOperator>(E)) {
    DepResult R = classify(CO->getCond());
    R.join(classify(CO->getTrueExpr()));
    R.join(classify(CO->getFalseExpr()));
    return R;
  }
  if (const auto *ME = dyn_cast<MemberExpr>(E)) {
    if (isReferenceMember(ME))
      return DepResult::read("reads memory (" + text(ME) + ")");
    if (ME->isArrow())
      return readOf(ME);
    return classify(ME->getBase());
  }
  if (isa<ArraySubscriptExpr>(E))
    return readOf(E);
  if (const auto *Call = dyn_cast<CallExpr>(E)) {
    if (isa<CXXOperatorCallExpr>(Call) || isa<CXXMemberCallExpr>(Call))
      return DepResult::bad("calls " + text(Call->getCallee()));
    // The toolkit's read-only load, `__ldg(&p[i])`: a read of what its argument points to.
    if (isReadOnlyLoad(SM, Call))
      return readThrough(Call->getArg(0), nullptr, Call);
    if (!Effects.isPure(Call->getDirectCallee()))
      return DepResult::bad("calls " + text(Call->getCallee()));
    DepResult R;
    for (const Expr *A : Call->arguments())
      R.join(classify(A));
    return R;
  }
  if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(E))
    return classify(FC->getSubExpr());
  return DepResult::bad(std::string("has an expression tilepipe does not follow (") +
                        E->getStmtClassName() + ")");
}

/// Whether E, read in the copy phase, moves by the same amount from each iteration to the next: a
/// sum of loop-invariant terms and invariant multiples of integer induction variables (whose steps
/// are invariant). Then where E's first two values start tiles on 16 bytes, so do all of them.
bool LoopChecker::stepsEvenly(const Expr *E, unsigned Depth) {
  if (!E || Depth > 16)
    return false;
  E = skipCleanups(E)->IgnoreParens();
  DepResult D = classify(E);
  if (D.D != Dep::Iteration)
    return D.D == Dep::Invariant;
  if (const auto *ICE = dyn_cast<ImplicitCastExpr>(E)) {
    CastKind K = ICE->getCastKind();
    return (K == CK_LValueToRValue || K == CK_IntegralCast || K == CK_NoOp) &&
           stepsEvenly(ICE->getSubExpr(), Depth + 1);
  }
  if (const auto *CE = dyn_cast<ExplicitCastExpr>(E))
    return (CE->getCastKind() == CK_IntegralCast || CE->getCastKind() == CK_NoOp) &&
           stepsEvenly(CE->getSubExpr(), Depth + 1);
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
    const auto *V = dyn_cast<VarDecl>(DRE->getDecl());
    if (!V)
      return false;
    if (isInduction(V))
      return V->getType()->isIntegerType();
    // An index variable of the copy phase: follow its start.
    return IndexDeclDeps.count(V) && !InLoop.Mutated.contains(V) && stepsEvenly(V->getInit(), Depth + 1);
  }
  if (const auto *UO = dyn_cast<UnaryOperator>(E))
    return (UO->getOpcode() == UO_Minus || UO->getOpcode() == UO_Plus) && stepsEvenly(UO->getSubExpr(), Depth + 1);
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    auto Invariant = [&](const Expr *X) { return classify(X).D == Dep::Invariant; };
    switch (BO->getOpcode()) {
    case BO_Add:
    case BO_Sub:
      return stepsEvenly(BO->getLHS(), Depth + 1) && stepsEvenly(BO->getRHS(), Depth + 1);
    case BO_Mul:
      return (Invariant(BO->getLHS()) && stepsEvenly(BO->getRHS(), Depth + 1)) ||
             (Invariant(BO->getRHS()) && stepsEvenly(BO->getLHS(), Depth + 1));
    case BO_Shl:
      return Invariant(BO->getRHS()) && stepsEvenly(BO->getLHS(), Depth + 1);
    default:
      return false;
    }
  }
  return false;
}

/// Why the copy engine may not take a tile read at Index, or "": the leader checks that the first
/// two tiles start on 16 bytes, and the others do only if the index moves by a fixed step.
std::string LoopChecker::unevenStep(const Expr *Index) {
  if (stepsEvenly(Index))
    return "";
  return "the index '" + text(Index) +
         "' does not move by a fixed step from tile to tile, so the first tiles' alignment says nothing of "
         "the others";
}

} // namespace tilepipe::check

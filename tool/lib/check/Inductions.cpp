// What the loop changes: its induction variables (changed only by their increments, by steps the
// loop never changes), and the locals and parameters that stay as they were set.
#include "LoopChecker.h"
#include "clang/AST/ParentMapContext.h"

using namespace clang;

namespace tilepipe::check {

/// `v += step`, `++v`, `v = v + step` and comma lists of them, on integer or pointer variables.
bool isIncrementStmt(const Stmt *S) {
  const auto *E = dyn_cast<Expr>(S);
  if (!E)
    return false;
  E = E->IgnoreParens();
  if (!E->getType()->isIntegerType() && !E->getType()->isPointerType())
    return false;
  if (const auto *BO = dyn_cast<BinaryOperator>(E); BO && BO->getOpcode() == BO_Comma)
    return isIncrementStmt(BO->getLHS()) && isIncrementStmt(BO->getRHS());
  if (const auto *UO = dyn_cast<UnaryOperator>(E))
    return UO->isIncrementDecrementOp() && varOf(UO->getSubExpr());
  if (const auto *CAO = dyn_cast<CompoundAssignOperator>(E))
    return (CAO->getOpcode() == BO_AddAssign || CAO->getOpcode() == BO_SubAssign) &&
           varOf(CAO->getLHS());
  if (const auto *BO = dyn_cast<BinaryOperator>(E); BO && BO->getOpcode() == BO_Assign) {
    const VarDecl *V = varOf(BO->getLHS());
    const auto *Sum = dyn_cast<BinaryOperator>(BO->getRHS()->IgnoreParenImpCasts());
    return V && Sum && (Sum->getOpcode() == BO_Add || Sum->getOpcode() == BO_Sub) &&
           (varOf(Sum->getLHS()) == V || varOf(Sum->getRHS()) == V);
  }
  return false;
}

Verdict LoopChecker::addIncrement(const Expr *E) {
  E = skipCleanups(E)->IgnoreParens();
  if (const auto *BO = dyn_cast<BinaryOperator>(E); BO && BO->getOpcode() == BO_Comma) {
    if (Verdict V = addIncrement(BO->getLHS()); !V.ok())
      return V;
    return addIncrement(BO->getRHS());
  }
  const VarDecl *Var = nullptr;
  const Expr *Step = nullptr;
  if (const auto *UO = dyn_cast<UnaryOperator>(E); UO && UO->isIncrementDecrementOp()) {
    Var = varOf(UO->getSubExpr());
  } else if (const auto *CAO = dyn_cast<CompoundAssignOperator>(E);
             CAO && (CAO->getOpcode() == BO_AddAssign || CAO->getOpcode() == BO_SubAssign)) {
    Var = varOf(CAO->getLHS());
    Step = CAO->getRHS();
  } else if (const auto *BO = dyn_cast<BinaryOperator>(E); BO && BO->getOpcode() == BO_Assign) {
    Var = varOf(BO->getLHS());
    const auto *Sum = dyn_cast<BinaryOperator>(BO->getRHS()->IgnoreParenImpCasts());
    if (Var && Sum && (Sum->getOpcode() == BO_Add || Sum->getOpcode() == BO_Sub)) {
      if (varOf(Sum->getLHS()) == Var)
        Step = Sum->getRHS();
      else if (Sum->getOpcode() == BO_Add && varOf(Sum->getRHS()) == Var)
        Step = Sum->getLHS();
      else
        Var = nullptr;
    } else {
      Var = nullptr;
    }
  }
  if (!Var)
    return Verdict::refuse(Reason::InductionStep,
                           "the increment '" + text(E) + "' is not 'v += step' or '++v'");
  QualType T = Var->getType();
  if (!(T->isIntegerType() || T->isPointerType()) || T.isVolatileQualified() ||
      !Var->hasLocalStorage() || isSharedVar(Var))
    return Verdict::refuse(Reason::InductionStep,
                           quoted(Var) + " is not a local integer or pointer variable");
  if (!isInduction(Var))
    M.Inductions.push_back(Var);
  if (Step) {
    DepResult D = classify(Step);
    if (D.D != Dep::Invariant)
      return Verdict::refuse(Reason::InductionStep,
                             "the step of " + quoted(Var) + " " +
                                 (D.D == Dep::Bad ? D.Why : "depends on an induction variable"));
  }
  return {};
}

Verdict LoopChecker::collectInductions() {
  if (M.Inc) {
    if (Verdict V = addIncrement(M.Inc); !V.ok())
      return V;
  }
  for (const Stmt *S : M.TailIncs)
    if (Verdict V = addIncrement(cast<Expr>(S)); !V.ok())
      return V;
  // Inductions may change only in their increments.
  LocalFacts Rest;
  Rest.scan(M.Cond);
  for (const Stmt *S : M.CopyPhase)
    Rest.scan(S);
  for (const Stmt *S : M.ComputePhase)
    Rest.scan(S);
  for (const VarDecl *V : M.Inductions) {
    if (Rest.Mutated.contains(V))
      return Verdict::refuse(Reason::InductionStep,
                             quoted(V) + " is also modified outside the increment");
    if (InFunction->Escaped.contains(V))
      return Verdict::refuse(Reason::InductionStep,
                             quoted(V) + " escapes: its address is taken, or a reference or a "
                                       "lambda that may change it is bound to it");
  }
  // A step may not name another induction variable (classify saw them before all were known).
  if (M.Inc)
    if (Verdict V = addIncrement(M.Inc); !V.ok())
      return V;
  for (const Stmt *S : M.TailIncs)
    if (Verdict V = addIncrement(cast<Expr>(S)); !V.ok())
      return V;
  DepResult C = classify(M.Cond);
  if (C.D == Dep::Bad)
    return Verdict::refuse(Reason::LoopCondition, "the condition " + C.Why);
  return {};
}

/// Whether the while-loop induction V is declared with its start just before the loop, in the
/// same block, with nothing in between that changes it.
bool LoopChecker::startSetJustBefore(const VarDecl *V) {
  if (const auto *InitDS = dyn_cast_or_null<DeclStmt>(M.Init))
    return llvm::is_contained(InitDS->decls(), V);
  if (M.Init || !V->getInit() || InFunction->Escaped.contains(V))
    return false;
  DynTypedNodeList P = Ctx.getParents(*M.Loop);
  const auto *Block = P.empty() ? nullptr : P[0].get<CompoundStmt>();
  if (!Block)
    return false;
  bool Seen = false;
  for (const Stmt *S : Block->body()) {
    if (S == M.Loop)
      return Seen;
    if (const auto *DS = dyn_cast<DeclStmt>(S); DS && llvm::is_contained(DS->decls(), V)) {
      Seen = true;
      continue;
    }
    if (Seen) {
      LocalFacts Between;
      Between.scan(S);
      if (Between.Mutated.contains(V) || Between.Escaped.contains(V))
        return false;
    }
  }
  return false;
}

/// A local (not a parameter) of integer type, initialized where it is declared and never changed.
bool LoopChecker::setOnceLocal(const VarDecl *V) const {
  return V->hasLocalStorage() && !isa<ParmVarDecl>(V) && V->getInit() &&
         !V->getType()->isReferenceType() && V->getType()->isIntegerType() && !changes(V);
}

/// A parameter of the loop's own function that the function never changes.
bool LoopChecker::unchangedParam(const VarDecl *V) const {
  return isa<ParmVarDecl>(V) && V->getDeclContext() == M.Function && !changes(V);
}

} // namespace tilepipe::check

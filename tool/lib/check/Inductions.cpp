// What the loop changes: its induction variables (changed only by their increments, by steps the
// loop never changes), and the locals and parameters that stay as they were set.
#include "LoopChecker.h"
#include <functional>
#include "clang/AST/Attr.h"
#include "clang/AST/ParentMapContext.h"

using namespace clang;

namespace tilepipe::check {

/// The steps of a comma list of increments (`a += s, ++b`), each as stepOf reads it; false where
/// one is no step of an integer or pointer variable.
static bool stepsOf(const Expr *E, llvm::SmallVectorImpl<VarStep> &Out) {
  E = skipCleanups(E)->IgnoreParens();
  if (const auto *BO = dyn_cast<BinaryOperator>(E); BO && BO->getOpcode() == BO_Comma)
    return stepsOf(BO->getLHS(), Out) && stepsOf(BO->getRHS(), Out);
  VarStep S = stepOf(E);
  if (!S.Var || !(S.Var->getType()->isIntegerType() || S.Var->getType()->isPointerType()))
    return false;
  Out.push_back(S);
  return true;
}

/// `v += step`, `++v`, `v = v + step`, `p = &p[step]` and comma lists of them (stepOf), on
/// integer or pointer variables.
bool isIncrementStmt(const Stmt *S) {
  const auto *E = dyn_cast<Expr>(S);
  llvm::SmallVector<VarStep, 2> Steps;
  return E && stepsOf(E, Steps);
}

Verdict LoopChecker::addIncrement(const Expr *E) {
  E = skipCleanups(E)->IgnoreParens();
  if (const auto *BO = dyn_cast<BinaryOperator>(E); BO && BO->getOpcode() == BO_Comma) {
    if (Verdict V = addIncrement(BO->getLHS()); !V.ok())
      return V;
    return addIncrement(BO->getRHS());
  }
  const VarStep VS = stepOf(E);
  const VarDecl *Var = VS.Var;
  const Expr *Step = VS.By;
  if (!Var)
    return Verdict::refuse(Reason::InductionStep,
                           "the increment '" + text(E) + "' is not 'v += step' or '++v'");
  QualType T = Var->getType();
  if (!(T->isIntegerType() || T->isPointerType()) || T.isVolatileQualified() ||
      !Var->hasLocalStorage() || isSharedVar(Var))
    return Verdict::refuse(Reason::InductionStep,
                           quoted(Var) + " is not a local integer or pointer variable");
  if (declaredInBody(Var))
    return Verdict::refuse(Reason::InductionStep,
                           quoted(Var) + " is declared in the loop body, so each iteration starts it again");
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

/// Whether S names V.
static bool names(const Stmt *S, const VarDecl *V) {
  if (!S)
    return false;
  if (const auto *DRE = dyn_cast<DeclRefExpr>(S); DRE && DRE->getDecl() == V)
    return true;
  for (const Stmt *C : S->children())
    if (names(C, V))
      return true;
  return false;
}

/// Whether the loop's body (not its for-init) declares V.
bool LoopChecker::declaredInBody(const VarDecl *V) {
  if (!BodyFacts) {
    BodyFacts.emplace();
    if (const auto *For = dyn_cast<ForStmt>(M.Loop))
      BodyFacts->scan(For->getBody());
    else if (const auto *While = dyn_cast<WhileStmt>(M.Loop))
      BodyFacts->scan(While->getBody());
  }
  return BodyFacts->Declared.contains(V);
}

/// The compute phase's top-level increments of variables the copy phase or the condition read:
/// each runs exactly once per iteration (the body has no continue, break, return or goto:
/// checkControlFlow), after the copy phase, so at the start of iteration i such a variable holds
/// its start plus i steps, as a for-increment's does.
void LoopChecker::findBodyIncrements() {
  for (const Stmt *S : M.ComputePhase) {
    if (!isIncrementStmt(S))
      continue;
    llvm::SmallVector<VarStep, 2> Steps;
    stepsOf(cast<Expr>(S), Steps);
    // A variable the body declares starts again each iteration: stepping it is the compute
    // phase's business.
    bool Read = llvm::any_of(Steps, [&](const VarStep &Step) {
      const VarDecl *V = Step.Var;
      return !declaredInBody(V) &&
             (names(M.Cond, V) || llvm::any_of(M.CopyPhase, [&](const Stmt *C) { return names(C, V); }));
    });
    if (Read)
      M.BodyIncs.push_back(S);
  }
}

Verdict LoopChecker::collectInductions() {
  findBodyIncrements();
  if (isa<WhileStmt>(M.Loop) && M.TailIncs.empty() && M.BodyIncs.empty())
    return Verdict::refuse(Reason::InductionStep,
                           "the while loop steps none of the variables its copies or its condition "
                           "read, at the end of its body or in its compute phase");
  if (M.Inc) {
    if (Verdict V = addIncrement(M.Inc); !V.ok())
      return V;
  }
  for (const Stmt *S : M.TailIncs)
    if (Verdict V = addIncrement(cast<Expr>(S)); !V.ok())
      return V;
  for (const Stmt *S : M.BodyIncs)
    if (Verdict V = addIncrement(cast<Expr>(S)); !V.ok())
      return V;
  // Inductions may change only in their increments.
  LocalFacts Rest;
  Rest.scan(M.Cond);
  for (const Stmt *S : M.CopyPhase)
    Rest.scan(S);
  for (const Stmt *S : M.ComputePhase)
    if (!llvm::is_contained(M.BodyIncs, S))
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
  for (const Stmt *S : M.BodyIncs)
    if (Verdict V = addIncrement(cast<Expr>(S)); !V.ok())
      return V;
  return {};
}

Verdict LoopChecker::checkCondition() {
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
  // `for (t = 0; ...)` of a variable declared before the loop, as C-style kernels write it: the
  // init sets the start right before the first iteration (its value is judged with the init's).
  if (const auto *InitE = dyn_cast_or_null<Expr>(M.Init)) {
    std::function<bool(const Expr *)> Assigns = [&](const Expr *E) {
      const auto *BO = dyn_cast<BinaryOperator>(skipCleanups(E)->IgnoreParens());
      if (!BO)
        return false;
      if (BO->getOpcode() == BO_Comma)
        return Assigns(BO->getLHS()) || Assigns(BO->getRHS());
      return BO->getOpcode() == BO_Assign && varOf(BO->getLHS()->IgnoreParens()) == V;
    };
    return !InFunction->Escaped.contains(V) && Assigns(InitE);
  }
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

/// Whether V, a parameter of the kernel that holds the loop, has one value in all threads where
/// the loop starts: the loop is a statement of the kernel's body (no goto can run a statement of
/// it twice), V escapes nowhere, and before the loop the body changes V only in statements of
/// its own that step it by values the same in all threads (`A += blockIdx.y * BM * K;`): each
/// runs once in every thread that reaches the loop.
bool LoopChecker::paramStartUniform(const VarDecl *V, unsigned Depth) {
  const auto *P = dyn_cast<ParmVarDecl>(V);
  if (!P || P->getDeclContext() != M.Function || !M.Function->hasAttr<CUDAGlobalAttr>() ||
      InFunction->Escaped.contains(V) || hasJumps(M.Function->getBody()))
    return false;
  const auto *Body = dyn_cast_or_null<CompoundStmt>(M.Function->getBody());
  if (!Body)
    return false;
  const Stmt *Top = M.Hints ? static_cast<const Stmt *>(M.Hints) : M.Loop;
  for (const Stmt *S : Body->body()) {
    if (S == Top)
      return true;
    LocalFacts F;
    F.scan(S);
    if (!F.Mutated.contains(V) && !F.Escaped.contains(V))
      continue;
    llvm::SmallVector<VarStep, 2> Steps;
    const auto *E = dyn_cast<Expr>(S);
    if (!E || !stepsOf(E, Steps))
      return false;
    for (const VarStep &Step : Steps)
      if (Step.By && mentionsThread(Step.By, Depth + 1))
        return false;
  }
  return false;
}

/// Whether S holds a goto or a label (then a statement may run more than once, or not at all).
bool LoopChecker::hasJumps(const Stmt *S) {
  if (!S)
    return false;
  if (isa<GotoStmt, IndirectGotoStmt, LabelStmt>(S))
    return true;
  for (const Stmt *C : S->children())
    if (hasJumps(C))
      return true;
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

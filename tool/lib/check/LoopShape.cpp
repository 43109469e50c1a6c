// The loop's form: a for or while loop whose body is a copy phase and a compute phase between two
// barriers (trailing or rotated), with no jump out of the body.
#include "LoopChecker.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/StmtCXX.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace clang;

namespace tilepipe::check {

namespace {

/// Finds jumps that leave the loop body: return and goto anywhere, break outside the body's own
/// inner loops and switches, continue outside its inner loops (a switch does not take a
/// continue: it continues the loop around it). Only an inner statement's body is inside it: a
/// jump in its condition, initialization or increment (a statement expression) is the body's.
struct ControlFlowWalker : RecursiveASTVisitor<ControlFlowWalker> {
  unsigned Loops = 0, Switches = 0;
  std::string Found;
  bool TraverseForStmt(ForStmt *S) { return nested(S, S->getBody(), true); }
  bool TraverseWhileStmt(WhileStmt *S) { return nested(S, S->getBody(), true); }
  bool TraverseDoStmt(DoStmt *S) { return nested(S, S->getBody(), true); }
  bool TraverseSwitchStmt(SwitchStmt *S) { return nested(S, S->getBody(), false); }
  bool TraverseCXXForRangeStmt(CXXForRangeStmt *S) { return nested(S, S->getBody(), true); }
  bool TraverseLambdaExpr(LambdaExpr *) { return true; }
  bool nested(Stmt *S, Stmt *Body, bool Loop) {
    for (Stmt *Child : S->children())
      if (Child && Child != Body && !TraverseStmt(Child))
        return false;
    unsigned &Depth = Loop ? Loops : Switches;
    ++Depth;
    bool R = TraverseStmt(Body);
    --Depth;
    return R;
  }
  bool VisitBreakStmt(BreakStmt *) { return Loops + Switches ? true : (Found = "break", false); }
  bool VisitContinueStmt(ContinueStmt *) { return Loops ? true : (Found = "continue", false); }
  bool VisitReturnStmt(ReturnStmt *) { return Found = "return", false; }
  bool VisitGotoStmt(GotoStmt *) { return Found = "goto", false; }
  bool VisitIndirectGotoStmt(IndirectGotoStmt *) { return Found = "goto", false; }
};

/// What the body declares that must stand once in a function: a label (the rewrite holds the body,
/// or its compute phase, in two paths, each of which would declare it), or a static local (each
/// path would have its own, and launches that take different paths would not share it; a
/// __shared__ one is the block's, which runs one path).
struct OnceOnlyWalker : RecursiveASTVisitor<OnceOnlyWalker> {
  std::string Found;
  bool TraverseLambdaExpr(LambdaExpr *) { return true; }
  bool VisitLabelStmt(LabelStmt *S) {
    return Found = "declares the label '" + S->getDecl()->getName().str() +
                   "', which the rewrite's paths would each declare again",
           false;
  }
  bool VisitVarDecl(VarDecl *V) {
    // A __shared__ variable lives as long as its block, which runs one path: only a static that
    // outlives the launch is shared between launches.
    if (V->getStorageClass() != SC_Static || V->hasAttr<CUDASharedAttr>())
      return true;
    return Found = "declares the static variable '" + V->getName().str() +
                   "', which the rewrite's paths would each have a copy of",
           false;
  }
};

/// A structured binding the loop names but does not declare: the rewrite moves the loop's text into
/// lambdas of its own, which may capture a structured binding only from C++20 (nvcc warns, Clang
/// refuses before it).
struct OuterBindingWalker : RecursiveASTVisitor<OuterBindingWalker> {
  llvm::SmallPtrSet<const ValueDecl *, 4> Inside;
  std::string Found;
  bool VisitDecompositionDecl(DecompositionDecl *D) {
    for (const BindingDecl *B : D->bindings())
      Inside.insert(B);
    return true;
  }
  bool VisitDeclRefExpr(DeclRefExpr *E) {
    if (const auto *B = dyn_cast<BindingDecl>(E->getDecl()); B && !Inside.count(B))
      return Found = B->getName().str(), false;
    return true;
  }
};

} // namespace

Verdict LoopChecker::checkControlFlow(const Stmt *Body) {
  ControlFlowWalker W;
  W.TraverseStmt(const_cast<Stmt *>(Body));
  if (!W.Found.empty())
    return Verdict::refuse(Reason::ControlFlow, "the body has a '" + W.Found + "'");
  OnceOnlyWalker O;
  O.TraverseStmt(const_cast<Stmt *>(Body));
  if (!O.Found.empty())
    return Verdict::refuse(Reason::Unsupported, "the body " + O.Found);
  return {};
}

/// The loop statement itself: written in the file, not in a macro, and with no attribute but
/// `#pragma unroll` or `#pragma nounroll` lines (Emit writes those on the mainloop, the loop they
/// meant; another would end up on the emitted block).
Verdict LoopChecker::checkLoopStatement() {
  if (inMacro(M.Loop->getSourceRange()))
    return Verdict::refuse(Reason::Macro, "the loop is written inside a macro");
  for (const DynTypedNode &P : Ctx.getParents(*M.Loop))
    if (const auto *AS = P.get<AttributedStmt>()) {
      if (!onlyUnrollHints(AS))
        return Verdict::refuse(Reason::Unsupported, "a #pragma other than unroll, or an attribute, applies to the loop");
      M.Hints = AS;
    }
  OuterBindingWalker B;
  B.TraverseStmt(const_cast<Stmt *>(M.Loop));
  if (!B.Found.empty())
    return Verdict::refuse(Reason::Unsupported,
                           "the loop names the structured binding '" + B.Found +
                               "', declared before it: the rewrite moves the loop's text into lambdas, "
                               "which capture a structured binding only from C++20");
  return {};
}

Verdict LoopChecker::checkShape() {
  const Stmt *Body = nullptr;
  if (Verdict V = readLoopHeader(Body); !V.ok())
    return V;
  const auto *CS = dyn_cast<CompoundStmt>(Body);
  if (!CS)
    return Verdict::refuse(Reason::LoopShape, "the body is not a block");
  std::vector<const Stmt *> Stmts(CS->body_begin(), CS->body_end());
  if (isa<WhileStmt>(M.Loop)) {
    if (Verdict V = peelWhileIncrements(Stmts); !V.ok())
      return V;
  } else {
    peelForIncrements(Stmts);
  }
  if (Verdict V = splitPhases(Stmts); !V.ok())
    return V;
  return checkControlFlow(Body);
}

/// A for loop's init, condition and increment, or a while loop's condition; and the body.
Verdict LoopChecker::readLoopHeader(const Stmt *&Body) {
  if (const auto *For = dyn_cast<ForStmt>(M.Loop)) {
    if (For->getConditionVariable())
      return Verdict::refuse(Reason::Unsupported, "the loop condition declares a variable");
    M.Init = For->getInit();
    M.Cond = For->getCond();
    M.Inc = For->getInc();
    Body = For->getBody();
    if (!M.Cond)
      return Verdict::refuse(Reason::LoopCondition, "the loop has no condition");
    if (!M.Inc)
      return Verdict::refuse(Reason::InductionStep, "the loop has no increment");
    return {};
  }
  if (const auto *While = dyn_cast<WhileStmt>(M.Loop)) {
    if (While->getConditionVariable())
      return Verdict::refuse(Reason::Unsupported, "the loop condition declares a variable");
    M.Cond = While->getCond();
    Body = While->getBody();
    return {};
  }
  return Verdict::refuse(Reason::LoopShape, "do-while loops are not rewritten");
}

/// A while loop ends with the increments of its variables (M.TailIncs), with at most one barrier
/// among them; they are taken off the end of Stmts, and the barrier is put back.
Verdict LoopChecker::peelWhileIncrements(std::vector<const Stmt *> &Stmts) {
  bool SeenBarrier = false;
  while (!Stmts.empty()) {
    const Stmt *Last = Stmts.back();
    if (isIncrementStmt(Last)) {
      M.TailIncs.insert(M.TailIncs.begin(), Last);
    } else if (!SeenBarrier && isBlockBarrier(Last) && !M.TailIncs.empty()) {
      SeenBarrier = true;
      M.TrailingBarrier = Last;
    } else {
      break;
    }
    Stmts.pop_back();
  }
  if (M.TrailingBarrier) // put the barrier back: the shape check below expects it
    Stmts.push_back(M.TrailingBarrier);
  M.TrailingBarrier = nullptr;
  return {};
}

/// A for loop of the trailing form may step its variables after its trailing barrier (`A += BK;`):
/// the increments that follow the body's last barrier are its tail increments (M.TailIncs), as a
/// while loop's are. Only there: at the end of a rotated loop's body they are the compute phase's.
void LoopChecker::peelForIncrements(std::vector<const Stmt *> &Stmts) {
  size_t End = Stmts.size();
  while (End > 0 && isIncrementStmt(Stmts[End - 1]))
    --End;
  if (End == Stmts.size() || End == 0 || !isBlockBarrier(Stmts[End - 1]))
    return;
  M.TailIncs.assign(Stmts.begin() + End, Stmts.end());
  Stmts.resize(End);
}

/// The body's top-level statements as one of the two forms, trailing (copy; barrier; compute;
/// barrier) or rotated (barrier; copy; barrier; compute), with no barrier nested deeper.
Verdict LoopChecker::splitPhases(const std::vector<const Stmt *> &Stmts) {
  std::vector<size_t> Barriers;
  for (size_t I = 0; I < Stmts.size(); ++I) {
    if (isBlockBarrier(Stmts[I]))
      Barriers.push_back(I);
    else if (containsBarrier(Stmts[I]))
      return Verdict::refuse(Reason::ConditionalBarrier,
                             "a barrier is nested inside '" + text(Stmts[I]).substr(0, 40) + "'");
  }
  auto Range = [&](size_t B, size_t E) {
    return std::vector<const Stmt *>(Stmts.begin() + B, Stmts.begin() + E);
  };
  if (Barriers.size() == 2 && Barriers[1] == Stmts.size() - 1 && Barriers[0] > 0) {
    M.Form = LoopForm::Trailing;
    M.CopyBarrier = Stmts[Barriers[0]];
    M.TrailingBarrier = Stmts[Barriers[1]];
    M.CopyPhase = Range(0, Barriers[0]);
    M.ComputePhase = Range(Barriers[0] + 1, Barriers[1]);
  } else if (Barriers.size() == 2 && Barriers[0] == 0 && Barriers[1] > 1 &&
             Barriers[1] < Stmts.size() - 1) {
    M.Form = LoopForm::Rotated;
    M.FirstBarrier = Stmts[0];
    M.CopyBarrier = Stmts[Barriers[1]];
    M.CopyPhase = Range(1, Barriers[1]);
    M.ComputePhase = Range(Barriers[1] + 1, Stmts.size());
  } else {
    return Verdict::refuse(Reason::LoopShape,
                           std::to_string(Barriers.size()) + " barriers in the body, at positions "
                           "that match neither form");
  }
  if (M.ComputePhase.empty())
    return Verdict::refuse(Reason::LoopShape, "the compute phase is empty");
  return {};
}

} // namespace tilepipe::check

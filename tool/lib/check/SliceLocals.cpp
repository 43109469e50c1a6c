// Locals the copy phase sets: C-style kernels declare every local at their top and set it in the
// loop. A local declared before the loop that the copy phase sets before anything reads it is a
// value of the iteration, as an index variable is (docs/legality.md, C1).
#include "LoopChecker.h"

using namespace clang;

namespace tilepipe::check {

/// The local `x = e;` sets, or that both branches of `if (c) x = e1; else x = e2;` set (a
/// branch the one assignment, braced or not), with the values; null for any other statement.
static const VarDecl *sliceAssignment(const Stmt *S, std::vector<const Expr *> &Values, const Expr *&Cond) {
  auto AssignOf = [](const Stmt *T, const Expr *&Value) -> const VarDecl * {
    if (const auto *CS = dyn_cast<CompoundStmt>(T))
      T = CS->size() == 1 ? CS->body_front() : nullptr;
    return plainSet(T, Value);
  };
  Values.clear();
  Cond = nullptr;
  if (const auto *If = dyn_cast<IfStmt>(S)) {
    if (!If->getElse() || If->getInit() || If->getConditionVariable() || If->isConstexpr() || If->isConsteval())
      return nullptr;
    const Expr *A = nullptr, *B = nullptr;
    const VarDecl *X = AssignOf(If->getThen(), A);
    if (!X || AssignOf(If->getElse(), B) != X)
      return nullptr;
    Cond = If->getCond();
    Values = {A, B};
    return X;
  }
  const Expr *A = nullptr;
  const VarDecl *X = AssignOf(S, A);
  if (X)
    Values = {A};
  return X;
}

/// `x = e;`, or `if (c) x = e1; else x = e2;`, at the top level of the copy phase, setting a local
/// the function declares before the loop, as C-style kernels declare every local at their top
/// (lavaMD's `pointer`, `first_j` and `rB`): x is then a value of the iteration, as an index
/// variable is. The rewrite replays the copy phase ahead for later tiles, the statement with it,
/// which sets x again before this iteration's compute phase: sound only where nothing but the copy
/// phase after the statement ever reads x (not the compute phase, the loop's header, or any code
/// outside the loop, which would see a later tile's value), nothing else sets it, its storage
/// does not escape, and the statement reads no x itself. Null where S is no such statement (the
/// other rules judge it).
std::optional<Verdict> LoopChecker::checkSliceAssignment(const Stmt *S) {
  std::vector<const Expr *> Values;
  const Expr *Cond = nullptr;
  const VarDecl *X = sliceAssignment(S, Values, Cond);
  if (!X || !X->hasLocalStorage() || isa<ParmVarDecl>(X) || X->isStaticLocal() || isSharedVar(X) ||
      isInduction(X) || InLoop.Declared.contains(X) || X->getType()->isReferenceType() ||
      !X->getType()->isScalarType() || X->getType().isVolatileQualified())
    return std::nullopt;
  const std::string What = "the local " + quoted(X) + ", set in the copy phase,";
  if (InFunction->Escaped.contains(X))
    return Verdict::refuse(Reason::LoadPhase, What + " escapes: its address is taken or a reference is bound to it");
  unsigned InCopy = 0, Before = 0;
  bool Seen = false;
  for (const Stmt *C : M.CopyPhase) {
    const unsigned N = refsTo(X, C);
    Seen |= C == S;
    (Seen ? InCopy : Before) += N;
    if (Seen && C != S && N) {
      LocalFacts Later;
      Later.scan(C);
      if (Later.Mutated.contains(X))
        return Verdict::refuse(Reason::LoadPhase, What + " is set again by '" + text(C).substr(0, 60) + "'");
    }
  }
  if (Before || refsTo(X, S) != Values.size())
    return Verdict::refuse(Reason::LoadPhase, What + " is read before the copy phase sets it in each iteration");
  if (refsTo(X, M.Function->getBody()) != InCopy)
    return Verdict::refuse(Reason::LoadPhase,
                           What + " is used outside the copy phase (the compute phase, the loop's header or code "
                                  "outside the loop), which would see the value of a tile copied ahead");
  if (!editable(S))
    return Verdict::refuse(Reason::Macro, "the copy phase's '" + text(S).substr(0, 60) + "' is written in a macro");
  DepResult D = classify(Cond);
  for (const Expr *V : Values)
    D.join(classify(V));
  if (D.D == Dep::Bad)
    return Verdict::refuse(Reason::AddressNotInvariant, What + " " + D.Why);
  SliceLocalDeps[X] = D;
  SliceLocalSets[X] = {Values, Cond};
  return Verdict{};
}

} // namespace tilepipe::check

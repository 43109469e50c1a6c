// Inner copy loops of the copy phase: loops that declare their counter (`for (int i = tid; i < N;
// i += blockDim.x)`), and loops over a counter the function declares outside the tiled loop, as
// C-style kernels write them (lavaMD's `while (wtx < N) { ...; wtx += T; } wtx = tx;`); and the
// values a counter takes, which tell the elements of the stores in such loops apart.
#include "LoopChecker.h"
#include "clang/AST/ParentMapContext.h"

using namespace clang;

namespace tilepipe::check {

/// Refuses What (the start, bound or step of an inner copy loop) unless E is the same in every
/// iteration of the outer loop.
Verdict LoopChecker::sameEachIteration(const Expr *E, const std::string &What) {
  DepResult D = classify(E);
  if (D.D == Dep::Invariant)
    return {};
  return Verdict::refuse(D.D == Dep::Bad ? Reason::AddressNotInvariant : Reason::TileIndex,
                         What + " " + (D.D == Dep::Bad ? D.Why : "depends on the iteration"));
}

/// An inner copy loop: its own variables, bounds that do not depend on the iteration.
Verdict LoopChecker::checkInnerCopyLoop(const ForStmt *For) {
  const auto *Init = dyn_cast_or_null<DeclStmt>(For->getInit());
  if (!Init || !For->getCond() || !For->getInc() || For->getConditionVariable())
    return Verdict::refuse(Reason::LoadPhase, "an inner copy loop without 'int i = ...; cond; inc'");
  std::vector<const VarDecl *> Declared;
  for (const Decl *D : Init->decls()) {
    const auto *V = dyn_cast<VarDecl>(D);
    if (!V || !V->getType()->isIntegerType() || !V->getInit())
      return Verdict::refuse(Reason::LoadPhase, "an inner copy loop variable is not an integer");
    if (Verdict R = sameEachIteration(V->getInit(), "the inner copy loop start"); !R.ok())
      return R;
    Declared.push_back(V);
  }
  for (const VarDecl *V : Declared) {
    InnerVars.insert(V);
    InnerStack.push_back(V);
    ForInnerVars.insert(V);
  }
  // The increment assigns its own variable, which classify would call a side effect: check that
  // only it changes the variable, then judge the bound and the step.
  LocalFacts IncScan, BodyScan;
  IncScan.scan(For->getInc());
  BodyScan.scan(For->getBody());
  for (const VarDecl *V : Declared)
    if (BodyScan.Mutated.contains(V) || !IncScan.Mutated.contains(V))
      return Verdict::refuse(Reason::LoadPhase,
                             "the inner copy loop variable " + quoted(V) + " is not a plain counter");
  if (Verdict R = sameEachIteration(For->getCond(), "the inner copy loop bound"); !R.ok())
    return R;
  const Expr *Inc = For->getInc()->IgnoreParens();
  const Expr *Step = nullptr;
  if (const auto *CAO = dyn_cast<CompoundAssignOperator>(Inc))
    Step = CAO->getRHS();
  else if (VarStep VS = stepOf(Inc); VS.Var && VS.By)
    Step = VS.By;
  else if (!isa<UnaryOperator>(Inc))
    return Verdict::refuse(Reason::LoadPhase, "the inner copy loop increment is not 'i += step'");
  if (Step)
    if (Verdict R = sameEachIteration(Step, "the inner copy loop step"); !R.ok())
      return R;
  if (Declared.size() == 1)
    rangeOf({Declared.front(), Declared.front()->getInit(), For->getCond(), For->getInc()});
  Verdict V = checkCopyStmt(For->getBody());
  for (size_t I = 0; I < Declared.size(); ++I)
    InnerStack.pop_back();
  return V;
}

/// The least and greatest value V takes in the iterations of its inner copy loop, where they are
/// constants: V starts at a constant, the increment adds a constant to it (`++`, `--`, `+=`, `-=`),
/// and the condition compares two affine forms in V alone (`offset + 32 <= 128`). The loop is run
/// here, at most 65536 iterations, with every value (V's and both sides') within 32-bit signed
/// arithmetic and not negative where it is unsigned, so the compiled comparison and the one run
/// here agree (V within its own type's range). The body never changes V (checkInnerCopyLoop); a
/// break ends it sooner, within the range. A loop that runs no iteration has no range.
std::optional<LoopChecker::InnerRange> LoopChecker::innerRange(const CountedLoop &Loop) {
  const VarDecl *V = Loop.V;
  const auto *Cond = dyn_cast<BinaryOperator>(Loop.Cond->IgnoreParens());
  if (!Cond || !Cond->isComparisonOp() || Cond->getOpcode() == BO_EQ)
    return std::nullopt;
  Affine Start, L, R, Step;
  VarStep VS = stepOf(Loop.Inc->IgnoreParens());
  if (VS.Var != V || (VS.By && !affine(VS.By, Step)))
    return std::nullopt;
  if (!VS.By)
    Step.Constant = 1;
  const int64_t Sign = VS.Down ? -1 : 1;
  if (!affine(Loop.Start, Start) || !affine(Cond->getLHS(), L) || !affine(Cond->getRHS(), R) ||
      !Start.Terms.empty() || !Step.Terms.empty() || Step.Constant == 0 || std::abs(Step.Constant) >= (int64_t(1) << 31))
    return std::nullopt;
  const std::string Atom = affineAtom(V);
  auto OnlyV = [&](const Affine &A) {
    return A.Terms.empty() || (A.Terms.size() == 1 && A.Terms.count(Atom) &&
                               std::abs(A.Terms.at(Atom)) < (int64_t(1) << 24) &&
                               std::abs(A.Constant) < (int64_t(1) << 40));
  };
  if (!OnlyV(L) || !OnlyV(R))
    return std::nullopt;
  auto At = [&](const Affine &A, int64_t X) {
    auto T = A.Terms.find(Atom);
    return A.Constant + (T == A.Terms.end() ? 0 : T->second * X);
  };
  const bool VUnsigned = V->getType()->isUnsignedIntegerType();
  const bool CmpUnsigned = Cond->getLHS()->getType()->isUnsignedIntegerType() ||
                           Cond->getRHS()->getType()->isUnsignedIntegerType();
  // Within the type's range too for V (a `char` counter wraps at 256), at most 31 bits.
  auto Fits = [](int64_t X, bool Unsigned, unsigned Bits = 32) {
    const unsigned B = std::min(Bits, 32u) - (Unsigned ? 0 : 1);
    return X < (int64_t(1) << std::min(B, 31u)) && X >= (Unsigned ? 0 : -(int64_t(1) << B));
  };
  const unsigned VBits = Ctx.getIntWidth(V->getType());
  std::optional<InnerRange> Range;
  int64_t X = Start.Constant;
  for (int N = 0;; ++N) {
    const int64_t A = At(L, X), B = At(R, X);
    if (N == 65536 || !Fits(X, VUnsigned, VBits) || !Fits(A, CmpUnsigned) || !Fits(B, CmpUnsigned))
      return std::nullopt;
    bool Holds = false;
    switch (Cond->getOpcode()) {
    case BO_LT: Holds = A < B; break;
    case BO_LE: Holds = A <= B; break;
    case BO_GT: Holds = A > B; break;
    case BO_GE: Holds = A >= B; break;
    case BO_NE: Holds = A != B; break;
    default: return std::nullopt;
    }
    if (!Holds)
      return Range;
    Range = Range ? InnerRange{std::min(Range->Lo, X), std::max(Range->Hi, X), std::abs(Step.Constant)}
                  : InnerRange{X, X, std::abs(Step.Constant)};
    X += Sign * Step.Constant;
  }
}

/// The values V takes where its start differs between threads (`for (int i = threadIdx.x; i < N;
/// i += blockDim.x)`): the start's least value (threadRange), up to the bound of a condition
/// `i < C` or `i <= C` (`C > i`, `C >= i`), C a constant; the step a positive constant or
/// blockDim's. Each value is at least the start, since the step is positive, and passed the
/// condition. V is at least 32 bits, and the bound plus the largest step (1024 for blockDim's)
/// stays within 31 bits, so no increment wraps. Step 0: the values within the range are not known
/// one by one.
std::optional<LoopChecker::InnerRange> LoopChecker::boundedRange(const CountedLoop &Loop) {
  const VarDecl *V = Loop.V;
  const auto *Cond = dyn_cast<BinaryOperator>(Loop.Cond->IgnoreParens());
  if (!Cond || Ctx.getIntWidth(V->getType()) < 32)
    return std::nullopt;
  int64_t Step = 0, MaxStep = 0;
  Affine S;
  VarStep VS = stepOf(Loop.Inc->IgnoreParens());
  if (VS.Var != V || VS.Down)
    return std::nullopt;
  if (!VS.By)
    Step = MaxStep = 1;
  else if (!affine(VS.By, S))
    return std::nullopt;
  else if (S.Terms.empty() && S.Constant > 0 && S.Constant < (int64_t(1) << 20))
    Step = MaxStep = S.Constant;
  else if (S.Terms.size() == 1 && S.Constant >= 0 &&
           (S.Terms.begin()->first == "blockDim.x" || S.Terms.begin()->first == "blockDim.y" ||
            S.Terms.begin()->first == "blockDim.z") &&
           S.Terms.begin()->second >= 1 && S.Terms.begin()->second < 1024)
    MaxStep = S.Terms.begin()->second * 1024 + S.Constant;
  else
    return std::nullopt;
  auto Start = threadRange(Loop.Start);
  if (!Start)
    return std::nullopt;
  // The variable on one side alone, a constant on the other.
  const Expr *VarSide = Cond->getLHS(), *Bound = Cond->getRHS();
  BinaryOperatorKind Op = Cond->getOpcode();
  if (varOf(VarSide->IgnoreParenImpCasts()) != V) {
    std::swap(VarSide, Bound);
    Op = Op == BO_GT ? BO_LT : Op == BO_GE ? BO_LE : BO_Comma;
  }
  Affine B;
  if (varOf(VarSide->IgnoreParenImpCasts()) != V || (Op != BO_LT && Op != BO_LE) || !affine(Bound, B) ||
      !B.Terms.empty() || B.Constant >= (int64_t(1) << 30))
    return std::nullopt;
  if ((VarSide->getType()->isUnsignedIntegerType() || Bound->getType()->isUnsignedIntegerType()) &&
      (Start->first < 0 || B.Constant < 0))
    return std::nullopt;
  const int64_t Hi = Op == BO_LT ? B.Constant - 1 : B.Constant;
  if (Hi < Start->first || Hi + MaxStep >= (int64_t(1) << 31))
    return std::nullopt;
  return InnerRange{Start->first, Hi, Step};
}

/// Records V's range in its inner copy loop, where innerRange or boundedRange finds one.
void LoopChecker::rangeOf(const CountedLoop &Loop) {
  std::optional<InnerRange> R = innerRange(Loop);
  if (!R)
    R = boundedRange(Loop);
  if (R)
    InnerRanges[Loop.V] = *R;
}

/// Whether A and B are the same expression, each name by its declaration.
static bool sameExpr(const ASTContext &Ctx, const Expr *A, const Expr *B) {
  return sameProfile(Ctx, A->IgnoreParenImpCasts(), B->IgnoreParenImpCasts());
}

/// A copy loop over a counter W that the function declares before the tiled loop, as C-style
/// kernels write it: `while (w < N) { s[w] = g[w]; w += T; }`, `for (; w < N; w += T) ...` or
/// `for (w = tx; w < N; w += T) ...`, and then, the next statement of the copy phase, `w = e;`.
/// The rewrite replays the copy phase, loop, counter and reset with it, for a later tile, and one
/// thread's replays and compute phases never interleave. Where every replay and every compute
/// phase leaves W at e's value, each starts with the value it had in the original:
///  - the reset leaves e's value after the copy loop, and the last statement of the body that
///    may change W is such a reset too (holdsAtHeader), so each compute phase leaves it;
///  - e is the same in every iteration, and W escapes nowhere (no call or pointer changes it);
///  - the loop's start is the for-init's, or else W's value where the copy phase starts: then W
///    holds e's value where the tiled loop starts (holdsOnEntry) and nothing of the body before
///    the copy loop names it.
/// Nothing else of the copy phase or the loop's header names W, which reads as the counter of
/// its copy loop only there. Null where the statements at I are no such pair.
std::optional<Verdict> LoopChecker::checkCounterLoop(size_t I) {
  const Stmt *Top = M.CopyPhase[I], *S = Top;
  if (const auto *AS = dyn_cast<AttributedStmt>(S); AS && onlyUnrollHints(AS))
    S = AS->getSubStmt();
  const Expr *Cond = nullptr, *Inc = nullptr, *Start = nullptr, *Reset = nullptr;
  std::vector<const Stmt *> Body;
  if (const auto *While = dyn_cast<WhileStmt>(S)) {
    const auto *CS = dyn_cast<CompoundStmt>(While->getBody());
    if (!CS || CS->body_empty() || While->getConditionVariable())
      return std::nullopt;
    Inc = bareExpr(CS->body_back());
    Cond = While->getCond();
    Body.assign(CS->body_begin(), CS->body_end() - 1);
  } else if (const auto *For = dyn_cast<ForStmt>(S); For && !isa_and_nonnull<DeclStmt>(For->getInit())) {
    if (!For->getCond() || !For->getInc() || For->getConditionVariable())
      return std::nullopt;
    Inc = For->getInc();
    Cond = For->getCond();
    Body = {For->getBody()};
  } else {
    return std::nullopt;
  }
  const VarDecl *W = Inc ? stepOf(Inc->IgnoreParens()).Var : nullptr;
  if (!W || I + 1 == M.CopyPhase.size() || plainSet(M.CopyPhase[I + 1], Reset) != W)
    return std::nullopt;
  if (const auto *For = dyn_cast<ForStmt>(S); For && For->getInit() && plainSet(For->getInit(), Start) != W)
    return std::nullopt;
  const std::string What = "the copy loop's counter " + quoted(W);
  auto Refuse = [&](const std::string &Why) { return Verdict::refuse(Reason::LoadPhase, What + " " + Why); };
  if (!W->hasLocalStorage() || W->isStaticLocal() || isa<ParmVarDecl>(W) || W->getDeclContext() != M.Function ||
      !W->getType()->isIntegerType() || W->getType().isVolatileQualified() || isSharedVar(W))
    return Refuse("is not a local integer of the kernel");
  if (InFunction->Escaped.contains(W))
    return Refuse("escapes: its address is taken, or a reference or a lambda that may change it is bound to it");
  if (isInduction(W) || InLoop.Declared.contains(W) || refsTo(W, M.Cond) || refsTo(W, M.Inc) ||
      refsTo(W, M.Init))
    return Refuse("is declared in the loop, or named by its header");
  for (size_t J = 0; J < M.CopyPhase.size(); ++J)
    if (J != I && J != I + 1 && refsTo(W, M.CopyPhase[J]))
      return Refuse("is named elsewhere in the copy phase, by '" + text(M.CopyPhase[J]).substr(0, 60) + "'");
  if (!editable(Top) || !editable(M.CopyPhase[I + 1]))
    return Verdict::refuse(Reason::Macro, "the copy loop over " + quoted(W) + " or its reset is written in a macro");
  // The value every replay and every compute phase leaves: the same in every iteration.
  if (DepResult D = classify(Reset); refsTo(W, Reset) || D.D != Dep::Invariant)
    return Refuse("is reset to '" + text(Reset) + "', which " +
                  (D.D == Dep::Bad ? D.Why : "is not the same in every iteration"));
  std::string Why;
  if (!holdsAtHeader(W, Reset, Why))
    return Refuse(Why);
  if (Start) {
    if (DepResult D = classify(Start); refsTo(W, Start) || D.D != Dep::Invariant)
      return Refuse("starts at '" + text(Start) + "', which " +
                    (D.D == Dep::Bad ? D.Why : "is not the same in every iteration"));
  } else {
    if (!holdsOnEntry(W, Reset, Why))
      return Refuse("starts at the value it holds where the loop starts, which is not provably '" +
                    text(Reset) + "': " + Why);
    Start = Reset;
  }
  return checkCounterLoopBody(W, Start, Cond, Inc, Body);
}

/// The copy loop of checkCounterLoop: a plain counter, with its bound and step the same in every
/// iteration, around copy statements.
Verdict LoopChecker::checkCounterLoopBody(const VarDecl *W, const Expr *Start, const Expr *Cond, const Expr *Inc,
                                          llvm::ArrayRef<const Stmt *> Body) {
  InnerVars.insert(W);
  LocalFacts Scan;
  Scan.scan(Cond);
  for (const Stmt *S : Body)
    Scan.scan(S);
  if (Scan.Mutated.contains(W))
    return Verdict::refuse(Reason::LoadPhase,
                           "the copy loop's counter " + quoted(W) + " is changed other than by its increment");
  if (Verdict R = sameEachIteration(Cond, "the inner copy loop bound"); !R.ok())
    return R;
  if (const Expr *Step = stepOf(Inc->IgnoreParens()).By)
    if (Verdict R = sameEachIteration(Step, "the inner copy loop step"); !R.ok())
      return R;
  rangeOf({W, Start, Cond, Inc});
  InnerStack.push_back(W);
  Verdict V;
  for (const Stmt *S : Body)
    if (V = checkCopyStmt(S); !V.ok())
      break;
  InnerStack.pop_back();
  return V;
}

/// Whether the last statement of the loop's body that may change W sets it to E0 (a copy of
/// E0's text, each name the same declaration): then each iteration leaves W at E0's value, as
/// no jump leaves the body early (checkControlFlow) and W escapes nowhere.
bool LoopChecker::holdsAtHeader(const VarDecl *W, const Expr *E0, std::string &Why) {
  const Stmt *Body = nullptr;
  if (const auto *For = dyn_cast<ForStmt>(M.Loop))
    Body = For->getBody();
  else if (const auto *While = dyn_cast<WhileStmt>(M.Loop))
    Body = While->getBody();
  const auto *CS = dyn_cast_or_null<CompoundStmt>(Body);
  if (!CS) {
    Why = "is set in a loop of another form";
    return false;
  }
  const Stmt *Last = nullptr;
  for (const Stmt *S : CS->body()) {
    LocalFacts F;
    F.scan(S);
    if (F.Mutated.contains(W))
      Last = S;
  }
  const Expr *Value = nullptr;
  if (!Last || plainSet(Last, Value) != W || !sameExpr(Ctx, Value, E0)) {
    Why = "is not reset to '" + text(E0) + "' by the last statement of the loop's body that changes it" +
          (Last ? " ('" + text(Last).substr(0, 60) + "')" : "");
    return false;
  }
  return true;
}

/// Whether W holds E0's value where the tiled loop's copy phase first starts. Walking back from
/// the loop through its block, and the blocks and if-branches around it, the last statement that
/// names W sets it to E0 (`W = E0;`, or W's declaration), nothing after it changes a variable E0
/// reads, and nothing of the loop's body before the copy loop names W. The function has no goto
/// or label: a jump could enter the loop past that statement.
bool LoopChecker::holdsOnEntry(const VarDecl *W, const Expr *E0, std::string &Why) {
  if (hasJumps(M.Function->getBody())) {
    Why = "the function has a goto or a label";
    return false;
  }
  const Stmt *Body = isa<ForStmt>(M.Loop) ? cast<ForStmt>(M.Loop)->getBody() : cast<WhileStmt>(M.Loop)->getBody();
  for (const Stmt *S : cast<CompoundStmt>(Body)->body()) {
    if (llvm::is_contained(M.CopyPhase, S) && refsTo(W, S))
      break;
    if (refsTo(W, S)) {
      Why = "'" + text(S).substr(0, 60) + "' names it before the copy phase";
      return false;
    }
  }
  llvm::SmallPtrSet<const VarDecl *, 4> Reads;
  for (const NameUse &U : namesIn(E0))
    if (const auto *V = dyn_cast_or_null<VarDecl>(U.Decl))
      Reads.insert(V);
  LocalFacts After; // what runs from the statement that sets W to the loop
  auto Found = [&](const Expr *Value) {
    if (!sameExpr(Ctx, Value, E0))
      Why = "it is set to '" + text(Value) + "' before the loop";
    else if (llvm::any_of(Reads, [&](const VarDecl *V) { return After.changes(V); }))
      Why = "what '" + text(E0) + "' reads changes between that and the loop";
    return Why.empty();
  };
  const Stmt *Cur = M.Hints ? static_cast<const Stmt *>(M.Hints) : M.Loop;
  for (;;) {
    DynTypedNodeList P = Ctx.getParents(*Cur);
    if (P.size() != 1)
      break;
    if (const auto *CS = P[0].get<CompoundStmt>()) {
      auto It = llvm::find(CS->body(), Cur);
      while (It != CS->body_begin()) {
        const Stmt *S = *--It;
        if (const auto *DS = dyn_cast<DeclStmt>(S); DS && llvm::is_contained(DS->decls(), W)) {
          for (auto D = llvm::find(DS->decls(), W) + 1; D != DS->decl_end(); ++D)
            if (const auto *V = dyn_cast<VarDecl>(*D); V && V->getInit()) {
              if (refsTo(W, V->getInit())) {
                Why = "its declaration is followed by '" + V->getName().str() + "', which names it";
                return false;
              }
              After.scan(V->getInit());
            }
          if (W->getInit())
            return Found(W->getInit());
          Why = "it is declared with no value";
          return false;
        }
        if (refsTo(W, S)) {
          const Expr *Value = nullptr;
          if (plainSet(S, Value) == W && !refsTo(W, Value))
            return Found(Value);
          Why = "'" + text(S).substr(0, 60) + "' before the loop changes it";
          return false;
        }
        After.scan(S);
      }
      Cur = CS;
      continue;
    }
    const auto *If = P[0].get<IfStmt>();
    if (!If || (If->getThen() != Cur && If->getElse() != Cur) || If->getInit() || If->getConditionVariable())
      break;
    if (refsTo(W, If->getCond())) {
      Why = "the if around the loop names it";
      return false;
    }
    After.scan(If->getCond());
    Cur = If;
  }
  Why = "no statement before the loop sets it";
  return false;
}

} // namespace tilepipe::check

// The copy phase, statement by statement: tile declarations, index variables, guarded stores,
// inner copy loops, and the tile stores themselves (TileStores.cpp).
#include "LoopChecker.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/Basic/SourceManager.h"
#include "clang/AST/RecursiveASTVisitor.h"

using namespace clang;

namespace tilepipe::check {

/// Whether every use of V in FD is the value a store into a __shared__ array stores, whole or
/// through members (`s[..] = v;`, `s[..] = v.x;`): the uses a local read through must have.
static bool valueRedefinition(const Stmt *S, const VarDecl *&V, const Expr *&Read, const DeclRefExpr *&Lhs);

std::vector<const DeclRefExpr *> usesOf(const FunctionDecl *FD, const VarDecl *V) {
  struct Uses : RecursiveASTVisitor<Uses> {
    const VarDecl *V;
    std::vector<const DeclRefExpr *> Found;
    bool shouldVisitLambdaBody() const { return true; }
    bool VisitDeclRefExpr(DeclRefExpr *E) {
      if (E->getDecl() == V)
        Found.push_back(E);
      return true;
    }
  } U;
  U.V = V;
  U.TraverseStmt(FD->getBody());
  return U.Found;
}

static bool usedOnlyAsStoredValue(ASTContext &Ctx, const FunctionDecl *FD, const VarDecl *V,
                                  llvm::ArrayRef<const Stmt *> CopyPhase) {
  const std::vector<const DeclRefExpr *> Found = usesOf(FD, V);
  auto IntoTile = [](const Expr *L) {
    const VarDecl *T = varOf(targetSpine(L));
    return T && isSharedVar(T);
  };
  // Set again at the top level of the copy phase (`v = P[j];`): a definition, not a use.
  llvm::SmallPtrSet<const DeclRefExpr *, 4> Redefined;
  for (const Stmt *S : CopyPhase) {
    const VarDecl *W;
    const Expr *Read;
    const DeclRefExpr *Lhs;
    if (valueRedefinition(S, W, Read, Lhs) && W == V)
      Redefined.insert(Lhs);
  }
  for (const DeclRefExpr *E : Found) {
    if (Redefined.contains(E))
      continue;
    const Expr *Cur = E;
    for (;;) {
      DynTypedNodeList P = Ctx.getParents(*Cur);
      const Expr *Up = P.size() == 1 ? P[0].get<Expr>() : nullptr;
      if (!Up)
        return false;
      const auto *ICE = dyn_cast<ImplicitCastExpr>(Up);
      const auto *ME = dyn_cast<MemberExpr>(Up);
      if (isa<ParenExpr>(Up) || (ME && !ME->isArrow()) ||
          (ICE && (ICE->getCastKind() == CK_LValueToRValue || ICE->getCastKind() == CK_NoOp))) {
        Cur = Up;
        continue;
      }
      if (const auto *BO = dyn_cast<BinaryOperator>(Up);
          BO && BO->getOpcode() == BO_Assign && BO->getRHS() == Cur && IntoTile(BO->getLHS()))
        break;
      if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(Up);
          OC && OC->getOperator() == OO_Equal && OC->getNumArgs() == 2 && OC->getArg(1) == Cur &&
          IntoTile(OC->getArg(0)))
        break;
      return false;
    }
  }
  return !Found.empty();
}

/// The read of global memory that Value is, `P[i]` or `*P` of type T with no conversion (a class
/// type copied by its trivial copy constructor or assignment), or `P[i]` of `__ldg(&P[i])`; or
/// null.
static const Expr *plainReadOf(const SourceManager &SM, const Expr *Value, QualType T) {
  const Expr *E = skipCleanups(Value)->IgnoreParens();
  // A class-typed local (float4) is copy-constructed from the element, trivially.
  if (isa<CXXConstructExpr>(E) && !(E = trivialCopySource(E)))
    return nullptr;
  E = stripNoOps(E);
  if (const Expr *Element = readOnlyLoadOf(SM, E)) // `__ldg(&A[i])` reads A[i]
    E = Element;
  bool Read = isa<ArraySubscriptExpr>(E) ||
              (isa<UnaryOperator>(E) && cast<UnaryOperator>(E)->getOpcode() == UO_Deref);
  if (!Read || E->getType().getUnqualifiedType().getCanonicalType() != T.getUnqualifiedType().getCanonicalType())
    return nullptr;
  return E;
}

/// The read of global memory a local is set from (`float4 v = A4[i];`), or null.
static const Expr *plainReadInit(const VarDecl *V) {
  if (!V->getInit() || V->isStaticLocal() || V->getType()->isReferenceType() || V->getType()->isArrayType() ||
      V->isConstexpr() || V->getType().isVolatileQualified())
    return nullptr;
  return plainReadOf(V->getASTContext().getSourceManager(), V->getInit(), V->getType());
}

/// The read a single-declaration DS sets its local from, where the local is one a tile store reads
/// through (set from one read of global memory, and used only as the value of tile stores), or
/// null.
static const Expr *valueLocalRead(ASTContext &Ctx, const LoopModel &M, const DeclStmt *DS) {
  const auto *V = DS->isSingleDecl() ? dyn_cast<VarDecl>(DS->getSingleDecl()) : nullptr;
  const Expr *Read = V ? plainReadInit(V) : nullptr;
  return Read && usedOnlyAsStoredValue(Ctx, M.Function, V, M.CopyPhase) ? Read : nullptr;
}

/// `v = P[i];`, a statement that sets the local V again from one read of global memory, as a
/// copy phase that reuses one register for two tiles does; V and the read, or false.
static bool valueRedefinition(const Stmt *S, const VarDecl *&V, const Expr *&Read, const DeclRefExpr *&Lhs) {
  const Expr *L, *R;
  if (!splitAssignment(S, L, R))
    return false;
  if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(bareExpr(S)))
    if (const auto *MD = dyn_cast_or_null<CXXMethodDecl>(OC->getDirectCallee()); !MD || !MD->isTrivial())
      return false;
  Lhs = dyn_cast<DeclRefExpr>(L->IgnoreParens());
  V = Lhs ? dyn_cast<VarDecl>(Lhs->getDecl()) : nullptr;
  if (!V || !V->hasLocalStorage() || V->getType()->isReferenceType() || V->getType().isVolatileQualified() ||
      V->getType().isConstQualified())
    return false;
  Read = plainReadOf(V->getASTContext().getSourceManager(), R, V->getType());
  return Read != nullptr;
}

/// Each statement is judged alone: one refused does not hide the next one's blocker.
Verdict LoopChecker::checkCopyPhase() {
  struct Decls : RecursiveASTVisitor<Decls> {
    const SourceManager *SM;
    std::vector<std::pair<std::string, unsigned>> *Out;
    bool shouldVisitLambdaBody() const { return true; }
    bool VisitNamedDecl(NamedDecl *D) {
      Out->emplace_back(D->getDeclName().getAsString(),
                        SM->getFileOffset(SM->getExpansionLoc(D->getLocation())));
      return true;
    }
  } D;
  D.SM = &SM;
  D.Out = &CopyPhaseDecls;
  for (const Stmt *S : M.CopyPhase)
    D.TraverseStmt(const_cast<Stmt *>(S));
  Verdict Out;
  for (size_t I = 0; I < M.CopyPhase.size(); ++I) {
    const Stmt *S = M.CopyPhase[I];
    const auto *DS = dyn_cast<DeclStmt>(S);
    size_t Stores = M.Stores.size(), SiteCount = Sites.size(), Inner = InnerStack.size();
    // A copy loop over a counter of the function's, with the statement after it that resets the
    // counter (checkCounterLoop); a statement that sets a local: one set before its reads
    // (checkSliceAssignment), or a value local set again (checkRedefinition); else a copy
    // statement.
    std::optional<Verdict> Counter = DS ? std::nullopt : checkCounterLoop(I);
    std::optional<Verdict> SetsLocal = DS || Counter ? std::nullopt : checkSliceAssignment(S);
    if (!DS && !Counter && !SetsLocal)
      SetsLocal = checkRedefinition(S);
    Verdict V = DS ? checkCopyDecl(DS) : Counter ? *Counter : SetsLocal ? *SetsLocal : checkCopyStmt(S);
    if (Counter) // the reset is judged with the loop
      ++I;
    if (V.ok())
      continue;
    Out.block(V);
    RefusedCopy.push_back(S);
    if (Counter)
      RefusedCopy.push_back(M.CopyPhase[I]);
    // Nothing of a refused statement stays in the model; the variables it declares read as
    // values the loop does not change, so that what reads them is judged for itself.
    M.Stores.resize(Stores);
    Sites.resize(SiteCount);
    InnerStack.resize(Inner);
    if (DS)
      for (const Decl *D : DS->decls())
        if (const auto *Var = dyn_cast<VarDecl>(D); Var && !isSharedVar(Var))
          RefusedVars.insert(Var);
  }
  Out.block(checkValueLocalsUsed());
  if (!Out.ok())
    return Out;
  if (M.Stores.empty())
    return Verdict::refuse(Reason::LoadPhase, "the copy phase stores into no tile");
  bool AnyCopy = llvm::any_of(M.Stores, [](const TileStore &S) { return S.Src != nullptr; });
  if (!AnyCopy)
    return Verdict::refuse(Reason::LoadPhase, "the copy phase reads no global memory");
  return {};
}

/// A declaration at the top of the copy phase: tiles (all __shared__), or index variables.
Verdict LoopChecker::checkCopyDecl(const DeclStmt *DS) {
  bool AllShared = true, AnyShared = false;
  for (const Decl *D : DS->decls()) {
    const auto *V = dyn_cast<VarDecl>(D);
    bool Sh = isSharedVar(V);
    AllShared &= Sh;
    AnyShared |= Sh;
  }
  if (AnyShared && !AllShared)
    return Verdict::refuse(Reason::TileDeclaration,
                           "a declaration mixes __shared__ arrays and other variables");
  if (AllShared) {
    for (const Decl *D : DS->decls())
      if (Verdict V = addTile(cast<VarDecl>(D), DS); !V.ok())
        return V;
    return {};
  }
  if (const Expr *Read = valueLocalRead(Ctx, M, DS))
    return checkValueDecl(DS, Read);
  if (std::optional<Verdict> View = checkViewLocal(DS))
    return *View;
  for (const Decl *D : DS->decls()) {
    const auto *V = dyn_cast<VarDecl>(D);
    if (!V || !V->getInit() || V->isStaticLocal() || V->getType()->isReferenceType() ||
        V->getType()->isArrayType() || !V->getType()->isScalarType())
      return Verdict::refuse(Reason::LoadPhase,
                             "the declaration '" + text(DS) + "' is not a plain index variable");
    DepResult Dep0 = classify(V->getInit());
    if (Dep0.D == Dep::Bad)
      return Verdict::refuse(Reason::AddressNotInvariant,
                             "the index variable " + quoted(V) + " " + Dep0.Why);
    IndexDeclDeps[V] = Dep0;
  }
  if (!editable(DS))
    return Verdict::refuse(Reason::Macro, "a declaration in the copy phase is in a macro");
  M.IndexDecls.push_back(DS);
  return {};
}

/// A local that a tile store reads through (`float4 v = A4[i];`): its read is one the copies may
/// issue ahead, and every use of the local is a tile store's value (checkValueLocalsUsed).
Verdict LoopChecker::checkValueDecl(const DeclStmt *DS, const Expr *Read) {
  const auto *V = cast<VarDecl>(DS->getSingleDecl());
  if (!editable(DS))
    return Verdict::refuse(Reason::Macro, "a declaration in the copy phase is in a macro");
  if (!V->getType().isTriviallyCopyableType(Ctx))
    return Verdict::refuse(Reason::LoadPhase, "the local " + quoted(V) + " is not trivially copyable");
  if (Verdict R = checkGlobalRead(DS, Read); !R.ok())
    return R;
  ValueLocals[V] = Read;
  ValueDefAt[V] = DS;
  M.ValueDefs.push_back(DS);
  return {};
}

/// `v = P[j];` at the top level of the copy phase, setting a local that tile stores read through
/// again: the stores after it read through the new read, which must be one the copies may issue
/// ahead, as the declaration's was. Nothing where S is no such statement.
std::optional<Verdict> LoopChecker::checkRedefinition(const Stmt *S) {
  const VarDecl *V;
  const Expr *Read;
  const DeclRefExpr *Lhs;
  if (!valueRedefinition(S, V, Read, Lhs) || !ValueLocals.count(V))
    return std::nullopt;
  if (!editable(S))
    return Verdict::refuse(Reason::Macro, "a statement of the copy phase is in a macro");
  if (Verdict R = checkGlobalRead(S, Read); !R.ok())
    return R;
  ValueLocals[V] = Read;
  ValueDefAt[V] = S;
  ValueUses.insert(Lhs);
  M.ValueDefs.push_back(S);
  return Verdict{};
}

/// A declaration inside a block or an inner copy loop of the copy phase: a local that tile stores
/// read through, or an index variable of that block (`int xo = ...`), which the rewrite replays
/// with the block.
Verdict LoopChecker::checkNestedDecl(const DeclStmt *DS) {
  if (!editable(DS))
    return Verdict::refuse(Reason::Macro, "a declaration in the copy phase is in a macro");
  if (const Expr *Read = valueLocalRead(Ctx, M, DS))
    return checkValueDecl(DS, Read);
  if (std::optional<Verdict> View = checkViewLocal(DS))
    return *View;
  for (const Decl *D : DS->decls()) {
    const auto *V = dyn_cast<VarDecl>(D);
    if (!V || isSharedVar(V) || !V->getInit() || V->isStaticLocal() || V->getType()->isReferenceType() ||
        V->getType()->isArrayType() || !V->getType()->isScalarType())
      return Verdict::refuse(Reason::LoadPhase,
                             "the declaration '" + text(DS) + "' is not a plain index variable");
    DepResult Dep0 = classify(V->getInit());
    if (Dep0.D == Dep::Bad)
      return Verdict::refuse(Reason::AddressNotInvariant, "the index variable " + quoted(V) + " " + Dep0.Why);
    IndexDeclDeps[V] = Dep0;
    NestedIndexVars.push_back(V);
  }
  return {};
}

/// The cast a pointer local is set from, where it views a tile: `(V *)&t[i]...[k]`,
/// `reinterpret_cast<V *>(&t[..])`, `(V *)t`; or null.
static const ExplicitCastExpr *tileViewCast(const Expr *Init) {
  const Expr *E = skipCleanups(Init)->IgnoreParens();
  const Expr *Viewed = viewedLValue(E);
  const VarDecl *T = Viewed ? varOf(targetSpine(Viewed)) : nullptr;
  return T && isSharedVar(T) ? cast<ExplicitCastExpr>(E) : nullptr;
}

/// Whether every use of V in the function is the pointer of a store's target: `*V = ..` or
/// `V[k] = ..` (the store the copy phase checks as a tile store through V's cast).
static bool usedOnlyAsStoreTarget(ASTContext &Ctx, const FunctionDecl *FD, const VarDecl *V) {
  // The one parent of X, past parentheses.
  auto Parent = [&](const Expr *X) -> const Expr * {
    for (;;) {
      DynTypedNodeList P = Ctx.getParents(*X);
      X = P.size() == 1 ? P[0].get<Expr>() : nullptr;
      if (!X || !isa<ParenExpr>(X))
        return X;
    }
  };
  std::vector<const DeclRefExpr *> Found = usesOf(FD, V);
  return !Found.empty() && llvm::all_of(Found, [&](const DeclRefExpr *E) {
    // V, read (lvalue-to-rvalue), then `*` or the base of `[]`, and that the left side of `=`.
    const auto *ICE = dyn_cast_or_null<ImplicitCastExpr>(Parent(E));
    if (!ICE || ICE->getCastKind() != CK_LValueToRValue)
      return false;
    const Expr *Up = Parent(ICE), *Target = nullptr;
    if (const auto *UO = dyn_cast_or_null<UnaryOperator>(Up); UO && UO->getOpcode() == UO_Deref)
      Target = UO;
    else if (const auto *ASE = dyn_cast_or_null<ArraySubscriptExpr>(Up); ASE && ASE->getBase()->IgnoreParenImpCasts() == E)
      Target = ASE;
    const Expr *Assign = Target ? Parent(Target) : nullptr, *L, *R;
    return Assign && splitAssignment(Assign, L, R) && L->IgnoreParens() == Target;
  });
}

/// `V *const d = (V *)&t[i]...[k];`, a pointer local that views a tile, stored through alone
/// (`*d = *src;`, cuda-samples' MatrixMulNaiveLargeChunk): the stores through it are tile
/// stores through its cast (targetOf), as if the cast stood in them. That holds where its
/// initializer has, at every store, the value it had at the declaration: each variable it names
/// is a tile (whose address it takes), one the loop does not change, an induction variable
/// (stepped after the copy phase), or the variable of an inner copy loop around the declaration
/// (stepped after its body); and the local itself never changes and escapes nowhere. Nothing
/// where DS is no such declaration.
std::optional<Verdict> LoopChecker::checkViewLocal(const DeclStmt *DS) {
  const auto *V = DS->isSingleDecl() ? dyn_cast<VarDecl>(DS->getSingleDecl()) : nullptr;
  const ExplicitCastExpr *Cast =
      V && V->getType()->isPointerType() && V->getInit() && !V->isStaticLocal() ? tileViewCast(V->getInit()) : nullptr;
  if (!Cast || !usedOnlyAsStoreTarget(Ctx, M.Function, V))
    return std::nullopt;
  if (InLoop.Mutated.contains(V) || InFunction->Escaped.contains(V) || V->getType().isVolatileQualified())
    return Verdict::refuse(Reason::LoadPhase, "the pointer " + quoted(V) + " into a tile is changed or escapes");
  for (const NameUse &U : namesIn(V->getInit())) {
    const auto *X = dyn_cast<VarDecl>(U.Decl);
    if (!X || isSharedVar(X) || !InLoop.Mutated.contains(X) || isInduction(X) ||
        (ForInnerVars.contains(X) && llvm::is_contained(InnerStack, X)))
      continue;
    return Verdict::refuse(Reason::LoadPhase, "the pointer " + quoted(V) + " into a tile reads " + quoted(X) +
                                                  ", which the copy phase may change before a store through it");
  }
  const VarDecl *T = varOf(targetSpine(Cast));
  if (auto It = TileIndex.find(T); It != TileIndex.end() && M.Tiles[It->second].DeclaredInBody)
    return Verdict::refuse(Reason::LoadPhase, "the pointer " + quoted(V) + " views " + quoted(T) +
                                                  ", which the loop body declares");
  ViewLocals[V] = Cast;
  return Verdict{};
}

/// Every use of a local of checkValueDecl is the value of a tile store; the local is never
/// written, and its address is never taken, so the read is all it holds.
Verdict LoopChecker::checkValueLocalsUsed() {
  struct Uses : RecursiveASTVisitor<Uses> {
    const llvm::DenseMap<const VarDecl *, const Expr *> *Locals;
    const llvm::SmallPtrSet<const DeclRefExpr *, 8> *Known;
    const DeclRefExpr *Other = nullptr;
    bool shouldVisitLambdaBody() const { return true; }
    bool VisitDeclRefExpr(DeclRefExpr *E) {
      if (const auto *V = dyn_cast<VarDecl>(E->getDecl()); V && Locals->count(V) && !Known->contains(E))
        Other = E;
      return !Other;
    }
  } U;
  U.Locals = &ValueLocals;
  U.Known = &ValueUses;
  U.TraverseStmt(M.Function->getBody());
  if (U.Other)
    return Verdict::refuse(Reason::LoadPhase,
                           quoted(U.Other->getDecl()) + " is read at line " +
                               std::to_string(SM.getExpansionLineNumber(U.Other->getLocation())) +
                               " other than as the value of a tile store");
  return {};
}

Verdict LoopChecker::checkCopyStmt(const Stmt *S) {
  if (isa<NullStmt>(S))
    return {};
  if (const auto *DS = dyn_cast<DeclStmt>(S))
    return checkNestedDecl(DS);
  if (const auto *CS = dyn_cast<CompoundStmt>(S)) {
    for (const Stmt *C : CS->body())
      if (Verdict V = checkCopyStmt(C); !V.ok())
        return V;
    return {};
  }
  if (const auto *If = dyn_cast<IfStmt>(S))
    return checkCopyIf(If);
  if (const auto *For = dyn_cast<ForStmt>(S))
    return checkInnerCopyLoop(For);
  // `#pragma unroll` (or nounroll) on an inner copy loop: still a copy loop, and its text, pragma
  // and all, moves with the copy phase.
  if (const auto *AS = dyn_cast<AttributedStmt>(S); AS && isa<ForStmt>(AS->getSubStmt()) && onlyUnrollHints(AS))
    return checkInnerCopyLoop(cast<ForStmt>(AS->getSubStmt()));
  const Expr *LHS, *RHS;
  if (splitAssignment(S, LHS, RHS))
    return checkStore(S, LHS, RHS);
  if (std::optional<HelperCopy> H = helperStore(S))
    return checkHelperStore(S, *H);
  return Verdict::refuse(Reason::LoadPhase, "'" + text(S).substr(0, 60) + "'");
}

/// An if in the copy phase. A guard the same in every iteration just selects the copies; one that
/// depends on the iteration must store into the same element either way (checkGuardedStore).
Verdict LoopChecker::checkCopyIf(const IfStmt *If) {
  if (If->getInit() || If->getConditionVariable() || If->isConstexpr() || If->isConsteval())
    return Verdict::refuse(Reason::LoadPhase, "an if with an initializer or constexpr");
  DepResult D = classify(If->getCond());
  if (D.D == Dep::Bad)
    return Verdict::refuse(Reason::AddressNotInvariant,
                           "the guard '" + text(If->getCond()) + "' " + D.Why);
  if (D.D == Dep::Iteration)
    return checkGuardedStore(If);
  // Where the guard has one value throughout the iteration, the stores of its two sides never
  // both run in it (checkOverlap).
  const bool Fixed = fixedInIteration(If->getCond());
  auto Side = [&](const Stmt *S, bool Then) {
    if (Fixed)
      BranchStack.push_back({If, Then});
    Verdict V = checkCopyStmt(S);
    if (Fixed)
      BranchStack.pop_back();
    return V;
  };
  if (Verdict V = Side(If->getThen(), true); !V.ok())
    return V;
  if (If->getElse())
    return Side(If->getElse(), false);
  return {};
}

/// Whether Cond, a guard that does not depend on the iteration (classify), has one value wherever
/// the copy phase evaluates it in one iteration: it names no variable the loop declares (an inner
/// copy loop's, an index variable of the copy phase) and none it changes (a local the copy phase
/// sets among them).
bool LoopChecker::fixedInIteration(const Expr *Cond) {
  return llvm::none_of(namesIn(Cond), [&](const NameUse &U) {
    const auto *V = dyn_cast<VarDecl>(U.Decl);
    return V && (InLoop.Declared.contains(V) || InLoop.Mutated.contains(V));
  });
}

/// The statements of S (one, or a block's, through nested blocks), or none where S is empty.
static std::vector<const Stmt *> statementsOf(const Stmt *S) {
  std::vector<const Stmt *> Out;
  if (!S)
    return Out;
  if (const auto *CS = dyn_cast<CompoundStmt>(S)) {
    for (const Stmt *C : CS->body())
      for (const Stmt *X : statementsOf(C))
        Out.push_back(X);
    return Out;
  }
  if (!isa<NullStmt>(S))
    Out.push_back(S);
  return Out;
}

/// `if (c) tile[..] = a; else tile[..] = b;` with a guard that depends on the iteration; or, in
/// the bounds-checked GEMM of the textbooks, `if (c) { As[..] = A[..]; Bs[..] = B[..]; } else
/// { As[..] = 0; Bs[..] = 0; }`: each element the one branch stores, the other stores too.
Verdict LoopChecker::checkGuardedStore(const IfStmt *If) {
  // Every iteration must write the same elements, or a stage buffer would keep a stale value.
  const std::string G = "'if (" + text(If->getCond()) + ")'";
  if (!If->getElse())
    return Verdict::refuse(Reason::GuardWithoutFill, G + " has no else branch");
  std::vector<const Stmt *> Then = statementsOf(If->getThen()), Else = statementsOf(If->getElse());
  std::vector<std::pair<const Expr *, const Expr *>> ThenLR(Then.size()), ElseLR(Else.size());
  for (size_t I = 0; I < Then.size(); ++I)
    if (!splitAssignment(Then[I], ThenLR[I].first, ThenLR[I].second))
      return Verdict::refuse(Reason::GuardWithoutFill, "the branch of " + G + " holds '" + text(Then[I]) +
                                                           "', which is no store into a tile");
  for (size_t I = 0; I < Else.size(); ++I)
    if (!splitAssignment(Else[I], ElseLR[I].first, ElseLR[I].second))
      return Verdict::refuse(Reason::GuardWithoutFill, "the else branch of " + G + " holds '" +
                                                           text(Else[I]) + "', which is no store into a tile");
  // One to one, by the element each writes, as written: the same text in both branches.
  std::vector<size_t> Match(Then.size(), Else.size());
  std::vector<bool> Taken(Else.size(), false);
  for (size_t I = 0; I < Then.size(); ++I)
    for (size_t J = 0; J < Else.size(); ++J)
      if (!Taken[J] && text(ThenLR[I].first) == text(ElseLR[J].first)) {
        Match[I] = J;
        Taken[J] = true;
        break;
      }
  if (Then.empty() || Then.size() != Else.size() ||
      llvm::any_of(Match, [&](size_t J) { return J == Else.size(); }))
    return Verdict::refuse(Reason::GuardWithoutFill,
                           "the branches of " + G + " do not write the same tile elements");
  // Each store of a branch is guarded by the if (around the ?: the branch may hold).
  auto Mark = [&](size_t From, bool Holds) {
    for (size_t I = From; I < M.Stores.size(); ++I) {
      TileStore &Added = M.Stores[I];
      if (Added.Guards++ == 0) {
        Added.Guard = If->getCond();
        Added.GuardIf = If;
        Added.WhenGuardHolds = Holds;
      }
    }
  };
  for (size_t I = 0; I < Then.size(); ++I) {
    size_t Before = M.Stores.size();
    if (Verdict V = checkStore(Then[I], ThenLR[I].first, ThenLR[I].second); !V.ok())
      return V;
    Mark(Before, true);
    Sites.pop_back(); // both branches' stores of an element are one site
    Before = M.Stores.size();
    const size_t J = Match[I];
    if (Verdict V = checkStore(Else[J], ElseLR[J].first, ElseLR[J].second); !V.ok())
      return V;
    Mark(Before, false);
  }
  return {};
}

} // namespace tilepipe::check

// Whether a value is the same in every thread of a block, and whether every thread reaches a
// statement. See tilepipe/Effects.h.
#include "tilepipe/Effects.h"
#include "tilepipe/AstUtil.h"
#include "EffectsUtil.h"
#include "tilepipe/Check.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"

using namespace clang;

namespace tilepipe {

//===----------------------------------------------------------------------===//
// Uniformity and reachability
//===----------------------------------------------------------------------===//

static bool differs(ASTContext &Ctx, EffectsAnalyzer &Fx, const FunctionDecl *F, const Expr *E,
                    unsigned Depth);

/// A for loop's own counter that every thread of a block steps alike: declared in the loop's
/// init from a value the same in all threads, changed only by the loop's increment, by a step
/// the same in all threads (`++v`, `v += s`).
static bool uniformCounter(ASTContext &Ctx, EffectsAnalyzer &Fx, const FunctionDecl *F,
                           const VarDecl *V, unsigned Depth) {
  if (!V->getInit() || V->getType()->isReferenceType())
    return false;
  DynTypedNodeList P = Ctx.getParents(*V);
  const DeclStmt *DS = P.empty() ? nullptr : P[0].get<DeclStmt>();
  if (!DS)
    return false;
  P = Ctx.getParents(*DS);
  const ForStmt *For = P.empty() ? nullptr : P[0].get<ForStmt>();
  if (!For || For->getInit() != DS || !For->getInc())
    return false;
  LocalFacts Body;
  Body.scan(For->getBody());
  Body.scan(For->getCond());
  if (Body.changes(V))
    return false;
  const Expr *Inc = For->getInc()->IgnoreParens();
  const Expr *Target = nullptr, *Step = nullptr;
  if (const auto *UO = dyn_cast<UnaryOperator>(Inc); UO && UO->isIncrementDecrementOp())
    Target = UO->getSubExpr();
  else if (const auto *CAO = dyn_cast<CompoundAssignOperator>(Inc);
           CAO && (CAO->getOpcode() == BO_AddAssign || CAO->getOpcode() == BO_SubAssign)) {
    Target = CAO->getLHS();
    Step = CAO->getRHS();
  }
  const auto *DRE = Target ? dyn_cast<DeclRefExpr>(Target->IgnoreParenImpCasts()) : nullptr;
  if (!DRE || DRE->getDecl() != V)
    return false;
  return !differs(Ctx, Fx, F, V->getInit(), Depth + 1) &&
         (!Step || !differs(Ctx, Fx, F, Step, Depth + 1));
}

static bool differs(ASTContext &Ctx, EffectsAnalyzer &Fx, const FunctionDecl *F, const Expr *E,
                    unsigned Depth) {
  if (!E || Depth > MaxDepth)
    return true;
  E = E->IgnoreParens();
  std::string Name;
  if (isBuiltinIndexRead(E, &Name))
    return !(StringRef(Name).starts_with("blockIdx") || StringRef(Name).starts_with("blockDim") ||
             StringRef(Name).starts_with("gridDim") ||
             StringRef(Name).contains("ctaid") || StringRef(Name).contains("ntid") ||
             StringRef(Name).contains("nctaid"));
  if (isa<IntegerLiteral, FloatingLiteral, CharacterLiteral, CXXBoolLiteralExpr,
          UnaryExprOrTypeTraitExpr, CXXNullPtrLiteralExpr>(E))
    return false;
  if (const auto *CE = dyn_cast<ConstantExpr>(E))
    return differs(Ctx, Fx, F, CE->getSubExpr(), Depth + 1);
  if (const auto *ST = dyn_cast<SubstNonTypeTemplateParmExpr>(E))
    return differs(Ctx, Fx, F, ST->getReplacement(), Depth + 1);
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
    const ValueDecl *D = DRE->getDecl();
    if (isa<EnumConstantDecl, NonTypeTemplateParmDecl>(D))
      return false;
    const auto *V = dyn_cast<VarDecl>(D);
    if (!V)
      return true;
    if (isConstantVar(V))
      return false;
    if (!V->hasLocalStorage() || isSharedVar(V) || V->getType()->isReferenceType())
      return true;
    const FunctionDecl *Owner = dyn_cast<FunctionDecl>(V->getDeclContext());
    if (!Owner || Fx.localFacts(Owner).Escaped.contains(V))
      return true;
    if (Fx.localFacts(Owner).Mutated.contains(V))
      return !uniformCounter(Ctx, Fx, F, V, Depth);
    if (isa<ParmVarDecl>(V))
      return !Owner->hasAttr<CUDAGlobalAttr>(); // a kernel's parameters are the same in all threads
    return !V->getInit() || differs(Ctx, Fx, F, V->getInit(), Depth + 1);
  }
  if (const auto *ICE = dyn_cast<ImplicitCastExpr>(E)) {
    if (ICE->getCastKind() == CK_LValueToRValue && !isa<DeclRefExpr>(ICE->getSubExpr()->IgnoreParens()))
      return true; // a read of memory
    return differs(Ctx, Fx, F, ICE->getSubExpr(), Depth + 1);
  }
  if (const auto *CE = dyn_cast<ExplicitCastExpr>(E))
    return differs(Ctx, Fx, F, CE->getSubExpr(), Depth + 1);
  if (const auto *UO = dyn_cast<UnaryOperator>(E)) {
    if (UO->isIncrementDecrementOp() || UO->getOpcode() == UO_Deref || UO->getOpcode() == UO_AddrOf)
      return true;
    return differs(Ctx, Fx, F, UO->getSubExpr(), Depth + 1);
  }
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    if (BO->isAssignmentOp() || BO->getOpcode() == BO_Comma)
      return true;
    return differs(Ctx, Fx, F, BO->getLHS(), Depth + 1) ||
           differs(Ctx, Fx, F, BO->getRHS(), Depth + 1);
  }
  if (const auto *CO = dyn_cast<ConditionalOperator>(E))
    return differs(Ctx, Fx, F, CO->getCond(), Depth + 1) ||
           differs(Ctx, Fx, F, CO->getTrueExpr(), Depth + 1) ||
           differs(Ctx, Fx, F, CO->getFalseExpr(), Depth + 1);
  if (const auto *Call = dyn_cast<CallExpr>(E)) {
    if (isa<CXXOperatorCallExpr, CXXMemberCallExpr>(Call) || !Fx.isPure(Call->getDirectCallee()))
      return true;
    for (const Expr *A : Call->arguments())
      if (differs(Ctx, Fx, F, A, Depth + 1))
        return true;
    return false;
  }
  return true;
}

bool mayDifferAcrossThreads(ASTContext &Ctx, EffectsAnalyzer &Effects, const FunctionDecl *F,
                            const Expr *E) {
  return differs(Ctx, Effects, F, E, 0);
}

namespace {
/// Finds what can make some threads of a block, and not others, leave the kernel or skip ahead
/// inside a statement: return, break or continue under a condition that may differ between
/// threads, goto, inline assembly (it may exit). A return that every thread of the block takes
/// together (under conditions the same in all of them) leaves no thread behind, so it counts
/// not. In called functions of this file, only what leaves the kernel counts.
struct ExitFinder : RecursiveASTVisitor<ExitFinder> {
  ASTContext &Ctx;
  EffectsAnalyzer &Fx;
  const FunctionDecl *F;
  bool InCallee;
  unsigned CallDepth;
  unsigned Nest = 0;       ///< loops and switches entered: a break or continue there stays inside
  unsigned NonUniform = 0; ///< conditions entered that may differ between threads
  std::string Found;
  const Stmt *At = nullptr;
  ExitFinder(ASTContext &Ctx, EffectsAnalyzer &Fx, const FunctionDecl *F, bool InCallee,
             unsigned CallDepth)
      : Ctx(Ctx), Fx(Fx), F(F), InCallee(InCallee), CallDepth(CallDepth) {}
  bool TraverseLambdaExpr(LambdaExpr *) { return true; }
  bool shouldVisitImplicitCode() const { return true; }
  bool differs(const Expr *Cond) {
    return !Cond || mayDifferAcrossThreads(Ctx, Fx, F, Cond);
  }
  template <class T> bool nested(T *S, const Expr *Cond) {
    bool D = differs(Cond);
    ++Nest;
    NonUniform += D;
    bool R = RecursiveASTVisitor<ExitFinder>::TraverseStmt(S->getBody());
    NonUniform -= D;
    --Nest;
    return R;
  }
  bool TraverseIfStmt(IfStmt *S) {
    if (!TraverseStmt(S->getInit()) || !TraverseStmt(S->getCond()))
      return false;
    bool D = S->getConditionVariable() || differs(S->getCond());
    NonUniform += D;
    bool R = TraverseStmt(S->getThen()) && TraverseStmt(S->getElse());
    NonUniform -= D;
    return R;
  }
  bool TraverseForStmt(ForStmt *S) {
    return TraverseStmt(S->getInit()) && TraverseStmt(S->getCond()) && TraverseStmt(S->getInc()) &&
           nested(S, S->getCond());
  }
  bool TraverseWhileStmt(WhileStmt *S) {
    return TraverseStmt(S->getCond()) && nested(S, S->getCond());
  }
  bool TraverseDoStmt(DoStmt *S) { return TraverseStmt(S->getCond()) && nested(S, S->getCond()); }
  bool TraverseSwitchStmt(SwitchStmt *S) {
    return TraverseStmt(S->getCond()) && nested(S, S->getCond());
  }
  bool TraverseCXXForRangeStmt(CXXForRangeStmt *S) {
    // Its header runs calls of its own: begin(), end(), operator!=, operator++, operator*.
    Stmt *Header[] = {S->getInit(),    S->getRangeStmt(), S->getBeginStmt(), S->getEndStmt(),
                      S->getCond(),    S->getInc(),       S->getLoopVarStmt()};
    for (Stmt *Part : Header)
      if (!TraverseStmt(Part))
        return false;
    return nested(S, nullptr);
  }
  bool found(const Stmt *S, std::string What) {
    Found = std::move(What);
    At = S;
    return false;
  }
  bool VisitReturnStmt(ReturnStmt *S) {
    return InCallee || !NonUniform ? true : found(S, "a 'return'");
  }
  bool VisitGotoStmt(GotoStmt *S) { return InCallee ? true : found(S, "a 'goto'"); }
  bool VisitIndirectGotoStmt(IndirectGotoStmt *S) { return found(S, "a 'goto'"); }
  bool VisitBreakStmt(BreakStmt *S) {
    return InCallee || Nest || !NonUniform ? true : found(S, "a 'break'");
  }
  bool VisitContinueStmt(ContinueStmt *S) {
    return InCallee || Nest || !NonUniform ? true : found(S, "a 'continue'");
  }
  bool VisitGCCAsmStmt(GCCAsmStmt *S) { return found(S, "inline assembly"); }
  bool VisitMSAsmStmt(MSAsmStmt *S) { return found(S, "inline assembly"); }
  bool VisitCallExpr(CallExpr *CE) {
    const FunctionDecl *FD = CE->getDirectCallee();
    if (!FD)
      return found(CE, "an indirect call");
    return follow(CE, FD);
  }
  /// Constructors and destructors run code of the user's as calls do, the latter from nowhere in
  /// the text: at the end of a full expression (a temporary) or of a scope (a variable).
  bool VisitCXXConstructExpr(CXXConstructExpr *CE) { return follow(CE, CE->getConstructor()); }
  bool VisitCXXInheritedCtorInitExpr(CXXInheritedCtorInitExpr *E) {
    return follow(E, E->getConstructor());
  }
  bool VisitCXXBindTemporaryExpr(CXXBindTemporaryExpr *E) {
    return follow(E, E->getTemporary()->getDestructor());
  }
  bool VisitVarDecl(VarDecl *V) {
    if (V->needsDestruction(Ctx) == QualType::DK_cxx_destructor)
      if (const CXXRecordDecl *RD = Ctx.getBaseElementType(V->getType())->getAsCXXRecordDecl())
        return follow(V->getInit(), RD->getDestructor());
    return true;
  }
  /// A call of FD from At: whatever in FD (and what it calls) leaves the kernel.
  bool follow(const Stmt *At, const FunctionDecl *FD) {
    if (!FD)
      return found(At, "a call that cannot be followed");
    const FunctionDecl *Def = nullptr;
    if (isToolkitRuntime(Ctx.getSourceManager(), FD))
      return true; // the toolkit's runtime functions return to their caller (exits are known by name)
    if (!FD->hasBody(Def) || !Def->getBody())
      return found(At, "a call of " + quoted(FD) + ", whose body is not in this file");
    if (CallDepth >= MaxDepth)
      return found(At, "calls nested too deeply");
    ExitFinder Inner(Ctx, Fx, Def, /*InCallee=*/true, CallDepth + 1);
    Inner.TraverseStmt(Def->getBody());
    if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(Def))
      for (const CXXCtorInitializer *I : Ctor->inits())
        if (Inner.Found.empty() && I->getInit())
          Inner.TraverseStmt(I->getInit());
    if (const auto *Dtor = dyn_cast<CXXDestructorDecl>(Def)) {
      // A destructor then destroys the members and bases, each with its own destructor.
      const CXXRecordDecl *RD = Dtor->getParent();
      for (const FieldDecl *Field : RD->fields())
        if (const CXXRecordDecl *M = Ctx.getBaseElementType(Field->getType())->getAsCXXRecordDecl();
            M && M->hasDefinition() && !M->hasTrivialDestructor() && Inner.Found.empty())
          Inner.follow(At, M->getDestructor());
      for (const CXXBaseSpecifier &B : RD->bases())
        if (const CXXRecordDecl *Base = B.getType()->getAsCXXRecordDecl();
            Base && Base->hasDefinition() && !Base->hasTrivialDestructor() && Inner.Found.empty())
          Inner.follow(At, Base->getDestructor());
    }
    if (!Inner.Found.empty())
      return found(At, Inner.Found + " in " + quoted(FD));
    return true;
  }
};
} // namespace

static std::string lineOf(ASTContext &Ctx, const Stmt *S) {
  if (!S)
    return "";
  return " at line " +
         std::to_string(Ctx.getSourceManager().getExpansionLineNumber(S->getBeginLoc()));
}

/// Whether P, the statement around Cur, lets every thread that reaches P reach Cur. Else false,
/// with Why.
static bool parentLetsAllThrough(ASTContext &Ctx, EffectsAnalyzer &Effects, const FunctionDecl *F,
                                 const Stmt *P, const Stmt *Cur, std::string &Why) {
  if (const auto *CS = dyn_cast<CompoundStmt>(P)) {
    for (const Stmt *Before : CS->body()) {
      if (Before == Cur)
        break;
      ExitFinder Ex(Ctx, Effects, F, false, 0);
      Ex.TraverseStmt(const_cast<Stmt *>(Before));
      if (!Ex.Found.empty()) {
        Why = Ex.Found + lineOf(Ctx, Ex.At) + " may let threads leave before it";
        return false;
      }
    }
  } else if (const auto *If = dyn_cast<IfStmt>(P)) {
    if (Cur == If->getCond() || If->getInit() || If->getConditionVariable()) {
      Why = "the loop is part of an if's condition";
      return false;
    }
    if (mayDifferAcrossThreads(Ctx, Effects, F, If->getCond())) {
      Why = "it sits under 'if' with a condition that may differ between threads" +
            lineOf(Ctx, If);
      return false;
    }
  } else if (isa<ForStmt, WhileStmt, DoStmt>(P)) {
    const Expr *Cond = nullptr;
    const Stmt *Body = nullptr;
    if (const auto *For = dyn_cast<ForStmt>(P)) {
      Cond = For->getCond();
      Body = For->getBody();
    } else if (const auto *W = dyn_cast<WhileStmt>(P)) {
      Cond = W->getCond();
      Body = W->getBody();
    } else {
      Cond = cast<DoStmt>(P)->getCond();
      Body = cast<DoStmt>(P)->getBody();
    }
    if (Cur != Body) {
      Why = "the loop is part of another loop's header";
      return false;
    }
    if (Cond && mayDifferAcrossThreads(Ctx, Effects, F, Cond)) {
      Why = "an enclosing loop's condition may differ between threads" + lineOf(Ctx, P);
      return false;
    }
    // A thread that leaves one iteration of the outer loop misses the next one.
    ExitFinder Ex(Ctx, Effects, F, false, 0);
    Ex.TraverseStmt(const_cast<Stmt *>(Body));
    if (!Ex.Found.empty()) {
      Why = Ex.Found + lineOf(Ctx, Ex.At) + " in an enclosing loop may let threads skip it";
      return false;
    }
  } else if (!isa<AttributedStmt>(P)) {
    Why = std::string("the loop is nested in a '") + P->getStmtClassName() + "'";
    return false;
  }
  return true;
}

/// Whether every thread that enters F's body reaches S within F: no goto anywhere, nothing that
/// may let threads leave before S in the blocks around it, no thread-dependent if or loop
/// condition around it, no exit from an enclosing loop's body. Else false, with Why.
static bool reachesWithin(ASTContext &Ctx, EffectsAnalyzer &Effects, const FunctionDecl *F,
                          const Stmt *S, std::string &Why) {
  // A goto anywhere could jump over the statement or into a loop around it.
  struct Gotos : RecursiveASTVisitor<Gotos> {
    const Stmt *At = nullptr;
    bool TraverseLambdaExpr(LambdaExpr *) { return true; }
    bool VisitGotoStmt(GotoStmt *S) { return At = S, false; }
    bool VisitIndirectGotoStmt(IndirectGotoStmt *S) { return At = S, false; }
  } G;
  G.TraverseStmt(F->getBody());
  if (G.At) {
    Why = "a 'goto'" + lineOf(Ctx, G.At);
    return false;
  }
  const Stmt *Cur = S;
  while (Cur != F->getBody()) {
    DynTypedNodeList Parents = Ctx.getParents(*Cur);
    if (Parents.empty()) {
      Why = "cannot see what the loop is nested in";
      return false;
    }
    const Stmt *P = Parents[0].get<Stmt>();
    if (!P) {
      Why = "the loop is not a statement of " + quoted(F) + "'s body";
      return false;
    }
    if (!parentLetsAllThrough(Ctx, Effects, F, P, Cur, Why))
      return false;
    Cur = P;
  }
  return true;
}

/// Whether every call of F, a __device__ function, is reached by every thread of its caller, and
/// each caller likewise up to a kernel (Depth levels so far). Else false, with Why.
static bool everyCallReached(ASTContext &Ctx, const TranslationUnitIndex &Index, EffectsAnalyzer &Effects,
                             const FunctionDecl *F, std::string &Why, unsigned Depth) {
  auto Calls = Index.callersOf(F);
  if (Calls.empty()) {
    Why = quoted(F) + " is not called in this file";
    return false;
  }
  for (const CallExpr *CE : Calls) {
    // The call must be a statement of its own, or a plain part of one, in its function.
    const Stmt *Stmt = CE;
    while (true) {
      DynTypedNodeList P = Ctx.getParents(*Stmt);
      if (!P.empty())
        if (const auto *VD = P[0].get<VarDecl>()) // `T x = f(...);`: on to the declaration
          P = Ctx.getParents(*VD);
      if (P.empty() || !P[0].get<clang::Stmt>()) {
        Why = "a call of " + quoted(F) + " cannot be followed";
        return false;
      }
      const clang::Stmt *Up = P[0].get<clang::Stmt>();
      if (isa<CompoundStmt>(Up))
        break;
      if (isa<AbstractConditionalOperator>(Up) ||
          (isa<BinaryOperator>(Up) && cast<BinaryOperator>(Up)->isLogicalOp()) ||
          isa<IfStmt, ForStmt, WhileStmt, DoStmt, SwitchStmt, LambdaExpr>(Up)) {
        Why = "a call of " + quoted(F) + lineOf(Ctx, CE) + " is conditional";
        return false;
      }
      Stmt = Up;
    }
    const FunctionDecl *Caller = enclosingFunction(Ctx, CE);
    if (!Caller || isa<CXXMethodDecl>(Caller)) {
      Why = "a call of " + quoted(F) + lineOf(Ctx, CE) + " cannot be followed";
      return false;
    }
    std::string Inner;
    if (!allThreadsReach(Ctx, Index, Effects, Caller, Stmt, Inner, Depth + 1)) {
      Why = "in " + quoted(Caller) + ", which calls " + quoted(F) + lineOf(Ctx, CE) + ": " + Inner;
      return false;
    }
  }
  return true;
}

bool allThreadsReach(ASTContext &Ctx, const TranslationUnitIndex &Index, EffectsAnalyzer &Effects,
                     const FunctionDecl *F, const Stmt *S, std::string &Why, unsigned Depth) {
  if (Depth > 4) {
    Why = "its callers nest too deeply to follow";
    return false;
  }
  if (!reachesWithin(Ctx, Effects, F, S, Why))
    return false;
  if (F->hasAttr<CUDAGlobalAttr>())
    return true;
  return everyCallReached(Ctx, Index, Effects, F, Why, Depth);
}

} // namespace tilepipe

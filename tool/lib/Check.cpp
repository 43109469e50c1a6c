// Model and check of one candidate loop.
//
// The rewrite evaluates the copy phase of future iterations ahead of time, on a copy of the
// induction variables (the fetch cursor). That is the same program only when everything the copy
// phase and the loop condition read is either an induction variable or a value the loop never
// changes, when the tiles are written nowhere else and read only by the compute phase, and when
// no store of the loop can change what a future copy reads. This file proves those facts or refuses.
#include "tilepipe/Check.h"
#include "tilepipe/AstUtil.h"
#include "tilepipe/Effects.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include <functional>
#include <map>

using namespace clang;

namespace tilepipe {

//===----------------------------------------------------------------------===//
// Translation-unit facts
//===----------------------------------------------------------------------===//

namespace {
class CallIndexer : public RecursiveASTVisitor<CallIndexer> {
public:
  llvm::DenseMap<const FunctionDecl *, std::vector<const CallExpr *>> &Calls;
  explicit CallIndexer(llvm::DenseMap<const FunctionDecl *, std::vector<const CallExpr *>> &C)
      : Calls(C) {}
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool VisitCallExpr(CallExpr *CE) {
    if (const FunctionDecl *FD = CE->getDirectCallee())
      Calls[FD->getCanonicalDecl()].push_back(CE);
    return true;
  }
};
} // namespace

TranslationUnitIndex::TranslationUnitIndex(ASTContext &Ctx) {
  CallIndexer I(Calls);
  I.TraverseDecl(Ctx.getTranslationUnitDecl());
}

llvm::ArrayRef<const CallExpr *> TranslationUnitIndex::callersOf(const FunctionDecl *FD) const {
  auto It = Calls.find(FD->getCanonicalDecl());
  if (It == Calls.end())
    return {};
  return It->second;
}

//===----------------------------------------------------------------------===//
// Small AST helpers
//===----------------------------------------------------------------------===//

static unsigned arrayRank(ASTContext &Ctx, QualType T) {
  unsigned N = 0;
  for (; Ctx.getAsArrayType(T); T = Ctx.getAsArrayType(T)->getElementType())
    ++N;
  return N;
}

//===----------------------------------------------------------------------===//
// Dependences
//===----------------------------------------------------------------------===//

namespace {

enum class Dep { Invariant, Iteration, Bad };

struct DepResult {
  Dep D = Dep::Invariant;
  std::string Why;
  void join(DepResult O) {
    if (static_cast<int>(O.D) > static_cast<int>(D))
      *this = std::move(O);
  }
  bool ReadsMemory = false; ///< Bad because it reads memory (a copy that computes on its read)
  static DepResult bad(std::string W) { return {Dep::Bad, std::move(W)}; }
  static DepResult read(std::string W) { return {Dep::Bad, std::move(W), true}; }
};

/// An index expression as sum(coefficient * atom) + constant, for telling tile elements apart.
struct Affine {
  std::map<std::string, int64_t> Terms;
  int64_t Constant = 0;
  void add(const Affine &O, int64_t Scale) {
    Constant += Scale * O.Constant;
    for (auto &[K, V] : O.Terms)
      if ((Terms[K] += Scale * V) == 0)
        Terms.erase(K);
  }
};

//===----------------------------------------------------------------------===//
// The checker
//===----------------------------------------------------------------------===//

class LoopChecker {
public:
  LoopChecker(ASTContext &Ctx, const TranslationUnitIndex &Index, const Candidate &C,
              const CheckOptions &Opts, LoopModel &M)
      : Ctx(Ctx), SM(Ctx.getSourceManager()), Index(Index), Opts(Opts), M(M),
        Effects(Ctx, Index) {
    M.Loop = C.Loop;
    M.Function = C.Function;
  }

  Verdict run();

private:
  ASTContext &Ctx;
  const SourceManager &SM;
  const TranslationUnitIndex &Index;
  const CheckOptions &Opts;
  LoopModel &M;

  LocalFacts InLoop;   // mutations inside the loop statement
  const LocalFacts *InFunction = nullptr; // the whole function's (Effects keeps them)
  llvm::DenseMap<const VarDecl *, DepResult> IndexDeclDeps;
  llvm::SmallPtrSet<const VarDecl *, 4> InnerVars; // variables of inner copy loops
  llvm::DenseMap<const VarDecl *, size_t> TileIndex;
  RootSet SourceRoots; ///< where the pointers the copies read may point
  EffectsAnalyzer Effects;
  struct StoreSite {
    const Expr *Dst;
    unsigned TileIdx;
    std::vector<const VarDecl *> Inner;
  };
  std::vector<StoreSite> Sites;
  std::vector<const VarDecl *> InnerStack;
  llvm::SmallPtrSet<const VarDecl *, 4> UniformVisiting;

  /// S's text for a message, "<macro>" where it is not one range of the file.
  std::string text(const Stmt *S) {
    return editable(S) ? sourceText(Ctx, S->getSourceRange()) : "<macro>";
  }
  bool inMacro(SourceRange R) { return R.getBegin().isMacroID() || R.getEnd().isMacroID(); }
  /// Whether S is one range of the file, which the rewrite can cut or replace.
  bool editable(const Stmt *S) { return fileRange(Ctx, S->getSourceRange()).isValid(); }

  bool isInduction(const VarDecl *V) const {
    return llvm::is_contained(M.Inductions, V);
  }

  DepResult classify(const Expr *E);
  DepResult classifyVar(const VarDecl *V);
  bool affine(const Expr *E, Affine &A);

  Verdict checkShape();
  Verdict checkControlFlow(const Stmt *Body);
  Verdict collectInductions();
  Verdict addIncrement(const Expr *E);
  Verdict checkCopyPhase();
  Verdict checkCopyStmt(const Stmt *S);
  Verdict checkStore(const Stmt *S, const Expr *LHS, const Expr *RHS);
  Verdict checkValue(const Stmt *S, const Expr *Dst, const Expr *V, size_t TileIdx);
  Verdict tileOfLValue(const Expr *E, const VarDecl *&TileVar, std::vector<const Expr *> &Indices);
  Verdict addTile(const VarDecl *V, const DeclStmt *InBody);
  Verdict checkTiles();
  Verdict checkComputePhase();
  Verdict checkTileUse(const DeclRefExpr *DRE);
  Verdict checkStores();
  Verdict checkOverlap();
  void analyzeBoxes();
  char threadDim(const Expr *E);
  bool mentionsThread(const Stmt *S, unsigned Depth = 0);
  bool startSetJustBefore(const VarDecl *V);
  struct Coef {
    std::string Text;
    std::optional<int64_t> Const;
  };
  bool threadAffine(const Expr *E, std::map<char, Coef> &Out, unsigned Depth = 0);
  bool visibleAtLoop(const Expr *E);
  bool changes(const VarDecl *V) const {
    return InFunction->changes(V);
  }
  bool setOnceLocal(const VarDecl *V) const;
  bool unchangedParam(const VarDecl *V) const;
  std::map<std::string, unsigned> NameCounts; ///< declarations per name in the function, once read
  std::vector<const Expr *> CoefExprs; ///< the uniform factors threadAffine multiplied by
  void analyzeTma(Tile &T, const TileStore *FillStore);
  void analyzeBulk(Tile &T);
  bool guardBounds(Tile &T, const Expr *Guard, std::string &Why);
  bool stepsEvenly(const Expr *E, unsigned Depth = 0);
  std::string unevenStep(const Expr *Index);
  bool hostVisible(const Expr *E);
  bool isGlobalPointer(const VarDecl *V, unsigned Depth);
  const VarDecl *pointerBase(const Expr *E);
  Verdict classifyStoreTarget(const RootSet &Target, const Stmt *Where);
};

DepResult LoopChecker::classifyVar(const VarDecl *V) {
  if (isInduction(V))
    return {Dep::Iteration, ""};
  if (InnerVars.contains(V))
    return {Dep::Invariant, ""};
  if (auto It = IndexDeclDeps.find(V); It != IndexDeclDeps.end())
    return It->second;
  if (isCudaBuiltinVar(V))
    return {};
  if (V->getType()->isReferenceType())
    return DepResult::bad(quoted(V) + " is a reference");
  if (V->getType().isVolatileQualified())
    return DepResult::bad(quoted(V) + " is volatile");
  if (!V->hasLocalStorage() || V->isStaticLocal()) {
    if (isSharedVar(V))
      return DepResult::read("reads the __shared__ variable " + quoted(V));
    if (V->isConstexpr() || (V->getType().isConstQualified() && V->hasInit() &&
                             !V->hasAttr<CUDADeviceAttr>()))
      return {};
    return DepResult::read("reads the global variable " + quoted(V));
  }
  if (isSharedVar(V))
    return DepResult::read("reads the __shared__ variable " + quoted(V));
  if (InLoop.Declared.contains(V))
    return DepResult::bad(quoted(V) + " is computed inside the loop");
  if (InLoop.Mutated.contains(V))
    return DepResult::bad(quoted(V) + " is modified in the loop");
  if (InFunction->Escaped.contains(V))
    return DepResult::bad(quoted(V) + " escapes: its address is taken, or a reference or a lambda "
                                    "that may change it is bound to it");
  return {};
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
        return DepResult::read("reads memory (" + text(Sub) + ")");
    }
    return classify(ICE->getSubExpr());
  }
  if (const auto *CE = dyn_cast<ExplicitCastExpr>(E))
    return classify(CE->getSubExpr());
  if (const auto *UO = dyn_cast<UnaryOperator>(E)) {
    if (UO->isIncrementDecrementOp())
      return DepResult::bad("has a side effect (" + text(UO) + ")");
    if (UO->getOpcode() == UO_Deref)
      return DepResult::read("reads memory (" + text(UO) + ")");
    if (UO->getOpcode() == UO_AddrOf)
      return DepResult::bad("takes an address (" + text(UO) + ")");
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
    if (ME->isArrow())
      return DepResult::read("reads memory (" + text(ME) + ")");
    return classify(ME->getBase());
  }
  if (isa<ArraySubscriptExpr>(E))
    return DepResult::read("reads memory (" + text(E) + ")");
  if (const auto *Call = dyn_cast<CallExpr>(E)) {
    if (isa<CXXOperatorCallExpr>(Call) || isa<CXXMemberCallExpr>(Call))
      return DepResult::bad("calls " + text(Call->getCallee()));
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

bool LoopChecker::affine(const Expr *E, Affine &A) {
  E = E->IgnoreParenImpCasts();
  if (!E->isValueDependent() && !E->isTypeDependent()) {
    Expr::EvalResult R;
    if (E->EvaluateAsInt(R, Ctx)) {
      A.Constant += R.Val.getInt().getExtValue();
      return true;
    }
  }
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    Affine L, R;
    if ((BO->getOpcode() == BO_Add || BO->getOpcode() == BO_Sub) && affine(BO->getLHS(), L) &&
        affine(BO->getRHS(), R)) {
      A.add(L, 1);
      A.add(R, BO->getOpcode() == BO_Add ? 1 : -1);
      return true;
    }
    if (BO->getOpcode() == BO_Mul && affine(BO->getLHS(), L) && affine(BO->getRHS(), R)) {
      if (L.Terms.empty()) {
        A.add(R, L.Constant);
        return true;
      }
      if (R.Terms.empty()) {
        A.add(L, R.Constant);
        return true;
      }
    }
  }
  if (const auto *UO = dyn_cast<UnaryOperator>(E))
    if (UO->getOpcode() == UO_Minus) {
      Affine S;
      if (!affine(UO->getSubExpr(), S))
        return false;
      A.add(S, -1);
      return true;
    }
  std::string Key;
  if (isBuiltinIndexRead(E, &Key)) {
    A.Terms[Key] += 1;
    return true;
  }
  if (const VarDecl *V = varOf(E)) {
    A.Terms["v" + std::to_string(reinterpret_cast<uintptr_t>(V))] += 1;
    return true;
  }
  return false;
}

/// Finds jumps that leave the loop body: return and goto anywhere, break and continue outside
/// the body's own inner loops and switches.
struct ControlFlowWalker : RecursiveASTVisitor<ControlFlowWalker> {
  unsigned Depth = 0;
  std::string Found;
  bool TraverseForStmt(ForStmt *S) { return nested(S); }
  bool TraverseWhileStmt(WhileStmt *S) { return nested(S); }
  bool TraverseDoStmt(DoStmt *S) { return nested(S); }
  bool TraverseSwitchStmt(SwitchStmt *S) { return nested(S); }
  bool TraverseCXXForRangeStmt(CXXForRangeStmt *S) { return nested(S); }
  bool TraverseLambdaExpr(LambdaExpr *) { return true; }
  template <class T> bool nested(T *S) {
    ++Depth;
    bool R = RecursiveASTVisitor<ControlFlowWalker>::TraverseStmt(S->getBody());
    --Depth;
    return R;
  }
  bool VisitBreakStmt(BreakStmt *) { return Depth ? true : (Found = "break", false); }
  bool VisitContinueStmt(ContinueStmt *) { return Depth ? true : (Found = "continue", false); }
  bool VisitReturnStmt(ReturnStmt *) { return Found = "return", false; }
  bool VisitGotoStmt(GotoStmt *) { return Found = "goto", false; }
  bool VisitIndirectGotoStmt(IndirectGotoStmt *) { return Found = "goto", false; }
};

Verdict LoopChecker::checkControlFlow(const Stmt *Body) {
  ControlFlowWalker W;
  W.TraverseStmt(const_cast<Stmt *>(Body));
  if (!W.Found.empty())
    return Verdict::refuse(Reason::ControlFlow, "the body has a '" + W.Found + "'");
  return {};
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

/// `v += step`, `++v`, `v = v + step` and comma lists of them, on integer or pointer variables.
static bool isIncrementStmt(const Stmt *S) {
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

Verdict LoopChecker::checkShape() {
  const Stmt *Body = nullptr;
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
  } else if (const auto *While = dyn_cast<WhileStmt>(M.Loop)) {
    if (While->getConditionVariable())
      return Verdict::refuse(Reason::Unsupported, "the loop condition declares a variable");
    M.Cond = While->getCond();
    Body = While->getBody();
  } else {
    return Verdict::refuse(Reason::LoopShape, "do-while loops are not rewritten");
  }
  const auto *CS = dyn_cast<CompoundStmt>(Body);
  if (!CS)
    return Verdict::refuse(Reason::LoopShape, "the body is not a block");
  std::vector<const Stmt *> Stmts(CS->body_begin(), CS->body_end());
  std::vector<const Stmt *> Tail; // trailing barrier and while-increments, in source order
  if (isa<WhileStmt>(M.Loop)) {
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
    if (M.TailIncs.empty())
      return Verdict::refuse(Reason::InductionStep,
                             "the while loop does not end with increments of its variables");
    if (M.TrailingBarrier) // put the barrier back: the shape check below expects it
      Stmts.push_back(M.TrailingBarrier);
    M.TrailingBarrier = nullptr;
  }
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
  return checkControlFlow(Body);
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

const VarDecl *LoopChecker::pointerBase(const Expr *E) {
  E = skipCleanups(E)->IgnoreParens();
  if (const auto *CE = dyn_cast<CastExpr>(E))
    if (CE->getCastKind() != CK_ArrayToPointerDecay && CE->getCastKind() != CK_LValueToRValue)
      return pointerBase(CE->getSubExpr());
  if (const auto *ICE = dyn_cast<ImplicitCastExpr>(E); ICE && ICE->getCastKind() == CK_LValueToRValue)
    return pointerBase(ICE->getSubExpr());
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    if (BO->getOpcode() == BO_Add || BO->getOpcode() == BO_Sub) {
      if (BO->getLHS()->getType()->isPointerType())
        return pointerBase(BO->getLHS());
      if (BO->getRHS()->getType()->isPointerType())
        return pointerBase(BO->getRHS());
    }
    return nullptr;
  }
  if (const auto *UO = dyn_cast<UnaryOperator>(E); UO && UO->getOpcode() == UO_AddrOf) {
    const Expr *Sub = UO->getSubExpr()->IgnoreParens();
    if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(Sub))
      return pointerBase(ASE->getBase());
    return nullptr;
  }
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
    if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl()); V && V->getType()->isPointerType())
      return V;
  return nullptr;
}

bool LoopChecker::isGlobalPointer(const VarDecl *V, unsigned Depth) {
  if (!V || Depth > 6 || !V->getType()->isPointerType() || isSharedVar(V))
    return false;
  if (const auto *P = dyn_cast<ParmVarDecl>(V)) {
    const auto *F = dyn_cast<FunctionDecl>(P->getDeclContext());
    if (!F)
      return false;
    if (F->hasAttr<CUDAGlobalAttr>())
      return true;
    // A __device__ function: every caller in this file must pass global memory.
    auto Calls = Index.callersOf(F);
    if (Calls.empty())
      return false;
    unsigned Pos = P->getFunctionScopeIndex();
    for (const CallExpr *CE : Calls) {
      if (Pos >= CE->getNumArgs())
        return false;
      if (!isGlobalPointer(pointerBase(CE->getArg(Pos)), Depth + 1))
        return false;
    }
    return true;
  }
  if (!V->hasLocalStorage() || !V->getInit())
    return false;
  // A local pointer set once from global memory.
  const auto *F = dyn_cast<FunctionDecl>(V->getDeclContext());
  if (!F)
    return false;
  if (Effects.localFacts(F).changes(V))
    return false;
  return isGlobalPointer(pointerBase(V->getInit()), Depth + 1);
}

Verdict LoopChecker::tileOfLValue(const Expr *E, const VarDecl *&TileVar,
                                  std::vector<const Expr *> &Indices) {
  E = E->IgnoreParens();
  while (const auto *ASE = dyn_cast<ArraySubscriptExpr>(E)) {
    Indices.insert(Indices.begin(), ASE->getIdx());
    const auto *ICE = dyn_cast<ImplicitCastExpr>(ASE->getBase()->IgnoreParens());
    if (!ICE || ICE->getCastKind() != CK_ArrayToPointerDecay)
      return Verdict::refuse(Reason::LoadPhase, "stores through the pointer '" +
                                                    text(ASE->getBase()) + "', not into a tile");
    E = ICE->getSubExpr()->IgnoreParens();
  }
  const VarDecl *V = varOf(E);
  if (!V || !isSharedVar(V))
    return Verdict::refuse(Reason::LoadPhase, "stores into '" + text(E) + "', which is not a tile");
  TileVar = V;
  return {};
}

Verdict LoopChecker::addTile(const VarDecl *V, const DeclStmt *InBody) {
  if (TileIndex.count(V))
    return {};
  Tile T;
  T.Var = V;
  T.DeclaredInBody = InBody;
  if (!V->isLocalVarDeclOrParm() && !V->isStaticLocal())
    return Verdict::refuse(Reason::TileDeclaration, quoted(V) + " is declared outside the function");
  if (V->hasExternalStorage() || !Ctx.getAsConstantArrayType(V->getType()))
    return Verdict::refuse(Reason::TileDeclaration,
                           quoted(V) + " is not a statically sized array (extern __shared__?)");
  if (V->getLocation().isMacroID())
    return Verdict::refuse(Reason::Macro, quoted(V) + " is declared inside a macro");
  QualType Elem = V->getType();
  while (const auto *AT = Ctx.getAsArrayType(Elem))
    Elem = AT->getElementType();
  T.ElementType = Elem;
  if (Elem->isDependentType() || Elem->isIncompleteType())
    return Verdict::refuse(Reason::ElementType, "the element type of " + quoted(V) + " is unknown");
  uint64_t Size = Ctx.getTypeSizeInChars(Elem).getQuantity();
  uint64_t Align = Ctx.getTypeAlignInChars(Elem).getQuantity();
  if ((Size != 4 && Size != 8 && Size != 16) || Align != Size ||
      !Elem.isTriviallyCopyableType(Ctx) || Elem.isVolatileQualified())
    return Verdict::refuse(Reason::ElementType,
                           quoted(V) + " holds '" + Elem.getAsString() + "' (" +
                               std::to_string(Size) + " bytes, aligned to " +
                               std::to_string(Align) + ")");
  T.Bytes = Ctx.getTypeSizeInChars(V->getType()).getQuantity();
  // The element type as written, so templated tiles keep their parameter names.
  TypeLoc TL = V->getTypeSourceInfo()->getTypeLoc();
  while (auto ATL = TL.getAs<ArrayTypeLoc>())
    TL = ATL.getElementLoc();
  if (fileRange(Ctx, TL.getSourceRange()).isInvalid())
    return Verdict::refuse(Reason::Macro, "the element type of " + quoted(V) + " is in a macro");
  T.ElementTypeText = sourceText(Ctx, TL.getSourceRange());
  TileIndex[V] = M.Tiles.size();
  M.Tiles.push_back(T);
  return {};
}

Verdict LoopChecker::checkValue(const Stmt *S, const Expr *Dst, const Expr *V, size_t TileIdx) {
  const Tile *T = &M.Tiles[TileIdx];
  TileStore Store;
  Store.Statement = S;
  Store.Dst = Dst;
  Store.TileIdx = TileIdx;
  const Expr *Plain = stripNoOps(V);
  bool IsRead = isa<ArraySubscriptExpr>(Plain) ||
                (isa<UnaryOperator>(Plain) && cast<UnaryOperator>(Plain)->getOpcode() == UO_Deref);
  if (!IsRead) {
    // Anything else must be a fill value: no memory read, nothing that changes.
    DepResult D = classify(V);
    if (D.D == Dep::Bad) {
      if (D.ReadsMemory)
        return Verdict::refuse(Reason::LoadComputes,
                               "'" + text(V) + "' computes on what it reads before storing it");
      return Verdict::refuse(Reason::AddressNotInvariant, "the value stored " + D.Why);
    }
    Store.Fill = V;
    M.Stores.push_back(Store);
    return {};
  }
  // A read: it must be exactly one element of the tile's type, with no conversion on the way.
  QualType ReadT = Plain->getType().getUnqualifiedType().getCanonicalType();
  if (ReadT != T->ElementType.getUnqualifiedType().getCanonicalType())
    return Verdict::refuse(Reason::LoadComputes, "'" + text(V) + "' reads '" +
                                                     Plain->getType().getAsString() +
                                                     "' into a tile of '" +
                                                     T->ElementType.getAsString() + "'");
  for (const Expr *E = skipCleanups(V); E != Plain;) {
    if (const auto *ICE = dyn_cast<ImplicitCastExpr>(E)) {
      if (ICE->getCastKind() != CK_LValueToRValue && ICE->getCastKind() != CK_NoOp)
        return Verdict::refuse(Reason::LoadComputes, "'" + text(V) + "' converts its value");
      E = ICE->getSubExpr();
    } else if (const auto *PE = dyn_cast<ParenExpr>(E)) {
      E = PE->getSubExpr();
    } else if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(E)) {
      E = MTE->getSubExpr();
    } else {
      return Verdict::refuse(Reason::LoadComputes, "'" + text(V) + "' is not a plain read");
    }
  }
  const Expr *Ptr = nullptr, *Idx = nullptr;
  if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(Plain)) {
    Ptr = ASE->getBase();
    Idx = ASE->getIdx();
    if (!Ptr->getType()->isPointerType())
      return Verdict::refuse(Reason::LoadSource, "'" + text(Plain) + "' is not read through a pointer");
  } else {
    Ptr = cast<UnaryOperator>(Plain)->getSubExpr();
  }
  if (const auto *ICE = dyn_cast<ImplicitCastExpr>(Ptr->IgnoreParens());
      ICE && ICE->getCastKind() == CK_ArrayToPointerDecay)
    return Verdict::refuse(Reason::LoadSource,
                           "'" + text(Plain) + "' reads an array, not global memory");
  DepResult D = classify(Ptr);
  D.join(classify(Idx));
  if (D.D == Dep::Bad)
    return Verdict::refuse(Reason::AddressNotInvariant, "the address of '" + text(Plain) + "' " + D.Why);
  const VarDecl *Base = pointerBase(Ptr);
  if (!Base || !isGlobalPointer(Base, 0))
    return Verdict::refuse(Reason::LoadSource,
                           "cannot prove that '" + text(Ptr) + "' points to global memory");
  if (!editable(Dst) || !editable(Plain))
    return Verdict::refuse(Reason::Macro, "the copy '" + text(S) + "' is written in a macro");
  RootSet Roots = Effects.rootsOf(M.Function, Ptr);
  for (const VarDecl *Root : Roots.Roots)
    if (!llvm::is_contained(SourceRoots.Roots, Root))
      M.SourcePointers.push_back(Root->getNameAsString());
  if (Roots.Unknown && !SourceRoots.Unknown)
    M.SourcePointers.push_back(text(Ptr));
  SourceRoots.join(Roots);
  Store.Src = V;
  M.Stores.push_back(Store);
  return {};
}

Verdict LoopChecker::checkStore(const Stmt *S, const Expr *LHS, const Expr *RHS) {
  const VarDecl *TileVar = nullptr;
  std::vector<const Expr *> Indices;
  if (Verdict V = tileOfLValue(LHS, TileVar, Indices); !V.ok())
    return V;
  if (Verdict V = addTile(TileVar, nullptr); !V.ok())
    return V;
  size_t T = TileIndex[TileVar];
  if (Indices.size() != arrayRank(Ctx, TileVar->getType()))
    return Verdict::refuse(Reason::LoadPhase, "'" + text(LHS) + "' is not one tile element");
  for (const Expr *I : Indices) {
    DepResult D = classify(I);
    if (D.D == Dep::Bad)
      return Verdict::refuse(Reason::AddressNotInvariant,
                             "the tile index '" + text(I) + "' " + D.Why);
    if (D.D == Dep::Iteration)
      return Verdict::refuse(Reason::TileIndex,
                             "the tile index '" + text(I) + "' depends on the induction variables");
  }
  if (!editable(S))
    return Verdict::refuse(Reason::Macro, "the copy '" + text(S) + "' is written in a macro");
  Sites.push_back({LHS, static_cast<unsigned>(TileIndex[TileVar]), InnerStack});
  const Expr *R = skipCleanups(RHS)->IgnoreParens();
  if (const auto *CO = dyn_cast<ConditionalOperator>(R);
      CO && !isa<ArraySubscriptExpr>(stripNoOps(RHS))) {
    DepResult D = classify(CO->getCond());
    if (D.D == Dep::Bad)
      return Verdict::refuse(Reason::AddressNotInvariant, "the guard '" + text(CO->getCond()) + "' " + D.Why);
    for (bool Holds : {true, false}) {
      if (Verdict V = checkValue(S, LHS, Holds ? CO->getTrueExpr() : CO->getFalseExpr(), T); !V.ok())
        return V;
      TileStore &Added = M.Stores.back();
      Added.Guard = CO->getCond();
      Added.WhenGuardHolds = Holds;
      Added.Guards = 1;
    }
    return {};
  }
  return checkValue(S, LHS, RHS, T);
}

static const Stmt *singleStatement(const Stmt *S) {
  while (const auto *CS = dyn_cast_or_null<CompoundStmt>(S)) {
    if (CS->size() != 1)
      return nullptr;
    S = CS->body_front();
  }
  return S;
}

Verdict LoopChecker::checkCopyStmt(const Stmt *S) {
  if (isa<NullStmt>(S))
    return {};
  if (const auto *CS = dyn_cast<CompoundStmt>(S)) {
    for (const Stmt *C : CS->body())
      if (Verdict V = checkCopyStmt(C); !V.ok())
        return V;
    return {};
  }
  if (const auto *If = dyn_cast<IfStmt>(S)) {
    if (If->getInit() || If->getConditionVariable() || If->isConstexpr() || If->isConsteval())
      return Verdict::refuse(Reason::LoadPhase, "an if with an initializer or constexpr");
    DepResult D = classify(If->getCond());
    if (D.D == Dep::Bad)
      return Verdict::refuse(Reason::AddressNotInvariant,
                             "the guard '" + text(If->getCond()) + "' " + D.Why);
    if (D.D == Dep::Iteration) {
      // Every iteration must write the same elements, or a stage buffer would keep a stale value.
      const Stmt *Then = singleStatement(If->getThen());
      const Stmt *Else = singleStatement(If->getElse());
      const Expr *L1, *R1, *L2, *R2;
      if (!Else)
        return Verdict::refuse(Reason::GuardWithoutFill,
                               "'if (" + text(If->getCond()) + ")' has no else branch");
      if (!Then || !splitAssignment(Then, L1, R1) || !splitAssignment(Else, L2, R2) ||
          text(L1) != text(L2))
        return Verdict::refuse(Reason::GuardWithoutFill,
                               "the branches of 'if (" + text(If->getCond()) +
                                   ")' do not write the same tile element");
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
      size_t Before = M.Stores.size();
      if (Verdict V = checkStore(Then, L1, R1); !V.ok())
        return V;
      Mark(Before, true);
      Sites.pop_back(); // both branches are one site
      Before = M.Stores.size();
      if (Verdict V = checkStore(Else, L2, R2); !V.ok())
        return V;
      Mark(Before, false);
      return {};
    }
    if (Verdict V = checkCopyStmt(If->getThen()); !V.ok())
      return V;
    if (If->getElse())
      return checkCopyStmt(If->getElse());
    return {};
  }
  if (const auto *For = dyn_cast<ForStmt>(S)) {
    // An inner copy loop: its own variables, bounds that do not depend on the iteration.
    const auto *Init = dyn_cast_or_null<DeclStmt>(For->getInit());
    if (!Init || !For->getCond() || !For->getInc() || For->getConditionVariable())
      return Verdict::refuse(Reason::LoadPhase, "an inner copy loop without 'int i = ...; cond; inc'");
    std::vector<const VarDecl *> Declared;
    for (const Decl *D : Init->decls()) {
      const auto *V = dyn_cast<VarDecl>(D);
      if (!V || !V->getType()->isIntegerType() || !V->getInit())
        return Verdict::refuse(Reason::LoadPhase, "an inner copy loop variable is not an integer");
      DepResult Dep0 = classify(V->getInit());
      if (Dep0.D != Dep::Invariant)
        return Verdict::refuse(Dep0.D == Dep::Bad ? Reason::AddressNotInvariant : Reason::TileIndex,
                               "the inner copy loop start " +
                                   (Dep0.D == Dep::Bad ? Dep0.Why : "depends on the iteration"));
      Declared.push_back(V);
    }
    for (const VarDecl *V : Declared) {
      InnerVars.insert(V);
      InnerStack.push_back(V);
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
    DepResult C = classify(For->getCond());
    if (C.D != Dep::Invariant)
      return Verdict::refuse(C.D == Dep::Bad ? Reason::AddressNotInvariant : Reason::TileIndex,
                             "the inner copy loop bound " +
                                 (C.D == Dep::Bad ? C.Why : "depends on the iteration"));
    const Expr *Inc = For->getInc()->IgnoreParens();
    const Expr *Step = nullptr;
    if (const auto *CAO = dyn_cast<CompoundAssignOperator>(Inc))
      Step = CAO->getRHS();
    else if (!isa<UnaryOperator>(Inc))
      return Verdict::refuse(Reason::LoadPhase, "the inner copy loop increment is not 'i += step'");
    if (Step) {
      DepResult SD = classify(Step);
      if (SD.D != Dep::Invariant)
        return Verdict::refuse(SD.D == Dep::Bad ? Reason::AddressNotInvariant : Reason::TileIndex,
                               "the inner copy loop step " +
                                   (SD.D == Dep::Bad ? SD.Why : "depends on the iteration"));
    }
    Verdict V = checkCopyStmt(For->getBody());
    for (size_t I = 0; I < Declared.size(); ++I)
      InnerStack.pop_back();
    return V;
  }
  const Expr *LHS, *RHS;
  if (splitAssignment(S, LHS, RHS))
    return checkStore(S, LHS, RHS);
  return Verdict::refuse(Reason::LoadPhase, "'" + text(S).substr(0, 60) + "'");
}

Verdict LoopChecker::checkCopyPhase() {
  for (const Stmt *S : M.CopyPhase) {
    if (const auto *DS = dyn_cast<DeclStmt>(S)) {
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
        continue;
      }
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
      continue;
    }
    if (Verdict V = checkCopyStmt(S); !V.ok())
      return V;
  }
  if (M.Stores.empty())
    return Verdict::refuse(Reason::LoadPhase, "the copy phase stores into no tile");
  bool AnyCopy = llvm::any_of(M.Stores, [](const TileStore &S) { return S.Src != nullptr; });
  if (!AnyCopy)
    return Verdict::refuse(Reason::LoadPhase, "the copy phase reads no global memory");
  return {};
}

Verdict LoopChecker::checkTileUse(const DeclRefExpr *DRE) {
  // Walk up from the tile through full subscripts to one element, which must only be read.
  const VarDecl *V = cast<VarDecl>(DRE->getDecl());
  unsigned Dims = arrayRank(Ctx, V->getType());
  const Expr *Cur = DRE;
  unsigned Seen = 0;
  while (true) {
    DynTypedNodeList Parents = Ctx.getParents(*Cur);
    if (Parents.empty())
      return Verdict::refuse(Reason::TileEscapes, quoted(V) + " is used in an unknown context");
    const Expr *P = Parents[0].get<Expr>();
    if (!P)
      break;
    if (isa<ParenExpr>(P) ||
        (isa<ImplicitCastExpr>(P) && cast<ImplicitCastExpr>(P)->getCastKind() == CK_ArrayToPointerDecay &&
         Seen < Dims)) {
      Cur = P;
      continue;
    }
    if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(P); ASE && ASE->getBase() == Cur && Seen < Dims) {
      ++Seen;
      Cur = P;
      continue;
    }
    if (Seen < Dims)
      break;
    if (const auto *ME = dyn_cast<MemberExpr>(P); ME && !ME->isArrow()) {
      Cur = P;
      continue;
    }
    if (const auto *ICE = dyn_cast<ImplicitCastExpr>(P)) {
      if (ICE->getCastKind() == CK_LValueToRValue)
        return {};
      if (ICE->getCastKind() == CK_NoOp && ICE->getType().isConstQualified()) {
        Cur = P;
        continue;
      }
    }
    if (const auto *CCE = dyn_cast<CXXConstructExpr>(P))
      if (CCE->getConstructor()->isCopyOrMoveConstructor() && CCE->getConstructor()->isTrivial())
        return {};
    if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(P)) {
      Cur = MTE;
      continue;
    }
    if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(P);
        OC && OC->getOperator() == OO_Equal && OC->getNumArgs() == 2 && OC->getArg(1) == Cur)
      return {};
    if (const auto *BO = dyn_cast<BinaryOperator>(P)) {
      if (BO->isAssignmentOp() && BO->getLHS() == Cur)
        return Verdict::refuse(Reason::ComputeWritesTile, "'" + text(BO) + "'");
    }
    if (const auto *UO = dyn_cast<UnaryOperator>(P)) {
      if (UO->isIncrementDecrementOp())
        return Verdict::refuse(Reason::ComputeWritesTile, "'" + text(UO) + "'");
    }
    if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(P); OC && OC->getArg(0) == Cur)
      return Verdict::refuse(Reason::ComputeWritesTile, "'" + text(OC) + "'");
    break;
  }
  return Verdict::refuse(Reason::TileEscapes,
                         quoted(V) + " is used as '" + text(Cur).substr(0, 50) + "', not read element by element");
}

Verdict LoopChecker::checkTiles() {
  // Every reference to a tile: stores of the copy phase, element reads of the compute phase.
  struct Refs : RecursiveASTVisitor<Refs> {
    llvm::DenseMap<const VarDecl *, size_t> *Tiles;
    std::vector<const DeclRefExpr *> Found;
    bool VisitDeclRefExpr(DeclRefExpr *DRE) {
      if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl()); V && Tiles->count(V))
        Found.push_back(DRE);
      return true;
    }
  };
  Refs InFn;
  InFn.Tiles = &TileIndex;
  InFn.TraverseStmt(M.Function->getBody());
  SourceRange LoopR = M.Loop->getSourceRange();
  auto Inside = [&](SourceLocation L, SourceRange R) {
    L = SM.getExpansionLoc(L);
    return !SM.isBeforeInTranslationUnit(L, SM.getExpansionLoc(R.getBegin())) &&
           !SM.isBeforeInTranslationUnit(SM.getExpansionRange(R.getEnd()).getEnd(), L);
  };
  for (const DeclRefExpr *DRE : InFn.Found)
    if (!Inside(DRE->getLocation(), LoopR))
      return Verdict::refuse(Reason::TileUsedOutside,
                             quoted(DRE->getDecl()) + " is used at line " +
                                 std::to_string(SM.getExpansionLineNumber(DRE->getLocation())));
  // Tiles declared outside the loop must be declared in this function, in plain text.
  for (const Tile &T : M.Tiles) {
    if (T.DeclaredInBody)
      continue;
    if (T.Var->getDeclContext() != M.Function)
      return Verdict::refuse(Reason::TileDeclaration, quoted(T.Var) + " is not declared in this function");
  }
  Refs InCompute;
  InCompute.Tiles = &TileIndex;
  for (const Stmt *S : M.ComputePhase)
    InCompute.TraverseStmt(const_cast<Stmt *>(S));
  if (InCompute.Found.empty())
    return Verdict::refuse(Reason::LoopShape, "the compute phase reads no tile");
  for (const DeclRefExpr *DRE : InCompute.Found)
    if (Verdict V = checkTileUse(DRE); !V.ok())
      return V;
  // In the copy phase a tile may only be stored to (sites) – reads there would see a future stage.
  Refs InCopy;
  InCopy.Tiles = &TileIndex;
  for (const Stmt *S : M.CopyPhase)
    if (!isa<DeclStmt>(S))
      InCopy.TraverseStmt(const_cast<Stmt *>(S));
  for (const DeclRefExpr *DRE : InCopy.Found) {
    bool IsDst = llvm::any_of(M.Stores, [&](const TileStore &S) {
      const Expr *E = S.Dst->IgnoreParens();
      while (const auto *ASE = dyn_cast<ArraySubscriptExpr>(E))
        E = ASE->getBase()->IgnoreParenImpCasts();
      return E == DRE;
    });
    if (!IsDst)
      return Verdict::refuse(Reason::LoadComputes,
                             "the copy phase reads the tile " + quoted(DRE->getDecl()));
  }
  return {};
}

Verdict LoopChecker::classifyStoreTarget(const RootSet &Target, const Stmt *Where) {
  std::string What = "'" + text(Where).substr(0, 60) + "'";
  if (Target.Unknown)
    return Verdict::refuse(Reason::UnknownEffects,
                           What + " stores where tilepipe cannot follow: " + Target.Why);
  for (const VarDecl *Root : Target.Roots)
    if (llvm::is_contained(SourceRoots.Roots, Root))
      return Verdict::refuse(Reason::StoreAliasesLoad,
                             What + " writes through " + quoted(Root) + ", which the copies read");
  for (const VarDecl *Root : Target.Roots) {
    // __shared__ memory and this thread's own variables are never the copied global memory.
    if (isSharedVar(Root) || (Root->hasLocalStorage() && !isa<ParmVarDecl>(Root)) ||
        (isa<ParmVarDecl>(Root) && !Root->getType()->isPointerType() &&
         !Root->getType()->isReferenceType()))
      continue;
    if (SourceRoots.Unknown)
      return Verdict::refuse(Reason::UnknownEffects,
                             What + " stores through " + quoted(Root) +
                                 ", and tilepipe cannot follow where the copies read: " +
                                 SourceRoots.Why);
    bool Restrict = Root->getType().isRestrictQualified() &&
                    llvm::all_of(SourceRoots.Roots, [](const VarDecl *S) {
                      return S->getType().isRestrictQualified();
                    });
    if (Restrict)
      continue;
    if (!Opts.AssumeNoAlias)
      return Verdict::refuse(Reason::StoreMayAlias,
                             What + " stores through " + quoted(Root) +
                                 ", which may overlap what the copies read (" +
                                 llvm::join(M.SourcePointers, ", ") + ")");
    if (!llvm::is_contained(M.NoAliasAssumed, Root->getNameAsString()))
      M.NoAliasAssumed.push_back(Root->getNameAsString());
  }
  return {};
}

Verdict LoopChecker::checkStores() {
  // Every store the loop's compute phase and index declarations make, through the calls, lambdas
  // and pointer copies they hold, with each store's memory named by where its pointer comes from.
  std::vector<const Stmt *> Region(M.ComputePhase.begin(), M.ComputePhase.end());
  Region.insert(Region.end(), M.IndexDecls.begin(), M.IndexDecls.end());
  RegionEffects Fx = Effects.effectsOf(M.Function, Region);
  if (Fx.UnknownAt)
    return Verdict::refuse(Reason::UnknownEffects,
                           "'" + text(Fx.UnknownAt).substr(0, 60) + "': " + Fx.UnknownWhy);
  for (const MemoryWrite &W : Fx.Writes)
    if (Verdict V = classifyStoreTarget(W.Target, W.Where); !V.ok())
      return V;
  // What the compute phase reads or writes besides its tiles may be read or written after the
  // loop by another thread: then the barrier that ended the original's last iteration stays.
  M.ComputeWritesMemory = Fx.Touched.Unknown || llvm::any_of(Fx.Touched.Roots, [&](const VarDecl *V) {
                            return !TileIndex.count(V);
                          });
  return {};
}

Verdict LoopChecker::checkOverlap() {
  // Two stores of one thread into one tile element in one iteration would land in an order that
  // asynchronous copies do not keep. Distinct sites must differ by a nonzero constant in some
  // dimension; a site inside an inner copy loop must use each inner variable in an index.
  for (size_t I = 0; I < Sites.size(); ++I) {
    std::vector<const Expr *> IdxI;
    const VarDecl *TV = nullptr;
    (void)tileOfLValue(Sites[I].Dst, TV, IdxI);
    if (!Sites[I].Inner.empty()) {
      for (const VarDecl *IV : Sites[I].Inner) {
        std::string Key = "v" + std::to_string(reinterpret_cast<uintptr_t>(IV));
        bool Used = false;
        for (const Expr *E : IdxI) {
          Affine A;
          if (affine(E, A) && A.Terms.count(Key))
            Used = true;
        }
        if (!Used)
          return Verdict::refuse(Reason::TileOverlap, "the inner copy loop variable " + quoted(IV) +
                                                          " does not select the tile element");
      }
    }
    for (size_t J = I + 1; J < Sites.size(); ++J) {
      if (Sites[I].TileIdx != Sites[J].TileIdx)
        continue;
      if (!Sites[I].Inner.empty() || !Sites[J].Inner.empty())
        return Verdict::refuse(Reason::TileOverlap,
                               "an inner copy loop and another copy both write " + quoted(TV));
      std::vector<const Expr *> IdxJ;
      (void)tileOfLValue(Sites[J].Dst, TV, IdxJ);
      bool Distinct = false;
      for (size_t D = 0; D < IdxI.size() && D < IdxJ.size(); ++D) {
        Affine A, B;
        if (!affine(IdxI[D], A) || !affine(IdxJ[D], B))
          continue;
        A.add(B, -1);
        if (A.Terms.empty() && A.Constant != 0)
          Distinct = true;
      }
      if (!Distinct)
        return Verdict::refuse(Reason::TileOverlap, "'" + text(Sites[I].Dst) + "' and '" +
                                                        text(Sites[J].Dst) +
                                                        "' may be the same element");
    }
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Tile boxes: the block-wide view of a per-thread copy
//===----------------------------------------------------------------------===//

/// Every declaration E names, in order.
static std::vector<const ValueDecl *> declsIn(const Expr *E) {
  struct Names : RecursiveASTVisitor<Names> {
    std::vector<const ValueDecl *> Decls;
    bool VisitDeclRefExpr(DeclRefExpr *DRE) {
      Decls.push_back(DRE->getDecl());
      return true;
    }
  } N;
  N.TraverseStmt(const_cast<Expr *>(E));
  return N.Decls;
}

/// 'x', 'y' or 'z' when E is threadIdx.x/y/z, or a local set once from it; 0 otherwise.
char LoopChecker::threadDim(const Expr *E) {
  std::string Key;
  E = E->IgnoreParenImpCasts();
  if (isBuiltinIndexRead(E, &Key))
    return StringRef(Key).starts_with("threadIdx.") && Key.size() == 11 ? Key.back() : 0;
  const VarDecl *V = varOf(E);
  if (!V || !setOnceLocal(V))
    return 0;
  if (isBuiltinIndexRead(V->getInit(), &Key) && StringRef(Key).starts_with("threadIdx.") &&
      Key.size() == 11)
    return Key.back();
  return 0;
}

/// Whether S may take a different value in different threads of a block.
bool LoopChecker::mentionsThread(const Stmt *S, unsigned Depth) {
  if (!S || Depth > 8)
    return S != nullptr;
  if (const auto *E = dyn_cast<Expr>(S)) {
    std::string Key;
    if (isBuiltinIndexRead(E, &Key))
      return !StringRef(Key).starts_with("blockIdx.") && !StringRef(Key).starts_with("blockDim.") &&
             !StringRef(Key).starts_with("gridDim.");
    if (threadDim(E))
      return true;
    if (const VarDecl *V = varOf(E)) {
      if (IndexDeclDeps.count(V))
        return mentionsThread(V->getInit(), Depth + 1);
      if (isInduction(V)) {
        // Uniform when it starts uniform and steps uniformly (assumed of itself while looking).
        if (!UniformVisiting.insert(V).second)
          return false;
        if (!startSetJustBefore(V)) {
          UniformVisiting.erase(V);
          return true;
        }
        bool R = mentionsThread(V->getInit(), Depth + 1) || mentionsThread(M.Init, Depth + 1) ||
                 mentionsThread(M.Inc, Depth + 1);
        for (const Stmt *T : M.TailIncs)
          R = R || mentionsThread(T, Depth + 1);
        UniformVisiting.erase(V);
        return R;
      }
      if (V->hasLocalStorage() && !isa<ParmVarDecl>(V)) {
        // A local of the function: uniform only when set once from uniform values.
        if (!V->getInit() || changes(V))
          return true;
        return mentionsThread(V->getInit(), Depth + 1);
      }
      return false;
    }
  }
  for (const Stmt *C : S->children())
    if (mentionsThread(C, Depth))
      return true;
  return false;
}

void LoopChecker::analyzeBoxes() {
  for (size_t TI = 0; TI < M.Tiles.size(); ++TI) {
    TileBox &B = M.Tiles[TI].Box;
    auto No = [&](std::string Why) { B.WhyNot = std::move(Why); };
    std::vector<size_t> Mine;
    for (size_t I = 0; I < M.Stores.size(); ++I)
      if (M.Stores[I].TileIdx == TI)
        Mine.push_back(I);
    const std::string Name = quoted(M.Tiles[TI].Var);
    // A guarded copy: one read where a single guard holds, one fill where it does not. Only a
    // tensor copy, which fills zeros outside the tensor, may move such a tile whole.
    const TileStore *FillStore = nullptr;
    if (llvm::any_of(Mine, [&](size_t I) { return !M.Stores[I].Src || M.Stores[I].Fill || M.Stores[I].Guards; })) {
      if (Mine.size() == 2 && M.Stores[Mine[1]].Src && !M.Stores[Mine[0]].Src)
        std::swap(Mine[0], Mine[1]);
      const TileStore *R = Mine.size() == 2 ? &M.Stores[Mine[0]] : nullptr;
      const TileStore *Z = Mine.size() == 2 ? &M.Stores[Mine[1]] : nullptr;
      if (!R || !R->Src || !Z->Fill || R->Guards != 1 || Z->Guards != 1 || R->Guard != Z->Guard ||
          R->GuardIf != Z->GuardIf || !R->WhenGuardHolds || Z->WhenGuardHolds) {
        No("the copy into " + Name + " is guarded");
        continue;
      }
      FillStore = Z;
      B.Guarded = true; // never a block-wide 16-byte copy, which fills no zeros
      B.WhyNot = "the copy into " + Name + " is guarded";
      Mine.pop_back();
    }
    if (Mine.size() != 1) {
      No("several stores fill " + Name);
      continue;
    }
    const TileStore &S = M.Stores[Mine.front()];
    B.Replaced = S.GuardIf ? static_cast<const Stmt *>(S.GuardIf) : S.Statement;
    if (!llvm::is_contained(M.CopyPhase, B.Replaced)) {
      No("the copy into " + Name + " is inside an if or an inner loop");
      continue;
    }
    // The destination: one thread index per tile dimension, each a different one.
    const VarDecl *TV = nullptr;
    std::vector<const Expr *> DstIdx;
    (void)tileOfLValue(S.Dst, TV, DstIdx);
    std::vector<char> Dims;
    for (const Expr *I : DstIdx)
      if (char D = threadDim(I); D && !llvm::is_contained(Dims, D))
        Dims.push_back(D);
    if (Dims.size() != DstIdx.size()) {
      No("the subscripts of '" + text(S.Dst) + "' are not distinct thread indices");
      continue;
    }
    const auto *ASE = dyn_cast<ArraySubscriptExpr>(stripNoOps(S.Src));
    if (!ASE) {
      No("'" + text(S.Src) + "' is not a subscript");
      continue;
    }
    B.Pointer = sourceText(Ctx, ASE->getBase()->getSourceRange());
    if (B.Pointer.empty() || mentionsThread(ASE->getBase())) {
      No("the pointer of '" + text(S.Src) + "' differs between threads");
      continue;
    }
    // The source index must be uniform + sum(uniform coefficient * thread index).
    const Expr *Idx = ASE->getIdx();
    std::map<char, Coef> Coefs;
    CoefExprs.clear();
    B.Index = sourceText(Ctx, Idx->getSourceRange());
    if (B.Index.empty() || !threadAffine(Idx, Coefs)) {
      No("'" + text(Idx) + "' is not a uniform value plus uniform multiples of thread indices");
      continue;
    }
    // Every thread index of the destination selects a row of the source, the innermost a column.
    bool Match = Coefs.size() == Dims.size();
    for (char D : Dims)
      Match &= Coefs.count(D) > 0;
    if (!Match || Coefs[Dims.back()].Const != 1) {
      No("'" + text(S.Src) + "' does not read the rows of a box in the order of '" + text(S.Dst) +
         "'");
      continue;
    }
    B.Valid = true;
    B.Store = Mine.front();
    B.ThreadDims = Dims;
    for (char D : Dims)
      B.Coefficients.push_back(Coefs[D].Text);
    analyzeTma(M.Tiles[TI], FillStore);
    analyzeBulk(M.Tiles[TI]);
  }
}

/// Whether E means the same in a host function beside the kernel that takes the kernel's
/// parameters: it names only unchanged parameters and compile-time constants.
bool LoopChecker::hostVisible(const Expr *E) {
  for (const ValueDecl *D : declsIn(E)) {
    if (isa<EnumConstantDecl, NonTypeTemplateParmDecl>(D))
      continue;
    const auto *V = dyn_cast<VarDecl>(D);
    if (!V)
      return false;
    if (isa<ParmVarDecl>(V)) {
      if (!unchangedParam(V))
        return false;
      continue;
    }
    if (V->hasLocalStorage() || !V->isConstexpr())
      return false;
  }
  return true;
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

void LoopChecker::analyzeTma(Tile &T, const TileStore *FillStore) {
  TileBox &B = T.Box;
  auto No = [&](std::string Why) {
    B.Tma = false;
    B.TmaWhyNot = std::move(Why);
  };
  if (!M.Function->hasAttr<CUDAGlobalAttr>())
    return No("the copy is in a __device__ function, which the host cannot hand a tensor map");
  if (B.ThreadDims.size() == 3 && FillStore)
    return No("the copy into " + quoted(T.Var) +
              " is guarded and has three dimensions; guarded tensor copies take one or two");
  const TileStore &S = M.Stores[B.Store];
  const auto *ASE = cast<ArraySubscriptExpr>(stripNoOps(S.Src));
  const Expr *Ptr = ASE->getBase()->IgnoreParenImpCasts();
  const auto *DRE = dyn_cast<DeclRefExpr>(Ptr);
  const auto *P = DRE ? dyn_cast<ParmVarDecl>(DRE->getDecl()) : nullptr;
  if (!P || !unchangedParam(P))
    return No("'" + text(ASE->getBase()) + "' is not an unchanged parameter of the kernel");
  for (const Expr *U : CoefExprs)
    if (!hostVisible(U))
      return No("the row stride '" + text(U) + "' is not made of kernel parameters and constants");
  // The tile's extents, as written, for the box the host describes.
  TypeLoc TL = T.Var->getTypeSourceInfo()->getTypeLoc();
  std::vector<std::string> Extents;
  while (auto ATL = TL.getAs<ArrayTypeLoc>()) {
    const Expr *Size = ATL.getSizeExpr();
    std::string Text = Size ? sourceText(Ctx, Size->getSourceRange()) : "";
    if (Text.empty() || !hostVisible(Size))
      return No("the extents of " + quoted(T.Var) + " are not compile-time constants visible outside the kernel");
    Extents.push_back(Text);
    TL = ATL.getElementLoc();
  }
  // The element type must mean the same beside the kernel.
  if (const auto *TD = T.ElementType->getAsTagDecl(); TD && TD->getDeclContext()->isFunctionOrMethod())
    return No("the element type of " + quoted(T.Var) + " is declared in the kernel");
  // A box moves at most 256 elements per dimension (16-byte elements travel as two).
  const uint64_t Words = Ctx.getTypeSizeInChars(T.ElementType).getQuantity() == 16 ? 2 : 1;
  std::vector<uint64_t> Sizes;
  for (const ConstantArrayType *A = Ctx.getAsConstantArrayType(T.Var->getType()); A;
       A = Ctx.getAsConstantArrayType(A->getElementType()))
    Sizes.push_back(A->getSize().getZExtValue());
  if (!Sizes.empty() && (Sizes.back() * Words > 256 || llvm::any_of(Sizes, [](uint64_t E) { return E > 256; }))) {
    std::vector<std::string> Dims;
    for (uint64_t E : Sizes)
      Dims.push_back(std::to_string(E));
    return No("the box of '" + T.Var->getNameAsString() + "' (" + llvm::join(Dims, " x ") +
              (Words == 2 ? " elements of 16 bytes" : " elements") +
              ") exceeds the 256 elements a tensor copy moves per dimension");
  }
  // The copy engine moves box rows of whole 16-byte units.
  const uint64_t ElemBytes = Ctx.getTypeSizeInChars(T.ElementType).getQuantity();
  if (!Sizes.empty() && Sizes.back() * ElemBytes % 16 != 0)
    return No("a row of the box of '" + T.Var->getNameAsString() + "' (" + std::to_string(Sizes.back()) + " x " +
              std::to_string(ElemBytes) + " bytes) is not a multiple of 16 bytes");
  if (std::string Why = unevenStep(ASE->getIdx()); !Why.empty())
    return No(Why);
  if (FillStore) {
    // The tensor map fills zero bits where the guard fails: the fill must be a zero of that kind.
    Expr::EvalResult Z;
    const Expr *F = FillStore->Fill;
    bool Zero = T.ElementType->isArithmeticType() && !F->isValueDependent() && F->EvaluateAsRValue(Z, Ctx) &&
                ((Z.Val.isInt() && Z.Val.getInt().isZero()) || (Z.Val.isFloat() && Z.Val.getFloat().isPosZero()));
    if (!Zero)
      return No("the guarded copy into " + quoted(T.Var) + " fills '" + text(F) +
                "' where a tensor copy would fill zeros");
    std::string Why;
    if (!guardBounds(T, S.Guard, Why))
      return No(Why);
  }
  B.Tma = true;
  B.PointerParam = P->getNameAsString();
  B.ExtentText = Extents;
}

void LoopChecker::analyzeBulk(Tile &T) {
  TileBox &B = T.Box;
  auto No = [&](std::string Why) {
    B.Bulk = false;
    B.BulkWhyNot = std::move(Why);
  };
  if (B.Guarded)
    return No("the copy into " + quoted(T.Var) + " is guarded, and a bulk copy fills no zeros");
  if (B.ThreadDims.size() != 1)
    return No(quoted(T.Var) + " has more than one dimension, so it is not one contiguous piece");
  if (T.Bytes % 16 != 0)
    return No(quoted(T.Var) + " holds " + std::to_string(T.Bytes) +
              " bytes, not a whole number of the 16-byte units a bulk copy moves");
  // The leader's probe of the first two tiles speaks for the others only if the pointer stays.
  const auto *ASE = cast<ArraySubscriptExpr>(stripNoOps(M.Stores[B.Store].Src));
  if (classify(ASE->getBase()).D != Dep::Invariant)
    return No("the pointer '" + text(ASE->getBase()) + "' changes from tile to tile");
  if (std::string Why = unevenStep(ASE->getIdx()); !Why.empty())
    return No(Why);
  B.Bulk = true;
}

/// Reads a tile copy's guard as one upper bound per box dimension, `Coordinate < Bound` (or <=, or
/// the mirror), joined by &&: each coordinate an int one step per thread index of its dimension
/// and moving by a fixed step from tile to tile, each bound an int of kernel parameters and
/// constants. Then a tensor map whose extents are the bounds zero-fills what the guard excludes.
/// The leader checks at run time that the index is the coordinates' place in the map (index ==
/// row * stride + column) and that no coordinate is negative, for the loop's first two tiles.
bool LoopChecker::guardBounds(Tile &T, const Expr *Guard, std::string &Why) {
  TileBox &B = T.Box;
  const std::string G = "the guard '" + text(Guard) + "'";
  std::vector<const Expr *> Conjuncts, Work{Guard};
  while (!Work.empty()) {
    const Expr *E = Work.back()->IgnoreParens();
    Work.pop_back();
    if (const auto *BO = dyn_cast<BinaryOperator>(E); BO && BO->getOpcode() == BO_LAnd) {
      Work.push_back(BO->getRHS());
      Work.push_back(BO->getLHS());
    } else {
      Conjuncts.push_back(E);
    }
  }
  const size_t Rank = B.ThreadDims.size();
  std::vector<std::string> Coords(Rank), Bounds(Rank);
  for (const Expr *C : Conjuncts) {
    const auto *BO = dyn_cast<BinaryOperator>(C);
    if (!BO || !BO->isRelationalOp()) {
      Why = G + " is not a conjunction of comparisons";
      return false;
    }
    // In 32 bits: a coordinate past 2^31 is as far out of the map as past the bound. (Unsigned, a
    // negative bound is a huge one; the launcher then makes no map, as for any bound below 1.)
    const Expr *L = BO->getLHS(), *R = BO->getRHS();
    QualType CT = L->getType().getCanonicalType().getUnqualifiedType();
    if ((!Ctx.hasSameType(CT, Ctx.IntTy) && !Ctx.hasSameType(CT, Ctx.UnsignedIntTy)) ||
        !Ctx.hasSameType(CT, R->getType().getCanonicalType().getUnqualifiedType())) {
      Why = "'" + text(C) + "' does not compare ints or unsigned ints";
      return false;
    }
    bool LT = mentionsThread(L), RT = mentionsThread(R);
    if (LT == RT) {
      Why = "'" + text(C) + "' does not compare a thread's coordinate with a bound the same in all threads";
      return false;
    }
    BinaryOperatorKind Op = BO->getOpcode();
    if (RT) { // B > E is E < B
      std::swap(L, R);
      Op = Op == BO_GT ? BO_LT : Op == BO_GE ? BO_LE : Op == BO_LT ? BO_GT : BO_GE;
    }
    if (Op != BO_LT && Op != BO_LE) {
      Why = "'" + text(C) + "' bounds a coordinate from below, which a tensor map does not";
      return false;
    }
    std::string BoundText = sourceText(Ctx, R->getSourceRange());
    if (BoundText.empty() || classify(R).D != Dep::Invariant || !hostVisible(R)) {
      Why = "the bound '" + text(R) + "' is not made of kernel parameters and constants";
      return false;
    }
    if (Op == BO_LE)
      BoundText = "(" + BoundText + ") + 1";
    std::map<char, Coef> Coefs;
    std::string CoordText = sourceText(Ctx, L->getSourceRange());
    size_t D = Rank;
    if (threadAffine(L, Coefs) && Coefs.size() == 1 && Coefs.begin()->second.Const == 1)
      D = llvm::find(B.ThreadDims, Coefs.begin()->first) - B.ThreadDims.begin();
    if (CoordText.empty() || D == Rank) {
      Why = "'" + text(L) + "' is not a coordinate of the box: one step per thread index of one of its dimensions";
      return false;
    }
    if (!Bounds[D].empty()) {
      Why = G + " bounds a dimension of the box twice";
      return false;
    }
    if (!stepsEvenly(L)) {
      Why = "'" + text(L) + "' does not move by a fixed step from tile to tile";
      return false;
    }
    Coords[D] = CoordText;
    Bounds[D] = BoundText;
  }
  if (llvm::any_of(Bounds, [](const std::string &S) { return S.empty(); })) {
    Why = G + " does not bound every dimension of the box";
    return false;
  }
  B.Coordinates = Coords;
  B.Bounds = Bounds;
  return true;
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

/// Every name in E means at the loop what it means where E is written: parameters, constants, and
/// locals that never change and whose names nothing else in the function declares.
bool LoopChecker::visibleAtLoop(const Expr *E) {
  std::vector<const VarDecl *> Vars;
  for (const ValueDecl *D : declsIn(E)) {
    if (const auto *V = dyn_cast<VarDecl>(D))
      Vars.push_back(V);
    else if (!isa<EnumConstantDecl, NonTypeTemplateParmDecl, FunctionDecl>(D))
      return false;
  }
  if (NameCounts.empty()) {
    struct AllVars : RecursiveASTVisitor<AllVars> {
      std::map<std::string, unsigned> *Count;
      bool VisitVarDecl(VarDecl *V) {
        ++(*Count)[V->getNameAsString()];
        return true;
      }
    } All;
    All.Count = &NameCounts;
    All.TraverseStmt(M.Function->getBody());
  }
  for (const VarDecl *V : Vars) {
    if (isCudaBuiltinVar(V) || !V->hasLocalStorage() || isa<ParmVarDecl>(V))
      continue;
    if (changes(V) || NameCounts[V->getNameAsString()] != 1)
      return false;
  }
  return true;
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

/// E as uniform + sum over thread dimensions of Out[d] * threadIdx.d, with the coefficients as
/// text valid at the loop; false when E is not of that form.
bool LoopChecker::threadAffine(const Expr *E, std::map<char, Coef> &Out, unsigned Depth) {
  if (Depth > 8)
    return false;
  E = E->IgnoreParens();
  if (const auto *ICE = dyn_cast<ImplicitCastExpr>(E);
      ICE && (ICE->getCastKind() == CK_IntegralCast || ICE->getCastKind() == CK_LValueToRValue ||
              ICE->getCastKind() == CK_NoOp))
    return threadAffine(ICE->getSubExpr(), Out, Depth);
  if (!mentionsThread(E))
    return true;
  auto Add = [&](char D, const Coef &C, int Sign) {
    std::string T = Sign < 0 ? "-(" + C.Text + ")" : C.Text;
    std::optional<int64_t> K;
    if (C.Const)
      K = Sign * *C.Const;
    auto It = Out.find(D);
    if (It == Out.end()) {
      Out[D] = {T, K};
      return;
    }
    It->second.Text = "(" + It->second.Text + ") + (" + T + ")";
    It->second.Const = It->second.Const && K ? std::optional<int64_t>(*It->second.Const + *K)
                                             : std::nullopt;
  };
  if (char D = threadDim(E)) {
    Add(D, {"1", 1}, 1);
    return true;
  }
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    if (BO->getOpcode() == BO_Add || BO->getOpcode() == BO_Sub) {
      std::map<char, Coef> L, R;
      if (!threadAffine(BO->getLHS(), L, Depth + 1) || !threadAffine(BO->getRHS(), R, Depth + 1))
        return false;
      for (auto &[D, C] : L)
        Add(D, C, 1);
      for (auto &[D, C] : R)
        Add(D, C, BO->getOpcode() == BO_Add ? 1 : -1);
      return true;
    }
    if (BO->getOpcode() == BO_Mul) {
      const Expr *U = BO->getLHS(), *X = BO->getRHS();
      if (mentionsThread(U))
        std::swap(U, X);
      if (mentionsThread(U))
        return false;
      std::string UText = sourceText(Ctx, U->getSourceRange());
      if (UText.empty() || !visibleAtLoop(U) || classify(U).D == Dep::Bad)
        return false;
      CoefExprs.push_back(U);
      std::optional<int64_t> UConst;
      Expr::EvalResult ER;
      if (!U->isValueDependent() && U->EvaluateAsInt(ER, Ctx))
        UConst = ER.Val.getInt().getExtValue();
      std::map<char, Coef> Sub;
      if (!threadAffine(X, Sub, Depth + 1))
        return false;
      for (auto &[D, C] : Sub) {
        Coef Scaled{C.Const == 1 ? UText : "(" + C.Text + ") * (" + UText + ")",
                    std::nullopt};
        if (C.Const && UConst)
          Scaled.Const = *C.Const * *UConst;
        Add(D, Scaled, 1);
      }
      return true;
    }
    return false;
  }
  // A local set once from thread indices: follow its start.
  if (const VarDecl *V = varOf(E); V && setOnceLocal(V))
    return threadAffine(V->getInit(), Out, Depth + 1);
  return false;
}

static uint64_t sharedBytesOutside(ASTContext &Ctx, const FunctionDecl *FD,
                                   const std::vector<Tile> &Tiles) {
  struct Decls : RecursiveASTVisitor<Decls> {
    std::vector<const VarDecl *> Shared;
    bool VisitVarDecl(VarDecl *V) {
      if (isSharedVar(V) && !V->hasExternalStorage())
        Shared.push_back(V);
      return true;
    }
  } D;
  D.TraverseStmt(FD->getBody());
  uint64_t Bytes = 0;
  for (const VarDecl *V : D.Shared)
    if (llvm::none_of(Tiles, [&](const Tile &T) { return T.Var == V; }) &&
        !V->getType()->isDependentType() && !V->getType()->isIncompleteType())
      Bytes += Ctx.getTypeSizeInChars(V->getType()).getQuantity();
  return Bytes;
}

Verdict LoopChecker::run() {
  if (inMacro(M.Loop->getSourceRange()))
    return Verdict::refuse(Reason::Macro, "the loop is written inside a macro");
  // A '#pragma unroll' or attribute on the loop would end up on the emitted block.
  for (const DynTypedNode &P : Ctx.getParents(*M.Loop))
    if (P.get<AttributedStmt>())
      return Verdict::refuse(Reason::Unsupported, "a #pragma or attribute applies to the loop");
  InFunction = &Effects.localFacts(M.Function);
  InLoop.scan(M.Loop);
  if (Verdict V = checkShape(); !V.ok())
    return V;
  if (InLoop.HasLambda)
    return Verdict::refuse(Reason::Unsupported, "the loop holds a lambda");
  if (Verdict V = collectInductions(); !V.ok())
    return V;
  if (Verdict V = checkCopyPhase(); !V.ok())
    return V;
  if (Verdict V = checkTiles(); !V.ok())
    return V;
  if (Verdict V = checkStores(); !V.ok())
    return V;
  if (Verdict V = checkOverlap(); !V.ok())
    return V;
  // Will the emitted block run again while threads may still read the last stage?
  M.NestedInLoop = !M.Function->hasAttr<CUDAGlobalAttr>();
  for (DynTypedNodeList P = Ctx.getParents(*M.Loop); !P.empty(); P = Ctx.getParents(P[0])) {
    if (const Stmt *S = P[0].get<Stmt>(); S && isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(S))
      M.NestedInLoop = true;
    if (P[0].get<FunctionDecl>())
      break;
  }
  M.OtherSharedBytes = sharedBytesOutside(Ctx, M.Function, M.Tiles);
  analyzeBoxes();
  // Copies of whole tiles (16-byte chunks spread over the block's thread ranks, or one thread
  // issuing for all) stand in for every thread's own copy: they need every thread at the loop.
  std::string Why;
  M.AllThreadsReachLoop = allThreadsReach(Ctx, Index, Effects, M.Function, M.Loop, Why);
  if (!M.AllThreadsReachLoop)
    for (Tile &T : M.Tiles) {
      TileBox &B = T.Box;
      std::string Because = "not every thread of the block provably reaches the loop: " + Why;
      if (B.Valid) {
        B.Valid = false;
        B.WhyNot = Because;
      }
      if (B.Tma) {
        B.Tma = false;
        B.TmaWhyNot = Because;
      }
      if (B.Bulk) {
        B.Bulk = false;
        B.BulkWhyNot = Because;
      }
    }
  return {};
}

} // namespace

Verdict checkLoop(ASTContext &Ctx, const TranslationUnitIndex &Index, const Candidate &C,
                  const CheckOptions &Opts, LoopModel &Out) {
  Out.Loop = C.Loop;
  Out.Function = C.Function;
  // A loop that already issues asynchronous copies is left alone.
  struct Async : RecursiveASTVisitor<Async> {
    bool Found = false;
    bool VisitCallExpr(CallExpr *CE) {
      if (const FunctionDecl *FD = CE->getDirectCallee())
        if (FD->getIdentifier()) {
          StringRef N = FD->getName();
          if (N.contains("memcpy_async") || N == "consumer_wait" || N == "producer_commit" ||
              N.starts_with("__pipeline_") || N.starts_with("pipeline_consumer_wait"))
            Found = true;
        }
      return true;
    }
  } A;
  A.TraverseStmt(const_cast<Stmt *>(C.Loop));
  if (A.Found)
    return Verdict::refuse(Reason::AlreadyPipelined, "");
  LoopChecker Checker(Ctx, Index, C, Opts, Out);
  return Checker.run();
}

} // namespace tilepipe

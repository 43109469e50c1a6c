// Effects: writes and reads with memory named by the origin of its pointers; escaped locals;
// purity; whether every thread reaches a statement. See tilepipe/Effects.h.
#include "tilepipe/Effects.h"
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

static constexpr unsigned MaxDepth = 8;

static bool isSharedVar(const VarDecl *V) { return V && V->hasAttr<CUDASharedAttr>(); }

static std::string quoted(const NamedDecl *D) { return "'" + D->getNameAsString() + "'"; }

/// A variable whose value is fixed before the program runs: reading it reads no memory that
/// the program can change.
static bool isConstantVar(const VarDecl *V) {
  if (V->isConstexpr())
    return true;
  return !V->hasLocalStorage() && V->getType().isConstQualified() && V->hasInit() &&
         !V->hasAttr<CUDADeviceAttr>() && !V->hasAttr<CUDAConstantAttr>() && !isSharedVar(V);
}

//===----------------------------------------------------------------------===//
// RootSet
//===----------------------------------------------------------------------===//

void RootSet::add(const VarDecl *V) {
  if (!llvm::is_contained(Roots, V))
    Roots.push_back(V);
}

void RootSet::join(const RootSet &O) {
  for (const VarDecl *V : O.Roots)
    add(V);
  if (O.Unknown && !Unknown)
    unknown(O.Why);
}

void RootSet::unknown(std::string W) {
  if (!Unknown) {
    Unknown = true;
    Why = std::move(W);
  }
}

//===----------------------------------------------------------------------===//
// LocalFacts
//===----------------------------------------------------------------------===//

namespace {
class LocalScanner : public RecursiveASTVisitor<LocalScanner> {
public:
  explicit LocalScanner(LocalFacts &F) : F(F) {}
  LocalFacts &F;
  bool shouldVisitLambdaBody() const { return true; }

  /// The variable whose storage the lvalue E names (through members and array elements of
  /// variables, not through pointers).
  static const VarDecl *storageOf(const Expr *E) {
    while (true) {
      E = E->IgnoreParenImpCasts();
      if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
        return dyn_cast<VarDecl>(DRE->getDecl());
      if (const auto *ME = dyn_cast<MemberExpr>(E)) {
        if (ME->isArrow())
          return nullptr;
        E = ME->getBase();
        continue;
      }
      if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(E)) {
        const Expr *Base = ASE->getBase()->IgnoreParens();
        const auto *ICE = dyn_cast<ImplicitCastExpr>(Base);
        if (!ICE || ICE->getCastKind() != CK_ArrayToPointerDecay)
          return nullptr;
        E = ICE->getSubExpr();
        continue;
      }
      if (const auto *CO = dyn_cast<ConditionalOperator>(E)) {
        // Either side may be the one bound: both are marked by the caller through markBoth.
        (void)CO;
        return nullptr;
      }
      return nullptr;
    }
  }
  void mark(const Expr *E, bool Escapes) {
    E = E->IgnoreParenImpCasts();
    if (const auto *CO = dyn_cast<ConditionalOperator>(E)) {
      mark(CO->getTrueExpr(), Escapes);
      mark(CO->getFalseExpr(), Escapes);
      return;
    }
    if (const auto *BO = dyn_cast<BinaryOperator>(E); BO && BO->getOpcode() == BO_Comma)
      return mark(BO->getRHS(), Escapes);
    if (const auto *BO = dyn_cast<BinaryOperator>(E); BO && BO->isAssignmentOp()) {
      // `(a = b)` is the lvalue a.
      return mark(BO->getLHS(), Escapes);
    }
    if (const auto *UO = dyn_cast<UnaryOperator>(E); UO && UO->isPrefix() &&
                                                      UO->isIncrementDecrementOp())
      return mark(UO->getSubExpr(), Escapes);
    if (const VarDecl *V = storageOf(E)) {
      F.Mutated.insert(V);
      if (Escapes)
        F.Escaped.insert(V);
    }
  }
  /// Binding E to a reference (or a pointer parameter of an array) of non-const type.
  void bindNonConst(const Expr *E) { mark(E, /*Escapes=*/true); }

  bool VisitBinaryOperator(BinaryOperator *BO) {
    if (BO->isAssignmentOp())
      mark(BO->getLHS(), false);
    return true;
  }
  bool VisitUnaryOperator(UnaryOperator *UO) {
    if (UO->isIncrementDecrementOp())
      mark(UO->getSubExpr(), false);
    if (UO->getOpcode() == UO_AddrOf)
      bindNonConst(UO->getSubExpr());
    return true;
  }
  llvm::SmallPtrSet<const Expr *, 16> Subscripted; ///< array decays that are only indexed
  bool VisitArraySubscriptExpr(ArraySubscriptExpr *ASE) {
    Subscripted.insert(ASE->getBase()->IgnoreParens());
    return true;
  }
  bool VisitImplicitCastExpr(ImplicitCastExpr *ICE) {
    // An array that decays to a pointer of non-const elements can be written through it
    // (`a[i] = x` is a store into a's element, seen by the assignment).
    if (ICE->getCastKind() == CK_ArrayToPointerDecay && !Subscripted.contains(ICE) &&
        !ICE->getType()->getPointeeType().isConstQualified())
      bindNonConst(ICE->getSubExpr());
    return true;
  }
  bool VisitCXXConstCastExpr(CXXConstCastExpr *CE) {
    bindNonConst(CE->getSubExpr());
    return true;
  }
  void args(const FunctionDecl *FD, llvm::ArrayRef<const Expr *> Args, unsigned Skip) {
    for (unsigned I = 0; I < Args.size(); ++I) {
      QualType PT;
      if (FD && I >= Skip && I - Skip < FD->getNumParams())
        PT = FD->getParamDecl(I - Skip)->getType();
      if (PT.isNull()) {
        // Unknown callee or variadic part: an lvalue argument may be bound to anything.
        if (Args[I]->isGLValue())
          bindNonConst(Args[I]);
        continue;
      }
      if (PT->isReferenceType() && !PT.getNonReferenceType().isConstQualified())
        bindNonConst(Args[I]);
    }
  }
  bool VisitCallExpr(CallExpr *CE) {
    const FunctionDecl *FD = CE->getDirectCallee();
    unsigned Skip = 0;
    if (const auto *MD = dyn_cast_or_null<CXXMethodDecl>(FD);
        MD && isa<CXXOperatorCallExpr>(CE) && MD->isInstance())
      Skip = 1; // argument 0 is the object
    llvm::SmallVector<const Expr *, 4> A(CE->arguments());
    args(FD, A, Skip);
    if (Skip == 1 && CE->getNumArgs() > 0 && !cast<CXXMethodDecl>(FD)->isConst())
      bindNonConst(CE->getArg(0));
    return true;
  }
  bool VisitCXXMemberCallExpr(CXXMemberCallExpr *CE) {
    if (const CXXMethodDecl *MD = CE->getMethodDecl(); MD && !MD->isConst())
      if (const Expr *Obj = CE->getImplicitObjectArgument(); Obj && Obj->isGLValue())
        bindNonConst(Obj);
    return true;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr *CE) {
    llvm::SmallVector<const Expr *, 4> A(CE->arguments());
    args(CE->getConstructor(), A, 0);
    return true;
  }
  bool VisitVarDecl(VarDecl *V) {
    F.Declared.insert(V);
    if (V->getType()->isReferenceType() && V->getInit() &&
        !V->getType().getNonReferenceType().isConstQualified())
      bindNonConst(V->getInit());
    return true;
  }
  bool VisitInitListExpr(InitListExpr *ILE) {
    // Aggregate members of reference type bind their initializers.
    const auto *RD = ILE->getType()->getAsRecordDecl();
    if (!RD)
      return true;
    unsigned I = 0;
    for (const FieldDecl *FD : RD->fields()) {
      if (I >= ILE->getNumInits())
        break;
      const Expr *Init = ILE->getInit(I++);
      if (FD->getType()->isReferenceType() &&
          !FD->getType().getNonReferenceType().isConstQualified())
        bindNonConst(Init);
    }
    return true;
  }
  bool VisitLambdaExpr(LambdaExpr *LE) {
    F.HasLambda = true;
    // A variable captured by reference is changed wherever the lambda is called, which may be
    // anywhere: if the body may change it (or pass it on), it is as good as escaped. One the
    // body only reads stays an ordinary variable.
    LocalFacts Body;
    Body.scan(LE->getBody());
    for (const LambdaCapture &C : LE->captures())
      if (C.capturesVariable() && C.getCaptureKind() == LCK_ByRef)
        if (const auto *V = dyn_cast<VarDecl>(C.getCapturedVar()); V && Body.changes(V)) {
          F.Mutated.insert(V);
          F.Escaped.insert(V);
        }
    return true;
  }
};
} // namespace

void LocalFacts::scan(const Stmt *S) {
  if (!S)
    return;
  LocalScanner Scan(*this);
  Scan.TraverseStmt(const_cast<Stmt *>(S));
}

const LocalFacts &EffectsAnalyzer::localFacts(const FunctionDecl *F) {
  auto It = Facts.find(F);
  if (It != Facts.end())
    return It->second;
  LocalFacts &LF = Facts[F];
  LF.scan(F->getBody());
  return LF;
}

//===----------------------------------------------------------------------===//
// Frames: a function entered through a call, its parameters bound to the call's arguments
//===----------------------------------------------------------------------===//

struct EffectsAnalyzer::Frame {
  const FunctionDecl *F = nullptr;
  llvm::SmallVector<const Expr *, 4> Args; ///< bound to F's parameters, in order
  const Expr *Object = nullptr;            ///< the object of a member call (what `this` is)
  bool Constructing = false;               ///< F is a constructor: `this` is a new object
  const Frame *Caller = nullptr;

  const Expr *argFor(const ParmVarDecl *P) const {
    if (P->getDeclContext() != F)
      return nullptr;
    unsigned I = P->getFunctionScopeIndex();
    return I < Args.size() ? Args[I] : nullptr;
  }
  /// The frame in which V is a variable of the running function (lambdas name the variables of
  /// the function around them directly).
  const Frame *frameOf(const VarDecl *V) const {
    for (const Frame *Fr = this; Fr; Fr = Fr->Caller)
      if (V->getDeclContext() == Fr->F)
        return Fr;
    return nullptr;
  }
};

/// Every `V = e` in the body of V's function: the values a pointer variable may be given.
static void assignmentsTo(const VarDecl *V, const Stmt *Body,
                          llvm::SmallVectorImpl<const Expr *> &Out) {
  struct Finder : RecursiveASTVisitor<Finder> {
    const VarDecl *V;
    llvm::SmallVectorImpl<const Expr *> *Out;
    bool shouldVisitLambdaBody() const { return true; }
    bool VisitBinaryOperator(BinaryOperator *BO) {
      if (BO->getOpcode() == BO_Assign)
        if (const auto *DRE = dyn_cast<DeclRefExpr>(BO->getLHS()->IgnoreParenImpCasts());
            DRE && DRE->getDecl() == V)
          Out->push_back(BO->getRHS());
      return true;
    }
  } Fi;
  Fi.V = V;
  Fi.Out = &Out;
  Fi.TraverseStmt(const_cast<Stmt *>(Body));
}

static const FunctionDecl *enclosingFunction(ASTContext &Ctx, const Stmt *S) {
  DynTypedNodeList P = Ctx.getParents(*S);
  for (unsigned I = 0; I < 64 && !P.empty(); ++I) {
    if (const auto *FD = P[0].get<FunctionDecl>())
      return FD;
    if (const auto *LE = P[0].get<LambdaExpr>())
      return LE->getCallOperator();
    P = Ctx.getParents(P[0]);
  }
  return nullptr;
}

RootSet EffectsAnalyzer::rootsOfVar(const Frame &Fr, const VarDecl *V, unsigned Depth) {
  RootSet R;
  if (Depth > MaxDepth) {
    R.unknown("pointers are passed on too deeply to follow");
    return R;
  }
  if (isSharedVar(V) || !V->hasLocalStorage()) {
    R.unknown("the pointer " + quoted(V) + " is held in memory that other code may set");
    return R;
  }
  const auto *Owner = dyn_cast<FunctionDecl>(V->getDeclContext());
  if (!Owner) {
    R.unknown("cannot tell where " + quoted(V) + " is declared");
    return R;
  }
  if (localFacts(Owner).Escaped.contains(V)) {
    R.unknown("the address of the pointer " + quoted(V) + " is taken or bound to a reference");
    return R;
  }
  const Frame *Home = Fr.frameOf(V);
  Frame Own;
  if (!Home) {
    Own.F = Owner;
    Home = &Own;
  }
  if (V->getType()->isReferenceType()) {
    const Expr *Bound = nullptr;
    if (const auto *P = dyn_cast<ParmVarDecl>(V)) {
      Bound = Home->argFor(P);
      if (Bound)
        return roots(*Home->Caller, Bound, Depth + 1);
    } else if (V->getInit()) {
      return roots(*Home, V->getInit(), Depth + 1);
    }
    R.unknown("the pointer reference " + quoted(V) + " cannot be followed");
    return R;
  }
  if (const auto *P = dyn_cast<ParmVarDecl>(V)) {
    if (const Expr *A = Home->argFor(P)) {
      R.join(roots(*Home->Caller, A, Depth + 1));
    } else if (Owner->hasAttr<CUDAGlobalAttr>()) {
      R.add(V); // a kernel parameter: the root of everything reached through it
    } else {
      // A __device__ function entered from nowhere in particular: every call in this file.
      auto Calls = Index.callersOf(Owner);
      if (Calls.empty())
        R.unknown(quoted(Owner) + " is not called in this file, so " + quoted(V) +
                  " cannot be followed");
      unsigned Pos = P->getFunctionScopeIndex();
      for (const CallExpr *CE : Calls) {
        const FunctionDecl *CallerF = enclosingFunction(Ctx, CE);
        unsigned Skip = isa<CXXOperatorCallExpr>(CE) && isa<CXXMethodDecl>(Owner) &&
                                cast<CXXMethodDecl>(Owner)->isInstance()
                            ? 1
                            : 0;
        if (!CallerF || Pos + Skip >= CE->getNumArgs()) {
          R.unknown("a call of " + quoted(Owner) + " cannot be followed");
          break;
        }
        Frame CallerFrame;
        CallerFrame.F = CallerF;
        R.join(roots(CallerFrame, CE->getArg(Pos + Skip), Depth + 1));
      }
    }
  } else if (V->getInit()) {
    R.join(roots(*Home, V->getInit(), Depth + 1));
  } else if (!V->getType()->isArrayType()) {
    // Declared without a value: only its assignments give it one (an unset pointer has none).
  }
  llvm::SmallVector<const Expr *, 4> Assigned;
  assignmentsTo(V, Owner->getBody(), Assigned);
  for (const Expr *E : Assigned)
    R.join(roots(*Home, E, Depth + 1));
  return R;
}

RootSet EffectsAnalyzer::roots(const Frame &Fr, const Expr *E, unsigned Depth) {
  RootSet R;
  if (!E) {
    R.unknown("no expression");
    return R;
  }
  if (Depth > MaxDepth) {
    R.unknown("pointers are passed on too deeply to follow");
    return R;
  }
  E = E->IgnoreParens();
  if (const auto *EWC = dyn_cast<ExprWithCleanups>(E))
    return roots(Fr, EWC->getSubExpr(), Depth);
  if (const auto *CE = dyn_cast<CastExpr>(E)) {
    switch (CE->getCastKind()) {
    case CK_LValueToRValue: {
      const Expr *Sub = CE->getSubExpr()->IgnoreParens();
      if (const auto *DRE = dyn_cast<DeclRefExpr>(Sub))
        if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl()))
          return rootsOfVar(Fr, V, Depth + 1);
      R.unknown("the pointer is read from memory ('" +
                std::string(Sub->getStmtClassName()) + "')");
      return R;
    }
    case CK_ArrayToPointerDecay: {
      const VarDecl *Local = nullptr;
      if (location(Fr, CE->getSubExpr(), Local, R, Depth + 1) && Local)
        R.add(Local);
      return R;
    }
    case CK_NullToPointer:
    case CK_FunctionToPointerDecay:
      return R;
    case CK_IntegralToPointer:
      R.unknown("an integer is turned into a pointer");
      return R;
    default:
      return roots(Fr, CE->getSubExpr(), Depth + 1);
    }
  }
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    switch (BO->getOpcode()) {
    case BO_Add:
    case BO_Sub:
      if (BO->getLHS()->getType()->isPointerType())
        return roots(Fr, BO->getLHS(), Depth + 1);
      if (BO->getRHS()->getType()->isPointerType())
        return roots(Fr, BO->getRHS(), Depth + 1);
      break;
    case BO_Comma:
    case BO_Assign:
      return roots(Fr, BO->getRHS(), Depth + 1);
    case BO_AddAssign:
    case BO_SubAssign:
      return roots(Fr, BO->getLHS(), Depth + 1);
    default:
      break;
    }
  }
  if (const auto *CO = dyn_cast<AbstractConditionalOperator>(E)) {
    R = roots(Fr, CO->getTrueExpr(), Depth + 1);
    R.join(roots(Fr, CO->getFalseExpr(), Depth + 1));
    return R;
  }
  if (const auto *UO = dyn_cast<UnaryOperator>(E)) {
    if (UO->getOpcode() == UO_AddrOf) {
      const VarDecl *Local = nullptr;
      if (location(Fr, UO->getSubExpr(), Local, R, Depth + 1) && Local)
        R.add(Local);
      return R;
    }
    if (UO->isIncrementDecrementOp())
      return roots(Fr, UO->getSubExpr(), Depth + 1);
  }
  if (isa<CXXNullPtrLiteralExpr, GNUNullExpr, IntegerLiteral>(E))
    return R;
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
    if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl()))
      return rootsOfVar(Fr, V, Depth + 1);
  if (isa<CXXThisExpr>(E)) {
    if (Fr.Constructing)
      return R; // the object being made: new storage
    if (Fr.Object && Fr.Caller) {
      const VarDecl *Local = nullptr;
      if (location(*Fr.Caller, Fr.Object, Local, R, Depth + 1) && Local)
        R.add(Local);
      return R;
    }
    R.unknown("'this' cannot be followed");
    return R;
  }
  R.unknown("the pointer comes from '" + std::string(E->getStmtClassName()) + "'");
  return R;
}

bool EffectsAnalyzer::location(const Frame &Fr, const Expr *E, const VarDecl *&Local,
                               RootSet &Mem, unsigned Depth) {
  if (Depth > MaxDepth) {
    Mem.unknown("references are passed on too deeply to follow");
    return true;
  }
  E = E->IgnoreParens();
  if (const auto *ICE = dyn_cast<ImplicitCastExpr>(E);
      ICE && (ICE->getCastKind() == CK_NoOp || ICE->getCastKind() == CK_UncheckedDerivedToBase ||
              ICE->getCastKind() == CK_DerivedToBase))
    return location(Fr, ICE->getSubExpr(), Local, Mem, Depth + 1);
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
    const auto *V = dyn_cast<VarDecl>(DRE->getDecl());
    if (!V)
      return false;
    if (isSharedVar(V) || !V->hasLocalStorage()) {
      Mem.add(V);
      return true;
    }
    if (V->getType()->isReferenceType()) {
      const Frame *Home = Fr.frameOf(V);
      Frame Own;
      if (!Home) {
        Own.F = dyn_cast<FunctionDecl>(V->getDeclContext());
        Home = &Own;
      }
      if (const auto *P = dyn_cast<ParmVarDecl>(V)) {
        if (const Expr *A = Home->argFor(P))
          return location(*Home->Caller, A, Local, Mem, Depth + 1);
        Mem.unknown("the reference parameter " + quoted(V) + " cannot be followed");
        return true;
      }
      if (V->getInit())
        return location(*Home, V->getInit(), Local, Mem, Depth + 1);
      Mem.unknown("the reference " + quoted(V) + " cannot be followed");
      return true;
    }
    Local = V;
    return true;
  }
  if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(E)) {
    const Expr *Base = ASE->getBase()->IgnoreParens();
    if (const auto *ICE = dyn_cast<ImplicitCastExpr>(Base);
        ICE && ICE->getCastKind() == CK_ArrayToPointerDecay)
      return location(Fr, ICE->getSubExpr(), Local, Mem, Depth + 1);
    Mem.join(roots(Fr, ASE->getBase(), Depth + 1));
    return true;
  }
  if (const auto *UO = dyn_cast<UnaryOperator>(E)) {
    if (UO->getOpcode() == UO_Deref) {
      Mem.join(roots(Fr, UO->getSubExpr(), Depth + 1));
      return true;
    }
    if (UO->isPrefix() && UO->isIncrementDecrementOp())
      return location(Fr, UO->getSubExpr(), Local, Mem, Depth + 1);
  }
  if (const auto *ME = dyn_cast<MemberExpr>(E)) {
    if (!isa<FieldDecl>(ME->getMemberDecl()) && !isa<VarDecl>(ME->getMemberDecl()))
      return false;
    if (const auto *SV = dyn_cast<VarDecl>(ME->getMemberDecl())) {
      Mem.add(SV); // a static data member
      return true;
    }
    if (ME->isArrow()) {
      Mem.join(roots(Fr, ME->getBase(), Depth + 1));
      return true;
    }
    return location(Fr, ME->getBase(), Local, Mem, Depth + 1);
  }
  if (const auto *CO = dyn_cast<ConditionalOperator>(E)) {
    const VarDecl *L1 = nullptr, *L2 = nullptr;
    location(Fr, CO->getTrueExpr(), L1, Mem, Depth + 1);
    location(Fr, CO->getFalseExpr(), L2, Mem, Depth + 1);
    if (L1 && L2 && L1 != L2)
      Mem.unknown("a conditional picks one of two variables");
    Local = L1 ? L1 : L2;
    return true;
  }
  if (const auto *BO = dyn_cast<BinaryOperator>(E)) {
    if (BO->getOpcode() == BO_Comma || BO->isAssignmentOp())
      return location(Fr, BO->getOpcode() == BO_Comma ? BO->getRHS() : BO->getLHS(), Local, Mem,
                      Depth + 1);
  }
  if (isa<MaterializeTemporaryExpr, CompoundLiteralExpr, CXXTemporaryObjectExpr,
          CXXBindTemporaryExpr>(E))
    return false; // a temporary of its own
  if (isa<StringLiteral>(E))
    return false;
  Mem.unknown("cannot tell what '" + std::string(E->getStmtClassName()) + "' refers to");
  return true;
}

//===----------------------------------------------------------------------===//
// The walk: every write and read, through calls
//===----------------------------------------------------------------------===//

class EffectsAnalyzer::Walker : public RecursiveASTVisitor<Walker> {
public:
  Walker(EffectsAnalyzer &A, const Frame &Fr, RegionEffects &Out, unsigned Depth)
      : A(A), Fr(Fr), Out(Out), Depth(Depth) {}
  EffectsAnalyzer &A;
  const Frame &Fr;
  RegionEffects &Out;
  unsigned Depth;

  bool TraverseLambdaExpr(LambdaExpr *LE) {
    // The body runs when the lambda is called; only init-captures run here.
    for (Expr *Init : LE->capture_inits())
      if (Init)
        TraverseStmt(Init);
    return true;
  }

  void unknown(const Stmt *S, std::string Why) {
    if (!Out.UnknownAt) {
      Out.UnknownAt = S;
      Out.UnknownWhy = std::move(Why);
    }
  }
  void access(const Stmt *Where, const Expr *LValue, bool Write) {
    const VarDecl *Local = nullptr;
    RootSet Mem;
    if (!A.location(Fr, LValue, Local, Mem, Depth))
      return;
    if (Mem.Roots.empty() && !Mem.Unknown)
      return; // a local variable
    Out.TouchesMemory = true;
    Out.Touched.join(Mem);
    if (Write)
      Out.Writes.push_back({Where, Mem});
  }
  void accessThroughPointer(const Stmt *Where, const Expr *Ptr, bool Write) {
    RootSet R = A.roots(Fr, Ptr, Depth);
    if (R.Roots.empty() && !R.Unknown)
      return;
    Out.TouchesMemory = true;
    Out.Touched.join(R);
    if (Write)
      Out.Writes.push_back({Where, R});
  }

  bool VisitBinaryOperator(BinaryOperator *BO) {
    if (BO->isAssignmentOp()) {
      access(BO, BO->getLHS(), true);
      if (BO->isCompoundAssignmentOp())
        access(BO, BO->getLHS(), false);
    }
    return true;
  }
  bool VisitUnaryOperator(UnaryOperator *UO) {
    if (UO->isIncrementDecrementOp()) {
      access(UO, UO->getSubExpr(), true);
      access(UO, UO->getSubExpr(), false);
    }
    return true;
  }
  bool VisitImplicitCastExpr(ImplicitCastExpr *ICE) {
    if (ICE->getCastKind() == CK_LValueToRValue) {
      const Expr *Sub = ICE->getSubExpr()->IgnoreParens();
      if (const auto *DRE = dyn_cast<DeclRefExpr>(Sub))
        if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl()); V && isConstantVar(V))
          return true;
      access(ICE, ICE->getSubExpr(), false);
    }
    return true;
  }
  bool VisitGCCAsmStmt(GCCAsmStmt *S) {
    unknown(S, "inline assembly");
    return true;
  }
  bool VisitMSAsmStmt(MSAsmStmt *S) {
    unknown(S, "inline assembly");
    return true;
  }
  bool VisitCXXNewExpr(CXXNewExpr *E) {
    unknown(E, "'new'");
    return true;
  }
  bool VisitCXXDeleteExpr(CXXDeleteExpr *E) {
    unknown(E, "'delete'");
    return true;
  }
  bool VisitAtomicExpr(AtomicExpr *E) {
    unknown(E, "an atomic builtin");
    return true;
  }
  bool VisitVarDecl(VarDecl *V) {
    if (V->needsDestruction(A.Ctx) == QualType::DK_cxx_destructor)
      if (const CXXRecordDecl *RD = V->getType()->getAsCXXRecordDecl();
          RD && !RD->hasTrivialDestructor())
        unknown(V->getInit() ? static_cast<const Stmt *>(V->getInit()) : nullptr,
                "the destructor of " + quoted(V));
    return true;
  }

  /// A call into F with its arguments bound: walk F's body, or judge a declaration without one.
  void enter(const Stmt *Call, const FunctionDecl *FD, llvm::ArrayRef<const Expr *> Args,
             const Expr *Object, bool Constructing) {
    const FunctionDecl *Def = nullptr;
    if (FD->hasBody(Def) && Def->getBody() && !A.Ctx.getSourceManager().isInSystemHeader(
                                                  Def->getLocation())) {
      if (Depth >= MaxDepth) {
        unknown(Call, "calls nest too deeply to follow");
        return;
      }
      Frame Callee;
      Callee.F = Def;
      Callee.Args.assign(Args.begin(), Args.end());
      Callee.Object = Object;
      Callee.Constructing = Constructing;
      Callee.Caller = &Fr;
      A.walk(Callee, Def->getBody(), Out, Depth + 1);
      if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(Def))
        for (const CXXCtorInitializer *I : Ctor->inits())
          if (I->getInit())
            A.walk(Callee, I->getInit(), Out, Depth + 1);
      return;
    }
    if (!A.Ctx.getSourceManager().isInSystemHeader(FD->getLocation()) && !FD->getBuiltinID()) {
      unknown(Call, "calls " + quoted(FD) + ", whose body is not in this file");
      return;
    }
    // The toolkit's own functions (math, atomics, intrinsics): they reach memory only through
    // their pointer and reference arguments.
    for (unsigned I = 0; I < Args.size(); ++I) {
      QualType PT = I < FD->getNumParams() ? FD->getParamDecl(I)->getType() : Args[I]->getType();
      if (PT->isPointerType())
        accessThroughPointer(Call, Args[I], !PT->getPointeeType().isConstQualified());
      else if (PT->isReferenceType())
        access(Call, Args[I], !PT.getNonReferenceType().isConstQualified());
    }
    if (Object)
      access(Call, Object, true);
  }

  bool VisitCallExpr(CallExpr *CE) {
    const FunctionDecl *FD = CE->getDirectCallee();
    if (!FD) {
      unknown(CE, "an indirect call");
      return true;
    }
    llvm::SmallVector<const Expr *, 4> Args(CE->arguments());
    const Expr *Object = nullptr;
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE)) {
      Object = MC->getImplicitObjectArgument();
      if (Object && !Object->isGLValue() && Object->getType()->isPointerType()) {
        // p->f(): `this` is the pointer's target.
        Frame Ptr = Fr;
        (void)Ptr;
      }
    } else if (const auto *MD = dyn_cast<CXXMethodDecl>(FD);
               MD && MD->isInstance() && isa<CXXOperatorCallExpr>(CE) && !Args.empty()) {
      Object = Args.front();
      Args.erase(Args.begin());
    }
    if (const auto *MD = dyn_cast<CXXMethodDecl>(FD);
        MD && MD->isTrivial() && (MD->isCopyAssignmentOperator() || MD->isMoveAssignmentOperator())) {
      if (Object)
        access(CE, Object, true);
      if (!Args.empty())
        access(CE, Args.front(), false);
      return true;
    }
    enter(CE, FD, Args, Object, false);
    return true;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr *CE) {
    const CXXConstructorDecl *Ctor = CE->getConstructor();
    llvm::SmallVector<const Expr *, 4> Args(CE->arguments());
    if (Ctor->isTrivial()) {
      if (Ctor->isCopyOrMoveConstructor() && !Args.empty())
        access(CE, Args.front(), false);
      return true;
    }
    enter(CE, Ctor, Args, nullptr, true);
    return true;
  }
};

void EffectsAnalyzer::walk(const Frame &Fr, const Stmt *S, RegionEffects &Out, unsigned Depth) {
  Walker W(*this, Fr, Out, Depth);
  W.TraverseStmt(const_cast<Stmt *>(S));
}

RegionEffects EffectsAnalyzer::effectsOf(const FunctionDecl *F, llvm::ArrayRef<const Stmt *> Stmts) {
  RegionEffects Out;
  Frame Top;
  Top.F = F;
  for (const Stmt *S : Stmts)
    walk(Top, S, Out, 0);
  return Out;
}

RootSet EffectsAnalyzer::rootsOf(const FunctionDecl *F, const Expr *E) {
  Frame Top;
  Top.F = F;
  return roots(Top, E, 0);
}

//===----------------------------------------------------------------------===//
// Purity
//===----------------------------------------------------------------------===//

static bool plainValueType(QualType T) {
  T = T.getCanonicalType();
  return T->isArithmeticType() || T->isEnumeralType() || T->isVectorType();
}

bool EffectsAnalyzer::isPure(const FunctionDecl *FD) { return FD && pureBody(FD, 0); }

bool EffectsAnalyzer::pureBody(const FunctionDecl *FD, unsigned Depth) {
  if (!FD || Depth > MaxDepth)
    return false;
  FD = FD->getCanonicalDecl();
  if (auto It = PureCache.find(FD); It != PureCache.end())
    return It->second;
  PureCache[FD] = false; // recursion: not proven
  bool Pure = [&] {
    if (isa<CXXMethodDecl>(FD) && cast<CXXMethodDecl>(FD)->isInstance())
      return false;
    if (!plainValueType(FD->getReturnType()))
      return false;
    for (const ParmVarDecl *P : FD->parameters())
      if (!plainValueType(P->getType()))
        return false;
    if (unsigned ID = FD->getBuiltinID())
      return Ctx.BuiltinInfo.isConst(ID);
    const FunctionDecl *Def = nullptr;
    if (!FD->hasBody(Def) || !Def->getBody()) {
      // A declaration alone: only the toolkit's math (libdevice's __nv_ functions).
      return Ctx.getSourceManager().isInSystemHeader(FD->getLocation()) &&
             FD->getIdentifier() && FD->getName().starts_with("__nv_");
    }
    RegionEffects E;
    Frame Top;
    Top.F = Def;
    struct Calls : RecursiveASTVisitor<Calls> {
      std::vector<const FunctionDecl *> Callees;
      bool Indirect = false;
      bool VisitCallExpr(CallExpr *CE) {
        if (const FunctionDecl *C = CE->getDirectCallee())
          Callees.push_back(C);
        else
          Indirect = true;
        return true;
      }
      bool VisitCXXConstructExpr(CXXConstructExpr *CE) {
        if (!CE->getConstructor()->isTrivial())
          Indirect = true;
        return true;
      }
      bool VisitLambdaExpr(LambdaExpr *) {
        Indirect = true;
        return true;
      }
    } C;
    C.TraverseStmt(Def->getBody());
    if (C.Indirect)
      return false;
    for (const FunctionDecl *Callee : C.Callees)
      if (!pureBody(Callee, Depth + 1))
        return false;
    // Its own locals only: no memory read or written, nothing unknown.
    struct Mem : RecursiveASTVisitor<Mem> {
      bool Touches = false;
      bool VisitDeclRefExpr(DeclRefExpr *DRE) {
        if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl()))
          if ((!V->hasLocalStorage() || isSharedVar(V)) && !isConstantVar(V))
            Touches = true;
        return true;
      }
      bool VisitUnaryOperator(UnaryOperator *UO) {
        if (UO->getOpcode() == UO_Deref || UO->getOpcode() == UO_AddrOf)
          Touches = true;
        return true;
      }
      bool VisitArraySubscriptExpr(ArraySubscriptExpr *) {
        Touches = true; // even a local array: keep the rule simple
        return true;
      }
      bool VisitMemberExpr(MemberExpr *ME) {
        if (ME->isArrow())
          Touches = true;
        return true;
      }
      bool VisitGCCAsmStmt(GCCAsmStmt *) { return Touches = true, true; }
      bool VisitCXXThisExpr(CXXThisExpr *) { return Touches = true, true; }
    } M;
    M.TraverseStmt(Def->getBody());
    return !M.Touches;
  }();
  PureCache[FD] = Pure;
  return Pure;
}

//===----------------------------------------------------------------------===//
// Uniformity and reachability
//===----------------------------------------------------------------------===//

static bool builtinIndexName(const Expr *E, std::string &Name) {
  E = E->IgnoreParenImpCasts();
  if (const auto *POE = dyn_cast<PseudoObjectExpr>(E))
    E = POE->getSyntacticForm()->IgnoreParenImpCasts();
  const Expr *Base = nullptr;
  StringRef Member;
  if (const auto *MP = dyn_cast<MSPropertyRefExpr>(E)) {
    Base = MP->getBaseExpr();
    Member = MP->getPropertyDecl()->getName();
  } else if (const auto *ME = dyn_cast<MemberExpr>(E)) {
    Base = ME->getBase();
    Member = ME->getMemberDecl()->getName();
  }
  if (Base) {
    Base = Base->IgnoreParenImpCasts();
    if (const auto *OVE = dyn_cast<OpaqueValueExpr>(Base))
      Base = OVE->getSourceExpr()->IgnoreParenImpCasts();
  }
  if (Base)
    if (const auto *DRE = dyn_cast<DeclRefExpr>(Base))
      if (const auto *V = dyn_cast<VarDecl>(DRE->getDecl()))
        if (const auto *RD = V->getType()->getAsCXXRecordDecl();
            RD && RD->getName().starts_with("__cuda_builtin_")) {
          Name = V->getName().str() + "." + Member.str();
          return true;
        }
  if (const auto *CE = dyn_cast<CallExpr>(E))
    if (const FunctionDecl *FD = CE->getDirectCallee(); FD && FD->getIdentifier() &&
                                                        FD->getName().starts_with("__fetch_builtin_")) {
      Name = FD->getName().str();
      return true;
    }
  return false;
}

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
  if (builtinIndexName(E, Name))
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
  bool TraverseCXXForRangeStmt(CXXForRangeStmt *S) { return nested(S, nullptr); }
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
    const FunctionDecl *Def = nullptr;
    if (!FD->hasBody(Def) || !Def->getBody() ||
        Ctx.getSourceManager().isInSystemHeader(Def->getLocation()))
      return true; // the toolkit's functions return to their caller
    if (CallDepth >= MaxDepth)
      return found(CE, "calls nested too deeply");
    ExitFinder Inner(Ctx, Fx, Def, /*InCallee=*/true, CallDepth + 1);
    Inner.TraverseStmt(Def->getBody());
    if (!Inner.Found.empty())
      return found(CE, Inner.Found + " in " + quoted(FD));
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

bool allThreadsReach(ASTContext &Ctx, const TranslationUnitIndex &Index, EffectsAnalyzer &Effects,
                     const FunctionDecl *F, const Stmt *S, std::string &Why, unsigned Depth) {
  if (Depth > 4) {
    Why = "its callers nest too deeply to follow";
    return false;
  }
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
    Cur = P;
  }
  if (F->hasAttr<CUDAGlobalAttr>())
    return true;
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

} // namespace tilepipe

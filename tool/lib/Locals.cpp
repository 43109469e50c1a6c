// LocalFacts: which variables of a function may change, and which escape. See tilepipe/Effects.h.
#include "tilepipe/Effects.h"
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
// LocalFacts
//===----------------------------------------------------------------------===//

static bool anyPart(QualType T, llvm::function_ref<bool(QualType, const FieldDecl *)> Part,
                    const FieldDecl *Field, unsigned Depth) {
  if (Depth > MaxDepth)
    return true;
  T = T.getCanonicalType();
  if (Part(T, Field))
    return true;
  if (const auto *AT = dyn_cast<ArrayType>(T.getTypePtr()))
    return anyPart(AT->getElementType(), Part, nullptr, Depth + 1);
  const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
  if (!RD)
    return false;
  if (!RD->hasDefinition())
    return true;
  RD = RD->getDefinition();
  for (const FieldDecl *F : RD->fields())
    if (anyPart(F->getType(), Part, F, Depth + 1))
      return true;
  return llvm::any_of(RD->bases(), [&](const CXXBaseSpecifier &B) {
    return anyPart(B.getType(), Part, nullptr, Depth + 1);
  });
}

bool anyPart(QualType T, llvm::function_ref<bool(QualType, const FieldDecl *)> Part) {
  return anyPart(T, Part, nullptr, 0);
}

bool holdsPointer(QualType T) {
  return anyPart(T, [](QualType P, const FieldDecl *) {
    return P->isPointerType() || P->isReferenceType() || P->isMemberPointerType() ||
           P->isBlockPointerType();
  });
}

bool constKeeps(QualType T) {
  return !anyPart(T, [](QualType, const FieldDecl *F) { return F && F->isMutable(); });
}

bool mayCastAwayConst(const FunctionDecl *FD, unsigned Depth) {
  const FunctionDecl *Def = nullptr;
  if (!FD || Depth > 4 || !FD->hasBody(Def) || !Def->getBody())
    return true;
  struct Finder : RecursiveASTVisitor<Finder> {
    unsigned Depth;
    bool May = false;
    bool shouldVisitLambdaBody() const { return true; }
    bool shouldVisitImplicitCode() const { return true; }
    bool VisitExplicitCastExpr(ExplicitCastExpr *E) {
      QualType To = E->getTypeAsWritten(), From = E->getSubExpr()->getType();
      if (isa<CXXConstCastExpr>(E))
        May = true;
      else if (To->isReferenceType())
        May = From.isConstQualified() && !To.getNonReferenceType().isConstQualified();
      else if (To->isPointerType() && From->isPointerType())
        May = From->getPointeeType().isConstQualified() && !To->getPointeeType().isConstQualified();
      else if (To->isPointerType())
        May = !From->isNullPtrType(); // an integer or an array made a pointer of its own
      return !May;
    }
    bool VisitCallExpr(CallExpr *CE) {
      const FunctionDecl *Callee = CE->getDirectCallee();
      if (Callee && Callee->getBuiltinID())
        return true;
      bool HandsOn = isa<CXXMemberCallExpr>(CE) || isa<CXXOperatorCallExpr>(CE) ||
                     llvm::any_of(CE->arguments(), [](const Expr *A) {
                       return A->getType()->isPointerType() || A->isGLValue();
                     });
      if (HandsOn && mayCastAwayConst(Callee, Depth + 1))
        May = true;
      return !May;
    }
  } F;
  F.Depth = Depth;
  F.TraverseStmt(Def->getBody());
  return F.May;
}

namespace {
class LocalScanner : public RecursiveASTVisitor<LocalScanner> {
public:
  explicit LocalScanner(LocalFacts &F) : F(F) {}
  LocalFacts &F;
  bool shouldVisitLambdaBody() const { return true; }
  // Implicit code binds and changes variables too: a range-for binds its range to a reference
  // and calls begin() on it, a default argument or member initializer may take an address.
  bool shouldVisitImplicitCode() const { return true; }

  /// The variable whose storage the lvalue E names (through members and array elements of
  /// variables, not through pointers).
  static const VarDecl *storageOf(const Expr *E) {
    while (true) {
      E = E->IgnoreParenImpCasts();
      if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
        return dyn_cast<VarDecl>(DRE->getDecl());
      if (const auto *ME = dyn_cast<MemberExpr>(E)) {
        if (ME->isArrow() || isReferenceMember(ME))
          return nullptr; // storage reached through a pointer or a reference, not the variable's
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
      return nullptr; // a conditional's sides are marked one by one by mark()
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
  /// `static_cast<T &>(v) = x`, `(T &)v`, `reinterpret_cast<U &>(v)`: a reference cast names v's
  /// storage as an lvalue of another type, through which it may be changed unseen. Only one to a
  /// const type without mutable members leaves it as it was.
  bool VisitExplicitCastExpr(ExplicitCastExpr *CE) {
    QualType To = CE->getTypeAsWritten();
    if (To->isReferenceType() &&
        !(To.getNonReferenceType().isConstQualified() && constKeeps(To.getNonReferenceType())))
      bindNonConst(CE->getSubExpr());
    return true;
  }
  /// Inline assembly writes its outputs, and may write through any lvalue operand (an "m"
  /// constraint hands it the address): every lvalue it is given is as good as escaped.
  bool VisitGCCAsmStmt(GCCAsmStmt *S) {
    for (const Expr *E : S->outputs())
      bindNonConst(E);
    for (const Expr *E : S->inputs())
      if (E->isGLValue())
        bindNonConst(E);
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
      if (PT->isReferenceType() && !constProtects(FD, PT.getNonReferenceType()))
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
    if (Skip == 1 && CE->getNumArgs() > 0 && !constCallKeeps(cast<CXXMethodDecl>(FD), CE->getArg(0)))
      bindNonConst(CE->getArg(0));
    return true;
  }
  bool VisitCXXMemberCallExpr(CXXMemberCallExpr *CE) {
    const Expr *Obj = CE->getImplicitObjectArgument();
    if (const CXXMethodDecl *MD = CE->getMethodDecl(); MD && Obj && !constCallKeeps(MD, Obj))
      if (Obj->isGLValue())
        bindNonConst(Obj);
    return true;
  }
  /// A reference to const of type T, handed to FD, leaves the object as it was: T has no mutable
  /// member and FD casts no const away.
  bool constProtects(const FunctionDecl *FD, QualType T) {
    return T.isConstQualified() && constKeeps(T) && !castsAwayConst(FD);
  }
  /// A call of MD on Obj leaves Obj as it was.
  bool constCallKeeps(const CXXMethodDecl *MD, const Expr *Obj) {
    return MD->isConst() && constKeeps(Obj->getType()) && !castsAwayConst(MD);
  }
  /// mayCastAwayConst, once per callee of the function scanned.
  llvm::DenseMap<const FunctionDecl *, bool> CastsAwayConst;
  bool castsAwayConst(const FunctionDecl *FD) {
    auto [It, New] = CastsAwayConst.try_emplace(FD, false);
    if (New)
      It->second = mayCastAwayConst(FD);
    return It->second;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr *CE) {
    llvm::SmallVector<const Expr *, 4> A(CE->arguments());
    args(CE->getConstructor(), A, 0);
    return true;
  }
  /// `return v;` from a function (or lambda) that returns a reference hands v's storage to the
  /// caller, which may change it: `[&]() -> float *& { return w; }() = p`. A return by value
  /// reads v (an lvalue-to-rvalue conversion or a copy); a glvalue returned as it is is bound.
  bool VisitReturnStmt(ReturnStmt *RS) {
    if (const Expr *E = RS->getRetValue(); E && E->IgnoreParens()->isGLValue())
      bindNonConst(E);
    return true;
  }
  bool VisitVarDecl(VarDecl *V) {
    F.Declared.insert(V);
    if (V->getType()->isReferenceType() && V->getInit() &&
        !(V->getType().getNonReferenceType().isConstQualified() &&
          constKeeps(V->getType().getNonReferenceType())))
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
          !(FD->getType().getNonReferenceType().isConstQualified() &&
            constKeeps(FD->getType().getNonReferenceType())))
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

const FunctionDecl *enclosingFunction(ASTContext &Ctx, const Stmt *S) {
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

} // namespace tilepipe

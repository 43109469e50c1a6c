// Effects: writes and reads with memory named by the origin of its pointers, through calls and
// lambdas; purity. See tilepipe/Effects.h.
#include "tilepipe/Effects.h"
#include "EffectsFrame.h"
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


/// Every `V = e` in the body of V's function: the values a pointer variable may be given. A step
/// of V itself (stepOf: `p = p + n`, `p = &p[n]`) gives no new one: p keeps pointing where it did.
static void assignmentsTo(const VarDecl *V, const Stmt *Body,
                          llvm::SmallVectorImpl<const Expr *> &Out) {
  struct Finder : RecursiveASTVisitor<Finder> {
    const VarDecl *V;
    llvm::SmallVectorImpl<const Expr *> *Out;
    bool shouldVisitLambdaBody() const { return true; }
    bool shouldVisitImplicitCode() const { return true; }
    bool VisitBinaryOperator(BinaryOperator *BO) {
      if (BO->getOpcode() != BO_Assign)
        return true;
      const auto *DRE = dyn_cast<DeclRefExpr>(BO->getLHS()->IgnoreParenImpCasts());
      if (!DRE || DRE->getDecl() != V)
        return true;
      // `p = p + n` and `p = &p[n]` step p within what it points to: its roots stay.
      if (stepsByInteger(BO, V))
        return true;
      Out->push_back(BO->getRHS());
      return true;
    }
  } Fi;
  Fi.V = V;
  Fi.Out = &Out;
  Fi.TraverseStmt(const_cast<Stmt *>(Body));
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
  } // else declared without a value: only its assignments below give it one
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
    if (Fr.Object && Fr.Caller && Fr.ObjectIsPointer)
      return roots(*Fr.Caller, Fr.Object, Depth + 1);
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
    if (isReferenceMember(ME)) {
      // The object holds a reference, not the storage: what it was bound to is not followed.
      Mem.unknown("the reference member " + quoted(ME->getMemberDecl()) + " cannot be followed");
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
      bool shouldVisitImplicitCode() const { return true; }
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
      bool shouldVisitImplicitCode() const { return true; }
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
        if (ME->isArrow() || isReferenceMember(ME))
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

} // namespace tilepipe

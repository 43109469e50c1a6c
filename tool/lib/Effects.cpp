// Effects: writes and reads with memory named by the origin of its pointers, through calls and
// lambdas; purity. See tilepipe/Effects.h.
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
// Frames: a function entered through a call, its parameters bound to the call's arguments
//===----------------------------------------------------------------------===//

struct EffectsAnalyzer::Frame {
  const FunctionDecl *F = nullptr;
  llvm::SmallVector<const Expr *, 4> Args; ///< bound to F's parameters, in order
  const Expr *Object = nullptr;            ///< the object of a member call (what `this` is)
  bool ObjectIsPointer = false;            ///< `p->f()`: Object is p, `this` its value
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
  void sync(const Stmt *S, std::string Why) {
    if (!Out.SyncAt) {
      Out.SyncAt = S;
      Out.SyncWhy = std::move(Why);
    }
  }
  void access(const Stmt *Where, const Expr *LValue, bool Write) {
    const VarDecl *Local = nullptr;
    RootSet Mem;
    if (!A.location(Fr, LValue, Local, Mem, Depth))
      return;
    if (Mem.Roots.empty() && !Mem.Unknown)
      return; // a local variable
    if (LValue->getType().isVolatileQualified())
      sync(Where, "a volatile access to memory");
    Out.TouchesMemory = true;
    Out.Touched.join(Mem);
    if (Write)
      Out.Writes.push_back({Where, Mem});
  }
  void accessThroughPointer(const Stmt *Where, const Expr *Ptr, bool Write) {
    RootSet R = A.roots(Fr, Ptr, Depth);
    if (R.Roots.empty() && !R.Unknown)
      return;
    if (Ptr->getType()->isPointerType() && Ptr->getType()->getPointeeType().isVolatileQualified())
      sync(Where, "a volatile access to memory");
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
             const Expr *Object, bool ObjectIsPointer, bool Constructing) {
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
      Callee.ObjectIsPointer = ObjectIsPointer;
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
    if (std::string Why = synchronizing(Call, FD); !Why.empty())
      sync(Call, Why);
    // The toolkit's own functions (math, atomics, intrinsics): they reach memory only through
    // their pointer and reference arguments, unless they are handed code of the user's to run (a
    // lambda, a function object, a function pointer): its effects would be unseen.
    // An object is followed only as the storage it is: a pointer or reference inside it (an
    // iterator, a view) is one the toolkit may write through, and a class of the user's may have
    // its member functions (operator*, operator++, ...) run by the toolkit's templates.
    for (const Expr *Arg : Args) {
      QualType T = Arg->getType().getNonReferenceType();
      if (T->isFunctionPointerType() || T->isFunctionType() || hasUserCode(T)) {
        unknown(Call, "code of the user's is handed to " + quoted(FD) + ", which runs it unseen");
        return;
      }
      if (T->isRecordType() && holdsPointer(T)) {
        unknown(Call, "an object holding a pointer or reference ('" + T.getAsString() +
                          "') is handed to " + quoted(FD) + ", which may write through it");
        return;
      }
    }
    for (unsigned I = 0; I < Args.size(); ++I) {
      QualType PT = I < FD->getNumParams() ? FD->getParamDecl(I)->getType() : Args[I]->getType();
      if (PT->isPointerType())
        accessThroughPointer(Call, Args[I], !PT->getPointeeType().isConstQualified());
      else if (PT->isReferenceType())
        access(Call, Args[I], !PT.getNonReferenceType().isConstQualified());
    }
    if (Object && ObjectIsPointer)
      accessThroughPointer(Call, Object, true);
    else if (Object)
      access(Call, Object, true);
  }

  /// A class of the user's (not the toolkit's) with member functions of the user's: a lambda, a
  /// function object, an iterator, in it or in a base.
  bool hasUserCode(QualType T) {
    const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
    if (!RD || !RD->hasDefinition())
      return false;
    RD = RD->getDefinition();
    if (!A.Ctx.getSourceManager().isInSystemHeader(RD->getLocation()) &&
        (RD->isLambda() || llvm::any_of(RD->methods(), [](const CXXMethodDecl *M) {
           return M->isUserProvided();
         })))
      return true;
    return llvm::any_of(RD->bases(), [&](const CXXBaseSpecifier &B) { return hasUserCode(B.getType()); });
  }
  /// Whether the value of E is used (not a statement of its own, nor cast to void).
  bool resultUsed(const Stmt *E) {
    DynTypedNode N = DynTypedNode::create(*E);
    for (unsigned Guard = 0; Guard < 16; ++Guard) {
      auto Parents = A.Ctx.getParents(N);
      if (Parents.empty())
        return true;
      const DynTypedNode &P = Parents[0];
      if (P.get<ExprWithCleanups>() || P.get<ParenExpr>() || P.get<MaterializeTemporaryExpr>() ||
          P.get<ImplicitCastExpr>()) {
        N = P;
        continue;
      }
      if (const auto *C = P.get<CStyleCastExpr>())
        return !C->getType()->isVoidType();
      if (P.get<CompoundStmt>())
        return false;
      if (const auto *If = P.get<IfStmt>())
        return If->getCond() == N.get<Expr>();
      if (const auto *L = P.get<ForStmt>())
        return L->getBody() != N.get<Stmt>();
      if (const auto *L = P.get<WhileStmt>())
        return L->getBody() != N.get<Stmt>();
      if (const auto *L = P.get<DoStmt>())
        return L->getBody() != N.get<Stmt>();
      return true;
    }
    return true;
  }
  /// Why a call of the toolkit's may make other threads' writes visible to this one: fences,
  /// atomics whose result is used (an atomic whose result is ignored tells this thread nothing),
  /// grid and cluster barriers, cache-bypassing loads, PTX instructions.
  std::string synchronizing(const Stmt *Call, const FunctionDecl *FD) {
    std::string Q = llvm::StringRef(FD->getQualifiedNameAsString()).lower();
    llvm::StringRef N = FD->getName();
    std::string Lower = N.lower();
    if (N.starts_with("__syncthreads") || N.starts_with("__barrier_sync") || N == "__syncwarp")
      return "";
    if (llvm::StringRef(Q).contains("fence") || llvm::StringRef(Q).contains("membar"))
      return "a memory fence (" + quoted(FD) + ")";
    if (llvm::StringRef(Q).contains("cuda::ptx::"))
      return "a PTX instruction (" + quoted(FD) + ")";
    if (N == "__ldcv" || N == "__ldlu")
      return "a load that bypasses the caches (" + quoted(FD) + ")";
    if (llvm::StringRef(Q).contains("atomic") || llvm::StringRef(Lower).starts_with("__nvvm_atom")) {
      // CUDA's atomicAdd family (global functions) is relaxed: with its result ignored it tells
      // this thread nothing. libcu++'s atomics default to seq_cst, and their waits and the
      // semaphores built on them acquire whatever their result: those synchronize.
      bool Relaxed = FD->getDeclContext()->getRedeclContext()->isTranslationUnit() &&
                     !isa<CXXMethodDecl>(FD) &&
                     (N.starts_with("atomic") || N.starts_with("__nvvm_atom"));
      if (!Relaxed)
        return "an atomic operation that may acquire (" + quoted(FD) + ")";
      return resultUsed(Call) ? "an atomic whose result is used (" + quoted(FD) + ")" : "";
    }
    if (llvm::StringRef(Q).contains("barrier") || llvm::StringRef(Q).contains("latch") ||
        llvm::StringRef(Q).contains("semaphore"))
      return "a barrier, latch or semaphore object (" + quoted(FD) + ")";
    if (llvm::StringRef(Q).contains("cooperative_groups") &&
        (llvm::StringRef(Lower).contains("sync") || llvm::StringRef(Lower).contains("wait") ||
         llvm::StringRef(Lower).contains("arrive")) &&
        (llvm::StringRef(Q).contains("grid") || llvm::StringRef(Q).contains("cluster") ||
         llvm::StringRef(Q).contains("cooperative_groups::sync") ||
         llvm::StringRef(Q).contains("details")))
      return "a barrier wider than the block (" + quoted(FD) + ")";
    return "";
  }

  bool VisitCallExpr(CallExpr *CE) {
    const FunctionDecl *FD = CE->getDirectCallee();
    if (!FD) {
      unknown(CE, "an indirect call");
      return true;
    }
    if (const auto *MD = dyn_cast<CXXMethodDecl>(FD);
        MD && MD->isVirtual() && !MD->hasAttr<FinalAttr>() && !MD->getParent()->hasAttr<FinalAttr>()) {
      unknown(CE, "a virtual call of " + quoted(FD));
      return true;
    }
    llvm::SmallVector<const Expr *, 4> Args(CE->arguments());
    const Expr *Object = nullptr;
    bool ObjectIsPointer = false;
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE)) {
      // `p->f()`: the object is what p points to; `o.f()`: o.
      Object = MC->getImplicitObjectArgument();
      ObjectIsPointer = Object && Object->getType()->isPointerType();
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
    enter(CE, FD, Args, Object, ObjectIsPointer, false);
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
    enter(CE, Ctor, Args, nullptr, false, true);
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

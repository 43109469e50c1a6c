// Effects, the walk: every write and read of a region of code, through the calls and lambdas it
// runs, each named by the origin of its pointers (EffectsAnalyzer::walk, effectsOf). See
// tilepipe/Effects.h.
#include "tilepipe/Effects.h"
#include "EffectsFrame.h"
#include "EffectsUtil.h"
#include "tilepipe/AstUtil.h"
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

class EffectsAnalyzer::Walker : public RecursiveASTVisitor<Walker> {
public:
  Walker(EffectsAnalyzer &A, const Frame &Fr, RegionEffects &Out, unsigned Depth)
      : A(A), Fr(Fr), Out(Out), Depth(Depth) {}
  // Implicit code runs too: default arguments and member initializers, a range-for's begin(),
  // end(), operator!= and operator++, the semantic form of an initializer list.
  bool shouldVisitImplicitCode() const { return true; }
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
    if (hasVolatilePart(A.Ctx, LValue->getType()))
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
    if (Ptr->getType()->isPointerType() && hasVolatilePart(A.Ctx, Ptr->getType()->getPointeeType()))
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
  bool VisitCXXBindTemporaryExpr(CXXBindTemporaryExpr *E) {
    // A temporary of a class with a destructor of its own: the destructor runs at the end of the
    // full expression, called from nowhere in the text.
    unknown(E, "the destructor of a temporary '" + E->getType().getAsString() + "'");
    return true;
  }
  bool VisitCXXInheritedCtorInitExpr(CXXInheritedCtorInitExpr *E) {
    unknown(E, "an inherited constructor");
    return true;
  }
  bool VisitVarDecl(VarDecl *V) {
    if (V->needsDestruction(A.Ctx) == QualType::DK_cxx_destructor)
      if (const CXXRecordDecl *RD = A.Ctx.getBaseElementType(V->getType())->getAsCXXRecordDecl();
          RD && !RD->hasTrivialDestructor())
        unknown(V->getInit() ? static_cast<const Stmt *>(V->getInit()) : nullptr,
                "the destructor of " + quoted(V));
    return true;
  }

  /// A call into F with its arguments bound: walk F's body, or judge a declaration without one.
  void enter(const Stmt *Call, const FunctionDecl *FD, llvm::ArrayRef<const Expr *> Args,
             const Expr *Object, bool ObjectIsPointer, bool Constructing) {
    const FunctionDecl *Def = nullptr;
    const SourceManager &SM = A.Ctx.getSourceManager();
    // A library's atomics, barriers and semaphores are known by name before their bodies.
    if (SM.isInSystemHeader(FD->getLocation()))
      if (std::string Why = synchronizing(Call, FD); !Why.empty()) {
        sync(Call, Why);
        return;
      }
    const bool HasBody = FD->hasBody(Def) && Def->getBody();
    const bool Runtime = isToolkitRuntime(SM, FD) || (Def && isToolkitRuntime(SM, Def));
    if (HasBody && !Runtime) {
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
    if (!Runtime) {
      unknown(Call, "calls " + quoted(FD) + ", whose body is not in this file");
      return;
    }
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
    if (Object && !ObjectIsPointer && Object->getType()->isRecordType() && holdsPointer(Object->getType())) {
      // A proxy (an iterator, a reference wrapper): its member function may write through it.
      unknown(Call, "a member function of the toolkit's is called on an object holding a pointer or "
                    "reference ('" + Object->getType().getAsString() + "'), which it may write through");
      return;
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
      if (const auto *CS = P.get<CompoundStmt>()) {
        // The last statement of a statement expression `({ ...; e; })` is its value.
        auto Up = A.Ctx.getParents(P);
        if (!Up.empty() && Up[0].get<StmtExpr>() && !CS->body_empty() && CS->body_back() == N.get<Stmt>()) {
          N = Up[0];
          continue;
        }
        return false;
      }
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
    if (N == "__ldcv" || N == "__ldlu" || N == "__ldcg")
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

} // namespace tilepipe

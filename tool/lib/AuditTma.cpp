// AuditTma (AuditTma.h): the audit's checks of bulk and tensor copies and their mbarriers. One walk
// collects, per device function (templates as instantiated; a lambda's body is a function of its
// own), the ops of AuditTmaOps.cpp and the threads' own stores into __shared__ variables; then:
//  - async-tma-alignment reads each copy's shared address as a __shared__ variable plus an offset:
//    the variable's declared alignment and the largest power of two that divides every term of
//    the offset (a constant subscript exactly, a variable one its stride) prove its alignment;
//  - async-tx-bytes compares, in the statements of one block (`{ expect_tx(bar, B); copy(.., bar);
//    copy(.., bar); }`), the bytes expected on a barrier with those its copies move, where every
//    copy completing on that barrier anywhere stands in such a block, unconditionally (or in loops
//    of constant trip count), with a constant size: copies spread over threads or branches, tensor
//    copies (their box is the host's) and a barrier handed to a function of the user's are not read;
//  - async-proxy-fence and async-barrier-reinit are paths of the function's CFG (clang::CFG): from
//    a store into a __shared__ variable to a bulk copy out of it with no proxy fence on the way;
//    from an mbarrier's init to a copy completing on it with no proxy fence (or fence.mbarrier_init);
//    from a copy to an init of its barrier with no wait on that barrier. Whatever may fence or wait
//    unseen (a function of the user's, a block barrier, asm the audit cannot read) ends a path,
//    which can hide a finding, never make one (Paths and Callees, AuditTmaOps.cpp).
// About 700 lines in one file: the four checks read one collection (the ops and stores of each
// function) through one Auditor that holds the function facts they share (unchanged locals, what
// calls may do); split, each part would export those for no other reader.
#include "AuditTma.h"
#include "AuditOps.h"
#include "tilepipe/AstUtil.h"
#include "tilepipe/Effects.h"
#include "tilepipe/Find.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecordLayout.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include <map>
#include <set>

using namespace clang;

namespace tilepipe {

namespace {


/// Where in shared memory an lvalue or pointer lies: the __shared__ variable (`X[i][j]`,
/// `*(float4 *)&X[k]`), and the member of it nearest the variable where it goes through one
/// (`s.C[i]`, also through a struct laid over dynamic shared memory: `SMem &s = *(SMem *)smem;`).
/// Two places may overlap unless both name members, and different ones.
struct SharedPlace {
  const VarDecl *V = nullptr;
  const FieldDecl *Member = nullptr;
  explicit operator bool() const { return V != nullptr; }
  bool mayOverlap(const SharedPlace &O) const { return V == O.V && (!Member || !O.Member || Member == O.Member); }
};

SharedPlace sharedBase(const Expr *E, unsigned Depth = 0) {
  const FieldDecl *Member = nullptr;
  for (unsigned Step = 0; E && Step < 16; ++Step) {
    E = E->IgnoreParenCasts();
    if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(E)) {
      E = ASE->getBase();
    } else if (const auto *ME = dyn_cast<MemberExpr>(E); ME && !ME->isArrow()) {
      Member = dyn_cast<FieldDecl>(ME->getMemberDecl());
      E = ME->getBase();
    } else if (const auto *U = dyn_cast<UnaryOperator>(E); U && (U->getOpcode() == UO_Deref || U->getOpcode() == UO_AddrOf)) {
      E = U->getSubExpr();
    } else if (const auto *B = dyn_cast<BinaryOperator>(E); B && B->isAdditiveOp()) {
      E = B->getLHS()->getType()->isPointerType() ? B->getLHS() : B->getRHS();
    } else {
      break;
    }
  }
  const VarDecl *V = E ? varOf(E) : nullptr;
  auto Through = [&](const Expr *Init) {
    SharedPlace P = Depth < 6 ? sharedBase(Init, Depth + 1) : SharedPlace{};
    if (P && !P.Member)
      P.Member = Member;
    return P;
  };
  // A reference bound once (`SMem &s = *reinterpret_cast<SMem *>(smem);`) names its initializer.
  if (V && V->getType()->isReferenceType() && V->hasLocalStorage() && V->getInit() && !isa<ParmVarDecl>(V))
    return Through(V->getInit());
  if (V && !isSharedVar(V) && V->getType()->isPointerType())
    if (const Expr *Held = heldValue(E); Held != E)
      return Through(Held);
  return V && isSharedVar(V) ? SharedPlace{V, Member} : SharedPlace{};
}

/// The ops and shared stores of one function body (lambdas apart: each is a function of its own).
struct FunctionOps {
  const FunctionDecl *F = nullptr;
  std::vector<TmaOp> Ops;
  std::vector<std::pair<const Stmt *, SharedPlace>> Stores; ///< a store, and where it stores
};

class Collector : public RecursiveASTVisitor<Collector> {
public:
  Collector(FunctionOps &Out, const SourceManager &SM) : Out(Out), SM(SM) {}
  bool TraverseLambdaExpr(LambdaExpr *) { return true; }
  bool VisitGCCAsmStmt(GCCAsmStmt *A) { return add(A); }
  bool VisitCallExpr(CallExpr *CE) {
    // An assignment to an element of class type (`__nv_bfloat16`, `float2` with its operator=).
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(CE); Op && Op->isAssignmentOp() && Op->getNumArgs() >= 1)
      if (SharedPlace V = sharedBase(Op->getArg(0)))
        Out.Stores.push_back({CE, V});
    return add(CE);
  }
  bool VisitBinaryOperator(BinaryOperator *B) {
    if (B->isAssignmentOp())
      if (SharedPlace V = sharedBase(B->getLHS()))
        Out.Stores.push_back({B, V});
    return true;
  }
  bool VisitUnaryOperator(UnaryOperator *U) {
    if (U->isIncrementDecrementOp())
      if (SharedPlace V = sharedBase(U->getSubExpr()))
        Out.Stores.push_back({U, V});
    return true;
  }

private:
  bool add(const Stmt *S) {
    TmaOp Op = tmaOp(S, SM);
    if (Op.K == TmaOp::SharedStore) {
      if (SharedPlace V = Op.Shared ? sharedBase(Op.Shared) : SharedPlace{})
        Out.Stores.push_back({S, V});
    } else if (Op.K != TmaOp::None) {
      Out.Ops.push_back(Op);
    }
    return true;
  }
  FunctionOps &Out;
  const SourceManager &SM;
};

uint64_t lowBit(uint64_t V) { return V & (~V + 1); }

/// A shared address as a __shared__ variable plus an offset that is a multiple of Divides bytes (0:
/// the offset is 0), with the term that limits it.
struct Address {
  const VarDecl *V = nullptr;
  uint64_t Divides = 0;
  const Expr *Limit = nullptr; ///< the term that limits Divides
  uint64_t LimitBytes = 0;      ///< what that term adds (a constant) or steps by (a variable)
  bool LimitConstant = false;
  void add(uint64_t D, const Expr *Why, bool Constant) {
    if (D == 0)
      return;
    uint64_t New = Divides == 0 ? lowBit(D) : std::min(Divides, lowBit(D));
    if (New != Divides) {
      Limit = Why;
      LimitBytes = D;
      LimitConstant = Constant;
    }
    Divides = New;
  }
};

class Auditor {
public:
  Auditor(ASTContext &Ctx, StringRef MainName) : Ctx(Ctx), SM(Ctx.getSourceManager()), MainName(MainName) {}

  std::vector<AuditFinding> run() {
    collect();
    for (const FunctionOps &Fn : Functions)
      for (const TmaOp &Op : Fn.Ops)
        if (Op.K == TmaOp::Load || Op.K == TmaOp::Store)
          alignment(Fn, Op);
    txBytes();
    for (const FunctionOps &Fn : Functions)
      paths(Fn);
    return std::move(Out);
  }

private:
  void collect() {
    struct Finder : RecursiveASTVisitor<Finder> {
      bool shouldVisitTemplateInstantiations() const { return true; }
      bool shouldVisitLambdaBody() const { return true; }
      bool VisitFunctionDecl(FunctionDecl *F) {
        if (!F->isDependentContext() && F->hasBody() && isDeviceCode(F) && inUserFile(*SM, F->getLocation()))
          Found.push_back(F);
        return true;
      }
      bool VisitLambdaExpr(LambdaExpr *L) {
        if (CXXMethodDecl *M = L->getCallOperator(); M && !M->isDependentContext() && M->hasBody() &&
                                                      inUserFile(*SM, M->getLocation()))
          Found.push_back(M);
        return true;
      }
      const SourceManager *SM;
      std::vector<const FunctionDecl *> Found;
    } Find;
    Find.SM = &SM;
    Find.TraverseDecl(Ctx.getTranslationUnitDecl());
    std::set<const FunctionDecl *> Seen;
    for (const FunctionDecl *F : Find.Found) {
      if (!Seen.insert(F).second)
        continue;
      FunctionOps Fn;
      Fn.F = F;
      Collector C(Fn, SM);
      C.TraverseStmt(F->getBody());
      if (!Fn.Ops.empty())
        Functions.push_back(std::move(Fn));
    }
  }

  Place place(SourceLocation L) const { return placeOf(SM, MainName, SM.getExpansionLoc(L)); }
  std::string text(const Expr *E) const {
    return sourceText(Ctx, SM.getExpansionRange(E->getSourceRange()).getAsRange());
  }
  std::string line(const Stmt *S) const { return std::to_string(SM.getExpansionLineNumber(S->getBeginLoc())); }

  /// A finding at one statement with one note at another.
  void report(Reason Code, const Stmt *At, std::string Detail, const Stmt *NoteAt, std::string Note) {
    AuditFinding F;
    F.Code = Code;
    F.At = place(At->getBeginLoc());
    F.Detail = std::move(Detail);
    F.Notes.push_back({place(NoteAt->getBeginLoc()), std::move(Note)});
    report(std::move(F));
  }

  void report(AuditFinding F) {
    if (Reported.insert({F.At.File, F.At.Line, F.At.Column, static_cast<int>(F.Code)}).second)
      Out.push_back(std::move(F));
  }

  std::optional<uint64_t> constant(const Expr *E) const {
    Expr::EvalResult R;
    if (!E || E->isValueDependent() || !E->getType()->isIntegerType() || !E->EvaluateAsInt(R, Ctx) ||
        R.Val.getInt().isNegative())
      return std::nullopt;
    return R.Val.getInt().getZExtValue();
  }

  std::optional<uint64_t> bytesOf(const TmaOp &Op) const { return Op.Bytes ? Op.Bytes : constant(Op.Size); }

  /// V is a local of F that holds its initializer wherever it is read.
  bool unchanged(const FunctionDecl *F, const VarDecl *V) {
    if (!V->hasLocalStorage() || isa<ParmVarDecl>(V) || V->getType()->isReferenceType() || !V->getInit())
      return false;
    if (V->getType().isConstQualified())
      return true;
    auto [It, New] = Locals.try_emplace(F);
    if (New)
      It->second.scan(F->getBody());
    return !It->second.changes(V);
  }

  /// The largest power of two that provably divides the integer E (0 where E is 0), up to 2^20:
  /// constants, products, shifts by a constant, sums, `x & c`, and the unchanged locals that hold them.
  uint64_t divisorOf(const Expr *E, unsigned Depth = 0) const {
    const uint64_t Cap = uint64_t(1) << 20;
    if (!E || Depth > 8 || E->isValueDependent())
      return 1;
    Expr::EvalResult R;
    if (E->getType()->isIntegerType() && E->EvaluateAsInt(R, Ctx)) {
      llvm::APSInt V = R.Val.getInt();
      return V == 0 ? 0 : std::min<uint64_t>(Cap, uint64_t(1) << std::min(20u, V.countr_zero()));
    }
    E = E->IgnoreParenImpCasts();
    if (const auto *B = dyn_cast<BinaryOperator>(E)) {
      uint64_t L = divisorOf(B->getLHS(), Depth + 1), Rt = divisorOf(B->getRHS(), Depth + 1);
      switch (B->getOpcode()) {
      case BO_Mul:
        return L == 0 || Rt == 0 ? 0 : std::min(Cap, L * Rt);
      case BO_Shl: {
        std::optional<uint64_t> By = constant(B->getRHS());
        return !By || *By >= 20 ? 1 : L == 0 ? 0 : std::min(Cap, L << *By);
      }
      case BO_Add:
      case BO_Sub:
        return L == 0 ? Rt : Rt == 0 ? L : std::min(L, Rt);
      case BO_And: // the bits of the result are the bits of each side
        return L == 0 || Rt == 0 ? 0 : std::max(L, Rt);
      default:
        return 1;
      }
    }
    if (const Expr *Held = heldValue(E); Held != E)
      return divisorOf(Held, Depth + 1);
    return 1;
  }

  /// The address E (a pointer, or an lvalue where Lvalue) as a __shared__ variable plus offset.
  std::optional<Address> addressOf(const FunctionDecl *F, const Expr *E, unsigned Depth = 0) {
    if (!E || Depth > 12)
      return std::nullopt;
    E = E->IgnoreParens();
    if (const auto *C = dyn_cast<CastExpr>(E)) {
      CastKind K = C->getCastKind();
      if (K == CK_NoOp || K == CK_BitCast || K == CK_ArrayToPointerDecay || K == CK_LValueToRValue ||
          K == CK_AddressSpaceConversion)
        return addressOf(F, C->getSubExpr(), Depth + 1);
      return std::nullopt;
    }
    if (const auto *U = dyn_cast<UnaryOperator>(E); U && (U->getOpcode() == UO_AddrOf || U->getOpcode() == UO_Deref))
      return addressOf(F, U->getSubExpr(), Depth + 1);
    if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(E)) {
      std::optional<Address> A = addressOf(F, ASE->getBase(), Depth + 1);
      if (!A || ASE->getType()->isIncompleteType() || ASE->getType()->isDependentType())
        return std::nullopt;
      uint64_t Size = Ctx.getTypeSizeInChars(ASE->getType()).getQuantity();
      std::optional<uint64_t> I = constant(ASE->getIdx());
      A->add(I ? *I * Size : Size * divisorOf(ASE->getIdx()), ASE->getIdx(), I.has_value());
      return A;
    }
    if (const auto *B = dyn_cast<BinaryOperator>(E); B && B->isAdditiveOp() && B->getType()->isPointerType()) {
      const Expr *P = B->getLHS()->getType()->isPointerType() ? B->getLHS() : B->getRHS();
      const Expr *N = P == B->getLHS() ? B->getRHS() : B->getLHS();
      std::optional<Address> A = addressOf(F, P, Depth + 1);
      QualType Pointee = B->getType()->getPointeeType();
      if (!A || Pointee->isIncompleteType() || Pointee->isDependentType())
        return std::nullopt;
      uint64_t Size = Pointee->isVoidType() ? 1 : Ctx.getTypeSizeInChars(Pointee).getQuantity();
      std::optional<uint64_t> I = constant(N);
      A->add(I ? *I * Size : Size * divisorOf(N), N, I.has_value());
      return A;
    }
    if (const auto *ME = dyn_cast<MemberExpr>(E); ME && !ME->isArrow()) {
      const auto *FD = dyn_cast<FieldDecl>(ME->getMemberDecl());
      std::optional<Address> A = FD && !FD->isBitField() ? addressOf(F, ME->getBase(), Depth + 1) : std::nullopt;
      if (A)
        A->add(Ctx.getFieldOffset(FD) / Ctx.getCharWidth(), ME, true);
      return A;
    }
    if (const auto *DR = dyn_cast<DeclRefExpr>(E)) {
      const auto *V = dyn_cast<VarDecl>(DR->getDecl());
      if (V && isSharedVar(V))
        return Address{V};
      if (V && V->getType()->isReferenceType() && V->hasLocalStorage() && V->getInit() && !isa<ParmVarDecl>(V))
        return addressOf(F, V->getInit(), Depth + 1);
      if (V && V->getType()->isPointerType() && unchanged(F, V))
        return addressOf(F, V->getInit(), Depth + 1);
    }
    return std::nullopt;
  }

  void alignment(const FunctionOps &Fn, const TmaOp &Op) {
    uint64_t Need = Op.Tensor ? 128 : 16;
    std::string What = Op.Tensor ? "tensor copy (cp.async.bulk.tensor)" : "bulk copy (cp.async.bulk)";
    std::optional<uint64_t> Bytes = Op.Tensor ? std::nullopt : bytesOf(Op);
    if (Bytes && *Bytes % 16 != 0) {
      AuditFinding F;
      F.Code = Reason::AsyncTmaAlignment;
      F.At = place(Op.At->getBeginLoc());
      F.Detail = "this " + What + " moves " + std::to_string(*Bytes) +
                 " bytes, not a multiple of 16: the instruction moves whole 16-byte units only (its behaviour is "
                 "undefined otherwise); copy " + std::to_string(*Bytes / 16 * 16) + " bytes in bulk and the rest otherwise";
      report(std::move(F));
    }
    std::optional<Address> A = Op.Shared ? addressOf(Fn.F, Op.Shared) : std::nullopt;
    if (!A)
      return;
    uint64_t Declared = Ctx.getDeclAlign(A->V).getQuantity();
    // Dynamic shared memory (`extern __shared__ char smem[];`) starts on 16 bytes at least.
    if (A->V->hasExternalStorage() && A->V->getType()->isIncompleteArrayType())
      Declared = std::max<uint64_t>(Declared, 16);
    if (std::min(Declared, A->Divides ? A->Divides : Declared) >= Need)
      return;
    AuditFinding F;
    F.Code = Reason::AsyncTmaAlignment;
    F.At = place(Op.At->getBeginLoc());
    std::string Side = Op.K == TmaOp::Load ? "destination" : "source";
    F.Detail = "the shared " + Side + " '" + text(Op.Shared) + "' of this " + What + " must be " +
               std::to_string(Need) + "-byte aligned (the instruction's behaviour is undefined otherwise), and "
               "tilepipe proves only ";
    if (A->Divides && A->Divides < Need) {
      F.Detail += std::to_string(std::min(Declared, A->Divides)) + ": the offset '" + text(A->Limit) + "' into '" +
                  A->V->getName().str() + "' " +
                  (A->LimitConstant ? "adds " + std::to_string(A->LimitBytes) + " bytes"
                                    : "moves it in steps of " + std::to_string(A->LimitBytes) + " bytes") +
                  ", a multiple of " + std::to_string(A->Divides) + " only; start each copy on a multiple of " +
                  std::to_string(Need) + " bytes (pad the rows)";
      report(std::move(F));
      return;
    }
    F.Detail += std::to_string(Declared) + ": '" + A->V->getName().str() + "' is declared with " +
                std::to_string(Declared) + "-byte alignment, so where it starts is up to the layout of the block's shared "
                "memory; alignas(" + std::to_string(Need) + ") on its declaration makes it certain";
    F.Notes.push_back({place(A->V->getLocation()), "'" + A->V->getName().str() + "' is declared here"});
    if (auto Fix = alignasFix(Ctx, A->V, Need))
      F.Fixes.push_back(*Fix);
    report(std::move(F));
  }

  /// The statement that holds E's expression statement (the nearest ancestor that is no expression).
  const Stmt *holder(const Stmt *S) const {
    for (unsigned Depth = 0; S && Depth < 64; ++Depth) {
      DynTypedNodeList Ps = Ctx.getParents(*S);
      const Stmt *P = Ps.empty() ? nullptr : Ps[0].get<Stmt>();
      if (!P || !isa<Expr>(P))
        return P;
      S = P;
    }
    return nullptr;
  }

  /// How many times S runs each time Region runs, where that is a constant: the statements between
  /// are blocks and `for` loops of constant trip count (a counter from a constant to a constant by
  /// a constant step); else nullopt.
  std::optional<uint64_t> timesIn(const Stmt *S, const Stmt *Region) const {
    uint64_t Times = 1;
    const Stmt *Prev = S;
    for (const Stmt *P = holder(S); P; Prev = P, P = holder(P)) {
      if (P == Region)
        return Times;
      if (isa<CompoundStmt>(P) || isa<AttributedStmt>(P))
        continue;
      const auto *For = dyn_cast<ForStmt>(P);
      if (!For || Prev != For->getBody())
        return std::nullopt;
      std::optional<uint64_t> Trips = tripsOf(For);
      if (!Trips)
        return std::nullopt;
      Times *= *Trips;
    }
    return std::nullopt;
  }

  /// Whether S may change V: writes it, takes its address, binds a reference to it (LocalFacts).
  static bool changesIn(const Stmt *S, const VarDecl *V) {
    LocalFacts Facts;
    Facts.scan(S);
    return Facts.changes(V);
  }

  /// A `for` loop's trip count where it is a constant: a counter declared in its init with a
  /// constant start, compared (<, <=, !=) with a constant, stepped by ++ or += a positive constant,
  /// and changed nowhere in the body (LocalFacts: no write, address or reference of it).
  std::optional<uint64_t> tripsOf(const ForStmt *For) const {
    const auto *DS = dyn_cast_or_null<DeclStmt>(For->getInit());
    const auto *V = DS && DS->isSingleDecl() ? dyn_cast<VarDecl>(DS->getSingleDecl()) : nullptr;
    const auto *Cond = dyn_cast_or_null<BinaryOperator>(For->getCond() ? For->getCond()->IgnoreParenImpCasts() : nullptr);
    if (!V || !V->getInit() || !Cond || varOf(Cond->getLHS()->IgnoreParenImpCasts()) != V)
      return std::nullopt;
    std::optional<uint64_t> From = constant(V->getInit()), To = constant(Cond->getRHS());
    std::optional<uint64_t> Step;
    const Expr *Inc = For->getInc() ? For->getInc()->IgnoreParenImpCasts() : nullptr;
    if (const auto *U = dyn_cast_or_null<UnaryOperator>(Inc); U && U->isIncrementOp() && varOf(U->getSubExpr()) == V)
      Step = 1;
    else if (const auto *CA = dyn_cast_or_null<CompoundAssignOperator>(Inc);
             CA && CA->getOpcode() == BO_AddAssign && varOf(CA->getLHS()) == V)
      Step = constant(CA->getRHS());
    if (!From || !To || !Step || *Step == 0 || changesIn(For->getBody(), V))
      return std::nullopt;
    uint64_t End = *To + (Cond->getOpcode() == BO_LE);
    if (Cond->getOpcode() != BO_LT && Cond->getOpcode() != BO_LE && Cond->getOpcode() != BO_NE)
      return std::nullopt;
    if (Cond->getOpcode() == BO_NE && (End < *From || (End - *From) % *Step != 0))
      return std::nullopt;
    return End <= *From ? 0 : (End - *From + *Step - 1) / *Step;
  }

  /// Whether E names a variable declared inside Region (its value may differ from one run of the
  /// statements to the next, or from one iteration of a loop there to the next).
  bool namesLocalOf(const Expr *E, const Stmt *Region) const {
    for (const NameUse &U : namesIn(E))
      if (const auto *V = dyn_cast_or_null<VarDecl>(U.Decl))
        if (inside(Region, V->getLocation()))
          return true;
    return false;
  }

  /// Whether L (as expanded) lies within the text of S.
  bool inside(const Stmt *S, SourceLocation L) const {
    return SM.isPointWithin(SM.getExpansionLoc(L), SM.getExpansionLoc(S->getBeginLoc()),
                            SM.getExpansionLoc(S->getEndLoc()));
  }

  void txBytes() {
    struct Use {
      const FunctionOps *Fn;
      const TmaOp *Op;
      std::string Key;
    };
    std::map<const VarDecl *, std::vector<Use>> ByBarrier;
    std::set<const VarDecl *> Unread;
    for (const FunctionOps &Fn : Functions)
      for (const TmaOp &Op : Fn.Ops) {
        std::string Key;
        const VarDecl *V = Op.Barrier ? barrierVar(Op.Barrier, &Key, Ctx) : nullptr;
        if ((Op.K == TmaOp::Load || Op.K == TmaOp::Expect) && !V)
          continue;
        if (Op.K == TmaOp::Load || Op.K == TmaOp::Expect)
          ByBarrier[V].push_back({&Fn, &Op, Key});
      }
    // A barrier handed to a function of the user's, or used in asm the audit cannot read, may have
    // copies or expectations the audit does not see.
    for (const FunctionOps &Fn : Functions) {
      for (const TmaOp &Op : Fn.Ops)
        if (Op.K == TmaOp::Unknown)
          for (const NameUse &U : namesIn(Op.At))
            if (const auto *V = dyn_cast_or_null<VarDecl>(U.Decl))
              Unread.insert(V);
      struct CallScan : RecursiveASTVisitor<CallScan> {
        bool VisitCallExpr(CallExpr *CE) {
          if (tmaOp(CE, *SM).K != TmaOp::None || !Of->may(CE, Question::MovesBytes))
            return true;
          for (const Expr *A : CE->arguments())
            for (const NameUse &U : namesIn(A))
              if (const auto *V = dyn_cast_or_null<VarDecl>(U.Decl))
                Out->insert(V);
          return true;
        }
        const SourceManager *SM;
        Callees *Of;
        std::set<const VarDecl *> *Out;
      } C;
      C.SM = &SM;
      C.Of = &this->Calls;
      C.Out = &Unread;
      C.TraverseStmt(Fn.F->getBody());
    }
    for (const auto &[V, Uses] : ByBarrier) {
      if (Unread.count(V))
        continue;
      // The blocks that expect bytes on V, each with its expectations and its copies by key.
      struct Region {
        std::string Key;
        std::vector<const Use *> Expects, Loads;
      };
      std::map<const Stmt *, Region> Regions;
      bool Readable = true;
      for (const Use &U : Uses)
        if (U.Op->K == TmaOp::Expect) {
          const Stmt *R = holder(U.Op->At);
          if (!R || !isa<CompoundStmt>(R)) {
            Readable = false;
            break;
          }
          Region &G = Regions[R];
          Readable &= G.Key.empty() || G.Key == U.Key;
          G.Key = U.Key;
          G.Expects.push_back(&U);
        }
      for (const Use &U : Uses) {
        if (!Readable || U.Op->K != TmaOp::Load)
          continue;
        const Stmt *In = nullptr;
        for (auto &[R, G] : Regions)
          if (inside(R, U.Op->At->getBeginLoc()) && (!In || inside(In, R->getBeginLoc())))
            In = R;
        if (!In || Regions[In].Key != U.Key || U.Op->Tensor) {
          Readable = false;
          break;
        }
        Regions[In].Loads.push_back(&U);
      }
      if (!Readable)
        continue;
      for (const auto &[R, G] : Regions)
        region(R, G.Expects, G.Loads);
    }
  }

  template <typename UseT>
  void region(const Stmt *R, const std::vector<const UseT *> &Expects, const std::vector<const UseT *> &Loads) {
    if (Loads.empty())
      return;
    uint64_t Expected = 0, Moved = 0;
    for (const UseT *E : Expects) {
      std::optional<uint64_t> B = bytesOf(*E->Op);
      if (!B || namesLocalOf(E->Op->Barrier, R))
        return;
      Expected += *B;
    }
    std::vector<std::pair<Place, std::string>> Notes;
    for (const UseT *L : Loads) {
      std::optional<uint64_t> B = bytesOf(*L->Op), Times = timesIn(L->Op->At, R);
      if (!B || !Times || namesLocalOf(L->Op->Barrier, R))
        return;
      Moved += *B * *Times;
      Notes.push_back({place(L->Op->At->getBeginLoc()),
                       "this copy moves " + std::to_string(*B) + " bytes" +
                           (*Times == 1 ? std::string() : ", " + std::to_string(*Times) + " times")});
    }
    if (Expected == Moved)
      return;
    const TmaOp &First = *Expects.front()->Op;
    AuditFinding F;
    F.Code = Reason::AsyncTxBytes;
    F.At = place(First.At->getBeginLoc());
    F.Detail = "the phase of '" + Expects.front()->Key + "' expects " + std::to_string(Expected) +
               " bytes here, but the copies that complete on it in these statements move " + std::to_string(Moved) + ": " +
               (Expected > Moved ? "the phase never completes, and the threads that wait on it hang"
                                 : "the phase completes once " + std::to_string(Expected) +
                                       " bytes have landed, so the threads that wait on it may read a tile still being "
                                       "copied, and the late bytes count against the next phase") +
               "; expect " + std::to_string(Moved);
    F.Notes = std::move(Notes);
    // The count in place of the expectation's, where it is one constant the user wrote in a function
    // that is no template's instance (another instance may move other bytes).
    const FunctionDecl *Fn = Expects.front()->Fn->F;
    bool Instance = Fn->getTemplateInstantiationPattern() != nullptr ||
                    (isa<CXXMethodDecl>(Fn) && cast<CXXMethodDecl>(Fn)->getParent()->isLambda() &&
                     cast<CXXMethodDecl>(Fn)->getParent()->getDeclContext()->isDependentContext());
    if (Expects.size() == 1 && First.Spelled && First.Size && !Instance &&
        !First.Size->getBeginLoc().isMacroID() && !First.Size->getEndLoc().isMacroID()) {
      CharSourceRange Range = fileRange(Ctx, First.Size->getSourceRange());
      if (Range.isValid() && inUserFile(SM, Range.getBegin())) {
        F.Fixes.push_back(tooling::Replacement(SM, Range, std::to_string(Moved)));
        F.FixAt = place(Range.getBegin());
      }
    }
    report(std::move(F));
  }

  void paths(const FunctionOps &Fn) {
    std::unique_ptr<Paths> P;
    auto Graph = [&]() -> const Paths & {
      if (!P)
        P = std::make_unique<Paths>(Fn.F, Ctx);
      return *P;
    };
    auto Fences = [&](bool InitFence) {
      return [this, InitFence](const Stmt *S) { return Calls.does(S, InitFence ? Question::FencesInit : Question::Fences); };
    };
    for (const TmaOp &Op : Fn.Ops) {
      // The threads' stores that reach a bulk copy out of the same variable with no proxy fence.
      if (Op.K == TmaOp::Store && Op.Shared)
        if (SharedPlace P = sharedBase(Op.Shared))
          for (const auto &[S, W] : Fn.Stores)
            if (W.mayOverlap(P) && Graph().reaches(S, Op.At, Fences(false))) {
              const std::string Name = P.V->getName().str(), Src = text(Op.Shared);
              report(Reason::AsyncProxyFence, Op.At,
                     "this bulk copy reads '" + (Src.empty() ? Name : Src) + "'" +
                         (Src == Name || Src.empty() ? "" : " (in '" + Name + "')") +
                         " through the async proxy, but the threads' store at line " + line(S) +
                         " reaches it with no fence.proxy.async between: the copy may read what the buffer held "
                         "before; in the threads that store, after their stores and before the barrier that orders "
                         "them before the copy, add cuda::ptx::fence_proxy_async(cuda::ptx::space_shared) "
                         "(fence.proxy.async.shared::cta)",
                     S, "the store into '" + Name + "'");
              break;
            }
      if (Op.K != TmaOp::Load || !Op.Barrier)
        continue;
      const VarDecl *B = barrierVar(Op.Barrier, nullptr, Ctx);
      if (!B)
        continue;
      for (const TmaOp &I : Fn.Ops) {
        if (I.K != TmaOp::Init || !I.Barrier || barrierVar(I.Barrier, nullptr, Ctx) != B)
          continue;
        if (Graph().reaches(I.At, Op.At, Fences(true)))
          report(Reason::AsyncProxyFence, Op.At,
                 "this copy completes on '" + B->getName().str() + "', whose init at line " + line(I.At) +
                     " reaches it with no proxy fence between: the init is a store of the threads (the generic "
                     "proxy), the copy's completion an access of the async proxy, which may see the barrier "
                     "uninitialised; after the init add cuda::ptx::fence_proxy_async(cuda::ptx::space_shared) (or "
                     "fence.mbarrier_init), as CUDA's programming guide does",
                 I.At, "'" + B->getName().str() + "' is initialised here");
        auto Waits = [this, B](const Stmt *S) {
          TmaOp W = tmaOp(S, SM);
          if (W.K == TmaOp::Wait)
            return !W.Barrier || barrierVar(W.Barrier, nullptr, Ctx) == B;
          return Calls.does(S, Question::Waits);
        };
        if (Graph().reaches(Op.At, I.At, Waits))
          report(Reason::AsyncBarrierReinit, I.At,
                 "this init of '" + B->getName().str() + "' may run while the copy at line " + line(Op.At) +
                     ", which completes on it, is still in flight: no wait on the barrier lies between them on that "
                     "path; the init discards the bytes the phase still expects, and the copy's completion then "
                     "lands on the new phase; wait for the phase (or the copies) before initialising it again",
                 Op.At, "the copy that may still be in flight");
      }
    }
  }

  ASTContext &Ctx;
  const SourceManager &SM;
  StringRef MainName;
  std::vector<FunctionOps> Functions;
  std::map<const FunctionDecl *, LocalFacts> Locals;
  Callees Calls{SM};
  std::vector<AuditFinding> Out;
  std::set<std::tuple<std::string, unsigned, unsigned, int>> Reported;
};

} // namespace

std::vector<AuditFinding> tmaFindings(ASTContext &Ctx, StringRef MainName) { return Auditor(Ctx, MainName).run(); }

} // namespace tilepipe

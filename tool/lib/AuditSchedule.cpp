// AuditSchedule (Audit.h): the audit's checks that read a loop as a schedule of tiles. Each tile
// index (the value a buffer's stage subscript takes before `% N`) is an affine function of the
// loop's iteration count, through the loop's induction variables, the unchanged locals that hold
// them, and an inner producer loop whose own inductions run ahead up to its bound (NVIDIA's
// `for (; aStage <= a + aStep * N; aStage += aStep, ++iStage)`), and counters carried in from
// before the loop, whose start adds the steps of the prologues of constant length between
// (carriedInductions); or the stage is a counter of its own, stepped once an iteration modulo N
// (RotatingCounter), which tells the tile modulo N only, and exactly relative to the copy that
// fills the buffer read.
//  - async-stage-overrun: a copy that refills a stage buffer while another thread may still read
//    what it held. The distance D from the tile an iteration reads to the newest tile it copies,
//    the N buffers, and where the block barriers stand decide: the tile read k = N - D iterations
//    before a copy shares its buffer, and a block barrier must lie between that read and the copy.
//  - async-read-before-wait: a read of a tile whose group the last wait before it
//    (wait_prior<K>) may leave in flight: the groups committed after the read tile's, counted on
//    the same schedule, must be at least K; a consumer_wait is such a wait, its K counted from the
//    groups in flight when the loop begins (groupsBefore). For copies that complete on a barrier per stage: an
//    arrive_and_wait on the read tile's own barrier, after its copy was issued, before the read.
// Only copies that order nothing across threads are read (AuditOps.h: cuda::pipeline of thread
// scope, __pipeline_memcpy_async, cp.async in inline assembly and its helpers); a block-scope
// pipeline's producer_acquire waits for every consumer's release, and is left to
// async-stage-count. Whatever is not read as such a schedule gives no finding.
// About 1,500 lines in one file: the affine reading of the schedule (Lin, Induction, value, the
// producer loop's bound) serves these two checks alone, and split off it would export its types for
// no other reader; the rewrite's own index algebra (IndexAlgebra.cpp) answers another question
// (which element a thread copies), over other terms (thread indices, not loop counters).
#include "AuditSchedule.h"
#include "AuditOps.h"
#include "tilepipe/Find.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/Support/MathExtras.h"
#include <functional>
#include <map>

using namespace clang;

namespace tilepipe {

namespace {

/// The loop's iteration count, and the inner producer loop's iterations since the loop began.
const char OuterKey = 0, InnerKey = 0;

/// An integer as an affine form: a constant plus multiples of loop-invariant variables (atoms)
/// and of the two counters.
struct Lin {
  std::map<const void *, int64_t> Terms;
  int64_t C = 0;
  bool Overflow = false; ///< some arithmetic left int64_t: the value is not read
  static Lin constant(int64_t V) { return Lin{{}, V}; }
  static Lin atom(const void *K, int64_t Coef = 1) { return Lin{{{K, Coef}}, 0}; }
  Lin &add(const Lin &O, int64_t Scale = 1) {
    auto MulAdd = [&](int64_t &Into, int64_t V) {
      int64_t P;
      Overflow |= O.Overflow || llvm::MulOverflow(V, Scale, P) || llvm::AddOverflow(Into, P, Into);
    };
    for (const auto &[K, V] : O.Terms) {
      MulAdd(Terms[K], V);
      if (Terms[K] == 0)
        Terms.erase(K);
    }
    MulAdd(C, O.C);
    return *this;
  }
  int64_t coef(const void *K) const {
    auto It = Terms.find(K);
    return It == Terms.end() ? 0 : It->second;
  }
  /// Only the counters: no atom left.
  bool countersOnly() const {
    return llvm::all_of(Terms, [](const auto &T) { return T.first == &OuterKey || T.first == &InnerKey; });
  }
};

/// A stage counter of its own: Start at the loop's start, one step modulo Mod an iteration, taken
/// by the statement at Update of the body (none: in the loop's increment).
struct RotatingCounter {
  int64_t Start = 0;
  uint64_t Mod = 0;
  std::optional<size_t> Update;
};

/// A variable whose value is Start plus Step per step of Counter (Step unknown: a step that is
/// not a constant; the variable's value is then not read).
struct Induction {
  Lin Start;
  std::optional<int64_t> Step;
  const void *Counter = nullptr;
  /// Carried in: declared before the loop (its Start is its value when the loop begins), read so
  /// only in the loop's body, where a statement of its own at Update steps it (none: the increment).
  bool Carried = false;
  std::optional<size_t> Update;
};

int64_t floorDiv(int64_t A, int64_t B) { return A / B - ((A % B != 0) && ((A < 0) != (B < 0))); }

/// The uses of each variable of a function that may write it (every use not read as a value):
/// a variable without one holds its initializer; an induction's only one is its step.
class Writes : public RecursiveASTVisitor<Writes> {
public:
  explicit Writes(ASTContext &Ctx) : Ctx(Ctx) {}
  bool shouldVisitLambdaBody() const { return true; }
  bool VisitDeclRefExpr(DeclRefExpr *E) {
    const auto *V = dyn_cast<VarDecl>(E->getDecl());
    if (!V)
      return true;
    DynTypedNodeList P = Ctx.getParents(*E);
    const Stmt *Up = P.empty() ? nullptr : P[0].get<Stmt>();
    while (Up && isa<ParenExpr>(Up)) {
      P = Ctx.getParents(*Up);
      Up = P.empty() ? nullptr : P[0].get<Stmt>();
    }
    if (const auto *IC = dyn_cast_or_null<ImplicitCastExpr>(Up); IC && IC->getCastKind() == CK_LValueToRValue)
      return true;
    Of[V].push_back(E);
    return true;
  }
  std::map<const VarDecl *, std::vector<const DeclRefExpr *>> Of;

private:
  ASTContext &Ctx;
};


/// `bar[i]` of a __shared__ array of barriers, one per stage: the array, i and the barriers.
struct BarrierRef {
  const VarDecl *Array = nullptr;
  const Expr *Stage = nullptr;
  uint64_t Count = 0;
};

BarrierRef barrierRef(const ASTContext &Ctx, const Expr *E) {
  const auto *ASE = dyn_cast_or_null<ArraySubscriptExpr>(E ? E->IgnoreParenImpCasts() : nullptr);
  const VarDecl *V = ASE ? varOf(ASE->getBase()->IgnoreParenImpCasts()) : nullptr;
  const auto *CAT = V && isSharedVar(V) ? Ctx.getAsConstantArrayType(V->getType()) : nullptr;
  if (!CAT || isa<ArrayType>(CAT->getElementType().getCanonicalType()))
    return {};
  return {V, ASE->getIdx(), CAT->getSize().getZExtValue()};
}

/// A copy and the tile it fills, t + Tile in iteration t; its statement's place in the body.
struct Scheduled {
  ThreadCopy TC;
  StageRef Dst;
  size_t Pos;
  int64_t Tile;
  bool Modular = false; ///< the tile is known modulo the buffers only (a stage counter of its own)
};

/// A read of a stage buffer and the tile it reads, t + Tile.
struct ScheduledRead {
  StageRef Use;
  size_t Pos;
  int64_t Tile;
  bool Modular = false;
};

/// The expressions of a comma list (`++i, a += s`), in order; E itself where it is not one.
std::vector<const Expr *> commaList(const Expr *E) {
  if (const auto *B = dyn_cast_or_null<BinaryOperator>(E ? E->IgnoreParens() : nullptr); B && B->getOpcode() == BO_Comma) {
    std::vector<const Expr *> L = commaList(B->getLHS()), R = commaList(B->getRHS());
    L.insert(L.end(), R.begin(), R.end());
    return L;
  }
  return {E};
}

class Checker {
public:
  Checker(ASTContext &Ctx, StringRef MainName, const FunctionDecl *F)
      : Ctx(Ctx), SM(Ctx.getSourceManager()), MainName(MainName), W(Ctx) {
    W.TraverseStmt(F->getBody());
  }

  void loop(const ForStmt *Outer, std::vector<AuditFinding> &Out);
  /// After every loop of the function: one async-unknown remark for each loop whose copies into
  /// stage buffers, or reads of them, no loop read on its schedule.
  void unread(std::vector<AuditFinding> &Out) const;

private:
  /// A copy into a stage buffer, or a read of one, that a loop did not read on its schedule: the
  /// innermost such loop, and why.
  struct Unread {
    const ForStmt *Loop;
    const Stmt *At;
    std::string Why;
  };
  std::map<const Stmt *, Unread> NotRead;  ///< by the copy's statement or the read's expression
  std::set<const Stmt *> Read;             ///< copies and reads some loop's schedule read
  void noteUnread(const ForStmt *L, const Stmt *At, std::string Why) {
    NotRead[At] = Unread{L, At, std::move(Why)}; // an inner loop's, visited later, replaces its outer's
  }
  bool schedule(const ForStmt *Outer, const CompoundStmt *Body, const ForStmt *&Producer,
                std::optional<int64_t> &AheadOfOuter);
  void stageOverrun(const CompoundStmt *Body, const std::vector<Scheduled> &Sched,
                    const std::vector<ScheduledRead> &Reads, std::vector<AuditFinding> &Out);
  void commitUnderCondition(const CompoundStmt *Body, const std::vector<Scheduled> &Sched,
                            const std::vector<std::pair<size_t, WaitPrior>> &Waits,
                            std::vector<AuditFinding> &Out);
  void readBeforeWait(const ForStmt *Outer, const CompoundStmt *Body, const ForStmt *Producer,
                      const std::vector<Scheduled> &Sched,
                      const std::vector<ScheduledRead> &Reads, std::vector<AuditFinding> &Out);
  void barrierReadBeforeWait(const CompoundStmt *Body, const std::vector<Scheduled> &Sched,
                             const std::vector<ScheduledRead> &Reads, std::vector<AuditFinding> &Out);
  bool unchanged(const VarDecl *V) const {
    return !V->getType()->isReferenceType() && !V->getType().isVolatileQualified() &&
           (V->hasLocalStorage() || isa<ParmVarDecl>(V)) && !W.Of.count(V);
  }

  /// Whether E has the same value in every iteration of every loop of the function: constants,
  /// variables nothing writes, the thread's and block's indices, and arithmetic on them (no read of
  /// memory, no call). A copy into such a stage fills the same buffer every iteration: the array
  /// is one buffer whose first subscript picks a row, not stages the loop rotates through.
  bool invariant(const Expr *E, unsigned Depth = 0) const {
    if (!E || Depth > 16 || E->isValueDependent())
      return false;
    E = E->IgnoreParenImpCasts();
    Expr::EvalResult R;
    if (isBuiltinIndexRead(E) || (E->getType()->isIntegralOrEnumerationType() && E->EvaluateAsInt(R, Ctx)))
      return true;
    if (const auto *DR = dyn_cast<DeclRefExpr>(E)) {
      // A local holds its initializer's value, which may differ between iterations where it is
      // declared in the loop.
      const auto *V = dyn_cast<VarDecl>(DR->getDecl());
      return V && unchanged(V) && (isa<ParmVarDecl>(V) || (V->getInit() && invariant(V->getInit(), Depth + 1)));
    }
    if (const auto *U = dyn_cast<UnaryOperator>(E))
      return (U->getOpcode() == UO_Minus || U->getOpcode() == UO_Plus || U->getOpcode() == UO_Not) &&
             invariant(U->getSubExpr(), Depth + 1);
    if (const auto *B = dyn_cast<BinaryOperator>(E))
      return !B->isAssignmentOp() && B->getOpcode() != BO_Comma && invariant(B->getLHS(), Depth + 1) &&
             invariant(B->getRHS(), Depth + 1);
    if (const auto *C = dyn_cast<ConditionalOperator>(E))
      return invariant(C->getCond(), Depth + 1) && invariant(C->getTrueExpr(), Depth + 1) &&
             invariant(C->getFalseExpr(), Depth + 1);
    return false;
  }

  std::optional<Lin> value(const Expr *E, unsigned Depth = 0) const {
    // Far from the limits of int64_t, so that the schedule's arithmetic below cannot leave it.
    constexpr int64_t Limit = int64_t(1) << 40;
    auto Small = [&](int64_t X) { return X > -Limit && X < Limit; };
    std::optional<Lin> V = valueOf(E, Depth);
    if (V && (V->Overflow || !Small(V->C) || !llvm::all_of(V->Terms, [&](const auto &T) { return Small(T.second); })))
      return std::nullopt;
    return V;
  }

  std::optional<Lin> valueOf(const Expr *E, unsigned Depth) const {
    if (!E || Depth > 16 || E->isValueDependent())
      return std::nullopt;
    E = E->IgnoreParenImpCasts();
    Expr::EvalResult R;
    if (E->getType()->isIntegralOrEnumerationType() && E->EvaluateAsInt(R, Ctx))
      return R.Val.getInt().isRepresentableByInt64() ? std::optional<Lin>(Lin::constant(R.Val.getInt().getExtValue()))
                                                     : std::nullopt;
    if (const auto *DR = dyn_cast<DeclRefExpr>(E)) {
      const auto *V = dyn_cast<VarDecl>(DR->getDecl());
      if (!V || !V->getType()->isIntegerType())
        return std::nullopt;
      if (auto It = Inds.find(V); It != Inds.end()) {
        const Induction &I = It->second;
        if (!I.Step)
          return std::nullopt;
        Lin L = I.Start;
        if (I.Carried) {
          // Outside the body it holds another value; after the statement that steps it, one step more.
          std::optional<size_t> Here = CurBody ? indexIn(CurBody, DR) : std::nullopt;
          if (!Here || (I.Update && *Here == *I.Update))
            return std::nullopt;
          if (I.Update && *Here > *I.Update)
            L.add(Lin::constant(*I.Step));
        }
        return L.add(Lin::atom(I.Counter, *I.Step));
      }
      if (!unchanged(V))
        return std::nullopt;
      if (V->getInit())
        if (std::optional<Lin> I = value(V->getInit(), Depth + 1))
          return I;
      return isa<ParmVarDecl>(V) || V->getInit() ? std::optional<Lin>(Lin::atom(V)) : std::nullopt;
    }
    if (const auto *U = dyn_cast<UnaryOperator>(E)) {
      if (U->getOpcode() != UO_Minus && U->getOpcode() != UO_Plus)
        return std::nullopt;
      std::optional<Lin> S = value(U->getSubExpr(), Depth + 1);
      if (!S)
        return std::nullopt;
      return U->getOpcode() == UO_Plus ? *S : Lin().add(*S, -1);
    }
    if (const auto *B = dyn_cast<BinaryOperator>(E)) {
      std::optional<Lin> L = value(B->getLHS(), Depth + 1), Rt = value(B->getRHS(), Depth + 1);
      if (!L || !Rt)
        return std::nullopt;
      switch (B->getOpcode()) {
      case BO_Add:
        return L->add(*Rt);
      case BO_Sub:
        return L->add(*Rt, -1);
      case BO_Mul:
        if (L->Terms.empty())
          return Lin().add(*Rt, L->C);
        if (Rt->Terms.empty())
          return Lin().add(*L, Rt->C);
        return std::nullopt;
      default:
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

  /// The tile a stage subscript selects: X in `X % N` (or `X & (N - 1)`), read through the
  /// unchanged locals that hold it, where N is the buffer count.
  /// At: the place in the body of the statement that reads it, for a stage counter of its own,
  /// whose value tells the tile modulo N only (Modular is set then).
  std::optional<Lin> tileOf(const Expr *E, uint64_t N, std::optional<size_t> At = std::nullopt,
                            bool *Modular = nullptr, unsigned Depth = 0) const {
    if (!E || Depth > 8)
      return std::nullopt;
    E = E->IgnoreParenImpCasts();
    if (const auto *DR = dyn_cast<DeclRefExpr>(E)) {
      const auto *V = dyn_cast<VarDecl>(DR->getDecl());
      if (auto It = V && Depth == 0 && At && Modular ? Counters.find(V) : Counters.end();
          It != Counters.end() && It->second.Mod == N) {
        *Modular = true;
        const RotatingCounter &C = It->second;
        return Lin::atom(&OuterKey).add(Lin::constant(C.Start + (C.Update && *At > *C.Update ? 1 : 0)));
      }
      if (V && !Inds.count(V) && !Counters.count(V) && unchanged(V) && V->getInit())
        return tileOf(V->getInit(), N, std::nullopt, nullptr, Depth + 1);
      return std::nullopt;
    }
    const auto *B = dyn_cast<BinaryOperator>(E);
    if (!B || (B->getOpcode() != BO_Rem && B->getOpcode() != BO_And))
      return std::nullopt;
    std::optional<Lin> M = value(B->getRHS());
    if (!M || !M->Terms.empty() || M->C <= 0)
      return std::nullopt;
    uint64_t Mod = B->getOpcode() == BO_Rem ? uint64_t(M->C) : uint64_t(M->C) + 1;
    if (Mod != N || (B->getOpcode() == BO_And && (N & (N - 1)) != 0))
      return std::nullopt;
    return value(B->getLHS());
  }

  /// The variable a step expression moves and by how much (`++v`, `v--`, `v += c`, `v -= c`; no
  /// amount where c is not a constant), or nothing; the DeclRefExpr written.
  std::optional<std::tuple<const VarDecl *, std::optional<int64_t>, const DeclRefExpr *>>
  stepOf(const Expr *E) const {
    E = E->IgnoreParens();
    const Expr *Target = nullptr;
    std::optional<int64_t> Step;
    if (const auto *U = dyn_cast<UnaryOperator>(E); U && U->isIncrementDecrementOp()) {
      Target = U->getSubExpr();
      Step = U->isIncrementOp() ? 1 : -1;
    } else if (const auto *CA = dyn_cast<CompoundAssignOperator>(E);
               CA && (CA->getOpcode() == BO_AddAssign || CA->getOpcode() == BO_SubAssign)) {
      std::optional<Lin> S = value(CA->getRHS());
      Target = CA->getLHS();
      if (S && S->Terms.empty())
        Step = CA->getOpcode() == BO_AddAssign ? S->C : -S->C;
    } else {
      return std::nullopt;
    }
    const auto *DR = dyn_cast<DeclRefExpr>(Target->IgnoreParens());
    const auto *V = DR ? dyn_cast<VarDecl>(DR->getDecl()) : nullptr;
    if (!V || !V->getType()->isIntegerType() || V->getType()->isReferenceType() || V->getType().isVolatileQualified())
      return std::nullopt;
    return std::make_tuple(V, Step, DR);
  }

  /// The steps of a for loop's increment (a comma list), each written only there; nothing where
  /// one is not a step, or its variable is written elsewhere too.
  std::optional<std::map<const VarDecl *, std::optional<int64_t>>> stepsOf(const ForStmt *F) const {
    std::map<const VarDecl *, std::optional<int64_t>> Out;
    for (const Expr *E : commaList(F->getInc())) {
      if (!E)
        return std::nullopt;
      auto S = stepOf(E);
      if (!S)
        return std::nullopt;
      auto [V, Step, DR] = *S;
      auto It = W.Of.find(V);
      if (Out.count(V) || It == W.Of.end() || It->second.size() != 1 || It->second.front() != DR)
        return std::nullopt;
      Out[V] = Step;
    }
    return Out;
  }

  /// The statement of Body that holds S (S itself where it is one), or null.
  const Stmt *topOf(const CompoundStmt *Body, const Stmt *S) const {
    for (unsigned I = 0; I < 64 && S; ++I) {
      DynTypedNodeList P = Ctx.getParents(*S);
      if (P.empty())
        return nullptr;
      const Stmt *Up = P[0].get<Stmt>();
      if (Up == Body)
        return S;
      if (!Up) {
        // Through a declaration: `const int j = ...;` holds its initializer.
        if (const auto *D = P[0].get<VarDecl>()) {
          DynTypedNodeList PD = Ctx.getParents(*D);
          Up = PD.empty() ? nullptr : PD[0].get<Stmt>();
          if (Up && Ctx.getParents(*Up).size() && Ctx.getParents(*Up)[0].get<Stmt>() == Body)
            return Up;
        }
      }
      S = Up;
    }
    return nullptr;
  }

  /// The place in Body of the statement that holds S.
  std::optional<size_t> indexIn(const CompoundStmt *Body, const Stmt *S) const {
    const Stmt *Top = topOf(Body, S);
    for (size_t I = 0; Top && I < Body->size(); ++I)
      if (Body->body_begin()[I] == Top)
        return I;
    return std::nullopt;
  }

  /// Whether S lies within Ancestor (through declarations too: `int *p = &v;` lies within its
  /// declaration statement).
  bool within(const Stmt *S, const Stmt *Ancestor) const {
    if (!S || !Ancestor)
      return false;
    DynTypedNode N = DynTypedNode::create(*S);
    for (unsigned I = 0; I < 64; ++I) {
      if (N.get<Stmt>() == Ancestor)
        return true;
      DynTypedNodeList P = Ctx.getParents(N);
      if (P.empty())
        return false;
      N = P[0];
    }
    return false;
  }
  /// Whether every write of V (Uses) lies within Outer, within one of Between, or after Outer.
  bool accounted(const std::vector<const DeclRefExpr *> &Uses, const ForStmt *Outer,
                 const std::vector<const Stmt *> &Between) const {
    return llvm::all_of(Uses, [&](const DeclRefExpr *DR) {
      return within(DR, Outer) || llvm::any_of(Between, [&](const Stmt *S) { return within(DR, S); }) ||
             SM.isBeforeInTranslationUnit(Outer->getEndLoc(), DR->getBeginLoc());
    });
  }

  Place place(SourceLocation L) const { return placeOf(SM, MainName, L); }

  /// The copy moves one element, and the read names the same element in every subscript but the
  /// stage's.
  bool ownElement(const ThreadCopy &TC, const StageRef &Dst, const StageRef &Use) const {
    std::optional<uint64_t> Bytes = TC.Bytes;
    if (const Expr *Size = TC.Size ? TC.Size->IgnoreImplicit() : nullptr) {
      if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(Size))
        Size = FC->getSubExpr()->IgnoreImplicit();
      if (const auto *CC = dyn_cast<CXXConstructExpr>(Size); CC && CC->getNumArgs() == 1)
        Size = CC->getArg(0)->IgnoreImplicit();
      Expr::EvalResult R;
      if (!Size->isValueDependent() && Size->EvaluateAsInt(R, Ctx))
        Bytes = R.Val.getInt().getZExtValue();
    }
    if (!Bytes || !Use.Outer || !Dst.Outer ||
        *Bytes != uint64_t(Ctx.getTypeSizeInChars(Use.Outer->getType()).getQuantity()))
      return false;
    auto Indices = [](const ArraySubscriptExpr *E) {
      std::vector<const Expr *> Out;
      for (const Expr *Cur = E; const auto *ASE = dyn_cast<ArraySubscriptExpr>(Cur->IgnoreParenImpCasts());
           Cur = ASE->getBase())
        Out.push_back(ASE->getIdx());
      Out.pop_back(); // the stage's
      return Out;
    };
    std::vector<const Expr *> A = Indices(Dst.Outer), B = Indices(Use.Outer);
    if (A.size() != B.size() || A.empty())
      return false;
    for (size_t I = 0; I < A.size(); ++I)
      if (!sameProfile(Ctx, A[I], B[I]))
        return false;
    return true;
  }

  std::optional<tooling::Replacement> barrierAfter(const CompoundStmt *Body, const Stmt *S) const;

  ASTContext &Ctx;
  const SourceManager &SM;
  StringRef MainName;
  Writes W;
  std::map<const VarDecl *, Induction> Inds;
  std::map<const VarDecl *, RotatingCounter> Counters;
  const CompoundStmt *CurBody = nullptr; ///< the body of the loop being read

  std::optional<std::pair<int64_t, std::optional<size_t>>> stepIn(const ForStmt *F, const VarDecl *V) const;
  std::optional<int64_t> constantTrips(const ForStmt *F) const;
  std::optional<std::vector<const Stmt *>> between(const VarDecl *V, const ForStmt *Outer) const;
  void carriedInductions(const ForStmt *Outer, const CompoundStmt *Body);
  std::optional<int64_t> groupsBefore(const ForStmt *Outer, const VarDecl *P) const;
  bool nothingWaitsBefore(const ForStmt *Outer) const;
};

/// Every use of a stage buffer in S other than as a copy's destination, with its subscript chain.
class BufferUses : public RecursiveASTVisitor<BufferUses> {
public:
  BufferUses(ASTContext &Ctx, const std::set<const Expr *> &CopyDsts) : Ctx(Ctx), CopyDsts(CopyDsts) {}
  bool shouldVisitLambdaBody() const { return true; }
  bool TraverseCallExpr(CallExpr *CE) {
    if (threadCopy(CE, Ctx.getSourceManager())) {
      // The copy's own source and size are reads of global memory, not of the buffer.
      for (Expr *A : CE->arguments())
        if (!CopyDsts.count(A) && !CopyDsts.count(A->IgnoreParenImpCasts()))
          TraverseStmt(A);
      return true;
    }
    // A shared address made for inline assembly reads nothing.
    if (const FunctionDecl *F = CE->getDirectCallee();
        F && F->getIdentifier() && F->getName() == "__cvta_generic_to_shared")
      return true;
    return RecursiveASTVisitor::TraverseCallExpr(CE);
  }
  bool TraverseArraySubscriptExpr(ArraySubscriptExpr *E) {
    StageRef R = stageRef(Ctx, E);
    if (R.Array) {
      Uses.push_back(R);
      // The subscripts may read other buffers.
      for (const Expr *Cur = E; const auto *ASE = dyn_cast<ArraySubscriptExpr>(Cur->IgnoreParenImpCasts());
           Cur = ASE->getBase())
        TraverseStmt(const_cast<Expr *>(ASE->getIdx()));
      return true;
    }
    return RecursiveASTVisitor::TraverseArraySubscriptExpr(E);
  }
  std::vector<StageRef> Uses;

private:
  ASTContext &Ctx;
  const std::set<const Expr *> &CopyDsts;
};

/// The copies of a loop body and of its nested statements.
class CopyFinder : public RecursiveASTVisitor<CopyFinder> {
public:
  explicit CopyFinder(const SourceManager &SM) : SM(SM) {}
  bool shouldVisitLambdaBody() const { return false; }
  bool VisitCallExpr(CallExpr *CE) {
    if (auto C = threadCopy(CE, SM))
      Copies.push_back(*C);
    return true;
  }
  bool VisitGCCAsmStmt(GCCAsmStmt *A) {
    if (auto C = threadCopy(A, SM))
      Copies.push_back(*C);
    return true;
  }
  std::vector<ThreadCopy> Copies;

private:
  const SourceManager &SM;
};


std::string tileText(int64_t Off) {
  return Off == 0 ? std::string("t") : Off > 0 ? "t + " + std::to_string(Off) : "t - " + std::to_string(-Off);
}

std::string bufferText(int64_t Off, uint64_t N) {
  return (Off == 0 ? "t" : "(" + tileText(Off) + ")") + " % " + std::to_string(N);
}

/// What a copy of tile t + CopyTile into N buffers does to the read of tile t + ReadTile.
std::string overrunDetail(StringRef Array, uint64_t N, int64_t CopyTile, int64_t ReadTile, unsigned ReadLine) {
  int64_t D = CopyTile - ReadTile, K = int64_t(N) - D;
  std::string Out = "in iteration t this copy fills buffer " + bufferText(CopyTile, N) + " of '" + Array.str() +
                    "' (" + std::to_string(N) + " buffers) with tile " + tileText(CopyTile) + ", " +
                    std::to_string(D) + " tiles ahead of tile " + tileText(ReadTile) + ", which line " +
                    std::to_string(ReadLine) + " reads";
  std::string Held = tileText(CopyTile - int64_t(N));
  if (K <= 0)
    return Out + "; that buffer holds tile " + Held +
           (K == 0 ? ", which this iteration reads: the copy may land before or during the read"
                   : ", which a later iteration reads: its copy is overwritten before it is read") +
           ", in this thread too. At most " + std::to_string(N - 1) + " tiles ahead fit the buffers: lower the distance";
  return Out + "; that buffer held tile " + Held + ", which the threads read " +
         (K == 1 ? std::string("in the previous iteration") : std::to_string(K) + " iterations earlier") +
         ", and no block barrier lies between that read and this copy: a thread that runs ahead refills the buffer "
         "while a slower one still reads it (a pipeline of thread scope orders only the thread's own copies). With " +
         std::to_string(N) + " buffers a copy may run " + std::to_string(N - 2) +
         " tiles ahead where a block barrier is in the loop, or " + std::to_string(N - 1) +
         " where one separates the read from the next copy: add __syncthreads() after the read, or lower the distance";
}

/// Whether S holds a jump out of the loop body it is in (return, goto, or a break or continue
/// that is not a nested loop's or switch's own).
bool leavesBody(const Stmt *S, bool Nested = false) {
  if (!S)
    return false;
  if (isa<ReturnStmt>(S) || isa<GotoStmt>(S) || isa<CXXThrowExpr>(S))
    return true;
  if (!Nested && (isa<BreakStmt>(S) || isa<ContinueStmt>(S)))
    return true;
  bool Inner = Nested || isa<ForStmt>(S) || isa<WhileStmt>(S) || isa<DoStmt>(S) || isa<SwitchStmt>(S) ||
               isa<CXXForRangeStmt>(S);
  for (const Stmt *C : S->children())
    if (leavesBody(C, Inner))
      return true;
  return false;
}

std::optional<tooling::Replacement> Checker::barrierAfter(const CompoundStmt *Body, const Stmt *S) const {
  SourceLocation End = S->getEndLoc();
  if (End.isMacroID() || S->getBeginLoc().isMacroID() || leavesBody(Body))
    return std::nullopt;
  const LangOptions &LO = Ctx.getLangOpts();
  SourceLocation After = Lexer::findLocationAfterToken(End, tok::semi, SM, LO, /*SkipTrailingWhitespaceAndNewLine=*/false);
  if (After.isInvalid())
    After = Lexer::getLocForEndOfToken(End, 0, SM, LO);
  if (After.isInvalid() || !inUserFile(SM, After))
    return std::nullopt;
  // After the statement's line where only a line comment follows it on that line.
  bool Invalid = false;
  StringRef Buf = SM.getBufferData(SM.getFileID(After), &Invalid);
  if (Invalid)
    return std::nullopt;
  unsigned Off = SM.getFileOffset(After);
  StringRef Rest = Buf.substr(Off, Buf.find('\n', Off) - Off);
  if (Rest.trim().empty() || Rest.ltrim().starts_with("//"))
    Off += Rest.size();
  // The indentation of the statement's line.
  unsigned Begin = SM.getFileOffset(SM.getExpansionLoc(S->getBeginLoc()));
  size_t LineStart = Buf.rfind('\n', Begin);
  LineStart = LineStart == StringRef::npos ? 0 : LineStart + 1;
  StringRef Indent = Buf.slice(LineStart, Begin);
  if (!Indent.trim().empty())
    return std::nullopt;
  return tooling::Replacement(SM, SM.getComposedLoc(SM.getFileID(After), Off), 0,
                              "\n" + Indent.str() + "__syncthreads();");
}

/// The modulus of a stage counter's step, where S (or the loop's increment) is one of
/// `c = (c + 1) % M`, `c = (c + 1) & (M - 1)`, `c = c + 1 == M ? 0 : c + 1`, `if (++c == M) c = 0`.
static std::optional<uint64_t> rotation(const Stmt *S, const VarDecl *V, const ASTContext &Ctx) {
  auto Is = [&](const Expr *E) {
    const auto *DR = dyn_cast_or_null<DeclRefExpr>(E ? E->IgnoreParenImpCasts() : nullptr);
    return DR && DR->getDecl() == V;
  };
  auto Const = [&](const Expr *E) -> std::optional<int64_t> {
    Expr::EvalResult R;
    if (!E || E->isValueDependent() || !E->EvaluateAsInt(R, Ctx) || !R.Val.getInt().isRepresentableByInt64())
      return std::nullopt;
    return R.Val.getInt().getExtValue();
  };
  auto PlusOne = [&](const Expr *E) {
    const auto *B = dyn_cast_or_null<BinaryOperator>(E ? E->IgnoreParenImpCasts() : nullptr);
    return B && B->getOpcode() == BO_Add &&
           ((Is(B->getLHS()) && Const(B->getRHS()) == 1) || (Is(B->getRHS()) && Const(B->getLHS()) == 1));
  };
  auto Ok = [](std::optional<int64_t> M) -> std::optional<uint64_t> {
    return M && *M >= 2 ? std::optional<uint64_t>(uint64_t(*M)) : std::nullopt;
  };
  if (const auto *If = dyn_cast<IfStmt>(S)) {
    // if (++c == M) c = 0;
    const auto *C = dyn_cast<BinaryOperator>(If->getCond()->IgnoreParenImpCasts());
    const auto *Inc = C && C->getOpcode() == BO_EQ ? dyn_cast<UnaryOperator>(C->getLHS()->IgnoreParenImpCasts()) : nullptr;
    const auto *Then = dyn_cast_or_null<BinaryOperator>(If->getThen() ? bareExpr(If->getThen()) : nullptr);
    if (!Inc || Inc->getOpcode() != UO_PreInc || !Is(Inc->getSubExpr()) || If->getElse() || !Then ||
        Then->getOpcode() != BO_Assign || !Is(Then->getLHS()) || Const(Then->getRHS()) != 0)
      return std::nullopt;
    return Ok(Const(C->getRHS()));
  }
  const auto *A = dyn_cast_or_null<BinaryOperator>(bareExpr(S));
  if (!A || A->getOpcode() != BO_Assign || !Is(A->getLHS()))
    return std::nullopt;
  const Expr *R = A->getRHS()->IgnoreParenImpCasts();
  if (const auto *B = dyn_cast<BinaryOperator>(R); B && PlusOne(B->getLHS())) {
    if (B->getOpcode() == BO_Rem)
      return Ok(Const(B->getRHS()));
    if (B->getOpcode() == BO_And)
      if (std::optional<int64_t> Mask = Const(B->getRHS()); Mask && *Mask >= 1 && ((*Mask + 1) & *Mask) == 0)
        return Ok(*Mask + 1);
    return std::nullopt;
  }
  // c = c + 1 == M ? 0 : c + 1
  const auto *CO = dyn_cast<ConditionalOperator>(R);
  const auto *Cmp = CO ? dyn_cast<BinaryOperator>(CO->getCond()->IgnoreParenImpCasts()) : nullptr;
  if (!Cmp || Cmp->getOpcode() != BO_EQ || !PlusOne(Cmp->getLHS()) || Const(CO->getTrueExpr()) != 0 ||
      !PlusOne(CO->getFalseExpr()))
    return std::nullopt;
  return Ok(Const(Cmp->getRHS()));
}

/// The one write of V in loop F, where it is a step by a constant: in F's increment (no place), or
/// a statement of F's body of its own (its place). Nothing where V is written otherwise in F.
std::optional<std::pair<int64_t, std::optional<size_t>>> Checker::stepIn(const ForStmt *F, const VarDecl *V) const {
  auto It = W.Of.find(V);
  if (It == W.Of.end())
    return std::nullopt;
  const DeclRefExpr *One = nullptr;
  for (const DeclRefExpr *DR : It->second)
    if (within(DR, F)) {
      if (One)
        return std::nullopt;
      One = DR;
    }
  if (!One)
    return std::nullopt;
  auto Is = [&](const Expr *E) {
    auto S = E ? stepOf(E) : std::nullopt;
    return S && std::get<2>(*S) == One && std::get<1>(*S) ? std::get<1>(*S) : std::nullopt;
  };
  if (F->getInc() && within(One, F->getInc())) {
    for (const Expr *Part : commaList(F->getInc()))
      if (auto Step = Is(Part))
        return std::make_pair(*Step, std::optional<size_t>());
    return std::nullopt;
  }
  const auto *Body = dyn_cast_or_null<CompoundStmt>(F->getBody());
  std::optional<size_t> At = Body ? indexIn(Body, One) : std::nullopt;
  if (auto Step = At ? Is(bareExpr(Body->body_begin()[*At])) : std::nullopt)
    return std::make_pair(*Step, At);
  return std::nullopt;
}

/// How many times a loop that runs before the one read (a prologue) runs its body, where that is
/// a constant: its init declares one counter, stepped by a positive constant in the increment
/// alone and compared with a constant, and no jump leaves its body.
std::optional<int64_t> Checker::constantTrips(const ForStmt *F) const {
  const auto *DS = dyn_cast_or_null<DeclStmt>(F->getInit());
  const auto *I = DS && DS->isSingleDecl() ? dyn_cast<VarDecl>(DS->getSingleDecl()) : nullptr;
  const auto *C = F->getCond() ? dyn_cast<BinaryOperator>(F->getCond()->IgnoreParenImpCasts()) : nullptr;
  if (!I || !I->getInit() || !I->getType()->isIntegerType() || !C || leavesBody(F->getBody()))
    return std::nullopt;
  auto Step = stepIn(F, I);
  std::optional<Lin> Start = value(I->getInit());
  if (!Step || Step->second || Step->first <= 0 || !Start || !Start->Terms.empty())
    return std::nullopt;
  auto IsI = [&](const Expr *E) {
    const auto *DR = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
    return DR && DR->getDecl() == I;
  };
  BinaryOperatorKind Op = C->getOpcode();
  const Expr *Bound = C->getRHS();
  if (!IsI(C->getLHS())) {
    if (!IsI(C->getRHS()))
      return std::nullopt;
    Bound = C->getLHS(); // `n > i` as `i < n`
    Op = Op == BO_GT ? BO_LT : Op == BO_GE ? BO_LE : Op == BO_NE ? BO_NE : BO_Comma;
  }
  std::optional<Lin> B = value(Bound);
  if (!B || !B->Terms.empty())
    return std::nullopt;
  int64_t Span = B->C - Start->C, S = Step->first;
  switch (Op) {
  case BO_LT:
    return Span <= 0 ? 0 : (Span + S - 1) / S;
  case BO_LE:
    return Span < 0 ? 0 : Span / S + 1;
  case BO_NE:
    return Span >= 0 && Span % S == 0 ? std::optional<int64_t>(Span / S) : std::nullopt;
  default:
    return std::nullopt;
  }
}

/// The statements between V's declaration and Outer, where that declaration is a statement of the
/// block that holds Outer, before it (so V starts from its initializer each time the block runs to
/// the loop); nothing otherwise.
std::optional<std::vector<const Stmt *>> Checker::between(const VarDecl *V, const ForStmt *Outer) const {
  DynTypedNodeList DP = Ctx.getParents(*V), OP = Ctx.getParents(*Outer);
  const Stmt *Decl = DP.empty() ? nullptr : DP[0].get<DeclStmt>();
  const auto *Block = OP.empty() ? nullptr : OP[0].get<CompoundStmt>();
  if (!Block || !Decl)
    return std::nullopt;
  std::vector<const Stmt *> Between;
  bool In = false;
  for (const Stmt *S : Block->body()) {
    if (S == Outer)
      return In ? std::optional<std::vector<const Stmt *>>(std::move(Between)) : std::nullopt;
    if (In)
      Between.push_back(S);
    In |= S == Decl;
  }
  return std::nullopt;
}

/// Whether a statement of Body before its At-th may jump out of the body (a continue or goto
/// there skips what stands at At).
static bool jumpBefore(const CompoundStmt *Body, size_t At) {
  return llvm::any_of(llvm::make_range(Body->body_begin(), Body->body_begin() + At),
                      [](const Stmt *S) { return leavesBody(S); });
}

/// Inductions carried in (scalar evolution's recurrences, across loops): a local declared before
/// the loop in the block that holds it, stepped by a constant once an iteration, and before the
/// loop only by loops between its declaration and this one that run a constant number of times
/// and step it once an iteration (`int tf = 0; for (s = 0; s < S - 1; ++s, ++tf) ...; for (t = 0;
/// t < n; ++t) { copy(tf % S); ++tf; ... }`): its value in iteration t is its initializer plus
/// those loops' steps plus t steps (one more after its step in the body).
void Checker::carriedInductions(const ForStmt *Outer, const CompoundStmt *Body) {
  for (const auto &[V, Uses] : W.Of) {
    if (Inds.count(V) || !V->getType()->isIntegerType() || V->getType()->isReferenceType() ||
        V->getType().isVolatileQualified() || !V->hasLocalStorage() || isa<ParmVarDecl>(V) || !V->getInit())
      continue;
    auto Between = between(V, Outer);
    if (!Between || !accounted(Uses, Outer, *Between))
      continue;
    auto Here = stepIn(Outer, V);
    std::optional<Lin> Start = value(V->getInit());
    if (!Here || !Start || (Here->second && jumpBefore(Body, *Here->second)))
      continue;
    bool Read = true;
    for (const Stmt *S : *Between) {
      if (!llvm::any_of(Uses, [&](const DeclRefExpr *DR) { return within(DR, S); }))
        continue;
      const auto *F = dyn_cast<ForStmt>(S);
      auto Step = F ? stepIn(F, V) : std::nullopt;
      std::optional<int64_t> Trips = F ? constantTrips(F) : std::nullopt;
      int64_t By;
      if (!Step || !Trips || llvm::MulOverflow(*Trips, Step->first, By)) {
        Read = false;
        break;
      }
      Start->add(Lin::constant(By));
    }
    if (Read && !Start->Overflow)
      Inds[V] = Induction{*Start, Here->first, &OuterKey, true, Here->second};
  }
}

/// The copy groups P holds in flight (committed, not yet waited for by a consumer_wait) when the
/// loop begins: P is declared in the block that holds the loop, and between them only statements
/// of their own commit on it, and loops that run a constant number of times and commit on it
/// once an iteration, in a statement of their body's own; none waits on it or moves its head or
/// tail otherwise.
std::optional<int64_t> Checker::groupsBefore(const ForStmt *Outer, const VarDecl *P) const {
  auto Between = between(P, Outer);
  if (!Between)
    return std::nullopt;
  int64_t Groups = 0;
  for (const Stmt *S : *Between) {
    PipelineOps Ops = pipelineOps(S, P, SM);
    if (Ops.Other || !Ops.Waits.empty())
      return std::nullopt;
    if (Ops.Commits.empty())
      continue;
    if (Ops.Commits.size() == 1 && bareExpr(S) == Ops.Commits.front()) {
      ++Groups;
      continue;
    }
    const auto *F = dyn_cast<ForStmt>(S);
    const auto *FB = F ? dyn_cast<CompoundStmt>(F->getBody()) : nullptr;
    std::optional<int64_t> Trips = F ? constantTrips(F) : std::nullopt;
    if (!Trips || !FB || Ops.Commits.size() != 1 ||
        !llvm::any_of(FB->body(), [&](const Stmt *B) { return bareExpr(B) == Ops.Commits.front(); }))
      return std::nullopt;
    Groups += *Trips;
  }
  return Groups;
}

/// Whether the loop stands in its function's body, and the statements before it commit copy
/// groups and wait for none: nothing there waits (a wait_prior, a consumer_wait, anything else
/// that may wait: a barrier's wait, a function of the user's, asm), so the first iteration finds
/// every group committed before the loop in flight.
bool Checker::nothingWaitsBefore(const ForStmt *Outer) const {
  DynTypedNodeList P = Ctx.getParents(*Outer);
  const auto *Block = P.empty() ? nullptr : P[0].get<CompoundStmt>();
  DynTypedNodeList PP = Block ? Ctx.getParents(*Block) : DynTypedNodeList(DynTypedNode());
  if (!Block || PP.empty() || !PP[0].get<FunctionDecl>())
    return false;
  std::function<bool(const Stmt *)> Waits = [&](const Stmt *S) {
    if (!S)
      return false;
    if (waitPrior(S, Ctx) || consumerWaitOn(S) || mayWaitOtherwise(S, Ctx))
      return true;
    return llvm::any_of(S->children(), Waits);
  };
  std::function<bool(const Stmt *)> Commits = [&](const Stmt *S) {
    return S && (isCommit(S, SM) || llvm::any_of(S->children(), Commits));
  };
  bool Committed = false;
  for (const Stmt *S : Block->body()) {
    if (S == Outer)
      return Committed;
    if (Waits(S))
      return false;
    Committed |= Commits(S);
  }
  return false;
}

/// The loop's inductions, counted by its iterations, and the variables its init declares that an
/// inner producer loop (a statement of Body, without an init) steps, counted by that loop's
/// iterations; with a producer loop, how far its counter runs past the loop's (AheadOfOuter).
/// False where the loop's steps cannot be read so.
bool Checker::schedule(const ForStmt *Outer, const CompoundStmt *Body, const ForStmt *&Producer,
                       std::optional<int64_t> &AheadOfOuter) {
  // The loop's inductions, counted by its iterations; the variables its init declares that an
  // inner producer loop steps, counted by that loop's iterations.
  Inds.clear();
  std::map<const VarDecl *, const Expr *> Declared;
  if (const auto *DS = dyn_cast_or_null<DeclStmt>(Outer->getInit()))
    for (const Decl *D : DS->decls())
      if (const auto *V = dyn_cast<VarDecl>(D); V && V->getInit())
        Declared[V] = V->getInit();
  auto Steps = stepsOf(Outer);
  if (!Steps)
    return false;
  auto Bind = [&](const std::map<const VarDecl *, std::optional<int64_t>> &S, const void *Counter) {
    for (const auto &[V, Step] : S) {
      auto It = Declared.find(V);
      if (It == Declared.end())
        return false;
      Inds[V] = Induction{Lin(), Step, Counter};
    }
    return true;
  };
  if (!Bind(*Steps, &OuterKey))
    return false;
  for (const Stmt *S : Body->body())
    if (const auto *F = dyn_cast<ForStmt>(S); F && !F->getInit() && F->getCond()) {
      auto InnerSteps = stepsOf(F);
      if (!InnerSteps || Producer || !Bind(*InnerSteps, &InnerKey))
        return false;
      Producer = F;
    }
  // Starts: each from its initializer, read before any step (another induction in it is not read).
  std::map<const VarDecl *, Induction> All = std::move(Inds);
  Inds.clear();
  for (auto &[V, I] : All)
    if (I.Step) {
      std::optional<Lin> S = value(Declared[V]);
      if (!S)
        I.Step.reset();
      else
        I.Start = *S;
    }
  Inds = std::move(All);
  // The producer loop's bound on its counter: the condition holds in its body.
  if (Producer) {
    const auto *C = dyn_cast<BinaryOperator>(Producer->getCond()->IgnoreParenImpCasts());
    if (!C || !C->isRelationalOp())
      return false;
    std::optional<Lin> L = value(C->getLHS()), R = value(C->getRHS());
    if (!L || !R)
      return false;
    Lin D = *L; // D <= 0 in the body, after the slack and the direction
    D.add(*R, -1);
    switch (C->getOpcode()) {
    case BO_LT: D.C += 1; break;
    case BO_LE: break;
    case BO_GT: D = Lin().add(D, -1); D.C += 1; break;
    case BO_GE: D = Lin().add(D, -1); break;
    default: return false;
    }
    int64_t A = D.coef(&InnerKey), B = D.coef(&OuterKey);
    if (!D.countersOnly() || A <= 0 || B % A != 0 || -B / A != 1)
      return false;
    AheadOfOuter = floorDiv(-D.C, A);
  }
  carriedInductions(Outer, Body);
  // Stage counters of their own: every write in one statement of the body (or the loop's
  // increment) that steps them once modulo M, a constant start, read nowhere else as written to.
  Counters.clear();
  for (const auto &[V, Uses] : W.Of) {
    if (Inds.count(V) || !V->getType()->isIntegerType() || V->getType()->isReferenceType() || !V->getInit())
      continue;
    // Declared before the loop in the block that holds it: its start is its initializer's each
    // time that block runs to the loop (a loop around both declares it again), plus the steps of
    // the loops between that rotate it the same way a constant number of times (a prologue).
    auto Between = between(V, Outer);
    if (!Between || !accounted(Uses, Outer, *Between))
      continue;
    std::optional<size_t> At;
    bool InInc = false, Mixed = false;
    for (const DeclRefExpr *DR : Uses) {
      if (!within(DR, Outer))
        continue; // before the loop: read below; after it: of no concern to the loop
      std::optional<size_t> Here = indexIn(Body, DR);
      bool Inc = Outer->getInc() && within(DR, Outer->getInc());
      if ((!Here && !Inc) || (Here && At && *Here != *At) || (Inc && At) || (Here && InInc))
        Mixed = true;
      if (Here)
        At = Here;
      InInc |= Inc;
    }
    if (Mixed || (!At && !InInc) || (At && jumpBefore(Body, *At)))
      continue;
    std::optional<Lin> Start = value(V->getInit());
    std::optional<uint64_t> Mod = At ? rotation(Body->body_begin()[*At], V, Ctx) : std::nullopt;
    if (InInc)
      for (const Expr *Part : commaList(Outer->getInc()))
        if (!Mod)
          Mod = rotation(Part, V, Ctx);
    if (!Start || !Start->Terms.empty() || !Mod)
      continue;
    for (const Stmt *S : *Between) {
      std::optional<size_t> In;
      const auto *F = dyn_cast<ForStmt>(S);
      const auto *FB = F ? dyn_cast<CompoundStmt>(F->getBody()) : nullptr;
      for (const DeclRefExpr *DR : Uses)
        if (within(DR, S)) {
          std::optional<size_t> Here = FB ? indexIn(FB, DR) : std::nullopt;
          if (!Here || (In && *In != *Here))
            Mixed = true;
          In = Here;
        }
      if (!In && !Mixed)
        continue;
      std::optional<int64_t> Trips = Mixed ? std::nullopt : constantTrips(F);
      if (!Trips || rotation(FB->body_begin()[*In], V, Ctx) != Mod) {
        Mixed = true;
        break;
      }
      Start->C += *Trips; // far from overflow: both below 2^40 and 2^63 apart
    }
    if (Mixed || Start->C > (int64_t(1) << 40))
      continue;
    Counters[V] = RotatingCounter{Start->C, *Mod, At};
  }
  return true;
}

/// The copies and their one commit under a condition on the loop's tile (`if (t + 3 < n) { copy;
/// commit; }`): in an iteration where it does not hold, the loop's last ones, no group is committed,
/// and a wait that leaves K >= 1 groups in flight no longer covers the tile read. The fix-it moves
/// the commit after the condition (an empty group is committed, as CUDA's guide advises).
void Checker::commitUnderCondition(const CompoundStmt *Body, const std::vector<Scheduled> &Sched,
                                   const std::vector<std::pair<size_t, WaitPrior>> &Waits,
                                   std::vector<AuditFinding> &Out) {
  const auto *If = dyn_cast<IfStmt>(Body->body_begin()[Sched.front().Pos]);
  if (!If || If->getElse() || If->getConditionVariable() || If->getInit())
    return;
  std::function<bool(const Stmt *)> OnTile = [&](const Stmt *S) {
    if (const auto *DR = dyn_cast_or_null<DeclRefExpr>(S))
      if (const auto *V = dyn_cast<VarDecl>(DR->getDecl()))
        if (auto It = Inds.find(V); It != Inds.end() && It->second.Counter == &OuterKey)
          return true;
    return S && llvm::any_of(S->children(), OnTile);
  };
  const auto *Then = dyn_cast<CompoundStmt>(If->getThen());
  llvm::SmallVector<const Stmt *, 4> Commits;
  if (Then) {
    for (const Stmt *S : Then->body())
      if (isCommit(S, SM))
        Commits.push_back(S);
  } else if (isCommit(If->getThen(), SM)) {
    Commits.push_back(If->getThen());
  }
  auto Covering = llvm::find_if(Waits, [](const auto &W) { return W.second.K >= 1; });
  if (Commits.size() != 1 || !OnTile(If->getCond()) || Covering == Waits.end())
    return;
  const Stmt *Commit = Commits.front();
  AuditFinding F;
  F.Code = Reason::AsyncReadBeforeWait;
  F.At = place(Commit->getBeginLoc());
  const Stmt *K = Covering->second.At;
  F.Detail = "this commit runs only where '" + sourceText(Ctx, SM.getExpansionRange(If->getCond()->getSourceRange()).getAsRange()) +
             "' holds; in an iteration where it does not (the loop's last ones), no group is committed, so the wait at line " +
             std::to_string(SM.getExpansionLineNumber(K->getBeginLoc())) + ", which leaves the newest " +
             std::to_string(Covering->second.K) +
             " groups in flight, no longer covers the tile the iteration reads: commit every iteration, an empty "
             "group where there is nothing to copy";
  F.Notes.push_back({place(K->getBeginLoc()), "the wait leaves " + std::to_string(Covering->second.K) + " groups in flight"});
  // Moved after the if: the commit's text, from its line where it stands alone on it.
  SourceLocation B = Commit->getBeginLoc(), E = Commit->getEndLoc(), IfEnd = If->getEndLoc();
  const LangOptions &LO = Ctx.getLangOpts();
  SourceLocation Semi = E.isMacroID() ? SourceLocation() : Lexer::findLocationAfterToken(E, tok::semi, SM, LO, false);
  if (Then && !B.isMacroID() && Semi.isValid() && !IfEnd.isMacroID() && !If->getBeginLoc().isMacroID() &&
      inUserFile(SM, B)) {
    bool Invalid = false;
    StringRef Buf = SM.getBufferData(SM.getFileID(B), &Invalid);
    unsigned Begin = SM.getFileOffset(B), End = SM.getFileOffset(Semi);
    size_t LineStart = Buf.rfind('\n', Begin) + 1, LineEnd = Buf.find('\n', End);
    size_t IfBegin = SM.getFileOffset(If->getBeginLoc()), IfLine = Buf.rfind('\n', IfBegin) + 1;
    StringRef Text = Buf.slice(Begin, End), Indent = Buf.slice(IfLine, IfBegin);
    if (!Invalid && LineEnd != StringRef::npos && Indent.trim().empty()) {
      bool Alone = Buf.slice(LineStart, Begin).trim().empty() && Buf.slice(End, LineEnd).trim().empty();
      // The line break before it goes with it, so that no whitespace of the next line is touched.
      unsigned DelBegin = Alone && LineStart > 0 ? LineStart - 1 : Begin, DelEnd = Alone ? LineEnd : End;
      SourceLocation After = Lexer::getLocForEndOfToken(IfEnd, 0, SM, LO);
      FileID FID = SM.getFileID(B);
      if (After.isValid() && SM.getFileID(After) == FID) {
        F.Fixes.push_back(tooling::Replacement(SM, SM.getComposedLoc(FID, DelBegin), DelEnd - DelBegin, ""));
        F.Fixes.push_back(tooling::Replacement(SM, After, 0, "\n" + Indent.str() + Text.str()));
      }
    }
  }
  Out.push_back(std::move(F));
}

/// A read of a tile whose copy group the last wait before it may leave in flight. The model: one
/// commit per iteration, after the iteration's copies, which all fill one tile (t + Tile); or one
/// commit per tile in the producer loop. At a wait for all but the newest K groups, the newest
/// group holds tile t + Newest, so the group of tile t + r is complete only where
/// Newest - r >= K. Loops that wait in any other way as well are not read.
void Checker::readBeforeWait(const ForStmt *Outer, const CompoundStmt *Body, const ForStmt *Producer,
                             const std::vector<Scheduled> &Sched,
                             const std::vector<ScheduledRead> &Reads, std::vector<AuditFinding> &Out) {
  if (Sched.empty() || Reads.empty())
    return;
  int64_t Tile = Sched.front().Tile;
  if (!llvm::all_of(Sched, [&](const Scheduled &S) { return S.Tile == Tile; }))
    return;
  // Where the newest group is committed: the body's one commit, after every copy; or the
  // producer loop, whose body commits once, where every copy is.
  std::vector<size_t> Commits;
  std::vector<std::pair<size_t, WaitPrior>> Waits;
  std::vector<std::pair<size_t, const VarDecl *>> Consumer; // consumer_wait: its place, its pipeline
  for (size_t I = 0; I < Body->size(); ++I) {
    const Stmt *S = Body->body_begin()[I];
    if (isCommit(S, SM))
      Commits.push_back(I);
    else if (auto W = waitPrior(S, Ctx))
      Waits.push_back({I, *W});
    else if (const VarDecl *P = consumerWaitOn(S))
      Consumer.push_back({I, P});
    else if (S != Producer && mayWaitOtherwise(S, Ctx))
      return;
  }
  size_t CommitPos;
  if (Producer && Sched.front().Pos == llvm::find(Body->body(), Producer) - Body->body_begin()) {
    const auto *PB = dyn_cast<CompoundStmt>(Producer->getBody());
    if (!Commits.empty() || !PB || llvm::count_if(PB->body(), [&](const Stmt *S) { return isCommit(S, SM); }) != 1 ||
        !llvm::all_of(Sched, [&](const Scheduled &S) { return S.Pos == Sched.front().Pos; }) ||
        llvm::any_of(PB->body(), [&](const Stmt *S) { return !isCommit(S, SM) && mayWaitOtherwise(S, Ctx); }))
      return;
    CommitPos = Sched.front().Pos;
  } else if (Commits.empty()) {
    if (!Waits.empty() && llvm::all_of(Sched, [&](const Scheduled &S) { return S.Pos == Sched.front().Pos; }))
      commitUnderCondition(Body, Sched, Waits, Out);
    return;
  } else {
    if (Commits.size() != 1 || !llvm::all_of(Sched, [&](const Scheduled &S) { return S.Pos < Commits.front(); }))
      return;
    CommitPos = Commits.front();
  }
  // consumer_wait on a pipeline of thread scope waits for its oldest group not yet waited for, and
  // moves on past it: it leaves the newest head - tail - 1 groups in flight (CCCL's, at most 8).
  // Read where the loop commits on it and waits on it once an iteration each, in statements of
  // their own, so that the count is the same in every iteration, and the groups in flight when
  // the loop begins are known (groupsBefore).
  std::optional<int64_t> GroupsBefore;
  if (!Consumer.empty()) {
    const VarDecl *P = Consumer.front().second;
    PipelineOps Ops = pipelineOps(Body, P, SM);
    GroupsBefore = groupsBefore(Outer, P);
    size_t WaitPos = Consumer.front().first;
    int64_t InFlight = GroupsBefore ? *GroupsBefore + (CommitPos < WaitPos ? 1 : 0) : 0;
    if (Consumer.size() != 1 || !Waits.empty() || Producer || Ops.Other || Ops.Commits.size() != 1 ||
        Ops.Waits.size() != 1 || Ops.Commits.front() != bareExpr(Body->body_begin()[CommitPos]) || InFlight < 1 ||
        InFlight > 255)
      return;
    Waits.push_back({WaitPos, WaitPrior{std::min<int64_t>(InFlight - 1, 8), Body->body_begin()[WaitPos], nullptr}});
  }
  if (Waits.empty())
    return;
  std::set<const VarDecl *> Reported;
  for (const ScheduledRead &R : Reads) {
    if (Reported.count(R.Use.Array) || !llvm::any_of(Sched, [&](const Scheduled &S) { return S.Dst.Array == R.Use.Array; }))
      continue;
    // The last wait before the read: in this iteration, or the body's last in the one before.
    auto Before = llvm::find_if(llvm::reverse(Waits), [&](const auto &W) { return W.first < R.Pos; });
    bool Previous = Before == Waits.rend();
    const auto &[WaitPos, Wait] = Previous ? Waits.back() : *Before;
    int64_t Newest = Tile - (CommitPos < WaitPos ? 0 : 1) - (Previous ? 1 : 0);
    int64_t Newer = Newest - R.Tile; // groups committed after the read tile's
    // Before the loop's one consumer_wait, the first iteration reads what nothing has waited for
    // (groupsBefore admits no wait before the loop); so it does before the body's first wait_prior
    // where nothing before the loop waits for the groups committed there.
    bool First = Previous && (GroupsBefore || nothingWaitsBefore(Outer));
    if (Wait.K <= Newer && !First)
      continue;
    AuditFinding F;
    F.Code = Reason::AsyncReadBeforeWait;
    F.At = place(R.Use.Outer->getBeginLoc());
    unsigned WaitLine = SM.getExpansionLineNumber(Wait.At->getBeginLoc());
    std::string Remedy = GroupsBefore ? " (cuda::pipeline_consumer_wait_prior<" + std::to_string(Newer) +
                                            ">), or commit " + std::to_string(Wait.K - Newer) +
                                            " group(s) fewer before the loop"
                                      : "";
    if (First && Wait.K <= Newer)
      F.Detail = "this reads tile " + tileText(R.Tile) + " of '" + R.Use.Array->getName().str() +
                 "' before the loop's wait (line " + std::to_string(WaitLine) +
                 "): in the first iteration nothing has waited for the groups committed before the loop, so the "
                 "copy of tile t may not have landed; wait before the read";
    else
      F.Detail = "this reads tile " + tileText(R.Tile) + " of '" + R.Use.Array->getName().str() +
                 "', but the wait at line " + std::to_string(WaitLine) + " leaves the newest " +
                 std::to_string(Wait.K) + " copy groups in flight" + (Previous ? " (in the iteration before)" : "") +
                 ", and the newest committed there holds tile " + tileText(Newest) +
                 (Newer >= 0 ? ", only " + std::to_string(Newer) +
                                   " after this one: its copy may not have landed; wait for all but " +
                                   std::to_string(Newer) + " groups" + Remedy
                             : ": this tile's copy is not even committed yet");
    F.Notes.push_back({place(Wait.At->getBeginLoc()),
                       GroupsBefore ? "consumer_wait waits for the oldest group not yet waited for: " +
                                          std::to_string(*GroupsBefore) +
                                          " groups are committed before the loop begins, and each iteration "
                                          "commits one and waits for one, so the newest " +
                                          std::to_string(Wait.K) + " stay in flight here"
                                    : "the wait leaves " + std::to_string(Wait.K) + " groups in flight"});
    F.Notes.push_back({place(Sched.front().TC.At->getBeginLoc()), "each group holds the copies of one tile, t + " +
                                                                         std::to_string(Tile) + " in iteration t"});
    // The count, where it is spelled in the file: the newest groups that may stay in flight.
    CharSourceRange KR = CharSourceRange::getTokenRange(Wait.Spelled ? Wait.Spelled->getSourceRange() : SourceRange());
    if (Newer >= 0 && Wait.Spelled && !KR.getBegin().isMacroID() && !KR.getEnd().isMacroID() && inUserFile(SM, KR.getBegin()) &&
        !Previous)
      F.Fixes.push_back(tooling::Replacement(SM, KR, std::to_string(Newer), Ctx.getLangOpts()));
    Out.push_back(std::move(F));
    Reported.insert(R.Use.Array);
  }
}

/// Copies that complete on a barrier per stage (`memcpy_async(block, s[(t + 1) % 2], ..., bar[(t + 1) % 2])`):
/// the read of tile r must come after an arrive_and_wait on the barrier of tile r that comes after
/// r's copy was issued. Read where every copy's barrier index selects the tile its buffer index
/// does, and every wait on those barriers is an arrive_and_wait at the top of the body whose tile
/// is known; anything else that may wait leaves the loop unread.
void Checker::barrierReadBeforeWait(const CompoundStmt *Body, const std::vector<Scheduled> &Sched,
                                    const std::vector<ScheduledRead> &Reads, std::vector<AuditFinding> &Out) {
  std::map<const VarDecl *, const VarDecl *> BarOf; // buffer array -> the barrier array its copies complete on
  std::map<const VarDecl *, const Scheduled *> Last; // buffer array -> its last copy in the body
  for (const Scheduled &S : Sched) {
    if (!S.TC.Barrier)
      continue;
    BarrierRef B = barrierRef(Ctx, S.TC.Barrier);
    std::optional<Lin> T = B.Array ? tileOf(B.Stage, B.Count, S.Pos) : std::nullopt;
    if (!T || S.Modular || !T->countersOnly() || T->coef(&OuterKey) != 1 || T->Terms.size() != 1 || T->C != S.Tile)
      return;
    auto [It, New] = BarOf.insert({S.Dst.Array, B.Array});
    const Scheduled *&L = Last[S.Dst.Array];
    if (It->second != B.Array || (L && L->Tile != S.Tile))
      return;
    if (!L || L->Pos < S.Pos)
      L = &S;
  }
  if (BarOf.empty())
    return;
  struct Wait {
    size_t Pos;
    int64_t Tile;
    const Stmt *At;
    const VarDecl *Bar;
  };
  std::vector<Wait> Waits;
  for (size_t I = 0; I < Body->size(); ++I) {
    const Stmt *St = Body->body_begin()[I];
    if (const Expr *BE = arriveAndWaitBarrier(St)) {
      BarrierRef B = barrierRef(Ctx, BE);
      if (!llvm::any_of(BarOf, [&](const auto &P) { return P.second == B.Array; }))
        continue;
      std::optional<Lin> T = tileOf(B.Stage, B.Count, I);
      if (!T || !T->countersOnly() || T->coef(&OuterKey) != 1 || T->Terms.size() != 1 ||
          llvm::any_of(Waits, [&](const Wait &W) { return W.Bar == B.Array && W.Tile == T->C; }))
        return;
      Waits.push_back({I, T->C, St, B.Array});
    } else if (mayWaitOtherwise(St, Ctx)) {
      return;
    }
  }
  std::set<const VarDecl *> Reported;
  for (const ScheduledRead &R : Reads) {
    auto B = BarOf.find(R.Use.Array);
    if (R.Modular || B == BarOf.end() || Reported.count(R.Use.Array))
      continue;
    const Scheduled &C = *Last[R.Use.Array];
    int64_t Issued = C.Tile - R.Tile; // the copy of the tile read was issued this many iterations before
    if (Issued < 0)
      continue;
    // A wait on the barrier of tile R.Tile, j iterations before, between the copy and the read.
    bool Covered = llvm::any_of(Waits, [&](const Wait &W) {
      int64_t J = W.Tile - R.Tile;
      return W.Bar == B->second && J >= 0 && (J < Issued || (J == Issued && W.Pos > C.Pos)) &&
             (J > 0 || W.Pos < R.Pos);
    });
    if (Covered)
      continue;
    std::string Others;
    for (const Wait &W : Waits)
      if (W.Bar == B->second)
        Others += (Others.empty() ? "" : ", ") + tileText(W.Tile);
    AuditFinding F;
    F.Code = Reason::AsyncReadBeforeWait;
    F.At = place(R.Use.Outer->getBeginLoc());
    F.Detail = "this reads tile " + tileText(R.Tile) + " of '" + R.Use.Array->getName().str() +
               "', whose copies complete on the barrier of their tile in '" + B->second->getName().str() +
               "', but no arrive_and_wait on the barrier of tile " + tileText(R.Tile) +
               " lies between its copy and this read" +
               (Others.empty() ? "" : " (the loop waits on the barriers of tile " + Others + ")") +
               ": a thread reads the buffer before its copy has landed; wait on the barrier the read tile's copy "
               "completes on";
    F.Notes.push_back({place(C.TC.At->getBeginLoc()), "the copy of tile t + " + std::to_string(C.Tile) +
                                                          " completes on the barrier of that tile"});
    for (const Wait &W : Waits)
      if (W.Bar == B->second)
        F.Notes.push_back({place(W.At->getBeginLoc()), "this waits on the barrier of tile " + tileText(W.Tile)});
    Out.push_back(std::move(F));
    Reported.insert(R.Use.Array);
  }
}

/// Each copy against each read of its buffer: a block barrier between the read of the tile a copy
/// replaces and the copy (see the file's comment).
void Checker::stageOverrun(const CompoundStmt *Body, const std::vector<Scheduled> &Sched,
                           const std::vector<ScheduledRead> &Reads, std::vector<AuditFinding> &Out) {
  std::vector<size_t> Barriers;
  for (size_t I = 0; I < Body->size(); ++I)
    if (isBlockBarrier(Body->body_begin()[I]) || isBlockArriveAndWait(Body->body_begin()[I]))
      Barriers.push_back(I);
  auto Any = [&](auto Where) { return llvm::any_of(Barriers, Where); };
  std::set<const VarDecl *> Reported;
  for (const Scheduled &S : Sched) {
    const StageRef &Dst = S.Dst;
    uint64_t N = Dst.Buffers;
    size_t P = S.Pos;
    if (Reported.count(Dst.Array))
      continue;
    for (const ScheduledRead &SR : Reads) {
      const StageRef &Use = SR.Use;
      size_t R = SR.Pos;
      if (Use.Array != Dst.Array || R == P)
        continue;
      int64_t D = S.Tile - SR.Tile; // the copy runs D tiles ahead of the read
      if (D < 0)
        continue;
      int64_t K = int64_t(N) - D; // the read of the tile the copy replaces, K iterations earlier
      bool Safe = K >= 2   ? !Barriers.empty()
                  : K == 1 ? Any([&](size_t B) { return B > R || B < P; })
                  : K == 0 ? R < P && Any([&](size_t B) { return R < B && B < P; })
                           : false;
      if (Safe)
        continue;
      // A thread that reads only the one element it copied itself needs no barrier, only its
      // own order: a read before the refill in program order, or an iteration or more before.
      if ((K >= 1 || (K == 0 && R < P)) && ownElement(S.TC, Dst, Use))
        continue;
      AuditFinding F;
      F.Code = Reason::AsyncStageOverrun;
      F.At = place(S.TC.At->getBeginLoc());
      F.Detail = overrunDetail(Dst.Array->getName(), N, S.Tile, SR.Tile,
                               SM.getExpansionLineNumber(Use.Outer->getBeginLoc()));
      F.Notes.push_back({place(Use.Outer->getBeginLoc()), "tile " + tileText(SR.Tile) + " is read from buffer " +
                                                              bufferText(SR.Tile, N) + " here"});
      if (K == 1 && !Barriers.empty())
        if (auto Fix = barrierAfter(Body, Body->body_begin()[R]))
          F.Fixes.push_back(*Fix);
      Out.push_back(std::move(F));
      Reported.insert(Dst.Array);
      break;
    }
  }
}

void Checker::loop(const ForStmt *Outer, std::vector<AuditFinding> &Out) {
  const auto *Body = dyn_cast_or_null<CompoundStmt>(Outer->getBody());
  if (!Body)
    return;
  CopyFinder CF(SM);
  CF.TraverseStmt(const_cast<CompoundStmt *>(Body));
  if (CF.Copies.empty())
    return;
  // Every copy's newest tile, against every read of its buffer.
  std::set<const Expr *> Dsts;
  for (const ThreadCopy &TC : CF.Copies)
    Dsts.insert(TC.Dst);
  BufferUses BU(Ctx, Dsts);
  BU.TraverseStmt(const_cast<CompoundStmt *>(Body));
  // The stage buffers the loop both copies into and reads: there the checks pair a copy with a
  // read (a prologue's copies pair with no read of theirs). An array every copy fills at a first
  // subscript that is the same in every iteration (invariant: `As[threadIdx.y][tx]`) is one buffer
  // whose first subscript picks a row, not stages the loop rotates through: nothing to pair,
  // however its reads index it (`Bs[k][tx]`).
  std::set<const VarDecl *> Copied, Paired;
  for (const ThreadCopy &TC : CF.Copies)
    if (StageRef Dst = stageRef(Ctx, TC.Dst); Dst.Array && Dst.Buffers >= 2 && !invariant(Dst.Stage))
      Copied.insert(Dst.Array);
  for (const StageRef &U : BU.Uses)
    if (Copied.count(U.Array))
      Paired.insert(U.Array);
  const ForStmt *Producer = nullptr;
  std::optional<int64_t> AheadOfOuter; // the newest Inner within the producer loop is Outer + this
  CurBody = Body;
  if (!schedule(Outer, Body, Producer, AheadOfOuter)) {
    for (const ThreadCopy &TC : CF.Copies)
      if (Paired.count(stageRef(Ctx, TC.Dst).Array))
        noteUnread(Outer, TC.At, "its induction variables do not each step by a constant");
    return;
  }
  auto Pos = [&](const Stmt *S) { return indexIn(Body, S); };
  // Each copy with the tile it fills, t + Tile (the newest, in a producer loop).
  std::vector<Scheduled> Sched;
  bool AllRead = true; // every copy's tile is read so
  for (const ThreadCopy &TC : CF.Copies) {
    StageRef Dst = stageRef(Ctx, TC.Dst);
    std::optional<size_t> P = Pos(TC.At);
    bool Modular = false;
    std::optional<Lin> Tc = Dst.Array && P ? tileOf(Dst.Stage, Dst.Buffers, P, &Modular) : std::nullopt;
    if (Tc && Tc->countersOnly())
      if (int64_t In = Tc->coef(&InnerKey)) {
        if (In == 1 && AheadOfOuter && Producer == topOf(Body, TC.At)) {
          Tc->Terms.erase(&InnerKey);
          Tc->add(Lin::atom(&OuterKey)).C += *AheadOfOuter;
        } else {
          Tc.reset();
        }
      }
    if (!Tc || !Tc->countersOnly() || Tc->coef(&OuterKey) != 1 || Tc->Terms.size() != 1) {
      AllRead = false;
      if (Paired.count(Dst.Array))
        noteUnread(Outer, TC.At, "the stage of the copy into '" + Dst.Array->getName().str() +
                                     "' is not the loop's tile plus a constant");
      continue;
    }
    Sched.push_back({TC, Dst, *P, Tc->C, Modular});
    Read.insert(TC.At);
  }
  // Each read of a stage buffer with the tile it reads.
  std::vector<ScheduledRead> Reads;
  for (const StageRef &Use : BU.Uses) {
    std::optional<size_t> R = Pos(Use.Outer);
    bool Modular = false;
    std::optional<Lin> Tr = R ? tileOf(Use.Stage, Use.Buffers, R, &Modular) : std::nullopt;
    if (Tr && Tr->countersOnly() && Tr->coef(&OuterKey) == 1 && Tr->Terms.size() == 1) {
      Reads.push_back({Use, *R, Tr->C, Modular});
      Read.insert(Use.Outer);
    } else if (Use.Buffers >= 2 && Copied.count(Use.Array)) {
      noteUnread(Outer, Use.Outer, "the stage '" + Use.Array->getName().str() +
                                       "' is read from is not the loop's tile plus a constant");
    }
  }
  // A tile known modulo N only (a stage counter) is known exactly relative to the copy that fills
  // its buffer: one copy an iteration into the N buffers in turn, so the buffer read was filled
  // D = (copy - read) mod N iterations before, or, where that is 0, in this iteration if the copy
  // comes first and N iterations before if it comes after the read.
  for (ScheduledRead &R : Reads) {
    auto C = llvm::find_if(Sched, [&](const Scheduled &S) { return S.Dst.Array == R.Use.Array; });
    if (C == Sched.end() || (!C->Modular && !R.Modular))
      continue;
    int64_t N = int64_t(R.Use.Buffers);
    int64_t D = ((C->Tile - R.Tile) % N + N) % N;
    if (D == 0 && C->Pos > R.Pos)
      D = N;
    R.Tile = C->Tile - D;
    R.Modular = false;
  }
  if (AllRead) {
    readBeforeWait(Outer, Body, Producer, Sched, Reads, Out);
    barrierReadBeforeWait(Body, Sched, Reads, Out);
  }
  stageOverrun(Body, Sched, Reads, Out);
}

void Checker::unread(std::vector<AuditFinding> &Out) const {
  std::map<const ForStmt *, std::vector<const Unread *>> ByLoop;
  for (const auto &[At, U] : NotRead)
    if (!Read.count(At))
      ByLoop[U.Loop].push_back(&U);
  for (auto &[L, Us] : ByLoop) {
    llvm::sort(Us, [&](const Unread *A, const Unread *B) {
      return SM.isBeforeInTranslationUnit(A->At->getBeginLoc(), B->At->getBeginLoc());
    });
    AuditFinding F;
    F.Code = Reason::AsyncUnknown;
    F.Remark = true;
    F.At = place(L->getBeginLoc());
    F.Detail = "the audit cannot read this loop's schedule of tiles: " + Us.front()->Why +
               "; its stage overruns and its reads before their wait are not checked";
    for (const Unread *U : Us)
      F.Notes.push_back({place(U->At->getBeginLoc()), U->Why});
    Out.push_back(std::move(F));
  }
}

class Loops : public RecursiveASTVisitor<Loops> {
public:
  Loops(ASTContext &Ctx, StringRef MainName, std::vector<AuditFinding> &Out)
      : Ctx(Ctx), MainName(MainName), Out(Out) {}
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool TraverseFunctionDecl(FunctionDecl *F) {
    return within(F, [&] { return RecursiveASTVisitor::TraverseFunctionDecl(F); });
  }
  bool TraverseCXXMethodDecl(CXXMethodDecl *F) {
    return within(F, [&] { return RecursiveASTVisitor::TraverseCXXMethodDecl(F); });
  }
  bool VisitForStmt(ForStmt *F) {
    if (!Current || !inUserFile(Ctx.getSourceManager(), F->getBeginLoc()))
      return true;
    auto [It, New] = Checkers.try_emplace(Current, nullptr);
    if (New)
      It->second = std::make_unique<Checker>(Ctx, MainName, Current);
    It->second->loop(F, Out);
    return true;
  }

private:
  /// F's loops, read by F's checker (a lambda's by its own, then F's again); after them, what
  /// none of them could read is said once.
  template <typename Fn> bool within(FunctionDecl *F, Fn Traverse) {
    const FunctionDecl *Outer = Current;
    if (!wanted(F))
      return true;
    bool Go = Traverse();
    if (auto It = Checkers.find(F); It != Checkers.end())
      It->second->unread(Out);
    Current = Outer;
    return Go;
  }
  bool wanted(FunctionDecl *F) {
    if (F->isDependentContext() || !F->hasBody() || !isDeviceCode(F) || !inUserFile(Ctx.getSourceManager(), F->getLocation()))
      return false;
    Current = F;
    return true;
  }
  ASTContext &Ctx;
  StringRef MainName;
  std::vector<AuditFinding> &Out;
  const FunctionDecl *Current = nullptr;
  std::map<const FunctionDecl *, std::unique_ptr<Checker>> Checkers;
};

} // namespace

std::vector<AuditFinding> scheduleFindings(ASTContext &Ctx, StringRef MainName) {
  std::vector<AuditFinding> Out;
  Loops L(Ctx, MainName, Out);
  L.TraverseDecl(Ctx.getTranslationUnitDecl());
  return Out;
}

} // namespace tilepipe

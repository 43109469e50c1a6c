// The checker of one candidate loop, shared by the files of tool/lib/check/. Internal to tool/lib.
//
// The rewrite evaluates the copy phase of future iterations ahead of time, on a copy of the
// induction variables (the fetch cursor). That is the same program only when everything the copy
// phase and the loop condition read is either an induction variable or a value the loop never
// changes, when the tiles are written nowhere else and read only by the compute phase, and when
// no store of the loop can change what a future copy reads. These files prove those facts or refuse.
//
// LoopChecker::run (Check.cpp) takes the steps in order, first the proof that the rewrite is the
// same program, then the choice of how tiles may be copied; each step has its own file:
//   LoopShape.cpp    the loop's form: header, barriers, copy and compute phases, no early exits
//   Inductions.cpp   what the loop changes: induction variables and their steps, set-once locals
//   Dependence.cpp   what a value depends on: nothing that changes, the iteration, or worse
//   IndexAlgebra.cpp index expressions as affine forms: over any names, over thread indices
//   CopyPhase.cpp    the copy phase, statement by statement: guards, index variables
//   InnerLoops.cpp   inner copy loops, with their own counters or the function's; their ranges
//   SliceLocals.cpp  locals declared before the loop that the copy phase sets before their reads
//   TileStores.cpp   one tile store: its tile, its value, the global memory it reads
//   CopyHelpers.cpp  stores and reads through helper functions; the compute phase's vector reads
//   Legality.cpp     tile uses, the loop's stores against the copies' memory, overlapping stores;
//                    whole-tile copies only where every thread reaches the loop
//   TileBoxes.cpp    whole-tile copies: the block-wide box a per-thread copy fills
//   CopyEngine.cpp   whether the copy engine (tensor or bulk copy) may move a box
#pragma once
#include "tilepipe/AstUtil.h"
#include "tilepipe/Check.h"
#include "tilepipe/Effects.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tilepipe::check {

/// What a value depends on, from least to most: nothing the loop changes, the iteration (the
/// induction variables), or something a copy issued ahead of time cannot be sure to see (Bad).
enum class Dep { Invariant, Iteration, Bad };

struct DepResult {
  Dep D = Dep::Invariant;
  std::string Why;
  bool ReadsMemory = false; ///< Bad because it reads memory (a copy that computes on its read)
  /// Reads memory that holds the same values while the kernel runs (readOnlyMemory): fine for an
  /// address, a bound or a guard, which the rewrite evaluates at another time; not for a value
  /// stored into a tile or a tile's subscript.
  bool ReadsUnchanged = false;
  void join(DepResult O) {
    const bool Unchanged = ReadsUnchanged || O.ReadsUnchanged;
    if (static_cast<int>(O.D) > static_cast<int>(D))
      *this = std::move(O);
    ReadsUnchanged = Unchanged;
  }
  static DepResult bad(std::string W) { return {Dep::Bad, std::move(W)}; }
  static DepResult read(std::string W) { return {Dep::Bad, std::move(W), true}; }
};

/// Whether Call is the toolkit's read-only load of what its one argument points to, `__ldg(p)`.
inline bool isReadOnlyLoad(const clang::SourceManager &SM, const clang::CallExpr *Call) {
  const clang::FunctionDecl *FD = Call ? Call->getDirectCallee() : nullptr;
  return FD && FD->getIdentifier() && FD->getName() == "__ldg" && Call->getNumArgs() == 1 &&
         Call->getArg(0)->getType()->isPointerType() &&
         SM.isInSystemHeader(FD->getCanonicalDecl()->getLocation());
}

/// The element the toolkit's read-only load of one element reads, `A[i]` of `__ldg(&A[i])`, or null.
/// The load differs from the plain read only in the cache it goes through, and gives what the
/// plain read would wherever it is correct at all (nothing writes A while the kernel runs).
inline const clang::Expr *readOnlyLoadOf(const clang::SourceManager &SM, const clang::Expr *E) {
  using namespace clang;
  const auto *Call = dyn_cast<CallExpr>(E);
  if (!isReadOnlyLoad(SM, Call))
    return nullptr;
  const auto *Addr = dyn_cast<UnaryOperator>(Call->getArg(0)->IgnoreParenImpCasts());
  const auto *Read = Addr && Addr->getOpcode() == UO_AddrOf
                         ? dyn_cast<ArraySubscriptExpr>(Addr->getSubExpr()->IgnoreParens())
                         : nullptr;
  if (!Read || Read->getType().getUnqualifiedType().getCanonicalType() !=
                   Call->getType().getUnqualifiedType().getCanonicalType())
    return nullptr;
  return Read;
}

/// How many times S (lambda bodies included) names V; none where S is null.
inline unsigned refsTo(const clang::VarDecl *V, const clang::Stmt *S) {
  return S ? llvm::count_if(namesIn(S), [&](const NameUse &U) { return U.Decl == V; }) : 0;
}

/// `x = e;` of a variable: the variable, with e in Value; null for any other statement.
inline const clang::VarDecl *plainSet(const clang::Stmt *S, const clang::Expr *&Value) {
  const auto *BO = S ? llvm::dyn_cast_or_null<clang::BinaryOperator>(bareExpr(S)) : nullptr;
  if (!BO || BO->getOpcode() != clang::BO_Assign)
    return nullptr;
  const auto *DRE = llvm::dyn_cast<clang::DeclRefExpr>(BO->getLHS()->IgnoreParens());
  Value = BO->getRHS();
  return DRE ? llvm::dyn_cast<clang::VarDecl>(DRE->getDecl()) : nullptr;
}

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

/// The atom a variable stands for in an Affine form's Terms.
inline std::string affineAtom(const clang::VarDecl *V) {
  return "v" + std::to_string(reinterpret_cast<uintptr_t>(V));
}

/// `v += step`, `++v`, `v = v + step` and comma lists of them, on integer or pointer variables.
bool isIncrementStmt(const clang::Stmt *S);

/// The array a store's target stands on: down its subscripts' bases and, for a vector store
/// (`reinterpret_cast<float4 *>(&t[i])[0]`, `*(float2 *)&t[i]`), its cast, `*` and `&`, to the
/// expression that names the array (a tile's DeclRefExpr where it is one).
inline const clang::Expr *targetSpine(const clang::Expr *E) {
  while (true) {
    E = E->IgnoreParenImpCasts();
    if (const auto *ASE = llvm::dyn_cast<clang::ArraySubscriptExpr>(E))
      E = ASE->getBase();
    else if (const auto *UO = llvm::dyn_cast<clang::UnaryOperator>(E);
             UO && (UO->getOpcode() == clang::UO_Deref || UO->getOpcode() == clang::UO_AddrOf))
      E = UO->getSubExpr();
    else if (const auto *C = llvm::dyn_cast<clang::ExplicitCastExpr>(E); C && C->getCastKind() == clang::CK_BitCast)
      E = C->getSubExpr();
    else
      return E;
  }
}

/// What a cast to a pointer views (`(V *)&t[i]...[k]`: the lvalue `t[i]...[k]`; `(V *)t`: the
/// array `t`), for a vector store or a pointer local that views a tile; null where E is no bit
/// cast to a pointer of either.
inline const clang::Expr *viewedLValue(const clang::Expr *E) {
  using namespace clang;
  const auto *Cast = dyn_cast<ExplicitCastExpr>(E);
  if (!Cast || Cast->getCastKind() != CK_BitCast || !Cast->getType()->isPointerType())
    return nullptr;
  const Expr *Of = Cast->getSubExpr()->IgnoreParens();
  for (const ImplicitCastExpr *ICE; (ICE = dyn_cast<ImplicitCastExpr>(Of)) && ICE->getCastKind() == CK_NoOp;)
    Of = ICE->getSubExpr()->IgnoreParens();
  if (const auto *UO = dyn_cast<UnaryOperator>(Of); UO && UO->getOpcode() == UO_AddrOf)
    return UO->getSubExpr();
  if (const auto *ICE = dyn_cast<ImplicitCastExpr>(Of); ICE && ICE->getCastKind() == CK_ArrayToPointerDecay)
    return ICE->getSubExpr();
  return nullptr;
}

/// A call of a copy helper (CopyHelpers.cpp): a function whose whole body stores its second
/// argument through its first, or returns a read through its one argument; the bit cast it reads
/// or writes through (null where it dereferences the parameter as it is), and the type one call
/// stores or reads.
struct HelperCopy {
  const clang::CallExpr *Call = nullptr;
  const clang::ExplicitCastExpr *View = nullptr;
  clang::QualType Type;
};
std::optional<HelperCopy> helperStore(const clang::Stmt *S);
/// Every expression in FD (lambda bodies included) that names V (CopyPhase.cpp).
std::vector<const clang::DeclRefExpr *> usesOf(const clang::FunctionDecl *FD, const clang::VarDecl *V);
std::optional<HelperCopy> helperLoad(const clang::Expr *E);

/// What E copies where E is a one-argument trivial copy or move construction (a class element
/// copied, `float4 v = A4[i]`), else null.
inline const clang::Expr *trivialCopySource(const clang::Expr *E) {
  const auto *CE = llvm::dyn_cast_or_null<clang::CXXConstructExpr>(E);
  return CE && CE->getNumArgs() == 1 && CE->getConstructor()->isCopyOrMoveConstructor() &&
                 CE->getConstructor()->isTrivial()
             ? CE->getArg(0)
             : nullptr;
}

/// How many array dimensions T has.
inline unsigned arrayRank(clang::ASTContext &Ctx, clang::QualType T) {
  unsigned N = 0;
  for (; Ctx.getAsArrayType(T); T = Ctx.getAsArrayType(T)->getElementType())
    ++N;
  return N;
}

class LoopChecker {
public:
  LoopChecker(clang::ASTContext &Ctx, const TranslationUnitIndex &Index, const Candidate &C,
              const CheckOptions &Opts, LoopModel &M)
      : Ctx(Ctx), SM(Ctx.getSourceManager()), Index(Index), Opts(Opts), M(M),
        Effects(Ctx, Index) {
    M.Loop = C.Loop;
    M.Function = C.Function;
  }

  Verdict run();

private:
  clang::ASTContext &Ctx;
  const clang::SourceManager &SM;
  const TranslationUnitIndex &Index;
  const CheckOptions &Opts;
  LoopModel &M;

  LocalFacts InLoop;   // mutations inside the loop statement
  const LocalFacts *InFunction = nullptr; // the whole function's (Effects keeps them)
  llvm::DenseMap<const clang::VarDecl *, DepResult> IndexDeclDeps;
  llvm::SmallPtrSet<const clang::VarDecl *, 4> InnerVars; // variables of inner copy loops
  llvm::DenseMap<const clang::VarDecl *, size_t> TileIndex;
  RootSet SourceRoots; ///< where the pointers the copies read may point
  EffectsAnalyzer Effects;
  /// Where a store writes: the tile element it starts at (Indices, outermost first; empty for a
  /// tile of one dimension viewed whole) and, for a vector store, the vector's subscript (null for
  /// `[0]` or `*`) and the elements it spans.
  struct TileTarget {
    const clang::VarDecl *Tile = nullptr;
    std::vector<const clang::Expr *> Indices;
    const clang::ExplicitCastExpr *View = nullptr;
    const clang::Expr *VectorIndex = nullptr;
    unsigned Width = 1;
  };
  /// One side of an if of the copy phase whose condition has one value throughout an iteration
  /// (fixedInIteration): the if, and whether the side is its then-branch.
  using Branch = std::pair<const clang::IfStmt *, bool>;
  struct StoreSite {
    const clang::Expr *Dst;
    unsigned TileIdx;
    std::vector<const clang::VarDecl *> Inner;
    TileTarget Target;
    std::vector<Branch> Branches; // the sides of such ifs it stands in
  };
  std::vector<StoreSite> Sites;
  std::vector<Branch> BranchStack;
  std::vector<const clang::VarDecl *> InnerStack;
  /// The values an inner copy loop variable takes, in one thread: where its loop's start, bound
  /// and step are constants (innerRange), Lo, Lo + Step, ..., Hi; where the start differs between
  /// threads (boundedRange: `for (i = threadIdx.x; i < 96; i += 32)`), values within [Lo, Hi]
  /// that differ by multiples of Step, or by unknown amounts where Step is 0 (a step of
  /// blockDim's). Also what its subscripts may be (threadRange).
  struct InnerRange {
    int64_t Lo, Hi, Step;
  };
  llvm::DenseMap<const clang::VarDecl *, InnerRange> InnerRanges;
  /// Statements of the copy phase refused: later steps do not refuse the loop again for them.
  std::vector<const clang::Stmt *> RefusedCopy;
  llvm::SmallPtrSet<const clang::VarDecl *, 4> RefusedVars; ///< declared by those statements
  llvm::SmallPtrSet<const clang::VarDecl *, 4> UniformVisiting;
  std::map<std::string, unsigned> NameCounts; ///< declarations per name in the function, once read
  std::vector<const clang::Expr *> CoefExprs; ///< the uniform factors threadAffine multiplied by

  /// S's text for a message, "<macro>" where it is not one range of the file.
  std::string text(const clang::Stmt *S) {
    return editable(S) ? sourceText(Ctx, S->getSourceRange()) : "<macro>";
  }
  bool inMacro(clang::SourceRange R) {
    return R.getBegin().isMacroID() || R.getEnd().isMacroID();
  }
  /// Whether S is one range of the file, which the rewrite can cut or replace.
  bool editable(const clang::Stmt *S) { return fileRange(Ctx, S->getSourceRange()).isValid(); }

  // Check.cpp
  void describeSurroundings();
  Verdict checkBuiltinNames();

  // LoopShape.cpp
  Verdict checkLoopStatement();
  Verdict checkShape();
  Verdict readLoopHeader(const clang::Stmt *&Body);
  Verdict peelWhileIncrements(std::vector<const clang::Stmt *> &Stmts);
  void peelForIncrements(std::vector<const clang::Stmt *> &Stmts);
  Verdict splitPhases(const std::vector<const clang::Stmt *> &Stmts);
  Verdict checkControlFlow(const clang::Stmt *Body);

  // Inductions.cpp
  bool isInduction(const clang::VarDecl *V) const { return llvm::is_contained(M.Inductions, V); }
  bool changes(const clang::VarDecl *V) const { return InFunction->changes(V); }
  Verdict collectInductions();
  Verdict checkCondition();
  void findBodyIncrements();
  bool declaredInBody(const clang::VarDecl *V);
  std::optional<LocalFacts> BodyFacts; ///< what the loop's body declares, once read
  Verdict addIncrement(const clang::Expr *E);
  bool startSetJustBefore(const clang::VarDecl *V);
  bool paramStartUniform(const clang::VarDecl *V, unsigned Depth);
  static bool hasJumps(const clang::Stmt *S);
  bool setOnceLocal(const clang::VarDecl *V) const;
  bool unchangedParam(const clang::VarDecl *V) const;

  // Dependence.cpp
  DepResult classify(const clang::Expr *E);
  DepResult classifyVar(const clang::VarDecl *V);
  DepResult readOf(const clang::Expr *LValue);
  DepResult readThrough(const clang::Expr *Ptr, const clang::Expr *Idx, const clang::Expr *Read);
  bool readOnlyMemory(const clang::Expr *Ptr);
  bool unchangedRoot(const clang::VarDecl *Root);
  llvm::DenseMap<const clang::VarDecl *, bool> UnchangedRoots; ///< unchangedRoot's answers
  std::optional<RegionEffects> KernelEffects;                  ///< the whole kernel's, once asked
  bool stepsEvenly(const clang::Expr *E, unsigned Depth = 0);
  std::string unevenStep(const clang::Expr *Index);

  // IndexAlgebra.cpp
  bool affine(const clang::Expr *E, Affine &A);
  unsigned AffineDepth = 0;
  /// While set, affine() takes an integer expression it cannot expand, of variables and thread
  /// indices only, as an atom of its own (checkOverlap: two sites of one thread in one iteration
  /// read it alike). Elsewhere an atom must be a variable: the analyses ask which ones a form reads.
  bool OpaqueAtoms = false;
  /// While set too, such an atom may not name an inner copy loop variable or an index variable of
  /// the copy phase: it must be the same in every iteration of the inner copy loops.
  bool OpaqueFixedOnly = false;
  bool opaqueAtom(const clang::Expr *E, std::string &Key);
  char threadDim(const clang::Expr *E);
  std::optional<std::pair<int64_t, int64_t>> threadRange(const clang::Expr *E, unsigned Depth = 0);
  bool mentionsThread(const clang::Stmt *S, unsigned Depth = 0);
  std::map<const clang::FunctionDecl *, bool> AddressTakenOf; ///< addressTaken, once per function
  struct Coef {
    std::string Text;
    std::optional<int64_t> Const;
  };
  bool threadAffine(const clang::Expr *E, std::map<char, Coef> &Out, unsigned Depth = 0);
  bool visibleAtLoop(const clang::Expr *E);
  bool hostVisible(const clang::Expr *E);

  // CopyPhase.cpp
  Verdict checkCopyPhase();
  Verdict checkCopyDecl(const clang::DeclStmt *DS);
  Verdict checkNestedDecl(const clang::DeclStmt *DS);
  Verdict checkValueDecl(const clang::DeclStmt *DS, const clang::Expr *Read);
  Verdict checkValueLocalsUsed();
  std::optional<Verdict> checkRedefinition(const clang::Stmt *S);
  std::optional<Verdict> checkSliceAssignment(const clang::Stmt *S);
  /// Locals declared before the loop that the copy phase sets before any use (checkSliceAssignment):
  /// what each iteration's value depends on. Not IndexDeclDeps, whose variables are their starts.
  llvm::DenseMap<const clang::VarDecl *, DepResult> SliceLocalDeps;
  struct SliceSet {
    std::vector<const clang::Expr *> Values; ///< what the statement sets the local to
    const clang::Expr *Cond = nullptr;       ///< the if's condition that chooses, or null
  };
  llvm::DenseMap<const clang::VarDecl *, SliceSet> SliceLocalSets;
  /// Where each of those locals was last set: its declaration, or a statement `v = P[j];`.
  llvm::DenseMap<const clang::VarDecl *, const clang::Stmt *> ValueDefAt;
  /// Locals of the copy phase set once from one read of global memory (`float4 v = A4[i];`), each
  /// with its read, and the uses of them that a tile store reads through (`s[..] = v.x`).
  llvm::DenseMap<const clang::VarDecl *, const clang::Expr *> ValueLocals;
  /// Pointer locals of the copy phase that view a tile (`float4 *const d = (float4 *)&As[y][x];`,
  /// checkViewLocal), with the cast they are set from; and the inner variables declared by an
  /// inner copy loop's for-init (which change only in its increment, after its body).
  llvm::DenseMap<const clang::VarDecl *, const clang::ExplicitCastExpr *> ViewLocals;
  llvm::SmallPtrSet<const clang::VarDecl *, 8> ForInnerVars;
  llvm::SmallPtrSet<const clang::DeclRefExpr *, 8> ValueUses;
  /// Index variables declared in a block of the copy phase (an inner copy loop's body, as a rule).
  std::vector<const clang::VarDecl *> NestedIndexVars;
  /// Every name the copy phase declares, with the file offset of its declaration.
  std::vector<std::pair<std::string, unsigned>> CopyPhaseDecls;
  Verdict checkCopyStmt(const clang::Stmt *S);
  Verdict checkCopyIf(const clang::IfStmt *If);
  Verdict checkGuardedStore(const clang::IfStmt *If);

  // InnerLoops.cpp
  Verdict checkInnerCopyLoop(const clang::ForStmt *For);
  std::optional<Verdict> checkCounterLoop(size_t I);
  Verdict checkCounterLoopBody(const clang::VarDecl *W, const clang::Expr *Start, const clang::Expr *Cond,
                               const clang::Expr *Inc, llvm::ArrayRef<const clang::Stmt *> Body);
  bool holdsAtHeader(const clang::VarDecl *W, const clang::Expr *E0, std::string &Why);
  bool holdsOnEntry(const clang::VarDecl *W, const clang::Expr *E0, std::string &Why);
  /// An inner copy loop's counter V: from Start, while Cond holds, stepped by Inc.
  struct CountedLoop {
    const clang::VarDecl *V;
    const clang::Expr *Start, *Cond, *Inc;
  };
  void rangeOf(const CountedLoop &Loop);
  std::optional<InnerRange> innerRange(const CountedLoop &Loop);
  std::optional<InnerRange> boundedRange(const CountedLoop &Loop);
  Verdict sameEachIteration(const clang::Expr *E, const std::string &What);

  // TileStores.cpp
  Verdict checkStore(const clang::Stmt *S, const clang::Expr *LHS, const clang::Expr *RHS);
  Verdict checkStoreValue(const clang::Stmt *S, const clang::Expr *LHS, const clang::Expr *RHS);
  Verdict checkStoreTo(const clang::Stmt *S, const clang::Expr *LHS, const clang::Expr *RHS, TileTarget &To);
  // CopyHelpers.cpp
  Verdict checkHelperStore(const clang::Stmt *S, const HelperCopy &H);
  Verdict checkValue(const clang::Stmt *S, const clang::Expr *Dst, const clang::Expr *V,
                     size_t TileIdx, const TileTarget &To);
  Verdict checkGlobalRead(const clang::Stmt *S, const clang::Expr *Plain);
  Verdict checkGlobalAddress(const clang::Stmt *S, const clang::Expr *Plain, const clang::Expr *Ptr,
                             const clang::Expr *Idx);
  Verdict checkHelperRead(const clang::Stmt *S, const clang::Expr *Dst, const clang::Expr *V, const HelperCopy &H,
                          clang::QualType Stored, TileStore &Store);
  Verdict checkValueLocalRead(const clang::Stmt *S, const clang::Expr *V, const clang::Expr *Plain,
                              TileStore &Store);
  Verdict tileOfLValue(const clang::Expr *E, const clang::VarDecl *&TileVar,
                       std::vector<const clang::Expr *> &Indices);
  Verdict targetOf(const clang::Expr *LHS, TileTarget &To);
  Verdict checkView(TileTarget &To);
  bool linearIndex(const TileTarget &To, Affine &Lin);
  std::vector<uint64_t> tileExtents(const clang::VarDecl *Tile) const;
  Verdict addTile(const clang::VarDecl *V, const clang::DeclStmt *InBody);
  Verdict elementTypeNames(const clang::VarDecl *V, clang::TypeLoc TL, const std::string &Text);
  /// Whether V is a local pointer that views dynamic shared memory in the whole function: set
  /// where it is declared to an address in `extern __shared__` memory (directly or through a call
  /// such as the CUDA samples' `SharedMemory<T>()`), to one element type, never changed, its
  /// address never taken. `p[i]` then writes an element of a tile whose size is the launch's.
  bool dynamicView(const clang::VarDecl *V);
  /// A tile in dynamic shared memory: a one-dimensional `extern __shared__ T s[]`, or a dynamicView.
  bool isDynamicTile(const clang::VarDecl *V);
  /// How many subscripts name one element of the tile V: its array rank, 1 for a pointer view.
  unsigned tileRank(const clang::VarDecl *V);
  /// A store through the pointer Ptr (Text), which no tile is: into dynamic shared memory that is
  /// no fixed view (tile-declaration, with what to change); anything else, load-phase.
  Verdict storeThroughPointer(const clang::Expr *Ptr, const std::string &Text);
  /// Why a store into the dynamic shared memory V is refused; why a dynamic tile has no stages.
  static std::string dynamicSharedWhy(const clang::VarDecl *V);
  static std::string dynamicStagesWhy(const clang::VarDecl *V);
  bool isGlobalPointer(const clang::VarDecl *V, unsigned Depth);
  const clang::VarDecl *pointerBase(const clang::Expr *E);

  // Legality.cpp
  Verdict checkTiles();
  Verdict checkTileUse(const clang::DeclRefExpr *DRE);
  // CopyHelpers.cpp
  Verdict checkVectorRead(const clang::VarDecl *Tile, const std::vector<const clang::Expr *> &Subscripts,
                          const clang::Expr *Address);
  bool multipleOf(const clang::Expr *E, int64_t W, std::set<const clang::VarDecl *> &Assumed, unsigned Depth = 0);
  bool onlyRead(const clang::Expr *LV);
  const clang::Expr *parentExpr(const clang::Expr *E);
  Verdict checkStores();
  Verdict classifyStoreTarget(const RootSet &Target, const clang::Stmt *Where);
  Verdict checkOverlap();
  bool disjointAcrossInner(const StoreSite &I, const StoreSite &J);
  std::optional<bool> disjointInSameLoops(const StoreSite &I, const StoreSite &J);
  std::optional<Verdict> checkViewLocal(const clang::DeclStmt *DS);
  static bool exclusiveSides(const StoreSite &I, const StoreSite &J);
  bool fixedInIteration(const clang::Expr *Cond);
  bool distinctAcrossInner(const StoreSite &S);
  bool innerPart(Affine &F, const StoreSite &S, int64_t &Lo, int64_t &Hi);
  void requireAllThreadsForWholeTiles();

  // TileBoxes.cpp
  void analyzeBoxes();
  void analyzeBox(size_t TI);
  bool takeGuardedPair(std::vector<size_t> &Mine, TileBox &B, const std::string &Name,
                       const TileStore *&FillStore);

  // CopyEngine.cpp
  void analyzeTma(Tile &T, const TileStore *FillStore);
  void analyzeBulk(Tile &T);
  std::string tmaBoxLimit(const Tile &T);
  bool isZeroBits(const Tile &T, const clang::Expr *F);
  bool guardBounds(Tile &T, const clang::Expr *Guard, std::string &Why);
  bool readGuardBound(const TileBox &B, const clang::Expr *C, const std::string &G,
                      std::vector<std::string> &Coords, std::vector<std::string> &Bounds,
                      std::string &Why);
};

} // namespace tilepipe::check

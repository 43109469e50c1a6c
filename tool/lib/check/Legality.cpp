// Legality: the tiles are written only by the copy phase and read element by element only by the
// compute phase; no store of the loop can change what a later copy reads; no two stores of one
// thread land on one tile element in one iteration. And the gate on whole-tile copies: every
// thread of the block must reach the loop.
#include "LoopChecker.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/StringExtras.h"

using namespace clang;

namespace tilepipe::check {

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
    // A tile in dynamic shared memory keeps its one buffer where it is (the register-staged
    // prefetch), wherever the array is declared.
    if (T.DeclaredInBody || T.Dynamic)
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
    if (!isa<DeclStmt>(S) && !llvm::is_contained(RefusedCopy, S))
      InCopy.TraverseStmt(const_cast<Stmt *>(S));
  for (const DeclRefExpr *DRE : InCopy.Found) {
    // The tile a store writes, down the spine of its target (targetOf).
    bool IsDst = llvm::any_of(M.Stores, [&](const TileStore &S) { return targetSpine(S.Dst) == DRE; }) ||
                 llvm::any_of(ViewLocals, [&](const auto &VL) { return targetSpine(VL.second) == DRE; });
    if (!IsDst)
      return Verdict::refuse(Reason::LoadComputes,
                             "the copy phase reads the tile " + quoted(DRE->getDecl()));
  }
  return {};
}

Verdict LoopChecker::checkTileUse(const DeclRefExpr *DRE) {
  // Walk up from the tile through full subscripts to one element, which must only be read.
  const VarDecl *V = cast<VarDecl>(DRE->getDecl());
  unsigned Dims = tileRank(V);
  // A pointer that views the tile is read for its value first, then subscripted: `p[i]`.
  const bool PointerView = V->getType()->isPointerType();
  const Expr *Cur = DRE;
  unsigned Seen = 0;
  std::vector<const Expr *> Subscripts; // outermost first
  while (true) {
    // The parent map gives an element of a braced initializer as written two parents: the
    // conversion that says how it is used, and the initializer itself, reached through its
    // syntactic form. Only the semantic form's own elements tell how they are used.
    llvm::SmallVector<DynTypedNode, 2> Parents;
    for (const DynTypedNode &N : Ctx.getParents(*Cur)) {
      const auto *ILE = N.get<InitListExpr>();
      if (ILE && (ILE->getSemanticForm() || !llvm::is_contained(ILE->inits(), Cur)))
        continue;
      Parents.push_back(N);
    }
    if (Parents.size() != 1)
      return Verdict::refuse(Reason::TileEscapes, quoted(V) + " is used in an unknown context");
    const Expr *P = Parents[0].get<Expr>();
    if (!P)
      break;
    if (isa<ParenExpr>(P) ||
        (isa<ImplicitCastExpr>(P) && cast<ImplicitCastExpr>(P)->getCastKind() == CK_ArrayToPointerDecay &&
         Seen < Dims) ||
        (PointerView && Seen == 0 && isa<ImplicitCastExpr>(P) &&
         cast<ImplicitCastExpr>(P)->getCastKind() == CK_LValueToRValue && isa<DeclRefExpr>(Cur->IgnoreParens()))) {
      Cur = P;
      continue;
    }
    if (const auto *ASE = dyn_cast<ArraySubscriptExpr>(P); ASE && ASE->getBase() == Cur && Seen < Dims) {
      ++Seen;
      Subscripts.push_back(ASE->getIdx());
      Cur = P;
      continue;
    }
    // The address of an element, or a row (or the tile) that decays to its first: read as a
    // vector (checkVectorRead).
    if (const auto *UO = dyn_cast<UnaryOperator>(P); UO && UO->getOpcode() == UO_AddrOf && Seen == Dims)
      return checkVectorRead(V, Subscripts, UO);
    if (const auto *ICE = dyn_cast<ImplicitCastExpr>(Cur->IgnoreParens());
        Seen < Dims && ICE && ICE->getCastKind() == CK_ArrayToPointerDecay)
      return checkVectorRead(V, Subscripts, Cur);
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

Verdict LoopChecker::checkStores() {
  // Every store the loop's compute phase and index declarations make, through the calls, lambdas
  // and pointer copies they hold, with each store's memory named by where its pointer comes from.
  std::vector<const Stmt *> Region(M.ComputePhase.begin(), M.ComputePhase.end());
  Region.insert(Region.end(), M.IndexDecls.begin(), M.IndexDecls.end());
  RegionEffects Fx = Effects.effectsOf(M.Function, Region);
  if (Fx.UnknownAt)
    return Verdict::refuse(Reason::UnknownEffects,
                           "'" + text(Fx.UnknownAt).substr(0, 60) + "': " + Fx.UnknownWhy);
  if (Fx.SyncAt)
    return Verdict::refuse(Reason::Synchronizes,
                           "'" + text(Fx.SyncAt).substr(0, 60) + "': " + Fx.SyncWhy);
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

Verdict LoopChecker::checkOverlap() {
  // Two stores of one thread into one tile element in one iteration would land in an order that
  // asynchronous copies do not keep. Distinct sites must differ by a nonzero constant in some
  // dimension; a site inside an inner copy loop must use each inner variable in an index.
  for (size_t I = 0; I < Sites.size(); ++I) {
    const TileTarget &TI = Sites[I].Target;
    const std::vector<const Expr *> &IdxI = TI.Indices;
    const VarDecl *TV = TI.Tile;
    if (!Sites[I].Inner.empty() && !distinctAcrossInner(Sites[I])) {
      // Each inner variable selects the element: it is the only inner variable in some
      // subscript's form, whose other terms the inner loops do not change. Appearing somewhere
      // is not enough: `s[x][i + j]` writes one element for (i, j) = (0, 1) and (1, 0), and two
      // copies in flight to one element may land in either order. A vector spans elements:
      // there the one inner variable must move the element it starts at by a whole vector.
      // A vector's one form is its element index counted from the tile's first.
      const size_t NForms = TI.View ? 1 : IdxI.size();
      std::vector<Affine> Forms(NForms);
      std::vector<bool> Known(NForms);
      for (size_t D = 0; D < NForms; ++D)
        Known[D] = TI.View ? linearIndex(TI, Forms[D]) : affine(IdxI[D], Forms[D]);
      if (TI.View) {
        auto Step = Forms[0].Terms.find(affineAtom(Sites[I].Inner.front()));
        if (Sites[I].Inner.size() != 1 || !Known[0] || Step == Forms[0].Terms.end() ||
            std::abs(Step->second) < static_cast<int64_t>(TI.Width))
          return Verdict::refuse(Reason::TileOverlap, "the vector store into " + quoted(TV) +
                                                          " in an inner copy loop does not move by a whole "
                                                          "vector with one inner loop variable");
      }
      for (const VarDecl *IV : Sites[I].Inner) {
        bool Selects = false;
        // The other terms must not vary with the inner variables either: an index variable
        // declared in a block of the copy phase whose start is no affine form may.
        for (size_t D = 0; D < Forms.size(); ++D)
          Selects |= Known[D] && Forms[D].Terms.count(affineAtom(IV)) &&
                     llvm::none_of(Sites[I].Inner, [&](const VarDecl *Other) {
                       return Other != IV && Forms[D].Terms.count(affineAtom(Other));
                     }) &&
                     llvm::none_of(NestedIndexVars, [&](const VarDecl *N) { return Forms[D].Terms.count(affineAtom(N)); });
        if (!Selects)
          return Verdict::refuse(Reason::TileOverlap, "the inner copy loop variable " + quoted(IV) +
                                                          " does not select the tile element");
      }
      // Each variable selecting a subscript of its own tells iterations apart only where no
      // subscript leaves its dimension: `s[i][j]` of a `float s[2][64]` with j up to 64 writes
      // s[0][64], which is s[1][0], at (0, 64) and at (1, 0). With two inner variables or more,
      // every subscript but the first must lie within its extent (threadRange, over the inner
      // variables' ranges).
      const std::vector<uint64_t> Extents = tileExtents(TV);
      if (!TI.View && Sites[I].Inner.size() >= 2)
        for (size_t D = 1; D < IdxI.size(); ++D) {
          auto R = threadRange(IdxI[D]);
          if (D >= Extents.size() || !R || R->first < 0 || R->second >= static_cast<int64_t>(Extents[D]))
            return Verdict::refuse(Reason::TileOverlap,
                                   "'" + text(IdxI[D]) + "' in '" + text(Sites[I].Dst) +
                                       "' is not provably within its dimension, so two iterations of the "
                                       "inner copy loops may write one element through two rows");
        }
    }
    for (size_t J = I + 1; J < Sites.size(); ++J) {
      if (Sites[I].TileIdx != Sites[J].TileIdx || exclusiveSides(Sites[I], Sites[J]))
        continue;
      if (!Sites[I].Inner.empty() || !Sites[J].Inner.empty()) {
        if (disjointAcrossInner(Sites[I], Sites[J]))
          continue;
        return Verdict::refuse(Reason::TileOverlap,
                               "'" + text(Sites[I].Dst) + "' and '" + text(Sites[J].Dst) + "' both write " +
                                   quoted(TV) + " in an inner copy loop, and the elements each may write "
                                   "are not provably apart (over constant bounds of the inner loop variables)");
      }
      const TileTarget &TJ = Sites[J].Target;
      bool Distinct = false;
      // One thread, one iteration: what it cannot expand it reads alike at both sites. The
      // elements each starts at are counted from the tile's first, across rows: a subscript past
      // its dimension (`s[0][x + 64]` of a `float s[2][64]`) is the next row's element, as the
      // compiled code addresses it, so rows that differ prove nothing alone. A vector spans
      // elements: the two must lie a whole span apart.
      OpaqueAtoms = true;
      Affine A, B;
      if (linearIndex(TI, A) && linearIndex(TJ, B)) {
        A.add(B, -1);
        Distinct = A.Terms.empty() && (A.Constant >= static_cast<int64_t>(TJ.Width) ||
                                       -A.Constant >= static_cast<int64_t>(TI.Width));
      }
      OpaqueAtoms = false;
      if (!Distinct)
        return Verdict::refuse(Reason::TileOverlap, "'" + text(Sites[I].Dst) + "' and '" +
                                                        text(Sites[J].Dst) +
                                                        "' may be the same element");
    }
  }
  return {};
}

/// Whether two stores stand on the two sides of one if whose guard has one value throughout an
/// iteration (checkCopyIf): then one iteration runs one of them, never both.
bool LoopChecker::exclusiveSides(const StoreSite &I, const StoreSite &J) {
  return llvm::any_of(I.Branches, [&](const Branch &B) {
    return llvm::is_contained(J.Branches, Branch{B.first, !B.second});
  });
}

/// Two stores in the same inner copy loops whose element indices (counted from the tile's first,
/// across rows) give each inner variable the same coefficient and differ by a constant C:
/// `a[ty + i][tx + j]` and `a[ty + i][tx + j + 32]`. Iteration x of the one and y of the other
/// write one element only where sum(c_v * (x_v - y_v)) + C brings the two spans (a vector's
/// width) together; the differences x_v - y_v are the multiples of the variable's step within
/// its range, tried one by one (at most 65536 combinations). Nothing where the stores are not so
/// alike or a variable has no range with a known step; else whether they are disjoint.
std::optional<bool> LoopChecker::disjointInSameLoops(const StoreSite &SI, const StoreSite &SJ) {
  if (SI.Inner.empty() || SI.Inner != SJ.Inner)
    return std::nullopt;
  Affine A, B;
  OpaqueAtoms = OpaqueFixedOnly = true;
  bool Known = linearIndex(SI.Target, A) && linearIndex(SJ.Target, B);
  OpaqueAtoms = OpaqueFixedOnly = false;
  if (!Known)
    return std::nullopt;
  // (coefficient, step, the largest difference) per inner variable that moves the index
  std::vector<std::tuple<int64_t, int64_t, int64_t>> Moves;
  uint64_t Combinations = 1;
  for (const VarDecl *V : SI.Inner) {
    const std::string Atom = affineAtom(V);
    auto TA = A.Terms.find(Atom), TB = B.Terms.find(Atom);
    const int64_t CA = TA == A.Terms.end() ? 0 : TA->second, CB = TB == B.Terms.end() ? 0 : TB->second;
    auto R = InnerRanges.find(V);
    if (CA != CB || R == InnerRanges.end() || R->second.Step <= 0 || std::abs(CA) >= (int64_t(1) << 24))
      return std::nullopt;
    if (CA == 0)
      continue;
    const int64_t Span = R->second.Hi - R->second.Lo;
    Combinations *= static_cast<uint64_t>(2 * (Span / R->second.Step) + 1);
    if (Combinations > 65536)
      return std::nullopt;
    Moves.push_back({CA, R->second.Step, Span});
  }
  A.add(B, -1);
  // What is left must be a constant, and the rest of each form the same in every inner iteration.
  if (!A.Terms.empty())
    return std::nullopt;
  int64_t Lo, Hi;
  if (Affine Rest = B; !innerPart(Rest, SI, Lo, Hi))
    return std::nullopt;
  const int64_t C = A.Constant, WI = SI.Target.Width, WJ = SJ.Target.Width;
  // Every sum of the differences' terms, and whether one brings the spans together.
  std::vector<int64_t> Sums{0};
  for (const auto &[Coef, Step, Span] : Moves) {
    std::vector<int64_t> Next;
    for (int64_t S : Sums)
      for (int64_t D = -Span - (-Span % Step); D <= Span; D += Step)
        Next.push_back(S + Coef * D);
    Sums = std::move(Next);
  }
  return llvm::none_of(Sums, [&](int64_t S) { return -(WI - 1) <= S + C && S + C <= WJ - 1; });
}

/// Whether two stores into one tile, one of them or both in inner copy loops, write no element
/// in common in one iteration of the tiled loop, whatever iterations of the inner loops write
/// them. In the element index counted from the tile's first (across rows: checkOverlap) the two
/// affine forms differ by a constant once their inner loop variables' terms are taken out, and
/// those terms, over the ranges of their variables (innerRange; boundedRange for a loop strided
/// from the thread's rank), keep the elements each writes (a vector spans its width) in two
/// intervals apart: `As[(c * 4 + j) * 128 + r + offset]` for j = 0..3, offset = 0, 32, 64, 96;
/// `s[i]` and `s[i + 256]` for i = threadIdx.x, ... < 256 by blockDim.x. Each inner variable ranges over its own
/// values independently, which covers both stores in one loop and in two. What is left of a form
/// must be the same in every inner iteration: no index variable declared in the copy phase whose
/// start is no affine form, and no opaque atom that reads one or an inner variable.
bool LoopChecker::disjointAcrossInner(const StoreSite &SI, const StoreSite &SJ) {
  if (std::optional<bool> Same = disjointInSameLoops(SI, SJ))
    return *Same;
  const TileTarget &TI = SI.Target, &TJ = SJ.Target;
  // Counted from the tile's first element, across rows (checkOverlap says why).
  Affine A, B;
  int64_t LoI, HiI, LoJ, HiJ;
  OpaqueAtoms = OpaqueFixedOnly = true;
  bool Known = linearIndex(TI, A) && linearIndex(TJ, B) && innerPart(A, SI, LoI, HiI) &&
               innerPart(B, SJ, LoJ, HiJ);
  OpaqueAtoms = OpaqueFixedOnly = false;
  if (!Known)
    return false;
  A.add(B, -1);
  return A.Terms.empty() && (A.Constant + HiI + TI.Width - 1 < LoJ || HiJ + TJ.Width - 1 < A.Constant + LoI);
}

/// Takes F's terms of S's inner loop variables out, as the interval [Lo, Hi] of the values they
/// sum to over the variables' ranges; false where a variable has no range or what is left may
/// change within the inner loops (an index variable of the copy phase, an inner variable).
bool LoopChecker::innerPart(Affine &F, const StoreSite &S, int64_t &Lo, int64_t &Hi) {
  Lo = Hi = 0;
  for (const VarDecl *V : S.Inner) {
    auto T = F.Terms.find(affineAtom(V));
    if (T == F.Terms.end())
      continue;
    auto R = InnerRanges.find(V);
    if (R == InnerRanges.end() || std::abs(T->second) >= (int64_t(1) << 24))
      return false; // the sums below stay far from overflow
    const int64_t X = T->second * R->second.Lo, Y = T->second * R->second.Hi;
    Lo += std::min(X, Y);
    Hi += std::max(X, Y);
    F.Terms.erase(T);
  }
  return llvm::none_of(NestedIndexVars, [&](const VarDecl *N) { return F.Terms.count(affineAtom(N)); }) &&
         llvm::none_of(InnerVars, [&](const VarDecl *N) { return F.Terms.count(affineAtom(N)); });
}

/// Whether a store in inner copy loops writes no element twice in one iteration of the tiled
/// loop: in the element index counted from the tile's first, across rows, the inner variables'
/// terms count in mixed radix. Each variable moves the form by a unit (its coefficient times its
/// step, in magnitude) over its trip count; ordered by unit, each unit is at
/// least the element's span (a vector's width) plus all that the smaller ones can move together, so
/// two iterations that differ first (from the largest unit down) in one variable write elements a
/// whole span apart. `s[x + 128 * i + 256 * j]` for i, j < 2; not `s[x][i + j]`. A variable whose
/// loop runs more than once must move the form; what is left of it is the same in every inner
/// iteration (innerPart).
bool LoopChecker::distinctAcrossInner(const StoreSite &S) {
  const TileTarget &T = S.Target;
  Affine F; // the element index, across rows
  std::vector<std::pair<int64_t, int64_t>> Units; // (unit, trips - 1)
  OpaqueAtoms = OpaqueFixedOnly = true;
  bool Known = linearIndex(T, F);
  for (const VarDecl *V : S.Inner) {
    if (!Known)
      break;
    auto R = InnerRanges.find(V);
    auto Term = F.Terms.find(affineAtom(V));
    if (R == InnerRanges.end() || (Term == F.Terms.end() && R->second.Hi != R->second.Lo) ||
        (Term != F.Terms.end() && (R->second.Step == 0 || std::abs(Term->second) >= (int64_t(1) << 24))))
      Known = false;
    else if (Term != F.Terms.end())
      Units.push_back({std::abs(Term->second) * R->second.Step, (R->second.Hi - R->second.Lo) / R->second.Step});
  }
  int64_t Lo, Hi;
  Known = Known && innerPart(F, S, Lo, Hi);
  OpaqueAtoms = OpaqueFixedOnly = false;
  if (!Known)
    return false;
  llvm::sort(Units);
  int64_t Reach = 0; // how far the smaller units move the form together
  for (const auto &[Unit, Moves] : Units) {
    if (Unit < static_cast<int64_t>(T.Width) + Reach)
      return false;
    Reach += Unit * Moves;
  }
  return true;
}

/// Copies of whole tiles (16-byte chunks spread over the block's thread ranks, or one thread
/// issuing for all) stand in for every thread's own copy: they need every thread at the loop.
void LoopChecker::requireAllThreadsForWholeTiles() {
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
}

} // namespace tilepipe::check

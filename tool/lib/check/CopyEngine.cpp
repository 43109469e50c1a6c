// The copy engine: whether one thread may move a tile's box for the block, as one tensor copy
// (TMA, described to the host by a tensor map) or one bulk copy of a contiguous piece.
#include "LoopChecker.h"
#include "clang/AST/Attr.h"
#include "llvm/ADT/StringExtras.h"

using namespace clang;

namespace tilepipe::check {

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
  // The element type must mean the same beside the kernel, where the launcher sizes the map's
  // elements with its text: a local `typedef float real_t;` is another type there, or none.
  if (const auto *TD = T.ElementType->getAsTagDecl(); TD && TD->getDeclContext()->isFunctionOrMethod())
    return No("the element type of " + quoted(T.Var) + " is declared in the kernel");
  for (const NameUse &U : namesIn(elementTypeLoc(T.Var)))
    if (U.Found != U.Decl || !U.Decl->getDeclContext()->getRedeclContext()->isFileContext())
      return No("the element type of " + quoted(T.Var) + " names " + quoted(U.Decl) +
                ", which the launcher beside the kernel would not find as the kernel does");
  if (std::string Why = tmaBoxLimit(T); !Why.empty())
    return No(Why);
  if (std::string Why = unevenStep(ASE->getIdx()); !Why.empty())
    return No(Why);
  if (FillStore) {
    // One tensor copy replaces the whole if, which may then hold no other tile's stores.
    if (FillStore->GuardIf && llvm::count_if(M.Stores, [&](const TileStore &O) {
                                return O.GuardIf == FillStore->GuardIf;
                              }) != 2)
      return No("the if that guards the copy into " + quoted(T.Var) + " guards other copies too");
    // The tensor map fills zero bits where the guard fails: the fill must be a zero of that kind.
    const Expr *F = FillStore->Fill;
    if (!isZeroBits(T, F))
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

/// Why the copy engine cannot move T's box in one tensor copy, or "": a box moves at most 256
/// elements per dimension (16-byte elements travel as two), in rows of whole 16-byte units.
std::string LoopChecker::tmaBoxLimit(const Tile &T) {
  const uint64_t Words = Ctx.getTypeSizeInChars(T.ElementType).getQuantity() == 16 ? 2 : 1;
  std::vector<uint64_t> Sizes;
  for (const ConstantArrayType *A = Ctx.getAsConstantArrayType(T.Var->getType()); A;
       A = Ctx.getAsConstantArrayType(A->getElementType()))
    Sizes.push_back(A->getSize().getZExtValue());
  if (!Sizes.empty() && (Sizes.back() * Words > 256 || llvm::any_of(Sizes, [](uint64_t E) { return E > 256; }))) {
    std::vector<std::string> Dims;
    for (uint64_t E : Sizes)
      Dims.push_back(std::to_string(E));
    return "the box of '" + T.Var->getNameAsString() + "' (" + llvm::join(Dims, " x ") +
           (Words == 2 ? " elements of 16 bytes" : " elements") +
           ") exceeds the 256 elements a tensor copy moves per dimension";
  }
  const uint64_t ElemBytes = Ctx.getTypeSizeInChars(T.ElementType).getQuantity();
  if (!Sizes.empty() && Sizes.back() * ElemBytes % 16 != 0)
    return "a row of the box of '" + T.Var->getNameAsString() + "' (" + std::to_string(Sizes.back()) + " x " +
           std::to_string(ElemBytes) + " bytes) is not a multiple of 16 bytes";
  return "";
}

/// Whether F, stored into T, is the value of all zero bits: an integer 0 or a floating +0.
bool LoopChecker::isZeroBits(const Tile &T, const Expr *F) {
  Expr::EvalResult Z;
  return T.ElementType->isArithmeticType() && !F->isValueDependent() && F->EvaluateAsRValue(Z, Ctx) &&
         ((Z.Val.isInt() && Z.Val.getInt().isZero()) || (Z.Val.isFloat() && Z.Val.getFloat().isPosZero()));
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
  for (const Expr *C : Conjuncts)
    if (!readGuardBound(B, C, G, Coords, Bounds, Why))
      return false;
  if (llvm::any_of(Bounds, [](const std::string &S) { return S.empty(); })) {
    Why = G + " does not bound every dimension of the box";
    return false;
  }
  B.Coordinates = Coords;
  B.Bounds = Bounds;
  return true;
}

/// One conjunct C of the guard G: `Coordinate < Bound` (or <=, or the mirror) for a dimension of
/// the box not bounded before, into Coords and Bounds; false with Why when it is not.
bool LoopChecker::readGuardBound(const TileBox &B, const Expr *C, const std::string &G,
                                 std::vector<std::string> &Coords,
                                 std::vector<std::string> &Bounds, std::string &Why) {
  const size_t Rank = B.ThreadDims.size();
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
  return true;
}

} // namespace tilepipe::check

// Tile boxes: the block-wide view of a per-thread copy. Where each thread copies one element,
// and the threads of the block together fill the tile as a box of the source, the whole tile can
// be copied at once (16-byte chunks over the block, or the copy engine: CopyEngine.cpp).
#include "LoopChecker.h"

using namespace clang;

namespace tilepipe::check {

void LoopChecker::analyzeBoxes() {
  for (size_t TI = 0; TI < M.Tiles.size(); ++TI)
    analyzeBox(TI);
}

/// Tile TI's box: the one store that fills it (and the fill of its guard), the thread index
/// behind each of its subscripts, and the source read as a box of rows in the same order.
void LoopChecker::analyzeBox(size_t TI) {
  TileBox &B = M.Tiles[TI].Box;
  auto No = [&](std::string Why) { B.WhyNot = std::move(Why); };
  std::vector<size_t> Mine;
  for (size_t I = 0; I < M.Stores.size(); ++I)
    if (M.Stores[I].TileIdx == TI)
      Mine.push_back(I);
  const std::string Name = quoted(M.Tiles[TI].Var);
  if (M.Tiles[TI].Dynamic)
    return No(Name + " is dynamic shared memory, whose size each launch sets");
  // Whole-tile copies count in elements of 4, 8 or 16 bytes, each aligned to its size.
  const QualType Elem = M.Tiles[TI].ElementType;
  const int64_t Size = Ctx.getTypeSizeInChars(Elem).getQuantity();
  if (Size != Ctx.getTypeAlignInChars(Elem).getQuantity())
    return No(Name + " holds elements of " + std::to_string(Size) + " bytes aligned to " +
              std::to_string(Ctx.getTypeAlignInChars(Elem).getQuantity()) +
              ", which whole-tile copies do not move: each is copied by the thread that stores it");
  const TileStore *FillStore = nullptr;
  for (size_t I : Mine)
    if (M.Stores[I].View)
      return No(Name + " is stored as vectors of " + std::to_string(M.Stores[I].Width) +
                " elements, each copied whole by the thread that stores it");
  if (!takeGuardedPair(Mine, B, Name, FillStore))
    return No("the copy into " + Name + " is guarded");
  if (Mine.size() != 1)
    return No("several stores fill " + Name);
  const TileStore &S = M.Stores[Mine.front()];
  B.Replaced = S.GuardIf ? static_cast<const Stmt *>(S.GuardIf) : S.Statement;
  if (!llvm::is_contained(M.CopyPhase, B.Replaced))
    return No("the copy into " + Name + " is inside an if or an inner loop");
  // The destination: one thread index per tile dimension, each a different one.
  const VarDecl *TV = nullptr;
  std::vector<const Expr *> DstIdx;
  (void)tileOfLValue(S.Dst, TV, DstIdx);
  std::vector<char> Dims;
  for (const Expr *I : DstIdx)
    if (char D = threadDim(I); D && !llvm::is_contained(Dims, D))
      Dims.push_back(D);
  if (Dims.size() != DstIdx.size())
    return No("the subscripts of '" + text(S.Dst) + "' are not distinct thread indices");
  if (S.Via)
    return No("the copy into " + quoted(M.Tiles[S.TileIdx].Var) + " reads through the local " + quoted(S.Via));
  const auto *ASE = dyn_cast<ArraySubscriptExpr>(stripNoOps(S.Src));
  if (!ASE)
    return No("'" + text(S.Src) + "' is not a subscript");
  B.Pointer = sourceText(Ctx, ASE->getBase()->getSourceRange());
  if (B.Pointer.empty() || mentionsThread(ASE->getBase()))
    return No("the pointer of '" + text(S.Src) + "' differs between threads");
  // The source index must be uniform + sum(uniform coefficient * thread index).
  const Expr *Idx = ASE->getIdx();
  std::map<char, Coef> Coefs;
  CoefExprs.clear();
  B.Index = sourceText(Ctx, Idx->getSourceRange());
  if (B.Index.empty() || !threadAffine(Idx, Coefs))
    return No("'" + text(Idx) + "' is not a uniform value plus uniform multiples of thread indices");
  // Every thread index of the destination selects a row of the source, the innermost a column.
  bool Match = Coefs.size() == Dims.size();
  for (char D : Dims)
    Match &= Coefs.count(D) > 0;
  if (!Match || Coefs[Dims.back()].Const != 1)
    return No("'" + text(S.Src) + "' does not read the rows of a box in the order of '" +
              text(S.Dst) + "'");
  B.Valid = true;
  B.Store = Mine.front();
  B.ThreadDims = Dims;
  for (char D : Dims)
    B.Coefficients.push_back(Coefs[D].Text);
  analyzeTma(M.Tiles[TI], FillStore);
  analyzeBulk(M.Tiles[TI]);
}

/// A guarded copy: one read where a single guard holds, one fill where it does not. Only a tensor
/// copy, which fills zeros outside the tensor, may move such a tile whole. When Mine (the stores
/// into the tile) are such a pair, the fill is taken out of Mine into FillStore and B is marked
/// guarded; false when some store is guarded or a fill but they are not such a pair.
bool LoopChecker::takeGuardedPair(std::vector<size_t> &Mine, TileBox &B, const std::string &Name,
                                  const TileStore *&FillStore) {
  if (llvm::none_of(Mine, [&](size_t I) {
        return !M.Stores[I].Src || M.Stores[I].Fill || M.Stores[I].Guards;
      }))
    return true;
  if (Mine.size() == 2 && M.Stores[Mine[1]].Src && !M.Stores[Mine[0]].Src)
    std::swap(Mine[0], Mine[1]);
  const TileStore *R = Mine.size() == 2 ? &M.Stores[Mine[0]] : nullptr;
  const TileStore *Z = Mine.size() == 2 ? &M.Stores[Mine[1]] : nullptr;
  if (!R || !R->Src || !Z->Fill || R->Guards != 1 || Z->Guards != 1 || R->Guard != Z->Guard ||
      R->GuardIf != Z->GuardIf || !R->WhenGuardHolds || Z->WhenGuardHolds)
    return false;
  FillStore = Z;
  B.Guarded = true; // never a block-wide 16-byte copy, which fills no zeros
  B.WhyNot = "the copy into " + Name + " is guarded";
  Mine.pop_back();
  return true;
}

} // namespace tilepipe::check

// Tile boxes: the block-wide view of a per-thread copy. Where each thread copies one element,
// and the threads of the block together fill the tile as a box of the source, the whole tile can
// be copied at once (16-byte chunks over the block, or the copy engine: CopyEngine.cpp).
#include "LoopChecker.h"

using namespace clang;

namespace tilepipe::check {

void LoopChecker::analyzeBoxes() {
  for (size_t TI = 0; TI < M.Tiles.size(); ++TI) {
    TileBox &B = M.Tiles[TI].Box;
    auto No = [&](std::string Why) { B.WhyNot = std::move(Why); };
    std::vector<size_t> Mine;
    for (size_t I = 0; I < M.Stores.size(); ++I)
      if (M.Stores[I].TileIdx == TI)
        Mine.push_back(I);
    const std::string Name = quoted(M.Tiles[TI].Var);
    // A guarded copy: one read where a single guard holds, one fill where it does not. Only a
    // tensor copy, which fills zeros outside the tensor, may move such a tile whole.
    const TileStore *FillStore = nullptr;
    if (llvm::any_of(Mine, [&](size_t I) { return !M.Stores[I].Src || M.Stores[I].Fill || M.Stores[I].Guards; })) {
      if (Mine.size() == 2 && M.Stores[Mine[1]].Src && !M.Stores[Mine[0]].Src)
        std::swap(Mine[0], Mine[1]);
      const TileStore *R = Mine.size() == 2 ? &M.Stores[Mine[0]] : nullptr;
      const TileStore *Z = Mine.size() == 2 ? &M.Stores[Mine[1]] : nullptr;
      if (!R || !R->Src || !Z->Fill || R->Guards != 1 || Z->Guards != 1 || R->Guard != Z->Guard ||
          R->GuardIf != Z->GuardIf || !R->WhenGuardHolds || Z->WhenGuardHolds) {
        No("the copy into " + Name + " is guarded");
        continue;
      }
      FillStore = Z;
      B.Guarded = true; // never a block-wide 16-byte copy, which fills no zeros
      B.WhyNot = "the copy into " + Name + " is guarded";
      Mine.pop_back();
    }
    if (Mine.size() != 1) {
      No("several stores fill " + Name);
      continue;
    }
    const TileStore &S = M.Stores[Mine.front()];
    B.Replaced = S.GuardIf ? static_cast<const Stmt *>(S.GuardIf) : S.Statement;
    if (!llvm::is_contained(M.CopyPhase, B.Replaced)) {
      No("the copy into " + Name + " is inside an if or an inner loop");
      continue;
    }
    // The destination: one thread index per tile dimension, each a different one.
    const VarDecl *TV = nullptr;
    std::vector<const Expr *> DstIdx;
    (void)tileOfLValue(S.Dst, TV, DstIdx);
    std::vector<char> Dims;
    for (const Expr *I : DstIdx)
      if (char D = threadDim(I); D && !llvm::is_contained(Dims, D))
        Dims.push_back(D);
    if (Dims.size() != DstIdx.size()) {
      No("the subscripts of '" + text(S.Dst) + "' are not distinct thread indices");
      continue;
    }
    const auto *ASE = dyn_cast<ArraySubscriptExpr>(stripNoOps(S.Src));
    if (!ASE) {
      No("'" + text(S.Src) + "' is not a subscript");
      continue;
    }
    B.Pointer = sourceText(Ctx, ASE->getBase()->getSourceRange());
    if (B.Pointer.empty() || mentionsThread(ASE->getBase())) {
      No("the pointer of '" + text(S.Src) + "' differs between threads");
      continue;
    }
    // The source index must be uniform + sum(uniform coefficient * thread index).
    const Expr *Idx = ASE->getIdx();
    std::map<char, Coef> Coefs;
    CoefExprs.clear();
    B.Index = sourceText(Ctx, Idx->getSourceRange());
    if (B.Index.empty() || !threadAffine(Idx, Coefs)) {
      No("'" + text(Idx) + "' is not a uniform value plus uniform multiples of thread indices");
      continue;
    }
    // Every thread index of the destination selects a row of the source, the innermost a column.
    bool Match = Coefs.size() == Dims.size();
    for (char D : Dims)
      Match &= Coefs.count(D) > 0;
    if (!Match || Coefs[Dims.back()].Const != 1) {
      No("'" + text(S.Src) + "' does not read the rows of a box in the order of '" + text(S.Dst) +
         "'");
      continue;
    }
    B.Valid = true;
    B.Store = Mine.front();
    B.ThreadDims = Dims;
    for (char D : Dims)
      B.Coefficients.push_back(Coefs[D].Text);
    analyzeTma(M.Tiles[TI], FillStore);
    analyzeBulk(M.Tiles[TI]);
  }
}

} // namespace tilepipe::check

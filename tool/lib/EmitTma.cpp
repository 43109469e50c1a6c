// Emit, the pipeline's copy-engine loop (sm_90): one thread issues each tile's copy, a tensor
// copy (TMA) through the tile's map or a bulk copy (cp.async.bulk), after a probe of the first
// tiles; the block takes the loop where the kernel was launched for it and has the tiles' shape.
#include "EmitPipeline.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace clang;

namespace tilepipe::emit {

namespace {

/// Head(Arg, ..., Last); in the issue lambda, two levels deeper than the loop body: on one line,
/// or Last under the first argument.
std::string engineCall(const std::string &Head, const std::vector<std::string> &Args, const std::string &Ind,
                       const std::string &Unit) {
  std::string Init = Head + "(" + llvm::join(ArrayRef(Args).drop_back(), ", ") + ",";
  std::string Text = Init + " " + Args.back() + ");";
  if (Ind.size() + 2 * Unit.size() + Text.size() > 100)
    Text = Init + "\n" + Ind + std::string(Head.size() + 1, ' ') + Args.back() + ");";
  return Text;
}

} // namespace

/// The copy phase of the tensor-copy loop, run by the leader: each tile's copy (its one store, or
/// the guarded pair of read and zero fill) becomes one call that issues the tile's copy. In the
/// probe of the first tiles, it becomes a test: that the tile starts on 16 bytes; for a guarded
/// copy, that its index is its coordinates' place in the map, which are not negative.
llvm::Error PipelineEmitter::engineEdits() {
  for (size_t I = 0; I < M.Stores.size(); ++I) {
    const TileStore &S = M.Stores[I];
    const TileBox &B = M.Tiles[S.TileIdx].Box;
    if (B.Store != I && !(B.Guarded && (S.Statement == B.Replaced || S.GuardIf == B.Replaced)))
      return fail("a tile with a tensor copy has a second store");
  }
  const std::string &Unit = Cut.Unit;
  for (const Tile &T : M.Tiles) {
    const TileBox &Box = T.Box;
    const std::string V = T.Var->getName().str();
    unsigned B = F.begin(Box.Replaced), Len = F.afterSemi(Box.Replaced) - B;
    std::string First = "(long long)(" + Box.Index + ")";
    std::string Ind = F.indentOf(B);
    std::string Bar = Bars + "[" + FetchStage + "]";
    // The probe sits one level deeper than the loop body.
    auto Test = [&](const std::string &Call) {
      std::string Head = AlignedVar + " = " + AlignedVar + " &&";
      return Ind.size() + Unit.size() + Head.size() + Call.size() + 1 > 100
                 ? Head + "\n" + Ind + std::string(AlignedVar.size() + 3, ' ') + Call
                 : Head + " " + Call;
    };
    const std::string &Map = planOf(T).MapName;
    if (Box.Guarded) {
      std::string Row = Box.Coordinates.size() == 2 ? Box.Coordinates[0] : "0";
      TmaEdits.emplace_back(
          B, Len, mark(engineCall("::tilepipe_rt::copy_box", {Map, V, Row, Box.Coordinates.back(), Bar}, Ind, Unit)));
      std::string Tracker = Names.get(V + "_probe");
      ProbeState.push_back(mark("::tilepipe_rt::BoxProbe " + Tracker + ";"));
      ProbeEdits.emplace_back(B, Len,
                              mark(Test(Tracker + ".fits(" + Map + ", " + Box.Pointer + ", " + First + ", " + Row +
                                        ", " + Box.Coordinates.back() + ");")));
    } else {
      TmaEdits.emplace_back(B, Len,
                            mark(planOf(T).Kind == CopyKind::Bulk
                                     ? engineCall("::tilepipe_rt::bulk_copy", {V, Box.Pointer, First, Bar}, Ind, Unit)
                                     : engineCall("::tilepipe_rt::copy_tile", {Map, V, Box.Pointer, First, Bar}, Ind,
                                                  Unit)));
      ProbeEdits.emplace_back(B, Len, mark(Test("::tilepipe_rt::starts_on_16(" + Box.Pointer + ", " + First + ");")));
    }
    // Every tile of the loop comes whole, once per tile: the barrier expects all their bytes.
    TileBytes += (TileBytes.empty() ? "" : " + ") + ("sizeof(" + V + ")");
  }
  return llvm::Error::success();
}

/// Launch-uniform: the kernel got maps for this loop's tiles, and the block has their shape. Bulk
/// copies need neither: only the block's shape.
std::string PipelineEmitter::engineLaunch() const {
  std::vector<std::string> Launch;
  if (!Plan.TmaFlag.empty())
    Launch.push_back(Plan.TmaFlag);
  std::vector<std::string> Shapes;
  for (const Tile &T : M.Tiles) {
    std::string V = StageArray.at(T.Var) + "[0]";
    if (planOf(T).Kind != CopyKind::Bulk)
      Launch.push_back("::tilepipe_rt::takes(" + planOf(T).MapName + ", " + V + (T.Box.Guarded ? ", true)" : ")"));
    for (const std::string &Cond : blockHasShape(V, T.Box.ThreadDims))
      if (!llvm::is_contained(Shapes, Cond))
        Shapes.push_back(Cond);
  }
  Launch.insert(Launch.end(), Shapes.begin(), Shapes.end());
  return llvm::join(Launch, " &&\n    ");
}

/// The copy-engine loop and what the dispatch section says of it.
llvm::Error PipelineEmitter::addEngineLoop(std::map<std::string, std::string> &Inline,
                                           std::map<std::string, Lines> &Blocks) const {
  const std::string &Unit = Cut.Unit;
  Inline["tma_launch"] = engineLaunch();
  bool AnyBulk = llvm::any_of(M.Tiles, [&](const Tile &T) { return planOf(T).Kind == CopyKind::Bulk; });
  bool AnyTensor = llvm::any_of(M.Tiles, [&](const Tile &T) { return planOf(T).Kind != CopyKind::Bulk; });
  if (AnyTensor && Plan.TmaFlag.empty())
    return fail("a tile with a tensor copy in a loop without the launch flag");
  // What the leader's probe of the first two tiles decides; the guarded clause only where a tile is.
  std::string Engine = AnyBulk ? AnyTensor ? "Tensor and bulk copies" : "Bulk copies" : "Tensor copies";
  Blocks["probe_comment"] =
      llvm::any_of(M.Tiles, [](const Tile &T) { return T.Box.Guarded; })
          ? Lines{"// " + Engine + " where the first two tiles start on 16 bytes and, for a guarded copy,",
                  "// where the index is the place of its coordinates in the map (so do all, where the indices step",
                  "// evenly); else this block copies by cp.async."}
          : Lines{"// " + Engine + " where the first two tiles start on 16 bytes (so do all, where the indices",
                  "// step evenly); else this block copies by cp.async."};
  Inline["how"] = !AnyBulk    ? "launched with tensor maps: one tensor copy (TMA) per tile"
                  : AnyTensor ? "launched with tensor maps: one tensor copy (TMA) or bulk copy\n// "
                                "(cp.async.bulk) per tile"
                              : "however launched: one bulk copy (cp.async.bulk) per tile";
  Blocks["invalidate"] =
      M.NestedInLoop ? mark(Lines{"if (" + Leader + ") // set up again when this block runs again",
                                  Unit + "for (int " + StageVar + " = 0; " + StageVar + " < " +
                                      std::to_string(Stages) + "; ++" + StageVar + ")",
                                  Unit + Unit + "::tilepipe_rt::drop_barrier(" + Bars + "[" + StageVar + "]);"})
                     : Lines{};
  auto TmaLoopLines = renderSection("tma_loop", Inline, Blocks);
  if (!TmaLoopLines)
    return TmaLoopLines.takeError();
  Blocks["tma_loop"] = std::move(*TmaLoopLines);
  return llvm::Error::success();
}

} // namespace tilepipe::emit

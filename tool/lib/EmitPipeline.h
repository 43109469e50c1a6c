// Emit, the cp.async and copy-engine pipeline: the steps of one loop's emission and what they
// share. Internal to Emit: Emit.cpp takes the steps in order and renders templates/pipeline.cu.in,
// EmitCopies.cpp writes the cp.async copies (per element, and the block-wide 16-byte copy), and
// EmitTma.cpp the copy-engine loop's tensor and bulk copies, EmitDynamic.cpp the stages in dynamic
// shared memory and their launcher.
#pragma once
#include "EmitLoop.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/Error.h"
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace tilepipe::emit {

using clang::tooling::Replacement;

/// An edit of the file's text: offset, length, new text (editSpan).
using Edit = std::tuple<unsigned, unsigned, std::string>;

/// The block has the shape of the tile V (an expression of its array type) whose dimensions the
/// thread indices ThreadDims select: `blockDim.y == sizeof(V) / sizeof(V[0])`, ...
std::vector<std::string> blockHasShape(const std::string &V, const std::vector<char> &ThreadDims);

/// The launcher of a kernel whose stages lie in dynamic shared memory (EmitDynamic.cpp).
std::string emitDynamicLauncher(const LauncherParts &P);

/// The plan does not fit the loop, or Emit cannot write it: the loop is left alone with reason
/// unsupported.
llvm::Error fail(const llvm::Twine &Why);

/// One loop's cp.async (and copy-engine) pipeline, or its compute-only variant, step by step: what
/// the steps share (the file's text, the loop's cut, the fresh names, the model and the plan) and
/// what each leaves for the next (the edits of the copy phase, whether a tile takes the wide copy).
class PipelineEmitter {
public:
  PipelineEmitter(const FileText &F, const LoopCut &Cut, const LoopModel &M, const LoopPlan &Plan,
                  bool Pipelined);
  PipelineEmitter(const PipelineEmitter &) = delete;
  PipelineEmitter &operator=(const PipelineEmitter &) = delete;

  llvm::Expected<std::vector<Replacement>> emit();

private:
  const FileText &F;
  const LoopCut &Cut;
  const LoopModel &M;
  const LoopPlan &Plan;
  const bool Pipelined;
  /// The loop's copy-engine path: every tile one bulk copy, or one tensor copy through its map.
  const bool TmaLoop;
  const unsigned Stages;
  Namer Names;
  std::string Pipe, FetchStage, Stage, Issue, Prologue;
  std::map<const VarDecl *, std::string> StageArray, Cursor;
  /// A store that fills a whole tile (its box is known) gets the block-wide 16-byte copy, with the
  /// per-element copy kept for blocks of another shape and unaligned addresses.
  std::string Rank, Threads;
  bool AnyWide = false;
  /// Tensor copies replace the whole cp.async loop, and only where every tile takes them.
  std::string Bars, Leader, TileBytes, Parities, StageVar, TensorCopies, AlignedVar, Probe;
  /// The edits of the copy phase: the cp.async copies', the copy-engine loop's and its probe's.
  std::vector<Edit> Edits, TmaEdits, ProbeEdits;
  Lines ProbeState;

  /// How the plan copies a tile of M.
  const TilePlan &planOf(const Tile &T) const { return Plan.Tiles[&T - M.Tiles.data()]; }
  /// Whether a store copies a vector into T: its stage array must start each stage on 16 bytes,
  /// as Check proved the vectors do in the tile (checkView).
  bool storesVectors(const Tile &T) const {
    return llvm::any_of(M.Stores, [&](const TileStore &S) { return S.View && &M.Tiles[S.TileIdx] == &T; });
  }
  /// The stage array of variable V, or "" where V is not a tile.
  std::string stageArrayOf(const VarDecl *V) const {
    auto It = StageArray.find(V);
    return It == StageArray.end() ? "" : It->second;
  }
  std::string copyCall(const TileStore &S, const std::string &Extra = "") const;
  Lines wideBaseDecl(const TileBox &B, const std::string &IT, const std::string &Base, const TileStore &S) const;
  std::string wideFits(const Tile &T, const std::string &Base, const std::string &Ind) const;
  Lines perElementCopy(const TileBox &B, const TileStore &S) const;
  llvm::Expected<std::string> wideCall(const Tile &T, const TileStore &S);
  llvm::Error engineEdits();
  std::string pairCopy(const TileStore &S, const TileStore &S2) const;
  llvm::Error copyEdits();
  Lines copyPhase(const std::vector<Edit> &Phase) const;
  llvm::Error checkCuts(const SourceTokens &Toks) const;
  Lines hoistedTiles() const;
  Lines views(const std::string &StageIndex) const;
  std::map<std::string, std::string> inlineValues() const;
  std::map<std::string, Lines> blocks() const;
  llvm::Expected<Lines> renderSection(StringRef Name, const std::map<std::string, std::string> &Inline,
                                      const std::map<std::string, Lines> &Blocks) const;
  std::string engineLaunch() const;
  llvm::Error addEngineLoop(std::map<std::string, std::string> &Inline, std::map<std::string, Lines> &Blocks) const;
  llvm::Expected<std::string> renderLoop() const;
  /// The loop as it was stands beside the pipeline (below compute capability 8.0, or for launches
  /// that fill the GPU): keepOriginal writes it, and the cut must let the whole loop move.
  bool keepsOriginal() const {
    return Pipelined && (Plan.ArchGuard || Plan.SmallLaunches || !Plan.TemplateGuard.empty());
  }
  llvm::Error keepOriginal(std::string &NewText, unsigned &ReplaceFrom, unsigned &ReplaceTo,
                           const SourceTokens &Toks) const;
  void tileDeclEdits(std::vector<Replacement> &Out) const;
  /// The tiles' declarations as stage arrays in dynamic shared memory (LoopPlan::DynamicStages).
  llvm::Error dynamicTileDecls(std::vector<Replacement> &Out) const;
  std::string DynamicSmem, LiveStages; ///< the names the dynamic stages take
};

} // namespace tilepipe::emit

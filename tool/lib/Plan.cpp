// Plan (Plan.h): from the models of one loop's instantiations to what the rewrite does (LoopPlan):
// the stages that fit (planStages, sharedBytesBound), each tile's copy (planCpAsync, planEngine),
// the register-staged prefetch and its depth, the cost model's keep (planKeep, predictNoGain), the
// choices tuning measures (enumeratePlans, choiceProblem) and the remark's words (describePlan).
// About 620 lines: the plan kinds share the checks of what each tile allows, read in one place.
#include "tilepipe/Plan.h"
#include "clang/AST/ASTContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include <algorithm>

namespace tilepipe {

uint64_t sharedBytesBound(llvm::ArrayRef<SharedVar> Vars) {
  uint64_t G = 128, Sum = 0;
  for (const SharedVar &V : Vars) {
    Sum += V.Bytes;
    while (G > 1 && V.Bytes % G != 0)
      G /= 2;
  }
  for (const SharedVar &V : Vars)
    if (V.Align > G)
      Sum += V.Align - G;
  return Sum;
}

std::vector<SharedVar> withStages(llvm::ArrayRef<SharedVar> Other, llvm::ArrayRef<uint64_t> Tiles,
                                  unsigned Stages) {
  std::vector<SharedVar> Vars(Other.begin(), Other.end());
  for (uint64_t B : Tiles)
    Vars.push_back(Stages > 1 ? SharedVar{nullptr, B * Stages, StageArrayAlign} : SharedVar{nullptr, B, 16});
  return Vars;
}

std::vector<std::optional<unsigned>> planStages(llvm::ArrayRef<std::vector<uint64_t>> TileBytes,
                                                llvm::ArrayRef<SharedVar> Other,
                                                llvm::ArrayRef<unsigned> Requested) {
  std::vector<std::optional<unsigned>> Stages(Requested.begin(), Requested.end());
  auto Total = [&] {
    std::vector<SharedVar> Vars(Other.begin(), Other.end());
    for (size_t I = 0; I < TileBytes.size(); ++I)
      Vars = withStages(Vars, TileBytes[I], Stages[I].value_or(1));
    return sharedBytesBound(Vars);
  };
  auto LoopBytes = [&](size_t I) {
    uint64_t Sum = 0;
    for (uint64_t B : TileBytes[I])
      Sum += B;
    return Sum;
  };
  while (Total() > StaticSharedLimit) {
    // Lower the loop whose extra stage costs the most; drop it to one buffer below two stages.
    size_t Pick = TileBytes.size();
    for (size_t I = 0; I < TileBytes.size(); ++I)
      if (Stages[I] && *Stages[I] > 1 && (Pick == TileBytes.size() || LoopBytes(I) > LoopBytes(Pick)))
        Pick = I;
    if (Pick == TileBytes.size())
      break; // nothing left to lower: the function did not fit before the rewrite either
    if (*Stages[Pick] > 2)
      --*Stages[Pick];
    else
      Stages[Pick].reset();
  }
  return Stages;
}

llvm::StringRef copyKindName(CopyKind K) {
  switch (K) {
  case CopyKind::PerElement:
    return "per-element";
  case CopyKind::Chunks16:
    return "16-byte";
  case CopyKind::Tensor:
    return "tensor";
  case CopyKind::Bulk:
    return "bulk";
  case CopyKind::Registers:
    return "registers";
  }
  return "per-element";
}

PlanChoice LoopPlan::choice() const {
  PlanChoice C;
  C.Keep = Keep.has_value();
  C.Stages = Stages;
  if (Registers && !C.Keep)
    return PlanChoice::registers(Stages);
  C.Copy = Engine ? PlanChoice::Engine
           : llvm::any_of(Tiles, [](const TilePlan &T) { return T.CpAsync == CopyKind::Chunks16; })
               ? PlanChoice::Chunks16
               : PlanChoice::PerElement;
  return C;
}

LoopPlan LoopPlan::perElementOnly() const {
  LoopPlan P = *this;
  P.Engine = false;
  for (TilePlan &T : P.Tiles) {
    if (T.BlockWide)
      T.WhyPerElement = "the instantiations of the template disagree on the block-wide copy";
    T.BlockWide = false;
    T.Kind = T.CpAsync = CopyKind::PerElement;
    T.MapName.clear();
  }
  return P;
}

namespace {

uint64_t stageBytes(const LoopModel &M) {
  uint64_t Sum = 0;
  for (const Tile &T : M.Tiles)
    Sum += T.Bytes;
  return Sum;
}

/// TilePlan::VectorBytes of tile T.
static unsigned vectorBytes(llvm::ArrayRef<const LoopModel *> Is, size_t T) {
  uint64_t Bytes = 0;
  for (const LoopModel *M : Is)
    for (const TileStore &S : M->Stores) {
      if (S.TileIdx != T)
        continue;
      if (!S.View)
        return 0;
      uint64_t B = M->Function->getASTContext().getTypeSizeInChars(S.View->getType()->getPointeeType()).getQuantity();
      if (Bytes && B != Bytes)
        return 0;
      Bytes = B;
    }
  return static_cast<unsigned>(Bytes);
}

/// Tiles of every instantiation block-wide only where each allows it: the first instantiation
/// that cannot says why for all.
void planCpAsync(llvm::ArrayRef<const LoopModel *> Is, LoopPlan &P) {
  const LoopModel &M0 = *Is.front();
  for (size_t T = 0; T < M0.Tiles.size(); ++T) {
    TilePlan &TP = P.Tiles[T];
    TP.BlockWide = true;
    TP.WhyPerElement = M0.Tiles[T].Box.WhyNot;
    bool Guarded = false;
    for (const LoopModel *M : Is) {
      if (T >= M->Tiles.size())
        continue;
      Guarded |= M->Tiles[T].Box.Guarded;
      if (TP.BlockWide && !M->Tiles[T].Box.Valid) {
        TP.BlockWide = false;
        TP.WhyPerElement = M->Tiles[T].Box.WhyNot;
      }
    }
    // A guarded copy fills zeros, which the 16-byte chunks do not: only a tensor copy moves it whole.
    TP.Kind = TP.CpAsync = TP.BlockWide && !Guarded ? CopyKind::Chunks16 : CopyKind::PerElement;
    TP.VectorBytes = vectorBytes(Is, T);
  }
}

/// The copy engine's path (sm_90): per tile, a bulk copy (a contiguous tile: no map, no host
/// change) or a tensor copy (the kernel takes the tile's map). The loop replaces its cp.async loop
/// whole, so every tile of the loop takes one, in every instantiation, or the loop has no such
/// path; then each tile says why.
/// Returns why the loop has no such path, or "". CostBlockers: also the thresholds of the cost
/// model (stage bytes, tiles of three dimensions), which a measured choice overrides.
std::string planEngine(llvm::ArrayRef<const LoopModel *> Is, const PlanInputs &In, LoopPlan &P,
                       bool CostBlockers) {
  const LoopModel &M0 = *Is.front();
  const std::vector<Tile> &Tiles0 = M0.Tiles;
  P.KernelProblem = In.KernelProblem;
  // Why a tile itself takes no copy of the engine: for a contiguous tile (one dimension,
  // unguarded), why no bulk copy moves it; else why no tensor copy does.
  auto OwnWhyNot = [](const TileBox &B) {
    return B.ThreadDims.size() == 1 && !B.Guarded ? B.BulkWhyNot : B.TmaWhyNot;
  };
  std::string Blocker;
  // The copy engine's barriers and 128-byte-aligned stages are static; dynamic shared memory
  // starts on 16 bytes only.
  if (In.DynamicStages)
    Blocker = "the stages lie in dynamic shared memory, where the copy engine's alignment is not given";
  std::vector<bool> Bulk(Tiles0.size(), true);
  for (size_t T = 0; T < Tiles0.size() && Blocker.empty(); ++T) {
    const TilePlan &TP = P.Tiles[T];
    for (const LoopModel *M : Is) {
      if (T >= M->Tiles.size() || M->Tiles.size() != Tiles0.size()) {
        Blocker = "the instantiations differ in their tiles";
        break;
      }
      const TileBox &B = M->Tiles[T].Box;
      Bulk[T] = Bulk[T] && TP.BlockWide && B.Bulk && In.InMainFile;
    }
    if (Bulk[T] || !Blocker.empty())
      continue;
    for (const LoopModel *M : Is) {
      const TileBox &B = M->Tiles[T].Box;
      std::string Why = !TP.BlockWide ? (!B.Valid ? B.WhyNot : TP.WhyPerElement)
                        : B.Tma       ? In.KernelProblem
                        : B.Bulk      ? (!In.InMainFile ? "the loop is in a header" : B.TmaWhyNot)
                                      : OwnWhyNot(B);
      if (Why.empty() && (!TP.BlockWide || !B.Tma))
        Why = "no tensor copy moves it";
      if (!Why.empty()) {
        Blocker = "copies by the copy engine take every tile of a loop or none, and '" +
                  Tiles0[T].Var->getNameAsString() + "' cannot take one (" + Why + ")";
        if (Is.size() > 1)
          Blocker += " in some instantiation";
        break;
      }
    }
  }
  // One copy per tile pays only for stages big enough to hide its fixed cost.
  if (Blocker.empty() && CostBlockers)
    for (const LoopModel *M : Is)
      if (uint64_t Bytes = stageBytes(*M); Bytes < In.TmaMinStageBytes) {
        Blocker = "a stage holds " + std::to_string(Bytes) + " bytes, below --tma-min-stage-bytes=" +
                  std::to_string(In.TmaMinStageBytes);
        if (Is.size() > 1)
          Blocker += " in some instantiation";
        break;
      }
  // Tensor copies of three dimensions measured slower than the 16-byte cp.async copies.
  if (Blocker.empty() && CostBlockers && !In.TmaThreeDimensions)
    for (size_t T = 0; T < Tiles0.size() && Blocker.empty(); ++T)
      if (P.Tiles[T].BlockWide && Tiles0[T].Box.ThreadDims.size() == 3)
        Blocker = "'" + Tiles0[T].Var->getNameAsString() +
                  "' has three dimensions, whose tensor copies measured slower than the 16-byte "
                  "cp.async copies (--tma-3d-tiles takes them)";
  // The stages were planned without the engine's barriers, one per stage. Where they do not fit
  // beside them in the function's static shared memory, the model's plan takes one stage fewer
  // for the engine, as it did before cp.async loops were given the full 48 KiB; a measured plan,
  // whose stages are what was measured, keeps its cp.async copies.
  auto BarriersFit = [&](unsigned Stages) {
    for (size_t I = 0; I < Is.size(); ++I) {
      if (I >= In.SharedBeside.size())
        return false;
      std::vector<SharedVar> Vars = withStages(In.SharedBeside[I], tileBytes(*Is[I]), Stages);
      Vars.push_back({nullptr, EngineBarrierBytes * Stages, EngineBarrierBytes});
      if (sharedBytesBound(Vars) > StaticSharedLimit)
        return false;
    }
    return true;
  };
  if (Blocker.empty() && !BarriersFit(P.Stages)) {
    if (CostBlockers && P.Stages > 2 && BarriersFit(P.Stages - 1)) {
      P.StageNote = std::to_string(P.Stages) + " stages fit in 48 KiB of static shared memory, " +
                    std::to_string(P.Stages - 1) + " beside the copy engine's barriers";
      --P.Stages;
    } else {
      Blocker = "the copy engine's barriers (" + std::to_string(EngineBarrierBytes * P.Stages) +
                " bytes) do not fit beside " + std::to_string(P.Stages) +
                " stages in 48 KiB of static shared memory";
    }
  }
  if (Blocker.empty())
    P.Engine = true;
  for (size_t T = 0; T < Tiles0.size(); ++T) {
    TilePlan &TP = P.Tiles[T];
    const TileBox &B = Tiles0[T].Box;
    if (P.Engine) {
      TP.Kind = Bulk[T] ? CopyKind::Bulk : CopyKind::Tensor;
    } else if (B.Tma || B.Bulk) {
      TP.WhyNoEngine = Blocker; // the tile itself could take one
    } else {
      TP.WhyNoEngine = OwnWhyNot(B);
    }
  }
  return Blocker;
}

/// The register-staged prefetch, Depth tiles ahead: one buffer, plain loads and stores that every
/// device takes (no guard for older ones); Why says who chose it, for the remark.
void planRegisters(LoopPlan &P, std::string Why, unsigned Depth) {
  P.Registers = true;
  P.Stages = Depth;
  P.ArchGuard = false;
  P.Engine = false;
  P.StageNote = std::move(Why);
  for (TilePlan &T : P.Tiles) {
    T.Kind = T.CpAsync = CopyKind::Registers;
    T.MapName.clear();
  }
}

} // namespace

unsigned modelRegisterDepth(llvm::ArrayRef<const LoopModel *> Is) {
  uint64_t Words = 1;
  for (const LoopModel *M : Is) {
    uint64_t W = 0;
    for (size_t I = 0; I < M->Stores.size(); ++I) {
      const TileStore &S = M->Stores[I];
      bool Pair = I + 1 < M->Stores.size() && M->Stores[I + 1].Statement == S.Statement;
      if (!S.Src && !Pair)
        continue; // a fill: no register
      const Tile &T = M->Tiles[S.TileIdx];
      uint64_t Bytes = M->Function->getASTContext().getTypeSizeInChars(T.ElementType).getQuantity() * S.Width;
      W += (Bytes + 3) / 4;
      if (Pair)
        ++I;
    }
    Words = std::max(Words, W);
  }
  return static_cast<unsigned>(std::clamp<uint64_t>(RegisterDepthBudgetWords / Words, 1, MaxRegisterDepth));
}

namespace {

/// The cost model: a loop it predicts no faster stays as it was.
void planKeep(llvm::ArrayRef<const LoopModel *> Is, const PlanInputs &In, LoopPlan &P) {
  if (In.Policy != PlanPolicy::Model)
    return;
  PlanFeatures F;
  F.EngineCopies = P.Engine;
  for (size_t T = 0; T < P.Tiles.size() && F.PerElementTile.empty(); ++T)
    // A tile stored wholly in 16-byte vectors is copied by 16-byte cp.async, the instruction of
    // the block-wide chunks, in the access pattern of the original's own vector loads (on the
    // H100, testdata/vector_stores.cu's sgemm_vec_both ran 1.29x so, docs/gpu-record.md).
    if (P.Tiles[T].CpAsync != CopyKind::Chunks16 && P.Tiles[T].VectorBytes != 16)
      F.PerElementTile = Is.front()->Tiles[T].Var->getNameAsString();
  // One text serves every instantiation: the smallest one's stages decide, as they do for
  // tensor copies (planEngine). Decided from the largest, a public matrix multiply templated over
  // its block size ran 0.65x at 8 x 8 (and 0.94x, 0.91x at 16 x 16 and 32 x 32).
  F.StageBytes = UINT64_MAX;
  for (const LoopModel *M : Is) {
    F.StageBytes = std::min(F.StageBytes, stageBytes(*M));
    F.LargestStageBytes = std::max(F.LargestStageBytes, stageBytes(*M));
  }
  std::string Why = predictNoGain(F, In.ModelMinStageBytes);
  if (Why.empty())
    return;
  // Where a pipeline would not pay, the register-staged prefetch adds no shared memory: on the
  // H200 it ran 1.00x to 1.04x in the 9 testdata kernels (10 loops) where the model kept the loop
  // and it is legal (geomean 1.016x, docs/benchmark/2026-12-02-h200-registers-sweep.md), so the
  // model takes it where it is legal; 4 tiles ahead those loops ran 0.99x to 1.45x
  // (docs/benchmark/2026-12-03-h200-deeper-registers.md), so it loads as far ahead as its
  // registers allow (modelRegisterDepth).
  if (registersProblem(Is).empty()) {
    unsigned Depth = modelRegisterDepth(Is);
    planRegisters(P, "planned by the cost model: a cp.async pipeline would not pay here (" + Why +
                         "), and the register-staged prefetch adds no shared memory; " +
                         std::to_string(Depth) + (Depth == 1 ? " tile" : " tiles") + " ahead (at most " +
                         std::to_string(MaxRegisterDepth) + ", as many as sets of registers within " +
                         std::to_string(RegisterDepthBudgetWords) + " words per thread allow)",
                  Depth);
    return;
  }
  // Where neither pays in a full launch, a launch too small to fill the GPU still gains from a
  // pipeline (its latency is not hidden by other blocks): two stages for those launches, the loop
  // as it was for the rest. Only where the second stage adds little shared memory, which the full
  // launches carry too.
  if (uint64_t Extra = F.LargestStageBytes + StageOverheadBytes;
      Extra <= SmallLaunchMaxExtraBytes && In.Stages >= 2) {
    P.SmallLaunches = true;
    P.SmallLaunchWhy = Why;
    P.Stages = 2;
    P.StageNote.clear();
    return;
  }
  P.Keep = Why;
}

} // namespace

static LoopPlan planWithin(llvm::ArrayRef<const LoopModel *> Is, const PlanInputs &In);

LoopPlan planLoop(llvm::ArrayRef<const LoopModel *> Is, const PlanInputs &In) {
  LoopPlan P = planWithin(Is, In);
  // The register-staged prefetch keeps the loop's one buffer where it was.
  P.DynamicStages = In.DynamicStages && !P.Keep && !P.Registers;
  return P;
}

/// planLoop, but for where the stages lie.
static LoopPlan planWithin(llvm::ArrayRef<const LoopModel *> Is, const PlanInputs &In) {
  LoopPlan P;
  P.Source = In.Forced ? "tuned" : In.Policy == PlanPolicy::Always ? "always" : "model";
  P.Stages = In.Forced && !In.Forced->Keep ? In.Forced->Stages : In.Stages;
  P.StageNote = In.Forced ? "" : In.StageNote;
  P.ArchGuard = In.Mode == CopyMode::Auto;
  P.Tiles.resize(Is.front()->Tiles.size());
  planCpAsync(Is, P);
  // A tile cp.async cannot move leaves the register-staged prefetch (rewriteLoop has refused the
  // loop where that cannot take it either), as deep as the cost model's registers allow.
  if (std::string Why = asyncProblem(Is); !Why.empty() && (!In.Forced || In.Forced->Keep == false)) {
    if (In.Forced && In.Forced->Copy == PlanChoice::Registers) {
      planRegisters(P, "", In.Forced->Stages);
      return P;
    }
    const unsigned Depth = modelRegisterDepth(Is);
    planRegisters(P, "the one plan for this loop: " + Why + "; " +
                         std::to_string(Depth) + (Depth == 1 ? " tile" : " tiles") + " ahead (at most " +
                         std::to_string(MaxRegisterDepth) + ", as many as sets of registers within " +
                         std::to_string(RegisterDepthBudgetWords) + " words per thread allow)",
                  Depth);
    return P;
  }
  if (!In.Forced) {
    if (In.Mode != CopyMode::Pipeline)
      planEngine(Is, In, P, /*CostBlockers=*/true);
    planKeep(Is, In, P);
    return P;
  }
  const PlanChoice &C = *In.Forced;
  if (C.Keep) {
    P.Keep = "kept: the tuning file measured no plan faster than the original on this GPU";
    return P;
  }
  if (C.Copy == PlanChoice::Registers) {
    planRegisters(P, "", C.Stages);
    return P;
  }
  if (C.Copy == PlanChoice::Engine) {
    planEngine(Is, In, P, /*CostBlockers=*/false);
    return P;
  }
  for (TilePlan &T : P.Tiles) {
    T.WhyNoEngine = "the tuning file chose cp.async copies";
    if (C.Copy == PlanChoice::PerElement && T.CpAsync == CopyKind::Chunks16) {
      T.Kind = T.CpAsync = CopyKind::PerElement;
      T.WhyPerElement = "the tuning file chose per-element copies";
    }
  }
  return P;
}

std::string PlanChoice::str() const {
  if (Keep)
    return "keep";
  if (Copy == Registers)
    return Stages == 1 ? "registers" : std::to_string(Stages) + ":registers";
  const char *Kind = Copy == PerElement ? "per-element" : Copy == Chunks16 ? "16-byte" : "engine";
  return std::to_string(Stages) + ":" + Kind;
}

std::optional<PlanChoice> PlanChoice::parse(llvm::StringRef S) {
  PlanChoice C;
  if (S == "keep") {
    C.Keep = true;
    return C;
  }
  if (S == "registers")
    return registers();
  auto [Count, Kind] = S.split(':');
  if (Count.getAsInteger(10, C.Stages))
    return std::nullopt;
  if (Kind == "registers") {
    if (C.Stages < 1 || C.Stages > MaxRegisterDepth)
      return std::nullopt;
    return registers(C.Stages);
  }
  if (C.Stages < 2 || C.Stages > 16)
    return std::nullopt;
  if (Kind == "per-element")
    C.Copy = PerElement;
  else if (Kind == "16-byte")
    C.Copy = Chunks16;
  else if (Kind == "engine")
    C.Copy = Engine;
  else
    return std::nullopt;
  return C;
}

std::string registersProblem(llvm::ArrayRef<const LoopModel *> Is) {
  for (const LoopModel *M : Is)
    for (const TileStore &S : M->Stores)
      if (S.InInnerLoop)
        return "a store into '" + M->Tiles[S.TileIdx].Var->getNameAsString() +
               "' is in an inner copy loop, which may run it several times a tile: one register "
               "cannot hold what it stores";
  return "";
}

std::string asyncProblem(llvm::ArrayRef<const LoopModel *> Is) {
  for (const LoopModel *M : Is)
    for (const Tile &T : M->Tiles)
      if (!T.AsyncProblem.empty())
        return T.Dynamic ? T.AsyncProblem : "cp.async moves 4, 8 or 16 bytes, and " + T.AsyncProblem;
  return "";
}

std::string choiceProblem(llvm::ArrayRef<const LoopModel *> Is, const PlanInputs &In,
                          const PlanChoice &C) {
  if (C.Keep)
    return "";
  if (C.Copy == PlanChoice::Registers)
    return C.Stages < 1 || C.Stages > MaxRegisterDepth
               ? "a register-staged prefetch loads 1 to " + std::to_string(MaxRegisterDepth) + " tiles ahead"
               : registersProblem(Is);
  if (std::string Why = asyncProblem(Is); !Why.empty())
    return Why;
  if (C.Stages < 2)
    return "a pipeline needs two stages or more";
  LoopPlan P;
  P.Stages = C.Stages;
  P.Tiles.resize(Is.front()->Tiles.size());
  planCpAsync(Is, P);
  switch (C.Copy) {
  case PlanChoice::PerElement:
    return "";
  case PlanChoice::Chunks16:
    if (llvm::none_of(P.Tiles, [](const TilePlan &T) { return T.CpAsync == CopyKind::Chunks16; }))
      return "no tile of the loop can be copied in 16-byte chunks";
    return "";
  case PlanChoice::Registers:
    return registersProblem(Is);
  case PlanChoice::Engine: {
    if (In.Mode == CopyMode::Pipeline)
      return "copies of the copy engine need --mode=tma or --mode=auto";
    std::string Blocker = planEngine(Is, In, P, /*CostBlockers=*/false);
    return P.Engine ? "" : Blocker;
  }
  }
  return "";
}

std::vector<PlanChoice> enumeratePlans(llvm::ArrayRef<const LoopModel *> Is, const PlanInputs &In,
                                       unsigned MaxStages) {
  std::vector<PlanChoice> Out{PlanChoice{true, 0, PlanChoice::Chunks16}};
  if (registersProblem(Is).empty())
    for (unsigned D = 1; D <= MaxRegisterDepth; ++D)
      Out.push_back(PlanChoice::registers(D));
  for (unsigned S = 2; S <= MaxStages; ++S)
    for (PlanChoice::Copies K : {PlanChoice::PerElement, PlanChoice::Chunks16, PlanChoice::Engine}) {
      PlanChoice C{false, S, K};
      if (choiceProblem(Is, In, C).empty())
        Out.push_back(C);
    }
  return Out;
}

std::string predictNoGain(const PlanFeatures &F, uint64_t MinStageBytes) {
  if (F.EngineCopies)
    return "";
  if (!F.PerElementTile.empty())
    return "without tensor or bulk copies, '" + F.PerElementTile +
           "' would be copied per element by cp.async, which measured slower than the original's "
           "loads (--plan=always rewrites it)";
  if (F.StageBytes < MinStageBytes)
    return "without tensor or bulk copies, stages of " + std::to_string(F.StageBytes) + " bytes" +
           (F.LargestStageBytes > F.StageBytes ? " in the smallest instantiation" : "") + " (below " +
           std::to_string(MinStageBytes) + ") measured slower than the original's loads (--plan=always rewrites it)";
  return "";
}

std::vector<uint64_t> tileBytes(const LoopModel &M) {
  std::vector<uint64_t> Bytes;
  for (const Tile &T : M.Tiles)
    Bytes.push_back(T.Bytes);
  return Bytes;
}

uint64_t dynamicStageBytes(llvm::ArrayRef<uint64_t> Bytes, unsigned Stages) {
  uint64_t Sum = 0;
  for (uint64_t B : Bytes)
    Sum += (B * Stages + 127) / 128 * 128;
  return Sum;
}

std::string describePlan(const LoopModel &M, const LoopPlan &P, CopyMode Mode, llvm::StringRef Launcher) {
  std::vector<std::string> TileNames;
  for (const Tile &T : M.Tiles)
    TileNames.push_back(T.Var->getNameAsString());
  std::vector<std::string> Parts{"tiles " + llvm::join(TileNames, ", ") + " copied from " +
                                 llvm::join(M.SourcePointers, ", ")};
  if (P.Registers)
    Parts.push_back(std::string("each thread loads its elements of the ") +
                    (P.Stages > 1 ? "tile " + std::to_string(P.Stages) + " ahead" : std::string("next tile")) +
                    " into registers while the block computes on this one, and stores them where the "
                    "copy phase did (one buffer, no cp.async: every device)");
  std::vector<std::string> Wide, Narrow, Vectors, TmaTiles, BulkTiles, NoTma;
  for (size_t I = 0; I < M.Tiles.size() && !P.Registers; ++I) {
    const TilePlan &T = P.Tiles[I];
    std::string Name = TileNames[I];
    if (T.CpAsync == CopyKind::Chunks16)
      Wide.push_back(Name);
    else if (T.VectorBytes)
      Vectors.push_back(Name + " in copies of " + std::to_string(T.VectorBytes) +
                        " bytes, one per vector the copy phase stores");
    else
      Narrow.push_back(T.WhyPerElement);
    if (P.Engine && T.Kind == CopyKind::Bulk)
      BulkTiles.push_back(Name);
    else if (P.Engine && T.Kind == CopyKind::Tensor)
      TmaTiles.push_back(Name);
    else if (Mode != CopyMode::Pipeline && T.BlockWide)
      NoTma.push_back(Name + " without tensor or bulk copies: " +
                      (T.WhyNoEngine.empty() ? P.KernelProblem : T.WhyNoEngine));
  }
  if (!TmaTiles.empty())
    Parts.push_back(llvm::join(TmaTiles, ", ") +
                    " by tensor copy (TMA) on compute capability 9.0 when launched through " + Launcher.str());
  if (!BulkTiles.empty())
    Parts.push_back(llvm::join(BulkTiles, ", ") +
                    " by bulk copy (cp.async.bulk) on compute capability 9.0, however launched");
  for (const std::string &W : NoTma)
    Parts.push_back(W);
  if (P.SmallLaunches)
    Parts.push_back("the pipeline only in launches of at most " + std::to_string(SmallLaunchWarpsPerSM) +
                    " warps per SM, whose copy latency no other block hides; larger launches run the "
                    "original loop, since there " + P.SmallLaunchWhy);
  if (P.ArchGuard)
    Parts.push_back("the original loop below compute capability 8.0");
  if (P.DynamicStages)
    Parts.push_back("the stages in dynamic shared memory, which " + Launcher.str() +
                    " asks for (the kernel stops if launched otherwise)");
  if (!Wide.empty())
    Parts.push_back(llvm::join(Wide, ", ") +
                    " in 16-byte chunks over the block where its shape and alignment allow, "
                    "else per element");
  for (const std::string &W : Vectors)
    Parts.push_back(W);
  // With tensor copies, the per-element copies are the cp.async loop's.
  for (const std::string &W : Narrow)
    Parts.push_back((TmaTiles.empty() && BulkTiles.empty() ? "per element: " : "in the cp.async loop, per element: ") + W);
  if (!P.StageNote.empty())
    Parts.push_back(P.StageNote);
  if (!M.NoAliasAssumed.empty())
    Parts.push_back("assumes " + llvm::join(M.NoAliasAssumed, ", ") + " does not overlap " +
                    llvm::join(M.SourcePointers, ", ") +
                    " (as --assume-noalias or the loop's annotation says)");
  if (!M.UnchangedAssumed.empty())
    Parts.push_back("assumes no other pointer writes what " + llvm::join(M.UnchangedAssumed, ", ") +
                    " points to while the kernel runs (as --assume-noalias or the loop's annotation says)");
  return llvm::join(Parts, "; ");
}

} // namespace tilepipe

// Plan: how each checked loop is rewritten, as data. Check yields facts (LoopModel); Plan decides,
// from those facts and the options, the stage count, how each tile is copied, the names what it
// adds takes, or that the loop stays as it is; Emit writes one (LoopModel, LoopPlan) and decides
// nothing.
#pragma once
#include "tilepipe/Model.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tilepipe {

/// How tiles are copied: cp.async only; plus Hopper tensor copies; plus the original loop kept
/// for devices below compute capability 8.0, so that one output builds for every GPU.
enum class CopyMode { Pipeline, Tma, Auto };

/// Which legal loops are rewritten: those the cost model (predictNoGain) expects to run faster,
/// or every one.
enum class PlanPolicy { Model, Always };

/// A launch of at most this many warps per SM leaves most of the SM's 64 warp slots empty, so the
/// latency of the copy phase is not hidden by other blocks: there a pipeline pays even where it
/// does not in a full launch. Measured on the H200: a 1-D stencil of per-element copies ran 1.25x
/// (2 stages) and 1.54x (4) at 16 warps per SM, 0.97x and 1.07x at 32 (docs/measurements.md);
/// stencil_tiles<256, 8> at 3 warps per SM ran 2.36x with 2 stages of per-element copies
/// (docs/benchmark/2026-12-02-h200-registers-sweep.md); stencil_tiles at 2 to 16 warps per SM
/// 1.57x to 3.14x, and at 64 warps per SM (one full wave of 2- or 4-warp blocks) as low as 0.93x
/// (docs/benchmark/2026-12-02-h200-small-launches.md).
constexpr unsigned SmallLaunchWarpsPerSM = 16;

/// The most shared memory a small-launch pipeline may add to a block (its second stage): the
/// large launches, which run the loop as it was, carry it too.
constexpr uint64_t SmallLaunchMaxExtraBytes = 2048;

/// Static shared memory a block may declare without opting in to more.
constexpr uint64_t StaticSharedLimit = 48 * 1024;

/// Shared memory (static and dynamic) a block may take on every device the pipeline runs on
/// (compute capability 8.0 and later) once its kernel opts in: 99 KiB on compute capability 8.6,
/// 8.9 and 12.x (163 KiB on 8.0 and 8.7, 227 KiB on 9.0). Stages that do not fit in
/// StaticSharedLimit lie in dynamic shared memory up to this much.
constexpr uint64_t DynamicSharedLimit = 99 * 1024;

/// The bytes of one stage of each of M's tiles, in M's order.
std::vector<uint64_t> tileBytes(const LoopModel &M);

/// Bytes of dynamic shared memory that Stages buffers of tiles of Bytes each take, each tile's
/// stage array starting on 128 bytes (as Emit lays them out).
uint64_t dynamicStageBytes(llvm::ArrayRef<uint64_t> Bytes, unsigned Stages);

/// The most shared memory a small-launch pipeline's second stage may add is counted with this
/// much besides its tiles (the copy engine's barrier, padding).
constexpr uint64_t StageOverheadBytes = 16;

/// The alignment a stage array may get: alignas(128) for tensor copies (16 for chunks and vectors).
constexpr uint64_t StageArrayAlign = 128;

/// The copy engine's barrier per stage: one `cuda::barrier<cuda::thread_scope_block>`, an mbarrier.
constexpr uint64_t EngineBarrierBytes = 8;

/// An upper bound of the static shared memory Vars take, laid out in any order, each at a multiple
/// of its alignment: their sizes, plus padding only before a variable aligned more strictly than
/// G, the largest power of two (up to 128) that divides every size, since every offset stays a
/// multiple of G (at most its alignment minus G there).
uint64_t sharedBytesBound(llvm::ArrayRef<SharedVar> Vars);

/// Other, with a loop's tiles (Tiles[t] bytes each) as stage arrays of Stages buffers (aligned
/// to StageArrayAlign), or as they were (aligned to 16 at most) where Stages is below 2.
std::vector<SharedVar> withStages(llvm::ArrayRef<SharedVar> Other, llvm::ArrayRef<uint64_t> Tiles,
                                  unsigned Stages);

/// Stage counts for the loops of one function, loop i's tiles taking TileBytes[i][t] bytes each
/// per stage, next to Other, the shared variables that stay as they are: their bound
/// (sharedBytesBound) within StaticSharedLimit. Starts loop i at Requested[i] and lowers the loop
/// with the largest tiles until everything fits; a loop that would need fewer than two stages gets
/// none (nullopt) and keeps its single buffer. The copy engine's barriers are not counted here:
/// a loop gets the engine only where they fit beside the stages (planEngine).
std::vector<std::optional<unsigned>> planStages(llvm::ArrayRef<std::vector<uint64_t>> TileBytes,
                                                llvm::ArrayRef<SharedVar> Other,
                                                llvm::ArrayRef<unsigned> Requested);

/// How one tile moves from global into shared memory.
enum class CopyKind {
  PerElement, ///< cp.async, each thread the elements its statements copied
  Chunks16,   ///< cp.async, 16-byte chunks spread over the block (per element where a launch's
              ///< shape or alignment does not allow them, tested once per launch)
  Tensor,     ///< sm_90: one tensor copy (TMA) through a map the kernel takes as a parameter
  Bulk,       ///< sm_90: one bulk copy (cp.async.bulk) of a contiguous tile
  Registers,  ///< any device: each thread loads its elements of the next tile into registers
              ///< before the compute phase and stores them where the original copied (one buffer)
};

/// "per-element", "16-byte", "tensor", "bulk": the names of the JSON report.
llvm::StringRef copyKindName(CopyKind K);

struct TilePlan {
  /// On the fastest path the loop has: Tensor or Bulk when the loop has the copy engine's path
  /// (LoopPlan::Engine), else the cp.async loop's kind.
  CopyKind Kind = CopyKind::PerElement;
  /// The cp.async loop's kind, which every loop has (below compute capability 9.0, and where a
  /// launch does not fit the copy engine's conditions): Chunks16 or PerElement.
  CopyKind CpAsync = CopyKind::PerElement;
  /// The tile's box is known and the same in every instantiation: the block may copy it whole.
  bool BlockWide = false;
  /// Tensor: the kernel parameter that carries its map. Plan leaves it empty: names are the
  /// kernel's text's to give, after the plan (RewriteLoop's nameEngineCopies).
  std::string MapName;
  /// Where every store into the tile stores a vector through a cast (`reinterpret_cast<float4 *>
  /// (&t[i])[0] = ...`), in every instantiation, all of one size: that size in bytes (8 or 16),
  /// each vector one copy of the thread that stores it. 0 otherwise.
  unsigned VectorBytes = 0;
  std::string WhyPerElement; ///< when CpAsync is PerElement: why
  std::string WhyNoEngine;   ///< when Kind is neither Tensor nor Bulk: why ("" where the kernel's problem says)
};

/// The most tiles a register-staged prefetch loads ahead: each is one more set of registers.
constexpr unsigned MaxRegisterDepth = 4;

/// The registers (32-bit words per thread) the cost model lets the sets of a register-staged
/// prefetch take: it loads as many tiles ahead as fit, up to MaxRegisterDepth. On the H200, in the
/// testdata loops where the model takes the prefetch (sets of 1 or 2 words), 4 tiles ahead ran
/// 0.99x to 1.45x, one tile ahead 0.99x to 1.04x; no larger set was measured
/// (docs/benchmark/2026-12-03-h200-deeper-registers.md).
constexpr unsigned RegisterDepthBudgetWords = 16;

/// How many tiles ahead the cost model's register-staged prefetch loads: MaxRegisterDepth, or as
/// many sets as RegisterDepthBudgetWords hold (at least 1).
unsigned modelRegisterDepth(llvm::ArrayRef<const LoopModel *> Instances);

/// One point of a loop's plan space, as tuning names it: keep the loop, or rewrite it with Stages
/// stages and tiles copied per element, in 16-byte chunks where a tile allows them, or by the copy
/// engine (tensor or bulk copies, the cp.async loop's chunks beside them); or keep its one buffer
/// and prefetch the next Stages tiles through registers (Registers, Stages 1 to MaxRegisterDepth).
struct PlanChoice {
  enum Copies { PerElement, Chunks16, Engine, Registers };
  bool Keep = false;
  unsigned Stages = 0;
  Copies Copy = Chunks16;
  /// "keep", "registers" (one tile ahead), or "<stages>:<per-element|16-byte|engine|registers>":
  /// how a tuning file writes it.
  std::string str() const;
  static std::optional<PlanChoice> parse(llvm::StringRef S);
  bool operator==(const PlanChoice &O) const {
    return Keep == O.Keep && (Keep || (Stages == O.Stages && Copy == O.Copy));
  }
  /// The register-staged prefetch, Depth tiles ahead: tuning's only plans that add no shared memory.
  static PlanChoice registers(unsigned Depth = 1) { return PlanChoice{false, Depth, Registers}; }
};

struct LoopPlan {
  /// Where the plan came from: "model" (the cost model), "always" (--plan=always), or "tuned"
  /// (a measured choice).
  std::string Source = "model";
  /// The loop stays byte for byte as it is (Reason::NoGain), and why. The rest of the plan is what
  /// it would have been.
  std::optional<std::string> Keep;
  unsigned Stages = 0;
  std::string StageNote; ///< when fewer stages than requested fit, why
  bool ArchGuard = false; ///< the original loop stays for devices below compute capability 8.0
  /// In a function template: the rewrite runs under `if constexpr (TemplateGuard)`, which holds for
  /// the instantiations analysed; the others run the loop as it was ("" outside templates).
  std::string TemplateGuard;
  /// Every tile is Tensor or Bulk: the loop also has the copy engine's path, on compute
  /// capability 9.0, taken once per launch where the launch fits (TmaFlag, maps, block shape).
  bool Engine = false;
  std::string TmaFlag; ///< the kernel's flag parameter, where some tile is Tensor (named as MapName is)
  std::string KernelProblem; ///< why the kernel cannot take tensor maps, or ""
  /// No stage buffers: each thread loads its elements of the tile Stages ahead into registers right
  /// after the copy barrier and stores them where the original's copy phase did, Stages trips
  /// later (Stages is the depth, 1 to MaxRegisterDepth; every tile's Kind is CopyKind::Registers).
  bool Registers = false;
  /// The pipeline runs only in launches too small to fill the GPU (at most SmallLaunchWarpsPerSM
  /// warps per SM, counted from the launch's grid and block and the SMs the device reports);
  /// larger launches run the loop as it was, from buffer 0 of each stage array. The cost model's
  /// plan where a pipeline would not pay in a full launch (SmallLaunchWhy says why it would not).
  bool SmallLaunches = false;
  std::string SmallLaunchWhy;
  /// The stage arrays lie in dynamic shared memory, which the kernel's launcher sizes (two stages
  /// do not fit in StaticSharedLimit); DynamicFlag names the kernel's parameter that says it was
  /// launched so. No copy-engine path then.
  bool DynamicStages = false;
  std::string DynamicFlag;
  std::vector<TilePlan> Tiles; ///< by LoopModel::Tiles
  /// The point of the plan space this plan is (Keep, or its stages and copies).
  PlanChoice choice() const;
  /// The same plan with every tile copied per element by cp.async, no copy engine: what is left
  /// when the instantiations of a template disagree on the block-wide copies.
  LoopPlan perElementOnly() const;
};

/// What the plan of one loop weighs besides the models of its instantiations.
struct PlanInputs {
  CopyMode Mode = CopyMode::Auto;
  PlanPolicy Policy = PlanPolicy::Model;
  unsigned Stages = 3;   ///< from planStages, for the whole function
  std::string StageNote; ///< when fewer than requested
  uint64_t TmaMinStageBytes = 2048;
  bool TmaThreeDimensions = false;
  uint64_t ModelMinStageBytes = 2048;
  /// The loop is in the main file (copies of the copy engine need the runtime, which only the
  /// main file gets).
  bool InMainFile = true;
  std::string KernelProblem; ///< why the loop's kernel cannot take tensor maps, or ""
  /// Per instantiation, the function's static shared variables beside the loop's tiles (the
  /// other loops' stage arrays as planned): the copy engine's barriers must fit beside them and
  /// the loop's stages. Empty: not known, and no engine.
  std::vector<std::vector<SharedVar>> SharedBeside;
  /// The function's shared memory holds the stages only in dynamic shared memory (PlanLoops.cpp).
  bool DynamicStages = false;
  /// A choice made by measuring (a tuning file, or a tune bundle's variant): the plan is this
  /// choice, where it is legal, and the cost model and its thresholds are not asked.
  std::optional<PlanChoice> Forced;
};

/// The plan of one loop from the models of its instantiations (one for a plain function; the
/// emitted text is one for all, so a tile is copied block-wide, or by the copy engine, only where
/// every instantiation allows it).
LoopPlan planLoop(llvm::ArrayRef<const LoopModel *> Instances, const PlanInputs &In);

/// Every legal choice for the loop, keep first, then the register-staged prefetch where legal
/// (1 to MaxRegisterDepth tiles ahead):
/// stage counts 2 to MaxStages (what fits the function's shared memory), each with per-element
/// copies, with 16-byte chunks where some tile allows them, and with the copy engine where every
/// tile can take it (Mode permitting).
std::vector<PlanChoice> enumeratePlans(llvm::ArrayRef<const LoopModel *> Instances,
                                       const PlanInputs &In, unsigned MaxStages);

/// Why the loop cannot prefetch through registers, or "": each store of the copy phase must run at
/// most once a tile (none in an inner copy loop), so that one register holds what it stores.
std::string registersProblem(llvm::ArrayRef<const LoopModel *> Instances);
/// Why no instantiation's tiles can be moved by cp.async (an element of 1 or 2 bytes), or "": then
/// the register-staged prefetch is the loop's one plan.
std::string asyncProblem(llvm::ArrayRef<const LoopModel *> Instances);

/// Why Choice cannot be the plan of the loop (the copies it names are not legal here), or "".
std::string choiceProblem(llvm::ArrayRef<const LoopModel *> Instances, const PlanInputs &In,
                          const PlanChoice &Choice);

/// What the cost model weighs about one pipelined loop.
struct PlanFeatures {
  /// Some tile moves by tensor or bulk copy on compute capability 9.0.
  bool EngineCopies = false;
  /// The first tile the cp.async loop copies per element (4 to 16 bytes per instruction), or "".
  std::string PerElementTile;
  /// Bytes of all tiles in one stage: the smallest over a template's instantiations, each of
  /// which must gain (one text serves them all), and the largest, which bounds the shared memory
  /// a plan adds to any of them.
  uint64_t StageBytes = 0, LargestStageBytes = 0;
};

/// Why the model expects the rewrite to be no faster than the original, or "" when it expects a
/// gain. Fitted to the H200 runs of docs/gpu-record.md (2026-12-01): loops with tensor or bulk
/// copies ran 1.02x-1.33x but for three at 0.79x-0.88x (their features match winners'); without
/// them, every loop with a per-element tile ran 0.61x-0.97x but one (1.04x), and loops whose
/// whole-tile 16-byte copies moved stages under 2 KiB ran 0.49x-0.80x in four programs and
/// 1.13x-1.14x in two. The model keeps those loops.
std::string predictNoGain(const PlanFeatures &F, uint64_t MinStageBytes);

/// The remark's detail for a rewritten loop: what is copied from where, by which kind, what stays
/// for older devices, and the stage note and assumptions (without the launch sites, which the
/// kernel's pass adds).
std::string describePlan(const LoopModel &M, const LoopPlan &P, CopyMode Mode, llvm::StringRef Launcher);

} // namespace tilepipe

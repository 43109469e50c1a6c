// Plan: how many stages each pipelined loop of a function gets.
#pragma once
#include "llvm/ADT/ArrayRef.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tilepipe {

/// Static shared memory a block may declare without opting in to more.
constexpr uint64_t StaticSharedLimit = 48 * 1024;

/// Shared memory a stage needs besides its tiles: the copy-engine loop's barrier for the stage
/// (8 bytes), and the padding that aligning the stage buffers to 16 bytes may add.
constexpr uint64_t StageOverheadBytes = 16;

/// Stage counts for the loops of one function, each of whose tiles take TileBytes[i] per stage,
/// (plus StageOverheadBytes) next to OtherBytes of shared memory that stays as it is. Starts loop i at Requested[i] and
/// lowers the loop with the largest tiles until everything fits; a loop that would need fewer than
/// two stages gets none (nullopt) and keeps its single buffer.
std::vector<std::optional<unsigned>> planStages(llvm::ArrayRef<uint64_t> TileBytes,
                                                uint64_t OtherBytes,
                                                llvm::ArrayRef<unsigned> Requested);

/// What the cost model weighs about one pipelined loop.
struct PlanFeatures {
  /// Some tile moves by tensor or bulk copy on compute capability 9.0.
  bool EngineCopies = false;
  /// The first tile the cp.async loop copies per element (4 to 16 bytes per instruction), or "".
  std::string PerElementTile;
  /// Bytes of all tiles in one stage (the largest over a template's instantiations).
  uint64_t StageBytes = 0;
};

/// Why the model expects the rewrite to be no faster than the original, or "" when it expects a
/// gain. Fitted to the H200 runs of docs/gpu-record.md (2026-12-01): loops with tensor or bulk
/// copies ran 1.02x-1.33x but for three at 0.79x-0.88x (their features match winners'); without them, every loop with a per-element tile ran 0.61x-0.97x
/// but one (1.04x), and loops whose whole-tile 16-byte copies moved stages under 2 KiB ran
/// 0.49x-0.80x in four programs and 1.13x-1.14x in two. The model keeps those loops.
std::string predictNoGain(const PlanFeatures &F, uint64_t MinStageBytes);

} // namespace tilepipe

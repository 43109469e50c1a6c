// Plan: how many stages each pipelined loop of a function gets.
#pragma once
#include "llvm/ADT/ArrayRef.h"
#include <cstdint>
#include <optional>
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

} // namespace tilepipe

#include "tilepipe/Plan.h"

namespace tilepipe {

std::vector<std::optional<unsigned>> planStages(llvm::ArrayRef<uint64_t> TileBytes,
                                                uint64_t OtherBytes,
                                                llvm::ArrayRef<unsigned> Requested) {
  std::vector<std::optional<unsigned>> Stages(Requested.begin(), Requested.end());
  auto Total = [&] {
    uint64_t Sum = OtherBytes;
    for (size_t I = 0; I < TileBytes.size(); ++I)
      Sum += Stages[I] ? (TileBytes[I] + StageOverheadBytes) * *Stages[I] : TileBytes[I];
    return Sum;
  };
  while (Total() > StaticSharedLimit) {
    // Lower the loop whose extra stage costs the most; drop it to one buffer below two stages.
    size_t Pick = TileBytes.size();
    for (size_t I = 0; I < TileBytes.size(); ++I)
      if (Stages[I] && (Pick == TileBytes.size() || TileBytes[I] > TileBytes[Pick]))
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

std::string predictNoGain(const PlanFeatures &F, uint64_t MinStageBytes) {
  if (F.EngineCopies)
    return "";
  if (!F.PerElementTile.empty())
    return "without tensor or bulk copies, '" + F.PerElementTile +
           "' would be copied per element by cp.async, which measured slower than the original's "
           "loads (--plan=always rewrites it)";
  if (F.StageBytes < MinStageBytes)
    return "without tensor or bulk copies, stages of " + std::to_string(F.StageBytes) +
           " bytes (below " + std::to_string(MinStageBytes) +
           ") measured slower than the original's loads (--plan=always rewrites it)";
  return "";
}

} // namespace tilepipe

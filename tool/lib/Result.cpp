#include "tilepipe/Result.h"

namespace tilepipe {

// LoopRecord::message, the remark's text, is written in Driver.cpp, beside the steps that decide
// what it says.

std::vector<std::pair<Reason, std::string>> LoopRecord::blockers() const {
  if (transformed())
    return {};
  std::vector<std::pair<Reason, std::string>> All{{Code, Detail}};
  All.insert(All.end(), OtherBlockers.begin(), OtherBlockers.end());
  return All;
}

std::string location(const LoopRecord &L) {
  return L.File + ":" + std::to_string(L.Line) + ":" + std::to_string(L.Column);
}

std::string remarkText(const LoopRecord &L) {
  return "[" + reasonInfo(L.Code).Id.str() + "] " + L.message();
}

std::string remarkLine(const LoopRecord &L) { return location(L) + ": remark: " + remarkText(L); }

} // namespace tilepipe

#include "tilepipe/Reasons.h"

namespace tilepipe {

static const ReasonInfo Table[] = {
#define TILEPIPE_REASON(Enum, Id, Message) {Reason::Enum, Id, Message},
#include "tilepipe/Reasons.def"
};

const ReasonInfo &reasonInfo(Reason R) { return Table[static_cast<unsigned>(R)]; }
llvm::ArrayRef<ReasonInfo> allReasons() { return Table; }

} // namespace tilepipe

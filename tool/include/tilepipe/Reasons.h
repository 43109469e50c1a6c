// Reason IDs: the one table behind remarks, the JSON report and the README.
#pragma once
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include <string>

namespace tilepipe {

enum class Reason {
#define TILEPIPE_REASON(Enum, Id, Message) Enum,
#include "tilepipe/Reasons.def"
};

struct ReasonInfo {
  Reason Code;
  llvm::StringRef Id;
  llvm::StringRef Message;
};

const ReasonInfo &reasonInfo(Reason R);
llvm::ArrayRef<ReasonInfo> allReasons();

/// The outcome of checking one loop: Pipelined, or the first reason found to refuse it,
/// with a detail naming the offending variable or construct.
struct Verdict {
  Reason Code = Reason::Pipelined;
  std::string Detail;
  bool ok() const { return Code == Reason::Pipelined; }
  static Verdict refuse(Reason R, std::string Detail) { return {R, std::move(Detail)}; }
};

} // namespace tilepipe

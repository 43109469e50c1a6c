// Reason IDs: the one table behind remarks, the JSON report and the README.
#pragma once
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/STLExtras.h"
#include <string>
#include <utility>
#include <vector>

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
/// with a detail naming the offending variable or construct; and, when refused, the blockers
/// found beside that one (Others), each of which alone would refuse the loop too.
struct Verdict {
  Reason Code = Reason::Pipelined;
  std::string Detail;
  std::vector<std::pair<Reason, std::string>> Others;
  bool ok() const { return Code == Reason::Pipelined; }
  static Verdict refuse(Reason R, std::string Detail) { return {R, std::move(Detail), {}}; }
  /// Adds a blocker: the first becomes the verdict, a later one (and its Others) joins Others,
  /// once each.
  void block(const Verdict &V) {
    if (V.ok())
      return;
    if (ok()) {
      *this = V;
      return;
    }
    auto Add = [&](Reason R, const std::string &D) {
      if (!(R == Code && D == Detail) && !llvm::is_contained(Others, std::make_pair(R, D)))
        Others.emplace_back(R, D);
    };
    Add(V.Code, V.Detail);
    for (const auto &[R, D] : V.Others)
      Add(R, D);
  }
};

} // namespace tilepipe

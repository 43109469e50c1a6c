#include "tilepipe/Tuning.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace tilepipe {

std::string loopFingerprint(llvm::StringRef LoopText) {
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  OS << llvm::format_hex_no_prefix(llvm::xxh3_64bits(LoopText), 16);
  return Out;
}

llvm::Expected<std::vector<TuningEntry>> parseTuning(llvm::StringRef Text, llvm::StringRef Name) {
  auto Fail = [&](const llvm::Twine &Why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   Name + ": error: not a tuning file: " + Why);
  };
  llvm::Expected<llvm::json::Value> V = llvm::json::parse(Text);
  if (!V)
    return Fail(llvm::toString(V.takeError()));
  const llvm::json::Object *Root = V->getAsObject();
  if (!Root || Root->getString("tool") != "tilepipe-tuning")
    return Fail("expected an object with \"tool\": \"tilepipe-tuning\"");
  if (Root->getInteger("version") != 1)
    return Fail("version " + std::to_string(Root->getInteger("version").value_or(0)) +
                " (this tilepipe reads version 1)");
  const llvm::json::Array *List = Root->getArray("entries");
  if (!List)
    return Fail("no \"entries\" array");
  std::vector<TuningEntry> Out;
  for (size_t I = 0; I < List->size(); ++I) {
    const llvm::json::Object *E = (*List)[I].getAsObject();
    std::string At = "entry " + std::to_string(I + 1);
    if (!E)
      return Fail(At + " is not an object");
    TuningEntry T;
    auto Str = [&](llvm::StringRef Key, std::string &To) -> bool {
      if (auto S = E->getString(Key)) {
        To = S->str();
        return true;
      }
      return false;
    };
    std::string Choice;
    if (!Str("file", T.File) || !Str("kernel", T.Kernel) || !Str("fingerprint", T.Fingerprint) ||
        !Str("arch", T.Arch) || !Str("plan", Choice) || !E->getInteger("line"))
      return Fail(At + " lacks one of file, kernel, line, fingerprint, arch, plan");
    Str("gpu", T.Gpu);
    T.Line = static_cast<unsigned>(*E->getInteger("line"));
    auto C = PlanChoice::parse(Choice);
    if (!C)
      return Fail(At + ": plan '" + Choice + "' is not 'keep' or '<stages>:<per-element|16-byte|engine>'");
    T.Choice = *C;
    T.Speedup = E->getNumber("speedup").value_or(1.0);
    Out.push_back(std::move(T));
  }
  return Out;
}

llvm::Expected<std::vector<TuningEntry>> readTuningFile(llvm::StringRef Path) {
  auto Buf = llvm::MemoryBuffer::getFile(Path, /*IsText=*/true);
  if (!Buf)
    return llvm::createStringError(Buf.getError(),
                                   Path + ": error: cannot read the tuning file: " + Buf.getError().message());
  return parseTuning((*Buf)->getBuffer(), Path);
}

llvm::json::Value tuningJson(llvm::ArrayRef<TuningEntry> Entries) {
  llvm::json::Array List;
  for (const TuningEntry &T : Entries)
    List.push_back(llvm::json::Object{{"file", T.File},
                                      {"kernel", T.Kernel},
                                      {"line", T.Line},
                                      {"fingerprint", T.Fingerprint},
                                      {"gpu", T.Gpu},
                                      {"arch", T.Arch},
                                      {"plan", T.Choice.str()},
                                      {"speedup", T.Speedup}});
  return llvm::json::Object{{"tool", "tilepipe-tuning"}, {"version", 1}, {"entries", std::move(List)}};
}

/// Whether one path ends with all of the other's components.
static bool sameFile(llvm::StringRef A, llvm::StringRef B) {
  auto Parts = [](llvm::StringRef P) {
    std::vector<llvm::StringRef> Out;
    for (auto I = llvm::sys::path::rbegin(P), E = llvm::sys::path::rend(P); I != E; ++I)
      if (*I != "." && *I != "/")
        Out.push_back(*I);
    return Out;
  };
  std::vector<llvm::StringRef> PA = Parts(A), PB = Parts(B);
  size_t N = std::min(PA.size(), PB.size());
  if (N == 0)
    return false;
  for (size_t I = 0; I < N; ++I)
    if (PA[I] != PB[I])
      return false;
  return true;
}

const TuningEntry *findTuning(llvm::ArrayRef<TuningEntry> Entries, llvm::StringRef File,
                              llvm::StringRef Kernel, unsigned Line, llvm::StringRef Arch) {
  for (const TuningEntry &T : Entries)
    if (T.Line == Line && T.Kernel == Kernel && T.Arch == Arch && sameFile(T.File, File))
      return &T;
  return nullptr;
}

} // namespace tilepipe

#include "tilepipe/Write.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace tilepipe {

llvm::Error writeAtomically(llvm::StringRef Path, llvm::StringRef Content) {
  auto OldPerms = llvm::sys::fs::getPermissions(Path);
  if (llvm::Error E = llvm::writeToOutput(Path, [&](llvm::raw_ostream &OS) {
        OS << Content;
        return llvm::Error::success();
      }))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   Path + ": error: cannot write: " + llvm::toString(std::move(E)));
  if (OldPerms)
    (void)llvm::sys::fs::setPermissions(Path, *OldPerms);
  return llvm::Error::success();
}

namespace {
/// The text split into lines, each keeping its '\n'.
std::vector<llvm::StringRef> splitLines(llvm::StringRef Text) {
  std::vector<llvm::StringRef> Lines;
  while (!Text.empty()) {
    size_t NL = Text.find('\n');
    size_t Len = NL == llvm::StringRef::npos ? Text.size() : NL + 1;
    Lines.push_back(Text.take_front(Len));
    Text = Text.drop_front(Len);
  }
  return Lines;
}

unsigned lineOf(llvm::StringRef Text, unsigned Offset) {
  return Text.take_front(Offset).count('\n');
}
} // namespace

std::string unifiedDiff(const FileResult &R) {
  // Each edit covers whole old lines [First, Last]; edits on touching lines merge into one change.
  struct Change {
    unsigned First, Last; // old lines, inclusive
    std::string NewText;  // replacement for those lines
  };
  llvm::StringRef Old = R.Original;
  std::vector<llvm::StringRef> OldLines = splitLines(Old);
  std::vector<unsigned> LineStart;
  for (unsigned I = 0, Off = 0; I < OldLines.size(); Off += OldLines[I].size(), ++I)
    LineStart.push_back(Off);
  auto StartOf = [&](unsigned L) { return L < LineStart.size() ? LineStart[L] : Old.size(); };
  std::vector<Change> Changes;
  std::vector<std::pair<unsigned, const clang::tooling::Replacement *>> Edits;
  for (const clang::tooling::Replacement &E : R.Edits)
    Edits.push_back({E.getOffset(), &E});
  for (size_t I = 0; I < Edits.size();) {
    const auto *E = Edits[I].second;
    unsigned First = lineOf(Old, E->getOffset());
    unsigned EndOff = E->getOffset() + E->getLength();
    unsigned Last = E->getLength() ? lineOf(Old, EndOff - 1) : First;
    std::vector<const clang::tooling::Replacement *> Group{E};
    size_t J = I + 1;
    for (; J < Edits.size(); ++J) {
      unsigned F = lineOf(Old, Edits[J].second->getOffset());
      if (F > Last)
        break;
      const auto *N = Edits[J].second;
      Last = std::max(Last, N->getLength() ? lineOf(Old, N->getOffset() + N->getLength() - 1) : F);
      Group.push_back(N);
    }
    std::string New;
    unsigned Pos = StartOf(First);
    for (const auto *G : Group) {
      New += Old.slice(Pos, G->getOffset()).str();
      New += G->getReplacementText().str();
      Pos = G->getOffset() + G->getLength();
    }
    New += Old.slice(Pos, StartOf(Last + 1)).str();
    Changes.push_back({First, Last, New});
    I = J;
  }
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  if (Changes.empty())
    return Out;
  OS << "--- a/" << R.Path << "\n+++ b/" << R.Path << "\n";
  const unsigned Context = 3;
  int Delta = 0; // new line number minus old line number before the current change
  for (size_t I = 0; I < Changes.size();) {
    // A hunk: changes whose context windows touch.
    size_t J = I + 1;
    while (J < Changes.size() && Changes[J].First <= Changes[J - 1].Last + 1 + 2 * Context)
      ++J;
    unsigned From = Changes[I].First >= Context ? Changes[I].First - Context : 0;
    unsigned To = std::min<unsigned>(Changes[J - 1].Last + Context, OldLines.size() - 1);
    std::string Body;
    unsigned OldCount = 0, NewCount = 0;
    int HunkDelta = Delta;
    unsigned L = From;
    for (size_t K = I; K < J; ++K) {
      for (; L < Changes[K].First; ++L, ++OldCount, ++NewCount)
        Body += " " + OldLines[L].str();
      for (; L <= Changes[K].Last; ++L, ++OldCount)
        Body += "-" + OldLines[L].str();
      std::vector<llvm::StringRef> NewLines = splitLines(Changes[K].NewText);
      for (llvm::StringRef N : NewLines)
        Body += "+" + N.str();
      NewCount += NewLines.size();
      Delta += static_cast<int>(NewLines.size()) - static_cast<int>(Changes[K].Last - Changes[K].First + 1);
    }
    for (; L <= To; ++L, ++OldCount, ++NewCount)
      Body += " " + OldLines[L].str();
    // Lines without a final newline need the marker that patch tools expect.
    std::string Fixed;
    for (llvm::StringRef Line : splitLines(Body)) {
      Fixed += Line.str();
      if (!Line.ends_with("\n"))
        Fixed += "\n\\ No newline at end of file\n";
    }
    OS << "@@ -" << From + 1 << "," << OldCount << " +" << static_cast<int>(From) + HunkDelta + 1
       << "," << NewCount << " @@\n"
       << Fixed;
    I = J;
  }
  return Out;
}

llvm::json::Value reportJson(llvm::ArrayRef<FileResult> Results) {
  llvm::json::Array Loops;
  for (const FileResult &R : Results)
    for (const LoopRecord &L : R.Loops) {
      llvm::json::Object O{{"file", L.File},           {"line", L.Line},
                           {"column", L.Column},       {"kernel", L.Kernel},
                           {"transformed", L.transformed()}, {"message", L.message()}};
      if (L.transformed())
        O["stages"] = L.Stages;
      else
        O["reason"] = reasonInfo(L.Code).Id;
      Loops.push_back(std::move(O));
    }
  return llvm::json::Object{{"tool", "tilepipe"}, {"version", 1}, {"loops", std::move(Loops)}};
}

} // namespace tilepipe

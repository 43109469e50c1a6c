// Render, for the driver: one file's edits made whole (the includes they need, the file's line
// endings) and applied, to the file, its headers and the compute-only variant.
#include "DriverSteps.h"
#include "llvm/Support/FileSystem.h"

using namespace clang;

namespace tilepipe {

/// Whether most lines of Text end in "\r\n".
static bool usesCrlf(StringRef Text) {
  size_t Lines = Text.count('\n'), Crlf = Text.count("\r\n");
  return Crlf > Lines - Crlf;
}

/// E with every line it adds ending in "\r\n" (a '\n' not after a '\r' gets one).
static tooling::Replacement crlfLines(const tooling::Replacement &E) {
  StringRef Text = E.getReplacementText();
  std::string Out;
  Out.reserve(Text.size() + Text.count('\n'));
  for (size_t I = 0; I < Text.size(); ++I) {
    if (Text[I] == '\n' && (I == 0 || Text[I - 1] != '\r'))
      Out += '\r';
    Out += Text[I];
  }
  return tooling::Replacement(E.getFilePath(), E.getOffset(), E.getLength(), Out);
}

/// Every file where a loop became a cuda::pipeline gets the pipeline's include (and the main file,
/// where it copies by tensor or bulk copies, the runtime); the include travels with the file's first rewrite, so that each
/// loop's fix stands alone.
static llvm::Error addIncludes(const SourceManager &SM, const ToolOptions &Opts, FileRewrite &F,
                               const std::string &Path, std::vector<LoopRecord> &Loops) {
  const FileID Main = SM.getMainFileID();
  for (auto &[FID, Edits] : F.Edits) {
    const bool Traits = F.TraitsUsed.count(FID);
    if (Edits.empty() || (!F.CpAsyncUsed.count(FID) && !(FID == Main && F.EngineUsed) && !Traits))
      continue; // no cuda::pipeline in this file: the register-staged prefetch needs no header
    unsigned FirstEdit = ~0u;
    for (const tooling::Replacement &R : Edits)
      FirstEdit = std::min(FirstEdit, R.getOffset());
    auto Inc = pipelineInclude(SM, FID,
                               FID == Main && F.EngineUsed ? std::optional(Opts.Runtime) : std::nullopt,
                               FirstEdit, F.CpAsyncUsed.count(FID) || (FID == Main && F.EngineUsed), Traits);
    if (!Inc)
      continue;
    if (llvm::Error Err = Edits.add(*Inc))
      return internalError(Path, llvm::toString(std::move(Err)));
    for (LoopRecord &L : Loops)
      if (L.transformed() && !L.Edits.empty() && L.Edits.front().getFilePath() == Inc->getFilePath()) {
        L.Edits.insert(L.Edits.begin(), *Inc);
        break;
      }
  }
  return llvm::Error::success();
}

/// E, so that the text after it keeps its line numbers (__LINE__, and with it every assert and
/// error macro after the rewrite, expands as in the original): an edit that removes lines gets
/// them back as newlines at its end; one that adds lines ends in a `#line` directive naming the
/// original line of the text that follows it. A directive needs a line of its own, so the rest of
/// a line the edit ends in moves to the next line, which the directive numbers as it was (where
/// only blanks follow, the directive takes that line's place; where the edit's last line is only
/// indentation, the directive goes before it).
static tooling::Replacement keepLineNumbers(const tooling::Replacement &E, StringRef File,
                                            const SourceManager &SM, FileID FID) {
  size_t End = E.getOffset() + E.getLength();
  if (End > File.size())
    return E;
  StringRef Text = E.getReplacementText();
  long Removed = File.substr(E.getOffset(), E.getLength()).count('\n');
  long Added = Text.count('\n');
  if (Added == Removed || End == File.size())
    return E;
  std::string Out = Text.str();
  if (Added < Removed) {
    Out.append(Removed - Added, '\n');
  } else {
    // The line as the preprocessor numbers it: after a `#line` of the user's, not the file's own
    // count (a directive without a file name keeps the one in force).
    PresumedLoc P = SM.getPresumedLoc(SM.getComposedLoc(FID, End));
    unsigned Line = P.isValid() ? P.getLine() : 1 + File.take_front(End).count('\n');
    StringRef Rest = File.substr(End).take_until([](char C) { return C == '\n'; });
    if (Out.back() != '\n' && Rest.trim().empty() && End + Rest.size() < File.size()) {
      // Only blanks follow on the edit's last line: the directive takes that line's place.
      Out += "\n#line " + std::to_string(Line + 1);
    } else {
      // Where the edit's last line holds only indentation, the directive goes before it.
      std::string Directive = "#line " + std::to_string(Line) + "\n";
      size_t Nl = Out.rfind('\n');
      if (Nl != std::string::npos && StringRef(Out).substr(Nl + 1).trim().empty())
        Out.insert(Nl + 1, Directive);
      else
        Out += "\n" + Directive;
    }
  }
  return tooling::Replacement(E.getFilePath(), E.getOffset(), E.getLength(), Out);
}

/// Every edit of F and of R's loops keeps the line numbers of the text after it.
static void keepLineNumbers(const SourceManager &SM, FileRewrite &F, FileResult &R) {
  std::map<std::string, FileID> Files; // by the file paths the edits name
  for (auto &[FID, Edits] : F.Edits) {
    tooling::Replacements Kept;
    for (const tooling::Replacement &E : Edits) {
      Files[E.getFilePath().str()] = FID;
      llvm::cantFail(Kept.add(keepLineNumbers(E, SM.getBufferData(FID), SM, FID)));
    }
    Edits = std::move(Kept);
  }
  for (LoopRecord &L : R.Loops)
    for (tooling::Replacement &E : L.Edits)
      if (auto It = Files.find(E.getFilePath().str()); It != Files.end())
        E = keepLineNumbers(E, SM.getBufferData(It->second), SM, It->second);
}

/// The text tilepipe adds ends its lines in '\n'; a file whose lines end in "\r\n" gets "\r\n"
/// in every edit, the loop's, the kernel's, the include's and the timing floor's alike.
static void matchLineEndings(const SourceManager &SM, FileRewrite &F, FileResult &R) {
  std::map<std::string, bool> Crlf; // by the file paths the edits name
  for (auto &[FID, Edits] : F.Edits) {
    bool FileUsesCrlf = !Edits.empty() && usesCrlf(SM.getBufferData(FID));
    for (const tooling::Replacement &E : Edits)
      Crlf[E.getFilePath().str()] = FileUsesCrlf;
  }
  auto WithLineEndings = [&](const tooling::Replacement &E) {
    auto It = Crlf.find(E.getFilePath().str());
    return It == Crlf.end() || !It->second ? E : crlfLines(E);
  };
  // Converted edits keep their offsets and lengths, so they fit together as the originals did.
  for (auto &[FID, Edits] : F.Edits) {
    tooling::Replacements Converted;
    for (const tooling::Replacement &E : Edits)
      llvm::cantFail(Converted.add(WithLineEndings(E)));
    Edits = std::move(Converted);
  }
  for (LoopRecord &L : R.Loops)
    for (tooling::Replacement &E : L.Edits)
      E = WithLineEndings(E);
  if (usesCrlf(R.Original)) {
    tooling::Replacements Converted;
    for (const tooling::Replacement &E : F.FloorEdits)
      llvm::cantFail(Converted.add(crlfLines(E)));
    F.FloorEdits = std::move(Converted);
  }
}

/// Every header with candidate loops is listed, rewritten or not, so that the files including it
/// can be compared: one that leaves a loop alone must not see another rewrite it.
static llvm::Error renderHeaders(const SourceManager &SM, const CheckedLoops &Checked,
                                 FileRewrite &F, FileResult &R) {
  for (auto &[Key, Results] : Checked.ByLoop)
    F.Edits[Key.first];
  for (auto &[FID, Edits] : F.Edits) {
    if (FID == SM.getMainFileID())
      continue;
    HeaderRewrite H;
    H.Path = realPathIn(R.Directory, SM.getFileEntryRefForID(FID)->getName());
    H.Original = SM.getBufferData(FID).str();
    auto Text = tooling::applyAllReplacements(H.Original, Edits);
    if (!Text)
      return internalError(H.Path, llvm::toString(Text.takeError()));
    H.Rewritten = *Text;
    H.Edits = Edits;
    R.Headers.push_back(std::move(H));
  }
  return llvm::Error::success();
}

/// The compute-only variant, where every rewritten loop has one; else the original, and the
/// warnings that say why.
static void renderComputeOnly(FileRewrite &F, FileResult &R) {
  R.ComputeOnly = R.Original;
  R.ComputeOnlyProblems = std::move(F.FloorProblems);
  if (!R.ComputeOnlyProblems.empty())
    return;
  auto Floor = tooling::applyAllReplacements(R.Original, F.FloorEdits);
  if (Floor)
    R.ComputeOnly = *Floor;
  else
    R.ComputeOnlyProblems.push_back(R.Path + ": warning: no compute-only floor (verify times the "
                                    "memory floor only): " + llvm::toString(Floor.takeError()));
}

llvm::Error renderEdits(const SourceManager &SM, const ToolOptions &Opts,
                        const CheckedLoops &Checked, FileRewrite &F, FileResult &R) {
  if (llvm::Error E = addIncludes(SM, Opts, F, R.Path, R.Loops))
    return E;
  keepLineNumbers(SM, F, R);
  matchLineEndings(SM, F, R);
  auto New = tooling::applyAllReplacements(R.Original, F.Edits[SM.getMainFileID()]);
  if (!New)
    return internalError(R.Path, llvm::toString(New.takeError()));
  R.Rewritten = *New;
  if (llvm::Error E = renderHeaders(SM, Checked, F, R))
    return E;
  renderComputeOnly(F, R);
  R.Edits = F.Edits[SM.getMainFileID()];
  return llvm::Error::success();
}

} // namespace tilepipe

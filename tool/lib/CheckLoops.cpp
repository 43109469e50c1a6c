// Check, for the driver: every candidate loop of the file's device functions, with its
// annotations and the facts beside the loop that refuse it.
#include "DriverSteps.h"
#include "tilepipe/AstUtil.h"
#include "tilepipe/Find.h"
#include "tilepipe/Resources.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/StringExtras.h"
#include <set>

using namespace clang;

namespace tilepipe {

LoopKey loopKey(const SourceManager &SM, const Stmt *S) {
  SourceLocation L = SM.getExpansionLoc(S->getBeginLoc());
  return std::make_pair(SM.getFileID(L), SM.getFileOffset(L));
}

/// The annotations of the loop at Line of Buffer (the file Path), or the error of one that cannot be read.
static llvm::Expected<Annotation> annotationsAbove(StringRef Buffer, unsigned Line, const std::string &Path) {
  Annotation A;
  SmallVector<StringRef, 0> Lines;
  Buffer.split(Lines, '\n');
  // Above the loop's own `#pragma unroll` lines, if any: those belong to the loop too.
  unsigned Top = Line - 1;
  for (; Top >= 1 && Top <= Lines.size(); --Top) {
    StringRef P = Lines[Top - 1].trim();
    if (!P.consume_front("#"))
      break;
    P = P.ltrim();
    if (!P.consume_front("pragma"))
      break;
    P = P.ltrim();
    if (!P.starts_with("unroll") && !P.starts_with("nounroll"))
      break;
  }
  for (unsigned L = Top; L >= 1 && L <= Lines.size(); --L) {
    StringRef Text = Lines[L - 1].trim();
    if (!Text.starts_with("//"))
      break;
    Text = Text.drop_front(2).trim();
    if (!Text.consume_front("tilepipe:"))
      continue;
    Text = Text.trim();
    if (Text.empty() || !llvm::isAlpha(Text[0]))
      continue; // tilepipe's own notes ("// tilepipe: 3-stage ..."), not an annotation
    SmallVector<StringRef, 4> Words;
    Text.split(Words, ' ', -1, false);
    for (StringRef W : Words) {
      W = W.trim(", ");
      unsigned N = 0;
      if (W == "skip")
        A.Skip = true;
      else if (W.consume_front("stages=") && !W.getAsInteger(10, N) && N >= 2 && N <= 8)
        A.Stages = N;
      else if (W == "assume-noalias=false" || W == "assume-noalias=true")
        A.AssumeNoAlias = W.ends_with("true");
      else if (W == "plan=always" || W == "plan=model")
        A.Plan = W.ends_with("always") ? PlanPolicy::Always : PlanPolicy::Model;
      else {
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            Path + ":" + std::to_string(L) + ":1: error: malformed tilepipe annotation '" +
                Lines[L - 1].trim().str() + "' (expected 'skip', 'stages=N' with N in 2..8, 'assume-noalias=true|false', or 'plan=always|model')");
      }
    }
  }
  return A;
}

void warnBlockAnnotations(const SourceManager &SM, const LangOptions &LO, FileID FID,
                          StringRef Name, std::vector<std::string> &Warnings) {
  Lexer Lex(FID, SM.getBufferOrFake(FID), SM, LO);
  Lex.SetCommentRetentionState(true);
  Token Tok;
  for (bool End = false; !End;) {
    End = Lex.LexFromRawLexer(Tok);
    if (!Tok.is(tok::comment))
      continue;
    StringRef Text(SM.getCharacterData(Tok.getLocation()), Tok.getLength());
    if (!Text.starts_with("/*"))
      continue;
    StringRef Body = Text.drop_front(2);
    Body.consume_back("*/");
    Body = Body.ltrim(" \t\r\n*");
    StringRef Shown = Body.take_until([](char C) { return C == '\n' || C == '\r'; }).rtrim(" \t*");
    if (!Body.consume_front("tilepipe:") || Body.trim().empty() || !llvm::isAlpha(Body.trim()[0]))
      continue;
    Warnings.push_back(Name.str() + ":" + std::to_string(SM.getSpellingLineNumber(Tok.getLocation())) +
                       ":" + std::to_string(SM.getSpellingColumnNumber(Tok.getLocation())) +
                       ": warning: a tilepipe annotation in a block comment is not read ('" +
                       Shown.str() + "'): annotations are '// tilepipe: ...' line comments right "
                       "above a loop");
  }
}

/// Check: every candidate loop of FD with its annotations, and the facts that refuse it beside
/// the loop's own (dynamic shared memory in its kernels, text that differs per architecture).
/// Fails when an annotation cannot be read.
static llvm::Error checkFunctionLoops(ASTContext &Ctx, const ToolOptions &Opts, const ArchDependence &Arch,
                                      const TranslationUnitIndex &Index, ParseErrorFacts &ErrorFacts,
                                      const FunctionDecl *FD, std::map<LoopKey, Annotation> &Annotations,
                                      std::vector<CheckedLoop> &Local) {
  const SourceManager &SM = Ctx.getSourceManager();
  CheckOptions COpts;
  COpts.AssumeNoAlias = Opts.AssumeNoAlias;
  std::optional<LaunchProblems> Launches;
  std::optional<std::string> ArchText;
  for (const Candidate &C : findCandidateLoops(FD)) {
    CheckedLoop LR{FD, {}, {}};
    unsigned Line = SM.getExpansionLineNumber(C.Loop->getBeginLoc());
    FileID LoopFile = loopKey(SM, C.Loop).first;
    auto Read = annotationsAbove(SM.getBufferData(LoopFile), Line,
                                 SM.getFileEntryRefForID(LoopFile)->getName().str());
    if (!Read)
      return Read.takeError();
    const Annotation &A = *Read;
    Annotations[loopKey(SM, C.Loop)] = A;
    LR.AnnotatedStages = A.Stages;
    if (A.Skip) {
      LR.Model.Loop = C.Loop;
      LR.Model.Function = FD;
      LR.V = Verdict::refuse(Reason::Skipped, "");
    } else {
      CheckOptions LoopOpts = COpts;
      if (A.AssumeNoAlias)
        LoopOpts.AssumeNoAlias = *A.AssumeNoAlias;
      // Text Clang could not parse may be what the analysis would read: no analysis then.
      if (std::string Why = parseErrorReach(Ctx, Index, Arch, FD, ErrorFacts); !Why.empty()) {
        LR.Model.Loop = C.Loop;
        LR.Model.Function = FD;
        LR.V = Verdict::refuse(Reason::ParseErrorNearby, Why);
      } else {
        LR.V = checkLoop(Ctx, Index, C, LoopOpts, LR.Model);
        // The facts beside the loop's own refuse it too; a loop refused already lists them
        // among its other blockers. The function's are read once for all its loops.
        auto Also = [&](Reason R, const std::string &Why) {
          if (!Why.empty())
            LR.V.block(Verdict::refuse(R, Why));
        };
        // More static shared memory must not crowd out a launch's dynamic shared memory. A loop
        // whose tiles lie in dynamic shared memory gets no stages, only the register-staged
        // prefetch, which adds registers and no shared memory: only what registers change counts.
        if (!Launches)
          Launches = launchProblems(Ctx, Index, Arch, FD);
        bool RegistersOnly = llvm::any_of(LR.Model.Tiles, [](const Tile &T) { return T.Dynamic; });
        Also(Reason::LaunchResources, RegistersOnly ? Launches->Registers : Launches->Shared);
        // The analysis saw the text of one architecture; the rewrite runs on several.
        if (!ArchText)
          ArchText = archDependentText(Ctx, Index, Arch, FD);
        Also(Reason::ArchDependent, *ArchText);
        Also(Reason::SourceText, movedTextCounts(Ctx, Arch, C.Loop));
        Also(Reason::SourceText, placeDependentExpr(Ctx, C.Loop));
        // The rewrite keeps line numbers with #line directives of its own, which one numbering
        // cannot make right for passes that number the file differently.
        if (!Arch.PassDependentLine.empty())
          Also(Reason::SourceText,
               "a #line directive (" + Arch.PassDependentLine +
                   ") is read by some of nvcc's passes and not others, so no "
                   "#line the rewrite writes could keep every pass's line numbers");
      }
    }
    Local.push_back(std::move(LR));
  }
  return llvm::Error::success();
}

llvm::Expected<CheckedLoops> checkLoops(ASTContext &Ctx, const ToolOptions &Opts, const ArchDependence &Arch,
                                        llvm::ArrayRef<const FunctionDecl *> Instances,
                                        llvm::ArrayRef<const FunctionDecl *> Patterns) {
  const SourceManager &SM = Ctx.getSourceManager();
  CheckedLoops Out;
  Out.Index = std::make_unique<TranslationUnitIndex>(Ctx);
  const TranslationUnitIndex &Index = *Out.Index;
  ParseErrorFacts ErrorFacts;
  auto Wanted = [&](const FunctionDecl *FD) {
    return Opts.Kernels.empty() || llvm::is_contained(Opts.Kernels, FD->getNameAsString());
  };
  for (const FunctionDecl *FD : Instances) {
    if (!Wanted(FD))
      continue;
    std::vector<CheckedLoop> Local;
    if (llvm::Error E = checkFunctionLoops(Ctx, Opts, Arch, Index, ErrorFacts, FD, Out.Annotations, Local))
      return std::move(E);
    Out.ByFunction.push_back(std::move(Local));
  }
  std::set<LoopKey> Checked;
  for (const std::vector<CheckedLoop> &Local : Out.ByFunction)
    for (const CheckedLoop &L : Local)
      Checked.insert(loopKey(SM, L.Model.Loop));
  for (const FunctionDecl *FD : Patterns)
    for (const Candidate &C : Wanted(FD) ? findCandidateLoops(FD) : std::vector<Candidate>())
      if (!Checked.count(loopKey(SM, C.Loop)))
        Out.Uninstantiated[loopKey(SM, C.Loop)] = {C.Loop, FD};
  return Out;
}

} // namespace tilepipe

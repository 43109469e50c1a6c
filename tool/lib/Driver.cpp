#include "tilepipe/Driver.h"
#include "tilepipe/Check.h"
#include "tilepipe/Emit.h"
#include "tilepipe/Find.h"
#include "tilepipe/Parse.h"
#include "tilepipe/Plan.h"
#include "tilepipe/Resources.h"
#include "tilepipe/Runtime.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Lex/Lexer.h"
#include "tilepipe/AstUtil.h"
#include "clang/Frontend/ASTUnit.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/VirtualFileSystem.h"
#include <map>
#include <set>

using namespace clang;

namespace tilepipe {

std::string LoopRecord::message() const {
  if (!transformed())
    return reasonInfo(Code).Message.str() + (Detail.empty() ? "" : ": " + Detail);
  return "rewritten " + rewriteSummary() + (Detail.empty() ? "" : "; " + Detail);
}

std::string LoopRecord::rewriteSummary() const {
  if (Plan && Plan->Registers)
    return "with a register-staged prefetch of the next tile";
  return "into a " + std::to_string(Stages) + "-stage cp.async pipeline";
}

namespace {

/// Device functions of the main file and of the user's headers (not system headers):
/// instantiations of templates too, and patterns apart.
class FunctionCollector : public RecursiveASTVisitor<FunctionCollector> {
public:
  explicit FunctionCollector(const SourceManager &SM) : SM(SM) {}
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool VisitFunctionDecl(FunctionDecl *FD) {
    SourceLocation L = SM.getExpansionLoc(FD->getLocation());
    if (!isDeviceCode(FD) || SM.isInSystemHeader(L) || !SM.getFileEntryRefForID(SM.getFileID(L)))
      return true;
    (FD->isDependentContext() ? Patterns : Instances).push_back(FD);
    return true;
  }
  const SourceManager &SM;
  std::vector<const FunctionDecl *> Instances, Patterns;
};

struct LoopResult {
  const FunctionDecl *Function;
  LoopModel Model;
  Verdict V;
  std::optional<unsigned> Stages;
  std::string StageNote;
  unsigned Requested = 0;
  unsigned MaxStages = 0; ///< the most stages (up to 6) the function's shared memory allows the loop
  std::string Fingerprint;
  /// A measured choice (--plan-choice, or the tuning file's entry for the loop), what was measured
  /// of it, and why an entry for the loop was not taken.
  std::optional<PlanChoice> Forced;
  std::string Measured;
  std::string TuningNote;
  unsigned AnnotatedStages = 0; ///< `// tilepipe: stages=N` above the loop, or 0
};

} // namespace

static void boundLaunches(ASTContext &Ctx, const tooling::CompilationDatabase &DB,
                          const ToolOptions &Opts, const ArchDependence &Arch, FileResult &R);

void prepareParse(tooling::ClangTool &Tool, const ToolOptions &Opts) {
  // The runtime header, for a file that includes it (tilepipe's own output): from a folder only this
  // parse sees, searched after the user's own, so that no -I is needed to read such a file.
  // ClangTool keeps the path and the text by reference: both must outlive Tool.
  static const std::string RuntimeFile = [] {
    llvm::SmallString<128> P(virtualRuntimeDir());
    llvm::sys::path::append(P, runtimeHeaderName());
    return std::string(P);
  }();
  Tool.mapVirtualFile(RuntimeFile, runtimeHeaderText());
  std::vector<std::string> ParseArgs = Opts.ParseArgs;
  ParseArgs.insert(ParseArgs.end(), {"-idirafter", virtualRuntimeDir().str()});
  Tool.appendArgumentsAdjuster(cudaArgumentsAdjuster(ParseArgs));
}

FileResult processFile(const tooling::CompilationDatabase &DB, const std::string &Path,
                       const ToolOptions &Opts) {
  FileResult R;
  R.Path = Path;
  auto Buf = llvm::MemoryBuffer::getFile(Path, /*IsText=*/true);
  if (!Buf) {
    R.Error = Path + ": error: cannot read the file: " + Buf.getError().message();
    return R;
  }
  StringRef Ext = llvm::sys::path::extension(Path);
  if (Ext != ".cu" && Ext != ".cuh") {
    R.Error = Path + ": error: not a CUDA source (expected a .cu or .cuh file)";
    return R;
  }
  R.Original = (*Buf)->getBuffer().str();

  // A file system with its own working directory: ClangTool moves into each compile command's
  // directory, and with the process's own that would be a chdir that every thread of a parallel
  // run (-j) sees, mid-parse.
  tooling::ClangTool Tool(DB, {Path}, std::make_shared<PCHContainerOperations>(),
                          llvm::vfs::createPhysicalFileSystem());
  prepareParse(Tool, Opts);
  std::vector<std::unique_ptr<ASTUnit>> ASTs;
  int Status = Tool.buildASTs(ASTs);
  if (Status != 0 || ASTs.size() != 1 || ASTs[0]->getDiagnostics().hasErrorOccurred()) {
    R.Error = Path + ": error: the file could not be parsed as CUDA; nothing was written";
    return R;
  }
  ASTContext &Ctx = ASTs[0]->getASTContext();
  auto Arch = scanArchDependence(DB, Path, Opts.ParseArgs);
  if (!Arch) {
    R.Error = llvm::toString(Arch.takeError());
    return R;
  }
  analyzeAST(Ctx, Opts, *Arch, R);
  if (R.Ok)
    R.Dependencies = dependencies(ASTs[0]->getSourceManager());
  if (R.Ok && Opts.CheckLaunchResources &&
      llvm::any_of(R.Loops, [](const LoopRecord &L) { return L.transformed(); }))
    boundLaunches(Ctx, DB, Opts, *Arch, R);
  return R;
}

/// The rewrite must launch wherever the original did (Resources.h): compiles both with nvcc, and
/// either bounds the kernels whose rewrite needs more registers, or leaves every loop as it was.
static void boundLaunches(ASTContext &Ctx, const tooling::CompilationDatabase &DB,
                          const ToolOptions &Opts, const ArchDependence &Arch, FileResult &R) {
  std::string Nvcc = "nvcc";
  for (const std::string &A : Opts.ParseArgs)
    if (StringRef(A).starts_with("--cuda-path="))
      Nvcc = A.substr(12) + "/bin/nvcc";
  std::vector<std::string> Args;
  auto Commands = DB.getCompileCommands(R.Path);
  if (!Commands.empty())
    Args = cudaArgumentsAdjuster(Opts.ParseArgs)(Commands.front().CommandLine, R.Path);
  std::vector<std::string> Archs{"sm_80", "sm_90"};
  if (!llvm::is_contained(Archs, Opts.GpuArch) && StringRef(Opts.GpuArch).starts_with("sm_") &&
      Opts.GpuArch >= "sm_80")
    Archs.push_back(Opts.GpuArch);
  LaunchCheck LC = checkLaunchResources(Ctx, R, Nvcc, Args, Archs);
  if (!LC.KeepWhy.empty()) {
    ToolOptions Keep = Opts;
    Keep.CheckLaunchResources = false;
    for (const LoopRecord &L : R.Loops)
      if (L.transformed())
        Keep.KeepLoops[{L.File, L.Offset}] = LC.KeepWhy;
    FileResult Kept;
    Kept.Path = R.Path;
    Kept.Original = R.Original;
    analyzeAST(Ctx, Keep, Arch, Kept);
    Kept.Dependencies = std::move(R.Dependencies);
    R = std::move(Kept);
    return;
  }
  for (const LaunchCheck::Bound &B : LC.Bounds) {
    for (const tooling::Replacement &E : B.Edits)
      if (llvm::Error Err = R.Edits.add(E)) {
        R.Ok = false;
        R.Error = R.Path + ": error: internal: " + llvm::toString(std::move(Err));
        return;
      }
    // The bounds travel with the first rewritten loop of the kernel, or of the file.
    LoopRecord *Owner = nullptr;
    for (LoopRecord &L : R.Loops)
      if (L.transformed() && L.File == R.Path && (!Owner || (L.Kernel == B.Kernel && Owner->Kernel != B.Kernel)))
        Owner = &L;
    if (Owner) {
      Owner->Edits.insert(Owner->Edits.end(), B.Edits.begin(), B.Edits.end());
      Owner->Detail += "; " + B.Note;
    }
  }
  if (!LC.Bounds.empty()) {
    auto New = tooling::applyAllReplacements(R.Original, R.Edits);
    if (!New) {
      R.Ok = false;
      R.Error = R.Path + ": error: internal: " + llvm::toString(New.takeError());
      return;
    }
    R.Rewritten = *New;
  }
}

std::vector<std::string> dependencies(const SourceManager &SM) {
  std::vector<std::string> Out;
  for (auto It = SM.fileinfo_begin(); It != SM.fileinfo_end(); ++It) {
    // Real paths: the driver spells some system headers through '..' from a guessed install
    // folder, which build tools would collapse into paths that do not exist.
    llvm::SmallString<256> Real;
    if (!llvm::sys::fs::real_path(It->first.getName(), Real))
      Out.push_back(Real.str().str());
  }
  llvm::sort(Out);
  Out.erase(std::unique(Out.begin(), Out.end()), Out.end());
  return Out;
}

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

/// `// tilepipe: skip` and `// tilepipe: stages=N` in the comment lines right above a loop.
struct Annotation {
  bool Skip = false;
  unsigned Stages = 0;
  std::optional<bool> AssumeNoAlias;
  std::optional<PlanPolicy> Plan;
};

static bool annotationsAbove(StringRef Buffer, unsigned Line, const std::string &Path,
                             Annotation &A, std::string &Error) {
  SmallVector<StringRef, 0> Lines;
  Buffer.split(Lines, '\n');
  for (unsigned L = Line - 1; L >= 1 && L <= Lines.size(); --L) {
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
        Error = Path + ":" + std::to_string(L) + ":1: error: malformed tilepipe annotation '" +
                Lines[L - 1].trim().str() + "' (expected 'skip', 'stages=N' with N in 2..8, 'assume-noalias=true|false', or 'plan=always|model')";
        return false;
      }
    }
  }
  return true;
}

/// Annotations are `// tilepipe: ...` line comments right above a loop; a block comment that reads
/// like one (`/* tilepipe: skip */`) is not read, and is worth a warning rather than silence.
static void warnBlockAnnotations(const SourceManager &SM, const LangOptions &LO, FileID FID,
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

/// The measured choice for a legal loop, if any: --plan-choice, or the tuning file's entry for the
/// loop (by file, function, line and architecture) where the loop's text is the one measured. A
/// choice to keep the loop refuses it here (plan-kept), before stages are shared out.
static void measuredChoice(ASTContext &Ctx, const ToolOptions &Opts, const Stmt *Loop,
                           const FunctionDecl *FD, LoopResult &LR) {
  const SourceManager &SM = Ctx.getSourceManager();
  LR.Fingerprint = loopFingerprint(sourceText(Ctx, Loop->getSourceRange()));
  if (Opts.Choice) {
    LR.Forced = Opts.Choice;
    LR.Measured = "the plan --plan-choice=" + Opts.Choice->str() + " asks for";
  } else if (!Opts.Tuning.empty()) {
    PresumedLoc P = SM.getPresumedLoc(SM.getExpansionLoc(Loop->getBeginLoc()));
    const TuningEntry *T = findTuning(Opts.Tuning, P.getFilename(), FD->getNameAsString(),
                                      P.getLine(), Opts.GpuArch);
    if (T && T->Fingerprint != LR.Fingerprint) {
      LR.TuningNote = "the tuning file's entry for this loop was ignored: the loop's text changed "
                      "since it was measured";
    } else if (T) {
      LR.Forced = T->Choice;
      char Speed[32];
      std::snprintf(Speed, sizeof Speed, "%.2fx", T->Speedup);
      LR.Measured = "the tuning file's plan " + T->Choice.str() + " (measured " +
                    (T->Choice.Keep ? std::string("no plan faster") : std::string(Speed)) +
                    (T->Gpu.empty() ? "" : " on " + T->Gpu) + ")";
    }
  }
  if (LR.Forced && LR.Forced->Keep)
    LR.V = Verdict::refuse(Reason::PlanKept, LR.Measured);
}

using LoopKey = std::pair<FileID, unsigned>; ///< a loop's file and the offset of its keyword

static LoopKey loopKey(const SourceManager &SM, const Stmt *S) {
  SourceLocation L = SM.getExpansionLoc(S->getBeginLoc());
  return std::make_pair(SM.getFileID(L), SM.getFileOffset(L));
}

/// Check: every candidate loop of FD with its annotations, and the facts that refuse it beside
/// the loop's own (dynamic shared memory in its kernels, text that differs per architecture, a
/// loop the launch check kept); a loop that passes gets its measured plan, if it has one. False,
/// with ErrorOut, when an annotation cannot be read.
static bool checkFunctionLoops(ASTContext &Ctx, const ToolOptions &Opts, const ArchDependence &Arch,
                               const TranslationUnitIndex &Index, const FunctionDecl *FD,
                               const std::string &Path, std::string &ErrorOut,
                               std::map<LoopKey, Annotation> &Annotations,
                               std::vector<LoopResult> &Local) {
  const SourceManager &SM = Ctx.getSourceManager();
  CheckOptions COpts;
  COpts.AssumeNoAlias = Opts.AssumeNoAlias;
  for (const Candidate &C : findCandidateLoops(FD)) {
    LoopResult LR{FD, {}, {}, std::nullopt, "", Opts.Stages};
    unsigned Line = SM.getExpansionLineNumber(C.Loop->getBeginLoc());
    Annotation A;
    std::string Error;
    FileID LoopFile = loopKey(SM, C.Loop).first;
    if (!annotationsAbove(SM.getBufferData(LoopFile), Line,
                          SM.getFileEntryRefForID(LoopFile)->getName().str(), A, Error)) {
      ErrorOut = Error;
      return false;
    }
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
      LR.V = checkLoop(Ctx, Index, C, LoopOpts, LR.Model);
      // More static shared memory must not crowd out a launch's dynamic shared memory.
      if (LR.V.ok())
        if (std::string Why = dynamicSharedProblem(Ctx, Index, FD); !Why.empty())
          LR.V = Verdict::refuse(Reason::LaunchResources, Why);
      // The analysis saw the text of one architecture; the rewrite runs on several.
      if (LR.V.ok())
        if (std::string Why = archDependentText(Ctx, Index, Arch, FD); !Why.empty())
          LR.V = Verdict::refuse(Reason::ArchDependent, Why);
      SourceLocation At = SM.getExpansionLoc(C.Loop->getBeginLoc());
      auto Kept = Opts.KeepLoops.find(
          {SM.getFileID(At) == SM.getMainFileID() ? Path
                                                  : std::string(SM.getPresumedLoc(At).getFilename()),
           SM.getFileOffset(At)});
      if (LR.V.ok() && Kept != Opts.KeepLoops.end())
        LR.V = Verdict::refuse(Reason::LaunchResources, Kept->second);
      if (LR.V.ok())
        measuredChoice(Ctx, Opts, C.Loop, FD, LR);
    }
    Local.push_back(std::move(LR));
  }
  return true;
}

/// Plan, for one function: its pipelined loops share its static shared memory, so their stages
/// are planned together (planStages), each loop as many as it asked for where they fit; a loop
/// for which none fits is refused (shared-memory).
static void shareStages(std::vector<LoopResult> &Local, const ToolOptions &Opts) {
  std::vector<uint64_t> Bytes;
  uint64_t FunctionShared = 0;
  for (LoopResult &LR : Local)
    if (LR.V.ok()) {
      uint64_t B = 0;
      for (const Tile &T : LR.Model.Tiles)
        B += T.Bytes;
      Bytes.push_back(B);
      FunctionShared = LR.Model.OtherSharedBytes + B;
    }
  uint64_t Other = FunctionShared;
  for (uint64_t B : Bytes)
    Other -= B;
  std::vector<unsigned> Requested;
  for (LoopResult &LR : Local)
    if (LR.V.ok()) {
      unsigned S = LR.AnnotatedStages;
      Requested.push_back(LR.Forced ? LR.Forced->Stages : S ? S : Opts.Stages);
    }
  auto Plan = planStages(Bytes, Other, Requested);
  size_t K = 0;
  for (LoopResult &LR : Local) {
    if (LR.V.ok()) {
      LR.Stages = Plan[K];
      LR.Requested = Requested[K];
      // The most stages the loop could have, the others as planned: what tuning may try.
      for (unsigned S = 6; S >= 2 && !LR.MaxStages; --S) {
        std::vector<unsigned> Try = Requested;
        Try[K] = S;
        if (planStages(Bytes, Other, Try)[K] == S)
          LR.MaxStages = S;
      }
      if (LR.Forced && LR.Stages && *LR.Stages < LR.Forced->Stages) {
        LR.TuningNote = "the measured plan " + LR.Forced->str() + " does not fit the function's shared memory";
        LR.Forced.reset();
      }
      if (!LR.Stages)
        LR.V = Verdict::refuse(Reason::SharedMemory,
                               std::to_string(Bytes[K]) + " bytes of tiles per stage next to " +
                                   std::to_string(Other) + " other bytes");
      else if (*LR.Stages < Requested[K])
        LR.StageNote = std::to_string(Requested[K]) + " stages requested, " +
                       std::to_string(*LR.Stages) + " fit in 48 KiB of static shared memory";
      ++K;
    }
  }
}

void analyzeAST(ASTContext &Ctx, const ToolOptions &Opts, const ArchDependence &Arch,
                FileResult &R) {
  const std::string &Path = R.Path;
  const SourceManager &SM = Ctx.getSourceManager();
  R.Ok = false;
  if (R.Original.empty())
    R.Original = SM.getBufferData(SM.getMainFileID()).str();
  TranslationUnitIndex Index(Ctx);
  FunctionCollector Functions(SM);
  Functions.TraverseDecl(Ctx.getTranslationUnitDecl());
  // The files with device code (the main file and user headers): what --kernel names, and
  // annotations written as block comments.
  std::set<FileID> DeviceFiles{SM.getMainFileID()};
  for (const auto *List : {&Functions.Instances, &Functions.Patterns})
    for (const FunctionDecl *FD : *List) {
      DeviceFiles.insert(SM.getFileID(SM.getExpansionLoc(FD->getLocation())));
      std::string Name = FD->getNameAsString();
      if (llvm::is_contained(Opts.Kernels, Name) && !llvm::is_contained(R.KernelsFound, Name))
        R.KernelsFound.push_back(Name);
    }
  for (FileID FID : DeviceFiles)
    if (auto FE = SM.getFileEntryRefForID(FID))
      warnBlockAnnotations(SM, Ctx.getLangOpts(), FID,
                           FID == SM.getMainFileID() ? StringRef(Path) : FE->getName(), R.Warnings);

  // Results by loop (the location of the loop keyword: file, then offset), one per instantiation.
  std::map<LoopKey, std::vector<LoopResult>> ByLoop;
  auto OffsetOf = [&](const Stmt *S) { return loopKey(SM, S); };
  auto Wanted = [&](const FunctionDecl *FD) {
    return Opts.Kernels.empty() || llvm::is_contained(Opts.Kernels, FD->getNameAsString());
  };
  std::map<LoopKey, Annotation> Annotations;
  for (const FunctionDecl *FD : Functions.Instances) {
    if (!Wanted(FD))
      continue;
    std::vector<LoopResult> Local;
    if (!checkFunctionLoops(Ctx, Opts, Arch, Index, FD, Path, R.Error, Annotations, Local))
      return;
    shareStages(Local, Opts);
    for (LoopResult &LR : Local)
      ByLoop[OffsetOf(LR.Model.Loop)].push_back(std::move(LR));
  }
  std::map<std::pair<FileID, unsigned>, std::pair<const Stmt *, const FunctionDecl *>> Uninstantiated;
  for (const FunctionDecl *FD : Functions.Patterns)
    for (const Candidate &C : Wanted(FD) ? findCandidateLoops(FD) : std::vector<Candidate>())
      if (!ByLoop.count(OffsetOf(C.Loop)))
        Uninstantiated[OffsetOf(C.Loop)] = {C.Loop, FD};

  // Edits by file: the main file's, and those of headers that hold rewritten loops.
  std::map<FileID, tooling::Replacements> All;
  tooling::Replacements FloorEdits;
  const FileID Main = SM.getMainFileID();
  auto Record = [&](const Stmt *Loop, const FunctionDecl *FD) {
    LoopRecord Rec;
    PresumedLoc P = SM.getPresumedLoc(SM.getExpansionLoc(Loop->getBeginLoc()));
    Rec.File = SM.getFileID(SM.getExpansionLoc(Loop->getBeginLoc())) == SM.getMainFileID()
                   ? Path
                   : std::string(P.getFilename());
    Rec.Line = P.getLine();
    Rec.Column = P.getColumn();
    Rec.Kernel = FD->getNameAsString();
    Rec.Offset = SM.getFileOffset(SM.getExpansionLoc(Loop->getBeginLoc()));
    return Rec;
  };
  // Tensor copies (TMA): per kernel, the tiles that take them and the names of the parameters
  // that carry their maps.
  struct TmaKernel {
    const FunctionDecl *Pattern = nullptr;
    std::string Flag;
    std::vector<std::pair<const Tile *, std::string>> Tiles; // with the names of their maps
    std::unique_ptr<FreshNames> Names;
  };
  std::map<const FunctionDecl *, TmaKernel> TmaKernels;
  bool EngineUsed = false; // some loop of the main file copies by tensor or bulk copies
  std::set<FileID> CpAsyncUsed; // the files where some loop became a cuda::pipeline
  auto PatternOf = [](const FunctionDecl *FD) {
    const FunctionDecl *P = FD->getTemplateInstantiationPattern();
    return P ? P : FD;
  };
  auto FunctionText = [&](const FunctionDecl *FD) {
    return sourceText(Ctx, FD->getSourceRange());
  };
  // Why the kernel of FD cannot take tensor maps as parameters, or "".
  auto TmaKernelProblem = [&](const FunctionDecl *FD) -> std::string {
    const FunctionDecl *P = PatternOf(FD);
    if (!P->hasAttr<CUDAGlobalAttr>())
      return "not in a kernel";
    if (SM.getFileID(SM.getExpansionLoc(P->getLocation())) != SM.getMainFileID())
      return "the kernel is not in the main file";
    if (std::distance(P->redecls_begin(), P->redecls_end()) != 1)
      return "the kernel is declared more than once";
    if (FunctionText(P).empty())
      return "the kernel is written in a macro";
    for (const ParmVarDecl *Parm : P->parameters())
      if (Parm->getName().empty() || sourceText(Ctx, Parm->getSourceRange()).empty() ||
          Parm->isParameterPack())
        return "a kernel parameter has no name or is a pack";
    if (P->isVariadic())
      return "the kernel is variadic";
    return kernelSignatureProblem(Ctx, P);
  };
  for (auto &[Off, Results] : ByLoop) {
    LoopRecord Rec = Record(Results.front().Model.Loop, Results.front().Function);
    const LoopResult *Refused = nullptr;
    unsigned Stages = Results.front().Requested;
    std::string Note;
    for (const LoopResult &LR : Results) {
      if (!LR.V.ok()) {
        Refused = &LR;
        break;
      }
      if (*LR.Stages < Stages) {
        Stages = *LR.Stages;
        Note = LR.StageNote;
      }
    }
    if (Refused) {
      Rec.Code = Refused->V.Code;
      Rec.Detail = Refused->V.Detail;
      if (Results.size() > 1 && Refused->Function->getTemplateSpecializationArgs()) {
        std::string Args;
        llvm::raw_string_ostream OS(Args);
        Refused->Function->getNameForDiagnostic(OS, Ctx.getPrintingPolicy(), true);
        Rec.Detail += " (in " + Args + ")";
      }
      R.Loops.push_back(Rec);
      continue;
    }
    // Plan: the stages, how each tile is copied, the names tensor copies add, or keep the loop.
    const FunctionDecl *Kernel = PatternOf(Results.front().Function);
    PlanInputs In;
    In.Mode = Opts.Mode;
    In.Policy = Annotations[Off].Plan.value_or(Opts.Plan);
    In.Stages = Stages;
    In.StageNote = Note;
    In.TmaMinStageBytes = Opts.TmaMinStageBytes;
    In.TmaThreeDimensions = Opts.TmaThreeDimensions;
    In.ModelMinStageBytes = Opts.ModelMinStageBytes;
    In.InMainFile = Off.first == Main;
    if (Opts.Mode != CopyMode::Pipeline)
      In.KernelProblem = TmaKernelProblem(Results.front().Function);
    auto KernelNames = [&]() -> TmaKernel & {
      TmaKernel &K = TmaKernels[Kernel];
      K.Pattern = Kernel;
      if (!K.Names)
        K.Names = std::make_unique<FreshNames>(Ctx, Kernel);
      return K;
    };
    In.Flag = [&] {
      TmaKernel &K = KernelNames();
      if (K.Flag.empty())
        K.Flag = K.Names->get("tilepipe_tma");
      return K.Flag;
    };
    In.FreshName = [&](StringRef Base) { return KernelNames().Names->get(Base); };
    std::vector<const LoopModel *> Models;
    for (const LoopResult &LR : Results)
      Models.push_back(&LR.Model);
    const LoopResult &Front = Results.front();
    Rec.Fingerprint = Front.Fingerprint;
    Rec.Choices = enumeratePlans(Models, In, Front.MaxStages);
    for (const Tile &T : Front.Model.Tiles)
      Rec.Tiles.push_back(T.Var->getNameAsString());
    std::string TuningNote = Front.TuningNote;
    if (Front.Forced) {
      if (std::string Why = choiceProblem(Models, In, *Front.Forced); Why.empty())
        In.Forced = Front.Forced;
      else if (Opts.Choice) {
        Rec.Code = Reason::PlanKept;
        Rec.Detail = "--plan-choice=" + Opts.Choice->str() + " is not legal here: " + Why;
        R.Loops.push_back(Rec);
        continue;
      } else {
        TuningNote = "the tuning file's plan " + Front.Forced->str() + " is not legal here (" + Why +
                     "): planned by the cost model";
      }
    }
    LoopPlan Plan = planLoop(Models, In);
    auto WithNotes = [&](std::string Detail) {
      if (In.Forced && !Front.Measured.empty())
        Detail += (Detail.empty() ? "" : "; ") + Front.Measured;
      if (!TuningNote.empty())
        Detail += (Detail.empty() ? "" : "; ") + TuningNote;
      return Detail;
    };
    if (Plan.Keep) {
      Rec.Code = Reason::NoGain;
      Rec.Detail = WithNotes(*Plan.Keep);
      Rec.Plan = Plan;
      R.Loops.push_back(Rec);
      continue;
    }
    // Emit: every instantiation must ask for the same text.
    std::optional<std::vector<tooling::Replacement>> First;
    std::string Failure;
    Reason FailureCode = Reason::Unsupported;
    for (int Attempt = 0; Attempt < 2; ++Attempt) {
      First.reset();
      Rec.Code = Reason::Pipelined;
      for (const LoopResult &LR : Results) {
        auto Edits = emitPipeline(Ctx, LR.Model, Plan);
        if (!Edits) {
          // Emit says why: its text cannot be cut safely (source-text), or another reason.
          llvm::handleAllErrors(
              Edits.takeError(),
              [&](const EmitError &E) {
                FailureCode = E.Code;
                Failure = E.Detail;
              },
              [&](const llvm::ErrorInfoBase &E) { Failure = E.message(); });
          break;
        }
        if (!First)
          First = *Edits;
        else if (*First != *Edits) {
          Rec.Code = Reason::InstantiationsDisagree;
          break;
        }
      }
      if (Rec.Code != Reason::InstantiationsDisagree || !Failure.empty())
        break;
      // The block-wide copies may be what differs: try once more with per-element copies only.
      Plan = Plan.perElementOnly();
    }
    if (!Failure.empty()) {
      Rec.Code = FailureCode;
      Rec.Detail = Failure;
    }
    if (Rec.Code == Reason::Pipelined) {
      for (const tooling::Replacement &E : *First)
        if (llvm::Error Err = All[Off.first].add(E)) {
          Rec.Code = Reason::Unsupported;
          Rec.Detail = "its edits overlap another rewrite: " + llvm::toString(std::move(Err));
        }
    }
    if (Rec.Code == Reason::Pipelined && Off.first == Main) {
      // The compute-only variant that verify times as the floor of perfect overlap.
      auto Floor = emitPipeline(Ctx, Results.front().Model, Plan, EmitKind::ComputeOnly);
      if (!Floor)
        llvm::consumeError(Floor.takeError());
      else
        for (const tooling::Replacement &E : *Floor)
          llvm::consumeError(FloorEdits.add(E));
    }
    if (Rec.Code == Reason::Pipelined) {
      Rec.Edits = *First;
      Rec.Stages = Plan.Stages; // 1 for the register-staged prefetch
      Rec.Plan = Plan;
      const LoopModel &M = Results.front().Model;
      Rec.Detail = WithNotes(describePlan(M, Plan, Opts.Mode, Rec.Kernel));
      EngineUsed |= Plan.Engine;
      if (!Plan.Registers)
        CpAsyncUsed.insert(Off.first);
      for (size_t T = 0; T < M.Tiles.size(); ++T)
        if (Plan.Engine && Plan.Tiles[T].Kind == CopyKind::Tensor)
          TmaKernels[Kernel].Tiles.push_back({&M.Tiles[T], Plan.Tiles[T].MapName});
    }
    R.Loops.push_back(Rec);
  }
  // Kernels with tensor copies: map parameters, a launcher beside the kernel, launch sites.
  std::vector<const CUDAKernelCallExpr *> Launches;
  if (llvm::any_of(TmaKernels, [](const auto &KV) { return !KV.second.Tiles.empty(); }))
    Launches = hostLaunches(Ctx);
  for (auto &[Key, K] : TmaKernels) {
    if (K.Tiles.empty())
      continue;
    std::string Name = K.Pattern->getNameAsString();
    KernelMaps Maps{K.Pattern, K.Flag, K.Tiles};
    auto Edits = emitKernelMaps(Ctx, Maps, *K.Names, Launches);
    std::string LauncherProblem;
    if (!Edits)
      LauncherProblem = llvm::toString(Edits.takeError());
    else
      for (const tooling::Replacement &E : Edits->Edits)
        if (llvm::Error Err = All[Main].add(E)) {
          LauncherProblem = llvm::toString(std::move(Err));
          break;
        }
    if (!LauncherProblem.empty()) {
      // The loops already read the maps: without the parameters the file would not build.
      R.Error = Path + ": error: internal: cannot give " + Name + " its tensor maps: " + LauncherProblem;
      return;
    }
    // Every record of the kernel names its launch sites; the first carries the kernel's edits, so
    // that each fix stands alone.
    bool First = true;
    for (LoopRecord &L : R.Loops)
      if (L.transformed() && L.Kernel == Name && L.File == Path) {
        L.Detail += "; " + Edits->Sites;
        if (First)
          for (const tooling::Replacement &E : Edits->Edits)
            L.Edits.push_back(E);
        First = false;
      }
  }
  for (auto &[Off, LoopAndFn] : Uninstantiated) {
    LoopRecord Rec = Record(LoopAndFn.first, LoopAndFn.second);
    Rec.Code = Reason::TemplateNotInstantiated;
    R.Loops.push_back(Rec);
  }
  llvm::sort(R.Loops, [&](const LoopRecord &A, const LoopRecord &B) {
    return std::make_tuple(A.File != Path, A.File, A.Line, A.Column) <
           std::make_tuple(B.File != Path, B.File, B.Line, B.Column);
  });
  for (auto &[FID, Edits] : All) {
    if (Edits.empty() || (!CpAsyncUsed.count(FID) && !(FID == Main && EngineUsed)))
      continue; // no cuda::pipeline in this file: the register-staged prefetch needs no header
    if (auto Inc = pipelineInclude(SM, FID, FID == Main && EngineUsed ? std::optional(Opts.Runtime)
                                                                      : std::nullopt)) {
      if (llvm::Error Err = Edits.add(*Inc)) {
        R.Error = Path + ": error: internal: " + llvm::toString(std::move(Err));
        return;
      }
      // The include travels with the file's first rewrite, so that each loop's fix stands alone.
      for (LoopRecord &L : R.Loops)
        if (L.transformed() && !L.Edits.empty() && L.Edits.front().getFilePath() == Inc->getFilePath()) {
          L.Edits.insert(L.Edits.begin(), *Inc);
          break;
        }
    }
  }
  // The text tilepipe adds ends its lines in '\n'; a file whose lines end in "\r\n" gets "\r\n"
  // in every edit, the loop's, the kernel's, the include's and the timing floor's alike.
  std::map<std::string, bool> Crlf; // by the file paths the edits name
  for (auto &[FID, Edits] : All) {
    bool FileUsesCrlf = !Edits.empty() && usesCrlf(SM.getBufferData(FID));
    for (const tooling::Replacement &E : Edits)
      Crlf[E.getFilePath().str()] = FileUsesCrlf;
  }
  auto WithLineEndings = [&](const tooling::Replacement &E) {
    auto It = Crlf.find(E.getFilePath().str());
    return It == Crlf.end() || !It->second ? E : crlfLines(E);
  };
  for (auto &[FID, Edits] : All) {
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
    for (const tooling::Replacement &E : FloorEdits)
      llvm::cantFail(Converted.add(crlfLines(E)));
    FloorEdits = std::move(Converted);
  }
  auto New = tooling::applyAllReplacements(R.Original, All[Main]);
  if (!New) {
    R.Error = Path + ": error: internal: " + llvm::toString(New.takeError());
    return;
  }
  R.Rewritten = *New;
  // Every header with candidate loops is listed, rewritten or not, so that the files including it
  // can be compared: one that leaves a loop alone must not see another rewrite it.
  for (auto &[Key, Results] : ByLoop)
    All[Key.first];
  for (auto &[FID, Edits] : All) {
    if (FID == Main)
      continue;
    HeaderRewrite H;
    llvm::SmallString<256> Real;
    StringRef Name = SM.getFileEntryRefForID(FID)->getName();
    H.Path = llvm::sys::fs::real_path(Name, Real) ? Name.str() : Real.str().str();
    H.Original = SM.getBufferData(FID).str();
    auto Text = tooling::applyAllReplacements(H.Original, Edits);
    if (!Text) {
      R.Error = H.Path + ": error: internal: " + llvm::toString(Text.takeError());
      return;
    }
    H.Rewritten = *Text;
    H.Edits = Edits;
    R.Headers.push_back(std::move(H));
  }
  auto Floor = tooling::applyAllReplacements(R.Original, FloorEdits);
  R.ComputeOnly = Floor ? *Floor : R.Original;
  if (!Floor)
    llvm::consumeError(Floor.takeError());
  R.Edits = All[Main];
  R.Ok = true;
}

} // namespace tilepipe

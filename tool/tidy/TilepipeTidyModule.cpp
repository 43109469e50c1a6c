// tilepipe as a clang-tidy check, for review bots that already run clang-tidy:
//   clang-tidy-22 -load=<libTilepipeTidy.so> -checks=-*,tilepipe-* file.cu -- <CUDA flags>
// One diagnostic per candidate loop (a warning with fix-its where tilepipe rewrites it, a remark
// naming the reason where it does not). `tilepipe-async-*` are `tilepipe audit`'s checks
// (AuditCheck, at the end).
//
// The check gives the tilepipe program's answer, byte for byte: it runs what the program runs
// (processFile: the device parse, nvcc's host pass, the launch check) on the compile command
// clang-tidy was given for the file, read back from this process's command line as clang-tidy
// read it (`-- <flags>`, `-p <dir>` or the database found above the file, `--extra-arg`s, and the
// configuration's ExtraArgs). Its own parse could be another one (the host side, other flags).
// Where that command cannot be found, the loops the analysis would rewrite are left alone with
// the program's reason for a rewrite it cannot check, `launch-resources`.
//
// Options, as the program's of the same names: Stages (3), Mode (auto), Plan (model),
// AssumeNoAlias (false), Runtime (header), CheckLaunchResources (true), TmaMinStageBytes (2048),
// GpuArch (sm_90), CudaPath (found as the program finds it), CacheDir (the launch check's cache,
// as the program's --cache-dir; empty keeps nothing).
#include "tilepipe/Audit.h"
#include "tilepipe/UsageCache.h"
#include "tilepipe/Driver.h"
#include "tilepipe/Parse.h"
#include "clang-tidy/ClangTidyCheck.h"
#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "clang-tidy/ClangTidyModule.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Preprocessor.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CommonOptionsParser.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace tilepipe::tidy {

namespace {

/// The file that records, findings and edits name: the main file (by MainPath, as the analysis
/// named it) or a header it includes; invalid where clang-tidy's parse has no such file.
FileID fileIn(const SourceManager &SM, StringRef MainPath, StringRef File) {
  if (File == MainPath)
    return SM.getMainFileID();
  auto FE = SM.getFileManager().getOptionalFileRef(File);
  return FE ? SM.translateFile(*FE) : FileID();
}

SourceLocation locationIn(const SourceManager &SM, StringRef MainPath, StringRef File, unsigned Offset) {
  FileID F = fileIn(SM, MainPath, File);
  return F.isValid() ? SM.getLocForStartOfFile(F).getLocWithOffset(Offset) : SourceLocation();
}

/// An edit of the program's as a fix-it of clang-tidy's parse.
std::optional<FixItHint> fixItOf(const SourceManager &SM, StringRef MainPath, const tooling::Replacement &E) {
  SourceLocation B = locationIn(SM, MainPath, E.getFilePath(), E.getOffset());
  if (B.isInvalid())
    return std::nullopt;
  return FixItHint::CreateReplacement(CharSourceRange::getCharRange(B, B.getLocWithOffset(E.getLength())),
                                      E.getReplacementText());
}

llvm::Error commandError(const llvm::Twine &Why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Why);
}

/// The value of option Name in Args[I] (`-Name=V`, `--Name=V`, or `-Name V` / `--Name V`, then
/// I moves past V), or nothing.
std::optional<std::string> optionValue(llvm::ArrayRef<std::string> Args, size_t &I, llvm::StringRef Name) {
  llvm::StringRef A = Args[I];
  if (!A.consume_front("--") && !A.consume_front("-"))
    return std::nullopt;
  if (!A.consume_front(Name))
    return std::nullopt;
  if (A.consume_front("="))
    return A.str();
  if (!A.empty() || I + 1 >= Args.size())
    return std::nullopt;
  return Args[++I];
}

/// The compile commands of this clang-tidy run, as clang-tidy's command line gave them: the
/// flags after `--`, else the database in the folder of `-p`, else the one found above File; with
/// `--extra-arg-before` and `--extra-arg` as clang-tidy adds them. Linux: /proc/self/cmdline.
llvm::Expected<std::unique_ptr<tooling::CompilationDatabase>>
commandsOfThisRun(llvm::StringRef File, const clang::tidy::ClangTidyContext &Context) {
  auto Buf = llvm::MemoryBuffer::getFileAsStream("/proc/self/cmdline");
  if (!Buf)
    return commandError("cannot read this process's command line (/proc/self/cmdline)");
  llvm::SmallVector<llvm::StringRef, 32> Parts;
  (*Buf)->getBuffer().split(Parts, '\0');
  if (!Parts.empty() && Parts.back().empty())
    Parts.pop_back();
  std::vector<std::string> Args(Parts.begin(), Parts.end());
  if (Args.empty() || !llvm::sys::path::filename(Args[0]).contains("clang-tidy"))
    return commandError("the check was not loaded by clang-tidy");
  auto Dash = llvm::find(Args, "--");
  std::string BuildPath, Err;
  std::vector<std::string> Before, After;
  for (size_t I = 1; I < size_t(Dash - Args.begin()); ++I) {
    // clang-tidy reads the options of a response file where it stands: not followed here.
    if (llvm::StringRef(Args[I]).starts_with("@"))
      return commandError("clang-tidy's options are in a response file (" + Args[I] + "), which the check does not read");
    if (auto V = optionValue(Args, I, "p"))
      BuildPath = *V;
    else if (auto V = optionValue(Args, I, "extra-arg-before"))
      Before.push_back(*V);
    else if (auto V = optionValue(Args, I, "extra-arg"))
      After.push_back(*V);
  }
  std::unique_ptr<tooling::CompilationDatabase> DB;
  if (Dash != Args.end()) {
    std::vector<const char *> Argv;
    for (const std::string &A : Args)
      Argv.push_back(A.c_str());
    int Argc = int(Argv.size());
    DB = tooling::FixedCompilationDatabase::loadFromCommandLine(Argc, Argv.data(), Err);
  } else if (!BuildPath.empty()) {
    DB = tooling::CompilationDatabase::autoDetectFromDirectory(BuildPath, Err);
  } else {
    DB = tooling::CompilationDatabase::autoDetectFromSource(File, Err);
  }
  if (!DB)
    return commandError("no compile command found for the file" + (Err.empty() ? "" : ": " + Err));
  // Where clang-tidy's parse ran: a command found elsewhere is not the one it was given.
  auto Commands = DB->getCompileCommands(File);
  if (Commands.empty())
    return commandError("the compile commands found have none for the file");
  bool Same = false;
  if (llvm::sys::fs::equivalent(Commands.front().Directory, Context.getCurrentBuildDirectory(), Same) || !Same)
    return commandError("the compile command found runs in '" + Commands.front().Directory +
                        "', clang-tidy's in '" + Context.getCurrentBuildDirectory() + "'");
  // The configuration's ExtraArgsBefore and ExtraArgs, as clang-tidy adds them to every command.
  clang::tidy::ClangTidyOptions Config = Context.getOptionsForFile(File);
  if (Config.ExtraArgsBefore)
    Before.insert(Before.end(), Config.ExtraArgsBefore->begin(), Config.ExtraArgsBefore->end());
  if (Config.ExtraArgs)
    After.insert(After.end(), Config.ExtraArgs->begin(), Config.ExtraArgs->end());
  auto Adjusting = std::make_unique<tooling::ArgumentsAdjustingCompilations>(std::move(DB));
  Adjusting->appendArgumentsAdjuster(
      tooling::getInsertArgumentAdjuster(Before, tooling::ArgumentInsertPosition::BEGIN));
  Adjusting->appendArgumentsAdjuster(
      tooling::getInsertArgumentAdjuster(After, tooling::ArgumentInsertPosition::END));
  return std::move(Adjusting);
}

} // namespace

class PipelineCheck : public clang::tidy::ClangTidyCheck {
public:
  PipelineCheck(StringRef Name, clang::tidy::ClangTidyContext *Context)
      : ClangTidyCheck(Name, Context), Context(Context) {
    // The string forms only: the templated option readers live in clang-tidy and are not all
    // exported to modules. Defaults are the program's (ToolOptions).
    const ToolOptions D;
    auto Flag = [&](StringRef Key, bool Default) {
      StringRef V = Options.get(Key, Default ? "true" : "false");
      if (V == "true" || V == "1" || V == "false" || V == "0")
        return V == "true" || V == "1";
      Bad.push_back(Key.str() + ": '" + V.str() + "' is not true or false");
      return Default;
    };
    StringRef S = Options.get("Stages", std::to_string(D.Stages));
    if (S.getAsInteger(10, Opts.Stages) || Opts.Stages < 2 || Opts.Stages > 8) {
      Bad.push_back("Stages: '" + S.str() + "' is not 2 to 8");
      Opts.Stages = D.Stages;
    }
    StringRef M = Options.get("Mode", "auto");
    if (M == "pipeline")
      Opts.Mode = CopyMode::Pipeline;
    else if (M == "tma")
      Opts.Mode = CopyMode::Tma;
    else if (M != "auto")
      Bad.push_back("Mode: '" + M.str() + "' is not pipeline, tma or auto");
    StringRef P = Options.get("Plan", "model");
    if (P == "always")
      Opts.Plan = PlanPolicy::Always;
    else if (P != "model")
      Bad.push_back("Plan: '" + P.str() + "' is not model or always");
    StringRef R = Options.get("Runtime", "header");
    if (R == "inline")
      Opts.Runtime = RuntimeMode::Inline;
    else if (R != "header")
      Bad.push_back("Runtime: '" + R.str() + "' is not header or inline");
    StringRef T = Options.get("TmaMinStageBytes", std::to_string(D.TmaMinStageBytes));
    if (T.getAsInteger(10, Opts.TmaMinStageBytes)) {
      Bad.push_back("TmaMinStageBytes: '" + T.str() + "' is not a number");
      Opts.TmaMinStageBytes = D.TmaMinStageBytes;
    }
    Opts.AssumeNoAlias = Flag("AssumeNoAlias", D.AssumeNoAlias);
    Opts.CheckLaunchResources = Flag("CheckLaunchResources", D.CheckLaunchResources);
    Opts.GpuArch = Options.get("GpuArch", D.GpuArch).str();
    Opts.LaunchCacheDir = Options.get("CacheDir", defaultCacheDir()).str();
    CudaPath = Options.get("CudaPath", "").str();
  }

  void storeOptions(clang::tidy::ClangTidyOptions::OptionMap &Map) override {
    Options.store(Map, "Stages", std::to_string(Opts.Stages));
    Options.store(Map, "Mode", Opts.Mode == CopyMode::Pipeline ? "pipeline" : Opts.Mode == CopyMode::Tma ? "tma" : "auto");
    Options.store(Map, "Plan", Opts.Plan == PlanPolicy::Always ? "always" : "model");
    Options.store(Map, "AssumeNoAlias", Opts.AssumeNoAlias ? "true" : "false");
    Options.store(Map, "Runtime", Opts.Runtime == RuntimeMode::Inline ? "inline" : "header");
    Options.store(Map, "CheckLaunchResources", Opts.CheckLaunchResources ? "true" : "false");
    Options.store(Map, "TmaMinStageBytes", std::to_string(Opts.TmaMinStageBytes));
    Options.store(Map, "GpuArch", Opts.GpuArch);
    Options.store(Map, "CacheDir", Opts.LaunchCacheDir);
    Options.store(Map, "CudaPath", CudaPath);
  }

  void registerPPCallbacks(const SourceManager &, Preprocessor *PP, Preprocessor *) override {
    Arch = std::make_unique<ArchDependence>();
    PP->addPPCallbacks(archDependenceCollector(*PP, *Arch));
  }

  void registerMatchers(MatchFinder *Finder) override {
    Finder->addMatcher(translationUnitDecl().bind("tu"), this);
  }

  void check(const MatchFinder::MatchResult &Result) override {
    ASTContext &Ctx = *Result.Context;
    const SourceManager &SM = Ctx.getSourceManager();
    SourceLocation Start = SM.getLocForStartOfFile(SM.getMainFileID());
    for (const std::string &B : Bad)
      diag(Start, "tilepipe-pipeline: option %0; the default is used instead") << B;
    std::string Path = SM.getFileEntryRefForID(SM.getMainFileID())->getName().str();
    auto Cuda = findCudaToolkit(CudaPath);
    if (!Cuda) {
      diag(Start, "tilepipe could not analyze this file: %0") << llvm::toString(Cuda.takeError());
      return;
    }
    ToolOptions Run = Opts;
    Run.ParseArgs = cudaParseArgs(*Cuda, Run.GpuArch);
    FileResult R;
    if (auto DB = commandsOfThisRun(Path, *Context)) {
      R = processFile(**DB, Path, Run);
      if (R.Ok && R.Original != SM.getBufferData(SM.getMainFileID()))
        R = keepAll(Ctx, Run, Path, "the file changed on disk while clang-tidy read it");
    } else {
      R = keepAll(Ctx, Run, Path, "the clang-tidy check could not find the file's compile command (" +
                                      llvm::toString(DB.takeError()) +
                                      "), which nvcc's host pass and the launch check need");
    }
    if (!R.Ok) {
      diag(Start, "tilepipe could not analyze this file: %0") << R.Error;
      return;
    }
    for (const LoopRecord &L : R.Loops) {
      SourceLocation Loc = locationIn(SM, R.Path, L.File, L.Offset);
      if (Loc.isInvalid())
        continue;
      auto D = diag(Loc, "%0", L.transformed() ? DiagnosticIDs::Warning : DiagnosticIDs::Remark)
               << remarkText(L);
      for (const tooling::Replacement &E : L.Edits)
        if (std::optional<FixItHint> Fix = fixItOf(SM, R.Path, E))
          D << *Fix;
    }
  }

private:
  /// The analysis of clang-tidy's own parse, with every loop it would rewrite left alone: Why
  /// says what could not be run.
  FileResult keepAll(ASTContext &Ctx, const ToolOptions &Run, const std::string &Path, const std::string &Why) {
    FileResult R;
    R.Path = Path;
    if (!Arch) {
      R.Error = "the preprocessor was not watched";
      return R;
    }
    ToolOptions Keep = Run;
    Keep.CheckLaunchResources = false;
    analyzeAST(Ctx, Keep, *Arch, R);
    if (!R.Ok)
      return R;
    for (const LoopRecord &L : R.Loops)
      if (L.transformed())
        Keep.KeepLoops[{L.File, L.Offset}] = Verdict::refuse(Reason::LaunchResources, Why);
    FileResult Kept;
    Kept.Path = Path;
    analyzeAST(Ctx, Keep, *Arch, Kept);
    return Kept;
  }

  clang::tidy::ClangTidyContext *Context;
  std::unique_ptr<ArchDependence> Arch; ///< filled while clang-tidy's parse is preprocessed
  ToolOptions Opts;                     ///< the options above, all but ParseArgs
  std::string CudaPath;
  std::vector<std::string> Bad; ///< options that could not be read
};

/// `tilepipe audit` as clang-tidy checks, one per finding's ID (`tilepipe-async-slow-path`,
/// `tilepipe-async-stage-count`, ...): the audit of clang-tidy's own parse of the file (it reads
/// the copies as compiled for the device, which that parse has as written), each finding a
/// warning at the copy or declaration at fault, its notes as notes, its fix as a fix-it.
class AuditCheck : public clang::tidy::ClangTidyCheck {
public:
  AuditCheck(StringRef Name, clang::tidy::ClangTidyContext *Context, Reason Code)
      : ClangTidyCheck(Name, Context), Code(Code) {}

  void registerMatchers(MatchFinder *Finder) override {
    Finder->addMatcher(translationUnitDecl().bind("tu"), this);
  }

  void check(const MatchFinder::MatchResult &Result) override {
    ASTContext &Ctx = *Result.Context;
    const SourceManager &SM = Ctx.getSourceManager();
    OptionalFileEntryRef Main = SM.getFileEntryRefForID(SM.getMainFileID());
    if (!Main)
      return;
    std::string Path = Main->getName().str();
    auto LocOf = [&](const Place &P) {
      FileID F = fileIn(SM, Path, P.File);
      return F.isValid() ? SM.translateLineCol(F, P.Line, P.Column) : SourceLocation();
    };
    for (const AuditFinding &F : auditAST(Ctx, Path)) {
      SourceLocation Loc = LocOf(F.At);
      if (F.Code != Code || Loc.isInvalid())
        continue;
      {
        auto D = diag(Loc, "%0", F.Remark ? DiagnosticIDs::Remark : DiagnosticIDs::Warning) << F.Detail;
        for (const tooling::Replacement &E : F.Fixes)
          if (std::optional<FixItHint> Fix = fixItOf(SM, Path, E))
            D << *Fix;
      }
      for (const auto &[P, Note] : F.Notes)
        if (SourceLocation N = LocOf(P); N.isValid())
          diag(N, "%0", DiagnosticIDs::Note) << Note;
    }
  }

private:
  Reason Code;
};

class TilepipeModule : public clang::tidy::ClangTidyModule {
public:
  void addCheckFactories(clang::tidy::ClangTidyCheckFactories &Factories) override {
    Factories.registerCheck<PipelineCheck>("tilepipe-pipeline");
    for (const ReasonInfo &I : allReasons())
      if (I.Id.starts_with("async-")) {
        Reason Code = I.Code;
        Factories.registerCheckFactory(("tilepipe-" + I.Id).str(),
                                       [Code](StringRef Name, clang::tidy::ClangTidyContext *Context) {
                                         return std::make_unique<AuditCheck>(Name, Context, Code);
                                       });
      }
  }
};

} // namespace tilepipe::tidy

static clang::tidy::ClangTidyModuleRegistry::Add<tilepipe::tidy::TilepipeModule>
    Registration("tilepipe-module", "Rewrites tiled CUDA loops into cp.async pipelines.");

// Driver: one file through the steps (DriverSteps.h): parse (processFile), then analyzeAST:
// check, plan and emit, render; then the launch check (boundLaunches).
#include "tilepipe/Driver.h"
#include "tilepipe/Audit.h"
#include "tilepipe/AstUtil.h"
#include "DriverSteps.h"
#include "tilepipe/Find.h"
#include "tilepipe/Parse.h"
#include "tilepipe/Resources.h"
#include "tilepipe/Runtime.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/VirtualFileSystem.h"
#include <functional>
#include <optional>
#include <set>
#include <tuple>

using namespace clang;

namespace tilepipe {

std::string LoopRecord::message() const {
  if (!transformed())
    return reasonInfo(Code).Message.str() + (Detail.empty() ? "" : ": " + Detail);
  std::string What = !Plan || !Plan->Registers ? "into a " + std::to_string(Stages) + "-stage cp.async pipeline"
                     : Stages > 1 ? "with a register-staged prefetch of the next " + std::to_string(Stages) + " tiles"
                                  : std::string("with a register-staged prefetch of the next tile");
  return "rewritten " + What + (Detail.empty() ? "" : "; " + Detail);
}

namespace {

/// Device functions of the main file and of the user's headers (not system headers):
/// instantiations of templates too, and patterns apart.
class FunctionCollector : public RecursiveASTVisitor<FunctionCollector> {
public:
  explicit FunctionCollector(const SourceManager &SM) : SM(SM) {}
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool VisitFunctionDecl(FunctionDecl *FD) {
    if (!isDeviceCode(FD) || !inUserFile(SM, FD->getLocation()) || FD->isInvalidDecl())
      return true;
    (FD->isDependentContext() ? Patterns : Instances).push_back(FD);
    return true;
  }
  const SourceManager &SM;
  std::vector<const FunctionDecl *> Instances, Patterns;
};

/// Clang's diagnostics of the device parse: warnings and notes printed as Clang prints them;
/// errors (and their notes) kept as facts instead, since a file nvcc builds can hold text that
/// Clang rejects, and Clang recovers: the loops the errors cannot reach are still analysed.
class ParseDiagnostics : public DiagnosticConsumer {
public:
  ParseDiagnostics() : Printer(llvm::errs(), Opts) {}
  void BeginSourceFile(const LangOptions &LO, const Preprocessor *PP) override {
    Printer.BeginSourceFile(LO, PP);
  }
  void EndSourceFile() override { Printer.EndSourceFile(); }
  void HandleDiagnostic(DiagnosticsEngine::Level Level, const Diagnostic &Info) override {
    DiagnosticConsumer::HandleDiagnostic(Level, Info);
    if (Level == DiagnosticsEngine::Note && InError)
      return;
    InError = Level >= DiagnosticsEngine::Error;
    if (!InError) {
      Printer.HandleDiagnostic(Level, Info);
      return;
    }
    Fatal |= Level == DiagnosticsEngine::Fatal;
    ArchDependence::ParseError E;
    llvm::SmallString<128> Message;
    Info.FormatDiagnostic(Message);
    E.Message = Message.str().str();
    if (Info.hasSourceManager() && Info.getLocation().isValid()) {
      const SourceManager &SM = Info.getSourceManager();
      SourceLocation L = SM.getExpansionLoc(Info.getLocation());
      if (auto FE = SM.getFileEntryRefForID(SM.getFileID(L))) {
        E.At = {FE->getName().str(), SM.getFileOffset(L)};
        E.Line = SM.getExpansionLineNumber(L);
        E.Column = SM.getExpansionColumnNumber(L);
      }
    }
    Errors.push_back(std::move(E));
  }
  /// "file:line:col: <Kind>: message", Clang's way.
  static std::string line(const ArchDependence::ParseError &E, StringRef Kind) {
    std::string At = E.At.File.empty() ? "<command line>"
                                       : E.At.File + ":" + std::to_string(E.Line) + ":" + std::to_string(E.Column);
    return At + ": " + Kind.str() + ": " + E.Message;
  }
  std::vector<ArchDependence::ParseError> Errors;
  bool Fatal = false;

private:
  DiagnosticOptions Opts;
  TextDiagnosticPrinter Printer;
  bool InError = false;
};

/// The parse as a frontend action: the device pass's preprocessor facts collected into Arch as
/// the parse reads the file, and Then called on the AST at the end of the translation unit, while
/// the AST lives.
class ParseThen : public tooling::FrontendActionFactory {
public:
  using Step = std::function<void(ASTContext &)>;
  ParseThen(ArchDependence &Arch, Step Then) : Arch(Arch), Then(std::move(Then)) {}
  std::unique_ptr<FrontendAction> create() override { return std::make_unique<Action>(Arch, Then); }

private:
  class Consumer : public ASTConsumer {
  public:
    Consumer(ArchDependence &Arch, Step &Then, CompilerInstance &CI) : Arch(Arch), Then(Then), CI(CI) {}
    void HandleTranslationUnit(ASTContext &Ctx) override {
      // The parser has read the translation unit to its end (the collector's EndOfMainFile comes
      // later, when the action ends; a fatal error, which ends the reading early, fails the file).
      Arch.Complete = true;
      // Templates nothing instantiates get instantiations of common tile sizes to be analysed in.
      if (CI.hasSema())
        probeTemplates(CI.getSema());
      Then(Ctx);
    }

  private:
    ArchDependence &Arch;
    Step &Then;
    CompilerInstance &CI;
  };
  class Action : public ASTFrontendAction {
  public:
    Action(ArchDependence &Arch, Step &Then) : Arch(Arch), Then(Then) {}
    bool BeginSourceFileAction(CompilerInstance &CI) override {
      CI.getPreprocessor().addPPCallbacks(archDependenceCollector(CI.getPreprocessor(), Arch));
      return true;
    }
    std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI, StringRef) override {
      return std::make_unique<Consumer>(Arch, Then, CI);
    }

  private:
    ArchDependence &Arch;
    Step &Then;
  };
  ArchDependence &Arch;
  Step Then;
};

} // namespace

static void boundLaunches(ASTContext &Ctx, const tooling::CompilationDatabase &DB,
                          const ToolOptions &Opts, const ArchDependence &Arch, FileResult &R);

namespace {
class ParseDiagnostics;
}
static void analyzeParsed(ASTContext &Ctx, const tooling::CompilationDatabase &DB,
                          const ToolOptions &Opts, const ParseDiagnostics &Diags, HostPass &Host,
                          ArchDependence &Arch, FileResult &R);

/// What nvcc declares and Clang's CUDA headers do not:
/// - the host overloads of min and max (crt/math_functions.hpp declares them __host__ __device__;
///   Clang's headers, for the device only), which host code calls unqualified. Device code cannot
///   call a __host__ function, so no device call resolves to one;
/// - the cache-operator loads and stores that Clang's headers lack (__ldca, __ldlu, __stwb, __stcg,
///   __stcs; sm_32_intrinsics.h declares them for these types). The analysis knows them as the
///   toolkit's (isToolkitRuntime): they reach memory only through their pointer arguments, reading
///   (__ldca, __ldlu) or writing (the stores, through their non-const pointer) what it points to.
/// Declarations only: the parse is analysed, never compiled; nvcc builds the output with its own.
static llvm::StringRef nvccPrelude() {
  return R"(#pragma clang system_header
#define TILEPIPE_PRELUDE_MINMAX(F)                                                            \
  __host__ unsigned int F(unsigned int, unsigned int);                                        \
  __host__ unsigned int F(int, unsigned int);                                                 \
  __host__ unsigned int F(unsigned int, int);                                                 \
  __host__ long F(long, long);                                                                \
  __host__ unsigned long F(unsigned long, unsigned long);                                     \
  __host__ unsigned long F(long, unsigned long);                                              \
  __host__ unsigned long F(unsigned long, long);                                              \
  __host__ long long F(long long, long long);                                                 \
  __host__ unsigned long long F(unsigned long long, unsigned long long);                      \
  __host__ unsigned long long F(long long, unsigned long long);                               \
  __host__ unsigned long long F(unsigned long long, long long);                               \
  __host__ float F(float, float);                                                             \
  __host__ double F(double, double);                                                          \
  __host__ double F(float, double);                                                           \
  __host__ double F(double, float);                                                           \
  __host__ int F(int, int);
TILEPIPE_PRELUDE_MINMAX(min)
TILEPIPE_PRELUDE_MINMAX(max)
#undef TILEPIPE_PRELUDE_MINMAX
#define TILEPIPE_PRELUDE_CACHE_OPS(T)                                                         \
  __device__ T __ldca(const T *);                                                             \
  __device__ T __ldlu(const T *);                                                             \
  __device__ void __stwb(T *, T);                                                             \
  __device__ void __stcg(T *, T);                                                             \
  __device__ void __stcs(T *, T);
#define TILEPIPE_PRELUDE_CACHE_OPS_ALL(X)                                                     \
  X(char) X(signed char) X(short) X(int) X(long) X(long long) X(unsigned char)                \
  X(unsigned short) X(unsigned int) X(unsigned long) X(unsigned long long) X(float) X(double) \
  X(char2) X(char4) X(short2) X(short4) X(int2) X(int4) X(longlong2) X(uchar2) X(uchar4)      \
  X(ushort2) X(ushort4) X(uint2) X(uint4) X(ulonglong2) X(float2) X(float4) X(double2)
TILEPIPE_PRELUDE_CACHE_OPS_ALL(TILEPIPE_PRELUDE_CACHE_OPS)
#undef TILEPIPE_PRELUDE_CACHE_OPS_ALL
#undef TILEPIPE_PRELUDE_CACHE_OPS
)";
}

void prepareParse(tooling::ClangTool &Tool, const ToolOptions &Opts) {
  // The runtime header, for a file that includes it (tilepipe's own output): from a folder only this
  // parse sees, searched after the user's own, so that no -I is needed to read such a file.
  // ClangTool keeps the path and the text by reference: both must outlive Tool.
  auto InVirtualDir = [](StringRef Name) {
    llvm::SmallString<128> P(virtualRuntimeDir());
    llvm::sys::path::append(P, Name);
    return std::string(P);
  };
  static const std::string RuntimeFile = InVirtualDir(runtimeHeaderName());
  static const std::string PreludeFile = InVirtualDir(nvccPreludeName());
  Tool.mapVirtualFile(RuntimeFile, runtimeHeaderText());
  Tool.mapVirtualFile(PreludeFile, nvccPrelude());
  for (const auto &[Header, Text] : cudaHeaderOverlays(Opts.ParseArgs))
    Tool.mapVirtualFile(Header, Text);
  std::vector<std::string> ParseArgs = Opts.ParseArgs;
  // Every error, however many: each one keeps the loops it reaches, and a limit would end the
  // parse (a fatal error) where nvcc's would go on. `register`, which C++17 removed, nvcc's host
  // compilers and nvcc itself still take (with a warning): so does this parse.
  ParseArgs.insert(ParseArgs.end(), {"-idirafter", virtualRuntimeDir().str(), "-ferror-limit=0",
                                     "-Wno-register", "-include", PreludeFile});
  Tool.appendArgumentsAdjuster(cudaArgumentsAdjuster(ParseArgs));
}

/// Errors Clang recovered from, as warnings of R: said once each (the first few), with what the
/// step makes of them (Consequence). The main file by the name it was given, as remarks name it.
static void parseErrorWarnings(const SourceManager &SM, const ParseDiagnostics &Diags, StringRef Path,
                               StringRef Consequence, FileResult &R) {
  std::string MainName = SM.getFileEntryRefForID(SM.getMainFileID())->getName().str();
  for (size_t I = 0; I < Diags.Errors.size() && I < 3; ++I) {
    ArchDependence::ParseError E = Diags.Errors[I];
    if (E.At.File == MainName)
      E.At.File = Path.str();
    R.Warnings.push_back(ParseDiagnostics::line(E, "warning") + " [Clang cannot parse this; " + Consequence.str() + "]");
  }
  if (Diags.Errors.size() > 3)
    R.Warnings.push_back(Path.str() + ": warning: " + std::to_string(Diags.Errors.size() - 3) +
                         " more error(s) that Clang recovered from");
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
  for (const tooling::CompileCommand &C : DB.getCompileCommands(Path)) {
    if (R.Directory.empty())
      R.Directory = C.Directory;
    if (std::string O = unfollowedOption(C.CommandLine); !O.empty()) {
      R.Error = Path + ": error: the compile command's option '" + O +
                "' changes what the preprocessor reads, and tilepipe cannot follow it; nothing was written";
      return R;
    }
  }
  tooling::ClangTool Tool(DB, {Path}, std::make_shared<PCHContainerOperations>(),
                          llvm::vfs::createPhysicalFileSystem());
  prepareParse(Tool, Opts);
  ParseDiagnostics Diags;
  Tool.setDiagnosticConsumer(&Diags);
  // One parse: the device pass's preprocessor facts are collected as it goes, and every later
  // step runs on its AST before the parse ends (analyzeParsed).
  ArchDependence Arch;
  bool Parsed = false;
  // nvcc's host pass, preprocessed on a thread of its own while the device parse runs.
  std::optional<HostPass> Host;
  if (!Opts.Audit)
    Host.emplace(DB, Path, Opts.ParseArgs);
  ParseThen Factory(Arch, [&](ASTContext &Ctx) {
    Parsed = true;
    if (!Opts.Audit) {
      analyzeParsed(Ctx, DB, Opts, Diags, *Host, Arch, R);
      return;
    }
    // The audit reads the code as Clang parsed it; what Clang could not parse it cannot review.
    R.Findings = auditAST(Ctx, Path);
    R.Rewritten = R.Original;
    R.Ok = true;
    parseErrorWarnings(Ctx.getSourceManager(), Diags, Path, "the audit reads the rest", R);
  });
  Tool.run(&Factory); // its status counts the errors Clang recovered from: Parsed says more
  if (!Parsed && R.Error.empty()) {
    for (const ArchDependence::ParseError &E : Diags.Errors)
      R.Error += ParseDiagnostics::line(E, "error") + "\n";
    R.Error += Path + ": error: the file could not be parsed as CUDA; nothing was written";
  }
  return R;
}

/// processFile's steps after the parse, on its AST: the host pass, the analysis, the launch check.
static void analyzeParsed(ASTContext &Ctx, const tooling::CompilationDatabase &DB,
                          const ToolOptions &Opts, const ParseDiagnostics &Diags, HostPass &Host,
                          ArchDependence &Arch, FileResult &R) {
  const std::string &Path = R.Path;
  if (Diags.Fatal || (Ctx.getDiagnostics().hasErrorOccurred() && Diags.Errors.empty())) {
    // Clang could not go on (a missing header, say): nothing of the file can be trusted.
    for (const ArchDependence::ParseError &E : Diags.Errors)
      R.Error += ParseDiagnostics::line(E, "error") + "\n";
    R.Error += Path + ": error: the file could not be parsed as CUDA; nothing was written";
    return;
  }
  if (llvm::Error E = Host.finish(Arch)) {
    R.Error = llvm::toString(std::move(E));
    return;
  }
  // The names the rewrite declares must not be macros of nvcc's host pass either (defined in a
  // host-only header, say): the namer asks the identifier table whether a name ever was a macro.
  // Marked so (had one, has none now: the parse is over), as an #undef would leave it.
  for (const std::string &M : Arch.HostMacros)
    if (IdentifierInfo &II = Ctx.Idents.get(M); !II.hadMacroDefinition()) {
      II.setHasMacroDefinition(true);
      II.setHasMacroDefinition(false);
    }
  Arch.ParseErrors = Diags.Errors;
  parseErrorWarnings(Ctx.getSourceManager(), Diags, Path,
                     "the loops it reaches are left alone: parse-error-nearby", R);
  analyzeAST(Ctx, Opts, Arch, R);
  if (R.Ok) {
    R.Dependencies = dependencies(Ctx.getSourceManager(), R.Directory);
    R.UserFiles = userFiles(Ctx.getSourceManager(), R.Directory);
  }
  if (R.Ok && Opts.CheckLaunchResources &&
      llvm::any_of(R.Loops, [](const LoopRecord &L) { return L.transformed(); }))
    boundLaunches(Ctx, DB, Opts, Arch, R);
}

/// The rewrite must launch wherever the original did (Resources.h): compiles both with nvcc, and
/// either bounds the kernels whose rewrite needs more registers, or leaves every loop as it was;
/// the loops the cost model planned in a kernel the rewrite makes spill stay as they were.
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
  UsageCache Cache(Opts.LaunchCacheDir);
  LaunchCheck LC = checkLaunchResources(Ctx, R, Nvcc, Args, Archs, Cache);
  R.LaunchBuilds = Cache.builds();
  R.LaunchBuildsCached = Cache.hits();
  // The loops the check keeps: every rewritten loop where the check could not be made or its fix
  // not placed (KeepWhy); else the loops the cost model planned in a kernel that ptxas spills more
  // in the rewrite than in the original (Spills). The model counts a rewrite's registers as free,
  // and a spill (most often under the __launch_bounds__ that keep the original's block sizes)
  // sends its prefetch through local memory. A loop in a function the kernel calls is named by
  // that function, not the kernel, and is not kept by the spill rule.
  ToolOptions Keep = Opts;
  for (const LoopRecord &L : R.Loops) {
    if (!L.transformed())
      continue;
    if (!LC.KeepWhy.empty())
      Keep.KeepLoops[{L.File, L.Offset}] = Verdict::refuse(Reason::LaunchResources, LC.KeepWhy);
    else if (auto It = LC.Unbounded.find(L.Kernel); It != LC.Unbounded.end())
      Keep.KeepLoops[{L.File, L.Offset}] = Verdict::refuse(Reason::LaunchResources, It->second);
    else if (!LC.Unbounded.empty() && !LC.KernelNames.count(L.Kernel))
      Keep.KeepLoops[{L.File, L.Offset}] = Verdict::refuse(
          Reason::LaunchResources, LC.Unbounded.begin()->second + ", and may run this loop's function");
    else if (auto It = LC.Spills.find(L.Kernel); It != LC.Spills.end() && L.Plan && L.Plan->Source == "model")
      Keep.KeepLoops[{L.File, L.Offset}] = Verdict::refuse(
          Reason::NoGain, It->second + "; its prefetch would go through local memory (--plan=always rewrites it)");
    // The model takes the register-staged prefetch where a pipeline would not pay, counting its
    // registers as free; where they cost the kernel warps on an SM (which hide the original's
    // load latency too), it keeps the loop.
    else if (auto It = LC.FewerWarps.find(L.Kernel);
             It != LC.FewerWarps.end() && L.Plan && L.Plan->Source == "model" && L.Plan->Registers)
      Keep.KeepLoops[{L.File, L.Offset}] = Verdict::refuse(
          Reason::NoGain, It->second + ": the model takes a register-staged prefetch only where it costs no warps "
                                       "(--plan=always rewrites it)");
  }
  if (Keep.KeepLoops.size() != Opts.KeepLoops.size()) {
    // The decisions are an input to one more run of the whole chain, never edits of its records;
    // what that run still rewrites is checked again (each round keeps one loop more, so this ends).
    FileResult Kept;
    Kept.Path = R.Path;
    Kept.Directory = R.Directory;
    Kept.Original = R.Original;
    analyzeAST(Ctx, Keep, Arch, Kept);
    Kept.Dependencies = std::move(R.Dependencies);
    Kept.UserFiles = std::move(R.UserFiles);
    R = std::move(Kept);
    unsigned Builds = Cache.builds(), Cached = Cache.hits();
    if (R.Ok && llvm::any_of(R.Loops, [](const LoopRecord &L) { return L.transformed(); }))
      boundLaunches(Ctx, DB, Keep, Arch, R);
    R.LaunchBuilds += Builds;
    R.LaunchBuildsCached += Cached;
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
      if (L.transformed() && (L.Kernel == B.Kernel || L.File == R.Path) &&
          (!Owner || (L.Kernel == B.Kernel && Owner->Kernel != B.Kernel)))
        Owner = &L;
    if (Owner) {
      Owner->Edits.insert(Owner->Edits.end(), B.Edits.begin(), B.Edits.end());
      for (const auto &HE : B.HeaderEdits)
        Owner->Edits.push_back(HE.second);
      Owner->Detail += "; " + B.Note;
    }
  }
  if (llvm::Error Err = boundHeaders(LC.Bounds, R.Headers)) {
    R.Ok = false;
    R.Error = R.Path + ": error: internal: " + llvm::toString(std::move(Err));
    return;
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

std::string realPathIn(StringRef Dir, StringRef Name) {
  llvm::SmallString<256> Abs(Name), Real;
  if (llvm::sys::path::is_relative(Abs) && !Dir.empty())
    llvm::sys::path::make_absolute(Dir, Abs);
  return llvm::sys::fs::real_path(Abs, Real) ? Name.str() : Real.str().str();
}

std::vector<std::string> userFiles(const SourceManager &SM, StringRef Dir) {
  std::vector<std::string> Out;
  for (unsigned I = 0, N = SM.local_sloc_entry_size(); I < N; ++I) {
    const SrcMgr::SLocEntry &E = SM.getLocalSLocEntry(I);
    if (!E.isFile() || E.getFile().getFileCharacteristic() != SrcMgr::C_User)
      continue;
    FileID FID = SM.getFileID(SourceLocation::getFromRawEncoding(E.getOffset()));
    if (FID == SM.getMainFileID())
      continue;
    if (OptionalFileEntryRef FE = SM.getFileEntryRefForID(FID)) {
      std::string Real = realPathIn(Dir, FE->getName());
      if (llvm::sys::fs::is_regular_file(Real))
        Out.push_back(Real);
    }
  }
  llvm::sort(Out);
  Out.erase(std::unique(Out.begin(), Out.end()), Out.end());
  return Out;
}

std::vector<std::string> dependencies(const SourceManager &SM, StringRef Dir) {
  std::vector<std::string> Out;
  for (auto It = SM.fileinfo_begin(); It != SM.fileinfo_end(); ++It) {
    // Real paths: the driver spells some system headers through '..' from a guessed install
    // folder, which build tools would collapse into paths that do not exist.
    std::string Real = realPathIn(Dir, It->first.getName());
    if (llvm::sys::fs::exists(Real))
      Out.push_back(Real);
  }
  llvm::sort(Out);
  Out.erase(std::unique(Out.begin(), Out.end()), Out.end());
  return Out;
}

/// The files with device code (the main file and user headers): the names of --kernel they hold,
/// and a warning for each annotation written as a block comment.
static void noteDeviceFiles(ASTContext &Ctx, const ToolOptions &Opts, const FunctionCollector &Functions,
                            FileResult &R) {
  const SourceManager &SM = Ctx.getSourceManager();
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
                           FID == SM.getMainFileID() ? StringRef(R.Path) : FE->getName(), R.Warnings);
}

void analyzeAST(ASTContext &Ctx, const ToolOptions &Opts, const ArchDependence &Arch,
                FileResult &R) {
  const SourceManager &SM = Ctx.getSourceManager();
  R.Ok = false;
  if (R.Original.empty())
    R.Original = SM.getBufferData(SM.getMainFileID()).str();
  FunctionCollector Functions(SM);
  Functions.TraverseDecl(Ctx.getTranslationUnitDecl());
  noteDeviceFiles(Ctx, Opts, Functions, R);
  auto Checked = checkLoops(Ctx, Opts, Arch, Functions.Instances, Functions.Patterns);
  if (!Checked) {
    R.Error = llvm::toString(Checked.takeError());
    return;
  }
  planLoops(Ctx, Opts, R.Path, *Checked);
  // Plan and emit, loop by loop (in the order of their files and offsets), then per kernel.
  FileRewrite F;
  for (auto &[Key, Results] : Checked->ByLoop)
    R.Loops.push_back(rewriteLoop(Ctx, *Checked->Index, Opts, R.Path, Key, Results, Checked->Annotations[Key], F));
  if (llvm::Error E = emitKernelMapsOfFile(Ctx, R.Path, F, R.Loops)) {
    R.Error = llvm::toString(std::move(E));
    return;
  }
  R.Launchers = F.Launchers;
  for (auto &[Key, LoopAndFn] : Checked->Uninstantiated) {
    LoopRecord Rec = loopRecord(SM, R.Path, LoopAndFn.first, LoopAndFn.second);
    Rec.Code = Reason::TemplateNotInstantiated;
    Rec.Detail = "nor one of tilepipe's own to analyse it in: it tries 8, 16, 32 and 64 for one integer "
                 "parameter, 16 and 32 for two or three, float for a type (none where a parameter has a default, "
                 "is a pack, a bool or a template), and drops those the template rejects; it tries none for a "
                 "header's templates, which the sources that use them instantiate";
    R.Loops.push_back(Rec);
  }
  llvm::sort(R.Loops, [&](const LoopRecord &A, const LoopRecord &B) {
    return std::make_tuple(A.File != R.Path, A.File, A.Line, A.Column) <
           std::make_tuple(B.File != R.Path, B.File, B.Line, B.Column);
  });
  if (llvm::Error E = renderEdits(SM, Opts, *Checked, F, R)) {
    R.Error = llvm::toString(std::move(E));
    return;
  }
  R.Ok = true;
}

} // namespace tilepipe

#include "Options.h"
#include "tilepipe/UsageCache.h"
#include "tilepipe/Parse.h"
#include "tilepipe/Runtime.h"
#include "clang/Basic/Version.h"
#include "clang/Tooling/JSONCompilationDatabase.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace tilepipe {

static cl::OptionCategory Category("tilepipe options");
/// The defaults of the options that rewrite, shared with the clang-tidy check.
static const ToolOptions Defaults;

static cl::opt<std::string> Output("o", cl::desc("Write the rewritten file here (one input only)"),
                                   cl::value_desc("file"), cl::cat(Category));
static cl::opt<bool> InPlace("in-place", cl::desc("Rewrite the input files in place"),
                             cl::cat(Category));
static cl::alias InPlaceShort("i", cl::aliasopt(InPlace), cl::desc("Alias for --in-place"));
static cl::opt<bool> Diff("diff", cl::desc("Print a unified diff of the rewrite to stdout"),
                          cl::cat(Category));
static cl::opt<unsigned> Stages("stages", cl::desc("Pipeline stages, 2..8 (default 3)"),
                                cl::init(Defaults.Stages), cl::cat(Category));
static cl::opt<CopyMode> ModeOpt(
    "mode", cl::desc("How tiles are copied"),
    cl::values(clEnumValN(CopyMode::Pipeline, "pipeline",
                          "cuda::pipeline + cuda::memcpy_async (cp.async, sm_80 and newer): whole "
                          "tiles in 16-byte chunks where the block and alignment allow, else per element"),
               clEnumValN(CopyMode::Tma, "tma",
                          "as pipeline, plus on sm_90 one copy per tile issued by one thread: a "
                          "tensor copy (TMA) when launched through the launcher tilepipe writes "
                          "beside the kernel, or a bulk copy (cp.async.bulk) of a 1-D tile"),
               clEnumValN(CopyMode::Auto, "auto",
                          "as tma, and the original loop below sm_80: one output for every GPU "
                          "(the default)")),
    cl::init(Defaults.Mode), cl::cat(Category));
static cl::opt<unsigned> TmaMinStageBytes(
    "tma-min-stage-bytes",
    cl::desc("Tensor and bulk copies only for loops whose tiles hold at least this many bytes per stage "
             "(default 2048; smaller stages keep cp.async: there neither measured faster throughout)"),
    cl::init(Defaults.TmaMinStageBytes), cl::cat(Category));
static cl::opt<bool> TmaThreeDimensions(
    "tma-3d-tiles",
    cl::desc("Tensor copies for tiles of three dimensions too (off by default: on the kernel measured they "
             "ran slower than the 16-byte cp.async copies)"),
    cl::init(Defaults.TmaThreeDimensions), cl::cat(Category));
static cl::opt<std::string> Report("report", cl::desc("Write a JSON report of every candidate loop"),
                                   cl::value_desc("file.json"), cl::cat(Category));
static cl::opt<std::string> CudaPath("cuda-path", cl::desc("CUDA toolkit to parse against"),
                                     cl::value_desc("dir"), cl::cat(Category));
static cl::opt<std::string> GpuArch("gpu-arch", cl::desc("GPU architecture for parsing device code"),
                                    cl::init(Defaults.GpuArch), cl::cat(Category));
static cl::opt<bool> AssumeNoAlias(
    "assume-noalias",
    cl::desc("Rewrite loops that store through pointers other than the ones their tiles are "
             "copied from, assuming they do not overlap the copied data (default false: such "
             "loops are left alone unless every pointer involved is __restrict__)"),
    cl::init(Defaults.AssumeNoAlias), cl::cat(Category));
static cl::opt<bool> CheckLaunchResources(
    "check-launch-resources",
    cl::desc("Compile the original and the rewrite with nvcc (sm_80, sm_90 and --gpu-arch) and "
             "compare each kernel's registers: a kernel whose rewrite would allow fewer threads "
             "per block gets __launch_bounds__ for the original's limit, and where that cannot be "
             "done or checked the loops are left alone (default true)"),
    cl::init(Defaults.CheckLaunchResources), cl::cat(Category));
static cl::opt<std::string> CacheDir(
    "cache-dir",
    cl::desc("Keep the launch check's nvcc builds in this folder, and answer a build whose "
             "inputs did not change from it (default: $TILEPIPE_CACHE_DIR, else "
             "tilepipe/launch-check in the user's cache folder; an empty value keeps nothing)"),
    cl::value_desc("dir"), cl::cat(Category));
static cl::opt<PlanPolicy> PlanOpt(
    "plan", cl::desc("Which legal loops to rewrite (default model)"),
    cl::values(clEnumValN(PlanPolicy::Model, "model",
                          "the plan the cost model expects to run faster: a pipeline for loops with "
                          "tensor or bulk copies, or with whole-tile 16-byte copies of stages of at "
                          "least 2 KiB; else the register-staged prefetch of the next tiles (up to 4 "
                          "ahead), where it is legal; else a 2-stage pipeline for launches too small "
                          "to fill the GPU; the other loops are kept (no-gain)"),
               clEnumValN(PlanPolicy::Always, "always", "every loop the analysis proves legal")),
    cl::init(Defaults.Plan), cl::cat(Category));
static cl::opt<std::string> PlanChoiceOpt(
    "plan-choice",
    cl::desc("Give every legal loop this plan, where it is legal (else leave the loop as it is, "
             "plan-kept): 'keep', 'registers' (a register-staged prefetch of the next tile), "
             "'<1-4>:registers' (of the next 1 to 4 tiles), or '<stages>:<per-element|16-byte|engine>'. What the benchmark's "
             "tuning variants are written with; the JSON report lists each loop's legal choices"),
    cl::value_desc("plan"), cl::cat(Category));
static cl::opt<std::string> TuningOpt(
    "tuning",
    cl::desc("Read measured plans from this tuning file (tests/gpu/tune.py writes it): a loop with "
             "an entry for its text and --gpu-arch gets the entry's plan instead of the cost "
             "model's"),
    cl::value_desc("file.json"), cl::cat(Category));
static cl::opt<RuntimeMode> RuntimeOpt(
    "runtime", cl::desc("How a file with tensor or bulk copies gets tilepipe's runtime (default header)"),
    cl::values(clEnumValN(RuntimeMode::Header, "header",
                          "#include <tilepipe/runtime.cuh>: compile with -I<dir>, the folder that "
                          "--print-runtime-dir prints (tilepipe_rewrite() in CMake adds it)"),
               clEnumValN(RuntimeMode::Inline, "inline",
                          "the runtime's text in the rewritten file: self-contained output")),
    cl::init(Defaults.Runtime), cl::cat(Category));
static cl::opt<bool> PrintRuntimeDir(
    "print-runtime-dir",
    cl::desc("Print the folder to compile rewritten files with (-I<dir>: it holds tilepipe/runtime.cuh) "
             "and exit"),
    cl::cat(Category));
static cl::opt<bool> Quiet("quiet", cl::desc("Print no remarks and no summary"), cl::cat(Category));
static cl::list<std::string> KernelNames("kernel", cl::desc("Only look at loops in these kernels or device functions (repeatable)"),
                                         cl::value_desc("name"), cl::cat(Category));
static cl::opt<unsigned> Jobs("j", cl::desc("Files processed in parallel (default 1; 0: one per core)"),
                              cl::init(1), cl::cat(Category));
// LLVM registers an option named stats-json of its own when the command line is first read: ours
// takes that name then (takeStatsJsonName), and goes by this placeholder until.
static cl::opt<std::string> StatsJson("tilepipe-stats-json-unnamed",
                                      cl::desc("Write the run's summary as JSON"),
                                      cl::value_desc("file.json"), cl::cat(Category));
static cl::opt<std::string> ExportFixes(
    "export-fixes", cl::desc("Write one diagnostic per candidate loop, with the rewrites as fixes, "
                             "in clang-tidy's YAML (for clang-apply-replacements)"),
    cl::value_desc("file.yaml"), cl::cat(Category));
static cl::opt<std::string> Sarif("sarif", cl::desc("Write SARIF 2.1.0: one rule per reason ID, one "
                                                    "result per candidate loop, rewrites as fixes"),
                                  cl::value_desc("file.sarif"), cl::cat(Category));
static cl::opt<bool> RequireAll("require-all", cl::desc("Fail (and write nothing) when a candidate loop is not rewritten"),
                                cl::cat(Category));
static cl::opt<std::string> Depfile("depfile", cl::desc("With -o: write a Make-style depfile of the output"),
                                    cl::value_desc("file.d"), cl::cat(Category));

static cl::OptionCategory VerifyCategory("tilepipe verify options (after 'tilepipe verify')");
static cl::opt<std::string> SpecPath("spec", cl::desc("Launch spec (default: <file>.tilepipe.yaml beside the source)"),
                                     cl::value_desc("file.yaml"), cl::cat(VerifyCategory));
static cl::opt<std::string> BundleDir(
    "bundle", cl::desc("Write the self-contained bundle here and stop (copy it to a GPU machine, run run.sh)"),
    cl::value_desc("dir"), cl::cat(VerifyCategory));
static cl::opt<double> Tolerance("tolerance",
                                 cl::desc("Relative tolerance for comparing outputs (default 0: bitwise)"),
                                 cl::init(0), cl::cat(VerifyCategory));
static cl::opt<bool> Sanitize("sanitize",
                              cl::desc("Also run both variants under compute-sanitizer (memcheck, "
                                       "racecheck, synccheck, initcheck)"),
                              cl::cat(VerifyCategory));
static cl::opt<unsigned> Runs("runs", cl::desc("Runs of every case and variant (default 3)"), cl::init(3),
                              cl::cat(VerifyCategory));

static void printVersion(raw_ostream &OS) {
  OS << "tilepipe " << toolVersion() << "\n  " << clang::getClangFullVersion() << "\n";
  OS << "  runtime: tilepipe/runtime.cuh version " << runtimeVersion() << "\n";
  if (auto Cuda = findCudaToolkit(CudaPath))
    OS << "  CUDA " << Cuda->Version << " at " << Cuda->Path << "\n";
  else
    OS << "  CUDA: " << toString(Cuda.takeError()) << "\n";
}


int fail(const Twine &Message) {
  WithColor::error(errs(), "tilepipe") << Message << "\n";
  return 1;
}

/// LLVM's own option stats-json (its statistics as JSON, which tilepipe never collects) gives up
/// the name, and ours takes it: so users write --stats-json, in any of the forms an option takes
/// (`--stats-json=<file>`, `--stats-json <file>`), and every message and --help name it so.
/// getRegisteredOptions registers LLVM's common options first.
static void takeStatsJsonName() {
  const auto &Registered = cl::getRegisteredOptions();
  auto It = Registered.find("stats-json");
  if (It != Registered.end() && It->second != &StatsJson)
    It->second->removeArgument();
  StatsJson.setArgStr("stats-json");
}

/// The arguments as CommonOptionsParser should see them: without the `verify` word, and with '--'
/// added when neither '--' nor -p is given and no compile_commands.json is found beside a source:
/// Clang tools would look for one, and fall back to no extra flags with the noise of a failed
/// search.
static std::vector<const char *> toolArguments(int argc, const char **argv, bool Verify,
                                               std::string &BuildPath) {
  std::vector<const char *> Args(argv, argv + argc);
  if (Verify) // `verify` or `audit`
    Args.erase(Args.begin() + 1);
  bool HasDashDash = false, HasP = false;
  for (size_t I = 1; I < Args.size(); ++I) {
    StringRef A = Args[I];
    HasDashDash |= A == "--";
    if ((A == "-p" || A == "--p") && I + 1 < Args.size())
      BuildPath = Args[I + 1];
    else if (A.starts_with("-p=") || A.starts_with("--p="))
      BuildPath = A.substr(A.find('=') + 1).str();
    HasP |= !BuildPath.empty();
  }
  if (!HasDashDash && !HasP) {
    std::string Error;
    std::unique_ptr<clang::tooling::CompilationDatabase> Found;
    for (size_t I = 1; I < Args.size() && !Found; ++I)
      if (Args[I][0] != '-' && sys::fs::exists(Args[I]))
        Found = clang::tooling::CompilationDatabase::autoDetectFromSource(Args[I], Error);
    if (!Found)
      Args.push_back("--");
  }
  return Args;
}

/// Without sources, a whole project: every CUDA entry of the compile database in BuildPath.
static bool takeProject(CommandLine &CL, const std::string &BuildPath) {
  auto Fail = [](const Twine &Message) {
    fail(Message);
    return false;
  };
  if (BuildPath.empty())
    return Fail("no input files (give sources, or -p <build dir> to take every .cu entry of its "
                "compile_commands.json)");
  std::string Error;
  CL.ProjectDB = clang::tooling::CompilationDatabase::autoDetectFromDirectory(BuildPath, Error);
  if (!CL.ProjectDB)
    return Fail(Error);
  for (const std::string &F : CL.ProjectDB->getAllFiles())
    if (StringRef(F).ends_with(".cu"))
      CL.Sources.push_back(F);
  if (CL.Sources.empty())
    return Fail("the compile database in " + BuildPath + " has no .cu entries");
  return true;
}

/// How to rewrite: the options the driver takes, for the toolkit found.
static ToolOptions toolOptions(const CudaToolkit &Cuda) {
  ToolOptions Opts;
  Opts.Stages = Stages;
  Opts.Mode = ModeOpt;
  Opts.TmaMinStageBytes = TmaMinStageBytes;
  Opts.TmaThreeDimensions = TmaThreeDimensions;
  Opts.AssumeNoAlias = AssumeNoAlias;
  Opts.Runtime = RuntimeOpt;
  Opts.CheckLaunchResources = CheckLaunchResources;
  Opts.LaunchCacheDir = CacheDir.getNumOccurrences() ? CacheDir.getValue() : defaultCacheDir();
  Opts.Plan = PlanOpt;
  Opts.GpuArch = GpuArch;
  Opts.ParseArgs = cudaParseArgs(Cuda, GpuArch);
  Opts.Kernels.assign(KernelNames.begin(), KernelNames.end());
  return Opts;
}

/// What to do with the results: the outputs, and the options of `tilepipe verify`.
static void takeOutputs(CommandLine &CL) {
  CL.Jobs = Jobs;
  CL.Output = Output;
  CL.InPlace = InPlace;
  CL.Diff = Diff;
  CL.Quiet = Quiet;
  CL.RequireAll = RequireAll;
  CL.Report = Report;
  CL.StatsJson = StatsJson;
  CL.ExportFixes = ExportFixes;
  CL.Sarif = Sarif;
  CL.Depfile = Depfile;
  VerifyRequest &V = CL.VerifyOpts;
  V.SpecPath = SpecPath;
  V.BundleDir = BundleDir;
  if (Tolerance.getNumOccurrences())
    V.Tolerance = double(Tolerance);
  V.Sanitize = Sanitize;
  V.Runs = Runs;
}

std::optional<CommandLine> parseCommandLine(int argc, const char **argv) {
  auto Fail = [](const Twine &Message) {
    fail(Message);
    return std::nullopt;
  };
  cl::SetVersionPrinter(printVersion);
  CommandLine CL;
  // `tilepipe verify ...`: the same rewrite, then build, run and compare on a GPU.
  CL.Verify = argc > 1 && StringRef(argv[1]) == "verify";
  // `tilepipe audit ...`: review the asynchronous copies the files already have.
  CL.Audit = argc > 1 && StringRef(argv[1]) == "audit";
  std::string BuildPath;
  std::vector<const char *> Args = toolArguments(argc, argv, CL.Verify || CL.Audit, BuildPath);
  takeStatsJsonName();
  int ArgCount = Args.size();
  auto Parser = clang::tooling::CommonOptionsParser::create(
      ArgCount, Args.data(), Category, cl::ZeroOrMore,
      "Rewrites tiled CUDA loops (copy a tile to __shared__, barrier, compute, barrier) into\n"
      "multi-stage cuda::pipeline loops whose copies overlap the compute.\n\n"
      "  tilepipe kernels.cu -o kernels.pipelined.cu\n"
      "  tilepipe --diff -p build src/*.cu\n");
  if (!Parser) {
    errs() << toString(Parser.takeError());
    return std::nullopt;
  }
  CL.Parser = std::make_unique<clang::tooling::CommonOptionsParser>(std::move(*Parser));
  if (PrintRuntimeDir) {
    auto Dir = findRuntimeDir(sys::fs::getMainExecutable(argv[0], (void *)&fail));
    if (!Dir) {
      fail(toString(Dir.takeError()));
      std::exit(1);
    }
    outs() << *Dir << "\n";
    outs().flush();
    std::exit(0);
  }
  CL.Sources = CL.Parser->getSourcePathList();
  if (CL.Sources.empty() && !takeProject(CL, BuildPath))
    return std::nullopt;
  if (Stages < 2 || Stages > 8)
    return Fail("--stages must be between 2 and 8");
  if (!Output.empty() && CL.Sources.size() != 1)
    return Fail("-o takes exactly one input file");
  if (!Output.empty() && InPlace)
    return Fail("-o and --in-place exclude each other");
  auto Cuda = findCudaToolkit(CudaPath);
  if (!Cuda)
    return Fail(toString(Cuda.takeError()));
  CL.Tool = toolOptions(*Cuda);
  if (PlanChoiceOpt.getNumOccurrences()) {
    CL.Tool.Choice = PlanChoice::parse(PlanChoiceOpt);
    if (!CL.Tool.Choice || CL.Tool.Choice->Stages > 8)
      return Fail("--plan-choice=" + PlanChoiceOpt + ": expected 'keep', 'registers', '<1-4>:registers' or '<2-8>:<per-element|16-byte|engine>'");
  }
  if (!TuningOpt.empty()) {
    if (CL.Tool.Choice)
      return Fail("--plan-choice and --tuning exclude each other");
    auto Entries = readTuningFile(TuningOpt);
    if (!Entries) {
      errs() << toString(Entries.takeError()) << "\n";
      return std::nullopt;
    }
    CL.Tool.Tuning = std::move(*Entries);
  }
  if (!Depfile.empty() && Output.empty())
    return Fail("--depfile needs -o");
  if (!CL.Verify && (!SpecPath.empty() || !BundleDir.empty() || Sanitize))
    return Fail("--spec, --bundle and --sanitize belong to 'tilepipe verify'");
  if (CL.Audit && (!Output.empty() || InPlace || Diff || !StatsJson.empty() || !Depfile.empty()))
    return Fail("'tilepipe audit' rewrites nothing: it takes --report, --sarif, --export-fixes, -p, -j "
                "and --quiet, not -o, --in-place, --diff, --stats-json or --depfile");
  CL.Tool.Audit = CL.Audit;
  takeOutputs(CL);
  // No report may land on an input, and no output on another: each would silently replace the
  // other.
  {
    auto Key = [](StringRef Path) {
      SmallString<256> Abs(Path);
      sys::fs::make_absolute(Abs);
      sys::path::remove_dots(Abs, true);
      SmallString<256> Real;
      return sys::fs::real_path(Abs, Real) ? std::string(Abs) : std::string(Real);
    };
    std::vector<std::pair<std::string, std::string>> Outs;
    for (const auto &[Flag, Path] : {std::pair<StringRef, StringRef>{"-o", CL.Output},
                                     {"--report", CL.Report},
                                     {"--stats-json", CL.StatsJson},
                                     {"--export-fixes", CL.ExportFixes},
                                     {"--sarif", CL.Sarif},
                                     {"--depfile", CL.Depfile}})
      if (!Path.empty())
        Outs.push_back({Flag.str(), Key(Path)});
    for (size_t I = 0; I < Outs.size(); ++I) {
      for (size_t J = 0; J < I; ++J)
        if (Outs[I].second == Outs[J].second)
          return Fail(Outs[J].first + " and " + Outs[I].first + " name the same file");
      if (Outs[I].first != "-o") // (-o onto the input rewrites it, as --in-place does)
        for (const std::string &Src : CL.Sources)
          if (Outs[I].second == Key(Src))
            return Fail(Outs[I].first + " names the input file " + Src);
    }
  }
  return CL;
}

} // namespace tilepipe

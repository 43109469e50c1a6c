// tilepipe: rewrite tiled CUDA loops into multi-stage asynchronous-copy pipelines.
#include "tilepipe/Driver.h"
#include "tilepipe/Parse.h"
#include "tilepipe/Verify.h"
#include "tilepipe/Write.h"
#include "clang/Basic/Version.h"
#include "clang/Tooling/CommonOptionsParser.h"
#include "clang/Tooling/JSONCompilationDatabase.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include <map>
#include <mutex>
#include <set>
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace tilepipe;

static cl::OptionCategory Category("tilepipe options");

static cl::opt<std::string> Output("o", cl::desc("Write the rewritten file here (one input only)"),
                                   cl::value_desc("file"), cl::cat(Category));
static cl::opt<bool> InPlace("in-place", cl::desc("Rewrite the input files in place"),
                             cl::cat(Category));
static cl::alias InPlaceShort("i", cl::aliasopt(InPlace), cl::desc("Alias for --in-place"));
static cl::opt<bool> Diff("diff", cl::desc("Print a unified diff of the rewrite to stdout"),
                          cl::cat(Category));
static cl::opt<unsigned> Stages("stages", cl::desc("Pipeline stages, 2..8 (default 3)"),
                                cl::init(3), cl::cat(Category));
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
    cl::init(CopyMode::Auto), cl::cat(Category));
static cl::opt<unsigned> TmaMinStageBytes(
    "tma-min-stage-bytes",
    cl::desc("Tensor and bulk copies only for loops whose tiles hold at least this many bytes per stage "
             "(default 2048; smaller stages keep cp.async: there neither measured faster throughout)"),
    cl::init(2048), cl::cat(Category));
static cl::opt<bool> TmaThreeDimensions(
    "tma-3d-tiles",
    cl::desc("Tensor copies for tiles of three dimensions too (off by default: on the kernel measured they "
             "ran slower than the 16-byte cp.async copies)"),
    cl::init(false), cl::cat(Category));
static cl::opt<std::string> Report("report", cl::desc("Write a JSON report of every candidate loop"),
                                   cl::value_desc("file.json"), cl::cat(Category));
static cl::opt<std::string> CudaPath("cuda-path", cl::desc("CUDA toolkit to parse against"),
                                     cl::value_desc("dir"), cl::cat(Category));
static cl::opt<std::string> GpuArch("gpu-arch", cl::desc("GPU architecture for parsing device code"),
                                    cl::init("sm_90"), cl::cat(Category));
static cl::opt<bool> AssumeNoAlias(
    "assume-noalias",
    cl::desc("Rewrite loops that store through pointers other than the ones their tiles are "
             "copied from, assuming they do not overlap the copied data (default false: such "
             "loops are left alone unless every pointer involved is __restrict__)"),
    cl::init(false), cl::cat(Category));
static cl::opt<bool> CheckLaunchResources(
    "check-launch-resources",
    cl::desc("Compile the original and the rewrite with nvcc (sm_80, sm_90 and --gpu-arch) and "
             "compare each kernel's registers: a kernel whose rewrite would allow fewer threads "
             "per block gets __launch_bounds__ for the original's limit, and where that cannot be "
             "done or checked the loops are left alone (default true)"),
    cl::init(true), cl::cat(Category));
static cl::opt<PlanPolicy> PlanOpt(
    "plan", cl::desc("Which legal loops to rewrite (default model)"),
    cl::values(clEnumValN(PlanPolicy::Model, "model",
                          "those the cost model expects to run faster: loops with tensor or bulk "
                          "copies, or with whole-tile 16-byte copies of stages of at least 2 KiB"),
               clEnumValN(PlanPolicy::Always, "always", "every loop the analysis proves legal")),
    cl::init(PlanPolicy::Model), cl::cat(Category));
static cl::opt<bool> Quiet("quiet", cl::desc("Print no remarks and no summary"), cl::cat(Category));
static cl::list<std::string> KernelNames("kernel", cl::desc("Only look at loops in these kernels or device functions (repeatable)"),
                                         cl::value_desc("name"), cl::cat(Category));
static cl::opt<unsigned> Jobs("j", cl::desc("Files processed in parallel (default 1; 0: one per core)"),
                              cl::init(1), cl::cat(Category));
// LLVM itself registers a flag named -stats-json, so ours is spelled --stats-json=<file> on the
// command line and renamed before parsing.
static cl::opt<std::string> StatsJson("tilepipe-stats-json",
                                      cl::desc("--stats-json=<file>: write the run's summary as JSON"),
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

static const char *const ToolVersion = "0.1.0";

static void printVersion(raw_ostream &OS) {
  OS << "tilepipe " << ToolVersion << "\n  " << clang::getClangFullVersion() << "\n";
  if (auto Cuda = findCudaToolkit(CudaPath))
    OS << "  CUDA " << Cuda->Version << " at " << Cuda->Path << "\n";
  else
    OS << "  CUDA: " << toString(Cuda.takeError()) << "\n";
}

static std::string escapeForMake(StringRef Path) {
  std::string Out;
  for (char C : Path) {
    if (C == ' ' || C == '#')
      Out += '\\';
    if (C == '$')
      Out += '$';
    Out += C;
  }
  return Out;
}

/// files, candidate loops, rewritten, refused by reason ID; on stderr.
static void printSummary(const std::vector<FileResult> &Results) {
  if (Quiet)
    return;
  json::Value Stats = statsJson(Results);
  const json::Object &O = *Stats.getAsObject();
  errs() << "tilepipe: " << *O.getInteger("files") << " file(s)";
  if (int64_t Failed = *O.getInteger("failed"))
    errs() << " (" << Failed << " failed)";
  errs() << ", " << *O.getInteger("loops") << " candidate loop(s): " << *O.getInteger("rewritten")
         << " rewritten, " << *O.getInteger("refused") << " left alone";
  std::vector<std::string> Parts;
  for (const auto &[Id, N] : *O.getObject("by_reason"))
    if (Id != "pipelined")
      Parts.push_back(Id.str() + " " + std::to_string(*N.getAsInteger()));
  if (!Parts.empty())
    errs() << " (" << join(Parts, ", ") << ")";
  errs() << "\n";
}

static int fail(const Twine &Message) {
  WithColor::error(errs(), "tilepipe") << Message << "\n";
  return 1;
}

/// `tilepipe verify`: rewrite one file, write the bundle, and run it unless --bundle was given.
static int verify(const clang::tooling::CompilationDatabase &DB,
                  const std::vector<std::string> &Sources, const ToolOptions &Opts) {
  if (Sources.size() != 1)
    return fail("verify takes exactly one source file");
  FileResult R = processFile(DB, Sources[0], Opts);
  for (const std::string &W : R.Warnings)
    errs() << W << "\n";
  if (!Quiet)
    for (const LoopRecord &L : R.Loops)
      errs() << L.File << ":" << L.Line << ":" << L.Column << ": remark: ["
             << reasonInfo(L.Code).Id << "] " << L.message() << "\n";
  if (!R.Ok) {
    errs() << R.Error << "\n";
    return 1;
  }
  std::string Spec = SpecPath.empty() ? defaultSpecPath(Sources[0]) : std::string(SpecPath);
  auto Launch = readSpec(Spec);
  if (!Launch)
    return errs() << toString(Launch.takeError()) << "\n", 1;
  VerifyOptions V;
  V.Tolerance = Tolerance.getNumOccurrences() ? double(Tolerance) : Launch->Tolerance;
  V.Runs = std::max(1u, unsigned(Runs));
  V.Sanitize = Sanitize;
  V.GpuArch = Opts.GpuArch;
  std::string Dir = BundleDir;
  if (Dir.empty()) {
    SmallString<128> Tmp;
    if (sys::fs::createUniqueDirectory("tilepipe-verify", Tmp))
      return fail("cannot create a folder for the bundle");
    Dir = Tmp.str().str();
  }
  if (Error E = writeBundle(Dir, R, *Launch, V))
    return fail(toString(std::move(E)));
  if (!BundleDir.empty()) {
    outs() << "bundle written to " << Dir << "; on a machine with a GPU and the CUDA toolkit run "
           << Dir << "/run.sh" << (Sanitize ? " --sanitize" : "") << "\n";
    return 0;
  }
  outs() << "bundle: " << Dir << "\n";
  outs().flush();
  return runBundle(Dir, V);
}

int main(int argc, const char **argv) {
  cl::SetVersionPrinter(printVersion);
  // Without '--' or -p, look for compile_commands.json beside the first source, as Clang tools do,
  // and fall back to no extra flags without the noise of a failed search.
  // `tilepipe verify ...`: the same rewrite, then build, run and compare on a GPU.
  bool Verify = argc > 1 && StringRef(argv[1]) == "verify";
  std::vector<const char *> Args(argv, argv + argc);
  if (Verify)
    Args.erase(Args.begin() + 1);
  std::vector<std::string> Renamed;
  Renamed.reserve(Args.size());
  for (const char *&A : Args)
    for (StringRef Prefix : {"--stats-json=", "-stats-json="})
      if (StringRef(A).starts_with(Prefix)) {
        Renamed.push_back("--tilepipe-stats-json=" + StringRef(A).drop_front(Prefix.size()).str());
        A = Renamed.back().c_str();
      }
  bool HasDashDash = false, HasP = false;
  std::string BuildPath;
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
  int ArgCount = Args.size();
  auto Parser = clang::tooling::CommonOptionsParser::create(
      ArgCount, Args.data(), Category, cl::ZeroOrMore,
      "Rewrites tiled CUDA loops (copy a tile to __shared__, barrier, compute, barrier) into\n"
      "multi-stage cuda::pipeline loops whose copies overlap the compute.\n\n"
      "  tilepipe kernels.cu -o kernels.pipelined.cu\n"
      "  tilepipe --diff -p build src/*.cu\n");
  if (!Parser) {
    errs() << toString(Parser.takeError());
    return 1;
  }
  std::vector<std::string> Sources = Parser->getSourcePathList();
  std::unique_ptr<clang::tooling::CompilationDatabase> ProjectDB;
  if (Sources.empty()) {
    // A whole project: every CUDA entry of the compile database in the build folder.
    if (BuildPath.empty())
      return fail("no input files (give sources, or -p <build dir> to take every .cu entry of its "
                  "compile_commands.json)");
    std::string Error;
    ProjectDB = clang::tooling::CompilationDatabase::autoDetectFromDirectory(BuildPath, Error);
    if (!ProjectDB)
      return fail(Error);
    for (const std::string &F : ProjectDB->getAllFiles())
      if (StringRef(F).ends_with(".cu"))
        Sources.push_back(F);
    if (Sources.empty())
      return fail("the compile database in " + BuildPath + " has no .cu entries");
  }
  const clang::tooling::CompilationDatabase &DB =
      ProjectDB ? *ProjectDB : Parser->getCompilations();
  if (Stages < 2 || Stages > 8)
    return fail("--stages must be between 2 and 8");
  if (!Output.empty() && Sources.size() != 1)
    return fail("-o takes exactly one input file");
  if (!Output.empty() && InPlace)
    return fail("-o and --in-place exclude each other");
  auto Cuda = findCudaToolkit(CudaPath);
  if (!Cuda)
    return fail(toString(Cuda.takeError()));

  ToolOptions Opts;
  Opts.Stages = Stages;
  Opts.Mode = ModeOpt;
  Opts.TmaMinStageBytes = TmaMinStageBytes;
  Opts.TmaThreeDimensions = TmaThreeDimensions;
  Opts.AssumeNoAlias = AssumeNoAlias;
  Opts.CheckLaunchResources = CheckLaunchResources;
  Opts.Plan = PlanOpt;
  Opts.GpuArch = GpuArch;
  Opts.ParseArgs = cudaParseArgs(*Cuda, GpuArch);
  Opts.Kernels.assign(KernelNames.begin(), KernelNames.end());
  if (!Depfile.empty() && Output.empty())
    return fail("--depfile needs -o");

  if (Verify)
    return verify(DB, Sources, Opts);
  if (!SpecPath.empty() || !BundleDir.empty() || Sanitize)
    return fail("--spec, --bundle and --sanitize belong to 'tilepipe verify'");

  // Each file is parsed and rewritten on its own (in parallel with -j); a file that fails is
  // reported and left alone, and the others go on.
  std::vector<FileResult> Results(Sources.size());
  {
    unsigned Threads = Jobs ? unsigned(Jobs) : 1;
    DefaultThreadPool Pool(hardware_concurrency(Threads));
    std::mutex Lock;
    unsigned Done = 0;
    bool Progress = Sources.size() > 1 && sys::Process::StandardErrIsDisplayed();
    for (size_t I = 0; I < Sources.size(); ++I)
      Pool.async([&, I] {
        FileResult R = processFile(DB, Sources[I], Opts);
        std::lock_guard<std::mutex> Guard(Lock);
        if (Progress)
          errs() << "\r\x1b[K[" << ++Done << "/" << Sources.size() << "] " << Sources[I];
        if (!R.Ok)
          errs() << (Progress ? "\n" : "") << R.Error << "\n";
        Results[I] = std::move(R);
      });
    Pool.wait();
    if (Progress)
      errs() << "\n";
  }
  bool Failed = false;
  // A header included by several files is rewritten once: every file that rewrites it must ask
  // for the same text, or it is left alone. Its loops are reported once.
  std::map<std::string, const HeaderRewrite *> Headers;
  std::set<std::string> HeaderConflicts;
  for (const FileResult &R : Results)
    for (const HeaderRewrite &H : R.Headers) {
      auto [It, New] = Headers.try_emplace(H.Path, &H);
      if (!New && It->second->Rewritten != H.Rewritten && HeaderConflicts.insert(H.Path).second) {
        errs() << H.Path << ": error: the files that include it would rewrite it differently "
               << "(a loop is rewritten for one and refused for another); the header is left alone\n";
        Failed = true;
      }
    }
  {
    // Each header loop once; a header left alone reports its loops as such.
    std::set<std::tuple<std::string, unsigned, unsigned>> Seen;
    for (FileResult &R : Results) {
      std::vector<LoopRecord> Kept;
      for (LoopRecord &L : R.Loops) {
        SmallString<256> Real(L.File);
        sys::fs::real_path(L.File, Real);
        if (L.File != R.Path && !Seen.insert({Real.str().str(), L.Line, L.Column}).second)
          continue;
        if (HeaderConflicts.count(Real.str().str()) && L.transformed()) {
          L.Code = Reason::Unsupported;
          L.Detail = "the files that include this header disagree on its rewrite";
          L.Edits.clear();
        }
        Kept.push_back(std::move(L));
      }
      R.Loops = std::move(Kept);
    }
  }
  // Warnings (even with --quiet: they are not remarks), each once: a header's are found by every
  // file that includes it.
  {
    std::set<std::string> Shown;
    for (const FileResult &R : Results)
      for (const std::string &W : R.Warnings)
        if (Shown.insert(W).second)
          errs() << W << "\n";
    std::set<std::string> Found;
    for (const FileResult &R : Results)
      Found.insert(R.KernelsFound.begin(), R.KernelsFound.end());
    for (const std::string &K : KernelNames)
      if (!Found.count(K) && Shown.insert("--kernel=" + K).second)
        WithColor::warning(errs(), "tilepipe")
            << "--kernel=" << K << " matches no kernel or __device__ function in the input files\n";
  }
  // Remarks after the files are merged, so that a header's loops are reported once.
  if (!Quiet)
    for (const FileResult &R : Results)
      for (const LoopRecord &L : R.Loops)
        errs() << L.File << ":" << L.Line << ":" << L.Column << ": remark: ["
               << reasonInfo(L.Code).Id << "] " << L.message() << "\n";
  for (const FileResult &R : Results) {
    if (!R.Ok) {
      Failed = true;
      continue;
    }
    if (RequireAll)
      for (const LoopRecord &L : R.Loops)
        if (!L.transformed()) {
          errs() << L.File << ":" << L.Line << ":" << L.Column << ": error: [" << reasonInfo(L.Code).Id
                 << "] loop not rewritten and --require-all is set\n";
          Failed = true;
        }
  }
  if (Failed && (RequireAll || Sources.size() == 1 || !Output.empty()))
    return printSummary(Results), 1; // nothing to write
  // Every output goes through writeOutput; one that fails is reported and the others are written.
  auto Write = [&](StringRef Path, StringRef Text, bool IsInPlace = false) {
    if (Error E = writeOutput(Path, Text, IsInPlace)) {
      errs() << toString(std::move(E)) << "\n";
      Failed = true;
    }
  };
  for (auto &[Path, H] : Headers) {
    if (HeaderConflicts.count(Path) || H->Rewritten == H->Original)
      continue;
    if (Diff)
      outs() << unifiedDiff(Path, H->Original, H->Edits);
    if (InPlace)
      Write(Path, H->Rewritten, true);
    else if (!Diff)
      errs() << Path << ": note: this header holds rewritten loops; --in-place or --diff writes it\n";
  }
  for (const FileResult &R : Results) {
    if (!R.Ok)
      continue;
    if (Diff)
      outs() << unifiedDiff(R);
    if (InPlace) {
      if (R.Rewritten != R.Original)
        Write(R.Path, R.Rewritten, true);
    } else if (!Output.empty()) {
      Write(Output, R.Rewritten);
    } else if (!Diff) {
      outs() << R.Rewritten;
    }
  }
  if (!Output.empty() && !Depfile.empty()) {
    // Make-style: the output depends on the source and everything it includes.
    std::string Text = escapeForMake(Output) + ":";
    for (const std::string &D : Results[0].Dependencies)
      Text += " \\\n  " + escapeForMake(D);
    Write(Depfile, Text + "\n");
  }
  if (!Report.empty())
    Write(Report, formatv("{0:2}", reportJson(Results)).str() + "\n");
  if (!StatsJson.empty())
    Write(StatsJson, formatv("{0:2}", statsJson(Results)).str() + "\n");
  if (!ExportFixes.empty()) {
    std::vector<std::string> Conflicts;
    Write(ExportFixes, exportFixesYaml(Results, Conflicts));
    for (const std::string &C : Conflicts)
      errs() << C << "\n";
    Failed |= !Conflicts.empty();
  }
  if (!Sarif.empty())
    Write(Sarif, formatv("{0:2}", sarifLog(Results, ToolVersion)).str() + "\n");
  // What went to stdout (the rewritten source, a diff, "-" outputs) must have arrived too.
  outs().flush();
  if (std::error_code EC = outs().error()) {
    outs().clear_error();
    errs() << "<stdout>: error: cannot write: " << EC.message() << "\n";
    Failed = true;
  }
  printSummary(Results);
  return Failed ? 1 : 0;
}

// tilepipe: rewrite tiled CUDA loops into multi-stage asynchronous-copy pipelines.
//
// main reads the command line (Options.cpp), rewrites every file (Project.cpp in the library:
// files in parallel, shared headers merged), prints what the run found, and writes the outputs.
#include "Options.h"
#include "tilepipe/Audit.h"
#include "tilepipe/Project.h"
#include "tilepipe/Spec.h"
#include "tilepipe/Verify.h"
#include "tilepipe/Write.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace tilepipe;

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
static void printSummary(const std::vector<FileResult> &Results, bool Quiet) {
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
    if (Id.str() != reasonInfo(Reason::Pipelined).Id)
      Parts.push_back(Id.str() + " " + std::to_string(*N.getAsInteger()));
  if (!Parts.empty())
    errs() << " (" << join(Parts, ", ") << ")";
  errs() << "\n";
}

/// One remark per candidate loop of R, in Clang's form; on stderr.
static void printRemarks(const FileResult &R) {
  for (const LoopRecord &L : R.Loops)
    errs() << remarkLine(L) << "\n";
}

/// `tilepipe verify`: rewrite one file, write the bundle, and run it unless --bundle was given.
static int verify(const CommandLine &CL) {
  if (CL.Sources.size() != 1)
    return fail("verify takes exactly one source file");
  FileResult R = processFile(CL.db(), CL.Sources[0], CL.Tool);
  for (const std::string &W : R.Warnings)
    errs() << W << "\n";
  // Only verify times the compute-only floor: a rewrite without one is worth a word here alone.
  for (const std::string &W : R.ComputeOnlyProblems)
    errs() << W << "\n";
  if (!CL.Quiet)
    printRemarks(R);
  if (!R.Ok) {
    errs() << R.Error << "\n";
    return 1;
  }
  const VerifyRequest &Req = CL.VerifyOpts;
  std::string Spec = Req.SpecPath.empty() ? defaultSpecPath(CL.Sources[0]) : Req.SpecPath;
  auto Launch = readSpec(Spec);
  if (!Launch)
    return errs() << toString(Launch.takeError()) << "\n", 1;
  VerifyOptions V;
  V.Tolerance = Req.Tolerance ? *Req.Tolerance : Launch->Tolerance;
  V.Runs = std::max(1u, Req.Runs);
  V.Sanitize = Req.Sanitize;
  V.GpuArch = CL.Tool.GpuArch;
  // The compile command's macros and include folders go to the bundle's build, with the user's
  // headers it carries.
  for (const clang::tooling::CompileCommand &C : CL.db().getCompileCommands(CL.Sources[0])) {
    V.Command = commandFlags(C.CommandLine, C.Directory);
    break;
  }
  if (Error E = addSpecSources(*Launch, CL.db(), CL.Sources[0], CL.Tool.ParseArgs, V))
    return errs() << toString(std::move(E)) << "\n", 1;
  std::string Dir = Req.BundleDir;
  if (Dir.empty()) {
    SmallString<128> Tmp;
    if (sys::fs::createUniqueDirectory("tilepipe-verify", Tmp))
      return fail("cannot create a folder for the bundle");
    Dir = Tmp.str().str();
  }
  if (Error E = writeBundle(Dir, R, *Launch, V))
    return fail(toString(std::move(E)));
  if (!Req.BundleDir.empty()) {
    outs() << "bundle written to " << Dir << "; on a machine with a GPU and the CUDA toolkit run "
           << Dir << "/run.sh" << (Req.Sanitize ? " --sanitize" : "") << "\n";
    return 0;
  }
  outs() << "bundle: " << Dir << "\n";
  outs().flush();
  return runBundle(Dir, V);
}

/// Warnings (even with --quiet: they are not remarks), each once, then a --kernel name that
/// matches nothing.
static void printWarnings(const std::vector<FileResult> &Results,
                          const std::vector<std::string> &Kernels) {
  for (const std::string &W : distinctWarnings(Results))
    errs() << W << "\n";
  for (const std::string &K : unmatchedKernels(Results, Kernels))
    WithColor::warning(errs(), "tilepipe")
        << "--kernel=" << K << " matches no kernel or __device__ function in the input files\n";
}

/// Whether a file failed or, with --require-all, a loop was left alone (each such loop an error).
static bool anyFailed(const std::vector<FileResult> &Results, bool RequireAll) {
  bool Failed = false;
  for (const FileResult &R : Results) {
    if (!R.Ok) {
      Failed = true;
      continue;
    }
    if (RequireAll)
      for (const LoopRecord &L : R.Loops)
        if (!L.transformed()) {
          errs() << location(L) << ": error: [" << reasonInfo(L.Code).Id
                 << "] loop not rewritten and --require-all is set\n";
          Failed = true;
        }
  }
  return Failed;
}

/// Writes Text to Path (atomically); an error is printed, and clears Ok.
static void writeOrSay(StringRef Path, StringRef Text, bool &Ok, bool IsInPlace = false) {
  if (Error E = writeOutput(Path, Text, IsInPlace)) {
    errs() << toString(std::move(E)) << "\n";
    Ok = false;
  }
}

/// The reports (--report, --stats-json, --export-fixes, --sarif): written also when a file
/// failed, which they name with its error. False when one could not be written, or conflicts.
static bool writeReports(const CommandLine &CL, const std::vector<FileResult> &Results) {
  bool Ok = true;
  auto Write = [&](StringRef Path, StringRef Text) { writeOrSay(Path, Text, Ok); };
  if (!CL.Report.empty())
    Write(CL.Report, formatv("{0:2}", reportJson(Results)).str() + "\n");
  if (!CL.StatsJson.empty())
    Write(CL.StatsJson, formatv("{0:2}", statsJson(Results)).str() + "\n");
  if (!CL.ExportFixes.empty()) {
    std::vector<std::string> Conflicts;
    Write(CL.ExportFixes, exportFixesYaml(Results, Conflicts));
    for (const std::string &C : Conflicts)
      errs() << C << "\n";
    Ok &= Conflicts.empty();
  }
  if (!CL.Sarif.empty())
    Write(CL.Sarif, formatv("{0:2}", sarifLog(Results, toolVersion())).str() + "\n");
  return Ok;
}

/// Every output: rewritten headers and files (or their diffs), the depfile and the reports. One
/// that fails is reported and the others are written; false when any failed.
static bool writeOutputs(const CommandLine &CL, const MergedHeaders &Merged,
                         const std::vector<FileResult> &Results) {
  bool Ok = true;
  auto Write = [&](StringRef Path, StringRef Text, bool IsInPlace = false) {
    writeOrSay(Path, Text, Ok, IsInPlace);
  };
  for (auto &[Path, H] : Merged.Headers) {
    if (Merged.Conflicts.count(Path) || H->Rewritten == H->Original)
      continue;
    if (CL.Diff)
      outs() << unifiedDiff(Path, H->Original, H->Edits);
    if (CL.InPlace)
      Write(Path, H->Rewritten, true);
    else if (!CL.Diff)
      errs() << Path << ": note: this header holds rewritten loops; --in-place or --diff writes it\n";
  }
  for (const FileResult &R : Results) {
    if (!R.Ok)
      continue;
    if (CL.Diff)
      outs() << unifiedDiff(R);
    if (CL.InPlace) {
      if (R.Rewritten != R.Original)
        Write(R.Path, R.Rewritten, true);
    } else if (!CL.Output.empty()) {
      Write(CL.Output, R.Rewritten);
    } else if (!CL.Diff) {
      outs() << R.Rewritten;
    }
  }
  if (!CL.Output.empty() && !CL.Depfile.empty()) {
    // Make-style: the output depends on the source and everything it includes.
    std::string Text = escapeForMake(CL.Output) + ":";
    for (const std::string &D : Results[0].Dependencies)
      Text += " \\\n  " + escapeForMake(D);
    Write(CL.Depfile, Text + "\n");
  }
  return writeReports(CL, Results) && Ok;
}

/// What went to stdout (the rewritten source, a diff, "-" outputs) must have arrived too.
static bool flushStdout() {
  outs().flush();
  if (std::error_code EC = outs().error()) {
    outs().clear_error();
    errs() << "<stdout>: error: cannot write: " << EC.message() << "\n";
    return false;
  }
  return true;
}

/// `tilepipe audit`: the findings of every file in Clang's form, --report's JSON, --sarif's log and
/// --export-fixes' YAML (written also where a file failed). Exits 1
/// where a file fails or a finding is reported, as a linter that gates a build does.
static int audit(const CommandLine &CL) {
  bool Progress = CL.Sources.size() > 1 && sys::Process::StandardErrIsDisplayed();
  std::vector<FileResult> Results = processFiles(CL.db(), CL.Sources, CL.Tool, CL.Jobs, Progress, errs());
  bool Failed = false;
  size_t Findings = 0, Remarks = 0; // a remark (what the audit could not decide) fails nothing
  json::Array Files;
  for (const FileResult &R : Results) {
    for (const std::string &W : R.Warnings)
      errs() << W << "\n";
    if (!R.Ok) {
      errs() << R.Error << "\n";
      Failed = true;
    }
    json::Array Found;
    for (const AuditFinding &F : R.Findings) {
      if (!CL.Quiet)
        errs() << auditText(F) << "\n";
      Found.push_back(auditJson(F));
    }
    for (const AuditFinding &F : R.Findings)
      (F.Remark ? Remarks : Findings) += 1;
    Files.push_back(json::Object{{"file", R.Path}, {"ok", R.Ok}, {"error", R.Error}, {"findings", std::move(Found)}});
  }
  bool Written = true;
  auto Write = [&](StringRef Path, StringRef Text) { writeOrSay(Path, Text, Written); };
  if (!CL.Report.empty())
    Write(CL.Report, formatv("{0:2}", json::Value(json::Object{{"files", std::move(Files)}})).str() + "\n");
  if (!CL.Sarif.empty())
    Write(CL.Sarif, formatv("{0:2}", auditSarifLog(Results, toolVersion())).str() + "\n");
  if (!CL.ExportFixes.empty())
    Write(CL.ExportFixes, auditExportFixesYaml(Results));
  Failed |= !Written;
  if (!CL.Quiet)
    errs() << "tilepipe audit: " << Results.size() << " file(s), " << Findings << " finding(s)"
           << (Remarks ? ", " + std::to_string(Remarks) + " loop(s) not read" : std::string()) << "\n";
  return Failed || Findings ? 1 : 0;
}

int main(int argc, const char **argv) {
  std::optional<CommandLine> CL = parseCommandLine(argc, argv);
  if (!CL)
    return 1;
  if (CL->Verify)
    return verify(*CL);
  if (CL->Audit)
    return audit(*CL);
  // Each file is parsed and rewritten on its own (in parallel with -j); a file that fails is
  // reported and left alone, and the others go on.
  bool Progress = CL->Sources.size() > 1 && sys::Process::StandardErrIsDisplayed();
  std::vector<FileResult> Results =
      processFiles(CL->db(), CL->Sources, CL->Tool, CL->Jobs, Progress, errs());
  bool Failed = false;
  MergedHeaders Merged = mergeHeaders(Results);
  for (const std::string &E : Merged.Errors) {
    errs() << E << "\n";
    Failed = true;
  }
  printWarnings(Results, CL->Tool.Kernels);
  // Remarks after the files are merged, so that a header's loops are reported once.
  if (!CL->Quiet)
    for (const FileResult &R : Results)
      printRemarks(R);
  Failed |= anyFailed(Results, CL->RequireAll);
  if (Failed && (CL->RequireAll || CL->Sources.size() == 1 || !CL->Output.empty())) {
    // No rewritten file; the reports say what failed and why.
    writeReports(*CL, Results);
    printSummary(Results, CL->Quiet);
    return 1;
  }
  Failed |= !writeOutputs(*CL, Merged, Results);
  Failed |= !flushStdout();
  printSummary(Results, CL->Quiet);
  return Failed ? 1 : 0;
}

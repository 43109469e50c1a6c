// The clang-tidy check gives the program's answer: its fixes, applied with --fix, equal the
// program's -o output on every testdata file (generated/) and every tests/lit file (with the
// options of its RUN line); where the check cannot find what the program runs (the file's compile
// command, for nvcc's host pass and the launch check), the loops stay with `launch-resources`.
#include "TestSupport.h"
#include "clang/Tooling/DiagnosticsYaml.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <gtest/gtest.h>
#include <set>
#include <sstream>
#include <tuple>

using namespace tilepipe;
namespace tooling = clang::tooling;
using namespace tilepipe::test;

namespace {

std::string tidyProgram() { return llvmTool("clang-tidy"); }

/// The CUDA flags the program parses with, as a user passes them to clang-tidy after `--`.
std::vector<std::string> cudaFlags() {
  std::vector<std::string> Out;
  for (const std::string &A : defaultOptions().ParseArgs)
    if (!llvm::StringRef(A).starts_with("-resource-dir"))
      Out.push_back(A);
  return Out;
}

/// clang-tidy with the check on Src, fixes applied in place (--fix); CheckOptions as `key: value`
/// pairs. Fixes export to Src.yaml too.
ProcessResult runTidy(const std::string &Src, const std::vector<std::string> &CheckOptions,
                      const std::vector<std::string> &Before = {}, bool Flags = true,
                      const std::string &Program = tidyProgram()) {
  std::vector<std::string> Args = {"-load=" + std::string(TILEPIPE_TIDY_MODULE), "-checks=-*,tilepipe-pipeline", "--fix",
                                   "--export-fixes=" + Src + ".yaml"};
  if (!CheckOptions.empty()) {
    std::vector<std::string> Kv;
    for (const std::string &O : CheckOptions)
      Kv.push_back("tilepipe-pipeline." + O);
    Args.push_back("-config={CheckOptions: {" + llvm::join(Kv, ", ") + "}}");
  }
  Args.insert(Args.end(), Before.begin(), Before.end());
  Args.push_back(Src);
  if (Flags) {
    Args.push_back("--");
    for (const std::string &A : cudaFlags())
      Args.push_back(A);
  }
  return runProgram(Program, Args);
}

std::string caseName(const ::testing::TestParamInfo<std::string> &I) {
  std::string N = llvm::sys::path::stem(I.param).str();
  for (char &C : N)
    if (!llvm::isAlnum(C))
      C = '_';
  return N;
}

/// Src with the fixes of the tilepipe check in the exported YAML applied, the others not. For a file
/// with text Clang rejects, clang-tidy applies no fix without --fix-errors, which also applies
/// Clang's own typo corrections (`__stcs` to `__stwt`): users apply the check's fixes alone.
std::string withTilepipeFixes(const std::string &Src) {
  tooling::TranslationUnitDiagnostics TUD;
  std::string Yaml = readFile(Src + ".yaml");
  llvm::yaml::Input In(Yaml);
  In >> TUD;
  std::set<std::tuple<unsigned, unsigned, std::string>> Seen;
  tooling::Replacements Reps;
  for (const tooling::Diagnostic &D : TUD.Diagnostics)
    if (llvm::StringRef(D.DiagnosticName).starts_with("tilepipe-"))
      for (const auto &[File, Rs] : D.Message.Fix)
        for (const tooling::Replacement &R : Rs)
          if (llvm::sys::path::filename(File) == llvm::sys::path::filename(Src) &&
              Seen.insert({R.getOffset(), R.getLength(), R.getReplacementText().str()}).second)
            if (llvm::Error E = Reps.add(R))
              ADD_FAILURE() << llvm::toString(std::move(E));
  auto Out = tooling::applyAllReplacements(readFile(Src), Reps);
  if (!Out) {
    ADD_FAILURE() << llvm::toString(Out.takeError());
    return "";
  }
  return *Out;
}

/// Src after clang-tidy with --fix (R) is Expected. Where clang-tidy's own parse has errors (text
/// that nvcc builds and Clang rejects, which the check's parse reads with tilepipe's nvcc prelude),
/// clang-tidy applies no fix: the file is unchanged, and the check's fixes alone give Expected.
void expectFixesGive(const std::string &Src, const std::string &Original, const ProcessResult &R,
                     const std::string &Expected) {
  if (R.ExitCode == 1 && R.Out.find("clang-diagnostic-error") != std::string::npos) {
    EXPECT_TRUE(Original == readFile(Src));
    EXPECT_TRUE(Expected == withTilepipeFixes(Src)) << R.Out << R.Err;
    return;
  }
  ASSERT_EQ(0, R.ExitCode) << R.Out << R.Err;
  EXPECT_TRUE(Expected == readFile(Src)) << R.Out << R.Err;
}

class TidyTestdata : public ::testing::TestWithParam<std::string> {};

TEST_P(TidyTestdata, FixesEqualTheProgramsOutput) {
  if (tidyProgram().empty())
    GTEST_SKIP() << "clang-tidy-22 not installed";
  if (findTool("nvcc").empty())
    GTEST_SKIP() << "nvcc not found: the launch check cannot run";
  std::string Dir = tempDir();
  std::string Src = Dir + "/" + GetParam();
  writeFile(Src, readFile(sourceDir() + "/testdata/" + GetParam()));
  std::string Original = readFile(Src);
  ProcessResult R = runTidy(Src, {});
  expectFixesGive(Src, Original, R, readFile(sourceDir() + "/generated/" + GetParam()));
}

INSTANTIATE_TEST_SUITE_P(All, TidyTestdata, ::testing::ValuesIn(testdataNames()), caseName);

/// A copy of tests/lit/<Name> in Dir, with the files some lit tests include (Inputs/) beside it.
std::string copyLitFile(const std::string &Dir, const std::string &Name) {
  std::string Src = Dir + "/" + Name;
  writeFile(Src, readFile(sourceDir() + "/tests/lit/" + Name));
  llvm::sys::fs::create_directories(Dir + "/Inputs");
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator It(sourceDir() + "/tests/lit/Inputs", EC), End; It != End && !EC;
       It.increment(EC))
    writeFile(Dir + "/Inputs/" + llvm::sys::path::filename(It->path()).str(), readFile(It->path()));
  return Src;
}

/// The program's options of a lit file's RUN line (after `--`), as the check's options; an
/// option with no check option of its name fails the test.
std::vector<std::string> checkOptionsOf(const std::string &Text, std::vector<std::string> &Program) {
  std::vector<std::string> Out;
  llvm::StringRef Run = llvm::StringRef(Text).split("// RUN:").second.split('\n').first;
  llvm::StringRef Rest = Run.split(" -- ").second;
  llvm::SmallVector<llvm::StringRef> Words;
  Rest.split(Words, ' ', -1, false);
  for (llvm::StringRef W : Words) {
    Program.push_back(W.str());
    auto [Key, Value] = W.split('=');
    if (Key == "--mode")
      Out.push_back("Mode: " + Value.str());
    else if (Key == "--tma-min-stage-bytes")
      Out.push_back("TmaMinStageBytes: " + Value.str());
    else if (Key == "--stages")
      Out.push_back("Stages: " + Value.str());
    else if (Key == "--assume-noalias")
      Out.push_back("AssumeNoAlias: " + std::string(Value.empty() ? "true" : Value));
    else
      ADD_FAILURE() << "no check option for the RUN line's " << W.str();
  }
  return Out;
}

class TidyLit : public ::testing::TestWithParam<std::string> {};

// As the lit tests run the program (every legal loop, no launch check), with their RUN options.
TEST_P(TidyLit, FixesEqualTheProgramsOutput) {
  if (tidyProgram().empty())
    GTEST_SKIP() << "clang-tidy-22 not installed";
  std::string Dir = tempDir();
  std::string Src = copyLitFile(Dir, GetParam()), Expected = Dir + "/expected.cu";
  std::string Text = readFile(Src);
  std::vector<std::string> Program = {"--quiet", "--plan=always", "--check-launch-resources=false"};
  std::vector<std::string> Options = checkOptionsOf(Text, Program);
  Options.insert(Options.end(), {"Plan: always", "CheckLaunchResources: false"});
  Program.insert(Program.end(), {"-o", Expected, Src});
  ProcessResult P = runTilepipe(Program);
  ASSERT_EQ(0, P.ExitCode) << P.Err;
  ProcessResult R = runTidy(Src, Options);
  expectFixesGive(Src, Text, R, readFile(Expected));
}

INSTANTIATE_TEST_SUITE_P(All, TidyLit, ::testing::ValuesIn(cudaFilesIn("tests/lit")), caseName);

/// The file of tests/lit whose host-only text the check once rewrote, with the default options:
/// the launch check leaves its loops alone, in the program and in the check.
TEST(Tidy, HostPassAndLaunchCheckAsTheProgram) {
  if (tidyProgram().empty())
    GTEST_SKIP() << "clang-tidy-22 not installed";
  if (findTool("nvcc").empty())
    GTEST_SKIP() << "nvcc not found: the launch check cannot run";
  std::string Dir = tempDir();
  std::string Src = copyLitFile(Dir, "legality-host-pass.cu"), Expected = Dir + "/expected.cu";
  ProcessResult P = runTilepipe({"--quiet", "-o", Expected, Src});
  ASSERT_EQ(0, P.ExitCode) << P.Err;
  ProcessResult R = runTidy(Src, {});
  ASSERT_EQ(0, R.ExitCode) << R.Out << R.Err;
  EXPECT_TRUE(readFile(Expected) == readFile(Src)) << R.Out << R.Err;
  EXPECT_NE(R.Out.find("[launch-resources]"), std::string::npos) << R.Out;
}

/// The compile command from a compilation database (-p), with --extra-arg: the check reads it
/// as clang-tidy does, and so does the program with the same database.
TEST(Tidy, CompileCommandsAndExtraArgs) {
  if (tidyProgram().empty())
    GTEST_SKIP() << "clang-tidy-22 not installed";
  std::string Dir = tempDir();
  std::string Code = R"(#ifndef TILE
#define TILE 32
#endif
__global__ void rowsum(const float *in, float *out, int n) {
  __shared__ float tile[TILE];
  float acc = 0.f;
  for (int t = 0; t < n; t += TILE) {
    tile[threadIdx.x] = in[blockIdx.x * n + t + threadIdx.x];
    __syncthreads();
    for (int k = 0; k < TILE; ++k)
      acc += tile[k] * (float)k;
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
)";
  std::string Src = Dir + "/rowsum.cu";
  writeFile(Src, Code);
  std::string Command = "clang++";
  for (const std::string &A : cudaFlags())
    Command += " " + A;
  writeFile(Dir + "/compile_commands.json",
            "[{\"directory\": \"" + Dir + "\", \"command\": \"" + Command + " -c rowsum.cu\", \"file\": \"rowsum.cu\"}]\n");
  std::vector<std::string> Program = {"--plan=always", "--check-launch-resources=false"};
  Program.insert(Program.end(), {"-p", Dir, "--extra-arg=-DTILE=64", "-o", Dir + "/expected.cu", Src});
  ProcessResult P = runTilepipe(Program);
  ASSERT_EQ(0, P.ExitCode) << P.Err;
  std::string Expected = readFile(Dir + "/expected.cu");
  ASSERT_NE(Expected, Code) << P.Err;
  // The stages of TILE=64 floats: the command's -DTILE=64 reached the analysis.
  ASSERT_NE(P.Err.find("a stage holds 256 bytes"), std::string::npos) << P.Err;
  ProcessResult R = runTidy(Src, {"Plan: always", "CheckLaunchResources: false"},
                            {"-p", Dir, "--extra-arg=-DTILE=64"}, /*Flags=*/false);
  ASSERT_EQ(0, R.ExitCode) << R.Out << R.Err;
  EXPECT_TRUE(Expected == readFile(Src)) << R.Out << R.Err;
}

/// A clang-tidy whose command line the check cannot read as clang-tidy's (here: a program of
/// another name) gets no rewrite: each loop the analysis would rewrite stays, with the reason.
TEST(Tidy, RefusesWithoutTheCompileCommand) {
  std::string Tidy = tidyProgram();
  if (Tidy.empty())
    GTEST_SKIP() << "clang-tidy-22 not installed";
  std::string Dir = tempDir();
  std::string Bot = Dir + "/review-bot";
  ASSERT_FALSE(llvm::sys::fs::create_link(Tidy, Bot));
  std::string Src = Dir + "/matmul_classic.cu";
  std::string Original = readFile(sourceDir() + "/testdata/matmul_classic.cu");
  writeFile(Src, Original);
  ProcessResult R = runTidy(Src, {}, {}, true, Bot);
  ASSERT_EQ(0, R.ExitCode) << R.Out << R.Err;
  EXPECT_TRUE(Original == readFile(Src));
  EXPECT_NE(R.Out.find("[launch-resources]"), std::string::npos) << R.Out;
  EXPECT_NE(R.Out.find("could not find the file's compile command"), std::string::npos) << R.Out;
  EXPECT_EQ(R.Out.find("[pipelined]"), std::string::npos) << R.Out;
}

/// An option the check cannot read is said, at the file, and its default used.
TEST(Tidy, BadOptionIsSaid) {
  if (tidyProgram().empty())
    GTEST_SKIP() << "clang-tidy-22 not installed";
  std::string Dir = tempDir();
  std::string Src = Dir + "/neg_store_alias.cu";
  writeFile(Src, readFile(sourceDir() + "/testdata/neg_store_alias.cu"));
  ProcessResult R = runTidy(Src, {"Plan: sometimes", "CheckLaunchResources: false"});
  ASSERT_EQ(0, R.ExitCode) << R.Out << R.Err;
  EXPECT_NE(R.Out.find("Plan: 'sometimes' is not model or always"), std::string::npos) << R.Out;
}

/// The audit's checks, `tilepipe-async-*`: each ID its own check, at the places the program gives,
/// with its notes; --fix applies the fixes `tilepipe audit --export-fixes` offers, and a check not
/// enabled says nothing.
TEST(Tidy, AuditChecksAsTheProgram) {
  std::string Tidy = tidyProgram();
  if (Tidy.empty())
    GTEST_SKIP() << "clang-tidy-22 not installed";
  auto Run = [&](const std::string &Src, const std::string &Checks) {
    std::vector<std::string> Args = {"-load=" + std::string(TILEPIPE_TIDY_MODULE), "-checks=-*," + Checks, "--fix", Src,
                                     "--"};
    for (const std::string &A : cudaFlags())
      Args.push_back(A);
    return runProgram(Tidy, Args);
  };
  std::string Dir = tempDir();
  for (const char *Name :
       {"slow_path.cu", "stage_count.cu", "stage_overrun.cu", "read_before_wait.cu", "inline_cp_async.cu"}) {
    std::string Src = Dir + "/" + Name, Original = readFile(sourceDir() + "/testdata/audit/" + Name);
    writeFile(Src, Original);
    ProcessResult R = Run(Src, "tilepipe-async-*");
    EXPECT_EQ(0, R.ExitCode) << R.Out << R.Err;
    // One warning per `// EXPECT-AUDIT: id` comment, on the line after it, named by its check.
    std::multiset<std::string> Expected, Got;
    for (const auto &[Line, Id] : auditExpectations(Original))
      Expected.insert(std::string(Name) + ":" + std::to_string(Line) + " [tilepipe-" + Id + "]");
    llvm::SmallVector<llvm::StringRef, 64> Lines;
    llvm::StringRef(R.Out).split(Lines, '\n');
    for (llvm::StringRef L : Lines) {
      if (!L.contains(": warning: "))
        continue;
      llvm::StringRef File = llvm::sys::path::filename(L.split(':').first);
      std::string LineNo = L.split(':').second.split(':').first.str();
      Got.insert(File.str() + ":" + LineNo + " " + L.rsplit(' ').second.str());
    }
    EXPECT_EQ(Expected, Got) << R.Out;
    // The fixes are the program's.
    std::string Fixed = Dir + "/fixes-" + Name;
    llvm::sys::fs::create_directories(Fixed);
    writeFile(Fixed + "/" + Name, Original);
    runTilepipe({"audit", "--quiet", "--export-fixes=" + Fixed + "/f.yaml", Name}, Fixed);
    std::string Apply = llvmTool("clang-apply-replacements");
    if (!Apply.empty()) {
      ProcessResult A = runProgram(Apply, {Fixed});
      ASSERT_EQ(0, A.ExitCode) << A.Out << A.Err;
      EXPECT_TRUE(readFile(Fixed + "/" + Name) == readFile(Src)) << Name;
    }
  }
  EXPECT_NE(readFile(Dir + "/slow_path.cu"), readFile(sourceDir() + "/testdata/audit/slow_path.cu"))
      << "the alignas fixes are applied";
  ProcessResult Notes = Run(sourceDir() + "/testdata/audit/stage_count.cu", "tilepipe-async-stage-count");
  EXPECT_NE(Notes.Out.find("note: 's' has 3 buffers"), std::string::npos) << Notes.Out;
  std::string Quiet = Dir + "/quiet.cu";
  writeFile(Quiet, readFile(sourceDir() + "/testdata/audit/slow_path.cu"));
  ProcessResult Off = Run(Quiet, "tilepipe-async-stage-count");
  EXPECT_EQ(Off.Out.find("warning:"), std::string::npos) << "slow_path.cu has no stage-count finding:\n" << Off.Out;
}

} // namespace

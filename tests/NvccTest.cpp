// Every rewritten testdata program builds with nvcc for sm_80 and sm_90, and its device code has
// what its plans promise (read from the JSON report): cp.async in the PTX nvcc keeps where some
// loop copies by cp.async, none where every rewritten loop prefetches through registers. Every
// kind of plan each testdata loop may take builds for sm_80 and sm_90 (NvccPlans).
#include "TestSupport.h"
#include "tilepipe/Resources.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Regex.h"
#include <gtest/gtest.h>
#include <map>
#include <set>

using namespace tilepipe::test;
using tilepipe::warpsByRegisters;

namespace {

std::vector<std::string> rewrittenNames() {
  std::vector<std::string> Out;
  for (const std::string &N : testdataNames())
    if (readFile(sourceDir() + "/testdata/" + N) != readFile(sourceDir() + "/generated/" + N))
      Out.push_back(N);
  return Out;
}

/// -I for tilepipe/runtime.cuh, which rewrites with tensor or bulk copies include.
std::string runtimeInclude() { return "-I" + sourceDir() + "/runtime/include"; }

/// A test name from a testdata file name: its stem, every other character than a letter or digit
/// made '_'.
std::string caseName(const std::string &File) {
  std::string S = File.substr(0, File.size() - 3);
  for (char &C : S)
    if (!isalnum(static_cast<unsigned char>(C)))
      C = '_';
  return S;
}

std::string fileCaseName(const ::testing::TestParamInfo<std::string> &I) { return caseName(I.param); }

/// Some rewritten loop of R has a cp.async loop (every plan but the register-staged prefetch: the
/// copy engine's loops keep one beside their tensor or bulk copies).
bool plansCpAsync(const tilepipe::FileResult &R) {
  return reportsCopyKind(R, "per-element", /*CpAsync=*/true) || reportsCopyKind(R, "16-byte", /*CpAsync=*/true);
}

class Nvcc : public ::testing::TestWithParam<std::string> {};

TEST_P(Nvcc, BuildsWithTheCopiesItsPlansPromise) {
  std::string Nvcc = findTool("nvcc");
  if (Nvcc.empty())
    GTEST_SKIP() << "nvcc not found";
  const std::string &Name = GetParam();
  // The plans generated/ was made with: as users run the tool, with the launch check.
  tilepipe::ToolOptions Opts = defaultOptions();
  Opts.Plan = tilepipe::PlanPolicy::Model;
  Opts.CheckLaunchResources = true;
  tilepipe::FileResult R = runOnFile(sourceDir() + "/testdata/" + Name, Opts);
  ASSERT_TRUE(R.Ok) << R.Error;
  const std::string Generated = readFile(sourceDir() + "/generated/" + Name);
  ASSERT_EQ(Generated, R.Rewritten) << "generated/" << Name << " is not what the tool writes: the report is not its";
  const bool CpAsync = plansCpAsync(R), Registers = reportsCopyKind(R, "registers");
  ASSERT_TRUE(CpAsync || Registers) << "a rewritten program with no cp.async loop and no register-staged prefetch";
  if (!CpAsync)
    EXPECT_EQ(Generated.find("cuda/pipeline"), std::string::npos) << "cuda/pipeline included with no cp.async loop";
  const std::string Stem = Name.substr(0, Name.size() - 3);
  for (const char *Arch : {"sm_80", "sm_90"}) {
    // A full build (host and device), keeping the intermediate PTX to look at.
    std::string Dir = tempDir();
    ProcessResult Build = runProgram(Nvcc, {"-std=c++17", "-arch=" + std::string(Arch), runtimeInclude(), "-c", "-o",
                                            "out.o", "-keep", sourceDir() + "/generated/" + Name},
                                     Dir);
    ASSERT_EQ(0, Build.ExitCode) << Arch << "\n" << Build.Out << Build.Err;
    EXPECT_EQ(Build.Err.find("warning"), std::string::npos) << Arch << "\n" << Build.Err;
    std::string Ptx = readFile(Dir + "/" + Stem + ".ptx");
    ASSERT_EQ(Ptx.find("<unreadable"), std::string::npos) << "nvcc kept no PTX";
    if (!CpAsync) {
      // Every rewritten loop prefetches through registers: plain loads and stores.
      EXPECT_EQ(Ptx.find("cp.async"), std::string::npos) << Arch << ": cp.async in the PTX of register plans";
      continue;
    }
    EXPECT_NE(Ptx.find("cp.async.c"), std::string::npos) << Arch << ": no cp.async in the PTX";
    EXPECT_NE(Ptx.find("cp.async.commit_group"), std::string::npos) << Arch;
    EXPECT_NE(Ptx.find("cp.async.wait_group"), std::string::npos) << Arch;
  }
}

INSTANTIATE_TEST_SUITE_P(Generated, Nvcc, ::testing::ValuesIn(rewrittenNames()), fileCaseName);

TEST(Nvcc, EnoughProgramsAreRewritten) { EXPECT_GE(rewrittenNames().size(), 12u); }

// --mode=auto: one output for every GPU. Its PTX has, per target, the copies the report promises:
// tensor copies (cp.async.bulk.tensor) and bulk copies (cp.async.bulk) on sm_90, 16-byte cp.async
// on sm_80 and later, and on sm_75 the original loop (no cp.async at all); a program whose loops
// all prefetch through registers has no cp.async on any target.
class NvccAuto : public ::testing::TestWithParam<std::string> {};

TEST_P(NvccAuto, EachTargetGetsItsCopies) {
  std::string Nvcc = findTool("nvcc");
  if (Nvcc.empty())
    GTEST_SKIP() << "nvcc not found";
  tilepipe::ToolOptions Opts = defaultOptions();
  Opts.Mode = tilepipe::CopyMode::Auto;
  tilepipe::FileResult R = runOnFile(sourceDir() + "/testdata/" + GetParam(), Opts);
  ASSERT_TRUE(R.Ok) << R.Error;
  // What the report promises, per tile: tensor or bulk copies on sm_90, 16-byte chunks on sm_80.
  const bool Tma = reportsCopyKind(R, "tensor");
  const bool Bulk = reportsCopyKind(R, "bulk");
  const bool Wide = reportsCopyKind(R, "16-byte", /*CpAsync=*/true);
  const bool CpAsync = plansCpAsync(R);
  ASSERT_TRUE(CpAsync || reportsCopyKind(R, "registers")) << "no loop rewritten";
  std::string Dir = tempDir();
  writeFile(Dir + "/auto.cu", R.Rewritten);
  for (const char *Arch : {"sm_75", "sm_80", "sm_90"}) {
    ProcessResult Build = runProgram(Nvcc, {"-std=c++17", "-arch=" + std::string(Arch), runtimeInclude(), "-ptx", "-o",
                                            "auto.ptx", "auto.cu"},
                                     Dir);
    ASSERT_EQ(0, Build.ExitCode) << Arch << "\n" << Build.Out << Build.Err;
    EXPECT_EQ(Build.Err.find("warning"), std::string::npos) << Arch << "\n" << Build.Err;
    std::string Ptx = readFile(Dir + "/auto.ptx");
    std::string A = Arch;
    if (A == "sm_75") {
      EXPECT_EQ(Ptx.find("cp.async"), std::string::npos) << "cp.async below sm_80";
      continue;
    }
    if (!CpAsync) {
      EXPECT_EQ(Ptx.find("cp.async"), std::string::npos) << A << ": cp.async in the PTX of register plans";
      continue;
    }
    EXPECT_NE(Ptx.find("cp.async.commit_group"), std::string::npos) << A;
    if (Wide)
      EXPECT_NE(Ptx.find("cp.async.cg.shared.global"), std::string::npos) << A << ": no 16-byte cp.async";
    const bool HasTensor = Ptx.find("cp.async.bulk.tensor") != std::string::npos;
    EXPECT_EQ(Tma && A == "sm_90", HasTensor) << A << ": tensor copies in the PTX: " << HasTensor;
    // Bulk copies (the tensor copies' row-by-row fallback has them too).
    const bool HasBulk = Ptx.find("cp.async.bulk.shared::cluster.global") != std::string::npos;
    if (Bulk && A == "sm_90")
      EXPECT_TRUE(HasBulk) << A << ": no bulk copy in the PTX";
    if (A != "sm_90" || (!Tma && !Bulk))
      EXPECT_FALSE(HasBulk) << A << ": a bulk copy in the PTX";
    // The copy engine's loop waits on its stage barriers with bare mbarrier.try_wait loops:
    // cuda::barrier::wait_parity reads the global timer on every wait, which cost the 4096-cube
    // matmul 1.5 % (docs/verify-record.md). The testdata kernels read no clock of their own.
    if ((Tma || Bulk) && A == "sm_90") {
      EXPECT_NE(Ptx.find("mbarrier.try_wait.parity"), std::string::npos) << A << ": no barrier wait";
      EXPECT_EQ(Ptx.find("globaltimer"), std::string::npos) << A << ": a timer read, as libcu++'s barrier wait has";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Testdata, NvccAuto, ::testing::ValuesIn(rewrittenNames()), fileCaseName);

/// Registers per thread of each kernel nvcc builds from File for sm_90, by demangled name without
/// its parameters (the rewrite appends tensor-map parameters).
std::map<std::string, unsigned> registersPerKernel(const std::string &Nvcc, const std::string &File) {
  std::map<std::string, unsigned> Out;
  ProcessResult Build = runProgram(Nvcc, {"-std=c++17", "-arch=sm_90", runtimeInclude(), "-c", "-o", "out.o", "-Xptxas", "-v", File},
                                   tempDir());
  EXPECT_EQ(0, Build.ExitCode) << Build.Out << Build.Err;
  llvm::Regex Entry("Compiling entry function '([^']+)'"), Used("Used ([0-9]+) registers");
  std::string Kernel;
  llvm::SmallVector<llvm::StringRef, 2> M;
  llvm::SmallVector<llvm::StringRef, 0> Lines;
  const std::string Output = Build.Err + Build.Out; // Lines point into it
  llvm::StringRef(Output).split(Lines, '\n');
  for (llvm::StringRef L : Lines) {
    if (Entry.match(L, &M)) {
      std::string D = llvm::demangle(M[1].str());
      Kernel = D.substr(0, D.find('('));
    } else if (!Kernel.empty() && Used.match(L, &M)) {
      Out[Kernel] = std::stoul(M[1].str());
      Kernel.clear();
    }
  }
  return Out;
}

// Every path of a rewritten kernel (tensor copies, cp.async, their fallbacks) shares one register
// count. A rewrite that needs more registers than the original lets fewer blocks share an SM, which
// cost the 4096-cube matmul at T=32 15 % when an unrolled fallback copy took it from 32 to 38.
class NvccRegisters : public ::testing::TestWithParam<std::string> {};

TEST_P(NvccRegisters, RewriteKeepsTheWarpsAnSmHolds) {
  std::string Nvcc = findTool("nvcc");
  if (Nvcc.empty())
    GTEST_SKIP() << "nvcc not found";
  std::map<std::string, unsigned> Before = registersPerKernel(Nvcc, sourceDir() + "/testdata/" + GetParam());
  std::map<std::string, unsigned> After = registersPerKernel(Nvcc, sourceDir() + "/generated/" + GetParam());
  ASSERT_FALSE(Before.empty());
  // A kernel declared with __launch_bounds__(N) runs blocks of at most N threads: what an SM holds
  // is whole blocks of N / 32 warps (wide_block's 1024-thread blocks: one, at 56 registers or 64).
  const std::string Text = readFile(sourceDir() + "/generated/" + GetParam());
  auto WarpsPerBlock = [&](const std::string &Kernel) -> unsigned {
    std::string Name = Kernel.substr(Kernel.rfind(' ') == std::string::npos ? 0 : Kernel.rfind(' ') + 1);
    llvm::Regex Bounds("__launch_bounds__\\(([0-9]+)\\)[^(;{]*[ \t]" + llvm::Regex::escape(Name) + "[ \t]*\\(");
    llvm::SmallVector<llvm::StringRef, 2> M;
    return Bounds.match(Text, &M) ? std::max(1u, (unsigned)std::stoul(M[1].str()) / 32) : 1u;
  };
  for (const auto &[Kernel, Registers] : Before) {
    ASSERT_TRUE(After.count(Kernel)) << Kernel << " is missing from the rewritten program";
    const unsigned Block = WarpsPerBlock(Kernel);
    EXPECT_GE(warpsByRegisters(After[Kernel]) / Block, warpsByRegisters(Registers) / Block)
        << Kernel << ": " << Registers << " registers before the rewrite, " << After[Kernel]
        << " after (blocks of " << Block << " warps)";
  }
}

INSTANTIATE_TEST_SUITE_P(Generated, NvccRegisters, ::testing::ValuesIn(rewrittenNames()), fileCaseName);

// With --tma-3d-tiles, the bricks of brick_tiles take tensor copies of three dimensions: the sm_90
// PTX has them, and the kernel still fits as many warps on an SM as the original (the rolled
// row-by-row fallback keeps it at 29 registers; unrolled it took 39).
TEST(Nvcc, ThreeDimensionalTensorCopiesWhenAsked) {
  std::string Nvcc = findTool("nvcc");
  if (Nvcc.empty())
    GTEST_SKIP() << "nvcc not found";
  tilepipe::ToolOptions Opts = defaultOptions();
  Opts.TmaThreeDimensions = true;
  tilepipe::FileResult R = runOnFile(sourceDir() + "/testdata/brick_tiles.cu", Opts);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_EQ("tensor", reportedCopyKinds(R)["s"]) << R.Loops[0].message();
  std::string Dir = tempDir();
  writeFile(Dir + "/brick.cu", R.Rewritten);
  ProcessResult Build =
      runProgram(Nvcc, {"-std=c++17", "-arch=sm_90", runtimeInclude(), "-ptx", "-o", "brick.ptx", "brick.cu"}, Dir);
  ASSERT_EQ(0, Build.ExitCode) << Build.Out << Build.Err;
  EXPECT_NE(readFile(Dir + "/brick.ptx").find("cp.async.bulk.tensor.3d"), std::string::npos);
  std::map<std::string, unsigned> Before = registersPerKernel(Nvcc, sourceDir() + "/testdata/brick_tiles.cu");
  std::map<std::string, unsigned> After = registersPerKernel(Nvcc, Dir + "/brick.cu");
  ASSERT_TRUE(Before.count("brick_mix") && After.count("brick_mix"));
  EXPECT_GE(warpsByRegisters(After["brick_mix"]), warpsByRegisters(Before["brick_mix"]))
      << Before["brick_mix"] << " registers before, " << After["brick_mix"] << " after";
}

/// The kind of a plan choice as the report writes it: "registers", or the copies of
/// "<stages>:<copies>" ("per-element", "16-byte", "engine"); "" for "keep".
std::string choiceKind(llvm::StringRef Choice) {
  if (Choice == "keep")
    return "";
  return Choice.contains(':') ? Choice.split(':').second.str() : Choice.str();
}

/// Whether a plan decides what becomes of the loop: it was rewritten, or kept for its plan (the
/// model's no-gain, or a chosen plan-kept). A loop refused after the analysis (its text cannot be
/// cut, say) lists legal choices but takes none.
bool takesPlans(const llvm::json::Object &Loop) {
  std::optional<llvm::StringRef> Reason = Loop.getString("reason");
  return Loop.getArray("choices") && (!Reason || *Reason == "no-gain" || *Reason == "plan-kept");
}

/// Per plan kind some loop of the report may take, the one choice to build it with: the largest
/// stage count legal for every loop that offers the kind (each offers 2 up to its own largest;
/// the count only changes a constant). --plan-choice gives a choice to each loop where it is
/// legal, so with that count every loop that offers the kind takes it in the one build.
std::map<std::string, std::string> choicesToBuild(const llvm::json::Value &Report) {
  std::map<std::string, unsigned> Stages; // by kind, the least over loops of their largest count
  for (const llvm::json::Value &L : *Report.getAsObject()->getArray("loops")) {
    if (!takesPlans(*L.getAsObject()))
      continue;
    const llvm::json::Array *Choices = L.getAsObject()->getArray("choices");
    std::map<std::string, unsigned> Largest;
    for (const llvm::json::Value &C : *Choices) {
      llvm::StringRef Choice = *C.getAsString();
      std::string Kind = choiceKind(Choice);
      unsigned Count = 0;
      if (!Kind.empty() && Choice.contains(':'))
        Choice.split(':').first.getAsInteger(10, Count);
      if (!Kind.empty())
        Largest[Kind] = std::max(Largest[Kind], Count);
    }
    for (const auto &[Kind, Count] : Largest)
      Stages[Kind] = Stages.count(Kind) ? std::min(Stages[Kind], Count) : Count;
  }
  std::map<std::string, std::string> Out;
  for (const auto &[Kind, Count] : Stages)
    Out[Kind] = Kind == "registers" ? Kind : std::to_string(Count) + ":" + Kind;
  // The register-staged prefetch has two skeletons: one tile ahead, and several (the deepest).
  if (Stages.count("registers") && Stages["registers"] > 1)
    Out["registers-deeper"] = std::to_string(Stages["registers"]) + ":registers";
  return Out;
}

// The CI check of every plan: for each testdata program, each kind of plan its loops may take
// (registers, per-element, 16-byte, engine; one stage count each) is written with --plan-choice
// and its device code built by nvcc for sm_80 and sm_90 in one run (no host compile: what a plan
// changes is device code). A plan that does not build fails with nvcc's output.
class NvccPlans : public ::testing::TestWithParam<std::string> {};

TEST_P(NvccPlans, EveryPlanKindBuildsForSm80AndSm90) {
  std::string Nvcc = findTool("nvcc");
  if (Nvcc.empty())
    GTEST_SKIP() << "nvcc not found";
  const std::string In = sourceDir() + "/testdata/" + GetParam();
  std::string Dir = tempDir();
  ProcessResult Listed = runTilepipe(
      {"--quiet", "--check-launch-resources=false", "--report=choices.json", In, "-o", "default.cu"}, Dir);
  ASSERT_EQ(0, Listed.ExitCode) << Listed.Out << Listed.Err;
  llvm::Expected<llvm::json::Value> Report = llvm::json::parse(readFile(Dir + "/choices.json"));
  ASSERT_TRUE(static_cast<bool>(Report)) << llvm::toString(Report.takeError());
  std::map<std::string, std::string> ToBuild = choicesToBuild(*Report);
  if (ToBuild.empty()) {
    // No loop takes a plan: none to build, and the program stays as it is.
    EXPECT_EQ(readFile(In), readFile(Dir + "/default.cu")) << "rewritten with no loop that takes a plan";
    return;
  }
  for (const auto &[Kind, Choice] : ToBuild) {
    ProcessResult Write = runTilepipe({"--quiet", "--check-launch-resources=false", "--plan-choice=" + Choice,
                                       "--report=" + Kind + ".json", In, "-o", Kind + ".cu"},
                                      Dir);
    ASSERT_EQ(0, Write.ExitCode) << Choice << "\n" << Write.Out << Write.Err;
    // The program built is the plan's: every loop that offers the choice took it.
    llvm::Expected<llvm::json::Value> Written = llvm::json::parse(readFile(Dir + "/" + Kind + ".json"));
    ASSERT_TRUE(static_cast<bool>(Written)) << llvm::toString(Written.takeError());
    for (const llvm::json::Value &L : *Written->getAsObject()->getArray("loops")) {
      const llvm::json::Object &Loop = *L.getAsObject();
      const llvm::json::Array *Choices = Loop.getArray("choices");
      if (!takesPlans(Loop) || llvm::none_of(*Choices, [&](const llvm::json::Value &C) { return C == Choice; }))
        continue;
      const llvm::json::Object *Plan = Loop.getObject("plan");
      EXPECT_TRUE(Plan && Plan->getString("choice") == Choice && Loop.getBoolean("transformed") == true)
          << Choice << ": the loop at line " << *Loop.getInteger("line") << " did not take it";
    }
    ProcessResult Build = runProgram(Nvcc,
                                     {"-std=c++17", "-fatbin", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                                      "arch=compute_90,code=sm_90", runtimeInclude(), "-o", Kind + ".fatbin", Kind + ".cu"},
                                     Dir);
    EXPECT_EQ(0, Build.ExitCode) << Choice << " does not build for sm_80 and sm_90:\n" << Build.Out << Build.Err;
  }
}

INSTANTIATE_TEST_SUITE_P(Testdata, NvccPlans, ::testing::ValuesIn(testdataNames()), fileCaseName);

} // namespace

namespace {

// The issuing thread of a tensor-copy loop finds a tile's row in its map with a multiply and a
// shift instead of a division (tilepipe/runtime.cuh). Here, on the host, the quotient
// agrees with the division for every stride it can be given and the dividends at the edges.
TEST(TensorMapRuntime, QuotientIsTheDivision) {
  std::string Nvcc = findTool("nvcc");
  if (Nvcc.empty())
    GTEST_SKIP() << "nvcc not found";
  std::string Dir = tempDir();
  std::string Program = R"(#include <tilepipe/runtime.cuh>
#include <random>
static long long Failures = 0, Checked = 0;
static void check(long long Stride, unsigned long long X) {
  if (X >= 0x80000000ull)
    return;
  tilepipe_rt::TileMap M{};
  if (!tilepipe_rt::set_divider(&M, Stride)) {
    std::printf("no divider for %lld\n", Stride);
    ++Failures;
    return;
  }
  ++Checked;
  const unsigned Q = tilepipe_rt::quotient(M, (unsigned)X);
  if (Q != X / (unsigned long long)Stride && Failures++ < 10)
    std::printf("%llu / %lld: %u\n", X, Stride, Q);
}
int main() {
  std::mt19937_64 Rng(7);
  std::vector<long long> Strides;
  for (long long S = 1; S <= 5000; ++S)
    Strides.push_back(S);
  for (int B = 12; B <= 31; ++B)
    for (long long D : {-1, 0, 1})
      if ((1ll << B) + D < 0x80000000ll)
        Strides.push_back((1ll << B) + D);
  for (int I = 0; I < 2000; ++I)
    Strides.push_back(1 + (long long)(Rng() % 0x7fffffffull));
  for (long long S : Strides) {
    for (unsigned long long X : {0ull, 1ull, 0x7ffffffeull, 0x7fffffffull})
      check(S, X);
    // Around multiples of the stride, where a quotient that is off by one shows.
    for (int I = 0; I < 40; ++I) {
      unsigned long long K = Rng() % (0x80000000ull / (unsigned long long)S + 1);
      for (long long D : {-1, 0, 1})
        check(S, K * (unsigned long long)S + (unsigned long long)D);
      check(S, Rng() % 0x80000000ull);
    }
  }
  for (long long Bad : {0ll, -3ll, 0x80000000ll}) {
    tilepipe_rt::TileMap M{};
    if (tilepipe_rt::set_divider(&M, Bad)) {
      std::printf("a divider for %lld\n", Bad);
      ++Failures;
    }
  }
  std::printf("checked %lld quotients, %lld wrong\n", Checked, Failures);
  return Failures != 0 || Checked < 1000000;
}
)";
  writeFile(Dir + "/quotient.cu", Program);
  ProcessResult Build = runProgram(
      Nvcc, {"-std=c++17", "-O2", "-I" + sourceDir() + "/runtime/include", "-o", "quotient", "quotient.cu"}, Dir);
  ASSERT_EQ(0, Build.ExitCode) << Build.Out << Build.Err;
  ProcessResult Run = runProgram(Dir + "/quotient", {}, Dir);
  EXPECT_EQ(0, Run.ExitCode) << Run.Out << Run.Err;
}

} // namespace

// The launch check compiles the rewrite with its rewritten headers. A header the rewrite changes
// that is included through a header it does not change (main.cu -> k.cuh -> sub/inner.cuh) must
// be the rewritten one in that build: a quoted include is looked for beside the file that
// includes it, so k.cuh taken from the source's folder would include the original inner.cuh, and
// the check would compare the original with itself. The kernel's register prefetch 4 tiles ahead
// needs more registers than 1024 threads per block allow, which the same kernel in the main file
// shows: there it gets __launch_bounds__(1024). In the header, which the rewrite changes anyway,
// it gets them too; where another declaration of the kernel stands in a header the rewrite does
// not change, they cannot be placed, and its loop is left alone while the main file's own kernel
// is still rewritten (the keep is per kernel).
TEST(NvccLaunchCheck, SeesRewrittenHeadersAndBoundsKernelsInThem) {
  std::string Nvcc = findTool("nvcc");
  if (Nvcc.empty())
    GTEST_SKIP() << "nvcc not found";
  const std::string Kernel = R"(#pragma once
#define T 256
__global__ void heavy(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[4 * T];
  float acc[12];
#pragma unroll
  for (int j = 0; j < 12; ++j)
    acc[j] = 0.0f;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 4 * T + threadIdx.x];
    s[T + threadIdx.x] = A[(blockIdx.x * nt + t) * 4 * T + T + threadIdx.x];
    s[2 * T + threadIdx.x] = A[(blockIdx.x * nt + t) * 4 * T + 2 * T + threadIdx.x];
    s[3 * T + threadIdx.x] = A[(blockIdx.x * nt + t) * 4 * T + 3 * T + threadIdx.x];
    __syncthreads();
#pragma unroll
    for (int j = 0; j < 12; ++j)
      acc[j] += s[(threadIdx.x * 3 + j * 17) % (4 * T)] * acc[(j + 1) % 12] + s[(threadIdx.x + j) % (4 * T)];
    __syncthreads();
  }
  float r = 0.0f;
#pragma unroll
  for (int j = 0; j < 12; ++j)
    r += acc[j] * (j + 1);
  C[blockIdx.x * T + threadIdx.x] = r;
}
)";
  const std::string Light = R"(
__global__ void light(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[T];
  float acc = 0.0f;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[blockIdx.x * T + threadIdx.x] = acc;
}
)";
  const std::string Launch =
      "void run(const float *A, float *C, int nt, int b) { heavy<<<b, T>>>(A, C, nt); light<<<b, T>>>(A, C, nt); }\n";
  std::string Dir = tempDir();
  std::string Cache = "--cache-dir=" + Dir + "/cache";
  // The control: in the main file the kernel gets the bounds, so the rewrite does need them.
  writeFile(Dir + "/flat.cu", Kernel.substr(std::string("#pragma once\n").size()) + Light + Launch);
  ProcessResult Flat = runTilepipe({"--plan-choice=4:registers", Cache, "flat.cu", "-o", "flat_out.cu"}, Dir);
  ASSERT_EQ(0, Flat.ExitCode) << Flat.Out << Flat.Err;
  EXPECT_NE(readFile(Dir + "/flat_out.cu").find("__launch_bounds__(1024) heavy"), std::string::npos)
      << Flat.Err << readFile(Dir + "/flat_out.cu");
  // The header, through an unchanged one: the bounds go in the header, with its rewritten loop.
  llvm::sys::fs::create_directories(Dir + "/proj/sub");
  writeFile(Dir + "/proj/sub/inner.cuh", Kernel);
  writeFile(Dir + "/proj/k.cuh", "#include \"sub/inner.cuh\"\n");
  writeFile(Dir + "/proj/main.cu", "#include \"k.cuh\"\n" + Light + Launch);
  ProcessResult R = runTilepipe({"--plan-choice=4:registers", Cache, "--in-place", "main.cu"}, Dir + "/proj");
  ASSERT_EQ(0, R.ExitCode) << R.Out << R.Err;
  EXPECT_NE(R.Err.find("inner.cuh:9:3: remark: [pipelined]"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("__launch_bounds__(1024) added to 'heavy'"), std::string::npos) << R.Err;
  EXPECT_NE(readFile(Dir + "/proj/sub/inner.cuh").find("__launch_bounds__(1024) heavy"), std::string::npos)
      << readFile(Dir + "/proj/sub/inner.cuh");
  // Declared again in the unchanged k.cuh: no bounds can be placed, and its loop stays.
  const std::string Decl = "__global__ void heavy(const float *__restrict__ A, float *__restrict__ C, int nt);\n";
  llvm::sys::fs::create_directories(Dir + "/proj2/sub");
  writeFile(Dir + "/proj2/sub/inner.cuh", Kernel);
  writeFile(Dir + "/proj2/k.cuh", Decl + "#include \"sub/inner.cuh\"\n");
  writeFile(Dir + "/proj2/main.cu", "#include \"k.cuh\"\n" + Light + Launch);
  ProcessResult Kept = runTilepipe({"--plan-choice=4:registers", Cache, "--in-place", "main.cu"}, Dir + "/proj2");
  ASSERT_EQ(0, Kept.ExitCode) << Kept.Out << Kept.Err;
  EXPECT_NE(Kept.Err.find("inner.cuh:9:3: remark: [launch-resources]"), std::string::npos) << Kept.Err;
  EXPECT_NE(Kept.Err.find("kernel 'heavy' needs __launch_bounds__"), std::string::npos) << Kept.Err;
  EXPECT_NE(Kept.Err.find("main.cu:6:3: remark: [pipelined]"), std::string::npos) << Kept.Err;
  EXPECT_EQ(readFile(Dir + "/proj2/sub/inner.cuh"), Kernel) << "the header was rewritten";
  // Another header whose name ends the same (inner.cuh beside sub/inner.cuh) keeps its own text in
  // the build that confirms the bounds: given the kernel's, that build would define it twice (the
  // kernel's header has no #pragma once here, which would skip a second file of the same text).
  llvm::sys::fs::create_directories(Dir + "/proj3/sub");
  writeFile(Dir + "/proj3/sub/inner.cuh", Kernel.substr(std::string("#pragma once\n").size()));
  writeFile(Dir + "/proj3/inner.cuh", "#pragma once\nconstexpr int unrelated = 1;\n");
  writeFile(Dir + "/proj3/main.cu", "#include \"inner.cuh\"\n#include \"sub/inner.cuh\"\n" + Light + Launch);
  ProcessResult Same = runTilepipe({"--plan-choice=4:registers", Cache, "--in-place", "main.cu"}, Dir + "/proj3");
  ASSERT_EQ(0, Same.ExitCode) << Same.Out << Same.Err;
  EXPECT_NE(Same.Err.find("inner.cuh:8:3: remark: [pipelined]"), std::string::npos) << Same.Err;
  EXPECT_NE(Same.Err.find("main.cu:7:3: remark: [pipelined]"), std::string::npos) << Same.Err;
  EXPECT_NE(readFile(Dir + "/proj3/sub/inner.cuh").find("__launch_bounds__(1024) heavy"), std::string::npos)
      << readFile(Dir + "/proj3/sub/inner.cuh");
  EXPECT_EQ("#pragma once\nconstexpr int unrelated = 1;\n", readFile(Dir + "/proj3/inner.cuh"));
}

// The launch-resource check (Resources.h): ptxas's report read right, the thread limit a register
// count allows, and the tool's answer when the rewrite would need more registers than the
// original's largest blocks allow, or when it cannot count them.
#include "TestSupport.h"
#include "tilepipe/Resources.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include <gtest/gtest.h>

using namespace tilepipe;
using namespace tilepipe::test;

TEST(Resources, ReadsPtxasReport) {
  const char *Report =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_ZN2ns2ktILi3EEEvPfi' for 'sm_80'\n"
      "ptxas info    : Function properties for _ZN2ns2ktILi3EEEvPfi\n"
      "    64 bytes stack frame, 128 bytes spill stores, 96 bytes spill loads\n"
      "ptxas info    : Used 70 registers, used 1 barriers, 36864 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function "
      "'_ZN35_GLOBAL__N__0a1d0c3e_4_a_cu__Z2kbPf2kaEPf' for 'sm_90'\n"
      "ptxas info    : Used 10 registers, used 0 barriers\n"
      "ptxas info    : Compiling entry function 'plain_c_kernel' for 'sm_90'\n"
      "ptxas info    : Used 8 registers\n";
  std::vector<KernelUsage> K = parseResourceUsage(Report);
  ASSERT_EQ(3u, K.size());
  EXPECT_EQ("void ns::kt<3>", K[0].Name);
  EXPECT_EQ((std::vector<std::string>{"float*", "int"}), K[0].Params);
  EXPECT_EQ("sm_80", K[0].Arch);
  EXPECT_EQ(70u, K[0].Registers);
  EXPECT_EQ(36864u, K[0].SharedBytes);
  EXPECT_EQ(128u, K[0].SpillBytes);
  EXPECT_EQ(0u, K[1].SpillBytes);
  EXPECT_EQ("(anonymous namespace)::ka", K[1].Name);
  EXPECT_EQ(10u, K[1].Registers);
  EXPECT_EQ(0u, K[1].SharedBytes);
  EXPECT_EQ("plain_c_kernel", K[2].Name);
  EXPECT_TRUE(K[2].Params.empty());
}

TEST(Resources, ClangAndNvccSpellAnonymousNamespacesAlike) {
  std::string A, B;
  std::vector<std::string> PA, PB;
  splitDemangled("(anonymous namespace)::k(float*, int (*)(int), S<int, 2>)", A, PA);
  splitDemangled("_GLOBAL__N__0a1d0c3e_4_a_cu__Z2kbPf::k(float*, int (*)(int), S<int, 2>)", B, PB);
  EXPECT_EQ(A, B);
  EXPECT_EQ(PA, PB);
  EXPECT_EQ((std::vector<std::string>{"float*", "int (*)(int)", "S<int, 2>"}), PA);
}

TEST(Resources, ThreadsPerBlockARegisterCountAllows) {
  EXPECT_EQ(1024u, maxThreadsPerBlock(0));
  EXPECT_EQ(1024u, maxThreadsPerBlock(56));
  EXPECT_EQ(1024u, maxThreadsPerBlock(64));
  EXPECT_EQ(896u, maxThreadsPerBlock(65)); // 65 x 32 rounds up to 2304 per warp: 28 warps
  EXPECT_EQ(896u, maxThreadsPerBlock(70));
  EXPECT_EQ(512u, maxThreadsPerBlock(128));
  EXPECT_EQ(256u, maxThreadsPerBlock(255));
}

namespace {
// 1024-thread blocks and register pressure: the original fits 64 registers, the pipelined loop
// without bounds does not (testdata/launch_resources.cu has the whole program).
const char *WideKernel = R"(
__global__ void BOUNDS wide(int* __restrict__ out, const int* __restrict__ a,
                            const int* __restrict__ b, int ld1, int n1, int numTiles) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  __shared__ int t0[32][32];
  __shared__ int t1[32][64];
  int acc = 0;
  for (int t = 0; t < numTiles; t++) {
    __syncthreads();
    t0[ty][tx] = a[t * 32 + ty * 32 + tx];
    t1[ty][tx] = b[min(t * 32 * ld1 + ty * ld1 + tx, n1 - 1)];
    t1[ty][tx + 32] = b[min(t * 32 * ld1 + ty * ld1 + tx + 32, n1 - 1)];
    __syncthreads();
    acc += (t1[(ty + 24) % 32][63 - tx % 64] & 63);
    for (int k = 0; k < 64; ++k)
      acc += (t0[(ty + 10) % 32][(tx + t) % 32] & 63) * (t1[(ty + 29) % 32][(tx * 7 + 8) % 64] & 63);
    for (int k = 0; k < 16; ++k)
      acc += (t0[(k + ty) % 32][(k + tx) % 32] & 63) * (t1[(k + ty) % 32][(k + tx) % 64] & 63);
  }
  out[blockIdx.x * 1024 + ty * 32 + tx] = acc;
}
)";

std::string withBounds(const std::string &Bounds) {
  std::string S = WideKernel;
  S.replace(S.find("BOUNDS"), 6, Bounds);
  return S;
}

FileResult runChecked(const std::string &Code, bool Check = true) {
  ToolOptions Opts = defaultOptions();
  Opts.Mode = CopyMode::Pipeline;
  Opts.CheckLaunchResources = Check;
  Opts.Plan = PlanPolicy::Always; // the model would keep it: one tile is copied per element
  return runOnCode(Code, Opts);
}
} // namespace

TEST(Resources, BoundsAKernelWhoseRewriteNeedsMoreRegisters) {
  if (findTool("nvcc").empty())
    GTEST_SKIP() << "nvcc not found";
  FileResult R = runChecked(withBounds(""));
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  EXPECT_NE(std::string::npos, R.Rewritten.find("__launch_bounds__(1024) wide("));
  EXPECT_NE(std::string::npos, R.Loops[0].message().find("__launch_bounds__(1024) added to 'wide'"))
      << R.Loops[0].message();
  // The fix travels with the loop's own edits (export-fixes, SARIF).
  bool InEdits = false;
  for (const auto &E : R.Loops[0].Edits)
    InEdits |= E.getReplacementText().contains("__launch_bounds__(1024)");
  EXPECT_TRUE(InEdits);

  // Without the check the rewrite is as before, unbounded.
  FileResult Off = runChecked(withBounds(""), false);
  ASSERT_TRUE(Off.Ok) << Off.Error;
  EXPECT_EQ(std::string::npos, Off.Rewritten.find("__launch_bounds__"));
}

// A kernel template nothing in the file instantiates is analysed in tilepipe's own instantiations
// (Probes.cpp), and another file's `wide<16>` runs the rewrite: the launch check builds those
// instantiations too, else it would see no kernel to bound, and a 1024-thread launch of the
// rewrite would fail.
TEST(Resources, TheCheckBuildsTheInstantiationsTilepipeMade) {
  if (findTool("nvcc").empty())
    GTEST_SKIP() << "nvcc not found";
  std::string Code = withBounds("");
  Code.replace(Code.find("__global__"), 0, "template <int W>\n");
  Code.replace(Code.find("out[blockIdx.x"), 0, "static_assert(W > 0, \"\");\n  ");
  FileResult R = runChecked(Code);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  EXPECT_NE(std::string::npos, R.Rewritten.find("if constexpr (W == 8 || W == 16 || W == 32 || W == 64)"));
  EXPECT_NE(std::string::npos, R.Rewritten.find("__launch_bounds__(1024) wide(")) << R.Rewritten;
  EXPECT_EQ(std::string::npos, R.Rewritten.find("tilepipe_probe_")); // (the build's text alone)
}

namespace {
// 40 accumulators a thread: the original needs about 160 registers (384 threads), its pipeline
// more (testdata/template_guard.cu has the whole program).
const char *WideTemplate = R"(
DECLARE
template <int W, int R>
__global__ void wide_bounds(int *__restrict__ out, const int *__restrict__ a, const int *__restrict__ b, int nt) {
  const int tx = threadIdx.x, ty = threadIdx.y;
  __shared__ int t0[R][32];
  __shared__ int t1[R][64];
  int acc[W];
#pragma unroll
  for (int w = 0; w < W; ++w)
    acc[w] = w;
  const size_t base = (size_t)blockIdx.x * nt;
  for (int t = 0; t < nt; t++) {
    t0[ty][tx] = a[((base + t) * R + ty) * 32 + tx];
    t1[ty][tx] = b[((base + t) * R + ty) * 64 + tx];
    t1[ty][tx + 32] = b[((base + t) * R + ty) * 64 + tx + 32];
    __syncthreads();
#pragma unroll
    for (int w = 0; w < W; ++w)
      acc[w] += (t0[(ty + w) % R][(tx + t) % 32] & 63) * (t1[(ty + 29 * w) % R][(tx * 7 + w) % 64] & 63) +
                acc[(w + 1) % W];
    __syncthreads();
  }
  int s = 0;
#pragma unroll
  for (int w = 0; w < W; ++w)
    s ^= acc[w] * (w + 1);
  out[((size_t)blockIdx.x * R + ty) * 32 + tx] = s;
}
template __global__ void wide_bounds<40, 8>(int *__restrict__, const int *__restrict__, const int *__restrict__, int);
)";
std::string wideTemplate(const std::string &Declare) {
  std::string S = WideTemplate;
  S.replace(S.find("DECLARE"), 7, Declare);
  return S;
}
} // namespace

// A template's bounds hold in every instantiation: below 1024 threads, only in those built.
TEST(Resources, ATemplateIsBoundInTheInstantiationsBuiltAlone) {
  if (findTool("nvcc").empty())
    GTEST_SKIP() << "nvcc not found";
  FileResult R = runChecked(wideTemplate(""));
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  ASSERT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  const size_t At = R.Rewritten.find("__launch_bounds__((W == 40 && R == 8) ? ");
  ASSERT_NE(std::string::npos, At) << R.Rewritten;
  EXPECT_EQ(At, R.Rewritten.find("__launch_bounds__"));
  EXPECT_NE(std::string::npos, R.Rewritten.find(" : 1024) wide_bounds(", At));

  // Declared twice (with other names): the condition would not mean the same in each declaration.
  FileResult Twice = runChecked(wideTemplate(
      "template <int A, int B> __global__ void wide_bounds(int *__restrict__, const int *__restrict__, "
      "const int *__restrict__, int);"));
  ASSERT_TRUE(Twice.Ok) << Twice.Error;
  ASSERT_EQ(1u, Twice.Loops.size());
  EXPECT_EQ("launch-resources", reasonInfo(Twice.Loops[0].Code).Id.str());
  EXPECT_NE(std::string::npos, Twice.Loops[0].message().find("declared more than once")) << Twice.Loops[0].message();
  EXPECT_EQ(Twice.Original, Twice.Rewritten);
}

TEST(Resources, TheUsersBoundsAreKept) {
  if (findTool("nvcc").empty())
    GTEST_SKIP() << "nvcc not found";
  FileResult R = runChecked(withBounds("__launch_bounds__(256)"));
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  EXPECT_EQ(1u, [&] {
    size_t N = 0;
    for (size_t P = R.Rewritten.find("__launch_bounds__"); P != std::string::npos;
         P = R.Rewritten.find("__launch_bounds__", P + 1))
      ++N;
    return N;
  }());
}

TEST(Resources, LoopsStayWhenTheRegistersCannotBeCounted) {
  if (findTool("nvcc").empty())
    GTEST_SKIP() << "nvcc not found";
  // Clang parses this; nvcc, which defines __NVCC__, does not.
  FileResult R = runChecked("#ifdef __NVCC__\n#error built only with Clang\n#endif\n" + withBounds(""));
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_EQ("launch-resources", reasonInfo(R.Loops[0].Code).Id.str());
  EXPECT_NE(std::string::npos, R.Loops[0].message().find("cannot count the original's registers"))
      << R.Loops[0].message();
  EXPECT_EQ(R.Original, R.Rewritten);
}

namespace {
// The SGEMM tutorials' register-blocked kernel (testdata/copy_locals.cu has the whole program):
// the cost model would prefetch into registers, and the __launch_bounds__ that keep the original's
// 896-thread blocks make ptxas spill that prefetch.
const char *SpillingKernel = R"(
#define BM 64
#define BK 8
__global__ void sg(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  __shared__ float As[BK * BM];
  __shared__ float Bs[BK * BM];
  const int tid = threadIdx.x;
  const int rowA = tid / 2, colA = tid % 2;
  const int rowB = tid / 16, colB = tid % 16;
  const int tr = tid / 8, tc = tid % 8;
  A += blockIdx.y * BM * K;
  B += blockIdx.x * BM;
  C += blockIdx.y * BM * N + blockIdx.x * BM;
  float acc[4][8] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    float4 t = reinterpret_cast<const float4*>(&A[rowA * K + k0 + colA * 4])[0];
    As[(colA * 4 + 0) * BM + rowA] = t.x;
    As[(colA * 4 + 1) * BM + rowA] = t.y;
    As[(colA * 4 + 2) * BM + rowA] = t.z;
    As[(colA * 4 + 3) * BM + rowA] = t.w;
    float4 u = reinterpret_cast<const float4*>(&B[(k0 + rowB) * N + colB * 4])[0];
    Bs[rowB * BM + colB * 4 + 0] = u.x;
    Bs[rowB * BM + colB * 4 + 1] = u.y;
    Bs[rowB * BM + colB * 4 + 2] = u.z;
    Bs[rowB * BM + colB * 4 + 3] = u.w;
    __syncthreads();
    for (int k = 0; k < BK; ++k)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 8; ++j)
          acc[i][j] += As[k * BM + tr * 4 + i] * Bs[k * BM + tc * 8 + j];
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      C[(tr * 4 + i) * N + tc * 8 + j] = alpha * acc[i][j] + beta * C[(tr * 4 + i) * N + tc * 8 + j];
}
__global__ void other(float* out, const float* in, int n) {
  __shared__ float s[256];
  float acc = 0.f;
  for (int t = 0; t < n; ++t) {
    s[threadIdx.x] = in[(blockIdx.x * n + t) * 256 + threadIdx.x];
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  out[blockIdx.x * 256 + threadIdx.x] = acc;
}
)";
} // namespace

// A prefetch the cost model chose is worth its registers only where it stays in them: a kernel
// whose rewrite ptxas spills more than the original is kept (no-gain), and the rest of the file is
// still rewritten; --plan=always, which asks for the rewrite whatever it costs, keeps it bounded.
TEST(Resources, TheModelKeepsALoopWhoseRewriteSpills) {
  if (findTool("nvcc").empty())
    GTEST_SKIP() << "nvcc not found";
  ToolOptions Opts = defaultOptions();
  Opts.CheckLaunchResources = true;
  Opts.Plan = PlanPolicy::Model;
  FileResult R = runOnCode(SpillingKernel, Opts);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(2u, R.Loops.size());
  EXPECT_EQ("no-gain", reasonInfo(R.Loops[0].Code).Id.str()) << R.Loops[0].message();
  EXPECT_NE(std::string::npos, R.Loops[0].message().find("bytes per thread to local memory in the rewrite"))
      << R.Loops[0].message();
  EXPECT_TRUE(R.Loops[1].transformed()) << R.Loops[1].message();
  EXPECT_EQ(std::string::npos, R.Rewritten.find("__launch_bounds__")) << "the kept kernel needs no bounds";
  EXPECT_NE(std::string::npos, R.Rewritten.find("for (int k0 = 0; k0 < K; k0 += BK) {\n    float4 t ="));

  Opts.Plan = PlanPolicy::Always;
  FileResult A = runOnCode(SpillingKernel, Opts);
  ASSERT_TRUE(A.Ok) << A.Error;
  ASSERT_EQ(2u, A.Loops.size());
  EXPECT_TRUE(A.Loops[0].transformed()) << A.Loops[0].message();
}

namespace {
/// The launch check's builds, run (builds) and answered by the cache (cached), from --stats-json.
std::pair<int64_t, int64_t> launchBuilds(const std::string &StatsFile) {
  auto V = llvm::json::parse(readFile(StatsFile));
  if (!V) {
    llvm::consumeError(V.takeError());
    return {-1, -1};
  }
  const llvm::json::Object *LC = V->getAsObject()->getObject("launch_check");
  return {LC->getInteger("builds").value_or(-1), LC->getInteger("cached").value_or(-1)};
}
} // namespace

// The same sources in another folder (a test's, a second checkout's) are the same build, where
// they read nothing from their folder; a header read from the project's own include folder pins
// that folder, so a copy whose header says otherwise is built again and answered as it reads.
TEST(Resources, TheCacheAnswersTheSameSourcesElsewhere) {
  if (findTool("nvcc").empty())
    GTEST_SKIP() << "nvcc not found";
  std::string Root = tempDir(), Cache = Root + "/cache";
  auto Run = [&](const std::string &Dir, const std::string &N) {
    ProcessResult P = runTilepipe({"--quiet", "--plan=always", "--mode=pipeline",
                                   "--cache-dir=" + Cache, "--stats-json=s" + N + ".json",
                                   "src/wide.cu", "-o", "out" + N + ".cu", "--", "-Iinc"},
                                  Dir);
    EXPECT_EQ(0, P.ExitCode) << P.Err;
    return std::make_pair(readFile(Dir + "/out" + N + ".cu"), launchBuilds(Dir + "/s" + N + ".json"));
  };
  for (const char *D : {"/a/src", "/a/inc", "/b c/src", "/b c/inc", "/d/src", "/d/inc"})
    llvm::sys::fs::create_directories(Root + D);
  const std::string Alone = "#define BOUNDS\n" + std::string(WideKernel);
  writeFile(Root + "/a/src/wide.cu", Alone);
  writeFile(Root + "/b c/src/wide.cu", Alone);
  auto [First, FirstBuilds] = Run(Root + "/a", "1");
  EXPECT_EQ(std::make_pair(int64_t(3), int64_t(0)), FirstBuilds);
  auto [Second, SecondBuilds] = Run(Root + "/b c", "2");
  EXPECT_EQ(First, Second);
  EXPECT_EQ(std::make_pair(int64_t(0), int64_t(3)), SecondBuilds);

  const std::string Included = "#include \"bounds.h\"\n" + std::string(WideKernel);
  writeFile(Root + "/a/src/wide.cu", Included);
  writeFile(Root + "/a/inc/bounds.h", "#define BOUNDS\n");
  writeFile(Root + "/d/src/wide.cu", Included);
  writeFile(Root + "/d/inc/bounds.h", "#define BOUNDS __launch_bounds__(256)\n");
  auto [Third, ThirdBuilds] = Run(Root + "/a", "3");
  EXPECT_NE(std::string::npos, Third.find("__launch_bounds__(1024) wide(")) << Third;
  EXPECT_EQ(std::make_pair(int64_t(3), int64_t(0)), ThirdBuilds);
  auto [Fourth, FourthBuilds] = Run(Root + "/d", "4");
  EXPECT_EQ(std::string::npos, Fourth.find("__launch_bounds__(1024)")) << Fourth;
  EXPECT_EQ(std::make_pair(int64_t(2), int64_t(0)), FourthBuilds);
}

// The cache answers a build whose inputs are as they were, and only that: a header that appears
// where the kernel's #include finds it first (here beside the source, ahead of -I inc) changes the
// kernel, and a stale answer would add __launch_bounds__ to a kernel that has them.
TEST(Resources, TheCacheAnswersOnlyAnUnchangedBuild) {
  if (findTool("nvcc").empty())
    GTEST_SKIP() << "nvcc not found";
  std::string Dir = tempDir(), Cache = Dir + "/cache with space";
  llvm::sys::fs::create_directories(Dir + "/inc");
  llvm::sys::fs::create_directories(Dir + "/src");
  writeFile(Dir + "/inc/bounds.h", "#define BOUNDS\n");
  writeFile(Dir + "/src/wide.cu", "#include \"bounds.h\"\n" + std::string(WideKernel));
  auto Run = [&](const std::string &N) {
    ProcessResult P = runTilepipe({"--quiet", "--plan=always", "--mode=pipeline",
                                   "--cache-dir=" + Cache, "--stats-json=" + Dir + "/s" + N + ".json",
                                   "src/wide.cu", "-o", "out" + N + ".cu", "--", "-Iinc"},
                                  Dir);
    EXPECT_EQ(0, P.ExitCode) << P.Err;
    return readFile(Dir + "/out" + N + ".cu");
  };
  std::string First = Run("1");
  EXPECT_NE(std::string::npos, First.find("__launch_bounds__(1024) wide(")) << First;
  // Original, rewrite, and the rewrite with its bounds.
  EXPECT_EQ(std::make_pair(int64_t(3), int64_t(0)), launchBuilds(Dir + "/s1.json"));
  EXPECT_EQ(First, Run("2"));
  EXPECT_EQ(std::make_pair(int64_t(0), int64_t(3)), launchBuilds(Dir + "/s2.json"));

  writeFile(Dir + "/src/bounds.h", "#define BOUNDS __launch_bounds__(256)\n");
  std::string Third = Run("3");
  EXPECT_EQ(std::string::npos, Third.find("__launch_bounds__(1024)")) << Third;
  EXPECT_EQ(std::make_pair(int64_t(2), int64_t(0)), launchBuilds(Dir + "/s3.json"));

  // Without a folder nothing is kept, and every build runs.
  ProcessResult Off = runTilepipe({"--quiet", "--plan=always", "--mode=pipeline", "--cache-dir=",
                                   "--stats-json=" + Dir + "/s4.json", "src/wide.cu", "-o",
                                   "out4.cu", "--", "-Iinc"},
                                  Dir);
  EXPECT_EQ(0, Off.ExitCode) << Off.Err;
  EXPECT_EQ(std::make_pair(int64_t(2), int64_t(0)), launchBuilds(Dir + "/s4.json"));
}

// The analysis on small kernels: each reason ID with the construct that causes it, and the forms
// that must be rewritten. One loop per snippet; the outcome is read from the loop's record.
#include "TestSupport.h"
#include "tilepipe/Emit.h"
#include "tilepipe/Plan.h"
#include <cstring>
#include <set>
#include <gtest/gtest.h>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

std::string kernel(const std::string &Body,
                   const std::string &Params = "const float *A, float *C, int nt",
                   const std::string &Prelude = "") {
  return Prelude + "\n#define T 64\n__global__ void k(" + Params + ") {\n" + Body + "\n}\n";
}

/// The single candidate loop's outcome, with its message for failure output.
std::pair<std::string, std::string> outcome(const std::string &Code,
                                            const ToolOptions &Opts = defaultOptions()) {
  FileResult R = runOnCode(Code, Opts);
  if (!R.Ok)
    return {"error", R.Error};
  if (R.Loops.size() != 1)
    return {"loops=" + std::to_string(R.Loops.size()), R.Rewritten};
  return {reasonInfo(R.Loops[0].Code).Id.str(), R.Loops[0].message()};
}

#define EXPECT_OUTCOME(Id, Code)                                                                    \
  do {                                                                                             \
    auto O = outcome(Code);                                                                        \
    EXPECT_EQ(Id, O.first) << O.second;                                                            \
  } while (0)

const char *Simple = R"(
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T];
    __syncthreads();
  }
  C[threadIdx.x] = acc;)";

TEST(Analysis, TrailingLoopIsPipelined) {
  FileResult R = runOnCode(kernel(Simple));
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  EXPECT_EQ(3u, R.Loops[0].Stages);
  EXPECT_NE(R.Rewritten.find("#include <cuda/pipeline>"), std::string::npos);
  EXPECT_NE(R.Rewritten.find("__shared__ float s_stages[3][T];"), std::string::npos);
  EXPECT_NE(R.Rewritten.find("cuda::memcpy_async(&s[threadIdx.x], &A[t * T + threadIdx.x],"),
            std::string::npos)
      << R.Rewritten;
  EXPECT_NE(R.Rewritten.find("cuda::aligned_size_t<sizeof(s[0])>(sizeof(s[0])), pipe);"),
            std::string::npos);
  // The compute phase is the user's text, unchanged.
  EXPECT_NE(R.Rewritten.find("acc += s[(threadIdx.x + 1) % T];"), std::string::npos);
  // Wait, then barrier, then refill, then compute: the order that is safe with S buffers.
  size_t Wait = R.Rewritten.find("cuda::pipeline_consumer_wait_prior<1>(pipe);");
  size_t Barrier = R.Rewritten.find("__syncthreads();", Wait);
  size_t Issue = R.Rewritten.find("issue_tile();", Barrier);
  size_t Compute = R.Rewritten.find("acc += s", Issue);
  EXPECT_TRUE(Wait < Barrier && Barrier < Issue && Issue < Compute) << R.Rewritten;
  // Only the loop and the tile's declaration changed.
  EXPECT_EQ(std::string::npos, R.Rewritten.find("__shared__ float s[T];"));
  EXPECT_NE(std::string::npos, R.Rewritten.find("C[threadIdx.x] = acc;"));
}

TEST(Analysis, StagesOption) {
  ToolOptions O = defaultOptions();
  O.Stages = 5;
  FileResult R = runOnCode(kernel(Simple), O);
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_EQ(5u, R.Loops[0].Stages);
  EXPECT_NE(R.Rewritten.find("s_stages[5][T]"), std::string::npos);
}

TEST(Analysis, RotatedLoopIsPipelined) {
  EXPECT_OUTCOME("pipelined", kernel(R"(
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    __syncthreads();
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
  }
  C[threadIdx.x] = acc;)"));
}

TEST(Analysis, GuardedCopiesKeepTheirZeroFill) {
  FileResult R = runOnCode(kernel(R"(
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    int i = t * T + threadIdx.x;
    s[threadIdx.x] = i < n ? A[i] : 0.0f;
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  })",
                                  "const float *A, float *C, int nt, int n"));
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  EXPECT_NE(R.Rewritten.find("if (i < n)"), std::string::npos) << R.Rewritten;
  EXPECT_NE(R.Rewritten.find("s[threadIdx.x] = 0.0f;"), std::string::npos) << R.Rewritten;
}

TEST(Analysis, WhileLoopWithTailIncrement) {
  EXPECT_OUTCOME("pipelined", kernel(R"(
  __shared__ double s[T];
  double acc = 0;
  int k = 0;
  while (k < nt) {
    s[threadIdx.x] = A[k + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
    k += blockDim.x;
  }
  C[threadIdx.x] = acc;)",
                                     "const double *A, double *C, int nt"));
}

// Block-wide 16-byte copies: the tile analysis decides, per tile, whether a store can become one.
// Wide: every tile of the loop has 16-byte chunks in its cp.async loop, as the JSON report says.
struct WideOutcome {
  bool Wide = false;
  std::string Message;
};

WideOutcome wideOutcome(const std::string &Code, std::string *Rewritten = nullptr) {
  FileResult R = runOnCode(Code);
  if (!R.Ok || R.Loops.size() != 1 || !R.Loops[0].transformed())
    return {false, "not rewritten: " + (R.Loops.empty() ? R.Error : R.Loops[0].message())};
  if (Rewritten)
    *Rewritten = R.Rewritten;
  auto Kinds = reportedCopyKinds(R, 0, /*CpAsync=*/true);
  bool Wide = !Kinds.empty();
  for (const auto &[Tile, Kind] : Kinds)
    Wide &= Kind == "16-byte";
  return {Wide, R.Loops[0].message()};
}

TEST(WideCopy, OneDimensionalTile) {
  std::string Out;
  WideOutcome W = wideOutcome(kernel(Simple), &Out);
  EXPECT_TRUE(W.Wide) << W.Message;
  // Both paths are there: the chunks when the block fits, the original element otherwise.
  EXPECT_NE(Out.find("cuda::aligned_size_t<16>(16), pipe);"), std::string::npos) << Out;
  EXPECT_NE(Out.find("cuda::memcpy_async(&s[threadIdx.x], &A[t * T + threadIdx.x],"),
            std::string::npos);
  EXPECT_NE(Out.find("blockDim.x == sizeof(s) / sizeof(s[0])"), std::string::npos) << Out;
  EXPECT_NE(Out.find("alignas(16) __shared__ float s_stages[3][T];"), std::string::npos) << Out;
  EXPECT_NE(Out.find("% 16 == 0"), std::string::npos);
}

// Threads that differ only in an index the tile does not span copy the same elements to the same
// places: as asynchronous copies that is a race (racecheck reports it; the original's plain stores
// of equal values it does not), so in the per-element copy only the first of them copies.
TEST(WideCopy, PerElementCopyByOneThreadOfThoseThatRepeatIt) {
  std::string Out;
  WideOutcome W = wideOutcome(kernel(Simple), &Out);
  EXPECT_TRUE(W.Wide) << W.Message;
  EXPECT_NE(squeezed(Out).find("if (threadIdx.y == 0 && threadIdx.z == 0) // the others copy the same elements "
                               "::cuda::memcpy_async(&s[threadIdx.x], &A[t * T + threadIdx.x],"),
            std::string::npos)
      << Out;
  // A tile of two dimensions: the block's z index alone repeats it.
  std::string Out2;
  wideOutcome(kernel(R"(
  __shared__ float s[16][16];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[(t * 16 + threadIdx.y) * 16 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
  C[threadIdx.x] = acc;)"),
              &Out2);
  EXPECT_NE(Out2.find("if (threadIdx.z == 0) // the others copy the same elements\n"), std::string::npos) << Out2;
  // A guarded copy (no whole-tile copy) keeps every thread's own copy, as written.
  FileResult Guarded = runOnCode(kernel(R"(
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = t * T + threadIdx.x < nt ? A[t * T + threadIdx.x] : 0.0f;
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;)"));
  ASSERT_EQ(1u, Guarded.Loops.size());
  EXPECT_TRUE(Guarded.Loops[0].transformed()) << Guarded.Loops[0].message();
  EXPECT_NE(Guarded.Rewritten.find("cuda::memcpy_async(&s[threadIdx.x]"), std::string::npos) << Guarded.Rewritten;
  EXPECT_EQ(Guarded.Rewritten.find("the others copy the same"), std::string::npos) << Guarded.Rewritten;
}

TEST(WideCopy, RowsThroughLocalsAndAStrideParameter) {
  std::string Out;
  WideOutcome W = wideOutcome(kernel(R"(
  __shared__ float As[16][16];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * 16 + ty;
  float acc = 0;
  for (int k0 = 0; k0 < K; k0 += 16) {
    As[ty][tx] = A[row * K + k0 + tx];
    __syncthreads();
    acc += As[tx][ty];
    __syncthreads();
  }
  C[row * 16 + tx] = acc;)",
                                     "const float *A, float *C, int K"),
                              &Out);
  EXPECT_TRUE(W.Wide) << W.Message;
  EXPECT_NE(Out.find("- (As_index)threadIdx.y * (As_index)(K)"), std::string::npos) << Out;
  EXPECT_NE(Out.find("blockDim.y == sizeof(As) / sizeof(As[0])"), std::string::npos) << Out;
  EXPECT_NE(Out.find("(K) % (16 / sizeof(As[0][0])) == 0"), std::string::npos) << Out;
}

TEST(WideCopy, WhileLoopInductionSetJustBefore) {
  WideOutcome W = wideOutcome(kernel(R"(
  __shared__ double s[T];
  double acc = 0;
  int k = 0;
  while (k < nt) {
    s[threadIdx.x] = A[k + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
    k += blockDim.x;
  }
  C[threadIdx.x] = acc;)",
                                     "const double *A, double *C, int nt"));
  EXPECT_TRUE(W.Wide) << W.Message;
}

TEST(WideCopy, IndexDeclaredInTheCopyPhase) {
  WideOutcome W = wideOutcome(kernel(R"(
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    const int g = t * T + threadIdx.x;
    s[threadIdx.x] = A[g];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;)"));
  EXPECT_TRUE(W.Wide) << W.Message;
}

// The tiles that stay per element, each with its reason: tests/lit/wide-copy-narrow.cu.

// Tensor copies (--mode=tma/auto): the kernel takes a map per tile, a launcher is written beside
// it, and the launches in the file go through the launcher.
const char *TmaKernel = R"(
#define T 16
__global__ void k(float *C, const float *A, int ld, int nt) {
  __shared__ float s[T][T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[(blockIdx.y * T + threadIdx.y) * ld + t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
  C[(blockIdx.y * T + threadIdx.y) * T + threadIdx.x] = acc;
}
void run(float *C, const float *A, int ld, int nt, cudaStream_t st) {
  k<<<dim3(1, 4), dim3(T, T), 0, st>>>(C, A, ld, nt);
  k<<<1, dim3(T, T)>>>(C, A, ld, nt);
}
)";

// Tensor copies at every stage size (--mode=tma --tma-min-stage-bytes=0).
FileResult runWithTensorCopies(const std::string &Code) {
  ToolOptions O = defaultOptions();
  O.Mode = CopyMode::Tma;
  O.TmaMinStageBytes = 0;
  return runOnCode(Code, O);
}

TEST(TensorCopy, KernelLauncherAndLaunchSites) {
  FileResult R = runWithTensorCopies(TmaKernel);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  std::string M = R.Loops[0].message(), Out = R.Rewritten;
  EXPECT_EQ("tensor", reportedCopyKinds(R)["s"]) << M;
  EXPECT_NE(M.find("2 launch site(s) in this file now call tilepipe_launch_k"), std::string::npos) << M;
  // The kernel's new parameters are defaulted: launches tilepipe does not see still build.
  EXPECT_NE(Out.find("int nt, const __grid_constant__ ::tilepipe_rt::TileMap s_tmap = "
                     "::tilepipe_rt::TileMap{}, bool tilepipe_tma = false)"),
            std::string::npos)
      << Out;
  // The runtime that issues the tensor copies comes in through its header (Runtime.h).
  EXPECT_NE(Out.find("\n#include <tilepipe/runtime.cuh>\n"), std::string::npos);
  // The tensor-copy loop is chosen once per launch and block, for the whole loop, and only the leader
  // issues copies: no cp.async pipeline in it.
  // Read with its whitespace folded: what the code is, not how it is laid out.
  const std::string Flat = squeezed(Out);
  size_t Dispatch = Flat.find("if (tilepipe_tma && ::tilepipe_rt::takes(s_tmap, s_stages[0]) && "
                              "blockDim.y == sizeof(s_stages[0]) / sizeof(s_stages[0][0]) && "
                              "blockDim.x == sizeof(s_stages[0][0]) / sizeof(s_stages[0][0][0])) {");
  ASSERT_NE(Dispatch, std::string::npos) << Out;
  size_t Else = Flat.find("if (!tensor_copies) #endif", Dispatch);
  ASSERT_NE(Else, std::string::npos) << Out;
  std::string TmaLoop = Flat.substr(Dispatch, Else - Dispatch);
  // The block takes it where the leader finds its first two tiles on 16 bytes; the others copy by cp.async.
  size_t Probe = TmaLoop.find("for (int probe = 0; probe < 2 && (t < nt); ++probe) {");
  ASSERT_NE(Probe, std::string::npos) << TmaLoop;
  size_t Test = TmaLoop.find("tiles_aligned = tiles_aligned &&", Probe);
  size_t Start = TmaLoop.find("tilepipe_rt::starts_on_16(A, (long long)((blockIdx.y * T + threadIdx.y) * ld + "
                              "t * T + threadIdx.x));",
                              Probe);
  size_t Step = TmaLoop.find("++t;", Probe);
  size_t Choice = TmaLoop.find("tensor_copies = __syncthreads_or(leader && tiles_aligned);");
  EXPECT_TRUE(Test < Start && Start < Step && Step < Choice) << TmaLoop;
  // Every thread fences its earlier global stores against the copy engine's reads before the barrier
  // after which the leader issues.
  size_t Fence = TmaLoop.find("::cuda::ptx::fence_proxy_async(::cuda::ptx::space_global);");
  EXPECT_TRUE(Step < Fence && Fence < Choice) << TmaLoop;
  EXPECT_LT(TmaLoop.find("if (leader) {"), TmaLoop.find("}", Step)) << TmaLoop;
  EXPECT_EQ(TmaLoop.find("if (tensor_copies) {"),
            Choice + std::strlen("tensor_copies = __syncthreads_or(leader && tiles_aligned); "))
      << TmaLoop;
  EXPECT_EQ(TmaLoop.find("pipe."), std::string::npos) << TmaLoop;
  EXPECT_EQ(TmaLoop.find("cuda::pipeline"), std::string::npos) << TmaLoop;
  size_t Copy = TmaLoop.find("tilepipe_rt::copy_tile(s_tmap, s, A, (long long)((blockIdx.y * T + "
                             "threadIdx.y) * ld + t * T + threadIdx.x),");
  // The barrier expects the tile's bytes, a constant.
  size_t Arrive = TmaLoop.find("(void)::cuda::device::barrier_arrive_tx(stage_barriers[fetch_stage], 1, "
                               "// all the copies' bytes sizeof(s));");
  EXPECT_TRUE(Copy != std::string::npos && Copy < Arrive && Arrive != std::string::npos) << TmaLoop;
  EXPECT_NE(TmaLoop.find("if (leader) issue_tile();"), std::string::npos) << TmaLoop;
  EXPECT_NE(TmaLoop.find("tilepipe_rt::wait_phase(stage_barriers[stage], parities >> stage & 1u);"), std::string::npos);
  // Not nested in another loop: the barriers are not torn down.
  EXPECT_EQ(TmaLoop.find("~barrier()"), std::string::npos);
  EXPECT_NE(Out.find("alignas(128) __shared__ float s_stages[3][T][T];"), std::string::npos) << Out;
  EXPECT_NE(Out.find("#define TILEPIPE_LAUNCHER_k 1"), std::string::npos);
  EXPECT_NE(Out.find("static void tilepipe_launch_k(::dim3 grid, ::dim3 block, ::size_t shared_bytes, "
                     "::cudaStream_t stream, float *C, const float *A, int ld, int nt)"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("tilepipe_rt::encode(&s_tmap, A, sizeof(float), (long long)(ld), (long "
                     "long)(T), (long long)(T));"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("tilepipe_launch_k(dim3(1, 4), dim3(T, T), 0, st, C, A, ld, nt);"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("tilepipe_launch_k(1, dim3(T, T), 0, 0, C, A, ld, nt);"), std::string::npos)
      << Out;
  // Below sm_90 the code is the cp.async pipeline: every tensor-copy part sits under #if.
  EXPECT_NE(Out.find("#if __CUDA_ARCH__ >= 900"), std::string::npos);
  EXPECT_EQ(Out.find("#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800"), std::string::npos);
  // --mode=pipeline touches neither the kernel's signature nor the launches.
  ToolOptions PO = defaultOptions();
  PO.Mode = CopyMode::Pipeline;
  FileResult P = runOnCode(TmaKernel, PO);
  EXPECT_EQ(P.Rewritten.find("tilepipe_rt"), std::string::npos);
  EXPECT_NE(P.Rewritten.find("k<<<1, dim3(T, T)>>>(C, A, ld, nt);"), std::string::npos);
}

TEST(TensorCopy, OnlyKernelsLaunchedByNameTakeNewParameters) {
  // cudaLaunchKernel passes an argument array of the old length: the added parameters would be
  // read from past its end. Such a kernel keeps its signature and copies by cp.async.
  std::string ByAddress = std::string(TmaKernel) +
                          "void run2(float *C, const float *A, int ld, int nt) {\n"
                          "  void *args[] = {&C, &A, &ld, &nt};\n"
                          "  cudaLaunchKernel((const void *)k, dim3(1), dim3(T, T), args, 0, 0);\n}\n";
  FileResult R = runWithTensorCopies(ByAddress);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  EXPECT_EQ(R.Rewritten.find("TileMap"), std::string::npos);
  EXPECT_NE(R.Loops[0].message().find("the kernel's address is taken (line"), std::string::npos)
      << R.Loops[0].message();
  // C linkage: another file may launch it with the old parameters.
  std::string CLinkage = TmaKernel;
  CLinkage.replace(CLinkage.find("__global__ void k("), strlen("__global__ void k("),
                   "extern \"C\" __global__ void k(");
  FileResult L = runWithTensorCopies(CLinkage);
  ASSERT_TRUE(L.Ok) << L.Error;
  EXPECT_EQ(L.Rewritten.find("TileMap"), std::string::npos);
  EXPECT_NE(L.Loops[0].message().find("C linkage"), std::string::npos) << L.Loops[0].message();
  // Asking the runtime about the kernel is no launch, but its answer changes with the rewrite: a
  // program that sizes its launches from it (a persistent kernel) would run another grid.
  for (const char *Query : {"  cudaFuncAttributes a;\n  cudaFuncGetAttributes(&a, k);\n  return a.numRegs;\n",
                            "  int n = 0;\n  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, 256, 0);\n"
                            "  return n;\n",
                            "  int g = 0, b = 0;\n  cudaOccupancyMaxPotentialBlockSize(&g, &b, k);\n  return b;\n"}) {
    FileResult Q = runWithTensorCopies(std::string(TmaKernel) + "int query() {\n" + Query + "}\n");
    ASSERT_TRUE(Q.Ok) << Q.Error;
    ASSERT_EQ(1u, Q.Loops.size());
    EXPECT_EQ(Q.Loops[0].Code, Reason::LaunchResources) << Query << Q.Loops[0].message();
    EXPECT_NE(Q.Loops[0].message().find("asks the runtime about it"), std::string::npos) << Q.Loops[0].message();
    EXPECT_EQ(Q.Rewritten, Q.Original);
  }
}

TEST(TensorCopy, AddedParametersAvoidNamesTheFileUses) {
  // A macro of the flag's name and a local of the map's name: both get fresh names.
  std::string Code = "#define tilepipe_tma 1\n" + std::string(TmaKernel);
  Code.replace(Code.find("  float acc = 0;"), strlen("  float acc = 0;"),
               "  float acc = 0, s_tmap = 0;\n  acc += s_tmap;");
  FileResult R = runWithTensorCopies(Code);
  ASSERT_TRUE(R.Ok) << R.Error;
  EXPECT_NE(R.Rewritten.find("const __grid_constant__ ::tilepipe_rt::TileMap s_tmap_1 = "
                             "::tilepipe_rt::TileMap{}, bool tilepipe_tma_1 = false)"),
            std::string::npos)
      << R.Rewritten;
}

TEST(TensorCopy, LauncherNamesAvoidTheKernelsParameters) {
  // Parameters named like the launcher's own (block, stream, tma): the launcher takes other names.
  std::string Code = TmaKernel;
  Code.replace(Code.find("int ld, int nt"), 14, "int ld, int block, int tma"); // the kernel's
  Code.replace(Code.find("t < nt"), 6, "t < block");
  for (size_t P = Code.find("(C, A, ld, nt)"); P != std::string::npos; P = Code.find("(C, A, ld, nt)", P + 1))
    Code.replace(P, 14, "(C, A, ld, nt, 0)");
  FileResult R = runWithTensorCopies(Code);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_NE(R.Rewritten.find("static void tilepipe_launch_k(::dim3 grid, ::dim3 block_1, ::size_t shared_bytes, "
                             "::cudaStream_t stream, float *C, const float *A, int ld, int block, int tma) {"),
            std::string::npos)
      << R.Rewritten;
  EXPECT_NE(R.Rewritten.find("bool tma_1 = ::tilepipe_rt::available();"), std::string::npos);
  EXPECT_NE(R.Rewritten.find("::k<<<grid, block_1, shared_bytes, stream>>>(C, A, ld, block, tma, s_tmap, tma_1);"),
            std::string::npos)
      << R.Rewritten;
}

TEST(TensorCopy, AutoKeepsTheOriginalLoopBelowSm80) {
  ToolOptions O = defaultOptions();
  O.Mode = CopyMode::Auto;
  O.TmaMinStageBytes = 0;
  FileResult R = runOnCode(TmaKernel, O);
  ASSERT_TRUE(R.Ok) << R.Error;
  std::string Out = R.Rewritten;
  size_t If = Out.find("#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800");
  size_t Else = Out.find("#else", If);
  size_t Original = Out.find("s[threadIdx.y][threadIdx.x] = A[(blockIdx.y * T + threadIdx.y) * ld + t * T + threadIdx.x];", Else);
  ASSERT_NE(If, std::string::npos) << Out;
  EXPECT_NE(Else, std::string::npos);
  EXPECT_NE(Original, std::string::npos) << Out;
  EXPECT_NE(Out.find("auto &s = s_stages[0];", Else), std::string::npos) << Out;
}

// Each reason a loop keeps cp.async under --mode=tma (no tensor or bulk copy), with the remark's
// words for it: tests/lit/tensor-copy-refused.cu.

// A kernel that copies a row of 256 floats per tile with Copy, `i` being the tile's element.
std::string guardedRow(const std::string &Copy, const std::string &Params = "const float *A, int n, int nt",
                       const std::string &Before = "") {
  return "__global__ void k(float *C, " + Params + ") {\n  __shared__ float s[256];\n  float acc = 0;\n" +
         (Before.empty() ? "" : "  " + Before + "\n") +
         "  for (int t = 0; t < nt; ++t) {\n    int i = t * 256 + threadIdx.x;\n    " + Copy +
         "\n    __syncthreads();\n    acc += s[255 - threadIdx.x];\n    __syncthreads();\n  }\n"
         "  C[threadIdx.x] = acc;\n}\n";
}

// A guarded copy, `guard ? read : 0`, takes a tensor copy from a map whose extents are the guard's
// bounds: the copy engine fills zeros where the guard fails. The cp.async loop keeps the guarded
// per-element copy: the 16-byte chunks fill no zeros.
TEST(TensorCopy, GuardedCopyTakesABoundedMap) {
  FileResult R = runWithTensorCopies(R"(
#define T 16
__global__ void k(float *C, const float *A, const float *B, int M, int N, int K) {
  __shared__ float As[T][T], Bs[T][T];
  const int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
  float acc = 0;
  for (int t = 0; t < (K + T - 1) / T; ++t) {
    int aCol = t * T + threadIdx.x;
    As[threadIdx.y][threadIdx.x] = (row < M && aCol < K) ? A[row * K + aCol] : 0.0f;
    if (K > t * T + threadIdx.y && col <= N - 1)
      Bs[threadIdx.y][threadIdx.x] = B[(t * T + threadIdx.y) * N + col];
    else
      Bs[threadIdx.y][threadIdx.x] = 0;
    __syncthreads();
    for (int k = 0; k < T; ++k)
      acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
void run(float *C, const float *A, const float *B, int M, int N, int K) {
  k<<<dim3((N + T - 1) / T, (M + T - 1) / T), dim3(T, T)>>>(C, A, B, M, N, K);
}
)");
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  std::string M = R.Loops[0].message(), Out = R.Rewritten;
  auto Kinds = reportedCopyKinds(R), CpAsync = reportedCopyKinds(R, 0, /*CpAsync=*/true);
  EXPECT_EQ("tensor", Kinds["As"]) << M;
  EXPECT_EQ("tensor", Kinds["Bs"]) << M;
  EXPECT_EQ("per-element", CpAsync["As"]) << M;
  EXPECT_NE(M.find("the copy into 'As' is guarded"), std::string::npos) << M;
  // The maps end at the bounds: M rows of K columns, K rows of N columns ('<=' counts one more).
  EXPECT_NE(Out.find("tilepipe_rt::encode(&As_tmap, A, sizeof(float), (long long)(K), (long long)(T), "
                     "(long long)(T), (long long)(M), (long long)(K));"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("tilepipe_rt::encode(&Bs_tmap, B, sizeof(float), (long long)(N), (long long)(T), "
                     "(long long)(T), (long long)(K), (long long)((N - 1) + 1));"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("tilepipe_rt::takes(As_tmap, As_stages[0], true) &&"), std::string::npos) << Out;
  // The leader checks the first two tiles' coordinates against the index, then copies by them.
  EXPECT_NE(Out.find("tilepipe_rt::BoxProbe As_probe;"), std::string::npos) << Out;
  EXPECT_NE(Out.find("As_probe.fits(As_tmap, A, (long long)(row * K + aCol), row, aCol);"), std::string::npos) << Out;
  EXPECT_NE(Out.find("Bs_probe.fits(Bs_tmap, B, (long long)((t * T + threadIdx.y) * N + col), t * T + threadIdx.y, "
                     "col);"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("tilepipe_rt::copy_box(As_tmap, As, row, aCol, stage_barriers[fetch_stage]);"),
            std::string::npos)
      << Out;
  // The if/else is replaced whole.
  size_t Issue = Out.find("tilepipe_rt::copy_box(Bs_tmap, Bs, t * T + threadIdx.y, col,");
  ASSERT_NE(Issue, std::string::npos) << Out;
  size_t IssueEnd = Out.find("barrier_arrive_tx", Issue);
  EXPECT_EQ(Out.substr(Issue, IssueEnd - Issue).find("else"), std::string::npos) << Out;
  // cp.async: per element, zero fill kept, no chunks.
  EXPECT_NE(Out.find("if (row < M && aCol < K)\n"), std::string::npos) << Out;
  EXPECT_EQ(Out.find("aligned_size_t<16>"), std::string::npos) << Out;
}

// A guarded copy is never moved in 16-byte chunks, which fill no zeros, even where a tensor copy
// cannot take it either (here its box rows are 17 floats).
TEST(TensorCopy, GuardedCopyWithoutTensorCopyStaysPerElement) {
  FileResult R = runOnCode(R"(
#define T 16
__global__ void k(float *C, const float *A, int M, int K) {
  __shared__ float s[T][T + 1];
  const int row = blockIdx.y * T + threadIdx.y;
  float acc = 0;
  for (int t = 0; t * T < K; ++t) {
    if (row < M && t * T + threadIdx.x < K)
      s[threadIdx.y][threadIdx.x] = A[row * K + t * T + threadIdx.x];
    else
      s[threadIdx.y][threadIdx.x] = 0.0f;
    __syncthreads();
    acc += s[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
  C[row * T + threadIdx.x] = acc;
}
)", defaultOptions());
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  std::string M = R.Loops[0].message();
  EXPECT_TRUE(R.Loops[0].transformed()) << M;
  EXPECT_NE(M.find("a row of the box of 's' (17 x 4 bytes) is not a multiple of 16 bytes"), std::string::npos) << M;
  EXPECT_EQ(R.Rewritten.find("aligned_size_t<16>"), std::string::npos) << R.Rewritten;
  EXPECT_EQ(R.Rewritten.find("alignas("), std::string::npos) << R.Rewritten;
  EXPECT_NE(R.Rewritten.find("s[threadIdx.y][threadIdx.x] = 0.0f;"), std::string::npos) << R.Rewritten;
}

// One dimension: the map is n elements long.
TEST(TensorCopy, GuardedRowOfOneDimension) {
  FileResult R = runWithTensorCopies(guardedRow("s[threadIdx.x] = i < n ? A[i] : 0;"));
  ASSERT_TRUE(R.Ok) << R.Error;
  std::string Out = R.Rewritten;
  EXPECT_NE(Out.find("tilepipe_rt::encode(&s_tmap, A, sizeof(float), 0, 0, (long long)(256), 0, (long long)(n));"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("s_probe.fits(s_tmap, A, (long long)(i), 0, i);"), std::string::npos) << Out;
  EXPECT_NE(Out.find("tilepipe_rt::copy_box(s_tmap, s, 0, i, stage_barriers[fetch_stage]);"), std::string::npos)
      << Out;
}

// A kernel that reads 4 x 4 x 32 bricks of a volume, rows `pitch` and planes `plane` elements apart.
const char *BrickKernel = R"(
__global__ void k(float *C, const float *V, int pitch, int plane, int nt) {
  __shared__ float s[4][4][32];
  const int base = blockIdx.y * 4 * plane + blockIdx.x * 4 * pitch;
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.z][threadIdx.y][threadIdx.x] = V[base + threadIdx.z * plane + threadIdx.y * pitch + t * 32 + threadIdx.x];
    __syncthreads();
    acc += s[3 - threadIdx.z][3 - threadIdx.y][31 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
void launch(float *C, const float *V, int pitch, int plane, int nt) {
  k<<<dim3(8, 8), dim3(32, 4, 4)>>>(C, V, pitch, plane, nt);
}
)";

// With --tma-3d-tiles, a tile of three dimensions whose box the thread indices span takes one tensor
// copy of three dimensions: the launcher's map has the row stride, the plane stride and the extents.
TEST(TensorCopy, ThreeDimensionalTileTakesAThreeDimensionalMap) {
  ToolOptions O = defaultOptions();
  O.Mode = CopyMode::Tma;
  O.TmaMinStageBytes = 0;
  O.TmaThreeDimensions = true;
  FileResult R = runOnCode(BrickKernel, O);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_EQ("tensor", reportedCopyKinds(R)["s"]) << R.Loops[0].message();
  const std::string &Out = R.Rewritten;
  EXPECT_NE(Out.find("tilepipe_rt::encode(&s_tmap, V, sizeof(float), (long long)(pitch), (long long)(4), "
                     "(long long)(32), 0, 0, (long long)(plane), (long long)(4));"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("blockDim.z == sizeof(s_stages[0]) / sizeof(s_stages[0][0])"), std::string::npos) << Out;
  EXPECT_NE(Out.find("tilepipe_rt::copy_tile(s_tmap, s, V,"), std::string::npos) << Out;
  EXPECT_NE(Out.find("tilepipe_launch_k(dim3(8, 8), dim3(32, 4, 4), 0, 0, C, V, pitch, plane, nt);"),
            std::string::npos)
      << Out;
}

// By default the same tile keeps its 16-byte cp.async copies, and the remark says why.
TEST(TensorCopy, ThreeDimensionalTileKeepsCpAsyncByDefault) {
  FileResult R = runWithTensorCopies(BrickKernel);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  const std::string M = R.Loops[0].message();
  EXPECT_EQ("16-byte", reportedCopyKinds(R)["s"]) << M;
  EXPECT_NE(M.find("'s' has three dimensions, whose tensor copies measured slower than the 16-byte cp.async "
                   "copies (--tma-3d-tiles takes them)"),
            std::string::npos)
      << M;
  EXPECT_EQ(R.Rewritten.find("CUtensorMap"), std::string::npos);
}

// An index that moves by a fixed step, through an index variable, a shift and a cast, takes copies
// by the copy engine (this tile of one dimension: a bulk copy).
TEST(TensorCopy, EvenStepsThroughIndexVariables) {
  FileResult R = runWithTensorCopies(R"(
__global__ void k(float *C, const float *A, int nt, int w) {
  __shared__ float s[256];
  float acc = 0;
  for (int t = 0, u = 3; t < nt; ++t, u -= 2) {
    long first = (long)(t << 8) - u * w;
    s[threadIdx.x] = A[first + 2 * w + threadIdx.x];
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
)");
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_EQ("bulk", reportedCopyKinds(R)["s"]) << R.Loops[0].message();
}

// By default (--mode=auto), tensor copies go only to loops whose stage holds at least 2 KiB: the
// 16 x 16 float tile (1 KiB) keeps its cp.async copies, and the remark says why.
TEST(TensorCopy, SmallStagesKeepCpAsync) {
  FileResult R = runOnCode(TmaKernel);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  std::string M = R.Loops[0].message();
  EXPECT_NE(M.find("s without tensor or bulk copies: a stage holds 1024 bytes, below --tma-min-stage-bytes=2048"),
            std::string::npos)
      << M;
  EXPECT_NE(M.find("the original loop below compute capability 8.0"), std::string::npos) << M;
  EXPECT_EQ(R.Rewritten.find("tilepipe_rt"), std::string::npos);
  // At the threshold, the loop takes them.
  ToolOptions O = defaultOptions();
  O.TmaMinStageBytes = 1024;
  FileResult At = runOnCode(TmaKernel, O);
  ASSERT_EQ(1u, At.Loops.size());
  EXPECT_EQ("tensor", reportedCopyKinds(At)["s"]) << At.Loops[0].message();
}

// A tiled loop inside another loop: the tensor-copy block runs once per outer iteration, so the
// leader tears its barriers down before the block's final barrier, and sets them up again next time.
TEST(TensorCopy, NestedLoopTearsDownItsBarriers) {
  FileResult R = runWithTensorCopies(R"(
__global__ void k(float *C, const float *A, int nt, int passes) {
  __shared__ float s[64];
  float acc = 0;
  for (int p = 0; p < passes; ++p) {
    for (int t = 0; t < nt; ++t) {
      s[threadIdx.x] = A[t * 64 + threadIdx.x];
      __syncthreads();
      acc += s[63 - threadIdx.x];
      __syncthreads();
    }
  }
  C[threadIdx.x] = acc;
}
)");
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  const std::string &Out = R.Rewritten;
  size_t Teardown = Out.find("::tilepipe_rt::drop_barrier(stage_barriers[s_1]);");
  ASSERT_NE(Teardown, std::string::npos) << Out;
  size_t Barrier = Out.find("the buffers may be refilled when this block runs again", Teardown);
  size_t Else = Out.find("if (!tensor_copies)\n#endif");
  EXPECT_TRUE(Barrier != std::string::npos && Barrier < Else) << Out;
}

// A tile of one dimension is one contiguous piece: one bulk copy (cp.async.bulk) moves it, with
// no tensor map, so neither the kernel's parameters nor its launches change, and the kernel takes
// the bulk copies however it is launched.
const char *BulkKernel = R"(
__global__ void k(float4 *C, const float4 *A, int nt) {
  __shared__ float4 s[256];
  float4 acc = make_float4(0, 0, 0, 0);
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 256 + threadIdx.x];
    __syncthreads();
    acc.x += s[255 - threadIdx.x].x;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
void run(float4 *C, const float4 *A, int nt) { k<<<8, 256>>>(C, A, nt); }
)";

TEST(BulkCopy, OneDimensionalTileNeedsNoLauncher) {
  FileResult R = runOnCode(BulkKernel); // the default mode, at the default stage threshold (4 KiB here)
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  std::string M = R.Loops[0].message(), Out = R.Rewritten;
  EXPECT_EQ("bulk", reportedCopyKinds(R)["s"]) << M;
  EXPECT_NE(M.find("on compute capability 9.0, however launched"), std::string::npos) << M;
  EXPECT_EQ(M.find("launch site"), std::string::npos) << M;
  EXPECT_NE(Out.find("__global__ void k(float4 *C, const float4 *A, int nt) {"), std::string::npos) << Out;
  EXPECT_NE(Out.find("k<<<8, 256>>>(C, A, nt);"), std::string::npos) << Out;
  EXPECT_EQ(Out.find("TILEPIPE_LAUNCHER_k"), std::string::npos) << Out;
  // Taken where the block has the tile's shape and the leader finds the first two tiles on 16 bytes.
  size_t Dispatch = Out.find("if (blockDim.x == sizeof(s_stages[0]) / sizeof(s_stages[0][0])) {");
  ASSERT_NE(Dispatch, std::string::npos) << Out;
  size_t Else = Out.find("if (!tensor_copies)\n#endif", Dispatch);
  ASSERT_NE(Else, std::string::npos) << Out;
  std::string Loop = Out.substr(Dispatch, Else - Dispatch);
  EXPECT_EQ(Loop.find("takes("), std::string::npos) << Loop;
  EXPECT_NE(Loop.find("tilepipe_rt::starts_on_16(A, (long long)(t * 256 + threadIdx.x));"), std::string::npos)
      << Loop;
  size_t Copy = Loop.find("::tilepipe_rt::bulk_copy(s, A, (long long)(t * 256 + threadIdx.x),");
  size_t Arrive = Loop.find("sizeof(s));", Copy);
  EXPECT_NE(squeezed(Loop).find("bulk_copy(s, A, (long long)(t * 256 + threadIdx.x), stage_barriers[fetch_stage]);"),
            std::string::npos)
      << Loop;
  EXPECT_TRUE(Copy != std::string::npos && Arrive != std::string::npos) << Loop;
  EXPECT_EQ(Loop.find("pipe."), std::string::npos) << Loop;
  EXPECT_NE(Out.find("// capability 9.0, however launched: one bulk copy (cp.async.bulk) per tile, issued by one "
                     "thread; else cp.async copies."),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("alignas(128) __shared__ float4 s_stages[3][256];"), std::string::npos) << Out;
  // Below the stage threshold it stays on cp.async.
  ToolOptions O = defaultOptions();
  O.TmaMinStageBytes = 4097;
  FileResult Small = runOnCode(BulkKernel, O);
  ASSERT_EQ(1u, Small.Loops.size());
  EXPECT_NE(Small.Loops[0].message().find("s without tensor or bulk copies: a stage holds 4096 bytes"),
            std::string::npos)
      << Small.Loops[0].message();
  EXPECT_EQ(Small.Rewritten.find("tilepipe_rt"), std::string::npos);
}

// A __device__ function cannot be handed a tensor map, but needs none for bulk copies.
TEST(BulkCopy, InADeviceFunction) {
  FileResult R = runWithTensorCopies(R"(
__device__ void tiles(float *C, const float *A, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    acc += s[63 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
__global__ void k(float *C, const float *A, int nt) { tiles(C, A, nt); }
)");
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_EQ("bulk", reportedCopyKinds(R)["s"]) << R.Loops[0].message();
  EXPECT_NE(R.Rewritten.find("tilepipe_rt::bulk_copy(s, A, (long long)(t * 64 + threadIdx.x),"), std::string::npos)
      << R.Rewritten;
  EXPECT_NE(R.Rewritten.find("__global__ void k(float *C, const float *A, int nt) { tiles(C, A, nt); }"),
            std::string::npos);
  // The function may run again: the barriers are torn down at its end.
  EXPECT_NE(R.Rewritten.find("::tilepipe_rt::drop_barrier(stage_barriers["), std::string::npos) << R.Rewritten;
}

// A loop with a tile of two dimensions (a tensor copy, through its map) and one of one dimension (a
// bulk copy): the launch needs the map of the first only.
TEST(BulkCopy, BesideATensorCopy) {
  FileResult R = runWithTensorCopies(R"(
#define T 16
__global__ void k(float *C, const float *A, const float *X, int ld, int nt) {
  __shared__ float s[T][T];
  __shared__ float x[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[(blockIdx.y * T + threadIdx.y) * ld + t * T + threadIdx.x];
    x[threadIdx.x] = X[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x][threadIdx.y] * x[threadIdx.y];
    __syncthreads();
  }
  C[(blockIdx.y * T + threadIdx.y) * T + threadIdx.x] = acc;
}
void run(float *C, const float *A, const float *X, int ld, int nt) { k<<<dim3(1, 4), dim3(T, T)>>>(C, A, X, ld, nt); }
)");
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  std::string M = R.Loops[0].message(), Out = R.Rewritten;
  EXPECT_EQ("tensor", reportedCopyKinds(R)["s"]) << M;
  EXPECT_EQ("bulk", reportedCopyKinds(R)["x"]) << M;
  EXPECT_NE(M.find("when launched through tilepipe_launch_k"), std::string::npos) << M;
  EXPECT_NE(Out.find("int nt, const __grid_constant__ ::tilepipe_rt::TileMap s_tmap = ::tilepipe_rt::TileMap{}, "
                     "bool tilepipe_tma = false)"),
            std::string::npos)
      << Out;
  EXPECT_EQ(Out.find("x_tmap"), std::string::npos) << Out;
  EXPECT_NE(squeezed(Out).find("if (tilepipe_tma && ::tilepipe_rt::takes(s_tmap, s_stages[0]) && blockDim.y =="),
            std::string::npos)
      << Out;
  EXPECT_NE(squeezed(Out).find("::tilepipe_rt::bulk_copy(x, X, (long long)(t * T + threadIdx.x), "
                               "stage_barriers[fetch_stage]);"),
            std::string::npos)
      << Out;
  EXPECT_NE(Out.find("sizeof(s) + sizeof(x));"), std::string::npos) << Out;
  EXPECT_NE(Out.find("// Tensor and bulk copies where the first two tiles start on 16 bytes"), std::string::npos);
  EXPECT_NE(Out.find("tilepipe_launch_k(dim3(1, 4), dim3(T, T), 0, 0, C, A, X, ld, nt);"), std::string::npos);
}

TEST(Analysis, VectorElementsOf8And16Bytes) {
  EXPECT_OUTCOME("pipelined", kernel(R"(
  __shared__ float4 s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    float4 v = s[T - 1 - threadIdx.x];
    acc += v.x * v.w;
    __syncthreads();
  }
  C[threadIdx.x] = acc;)",
                                     "const float4 *A, float *C, int nt"));
  EXPECT_OUTCOME("pipelined", kernel(R"(
  __shared__ int2 s[T];
  int acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x].y;
    __syncthreads();
  }
  C[threadIdx.x] = acc;)",
                                     "const int2 *A, int *C, int nt"));
}

TEST(Analysis, DeviceFunctionCalledWithGlobalPointers) {
  std::string Code = R"(
#define T 64
__device__ float body(const float *A, int nt) {
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  return acc;
}
__global__ void k(const float *A, float *C, int nt) { C[threadIdx.x] = body(A, nt); }
)";
  auto O = outcome(Code);
  EXPECT_EQ("pipelined", O.first) << O.second;
  // A __device__ function may run again: its block ends with a barrier before the buffers are reused.
  FileResult R = runOnCode(Code);
  EXPECT_NE(R.Rewritten.find("the buffers may be refilled when this block runs again"), std::string::npos);
}

TEST(Analysis, DeviceFunctionCalledWithSharedPointerIsRefused) {
  EXPECT_OUTCOME("load-source", R"(
#define T 64
__device__ float body(const float *A, int nt) {
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  return acc;
}
__global__ void k(float *C, int nt) {
  __shared__ float staging[T * 8];
  C[threadIdx.x] = body(staging, nt);
}
)");
}

TEST(Analysis, RestrictPointersNeedNoAssumption) {
  FileResult R = runOnCode(kernel(R"(
  __shared__ float s[T];
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    C[t * T + threadIdx.x] = s[T - 1 - threadIdx.x];
    __syncthreads();
  })",
                                  "const float *__restrict__ A, float *__restrict__ C, int nt"));
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed());
  EXPECT_EQ(std::string::npos, R.Loops[0].message().find("assumes"));
}

TEST(Analysis, OtherStoresNameTheAssumptionOrAreRefused) {
  std::string Code = kernel(R"(
  __shared__ float s[T];
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    C[t * T + threadIdx.x] = s[T - 1 - threadIdx.x];
    __syncthreads();
  })");
  // Nothing in the source says C is not A: refused by default.
  EXPECT_EQ("store-may-alias", outcome(Code).first);
  ToolOptions Assume = defaultOptions();
  Assume.AssumeNoAlias = true;
  auto O = outcome(Code, Assume);
  EXPECT_EQ("pipelined", O.first);
  EXPECT_NE(O.second.find("assumes C does not overlap A"), std::string::npos) << O.second;
}

TEST(Analysis, StagesAreLoweredToFitSharedMemory) {
  // 20 KiB per stage: 3 stages would need 60 KiB, 2 fit.
  auto O = outcome(kernel(R"(
  __shared__ float s[5120];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < 5120; i += blockDim.x)
      s[i] = A[t * 5120 + i];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;)"));
  EXPECT_EQ("pipelined", O.first);
  EXPECT_NE(O.second.find("3 stages requested, 2 fit"), std::string::npos) << O.second;
}

// Stages of exactly a third of 48 KiB: three fill it to the byte, 49,152 bytes, which builds. The
// copy-engine loop's stage barriers, 8 bytes a stage, would push the block over (ptxas: "uses too
// much shared data"): a loop that takes the engine gets one stage fewer; one that copies by
// cp.async alone (a strided copy loop, or --mode=pipeline) keeps three.
TEST(Analysis, StageBarriersCountAgainstSharedMemory) {
  auto Strided = outcome(kernel(R"(
  __shared__ float s[4096];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = threadIdx.x; i < 4096; i += blockDim.x)
      s[i] = A[t * 4096 + i];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;)"));
  EXPECT_EQ("pipelined", Strided.first);
  EXPECT_NE(Strided.second.find("3-stage cp.async pipeline"), std::string::npos) << Strided.second;
  const std::string Box = R"(
__global__ void k(const float4 *A, float *C, int nt, int ld) {
  __shared__ float4 s[32][32];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[(blockIdx.x * 32 + threadIdx.y) * ld + t * 32 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x][threadIdx.y].x;
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
)";
  auto Engine = outcome(Box);
  EXPECT_EQ("pipelined", Engine.first);
  EXPECT_NE(Engine.second.find("2-stage cp.async pipeline"), std::string::npos) << Engine.second;
  EXPECT_NE(Engine.second.find("by tensor copy"), std::string::npos) << Engine.second;
  EXPECT_NE(Engine.second.find("3 stages fit in 48 KiB of static shared memory, 2 beside the copy engine's barriers"),
            std::string::npos)
      << Engine.second;
  ToolOptions Pipeline = defaultOptions();
  Pipeline.Mode = CopyMode::Pipeline;
  auto CpAsync = outcome(Box, Pipeline);
  EXPECT_NE(CpAsync.second.find("3-stage cp.async pipeline"), std::string::npos) << CpAsync.second;
}

// Templates (one rewrite for every instantiation, instantiations that disagree, one bad or none):
// tests/lit/templates.cu.

// One construct per reason ID: tests/lit/reasons.cu (and tests/lit/legality-*.cu).

TEST(Analysis, LoopsWithoutBarriersAreNotCandidates) {
  FileResult R = runOnCode(kernel(R"(
  float acc = 0;
  for (int t = 0; t < nt; ++t) acc += A[t];
  C[threadIdx.x] = acc;)"));
  ASSERT_TRUE(R.Ok);
  EXPECT_TRUE(R.Loops.empty());
  EXPECT_EQ(R.Original, R.Rewritten);
}

// Which slices of a loop's text tilepipe cuts, and each cut it refuses (source-text), are lit
// tests: tests/lit/source-text.cu.

// Only the slices that move are checked: in --mode=pipeline the trailing barrier's line is dropped,
// so a continued comment there is no obstacle; in --mode=auto the whole loop moves under #else.
TEST(Emission, ContinuedCommentOnADroppedLine) {
  std::string Code = kernel(R"(
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads(); // the buffer is free \

  }
  C[threadIdx.x] = acc;)");
  ToolOptions PO = defaultOptions();
  PO.Mode = CopyMode::Pipeline;
  EXPECT_EQ("pipelined", outcome(Code, PO).first) << outcome(Code, PO).second;
  auto O = outcome(Code);
  EXPECT_EQ("source-text", O.first) << O.second;
  EXPECT_NE(O.second.find("in the loop kept below compute capability 8.0"), std::string::npos) << O.second;
}

// Code after the loop on its last line would become part of the `#endif` line: it moves to its own.
TEST(Emission, CodeAfterTheLoopOnItsLastLine) {
  FileResult R = runOnCode(kernel(R"(
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  } acc *= 2; // doubled
  C[threadIdx.x] = acc;)"));
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  // The #line directive that keeps the line numbers after the loop stands between them.
  EXPECT_NE(R.Rewritten.find("#endif\n#line 11\n  acc *= 2; // doubled\n"), std::string::npos) << R.Rewritten;
  // A comment alone moves too.
  FileResult C = runOnCode(kernel(R"(
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  } // tiles done
  C[threadIdx.x] = acc;)"));
  EXPECT_NE(C.Rewritten.find("#endif\n#line 11\n // tiles done\n"), std::string::npos) << C.Rewritten;
}

// A conditional or a brace spelled with digraphs counts as one: the pipeline's include goes
// above `%:if 0`, not inside it (nor inside `extern "C" <% ... %>`).
TEST(Emission, IncludeNeverInsideDigraphConditionalsOrBraces) {
  for (const char *Prelude : {"%:if 0\n#include <cstdio>\n%:endif\n",
                              "extern \"C\" <%\n#include <cstdio>\n%>\n"}) {
    FileResult R = runOnCode(kernel(R"(
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;)", "const float *A, float *C, int nt", Prelude), [] {
      ToolOptions O = defaultOptions();
      O.Plan = PlanPolicy::Always;
      return O;
    }());
    ASSERT_EQ(1u, R.Loops.size());
    EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
    size_t Inc = R.Rewritten.find("#include <cuda/pipeline>");
    EXPECT_LT(Inc, R.Rewritten.find(llvm::StringRef(Prelude).take_front(6).str())) << R.Rewritten;
  }
}

/// The line that the preprocessor gives each line of Text (1-based; `#line N` numbers the next N).
std::vector<unsigned> presumedLines(llvm::StringRef Text) {
  std::vector<unsigned> Lines;
  unsigned Next = 1;
  while (!Text.empty()) {
    auto [Line, Rest] = Text.split('\n');
    Lines.push_back(Next++);
    llvm::StringRef D = Line.ltrim();
    unsigned N = 0;
    if (D.consume_front("#") && (D = D.ltrim()).consume_front("line") &&
        !(D = D.ltrim()).consumeInteger(10, N))
      Next = N;
    Text = Rest;
  }
  return Lines;
}

/// Every line of R's original that no edit touches has, in the rewrite, the number it had (so that
/// __LINE__ expands as before); returns how many lines were compared.
unsigned expectLinesKept(const FileResult &R) {
  std::vector<unsigned> Presumed = presumedLines(R.Rewritten), Before = presumedLines(R.Original);
  llvm::StringRef Orig = R.Original;
  unsigned Compared = 0, Line = 1;
  for (size_t Start = 0; Start < Orig.size(); ++Line) {
    size_t End = Orig.find('\n', Start);
    End = End == llvm::StringRef::npos ? Orig.size() : End;
    bool Clean = true;
    long Shift = 0; // bytes the edits before this line add
    for (const auto &E : R.Edits) {
      size_t B = E.getOffset(), F = B + E.getLength();
      if (F <= Start)
        Shift += long(E.getReplacementText().size()) - long(E.getLength());
      if ((B < End && F > Start) || (B == F && Start < B && B < End))
        Clean = false;
    }
    if (Clean) {
      size_t Out = Start + Shift;
      unsigned OutLine = 1 + llvm::StringRef(R.Rewritten).take_front(Out).count('\n');
      EXPECT_EQ(Orig.substr(Start, End - Start), llvm::StringRef(R.Rewritten).substr(Out, End - Start));
      EXPECT_EQ(Before[Line - 1], Presumed[OutLine - 1])
          << "original line " << Line << ": " << Orig.substr(Start, End - Start).str();
      ++Compared;
    }
    Start = End + 1;
  }
  return Compared;
}

// The rewrite adds lines (the pipeline, an include, a launcher) and may remove some (a launch site
// over several lines): the text after each edit keeps its line numbers, so that __LINE__ in an
// assert or an error macro after the loop expands to what it did (a `#line` after an edit that
// adds lines, newlines after one that removes them).
TEST(Emission, LineNumbersAfterEveryEditAreKept) {
  ToolOptions Always = defaultOptions();
  Always.Plan = PlanPolicy::Always;
  std::string AfterOnLastLine = kernel(R"(
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  } acc *= 2; // doubled
  C[threadIdx.x] = acc;
  if (acc < 0) printf("%d\n", __LINE__);)", "const float *A, float *C, int nt", "#include <cstdio>");
  for (const ToolOptions &O : {defaultOptions(), Always}) {
    FileResult R = runOnCode(AfterOnLastLine, O);
    ASSERT_EQ(1u, R.Loops.size());
    EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
    EXPECT_GT(expectLinesKept(R), 3u) << R.Rewritten;
    EXPECT_NE(R.Rewritten.find("#endif\n#line 11\n  acc *= 2; // doubled\n"), std::string::npos) << R.Rewritten;
  }
  // After a #line of the user's, the directive continues the user's numbering (and file name).
  std::string Mapped = "#line 500 \"tmpl.cu\"\n" + AfterOnLastLine;
  for (const ToolOptions &O : {defaultOptions(), Always}) {
    FileResult R = runOnCode(Mapped, O);
    ASSERT_EQ(1u, R.Loops.size());
    EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
    EXPECT_GT(expectLinesKept(R), 3u) << R.Rewritten;
    EXPECT_NE(R.Rewritten.find("#endif\n#line 510\n  acc *= 2;"), std::string::npos) << R.Rewritten;
  }
  // A #line that only one of nvcc's passes reads numbers the file apart in the two: no directive
  // of the rewrite's could be right in both, so the loop is left alone.
  for (const char *Guard : {"#ifndef __CUDA_ARCH__\n#line 1000\n#endif\n",
                            "#ifdef __CUDA_ARCH__\n# 1000 \"k.cu\"\n#endif\n"}) {
    FileResult R = runOnCode(Guard + AfterOnLastLine, Always);
    ASSERT_EQ(1u, R.Loops.size());
    EXPECT_EQ("source-text", reasonInfo(R.Loops[0].Code).Id.str()) << R.Loops[0].message();
  }
  // Files with an include added, tensor copies, a launcher and launch sites rewritten in main().
  for (const char *Name : {"matmul_classic.cu", "multi_loops.cu", "tma_row_wrap.cu"})
    for (const ToolOptions &O : {defaultOptions(), Always}) {
      FileResult R = runOnFile(sourceDir() + "/testdata/" + Name, O);
      ASSERT_TRUE(R.Ok) << R.Error;
      EXPECT_FALSE(R.Edits.empty()) << Name;
      EXPECT_GT(expectLinesKept(R), 100u) << Name;
    }
}

// The calls the emitted code makes do not depend on names in the kernel's scope: a parameter
// `init` (libcu++'s init is found only by argument-dependent lookup, which it would switch off), a
// namespace `cuda` around the kernel, a parameter named as the kernel (the launcher repeats the
// parameters). Every call is qualified from the global namespace.
TEST(Emission, CallsDoNotDependOnTheKernelsNames) {
  std::string Code = R"(
#define T 16
namespace app {
namespace cuda { __device__ inline float twice(float x) { return 2 * x; } }
__global__ void k(float *C, const float *A, int ld, int nt, float init, float k) {
  __shared__ float s[T][T];
  float acc = init;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[(blockIdx.y * T + threadIdx.y) * ld + t * T + threadIdx.x];
    __syncthreads();
    acc += cuda::twice(s[threadIdx.x][threadIdx.y]) * k;
    __syncthreads();
  }
  C[(blockIdx.y * T + threadIdx.y) * T + threadIdx.x] = acc;
}
}
void run(float *C, const float *A, int ld, int nt) { app::k<<<dim3(1, 4), dim3(T, T)>>>(C, A, ld, nt, 1, 2); }
)";
  FileResult R = runWithTensorCopies(Code);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  std::string Kernel = R.Rewritten.substr(R.Rewritten.find("namespace app {"));
  EXPECT_NE(Kernel.find("::tilepipe_rt::init_barrier(stage_barriers[s_1], 1);"), std::string::npos) << Kernel;
  EXPECT_EQ(Kernel.find("init(&"), std::string::npos) << Kernel;
  // No call through `cuda::` or `tilepipe_rt::` but from the global namespace (the user's own
  // `cuda::twice` aside).
  for (const char *Name : {"cuda::", "tilepipe_rt::"})
    for (size_t P = Kernel.find(Name); P != std::string::npos; P = Kernel.find(Name, P + 1))
      if (Kernel.compare(P, 12, "cuda::twice(") != 0)
        EXPECT_TRUE(P >= 2 && Kernel.compare(P - 2, 2, "::") == 0)
            << Name << " unqualified at: " << Kernel.substr(P > 40 ? P - 40 : 0, 100);
  EXPECT_NE(Kernel.find("::app::k<<<grid, block, shared_bytes, stream>>>(C, A, ld, nt, init, k, s_tmap, tma);"),
            std::string::npos)
      << Kernel;
  EXPECT_NE(Kernel.find("app::tilepipe_launch_k(dim3(1, 4), dim3(T, T), 0, 0, C, A, ld, nt, 1, 2);"),
            std::string::npos)
      << Kernel;
}

// Where the compute phase may write memory that another thread reads after the loop (here a
// second __shared__ array that thread 0 sums), the original's last trailing barrier ordered those
// writes: the rewrite keeps one after the loop, in each path (tensor copies and cp.async), once.
TEST(Emission, BarrierAfterTheLoopInEveryPath) {
  std::string Code = R"(
#define T 16
__global__ void k(float *C, const float *A, int ld, int nt) {
  __shared__ float s[T][T];
  __shared__ float red[T][T];
  red[threadIdx.y][threadIdx.x] = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.y][threadIdx.x] = A[(blockIdx.y * T + threadIdx.y) * ld + t * T + threadIdx.x];
    __syncthreads();
    red[threadIdx.y][threadIdx.x] += s[threadIdx.x][threadIdx.y];
    __syncthreads();
  }
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    float sum = 0;
    for (int i = 0; i < T * T; ++i) sum += red[i / T][i % T];
    C[blockIdx.y] = sum;
  }
}
void run(float *C, const float *A, int ld, int nt) { k<<<dim3(1, 4), dim3(T, T)>>>(C, A, ld, nt); }
)";
  FileResult R = runWithTensorCopies(Code);
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  const std::string &Out = R.Rewritten;
  const std::string Drain = "__syncthreads(); // the loop's writes to memory are seen by every thread after it";
  size_t TmaEnd = Out.find("if (!tensor_copies)\n#endif");
  size_t First = Out.find(Drain), Second = Out.find(Drain, First + 1);
  EXPECT_TRUE(First < TmaEnd && TmaEnd < Second && Second != std::string::npos) << Out;
  EXPECT_EQ(Out.find(Drain, Second + 1), std::string::npos) << Out;
  // The cp.async loop's barrier comes after the pipeline is drained.
  EXPECT_LT(Out.find("::cuda::pipeline_consumer_wait_prior<0>(pipe);", TmaEnd), Second);
  // Nested in another loop: one barrier says both why's, in each path, after the teardown.
  std::string Nested = Code;
  Nested.replace(Nested.find("  for (int t = 0;"), 0, "  for (int p = 0; p < 2; ++p)\n");
  FileResult N = runWithTensorCopies(Nested);
  ASSERT_EQ(1u, N.Loops.size());
  const std::string Both = "__syncthreads(); // the loop's writes are seen after it; the buffers may be refilled "
                           "when this block runs again";
  size_t NFirst = N.Rewritten.find(Both), NSecond = N.Rewritten.find(Both, NFirst + 1);
  EXPECT_TRUE(NFirst != std::string::npos && NSecond != std::string::npos) << N.Rewritten;
  EXPECT_EQ(N.Rewritten.find(Both, NSecond + 1), std::string::npos);
  EXPECT_LT(N.Rewritten.find("::tilepipe_rt::drop_barrier("), NFirst);
  EXPECT_EQ(N.Rewritten.find("__syncthreads(); // the buffers may be refilled"), std::string::npos);
}

// A loop of the rotated form: its leading barrier ordered what threads wrote before the loop (to
// the copies' sources) before any thread copied; the rewrite issues its first copies after a
// block barrier. The trailing form needs none.
TEST(Emission, RotatedLoopCopiesAfterABarrier) {
  const std::string Lead = "__syncthreads(); // as the loop's leading barrier";
  FileResult R = runOnCode(kernel(R"(
  __shared__ float s[T]; float acc = 0;
  for (int t = 0; t < nt; ++t) {
    __syncthreads();
    s[threadIdx.x] = A[t * T + threadIdx.x];
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
  }
  C[threadIdx.x] = acc;)"));
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  size_t Barrier = R.Rewritten.find(Lead);
  size_t Prologue = R.Rewritten.find("for (int prologue = 0; prologue < 2; ++prologue)\n");
  size_t Issue = R.Rewritten.find("issue_tile();", Prologue);
  EXPECT_TRUE(Barrier < Prologue && Prologue < Issue && Issue != std::string::npos) << R.Rewritten;
  EXPECT_EQ(R.Rewritten.find("issue_tile();"), Issue) << R.Rewritten;
  EXPECT_EQ(runOnCode(kernel(Simple)).Rewritten.find(Lead), std::string::npos);
}

// With copies by the copy engine, every thread fences its earlier global stores against the
// engine's reads (fence.proxy.async.global) before the barrier after which the leader issues.
TEST(Emission, ProxyFenceBeforeTheLeadersFirstCopy) {
  FileResult R = runOnCode(BulkKernel);
  ASSERT_EQ(1u, R.Loops.size());
  const std::string &Out = R.Rewritten;
  size_t Fence = Out.find("::cuda::ptx::fence_proxy_async(::cuda::ptx::space_global);");
  size_t Barrier = Out.find("tensor_copies = __syncthreads_or(leader && tiles_aligned);");
  size_t Prologue = Out.find("for (int prologue = 0; prologue < 2; ++prologue)");
  EXPECT_TRUE(Fence < Barrier && Barrier < Prologue && Prologue != std::string::npos) << Out;
  // Not in the leader's branch: every thread executes it.
  EXPECT_LT(Out.rfind("}\n", Fence), Fence);
  EXPECT_EQ(Out.find("space_global);", Fence + 60), std::string::npos) << Out;
}

TEST(Reasons, IdsAreUniqueAndDocumented) {
  std::string Readme = readFile(sourceDir() + "/README.md");
  std::set<std::string> Seen;
  for (const ReasonInfo &R : allReasons()) {
    EXPECT_TRUE(Seen.insert(R.Id.str()).second) << R.Id.str();
    EXPECT_NE(Readme.find("| `" + R.Id.str() + "` | " + R.Message.str() + " |"), std::string::npos)
        << "README's reason table lacks the row for " << R.Id.str();
  }
}

} // namespace

// The cost model (Plan.h, predictNoGain): without tensor or bulk copies, a per-element tile or
// stages under 2 KiB keep the loop as it is; --plan=always and the loop's annotation override it.
TEST(Analysis, CostModelPrefetchesThroughRegistersWhereAPipelineWouldNotPay) {
  const std::string Small = "__global__ void k(const float *A, float *C, int nt) {\n"
                            "  __shared__ float s[64];\n"
                            "  float acc = 0;\n"
                            "ANNOTATION"
                            "  for (int t = 0; t < nt; ++t) {\n"
                            "    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];\n"
                            "    __syncthreads();\n"
                            "    acc += s[threadIdx.x];\n"
                            "    __syncthreads();\n"
                            "  }\n"
                            "  C[blockIdx.x * 64 + threadIdx.x] = acc;\n"
                            "}\n";
  auto With = [&](const std::string &Annotation) {
    std::string S = Small;
    S.replace(S.find("ANNOTATION"), 10, Annotation);
    return S;
  };
  ToolOptions Model = defaultOptions();
  Model.Plan = PlanPolicy::Model;
  // A cp.async pipeline of 256-byte stages would not pay: the model takes the register-staged
  // prefetch instead, and says why.
  FileResult R = runOnCode(With(""), Model);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  ASSERT_TRUE(R.Loops[0].Plan);
  EXPECT_TRUE(R.Loops[0].Plan->Registers) << R.Loops[0].message();
  EXPECT_NE(std::string::npos, R.Loops[0].message().find("stages of 256 bytes (below 2048)"))
      << R.Loops[0].message();

  FileResult Annotated = runOnCode(With("  // tilepipe: plan=always\n"), Model);
  ASSERT_TRUE(Annotated.Ok) << Annotated.Error;
  EXPECT_TRUE(Annotated.Loops[0].transformed()) << Annotated.Loops[0].message();

  ToolOptions Always = defaultOptions();
  Always.Plan = PlanPolicy::Always;
  FileResult A = runOnCode(With(""), Always);
  ASSERT_TRUE(A.Ok) << A.Error;
  EXPECT_TRUE(A.Loops[0].transformed()) << A.Loops[0].message();
  ASSERT_TRUE(A.Loops[0].Plan);
  EXPECT_FALSE(A.Loops[0].Plan->Registers) << "every legal loop: the cp.async pipeline";
  FileResult Back = runOnCode(With("  // tilepipe: plan=model\n"), Always);
  ASSERT_TRUE(Back.Ok) << Back.Error;
  ASSERT_TRUE(Back.Loops[0].Plan);
  EXPECT_TRUE(Back.Loops[0].Plan->Registers) << Back.Loops[0].message();
}

// One text serves every instantiation of a template: the model plans a pipeline only where the
// smallest one's stages pay, not the largest's (a matrix multiply over its block size ran 0.65x
// at 8 x 8 with the pipeline its 32 x 32 instantiation chose).
TEST(Analysis, CostModelWeighsATemplatesSmallestInstantiation) {
  auto Code = [](const std::string &Instances) {
    return "template <int B> __global__ void k(const float *A, float *C, int nt) {\n"
           "  __shared__ float s[B][B];\n"
           "  float acc = 0;\n"
           "  for (int t = 0; t < nt; ++t) {\n"
           "    s[threadIdx.y][threadIdx.x] = A[((blockIdx.x * nt + t) * B + threadIdx.y) * B + threadIdx.x];\n"
           "    __syncthreads();\n"
           "    acc += s[threadIdx.x][threadIdx.y];\n"
           "    __syncthreads();\n"
           "  }\n"
           "  C[(blockIdx.x * B + threadIdx.y) * B + threadIdx.x] = acc;\n"
           "}\n"
           "void run(const float *A, float *C, int nt) {\n" +
           Instances + "}\n";
  };
  ToolOptions Model = defaultOptions();
  Model.Plan = PlanPolicy::Model;
  Model.Mode = CopyMode::Pipeline;
  // 32 x 32 alone: 4 KiB stages, a cp.async pipeline of 16-byte copies.
  FileResult Large = runOnCode(Code("  k<32><<<64, dim3(32, 32)>>>(A, C, nt);\n"), Model);
  ASSERT_TRUE(Large.Ok) << Large.Error;
  ASSERT_EQ(1u, Large.Loops.size());
  ASSERT_TRUE(Large.Loops[0].Plan) << Large.Loops[0].message();
  EXPECT_TRUE(Large.Loops[0].transformed()) << Large.Loops[0].message();
  EXPECT_FALSE(Large.Loops[0].Plan->Registers) << Large.Loops[0].message();
  // With 8 x 8 beside it (256-byte stages), the pipeline would not pay there: not for the text.
  FileResult Both =
      runOnCode(Code("  k<32><<<64, dim3(32, 32)>>>(A, C, nt);\n  k<8><<<64, dim3(8, 8)>>>(A, C, nt);\n"), Model);
  ASSERT_TRUE(Both.Ok) << Both.Error;
  ASSERT_EQ(1u, Both.Loops.size());
  ASSERT_TRUE(Both.Loops[0].Plan) << Both.Loops[0].message();
  EXPECT_FALSE(Both.Loops[0].transformed() && !Both.Loops[0].Plan->Registers) << Both.Loops[0].message();
  EXPECT_NE(std::string::npos,
            Both.Loops[0].message().find("stages of 256 bytes in the smallest instantiation (below 2048)"))
      << Both.Loops[0].message();
}

TEST(Analysis, CostModelRule) {
  PlanFeatures F;
  F.StageBytes = 8192;
  EXPECT_EQ("", predictNoGain(F, 2048)) << "16-byte copies of 8 KiB stages";
  F.StageBytes = 1024;
  EXPECT_NE("", predictNoGain(F, 2048)) << "16-byte copies of 1 KiB stages";
  F.EngineCopies = true;
  EXPECT_EQ("", predictNoGain(F, 2048)) << "tensor or bulk copies";
  F.EngineCopies = false;
  F.StageBytes = 8192;
  F.PerElementTile = "s";
  EXPECT_NE("", predictNoGain(F, 2048)) << "a per-element tile";
}

TEST(TemplateSection, TakesTheLinesUpToTheNextSection) {
  const char *T = "@a\nx\n@ab\ny\nz\n@b\nw\n";
  EXPECT_EQ("x\n", templateSection(T, "t.cu.in", "a"));
  EXPECT_EQ("y\nz\n", templateSection(T, "t.cu.in", "ab"));
  EXPECT_EQ("w\n", templateSection(T, "t.cu.in", "b"));
}

// A template and the code that renders it disagree: a fatal error in every build type, naming both.
TEST(TemplateSectionDeathTest, MissingSectionIsFatalAndNamed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(templateSection("@a\nx\n@b\ny\n", "templates/x.cu.in", "c"),
               "the template templates/x.cu.in has no section '@c'");
  EXPECT_DEATH(templateSection("@a\nx\nfoo@c\n", "templates/x.cu.in", "c"), "has no section '@c'");
}

// Every renderer of templates/*.in fills holes here. A hole without a value is an error in every
// build type, naming the template and the hole, never text left in the output; a value no hole
// asks for is fine, and a value is not read for holes of its own.
TEST(TemplateHoles, AHoleWithoutAValueIsAnError) {
  auto Filled = fillHoles("a ${x} b ${y}\n  ${x}\n", "templates/t.cu.in",
                          {{"x", "1\n2"}, {"y", "${x}"}, {"unused", "z"}}, "    ");
  ASSERT_TRUE(bool(Filled)) << llvm::toString(Filled.takeError());
  EXPECT_EQ("a 1\n    2 b ${x}\n  1\n    2\n", *Filled);
  for (const char *Template : {"a ${x}\n  ${block}\n", "  ${block}", "a ${block"}) {
    auto Missing = fillHoles(Template, "templates/t.cu.in", {{"x", "1"}});
    ASSERT_FALSE(bool(Missing)) << *Missing;
    std::string Why = llvm::toString(Missing.takeError());
    EXPECT_NE(Why.find("the template templates/t.cu.in has a hole ${block"), std::string::npos) << Why;
  }
}

// nvcc's warning about the stage barriers (shared variables with constructors) is turned off for
// their declarations alone, not for the user's file.
TEST(TensorCopy, DiagnosticSuppressedAroundTheBarriersOnly) {
  FileResult R = runOnFile(sourceDir() + "/testdata/matmul_classic.cu");
  ASSERT_TRUE(R.Ok) << R.Error;
  const std::string &T = R.Rewritten;
  size_t Barriers = T.find("__shared__ ::cuda::barrier<::cuda::thread_scope_block>");
  ASSERT_NE(Barriers, std::string::npos);
  size_t Push = T.rfind("\n#pragma nv_diagnostic push\n", Barriers);
  size_t Suppress = T.rfind("\n#pragma nv_diag_suppress static_var_with_dynamic_init\n", Barriers);
  size_t Pop = T.find("\n#pragma nv_diagnostic pop\n", Barriers);
  ASSERT_NE(Push, std::string::npos);
  ASSERT_NE(Suppress, std::string::npos);
  ASSERT_NE(Pop, std::string::npos);
  EXPECT_LT(T.find("__global__"), Push);
  EXPECT_LT(Push, Suppress);
  // Nothing between the suppression and its pop but the barriers' declaration.
  EXPECT_EQ(Pop, T.find('\n', Barriers)) << T.substr(Push, Pop - Push + 30);
  // One push and one pop for each suppression; none at file scope.
  auto Count = [&](const std::string &S) {
    unsigned N = 0;
    for (size_t P = T.find(S); P != std::string::npos; P = T.find(S, P + 1))
      ++N;
    return N;
  };
  EXPECT_EQ(Count("#pragma nv_diag_suppress"), Count("#pragma nv_diagnostic push"));
  EXPECT_EQ(Count("#pragma nv_diag_suppress"), Count("#pragma nv_diagnostic pop"));
  EXPECT_EQ(Count("#pragma nv_diag_suppress"), Count("__shared__ ::cuda::barrier"));
}

// Pointer inductions stepped in the compute phase (docs/legality.md C3): a kernel's parameter
// moved before the loop by steps the same in every thread is the same in every thread at the
// loop, so its tile may be copied in 16-byte chunks spread over the block; a step that reads the
// thread's index, one under a condition, or a goto in the kernel leaves only per-element copies.
namespace {
std::string bumpedKernel(const std::string &BeforeLoop) {
  return R"(
#define TB 16
__global__ void k(float *C, const float *A, const float *B, int N, int K) {
  __shared__ float As[TB][TB];
  const int tx = threadIdx.x, ty = threadIdx.y;
  float acc = 0.0f;
  )" + BeforeLoop + R"(
  for (int t = 0; t < K / TB; ++t) {
    As[ty][tx] = A[ty * K + tx];
    __syncthreads();
    A += TB;
    for (int k = 0; k < TB; ++k)
      acc += As[ty][k] * B[k];
    __syncthreads();
  }
  C[ty * N + tx] = acc;
}
)";
}
} // namespace

TEST(PointerInduction, AParameterSteppedInTheComputePhase) {
  WideOutcome W = wideOutcome(bumpedKernel("A += blockIdx.y * TB * K;"));
  EXPECT_TRUE(W.Wide) << W.Message;
  W = wideOutcome(bumpedKernel(""));
  EXPECT_TRUE(W.Wide) << W.Message;
}

TEST(PointerInduction, AStartThatDiffersAcrossThreadsIsCopiedPerElement) {
  for (const char *Before : {"A += threadIdx.x % 2;", "if (blockIdx.x == 0) A += TB;",
                             "A = A + tx * 0;", "A += 1; again: if (blockIdx.x > 99) goto again;"}) {
    FileResult R = runOnCode(bumpedKernel(Before));
    ASSERT_TRUE(R.Ok) << R.Error;
    ASSERT_EQ(1u, R.Loops.size()) << Before;
    ASSERT_TRUE(R.Loops[0].transformed()) << Before << ": " << R.Loops[0].message();
    EXPECT_EQ("per-element", reportedCopyKinds(R, 0, /*CpAsync=*/true)["As"]) << Before;
  }
}

TEST(PointerInduction, ThePointerAdvancesInTheFetchCursorToo) {
  FileResult R = runOnCode(bumpedKernel("A += blockIdx.y * TB * K;"));
  ASSERT_TRUE(R.Ok) << R.Error;
  std::string S = squeezed(R.Rewritten);
  // The copy phase reads the cursor's A, which the cursor's increment steps; the compute phase
  // keeps its own step of the kernel's A.
  EXPECT_NE(S.find("auto A = A_fetch;"), std::string::npos) << R.Rewritten;
  EXPECT_NE(S.find("++t; A += TB; t_fetch = t; A_fetch = A;"), std::string::npos) << R.Rewritten;
  EXPECT_NE(S.find("auto &As = As_stages[stage]; A += TB; for (int k = 0;"), std::string::npos)
      << R.Rewritten;
}

TEST(PointerInduction, AStepUnderAConditionOrInTheCopyPhaseIsNoInduction) {
  std::string Cond = bumpedKernel("");
  Cond.replace(Cond.find("    A += TB;\n"), 12, "    if (tx < TB) A += TB;\n");
  FileResult R = runOnCode(Cond);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_EQ(Reason::AddressNotInvariant, R.Loops[0].Code) << R.Loops[0].message();
  // A pointer another statement assigns: not an induction, and not provably global memory.
  std::string Set = bumpedKernel("");
  Set.replace(Set.find("    A += TB;\n"), 12, "    A += TB;\n    if (K < 0) A = C;\n");
  R = runOnCode(Set);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_FALSE(R.Loops[0].transformed()) << R.Loops[0].message();
}

TEST(PointerInduction, StepsAfterTheTrailingBarrierOfAForLoop) {
  std::string Code = bumpedKernel("A += blockIdx.y * TB * K;");
  Code.replace(Code.find("    A += TB;\n"), 12, "");
  const std::string End = "    __syncthreads();\n  }\n  C[";
  Code.replace(Code.find(End), End.size(), "    __syncthreads();\n    A += TB;\n  }\n  C[");
  FileResult R = runOnCode(Code);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  ASSERT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message() << "\n" << Code;
  EXPECT_EQ("16-byte", reportedCopyKinds(R, 0, /*CpAsync=*/true)["As"]);
  // The step runs after the compute phase in the mainloop, and in the cursor after the increment.
  std::string S = squeezed(R.Rewritten);
  EXPECT_NE(S.find("++t; A += TB; t_fetch = t; A_fetch = A;"), std::string::npos) << R.Rewritten;
  // Anything but increments after the trailing barrier is a third phase.
  std::string Third = bumpedKernel("");
  Third.replace(Third.find("    A += TB;\n"), 12, "");
  Third.replace(Third.find(End), End.size(),
                "    __syncthreads();\n    A += TB;\n    acc *= 0.5f;\n  }\n  C[");
  R = runOnCode(Third);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_EQ(Reason::LoopShape, R.Loops[0].Code) << R.Loops[0].message();
}

TEST(PointerInduction, AVariableTheBodyDeclaresIsNoInduction) {
  // `o` starts again in every iteration: the copy reads its fresh value, and the compute phase's
  // step of it is the compute phase's own.
  std::string Code = bumpedKernel("");
  Code.replace(Code.find("    As[ty][tx] = A[ty * K + tx];\n"), 33,
               "    int o = t * TB;\n    As[ty][tx] = A[ty * K + tx + o];\n");
  Code.replace(Code.find("    A += TB;\n"), 12, "    o += 1;\n    acc += o;\n");
  FileResult R = runOnCode(Code);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message() << "\n" << Code;
}

// A step through a reference, a lambda or a __device__ function that takes the pointer by
// reference is no increment of the compute phase: the loop is refused. A step spelled by a macro
// is one, and the fetch cursor replays the macro.
TEST(PointerInduction, StepsThroughAReferenceALambdaOrAFunctionAreRefused) {
  auto With = [](const std::string &Step) {
    std::string Code = "#define BUMP(p) p += TB\n__device__ void step(const float *&p) { p += 16; }\n" +
                       bumpedKernel("");
    Code.replace(Code.find("    A += TB;\n"), 12, "    " + Step + "\n");
    return runOnCode(Code);
  };
  for (const char *Step : {"{ const float *&r = A; r += TB; }", "[&] { A += TB; }();", "step(A);"}) {
    FileResult R = With(Step);
    ASSERT_TRUE(R.Ok) << R.Error;
    ASSERT_EQ(1u, R.Loops.size()) << Step;
    EXPECT_FALSE(R.Loops[0].transformed()) << Step << ": " << R.Loops[0].message();
  }
  FileResult R = With("BUMP(A);");
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  ASSERT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  EXPECT_NE(squeezed(R.Rewritten).find("++t; BUMP(A); t_fetch = t; A_fetch = A;"), std::string::npos)
      << R.Rewritten;
}

namespace {

/// The reason IDs a loop's record lists, the first first.
std::vector<std::string> blockerIds(const FileResult &R) {
  std::vector<std::string> Ids;
  if (R.Loops.size() != 1 || R.Loops[0].transformed())
    return Ids;
  Ids.push_back(reasonInfo(R.Loops[0].Code).Id.str());
  for (const auto &B : R.Loops[0].OtherBlockers)
    Ids.push_back(reasonInfo(B.first).Id.str());
  return Ids;
}

// Each blocker a loop lists refuses it alone: take away the statements behind all but one, and the
// loop is refused for that one only; take them all away and it is rewritten.
TEST(Blockers, EachRefusesTheLoopAlone) {
  struct Cause {
    const char *Id, *Bad, *Good;
  };
  const Cause Causes[] = {
      {"address-not-invariant", "    int j = (int)A[t];\n    s[threadIdx.x] = A[(t + j) * T + threadIdx.x];\n",
       "    s[threadIdx.x] = A[t * T + threadIdx.x];\n"},
      {"load-phase", "    C[t] = 1.0f;\n", ""},
      {"compute-writes-tile", "    s[0] = acc;\n", ""},
      {"loop-condition", "C[blockIdx.x] > t", "t < nt"},
  };
  auto Kernel = [&](unsigned Mask) {
    auto Pick = [&](unsigned I) { return (Mask >> I & 1) ? Causes[I].Bad : Causes[I].Good; };
    return kernel(std::string("  __shared__ float s[T];\n  float acc = 0;\n  for (int t = 0; ") +
                  Pick(3) + "; ++t) {\n" + Pick(0) + Pick(1) +
                  "    __syncthreads();\n    acc += s[(threadIdx.x + 1) % T];\n" + Pick(2) +
                  "    __syncthreads();\n  }\n  C[threadIdx.x] = acc;");
  };
  for (unsigned Mask = 0; Mask < 16; ++Mask) {
    FileResult R = runOnCode(Kernel(Mask));
    ASSERT_TRUE(R.Ok) << R.Error;
    ASSERT_EQ(1u, R.Loops.size());
    std::set<std::string> Want, Got;
    for (unsigned I = 0; I < 4; ++I)
      if (Mask >> I & 1)
        Want.insert(Causes[I].Id);
    for (const std::string &Id : blockerIds(R))
      Got.insert(Id);
    EXPECT_EQ(Want, Got) << "mask " << Mask << ": " << R.Loops[0].message();
    EXPECT_EQ(Mask == 0, R.Loops[0].transformed()) << R.Loops[0].message();
    // No blocker is listed twice.
    EXPECT_EQ(Got.size(), blockerIds(R).size()) << "mask " << Mask;
  }
}

TEST(Blockers, AVerdictKeepsItsFirstAndListsEachOtherOnce) {
  Verdict V;
  V.block({});
  EXPECT_TRUE(V.ok());
  V.block(Verdict::refuse(Reason::LoadPhase, "a"));
  Verdict W = Verdict::refuse(Reason::TileIndex, "b");
  W.Others.push_back({Reason::LoadPhase, "a"});
  W.Others.push_back({Reason::LoadPhase, "c"});
  V.block(W);
  V.block(Verdict::refuse(Reason::TileIndex, "b"));
  EXPECT_EQ(Reason::LoadPhase, V.Code);
  EXPECT_EQ("a", V.Detail);
  ASSERT_EQ(2u, V.Others.size());
  EXPECT_EQ(std::make_pair(Reason::TileIndex, std::string("b")), V.Others[0]);
  EXPECT_EQ(std::make_pair(Reason::LoadPhase, std::string("c")), V.Others[1]);
}

} // namespace

namespace {

/// A 1-D loop whose copy phase is Copy (a tile `s` of T floats, `A` the source).
std::string localKernel(const std::string &Copy, const std::string &Compute = "    acc += s[(threadIdx.x + 1) % T];\n") {
  return kernel("  __shared__ float s[T];\n  float acc = 0;\n  for (int t = 0; t < nt; ++t) {\n" + Copy +
                "    __syncthreads();\n" + Compute + "    __syncthreads();\n  }\n  C[threadIdx.x] = acc;");
}

// A store of a local read once from global memory is a copy of that read: the pipeline copies
// `(read).member` where the store stands and drops the local; the register-staged prefetch keeps
// the local where it loads and stores the registers.
TEST(CopyLocals, AFloat4ReadStoredByParts) {
  const std::string Code = kernel(R"(
  __shared__ float s[4 * T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    float4 v = reinterpret_cast<const float4 *>(&A[(t * T + threadIdx.x) * 4])[0];
    s[0 * T + threadIdx.x] = v.x;
    s[1 * T + threadIdx.x] = v.y;
    s[2 * T + threadIdx.x] = v.z;
    s[3 * T + threadIdx.x] = v.w;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % (4 * T)];
    __syncthreads();
  }
  C[threadIdx.x] = acc;)");
  ToolOptions O = defaultOptions();
  O.Mode = CopyMode::Pipeline;
  FileResult R = runOnCode(Code, O);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  ASSERT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  const std::string S = squeezed(R.Rewritten);
  EXPECT_NE(S.find("::cuda::memcpy_async(&s[3 * T + threadIdx.x], "
                   "&(reinterpret_cast<const float4 *>(&A[(t * T + threadIdx.x) * 4])[0]).w,"),
            std::string::npos)
      << R.Rewritten;
  // The copy phase holds no read into the local: the copies read the source themselves.
  size_t FirstCopy = R.Rewritten.find("memcpy_async(&s["), LastCopy = R.Rewritten.rfind("memcpy_async(&s[");
  EXPECT_EQ(R.Rewritten.substr(FirstCopy, LastCopy - FirstCopy).find("float4 v ="), std::string::npos)
      << R.Rewritten;

  ToolOptions Reg = defaultOptions();
  Reg.Choice = PlanChoice{false, 1, PlanChoice::Registers};
  FileResult Q = runOnCode(Code, Reg);
  ASSERT_TRUE(Q.Ok) << Q.Error;
  ASSERT_TRUE(Q.Loops[0].transformed()) << Q.Loops[0].message();
  // Loaded once, where the next tile is loaded; the stores store the registers.
  size_t First = Q.Rewritten.find("float4 v =");
  ASSERT_NE(First, std::string::npos) << Q.Rewritten;
  EXPECT_EQ(Q.Rewritten.find("float4 v =", First + 1), std::string::npos) << Q.Rewritten;
  EXPECT_NE(squeezed(Q.Rewritten).find("= v.w;"), std::string::npos) << Q.Rewritten;
}

TEST(CopyLocals, ALocalUsedOtherwiseIsRefused) {
  const char *Pre = "    float v = A[t * T + threadIdx.x];\n";
  struct Case {
    const char *What, *Copy, *Compute, *Id;
  } Cases[] = {
      {"read by the compute phase", "    s[threadIdx.x] = v;\n", "    acc += s[(threadIdx.x + 1) % T] * v;\n",
       "address-not-invariant"},
      {"changed before the store", "    v += 1.0f;\n    s[threadIdx.x] = v;\n", nullptr, "address-not-invariant"},
      {"its address taken", "    { float *p = &v; s[threadIdx.x] = *p; }\n", nullptr, "address-not-invariant"},
      {"in a guard", "    if (v > 0) s[threadIdx.x] = 1.0f;\n    else s[threadIdx.x] = 0.0f;\n", nullptr,
       "address-not-invariant"},
      {"converted by the store", "    s[threadIdx.x] = (int)v;\n", nullptr, "address-not-invariant"},
  };
  for (const Case &K : Cases) {
    std::string Code = localKernel(std::string(Pre) + K.Copy, K.Compute ? K.Compute : "    acc += s[(threadIdx.x + 1) % T];\n");
    auto O = outcome(Code);
    std::set<std::string> Ids;
    FileResult R = runOnCode(Code);
    for (const std::string &Id : blockerIds(R))
      Ids.insert(Id);
    EXPECT_TRUE(Ids.count(K.Id)) << K.What << ": " << O.first << ": " << O.second;
    EXPECT_NE("pipelined", O.first) << K.What;
  }
  // Read once, stored once: a copy.
  EXPECT_OUTCOME("pipelined", localKernel(std::string(Pre) + "    s[threadIdx.x] = v;\n"));
}

// The read moves to the store: a declaration of one of its names in between would take it.
TEST(CopyLocals, ANameOfTheReadDeclaredBeforeTheStoreRefuses) {
  EXPECT_OUTCOME("name-binding", localKernel("    int k = t;\n    float v = A[k * T + threadIdx.x];\n"
                                              "    { int k = 0; s[threadIdx.x + k] = v; }\n"));
  EXPECT_OUTCOME("pipelined", localKernel("    int k = t;\n    float v = A[k * T + threadIdx.x];\n"
                                           "    { int j = 0; s[threadIdx.x + j] = v; }\n"));
}

// An inner copy loop may declare its index; the index's start is its affine form, so the inner
// variable still selects the element. One that is no affine form does not.
TEST(CopyLocals, AnIndexDeclaredInAnInnerCopyLoop) {
  const std::string Affine = kernel(R"(
  __shared__ float s[2 * T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int i = 0; i < 2; ++i) {
      const int xo = i * T + threadIdx.x;
      s[xo] = A[t * 2 * T + xo];
    }
    __syncthreads();
    acc += s[(threadIdx.x + 1) % (2 * T)];
    __syncthreads();
  }
  C[threadIdx.x] = acc;)");
  EXPECT_OUTCOME("pipelined", Affine);
  std::string Opaque = Affine;
  Opaque.replace(Opaque.find("i * T + threadIdx.x"), 19, "(i * T + threadIdx.x) % (2 * T)");
  EXPECT_OUTCOME("tile-overlap", Opaque);
}

// A local set again at the top level of the copy phase (`v = B[..];`, as the tutorials reuse one
// float4 for both tiles) gives the stores after it the new read; set again anywhere else, it is
// no local a copy may read through.
TEST(CopyLocals, ALocalSetAgainForTheSecondTile) {
  const std::string Code = kernel(R"(
  __shared__ float s[T];
  __shared__ float r[T];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    float v = A[t * T + threadIdx.x];
    s[threadIdx.x] = v;
    v = B[t * T + threadIdx.x];
    r[threadIdx.x] = v;
    __syncthreads();
    acc += s[(threadIdx.x + 1) % T] * r[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;)",
                                  "const float *A, const float *B, float *C, int nt");
  ToolOptions O = defaultOptions();
  O.Mode = CopyMode::Pipeline;
  FileResult R = runOnCode(Code, O);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  const std::string S = squeezed(R.Rewritten);
  EXPECT_NE(S.find("::cuda::memcpy_async(&s[threadIdx.x], &(A[t * T + threadIdx.x]),"), std::string::npos)
      << R.Rewritten;
  EXPECT_NE(S.find("::cuda::memcpy_async(&r[threadIdx.x], &(B[t * T + threadIdx.x]),"), std::string::npos)
      << R.Rewritten;
  // Neither the declaration nor the second read stands in the copy phase, nor a stray ';'.
  size_t First = R.Rewritten.find("memcpy_async(&s["), Last = R.Rewritten.find("memcpy_async(&r[");
  const std::string Between = R.Rewritten.substr(First, Last - First);
  EXPECT_EQ(Between.find("v ="), std::string::npos) << R.Rewritten;
  EXPECT_EQ(squeezed(Between).find("; ;"), std::string::npos) << R.Rewritten;

  std::string Maybe = Code;
  Maybe.replace(Maybe.find("    v = B["), 4, "    if (nt > 1) v = B[");
  EXPECT_NE("pipelined", outcome(Maybe).first);
}

// `&P[i]` through a pointer is arithmetic; `&a[i]` of a local array is not a global address.
TEST(CopyLocals, AnAddressThroughAPointerIsArithmetic) {
  EXPECT_OUTCOME("pipelined", localKernel("    s[threadIdx.x] = *(&A[t * T] + threadIdx.x);\n"));
  EXPECT_NE("pipelined", outcome(localKernel("    float a[2] = {1, 2};\n    s[threadIdx.x] = *(&a[t % 2]);\n")).first);
}

} // namespace

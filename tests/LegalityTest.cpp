// The legality analysis against adversarial but legal programs, where a test must look inside the
// result: whole-tile copies only where every thread of the block reaches the loop, and barriers
// known by their declaration. The tables of constructs and their reason IDs (stores, variables,
// builtin names, launches, synchronization, architectures) are lit tests: tests/lit/legality-*.cu.
// docs/legality.md lists the proof obligations these cases exercise.
#include "TestSupport.h"
#include <gtest/gtest.h>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

// 5. Whole-tile copies stand in for every thread's copy: they need every thread at the loop.
struct Reach {
  const char *Name;
  const char *Before; ///< statements before the loop
  bool Whole;         ///< whole-tile copies expected
};

class ReachTest : public ::testing::TestWithParam<Reach> {};

TEST_P(ReachTest, WholeTileCopiesOnlyWhenEveryThreadArrives) {
  const Reach &C = GetParam();
  std::string Code = std::string("__global__ void k(const float *A, float *C, int nt, int nb) {\n") +
                     C.Before +
                     "  __shared__ float s[16][16];\n"
                     "  float acc = 0;\n"
                     "  for (int t = 0; t < nt; ++t) {\n"
                     "    s[threadIdx.y][threadIdx.x] = A[((blockIdx.x * nt + t) * 16 + "
                     "threadIdx.y) * 16 + threadIdx.x];\n"
                     "    __syncthreads();\n"
                     "    acc += s[threadIdx.y][(threadIdx.x + 1) % 16];\n"
                     "    __syncthreads();\n"
                     "  }\n"
                     "  C[(blockIdx.x * 16 + threadIdx.y) * 16 + threadIdx.x] = acc;\n"
                     "}\n"
                     "void launch(const float *A, float *C, int nt, int nb) {\n"
                     "  k<<<nb, dim3(16, 16)>>>(A, C, nt, nb);\n"
                     "}\n";
  FileResult R = runOnCode(Code);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  ASSERT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  const std::string M = R.Loops[0].message();
  bool Wide = reportedCopyKinds(R, 0, /*CpAsync=*/true)["s"] == "16-byte";
  EXPECT_EQ(C.Whole, Wide) << M;
  if (!C.Whole) {
    EXPECT_NE(M.find("not every thread of the block provably reaches the loop"), std::string::npos)
        << M;
    EXPECT_EQ(R.Rewritten.find("cp.async.bulk"), std::string::npos);
    EXPECT_EQ(R.Rewritten.find("tilepipe_launch_k"), std::string::npos) << "no tensor copies";
  }
}

const Reach Reaches[] = {
    {"NothingBefore", "", true},
    {"ThreadsReturnBefore", "  if (threadIdx.y < 8) return;\n", false},
    {"ThreadsReturnThroughLocal", "  int row = threadIdx.y;\n  if (row < 8) { return; }\n", false},
    {"ThreadsReturnInsideLoopBefore",
     "  for (int i = 0; i < 4; ++i)\n    if (threadIdx.x == i) return;\n", false},
    {"BlockReturnsTogether", "  if (blockIdx.x >= nb) return;\n", true},
    {"InlineAssemblyBefore", "  asm volatile(\"\");\n", false},
};
INSTANTIATE_TEST_SUITE_P(Reach, ReachTest, ::testing::ValuesIn(Reaches),
                         [](const auto &I) { return std::string(I.param.Name); });

TEST(Reach, LoopUnderThreadDependentIfOrInDeviceFunction) {
  const char *Body = "  __shared__ float s[16][16];\n"
                     "  float acc = 0;\n"
                     "  for (int t = 0; t < nt; ++t) {\n"
                     "    s[threadIdx.y][threadIdx.x] = A[(t * 16 + threadIdx.y) * 16 + threadIdx.x];\n"
                     "    __syncthreads();\n"
                     "    acc += s[threadIdx.y][(threadIdx.x + 1) % 16];\n"
                     "    __syncthreads();\n"
                     "  }\n"
                     "  C[threadIdx.y * 16 + threadIdx.x] = acc;\n";
  // A device function called from a kernel by every thread: whole tiles.
  FileResult All = runOnCode(std::string("__device__ void body(const float *A, float *C, int nt) {\n") +
                             Body + "}\n__global__ void k(const float *A, float *C, int nt) {\n"
                                    "  body(A, C, nt);\n}\n");
  ASSERT_EQ(1u, All.Loops.size());
  EXPECT_EQ("16-byte", reportedCopyKinds(All, 0, /*CpAsync=*/true)["s"]) << All.Loops[0].message();
  // Called only by some threads: per element.
  FileResult Some = runOnCode(std::string("__device__ void body(const float *A, float *C, int nt) {\n") +
                              Body + "}\n__global__ void k(const float *A, float *C, int nt) {\n"
                                     "  if (threadIdx.y >= 4) body(A, C, nt);\n}\n");
  ASSERT_EQ(1u, Some.Loops.size());
  ASSERT_TRUE(Some.Loops[0].transformed()) << Some.Loops[0].message();
  EXPECT_NE(Some.Loops[0].message().find("not every thread of the block provably reaches"),
            std::string::npos)
      << Some.Loops[0].message();
  // A device function that executes `exit` before the call.
  FileResult Exit = runOnCode(std::string("__device__ void leave() { asm volatile(\"exit;\"); }\n"
                                          "__global__ void k(const float *A, float *C, int nt) {\n"
                                          "  if (threadIdx.x == 3) leave();\n") +
                              Body + "}\n");
  ASSERT_EQ(1u, Exit.Loops.size());
  EXPECT_NE(Exit.Loops[0].message().find("not every thread of the block provably reaches"),
            std::string::npos)
      << Exit.Loops[0].message();
}

} // namespace

// A barrier is known by its declaration, not its spelling: cooperative groups' thread_block::sync
// and cg::sync(block) are block barriers; a user's own type or function of the same names is not
// (its sync() may do nothing, so threads may reach the loop's barriers unevenly, and the rewrite's
// __syncthreads() would then be one the original never had).
TEST(Barriers, KnownByDeclarationNotByName) {
  const std::string Loop = "  __shared__ float s[64];\n"
                           "  float acc = 0;\n"
                           "  for (int t = 0; t < nt; ++t) {\n"
                           "    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];\n"
                           "    SYNC;\n"
                           "    acc += s[threadIdx.x];\n"
                           "    SYNC;\n"
                           "  }\n"
                           "  C[blockIdx.x * 64 + threadIdx.x] = acc;\n}\n";
  auto run = [&](const std::string &Prelude, const std::string &Sync) {
    std::string Code = Prelude +
                       "__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {\n"
                       "  auto block = BLOCK;\n" + Loop;
    for (size_t P; (P = Code.find("SYNC")) != std::string::npos;)
      Code.replace(P, 4, Sync);
    return runOnCode(Code, defaultOptions());
  };
  const std::string Cg = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n";
  const std::string Fake = "namespace mylib {\n"
                           "struct thread_block { __device__ void sync() const {} };\n"
                           "__device__ void sync(const thread_block &) {}\n"
                           "}\n";
  for (const char *Sync : {"block.sync()", "cg::sync(block)"}) {
    std::string Prelude = Cg + "#define BLOCK cg::this_thread_block()\n";
    FileResult R = run(Prelude, Sync);
    ASSERT_TRUE(R.Ok) << R.Error;
    ASSERT_EQ(1u, R.Loops.size()) << Sync;
    EXPECT_EQ("pipelined", reasonInfo(R.Loops[0].Code).Id.str()) << Sync << ": " << R.Loops[0].message();
  }
  for (const char *Sync : {"block.sync()", "sync(block)"}) {
    std::string Prelude = Fake + "#define BLOCK mylib::thread_block()\n";
    FileResult R = run(Prelude, Sync);
    ASSERT_TRUE(R.Ok) << R.Error;
    EXPECT_EQ(0u, R.Loops.size()) << Sync << " is not a block barrier";
    EXPECT_EQ(R.Original, R.Rewritten);
  }
}

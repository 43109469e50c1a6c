// tilepipe audit (Audit.h): each program of testdata/audit/ gives exactly the findings its
// `// EXPECT-AUDIT: id` comments name, on the lines after them; the tool's own output (generated/)
// and the hand-written pipelines of testdata/ give none; the command line's exit status, report
// and refusals.
#include "TestSupport.h"
#include "tilepipe/Audit.h"
#include "tilepipe/Driver.h"
#include "llvm/Support/JSON.h"
#include <gtest/gtest.h>
#include <algorithm>
#include <set>
#include <sstream>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

ToolOptions auditOptions() {
  ToolOptions O = defaultOptions();
  O.Audit = true;
  return O;
}

} // namespace

TEST(Audit, EachProgramGivesExactlyTheFindingsItExpects) {
  std::vector<std::string> Files;
  for (const std::string &N : cudaFilesIn("testdata/audit"))
    Files.push_back(sourceDir() + "/testdata/audit/" + N);
  ASSERT_GE(Files.size(), 2u);
  size_t Total = 0;
  for (const std::string &F : Files) {
    FileResult R = runOnFile(F, auditOptions());
    ASSERT_TRUE(R.Ok) << F << ": " << R.Error;
    std::set<std::pair<unsigned, std::string>> Got;
    for (const AuditFinding &A : R.Findings) {
      EXPECT_EQ(F, A.At.File);
      Got.insert({A.At.Line, reasonInfo(A.Code).Id.str()});
      EXPECT_FALSE(A.Detail.empty());
    }
    EXPECT_EQ(auditExpectations(readFile(F)), Got) << F;
    EXPECT_EQ(Got.size(), R.Findings.size()) << F << ": a finding reported twice";
    EXPECT_EQ(R.Original, R.Rewritten) << "the audit rewrites nothing";
    Total += Got.size();
  }
  EXPECT_GE(Total, 5u);
}

// The fix-it is offered where it is certain: alignas(16) before a local __shared__ array's
// declaration, at `__shared__` (a macro of the toolkit's), not inside the macro.
TEST(Audit, OffersAlignasWhereTheArrayIsTheUsers) {
  FileResult R = runOnFile(sourceDir() + "/testdata/audit/slow_path.cu", auditOptions());
  ASSERT_TRUE(R.Ok) << R.Error;
  std::multiset<std::string> At;
  for (const AuditFinding &A : R.Findings)
    for (const auto &Fix : A.Fixes) {
      EXPECT_EQ("alignas(16) ", Fix.getReplacementText().str());
      EXPECT_EQ(0u, Fix.getLength());
      At.insert(R.Original.substr(Fix.getOffset(), 27));
    }
  // typed_float's array, per_element_mutable_shape's and numbered_alignment's; the other flagged
  // copies' arrays are aligned already.
  EXPECT_EQ((std::multiset<std::string>{"__shared__ float s[2][256];", "__shared__ float s[2][512];",
                                         "__shared__ Four sq[2][128];"}),
            At);
}

// The slow-path rule reads the alignment CCCL reads: the larger of the element type's and the
// shape's; one line each way.
TEST(Audit, SlowPathFollowsTheCallsTypes) {
  auto Findings = [](const std::string &Call) {
    std::string Code = "#include <cuda/pipeline>\n"
                       "__global__ void k(const float *A, const float4 *V, float *C) {\n"
                       "  alignas(16) __shared__ float s[256];\n"
                       "  alignas(16) __shared__ float4 v[64];\n"
                       "  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();\n"
                       "  pipe.producer_acquire();\n  " + Call + ";\n"
                       "  pipe.producer_commit();\n  pipe.consumer_wait();\n"
                       "  C[threadIdx.x] = s[threadIdx.x] + v[0].x;\n}\n";
    FileResult R = runOnCode(Code, auditOptions());
    EXPECT_TRUE(R.Ok) << R.Error;
    return R.Findings.size();
  };
  EXPECT_EQ(1u, Findings("cuda::memcpy_async(s, A, 1024, pipe)"));
  EXPECT_EQ(0u, Findings("cuda::memcpy_async(s, A, cuda::aligned_size_t<16>(1024), pipe)"));
  EXPECT_EQ(1u, Findings("cuda::memcpy_async(s, A, cuda::aligned_size_t<8>(1024), pipe)"));
  EXPECT_EQ(0u, Findings("cuda::memcpy_async(s, A, cuda::aligned_size_t<8>(8), pipe)"));
  EXPECT_EQ(0u, Findings("cuda::memcpy_async(s, A, 4, pipe)"));
  EXPECT_EQ(1u, Findings("cuda::memcpy_async((void *)s, (const void *)A, 4, pipe)"));
  EXPECT_EQ(0u, Findings("cuda::memcpy_async(v, V, 1024, pipe)"));
}

// The stage-overrun and read-before-wait rules read the schedule, not its spelling: N buffers, a
// copy D tiles ahead of the read, where the block barriers stand, and how many groups the wait
// before a read leaves in flight. Each body is one iteration of
// `for (int t = 0; t < n; ++t)` over `float s[4][256]`, COPY(X) the copy of tile X into buffer
// X % 4, READ(X) a read of buffer X % 4 by another thread than the one that copied the element.
TEST(Audit, StagesAreReadAsASchedule) {
  const std::string Thread = "auto pipe = cuda::make_pipeline();";
  struct Case {
    size_t Expected;
    std::string Body, Pipe;
    Reason Code = Reason::AsyncStageOverrun;
    std::string Before = ""; ///< statements before the loop: a prologue
  };
  const Reason Wait = Reason::AsyncReadBeforeWait, Over = Reason::AsyncStageOverrun;
  const std::vector<Case> Cases = {
      // Three ahead: safe only with a barrier between the read and the next refill.
      {1, "COPY(t + 3); __syncthreads(); READ(t);", Thread},
      {0, "__syncthreads(); COPY(t + 3); READ(t);", Thread},
      {0, "COPY(t + 3); __syncthreads(); READ(t); __syncthreads();", Thread},
      {0, "READ(t); __syncthreads(); COPY(t + 3);", Thread},
      // The previous iteration's trailing barrier separates its read from this iteration's copy.
      {0, "READ(t); COPY(t + 3); __syncthreads();", Thread},
      {1, "COPY(t + 3); READ(t);", Thread},
      // Two ahead: any barrier in the body separates the read two iterations back.
      {0, "COPY(t + 2); __syncthreads(); READ(t);", Thread},
      {1, "COPY(t + 2); READ(t);", Thread},
      // Four ahead into four buffers: the tile this iteration reads is overwritten, barriers or
      // not, unless the copy follows the read across a barrier.
      {1, "COPY(t + 4); __syncthreads(); READ(t); __syncthreads();", Thread},
      {0, "READ(t); __syncthreads(); COPY(t + 4);", Thread},
      {1, "COPY(t + 5); __syncthreads(); READ(t); __syncthreads();", Thread},
      // The distance is the difference, wherever the schedule starts; a stage held in a local.
      {1, "COPY(t + 4); __syncthreads(); READ(t + 1);", Thread},
      {1, "const int w = (t + 3) % 4; cuda::memcpy_async(&s[w][threadIdx.x], &A[t], sizeof(float), pipe); "
          "__syncthreads(); READ(t);",
       Thread},
      // A block barrier spelled through cooperative groups counts as one.
      {0, "cooperative_groups::this_thread_block().sync(); COPY(t + 3); READ(t);", Thread},
      {1, "COPY(t + 3); cooperative_groups::this_thread_block().sync(); READ(t);", Thread},
      // Not a schedule it can read: no finding rather than a guess.
      {0, "COPY(t + 3); __syncthreads(); READ(t); if (acc > 1.0f) ++t;", Thread},
      {0, "COPY(t + 3); __syncthreads(); READ(t); int *p = &t; (void)p;", Thread},
      {0, "COPY(2 * t + 3); __syncthreads(); READ(2 * t);", Thread},
      {0, "COPY(t + 3); __syncthreads(); READ(n);", Thread},
      // Stage counters of their own, read modulo the buffers: the distance is what separates them.
      {1, "COPY2(w); __syncthreads(); READ2(r); w = (w + 1) % 4; r = (r + 1) % 4;", Thread},
      {0, "COPY2(w); __syncthreads(); READ2(r); __syncthreads(); w = (w + 1) % 4; r = (r + 1) % 4;", Thread},
      {1, "COPY2(w); __syncthreads(); READ2(r); if (++w == 4) w = 0; r = r + 1 == 4 ? 0 : r + 1;", Thread},
      {0, "__syncthreads(); COPY2(w); READ2(r); w = (w + 1) & 3; r = (r + 1) & 3;", Thread},
      // ... counted where they are read: w steps before the copy here, so the copy fills the buffer
      // this iteration reads, before the read (the tile it reads): the old content was read 4
      // iterations back, and any barrier separates that. After the read, it would be 4 ahead.
      {0, "w = (w + 1) % 4; COPY2(w); __syncthreads(); READ2(r); r = (r + 1) % 4;", Thread},
      {1, "READ2(r); w = (w + 1) % 4; COPY2(w); __syncthreads(); r = (r + 1) % 4;", Thread},
      {0, "READ2(r); __syncthreads(); w = (w + 1) % 4; COPY2(w); r = (r + 1) % 4;", Thread},
      // ... which a thread that reads back only its own element may do: its order is program
      // order. Four ahead into the buffer it reads next is wrong in one thread too.
      {0, "READ3(r); w = (w + 1) % 4; COPY2(w); r = (r + 1) % 4;", Thread},
      {0, "READ4(t); COPY(t + 4);", Thread},
      {1, "COPY(t + 4); READ4(t);", Thread},
      // ... and not read where a counter is reset elsewhere, or steps by another modulus.
      {0, "COPY2(w); __syncthreads(); READ2(r); w = (w + 1) % 4; r = (r + 1) % 4; if (n > 8) w = 0;", Thread},
      {0, "COPY2(w); __syncthreads(); READ2(r); w = (w + 1) % 3; r = (r + 1) % 3;", Thread},
      // A barrier inside a branch does not separate anything for every thread.
      {1, "COPY(t + 3); __syncthreads(); READ(t); if (n > 4) __syncthreads();", Thread},
      // The pipeline's scope decides: a copy on a block-scope pipeline waits for the consumers'
      // release in producer_acquire (async-stage-count checks its depth).
      {0, "COPY(t + 3); __syncthreads(); READ(t);",
       "__shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 4> *st; "
       "auto pipe = cuda::make_pipeline(cooperative_groups::this_thread_block(), st);"},
      // The wait covers the tile read where at least K groups were committed after its group.
      {0, "COPY(t + 3); COMMIT; WAIT(3); __syncthreads(); READ(t); __syncthreads();", Thread, Wait},
      {1, "COPY(t + 3); COMMIT; WAIT(4); __syncthreads(); READ(t); __syncthreads();", Thread, Wait},
      {0, "WAIT(2); __syncthreads(); COPY(t + 3); COMMIT; READ(t);", Thread, Wait},
      {1, "WAIT(3); __syncthreads(); COPY(t + 3); COMMIT; READ(t);", Thread, Wait},
      {0, "COPY(t + 3); COMMIT; WAIT(0); __syncthreads(); READ(t + 3); __syncthreads();", Thread, Wait},
      {1, "COPY(t + 3); COMMIT; WAIT(1); __syncthreads(); READ(t + 3); __syncthreads();", Thread, Wait},
      // Through stage counters: the buffer read was filled 3 iterations before.
      {0, "COPY2(w); COMMIT; WAIT(3); __syncthreads(); READ2(r); __syncthreads(); w = (w + 1) % 4; r = (r + 1) % 4;",
       Thread, Wait},
      {1, "COPY2(w); COMMIT; WAIT(4); __syncthreads(); READ2(r); __syncthreads(); w = (w + 1) % 4; r = (r + 1) % 4;",
       Thread, Wait},
      // The wait at the end of the iteration before.
      {0, "__syncthreads(); READ(t); __syncthreads(); COPY(t + 4); COMMIT; WAIT(3);", Thread, Wait},
      {1, "__syncthreads(); READ(t); __syncthreads(); COPY(t + 4); COMMIT; WAIT(4);", Thread, Wait},
      // Not read: a commit under a condition, copies of two tiles in one group, a call that may
      // wait itself.
      {0, "COPY(t + 3); if (t < n) COMMIT; WAIT(4); __syncthreads(); READ(t); __syncthreads();", Thread, Wait},
      {0, "COPY(t + 3); COPY(t + 2); COMMIT; WAIT(4); __syncthreads(); READ(t); __syncthreads();", Thread, Wait},
      {0, "COPY(t + 3); COMMIT; WAIT(4); g(); __syncthreads(); READ(t); __syncthreads();", Thread, Wait},
      // The copy and its commit under the tile's bound: nothing is committed at the tail; a wait
      // for every group, or a bound on the thread, is no such case.
      {1, "if (t + 3 < n) { COPY(t + 3); COMMIT; } WAIT(3); __syncthreads(); READ(t); __syncthreads();", Thread, Wait},
      {0, "if (t + 3 < n) { COPY(t + 3); COMMIT; } WAIT(0); __syncthreads(); READ(t); __syncthreads();", Thread, Wait},
      {0, "if (threadIdx.x < 128) { COPY(t + 3); COMMIT; } WAIT(3); __syncthreads(); READ(t); __syncthreads();", Thread,
       Wait},
      {0, "if (t + 3 < n) { COPY(t + 3); } COMMIT; WAIT(3); __syncthreads(); READ(t); __syncthreads();", Thread, Wait},
      // A counter carried in from a prologue of 3 tiles (PRO(3): tf is 3 at the loop), and
      // consumer_wait, which waits for the oldest group not yet waited for: with 3 groups before
      // the loop it leaves 2 in flight where it comes before the iteration's commit, 3 after it.
      {0, "CW; __syncthreads(); COPYT; COMMIT; ++tf; READ(t);", Thread, Wait, "PRO(3)"},
      {0, "CW; __syncthreads(); COPYT; COMMIT; ++tf; READ(t);", Thread, Over, "PRO(3)"},
      {1, "CW; __syncthreads(); COPYT; COMMIT; ++tf; READ(t + 1);", Thread, Wait, "PRO(3)"},
      {1, "CW; __syncthreads(); COPYT; COMMIT; ++tf; READ(t);", Thread, Wait, "PRO(3) COMMIT;"},
      {0, "COPYT; COMMIT; ++tf; CW; __syncthreads(); READ(t); __syncthreads();", Thread, Wait, "PRO(3)"},
      {0, "COPYT; COMMIT; ++tf; CW; __syncthreads(); READ(t); __syncthreads();", Thread, Over, "PRO(3)"},
      {1, "COPYT; COMMIT; ++tf; CW; __syncthreads(); READ(t + 1); __syncthreads();", Thread, Wait, "PRO(3)"},
      {1, "COPYT; COMMIT; ++tf; CW; __syncthreads(); READ(t);", Thread, Over, "PRO(3)"},
      {1, "CW; __syncthreads(); COPYT; COMMIT; ++tf; READ(t); __syncthreads();", Thread, Over, "PRO(4)"},
      // ... counted where it is read: stepped before the copy, the copy is 4 ahead.
      {1, "CW; __syncthreads(); ++tf; COPYT; COMMIT; READ(t); __syncthreads();", Thread, Over, "PRO(3)"},
      // ... however the prologue is spelled: its step in its body, its bound as <= or mirrored.
      {1, "CW; __syncthreads(); COPYT; COMMIT; ++tf; READ(t + 1);", Thread, Wait,
       "int tf = 0; for (int k = 0; k < 3; ++k) { COPYT; COMMIT; tf += 1; }"},
      {1, "CW; __syncthreads(); COPYT; COMMIT; ++tf; READ(t + 1);", Thread, Wait,
       "int tf = 0; for (int k = 1; k <= 3; k++, tf++) { COPYT; COMMIT; }"},
      {1, "CW; __syncthreads(); COPYT; COMMIT; ++tf; READ(t + 1);", Thread, Wait,
       "int tf = 0; for (int k = 0; 3 > k; ++k, ++tf) { COPYT; COMMIT; }"},
      // Not read: a prologue of run-time length, a commit under a condition in it, a wait before
      // the loop, two waits an iteration, a step of 2, a jump before the step.
      {0, "CW; __syncthreads(); COPYT; COMMIT; ++tf; READ(t + 1);", Thread, Wait,
       "int tf = 0; for (int k = 0; k < n; ++k, ++tf) { COPYT; COMMIT; }"},
      {0, "CW; __syncthreads(); COPYT; COMMIT; ++tf; READ(t + 1);", Thread, Wait,
       "int tf = 0; for (int k = 0; k < 3; ++k, ++tf) { COPYT; if (k < n) COMMIT; }"},
      {0, "CW; __syncthreads(); COPYT; COMMIT; ++tf; READ(t + 1);", Thread, Wait, "PRO(3) CW;"},
      {0, "CW; CW; __syncthreads(); COPYT; COMMIT; ++tf; READ(t + 1);", Thread, Wait, "PRO(3)"},
      {0, "CW; __syncthreads(); COPYT; COMMIT; tf += 2; READ(t + 1);", Thread, Wait, "PRO(3)"},
      {0, "CW; __syncthreads(); if (n > 8) continue; COPYT; COMMIT; ++tf; READ(t + 1);", Thread, Wait, "PRO(3)"},
      // A read before the body's wait_prior relies, in the first iteration, on a wait before the
      // loop: none there (a prologue that only commits) is a read before wait; a wait, or a call
      // that may wait, is not.
      {1, "READ(t); __syncthreads(); COPY(t + 3); COMMIT; WAIT(2); __syncthreads();", Thread, Wait,
       "for (int k = 0; k < 3; ++k) { COPY(k); COMMIT; }"},
      {0, "READ(t); __syncthreads(); COPY(t + 3); COMMIT; WAIT(2); __syncthreads();", Thread, Wait,
       "for (int k = 0; k < 3; ++k) { COPY(k); COMMIT; } WAIT(2); __syncthreads();"},
      {0, "READ(t); __syncthreads(); COPY(t + 3); COMMIT; WAIT(2); __syncthreads();", Thread, Wait,
       "for (int k = 0; k < 3; ++k) { COPY(k); COMMIT; } g(); __syncthreads();"},
      {1, "READ(t); __syncthreads(); COPY(t + 3); COMMIT; __pipeline_wait_prior(2); __syncthreads();", Thread, Wait,
       "COPY(0); COMMIT; COPY(1); COMMIT; COPY(2); COMMIT; __syncthreads();"},
  };
  // One kernel per case, one line each, in one file: one parse.
  std::string Code = "#include <cuda/pipeline>\n#include <cuda_pipeline.h>\n#include <cooperative_groups.h>\n"
                     "#define COPY(X) cuda::memcpy_async(&s[(X) % 4][threadIdx.x], &A[(X) * 256 + threadIdx.x], "
                     "sizeof(float), pipe)\n"
                     "#define READ(X) acc += s[(X) % 4][255 - threadIdx.x]\n"
                     "#define COPY2(S) cuda::memcpy_async(&s[S][threadIdx.x], &A[threadIdx.x], sizeof(float), pipe)\n"
                     "#define READ2(S) acc += s[S][255 - threadIdx.x]\n"
                     "#define READ3(S) acc += s[S][threadIdx.x]\n"
                     "#define READ4(X) acc += s[(X) % 4][threadIdx.x]\n"
                     "#define COMMIT pipe.producer_commit()\n"
                     "#define WAIT(K) cuda::pipeline_consumer_wait_prior<K>(pipe)\n"
                     "#define CW pipe.consumer_wait()\n"
                     "#define COPYT cuda::memcpy_async(&s[tf % 4][threadIdx.x], &A[tf * 256 + threadIdx.x], "
                     "sizeof(float), pipe)\n"
                     "#define PRO(K) int tf = 0; for (int k = 0; k < K; ++k, ++tf) { COPYT; COMMIT; }\n"
                     "__device__ void g();\n";
  const unsigned First = 16;
  for (size_t I = 0; I < Cases.size(); ++I)
    Code += "__global__ void k" + std::to_string(I) + "(const float *A, float *C, int n) { "
            "alignas(16) __shared__ float s[4][256]; " + Cases[I].Pipe + " float acc = 0; int w = 3, r = 0; " +
            Cases[I].Before + " for (int t = 0; t < n; ++t) { " + Cases[I].Body + " } C[threadIdx.x] = acc; }\n";
  FileResult R = runOnCode(Code, auditOptions());
  ASSERT_TRUE(R.Ok) << R.Error;
  std::vector<size_t> Got(Cases.size());
  for (const AuditFinding &F : R.Findings) {
    ASSERT_GE(F.At.Line, First);
    ASSERT_LT(F.At.Line - First, Cases.size());
    if (F.Code == Cases[F.At.Line - First].Code)
      ++Got[F.At.Line - First];
  }
  for (size_t I = 0; I < Cases.size(); ++I)
    EXPECT_EQ(Cases[I].Expected, Got[I]) << Cases[I].Body;
}

// The checks of bulk and tensor copies read the ops, not their spelling: CCCL's cuda::device and
// cuda::ptx calls, the experimental CTK 12 names, and helpers of the user's that are one asm
// statement; and they say nothing where an op may be out of sight (a function of the user's that
// copies, fences or waits, a copy under a condition or in a loop of run-time length).
TEST(Audit, TmaOpsAreReadInEverySpelling) {
  const Reason Align = Reason::AsyncTmaAlignment, Tx = Reason::AsyncTxBytes, Fence = Reason::AsyncProxyFence,
               Reinit = Reason::AsyncBarrierReinit;
  struct Case {
    size_t Expected;
    Reason Code;
    std::string Body;
  };
  const std::string Leader = "if (threadIdx.x == 0) ";
  const std::vector<Case> Cases = {
      // Alignment: 16 bytes for a bulk copy's shared address, 128 for a tensor copy's.
      {1, Align, "ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, &s[0][1], A, 1024, &mb[0]);"},
      {0, Align, "ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, &s[n & 3][4], A, 1024, &mb[0]);"},
      {1, Align, "int32_t c[2] = {0, 0}; ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, &s[0][4], &m, c, &mb[0]);"},
      {0, Align, "int32_t c[2] = {0, 0}; ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, s[n & 3], &m, c, &mb[0]);"},
      {1, Align, "asm_load(&s[0][2], A, 1024, &mb[0]);"},
      {1, Align, "cde::cp_async_bulk_tensor_2d_global_to_shared(&s[0][8], &m, 0, 0, bar);"},
      {0, Align, "float *p = &s[1][0]; ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, p, A, 1024, &mb[0]);"},
      {0, Align, "float *p = &s[1][0]; p += n; ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, p, A, 1024, &mb[0]);"},
      {1, Align, "ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, s[0], A, 1000, &mb[0]);"},
      {1, Align, "asm_load(s[0], A, 24, &mb[0]);"},
      {1, Align, "cde::cp_async_bulk_shared_to_global(C, &s[0][3], 1024);"},
      {0, Align, "ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, &s[0][(threadIdx.x % 32) * 64], A, 256, &mb[0]);"},
      {0, Align, "char *c = reinterpret_cast<char *>(s[1]); ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, "
                 "c + (threadIdx.x << 4), A, 16, &mb[0]);"},
      {1, Align, "char *c = reinterpret_cast<char *>(s[1]); ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, "
                 "c + (threadIdx.x << 3), A, 16, &mb[0]);"},
      // Dynamic shared memory starts on 16 bytes; 128 only where its declaration says so.
      {0, Align, "extern __shared__ char dyn[]; ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, dyn + 4096, A, 16, &mb[0]);"},
      {1, Align, "extern __shared__ char dyn[]; int32_t c[2] = {0, 0}; ptx::cp_async_bulk_tensor(ptx::space_cluster, "
                 "ptx::space_global, dyn, &m, c, &mb[0]);"},
      {0, Align, "extern __shared__ __align__(128) char dyn[]; int32_t c[2] = {0, 0}; ptx::cp_async_bulk_tensor(ptx::space_cluster, "
                 "ptx::space_global, dyn + 8192, &m, c, &mb[0]);"},
      // Expected bytes against the copies in the same statements.
      {1, Tx, Leader + "{ asm_expect(&mb[0], 2048); asm_load(s[0], A, 1024, &mb[0]); }"},
      {1, Tx, Leader + "{ unsigned b = (unsigned)__cvta_generic_to_shared(&mb[2]); asm volatile(\"mbarrier.arrive.expect_tx."
                       "shared::cta.b64\\t_, [%0], %1;\" :: \"r\"(b), \"r\"(256) : \"memory\"); asm_load(s[2], A, 1024, &mb[2]); }"},
      {0, Tx, Leader + "{ asm_expect(&mb[0], 2048); asm_load(s[0], A, 1024, &mb[0]); asm_load(s[1], A, 1024, &mb[0]); }"},
      {1, Tx, Leader + "{ cuda::device::barrier_expect_tx(bar, 4096); for (int r = 0; r < 3; ++r) "
                       "cuda::device::memcpy_async_tx(s[r], A + r * 256, cuda::aligned_size_t<16>(1024), bar); }"},
      {0, Tx, Leader + "{ cuda::device::barrier_expect_tx(bar, 4096); for (int r = 0; r < 3; ++r) "
                       "cuda::device::memcpy_async_tx(s[r], A + r * 256, cuda::aligned_size_t<16>(1024), bar); "
                       "if (n > 3) cuda::device::memcpy_async_tx(s[3], A, cuda::aligned_size_t<16>(1024), bar); }"},
      {0, Tx, Leader + "{ cuda::device::barrier_expect_tx(bar, 4096); load_helper(s[0], A, bar); }"},
      {0, Tx, Leader + "{ cuda::device::barrier_expect_tx(bar, 2048); for (int r = 0; r < n; ++r) "
                       "cuda::device::memcpy_async_tx(s[r & 3], A, cuda::aligned_size_t<16>(1024), bar); }"},
      {1, Tx, Leader + "{ (void)cuda::device::barrier_arrive_tx(bar, 1, 1024); cde::cp_async_bulk_global_to_shared(s[0], A, 2048, bar); }"},
      {0, Tx, "for (int k = 0; k < 2; ++k) " + Leader + "{ asm_expect(&mb[k], 1024); asm_load(s[k], A, 1024, &mb[k]); }"},
      {0, Tx, Leader + "{ for (int k = 0; k < 2; ++k) asm_expect(&mb[k], 1024); asm_load(s[0], A, 1024, &mb[0]); asm_load(s[1], A, 1024, &mb[1]); }"},
      {1, Tx, Leader + "{ ptx::mbarrier_expect_tx(ptx::sem_relaxed, ptx::scope_cta, ptx::space_shared, &mb[1], 512); "
                       "ptx::cp_async_bulk(ptx::space_shared, ptx::space_global, s[1], A, 1024, &mb[1]); }"},
      // A proxy fence between the threads' stores and the bulk copy that reads them, on every path.
      {1, Fence, "s[0][threadIdx.x] = A[threadIdx.x]; __syncthreads(); " + Leader + "asm_store(C, s[0], 1024);"},
      {0, Fence, "s[0][threadIdx.x] = A[threadIdx.x]; asm_fence(); __syncthreads(); " + Leader + "asm_store(C, s[0], 1024);"},
      {0, Fence, "s[0][threadIdx.x] = A[threadIdx.x]; fence_helper(); __syncthreads(); " + Leader + "asm_store(C, s[0], 1024);"},
      {1, Fence, "s[0][threadIdx.x] = A[threadIdx.x]; if (n > 1) ptx::fence_proxy_async(ptx::space_shared); __syncthreads(); " +
                     Leader + "asm_store(C, s[0], 1024);"},
      {1, Fence, "s[0][threadIdx.x] = A[threadIdx.x]; ptx::fence_proxy_async(ptx::space_global); __syncthreads(); " + Leader +
                     "asm_store(C, s[0], 1024);"},
      {0, Fence, "s[0][threadIdx.x] = A[threadIdx.x]; cde::fence_proxy_async_shared_cta(); __syncthreads(); " + Leader +
                     "asm_store(C, s[0], 1024);"},
      {1, Fence, "for (int t = 0; t < n; ++t) { " + Leader + "{ cde::cp_async_bulk_tensor_2d_shared_to_global(&m, t, 0, &s[0][0]); "
                     "ptx::cp_async_bulk_commit_group(); ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>()); } __syncthreads(); "
                     "s[0][threadIdx.x] = t; __syncthreads(); }"},
      {0, Fence, Leader + "asm_store(C, s[0], 1024); s[0][threadIdx.x] = 1.0f;"},
      // Stores of every kind: of a class type (an operator= call), in inline assembly; a barrier in
      // inline assembly fences nothing; a struct laid over shared memory tells its members apart.
      {1, Fence, "reinterpret_cast<float2 *>(s[0])[threadIdx.x] = make_float2(1.0f, 2.0f); __syncthreads(); " + Leader +
                     "asm_store(C, s[0], 1024);"},
      {1, Fence, "asm volatile(\"st.shared.f32\\t[%0], %1;\" :: \"r\"((unsigned)__cvta_generic_to_shared(&s[0][threadIdx.x])), "
                 "\"f\"(1.0f)); __syncthreads(); " + Leader + "asm_store(C, s[0], 1024);"},
      {1, Fence, "s[0][threadIdx.x] = 1.0f; asm volatile(\"bar.sync 0;\" ::: \"memory\"); " + Leader + "asm_store(C, s[0], 1024);"},
      {0, Fence, "Halves &h = *reinterpret_cast<Halves *>(&s[0][0]); h.lo[threadIdx.x % 128] = 1.0f; __syncthreads(); " + Leader +
                     "asm_store(C, h.hi, 512);"},
      {1, Fence, "Halves &h = *reinterpret_cast<Halves *>(&s[0][0]); float *hi = h.hi; hi[threadIdx.x % 128] = 1.0f; "
                 "__syncthreads(); " + Leader + "asm_store(C, h.hi, 512);"},
      // ... and between a barrier's init and a copy that completes on it.
      {1, Fence, Leader + "asm_init(&mb[0], 1); __syncthreads(); " + Leader + "{ asm_expect(&mb[0], 1024); asm_load(s[0], A, 1024, &mb[0]); }"},
      {0, Fence, Leader + "{ asm_init(&mb[0], 1); asm_init_fence(); } __syncthreads(); " + Leader +
                     "{ asm_expect(&mb[0], 1024); asm_load(s[0], A, 1024, &mb[0]); }"},
      {0, Fence, Leader + "{ init(&bar, 1); g(); } __syncthreads(); " + Leader +
                     "{ (void)cuda::device::barrier_arrive_tx(bar, 1, 1024); cuda::device::memcpy_async_tx(s[0], A, cuda::aligned_size_t<16>(1024), bar); }"},
      // An init while a copy may be in flight on the barrier: no wait on it (or a block barrier) between.
      {1, Reinit, "for (int t = 0; t < n; ++t) " + Leader + "{ asm_init(&mb[0], 1); asm_fence(); asm_expect(&mb[0], 1024); "
                  "asm_load(s[0], A, 1024, &mb[0]); }"},
      {0, Reinit, "for (int t = 0; t < n; ++t) { " + Leader + "{ asm_init(&mb[0], 1); asm_fence(); asm_expect(&mb[0], 1024); "
                  "asm_load(s[0], A, 1024, &mb[0]); } while (!asm_try_wait(&mb[0], 0)) ; }"},
      {0, Reinit, "for (int t = 0; t < n; ++t) { " + Leader + "{ asm_init(&mb[0], 1); asm_fence(); asm_expect(&mb[0], 1024); "
                  "asm_load(s[0], A, 1024, &mb[0]); } __syncthreads(); }"},
      {1, Reinit, Leader + "{ asm_init(&mb[0], 1); asm_fence(); asm_expect(&mb[0], 1024); asm_load(s[0], A, 1024, &mb[0]); "
                  "asm_init(&mb[0], 1); }"},
      {0, Reinit, Leader + "{ init(&bar, 1); asm_fence(); (void)cuda::device::barrier_arrive_tx(bar, 1, 1024); "
                  "cuda::device::memcpy_async_tx(s[0], A, cuda::aligned_size_t<16>(1024), bar); bar.wait_parity(0); init(&bar, 1); }"},
  };
  const std::string Shared = "(unsigned)__cvta_generic_to_shared";
  std::string Code =
      "#include <cuda.h>\n#include <cuda/barrier>\n#include <cuda/ptx>\n#include <cstdint>\n"
      "using bar_t = cuda::barrier<cuda::thread_scope_block>;\nnamespace ptx = cuda::ptx;\n"
      "namespace cde = cuda::device::experimental;\n__device__ void g();\n"
      "struct Halves { float lo[128]; float hi[128]; };\n"
      "__device__ void fence_helper() { ptx::fence_proxy_async(ptx::space_shared); }\n"
      "__device__ void load_helper(float *d, const float *s, bar_t &b) { cuda::device::memcpy_async_tx(d, s, "
      "cuda::aligned_size_t<16>(1024), b); }\n"
      "__device__ inline void asm_load(void *d, const void *s, unsigned n, uint64_t *b) { asm volatile("
      "\"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\" :: \"r\"(" + Shared +
      "(d)), \"l\"(s), \"r\"(n), \"r\"(" + Shared + "(b)) : \"memory\"); }\n"
      "__device__ inline void asm_expect(uint64_t *b, unsigned n) { asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, "
      "[%0], %1;\" :: \"r\"(" + Shared + "(b)), \"r\"(n) : \"memory\"); }\n"
      "__device__ inline void asm_init(uint64_t *b, unsigned n) { asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" "
      ":: \"r\"(" + Shared + "(b)), \"r\"(n) : \"memory\"); }\n"
      "__device__ inline void asm_fence() { asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\"); }\n"
      "__device__ inline void asm_init_fence() { asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\"); }\n"
      "__device__ inline bool asm_try_wait(uint64_t *b, unsigned p) { unsigned ok; asm volatile(\"{ .reg .pred P; "
      "mbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2; selp.b32 %0, 1, 0, P; }\" : \"=r\"(ok) : \"r\"(" + Shared +
      "(b)), \"r\"(p) : \"memory\"); return ok; }\n"
      "__device__ inline void asm_store(void *g, const void *s, unsigned n) { asm volatile("
      "\"cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\" :: \"l\"(g), \"r\"(" + Shared +
      "(s)), \"r\"(n) : \"memory\"); }\n";
  const unsigned First = 1 + static_cast<unsigned>(std::count(Code.begin(), Code.end(), '\n'));
  for (size_t I = 0; I < Cases.size(); ++I)
    Code += "__global__ void k" + std::to_string(I) + "(const __grid_constant__ CUtensorMap m, const float *A, float *C, int n) { "
            "alignas(128) __shared__ float s[4][256]; __shared__ bar_t bar; __shared__ uint64_t mb[4]; " +
            Cases[I].Body + " }\n";
  FileResult R = runOnCode(Code, auditOptions());
  ASSERT_TRUE(R.Ok) << R.Error;
  std::vector<size_t> Got(Cases.size());
  for (const AuditFinding &F : R.Findings) {
    ASSERT_GE(F.At.Line, First) << auditText(F);
    ASSERT_LT(F.At.Line - First, Cases.size()) << auditText(F);
    if (F.Code == Cases[F.At.Line - First].Code)
      ++Got[F.At.Line - First];
    else
      ADD_FAILURE() << "another finding than the case's: " << auditText(F);
  }
  for (size_t I = 0; I < Cases.size(); ++I)
    EXPECT_EQ(Cases[I].Expected, Got[I]) << Cases[I].Body;
}

// The TMA checks' fix-its: alignas(128) on a tensor copy's destination; the bytes the copies move
// in place of the expectation. Applied, the findings they were offered for are gone, the others
// stay, and nothing new appears.
TEST(Audit, TmaFixesMendTheirFindings) {
  for (auto [Name, Fixable] : {std::make_pair("tma_alignment.cu", 1u), std::make_pair("tma_barriers.cu", 2u)}) {
    const std::string File = sourceDir() + "/testdata/audit/" + Name;
    FileResult R = runOnFile(File, auditOptions());
    ASSERT_TRUE(R.Ok) << R.Error;
    clang::tooling::Replacements All;
    std::set<std::pair<unsigned, int>> Left;
    unsigned Fixed = 0;
    for (const AuditFinding &F : R.Findings) {
      if (F.Fixes.empty())
        Left.insert({F.At.Line, static_cast<int>(F.Code)});
      else
        ++Fixed;
      for (const clang::tooling::Replacement &Fix : F.Fixes) {
        if (F.Code == Reason::AsyncTmaAlignment)
          EXPECT_EQ("alignas(128) ", Fix.getReplacementText().str());
        else
          EXPECT_EQ("2048", Fix.getReplacementText().str());
        EXPECT_FALSE(bool(All.add(Fix)));
      }
    }
    EXPECT_EQ(Fixable, Fixed) << Name;
    auto Text = clang::tooling::applyAllReplacements(R.Original, All);
    ASSERT_TRUE(bool(Text)) << llvm::toString(Text.takeError());
    std::string Dir = tempDir();
    writeFile(Dir + "/" + Name, *Text);
    FileResult After = runOnFile(Dir + "/" + Name, auditOptions());
    ASSERT_TRUE(After.Ok) << After.Error;
    std::set<std::pair<unsigned, int>> Now;
    for (const AuditFinding &F : After.Findings)
      Now.insert({F.At.Line, static_cast<int>(F.Code)});
    EXPECT_EQ(Left, Now) << *Text; // the fixes add no line, so the others stay where they were
  }
}

// The fix-its: a barrier after the read's statement, indented as it is (stage overrun); the count
// of groups a wait may leave in flight (read before wait). Applied, the loops they were offered for
// audit clean, and the file still parses; the overruns no barrier can mend (a copy as many tiles
// ahead as there are buffers) get none.
TEST(Audit, ScheduleFixesMakeTheirLoopsClean) {
  auto Schedule = [](Reason C) { return C == Reason::AsyncStageOverrun || C == Reason::AsyncReadBeforeWait; };
  for (auto [Name, Fixable, Unfixable] : {std::make_tuple("stage_overrun.cu", 4u, 2u),
                                          std::make_tuple("read_before_wait.cu", 7u, 2u),
                                          std::make_tuple("inline_cp_async.cu", 2u, 1u)}) {
    const std::string File = sourceDir() + "/testdata/audit/" + Name;
    FileResult R = runOnFile(File, auditOptions());
    ASSERT_TRUE(R.Ok) << R.Error;
    clang::tooling::Replacements All;
    std::set<unsigned> Fixed, Unfixed;
    for (const AuditFinding &F : R.Findings) {
      if (!Schedule(F.Code))
        continue;
      (F.Fixes.empty() ? Unfixed : Fixed).insert(F.At.Line);
      for (const clang::tooling::Replacement &Fix : F.Fixes) {
        if (F.Code == Reason::AsyncStageOverrun)
          EXPECT_TRUE(Fix.getReplacementText().starts_with("\n    ") &&
                      Fix.getReplacementText().ends_with("__syncthreads();"))
              << Fix.getReplacementText().str();
        else // a count in place of the one written, or the commit moved after its condition
          EXPECT_TRUE((llvm::all_of(Fix.getReplacementText(), llvm::isDigit) && Fix.getLength() > 0) ||
                      Fix.getReplacementText().empty() || Fix.getReplacementText().ends_with("producer_commit();"))
              << Fix.getReplacementText().str();
        EXPECT_FALSE(bool(All.add(Fix)));
      }
    }
    EXPECT_EQ(Fixable, Fixed.size()) << Name;
    EXPECT_EQ(Unfixable, Unfixed.size()) << Name;
    auto Text = clang::tooling::applyAllReplacements(R.Original, All);
    ASSERT_TRUE(bool(Text)) << llvm::toString(Text.takeError());
    std::string Dir = tempDir();
    writeFile(Dir + "/" + Name, *Text);
    FileResult After = runOnFile(Dir + "/" + Name, auditOptions());
    ASSERT_TRUE(After.Ok) << After.Error;
    std::set<unsigned> Left;
    for (const AuditFinding &F : After.Findings) {
      EXPECT_TRUE(Schedule(F.Code)) << Name << ": a fix made another finding: " << auditText(F);
      Left.insert(F.At.Line);
    }
    EXPECT_EQ(Unfixed.size(), Left.size()) << *Text;
  }
}

// No false alarms on correct code: every file tilepipe wrote (generated/) gives no finding.
TEST(Audit, TheToolsOwnOutputIsClean) {
  std::vector<std::string> Args{"audit", "-j", "0"};
  for (const std::string &F : cudaFilesIn("generated"))
    Args.push_back(sourceDir() + "/generated/" + F);
  ASSERT_GT(Args.size(), 40u);
  std::string Report = tempDir() + "/audit.json";
  Args.push_back("--report=" + Report);
  ProcessResult P = runTilepipe(Args);
  EXPECT_EQ(0, P.ExitCode) << P.Err;
  auto V = llvm::json::parse(readFile(Report));
  ASSERT_TRUE(bool(V)) << llvm::toString(V.takeError());
  size_t Files = 0;
  for (const llvm::json::Value &F : *V->getAsObject()->getArray("files")) {
    ++Files;
    EXPECT_EQ(0u, F.getAsObject()->getArray("findings")->size()) << F.getAsObject()->getString("file")->str();
  }
  EXPECT_EQ(Args.size() - 4, Files);
}

TEST(Audit, CommandLine) {
  std::string Report = tempDir() + "/audit.json";
  ProcessResult P = runTilepipe({"audit", sourceDir() + "/testdata/audit/stage_count.cu", "--report=" + Report});
  EXPECT_EQ(1, P.ExitCode) << "a finding fails the run, as a linter's does";
  EXPECT_NE(std::string::npos, P.Err.find("stage_count.cu:14:28: warning: [async-stage-count] 'bar' holds 2 barriers"))
      << P.Err;
  EXPECT_NE(std::string::npos, P.Err.find("note: 's' has 3 buffers")) << P.Err;
  auto V = llvm::json::parse(readFile(Report));
  ASSERT_TRUE(bool(V)) << llvm::toString(V.takeError());
  const llvm::json::Object &F = *(*V->getAsObject()->getArray("files"))[0].getAsObject();
  const llvm::json::Object &Fd = *(*F.getArray("findings"))[0].getAsObject();
  EXPECT_EQ("async-stage-count", *Fd.getString("id"));
  EXPECT_EQ(14, *Fd.getInteger("line"));
  // It rewrites nothing, so the rewrite's outputs are refused.
  ProcessResult O = runTilepipe({"audit", sourceDir() + "/testdata/audit/stage_count.cu", "-o", tempDir() + "/x.cu"});
  EXPECT_EQ(1, O.ExitCode);
  EXPECT_NE(std::string::npos, O.Err.find("'tilepipe audit' rewrites nothing")) << O.Err;
}

// What the audit cannot decide is a remark, once per loop: it fails no run, and the report and
// the SARIF log mark it as such (a note, not a warning); clang-tidy's YAML, warnings only, omits it.
TEST(Audit, AnUnreadScheduleIsARemarkThatFailsNothing) {
  std::string Dir = tempDir();
  std::string File = sourceDir() + "/testdata/audit/unknown_schedule.cu";
  ProcessResult P = runTilepipe({"audit", File, "--report=" + Dir + "/a.json", "--sarif=" + Dir + "/a.sarif",
                                 "--export-fixes=" + Dir + "/a.yaml"});
  EXPECT_EQ(0, P.ExitCode) << P.Err;
  EXPECT_NE(std::string::npos, P.Err.find("unknown_schedule.cu:17:3: remark: [async-unknown]")) << P.Err;
  EXPECT_NE(std::string::npos, P.Err.find("0 finding(s), 4 loop(s) not read")) << P.Err;
  auto V = llvm::json::parse(readFile(Dir + "/a.json"));
  ASSERT_TRUE(bool(V)) << llvm::toString(V.takeError());
  const llvm::json::Array &Found = *(*(*V->getAsObject()->getArray("files"))[0].getAsObject()).getArray("findings");
  ASSERT_EQ(4u, Found.size());
  for (const llvm::json::Value &F : Found)
    EXPECT_EQ("remark", *F.getAsObject()->getString("level"));
  auto S = llvm::json::parse(readFile(Dir + "/a.sarif"));
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  const llvm::json::Array &Results = *(*(*S->getAsObject()->getArray("runs"))[0].getAsObject()).getArray("results");
  ASSERT_EQ(4u, Results.size());
  for (const llvm::json::Value &R : Results)
    EXPECT_EQ("note", *R.getAsObject()->getString("level"));
  EXPECT_EQ(std::string::npos, readFile(Dir + "/a.yaml").find("async-unknown"));
  // Beside a warning, the warning alone decides the exit status.
  ProcessResult Both = runTilepipe({"audit", File, sourceDir() + "/testdata/audit/stage_count.cu"});
  EXPECT_EQ(1, Both.ExitCode) << Both.Err;
  EXPECT_NE(std::string::npos, Both.Err.find("2 file(s), 1 finding(s), 4 loop(s) not read")) << Both.Err;
}

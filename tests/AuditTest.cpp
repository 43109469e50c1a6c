// tilepipe audit (Audit.h): each program of testdata/audit/ gives exactly the findings its
// `// EXPECT-AUDIT: id` comments name, on the lines after them; the tool's own output (generated/)
// and the hand-written pipelines of testdata/ give none; the command line's exit status, report
// and refusals.
#include "TestSupport.h"
#include "tilepipe/Audit.h"
#include "tilepipe/Driver.h"
#include "llvm/Support/JSON.h"
#include <gtest/gtest.h>
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
  // typed_float's array, and per_element_mutable_shape's; the other flagged copies' arrays are
  // aligned already.
  EXPECT_EQ((std::multiset<std::string>{"__shared__ float s[2][256];", "__shared__ float s[2][512];"}), At);
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

// tests/gpu/benchmark.sh without a GPU: `prepare` writes a real bundle per spec and variant (a
// subset of the specs, for time); `run` on a stand-in for nvcc and the GPU
// (tests/data/fake_gpu/) records every kernel with both floors, reports a variant whose outputs
// differ as a bug (non-zero exit), stops within its budget and marks the record incomplete, and
// exits 77 without a GPU; with the real nvcc it builds every program, the kernels named for their
// resources, and never reports what did not run as run.
#include "TestSupport.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include <gtest/gtest.h>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

std::string script() { return sourceDir() + "/tests/gpu/benchmark.sh"; }

ProcessResult bench(const std::vector<std::string> &Env, const std::vector<std::string> &Args) {
  std::vector<std::string> Full = Env;
  Full.push_back("bash");
  Full.push_back(script());
  Full.insert(Full.end(), Args.begin(), Args.end());
  return runProgram("env", Full);
}

ProcessResult prepare(const std::string &Dir, const std::string &Specs, std::vector<std::string> Extra = {}) {
  std::vector<std::string> Args = {"prepare", "--dir", Dir, "--specs", Specs, "--jobs", "2", "--tilepipe",
                                   TILEPIPE_BINARY};
  Args.insert(Args.end(), Extra.begin(), Extra.end());
  return bench({}, Args);
}

llvm::json::Value readJson(const std::string &Path) {
  auto V = llvm::json::parse(readFile(Path));
  if (!V) {
    ADD_FAILURE() << Path << ": " << llvm::toString(V.takeError());
    return nullptr;
  }
  return std::move(*V);
}

bool sameFile(const std::string &A, const std::string &B) { return readFile(A) == readFile(B); }

TEST(BenchmarkPrepare, ABundlePerSpecAndVariantAndAnAddedVariant) {
  std::string Dir = tempDir() + "/bundle";
  ProcessResult P = prepare(Dir, "stencil1d matmul_classic");
  ASSERT_EQ(0, P.ExitCode) << P.Out << P.Err;
  for (const char *V : {"default", "always", "_floor"})
    for (const char *S : {"matmul_classic", "stencil1d"})
      for (const char *F : {"original.cu", "rewritten.cu", "driver.cu", "build.sh", "run.sh"})
        EXPECT_TRUE(llvm::sys::fs::exists(Dir + "/" + V + "/" + S + "/" + F)) << V << "/" << S << "/" << F;
  // The floor bundle rewrites every legal loop, so every spec has its compute-only variant.
  for (const char *S : {"matmul_classic", "stencil1d"})
    EXPECT_TRUE(llvm::sys::fs::exists(Dir + "/_floor/" + S + "/compute_only.cu")) << S;
  // Each variant got its options: the cost model gives stencil1d's loop the register-staged
  // prefetch, --plan=always a cp.async pipeline.
  EXPECT_NE(readFile(Dir + "/default/stencil1d/rewritten.cu").find("load_next_tile"), std::string::npos);
  EXPECT_NE(readFile(Dir + "/always/stencil1d/rewritten.cu").find("memcpy_async"), std::string::npos);
  EXPECT_NE(readFile(Dir + "/default/matmul_classic/rewritten.cu").find("tilepipe_launch_"), std::string::npos);

  llvm::json::Value M = readJson(Dir + "/manifest.json");
  const llvm::json::Object *O = M.getAsObject();
  ASSERT_TRUE(O);
  const llvm::json::Object *Prep = O->getObject("prepared");
  ASSERT_TRUE(Prep);
  EXPECT_EQ("matmul_classic stencil1d", Prep->getString("specs").value_or(""));
  EXPECT_TRUE(Prep->getString("tilepipe").value_or("").starts_with("tilepipe ")) << readFile(Dir + "/manifest.json");
  EXPECT_GE(Prep->getString("commit").value_or("").size(), 7u);
  auto Variants = [&](const llvm::json::Object &Obj) {
    std::vector<std::string> Out;
    for (const llvm::json::Value &V : *Obj.getArray("variants"))
      Out.push_back(V.getAsObject()->getString("name")->str() + "=" +
                    V.getAsObject()->getString("tilepipe_options")->str());
    return Out;
  };
  EXPECT_EQ((std::vector<std::string>{"default=", "always=--plan=always"}), Variants(*O));

  // Another variant joins the ones there; its options reach tilepipe.
  ProcessResult Add = prepare(Dir, "matmul_classic stencil1d", {"--variant", "pipeline", "--", "--mode=pipeline"});
  ASSERT_EQ(0, Add.ExitCode) << Add.Out << Add.Err;
  llvm::json::Value M2 = readJson(Dir + "/manifest.json");
  EXPECT_EQ((std::vector<std::string>{"default=", "always=--plan=always", "pipeline=--mode=pipeline"}),
            Variants(*M2.getAsObject()));
  std::string Pipeline = readFile(Dir + "/pipeline/matmul_classic/rewritten.cu");
  EXPECT_NE(Pipeline.find("memcpy_async"), std::string::npos);
  EXPECT_EQ(Pipeline.find("tilepipe_launch_"), std::string::npos);
  EXPECT_TRUE(llvm::sys::fs::exists(Dir + "/default/stencil1d/driver.cu"));

  // A folder prepared for other specs is not silently mixed.
  ProcessResult Other = prepare(Dir, "stencil1d");
  EXPECT_EQ(2, Other.ExitCode) << Other.Out << Other.Err;
  EXPECT_NE(Other.Err.find("--clean"), std::string::npos) << Other.Err;
  // Nor does a bad name or an unknown spec get far.
  EXPECT_EQ(2, prepare(Dir, "stencil1d", {"--variant", "original", "--"}).ExitCode);
  EXPECT_EQ(2, prepare(tempDir(), "no_such_spec").ExitCode);
}

/// A bundle of one spec with two timed kernels, prepared once per test program.
class FakeGpu : public ::testing::Test {
protected:
  static std::string Dir;
  static void SetUpTestSuite() {
    if (findTool("python3").empty())
      return;
    Dir = tempDir() + "/bundle";
    ProcessResult P = prepare(Dir, "matmul_classic");
    ASSERT_EQ(0, P.ExitCode) << P.Out << P.Err;
  }
  void SetUp() override {
    if (findTool("python3").empty())
      GTEST_SKIP() << "python3 not found";
  }
  static ProcessResult run(const std::string &Out, std::vector<std::string> Env, std::vector<std::string> Args = {}) {
    Env.push_back("NVCC=" + sourceDir() + "/tests/data/fake_gpu/nvcc");
    std::vector<std::string> Full = {"run", "--dir", Dir, "--out", Out, "--jobs", "2"};
    Full.insert(Full.end(), Args.begin(), Args.end());
    return bench(Env, Full);
  }
  static const llvm::json::Object *kernel(const llvm::json::Value &Rec, size_t I) {
    const llvm::json::Array *K = Rec.getAsObject()->getArray("kernels");
    return K && I < K->size() ? (*K)[I].getAsObject() : nullptr;
  }
  static std::string status(const llvm::json::Object *K, llvm::StringRef Variant) {
    const llvm::json::Object *V = K->getObject("variants")->getObject(Variant);
    return V ? V->getString("status").value_or("").str() : "(none)";
  }
};
std::string FakeGpu::Dir;

TEST_F(FakeGpu, RecordsBothFloorsAndReportsADifferenceAsABug) {
  std::string Out = tempDir();
  std::string Log = Out + "/nvcc.log";
  ProcessResult R = run(Out, {"FAKE_NVCC_LOG=" + Log}, {"--rounds", "2"});
  ASSERT_EQ(0, R.ExitCode) << R.Out << R.Err;
  // Built once each, with the kernels named for their resources.
  std::string Nvcc = readFile(Log);
  EXPECT_NE(Nvcc.find("-DTPV_RESOURCES -DTP_SOURCE=\"original.cu\""), std::string::npos) << Nvcc;
  // The census: the compute-only source, counting what its loops copy into shared memory.
  EXPECT_NE(Nvcc.find("-DTPV_RESOURCES -DTPV_CENSUS -DTP_SOURCE=\"compute_only.cu\" -o census"), std::string::npos)
      << Nvcc;
  llvm::json::Value Rec = readJson(Out + "/benchmark.json");
  const llvm::json::Object &O = *Rec.getAsObject();
  for (const char *Key : {"schema", "date", "started", "ran", "complete", "gpu", "nvidia_driver", "cuda_driver_api",
                          "cuda_runtime", "cuda_version", "nvcc", "arch", "rounds", "launches_per_round",
                          "prepared", "variants", "kernels", "geomean"})
    EXPECT_TRUE(O.get(Key)) << Key;
  EXPECT_EQ("tilepipe-benchmark/1", O.getString("schema").value_or(""));
  EXPECT_EQ(true, O.getBoolean("ran"));
  EXPECT_EQ(true, O.getBoolean("complete"));
  EXPECT_EQ("13.0", O.getString("cuda_version").value_or(""));
  EXPECT_EQ("V13.0.88", O.getString("nvcc").value_or(""));
  ASSERT_EQ(2u, O.getArray("kernels")->size());
  const llvm::json::Object *K16 = kernel(Rec, 0), *K32 = kernel(Rec, 1);
  EXPECT_EQ("matmul<16>", K16->getString("kernel").value_or(""));
  EXPECT_EQ(6, K16->getInteger("index").value_or(-1));
  EXPECT_EQ("matmul<32>", K32->getString("kernel").value_or(""));
  // The stand-in: compute-only 0.505 ms; 1 GB (0.25 ms) and 3 GB (0.75 ms) at 4000 GB/s.
  EXPECT_EQ("compute-only", K16->getObject("floors")->getString("bound").value_or(""));
  EXPECT_EQ("memory", K32->getObject("floors")->getString("bound").value_or(""));
  EXPECT_DOUBLE_EQ(0.75, K32->getObject("floors")->getNumber("floor_ms").value_or(0));
  // The census: 2 GB into shared memory at the 8000 GB/s of L2 the runs measured, 0.25 ms.
  EXPECT_EQ(2e9, K16->getNumber("census_bytes").value_or(0));
  EXPECT_DOUBLE_EQ(0.25, K16->getObject("floors")->getNumber("l2_ms").value_or(0));
  for (const char *V : {"original", "default", "always", "compute_only"}) {
    EXPECT_EQ("ok", status(K16, V)) << V;
    const llvm::json::Object *Var = K16->getObject("variants")->getObject(V);
    EXPECT_EQ(42, Var->getInteger("launches").value_or(0)) << V;
    EXPECT_EQ(2, Var->getInteger("rounds").value_or(0)) << V;
    EXPECT_EQ(64, Var->getInteger("warps_per_sm").value_or(0)) << V;
  }
  std::string Md = readFile(Out + "/benchmark.md");
  EXPECT_NE(Md.find("| matmul_classic: matmul<32> | 4096 cube, 128 tiles x 16384 blocks | 0.5050 | 0.7500 | 0.2500 | memory | "
                    "1.0100 | 1.35 | 0.9090 | 1.11x | 1.21 | 0.8080 | 1.25x | 1.08 |"),
            std::string::npos)
      << Md;
  EXPECT_NE(Md.find("geomean speedup, always: 1.250x over 2 kernel(s)\n"), std::string::npos) << Md;
  EXPECT_NE(Md.find("Validated: no variant (the original included) runs below its kernel's floor."), std::string::npos)
      << Md;
  EXPECT_NE(R.Out.find("geomean speedup, default: 1.111x"), std::string::npos) << R.Out;

  // A variant whose outputs differ: loud, in the record, and the exit status; the compute-only
  // variant that cannot launch leaves the memory floor.
  std::string Out2 = tempDir();
  ProcessResult D = run(Out2, {"FAKE_GPU_DIFFER=always", "FAKE_GPU_CANNOT_LAUNCH=compute_only"}, {"--rounds", "1"});
  EXPECT_EQ(1, D.ExitCode) << D.Out << D.Err;
  EXPECT_NE(D.Out.find("BUG: the always variant of matmul_classic DIFFERS from the original"), std::string::npos)
      << D.Out;
  llvm::json::Value Rec2 = readJson(Out2 + "/benchmark.json");
  const llvm::json::Object *D16 = kernel(Rec2, 0);
  ASSERT_TRUE(D16);
  EXPECT_EQ("differs", status(D16, "always"));
  EXPECT_EQ("ok", status(D16, "default"));
  EXPECT_EQ("cannot launch", status(D16, "compute_only"));
  EXPECT_EQ("memory", D16->getObject("floors")->getString("bound").value_or(""));
  EXPECT_TRUE(D16->getObject("floors")->get("compute_only_ms")->getAsNull().has_value());
  EXPECT_EQ(0, Rec2.getAsObject()->getObject("geomean")->getObject("always")->getInteger("kernels").value_or(-1));
  EXPECT_NE(readFile(Out2 + "/benchmark.md").find("| cannot launch | 0.2500 | 0.2500 | memory |"), std::string::npos);

  // A rewrite that does not build is a bug too.
  std::string Out3 = tempDir();
  ProcessResult B = run(Out3, {"FAKE_NVCC_FAIL=default/rewritten"}, {"--rounds", "1"});
  EXPECT_EQ(1, B.ExitCode) << B.Out << B.Err;
  EXPECT_NE(B.Out.find("BUG: the default variant of matmul_classic does not build"), std::string::npos) << B.Out;
  EXPECT_EQ("build failed", status(kernel(readJson(Out3 + "/benchmark.json"), 0), "default"));

  // No GPU: built, nothing ran, exit 77 (never a pass), and the record says so.
  std::string Out4 = tempDir();
  ProcessResult N = run(Out4, {"FAKE_GPU_NONE=1"});
  EXPECT_EQ(77, N.ExitCode) << N.Out << N.Err;
  llvm::json::Value Rec4 = readJson(Out4 + "/benchmark.json");
  EXPECT_EQ(false, Rec4.getAsObject()->getBoolean("ran"));
  EXPECT_EQ(false, Rec4.getAsObject()->getBoolean("complete"));
  EXPECT_EQ("not run", status(kernel(Rec4, 0), "original"));
}

TEST_F(FakeGpu, ABudgetStopsEarlyAndMarksTheRecordIncomplete) {
  // The budget is counted on a clock of the test's own (TILEPIPE_BENCH_CLOCK), which only the
  // stand-in GPU's runs advance, 2 s each; the builds, the probe and the resource queries take
  // none of it, however busy the machine. 4 programs a round: round 1 ends at 8 s, round 2's
  // third at 14 s, and then a budget of 20 s keeps 5 s in hand, as a run of 2 s does not leave.
  std::string Out = tempDir();
  std::string Clock = tempDir() + "/clock";
  writeFile(Clock, "0\n");
  ProcessResult R = run(Out, {"TILEPIPE_BENCH_CLOCK=" + Clock, "FAKE_GPU_SECONDS=2"},
                        {"--rounds", "3", "--budget", "20"});
  EXPECT_EQ(0, R.ExitCode) << R.Out << R.Err;
  EXPECT_NE(R.Out.find("the budget of 20 s is spent: stopping before round 2 of matmul_classic (compute_only); "
                       "the record is incomplete"),
            std::string::npos)
      << R.Out;
  EXPECT_EQ("14\n", readFile(Clock));
  llvm::json::Value Rec = readJson(Out + "/benchmark.json");
  EXPECT_EQ(false, Rec.getAsObject()->getBoolean("complete"));
  EXPECT_EQ(true, Rec.getAsObject()->getBoolean("ran"));
  const llvm::json::Object *K = kernel(Rec, 0);
  ASSERT_TRUE(K);
  for (const auto &[Variant, Rounds] :
       std::vector<std::pair<std::string, int64_t>>{{"original", 2}, {"default", 2}, {"always", 2}, {"compute_only", 1}})
    EXPECT_EQ(Rounds, K->getObject("variants")->getObject(Variant)->getInteger("rounds").value_or(-1))
        << Variant << "\n" << R.Out;
  EXPECT_NE(readFile(Out + "/benchmark.md").find("INCOMPLETE"), std::string::npos);
}

TEST(BenchmarkRealNvcc, BuildsEveryProgramAndNeverPassesWhatDidNotRun) {
  std::string Nvcc = findTool("nvcc");
  if (Nvcc.empty())
    GTEST_SKIP() << "nvcc not found";
  if (findTool("python3").empty())
    GTEST_SKIP() << "python3 not found";
  // mixed_tiles: a tensor-copy launcher, and a compute-only variant that cannot launch on an H200.
  std::string Dir = tempDir() + "/bundle";
  ProcessResult P = prepare(Dir, "mixed_tiles");
  ASSERT_EQ(0, P.ExitCode) << P.Out << P.Err;
  std::string Out = tempDir();
  ProcessResult R = bench({"NVCC=" + Nvcc}, {"run", "--dir", Dir, "--out", Out, "--rounds", "1", "--jobs", "2"});
  for (const char *B : {"_floor/mixed_tiles/original", "_floor/mixed_tiles/compute_only", "_floor/mixed_tiles/census",
                        "default/mixed_tiles/rewritten", "always/mixed_tiles/rewritten"})
    EXPECT_TRUE(llvm::sys::fs::can_execute(Dir + "/" + B)) << B << "\n" << R.Out << R.Err;
  // Built with the kernels named for their resources: the first build of each succeeded.
  EXPECT_EQ(std::string::npos, readFile(Out + "/raw/mixed_tiles/always.build.log").find("again without"));
  llvm::json::Value Rec = readJson(Out + "/benchmark.json");
  const llvm::json::Object &O = *Rec.getAsObject();
  if (runProgram(Dir + "/_floor/mixed_tiles/original", {"probe"}).ExitCode == 0) {
    EXPECT_EQ(0, R.ExitCode) << R.Out << R.Err; // a GPU: it ran for real
    EXPECT_EQ(true, O.getBoolean("complete"));
    return;
  }
  EXPECT_EQ(77, R.ExitCode) << R.Out << R.Err;
  EXPECT_EQ(false, O.getBoolean("ran"));
  EXPECT_NE(R.Out.find("nothing ran"), std::string::npos) << R.Out;
  EXPECT_NE(readFile(Out + "/benchmark.md").find("Nothing ran: no usable GPU"), std::string::npos);
}

} // namespace

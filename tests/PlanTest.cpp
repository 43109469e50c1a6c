// The Plan step as data: the plans a loop can have, a chosen plan obeyed by Emit and reported in
// the JSON report, and tuning files (read, written, matched, and ignored when the loop changed).
#include "TestSupport.h"
#include "tilepipe/Tuning.h"
#include "tilepipe/Write.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"
#include <gtest/gtest.h>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

// A 2-D tile of 32 x 32 floats (4 KiB a stage) read through a kernel parameter: 16-byte chunks,
// and tensor copies in the modes that have them. Two tiles: 8 KiB a stage, so 6 stages fit.
const char *Matmul = R"(
#define TS 32
__global__ void mm(const float *A, const float *B, float *C, int n) {
  __shared__ float As[TS][TS];
  __shared__ float Bs[TS][TS];
  int row = blockIdx.y * TS + threadIdx.y, col = blockIdx.x * TS + threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n / TS; ++t) {
    As[threadIdx.y][threadIdx.x] = A[row * n + t * TS + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(t * TS + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < TS; ++k)
      acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  C[row * n + col] = acc;
}
)";

// A guarded 1-D tile: the cp.async loop copies it per element (no 16-byte chunks fill zeros).
const char *Guarded = R"(
__global__ void g(const float *A, float *C, int n, int nt) {
  __shared__ float s[256];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    int i = t * 256 + threadIdx.x;
    s[threadIdx.x] = i < n ? A[i] : 0.0f;
    __syncthreads();
    acc += s[255 - threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 256 + threadIdx.x] = acc;
}
)";

std::vector<std::string> choices(const LoopRecord &L) {
  std::vector<std::string> Out;
  for (const PlanChoice &C : L.Choices)
    Out.push_back(C.str());
  return Out;
}

/// The analysis tests' options (no launch check), with Choice forced on every loop.
ToolOptions choosing(const char *Choice) {
  ToolOptions O = defaultOptions();
  O.CheckLaunchResources = false;
  O.Choice = PlanChoice::parse(Choice);
  return O;
}

const LoopRecord &onlyLoop(const FileResult &R) {
  EXPECT_TRUE(R.Ok) << R.Error;
  EXPECT_EQ(1u, R.Loops.size());
  return R.Loops.at(0);
}

TEST(Plan, EnumeratesEveryLegalChoice) {
  ToolOptions O = defaultOptions();
  O.CheckLaunchResources = false;
  FileResult R = runOnCode(Matmul, O);
  const LoopRecord &L = onlyLoop(R);
  std::vector<std::string> Want = {"keep", "registers", "2:registers", "3:registers", "4:registers"};
  // 4096 x 2 tiles x 6 stages is 48 KiB exactly: the copy engine's barriers, 8 bytes a stage, fit
  // beside 5 stages only.
  for (int S = 2; S <= 6; ++S)
    for (const char *K : {"per-element", "16-byte", "engine"})
      if (S < 6 || std::string(K) != "engine")
        Want.push_back(std::to_string(S) + ":" + K);
  EXPECT_EQ(Want, choices(L));
  EXPECT_EQ(16u, L.Fingerprint.size());

  // Without the copy engine's mode, no engine plans.
  O.Mode = CopyMode::Pipeline;
  std::vector<std::string> Pipeline = choices(onlyLoop(runOnCode(Matmul, O)));
  EXPECT_TRUE(llvm::none_of(Pipeline, [](const std::string &C) { return C.find("engine") != std::string::npos; }))
      << llvm::join(Pipeline, " ");
  EXPECT_TRUE(llvm::is_contained(Pipeline, "3:16-byte"));

  // A guarded tile has no 16-byte chunks: per element, or a tensor copy that fills the zeros.
  O.Mode = CopyMode::Auto;
  std::vector<std::string> G = choices(onlyLoop(runOnCode(Guarded, O)));
  EXPECT_TRUE(llvm::is_contained(G, "2:per-element")) << llvm::join(G, " ");
  EXPECT_FALSE(llvm::is_contained(G, "2:16-byte")) << llvm::join(G, " ");
}

TEST(Plan, ChoiceDecidesStagesAndCopies) {
  ToolOptions O = choosing("2:per-element");
  FileResult R = runOnCode(Matmul, O);
  const LoopRecord &L = onlyLoop(R);
  ASSERT_TRUE(L.transformed()) << L.message();
  EXPECT_EQ(2u, L.Stages);
  ASSERT_TRUE(L.Plan);
  EXPECT_EQ("tuned", L.Plan->Source);
  for (const TilePlan &T : L.Plan->Tiles) {
    EXPECT_EQ(CopyKind::PerElement, T.Kind);
    EXPECT_EQ(CopyKind::PerElement, T.CpAsync);
  }
  EXPECT_NE(std::string::npos, R.Rewritten.find("As_stages[2]")) << R.Rewritten;
  EXPECT_EQ(std::string::npos, R.Rewritten.find("aligned_size_t<16>")) << "no 16-byte chunks";
  EXPECT_EQ(std::string::npos, R.Rewritten.find("tilepipe_rt")) << "no copy engine";

  O.Choice = PlanChoice::parse("4:engine");
  FileResult E = runOnCode(Matmul, O);
  const LoopRecord &LE = onlyLoop(E);
  ASSERT_TRUE(LE.transformed()) << LE.message();
  EXPECT_EQ(4u, LE.Stages);
  ASSERT_TRUE(LE.Plan && LE.Plan->Engine);
  EXPECT_EQ(CopyKind::Tensor, LE.Plan->Tiles[0].Kind);
  EXPECT_EQ(CopyKind::Chunks16, LE.Plan->Tiles[0].CpAsync);
  EXPECT_NE(std::string::npos, E.Rewritten.find("::tilepipe_rt::copy_tile")) << E.Rewritten;

  // The report carries the plan, typed: no test need read remark prose for a copy kind.
  llvm::json::Value J = reportJson({E});
  const llvm::json::Object *Loop = J.getAsObject()->getArray("loops")->front().getAsObject();
  const llvm::json::Object *Plan = Loop->getObject("plan");
  ASSERT_TRUE(Plan);
  EXPECT_EQ("4:engine", Plan->getString("choice"));
  EXPECT_EQ("tensor", Plan->getArray("tiles")->front().getAsObject()->getString("copy_kind"));
  EXPECT_EQ("16-byte", Plan->getArray("tiles")->front().getAsObject()->getString("cp_async"));
  EXPECT_EQ(LE.Fingerprint, Loop->getString("fingerprint"));

  // A choice the loop cannot take leaves it as it is, and says why.
  O.Choice = PlanChoice::parse("3:16-byte");
  FileResult G = runOnCode(Guarded, O);
  EXPECT_EQ("plan-kept", reasonInfo(onlyLoop(G).Code).Id.str()) << onlyLoop(G).message();
  EXPECT_EQ(G.Original, G.Rewritten);
}

// An inner copy loop stores into the tile several times a tile: one register per store cannot
// hold them, so the loop has no register-staged plan.
const char *InnerCopy = R"(
__global__ void h(const float *A, float *C, int nt) {
  __shared__ float s[512];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    for (int j = 0; j < 2; ++j)
      s[j * 256 + threadIdx.x] = A[t * 512 + j * 256 + threadIdx.x];
    __syncthreads();
    acc += s[511 - threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 256 + threadIdx.x] = acc;
}
)";

TEST(Plan, RegistersStageTheNextTileAndKeepTheBuffer) {
  ToolOptions O = choosing("registers");
  FileResult R = runOnCode(Guarded, O);
  const LoopRecord &L = onlyLoop(R);
  ASSERT_TRUE(L.transformed()) << L.message();
  ASSERT_TRUE(L.Plan && L.Plan->Registers);
  EXPECT_EQ(1u, L.Stages);
  EXPECT_EQ(CopyKind::Registers, L.Plan->Tiles.at(0).Kind);
  // One buffer, as declared; no cp.async and no header for it; the guarded value goes through
  // one register, loaded after the copy barrier and stored where the copy phase stored.
  EXPECT_NE(std::string::npos, R.Rewritten.find("__shared__ float s[256];")) << R.Rewritten;
  EXPECT_EQ(std::string::npos, R.Rewritten.find("cuda/pipeline")) << R.Rewritten;
  EXPECT_EQ(std::string::npos, R.Rewritten.find("memcpy_async")) << R.Rewritten;
  size_t Load = R.Rewritten.find("s_next = i < n ? A[i] : 0.0f;");
  size_t Store = R.Rewritten.find("s[threadIdx.x] = s_next;");
  size_t Published = R.Rewritten.find("__syncthreads(); // the tile is published");
  size_t Next = R.Rewritten.find("load_next_tile(); // the next tile");
  size_t Compute = R.Rewritten.find("acc += s[255 - threadIdx.x];");
  ASSERT_NE(std::string::npos, Load) << R.Rewritten;
  EXPECT_TRUE(Load < Store && Store < Published && Published < Next && Next < Compute) << R.Rewritten;
  llvm::json::Value J = reportJson({R});
  const llvm::json::Object *Plan =
      J.getAsObject()->getArray("loops")->front().getAsObject()->getObject("plan");
  ASSERT_TRUE(Plan);
  EXPECT_EQ("registers", Plan->getString("choice"));
  EXPECT_EQ("registers", Plan->getArray("tiles")->front().getAsObject()->getString("copy_kind"));

  // An inner copy loop: no such plan, and asking for it keeps the loop, saying why.
  ToolOptions All = defaultOptions();
  All.CheckLaunchResources = false;
  EXPECT_FALSE(llvm::is_contained(choices(onlyLoop(runOnCode(InnerCopy, All))), "registers"));
  FileResult I = runOnCode(InnerCopy, O);
  EXPECT_EQ("plan-kept", reasonInfo(onlyLoop(I).Code).Id.str());
  EXPECT_NE(std::string::npos, onlyLoop(I).message().find("inner copy loop")) << onlyLoop(I).message();
  EXPECT_EQ(I.Original, I.Rewritten);
}

TEST(Plan, RegistersDeeperKeepOneSetPerTileAhead) {
  // The names: depth 1 is "registers" as before, deeper "<depth>:registers", 1 to 4.
  EXPECT_EQ(PlanChoice::registers(1), *PlanChoice::parse("1:registers"));
  EXPECT_EQ("registers", PlanChoice::parse("1:registers")->str());
  EXPECT_EQ("3:registers", PlanChoice::parse("3:registers")->str());
  EXPECT_FALSE(PlanChoice::parse("0:registers"));
  EXPECT_FALSE(PlanChoice::parse("5:registers"));

  FileResult R = runOnCode(Guarded, choosing("3:registers"));
  const LoopRecord &L = onlyLoop(R);
  ASSERT_TRUE(L.transformed()) << L.message();
  ASSERT_TRUE(L.Plan && L.Plan->Registers);
  EXPECT_EQ(3u, L.Stages);
  EXPECT_NE(std::string::npos, L.message().find("prefetch of the next 3 tiles")) << L.message();
  // One buffer; three sets of registers, each loaded before the loop and reloaded, three tiles
  // ahead, by the trip that stored it; the mainloop unrolled by three.
  const std::string &Out = R.Rewritten;
  EXPECT_NE(std::string::npos, Out.find("__shared__ float s[256];")) << Out;
  EXPECT_EQ(std::string::npos, Out.find("memcpy_async")) << Out;
  size_t Decl = Out.find("float s_next[3];");
  size_t Load = Out.find("s_next[slot] = i < n ? A[i] : 0.0f;");
  size_t Store = Out.find("s[threadIdx.x] = s_next[slot];");
  size_t Published = Out.find("__syncthreads(); // the tile is published", Store);
  size_t Reload = Out.find("load_next_tile(slot); // in flight during the next 3 computes", Published);
  size_t Compute = Out.find("acc += s[255 - threadIdx.x];", Reload);
  size_t Prologue = Out.find("for (int slot = 0; slot < 3; ++slot)\n", Compute);
  size_t Unrolled = Out.find("if (slot > 0 && !(", Prologue);
  ASSERT_NE(std::string::npos, Decl) << Out;
  EXPECT_TRUE(Decl < Load && Load < Store && Store < Published && Published < Reload &&
              Reload < Compute && Compute < Prologue && Prologue < Unrolled)
      << Out;
  // The loop's increment follows the end of the body's scope, as in the original: a name the body
  // declares cannot capture it.
  size_t BodyEnd = Out.find("}\n", Compute), Increment = Out.find("++t;", Compute);
  EXPECT_TRUE(BodyEnd < Increment && Increment < Prologue) << Out;
  llvm::json::Value J = reportJson({R});
  const llvm::json::Object *Plan =
      J.getAsObject()->getArray("loops")->front().getAsObject()->getObject("plan");
  ASSERT_TRUE(Plan);
  EXPECT_EQ("3:registers", Plan->getString("choice"));

  // However deep, the prefetch keeps the loop's one buffer: a tile of 16 KiB, of which four
  // stages would pass 48 KiB, still takes it 4 tiles ahead.
  const char *Big = R"(
__global__ void b(const float *A, float *C, int nt) {
  __shared__ float s[4096];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 4096 + threadIdx.x];
    __syncthreads();
    acc += s[4095 - threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 4096 + threadIdx.x] = acc;
}
)";
  FileResult B = runOnCode(Big, choosing("4:registers"));
  const LoopRecord &LB = onlyLoop(B);
  ASSERT_TRUE(LB.transformed()) << LB.message();
  ASSERT_TRUE(LB.Plan && LB.Plan->Registers) << LB.message();
  EXPECT_EQ(4u, LB.Stages);
  EXPECT_NE(std::string::npos, B.Rewritten.find("__shared__ float s[4096];")) << B.Rewritten;

  // An inner copy loop has no register plan of any depth.
  FileResult I = runOnCode(InnerCopy, choosing("2:registers"));
  EXPECT_EQ("plan-kept", reasonInfo(onlyLoop(I).Code).Id.str());
  EXPECT_EQ(I.Original, I.Rewritten);
}

// Two instantiations of one loop: 2 x 1 KiB stages and 2 x 8 KiB stages. Six stages fit both
// (48 KiB exactly for the second), but the second not with the copy engine's barriers beside them,
// so the engine's plans stop at five; a plan of seven fits the first alone and is refused for the
// loop, not emitted for both.
const char *TwoSizes = R"(
template <int TS>
__global__ void mm(const float *A, const float *B, float *C, int n) {
  __shared__ float As[TS][TS];
  __shared__ float Bs[TS][TS];
  int row = blockIdx.y * TS + threadIdx.y, col = blockIdx.x * TS + threadIdx.x;
  float acc = 0;
  for (int t = 0; t < n / TS; ++t) {
    As[threadIdx.y][threadIdx.x] = A[row * n + t * TS + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(t * TS + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < TS; ++k)
      acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  C[row * n + col] = acc;
}
template __global__ void mm<16>(const float *, const float *, float *, int);
template __global__ void mm<32>(const float *, const float *, float *, int);
)";

TEST(Plan, EveryInstantiationFitsTheLoopsPlans) {
  ToolOptions All = defaultOptions();
  All.CheckLaunchResources = false;
  std::vector<std::string> C = choices(onlyLoop(runOnCode(TwoSizes, All)));
  EXPECT_TRUE(llvm::is_contained(C, "5:engine")) << llvm::join(C, " ");
  EXPECT_FALSE(llvm::is_contained(C, "6:engine")) << llvm::join(C, " ");
  FileResult R = runOnCode(TwoSizes, choosing("7:16-byte"));
  const LoopRecord &L = onlyLoop(R);
  EXPECT_EQ("plan-kept", reasonInfo(L.Code).Id.str()) << L.message();
  EXPECT_NE(std::string::npos, L.message().find("mm<32>")) << L.message();
  EXPECT_EQ(R.Original, R.Rewritten);
}

TEST(Plan, ModelPlanIsReportedToo) {
  ToolOptions O = defaultOptions();
  O.CheckLaunchResources = false;
  O.Plan = PlanPolicy::Model;
  FileResult R = runOnCode(Guarded, O);
  const LoopRecord &L = onlyLoop(R);
  // A cp.async pipeline would copy the guarded tile per element, which the model expects to lose;
  // where the register-staged prefetch is legal it takes that, and says so.
  ASSERT_TRUE(L.Plan);
  EXPECT_EQ("model", L.Plan->Source);
  EXPECT_FALSE(L.Plan->Keep);
  EXPECT_TRUE(L.Plan->Registers);
  EXPECT_EQ("pipelined", reasonInfo(L.Code).Id.str());
  EXPECT_NE(std::string::npos, L.message().find("planned by the cost model")) << L.message();

  // Where that is not legal either (an inner copy loop) and a second stage would add more than
  // 2 KiB, the loop stays as it is: no-gain.
  FileResult I = runOnCode(InnerCopy, O);
  const LoopRecord &LI = onlyLoop(I);
  ASSERT_TRUE(LI.Plan);
  EXPECT_TRUE(LI.Plan->Keep);
  EXPECT_EQ("no-gain", reasonInfo(LI.Code).Id.str());
  EXPECT_EQ(CopyKind::PerElement, LI.Plan->Tiles.at(0).Kind);
  EXPECT_EQ(I.Original, I.Rewritten);
}

// An inner copy loop (no register-staged prefetch) of 1 KiB stages, under an if without braces.
const char *SmallInnerCopy = R"(
__global__ void h(const float *A, float *C, int nt) {
  __shared__ float s[256];
  float acc = 0;
  if (nt > 0)
    for (int t = 0; t < nt; ++t) {
      for (int j = 0; j < 2; ++j)
        s[j * 128 + threadIdx.x] = A[t * 256 + j * 128 + threadIdx.x];
      __syncthreads();
      acc += s[255 - threadIdx.x];
      __syncthreads();
    }
  C[blockIdx.x * 128 + threadIdx.x] = acc;
}
)";

TEST(Plan, ModelPipelinesOnlySmallLaunchesWhereNothingElsePays) {
  ToolOptions O = defaultOptions();
  O.CheckLaunchResources = false;
  O.Plan = PlanPolicy::Model;
  FileResult R = runOnCode(SmallInnerCopy, O);
  const LoopRecord &L = onlyLoop(R);
  ASSERT_TRUE(L.transformed()) << L.message();
  ASSERT_TRUE(L.Plan);
  EXPECT_TRUE(L.Plan->SmallLaunches);
  EXPECT_FALSE(L.Plan->Registers);
  EXPECT_EQ(2u, L.Stages);
  EXPECT_NE(std::string::npos, L.message().find("at most 16 warps per SM")) << L.message();
  EXPECT_NE(std::string::npos, L.message().find("per element")) << L.message();
  // The launch test, the pipeline, and the loop as it was for the rest, as one statement (the
  // loop is the body of an if without braces): the output parses, and its loop is the original's.
  const std::string &T = R.Rewritten;
  size_t If = T.find("%%nsmid"), Pipe = T.find("cuda::pipeline"), Else = T.find("\n    else\n"),
         Kept = T.find("in launches that fill the GPU, the loop as it was");
  ASSERT_NE(std::string::npos, If) << T;
  EXPECT_TRUE(If < Pipe && Pipe < Else && Else < Kept && Kept != std::string::npos) << T;
  EXPECT_NE(std::string::npos, T.find("auto &s = s_stages[0];")) << T;
  EXPECT_NE(std::string::npos, T.find("__shared__ float s_stages[2][256];")) << T;
  // The output parses, and draws no warning of Clang's about the else it adds.
  std::string Dir = tempDir();
  writeFile(Dir + "/rewritten.cu", T);
  ProcessResult Again = runTilepipe({"--quiet", Dir + "/rewritten.cu", "-o", Dir + "/again.cu"});
  EXPECT_EQ(0, Again.ExitCode) << Again.Err;
  EXPECT_EQ(std::string::npos, Again.Err.find("dangling")) << Again.Err;
  EXPECT_EQ(std::string::npos, Again.Err.find("error")) << Again.Err;

  // --plan=always: the pipeline in every launch.
  O.Plan = PlanPolicy::Always;
  FileResult A = runOnCode(SmallInnerCopy, O);
  ASSERT_TRUE(onlyLoop(A).Plan);
  EXPECT_FALSE(onlyLoop(A).Plan->SmallLaunches);
  EXPECT_EQ(std::string::npos, A.Rewritten.find("%%nsmid"));
}

TEST(Tuning, RoundTrip) {
  TuningEntry A;
  A.File = "testdata/matmul_classic.cu";
  A.Kernel = "matmul";
  A.Line = 61;
  A.Fingerprint = "0123456789abcdef";
  A.Gpu = "NVIDIA H200";
  A.Arch = "sm_90";
  A.Choice = *PlanChoice::parse("4:engine");
  A.Speedup = 1.31;
  TuningEntry B = A;
  B.Line = 90;
  B.Choice = *PlanChoice::parse("keep");
  std::string Text;
  llvm::raw_string_ostream(Text) << tuningJson({A, B});
  auto Back = parseTuning(Text, "t.json");
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  ASSERT_EQ(2u, Back->size());
  EXPECT_EQ("4:engine", (*Back)[0].Choice.str());
  EXPECT_EQ("keep", (*Back)[1].Choice.str());
  EXPECT_EQ(A.Fingerprint, (*Back)[0].Fingerprint);
  EXPECT_DOUBLE_EQ(1.31, (*Back)[0].Speedup);
  // Matched by the path's last components, function, line and architecture.
  EXPECT_EQ(&(*Back)[0], findTuning(*Back, "/src/proj/testdata/matmul_classic.cu", "matmul", 61, "sm_90"));
  EXPECT_EQ(nullptr, findTuning(*Back, "/src/proj/other/matmul_classic.cu", "matmul", 61, "sm_90"));
  EXPECT_EQ(nullptr, findTuning(*Back, "testdata/matmul_classic.cu", "matmul", 61, "sm_80"));
  EXPECT_EQ(nullptr, findTuning(*Back, "testdata/matmul_classic.cu", "matmul", 62, "sm_90"));
}

TEST(Tuning, BadFilesSayWhere) {
  auto Expect = [](const std::string &Text, const std::string &Part) {
    auto R = parseTuning(Text, "t.json");
    ASSERT_FALSE(bool(R));
    std::string Msg = llvm::toString(R.takeError());
    EXPECT_NE(std::string::npos, Msg.find("t.json: error:")) << Msg;
    EXPECT_NE(std::string::npos, Msg.find(Part)) << Msg;
  };
  Expect("{", "not a tuning file");
  Expect(R"({"tool": "tilepipe", "version": 1, "entries": []})", "tilepipe-tuning");
  Expect(R"({"tool": "tilepipe-tuning", "version": 2, "entries": []})", "version 2");
  Expect(R"({"tool": "tilepipe-tuning", "version": 1, "entries": [{"file": "a.cu"}]})", "entry 1");
  Expect(R"({"tool": "tilepipe-tuning", "version": 1, "entries": [{"file": "a.cu", "kernel": "k",
          "line": 3, "fingerprint": "x", "arch": "sm_90", "plan": "1:engine"}]})", "plan '1:engine'");
}

TEST(Tuning, EntryAppliesOnlyToTheTextMeasured) {
  ToolOptions O = defaultOptions();
  O.CheckLaunchResources = false;
  FileResult First = runOnCode(Matmul, O);
  const LoopRecord &L = onlyLoop(First);
  TuningEntry E;
  E.File = L.File;
  E.Kernel = L.Kernel;
  E.Line = L.Line;
  E.Fingerprint = L.Fingerprint;
  E.Gpu = "NVIDIA H200";
  E.Arch = O.GpuArch;
  E.Choice = *PlanChoice::parse("2:16-byte");
  E.Speedup = 1.2;
  O.Tuning = {E};
  // runOnCode writes a fresh file each time: the entry names that file by its last components.
  auto Run = [&](const std::string &Code, const TuningEntry &Entry) {
    std::string Dir = tempDir();
    std::string Path = Dir + "/" + llvm::sys::path::filename(L.File).str();
    writeFile(Path, Code);
    ToolOptions With = O;
    With.Tuning = {Entry};
    With.Tuning[0].File = Path;
    return runOnFile(Path, With);
  };
  FileResult Tuned = Run(Matmul, E);
  const LoopRecord &T = onlyLoop(Tuned);
  ASSERT_TRUE(T.transformed()) << T.message();
  EXPECT_EQ(2u, T.Stages);
  EXPECT_EQ("tuned", T.Plan->Source);
  EXPECT_NE(std::string::npos, T.message().find("the tuning file's plan 2:16-byte (measured 1.20x on NVIDIA H200)"))
      << T.message();

  // Keep: the file stays as it is.
  TuningEntry K = E;
  K.Choice = *PlanChoice::parse("keep");
  FileResult Kept = Run(Matmul, K);
  EXPECT_EQ("plan-kept", reasonInfo(onlyLoop(Kept).Code).Id.str());
  EXPECT_EQ(Kept.Original, Kept.Rewritten);

  // The loop's text changed since it was measured: the entry is ignored, with a remark.
  std::string Changed = Matmul;
  Changed.replace(Changed.find("acc += As"), 9, "acc -= As");
  FileResult Stale = Run(Changed, E);
  const LoopRecord &S = onlyLoop(Stale);
  EXPECT_NE("tuned", S.Plan ? S.Plan->Source : "");
  EXPECT_EQ(3u, S.Stages) << "the default stage count: " << S.message();
  EXPECT_NE(std::string::npos, S.message().find("entry for this loop was ignored: the loop's text changed"))
      << S.message();

  // A plan no longer legal (here: engine copies without the engine's mode) falls back to the model.
  TuningEntry Engine = E;
  Engine.Choice = *PlanChoice::parse("3:engine");
  O.Mode = CopyMode::Pipeline;
  FileResult Fallback = Run(Matmul, Engine);
  EXPECT_NE(std::string::npos, onlyLoop(Fallback).message().find("is not legal here"))
      << onlyLoop(Fallback).message();
}

} // namespace

// The static shared memory bound that stages are planned against: sizes, and padding only before a
// variable aligned more strictly than every size is a multiple of.
TEST(Plan, SharedBytesBoundPadsOnlyWhereAlignmentMay) {
  EXPECT_EQ(8192u, sharedBytesBound({{nullptr, 4096, 128}, {nullptr, 4096, 16}}));
  // 132 bytes: offsets are multiples of 4 only, and the 128-aligned array may need 124 before it.
  EXPECT_EQ(132u + 4096u + 124u, sharedBytesBound({{nullptr, 132, 4}, {nullptr, 4096, 128}}));
  // Three stages of two 8 KiB tiles are 48 KiB to the byte, and fit; beside one 4-byte variable
  // the stage arrays may be padded, and two stages fit.
  std::vector<std::optional<unsigned>> Exact = planStages({{8192, 8192}}, {}, {3});
  ASSERT_TRUE(Exact[0]);
  EXPECT_EQ(3u, *Exact[0]);
  std::vector<std::optional<unsigned>> Padded = planStages({{8192, 8192}}, {{nullptr, 4, 4}}, {3});
  ASSERT_TRUE(Padded[0]);
  EXPECT_EQ(2u, *Padded[0]);
  // Two loops share the function's memory: the one with the larger tiles is lowered first.
  std::vector<std::optional<unsigned>> Two = planStages({{16384}, {4096}}, {}, {3, 3});
  ASSERT_TRUE(Two[0] && Two[1]);
  EXPECT_EQ(2u, *Two[0]);
  EXPECT_EQ(3u, *Two[1]);
}

// The program as users run it: options, outputs, reports, compile databases and bad input.
#include "TestSupport.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include <atomic>
#include <cerrno>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <thread>
#include <unistd.h>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

std::string example() { return sourceDir() + "/testdata/matmul_guarded.cu"; }

/// A copy of a testdata file in a fresh folder, so tests may write beside it.
std::string copyOf(const std::string &Name, std::string *Dir = nullptr) {
  std::string D = tempDir();
  if (Dir)
    *Dir = D;
  std::string P = D + "/" + Name;
  writeFile(P, readFile(sourceDir() + "/testdata/" + Name));
  return P;
}

TEST(Cli, Version) {
  ProcessResult R = runTilepipe({"--version"});
  EXPECT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_NE(R.Out.find("tilepipe 0.1.0"), std::string::npos) << R.Out;
  EXPECT_NE(R.Out.find("clang version 22"), std::string::npos) << R.Out;
  EXPECT_NE(R.Out.find("CUDA 13"), std::string::npos) << R.Out;
}

TEST(Cli, OutputFileAndRemarks) {
  std::string Out = tempDir() + "/out.cu";
  ProcessResult R = runTilepipe({example(), "-o", Out});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_EQ(readFile(sourceDir() + "/generated/matmul_guarded.cu"), readFile(Out));
  llvm::Regex Remark("^.*matmul_guarded\\.cu:[0-9]+:[0-9]+: remark: \\[pipelined\\] rewritten into a "
                     "3-stage cp.async pipeline",
                     llvm::Regex::Newline);
  EXPECT_TRUE(Remark.match(R.Err)) << R.Err;
}

TEST(Cli, StdoutByDefault) {
  ProcessResult R = runTilepipe({"--quiet", example()});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_EQ(readFile(sourceDir() + "/generated/matmul_guarded.cu"), R.Out);
  EXPECT_EQ("", R.Err);
}

TEST(Cli, InPlaceKeepsPermissions) {
  std::string P = copyOf("dot_double_while.cu");
  llvm::sys::fs::setPermissions(P, llvm::sys::fs::perms(0640));
  ProcessResult R = runTilepipe({"--in-place", P});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_EQ(readFile(sourceDir() + "/generated/dot_double_while.cu"), readFile(P));
  auto Perms = llvm::sys::fs::getPermissions(P);
  ASSERT_TRUE(bool(Perms));
  EXPECT_EQ(0640, static_cast<int>(*Perms));
}

/// `tilepipe --diff` of Source, written at Rel in a fresh folder: git apply and patch -p1 must
/// both take the diff, and the file it patches must then be exactly what -o writes. Returns the
/// diff.
std::string checkDiffApplies(const std::string &Rel, const std::string &Source) {
  std::string Dir = tempDir();
  std::string P = Dir + "/" + Rel;
  llvm::sys::fs::create_directories(llvm::sys::path::parent_path(P));
  writeFile(P, Source);
  ProcessResult O = runTilepipe({"--quiet", Rel, "-o", Dir + "/expected.cu"}, Dir);
  EXPECT_EQ(0, O.ExitCode) << O.Err;
  EXPECT_NE(Source, readFile(Dir + "/expected.cu")) << Rel << ": nothing rewritten";
  ProcessResult D = runTilepipe({"--diff", "--quiet", Rel}, Dir);
  EXPECT_EQ(0, D.ExitCode) << D.Err;
  writeFile(Dir + "/change.diff", D.Out);
  ProcessResult G = runProgram("git", {"apply", "--check", "change.diff"}, Dir);
  EXPECT_EQ(0, G.ExitCode) << Rel << ": " << G.Err << "\n" << D.Out;
  ProcessResult Pt = runProgram("patch", {"-p1", "--dry-run", "-i", "change.diff"}, Dir);
  EXPECT_EQ(0, Pt.ExitCode) << Rel << ": " << Pt.Out << Pt.Err;
  ProcessResult Apply = runProgram("patch", {"-p1", "-i", "change.diff"}, Dir);
  EXPECT_EQ(0, Apply.ExitCode) << Rel << ": " << Apply.Out << Apply.Err;
  EXPECT_TRUE(readFile(Dir + "/expected.cu") == readFile(P)) << Rel << ": the patched file is not -o's";
  return D.Out;
}

/// Which of git and patch is missing, or "": a test without them checked nothing, and is skipped.
std::string missingGitOrPatch() {
  bool Git = !findTool("git").empty(), Patch = !findTool("patch").empty();
  return Git && Patch ? "" : Git ? "patch" : Patch ? "git" : "git and patch";
}

TEST(Cli, DiffAppliesWithGitAndPatch) {
  if (std::string Missing = missingGitOrPatch(); !Missing.empty())
    GTEST_SKIP() << Missing << " not found";
  // In a folder whose name has a space: the names in the header end in a tab, as git writes them.
  std::string Diff = checkDiffApplies("with space/complex_float2.cu",
                                      readFile(sourceDir() + "/testdata/complex_float2.cu"));
  EXPECT_NE(Diff.find("+++ b/with space/complex_float2.cu\t\n"), std::string::npos) << Diff;
}

// A file without a final newline: where a hunk reaches its last line, that line is marked as GNU
// diff marks it, on the side (old, new, or both) where it ends without a newline.
TEST(Cli, DiffOfAFileWithoutAFinalNewlineApplies) {
  if (std::string Missing = missingGitOrPatch(); !Missing.empty())
    GTEST_SKIP() << Missing << " not found";
  std::string Source = readFile(sourceDir() + "/testdata/complex_float2.cu");
  ASSERT_EQ('\n', Source.back());
  Source.pop_back();
  checkDiffApplies("complex_float2.cu", Source);
  // The loop rewritten is the file's last line: its old text and the new one both end the file.
  const std::string LastLine = "  for (int t = 0; t < nt; ++t) { s[threadIdx.x] = A[t * 64 + threadIdx.x]; __syncthreads(); "
                               "acc += s[63 - threadIdx.x]; __syncthreads(); } C[threadIdx.x] = acc; }";
  std::string Last = checkDiffApplies("last.cu", "__global__ void last(const float *A, float *C, int nt) {\n"
                                                 "  __shared__ float s[64];\n"
                                                 "  float acc = 0;\n" +
                                                     LastLine);
  EXPECT_NE(Last.find("\n-" + LastLine + "\n\\ No newline at end of file\n+"), std::string::npos) << Last;
  EXPECT_NE(Last.find("\n+ C[threadIdx.x] = acc; }\n\\ No newline at end of file\n"), std::string::npos) << Last;
}

TEST(Cli, JsonReport) {
  std::string Dir = tempDir();
  ProcessResult R = runTilepipe({"--quiet", "--report=" + Dir + "/r.json", "-o", Dir + "/o.cu",
                                 sourceDir() + "/testdata/neg_element_type.cu"});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  auto Json = llvm::json::parse(readFile(Dir + "/r.json"));
  ASSERT_TRUE(bool(Json)) << llvm::toString(Json.takeError());
  const llvm::json::Array *Loops = Json->getAsObject()->getArray("loops");
  ASSERT_TRUE(Loops);
  ASSERT_EQ(2u, Loops->size());
  for (const llvm::json::Value &V : *Loops) {
    const llvm::json::Object *O = V.getAsObject();
    EXPECT_EQ("element-type", O->getString("reason").value_or(""));
    EXPECT_EQ(false, O->getBoolean("transformed").value_or(true));
    EXPECT_TRUE(O->getInteger("line").has_value());
    EXPECT_TRUE(O->getString("kernel").has_value());
    EXPECT_TRUE(O->getString("file").has_value());
  }
  ProcessResult P = runTilepipe({"--quiet", "--report=" + Dir + "/p.json", "-o", Dir + "/p.cu",
                                 example()});
  auto J2 = llvm::json::parse(readFile(Dir + "/p.json"));
  ASSERT_TRUE(bool(J2));
  const llvm::json::Object *First = (*J2->getAsObject()->getArray("loops"))[0].getAsObject();
  EXPECT_EQ(true, First->getBoolean("transformed").value_or(false));
  EXPECT_EQ(3, First->getInteger("stages").value_or(0));
  EXPECT_EQ("matmul_guarded", First->getString("kernel").value_or(""));
}

TEST(Cli, CompileCommandsFromBuildDirectory) {
  // The kernel needs a macro and a header that only the compile command provides (nvcc spelling).
  std::string Dir = tempDir();
  llvm::sys::fs::create_directories(Dir + "/inc");
  llvm::sys::fs::create_directories(Dir + "/build");
  writeFile(Dir + "/inc/tile.h", "#define TILE 32\n");
  writeFile(Dir + "/k.cu", R"(#include "tile.h"
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[TILE * SCALE];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * TILE * SCALE + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
)");
  writeFile(Dir + "/build/compile_commands.json",
            "[{\"directory\": \"" + Dir + "/build\", \"file\": \"" + Dir +
                "/k.cu\", \"command\": \"/usr/local/cuda/bin/nvcc -I" + Dir +
                "/inc --define-macro SCALE=2 -O3 -arch=sm_80 -Xcompiler -fPIC -c " + Dir +
                "/k.cu -o k.o\"}]");
  // --plan=always: 256-byte stages, which the cost model would keep as they are.
  ProcessResult R = runTilepipe({"-p", Dir + "/build", "--plan=always", "--diff", Dir + "/k.cu"});
  EXPECT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_NE(R.Err.find("[pipelined]"), std::string::npos) << R.Err;
  EXPECT_NE(R.Out.find("s_stages[3][TILE * SCALE]"), std::string::npos) << R.Out;
  // Without the compile command the macro is missing: a parse error, and nothing is written.
  ProcessResult Bare = runTilepipe({Dir + "/k.cu", "-o", Dir + "/never.cu", "--"});
  EXPECT_NE(0, Bare.ExitCode);
  EXPECT_FALSE(llvm::sys::fs::exists(Dir + "/never.cu"));
}

/// A kernel with one tiled loop (at its line 4), 12 lines long; Scale multiplies each product,
/// Extra is added to its result.
std::string tiledKernel(const std::string &Name, const std::string &Scale = "(float)j",
                        const std::string &Extra = "0.f") {
  return "__global__ void " + Name + R"((const float *in, float *out, int n) {
  __shared__ float tile[256];
  float acc = 0.f;
  for (int t = 0; t < n; t += 256) {
    tile[threadIdx.x] = in[blockIdx.x * n + t + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < 256; ++j)
      acc += tile[j] * )" + Scale + R"(;
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc + )" + Extra + R"(;
}
)";
}

// An error Clang recovers from outside every function can change what any function means: every
// loop stays, the file is still written (unchanged), and the exit status is 0.
TEST(Cli, ParseErrorOutsideFunctionsKeepsEveryLoop) {
  std::string Dir = tempDir();
  writeFile(Dir + "/k.cu", "__constant__ float Scale = min(2, 3);\n" + tiledKernel("k", "Scale"));
  ProcessResult R = runTilepipe({"--plan=always", "--report=" + Dir + "/r.json", Dir + "/k.cu", "-o", Dir + "/o.cu"});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_NE(R.Err.find("k.cu:1:"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("k.cu:5:3: remark: [parse-error-nearby]"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("outside every function"), std::string::npos) << R.Err;
  EXPECT_EQ(readFile(Dir + "/k.cu"), readFile(Dir + "/o.cu"));
  ProcessResult All = runTilepipe({"--plan=always", "--require-all", Dir + "/k.cu", "-o", Dir + "/o2.cu"});
  EXPECT_EQ(1, All.ExitCode) << All.Err;
}

// An error in host code hides what that code does: a kernel it names, through a macro too, keeps
// its loops; a kernel it does not name is rewritten.
TEST(Cli, ParseErrorInCodeThatNamesAKernel) {
  std::string Dir = tempDir();
  writeFile(Dir + "/k.cu", tiledKernel("named") + tiledKernel("apart") +
                               "#define THE_KERNEL named\n"
                               "void launch(const float *in, float *out, int n) {\n"
                               "  auto f = THE_KERNEL;\n"
                               "  f<<<1, 256>>>(in, out, undeclared_count);\n}\n");
  ProcessResult R = runTilepipe({"--plan=always", "--check-launch-resources=false", Dir + "/k.cu", "-o", Dir + "/o.cu"});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_NE(R.Err.find("k.cu:4:3: remark: [parse-error-nearby]"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("which names 'named' through a macro"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("k.cu:16:3: remark: [pipelined]"), std::string::npos) << R.Err;
}

// An error inside one kernel keeps that kernel's loops only, though one host function launches
// both: the other kernel runs apart from it. A builtin both read (INFINITY is __builtin_inff) is
// no name of the kernel's.
TEST(Cli, ParseErrorInAnotherKernelOfTheSameLauncher) {
  std::string Dir = tempDir();
  writeFile(Dir + "/k.cu", tiledKernel("broken", "(float)j", "undeclared_bias") +
                               tiledKernel("fine", "(float)j", "(acc < INFINITY ? 0.f : 1.f)") +
                               "void both(const float *in, float *out, int n) {\n"
                               "  broken<<<1, 256>>>(in, out, n);\n  fine<<<1, 256>>>(in, out, n);\n}\n"
                               "int bad_host(float x) { return x < INFINITY ? undeclared_host : 0; }\n");
  ProcessResult R = runTilepipe({"--plan=always", "--check-launch-resources=false", Dir + "/k.cu", "-o", Dir + "/o.cu"});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_NE(R.Err.find("k.cu:4:3: remark: [parse-error-nearby]"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("k.cu:16:3: remark: [pipelined]"), std::string::npos) << R.Err;
}

// A function with an error that names a function the loop's analysis reads leaves the loop alone,
// unless Clang parsed that name into a reference of other declarations, with every overload the
// name finds there, and nothing the error may have lost (a using-directive, argument-dependent
// lookup at an instantiation) can make it mean the one the analysis reads.
TEST(Cli, ParseErrorNamesResolvedElsewhere) {
  const std::string Prefix =
      "namespace a { __device__ float scale(int j) { return j * 0.5f; } __device__ float scale(float j) { return j; } }\n"
      "namespace b { __device__ float scale(int j) { return j * 2.f; } }\n"
      "__device__ float scale(double d) { return (float)d; } "
      "namespace c { inline namespace v1 { __device__ float shift(int j) { return j + 1.f; } } "
      "__device__ float shift(float j) { return j; } } "
      "namespace { __device__ float lift(int j) { return j + 2.f; } } __device__ float lift(float j) { return j; }\n";
  const std::string Fine = tiledKernel("fine", "a::scale(j) * c::shift(j) * lift(j)"); // its loop at line 7
  struct Case {
    std::string Broken;
    bool Rewritten;
  } Cases[] = {
      {tiledKernel("broken", "b::scale(j)", "undeclared_bias"), true},
      {tiledKernel("broken", "::scale(1.0)", "undeclared_bias"), true},
      // Another overload of the name the analysis reads.
      {tiledKernel("broken", "a::scale(1.5f)", "undeclared_bias"), false},
      // An overload in an inline namespace of the one Clang chose from.
      {tiledKernel("broken", "c::shift(1.5f)", "undeclared_bias"), false},
      // An overload in an anonymous namespace, which unqualified lookup finds beside the one chosen.
      {tiledKernel("broken", "lift(1.5f)", "undeclared_bias"), false},
      // A using-directive the error may have lost would let the name find a's.
      {tiledKernel("broken", "(b::scale(j) + [] { using namespace b; return 0.f; }())", "undeclared_bias"), false},
      // Argument-dependent lookup at an instantiation may find any namespace's.
      {"template <typename T> __device__ float twice(T x) { return scale(x) + undeclared_bias; }\n", false},
      // Named in a macro's text: the same text may stand where the error lost it.
      {"#define SCALE_OF(j) b::scale(j)\n" + tiledKernel("broken", "SCALE_OF(j)", "undeclared_bias"), false},
  };
  for (const Case &C : Cases) {
    std::string Dir = tempDir();
    writeFile(Dir + "/k.cu", Prefix + Fine + C.Broken);
    ProcessResult R = runTilepipe({"--plan=always", "--check-launch-resources=false", Dir + "/k.cu", "-o", Dir + "/o.cu"});
    ASSERT_EQ(0, R.ExitCode) << R.Err;
    EXPECT_NE(R.Err.find(C.Rewritten ? "k.cu:7:3: remark: [pipelined]" : "k.cu:7:3: remark: [parse-error-nearby]"),
              std::string::npos)
        << C.Broken << "\n" << R.Err;
  }
}

// nvcc declares host overloads of min and max, and so does tilepipe's parse: host code that
// launches a kernel with them is no error, and the kernel's loop is rewritten.
TEST(Cli, HostMinAndMaxAsNvccDeclaresThem) {
  std::string Dir = tempDir();
  writeFile(Dir + "/k.cu", tiledKernel("k") + R"(void launch(const float *in, float *out, int n, int blocks, long most) {
  k<<<(unsigned)min((long)blocks, most), max(256, 1)>>>(in, out, n);
}
)");
  ProcessResult R = runTilepipe({"--plan=always", "--check-launch-resources=false", Dir + "/k.cu", "-o", Dir + "/o.cu"});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_EQ(R.Err.find("warning"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("k.cu:4:3: remark: [pipelined]"), std::string::npos) << R.Err;
}

// The cache-operator stores and loads that nvcc declares and Clang's headers lack (__stcs, __stcg,
// __stwb, __ldca, __ldlu, on vectors too), and `register`, which nvcc takes under C++17: a
// function that uses them is no error, and the loop of the kernel that calls it is rewritten. A
// loop that calls them itself is judged by what they do, as the toolkit's: a streaming store
// through a pointer that may overlap the copied data refuses it as a plain store would, not as
// an error or unknown code.
TEST(Cli, CacheOperatorsAndRegisterAsNvccTakesThem) {
  std::string Dir = tempDir();
  writeFile(Dir + "/k.cu", tiledKernel("k") + R"(__device__ void put(float4 *p, float4 v, float *q) {
  register int i = 0;
  __stcs(p, v);
  __stcg(q + i, __ldca(q + 1));
  __stwb(q + 2, __ldlu(q + 3));
}
__global__ void after(float4 *p, float *q) { put(p, make_float4(0, 0, 0, 0), q); }
__global__ void streams(const float *__restrict__ in, float4 *out, int n) {
  __shared__ float s[64];
  for (int t = 0; t < n; ++t) {
    s[threadIdx.x] = in[t * 64 + threadIdx.x];
    __syncthreads();
    __stcs(out + t * 64 + threadIdx.x, make_float4(s[threadIdx.x], 0, 0, 0));
    __syncthreads();
  }
}
void launch(const float *in, float *out, int n) { k<<<1, 64>>>(in, out, n); }
)");
  ProcessResult R = runTilepipe({"--plan=always", "--check-launch-resources=false", Dir + "/k.cu", "-o", Dir + "/o.cu"});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_EQ(R.Err.find("warning"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("k.cu:4:3: remark: [pipelined]"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("k.cu:22:3: remark: [store-may-alias]"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("'__stcs(out + t * 64"), std::string::npos) << R.Err;
}

// CCCL's __shared__ barrier and pipeline state, which nvcc builds and Clang on its own rejects (their
// destructors are not empty), parse as tilepipe reads CCCL: no warning, and the loop of the kernel
// that declares them is analysed as any other (rewritten here), not parse-error-nearby. A __shared__
// object of the user's with a destructor that is not empty is still Clang's error.
TEST(Cli, CcclSharedBarriersParse) {
  const std::string Head = "#include <cuda/barrier>\n#include <cuda/pipeline>\n";
  const std::string Objects = "  __shared__ cuda::barrier<cuda::thread_scope_block> bar;\n"
                              "  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 2> state;\n"
                              "  if (threadIdx.x == 0) init(&bar, blockDim.x);\n"
                              "  (void)state;\n";
  std::string Kernel = tiledKernel("k");
  std::string WithObjects = Kernel;
  WithObjects.insert(WithObjects.find("  __shared__ float tile"), Objects); // the loop at line 7 of the kernel
  std::string Dir = tempDir();
  writeFile(Dir + "/k.cu", Head + WithObjects);
  ProcessResult R = runTilepipe({"--plan=always", "--check-launch-resources=false", Dir + "/k.cu", "-o", Dir + "/o.cu"});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_EQ(R.Err.find("warning"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("k.cu:10:3: remark: [pipelined]"), std::string::npos) << R.Err;
  std::string Own = "struct Tracked { __device__ ~Tracked() { ++count; } int count; };\n";
  std::string WithOwn = Kernel;
  WithOwn.insert(WithOwn.find("  __shared__ float tile"), "  __shared__ Tracked mine;\n");
  writeFile(Dir + "/u.cu", Head + Own + WithOwn);
  ProcessResult U = runTilepipe({"--plan=always", "--check-launch-resources=false", Dir + "/u.cu", "-o", Dir + "/o.cu"});
  ASSERT_EQ(0, U.ExitCode) << U.Err;
  EXPECT_NE(U.Err.find("initialization is not supported for __shared__ variables"), std::string::npos) << U.Err;
  EXPECT_NE(U.Err.find("u.cu:8:3: remark: [parse-error-nearby]"), std::string::npos) << U.Err;
}

// A parse Clang cannot go on from fails the file, prints Clang's error at its place, writes no
// output, and the report says which file failed and why.
TEST(Cli, FatalParseErrorIsReported) {
  std::string Dir = tempDir();
  writeFile(Dir + "/k.cu", "#include \"missing_tiles.h\"\n__global__ void k() {}\n");
  ProcessResult R = runTilepipe({"--report=" + Dir + "/r.json", Dir + "/k.cu", "-o", Dir + "/o.cu"});
  EXPECT_EQ(1, R.ExitCode);
  EXPECT_NE(R.Err.find("k.cu:1:10: error: 'missing_tiles.h' file not found"), std::string::npos) << R.Err;
  EXPECT_FALSE(llvm::sys::fs::exists(Dir + "/o.cu"));
  auto Json = llvm::json::parse(readFile(Dir + "/r.json"));
  ASSERT_TRUE(bool(Json)) << readFile(Dir + "/r.json");
  const llvm::json::Object &File = *(*Json->getAsObject()->getArray("files"))[0].getAsObject();
  EXPECT_EQ(false, File.getBoolean("ok").value_or(true));
  EXPECT_NE(File.getString("error").value_or("").find("missing_tiles.h"), llvm::StringRef::npos);
}

// A compile command with relative names (as make-based builds record them): the headers it
// includes are rewritten where they are, and the depfile names them, wherever tilepipe runs.
TEST(Cli, RelativeNamesOfTheCompileCommand) {
  std::string Dir = tempDir();
  llvm::sys::fs::create_directories(Dir + "/proj/inc");
  llvm::sys::fs::create_directories(Dir + "/elsewhere/inc");
  std::string Header = R"(__global__ void k(const float *in, float *out, int n) {
  __shared__ float tile[64];
  float acc = 0.f;
  for (int t = 0; t < n; t += 64) {
    tile[threadIdx.x] = in[blockIdx.x * n + t + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < 64; ++j)
      acc += tile[j] * (float)j;
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
)";
  writeFile(Dir + "/proj/inc/k.cuh", Header);
  writeFile(Dir + "/proj/main.cu", "#include \"k.cuh\"\n");
  writeFile(Dir + "/proj/compile_commands.json",
            "[{\"directory\": \"" + Dir + "/proj\", \"file\": \"main.cu\", \"command\": "
            "\"nvcc -Iinc -arch=sm_80 -c main.cu -o main.o\"}]");
  ProcessResult D = runTilepipe({"-p", Dir + "/proj", "--plan=always", "--check-launch-resources=false",
                                 Dir + "/proj/main.cu", "-o", Dir + "/out.cu", "--depfile=" + Dir + "/out.d"},
                                Dir + "/elsewhere");
  ASSERT_EQ(0, D.ExitCode) << D.Err;
  std::string Deps = readFile(Dir + "/out.d");
  EXPECT_NE(Deps.find(Dir + "/proj/inc/k.cuh"), std::string::npos) << Deps;
  EXPECT_NE(Deps.find(Dir + "/proj/main.cu"), std::string::npos) << Deps;
  ProcessResult R = runTilepipe({"-p", Dir + "/proj", "--plan=always", "--check-launch-resources=false",
                                 "--in-place", Dir + "/proj/main.cu"},
                                Dir + "/elsewhere");
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_NE(readFile(Dir + "/proj/inc/k.cuh"), Header) << R.Err;
  EXPECT_FALSE(llvm::sys::fs::exists(Dir + "/elsewhere/inc/k.cuh"));
}

// nvcc's long options with '=' mean what the short ones do; options that change what the
// preprocessor reads and that tilepipe cannot follow make the file an error, never a guess.
TEST(Cli, CompileCommandOptionsAreFollowedOrRefused) {
  std::string Dir = tempDir();
  llvm::sys::fs::create_directory(Dir + "/build");
  writeFile(Dir + "/k.cu", R"(__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    acc += s[63 - threadIdx.x];
#ifdef TOUCH_NEXT
    A[(t + 1) * 64 + threadIdx.x] = acc;
#endif
    __syncthreads();
  }
  C[threadIdx.x] = acc;
}
)");
  auto Db = [&](const std::string &Flags) {
    writeFile(Dir + "/build/compile_commands.json",
              "[{\"directory\": \"" + Dir + "/build\", \"file\": \"" + Dir +
                  "/k.cu\", \"command\": \"/usr/local/cuda/bin/nvcc " + Flags + " -c " + Dir +
                  "/k.cu -o k.o\"}]");
  };
  Db("--define-macro=TOUCH_NEXT -Xcompiler=-fPIC");
  ProcessResult Defined = runTilepipe({"-p", Dir + "/build", "--plan=always", "--report=-", Dir + "/k.cu",
                                       "-o", Dir + "/o.cu"});
  EXPECT_EQ(0, Defined.ExitCode) << Defined.Err;
  EXPECT_NE(Defined.Out.find("\"store-aliases-load\""), std::string::npos) << Defined.Out;
  for (const char *Flags : {"--options-file more.txt", "-Xcompiler -DTOUCH_NEXT", "@more.rsp"}) {
    Db(Flags);
    ProcessResult R = runTilepipe({"-p", Dir + "/build", Dir + "/k.cu", "-o", Dir + "/never.cu"});
    EXPECT_NE(0, R.ExitCode) << Flags;
    EXPECT_NE(R.Err.find("tilepipe cannot follow it"), std::string::npos) << R.Err;
    EXPECT_FALSE(llvm::sys::fs::exists(Dir + "/never.cu"));
  }
}

// A report never replaces an input, and two outputs never share a file.
TEST(Cli, OutputsLandOnNoInputAndNoOtherOutput) {
  std::string Dir;
  std::string P = copyOf("dot_double_while.cu", &Dir);
  std::string Before = readFile(P);
  for (std::vector<std::string> Args :
       {std::vector<std::string>{"--in-place", "--report=" + P, P},
        {"--export-fixes=" + P, "-o", Dir + "/o.cu", P},
        {"--sarif=" + Dir + "/./o.cu", "-o", Dir + "/o.cu", P}}) {
    ProcessResult R = runTilepipe(Args);
    EXPECT_EQ(1, R.ExitCode) << R.Err;
    EXPECT_NE(R.Err.find("name"), std::string::npos) << R.Err;
    EXPECT_EQ(Before, readFile(P));
    EXPECT_FALSE(llvm::sys::fs::exists(Dir + "/o.cu"));
  }
}

// LLVM has an option named stats-json of its own: ours is --stats-json in every form an option
// takes, and every message and --help name it so, never by a name of tilepipe's making.
TEST(Cli, StatsJsonIsNamedAsUsersWriteIt) {
  std::string Dir;
  std::string P = copyOf("dot_double_while.cu", &Dir);
  ProcessResult OnInput = runTilepipe({"--quiet", "--stats-json=" + P, P, "-o", Dir + "/o.cu"});
  EXPECT_EQ(1, OnInput.ExitCode);
  EXPECT_NE(OnInput.Err.find("--stats-json names the input file"), std::string::npos) << OnInput.Err;
  ProcessResult NoValue = runTilepipe({"--quiet", P, "-o", Dir + "/o.cu", "--stats-json"});
  EXPECT_EQ(1, NoValue.ExitCode);
  EXPECT_NE(NoValue.Err.find("--stats-json option: requires a value"), std::string::npos) << NoValue.Err;
  ProcessResult Help = runTilepipe({"--help"});
  EXPECT_EQ(0, Help.ExitCode);
  EXPECT_NE(Help.Out.find("--stats-json=<file.json>"), std::string::npos) << Help.Out;
  for (const ProcessResult *R : {&OnInput, &NoValue, &Help})
    EXPECT_EQ(std::string::npos, (R->Out + R->Err).find("tilepipe-stats-json")) << R->Out << R->Err;
  // With a space before the file, as any option with a value.
  ProcessResult Spaced = runTilepipe({"--quiet", "--stats-json", Dir + "/stats.json", P, "-o", Dir + "/o.cu"});
  EXPECT_EQ(0, Spaced.ExitCode) << Spaced.Err;
  EXPECT_NE(readFile(Dir + "/stats.json").find("\"files\": 1"), std::string::npos);
}

// --help says what the default plan gives a loop: the register-staged prefetch too, which the
// cost model chooses for most loops a pipeline would not speed up.
TEST(Cli, HelpSaysWhatTheCostModelPlans) {
  ProcessResult R = runTilepipe({"--help"});
  EXPECT_EQ(0, R.ExitCode) << R.Err;
  size_t Model = R.Out.find("=model");
  ASSERT_NE(Model, std::string::npos) << R.Out;
  std::string Line = R.Out.substr(Model, R.Out.find('\n', Model) - Model);
  EXPECT_NE(Line.find("register-staged prefetch"), std::string::npos) << Line;
}

TEST(Cli, AssumeNoAliasIsAnOptIn) {
  // C may be A: nothing in the source says otherwise, so only the option rewrites the loop.
  std::string Dir = tempDir();
  std::string In = Dir + "/k.cu";
  writeFile(In, R"(__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[t * 64 + threadIdx.x];
    __syncthreads();
    C[t * 64 + threadIdx.x] = s[63 - threadIdx.x];
    __syncthreads();
  }
}
)");
  ProcessResult Default = runTilepipe({"--quiet", "--report=-", In, "-o", Dir + "/o.cu"});
  EXPECT_EQ(0, Default.ExitCode) << Default.Err;
  EXPECT_NE(Default.Out.find("\"store-may-alias\""), std::string::npos) << Default.Out;
  ProcessResult Assume =
      runTilepipe({"--quiet", "--assume-noalias", "--plan=always", "--report=-", In, "-o", Dir + "/o.cu"});
  EXPECT_EQ(0, Assume.ExitCode) << Assume.Err;
  EXPECT_NE(Assume.Out.find("\"transformed\": true"), std::string::npos) << Assume.Out;
}

// Outputs that are not regular files: written where they are, never replaced by a regular file;
// a failed write is an error.

/// The file type of Path itself (a link is not followed).
mode_t typeOf(const std::string &Path) {
  struct stat St;
  return lstat(Path.c_str(), &St) ? 0 : (St.st_mode & S_IFMT);
}

/// A character device that fails every write with ENOSPC, like /dev/full: made in a temporary
/// folder where this user may make devices (so that no test ever risks the system's own), else
/// /dev/full itself.
std::string fullDevice() {
  std::string P = tempDir() + "/full";
  if (mknod(P.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0)
    return P;
  return "/dev/full";
}

TEST(CliOutputs, WriteErrorOnADeviceIsReportedForEveryOutput) {
  std::string Full = fullDevice();
  std::string Dir = tempDir();
  for (std::vector<std::string> Opt :
       {std::vector<std::string>{"-o", Full}, {"-o", Dir + "/o.cu", "--depfile=" + Full},
        {"--report=" + Full}, {"--sarif=" + Full}, {"--export-fixes=" + Full},
        {"--stats-json=" + Full}}) {
    std::vector<std::string> Args = {"--quiet", example()};
    Args.insert(Args.end(), Opt.begin(), Opt.end());
    if (Opt[0] != "-o")
      Args.insert(Args.end(), {"-o", Dir + "/o.cu"});
    ProcessResult R = runTilepipe(Args);
    EXPECT_NE(0, R.ExitCode) << Opt[0];
    EXPECT_NE(R.Err.find(Full + ": error: cannot write: No space left on device"), std::string::npos)
        << Opt[0] << ": " << R.Err;
    EXPECT_EQ(mode_t(S_IFCHR), typeOf(Full)) << Opt[0] << ": the device was replaced";
  }
}

TEST(CliOutputs, FifoIsWrittenThrough) {
  std::string Dir = tempDir();
  std::string Fifo = Dir + "/pipe";
  ASSERT_EQ(0, mkfifo(Fifo.c_str(), 0600));
  // Read the fifo while tilepipe runs; the reader never blocks, so a tool that replaces the fifo
  // instead of writing into it makes the test fail, not hang.
  int Fd = open(Fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(Fd, 0);
  std::atomic<bool> Done{false};
  ProcessResult R;
  std::thread Run([&] {
    R = runTilepipe({"--quiet", example(), "-o", Fifo});
    Done = true;
  });
  std::string Got;
  char Buf[65536];
  for (;;) {
    bool Finished = Done;
    ssize_t N = read(Fd, Buf, sizeof Buf);
    if (N > 0)
      Got.append(Buf, N);
    else if (N == 0 && Finished)
      break;
    else
      usleep(10000);
  }
  Run.join();
  close(Fd);
  EXPECT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_EQ(mode_t(S_IFIFO), typeOf(Fifo)) << "the fifo was replaced";
  EXPECT_TRUE(readFile(sourceDir() + "/generated/matmul_guarded.cu") == Got) << Got.size() << " bytes";
}

TEST(CliOutputs, StdoutUnderAnotherName) {
  // /proc/self/fd/1, and a link to it (what /dev/stdout is), with stdout a file and a pipe: the
  // report goes where stdout goes, after what is already there, and the link stays a link.
  std::string Dir = tempDir();
  std::string Link = Dir + "/stdout";
  ASSERT_EQ(0, symlink("/proc/self/fd/1", Link.c_str()));
  for (const std::string &Name : {std::string("/proc/self/fd/1"), Link}) {
    ProcessResult R = runTilepipe({"--quiet", "--report=" + Name, example()});
    EXPECT_EQ(0, R.ExitCode) << R.Err;
    std::string Source = readFile(sourceDir() + "/generated/matmul_guarded.cu");
    EXPECT_EQ(0u, R.Out.find(Source)) << Name << ": the rewritten source first";
    EXPECT_NE(R.Out.find("\"transformed\": true", Source.size()), std::string::npos)
        << Name << ": then the report";
    EXPECT_EQ(mode_t(S_IFLNK), typeOf(Link));
  }
  ProcessResult P = runProgram("/bin/sh", {"-c", "(\"$0\" --quiet --report=\"$1\" -o \"$2\" \"$3\"; echo \"exit $?\" >&2) | cat",
                                          TILEPIPE_BINARY, Link, Dir + "/o.cu", example()});
  EXPECT_NE(P.Err.find("exit 0"), std::string::npos) << P.Err;
  EXPECT_NE(P.Out.find("\"transformed\": true"), std::string::npos) << P.Out << P.Err;
  EXPECT_EQ(mode_t(S_IFLNK), typeOf(Link));
}

TEST(CliOutputs, InPlaceThroughASymlinkRewritesItsTarget) {
  std::string Dir;
  std::string Real = copyOf("dot_double_while.cu", &Dir);
  llvm::sys::fs::create_directories(Dir + "/sub");
  std::string Link = Dir + "/sub/link.cu";
  ASSERT_EQ(0, symlink("../dot_double_while.cu", Link.c_str()));
  llvm::sys::fs::setPermissions(Real, llvm::sys::fs::perms(0640));
  ProcessResult R = runTilepipe({"--quiet", "--in-place", Link});
  ASSERT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_EQ(mode_t(S_IFLNK), typeOf(Link)) << "the link was replaced";
  EXPECT_TRUE(readFile(sourceDir() + "/generated/dot_double_while.cu") == readFile(Real));
  EXPECT_EQ(0640, static_cast<int>(*llvm::sys::fs::getPermissions(Real)));
  // Nothing left behind in either folder.
  std::error_code EC;
  for (const std::string &D : {Dir, Dir + "/sub"})
    for (llvm::sys::fs::directory_iterator It(D, EC), End; It != End && !EC; It.increment(EC))
      EXPECT_TRUE(It->path() == Real || It->path() == Link || It->path() == Dir + "/sub") << It->path();
}

TEST(CliOutputs, InPlaceRefusesAReadOnlyFile) {
  // As clang-format -i does; root could write it, so the mode bits decide.
  std::string Dir;
  std::string P = copyOf("dot_double_while.cu", &Dir);
  llvm::sys::fs::setPermissions(P, llvm::sys::fs::perms(0444));
  ProcessResult R = runTilepipe({"--quiet", "--in-place", P});
  EXPECT_NE(0, R.ExitCode);
  EXPECT_NE(R.Err.find(P + ": error: cannot write: the file is read-only"), std::string::npos) << R.Err;
  EXPECT_TRUE(readFile(sourceDir() + "/testdata/dot_double_while.cu") == readFile(P));
  EXPECT_EQ(0444, static_cast<int>(*llvm::sys::fs::getPermissions(P)));
  // The other files of the run are still rewritten.
  std::string Other = Dir + "/complex_float2.cu";
  writeFile(Other, readFile(sourceDir() + "/testdata/complex_float2.cu"));
  ProcessResult Two = runTilepipe({"--quiet", "--in-place", P, Other});
  EXPECT_NE(0, Two.ExitCode);
  EXPECT_TRUE(readFile(sourceDir() + "/generated/complex_float2.cu") == readFile(Other));
}

TEST(CliOutputs, CrlfSourcesStayCrlf) {
  for (const char *Name : {"matmul_classic.cu", "complex_float2.cu", "guarded_tiles.cu"}) {
    std::string Dir = tempDir();
    std::string Lf = readFile(sourceDir() + "/testdata/" + Name), Crlf;
    for (char C : Lf)
      Crlf += C == '\n' ? std::string("\r\n") : std::string(1, C);
    writeFile(Dir + "/" + Name, Crlf);
    ProcessResult R = runTilepipe({"--quiet", Dir + "/" + Name, "-o", Dir + "/out.cu"});
    ASSERT_EQ(0, R.ExitCode) << R.Err;
    std::string Out = readFile(Dir + "/out.cu");
    ASSERT_FALSE(Out.empty());
    EXPECT_EQ('\n', Out.back()) << Name;
    unsigned Line = 1, Bad = 0;
    for (size_t I = 0; I < Out.size(); ++I)
      if (Out[I] == '\n') {
        if (I == 0 || Out[I - 1] != '\r')
          if (++Bad < 5)
            ADD_FAILURE() << Name << ": line " << Line << " ends in a bare LF";
        ++Line;
      }
    EXPECT_EQ(0u, Bad) << Name;
    // The same rewrite as the file with LF line endings, line by line.
    std::string Back;
    for (size_t I = 0; I < Out.size(); ++I)
      if (!(Out[I] == '\r' && I + 1 < Out.size() && Out[I + 1] == '\n'))
        Back += Out[I];
    EXPECT_TRUE(readFile(sourceDir() + "/generated/" + Name) == Back) << Name;
    // Running on its own output changes nothing.
    ProcessResult Again = runTilepipe({"--quiet", Dir + "/out.cu", "-o", Dir + "/again.cu"});
    ASSERT_EQ(0, Again.ExitCode) << Again.Err;
    EXPECT_TRUE(Out == readFile(Dir + "/again.cu")) << Name;
  }
}

// Bad input: a clear message, a non-zero exit, and nothing written.

TEST(CliErrors, MissingFile) {
  std::string Dir = tempDir();
  ProcessResult R = runTilepipe({Dir + "/nope.cu", "-o", Dir + "/out.cu"});
  EXPECT_NE(0, R.ExitCode);
  EXPECT_NE(R.Err.find("nope.cu"), std::string::npos) << R.Err;
  EXPECT_FALSE(llvm::sys::fs::exists(Dir + "/out.cu"));
}

TEST(CliErrors, NotCuda) {
  std::string Dir = tempDir();
  writeFile(Dir + "/x.c", "int main(void) { return 0; }\n");
  ProcessResult R = runTilepipe({Dir + "/x.c", "-o", Dir + "/out.cu"});
  EXPECT_NE(0, R.ExitCode);
  EXPECT_NE(R.Err.find("not a CUDA source"), std::string::npos) << R.Err;
  EXPECT_FALSE(llvm::sys::fs::exists(Dir + "/out.cu"));
}

// An error Clang recovers from is said at its place (as a warning: nvcc may build the file); the
// file, with nothing to rewrite, stays as it is.
TEST(CliErrors, ParseErrorLeavesFileUntouched) {
  std::string Dir = tempDir();
  std::string Bad = "__global__ void k(float *a) {\n  a[0] = undeclared;\n}\n";
  writeFile(Dir + "/bad.cu", Bad);
  ProcessResult R = runTilepipe({"--in-place", Dir + "/bad.cu"});
  EXPECT_EQ(0, R.ExitCode) << R.Err;
  EXPECT_NE(R.Err.find("bad.cu:2:10: warning: use of undeclared identifier 'undeclared'"), std::string::npos) << R.Err;
  EXPECT_EQ(Bad, readFile(Dir + "/bad.cu"));
}

TEST(CliErrors, OneBadFileIsReportedAndTheOthersGoOn) {
  std::string Dir;
  std::string Good = copyOf("dot_double_while.cu", &Dir);
  std::string Bad = "#include \"no_such_header.h\"\n__global__ void k() {}\n";
  writeFile(Dir + "/bad.cu", Bad);
  ProcessResult R = runTilepipe({"--in-place", Good, Dir + "/bad.cu"});
  EXPECT_NE(0, R.ExitCode);
  EXPECT_NE(R.Err.find("bad.cu:1:10: error"), std::string::npos) << R.Err;
  EXPECT_NE(R.Err.find("2 file(s) (1 failed)"), std::string::npos) << R.Err;
  EXPECT_EQ(readFile(sourceDir() + "/generated/dot_double_while.cu"), readFile(Good));
  EXPECT_EQ(Bad, readFile(Dir + "/bad.cu"));
  // With --require-all nothing at all is written.
  std::string Dir2;
  std::string Good2 = copyOf("dot_double_while.cu", &Dir2);
  writeFile(Dir2 + "/bad.cu", Bad);
  EXPECT_NE(0, runTilepipe({"--in-place", "--require-all", Good2, Dir2 + "/bad.cu"}).ExitCode);
  EXPECT_EQ(readFile(sourceDir() + "/testdata/dot_double_while.cu"), readFile(Good2));
}

TEST(CliErrors, UnwritableOutput) {
  ProcessResult R = runTilepipe({"--quiet", example(), "-o", "/nonexistent-dir/sub/out.cu"});
  EXPECT_NE(0, R.ExitCode);
  EXPECT_NE(R.Err.find("cannot write"), std::string::npos) << R.Err;
}

TEST(CliErrors, BadOptions) {
  EXPECT_NE(0, runTilepipe({"--stages=9", example()}).ExitCode);
  EXPECT_NE(0, runTilepipe({"--stages=1", example()}).ExitCode);
  EXPECT_NE(0, runTilepipe({"--mode=warp-specialized", example()}).ExitCode);
  EXPECT_NE(0, runTilepipe({"--no-such-option", example()}).ExitCode);
  ProcessResult Two = runTilepipe({example(), example(), "-o", tempDir() + "/x.cu"});
  EXPECT_NE(0, Two.ExitCode);
  EXPECT_NE(Two.Err.find("-o takes exactly one input"), std::string::npos) << Two.Err;
  ProcessResult Cuda = runTilepipe({"--cuda-path=/nonexistent", example()});
  EXPECT_NE(0, Cuda.ExitCode);
  EXPECT_NE(Cuda.Err.find("--cuda-path=/nonexistent"), std::string::npos) << Cuda.Err;
}

} // namespace

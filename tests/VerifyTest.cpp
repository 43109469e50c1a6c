// tilepipe verify: spec parsing and its errors, the generated driver's comparison (a planted
// difference must be caught), its floors (compute-only and memory, the larger bounds), the build
// that survives a compute-only variant that does not build, and the no-GPU path (built, nothing
// ran, exit 77, never a pass).
#include "TestSupport.h"
#include "tilepipe/Driver.h"
#include "tilepipe/Spec.h"
#include "tilepipe/Verify.h"
#include "llvm/Support/FileSystem.h"
#include <cmath>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

/// The start of a spec for Kernel, launched with blocks of 128 threads over `blocks` blocks, whose
/// first parameter is the input A of `nt` tiles of 128 floats a block.
std::string tileSpecHead(const std::string &Kernel) {
  return "kernels:\n  - kernel: " + Kernel +
         "\n    grid: dim3(blocks)\n    block: dim3(128)\n    params:\n      - buffer: A\n        type: float\n"
         "        count: blocks * nt * 128\n        dir: in\n";
}

/// The rest of that spec: the output C of 128 floats a block, the scalar nt, and one case of
/// Tiles tiles over 3 blocks.
std::string tileSpecTail(int Tiles) {
  const std::string N = std::to_string(Tiles);
  return "      - buffer: C\n        type: float\n        count: blocks * 128\n        dir: out\n      - scalar: nt\n"
         "    cases:\n      - name: " + N + " tiles\n        sizes: {blocks: 3, nt: " + N + "}\n";
}

/// `tilepipe verify --bundle Bundle` of Source (the launch check off), asserted to succeed; the
/// driver it wrote.
std::string bundleDriver(const std::string &Source, const std::string &Bundle) {
  ProcessResult R = runTilepipe({"verify", "--quiet", "--check-launch-resources=false", Source, "--bundle", Bundle});
  EXPECT_EQ(0, R.ExitCode) << R.Out << R.Err;
  return readFile(Bundle + "/driver.cu");
}

/// Whether nvcc is here to build a bundle.
bool haveNvcc() { return !findTool("nvcc").empty() || llvm::sys::fs::can_execute("/usr/local/cuda/bin/nvcc"); }


const char *GoodSpec = R"(kernels:
  - kernel: scale<64>
    grid: (n + 63) / 64
    block: 64
    params:
      - buffer: out
        type: float
        count: n
        dir: out
      - buffer: in
        type: float
        count: n
        dir: in
      - scalar: n
    cases:
      - name: small
        sizes: {n: 100}
      - name: big
        sizes: {n: 1000000}
        timed: true
        sanitize: false
)";

TEST(Spec, Parses) {
  auto S = parseSpec(GoodSpec, "good.yaml");
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  EXPECT_TRUE(S->Sources.empty() && S->Link.empty());
  ASSERT_EQ(1u, S->Kernels.size());
  const KernelSpec &K = S->Kernels[0];
  EXPECT_EQ("scale<64>", K.Kernel);
  ASSERT_EQ(3u, K.Params.size());
  EXPECT_TRUE(K.Params[0].isBuffer());
  EXPECT_EQ("out", K.Params[0].Dir);
  EXPECT_EQ("n", K.Params[2].Scalar);
  ASSERT_EQ(2u, K.Cases.size());
  EXPECT_EQ(1000000, K.Cases[1].Sizes.at("n"));
  EXPECT_TRUE(K.Cases[1].Timed);
  EXPECT_FALSE(K.Cases[1].Sanitize);
  EXPECT_TRUE(K.Cases[0].Sanitize);
}

struct BadSpec {
  const char *Name, *Edit, *With, *Message;
  unsigned Line;
};

class SpecErrors : public ::testing::TestWithParam<BadSpec> {};

TEST_P(SpecErrors, NameFileAndLine) {
  const BadSpec &B = GetParam();
  std::string Text = GoodSpec;
  size_t At = Text.find(B.Edit);
  ASSERT_NE(At, std::string::npos);
  Text.replace(At, strlen(B.Edit), B.With);
  auto S = parseSpec(Text, "bad.yaml");
  ASSERT_FALSE(bool(S));
  std::string E = llvm::toString(S.takeError());
  EXPECT_NE(E.find("bad.yaml:" + std::to_string(B.Line) + ":"), std::string::npos) << E;
  EXPECT_NE(E.find("error"), std::string::npos) << E;
  EXPECT_NE(E.find(B.Message), std::string::npos) << E;
}

void PrintTo(const BadSpec &B, std::ostream *OS) { *OS << B.Name; }

INSTANTIATE_TEST_SUITE_P(
    Spec, SpecErrors,
    ::testing::Values(
        BadSpec{"BadDirection", "dir: out", "dir: sideways", "dir: in", 6},
        BadSpec{"BufferAndScalar", "      - scalar: n", "      - scalar: n\n        buffer: x", "either", 14},
        BadSpec{"MissingCount", "        count: n\n        dir: in", "        dir: in", "needs 'type' and 'count'", 10},
        BadSpec{"MisspelledKey", "    block: 64", "    blocks: 64", "missing required key 'block'", 2},
        BadSpec{"UnknownKey", "        sanitize: false", "        sanitize: false\n        colour: red", "unknown key 'colour'", 22},
        BadSpec{"NotANumber", "{n: 100}", "{n: lots}", "invalid number", 17},
        BadSpec{"OtherVariables", "{n: 100}", "{m: 100}", "other size variables", 2},
        BadSpec{"TwoTimed", "      - name: small", "      - name: small\n        timed: true", "more than one", 2},
        BadSpec{"NoCases", "    cases:", "    kases:", "missing required key 'cases'", 2},
        BadSpec{"ScalarComponents", "      - scalar: n", "      - scalar: n\n        components: double",
                "a scalar takes no type, count, dir, components or fill", 14},
        BadSpec{"FillOnOutput", "dir: out", "dir: out\n        fill: i", "is an output: its values come from the kernel", 6},
        BadSpec{"FillWithComponents", "        count: n\n        dir: in", "        count: n\n        dir: in\n        fill: i % 7\n        components: double",
                "has both 'fill' and 'components'", 10},
        BadSpec{"EmptySource", "kernels:", "sources: ['']\nkernels:", "'sources' names an empty path", 1},
        BadSpec{"SourcesNotAList", "kernels:", "sources: {a: b}\nkernels:", "not a sequence", 1},
        BadSpec{"EmptyLinkArgument", "kernels:", "link: [-lm, '']\nkernels:", "'link' holds an empty argument", 1}),
    [](const ::testing::TestParamInfo<BadSpec> &I) { return I.param.Name; });

TEST(Spec, MisalignedCasesAndLaunchers) {
  std::string Text = GoodSpec;
  Text.replace(Text.find("        sizes: {n: 100}"), strlen("        sizes: {n: 100}"),
               "        sizes: {n: 100}\n        misalign: 3");
  auto S = parseSpec(Text, "good.yaml");
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  EXPECT_EQ(3, S->Kernels[0].Cases[0].Misalign);
  EXPECT_EQ(0, S->Kernels[0].Cases[1].Misalign);
  std::string Cases = generateCases(*S);
  // The buffers of the misaligned case are handed out 3 elements off their allocation.
  EXPECT_NE(Cases.find("tpv::Out, tpv_set, 3);"), std::string::npos) << Cases;
  EXPECT_NE(Cases.find("tpv::Out, tpv_set, 0);"), std::string::npos) << Cases;
  // A rewrite with tensor copies is launched through its launcher, the others directly.
  EXPECT_NE(Cases.find("#if defined(TILEPIPE_LAUNCHER_scale)\n  ::tilepipe_launch_scale<64>(((n + 63) / "
                       "64), (64), 0, 0, "),
            std::string::npos)
      << Cases;
  EXPECT_NE(Cases.find("#else\n  ::scale<64><<<((n + 63) / 64), (64)>>>("), std::string::npos) << Cases;

  Text.replace(Text.find("misalign: 3"), strlen("misalign: 3"), "misalign: 65");
  auto Bad = parseSpec(Text, "bad.yaml");
  ASSERT_FALSE(bool(Bad));
  EXPECT_NE(llvm::toString(Bad.takeError()).find("misalign must be between 0 and 64"), std::string::npos);
}

// A kernel whose launches ask for dynamic shared memory (`extern __shared__`): the spec says how
// much, and every launch of the driver, direct or through tilepipe's launcher, asks for it.
TEST(Spec, DynamicSharedMemoryPerLaunch) {
  std::string Text = GoodSpec;
  Text.replace(Text.find("    block: 64\n"), strlen("    block: 64\n"), "    block: 64\n    shared: 64 * sizeof(float)\n");
  auto S = parseSpec(Text, "good.yaml");
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  EXPECT_EQ("64 * sizeof(float)", S->Kernels[0].Shared);
  std::string Cases = generateCases(*S);
  EXPECT_NE(Cases.find("#else\n  ::scale<64><<<((n + 63) / 64), (64), (64 * sizeof(float))>>>("), std::string::npos)
      << Cases;
  EXPECT_NE(Cases.find("::tilepipe_launch_scale<64>(((n + 63) / 64), (64), (64 * sizeof(float)), 0, "),
            std::string::npos)
      << Cases;
  EXPECT_NE(Cases.find("  tpv_r.Shared = static_cast<size_t>((64 * sizeof(float)));\n"), std::string::npos) << Cases;
  // Without it, none.
  std::string Plain = generateCases(*parseSpec(GoodSpec, "good.yaml"));
  EXPECT_NE(Plain.find("  tpv_r.Shared = static_cast<size_t>(0);\n"), std::string::npos) << Plain;
}

TEST(Spec, MovedBytesAndLaunchResources) {
  std::string Text = GoodSpec;
  Text.replace(Text.find("        dir: in"), strlen("        dir: in"), "        dir: inout");
  auto S = parseSpec(Text, "good.yaml");
  ASSERT_TRUE(bool(S)) << llvm::toString(S.takeError());
  std::string Cases = generateCases(*S);
  // The memory floor's bytes: the output written once, the inout buffer read and written.
  size_t Moved = Cases.find("static size_t moved_1() {");
  ASSERT_NE(Moved, std::string::npos) << Cases;
  size_t End = Cases.find("return tpv_bytes;", Moved);
  std::string Body = Cases.substr(Moved, End - Moved);
  EXPECT_NE(Body.find("const long long n = 1000000LL;"), std::string::npos) << Body;
  EXPECT_NE(Body.find("  tpv_bytes += static_cast<size_t>(std::max<long long>(0, (n))) * sizeof(float);"),
            std::string::npos)
      << Body;
  EXPECT_NE(Body.find("  tpv_bytes += 2 * static_cast<size_t>(std::max<long long>(0, (n))) * sizeof(float);"),
            std::string::npos)
      << Body;
  // The block and, only where the build asks for it, the kernel named for its resources.
  EXPECT_NE(Cases.find("static void launch_1(tpv::Resources &tpv_r) {"), std::string::npos) << Cases;
  EXPECT_NE(Cases.find("  const dim3 tpv_block = (64);\n"), std::string::npos) << Cases;
  EXPECT_NE(Cases.find("#if defined(TPV_RESOURCES)\n  tpv_r.Kernel = tpv::kernelAddress(&::scale<64>);\n#endif"),
            std::string::npos)
      << Cases;
  EXPECT_NE(Cases.find("&tpv_spec::bytes_1, &tpv_spec::moved_1, &tpv_spec::launch_1}"), std::string::npos)
      << Cases;
}

TEST(Spec, MissingFile) {
  auto S = readSpec("/nonexistent/x.tilepipe.yaml");
  ASSERT_FALSE(bool(S));
  EXPECT_NE(llvm::toString(S.takeError()).find("/nonexistent/x.tilepipe.yaml: error"), std::string::npos);
}

TEST(Spec, DefaultPath) { EXPECT_EQ("dir/k.tilepipe.yaml", defaultSpecPath("dir/k.cu")); }

TEST(Spec, EveryTestdataSpecParses) {
  unsigned N = 0;
  for (const std::string &Name : testdataNames()) {
    std::string Spec = defaultSpecPath(sourceDir() + "/testdata/" + Name);
    if (!llvm::sys::fs::exists(Spec))
      continue;
    ++N;
    auto S = readSpec(Spec);
    EXPECT_TRUE(bool(S)) << (S ? "" : llvm::toString(S.takeError()));
  }
  EXPECT_GE(N, 12u);
}

/// A small kernel with a spec, built into a bundle once for the tests below.
class Bundle : public ::testing::Test {
protected:
  static std::string Dir;
  static void SetUpTestSuite() {
    if (findTool("nvcc").empty())
      return;
    std::string Src = tempDir();
    writeFile(Src + "/scale.cu", R"(
template <int T>
__global__ void scale(float *out, const float *in, int n) {
  __shared__ float s[T];
  float acc = 0;
  for (int t = 0; t * T < n; ++t) {
    s[threadIdx.x] = t * T + threadIdx.x < n ? in[t * T + threadIdx.x] : 0.0f;
    __syncthreads();
    acc += s[T - 1 - threadIdx.x];
    __syncthreads();
  }
  out[blockIdx.x * T + threadIdx.x] = acc;
}
template __global__ void scale<64>(float *, const float *, int);
)");
    writeFile(Src + "/scale.tilepipe.yaml", std::string(GoodSpec));
    Dir = Src + "/bundle";
    // --plan=always: the snippet's small stages would be kept by the cost model.
    ProcessResult R = runTilepipe({"verify", "--quiet", "--plan=always", Src + "/scale.cu", "--bundle", Dir});
    ASSERT_EQ(0, R.ExitCode) << R.Out << R.Err;
    // With the kernels named for their resources, as the benchmark builds them.
    ProcessResult B = runProgram("env", {"TP_NVCC_FLAGS=-DTPV_RESOURCES", "bash", Dir + "/build.sh"});
    ASSERT_EQ(0, B.ExitCode) << B.Out << B.Err;
  }
  void SetUp() override {
    if (findTool("nvcc").empty())
      GTEST_SKIP() << "nvcc not found";
  }
};
std::string Bundle::Dir;

void writeOutputs(const std::string &Path, const std::vector<std::vector<float>> &Cases,
                  const std::string &Notes = "ran 0\nran 1\ntime 1 2.0 1\n") {
  std::ofstream F(Path, std::ios::binary);
  for (const auto &C : Cases) {
    uint64_t Count = 1, Bytes = C.size() * sizeof(float);
    F.write(reinterpret_cast<const char *>(&Count), 8);
    F.write(reinterpret_cast<const char *>(&Bytes), 8);
    F.write(reinterpret_cast<const char *>(C.data()), Bytes);
  }
  writeFile(Path + ".txt", Notes);
}

void bundleHasAllParts(const std::string &Dir) {
  for (const char *F : {"original.cu", "rewritten.cu", "compute_only.cu", "driver.cu", "build.sh", "run.sh",
                        "include/tilepipe/runtime.cuh"})
    EXPECT_TRUE(llvm::sys::fs::exists(Dir + "/" + F)) << F;
  EXPECT_NE(readFile(Dir + "/rewritten.cu").find("cuda::memcpy_async"), std::string::npos);
}

void bundleComparisonCatchesOnePlantedDifference(const std::string &Dir) {
  std::vector<float> Small(100), Big(1000);
  for (size_t I = 0; I < Small.size(); ++I)
    Small[I] = 0.25f * I;
  for (size_t I = 0; I < Big.size(); ++I)
    Big[I] = -0.5f * I;
  std::string Tmp = tempDir();
  writeOutputs(Tmp + "/a.bin", {Small, Big});
  writeOutputs(Tmp + "/same.bin", {Small, Big});
  std::vector<float> Planted = Big;
  Planted[777] = std::nextafter(Planted[777], 1e9f);
  writeOutputs(Tmp + "/b.bin", {Small, Planted});

  ProcessResult Same = runProgram(Dir + "/rewritten", {"compare", Tmp + "/a.bin", Tmp + "/same.bin"});
  EXPECT_EQ(0, Same.ExitCode) << Same.Out << Same.Err;
  EXPECT_NE(Same.Out.find("PASS"), std::string::npos) << Same.Out;

  ProcessResult Diff = runProgram(Dir + "/rewritten", {"compare", Tmp + "/a.bin", Tmp + "/b.bin",
                                                       "--json", Tmp + "/r.json"});
  EXPECT_EQ(1, Diff.ExitCode) << Diff.Out << Diff.Err;
  EXPECT_NE(Diff.Out.find("index 777: expected -388.5, got -388.499969"), std::string::npos) << Diff.Out;
  EXPECT_NE(Diff.Out.find("1 of 1000 elements differ"), std::string::npos) << Diff.Out;
  EXPECT_NE(Diff.Out.find("FAIL"), std::string::npos);
  EXPECT_NE(readFile(Tmp + "/r.json").find("\"passed\": false"), std::string::npos);

  // A tolerance accepts the one-ulp difference; it is reported as such, not as bitwise.
  ProcessResult Tol = runProgram(Dir + "/rewritten", {"compare", Tmp + "/a.bin", Tmp + "/b.bin",
                                                      "--tolerance", "1e-6"});
  EXPECT_EQ(0, Tol.ExitCode) << Tol.Out;
  EXPECT_NE(Tol.Out.find("equal within tolerance"), std::string::npos) << Tol.Out;
}

// The big case moves 8 MB (out written once, in read once): 0.002 ms at 4000 GB/s.
void bundleReportsBothFloorsAndTheLarger(const std::string &Dir) {
  std::vector<float> Small(100, 1.0f), Big(1000, 2.0f);
  std::string Tmp = tempDir();
  // Each run measures the copy bandwidth beside its timed case; the best counts.
  writeOutputs(Tmp + "/a.bin", {Small, Big}, "ran 0\nran 1\ntime 1 2.0 1\ncopy_gbps 1 4000.0\n");
  writeOutputs(Tmp + "/b.bin", {Small, Big}, "ran 0\nran 1\ntime 1 2.0 1\ncopy_gbps 1 2000.0\n");
  writeFile(Tmp + "/fast_floor.bin", "");
  writeFile(Tmp + "/fast_floor.bin.txt", "ran 1\ntime 1 0.001 1\n");
  writeFile(Tmp + "/slow_floor.bin", "");
  writeFile(Tmp + "/slow_floor.bin.txt", "ran 1\ntime 1 0.5 1\n");

  ProcessResult Mem = runProgram(Dir + "/rewritten", {"compare", Tmp + "/a.bin", Tmp + "/b.bin",
                                                      Tmp + "/fast_floor.bin", "--json", Tmp + "/m.json"});
  EXPECT_EQ(0, Mem.ExitCode) << Mem.Out << Mem.Err;
  EXPECT_NE(Mem.Out.find("| compute-only ms | memory floor ms | floor | rewritten / floor |"), std::string::npos)
      << Mem.Out;
  EXPECT_NE(Mem.Out.find("| scale<64> | big | bitwise equal | 2.0000 | 2.0000 | 1.00x | 0.0010 | 0.0020 | memory | 1000.00 |"),
            std::string::npos)
      << Mem.Out;
  EXPECT_NE(Mem.Out.find("| scale<64> | small | bitwise equal | - | - | - | - | - | - | - |"), std::string::npos)
      << Mem.Out;
  std::string Json = readFile(Tmp + "/m.json");
  EXPECT_NE(Json.find("\"compute_only_ms\": 0.001, \"moved_bytes\": 8000000, \"copy_gbps\": 4000, "
                      "\"memory_floor_ms\": 0.002, \"floor_ms\": 0.002, \"floor\": \"memory\"}"),
            std::string::npos)
      << Json;

  ProcessResult Co = runProgram(Dir + "/rewritten", {"compare", Tmp + "/a.bin", Tmp + "/b.bin", Tmp + "/slow_floor.bin"});
  EXPECT_EQ(0, Co.ExitCode) << Co.Out << Co.Err;
  EXPECT_NE(Co.Out.find("| 2.0000 | 2.0000 | 1.00x | 0.5000 | 0.0020 | compute-only | 4.00 |"), std::string::npos)
      << Co.Out;

  // No compute-only floor (it did not build or launch): the memory floor stands.
  ProcessResult None = runProgram(Dir + "/rewritten", {"compare", Tmp + "/a.bin", Tmp + "/b.bin"});
  EXPECT_EQ(0, None.ExitCode) << None.Out << None.Err;
  EXPECT_NE(None.Out.find("| 2.0000 | 2.0000 | 1.00x | - | 0.0020 | memory | 1000.00 |"), std::string::npos)
      << None.Out;
}

// build.sh builds the variants it is given; one that does not build fails it, except the
// compute-only variant, which is only a floor.
void bundleBuildSurvivesABrokenFloorOnly(const std::string &Dir) {
  std::string Copy = tempDir();
  for (const char *F : {"original.cu", "rewritten.cu", "driver.cu", "build.sh"})
    writeFile(Copy + "/" + F, readFile(Dir + "/" + F));
  writeFile(Copy + "/compute_only.cu", "this is not C++\n");
  ProcessResult Floor = runProgram("bash", {Copy + "/build.sh", "compute_only"});
  EXPECT_EQ(0, Floor.ExitCode) << Floor.Out << Floor.Err;
  EXPECT_NE(Floor.Err.find("no compute-only floor (the memory floor stands)"), std::string::npos) << Floor.Err;
  EXPECT_FALSE(llvm::sys::fs::exists(Copy + "/compute_only"));
  writeFile(Copy + "/rewritten.cu", "this is not C++\n");
  ProcessResult Rewrite = runProgram("bash", {Copy + "/build.sh", "rewritten"});
  EXPECT_EQ(1, Rewrite.ExitCode) << Rewrite.Out << Rewrite.Err;
  EXPECT_NE(Rewrite.Err.find("the rewritten variant did not build"), std::string::npos) << Rewrite.Err;
  EXPECT_EQ(2, runProgram("bash", {Copy + "/build.sh", "everything"}).ExitCode);
}

void bundleMissingOutputsAreNeverAPass(const std::string &Dir) {
  std::string Tmp = tempDir();
  writeFile(Tmp + "/a.bin", "");
  writeFile(Tmp + "/b.bin", "");
  ProcessResult R = runProgram(Dir + "/rewritten", {"compare", Tmp + "/a.bin", Tmp + "/b.bin"});
  EXPECT_EQ(1, R.ExitCode) << R.Out;
  EXPECT_NE(R.Out.find("not run"), std::string::npos) << R.Out;
}

void bundleWithoutAGpuNothingRunsAndExitIs77(const std::string &Dir) {
  ProcessResult Probe = runProgram(Dir + "/original", {"probe"});
  ProcessResult Info = runProgram(Dir + "/rewritten", {"info"});
  if (Probe.ExitCode == 0) {
    // A GPU is present: the verify.* tests run the bundles for real; the resources are here.
    EXPECT_EQ(0, Info.ExitCode) << Info.Out << Info.Err;
    EXPECT_NE(Info.Out.find("\"resources\": true"), std::string::npos) << Info.Out;
    EXPECT_NE(Info.Out.find("\"moved_bytes\": 8000000, \"threads_per_block\": 64, \"regs\": "), std::string::npos)
        << Info.Out;
    return;
  }
  EXPECT_EQ(77, Info.ExitCode) << Info.Out << Info.Err;
  ProcessResult R = runProgram("bash", {Dir + "/run.sh"});
  EXPECT_EQ(77, R.ExitCode) << R.Out << R.Err;
  EXPECT_NE(R.Out.find("nothing ran"), std::string::npos) << R.Out;
  EXPECT_EQ(R.Out.find("PASS"), std::string::npos) << R.Out;
  EXPECT_NE(readFile(Dir + "/result.json").find("\"ran\": false"), std::string::npos);
}

// One test, so that the bundle is built once (each CTest test is its own process).
TEST_F(Bundle, BuildsComparesAndNeverPassesWhatDidNotRun) {
  SCOPED_TRACE("bundle in " + Dir);
  bundleHasAllParts(Dir);
  bundleComparisonCatchesOnePlantedDifference(Dir);
  bundleReportsBothFloorsAndTheLarger(Dir);
  bundleBuildSurvivesABrokenFloorOnly(Dir);
  bundleMissingOutputsAreNeverAPass(Dir);
  bundleWithoutAGpuNothingRunsAndExitIs77(Dir);
}

// A bundle needs only nvcc and bash: it carries the runtime header that its rewrite includes, and
// builds with it (the verify.* tests build the testdata bundles).
TEST(VerifyCli, BundleCarriesTheRuntimeHeader) {
  std::string Dir = tempDir() + "/bundle";
  ProcessResult R = runTilepipe({"verify", "--quiet", "--check-launch-resources=false",
                                 sourceDir() + "/testdata/matmul_classic.cu", "--bundle", Dir});
  ASSERT_EQ(0, R.ExitCode) << R.Out << R.Err;
  EXPECT_NE(readFile(Dir + "/rewritten.cu").find("\n#include <tilepipe/runtime.cuh>\n"), std::string::npos);
  EXPECT_EQ(readFile(sourceDir() + "/runtime/include/tilepipe/runtime.cuh"),
            readFile(Dir + "/include/tilepipe/runtime.cuh"));
  EXPECT_NE(readFile(Dir + "/build.sh").find("inc_src=(-Iinclude -I'src/"), std::string::npos) << readFile(Dir + "/build.sh");
}

// A bundle builds where the sources are not: the compile command's macros and include folders
// reach its build, and it carries the user's headers (src/, and rsrc/ with the header whose loop
// the rewrite changed), at their absolute paths below its trees. The project's folder has a space.
TEST(VerifyCli, BundleCarriesTheProjectsHeadersAndFlags) {
  std::string Root = tempDir(), Proj = Root + "/my project";
  for (const char *D : {"/src", "/inc/detail"})
    ASSERT_FALSE(llvm::sys::fs::create_directories(Proj + D));
  writeFile(Proj + "/inc/detail/width.h", "#pragma once\n#define WIDTH 64\n");
  writeFile(Proj + "/inc/tile.h", "#pragma once\n#include \"detail/width.h\"\n#define TILE_W WIDTH\n");
  // A __device__ function with a tiled loop, in a header: the rewrite changes the header.
  writeFile(Proj + "/inc/sum.h",
            "#pragma once\n#include \"tile.h\"\n"
            "__device__ inline float tileSum(const float *A, int nt) {\n"
            "  __shared__ float s[TILE_W];\n"
            "  float acc = 0;\n"
            "  for (int t = 0; t < nt; ++t) {\n"
            "    s[threadIdx.x] = A[(blockIdx.x * nt + t) * TILE_W + threadIdx.x];\n"
            "    __syncthreads();\n"
            "    acc += s[(threadIdx.x + 1) % TILE_W];\n"
            "    __syncthreads();\n"
            "  }\n"
            "  return acc;\n"
            "}\n");
  writeFile(Proj + "/src/local.h", "#pragma once\n__device__ inline float scaled(float x) { return SCALE * x; }\n");
  writeFile(Proj + "/src/k.cu", "#include \"sum.h\"\n#include \"local.h\"\n"
                                "__global__ void k(const float *A, float *C, int nt) {\n"
                                "  C[blockIdx.x * TILE_W + threadIdx.x] = scaled(tileSum(A, nt));\n"
                                "}\n");
  writeFile(Proj + "/src/k.tilepipe.yaml", "kernels:\n"
                                           "  - kernel: k\n"
                                           "    grid: dim3(blocks)\n"
                                           "    block: dim3(64)\n"
                                           "    params:\n"
                                           "      - buffer: A\n"
                                           "        type: float\n"
                                           "        count: blocks * nt * 64\n"
                                           "        dir: in\n"
                                           "      - buffer: C\n"
                                           "        type: float\n"
                                           "        count: blocks * 64\n"
                                           "        dir: out\n"
                                           "      - scalar: nt\n"
                                           "    cases:\n"
                                           "      - name: 5 tiles\n"
                                           "        sizes: {blocks: 3, nt: 5}\n");
  std::string Bundle = Root + "/bundle";
  ProcessResult R = runTilepipe({"verify", "--quiet", "--check-launch-resources=false", "--plan=always", "k.cu",
                                 "--bundle", Bundle, "--", "-I", "../inc", "-DSCALE=2.0f"},
                                Proj + "/src");
  ASSERT_EQ(0, R.ExitCode) << R.Out << R.Err;
  llvm::SmallString<256> RealProj;
  ASSERT_FALSE(llvm::sys::fs::real_path(Proj, RealProj));
  std::string Rel = llvm::StringRef(RealProj).ltrim('/').str();
  const std::string Build = readFile(Bundle + "/build.sh");
  EXPECT_NE(Build.find("'-DSCALE=2.0f'"), std::string::npos) << Build;
  EXPECT_NE(Build.find("-I 'src/" + Rel + "/inc'"), std::string::npos) << Build;
  EXPECT_NE(Build.find("-I 'rsrc/" + Rel + "/inc'"), std::string::npos) << Build;
  EXPECT_NE(Build.find("-I'src/" + Rel + "/src'"), std::string::npos) << Build;
  for (const char *F : {"/inc/detail/width.h", "/inc/tile.h", "/src/local.h"}) {
    EXPECT_EQ(readFile(Proj + F), readFile(Bundle + "/src/" + Rel + F)) << F;
    EXPECT_EQ(readFile(Proj + F), readFile(Bundle + "/rsrc/" + Rel + F)) << F;
  }
  EXPECT_EQ(readFile(Proj + "/inc/sum.h"), readFile(Bundle + "/src/" + Rel + "/inc/sum.h"));
  EXPECT_NE(readFile(Bundle + "/rsrc/" + Rel + "/inc/sum.h").find("memcpy_async"), std::string::npos)
      << "the rewritten variant builds with the rewritten header";
  // The sources go away; the bundle still builds.
  ASSERT_FALSE(llvm::sys::fs::rename(Proj, Root + "/gone"));
  if (!haveNvcc())
    GTEST_SKIP() << "nvcc not found: the bundle was written, not built";
  ProcessResult B = runProgram("bash", {Bundle + "/build.sh", "original", "rewritten"});
  EXPECT_EQ(0, B.ExitCode) << B.Out << B.Err;
  EXPECT_TRUE(llvm::sys::fs::can_execute(Bundle + "/original"));
  EXPECT_TRUE(llvm::sys::fs::can_execute(Bundle + "/rewritten"));
}

// Elements of the user's classes: a struct of four doubles filled as doubles (`components:`),
// another as random bytes; the driver builds for both.
TEST(VerifyCli, BundleFillsClassElements) {
  std::string Src = tempDir();
  writeFile(Src + "/q.cu", "struct Quad { double v, x, y, z; };\n"
                           "struct Pair { int a; float b; };\n"
                           "__global__ void q(const Quad *A, Pair *C, int nt) {\n"
                           "  __shared__ Quad s[64];\n"
                           "  double acc = 0;\n"
                           "  for (int t = 0; t < nt; ++t) {\n"
                           "    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];\n"
                           "    __syncthreads();\n"
                           "    acc += s[(threadIdx.x + 1) % 64].x * s[threadIdx.x].z;\n"
                           "    __syncthreads();\n"
                           "  }\n"
                           "  C[blockIdx.x * 64 + threadIdx.x].b = (float)acc;\n"
                           "}\n");
  writeFile(Src + "/q.tilepipe.yaml", "kernels:\n"
                                      "  - kernel: q\n"
                                      "    grid: dim3(blocks)\n"
                                      "    block: dim3(64)\n"
                                      "    params:\n"
                                      "      - buffer: A\n"
                                      "        type: Quad\n"
                                      "        components: double\n"
                                      "        count: blocks * nt * 64\n"
                                      "        dir: in\n"
                                      "      - buffer: C\n"
                                      "        type: Pair\n"
                                      "        count: blocks * 64\n"
                                      "        dir: inout\n"
                                      "      - scalar: nt\n"
                                      "    cases:\n"
                                      "      - name: 5 tiles\n"
                                      "        sizes: {blocks: 3, nt: 5}\n");
  std::string Bundle = Src + "/bundle";
  ProcessResult R = runTilepipe({"verify", "--quiet", "--check-launch-resources=false", "--plan=always",
                                 Src + "/q.cu", "--bundle", Bundle});
  ASSERT_EQ(0, R.ExitCode) << R.Out << R.Err;
  const std::string Driver = readFile(Bundle + "/driver.cu");
  EXPECT_NE(Driver.find("template <> struct Components<Quad> {\n  using C = double;"), std::string::npos) << Driver;
  EXPECT_EQ(Driver.find("Components<Pair>"), std::string::npos) << "Pair is random bytes, the default";
  if (!haveNvcc())
    GTEST_SKIP() << "nvcc not found: the bundle was written, not built";
  ProcessResult B = runProgram("bash", {Bundle + "/build.sh", "original", "rewritten"});
  EXPECT_EQ(0, B.ExitCode) << B.Out << B.Err;
}

// A file whose kernel sizes its tile at launch (`extern __shared__`), beside one tilepipe rewrites:
// the spec's `shared:` reaches the launch, and the bundle builds.
TEST(VerifyCli, BundleLaunchesWithDynamicSharedMemory) {
  std::string Src = tempDir();
  writeFile(Src + "/d.cu", "__global__ void dyn(const float *A, float *C, int nt) {\n"
                           "  extern __shared__ float s[];\n"
                           "  float acc = 0;\n"
                           "  for (int t = 0; t < nt; ++t) {\n"
                           "    s[threadIdx.x] = A[(blockIdx.x * nt + t) * blockDim.x + threadIdx.x];\n"
                           "    __syncthreads();\n"
                           "    acc += s[(threadIdx.x + 1) % blockDim.x];\n"
                           "    __syncthreads();\n"
                           "  }\n"
                           "  C[blockIdx.x * blockDim.x + threadIdx.x] = acc;\n"
                           "}\n");
  writeFile(Src + "/d.tilepipe.yaml", "kernels:\n"
                                      "  - kernel: dyn\n"
                                      "    grid: dim3(blocks)\n"
                                      "    block: dim3(threads)\n"
                                      "    shared: threads * sizeof(float)\n"
                                      "    params:\n"
                                      "      - buffer: A\n"
                                      "        type: float\n"
                                      "        count: blocks * nt * threads\n"
                                      "        dir: in\n"
                                      "      - buffer: C\n"
                                      "        type: float\n"
                                      "        count: blocks * threads\n"
                                      "        dir: out\n"
                                      "      - scalar: nt\n"
                                      "    cases:\n"
                                      "      - name: 5 tiles\n"
                                      "        sizes: {blocks: 3, nt: 5, threads: 96}\n");
  std::string Bundle = Src + "/bundle";
  const std::string Driver = bundleDriver(Src + "/d.cu", Bundle);
  EXPECT_NE(Driver.find("::dyn<<<(dim3(blocks)), (dim3(threads)), (threads * sizeof(float))>>>("), std::string::npos)
      << Driver;
  if (!haveNvcc())
    GTEST_SKIP() << "nvcc not found: the bundle was written, not built";
  ProcessResult B = runProgram("bash", {Bundle + "/build.sh", "original", "rewritten"});
  EXPECT_EQ(0, B.ExitCode) << B.Out << B.Err;
}

TEST(VerifyCli, BundleBuildsTheSpecsOtherSources) {
  // A kernel file whose host code calls a function another file defines links only with that file:
  // the spec names it (`sources:`, beside the spec), and the bundle carries it and the header it
  // includes, which the kernel file does not, and builds it into every variant with `link:`.
  std::string Src = tempDir() + "/my src";
  ASSERT_FALSE(llvm::sys::fs::create_directories(Src + "/lib"));
  writeFile(Src + "/k.cu", "void report(int);\n"
                           "__global__ void tiles(const float *A, float *C, int nt) {\n"
                           "  __shared__ float s[128];\n"
                           "  float acc = 0;\n"
                           "  for (int t = 0; t < nt; ++t) {\n"
                           "    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 128 + threadIdx.x];\n"
                           "    __syncthreads();\n"
                           "    acc += s[(threadIdx.x + 1) % 128];\n"
                           "    __syncthreads();\n"
                           "  }\n"
                           "  C[blockIdx.x * 128 + threadIdx.x] = acc;\n"
                           "}\n"
                           "void run(const float *A, float *C, int nt) {\n"
                           "  tiles<<<4, 128>>>(A, C, nt);\n"
                           "  report(nt);\n"
                           "}\n");
  writeFile(Src + "/lib/report.cpp", "#include \"report_impl.h\"\nvoid report(int n) { REPORT(n); }\n");
  writeFile(Src + "/lib/report_impl.h", "#include <cstdio>\n#define REPORT(n) std::printf(\"%d\\n\", n)\n");
  const std::string Kernels = tileSpecHead("tiles") +
                              tileSpecTail(5);
  writeFile(Src + "/k.tilepipe.yaml", "sources: [lib/report.cpp]\nlink: [-lm]\n" + Kernels);
  std::string Bundle = Src + "/bundle";
  bundleDriver(Src + "/k.cu", Bundle);
  EXPECT_NE(readFile(Bundle + "/rewritten.cu"), readFile(Src + "/k.cu")) << "the loop was not rewritten";
  std::string Real = tilepipe::realPathIn("", Src);
  for (const char *Tree : {"/src", "/rsrc"})
    for (const char *F : {"/lib/report.cpp", "/lib/report_impl.h"})
      EXPECT_TRUE(llvm::sys::fs::exists(Bundle + Tree + Real + F)) << Tree << Real << F << " is not carried";
  const std::string Build = readFile(Bundle + "/build.sh");
  EXPECT_NE(Build.find("link=('-lm')"), std::string::npos) << Build;

  // A source that is not there, or the verified file itself: an error naming the spec; no bundle.
  writeFile(Src + "/bad.tilepipe.yaml", "sources: [lib/missing.cpp]\n" + Kernels);
  ProcessResult M = runTilepipe({"verify", "--quiet", "--check-launch-resources=false", Src + "/k.cu", "--spec",
                                 Src + "/bad.tilepipe.yaml", "--bundle", Src + "/b2"});
  EXPECT_EQ(1, M.ExitCode);
  EXPECT_NE(M.Err.find("bad.tilepipe.yaml: error: 'sources' names 'lib/missing.cpp', which is not a file"),
            std::string::npos)
      << M.Err;
  EXPECT_FALSE(llvm::sys::fs::exists(Src + "/b2"));
  writeFile(Src + "/self.tilepipe.yaml", "sources: [k.cu]\n" + Kernels);
  ProcessResult Self = runTilepipe({"verify", "--quiet", "--check-launch-resources=false", Src + "/k.cu", "--spec",
                                    Src + "/self.tilepipe.yaml", "--bundle", Src + "/b3"});
  EXPECT_EQ(1, Self.ExitCode);
  EXPECT_NE(Self.Err.find("names the file verified itself"), std::string::npos) << Self.Err;

  if (!haveNvcc())
    GTEST_SKIP() << "nvcc not found: the bundles were written, not built";
  ProcessResult B = runProgram("bash", {Bundle + "/build.sh", "original", "rewritten"});
  EXPECT_EQ(0, B.ExitCode) << B.Out << B.Err;
  // Without the other source the program does not link: the field is what makes it build.
  writeFile(Src + "/alone.tilepipe.yaml", Kernels);
  ProcessResult A = runTilepipe({"verify", "--quiet", "--check-launch-resources=false", Src + "/k.cu", "--spec",
                                 Src + "/alone.tilepipe.yaml", "--bundle", Src + "/alone"});
  ASSERT_EQ(0, A.ExitCode) << A.Out << A.Err;
  ProcessResult AB = runProgram("bash", {Src + "/alone/build.sh", "original"});
  EXPECT_NE(0, AB.ExitCode) << "a program that calls report() linked without the file that defines it";
}

TEST(VerifyCli, SpecSourcesReadTheirCompileCommandInItsFolder) {
  // The other source's include folder is relative (`-Iinc`) in compile_commands.json: it is the
  // command's folder's, wherever tilepipe runs from, and the header found there is carried.
  std::string Proj = tempDir() + "/proj", Elsewhere = tempDir();
  ASSERT_FALSE(llvm::sys::fs::create_directories(Proj + "/inc"));
  ASSERT_FALSE(llvm::sys::fs::create_directories(Proj + "/lib"));
  writeFile(Proj + "/k.cu", "void report(int);\n__global__ void k(float *C) { C[threadIdx.x] = 1; }\n");
  writeFile(Proj + "/lib/report.cpp", "#include \"report_impl.h\"\nvoid report(int n) { REPORT(n); }\n");
  writeFile(Proj + "/inc/report_impl.h", "#define REPORT(n) (void)(n)\n");
  writeFile(Proj + "/compile_commands.json",
            "[{\"directory\": \"" + Proj + "\", \"command\": \"nvcc -Iinc -c k.cu\", \"file\": \"k.cu\"},\n"
            " {\"directory\": \"" + Proj + "\", \"command\": \"nvcc -Iinc -c lib/report.cpp\", \"file\": \"lib/report.cpp\"}]\n");
  writeFile(Proj + "/k.tilepipe.yaml", "sources: [lib/report.cpp]\nkernels:\n  - kernel: k\n    grid: 1\n    block: 32\n"
                                       "    params:\n      - buffer: C\n        type: float\n        count: 32\n"
                                       "        dir: out\n    cases:\n      - name: one\n        sizes: {n: 1}\n");
  ProcessResult R = runTilepipe({"verify", "--quiet", "--check-launch-resources=false", "-p", Proj, Proj + "/k.cu",
                                 "--bundle", Elsewhere + "/b"},
                                Elsewhere);
  ASSERT_EQ(0, R.ExitCode) << R.Out << R.Err;
  EXPECT_TRUE(llvm::sys::fs::exists(Elsewhere + "/b/src" + tilepipe::realPathIn("", Proj) + "/inc/report_impl.h"));
}

TEST(VerifyCli, FillGivesAnInputTheSpecsValues) {
  // An index buffer filled at random would send the kernel out of bounds: `fill:` gives each
  // element its value, from its index i and the size variables, in every variant alike.
  std::string Src = tempDir();
  writeFile(Src + "/g.cu", "__global__ void shifted(const float *A, const int *shift, float *C, int nt) {\n"
                           "  __shared__ float s[128];\n"
                           "  float acc = 0;\n"
                           "  for (int t = 0; t < nt; ++t) {\n"
                           "    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 128 + threadIdx.x];\n"
                           "    __syncthreads();\n"
                           "    acc += s[(threadIdx.x + shift[t]) % 128];\n"
                           "    __syncthreads();\n"
                           "  }\n"
                           "  C[blockIdx.x * 128 + threadIdx.x] = acc;\n"
                           "}\n");
  writeFile(Src + "/g.tilepipe.yaml", tileSpecHead("shifted") +
                                      "      - buffer: shift\n"
                                      "        type: int\n"
                                      "        count: nt\n"
                                      "        dir: in\n"
                                      "        fill: (i * 37 + nt) % 128\n" +
                                      tileSpecTail(9));
  std::string Bundle = Src + "/bundle";
  const std::string Driver = bundleDriver(Src + "/g.cu", Bundle);
  EXPECT_NE(Driver.find("tpv_run.buffer<int>(1, (nt), tpv::In, tpv_set, 0, [&](long long i) { (void)i; return "
                        "static_cast<int>((i * 37 + nt) % 128); });"),
            std::string::npos)
      << Driver;
  EXPECT_NE(Driver.find("tpv_run.buffer<float>(0, (blocks * nt * 128), tpv::In, tpv_set, 0);"), std::string::npos)
      << "an input without 'fill' stays random\n" << Driver;
  if (!haveNvcc())
    GTEST_SKIP() << "nvcc not found: the bundle was written, not built";
  ProcessResult B = runProgram("bash", {Bundle + "/build.sh", "original", "rewritten"});
  EXPECT_EQ(0, B.ExitCode) << B.Out << B.Err;
}

TEST(VerifyCli, BadSpecIsAnError) {
  std::string Dir = tempDir();
  writeFile(Dir + "/k.cu", readFile(sourceDir() + "/testdata/stencil1d.cu"));
  writeFile(Dir + "/k.tilepipe.yaml", "kernels:\n  - kernel: k\n    grid: 1\n");
  ProcessResult R = runTilepipe({"verify", "--quiet", Dir + "/k.cu", "--bundle", Dir + "/b"});
  EXPECT_EQ(1, R.ExitCode);
  EXPECT_NE(R.Err.find("k.tilepipe.yaml:2:"), std::string::npos) << R.Err;
  EXPECT_FALSE(llvm::sys::fs::exists(Dir + "/b"));
}

TEST(VerifyCli, OptionsBelongToVerify) {
  ProcessResult R = runTilepipe({"--bundle=x", sourceDir() + "/testdata/stencil1d.cu"});
  EXPECT_NE(0, R.ExitCode);
  EXPECT_NE(R.Err.find("belong to 'tilepipe verify'"), std::string::npos) << R.Err;
}

} // namespace

// Vector stores into a tile: a copy phase that stores a whole vector through a cast
// (`reinterpret_cast<float4 *>(&s[i])[0] = reinterpret_cast<const float4 *>(&A[j])[0];`), as
// real kernels write their 16-byte loads. Each is one copy of the vector; every way the proof can
// fail has its twin here, refused with its reason.
#include "TestSupport.h"
#include "tilepipe/Plan.h"
#include <gtest/gtest.h>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

/// A kernel of one loop over nt tiles: Decl declares the tile, Copy is its copy phase.
std::string vectorKernel(const std::string &Copy, const std::string &Decl = "__shared__ float s[4 * T];",
                         const std::string &Compute = "acc += s[(threadIdx.x * 5 + 3) % (4 * T)];") {
  return "#define T 64\nstruct Quad { float a, b, c, d; };\n"
         "__global__ void k(const float *A, float *C, int nt, int u) {\n  " +
         Decl + "\n  float acc = 0;\n  for (int t = 0; t < nt; ++t) {\n" + Copy + "\n    __syncthreads();\n    " + Compute +
         "\n    __syncthreads();\n  }\n  C[threadIdx.x] = acc;\n}\n";
}

/// The cp.async pipeline for every legal loop (the tests' default options take every legal loop).
ToolOptions pipelineOnly() {
  ToolOptions O = defaultOptions();
  O.Mode = CopyMode::Pipeline;
  return O;
}

/// The cost model's choice, as the program makes it by default.
ToolOptions modelOptions() {
  ToolOptions O = defaultOptions();
  O.Plan = PlanPolicy::Model;
  return O;
}

const char *const Float4Copy =
    "    reinterpret_cast<float4 *>(&s[4 * threadIdx.x])[0] =\n"
    "        reinterpret_cast<const float4 *>(&A[(t * T + threadIdx.x) * 4])[0];";

} // namespace

// Each vector is one copy of its own size, into a stage array that starts on 16 bytes.
TEST(VectorStores, EachVectorIsOneCopy) {
  FileResult R = runOnCode(vectorKernel(Float4Copy), pipelineOnly());
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  ASSERT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  ASSERT_TRUE(R.Loops[0].Plan);
  EXPECT_EQ(16u, R.Loops[0].Plan->Tiles[0].VectorBytes);
  EXPECT_EQ(CopyKind::PerElement, R.Loops[0].Plan->Tiles[0].CpAsync);
  const std::string S = squeezed(R.Rewritten);
  EXPECT_NE(S.find("alignas(16) __shared__ float s_stages[3][4 * T];"), std::string::npos) << R.Rewritten;
  EXPECT_NE(S.find("::cuda::memcpy_async(&reinterpret_cast<float4 *>(&s[4 * threadIdx.x])[0], "
                   "&reinterpret_cast<const float4 *>(&A[(t * T + threadIdx.x) * 4])[0], "
                   "::cuda::aligned_size_t<sizeof(float4)>(sizeof(float4)), pipe)"),
            std::string::npos)
      << R.Rewritten;
}

// The ways a vector store is written: subscript or `*`, a C++ or C cast, the tile's address or
// the tile itself, a row of two dimensions, a local read first, 8 bytes or 16, a double tile, an
// inner copy loop that moves a whole vector each pass.
TEST(VectorStores, EverySpellingIsACopy) {
  struct Case {
    const char *What, *Copy, *Decl;
    unsigned Bytes;
  } Cases[] = {
      {"deref", "    *reinterpret_cast<float4 *>(&s[4 * threadIdx.x]) = *reinterpret_cast<const float4 *>(A + (t * T + threadIdx.x) * 4);",
       nullptr, 16},
      {"C cast of the tile", "    ((float4 *)s)[threadIdx.x] = ((const float4 *)A)[t * T + threadIdx.x];", nullptr, 16},
      {"float2", "    *(float2 *)&s[2 * threadIdx.x] = *(const float2 *)&A[t * 4 * T + 2 * threadIdx.x];\n"
                 "    *(float2 *)&s[2 * T + 2 * threadIdx.x] = *(const float2 *)&A[t * 4 * T + 2 * T + 2 * threadIdx.x];",
       nullptr, 8},
      {"two dimensions", "    reinterpret_cast<float4 *>(&s[threadIdx.x / 16][threadIdx.x % 16 * 4])[0] =\n"
                         "        reinterpret_cast<const float4 *>(&A[t * 4 * T + threadIdx.x * 4])[0];",
       "__shared__ float s[4][T];", 16},
      {"a row's start and a vector index", "    reinterpret_cast<float4 *>(&s[threadIdx.x / 16][0])[threadIdx.x % 16] =\n"
                                            "        reinterpret_cast<const float4 *>(&A[t * 4 * T])[threadIdx.x];",
       "__shared__ float s[4][T];", 16},
      {"a local read first", "    const float4 v = reinterpret_cast<const float4 *>(&A[(t * T + threadIdx.x) * 4])[0];\n"
                             "    reinterpret_cast<float4 *>(&s[4 * threadIdx.x])[0] = v;",
       nullptr, 16},
      {"double2 into doubles", "    reinterpret_cast<double2 *>(&d[2 * threadIdx.x])[0] =\n"
                               "        reinterpret_cast<const double2 *>(&((const double *)A)[t * 2 * T + 2 * threadIdx.x])[0];",
       "__shared__ double d[2 * T]; __shared__ float s[4 * T];", 16},
      {"an inner copy loop", "    for (int i = 0; i < 2; ++i)\n"
                             "      reinterpret_cast<float4 *>(&s[i * 4 * T + 4 * threadIdx.x])[0] =\n"
                             "          reinterpret_cast<const float4 *>(&A[t * 8 * T + i * 4 * T + 4 * threadIdx.x])[0];",
       "__shared__ float s[8 * T];", 16},
  };
  for (const Case &K : Cases) {
    // Read the tile the copy fills: the doubles, or a row of the two-dimensional tile.
    std::string Decl = K.Decl ? K.Decl : "__shared__ float s[4 * T];";
    std::string Compute = Decl.find("double d") != std::string::npos ? "acc += (float)d[(threadIdx.x * 5 + 3) % (2 * T)];"
                          : Decl.find("[4][T]") != std::string::npos ? "acc += s[threadIdx.x % 4][(threadIdx.x * 5 + 3) % T];"
                                                                     : "acc += s[(threadIdx.x * 5 + 3) % (4 * T)];";
    FileResult R = runOnCode(vectorKernel(K.Copy, Decl, Compute), pipelineOnly());
    ASSERT_TRUE(R.Ok) << K.What << ": " << R.Error;
    ASSERT_EQ(1u, R.Loops.size()) << K.What;
    ASSERT_TRUE(R.Loops[0].transformed()) << K.What << ": " << R.Loops[0].message();
    EXPECT_EQ(K.Bytes, R.Loops[0].Plan->Tiles[0].VectorBytes) << K.What;
    EXPECT_NE(R.Rewritten.find("alignas(16)"), std::string::npos) << K.What;
  }
}

// What the proof needs, each missing in one twin.
TEST(VectorStores, EachRefusedTwinSaysWhy) {
  struct Case {
    const char *What, *Copy, *Decl, *Id;
  } Cases[] = {
      {"a scalar store into the vector's elements",
       "    reinterpret_cast<float4 *>(&s[4 * threadIdx.x])[0] = reinterpret_cast<const float4 *>(&A[t * 4 * T + 4 * threadIdx.x])[0];\n"
       "    s[4 * threadIdx.x + 3] = A[t * 4 * T + threadIdx.x];",
       nullptr, "tile-overlap"},
      {"a scalar store right after the vector",
       "    reinterpret_cast<float4 *>(&s[8 * (threadIdx.x % 32)])[0] = reinterpret_cast<const float4 *>(&A[t * 4 * T + 4 * threadIdx.x])[0];\n"
       "    s[8 * (threadIdx.x % 32) + 4] = A[t * 4 * T + threadIdx.x];",
       nullptr, "pipelined"},
      {"two vectors no constant apart",
       "    reinterpret_cast<float4 *>(&s[4 * threadIdx.x])[0] = reinterpret_cast<const float4 *>(&A[t * 4 * T])[0];\n"
       "    reinterpret_cast<float4 *>(&s[4 * u])[0] = reinterpret_cast<const float4 *>(&A[t * 4 * T + 4])[0];",
       nullptr, "tile-overlap"},
      {"an offset not provably whole vectors",
       "    reinterpret_cast<float4 *>(&s[4 * threadIdx.x + u])[0] = reinterpret_cast<const float4 *>(&A[t * 4 * T + 4 * threadIdx.x])[0];",
       nullptr, "element-type"},
      {"an odd offset", "    reinterpret_cast<float2 *>(&s[2 * threadIdx.x + 1])[0] = reinterpret_cast<const float2 *>(&A[t * 4 * T])[0];",
       nullptr, "element-type"},
      {"a vector aligned below its size",
       "    reinterpret_cast<Quad *>(&s[4 * threadIdx.x])[0] = reinterpret_cast<const Quad *>(&A[t * 4 * T + 4 * threadIdx.x])[0];",
       nullptr, "element-type"},
      {"a tile of no whole number of vectors",
       "    reinterpret_cast<float4 *>(&s[4 * threadIdx.x])[0] = reinterpret_cast<const float4 *>(&A[t * 4 * T + 4 * threadIdx.x])[0];",
       "__shared__ float s[4 * T + 2];", "element-type"},
      {"a vector the size of the element",
       "    reinterpret_cast<int4 *>(&s[threadIdx.x])[0] = reinterpret_cast<const int4 *>(&A[t * 4 * T + 4 * threadIdx.x])[0];",
       "__shared__ float4 s[T];", "element-type"},
      {"an inner loop that moves less than a vector",
       "    for (int i = 0; i < 2; ++i)\n"
       "      for (int j = 0; j < 2; ++j)\n"
       "        reinterpret_cast<float4 *>(&s[(i + j) * 4 + 16 * (threadIdx.x % 16)])[0] =\n"
       "            reinterpret_cast<const float4 *>(&A[t * 4 * T + 4 * threadIdx.x])[0];",
       nullptr, "tile-overlap"},
      {"through a pointer, not the tile",
       "    { float *p = &s[4 * threadIdx.x]; reinterpret_cast<float4 *>(p)[0] = reinterpret_cast<const float4 *>(&A[t * 4 * T])[0]; }",
       nullptr, "address-not-invariant"},
      {"through a pointer cast, not the tile",
       "    reinterpret_cast<float4 *>(reinterpret_cast<char *>(s) + 16 * threadIdx.x)[0] =\n"
       "        reinterpret_cast<const float4 *>(&A[t * 4 * T])[threadIdx.x];",
       nullptr, "load-phase"},
      {"a read of shared memory",
       "    reinterpret_cast<float4 *>(&s[4 * threadIdx.x])[0] = reinterpret_cast<const float4 *>(&r[0])[threadIdx.x];",
       "__shared__ float s[4 * T]; __shared__ float r[4 * T];", "address-not-invariant"},
  };
  for (const Case &K : Cases) {
    std::string Compute = std::string(K.Decl ? K.Decl : "").find("float4 s") != std::string::npos
                              ? "acc += s[(threadIdx.x * 5 + 3) % T].x;"
                              : "acc += s[(threadIdx.x * 5 + 3) % (4 * T)];";
    FileResult R = runOnCode(vectorKernel(K.Copy, K.Decl ? K.Decl : "__shared__ float s[4 * T];", Compute),
                             pipelineOnly());
    ASSERT_TRUE(R.Ok) << K.What << ": " << R.Error;
    ASSERT_EQ(1u, R.Loops.size()) << K.What;
    EXPECT_EQ(K.Id, reasonInfo(R.Loops[0].Code).Id.str()) << K.What << ": " << R.Loops[0].message();
  }
}

// The register-staged prefetch holds each vector in a register of the cast's type, and stores
// it through the same cast.
TEST(VectorStores, ARegisterHoldsTheVector) {
  ToolOptions O = defaultOptions();
  O.Choice = PlanChoice{false, 1, PlanChoice::Registers};
  FileResult R = runOnCode(vectorKernel(Float4Copy), O);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  const std::string S = squeezed(R.Rewritten);
  EXPECT_NE(S.find("float4 s_next;"), std::string::npos) << R.Rewritten;
  EXPECT_NE(S.find("s_next = reinterpret_cast<const float4 *>(&A[(t * T + threadIdx.x) * 4])[0];"), std::string::npos)
      << R.Rewritten;
  EXPECT_NE(S.find("reinterpret_cast<float4 *>(&s[4 * threadIdx.x])[0] = s_next;"), std::string::npos) << R.Rewritten;
}

// The cost model counts a tile stored wholly in 16-byte vectors as 16-byte copies; 8-byte ones,
// which nothing measured, stay per element to it.
TEST(VectorStores, TheModelCountsSixteenByteVectorsAsWide) {
  // Stages of 2 KiB, which the model takes for 16-byte copies.
  FileResult R = runOnCode(vectorKernel(std::string(Float4Copy) + "\n" +
                                            "    reinterpret_cast<float4 *>(&s[4 * T + 4 * threadIdx.x])[0] =\n"
                                            "        reinterpret_cast<const float4 *>(&A[(t * T + T + threadIdx.x) * 4])[0];",
                                        "__shared__ float s[8 * T];"),
                           modelOptions());
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_TRUE(R.Loops[0].Plan);
  EXPECT_FALSE(R.Loops[0].Plan->Keep.has_value());
  EXPECT_FALSE(R.Loops[0].Plan->Registers) << R.Loops[0].message();
  FileResult Q = runOnCode(vectorKernel("    *(float2 *)&s[2 * threadIdx.x] = *(const float2 *)&A[t * 4 * T + 2 * threadIdx.x];\n"
                                        "    *(float2 *)&s[2 * T + 2 * threadIdx.x] = *(const float2 *)&A[t * 4 * T + 2 * T + 2 * threadIdx.x];"),
                           modelOptions());
  ASSERT_TRUE(Q.Ok) << Q.Error;
  ASSERT_TRUE(Q.Loops[0].Plan);
  EXPECT_TRUE(Q.Loops[0].Plan->Registers || Q.Loops[0].Plan->Keep.has_value()) << Q.Loops[0].message();
}

// A reference to the tile is not the tile: the copy phase stores through another name, which the
// rewrite would not redirect to the stage buffer.
TEST(VectorStores, AStoreThroughAReferenceToTheTileIsRefused) {
  FileResult R = runOnCode(vectorKernel("    reinterpret_cast<float4 *>(&r[4 * threadIdx.x])[0] =\n"
                                        "        reinterpret_cast<const float4 *>(&A[(t * T + threadIdx.x) * 4])[0];",
                                        "__shared__ float s[4 * T]; float (&r)[4 * T] = s;"),
                           pipelineOnly());
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_EQ(1u, R.Loops.size());
  EXPECT_EQ("load-phase", reasonInfo(R.Loops[0].Code).Id.str()) << R.Loops[0].message();
  EXPECT_EQ(R.Original, R.Rewritten);
}

// The vector's type is named where the cast names it: a typedef in a block around the loop that
// shadows the file's (float4 there, float2 outside) still names the register's type, which the
// rewrite declares inside that block, after the typedef.
TEST(VectorStores, AShadowingTypedefStillNamesTheRegister) {
  const std::string Code = "#define T 64\ntypedef float2 V;\n"
                           "__global__ void k(const float *A, float *C, int nt) {\n"
                           "  __shared__ float s[4 * T];\n  float acc = 0;\n  {\n    typedef float4 V;\n"
                           "    for (int t = 0; t < nt; ++t) {\n"
                           "      reinterpret_cast<V *>(&s[4 * threadIdx.x])[0] =\n"
                           "          reinterpret_cast<const V *>(&A[(t * T + threadIdx.x) * 4])[0];\n"
                           "      __syncthreads();\n      acc += s[(threadIdx.x * 5 + 3) % (4 * T)];\n"
                           "      __syncthreads();\n    }\n  }\n  C[threadIdx.x] = acc;\n}\n";
  ToolOptions O = defaultOptions();
  O.Choice = PlanChoice{false, 1, PlanChoice::Registers};
  FileResult R = runOnCode(Code, O);
  ASSERT_TRUE(R.Ok) << R.Error;
  ASSERT_TRUE(R.Loops[0].transformed()) << R.Loops[0].message();
  const size_t Local = R.Rewritten.find("typedef float4 V;"), Reg = R.Rewritten.find("V s_next;");
  ASSERT_NE(std::string::npos, Local) << R.Rewritten;
  ASSERT_NE(std::string::npos, Reg) << R.Rewritten;
  EXPECT_LT(Local, Reg) << R.Rewritten;
  // Still inside the block that holds the typedef: no closing brace of it between them.
  EXPECT_EQ(std::string::npos, R.Rewritten.substr(Local, Reg - Local).find("\n  }")) << R.Rewritten;
  FileResult P = runOnCode(Code, pipelineOnly());
  ASSERT_TRUE(P.Ok) << P.Error;
  EXPECT_NE(std::string::npos, squeezed(P.Rewritten).find("::cuda::aligned_size_t<sizeof(V)>(sizeof(V))")) << P.Rewritten;
}

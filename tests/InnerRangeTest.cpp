// Stores into one tile in inner copy loops, told apart by the constant ranges of the inner loop
// variables: the transposed copy of real GEMMs (`As[(c * 4 + j) * BM + r + offset] = tmp.x` for
// j = 0..3 in a loop over offset) writes four stores per iteration of its inner loop, no two of
// them one element. Each way the proof can fail has its twin, refused as tile-overlap.
#include "TestSupport.h"
#include <gtest/gtest.h>

using namespace tilepipe;
using namespace tilepipe::test;

namespace {

/// A kernel of one loop over nt tiles (128 threads): Decl declares the tile, Copy is its copy
/// phase, Use an element of the tile the compute phase reads.
std::string rangeKernel(const std::string &Copy, const std::string &Decl, const std::string &Use) {
  return "__global__ void __launch_bounds__(128) k(const float *A, float *C, int nt, int u) {\n  " + Decl +
         "\n  const unsigned r = threadIdx.x / 4, c = threadIdx.x % 4;\n  float acc = 0;\n"
         "  for (int t = 0; t < nt; ++t) {\n" +
         Copy + "\n    __syncthreads();\n    acc += " + Use + ";\n    __syncthreads();\n  }\n"
                "  C[threadIdx.x] = acc;\n}\n";
}

ToolOptions pipelineOnly() {
  ToolOptions O = defaultOptions();
  O.Mode = CopyMode::Pipeline;
  return O;
}

/// The loop's reason ID and its message, for a tile of 1024 floats or, where Copy names `s[i][`,
/// of 4 rows of 128.
std::string outcome(const std::string &Copy) {
  const bool Rows = Copy.find("s[i][") != std::string::npos;
  FileResult R = runOnCode(rangeKernel(Copy, Rows ? "__shared__ float s[4][128];" : "__shared__ float s[1024];",
                                       Rows ? "s[threadIdx.x % 4][threadIdx.x]" : "s[(threadIdx.x * 5 + 3) % 1024]"),
                           pipelineOnly());
  if (!R.Ok)
    return "error: " + R.Error;
  if (R.Loops.size() != 1)
    return "loops: " + std::to_string(R.Loops.size());
  return reasonInfo(R.Loops[0].Code).Id.str() + " (" + R.Loops[0].message() + ")";
}

/// The loop's reason ID and message, for a tile of 2 rows of 64 floats (x is threadIdx.x % 64).
std::string twoRows(const std::string &Copy) {
  const std::string Code = "__global__ void k(const float *A, float *C, int nt) {\n"
                           "  __shared__ float s[2][64];\n  const int x = threadIdx.x % 64;\n  float acc = 0;\n"
                           "  for (int t = 0; t < nt; ++t) {\n" +
                           Copy +
                           "\n    __syncthreads();\n    acc += s[1][threadIdx.x % 64];\n    __syncthreads();\n  }\n"
                           "  C[threadIdx.x] = acc;\n}\n";
  FileResult R = runOnCode(Code, pipelineOnly());
  return R.Ok && R.Loops.size() == 1 ? reasonInfo(R.Loops[0].Code).Id.str() + " (" + R.Loops[0].message() + ")"
                                     : "error: " + R.Error;
}

} // namespace

// Each shape writes elements that no other store of the same iteration writes, and is rewritten.
TEST(InnerRanges, StoresApartOverTheirRangesAreRewritten) {
  struct Case {
    const char *What, *Copy;
  } Cases[] = {
      {"the transposed float4 copy of a GEMM: four stores, an unsigned offset stepped by a constant",
       "    for (unsigned offset = 0; offset + 32 <= 128; offset += 32) {\n"
       "      const float4 tmp = reinterpret_cast<const float4 *>(&A[(t * 128 + r + offset) * 16 + c * 4])[0];\n"
       "      s[(c * 4 + 0) * 128 + r + offset] = tmp.x;\n"
       "      s[(c * 4 + 1) * 128 + r + offset] = tmp.y;\n"
       "      s[(c * 4 + 2) * 128 + r + offset] = tmp.z;\n"
       "      s[(c * 4 + 3) * 128 + r + offset] = tmp.w;\n"
       "    }"},
      {"two loops, one half of the tile each",
       "    for (int i = 0; i < 2; ++i) s[threadIdx.x + 128 * i] = A[t * 512 + threadIdx.x + 128 * i];\n"
       "    for (int i = 2; i < 4; ++i) s[threadIdx.x + 128 * i] = A[t * 512 + threadIdx.x + 128 * i];"},
      {"a loop and a store past its range",
       "    for (int i = 0; i < 3; ++i) s[threadIdx.x + 128 * i] = A[t * 512 + threadIdx.x + 128 * i];\n"
       "    s[threadIdx.x + 384] = A[t * 512 + threadIdx.x + 384];"},
      {"a loop counting down, bounded with >=",
       "    for (int i = 3; i >= 0; --i) {\n"
       "      s[threadIdx.x * 4 + i] = A[t * 512 + threadIdx.x * 4 + i];\n"
       "    }"},
      {"a loop counting down, and a store before its range",
       "    for (int i = 3; i > 0; i -= 1) s[threadIdx.x + 128 * i] = A[t * 512 + threadIdx.x + 128 * i];\n"
       "    s[threadIdx.x] = A[t * 512 + threadIdx.x];"},
      {"two nested loops, two stores apart by more than both ranges",
       "    for (int i = 0; i < 2; ++i)\n"
       "      for (int j = 0; j < 2; ++j) {\n"
       "        s[threadIdx.x + 128 * i + 256 * j] = A[t * 512 + threadIdx.x];\n"
       "      }"},
      {"a 2-D tile: rows apart in one subscript, the column any",
       "    for (int i = 0; i < 2; ++i) {\n"
       "      s[i][threadIdx.x] = A[t * 512 + threadIdx.x];\n"
       "      s[i + 2][threadIdx.x] = A[t * 512 + 128 + threadIdx.x];\n"
       "    }"},
      {"a loop strided over the block, its two stores the tile's two halves",
       "    for (int i = threadIdx.x; i < 512; i += blockDim.x) {\n"
       "      s[i] = A[t * 1024 + i];\n"
       "      s[i + 512] = A[t * 1024 + 1023 - i];\n"
       "    }"},
      {"a loop strided by a constant from the thread's rank, and a constant loop: mixed radix",
       "    for (int i = threadIdx.x % 64; i < 512; i += 64)\n"
       "      for (int j = 0; j < 2; ++j)\n"
       "        s[2 * i + j] = A[t * 1024 + 2 * i + j];"},
      {"a vector, and a loop over the elements after its span",
       "    reinterpret_cast<float4 *>(&s[threadIdx.x * 8])[0] = reinterpret_cast<const float4 *>(&A[t * 512 + threadIdx.x * 4])[0];\n"
       "    for (int i = 0; i < 4; ++i) s[threadIdx.x * 8 + 4 + i] = A[t * 512 + i];"},
  };
  for (const Case &K : Cases)
    EXPECT_EQ(0u, outcome(K.Copy).rfind("pipelined", 0)) << K.What << ": " << outcome(K.Copy);
}

// What the proof needs, each missing in one twin.
TEST(InnerRanges, EachRefusedTwinSaysWhy) {
  struct Case {
    const char *What, *Copy;
  } Cases[] = {
      {"two loops whose ranges meet at one element",
       "    for (int i = 0; i < 3; ++i) s[threadIdx.x + 128 * i] = A[t * 512 + threadIdx.x + 128 * i];\n"
       "    for (int i = 2; i < 4; ++i) s[threadIdx.x + 128 * i] = A[t * 512 + 7];"},
      {"a bound no constant",
       "    for (int i = 0; i < u; ++i) s[threadIdx.x + 128 * i] = A[t * 512 + threadIdx.x + 128 * i];\n"
       "    s[threadIdx.x + 384] = A[t * 512 + 384];"},
      {"a start no constant",
       "    for (int i = u; i < 3; ++i) s[threadIdx.x + 128 * i] = A[t * 512 + threadIdx.x + 128 * i];\n"
       "    s[threadIdx.x + 384] = A[t * 512 + 384];"},
      {"the transposed copy with one store moved onto another's elements",
       "    for (unsigned offset = 0; offset + 32 <= 128; offset += 32) {\n"
       "      s[(c * 4 + 0) * 128 + r + offset] = A[t * 512 + r];\n"
       "      s[(c * 4 + 0) * 128 + r + offset + 64] = A[t * 512 + r + 1];\n"
       "    }"},
      {"stores a row apart, a range of two rows",
       "    for (int i = 0; i < 2; ++i) {\n"
       "      s[threadIdx.x + 128 * i] = A[t * 512 + threadIdx.x];\n"
       "      s[threadIdx.x + 128 * i + 128] = A[t * 512 + 128 + threadIdx.x];\n"
       "    }"},
      {"an opaque term of the inner variable, alike in both stores' text: (1, 1) is written at i = 1 and i = 0",
       "    for (int i = 0; i < 2; ++i) {\n"
       "      s[i][i % 8] = A[t * 512 + threadIdx.x];\n"
       "      s[1 - i][i % 8 + 1] = A[t * 512 + threadIdx.x + 1];\n"
       "    }"},
      {"an index variable of the inner body whose start is no affine form, so",
       "    for (int i = 0; i < 2; ++i) {\n"
       "      int x = i % 8;\n"
       "      s[i][x] = A[t * 512 + threadIdx.x];\n"
       "      s[1 - i][x + 1] = A[t * 512 + threadIdx.x + 1];\n"
       "    }"},
      {"a vector whose span reaches the next store's range",
       "    for (int i = 0; i < 2; ++i) {\n"
       "      reinterpret_cast<float4 *>(&s[threadIdx.x * 16 + 8 * i])[0] = reinterpret_cast<const float4 *>(&A[t * 512])[0];\n"
       "      s[threadIdx.x * 16 + 10] = A[t * 512 + 19];\n"
       "    }"},
      {"a loop strided over the block whose two stores reach one element",
       "    for (int i = threadIdx.x; i < 512; i += blockDim.x) {\n"
       "      s[i] = A[t * 1024 + i];\n"
       "      s[i + 511] = A[t * 1024 + 1023 - i];\n"
       "    }"},
      {"a strided loop bounded by no constant",
       "    for (int i = threadIdx.x; i < u; i += blockDim.x) {\n"
       "      s[i] = A[t * 1024 + i];\n"
       "      s[i + 512] = A[t * 1024 + 1023 - i];\n"
       "    }"},
      {"a loop strided by blockDim's, whose values are not known one by one, and a constant loop",
       "    for (int i = threadIdx.x; i < 512; i += blockDim.x)\n"
       "      for (int j = 0; j < 2; ++j)\n"
       "        s[2 * i + j] = A[t * 1024 + 2 * i + j];"},
      {"an unsigned counter that would wrap below zero",
       "    for (unsigned i = 2; i != 5; --i) s[threadIdx.x + 128 * i] = A[t * 512 + threadIdx.x];\n"
       "    s[threadIdx.x + 384] = A[t * 512 + 384];"},
      {"a char counter that wraps at 256, so never reaches 257 and passes 1",
       "    for (unsigned char i = 255; i != 257; ++i) s[threadIdx.x + 2 * i] = A[t * 512 + threadIdx.x];\n"
       "    s[threadIdx.x + 2] = A[t * 512 + 2];"},
  };
  for (const Case &K : Cases)
    EXPECT_EQ(0u, outcome(K.Copy).rfind("tile-overlap", 0)) << K.What << ": " << outcome(K.Copy);
}

// Elements are told apart counted from the tile's first, across rows: a subscript past its
// dimension addresses the next row, as the compiled code does, so two stores whose rows differ may
// still write one element (`s[0][x + 64]` is `s[1][x]` in a `float s[2][64]`).
TEST(InnerRanges, RowsThatDifferProveNothingAlone) {
  std::string Rows = twoRows("    s[0][x] = A[t * 128 + x];\n    s[1][x] = A[t * 128 + 64 + x];");
  EXPECT_EQ(0u, Rows.rfind("pipelined", 0)) << Rows;
  std::string Past = twoRows("    s[0][x + 64] = A[t * 128 + x];\n    s[1][x] = A[t * 128 + 64 + x];");
  EXPECT_EQ(0u, Past.rfind("tile-overlap", 0)) << Past;
  std::string Loop = twoRows("    for (int i = 0; i < 2; ++i) s[0][x + 64 * i] = A[t * 128 + x];\n    s[1][x] = A[t * 128 + 64 + x];");
  EXPECT_EQ(0u, Loop.rfind("tile-overlap", 0)) << Loop;
}

// With two inner variables or more, each selecting a subscript of its own, every subscript but the
// first must lie within its dimension: a column loop that runs past its row writes the next row's
// first element twice. The strided 2-D copy of a tile and its halo stays within its rows.
TEST(InnerRanges, SubscriptsSelectOnlyWithinTheirDimension) {
  std::string Past = twoRows("    for (int i = 0; i < 2; ++i)\n      for (int j = 0; j < 65; ++j)\n"
                         "        s[i][j] = A[t * 130 + i * 65 + j];");
  EXPECT_EQ(0u, Past.rfind("tile-overlap", 0)) << Past;
  std::string Strided = twoRows("    for (int y = threadIdx.y; y < 2; y += blockDim.y)\n"
                            "      for (int x = threadIdx.x; x < 64; x += blockDim.x)\n"
                            "        s[y][x] = A[t * 128 + y * 64 + x];");
  EXPECT_EQ(0u, Strided.rfind("pipelined", 0)) << Strided;
  std::string StridedPast = twoRows("    for (int y = threadIdx.y; y < 2; y += blockDim.y)\n"
                                "      for (int x = threadIdx.x; x < 65; x += blockDim.x)\n"
                                "        s[y][x] = A[t * 130 + y * 65 + x];");
  EXPECT_EQ(0u, StridedPast.rfind("tile-overlap", 0)) << StridedPast;
}

// `#pragma unroll` is how real kernels are written: on the tiled loop itself (the rewrite writes it
// on its mainloop, the loop it meant) and on an inner copy loop (still a copy loop; its text moves
// with the copy phase, pragma and all). Other loop pragmas and attributes stay refused.
//
// RUN: %check_tilepipe "%s" "%t"

namespace UnrollOnTheTiledLoop {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+2]]:3: remark: [pipelined]
#pragma unroll 1
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
// The pragma stands on the mainloop, the loop as it was keeps its own, and nothing else has one.
// CHECK-FIXES:      {{^}}namespace UnrollOnTheTiledLoop {
// CHECK-FIXES-NOT:  {{^ *}}#pragma unroll 1
// CHECK-FIXES:      {{^ *}}// Mainloop: compute on one tile while the next ones are copied.
// CHECK-FIXES-NEXT: {{^ *}}#pragma unroll 1
// CHECK-FIXES-NEXT: {{^ *}}for (; t < nt; ++t) {
// CHECK-FIXES:      {{^ *}}#pragma unroll 1
// CHECK-FIXES-NEXT: {{^ *}}for (int t = 0; t < nt; ++t) {
// CHECK-FIXES-NOT:  {{^ *}}#pragma unroll 1
// CHECK-FIXES:      {{^}}} // namespace UnrollOnTheTiledLoop
} // namespace UnrollOnTheTiledLoop

namespace UnrollOnAnInnerCopyLoop {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[256];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
#pragma unroll
    for (int i = threadIdx.x; i < 256; i += 64)
      s[i] = A[(blockIdx.x * nt + t) * 256 + i];
    __syncthreads();
#pragma unroll 4
    for (int i = 0; i < 4; ++i)
      acc += s[(threadIdx.x * 4 + i + 1) % 256];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
// CHECK-FIXES:      {{^}}namespace UnrollOnAnInnerCopyLoop {
// CHECK-FIXES:      {{^ *}}auto &s = s_stages[fetch_stage];
// CHECK-FIXES-NEXT: {{^ *}}#pragma unroll
// CHECK-FIXES-NEXT: {{^ *}}for (int i = threadIdx.x; i < 256; i += 64)
// CHECK-FIXES-NEXT: {{^ *}}::cuda::memcpy_async(&s[i], &A[(blockIdx.x * nt + t) * 256 + i],
} // namespace UnrollOnAnInnerCopyLoop

namespace NoUnrollOnBoth {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[256];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+2]]:3: remark: [pipelined]
#pragma nounroll
  for (int t = 0; t < nt; ++t) {
#pragma nounroll
    for (int i = threadIdx.x; i < 256; i += 64)
      s[i] = A[(blockIdx.x * nt + t) * 256 + i];
    __syncthreads();
    acc += s[(threadIdx.x * 4 + 1) % 256];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace NoUnrollOnBoth

// Another loop pragma would end up on the block that replaces the loop.
namespace ClangLoopPragma {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+2]]:3: remark: [unsupported] {{.*}}a #pragma other than unroll, or an attribute, applies to the loop
#pragma clang loop vectorize(enable)
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ClangLoopPragma

// A pragma that does not stand on its own line right above the loop (here `_Pragma` in a macro)
// is not moved.
#define UNROLL_ONE _Pragma("unroll 1")
namespace PragmaOperatorInAMacro {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+2]]:3: remark: [unsupported] {{.*}}the loop's #pragma is not a line of its own right above it
  UNROLL_ONE
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace PragmaOperatorInAMacro

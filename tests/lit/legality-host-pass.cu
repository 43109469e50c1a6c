// What nvcc's host pass reads and the device parse does not: tilepipe parses device code, but
// the host pass launches the kernels. A kernel named in host-only text, or launched with a
// configuration that a macro spells otherwise on the host, is left alone; a user's test of the
// compiler (__NVCC__) selects text as an architecture's test does; the rewrite's names avoid the
// macros only the host pass defines. (Graph APIs, which launch unseen, are in legality-graphs.cu.)
//
// RUN: %check_tilepipe "%s" "%t"

#ifndef __CUDA_ARCH__
#include "Inputs/host-trace.h" // host-only macros over names the rewrite might declare
#define SMEM 40000
#else
#define SMEM 0
#endif

// Launched only in host-only text, with dynamic shared memory the device parse never sees.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [launch-resources] {{.*}}only nvcc's host pass reads
namespace LaunchedInHostOnlyText {
__global__ void hostOnlyLaunched(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LaunchedInHostOnlyText

// Its launch asks for SMEM bytes: 0 in the device parse, 40000 in the host pass.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [launch-resources] {{.*(defines otherwise|host pass for dynamic shared memory)}}
namespace LaunchMacroOtherOnTheHost {
__global__ void smemMacro(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LaunchMacroOtherOnTheHost

// The twin, launched in text both passes read: rewritten, and none of its names is `stage`.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
// CHECK-FIXES-NOT: {{\b(stage|load_next_tile|s_next|t_next)\b}}
namespace LaunchedInCommonText {
__global__ void common(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LaunchedInCommonText

// Launched through macros that expand others at the same place, the same in both passes:
// rewritten.
#define BLOCKS(n) (((n) + 63) / 64)
#define LAUNCH(k, n, ...) k<<<BLOCKS(n), 64>>>(__VA_ARGS__)
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined]
namespace LaunchedThroughNestedMacros {
__global__ void nested(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LaunchedThroughNestedMacros

// A constant that the passes define apart: no macro in the launch, 0 bytes to the parse, 40000
// to the host pass, which launches.
#ifdef __CUDA_ARCH__
constexpr int kSmem = 0;
typedef double Real;
#else
constexpr int kSmem = 40000;
typedef float Real;
#endif
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [launch-resources] {{.*}}asks nvcc's host pass for dynamic shared memory ('kSmem')
namespace ConstantOtherOnTheHost {
__global__ void constantSmem(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ConstantOtherOnTheHost

// Overloads that a type chosen by pass tells apart: the parse resolves the launch to one, the
// host pass to the other. Every kernel of the launch's name is taken as launched by it.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [launch-resources] {{.*}}a launch of 'overloaded'
namespace OverloadChosenByPass {
__global__ void overloaded(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
__global__ void overloaded(const double *A, double *C, int nt) { C[threadIdx.x] = A[threadIdx.x] * nt; }
void run(const Real *A, Real *C, int nt) { overloaded<<<4, 64, 40000>>>(A, C, nt); }
} // namespace OverloadChosenByPass

// A store that only nvcc compiles (Clang, which parses, does not define __NVCC__).
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [arch-dependent] {{.*}}compiler
namespace StoreOnlyNvccCompiles {
__global__ void nvccOnly(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
#ifdef __NVCC__
    A[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x] = acc;
#endif
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace StoreOnlyNvccCompiles

void run(const float *A, float *C, int nt) {
  LaunchedInCommonText::common<<<4, 64>>>(A, C, nt);
  LAUNCH(LaunchedThroughNestedMacros::nested, 256, A, C, nt);
  ConstantOtherOnTheHost::constantSmem<<<4, 64, kSmem>>>(A, C, nt);
  LaunchMacroOtherOnTheHost::smemMacro<<<4, 64, SMEM>>>(A, C, nt);
#ifndef __CUDA_ARCH__
  LaunchedInHostOnlyText::hostOnlyLaunched<<<4, 64, 40000>>>(A, C, nt);
#endif
}

// (A function of its own: the one that calls a kernel with compiler-dependent text is part of
// what each kernel it calls was analysed with.)
void runNvccOnly(float *A, float *C, int nt) { StoreOnlyNvccCompiles::nvccOnly<<<4, 64>>>(A, C, nt); }

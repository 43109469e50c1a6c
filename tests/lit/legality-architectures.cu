// The text the analysis read must be the text every architecture compiles (P1): the parse is
// for sm_90, the rewrite's cp.async path runs from sm_80.
//
// RUN: %check_tilepipe "%s" "%t"

#include <nv/target>

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [arch-dependent]
namespace StoreOnlyBelowSm90 {
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
#if __CUDA_ARCH__ < 900
    A[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x] = acc;
#endif
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace StoreOnlyBelowSm90

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [arch-dependent]
namespace StoreUnderArchMacroOfTheUser {
#define OLD_GPU (__CUDA_ARCH__ < 900)
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
#if OLD_GPU
    A[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x] = acc;
#endif
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace StoreUnderArchMacroOfTheUser
#undef OLD_GPU

// CHECK-MESSAGES: :[[@LINE+10]]:3: remark: [arch-dependent]
namespace FunctionDefinedPerArchitecture {
#if __CUDA_ARCH__ >= 900
__device__ void put(float *p, int i, float v) {}
#else
__device__ void put(float *p, int i, float v) { p[i] = v; }
#endif
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; put(A, (blockIdx.x * nt + t + 1) * 64 + threadIdx.x, acc);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace FunctionDefinedPerArchitecture

// CHECK-MESSAGES: :[[@LINE+9]]:3: remark: [arch-dependent]
namespace MacroOnlyInTheSkippedBranch {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define put(p, i, v) ((p)[i] = (v))
#endif
__device__ void(put)(float *p, int i, float v) {}
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; put(A, (blockIdx.x * nt + t + 1) * 64 + threadIdx.x, acc);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace MacroOnlyInTheSkippedBranch
#undef put

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [arch-dependent]
namespace NvIfTarget {
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; NV_IF_TARGET(NV_PROVIDES_SM_90, (acc += 1;), (A[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x] = acc;));
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace NvIfTarget

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [arch-dependent]
namespace CallerExitsOnlyBelowSm90 {
__device__ float sum(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
  return acc;
}
__global__ void k(const float *A, float *C, int nt) {
#if __CUDA_ARCH__ < 900
  if (threadIdx.x >= 32) return;
#endif
  C[threadIdx.x] = sum(A, C, nt);
}
} // namespace CallerExitsOnlyBelowSm90

// CHECK-MESSAGES: :[[@LINE+12]]:3: remark: [pipelined]
namespace HostOrDeviceIsTheSameOnEveryGpu {
__host__ __device__ inline float twice(float x) {
#ifdef __CUDA_ARCH__
  return 2 * x;
#else
  return x + x;
#endif
}
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += twice(s[threadIdx.x]);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace HostOrDeviceIsTheSameOnEveryGpu

// CHECK-MESSAGES: :[[@LINE+10]]:3: remark: [pipelined]
namespace ArchCodeInAnUnrelatedKernel {
__global__ void other(float *C) {
#if __CUDA_ARCH__ >= 800
  C[0] = 1;
#endif
}
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ArchCodeInAnUnrelatedKernel

// `__CUDACC__` is defined, as 1, by nvcc's device and host passes and by Clang alike: the usual
// `HD` macro under `#ifdef __CUDACC__` selects the same text everywhere. Its twin tests
// `__CUDACC_VER_MAJOR__`, which differs between the compilers.
#ifdef __CUDACC__
#define HD __host__ __device__
#else
#define HD
#endif
HD inline float half_of(float x) { return 0.5f * x; }
namespace CudaccIsNoCompilerTest {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += half_of(s[(threadIdx.x + 1) % 64]);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace CudaccIsNoCompilerTest

#if defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ >= 12
#define SCALE_OF_VERSION 0.25f
#else
#define SCALE_OF_VERSION 0.5f
#endif
namespace CompilerVersionIsACompilerTest {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [arch-dependent]
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += SCALE_OF_VERSION * s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace CompilerVersionIsACompilerTest

// Libraries' code is judged by what it says, like the user's: only the CUDA toolkit's own device
// runtime (math, intrinsics, atomics, cooperative groups) is modelled by signature and name. A
// Thrust proxy reference that stores into the copy source, CUB's cache-bypassing load (which is
// __ldcv), an atomic whose result a statement expression hands on, and __ldcg, the L2-only load
// that inter-block flags are read with: each would let a copy issued early read stale data.
// Beside them, the forms that stay legal.
//
// RUN: %check_tilepipe "%s" "%t"

#include <cub/thread/thread_load.cuh>
#include <thrust/device_ptr.h>

namespace ThrustProxyStoresIntoSource {
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  thrust::device_ptr<float> p(A);
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [unknown-effects]
  for (int t = 0; t + 1 < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    p[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x] = acc;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ThrustProxyStoresIntoSource

namespace CubCacheBypassingSpin {
__global__ void k(const float *A, const unsigned *flags, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [unknown-effects] {{.*}}inline assembly
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    while (cub::ThreadLoad<cub::LOAD_CV>(&flags[t + 1]) == 0u) {
    }
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace CubCacheBypassingSpin

namespace AtomicValueOfAStatementExpression {
__global__ void k(const float *A, unsigned *flags, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [synchronizes] {{.*}}an atomic whose result is used
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    while (({ atomicAdd(&flags[t + 1], 0u); }) == 0u) {
    }
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace AtomicValueOfAStatementExpression

namespace AtomicIgnoredInAStatementExpression {
__global__ void k(const float *__restrict__ A, unsigned *__restrict__ counts, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    (void)({ atomicAdd(&counts[blockIdx.x], 1u); });
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace AtomicIgnoredInAStatementExpression

namespace L2OnlyLoadOfAFlag {
__global__ void k(const float *A, const unsigned *flags, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [synchronizes] {{.*}}'__ldcg'
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    while (__ldcg(&flags[t + 1]) == 0u) {
    }
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace L2OnlyLoadOfAFlag

// The toolkit's own runtime stays modelled: math, intrinsics, a read-only cached load.
namespace ToolkitRuntimeCalls {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc = fmaxf(acc, sqrtf(fabsf(s[(threadIdx.x + 1) % 64]))) + __ldg(&A[threadIdx.x]) +
          __shfl_xor_sync(0xffffffffu, s[threadIdx.x], 1) + (float)min(t, 3);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ToolkitRuntimeCalls

// nvcc's cache-operator stores that Clang's headers lack (tilepipe's parse declares them): the
// toolkit's, known by signature. A streaming store of the result after the loop keeps nothing;
// one into the copy source during the loop is a store into what a copy issued early reads.
namespace StreamingStores {
__global__ void after(const float4 *__restrict__ A, float4 *__restrict__ C, int nt) {
  __shared__ float4 s[64];
  float4 acc = make_float4(0, 0, 0, 0);
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc.x += s[(threadIdx.x + 1) % 64].y;
    __syncthreads();
  }
  __stcs(&C[blockIdx.x * 64 + threadIdx.x], acc);
}
__global__ void into_source(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [store-aliases-load] {{.*}}__stcs
  for (int t = 0; t + 1 < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[(threadIdx.x + 1) % 64];
    __stcs(&A[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x], acc);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
void run(const float4 *A4, float4 *C4, float *A, float *C, int nt) {
  after<<<8, 64>>>(A4, C4, nt);
  into_source<<<8, 64>>>(A, C, nt);
}
} // namespace StreamingStores

// A function object made where it is called: its implicit constructor runs no code.
namespace FunctionObject {
struct Mul {
  __device__ float operator()(float a, float b) const { return a * b; }
};
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // CHECK-MESSAGES: :[[@LINE+1]]:3: remark: [pipelined]
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += Mul()(s[(threadIdx.x + 1) % 64], 2.0f);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
void run(const float *A, float *C, int nt) { k<<<8, 64>>>(A, C, nt); }
} // namespace FunctionObject

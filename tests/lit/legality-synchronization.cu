// Other blocks' writes that the compute phase waits for (C7): a copy may not pass an acquire.
//
// RUN: %check_tilepipe "%s" "%t"

#include <cuda/semaphore>
#include <cuda/atomic>

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [synchronizes]
namespace SpinOnVolatileFlag {
__global__ void k(const float *A, float *C, volatile int *f, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; while (f[t] == 0) {}
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace SpinOnVolatileFlag

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [synchronizes]
namespace SpinInADeviceFunction {
__device__ void wait_for(volatile int *f, int v) { while (*f < v) {} }
__global__ void k(const float *A, float *C, int *f, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; wait_for(f, t + 1);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace SpinInADeviceFunction

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [synchronizes]
namespace FenceAfterARelaxedRead {
__global__ void k(const float *A, float *C, const int *f, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x] * f[t]; __threadfence();
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace FenceAfterARelaxedRead

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [synchronizes]
namespace AtomicWhoseResultIsUsed {
__global__ void k(const float *A, float *__restrict__ C, int *__restrict__ f, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // tilepipe: assume-noalias=true
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; while (atomicAdd(&f[t], 0) == 0) {}
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace AtomicWhoseResultIsUsed

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [synchronizes]
namespace CacheBypassingLoad {
__global__ void k(const float *A, float *C, const int *f, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; while (__ldcv(&f[t]) == 0) {}
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace CacheBypassingLoad

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [synchronizes]
namespace SemaphoreAcquire {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int nt,
                  cuda::binary_semaphore<cuda::thread_scope_device> *__restrict__ sem) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; if (t == 0 && threadIdx.x == 0) { sem->acquire(); sem->release(); }
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace SemaphoreAcquire

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [synchronizes]
namespace OrderedAtomicWhoseResultIsIgnored {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int *__restrict__ h, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; cuda::atomic_ref<int, cuda::thread_scope_device>(h[t % 16]).fetch_add(1);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace OrderedAtomicWhoseResultIsIgnored

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [load-source]
namespace VolatileSource {
__global__ void k(volatile float *A, float *C, int nt) {
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
} // namespace VolatileSource

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined]
namespace AtomicWhoseResultIsIgnored {
__global__ void k(const float *__restrict__ A, float *__restrict__ C, int *__restrict__ h, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; atomicAdd(&h[t % 16], 1);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace AtomicWhoseResultIsIgnored

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined]
namespace VolatileLocalIsNotMemory {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    volatile float v = s[threadIdx.x]; acc += v;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace VolatileLocalIsNotMemory

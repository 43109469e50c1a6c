// Launches: more static shared memory must not crowd out a launch's dynamic shared memory.
//
// RUN: %check_tilepipe "%s" "%t"

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [launch-resources]
namespace KernelUsesDynamicSharedMemory {
__global__ void k(const float *A, float *C, int nt) {
  extern __shared__ float scratch[];
  scratch[threadIdx.x] = 0;
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
} // namespace KernelUsesDynamicSharedMemory

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [launch-resources]
namespace DynamicSharedMemoryInACallee {
extern __shared__ float scratch[];
__device__ void note(float v) { scratch[threadIdx.x] = v; }
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
  note(acc);
}
} // namespace DynamicSharedMemoryInACallee

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [launch-resources]
namespace DynamicSharedMemoryInACalleesLambda {
extern __shared__ float scratch[];
__device__ void note(float v) { auto put = [&] { scratch[threadIdx.x] = v; }; put(); }
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
  note(acc);
}
} // namespace DynamicSharedMemoryInACalleesLambda

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [launch-resources]
namespace CalleeWithoutBody {
__device__ void elsewhere(float *p);
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
  elsewhere(C);
}
} // namespace CalleeWithoutBody

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [launch-resources]
namespace CallThroughPointer {
__device__ void twice(float *p) { *p *= 2; }
__global__ void k(const float *A, float *C, int nt, int which) {
  void (*f)(float *) = twice;
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
  f(C);
}
} // namespace CallThroughPointer

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [launch-resources]
namespace LoopInDeviceFunctionOfKernelWithDynamicSharedMemory {
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
  extern __shared__ float scratch[];
  scratch[threadIdx.x] = sum(A, C, nt);
}
} // namespace LoopInDeviceFunctionOfKernelWithDynamicSharedMemory

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined]
namespace LoopInDeviceFunctionOfPlainKernels {
__device__ void sum(const float *A, float *C, int nt) {
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
__global__ void k1(const float *A, float *C, int nt) { sum(A, C, nt); }
__global__ void k2(const float *A, float *C, int nt) { sum(A, C, nt + 1); }
} // namespace LoopInDeviceFunctionOfPlainKernels

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined]
namespace ToolkitCallsAndStaticSharedMemoryAreFine {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float other[32];
  other[threadIdx.x % 32] = __expf(1.0f);
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
} // namespace ToolkitCallsAndStaticSharedMemoryAreFine

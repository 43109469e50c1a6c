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

// A kernel that declares no dynamic shared memory, launched with some all the same (a launch
// helper reserving scratch for a family of kernels): the stages' static shared memory plus the
// launch's dynamic size may no longer fit.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [launch-resources] {{.*}}its launch at line {{[0-9]+}} asks for dynamic shared memory ('bytes')
namespace LaunchAsksForDynamicSharedMemory {
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
void launch(const float *A, float *C, int nt, size_t bytes) { k<<<1024, 64, bytes>>>(A, C, nt); }
} // namespace LaunchAsksForDynamicSharedMemory

// A launch the text does not show: the kernel's address goes to the runtime, with whatever
// dynamic shared memory and blocks per SM (a cooperative launch) the caller asks for.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [launch-resources] {{.*}}its name is used at line {{[0-9]+}} other than in a launch
namespace KernelAddressHandedToTheRuntime {
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
void launch(const float *A, float *C, int nt) {
  void *args[] = {&A, &C, &nt};
  cudaLaunchCooperativeKernel((void *)k, dim3(1024), dim3(64), args, 0, 0);
}
} // namespace KernelAddressHandedToTheRuntime

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined]
namespace LaunchWithNoDynamicSharedMemory {
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
void launch(const float *A, float *C, int nt, cudaStream_t st) { k<<<1024, 64, 0, st>>>(A, C, nt); }
} // namespace LaunchWithNoDynamicSharedMemory

// A table of kernels, one launch through it with dynamic shared memory.
// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [launch-resources] {{.*}}a launch through a pointer at line {{[0-9]+}} asks for dynamic shared memory
namespace KernelTableLaunchedWithDynamicSharedMemory {
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
void launch(const float *A, float *C, int nt) {
  void (*table[])(const float *, float *, int) = {k};
  table[0]<<<1024, 64, 4096>>>(A, C, nt);
}
} // namespace KernelTableLaunchedWithDynamicSharedMemory

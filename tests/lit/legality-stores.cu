// Stores the analysis must see through: a pointer that may be the copied one, a lambda, a pointer
// copy, a device function, a reference, an atomic, a global pointer, a function defined elsewhere,
// a virtual call, a struct's reference member; beside the close safe forms that are rewritten.
//
// RUN: %check_tilepipe "%s" "%t"

#include <cuda/std/functional>

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [store-may-alias]
namespace StoreThroughOtherParameter {
__global__ void k(const float *A, float *C, float *D, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; D[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x] = acc;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace StoreThroughOtherParameter

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace StoreThroughOtherParameterUnderAssumeNoAlias {
__global__ void k(const float *A, float *C, float *D, int nt) {
  __shared__ float s[64];
  float acc = 0;
  // tilepipe: assume-noalias=true
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; D[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x] = acc;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace StoreThroughOtherParameterUnderAssumeNoAlias

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [pipelined]
namespace StoreThroughRestrictParameters {
__global__ void k(const float *__restrict__ A, float *C, float *__restrict__ D, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; D[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x] = acc;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace StoreThroughRestrictParameters

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [store-aliases-load]
namespace LambdaStoresIntoSource {
__global__ void k(float *A, float *C, int nt) {
  auto put = [&](int i, float x) { A[i] = x; };
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; put((blockIdx.x * nt + t + 1) * 64 + threadIdx.x, acc);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LambdaStoresIntoSource

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace LambdaStoresIntoRestrictOutput {
__global__ void k(const float *__restrict__ A, float *C, float *__restrict__ D, int nt) {
  auto put = [&](int i, float x) { D[i] = x; };
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; put((blockIdx.x * nt + t + 1) * 64 + threadIdx.x, acc);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LambdaStoresIntoRestrictOutput

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [store-aliases-load]
namespace PointerCopyOfSource {
__global__ void k(float *A, float *C, int nt) {
  float *w;
  w = A;
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; w[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x] = acc;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace PointerCopyOfSource

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [store-aliases-load]
namespace PointerArithmeticCopyOfSource {
__global__ void k(float *A, float *C, int nt) {
  float *w = C;
  if (nt > 3) w = A + 64;
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; w[(blockIdx.x * nt + t) * 64 + threadIdx.x] = acc;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace PointerArithmeticCopyOfSource

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [store-aliases-load]
namespace DeviceFunctionStoresThroughItsParameter {
__device__ void put(float *p, int i, float v) { p[i] = v; }
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
} // namespace DeviceFunctionStoresThroughItsParameter

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [unknown-effects]
namespace DeviceFunctionStoresThroughGlobalPointer {
__device__ float *gp;
__device__ void keep(int i, float v) { gp[i] = v; }
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; keep((blockIdx.x * nt + t + 1) * 64 + threadIdx.x, acc);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace DeviceFunctionStoresThroughGlobalPointer

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [unknown-effects]
namespace FunctionDefinedElsewhere {
__device__ void record(float v);
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; record(acc);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace FunctionDefinedElsewhere

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [store-aliases-load]
namespace ReferenceIntoSource {
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; float &r = A[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x]; r = acc;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace ReferenceIntoSource

// CHECK-MESSAGES: :[[@LINE+5]]:3: remark: [store-aliases-load]
namespace AtomicIntoSource {
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; atomicAdd(&A[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x], acc);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace AtomicIntoSource

// A library's function is judged by its body: invoke() runs the lambda, which stores into A.
// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [store-aliases-load] {{.*}}'A[i] = 1.0f'
namespace LambdaHandedToToolkitFunction {
__global__ void k(float *A, float *C, int nt) {
  auto put = [&](int i) { A[i] = 1.0f; return 0; };
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; ::cuda::std::invoke(put, (int)((blockIdx.x * nt + t + 1) * 64 + threadIdx.x));
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LambdaHandedToToolkitFunction

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace DeviceFunctionWithPureBody {
__device__ float twice(float v) { return 2.0f * v; }
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
} // namespace DeviceFunctionWithPureBody

// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [pipelined]
namespace MemberFunctionOnLocalObject {
struct Sum { float v; __device__ void add(float x) { v += x; } };
__global__ void k(const float *A, float *C, int nt) {
  Sum total{0.0f};
  Sum *p = &total;
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    p->add(s[threadIdx.x]); acc = total.v;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace MemberFunctionOnLocalObject

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [unknown-effects]
namespace MemberFunctionStoringThroughMember {
struct Out { float *p; __device__ void put(int i, float x) { p[i] = x; } };
__global__ void k(float *A, float *C, int nt) {
  Out o{A};
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; o.put((blockIdx.x * nt + t + 1) * 64 + threadIdx.x, acc);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace MemberFunctionStoringThroughMember

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [unknown-effects]
namespace VirtualCall {
struct Sink { __device__ virtual void put(int i, float x) {} };
__global__ void k(const float *A, float *C, int nt, Sink *sink) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; sink->put(threadIdx.x, acc);
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace VirtualCall

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [unknown-effects]
namespace StoreThroughReferenceMember {
struct Ref { float &x; };
__global__ void k(float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x]; if (t + 1 < nt) { Ref r{A[(blockIdx.x * nt + t + 1) * 64 + threadIdx.x]}; r.x = acc; }
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace StoreThroughReferenceMember

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [pipelined]
namespace StoreIntoMemberOfLocalStructIsSafe {
struct Val { float x; };
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    Val v{0.0f}; v.x = s[threadIdx.x]; acc += v.x;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace StoreIntoMemberOfLocalStructIsSafe

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [pipelined]
namespace StoreIntoOtherSharedArray {
__global__ void k(const float *A, float *C, int nt) {
  __shared__ float red[64];
  red[threadIdx.x] = 0;
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    red[threadIdx.x] += s[(threadIdx.x + 1) % 64];
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace StoreIntoOtherSharedArray

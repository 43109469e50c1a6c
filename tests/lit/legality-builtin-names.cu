// The rewrite's own code reads threadIdx and blockDim by name: a declaration of the user's of
// such a name, in the function or an enclosing namespace, would be what it reads.
//
// RUN: %check_tilepipe "%s" "%t"

// CHECK-MESSAGES: :[[@LINE+6]]:3: remark: [unsupported]
namespace LocalNamedBlockDim {
__global__ void k(const float *A, float *C, int nt) {
  const dim3 blockDim(64, 1, 1);
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x] * blockDim.x;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
} // namespace LocalNamedBlockDim

// CHECK-MESSAGES: :[[@LINE+7]]:3: remark: [unsupported]
namespace NamespaceVariableNamedThreadIdx {
namespace app {
__device__ uint3 threadIdx;
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
}
} // namespace NamespaceVariableNamedThreadIdx

// CHECK-MESSAGES: :[[@LINE+8]]:3: remark: [pipelined]
namespace OtherNamesAreFine {
namespace app {
__device__ int blockDimension;
__global__ void k(const float *A, float *C, int nt) {
  const int threads = blockDim.x;
  __shared__ float s[64];
  float acc = 0;
  for (int t = 0; t < nt; ++t) {
    s[threadIdx.x] = A[(blockIdx.x * nt + t) * 64 + threadIdx.x];
    __syncthreads();
    acc += s[threadIdx.x] * threads;
    __syncthreads();
  }
  C[blockIdx.x * 64 + threadIdx.x] = acc;
}
}
} // namespace OtherNamesAreFine
